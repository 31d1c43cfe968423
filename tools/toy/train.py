#!/usr/bin/python3
"""Trains the toy English -> French model of models/toy-en-fr on the data of
tools/toy/generate.py, as PyTorch's "Language Translation with
nn.Transformer" tutorial does: Seq2SeqTransformer, create_mask, teacher
forcing, CrossEntropyLoss(ignore_index=PAD), Adam with the tutorial's betas
and eps; the learning rate warms up linearly, then decays to zero (cosine)
over the planned epochs. Sources and targets are wrapped in BOS ... EOS.
Batches hold sentences of similar length (bucketed) up to a token budget.

Rerun (CPU, seeded; see models/toy-en-fr/README.md for the wall time):

    /usr/bin/python3 tools/toy/generate.py
    nohup /usr/bin/python3 tools/toy/train.py > build/toy/train.out 2>&1 &

writes build/toy/model.pt (the state_dict of the epoch with the best
validation exact match) and build/toy/train_log.json (hyperparameters, steps,
per-epoch figures, wall time). Then export with tools/export_torch.py
(the command is in models/toy-en-fr/README.md).

--evals-per-epoch times an epoch it prints the mean training loss since the
last report, the validation loss (teacher forcing, all of valid) and the
exact match of the tutorial's greedy_decode on the first --valid-decode
validation sentences, and saves the state if that exact match is the best.

--threads defaults to 1: on a shared two-core machine, two intra-op threads
were several times slower than one whenever the other core was busy.
"""
import argparse
import json
import math
import os
import random
import sys
import time

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from tutorial_model import (BOS_IDX, EOS_IDX, PAD_IDX, UNK_IDX,  # noqa: E402
                            Seq2SeqTransformer, create_mask, greedy_decode)


def read_vocab(path):
    with open(path, encoding="utf-8") as f:
        tokens = [line.rstrip("\n") for line in f]
    return tokens, {t: i for i, t in enumerate(tokens)}


def read_ids(path, index):
    """Each line as [BOS] + token ids + [EOS]."""
    with open(path, encoding="utf-8") as f:
        return [[BOS_IDX] + [index.get(t, UNK_IDX) for t in line.split()] + [EOS_IDX]
                for line in f]


def batches(pairs, max_tokens, rng):
    """Bucketed batches: pairs sorted by (source, target) length after a
    shuffle, cut into runs of at most max_tokens padded source+target tokens,
    the runs shuffled."""
    order = list(range(len(pairs)))
    rng.shuffle(order)
    order.sort(key=lambda i: (len(pairs[i][0]), len(pairs[i][1])))
    out, cur, longest = [], [], 0
    for i in order:
        n = len(pairs[i][0]) + len(pairs[i][1])
        if cur and max(longest, n) * (len(cur) + 1) > max_tokens:
            out.append(cur)
            cur, longest = [], 0
        cur.append(i)
        longest = max(longest, n)
    if cur:
        out.append(cur)
    rng.shuffle(out)
    return out


def pad(seqs):
    """(seq, batch) tensor, PAD after each sequence's end."""
    width = max(len(s) for s in seqs)
    t = torch.full((width, len(seqs)), PAD_IDX, dtype=torch.long)
    for j, s in enumerate(seqs):
        t[:len(s), j] = torch.tensor(s, dtype=torch.long)
    return t


def batch_loss(model, loss_fn, src, tgt):
    tgt_input = tgt[:-1, :]
    src_mask, tgt_mask, src_padding_mask, tgt_padding_mask = create_mask(src, tgt_input)
    logits = model(src, tgt_input, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask,
                   src_padding_mask)
    tgt_out = tgt[1:, :]
    return loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))


@torch.no_grad()
def valid_loss(model, loss_fn, pairs, max_tokens):
    model.eval()
    total, count = 0.0, 0
    for idx in batches(pairs, max_tokens, random.Random(0)):
        src = pad([pairs[i][0] for i in idx])
        tgt = pad([pairs[i][1] for i in idx])
        n = int((tgt[1:] != PAD_IDX).sum())
        total += float(batch_loss(model, loss_fn, src, tgt)) * n
        count += n
    return total / count


@torch.no_grad()
def exact_match(model, pairs):
    """Share of sources whose greedy_decode (the tutorial's max_len: source
    tokens + 5) equals the reference target."""
    model.eval()
    good = 0
    for src_ids, tgt_ids in pairs:
        src = torch.tensor(src_ids, dtype=torch.long).view(-1, 1)
        out = greedy_decode(model, src, max_len=len(src_ids) + 5)
        good += out == tgt_ids[1:]
    return good / max(1, len(pairs))


def lr_at(step, total_steps, warmup, peak):
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total_steps - warmup))
    return peak * 0.5 * (1.0 + math.cos(math.pi * progress))


