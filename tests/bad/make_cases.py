#!/usr/bin/python3
"""Builds the bad-input corpus: one model directory or input file per case,
each made from a good model by breaking one thing, plus the handmade files
of tests/bad/files/. Prints the manifest tests/cli/bad_inputs.sh runs, one
case a line, fields separated by tabs:

    KIND  NAME  PATH  MODEL  PATTERN

KIND says what the runner does with PATH and what must happen:
    model   ted translate -m PATH "s1 s2"        exit 1, one message matching PATTERN
    check   ted info -m PATH --check             exit 1, one message matching PATTERN
    input   ted translate -m MODEL -i PATH       exit 1, one message matching PATTERN
    loads   ted translate -m PATH "s1 s2"        exit 0, one output line, nothing on stderr
PATTERN is an extended regular expression; every one names the file at
fault and the problem.

    /usr/bin/python3 tests/bad/make_cases.py OUT_DIR > manifest
"""
import json
import os
import shutil
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILES = os.path.join(ROOT, "tests/bad/files")
TINY = os.path.join(ROOT, "tests/data/tiny-model")  # d_model 16, 2+2 layers, vocab 12/14
TOY = os.path.join(ROOT, "models/toy-en-fr")          # real words, max_positions 5000

OUT = sys.argv[1]
manifest = []


def case(kind, name, pattern, model="-"):
    """Registers a case; returns the path it lives at."""
    assert "\t" not in pattern and "\n" not in pattern
    path = os.path.join(OUT, name)
    manifest.append((kind, name, path, model, pattern))
    return path


def model_case(name, pattern, kind="model"):
    """A fresh copy of the tiny model at OUT/name; returns its path."""
    path = case(kind, name, pattern)
    shutil.copytree(TINY, path)
    return path


def input_case(name, pattern, data, model=TOY):
    path = case("input", name, pattern, model)
    with open(path, "wb") as f:
        f.write(data)


# ---- safetensors ----------------------------------------------------------

