#!/usr/bin/python3
"""Real sizes: models of NLLB-200-distilled-1.3B's shape (d_model 1024, 24 +
24 layers, 16 heads, ffn 8192) and NLLB-200-3.3B's (d_model 2048, 24 + 24
layers, 16 heads, ffn 8192), both with 256 206 shared embedding rows tied to
the output layer, random weights from a fixed seed, written as
save_pretrained writes them (float16, a tensor at a time: write_hf) and
converted with tools/export_hf.py (bench/make_nllb_model.py's way, at these
shapes), then quantized by `ted quantize` to bf16, int8 and int4 (int8 and
int4 in both layouts: portable, and mapped, which loading maps and does not
copy). For each model and each cell of batch 1 and 16, one and two threads:
`ted bench`'s load time (the page cache warm: the file is read once before
the first cell), peak RSS and tokens/s of greedy decoding; CTranslate2's
int8 on the same checkpoint beside them (--ct2). And the fraction of the
machine's limit: the weight bytes a batch-1 decoder step reads (every
decoder layer's matrices but the cross-attention's K and V, which the
encoder's pass computes once, and the output layer) times the steps a
second, over the read bandwidth bench/machine.c measures with as many
threads, in the same run (before the shape's first row and after its last:
the larger).

    /work/main/.venv/bin/python bench/big.py [--shape 1.3b|3.3b|both|small] [--out DIR]
        [--ted build/ted] [--machine build/bench-machine] [--ct2] [--no-fp32]
        [--batches 1,16] [--threads 1,2] [--new-tokens N] [--repeat R]
        [--new-tokens-batch N] [--repeat-batch R] [--rounds R] [--results NAME]
        [--only NAME] [--keep-hf] [--share] [--report]

DIR (default build/bench/big) keeps each shape's models in DIR/SHAPE between
runs: fp32, bf16, int8, int8-mapped, int4, int4-mapped and ct2-int8 (about
14 GiB for 1.3b, 33 GiB for 3.3b); the Hugging Face directory DIR/SHAPE/hf is
removed once converted (--keep-hf keeps it). Building and converting hold
about one tensor at a time, CTranslate2's converter the float16 model
(loaded with --low_cpu_mem_usage): 6.7 GB for 3.3b. A cell runs only when
the machine's available memory holds the model's file and 2 GiB more than
the cell needs (the table says which did not: fp32 3.3b needs 14 GB). The
figures go to DIR/SHAPE/results.json (--results NAME: NAME.json), the tables
of every results file to DIR/table.md (Markdown, for docs/performance.md).
--rounds R measures every row R times, the rows' rounds interleaved, so that
a shared machine's changes of load fall on all rows alike. --only NAME measures rows again into the same
results; --share measures two `ted serve` processes on each mapped model
(DIR/SHAPE/share.json); --report writes the tables again.
"""
import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import common  # noqa: E402
import make_nllb_model  # noqa: E402

VERSION = 2
# facebook/nllb-200-distilled-1.3B's and facebook/nllb-200-3.3B's config.json
# (transformers 4.40 names)
NLLB_1_3B = dict(vocab_size=256206, d_model=1024, encoder_layers=24, decoder_layers=24,
                 encoder_attention_heads=16, decoder_attention_heads=16, encoder_ffn_dim=8192,
                 decoder_ffn_dim=8192, activation_function="relu", max_position_embeddings=1024,
                 scale_embedding=True)
NLLB_3_3B = dict(NLLB_1_3B, d_model=2048)
SHAPES = {"1.3b": ("NLLB-200-distilled-1.3B", NLLB_1_3B), "3.3b": ("NLLB-200-3.3B", NLLB_3_3B),
          # NLLB's vocabulary over 2 + 2 small layers: the script checked in a minute
          "small": ("a small NLLB", dict(NLLB_1_3B, d_model=64, encoder_layers=2,
                                         decoder_layers=2, encoder_attention_heads=4,
                                         decoder_attention_heads=4, encoder_ffn_dim=128,
                                         decoder_ffn_dim=128))}
