"""What the scripts that hold ted against Hugging Face transformers share
(tests/parity/test_t5.py, test_bart.py, test_pegasus.py,
test_multilingual.py, test_marian.py): tools/export_hf.py and its
refusals, the multilingual test sentences and a SentencePiece model of
them, the token ids and texts of `ted tokenize`, the teacher-forced logits
and generate()'s translations. Imports torch and numpy; the caller sets up
transformers (ted_test.reference_transformers).
"""
import copy
import math
import os
import re
import shutil

import numpy as np
import torch

from ted_test import TED, compare_lines, parse_logits, quote, report, run, ted_lines, ted_problem

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXPORTER = os.path.join(ROOT, "tools", "export_hf.py")
PYTHON = os.environ.get("PYTHON", "/usr/bin/python3")  # the exporter's Python
SENTENCES = os.path.join(ROOT, "tests", "data", "multilingual-sentences.txt")
TOLERANCE = 1e-4         # max abs diff of ted's logits from the model's in float64
TRANSLATED = 48          # sentences translated per model, greedy
BEAM_SENTENCES = 24      # and with beam search
MAX_LENGTH = 20          # generate()'s default, which the export keeps
T5_PIECES = dict(pad_id=0, eos_id=1, unk_id=2)
# the searches of `ted translate --beam B` and the generate() options that
# ask the same of transformers
SEARCHES = (("greedy", "1", dict(num_beams=1)),
            ("beam", "4", dict(num_beams=4, early_stopping=True, length_penalty=1.0)))
BEAM_FLAGS = ["--early-stopping", "true", "--length-normalization", "power",
              "--length-penalty", "1.0"]
TOKEN_BATCHES = ("--max-batch-tokens", "48", "--workers", "2")


def read_sentences():
    """tests/data/multilingual-sentences.txt, its blank lines left out."""
    with open(SENTENCES, encoding="utf-8", newline="\n") as f:
        return [line for line in f.read().split("\n")[:-1] if line.strip()]


def ids_text(ids):
    return " ".join(map(str, ids))


