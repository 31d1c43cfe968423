#!/usr/bin/python3
"""Writes the seed corpora of the fuzz harnesses from the repository's good
files: OUT/safetensors, OUT/config, OUT/vocab, OUT/shortlist, OUT/tokenizer, OUT/normalize,
OUT/spm, OUT/request, OUT/document, OUT/bpe, OUT/marian, OUT/npy, OUT/shortlist_bin. The
repository keeps them in fuzz/corpus (fuzz/replay.sh replays them, fuzz/run.sh starts from
them). fuzz/corpus/marian
also holds two files Marian itself wrote (pymarian convert: marian_cnpy.npz,
pymarian_intgemm8.bin), which this script cannot make:

    /usr/bin/python3 fuzz/make_seeds.py fuzz/corpus
"""
import io
import json
import os
import struct
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests/bad"))
sys.path.insert(0, os.path.join(ROOT, "tests/lib"))
import spm_model  # noqa: E402
from marian_files import marian_bin  # noqa: E402


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
    # ted quantize --layout mapped: an int8 matrix (3 rows, 5 columns) in the
    # products' groups (U8 (groups, ceil(5 / 4), 64), 64-byte aligned) and the
    # header's metadata naming the layout; a metadata value that is no string.
    groups = bytes((w ^ 0x80) & 0xFF for w in range(128))
    mapped = {"format": "pt", "ted_i8_group_rows": "16", "ted_i8_group_k": "4",
              "ted_i4_group": "32", "ted_layout": "mapped"}
    yield "mapped_int8", safetensors([("q.weight", "U8", [1, 2, 64], groups),
                                      ("q.weight.scale", "F32", [3],
                                       struct.pack("<3f", 0.01, 0.5, 2.0))],
                                     metadata=mapped, align=64)
    yield "metadata_not_string", safetensors([("a", "F32", [1], struct.pack("<f", 1.0))],
                                             metadata={"ted_layout": 3, "format": "pt"})
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


def shortlist_seeds():
    yield "small", (b"ted-shortlist 1\n# a comment\nvocab 40 60\nfrequent 3 4 5\n"
                    b"2 7 8 9\n\n17 59 0\r\n39 12\n")
    yield "empty_lists", b"ted-shortlist 1\nvocab 40 60\nfrequent\n0\n5\n"
    yield "wrong_size", b"ted-shortlist 1\nvocab 41 60\nfrequent 1\n"


def tokenizer_seeds():
    lines = open(os.path.join(ROOT, "models/toy-en-fr/test.en"), "rb").read().split(b"\n")[:8]
    texts = lines + ["The CAT, été À la plage\t€ 😀 n't".encode(), b"<unk> <eos> the\r\n",
                     b"a\xc2\xa0b  c\x0bx\x0c"]
    for i, text in enumerate(texts):
        for flags in range(8):
            if (i + flags) % 3 == 0:
                yield f"text{i}_flags{flags}", bytes([flags]) + text


def bpe_seeds():
    """A merges file (GPT-2's spaces as "\u0120"), a NUL byte, a text."""
    merges = "#version: 0.2\n\u0120 t\nh e\n\u0120t he\ni n\n".encode()
    texts = ["The cat sleeps.", " leading and  double  spaces\n",
             "café 日本語 😀 123 don't", "مرحبا नमस्ते", ""]
    for i, text in enumerate(texts):
        yield f"text{i}", merges + b"\0" + text.encode()
    yield "invalid-utf8", merges + b"\0ab\xff\xfe cd"
    yield "bad-merges", b"#version: 0.2\nonlyone\n\0text"


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


def spm_seeds():
    """models/en-fr's SentencePiece models, each under 64 KiB (run.sh's
    -max_len): its 237 KB NFKC table swapped for a small one, none, a
    denormalization table, byte fallback with its byte pieces."""
    small = spm_model.charsmap(spm_model.RULES)
    for side in ("source", "target"):
        model = open(os.path.join(ROOT, "models/en-fr", side + ".spm"), "rb").read()
        yield f"en_fr_{side}_small_table", spm_model.with_charsmap(model, small)
    model = open(os.path.join(ROOT, "models/en-fr/source.spm"), "rb").read()
    yield "en_fr_source_no_table", spm_model.with_charsmap(model, b"")
    denormalizer = spm_model.charsmap({b"a": b"A", b"fi": b"\xef\xac\x81"})
    yield "en_fr_source_denormalizer", spm_model.with_charsmap(
        spm_model.with_charsmap(model, small), denormalizer, 5)
    pieces = [f for f in spm_model.fields(model) if f[0] == 1]
    rest = [f for f in spm_model.fields(spm_model.with_charsmap(model, small)) if f[0] != 1]
    trainer = [(f, w, spm_model.message(spm_model.fields(v) + [(35, 0, 1)]) if f == 2 else v)
               for f, w, v in rest]
    byte_pieces = [(1, 2, spm_model.message([(1, 2, b"<0x%02X>" % b), (2, 5, b"\0\0\0\0"),
                                             (3, 0, 6)])) for b in range(256)]
    yield "en_fr_source_byte_fallback", spm_model.message(pieces[:200] + byte_pieces + trainer)
    yield "en_fr_source_100_pieces", spm_model.message(pieces[:100] + rest)


