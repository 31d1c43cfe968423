"""Trains the T5 model of models/t5-en-fr-es: Hugging Face transformers'
T5ForConditionalGeneration in the layout of T5 v1.1 (gated-gelu feed-forward,
a separate lm_head, RMSNorm before each sub-layer, relative position
buckets, no biases), one model for three tasks named by a plain-text prefix,
as T5's tasks are:

    translate English to French: The cat sleeps.
    translate French to English: Le chat dort.
    translate English to Spanish: The cat sleeps.

The data are the toy English, French and Spanish of tools/toy/generate.py
--es written as people write them (tools/toy/naturalize.py --es), the data
of models/multi-en-fr-es: every training sentence gives one pair per task.

Tokens are T5's: one unigram SentencePiece model trained here on the
training text of the three languages and the task prefixes (spiece.model,
<pad> 0, </s> 1, <unk> 2, no <s>), read by T5Tokenizer with --extra-ids
<extra_id_N> sentinels after the pieces. A source is `prefix text </s>`, a
target `text </s>`; the decoder starts from <pad> (decoder_start_token_id).

Training is the loop of tools/toy/train_marian.py: teacher forcing,
cross-entropy with label smoothing, Adam, a linear warmup then cosine decay
to zero over --steps, gradient norm clipping, batches of pairs of similar
length up to a token budget (all tasks mixed), seeded. Every --eval-every
steps it prints the validation loss and the exact match of greedy decoding
(model.generate, num_beams 1) on the first --valid-decode validation
sentences of each task, and saves the model when the mean exact match is
the best so far, its weights rounded to --save-dtype. It stops after
--steps, --max-steps (the schedule still that of --steps) or --max-minutes,
evaluating first. At the end it loads the saved model back (upcast to
float32, as from_pretrained does) and prints its exact match per task on
the first --test-lines test sentences.

Rerun (needs transformers: the test virtualenv; CPU, seeded):

    /usr/bin/python3 tools/toy/generate.py --es --out build/toy/t5/tokenized \\
        --test-out build/toy/t5/tokenized
    /usr/bin/python3 tools/toy/naturalize.py --es --tokenized build/toy/t5/tokenized \\
        --out build/toy/t5 --test-out build/toy/t5
    nice -n 5 .venv/bin/python tools/train_t5.py > build/toy/t5/train.out

writes build/toy/t5/hf/ (--out), a directory that
T5ForConditionalGeneration and T5Tokenizer load with from_pretrained
(config.json, generation_config.json, model.safetensors, spiece.model,
tokenizer_config.json, special_tokens_map.json, added_tokens.json), and
train_log.json (hyperparameters, steps, evaluations, test exact match, wall
time) beside them.
"""
import argparse
import copy
import os
import random
import sys
import time

import sentencepiece as spm
import torch
from transformers import GenerationConfig, T5Config, T5ForConditionalGeneration, T5Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "toy"))

from train_marian import (TaskTrainer, add_task_arguments, add_training_arguments,  # noqa: E402
                          exact_match, read_lines, run_steps, translate)

DATA = os.path.join(ROOT, "build", "toy", "t5")
# (name, prefix, source language, target language): the data suffixes
TASKS = (("en-fr", "translate English to French: ", "en", "fr"),
         ("fr-en", "translate French to English: ", "fr", "en"),
         ("en-es", "translate English to Spanish: ", "en", "es"))
LANGUAGES = ("en", "fr", "es")
PREFIX_COPIES = 1000  # lines of each prefix in the SentencePiece training text


