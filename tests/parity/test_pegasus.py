#!/usr/bin/python3
"""ted against Hugging Face transformers' PegasusForConditionalGeneration
(PegasusTokenizer), on models exported with tools/export_hf.py.

    TED=build/ted .venv/bin/python tests/parity/test_pegasus.py

Two random-init models built from PegasusConfig and saved by
save_pretrained, with a SentencePiece model trained here in Pegasus's
layout (<pad> 0, </s> 1, <unk> 2, no <s>), which PegasusTokenizer shifts by
its offset of 103 behind <pad> </s> <mask_1> <mask_2> <unk_2> .. <unk_102>:
  pegasus-relu-scaled  relu, embeddings x sqrt(d_model), vocab_size the
                       tokenizer's length, model.safetensors
  pegasus-gelu-untied  gelu, embeddings not scaled, a separate lm_head,
                       5 embedding rows past the tokenizer's,
                       pytorch_model.bin
Both have a random final_logits_bias and sinusoidal positions that reach
past the sentences' lengths. Checks (one "ok NAME" or "FAIL NAME: why"
line each; exit 1 if one fails):
  export/*     tools/export_hf.py converts the directory
  tokenize/*   `ted tokenize` (source, and --target) against
               PegasusTokenizer's ids, every sentence of the corpus
  logits/*     `ted logits` against the teacher-forced logits of the model
               in float64: max abs diff <= 1e-4
  greedy/*     `ted translate --beam 1` against generate(num_beams=1),
               token for token (through `ted tokenize --decode` of its ids)
  beam/*       `ted translate --beam 4` against generate(num_beams=4,
               early_stopping=True, length_penalty=1.0)
  half/*       the second model saved in float16: exported (upcast to F32),
               its logits against those of the model transformers loads
               from the float16 directory, upcast, with the float32
               positional tables ted computes
  tokenize/legacy-config, tokenize/no-sentence-mask
               the first model's tokenizer_config.json without
               added_tokens_decoder (as older transformers wrote it), and
               with mask_token_sent null (no <mask_1> <mask_2> at 2 and 3)
  refuse/*     what the exporter cannot map: one line naming the key
TED_PARITY_KEEP=1 keeps the temporary directory (printed on stderr).
"""
import json
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
sys.path.insert(0, os.path.join(ROOT, "tests", "parity"))

from hf_parity import (check_refusals, each_exported, export, export_half,  # noqa: E402
                       raise_eos_bias, read_sentences, train_spm)
from ted_test import reference_transformers  # noqa: E402
from ted_test import edit_json, failures, report, scratch_directory  # noqa: E402
from test_t5 import check_model, check_tokenize, logits_pairs, t5_logits  # noqa: E402

# (name, config, extra embedding rows, safetensors)
MODELS = [
    ("pegasus-relu-scaled", dict(d_model=32, encoder_attention_heads=4,
                                 decoder_attention_heads=4, encoder_ffn_dim=64,
                                 decoder_ffn_dim=64, encoder_layers=2, decoder_layers=3,
                                 activation_function="relu", scale_embedding=True), 0, True),
    ("pegasus-gelu-untied", dict(d_model=24, encoder_attention_heads=3,
                                 decoder_attention_heads=3, encoder_ffn_dim=40,
                                 decoder_ffn_dim=40, encoder_layers=2, decoder_layers=2,
                                 activation_function="gelu", scale_embedding=False,
                                 tie_word_embeddings=False), 5, False),
]


def randomize(model, seed):
    """Weights scaled so that the logits are O(1-10) and attention is far
    from uniform; the positional tables (not trained) kept. With the output
    tied to the embeddings, a decoder state close to its input token's
    embedding makes that token the likeliest, and greedy search repeats it:
    small embeddings and a large final LayerNorm gain keep the source in
    the output."""
    generator = torch.Generator().manual_seed(seed)
    tied = model.config.tie_word_embeddings
    embedding, gain, bias = (0.1, 10.0, 0.1) if tied else (1.0, 1.0, 0.5)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "embed_positions" in name:
                continue
            noise = torch.randn(p.shape, generator=generator, dtype=p.dtype)
            if "layer_norm" in name:
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.2 * noise)
            elif "shared" in name:
                p.copy_(embedding * noise)
            elif "lm_head" in name or p.dim() == 1:
                p.copy_(noise if p.dim() == 2 else 0.1 * noise)
            else:
                p.copy_(noise / p.shape[1] ** 0.5)
        model.model.decoder.layer_norm.weight.mul_(gain)
        model.model.decoder.layer_norm.bias.mul_(gain)
        model.final_logits_bias.copy_(bias * torch.randn(model.final_logits_bias.shape,
                                                         generator=generator))
    return model.eval()


def build_model(config, extra_rows, tok, seed, sentences):
    import transformers
    config = transformers.PegasusConfig(**dict(
        dict(vocab_size=len(tok) + extra_rows, max_position_embeddings=128, dropout=0.0,
             attention_dropout=0.0, activation_dropout=0.0, pad_token_id=0, eos_token_id=1,
             decoder_start_token_id=0, forced_eos_token_id=1), **config))
    model = randomize(transformers.PegasusForConditionalGeneration(config), seed)
    return raise_eos_bias(model, tok, sentences)


