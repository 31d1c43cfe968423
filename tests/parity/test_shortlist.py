#!/usr/bin/python3
"""The vocabulary shortlist: `ted shortlist`, `--shortlist FILE`, decoding.shortlist.

    TED=build/ted /usr/bin/python3 tests/parity/test_shortlist.py

On the trained model of tests/data/parity-model (exported here, and its
`ted quantize` copy) and on the shipped models. Checks (one "ok NAME" or
"FAIL NAME: why" line each; exit 1 if one fails):
  logits/*   `ted logits --shortlist` against PyTorch's teacher-forced logits
             (float64): within 1e-4 at the ids of the union, which this script
             computes from the file (the source's lists, the frequent ones,
             EOS, UNK), and -inf at every other id; int8: equal to the int8
             model's logits without a shortlist at those ids
  greedy/*   `ted translate --shortlist` (one sentence a batch) against the
             tutorial's greedy decoding in PyTorch with the logits outside
             the union at -inf: identical
  full/*     a shortlist of every target on the shipped models (float and
             int8): greedy, beam search and sampling with --scores give the
             same lines as no shortlist
  build/*    `ted shortlist` against the ranking (c(s,t) / sqrt(c(s) c(t)))
             computed here from the
             same corpus (parallel; and a source corpus with PyTorch's greedy
             translations as its targets): the same file, line for line
  config/*   decoding.shortlist in config.yaml: the same translations as
             --shortlist; a missing file refused at load
  bad/*      bad shortlist files: exit 1, one message naming the file
"""
import os
import random
import shutil
import sys

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
sys.path.insert(0, os.path.join(ROOT, "tests", "parity"))

import export_torch  # noqa: E402
import make_parity_model  # noqa: E402
from reference_models import reference_logits, source_ids  # noqa: E402
from ted_test import (TED, failures, parse_logits, quote, report, run,  # noqa: E402
                      scratch_directory, ted_problem)
from test_parity import PARITY_MODEL, greedy_sentences, load_parity_model, read_tokens  # noqa: E402
from tutorial_model import BOS_IDX, EOS_IDX, PAD_IDX, generate_square_subsequent_mask  # noqa: E402

TOLERANCE = 1e-4
UNK_IDX = 0


# ---- shortlist files, written and read here ---------------------------------

def write_shortlist(path, src_vocab, tgt_vocab, frequent, lists):
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"ted-shortlist 1\nvocab {src_vocab} {tgt_vocab}\n")
        f.write("frequent" + "".join(f" {t}" for t in frequent) + "\n")
        for s in sorted(lists):
            f.write(f"{s}" + "".join(f" {t}" for t in lists[s]) + "\n")


def read_shortlist(path):
    """(frequent, {source: targets}) of a file as the format describes it."""
    lines = [l.split() for l in open(path, encoding="utf-8")
             if l.strip() and not l.startswith("#")]
    assert lines[0] == ["ted-shortlist", "1"] and lines[1][0] == "vocab"
    assert lines[2][0] == "frequent"
    return ([int(t) for t in lines[2][1:]],
            {int(l[0]): [int(t) for t in l[1:]] for l in lines[3:]})


def union(shortlist, sources):
    frequent, lists = shortlist
    ids = {EOS_IDX, UNK_IDX, *frequent}
    for source in sources:
        for s in source:
            ids.update(lists.get(s, []))
    return sorted(ids)


def random_shortlist(rng, src_vocab, tgt_vocab):
    frequent = rng.sample(range(4, tgt_vocab), 3)
    lists = {s: rng.sample(range(4, tgt_vocab), rng.randint(1, 4))
             for s in range(src_vocab) if rng.random() < 0.8}
    return frequent, lists


# ---- logits -------------------------------------------------------------------