def request_seeds():
    """fuzz_request.c's endpoint byte (0 translate, 1 explore, 2 beam, 3
    LibreTranslate's translate), then a body as docs/serving.md and
    docs/learning.md show them."""
    translate = [{"text": ["the black cat eats the small bird ."]},
                 {"text": ["the dog sleeps .", ""], "beam": 4, "n_best": 2, "scores": True},
                 {"model": "toy-2", "text": ["the cat ."], "sample": True, "temperature": 0.7,
                  "top_k": 5, "top_p": 0.9, "seed": "12345678901234567", "max_length": 8},
                 {"text": ["the queen sings ."], "length_penalty": 0.6,
                  "length_normalization": "power", "early_stopping": "never",
                  "model": "toy"}]
    explore = [{"source": "the cat eats the small bird .", "top_k": 3},
               {"source": "the dog sleeps .", "model": "toy-2",
                "forced": [{"step": 1, "token": "le"}, {"step": 3, "token": "dort"}]}]
    beam = [{"source": "the cat sleeps .", "beam": 3, "length_penalty": 1.0,
             "length_normalization": "gnmt"}, {"source": "", "beam": 1}]
    libre = [{"q": "the black cat eats the small bird .", "source": "en", "target": "fr"},
             {"q": ["the dog sleeps .", "the cat .\nthe queen sings ."], "source": "auto",
              "target": "fr", "alternatives": 2, "format": "text", "api_key": "x"},
             {"q": "", "source": "en", "target": "de"}]
    for endpoint, bodies in enumerate((translate, explore, beam, libre)):
        for i, body in enumerate(bodies):
            yield f"endpoint{endpoint}_{i}", bytes([endpoint]) + json.dumps(body).encode()
    yield "not_an_object", b"\x00[1, 2]"
    yield "escapes", b'\x01{"source": "caf\\u00e9 \\ud83d\\ude00 \\u0041"}'


def document_seeds():
    """fuzz_document.c's byte (bit 0: HTML, bit 1: split), then the pages of
    tests/data/html, a paragraph holding each construct that a browser reads
    as markup where libxml2 reads text, and paragraphs of
    tests/serve/test_documents.py's kind."""
    pages = os.path.join(ROOT, "tests", "data", "html")
    for name in sorted(os.listdir(pages)):
        page = open(os.path.join(pages, name), "rb").read()
        yield name, b"\x03" + page
        yield name + "_unsplit", b"\x01" + page
    # Markup that a browser reads where libxml2 reads text (src/document/inert.h).
    constructs = ["<![CDATA[ <img src=x onerror=alert(1)> ]]>", '<!ENTITY x "<img src=x>">',
                  "<!x <img src=x>>", "<!DOCTYPE html></div></div>", "<?php echo '<b>' ?>",
                  "</ x>", "<!>", "<?>", "</>", "<!-->", "<!-- a --!>", "</p x=\"y>z\">",
                  "<svg><![CDATA[ a > b ]]></svg>", "<script><!--<script></script>x</script>",
                  "<title><!x <b>></title>", "<select><style><!--</style>x-->"]
    for i, construct in enumerate(constructs):
        yield f"construct{i}", b"\x03<p>The cat sleeps. " + construct.encode() + b" The dog.</p>"
    texts = ["Dr. Smith arrived at 10 a.m.  He said \"Hi.\"\tWait... What?",
             " \u4f60\u597d\u3002\u4e16\u754c\uff01 \u041f\u0440\u0438\u0432\u0435\u0442. ",
             "One.\r\nTwo\n\nthree \u00a0"]
    for i, text in enumerate(texts):
        yield f"text{i}", b"\x02" + text.encode()
        yield f"text{i}_unsplit", b"\x00" + text.encode()


