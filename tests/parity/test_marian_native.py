#!/usr/bin/python3
"""ted against Marian itself (pymarian 1.12.42's Translator) on models that
Marian trained (tools/train_bergamot.py, pymarian's Trainer):

    TED=build/ted .venv/bin/python tests/parity/test_marian_native.py

Two tiny models on the synthetic English -> French text of models/en-fr,
trained here (a few hundred updates each; quality does not matter for
parity): the Bergamot students' architecture, a Transformer encoder with
a decoder of SSRU layers (transformer-decoder-autoreg: rnn, dec-cell:
ssru), and the same with Transformer decoder layers; both post-norm, ReLU,
tied embeddings, a joint SentencePiece vocabulary trained by Marian.

ted reads each directory as Marian saved it (`ted translate -m DIR`, no
conversion step): model.npz, then pymarian convert's model.bin (float32)
and its intgemm8 model.bin (type 0x10001), each with vocab.spm and
model.npz.decoder.yml.

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  tokenize/*  `ted tokenize` against SentencePiece's own ids of vocab.spm
              (Marian's ids are the model's), </s> 0 after each source
  greedy/*/npz, greedy/*/bin   `ted translate --beam 1` against
              Translator(beam_size=1) on 200 sentences: >= 99 % identical
  beam/*/npz, beam/*/bin   `ted translate --beam 4 --n-best 4 --scores`
              against Translator(beam_size=4, normalize=1, n_best,
              word_scores): >= 99 % of the sentences with the same n-best
              texts in the same order, and there every sentence score
              (F0 / N, N counting </s>), F0 and word score within 1e-3
  greedy/*/intgemm8, beam/*/intgemm8   ted on the intgemm8 model.bin (int8
              products as Marian's: x quantized with 127 / max |x| over the
              whole matrix) against Marian's on the same file, one sentence per
              batch on both sides (the multiplier is the batch's): greedy and
              beam-4 translations identical on >= 99 % with either decoder
              (dequantized float products fall well below, and so does
              caching the Transformer decoder's self-attention keys and
              values, which Marian projects again each step, or ted's own
              float arithmetic in place of Marian's: docs/marian.md)
  shortlist/ssru/*   a binary shortlist (pymarian convert --shortlist lex.s2t
              50 20 0 --dump-shortlist, of a lexical table of the training
              text) in the SSRU model's directory: ted, which uses it as
              found, against Marian with --shortlist, one sentence per batch,
              greedy and beam 4: >= 99 % identical
  ssru-shares/layer1   `ted attention --json`'s decoder self weights of an
              SSRU layer (what its state still holds of each step's input,
              the learning tools' view of the cell) against NumPy on Marian's
              weights: within 1e-4; `ted step --explain` tells the
              share the cell takes of the second step's input
  libretranslate/ssru   `ted serve` on the SSRU model's directory with
              Firefox Translations' file names (model.enfr.npz, vocab.enfr.spm,
              decoder.yml): LibreTranslate's /translate (en -> fr) answers
              Marian's best beam-4 hypothesis for 40 sentences
  shipped/bergamot-en-fr   models/bergamot-en-fr as shipped (trained by
              tools/train_bergamot.py): `ted translate` (decoder.yml: beam 4)
              against Marian on its .npz, >= 99 % identical; on its intgemm8/
              (int8 .bin and binary shortlist, one sentence per batch), >= 99 %
  refuse/*    a directory with a model but no vocabulary, one with two
              models, a model.yml with pre-norm layers or another dim-emb, a
              model without one of its tensors: one line naming the
              directory or the file and what is wrong
Texts are compared byte for byte: SentencePiece's text, as Marian writes it
(a space before a "." or at the end stays). Marian's float products go to
MKL, whose summation order follows the CPU's instruction sets; the test
runs it with MKL_CBWR=AVX2 (MKL's reproducible AVX2 code path, the same on
every CPU that has AVX2), whose order ted's Marian attention follows.
TED_PARITY_KEEP=1 keeps the temporary directory (printed on stderr).
"""
import glob
import os
import shutil
import subprocess
import sys
import time

# before pymarian's MKL starts, here and in every process the test starts
os.environ["MKL_CBWR"] = "AVX2"

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))

from ted_test import (compare_lines, failures, report, scratch_directory,  # noqa: E402
                      ted_lines)

