#!/usr/bin/python3
"""ted on a browsermt-layout int8 model (type 0x4101 with precomputed
activation multipliers, what Firefox Translations ships as
model.<pair>.intgemm.alphas.bin), written here from the float model of
models/bergamot-en-fr following browsermt's marian-conv rules: every *_W?
matrix clip(rint(W^T * qm), -127, 127) with qm = 127 / max |W| appended,
Wemb int8 too (not transposed), and for every such matrix an item
<matrix>_QuantMultA holding 127 / max |A|, A its input as observed in a
float decode of calibration sentences (what marian --dump-quantmult
measures).

    BUILD=build TED=build/ted .venv/bin/python tests/parity/test_marian_int8.py

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  marian-int8/alphas/info     `ted info` reads the file as browsermt's
                              (intgemm8 with alphas)
  marian-int8/alphas/logits   `ted logits` on 5 sentences against a NumPy
                              forward pass with exactly ted's int8
                              arithmetic (x quantized with the stored
                              multiplier, rint, clipped to +-127, the int32
                              dot with the int8 weights, times 1 / (qm_A qm_B),
                              the bias; all else float32): within 1e-3
  marian-int8/alphas/greedy-sim   `ted translate --beam 1` (sentences
                              decoded together: the multipliers are fixed)
                              against the NumPy int8 greedy decode of each
                              sentence alone on 60 sentences: identical
  marian-int8/alphas/greedy-float ted's int8 greedy translations against
                              Marian's (pymarian 1.12.42's Translator) on
                              the float model: >= 95 % identical
"""
import os
import re
import shutil
import struct
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))

from marian_files import marian_bin  # noqa: E402
from ted_test import (compare_lines, failures, parse_logits, report,  # noqa: E402
                      run, scratch_directory, ted_lines, TED)

SHIPPED = os.path.join(ROOT, "models", "bergamot-en-fr")
SENTENCES = os.path.join(ROOT, "models", "en-fr", "test.en")
NAME = "marian-int8/alphas"
COUNT = 60           # sentences translated
CALIBRATION = (1000, 1200)  # lines of test.en decoded to measure the alphas
LOGIT_SENTENCES = 5
LOGIT_TOLERANCE = 1e-3
FLOAT_AGREEMENT = 0.95
INT8 = re.compile(r"_W[a-z0-9]?$")
F32 = np.float32