def train_spm(tmp, sentences, name="spiece", model_type="unigram", vocab_size=600, **pieces):
    """A SentencePiece model of `sentences`, TMP/NAME.model, with the special
    pieces `pieces` (trainer options), by default T5's: <pad> 0, </s> 1,
    <unk> 2; no <s> unless `pieces` names its id."""
    import sentencepiece as spm
    corpus = os.path.join(tmp, f"{name}-corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("".join(line.strip() + "\n" for line in sentences * 3))
    spm.SentencePieceTrainer.train(
        input=corpus, model_prefix=os.path.join(tmp, name), vocab_size=vocab_size,
        model_type=model_type, character_coverage=0.999, hard_vocab_limit=False,
        minloglevel=2, num_threads=1, **{"bos_id": -1, **(pieces or T5_PIECES)})
    return os.path.join(tmp, f"{name}.model")


# ---- the exporter ------------------------------------------------------------------

def export(hf_dir, out_dir):
    """None when tools/export_hf.py succeeds, else why."""
    status, _, err = run([PYTHON, EXPORTER, hf_dir, "--out", out_dir])
    return None if status == 0 else err.strip() or f"exit {status}"


def save_and_export(name, model, tok, safetensors, tmp):
    """TMP/hf-NAME (save_pretrained of the model, as model.safetensors or
    pytorch_model.bin, and the tokenizer) exported to TMP/ted-NAME, checked
    as export/NAME: the two directories and the tokenizer as from_pretrained
    loads it from the first (as a hub download is loaded), or None after
    its FAIL."""
    hf_dir, ted_dir = os.path.join(tmp, "hf-" + name), os.path.join(tmp, "ted-" + name)
    model.save_pretrained(hf_dir, safe_serialization=safetensors)
    tok.save_pretrained(hf_dir)
    problem = export(hf_dir, ted_dir)
    report(f"export/{name}", problem,
           "model.safetensors" if safetensors else "pytorch_model.bin")
    return None if problem else (hf_dir, ted_dir, type(tok).from_pretrained(hf_dir))


def each_exported(tmp, specs, build):
    """The model of each spec of `specs` (its name first): build(index,
    spec) gives (model, tokenizer, whether to save model.safetensors),
    save_and_export saves and exports them. Yields (index, spec, model,
    hf_dir, ted_dir, the tokenizer as reloaded) for each that exports, one
    model built after the other's checks."""
    for index, spec in enumerate(specs):
        model, tok, safetensors = build(index, spec)
        dirs = save_and_export(spec[0], model, tok, safetensors, tmp)
        if dirs:
            yield (index, spec, model, *dirs)


def export_half(tmp, model, tok):
    """The model saved in float16 (TMP/hf-half) and exported, checked as
    half/export: (the float32 model transformers loads from that directory,
    ted's directory), or None after its FAIL."""
    hf_dir = os.path.join(tmp, "hf-half")
    copy.deepcopy(model).half().save_pretrained(hf_dir)
    tok.save_pretrained(hf_dir)
    problem = export(hf_dir, hf_dir + "-ted")
    report("half/export", problem, "float16 model.safetensors")
    if problem:
        return None
    return type(model).from_pretrained(hf_dir, torch_dtype=torch.float32).eval(), hf_dir + "-ted"


def check_refusal(name, pattern, hf_dir, out_dir):
    """tools/export_hf.py refuses hf_dir: exit 1 and one line of standard
    error, which matches the regular expression `pattern`."""
    status, _, err = run([PYTHON, EXPORTER, hf_dir, "--out", out_dir])
    lines = err.strip().splitlines()
    good = status == 1 and len(lines) == 1 and re.search(pattern, lines[0])
    report(name, None if good else
           f"exit {status}, stderr {err.strip()[:300]!r}, expected one line matching "
           f"{pattern!r}", lines[0] if lines else "")


def check_refusals(tmp, prefix, cases):
    """Each case (CASE, hf_dir, pattern, edit): a copy of hf_dir that
    edit(copy) spoils, refused as check_refusal says (check PREFIX + CASE)."""
    for case, hf_dir, pattern, edit in cases:
        case_dir = os.path.join(tmp, f"refuse-{case}")
        shutil.copytree(hf_dir, case_dir)
        edit(case_dir)
        check_refusal(prefix + case, pattern, case_dir, case_dir + "-ted")


# ---- token ids and texts ------------------------------------------------------------

def check_token_ids(name, ted_dir, lines, source, target, what="sentences"):
    """tokenize/NAME-source-ids and tokenize/NAME-target-ids: `ted tokenize`
    (and --target) of the lines against the reference's `source` and
    `target` ids (as ids_text writes them)."""
    for side, args, want in (("source", [], source), ("target", ["--target"], target)):
        got, problem = ted_lines(["tokenize", "-m", ted_dir] + args, lines)
        if problem:
            report(f"tokenize/{name}-{side}-ids", problem)
        else:
            compare_lines(f"tokenize/{name}-{side}-ids", got, want, lines, what)


def check_decode(name, ted_dir, tok, sequences, note=""):
    """`ted tokenize --decode` of each id sequence against
    tok.decode(skip_special_tokens=True); what ted writes must be valid
    UTF-8 itself."""
    lines = [ids_text(ids) for ids in sequences]
    args = [TED, "tokenize", "-m", ted_dir, "--decode"]
    status, out, err = run(args, "".join(line + "\n" for line in lines), binary=True)
    if status != 0:
        return report(name, f"`{quote(args)}` exited {status}: {err}")
    try:
        got = out.decode("utf-8").split("\n")
    except UnicodeDecodeError as e:
        return report(name, f"ted wrote invalid UTF-8: {e}")
    if len(got) != len(lines) + 1 or got[-1]:
        return report(name, f"{len(got) - 1} lines for {len(lines)}")
    want = [tok.decode(ids, skip_special_tokens=True) for ids in sequences]
    compare_lines(name, got[:-1], want, lines, "id sequences", note=note)


def ted_texts(ted_dir, sequences):
    """`ted tokenize --decode` of the id sequences: (texts, None) or (None, why)."""
    return ted_lines(["tokenize", "-m", ted_dir, "--decode"], [ids_text(i) for i in sequences])


# ---- logits -------------------------------------------------------------------------

def teacher_forced_logits(model, source_ids, decoder_ids):
    """The model's logits (decoder positions, vocabulary) for the source ids
    with the decoder fed decoder_ids, as a NumPy array; a model in float64
    computes them in float64."""
    torch.set_default_dtype(torch.float64)  # transformers builds its masks in it
    try:
        with torch.no_grad():
            out = model(input_ids=torch.tensor([source_ids]),
                        decoder_input_ids=torch.tensor([decoder_ids]))
    finally:
        torch.set_default_dtype(torch.float32)
    return out.logits[0].numpy()


def pair_cases(pairs, options=()):
    """The cases of logits_difference for (source, target) pairs."""
    return [(["--source", s, "--target", t, *options], (s, t)) for s, t in pairs]


def logits_difference(ted_dir, model, reference, cases, tolerance=math.inf):
    """`ted logits -m TED_DIR ARGS` of each case (ARGS, what) against
    reference(the model in float64, what): (largest max abs diff, largest
    |logit|), or (None, why) at the first case that fails or differs by
    more than tolerance."""
    worst, largest = 0.0, 0.0
    model.double()
    try:
        for args, what in cases:
            args = ["logits", "-m", ted_dir] + args
            out, problem = ted_problem(args)
            if problem:
                return None, problem
            want = reference(model, what)
            try:
                got = parse_logits(out, *want.shape)
            except ValueError as e:
                return None, f"`{quote([TED] + args)}`: {e}"
            diff = float(np.abs(got - want).max())
            worst, largest = max(worst, diff), max(largest, float(np.abs(want).max()))
            if not diff <= tolerance:
                return None, f"max abs diff {diff:.3g} > {tolerance} for {what!r}"
    finally:
        model.float()
    return worst, largest


def check_logits(name, ted_dir, model, reference, cases, tolerance=TOLERANCE):
    """logits_difference within tolerance, checked as NAME."""
    worst, largest = logits_difference(ted_dir, model, reference, cases, tolerance)
    if worst is None:
        return report(name, largest)
    report(name, detail=f"max abs diff {worst:.2e} over {len(cases)} sentence pairs "
                        f"(logits up to {largest:.1f})")


# ---- generate() ---------------------------------------------------------------------

def generate_batches(model, tok, lines, size=32, **options):
    """generate(**options) on the lines, `size` at a time (padded): each
    batch's result."""
    for start in range(0, len(lines), size):
        batch = tok(lines[start:start + size], return_tensors="pt", padding=True)
        with torch.no_grad():
            result = model.generate(**batch, **options)
        yield result


def eos_gap(model, tok, sentences, skip=0, **options):
    """(how far EOS's score is below the best at the 5th percentile of the
    greedy steps on the first 16 sentences, the first `skip` and the last
    left out; generate()'s output)."""
    batch = tok(sentences[:16], return_tensors="pt", padding=True)
    with torch.no_grad():
        out = model.generate(**batch, num_beams=1, do_sample=False, max_length=MAX_LENGTH,
                             output_scores=True, return_dict_in_generate=True, **options)
    scores = torch.stack(out.scores[skip:-1], 1)
    gap = torch.quantile((scores.max(-1).values - scores[..., tok.eos_token_id]).flatten(), 0.05)
    return gap, out


def raise_eos_bias(model, tok, sentences, skip=0):
    """Raises EOS's final_logits_bias until EOS is the most likely token at
    about one greedy step in twenty (eos_gap), so that translations end at
    various lengths."""
    gap, _ = eos_gap(model, tok, sentences, skip)
    with torch.no_grad():
        model.final_logits_bias[0, tok.eos_token_id] += gap
    return model


def hf_generate(model, tok, sentences, **options):
    """generate()'s target ids, the decoder start dropped, cut at EOS."""
    out = []
    for result in generate_batches(model, tok, sentences, do_sample=False,
                                   max_length=MAX_LENGTH, **options):
        for ids in result.tolist():
            ids = ids[1:]
            out.append(ids[:ids.index(tok.eos_token_id)] if tok.eos_token_id in ids else ids)
    return out


def translate_args(ted_dir, beam):
    """`ted translate` with beam search as generate() does it with SEARCHES' options."""
    return ["translate", "-m", ted_dir, "--beam", beam] + (BEAM_FLAGS if beam != "1" else [])


def translations(name, ted_dir, model, tok, lines, beam, options, batches=()):
    """(ted's lines, transformers' as ted writes their ids), or None after
    reporting why; `batches`: ted's batching options."""
    got, problem = ted_lines(translate_args(ted_dir, beam) + list(batches), lines)
    if problem:
        return report(name, problem)
    want, problem = ted_texts(ted_dir, hf_generate(model, tok, lines, **options))
    if problem:
        return report(name, problem)
    return got, want


def check_translations(name, ted_dir, model, tok, sentences, token_batches=True, then=None):
    """greedy/NAME and beam/NAME: ted's translations of the first
    TRANSLATED (BEAM_SENTENCES) sentences against generate()'s, all
    identical; with token_batches, greedy-token-batches/NAME and
    beam-token-batches/NAME the same with TOKEN_BATCHES. then(kind, lines,
    options, ted's lines) follows each search whose last run gave lines."""
    runs = (("", ()), ("-token-batches", TOKEN_BATCHES)) if token_batches else (("", ()),)
    for kind, beam, options in SEARCHES:
        lines = sentences[:TRANSLATED if kind == "greedy" else BEAM_SENTENCES]
        for suffix, batches in runs:
            check = f"{kind}{suffix}/{name}"
            result = translations(check, ted_dir, model, tok, lines, beam, options, batches)
            if result:
                compare_lines(check, *result, lines, "sentences",
                              note=f" ({len(set(result[1]))} different translations)")
        if result and then:
            then(kind, lines, options, result[0])
