#!/bin/sh
# The quick start: installs what is missing (the Debian packages building and
# running ted need), builds ted, and translates a few sentences with the
# shipped English -> French model (models/en-fr: Marian layout,
# SentencePiece). Sentences given as arguments are translated instead.
set -e
cd "$(dirname "$0")/.."
echo "demo: checking the Debian packages ted needs (scripts/install-deps.sh)" >&2
scripts/install-deps.sh
if ! make --no-print-directory -s -q all 2>/dev/null; then
    echo "demo: building ted (make all; the first build compiles the whole library, which takes a while)" >&2
    make --no-print-directory -s all >/dev/null
fi
echo "demo: translating with models/en-fr (English -> French)" >&2
if [ "$#" -eq 0 ]; then
    set -- "The black cat eats the small bird." \
           "My sister did not see the old green car." \
           "She thinks that the queen will not sing."
fi
translations=$(mktemp)
trap 'rm -f "$translations"' EXIT
build/ted translate -m models/en-fr "$@" >"$translations"
line=1
for sentence in "$@"; do
    printf 'en: %s\nfr: %s\n\n' "$sentence" "$(sed -n "${line}p" "$translations")"
    line=$((line + 1))
done
