#!/usr/bin/python3
"""Scores translations against references, line by line.

    /usr/bin/python3 tools/toy/evaluate.py [--natural] HYPOTHESES REFERENCES

Both files hold one sentence a line and must have the same number of lines.
By default the text is already tokenized (tokens separated by spaces; the
output of models/toy-en-fr and its test.fr are). With --natural it is text
as people write it (models/en-fr: "J'ai vu le chat."): a sentence matches
only when its line is the reference's, character for character, and token
accuracy and BLEU split words from the punctuation and apostrophes attached
to them ("J'ai vu le chat." -> J ' ai vu le chat .). Prints

    exact match     sentences whose tokens equal the reference's exactly
                    (--natural: whose text does)
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
import re
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


# Natural text: a run of letters or digits, or any other visible character.
WORD_OR_MARK = re.compile(r"[^\W_]+|[^\w\s]|_")


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def tokens(line, natural):
    return WORD_OR_MARK.findall(line) if natural else line.split()


def main(argv):
    natural = "--natural" in argv[1:]
    args = [a for a in argv[1:] if a != "--natural"]
    if len(args) != 2 or args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if args[:1] in (["-h"], ["--help"]) else 2
    hyp_lines, ref_lines = read_lines(args[0]), read_lines(args[1])
    if len(hyp_lines) != len(ref_lines):
        print(f"evaluate: {args[0]} has {len(hyp_lines)} lines, {args[1]} has "
              f"{len(ref_lines)}", file=sys.stderr)
        return 1
    hyps = [tokens(line, natural) for line in hyp_lines]
    refs = [tokens(line, natural) for line in ref_lines]
    compared = (hyp_lines, ref_lines) if natural else (hyps, refs)
    em = exact_match(*compared)
    acc = token_accuracy(hyps, refs)
    bleu, precisions, bp = corpus_bleu(hyps, refs)
    print(f"sentences       {len(refs)}")
    print(f"exact match     {em:.4f}  ({sum(h == r for h, r in zip(*compared))} sentences)")
    print(f"token accuracy  {acc:.4f}")
    print("BLEU            {:.2f}  (precisions {}, brevity penalty {:.4f}, "
          "length ratio {:.4f})".format(
              bleu, " ".join(f"{p:.4f}" for p in precisions), bp,
              sum(map(len, hyps)) / max(1, sum(map(len, refs)))))
    print(f"exact_match={em:.3f} token_accuracy={acc:.3f} bleu={bleu:.1f} sentences={len(refs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
