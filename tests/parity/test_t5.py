#!/usr/bin/python3
"""ted against Hugging Face transformers' T5ForConditionalGeneration and
MT5ForConditionalGeneration (T5Tokenizer), on models exported with
tools/export_hf.py.

    TED=build/ted .venv/bin/python tests/parity/test_t5.py

Two random-init models built from T5Config / MT5Config and saved by
save_pretrained, with a SentencePiece model trained here in T5's layout
(<pad> 0, </s> 1, <unk> 2, no <s>):
  t5-relu-tied       the original T5: relu, output tied to the embedding
                     (scaled by d_model^-0.5), model.safetensors
  mt5-gated-untied   v1.1 / mT5: gated-gelu (the tanh GELU), a separate
                     lm_head, heads * d_kv != d_model, 32 buckets, the
                     decoder started from another token than <pad> (as
                     MADLAD-400's is), pytorch_model.bin
and a MADLAD-400-style model (madlad: gated-gelu, untied, <unk> 0, <pad> 1,
</s> 2, the decoder started from 0, the target chosen by <2xx> pieces of
its SentencePiece model at the start of the source). All have relative position buckets whose log-spaced range the sentences
reach. Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one
fails):
  export/*     tools/export_hf.py converts the directory
  tokenize/*   `ted tokenize` (source, and --target) against T5Tokenizer's ids
  logits/*     `ted logits` against the teacher-forced logits of the model
               in float64: max abs diff <= 1e-4
  greedy/*     `ted translate --beam 1` against generate(num_beams=1),
               token for token (through `ted tokenize --decode` of its ids)
  beam/*       `ted translate --beam 4` against generate(num_beams=4,
               early_stopping=True, length_penalty=1.0)
  greedy-token-batches/*, beam-token-batches/*  the same with
               --max-batch-tokens 48 --workers 2 (batches of sentences of
               different lengths, two at once)
  half/*       the second model saved in float16: exported (upcast to F32),
               its logits against those of the model transformers loads
               from the float16 directory, upcast
  int8/*       `ted quantize` of the model: its logits within a bound of
               transformers' and its greedy translations mostly the same
  refuse/*     what the exporter cannot map: one line naming the key
  madlad/*     `ted tokenize` of "<2xx> text" and `ted translate --target-lang xx`
               (greedy and beam 4) against T5Tokenizer and generate() on
               "<2xx> " + the sentence; the text's own "<2xx> " with no
               --target-lang
TED_PARITY_KEEP=1 keeps the temporary directory (printed on stderr).
"""
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))

from hf_parity import (BEAM_SENTENCES, SEARCHES, TRANSLATED, check_logits,  # noqa: E402
                       check_refusals, check_token_ids, check_translations, each_exported,
                       eos_gap, export, export_half, hf_generate, ids_text, logits_difference,
                       pair_cases, read_sentences, teacher_forced_logits, ted_texts, train_spm,
                       translate_args, translations)
from ted_test import reference_transformers  # noqa: E402
from ted_test import (TED, compare_lines, edit_json, failures, report, run,  # noqa: E402
                      scratch_directory, ted_lines)

INT8_LOGITS = 0.5        # max abs diff of the int8 model's logits (logits are O(1-10))
INT8_AGREEMENT = 0.5     # of its greedy translations equal to transformers'

# (name, class, config, safetensors)
MODELS = [
    ("t5-relu-tied", "T5", dict(d_model=32, d_kv=8, num_heads=4, d_ff=64, num_layers=2,
                                num_decoder_layers=3, feed_forward_proj="relu",
                                tie_word_embeddings=True, relative_attention_num_buckets=8,
                                relative_attention_max_distance=20), True),
    ("mt5-gated-untied", "MT5", dict(d_model=24, d_kv=10, num_heads=3, d_ff=40, num_layers=2,
                                     num_decoder_layers=2, feed_forward_proj="gated-gelu",
                                     tie_word_embeddings=False,
                                     relative_attention_num_buckets=32,
                                     relative_attention_max_distance=128,
                                     decoder_start_token_id=3), False),
]


# ---- building the models ---------------------------------------------------------------

