#!/bin/sh
# Files that would hang ted, exhaust its memory or kill it with a signal:
# each is refused with one message naming the file, and exit status 1.
#   - a FIFO in place of the weights file or a vocabulary (open() of a FIFO
#     with no writer blocks forever unless the file is checked first);
#   - a safetensors header of a few MiB holding millions of JSON values
#     (a JSON tree is ~30x its text), under a 512 MiB memory limit;
#   - the weights file cut short while ted is translating with it (reading
#     a mapped page past the new end raises SIGBUS);
#   - output to a full disk (/dev/full): every command reports the failed
#     write instead of exiting 0.
# Each check prints "ok NAME" or "FAIL NAME: why".
TED=${TED:-build/ted}
PYTHON=${PYTHON:-/usr/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. tests/lib/checks.sh
LIMIT=20

model_copy() {  # $1: name -> a fresh copy of the tiny model in $work/$1
    rm -rf "${work:?}/$1"
    cp -r tests/data/tiny-model "$work/$1"
}

model_copy fifo-weights
rm "$work/fifo-weights/model.safetensors"
mkfifo "$work/fifo-weights/model.safetensors"
expect_error fifo-weights 'model\.safetensors: not a regular file' \
    "$TED" info -m "$work/fifo-weights"

model_copy fifo-vocab
rm "$work/fifo-vocab/vocab.tgt"
mkfifo "$work/fifo-vocab/vocab.tgt"
expect_error fifo-vocab 'vocab\.tgt: not a regular file' "$TED" info -m "$work/fifo-vocab"

# A header of 4 million zeros in one metadata array: 8 MiB of text.
model_copy header-values
"$PYTHON" - "$work/header-values/model.safetensors" <<'PY'
import struct, sys
header = b'{"__metadata__":{"k":[' + b"0," * 3999999 + b'0]}}'
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(header)) + header)
PY
# ASan reserves terabytes of address space for its shadow memory, so the
# memory limit applies only to the plain build.
case "$TED" in
*-san/*) limited() { "$@"; } ;;
*) limited() { (ulimit -v 524288 && exec "$@"); } ;;
esac
expect_error header-values 'model\.safetensors: header holds more than 1000000 JSON values' \
    limited "$TED" info -m "$work/header-values"

# Translating from standard input, which stays open until the file is cut.
case "$TED" in
*-san/*) ok truncated-while-in-use-skipped-under-sanitizers ;;  # ASan owns SIGBUS
*)
    cp -r models/toy-en-fr "$work/cut"
    fifo="$work/input"
    mkfifo "$fifo"
    timeout "$LIMIT" "$TED" translate -m "$work/cut" <"$fifo" >"$work/out" 2>"$work/err" &
    pid=$!
    exec 3>"$fifo"
    echo "the cat sleeps ." >&3
    sleep 1
    truncate -s 4096 "$work/cut/model.safetensors"
    echo "the dog eats the apple ." >&3
    exec 3>&-
    wait "$pid"
    status=$?
    if [ "$status" -eq 1 ] && [ "$(wc -l <"$work/err")" -eq 1 ] &&
        grep -q 'cut/model\.safetensors: the file changed while in use' "$work/err"; then
        ok truncated-while-in-use
    else
        fail truncated-while-in-use "exit $status: $(head -c 300 "$work/err")"
    fi
    ;;
esac

toy=models/toy-en-fr
for command in "info -m $toy" "logits -m $toy --source cat --target chat" \
    "step -m $toy --auto cat" "translate -m $toy cat" "bench -m $toy --repeat 1" \
    "attention -m $toy cat --json /dev/stdout" "info --help"; do
    # shellcheck disable=SC2086
    set -- $command
    name="full-disk-$1$( [ "$2" = --help ] && echo -help)"
    run "$work/out" "$work/err" sh -c 'exec "$@" >/dev/full' sh "$TED" "$@"
    if [ "$status" -eq 1 ] && [ "$(wc -l <"$work/err")" -eq 1 ] &&
        grep -qiE 'writ.*(No space left|error)' "$work/err"; then
        ok "$name"
    else
        fail "$name" "exit $status: $(head -c 300 "$work/err")"
    fi
done

# A token of 300 three-byte characters: its label is cut between two
# characters, so the JSON of `ted attention` stays valid UTF-8.
model_copy long-token
long=$("$PYTHON" -c 'print("\u20ac" * 300)')
sed -i "5s/.*/$long/" "$work/long-token/vocab.src"
run "$work/out" "$work/err" "$TED" attention -m "$work/long-token" "$long" --json "$work/long.json"
if [ "$status" -eq 0 ] && "$PYTHON" - "$work/long.json" <<'PY'
import json, sys
text = open(sys.argv[1], "rb").read().decode("utf-8")  # raises on a split character
labels = json.loads(text)["source_tokens"]
long = [label for label in labels if "\u20ac\u20ac" in label]
assert long and all(label.endswith("\u2026") and len(label.encode()) < 512 for label in long), long
PY
then
    ok long-token-cut-between-characters
else
    fail long-token-cut-between-characters "exit $status: $(head -c 300 "$work/err")"
fi

# An unknown word of 1 MB is named in a warning of a line, not echoed whole.
{ printf 'the '; head -c 1000000 /dev/zero | tr '\0' 'x'; printf ' cat .\n'; } >"$work/line"
stdin="$work/line" run "$work/out" "$work/err" "$TED" translate -m "$toy"
if [ "$status" -eq 0 ] && [ "$(wc -c <"$work/err")" -lt 300 ] && grep -q "'xxxx*…'" "$work/err"; then
    ok huge-unknown-word-warning-cut
else
    fail huge-unknown-word-warning-cut "exit $status, $(wc -c <"$work/err") bytes on stderr"
fi

# A model that declares a million positions and no length bound: a decode
# that never ends in EOS stops at 2 x source ids + 10 tokens.
model_copy runaway
sed -i 's/^  max_positions: .*/  max_positions: 1048576/; s/^  max_length_offset: .*/  max_length_offset: 0/' \
    "$work/runaway/config.yaml"
words="$(sed -n 5p "$work/runaway/vocab.src") $(sed -n 6p "$work/runaway/vocab.src")"
run "$work/out" "$work/err" "$TED" translate -m "$work/runaway" --scores "$words"
tokens=$(awk -F ' [|][|][|] ' '{ print split($4, t, " ") }' "$work/out")
if [ "$status" -eq 0 ] && [ -n "$tokens" ] && [ "$tokens" -le 18 ]; then
    ok runaway-decode-bounded-by-source
else
    fail runaway-decode-bounded-by-source "exit $status, $tokens tokens: $(head -c 200 "$work/err")"
fi
