#!/usr/bin/python3
"""What quantization costs in quality: each model quantized by `ted quantize`
to int8, int4 and bf16, against its float32 weights.

    /usr/bin/python3 bench/quality.py [--ted build/ted] [--logit-sentences 100]

For the shipped models (models/toy-en-fr, models/en-fr, models/multi-en-fr-es,
English into French and Spanish) and the trained parity model
(tests/data/parity-model, exported by tools/export_torch.py), one line per
model and type:

  top1       teacher-forced top-1 agreement: `ted logits` of the first
             --logit-sentences pairs of the test set, fed the reference
             target (the parity model: the float32 translation); the
             fraction of positions whose largest logit is the same token as
             float32's
  max|dl|    the largest difference of a logit from float32's there
  same       the fraction of the test set's translations (`ted translate`)
             identical to float32's
  exact      exact match against the reference translations (a line equal
             to the reference, spaces collapsed), and its change from
             float32 in points; the parity model has no references (its
             test set is 300 seeded random sentences)

Prints the CPU (lscpu's model name and its avx2, avx512f, avx512_vnni flags)
first. Takes about a minute on two cores.
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

KINDS = ["int8", "int4", "bf16"]
PARITY_SENTENCES = 300


def run(ted, args, stdin=None):
    out = subprocess.run([ted, *args], input=stdin, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{ted} {' '.join(args[:3])}...: {out.stderr.strip()}")
    return out.stdout


def cpu_line():
    text = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    name = next((line.split(":", 1)[1].strip() for line in text.splitlines()
                 if line.startswith("Model name")), "?")
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines()
                  if line.startswith("Flags")), [])
    have = [f for f in ("avx2", "avx512f", "avx512_vnni") if f in flags]
    return f"cpu: {name}; flags: {' '.join(have) or 'none of avx2, avx512f, avx512_vnni'}"


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def normal(line):
    return " ".join(line.split())


def logits(ted, model_dir, source, target, lang_args):
    out = run(ted, ["logits", "-m", model_dir, "--source", source, "--target", target,
                    *lang_args])
    return np.array([[float(v) for v in line.split()] for line in out.splitlines()])


def measure(ted, name, fp32_dir, dirs, pairs, logit_sentences):
    """pairs: (sources, references or None, language arguments)."""
    rows = {kind: {"agree": 0, "positions": 0, "diff": 0.0, "same": 0, "exact": 0, "lines": 0}
            for kind in ["fp32", *KINDS]}
    for sources, references, lang_args in pairs:
        text = "".join(s + "\n" for s in sources)
        hyps = {kind: read_lines_text(run(ted, ["translate", "-m", d, *lang_args], text))
                for kind, d in [("fp32", fp32_dir), *dirs.items()]}
        targets = references if references else hyps["fp32"]
        for kind, lines in hyps.items():
            r = rows[kind]
            r["lines"] += len(lines)
            r["same"] += sum(a == b for a, b in zip(lines, hyps["fp32"]))
            if references:
                r["exact"] += sum(normal(a) == normal(b) for a, b in zip(lines, references))
        for source, target in list(zip(sources, targets))[:logit_sentences]:
            want = logits(ted, fp32_dir, source, target, lang_args)
            for kind, d in dirs.items():
                got = logits(ted, d, source, target, lang_args)
                r = rows[kind]
                r["agree"] += int((got.argmax(axis=1) == want.argmax(axis=1)).sum())
                r["positions"] += len(want)
                r["diff"] = max(r["diff"], float(np.abs(got - want).max()))
    has_references = any(p[1] for p in pairs)
    base = rows["fp32"]["exact"] / rows["fp32"]["lines"]
    print(f"{name}: {rows['fp32']['lines']} test lines"
          + (f", exact match fp32 {base:.2%}" if has_references else ", no references"))
    for kind in KINDS:
        r = rows[kind]
        exact = r["exact"] / r["lines"]
        line = (f"  {kind:5} top1 {r['agree'] / r['positions']:.2%} of {r['positions']}  "
                f"max|dl| {r['diff']:.3f}  same {r['same'] / r['lines']:.2%}")
        if has_references:
            line += f"  exact {exact:.2%} ({(exact - base) * 100:+.2f} points)"
        print(line, flush=True)


def read_lines_text(text):
    return text.split("\n")[:-1]


def quantize_all(ted, model_dir, tmp, name):
    dirs = {}
    for kind in KINDS:
        dirs[kind] = os.path.join(tmp, f"{name}-{kind}")
        run(ted, ["quantize", "--dtype", kind, model_dir, dirs[kind]])
    return dirs


def parity_model(tmp):
    """The trained parity model exported, and its seeded test sentences."""
    import export_torch
    import make_parity_model
    import torch
    src = os.path.join(ROOT, "tests", "data", "parity-model")
    state = torch.load(os.path.join(src, "model.pt"), map_location="cpu")
    out = os.path.join(tmp, "parity")
    export_torch.export(state, out, os.path.join(src, "vocab.src"),
                        os.path.join(src, "vocab.tgt"), make_parity_model.HEADS)
    words = [w for w in read_lines(os.path.join(out, "vocab.src")) if not w.startswith("<")]
    rng = random.Random(5)
    sentences = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 10)))
                 for _ in range(PARITY_SENTENCES)]
    return out, sentences


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ted", default=os.path.join(ROOT, "build", "ted"))
    parser.add_argument("--logit-sentences", type=int, default=100)
    args = parser.parse_args()
    print(cpu_line(), flush=True)
    models = os.path.join(ROOT, "models")
    tmp = tempfile.mkdtemp(prefix="ted-quality-")
    try:
        for name in ("toy-en-fr", "en-fr"):
            d = os.path.join(models, name)
            measure(args.ted, name, d, quantize_all(args.ted, d, tmp, name),
                    [(read_lines(os.path.join(d, "test.en")),
                      read_lines(os.path.join(d, "test.fr")), [])], args.logit_sentences)
        d = os.path.join(models, "multi-en-fr-es")
        sources = read_lines(os.path.join(d, "test.eng_Latn"))
        pairs = [(sources, read_lines(os.path.join(d, f"test.{t}")),
                  ["--source-lang", "eng_Latn", "--target-lang", t])
                 for t in ("fra_Latn", "spa_Latn")]
        measure(args.ted, "multi-en-fr-es (en>fr, en>es)", d,
                quantize_all(args.ted, d, tmp, "multi"), pairs, args.logit_sentences // 2)
        d, sentences = parity_model(tmp)
        measure(args.ted, "parity-model", d, quantize_all(args.ted, d, tmp, "parity"),
                [(sentences, None, [])], args.logit_sentences)
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
