#!/usr/bin/python3
"""Translates with the PyTorch checkpoint of tools/toy/train.py, as ted does
with the exported model: whitespace tokens, source wrapped in BOS ... EOS,
the tutorial's greedy_decode with max_len = source tokens (BOS and EOS
included) + 5, output tokens joined by spaces up to EOS. One output line
per input line (stdin or --input), for tools/toy/evaluate.py:

    /usr/bin/python3 tools/toy/translate_torch.py --input models/toy-en-fr/test.en \\
        > build/toy/test.torch.fr
    /usr/bin/python3 tools/toy/evaluate.py build/toy/test.torch.fr models/toy-en-fr/test.fr

The model's sizes are read from the checkpoint; --heads must match training.
--model-dir reads the weights of an exported model directory instead
(model.safetensors, vocab.src, vocab.tgt), as the test of the shipped model
does to make its reference:

    /usr/bin/python3 tools/toy/translate_torch.py --model-dir models/toy-en-fr \\
        --input models/toy-en-fr/test.en > models/toy-en-fr/test.torch.fr
"""
import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from tutorial_model import (BOS_IDX, EOS_IDX, UNK_IDX, Seq2SeqTransformer,  # noqa: E402
                            greedy_decode)


def load(checkpoint, heads):
    return build(torch.load(checkpoint, map_location="cpu"), heads)


def load_exported(model_dir, heads):
    """The tutorial model from an exported directory's safetensors file
    (tensor names are the state_dict's; the positional table is a buffer
    the model computes itself)."""
    import ted_format
    tensors = ted_format.read_tensors(os.path.join(model_dir, "model.safetensors"))
    return build({name: torch.from_numpy(a.copy()) for name, a in tensors.items()}, heads,
                 strict=False)


def build(state, heads, strict=True):
    d_model = state["src_tok_emb.embedding.weight"].shape[1]
    src_vocab = state["src_tok_emb.embedding.weight"].shape[0]
    tgt_vocab = state["tgt_tok_emb.embedding.weight"].shape[0]
    d_ff = state["transformer.encoder.layers.0.linear1.weight"].shape[0]
    enc = len({k.split(".")[3] for k in state if k.startswith("transformer.encoder.layers.")})
    dec = len({k.split(".")[3] for k in state if k.startswith("transformer.decoder.layers.")})
    model = Seq2SeqTransformer(enc, dec, d_model, heads, src_vocab, tgt_vocab, d_ff, 0.0)
    missing, unexpected = model.load_state_dict(state, strict=strict)
    if set(missing) - {"positional_encoding.pos_embedding"} or unexpected:
        raise SystemExit(f"weights do not fit the tutorial model: missing {missing}, "
                         f"unexpected {unexpected}")
    model.eval()
    return model


def main():
    data = os.path.join(ROOT, "build", "toy")
    ap = argparse.ArgumentParser(description="Greedy translation with the PyTorch checkpoint.")
    ap.add_argument("--checkpoint", default=os.path.join(data, "model.pt"))
    ap.add_argument("--src-vocab", default=os.path.join(data, "vocab.en"))
    ap.add_argument("--tgt-vocab", default=os.path.join(data, "vocab.fr"))
    ap.add_argument("--model-dir", help="an exported model directory instead of the checkpoint")
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--input", help="source file (default: stdin)")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    if args.model_dir:
        args.src_vocab = os.path.join(args.model_dir, "vocab.src")
        args.tgt_vocab = os.path.join(args.model_dir, "vocab.tgt")
    with open(args.src_vocab, encoding="utf-8") as f:
        src_index = {t: i for i, t in enumerate(f.read().splitlines())}
    with open(args.tgt_vocab, encoding="utf-8") as f:
        tgt_tokens = f.read().splitlines()
    if args.model_dir:
        model = load_exported(args.model_dir, args.heads)
    else:
        model = load(args.checkpoint, args.heads)

    source = open(args.input, encoding="utf-8") if args.input else sys.stdin
    for line in source:
        ids = [BOS_IDX] + [src_index.get(t, UNK_IDX) for t in line.lower().split()] + [EOS_IDX]
        out = greedy_decode(model, torch.tensor(ids, dtype=torch.long).view(-1, 1),
                            max_len=len(ids) + 5)
        if EOS_IDX in out:
            out = out[:out.index(EOS_IDX)]
        print(" ".join(tgt_tokens[i] for i in out), flush=True)


if __name__ == "__main__":
    main()
