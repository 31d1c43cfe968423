#!/bin/sh
# The C API as docs/api.md shows it: its complete program is
# examples/decode.c, word for word; built against libted.a alone, it gives
# the n-best lists and the greedy translation `ted translate` gives; a bad
# model directory is one message and exit status 1. Each check prints
# "ok NAME" or "FAIL NAME: why".
TED=${TED:-build/ted}
BUILD=${BUILD:-build}
EXAMPLE="$BUILD/example-decode"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. tests/lib/checks.sh

model=models/toy-en-fr
first="the black cat eats the small bird ."
second="the dog sleeps ."

# The ```c block of "A complete program" is the example file.
sed -n '/^## A complete program/,$p' docs/api.md |
    sed -n '/^```c$/,/^```$/p' | sed '1d;$d' >"$work/shown.c"
if cmp -s "$work/shown.c" examples/decode.c; then
    ok api/page-shows-the-example
else
    fail api/page-shows-the-example "docs/api.md differs from examples/decode.c: $(diff "$work/shown.c" examples/decode.c | head -n 4 | tr '\n' ' ')"
fi

run "$work/out" "$work/err" "$EXAMPLE" "$model" "$first" "$second"
if [ "$status" -ne 0 ] || sanitizer_report "$work/err"; then
    fail api/example-runs "exit $status: $(head -c 300 "$work/err")"
else
    ok api/example-runs
fi

# Its n-best lists (sentence.rank score text) against ted translate's
# (sentence ||| text ||| score ||| ...), scores to 4 decimals.
"$TED" translate -m "$model" --beam 4 --n-best 2 --scores "$first" "$second" 2>/dev/null |
    awk -F ' \\|\\|\\| ' '{ n[$1]++; printf "%d.%d %.4f %s\n", $1, n[$1] - 1, $3, $2 }' \
        >"$work/want"
grep -v '^step by step:' "$work/out" >"$work/got"
if [ -s "$work/want" ] && cmp -s "$work/want" "$work/got"; then
    ok api/beam-n-best-as-ted-translate
else
    fail api/beam-n-best-as-ted-translate "got '$(tr '\n' '|' <"$work/got")', ted translate '$(tr '\n' '|' <"$work/want")'"
fi

# Its step-by-step greedy decode against ted translate's greedy one.
want=$("$TED" translate -m "$model" "$first" 2>/dev/null)
got=$(sed -n 's/^step by step: //p' "$work/out")
if [ -n "$want" ] && [ "$got" = "$want" ]; then
    ok api/steps-as-greedy
else
    fail api/steps-as-greedy "got '$got', ted translate '$want'"
fi

expect_error api/bad-model-dir "no-such-dir/config\.yaml" "$EXAMPLE" "$work/no-such-dir" "$first"
