#!/usr/bin/python3
"""The rules on the scores (ted_logits_rules: repetition_penalty,
no_repeat_ngram_size, bad_words_ids, min_length, min_new_tokens) against Hugging Face transformers' logits
processors and generate(), on models/en-fr (a trained MarianMTModel; the
MarianMTModel is rebuilt from ted's weights as tests/parity/test_early_stopping.py
rebuilds it).

    TED=build/ted /work/main/.venv/bin/python tests/parity/test_rules.py

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  rules/processors   ted_apply_logits_rules (libted, through ctypes) on random
                     rows of logits and random histories (repeated tokens, the
                     decoder start token, EOS) equals RepetitionPenalty-,
                     NoRepeatNGram- and MinLengthLogitsProcessor applied in
                     generate()'s order to the history with the decoder start
                     token in front, bit for bit (-infinity where they ban)
  rules/greedy-*, rules/beam-*
                     `ted translate` with --no-repeat-ngram-size 2,
                     --repetition-penalty 1.3 and 2, --min-length 20 and all
                     three, greedy and --beam 4, gives generate()'s translation
                     of every sentence with the same arguments; each changes
                     some translation (beam search with a penalty of 1.3
                     excepted: the check then shows nothing); with beam search
                     the scores are generate()'s sequences_scores within 1e-4
  rules/processors-words
                     the same for bad_words_ids (one token, several, EOS alone,
                     sequences longer than the history), min_new_tokens and
                     encoder_no_repeat_ngram_size (ted_apply_logits_rules_source,
                     random sources), against NoBadWords-,
                     MinNewTokensLength- and EncoderNoRepeatNGramLogitsProcessor
  rules/*-bad-words, rules/*-min-new-tokens, rules/*-encoder-ngram
                     --bad-words-ids (a 2-token and a 1-token sequence of
                     generate()'s plain translations), --min-new-tokens 19 and
                     --encoder-no-repeat-ngram-size 2, as the other rules above
  rules/export       a generation_config.json with no_repeat_ngram_size 2,
                     encoder_no_repeat_ngram_size 3, repetition_penalty 1.3, min_new_tokens 19 and a token in
                     suppress_tokens exports (tools/export_hf.py) to those
                     rules (min_length 20) and the token among banned_ids, and
                     `ted translate` with no option gives generate()'s
                     translations with none (4 beams)
  rules/nllb-*       the three rules on an NLLB-style model (decoder start
                     EOS, a forced target-language token; test_early_stopping.py
                     builds it), both ways, greedy and 4 beams, against
                     generate(forced_bos_token_id=code) with the same rules
"""
import ctypes
import os
import sys

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
sys.path.insert(0, os.path.join(ROOT, "tests", "parity"))

import test_early_stopping as es  # noqa: E402
from ted_test import failures, fail, ok, report, scratch_directory  # noqa: E402

MODEL = os.path.join(ROOT, "models", "en-fr")
LIBRARY = os.environ.get("TED_LIBRARY", os.path.join(ROOT, "build", "libted.so"))
SENTENCES = 24
CASES = [  # (ted's flags, generate()'s arguments)
    ("ngram", ["--no-repeat-ngram-size", "2"], {"no_repeat_ngram_size": 2}),
    ("repetition", ["--repetition-penalty", "1.3"], {"repetition_penalty": 1.3}),
    ("repetition-2", ["--repetition-penalty", "2"], {"repetition_penalty": 2.0}),
    ("min-length", ["--min-length", "20"], {"min_length": 20}),
    ("all", ["--no-repeat-ngram-size", "2", "--repetition-penalty", "1.3", "--min-length", "20"],
     {"no_repeat_ngram_size": 2, "repetition_penalty": 1.3, "min_length": 20}),
]


BAD_WORDS_MAX = 256  # TED_BAD_WORDS_MAX


class Rules(ctypes.Structure):
    _fields_ = [("repetition_penalty", ctypes.c_float), ("no_repeat_ngram_size", ctypes.c_int),
                ("encoder_no_repeat_ngram_size", ctypes.c_int),
                ("min_length", ctypes.c_int), ("min_new_tokens", ctypes.c_int),
                ("bad_words", ctypes.c_int * BAD_WORDS_MAX), ("bad_words_length", ctypes.c_int)]


class RulesSource(ctypes.Structure):
    _fields_ = [("ids", ctypes.POINTER(ctypes.c_int)), ("count", ctypes.c_int)]


def make_rules(penalty, ngram, min_length, min_new=0, bad_words=(), encoder_ngram=0):
    flat = [i for sequence in bad_words for i in list(sequence) + [-1]]
    rules = Rules(penalty, ngram, encoder_ngram, min_length, min_new)
    rules.bad_words[:len(flat)] = flat
    rules.bad_words_length = len(flat)
    return rules


