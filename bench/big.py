#!/usr/bin/python3
"""Real sizes: a model of NLLB-200-distilled-1.3B's shape (d_model 1024, 24 +
24 layers, 16 heads, ffn 8192, 256 206 shared embedding rows tied to the
output layer) with random weights from a fixed seed, built with
save_pretrained and converted with tools/export_hf.py
(bench/make_nllb_model.py's way, at this shape, its weights written a
tensor at a time: write_hf), then quantized by `ted
quantize` to bf16, int8 and int4 (int8 and int4 in both layouts: portable,
and mapped, which loading maps and does not copy). For each: the file's
size, `ted bench`'s load time (the page cache warm: the second of two runs),
peak RSS and tokens/s of batch-1 greedy decoding on one thread, and the
fraction of the machine's limit: the weight bytes a decoder step reads
(every decoder layer's matrices but the cross-attention's K and V, which
the encoder's pass computes once, and the output layer) times the steps a
second, over the read bandwidth bench/machine.c measures on one thread in
the same run.

    /work/main/.venv/bin/python bench/big.py [--out DIR] [--ted build/ted]
        [--machine build/bench-machine] [--new-tokens N] [--repeat R]
        [--no-fp32] [--ct2]

DIR (default build/bench/big) keeps the models between runs (about 17 GB
with the Hugging Face directory); the figures go to DIR/results.json and
the table to DIR/table.md (Markdown, for docs/performance.md). --ct2 adds
CTranslate2's int8 (ct2-transformers-converter --quantization int8 of the
same checkpoint, kept in DIR-ct2-int8), timed by bench/ct2_bench.py. --only
NAME measures rows again into the same results; --share measures two `ted
serve` processes on each mapped model (DIR/share.json); --report writes the
table again.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import common  # noqa: E402
import make_nllb_model  # noqa: E402

VERSION = 1
# facebook/nllb-200-distilled-1.3B's config.json (transformers 4.40 names)
NLLB_1_3B = dict(vocab_size=256206, d_model=1024, encoder_layers=24, decoder_layers=24,
                 encoder_attention_heads=16, decoder_attention_heads=16, encoder_ffn_dim=8192,
                 decoder_ffn_dim=8192, activation_function="relu", max_position_embeddings=1024,
                 scale_embedding=True)
SOURCE_LEN = 32
# (name, ted quantize arguments or None for the export itself)
VARIANTS = [("int8 mapped", ["--dtype", "int8", "--layout", "mapped"]),
            ("int4 mapped", ["--dtype", "int4", "--layout", "mapped"]),
            ("int8", ["--dtype", "int8"]), ("int4", ["--dtype", "int4"]),
            ("bf16", ["--dtype", "bf16"]), ("fp32", None)]


def log(message):
    print(f"big: {message}", file=sys.stderr, flush=True)


def write_hf(hf_dir):
    """The Hugging Face directory as save_pretrained writes it (config.json,
    generation_config.json, model.safetensors of model.named_parameters(),
    NllbTokenizer's files), the weights written a tensor at a time: the
    model's own parameters are never filled (no_init_weights leaves their
    pages untouched), so the peak memory is one tensor's, not the 5.4 GB
    model and its serialized copy. Tensor i of named_parameters() is drawn
    from N(0, STD^2) (LayerNorm gains 1 + that) by a generator seeded SEED + i."""
    import numpy as np
    import torch
    from transformers import M2M100Config, M2M100ForConditionalGeneration, NllbTokenizer
    from transformers.modeling_utils import no_init_weights

    os.makedirs(hf_dir)
    with tempfile.TemporaryDirectory() as tmp:
        spm_path = os.path.join(tmp, "sentencepiece.bpe.model")
        make_nllb_model.write_spm(spm_path)
        NllbTokenizer(vocab_file=spm_path).save_pretrained(hf_dir)
    config = M2M100Config(**NLLB_1_3B, **make_nllb_model.GENERATION, dropout=0.1,
                          attention_dropout=0.1, tokenizer_class="NllbTokenizer")
    with no_init_weights():
        model = M2M100ForConditionalGeneration(config)
    model.tie_weights()
    config.save_pretrained(hf_dir)
    model.generation_config.save_pretrained(hf_dir)
    params = {name: (i, tuple(p.shape)) for i, (name, p) in enumerate(model.named_parameters())}
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name in sorted(params):
        size = 4 * int(np.prod(params[name][1]))
        header[name] = {"dtype": "F32", "shape": list(params[name][1]),
                        "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(hf_dir, "model.safetensors"), "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text)
        for name in sorted(params):
            index, shape = params[name]
            generator = torch.Generator().manual_seed(make_nllb_model.SEED + index)
            values = torch.randn(shape, generator=generator).mul_(make_nllb_model.STD)
            if "layer_norm.weight" in name:
                values.add_(1.0)
            f.write(memoryview(values.numpy()).cast("B"))
            del values


def stamp():
    return {"version": VERSION, "seed": make_nllb_model.SEED, "std": make_nllb_model.STD,
            **NLLB_1_3B}


def make_model(out_dir, python):
    """The Hugging Face directory (a child process: torch) and its ted export,
    unless DIR/stamp.json says they are this shape's."""
    stamp_path = os.path.join(out_dir, "stamp.json")
    try:
        with open(stamp_path) as f:
            current = json.load(f) == stamp()
        with open(os.path.join(out_dir, "conversion.json")) as f:
            if current:
                return json.load(f)
    except (OSError, ValueError):
        pass
    hf_dir = out_dir + "-hf"
    for d in (out_dir, hf_dir):
        shutil.rmtree(d, ignore_errors=True)
    status, build_s, build_rss = make_nllb_model.measured(
        [python, os.path.abspath(__file__), "--hf-only", "--out", hf_dir])
    if status:
        raise SystemExit(f"big: building {hf_dir} failed (exit status {status})")
    status, export_s, export_rss = make_nllb_model.measured(
        [python, make_nllb_model.EXPORTER, hf_dir, "--out", out_dir])
    if status:
        raise SystemExit(f"big: tools/export_hf.py failed (exit status {status})")
    conversion = {"build_s": round(build_s, 1), "build_peak_rss_mib": build_rss,
                  "export_s": round(export_s, 1), "export_peak_rss_mib": export_rss}
    with open(os.path.join(out_dir, "conversion.json"), "w") as f:
        json.dump(conversion, f)
    with open(stamp_path, "w") as f:
        json.dump(stamp(), f)
    return conversion