def check_logits(name, model_dir, model, shortlist_path, src_vocab, tgt_vocab, cases):
    model = model.double()
    shortlist = read_shortlist(shortlist_path)
    worst, kept = 0.0, 0
    for src_words, tgt_words in cases:
        args = ["logits", "-m", model_dir, "--source", " ".join(src_words), "--target",
                " ".join(tgt_words), "--shortlist", shortlist_path]
        out, problem = ted_problem(args)
        if problem:
            return report(name, problem)
        src = source_ids(src_words, src_vocab)
        index = {t: i for i, t in enumerate(tgt_vocab)}
        want = reference_logits(model, src, [index[w] for w in tgt_words])
        got = parse_logits(out, want.shape[0], want.shape[1])
        ids = union(shortlist, [src])
        others = np.setdiff1d(np.arange(want.shape[1]), ids)
        if not np.all(np.isneginf(got[:, others])):
            return report(name, f"a logit outside the union is not -inf (`{quote([TED] + args)}`)")
        diff = float(np.abs(got[:, ids] - want[:, ids]).max())
        if not diff <= TOLERANCE:
            return report(name, f"max abs diff {diff:.3g} at the union's ids "
                                f"(`{quote([TED] + args)}`)")
        worst, kept = max(worst, diff), kept + len(ids)
    report(name, detail=f"max abs diff {worst:.2e}; {kept} logits kept of "
                        f"{len(cases) * len(tgt_vocab)}")


def check_int8_logits(name, model_dir, shortlist_path, src_vocab, cases):
    shortlist = read_shortlist(shortlist_path)
    for src_words, tgt_words in cases:
        args = ["logits", "-m", model_dir, "--source", " ".join(src_words), "--target",
                " ".join(tgt_words)]
        full, problem = ted_problem(args)
        cut, problem = (None, problem) if problem else ted_problem(args + ["--shortlist",
                                                                           shortlist_path])
        if problem:
            return report(name, problem)
        full, cut = parse_logits(full), parse_logits(cut)
        ids = union(shortlist, [source_ids(src_words, src_vocab)])
        others = np.setdiff1d(np.arange(full.shape[1]), ids)
        if not np.all(np.isneginf(cut[:, others])):
            return report(name, f"a logit outside the union is not -inf (`{quote([TED] + args)}`)")
        diff = float(np.abs(cut[:, ids] - full[:, ids]).max())
        if diff > 1e-6:
            return report(name, f"max abs diff {diff:.3g} against the whole vocabulary's "
                                f"(`{quote([TED] + args)}`)")
    report(name, detail=f"{len(cases)} sentence pairs")


# ---- greedy decoding over the union, in PyTorch -------------------------------

def restricted_greedy(model, src, ids, max_len):
    """tutorial_model.greedy_decode with the logits outside `ids` at -inf."""
    mask = torch.full((model.generator.out_features,), float("-inf"))
    mask[ids] = 0.0
    src = torch.tensor([src]).t()
    memory = model.encode(src, torch.zeros(src.shape[0], src.shape[0]).type(torch.bool))
    ys = torch.ones(1, 1).fill_(BOS_IDX).type(torch.long)
    for _ in range(max_len - 1):
        out = model.decode(ys, memory, generate_square_subsequent_mask(ys.size(0)).type(torch.bool))
        logits = model.generator(out.transpose(0, 1)[:, -1])[0] + mask
        next_word = int(torch.argmax(logits))
        ys = torch.cat([ys, torch.ones(1, 1).type(torch.long).fill_(next_word)], dim=0)
        if next_word == EOS_IDX:
            break
    return ys.flatten().tolist()[1:]


def check_greedy(name, model_dir, model, shortlist_path, sentences, src_vocab, tgt_vocab):
    shortlist = read_shortlist(shortlist_path)
    want = []
    with torch.no_grad():
        for sentence in sentences:
            src = source_ids(sentence.split(), src_vocab)
            out = restricted_greedy(model.float(), src, union(shortlist, [src]), len(src) + 5)
            want.append(" ".join(tgt_vocab[i] for i in out
                                 if i not in (EOS_IDX, BOS_IDX, PAD_IDX)))
    args = ["translate", "-m", model_dir, "--batch-size", "1", "--shortlist", shortlist_path]
    out, problem = ted_problem(args, "\n".join(sentences) + "\n")
    if problem:
        return report(name, problem)
    got = out.split("\n")[:-1]
    differ = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
    if len(got) != len(want) or differ:
        i = differ[0] if differ else 0
        return report(name, f"{len(differ)} of {len(want)} differ; line {i}: "
                            f"{got[i] if i < len(got) else None!r} != {want[i]!r}")
    changed = sum(w != f for w, f in zip(want, reference_full(model, sentences, src_vocab,
                                                              tgt_vocab)))
    report(name, detail=f"{len(want)} sentences identical; the shortlist changes {changed}")


