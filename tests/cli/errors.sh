#!/bin/sh
# The ted program on bad files and bad input: one clear message on stderr
# naming what is wrong, exit status 1, never a crash. Each check prints
# "ok NAME" or "FAIL NAME: why".
TED=${TED:-build/ted}
PYTHON=${PYTHON:-/usr/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$PYTHON" tools/export_torch.py tests/data/parity-model/model.pt \
    --src-vocab tests/data/parity-model/vocab.src --tgt-vocab tests/data/parity-model/vocab.tgt \
    --heads 4 --out "$work/good" >/dev/null || { echo "FAIL setup: export failed"; exit 1; }

fresh() {  # a fresh copy of the good model at $work/$1
    rm -rf "${work:?}/$1"
    cp -r "$work/good" "$work/$1"
}

# expect_error NAME PATTERN COMMAND...: exit status 1, stderr matching PATTERN
expect_error() {
    name=$1 pattern=$2
    shift 2
    "$@" >"$work/out" 2>"$work/err" </dev/null
    status=$?
    if [ "$status" -ne 1 ]; then
        echo "FAIL $name: exit status $status, expected 1 ($(head -c 300 "$work/err"))"
    elif ! grep -qE -- "$pattern" "$work/err"; then
        echo "FAIL $name: stderr does not match '$pattern': $(head -c 300 "$work/err")"
    elif [ "$(wc -l <"$work/err")" -gt 2 ]; then
        echo "FAIL $name: more than one message: $(head -c 300 "$work/err")"
    else
        echo "ok $name"
    fi
}

# expect_output NAME EXPECTED_STDOUT COMMAND... (stdin from $work/in)
expect_output() {
    name=$1 expected=$2
    shift 2
    got=$("$@" <"$work/in" 2>"$work/err")
    status=$?
    if [ "$status" -ne 0 ]; then
        echo "FAIL $name: exit status $status: $(head -c 300 "$work/err")"
    elif [ "$got" != "$expected" ]; then
        echo "FAIL $name: got '$got', expected '$expected'"
    else
        echo "ok $name"
    fi
}

# --- bad model files --------------------------------------------------------
fresh truncated
size=$(wc -c <"$work/truncated/model.safetensors")
head -c $((size / 2)) "$work/good/model.safetensors" >"$work/truncated/model.safetensors"
expect_error truncated-weights "model\.safetensors.*(data|offset|beyond|short)" \
    "$TED" translate -m "$work/truncated" "s1 s2"

fresh empty-weights
: >"$work/empty-weights/model.safetensors"
expect_error empty-weights "model\.safetensors" "$TED" translate -m "$work/empty-weights" "s1"

fresh missing-tensor
"$PYTHON" - "$work/missing-tensor/model.safetensors" <<'PY'
import json, struct, sys
path = sys.argv[1]
data = open(path, "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
del header["transformer.decoder.layers.1.linear2.bias"]
text = json.dumps(header, separators=(",", ":")).encode()
text += b" " * (n - len(text))
open(path, "wb").write(data[:8] + text + data[8 + n:])
PY
expect_error missing-tensor "missing tensor 'transformer\.decoder\.layers\.1\.linear2\.bias'" \
    "$TED" translate -m "$work/missing-tensor" "s1"

fresh shape-mismatch
sed -i 's/^  d_ff: .*/  d_ff: 96/' "$work/shape-mismatch/config.yaml"
expect_error shape-mismatch "linear1\.weight' has shape \[[0-9]+, [0-9]+\], the config needs \[96, " \
    "$TED" translate -m "$work/shape-mismatch" "s1"

fresh extra-layer
sed -i 's/^  encoder_layers: .*/  encoder_layers: 1/' "$work/extra-layer/config.yaml"
expect_error unexpected-tensor "transformer\.encoder\.layers\.1\..*not part of the model" \
    "$TED" translate -m "$work/extra-layer" "s1"

fresh malformed-yaml
printf 'model: [unclosed\n' >>"$work/malformed-yaml/config.yaml"
expect_error malformed-yaml "config\.yaml:[0-9]+" "$TED" translate -m "$work/malformed-yaml" "s1"

fresh bad-heads
sed -i 's/^  heads: .*/  heads: 5/' "$work/bad-heads/config.yaml"
expect_error heads-not-dividing "config\.yaml:[0-9]+: model\.heads" \
    "$TED" translate -m "$work/bad-heads" "s1"

fresh missing-vocab
rm "$work/missing-vocab/vocab.src"
expect_error missing-vocab "vocab\.src" "$TED" translate -m "$work/missing-vocab" "s1"

fresh short-vocab
sed -i '$d' "$work/short-vocab/vocab.tgt"
expect_error short-vocab "vocab\.tgt.*tokens" "$TED" translate -m "$work/short-vocab" "s1"

expect_error missing-model-dir "no-such-dir/config\.yaml" "$TED" translate -m "$work/no-such-dir" "s1"
expect_error no-model-option "-m DIR" "$TED" translate "s1"
expect_error unknown-option "unknown option '--frobnicate'" "$TED" translate --frobnicate -m "$work/good"
expect_error bad-number "--batch-size: 'zero' is not a whole number" \
    "$TED" translate -m "$work/good" --batch-size zero "s1"
expect_error unknown-command "unknown command 'frobnicate'" "$TED" frobnicate
expect_error logits-missing-target "--target" "$TED" logits -m "$work/good" --source "s1"

for command in translate logits info; do
    if "$TED" "$command" --help | grep -q "usage: ted $command"; then
        echo "ok help-$command"
    else
        echo "FAIL help-$command: no usage text"
    fi
done

# --- bad input text ---------------------------------------------------------
printf 's1 s2\n\ns3\n' >"$work/in"
lines=$("$TED" translate -m "$work/good" <"$work/in" | wc -l)
empty=$("$TED" translate -m "$work/good" <"$work/in" | sed -n 2p)
if [ "$lines" -eq 3 ] && [ -z "$empty" ]; then
    echo "ok empty-line-gives-empty-line"
else
    echo "FAIL empty-line-gives-empty-line: $lines lines, second '$empty'"
fi

printf 's1 s2\r\ns3\r\n' >"$work/in"
crlf=$("$TED" translate -m "$work/good" <"$work/in")
printf 's1 s2\ns3\n' >"$work/in"
expect_output crlf-line-endings "$crlf" "$TED" translate -m "$work/good"

printf 's1 \000 s2\n' >"$work/in"
expect_error nul-byte "line 1: .*NUL" sh -c "\"$TED\" translate -m \"$work/good\" <\"$work/in\""

printf 's1 \377\376 s2\n' >"$work/in"
expect_error invalid-utf8 "line 1: .*UTF-8" sh -c "\"$TED\" translate -m \"$work/good\" <\"$work/in\""

"$TED" translate -m "$work/good" "s1 zzzunknown s2" >"$work/out" 2>"$work/err"
if [ $? -eq 0 ] && grep -q "1 word not in the vocabulary" "$work/err" && [ "$(wc -l <"$work/out")" -eq 1 ]; then
    echo "ok unknown-word-reported"
else
    echo "FAIL unknown-word-reported: $(cat "$work/err")"
fi

"$PYTHON" -c "print(' '.join(['s1'] * 6000))" >"$work/in"
expect_error over-long-line "line 1: 6002 tokens, more than the model's max_positions" \
    sh -c "\"$TED\" translate -m \"$work/good\" <\"$work/in\""
