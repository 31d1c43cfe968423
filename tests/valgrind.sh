#!/bin/sh
# ted under valgrind memcheck: translations with the toy model (greedy, beam
# search, sampling, several threads; its bf16 copy from ted quantize in
# batches), documents (a paragraph, an HTML page)
# with models/en-fr, and a few refused inputs, each with no
# memcheck error (invalid access, uninitialised value, bad free) and no
# definitely lost block. Thread stacks ted's worker pool keeps
# until exit show as "possibly lost" and do not count.
#
# memcheck cannot run AVX-512 code, so ted runs its AVX2 kernels (TED_CPU;
# src/kernels/kernels.h): `make valgrind` builds build/ted and runs this
# script. Prints "ok NAME" or "FAIL NAME: why"; exits 1 when a check failed.
TED=${TED:-build/ted}
TED_CPU=${TED_CPU:-avx2}
export TED_CPU
PYTHON=${PYTHON:-/usr/bin/python3}
VALGRIND_ERROR=99  # memcheck's exit status on an error or a definite leak
toy=models/toy-en-fr
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. tests/lib/checks.sh

if ! command -v valgrind >/dev/null; then
    echo "FAIL valgrind: not installed (scripts/install-deps.sh installs it)"
    exit 1
fi

memcheck() {
    valgrind --quiet --leak-check=full --errors-for-leak-kinds=definite \
        --error-exitcode=$VALGRIND_ERROR --log-file="$work/valgrind.log" "$@"
}

# check NAME EXPECTED_STATUS: judges the last memcheck run.
check() {
    if [ "$status" -eq $VALGRIND_ERROR ] || grep -qE 'definitely lost: [1-9]|ERROR SUMMARY: [1-9]|Invalid|uninitialised' "$work/valgrind.log"; then
        echo "FAIL $1: memcheck: $(grep -m 8 -vE '^==[0-9]+== *$' "$work/valgrind.log" | head -c 1500)"
        return 1
    elif [ "$status" -ne "$2" ]; then
        echo "FAIL $1: exit status $status, expected $2: $(head -c 300 "$work/err")"
        return 1
    fi
    return 0
}