def main():
    ap = argparse.ArgumentParser(description="Train the toy English -> French model.")
    ap.add_argument("--data", default=os.path.join(ROOT, "build", "toy"))
    ap.add_argument("--out", default=None, help="checkpoint (default DATA/model.pt)")
    ap.add_argument("--log", default=None, help="JSON log (default DATA/train_log.json)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--layers", type=int, default=3, help="encoder and decoder layers each")
    ap.add_argument("--d-ff", type=int, default=512)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--evals-per-epoch", type=int, default=2,
                    help="validate (and keep the best state) this many times an epoch")
    ap.add_argument("--max-minutes", type=float, default=35,
                    help="stop after the validation that follows this much training time")
    ap.add_argument("--max-tokens", type=int, default=2000,
                    help="padded source+target tokens per batch")
    ap.add_argument("--lr", type=float, default=1e-3, help="peak learning rate")
    ap.add_argument("--warmup", type=int, default=400, help="warmup steps")
    ap.add_argument("--clip", type=float, default=1.0, help="gradient norm clip (0: none)")
    ap.add_argument("--valid-decode", type=int, default=200,
                    help="validation sentences greedy-decoded each epoch")
    ap.add_argument("--report", type=int, default=100, help="print the loss every N steps")
    args = ap.parse_args()
    out_path = args.out or os.path.join(args.data, "model.pt")
    log_path = args.log or os.path.join(args.data, "train_log.json")

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)

    src_tokens, src_index = read_vocab(os.path.join(args.data, "vocab.en"))
    tgt_tokens, tgt_index = read_vocab(os.path.join(args.data, "vocab.fr"))
    train = list(zip(read_ids(os.path.join(args.data, "train.en"), src_index),
                     read_ids(os.path.join(args.data, "train.fr"), tgt_index)))
    valid = list(zip(read_ids(os.path.join(args.data, "valid.en"), src_index),
                     read_ids(os.path.join(args.data, "valid.fr"), tgt_index)))

    model = Seq2SeqTransformer(args.layers, args.layers, args.d_model, args.heads,
                               len(src_tokens), len(tgt_tokens), args.d_ff, args.dropout)
    for p in model.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)
    params = sum(p.numel() for p in model.parameters())
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD_IDX)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.98), eps=1e-9)

    steps_per_epoch = len(batches(train, args.max_tokens, random.Random(0)))
    total_steps = steps_per_epoch * args.epochs
    print(f"train {len(train)} valid {len(valid)} vocab {len(src_tokens)}/{len(tgt_tokens)} "
          f"parameters {params} ({params * 4 / 1e6:.1f} MB fp32) "
          f"steps {steps_per_epoch}/epoch x {args.epochs}", flush=True)

    log = {"hyperparameters": {k: v for k, v in vars(args).items()},
           "parameters": params, "train_pairs": len(train), "valid_pairs": len(valid),
           "src_vocab": len(src_tokens), "tgt_vocab": len(tgt_tokens),
           "steps_per_epoch": steps_per_epoch, "epochs": []}
    start = time.time()
    step = 0
    best = (-1.0, float("inf"))
    decode_slice = valid[:args.valid_decode]
    stop = False
    for epoch in range(1, args.epochs + 1):
        model.train()
        run_loss, run_n, ep_loss, ep_n = 0.0, 0, 0.0, 0
        epoch_batches = batches(train, args.max_tokens, rng)
        checkpoints = {round(len(epoch_batches) * k / args.evals_per_epoch)
                       for k in range(1, args.evals_per_epoch + 1)}
        for b, idx in enumerate(epoch_batches, 1):
            model.train()
            lr = lr_at(step, total_steps, args.warmup, args.lr)
            for group in optimizer.param_groups:
                group["lr"] = lr
            src = pad([train[i][0] for i in idx])
            tgt = pad([train[i][1] for i in idx])
            loss = batch_loss(model, loss_fn, src, tgt)
            optimizer.zero_grad()
            loss.backward()
            if args.clip:
                nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            optimizer.step()
            step += 1
            run_loss += float(loss)
            run_n += 1
            ep_loss += float(loss)
            ep_n += 1
            if step % args.report == 0:
                print(f"  step {step}/{total_steps} loss {run_loss / run_n:.4f} lr {lr:.2e} "
                      f"{time.time() - start:.0f}s", flush=True)
                run_loss, run_n = 0.0, 0
            if b not in checkpoints:
                continue
            vloss = valid_loss(model, loss_fn, valid, args.max_tokens)
            em = exact_match(model, decode_slice)
            elapsed = time.time() - start
            saved = (em, -vloss) > (best[0], -best[1])
            if saved:
                best = (em, vloss)
                torch.save(model.state_dict(), out_path)
            where = epoch - 1 + b / len(epoch_batches)
            print(f"epoch {where:.2f} train loss {ep_loss / ep_n:.4f} valid loss {vloss:.4f} "
                  f"valid exact match {em:.3f} ({len(decode_slice)} sentences) "
                  f"{elapsed:.0f}s{' saved' if saved else ''}", flush=True)
            log["epochs"].append({"epoch": round(where, 2), "steps": step,
                                  "train_loss": ep_loss / ep_n, "valid_loss": vloss,
                                  "valid_exact_match": em, "seconds": round(elapsed, 1),
                                  "saved": saved})
            ep_loss, ep_n = 0.0, 0
            log["steps"] = step
            log["wall_seconds"] = round(elapsed, 1)
            log["best_valid_exact_match"] = best[0]
            with open(log_path, "w") as f:
                json.dump(log, f, indent=2)
            if elapsed > args.max_minutes * 60:
                print(f"time limit ({args.max_minutes} min) reached", flush=True)
                stop = True
                break
        if stop:
            break
    print(f"done: {step} steps, {time.time() - start:.0f}s, best valid exact match {best[0]:.3f}, "
          f"checkpoint {out_path}", flush=True)


if __name__ == "__main__":
    main()
