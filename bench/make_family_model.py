#!/usr/bin/python3
"""Builds a Hugging Face checkpoint of a published model's shape with random
weights from a fixed seed, as a hub download has it (config.json,
generation_config.json, model.safetensors, the tokenizer's files): make
bench's real-size families (bench/families.py).

    .venv/bin/python bench/make_family_model.py FAMILY --out HF_DIR

FAMILY:
  flan-t5-base    T5ForConditionalGeneration of google/flan-t5-base's
                  config: d_model 768, 12 + 12 layers, 12 heads (d_kv 64),
                  d_ff 2048 gated-gelu, 32 128 embedding rows, untied output;
                  T5Tokenizer over a 32 000-piece SentencePiece model (+ 100
                  <extra_id_N>).
  bart-large-cnn  BartForConditionalGeneration of facebook/bart-large-cnn's
                  config: d_model 1024, 12 + 12 layers, 16 heads, ffn 4096,
                  GELU, post-norm, 50 264 embedding rows shared by both stacks
                  and the output layer; BartTokenizer over a byte-level BPE of
                  50 264 ids (vocab.json, merges.txt).
  madlad-3b       T5ForConditionalGeneration of google/madlad400-3b-mt's
                  config: d_model 1024, 32 + 32 layers, 16 heads of d_kv 128,
                  d_ff 8192 gated-gelu, 256 000 rows, untied output;
                  T5Tokenizer (extra_ids 0) over a 256 000-piece model.

flan-t5-base and bart-large-cnn: every parameter drawn from N(0, 0.02^2)
(LayerNorm gains 1 + N(0, 0.02^2)) with torch's generator seeded with SEED,
then the model's save_pretrained. madlad-3b (2.9 billion parameters, 11 GiB
in float32) is written without building the model: the tensor names and
shapes are those save_pretrained writes for a model of the same layers and
tiny widths, each width mapped onto the real one; the weights go to
model.safetensors one tensor at a time in float16 (5.5 GiB; the exporter
upcasts), drawn by NumPy from SEED, so that the build needs a few hundred
MiB of memory. The SentencePiece models: a small one trained on generated
words, its piece list filled up with made-up pieces (as
bench/make_nllb_model.py's); the timings feed random ids, so the pieces'
text plays no part in them.
"""
import argparse
import json
import os
import struct
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import common  # noqa: E402

SEED = 20261207
STD = 0.02
T5_COMMON = dict(feed_forward_proj="gated-gelu", tie_word_embeddings=False,
                 relative_attention_num_buckets=32, relative_attention_max_distance=128,
                 pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)
FAMILIES = {
    "flan-t5-base": dict(kind="t5", pieces=32000, extra_ids=100, config=dict(
        vocab_size=32128, d_model=768, d_kv=64, d_ff=2048, num_layers=12,
        num_decoder_layers=12, num_heads=12, **T5_COMMON)),
    "bart-large-cnn": dict(kind="bart", config=dict(
        vocab_size=50264, d_model=1024, encoder_layers=12, decoder_layers=12,
        encoder_attention_heads=16, decoder_attention_heads=16, encoder_ffn_dim=4096,
        decoder_ffn_dim=4096, activation_function="gelu", max_position_embeddings=1024,
        scale_embedding=False, normalize_before=False, add_final_layer_norm=False,
        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2,
        forced_bos_token_id=None, forced_eos_token_id=None)),
    "madlad-3b": dict(kind="t5-direct", pieces=256000, extra_ids=0, config=dict(
        vocab_size=256000, d_model=1024, d_kv=128, d_ff=8192, num_layers=32,
        num_decoder_layers=32, num_heads=16, **T5_COMMON)),
}


def log(message):
    print(f"make_family_model: {message}", file=sys.stderr, flush=True)


def n_params(family):
    """The parameter count of a family's checkpoint, from its config."""
    c = FAMILIES[family]["config"]
    if FAMILIES[family]["kind"] == "bart":
        d, f = c["d_model"], c["encoder_ffn_dim"]
        layer = 4 * d * d + 2 * d * f
        return c["vocab_size"] * d + c["encoder_layers"] * layer + \
            c["decoder_layers"] * (layer + 4 * d * d)
    d, f, inner = c["d_model"], c["d_ff"], c["num_heads"] * c["d_kv"]
    layer = 4 * d * inner + 3 * d * f
    return 2 * c["vocab_size"] * d + c["num_layers"] * layer + \
        c["num_decoder_layers"] * (layer + 4 * d * inner)


# ---- tokenizers ------------------------------------------------------------------------

def write_spm(path, pieces):
    """A SentencePiece model of T5's special ids (pad 0, eos 1, unk 2) with
    `pieces` pieces."""
    common.write_filled_spm(path, SEED, 4000, pieces, "make_family_model",
                            model_type="unigram", pad_id=0, eos_id=1, unk_id=2, bos_id=-1)


def write_t5_tokenizer(hf_dir, spec):
    from transformers import T5Tokenizer

    with tempfile.TemporaryDirectory() as tmp:
        spm_path = os.path.join(tmp, "spiece.model")
        write_spm(spm_path, spec["pieces"])
        tok = T5Tokenizer(spm_path, extra_ids=spec["extra_ids"], legacy=True)
        tok.save_pretrained(hf_dir)
    return len(tok)