def quantize(ted, fp32_dir, name, args):
    out = fp32_dir + "-" + name.replace(" ", "-")
    weights = os.path.join(out, "model.safetensors")
    if os.path.isfile(weights) and os.path.getmtime(weights) >= os.path.getmtime(
            os.path.join(fp32_dir, "model.safetensors")):
        return out, None
    shutil.rmtree(out, ignore_errors=True)
    status, seconds, rss = make_nllb_model.measured([ted, "quantize", *args, fp32_dir, out])
    if status:
        raise SystemExit(f"big: ted quantize {' '.join(args)} failed (exit status {status})")
    return out, {"quantize_s": round(seconds, 1), "quantize_peak_rss_mib": rss}


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


def ted_bench(ted, model_dir, new_tokens, repeat):
    cmd = ["nice", ted, "bench", "-m", model_dir, "--batch", "1", "--threads", "1",
           "--source-len", str(SOURCE_LEN), "--new-tokens", str(new_tokens),
           "--repeat", str(repeat)]
    result = None
    for _ in range(2):  # the second with the page cache warm
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            return {"error": r.stderr.strip()[-300:]}
        result = json.loads(r.stdout)
    return result


def info_rss(ted, model_dir):
    """The peak RSS (MiB) of `ted info` of the mapped int8 model, which
    loads it without reading a weight but the row scales (0.3 MiB): the
    config, the vocabularies and the tokenizer (a SentencePiece model of
    256 000 pieces), what a process holds beside the weights."""
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


def machine_bandwidth(machine):
    r = subprocess.run(["nice", machine, "1"], capture_output=True, text=True)
    text = r.stdout
    try:
        value = json.loads(text)
    except ValueError:
        return None, text[-300:]
    found = re.findall(r'"read_gbs": ([0-9.]+)', text)
    return (float(found[0]) if found else None), value


