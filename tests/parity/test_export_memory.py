#!/usr/bin/python3
"""tools/export_hf.py holds one tensor at a time: the peak resident memory
of the export (float32, and --quantize int8) follows the largest tensor,
not the model.

    .venv/bin/python tests/parity/test_export_memory.py

A MarianMTModel-shaped checkpoint (d_model 1024, d_ff 4096, 6+6 layers,
32 000 tokens: 209 M weights, 418 MB of F16) is written as model.safetensors
with NumPy alone, next to a small SentencePiece model and a vocab.json. The
exporter runs as a child process, with --quantize int8 and without; its peak
RSS (getrusage of the child) must stay under what a Python that has imported
the exporter takes (measured first, the same way) plus half the model's
float32 size (418 MB). Holding
the model's float32 values, or the mapped input's pages, would take more
than that; the largest tensor (the 32 000 x 1024 embedding: 131 MB as
float32, its F16 read and its int8 values) takes less. The int8 tensors
written are then compared with NumPy's quantization of the F16 input
(read back with the safetensors package).
EXPORTER=PATH runs another exporter (the tools directory it sits in).
TED_PARITY_KEEP=1 keeps the temporary directory (printed on stderr).
"""
import json
import os
import random
import shutil
import struct
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))

from ted_test import failures, fail, report, scratch_directory  # noqa: E402

EXPORTER = os.environ.get("EXPORTER", os.path.join(ROOT, "tools", "export_hf.py"))
PYTHON = os.environ.get("PYTHON", "/usr/bin/python3")  # the exporter's Python
D_MODEL, D_FF, LAYERS, VOCAB = 1024, 4096, 6, 32000


def shapes():
    """(name, shape) of the checkpoint, as MarianMTModel's save_pretrained names them."""
    out = [("model.shared.weight", (VOCAB, D_MODEL)), ("final_logits_bias", (1, VOCAB))]
    for stack in ("encoder", "decoder"):
        blocks = ("self_attn", "encoder_attn") if stack == "decoder" else ("self_attn",)
        for i in range(LAYERS):
            p = f"model.{stack}.layers.{i}"
            for block in blocks:
                for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
                    out += [(f"{p}.{block}.{proj}.weight", (D_MODEL, D_MODEL)),
                            (f"{p}.{block}.{proj}.bias", (D_MODEL,))]
                out += [(f"{p}.{block}_layer_norm.weight", (D_MODEL,)),
                        (f"{p}.{block}_layer_norm.bias", (D_MODEL,))]
            out += [(f"{p}.fc1.weight", (D_FF, D_MODEL)), (f"{p}.fc1.bias", (D_FF,)),
                    (f"{p}.fc2.weight", (D_MODEL, D_FF)), (f"{p}.fc2.bias", (D_MODEL,)),
                    (f"{p}.final_layer_norm.weight", (D_MODEL,)),
                    (f"{p}.final_layer_norm.bias", (D_MODEL,))]
    return out