BOTH = ["1.3b", "3.3b"]
SOURCE_LEN = 32
GIB = 2**30
RESERVE = 2 * GIB  # memory left to the machine's other work beside a cell
# (name, directory, ted quantize arguments or None for the export itself)
VARIANTS = [("int8 mapped", "int8-mapped", ["--dtype", "int8", "--layout", "mapped"]),
            ("int4 mapped", "int4-mapped", ["--dtype", "int4", "--layout", "mapped"]),
            ("int8", "int8", ["--dtype", "int8"]), ("int4", "int4", ["--dtype", "int4"]),
            ("bf16", "bf16", ["--dtype", "bf16"]), ("fp32", "fp32", None)]
CT2 = "CTranslate2 int8"


def log(message):
    print(f"big: {message}", file=sys.stderr, flush=True)


def write_hf(hf_dir, shape):
    """The Hugging Face directory as save_pretrained writes it (config.json
    with torch_dtype float16, generation_config.json, model.safetensors of
    model.named_parameters() in F16, NllbTokenizer's files), the weights
    written a tensor at a time: the model's own parameters are never filled
    (no_init_weights leaves their pages untouched), so the peak memory is one
    tensor's. Tensor i of named_parameters() is drawn from N(0, STD^2)
    (LayerNorm gains 1 + that) in float32 by a generator seeded SEED + i,
    then rounded to float16; model.safetensors is renamed into place whole."""
    import torch
    from transformers import M2M100Config, M2M100ForConditionalGeneration, NllbTokenizer
    from transformers.modeling_utils import no_init_weights

    os.makedirs(hf_dir)
    with tempfile.TemporaryDirectory() as tmp:
        spm_path = os.path.join(tmp, "sentencepiece.bpe.model")
        make_nllb_model.write_spm(spm_path)
        NllbTokenizer(vocab_file=spm_path).save_pretrained(hf_dir)
    config = M2M100Config(**SHAPES[shape][1], **make_nllb_model.GENERATION, dropout=0.1,
                          attention_dropout=0.1, tokenizer_class="NllbTokenizer",
                          torch_dtype="float16")
    with no_init_weights():
        model = M2M100ForConditionalGeneration(config)
    model.tie_weights()
    config.save_pretrained(hf_dir)
    model.generation_config.save_pretrained(hf_dir)
    params = {name: (i, tuple(p.shape)) for i, (name, p) in enumerate(model.named_parameters())}
    path = os.path.join(hf_dir, "model.safetensors")
    with open(path + ".part", "wb") as f:
        f.write(safetensors_header(params))
        for name in sorted(params):
            index, shape_ = params[name]
            generator = torch.Generator().manual_seed(make_nllb_model.SEED + index)
            values = torch.randn(shape_, generator=generator).mul_(make_nllb_model.STD)
            if "layer_norm.weight" in name:
                values.add_(1.0)
            f.write(memoryview(values.half().numpy()).cast("B"))
            del values
    os.replace(path + ".part", path)


