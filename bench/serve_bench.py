#!/usr/bin/python3
"""ted serve under load, next to sequential ted translate runs (make bench-serve).

    /usr/bin/python3 bench/serve_bench.py --ted build/ted --model models/toy-en-fr

Starts `ted serve` on a free loopback port, then for 1, 8 and 32 concurrent
clients sends greedy requests of one test sentence each (every client waits
for its answer before sending the next) for --seconds, and reports
sentences/s and the p50/p99 latency of a request. At 32 clients one client
sends the same short sentence over and over: its p99 is set against that
sentence's latency alone. That probe is a process of its own, so that its
latencies are the server's and not the wait for the interpreter lock among
the other clients' threads. Next to it: `ted translate` run once per sentence
(one process each, as a script would without a server) and once over all of
them (one process, batches of 32). Prints a Markdown table with the CPU, and
writes the numbers as JSON with --json FILE. Standard library only.
"""
import argparse
import http.client
import json
import multiprocessing
import os
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


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def client(port, texts, start, until, latencies):
    """From `start` until `until`, sends texts[0], texts[1], ... one a request
    and waits for each answer; appends each request's latency."""
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
        latencies.append(time.monotonic() - begin)
        n += 1
    connection.close()


def probe(port, start, until, answer):
    """The probe process: client() with SHORT; sends its latencies back."""
    latencies = []
    client(port, [SHORT], start, until, latencies)
    answer.send(latencies)
    answer.close()


def load(port, texts, clients, seconds, with_probe):
    """sentences/s and latencies with `clients` clients; the last is the
    probe, in a process of its own, when `with_probe`."""
    latencies, probe_latencies = [], []
    start = time.monotonic() + 1.0  # time for the probe's interpreter to start
    until = start + seconds
    if with_probe:
        receiver, sender = multiprocessing.Pipe(duplex=False)
        prober = multiprocessing.get_context("spawn").Process(
            target=probe, args=(port, start, until, sender))
        prober.start()
    threads = [threading.Thread(target=client,
                                args=(port, texts[k * 37 % len(texts):] +
                                      texts[:k * 37 % len(texts)], start, until, latencies))
               for k in range(clients - 1 if with_probe else clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if with_probe:
        probe_latencies = receiver.recv()
        prober.join()
    wall = time.monotonic() - start
    done = len(latencies) + len(probe_latencies)
    return {"clients": clients, "sentences": done, "sentences_per_s": done / wall,
            "p50_ms": 1e3 * percentile(latencies or probe_latencies, 50),
            "p99_ms": 1e3 * percentile(latencies or probe_latencies, 99),
            "short_p50_ms": 1e3 * percentile(probe_latencies, 50) if probe_latencies else None,
            "short_p99_ms": 1e3 * percentile(probe_latencies, 99) if probe_latencies else None}


def short_alone(port, repeats):
    latencies = []
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    for _ in range(repeats + 1):  # the first warms up
        start = time.monotonic()
        connection.request("POST", "/v1/translate", body=json.dumps({"text": [SHORT]}))
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


def table(results):
    rows = ["| clients | sentences/s | p50 ms | p99 ms | short sentence p50 / p99 ms |",
            "| ---: | ---: | ---: | ---: | ---: |"]
    for r in results["serve"]:
        short = (f"{r['short_p50_ms']:.1f} / {r['short_p99_ms']:.1f}"
                 if r["short_p99_ms"] is not None else "")
        rows.append(f"| {r['clients']} | {r['sentences_per_s']:.0f} | {r['p50_ms']:.1f} | "
                    f"{r['p99_ms']:.1f} | {short} |")
    alone, runs, base = results["short_alone"], results["translate"], results["serve"][0]
    top = results["serve"][-1]
    return "\n".join(rows + [
        "",
        f"short sentence alone: p50 {alone['p50_ms']:.1f} ms, p99 {alone['p99_ms']:.1f} ms",
        f"{top['clients']} clients: {top['sentences_per_s'] / base['sentences_per_s']:.1f}x "
        f"the sentences/s of 1 client; short-sentence p99 "
        f"{top['short_p99_ms'] / alone['p50_ms']:.1f}x its latency alone",
        f"ted translate, one process per sentence: {runs['process_per_sentence']:.0f} "
        f"sentences/s; one process for all ({results['sentences']} sentences, batches of "
        f"32): {runs['one_process_batches_of_32']:.0f} sentences/s",
        f"CPU: {results['cpu']} ({os.cpu_count()} logical CPUs), --threads "
        f"{results['threads']}"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ted", default="build/ted")
    parser.add_argument("--model", default="models/toy-en-fr")
    parser.add_argument("--seconds", type=float, default=10.0, help="per concurrency level")
    parser.add_argument("--threads", type=int, default=1, help="ted's matrix-product threads")
    parser.add_argument("--max-batch", type=int, default=32)
    parser.add_argument("--sentences", type=int, default=200,
                        help="test sentences for the ted translate runs")
    parser.add_argument("--json", help="write the numbers to this file")
    args = parser.parse_args()
    with open(os.path.join(args.model, "test.en"), encoding="utf-8") as f:
        texts = [line.strip() for line in f if line.strip()]
    server = Server(args.ted, args.model, args.threads, args.max_batch)
    try:
        alone = short_alone(server.port, 200)
        serve = [load(server.port, texts, c, args.seconds, with_probe=c > 1)
                 for c in (1, 8, 32)]
    finally:
        server.stop()
    results = {"cpu": cpu_info()["cpu"], "threads": args.threads, "short_alone": alone,
               "serve": serve, "sentences": args.sentences,
               "translate": translate_runs(args.ted, args.model, texts[:args.sentences],
                                           args.threads)}
    print(table(results))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
