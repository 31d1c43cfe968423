#!/usr/bin/python3
"""The toy English -> French language of tools/toy/generate.py, written as
people write it: the natural-text data of models/en-fr.

generate.py writes lowercase text tokenized by spaces ("j' ai vu le chat .");
this turns every pair into natural text:

    i saw the cat .                     I saw the cat.
    j' ai vu le chat .                  J'ai vu le chat.
    she thinks that the queen will not sing .
    elle pense que la reine ne chantera pas .
                                        She thinks that the queen will not sing.
                                        Elle pense que la reine ne chantera pas.

- the first letter of a sentence is a capital, and so is the English
  pronoun "I" wherever it stands;
- `.` `,` `?` `!` are attached to the word before them;
- an elided word is joined to the next (j' ai -> j'ai, l' homme -> l'homme,
  qu' il -> qu'il); contractions (au, aux, du, des) are already single words.

With --es, the Spanish of generate.py --es is written the same way (and an
exclamation opens with "¡": "¡El perro corre!"), beside the English and
French.

For variety, the final period of some pairs is dropped or becomes an
exclamation mark, in both languages at once (--no-period, --exclamation: the
fractions of pairs), as a user types a sentence; the choice is drawn from a
generator seeded with --seed and the set's name, so the output is
deterministic, and every English sentence still has exactly one French
translation (the script checks it).

Rerun (about a minute and a half for generate.py):

    /usr/bin/python3 tools/toy/generate.py --out build/toy/natural/tokenized \\
        --test-out build/toy/natural/tokenized
    /usr/bin/python3 tools/toy/naturalize.py

reads  build/toy/natural/tokenized/{train,valid,test}.{en,fr}  (--tokenized)
writes build/toy/natural/{train,valid,test}.{en,fr}            (--out)
       models/en-fr/test.en  models/en-fr/test.fr              (--test-out)
       and the .es files with --es
"""
import argparse
import os
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PUNCTUATION = {".", ",", "?", "!"}
SETS = ("train", "valid", "test")


def natural(tokens, english, spanish=False):
    """Natural text of one tokenized sentence (a list of tokens)."""
    if spanish and tokens and tokens[-1] == "!":
        tokens = ["¡"] + tokens
    words = []
    joined = False  # the previous word was elided: the next one attaches to it
    for tok in tokens:
        if english and tok == "i":
            tok = "I"
        if words and (tok in PUNCTUATION or joined):
            words[-1] += tok
        else:
            words.append(tok)
        joined = (not english and tok.endswith("'")) or tok == "¡"
    text = " ".join(words)
    first = 1 if text.startswith("¡") else 0
    return text[:first] + text[first:first + 1].upper() + text[first + 1:]


def final_mark(rng, no_period, exclamation):
    """What replaces the final period: "." mostly, else "" or "!"."""
    r = rng.random()
    if r < no_period:
        return ""
    if r < no_period + exclamation:
        return "!"
    return "."


def naturalize_pair(en, fr, mark, es=None):
    """(English, French) or, given the Spanish, (English, French, Spanish)."""
    tokens = [line.split() for line in ((en, fr) if es is None else (en, fr, es))]
    if any(t[-1] != "." for t in tokens):
        sys.exit(f"naturalize: expected a final period: {en!r} / {fr!r}")
    for t in tokens:
        t[-1:] = [mark] if mark else []
    out = (natural(tokens[0], True), natural(tokens[1], False))
    return out if es is None else out + (natural(tokens[2], False, spanish=True),)


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def write_lines(path, lines):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")


def naturalize_set(directory, name, seed, no_period, exclamation, languages=("en", "fr")):
    """The natural pairs (with --es triples) of one set."""
    columns = [read_lines(os.path.join(directory, f"{name}.{lang}")) for lang in languages]
    for lang, lines in zip(languages[1:], columns[1:]):
        if len(lines) != len(columns[0]):
            sys.exit(f"naturalize: {name}.en has {len(columns[0])} lines, "
                     f"{name}.{lang} {len(lines)}")
    rng = random.Random(f"{seed}-{name}")
    return [naturalize_pair(row[0], row[1], final_mark(rng, no_period, exclamation), *row[2:])
            for row in zip(*columns)]


def check(sets):
    """One French translation per English sentence, and no English sentence
    of test or valid in another set."""
    seen = {}
    where = {}
    for name, pairs in sets.items():
        for en, *rest in pairs:
            if seen.setdefault(en, rest) != rest:
                sys.exit(f"naturalize: ambiguous source {en!r}: {seen[en]!r} / {rest!r}")
            if where.setdefault(en, name) != name:
                sys.exit(f"naturalize: {en!r} is in both {where[en]} and {name}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokenized", default=os.path.join(ROOT, "build", "toy", "natural",
                                                        "tokenized"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "toy", "natural"))
    ap.add_argument("--test-out", default=os.path.join(ROOT, "models", "en-fr"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-period", type=float, default=0.1)
    ap.add_argument("--exclamation", type=float, default=0.05)
    ap.add_argument("--es", action="store_true", help="also the Spanish (.es files)")
    args = ap.parse_args()

    languages = ("en", "fr", "es") if args.es else ("en", "fr")
    sets = {name: naturalize_set(args.tokenized, name, args.seed, args.no_period,
                                 args.exclamation, languages) for name in SETS}
    check(sets)
    for name, pairs in sets.items():
        targets = [args.out] + ([args.test_out] if name == "test" else [])
        for where in targets:
            for i, lang in enumerate(languages):
                write_lines(os.path.join(where, f"{name}.{lang}"), [p[i] for p in pairs])
    print("  ".join(f"{name} {len(pairs)}" for name, pairs in sets.items()))


if __name__ == "__main__":
    main()
