#!/usr/bin/python3
"""Exports a PyTorch Seq2SeqTransformer (tools/tutorial_model.py, the model of
PyTorch's "Language Translation with nn.Transformer" tutorial) to a ted model
directory: config.yaml, model.safetensors, vocab.src and vocab.tgt.

    /usr/bin/python3 tools/export_torch.py CHECKPOINT --src-vocab FILE \\
        --tgt-vocab FILE --heads N [--activation relu|gelu] [--norm-first] \\
        [--layer-norm-eps E] [--no-source-bos-eos] [--lowercase] \\
        [--max-length-offset K] --out DIR

CHECKPOINT is what torch.save(model.state_dict()) wrote. The sizes (d_model,
d_ff, layer counts, vocabulary sizes) are read from the tensor shapes; what
the shapes cannot tell (heads, activation, norm placement, LayerNorm epsilon)
comes from the options and must match how the model was built. The vocabulary
files hold one token per line, the line number (from 0) being the id, with
<unk> <pad> <bos> <eos> at ids 0..3 as in the tutorial.

From Python: export(state_dict, out_dir, src_vocab=..., tgt_vocab=..., heads=...).
Errors raise ExportError; the command prints them on one line and exits 1.
"""
import argparse
import math
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# read_safetensors and yaml_float are used through this module by the tests
from ted_format import (ALIGN, ExportError, read_safetensors,  # noqa: E402,F401
                        write_safetensors, yaml_float)
import ted_format  # noqa: E402

UNK_ID, PAD_ID, BOS_ID, EOS_ID = 0, 1, 2, 3

# The tutorial's translate() decodes at most (source tokens incl. BOS/EOS) + 5
# positions, BOS included, i.e. source tokens + 4 generated tokens.
DEFAULT_MAX_LENGTH_OFFSET = 4

POS_KEY = "positional_encoding.pos_embedding"
DEFAULT_MAX_POSITIONS = 5000  # the tutorial's PositionalEncoding maxlen

ATTENTION = ("in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias")


def _layer_count(state_dict, prefix):
    """Number of layers under `prefix` (e.g. transformer.encoder.layers.),
    checking that their indices run 0..n-1."""
    indices = set()
    for key in state_dict:
        if key.startswith(prefix):
            head = key[len(prefix):].split(".", 1)[0]
            if not head.isdigit():
                raise ExportError(f"unexpected tensor {key}")
            indices.add(int(head))
    if not indices:
        raise ExportError(f"no tensors {prefix}N.*: not a Seq2SeqTransformer state_dict")
    count = max(indices) + 1
    missing = sorted(set(range(count)) - indices)
    if missing:
        raise ExportError(f"layer {prefix}{missing[0]} is missing")
    return count


def _expected_shapes(d_model, d_ff, encoder_layers, decoder_layers, src_vocab_size,
                     tgt_vocab_size):
    """Name -> shape of every tensor ted reads, in file order."""
    d, f = d_model, d_ff
    attention = {"in_proj_weight": (3 * d, d), "in_proj_bias": (3 * d,),
                 "out_proj.weight": (d, d), "out_proj.bias": (d,)}
    feed_forward = {"linear1.weight": (f, d), "linear1.bias": (f,),
                    "linear2.weight": (d, f), "linear2.bias": (d,)}
    shapes = {"src_tok_emb.embedding.weight": (src_vocab_size, d),
              "tgt_tok_emb.embedding.weight": (tgt_vocab_size, d)}
    for i in range(encoder_layers):
        p = f"transformer.encoder.layers.{i}."
        for name in ATTENTION:
            shapes[p + "self_attn." + name] = attention[name]
        for name, shape in feed_forward.items():
            shapes[p + name] = shape
        for n in (1, 2):
            shapes[p + f"norm{n}.weight"] = (d,)
            shapes[p + f"norm{n}.bias"] = (d,)
    shapes["transformer.encoder.norm.weight"] = (d,)
    shapes["transformer.encoder.norm.bias"] = (d,)
    for i in range(decoder_layers):
        p = f"transformer.decoder.layers.{i}."
        for block in ("self_attn.", "multihead_attn."):
            for name in ATTENTION:
                shapes[p + block + name] = attention[name]
        for name, shape in feed_forward.items():
            shapes[p + name] = shape
        for n in (1, 2, 3):
            shapes[p + f"norm{n}.weight"] = (d,)
            shapes[p + f"norm{n}.bias"] = (d,)
    shapes["transformer.decoder.norm.weight"] = (d,)
    shapes["transformer.decoder.norm.bias"] = (d,)
    shapes["generator.weight"] = (tgt_vocab_size, d)
    shapes["generator.bias"] = (tgt_vocab_size,)
    return shapes


