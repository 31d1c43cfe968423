#!/usr/bin/python3
"""Builds a Transformer-base Seq2SeqTransformer (tools/tutorial_model.py,
the tutorial's layout) with random weights from a fixed seed, and exports it
to a ted model directory, to time with `ted bench` by hand (`make bench` uses
bench/make_marian_model.py's Marian checkpoint).

    /usr/bin/python3 bench/make_base_model.py [--out DIR] [--force]

Transformer-base: d_model 512, 8 heads, 6 encoder + 6 decoder layers, d_ff
2048, relu, post-norm, 32 000 source and target tokens. Weight matrices and
embeddings are drawn from N(0, 0.02^2), biases from N(0, 0.02^2), LayerNorm
gains from 1 + N(0, 0.02^2): post-norm keeps the activations at unit scale,
so attention and softmax work on ordinary values, not zeros or overflows.

DIR (default build/bench/base) receives config.yaml, model.safetensors,
vocab.src, vocab.tgt (<unk> <pad> <bos> <eos> w4 w5 ...), the PyTorch
state_dict (state_dict.pt) and stamp.json. When stamp.json already names
this script's version and seed and every file is there, nothing is done.
"""
import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

VERSION = 1  # bump when the model or its files change
SEED = 20240611
BASE = dict(num_encoder_layers=6, num_decoder_layers=6, emb_size=512, nhead=8,
            src_vocab_size=32000, tgt_vocab_size=32000, dim_feedforward=2048,
            activation="relu", norm_first=False, layer_norm_eps=1e-5)
STD = 0.02
FILES = ("config.yaml", "model.safetensors", "vocab.src", "vocab.tgt", "state_dict.pt")
DEFAULT_OUT = os.path.join(ROOT, "build", "bench", "base")


def stamp():
    return {"version": VERSION, "seed": SEED, "std": STD, **BASE}


def up_to_date(out_dir):
    try:
        with open(os.path.join(out_dir, "stamp.json"), encoding="utf-8") as f:
            if json.load(f) != stamp():
                return False
    except (OSError, ValueError):
        return False
    return all(os.path.isfile(os.path.join(out_dir, name)) for name in FILES)


def build_model():
    """The Transformer-base model with its seeded random weights (eval mode)."""
    import torch
    from tutorial_model import Seq2SeqTransformer

    torch.manual_seed(SEED)
    model = Seq2SeqTransformer(dropout=0.0, **BASE)
    generator = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=generator) * STD
            if ".norm" in name and name.endswith(".weight"):
                p.copy_(1.0 + noise)  # LayerNorm gain
            else:
                p.copy_(noise)
    return model.eval()


def write_vocab(path, size):
    tokens = ["<unk>", "<pad>", "<bos>", "<eos>"] + [f"w{i}" for i in range(4, size)]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(tokens) + "\n")


def make(out_dir, force=False):
    """Writes the model directory unless it is up to date; returns out_dir."""
    if not force and up_to_date(out_dir):
        print(f"make_base_model: {out_dir} is up to date", file=sys.stderr)
        return out_dir
    import torch
    from export_torch import export

    start = time.time()
    os.makedirs(out_dir, exist_ok=True)
    stamp_path = os.path.join(out_dir, "stamp.json")
    if os.path.exists(stamp_path):
        os.remove(stamp_path)  # a failure below leaves the directory stale
    model = build_model()
    state_dict = model.state_dict()
    tmp = os.path.join(out_dir, "state_dict.pt.tmp")
    torch.save(state_dict, tmp)
    os.replace(tmp, os.path.join(out_dir, "state_dict.pt"))
    vocab_dir = os.path.join(out_dir, "vocab-tmp")
    os.makedirs(vocab_dir, exist_ok=True)
    src_vocab = os.path.join(vocab_dir, "src")
    tgt_vocab = os.path.join(vocab_dir, "tgt")
    write_vocab(src_vocab, BASE["src_vocab_size"])
    write_vocab(tgt_vocab, BASE["tgt_vocab_size"])
    export(state_dict, out_dir, src_vocab=src_vocab, tgt_vocab=tgt_vocab, heads=BASE["nhead"],
           activation=BASE["activation"], norm_first=BASE["norm_first"],
           layer_norm_eps=BASE["layer_norm_eps"],
           source=f"bench/make_base_model.py (seed {SEED})")
    for path in (src_vocab, tgt_vocab):
        os.remove(path)
    os.rmdir(vocab_dir)
    with open(stamp_path, "w", encoding="utf-8") as f:
        json.dump(stamp(), f, indent=1)
        f.write("\n")
    size = os.path.getsize(os.path.join(out_dir, "model.safetensors"))
    print(f"make_base_model: wrote {out_dir} ({size / 2**20:.1f} MiB of weights) "
          f"in {time.time() - start:.1f} s", file=sys.stderr)
    return out_dir


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=DEFAULT_OUT, help="model directory (default: %(default)s)")
    parser.add_argument("--force", action="store_true", help="rebuild even when up to date")
    args = parser.parse_args(argv)
    make(args.out, args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
