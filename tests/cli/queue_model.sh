#!/bin/sh
# bench/queue_model.py, the queue that models ted serve's batching policy
# (docs/serving.md#latency-under-open-loop-load), against times worked out
# by hand:
#   - two sentences, the second arriving during the first's encoder pass:
#     the second is encoded after the first's first step, then both step
#     together; each answer's time is the sum of the passes and steps before
#     it (costs: a step 1 ms + 0.5 a row, a pass 2 ms + 0.1 a token);
#   - one row at a time (--max-batch 1): the waiting sentences are served in
#     arrival order, or shortest first;
#   - the whole tool on the toy model's test set: one step cost whatever
#     the rows and free encoder passes leave each short sentence its steps
#     alone plus at most one step of waiting: the p99 at 50% load is within
#     a step of the alone p99 (its JSON), and a cost per row makes it longer;
#   - costs it cannot use are refused with one message.
# Prints "ok NAME" or "FAIL NAME: why" per check.
TED=${TED:-build/ted}
PYTHON=${PYTHON:-/usr/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. tests/lib/checks.sh

cat >"$work/policy.py" <<'PY'
import sys
sys.path.insert(0, "bench")
import queue_model as q

# lengths 3 and 6 tokens: 7 and 10 steps
server = q.Server([(0, 1.0), (1, 1.5)], (2.0, 0.1), [3, 6], 32, False)
answered, _ = server.run([(0.0, 0), (0.0001, 1)])
# 0: pass 2.3 ms, step 1.5 -> 3.8; 1: pass 2.6 -> 6.4, then steps of 2 rows
# (2 ms): 0 ends after its 6 more at 6.4 + 12 = 18.4 ms; 1 has 4 steps of
# one row left (1.5 ms): 24.4 ms, 24.3 after its arrival.
got = {s: round(1e3 * latency, 6) for _, s, latency in answered}
want = {0: 18.4, 1: 24.3}
print("ok two-sentences" if got == want else f"FAIL two-sentences: {got}, expected {want}")

lengths = [10, 3, 5]
for first, want in ((False, [0, 1, 2]), (True, [1, 2, 0])):
    server = q.Server([(1, 1.0), (2, 1.0)], (0.0, 0.0), lengths, 1, first)
    answered, _ = server.run([(0.0, s) for s in range(3)])
    order = [s for _, s, _ in answered]
    name = "shortest-first" if first else "arrival-order"
    print(f"ok {name}" if order == want else f"FAIL {name}: served {order}, expected {want}")
PY
run "$work/out" "$work/err" "$PYTHON" "$work/policy.py"
cat "$work/out"
if [ "$status" -ne 0 ]; then
    fail queue-model-policy "exit status $status: $(head -c 300 "$work/err")"
fi

# The alone p99 of the short sentences at those costs: their steps (source
# tokens + 4) at 1 ms, from ted tokenize; the tool's p99 at 50% load may add
# one step of waiting.
model() {
    run "$work/$1.json" "$work/err" "$PYTHON" bench/queue_model.py --ted "$TED" \
        --model models/toy-en-fr --texts models/toy-en-fr/test.en --steps "$2" --pass 0,0 \
        --seconds 60 --json
    if [ "$status" -ne 0 ]; then
        fail "queue-model-$1" "exit status $status: $(head -c 300 "$work/err")"
        return 1
    fi
}
if model flat 1:1,2:1 && model rows 1:1.2,2:1.4; then
    "$PYTHON" - "$work" "$TED" <<'PY'
import json, subprocess, sys
work, ted = sys.argv[1:]
lines = [l.rstrip("\n") for l in open("models/toy-en-fr/test.en", encoding="utf-8") if l.strip()]
ids = subprocess.run([ted, "tokenize", "-m", "models/toy-en-fr"], input="\n".join(lines) + "\n",
                     capture_output=True, text=True, check=True).stdout.splitlines()
order = sorted(range(len(lines)), key=lambda i: len(lines[i].split()))
short = sorted(len(ids[i].split()) + 4 for i in order[:len(order) // 4])
alone_p99 = short[int(round(0.99 * (len(short) - 1)))]
flat = json.load(open(f"{work}/flat.json"))
rows = json.load(open(f"{work}/rows.json"))
p99 = flat["loads"][0]["short_p99_ms"]
if alone_p99 <= p99 <= alone_p99 + 1:
    print("ok flat-steps-cost-no-queueing")
else:
    print(f"FAIL flat-steps-cost-no-queueing: p99 {p99} ms, the steps alone {alone_p99}")
if rows["loads"][0]["short_p99_ms"] > p99 and rows["ratio"] > 1:
    print("ok rows-cost-queueing")
else:
    print(f"FAIL rows-cost-queueing: {rows['loads'][0]} against {flat['loads'][0]}")
PY
fi

expect_error queue-model-bad-steps "^--steps: ROWS:MS pairs" "$PYTHON" bench/queue_model.py \
    --ted "$TED" --model models/toy-en-fr --texts models/toy-en-fr/test.en --steps 1:2
