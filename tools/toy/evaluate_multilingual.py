#!/usr/bin/python3
"""Exact match, per direction, of the multilingual model of
models/multi-en-fr-es on its held-out test sets.

    /usr/bin/python3 tools/toy/evaluate_multilingual.py [--model DIR] [--ted PATH]
    .venv/bin/python tools/toy/evaluate_multilingual.py --hf build/toy/multi/hf

The test set is three files of the same sentences, one a line, in each
language, named by the model's language codes: DIR/test.eng_Latn,
test.fra_Latn, test.spa_Latn. For each direction SRC-TGT (--directions;
by default the four the model was trained for) it translates test.SRC
with `ted translate -m DIR --source-lang SRC --target-lang TGT`, or, with
--hf, with transformers' model.generate (greedy, the target code forced
first) on the Hugging Face model, and scores the translations against
test.TGT as tools/toy/evaluate.py --natural does (exact match of whole
lines, token accuracy, BLEU). A line per direction:

    eng_Latn-fra_Latn exact_match=0.XXX token_accuracy=0.XXX bleu=XX.X sentences=N

Into English it adds possessive_exact_match: exact match when his, her and
their count as one word, since French son / sa / ses and Spanish su do not
tell them apart (the sentence alone cannot say which one the English had).
--save DIR keeps the translations (DIR/SRC-TGT.txt).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

from evaluate import corpus_bleu, exact_match, read_lines, token_accuracy, tokens  # noqa: E402

DIRECTIONS = "eng_Latn-fra_Latn,eng_Latn-spa_Latn,fra_Latn-eng_Latn,spa_Latn-eng_Latn"
POSSESSIVE = re.compile(r"\b([Hh]is|[Hh]er|[Tt]heir)\b")


def parse_directions(spec):
    out = []
    for item in spec.split(","):
        src, sep, tgt = item.partition("-")
        if not sep or not src or not tgt:
            sys.exit(f"evaluate_multilingual: --directions: {item!r} is not SRC-TGT")
        out.append((src, tgt))
    return out


def translate_ted(ted, model, src, tgt, source_file, out_file):
    cmd = [ted, "translate", "-m", model, "--source-lang", src, "--target-lang", tgt,
           "-i", source_file, "-o", out_file]
    done = subprocess.run(cmd, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit(f"evaluate_multilingual: {' '.join(cmd)}: exit status {done.returncode}: "
                 f"{done.stderr.strip()[:500]}")
    return read_lines(out_file)


class HfTranslator:
    """Greedy translations by transformers' model.generate."""

    def __init__(self, path):
        import torch
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
        torch.set_num_threads(1)
        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(path, use_fast=False)
        self.model = AutoModelForSeq2SeqLM.from_pretrained(path).eval()

    def __call__(self, sources, src, tgt, batch_size=50):
        self.tokenizer.src_lang = src
        forced = self.tokenizer.convert_tokens_to_ids(tgt)
        out = []
        with self.torch.no_grad():
            for start in range(0, len(sources), batch_size):
                inputs = self.tokenizer(sources[start:start + batch_size], return_tensors="pt",
                                        padding=True)
                ids = self.model.generate(**inputs, forced_bos_token_id=forced)
                out += self.tokenizer.batch_decode(ids, skip_special_tokens=True)
        return out


def scores(hypotheses, references, into_english):
    hyps = [tokens(line, True) for line in hypotheses]
    refs = [tokens(line, True) for line in references]
    bleu = corpus_bleu(hyps, refs)[0]
    line = (f"exact_match={exact_match(hypotheses, references):.3f} "
            f"token_accuracy={token_accuracy(hyps, refs):.3f} bleu={bleu:.1f}")
    if into_english:
        same = exact_match([POSSESSIVE.sub("his", h) for h in hypotheses],
                           [POSSESSIVE.sub("his", r) for r in references])
        line += f" possessive_exact_match={same:.3f}"
    return line + f" sentences={len(references)}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "multi-en-fr-es"),
                    help="the ted model directory, which holds the test files")
    ap.add_argument("--ted", default=os.path.join(ROOT, "build", "ted"))
    ap.add_argument("--hf", help="translate with this transformers model instead of ted")
    ap.add_argument("--data", help="where test.CODE are (default: --model)")
    ap.add_argument("--directions", default=DIRECTIONS, help="SRC-TGT,... (language codes)")
    ap.add_argument("--limit", type=int, default=0, help="the first N sentences only")
    ap.add_argument("--save", help="write the translations into this directory")
    args = ap.parse_args()

    data = args.data or args.model
    hf = HfTranslator(args.hf) if args.hf else None
    with tempfile.TemporaryDirectory() as work:
        for src, tgt in parse_directions(args.directions):
            sources = read_lines(os.path.join(data, f"test.{src}"))
            references = read_lines(os.path.join(data, f"test.{tgt}"))
            if len(sources) != len(references):
                sys.exit(f"evaluate_multilingual: test.{src} has {len(sources)} lines, "
                         f"test.{tgt} {len(references)}")
            if args.limit:
                sources, references = sources[:args.limit], references[:args.limit]
            if hf:
                hypotheses = hf(sources, src, tgt)
            else:
                source_file = os.path.join(work, "source.txt")
                with open(source_file, "w", encoding="utf-8") as f:
                    f.write("".join(line + "\n" for line in sources))
                hypotheses = translate_ted(args.ted, args.model, src, tgt, source_file,
                                           os.path.join(work, "out.txt"))
            if len(hypotheses) != len(sources):
                sys.exit(f"evaluate_multilingual: {src}-{tgt}: {len(hypotheses)} translations "
                         f"of {len(sources)} sentences")
            if args.save:
                os.makedirs(args.save, exist_ok=True)
                with open(os.path.join(args.save, f"{src}-{tgt}.txt"), "w",
                          encoding="utf-8") as f:
                    f.write("".join(line + "\n" for line in hypotheses))
            print(f"{src}-{tgt} {scores(hypotheses, references, tgt.startswith('eng'))}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
