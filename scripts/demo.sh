#!/bin/sh
# The quick start: installs what is missing (Debian packages), builds ted,
# and translates a few sentences with the shipped English -> French model.
# Sentences given as arguments are translated instead of the examples.
set -e
cd "$(dirname "$0")/.."
scripts/install-deps.sh
make --no-print-directory -s all >/dev/null
if [ "$#" -eq 0 ]; then
    set -- "the black cat eats the small bird ." \
           "my sister did not see the old green car ." \
           "she thinks that the queen will not sing ."
fi
translations=$(mktemp)
trap 'rm -f "$translations"' EXIT
build/ted translate -m models/toy-en-fr "$@" >"$translations"
line=1
for sentence in "$@"; do
    printf 'en: %s\nfr: %s\n\n' "$sentence" "$(sed -n "${line}p" "$translations")"
    line=$((line + 1))
done