# The checks, each a memcheck run (checked: the exit status says whether all passed).
memchecks() {
    # Greedy, the README's sentences: the translations the README shows.
    memcheck "$TED" translate -m $toy "the black cat eats the small bird ." \
        "my sister did not see the old green car ." "she thinks that the queen will not sing ." \
        >"$work/out" 2>"$work/err"
    status=$?
    expected=$(printf '%s\n' "le chat noir mange le petit oiseau ." \
        "ma soeur n' a pas vu la vieille voiture verte ." "elle pense que la reine ne chantera pas .")
    if check greedy 0; then
        if [ "$(cat "$work/out")" = "$expected" ]; then
            echo "ok greedy"
        else
            echo "FAIL greedy: got '$(cat "$work/out")'"
        fi
    fi

    # Standard input in batches, two threads, an unknown word, an empty line.
    head -n 24 $toy/test.en >"$work/in"
    printf 'the zorglub sleeps .\n\n' >>"$work/in"
    memcheck "$TED" translate -m $toy --batch-size 8 --threads 2 <"$work/in" >"$work/out" 2>"$work/err"
    status=$?
    if check batches-threads 0; then
        if [ "$(wc -l <"$work/out")" -eq 26 ] && grep -q "line 25: 1 word not in the vocabulary" "$work/err"; then
            echo "ok batches-threads"
        else
            echo "FAIL batches-threads: $(wc -l <"$work/out") lines, stderr: $(head -c 300 "$work/err")"
        fi
    fi

    # ted quantize --dtype bf16 (one tensor at a time, unpacked), and the bf16
    # model in batches on two threads (bf16 panels widened: several rows).
    memcheck "$TED" quantize --dtype bf16 $toy "$work/toy-bf16" >"$work/out" 2>"$work/err"
    status=$?
    check quantize-bf16 0 && echo "ok quantize-bf16"
    memcheck "$TED" translate -m "$work/toy-bf16" --batch-size 8 --threads 2 <"$work/in" \
        >"$work/out" 2>"$work/err"
    status=$?
    if check bf16-batches 0; then
        if [ "$(wc -l <"$work/out")" -eq 26 ]; then
            echo "ok bf16-batches"
        else
            echo "FAIL bf16-batches: $(wc -l <"$work/out") lines, stderr: $(head -c 300 "$work/err")"
        fi
    fi

    # Beam search with an n-best list, and sampling.
    memcheck "$TED" translate -m $toy --beam 4 --n-best 2 "the dog sleeps ." "the old queen sings ." \
        >"$work/out" 2>"$work/err"
    status=$?
    if check beam 0; then
        if [ "$(wc -l <"$work/out")" -eq 4 ]; then echo "ok beam"; else echo "FAIL beam: $(cat "$work/out")"; fi
    fi
    memcheck "$TED" translate -m $toy --sample --seed 7 --top-k 5 "the dog sleeps ." >"$work/out" 2>"$work/err"
    status=$?
    if check sampling 0; then
        if [ "$(wc -l <"$work/out")" -eq 1 ]; then echo "ok sampling"; else echo "FAIL sampling: $(cat "$work/out")"; fi
    fi

    # A vocabulary shortlist: built from a corpus, used by beam search; a bad
    # one refused.
    head -n 200 $toy/test.en >"$work/src"
    head -n 200 $toy/test.fr >"$work/tgt"
    memcheck "$TED" shortlist -m $toy --source "$work/src" --target "$work/tgt" --top 20 \
        --frequent 10 -o "$work/lex" >"$work/out" 2>"$work/err"
    status=$?
    if check shortlist-build 0; then
        if head -n 1 "$work/lex" | grep -qx 'ted-shortlist 1'; then echo "ok shortlist-build"; else echo "FAIL shortlist-build: $(head -c 200 "$work/lex")"; fi
    fi
    memcheck "$TED" translate -m $toy --shortlist "$work/lex" --beam 4 --n-best 2 "the dog sleeps ." \
        "the old queen sings ." >"$work/out" 2>"$work/err"
    status=$?
    if check shortlist-beam 0; then
        if [ "$(wc -l <"$work/out")" -eq 4 ]; then echo "ok shortlist-beam"; else echo "FAIL shortlist-beam: $(cat "$work/out")"; fi
    fi
    printf 'ted-shortlist 1\nvocab 355 849\nfrequent 4 849\n' >"$work/bad-lex"
    memcheck "$TED" translate -m $toy --shortlist "$work/bad-lex" "the dog sleeps ." >"$work/out" 2>"$work/err"
    status=$?
    check shortlist-refused 1 && echo "ok shortlist-refused"

    # Documents: a paragraph cut into sentences (ICU), a malformed HTML page
    # (libxml2), and a page that is not UTF-8, refused.
    memcheck "$TED" translate -m models/en-fr --split-sentences \
        "Dr. Smith came.  He said \"Hi.\" Wait... What?" >"$work/out" 2>"$work/err"
    status=$?
    if check documents-paragraph 0; then
        if [ "$(wc -l <"$work/out")" -eq 1 ]; then echo "ok documents-paragraph"
        else echo "FAIL documents-paragraph: $(cat "$work/out")"; fi
    fi
    memcheck "$TED" translate -m models/en-fr --format html -i tests/data/html/malformed.html \
        >"$work/out" 2>"$work/err"
    status=$?
    if check documents-html 0; then
        if grep -q '<P CLASS="Upper">' "$work/out"; then echo "ok documents-html"
        else echo "FAIL documents-html: $(head -c 300 "$work/out")"; fi
    fi
    printf '<p>caf\351</p>' >"$work/latin1.html"
    memcheck "$TED" translate -m models/en-fr --format html -i "$work/latin1.html" >"$work/out" 2>"$work/err"
    status=$?
    check documents-refused 1 && echo "ok documents-refused"

    # Refused inputs: a few cases of the bad-input corpus (tests/bad/), each
    # failing after part of the model was loaded.
    "$PYTHON" tests/bad/make_cases.py "$work/cases" >"$work/manifest" ||
        { echo "FAIL setup: tests/bad/make_cases.py failed"; exit 1; }
    tab=$(printf '\t')
    for wanted in st-missing-tensor st-offsets-overlap st-nan-bias st-header-not-json cfg-heads-3 \
        cfg-file-billion-laughs voc-duplicate voc-specials-moved in-utf8-surrogate in-100000-words; do
        line=$(grep "^[a-z]*$tab$wanted$tab" "$work/manifest")
        if [ -z "$line" ]; then
            echo "FAIL corpus-$wanted: not in the manifest"
            continue
        fi
        kind=$(echo "$line" | cut -f 1)
        path=$(echo "$line" | cut -f 3)
        model=$(echo "$line" | cut -f 4)
        if [ "$kind" = input ]; then
            memcheck "$TED" translate -m "$model" -i "$path" >"$work/out" 2>"$work/err"
        else
            memcheck "$TED" translate -m "$path" "s1 s2" >"$work/out" 2>"$work/err"
        fi
        status=$?
        check "corpus-$wanted" 1 && echo "ok corpus-$wanted"
    done
}

checked memchecks
