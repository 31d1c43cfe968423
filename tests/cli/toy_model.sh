#!/bin/sh
# The shipped English -> French model, translated by ted: exact match on a
# fixed slice of its held-out test set must stay at or above 95%, so that a
# regression anywhere in the runtime shows here.
TED=${TED:-build/ted}
PYTHON=${PYTHON:-/usr/bin/python3}
model=models/toy-en-fr
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
head -n 200 "$model/test.en" >"$work/src"
head -n 200 "$model/test.fr" >"$work/ref"
if ! "$TED" translate -m "$model" --batch-size 32 <"$work/src" >"$work/hyp" 2>"$work/err"; then
    echo "FAIL toy-translate: $(head -c 300 "$work/err")"
    exit 1
fi
summary=$("$PYTHON" tools/toy/evaluate.py "$work/hyp" "$work/ref" | tail -n 1)
exact=$(echo "$summary" | sed -n 's/.*exact_match=\([0-9.]*\).*/\1/p')
sentences=$(echo "$summary" | sed -n 's/.*sentences=\([0-9]*\).*/\1/p')
if [ "$sentences" = 200 ] && awk "BEGIN { exit !($exact >= 0.95) }"; then
    echo "ok toy-exact-match-200: $summary"
else
    echo "FAIL toy-exact-match-200: $summary"
fi
if [ -s "$work/err" ]; then
    echo "FAIL toy-no-warnings: $(head -c 300 "$work/err")"
else
    echo "ok toy-no-warnings"
fi
