"""Trains the English -> French model of models/en-fr: Hugging Face
transformers' own MarianMTModel on the natural-text data of
tools/toy/naturalize.py, tokenized by MarianTokenizer with the SentencePiece
models and vocabulary of tools/toy/train_spm.py.

The model is an OPUS-MT Marian model in miniature: post-norm, SiLU (swish)
feed-forward, sinusoidal positions (sines then cosines), embeddings scaled
by sqrt(d_model), one embedding matrix shared by the encoder, the decoder
and the output projection. Sources end with </s>; the decoder starts from
<pad> (decoder_start_token_id) and learns to end with </s>.

Training is a plain PyTorch loop: teacher forcing, cross-entropy with label
smoothing (padding ignored), Adam with a linear warmup then cosine decay to
zero over the planned epochs, gradient norm clipping, batches of sentences
of similar length up to a token budget (tools/toy/train.py's batches), all
seeded. Every --eval-every steps it prints the validation loss and the
exact match of greedy decoding (model.generate, num_beams 1) on the first
--valid-decode validation sentences, and saves the model when that exact
match is the best so far; it stops at the first evaluation reaching
--stop-at, after --max-steps, or after --max-minutes. --init-from starts
from a saved model's weights instead (with a fresh optimizer): a second,
shorter run with a lower learning rate continues a first one.

Rerun (needs transformers: the test virtualenv; CPU, seeded; about 25 minutes
on one free core, the two runs together):

    /usr/bin/python3 tools/toy/generate.py --out build/toy/natural/tokenized \\
        --test-out build/toy/natural/tokenized
    /usr/bin/python3 tools/toy/naturalize.py
    /usr/bin/python3 tools/toy/train_spm.py
    nice -n 5 .venv/bin/python tools/toy/train_marian.py --max-steps 2500 \\
        --out build/toy/natural/hf-first > build/toy/natural/train-first.out
    nice -n 5 .venv/bin/python tools/toy/train_marian.py \\
        --init-from build/toy/natural/hf-first --lr 3e-4 --warmup 100 --epochs 0.6 \\
        --seed 2 > build/toy/natural/train.out

writes build/toy/natural/hf/ (--out), a directory MarianMTModel and
MarianTokenizer load with from_pretrained: config.json,
generation_config.json, model.safetensors, source.spm, target.spm,
vocab.json, tokenizer_config.json, special_tokens_map.json; and
train_log.json (hyperparameters, steps, evaluations, wall time) beside it.
"""
import argparse
import json
import math
import os
import random
import sys
import time

import torch
import torch.nn.functional as F
from transformers import GenerationConfig, MarianConfig, MarianMTModel, MarianTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

from train import batches, lr_at  # noqa: E402

NATURAL = os.path.join(ROOT, "build", "toy", "natural")


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def encode_pairs(tokenizer, data, name):
    """(source ids, target ids) of DATA/NAME.en and .fr, each ending with
    </s>; a piece missing from vocab.json is an error."""
    sources, targets = read_lines(os.path.join(data, name + ".en")), \
        read_lines(os.path.join(data, name + ".fr"))
    src = tokenizer(sources)["input_ids"]
    tgt = tokenizer(text_target=targets)["input_ids"]
    for ids, texts in ((src, sources), (tgt, targets)):
        for line, (row, text) in enumerate(zip(ids, texts), 1):
            if tokenizer.unk_token_id in row:
                sys.exit(f"train_marian: {name} line {line}: a piece missing from "
                         f"vocab.json in {text!r}")
    return list(zip(src, tgt)), targets


def padded(rows, pad_id):
    """(batch, seq) tensor of the rows, pad_id after each row's end."""
    width = max(len(r) for r in rows)
    out = torch.full((len(rows), width), pad_id, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, :len(r)] = torch.tensor(r, dtype=torch.long)
    return out