def cpu_info():
    name, flags = common.cpu_name_and_flags()
    isa = [f for f in flags if re.match(r"avx|fma|amx|f16c|sse4", f)]
    return name, isa


def ct2_bench(hf_dir, out_dir, new_tokens, repeat):
    """CTranslate2's int8 on the same checkpoint (ct2-transformers-converter
    --quantization int8), batch 1, one thread, timed by bench/ct2_bench.py
    (its per-step time: the difference of N and 1 tokens) on SOURCE_LEN
    random source ids; the peak RSS is its process's (wait4), the import
    of ctranslate2 (torch, transformers) included."""
    import random
    ct2_dir = out_dir + "-ct2-int8"
    if not os.path.isfile(os.path.join(ct2_dir, "model.bin")):
        shutil.rmtree(ct2_dir, ignore_errors=True)
        status, _, _ = make_nllb_model.measured(
            [os.path.join(os.path.dirname(sys.executable), "ct2-transformers-converter"),
             "--model", hf_dir, "--output_dir", ct2_dir, "--quantization", "int8"])
        if status:
            return {"error": f"ct2-transformers-converter failed (exit status {status})"}
    vocab_path, sources_path = ct2_dir + "-vocab.json", ct2_dir + "-sources.json"
    with open(os.path.join(ct2_dir, "shared_vocabulary.json")) as f:
        tokens = json.load(f)
    with open(vocab_path, "w") as f:
        json.dump({t: i for i, t in enumerate(tokens)}, f)
    rng = random.Random(1)
    with open(sources_path, "w") as f:
        json.dump([[rng.randrange(4, len(tokens) - 300) for _ in range(SOURCE_LEN - 1)] + [2]], f)
    child = subprocess.Popen(["nice", sys.executable, os.path.join(HERE, "ct2_bench.py"),
                              "--model", ct2_dir, "--vocab", vocab_path, "--sources", sources_path,
                              "--compute-type", "int8", "--threads", "1",
                              "--new-tokens", str(new_tokens), "--repeat", str(repeat)],
                             stdout=subprocess.PIPE, text=True)
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    if status:
        return {"error": f"bench/ct2_bench.py failed (exit status {status})"}
    result = json.loads(out.strip().split("\n")[-1])
    result["peak_rss_mib"] = round(usage.ru_maxrss / 1024, 1)
    result["file_mib"] = round(os.path.getsize(os.path.join(ct2_dir, "model.bin")) / 2**20, 1)
    return result


