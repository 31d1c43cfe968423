#!/usr/bin/python3
"""ted against Hugging Face transformers' BartForConditionalGeneration
(BartTokenizer), on models exported with tools/export_hf.py.

    TED=build/ted .venv/bin/python tests/parity/test_bart.py

A byte-level BPE vocabulary (vocab.json, merges.txt) is trained here with
the tokenizers library on the multilingual sentences and more (emoji, CJK,
Cyrillic, Arabic, Devanagari, combining accents, digits, odd white space),
and two random-init models built from BartConfig are saved by
save_pretrained:
  bart-gelu      gelu, embeddings not scaled, add_prefix_space false
  bart-relu-scaled
                 relu, embeddings x sqrt(d_model), add_prefix_space true
Both are post-norm, with learned positional tables and layernorm_embedding,
tied embeddings, a random final_logits_bias, decoder_start_token_id </s>
and forced_bos_token_id <s>. Checks (one "ok NAME" or "FAIL NAME: why" line
each; exit 1 if one fails):
  export/*     tools/export_hf.py converts the directory
  tokenize/*   `ted tokenize` (source, and --target) against BartTokenizer's
               ids, every sentence; `ted tokenize --decode` of ids against
               BartTokenizer.decode(skip_special_tokens=True), invalid UTF-8
               included
  logits/*     `ted logits` against the teacher-forced logits of the model
               in float64: max abs diff <= 1e-4
  greedy/*     `ted translate --beam 1` against generate(num_beams=1): the
               ids (through `ted tokenize --decode`), and the text against
               BartTokenizer.decode(skip_special_tokens=True)
  beam/*       `ted translate --beam 4` against generate(num_beams=4,
               early_stopping=True, length_penalty=1.0)
  *-token-batches/*
               the same, ted batching by tokens (--max-batch-tokens 48,
               --workers 2)
  refuse/*     what the exporter cannot map: one line naming the key
  generate/bart-cnn
               a third model saved with bart-large-cnn's generation_config.json
               (num_beams 4, length_penalty 2.0, early_stopping, max_length
               142, min_length 56, no_repeat_ngram_size 3, forced BOS and
               EOS): `ted generate` with no option against generate() with no
               argument, on >= 95 % of the sentences (their ids)
TED_PARITY_KEEP=1 keeps the temporary directory (printed on stderr).
"""
import os
import random
import re
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))

from hf_parity import (check_decode, check_logits, check_refusals, check_token_ids,  # noqa: E402
                       check_translations, each_exported, export, generate_batches, ids_text,
                       pair_cases, raise_eos_bias, read_sentences, teacher_forced_logits,
                       ted_texts)
from ted_test import reference_transformers  # noqa: E402
from ted_test import (compare_lines, edit_json, failures, report,  # noqa: E402
                      scratch_directory, ted_lines)

MAX_LENGTH = 20
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]

EXTRA = [
    "Emoji: 😀👍🏽 👨‍👩‍👧 🇫🇷 and ❤️ again 😀😀",
    "东京是日本的首都，人口超过一千万。",
    "我喜欢喝茶，不喜欢喝咖啡。",
    "日本語のテキスト、カタカナとひらがな。",
    "서울은 한국의 수도입니다.",
    "Москва — столица России, ей 875 лет.",
    "Привет,   мир!  Как дела?",
    "مرحبا بالعالم، كيف حالك؟",
    "नमस्ते दुनिया, आप कैसे हैं?",
    "Ελληνικά: Καλημέρα κόσμε!",
    "עברית: שלום עולם",
    "ไทย: สวัสดีครับ",
    "Combining: e\u0301te\u0301 and n\u0303 and a\u030a",
    "Digits: 3.14159, 2,718, 1e10, ١٢٣ and ⅫⅣ ½",
    "Prices: $5.99, €12, £3.50 — 100% off!!!",
    "It's, we're, they've, I'm, you'll, he'd; IT'S and 'quoted' words.",
    "'s 't 're at the start, and '' and ''' marks",
    "Tabs\tand\t\tdouble\t tabs, spaces  ,  and   runs    of    them",
    "   leading spaces and trailing ones   ",
    "\u00a0no-break\u00a0spaces\u00a0and\u3000ideographic\u3000ones",
    "Mixed: abc123def 456ghi ___ --- ... ??? !!!",
    "URLs: https://example.com/path?q=1&r=2#frag and a@b.co",
    "Code: x = f(y[0]) + {z: 1}; // comment",
    "Zero\u200bwidth\u200dstuff and \u2028 separators",
    "Ünïcödé Çàsès ÀÉÎÕÜ ßẞ ﬁ ligature",
    "Symbols: © ® ™ § ¶ † ‡ • ‰ ′ ″ ‹ › « »",
    "Math: ∀x∈ℝ, x² ≥ 0 ⇒ √x² = |x|",
    "Long wordddddddddddddddddddddddddddddddddddddddddddddddddddd here",
    "a",
    "?",
    " ",
    "Repeated!!!!!!!!!!!!!!!!!!!!! punctuation,,,,,,,,",
]