def batch_loss(model, pairs, idx, pad_id, start_id, label_smoothing):
    """Mean token cross-entropy of a batch under teacher forcing, and its
    number of target tokens. The decoder reads START_ID (the decoder start:
    Marian's <pad>) then the target shifted right; padding is neither
    attended to nor scored. A pair is (source ids, target ids, ...)."""
    src = padded([pairs[i][0] for i in idx], pad_id)
    labels = padded([pairs[i][1] for i in idx], pad_id)
    decoder_input = torch.cat([torch.full((len(idx), 1), start_id, dtype=torch.long),
                               labels[:, :-1]], dim=1)
    logits = model(input_ids=src, attention_mask=src.ne(pad_id),
                   decoder_input_ids=decoder_input).logits
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                           ignore_index=pad_id, label_smoothing=label_smoothing)
    return loss, int(labels.ne(pad_id).sum())


@torch.no_grad()
def valid_loss(model, pairs, pad_id, start_id, max_tokens):
    """Token cross-entropy (no smoothing) over all validation pairs."""
    model.eval()
    total = count = 0
    for idx in batches(pairs, max_tokens, random.Random(0)):
        loss, n = batch_loss(model, pairs, idx, pad_id, start_id, 0.0)
        total += float(loss) * n
        count += n
    return total / count


@torch.no_grad()
def translate(model, tokenizer, sources, batch_size=50):
    """Greedy translations by model.generate (the generation config's
    num_beams 1, max_length, bad_words_ids)."""
    model.eval()
    out = []
    for start in range(0, len(sources), batch_size):
        inputs = tokenizer(sources[start:start + batch_size], return_tensors="pt",
                           padding=True)
        ids = model.generate(**inputs)
        out += tokenizer.batch_decode(ids, skip_special_tokens=True)
    return out


def exact_match(hypotheses, references):
    return sum(h == r for h, r in zip(hypotheses, references)) / max(1, len(references))


def build_model(args, vocab_size, pad_id, eos_id):
    config = MarianConfig(
        vocab_size=vocab_size, d_model=args.d_model, encoder_layers=args.layers,
        decoder_layers=args.layers, encoder_attention_heads=args.heads,
        decoder_attention_heads=args.heads, encoder_ffn_dim=args.d_ff,
        decoder_ffn_dim=args.d_ff, activation_function="swish",
        max_position_embeddings=args.max_positions, dropout=args.dropout,
        attention_dropout=0.0, activation_dropout=0.0, scale_embedding=True,
        init_std=args.d_model ** -0.5, pad_token_id=pad_id, eos_token_id=eos_id,
        decoder_start_token_id=pad_id, forced_eos_token_id=None, bos_token_id=None,
        share_encoder_decoder_embeddings=True, tie_word_embeddings=True)
    model = MarianMTModel(config)
    model.generation_config = GenerationConfig(
        decoder_start_token_id=pad_id, eos_token_id=eos_id, pad_token_id=pad_id,
        bad_words_ids=[[pad_id]], num_beams=1, max_length=args.max_length)
    return model


def save(model, tokenizer, out):
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)


def add_training_arguments(ap, max_positions, max_tokens):
    """The options both toy trainers take: the run, the architecture, the
    optimizer and the evaluations' rhythm."""
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1,
                    help="intra-op threads; on a shared two-core machine one thread ran "
                         "several times faster than two whenever the other core was busy")
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--layers", type=int, default=3, help="encoder and decoder layers each")
    ap.add_argument("--d-ff", type=int, default=512)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--max-positions", type=int, default=max_positions)
    ap.add_argument("--max-length", type=int, default=128,
                    help="generation: at most this many target ids, the start id counted")
    ap.add_argument("--max-tokens", type=int, default=max_tokens,
                    help="padded source + target ids per batch")
    ap.add_argument("--lr", type=float, default=1e-3, help="peak learning rate")
    ap.add_argument("--warmup", type=int, default=400, help="warmup steps")
    ap.add_argument("--label-smoothing", type=float, default=0.1)
    ap.add_argument("--clip", type=float, default=1.0, help="gradient norm clip (0: none)")
    ap.add_argument("--eval-every", type=int, default=500, help="steps between evaluations")
    ap.add_argument("--report", type=int, default=100, help="print the loss every N steps")


