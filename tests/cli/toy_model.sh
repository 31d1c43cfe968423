#!/bin/sh
# The shipped tutorial-layout English -> French model, translated by ted:
# every line of its held-out test set must be identical to PyTorch's greedy
# decoding of the same weights (models/toy-en-fr/test.torch.fr, made with
# tools/toy/translate_torch.py --model-dir: the tutorial's greedy_decode),
# so that a regression anywhere in the runtime shows here. The exact match
# against the reference French is reported beside it.
TED=${TED:-build/ted}
PYTHON=${PYTHON:-/usr/bin/python3}
model=models/toy-en-fr
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! "$TED" translate -m "$model" --batch-size 32 <"$model/test.en" >"$work/hyp" 2>"$work/err"; then
    echo "FAIL toy-translate: $(head -c 300 "$work/err")"
    exit 1
fi
lines=$(wc -l <"$model/test.torch.fr")
differ=$(paste -d '\n' "$work/hyp" "$model/test.torch.fr" | awk 'NR % 2 { t = $0; next } $0 != t { n++ } END { print n + 0 }')
if [ "$(wc -l <"$work/hyp")" -eq "$lines" ] && [ "$differ" -eq 0 ]; then
    echo "ok toy-identical-to-pytorch: $lines of $lines lines"
else
    first=$(diff "$work/hyp" "$model/test.torch.fr" | head -n 4 | tr '\n' ' ')
    echo "FAIL toy-identical-to-pytorch: $differ of $lines lines differ: $first"
fi
summary=$("$PYTHON" tools/toy/evaluate.py "$work/hyp" "$model/test.fr" | tail -n 1)
echo "toy exact match against the reference French: $summary"
if [ -s "$work/err" ]; then
    echo "FAIL toy-no-warnings: $(head -c 300 "$work/err")"
else
    echo "ok toy-no-warnings"
fi
