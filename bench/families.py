#!/usr/bin/python3
"""make bench's real-size families: ted against CTranslate2 on checkpoints of
Flan-T5-base's and bart-large-cnn's shapes, and MADLAD-400-3B's shape in int8.

    .venv/bin/python bench/families.py --ted build/ted [--quick] [--rounds N]
        [--repeat R] [--batch 1,16] [--threads 1,2] [--family NAME ...]
        [--no-madlad | --madlad-only]

Each family's Hugging Face checkpoint (bench/make_family_model.py: random
weights from a fixed seed, save_pretrained) is given to both runtimes:

  ted          tools/export_hf.py's export and `ted bench`; int8: `ted
               quantize` of that export;
  CTranslate2  ct2-transformers-converter --quantization float32 and int8
               of the same directory, bench/ct2_bench.py
               (translate_batch(beam_size=1), compute_type as converted).

For every family, precision, batch and thread count: the same source ids
(32 a sentence, those `ted bench --seed 1` draws), exactly 64 greedy steps,
one warm-up and R timed runs a process (medians); N rounds, each running
ted's process and CTranslate2's one after the other, the order swapped from
round to round, so that the load of a shared machine falls on both alike.
A cell gives the median over the rounds: tokens/s (the decoder steps, the
encoder excluded), load time, and peak resident memory (wait4; for
CTranslate2 also less what the Python process held before loading the
model: its imports). ted ÷ CT2: the ratio of the tokens/s.

MADLAD-400-3B's shape: the checkpoint written tensor by tensor in float16
(5.5 GiB), exported to int8 directly by `tools/export_hf.py --quantize int8`
(its time and peak RSS), then `ted bench` of the int8 model at batch 1.

Models are kept in BUILD/bench/families/ (rebuilt when bench/
make_family_model.py changes). Prints Markdown tables with the CPU; writes
BUILD/bench/families.json and BUILD/bench/families.md. Exits 1 when a
measurement failed (the table says which). --quick: one round of one timed
run, batch 1 and 16 at 2 threads, no MADLAD.
"""
import argparse
import hashlib
import os
import shutil
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import make_family_model  # noqa: E402
import run as bench  # noqa: E402  (bench/run.py: processes, sources, cpu_info)

BUILD = os.environ.get("BUILD", "build")
PAIRS = (("fp32", "ted", "CTranslate2"), ("int8", "ted int8", "CTranslate2 int8"))
COMPARED = ("flan-t5-base", "bart-large-cnn")


def log(message):
    print(f"families: {message}", file=sys.stderr, flush=True)