def add_task_arguments(ap, steps, valid_loss_pairs, task):
    """The options of a run over several tasks (TASK: "task", "direction"):
    its schedule and what each evaluation decodes."""
    ap.add_argument("--steps", type=int, default=steps,
                    help="training steps: the length of the learning-rate schedule")
    ap.add_argument("--valid-decode", type=int, default=50,
                    help=f"validation sentences greedy-decoded per {task} at each evaluation")
    ap.add_argument("--valid-loss-pairs", type=int, default=valid_loss_pairs,
                    help=f"validation pairs (all {task}s) of the validation loss")


def apply_step(model, optimizer, loss, lr, clip):
    """One optimizer step at learning rate LR from LOSS, the gradient norm
    clipped to CLIP (0: not clipped). Returns (loss, lr)."""
    for group in optimizer.param_groups:
        group["lr"] = lr
    optimizer.zero_grad()
    loss.backward()
    if clip:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    return float(loss), lr


def run_steps(trainer, args, stop_early=None):
    """The training loop of TRAINER (its train pairs, start time,
    step(step, idx) -> (loss, lr) and evaluate(step, mean train loss)):
    batches of --max-tokens in an order seeded by --seed, the loss printed
    every --report steps, an evaluation every --eval-every steps and at the
    last; it ends after --steps, or at the step STOP_EARLY(step) is true.
    Returns the steps taken."""
    rng = random.Random(args.seed)
    step, run_loss, run_n, since_eval = 0, 0.0, 0, []
    while step < args.steps:
        for idx in batches(trainer.train, args.max_tokens, rng):
            loss, lr = trainer.step(step, idx)
            step += 1
            run_loss += loss
            run_n += 1
            since_eval.append(loss)
            if step % args.report == 0:
                print(f"  step {step}/{args.steps} loss {run_loss / run_n:.4f} "
                      f"lr {lr:.2e} {time.time() - trainer.start:.0f}s", flush=True)
                run_loss, run_n = 0.0, 0
            done = step == args.steps or (stop_early is not None and stop_early(step))
            if step % args.eval_every == 0 or done:
                trainer.evaluate(step, sum(since_eval) / len(since_eval))
                since_eval = []
            if done:
                return step
    return step


