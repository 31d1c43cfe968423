#!/usr/bin/python3
"""make bench: ted against PyTorch and CTranslate2 on the same Marian checkpoint.

    .venv/bin/python bench/run.py [--quick] [--repeat R] [--batch 1,16]
        [--threads 1,2] [--toy DIR] [--no-build]

Makes a Transformer-base-sized Hugging Face MarianMTModel with random weights
(bench/make_marian_model.py: d_model 512, 6 + 6 layers, 8 heads, d_ff 2048,
vocabulary 58 101) and gives the same checkpoint to every runtime:

  ted          tools/export_hf.py's export, `ted bench`; int8 and bf16: `ted
               quantize` (--dtype bf16) of that export, `ted bench` on the
               result;
  PyTorch      bench/torch_bench.py: a tuned key/value-cached loop over the
               model's own modules; int8: quantize_dynamic on the same weights;
  CTranslate2  ct2-transformers-converter --quantization float32 and int8,
               bench/ct2_bench.py: translate_batch(beam_size=1).

For every batch and thread count: the same source ids (32 a sentence, those
`ted bench --seed 1` draws), exactly 64 greedy steps, one warm-up and R timed
runs, medians; each measurement is a process of its own, whose peak resident
memory is read from wait4(). bench-machine (bench/machine.c) measures the
machine's own bounds in the same run: read bandwidth and sgemm rate, and
OpenBLAS's sgemm on the products of a batch-16 step as a yardstick. When the
toy model (models/toy-en-fr) is there, also times `ted translate` over its
test.en with --batch-size 1 and 32. Whole files: ted translate and
CTranslate2's translate_batch (bench/ct2_file_bench.py) over the same
10 000-line file with the same checkpoint, batched by tokens, float32 and
int8, sentences/s (--file-lines, --file-max-length, --file-batch-tokens;
--file-only: that alone).

The real-size check: bench/make_nllb_model.py's model of
NLLB-200-distilled-600M's shape (d_model 1024, 12 + 12 layers, 16 heads,
ffn 4096, vocabulary 256 206; random weights), converted by
tools/export_hf.py (its time and peak RSS), quantized by `ted quantize`,
both timed with `ted bench` as above: load time, tokens/s, peak RSS. The
models are kept in BUILD/bench/nllb* for the next run. --no-nllb leaves it
out; --nllb-only runs it alone.

Prints Markdown tables; writes BUILD/bench/results.json (every raw figure)
and BUILD/bench/table.md (with --nllb-only: nllb-results.json and
nllb-table.md). Exits 1 when a measurement of ted fp32, PyTorch or
CTranslate2, or of the real-size check, failed (the table says which; ted
int8 and bf16 show n/a when `ted quantize` is not there or cannot write them). --quick: one timed run of everything.
"""
import argparse
import json
import os
import platform
import re
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import common  # noqa: E402
import make_marian_model  # noqa: E402
import make_nllb_model  # noqa: E402

PYTHON = sys.executable or "/usr/bin/python3"
BUILD = os.environ.get("BUILD", "build")
SOURCE_LEN = 32
NEW_TOKENS = 64
SEED = 1  # ted bench's --seed: the source ids every runtime gets

RUNTIMES = ("ted", "ted int8", "ted bf16", "PyTorch", "PyTorch int8", "CTranslate2",
            "CTranslate2 int8")
PEER_OF = {"PyTorch": "ted", "PyTorch int8": "ted int8",
           "CTranslate2": "ted", "CTranslate2 int8": "ted int8"}
ISA_FLAGS = re.compile(r"^(sse4_2|avx\w*|fma|f16c|amx\w*)$")


def log(message):
    print(f"bench: {message}", file=sys.stderr, flush=True)


def quoted(cmd):
    return " ".join(shlex.quote(str(c)) for c in cmd)


def run(cmd, **kwargs):
    """subprocess.run with text output; logs the command."""
    log("$ " + quoted(cmd))
    return subprocess.run([str(c) for c in cmd], cwd=ROOT, text=True, **kwargs)


def int_list(text):
    return [int(x) for x in text.split(",") if x]


def last_line(text, status):
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else f"exit status {status}"


def run_measured(cmd, env=None):
    """Runs cmd as a child of its own; returns (exit status, stdout, stderr,
    the child's own peak RSS in MiB and CPU seconds, from wait4)."""
    log("$ " + quoted(cmd))
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen([str(c) for c in cmd], cwd=ROOT, stdout=out, stderr=err,
                                 env=env)
        _, wait_status, usage = os.wait4(child.pid, 0)
        own_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        if usage.ru_maxrss <= own_peak:
            raise SystemExit(f"bench: the peak RSS of {quoted(cmd)} cannot be told from this "
                             f"process's own ({own_peak / 1024:.1f} MiB), which a child starts at")
        child.returncode = status = os.waitstatus_to_exitcode(wait_status)
        out.seek(0)
        err.seek(0)
        return (status, out.read().decode(errors="replace"), err.read().decode(errors="replace"),
                usage.ru_maxrss / 1024.0, usage.ru_utime + usage.ru_stime)


def measured_json(cmd, env=None):
    """The JSON object cmd prints, with peak_rss_mib and cpu_s from wait4; or
    {"error": ...}."""
    start = time.perf_counter()
    status, out, err, rss, cpu = run_measured(cmd, env)
    if status != 0:
        return {"error": last_line(err, status)}
    try:
        result = json.loads(out)
    except ValueError:
        return {"error": f"unreadable output: {out.strip()[:200]!r}"}
    result["self_reported_peak_rss_mib"] = result.pop("peak_rss_mib", None)
    result["peak_rss_mib"] = round(rss, 1)
    result["process_s"] = round(time.perf_counter() - start, 1)
    result["cpu_s"] = round(cpu, 1)
    return result


# --------------------------------------------------------------------------
# Models and inputs
# --------------------------------------------------------------------------

def source_ids(batch, vocab_size, seed=SEED):
    """The ids `ted bench --seed` draws: xorshift32, 4 + x % (vocab - 4),
    sentence after sentence."""
    state, out = seed or 1, []
    for _ in range(batch):
        sentence = []
        for _ in range(SOURCE_LEN):
            state ^= (state << 13) & 0xFFFFFFFF
            state ^= state >> 17
            state ^= (state << 5) & 0xFFFFFFFF
            sentence.append(4 + state % (vocab_size - 4))
        out.append(sentence)
    return out


def write_sources(out_dir, batches, vocab_size):
    paths = {}
    for b in batches:
        paths[b] = os.path.join(out_dir, f"sources-{b}.json")
        with open(paths[b], "w", encoding="utf-8") as f:
            json.dump(source_ids(b, vocab_size), f)
    return paths


