#!/usr/bin/python3
"""ted against Hugging Face transformers (MarianMTModel, MarianTokenizer),
on models exported with tools/export_hf.py.

    TED=build/ted .venv/bin/python tests/parity/test_marian.py

Random-init MarianMTModels of several shapes (1 to 8 heads, unequal
depths, swish, relu and gelu, shared or separate vocabularies, a
multilingual vocabulary with >>xx<< codes, untied output) with SentencePiece
models trained here on generated text, saved by save_pretrained as
model.safetensors and as pytorch_model.bin. Checks (one "ok NAME" or
"FAIL NAME: why" line each; exit 1 if one fails):
  export/*     both formats export to the same ted files; a pytorch_model.bin
               with the positional tables (as older transformers saved it)
               too; what ted cannot run is refused, exit 1, one message
  tokenize/*   `ted tokenize` against MarianTokenizer on >= 1000 lines (accents,
               CJK, emoji, odd white space, empty lines, language codes,
               special tokens' spellings): source ids, target ids, and the
               text target ids decode to; all identical
  logits/*     `ted logits` against MarianMTModel's teacher-forced logits
               (float64): max abs diff <= 1e-4
  greedy/*     `ted translate --beam 1` against generate(num_beams=1), the
               generation settings of generation_config.json (max_length,
               forced EOS, bad_words_ids) coming through config.yaml: all
               identical
  greedy-token-batches/*  the same with --max-batch-tokens 48 --workers 2
               (sorted by length, batched by tokens, two batches at once)
  beam/*       `ted translate --beam 4 --early-stopping true` against
               generate(num_beams=4, early_stopping=True): identical on >= 98 % of all the models'
               sentences (see check_beam)
  languages/*  the multi-target model: `ted info` lists its >>xx<< codes as
               MarianTokenizer does, `ted translate --target-lang xx` equals
               generate() on ">>xx<< text" (greedy, every sentence), and
               `ted logits --target-lang xx` its logits
  accepted/*   what transformers loads and the exporter once refused:
               config.json keys MarianMTModel ignores (a warning naming the
               key, the same export), a MarianModel checkpoint (logits
               against the MarianMTModel from_pretrained makes of it), a
               vocab.json shorter than vocab_size (source ids, the text of
               target ids, which transformers writes <unk> for the ids the
               file lacks, and greedy translations against transformers)
TED_PARITY_KEEP=1 keeps the temporary directories (printed on stderr).
"""
import json
import os
import random
import shutil
import sys

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))

import ted_format  # noqa: E402
from hf_parity import (EXPORTER, PYTHON, TOLERANCE, check_decode, check_logits,  # noqa: E402
                       check_refusal, check_refusals, check_token_ids, export,
                       generate_batches, ids_text, logits_difference, pair_cases,
                       teacher_forced_logits)
from reference_models import (CONFIGS, LANGUAGE_CODES, MAX_LENGTH, WORDS,  # noqa: E402
                              build_model, sentence, write_tokenizer)
from ted_test import reference_transformers  # noqa: E402
from ted_test import (TED, compare_lines, edit_json, failures, report, run,  # noqa: E402
                      scratch_directory, ted_lines)

BEAM_AGREEMENT = 0.98
TOKENIZE_LINES = 1200
SENTENCES = 48          # per model, for greedy and beam search

ODD_SPACES = [" ", "  ", "\t", " \t ", "\u00a0", "\u3000", "\u2009", "\u200b", "\u2028",
              "\x0b", "\x0c"]
ODD_PIECES = ["</s>", "<unk>", "<pad>", ">>fr<<", ">>xx<< ", ">> <<", "<<", ">>", "e\u0301",
              "ＦＵＬＬ", "ﬁ", "\u0085", "\x01", "€", "Ω", "ŉ", "\U0001F9D1\u200d\U0001F4BB"]


# ---- text ---------------------------------------------------------------------