MODELS = [
    ("bart-gelu", dict(d_model=32, encoder_attention_heads=4, decoder_attention_heads=4,
                       encoder_ffn_dim=64, decoder_ffn_dim=64, encoder_layers=2,
                       decoder_layers=2, activation_function="gelu", scale_embedding=False),
     False),
    ("bart-relu-scaled", dict(d_model=24, encoder_attention_heads=3, decoder_attention_heads=3,
                              encoder_ffn_dim=40, decoder_ffn_dim=40, encoder_layers=2,
                              decoder_layers=3, activation_function="relu",
                              scale_embedding=True), True),
]


def corpus():
    """The test's sentences: the multilingual ones, EXTRA, and mixtures of
    both with white space and punctuation moved about."""
    sentences = read_sentences() + EXTRA
    rng = random.Random(7)
    pieces = " \t  ,.!?'\"()-:;0123456789éü😀中文"
    for _ in range(60):
        a, b = rng.sample(sentences, 2)
        cut = rng.randrange(len(a) + 1)
        mixed = a[:cut] + "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 6))) + b
        sentences.append(mixed.replace("\n", " "))
    return sentences


def train_bpe(tmp, sentences):
    """vocab.json and merges.txt of a byte-level BPE trained on the
    sentences (every byte a token of its own, so nothing is unknown)."""
    from tokenizers import ByteLevelBPETokenizer
    trainer = ByteLevelBPETokenizer()
    trainer.train_from_iterator(sentences * 2, vocab_size=700, min_frequency=2,
                                special_tokens=SPECIALS, show_progress=False)
    os.makedirs(os.path.join(tmp, "bpe"), exist_ok=True)
    trainer.save_model(os.path.join(tmp, "bpe"))
    return [os.path.join(tmp, "bpe", name) for name in ("vocab.json", "merges.txt")]