def table(results):
    cpu, isa = results["cpu"], results["isa_flags"]
    bw = results["read_gbs"]
    base_text = results.get("base_rss_mib") or "—"
    lines = [f"base: the peak RSS of `ted info` on the mapped int8 model ({base_text} MiB: the "
             f"config, vocabulary and tokenizer, no weight read); (RSS - base) / file: what the "
             f"weights take. CPU: {cpu}, {results['cores']} cores; flags {' '.join(isa)}. "
             f"bench-machine's read bandwidth on one thread: {bw} GB/s. "
             f"`ted bench --batch 1 --threads 1 --source-len {SOURCE_LEN} --new-tokens "
             f"{results['new_tokens']}` (medians of {results['repeat']}; load: the second of "
             f"two runs, page cache warm).", "",
             "| weights | layout | file MiB | load ms | peak RSS MiB | RSS / file | (RSS - base) "
             "/ file | tokens/s | step reads MB | GB/s | of read bandwidth |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in results["rows"]:
        if "error" in row:
            lines.append(f"| {row['name']} | | | | | | error: {row['error'][:80]} | | | |")
            continue
        gbs = row["step_bytes"] * row["tokens_per_s"] / 1e9 if row.get("step_bytes") else None
        row_bw = row.get("read_gbs", bw)  # measured in the run that measured the row
        frac = f"{100 * gbs / row_bw:.0f} %" if gbs and row_bw else "—"
        layout = row.get("layout", "")
        base = results.get("base_rss_mib")
        beyond = f"{(row['peak_rss_mib'] - base) / row['file_mib']:.2f}" \
            if base and row["layout"] != "ct2" else "—"
        lines.append(
            f"| {row['name'].split()[0]} | {layout} | {row['file_mib']:,.0f} | "
            f"{row['load_ms']:,.0f} | {row['peak_rss_mib']:,.0f} | "
            f"{row['peak_rss_mib'] / row['file_mib']:.2f} | {beyond} | "
            f"{row['tokens_per_s']:.2f} | "
            + (f"{row['step_bytes'] / 1e6:,.0f} | {gbs:.1f} | {frac} |" if gbs else "— | — | — |"))
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "bench", "big"))
    parser.add_argument("--ted", default=os.path.join(ROOT, "build", "ted"))
    parser.add_argument("--machine", default=os.path.join(ROOT, "build", "bench-machine"))
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-fp32", action="store_true")
    parser.add_argument("--ct2", action="store_true")
    parser.add_argument("--only", action="append", default=[],
                        help="measure the row NAME (fp32, bf16, int8, 'int8 mapped', ...) "
                        "alone, into DIR/results.json beside the others; repeatable")
    parser.add_argument("--share", action="store_true",
                        help="measure two ted serve processes on each mapped model "
                        "(DIR/share.json)")
    parser.add_argument("--report", action="store_true",
                        help="write the table again from DIR/results.json")
    parser.add_argument("--hf-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.hf_only:  # the child that builds the Hugging Face directory
        write_hf(args.out)
        return 0
    if args.share:
        shared = {name: share(args.ted, args.out + "-" + name.replace(" ", "-"))
                  for name, _ in VARIANTS if "mapped" in name}
        with open(os.path.join(args.out, "share.json"), "w") as f:
            json.dump(shared, f, indent=1)
        print(json.dumps(shared, indent=1))
        return 0
    if args.report:
        with open(os.path.join(args.out, "results.json")) as f:
            results = json.load(f)
        for row in results["rows"]:
            row.pop("info_rss_mib", None)
        results["base_rss_mib"] = info_rss(args.ted, args.out + "-int8-mapped")
        return write_results(args.out, results)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    conversion = make_model(args.out, sys.executable)
    cpu, isa = cpu_info()
    read_gbs, machine = machine_bandwidth(args.machine)
    results = {"cpu": cpu, "isa_flags": isa, "cores": os.cpu_count(), "read_gbs": read_gbs,
               "machine": machine, "conversion": conversion, "new_tokens": args.new_tokens,
               "repeat": args.repeat, "shape": NLLB_1_3B, "rows": []}
    for name, quantize_args in VARIANTS:
        if (name == "fp32" and args.no_fp32) or (args.only and name not in args.only):
            continue
        model_dir, figures = (args.out, None) if quantize_args is None else \
            quantize(args.ted, args.out, name, quantize_args)
        log(f"bench {name}")
        row = {"name": name, "layout": "mapped" if "mapped" in name else "portable",
               **ted_bench(args.ted, model_dir, args.new_tokens, args.repeat),
               "file_mib": round(os.path.getsize(os.path.join(model_dir, "model.safetensors"))
                                 / 2**20, 1),
               "step_bytes": step_bytes(model_dir),
               "read_gbs": read_gbs, "load_average": os.getloadavg()[0],
               **(figures or {})}
        results["rows"].append(row)
        log(json.dumps(row))
    if args.ct2:
        row = {"name": "CTranslate2 int8", "layout": "ct2",
               **ct2_bench(args.out + "-hf", args.out, args.new_tokens, args.repeat)}
        results["rows"].append(row)
    if args.only:
        results["rows"] = merged_rows(args.out, results["rows"])
    if os.path.isdir(args.out + "-int8-mapped"):
        results["base_rss_mib"] = info_rss(args.ted, args.out + "-int8-mapped")
    return write_results(args.out, results)


def merged_rows(out_dir, rows):
    """The rows of DIR/results.json, those measured again replaced, in VARIANTS' order."""
    try:
        with open(os.path.join(out_dir, "results.json")) as f:
            old = json.load(f)["rows"]
    except (OSError, ValueError, KeyError):
        old = []
    by_name = {r["name"]: r for r in old}
    by_name.update({r["name"]: r for r in rows})
    order = [name for name, _ in VARIANTS] + ["CTranslate2 int8"]
    return [by_name[n] for n in order if n in by_name]


def write_results(out_dir, results):
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    text = table(results)
    with open(os.path.join(out_dir, "table.md"), "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
