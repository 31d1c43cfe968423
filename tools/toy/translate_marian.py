"""Translates with a Hugging Face MarianMTModel directory as transformers
does: MarianTokenizer, then model.generate with the directory's generation
config (models/en-fr's: greedy), then batch_decode without the special
tokens. The reference ted's translations of models/en-fr are compared with.

    .venv/bin/python tools/toy/translate_marian.py [--model HF_DIR] \\
        [--input FILE] > translations

reads one sentence a line (standard input by default) and writes one
translation a line; HF_DIR defaults to build/toy/natural/hf, where
tools/toy/train_marian.py saves the model.
"""
import argparse
import os
import sys

import torch
from transformers import MarianMTModel, MarianTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from train_marian import NATURAL, translate  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.path.join(NATURAL, "hf"))
    ap.add_argument("--input", help="one sentence a line (default: standard input)")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    tokenizer = MarianTokenizer.from_pretrained(args.model)
    model = MarianMTModel.from_pretrained(args.model)
    if args.input:
        with open(args.input, encoding="utf-8") as f:
            sources = f.read().splitlines()
    else:
        sources = sys.stdin.read().splitlines()
    for line in translate(model, tokenizer, sources, args.batch_size):
        print(line)


if __name__ == "__main__":
    main()