class Error(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("message", ctypes.c_char * 1024),
                ("option", ctypes.c_int)]


def processors(penalty, ngram, min_length, eos, min_new=0, bad_words=(), encoder=None):
    """generate()'s processors for these settings, in _get_logits_processor's
    order (an encoder-decoder's prompt: the decoder start token)."""
    from transformers.generation.logits_process import (
        EncoderNoRepeatNGramLogitsProcessor, LogitsProcessorList, MinLengthLogitsProcessor,
        MinNewTokensLengthLogitsProcessor,
        NoBadWordsLogitsProcessor, NoRepeatNGramLogitsProcessor,
        RepetitionPenaltyLogitsProcessor)

    out = LogitsProcessorList()
    if penalty != 1.0:
        out.append(RepetitionPenaltyLogitsProcessor(penalty))
    if ngram > 0:
        out.append(NoRepeatNGramLogitsProcessor(ngram))
    if encoder and encoder[0] > 0:  # (n, the source ids)
        out.append(EncoderNoRepeatNGramLogitsProcessor(encoder[0], torch.tensor([encoder[1]])))
    if bad_words:
        out.append(NoBadWordsLogitsProcessor([list(w) for w in bad_words], eos))
    if min_length > 0:
        out.append(MinLengthLogitsProcessor(min_length, eos))
    if min_new > 0:
        out.append(MinNewTokensLengthLogitsProcessor(1, min_new, eos))
    return out


