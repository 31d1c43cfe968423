#!/usr/bin/python3
"""ted's Moses punctuation normalization (src/io/normalize.c, reached through
BUILD/normalize-check) against Hugging Face's MarianTokenizer.normalize, which
runs sacremoses' MosesPunctNormalizer(source_lang).normalize.

    BUILD=build .venv/bin/python tests/parity/test_normalize.py

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  normalize/reference  the reference really is sacremoses' normalizer
  normalize/LANG       byte-for-byte identical output on the same texts
                       (> 2000: every character and sequence the rules touch,
                       random mixes of them with words, digits of several
                       scripts, Unicode spaces, CJK punctuation, emoji,
                       control characters, tabs and line ends, empty texts and
                       texts of 100000 characters) for each language whose
                       rules differ: en; de, es, fr; cs, cz; others (ro);
                       none (source_lang unset)
"""
import os
import random
import sys

from transformers import MarianTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))

from ted_test import failures, report, run  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
CHECK = os.path.join(BUILD, "normalize-check")
LANGUAGES = ["en", "de", "es", "fr", "cs", "cz", "ro", None]
TIMEOUT = 120
# Everything a rule of MosesPunctNormalizer looks at, alone and in the
# sequences its patterns match.
RULE_PIECES = [
    "\r", "(", ")", " ", "  ", ") .", ") !", ") :", ") ?", ") ;", ") ,", ") x", "( ", " )",
    "5 %", "\u0665 %", "\uff17 %", "x %", " :", " ;", "`", "''", "'", "\u201e", "\u201c",
    "\u201d", "\u2013", "\u2014", "\u00b4", "\u00b4\u00b4", "a\u2018b", "Z\u2019s", "\u00e9\u2019s",
    "\u2018", "\u201a", "\u2019", "\u2026", "\u00a0\u00ab\u00a0", "\u00ab\u00a0", "\u00ab",
    "\u00a0\u00bb\u00a0", "\u00a0\u00bb", "\u00bb", "\u00a0%", "n\u00ba\u00a0", "\u00a0:",
    "\u00a0\u00baC", "\u00a0cm", "\u00a0?", "\u00a0!", "\u00a0;", ",\u00a0", "\u00a0", '"',
    '",', '".', '",.', '"..', ',"', '."', '..."', '." x', '."<', '." <', '."\t<', '.."\n',
    "1\u00a0000", "3\u00a0\u0664", "\u0967\u00a02", "1\u00a0a", "12,345", "3.14",
]
WORDS = ["the", "cat", "l'homme", "na\u00efve", "\u00c9t\u00e9", "stra\u00dfe", "\u0161koda",
         "\u0645\u0631\u062d\u0628\u0627", "\u4f60\u597d", "\U0001f600", "\U0001f44d\U0001f3fd",
         "x", "A", "z", "nº", "ºC", "cm", "<b>", "<", ">"]
DIGITS = ["0", "7", "42", "\u0660", "\u06f5", "\u0969", "\uff10", "\U0001d7ce", "\u00b2",
          "\u2155", "\u0f33"]
SPACES = [" ", "\t", "\n", "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\u1680", "\u2002",
          "\u200a", "\u200b", "\u2028", "\u202f", "\u205f", "\u3000", "\ufeff"]
OTHER = ["\u3002", "\uff0c", "\u3001", "\uff1a", "\uff1f", "\u300a", "\u300b", "\uff08",
         "\uff09", "\uff01", "\u300c", "\u300d", "\uff0e", "\uff5e", "\u2501", "\u3010",
         "\u3011", "\uff05", "\x01", "\x07", "\x1b", "\x7f", "\x9f", "\u200e", "\ue000",
         "\U0010fffd", "-", "...", "!", "?", ";", ":", ",", ".", "%", "&", "*"]


def random_text(rng, size):
    pools = [RULE_PIECES, WORDS, DIGITS, SPACES, OTHER]
    weights = [5, 3, 2, 3, 2]
    return "".join(rng.choice(rng.choices(pools, weights)[0]) for _ in range(size))