def builder_digest():
    with open(os.path.join(HERE, "make_family_model.py"), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def measured_step(cmd):
    """(exit status, seconds, peak RSS MiB) of a child process."""
    start = time.perf_counter()
    status, _, err, rss, _ = bench.run_measured(cmd)
    if status != 0:
        raise SystemExit(f"families: {bench.quoted(cmd)} failed: {bench.last_line(err, status)}")
    return {"s": round(time.perf_counter() - start, 1), "peak_rss_mib": round(rss, 1)}


def stamp_path(out_dir):
    return os.path.join(out_dir, "stamp.json")


def up_to_date(out_dir):
    stamp = bench.read_json_file(stamp_path(out_dir))
    return stamp is not None and stamp.get("builder") == builder_digest()


def build(family, base):
    """The family's checkpoint and every runtime's form of it, under base
    (kept while bench/make_family_model.py is unchanged): (directories,
    the figures of each conversion)."""
    hf_dir = base + "-hf"
    dirs = {"hf": hf_dir, "ted": base, "ted int8": base + "-int8",
            "CTranslate2": base + "-ct2-float32", "CTranslate2 int8": base + "-ct2-int8"}
    if up_to_date(base):
        return dirs, bench.read_json_file(stamp_path(base))["conversions"]
    for d in dirs.values():
        shutil.rmtree(d, ignore_errors=True)
    py = bench.PYTHON
    converter = os.path.join(os.path.dirname(py), "ct2-transformers-converter")
    steps = {"build": [py, os.path.join(HERE, "make_family_model.py"), family, "--out", hf_dir],
             "export": [py, os.path.join("tools", "export_hf.py"), hf_dir, "--out", base],
             "ted quantize": [TED, "quantize", base, dirs["ted int8"]]}
    for name, q in (("CTranslate2", "float32"), ("CTranslate2 int8", "int8")):
        steps[f"ct2 convert {q}"] = [converter, "--model", hf_dir, "--output_dir", dirs[name],
                                     "--quantization", q]
    conversions = {name: measured_step(cmd) for name, cmd in steps.items()}
    bench.write_json_file(stamp_path(base), {"builder": builder_digest(),
                                             "conversions": conversions})
    return dirs, conversions


def one_run(name, dirs, sources, b, t, repeat):
    if name.startswith("ted"):
        return bench.ted_bench(TED, dirs[name], b, t, repeat)
    vocab = os.path.join(dirs[name], "shared_vocabulary.json")
    return bench.measured_json(
        [bench.PYTHON, os.path.join(HERE, "ct2_bench.py"), "--model", dirs[name], "--vocab",
         vocab, "--sources", sources[b], "--compute-type",
         "int8" if name.endswith("int8") else "float32", "--threads", t, "--new-tokens",
         bench.NEW_TOKENS, "--repeat", repeat], bench.peer_env())


def median_row(runs):
    """The rounds' runs of one runtime in one cell, as one row of medians
    (or the first failure)."""
    failed = [r for r in runs if "error" in r]
    if failed:
        return {"error": failed[0]["error"], "runs": runs}
    row = {}
    for key in ("tokens_per_s", "per_token_ms", "encode_ms", "load_ms", "peak_rss_mib",
                "startup_rss_mib", "cpu_s", "process_s"):
        values = [r[key] for r in runs if r.get(key) is not None]
        row[key] = statistics.median(values) if values else None
    row["rounds_tokens_per_s"] = [r["tokens_per_s"] for r in runs]
    row["kernels"] = runs[0].get("kernels")
    return row


def cell(dirs, sources, pair, b, t, args):
    """ted's and CTranslate2's rows of one cell, alternating over the rounds."""
    _, mine, peer = pair
    runs = {mine: [], peer: []}
    for i in range(args.rounds):
        for name in ((mine, peer) if i % 2 == 0 else (peer, mine)):
            runs[name].append(one_run(name, dirs, sources, b, t, args.repeat))
            r = runs[name][-1]
            log(f"{name}, batch {b}, {t} thread(s): "
                f"{r.get('error') or str(r['tokens_per_s']) + ' tokens/s'}")
    return {name: median_row(v) for name, v in runs.items()}


def family_rows(family, out_dir, args):
    base = os.path.join(out_dir, family)
    dirs, conversions = build(family, base)
    vocab = make_family_model.FAMILIES[family]["config"]["vocab_size"]
    os.makedirs(base + "-sources", exist_ok=True)
    sources = bench.write_sources(base + "-sources", args.batch, vocab)
    rows = []
    for pair in PAIRS:
        for b in args.batch:
            for t in args.threads:
                cells = cell(dirs, sources, pair, b, t, args)
                rows.append({"family": family, "precision": pair[0], "batch": b, "threads": t,
                             "ted": cells[pair[1]], "ct2": cells[pair[2]]})
    return {"family": family, "conversions": conversions, "rows": rows,
            "params_m": round(make_family_model.n_params(family) / 1e6)}


def madlad(out_dir, args):
    """MADLAD-400-3B's shape: written, exported to int8, loaded and decoded."""
    base = os.path.join(out_dir, "madlad-3b-int8")
    hf_dir = os.path.join(out_dir, "madlad-3b-hf")
    figures = None
    if up_to_date(base):
        figures = bench.read_json_file(stamp_path(base))["conversions"]
    else:
        for d in (base, hf_dir):
            shutil.rmtree(d, ignore_errors=True)
        py = bench.PYTHON
        figures = {"build": measured_step([py, os.path.join(HERE, "make_family_model.py"),
                                           "madlad-3b", "--out", hf_dir]),
                   "export int8": measured_step([py, os.path.join("tools", "export_hf.py"),
                                                 hf_dir, "--out", base, "--quantize", "int8"])}
        figures["hf_file_mib"] = bench.weight_file_mib(hf_dir)
        figures["ted_file_mib"] = bench.weight_file_mib(base)
        bench.write_json_file(stamp_path(base), {"builder": builder_digest(),
                                                 "conversions": figures})
    rows = [dict(bench.ted_bench(TED, base, 1, t, 1), threads=t) for t in args.madlad_threads]
    return {"conversions": figures, "rows": rows,
            "params_m": round(make_family_model.n_params("madlad-3b") / 1e6)}


def ratio(row):
    ted, ct2 = row["ted"], row["ct2"]
    if "error" in ted or "error" in ct2:
        return None
    return ted["tokens_per_s"] / ct2["tokens_per_s"]


def rss(r):
    if r.get("startup_rss_mib") is None:
        return bench.fmt(r["peak_rss_mib"], 0)
    own = r["peak_rss_mib"] - r["startup_rss_mib"]
    return f"{bench.fmt(r['peak_rss_mib'], 0)} ({bench.fmt(own, 0)})"


def table_line(row):
    ted, ct2 = row["ted"], row["ct2"]
    head = f"| {row['family']} | {row['precision']} | {row['batch']} | {row['threads']} | "
    if "error" in ted or "error" in ct2:
        return head + f"**failed: {ted.get('error') or ct2.get('error')}** | | | | | | |"
    x = ratio(row)
    mark = "**" if x < 1 else ""
    return head + " | ".join([
        bench.fmt(ted["tokens_per_s"]), bench.fmt(ct2["tokens_per_s"]),
        f"{mark}{x:.2f}×{mark}", bench.fmt(ted["load_ms"], 0), bench.fmt(ct2["load_ms"], 0),
        rss(ted), rss(ct2)]) + " |"


def conversion_line(f):
    c = f["conversions"]
    parts = [f"{name} {v['s']} s, peak RSS {bench.fmt(v['peak_rss_mib'], 0)} MiB"
             for name, v in c.items() if isinstance(v, dict)]
    return f"- {f['family']} ({f['params_m']} M parameters): " + "; ".join(parts) + "."


def header_lines(r):
    host = r["host"]
    return [f"Machine: {host['cpu']}, {host['cores']} cores; flags: "
            f"{' '.join(host['isa_flags'])}. ted {r['ted_kernels']} kernels, CTranslate2 "
            f"{r['ct2_version']}. Load average {r['load_before'][0]:.2f} before, "
            f"{r['load_after'][0]:.2f} after; {r['settings']['rounds']} round(s) of "
            f"{r['settings']['repeat']} timed run(s) a process.",
            "", f"Source {bench.SOURCE_LEN} tokens, exactly {bench.NEW_TOKENS} greedy steps."]


def report(r):
    lines = ["## Real-size families — ted against CTranslate2", ""] + header_lines(r)
    lines += ["", "| model | weights | batch | threads | ted tokens/s | CT2 tokens/s "
              "| ted ÷ CT2 | ted load ms | CT2 load ms | ted peak RSS MiB "
              "| CT2 peak RSS MiB (less imports) |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for f in r["families"]:
        lines += [table_line(row) for row in f["rows"]]
    lines += ["", "Conversions:"] + [conversion_line(f) for f in r["families"]]
    if r.get("madlad"):
        lines += [""] + madlad_lines(r["madlad"])
    return "\n".join(lines) + "\n"


def madlad_lines(m):
    c = m["conversions"]
    lines = ["### MADLAD-400-3B's shape, int8", "",
             f"{m['params_m']:,} M parameters; checkpoint written in float16 "
             f"({bench.fmt(c.get('hf_file_mib'), 0)} MiB, {c['build']['s']} s, peak RSS "
             f"{bench.fmt(c['build']['peak_rss_mib'], 0)} MiB); `tools/export_hf.py --quantize "
             f"int8`: {c['export int8']['s']} s, peak RSS "
             f"{bench.fmt(c['export int8']['peak_rss_mib'], 0)} MiB, writing "
             f"{bench.fmt(c.get('ted_file_mib'), 0)} MiB.", "",
             "| batch | threads | load ms | tokens/s | ms/step | encode ms | peak RSS MiB |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for x in m["rows"]:
        if "error" in x:
            lines.append(f"| 1 | {x['threads']} | **failed: {x['error']}** | | | | |")
            continue
        lines.append(f"| 1 | {x['threads']} | {bench.fmt(x['load_ms'], 0)} | "
                     f"{bench.fmt(x['tokens_per_s'])} | {bench.fmt(x['per_token_ms'], 1)} | "
                     f"{bench.fmt(x['encode_ms'], 0)} | {bench.fmt(x['peak_rss_mib'], 0)} |")
    return lines


def failed(r):
    rows = [row for f in r["families"] for row in f["rows"]]
    return any("error" in row["ted"] or "error" in row["ct2"] for row in rows) or \
        any("error" in x for x in (r.get("madlad") or {}).get("rows", []))


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ted", default=os.path.join(BUILD, "ted"))
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds (2)")
    parser.add_argument("--repeat", type=int, default=2, help="timed runs a process (2)")
    parser.add_argument("--batch", type=bench.int_list, default=[1, 16])
    parser.add_argument("--threads", type=bench.int_list, default=[1, 2])
    parser.add_argument("--madlad-threads", type=bench.int_list, default=[2])
    parser.add_argument("--family", action="append", choices=COMPARED)
    parser.add_argument("--quick", action="store_true",
                        help="one round of one timed run, 2 threads, no MADLAD")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--no-madlad", action="store_true")
    which.add_argument("--madlad-only", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.repeat, args.threads, args.no_madlad = 1, 1, [2], True
    args.family = args.family or list(COMPARED)
    return args


def main(argv=None):
    global TED
    args = parse(argv)
    TED = args.ted
    out_dir = os.path.join(BUILD, "bench", "families")
    os.makedirs(out_dir, exist_ok=True)
    # the version from the package's metadata: importing ctranslate2 (torch)
    # would raise this process's peak RSS, which wait4 counts for every child
    from importlib.metadata import version
    r = {"host": {**bench.cpu_info(), "cores": os.cpu_count()}, "load_before": os.getloadavg(),
         "settings": {"rounds": args.rounds, "repeat": args.repeat}, "ct2_version":
         version("ctranslate2"), "families": []}
    r["host"].pop("flags")
    if not args.madlad_only:
        r["families"] = [family_rows(f, out_dir, args) for f in args.family]
    if not args.no_madlad:
        r["madlad"] = madlad(out_dir, args)
    r["ted_kernels"] = next((row["ted"].get("kernels") for f in r["families"]
                             for row in f["rows"] if row["ted"].get("kernels")),
                            (r.get("madlad") or {"rows": [{}]})["rows"][0].get("kernels", "?"))
    r["load_after"] = os.getloadavg()
    table = report(r)
    bench.write_json_file(os.path.join(BUILD, "bench", "families.json"), r)
    with open(os.path.join(BUILD, "bench", "families.md"), "w", encoding="utf-8") as f:
        f.write(table)
    print(table)
    return 1 if failed(r) else 0


TED = None

if __name__ == "__main__":
    sys.exit(main())
