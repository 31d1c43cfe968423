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

Marian's model.npz is presented to ted as a model directory of ted's
format: its tensors under ted's names (Marian's matrices transposed), its
model.yml and decoder.yml as config.yaml (the SSRU decoder layer, Marian's
positions, the decoder starting from a zero vector, </s> 0 as padding,
<unk> never generated, at most 3 x the source pieces, Marian's beam
search), its vocab.spm as the SentencePiece model with its pieces as the
vocabulary.

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  tokenize/*  `ted tokenize` against SentencePiece's own ids of vocab.spm
              (Marian's ids: the model's)
  greedy/*    `ted translate --beam 1` against Translator(beam_size=1) on
              200 sentences: >= 99 % identical
  beam/*      `ted translate --beam 4 --n-best 4 --scores` against
              Translator(beam_size=4, normalize=1, n_best, word_scores):
              >= 99 % of the sentences with the same n-best texts in the
              same order, and there every sentence score (F0 / N, N
              counting </s>), F0 and word score within 1e-3
Texts are compared with trailing spaces removed (Marian keeps the space of
a final lone "▁" piece, ted does not).
TED_PARITY_KEEP=1 keeps the temporary directory (printed on stderr).
"""
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))

from ted_test import (compare_lines, failures, report, scratch_directory,  # noqa: E402
                      ted_lines)

TRAINER = os.path.join(ROOT, "tools", "train_bergamot.py")
SENTENCES = os.path.join(ROOT, "models", "en-fr", "test.en")
COUNT = 200
BEAM = 4
AGREEMENT = 0.99
TOLERANCE = 1e-3

MODELS = [("ssru", ["--decoder", "ssru"]), ("transformer", ["--decoder", "transformer"])]


def read_sentences():
    with open(SENTENCES, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f][:COUNT]


def train(out, options):
    start = time.time()
    subprocess.run([sys.executable, TRAINER, "--out", out] + options, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(f"# trained {os.path.basename(out)} in {time.time() - start:.1f} s", flush=True)


# ---- Marian's files as a ted model directory -------------------------------------

def marian_tensors(z, yml):
    """ted's tensors (names of tensor_names: marian) from Marian's."""
    import numpy as np
    t = {"model.shared.weight": np.ascontiguousarray(z["Wemb"]),
         "final_logits_bias": z["decoder_ff_logit_out_b"].reshape(-1)}

    def linear(src, dst, bias=True):
        t[dst + ".weight"] = np.ascontiguousarray(z[src[0]].T)
        if bias:
            t[dst + ".bias"] = z[src[1]].reshape(-1)

    def attention(prefix, dst):
        for p, name in zip("qkvo", ("q_proj", "k_proj", "v_proj", "out_proj")):
            linear((f"{prefix}_W{p}", f"{prefix}_b{p}"), f"{dst}.{name}")

    def norm(prefix, dst):
        t[dst + ".weight"] = z[prefix + "_ln_scale"].reshape(-1)
        t[dst + ".bias"] = z[prefix + "_ln_bias"].reshape(-1)

    def feed_forward(prefix, dst):
        linear((prefix + "_W1", prefix + "_b1"), dst + ".fc1")
        linear((prefix + "_W2", prefix + "_b2"), dst + ".fc2")
        norm(prefix + "_ffn", dst + ".final_layer_norm")

    for i in range(yml["enc-depth"]):
        src, dst = f"encoder_l{i + 1}", f"model.encoder.layers.{i}"
        attention(src + "_self", dst + ".self_attn")
        norm(src + "_self_Wo", dst + ".self_attn_layer_norm")
        feed_forward(src + "_ffn", dst)
    for i in range(yml["dec-depth"]):
        src, dst = f"decoder_l{i + 1}", f"model.decoder.layers.{i}"
        if yml.get("transformer-decoder-autoreg") == "rnn":
            linear((src + "_rnn_W", None), dst + ".ssru", bias=False)
            linear((src + "_rnn_Wf", src + "_rnn_bf"), dst + ".ssru.forget")
            norm(src + "_rnn_ffn", dst + ".self_attn_layer_norm")
        else:
            attention(src + "_self", dst + ".self_attn")
            norm(src + "_self_Wo", dst + ".self_attn_layer_norm")
        attention(src + "_context", dst + ".encoder_attn")
        norm(src + "_context_Wo", dst + ".encoder_attn_layer_norm")
        feed_forward(src + "_ffn", dst)
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in t.items()}


CONFIG = """model:
  d_model: {d}
  heads: {heads}
  encoder_layers: {enc}
  decoder_layers: {dec}
  d_ff: {ffn}
  src_vocab_size: {vocab}
  tgt_vocab_size: {vocab}
  activation: {activation}
  norm_first: false
  layer_norm_eps: 1.0e-06
  max_positions: 1024
  scale_embedding: true
  positional_encoding: marian
  encoder_final_norm: false
  decoder_final_norm: false
  tensor_names: marian
  attention_projection: separate
  shared_embeddings: true
  tied_output: true
  output_bias: true
  decoder_layer: {layer}
  zero_start_embedding: true
weights: model.safetensors
tokenizer:
  type: sentencepiece
  src_vocab: vocab.txt
  tgt_vocab: vocab.txt
  src_spm: vocab.spm
  tgt_spm: vocab.spm
  unk_id: 1
  pad_id: 0
  bos_id: 0
  eos_id: 0
  source_bos: false
  source_eos: true
decoding:
  beam_size: {beam}
  length_penalty: {normalize}
  length_normalization: power
  early_stopping: marian
  max_length_factor: 3
  banned_ids: [1]
"""


def present(marian_dir, ted_dir):
    """Marian's model.npz, decoder.yml and vocab.spm as a ted model directory."""
    import numpy as np
    import sentencepiece
    import yaml
    from safetensors.numpy import save_file
    os.makedirs(ted_dir)
    z = np.load(os.path.join(marian_dir, "model.npz"))
    yml = yaml.safe_load(bytes(z["special:model.yml"]).decode().rstrip("\0 "))
    with open(os.path.join(marian_dir, "model.npz.decoder.yml"), encoding="utf-8") as f:
        decoder = yaml.safe_load(f)
    save_file(marian_tensors(z, yml), os.path.join(ted_dir, "model.safetensors"))
    spm = os.path.join(marian_dir, "vocab.spm")
    shutil.copy(spm, os.path.join(ted_dir, "vocab.spm"))
    sp = sentencepiece.SentencePieceProcessor(model_file=spm)
    with open(os.path.join(ted_dir, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("".join(sp.id_to_piece(i) + "\n" for i in range(sp.get_piece_size())))
    activation = {"relu": "relu", "swish": "silu"}[yml["transformer-ffn-activation"]]
    rnn = yml.get("transformer-decoder-autoreg") == "rnn"
    with open(os.path.join(ted_dir, "config.yaml"), "w", encoding="utf-8") as f:
        f.write(CONFIG.format(d=yml["dim-emb"], heads=yml["transformer-heads"],
                              enc=yml["enc-depth"], dec=yml["dec-depth"],
                              ffn=yml["transformer-dim-ffn"], vocab=sp.get_piece_size(),
                              activation=activation, layer="ssru" if rnn else "self-attention",
                              beam=decoder["beam-size"], normalize=decoder["normalize"]))
    return sp


# ---- the checks ------------------------------------------------------------------

def check_tokenize(name, ted_dir, sp, sentences):
    got, problem = ted_lines(["tokenize", "-m", ted_dir], sentences)
    if problem:
        return report(f"tokenize/{name}", problem)
    want = [" ".join(str(i) for i in sp.encode(s) + [0]) for s in sentences]
    compare_lines(f"tokenize/{name}", got, want, sentences, "sentences' ids")


def translator(marian_dir, beam):
    import pymarian
    spm = os.path.join(marian_dir, "vocab.spm")
    options = dict(models=os.path.join(marian_dir, "model.npz"), vocabs=[spm, spm],
                   beam_size=beam, normalize=1.0, cpu_threads=1, quiet="", mini_batch=1)
    if beam > 1:
        options.update(n_best="", word_scores="")
    return pymarian.Translator(**options)


def check_greedy(name, ted_dir, marian_dir, sentences):
    want = [t.rstrip() for t in translator(marian_dir, 1).translate(sentences)]
    got, problem = ted_lines(["translate", "-m", ted_dir, "--beam", "1"], sentences)
    if problem:
        return report(f"greedy/{name}", problem)
    compare_lines(f"greedy/{name}", [t.rstrip() for t in got], want, sentences,
                  "greedy translations", AGREEMENT)


def parse_marian(lines):
    """Marian's n-best lines -> {index: [(text, score, F0, word scores)]}."""
    out = {}
    for line in lines:
        fields = line.split(" ||| ")
        words = [float(w) for w in fields[2].split()[1:]]
        f0 = float(fields[3].split()[1])
        out.setdefault(int(fields[0]), []).append((fields[1].rstrip(), float(fields[4]), f0,
                                                   words))
    return out


def parse_ted(lines):
    out = {}
    for line in lines:
        fields = line.split(" ||| ")
        out.setdefault(int(fields[0]), []).append(
            (fields[1].rstrip(), float(fields[2]), float(fields[3]),
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


def check_beam(name, ted_dir, marian_dir, sentences):
    want = parse_marian(translator(marian_dir, BEAM).translate(sentences))
    args = ["translate", "-m", ted_dir, "--beam", str(BEAM), "--n-best", str(BEAM), "--scores"]
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
    if same < AGREEMENT * len(sentences):
        return report(f"beam/{name}", f"{detail}; first at line {first[0]}: ted {first[1]}, "
                      f"Marian {first[2]}")
    if worst > TOLERANCE:
        return report(f"beam/{name}", f"{detail}: above {TOLERANCE}")
    report(f"beam/{name}", detail=detail)


def main():
    try:
        import pymarian  # noqa: F401
        import safetensors  # noqa: F401
        import sentencepiece  # noqa: F401
    except ImportError as e:
        print(f"skip marian-native: {e} (make venv installs tests/requirements.txt)")
        return
    sentences = read_sentences()
    with scratch_directory("ted-marian-") as tmp:
        for name, options in MODELS:
            marian_dir = os.path.join(tmp, name)
            train(marian_dir, options)
            ted_dir = os.path.join(tmp, name + "-ted")
            sp = present(marian_dir, ted_dir)
            check_tokenize(name, ted_dir, sp, sentences)
            check_greedy(name, ted_dir, marian_dir, sentences)
            check_beam(name, ted_dir, marian_dir, sentences)
    sys.exit(1 if failures() else 0)


if __name__ == "__main__":
    main()
