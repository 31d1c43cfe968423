#!/usr/bin/python3
"""ted's beam search against a PyTorch reference (tools/beam_search_torch.py:
the tutorial model with the exported weights, the decoder re-run over whole
prefixes, one sentence at a time) on the toy model (models/toy-en-fr).

    TED=build/ted /usr/bin/python3 tests/parity/test_beam.py

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  beam/*          `ted translate --beam N --n-best K --scores` (batches of 32)
                  against the reference on the first 60 test sentences and 4
                  odd ones (a repeated word, no verb, unknown words, a long
                  list): the same hypotheses in the same order, and scores,
                  total and per-token log-probs within 1e-4; with length
                  penalties 0.6 (the default), 0 and 1, and with a length
                  limit that cuts most hypotheses (the limit path); with the
                  model's early_stopping (never) and with true and false
  beam/1-is-greedy  --beam 1 --length-penalty 0 prints what greedy prints
                  (text and scores); the reference's beam 1 gives the
                  tutorial's greedy_decode
  beam/batch-1-vs-32  beam search one sentence at a time and in batches of
                  32 give the same hypotheses
"""
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))

import beam_search_torch  # noqa: E402
from tutorial_model import greedy_decode  # noqa: E402
from ted_test import TED, failures, report, ted_output  # noqa: E402

TOLERANCE = 1e-4
TIMEOUT = 300
MODEL = os.path.join(ROOT, "models", "toy-en-fr")
ODD = ["the the the the the the the .",
       "cat dog bird apple",
       "the zebra eats the xylophone .",
       "the small cat and the big dog and the old bird and the green apple eat ."]


def run_ted(args, sentences):
    """ted's stdout lines, or raises RuntimeError."""
    return ted_output(args, "".join(s + "\n" for s in sentences), TIMEOUT).splitlines()


def parse_moses(lines):
    """INDEX ||| TEXT ||| SCORE ||| LOG-PROB ||| TOKENS -> {index: [hyp...]}"""
    out = {}
    for line in lines:
        fields = line.split(" ||| ")
        if len(fields) == 4:
            fields.append("")
        if len(fields) != 5:
            raise ValueError(f"not an n-best line with scores: {line!r}")
        index, text, score, log_prob, tokens = fields
        out.setdefault(int(index), []).append(dict(
            text=text, score=float(score), log_prob=float(log_prob),
            log_probs=[float(x) for x in tokens.split()]))
    return out


def compare(name, sentences, m, beam, alpha, n_best, max_length=0, early_stopping=None):
    """early_stopping None: the model's (config.yaml: never)."""
    args = ["translate", "-m", MODEL, "--beam", str(beam), "--length-penalty", str(alpha),
            "--n-best", str(n_best), "--scores"]
    if max_length:
        args += ["--max-length", str(max_length)]
    if early_stopping:
        args += ["--early-stopping", early_stopping]
    try:
        got = parse_moses(run_ted(args, sentences))
    except (RuntimeError, ValueError) as e:
        return report(name, str(e))
    worst, hypotheses, at_limit = 0.0, 0, 0
    for i, sentence in enumerate(sentences):
        ids = m.source_ids(sentence)
        max_len = m.max_target_length(len(ids), max_length)
        want = beam_search_torch.beam_search(m, ids, max_len, beam, alpha, n_best,
                                             early_stopping or "never")
        have = got.get(i, [])
        if len(have) != len(want):
            return report(name, f"sentence {i + 1}: {len(have)} hypotheses, the reference "
                                f"{len(want)}")
        for k, (h, w) in enumerate(zip(have, want)):
            text = m.text(w["ids"])
            where = f"sentence {i + 1} ({sentence!r}), hypothesis {k + 1}"
            if h["text"] != text:
                return report(name, f"{where}: ted {h['text']!r} ({h['score']:.6f}), the "
                                    f"reference {text!r} ({w['score']:.6f})")
            if len(h["log_probs"]) != len(w["log_probs"]):
                return report(name, f"{where}: {len(h['log_probs'])} token log-probs, the "
                                    f"reference {len(w['log_probs'])}")
            diffs = [abs(h["score"] - w["score"]), abs(h["log_prob"] - w["log_prob"])]
            diffs += [abs(a - b) for a, b in zip(h["log_probs"], w["log_probs"])]
            if max(diffs) > TOLERANCE:
                return report(name, f"{where}: scores differ by {max(diffs):.3g} > "
                                    f"{TOLERANCE:g}: ted {h['score']:.6f} {h['log_prob']:.6f}, "
                                    f"the reference {w['score']:.6f} {w['log_prob']:.6f}")
            worst = max(worst, max(diffs))
            hypotheses += 1
            at_limit += len(w["ids"]) == max_len and w["ids"][-1] != m.eos
    report(name, detail=f"{len(sentences)} sentences, {hypotheses} hypotheses identical "
                        f"({at_limit} cut at the length limit), max abs diff {worst:.2e}")