class TaskTrainer:
    """What the trainers of several tasks (directions, prefixes) share: the
    optimizer, the step, the evaluation that saves the best model, the log.
    A subclass sets args, model, tokenizer, train, valid (the pairs of the
    validation loss), pad_id and start_id, then calls begin(); it gives
    exact_matches() ({task: exact match on --valid-decode sentences}) and
    save() (the model into --out)."""

    def begin(self, tasks):
        """The optimizer, the clock and the log; prints the run's first line,
        TASKS saying what the pairs are ("3 tasks")."""
        args = self.args
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=args.lr,
                                          betas=(0.9, 0.98), eps=1e-9)
        self.best = (-1.0, math.inf)
        self.start = time.time()
        params = sum(p.numel() for p in self.model.parameters())
        lengths = [len(s) + len(t) for s, t, _ in self.train]
        self.log = {"hyperparameters": vars(args), "parameters": params,
                    "vocab_size": len(self.tokenizer), "train_pairs": len(self.train),
                    "mean_ids_per_pair": sum(lengths) / len(lengths), "evaluations": []}
        print(f"train {len(self.train)} pairs ({tasks}) vocab {len(self.tokenizer)} "
              f"parameters {params} ({params * 4 / 1e6:.1f} MB fp32) source + target ids "
              f"per pair {self.log['mean_ids_per_pair']:.1f} steps {args.steps} "
              f"({len(batches(self.train, args.max_tokens, random.Random(0)))}/epoch)",
              flush=True)

    def step(self, step, idx):
        self.model.train()
        loss, _ = batch_loss(self.model, self.train, idx, self.pad_id, self.start_id,
                             self.args.label_smoothing)
        return apply_step(self.model, self.optimizer, loss,
                          lr_at(step, self.args.steps, self.args.warmup, self.args.lr),
                          self.args.clip)

    def write_log(self):
        with open(os.path.join(self.args.out, "train_log.json"), "w") as f:
            json.dump(self.log, f, indent=2)

    def evaluate(self, step, train_loss):
        """Validates, saves the model if it is the best so far."""
        vloss = valid_loss(self.model, self.valid, self.pad_id, self.start_id,
                           self.args.max_tokens)
        ems = self.exact_matches()
        em = sum(ems.values()) / len(ems)
        elapsed = time.time() - self.start
        saved = (em, -vloss) > (self.best[0], -self.best[1])
        if saved:
            self.best = (em, vloss)
            self.save()
        print(f"step {step} train loss {train_loss:.4f} valid loss {vloss:.4f} "
              f"valid exact match {em:.3f} "
              + " ".join(f"{d} {v:.3f}" for d, v in ems.items())
              + f" ({self.args.valid_decode} sentences each) {elapsed:.0f}s"
              + (" saved" if saved else ""), flush=True)
        self.log["evaluations"].append({"step": step, "train_loss": train_loss,
                                        "valid_loss": vloss, "valid_exact_match": ems,
                                        "seconds": round(elapsed, 1), "saved": saved})
        self.log.update(steps=step, wall_seconds=round(elapsed, 1),
                        best_valid_exact_match=self.best[0])
        self.write_log()


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=NATURAL, help="train/valid .en .fr")
    ap.add_argument("--spm", default=os.path.join(NATURAL, "spm"),
                    help="source.spm, target.spm, vocab.json")
    ap.add_argument("--out", default=os.path.join(NATURAL, "hf"))
    add_training_arguments(ap, max_positions=512, max_tokens=2000)
    ap.add_argument("--epochs", type=float, default=1.5,
                    help="planned epochs: the length of the lr schedule")
    ap.add_argument("--valid-decode", type=int, default=200,
                    help="validation sentences greedy-decoded at each evaluation")
    ap.add_argument("--stop-at", type=float, default=0.995,
                    help="stop once the validation exact match reaches this")
    ap.add_argument("--max-minutes", type=float, default=0,
                    help="stop at the first evaluation after this much time (0: no limit); "
                         "where it stops then depends on the machine's speed")
    ap.add_argument("--max-steps", type=int, default=0,
                    help="stop after this step, with an evaluation (0: at the end of the "
                         "schedule, which --epochs still sets)")
    ap.add_argument("--init-from", help="start from the weights of a model this script "
                                        "saved (the architecture options are then its)")
    return ap.parse_args()


