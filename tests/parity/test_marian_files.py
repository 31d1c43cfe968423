#!/usr/bin/python3
"""ted's reader of Marian's model files (src/io/marian_file.c, reached through
BUILD/marian-check) against the files NumPy and Marian itself (pymarian 1.12.42's
`convert`, marian-conv) write, and NumPy's own reading of the values.

    BUILD=build .venv/bin/python tests/parity/test_marian_files.py

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  marian-files/numpy-npz      numpy.savez's archive (zip64 local headers):
                              every array's name, dtype, shape and bytes as
                              numpy.load reads them, the config text
  marian-files/marian-npz     the same archive rewritten by Marian's cnpy
                              (pymarian convert -t x.npz)
  marian-files/bin-float32    pymarian convert's .bin: the same values,
                              each item at a multiple of 256, the config
                              as Marian wrote it (same YAML)
  marian-files/bin-intgemm8   convert --gemm-type intgemm8 (type 0x10001):
                              each quantized matrix transposed, equal to
                              NumPy's clip(rint(W.T * q), -127, 127) with
                              q = 127 / max|W| in float32, q read equal;
                              the float items unchanged
  marian-files/bin-browsermt  a .bin in browsermt's layout (0x4101, an int8
                              Wemb not transposed, a _QuantMultA item),
                              written here after marian-dev's
                              src/common/binary.cpp saveItems
  marian-files/refuse-*       one line naming the file and member or item:
                              numpy.savez_compressed, an intgemm8 layout
                              packed for AVX2, FBGEMM packed16, a .bin and
                              a .npz cut short, a flipped byte in a member
"""
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))

from marian_files import marian_bin  # noqa: E402
from ted_test import failures, report, run  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
CHECK = os.path.join(BUILD, "marian-check")
NAME = "marian-files"
YML = "type: transformer\ndim-emb: 32\ntied-embeddings-all: true\n"
DTYPES = {"F32": np.float32, "F16": np.float16, "I8": np.int8, "U8": np.uint8}


def model_arrays():
    rng = np.random.default_rng(45)
    return {
        "Wemb": rng.standard_normal((40, 32)).astype(np.float32),
        "encoder_l1_self_Wq": rng.standard_normal((32, 32)).astype(np.float32),
        "encoder_l1_self_bq": rng.standard_normal((1, 32)).astype(np.float32),
        "encoder_l1_ffn_W1": rng.standard_normal((32, 48)).astype(np.float32),
        "decoder_l1_rnn_Wf": rng.standard_normal((32, 32)).astype(np.float32),
        "decoder_ff_logit_out_b": rng.standard_normal((1, 40)).astype(np.float32),
        "special:model.yml": np.frombuffer(YML.encode() + b"\0", dtype=np.int8),
    }


def read(path):
    """(container, {name: (dtype, shape, type, transposed, mult, offset, bytes)},
    yml) as marian-check prints them, or (None, message, None) on a refusal."""
    status, out, err = run([CHECK, path])
    if status != 0:
        return None, err.strip(), None
    lines = out.split("\n")
    tensors = {}
    i = 1
    while not lines[i].startswith("yml "):
        name, dtype, shape, mtype, tr, mult, off, size = lines[i].split("\t")
        tensors[name] = (dtype, tuple(int(d) for d in shape.split(",")), int(mtype, 16),
                         tr == "1", np.float32(float(mult)), int(off), int(size))
        i += 1
    yml = "\n".join(lines[i + 1:])
    return lines[0], tensors, yml


def values(path, entry):
    dtype, shape, _, transposed, _, offset, size = entry
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read(size)
    a = np.frombuffer(data, dtype=DTYPES[dtype])
    return a.reshape(shape[::-1] if transposed else shape)


def same_arrays(path, tensors, arrays, skip=()):
    """None when every array is read with its name, dtype, shape and bytes."""
    if set(tensors) != set(arrays):
        return f"names {sorted(tensors)} != {sorted(arrays)}"
    for name, a in arrays.items():
        if name in skip:
            continue
        got = values(path, tensors[name])
        if got.dtype != a.dtype or got.shape != a.shape or got.tobytes() != a.tobytes():
            return f"{name}: read {got.dtype} {got.shape}, NumPy has {a.dtype} {a.shape}"
    return None


def convert(src, dst, *extra):
    status, out, err = run([sys.executable, "-m", "pymarian", "convert", "-f", src, "-t", dst,
                            *extra])
    if status != 0:
        raise RuntimeError(f"pymarian convert {extra}: {err[-400:]}")


def check_npz(path, check_name, arrays):
    container, tensors, yml = read(path)
    if container is None:
        return report(check_name, f"refused: {tensors}")
    problem = same_arrays(path, tensors, arrays, skip=("special:model.yml",))
    if problem is None and yaml.safe_load(yml) != yaml.safe_load(YML):
        problem = f"config {yml!r} != {YML!r}"
    if problem is None and container != "npz":
        problem = f"read as {container}"
    report(check_name, problem, f"{len(tensors)} arrays")


def check_bin_float(path, arrays):
    container, tensors, yml = read(path)
    if container is None:
        return report(f"{NAME}/bin-float32", f"refused: {tensors}")
    problem = same_arrays(path, tensors, arrays, skip=("special:model.yml",))
    odd = [n for n, t in tensors.items() if t[5] % 256]
    if problem is None and odd:
        problem = f"items not at a multiple of 256: {odd}"
    if problem is None and yaml.safe_load(yml) != yaml.safe_load(YML):
        problem = f"config {yml!r} != {YML!r}"
    if problem is None and container != "bin":
        problem = f"read as {container}"
    report(f"{NAME}/bin-float32", problem, f"{len(tensors)} items")