def _to_numpy(tensor):
    if hasattr(tensor, "detach"):
        tensor = tensor.detach().cpu()
        if not tensor.is_floating_point():
            raise ExportError(f"tensor of dtype {tensor.dtype} where floats were expected")
        tensor = tensor.float().numpy()
    return np.asarray(tensor, dtype=np.float32)


def interleaved_positions(max_positions, d_model):
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(...), float64."""
    den = np.exp(-np.arange(0, d_model, 2, dtype=np.float64) * math.log(10000.0) / d_model)
    angles = np.arange(max_positions, dtype=np.float64)[:, None] * den
    table = np.zeros((max_positions, d_model))
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles)[:, : d_model // 2]
    return table


def read_vocab(path):
    """The tokens of a vocabulary file (one per line, trailing CR dropped),
    rejecting what ted's loader rejects: empty lines and duplicates."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ExportError(f"{path}: {e.strerror}") from None
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    seen = {}
    for number, line in enumerate(lines, 1):
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line:
            raise ExportError(f"{path}:{number}: empty line")
        if b"\0" in line:
            raise ExportError(f"{path}:{number}: NUL byte")
        if line in seen:
            raise ExportError(f"{path}:{number}: duplicate token (first on line {seen[line]})")
        seen[line] = number
    if not seen:
        raise ExportError(f"{path}: empty vocabulary")
    return list(seen)


def analyze(state_dict):
    """The sizes a state_dict implies; checks every tensor's presence and
    shape. Returns (sizes, max_positions or None)."""
    for key in ("src_tok_emb.embedding.weight", "tgt_tok_emb.embedding.weight",
                "generator.weight"):
        if key not in state_dict:
            raise ExportError(f"tensor {key} is missing: not a Seq2SeqTransformer state_dict")
    src_vocab_size, d_model = tuple(state_dict["src_tok_emb.embedding.weight"].shape)
    tgt_vocab_size = tuple(state_dict["tgt_tok_emb.embedding.weight"].shape)[0]
    key = "transformer.encoder.layers.0.linear1.weight"
    if key not in state_dict:
        raise ExportError(f"tensor {key} is missing")
    d_ff = tuple(state_dict[key].shape)[0]
    sizes = {
        "d_model": int(d_model),
        "d_ff": int(d_ff),
        "encoder_layers": _layer_count(state_dict, "transformer.encoder.layers."),
        "decoder_layers": _layer_count(state_dict, "transformer.decoder.layers."),
        "src_vocab_size": int(src_vocab_size),
        "tgt_vocab_size": int(tgt_vocab_size),
    }
    expected = _expected_shapes(**sizes)
    for name, shape in expected.items():
        if name not in state_dict:
            raise ExportError(f"tensor {name} is missing")
        actual = tuple(state_dict[name].shape)
        if actual != shape:
            raise ExportError(f"tensor {name} has shape {list(actual)}, expected {list(shape)}")
    for name in state_dict:
        if name not in expected and name != POS_KEY:
            raise ExportError(f"unexpected tensor {name}: not the tutorial's Seq2SeqTransformer")

    max_positions = None
    if POS_KEY in state_dict:
        table = _to_numpy(state_dict[POS_KEY]).astype(np.float64)
        if table.ndim == 3 and table.shape[1] == 1:
            table = table[:, 0, :]
        if table.ndim != 2 or table.shape[1] != d_model or table.shape[0] < 1:
            raise ExportError(f"{POS_KEY} has shape {list(state_dict[POS_KEY].shape)}, "
                              f"expected [N, 1, {d_model}]")
        diff = np.abs(table - interleaved_positions(table.shape[0], d_model)).max()
        if not diff <= 1e-2:
            raise ExportError(f"{POS_KEY} is not the interleaved sin/cos table "
                              f"(max abs difference {diff:.3g})")
        max_positions = table.shape[0]
    return sizes, max_positions