class Model:
    """Marian's Transformer encoder and SSRU decoder (docs/marian.md) in
    NumPy float32; every product of an int8 matrix goes through linear()."""

    def __init__(self, params, config, linear):
        self.p, self.linear = params, linear
        self.d = int(config["dim-emb"])
        self.heads = int(config["transformer-heads"])
        self.enc = int(config["enc-depth"])
        self.dec = int(config["dec-depth"])
        self.emb = params["Wemb"]

    def position(self, pos):
        half = self.d // 2
        step = np.log(10000.0) / (half - 1)
        t = pos * np.exp(np.arange(half) * -step)
        return np.concatenate([np.sin(t), np.cos(t)]).astype(F32)

    def norm(self, x, name):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        y = (x - mean) / np.sqrt(var + F32(1e-6))
        return (y * self.p[name + "_ln_scale"][0] + self.p[name + "_ln_bias"][0]).astype(F32)

    def lin(self, name, x, bias=None):
        y = self.linear(name, x)
        return y if bias is None else (y + self.p[bias][0]).astype(F32)

    def attend(self, prefix, x, keys, values):
        q = self.lin(prefix + "_Wq", x, prefix + "_bq")
        n, dk = len(x), self.d // self.heads
        out = np.empty_like(q)
        for h in range(self.heads):
            s = slice(h * dk, (h + 1) * dk)
            scores = (q[:, s] * F32(1 / np.sqrt(dk))) @ keys[:, s].T
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            out[:, s] = (scores / scores.sum(-1, keepdims=True)) @ values[:, s]
        o = self.lin(prefix + "_Wo", out.reshape(n, self.d), prefix + "_bo")
        return self.norm(x + o, prefix + "_Wo")

    def ffn(self, prefix, x):
        h = np.maximum(self.lin(prefix + "_W1", x, prefix + "_b1"), 0)
        return self.norm(x + self.lin(prefix + "_W2", h, prefix + "_b2"), prefix + "_ffn")

    def encode(self, ids):
        x = (self.emb[ids] * F32(np.sqrt(self.d))
             + np.stack([self.position(i) for i in range(len(ids))])).astype(F32)
        for i in range(1, self.enc + 1):
            pre = f"encoder_l{i}"
            k = self.lin(pre + "_self_Wk", x, pre + "_self_bk")
            v = self.lin(pre + "_self_Wv", x, pre + "_self_bv")
            x = self.ffn(pre + "_ffn", self.attend(pre + "_self", x, k, v))
        return x

    def start(self, memory):
        kv = []
        for i in range(1, self.dec + 1):
            pre = f"decoder_l{i}_context"
            kv.append((self.lin(pre + "_Wk", memory, pre + "_bk"),
                       self.lin(pre + "_Wv", memory, pre + "_bv")))
        return kv, [np.zeros((1, self.d), F32) for _ in range(self.dec)]

    def step(self, kv, cells, prev, t):
        e = np.zeros(self.d, F32) if prev is None else self.emb[prev] * F32(np.sqrt(self.d))
        x = (e + self.position(t))[None, :].astype(F32)
        for i in range(1, self.dec + 1):
            pre = f"decoder_l{i}"
            f = 1 / (1 + np.exp(-self.lin(pre + "_rnn_Wf", x, pre + "_rnn_bf")))
            c = (f * cells[i - 1] + (1 - f) * self.lin(pre + "_rnn_W", x)).astype(F32)
            cells[i - 1] = c
            x = self.norm(x + np.maximum(c, 0), pre + "_rnn_ffn")
            x = self.attend(pre + "_context", x, *kv[i - 1])
            x = self.ffn(pre + "_ffn", x)
        return (x @ self.emb.T + self.p["decoder_ff_logit_out_b"][0])[0].astype(F32)

    def greedy(self, ids):
        kv, cells = self.start(self.encode(ids))
        out, prev = [], None
        for t in range(3 * len(ids)):
            logits = self.step(kv, cells, prev, t)
            logits[1] = -np.inf  # <unk> is never emitted
            prev = int(np.argmax(logits))
            if prev == 0:
                break
            out.append(prev)
        return out

    def forced(self, ids, target):
        kv, cells = self.start(self.encode(ids))
        prevs = [None] + target
        return np.stack([self.step(kv, cells, prevs[t], t) for t in range(len(prevs))])


def quantize(w):
    qm = F32(127) / F32(np.abs(w).max())
    return np.clip(np.rint(w * qm), -127, 127).astype(np.int8), qm


def float_linear(params, seen):
    def linear(name, x):
        seen[name] = max(seen.get(name, 0.0), float(np.abs(x).max()))
        return (x @ params[name]).astype(F32)
    return linear


def int8_linear(weights, alphas):
    """ted's int8 product: q = clip(rint(x qm_A)), the exact int32 dot with
    the int8 weights, times 1 / (qm_A qm_B)."""
    def linear(name, x):
        w, qm = weights[name]
        a = alphas[name]
        q = np.clip(np.rint((x * a).astype(F32)), -127, 127).astype(np.int32)
        dot = q @ w.astype(np.int32)
        return (dot.astype(F32) * (F32(1) / a * (F32(1) / qm))).astype(F32)
    return linear


def write_alphas(path, params, yml, alphas):
    """browsermt marian-conv's layout of the model (type 0x4101)."""
    items = [("special:model.yml", 0x101, (len(yml),), yml)]
    for name, w in params.items():
        if name == "Wemb":
            q, qm = quantize(w)
            items.append((name, 0x4101, w.shape, q.tobytes() + struct.pack("<f", qm)))
        elif INT8.search(name):
            q, qm = quantize(w)
            items.append((name, 0x4101, w.shape, q.T.tobytes() + struct.pack("<f", qm)))
            items.append((name + "_QuantMultA", 0x404, (1,),
                          struct.pack("<f", alphas[name])))
        else:
            items.append((name, 0x404, w.shape, w.astype(F32).tobytes()))
    items.sort(key=lambda item: item[0])
    with open(path, "wb") as f:
        f.write(marian_bin(items))


