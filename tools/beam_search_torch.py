#!/usr/bin/python3
"""A reference beam search in PyTorch, over an exported ted model directory
(config.yaml + model.safetensors + vocabularies), for the parity test
tests/parity/test_beam.py. It follows docs/decoding.md step by step but
shares nothing with ted's C code: the model is the tutorial's
Seq2SeqTransformer (tools/tutorial_model.py) with the exported weights, and
every step re-runs the decoder over each hypothesis' whole prefix (no
key/value cache, no reordering).

    /usr/bin/python3 tools/beam_search_torch.py MODEL_DIR [--beam N]
        [--length-penalty A] [--n-best K] [--max-length N]
        [--early-stopping true|false|never] < SOURCES

prints, per hypothesis, the line `ted translate --n-best K --scores` prints:
INDEX ||| TRANSLATION ||| SCORE ||| LOG-PROB ||| TOKEN-LOG-PROBS.

The algorithm, per sentence, with max_len target tokens allowed (EOS
counted) and lp(n) = ((5 + n) / 6)^alpha:
  - open hypotheses start as one, empty; finished ones are kept aside, the
    beam_size best by score;
  - every step, each open hypothesis h is extended by every token t, with
    log-prob total(h) + log_softmax(logits(h))[t]; the candidates are sorted
    by that log-prob (descending), then by h's rank, then by t;
  - among the first beam_size candidates, those ending in EOS are finished,
    scored total / lp(length); the first beam_size candidates that do not
    end in EOS (anywhere in the order) are the next open hypotheses, in
    that order;
  - once beam_size are finished, the search stops as early_stopping says
    (transformers' BeamHypotheses.is_done), with `best` the best
    candidate's log-prob and `worst` the lowest kept score: true at once;
    false when best / lp(length) <= worst; never when best / lp(max_len)
    <= worst (best / lp(length) with alpha 0);
  - at max_len tokens the search stops; unless the rule says it is done
    after the EOS candidates finished, the next open hypotheses finish too;
  - the result is the n_best best finished, by score (ties: first finished).
"""
import argparse
import itertools
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import export_torch  # noqa: E402
from tutorial_model import (PositionalEncoding, Seq2SeqTransformer,  # noqa: E402
                            generate_square_subsequent_mask)

DTYPES = {"F32": np.float32, "F16": np.float16}


def read_config(path):
    """config.yaml as written by tools/export_torch.py (block style, two
    levels, scalar values) -> {"model": {...}, "weights": ..., ...}, values
    as strings."""
    config, section = {}, None
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.split("#", 1)[0].rstrip()
            if not line.strip():
                continue
            key, _, value = line.strip().partition(":")
            value = value.strip()
            if line.startswith(" "):
                if section is None:
                    raise ValueError(f"{path}: unexpected indented line {raw.strip()!r}")
                config[section][key] = value
            elif value:
                config[key], section = value, None
            else:
                config[key], section = {}, key
    return config