def config_yaml(config, source):
    m, t, d = config["model"], config["tokenizer"], config["decoding"]
    model = [(key, m[key]) for key in ("d_model", "heads", "encoder_layers", "decoder_layers",
                                       "d_ff", "src_vocab_size", "tgt_vocab_size")]
    model += [("activation", m["activation"], "relu | gelu (exact erf gelu)"),
              ("norm_first", m["norm_first"]), ("layer_norm_eps", m["layer_norm_eps"]),
              ("max_positions", m["max_positions"]),
              ("scale_embedding", m["scale_embedding"],
               "TokenEmbedding multiplies by sqrt(d_model)")]
    model += [(key, m[key]) for key in ("positional_encoding", "encoder_final_norm",
                                        "decoder_final_norm")]
    tokenizer = [(key, t[key]) for key in ("type", "lowercase", "src_vocab", "tgt_vocab",
                                           "unk_id", "pad_id", "bos_id", "eos_id")]
    tokenizer += [("source_bos", t["source_bos_eos"]), ("source_eos", t["source_bos_eos"])]
    decoding = ["Target tokens generated, EOS counted: at most min(max_length, source",
                "tokens incl. BOS/EOS + max_length_offset); 0 turns a bound off. The",
                "tutorial's greedy_decode(max_len = source tokens + 5) counts its BOS,",
                "so it generates at most source tokens + 4.",
                ("max_length", d["max_length"]), ("max_length_offset", d["max_length_offset"]),
                ("early_stopping", d["early_stopping"],
                 "beam search stops once no open hypothesis can win")]
    return ted_format.config_yaml(
        [f"ted model exported by tools/export_torch.py from {source}"],
        [("model", model), ("weights", config["weights"]), ("tokenizer", tokenizer),
         ("decoding", decoding)])


def export(state_dict, out_dir, src_vocab, tgt_vocab, heads, activation="relu",
           norm_first=False, layer_norm_eps=1e-5, source_bos_eos=True, lowercase=False,
           max_length_offset=DEFAULT_MAX_LENGTH_OFFSET, max_length=0, source=None,
           align=ALIGN, quantize=None):
    """Writes the ted model directory `out_dir` for a Seq2SeqTransformer
    state_dict; `src_vocab` and `tgt_vocab` are vocabulary file paths.
    Returns the config written, as a dict of sections. quantize "int8"
    stores the matrices as int8 (ted_format.write_safetensors). Raises
    ExportError."""
    if hasattr(state_dict, "state_dict") and callable(state_dict.state_dict):
        state_dict = state_dict.state_dict()
    if all(k.startswith("module.") for k in state_dict):  # saved from DataParallel
        state_dict = {k[len("module."):]: v for k, v in state_dict.items()}
    if activation not in ("relu", "gelu"):
        raise ExportError(f"activation {activation!r}: expected relu or gelu")
    if not (isinstance(layer_norm_eps, (int, float)) and math.isfinite(layer_norm_eps)
            and layer_norm_eps > 0):
        raise ExportError(f"layer_norm_eps {layer_norm_eps!r}: expected a positive number")
    if max_length_offset < 0 or max_length < 0:
        raise ExportError("max_length and max_length_offset must not be negative")

    sizes, max_positions = analyze(state_dict)
    if heads < 1 or sizes["d_model"] % heads:
        raise ExportError(f"heads {heads} does not divide d_model {sizes['d_model']}")
    for path, key, size in ((src_vocab, "src_tok_emb.embedding.weight", sizes["src_vocab_size"]),
                            (tgt_vocab, "tgt_tok_emb.embedding.weight", sizes["tgt_vocab_size"])):
        count = len(read_vocab(path))
        if count != size:
            raise ExportError(f"{path}: {count} tokens, but {key} has {size} rows")

    config = {
        "model": dict(
            d_model=sizes["d_model"], heads=heads,
            encoder_layers=sizes["encoder_layers"], decoder_layers=sizes["decoder_layers"],
            d_ff=sizes["d_ff"], src_vocab_size=sizes["src_vocab_size"],
            tgt_vocab_size=sizes["tgt_vocab_size"], activation=activation,
            norm_first=bool(norm_first), layer_norm_eps=float(layer_norm_eps),
            max_positions=max_positions or DEFAULT_MAX_POSITIONS, scale_embedding=True,
            positional_encoding="interleaved",
            # nn.Transformer always ends its encoder and decoder with a LayerNorm
            encoder_final_norm="transformer.encoder.norm.weight" in state_dict,
            decoder_final_norm="transformer.decoder.norm.weight" in state_dict),
        "weights": "model.safetensors",
        "tokenizer": dict(type="whitespace", lowercase=bool(lowercase), src_vocab="vocab.src",
                          tgt_vocab="vocab.tgt", unk_id=UNK_ID, pad_id=PAD_ID, bos_id=BOS_ID,
                          eos_id=EOS_ID, source_bos_eos=bool(source_bos_eos)),
        "decoding": dict(max_length=int(max_length), max_length_offset=int(max_length_offset),
                         early_stopping="never"),
    }

    names = _expected_shapes(**sizes)
    tensors = [(name, _to_numpy(state_dict[name])) for name in names]
    try:
        os.makedirs(out_dir, exist_ok=True)
        write_safetensors(os.path.join(out_dir, config["weights"]), tensors, align, quantize)
        for path, name in ((src_vocab, "vocab.src"), (tgt_vocab, "vocab.tgt")):
            target = os.path.join(out_dir, name)
            if not (os.path.exists(target) and os.path.samefile(path, target)):
                shutil.copyfile(path, target)
        with open(os.path.join(out_dir, "config.yaml"), "w", encoding="utf-8") as f:
            f.write(config_yaml(config, source or "a Seq2SeqTransformer state_dict"))
    except OSError as e:
        raise ExportError(f"{e.filename or out_dir}: {e.strerror}") from None
    return config


