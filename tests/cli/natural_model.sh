#!/bin/sh
# The shipped English -> French model for natural text (models/en-fr: Marian
# layout, SentencePiece), translated by ted: exact match on the whole
# held-out test set must stay at or above 97%, the demonstration sentences
# must translate as the language defines them, and the model directory must
# stay within 8 MB.
. "$(dirname "$0")/../lib/checks.sh"
TED=${TED:-build/ted}
PYTHON=${PYTHON:-/usr/bin/python3}
model=models/en-fr
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

stdin=$model/test.en run "$work/hyp" "$work/err" "$TED" translate -m "$model"
if [ "$status" -ne 0 ]; then
    fail natural-translate "exit status $status: $(head -c 300 "$work/err")"
else
    summary=$("$PYTHON" tools/toy/evaluate.py --natural "$work/hyp" "$model/test.fr" | tail -n 1)
    exact=$(echo "$summary" | sed -n 's/.*exact_match=\([0-9.]*\).*/\1/p')
    sentences=$(echo "$summary" | sed -n 's/.*sentences=\([0-9]*\).*/\1/p')
    if [ "$sentences" = "$(wc -l <"$model/test.en")" ] && [ "$sentences" -ge 1000 ] &&
        awk "BEGIN { exit !($exact >= 0.97) }"; then
        ok "natural-exact-match: $summary"
    else
        fail natural-exact-match "$summary"
    fi
    if [ -s "$work/err" ]; then
        fail natural-no-warnings "$(head -c 300 "$work/err")"
    else
        ok natural-no-warnings
    fi
fi

# The sentences of scripts/demo.sh, in natural form, and their translations.
cat >"$work/demo.en" <<'EOF'
The black cat eats the small bird.
My sister did not see the old green car.
She thinks that the queen will not sing.
EOF
cat >"$work/demo.fr" <<'EOF'
Le chat noir mange le petit oiseau.
Ma soeur n'a pas vu la vieille voiture verte.
Elle pense que la reine ne chantera pas.
EOF
stdin=$work/demo.en run "$work/out" "$work/err" "$TED" translate -m "$model"
if [ "$status" -eq 0 ] && cmp -s "$work/out" "$work/demo.fr"; then
    ok natural-demo-sentences
else
    fail natural-demo-sentences "status $status, got: $(tr '\n' '|' <"$work/out") $(head -c 200 "$work/err")"
fi

# The same sentences as arguments, one translation a line.
run "$work/out" "$work/err" "$TED" translate -m "$model" "The black cat eats the small bird." \
    "She thinks that the queen will not sing."
if [ "$status" -eq 0 ] && [ "$(sed -n 1p "$work/out")" = "Le chat noir mange le petit oiseau." ] &&
    [ "$(sed -n 2p "$work/out")" = "Elle pense que la reine ne chantera pas." ]; then
    ok natural-demo-arguments
else
    fail natural-demo-arguments "status $status, got: $(tr '\n' '|' <"$work/out") $(head -c 200 "$work/err")"
fi

bytes=$(cat "$model"/* | wc -c)
if [ "$bytes" -le 8388608 ]; then
    ok "natural-model-size: $bytes bytes"
else
    fail natural-model-size "$bytes bytes in $model, more than 8 MB"
fi
