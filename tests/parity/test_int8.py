#!/usr/bin/python3
"""int8 weights (`ted quantize`, `--quantize int8` of the exporters) against
float32 and against PyTorch.

    TED=build/ted /usr/bin/python3 tests/parity/test_int8.py

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  quality/MODEL     each shipped model (models/toy-en-fr, models/en-fr)
                    quantized by `ted quantize` translates its test set with
                    >= 98% of the lines identical to the float32 model's, and
                    an exact match against the reference at most 1 point
                    lower; the figures are printed
  logits/MODEL      `ted logits` of the int8 model against the float32
                    model's on test sentences: max abs diff <= LOGITS_VS_FP32
                    (printed)
  pytorch/toy       the toy model's int8 weights dequantized (q * scale) into
                    PyTorch's tutorial model: its float64 logits against ted
                    int8's, max abs diff <= LOGITS_VS_DEQUANTIZED. ted's only
                    departure from that computation is the run-time
                    quantization of the activations (8 bits per row)
  bytes/export-torch, bytes/export-hf
                    tools/export_torch.py and tools/export_hf.py with
                    --quantize int8 write the same model.safetensors, byte for
                    byte, as `ted quantize` of their float32 export
  quantize/refuses  `ted quantize` refuses an existing non-empty OUT_DIR, OUT_DIR
                    = IN_DIR, an int8 IN_DIR and a model whose vocabulary is in a
                    subdirectory, each with exit 1 and a message; the last
                    leaves no OUT_DIR behind
--only GROUP[,GROUP...] runs those groups alone (quality, logits, pytorch,
bytes, quantize; tests/cli/kernels.sh re-runs quality, logits and pytorch
with each kernel set).
"""
import os
import random
import shutil
import subprocess
import sys

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))

import reference_models  # noqa: E402
import ted_format  # noqa: E402
from ted_test import (TED, failures, only_groups, report, run, scratch_directory,  # noqa: E402
                      ted_logits, ted_problem)

PYTHON = os.environ.get("PYTHON", "/usr/bin/python3")  # the exporters' Python
MIN_IDENTICAL = 0.98        # of the test lines, int8 output = float32 output
MAX_EXACT_MATCH_DROP = 0.01  # exact match against the reference, float32 - int8
# Measured on this suite's sentences (|logits| up to 29): int8 vs float32
# 0.29 (toy) and 0.23 (en-fr); int8 vs PyTorch on the dequantized weights
# 0.24 (toy). Bounds about twice that.
LOGITS_VS_FP32 = 0.6
LOGITS_VS_DEQUANTIZED = 0.5
LOGIT_SENTENCES = 12
MODELS = [("toy", os.path.join(ROOT, "models", "toy-en-fr"), []),
          ("en-fr", os.path.join(ROOT, "models", "en-fr"), ["--natural"])]
# What the numbers of a kernel set change (quality, logits, pytorch), and
# what they do not (bytes: ted quantize and the exporters; quantize: refusals).
GROUPS = ["quality", "logits", "pytorch", "bytes", "quantize"]


read_lines = reference_models.read_lines


def quantize(in_dir, out_dir):
    """None when `ted quantize` succeeds, else why."""
    _, problem = ted_problem(["quantize", in_dir, out_dir])
    return problem


def exact_match(hyp_path, ref_path, flags):
    """tools/toy/evaluate.py's exact match (a fraction)."""
    out = subprocess.run([PYTHON, os.path.join(ROOT, "tools", "toy", "evaluate.py"), *flags,
                          hyp_path, ref_path], capture_output=True, text=True, check=True)
    summary = out.stdout.strip().splitlines()[-1]
    return float(summary.split("exact_match=")[1].split()[0].rstrip(","))


def translate(model_dir, source, out_path):
    with open(source, encoding="utf-8") as f:
        out, problem = ted_problem(["translate", "-m", model_dir], f.read())
    if out is not None:
        with open(out_path, "w", encoding="utf-8") as f:
            f.write(out)
    return problem