def train_spm(data, out, vocab_size, threads):
    """A unigram SentencePiece model in T5's layout (<pad> 0, </s> 1,
    <unk> 2, no <s>) of the training text of the three languages and the
    task prefixes, at OUT/spiece.model."""
    os.makedirs(out, exist_ok=True)
    prefixes = os.path.join(out, "prefixes.txt")
    with open(prefixes, "w", encoding="utf-8") as f:
        f.write("".join(prefix.strip() + "\n" for _, prefix, _, _ in TASKS) * PREFIX_COPIES)
    prefix = os.path.join(out, "spiece")
    spm.SentencePieceTrainer.train(
        input=",".join([prefixes] + [os.path.join(data, f"train.{lang}") for lang in LANGUAGES]),
        model_prefix=prefix, vocab_size=vocab_size, model_type="unigram",
        character_coverage=1.0, input_sentence_size=0, shuffle_input_sentence=False,
        pad_id=0, eos_id=1, unk_id=2, bos_id=-1, num_threads=threads, minloglevel=2)
    os.remove(prefix + ".vocab")
    os.remove(prefixes)
    return prefix + ".model"


def encode(processor, texts, where, eos_id, unk_id):
    """The pieces' ids of each text then </s>, as T5Tokenizer gives them;
    a piece outside the vocabulary is an error."""
    rows = processor.encode(texts)
    for line, (row, text) in enumerate(zip(rows, texts), 1):
        if unk_id in row:
            sys.exit(f"train_t5: {where} line {line}: a piece outside the vocabulary in "
                     f"{text!r}")
    return [row + [eos_id] for row in rows]


def load_set(processor, tokenizer, data, name):
    """The texts of set NAME by language, and its (source ids, target ids,
    task index) pairs for every task."""
    texts = {lang: read_lines(os.path.join(data, f"{name}.{lang}")) for lang in LANGUAGES}
    pairs = []
    for index, (_, prefix, src, tgt) in enumerate(TASKS):
        where = f"{name}.{src} with {prefix.strip()!r}"
        sources = encode(processor, [prefix + t for t in texts[src]], where,
                         tokenizer.eos_token_id, tokenizer.unk_token_id)
        targets = encode(processor, texts[tgt], f"{name}.{tgt}", tokenizer.eos_token_id,
                         tokenizer.unk_token_id)
        pairs += [(s, t, index) for s, t in zip(sources, targets)]
    return texts, pairs


def check_tokenizer(tokenizer, texts, pairs, count=200):
    """Stops unless T5Tokenizer gives the ids `encode` gave, on the first
    COUNT validation sentences of each task."""
    for index, (name, prefix, src, tgt) in enumerate(TASKS):
        mine = [(s, t) for s, t, i in pairs if i == index][:count]
        for line, (s, t) in enumerate(mine):
            want = (tokenizer(prefix + texts[src][line]).input_ids,
                    tokenizer(text_target=texts[tgt][line]).input_ids)
            if want != (s, t):
                sys.exit(f"train_t5: {name} valid line {line + 1}: T5Tokenizer's ids differ "
                         "from the SentencePiece model's")


def task_exact_matches(model, tokenizer, texts, count):
    """{task: exact match of greedy decoding} on the first COUNT texts."""
    return {name: exact_match(translate(model, tokenizer,
                                        [prefix + t for t in texts[src][:count]]),
                              texts[tgt][:count])
            for name, prefix, src, tgt in TASKS}


