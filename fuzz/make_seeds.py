#!/usr/bin/python3
"""Writes the seed corpora of the fuzz harnesses from the repository's good
files: OUT/safetensors, OUT/config, OUT/vocab, OUT/tokenizer, OUT/normalize.

    /usr/bin/python3 fuzz/make_seeds.py OUT
"""
import json
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def safetensors(tensors, metadata=None, align=8):
    """tensors: [(name, dtype, shape, raw bytes)] -> the file's bytes."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % align)
    return struct.pack("<Q", len(text)) + text + data


def safetensors_seeds():
    f32 = struct.pack("<6f", 1.0, -2.5, 0.0, 3.25, 1e-3, 7.0)
    f16 = struct.pack("<4H", 0x3C00, 0xC000, 0x0000, 0x7BFF)
    bf16 = struct.pack("<4H", 0x3F80, 0xC020, 0x0000, 0x7F7F)
    yield "f32", safetensors([("a.weight", "F32", [2, 3], f32)])
    yield "f16_bf16", safetensors([("h", "F16", [4], f16), ("b", "BF16", [2, 2], bf16)],
                                  metadata={"format": "pt"})
    yield "empty_and_scalar", safetensors([("e", "F32", [0, 5], b""),
                                           ("s", "F32", [], struct.pack("<f", 1.5))])
    yield "nan_inf", safetensors([("x", "F32", [3], struct.pack("<3I", 0x3F800000, 0x7FC00000,
                                                               0xFF800000))])
    yield "no_tensors", safetensors([], metadata={})
    i8 = struct.pack("<6b", 127, -127, 0, 5, -3, 64)
    yield "i8_with_scale", safetensors([("q.weight", "I8", [2, 3], i8),
                                        ("q.weight.scale", "F32", [2], struct.pack("<2f", 0.01, 0.5))])
    # The first tensors of the tiny test model, as exported.
    path = os.path.join(ROOT, "tests/data/tiny-model/model.safetensors")
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    picked = []
    for name, entry in header.items():
        if name == "__metadata__" or len(picked) == 6:
            continue
        begin, end = entry["data_offsets"]
        if end - begin <= 256:
            picked.append((name, entry["dtype"], entry["shape"], data[begin:end]))
    yield "tiny_model_part", safetensors(picked, align=64)


def config_seeds():
    for d in ("models/toy-en-fr", "tests/data/tiny-model", "tests/data/tiny-model-prenorm"):
        yield d.replace("/", "_"), open(os.path.join(ROOT, d, "config.yaml"), "rb").read()
    yield "flow", (b"model: {d_model: 8, heads: 2, encoder_layers: 1, decoder_layers: 1, "
                   b"d_ff: 16, src_vocab_size: 10, tgt_vocab_size: 12, activation: gelu, "
                   b"norm_first: true, layer_norm_eps: 1e-6, max_positions: 32, "
                   b"positional_encoding: concatenated}\nweights: w.safetensors\n"
                   b"tokenizer: {type: char, lowercase: true, src_vocab: a/s.txt, "
                   b"tgt_vocab: \"t.txt\", unk_id: 3, pad_id: 0, bos_id: 1, eos_id: 2, "
                   b"source_bos: false, source_eos: false}\n"
                   b"decoding: {max_length: 10, beam_size: 4, length_penalty: 1.0}\n")
    yield "sampling", (b"model:\n  d_model: 4\n  heads: 1\n  encoder_layers: 1\n"
                       b"  decoder_layers: 2\n  d_ff: 4\n  src_vocab_size: 4\n"
                       b"  tgt_vocab_size: 5\nweights: m\ntokenizer:\n  src_vocab: s\n"
                       b"  tgt_vocab: t\ndecoding:\n  sample: true\n  temperature: 0.7\n"
                       b"  top_k: 3\n  top_p: 0.9\n")


def vocab_seeds():
    for d in ("tests/data/tiny-model", "tests/data/parity-model", "models/toy-en-fr"):
        for side in ("src", "tgt"):
            yield f"{d.replace('/', '_')}_{side}", open(os.path.join(ROOT, d, "vocab." + side),
                                                         "rb").read()
    yield "crlf_utf8", "<unk>\r\n<pad>\r\n<bos>\r\n<eos>\r\n été\r\n€\r\n \r\nx y".encode()
    yield "other_specials", b"<s>\n</s>\n[UNK]\n[PAD]\nword\n"


def tokenizer_seeds():
    lines = open(os.path.join(ROOT, "models/toy-en-fr/test.en"), "rb").read().split(b"\n")[:8]
    texts = lines + ["The CAT, été À la plage\t€ 😀 n't".encode(), b"<unk> <eos> the\r\n",
                     b"a\xc2\xa0b  c\x0bx\x0c"]
    for i, text in enumerate(texts):
        for flags in range(8):
            if (i + flags) % 3 == 0:
                yield f"text{i}_flags{flags}", bytes([flags]) + text


def normalize_seeds():
    """The language byte (fuzz_normalize.c), then text with what the rules match."""
    texts = ["f(x) ( a ) . 5 % a : b ; ``q'' \u201ea\u201c \u201cb\u201d 1\u20132 a\u2014b \u00b4",
             "it\u2019s \u2018q\u2019 \u201aw \u2026 \u00a0\u00ab\u00a0oui\u00a0\u00bb\u00a0",
             "5\u00a0% n\u00ba\u00a03 a\u00a0: 20\u00a0\u00baC 5\u00a0cm a\u00a0? b\u00a0! c\u00a0; d,\u00a0e",
             '"yes". "no",. a,"b ."<c> ..." d 1\u00a0000 \u0663\u00a0\u0664 \u3000 x \u2028',
             "\r\n\t\x0b\x0c \u3002\uff0c \U0001f600 \u00e9t\u00e9 \x01\x7f"]
    for i, text in enumerate(texts):
        for language in range(8):
            if (i + language) % 3 == 0:
                yield f"text{i}_language{language}", bytes([language]) + text.encode()
    yield "invalid_utf8", b"\x00a\xff(\xc3 \xc0\xa0\xe2\x80"


def main():
    out = sys.argv[1]
    for kind, seeds in (("safetensors", safetensors_seeds()), ("config", config_seeds()),
                        ("vocab", vocab_seeds()), ("tokenizer", tokenizer_seeds()),
                        ("normalize", normalize_seeds())):
        os.makedirs(os.path.join(out, kind), exist_ok=True)
        for name, data in seeds:
            with open(os.path.join(out, kind, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