def load_checkpoint(path):
    import torch  # only the command needs it

    try:
        obj = torch.load(path, map_location="cpu")
    except Exception as e:  # torch raises many kinds for unreadable files
        raise ExportError(f"{path}: cannot load: {e}".splitlines()[0]) from None
    if hasattr(obj, "state_dict") and callable(obj.state_dict):
        obj = obj.state_dict()
    if not isinstance(obj, dict):
        raise ExportError(f"{path}: not a state_dict (a {type(obj).__name__})")
    return obj


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Export a PyTorch tutorial Seq2SeqTransformer to a ted model directory.")
    parser.add_argument("checkpoint", help="file written by torch.save(model.state_dict())")
    parser.add_argument("--src-vocab", required=True, help="source vocabulary, a token a line")
    parser.add_argument("--tgt-vocab", required=True, help="target vocabulary, a token a line")
    parser.add_argument("--heads", type=int, required=True, help="attention heads")
    parser.add_argument("--activation", choices=("relu", "gelu"), default="relu")
    parser.add_argument("--norm-first", action="store_true",
                        help="the model was built with norm_first=True (pre-norm)")
    parser.add_argument("--layer-norm-eps", type=float, default=1e-5)
    parser.add_argument("--no-source-bos-eos", action="store_true",
                        help="do not wrap sources in <bos> ... <eos>")
    parser.add_argument("--lowercase", action="store_true", help="lowercase the input text")
    parser.add_argument("--max-length-offset", type=int, default=DEFAULT_MAX_LENGTH_OFFSET,
                        help="generate at most source tokens + K target tokens (default: "
                             "%(default)s, as the tutorial's translate())")
    parser.add_argument("--out", required=True, help="the model directory to write")
    parser.add_argument("--quantize", choices=ted_format.QUANTIZATIONS,
                        help="store Linear and embedding weights as int8, one F32 scale per "
                        "row (what `ted quantize` writes)")
    args = parser.parse_args(argv)
    return ted_format.run_export("export_torch", args.out, lambda: export(
        load_checkpoint(args.checkpoint), args.out, args.src_vocab, args.tgt_vocab, args.heads,
        activation=args.activation, norm_first=args.norm_first,
        layer_norm_eps=args.layer_norm_eps, source_bos_eos=not args.no_source_bos_eos,
        lowercase=args.lowercase, max_length_offset=args.max_length_offset,
        source=args.checkpoint, quantize=args.quantize)["model"])


if __name__ == "__main__":
    sys.exit(main())
