#!/usr/bin/python3
"""ted serve under load, next to sequential ted translate runs (make bench-serve).

    /usr/bin/python3 bench/serve_bench.py --ted build/ted --model models/toy-en-fr
    /usr/bin/python3 bench/serve_bench.py --ted build/ted --model build/bench/marian \
        --random-weights --texts models/toy-en-fr/test.en --threads 2 --seconds 30 --warmup 3 \
        --alone 50 --sentences 32

Starts `ted serve` on a free loopback port, then for 1, 8 and 32 concurrent
clients sends greedy requests of one test sentence each (every client waits
for its answer before sending the next) for --warmup and then --seconds
seconds, and reports sentences/s and the p50/p99 latency of the requests sent
in the latter. At 32 clients one client
sends the same short sentence over and over: its p99 is set against that
sentence's latency alone. That probe is a process of its own, so that its
latencies are the server's and not the wait for the interpreter lock among
the other clients' threads. Next to it: `ted translate` run once per sentence
(one process each, as a script would without a server) and once over all of
them (one process, batches of 32). Prints a Markdown table with the CPU, and
writes the numbers as JSON with --json FILE. Standard library only.

--random-weights is for the Transformer-base checkpoint of make bench
(bench/make_marian_model.py), whose random weights never choose EOS: the
server and ted translate get a copy of the model directory whose decoding
section is greedy and ends a translation after its source tokens + 4 (the
tutorial's rule), so that a long sentence decodes for longer than a short one.
"""
import argparse
import http.client
import json
import multiprocessing
import os
import re
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from run import cpu_info  # noqa: E402  (bench/run.py, make bench)

SHORT = "the dog sleeps ."


