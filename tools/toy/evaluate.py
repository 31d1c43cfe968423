#!/usr/bin/python3
"""Scores translations against references, line by line.

    /usr/bin/python3 tools/toy/evaluate.py HYPOTHESES REFERENCES

Both files hold one sentence a line, already tokenized (tokens separated by
spaces; the toy model's output and test.fr are), and must have the same
number of lines. Prints

    exact match     sentences whose tokens equal the reference's exactly
    token accuracy  sum over sentences of the positions i where hypothesis
                    token i equals reference token i, divided by the sum over
                    sentences of max(hypothesis length, reference length):
                    a missing, extra or shifted token counts as an error
    BLEU            corpus-level BLEU (Papineni et al., 2002): modified
                    (clipped) n-gram precisions for n = 1..4, each summed
                    over the whole corpus before dividing, their geometric
                    mean with uniform weights, times the brevity penalty
                    exp(1 - r / c) when the total hypothesis length c is below
                    the total reference length r; one reference a sentence,
                    no smoothing (a zero precision gives 0), times 100

The last line is machine-readable:

    exact_match=0.XXX token_accuracy=0.XXX bleu=XX.X sentences=N
"""
import collections
import math
import sys

MAX_ORDER = 4


def ngrams(tokens, n):
    return collections.Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def bleu_stats(hypotheses, references, max_order=MAX_ORDER):
    """Corpus sums: clipped n-gram matches and hypothesis n-gram counts for
    n = 1..max_order, total hypothesis and reference lengths."""
    matches = [0] * max_order
    totals = [0] * max_order
    hyp_len = ref_len = 0
    for hyp, ref in zip(hypotheses, references):
        hyp_len += len(hyp)
        ref_len += len(ref)
        for n in range(1, max_order + 1):
            h, r = ngrams(hyp, n), ngrams(ref, n)
            matches[n - 1] += sum(min(c, r[g]) for g, c in h.items())
            totals[n - 1] += max(0, len(hyp) - n + 1)
    return matches, totals, hyp_len, ref_len


def corpus_bleu(hypotheses, references, max_order=MAX_ORDER):
    """BLEU in [0, 100] of token lists against one reference token list each.
    Returns (bleu, precisions, brevity penalty)."""
    matches, totals, hyp_len, ref_len = bleu_stats(hypotheses, references, max_order)
    precisions = [m / t if t else 0.0 for m, t in zip(matches, totals)]
    if hyp_len == 0:
        return 0.0, precisions, 0.0
    bp = 1.0 if hyp_len >= ref_len else math.exp(1.0 - ref_len / hyp_len)
    if min(precisions) == 0.0:
        return 0.0, precisions, bp
    log_mean = sum(math.log(p) for p in precisions) / max_order
    return 100.0 * bp * math.exp(log_mean), precisions, bp


def exact_match(hypotheses, references):
    pairs = list(zip(hypotheses, references))
    return sum(h == r for h, r in pairs) / len(pairs) if pairs else 0.0


def token_accuracy(hypotheses, references):
    good = total = 0
    for hyp, ref in zip(hypotheses, references):
        good += sum(h == r for h, r in zip(hyp, ref))
        total += max(len(hyp), len(ref))
    return good / total if total else 0.0


def read_tokens(path):
    with open(path, encoding="utf-8") as f:
        return [line.split() for line in f.read().splitlines()]


def main(argv):
    if len(argv) != 3 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) == 2 else 2
    hyps, refs = read_tokens(argv[1]), read_tokens(argv[2])
    if len(hyps) != len(refs):
        print(f"evaluate: {argv[1]} has {len(hyps)} lines, {argv[2]} has {len(refs)}",
              file=sys.stderr)
        return 1
    em = exact_match(hyps, refs)
    acc = token_accuracy(hyps, refs)
    bleu, precisions, bp = corpus_bleu(hyps, refs)
    print(f"sentences       {len(refs)}")
    print(f"exact match     {em:.4f}  ({sum(h == r for h, r in zip(hyps, refs))} sentences)")
    print(f"token accuracy  {acc:.4f}")
    print("BLEU            {:.2f}  (precisions {}, brevity penalty {:.4f}, "
          "length ratio {:.4f})".format(
              bleu, " ".join(f"{p:.4f}" for p in precisions), bp,
              sum(map(len, hyps)) / max(1, sum(map(len, refs)))))
    print(f"exact_match={em:.3f} token_accuracy={acc:.3f} bleu={bleu:.1f} sentences={len(refs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