def randomize(model, seed):
    """Weights scaled so that the logits are O(1-10); small embeddings and a
    large last LayerNorm keep greedy search from repeating its input."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=generator, dtype=p.dtype)
            if "layer_norm" in name or "layernorm" in name:
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.2 * noise)
            elif "shared" in name or "embed_positions" in name:
                p.copy_(0.1 * noise)
            elif p.dim() == 1:
                p.copy_(0.1 * noise)
            else:
                p.copy_(noise / p.shape[1] ** 0.5)
        norm = model.model.decoder.layers[-1].final_layer_norm
        norm.weight.mul_(10.0)
        norm.bias.mul_(10.0)
        model.final_logits_bias.copy_(0.1 * torch.randn(model.final_logits_bias.shape,
                                                        generator=generator))
    return model.eval()


def build_model(config, tok, seed, sentences):
    import transformers
    config = transformers.BartConfig(**dict(
        dict(vocab_size=len(tok), max_position_embeddings=128, dropout=0.0,
             attention_dropout=0.0, activation_dropout=0.0, pad_token_id=1, bos_token_id=0,
             eos_token_id=2, decoder_start_token_id=2, forced_bos_token_id=0,
             forced_eos_token_id=2), **config))
    model = randomize(transformers.BartForConditionalGeneration(config), seed)
    return raise_eos_bias(model, tok, sentences, skip=1)  # the forced <s> left out


# ---- checks -----------------------------------------------------------------------------

def check_tokenize(name, ted_dir, tok, sentences):
    check_token_ids(name, ted_dir, sentences,
                    [ids_text(tok(line).input_ids) for line in sentences],
                    [ids_text(tok(text_target=line, add_special_tokens=False).input_ids)
                     for line in sentences])


def check_bart_decode(name, ted_dir, tok, sentences):
    """`ted tokenize --decode` against BartTokenizer.decode: the ids of the
    sentences, and random ids (byte tokens that make invalid UTF-8, special
    tokens but <mask> among them, which ted writes) whose text has no line
    break or NUL (which ted's one-line text turns into spaces or drops)."""
    rng = random.Random(11)
    sequences = [tok(line).input_ids for line in sentences]
    for _ in range(200):
        ids = [rng.randrange(len(tok)) for _ in range(rng.randrange(1, 12))]
        sequences.append([i for i in ids if i not in (tok.eos_token_id, tok.mask_token_id)])
    texts = [tok.decode(ids, skip_special_tokens=True) for ids in sequences]
    check_decode(f"tokenize/{name}-decode", ted_dir, tok, [
        ids for ids, text in zip(sequences, texts)
        if "\n" not in text and "\r" not in text and "\0" not in text])


def reference_logits(model, tok, pair):
    """Teacher-forced logits, float64: the decoder fed </s>, <s>, then the
    target's tokens (a row after each)."""
    source, target = pair
    return teacher_forced_logits(model, tok(source).input_ids, [
        model.config.decoder_start_token_id, model.config.forced_bos_token_id] +
        tok(text_target=target, add_special_tokens=False).input_ids)


def hf_texts(model, tok, lines, **options):
    out = []
    for result in generate_batches(model, tok, lines, do_sample=False, max_length=MAX_LENGTH,
                                   **options):
        out += tok.batch_decode(result, skip_special_tokens=True)
    return out


def check_bart_translations(name, ted_dir, model, tok, sentences):
    """check_translations, and GREEDY-OR-BEAM/NAME-text: the text of ted's
    translations against BartTokenizer.decode of generate()'s."""
    def texts(kind, lines, options, got):
        want = hf_texts(model, tok, lines, **options)
        keep = [i for i, text in enumerate(want) if "\n" not in text and "\r" not in text]
        compare_lines(f"{kind}/{name}-text", got, want, lines,
                      "texts equal to BartTokenizer.decode", among=keep)
    check_translations(name, ted_dir, model, tok, sentences, then=texts)


# bart-large-cnn's generation_config.json
CNN_GENERATION = {"bos_token_id": 0, "decoder_start_token_id": 2, "early_stopping": True,
                  "eos_token_id": 2, "forced_bos_token_id": 0, "forced_eos_token_id": 2,
                  "length_penalty": 2.0, "max_length": 142, "min_length": 56,
                  "no_repeat_ngram_size": 3, "num_beams": 4, "pad_token_id": 1}
CNN_SENTENCES = 40
CNN_AGREEMENT = 0.95


def check_generate_cnn(tmp, tok, sentences):
    """`ted generate` with no option against generate() with no argument, on
    a model saved with bart-large-cnn's generation settings (positions for
    its 142 tokens)."""
    import json
    import transformers
    hf_dir, ted_dir = os.path.join(tmp, "hf-cnn"), os.path.join(tmp, "ted-cnn")
    model = build_model(dict(MODELS[0][1], max_position_embeddings=160), tok, 90, sentences)
    model.save_pretrained(hf_dir)
    tok.save_pretrained(hf_dir)
    with open(os.path.join(hf_dir, "generation_config.json"), "w") as f:
        json.dump(CNN_GENERATION, f)
    problem = export(hf_dir, ted_dir)
    if problem:
        return report("generate/bart-cnn", problem)
    model = transformers.BartForConditionalGeneration.from_pretrained(hf_dir).eval()
    lines = sentences[:CNN_SENTENCES]
    got, problem = ted_lines(["generate", "-m", ted_dir], lines)
    if problem:
        return report("generate/bart-cnn", problem)
    ids = [[i for i in row[1:] if i != tok.pad_token_id]
           for out in generate_batches(model, tok, lines, 20) for row in out.tolist()]
    want, problem = ted_texts(ted_dir, ids)
    if problem:
        return report("generate/bart-cnn", problem)
    lengths = sorted(len(i) for i in ids)
    compare_lines("generate/bart-cnn", got, want, lines, "sentences", CNN_AGREEMENT,
                  note=f" (generate()'s lengths {lengths[0]} to {lengths[-1]} tokens)")


def check_bart_refusals(tmp, hf_dir):
    """What the exporter cannot map, each refused with one line naming it."""
    cases = [
        ("errors", edit_json("tokenizer_config.json", errors="strict"), "errors \"strict\""),
        ("forced-bos", edit_json("generation_config.json", forced_bos_token_id=5),
         "forced_bos_token_id 5"),
        ("tokenizer-class", edit_json("tokenizer_config.json",
                                      tokenizer_class="RobertaTokenizer"),
         "tokenizer_class RobertaTokenizer"),
        ("merges", lambda d: os.remove(os.path.join(d, "merges.txt")), "merges.txt"),
    ]
    check_refusals(tmp, "refuse/", [(case, hf_dir, re.escape(named), edit)
                                    for case, edit, named in cases])


def main():
    transformers = reference_transformers("tokenizers")
    if not transformers:
        return
    sentences = corpus()
    with scratch_directory("ted-bart-") as tmp:
        vocab_file, merges_file = train_bpe(tmp, sentences)

        def build(seed, spec):
            _, config, prefix = spec
            tok = transformers.BartTokenizer(vocab_file, merges_file, add_prefix_space=prefix)
            return build_model(config, tok, 70 + seed, sentences), tok, True
        for seed, (name, *_), model, hf_dir, ted_dir, tok in each_exported(tmp, MODELS, build):
            check_tokenize(name, ted_dir, tok, sentences)
            check_bart_decode(name, ted_dir, tok, sentences)
            pairs = list(zip(sentences[:8], sentences[8:16]))
            check_logits(f"logits/{name}", ted_dir, model,
                         lambda m, pair: reference_logits(m, tok, pair), pair_cases(pairs))
            check_bart_translations(name, ted_dir, model, tok, sentences)
            if seed == 0:
                check_bart_refusals(tmp, hf_dir)
                check_generate_cnn(tmp, tok, sentences)


if __name__ == "__main__":
    main()
    sys.exit(1 if failures() else 0)