def check_quality(name, model_dir, int8_dir, flags, tmp):
    hyps = {}
    for kind, path in (("fp32", model_dir), ("int8", int8_dir)):
        hyps[kind] = os.path.join(tmp, f"{name}-{kind}.out")
        problem = translate(path, os.path.join(model_dir, "test.en"), hyps[kind])
        if problem:
            return report(f"quality/{name}", problem)
    fp32, int8 = read_lines(hyps["fp32"]), read_lines(hyps["int8"])
    if len(fp32) != len(int8) or not fp32:
        return report(f"quality/{name}", f"{len(int8)} int8 lines for {len(fp32)} fp32 lines")
    identical = sum(a == b for a, b in zip(fp32, int8)) / len(fp32)
    reference = os.path.join(model_dir, "test.fr")
    match = {kind: exact_match(path, reference, flags) for kind, path in hyps.items()}
    drop = match["fp32"] - match["int8"]
    detail = (f"{identical:.2%} of {len(fp32)} lines identical to fp32; exact match fp32 "
              f"{match['fp32']:.2%}, int8 {match['int8']:.2%} (drop {drop * 100:.2f} points)")
    if identical < MIN_IDENTICAL or drop > MAX_EXACT_MATCH_DROP:
        return report(f"quality/{name}", detail)
    report(f"quality/{name}", detail=detail)


def dequantized_state(int8_dir):
    """The int8 model's weights as float32 tensors: q * scale per row."""
    arrays, _ = reference_models.stored_arrays(int8_dir)
    state = {}
    for name, array in arrays.items():
        if name.endswith(".scale"):
            continue
        if array.dtype == np.int8:
            scale = arrays[name + ".scale"]
            array = array.astype(np.float32) * scale[:, None]
        state[name] = torch.from_numpy(np.array(array, dtype=np.float32))
    return state


def check_pytorch(model_dir, int8_dir):
    """The toy model (tutorial layout, whitespace tokens, lowercase)."""
    state = dequantized_state(int8_dir)
    try:
        model = reference_models.toy_model(state)
    except ValueError as e:
        return report("pytorch/toy", str(e))
    try:
        worst, worst_fp32 = reference_models.worst_vs_toy(
            model, model_dir, LOGIT_SENTENCES, lambda s, t: ted_logits(int8_dir, s, t),
            lambda s, t: ted_logits(model_dir, s, t))
    except ValueError as e:
        return report("pytorch/toy", str(e))
    detail = (f"ted int8 vs PyTorch on the dequantized weights: max abs diff {worst:.3g} "
              f"(bound {LOGITS_VS_DEQUANTIZED}); ted fp32 vs the same: {worst_fp32:.3g}")
    report("pytorch/toy", None if worst <= LOGITS_VS_DEQUANTIZED else detail,
           detail if worst <= LOGITS_VS_DEQUANTIZED else "")


def same_bytes(name, python_dir, c_dir):
    a = open(os.path.join(python_dir, "model.safetensors"), "rb").read()
    b = open(os.path.join(c_dir, "model.safetensors"), "rb").read()
    if a != b:
        first = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
        return report(name, f"model.safetensors differ ({len(a)} and {len(b)} bytes, first at "
                            f"byte {first})")
    report(name, detail=f"{len(a)} bytes identical")


def check_export_torch(model_dir, c_dir, tmp):
    """The toy's weights as a state_dict, exported with --quantize int8."""
    tensors = ted_format.read_tensors(os.path.join(model_dir, "model.safetensors"))
    checkpoint = os.path.join(tmp, "toy.pt")
    torch.save({k: torch.from_numpy(v) for k, v in tensors.items()}, checkpoint)
    out_dir = os.path.join(tmp, "toy-exported-int8")
    status, _, err = run([PYTHON, os.path.join(ROOT, "tools", "export_torch.py"),
                                 checkpoint, "--src-vocab", os.path.join(model_dir, "vocab.src"),
                                 "--tgt-vocab", os.path.join(model_dir, "vocab.tgt"),
                                 "--heads", "4", "--lowercase", "--quantize", "int8",
                                 "--out", out_dir])
    if status != 0:
        return report("bytes/export-torch", f"export_torch.py exited {status}: {err.strip()}")
    same_bytes("bytes/export-torch", out_dir, c_dir)