TRAINER = os.path.join(ROOT, "tools", "train_bergamot.py")
SENTENCES = os.path.join(ROOT, "models", "en-fr", "test.en")
SHIPPED = os.path.join(ROOT, "models", "bergamot-en-fr")
COUNT = 200
BEAM = 4
AGREEMENT = 0.99
TOLERANCE = 1e-3
# int8 against Marian's int8 (greedy and beam 4, one sentence per batch):
# both decoders run every product as Marian does (the Transformer decoder's
# self-attention keys and values projected again each step over the whole
# prefix with the prefix's multiplier), with Marian's float arithmetic
# before each quantization, attention's products summed in MKL's order
# (docs/marian.md)
INT8_AGREEMENT = AGREEMENT
SERVED = 40
SHORTLIST = (50, 20)  # firstNum, bestNum

MODELS = [("ssru", ["--decoder", "ssru"]), ("transformer", ["--decoder", "transformer"])]


def read_sentences():
    with open(SENTENCES, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f][:COUNT]


def train(out, options):
    start = time.time()
    subprocess.run([sys.executable, TRAINER, "--out", out] + options, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(f"# trained {os.path.basename(out)} in {time.time() - start:.1f} s", flush=True)


def convert(marian_dir, out_dir, *options):
    """pymarian convert's .bin of the model, in a directory of its own with
    the vocabulary and decoder.yml."""
    os.makedirs(out_dir)
    for name in ("vocab.spm", "model.npz.decoder.yml"):
        shutil.copy(os.path.join(marian_dir, name), os.path.join(out_dir, name))
    subprocess.run([sys.executable, "-m", "pymarian", "convert", "-f",
                    os.path.join(marian_dir, "model.npz"), "-t",
                    os.path.join(out_dir, "model.bin")] + list(options), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


# ---- the checks ------------------------------------------------------------------

def check_tokenize(name, ted_dir, sentences):
    import sentencepiece
    sp = sentencepiece.SentencePieceProcessor(model_file=os.path.join(ted_dir, "vocab.spm"))
    got, problem = ted_lines(["tokenize", "-m", ted_dir], sentences)
    if problem:
        return report(f"tokenize/{name}", problem)
    want = [" ".join(str(i) for i in sp.encode(s) + [0]) for s in sentences]
    compare_lines(f"tokenize/{name}", got, want, sentences, "sentences' ids")


def translator(marian_dir, beam, model="model.npz"):
    import pymarian
    spm = os.path.join(marian_dir, "vocab.spm")
    options = dict(models=os.path.join(marian_dir, model), vocabs=[spm, spm],
                   beam_size=beam, normalize=1.0, cpu_threads=1, quiet="", mini_batch=1)
    if beam > 1:
        options.update(n_best="", word_scores="")
    return pymarian.Translator(**options)


def marian_greedy(marian_dir, sentences, model="model.npz"):
    return translator(marian_dir, 1, model).translate(sentences)


def check_int8(name, int8_dir, sentences, minimum):
    """Marian on the int8 model.bin, one sentence per batch (its products
    quantize each activation matrix with 127 / max |x| over the batch's), and
    ted with --batch-size 1: greedy translations, and beam-4 n-best lists
    with their scores."""
    want = marian_greedy(int8_dir, sentences, "model.bin")
    got, problem = ted_lines(["translate", "-m", int8_dir, "--beam", "1", "--batch-size", "1"],
                             sentences)
    if problem:
        report(f"greedy/{name}/intgemm8", problem)
    else:
        compare_lines(f"greedy/{name}/intgemm8", got, want, sentences, "translations", minimum)
    check_beam(name + "/intgemm8", int8_dir, marian_beam(int8_dir, sentences, "model.bin"),
               sentences, minimum, ["--batch-size", "1"])


def check_greedy(name, ted_dir, want, sentences, minimum=AGREEMENT):
    got, problem = ted_lines(["translate", "-m", ted_dir, "--beam", "1"], sentences)
    if problem:
        return report(f"greedy/{name}", problem)
    compare_lines(f"greedy/{name}", got, want, sentences,
                  "greedy translations", minimum)


def parse_marian(lines):
    """Marian's n-best lines -> {index: [(text, score, F0, word scores)]}."""
    out = {}
    for line in lines:
        fields = line.split(" ||| ")
        words = [float(w) for w in fields[2].split()[1:]]
        f0 = float(fields[3].split()[1])
        out.setdefault(int(fields[0]), []).append((fields[1], float(fields[4]), f0,
                                                   words))
    return out


def parse_ted(lines):
    out = {}
    for line in lines:
        fields = line.split(" ||| ")
        out.setdefault(int(fields[0]), []).append(
            (fields[1], float(fields[2]), float(fields[3]),
             [float(w) for w in fields[4].split()]))
    return out


def worst_difference(got, want):
    """The largest difference of scores between two n-best lists of equal texts."""
    worst = 0.0
    for g, w in zip(got, want):
        if len(g[3]) != len(w[3]):
            return float("inf")
        worst = max([worst, abs(g[1] - w[1]), abs(g[2] - w[2])] +
                    [abs(a - b) for a, b in zip(g[3], w[3])])
    return worst


def marian_beam(marian_dir, sentences, model="model.npz"):
    return parse_marian(translator(marian_dir, BEAM, model).translate(sentences))


def check_beam(name, ted_dir, want, sentences, minimum=AGREEMENT, extra=()):
    args = ["translate", "-m", ted_dir, "--beam", str(BEAM), "--n-best", str(BEAM),
            "--scores"] + list(extra)
    from ted_test import TED, run
    status, out, err = run([TED] + args, "".join(s + "\n" for s in sentences))
    if status != 0:
        return report(f"beam/{name}", f"ted exited {status}: {err.strip()[-300:]}")
    got = parse_ted(out.splitlines())
    same, worst, first = 0, 0.0, None
    for i in range(len(sentences)):
        g, w = got.get(i, []), want.get(i, [])
        if [h[0] for h in g] == [h[0] for h in w]:
            same += 1
            worst = max(worst, worst_difference(g, w))
        elif first is None:
            first = (i, [h[0] for h in g], [h[0] for h in w])
    detail = f"{same}/{len(sentences)} n-best lists identical, scores within {worst:.1e}"
    if same < minimum * len(sentences):
        return report(f"beam/{name}", f"{detail}; first at line {first[0]}: ted {first[1]}, "
                      f"Marian {first[2]}")
    if worst > TOLERANCE:
        return report(f"beam/{name}", f"{detail}: above {TOLERANCE}")
    report(f"beam/{name}", detail=detail)


def check_model(tmp, name, options, sentences):
    """Trains the model; returns Marian's beam n-best lists."""
    marian_dir = os.path.join(tmp, name)
    train(marian_dir, options)
    check_tokenize(name, marian_dir, sentences)
    greedy = marian_greedy(marian_dir, sentences)
    beam = marian_beam(marian_dir, sentences)
    check_greedy(name + "/npz", marian_dir, greedy, sentences)
    check_beam(name + "/npz", marian_dir, beam, sentences)
    bin_dir = os.path.join(tmp, name + "-bin")
    convert(marian_dir, bin_dir)
    check_greedy(name + "/bin", bin_dir, greedy, sentences)
    check_beam(name + "/bin", bin_dir, beam, sentences)
    int8_dir = os.path.join(tmp, name + "-intgemm8")
    convert(marian_dir, int8_dir, "--gemm-type", "intgemm8")
    check_int8(name, int8_dir, sentences, INT8_AGREEMENT)
    return beam


def check_shortlist(tmp, name, sentences):
    """A binary shortlist made by pymarian convert --shortlist ...
    --dump-shortlist in the model's directory, used by ted as found; both
    decode one sentence per batch (the shortlist is a batch's)."""
    marian_dir = os.path.join(tmp, name)
    listed = os.path.join(tmp, name + "-lex")
    shutil.copytree(marian_dir, listed)
    spm = os.path.join(listed, "vocab.spm")
    lex = os.path.join(listed, f"lex.{SHORTLIST[0]}.{SHORTLIST[1]}.s2t.bin")
    sys.path.insert(0, os.path.dirname(TRAINER))
    from train_bergamot import lexical_table
    lexical_table(spm, SENTENCES, SENTENCES[:-3] + ".fr", os.path.join(tmp, "lex.s2t"))
    subprocess.run([sys.executable, "-m", "pymarian", "convert", "--shortlist",
                    os.path.join(tmp, "lex.s2t"), str(SHORTLIST[0]), str(SHORTLIST[1]), "0",
                    "--dump-shortlist", lex, "--vocabs", spm, spm], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import pymarian
    for beam in (1, BEAM):
        marian = pymarian.Translator(models=os.path.join(listed, "model.npz"),
                                     vocabs=[spm, spm], beam_size=beam, normalize=1.0,
                                     cpu_threads=1, quiet="", mini_batch=1, maxi_batch=1,
                                     shortlist=[lex])
        want = [marian.translate(s) for s in sentences]
        got, problem = ted_lines(["translate", "-m", listed, "--beam", str(beam),
                                  "--batch-size", "1"], sentences)
        if problem:
            report(f"shortlist/{name}/beam{beam}", problem)
            continue
        compare_lines(f"shortlist/{name}/beam{beam}", got, want,
                      sentences, "translations", AGREEMENT)


def check_libretranslate(tmp, want, sentences):
    """ted serve on a directory named as Firefox Translations names its files
    (model.enfr.npz, vocab.enfr.spm: en -> fr), answering LibreTranslate's
    /translate with Marian's best beam hypothesis (decoder.yml: beam 4)."""
    from ted_test import Server
    shipped = os.path.join(tmp, "enfr")
    os.makedirs(shipped)
    for src, dst in (("model.npz", "model.enfr.npz"), ("vocab.spm", "vocab.enfr.spm"),
                     ("model.npz.decoder.yml", "decoder.yml")):
        shutil.copy(os.path.join(tmp, "ssru", src), os.path.join(shipped, dst))
    server = Server([shipped])
    try:
        texts = sentences[:SERVED]
        status, _, data = server.call("POST", "/translate",
                                      {"q": texts, "source": "en", "target": "fr"})
        got = data.get("translatedText") if status == 200 and isinstance(data, dict) else None
        if not isinstance(got, list) or len(got) != len(texts):
            return report("libretranslate/ssru", f"status {status}: {str(data)[:300]}")
        compare_lines("libretranslate/ssru", got,
                      [want[i][0][0] for i in range(len(texts))], texts,
                      "/translate answers", AGREEMENT)
    finally:
        server.stop()


def edited(tmp, name, yml_edit=None, drop=None):
    """A copy of the SSRU model's directory whose model.npz (written by
    NumPy, as Marian writes it) has model.yml edited or a tensor left out."""
    import numpy as np
    out = os.path.join(tmp, name)
    shutil.copytree(os.path.join(tmp, "ssru"), out)
    z = dict(np.load(os.path.join(out, "model.npz")))
    if yml_edit:
        text = bytes(z["special:model.yml"]).decode()
        assert yml_edit[0] in text, yml_edit[0]
        z["special:model.yml"] = np.frombuffer(text.replace(*yml_edit).encode(), dtype=np.int8)
    z.pop(drop, None)
    np.savez(os.path.join(out, "model.npz"), **z)
    return out


def check_shipped(sentences):
    """models/bergamot-en-fr as shipped: ted against Marian on its .npz
    (decoder.yml's beam 4), and its intgemm8/ directory (int8 .bin and
    shortlist) one sentence per batch."""
    import pymarian
    if not os.path.isdir(SHIPPED):
        return report("shipped/bergamot-en-fr", f"{SHIPPED}: missing")
    for sub, model, agreement in (("", "model.enfr.npz", AGREEMENT),
                                  ("intgemm8", "model.enfr.intgemm8.bin", INT8_AGREEMENT)):
        d = os.path.join(SHIPPED, sub)
        spm = os.path.join(d, "vocab.enfr.spm")
        options = dict(models=os.path.join(d, model), vocabs=[spm, spm], beam_size=BEAM,
                       normalize=1.0, cpu_threads=1, quiet="", mini_batch=1, maxi_batch=1)
        shortlists = glob.glob(os.path.join(d, "lex.*.s2t.bin"))
        if shortlists:
            options["shortlist"] = shortlists
        marian = pymarian.Translator(**options)
        want = [marian.translate(t) for t in sentences]
        got, problem = ted_lines(["translate", "-m", d, "--batch-size", "1"], sentences)
        name = "shipped/bergamot-en-fr" + ("/" + sub if sub else "")
        if problem:
            report(name, problem)
        else:
            compare_lines(name, got, want, sentences, "beam-4 translations", agreement)


def marian_positions(count, d):
    """Marian's sinusoids: sines of pos / 10000^(i / (d/2 - 1)), then cosines."""
    import numpy as np
    half = d // 2
    frequency = np.exp(-np.arange(half) * np.log(10000.0) / (half - 1))
    angles = np.arange(count)[:, None] * frequency[None, :]
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)


def check_ssru_shares(tmp, sentence):
    """`ted attention --json`'s decoder self weights of the first SSRU layer
    against NumPy on Marian's weights: the share (1 - f_j) prod_{k>j} f_k of
    each step j's input in the state at step t, averaged over each head's
    dimensions, f_t = sigmoid(x_t W_f + b_f) of the layer's input x_t (the
    embedding of the step's token times sqrt(d), a zero vector at step 0,
    plus the position's sinusoid)."""
    import json
    import numpy as np
    import sentencepiece
    from ted_test import TED, run
    marian_dir = os.path.join(tmp, "ssru")
    out = os.path.join(tmp, "attention.json")
    status, _, err = run([TED, "attention", "-m", marian_dir, "--json", out, sentence])
    if status != 0:
        return report("ssru-shares/layer1", f"ted attention exited {status}: {err.strip()}")
    with open(out, encoding="utf-8") as f:
        got = np.array(json.load(f)["decoder_self_attention"][0])  # (heads, steps, steps)
    with open(out, encoding="utf-8") as f:
        inputs = json.load(f)["decoder_inputs"]
    z = np.load(os.path.join(marian_dir, "model.npz"))
    sp = sentencepiece.SentencePieceProcessor(model_file=os.path.join(marian_dir, "vocab.spm"))
    d, heads, steps = z["Wemb"].shape[1], got.shape[0], got.shape[1]
    x = np.array([np.zeros(d) if t == 0 else z["Wemb"][sp.piece_to_id(inputs[t])] * np.sqrt(d)
                  for t in range(steps)], dtype=np.float64) + marian_positions(steps, d)
    f = 1 / (1 + np.exp(-(x @ z["decoder_l1_rnn_Wf"] + z["decoder_l1_rnn_bf"])))
    want = np.zeros_like(got)
    for t in range(steps):
        still = np.ones(d)
        for j in range(t, -1, -1):
            want[:, t, j] = ((1 - f[j]) * still).reshape(heads, -1).mean(axis=1)
            still = still * f[j]
    worst = float(np.abs(got - want).max())
    report("ssru-shares/layer1", None if worst <= 1e-4 else f"differ by {worst:.2e}",
           f"{heads} heads x {steps} steps within {worst:.1e}")
    # ted step --explain tells the second step's share of the new input
    status, text, err = run([TED, "step", "-m", marian_dir, "--auto", "--explain",
                             "--no-color", "--max-length", "2", sentence])
    told = [line for line in text.splitlines() if "here the gate keeps" in line]
    taken = float(want[:, 1, 1].mean())
    words = f"keeps {100 * (1 - taken):.0f}% of the state (mean of f) and takes {100 * taken:.0f}%"
    report("ssru-shares/step-explain", None if told and words in told[0] else
           f"exit {status}, no line with {words!r}: {told[:1]} {err.strip()[-200:]}", words)


def check_refusals(tmp):
    from ted_test import TED, run
    lone = os.path.join(tmp, "lone")
    os.makedirs(lone)
    shutil.copy(os.path.join(tmp, "ssru", "model.npz"), os.path.join(lone, "model.npz"))
    cases = [("no-vocabulary", lone, "no SentencePiece vocabulary")]
    two = os.path.join(tmp, "two")
    shutil.copytree(os.path.join(tmp, "ssru"), two)
    shutil.copy(os.path.join(two, "model.npz"), os.path.join(two, "model.best.npz"))
    cases.append(("two-models", two, "two Marian models"))
    cases.append(("pre-norm", edited(tmp, "pre-norm", yml_edit=("transformer-preprocess: \"\"",
                                                                 "transformer-preprocess: n")),
                  "transformer-preprocess: \"n\"; ted runs only \"\""))
    cases.append(("missing-tensor", edited(tmp, "missing", drop="decoder_l2_rnn_Wf"),
                  "missing tensor 'decoder_l2_rnn_Wf'"))
    cases.append(("shape", edited(tmp, "shape", yml_edit=("dim-emb: 64", "dim-emb: 32")),
                  "tensor 'Wemb': not of shape [500, 32]"))
    for name, model, words in cases:
        status, _, err = run([TED, "translate", "-m", model], "Hello.\n")
        lines = err.strip().splitlines()
        good = status not in (0, None) and len(lines) == 1 and words in lines[0] and \
            model in lines[0]
        report(f"refuse/{name}", None if good else f"exit {status}, stderr {err.strip()!r}",
               lines[0] if good else "")


def main():
    try:
        import pymarian  # noqa: F401
        import sentencepiece  # noqa: F401
    except ImportError as e:
        print(f"skip marian-native: {e} (make venv installs tests/requirements.txt)")
        return
    sentences = read_sentences()
    check_shipped(sentences)
    with scratch_directory("ted-marian-") as tmp:
        beams = {name: check_model(tmp, name, options, sentences) for name, options in MODELS}
        check_shortlist(tmp, "ssru", sentences)
        check_ssru_shares(tmp, sentences[0])
        check_libretranslate(tmp, beams["ssru"], sentences)
        check_refusals(tmp)
    sys.exit(1 if failures() else 0)


if __name__ == "__main__":
    main()
