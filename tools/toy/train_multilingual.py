"""Trains the multilingual model of models/multi-en-fr-es: Hugging Face
transformers' M2M100ForConditionalGeneration in the layout of NLLB-200, on
the toy English, French and Spanish of tools/toy/generate.py --es, written
as people write them (tools/toy/naturalize.py --es).

Tokens are NLLB's: one unigram SentencePiece model trained here on the
training text of the three languages (sentencepiece.bpe.model), read by
transformers' NllbTokenizer: <s> <pad> </s> <unk> (ids 0 to 3), the
SentencePiece pieces (SentencePiece id + 1), then NLLB's 202 language codes
(eng_Latn, fra_Latn, spa_Latn, ... as tokens) and <mask>. A source is
`[source code] text </s>`; a target is `[target code] text </s>`, which the
decoder reads shifted right after `</s>` (decoder_start_token_id), so at
generation the target code is forced first (forced_bos_token_id).

The model is an NLLB-200 in miniature: pre-norm with a final LayerNorm on
both stacks, ReLU, sinusoidal positions from padding_idx + 1, embeddings
scaled by sqrt(d_model), one embedding matrix for the encoder, the decoder
and the output projection. It translates in the --directions given (by
default English -> French, English -> Spanish, French -> English and
Spanish -> English): every training sentence gives one pair per direction.

Training is the loop of tools/toy/train_marian.py: teacher forcing,
cross-entropy with label smoothing, Adam, a linear warmup then cosine decay
to zero over --steps, gradient norm clipping, batches of pairs of similar
length up to a token budget (all directions mixed), seeded. Every
--eval-every steps it prints the validation loss and the exact match of
greedy decoding (model.generate with forced_bos_token_id) on the first
--valid-decode validation sentences of each direction, and saves the model
when the mean exact match is the best so far.

Rerun (needs transformers: the test virtualenv; CPU, seeded):

    /usr/bin/python3 tools/toy/generate.py --es --out build/toy/multi/tokenized \\
        --test-out build/toy/multi/tokenized
    /usr/bin/python3 tools/toy/naturalize.py --es --tokenized build/toy/multi/tokenized \\
        --out build/toy/multi --test-out build/toy/multi
    nice -n 5 .venv/bin/python tools/toy/train_multilingual.py > build/toy/multi/train.out

writes build/toy/multi/hf/ (--out), a directory that
M2M100ForConditionalGeneration and NllbTokenizer load with from_pretrained
(config.json, generation_config.json, model.safetensors,
sentencepiece.bpe.model, tokenizer_config.json, special_tokens_map.json),
and train_log.json (hyperparameters, steps, evaluations, wall time) and
languages.txt beside them. languages.txt holds the directions trained, as
tools/export_hf.py --languages takes them ("eng_Latn>fra_Latn,..."): the
model translates those and no others (French <-> Spanish is not trained,
and the model answers it in English), which config.yaml's top-level
`languages` then says.
"""
import argparse
import os
import random
import sys
import time

import sentencepiece as spm
import torch
from transformers import (GenerationConfig, M2M100Config, M2M100ForConditionalGeneration,
                          NllbTokenizer)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

from train_marian import (TaskTrainer, add_task_arguments, add_training_arguments,  # noqa: E402
                          exact_match, read_lines, run_steps)

MULTI = os.path.join(ROOT, "build", "toy", "multi")
# The file suffixes of the data and the NLLB codes of the three languages.
CODES = {"en": "eng_Latn", "fr": "fra_Latn", "es": "spa_Latn"}
SPM_FILE = "sentencepiece.bpe.model"  # NllbTokenizer's vocab_file name


def train_spm(data, out, vocab_size, threads):
    """A unigram SentencePiece model of the training text of the three
    languages, at OUT/sentencepiece.bpe.model: <unk> <s> </s> are its ids 0
    to 2, as in NLLB's model."""
    os.makedirs(out, exist_ok=True)
    prefix = os.path.join(out, "spm")
    spm.SentencePieceTrainer.train(
        input=",".join(os.path.join(data, f"train.{lang}") for lang in CODES),
        model_prefix=prefix, vocab_size=vocab_size, model_type="unigram",
        character_coverage=1.0, input_sentence_size=0, shuffle_input_sentence=False,
        num_threads=threads, minloglevel=2)
    os.replace(prefix + ".model", os.path.join(out, SPM_FILE))
    os.remove(prefix + ".vocab")
    return os.path.join(out, SPM_FILE)


def encode(tokenizer, texts, lang, where):
    """`[code] ids </s>` of each text in language LANG; a piece outside the
    vocabulary is an error."""
    tokenizer.src_lang = CODES[lang]
    rows = tokenizer(texts)["input_ids"]
    for line, (row, text) in enumerate(zip(rows, texts), 1):
        if tokenizer.unk_token_id in row:
            sys.exit(f"train_multilingual: {where} line {line}: a piece outside the "
                     f"vocabulary in {text!r}")
    return rows


