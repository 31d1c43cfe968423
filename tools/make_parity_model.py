#!/usr/bin/python3
"""Trains the small Seq2SeqTransformer that tests/parity/test_parity.py
decodes with both ted and PyTorch, and writes it to tests/data/parity-model/:
model.pt (torch.save of the state_dict), vocab.src and vocab.tgt.

The task needs attention: each source word s<i> is translated to the target
word of a fixed random mapping, and the target is the source in reverse
order ("s3 s17 s5" -> "t22 t9 t14"). Sources have 1..MAX_TRAIN_WORDS words.

To regenerate (seeded, CPU, single thread; one to two minutes):

    /usr/bin/python3 tools/make_parity_model.py [--out tests/data/parity-model]

The result depends on the torch build; the parity test does not depend on
the exact weights, only on the model being the one it exports.
"""
import argparse
import os
import random
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tutorial_model import (BOS_IDX, EOS_IDX, PAD_IDX, PositionalEncoding,  # noqa: E402
                            Seq2SeqTransformer, create_mask)

SPECIALS = ["<unk>", "<pad>", "<bos>", "<eos>"]
SOURCE_WORDS = 24
TARGET_WORDS = 30          # a few target words are never produced
D_MODEL, HEADS, ENCODER_LAYERS, DECODER_LAYERS, D_FF = 64, 4, 2, 2, 128
MAX_POSITIONS = 128        # a shorter positional table than the tutorial's 5000 keeps the file small
MAX_TRAIN_WORDS = 10
SEED = 1234
STEPS = 2000
BATCH = 64

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data",
                           "parity-model")


def vocabularies():
    src = SPECIALS + [f"s{i}" for i in range(SOURCE_WORDS)]
    tgt = SPECIALS + [f"t{i}" for i in range(TARGET_WORDS)]
    return src, tgt


def word_mapping():
    """Source id -> target id of the task (fixed by SEED)."""
    rng = random.Random(SEED)
    targets = rng.sample(range(len(SPECIALS), len(SPECIALS) + TARGET_WORDS), SOURCE_WORDS)
    return {len(SPECIALS) + i: t for i, t in enumerate(targets)}


def build_model(max_positions=MAX_POSITIONS, dropout=0.1):
    model = Seq2SeqTransformer(ENCODER_LAYERS, DECODER_LAYERS, D_MODEL, HEADS,
                               len(SPECIALS) + SOURCE_WORDS, len(SPECIALS) + TARGET_WORDS,
                               dim_feedforward=D_FF, dropout=dropout)
    model.positional_encoding = PositionalEncoding(D_MODEL, dropout=dropout, maxlen=max_positions)
    return model


def batch(rng, mapping, size):
    """(src, tgt) id tensors (seq, batch), padded, each wrapped in BOS ... EOS."""
    sources = []
    for _ in range(size):
        n = rng.randint(1, MAX_TRAIN_WORDS)
        sources.append([rng.randrange(len(SPECIALS), len(SPECIALS) + SOURCE_WORDS)
                        for _ in range(n)])
    targets = [[mapping[w] for w in reversed(s)] for s in sources]

    def pad(seqs):
        seqs = [[BOS_IDX] + s + [EOS_IDX] for s in seqs]
        width = max(len(s) for s in seqs)
        return torch.tensor([s + [PAD_IDX] * (width - len(s)) for s in seqs]).t()

    return pad(sources), pad(targets)


def train(log=True):
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    rng = random.Random(SEED)
    mapping = word_mapping()
    model = build_model()
    for p in model.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.98), eps=1e-9)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / 200) * max(0.1, 1 - step / STEPS))
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD_IDX)
    model.train()
    start = time.time()
    for step in range(STEPS):
        src, tgt = batch(rng, mapping, BATCH)
        tgt_in, tgt_out = tgt[:-1], tgt[1:]
        src_mask, tgt_mask, src_pad, tgt_pad = create_mask(src, tgt_in)
        logits = model(src, tgt_in, src_mask, tgt_mask, src_pad, tgt_pad, src_pad)
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        if log and (step % 500 == 0 or step == STEPS - 1):
            print(f"step {step}: loss {loss.item():.4f} ({time.time() - start:.0f} s)",
                  file=sys.stderr)
    model.eval()
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=DEFAULT_OUT)
    args = parser.parse_args()
    model = train()
    os.makedirs(args.out, exist_ok=True)
    torch.save(model.state_dict(), os.path.join(args.out, "model.pt"))
    src, tgt = vocabularies()
    for name, tokens in (("vocab.src", src), ("vocab.tgt", tgt)):
        with open(os.path.join(args.out, name), "w", encoding="utf-8") as f:
            f.write("".join(t + "\n" for t in tokens))
    print(f"wrote {os.path.normpath(args.out)}", file=sys.stderr)


if __name__ == "__main__":
    main()