def convert_ct2(hf_dir, out_dir, quantization):
    """ct2-transformers-converter, unless out_dir is newer than the checkpoint;
    returns an error message or None."""
    model_bin = os.path.join(out_dir, "model.bin")
    checkpoint = os.path.join(hf_dir, "model.safetensors")
    if os.path.isfile(model_bin) and os.path.getmtime(model_bin) > os.path.getmtime(checkpoint):
        return None
    converter = os.path.join(os.path.dirname(PYTHON), "ct2-transformers-converter")
    p = run([converter, "--model", hf_dir, "--output_dir", out_dir, "--quantization",
             quantization, "--force"], capture_output=True)
    return last_line(p.stderr, p.returncode) if p.returncode else None


def ted_quantize(ted, model_dir, out_dir, dtype="int8"):
    """`ted quantize` of the exported model; returns an error message or None."""
    p = run([ted, "quantize", "--dtype", dtype, model_dir, out_dir], capture_output=True)
    return f"ted quantize failed: {last_line(p.stderr, p.returncode)}" if p.returncode else None


# --------------------------------------------------------------------------
# Measurements: one function per runtime, one process per measurement
# --------------------------------------------------------------------------

def ted_bench(ted, model_dir, batch, threads, repeat):
    return measured_json([ted, "bench", "-m", model_dir, "--batch", batch, "--source-len",
                          SOURCE_LEN, "--new-tokens", NEW_TOKENS, "--threads", threads,
                          "--repeat", repeat, "--seed", SEED])


def peer_env():
    """The peers' environment: OMP_WAIT_POLICY=PASSIVE unless set. Both use
    libgomp, whose default spin-waiting keeps idle OpenMP threads on cores that
    other threads need (OpenBLAS's under PyTorch, any other process's on a
    shared machine): several times slower with 2 threads on 2 cores."""
    env = dict(os.environ)
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return env


def torch_bench(hf_dir, sources, threads, repeat, int8):
    return measured_json([PYTHON, os.path.join(HERE, "torch_bench.py"), "--hf-dir", hf_dir,
                          "--sources", sources, "--threads", threads, "--new-tokens",
                          NEW_TOKENS, "--repeat", repeat] + (["--int8"] if int8 else []),
                         peer_env())


def ct2_bench(ct2_dir, hf_dir, sources, threads, repeat, compute_type):
    return measured_json([PYTHON, os.path.join(HERE, "ct2_bench.py"), "--model", ct2_dir,
                          "--vocab", os.path.join(hf_dir, "vocab.json"), "--sources", sources,
                          "--compute-type", compute_type, "--threads", threads,
                          "--new-tokens", NEW_TOKENS, "--repeat", repeat], peer_env())


def machine(binary, threads, working_set, cfg):
    step = ",".join(str(cfg[k]) for k in ("d_model", "decoder_ffn_dim", "decoder_layers",
                                          "vocab_size"))
    p = run([binary, "--working-set", working_set, "--step", step] + threads,
            capture_output=True)
    if p.returncode != 0:
        return {"error": last_line(p.stderr, p.returncode)}
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
                out["runs"][size] = {"error": last_line(p.stderr.decode(errors="replace"),
                                                        p.returncode)}
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
# Whole files: sentences/s end to end
# --------------------------------------------------------------------------

def file_text(out_dir, lines):
    """A file of `lines` lines: models/en-fr/test.en over and over (natural
    sentence lengths), written once."""
    path = os.path.join(out_dir, f"file-{lines}.en")
    with open(os.path.join(ROOT, "models", "en-fr", "test.en"), encoding="utf-8") as f:
        text = [line for line in f.read().split("\n") if line.strip()]
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(text[i % len(text)] + "\n" for i in range(lines)))
    return path


