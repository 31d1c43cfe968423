#!/usr/bin/python3
"""SentencePiece models and the shared vocabulary of models/en-fr, in the
layout of Hugging Face's MarianTokenizer.

Trains a unigram SentencePiece model on the English side of the training
data (source.spm) and one on the French side (target.spm), then writes
vocab.json, the one vocabulary both sides share (the model's embeddings are
shared), as OPUS-MT models have it:

    "</s>": 0          end of sentence (eos_token_id)
    "<unk>": 1         a piece missing from the vocabulary
    the pieces of source.spm, in its order, then those of target.spm that
    source.spm lacks, in its order
    "<pad>": last      padding, and the first decoder input
                       (pad_token_id = decoder_start_token_id)

The SentencePiece models' own <unk>, <s> and </s> are not pieces of the
text and are left out. MarianTokenizer segments with source.spm (target.spm
for targets) and maps each piece through vocab.json; generated ids go back
through vocab.json to pieces, which target.spm joins into text.

Rerun (seconds; deterministic for given data and sizes):

    /usr/bin/python3 tools/toy/train_spm.py

reads  build/toy/natural/train.en  train.fr               (--data)
writes build/toy/natural/spm/source.spm target.spm vocab.json  (--out)
"""
import argparse
import json
import os
import sys

import sentencepiece as spm

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EOS, UNK, PAD = "</s>", "<unk>", "<pad>"


def train(text, prefix, vocab_size, threads):
    spm.SentencePieceTrainer.train(
        input=text, model_prefix=prefix, vocab_size=vocab_size, model_type="unigram",
        character_coverage=1.0, input_sentence_size=0, shuffle_input_sentence=False,
        num_threads=threads, minloglevel=2)
    os.replace(prefix + ".model", prefix + ".spm")
    os.remove(prefix + ".vocab")
    return spm.SentencePieceProcessor(model_file=prefix + ".spm")


def text_pieces(processor):
    """The pieces of a SentencePiece model that text is made of, in id order."""
    return [processor.id_to_piece(i) for i in range(processor.get_piece_size())
            if not (processor.is_control(i) or processor.is_unknown(i))]


def marian_vocab(source, target):
    pieces = [EOS, UNK]
    seen = set(pieces)
    for piece in text_pieces(source) + text_pieces(target):
        if piece not in seen:
            seen.add(piece)
            pieces.append(piece)
    if PAD in seen:
        sys.exit(f"train_spm: a SentencePiece model holds the piece {PAD}")
    pieces.append(PAD)
    return {piece: i for i, piece in enumerate(pieces)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.path.join(ROOT, "build", "toy", "natural"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "toy", "natural", "spm"))
    ap.add_argument("--src-vocab-size", type=int, default=700)
    ap.add_argument("--tgt-vocab-size", type=int, default=900)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    os.makedirs(args.out, exist_ok=True)
    source = train(os.path.join(args.data, "train.en"), os.path.join(args.out, "source"),
                   args.src_vocab_size, args.threads)
    target = train(os.path.join(args.data, "train.fr"), os.path.join(args.out, "target"),
                   args.tgt_vocab_size, args.threads)
    vocab = marian_vocab(source, target)
    with open(os.path.join(args.out, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False, indent=2)
        f.write("\n")
    print(f"source.spm {source.get_piece_size()} pieces, target.spm {target.get_piece_size()}, "
          f"vocab.json {len(vocab)} ids (pad {vocab[PAD]})")


if __name__ == "__main__":
    main()