def safetensors_header(params):
    """The 8-byte length and JSON header of F16 tensors {name: (i, shape)}, sorted."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name in sorted(params):
        size = 2
        for n in params[name][1]:
            size *= n
        header[name] = {"dtype": "F16", "shape": list(params[name][1]),
                        "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text


def stamp(shape):
    return {"version": VERSION, "seed": make_nllb_model.SEED, "std": make_nllb_model.STD,
            "dtype": "F16", **SHAPES[shape][1]}


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def make_model(shape_dir, shape, args):
    """DIR/SHAPE/fp32 (the export) and, with --ct2, DIR/SHAPE/ct2-int8, from
    the Hugging Face directory built for them, unless DIR/SHAPE/stamp.json
    says they are this shape's; their times and peak RSS (conversion.json)."""
    conversion = read_json(os.path.join(shape_dir, "conversion.json"))
    if read_json(os.path.join(shape_dir, "stamp.json")) != stamp(shape) or conversion is None:
        shutil.rmtree(shape_dir, ignore_errors=True)
        os.makedirs(shape_dir)
        conversion = {}
    hf_dir, fp32_dir = os.path.join(shape_dir, "hf"), os.path.join(shape_dir, "fp32")
    ct2_dir = os.path.join(shape_dir, "ct2-int8")
    need_export = "export_s" not in conversion or not os.path.isfile(
        os.path.join(fp32_dir, "model.safetensors"))
    need_ct2 = args.ct2 and not os.path.isfile(os.path.join(ct2_dir, "model.bin"))
    if (need_export or need_ct2) and not os.path.isfile(os.path.join(hf_dir, "model.safetensors")):
        shutil.rmtree(hf_dir, ignore_errors=True)
        conversion.update(step("build", [sys.executable, os.path.abspath(__file__), "--hf-only",
                                         "--shape", shape, "--out", hf_dir]))
    if need_export:
        shutil.rmtree(fp32_dir, ignore_errors=True)
        conversion.update(step("export", [sys.executable, make_nllb_model.EXPORTER, hf_dir,
                                          "--out", fp32_dir]))
    if need_ct2:
        shutil.rmtree(ct2_dir, ignore_errors=True)
        converter = os.path.join(os.path.dirname(sys.executable), "ct2-transformers-converter")
        conversion.update(step("ct2_convert", [converter, "--model", hf_dir, "--output_dir",
                                               ct2_dir, "--quantization", "int8",
                                               "--low_cpu_mem_usage"]))
    with open(os.path.join(shape_dir, "conversion.json"), "w") as f:
        json.dump(conversion, f)
    with open(os.path.join(shape_dir, "stamp.json"), "w") as f:
        json.dump(stamp(shape), f)
    if not args.keep_hf:
        shutil.rmtree(hf_dir, ignore_errors=True)
    return conversion


def step(name, cmd):
    """Runs cmd (nice); {NAME_s, NAME_peak_rss_mib}, or exits naming it."""
    status, seconds, rss = make_nllb_model.measured(["nice", *cmd])
    if status:
        raise SystemExit(f"big: {name}: {' '.join(cmd[:2])} failed (exit status {status})")
    log(f"{name}: {seconds:.0f} s, peak RSS {rss} MiB")
    return {f"{name}_s": round(seconds, 1), f"{name}_peak_rss_mib": rss}


def quantize(ted, shape_dir, dirname, args):
    fp32 = os.path.join(shape_dir, "fp32", "model.safetensors")
    out = os.path.join(shape_dir, dirname)
    weights = os.path.join(out, "model.safetensors")
    if os.path.isfile(weights) and os.path.getmtime(weights) >= os.path.getmtime(fp32):
        return out, None
    shutil.rmtree(out, ignore_errors=True)
    figures = step("quantize", [ted, "quantize", *args, os.path.dirname(fp32), out])
    return out, figures


def step_bytes(model_dir):
    """Bytes of the weights a decoder step reads: the decoder layers' tensors
    but the cross-attention's K and V projections, and the output layer (the
    shared table, tied), with their scales."""
    header = read_header(model_dir)
    total = 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        decoder = name.startswith("model.decoder.layers.") and not re.search(
            r"encoder_attn\.(k|v)_proj", name)
        if decoder or name.startswith("model.shared.weight") or name.startswith("lm_head"):
            begin, end = entry["data_offsets"]
            total += end - begin
    return total


