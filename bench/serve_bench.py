#!/usr/bin/python3
"""ted serve under open-loop load (make bench-serve).

    /usr/bin/python3 bench/serve_bench.py --ted build/ted --model models/toy-en-fr
    /usr/bin/python3 bench/serve_bench.py --ted build/ted --model build/bench/marian \
        --random-weights --texts models/toy-en-fr/test.en --threads 2 --seconds 30

Starts `ted serve` on a free loopback port, then:

1. Unloaded latency: short and long sentences sent one at a time (the
   shortest and the longest quarter of the test sentences, by words).
2. Saturation throughput: 64 requests kept open at once (each one test
   sentence; a client sends a new one as soon as one is answered) for
   --seconds: the sentences per second the server can answer.
3. Open loop at 50% and 80% of that throughput: requests of one test
   sentence arrive at random (a Poisson process: exponential gaps) at that
   rate, whether or not the earlier ones are answered, for --warmup then
   --seconds seconds. Each latency runs from the request's scheduled
   arrival to its answer, so a late sender counts against the latency
   instead of hiding it (no coordinated omission). Reported: p50 and p99 of
   the short and the long sentences and of all, and the throughput achieved.

For the saturation and each load, the server's own GET /metrics, read
before and after, says where its time went: the share of the wall time
spent in steps and in encoder passes (on the batching thread, or the
encoding thread beside it where the process has a CPU beyond --threads:
then the two shares may add up past 100%), the rows a step fed on average
and a step's mean time.

The target: at 50% load, a short sentence's p99 at most 3 times its
unloaded p50. A closed loop (each client waiting for its answer before the
next request) cannot show it: 32 clients keep 32 requests in the server, so
the mean latency is 32 over the throughput (Little's law), whatever the
server does. An open loop below saturation measures what a user sees: the
queueing that a load of that rate makes.

The load generator is bench/openloop.c (built by make bench-serve, or here
with cc when it is missing): one thread, epoll, raw HTTP/1.1 on kept-alive
connections (a new connection when none is free), a timerfd for the
arrivals. It takes a few percent of a core at thousands of requests a
second, where a Python event loop took most of a core of the two the
server needed. It times all three parts: the unloaded latency (one request
in flight), the saturation (64) and the open loops. Prints a Markdown table
with the CPU; --json FILE writes the numbers. Standard library only.

--random-weights is for the Transformer-base checkpoint of make bench
(bench/make_marian_model.py, and its int8 copy from ted quantize), whose
random weights never choose EOS: the server gets a copy of the model
directory whose decoding section is greedy and ends a translation after its
source tokens + 4 (the tutorial's rule), so that a long sentence decodes for
longer than a short one.
"""
import argparse
import json
import os
import re
import subprocess
import shutil
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from run import cpu_info  # noqa: E402  (bench/run.py, make bench)


