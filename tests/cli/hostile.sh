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
# Each check prints "ok NAME" or "FAIL NAME: why" ("skip NAME: why" for a
# check this machine cannot make, not counted).
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
*-san/*) skip truncated-while-in-use "ASan owns SIGBUS" ;;
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

# --- -o FILE (and ted attention's FILEs) keep what FILE is -------------------
# A symbolic link's target is written and the link stays; an existing file
# keeps its mode and owner; /dev/stdout and a FIFO are written directly,
# not replaced by a regular file; the temporary file is gone after an error
# and after SIGTERM.
odir="$work/o"
mkdir "$odir"
echo old >"$odir/private"
chmod 600 "$odir/private"
ln -s private "$odir/link"
run "$work/out" "$work/err" "$TED" translate -m "$toy" -o "$odir/link" "the cat sleeps ."
if [ "$status" -eq 0 ] && [ -L "$odir/link" ] && [ "$(cat "$odir/private")" = "le chat dort ." ] &&
    [ "$(stat -c %a "$odir/private")" = 600 ]; then
    ok output-symlink-target-written-mode-kept
else
    fail output-symlink-target-written-mode-kept \
        "exit $status, link: $(ls -l "$odir/link" "$odir/private" 2>&1 | tr '\n' ' ')"
fi

if [ "$(id -u)" -eq 0 ]; then
    echo old >"$odir/owned"
    chown nobody "$odir/owned"
    chmod 640 "$odir/owned"
    run "$work/out" "$work/err" "$TED" translate -m "$toy" -o "$odir/owned" "the cat ."
    if [ "$status" -eq 0 ] && [ "$(stat -c '%U %a' "$odir/owned")" = "nobody 640" ] &&
        [ "$(cat "$odir/owned")" = "le chat ." ]; then
        ok output-owner-kept
    else
        fail output-owner-kept "exit $status: $(stat -c '%U %a' "$odir/owned")"
    fi
else
    skip output-owner-kept "not root: cannot chown"
fi

# Through a link like /dev/stdout (made here: a ted that replaced it would
# break the machine's /dev/stdout), into a pipe and into a file opened for
# appending: standard output is written, the link stays a link.
ln -s /proc/self/fd/1 "$odir/stdout"
"$TED" translate -m "$toy" -o "$odir/stdout" "the cat ." 2>"$work/err" | cat >"$work/piped"
echo before >"$work/appended"
"$TED" attention -m "$toy" "the cat ." --svg "$odir/stdout" >>"$work/appended" 2>>"$work/err"
if [ "$(cat "$work/piped")" = "le chat ." ] && [ -L "$odir/stdout" ] &&
    [ "$(head -n 1 "$work/appended")" = before ] && grep -q '</svg>' "$work/appended" &&
    [ ! -s "$work/err" ]; then
    ok output-dev-stdout-written-through
else
    fail output-dev-stdout-written-through "$(head -c 300 "$work/piped" "$work/err")"
fi

mkfifo "$odir/fifo"
timeout "$LIMIT" cat "$odir/fifo" >"$work/from-fifo" &
reader=$!
run "$work/out" "$work/err" "$TED" translate -m "$toy" -o "$odir/fifo" "the cat ."
wait "$reader"
if [ "$status" -eq 0 ] && [ -p "$odir/fifo" ] && [ "$(cat "$work/from-fifo")" = "le chat ." ]; then
    ok output-fifo-written-through
else
    fail output-fifo-written-through "exit $status, reader got '$(head -c 100 "$work/from-fifo")'"
fi

# A device node (made here: a ted that replaced it would break /dev/null).
if [ "$(id -u)" -eq 0 ] && mknod "$work/null" c 1 3 2>/dev/null; then
    run "$work/out" "$work/err" "$TED" translate -m "$toy" -o "$work/null" "the cat ."
    if [ "$status" -eq 0 ] && [ -c "$work/null" ] && [ ! -s "$work/err" ]; then
        ok output-device-written-through
    else
        fail output-device-written-through "exit $status: $(ls -l "$work/null")"
    fi
else
    skip output-device-written-through "not root, or mknod refused"
fi

# An error after the output was opened (a bad line): FILE unchanged, no
# temporary file left.
printf 'the cat .\n\377\n' >"$work/bad-line"
run "$work/out" "$work/err" "$TED" translate -m "$toy" -i "$work/bad-line" -o "$odir/private"
if [ "$status" -eq 1 ] && [ "$(cat "$odir/private")" = "le chat dort ." ] &&
    [ "$(ls "$odir" | wc -l)" -eq 5 ]; then
    ok output-error-leaves-file-and-no-temporary
else
    fail output-error-leaves-file-and-no-temporary "exit $status: $(ls "$odir" | tr '\n' ' ')"
fi

# SIGTERM while translating standard input (a FIFO kept open) to -o FILE.
mkfifo "$work/slow-input"
"$TED" translate -m "$toy" -o "$odir/private" <"$work/slow-input" 2>"$work/err" &
pid=$!
exec 4>"$work/slow-input"
echo "the cat ." >&4
sleep 1
temporaries=$(ls "$odir" | grep -c '^private\.')
kill -TERM "$pid"
{ wait "$pid"; } 2>/dev/null  # the shell's "Terminated"
status=$?
exec 4>&-
if [ "$temporaries" -eq 1 ] && [ "$status" -eq 143 ] && [ "$(ls "$odir" | wc -l)" -eq 5 ] &&
    [ "$(cat "$odir/private")" = "le chat dort ." ]; then
    ok output-temporary-removed-on-sigterm
else
    fail output-temporary-removed-on-sigterm \
        "$temporaries temporary while running, exit $status, after: $(ls "$odir" | tr '\n' ' ')"
fi

# ted attention writes layers x heads x length^2 weights: a long sentence is
# refused with the cap named, before anything of that size is allocated, and
# a decode stops at the cap (an HTML page of 64 source tokens and 64 steps).
long=$(for i in $(seq 100); do printf 'the cat '; done)
expect_error attention-html-length-capped \
    "attention: the sentence is 20[0-9] tokens; --html and --svg draw at most 64" \
    "$TED" attention -m "$toy" "$long" --html "$work/long.html"
expect_error attention-json-length-capped \
    "attention: the sentence is 40[0-9] tokens; --json holds at most 256" \
    "$TED" attention -m "$toy" "$long $long" --json "$work/long.json"
expect_error attention-max-length-capped "attention: --max-length 100: --html and --svg draw at most 64 steps" \
    "$TED" attention -m "$toy" "the cat ." --max-length 100 --svg "$work/long.svg"
model_copy runaway-attention
sed -i 's/^  max_positions: .*/  max_positions: 4096/; s/^  max_length_offset: .*/  max_length_offset: 0/' \
    "$work/runaway-attention/config.yaml"
word=$(sed -n 5p "$work/runaway-attention/vocab.src")
sentence=$(for i in $(seq 30); do printf '%s ' "$word"; done)  # a rule of 2 x 32 + 10 steps
run "$work/out" "$work/err" "$TED" attention -m "$work/runaway-attention" "$sentence" --json "$work/steps.json" --html "$work/steps.html"
steps=$("$PYTHON" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["steps"]))' "$work/steps.json" 2>&1)
if [ "$status" -eq 0 ] && [ "$steps" = 64 ] && [ "$(wc -c <"$work/steps.html")" -lt 20000000 ]; then
    ok attention-decode-stops-at-cap
else
    fail attention-decode-stops-at-cap "exit $status, $steps steps: $(head -c 200 "$work/err")"
fi
