#!/bin/sh
# What ted says of itself: the help agrees with what the commands do
# (quantize's dtypes, the weight types ted info prints), `ted version` as
# well as --version, the unknown-word warning of a SentencePiece model
# names the word (Python's sentencepiece tells which word is unknown), and
# scripts/demo.sh says what it does before each long part.
TED=${TED:-build/ted}
BUILD=${BUILD:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. tests/lib/checks.sh

# `ted version` and `ted --version`: the same line, TED_VERSION's.
version=$(sed -n 's/^#define TED_VERSION "\(.*\)"/\1/p' include/ted/ted.h)
run "$work/out" "$work/err" "$TED" version
if [ "$status" -eq 0 ] && [ "$(cat "$work/out")" = "ted $version" ] &&
    [ "$("$TED" --version)" = "ted $version" ]; then
    ok version-command
else
    fail version-command "exit $status: $(head -c 200 "$work/out") $(head -c 200 "$work/err")"
fi

# ted --help's line of quantize names every dtype `ted quantize --dtype` takes.
dtypes=$("$TED" quantize --help | sed -n 's/.*--dtype \([a-z0-9|]*\).*/\1/p' | head -n 1 | tr '|' ' ')
line=$("$TED" --help | grep '^  quantize ')
missing=""
for d in $dtypes; do
    echo "$line" | grep -qw "$d" || missing="$missing $d"
done
if [ -n "$dtypes" ] && [ -z "$missing" ]; then
    ok help-quantize-dtypes
else
    fail help-quantize-dtypes "'$line' does not name:$missing (quantize takes: $dtypes)"
fi

# ted info --help names every weight type ted info prints: those of the
# float model and of its int8, int4 and bf16 quantizations.
missing=""
for d in int8 int4 bf16; do
    "$TED" quantize --dtype "$d" models/toy-en-fr "$work/$d" >/dev/null 2>&1
done
for dir in models/toy-en-fr "$work/int8" "$work/int4" "$work/bf16"; do
    type=$("$TED" info -m "$dir" 2>/dev/null | sed -n 's/^weights: *\([a-z0-9]*\).*/\1/p' | tail -n 1)
    if [ -z "$type" ]; then
        missing="$missing (no weight type for $dir)"
    elif ! "$TED" info --help | grep -qw "$type"; then
        missing="$missing $type"
    fi
done
if [ -z "$missing" ]; then ok help-info-weight-types; else fail help-info-weight-types "ted info --help lacks:$missing"; fi

# The unknown-word warning of models/en-fr (SentencePiece) names the word
# whose piece is unknown.
if ! "$PYTHON" -c "import sentencepiece" 2>/dev/null; then
    fail unknown-word-named "Python's sentencepiece is missing (python3-sentencepiece)"
else
    unknown=$("$PYTHON" -c "import sentencepiece as s
p = s.SentencePieceProcessor(model_file='models/en-fr/source.spm')
print(' '.join(w for w in 'the 日本 cat'.split() if p.unk_id() in p.encode(w)))")
    run "$work/out" "$work/err" "$TED" translate -m models/en-fr "the 日本 cat"
    if [ "$unknown" = "日本" ] && [ "$status" -eq 0 ] &&
        grep -qx "ted: line 1: 1 word not in the vocabulary, translated as <unk>: '日本'" "$work/err"; then
        ok unknown-word-named
    else
        fail unknown-word-named "sentencepiece's unknown words: '$unknown'; ted said: $(head -c 300 "$work/err")"
    fi
fi

# scripts/demo.sh says it builds before it does (make stands in for the
# build here: it says that ted is out of date and builds nothing).
if [ "$BUILD" != build ] || ! make --no-print-directory -s -q all 2>/dev/null; then
    skip demo-says-what-it-does "build/ is not the build under test, or is out of date"
else
    mkdir "$work/bin"
    printf '#!/bin/sh\ncase " $* " in *" -q "*) exit 1 ;; esac\necho "make $*" >>"%s"\n' \
        "$work/make.log" >"$work/bin/make"
    chmod +x "$work/bin/make"
    PATH="$work/bin:$PATH" sh scripts/demo.sh "The cat." >"$work/out" 2>"$work/err"
    status=$?
    if [ "$status" -eq 0 ] && grep -q '^demo: building ted' "$work/err" &&
        grep -q '^demo: checking the Debian packages' "$work/err" &&
        grep -q ' all' "$work/make.log" && grep -q '^fr: ' "$work/out"; then
        ok demo-says-what-it-does
    else
        fail demo-says-what-it-does "exit $status: $(head -c 300 "$work/err")"
    fi
fi

# The virtualenvs the documentation creates (python3 -m venv ... NAME) are
# ignored by git.
if ! git rev-parse --git-dir >/dev/null 2>&1; then
    skip gitignore-venv "not a git checkout"
else
    names=$(grep -hoE "python3 -m venv( --[a-z-]+)* [A-Za-z0-9_./-]+" README.md docs/*.md |
        awk '{ print $NF }' | sort -u)
    missing=""
    for name in $names; do
        git check-ignore -q "$name/bin/python" || missing="$missing $name"
    done
    if [ -n "$names" ] && [ -z "$missing" ]; then
        ok "gitignore-venv ($(echo $names))"
    else
        fail gitignore-venv "not ignored by .gitignore:$missing"
    fi
fi