def check_beam_1(name, sentences, m):
    try:
        greedy = run_ted(["translate", "-m", MODEL, "--scores"], sentences)
        beam1 = run_ted(["translate", "-m", MODEL, "--beam", "1", "--length-penalty", "0",
                         "--scores"], sentences)
    except RuntimeError as e:
        return report(name, str(e))
    if greedy != beam1:
        bad = next(i for i, (a, b) in enumerate(zip(greedy, beam1)) if a != b)
        return report(name, f"line {bad + 1}: greedy {greedy[bad]!r}, beam 1 {beam1[bad]!r}")
    for i, sentence in enumerate(sentences):
        ids = m.source_ids(sentence)
        max_len = m.max_target_length(len(ids))
        want = greedy_decode(m.model, torch.tensor([ids]).t(), max_len + 1)
        got = beam_search_torch.beam_search(m, ids, max_len, 1, 0.0, 1)[0]["ids"]
        if got != want:
            return report(name, f"sentence {i + 1}: the reference's beam 1 {got}, "
                                f"greedy_decode {want}")
    report(name, detail=f"{len(sentences)} sentences: ted's beam 1 prints greedy's lines, "
                        "the reference's beam 1 is greedy_decode")


def check_batches(name, sentences):
    args = ["translate", "-m", MODEL, "--beam", "4", "--n-best", "4"]
    try:
        one = parse_moses(run_ted(args + ["--batch-size", "1"], sentences))
        many = parse_moses(run_ted(args + ["--batch-size", "32"], sentences))
    except (RuntimeError, ValueError) as e:
        return report(name, str(e))
    for i in range(len(sentences)):
        a, b = one.get(i, []), many.get(i, [])
        if [h["text"] for h in a] != [h["text"] for h in b] or \
                any(abs(x["score"] - y["score"]) > 1e-5 for x, y in zip(a, b)):
            return report(name, f"sentence {i + 1}: batch 1 {a[:1]}, batch 32 {b[:1]}")
    report(name, detail=f"{len(sentences)} sentences, 4 hypotheses each")


def main():
    torch.set_num_threads(1)
    if not (os.path.isfile(TED) and os.access(TED, os.X_OK)):
        report("beam/setup", f"{TED}: no such executable")
        return
    m = beam_search_torch.Model(MODEL)
    with open(os.path.join(MODEL, "test.en"), encoding="utf-8") as f:
        sentences = [line.rstrip("\n") for line in f][:60] + ODD
    compare("beam/4-alpha-0.6-n-best-4", sentences, m, 4, 0.6, 4)
    compare("beam/4-alpha-0-n-best-2", sentences, m, 4, 0.0, 2)
    compare("beam/3-alpha-1-max-length-7", sentences, m, 3, 1.0, 3, max_length=7)
    compare("beam/4-alpha-1-early-stopping-true", sentences, m, 4, 1.0, 2,
            early_stopping="true")
    compare("beam/3-alpha-0.6-max-length-7-early-stopping-false", sentences, m, 3, 0.6, 3,
            max_length=7, early_stopping="false")
    check_beam_1("beam/1-is-greedy", sentences, m)
    check_batches("beam/batch-1-vs-32", sentences)


if __name__ == "__main__":
    main()
    sys.exit(1 if failures() else 0)
