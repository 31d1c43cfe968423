#!/usr/bin/python3
"""ted against PyTorch, on models exported with tools/export_torch.py.

    TED=build/ted /usr/bin/python3 tests/parity/test_parity.py

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  export/*       the exporter: safetensors read back (names, F32, data
                 section at a multiple of 64 bytes, tensors back to back,
                 values), config.yaml; a vocabulary of the wrong
                 size is refused with exit 1 and a message naming the file
  logits/*       `ted logits` against PyTorch's teacher-forced logits (float64)
                 for random-init models: post-/pre-norm, relu/gelu, 1/2/4/8
                 heads, unequal depths, non-default LayerNorm epsilon; and for
                 the trained model of tests/data/parity-model. max abs diff <= 1e-4
  greedy/*       `ted translate` against tutorial_model.greedy_decode, token
                 for token, on >= 100 sentences for the trained model
                 (tools/make_parity_model.py), some longer than any it was
                 trained on, so that some stop at the maximum length
  batch/*        the same sentences with --batch-size 1 and --batch-size 16
                 give identical output
--only GROUP[,GROUP...] runs those groups alone (tests/cli/kernels.sh re-runs
logits, greedy and batch with each kernel set).
TED_PARITY_KEEP=1 keeps the temporary model directories (printed on stderr).
"""
import math
import os
import random
import sys

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))

import export_torch  # noqa: E402
import make_parity_model  # noqa: E402
from tutorial_model import (BOS_IDX, EOS_IDX, PAD_IDX,  # noqa: E402
                            PositionalEncoding, Seq2SeqTransformer, greedy_decode)
from reference_models import reference_logits, source_ids  # noqa: E402
from ted_test import (TED, failures, only_groups, parse_logits, quote, report, run,  # noqa: E402
                      scratch_directory, ted_problem)

TOLERANCE = 1e-4
PARITY_MODEL = os.path.join(ROOT, "tests", "data", "parity-model")
SPECIALS = ["<unk>", "<pad>", "<bos>", "<eos>"]

# Random-init models for the logits checks.
CONFIGS = [
    dict(name="postnorm-relu-h8-2+2", d_model=32, heads=8, encoder_layers=2, decoder_layers=2,
         d_ff=48, src_vocab=37, tgt_vocab=53, activation="relu", norm_first=False, eps=1e-5),
    dict(name="prenorm-gelu-h4-1+3", d_model=24, heads=4, encoder_layers=1, decoder_layers=3,
         d_ff=40, src_vocab=19, tgt_vocab=61, activation="gelu", norm_first=True, eps=1e-6),
    dict(name="postnorm-gelu-h1-3+1", d_model=20, heads=1, encoder_layers=3, decoder_layers=1,
         d_ff=36, src_vocab=50, tgt_vocab=23, activation="gelu", norm_first=False, eps=1e-3),
    dict(name="prenorm-relu-h2-2+2", d_model=40, heads=2, encoder_layers=2, decoder_layers=2,
         d_ff=72, src_vocab=45, tgt_vocab=31, activation="relu", norm_first=True, eps=0.02),
    dict(name="postnorm-relu-h4-1+1", d_model=64, heads=4, encoder_layers=1, decoder_layers=1,
         d_ff=256, src_vocab=70, tgt_vocab=90, activation="relu", norm_first=False, eps=1e-5),
]
# (source words, target words); "zzz" is not in any vocabulary (-> <unk>).
LOGIT_LENGTHS = [(1, 0), (3, 1), (6, 5), (13, 9), (24, 30)]
GROUPS = ["export", "logits", "greedy", "batch"]

def write_vocab(path, size):
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in SPECIALS + [f"w{i}" for i in range(4, size)]))


def random_model(cfg, seed):
    """A Seq2SeqTransformer with parameters scaled so that the logits are
    O(1-10) and attention is far from uniform."""
    torch.manual_seed(seed)
    model = Seq2SeqTransformer(cfg["encoder_layers"], cfg["decoder_layers"], cfg["d_model"],
                               cfg["heads"], cfg["src_vocab"], cfg["tgt_vocab"],
                               dim_feedforward=cfg["d_ff"], dropout=0.1,
                               activation=cfg["activation"], norm_first=cfg["norm_first"],
                               layer_norm_eps=cfg["eps"])
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                if name.endswith("weight"):
                    p.uniform_(0.5, 1.5)
                else:
                    p.normal_(0.0, 0.3)
            elif name.endswith("embedding.weight"):
                p.normal_(0.0, 1.0)
            elif p.dim() == 2:
                gain = 3.0 if name.startswith("generator") else 1.5
                p.normal_(0.0, gain / math.sqrt(p.shape[1]))
            else:
                p.normal_(0.0, 0.3)
    return model.eval()