def reference_full(model, sentences, src_vocab, tgt_vocab):
    with torch.no_grad():
        outs = [restricted_greedy(model.float(), source_ids(s.split(), src_vocab),
                                  list(range(len(tgt_vocab))), len(s.split()) + 7)
                for s in sentences]
    return [" ".join(tgt_vocab[i] for i in o if i not in (EOS_IDX, BOS_IDX, PAD_IDX))
            for o in outs]


# ---- a shortlist of every target -----------------------------------------------

FULL_MODES = [("greedy", []), ("beam", ["--beam", "4", "--n-best", "2"]),
              ("sample", ["--sample", "--seed", "7", "--n-best", "2"])]


def check_full(name, model_dir, tmp, lines):
    cfg = {}
    for line in open(os.path.join(model_dir, "config.yaml"), encoding="utf-8"):
        key, _, value = line.strip().partition(":")
        if key in ("src_vocab_size", "tgt_vocab_size"):
            cfg[key] = int(value.split("#")[0])
    path = os.path.join(tmp, os.path.basename(model_dir) + ".full.shortlist")
    write_shortlist(path, cfg["src_vocab_size"], cfg["tgt_vocab_size"],
                    range(cfg["tgt_vocab_size"]), {})
    text = "\n".join(lines) + "\n"
    for mode, options in FULL_MODES:
        args = ["translate", "-m", model_dir, "--scores"] + options
        want, problem = ted_problem(args, text)
        got, problem = (None, problem) if problem else ted_problem(args + ["--shortlist", path],
                                                                   text)
        if problem:
            return report(f"{name}/{mode}", problem)
        differ = [(w, g) for w, g in zip(want.splitlines(), got.splitlines()) if w != g]
        if want != got:
            report(f"{name}/{mode}", f"{len(differ)} lines differ: {differ[:1]}")
        else:
            report(f"{name}/{mode}", detail=f"{len(want.splitlines())} lines identical")


# ---- building -------------------------------------------------------------------

def cosine_shortlist(pairs, src_vocab, tgt_vocab, top, frequent):
    """The file `ted shortlist` documents, from (source ids, target ids) pairs."""
    cs, ct, both, tokens = [0] * src_vocab, [0] * tgt_vocab, {}, [0] * tgt_vocab
    for src, tgt in pairs:
        for t in tgt:
            tokens[t] += 1
        for s in set(src):
            cs[s] += 1
        for t in set(tgt):
            ct[t] += 1
        for s in set(src):
            for t in set(tgt):
                both[s, t] = both.get((s, t), 0) + 1
    lists = {}
    for (s, t), n in both.items():
        score = np.float32(n / np.sqrt(float(cs[s]) * float(ct[t])))
        lists.setdefault(s, []).append((-score, -n, t))
    lists = {s: [t for _, _, t in sorted(v)[:top]] for s, v in lists.items()}
    order = sorted((-n, t) for t, n in enumerate(tokens) if n > 0)
    return [t for _, t in order[:frequent]], lists