def build_model(args, tokenizer):
    config = T5Config(
        vocab_size=len(tokenizer), d_model=args.d_model, d_kv=args.d_model // args.heads,
        d_ff=args.d_ff, num_layers=args.layers, num_decoder_layers=args.decoder_layers,
        num_heads=args.heads, relative_attention_num_buckets=args.buckets,
        relative_attention_max_distance=args.max_distance, dropout_rate=args.dropout,
        feed_forward_proj="gated-gelu", tie_word_embeddings=False,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.pad_token_id)
    model = T5ForConditionalGeneration(config)
    # T5's own init draws lm_head from N(0, 1), which makes the first logits
    # N(0, d_model) and the first loss about 37: N(0, 1/d_model) starts from
    # logits of unit size instead.
    with torch.no_grad():
        model.lm_head.weight.normal_(0.0, args.d_model ** -0.5)
    model.generation_config = GenerationConfig(
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.pad_token_id, num_beams=1,
        max_length=args.max_length)
    return model


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=DATA, help="train/valid/test .en .fr .es")
    ap.add_argument("--out", default=os.path.join(DATA, "hf"))
    ap.add_argument("--spm-vocab-size", type=int, default=1500, help="SentencePiece pieces")
    ap.add_argument("--extra-ids", type=int, default=8,
                    help="T5Tokenizer's <extra_id_N> sentinels after the pieces")
    add_training_arguments(ap, max_positions=0, max_tokens=1500)
    ap.set_defaults(layers=3, d_ff=256)
    ap.add_argument("--decoder-layers", type=int, default=3)
    ap.add_argument("--buckets", type=int, default=32,
                    help="relative_attention_num_buckets")
    ap.add_argument("--max-distance", type=int, default=128,
                    help="relative_attention_max_distance")
    add_task_arguments(ap, steps=5000, valid_loss_pairs=1500, task="task")
    ap.add_argument("--max-steps", type=int, default=0,
                    help="stop (evaluating and saving) after this many steps, the schedule "
                         "that of --steps (0: --steps)")
    ap.add_argument("--max-minutes", type=float, default=0,
                    help="stop (evaluating and saving) once this long has passed (0: never)")
    ap.add_argument("--test-lines", type=int, default=300,
                    help="test sentences per task measured at the end")
    ap.add_argument("--save-dtype", default="bfloat16", choices=("float32", "bfloat16"),
                    help="the saved model's weights")
    return ap.parse_args()


class Trainer(TaskTrainer):
    """T5's run: its SentencePiece model and T5Tokenizer, the pairs of the
    three prefixed tasks, the model; saved in --save-dtype."""

    def __init__(self, args):
        self.args = args
        spm_file = train_spm(args.data, args.out, args.spm_vocab_size, args.threads)
        self.tokenizer = T5Tokenizer(spm_file, extra_ids=args.extra_ids, legacy=True,
                                     model_max_length=512)
        processor = spm.SentencePieceProcessor(model_file=spm_file)
        self.pad_id = self.start_id = self.tokenizer.pad_token_id
        _, self.train = load_set(processor, self.tokenizer, args.data, "train")
        self.valid_texts, valid = load_set(processor, self.tokenizer, args.data, "valid")
        check_tokenizer(self.tokenizer, self.valid_texts, valid)
        self.valid = random.Random(0).sample(valid, min(len(valid), args.valid_loss_pairs))
        self.model = build_model(args, self.tokenizer)
        self.begin(f"{len(TASKS)} tasks")

    def save(self):
        saved = copy.deepcopy(self.model).to(getattr(torch, self.args.save_dtype))
        saved.save_pretrained(self.args.out, safe_serialization=True)
        self.tokenizer.save_pretrained(self.args.out)

    def exact_matches(self):
        return task_exact_matches(self.model, self.tokenizer, self.valid_texts,
                                  self.args.valid_decode)

    def stop_early(self, step):
        """Whether --max-steps or --max-minutes ends the run at STEP."""
        limit = self.args.max_minutes
        return (0 < self.args.max_steps <= step
                or limit > 0 and time.time() - self.start >= limit * 60)

    def run(self):
        return run_steps(self, self.args, self.stop_early)

    def test(self):
        """The saved model's exact match per task on the first --test-lines
        test sentences."""
        count = self.args.test_lines
        texts = {lang: read_lines(os.path.join(self.args.data, f"test.{lang}"))[:count]
                 for lang in LANGUAGES}
        model = T5ForConditionalGeneration.from_pretrained(self.args.out,
                                                           torch_dtype=torch.float32)
        ems = task_exact_matches(model, T5Tokenizer.from_pretrained(self.args.out), texts,
                                 count)
        self.log["test_exact_match"] = ems
        self.log["test_sentences"] = count
        self.write_log()
        print("test exact match (saved model, transformers generate, greedy): "
              + " ".join(f"{d} {v:.3f}" for d, v in ems.items())
              + f" ({count} sentences each)", flush=True)


def main():
    args = parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    trainer = Trainer(args)
    steps = trainer.run()
    print(f"done: {steps} steps, {time.time() - trainer.start:.0f}s, best valid exact match "
          f"{trainer.best[0]:.3f}, model {args.out}", flush=True)
    trainer.test()


if __name__ == "__main__":
    main()
