#!/usr/bin/python3
"""int4 weights (`ted quantize --dtype int4`) against float32 and against
PyTorch.

    TED=build/ted /usr/bin/python3 tests/parity/test_int4.py

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  layout/toy        the toy model's int4 file read here as docs/model-format.md
                    describes it (U8 (rows, groups * 16), byte k of a group
                    holding columns k and k + 16 as q + 8; F32 NAME.scale
                    (rows, groups)): every Linear weight but the output
                    layer's is U8, within half a step (scale / 2) of the
                    float weight, each scale max |group| / 7; the embeddings
                    and the output layer are I8
  quality/MODEL     each shipped model (models/toy-en-fr, models/en-fr)
                    quantized to int4: teacher-forced top-1 agreement with
                    float32 (`ted logits` on test pairs) >= MIN_TOP1, test
                    set translations identical to float32's >= MIN_IDENTICAL,
                    logits within LOGITS_VS_FP32 of float32's (figures printed)
  pytorch/toy       the toy model's int4 weights dequantized (q * scale) into
                    PyTorch's tutorial model: its float64 logits against ted
                    int4's, max abs diff <= LOGITS_VS_DEQUANTIZED; ted's only
                    departure from that computation is the run-time
                    quantization of the activations (8 bits per row), as for
                    int8
  quantize/refuses  `ted quantize --dtype int5` is refused naming the three types;
                    an int4 file without a matrix's scales, with a negative scale or
                    with a U8 bias is refused, exit 1 and one line naming the tensor
--only GROUP[,GROUP...] runs those groups alone (layout, quality, pytorch,
quantize; tests/cli/kernels.sh re-runs quality and pytorch with each kernel
set).
"""
import json
import os
import shutil
import struct
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

# Measured (bench/quality.py, docs/performance.md#int4-weights): top-1
# agreement 99.9-100%, identical translations 99.7-99.9%, logits within
# 2.3-2.5 of float32's, within 0.25 of PyTorch on the dequantized weights.
# A broken int4 (wrong nibble order or scales) agrees on a few percent.
MIN_TOP1 = 0.97
MIN_IDENTICAL = 0.95
# int4's step is max |group| / 7 against int8's max |row| / 127: int8's
# bound of 0.6 (tests/parity/test_int8.py) times about 10.
LOGITS_VS_FP32 = 6.0
LOGITS_VS_DEQUANTIZED = 0.5
LOGIT_SENTENCES = 40
GROUP = 32
MODELS = [("toy", os.path.join(ROOT, "models", "toy-en-fr")),
          ("en-fr", os.path.join(ROOT, "models", "en-fr"))]
GROUPS = ["layout", "quality", "pytorch", "quantize"]


