#!/bin/sh
# `ted quantize` stopped or starved while it writes:
#   - SIGTERM, SIGINT and SIGHUP once its temporary weights file
#     (OUT/model.safetensors.XXXXXX) exists: the run ends by that signal,
#     nothing of it is left (OUT removed when the run created it, emptied
#     when it was given empty), and the same command run again succeeds;
#   - a full disk (a 1 MiB tmpfs; mounting one needs root, else skipped):
#     one message naming the file and "No space left on device", nothing
#     left behind;
#   - a planted symbolic link in OUT: refused (OUT is not empty), the link's
#     target untouched;
#   - `ted quantize --help` prints the usage once.
# The model is models/en-fr with its feed-forward layers widened to
# d_ff 32768 (200 MB of F32 weights), so that writing takes a moment.
# Each check prints "ok NAME" or "FAIL NAME: why" ("skip NAME: why" for a
# check this machine cannot make, not counted).
TED=${TED:-build/ted}
PYTHON=${PYTHON:-/usr/bin/python3}
work=$(mktemp -d)
mounted=
trap '[ -n "$mounted" ] && umount "$mounted"; rm -rf "$work"' EXIT
. tests/lib/checks.sh
LIMIT=120

# ---- --help --------------------------------------------------------------------

run "$work/out" "$work/err" "$TED" quantize --help
count=$(grep -c '^usage: ted quantize' "$work/out")
if [ "$status" -eq 0 ] && [ "$count" -eq 1 ]; then
    ok quantize-help-once
else
    fail quantize-help-once "exit $status, the usage printed $count times"
fi

# ---- a model that takes a moment to write -------------------------------------

big=$work/big
"$PYTHON" - models/en-fr "$big" 32768 <<'PY'
import os, re, shutil, sys
import numpy as np
sys.path.insert(0, "tools")
import ted_format
src, dst, d_ff = sys.argv[1], sys.argv[2], int(sys.argv[3])
shutil.copytree(src, dst)
t = ted_format.read_tensors(os.path.join(src, "model.safetensors"))
block = np.random.default_rng(0).standard_normal(1 << 16).astype(np.float32) * 0.05
def filled(shape):
    return np.resize(block, int(np.prod(shape))).reshape(shape)
for name in list(t):
    if name.endswith("fc1.weight"):
        t[name] = filled((d_ff, t[name].shape[1]))
    elif name.endswith("fc1.bias"):
        t[name] = filled((d_ff,))
    elif name.endswith("fc2.weight"):
        t[name] = filled((t[name].shape[0], d_ff))
ted_format.write_safetensors(os.path.join(dst, "model.safetensors"), sorted(t.items()))
path = os.path.join(dst, "config.yaml")
text = re.sub(r"d_ff: \d+", f"d_ff: {d_ff}", open(path).read())
open(path, "w").write(text)
PY

# stop_while_writing NAME SIGNAL OUT: starts `ted quantize $big OUT`, sends
# SIGNAL once OUT/model.safetensors.* exists, and checks that the run died
# of it and left nothing; then that the same command succeeds.
# A shell starts a background command with SIGINT ignored, which ted then
# keeps ignoring: it is started with the default action restored.
stop_while_writing() {
    name=$1 sig=$2 dest=$3 mode=$4
    "$PYTHON" -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])' "$TED" quantize "$big" "$dest" >"$work/out" 2>"$work/err" &
    pid=$!
    tries=0
    while :; do
        set -- "$dest"/model.safetensors.*
        [ -e "$1" ] && break
        kill -0 "$pid" 2>/dev/null || break
        tries=$((tries + 1))
        [ "$tries" -gt 200000 ] && break
    done
    seen=$1
    kill -s "$sig" "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    status=$?
    left=$(ls -A "$dest" 2>/dev/null)
    if [ ! -e "$seen" ] && [ "$status" -eq 0 ]; then
        skip "$name" "the run ended before its temporary file was seen"
        # what it wrote goes, so that the run below starts as this one did
        rm -rf "$dest"
        [ "$mode" = given ] && mkdir "$dest"
    elif [ "$status" -le 128 ]; then
        fail "$name" "exit status $status, expected death by SIG$sig ($(head -c 200 "$work/err"))"
    elif [ -n "$left" ]; then
        fail "$name" "left in $dest: $(echo $left)"
    elif [ "$mode" = created ] && [ -e "$dest" ]; then
        fail "$name" "$dest, which the run created, is still there"
    elif [ "$mode" = given ] && [ ! -d "$dest" ]; then
        fail "$name" "$dest, given empty, was removed"
    else
        ok "$name"
    fi
    run "$work/out" "$work/err" "$TED" quantize "$big" "$dest"
    if [ "$status" -eq 0 ] && [ -f "$dest/model.safetensors" ] && [ -f "$dest/config.yaml" ]; then
        ok "$name-rerun"
    else
        fail "$name-rerun" "exit $status: $(head -c 200 "$work/err")"
    fi
}

stop_while_writing quantize-sigterm TERM "$work/term" created
stop_while_writing quantize-sigint INT "$work/int" created
mkdir "$work/hup"
stop_while_writing quantize-sighup-given-dir HUP "$work/hup" given

# ---- a planted link --------------------------------------------------------------

mkdir "$work/planted"
echo victim >"$work/victim"
ln -s "$work/victim" "$work/planted/model.safetensors.tmp"
expect_error quantize-planted-link 'planted: the output directory exists and is not empty' \
    "$TED" quantize models/en-fr "$work/planted"
if [ "$(cat "$work/victim")" != victim ]; then
    fail quantize-planted-link-target "the link's target was written"
fi

# ---- a full disk -------------------------------------------------------------------

mkdir "$work/full"
if mount -t tmpfs -o size=1M tmpfs "$work/full" 2>/dev/null; then
    mounted=$work/full
    expect_error quantize-full-disk \
        'cannot write .*full/out/model\.safetensors: No space left on device' \
        "$TED" quantize models/en-fr "$work/full/out"
    if [ -n "$(ls -A "$work/full")" ]; then
        fail quantize-full-disk-cleaned "left on the full disk: $(ls -A "$work/full")"
    else
        ok quantize-full-disk-cleaned
    fi
    umount "$work/full" && mounted=
else
    skip quantize-full-disk "cannot mount a 1 MiB tmpfs here (needs root)"
fi