def read_tokens(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\r") for line in f.read().split("\n")[:-1]]


class Model:
    """An exported model directory loaded into the tutorial's model."""

    def __init__(self, model_dir):
        cfg = read_config(os.path.join(model_dir, "config.yaml"))
        m, tok, dec = cfg["model"], cfg["tokenizer"], cfg.get("decoding") or {}
        for key, want in (("scale_embedding", "true"), ("positional_encoding", "interleaved"),
                          ("encoder_final_norm", "true"), ("decoder_final_norm", "true"),
                          ("type", "whitespace")):
            got = m.get(key, tok.get(key, want)) if key != "type" else tok.get(key, want)
            if got != want:
                raise ValueError(f"{key}: {got} is not what the tutorial model does ({want})")
        self.max_positions = int(m.get("max_positions", 5000))
        model = Seq2SeqTransformer(
            int(m["encoder_layers"]), int(m["decoder_layers"]), int(m["d_model"]),
            int(m["heads"]), int(m["src_vocab_size"]), int(m["tgt_vocab_size"]),
            dim_feedforward=int(m["d_ff"]), dropout=0.0, activation=m.get("activation", "relu"),
            norm_first=m.get("norm_first", "false") == "true",
            layer_norm_eps=float(m.get("layer_norm_eps", "1e-5")))
        model.positional_encoding = PositionalEncoding(int(m["d_model"]), 0.0,
                                                       self.max_positions)
        header, start, data = export_torch.read_safetensors(os.path.join(model_dir,
                                                                         cfg["weights"]))
        header.pop("__metadata__", None)
        state = {}
        for name, info in header.items():
            begin, end = info["data_offsets"]
            array = np.frombuffer(data[start + begin:start + end], dtype=DTYPES[info["dtype"]])
            state[name] = torch.from_numpy(array.astype(np.float32).reshape(info["shape"]))
        missing, unexpected = model.load_state_dict(state, strict=False)
        if [k for k in missing if k != export_torch.POS_KEY] or unexpected:
            raise ValueError(f"tensors missing {missing[:3]}, unexpected {unexpected[:3]}")
        self.model = model.eval()
        self.src_vocab = read_tokens(os.path.join(model_dir, tok["src_vocab"]))
        self.tgt_vocab = read_tokens(os.path.join(model_dir, tok["tgt_vocab"]))
        self.src_index = {t: i for i, t in enumerate(self.src_vocab)}
        self.lowercase = tok.get("lowercase", "false") == "true"
        self.source_bos = tok.get("source_bos", "true") == "true"
        self.source_eos = tok.get("source_eos", "true") == "true"
        self.unk, self.pad = int(tok.get("unk_id", 0)), int(tok.get("pad_id", 1))
        self.bos, self.eos = int(tok.get("bos_id", 2)), int(tok.get("eos_id", 3))
        self.max_length = int(dec.get("max_length", 0))
        self.max_length_offset = int(dec.get("max_length_offset", 0))

    def source_ids(self, text):
        if self.lowercase:
            text = "".join(c.lower() if "A" <= c <= "Z" else c for c in text)
        ids = [self.src_index.get(w, self.unk) for w in text.split()]
        return [self.bos] * self.source_bos + ids + [self.eos] * self.source_eos

    def max_target_length(self, source_tokens, max_length=0):
        """ted_max_target_length: tokens allowed, EOS counted."""
        limit = self.max_positions
        if max_length > 0:
            return min(max_length, limit)
        if 0 < self.max_length < limit:
            limit = self.max_length
        if self.max_length_offset > 0 and source_tokens + self.max_length_offset < limit:
            limit = source_tokens + self.max_length_offset
        return limit

    def text(self, ids):
        out = []
        for i in ids:
            if i == self.eos:
                break
            if i not in (self.bos, self.pad) and 0 <= i < len(self.tgt_vocab):
                out.append(self.tgt_vocab[i])
        return " ".join(out)


def is_done(finished, beam_size, best, length, max_len, penalty, early_stopping):
    """The stopping rule, once the step's finished hypotheses are kept."""
    if len(finished) < beam_size:
        return False
    if early_stopping == "true":
        return True
    if early_stopping == "never" and penalty(max_len) != 1.0:
        length = max_len
    return finished[beam_size - 1][0] >= best / penalty(length)


@torch.no_grad()
def beam_search(m, src_ids, max_len, beam_size, alpha, n_best, early_stopping="never"):
    """The n_best best hypotheses, each a dict: ids, log_probs (per token),
    log_prob (their sum), score."""
    model = m.model
    src = torch.tensor([src_ids]).t()
    memory = model.encode(src, torch.zeros(len(src_ids), len(src_ids), dtype=torch.bool))

    def penalty(n):
        return 1.0 if alpha == 0 else ((5.0 + n) / 6.0) ** alpha

    def finish(ids, lps, total, length):
        finished.append((total / penalty(length), next(order_finished), ids, lps, total))
        finished.sort(key=lambda f: (-f[0], f[1]))
        del finished[beam_size:]

    open_hyps = [([], [], 0.0)]  # (ids, token log-probs, total log-prob)
    finished = []                # (score, order, ids, token log-probs, total)
    order_finished = itertools.count()
    for length in range(1, max_len + 1):
        k = len(open_hyps)
        ys = torch.tensor([[m.bos] + ids for ids, _, _ in open_hyps]).t()  # (length, k)
        mask = generate_square_subsequent_mask(length).type(torch.bool)
        out = model.decode(ys, memory.expand(-1, k, -1), mask)
        rows = torch.log_softmax(model.generator(out[-1]), dim=-1).numpy()  # (k, vocab)
        # every (hypothesis, token), by total log-prob (float64), hypothesis, token
        totals = np.array([h[2] for h in open_hyps])[:, None] + rows.astype(np.float64)
        beams, tokens = np.indices(rows.shape)
        order = np.lexsort((tokens.ravel(), beams.ravel(), -totals.ravel()))
        next_hyps = []
        for rank, flat in enumerate(order):
            if rank >= beam_size and len(next_hyps) >= beam_size:
                break
            b, t = divmod(int(flat), rows.shape[1])
            total = float(totals.ravel()[flat])
            ids, lps, _ = open_hyps[b]
            if t == m.eos:
                if rank < beam_size:
                    finish(ids + [t], lps + [float(rows[b, t])], total, length)
            elif len(next_hyps) < beam_size:
                next_hyps.append((ids + [t], lps + [float(rows[b, t])], total))
        best = float(totals.ravel()[order[0]])
        done = is_done(finished, beam_size, best, length, max_len, penalty, early_stopping)
        if length >= max_len and not done:
            for ids, lps, total in next_hyps:
                finish(ids, lps, total, length)
        if not next_hyps or done:
            break
        open_hyps = next_hyps
    return [dict(ids=ids, log_probs=lps, log_prob=total, score=score)
            for score, _, ids, lps, total in finished[:n_best]]


def moses_line(index, text, hyp):
    tokens = " ".join(f"{x:.6f}" for x in hyp["log_probs"])
    return f"{index} ||| {text} ||| {hyp['score']:.6f} ||| {hyp['log_prob']:.6f} ||| {tokens}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir")
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--length-penalty", type=float, default=0.6)
    parser.add_argument("--n-best", type=int, default=1)
    parser.add_argument("--max-length", type=int, default=0)
    parser.add_argument("--early-stopping", choices=("true", "false", "never"),
                        default="never")
    args = parser.parse_args()
    torch.set_num_threads(1)
    m = Model(args.model_dir)
    for index, line in enumerate(sys.stdin):
        ids = m.source_ids(line)
        if len(ids) <= m.source_bos + m.source_eos:
            for _ in range(args.n_best):
                print(f"{index} |||  ||| 0.000000 ||| 0.000000 |||")
            continue
        max_len = m.max_target_length(len(ids), args.max_length)
        for hyp in beam_search(m, ids, max_len, args.beam, args.length_penalty, args.n_best,
                               args.early_stopping):
            print(moses_line(index, m.text(hyp["ids"]), hyp))


if __name__ == "__main__":
    main()