def byte_symbols():
    """GPT-2's 256 printable stand-ins for the bytes, in byte order."""
    from transformers.models.bart.tokenization_bart import bytes_to_unicode

    table = bytes_to_unicode()
    return [table[b] for b in range(256)]


def write_bart_tokenizer(hf_dir, vocab_size):
    """vocab.json of vocab_size ids (<s> <pad> </s> <unk>, the 256 byte
    symbols, made-up merges of two symbols, <mask> last) and merges.txt
    making each merged one."""
    from transformers import BartTokenizer

    symbols = byte_symbols()
    vocab = ["<s>", "<pad>", "</s>", "<unk>"] + symbols
    merges = []
    for a in symbols:
        for b in symbols:
            if len(vocab) == vocab_size - 1:
                break
            vocab.append(a + b)
            merges.append(f"{a} {b}")
    vocab.append("<mask>")
    os.makedirs(hf_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump({t: i for i, t in enumerate(vocab)}, f, ensure_ascii=False)
        with open(os.path.join(tmp, "merges.txt"), "w", encoding="utf-8") as f:
            f.write("#version: 0.2\n" + "\n".join(merges) + "\n")
        tok = BartTokenizer(os.path.join(tmp, "vocab.json"), os.path.join(tmp, "merges.txt"))
        tok.save_pretrained(hf_dir)
    return len(tok)


# ---- models ----------------------------------------------------------------------------

def randomized(model):
    import torch

    model.tie_weights()  # which no_init_weights skips with the initialization
    generator = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=generator) * STD
            p.copy_(1.0 + noise if "layer_norm" in name or "layernorm" in name else noise)
            del noise
    return model.eval()


def save_built(hf_dir, spec):
    """The model built by transformers, random weights, save_pretrained."""
    from transformers import (BartConfig, BartForConditionalGeneration, T5Config,
                              T5ForConditionalGeneration)
    from transformers.modeling_utils import no_init_weights

    config_class, model_class = (BartConfig, BartForConditionalGeneration) \
        if spec["kind"] == "bart" else (T5Config, T5ForConditionalGeneration)
    config = config_class(**spec["config"])
    with no_init_weights():  # every parameter is drawn in randomized()
        model = model_class(config)
    randomized(model).save_pretrained(hf_dir)


def tiny_names(config):
    """{name: shape} that save_pretrained writes for a T5 of config's layers
    and tiny, distinct widths, with each width replaced by the real one."""
    from safetensors import safe_open
    from transformers import T5Config, T5ForConditionalGeneration

    tiny = dict(d_model=2, d_kv=3, num_heads=1, d_ff=5, vocab_size=7,
                relative_attention_num_buckets=11)
    real = {2: config["d_model"], 3: config["num_heads"] * config["d_kv"], 1: config["num_heads"],
            5: config["d_ff"], 7: config["vocab_size"],
            11: config["relative_attention_num_buckets"]}
    model = T5ForConditionalGeneration(T5Config(**{**config, **tiny}))
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        with safe_open(os.path.join(tmp, "model.safetensors"), "np") as f:
            return {k: [real[n] for n in f.get_slice(k).get_shape()] for k in sorted(f.keys())}


def write_direct(hf_dir, spec):
    """config.json and generation_config.json as save_pretrained writes
    them; model.safetensors written tensor by tensor in float16."""
    import numpy as np
    from transformers import GenerationConfig, T5Config

    config = T5Config(**spec["config"], architectures=["T5ForConditionalGeneration"],
                      torch_dtype="float16")
    config.save_pretrained(hf_dir)
    GenerationConfig.from_model_config(config).save_pretrained(hf_dir)
    shapes = tiny_names(spec["config"])
    header, offset = {}, 0
    for name, shape in shapes.items():
        size = 2 * int(np.prod(shape))
        header[name] = {"dtype": "F16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    rng = np.random.default_rng(SEED)
    with open(os.path.join(hf_dir, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for name, shape in shapes.items():
            rows = shape[0]
            step = max(1, (1 << 24) // max(1, int(np.prod(shape[1:]))))
            for start in range(0, rows, step):
                block = rng.standard_normal((min(step, rows - start), *shape[1:]),
                                            dtype=np.float32) * STD
                if "layer_norm" in name:
                    block += 1.0
                f.write(block.astype("<f2").tobytes())


def make(family, hf_dir):
    spec = FAMILIES[family]
    os.makedirs(hf_dir)
    if spec["kind"] == "bart":
        ids = write_bart_tokenizer(hf_dir, spec["config"]["vocab_size"])
    else:
        ids = write_t5_tokenizer(hf_dir, spec)
    if ids > spec["config"]["vocab_size"]:
        raise SystemExit(f"make_family_model: the tokenizer has {ids} ids, more than "
                         f"{spec['config']['vocab_size']}")
    if spec["kind"] == "t5-direct":
        write_direct(hf_dir, spec)
    else:
        save_built(hf_dir, spec)
    log(f"wrote {hf_dir}: {family}, {n_params(family) / 1e6:,.0f} M parameters, "
        f"tokenizer of {ids} ids")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("family", choices=sorted(FAMILIES))
    parser.add_argument("--out", required=True, help="the Hugging Face directory: must be new")
    args = parser.parse_args(argv)
    make(args.family, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