def odd_line(rng):
    """A line of words, odd white space and odd pieces, maybe with a
    language code in front."""
    parts = []
    for _ in range(rng.randint(0, 14)):
        r = rng.random()
        parts.append(rng.choice(ODD_PIECES) if r < 0.12 else rng.choice(WORDS))
        parts.append(rng.choice(ODD_SPACES) if r < 0.3 else " ")
    line = "".join(parts)
    if rng.random() < 0.15:
        line = rng.choice(LANGUAGE_CODES) + rng.choice(["", " "]) + line
    return line if rng.random() > 0.04 else rng.choice(["", " ", "\t", "\u3000"])


def tokenize_lines(rng):
    return [odd_line(rng) for _ in range(TOKENIZE_LINES)]


def translation_sentences(rng, multilingual):
    out = []
    for i in range(SENTENCES):
        text = sentence(rng, high=6 + i % 14)  # within MAX_POSITIONS tokens
        if multilingual and i % 3:
            text = LANGUAGE_CODES[i % len(LANGUAGE_CODES)] + " " + text
        out.append(text)
    return out


def same_files(a, b):
    for name in sorted(os.listdir(a)):
        if name != "config.yaml" and open(os.path.join(a, name), "rb").read() != open(
                os.path.join(b, name), "rb").read():
            return name
    return None


def save_and_export(spec, model, tok, tmp):
    """Saves the model both ways, exports both; returns the ted directory
    (from model.safetensors), or None after reporting a failure."""
    name = spec[0]
    dirs = {}
    for fmt, safe in (("safetensors", True), ("bin", False)):
        hf_dir = os.path.join(tmp, f"hf-{name}-{fmt}")
        model.save_pretrained(hf_dir, safe_serialization=safe)
        tok.save_pretrained(hf_dir)
        dirs[fmt] = os.path.join(tmp, f"ted-{name}-{fmt}")
        problem = export(hf_dir, dirs[fmt])
        if problem:
            report(f"export/{name}-{fmt}", problem)
            return None
    differs = same_files(dirs["safetensors"], dirs["bin"])
    if differs:
        report(f"export/same-from-both-formats-{name}", f"{differs} differs")
        return None
    header, _, _ = ted_format.read_safetensors(os.path.join(dirs["safetensors"],
                                                            "model.safetensors"))
    report(f"export/same-from-both-formats-{name}",
           detail=f"{len(header) - 1} tensors, identical files")
    return dirs["safetensors"]


# ---- checks -------------------------------------------------------------------

def check_tokenize(name, ted_dir, tok, lines, rng):
    """Source ids, target ids and the text of target ids, line by line."""
    target_ids = [tok(text_target=line).input_ids[:-1] for line in lines]
    check_token_ids(name, ted_dir, lines, [ids_text(tok(line).input_ids) for line in lines],
                    [ids_text(ids) for ids in target_ids], "lines")
    # ted's text stops at the first EOS, as a translation does; transformers
    # drops it and goes on: ids with an EOS inside are left out.
    eos = tok.eos_token_id
    sequences = [ids for ids in target_ids if eos not in ids]
    vocab = [i for i in range(len(tok.decoder)) if i != eos]
    sequences += [[rng.choice(vocab) for _ in range(rng.randint(0, 20))] for _ in range(400)]
    check_decode(f"tokenize/{name}-decode", ted_dir, tok, sequences)


def reference_logits(model, tok, pair):
    """MarianMTModel's teacher-forced logits: the decoder fed its start
    token and the target's ids (without the EOS MarianTokenizer adds)."""
    source, target = pair
    return teacher_forced_logits(model, tok(source).input_ids, [
        model.config.decoder_start_token_id] + tok(text_target=target).input_ids[:-1])


def marian_logits(name, ted_dir, model, tok, pairs):
    check_logits(name, ted_dir, model, lambda m, pair: reference_logits(m, tok, pair),
                 pair_cases(pairs))


def logits_pairs(rng):
    return [(sentence(rng, high=6), sentence(rng, high=6)),
            (sentence(rng, low=12, high=16), sentence(rng, low=1, high=3)),
            ("café 東京 😀 « naïve »", ""),
            (">>fr<< " + sentence(rng), "</s> " + sentence(rng, high=4))]