def check_build(name, model_dir, tmp, sources, targets, pairs, vocab_sizes):
    """sources, targets: the corpus's lines (targets None: the model
    translates); pairs: their (source ids, target ids), as ted reads them."""
    src_path, tgt_path = os.path.join(tmp, "corpus.src"), os.path.join(tmp, "corpus.tgt")
    with open(src_path, "w") as f:
        f.write("".join(line + "\n" for line in sources))
    if targets is not None:
        with open(tgt_path, "w") as f:
            f.write("".join(line + "\n" for line in targets))
    out = os.path.join(tmp, name.replace("/", "-") + ".shortlist")  # a new file each case
    args = ["shortlist", "-m", model_dir, "--source", src_path, "--top", "3", "--frequent",
            "4", "-o", out] + (["--target", tgt_path] if targets is not None else [])
    _, problem = ted_problem(args)
    if problem:
        return report(name, problem)
    want = cosine_shortlist(pairs, *vocab_sizes, 3, 4)
    got = read_shortlist(out)
    if got != want:
        bad = [s for s in sorted(set(want[1]) | set(got[1]))
               if want[1].get(s) != got[1].get(s)]
        return report(name, f"frequent {got[0]} (want {want[0]}); source {bad[:1]}: "
                            f"{got[1].get(bad[0]) if bad else ''} (want "
                            f"{want[1].get(bad[0]) if bad else ''})")
    report(name, detail=f"{len(pairs)} pairs, {len(got[1])} source tokens listed")


def build_cases(name, model_dir, tmp, model, src_vocab, tgt_vocab):
    rng = random.Random(5)
    words_s, words_t = src_vocab[4:], tgt_vocab[4:]
    sizes = (len(src_vocab), len(tgt_vocab))
    sources = [" ".join(rng.choice(words_s) for _ in range(rng.randint(1, 8)))
               for _ in range(300)] + [""]  # an empty line counts nothing
    targets = [" ".join(rng.choice(words_t) for _ in range(rng.randint(1, 8)))
               for _ in range(300)] + [""]
    t_index = {w: i for i, w in enumerate(tgt_vocab)}
    pairs = [(source_ids(s.split(), src_vocab), [t_index[w] for w in t.split()])
             for s, t in zip(sources, targets) if s]
    check_build(f"{name}/parallel", model_dir, tmp, sources, targets, pairs, sizes)
    sources = greedy_sentences(src_vocab)
    everything = list(range(len(tgt_vocab)))
    with torch.no_grad():
        pairs = [(ids, restricted_greedy(model.float(), ids, everything, len(ids) + 5))
                 for ids in (source_ids(s.split(), src_vocab) for s in sources)]
    check_build(f"{name}/translated", model_dir, tmp, sources, None, pairs, sizes)


# ---- config and bad files ---------------------------------------------------------

def check_config(name, model_dir, tmp, shortlist_path, sentences):
    copy = os.path.join(tmp, "with-shortlist")
    shutil.copytree(model_dir, copy)
    shutil.copy(shortlist_path, os.path.join(copy, "list.txt"))
    config = os.path.join(copy, "config.yaml")
    text = open(config, encoding="utf-8").read()
    text = text.replace("\ndecoding:\n", "\ndecoding:\n  shortlist: list.txt\n") \
        if "\ndecoding:\n" in text else text + "decoding:\n  shortlist: list.txt\n"
    with open(config, "w", encoding="utf-8") as f:
        f.write(text)
    text = "\n".join(sentences) + "\n"
    want, problem = ted_problem(["translate", "-m", model_dir, "--shortlist", shortlist_path],
                                text)
    got, problem = (None, problem) if problem else ted_problem(["translate", "-m", copy], text)
    if problem:
        return report(f"{name}/key", problem)
    report(f"{name}/key", None if got == want else "translations differ from --shortlist's")
    os.remove(os.path.join(copy, "list.txt"))
    status, _, err = run([TED, "translate", "-m", copy, "a"])
    report(f"{name}/missing-file", None if status == 1 and "list.txt" in err and
           len(err.strip().splitlines()) == 1 else f"exit {status}: {err.strip()!r}")