def check_export_hf(tmp):
    """A random MarianMTModel (tests/parity/test_marian.py's first), exported in
    float32 and quantized by ted, and exported with --quantize int8."""
    try:
        import sentencepiece  # noqa: F401
        import transformers
    except ImportError as e:
        return report("bytes/export-hf", f"{e.name} is not installed (make venv)")
    transformers.logging.set_verbosity_error()
    rng = random.Random(5)
    tok = reference_models.write_tokenizer(os.path.join(tmp, "tok"), tmp, "shared", rng)
    model = reference_models.build_model(reference_models.CONFIGS[0], tok, 7)
    hf_dir = os.path.join(tmp, "hf")
    model.save_pretrained(hf_dir, safe_serialization=True)
    tok.save_pretrained(hf_dir)
    exporter = os.path.join(ROOT, "tools", "export_hf.py")
    dirs = {}
    for kind, extra in (("fp32", []), ("int8", ["--quantize", "int8"])):
        dirs[kind] = os.path.join(tmp, f"hf-ted-{kind}")
        status, _, err = run([PYTHON, exporter, hf_dir, "--out", dirs[kind], *extra])
        if status != 0:
            return report("bytes/export-hf", f"export_hf.py {extra} exited {status}: "
                                             f"{err.strip()}")
    c_dir = os.path.join(tmp, "hf-ted-quantized")
    problem = quantize(dirs["fp32"], c_dir)
    if problem:
        return report("bytes/export-hf", problem)
    same_bytes("bytes/export-hf", dirs["int8"], c_dir)


def check_refusals(model_dir, int8_dir, tmp):
    cases = [("non-empty", [model_dir, int8_dir], "exists and is not empty"),
             ("same-dir", [model_dir, model_dir], "is the input directory"),
             ("already-int8", [int8_dir, os.path.join(tmp, "twice")], "is I8; ted quantize "
                                                                        "reads F32 weights")]
    # a vocabulary in a subdirectory: the model loads, but OUT_DIR could not
    # hold it; refused before anything is written (no half model left)
    nested = os.path.join(tmp, "nested-vocab")
    shutil.copytree(model_dir, nested)
    os.mkdir(os.path.join(nested, "sub"))
    os.rename(os.path.join(nested, "vocab.src"), os.path.join(nested, "sub", "vocab.src"))
    with open(os.path.join(nested, "config.yaml")) as f:
        config = f.read().replace("src_vocab: vocab.src", "src_vocab: sub/vocab.src")
    with open(os.path.join(nested, "config.yaml"), "w") as f:
        f.write(config)
    nested_out = os.path.join(tmp, "nested-int8")
    cases.append(("nested-file", [nested, nested_out], "'sub/vocab.src' is not a file name"))
    for name, args, message in cases:
        status, _, err = run([TED, "quantize", *args])
        if status != 1 or message not in err or len(err.strip().splitlines()) != 1:
            return report(f"quantize/refuses-{name}", f"exit {status}: {err.strip()[:300]}")
    if os.path.exists(nested_out):
        return report("quantize/refuses-nested-file",
                      f"{nested_out} was left behind: {sorted(os.listdir(nested_out))}")
    report("quantize/refuses", detail=f"{len(cases)} cases, one message each, nothing written")


def main():
    only = only_groups("int8 weights against float32 and PyTorch", GROUPS)
    torch.set_num_threads(1)
    with scratch_directory("ted-int8-") as tmp:
        int8_dirs = {}
        for name, model_dir, flags in MODELS:
            int8_dirs[name] = os.path.join(tmp, f"{name}-int8")
            problem = quantize(model_dir, int8_dirs[name])
            if problem:
                report(f"quality/{name}", problem)
                continue
            if "quality" in only:
                check_quality(name, model_dir, int8_dirs[name], flags, tmp)
            if "logits" in only:
                reference_models.check_logits_vs_fp32(f"logits/{name}", "int8", model_dir,
                                                      int8_dirs[name], LOGIT_SENTENCES,
                                                      LOGITS_VS_FP32)
        toy_dir, toy_int8 = MODELS[0][1], int8_dirs["toy"]
        if os.path.isdir(toy_int8):
            if "pytorch" in only:
                check_pytorch(toy_dir, toy_int8)
            if "bytes" in only:
                check_export_torch(toy_dir, toy_int8, tmp)
            if "quantize" in only:
                check_refusals(toy_dir, toy_int8, tmp)
        if "bytes" in only:
            check_export_hf(tmp)


if __name__ == "__main__":
    main()
    sys.exit(1 if failures() else 0)