def read_header(model_dir):
    with open(os.path.join(model_dir, "model.safetensors"), "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        return json.loads(f.read(n))


def warm(path):
    """Reads the file once, so that the first cell's load finds it in the page cache."""
    with open(path, "rb", buffering=0) as f:
        while f.read(64 << 20):
            pass


def available_bytes():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def too_big(file_bytes, batch):
    """Why a cell of a model of file_bytes does not fit the memory available
    now (its file, 5 % more, and 0.5 GiB + 0.05 GiB a sentence of buffers,
    beside RESERVE), or None."""
    need = int(file_bytes * 1.05 + GIB // 2 + batch * GIB // 20)
    have = available_bytes()
    if have >= need + RESERVE:
        return None
    return (f"needs {need / GIB:.1f} GiB + {RESERVE // GIB} GiB to spare, "
            f"{have / GIB:.1f} GiB available")


def cells(args):
    """(key, batch, threads, new tokens, repeats) of every cell asked for."""
    return [(f"{b}x{t}", b, t, args.new_tokens if b == 1 else args.new_tokens_batch,
             args.repeat if b == 1 else args.repeat_batch)
            for b in args.batches for t in args.threads]


def ted_cell(ted, model_dir, batch, threads, tokens, repeat):
    cmd = ["nice", ted, "bench", "-m", model_dir, "--batch", str(batch), "--threads",
           str(threads), "--source-len", str(SOURCE_LEN), "--new-tokens", str(tokens),
           "--repeat", str(repeat)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        return {"error": r.stderr.strip()[-300:]}
    return {**json.loads(r.stdout), "load_average": round(os.getloadavg()[0], 2)}


def ted_row(args, shape_dir, name, dirname, quantize_args):
    model_dir, figures = (os.path.join(shape_dir, dirname), None) if quantize_args is None \
        else quantize(args.ted, shape_dir, dirname, quantize_args)
    weights = os.path.join(model_dir, "model.safetensors")
    size = os.path.getsize(weights)
    row = {"name": name, "layout": "mapped" if "mapped" in name else "portable",
           "file_mib": round(size / 2**20, 1), "step_bytes": step_bytes(model_dir),
           "cells": {}, **(figures or {})}
    if name == "fp32" and args.no_fp32:
        row["skipped"] = "--no-fp32"
        return row
    warmed = False
    for key, batch, threads, tokens, repeat in cells(args):
        reason = too_big(size, batch)
        if reason:
            row["cells"][key] = {"skipped": reason}
            log(f"{name} {key}: {reason}")
            continue
        if not warmed:
            warm(weights)
            warmed = True
        log(f"bench {name} batch {batch} threads {threads}")
        row["cells"][key] = ted_cell(args.ted, model_dir, batch, threads, tokens, repeat)
        log(json.dumps(row["cells"][key]))
    return row


def ct2_row(args, shape_dir):
    """CTranslate2's int8 on the same checkpoint (ct2-transformers-converter
    --quantization int8 of the float16 directory), each cell timed by
    bench/ct2_bench.py (its per-step time: the difference of N and 1
    tokens) on SOURCE_LEN random source ids a sentence; the peak RSS is its
    process's (wait4), the import of ctranslate2 (torch, transformers)
    included."""
    ct2_dir = os.path.join(shape_dir, "ct2-int8")
    weights = os.path.join(ct2_dir, "model.bin")
    row = {"name": CT2, "layout": "ct2", "file_mib": round(os.path.getsize(weights) / 2**20, 1),
           "cells": {}}
    with open(os.path.join(ct2_dir, "shared_vocabulary.json")) as f:
        count = len(json.load(f))
    warmed = False
    for key, batch, threads, tokens, repeat in cells(args):
        reason = too_big(os.path.getsize(weights), batch)
        if reason:
            row["cells"][key] = {"skipped": reason}
            continue
        if not warmed:
            warm(weights)
            warmed = True
        rng = random.Random(1)
        sources = os.path.join(shape_dir, f"ct2-sources-{batch}.json")
        with open(sources, "w") as f:
            json.dump([[rng.randrange(4, count - 300) for _ in range(SOURCE_LEN - 1)] + [2]
                       for _ in range(batch)], f)
        log(f"bench {CT2} batch {batch} threads {threads}")
        row["cells"][key] = ct2_cell(ct2_dir, sources, threads, tokens, repeat)
        log(json.dumps(row["cells"][key]))
    return row


def ct2_cell(ct2_dir, sources, threads, tokens, repeat):
    child = subprocess.Popen(["nice", sys.executable, os.path.join(HERE, "ct2_bench.py"),
                              "--model", ct2_dir, "--vocab",
                              os.path.join(ct2_dir, "shared_vocabulary.json"),
                              "--sources", sources, "--compute-type", "int8",
                              "--threads", str(threads), "--new-tokens", str(max(tokens, 2)),
                              "--repeat", str(repeat)], stdout=subprocess.PIPE, text=True)
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    if status:
        return {"error": f"bench/ct2_bench.py failed (exit status {status})"}
    result = json.loads(out.strip().split("\n")[-1])
    result["tokens_per_s"] = result["batch"] / (result["per_token_ms"] / 1e3)
    result["peak_rss_mib"] = round(usage.ru_maxrss / 1024, 1)
    result["load_average"] = round(os.getloadavg()[0], 2)
    return result


def info_rss(ted, model_dir):
    """The peak RSS (MiB) of `ted info` of the mapped int8 model, which
    loads it without reading a weight but the row scales: the config, the
    vocabularies and the tokenizer (a SentencePiece model of 256 000
    pieces), what a process holds beside the weights."""
    if not os.path.isdir(model_dir):
        return None
    child = subprocess.Popen([ted, "info", "-m", model_dir], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    return round(usage.ru_maxrss / 1024, 1) if status == 0 else None


def share(ted, model_dir):
    """Two `ted serve` processes on one model, each having translated a
    sentence (tests/cli/mmap_check.py's way): the memory the second adds to the
    machine, (Pss of both) - (Pss of the first alone), from
    /proc/PID/smaps_rollup, and each one's Rss and Pss, in MiB."""
    os.environ["TED"] = ted
    sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
    sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
    import mmap_check as share_test  # tests/cli/mmap_check.py
    servers, figures = [], {}
    try:
        for n in (1, 2):
            servers.append(share_test.start_server(model_dir))
            share_test.ask(servers[-1][1], "The little cat sleeps under the big table.",
                           source_lang="eng_Latn", target_lang="fra_Latn")
            pss = [share_test.rollup_kib(p.pid) for p, _ in servers]
            figures[f"with_{n}"] = [{"rss_mib": round(r / 1024, 1), "pss_mib": round(q / 1024, 1)}
                                    for r, q in pss]
    finally:
        for p, _ in servers:
            p.terminate()
            p.wait()
    alone = figures["with_1"][0]["pss_mib"]
    both = sum(x["pss_mib"] for x in figures["with_2"])
    figures["second_adds_mib"] = round(both - alone, 1)
    return figures


def machine_bandwidth(machine, threads):
    """{threads: read GB/s} of bench-machine, and its whole output."""
    r = subprocess.run(["nice", machine, *map(str, threads)], capture_output=True, text=True)
    try:
        value = json.loads(r.stdout)
        return {str(t["threads"]): t["read_gbs"] for t in value["threads"]}, value
    except (ValueError, KeyError, TypeError):
        return {}, r.stdout[-300:] + r.stderr[-300:]


def cpu_info():
    name, flags = common.cpu_name_and_flags()
    isa = [f for f in flags if re.match(r"avx|fma|amx|f16c|sse4", f)]
    return name, isa


def tokens(row, key):
    """A cell's tokens/s from its step's time (ted bench rounds tokens_per_s to 0.1)."""
    cell = row.get("cells", {}).get(key) or {}
    if cell.get("per_token_ms"):
        return cell["batch"] * 1e3 / cell["per_token_ms"]
    return cell.get("tokens_per_s")


def fraction(results, row, threads):
    """The batch-1 step's weight bytes a second over the read bandwidth, or None."""
    speed, bandwidth = tokens(row, f"1x{threads}"), results.get("read_gbs", {}).get(str(threads))
    if not speed or not bandwidth or not row.get("step_bytes"):
        return None
    return row["step_bytes"] * speed / (bandwidth * 1e9)


def median(values):
    values = sorted(v for v in values if v is not None)
    return values[len(values) // 2] if values else None


def cell_text(row, key, field, fmt):
    cell = row.get("cells", {}).get(key)
    if cell is None:
        return "—"
    if "skipped" in cell or "error" in cell:
        return "not run" if "skipped" in cell else "error"
    return fmt.format(cell[field]) if cell.get(field) is not None else "—"


def speed_text(row, key):
    """tokens/s to three significant digits, without an exponent."""
    value = tokens(row, key)
    if value is None:
        return cell_text(row, key, "tokens_per_s", "{}")
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def row_line(results, row, keys):
    peak = [cell_text(row, k, "peak_rss_mib", "{:,.0f}") for k in keys]
    speed = [speed_text(row, k) for k in keys]
    loads = median(c.get("load_ms") for c in row.get("cells", {}).values())
    fractions = [fraction(results, row, t) for t in results["threads"]]
    reads = f"{row['step_bytes'] / 1e6:,.0f}" if row.get("step_bytes") else "—"
    name = row["name"] if row["layout"] == "ct2" else row["name"].split()[0]
    layout = "its own" if row["layout"] == "ct2" else row["layout"]
    return (f"| {name} | {layout} | {row['file_mib']:,.0f} | "
            + (f"{loads:,.0f}" if loads is not None else "—") + " | "
            + " | ".join(peak + speed) + f" | {reads} | "
            + " | ".join(f"{100 * f:.0f} %" if f else "—" for f in fractions) + " |")


def ratio(results, a, b, key):
    """a's tokens/s over b's, and over several rounds each round's."""
    rows = {r["name"]: r for r in results["rows"]}
    x, y = tokens(rows.get(a, {}), key), tokens(rows.get(b, {}), key)
    if not x or not y:
        return "—"
    xs, ys = ((rows[n]["cells"][key].get("rounds_tokens_per_s") or []) for n in (a, b))
    each = f" (rounds: {', '.join(f'{p / q:.2f}' for p, q in zip(xs, ys))})" \
        if len(xs) > 1 and len(xs) == len(ys) else ""
    return f"{x / y:.2f}×{each}"


def goals(results):
    lines = []
    for t in results["threads"]:
        key = f"1x{t}"
        lines.append(
            f"- batch 1, {t} thread{'s' if t > 1 else ''}: int4 ÷ int8 {ratio(results, 'int4', 'int8', key)} "
            f"(mapped: {ratio(results, 'int4 mapped', 'int8 mapped', key)}; goal ≥ 1.6×), "
            f"int4 ÷ {CT2} {ratio(results, 'int4', CT2, key)} (goal ≥ 2×), "
            f"int8 ÷ {CT2} {ratio(results, 'int8', CT2, key)}; of the read bandwidth: "
            + ", ".join(f"{r['name']} {100 * fraction(results, r, t):.0f} %"
                        for r in results["rows"] if r["name"] in ("int8", "int4")
                        and fraction(results, r, t)) + " (goal ≥ 70 %)")
    return lines


def table(results):
    """The Markdown table of one shape's results."""
    keys = [k for k, *_ in cells(argparse.Namespace(**results["cells_args"]))]
    bw = results.get("read_gbs", {})
    spans = results.get("load_averages") or [0]
    base = results.get("base_rss_mib")
    skipped = sorted({c["skipped"] for r in results["rows"] for c in r.get("cells", {}).values()
                      if "skipped" in c} | {r["skipped"] for r in results["rows"] if "skipped" in r})
    lines = [f"{results['title']}'s shape ({results['parameters'] / 1e9:.2f} B parameters). "
             f"CPU: {results['cpu']}, {results['cores']} cores; flags {' '.join(results['isa_flags'])}. "
             f"{results['date']}, load average {min(spans):.1f}–{max(spans):.1f}. Read bandwidth "
             "(bench-machine, before and after, the larger): "
             + ", ".join(f"{v:.1f} GB/s on {k} thread{'s' if k != '1' else ''}"
                         for k, v in sorted(bw.items()))
             + f". Cells: batch × threads. `ted bench --source-len {SOURCE_LEN}`, batch 1: --new-tokens "
             f"{results['cells_args']['new_tokens']} --repeat {results['cells_args']['repeat']}; "
             f"larger batches: --new-tokens {results['cells_args']['new_tokens_batch']} "
             f"--repeat {results['cells_args']['repeat_batch']} (medians)"
             + (f"; {results['cells_args']['rounds']} rounds, the rows interleaved, each cell "
                "the round of median tokens/s" if results["cells_args"].get("rounds", 1) > 1
                else "") + "; load: the median of "
             "the cells' loads, the file in the page cache. base (`ted info` on the mapped "
             f"int8 model, no weight read): {base or '—'} MiB.", ""]
    head = " | ".join([f"peak RSS MiB {k.replace('x', ' × ')}" for k in keys]
                      + [f"tokens/s {k.replace('x', ' × ')}" for k in keys])
    lines.append(f"| weights | layout | file MiB | load ms | {head} | step reads MB | "
                 + " | ".join(f"of read bandwidth, {t} thr." for t in results["threads"]) + " |")
    lines.append("|---|---|" + "---:|" * (2 + 2 * len(keys) + 1 + len(results["threads"])))
    lines += [row_line(results, row, keys) for row in results["rows"]]
    lines += [""] + [f"not run: {s}" for s in skipped] + [""] + goals(results)
    return "\n".join(lines) + "\n"


def parameters(model_dir):
    total = 0
    for name, entry in read_header(model_dir).items():
        if name != "__metadata__":
            n = 1
            for d in entry["shape"]:
                n *= d
            total += n
    return total


def run_shape(args, shape):
    """Builds what is missing of one shape, measures its rows, writes its results."""
    shape_dir = os.path.join(args.out, shape)
    conversion = make_model(shape_dir, shape, args)
    cpu, isa = cpu_info()
    loads = [os.getloadavg()[0]]
    before, machine = machine_bandwidth(args.machine, args.threads)
    results = {"title": SHAPES[shape][0], "shape": SHAPES[shape][1], "cpu": cpu,
               "isa_flags": isa, "cores": os.cpu_count(),
               "date": time.strftime("%d %B %Y, %H:%M UTC", time.gmtime()),
               "parameters": parameters(os.path.join(shape_dir, "fp32")),
               "conversion": conversion, "threads": args.threads,
               "cells_args": {k: getattr(args, k) for k in (
                   "batches", "threads", "new_tokens", "repeat", "new_tokens_batch",
                   "repeat_batch", "rounds")}, "rows": []}
    rounds = []
    for _ in range(args.rounds):
        rounds.append(measure_rows(args, shape_dir))
        loads += [c["load_average"] for row in rounds[-1] for c in row["cells"].values()
                  if "load_average" in c]
    results["rows"] = [median_round([r[i] for r in rounds]) for i in range(len(rounds[0]))]
    after, machine_after = machine_bandwidth(args.machine, args.threads)
    loads.append(os.getloadavg()[0])
    results["read_gbs"] = {k: max(v, after.get(k, 0)) for k, v in before.items()}
    results["machine"] = {"before": machine, "after": machine_after}
    results["load_averages"] = [round(x, 2) for x in loads]
    path = os.path.join(shape_dir, args.results + ".json")
    if args.only:
        results["rows"] = merged_rows(path, results["rows"])
    results["base_rss_mib"] = info_rss(args.ted, os.path.join(shape_dir, "int8-mapped"))
    with open(path, "w") as f:
        json.dump(results, f, indent=1)


def measure_rows(args, shape_dir):
    """One round: every row asked for, each cell once."""
    rows = [ted_row(args, shape_dir, name, dirname, quantize_args)
            for name, dirname, quantize_args in VARIANTS if not args.only or name in args.only]
    if args.ct2 and (not args.only or CT2 in args.only):
        rows.append(ct2_row(args, shape_dir))
    return rows


def median_round(rows):
    """One row of several rounds: each cell the round of median tokens/s, with
    every round's tokens/s (rounds_tokens_per_s)."""
    row = dict(rows[0], cells={})
    for key in rows[0]["cells"]:
        timed = sorted((r for r in rows if tokens(r, key)), key=lambda r: tokens(r, key))
        if not timed:
            row["cells"][key] = rows[0]["cells"][key]
            continue
        row["cells"][key] = dict(timed[(len(timed) - 1) // 2]["cells"][key],
                                 rounds_tokens_per_s=[round(tokens(r, key), 3) for r in rows
                                                      if tokens(r, key)])
    return row


def merged_rows(path, rows):
    """The rows of the results file, those measured again replaced, in VARIANTS' order."""
    old = (read_json(path) or {}).get("rows", [])
    by_name = {r["name"]: r for r in old}
    by_name.update({r["name"]: r for r in rows})
    order = [name for name, _, _ in VARIANTS] + [CT2]
    return [by_name[n] for n in order if n in by_name]


def write_tables(out_dir):
    """DIR/table.md: the table of every shape with results."""
    parts = []
    for shape in BOTH + ["small"]:
        shape_dir = os.path.join(out_dir, shape)
        names = sorted(n for n in os.listdir(shape_dir) if re.fullmatch(r"results.*\.json", n)) \
            if os.path.isdir(shape_dir) else []
        for name in names:
            parts.append(table(read_json(os.path.join(shape_dir, name))))
    text = "\n".join(parts)
    with open(os.path.join(out_dir, "table.md"), "w") as f:
        f.write(text)
    print(text)
    return 0


def int_list(text):
    return [int(x) for x in text.split(",") if x]


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", default="both", choices=[*SHAPES, "both"])
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "bench", "big"))
    parser.add_argument("--ted", default=os.path.join(ROOT, "build", "ted"))
    parser.add_argument("--machine", default=os.path.join(ROOT, "build", "bench-machine"))
    parser.add_argument("--batches", type=int_list, default=[1, 16])
    parser.add_argument("--threads", type=int_list, default=[1, 2])
    parser.add_argument("--new-tokens", type=int, default=8, help="decoder steps at batch 1")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs at batch 1")
    parser.add_argument("--new-tokens-batch", type=int, default=4,
                        help="decoder steps at the larger batches")
    parser.add_argument("--repeat-batch", type=int, default=1,
                        help="timed runs at the larger batches")
    parser.add_argument("--rounds", type=int, default=1,
                        help="measure every row R times, the rows' rounds interleaved; each "
                        "cell the round of median tokens/s")
    parser.add_argument("--results", default="results",
                        help="the results' name: DIR/SHAPE/NAME.json (default results)")
    parser.add_argument("--no-fp32", action="store_true")
    parser.add_argument("--ct2", action="store_true")
    parser.add_argument("--keep-hf", action="store_true")
    parser.add_argument("--only", action="append", default=[],
                        help="measure the row NAME (fp32, bf16, int8, 'int8 mapped', ..., "
                        f"'{CT2}') alone, into DIR/SHAPE/results.json beside the others; "
                        "repeatable")
    parser.add_argument("--share", action="store_true",
                        help="measure two ted serve processes on each mapped model "
                        "(DIR/SHAPE/share.json)")
    parser.add_argument("--report", action="store_true",
                        help="write the tables again from DIR/SHAPE/results.json")
    parser.add_argument("--hf-only", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse(argv)
    shapes = BOTH if args.shape == "both" else [args.shape]
    if args.hf_only:  # the child that builds the Hugging Face directory
        write_hf(args.out, shapes[0])
        return 0
    if args.report:
        return write_tables(args.out)
    for shape in shapes:
        if args.share:
            shared = {name: share(args.ted, os.path.join(args.out, shape, dirname))
                      for name, dirname, _ in VARIANTS if "mapped" in name}
            with open(os.path.join(args.out, shape, "share.json"), "w") as f:
                json.dump(shared, f, indent=1)
            print(json.dumps(shared, indent=1))
        else:
            run_shape(args, shape)
    return 0 if args.share else write_tables(args.out)


if __name__ == "__main__":
    sys.exit(main())