def read_weights(path):
    raw = open(os.path.join(path, "model.safetensors"), "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def write_weights(path, header, data, header_bytes=None):
    """Writes the file from a header dict (or raw header bytes) and data."""
    text = header_bytes if header_bytes is not None else json.dumps(
        header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)
    with open(os.path.join(path, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def weights_case(name, pattern, edit, kind="model"):
    """edit(header, data) -> (header, data), on a copy of the tiny model."""
    path = model_case(name, pattern, kind)
    header, data = read_weights(path)
    header, data = edit(header, bytearray(data))
    write_weights(path, header, bytes(data))


def raw_weights_case(name, pattern, content):
    path = model_case(name, pattern)
    with open(os.path.join(path, "model.safetensors"), "wb") as f:
        f.write(content)


def put_f32_bits(data, header, tensor, index, bits):
    begin = header[tensor]["data_offsets"][0] + 4 * index
    data[begin:begin + 4] = struct.pack("<I", bits)


def set_entry(tensor, key, value):
    def edit(header, data):
        header[tensor][key] = value
        return header, data
    return edit


ST = r"model\.safetensors: "
G_BIAS = "generator.bias"
LIN1 = "transformer.encoder.layers.0.linear1.weight"
NORM = "transformer.encoder.norm.weight"


def safetensors_cases():
    good_header, good_data = read_weights(TINY)
    good = open(os.path.join(TINY, "model.safetensors"), "rb").read()

    raw_weights_case("st-empty-file", ST + "0 bytes is too short for the 8-byte header length", b"")
    raw_weights_case("st-7-bytes", ST + "7 bytes is too short", b"\x10\0\0\0\0\0\0")
    raw_weights_case("st-truncated-half", ST + "tensor '.*': data_offsets .* end past the "
                     "[0-9]+-byte data section \\(file truncated\\?\\)", good[:len(good) // 2])
    raw_weights_case("st-header-length-past-end", ST + "header length [0-9]+ runs past the end "
                     "of the [0-9]+-byte file", struct.pack("<Q", len(good)) + good[8:])
    raw_weights_case("st-header-length-huge", ST + "header length 18446744073709551615 is over "
                     "the [0-9]+-byte limit", b"\xff" * 8 + good[8:])
    raw_weights_case("st-header-length-zero", ST + "header is not valid JSON",
                     b"\0" * 8 + good[8:])
    for name, text, problem in (
            ("st-header-not-json", b"{not json", "header is not valid JSON \\(at header byte"),
            ("st-header-array", b"[1, 2, 3]", "header is not a JSON object"),
            ("st-header-string", b'"F32"', "header is not a JSON object"),
            ("st-header-trailing-data", b"{} {}", "header has data after its JSON object"),
            ("st-header-not-utf8", b'{"\xff": 1}', "header is not valid UTF-8 \\(at header byte 2\\)"),
            ("st-header-cut-in-string", b'{"src_tok_emb', "header is not valid JSON"),
            ("st-header-nul", b'{"a\0b": {}}', "header is not valid JSON: a control character "
             "at header byte 3"),
            ("st-header-escaped-nul", b'{"generator.bias\\u0000": {}}', "header is not valid "
             "JSON: an escaped NUL \\(\\\\u0000\\) at header byte 16"),
            ("st-header-deep", b"[" * 100000, "header nests deeper than 3 levels")):
        path = model_case(name, ST + problem)
        write_weights(path, None, good_data, header_bytes=text)

    weights_case("st-offsets-past-end", ST + f"tensor '{G_BIAS}': data_offsets \\[47360, 99999\\] "
                 "end past the 47416-byte data section",
                 set_entry(G_BIAS, "data_offsets", [47360, 99999]))
    weights_case("st-offsets-reversed", ST + f"tensor '{G_BIAS}': data_offsets \\[47416, 47360\\] "
                 "are reversed", set_entry(G_BIAS, "data_offsets", [47416, 47360]))
    weights_case("st-offsets-negative", ST + f"tensor '{G_BIAS}': data_offsets are not whole "
                 "numbers", set_entry(G_BIAS, "data_offsets", [-56, 47416]))
    weights_case("st-offsets-fraction", ST + f"tensor '{G_BIAS}': data_offsets are not whole "
                 "numbers", set_entry(G_BIAS, "data_offsets", [47360.5, 47416]))
    weights_case("st-offsets-three", ST + f"tensor '{G_BIAS}': \"data_offsets\" is not an array "
                 "of 2 numbers", set_entry(G_BIAS, "data_offsets", [47360, 47416, 47416]))
    weights_case("st-offsets-missing", ST + f"tensor '{G_BIAS}': no \"data_offsets\"",
                 lambda h, d: ({k: ({"dtype": "F32", "shape": [14]} if k == G_BIAS else v)
                                for k, v in h.items()}, d))
    # generator.weight [46464, 47360) and generator.bias moved onto its end.
    weights_case("st-offsets-overlap", ST + "tensors 'generator.weight' \\[46464, 47360\\] and "
                 f"'{G_BIAS}' \\[47304, 47360\\] overlap",
                 set_entry(G_BIAS, "data_offsets", [47304, 47360]))
    weights_case("st-offsets-same-bytes", ST + "tensors 'transformer\\.decoder\\.norm\\.bias' "
                 "\\[46336, 46400\\] and 'transformer\\.decoder\\.norm\\.weight' \\[46336, "
                 "46400\\] overlap",
                 set_entry("transformer.decoder.norm.bias", "data_offsets",
                           good_header["transformer.decoder.norm.weight"]["data_offsets"]))
    weights_case("st-data-shorter-than-shape", ST + f"tensor '{G_BIAS}': data_offsets \\[47360, "
                 "47416\\] span 56 bytes but shape \\[15\\] of F32 needs 60",
                 set_entry(G_BIAS, "shape", [15]))
    weights_case("st-data-longer-than-shape", ST + f"tensor '{G_BIAS}': .* span 56 bytes but "
                 "shape \\[13\\] of F32 needs 52", set_entry(G_BIAS, "shape", [13]))
    for dtype in ("F64", "I64", "I32", "BOOL", "F8_E4M3", "f32", ""):
        weights_case(f"st-dtype-{dtype or 'empty'}", ST + f"tensor '{G_BIAS}': unsupported dtype "
                     f"'{dtype}' \\(expected F32, F16, BF16, I8 or U8\\)", set_entry(G_BIAS, "dtype", dtype))
    weights_case("st-dtype-not-string", ST + f"tensor '{G_BIAS}': \"dtype\" is not a string",
                 set_entry(G_BIAS, "dtype", 32))
    weights_case("st-shape-overflow", ST + f"tensor '{G_BIAS}': shape \\[4294967296, 4294967296, "
                 "4294967296\\] of F32 overflows size_t",
                 set_entry(G_BIAS, "shape", [2**32, 2**32, 2**32]))
    weights_case("st-shape-overflow-to-zero", ST + f"tensor '{G_BIAS}': shape .* overflows size_t",
                 set_entry(G_BIAS, "shape", [2**33, 2**31]))
    weights_case("st-shape-negative", ST + f"tensor '{G_BIAS}': shape\\[0\\] is not a whole number",
                 set_entry(G_BIAS, "shape", [-14]))
    weights_case("st-shape-five-dims", ST + f"tensor '{G_BIAS}': shape has 5 dimensions, more "
                 "than the 4 supported", set_entry(G_BIAS, "shape", [14, 1, 1, 1, 1]))
    weights_case("st-shape-not-array", ST + f"tensor '{G_BIAS}': \"shape\" is not an array",
                 set_entry(G_BIAS, "shape", 14))
    weights_case("st-entry-not-object", ST + f"tensor '{G_BIAS}': entry is not an object",
                 lambda h, d: (dict(h, **{G_BIAS: [1, 2]}), d))
    weights_case("st-metadata-not-object", ST + "\"__metadata__\" is not an object",
                 lambda h, d: (dict(h, __metadata__="pt"), d))

    def duplicate(header, data):
        text = json.dumps(header, separators=(",", ":"))
        entry = json.dumps({G_BIAS: header[G_BIAS]}, separators=(",", ":"))[1:-1]
        return text[:-1] + "," + entry + "}", data

    path = model_case("st-duplicate-name", ST + f"tensor '{G_BIAS}' appears twice in the header")
    h, d = duplicate(*read_weights(path))
    write_weights(path, None, d, header_bytes=h.encode())

    weights_case("st-missing-tensor", ST + f"missing tensor '{G_BIAS}'",
                 lambda h, d: ({k: v for k, v in h.items() if k != G_BIAS}, d))
    weights_case("st-unexpected-tensor", ST + "tensor 'extra\\.weight' is not part of the model "
                 "config\\.yaml describes", lambda h, d: (dict(h, **{"extra.weight": {
                     "dtype": "F32", "shape": [0], "data_offsets": [0, 0]}}), d))
    weights_case("st-wrong-shape", ST + f"tensor '{LIN1}' has shape \\[16, 32\\], the config "
                 "needs \\[32, 16\\]", set_entry(LIN1, "shape", [16, 32]))
    weights_case("st-wrong-rank", ST + f"tensor '{G_BIAS}' has shape \\[1, 14\\], the config "
                 "needs \\[14\\]", set_entry(G_BIAS, "shape", [1, 14]))

    # Non-finite weights: vectors are refused at load, matrices by ted info --check.
    def poke(tensor, index, bits):
        def edit(header, data):
            put_f32_bits(data, header, tensor, index, bits)
            return header, data
        return edit

    weights_case("st-nan-bias", ST + f"tensor '{G_BIAS}' holds NaN at \\[5\\] \\(element 5\\); "
                 "weights must be finite", poke(G_BIAS, 5, 0x7FC00000))
    weights_case("st-inf-layernorm", ST + f"tensor '{NORM}' holds -inf at \\[15\\]",
                 poke(NORM, 15, 0xFF800000))

    def to_f16_with_nan(header, data):
        """generator.bias as F16 (its data shrinks in place, a gap is fine), one NaN."""
        begin, end = header[G_BIAS]["data_offsets"]
        values = struct.unpack("<14f", bytes(data[begin:end]))
        halves = [struct.unpack("<H", struct.pack("<e", v))[0] for v in values]
        halves[13] = 0x7E00
        data[begin:begin + 28] = struct.pack("<14H", *halves)
        header[G_BIAS] = {"dtype": "F16", "shape": [14], "data_offsets": [begin, begin + 28]}
        return header, data

    weights_case("st-nan-f16-bias", ST + f"tensor '{G_BIAS}' holds NaN at \\[13\\]",
                 to_f16_with_nan)
    weights_case("st-nan-matrix-check", ST + f"tensor '{LIN1}' holds NaN at \\[3, 7\\] "
                 "\\(element 55\\); weights must be finite", poke(LIN1, 3 * 16 + 7, 0x7FC00001),
                 kind="check")
    weights_case("st-inf-embedding-check", ST + "tensor 'tgt_tok_emb.embedding.weight' holds "
                 "\\+inf at \\[13, 15\\]", poke("tgt_tok_emb.embedding.weight", 13 * 16 + 15,
                                                0x7F800000), kind="check")
    # Policy: a NaN in a matrix is not looked for at load. A row no sentence
    # uses is never read, a ReLU turns a NaN into 0; otherwise it makes the
    # logits NaN or infinite, and that step is an error. Finite weights that overflow in use (LayerNorm
    # weights of 3e38) are caught there too.
    weights_case("st-nan-unused-embedding-loads", "",
                 poke("src_tok_emb.embedding.weight", 11 * 16, 0x7FC00000), kind="loads")
    weights_case("st-nan-matrix-loads", "", poke(LIN1, 0, 0x7FC00000), kind="loads")  # ReLU drops it
    RUN = r"step 1: the logit of target token [0-9]+ is (NaN|infinite) \(row 0\): the model's"
    weights_case("st-nan-matrix-at-run-time", RUN,
                 poke("transformer.encoder.layers.0.linear2.weight", 0, 0x7FC00000))
    weights_case("st-inf-generator-at-run-time", RUN, poke("generator.weight", 3, 0x7F800000))

    def overflow(header, data):
        for i in range(16):
            put_f32_bits(data, header, NORM, i, 0x7F61B1E6)  # 3e38, finite
        return header, data

    weights_case("st-finite-overflow-at-run-time", RUN, overflow)

    path = model_case("st-is-directory", ST + "not a regular file")
    os.remove(os.path.join(path, "model.safetensors"))
    os.mkdir(os.path.join(path, "model.safetensors"))
    path = model_case("st-does-not-exist", ST + "cannot open: No such file or directory")
    os.remove(os.path.join(path, "model.safetensors"))


# ---- config.yaml ----------------------------------------------------------

def config_case(name, pattern, edit=None, text=None, kind="model"):
    """A copy of the tiny model whose config.yaml is edit(text) or `text`."""
    path = model_case(name, pattern, kind)
    config = os.path.join(path, "config.yaml")
    old = open(config, "rb").read()
    new = text if text is not None else edit(old)
    assert new != old, name
    with open(config, "wb") as f:
        f.write(new)
    return path


def replace(old, new):
    old, new = old.encode(), new.encode()
    return lambda text: text.replace(old, new, 1)


CF = r"config\.yaml:"


def config_cases():
    # YAML syntax
    config_case("cfg-unclosed-flow", CF + "[0-9]+: YAML syntax error: did not find expected ',' "
                "or ']'", lambda t: t + b"extra: [unclosed\n")
    config_case("cfg-tab-indent", CF + "3: YAML syntax error: found character that cannot start "
                "any token", replace("  d_model", "\td_model"))
    config_case("cfg-bad-indent", CF + "4: YAML syntax error: mapping values are not allowed",
                replace("  heads: 2", "    heads: 2"))
    config_case("cfg-not-utf8", CF + "[0-9]+: YAML syntax error: invalid (leading )?UTF-8",
                lambda t: t.replace(b"# ted model", b"# \xff\xfe ted model"))
    config_case("cfg-empty-file", CF + "1: empty document", text=b"")
    config_case("cfg-top-level-list", CF + "1: the top level must be a mapping of keys",
                text=b"- model\n- weights\n")
    config_case("cfg-two-documents", CF + "[0-9]+: a config holds one YAML document, not several",
                lambda t: t + b"---\nmodel: {}\n")
    config_case("cfg-deep-nesting", CF + "1: nested deeper than 8 levels",
                text=b"model: " + b"[" * 5000 + b"]" * 5000 + b"\n")
    config_case("cfg-over-1-mib", r"config\.yaml: [0-9]+ bytes is larger than 1 MiB; not a config "
                "file", lambda t: t + b"#" * (1 << 20))
    # positions: what needs tensors the tutorial's names have none for
    config_case("cfg-learned-positions-tutorial", CF + "15: model\\.positional_encoding: learned, "
                "but tensor_names tutorial has no positional tables",
                replace("positional_encoding: interleaved", "positional_encoding: learned"))
    config_case("cfg-embedding-norm-tutorial", CF + "16: model\\.embedding_norm: true, but "
                "tensor_names tutorial has no embedding LayerNorm",
                replace("  encoder_final_norm", "  embedding_norm: true\n  encoder_final_norm"))
    config_case("cfg-position-offset-range", CF + "16: model\\.position_offset: 1025 is out of "
                "range \\(must be 0 to 1024\\)",
                replace("  encoder_final_norm", "  position_offset: 1025\n  encoder_final_norm"))
    # types
    config_case("cfg-int-quoted", CF + "3: model\\.d_model: expected an integer, got \"16\"",
                replace("d_model: 16", 'd_model: "16"'))
    config_case("cfg-int-word", CF + "4: model\\.heads: expected an integer, got \"two\"",
                replace("heads: 2", "heads: two"))
    config_case("cfg-int-decimal", CF + "7: model\\.d_ff: expected an integer, got \"32\\.0\"",
                replace("d_ff: 32", "d_ff: 32.0"))
    config_case("cfg-int-hex", CF + "3: model\\.d_model: expected an integer, got \"0x10\"",
                replace("d_model: 16", "d_model: 0x10"))
    config_case("cfg-int-octal", CF + "3: model\\.d_model: 016: leading zeros are not allowed",
                replace("d_model: 16", "d_model: 016"))
    config_case("cfg-int-list", CF + "3: model\\.d_model: expected a single value, got a list",
                replace("d_model: 16", "d_model: [16]"))
    config_case("cfg-bool-yes", CF + "[0-9]+: model\\.norm_first: expected true or false, got "
                "\"yes\"", replace("norm_first: false", "norm_first: yes"))
    config_case("cfg-float-word", CF + "[0-9]+: model\\.layer_norm_eps: expected a number, got "
                "\"small\"", replace("layer_norm_eps: 1.0e-05", "layer_norm_eps: small"))
    config_case("cfg-float-nan", CF + "[0-9]+: model\\.layer_norm_eps: nan must be a positive "
                "finite float", replace("layer_norm_eps: 1.0e-05", "layer_norm_eps: nan"))
    config_case("cfg-float-underflow", CF + "[0-9]+: model\\.layer_norm_eps: 1e-50 must be a "
                "positive finite float", replace("layer_norm_eps: 1.0e-05", "layer_norm_eps: 1e-50"))
    config_case("cfg-section-scalar", CF + "1: model: expected a mapping of keys",
                text=b"model: 5\nweights: model.safetensors\n")
    config_case("cfg-choice", CF + "[0-9]+: model\\.activation: \"swish\" is not one of relu, gelu, silu",
                replace("activation: relu", "activation: swish"))
    config_case("cfg-int-str-tag", CF + "3: model\\.d_model: expected an integer, got \"16\" "
                "tagged !!str", replace("d_model: 16", "d_model: !!str 16"))
    config_case("cfg-normalize-word", CF + "[0-9]+: tokenizer\\.normalize: \"nfkc\" is not one "
                "of none, moses",
                replace("  lowercase: false\n", "  lowercase: false\n  normalize: nfkc\n"))
    config_case("cfg-banned-ids-scalar", CF + "[0-9]+: decoding\\.banned_ids: expected a list of "
                "integers, got \"5\"", lambda t: t + b"  banned_ids: 5\n")
    config_case("cfg-banned-id-too-big", CF + "[0-9]+: decoding\\.banned_ids: 14 is not below "
                "tgt_vocab_size 14", lambda t: t + b"  banned_ids: [3, 14]\n")
    config_case("cfg-banned-ids-too-many", CF + "[0-9]+: decoding\\.banned_ids: at most 16 values "
                "are allowed, got 17", lambda t: t + b"  banned_ids: [" + b", ".join(
                    b"%d" % i for i in range(17)) + b"]\n")
    # sizes
    for key, old, value, problem in (
            ("d_model", "16", "0", "0 is out of range \\(must be 2 to 65536\\)"),
            ("heads", "2", "-2", "-2 is out of range \\(must be 1 to 1024\\)"),
            ("encoder_layers", "2", "0", "0 is out of range \\(must be 1 to 256\\)"),
            ("d_ff", "32", "-32", "-32 is out of range"),
            ("src_vocab_size", "12", "0", "0 is out of range \\(must be 4 to 16777216\\)"),
            ("max_positions", "64", "0", "0 is out of range"),
            ("d_model", "16", "1048576", "1048576 is out of range \\(must be 2 to 65536\\)"),
            ("d_ff", "32", "1000000000", "1000000000 is out of range \\(must be 1 to 1048576\\)"),
            ("tgt_vocab_size", "14", "2000000000", "2000000000 is out of range"),
            ("max_positions", "64", "100000000", "100000000 is out of range"),
            ("decoder_layers", "2", "99999999999999999999", "99999999999999999999 is out of range"),
            ("d_model", "16", "15", "15 is odd"),
            ("heads", "2", "3", "3 does not divide d_model 16")):
        config_case(f"cfg-{key}-{value}", CF + f"[0-9]+: model\\.{key}: {problem}",
                    replace(f"  {key}: {old}\n", f"  {key}: {value}\n"))
    config_case("cfg-duplicate-key", CF + "[0-9]+: model\\.heads: duplicate key \\(first at line 4\\)",
                replace("  d_ff: 32\n", "  d_ff: 32\n  heads: 4\n"))
    config_case("cfg-duplicate-section", CF + "[0-9]+: decoding: duplicate key \\(first at line "
                "[0-9]+\\)", lambda t: t + b"decoding:\n  max_length: 3\n")
    config_case("cfg-unknown-key", CF + "[0-9]+: model\\.dff: unknown key",
                replace("  d_ff: 32", "  dff: 32"))
    config_case("cfg-missing-key", CF + "2: model\\.d_ff: missing required key",
                replace("  d_ff: 32\n", ""))
    config_case("cfg-missing-weights-key", CF + "1: weights: missing required key",
                replace("weights: model.safetensors\n", ""))
    config_case("cfg-special-id-too-big", CF + "[0-9]+: tokenizer\\.eos_id: 12 is not below "
                "src_vocab_size 12", replace("eos_id: 3", "eos_id: 12"))
    config_case("cfg-special-ids-equal", CF + "[0-9]+: tokenizer\\.pad_id: 0 is also unk_id; the "
                "special ids must differ", replace("pad_id: 1", "pad_id: 0"))
    # paths
    for name, key, line, value, problem in (
            ("weights-parent", "weights", "weights: model.safetensors",
             "../tiny-model/model.safetensors", "the path must not contain \"\\.\\.\""),
            ("weights-inner-parent", "weights", "weights: model.safetensors",
             "a/../../model.safetensors", "the path must not contain \"\\.\\.\""),
            ("weights-absolute", "weights", "weights: model.safetensors", "/etc/passwd",
             "the path must be relative to the model directory"),
            ("src-vocab-parent", "tokenizer.src_vocab", "src_vocab: vocab.src", "../../vocab.src",
             "the path must not contain \"\\.\\.\""),
            ("tgt-vocab-absolute", "tokenizer.tgt_vocab", "tgt_vocab: vocab.tgt", "/dev/zero",
             "the path must be relative to the model directory"),
            ("tgt-vocab-empty", "tokenizer.tgt_vocab", "tgt_vocab: vocab.tgt", "\"\"",
             "the path is empty")):
        shown = value.strip('"').replace(".", "\\.")
        config_case(f"cfg-path-{name}",
                    CF + f"[0-9]+: {key.replace('.', '[.]')}: \"{shown}\": {problem}",
                    replace(line, line.split(":")[0] + ": " + value))
    config_case("cfg-weights-missing-file", r"/model\.bin: cannot open: No such file or directory",
                replace("weights: model.safetensors", "weights: model.bin"))
    config_case("cfg-vocab-missing-file", r"/vocab\.en: cannot open: No such file or directory",
                replace("src_vocab: vocab.src", "src_vocab: vocab.en"))
    config_case("cfg-vocab-is-directory", r"/sub: not a regular file",
                replace("tgt_vocab: vocab.tgt", "tgt_vocab: sub"))
    os.mkdir(os.path.join(OUT, "cfg-vocab-is-directory", "sub"))
    config_case("cfg-layers-more-than-weights", ST + "missing tensor "
                "'transformer\\.decoder\\.layers\\.2\\.self_attn\\.in_proj_weight'",
                replace("decoder_layers: 2", "decoder_layers: 3"))
    config_case("cfg-layers-fewer-than-weights", ST + "tensor 'transformer\\.encoder\\.layers\\.1\\."
                ".*' is not part of the model config\\.yaml describes",
                replace("encoder_layers: 2", "encoder_layers: 1"))
    config_case("cfg-d-ff-differs-from-weights", ST + "tensor '.*linear1\\.weight' has shape "
                "\\[32, 16\\], the config needs \\[64, 16\\]", replace("d_ff: 32", "d_ff: 64"))
    # Paths are checked as written: a link inside the directory may point
    # anywhere (the Hugging Face cache links every file to a blob elsewhere).
    path = model_case("cfg-symlink-to-outside-loads", "", kind="loads")
    blobs = os.path.join(OUT, "blobs")
    os.makedirs(blobs)
    for name in ("model.safetensors", "vocab.tgt"):
        os.rename(os.path.join(path, name), os.path.join(blobs, name))
        os.symlink(os.path.join("..", "blobs", name), os.path.join(path, name))
    path = model_case("cfg-no-config", r"/config\.yaml: cannot open: No such file or directory")
    os.remove(os.path.join(path, "config.yaml"))

    # Handmade files (tests/bad/files/config-*.yaml): swapped in for config.yaml.
    for file, pattern in (("config-billion-laughs.yaml",
                           CF + "5: model\\.d_model: expected a single value, got a list"),
                          ("config-alias-key.yaml", CF + "2: model: expected a key name, got "
                           "a mapping"),
                          ("config-python-tag.yaml",
                           CF + "3: model\\.d_model: expected a single value, got a list")):
        config_case("cfg-file-" + file[len("config-"):-len(".yaml")], pattern,
                    text=open(os.path.join(FILES, file), "rb").read())


# ---- vocabularies -----------------------------------------------------------

def vocab_case(name, pattern, edit, side="tgt", kind="model"):
    path = model_case(name, pattern, kind)
    vocab = os.path.join(path, "vocab." + side)
    old = open(vocab, "rb").read()
    new = edit(old)
    assert new != old, name
    with open(vocab, "wb") as f:
        f.write(new)


def vocab_cases():
    VT, VS = r"/vocab\.tgt", r"/vocab\.src"
    vocab_case("voc-empty", VT + ": empty file", lambda t: b"")
    vocab_case("voc-only-newline", VS + ":1: empty line", lambda t: b"\n", side="src")
    vocab_case("voc-duplicate", VT + ":7: duplicate token \"t0\" \\(first at line 5\\)",
               lambda t: t.replace(b"t2\n", b"t0\n"))
    vocab_case("voc-fewer-lines", VT + ": 13 tokens, but the model's tgt vocabulary has 14 "
               "\\(tgt_vocab_size\\)", lambda t: t[:t.rindex(b"\n", 0, len(t) - 1) + 1])
    vocab_case("voc-more-lines", VS + ": 13 tokens, but the model's src vocabulary has 12 "
               "\\(src_vocab_size\\)", lambda t: t + b"s8\n", side="src")
    vocab_case("voc-empty-line", VT + ":6: empty line", lambda t: t.replace(b"t0\n", b"t0\n\n"))
    vocab_case("voc-two-final-newlines", VT + ":15: empty line", lambda t: t + b"\n")
    path = model_case("voc-file-deleted", VS + ": cannot open: No such file or directory")
    os.remove(os.path.join(path, "vocab.src"))
    vocab_case("voc-nul-byte", VS + ":5: NUL byte in token", lambda t: t.replace(b"s0", b"s\0"),
               side="src")
    # Missing special tokens: their lines deleted (the file is then short), or
    # the vocabulary's specials not where config.yaml says.
    vocab_case("voc-specials-deleted", VT + ": 10 tokens, but the model's tgt vocabulary has 14",
               lambda t: t.split(b"\n", 4)[4])
    vocab_case("voc-specials-moved", VT + ":6: \"<eos>\" is id 5, but tokenizer\\.eos_id is 3: "
               "the vocabulary and config\\.yaml disagree",
               lambda t: t.replace(b"<eos>\n", b"t99\n").replace(b"t1\n", b"<eos>\n"))
    vocab_case("voc-specials-shifted", VS + ":2: \"<unk>\" is id 1, but tokenizer\\.unk_id is 0",
               lambda t: b"s99\n" + t[:t.rindex(b"\n", 0, len(t) - 1) + 1], side="src")
    # Other spellings at the special ids are fine: specials are known by id.
    path = model_case("voc-specials-other-spellings", "", kind="loads")
    for side in ("src", "tgt"):
        vocab = os.path.join(path, "vocab." + side)
        lines = open(vocab, "rb").read().split(b"\n")
        lines[:4] = [b"[UNK]", b"[PAD]", b"<s>", b"</s>"]
        open(vocab, "wb").write(b"\n".join(lines))


# ---- input text -------------------------------------------------------------

def input_cases():
    IN = lambda name, line: os.path.join(OUT, name).replace(".", "\\.") + f": line {line}: "
    input_case("in-100000-words", IN("in-100000-words", 2) + "100002 tokens, more than the "
               "model's max_positions \\(5000\\)", b"the cat .\n" + b" ".join([b"the"] * 100000)
               + b"\n")
    input_case("in-65-tokens", IN("in-65-tokens", 1) + "65 tokens, more than the model's "
               "max_positions \\(64\\)", b" ".join([b"s1"] * 63) + b"\n", model=TINY)
    input_case("in-nul-byte", IN("in-nul-byte", 3) + "contains a NUL byte",
               b"the cat .\nthe dog .\nthe \0 bird .\n")
    for name, text, offset, problem in (
            ("lone-continuation", b"the \x80 cat", 4, "unexpected continuation byte"),
            ("overlong", b"the \xc0\xaf", 4, "overlong encoding"),
            ("surrogate", b"cat \xed\xa0\x80", 4, "UTF-16 surrogate"),
            ("beyond-10ffff", b"\xf4\x90\x80\x80", 0, "code point beyond U\\+10FFFF"),
            ("cut-at-line-end", b"the cat \xc3", 8, "truncated sequence"),
            ("latin1", "la fenêtre".encode("latin-1"), 6, "truncated sequence")):
        input_case("in-utf8-" + name, IN("in-utf8-" + name, 2) + f"input byte offset {offset}: "
                   f"invalid UTF-8 \\({problem}\\)", b"the cat .\n" + text + b"\n")
    # Handmade: tests/bad/files/input-*.txt
    input_case("in-file-mixed-encodings", IN("in-file-mixed-encodings", 3) + "input byte offset "
               "[0-9]+: invalid UTF-8", open(os.path.join(FILES, "input-mixed-encodings.txt"),
                                             "rb").read())


# ---- Hugging Face Marian models (tools/export_hf.py) -----------------------

def tiny_marian_hf(hf_dir):
    """A MarianMTModel directory as save_pretrained writes it (config.json,
    model.safetensors, source.spm, target.spm, vocab.json), with random
    weights and a SentencePiece model trained here: built without
    transformers, which the corpus does not need."""
    import random

    import numpy as np
    import sentencepiece

    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import export_hf
    import ted_format

    os.makedirs(hf_dir)
    rng = random.Random(5)
    words = "the cat dog sees a small bird and sleeps".split()
    corpus = [" ".join(rng.choice(words) for _ in range(6)) for _ in range(300)]
    model = os.path.join(hf_dir, "spm")
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus), model_prefix=model, vocab_size=24, bos_id=-1, eos_id=-1,
        unk_id=0, pad_id=-1, minloglevel=2, num_threads=1)
    for name in ("source.spm", "target.spm"):
        shutil.copyfile(model + ".model", os.path.join(hf_dir, name))
    pieces = sentencepiece.SentencePieceProcessor(model_file=model + ".model")
    vocab = (["</s>", "<unk>"] + [pieces.id_to_piece(i) for i in range(1, len(pieces))]
             + ["<pad>"])
    os.remove(model + ".model")
    os.remove(model + ".vocab")
    v, d, f = len(vocab), 16, 32
    with open(os.path.join(hf_dir, "vocab.json"), "w", encoding="utf-8") as out:
        json.dump({token: i for i, token in enumerate(vocab)}, out)
    with open(os.path.join(hf_dir, "config.json"), "w", encoding="utf-8") as out:
        json.dump(dict(model_type="marian", vocab_size=v, d_model=d, encoder_layers=1,
                       decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
                       encoder_ffn_dim=f, decoder_ffn_dim=f, activation_function="swish",
                       max_position_embeddings=64, pad_token_id=v - 1, eos_token_id=0,
                       decoder_start_token_id=v - 1, scale_embedding=True,
                       bad_words_ids=[[v - 1]], max_length=20), out)
    shapes = {"model.shared.weight": (v, d), "final_logits_bias": (1, v)}
    shapes.update(export_hf.layer_shapes("model.encoder.layers.0", d, f, False))
    shapes.update(export_hf.layer_shapes("model.decoder.layers.0", d, f, True))
    weights = np.random.default_rng(5)
    ted_format.write_safetensors(os.path.join(hf_dir, "model.safetensors"), [
        (name, weights.normal(0, 0.5, shape)) for name, shape in shapes.items()])
    return export_hf


MARIAN = os.path.join(OUT, "marian-model")  # the good exported model, not a case


def marian_case(name, pattern, edit):
    """A copy of the exported Marian model with edit(path) applied."""
    path = case("model", name, pattern)
    shutil.copytree(MARIAN, path)
    edit(path)


def overwrite(name, data):
    def edit(path):
        with open(os.path.join(path, name), "wb") as f:
            f.write(data)
    return edit


def edit_text(name, change):
    def edit(path):
        with open(os.path.join(path, name), "rb") as f:
            data = change(f.read())
        overwrite(name, data)(path)
    return edit


def marian_weights(change):
    def edit(path):
        header, data = read_weights(path)
        write_weights(path, *change(header, data))
    return edit


def marian_cases():
    hf_dir = os.path.join(OUT, "marian-hf")
    tiny_marian_hf(hf_dir).export(hf_dir, MARIAN)
    spm = open(os.path.join(MARIAN, "source.spm"), "rb").read()
    fc1 = "model.encoder.layers.0.fc1.weight"
    for side in ("source", "target"):
        marian_case(f"mar-no-{side}-spm", f"/{side}\\.spm: cannot open: No such file or "
                    "directory", lambda path, s=side: os.remove(os.path.join(path, s + ".spm")))
    for name, data, problem in (
            ("empty", b"", "empty file, not a SentencePiece model"),
            ("garbage", b"\x08\x96\x01 not a model", "not a SentencePiece model \\(the file "
             "does not parse as one: truncated, or another kind of file\\)"),
            ("truncated", spm[:len(spm) // 3], "not a SentencePiece model \\(the file does "
             "not parse as one"),
            ("text", b"the\ncat\n", "not a SentencePiece model \\("),
            ("empty-piece", b"\x0a\x00", "not a SentencePiece model \\(piece must not be "
             "empty\\)")):
        marian_case(f"mar-spm-{name}", f"/target\\.spm: {problem}",
                    overwrite("target.spm", data))
    # Normalization tables that point outside themselves (tests/bad/spm_model.py):
    # libsentencepiece trusts them and reads out of bounds at the first sentence.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import spm_model
    sides = (("source", 3, "normalization"), ("target", 5, "denormalization"))
    for name, blob, problem in spm_model.hostile_charsmaps():
        for side, field, table in sides:
            if side == "target" and name not in ("root-out-of-range", "trie-size-past-end"):
                continue  # the output's text may miss the rules: the root meets every text
            data = spm_model.with_charsmap(
                open(os.path.join(MARIAN, side + ".spm"), "rb").read(), blob, field)
            marian_case(f"mar-spm-{side}-{name}", f"/{side}\\.spm: not a usable SentencePiece "
                        f"model \\(the {table} table {problem}", overwrite(side + ".spm", data))
    marian_case("mar-spm-directory", "/source\\.spm: not a regular file",
                lambda path: (os.remove(os.path.join(path, "source.spm")),
                              os.mkdir(os.path.join(path, "source.spm"))))
    marian_case("mar-spm-key-missing", CF + "[0-9]+: tokenizer\\.tgt_spm: missing",
                edit_text("config.yaml", lambda t: t.replace(b"  tgt_spm: target.spm\n", b"")))
    marian_case("mar-vocab-extra-line", "/vocab\\.txt: 27 tokens, but the model's src "
                "vocabulary has 26 \\(src_vocab_size\\)",
                edit_text("vocab.txt", lambda t: t + b"extra\n"))
    marian_case("mar-vocab-line-missing", "/vocab\\.txt: 25 tokens, but the model's src "
                "vocabulary has 26", edit_text("vocab.txt", lambda t: t.split(b"\n", 1)[1]))
    marian_case("mar-wrong-shape", ST + f"tensor '{fc1}' has shape \\[16, 32\\], the config "
                "needs \\[32, 16\\]", marian_weights(
                    lambda h, d: (dict(h, **{fc1: dict(h[fc1], shape=[16, 32])}), d)))
    marian_case("mar-no-output-bias", ST + "missing tensor 'final_logits_bias'", marian_weights(
        lambda h, d: ({k: v for k, v in h.items() if k != "final_logits_bias"}, d)))
    input_case("in-marian-1-mib-line", os.path.join(OUT, "in-marian-1-mib-line").replace(
        ".", "\\.") + ": line 1: 1048576 bytes, more than the 65536 the SentencePiece "
        "tokenizer takes", b"x" * (1 << 20) + b"\n", model=MARIAN)


# ---- int8 weights (ted quantize, --quantize int8) -------------------------

def int8_case(name, pattern, edit, kind="model"):
    """The tiny model with int8 matrices (tools/ted_format.py's quantizer),
    its list of (name, array) tensors changed by edit(tensors) first."""
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import numpy as np
    import ted_format

    path = model_case(name, pattern, kind)
    weights = os.path.join(path, "model.safetensors")
    tensors = ted_format.quantized_tensors(sorted(ted_format.read_tensors(weights).items()))
    tensors = edit([(n, np.array(a)) for n, a in tensors])
    ted_format.write_safetensors(weights, tensors)


def int8_set(tensor, change):
    def edit(tensors):
        return [(n, change(a) if n == tensor else a) for n, a in tensors]
    return edit


def int8_cases():
    import numpy as np

    scale = LIN1 + ".scale"
    int8_case("int8-good", "", lambda t: t, kind="loads")
    int8_case("int8-scale-missing", ST + f"tensor '{LIN1}' is I8 but the file has no "
              f"'{scale}' \\(one F32 scale per row\\)", lambda t: [x for x in t if x[0] != scale])
    int8_case("int8-scale-shape", ST + f"tensor '{scale}' has shape \\[33\\], the config "
              "needs \\[32\\]", int8_set(scale, lambda a: np.append(a, a[:1])))
    int8_case("int8-scale-matrix", ST + f"tensor '{scale}' has shape \\[32, 1\\], the config "
              "needs \\[32\\]", int8_set(scale, lambda a: a.reshape(-1, 1)))
    int8_case("int8-scale-nan", ST + f"tensor '{scale}' holds nan at \\[2\\]; scales must be "
              "finite and not negative", int8_set(scale, lambda a: np.where(
                  np.arange(a.size) == 2, np.float32("nan"), a)))
    int8_case("int8-scale-negative", ST + f"tensor '{scale}' holds -0.5 at \\[0\\]; scales "
              "must be finite and not negative", int8_set(scale, lambda a: np.where(
                  np.arange(a.size) == 0, np.float32(-0.5), a)))
    int8_case("int8-scale-infinite", ST + f"tensor '{scale}' holds inf at \\[31\\]",
              int8_set(scale, lambda a: np.where(np.arange(a.size) == 31, np.float32("inf"), a)))
    int8_case("int8-bias", ST + f"tensor '{G_BIAS}' is I8; only matrices \\(Linear and "
              "embedding weights\\) may be quantized",
              int8_set(G_BIAS, lambda a: np.zeros(a.shape, dtype=np.int8)))
    int8_case("int8-orphan-scale", ST + f"tensor 'generator\\.bias\\.scale' is not part of the "
              "model", lambda t: t + [(G_BIAS + ".scale", np.ones(14, dtype=np.float32))])


def main():
    os.makedirs(OUT, exist_ok=True)
    safetensors_cases()
    config_cases()
    vocab_cases()
    input_cases()
    marian_cases()
    int8_cases()
    for row in manifest:
        print("\t".join(row))


if __name__ == "__main__":
    main()