class Server:
    def __init__(self, ted, model, threads, max_batch):
        self.proc = subprocess.Popen(
            [ted, "serve", "-m", model, "--port", "0", "--threads", str(threads),
             "--max-batch", str(max_batch)],
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
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def client(port, texts, start, measured, until, latencies):
    """From `start` until `until`, sends texts[0], texts[1], ... one a request
    and waits for each answer; appends the latency of each request sent
    from `measured` on."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    time.sleep(max(0.0, start - time.monotonic()))
    n = 0
    while time.monotonic() < until:
        body = json.dumps({"text": [texts[n % len(texts)]]})
        begin = time.monotonic()
        connection.request("POST", "/v1/translate", body=body,
                           headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            raise SystemExit(f"ted serve answered {response.status}")
        if begin >= measured:
            latencies.append(time.monotonic() - begin)
        n += 1
    connection.close()


def probe(port, start, measured, until, answer):
    """The probe process: client() with SHORT; sends its latencies back."""
    latencies = []
    client(port, [SHORT], start, measured, until, latencies)
    answer.send(latencies)
    answer.close()


def load(port, texts, clients, seconds, warmup, with_probe):
    """sentences/s and latencies with `clients` clients, of the requests
    sent after the first `warmup` seconds (all clients start at once: the
    first requests meet a burst no later one does); the last client is the
    probe, in a process of its own, when `with_probe`."""
    latencies, probe_latencies = [], []
    start = time.monotonic() + 1.0  # time for the probe's interpreter to start
    measured = start + warmup
    until = measured + seconds
    if with_probe:
        receiver, sender = multiprocessing.Pipe(duplex=False)
        prober = multiprocessing.get_context("spawn").Process(
            target=probe, args=(port, start, measured, until, sender))
        prober.start()
    threads = [threading.Thread(target=client,
                                args=(port, texts[k * 37 % len(texts):] +
                                      texts[:k * 37 % len(texts)], start, measured, until,
                                      latencies))
               for k in range(clients - 1 if with_probe else clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if with_probe:
        probe_latencies = receiver.recv()
        prober.join()
    wall = time.monotonic() - measured
    done = len(latencies) + len(probe_latencies)
    return {"clients": clients, "sentences": done, "sentences_per_s": done / wall,
            "short_requests": len(probe_latencies),
            "p50_ms": 1e3 * percentile(latencies or probe_latencies, 50),
            "p99_ms": 1e3 * percentile(latencies or probe_latencies, 99),
            "short_p50_ms": 1e3 * percentile(probe_latencies, 50) if probe_latencies else None,
            "short_p99_ms": 1e3 * percentile(probe_latencies, 99) if probe_latencies else None}


def short_alone(port, repeats):
    latencies = []
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    for _ in range(repeats + 1):  # the first warms up
        start = time.monotonic()
        connection.request("POST", "/v1/translate", body=json.dumps({"text": [SHORT]}),
                           headers={"Content-Type": "application/json"})
        connection.getresponse().read()
        latencies.append(time.monotonic() - start)
    connection.close()
    latencies = latencies[1:]
    return {"p50_ms": 1e3 * statistics.median(latencies),
            "p99_ms": 1e3 * percentile(latencies, 99)}


def translate_runs(ted, model, texts, threads):
    start = time.monotonic()
    for text in texts:
        subprocess.run([ted, "translate", "-m", model, "--threads", str(threads), text],
                       capture_output=True, check=True)
    one_each = len(texts) / (time.monotonic() - start)
    start = time.monotonic()
    subprocess.run([ted, "translate", "-m", model, "--threads", str(threads)],
                   input="\n".join(texts) + "\n", capture_output=True, text=True, check=True)
    all_at_once = len(texts) / (time.monotonic() - start)
    return {"process_per_sentence": one_each, "one_process_batches_of_32": all_at_once}


def rate(per_second):
    return f"{per_second:.0f}" if per_second >= 100 else f"{per_second:.1f}"


def table(results):
    rows = ["| clients | sentences/s | p50 ms | p99 ms | short sentence p50 / p99 ms |",
            "| ---: | ---: | ---: | ---: | ---: |"]
    for r in results["serve"]:
        short = (f"{r['short_p50_ms']:.1f} / {r['short_p99_ms']:.1f}"
                 if r["short_p99_ms"] is not None else "")
        rows.append(f"| {r['clients']} | {rate(r['sentences_per_s'])} | {r['p50_ms']:.1f} | "
                    f"{r['p99_ms']:.1f} | {short} |")
    alone, runs, base = results["short_alone"], results["translate"], results["serve"][0]
    top = results["serve"][-1]
    return "\n".join(rows + [
        "",
        f"short sentence alone: p50 {alone['p50_ms']:.1f} ms, p99 {alone['p99_ms']:.1f} ms",
        f"{top['clients']} clients: {top['sentences_per_s'] / base['sentences_per_s']:.1f}x "
        f"the sentences/s of 1 client; short-sentence p99 "
        f"{top['short_p99_ms'] / alone['p50_ms']:.1f}x its latency alone "
        f"({top['short_requests']} requests)",
        f"ted translate, one process per sentence: {rate(runs['process_per_sentence'])} "
        f"sentences/s; one process for all ({results['sentences']} sentences, batches of "
        f"32): {rate(runs['one_process_batches_of_32'])} sentences/s",
        f"model: {results['model']}; CPU: {results['cpu']} ({os.cpu_count()} logical CPUs), "
        f"--threads {results['threads']}"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ted", default="build/ted")
    parser.add_argument("--model", default="models/toy-en-fr")
    parser.add_argument("--texts", help="the sentences, a line each (default: MODEL/test.en)")
    parser.add_argument("--random-weights", action="store_true",
                        help="greedy, at most source tokens + 4 target tokens (above)")
    parser.add_argument("--alone", type=int, default=200,
                        help="requests timing the short sentence alone")
    parser.add_argument("--seconds", type=float, default=10.0,
                        help="measured, per concurrency level")
    parser.add_argument("--warmup", type=float, default=1.0,
                        help="seconds of each level before the measured ones")
    parser.add_argument("--threads", type=int, default=1, help="ted's matrix-product threads")
    parser.add_argument("--max-batch", type=int, default=32)
    parser.add_argument("--sentences", type=int, default=200,
                        help="test sentences for the ted translate runs")
    parser.add_argument("--json", help="write the numbers to this file")
    args = parser.parse_args()
    with open(args.texts or os.path.join(args.model, "test.en"), encoding="utf-8") as f:
        texts = [line.strip() for line in f if line.strip()]
    model = args.model
    if args.random_weights:
        model = greedy_copy(model, model.rstrip("/") + "-greedy")
    server = Server(args.ted, model, args.threads, args.max_batch)
    try:
        alone = short_alone(server.port, args.alone)
        serve = [load(server.port, texts, c, args.seconds, args.warmup, with_probe=c > 1)
                 for c in (1, 8, 32)]
    finally:
        server.stop()
    results = {"model": model, "cpu": cpu_info()["cpu"], "threads": args.threads,
               "short_alone": alone, "serve": serve, "sentences": args.sentences,
               "translate": translate_runs(args.ted, model, texts[:args.sentences],
                                           args.threads)}
    print(table(results))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