def write_checkpoint(path):
    """model.safetensors of F16 values (a random pattern of 2^20 values, a
    different start for each tensor); returns the float16 byte count."""
    pattern = (np.random.default_rng(7).standard_normal(1 << 20) * 0.05).astype("<f2")
    header, offset = {}, 0
    for name, shape in shapes():
        size = 2 * int(np.prod(shape))
        header[name] = {"dtype": "F16", "shape": list(shape),
                        "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for index, (name, shape) in enumerate(shapes()):
            count = int(np.prod(shape))
            f.write(np.roll(np.resize(pattern, count), index).tobytes())
    return offset


def write_tokenizer(hf_dir):
    import sentencepiece

    rng = random.Random(3)
    words = ["".join(rng.choice("abcdefghijklmnop") for _ in range(rng.randint(2, 8)))
             for _ in range(800)]
    prefix = os.path.join(hf_dir, "spm")
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(" ".join(rng.choice(words) for _ in range(10))
                               for _ in range(1500)),
        model_prefix=prefix, vocab_size=300, bos_id=-1, eos_id=-1, unk_id=0, pad_id=-1,
        minloglevel=2)
    for name in ("source.spm", "target.spm"):
        os.link(prefix + ".model", os.path.join(hf_dir, name))
    processor = sentencepiece.SentencePieceProcessor(model_file=prefix + ".model")
    tokens = ["</s>", "<unk>"] + [processor.id_to_piece(i) for i in range(1, len(processor))]
    tokens += [f"\u2581w{i}" for i in range(len(tokens), VOCAB - 1)] + ["<pad>"]
    with open(os.path.join(hf_dir, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump({token: i for i, token in enumerate(tokens)}, f)
    config = dict(model_type="marian", architectures=["MarianMTModel"], vocab_size=VOCAB,
                  d_model=D_MODEL, encoder_layers=LAYERS, decoder_layers=LAYERS,
                  encoder_attention_heads=16, decoder_attention_heads=16,
                  encoder_ffn_dim=D_FF, decoder_ffn_dim=D_FF, activation_function="swish",
                  max_position_embeddings=512, pad_token_id=VOCAB - 1, eos_token_id=0,
                  decoder_start_token_id=VOCAB - 1)
    with open(os.path.join(hf_dir, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f)


def child_peak(args):
    """(exit status, stderr, peak RSS in bytes) of `args`, run alone."""
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.execv(args[0], args)
    _, status, usage = os.wait4(pid, 0)
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss * 1024


def reference_int8(f16):
    """NumPy's symmetric per-row int8 quantization of an F16 matrix."""
    w = f16.astype(np.float32)
    scale = np.abs(w).max(axis=1) / np.float32(127)
    q = np.rint(w / np.where(scale > 0, scale, 1)[:, None])
    return np.clip(q, -127, 127).astype(np.int8), scale.astype(np.float32)


def check_values(hf_dir, out_dir):
    from safetensors.numpy import load_file

    written = load_file(os.path.join(out_dir, "model.safetensors"))
    source = load_file(os.path.join(hf_dir, "model.safetensors"))
    problems = []
    for name in ("model.shared.weight", "model.decoder.layers.5.fc2.weight"):
        q, scale = reference_int8(source[name])
        if written[name].dtype != np.int8 or not np.array_equal(written[name], q):
            problems.append(f"{name}: int8 values differ from NumPy's")
        if not np.array_equal(written[name + ".scale"], scale):
            problems.append(f"{name}.scale differs from NumPy's")
    bias = written.get("final_logits_bias")
    if bias is None or not np.array_equal(bias, source["final_logits_bias"][0].astype(np.float32)):
        problems.append("final_logits_bias differs from the input's, widened")
    report("memory/values", "; ".join(problems) or None,
           f"{len(written)} tensors, int8 and scales as NumPy computes them")


def main():
    with scratch_directory("ted-export-memory-") as tmp:
        hf_dir = os.path.join(tmp, "hf")
        os.mkdir(hf_dir)
        f16_bytes = write_checkpoint(os.path.join(hf_dir, "model.safetensors"))
        write_tokenizer(hf_dir)
        status, baseline = child_peak(
            [PYTHON, "-c", f"import sys; sys.path.insert(0, {os.path.dirname(EXPORTER)!r}); "
             "import export_hf, sentencepiece"])
        if status != 0:
            fail("memory/baseline", f"importing the exporter failed (exit status {status})")
            return 1
        bound = baseline + f16_bytes  # half of the float32 size
        for mode, flags in (("int8", ["--quantize", "int8"]), ("float32", [])):
            out_dir = os.path.join(tmp, "out-" + mode)
            status, peak = child_peak([PYTHON, EXPORTER, hf_dir, "--out", out_dir] + flags)
            if status != 0:
                fail(f"memory/{mode}", f"export_hf failed (exit status {status})")
                continue
            mib = 1 << 20
            detail = (f"peak {peak // mib} MiB, bound {bound // mib} MiB (baseline "
                      f"{baseline // mib} MiB + half of {2 * f16_bytes // mib} MiB of float32)")
            report(f"memory/{mode}", None if peak <= bound else f"over the bound: {detail}",
                   detail)
            if mode == "int8":
                check_values(hf_dir, out_dir)
            shutil.rmtree(out_dir)
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())