def hf_translate(model, tok, sentences, **options):
    """generate()'s translations, and how many ended before max_length."""
    out, early = [], 0
    for ids in generate_batches(model, tok, sentences, 16, **options):
        out += tok.batch_decode(ids, skip_special_tokens=True)
        early += sum(tok.eos_token_id in row[:MAX_LENGTH - 1] for row in ids.tolist())
    return out, early


def check_translations(name, ted_dir, model, tok, sentences, beam_results):
    """Greedy decoding: every translation identical. Beam search: the
    translations go to `beam_results`, checked over all models at once by
    check_beam."""
    for kind, flags, options in (
            ("greedy", ["--beam", "1"], dict(num_beams=1, do_sample=False)),
            ("beam", ["--beam", "4", "--early-stopping", "true"],
             dict(num_beams=4, do_sample=False, early_stopping=True))):
        got, problem = ted_lines(["translate", "-m", ted_dir, *flags], sentences)
        if problem:
            report(f"{kind}/{name}", problem)
            continue
        want, early = hf_translate(model, tok, sentences, **options)
        note = (f" ({len(set(want))} different translations, {early} ended before "
                f"max_length {MAX_LENGTH})")
        if kind == "greedy":
            compare_lines(f"{kind}/{name}", got, want, sentences, "sentences", 1.0, note)
            # sorted by length, batched by tokens, two batches at once
            got, problem = ted_lines(["translate", "-m", ted_dir, "--beam", "1",
                                      "--max-batch-tokens", "48", "--workers", "2"], sentences)
            if problem:
                report(f"greedy-token-batches/{name}", problem)
            else:
                compare_lines(f"greedy-token-batches/{name}", got, want, sentences, "sentences",
                        1.0, note)
        else:
            beam_results.append((name, got, want, sentences))


def check_target_languages(ted_dir, model, tok):
    """A multi-target model (>>xx<< tokens in vocab.json): `ted info` lists
    MarianTokenizer's supported_language_codes without their marks, and
    `ted translate --target-lang XX` / `ted logits --target-lang XX` give
    what transformers gives for ">>XX<< text"."""
    codes = [code[2:-2] for code in tok.supported_language_codes]
    status, out, err = run([TED, "info", "-m", ted_dir])
    listed = [line for line in out.splitlines() if line.startswith("target languages: ")]
    want = f"target languages: {len(codes)} ({' '.join(codes)})"
    report("languages/info-lists-marian-codes",
           None if status == 0 and listed == [want] else f"{listed} (exit {status}), want {want!r}",
           f"{len(codes)} codes")
    rng = random.Random(29)  # its own: the other models' sentences stay as they are
    sentences = [sentence(rng, high=10) for _ in range(16)]
    for code in codes:
        got, problem = ted_lines(["translate", "-m", ted_dir, "--beam", "1", "--target-lang",
                                  code], sentences)
        if problem:
            report(f"languages/greedy-target-{code}", problem)
            continue
        want, _ = hf_translate(model, tok, [f">>{code}<< {s}" for s in sentences],
                               num_beams=1, do_sample=False)
        compare_lines(f"languages/greedy-target-{code}", got, want, sentences, "sentences",
                note=f" ({len(set(want))} different translations)")
    source, target = sentence(rng, high=8), sentence(rng, high=5)
    diff, problem = logits_difference(
        ted_dir, model, lambda m, pair: reference_logits(m, tok, pair),
        [(["--target-lang", codes[-1], "--source", source, "--target", target],
          (f"{tok.supported_language_codes[-1]} {source}", target))], TOLERANCE)
    report("languages/logits-target-code", problem if diff is None else None,
           f"max abs diff {diff:.2e}" if diff is not None else "")


def check_beam(beam_results):
    """Beam search on every model's sentences: >= 98 % identical. Random
    models run to max_length in most sentences, trained ones seldom; ted
    ends there as transformers does (finish_at_limit in src/model/beam.c,
    the forced EOS counted in the length: decoding.forced_eos). The margin
    is for near ties: transformers sums the log-probs in float32, ted in
    float64."""
    got, want, lines, counts = [], [], [], []
    for name, ted, transformers, sentences in beam_results:
        counts.append(f"{name} {sum(a == b for a, b in zip(ted, transformers))}/{len(ted)}")
        got, want, lines = got + ted, want + transformers, lines + sentences
    if beam_results:
        compare_lines("beam/all-models", got, want, lines, "sentences", BEAM_AGREEMENT,
                f" (>= {BEAM_AGREEMENT:.0%} required; {', '.join(counts)})")


