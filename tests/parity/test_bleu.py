#!/usr/bin/python3
"""Checks tools/toy/evaluate.py (BLEU, exact match, token accuracy) against
small examples computed by hand. Prints "ok NAME" or "FAIL NAME: why" per
check; exits 1 when one fails."""
import math
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "toy"))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))

import evaluate  # noqa: E402
from ted_test import check, failures, run  # noqa: E402


def close(name, got, want, tol=1e-9):
    """got within tol of want (a number, or a list of numbers)."""
    if isinstance(want, (list, tuple)):
        good = len(got) == len(want) and all(abs(g - w) <= tol for g, w in zip(got, want))
    else:
        good = abs(got - want) <= tol
    check(name, good, f"got {got}, want {want}")


def toks(*lines):
    return [line.split() for line in lines]


# Identical corpora: every precision is 1, no brevity penalty.
hyp = toks("le chat noir dort .", "j' ai mangé une pomme rouge .")
close("bleu_identical", evaluate.corpus_bleu(hyp, hyp)[0], 100.0)

# "the cat sat on the mat" / "the cat is on the mat": clipped unigrams 5/6,
# bigrams (the cat, on the, the mat) 3/5, trigrams (on the mat) 1/4,
# 4-grams 0/3: without smoothing BLEU is 0.
bleu, precisions, bp = evaluate.corpus_bleu(toks("the cat sat on the mat"),
                                            toks("the cat is on the mat"))
close("bleu_precisions", precisions, [5 / 6, 3 / 5, 1 / 4, 0 / 3])
close("bleu_zero_4gram", bleu, 0.0)
close("bleu_no_penalty_same_length", bp, 1.0)

# Clipping: "the" 7 times against a reference holding it twice -> 2/7.
_, precisions, _ = evaluate.corpus_bleu(toks("the the the the the the the"),
                                        toks("the cat is on the mat"))
close("bleu_clipped_unigrams", precisions[0], 2 / 7)

# Brevity penalty: a 4-token prefix of a 6-token reference, all precisions
# 1, c = 4 < r = 6: BLEU = 100 * exp(1 - 6/4) = 60.653...
close("bleu_brevity_penalty", evaluate.corpus_bleu(toks("a b c d"), toks("a b c d e f"))[0],
      100 * math.exp(-0.5))

# A longer hypothesis is not penalized: "a b c d e f g" against "a b c d e f"
# has precisions 6/7, 5/6, 4/5, 3/4 and BP 1.
close("bleu_long_hypothesis",
      evaluate.corpus_bleu(toks("a b c d e f g"), toks("a b c d e f"))[0],
      100 * (6 / 7 * 5 / 6 * 4 / 5 * 3 / 4) ** 0.25)

# Corpus level, not an average of sentence scores:
#   "a b c d"   / "a b c d"   matches 4/4 3/3 2/2 1/1
#   "a b c d e" / "a b x d e" matches 4/5 2/4 0/3 0/2
# summed: 8/9, 5/7, 2/5, 1/3 (the second sentence alone would score 0);
# c = r = 9. BLEU = 100 * (8/9 * 5/7 * 2/5 * 1/3) ** (1/4) = 53.94...
bleu = evaluate.corpus_bleu(toks("a b c d", "a b c d e"), toks("a b c d", "a b x d e"))[0]
close("bleu_corpus_level", bleu, 100 * (8 / 9 * 5 / 7 * 2 / 5 * 1 / 3) ** 0.25)
close("bleu_corpus_level_value", round(bleu, 2), 53.94)

# Brevity penalty on corpus totals: c = 3 + 2 = 5, r = 3 + 4 = 7.
hyp, ref = toks("x y z", "u v"), toks("x y z", "u v w t")
_, precisions, bp = evaluate.corpus_bleu(hyp, ref, max_order=2)
close("bleu_corpus_brevity", bp, math.exp(1 - 7 / 5))
close("bleu_bigram_precision", precisions, [5 / 5, 3 / 3])

# Exact match and token accuracy: (3 + 1) positions right out of
# max(3, 3) + max(2, 3) = 6.
hyp, ref = toks("a b c", "x y"), toks("a b c", "x z w")
close("exact_match", evaluate.exact_match(hyp, ref), 0.5)
close("token_accuracy", evaluate.token_accuracy(hyp, ref), 4 / 6)
# A dropped first token shifts every position: 0 of 4 right.
close("token_accuracy_shift", evaluate.token_accuracy(toks("b c d"), toks("a b c d")), 0.0)

# The command's last line: the corpus above, token accuracy (4 + 4) / (4 + 5).
with tempfile.TemporaryDirectory() as tmp:
    h, r = os.path.join(tmp, "hyp"), os.path.join(tmp, "ref")
    with open(h, "w") as f:
        f.write("a b c d\na b c d e\n")
    with open(r, "w") as f:
        f.write("a b c d\na b x d e\n")
    status, out, err = run([sys.executable, os.path.join(ROOT, "tools", "toy", "evaluate.py"),
                            h, r])
    last = out.strip().splitlines()[-1] if out.strip() else ""
    want = "exact_match=0.500 token_accuracy=0.889 bleu=53.9 sentences=2"
    check("evaluate_command", status == 0 and last == want,
          f"exit {status}, last line {last!r}, want {want!r}")

sys.exit(1 if failures() else 0)