def load():
    import yaml
    z = np.load(os.path.join(SHIPPED, "model.enfr.npz"))
    yml = z["special:model.yml"].tobytes()
    params = {k: z[k].astype(F32) for k in z.files if k != "special:model.yml"}
    return params, yml, yaml.safe_load(yml.rstrip(b"\0").decode())


def int8_model(params, config, alphas):
    """The NumPy model as ted runs the int8 file: Wemb dequantized."""
    weights = {n: quantize(w) for n, w in params.items() if INT8.search(n)}
    q, qm = quantize(params["Wemb"])
    deq = dict(params, Wemb=(q.astype(F32) / qm).astype(F32))
    return Model(deq, config, int8_linear(weights, alphas))


def check_logits(sp, model_dir, model, sentences, targets):
    worst = 0.0
    for s, target in zip(sentences, targets):
        ids = sp.encode(s) + [0]
        text = sp.decode(target)
        status, out, err = run([TED, "logits", "-m", model_dir, "--source", s,
                                "--target", text])
        if status != 0:
            return report(f"{NAME}/logits", f"ted logits exited {status}: {err.strip()[-200:]}")
        got = parse_logits(out)
        want = model.forced(ids, sp.encode(text))
        if got.shape != want.shape:
            return report(f"{NAME}/logits", f"{got.shape} logits, NumPy {want.shape} ({s!r})")
        worst = max(worst, float(np.abs(got - want).max()))
    report(f"{NAME}/logits", None if worst <= LOGIT_TOLERANCE else f"differ by {worst:.2e}",
           f"{len(sentences)} sentences, largest difference {worst:.1e}")


def check_info(model_dir):
    status, out, err = run([TED, "info", "-m", model_dir])
    want = "model.enfr.intgemm.alphas.bin (bin, intgemm8, alphas)"
    report(f"{NAME}/info", None if status == 0 and want in out else
           f"exit {status}, no {want!r} in the output: {(err or out).strip()[-200:]}")


def check_all(sp, model_dir, model, sentences):
    import pymarian
    check_info(model_dir)
    sim = [model.greedy(sp.encode(s) + [0]) for s in sentences]
    got, problem = ted_lines(["translate", "-m", model_dir, "--beam", "1"], sentences)
    if problem:
        report(f"{NAME}/greedy-sim", problem)
    else:
        compare_lines(f"{NAME}/greedy-sim", got, [sp.decode(t) for t in sim], sentences,
                      "greedy translations (NumPy int8)")
    check_logits(sp, model_dir, model, sentences[:LOGIT_SENTENCES], sim[:LOGIT_SENTENCES])
    spm = os.path.join(SHIPPED, "vocab.enfr.spm")
    marian = pymarian.Translator(models=os.path.join(SHIPPED, "model.enfr.npz"),
                                 vocabs=[spm, spm], beam_size=1, normalize=1.0,
                                 cpu_threads=1, quiet="", mini_batch=1)
    want = marian.translate(sentences)
    if got is not None:
        compare_lines(f"{NAME}/greedy-float", got, want, sentences,
                      "int8 greedy translations (Marian, float model)", FLOAT_AGREEMENT)


def main():
    import sentencepiece
    spm = os.path.join(SHIPPED, "vocab.enfr.spm")
    sp = sentencepiece.SentencePieceProcessor(model_file=spm)
    with open(SENTENCES, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    sentences = lines[:COUNT]
    params, yml, config = load()
    seen = {}
    calibrate = Model(params, config, float_linear(params, seen))
    for s in lines[CALIBRATION[0]:CALIBRATION[1]]:
        calibrate.greedy(sp.encode(s) + [0])
    alphas = {n: F32(127) / F32(m) for n, m in seen.items()}
    with scratch_directory("ted-marian-int8-") as tmp:
        model_dir = os.path.join(tmp, "alphas")
        os.makedirs(model_dir)
        write_alphas(os.path.join(model_dir, "model.enfr.intgemm.alphas.bin"), params, yml,
                     alphas)
        for name in ("vocab.enfr.spm", "decoder.yml"):
            shutil.copy(os.path.join(SHIPPED, name), os.path.join(model_dir, name))
        check_all(sp, model_dir, int8_model(params, config, alphas), sentences)
    sys.exit(1 if failures() else 0)


if __name__ == "__main__":
    main()