# ---- the exporter's refusals --------------------------------------------------

def edit_tensors(change):
    """change(tensors) on model.safetensors (rewritten F32)."""
    def edit(hf_dir):
        path = os.path.join(hf_dir, "model.safetensors")
        tensors = ted_format.read_tensors(path)
        change(tensors)
        ted_format.write_safetensors(path, list(tensors.items()))
    return edit


def remove(*names):
    return lambda hf_dir: [os.remove(os.path.join(hf_dir, n)) for n in names]


def split_checkpoint(hf_dir, elsewhere):
    """model.safetensors renamed as the first of two files, its index
    placing the tensor `elsewhere` in the second, which is not there."""
    first = "model-00001-of-00002.safetensors"
    header, _, _ = ted_format.read_safetensors(os.path.join(hf_dir, "model.safetensors"))
    weight_map = {name: first for name in header if name != "__metadata__"}
    weight_map[elsewhere] = "model-00002-of-00002.safetensors"
    os.rename(os.path.join(hf_dir, "model.safetensors"), os.path.join(hf_dir, first))
    write_file("model.safetensors.index.json",
               json.dumps({"weight_map": weight_map}).encode())(hf_dir)


def write_file(name, data):
    def edit(hf_dir):
        with open(os.path.join(hf_dir, name), "wb") as f:
            f.write(data)
    return edit


def rename_token(hf_dir, token, new, new_id=None):
    """vocab.json with `token` spelled `new` (None: kept), or given `new_id`."""
    path = os.path.join(hf_dir, "vocab.json")
    with open(path, encoding="utf-8") as f:
        vocab = json.load(f)
    index = vocab.pop(token)
    vocab[new or token] = index if new_id is None else new_id
    with open(path, "w", encoding="utf-8") as f:
        json.dump(vocab, f)


