#!/usr/bin/python3
"""ted against Hugging Face transformers on the multilingual families:
NLLB-200 (M2M100ForConditionalGeneration + NllbTokenizer), M2M-100
(M2M100ForConditionalGeneration + M2M100Tokenizer) and mBART-50
(MBartForConditionalGeneration + MBart50Tokenizer), exported with
tools/export_hf.py.

    TED=build/ted .venv/bin/python tests/parity/test_multilingual.py

Small random models built with transformers itself and saved by
save_pretrained as a hub download has them (NLLB as pytorch_model.bin,
M2M-100 and mBART-50 as model.safetensors), over one SentencePiece BPE
model trained here on tests/data/multilingual-sentences.txt (214 sentences
in 24 languages and 15 scripts, half of them with odd white space: tabs,
double spaces, U+00A0, U+2009, U+3000, at either end). The tokenizers are
the ones from_pretrained loads from the saved directories. Checks (one "ok
NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  tokenize/*  `ted tokenize` against the tokenizer on every sentence: the
              source ids (the text's and EOS; the language code is the
              logits' check), the target ids, and the text of target ids
              (`ted tokenize --decode` against decode(skip_special_tokens))
  logits/*    `ted logits --source-lang --target-lang` against the model's
              teacher-forced logits (float64), the decoder fed
              [decoder start, target code] + target: max abs diff <= 1e-4
  greedy/*    `ted translate --beam 1` against generate(num_beams=1,
              forced_bos_token_id=code), in two directions of the NLLB
              model and one of the others: identical on >= 99 % of the
              sentences whose top-2 margin stays above 1e-3 at every step
              (the ids compared through ted's detokenizer)
  beam/*      `ted translate --beam 4` against generate(num_beams=4,
              early_stopping=True): identical on >= 95 %
  export/*    each family exports; NLLB's legacy_behaviour (the source's code
              after EOS) exports and gives the legacy tokenizer's logits;
              what cannot be mapped (mBART-25's tokenizer, a missing
              SentencePiece model, unknown M2M-100 language_codes, a
              tensor of another shape) is refused: exit 1, one line naming it
  int8/*      `ted quantize` of the mBART-50 model (its learned positional
              tables int8 too) against the model with the dequantized
              weights: max abs diff <= 0.5, test_int8.py's bound (ted
              quantizes the activations as well)
  half/*      the NLLB model saved in float16 (pytorch_model.bin) and
              bfloat16 (model.safetensors) exports; its logits, and those of
              the float32 export rewritten with F16 and BF16 tensors (ted's
              own reader upcasting), match the upcast model's within 1e-4
TED_PARITY_KEEP=1 keeps the temporary directory (printed on stderr).
"""
import json
import os
import sys

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))

from hf_parity import (EXPORTER, PYTHON, SEARCHES, TOLERANCE, check_decode,  # noqa: E402
                       check_logits, check_refusals, check_token_ids, each_exported, export,
                       generate_batches, ids_text, read_sentences, save_and_export,
                       teacher_forced_logits, ted_texts, train_spm)
from ted_test import reference_transformers  # noqa: E402
from ted_test import (TED, compare_lines, edit_json, failures, report, run,  # noqa: E402
                      scratch_directory, ted_lines, ted_problem)

GREEDY_AGREEMENT = 0.99
BEAM_AGREEMENT = 0.95
MARGIN = 1e-3
BEAM_SENTENCES = 64
MAX_POSITIONS = 128
LOGITS_VS_DEQUANTIZED = 0.5  # tests/parity/test_int8.py's

# (name, tokenizer class, model class, sizes: d_model, heads, encoder and
#  decoder layers, ffn; saved as safetensors; directions (source, target))
MODELS = [
    ("nllb", "NllbTokenizer", "m2m", (32, 4, 2, 2, 64), False,
     [("eng_Latn", "fra_Latn"), ("fra_Latn", "deu_Latn")]),
    ("m2m100", "M2M100Tokenizer", "m2m", (48, 4, 2, 3, 96), True, [("__en__", "__fr__")]),
    ("mbart50", "MBart50Tokenizer", "mbart", (32, 2, 2, 2, 64), True, [("en_XX", "fr_XX")]),
]


# ---- building the models ------------------------------------------------------------

