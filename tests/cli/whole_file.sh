#!/bin/sh
# ted translate over whole files: sentences sorted by length, batched by
# tokens (--max-batch-tokens), several batches at once (--workers), the
# input's order kept; and the thread count, which keeps to the CPUs the
# process may use. The reference of every translation check is each
# sentence decoded alone (--batch-size 1 --workers 1 --threads 1), an
# independent decode of each sentence; the CPU count's is Python's
# os.sched_getaffinity and taskset's mask. Each check prints "ok NAME",
# "FAIL NAME: why" or "skip NAME: why".
TED=${TED:-build/ted}
PYTHON=${PYTHON:-/usr/bin/python3}
TOY=models/toy-en-fr
NATURAL=models/en-fr
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. tests/lib/checks.sh

ALONE="--batch-size 1 --workers 1 --threads 1"

# same NAME WANT GOT: the files are identical
same() {
    if cmp -s "$2" "$3"; then ok "$1"; else fail "$1" "$(diff "$2" "$3" | head -n 4)"; fi
}

# translated NAME OUT ARGS...: ted translate ARGS > OUT, exit 0, no message
translated() {
    name=$1 out=$2
    shift 2
    run "$out" "$work/err" "$TED" translate "$@"
    if [ "$status" -ne 0 ] || [ -s "$work/err" ]; then
        fail "$name" "exit $status: $(head -c 300 "$work/err")"
        return 1
    fi
}

# --- token batches, workers: as each sentence alone ----------------------------
head -n 500 "$TOY/test.en" >"$work/toy.en"
printf '\nthe zorglub sleeps .\n' >>"$work/toy.en"  # an empty line; an unknown word
"$TED" translate -m "$TOY" $ALONE -i "$work/toy.en" -o "$work/toy.alone" 2>/dev/null
for args in "--max-batch-tokens 256" "--max-batch-tokens 64 --workers 2" \
            "--max-batch-tokens 1 --workers 3" "--workers 2 --batch-size 7"; do
    name="toy-as-alone/$(echo "$args" | tr -d '-' | tr ' ' '-')"
    run "$work/out" "$work/err" "$TED" translate -m "$TOY" $args -i "$work/toy.en"
    if [ "$status" -ne 0 ]; then
        fail "$name" "exit $status: $(head -c 300 "$work/err")"
    else
        same "$name" "$work/toy.alone" "$work/out"
    fi
done

# SentencePiece, the natural model
head -n 200 "$NATURAL/test.en" >"$work/natural.en"
"$TED" translate -m "$NATURAL" $ALONE -i "$work/natural.en" -o "$work/natural.alone"
if translated natural-as-alone "$work/out" -m "$NATURAL" --max-batch-tokens 200 \
        --workers 2 -i "$work/natural.en"; then
    same natural-as-alone "$work/natural.alone" "$work/out"
fi

# n-best lists with scores: beam search and seeded sampling
head -n 60 "$TOY/test.en" >"$work/toy60.en"
for decoding in "--beam 4 --n-best 2" "--sample --seed 11 --n-best 3"; do
    name="toy-n-best-as-alone/$(echo "$decoding" | tr -d '-' | tr ' ' '-')"
    "$TED" translate -m "$TOY" $ALONE $decoding --scores -i "$work/toy60.en" \
        -o "$work/nbest.alone"
    if translated "$name" "$work/out" -m "$TOY" $decoding --scores --max-batch-tokens 80 \
            --workers 2 -i "$work/toy60.en"; then
        same "$name" "$work/nbest.alone" "$work/out"
    fi
done

# --- the thread count -------------------------------------------------------------
# the CPUs of the affinity mask; empty when a cgroup v2 CPU quota may lower them
cpus=$("$PYTHON" - <<'EOF'
import os
try:
    path = open("/proc/self/cgroup").read().split("0::", 1)[1].split("\n")[0]
    while True:
        with open(f"/sys/fs/cgroup{path.rstrip('/')}/cpu.max") as f:
            if not f.read().startswith("max"):
                raise SystemExit(0)
        if path in ("", "/"):
            break
        path = os.path.dirname(path.rstrip("/"))
except (IndexError, OSError):
    pass
print(len(os.sched_getaffinity(0)))
EOF
)
run "$work/out" "$work/err" "$TED" translate -m "$TOY" --threads 256 "the cat sleeps ."
if [ -z "$cpus" ]; then
    skip threads-beyond-the-cpus "a cgroup CPU quota is set"
elif [ "$status" -ne 0 ]; then
    fail threads-beyond-the-cpus "exit $status: $(head -c 300 "$work/err")"
elif ! grep -q -- "--threads 256: this process may use $cpus CPUs\?; running $cpus thread" \
        "$work/err"; then
    fail threads-beyond-the-cpus "expected $cpus CPUs in: $(head -c 300 "$work/err")"
else
    ok threads-beyond-the-cpus
fi

if taskset -c 0 true 2>/dev/null; then
    run "$work/json" "$work/err" taskset -c 0 "$TED" bench -m "$TOY" --threads 8 --repeat 1 \
        --new-tokens 2
    if [ "$status" -eq 0 ] && grep -q '"threads": 1,' "$work/json" &&
            grep -q "this process may use 1 CPU; running 1 thread" "$work/err"; then
        ok threads-follow-the-affinity-mask
    else
        fail threads-follow-the-affinity-mask "exit $status: $(head -c 300 "$work/json") $(head -c 300 "$work/err")"
    fi
    head -n 200 "$TOY/test.en" >"$work/toy200.en"
    "$TED" translate -m "$TOY" $ALONE -i "$work/toy200.en" -o "$work/toy200.alone"
    run "$work/out" "$work/err" taskset -c 0 "$TED" translate -m "$TOY" --threads 16 \
        --max-batch-tokens 128 -i "$work/toy200.en"
    if [ "$status" -ne 0 ]; then
        fail one-cpu-sixteen-threads "exit $status: $(head -c 300 "$work/err")"
    else
        same one-cpu-sixteen-threads "$work/toy200.alone" "$work/out"
    fi
else
    skip threads-follow-the-affinity-mask "taskset cannot pin to CPU 0"
fi

# --- refused options -----------------------------------------------------------------
expect_error max-batch-tokens-zero "--max-batch-tokens: '0' is not" \
    "$TED" translate -m "$TOY" --max-batch-tokens 0 "the cat ."
expect_error max-batch-tokens-word "--max-batch-tokens: 'many' is not" \
    "$TED" translate -m "$TOY" --max-batch-tokens many "the cat ."
expect_error workers-zero "--workers: '0' is not" \
    "$TED" translate -m "$TOY" --workers 0 "the cat ."
expect_error workers-too-many "--workers: '257' is not" \
    "$TED" translate -m "$TOY" --workers 257 "the cat ."