def unpack_int4(packed, cols):
    """U8 (rows, groups * 16) -> int values q (rows, cols), q in [-8, 7]."""
    rows, groups = packed.shape[0], packed.shape[1] // (GROUP // 2)
    g = packed.reshape(rows, groups, GROUP // 2).astype(np.int16)
    q = np.concatenate([g & 15, g >> 4], axis=2) - 8
    return q.reshape(rows, groups * GROUP)[:, :cols]


def dequantized_state(int4_dir, fp32_arrays):
    """The int4 model's weights as float32 tensors: q * scale."""
    arrays, dtypes = reference_models.stored_arrays(int4_dir)
    state = {}
    for name, array in arrays.items():
        if name.endswith(".scale"):
            continue
        if dtypes[name] == "U8":
            cols = fp32_arrays[name].shape[1]
            scale = np.repeat(arrays[name + ".scale"], GROUP, axis=1)[:, :cols]
            array = unpack_int4(array, cols) * scale
        elif dtypes[name] == "I8":
            array = array.astype(np.float32) * arrays[name + ".scale"][:, None]
        state[name] = torch.from_numpy(np.array(array, dtype=np.float32))
    return state


def check_layout(model_dir, int4_dir):
    fp32, _ = reference_models.stored_arrays(model_dir)
    arrays, dtypes = reference_models.stored_arrays(int4_dir)
    matrices = [n for n, a in fp32.items() if a.ndim == 2]
    int4 = [n for n in matrices if dtypes.get(n) == "U8"]
    int8 = [n for n in matrices if dtypes.get(n) == "I8"]
    kept = sorted(set(matrices) - set(int4))
    if any("emb" not in n and n != "generator.weight" for n in kept) or set(kept) != set(int8):
        return report("layout/toy", f"int8 matrices {kept}, expected the embeddings and "
                                    "generator.weight only")
    worst = 0.0
    for name in int4:
        w = fp32[name]
        rows, cols = w.shape
        groups = -(-cols // GROUP)
        packed, scale = arrays[name], arrays[name + ".scale"]
        if packed.shape != (rows, groups * GROUP // 2) or scale.shape != (rows, groups):
            return report("layout/toy", f"{name}: shapes {packed.shape} and {scale.shape}")
        padded = np.zeros((rows, groups * GROUP), np.float32)
        padded[:, :cols] = w
        want_scale = np.abs(padded.reshape(rows, groups, GROUP)).max(axis=2) / 7
        if not np.allclose(scale, want_scale, rtol=1e-6, atol=0):
            return report("layout/toy", f"{name}.scale is not max |group| / 7")
        q = unpack_int4(packed, groups * GROUP)
        if np.abs(q).max() > 7 or np.any(q[:, cols:] != 0):
            return report("layout/toy", f"{name}: values past [-7, 7] or padding not zero")
        step = np.repeat(scale, GROUP, axis=1)[:, :cols]
        error = np.abs(q[:, :cols] * step - w)
        if np.any(error > step / 2 * (1 + 1e-5) + 1e-12):
            return report("layout/toy", f"{name}: a value beyond half a step of its weight")
        worst = max(worst, float((error / np.maximum(step, 1e-30)).max()))
    report("layout/toy", detail=f"{len(int4)} int4 matrices, {len(int8)} int8; largest error "
                                f"{worst:.3f} of a step")


def check_quality(name, model_dir, int4_dir):
    test_en = reference_models.read_lines(os.path.join(model_dir, "test.en"))
    text = "".join(s + "\n" for s in test_en)
    outs = {}
    for kind, d in (("fp32", model_dir), ("int4", int4_dir)):
        outs[kind], problem = ted_problem(["translate", "-m", d], text)
        if problem:
            return report(f"quality/{name}", problem)
    fp32, int4 = outs["fp32"].split("\n")[:-1], outs["int4"].split("\n")[:-1]
    if len(fp32) != len(int4) or not fp32:
        return report(f"quality/{name}", f"{len(int4)} int4 lines for {len(fp32)} fp32 lines")
    identical = sum(a == b for a, b in zip(fp32, int4)) / len(fp32)
    try:
        logits = reference_models.logits_vs_fp32(model_dir, int4_dir, LOGIT_SENTENCES)
    except ValueError as e:
        return report(f"quality/{name}", str(e))
    agree = sum(int((want.argmax(axis=1) == got.argmax(axis=1)).sum()) for want, got in logits)
    positions = sum(len(want) for want, _ in logits)
    worst = float(np.max([np.abs(got - want).max() for want, got in logits]))
    top1 = agree / positions
    detail = (f"top-1 agreement {top1:.2%} of {positions} positions (bound {MIN_TOP1:.0%}); "
              f"{identical:.2%} of {len(fp32)} translations identical (bound "
              f"{MIN_IDENTICAL:.0%}); logits max abs diff {worst:.3g} (bound {LOGITS_VS_FP32})")
    good = top1 >= MIN_TOP1 and identical >= MIN_IDENTICAL and worst <= LOGITS_VS_FP32
    report(f"quality/{name}", None if good else detail, detail if good else "")


def check_pytorch(model_dir, int4_dir):
    """The toy model (tutorial layout, whitespace tokens, lowercase)."""
    fp32, _ = reference_models.stored_arrays(model_dir)
    state = dequantized_state(int4_dir, fp32)
    try:
        model = reference_models.toy_model(state)
    except ValueError as e:
        return report("pytorch/toy", str(e))
    try:
        worst, = reference_models.worst_vs_toy(model, model_dir, LOGIT_SENTENCES // 2,
                                               lambda s, t: ted_logits(int4_dir, s, t))
    except ValueError as e:
        return report("pytorch/toy", str(e))
    detail = (f"ted int4 vs PyTorch on the dequantized weights: max abs diff {worst:.3g} "
              f"(bound {LOGITS_VS_DEQUANTIZED})")
    good = worst <= LOGITS_VS_DEQUANTIZED
    report("pytorch/toy", None if good else detail, detail if good else "")


def broken_copy(int4_dir, out_dir, change):
    """A copy of int4_dir whose header and data `change(header, data)`
    edits in place; returns what change returns."""
    shutil.copytree(int4_dir, out_dir)
    header, start, data = ted_format.read_safetensors(os.path.join(int4_dir,
                                                                   "model.safetensors"))
    data = bytearray(data[start:])
    what = change(header, data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)
    with open(os.path.join(out_dir, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(data))
    return what


def first_u8(header):
    return next(n for n, e in header.items() if n != "__metadata__" and e["dtype"] == "U8")


def drop_scale(header, data):
    name = first_u8(header)
    del header[name + ".scale"]
    return f"'{name}' is U8 (int4) but the file has no '{name}.scale'"


def negative_scale(header, data):
    name = first_u8(header) + ".scale"
    begin = header[name]["data_offsets"][0]
    data[begin:begin + 4] = struct.pack("<f", -1.0)
    return f"'{name}' holds -1 at [0]; scales must be finite and not negative"


def u8_bias(header, data):
    name = next(n for n, e in header.items() if n.endswith("linear1.bias"))
    header[name]["dtype"] = "U8"
    header[name]["shape"] = [header[name]["shape"][0] * 4]
    return f"tensor '{name}' has shape [{header[name]['shape'][0]}]"


def check_refusals(int4_dir, tmp):
    status, _, err = run([TED, "quantize", "--dtype", "int5", int4_dir,
                          os.path.join(tmp, "never")])
    problems = []
    if status != 1 or "expected int8, int4 or bf16" not in err:
        problems.append(f"--dtype int5: exit {status}, {err.strip()!r}")
    for change in (drop_scale, negative_scale, u8_bias):
        broken = os.path.join(tmp, change.__name__)
        want = broken_copy(int4_dir, broken, change)
        status, _, err = run([TED, "translate", "-m", broken], "a\n")
        if status != 1 or want not in err or len(err.strip().splitlines()) != 1:
            problems.append(f"{change.__name__}: exit {status}, {err.strip()!r}, "
                            f"expected {want!r}")
    report("quantize/refuses", "; ".join(problems) if problems else None)


def main():
    only = only_groups(__doc__.split("\n")[0], GROUPS)
    with scratch_directory("ted-int4-") as tmp:
        int4_dirs = {}
        for name, model_dir in MODELS:
            int4_dirs[name] = os.path.join(tmp, f"{name}-int4")
            _, problem = ted_problem(["quantize", "--dtype", "int4", model_dir, int4_dirs[name]])
            if problem:
                report(f"quantize/{name}", problem)
                return 1
        toy_dir = MODELS[0][1]
        if "layout" in only:
            check_layout(toy_dir, int4_dirs["toy"])
        if "quality" in only:
            for name, model_dir in MODELS:
                check_quality(name, model_dir, int4_dirs[name])
        if "pytorch" in only:
            check_pytorch(toy_dir, int4_dirs["toy"])
        if "quantize" in only:
            check_refusals(int4_dirs["toy"], tmp)
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())
