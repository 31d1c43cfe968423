#!/usr/bin/python3
"""make bench: ted against PyTorch on the same Transformer-base weights.

    /usr/bin/python3 bench/run.py [--quick] [--repeat R] [--torch-repeat R]
        [--tutorial-repeat-large R] [--torch-budget S] [--batch 1,16]
        [--threads 1,2] [--toy DIR] [--no-build]

Builds ted (make) and bench-machine (bench/machine.c), makes the model (bench/make_base_model.py),
then for every batch and thread count (source length 32, 64 new tokens):
`ted bench`, the two PyTorch loops (bench/torch_bench.py: KV-cached and the
tutorial's full-prefix loop), and bench-machine (sgemm and memory bandwidth).
When the toy model (models/toy-en-fr) is there, also times `ted translate`
over its test.en with --batch-size 1 and 32.

Prints a Markdown table; writes build/bench/results.json (every raw figure)
and build/bench/table.md. Exits 1 when any measurement failed (the table
says which). --quick: one timed run of everything, for checking the harness.
"""
import argparse
import json
import os
import platform
import shlex
import statistics
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import make_base_model  # noqa: E402

PYTHON = sys.executable or "/usr/bin/python3"
BUILD = os.environ.get("BUILD", "build")
SOURCE_LEN = 32
NEW_TOKENS = 64
LARGE_BATCH = 16  # from this batch on, the tutorial loop is timed fewer times


def log(message):
    print(f"bench: {message}", file=sys.stderr, flush=True)


def run(cmd, **kwargs):
    """subprocess.run with text output; logs the command."""
    log("$ " + " ".join(shlex.quote(str(c)) for c in cmd))
    return subprocess.run([str(c) for c in cmd], cwd=ROOT, text=True, **kwargs)


def int_list(text):
    return [int(x) for x in text.split(",") if x]


# --------------------------------------------------------------------------
# Measurements
# --------------------------------------------------------------------------

def ted_bench(ted, model_dir, batch, threads, repeat):
    p = run([ted, "bench", "-m", model_dir, "--batch", batch, "--source-len", SOURCE_LEN,
             "--new-tokens", NEW_TOKENS, "--threads", threads, "--repeat", repeat],
            capture_output=True)
    if p.returncode != 0:
        return {"error": (p.stderr.strip() or f"exit status {p.returncode}").splitlines()[-1]}
    try:
        return json.loads(p.stdout)
    except ValueError:
        return {"error": f"unreadable output: {p.stdout.strip()[:200]!r}"}


def torch_bench(state_dict, batches, threads, repeat, tutorial_repeat, budget):
    cmd = [PYTHON, os.path.join(HERE, "torch_bench.py"), "--state-dict", state_dict,
           "--batch", ",".join(map(str, batches)), "--threads", ",".join(map(str, threads)),
           "--source-len", SOURCE_LEN, "--new-tokens", NEW_TOKENS, "--repeat", repeat,
           "--tutorial-repeat", ",".join(f"{b}:{tutorial_repeat(b)}" for b in batches),
           "--budget", budget]
    # libgomp's default spin-waiting keeps PyTorch's idle OpenMP threads on the
    # cores OpenBLAS's threads need: several times slower with 2 threads on 2 cores
    env = dict(os.environ)
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    log(f"OMP_WAIT_POLICY={env['OMP_WAIT_POLICY']}")
    p = run(cmd, stdout=subprocess.PIPE, env=env)  # its progress goes straight to stderr
    if p.returncode != 0:
        return {"error": f"bench/torch_bench.py failed (exit status {p.returncode}); "
                         "see its message above"}
    try:
        return json.loads(p.stdout)
    except ValueError:
        return {"error": f"unreadable output: {p.stdout.strip()[:200]!r}"}


def machine(binary, threads):
    p = run([binary] + threads, capture_output=True)
    if p.returncode != 0:
        return {"error": (p.stderr.strip() or f"exit status {p.returncode}").splitlines()[-1]}
    return json.loads(p.stdout)


