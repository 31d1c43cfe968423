#!/usr/bin/python3
"""What latency ted serve's batching policy allows at given step costs.

    /usr/bin/python3 bench/queue_model.py --ted build/ted --model build/bench/marian-int8 \
        --texts build/toy/test.en --threads 2
    /usr/bin/python3 bench/queue_model.py --ted build/ted --model build/bench/marian-int8 \
        --texts build/toy/test.en --steps 1:1.04,8:1.79,16:2.82,32:4.90 --pass 0.5,0.045 \
        --max-batch 8

A queue fed the load of make bench-serve's open loop (bench/serve_bench.py):
the test sentences, each decoding its source tokens + 4 steps (the bench's
greedy copy of a random-weights model), arriving at random (Poisson) at 50%
and 80% of the saturation throughput, which is measured first with 64
requests kept open. The server it models does only what the decoding loop's
policy does (docs/serving.md#how-continuous-batching-works), between two
steps: it encodes the sentences waiting, in arrival order (or shortest
first), up to 256 source tokens and --max-batch rows in all, in one pass
padded to the longest; then one step feeds every row. Nothing else takes
time: no HTTP, no other threads, no noise. So its latencies are a floor for
that policy at those costs, and its ratio (a short sentence's p99 at 50% load
over its p50 alone) says whether the scheduling can reach a target at all.

The costs, in ms: a step's at some numbers of rows (--steps ROWS:MS,...;
between two of them a step costs what the line between them gives, past the
last what the last two give), an encoder pass PASS + TOKEN * (sentences *
longest source) (--pass PASS,TOKEN). Either one not given is measured with
`ted bench` on --model with --threads: steps at 1, 2, 4, 8, 16 and 32 rows
over sources of the sentences' mean length, passes of 1 sentence of 8
tokens and of 8 of 40. A machine's figures move between runs; given costs
make the model's answer reproducible. The sentences' lengths are their
source tokens by `ted tokenize`. Standard library only.
"""
import argparse
import heapq
import json
import random
import subprocess
import sys

ENCODE_TOKENS = 256  # a group's source tokens (src/serve/loop.c)
MEASURED_ROWS = (1, 2, 4, 8, 16, 32)


def bench(ted, model, threads, batch, source_len, new_tokens):
    out = subprocess.run([ted, "bench", "-m", model, "--batch", str(batch), "--source-len",
                          str(source_len), "--new-tokens", str(new_tokens), "--threads",
                          str(threads), "--repeat", "5"], capture_output=True, text=True,
                         check=True)
    result = json.loads(out.stdout)
    return result["per_token_ms"], result["encode_ms"]


def measured_steps(ted, model, threads, source_len):
    """(rows, ms) of a step at MEASURED_ROWS, over sources of `source_len`."""
    return [(rows, bench(ted, model, threads, rows, source_len, 32)[0])
            for rows in MEASURED_ROWS]


def measured_pass(ted, model, threads):
    """(PASS, TOKEN) from two encoder passes."""
    _, short = bench(ted, model, threads, 1, 8, 1)
    _, long = bench(ted, model, threads, 8, 40, 1)
    token = (long - short) / (8 * 40 - 8)
    return short - 8 * token, token


def parse_steps(text):
    """--steps: ROWS:MS,... in order of rows, two at least."""
    try:
        steps = sorted((int(r), float(ms)) for r, ms in (p.split(":") for p in text.split(",")))
    except ValueError:
        steps = []
    if len(steps) < 2 or len({r for r, _ in steps}) != len(steps) or \
            min(r for r, _ in steps) < 0 or min(ms for _, ms in steps) <= 0:
        raise SystemExit("--steps: ROWS:MS pairs, two or more, the rows distinct, the ms positive")
    return steps


def parse_pass(text):
    """--pass: PASS,TOKEN."""
    try:
        costs = tuple(float(c) for c in text.split(","))
    except ValueError:
        costs = ()
    if len(costs) != 2 or min(costs) < 0:
        raise SystemExit("--pass: two numbers of ms, PASS,TOKEN, not negative")
    return costs


def lengths_of(ted, model, texts):
    with open(texts, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.strip()]
    out = subprocess.run([ted, "tokenize", "-m", model], input="\n".join(lines) + "\n",
                         capture_output=True, text=True, check=True)
    counts = [len(line.split()) for line in out.stdout.splitlines()]
    if len(counts) != len(lines):
        raise SystemExit(f"ted tokenize gave {len(counts)} lines for {len(lines)}")
    return lines, counts