FC1 = "model.encoder.layers.0.fc1.weight"
REFUSALS = [
    ("no-source-spm", r"source\.spm: missing", remove("source.spm")),
    ("no-target-spm", r"target\.spm: missing", remove("target.spm")),
    ("no-vocab", r"vocab\.json: missing", remove("vocab.json")),
    ("no-config", r"config\.json: missing", remove("config.json")),
    ("no-weights", r"no model\.safetensors or pytorch_model\.bin", remove("model.safetensors")),
    ("garbage-spm", r"source\.spm: not a SentencePiece model",
     write_file("source.spm", b"\x08\x96\x01 not a model")),
    ("truncated-weights", r"model\.safetensors: .*(truncated|runs past)",
     lambda d: write_file("model.safetensors",
                          open(os.path.join(d, "model.safetensors"), "rb").read()[:5000])(d)),
    ("vocab-size", r"vocab\.json: [0-9]+ tokens, but config\.json vocab_size is [0-9]+",
     lambda d: edit_json("vocab.json", extra_token=10 ** 6)(d)),
    ("vocab-token-newline", r"vocab\.json: token '<unk>\\nx' \(id 1\) holds a line end",
     lambda d: rename_token(d, "<unk>", "<unk>\nx")),
    ("vocab-same-id", r'vocab\.json: tokens "<unk>" and "</s>" both have id 1',
     lambda d: rename_token(d, "</s>", None, 1)),
    ("separate-no-target-vocab", r"target_vocab\.json: missing",
     edit_json("tokenizer_config.json", separate_vocabs=True)),
    ("model-type", r"config\.json: model_type \"fsmt\" asks for another model family", edit_json("config.json",
                                                                      model_type="fsmt")),
    ("heads-differ", r"encoder_attention_heads 8 and decoder_attention_heads 4 differ",
     edit_json("config.json", decoder_attention_heads=4)),
    ("activation", r"activation_function \"gelu_new\" is not supported",
     edit_json("config.json", activation_function="gelu_new")),
    ("decoder-vocab-size", r"decoder_vocab_size 7 differs from vocab_size",
     edit_json("config.json", decoder_vocab_size=7)),
    ("layernorm-embedding", r"tensor model\.encoder\.layernorm_embedding\.weight: "
     r"normalize_embedding", edit_tensors(lambda t: t.update(
         {"model.encoder.layernorm_embedding.weight": np.ones(32, np.float32)}))),
    ("wrong-shape", r"tensor " + FC1.replace(".", r"\.") + r" has shape \[32, 64\], "
     r"config\.json implies \[64, 32\]", edit_tensors(lambda t: t.update({FC1: t[FC1].T}))),
    ("missing-tensor", r"missing tensor model\.decoder\.layers\.1\.fc2\.bias",
     edit_tensors(lambda t: t.pop("model.decoder.layers.1.fc2.bias"))),
    ("bad-words-sequence", r"generation_config\.json: bad_words_ids \[\[5, 6\]\]",
     edit_json("generation_config.json", bad_words_ids=[[5, 6]])),
    ("encoder-repetition-penalty",
     r"generation_config\.json: encoder_repetition_penalty 1\.5 is not supported",
     edit_json("generation_config.json", encoder_repetition_penalty=1.5)),
    ("encoder-no-repeat-ngram-negative",
     r"generation_config\.json: encoder_no_repeat_ngram_size -> "
     r"decoding\.encoder_no_repeat_ngram_size: -1 is out of range",
     edit_json("generation_config.json", encoder_no_repeat_ngram_size=-1)),
    ("early-stopping-word", r'generation_config\.json: early_stopping "sometimes" is not true, '
     r'false or "never"', edit_json("generation_config.json", early_stopping="sometimes")),
    ("clean-up-off", r"tokenizer_config\.json: clean_up_tokenization_spaces false",
     edit_json("tokenizer_config.json", clean_up_tokenization_spaces=False)),
    ("sharded-no-map", r"model\.safetensors\.index\.json: weight_map is not an object",
     lambda d: (os.remove(os.path.join(d, "model.safetensors")),
                write_file("model.safetensors.index.json", b"{}")(d))),
    ("sharded-missing-file", r"model-00002-of-00002\.safetensors: missing: "
     r"model\.safetensors\.index\.json names it",
     lambda d: split_checkpoint(d, "lm_head.weight")),
]


# config.json keys MarianMTModel never reads: the export warns, naming the
# key, and writes what it writes without them.
IGNORED_KEYS = [("normalize_before", True), ("static_position_embeddings", False),
                ("normalize_embedding", True), ("add_final_layer_norm", True)]


def config_body(ted_dir):
    """config.yaml without its first line (which names the directory)."""
    with open(os.path.join(ted_dir, "config.yaml"), encoding="utf-8") as f:
        return f.read().split("\n", 1)[1]


def check_accepted(good_hf, good_ted, model, tok, tmp):
    """What transformers loads, ted loads: the keys above, and a MarianModel's
    checkpoint (tensors without "model.", no output bias), checked against
    the MarianMTModel that from_pretrained makes of it."""
    from transformers import MarianMTModel
    for key, value in IGNORED_KEYS:
        case = os.path.join(tmp, "ignored-" + key)
        shutil.copytree(good_hf, case)
        edit_json("config.json", **{key: value})(case)
        out = os.path.join(tmp, "ted-ignored-" + key)
        status, _, err = run([PYTHON, EXPORTER, case, "--out", out])
        warned = [line for line in err.splitlines() if line.startswith(
            f"export_hf: warning: config.json: {key} {json.dumps(value)} is ignored")]
        differs = status == 0 and (same_files(good_ted, out) or
                                   config_body(good_ted) != config_body(out) and "config.yaml")
        report(f"accepted/ignored-{key}",
               f"exit {status}: {err.strip()[-300:]}" if status != 0 else
               f"no warning naming {key}: {err.strip()[-300:]}" if len(warned) != 1 else
               f"{differs} differs from the export without the key" if differs else None,
               warned[0] if warned else "")
    check_sharded(model, tok, tmp)
    bare = os.path.join(tmp, "hf-marian-model")
    model.model.save_pretrained(bare)
    tok.save_pretrained(bare)
    header, _, _ = ted_format.read_safetensors(os.path.join(bare, "model.safetensors"))
    prefixed = [name for name in header if name.startswith("model.")]
    if prefixed:
        return report("accepted/marian-model", f"not a MarianModel's checkpoint: {prefixed[0]}")
    out = os.path.join(tmp, "ted-marian-model")
    problem = export(bare, out)
    if problem:
        return report("accepted/marian-model", problem)
    reference = MarianMTModel.from_pretrained(bare).eval()
    marian_logits("accepted/marian-model-logits", out, reference, tok,
                  logits_pairs(random.Random(31)))


