#!/bin/sh
# What a small model directory can make ted allocate: nothing is sized by
# max_positions alone (the positional encoding is computed per session, for
# the positions a decode reaches), so a tiny model that declares the largest
# max_positions loads, translates and shows its info within a memory limit
# far below the 4 GiB a (max_positions, d_model) table of it would take.
# Each check prints "ok NAME" or "FAIL NAME: why" ("skip NAME: why" for a
# check this machine cannot make, not counted).
TED=${TED:-build/ted}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. tests/lib/checks.sh

case "$TED" in *-san/*) skip memory-bounds "the sanitizer runtimes need more address space than the limit"; exit 0 ;; esac

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

# Memory follows what is decoded, not what might be: 64 samples of a
# 3-word sentence with --max-length 5000 end after a few tokens, and the
# self-attention caches grow with the steps taken (64 x 5000 positions laid
# out at once are ~1 GiB on the toy model).
run "$work/out" "$work/err" limited "$TED" translate -m models/toy-en-fr --sample --n-best 64 \
    --max-length 5000 --seed 1 "the cat ."
if [ "$status" -eq 0 ] && [ "$(wc -l <"$work/out")" -eq 64 ]; then
    ok sample-n-best-64-max-length-5000
else
    fail sample-n-best-64-max-length-5000 "exit $status: $(head -c 300 "$work/err")"
fi

# Peak memory of `ted info` is bounded by a constant (the program, its
# libraries, a tiny model: measured here) plus 48 times the model
# directory's size. The largest multiple measured (docs/model-format.md,
# "What ted refuses") is ~41, for a safetensors header of a million small
# JSON values, each a node of the parsed tree; a float model's Linear
# weights are copied into panels (one times their size), the rest is mapped,
# not read.
if [ ! -x /usr/bin/time ]; then
    skip info-memory-multiple "/usr/bin/time is not installed"
    exit 0
fi
peak_kib() {  # peak RSS in KiB of `ted info -m $1`
    /usr/bin/time -o "$work/time" -f '%M' "$TED" info -m "$1" >/dev/null 2>&1
    tail -n 1 "$work/time"
}
base=$(peak_kib tests/data/tiny-model)
"${PYTHON:-/usr/bin/python3}" - "$work/values" tests/data/tiny-model <<'PY'
import json, shutil, struct, sys
out, tiny = sys.argv[1], sys.argv[2]
shutil.copytree(tiny, out)
raw = open(out + "/model.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.dumps(json.loads(raw[8:8 + n])).encode()
header = header[:-1] + b',"__metadata__":{"k":[' + b"0," * 998999 + b'0]}}'
header += b" " * (-(8 + len(header)) % 8)
with open(out + "/model.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(header)) + header + raw[8 + n:])
PY
for dir in models/toy-en-fr models/en-fr "$model" "$work/values"; do
    peak=$(peak_kib "$dir")
    size=$(du -sbL "$dir" | cut -f1)
    if [ -n "$peak" ] && [ "$((peak - base))" -le "$((48 * size / 1024))" ]; then
        ok "info-memory-within-48x-$(basename "$dir")"
    else
        fail "info-memory-within-48x-$(basename "$dir")" \
            "peak $peak KiB, constant $base KiB, directory $size bytes"
    fi
done

# `ted step --auto` prints each step as it runs and keeps what it shows: a
# step's weights, not every step's, and not the encoder's self-attention
# (encoder_layers x heads x S^2 floats, 108 MB for these 1502 source
# tokens), which it does not show. On a 1500-word source decoded for 1506
# steps its peak stays within 1.5 times `ted translate`'s on the same
# sentence.
words=$(tr -s ' \n' '\n\n' <models/toy-en-fr/test.en | head -n 1500 | tr '\n' ' ')
forced=$(seq 1 1500 | sed 's/.*/--force &:le/' | tr '\n' ' ')
translate_peak=$(/usr/bin/time -o "$work/time" -f '%M' "$TED" translate -m models/toy-en-fr "$words" \
    >/dev/null 2>&1; tail -n 1 "$work/time")
# shellcheck disable=SC2086
step_peak=$(/usr/bin/time -o "$work/time" -f '%M' "$TED" step --auto $forced -m models/toy-en-fr \
    "$words" >"$work/out" 2>&1; tail -n 1 "$work/time")
if grep -q '(1506 steps' "$work/out" && [ "$((2 * step_peak))" -le "$((3 * translate_peak))" ]; then
    ok "step-auto-within-1.5x-translate ($step_peak KiB, ted translate $translate_peak KiB)"
else
    fail step-auto-within-1.5x-translate "ted step peak $step_peak KiB, ted translate \
$translate_peak KiB: $(tail -n 1 "$work/out")"
fi
