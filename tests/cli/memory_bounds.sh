#!/bin/sh
# What a small model directory can make ted allocate: nothing is sized by
# max_positions alone (the positional encoding is computed per session, for
# the positions a decode reaches), so a tiny model that declares the largest
# max_positions loads, translates and shows its info within a memory limit
# far below the 4 GiB a (max_positions, d_model) table of it would take.
# Each check prints "ok NAME" or "FAIL NAME: why".
TED=${TED:-build/ted}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. tests/lib/checks.sh

case "$TED" in *-san/*) echo "ok memory-bounds-skipped-under-sanitizers"; exit 0 ;; esac

model="$work/model"
cp -r tests/data/tiny-model "$model"
sed -i 's/^  max_positions: .*/  max_positions: 1048576/' "$model/config.yaml"
grep -q 'max_positions: 1048576' "$model/config.yaml" || echo "FAIL memory-bounds-setup: no max_positions key"

# Virtual memory capped at 512 MiB: enough for the program and its libraries,
# not for a table of 1048576 positions.
limited() { (ulimit -v 524288 && exec "$@"); }

run "$work/out" "$work/err" limited "$TED" info -m "$model"
if [ "$status" -eq 0 ] && grep -q 'max_positions: 1048576' "$work/out"; then
    ok info-with-huge-max-positions
else
    fail info-with-huge-max-positions "exit $status: $(head -c 300 "$work/err")"
fi

sentence=$(sed -n '5p;6p;7p' "$model/vocab.src" | tr '\n' ' ')
run "$work/out" "$work/err" limited "$TED" translate -m "$model" --max-length 8 "$sentence"
if [ "$status" -eq 0 ] && [ "$(wc -l <"$work/out")" -eq 1 ]; then
    ok translate-with-huge-max-positions
else
    fail translate-with-huge-max-positions "exit $status: $(head -c 300 "$work/err")"
fi
