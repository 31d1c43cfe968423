#!/bin/sh
# The bad-input corpus (tests/bad/): model directories with one broken file
# each (weights, config, vocabularies) and broken input text, built from the
# good test models by tests/bad/make_cases.py. For every case ted must stop
# with exit status 1 and exactly one message on stderr naming the file and
# the problem, within a time limit, and (for an ASan build, TED=build-san/ted)
# without a sanitizer or leak report. Then the input-text policies that are
# not errors: empty lines, CRLF, unknown words, the max_positions boundary.
# Prints "ok NAME" or "FAIL NAME: why" per case.
TED=${TED:-build/ted}
PYTHON=${PYTHON:-/usr/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. tests/lib/checks.sh

"$PYTHON" tests/bad/make_cases.py "$work/cases" >"$work/manifest" ||
    { echo "FAIL setup: tests/bad/make_cases.py failed"; exit 1; }

# expect_success NAME EXPECTED_STDOUT EXPECTED_STDERR_PATTERN COMMAND...:
# exit status 0, stdout exactly EXPECTED_STDOUT, stderr matching the pattern
# ("" : stderr empty).
expect_success() {
    name=$1 expected=$2 err_pattern=$3
    shift 3
    run "$work/out" "$work/err" "$@"
    got=$(cat "$work/out")
    if [ "$status" -eq 124 ]; then
        echo "FAIL $name: no answer within $LIMIT s"
    elif sanitizer_report "$work/err"; then
        echo "FAIL $name: sanitizer report: $(sanitizer_lines "$work/err")"
    elif [ "$status" -ne 0 ]; then
        echo "FAIL $name: exit status $status: $(head -c 300 "$work/err")"
    elif [ "$got" != "$expected" ]; then
        echo "FAIL $name: stdout '$(echo "$got" | head -c 300)', expected '$expected'"
    elif [ -z "$err_pattern" ] && [ -s "$work/err" ]; then
        echo "FAIL $name: unexpected stderr: $(head -c 300 "$work/err")"
    elif [ -n "$err_pattern" ] && ! grep -qE -- "$err_pattern" "$work/err"; then
        echo "FAIL $name: stderr does not match '$err_pattern': $(head -c 300 "$work/err")"
    else
        echo "ok $name"
    fi
}

# --- the corpus ---------------------------------------------------------------
tab=$(printf '\t')
while IFS=$tab read -r kind name path model pattern; do
    case $kind in
    model) expect_error "$name" "$pattern" "$TED" translate -m "$path" "s1 s2" ;;
    check) expect_error "$name" "$pattern" "$TED" info -m "$path" --check ;;
    input) expect_error "$name" "$pattern" "$TED" translate -m "$model" -i "$path" ;;
    loads)
        run "$work/out" "$work/err" "$TED" translate -m "$path" "s1 s2"
        if [ "$status" -ne 0 ] || [ "$(wc -l <"$work/out")" -ne 1 ] || [ -s "$work/err" ]; then
            echo "FAIL $name: exit status $status, $(wc -l <"$work/out") lines out, stderr: $(head -c 300 "$work/err")"
        else
            echo "ok $name"
        fi ;;
    *) echo "FAIL $name: unknown kind '$kind' in the manifest" ;;
    esac
done <"$work/manifest"

# --- input text that is not an error -----------------------------------------
toy=models/toy-en-fr
tiny=tests/data/tiny-model
the_cat=$("$TED" translate -m $toy "the cat eats the small bird .")
the_dog=$("$TED" translate -m $toy "the dog sleeps .")
[ -n "$the_cat" ] && [ -n "$the_dog" ] || echo "FAIL setup: the toy model does not translate"

# Empty and blank lines give empty lines, in place.
printf 'the cat eats the small bird .\n\n \t \nthe dog sleeps .\n' >"$work/in"
stdin="$work/in" expect_success empty-and-blank-lines "$(printf '%s\n\n\n%s' "$the_cat" "$the_dog")" "" \
    "$TED" translate -m $toy
# With --scores, an empty line's hypothesis has its five fields too, the
# last (the token log-probs) empty.
printf 'the dog sleeps .\n\n' >"$work/in"
stdin="$work/in" run "$work/out" "$work/err" "$TED" translate -m $toy --scores
fields=$(awk -F ' [|][|][|] ' '{ printf "%d ", NF }' "$work/out")
if [ "$status" -eq 0 ] && [ "$fields" = "5 5 " ] && [ "$(tail -n 1 "$work/out")" = "1 |||  ||| 0.000000 ||| 0.000000 ||| " ]; then
    echo "ok scores-empty-line-five-fields"
else
    echo "FAIL scores-empty-line-five-fields: exit $status, fields $fields: $(tail -n 1 "$work/out")"
fi
# No input at all: no output.
: >"$work/in"
stdin="$work/in" expect_success empty-input "" "" "$TED" translate -m $toy
# The last line may lack its newline.
printf 'the cat eats the small bird .\nthe dog sleeps .' >"$work/in"
stdin="$work/in" expect_success no-final-newline "$(printf '%s\n%s' "$the_cat" "$the_dog")" "" \
    "$TED" translate -m $toy