def file_ted(ted, model_dir, text, out, f, workers=None):
    """`ted translate` over the file, the whole process timed: greedy, at most
    f.max_length tokens a sentence, --max-batch-tokens; its own choice of
    workers and threads over every CPU unless `workers` is given (then the
    CPUs shared among them)."""
    cmd = [ted, "translate", "-m", model_dir, "--beam", "1", "--max-length", f.max_length,
           "--max-batch-tokens", f.batch_tokens, "-i", text, "-o", out]
    if workers:
        cmd += ["--workers", workers, "--threads", max(1, f.cpus // workers)]
    start = time.perf_counter()
    status, _, err, rss, cpu = run_measured(cmd)
    seconds = time.perf_counter() - start
    if status != 0:
        return {"error": last_line(err, status)}
    return {"seconds": round(seconds, 3), "peak_rss_mib": round(rss, 1), "cpu_s": round(cpu, 1),
            "workers": workers or "auto", "threads": f.cpus // workers if workers else "auto"}


def file_ct2(ct2_dir, hf_dir, text, out, f, compute_type, inter):
    row = measured_json([PYTHON, os.path.join(HERE, "ct2_file_bench.py"), "--model", ct2_dir,
                         "--hf-dir", hf_dir, "--input", text, "--output", out,
                         "--compute-type", compute_type, "--intra-threads",
                         max(1, f.cpus // inter), "--inter-threads", inter,
                         "--max-batch-tokens", f.batch_tokens, "--max-length", f.max_length],
                        peer_env())
    if "error" not in row:
        row.update(workers=inter, threads=max(1, f.cpus // inter))
    return row


def same_lines(a, b):
    """The fraction of lines two output files have alike, word for word (the
    bench vocabulary's filler tokens are no SentencePiece pieces, which
    SentencePiece's decoder leaves with their ▁ and ted's with a space);
    None if one is missing."""
    try:
        with open(a, encoding="utf-8") as x, open(b, encoding="utf-8") as y:
            left, right = x.read().split("\n"), y.read().split("\n")
    except OSError:
        return None
    same = sum(p.replace("\u2581", " ").split() == q.replace("\u2581", " ").split()
               for p, q in zip(left, right))
    return same / max(len(left), len(right), 1)


def file_bench(ted, dirs, out_dir, f):
    """ted and CTranslate2 over the same file, float32 and int8: ted as it
    chooses (ted_translate_workers) and with one batch over every CPU,
    CTranslate2 with one batch over every CPU (inter_threads 1) and with a
    batch per CPU (inter_threads = CPUs)."""
    text = file_text(out_dir, f.lines)
    rows = []
    for kind, suffix in (("float32", ""), ("int8", " int8")):
        kind_rows, outs = [], {}
        for workers in (None, 1) if f.cpus > 1 else (None,):
            where = dirs["ted" + suffix]
            if isinstance(where, dict):
                kind_rows.append(dict(where, runtime="ted" + suffix))
                break
            out = os.path.join(out_dir, f"file-ted-{kind}-{workers or 'auto'}.out")
            kind_rows.append(dict(file_ted(ted, where, text, out, f, workers),
                                  runtime="ted" + suffix))
            outs.setdefault("ted", out)
        for inter in sorted({1, f.cpus}):
            where = dirs["CTranslate2" + suffix]
            if isinstance(where, dict):
                kind_rows.append(dict(where, runtime="CTranslate2" + suffix))
                break
            out = os.path.join(out_dir, f"file-ct2-{kind}-{inter}.out")
            kind_rows.append(dict(file_ct2(where, dirs["hf"], text, out, f, kind, inter),
                                  runtime="CTranslate2" + suffix))
            outs.setdefault("ct2", out)
        same = same_lines(outs["ted"], outs["ct2"]) if len(outs) == 2 else None
        for row in kind_rows:
            if "seconds" in row:
                row["sentences_per_s"] = round(f.lines / row["seconds"], 1)
            if row["runtime"].startswith("ted"):
                row["same_as_ct2"] = same
            log(f"file: {row['runtime']}: " + (row.get("error") or row.get("n/a") or
                                              f"{row.get('sentences_per_s')} sentences/s"))
        rows += kind_rows
    return {"lines": f.lines, "max_length": f.max_length, "batch_tokens": f.batch_tokens,
            "cpus": f.cpus, "text": text, "rows": rows}


def file_lines(r):
    """The whole-file table: sentences/s of each runtime, ted over the best
    CTranslate2 setting of the same weights."""
    fb = r.get("file")
    if not fb:
        return []
    lines = ["", f"**Whole files**: {fb['lines']:,} lines of models/en-fr/test.en over and over, "
             f"greedy, at most {fb['max_length']} tokens a sentence, batches of at most "
             f"{fb['batch_tokens']} source tokens with padding (ted --max-batch-tokens; "
             "CTranslate2 translate_batch(max_batch_size, batch_type=\"tokens\")), "
             f"{fb['cpus']} CPU(s). ted: the whole `ted translate` command, loading included; "
             "CTranslate2: tokenization, translate_batch and detokenization, the model loaded. "
             "One run each.", "",
             "| runtime | workers × threads | seconds | sentences/s | ted ÷ best CTranslate2 "
             "| lines as CTranslate2's | peak RSS MiB |", "|---|---|---:|---:|---:|---:|---:|"]
    best = {}
    for row in fb["rows"]:
        if row["runtime"].startswith("CTranslate2") and "sentences_per_s" in row:
            kind = row["runtime"].endswith("int8")
            best[kind] = max(best.get(kind, 0), row["sentences_per_s"])
    for row in fb["rows"]:
        if "sentences_per_s" not in row:
            lines.append(f"| {row['runtime']} | — | **failed: "
                         f"{row.get('error') or row.get('n/a')}** | — | — | — | — |")
            continue
        peer = best.get(row["runtime"].endswith("int8"))
        ratio = times(row["sentences_per_s"] / peer) if peer and \
            row["runtime"].startswith("ted") else "—"
        same = row.get("same_as_ct2")
        lines.append(f"| {row['runtime']} | {row['workers']} × {row['threads']} "
                     f"| {row['seconds']:.1f} | {fmt(row['sentences_per_s'])} | {ratio} "
                     f"| {'—' if same is None else f'{same * 100:.1f} %'} "
                     f"| {fmt(row.get('peak_rss_mib'))} |")
    return lines


# --------------------------------------------------------------------------
# The machine's bounds
# --------------------------------------------------------------------------

def model_costs(cfg):
    """Weight bytes (float32) and FLOPs of one decoder step, per sentence, and
    of the encoder over SOURCE_LEN tokens, from the Marian config."""
    d, f, vocab = cfg["d_model"], cfg["decoder_ffn_dim"], cfg["vocab_size"]
    layers, enc_layers = cfg["decoder_layers"], cfg["encoder_layers"]
    # self-attention q, k, v, out; encoder-decoder attention q, out (its keys
    # and values are computed once per sentence); feed-forward
    matrices = 6 * d * d + 2 * d * f
    small = 6 * d + f + d + 3 * 2 * d  # biases, three LayerNorms
    generator = vocab * d + vocab  # tied output layer + final_logits_bias
    step_bytes = 4 * (layers * (matrices + small) + generator)
    mean_position = (NEW_TOKENS + 1) / 2
    attention = layers * 2 * d * (mean_position + SOURCE_LEN)  # scores and mix, self + cross
    step_flops = 2 * (layers * matrices + vocab * d + attention)
    # the encode phase: the encoder, then the encoder-decoder keys and values
    # of every decoder layer, computed once per sentence (ted, PyTorch and
    # CTranslate2 all time them with the encoder)
    encoder_flops = 2 * enc_layers * (SOURCE_LEN * (4 * d * d + 2 * d * f)
                                      + 2 * SOURCE_LEN * SOURCE_LEN * d)
    encoder_flops += 2 * layers * SOURCE_LEN * 2 * d * d
    encoder_bytes = 4 * enc_layers * (4 * d * d + 2 * d * f + 4 * d + f + d + 2 * 2 * d)
    encoder_bytes += 4 * layers * (2 * d * d + 2 * d)  # the keys' and values' projections
    return {"step_weight_bytes": step_bytes, "step_flops_per_sentence": step_flops,
            "encoder_flops_per_sentence": encoder_flops, "encoder_weight_bytes": encoder_bytes}


def bounds(costs, machine_results):
    """{threads: bounds} from bench-machine's read bandwidth over a decoder
    step's weight bytes, read pass after pass, and its 2048^3 sgemm rate."""
    out = {}
    for m in machine_results.get("threads", []):
        rate = m["sgemm_2048x2048x2048_gflops"] * 1e9
        read = m.get("read_working_set_gbs", m["read_gbs"])
        out[m["threads"]] = {
            "read_gbs": read, "read_1gib_gbs": m["read_gbs"],
            "sgemm_gflops": m["sgemm_2048x2048x2048_gflops"],
            # tokens/s at batch 1 (scales with the batch) and at any batch
            "read_tokens_per_s_batch1": read * 1e9 / costs["step_weight_bytes"],
            "compute_tokens_per_s": rate / costs["step_flops_per_sentence"],
            "encoder_ms_per_sentence": costs["encoder_flops_per_sentence"] / rate * 1e3,
            "encoder_read_ms": costs["encoder_weight_bytes"] / (read * 1e9) * 1e3,
            # OpenBLAS on the products alone of a batch-16 step, weights from memory
            "sgemm_step16_ms": m.get("sgemm_step_16_rows_ms")}
    return out


def int8_ceiling(machine_results, kernels):
    """One core's int8 multiply-adds per second over its float32 ones, with
    the instructions of the kernel set ted ran (bench-machine's core_peaks):
    what int8 can gain where arithmetic, not memory, bounds both; None when
    unknown."""
    peaks = machine_results.get("core_peaks", {})
    if kernels == "avx512" and "i8_vnni_512_gmacs" in peaks:
        return peaks["i8_vnni_512_gmacs"] / peaks["fp32_fma_512_gmacs"]
    if kernels in ("avx2", "avx512") and "i8_avx2_gmacs" in peaks:
        fp32 = peaks.get("fp32_fma_512_gmacs" if kernels == "avx512" else "fp32_fma_256_gmacs")
        return peaks["i8_avx2_gmacs"] / fp32 if fp32 else None
    return None


def add_ratios(row, bound):
    """The row's speed over the bounds of its thread count (float32 bounds,
    whatever the row's weights)."""
    if "error" in row or "n/a" in row or not bound:
        return
    tps, b = row["tokens_per_s"], row["batch"]
    row["x_read_bound"] = tps / (b * bound["read_tokens_per_s_batch1"])
    row["x_compute_bound"] = tps / bound["compute_tokens_per_s"]
    if row.get("encode_ms"):
        row["x_encoder_bound"] = b * bound["encoder_ms_per_sentence"] / row["encode_ms"]


# --------------------------------------------------------------------------
# Host
# --------------------------------------------------------------------------

def cpu_info():
    name, flags = common.cpu_name_and_flags()
    return {"cpu": name, "isa_flags": [f for f in flags if ISA_FLAGS.match(f)],
            "flags": flags}


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------

def fmt(value, digits=1):
    return "—" if value is None else f"{value:,.{digits}f}"


def times(value):
    return "—" if value is None else f"{value:.2f}×"


LOADED = " **Other work was running: the figures are noisy.**"


def row_cells(row, ted_row):
    if "n/a" in row:
        return [f"n/a ({row['n/a']})"] + ["—"] * 8
    if "error" in row:
        return [f"**failed: {row['error']}**"] + ["—"] * 8
    encode = fmt(row.get("encode_ms"))
    if row["runtime"].startswith("CTranslate2") and row.get("encode_ms") is not None:
        encode = "≈" + encode
    versus = None
    if ted_row and "tokens_per_s" in ted_row:
        versus = ted_row["tokens_per_s"] / row["tokens_per_s"]
    return [fmt(row["tokens_per_s"]), fmt(row["per_token_ms"], 2), encode,
            times(row.get("x_read_bound")), times(row.get("x_compute_bound")),
            times(row.get("x_encoder_bound")), times(versus), rss_cell(row),
            f"{row['cpu_s'] / (row['process_s'] * row['threads']) * 100:.0f} %"]


def own_rss(row):
    """Peak RSS less what the process held before loading the model (the
    Python peers' imports); ted's whole peak."""
    return row["peak_rss_mib"] - (row.get("startup_rss_mib") or 0)


def rss_cell(row):
    if row.get("startup_rss_mib") is None:
        return fmt(row["peak_rss_mib"])
    return f"{fmt(row['peak_rss_mib'])} ({fmt(own_rss(row))})"


def weight_file_mib(model_dir):
    """The size of a ted model's weight file, MiB; None when it is missing."""
    try:
        return round(os.path.getsize(os.path.join(model_dir, "model.safetensors")) / 2**20, 1)
    except (OSError, TypeError):
        return None


def target_lines(r):
    """The targets, met or not, from this run's rows."""
    rows = {(x["runtime"], x["batch"], x["threads"]): x for x in r["rows"]}
    lines = []

    def ok(x):
        return x is not None and "tokens_per_s" in x

    def starved(*xs):
        """' (CPU use N %)' when a row's process got well under its threads' cores."""
        use = min(x["cpu_s"] / (x["process_s"] * x["threads"]) for x in xs)
        return f" (CPU use {use * 100:.0f} %: other work held the cores)" if use < 0.75 else ""

    def ratio_target(what, key, runtime, batch, threads, floor):
        x = rows.get((runtime, batch, threads))
        value = x.get(key) if ok(x) else None
        state = "—" if value is None else ("met" if value >= floor else
                                           f"**not met** ({value / floor:.2f} of it)"
                                           + starved(x))
        lines.append(f"| {what} ≥ {floor:.2f}× | {times(value)} | {state} |")

    ratio_target("ted fp32, batch 1, 2 threads: read-bandwidth bound", "x_read_bound",
                 "ted", 1, 2, 0.75)
    ratio_target("ted fp32, batch 16, 2 threads: compute bound", "x_compute_bound",
                 "ted", 16, 2, 0.65)
    ratio_target("ted fp32 encoder, batch 1, 32 tokens, 2 threads: compute bound",
                 "x_encoder_bound", "ted", 1, 2, 0.5)
    fp32_file = r["model"].get("fp32_file_mib")
    for (runtime, b, t), x in sorted(rows.items(), key=lambda kv: kv[0][1:]):
        fp32 = rows.get(("ted", b, t))
        if runtime != "ted int8" or not ok(x) or not ok(fp32):
            continue
        floor = 2.5 if b == 1 else 1.5
        speed = x["tokens_per_s"] / fp32["tokens_per_s"]
        ceiling = int8_ceiling(r["machine"], r["host"]["ted_kernels"]) if b > 1 else None
        lines.append(f"| ted int8 ÷ ted fp32, batch {b}, {t} thread(s) ≥ {floor:.1f}× | "
                     f"{speed:.2f}× | " + ("met" if speed >= floor else
                                          f"**not met** ({speed / floor:.2f} of it)") +
                     (f"; the instructions' own ratio: {ceiling:.2f}×" if ceiling else "") +
                     " |")
        if fp32_file:
            memory = x["peak_rss_mib"] / fp32_file
            lines.append(f"| ted int8 peak RSS, batch {b}, {t} thread(s) ≤ 0.35× the fp32 "
                         f"weight file ({fp32_file:,.1f} MiB) | {memory:.2f}× | " +
                         ("met" if memory <= 0.35 else "**not met**") + " |")
    for (runtime, b, t), x in sorted(rows.items(), key=lambda kv: kv[0][1:]):
        fp32 = rows.get(("ted", b, t))
        if runtime != "ted bf16" or b != 1 or not ok(x) or not ok(fp32):
            continue
        speed = x["tokens_per_s"] / fp32["tokens_per_s"]
        lines.append(f"| ted bf16 ÷ ted fp32, batch 1, {t} thread(s) ≥ 1.70× | {speed:.2f}× | "
                     + ("met" if speed >= 1.7 else f"**not met** ({speed / 1.7:.2f} of it)")
                     + starved(x, fp32) + " |")
    for peer in ("PyTorch", "PyTorch int8", "CTranslate2", "CTranslate2 int8"):
        mine = PEER_OF[peer]
        for (runtime, b, t), x in sorted(rows.items(), key=lambda kv: kv[0][1:]):
            if runtime != peer:
                continue
            own = rows.get((mine, b, t))
            if not ok(x) or not ok(own):
                lines.append(f"| {mine} ahead of {peer}, batch {b}, {t} thread(s) | — | "
                             "not measured |")
                continue
            speed = own["tokens_per_s"] / x["tokens_per_s"]
            memory = own["peak_rss_mib"] / own_rss(x)
            state = "met" if speed > 1 else \
                f"**not met** ({(1 - speed) * 100:.0f} % slower){starved(own, x)}"
            if peer.startswith("CTranslate2"):
                state += ("; memory met" if memory <= 1 else
                          f"; memory **not met** ({(memory - 1) * 100:+.0f} %)")
            lines.append(f"| {mine} ahead of {peer}, batch {b}, {t} thread(s)"
                         f"{' and at most its peak RSS' if peer.startswith('CTranslate2') else ''}"
                         f" | {speed:.2f}× speed, {memory:.2f}× memory | {state} |")
            if peer.startswith("CTranslate2"):
                lines.append(encoder_line(mine, peer, own, x, b, t))
    return lines


def encoder_line(mine, peer, own, x, batch, threads):
    """A target row: ted's encoder against CTranslate2's (encode ms, lower is
    better; CTranslate2's is derived: report())."""
    what = f"| {mine} encoder ahead of {peer}'s, batch {batch}, {threads} thread(s) | "
    if own.get("encode_ms") is None or x.get("encode_ms") is None:
        return what + "— | not measured |"
    speed = x["encode_ms"] / own["encode_ms"]
    state = "met" if speed > 1 else f"**not met** ({(1 - speed) * 100:.0f} % slower)"
    return what + f"{speed:.2f}× speed ({own['encode_ms']:.1f} ms, ≈{x['encode_ms']:.1f}) | " \
        f"{state} |"


def report(r):
    lines = []
    add = lines.append
    h, c = r["host"], r["costs"]
    add("## ted vs PyTorch vs CTranslate2 — Marian Transformer-base, greedy decoding")
    add("")
    add(f"Model: {r['model']['description']}, random weights (seed {r['model']['seed']}), "
        f"the same checkpoint for every runtime. Source {SOURCE_LEN} tokens (the ids of "
        f"`ted bench --seed {SEED}`), exactly {NEW_TOKENS} new tokens (EOS ignored).")
    add("")
    add(f"Machine: {h['cpu']}, {h['cores']} cores; SIMD flags: {' '.join(h['isa_flags'])}; "
        f"ted kernels: {h['ted_kernels'] or '?'}; Linux {h['kernel']}. Load average "
        f"{h['load_before'][0]:.2f} before, {h['load_after'][0]:.2f} after the runs."
        f"{LOADED if h['loaded'] else ''} Versions: PyTorch {r['versions'].get('torch') or '?'} "
        f"({r['versions'].get('openblas') or '?'}), CTranslate2 "
        f"{r['versions'].get('ctranslate2') or '?'}.")
    add("")
    add("| runtime | batch | threads | tokens/s | ms/step | encode ms | × read bound "
        "| × compute bound | × encoder bound | ted ÷ it | peak RSS MiB | CPU use |")
    add("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = {(x["runtime"], x["batch"], x["threads"]): x for x in r["rows"]}
    for b in r["settings"]["batches"]:
        for t in r["settings"]["threads"]:
            for name in RUNTIMES:
                x = rows.get((name, b, t))
                if x is None:
                    continue
                ted_row = rows.get((PEER_OF[name], b, t)) if name in PEER_OF else None
                add(f"| {name} | {b} | {t} | " + " | ".join(row_cells(x, ted_row)) + " |")
    add("")
    add(f"Medians of {r['settings']['repeat']} timed run(s) after one warm-up; each row is a "
        "process of its own, and its peak RSS is that process's own (wait4); in brackets, "
        "for the Python peers, the peak less what the process held before it loaded the "
        "model (Python, torch, transformers: `import ctranslate2` imports both), the memory "
        "targets' yardstick (× memory = ted's peak / that). CPU use: the process's CPU time "
        "(wait4) over its wall time × threads, load and warm-up included; well under 100 % "
        "means other work took the cores (threads that spin while they wait count as busy). "
        "tokens/s: batch × "
        "new tokens / decoding time, encoder excluded; ms/step: one decoder step for the whole "
        "batch. CTranslate2 encodes and decodes in one call: its step is (time of a "
        f"{NEW_TOKENS}-token translate_batch − time of a 1-token one) / {NEW_TOKENS - 1}, and "
        "its encode ms (≈) is the 1-token call minus one step. PyTorch: the tuned "
        "key/value-cached loop (bench/torch_bench.py), torch.set_num_threads(T) and "
        "openblas_set_num_threads(T); int8: quantize_dynamic "
        f"(qint8, {r['versions'].get('quantized_engine') or '?'} engine) on every nn.Linear. "
        "CTranslate2: intra_threads T, inter_threads 1, compute_type float32 or int8 on "
        "models converted by ct2-transformers-converter. Both peers run with OMP_WAIT_POLICY="
        f"{r['versions'].get('omp_wait_policy') or 'unset'}: libgomp's default spin-waiting "
        "made them several times slower at 2 threads on 2 cores (CTranslate2 float32 over "
        "ten times on a shared machine). ted int8 and ted bf16: `ted quantize` "
        "(--dtype bf16) of the exported model.")
    add("")
    add("The bounds are this machine's, measured in this run by bench-machine, for the row's "
        "thread count, and are float32 bounds for every row (an int8 row reads a quarter of "
        "the bytes and a bf16 row half, so they can pass 1×):")
    add("")
    add(f"- **read bound**: a decoder step reads {c['step_weight_bytes'] / 1e6:,.1f} MB of "
        "float32 weights (decoder layers without the encoder-decoder keys/values, which are "
        "computed once, plus the output layer); at the bandwidth of reading that many bytes "
        "pass after pass (what a step does; bench-machine --working-set) that is at most "
        "batch × bandwidth / bytes tokens/s. × read bound = tokens/s over that.")
    add(f"- **compute bound**: a step does {c['step_flops_per_sentence'] / 1e6:,.1f} MFLOP a "
        "sentence; at OpenBLAS's sgemm 2048³ rate that is at most rate / FLOPs tokens/s.")
    add(f"- **encoder bound**: {c['encoder_flops_per_sentence'] / 1e9:.3f} GFLOP a sentence "
        f"of {SOURCE_LEN} tokens (the encoder, and the encoder-decoder keys and values of "
        "every decoder layer, computed once per sentence) at the sgemm rate; × encoder bound "
        "= bound ms / encode ms.")
    add("- **sgemm on a step**: OpenBLAS's sgemm on the matrix products alone of one batch-16 "
        "step of this model (no attention, no output choice), each matrix its own so that "
        "they come from memory as in a step; × compute bound = 16 tokens / that time over "
        "the compute bound: how near the library that sets the bound gets to it on a step's "
        "shapes.")
    add("")
    add("| threads | read GB/s, step-sized set (1 GiB) | sgemm 2048³ GFLOP/s "
        "| read bound tokens/s, batch 1 "
        "| read bound, batch 16 | compute bound tokens/s | encoder bound ms, batch 1 "
        "| encoder weights at the read bandwidth, ms | sgemm on a step, ms (× compute bound) |")
    add("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for t, bnd in sorted(r["bounds"].items()):
        step_ms = bnd.get("sgemm_step16_ms")
        step = (f"{step_ms:.2f} ({16e3 / step_ms / bnd['compute_tokens_per_s']:.2f}×)"
                if step_ms else "—")
        add(f"| {t} | {bnd['read_gbs']:.1f} ({bnd['read_1gib_gbs']:.1f}) "
            f"| {bnd['sgemm_gflops']:.1f} "
            f"| {bnd['read_tokens_per_s_batch1']:.1f} "
            f"| {16 * bnd['read_tokens_per_s_batch1']:,.0f} "
            f"| {bnd['compute_tokens_per_s']:,.0f} "
            f"| {bnd['encoder_ms_per_sentence']:.2f} | {bnd['encoder_read_ms']:.2f} "
            f"| {step} |")
    add("")
    peaks = r["machine"].get("core_peaks")
    if peaks:
        ceiling = int8_ceiling(r["machine"], h["ted_kernels"])
        add("One core's multiply-adds from registers, GMAC/s (bench-machine): " +
            ", ".join(f"{name.removesuffix('_gmacs').replace('_', ' ')} {rate:.1f}"
                      for name, rate in peaks.items()) +
            (f". With the {h['ted_kernels']} kernels int8 does {ceiling:.2f}× the float32 "
             "multiply-adds a core can: the most those instructions let int8 gain over float32 "
             "where arithmetic bounds both (a batch-16 step)." if ceiling else "."))
        add("")
    add("A step cannot beat the lower of its two bounds: where the read bound at batch 16 is "
        "under the compute bound, a batch-16 step is still bound by reading the weights, and "
        "× compute bound cannot reach 1×; the encoder reads "
        f"{c['encoder_weight_bytes'] / 1e6:.1f} MB of weights as well.")
    if "error" in r["machine"]:
        add("")
        add(f"**bench-machine: {r['machine']['error']}**")
    add("")
    add("| target | measured | |")
    add("|---|---|---|")
    lines.extend(target_lines(r))

    toy = r.get("toy")
    add("")
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
                f"--batch-size 1 {one['sentences_per_s']:,.1f} sentences/s, "
                f"--batch-size 32 {many['sentences_per_s']:,.1f} sentences/s: "
                f"{many['sentences_per_s'] / one['sentences_per_s']:.2f}× faster batched.")
    lines.extend(file_lines(r))
    add("")
    add(f"Total time of the benchmark: {r['elapsed_s'] / 60:.1f} min.")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# The real-size check: NLLB-200-distilled-600M's shape, ted fp32 and int8
# --------------------------------------------------------------------------

NLLB_RUNTIMES = ("ted", "ted int8")


def read_json_file(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def write_json_file(path, value):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=1)
        f.write("\n")


def nllb_quantize(ted, model_dir):
    """`ted quantize` of the NLLB-shaped export into model_dir-int8, kept
    while it is newer than the export: (directory or {"n/a": why}, its
    figures: time, peak RSS, file size)."""
    int8_dir = model_dir + "-int8"
    figures_path = int8_dir + ".json"
    figures = read_json_file(figures_path)
    weights, int8_weights = (os.path.join(d, "model.safetensors") for d in (model_dir, int8_dir))
    if figures is not None and os.path.isfile(int8_weights) and \
            os.path.getmtime(int8_weights) >= os.path.getmtime(weights):
        return int8_dir, figures
    shutil.rmtree(int8_dir, ignore_errors=True)
    start = time.perf_counter()
    status, _, err, rss, _ = run_measured([ted, "quantize", model_dir, int8_dir])
    if status != 0:
        return {"n/a": f"ted quantize failed: {last_line(err, status)}"}, {}
    figures = {"quantize_s": round(time.perf_counter() - start, 1),
               "quantize_peak_rss_mib": round(rss, 1), "int8_file_mib": weight_file_mib(int8_dir)}
    write_json_file(figures_path, figures)
    return int8_dir, figures


def prepare_nllb(ted, out_dir):
    """The NLLB-shaped model (bench/make_nllb_model.py, in a child process,
    kept between runs) and its int8 form: ({runtime: directory or
    {"error"|"n/a": why}}, the conversion's figures)."""
    model_dir = os.path.join(out_dir, "nllb")
    status = run([sys.executable, os.path.join("bench", "make_nllb_model.py"),
                  "--out", model_dir]).returncode
    if status != 0:
        error = {"error": f"bench/make_nllb_model.py failed (exit status {status})"}
        return {name: error for name in NLLB_RUNTIMES}, {}
    conversion = read_json_file(os.path.join(model_dir, "conversion.json")) or {}
    int8_dir, quantized = nllb_quantize(ted, model_dir)
    return {"ted": model_dir, "ted int8": int8_dir}, {**conversion, **quantized}


def nllb_check(ted, out_dir, batches, threads, repeat):
    """The real-size check's figures: the conversion's, then `ted bench` of
    the fp32 and int8 models at every batch and thread count."""
    start = time.time()
    load_before = os.getloadavg()
    dirs, conversion = prepare_nllb(ted, out_dir)
    rows = []
    for b in batches:
        for t in threads:
            for name in NLLB_RUNTIMES:
                where = dirs[name]
                row = dict(where) if isinstance(where, dict) else \
                    ted_bench(ted, where, b, t, repeat)
                row.update(runtime=name, batch=b, threads=t)
                log(f"NLLB-shaped {name}, batch {b}, {t} thread(s): " +
                    (row.get("error") or row.get("n/a") or
                     f"{row['tokens_per_s']} tokens/s, load {row['load_ms']:.0f} ms, "
                     f"{row['peak_rss_mib']} MiB, {row['process_s']} s"))
                rows.append(row)
    return {"settings": {"source_len": SOURCE_LEN, "new_tokens": NEW_TOKENS, "seed": SEED,
                         "batches": batches, "threads": threads, "repeat": repeat},
            "model": {"dirs": dirs, "seed": make_nllb_model.SEED, **make_nllb_model.NLLB_600M,
                      "spm_pieces": make_nllb_model.SPM_PIECES},
            "conversion": conversion, "rows": rows,
            "load_before": load_before, "load_after": os.getloadavg(),
            "elapsed_s": time.time() - start}


def nllb_cells(row, fp32_row):
    if "n/a" in row:
        return [f"n/a ({row['n/a']})"] + ["—"] * 7
    if "error" in row:
        return [f"**failed: {row['error']}**"] + ["—"] * 7
    versus = None
    if fp32_row is not row and fp32_row and "tokens_per_s" in fp32_row:
        versus = row["tokens_per_s"] / fp32_row["tokens_per_s"]
    return [fmt(row["load_ms"], 0), fmt(row["tokens_per_s"]), fmt(row["per_token_ms"], 2),
            fmt(row["encode_ms"]), times(versus), fmt(row["peak_rss_mib"]),
            f"{row['cpu_s'] / (row['process_s'] * row['threads']) * 100:.0f} %"]


def conversion_text(c):
    """The conversion's figures in a sentence (those there are)."""
    def mib(key):
        return fmt(c.get(key))
    parts = []
    if "export_s" in c:
        parts.append(f"Hugging Face directory built in {fmt(c.get('build_s'))} s "
                     f"(model.safetensors {mib('hf_file_mib')} MiB); tools/export_hf.py "
                     f"{fmt(c['export_s'])} s, peak RSS {mib('export_peak_rss_mib')} MiB, "
                     f"writing {mib('ted_file_mib')} MiB of float32 weights")
    if "quantize_s" in c:
        parts.append(f"`ted quantize` {fmt(c['quantize_s'])} s, peak RSS "
                     f"{mib('quantize_peak_rss_mib')} MiB, writing {mib('int8_file_mib')} MiB")
    return "; ".join(parts)


def nllb_report(n, host):
    m = n["model"]
    lines = []
    add = lines.append
    add("## Real-size check — NLLB-200-distilled-600M's shape, ted fp32 and int8")
    add("")
    add(f"Model: M2M100ForConditionalGeneration, d_model {m['d_model']}, "
        f"{m['encoder_attention_heads']} heads, {m['encoder_layers']}+{m['decoder_layers']} "
        f"layers, ffn {m['encoder_ffn_dim']}, {m['activation_function']}, pre-norm, "
        f"{m['vocab_size']:,} embedding rows shared by both stacks and the output layer "
        f"(NllbTokenizer over a {m['spm_pieces']:,}-piece SentencePiece model), random weights "
        f"(seed {m['seed']}), saved by save_pretrained and converted by tools/export_hf.py "
        f"(bench/make_nllb_model.py). Source {SOURCE_LEN} tokens (`ted bench --seed {SEED}`), "
        f"exactly {NEW_TOKENS} new tokens; one warm-up, then "
        f"{n['settings']['repeat']} timed run(s), medians; each row a process of its own, "
        "its peak RSS from wait4.")
    add("")
    add(f"Machine: {host['cpu']}, {host['cores']} cores; ted kernels: "
        f"{next((x['kernels'] for x in n['rows'] if x.get('kernels')), '?')}. Load average "
        f"{n['load_before'][0]:.2f} before, {n['load_after'][0]:.2f} after."
        f"{LOADED if max(n['load_before'][0], n['load_after'][0]) > 0.5 else ''}")
    text = conversion_text(n["conversion"])
    if text:
        add("")
        add(f"Conversion (when the model was built; kept in {BUILD}/bench/nllb*): {text}.")
    add("")
    add("| runtime | batch | threads | load ms | tokens/s | ms/step | encode ms "
        "| int8 ÷ fp32 | peak RSS MiB | CPU use |")
    add("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = {(x["runtime"], x["batch"], x["threads"]): x for x in n["rows"]}
    for (name, b, t), x in rows.items():
        add(f"| {name} | {b} | {t} | " + " | ".join(nllb_cells(x, rows.get(("ted", b, t))))
            + " |")
    add("")
    add("load ms: `ted bench`'s median time to load the model (config, vocabulary, "
        f"SentencePiece model, weights). tokens/s: batch × {NEW_TOKENS} / decoding time, the "
        "encoder excluded; ms/step: one decoder step for the whole batch; int8 ÷ fp32: the "
        "int8 row's tokens/s over the fp32 row's. CPU use: the process's CPU time (wait4) "
        "over its wall time × threads, load and warm-up included; well under 100 % means "
        "other work held the cores.")
    return "\n".join(lines) + "\n"


def nllb_failed(n):
    return any("error" in x for x in n["rows"])


def nllb_main(ted, out_dir, args):
    """--nllb-only: the real-size check alone, into nllb-results.json and
    nllb-table.md."""
    n = nllb_check(ted, out_dir, args.batch, args.threads, args.repeat)
    table = nllb_report(n, {**cpu_info(), "cores": os.cpu_count()})
    write_json_file(os.path.join(out_dir, "nllb-results.json"), n)
    with open(os.path.join(out_dir, "nllb-table.md"), "w", encoding="utf-8") as f:
        f.write(table)
    print(table)
    log(f"wrote {os.path.join(BUILD, 'bench', 'nllb-results.json')} and "
        f"{os.path.join(BUILD, 'bench', 'nllb-table.md')}")
    return 1 if nllb_failed(n) else 0


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------

def build_machine(binary):
    """Compiles bench/machine.c as `make bench` does; returns the exit status."""
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "openblas"], text=True,
                           capture_output=True).stdout.split() or ["-lopenblas"]
    os.makedirs(os.path.dirname(os.path.join(ROOT, binary)), exist_ok=True)
    return run([os.environ.get("CC", "cc"), "-O3", "-march=native", "-std=c11",
                "-D_POSIX_C_SOURCE=200809L", os.path.join("bench", "machine.c"), "-o", binary]
               + flags + ["-lpthread"]).returncode


def prepare(ted, out_dir):
    """The checkpoint in every runtime's format: {name: directory or n/a message}."""
    # A child process builds it: torch and the model would otherwise stay in
    # this process, and Linux starts a child's peak RSS (wait4) at the peak of
    # the process it was forked from, so every row would show this one's.
    model_dir = os.path.join(out_dir, "marian")
    status = run([sys.executable, os.path.join("bench", "make_marian_model.py"),
                  "--out", model_dir]).returncode
    if status != 0:
        raise SystemExit(f"bench/make_marian_model.py failed (exit status {status})")
    hf_dir = model_dir + "-hf"
    dirs = {"hf": hf_dir, "ted": model_dir, "PyTorch": hf_dir, "PyTorch int8": hf_dir}
    for dtype in ("int8", "bf16"):
        quantized_dir = os.path.join(out_dir, "marian-" + dtype)
        shutil.rmtree(quantized_dir, ignore_errors=True)
        error = ted_quantize(ted, model_dir, quantized_dir, dtype)
        dirs["ted " + dtype] = {"n/a": error} if error else quantized_dir
    for name, quantization in (("CTranslate2", "float32"), ("CTranslate2 int8", "int8")):
        ct2_dir = os.path.join(out_dir, "ct2-" + quantization)
        error = convert_ct2(hf_dir, ct2_dir, quantization)
        dirs[name] = {"error": f"ct2-transformers-converter failed: {error}"} if error \
            else ct2_dir
    return dirs


def measure(name, dirs, sources, ted, b, t, repeat):
    where = dirs[name]
    if isinstance(where, dict):  # the model could not be made
        return dict(where)
    if name.startswith("ted"):
        return ted_bench(ted, where, b, t, repeat)
    if name.startswith("PyTorch"):
        return torch_bench(where, sources[b], t, repeat, name.endswith("int8"))
    return ct2_bench(where, dirs["hf"], sources[b], t, repeat,
                     "int8" if name.endswith("int8") else "float32")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each (3)")
    parser.add_argument("--batch", type=int_list, default=[1, 16])
    parser.add_argument("--threads", type=int_list, default=[1, 2])
    parser.add_argument("--toy", default=os.path.join("models", "toy-en-fr"),
                        help="toy model directory (default: %(default)s)")
    parser.add_argument("--toy-repeat", type=int, default=3)
    parser.add_argument("--file-lines", type=int, default=10000,
                        help="lines of the whole-file benchmark (0: none; default %(default)s)")
    parser.add_argument("--file-max-length", type=int, default=16,
                        help="tokens a sentence at most, whole files (default %(default)s)")
    parser.add_argument("--file-batch-tokens", type=int, default=1024,
                        help="source tokens a batch, whole files (default %(default)s)")
    parser.add_argument("--file-only", action="store_true",
                        help="only the whole-file benchmark")
    parser.add_argument("--quick", action="store_true",
                        help="one timed run of everything (checks the harness)")
    parser.add_argument("--no-build", action="store_true",
                        help="ted and bench-machine are built already (make bench)")
    nllb = parser.add_mutually_exclusive_group()
    nllb.add_argument("--no-nllb", action="store_true",
                      help="leave out the real-size check (the NLLB-shaped model)")
    nllb.add_argument("--nllb-only", action="store_true",
                      help="run the real-size check alone (no peers, no bench-machine)")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeat = args.toy_repeat = 1
        args.file_lines = min(args.file_lines, 1000)

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
    os.makedirs(out_dir, exist_ok=True)
    if args.nllb_only:
        return nllb_main(ted, out_dir, args)
    dirs = prepare(ted, out_dir)
    cfg = make_marian_model.MARIAN_BASE
    sources = write_sources(out_dir, args.batch, cfg["vocab_size"])
    whole_file = argparse.Namespace(lines=args.file_lines, max_length=args.file_max_length,
                                    batch_tokens=args.file_batch_tokens,
                                    cpus=len(os.sched_getaffinity(0)))
    if args.file_only:
        fb = file_bench(ted, dirs, out_dir, whole_file)
        with open(os.path.join(out_dir, "file.json"), "w", encoding="utf-8") as f:
            json.dump(fb, f, indent=1)
            f.write("\n")
        print("\n".join(file_lines({"file": fb})))
        return 1 if any("error" in x for x in fb["rows"]) else 0

    costs = model_costs(cfg)
    machine_results = machine(machine_bin, args.threads, costs["step_weight_bytes"], cfg)
    machine_bounds = bounds(costs, machine_results)
    failed = "error" in machine_results
    rows = []
    for b in args.batch:
        for t in args.threads:
            for name in RUNTIMES:
                row = measure(name, dirs, sources, ted, b, t, args.repeat)
                row.update(runtime=name, batch=b, threads=t)
                add_ratios(row, machine_bounds.get(t))
                failed |= "error" in row
                log(f"{name}, batch {b}, {t} thread(s): " +
                    (row.get("error") or row.get("n/a") or
                     f"{row['tokens_per_s']} tokens/s, {row['peak_rss_mib']} MiB, "
                     f"{row['process_s']} s"))
                rows.append(row)

    toy = None
    toy_dir = args.toy if os.path.isabs(args.toy) else os.path.join(ROOT, args.toy)
    if os.path.isfile(os.path.join(toy_dir, "config.yaml")) and \
            os.path.isfile(os.path.join(toy_dir, "test.en")):
        toy = toy_translate(ted, args.toy, [1, 32], args.toy_repeat)
        failed |= any("error" in v for v in toy["runs"].values())

    nllb = None if args.no_nllb else nllb_check(ted, out_dir, args.batch, args.threads,
                                                  args.repeat)
    failed |= bool(nllb) and nllb_failed(nllb)
    fb = file_bench(ted, dirs, out_dir, whole_file) if args.file_lines > 0 else None
    failed |= fb is not None and any("error" in x for x in fb["rows"])

    def first(key, runtime_prefix):
        return next((x[key] for x in rows if x.get(key) and
                     x["runtime"].startswith(runtime_prefix)), None)

    load_after = os.getloadavg()
    r = {
        "settings": {"source_len": SOURCE_LEN, "new_tokens": NEW_TOKENS, "seed": SEED,
                     "batches": args.batch, "threads": args.threads, "repeat": args.repeat},
        "model": {"dirs": dirs, "seed": make_marian_model.SEED,
                  "fp32_file_mib": weight_file_mib(dirs["ted"]),
                  "description": f"MarianMTModel, d_model {cfg['d_model']}, "
                                 f"{cfg['encoder_attention_heads']} heads, "
                                 f"{cfg['encoder_layers']}+{cfg['decoder_layers']} layers, "
                                 f"d_ff {cfg['decoder_ffn_dim']}, {cfg['activation_function']}, "
                                 f"shared vocabulary of {cfg['vocab_size']:,}, post-norm"},
        "host": {**cpu_info(), "cores": os.cpu_count(), "kernel": platform.release(),
                 "ted_kernels": first("kernels", "ted"),
                 "load_before": load_before, "load_after": load_after,
                 # other work was running when the benchmark started or ended
                 "loaded": max(load_before[0], load_after[0]) > 0.5},
        "versions": {"torch": first("torch_version", "PyTorch"),
                     "openblas": first("openblas", "PyTorch") or machine_results.get("openblas"),
                     "omp_wait_policy": first("omp_wait_policy", "PyTorch"),
                     "quantized_engine": first("quantized_engine", "PyTorch"),
                     "ctranslate2": first("version", "CTranslate2")},
        "costs": costs,
        "machine": machine_results,
        "bounds": machine_bounds,
        "rows": rows,
        "toy_dir": args.toy,
        "toy": toy,
        "nllb": nllb,
        "file": fb,
        "elapsed_s": time.time() - start,
    }
    table = report(r) + ("\n" + nllb_report(nllb, r["host"]) if nllb else "")
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