def toy_translate(ted, toy_dir, batch_sizes, repeat):
    """Seconds of `ted translate` over test.en, whole command, median of runs."""
    test = os.path.join(toy_dir, "test.en")
    with open(test, encoding="utf-8") as f:
        sentences = sum(1 for line in f if line.strip())
    out = {"model": toy_dir, "sentences": sentences, "runs": {}}
    for size in batch_sizes:
        cmd = [ted, "translate", "-m", toy_dir, "--batch-size", str(size)]
        log("$ " + " ".join(cmd) + " < " + test)
        times = []
        for _ in range(repeat):
            with open(test, "rb") as stdin:
                start = time.perf_counter()
                p = subprocess.run(cmd, cwd=ROOT, stdin=stdin, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE)
                elapsed = time.perf_counter() - start
            if p.returncode != 0:
                message = p.stderr.decode(errors="replace").strip().splitlines()
                out["runs"][size] = {"error": message[-1] if message else
                                     f"exit status {p.returncode}"}
                break
            times.append(elapsed)
            if elapsed > 30:  # slow: one run is enough
                break
        else:
            seconds = statistics.median(times)
            out["runs"][size] = {"seconds": round(seconds, 3),
                                 "sentences_per_s": round(sentences / seconds, 1),
                                 "repeat": len(times)}
    return out


# --------------------------------------------------------------------------
# Bytes a decoder step reads
# --------------------------------------------------------------------------

def tensor_bytes(path):
    """{name: bytes} of a safetensors file, from its header."""
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
    header.pop("__metadata__", None)
    return {name: t["data_offsets"][1] - t["data_offsets"][0] for name, t in header.items()}


def step_bytes(weights, d_model):
    """Weight bytes one decoder step reads: every decoder layer tensor except
    the key/value rows of the encoder-decoder attention's in-projection (two
    thirds of it, applied to the encoder output once per encode), the final
    LayerNorm and the generator. The target embedding and positional rows
    (one row of d_model floats per sentence) are left out as negligible."""
    layers = final = 0
    for name, size in weights.items():
        if name.startswith("transformer.decoder.layers."):
            if ".multihead_attn.in_proj_" in name:
                size //= 3  # the query third only
            layers += size
        elif name.startswith("transformer.decoder.norm."):
            final += size
    generator = weights["generator.weight"] + weights["generator.bias"]
    return {"decoder_layers": layers, "final_norm": final, "generator": generator,
            "total": layers + final + generator,
            "embedding_row_per_sentence": 4 * d_model}


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------

def fmt(value, digits=1):
    return "—" if value is None else f"{value:,.{digits}f}"


def ratio(a, b):
    return "—" if a is None or not b else f"{a / b:.2f}×"


def get(d, *keys):
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


LOADED = " (**measured under load: the figures are noisy**)"


