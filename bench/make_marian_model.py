#!/usr/bin/python3
"""Builds a Transformer-base-sized Hugging Face MarianMTModel with random
weights from a fixed seed, saves it with save_pretrained, and exports it to a
ted model directory with tools/export_hf.py: the OPUS-MT shape, the checkpoint
`make bench` (bench/run.py) gives ted, PyTorch and CTranslate2.

    .venv/bin/python bench/make_marian_model.py [--out DIR]

(transformers: the test virtualenv, `make venv`.) The model: d_model 512, 8
heads, 6 encoder + 6 decoder layers, d_ff 2048, swish, 58 101 tokens shared
by both sides and the output layer, as Helsinki-NLP/opus-mt-en-de. Weight
matrices and embeddings are drawn from N(0, 0.02^2), biases too, LayerNorm
gains from 1 + N(0, 0.02^2). The SentencePiece models are small ones trained
on generated words; the vocabulary is filled up to 58 101 tokens (ted bench
feeds random ids, so tokenization plays no part in the timings).

DIR (default build/bench/marian) receives the ted model, DIR-hf the Hugging
Face directory (both replaced; about 15 s). When DIR/stamp.json already names
this script's version, seed and sizes, nothing is done (--force: rebuild).
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import common  # noqa: E402

VERSION = 1  # bump when the model or its files change
SEED = 20240612
MARIAN_BASE = dict(vocab_size=58101, d_model=512, encoder_layers=6, decoder_layers=6,
                   encoder_attention_heads=8, decoder_attention_heads=8, encoder_ffn_dim=2048,
                   decoder_ffn_dim=2048, activation_function="swish",
                   max_position_embeddings=512, scale_embedding=True)
STD = 0.02
DEFAULT_OUT = os.path.join(ROOT, "build", "bench", "marian")


def write_tokenizer(hf_dir, vocab_size):
    """source.spm and target.spm (one small model trained on generated
    words), vocab.json filled up to vocab_size tokens, tokenizer_config.json."""
    import sentencepiece

    corpus = common.made_up_corpus(SEED, 2000, 5000)
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "spm")
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(corpus), model_prefix=prefix, vocab_size=2000, bos_id=-1,
            eos_id=-1, unk_id=0, pad_id=-1, minloglevel=2)
        for name in ("source.spm", "target.spm"):
            shutil.copyfile(prefix + ".model", os.path.join(hf_dir, name))
        processor = sentencepiece.SentencePieceProcessor(model_file=prefix + ".model")
        pieces = [processor.id_to_piece(i) for i in range(1, len(processor))]
    tokens = ["</s>", "<unk>"] + pieces
    tokens += [f"▁w{i}" for i in range(len(tokens), vocab_size - 1)] + ["<pad>"]
    with open(os.path.join(hf_dir, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump({token: i for i, token in enumerate(tokens)}, f, ensure_ascii=False)
    with open(os.path.join(hf_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({"source_lang": "en", "target_lang": "de", "separate_vocabs": False}, f)


def build_model():
    """The MarianMTModel with its seeded random weights (eval mode)."""
    import torch
    from transformers import MarianConfig, MarianMTModel

    pad = MARIAN_BASE["vocab_size"] - 1
    config = MarianConfig(**MARIAN_BASE, pad_token_id=pad, eos_token_id=0,
                          decoder_start_token_id=pad, forced_eos_token_id=0,
                          bad_words_ids=[[pad]], max_length=512, num_beams=4)
    torch.manual_seed(SEED)
    model = MarianMTModel(config)
    generator = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "embed_positions" in name:
                continue
            noise = torch.randn(p.shape, generator=generator) * STD
            p.copy_(1.0 + noise if "layer_norm.weight" in name else noise)
        model.final_logits_bias.copy_(torch.randn(model.final_logits_bias.shape,
                                                  generator=generator) * STD)
    return model.eval()


def stamp():
    return {"version": VERSION, "seed": SEED, "std": STD, **MARIAN_BASE}


def up_to_date(out_dir):
    try:
        with open(os.path.join(out_dir, "stamp.json"), encoding="utf-8") as f:
            return json.load(f) == stamp() and \
                os.path.isfile(os.path.join(out_dir + "-hf", "model.safetensors"))
    except (OSError, ValueError):
        return False


def make(out_dir, force=False):
    """Writes the Hugging Face directory out_dir-hf and the ted model
    out_dir exported from it, unless they are up to date; returns out_dir."""
    if not force and up_to_date(out_dir):
        print(f"make_marian_model: {out_dir} is up to date", file=sys.stderr)
        return out_dir
    from export_hf import export

    start = time.time()
    hf_dir = out_dir + "-hf"
    for path in (out_dir, hf_dir):
        shutil.rmtree(path, ignore_errors=True)
    os.makedirs(hf_dir)
    build_model().save_pretrained(hf_dir)
    write_tokenizer(hf_dir, MARIAN_BASE["vocab_size"])
    export(hf_dir, out_dir)
    with open(os.path.join(out_dir, "stamp.json"), "w", encoding="utf-8") as f:
        json.dump(stamp(), f, indent=1)
        f.write("\n")
    size = os.path.getsize(os.path.join(out_dir, "model.safetensors"))
    print(f"make_marian_model: wrote {out_dir} ({size / 2**20:.1f} MiB of weights) and "
          f"{hf_dir} in {time.time() - start:.1f} s", file=sys.stderr)
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