def load_parity_model():
    state = torch.load(os.path.join(PARITY_MODEL, "model.pt"), map_location="cpu")
    sizes, max_positions = export_torch.analyze(state)
    model = Seq2SeqTransformer(sizes["encoder_layers"], sizes["decoder_layers"],
                               sizes["d_model"], make_parity_model.HEADS,
                               sizes["src_vocab_size"], sizes["tgt_vocab_size"],
                               dim_feedforward=sizes["d_ff"], dropout=0.0)
    model.positional_encoding = PositionalEncoding(sizes["d_model"], 0.0, max_positions)
    model.load_state_dict(state)
    return model.eval(), state


def read_tokens(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def compare_logits(name, model_dir, model, src_vocab, tgt_vocab, cases):
    """cases: (source words, target words) pairs."""
    model = model.double()
    worst, largest = 0.0, 0.0
    for src_words, tgt_words in cases:
        source, target = " ".join(src_words), " ".join(tgt_words)
        args = ["logits", "-m", model_dir, "--source", source, "--target", target]
        out, problem = ted_problem(args)
        if problem:
            return report(name, problem)
        tgt_index = {t: i for i, t in enumerate(tgt_vocab)}
        want = reference_logits(model, source_ids(src_words, src_vocab),
                                [tgt_index[w] for w in tgt_words])
        try:
            got = parse_logits(out, want.shape[0], want.shape[1])
        except ValueError as e:
            return report(name, f"`{quote([TED] + args)}`: {e}")
        diff = float(np.abs(got - want).max())
        largest = max(largest, float(np.abs(want).max()))
        if not diff <= TOLERANCE:
            row = int(np.abs(got - want).max(axis=1).argmax())
            return report(name, f"max abs diff {diff:.3g} > {TOLERANCE:g} at position {row} "
                                f"(`{quote([TED] + args)}`)")
        worst = max(worst, diff)
    if largest < 1.0:
        return report(name, f"the reference logits are too small to compare (max {largest:.3g})")
    report(name, detail=f"max abs diff {worst:.2e} over {len(cases)} sentence pairs "
                        f"(|logits| up to {largest:.1f})")


def check_export_files(name, model_dir, state, cfg):
    """Reads the exporter's output back."""
    header, start, data = export_torch.read_safetensors(os.path.join(model_dir,
                                                                     "model.safetensors"))
    meta = header.pop("__metadata__", None)
    names = [n for n in state if n != export_torch.POS_KEY]
    if meta != {"format": "pt"}:
        return report(name, f"__metadata__ is {meta!r}")
    if sorted(header) != sorted(names):
        return report(name, f"tensors {sorted(set(header) ^ set(names))[:3]} differ")
    if start % 64:
        return report(name, f"data starts at byte {start}, not a multiple of 64")
    ends = []
    for n in names:
        info = header[n]
        begin, end = info["data_offsets"]
        want = state[n].detach().float().numpy()
        if info["dtype"] != "F32" or info["shape"] != list(want.shape):
            return report(name, f"{n}: {info['dtype']} {info['shape']}")
        if begin % 4 or end - begin != want.size * 4:
            return report(name, f"{n}: data_offsets {info['data_offsets']}")
        got = np.frombuffer(data[start + begin:start + end], dtype="<f4").reshape(want.shape)
        if not np.array_equal(got, want):
            return report(name, f"{n}: values differ")
        ends.append((begin, end))
    ends.sort()
    if ends[0][0] != 0 or any(b != e for (_, e), (b, _) in zip(ends, ends[1:])):
        return report(name, "tensors are not back to back, as safetensors requires")
    if start + ends[-1][1] != len(data):
        return report(name, "bytes after the last tensor")
    with open(os.path.join(model_dir, "config.yaml"), encoding="utf-8") as f:
        text = f.read()
    want_lines = [f"  d_model: {cfg['d_model']}", f"  heads: {cfg['heads']}",
                  f"  encoder_layers: {cfg['encoder_layers']}",
                  f"  decoder_layers: {cfg['decoder_layers']}", f"  d_ff: {cfg['d_ff']}",
                  f"  src_vocab_size: {cfg['src_vocab']}", f"  tgt_vocab_size: {cfg['tgt_vocab']}",
                  f"  norm_first: {'true' if cfg['norm_first'] else 'false'}",
                  f"  layer_norm_eps: {export_torch.yaml_float(cfg['eps'])}",
                  "  max_positions: 5000", "  max_length_offset: 4"]
    lines = [line.split("#")[0].rstrip() for line in text.splitlines()]
    missing = [w for w in want_lines if w not in lines]
    if missing or not text.startswith("#") or float(want_lines[8].split()[-1]) != cfg["eps"]:
        return report(name, f"config.yaml lacks {missing[:2]}")
    for vocab in ("vocab.src", "vocab.tgt"):
        if not os.path.isfile(os.path.join(model_dir, vocab)):
            return report(name, f"{vocab} missing")
    report(name, detail=f"{len(names)} tensors")


def check_wrong_vocab(name, tmp):
    """The exporter refuses a vocabulary whose size is not the embedding's."""
    cfg = CONFIGS[0]
    model = random_model(cfg, 1)
    checkpoint = os.path.join(tmp, "wrong-vocab.pt")
    torch.save(model.state_dict(), checkpoint)
    src = os.path.join(tmp, "wrong.src")
    tgt = os.path.join(tmp, "wrong-size.tgt")
    write_vocab(src, cfg["src_vocab"])
    write_vocab(tgt, cfg["tgt_vocab"] - 1)
    out_dir = os.path.join(tmp, "wrong-out")
    status, _, err = run([sys.executable, os.path.join(ROOT, "tools", "export_torch.py"),
                          checkpoint, "--src-vocab", src, "--tgt-vocab", tgt,
                          "--heads", str(cfg["heads"]), "--out", out_dir])
    if status != 1:
        return report(name, f"exit status {status}, expected 1 ({err.strip()})")
    if tgt not in err or len(err.strip().splitlines()) != 1:
        return report(name, f"the message does not name {tgt} on one line: {err.strip()!r}")
    if os.path.exists(os.path.join(out_dir, "model.safetensors")):
        return report(name, "it wrote model.safetensors anyway")
    report(name, detail=err.strip())


def logits_cases(rng, src_vocab, tgt_vocab):
    cases = []
    for i, (n, m) in enumerate(LOGIT_LENGTHS):
        src = [rng.choice(src_vocab[4:]) for _ in range(n)]
        if i == 2:
            src[1] = "zzz"  # unknown: <unk>
        cases.append((src, [rng.choice(tgt_vocab[4:]) for _ in range(m)]))
    return cases


def greedy_sentences(src_vocab):
    """>= 100 sources: most like the training data (1..10 words), some
    longer, some long repetitions (these run to the maximum length), a few
    with unknown words."""
    rng = random.Random(2024)
    words = src_vocab[4:]
    sentences = []
    for _ in range(70):
        sentences.append([rng.choice(words) for _ in range(rng.randint(1, 10))])
    for _ in range(20):
        sentences.append([rng.choice(words) for _ in range(rng.randint(11, 24))])
    for _ in range(10):
        sentences.append([rng.choice(words)] * rng.randint(12, 30))
    for _ in range(6):
        s = [rng.choice(words) for _ in range(rng.randint(2, 9))]
        s[rng.randrange(len(s))] = "qq" + str(rng.randrange(100))
        sentences.append(s)
    rng.shuffle(sentences)
    return [" ".join(s) for s in sentences]


def reference_translations(model, sentences, src_vocab, tgt_vocab, max_length=None):
    """The tutorial's greedy_decode, as ted prints it: target tokens up to
    EOS (excluded), <bos> and <pad> skipped, joined by spaces."""
    outputs, stopped = [], 0
    for sentence in sentences:
        ids = source_ids(sentence.split(), src_vocab)
        max_len = len(ids) + 5
        if max_length is not None:
            max_len = min(max_len, max_length + 1)
        out = greedy_decode(model, torch.tensor([ids]).t(), max_len)
        stopped += not out or out[-1] != EOS_IDX
        outputs.append(" ".join(tgt_vocab[i] for i in out
                                if i not in (EOS_IDX, BOS_IDX, PAD_IDX)))
    return outputs, stopped


def compare_lines(name, args, sentences, want, detail):
    out, problem = ted_problem(args, "".join(s + "\n" for s in sentences))
    if problem:
        return report(name, problem)
    got = out.split("\n")
    if got and got[-1] == "":
        got.pop()
    if len(got) != len(want):
        return report(name, f"{len(got)} output lines for {len(want)} sentences")
    bad = [i for i in range(len(want)) if got[i].rstrip("\r") != want[i]]
    if bad:
        i = bad[0]
        return report(name, f"{len(bad)} of {len(want)} differ; first: "
                            f"`{quote([TED] + args + [sentences[i]])}` gave {got[i]!r}, "
                            f"expected {want[i]!r}")
    report(name, detail=detail)


def main():
    only = only_groups("ted against PyTorch", GROUPS)
    torch.set_num_threads(1)
    with scratch_directory("ted-parity-") as tmp:
        have_ted = os.path.isfile(TED) and os.access(TED, os.X_OK)

        # The exporter on its own.
        if "export" in only:
            check_wrong_vocab("export/wrong-vocab-size", tmp)

        # logits: random-init models.
        rng = random.Random(7)
        for k, cfg in enumerate(CONFIGS):
            model = random_model(cfg, 100 + k)
            model_dir = os.path.join(tmp, cfg["name"])
            os.makedirs(model_dir)
            src_path = os.path.join(tmp, cfg["name"] + ".src")
            tgt_path = os.path.join(tmp, cfg["name"] + ".tgt")
            write_vocab(src_path, cfg["src_vocab"])
            write_vocab(tgt_path, cfg["tgt_vocab"])
            state = model.state_dict()
            export_torch.export(state, model_dir, src_path, tgt_path, cfg["heads"],
                                activation=cfg["activation"], norm_first=cfg["norm_first"],
                                layer_norm_eps=cfg["eps"], source=cfg["name"])
            if "export" in only and (k == 0 or cfg["d_model"] % 16):
                check_export_files(f"export/read-back-{cfg['name']}", model_dir, state, cfg)
            if "logits" not in only:
                continue
            name = f"logits/{cfg['name']}"
            if not have_ted:
                report(name, f"{TED}: no such executable")
                continue
            cases = logits_cases(rng, read_tokens(src_path), read_tokens(tgt_path))
            compare_logits(name, model_dir, model, read_tokens(src_path),
                           read_tokens(tgt_path), cases)

        # The trained model.
        if not {"logits", "greedy", "batch"} & set(only):
            return
        model, state = load_parity_model()
        model_dir = os.path.join(tmp, "parity-model")
        export_torch.export(state, model_dir, os.path.join(PARITY_MODEL, "vocab.src"),
                            os.path.join(PARITY_MODEL, "vocab.tgt"), make_parity_model.HEADS,
                            source="tests/data/parity-model/model.pt")
        src_vocab = read_tokens(os.path.join(model_dir, "vocab.src"))
        tgt_vocab = read_tokens(os.path.join(model_dir, "vocab.tgt"))
        sentences = greedy_sentences(src_vocab)
        # the logits check reads the first 6 reference translations; each
        # sentence is decoded on its own
        references = sentences if "greedy" in only else sentences[:6]
        want, stopped = reference_translations(model, references, src_vocab, tgt_vocab)
        names = [("logits", "logits/trained-model"), ("greedy", "greedy/trained-model"),
                 ("greedy", "greedy/max-length-3"), ("batch", "batch/1-vs-16")]
        if not have_ted:
            for group, name in names:
                if group in only:
                    report(name, f"{TED}: no such executable")
            return
        if "logits" in only:
            cases = [(s.split(), w.split()) for s, w in zip(sentences[:6], want[:6])]
            compare_logits(names[0][1], model_dir, model, src_vocab, tgt_vocab, cases)
        if "greedy" in only:
            want3, _ = reference_translations(model, sentences, src_vocab, tgt_vocab,
                                              max_length=3)
            compare_lines(names[1][1], ["translate", "-m", model_dir], sentences, want,
                          f"{len(sentences)} sentences identical, {stopped} stopped at the "
                          "maximum length without EOS")
            compare_lines(names[2][1], ["translate", "-m", model_dir, "--max-length", "3"],
                          sentences, want3, f"{len(sentences)} sentences identical")
        if "batch" in only:
            one, problem = ted_problem(["translate", "-m", model_dir, "--batch-size", "1"],
                                       "".join(s + "\n" for s in sentences))
            if problem:
                return report(names[3][1], problem)
            compare_lines(names[3][1], ["translate", "-m", model_dir, "--batch-size", "16"],
                          sentences, one.split("\n")[:len(sentences)],
                          f"{len(sentences)} sentences of 1 to "
                          f"{max(len(s.split()) for s in sentences)} words")


if __name__ == "__main__":
    main()
    sys.exit(1 if failures() else 0)