def check_sharded(model, tok, tmp):
    """A checkpoint split into several files (save_pretrained's
    max_shard_size), safetensors and pytorch_model.bin, exports to what
    transformers computes."""
    for fmt, safe, index in (("safetensors", True, "model.safetensors.index.json"),
                             ("bin", False, "pytorch_model.bin.index.json")):
        hf_dir = os.path.join(tmp, f"hf-sharded-{fmt}")
        model.save_pretrained(hf_dir, safe_serialization=safe, max_shard_size="100KB")
        tok.save_pretrained(hf_dir)
        try:
            with open(os.path.join(hf_dir, index), encoding="utf-8") as f:
                shards = set(json.load(f)["weight_map"].values())
        except (OSError, ValueError, KeyError) as e:
            report(f"accepted/sharded-{fmt}", f"save_pretrained wrote no {index}: {e}")
            continue
        if len(shards) < 2:
            report(f"accepted/sharded-{fmt}", f"{index} names {len(shards)} file")
            continue
        out = os.path.join(tmp, f"ted-sharded-{fmt}")
        problem = export(hf_dir, out)
        if problem:
            report(f"accepted/sharded-{fmt}", problem)
            continue
        marian_logits(f"accepted/sharded-{fmt}-logits", out, model, tok,
                      logits_pairs(random.Random(37)))


def check_short_vocab(good_hf, tmp, rng):
    """A vocab.json shorter than vocab_size, as MarianTokenizer runs it: the
    five ids before <pad> have no token (their rows' output bias raised, so
    that generate() writes them); transformers decodes each as <unk>. The
    export warns once; ted's source ids, the text of target ids and greedy
    translations equal transformers'."""
    from transformers import MarianMTModel, MarianTokenizer
    case = os.path.join(tmp, "short-vocab")
    shutil.copytree(good_hf, case)
    path = os.path.join(case, "vocab.json")
    with open(path, encoding="utf-8") as f:
        vocab = json.load(f)
    pad = vocab["<pad>"]
    missing = list(range(pad - 5, pad))
    with open(path, "w", encoding="utf-8") as f:
        json.dump({t: i for t, i in vocab.items() if i not in missing}, f, ensure_ascii=False)

    def raise_bias(tensors):
        tensors["final_logits_bias"] = tensors["final_logits_bias"].copy()
        tensors["final_logits_bias"][0, missing] += 10.0
    edit_tensors(raise_bias)(case)
    out = os.path.join(tmp, "ted-short-vocab")
    status, _, err = run([PYTHON, EXPORTER, case, "--out", out])
    warned = [line for line in err.splitlines() if line.startswith(
        f"export_hf: warning: {path}: 5 of the vocab_size")]
    if status != 0 or len(warned) != 1:
        return report("accepted/vocab-json-shorter", f"exit {status}: {err.strip()[-300:]}")
    report("accepted/vocab-json-shorter", detail=warned[0])
    tok = MarianTokenizer.from_pretrained(case)
    model = MarianMTModel.from_pretrained(case).eval()
    lines = [sentence(rng) for _ in range(100)]
    want = [ids_text(tok(line).input_ids) for line in lines]
    got, problem = ted_lines(["tokenize", "-m", out], lines)
    if problem:
        report("accepted/vocab-short-source-ids", problem)
    else:
        compare_lines("accepted/vocab-short-source-ids", got, want, lines, "lines")
    ids = [i for i in range(model.config.vocab_size) if i != tok.eos_token_id]
    sequences = [[rng.choice(ids + missing * 20) for _ in range(rng.randint(1, 12))]
                 for _ in range(300)]
    unknown = sum("<unk>" in tok.decode(seq, skip_special_tokens=True) for seq in sequences)
    check_decode("accepted/vocab-short-decode", out, tok, sequences,
                 note=f" ({unknown} with transformers' <unk>)")
    sentences = [sentence(rng) for _ in range(SENTENCES)]
    got, problem = ted_lines(["translate", "-m", out, "--beam", "1"], sentences)
    if problem:
        return report("accepted/vocab-short-greedy", problem)
    want, _ = hf_translate(model, tok, sentences, num_beams=1, do_sample=False)
    compare_lines("accepted/vocab-short-greedy", got, want, sentences, "sentences",
                  note=f" ({sum('<unk>' in w for w in want)} with transformers' <unk>)")