def class_edges(predicate):
    """Every character for which predicate holds, and its neighbours."""
    inside = [c for c in range(sys.maxunicode + 1) if predicate(chr(c))]
    return [chr(c) for c in sorted(set(inside) | {c + 1 for c in inside} | {c - 1 for c in inside})
            if 0 < c <= sys.maxunicode and not 0xD800 <= c <= 0xDFFF]


def texts():
    rng = random.Random(20240513)
    out = ["", " ", "\t\n", "\u00a0", "\u3000x\u2028", "plain text ."]
    # \d and \s are Unicode classes: every digit and space, and the
    # characters next to them, where the rules test for them.
    out += [f"{d} %{d}\u00a0{d}" for d in class_edges(str.isdecimal)]
    out += [f'{w}x."{w}<."{w}{w}<."{w}' for w in class_edges(str.isspace)]
    out += RULE_PIECES + [p + q for p in RULE_PIECES for q in ('"', "x", "1", "<", " ")]
    out += [" " + p + " " for p in RULE_PIECES]
    out += [random_text(rng, rng.randint(1, 12)) for _ in range(1500)]
    out += [random_text(rng, rng.randint(12, 80)) for _ in range(600)]
    out += ["\u00a0" * n + "." * m + '"' + " " * k
            for n in range(3) for m in range(4) for k in range(3)]
    tails = ["", "<", " <", "\t\u3000<x", "x", " ", "\n", '"', '.."<']
    out += [p + "." * m + '"' + t for p in ("", "a", ".b..") for m in (1, 2, 3, 3000)
            for t in tails]
    out += [random_text(rng, 100000) for _ in range(2)]
    out.append('(1\u00a02) "x".. \u201cy\u201d\u2026 ' * 5000)
    return out


def reference(language):
    tokenizer = MarianTokenizer.__new__(MarianTokenizer)
    tokenizer.source_lang = language
    tokenizer._setup_normalizer()
    return tokenizer


def check_reference():
    normalizer = getattr(reference("en").punc_normalizer, "__self__", None)
    if type(normalizer).__name__ != "MosesPunctNormalizer":
        report("normalize/reference", "MarianTokenizer does not use sacremoses' "
               "MosesPunctNormalizer (is sacremoses installed?)")
        return False
    report("normalize/reference", detail=f"{type(normalizer).__module__}.MosesPunctNormalizer")
    return True


def ted_normalize(language, inputs):
    """ted's normalization of each input, or (None, reason)."""
    args = [CHECK] + ([language] if language else [])
    stdin = b"".join(t.encode() + b"\0" for t in inputs)
    status, out, err = run(args, stdin, TIMEOUT, binary=True)
    if status is None:
        return None, f"{CHECK} did not run: {err}"
    if status != 0:
        return None, f"{CHECK} exit {status}: {err}"
    outputs = out.split(b"\0")
    if len(outputs) != len(inputs) + 1 or outputs[-1] != b"":
        return None, f"{len(outputs) - 1} outputs for {len(inputs)} texts"
    return outputs[:-1], None


def check_language(language, inputs):
    name = f"normalize/{language or 'none'}"
    got, problem = ted_normalize(language, inputs)
    if problem:
        report(name, problem)
        return
    tokenizer = reference(language)
    wrong = [(text, expected, actual) for text, actual in zip(inputs, got)
             for expected in [tokenizer.normalize(text).encode()] if actual != expected]
    if wrong:
        text, expected, actual = wrong[0]
        report(name, f"{len(wrong)} of {len(inputs)} texts differ; first: {text[:200]!r} -> "
               f"ted {actual[:200]!r}, sacremoses {expected[:200]!r}")
    else:
        changed = sum(tokenizer.normalize(t) != t for t in inputs)
        report(name, detail=f"{len(inputs)} texts identical ({changed} changed by it)")


def main():
    if not os.path.exists(CHECK):
        report("normalize/build", f"{CHECK} is missing (make BUILD={BUILD} {CHECK})")
        return 1
    if not check_reference():
        return 1
    inputs = texts()
    for language in LANGUAGES:
        check_language(language, inputs)
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())