def report(r):
    lines = []
    add = lines.append
    cfg = r["settings"]
    add("## ted vs PyTorch — Transformer-base, greedy decoding")
    add("")
    add(f"Model: {r['model']['description']}, random weights (seed {r['model']['seed']}). "
        f"Source {SOURCE_LEN} tokens, exactly {NEW_TOKENS} new tokens (EOS ignored). "
        f"Machine: {r['host']['cpu']}, {r['host']['cores']} cores; load average "
        f"{r['host']['load_before'][0]:.2f} before, {r['host']['load_after'][0]:.2f} after "
        f"the runs{LOADED if r['host']['loaded'] else ''}. "
        f"PyTorch {get(r, 'torch', 'torch_version') or '?'}; BLAS: "
        f"{get(r, 'torch', 'openblas') or get(r, 'machine', 'openblas') or '?'}.")
    add("")
    add("| batch | threads | ted tokens/s | ted ms/token | ted encode ms "
        "| PyTorch cached tokens/s | PyTorch tutorial-loop tokens/s "
        "| ted / PyTorch cached | ted / tutorial loop |")
    add("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    torch_rows = {(e["batch"], e["threads"]): e for e in get(r, "torch", "results") or []}
    for row in r["ted"]:
        b, t = row["batch"], row["threads"]
        tp = torch_rows.get((b, t), {})
        ted_tps = row.get("tokens_per_s")
        cached = get(tp, "cached", "tokens_per_s")
        tutorial = get(tp, "tutorial", "tokens_per_s")
        if "error" in row:
            ted_cells = ["**ted failed**", "—", "—"]
        else:
            ted_cells = [fmt(ted_tps), fmt(row["per_token_ms"], 2), fmt(row["encode_ms"])]
        add(f"| {b} | {t} | " + " | ".join(ted_cells) +
            f" | {fmt(cached)} | {fmt(tutorial)} | {ratio(ted_tps, cached)} "
            f"| {ratio(ted_tps, tutorial)} |")
    add("")
    runs = []
    for row in r["ted"]:
        tp = torch_rows.get((row["batch"], row["threads"]), {})
        counts = [row.get("repeat"), get(tp, "cached", "repeat"), get(tp, "tutorial", "repeat")]
        runs.append(f"batch {row['batch']} × {row['threads']} thread(s) "
                    + "/".join("—" if n is None else str(n) for n in counts))
    add("Medians of timed runs after one warm-up; timed runs (ted / PyTorch cached / tutorial "
        "loop): " + ", ".join(runs) + ". The tutorial loop is timed "
        f"{cfg['tutorial_repeat_large']} "
        f"time(s) from batch {LARGE_BATCH} on, as it is slow, and its warm-up decodes 8 tokens "
        "only; a PyTorch loop stops taking timed runs once they add up to "
        f"{cfg['torch_budget_s']:g} s. "
        "ms/token: one decoder step for the whole batch; tokens/s: batch × new tokens / decode "
        "time. PyTorch threads: torch.set_num_threads(T) and openblas_set_num_threads(T) "
        "(PyTorch's OpenMP pool does not set the threads of the OpenBLAS it calls, which "
        "default to every core), with OMP_WAIT_POLICY="
        f"{get(r, 'torch', 'omp_wait_policy') or 'unset'} (libgomp's default spin-waiting "
        "keeps idle OpenMP threads on the cores OpenBLAS's threads need, several times slower "
        "at 2 threads on 2 cores). The cached loop multiplies a batch of one row with "
        "torch.addmv (gemv): F.linear's sgemm is several times slower on a single row.")
    if "error" in r["torch"]:
        add("")
        add(f"**PyTorch: {r['torch']['error']}**")
    for row in r["ted"]:
        if "error" in row:
            add("")
            add(f"**ted bench, batch {row['batch']}, {row['threads']} thread(s): "
                f"{row['error']}**")

    # memory
    wmib = r["weights"]["file_bytes"] / 2**20
    add("")
    add(f"### ted load time and memory (weight file {wmib:,.1f} MiB)")
    add("")
    add("The weights are memory-mapped: the peak RSS counts the pages actually read, and "
        "embedding rows no sentence uses are never read, so it can stay under the file size.")
    add("")
    add("| batch | threads | load ms | peak RSS MiB | over the weight file |")
    add("|---:|---:|---:|---:|---:|")
    for row in r["ted"]:
        if "error" in row:
            continue
        rss = row["peak_rss_mib"]
        add(f"| {row['batch']} | {row['threads']} | {fmt(row['load_ms'])} | {fmt(rss)} "
            f"| {rss - wmib:+,.1f} MiB ({(rss / wmib - 1) * 100:+.1f} %) |")

    # bytes per step and the bandwidth bound
    s = r["weights"]["per_step"]
    add("")
    add("### Batch-1 bound: weight bytes per decoder step / memory bandwidth")
    add("")
    add(f"A decoder step reads {s['total'] / 1e6:,.1f} MB of weights "
        f"({s['total'] / 2**20:,.1f} MiB): "
        f"decoder layers {s['decoder_layers'] / 1e6:,.1f} MB (self-attention, the query third of "
        f"the encoder-decoder in-projection, its out-projection, feed-forward, LayerNorms), "
        f"generator {s['generator'] / 1e6:,.1f} MB, "
        f"final LayerNorm {s['final_norm'] / 1e3:.1f} kB; "
        f"the target embedding row ({s['embedding_row_per_sentence']:,} bytes a sentence) is "
        "negligible. The key/value caches add about "
        f"{r['weights']['kv_cache_batch1_mean'] / 1e6:.1f} MB "
        f"a step at batch 1 (not counted).")
    add("")
    add("| threads | read bandwidth GB/s | bound ms/token | bound tokens/s | ted batch 1 tokens/s "
        "| ted / bound |")
    add("|---:|---:|---:|---:|---:|---:|")
    ted1 = {row["threads"]: row for row in r["ted"] if row["batch"] == 1}
    for m in get(r, "machine", "threads") or []:
        t = m["threads"]
        bw = m["read_gbs"] * 1e9
        bound_s = s["total"] / bw
        achieved = get(ted1, t, "tokens_per_s")
        add(f"| {t} | {m['read_gbs']:.1f} | {bound_s * 1e3:.2f} | {1 / bound_s:.1f} "
            f"| {fmt(achieved)} | {ratio(achieved, 1 / bound_s)} |")

    # machine
    if "error" in r["machine"]:
        add("")
        add(f"**bench-machine: {r['machine']['error']}**")
    else:
        add("")
        add("### Machine (bench-machine, best of several runs)")
        add("")
        add("| threads | sgemm 2048³ GFLOP/s | sgemm 16×512×2048 GFLOP/s "
            "| sgemm 16×512×32000 GFLOP/s | sgemm 1×512×32000 GFLOP/s | sgemv 512×32000 GB/s "
            "| read GB/s | copy GB/s |")
        add("|---:|---:|---:|---:|---:|---:|---:|---:|")
        for m in r["machine"]["threads"]:
            add(f"| {m['threads']} | {m['sgemm_2048x2048x2048_gflops']:.1f} "
                f"| {m['sgemm_16x512x2048_gflops']:.1f} | {m['sgemm_16x512x32000_gflops']:.1f} "
                f"| {m['sgemm_1x512x32000_gflops']:.1f} | {m['sgemv_512x32000_weight_gbs']:.1f} "
                f"| {m['read_gbs']:.1f} | {m['copy_gbs']:.1f} |")
        add("")
        add("M×K×N: M rows times a weight matrix of N rows of K (C = A·Bᵀ, as nn.Linear). "
            "Read: a sum over 1 GiB split between the threads; copy: 512 MiB, "
            "bytes read + written.")

    # toy model
    add("")
    toy = r.get("toy")
    if not toy:
        add(f"Toy model: {r['toy_dir']} not found (no config.yaml); skipped.")
    else:
        one, many = toy["runs"].get(1, {}), toy["runs"].get(32, {})
        if "error" in one or "error" in many:
            add(f"**Toy model ({toy['model']}): ted translate failed: "
                f"{one.get('error') or many.get('error')}**")
        else:
            add(f"Toy model ({toy['model']}, {toy['sentences']:,} sentences of test.en, "
                f"whole `ted translate` command, 1 thread, median of {one['repeat']}): "
                f"--batch-size 1 {one['sentences_per_s']:,.1f} sentences/s "
                f"({one['seconds']:.2f} s), "
                f"--batch-size 32 {many['sentences_per_s']:,.1f} sentences/s "
                f"({many['seconds']:.2f} s): "
                f"{many['sentences_per_s'] / one['sentences_per_s']:.2f}× "
                f"faster batched.")
    add("")
    add(f"Total time of the benchmark: {r['elapsed_s'] / 60:.1f} min.")
    return "\n".join(lines) + "\n"


def build_machine(binary):
    """Compiles bench/machine.c as `make bench` does; returns the exit status."""
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "openblas"], text=True,
                           capture_output=True).stdout.split() or ["-lopenblas"]
    os.makedirs(os.path.dirname(os.path.join(ROOT, binary)), exist_ok=True)
    return run([os.environ.get("CC", "cc"), "-O3", "-march=native", "-std=c11",
                "-D_POSIX_C_SOURCE=200809L", os.path.join("bench", "machine.c"), "-o", binary]
               + flags + ["-lpthread"]).returncode