def randomize(model, seed):
    """Weights scaled so that the logits are O(1-10), attention is far from
    uniform and the position biases matter."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=generator, dtype=p.dtype)
            if "layer_norm" in name:
                p.copy_(1.0 + 0.2 * noise)
            elif "relative_attention_bias" in name or "shared" in name or "lm_head" in name:
                p.copy_(noise)
            else:
                p.copy_(noise / p.shape[1] ** 0.5)
    return model.eval()


def favour_eos(model, tok, sentences):
    """Moves EOS's output row along the mean final hidden state until EOS is
    the most likely token at about one greedy step in twenty, so that
    translations end at various lengths."""
    gap, out = eos_gap(model, tok, sentences, output_hidden_states=True)
    with torch.no_grad():
        hidden = torch.cat([step[-1][:, -1] for step in out.decoder_hidden_states])
        if model.config.tie_word_embeddings:
            hidden = hidden * model.config.d_model ** -0.5
        mean = hidden.mean(0)
        model.get_output_embeddings().weight[tok.eos_token_id] += gap * mean / mean.dot(mean)
    return model


def build_model(kind, config, tok, seed, sentences):
    import transformers
    config_class = getattr(transformers, kind + "Config")
    model_class = getattr(transformers, kind + "ForConditionalGeneration")
    config = config_class(**dict(dict(vocab_size=len(tok) + 28, dropout_rate=0.0,
                                      pad_token_id=0, eos_token_id=1,
                                      decoder_start_token_id=0), **config))
    model = randomize(model_class(config), seed)
    return favour_eos(model, tok, sentences)


# ---- checks -----------------------------------------------------------------------------

def check_tokenize(name, ted_dir, tok, sentences):
    check_token_ids(name, ted_dir, sentences,
                    [ids_text(tok(line).input_ids) for line in sentences],
                    [ids_text(tok(text_target=line).input_ids[:-1]) for line in sentences])


def reference_logits(model, tok, pair):
    """Teacher-forced logits, float64: the decoder fed its start, then the
    target's tokens."""
    source, target = pair
    return teacher_forced_logits(model, tok(source).input_ids, [
        model.config.decoder_start_token_id] + tok(text_target=target,
                                                  add_special_tokens=False).input_ids)


def t5_logits(name, ted_dir, model, tok, pairs):
    """check_logits with T5's reference_logits (Pegasus's too)."""
    check_logits(name, ted_dir, model, lambda m, pair: reference_logits(m, tok, pair),
                 pair_cases(pairs))


def check_model(name, ted_dir, model, tok, sentences, token_batches=True):
    """tokenize/*, logits/* and the translations' checks of a model of T5's
    SentencePiece layout (T5's, Pegasus's)."""
    check_tokenize(name, ted_dir, tok, sentences)
    t5_logits(f"logits/{name}", ted_dir, model, tok, logits_pairs(sentences))
    check_translations(name, ted_dir, model, tok, sentences, token_batches)


def check_int8(name, ted_dir, model, tok, sentences, pairs):
    """`ted quantize`: every matrix int8, the relative position tables
    dequantized at load; the logits near transformers' float ones."""
    out_dir = ted_dir + "-int8"
    status, _, err = run([TED, "quantize", ted_dir, out_dir])
    if status != 0:
        return report(f"int8/{name}", f"ted quantize exited {status}: {err.strip()[-200:]}")
    worst, largest = logits_difference(out_dir, model,
                                       lambda m, pair: reference_logits(m, tok, pair),
                                       pair_cases(pairs), INT8_LOGITS)
    if worst is None:
        return report(f"int8/{name}-logits", largest)
    report(f"int8/{name}-logits", detail=f"max abs diff {worst:.2e}")
    result = translations(f"int8/{name}-greedy", out_dir, model, tok, sentences[:TRANSLATED],
                          *SEARCHES[0][1:])
    if result:
        compare_lines(f"int8/{name}-greedy", *result, sentences[:TRANSLATED], "sentences",
                      INT8_AGREEMENT)


def check_half(tmp, model, tok, pairs):
    half = export_half(tmp, model, tok)
    if half:
        t5_logits("half/logits", half[1], half[0], tok, pairs)


def check_t5_refusals(tmp, hf_dir):
    check_refusals(tmp, "refuse/", [
        ("feed-forward", hf_dir, r"config\.json: feed_forward_proj \"gated-tanh\" is not supported",
         edit_json("config.json", feed_forward_proj="gated-tanh")),
        ("umt5", hf_dir, r"config\.json: model_type \"umt5\"",
         edit_json("config.json", model_type="umt5")),
        ("no-spiece", hf_dir, r"spiece\.model: missing",
         lambda d: os.remove(os.path.join(d, "spiece.model"))),
        ("extra-bias", hf_dir, r"tensor encoder\.block\.1\.layer\.0\.SelfAttention\."
         r"relative_attention_bias\.weight is not part of", add_bias_to_block_1),
    ])


def add_bias_to_block_1(hf_dir):
    """A relative position table in a second block (as UMT5 has one per
    layer), which T5ForConditionalGeneration has not."""
    from safetensors.torch import load_file, save_file
    path = os.path.join(hf_dir, "model.safetensors")
    tensors = load_file(path)
    first = "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"
    tensors[first.replace("block.0", "block.1")] = tensors[first].clone()
    save_file(tensors, path, metadata={"format": "pt"})


