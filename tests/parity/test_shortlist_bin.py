#!/usr/bin/python3
"""Marian's binary lexical shortlists (src/io/shortlist_bin.c, reached through
BUILD/marian-check and `ted logits --shortlist`) against Marian's own writer
(pymarian 1.12.42's `convert --shortlist ... --dump-shortlist`), NumPy's reading
of the format, and the real Firefox Translations es->en files.

    BUILD=build TED=build/ted .venv/bin/python tests/parity/test_shortlist_bin.py

The Firefox files are looked for in $TED_FIREFOX_DATA, by default in
shared/data/firefox-es-en beside the repository or beside a directory above it;
where they are missing, the checks that need them print "skip" lines.

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  shortlist-bin/pymarian      a text lexical table (trg src prob lines) for
                              the toy model's vocabularies, made binary by
                              pymarian convert: ted reads each source's list
                              as the best 5 targets by probability, sorted,
                              and the first 8 ids as the frequent ones
  shortlist-bin/union-toy     `ted logits --shortlist` with it: finite logits
                              exactly at Marian's union (generate(): the
                              first 8 ids, the lists of the source's ids,
                              padded to a multiple of 8 from id 8 up), equal
                              to the logits without a shortlist there
  shortlist-bin/union-shared  the same on models/en-fr, whose two sides read
                              one vocabulary: the source ids join the union
  shortlist-bin/firefox-read  lex.50.50.esen.s2t.bin: ted reads it; NumPy's
                              reading of it has the header (magic, firstNum
                              50, 32 001 offsets), the checksum (Boost's
                              hash_combine over the u64 words from byte 16)
                              equal to the stored one, every list strictly
                              increasing and inside the vocabulary; ted's
                              lists equal NumPy's
  shortlist-bin/firefox-vocab vocab.esen.spm: ted's SentencePiece segments
                              ~250 Spanish and English sentences into the
                              pieces Python's sentencepiece gives
  shortlist-bin/refuse-*      one line naming the file (ted translate
                              --shortlist too: exit 1): a flipped byte
                              (checksum), a file cut short, another source
                              vocabulary, an unsorted list and an id outside
                              the vocabulary (with their checksums made
                              right)
"""
import gzip
import os
import random
import struct
import sys
import tempfile

import numpy as np
import sentencepiece

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))

from ted_test import TED, failures, parse_logits, report, run  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
CHECK = os.path.join(BUILD, "marian-check")
NAME = "shortlist-bin"


def firefox_directory():
    """$TED_FIREFOX_DATA, else shared/data/firefox-es-en beside the
    repository or beside any directory above it (a clone made deeper than
    the working copies still finds it)."""
    if os.environ.get("TED_FIREFOX_DATA"):
        return os.environ["TED_FIREFOX_DATA"]
    here = ROOT
    while True:
        candidate = os.path.join(os.path.dirname(here), "shared", "data", "firefox-es-en")
        if os.path.isdir(candidate) or os.path.dirname(here) == here:
            return candidate
        here = os.path.dirname(here)


FIREFOX = firefox_directory()
MAGIC = 0xF11A48D5013417F5
MASK = (1 << 64) - 1
FIRST, BEST = 8, 5
TOY = os.path.join(ROOT, "models", "toy-en-fr")
EN_FR = os.path.join(ROOT, "models", "en-fr")
TOY_SENTENCES = ["the cat sleeps on the red chair", "i saw three birds near the river",
                 "a man eats bread"]
EN_FR_SENTENCES = ["The weather is nice today, so we are going to the beach.",
                   "Where is the nearest train station?", "I like green apples."]


def skip(name, why):
    print(f"skip {name}: {why}", flush=True)


# ---- the format, read and written here (marian-dev src/data/shortlist.cpp) ----

