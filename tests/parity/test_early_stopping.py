#!/usr/bin/python3
"""ted's beam search stopping rules and generation defaults against Hugging
Face transformers' generate() (BeamSearchScorer, BeamHypotheses.is_done).

    TED=build/ted .venv/bin/python tests/parity/test_early_stopping.py

The model is models/en-fr (a trained MarianMTModel exported by
tools/export_hf.py) rebuilt here as a MarianMTModel from ted's weights, with
a MarianTokenizer from its SentencePiece models and vocabulary, and saved
by save_pretrained with an OPUS-MT generation_config.json (num_beams 4,
max_length 512, forced_eos_token_id, bad_words_ids [[pad]], early_stopping
left out: generate()'s default, False). tools/export_hf.py converts that
directory back, so the decoding settings ted runs with are the exporter's
reading of generation_config.json. A second copy favours EOS (its bias
raised by 2: translations end early or late, where the rules part ways),
has max_length 32 (beams reach the limit, where forced_eos_token_id
appends EOS) and early_stopping "never" in its generation_config.json. 100 sentences: the test set's, cut in half, shuffled, or
with their last words repeated.

The NLLB-style model is models/multi-en-fr-es rebuilt as an
M2M100ForConditionalGeneration from ted's weights with an NllbTokenizer
from its SentencePiece model, saved with an NLLB-200 generation config
(decoder start EOS, no forced_eos_token_id) plus num_beams 4, and exported
back: English to French and French to English, 100 sentences each, made
as above from its test sets.

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  early-stopping/export[-eos]  config.yaml from generation_config.json holds
                               beam_size 4, early_stopping false (never),
                               forced_eos, max_length 510 (30)
  early-stopping/no-flags-*    `ted translate -m DIR` against generate()
                               with no arguments: >= 95 % identical (the
                               figure is printed), on both models
  early-stopping/{true,false,never}[-lp2]
                               `ted translate --early-stopping X --scores`
                               against generate(early_stopping=X,
                               output_scores=True): identical translations
                               and sequences_scores within 1e-4; with the
                               length penalty 1 and 2 (never)
  early-stopping/rules-differ  the settings give other translations on some
                               sentences (the checks above can fail)
  early-stopping/export-nllb   the NLLB export holds beam_size 4,
                               early_stopping false, forced_eos false
  early-stopping/no-flags-nllb-*
                               `ted translate --source-lang --target-lang`
                               against generate(forced_bos_token_id=code):
                               >= 95 % identical, both directions
  early-stopping/{true,false,never}-nllb-*
                               as above, with the forced target-language
                               code scored 0 as generate() scores it
  early-stopping/export-default-target, default-target-nllb
                               a generation config's forced_bos_token_id
                               fra_Latn: config.yaml's default_target_lang,
                               and `ted translate --source-lang eng_Latn`
                               equals generate() with no arguments
  early-stopping/refuse-forced-bos
                               a forced_bos_token_id that is no language
                               code: export_hf.py exits 1, one line
"""
import json
import os
import random
import shutil
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))

from ted_test import TED, check, failures, report, run, scratch_directory, ted_problem  # noqa

MODEL = os.path.join(ROOT, "models", "en-fr")
MULTI = os.path.join(ROOT, "models", "multi-en-fr-es")
NLLB_DIRECTIONS = (("eng_Latn", "fra_Latn"), ("fra_Latn", "eng_Latn"))
EXPORTER = os.path.join(ROOT, "tools", "export_hf.py")
PYTHON = os.environ.get("PYTHON", "/usr/bin/python3")  # the exporter's Python
SENTENCES = 100
NO_FLAGS_AGREEMENT = 0.95
TOLERANCE = 1e-4
EOS_BIAS = 2.0
SHORT_MAX_LENGTH = 32