def check_half(tmp, model, tok, pairs):
    half = export_half(tmp, model, tok)
    if half:
        # The float32 model of the half weights; its positional tables are
        # the float32 ones, which ted computes (the checkpoint's are
        # float16 copies, within 1e-3)
        upcast = half[0]
        with torch.no_grad():
            for stack in ("encoder", "decoder"):
                getattr(upcast.model, stack).embed_positions.weight.copy_(
                    getattr(model.model, stack).embed_positions.weight)
        t5_logits("half/logits", half[1], upcast, tok, pairs)


def edit_tensors(change):
    """An edit of model.safetensors: change(tensors) alters the dict."""
    def edit(hf_dir):
        from safetensors.torch import load_file, save_file
        path = os.path.join(hf_dir, "model.safetensors")
        tensors = load_file(path)
        change(tensors)
        save_file(tensors, path, metadata={"format": "pt"})
    return edit


def add_embedding_norm(tensors):
    tensors["model.encoder.layernorm_embedding.weight"] = torch.ones(
        tensors["model.encoder.layer_norm.weight"].shape)


def shift_positions(tensors):
    name = "model.encoder.embed_positions.weight"
    tensors[name] = torch.roll(tensors[name], 1, dims=0).contiguous()


def check_pegasus_refusals(tmp, hf_dir):
    check_refusals(tmp, "refuse/", [
        ("model-type", hf_dir, r"config\.json: model_type \"bigbird_pegasus\" asks for another",
         edit_json("config.json", model_type="bigbird_pegasus")),
        ("no-spiece", hf_dir, r"spiece\.model: missing",
         lambda d: os.remove(os.path.join(d, "spiece.model"))),
        ("tokenizer", hf_dir, r"tokenizer_class T5Tokenizer: a PegasusForConditionalGeneration",
         edit_json("tokenizer_config.json", tokenizer_class="T5Tokenizer")),
        ("hidden-piece", hf_dir, r"spiece\.model: piece \".*\" \(id 7\) takes id 110, which "
         r"added token \"<mask_9>\" holds",
         edit_json("tokenizer_config.json",
                   added_tokens_decoder={"110": {"content": "<mask_9>", "special": True}})),
        ("embedding-norm", hf_dir, r"tensor model\.encoder\.layernorm_embedding\.weight is not "
         r"part of a PegasusForConditionalGeneration", edit_tensors(add_embedding_norm)),
        ("positions", hf_dir, r"tensor model\.encoder\.embed_positions\.weight is not the "
         r"sinusoidal", edit_tensors(shift_positions)),
    ])


def drop_added_tokens(hf_dir):
    """tokenizer_config.json as transformers before 4.34 wrote it: no
    added_tokens_decoder."""
    path = os.path.join(hf_dir, "tokenizer_config.json")
    with open(path, encoding="utf-8") as f:
        value = json.load(f)
    del value["added_tokens_decoder"]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f)


def check_tokenizer_configs(tmp, hf_dir, sentences):
    """Other tokenizer_config.json files: the ids of the export against
    those of PegasusTokenizer.from_pretrained of the same directory."""
    import shutil
    import transformers
    cases = [("legacy-config", drop_added_tokens),
             ("no-sentence-mask", edit_json("tokenizer_config.json", mask_token_sent=None,
                                            added_tokens_decoder={},
                                            additional_special_tokens=None))]
    for case, edit in cases:
        case_dir = os.path.join(tmp, f"tokenizer-{case}")
        shutil.copytree(hf_dir, case_dir)
        edit(case_dir)
        problem = export(case_dir, case_dir + "-ted")
        if problem:
            report(f"tokenize/{case}", problem)
            continue
        tok = transformers.PegasusTokenizer.from_pretrained(case_dir)
        check_tokenize(case, case_dir + "-ted", tok, sentences)


def check_layout(tok):
    """The reference tokenizer has the layout the export assumes of it."""
    want = {0: "<pad>", 1: "</s>", 2: "<mask_1>", 3: "<mask_2>", 4: "<unk_2>",
            104: "<unk_102>", 105: "<unk>"}
    got = {i: tok.convert_ids_to_tokens(i) for i in want}
    report("tokenize/layout", None if got == want else f"PegasusTokenizer's ids {got}",
           "offset 103, <unk> at 105")


def main():
    transformers = reference_transformers()
    if not transformers:
        return
    sentences = read_sentences()
    with scratch_directory("ted-pegasus-") as tmp:
        spm_path = train_spm(tmp, sentences)

        def build(seed, spec):
            tok = transformers.PegasusTokenizer(spm_path)
            return build_model(*spec[1:3], tok, 60 + seed, sentences), tok, spec[3]
        for seed, (name, *_), model, hf_dir, ted_dir, tok in each_exported(tmp, MODELS, build):
            if seed == 0:
                check_layout(tok)
            check_model(name, ted_dir, model, tok, sentences, token_batches=False)
            if seed == 0:
                check_tokenizer_configs(tmp, hf_dir, sentences)
                check_pegasus_refusals(tmp, hf_dir)
            else:
                check_half(tmp, model, tok, logits_pairs(sentences))

if __name__ == "__main__":
    main()
    sys.exit(1 if failures() else 0)