# ---- MADLAD-400 style --------------------------------------------------------------------

MADLAD_CODES = ("fr", "es", "de", "pt")
MADLAD_CONFIG = dict(d_model=24, d_kv=8, num_heads=3, d_ff=40, num_layers=2,
                     num_decoder_layers=2, feed_forward_proj="gated-gelu",
                     tie_word_embeddings=False, relative_attention_num_buckets=16,
                     relative_attention_max_distance=64, pad_token_id=1, eos_token_id=2,
                     decoder_start_token_id=0)


def train_madlad_spm(tmp, sentences):
    """MADLAD-400's layout: <unk> 0, <pad> 1, </s> 2, and the <2xx> target
    tags as user-defined pieces (T5Tokenizer keeps them whole)."""
    return train_spm(tmp, sentences, "madlad", unk_id=0, pad_id=1, eos_id=2,
                     user_defined_symbols=[f"<2{c}>" for c in MADLAD_CODES])


def madlad_translations(name, ted_dir, model, tok, sentences, code, search, text_code=False):
    """ted's translations into `code` (--target-lang, or with text_code the
    text's own "<2xx> ") against generate() on "<2xx> " + each sentence;
    `search`: one of SEARCHES."""
    _, beam, options = search
    tagged = [f"<2{code}> {line}" for line in sentences]
    got, problem = ted_lines(translate_args(ted_dir, beam) +
                             ([] if text_code else ["--target-lang", code]),
                             tagged if text_code else sentences)
    if problem:
        return report(name, problem)
    want, problem = ted_texts(ted_dir, hf_generate(model, tok, tagged, **options))
    if problem:
        return report(name, problem)
    compare_lines(name, got, want, sentences, "sentences",
                  note=f" ({len(set(want))} different translations)")


def check_madlad(tmp, sentences):
    import transformers
    tok = transformers.T5Tokenizer(train_madlad_spm(tmp, sentences), legacy=True,
                                   pad_token="<pad>", unk_token="<unk>", eos_token="</s>")
    model = build_model("T5", MADLAD_CONFIG, tok, 50, sentences)
    hf_dir, ted_dir = os.path.join(tmp, "hf-madlad"), os.path.join(tmp, "ted-madlad")
    model.save_pretrained(hf_dir)
    tok.save_pretrained(hf_dir)
    problem = export(hf_dir, ted_dir)
    report("madlad/export", problem, "decoder start 0, pad 1, <2xx> codes")
    if problem:
        return
    tok = transformers.T5Tokenizer.from_pretrained(hf_dir)
    tagged = [f"<2{MADLAD_CODES[i % 4]}> {line}" for i, line in enumerate(sentences)]
    got, problem = ted_lines(["tokenize", "-m", ted_dir], tagged)
    if problem:
        report("madlad/tokenize", problem)
    else:
        compare_lines("madlad/tokenize", got, [ids_text(tok(t).input_ids) for t in tagged],
                      tagged, "sentences")
    madlad_translations("madlad/greedy-fr", ted_dir, model, tok, sentences[:TRANSLATED],
                        "fr", SEARCHES[0])
    madlad_translations("madlad/beam-es", ted_dir, model, tok, sentences[:BEAM_SENTENCES],
                        "es", SEARCHES[1])
    madlad_translations("madlad/text-code-de", ted_dir, model, tok,
                        sentences[TRANSLATED:2 * TRANSLATED], "de", SEARCHES[0], text_code=True)


def logits_pairs(sentences):
    return [(sentences[0], sentences[15]), (sentences[65], sentences[44]),
            (sentences[120], ""), (sentences[200], sentences[100] + " " + sentences[101])]


def main():
    transformers = reference_transformers()
    if not transformers:
        return
    sentences = read_sentences()
    with scratch_directory("ted-t5-") as tmp:
        spm_path = train_spm(tmp, sentences)

        def build(seed, spec):
            tok = transformers.T5Tokenizer(spm_path, legacy=True)
            return build_model(*spec[1:3], tok, 40 + seed, sentences), tok, spec[3]
        for seed, (name, *_), model, hf_dir, ted_dir, tok in each_exported(tmp, MODELS, build):
            check_model(name, ted_dir, model, tok, sentences)
            if seed == 0:
                check_int8(name, ted_dir, model, tok, sentences, logits_pairs(sentences))
                check_t5_refusals(tmp, hf_dir)
            else:
                check_half(tmp, model, tok, logits_pairs(sentences))
        check_madlad(tmp, sentences)


if __name__ == "__main__":
    main()
    sys.exit(1 if failures() else 0)