def short_set(lines):
    """The shortest quarter of the sentences by words (serve_bench.py's classes)."""
    order = sorted(range(len(lines)), key=lambda i: len(lines[i].split()))
    return set(order[:max(1, len(order) // 4)])


class Server:
    """The policy at the costs; run() serves a list of arrivals."""

    def __init__(self, steps, pass_costs, lengths, max_batch, shortest_first):
        self.steps = steps  # (rows, ms), in order of rows
        self.pass_ms, self.token_ms = pass_costs
        self.lengths = lengths
        self.max_batch = max_batch
        self.shortest_first = shortest_first

    def step_s(self, rows):
        """Interpolated between the two points around `rows`, or extended
        from the last two."""
        k = 1
        while k < len(self.steps) - 1 and self.steps[k][0] < rows:
            k += 1
        (r0, t0), (r1, t1) = self.steps[k - 1], self.steps[k]
        return (t0 + (t1 - t0) * (rows - r0) / (r1 - r0)) / 1e3

    def pass_s(self, group):
        longest = max(self.lengths[s] for s in group)
        return (self.pass_ms + self.token_ms * longest * len(group)) / 1e3

    def alone_s(self, sentence):
        return self.pass_s([sentence]) + (self.lengths[sentence] + 4) * self.step_s(1)

    def take(self, waiting, rows):
        """The next group from `waiting`: a heap of (key, arrival, sentence)."""
        group, tokens = [], 0
        while waiting and rows + len(group) < self.max_batch:
            _, arrival, sentence = waiting[0]
            if group and tokens + self.lengths[sentence] > ENCODE_TOKENS:
                break
            heapq.heappop(waiting)
            group.append((arrival, sentence))
            tokens += self.lengths[sentence]
        return group

    def run(self, arrivals, closed=0, seconds=0.0):
        """Serves `arrivals` ((time, sentence), in order of time), or with
        closed > 0 keeps that many requests open for `seconds`, each of
        `arrivals`' sentences in turn, a new one as each is answered.
        Returns the answered (arrival, sentence, latency) and the time it
        ended."""
        now, i, order = 0.0, 0, 0
        waiting, batch, answered = [], [], []
        turn = [s for _, s in arrivals]
        if closed:
            arrivals = [(0.0, turn[k % len(turn)]) for k in range(closed)]
        while True:
            while i < len(arrivals) and arrivals[i][0] <= now:
                at, sentence = arrivals[i]
                key = self.lengths[sentence] if self.shortest_first else order
                heapq.heappush(waiting, (key, at, sentence))
                i, order = i + 1, order + 1
            if not batch and not waiting:
                if i == len(arrivals):
                    return answered, now
                now = arrivals[i][0]
                continue
            group = self.take(waiting, len(batch))
            if group:
                now += self.pass_s([s for _, s in group])
                batch += [[at, s, self.lengths[s] + 4] for at, s in group]
            now += self.step_s(len(batch))
            kept = []
            for row in batch:
                row[2] -= 1
                if row[2] > 0:
                    kept.append(row)
                    continue
                answered.append((row[0], row[1], now - row[0]))
                if closed and now < seconds:  # at `now`: still in order
                    arrivals.append((now, turn[len(arrivals) % len(turn)]))
            batch = kept


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def poisson(rate, seconds, count, seed):
    rng = random.Random(seed)
    t, out = 0.0, []
    while True:
        t += rng.expovariate(rate)
        if t > seconds:
            return out
        out.append((t, rng.randrange(count)))


def model(steps, pass_costs, lengths, shorts, max_batch, shortest_first, seconds, seed):
    server = Server(steps, pass_costs, lengths, max_batch, shortest_first)
    alone = [1e3 * server.alone_s(s) for s in sorted(shorts)]
    everyone = [(0.0, s) for s in range(len(lengths))]
    answered, ended = server.run(everyone, closed=64, seconds=seconds)
    saturation = len(answered) / ended
    result = {"steps_ms": steps, "pass_ms": pass_costs[0], "token_ms": pass_costs[1],
              "max_batch": max_batch, "shortest_first": shortest_first,
              "alone_short_p50_ms": percentile(alone, 50), "saturation_per_s": saturation,
              "loads": []}
    for load in (0.5, 0.8):
        answered, _ = server.run(poisson(load * saturation, seconds, len(lengths), seed))
        short = [1e3 * latency for _, s, latency in answered if s in shorts]
        result["loads"].append({"load": load, "short_p50_ms": percentile(short, 50),
                                "short_p99_ms": percentile(short, 99)})
    result["ratio"] = result["loads"][0]["short_p99_ms"] / result["alone_short_p50_ms"]
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ted", default="build/ted")
    parser.add_argument("--model", required=True,
                        help="its tokenizer, and its costs where not given")
    parser.add_argument("--texts", required=True, help="the sentences, a line each")
    parser.add_argument("--threads", type=int, default=2, help="for ted bench")
    parser.add_argument("--steps", help="ROWS:MS,... a step's cost (default: ted bench's)")
    parser.add_argument("--pass", dest="pass_costs",
                        help="PASS,TOKEN: an encoder pass's cost in ms (default: ted bench's)")
    parser.add_argument("--max-batch", type=int, default=32)
    parser.add_argument("--shortest-first", action="store_true",
                        help="encode the shortest waiting sentence first, not the first come")
    parser.add_argument("--seconds", type=float, default=400.0, help="modelled seconds a level")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args()
    if args.max_batch < 1 or args.seconds <= 0:
        raise SystemExit("--max-batch and --seconds must be positive")
    lines, lengths = lengths_of(args.ted, args.model, args.texts)
    steps = parse_steps(args.steps) if args.steps else \
        measured_steps(args.ted, args.model, args.threads, round(sum(lengths) / len(lengths)))
    pass_costs = parse_pass(args.pass_costs) if args.pass_costs else \
        measured_pass(args.ted, args.model, args.threads)
    result = model(steps, pass_costs, lengths, short_set(lines), args.max_batch,
                   args.shortest_first, args.seconds, args.seed)
    if args.json:
        json.dump(result, sys.stdout, indent=1)
        print()
        return
    print("a step: " + ", ".join(f"{ms:.3f} ms at {rows} rows" for rows, ms in steps) +
          f"; an encoder pass: {pass_costs[0]:.3f} + {pass_costs[1]:.4f} ms a source token")
    print(f"--max-batch {args.max_batch}, {'shortest' if args.shortest_first else 'first'} "
          f"waiting sentence first; saturation {result['saturation_per_s']:.1f} sentences/s")
    print(f"short alone p50 {result['alone_short_p50_ms']:.1f} ms")
    for level in result["loads"]:
        print(f"at {level['load']:.0%} load: short p50 {level['short_p50_ms']:.1f} ms, "
              f"p99 {level['short_p99_ms']:.1f} ms")
    print(f"short p99 at 50% load / alone p50: {result['ratio']:.2f}x")


if __name__ == "__main__":
    main()