BAD_FILES = [
    ("empty", ""),
    ("magic", "ted-shortlis 1\nvocab 28 34\nfrequent\n"),
    ("version", "ted-shortlist 2\nvocab 28 34\nfrequent\n"),
    ("vocab-size", "ted-shortlist 1\nvocab 28 35\nfrequent\n"),
    ("no-vocab", "ted-shortlist 1\nfrequent 4\n"),
    ("no-frequent", "ted-shortlist 1\nvocab 28 34\n5 6\n"),
    ("target-range", "ted-shortlist 1\nvocab 28 34\nfrequent 4\n5 6 34\n"),
    ("source-range", "ted-shortlist 1\nvocab 28 34\nfrequent 4\n28 6\n"),
    ("negative", "ted-shortlist 1\nvocab 28 34\nfrequent -4\n"),
    ("not-a-number", "ted-shortlist 1\nvocab 28 34\nfrequent 4\n5 6x\n"),
    ("huge-id", "ted-shortlist 1\nvocab 28 34\nfrequent 99999999999999999999\n"),
    ("order", "ted-shortlist 1\nvocab 28 34\nfrequent 4\n6 7\n5 8\n"),
    ("repeated-source", "ted-shortlist 1\nvocab 28 34\nfrequent 4\n6 7\n6 8\n"),
    ("binary", "ted-shortlist 1\nvocab 28 34\nfrequent 4\n\x00\x01\x02\n"),
]


def check_bad(name, model_dir, tmp):
    for case, text in BAD_FILES:
        path = os.path.join(tmp, f"bad-{case}.shortlist")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        status, out, err = run([TED, "translate", "-m", model_dir, "--shortlist", path, "s1"])
        lines = err.strip().splitlines()
        good = status == 1 and not out and len(lines) == 1 and path in lines[0]
        report(f"{name}/{case}", None if good else f"exit {status}, stderr {err.strip()!r}")
    status, _, err = run([TED, "translate", "-m", model_dir, "--shortlist",
                          os.path.join(tmp, "none"), "s1"])
    report(f"{name}/missing", None if status == 1 and "none" in err else
           f"exit {status}, stderr {err.strip()!r}")


def main():
    with scratch_directory("ted-shortlist-") as tmp:
        model, state = load_parity_model()
        model_dir = os.path.join(tmp, "parity-model")
        export_torch.export(state, model_dir, os.path.join(PARITY_MODEL, "vocab.src"),
                            os.path.join(PARITY_MODEL, "vocab.tgt"), make_parity_model.HEADS,
                            source="tests/data/parity-model/model.pt")
        int8_dir = os.path.join(tmp, "parity-int8")
        _, problem = ted_problem(["quantize", model_dir, int8_dir])
        src_vocab = read_tokens(os.path.join(model_dir, "vocab.src"))
        tgt_vocab = read_tokens(os.path.join(model_dir, "vocab.tgt"))
        rng = random.Random(11)
        sparse = os.path.join(tmp, "sparse.shortlist")
        write_shortlist(sparse, len(src_vocab), len(tgt_vocab),
                        *random_shortlist(rng, len(src_vocab), len(tgt_vocab)))
        sentences = greedy_sentences(src_vocab)
        cases = [(s.split(), t.split()) for s, t in
                 zip(sentences[:8], reference_full(model, sentences[:8], src_vocab, tgt_vocab))]
        check_logits("logits/float", model_dir, model, sparse, src_vocab, tgt_vocab, cases)
        if problem:
            report("logits/int8", problem)
        else:
            check_int8_logits("logits/int8", int8_dir, sparse, src_vocab, cases)
        check_greedy("greedy/sparse", model_dir, model, sparse, sentences, src_vocab, tgt_vocab)
        build_cases("build", model_dir, tmp, model, src_vocab, tgt_vocab)
        check_config("config", model_dir, tmp, sparse, sentences[:20])
        check_bad("bad", model_dir, tmp)
        for shipped in ("toy-en-fr", "en-fr"):
            shipped_dir = os.path.join(ROOT, "models", shipped)
            lines = open(os.path.join(shipped_dir, "test.en"), encoding="utf-8").read()
            check_full(f"full/{shipped}", shipped_dir, tmp, lines.splitlines()[:24])
        toy_int8 = os.path.join(tmp, "toy-int8")
        _, problem = ted_problem(["quantize", os.path.join(ROOT, "models", "toy-en-fr"),
                                  toy_int8])
        if problem:
            report("full/toy-en-fr-int8", problem)
        else:
            lines = open(os.path.join(ROOT, "models", "toy-en-fr", "test.en")).read()
            check_full("full/toy-en-fr-int8", toy_int8, tmp, lines.splitlines()[:24])


if __name__ == "__main__":
    main()
    sys.exit(1 if failures() else 0)