class Trainer:
    """The loop's state: model, optimizer, data, the best evaluation so far
    and the log."""

    def __init__(self, args):
        self.args = args
        self.tokenizer = MarianTokenizer(
            os.path.join(args.spm, "source.spm"), os.path.join(args.spm, "target.spm"),
            os.path.join(args.spm, "vocab.json"), source_lang="en", target_lang="fr",
            model_max_length=args.max_positions)
        self.pad_id = self.tokenizer.pad_token_id
        self.train, _ = encode_pairs(self.tokenizer, args.data, "train")
        self.valid, valid_targets = encode_pairs(self.tokenizer, args.data, "valid")
        self.decode_sources = read_lines(os.path.join(args.data, "valid.en"))[:args.valid_decode]
        self.decode_targets = valid_targets[:args.valid_decode]
        if args.init_from:
            self.model = MarianMTModel.from_pretrained(args.init_from)
        else:
            self.model = build_model(args, len(self.tokenizer), self.pad_id,
                                     self.tokenizer.eos_token_id)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=args.lr,
                                          betas=(0.9, 0.98), eps=1e-9)
        self.steps_per_epoch = len(batches(self.train, args.max_tokens, random.Random(0)))
        self.total_steps = round(self.steps_per_epoch * args.epochs)
        self.last_step = min(self.total_steps, args.max_steps or self.total_steps)
        self.best = (-1.0, math.inf)
        self.start = time.time()
        params = sum(p.numel() for p in self.model.parameters())
        lengths = [len(s) + len(t) for s, t in self.train]
        self.log = {"hyperparameters": vars(args), "parameters": params,
                    "vocab_size": len(self.tokenizer), "train_pairs": len(self.train),
                    "valid_pairs": len(self.valid), "steps_per_epoch": self.steps_per_epoch,
                    "mean_ids_per_pair": sum(lengths) / len(lengths), "evaluations": []}
        print(f"train {len(self.train)} valid {len(self.valid)} vocab {len(self.tokenizer)} "
              f"parameters {params} ({params * 4 / 1e6:.1f} MB fp32) "
              f"source + target ids per pair {self.log['mean_ids_per_pair']:.1f} "
              f"steps {self.steps_per_epoch}/epoch x {args.epochs}", flush=True)

    def step(self, step, idx):
        self.model.train()
        loss, _ = batch_loss(self.model, self.train, idx, self.pad_id, self.pad_id,
                             self.args.label_smoothing)
        return apply_step(self.model, self.optimizer, loss,
                          lr_at(step, self.total_steps, self.args.warmup, self.args.lr),
                          self.args.clip)

    def evaluate(self, step, train_loss):
        """Validates, saves the model if it is the best so far; True when
        training should stop."""
        vloss = valid_loss(self.model, self.valid, self.pad_id, self.pad_id,
                           self.args.max_tokens)
        em = exact_match(translate(self.model, self.tokenizer, self.decode_sources),
                         self.decode_targets)
        elapsed = time.time() - self.start
        saved = (em, -vloss) > (self.best[0], -self.best[1])
        if saved:
            self.best = (em, vloss)
            save(self.model, self.tokenizer, self.args.out)
        print(f"step {step} epoch {step / self.steps_per_epoch:.2f} train loss {train_loss:.4f} "
              f"valid loss {vloss:.4f} valid exact match {em:.3f} "
              f"({len(self.decode_sources)} sentences) {elapsed:.0f}s"
              f"{' saved' if saved else ''}", flush=True)
        self.log["evaluations"].append({"step": step, "train_loss": train_loss,
                                        "valid_loss": vloss, "valid_exact_match": em,
                                        "seconds": round(elapsed, 1), "saved": saved})
        self.log.update(steps=step, wall_seconds=round(elapsed, 1),
                        best_valid_exact_match=self.best[0])
        with open(os.path.join(self.args.out, "train_log.json"), "w") as f:
            json.dump(self.log, f, indent=2)
        if em >= self.args.stop_at:
            print(f"validation exact match {em:.3f} reached --stop-at {self.args.stop_at}")
            return True
        if self.args.max_minutes and elapsed > self.args.max_minutes * 60:
            print(f"time limit ({self.args.max_minutes} min) reached", flush=True)
            return True
        return False

    def run(self):
        rng = random.Random(self.args.seed)
        step, run_loss, run_n, since_eval = 0, 0.0, 0, []
        while step < self.last_step:
            for idx in batches(self.train, self.args.max_tokens, rng):
                loss, lr = self.step(step, idx)
                step += 1
                run_loss += loss
                run_n += 1
                since_eval.append(loss)
                if step % self.args.report == 0:
                    print(f"  step {step}/{self.total_steps} loss {run_loss / run_n:.4f} "
                          f"lr {lr:.2e} {time.time() - self.start:.0f}s", flush=True)
                    run_loss, run_n = 0.0, 0
                if step % self.args.eval_every == 0 or step == self.last_step:
                    if self.evaluate(step, sum(since_eval) / len(since_eval)):
                        return step
                    since_eval = []
                if step == self.last_step:
                    break
        return step


def main():
    args = parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    os.makedirs(args.out, exist_ok=True)
    trainer = Trainer(args)
    steps = trainer.run()
    print(f"done: {steps} steps, {time.time() - trainer.start:.0f}s, best valid exact match "
          f"{trainer.best[0]:.3f}, model {args.out}", flush=True)


if __name__ == "__main__":
    main()