def load_library():
    lib = ctypes.CDLL(LIBRARY)
    lib.ted_model_load.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p),
                                   ctypes.POINTER(Error)]
    lib.ted_apply_logits_rules.argtypes = [ctypes.c_void_p, ctypes.POINTER(Rules),
                                           ctypes.POINTER(ctypes.c_int), ctypes.c_int,
                                           ctypes.POINTER(ctypes.c_float)]
    lib.ted_apply_logits_rules_source.argtypes = [
        ctypes.c_void_p, ctypes.POINTER(Rules), ctypes.POINTER(RulesSource),
        ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
    lib.ted_model_free.argtypes = [ctypes.c_void_p]
    return lib


def apply_rules(lib, model, rules, ids, logits, source=None):
    """ted_apply_logits_rules (with `source`: _source) on a copy of `logits`."""
    got = logits.copy()
    history = (ctypes.c_int * max(1, len(ids)))(*ids)
    out = got.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
    if source is None:
        lib.ted_apply_logits_rules(model, ctypes.byref(rules), history, len(ids), out)
    else:
        held = RulesSource((ctypes.c_int * max(1, len(source)))(*source), len(source))
        lib.ted_apply_logits_rules_source(model, ctypes.byref(rules), ctypes.byref(held),
                                          history, len(ids), out)
    return got


def transformers_row(procs, start, ids, logits):
    """The logits processors `procs` on `logits` after the history [start] + ids."""
    return procs(torch.tensor([[start] + ids]), torch.from_numpy(logits.copy())[None])[0].numpy()


def row_difference(got, want):
    """None when ted's row is transformers', else the first ids that differ."""
    if np.array_equal(got, want):
        return None
    bad = np.nonzero(got != want)[0][:3].tolist()
    return f"ids {bad} give {got[bad].tolist()}, transformers {want[bad].tolist()}"


def report_rows(name, problems, cases):
    report(name, problems[0] if problems else None,
           f"{cases} rows" + (f", {len(problems)} differ" if problems else ""))


def check_processors(config):
    lib = load_library()
    model, err = ctypes.c_void_p(), Error()
    if lib.ted_model_load(MODEL.encode(), ctypes.byref(model), ctypes.byref(err)):
        return fail("rules/processors", err.message.decode())
    vocab = int(config["model.tgt_vocab_size"])
    eos = int(config["tokenizer.eos_id"])
    start = int(config.get("tokenizer.decoder_start_id", config["tokenizer.bos_id"]))
    rng = np.random.default_rng(7)
    problems, cases = [], 0
    for penalty in (1.0, 1.3, 0.7):
        for ngram in (0, 1, 2, 3):
            for min_length in (0, 1, 5):
                for length in (0, 1, 2, 4, 9):
                    pool = rng.choice(vocab, size=3, replace=False).tolist() + [eos, start]
                    ids = [int(rng.choice(pool)) for _ in range(length)]
                    logits = (rng.standard_normal(vocab) * 4).astype(np.float32)
                    want = transformers_row(processors(penalty, ngram, min_length, eos),
                                            start, ids, logits)
                    got = apply_rules(lib, model, make_rules(penalty, ngram, min_length), ids,
                                      logits)
                    cases += 1
                    differ = row_difference(got, want)
                    if differ:
                        problems.append(f"penalty {penalty} ngram {ngram} min_length "
                                        f"{min_length} history {ids}: {differ}")
    check_word_rules(lib, model, vocab, eos, start, rng)
    lib.ted_model_free(model)
    report_rows("rules/processors", problems, cases)


def check_word_rules(lib, model, vocab, eos, start, rng):
    """bad_words_ids (one token, several, EOS alone, the decoder start in a
    sequence, sequences longer than the history) and min_new_tokens, with
    the other rules, against NoBadWords- and MinNewTokensLengthLogitsProcessor
    in generate()'s order."""
    problems, cases = [], 0
    for trial in range(240):
        a, b, c = (int(t) for t in rng.choice(vocab, size=3, replace=False))
        pool = [a, b, c, eos, start]
        length = int(rng.integers(0, 9))
        ids = [int(rng.choice(pool)) for _ in range(length)]
        words = [[a], [b, c], [start, a], [a, b, c], [eos], [c, c, a, b], [c, eos]]
        chosen = [w for w in words if rng.random() < 0.5] or [[b, c]]
        penalty, ngram = (1.0, 1.3)[trial % 2], (0, 2)[trial // 2 % 2]
        min_length, min_new = (0, 4)[trial // 4 % 2], int(rng.integers(0, 6))
        encoder = (int(rng.integers(0, 5)),
                   [int(rng.choice(pool)) for _ in range(int(rng.integers(1, 10)))])
        logits = (rng.standard_normal(vocab) * 4).astype(np.float32)
        want = transformers_row(processors(penalty, ngram, min_length, eos, min_new, chosen,
                                           encoder), start, ids, logits)
        rules = make_rules(penalty, ngram, min_length, min_new, chosen, encoder[0])
        got = apply_rules(lib, model, rules, ids, logits, encoder[1])
        cases += 1
        differ = row_difference(got, want)
        if differ:
            problems.append(f"bad_words {chosen} min_new_tokens {min_new} encoder {encoder} "
                            f"history {ids}: {differ}")
    report_rows("rules/processors-words", problems, cases)


def first_difference(lines, got, want):
    for line, g, w in zip(lines, got, want):
        if g != w:
            return f"{line!r}: ted {g!r}, generate() {w!r}"
    return None if len(got) == len(want) else f"{len(got)} lines, generate() {len(want)}"


def word_cases(model, tok, lines):
    """bad_words_ids taken from generate()'s plain greedy translations (the
    2nd and 3rd tokens of the first, the 1st of the second), so that they
    change some translation; min_new_tokens."""
    first, second = (tok(text_target=t).input_ids for t in es.generate(model, tok, lines[:2])[0])
    words = [first[1:3], second[:1]]
    flags = [f for w in words for f in ("--bad-words-ids", ",".join(map(str, w)))]
    return [("bad-words", flags, {"bad_words_ids": words}),
            # a translation reaches models/en-fr's length limit (127 tokens, then the
            # forced EOS: generate()'s max_length 129; the model here says 512)
            ("encoder-ngram", ["--encoder-no-repeat-ngram-size", "2"],
             {"encoder_no_repeat_ngram_size": 2, "max_length": 129}),
            ("min-new-tokens", ["--min-new-tokens", "19"], {"min_new_tokens": 19})]


def check_generate(model, tok, lines):
    plain = {}
    cases = CASES + word_cases(model, tok, lines)
    for strategy, beams in (("greedy", 1), ("beam", 4)):
        flags = ["--beam", "4"] if beams > 1 else []
        plain[strategy], _ = es.ted_translate(MODEL, lines, *flags)
        for name, ted_flags, arguments in cases:
            check_name = f"rules/{strategy}-{name}"
            scored = ["--scores"] if beams > 1 else []
            try:
                want, want_scores = es.generate(model, tok, lines, num_beams=beams,
                                                output_scores=beams > 1, **arguments)
                got, scores = es.ted_translate(MODEL, lines, *flags, *ted_flags, *scored)
            except RuntimeError as e:
                fail(check_name, str(e))
                continue
            changed = sum(g != p for g, p in zip(got, plain[strategy]))
            problem = first_difference(lines, got, want)
            far = [(line, s, w) for line, s, w in zip(lines, scores, want_scores)
                   if abs(s - w) > es.TOLERANCE]
            if not problem and far:
                problem = f"{far[0][0]!r}: score {far[0][1]}, generate() {far[0][2]}"
            if not problem and changed == 0 and (strategy, name) != ("beam", "repetition"):
                problem = "the rule changes no translation"
            report(check_name, problem, f"{len(lines)} sentences, {changed} changed by the rule")


def plain_first_token(model, tok, lines):
    """The first token of generate()'s first translation: a token to suppress
    that changes it."""
    batch = tok(lines[:1], return_tensors="pt")
    with torch.no_grad():
        return int(model.generate(**batch, num_beams=1)[0][1])


def check_export(model, tok, hf_dir, lines):
    """generation_config.json's rules through tools/export_hf.py: `ted
    translate` with no option against generate() with none."""
    from transformers import MarianMTModel

    generation = model.generation_config
    generation.no_repeat_ngram_size, generation.repetition_penalty = 2, 1.3
    generation.encoder_no_repeat_ngram_size = 3
    generation.min_new_tokens = 19  # ted's min_length 20
    suppressed = plain_first_token(model, tok, lines)
    generation.suppress_tokens = [suppressed]
    rules_dir, ted_dir = hf_dir + "-rules", hf_dir + "-ted"
    model.save_pretrained(rules_dir, safe_serialization=True)
    tok.save_pretrained(rules_dir)
    try:
        es.export(rules_dir, ted_dir)
        config = es.read_config(os.path.join(ted_dir, "config.yaml"))
        written = {key: config.get("decoding." + key) for key in
                   ("repetition_penalty", "no_repeat_ngram_size",
                    "encoder_no_repeat_ngram_size", "min_length")}
        banned = config.get("decoding.banned_ids", "")
        if written != {"repetition_penalty": "1.3", "no_repeat_ngram_size": "2",
                       "encoder_no_repeat_ngram_size": "3", "min_length": "20"} or f"{suppressed}]" not in banned:
            return fail("rules/export", f"config.yaml's decoding holds {written}, banned_ids "
                        f"{banned}, {suppressed} suppressed")
        reloaded = MarianMTModel.from_pretrained(rules_dir).eval()
        want, _ = es.generate(reloaded, tok, lines)
        got, _ = es.ted_translate(ted_dir, lines)
    except RuntimeError as e:
        return fail("rules/export", str(e))
    report("rules/export", first_difference(lines, got, want),
           f"{len(lines)} sentences, {written}, banned_ids {banned}")


def check_nllb(tmp, lines_per_way=12):
    """The rules on an NLLB-style model, whose decoder starts from EOS (the
    repetition penalty then reaches EOS, as with BART) and whose first target
    token is the forced language code: ted translate --source-lang
    --target-lang against generate(forced_bos_token_id=code), greedy and
    4 beams."""
    hf_dir, ted_dir = os.path.join(tmp, "nllb"), os.path.join(tmp, "nllb-ted")
    model, tok = es.nllb_model(hf_dir)
    model.generation_config.num_beams = 1  # ted's default then greedy, as generate()'s
    model.generation_config.save_pretrained(hf_dir)
    try:
        es.export(hf_dir, ted_dir)
    except RuntimeError as e:
        return fail("rules/nllb", str(e))
    arguments = {"no_repeat_ngram_size": 2, "repetition_penalty": 1.3, "min_length": 12}
    flags = ["--no-repeat-ngram-size", "2", "--repetition-penalty", "1.3", "--min-length", "12"]
    for languages in es.NLLB_DIRECTIONS:
        lines = es.sentences(os.path.join(es.MULTI, "test." + languages[0]))[:lines_per_way]
        for strategy, beams in (("greedy", 1), ("beam", 4)):
            name = f"rules/nllb-{languages[0][:3]}-{strategy}"
            try:
                want, _ = es.generate(model, tok, lines, languages, num_beams=beams,
                                      **arguments)
                beam = ["--beam", str(beams)] if beams > 1 else []
                got, _ = es.ted_translate(ted_dir, lines, *es.language_options(languages),
                                          *beam, *flags)
            except RuntimeError as e:
                fail(name, str(e))
                continue
            report(name, first_difference(lines, got, want), f"{len(lines)} sentences")


def main():
    config = es.read_config(os.path.join(MODEL, "config.yaml"))
    check_processors(config)
    with scratch_directory("ted-rules-") as tmp:
        model, tok = es.hf_model(os.path.join(tmp, "hf"))
        check_generate(model, tok, es.sentences()[:SENTENCES])
        check_export(model, tok, os.path.join(tmp, "hf"), es.sentences()[:SENTENCES])
        check_nllb(tmp)
    if failures():
        sys.exit(1)
    ok("rules", "done")


if __name__ == "__main__":
    main()