def directions(spec):
    """[(source, target), ...] of "en-fr,en-es,...": the data suffixes."""
    out = []
    for item in spec.split(","):
        src, _, tgt = item.partition("-")
        if src not in CODES or tgt not in CODES or src == tgt:
            sys.exit(f"train_multilingual: --directions: bad direction {item!r} "
                     f"(languages: {', '.join(CODES)})")
        out.append((src, tgt))
    return out


def load_set(tokenizer, data, name, dirs):
    """The texts of set NAME by language, and its (source ids, target ids)
    pairs for every direction, with the direction's index."""
    texts = {lang: read_lines(os.path.join(data, f"{name}.{lang}")) for lang in CODES}
    ids = {lang: encode(tokenizer, texts[lang], lang, f"{name}.{lang}") for lang in CODES}
    pairs = [(s, t, d) for d, (src, tgt) in enumerate(dirs)
             for s, t in zip(ids[src], ids[tgt])]
    return texts, pairs


@torch.no_grad()
def translate(model, tokenizer, sources, src, tgt, batch_size=50):
    """Greedy translations from language SRC into TGT by model.generate,
    the target code forced first."""
    model.eval()
    tokenizer.src_lang = CODES[src]
    forced = tokenizer.convert_tokens_to_ids(CODES[tgt])
    out = []
    for start in range(0, len(sources), batch_size):
        inputs = tokenizer(sources[start:start + batch_size], return_tensors="pt",
                           padding=True)
        ids = model.generate(**inputs, forced_bos_token_id=forced)
        out += tokenizer.batch_decode(ids, skip_special_tokens=True)
    return out


def build_model(args, vocab_size, tokenizer):
    config = M2M100Config(
        vocab_size=vocab_size, d_model=args.d_model, encoder_layers=args.layers,
        decoder_layers=args.layers, encoder_attention_heads=args.heads,
        decoder_attention_heads=args.heads, encoder_ffn_dim=args.d_ff,
        decoder_ffn_dim=args.d_ff, activation_function="relu",
        max_position_embeddings=args.max_positions, dropout=args.dropout,
        attention_dropout=0.0, activation_dropout=0.0, encoder_layerdrop=0.0,
        decoder_layerdrop=0.0, scale_embedding=True, init_std=args.init_std,
        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id, decoder_start_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=True)
    model = M2M100ForConditionalGeneration(config)
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id, pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id, decoder_start_token_id=tokenizer.eos_token_id,
        num_beams=1, max_length=args.max_length)
    return model


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=MULTI, help="train/valid .en .fr .es")
    ap.add_argument("--out", default=os.path.join(MULTI, "hf"))
    ap.add_argument("--directions", default="en-fr,en-es,fr-en,es-en")
    ap.add_argument("--spm-vocab-size", type=int, default=2000,
                    help="SentencePiece pieces (the vocabulary adds 205 ids)")
    add_training_arguments(ap, max_positions=256, max_tokens=1500)
    ap.add_argument("--init-std", type=float, default=0.02)
    add_task_arguments(ap, steps=4000, valid_loss_pairs=2000, task="direction")
    return ap.parse_args()


class Trainer(TaskTrainer):
    """The multilingual run: its SentencePiece model and NllbTokenizer, the
    pairs of the --directions, the model; saved with languages.txt."""

    def __init__(self, args):
        self.args = args
        self.dirs = directions(args.directions)
        spm_file = train_spm(args.data, args.out, args.spm_vocab_size, args.threads)
        self.tokenizer = NllbTokenizer(spm_file, model_max_length=args.max_positions)
        self.pad_id = self.tokenizer.pad_token_id
        self.start_id = self.tokenizer.eos_token_id  # decoder_start_token_id
        _, self.train = load_set(self.tokenizer, args.data, "train", self.dirs)
        self.valid_texts, valid = load_set(self.tokenizer, args.data, "valid", self.dirs)
        self.valid = random.Random(0).sample(valid, min(len(valid), args.valid_loss_pairs))
        self.model = build_model(args, len(self.tokenizer), self.tokenizer)
        self.begin(f"{len(self.dirs)} directions")

    def exact_matches(self):
        n = self.args.valid_decode
        return {f"{src}-{tgt}": exact_match(
                    translate(self.model, self.tokenizer, self.valid_texts[src][:n], src, tgt),
                    self.valid_texts[tgt][:n])
                for src, tgt in self.dirs}

    def save(self):
        self.model.save_pretrained(self.args.out, safe_serialization=True)
        self.tokenizer.save_pretrained(self.args.out)
        with open(os.path.join(self.args.out, "languages.txt"), "w") as f:
            f.write(",".join(f"{CODES[src]}>{CODES[tgt]}" for src, tgt in self.dirs) + "\n")

    def run(self):
        return run_steps(self, self.args)


def main():
    args = parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    trainer = Trainer(args)
    steps = trainer.run()
    print(f"done: {steps} steps, {time.time() - trainer.start:.0f}s, best valid exact match "
          f"{trainer.best[0]:.3f}, model {args.out}", flush=True)


if __name__ == "__main__":
    main()