# CRLF line ends translate as LF ones (the CR never reaches a token).
printf 'the cat eats the small bird .\r\n\r\nthe dog sleeps .\r\n' >"$work/in"
stdin="$work/in" expect_success crlf-line-ends "$(printf '%s\n\n%s' "$the_cat" "$the_dog")" "" \
    "$TED" translate -m $toy
# A line of unknown words only: translated (as <unk>s), and reported.
printf 'the dog sleeps .\nzorglub blorf quux\n' >"$work/in"
run "$work/out" "$work/err" "$TED" translate -m $toy -i "$work/in"
if [ "$status" -eq 0 ] && [ "$(wc -l <"$work/out")" -eq 2 ] && [ "$(head -n 1 "$work/out")" = "$the_dog" ] &&
    [ "$(wc -l <"$work/err")" -eq 1 ] &&
    grep -q "^ted: $work/in: line 2: 3 words not in the vocabulary, translated as <unk>: 'zorglub' 'blorf' 'quux'$" "$work/err" &&
    ! sanitizer_report "$work/err"; then
    echo "ok only-unknown-words"
else
    echo "FAIL only-unknown-words: exit $status, out '$(head -c 200 "$work/out")', err '$(head -c 300 "$work/err")'"
fi
# One 1 MiB word: unknown, not a problem.
"$PYTHON" -c "print('x' * (1 << 20))" >"$work/in"
stdin="$work/in" expect_success one-mebibyte-word "$("$TED" translate -m $toy "zorglub" 2>/dev/null)" \
    "^ted: line 1: 1 word not in the vocabulary" "$TED" translate -m $toy
# Sources up to max_positions tokens (BOS and EOS counted) are translated;
# one more is an error naming the line (the corpus has that case).
"$PYTHON" -c "print(' '.join(['s1'] * 62))" >"$work/in"
stdin="$work/in" run "$work/out" "$work/err" "$TED" translate -m $tiny
if [ "$status" -eq 0 ] && [ "$(wc -l <"$work/out")" -eq 1 ] && [ ! -s "$work/err" ]; then
    echo "ok max-positions-exactly"
else
    echo "FAIL max-positions-exactly: exit $status, $(wc -l <"$work/out") lines: $(head -c 300 "$work/err")"
fi

# The same errors through standard input and arguments name the line only.
printf 'the cat .\nthe \000 bird .\n' >"$work/in"
stdin="$work/in" expect_error stdin-nul-byte "^ted: line 2: contains a NUL byte$" "$TED" translate -m $toy
expect_error argument-invalid-utf8 "^ted: line 2: input byte offset 4: invalid UTF-8 \(truncated sequence\)$" \
    "$TED" translate -m $toy "the cat ." "$(printf 'the \342\202')"
# Input without line ends stops at the 4 MiB line cap, under a memory limit
# (only for the plain build: ASan reserves its shadow memory).
case "$TED" in
*-san/*) limited() { "$@"; } ;;
*) limited() { (ulimit -v 1048576 && exec "$@"); } ;;
esac
expect_error dev-zero-line-capped "^ted: /dev/zero: line 1: longer than 4 MiB; a line is one sentence$" \
    limited "$TED" translate -m $toy -i /dev/zero
stdin=/dev/zero expect_error dev-zero-tokenize-line-capped "^ted: line 1: longer than 4 MiB" \
    limited "$TED" tokenize -m $toy
"$PYTHON" -c "print(' '.join(['the'] * 100000))" >"$work/in"
stdin="$work/in" expect_error stdin-100000-words \
    "^ted: line 1: 100002 tokens, more than the model's max_positions \(5000\)$" "$TED" translate -m $toy

# ted tokenize: the same input errors, and target ids that are not ids.
printf 'the cat .\nthe \000 bird .\n' >"$work/in"
stdin="$work/in" expect_error tokenize-nul-byte "^ted: line 2: contains a NUL byte$" \
    "$TED" tokenize -m $toy
expect_error tokenize-invalid-utf8 "^ted: line 1: input byte offset 4: invalid UTF-8" \
    "$TED" tokenize -m $toy --target "$(printf 'the \342\202')"
for ids in "5 x 7" "5 -1" "5 +3" "5 3.0" "99999999999"; do
    expect_error "tokenize-decode-'$ids'" "^ted: line 2: \"[^\"]*\" is not a token id$" \
        "$TED" tokenize -m $toy --decode "5 6" "$ids"
done

# ted info --check passes on the good models.
for model in $tiny $toy; do
    run "$work/out" "$work/err" "$TED" info -m $model --check
    if [ "$status" -eq 0 ] && grep -q "^check: every weight is finite$" "$work/out" && [ ! -s "$work/err" ]; then
        echo "ok info-check-$(basename $model)"
    else
        echo "FAIL info-check-$(basename $model): exit $status: $(head -c 300 "$work/err")"
    fi
done