class Server:
    def __init__(self, ted, model, threads, max_batch):
        self.proc = subprocess.Popen(
            [ted, "serve", "-m", model, "--port", "0", "--threads", str(threads),
             "--max-batch", str(max_batch), "--max-connections-per-client", "4096"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        first = self.proc.stderr.readline().decode()
        if "listening on http://" not in first:
            self.proc.kill()
            raise SystemExit(f"ted serve did not start: {first}")
        self.port = int(first.rsplit(":", 1)[1])
        # the request log goes on; read it so the pipe never fills
        threading.Thread(target=lambda: self.proc.stderr.read(), daemon=True).start()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(60)


def greedy_copy(model, out):
    """`out`: `model` (links to its files) with its decoding section greedy
    and a translation's length bound at its source tokens + 4."""
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(model):
        if name == "config.yaml":
            continue
        link = os.path.join(out, name)
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.abspath(os.path.join(model, name)), link)
    with open(os.path.join(model, "config.yaml"), encoding="utf-8") as f:
        config = f.read()
    head, decoding = config.split("\ndecoding:\n", 1)
    decoding = re.sub(r"(?m)^  (#|beam_size:|max_length_offset:|max_length:).*\n", "", decoding)
    config = (head + "\ndecoding:\n  beam_size: 1\n  max_length: 0\n  max_length_offset: 4\n"
              + decoding)
    with open(os.path.join(out, "config.yaml"), "w", encoding="utf-8") as f:
        f.write(config)
    return out


def percentile(values, p):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def classes(texts):
    """The short and the long sentences: the shortest and the longest
    quarter of the texts by words."""
    ordered = sorted(texts, key=lambda t: len(t.split()))
    quarter = max(1, len(ordered) // 4)
    return ordered[:quarter], ordered[-quarter:]


def generate(args, port, load, bodies, warmup, seconds):
    """Runs bench/openloop.c: `load` is "c1", "c64" (requests kept in
    flight) or a rate a second (Poisson arrivals); `bodies` a list of
    (class, text). Returns the latencies (s) by class, the requests refused
    (429: the queue full) and the answers per second over the measured
    seconds."""
    path = os.path.join(args.work, f"bodies-{len(bodies)}-{hash(tuple(bodies)) & 0xffff}.tsv")
    with open(path, "w", encoding="utf-8") as f:
        for kind, text in bodies:
            f.write(f"{kind}\t{json.dumps({'text': [text]})}\n")
    out = subprocess.run([args.openloop, str(port), str(load), str(warmup), str(seconds),
                          str(args.seed), path], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"openloop failed: {out.stderr.strip()}")
    latencies = {"short": [], "long": [], "all": []}
    refused, answered = 0, 0
    for line in out.stdout.splitlines():
        fields = line.split()
        if fields[0] == "answered":
            answered = int(fields[1])
            continue
        status, latency = int(fields[1]), int(fields[2]) * 1e-6
        if status == 429:
            refused += 1
            continue
        if status != 200:
            raise SystemExit(f"ted serve answered {status}")
        latencies["all"].append(latency)
        if fields[0] in latencies:
            latencies[fields[0]].append(latency)
    return latencies, refused, answered / seconds


def build_openloop(path):
    here = os.path.dirname(os.path.abspath(__file__))
    subprocess.run(["cc", "-O2", "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-Wall", "-Wextra",
                    os.path.join(here, "openloop.c"), "-lm", "-o", path], check=True)


def summary(latencies):
    return {name: {"p50_ms": 1e3 * percentile(v, 50), "p99_ms": 1e3 * percentile(v, 99),
                   "requests": len(v)} for name, v in latencies.items()}


LOOP_COUNTERS = {"ted_step_seconds_count": "steps", "ted_step_seconds_sum": "step_s",
                 "ted_step_rows_sum": "rows", "ted_encode_seconds_count": "passes",
                 "ted_encode_seconds_sum": "encode_s"}


def loop_counters(port):
    """The decoding loop's counters of the one model served (GET
    /metrics), and when they were read."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60) as r:
        text = r.read().decode("utf-8")
    counters = {"at": time.monotonic()}
    for line in text.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in LOOP_COUNTERS:
            counters[LOOP_COUNTERS[name]] = float(line.rsplit(" ", 1)[1])
    return counters


def server_side(before, after):
    """Where the decoding thread's time went between two readings."""
    d = {k: after[k] - before[k] for k in before}
    steps = max(1.0, d["steps"])
    return {"steps_share": d["step_s"] / d["at"], "encode_share": d["encode_s"] / d["at"],
            "rows_per_step": d["rows"] / steps, "step_ms": 1e3 * d["step_s"] / steps}


def timed_level(port, args, load, bodies, warmup):
    """generate() at one level, with the server's side of it."""
    before = loop_counters(port)
    out = generate(args, port, load, bodies, warmup, args.seconds)
    return out, server_side(before, loop_counters(port))


def measure(port, texts, args):
    short, long = classes(texts)
    short_set, long_set = set(short), set(long)
    bodies = [("short" if t in short_set else "long" if t in long_set else "other", t)
              for t in texts]
    alone = {"short": generate(args, port, "c1", [("short", t) for t in short], 1,
                               args.alone_seconds)[0]["short"],
             "long": generate(args, port, "c1", [("long", t) for t in long], 1,
                              args.alone_seconds)[0]["long"]}
    saturation, server = timed_level(port, args, "c64", bodies, 1)
    results = {"unloaded": summary(alone), "saturation_per_s": saturation[2],
               "saturation_server": server, "loads": []}
    for load in (0.5, 0.8):
        rate = load * results["saturation_per_s"]
        (latencies, refused, achieved), server = timed_level(port, args, f"{rate:.3f}", bodies,
                                                             args.warmup)
        results["loads"].append({"load": load, "rate_per_s": rate, "achieved_per_s": achieved,
                                 "refused": refused, "server": server, **summary(latencies)})
    return results


def rate(per_second):
    return f"{per_second:.0f}" if per_second >= 100 else f"{per_second:.1f}"


def table(results):
    alone = results["unloaded"]
    rows = ["| load | arrivals/s | answered/s | refused | short p50 / p99 ms | "
            "long p50 / p99 ms | all p50 / p99 ms |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
            f"| unloaded | | | | {alone['short']['p50_ms']:.1f} / "
            f"{alone['short']['p99_ms']:.1f} | {alone['long']['p50_ms']:.1f} / "
            f"{alone['long']['p99_ms']:.1f} | |"]
    for r in results["loads"]:
        cells = " | ".join(f"{r[c]['p50_ms']:.1f} / {r[c]['p99_ms']:.1f}"
                           for c in ("short", "long", "all"))
        rows.append(f"| {r['load']:.0%} | {rate(r['rate_per_s'])} | "
                    f"{rate(r['achieved_per_s'])} | {r['refused']} | {cells} |")
    half = results["loads"][0]
    ratio = half["short"]["p99_ms"] / alone["short"]["p50_ms"]
    server = ["| level | steps, % of the time | encoder passes, % | rows a step | ms a step |",
              "| --- | ---: | ---: | ---: | ---: |"]
    for name, s in [("saturation", results["saturation_server"])] + \
            [(f"{r['load']:.0%}", r["server"]) for r in results["loads"]]:
        server.append(f"| {name} | {100 * s['steps_share']:.0f} | {100 * s['encode_share']:.0f}"
                      f" | {s['rows_per_step']:.1f} | {s['step_ms']:.2f} |")
    return "\n".join(rows + [""] + server + [
        "",
        f"saturation: {rate(results['saturation_per_s'])} sentences/s (64 requests open)",
        f"at 50% load the short sentences' p99 is {ratio:.1f}x their unloaded p50 "
        f"(target: 3x or less: {'met' if ratio <= 3 else 'missed'}); "
        f"{half['short']['requests']} short requests measured",
        f"model: {results['model']}; CPU: {results['cpu']} ({os.cpu_count()} logical CPUs), "
        f"--threads {results['threads']}; load average before: {results['load_average']}"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ted", default="build/ted")
    parser.add_argument("--model", default="models/toy-en-fr")
    parser.add_argument("--texts", help="the sentences, a line each (default: MODEL/test.en)")
    parser.add_argument("--random-weights", action="store_true",
                        help="greedy, at most source tokens + 4 target tokens (above)")
    parser.add_argument("--alone-seconds", type=float, default=5.0,
                        help="seconds of short, then of long sentences sent one at a time")
    parser.add_argument("--openloop", help="the load generator (default: bench-openloop "
                        "beside --ted, built from bench/openloop.c when missing)")
    parser.add_argument("--seconds", type=float, default=10.0,
                        help="measured, at saturation and at each load")
    parser.add_argument("--warmup", type=float, default=2.0,
                        help="seconds of each load before the measured ones")
    parser.add_argument("--threads", type=int, default=1, help="ted's matrix-product threads")
    parser.add_argument("--max-batch", type=int, default=32)
    parser.add_argument("--seed", type=int, default=1, help="of the arrivals")
    parser.add_argument("--json", help="write the numbers to this file")
    args = parser.parse_args()
    with open(args.texts or os.path.join(args.model, "test.en"), encoding="utf-8") as f:
        texts = [line.strip() for line in f if line.strip()]
    args.openloop = args.openloop or os.path.join(os.path.dirname(os.path.abspath(args.ted)),
                                                  "bench-openloop")
    if not os.path.exists(args.openloop):
        build_openloop(args.openloop)
    args.work = tempfile.mkdtemp(prefix="serve-bench-")
    model = args.model
    if args.random_weights:
        model = greedy_copy(model, model.rstrip("/") + "-greedy")
    load_average = " ".join(f"{v:.2f}" for v in os.getloadavg())
    server = Server(args.ted, model, args.threads, args.max_batch)
    try:
        results = measure(server.port, texts, args)
    finally:
        server.stop()
        shutil.rmtree(args.work, ignore_errors=True)
    results.update({"model": model, "cpu": cpu_info()["cpu"], "threads": args.threads,
                    "load_average": load_average})
    print(table(results), flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