def npy(descr, shape, raw, version=1):
    """A NumPy .npy array, its header padded as NumPy pads it."""
    dims = f"{shape[0]}," if len(shape) == 1 else ", ".join(str(d) for d in shape)
    text = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': ({dims}), }}"
    size = 10 if version == 1 else 12
    text += " " * (-(size + len(text) + 1) % 64) + "\n"
    length = struct.pack("<H" if version == 1 else "<I", len(text))
    return b"\x93NUMPY" + bytes([version, 0]) + length + text.encode() + raw


def npz(members):
    """A zip of stored .npy members, as numpy.savez writes one."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for name, data in members:
            z.writestr(name + ".npy", data)
    return out.getvalue()


YML = b"type: transformer\ndim-emb: 4\ntransformer-decoder-autoreg: rnn\n\0"


def marian_seeds():
    f32 = struct.pack("<8f", 1.0, -2.5, 0.0, 3.25, 1e-3, 7.0, -0.5, 2.0)
    i8 = bytes([1, 255, 2, 254, 127, 129, 0, 3]) + struct.pack("<f", 12.5)
    yield "npz", npz([("Wemb", npy("<f4", [2, 4], f32)),
                      ("decoder_b", npy("<f4", [1, 8], f32)),
                      ("special:model.yml", npy("|i1", [len(YML)], YML))])
    yield "npz_v2_f16", npz([("h", npy("<f2", [2, 2], struct.pack("<4H", 0x3C00, 0xC000,
                                                                 0, 0x7BFF), version=2))])
    yield "npz_empty", npz([])
    yield "bin_float32", marian_bin([("Wemb", 0x404, [2, 4], f32),
                                     ("special:model.yml", 0x101, [len(YML)], YML)])
    yield "bin_intgemm8", marian_bin([("encoder_l1_self_Wq", 0x10001, [2, 4], i8),
                                      ("encoder_l1_self_bq", 0x404, [1, 8], f32)])
    yield "bin_alphas", marian_bin([("Wemb", 0x4101, [4, 2], i8),
                                    ("decoder_l1_rnn_W", 0x4101, [2, 4], i8),
                                    ("decoder_l1_rnn_W_QuantMultA", 0x404, [1], f32[:4]),
                                    ("special:model.yml", 0x101, [len(YML)], YML)])


def npy_seeds():
    yield "f32", npy("<f4", [2, 3], struct.pack("<6f", 1, 2, 3, 4, 5, 6))
    yield "i1", npy("|i1", [5], b"abcde")
    yield "u1_4d", npy("|u1", [1, 2, 1, 2], b"wxyz")
    yield "scalar_v3", npy("<f4", [], struct.pack("<f", 1.5), version=3)


def shortlist_bin(first, lists):
    offsets = [0]
    for targets in lists:
        offsets.append(offsets[-1] + len(targets))
    body = struct.pack("<4Q", first, 5, len(offsets), offsets[-1])
    body += struct.pack(f"<{len(offsets)}Q", *offsets)
    body += b"".join(struct.pack(f"<{len(t)}I", *t) for t in lists)
    data = struct.pack("<QQ", 0xF11A48D5013417F5, 0) + body
    seed = 0
    for i in range(16, len(data) - 7, 8):
        seed ^= (struct.unpack_from("<Q", data, i)[0] + 0x9E3779B9 + (seed << 6) +
                 (seed >> 2)) & ((1 << 64) - 1)
    return data[:8] + struct.pack("<Q", seed) + data[16:]


def shortlist_bin_seeds():
    lists = [[(7 * s + k * 11) % 60 for k in range(s % 4)] for s in range(40)]
    yield "small", shortlist_bin(8, [sorted(set(t)) for t in lists])
    yield "empty_lists", shortlist_bin(50, [[] for _ in range(40)])
    yield "odd_count", shortlist_bin(0, [[1, 2, 3]] + [[] for _ in range(39)])


def main():
    out = sys.argv[1]
    for kind, seeds in (("safetensors", safetensors_seeds()), ("config", config_seeds()),
                        ("vocab", vocab_seeds()), ("shortlist", shortlist_seeds()),
                        ("tokenizer", tokenizer_seeds()),
                        ("normalize", normalize_seeds()), ("spm", spm_seeds()),
                        ("request", request_seeds()), ("document", document_seeds()),
                        ("bpe", bpe_seeds()), ("marian", marian_seeds()),
                        ("npy", npy_seeds()), ("shortlist_bin", shortlist_bin_seeds())):
        os.makedirs(os.path.join(out, kind), exist_ok=True)
        for name, data in seeds:
            with open(os.path.join(out, kind, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