def checksum(data):
    words = np.frombuffer(data[16:16 + (len(data) - 16) // 8 * 8], dtype="<u8")
    seed = 0
    for w in words.tolist():
        seed ^= (w + 0x9E3779B9 + (seed << 6) + (seed >> 2)) & MASK
    return seed


def parse(data):
    """(first, best, lists) of a binary shortlist, with its checks: None
    and a problem when one fails."""
    magic, stored, first, best, n_off, n_ids = struct.unpack_from("<6Q", data)
    if magic != MAGIC or len(data) != 48 + 8 * n_off + 4 * n_ids:
        return None, f"header {magic:x}, {n_off} offsets, {n_ids} ids, {len(data)} bytes"
    if checksum(data) != stored:
        return None, "checksum differs"
    off = np.frombuffer(data, "<u8", n_off, 48)
    ids = np.frombuffer(data, "<u4", n_ids, 48 + 8 * n_off)
    if off[0] != 0 or off[-1] != n_ids or np.any(np.diff(off.astype(np.int64)) < 0):
        return None, "offsets do not rise from 0 to the list size"
    lists = [ids[off[s]:off[s + 1]] for s in range(n_off - 1)]
    bad = [s for s, l in enumerate(lists) if np.any(np.diff(l.astype(np.int64)) <= 0)]
    if bad:
        return None, f"{len(bad)} lists not strictly increasing (source {bad[0]})"
    return (first, best, lists), None


def write(path, first, best, lists):
    offsets = np.cumsum([0] + [len(l) for l in lists]).astype("<u8")
    ids = np.concatenate([np.asarray(l, "<u4") for l in lists] + [np.zeros(0, "<u4")])
    body = struct.pack("<4Q", first, best, len(offsets), len(ids)) + offsets.tobytes() + \
        ids.tobytes()
    data = struct.pack("<Q", MAGIC) + b"\0" * 8 + body
    data = data[:8] + struct.pack("<Q", checksum(data)) + data[16:]
    with open(path, "wb") as f:
        f.write(data)


def ted_read(path, src_vocab, tgt_vocab):
    """(first, binary, pad, pad_from, lists) as ted reads the file, or
    (None, message) on a refusal."""
    status, out, err = run([CHECK, "--shortlist", path, str(src_vocab), str(tgt_vocab)])
    if status != 0:
        return None, err.strip()
    lines = out.split("\n")
    first = int(lines[0].split()[1])
    _, binary, _, pad, _, pad_from = lines[2].split()
    lists = [[int(t) for t in l.split()] for l in lines[3:3 + src_vocab]]
    return (first, binary == "1", int(pad), int(pad_from), lists), None


def marian_union(first, lists, source, vocab, shared):
    """BinaryShortlistGenerator::generate's target ids for one batch."""
    keep = set(range(min(first, vocab)))
    for s in source:
        keep.update(int(t) for t in lists[s])
        if shared:
            keep.add(s)
    for t in range(first, vocab):
        if len(keep) % 8 == 0:
            break
        keep.add(t)
    return sorted(keep)


# ---- pymarian's binary shortlist of a text lexical table ----------------------

def vocab_yml(tokens, path):
    """Marian's JSON/YAML vocabulary of ted's token list; the special tokens
    spelled as Marian looks them up."""
    marian = {"<unk>": "<unk>", "<eos>": "</s>"}
    with open(path, "w", encoding="utf-8") as f:
        for i, t in enumerate(tokens):
            f.write(f'"{marian.get(t, t)}": {i}\n')


def make_pymarian_shortlist(tmp):
    """(path, {source id: the best BEST target ids}) of a lexical table
    converted by pymarian."""
    src = [l.rstrip("\n") for l in open(os.path.join(TOY, "vocab.src"), encoding="utf-8")]
    tgt = [l.rstrip("\n") for l in open(os.path.join(TOY, "vocab.tgt"), encoding="utf-8")]
    vocab_yml(src, os.path.join(tmp, "src.yml"))
    vocab_yml(tgt, os.path.join(tmp, "tgt.yml"))
    rng = random.Random(45)
    best = {}
    with open(os.path.join(tmp, "lex.s2t"), "w", encoding="utf-8") as f:
        for s in range(4, len(src)):
            targets = rng.sample(range(4, len(tgt)), rng.randint(0, 12))
            probs = rng.sample(range(1, 10 ** 6), len(targets))
            for t, p in zip(targets, probs):
                f.write(f"{tgt[t]} {src[s]} {p / 1e6:.6f}\n")
            ranked = sorted(zip(probs, targets), reverse=True)[:BEST]
            best[s] = sorted(t for _, t in ranked)
    out = os.path.join(tmp, "lex.bin")
    status, _, err = run([sys.executable, "-m", "pymarian", "convert", "--shortlist",
                          os.path.join(tmp, "lex.s2t"), str(FIRST), str(BEST), "0",
                          "--dump-shortlist", out, "--vocabs", os.path.join(tmp, "src.yml"),
                          os.path.join(tmp, "tgt.yml")])
    if status != 0:
        raise RuntimeError(f"pymarian convert --shortlist: {err[-400:]}")
    return out, best, len(src), len(tgt)


def check_pymarian(path, best, src_vocab, tgt_vocab):
    read, problem = ted_read(path, src_vocab, tgt_vocab)
    if read is None:
        return report(f"{NAME}/pymarian", f"refused: {problem}")
    first, binary, pad, pad_from, lists = read
    wrong = [s for s in range(src_vocab) if lists[s] != best.get(s, [])]
    if (first, binary, pad, pad_from) != (FIRST, True, 8, FIRST):
        problem = f"first {first}, binary {binary}, pad {pad} from {pad_from}"
    elif wrong:
        problem = f"source {wrong[0]}: {lists[wrong[0]]}, the table's best {best[wrong[0]]}"
    report(f"{NAME}/pymarian", problem, f"{sum(len(l) for l in lists)} targets")


def check_union(name, model_dir, shortlist, sentences, ids_of, vocab, shared):
    """`ted logits --shortlist` finite exactly at Marian's union."""
    for sentence in sentences:
        ids = ids_of(sentence)
        args = [TED, "logits", "-m", model_dir, "--source", sentence, "--target", ""]
        s1, full, e1 = run(args)
        s2, cut, e2 = run(args + ["--shortlist", shortlist])
        if s1 or s2:
            return report(name, (e1 or e2).strip())
        full, cut = parse_logits(full)[0], parse_logits(cut)[0]
        want = marian_union(FIRST, shortlist_lists(shortlist), ids, vocab, shared)
        got = np.flatnonzero(np.isfinite(cut)).tolist()
        if got != want:
            extra, missing = sorted(set(got) - set(want)), sorted(set(want) - set(got))
            return report(name, f"{sentence!r}: ids {extra[:8]} beyond Marian's union, "
                                f"{missing[:8]} missing")
        if np.abs(cut[want] - full[want]).max() > 1e-6:
            return report(name, f"{sentence!r}: logits differ from the whole vocabulary's")
    report(name, None, f"{len(want)} of {vocab} ids in the last union")


_lists = {}


def shortlist_lists(path):
    if path not in _lists:
        with open(path, "rb") as f:
            parsed, problem = parse(f.read())
        if parsed is None:
            raise RuntimeError(f"{path}: {problem}")
        _lists[path] = parsed[2]
    return _lists[path]


def toy_ids(sentence):
    index = {t.rstrip("\n"): i for i, t in
             enumerate(open(os.path.join(TOY, "vocab.src"), encoding="utf-8"))}
    return [2] + [index.get(w, 0) for w in sentence.lower().split()] + [3]


def en_fr_shortlist(tmp):
    """A binary shortlist for models/en-fr, written by write(): a few
    targets for every source id."""
    rng = random.Random(7)
    lists = [sorted(rng.sample(range(1543), rng.randint(0, 6))) for _ in range(1544)]
    path = os.path.join(tmp, "en-fr.bin")
    write(path, FIRST, 6, lists)
    return path


def en_fr_ids(sentence):
    status, out, err = run([TED, "tokenize", "-m", EN_FR, sentence])
    if status:
        raise RuntimeError(err)
    return [int(t) for t in out.split()]


# ---- the real Firefox Translations es->en files -------------------------------

def firefox_file(tmp, name):
    """The unpacked file, or None (a skip line printed) when it is missing."""
    packed = os.path.join(FIREFOX, name + ".gz")
    if not os.path.exists(packed):
        return None
    out = os.path.join(tmp, name)
    with gzip.open(packed, "rb") as f, open(out, "wb") as g:
        g.write(f.read())
    return out


def check_firefox_read(path):
    with open(path, "rb") as f:
        data = f.read()
    parsed, problem = parse(data)
    if parsed is None:
        return report(f"{NAME}/firefox-read", f"NumPy's reading: {problem}")
    first, best, lists = parsed
    vocab = len(lists)
    outside = sum(int(np.count_nonzero(l >= vocab)) for l in lists)
    read, problem = ted_read(path, vocab, vocab)
    if read is None:
        return report(f"{NAME}/firefox-read", f"refused: {problem}")
    wrong = [s for s in range(vocab) if read[4][s] != lists[s].tolist()]
    if (first, best, vocab) != (50, 50, 32000) or outside:
        problem = f"firstNum {first}, bestNum {best}, {vocab} sources, {outside} ids outside"
    elif read[0] != 50 or wrong:
        problem = f"ted: first {read[0]}, {len(wrong)} lists differ from NumPy's"
    report(f"{NAME}/firefox-read", problem,
           f"{sum(len(l) for l in lists)} targets, checksum {checksum(data):016x}")


def test_sentences():
    spanish = open(os.path.join(ROOT, "models", "multi-en-fr-es", "test.spa_Latn"),
                   encoding="utf-8").read().split("\n")[:120]
    english = open(os.path.join(ROOT, "tests", "data", "multilingual-sentences.txt"),
                   encoding="utf-8").read().split("\n")[:120]
    odd = ["¿Dónde está la estación? ¡Allí!", "Ñandú, pingüino y cigüeña.", "ﬁn ½ Ⅻ ①",
           "  espacios   dobles\ty tab  ", "ＡＢＣ１２３ — «comillas» “dobles”", "", "😀 👍🏽 ❤️",
           "100.000,50 € / 3,5 %", "e\u0301 (combining) é (precomposed)", "URL https://x.es/a?b=1"]
    return [s for s in spanish + english if s.strip()] + odd


def check_firefox_vocab(path):
    texts = test_sentences()
    status, out, err = run([CHECK, "--spm", path], stdin="".join(t + "\0" for t in texts))
    if status != 0:
        return report(f"{NAME}/firefox-vocab", f"refused: {err.strip()}")
    got = out.split("\n")[:len(texts)]
    sp = sentencepiece.SentencePieceProcessor(model_file=path)
    want = [" ".join(sp.encode(t, out_type=str)) for t in texts]
    wrong = [i for i in range(len(texts)) if got[i] != want[i]]
    problem = None
    if wrong:
        i = wrong[0]
        problem = f"{len(wrong)} texts differ; {texts[i]!r}: ted {got[i]!r}, Python {want[i]!r}"
    report(f"{NAME}/firefox-vocab", problem,
           f"{len(texts)} texts, vocabulary of {sp.get_piece_size()} pieces")


# ---- refusals -------------------------------------------------------------------

def check_refused(name, path, src_vocab, tgt_vocab, *words):
    read, message = ted_read(path, src_vocab, tgt_vocab)
    if read is not None:
        return report(name, "read, not refused")
    missing = [w for w in (path,) + words if w not in message]
    report(name, f"message {message!r} lacks {missing}" if missing or "\n" in message
           else None, message)


def edit(src, dst, change):
    with open(src, "rb") as f:
        data = bytearray(f.read())
    with open(dst, "wb") as f:
        f.write(change(data))


def refuse(tmp, path, src_vocab, tgt_vocab):
    bad = os.path.join(tmp, "bad.bin")

    def flip(d):
        d[len(d) - 3] ^= 1
        return d
    edit(path, bad, flip)
    check_refused(f"{NAME}/refuse-flipped", bad, src_vocab, tgt_vocab, "checksum", "corrupted")
    status, out, err = run([TED, "translate", "-m", TOY, "--shortlist", bad],
                           stdin="the cat sleeps\n")
    lines = err.strip().split("\n")
    report(f"{NAME}/refuse-translate",
           None if status == 1 and not out and len(lines) == 1 and bad in err and
           "checksum" in err else f"exit {status}, stdout {out!r}, stderr {err!r}", err.strip())
    edit(path, bad, lambda d: d[:len(d) - 4])
    check_refused(f"{NAME}/refuse-cut", bad, src_vocab, tgt_vocab, "cut short")
    check_refused(f"{NAME}/refuse-vocab", path, src_vocab + 1, tgt_vocab,
                  "source vocabulary of 355", f"{src_vocab + 1}")
    lists = [l.copy() for l in shortlist_lists(path)]
    s = next(i for i, l in enumerate(lists) if len(l) >= 2)
    lists[s] = lists[s][::-1]
    write(bad, FIRST, BEST, lists)
    check_refused(f"{NAME}/refuse-unsorted", bad, src_vocab, tgt_vocab,
                  f"source id {s} is not sorted")
    lists[s] = np.sort(lists[s])
    lists[s][-1] = tgt_vocab
    write(bad, FIRST, BEST, lists)
    check_refused(f"{NAME}/refuse-outside", bad, src_vocab, tgt_vocab, f"{tgt_vocab}",
                  "outside the target vocabulary")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        path, best, src_vocab, tgt_vocab = make_pymarian_shortlist(tmp)
        check_pymarian(path, best, src_vocab, tgt_vocab)
        check_union(f"{NAME}/union-toy", TOY, path, TOY_SENTENCES, toy_ids, tgt_vocab, False)
        check_union(f"{NAME}/union-shared", EN_FR, en_fr_shortlist(tmp), EN_FR_SENTENCES,
                    en_fr_ids, 1544, True)
        refuse(tmp, path, src_vocab, tgt_vocab)
        lex = firefox_file(tmp, "lex.50.50.esen.s2t.bin")
        spm = firefox_file(tmp, "vocab.esen.spm")
        if lex and spm:
            check_firefox_read(lex)
            check_firefox_vocab(spm)
        else:
            for check in ("firefox-read", "firefox-vocab"):
                skip(f"{NAME}/{check}", f"no Firefox es-en files in {FIREFOX} (set "
                                        "TED_FIREFOX_DATA to their directory)")
    sys.exit(1 if failures() else 0)


if __name__ == "__main__":
    main()