def quantize(w):
    q = np.float32(127) / np.abs(w).max()
    return np.clip(np.rint(w * q), -127, 127).astype(np.int8), q


def check_intgemm8(path, arrays):
    container, tensors, _ = read(path)
    if container is None:
        return report(f"{NAME}/bin-intgemm8", f"refused: {tensors}")
    problem, quantized = None, 0
    for name, a in arrays.items():
        t = tensors[name]
        if t[2] != 0x10001:
            if name != "special:model.yml" and values(path, t).tobytes() != a.tobytes():
                problem = f"{name}: float values differ"
            continue
        quantized += 1
        want, q = quantize(a)
        got = values(path, t)
        if not t[3] or t[0] != "I8" or t[4] != q or not np.array_equal(got, want.T):
            problem = (f"{name}: transposed {t[3]}, multiplier {t[4]} (NumPy {q}), "
                       f"{int((got != want.T).sum())} values differ")
    if problem is None and quantized < 3:
        problem = f"only {quantized} items of type 0x10001"
    report(f"{NAME}/bin-intgemm8", problem, f"{quantized} matrices")


def write_bin(path, items):
    with open(path, "wb") as f:
        f.write(marian_bin(items))


def check_browsermt(path, arrays):
    emb, qe = quantize(arrays["Wemb"])
    wq, qq = quantize(arrays["encoder_l1_self_Wq"])
    items = [("Wemb", 0x4101, emb.shape, emb.tobytes() + struct.pack("<f", qe)),
             ("encoder_l1_self_Wq", 0x4101, wq.shape, wq.T.tobytes() + struct.pack("<f", qq)),
             ("encoder_l1_self_Wq_QuantMultA", 0x404, (1,), struct.pack("<f", 9.5))]
    write_bin(path, items)
    container, tensors, _ = read(path)
    if container is None:
        return report(f"{NAME}/bin-browsermt", f"refused: {tensors}")
    e, w, a = (tensors[n] for n in (items[0][0], items[1][0], items[2][0]))
    problem = None
    if e[3] or e[4] != qe or not np.array_equal(values(path, e), emb):
        problem = f"Wemb: transposed {e[3]}, multiplier {e[4]} (wrote {qe})"
    elif not w[3] or w[4] != qq or not np.array_equal(values(path, w), wq.T):
        problem = f"Wq: transposed {w[3]}, multiplier {w[4]} (wrote {qq})"
    elif values(path, a)[0] != np.float32(9.5):
        problem = "the _QuantMultA value"
    report(f"{NAME}/bin-browsermt", problem)


def check_refused(check_name, path, *words):
    container, message, _ = read(path)
    if container is not None:
        return report(check_name, "read, not refused")
    lines = message.split("\n")
    missing = [w for w in (path,) + words if w not in message]
    report(check_name, f"message {message!r} lacks {missing}" if missing or len(lines) != 1
           else None, message)


def cut(src, dst, keep):
    with open(src, "rb") as f:
        data = f.read()
    with open(dst, "wb") as f:
        f.write(keep(data))


def main():
    arrays = model_arrays()
    with tempfile.TemporaryDirectory() as tmp:
        npz = os.path.join(tmp, "model.npz")
        np.savez(npz, **arrays)
        mixed = dict(arrays, half=np.arange(6, dtype=np.float16).reshape(2, 3),
                     bytes=np.arange(5, dtype=np.uint8), cube=np.ones((2, 3, 4), np.float32))
        npz_mixed = os.path.join(tmp, "mixed.npz")
        np.savez(npz_mixed, **mixed)
        check_npz(npz_mixed, f"{NAME}/numpy-npz", mixed)
        files = {k: os.path.join(tmp, k) for k in
                 ("cnpy.npz", "f32.bin", "i8.bin", "avx2.bin", "p16.bin", "alphas.bin")}
        convert(npz, files["cnpy.npz"])
        convert(npz, files["f32.bin"])
        convert(npz, files["i8.bin"], "--gemm-type", "intgemm8")
        convert(npz, files["avx2.bin"], "--gemm-type", "intgemm8avx2")
        convert(npz, files["p16.bin"], "--gemm-type", "packed16")
        check_npz(files["cnpy.npz"], f"{NAME}/marian-npz", arrays)
        check_bin_float(files["f32.bin"], arrays)
        check_intgemm8(files["i8.bin"], arrays)
        check_browsermt(files["alphas.bin"], arrays)
        refuse(tmp, npz, files)
    sys.exit(1 if failures() else 0)


def refuse(tmp, npz, files):
    compressed = os.path.join(tmp, "compressed.npz")
    np.savez_compressed(compressed, Wemb=np.ones((4, 4), np.float32))
    check_refused(f"{NAME}/refuse-compressed", compressed, "Wemb.npy", "compressed")
    check_refused(f"{NAME}/refuse-avx2", files["avx2.bin"], "0x11001", "instruction set")
    check_refused(f"{NAME}/refuse-packed16", files["p16.bin"], "0x802", "FBGEMM")
    short_bin = os.path.join(tmp, "short.bin")
    cut(files["f32.bin"], short_bin, lambda d: d[:len(d) - 300])
    check_refused(f"{NAME}/refuse-short-bin", short_bin, "past the end")
    short_npz = os.path.join(tmp, "short.npz")
    cut(npz, short_npz, lambda d: d[:len(d) * 2 // 3])
    check_refused(f"{NAME}/refuse-short-npz", short_npz, "end-of-central-directory")
    flipped = os.path.join(tmp, "flipped.npz")
    cut(npz, flipped, lambda d: d[:1000] + bytes([d[1000] ^ 1]) + d[1001:])
    check_refused(f"{NAME}/refuse-flipped-npz", flipped, "CRC-32", "corrupted")


if __name__ == "__main__":
    main()