def cpu_name():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="ted bench timed runs (5)")
    parser.add_argument("--torch-repeat", type=int, default=3,
                        help="PyTorch timed runs (3); the tutorial loop at batch 1 as well")
    parser.add_argument("--tutorial-repeat-large", type=int, default=1,
                        help=f"timed runs of the tutorial loop at batch >= {LARGE_BATCH} (1)")
    parser.add_argument("--torch-budget", type=float, default=60.0,
                        help="seconds of timed runs after which a PyTorch loop stops (60)")
    parser.add_argument("--batch", type=int_list, default=[1, 16])
    parser.add_argument("--threads", type=int_list, default=[1, 2])
    parser.add_argument("--toy", default=os.path.join("models", "toy-en-fr"),
                        help="toy model directory (default: %(default)s)")
    parser.add_argument("--toy-repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true",
                        help="one timed run of everything (checks the harness)")
    parser.add_argument("--no-build", action="store_true",
                        help="ted and bench-machine are built already (make bench)")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeat = args.torch_repeat = args.tutorial_repeat_large = args.toy_repeat = 1

    start = time.time()
    load_before = os.getloadavg()
    ted = os.path.join(BUILD, "ted")
    machine_bin = os.environ.get("BENCH_MACHINE", os.path.join(BUILD, "bench-machine"))
    if not args.no_build:
        if run(["make", "--no-print-directory", "-s", f"BUILD={BUILD}", "all"]).returncode \
                or build_machine(machine_bin):
            log("the build failed")
            return 1
    out_dir = os.path.join(ROOT, BUILD, "bench")
    model_dir = make_base_model.make(os.path.join(out_dir, "base"))
    failed = False

    results = []
    for b in args.batch:
        for t in args.threads:
            row = ted_bench(ted, model_dir, b, t, args.repeat)
            row.setdefault("batch", b)
            row.setdefault("threads", t)
            failed |= "error" in row
            log(f"ted batch {b}, {t} thread(s): " +
                (row["error"] if "error" in row else f"{row['tokens_per_s']} tokens/s"))
            results.append(row)

    def tutorial_repeat(b):
        return args.tutorial_repeat_large if b >= LARGE_BATCH else args.torch_repeat

    torch_results = torch_bench(os.path.join(model_dir, "state_dict.pt"), args.batch,
                                args.threads, args.torch_repeat, tutorial_repeat,
                                args.torch_budget)
    failed |= "error" in torch_results
    machine_results = machine(machine_bin, args.threads)
    failed |= "error" in machine_results

    toy = None
    toy_dir = args.toy if os.path.isabs(args.toy) else os.path.join(ROOT, args.toy)
    if os.path.isfile(os.path.join(toy_dir, "config.yaml")) and \
            os.path.isfile(os.path.join(toy_dir, "test.en")):
        toy = toy_translate(ted, args.toy, [1, 32], args.toy_repeat)
        failed |= any("error" in v for v in toy["runs"].values())

    weights_path = os.path.join(model_dir, "model.safetensors")
    weights = tensor_bytes(weights_path)
    base = make_base_model.BASE
    d, layers = base["emb_size"], base["num_decoder_layers"]
    mean_position = (NEW_TOKENS + 1) / 2
    kv_cache = layers * 2 * d * 4 * (mean_position + SOURCE_LEN)  # self + cross, batch 1

    load_after = os.getloadavg()
    r = {
        "settings": {"source_len": SOURCE_LEN, "new_tokens": NEW_TOKENS,
                     "batches": args.batch, "threads": args.threads,
                     "ted_repeat": args.repeat, "torch_repeat": args.torch_repeat,
                     "tutorial_repeat": {b: tutorial_repeat(b) for b in args.batch},
                     "tutorial_repeat_large": args.tutorial_repeat_large,
                     "torch_budget_s": args.torch_budget},
        "model": {"dir": model_dir, "seed": make_base_model.SEED,
                  "description": f"d_model {d}, {base['nhead']} heads, "
                                 f"{base['num_encoder_layers']}+{layers} layers, "
                                 f"d_ff {base['dim_feedforward']}, vocab "
                                 f"{base['src_vocab_size']:,}/{base['tgt_vocab_size']:,}, "
                                 f"{base['activation']}, post-norm"},
        "host": {"cpu": cpu_name(), "cores": os.cpu_count(), "load_before": load_before,
                 "load_after": load_after,
                 # other work was running when the benchmark started
                 "loaded": load_before[0] > 0.5},
        "ted": results,
        "torch": torch_results,
        "machine": machine_results,
        "toy_dir": args.toy,
        "toy": toy,
        "weights": {"file_bytes": os.path.getsize(weights_path),
                    "tensor_bytes": sum(weights.values()),
                    "per_step": step_bytes(weights, d),
                    "kv_cache_batch1_mean": kv_cache},
        "elapsed_s": time.time() - start,
    }
    table = report(r)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "results.json"), "w", encoding="utf-8") as f:
        json.dump(r, f, indent=1)
        f.write("\n")
    with open(os.path.join(out_dir, "table.md"), "w", encoding="utf-8") as f:
        f.write(table)
    print(table)
    log(f"wrote {os.path.join(BUILD, 'bench', 'results.json')} and "
        f"{os.path.join(BUILD, 'bench', 'table.md')}")
    if failed:
        log("some measurements FAILED (see the table)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