def check_positional_tables(model, tok, ted_dir, tmp):
    """pytorch_model.bin as older transformers saved it, the positional
    tables included: the same export; a table that is not Marian's (the
    interleaved layout) is refused, naming the tensor."""
    state = model.state_dict()
    name = "model.decoder.embed_positions.weight"
    for case, table in (("with-positions", state[name]),
                        ("interleaved-positions", interleaved(state[name]))):
        hf_dir = os.path.join(tmp, "hf-" + case)
        model.config.save_pretrained(hf_dir)
        tok.save_pretrained(hf_dir)
        torch.save(dict(state, **{name: table}), os.path.join(hf_dir, "pytorch_model.bin"))
        if case == "interleaved-positions":
            check_refusal("export/refuses-" + case, f"tensor {name} is not the sinusoidal "
                          "table", hf_dir, hf_dir + "-ted")
            continue
        out = os.path.join(tmp, "ted-" + case)
        problem = export(hf_dir, out)
        differs = problem or same_files(ted_dir, out)
        report("export/" + case, differs and f"{differs} differs",
               "the positional tables checked, then left out")


def interleaved(table):
    """The same sines and cosines, interleaved (PyTorch's tutorial layout)."""
    half = table.shape[1] // 2
    out = table.clone()
    out[:, 0::2], out[:, 1::2] = table[:, :half], table[:, half:]
    return out


# ---- main ---------------------------------------------------------------------

def check_model(spec, tok, lines, tmp, rng, seed, beam_results):
    name = spec[0]
    model = build_model(spec, tok, seed)
    ted_dir = save_and_export(spec, model, tok, tmp)
    if ted_dir is None:
        return None
    if lines:
        check_tokenize(spec[7], ted_dir, tok, lines, rng)
    marian_logits(f"logits/{name}", ted_dir, model, tok, logits_pairs(rng))
    check_translations(name, ted_dir, model, tok,
                       translation_sentences(rng, spec[7] == "multilingual"), beam_results)
    if spec[7] == "multilingual":
        check_target_languages(ted_dir, model, tok)
    return model, ted_dir


def main():
    transformers = reference_transformers()
    if not transformers:
        return
    with scratch_directory("ted-marian-") as tmp:
        rng = random.Random(11)
        tokenizers, beam_results = {}, []
        for k, spec in enumerate(CONFIGS):
            kind = spec[7]
            lines = None
            if kind not in tokenizers:
                tokenizers[kind] = write_tokenizer(os.path.join(tmp, "tok-" + kind), tmp, kind,
                                                   rng)
                lines = tokenize_lines(rng)
            result = check_model(spec, tokenizers[kind], lines, tmp, rng, 100 + k,
                                 beam_results)
            if k == 0 and result:
                check_positional_tables(result[0], tokenizers[kind], result[1], tmp)
                good_hf = os.path.join(tmp, f"hf-{spec[0]}-safetensors")
                check_refusals(tmp, "export/refuses-", [(name, good_hf, pattern, edit)
                                                        for name, pattern, edit in REFUSALS])
                check_accepted(good_hf, result[1], result[0], tokenizers[kind], tmp)
                check_short_vocab(good_hf, tmp, rng)
        check_beam(beam_results)


if __name__ == "__main__":
    main()
    sys.exit(1 if failures() else 0)