def sentences(path=os.path.join(MODEL, "test.en")):
    """The test set's first sentences, every fourth cut in half, the others
    as they are, shuffled or with their last three words repeated."""
    with open(path, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f][:SENTENCES]
    rng = random.Random(1)
    out = []
    for i, line in enumerate(lines):
        words = line.split()
        if i % 4 == 0:
            words = words[:max(1, len(words) // 2)]
        elif i % 4 == 1:
            rng.shuffle(words)
        elif i % 4 == 2:
            words = words + words[-3:]
        out.append(" ".join(words))
    return out


def read_config(path):
    """config.yaml's `key: value` lines, by section ("model.d_model": "128")."""
    values, section = {}, None
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.split("#", 1)[0].rstrip()
            if not line.strip():
                continue
            key, _, value = line.strip().partition(":")
            if not line.startswith(" "):
                section = key
            values[f"{section}.{key}" if line.startswith(" ") else key] = value.strip()
    return values


def hf_model(hf_dir):
    """models/en-fr as a MarianMTModel and MarianTokenizer, saved to hf_dir
    as an OPUS-MT download is."""
    from safetensors.torch import load_file
    from transformers import GenerationConfig, MarianConfig, MarianMTModel, MarianTokenizer

    c = read_config(os.path.join(MODEL, "config.yaml"))
    os.makedirs(hf_dir)
    with open(os.path.join(MODEL, "vocab.txt"), encoding="utf-8") as f:
        vocab = [line.rstrip("\n") for line in f]
    with open(os.path.join(hf_dir, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump({piece: i for i, piece in enumerate(vocab)}, f, ensure_ascii=False)
    for name in ("source.spm", "target.spm"):
        shutil.copy(os.path.join(MODEL, name), hf_dir)
    tok = MarianTokenizer(os.path.join(hf_dir, "source.spm"), os.path.join(hf_dir, "target.spm"),
                          os.path.join(hf_dir, "vocab.json"), source_lang="en",
                          target_lang="fr")
    pad, eos = tok.pad_token_id, tok.eos_token_id
    d, heads, ff = int(c["model.d_model"]), int(c["model.heads"]), int(c["model.d_ff"])
    config = MarianConfig(
        vocab_size=len(vocab), d_model=d, encoder_layers=int(c["model.encoder_layers"]),
        decoder_layers=int(c["model.decoder_layers"]), encoder_attention_heads=heads,
        decoder_attention_heads=heads, encoder_ffn_dim=ff, decoder_ffn_dim=ff,
        activation_function="swish", max_position_embeddings=int(c["model.max_positions"]),
        scale_embedding=True, dropout=0.0, pad_token_id=pad, eos_token_id=eos,
        decoder_start_token_id=pad, forced_eos_token_id=eos,
        share_encoder_decoder_embeddings=True, tie_word_embeddings=True)
    model = MarianMTModel(config)
    state = load_file(os.path.join(MODEL, "model.safetensors"))
    state["final_logits_bias"] = state["final_logits_bias"][None]
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or any("layers" in name for name in missing):
        raise RuntimeError(f"models/en-fr: tensors unknown to MarianMTModel {unexpected}, "
                           f"missing {missing}")
    model.generation_config = GenerationConfig(
        decoder_start_token_id=pad, eos_token_id=eos, pad_token_id=pad,
        forced_eos_token_id=eos, bad_words_ids=[[pad]], num_beams=4, max_length=512)
    model.eval()
    model.save_pretrained(hf_dir, safe_serialization=True)
    tok.save_pretrained(hf_dir)
    return model, tok


def eos_favouring(model, tok, hf_dir):
    """A copy that ends translations more readily, with max_length 32 and
    early_stopping "never"."""
    from transformers import MarianMTModel

    model = MarianMTModel.from_pretrained(hf_dir).eval()
    with torch.no_grad():
        model.final_logits_bias[0, tok.eos_token_id] += EOS_BIAS
    model.generation_config.max_length = SHORT_MAX_LENGTH
    model.generation_config.early_stopping = "never"
    out = hf_dir + "-eos"
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    return model, out


def nllb_model(hf_dir):
    """models/multi-en-fr-es as an M2M100ForConditionalGeneration and
    NllbTokenizer, saved to hf_dir as an NLLB-200 download is (decoder start
    EOS, no forced_eos_token_id), with num_beams 4 and early_stopping left
    out."""
    from safetensors.torch import load_file
    from transformers import (GenerationConfig, M2M100Config, M2M100ForConditionalGeneration,
                              NllbTokenizer)

    c = read_config(os.path.join(MULTI, "config.yaml"))
    os.makedirs(hf_dir)
    shutil.copy(os.path.join(MULTI, "sentencepiece.bpe.model"), hf_dir)
    tok = NllbTokenizer(os.path.join(hf_dir, "sentencepiece.bpe.model"),
                        model_max_length=int(c["model.max_positions"]))
    if len(tok) != int(c["model.tgt_vocab_size"]):
        raise RuntimeError(f"models/multi-en-fr-es: NllbTokenizer has {len(tok)} ids, "
                           f"the model {c['model.tgt_vocab_size']}")
    d, heads, ff = int(c["model.d_model"]), int(c["model.heads"]), int(c["model.d_ff"])
    eos = tok.eos_token_id
    config = M2M100Config(
        vocab_size=len(tok), d_model=d, encoder_layers=int(c["model.encoder_layers"]),
        decoder_layers=int(c["model.decoder_layers"]), encoder_attention_heads=heads,
        decoder_attention_heads=heads, encoder_ffn_dim=ff, decoder_ffn_dim=ff,
        activation_function="relu", max_position_embeddings=int(c["model.max_positions"]),
        scale_embedding=True, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
        pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=eos,
        decoder_start_token_id=eos, tie_word_embeddings=True)
    model = M2M100ForConditionalGeneration(config)
    missing, unexpected = model.load_state_dict(
        load_file(os.path.join(MULTI, "model.safetensors")), strict=False)
    if unexpected or any("layers" in name or "norm" in name for name in missing):
        raise RuntimeError(f"models/multi-en-fr-es: tensors unknown to "
                           f"M2M100ForConditionalGeneration {unexpected}, missing {missing}")
    model.generation_config = GenerationConfig(
        bos_token_id=tok.bos_token_id, pad_token_id=tok.pad_token_id, eos_token_id=eos,
        decoder_start_token_id=eos, num_beams=4, max_length=int(c["decoding.max_length"]) + 1)
    model.eval()
    model.save_pretrained(hf_dir, safe_serialization=True)
    tok.save_pretrained(hf_dir)
    return model, tok


def export(hf_dir, out_dir):
    status, _, err = run([PYTHON, EXPORTER, hf_dir, "--out", out_dir])
    if status != 0:
        raise RuntimeError(f"export_hf.py {hf_dir}: {err.strip()}")


def generate(model, tok, lines, languages=None, **options):
    """generate()'s translations and, with output_scores, sequences_scores;
    `languages` (source, target code): an NLLB tokenizer's src_lang and
    forced_bos_token_id."""
    texts, scores = [], []
    if languages:
        tok.src_lang = languages[0]
        options["forced_bos_token_id"] = tok.convert_tokens_to_ids(languages[1])
    for start in range(0, len(lines), 20):
        batch = tok(lines[start:start + 20], return_tensors="pt", padding=True)
        with torch.no_grad():
            out = model.generate(**batch, return_dict_in_generate=True, **options)
        texts += tok.batch_decode(out.sequences, skip_special_tokens=True)
        if options.get("output_scores"):
            scores += out.sequences_scores.tolist()
    return texts, scores


def language_options(languages):
    return ["--source-lang", languages[0], "--target-lang", languages[1]] if languages else []


def ted_translate(ted_dir, lines, *options):
    """ted's translations and, with --scores, their scores."""
    out, problem = ted_problem(["translate", "-m", ted_dir, *options], "\n".join(lines) + "\n")
    if problem:
        raise RuntimeError(problem)
    rows = out.split("\n")[:-1]
    if "--scores" not in options:
        return rows, []
    fields = [row.split(" ||| ") for row in rows]
    return [f[1] for f in fields], [float(f[2]) for f in fields]


def first_difference(lines, got, want):
    for i, (a, b) in enumerate(zip(got, want)):
        if a != b:
            return f"sentence {i + 1} ({lines[i]!r}): ted {a!r}, transformers {b!r}"
    return f"{len(got)} lines from ted, {len(want)} from transformers"


def check_export(name, ted_dir, early_stopping, max_length, forced_eos="true"):
    c = read_config(os.path.join(ted_dir, "config.yaml"))
    want = {"decoding.beam_size": "4", "decoding.early_stopping": early_stopping,
            "decoding.forced_eos": forced_eos, "decoding.max_length": str(max_length)}
    got = {key: c.get(key) for key in want}
    check(name, got == want, f"config.yaml has {got}, expected {want}")


def check_no_flags(name, model, tok, ted_dir, lines, languages=None):
    """`ted translate` (with --source-lang and --target-lang alone for
    `languages`) against generate() (forced_bos_token_id alone)."""
    want, _ = generate(model, tok, lines, languages)
    got, _ = ted_translate(ted_dir, lines, *language_options(languages))
    same = sum(a == b for a, b in zip(got, want))
    detail = f"{same}/{len(lines)} identical (>= {NO_FLAGS_AGREEMENT:.0%} required)"
    if len(got) != len(want) or same < NO_FLAGS_AGREEMENT * len(lines):
        return report(name, f"{detail}; {first_difference(lines, got, want)}")
    report(name, detail=detail)


def check_setting(name, model, tok, ted_dir, lines, setting, penalty, languages=None):
    """--early-stopping against generate(early_stopping=..., num_beams=4):
    every translation and score. Returns transformers' translations."""
    word = {True: "true", False: "false", "never": "never"}[setting]
    want, want_scores = generate(model, tok, lines, languages, early_stopping=setting,
                                 num_beams=4, length_penalty=penalty, output_scores=True)
    got, got_scores = ted_translate(ted_dir, lines, "--early-stopping", word,
                                    "--length-penalty", str(penalty), "--scores",
                                    *language_options(languages))
    if got != want:
        same = sum(a == b for a, b in zip(got, want))
        report(name, f"{same}/{len(lines)} identical; {first_difference(lines, got, want)}")
        return want
    worst = max(abs(a - b) for a, b in zip(got_scores, want_scores))
    report(name, None if worst <= TOLERANCE else
           f"scores differ by {worst:.3g} > {TOLERANCE:g}",
           f"{len(lines)}/{len(lines)} identical, scores within {worst:.1e}")
    return want


def main():
    torch.set_num_threads(1)
    if not (os.path.isfile(TED) and os.access(TED, os.X_OK)):
        return report("early-stopping/setup", f"{TED}: no such executable")
    lines = sentences()
    with scratch_directory("ted-early-stopping-") as tmp:
        hf_dir = os.path.join(tmp, "hf")
        model, tok = hf_model(hf_dir)
        short, short_dir = eos_favouring(model, tok, hf_dir)
        ted_dir, short_ted = os.path.join(tmp, "ted"), os.path.join(tmp, "ted-eos")
        export(hf_dir, ted_dir)
        export(short_dir, short_ted)
        check_export("early-stopping/export", ted_dir, "false", 510)
        check_export("early-stopping/export-eos", short_ted, "never", SHORT_MAX_LENGTH - 2)
        check_no_flags("early-stopping/no-flags-trained", model, tok, ted_dir, lines)
        check_no_flags("early-stopping/no-flags-eos", short, tok, short_ted, lines)
        found = {}
        for setting, penalty, name in ((True, 1.0, "true"), (False, 1.0, "false"),
                                       ("never", 1.0, "never"), (False, 2.0, "false-lp2"),
                                       ("never", 2.0, "never-lp2")):
            found[name] = check_setting(f"early-stopping/{name}", short, tok, short_ted, lines,
                                        setting, penalty)
        differ = {pair: sum(a != b for a, b in zip(found[pair[0]], found[pair[1]]))
                  for pair in (("true", "false"), ("false-lp2", "never-lp2"))}
        check("early-stopping/rules-differ", all(differ.values()),
              f"generate() gives the same translations under {differ}")
        print(f"# translations that differ: {differ}")
        check_nllb(tmp)


def check_nllb(tmp):
    """The NLLB-style model: no flags and the three settings, both ways."""
    hf_dir, ted_dir = os.path.join(tmp, "nllb"), os.path.join(tmp, "nllb-ted")
    model, tok = nllb_model(hf_dir)
    export(hf_dir, ted_dir)
    check_export("early-stopping/export-nllb", ted_dir, "false",
                 model.generation_config.max_length - 1, "false")
    for languages in NLLB_DIRECTIONS:
        lines = sentences(os.path.join(MULTI, "test." + languages[0]))
        way = f"nllb-{languages[0][:3]}-{languages[1][:3]}"
        check_no_flags(f"early-stopping/no-flags-{way}", model, tok, ted_dir, lines, languages)
        for setting, word in ((True, "true"), (False, "false"), ("never", "never")):
            check_setting(f"early-stopping/{word}-{way}", model, tok, ted_dir, lines, setting,
                          1.0, languages)
    check_default_target(model, tok, hf_dir, tmp)


def check_default_target(model, tok, hf_dir, tmp):
    """generation_config.json's forced_bos_token_id, a language code:
    config.yaml's default_target_lang, what `ted translate --source-lang`
    alone translates into, as generate() with no arguments; an id that is
    no language code is refused."""
    from transformers import M2M100ForConditionalGeneration

    code = tok.convert_tokens_to_ids("fra_Latn")
    forced_dir, ted_dir = hf_dir + "-fra", os.path.join(tmp, "nllb-fra-ted")
    forced = M2M100ForConditionalGeneration.from_pretrained(hf_dir).eval()
    forced.generation_config.forced_bos_token_id = code
    forced.save_pretrained(forced_dir, safe_serialization=True)
    tok.save_pretrained(forced_dir)
    export(forced_dir, ted_dir)
    got = read_config(os.path.join(ted_dir, "config.yaml")).get("tokenizer.default_target_lang")
    check("early-stopping/export-default-target", got == "fra_Latn",
          f"config.yaml: default_target_lang {got}, expected fra_Latn")
    lines = sentences(os.path.join(MULTI, "test.eng_Latn"))
    tok.src_lang = "eng_Latn"
    want, _ = generate(forced, tok, lines)
    got, _ = ted_translate(ted_dir, lines, "--source-lang", "eng_Latn")
    same = sum(a == b for a, b in zip(got, want))
    detail = f"{same}/{len(lines)} identical (>= {NO_FLAGS_AGREEMENT:.0%} required)"
    report("early-stopping/default-target-nllb",
           None if len(got) == len(want) and same >= NO_FLAGS_AGREEMENT * len(lines) else
           f"{detail}; {first_difference(lines, got, want)}", detail)
    forced.generation_config.forced_bos_token_id = tok.bos_token_id
    forced.save_pretrained(forced_dir, safe_serialization=True)
    status, _, err = run([PYTHON, EXPORTER, forced_dir, "--out", ted_dir + "-bad"])
    check("early-stopping/refuse-forced-bos", status == 1 and "forced_bos_token_id" in err and
          len(err.strip().split("\n")) == 1,
          f"export_hf.py exit {status}, stderr {err.strip()[:200]!r}")


if __name__ == "__main__":
    main()
    sys.exit(1 if failures() else 0)
