#!/usr/bin/python3
"""The models of make bench-serve's comparison with LibreTranslate
(bench/lt_bench.py), each one checkpoint in ted's form and CTranslate2's.

    .venv/bin/python bench/lt_models.py en-fr --out DIR
    .venv/bin/python bench/lt_models.py base --out DIR

en-fr: models/en-fr (a MarianMTModel exported by tools/export_hf.py, its
tensors under transformers' names) back into a Hugging Face directory
(MarianConfig from config.yaml, the weights loaded strictly but for the
sinusoidal positions, MarianTokenizer's source.spm, target.spm and a
vocab.json of vocab.txt), then ct2-transformers-converter --quantization
float32: DIR/en-fr-ct2. ted serves models/en-fr itself.

base: bench/make_marian_model.py's Transformer-base-sized MarianMTModel
(random weights, fixed seed) in BUILD/bench/marian(-hf); `ted quantize`
into DIR/base-int8 and ct2-transformers-converter --quantization int8 into
DIR/base-ct2-int8: both int8, as LibreTranslate's packages are.

Each CTranslate2 directory's config.json gets add_source_eos true: ted, as
MarianTokenizer, ends the source with </s>, which the converter leaves to
the caller and Argos Translate does not add. Kept while newer than its
inputs.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.environ.get("BUILD", "build")
ENFR = os.path.join(ROOT, "models", "en-fr")


def log(message):
    print(f"lt_models: {message}", file=sys.stderr, flush=True)


def newer(path, *inputs):
    return os.path.exists(path) and all(os.path.getmtime(path) > os.path.getmtime(i)
                                        for i in inputs)


def ted_config(model_dir):
    import yaml

    with open(os.path.join(model_dir, "config.yaml"), encoding="utf-8") as f:
        return yaml.safe_load(f)


def marian_from_ted(ted_dir, hf_dir):
    """A MarianMTModel directory holding ted_dir's weights and tokenizer."""
    import torch
    from safetensors.torch import load_file
    from transformers import MarianConfig, MarianMTModel

    c = ted_config(ted_dir)
    m, t = c["model"], c["tokenizer"]
    config = MarianConfig(
        vocab_size=m["src_vocab_size"], d_model=m["d_model"], encoder_layers=m["encoder_layers"],
        decoder_layers=m["decoder_layers"], encoder_attention_heads=m["heads"],
        decoder_attention_heads=m["heads"], encoder_ffn_dim=m["d_ff"], decoder_ffn_dim=m["d_ff"],
        activation_function={"silu": "swish"}.get(m["activation"], m["activation"]),
        max_position_embeddings=m["max_positions"], scale_embedding=m["scale_embedding"],
        pad_token_id=t["pad_id"], eos_token_id=t["eos_id"], decoder_start_token_id=t["bos_id"],
        forced_eos_token_id=t["eos_id"], bad_words_ids=[[t["pad_id"]]], num_beams=1,
        max_length=c["decoding"]["max_length"] + 1)
    model = MarianMTModel(config)
    state = load_file(os.path.join(ted_dir, "model.safetensors"))
    state["final_logits_bias"] = state["final_logits_bias"].reshape(1, -1)
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if "embed_positions" not in k and k not in (
        "model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight",
        "lm_head.weight")]
    if missing or unexpected:
        raise SystemExit(f"lt_models: {ted_dir}: missing {missing}, unexpected {unexpected}")
    with torch.no_grad():
        model.tie_weights()
    model.eval().save_pretrained(hf_dir)
    with open(os.path.join(ted_dir, "vocab.txt"), encoding="utf-8") as f:
        pieces = [line.rstrip("\n") for line in f]
    with open(os.path.join(hf_dir, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump({p: i for i, p in enumerate(pieces)}, f, ensure_ascii=False)
    for name, key in (("source.spm", "src_spm"), ("target.spm", "tgt_spm")):
        shutil.copyfile(os.path.join(ted_dir, t[key]), os.path.join(hf_dir, name))
    with open(os.path.join(hf_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({"source_lang": t["source_lang"], "target_lang": t["target_lang"],
                   "separate_vocabs": False}, f)


def convert_ct2(hf_dir, out_dir, quantization):
    converter = os.path.join(os.path.dirname(sys.executable), "ct2-transformers-converter")
    subprocess.run([converter, "--model", hf_dir, "--output_dir", out_dir, "--quantization",
                    quantization, "--force"], check=True, stdout=subprocess.DEVNULL)
    path = os.path.join(out_dir, "config.json")
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    config["add_source_eos"] = True
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)


def make_enfr(out):
    hf_dir, ct2_dir = os.path.join(out, "en-fr-hf"), os.path.join(out, "en-fr-ct2")
    weights = os.path.join(ENFR, "model.safetensors")
    if newer(os.path.join(ct2_dir, "model.bin"), weights):
        return
    shutil.rmtree(hf_dir, ignore_errors=True)
    marian_from_ted(ENFR, hf_dir)
    convert_ct2(hf_dir, ct2_dir, "float32")
    log(f"wrote {ct2_dir} from {ENFR}")


def make_base(out, ted):
    sys.path.insert(0, HERE)
    import make_marian_model

    model_dir = make_marian_model.make(os.path.join(BUILD, "bench", "marian"))
    weights = os.path.join(model_dir, "model.safetensors")
    int8_dir, ct2_dir = os.path.join(out, "base-int8"), os.path.join(out, "base-ct2-int8")
    if not newer(os.path.join(int8_dir, "model.safetensors"), weights):
        shutil.rmtree(int8_dir, ignore_errors=True)
        subprocess.run([ted, "quantize", model_dir, int8_dir], check=True)
    if not newer(os.path.join(ct2_dir, "model.bin"), weights):
        convert_ct2(model_dir + "-hf", ct2_dir, "int8")
        log(f"wrote {ct2_dir}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", choices=("en-fr", "base"))
    parser.add_argument("--out", required=True)
    parser.add_argument("--ted", default=os.path.join(BUILD, "ted"))
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    if args.model == "en-fr":
        make_enfr(args.out)
    else:
        make_base(args.out, args.ted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