def train_nllb_spm(tmp, sentences):
    """A SentencePiece BPE model with NLLB's layout (<unk> <s> </s> first)."""
    return train_spm(tmp, sentences, "spm", "bpe", 900, unk_id=0, bos_id=1, eos_id=2, pad_id=-1)


def m2m100_vocab(tmp, spm_path):
    """vocab.json as M2M-100 has it: the fairseq dictionary (<s> <pad> </s>
    <unk>, then the pieces), a few pieces left out (they become <unk>)."""
    import sentencepiece as spm
    processor = spm.SentencePieceProcessor(model_file=spm_path)
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for i in range(3, processor.get_piece_size()):
        if i % 97:
            vocab[processor.id_to_piece(i)] = len(vocab)
    path = os.path.join(tmp, "vocab.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    return path


def make_tokenizer(kind, tmp, spm_path):
    import transformers
    if kind == "M2M100Tokenizer":
        return transformers.M2M100Tokenizer(vocab_file=m2m100_vocab(tmp, spm_path),
                                            spm_file=spm_path)
    return getattr(transformers, kind)(vocab_file=spm_path)


def vocab_size(tok):
    """The embedding rows: every id the tokenizer gives, and for M2M-100
    its 8 made-up words after the language codes."""
    if hasattr(tok, "lang_token_to_id") and hasattr(tok, "encoder"):
        return len(tok.encoder) + len(tok.lang_token_to_id) + 8
    return len(tok)


def randomize(model, seed):
    """Parameters scaled so that the logits are O(10) and the translations
    depend on the source: with N(0, 1) embeddings and 1/sqrt(fan_in) Linear
    weights, the embeddings swamp the residual stream of a pre-norm stack
    and every sentence gets the same translation, so the embeddings are
    smaller and the sublayers' outputs larger."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=generator)
            if "norm" in name:
                p.copy_(1.0 + 0.2 * noise if name.endswith("weight") else 0.2 * noise)
            elif "shared" in name or "embed_tokens" in name or "lm_head" in name:
                p.copy_(0.5 * noise)
            elif p.dim() == 2:  # queries and keys as usual: attention not too sharp
                gain = 1.0 if "q_proj" in name or "k_proj" in name else 3.0
                p.copy_(gain * noise / p.shape[1] ** 0.5)
            else:
                p.copy_(0.3 * noise)
    return model.eval()


def build_model(kind, tok, sizes, seed):
    import transformers
    d, heads, enc, dec, ffn = sizes
    common = dict(vocab_size=vocab_size(tok), d_model=d, encoder_layers=enc,
                  decoder_layers=dec, encoder_attention_heads=heads,
                  decoder_attention_heads=heads, encoder_ffn_dim=ffn, decoder_ffn_dim=ffn,
                  max_position_embeddings=MAX_POSITIONS, dropout=0.0, attention_dropout=0.0,
                  activation_dropout=0.0, decoder_start_token_id=2)
    if kind == "m2m":
        model = transformers.M2M100ForConditionalGeneration(transformers.M2M100Config(**common))
    else:
        model = transformers.MBartForConditionalGeneration(
            transformers.MBartConfig(scale_embedding=True, **common))
    return randomize(model, seed)


# ---- checks ---------------------------------------------------------------------------

def hf_language(tok, code):
    """The language as the tokenizer takes it: M2M100Tokenizer's "fr" for
    the token __fr__, the others' codes as they are."""
    return code[2:-2] if type(tok).__name__ == "M2M100Tokenizer" else code


def check_tokenize(name, ted_dir, tok, sentences, code):
    """Source and target ids of every sentence (the code tokens aside),
    then the text of target ids."""
    tok.src_lang = tok.tgt_lang = hf_language(tok, code)
    source = [tok(line).input_ids for line in sentences]
    target = [tok(text_target=line).input_ids for line in sentences]
    codes = {tok.convert_tokens_to_ids(code)}
    check_token_ids(name, ted_dir, sentences,
                    [ids_text([i for i in ids if i not in codes]) for ids in source],
                    [ids_text([i for i in ids if i not in codes][:-1]) for ids in target])
    rng = np.random.default_rng(5)
    eos = tok.eos_token_id
    sequences = [[i for i in ids if i not in codes and i != eos] for ids in target]
    # ted's text drops the special tokens it knows (BOS, padding, unknown,
    # the language codes); the tokenizer's <mask> is none of them
    mask = tok.convert_tokens_to_ids("<mask>") if "<mask>" in tok.get_vocab() else None
    sequences += [[int(i) for i in rng.integers(4, len(tok), rng.integers(0, 16))]
                  for _ in range(200)]
    check_decode(f"tokenize/{name}-decode", ted_dir, tok,
                 [ids for ids in sequences if eos not in ids and mask not in ids])


def reference_logits(model, tok, pair, languages):
    """The model's teacher-forced logits, float64: the source as the
    tokenizer makes it, the decoder fed its start, the target code and the
    target's tokens."""
    source, target = pair
    tok.src_lang, tok.tgt_lang = (hf_language(tok, code) for code in languages)
    code = tok.convert_tokens_to_ids(languages[1])
    target_ids = tok(text_target=target, add_special_tokens=False).input_ids
    return teacher_forced_logits(model, tok(source).input_ids,
                                 [model.config.decoder_start_token_id, code] + target_ids)


def language_logits(name, ted_dir, model, tok, pairs, directions, tolerance=TOLERANCE):
    """check_logits of each pair in each direction (source, target):
    `ted logits --source-lang --target-lang`."""
    check_logits(name, ted_dir, model, lambda m, case: reference_logits(m, tok, *case),
                 [(["--source", s, "--target", t, "--source-lang", a, "--target-lang", b],
                   ((s, t), (a, b))) for a, b in directions for s, t in pairs], tolerance)


def hf_generate(model, tok, sentences, languages, **options):
    """generate()'s target ids (decoder start and code dropped, cut at EOS)
    and each sentence's smallest top-2 margin over its greedy steps."""
    tok.src_lang = hf_language(tok, languages[0])
    code = tok.convert_tokens_to_ids(languages[1])
    out, margins = [], []
    for result in generate_batches(model, tok, sentences, forced_bos_token_id=code,
                                   do_sample=False, output_scores=True,
                                   return_dict_in_generate=True, **options):
        scores = torch.stack(result.scores[1:], 1) if len(result.scores) > 1 else None
        for row, ids in enumerate(result.sequences.tolist()):
            ids = ids[2:]
            end = ids.index(tok.eos_token_id) if tok.eos_token_id in ids else len(ids)
            out.append(ids[:end])
            if scores is None or options.get("num_beams", 1) > 1:
                margins.append(float("inf"))
                continue
            top = torch.topk(scores[row, :end + 1].float(), 2, dim=-1).values
            margins.append(float((top[:, 0] - top[:, 1]).min()) if len(top) else 0.0)
    return out, margins


def check_translations(name, ted_dir, model, tok, sentences, directions):
    for source, target in directions:
        direction = f"{name}-{source}-{target}"
        for kind, beam, options in SEARCHES:
            if kind == "beam" and (source, target) != directions[0]:
                continue
            lines = sentences if kind == "greedy" else sentences[:BEAM_SENTENCES]
            args = ["translate", "-m", ted_dir, "--beam", beam, "--source-lang", source,
                    "--target-lang", target]
            if kind == "beam":
                args += ["--length-normalization", "power", "--length-penalty", "1.0"]
            got, problem = ted_lines(args, lines)
            if problem:
                report(f"{kind}/{direction}", problem)
                continue
            ids, margins = hf_generate(model, tok, lines, (source, target), **options)
            want, problem = ted_texts(ted_dir, ids)
            if problem:
                report(f"{kind}/{direction}", problem)
                continue
            if kind == "greedy":
                clear = [i for i, m in enumerate(margins) if m > MARGIN]
                compare_lines(f"{kind}/{direction}", got, want, lines, "sentences",
                              GREEDY_AGREEMENT, f" of {len(clear)} with top-2 margins > {MARGIN} "
                              f"({len(set(want))} different translations)", among=clear)
            else:
                compare_lines(f"{kind}/{direction}", got, want, lines, "sentences",
                              BEAM_AGREEMENT)


# ---- the exporter's refusals, NLLB's legacy order -----------------------------------

def shrink_tensor(name):
    def edit(hf_dir):
        from safetensors.torch import load_file, save_file
        path = os.path.join(hf_dir, "model.safetensors")
        tensors = load_file(path)
        tensors[name] = tensors[name][:-1].clone()
        save_file(tensors, path, metadata={"format": "pt"})
    return edit


def check_multilingual_refusals(tmp):
    """What the exporter cannot map, in copies of the models' directories."""
    mbart50, m2m100 = os.path.join(tmp, "hf-mbart50"), os.path.join(tmp, "hf-m2m100")
    check_refusals(tmp, "export/refuses-", [
        ("mbart25-tokenizer", mbart50, r"tokenizer_config\.json: tokenizer_class "
         r"MBartTokenizer: .*mBART-25",
         edit_json("tokenizer_config.json", tokenizer_class="MBartTokenizer")),
        ("no-spm", mbart50, r"sentencepiece\.bpe\.model: missing",
         lambda d: os.remove(os.path.join(d, "sentencepiece.bpe.model"))),
        ("language-codes", m2m100, r"tokenizer_config\.json: language_codes \"xx\"",
         edit_json("tokenizer_config.json", language_codes="xx")),
        ("positions-shape", mbart50,
         r"tensor model\.encoder\.embed_positions\.weight has shape",
         shrink_tensor("model.encoder.embed_positions.weight")),
    ])


def check_legacy(model, tok_class, pairs, tmp):
    """NLLB with legacy_behaviour: the source's code after EOS."""
    import shutil
    hf_dir = os.path.join(tmp, "hf-nllb-legacy")
    shutil.copytree(os.path.join(tmp, "hf-nllb"), hf_dir)
    edit_json("tokenizer_config.json", legacy_behaviour=True)(hf_dir)
    problem = export(hf_dir, hf_dir + "-ted")
    report("export/nllb-legacy", problem, "legacy_behaviour: true")
    if problem is None:
        tok = tok_class.from_pretrained(hf_dir)
        language_logits("logits/nllb-legacy", hf_dir + "-ted", model, tok, pairs[:2],
                        [("eng_Latn", "fra_Latn")])


def check_languages_option(tmp):
    """--languages: config.yaml's top-level languages, which `ted info` then
    lists: the codes (each to and from the others) and the directions
    given, in the tokenizer's order; a code the tokenizer lacks is refused."""
    hf_dir = os.path.join(tmp, "hf-nllb")
    spec = "eng_Latn>fra_Latn, fra_Latn > eng_Latn,spa_Latn,deu_Latn"
    status, _, err = run([PYTHON, EXPORTER, hf_dir, "--out", hf_dir + "-served",
                          "--languages", spec])
    report("export/languages-option", None if status == 0 else err.strip()[:300])
    if status != 0:
        return
    with open(os.path.join(hf_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        order = json.load(f)["additional_special_tokens"]
    plain = {"spa_Latn", "deu_Latn"}
    pairs = {("eng_Latn", "fra_Latn"), ("fra_Latn", "eng_Latn")} | \
        {(a, b) for a in plain for b in plain if a != b}
    codes = [c for c in order if c in plain | {"eng_Latn", "fra_Latn"}]
    want = [f"source languages: {len(codes)} ({' '.join(codes)})",
            f"target languages: {len(codes)} ({' '.join(codes)})",
            f"directions: {len(pairs)} (" + " ".join(
                f"{a}>{b}" for a in codes for b in codes if (a, b) in pairs) + ")"]
    status, out, err = run([TED, "info", "-m", hf_dir + "-served"])
    got = [line for line in out.splitlines()
           if line.startswith(("source languages", "target languages", "directions"))]
    report("export/languages-info", None if got == want else f"{got} != {want}")
    status, _, err = run([PYTHON, EXPORTER, hf_dir, "--out", hf_dir + "-bad",
                          "--languages", "eng_Latn>xxx_Latn"])
    good = status == 1 and '--languages: "xxx_Latn" is not a language code' in err
    report("export/languages-option-refuses", None if good else f"exit {status}: {err[:300]}")


# ---- int8 ------------------------------------------------------------------------------

def check_int8(name, ted_dir, model, tok, pairs, languages, tmp):
    """`ted quantize` of the model (every matrix int8, mBART's positional
    tables too) against the model with those weights dequantized (q *
    scale): within LOGITS_VS_DEQUANTIZED, as tests/parity/test_int8.py
    holds the tutorial model (ted also quantizes the activations)."""
    import copy

    from safetensors.numpy import load_file
    int8_dir = os.path.join(tmp, f"ted-{name}-int8")
    _, problem = ted_problem(["quantize", ted_dir, int8_dir])
    if problem:
        return report(f"int8/{name}", problem)
    tensors = load_file(os.path.join(int8_dir, "model.safetensors"))
    dequantized = copy.deepcopy(model)
    params = dict(dequantized.named_parameters())
    with torch.no_grad():
        for tensor, q in tensors.items():
            if q.dtype == np.int8:
                scale = tensors[tensor + ".scale"][:, None]
                params[tensor].copy_(torch.from_numpy(q.astype(np.float32) * scale))
    language_logits(f"int8/{name}", int8_dir, dequantized, tok, pairs, [languages],
                    LOGITS_VS_DEQUANTIZED)


# ---- half precision ---------------------------------------------------------------------

def rewrite_weights(ted_dir, out_dir, dtype):
    """A copy of the ted directory whose model.safetensors holds every
    tensor as `dtype` (torch.float16 or torch.bfloat16)."""
    import shutil

    from safetensors.torch import load_file, save_file
    shutil.copytree(ted_dir, out_dir)
    path = os.path.join(out_dir, "model.safetensors")
    save_file({k: v.to(dtype) for k, v in load_file(path).items()}, path)
    return out_dir


def check_half(model, tok, pairs, directions, tmp):
    """The NLLB model saved in float16 and bfloat16: exported (upcast), and
    its float32 export stored back as F16 and BF16 for ted's reader."""
    for dtype, label, safetensors in ((torch.float16, "f16", False),
                                     (torch.bfloat16, "bf16", True)):
        half = type(model)(model.config)
        half.load_state_dict(model.state_dict())
        half = half.to(dtype)
        dirs = save_and_export(f"nllb-{label}", half, tok, safetensors, tmp)
        if dirs is None:
            continue
        # The float32 model of the half weights: M2M-100's positional table
        # is no weight (not in the state_dict) and stays float32, as ted
        # computes it.
        upcast = type(model)(model.config)
        upcast.load_state_dict({k: v.float() for k, v in half.state_dict().items()})
        upcast.eval()
        language_logits(f"half/{label}-export", dirs[1], upcast, tok, pairs, directions[:1])
        stored = rewrite_weights(dirs[1], os.path.join(tmp, f"ted-nllb-{label}-stored"), dtype)
        _, header = read_dtypes(os.path.join(stored, "model.safetensors"))
        language_logits(f"half/{label}-tensors-{'+'.join(sorted(header))}", stored, upcast,
                        tok, pairs, directions[:1])


def read_dtypes(path):
    import struct
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
    header.pop("__metadata__", None)
    return header, {entry["dtype"] for entry in header.values()}


# ---- main ---------------------------------------------------------------------------------

def logits_pairs(sentences):
    return [(sentences[0], sentences[15]), (sentences[65], sentences[44]),
            (sentences[120], ""), (sentences[200], sentences[100])]


def main():
    transformers = reference_transformers()
    if not transformers:
        return
    sentences = read_sentences()
    with scratch_directory("ted-multilingual-") as tmp:
        spm_path = train_nllb_spm(tmp, sentences)

        def build(seed, spec):
            name, tok_kind, kind, sizes, safetensors, _ = spec
            tok_dir = os.path.join(tmp, "tok-" + name)
            os.makedirs(tok_dir)
            tok = make_tokenizer(tok_kind, tok_dir, spm_path)
            return build_model(kind, tok, sizes, 20 + seed), tok, safetensors
        for _, spec, model, _, ted_dir, tok in each_exported(tmp, MODELS, build):
            name, directions = spec[0], spec[-1]
            pairs = logits_pairs(sentences)
            check_tokenize(name, ted_dir, tok, sentences, directions[0][0])
            language_logits(f"logits/{name}", ted_dir, model, tok, pairs, directions)
            check_translations(name, ted_dir, model, tok, sentences, directions)
            if name == "mbart50":
                check_int8(name, ted_dir, model, tok, pairs, directions[0], tmp)
            if name == "nllb":
                check_half(model, tok, pairs, directions, tmp)
                check_legacy(model, type(tok), pairs, tmp)
                check_languages_option(tmp)
        check_multilingual_refusals(tmp)

if __name__ == "__main__":
    main()
    sys.exit(1 if failures() else 0)
