"""The Python package (python/ted) against the ted program, which is the
reference each check names: translations line for line on the shipped
models' test sets, logits bit for bit, attention as `ted attention --json`
writes it, error messages as ted prints them; then threads, memory and
the ctypes structs against the C compiler's sizes and its functions against
the header and the library's exports.

Runs under pytest (tests/python/run.sh, with conftest.py printing one
"ok NAME" / "FAIL NAME: why" line per test), or alone:
    python tests/python/test_package.py [WORD...]
which prints the same lines (WORD: only the tests whose name holds it). The
timings (bench_*: overhead, throughput, threads) are no tests: `make
bench-python` runs them so, by name. TED (default build/ted) is the program, and
`import ted` must find the package (installed, or PYTHONPATH=python).
QUICK=1 (the sanitized build) takes the first 60 lines of each test set and
fewer calls.
"""
import atexit
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

import ted

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TED = os.path.abspath(os.environ.get("TED", os.path.join(ROOT, "build", "ted")))
QUICK = os.environ.get("QUICK") == "1"
MODELS = {"toy": os.path.join(ROOT, "models", "toy-en-fr"),
          "natural": os.path.join(ROOT, "models", "en-fr")}
LINES = 60 if QUICK else None

_translators = {}


class Skipped(Exception):
    """A check this machine cannot make."""


def skip(reason):
    try:
        import pytest
    except ImportError:
        raise Skipped(reason) from None
    pytest.skip(reason)


def translator(name):
    if name not in _translators:
        _translators[name] = ted.Translator(MODELS[name])
    return _translators[name]


def read_lines(name):
    with open(os.path.join(MODELS[name], "test.en"), encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines[:LINES] if LINES else lines


def run_ted(*args, input_text=None):
    """ted's standard output; a failure raises with its standard error."""
    p = subprocess.run([TED] + list(args), input=input_text, capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError("ted %s: exit %d: %s" % (" ".join(args[:3]), p.returncode,
                                                      p.stderr.strip()[:300]))
    return p.stdout


def ted_error(*args):
    """ted's standard error when it fails (it must)."""
    p = subprocess.run([TED] + list(args), capture_output=True, text=True)
    assert p.returncode != 0, "ted %s succeeded" % " ".join(args)
    return p.stderr


# ------------------------------------------------------------ translation

MODES = {
    "greedy": ([], {}),
    "beam4": (["--beam", "4"], {"beam_size": 4}),
    "sample": (["--sample", "--seed", "7"], {"sample": True, "seed": 7}),
    "nbest3-scores": (["--beam", "4", "--n-best", "3", "--scores"],
                      {"beam_size": 4, "n_best": 3, "return_scores": True}),
    "beam3-early-stopping-false": (["--beam", "3", "--early-stopping", "false", "--scores"],
                                   {"beam_size": 3, "early_stopping": False,
                                    "return_scores": True}),
    "sample-nbest2-scores": (["--sample", "--seed", "11", "--top-k", "20", "--temperature",
                              "0.8", "--n-best", "2", "--scores"],
                             {"sample": True, "seed": 11, "top_k": 20, "temperature": 0.8,
                              "n_best": 2, "return_scores": True}),
    "rules-beam3-scores": (["--beam", "3", "--no-repeat-ngram-size", "2", "--repetition-penalty",
                            "1.5", "--min-length", "12", "--max-length", "30", "--scores"],
                           {"beam_size": 3, "no_repeat_ngram_size": 2, "repetition_penalty": 1.5,
                            "min_length": 12, "max_length": 30, "return_scores": True}),
    "words-beam2-scores": (["--beam", "2", "--bad-words-ids", "5", "--bad-words-ids", "7,8",
                            "--min-new-tokens", "6", "--max-length", "30", "--scores",
                            "--encoder-no-repeat-ngram-size", "2"],
                           {"beam_size": 2, "bad_words_ids": [[5], [7, 8]], "min_new_tokens": 6,
                            "max_length": 30, "return_scores": True,
                            "encoder_no_repeat_ngram_size": 2}),
}


def moses_lines(results, n_best):
    """Python's hypotheses as `ted translate --n-best N --scores` prints them."""
    out = []
    for i, r in enumerate(results):
        for h in (r if n_best > 1 else [r]):
            fields = [str(i), h.text, "%.6f" % h.score, "%.6f" % h.log_prob,
                      " ".join("%.6f" % p for p in h.token_log_probs)]
            out.append(" ||| ".join(fields))
    return out


def check_translate(model, mode):
    args, options = MODES[mode]
    lines = read_lines(model)
    want = run_ted("translate", "-m", MODELS[model], *args,
                   input_text="\n".join(lines) + "\n").split("\n")[:-1]
    got = translator(model).translate(lines, **options)
    if options.get("return_scores"):
        got = moses_lines(got, options.get("n_best", 1))
    assert len(got) == len(want), "%d lines, ted %d" % (len(got), len(want))
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, "line %d: %r, ted %r" % (i + 1, g, w)


def _make_translate_test(model, mode):
    def test():
        check_translate(model, mode)
    test.__name__ = "test_translate_%s_%s" % (model, mode.replace("-", "_"))
    return test


for _model in MODELS:
    for _mode in MODES:
        _test = _make_translate_test(_model, _mode)
        globals()[_test.__name__] = _test


def test_readme_sentence():
    got = translator("natural").translate("The black cat eats the small bird.")
    assert got == "Le chat noir mange le petit oiseau.", got
    got = translator("natural").translate(["The black cat eats the small bird.", ""])
    assert got == ["Le chat noir mange le petit oiseau.", ""], got


def test_tokenize_matches_cli():
    for name in MODELS:
        t = translator(name)
        for line in read_lines(name)[:20]:
            want = [int(x) for x in run_ted("tokenize", "-m", MODELS[name], line).split()]
            assert t.tokenize(line) == want, "%s: %r: %r, ted %r" % (name, line,
                                                                    t.tokenize(line), want)
            target = [int(x) for x in run_ted("tokenize", "-m", MODELS[name], "--target",
                                              line).split()]
            assert t.tokenize_target(line) == target
        hypothesis = t.translate("the dog sleeps .", return_scores=True)
        assert t.detokenize(hypothesis.ids) == hypothesis.text


def test_config_is_the_yaml():
    """Translator.config holds every key config.yaml sets, with its value
    (read here with PyYAML, the independent reference)."""
    try:
        import yaml
    except ImportError:
        skip("PyYAML is not installed")
    for name in MODELS:
        with open(os.path.join(MODELS[name], "config.yaml"), encoding="utf-8") as f:
            written = yaml.safe_load(f)
        config = translator(name).config
        for section, value in written.items():
            if isinstance(value, dict):
                for key, v in value.items():
                    assert config[section][key] == v, "%s: %s.%s: %r, config.yaml %r" % (
                        name, section, key, config[section][key], v)
            else:
                assert config[section] == value
        tokenizer = written["tokenizer"]  # the shipped models are bilingual
        assert translator(name).languages == {"source": [tokenizer["source_lang"]],
                                              "target": [tokenizer["target_lang"]]}


# ------------------------------------------------------------ learners

PAIRS = {"toy": [("the black cat eats the small bird .", "le chat noir mange le petit oiseau ."),
                 ("the dog sleeps .", ""), ("the zebra sleeps .", "le zèbre dort .")],
         "natural": [("The black cat eats the small bird.", "Le chat noir mange le petit oiseau."),
                     ("The dog sleeps.", "")]}


def test_logits_match_cli_bit_for_bit():
    for name, pairs in PAIRS.items():
        for source, target in pairs:
            text = run_ted("logits", "-m", MODELS[name], "--source", source, "--target", target)
            want = np.array([[np.float32(x) for x in line.split()]
                             for line in text.strip().split("\n")], dtype=np.float32)
            got = translator(name).logits(source, target)
            assert got.dtype == np.float32 and got.shape == want.shape, (got.shape, want.shape)
            assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), \
                "%s %r: largest difference %g" % (name, source, np.abs(got - want).max())


def attention_json(name, source):
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "a.json")
        run_ted("attention", "-m", MODELS[name], "--json", path, source)
        with open(path, encoding="utf-8") as f:
            return json.load(f)


def test_trace_matches_ted_attention_json():
    for name, pairs in PAIRS.items():
        for source, _ in pairs:
            want = attention_json(name, source)
            tr = translator(name).trace(source)
            assert tr.text == want["translation"], (tr.text, want["translation"])
            assert tr.text == translator(name).translate(source)
            assert len(tr.steps) == len(want["steps"])
            for step, w in zip(tr.steps, want["steps"]):
                assert step.chosen == w["id"]
                assert [c.id for c in step.candidates] == [c["id"] for c in w["top"]]
                assert abs(step.probability - w["p"]) <= 1e-6 * max(1.0, w["p"])
            for key, got in (("cross_attention", tr.cross_attention),
                             ("decoder_self_attention", tr.self_attention),
                             ("encoder_self_attention", tr.encoder_attention)):
                ref = want[key]
                for layer, heads in enumerate(ref):
                    for head, rows in enumerate(heads):
                        for i, row in enumerate(rows):
                            g = got[layer, head, i, :len(row)]
                            assert np.array_equal(g, np.array(row, dtype=np.float32)), \
                                "%s %s layer %d head %d row %d" % (name, key, layer, head, i)


def test_attention_rows_sum_to_one():
    for name, pairs in PAIRS.items():
        for source, _ in pairs:
            tr = translator(name).trace(source)
            s = len(tr.source_ids)
            assert tr.encoder_attention.shape[2:] == (s, s)
            for what, a in (("encoder", tr.encoder_attention), ("cross", tr.cross_attention),
                            ("decoder", tr.self_attention)):
                sums = a.astype(np.float64).sum(axis=-1)
                assert np.all(np.abs(sums - 1) <= 1e-5), "%s %s: %s" % (name, what, sums)
            # the masked self-attention: nothing above the diagonal
            n = tr.self_attention.shape[2]
            assert not np.any(np.triu(np.ones((n, n)), 1) * tr.self_attention)


def test_trace_force():
    t = translator("toy")
    free = t.trace("the black cat eats the small bird .", top_k=3)
    other = free.steps[1].candidates[1].id
    forced = t.trace("the black cat eats the small bird .", force={2: other}, top_k=3)
    assert forced.steps[0].chosen == free.steps[0].chosen
    assert forced.steps[1].chosen == other and forced.steps[1].forced
    assert forced.steps[2].input == other
    assert len(forced.steps[1].candidates) == 3
    expect_error(ted.ArgumentError, lambda: t.trace("the dog .", force={1: 10 ** 6}),
                 "force[1]")
    expect_error(ted.ArgumentError, lambda: t.trace("the dog .", force={0: 5}),
                 "force step: 0 is not a whole number from 1")


def test_trace_rules_say_what_they_banned():
    """trace(no_repeat_ngram_size=2) chooses as translate() with the rule,
    and a candidate says it is banned exactly when the rule's definition
    (a 2-gram of the prefix, the decoder's start token first) bans it."""
    t = translator("toy")
    source = "the cat eats the cat ."
    tr = t.trace(source, no_repeat_ngram_size=2, top_k=5)
    assert tr.text == t.translate(source, no_repeat_ngram_size=2)
    assert tr.text != t.translate(source)
    seen = 0
    for step in tr.steps:
        prefix = [s.input for s in tr.steps[:step.index]]
        banned = {prefix[i + 1] for i in range(len(prefix) - 1) if prefix[i] == prefix[-1]}
        for c in step.candidates:
            want = ("banned: would repeat the 2-gram '%s %s'" %
                    (t.target_token(prefix[-1]), c.token)) if c.id in banned else ""
            assert (c.why, c.banned) == (want, bool(want)), (step.index, c)
            seen += bool(want)
    assert seen, "no candidate banned: nothing compared"
    assert all(not c.why for s in t.trace(source).steps for c in s.candidates)
    try:
        t.trace(source, beam_size=2)
    except TypeError as e:
        assert "beam_size" in str(e), str(e)
    else:
        raise AssertionError("trace(beam_size=2): no error")


def test_trace_steps_count_from_1_as_ted_step():
    """trace(force={N: id}) forces the step `ted step --force N:TOKEN`
    forces, and Step.index is the N of its "step N:" lines."""
    source = "the black cat eats the small bird ."
    t = translator("toy")
    token = "oiseau"
    out = run_ted("step", "-m", MODELS["toy"], "--auto", "--force", "2:" + token, source)
    want = []
    for line in out.split("\n"):
        if line.startswith("step ") and ": chosen '" in line:
            number, rest = line[5:].split(": chosen '", 1)
            want.append((int(number), rest.split("'")[0], "(forced" in rest))
    tr = t.trace(source, force={2: t.tokenize_target(token)[0]})
    got = [(s.index, s.token, s.forced) for s in tr.steps]
    assert got == want, (got, want)
    assert want[1] == (2, token, True), want


def test_trace_forces_words_as_typed():
    """trace(force={N: word}) takes a word as a learner types it, as ted
    step does: on a SentencePiece model the pieces Python's sentencepiece
    makes of it (the word-initial "▁noire" for "noire"; several pieces, one
    a step), each chosen as forced; an unknown word is an ArgumentError."""
    import sentencepiece
    spm = sentencepiece.SentencePieceProcessor(
        model_file=os.path.join(MODELS["natural"], "target.spm"))
    t = translator("natural")
    for word in ("noire", "chatxq"):
        pieces = spm.encode(word, out_type=str)
        tr = t.trace("the black cat", force={2: word})
        got = [(s.token, s.forced) for s in tr.steps[1:1 + len(pieces)]]
        assert got == [(p, True) for p in pieces], (word, got, pieces)
        assert not tr.steps[0].forced
    expect_error(ted.ArgumentError, lambda: t.trace("the cat", force={1: "chatxq", 2: 5}),
                 "forced twice")
    toy = translator("toy")
    expect_error(ted.ArgumentError, lambda: toy.trace("the dog .", force={1: "zzyzx"}),
                 "force[1]")


# ------------------------------------------------------------ languages

_multilingual = {}


def multilingual(layout):
    """A Translator of a multilingual copy of tests/data/tiny-model
    (tests/lib/ted_test.py: "forced", NLLB's layout with target codes t8
    and t9; "source", multi-target Marian's with >>s6<< and >>s7<<)."""
    if layout not in _multilingual:
        sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
        from ted_test import tiny_multilingual_model
        work = tempfile.mkdtemp(prefix="ted-python-languages-")
        atexit.register(shutil.rmtree, work, True)
        _multilingual[layout] = ted.Translator(tiny_multilingual_model(
            os.path.join(work, layout), layout))
    return _multilingual[layout]


def vocabulary_ids(model_dir, tokens):
    """Ids as the vocabulary file numbers its lines."""
    with open(os.path.join(model_dir, "vocab.src"), encoding="utf-8") as f:
        vocab = f.read().split("\n")
    return [vocab.index(t) for t in tokens]


def test_languages_tokenize():
    tiny = os.path.join(ROOT, "tests", "data", "tiny-model")
    marian, forced = multilingual("source"), multilingual("forced")
    assert marian.languages == {"source": ["en"], "target": ["s6", "s7"]}
    assert forced.languages == {"source": [], "target": ["t8", "t9"]}
    # Marian: the code token first, no BOS, EOS last (vocab.src's s7 is >>s7<<)
    eos = vocabulary_ids(tiny, ["<eos>"])
    want = vocabulary_ids(tiny, ["s7", "s0", "s1"]) + eos
    assert marian.tokenize("s0 s1", target_lang="s7") == want
    assert marian.tokenize("s0 s1", source_lang="en", target_lang="s7") == want
    assert marian.tokenize("s0 s1") == want[1:]  # the code is optional, as MarianTokenizer has it
    # NLLB: the target code is forced as a target token, not put in the source
    assert forced.tokenize("s0 s1", target_lang="t9") == vocabulary_ids(
        tiny, ["<bos>", "s0", "s1", "<eos>"])
    expect_error(ted.ArgumentError, lambda: forced.tokenize("s0 s1"),
                 "no target language given", "t8, t9")
    expect_error(ted.ArgumentError, lambda: forced.tokenize("s0", target_lang="de"),
                 "unknown language code 'de'")
    expect_error(ted.ArgumentError, lambda: marian.tokenize("s0", source_lang="fr"),
                 "unknown language code 'fr'")


LANGUAGE_LINES = ["s0 s1 s2", "s3 s4", "", "s5 s0 s1 s2 s3", "s1"]


def test_languages_translate_matches_cli():
    for layout, codes in (("forced", ("t8", "t9")), ("source", ("s6", "s7"))):
        t = multilingual(layout)
        for code in codes:
            for args, options in (MODES["greedy"], MODES["nbest3-scores"],
                                  MODES["sample-nbest2-scores"]):
                want = run_ted("translate", "-m", t.model_dir, "--target-lang", code, *args,
                               input_text="\n".join(LANGUAGE_LINES) + "\n").split("\n")[:-1]
                got = t.translate(LANGUAGE_LINES, target_lang=code, **options)
                if options.get("return_scores"):
                    got = moses_lines(got, options.get("n_best", 1))
                assert got == want, "%s %s %s: %r, ted %r" % (layout, code, args, got, want)
    forced = multilingual("forced")
    greedy = forced.translate(LANGUAGE_LINES, target_lang="t8", return_scores=True)
    assert all(h.tokens[0] == "t8" for h in greedy if h.text), [h.tokens for h in greedy]
    # a missing language is a bad argument, as an unknown one is
    for call in (lambda: forced.translate("s0 s1"), lambda: forced.translate([""]),
                 lambda: forced.logits("s0", "t0"), lambda: forced.trace("s0 s1")):
        expect_error(ted.ArgumentError, call, "no target language given")


def test_languages_logits_and_trace_match_cli():
    t = multilingual("forced")
    for code in ("t8", "t9"):
        text = run_ted("logits", "-m", t.model_dir, "--target-lang", code, "--source", "s0 s1",
                       "--target", "t0 t1")
        want = np.array([[np.float32(x) for x in line.split()]
                         for line in text.strip().split("\n")], dtype=np.float32)
        got = t.logits("s0 s1", "t0 t1", target_lang=code)
        assert got.shape == want.shape == (4, 14), (got.shape, want.shape)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
        with tempfile.TemporaryDirectory() as work:
            path = os.path.join(work, "a.json")
            run_ted("attention", "-m", t.model_dir, "--target-lang", code, "--json", path,
                    "s0 s1 s2")
            with open(path, encoding="utf-8") as f:
                attention = json.load(f)
        tr = t.trace("s0 s1 s2", target_lang=code)
        assert tr.tokens[0] == code and tr.steps[0].forced, (tr.tokens, tr.steps[0])
        assert [s.chosen for s in tr.steps] == [s["id"] for s in attention["steps"]]
        assert tr.text == attention["translation"] == t.translate("s0 s1 s2", target_lang=code)


# ------------------------------------------------------------ threads

def test_threads_give_the_same_outputs():
    t = translator("natural")
    lines = read_lines("natural")[:200]
    want = t.translate(lines)
    results = [None] * 8
    errors = []

    def work(k):
        try:
            results[k] = t.translate(lines)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    for k in range(8):
        assert results[k] == want, "thread %d differs" % k


def test_each_translator_has_its_own_pool():
    """threads= makes a pool of the Translator's own (ted_threads), which a
    later Translator's threads= leaves as it is, and on which it translates
    what the process's pool translates, with two Translators translating at
    once from two Python threads."""
    lines = read_lines("natural")[:40]
    want = ted.Translator(MODELS["natural"]).translate(lines)
    one = ted.Translator(MODELS["natural"], threads=1)
    two = ted.Translator(MODELS["natural"], threads=2)
    cpus = len(os.sched_getaffinity(0))
    assert one._threads.count() == 1, one._threads.count()
    assert two._threads.count() == min(2, cpus), two._threads.count()
    results, errors = {}, []

    def work(name, t):
        try:
            results[name] = t.translate(lines)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(name, t))
               for name, t in (("one", one), ("two", two))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    assert results["one"] == results["two"] == want
    assert one._threads.count() == 1
    one.close()
    two.close()


def bench_threads_are_faster_than_one():
    """The GIL is released in C: 8 threads translating 1/8 of the set each
    finish before one thread translating it all (on 2 or more cores)."""
    if (os.cpu_count() or 1) < 2:
        skip("one core")
    t = translator("natural")
    lines = read_lines("natural")[:None if not QUICK else 40]
    parts = [lines[k::8] for k in range(8)]
    best = None
    for _ in range(3):
        start = time.perf_counter()
        for part in parts:
            t.translate(part)
        serial = time.perf_counter() - start
        threads = [threading.Thread(target=t.translate, args=(part,)) for part in parts]
        start = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        parallel = time.perf_counter() - start
        best = (serial, parallel)
        if parallel < serial:
            break
    serial, parallel = best
    load = os.getloadavg()[0]
    print("info threads: one thread %.2fs, 8 threads %.2fs (%d cores, load %.1f)" %
          (serial, parallel, os.cpu_count(), load))
    if parallel >= serial and load >= os.cpu_count():
        # other programs hold the cores: no room for a speed-up to show (that
        # the GIL is released, another-thread-runs-during-a-translation shows)
        skip("the machine is busy (load %.1f on %d cores): 8 threads %.2fs, one %.2fs" %
             (load, os.cpu_count(), parallel, serial))
    assert parallel < serial, "8 threads %.2fs, one %.2fs" % (parallel, serial)


def test_another_thread_runs_during_a_translation():
    t = translator("natural")
    lines = read_lines("natural")[:300 if not QUICK else 30]
    ticks = [0]
    done = threading.Event()

    def count():
        while not done.is_set():
            ticks[0] += 1
            time.sleep(0.001)

    th = threading.Thread(target=count)
    th.start()
    start = time.perf_counter()
    t.translate(lines, beam_size=4)
    seconds = time.perf_counter() - start
    done.set()
    th.join()
    # the ticker sleeps 1 ms a tick: held out by the GIL it would not run at all
    assert ticks[0] >= max(5, seconds * 100), "%d ticks in %.2fs" % (ticks[0], seconds)


# ------------------------------------------------------------ errors

def expect_error(cls, call, *fragments):
    try:
        call()
    except ted.Error as e:
        assert isinstance(e, cls), "%s, not %s: %s" % (type(e).__name__, cls.__name__, e)
        for fragment in fragments:
            assert fragment in str(e), "%r not in %r" % (fragment, str(e))
        return e
    raise AssertionError("no error")


def test_missing_directory():
    missing = os.path.join(tempfile.gettempdir(), "ted-no-such-model")
    e = expect_error(ted.FileError, lambda: ted.Translator(missing), missing)
    assert str(e) in ted_error("translate", "-m", missing, "x"), (str(e), ted_error(
        "translate", "-m", missing, "x"))


UNPICKLE_SCRIPT = r"""
import pickle, socket, sys
import ted
data = sys.stdin.buffer.read()
try:
    t = pickle.loads(data)
except ted.Error as e:
    again = pickle.loads(pickle.dumps(e))  # an engine sends it back so
    print("error %s %s" % (type(again).__name__, again))
    sys.exit(0)
u = pickle.loads(data)
maps = [line for line in open("/proc/self/maps") if line.rstrip().endswith(".safetensors")]
print("host %s" % socket.gethostname())
print("one model %s" % (t._owner is u._owner))
print("mapped %d" % len(maps))
print("\n".join(t.translate(sys.argv[1:])))
"""


def test_pickle_reopens_the_model_in_another_process():
    """A pickled Translator (its directory given relative) unpickles in
    another process, started elsewhere, as the model opened there, its
    weights mapped from the file, once per process however often it is
    unpickled, and translates as `ted translate`; closing the original
    first changes nothing. A directory missing there raises ted.FileError
    with ted's message for it, naming the host, and the error pickles
    (class and message) as an engine sends it back."""
    lines = read_lines("natural")[:20]
    want = run_ted("translate", "-m", MODELS["natural"], input_text="\n".join(lines) + "\n")
    t = ted.Translator(os.path.relpath(MODELS["natural"]), threads=1)
    data = __import__("pickle").dumps(t)
    t.close()
    p = subprocess.run([sys.executable, "-c", UNPICKLE_SCRIPT] + lines, input=data,
                       capture_output=True, cwd=tempfile.gettempdir())
    assert p.returncode == 0, p.stderr.decode()[-1500:]
    out = p.stdout.decode().split("\n")
    assert out[1:3] == ["one model True", "mapped 1"], out[:3]
    assert "\n".join(out[3:]) == want, (out[3:6], want.split("\n")[:3])
    with tempfile.TemporaryDirectory() as work:
        model = os.path.join(work, "en-fr")
        shutil.copytree(MODELS["natural"], model)
        data = __import__("pickle").dumps(ted.Translator(model))
        shutil.rmtree(model)
        p = subprocess.run([sys.executable, "-c", UNPICKLE_SCRIPT], input=data,
                           capture_output=True)
        message = ted_error("translate", "-m", model, "x").strip()
    got = p.stdout.decode().strip()
    assert got.startswith("error FileError on %s: " % out[0].split(" ", 1)[1]), got
    assert got.split(": ", 1)[1] in message, (got, message)


def test_partition_threads_match_cli():
    """A partition as ted.ray, ted.spark and ted.dask translate it
    (ted._batch.translate_texts), on 2 threads (pieces cut by length,
    translated at once on one Translator): equal to `ted translate`, in
    order; missing values (None, NaN) stay None."""
    from ted import _batch
    lines = read_lines("natural")[:300]
    want = run_ted("translate", "-m", MODELS["natural"],
                   input_text="\n".join(lines) + "\n").split("\n")[:-1]
    texts = list(lines)
    texts[5:5] = [None, float("nan")]
    got = _batch.translate_texts(translator("natural"), texts, 2)
    assert got[5:7] == [None, None], got[5:7]
    del got[5:7]
    assert got == want, next((i, a, b) for i, (a, b) in enumerate(zip(got, want)) if a != b)


def bad_model(work, config=None, weights=None):
    """A copy of the toy model with one file replaced."""
    model = os.path.join(work, "model")
    shutil.copytree(MODELS["toy"], model)
    if config is not None:
        shutil.copyfile(config, os.path.join(model, "config.yaml"))
    if weights is not None:
        with open(os.path.join(model, "model.safetensors"), "r+b") as f:
            f.truncate(weights)
    return model


def test_bad_model_files():
    cases = [(ted.ConfigError, {"config": os.path.join(ROOT, "tests", "bad", "files",
                                                       "config-alias-key.yaml")}),
             (ted.Error, {"weights": 1000})]
    for cls, change in cases:
        with tempfile.TemporaryDirectory() as work:
            model = bad_model(work, **change)
            e = expect_error(cls, lambda: ted.Translator(model))
            assert str(e) and str(e) in ted_error("translate", "-m", model, "x"), str(e)


def test_bad_input():
    t = translator("toy")
    e = expect_error(ted.InputError, lambda: t.translate(b"the \xff dog"), "invalid UTF-8")
    assert e.status_name
    expect_error(ted.InputError, lambda: t.translate(["the dog", "the \udc80 cat"]),
                 "sentence 2", "invalid UTF-8")
    expect_error(ted.InputError, lambda: t.translate("the\0dog"), "NUL byte")
    expect_error(ted.InputError, lambda: t.translate("the dog " * 3000), "max_positions")
    expect_error(ted.ArgumentError, lambda: t.translate("the dog", source_lang="xx"),
                 "unknown language code 'xx'")
    expect_error(ted.ArgumentError, lambda: t.translate("the dog", target_lang="de"),
                 "unknown language code 'de'")
    assert t.translate("the dog sleeps .", source_lang="en", target_lang="fr") == \
        t.translate("the dog sleeps .")
    try:
        t.translate(42)
    except TypeError:
        pass
    else:
        raise AssertionError("a number was translated")


def test_bad_options():
    t = translator("toy")
    cases = [({"beam_size": 0}, "beam_size: 0 is not a whole number from 1 to 1024"),
             ({"beam_size": 2, "sample": True}, "beam_size and sample=True exclude each other"),
             ({"temperature": 0.5}, "temperature applies to sampling; add sample=True"),
             ({"sample": True, "temperature": 0}, "temperature: 0 is not a number > 0"),
             ({"sample": True, "top_p": 1.5}, "top_p: 1.5 is not a number > 0 and <= 1"),
             ({"sample": True, "top_k": -1}, "top_k: -1 is not a whole number from 0"),
             ({"n_best": 2}, "n_best 2 needs beam search"),
             ({"beam_size": 2, "n_best": 3}, "n_best 3 is more than the beam size 2"),
             ({"beam_size": 900}, "the beam must be smaller than the target vocabulary"),
             ({"max_length": 0}, "max_length: 0 is not a whole number"),
             ({"sample": True, "seed": -1}, "seed: -1 is not a whole number"),
             ({"length_penalty": 1.0}, "length_penalty applies to beam search"),
             ({"beam_size": 2, "early_stopping": "always"},
              "early_stopping: 'always' is not False, True, 'never' or 'marian'"),
             ({"early_stopping": True}, "early_stopping applies to beam search"),
             ({"min_length": -1}, "min_length: -1 is not a whole number from 0"),
             ({"bad_words_ids": [[]]}, "bad_words_ids: [] is not a non-empty list"),
             ({"bad_words_ids": [[99999]]}, "bad_words_ids: 99999 is not a target token"),
             ({"repetition_penalty": -1}, "repetition_penalty: -1 is not a number >= 0")]
    for options, message in cases:
        expect_error(ted.ArgumentError, lambda: t.translate("the dog", **options), message)
    # ted translate words the same checks the same way, with its own option names
    cli = ted_error("translate", "-m", MODELS["toy"], "--beam", "2", "--n-best", "3", "x")
    assert "--n-best 3 is more than the beam size 2" in cli, cli


RSS_SCRIPT = r"""
import sys
import ted


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])


t = ted.Translator(sys.argv[1])
calls = int(sys.argv[2])
for _ in range(200):
    t.translate("the black cat eats the small bird .")
before = rss_kib()
for k in range(calls):
    if k % 4 == 0:
        t.translate(["the dog sleeps .", "the cat eats ."], return_scores=True)
    elif k % 4 == 1:
        t.tokenize("the small bird sleeps .")
    elif k % 4 == 2:
        try:
            t.translate(b"\xff")
        except ted.InputError:
            pass
    else:
        t.translate("the black cat eats the small bird .", beam_size=2)
print(before, rss_kib())
"""


def test_rss_flat_over_many_calls():
    """10 000 calls (translations, with scores and beam search, tokenizing,
    errors) in a fresh interpreter leave its RSS within 2 MiB."""
    if os.environ.get("SAN") == "1":
        skip("ASan keeps freed memory in its quarantine: RSS grows without a leak "
             "(the plain build checks it)")
    calls = 10000
    out = subprocess.run([sys.executable, "-c", RSS_SCRIPT, MODELS["toy"], str(calls)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-500:]
    before, after = (int(x) for x in out.stdout.split())
    print("info rss: %d KiB before, %d KiB after %d calls" % (before, after, calls))
    assert after - before < 2048, "RSS grew from %d to %d KiB" % (before, after)


# ------------------------------------------------------------ overhead

def bench_overhead_of_one_sentence():
    """One short sentence through Python within 5% of the C API's time
    (tests/python/overhead.c: ted_translate); each the fastest of rounds
    of calls, the two interleaved."""
    if os.environ.get("SAN") == "1":
        skip("timings of the sanitized build say nothing")
    build = os.path.join(ROOT, os.environ.get("BUILD", "build"))
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc:
        skip("no C compiler")
    libs = subprocess.run(["pkg-config", "--libs", "yaml-0.1", "libcjson", "sentencepiece",
                           "libmicrohttpd"], capture_output=True, text=True).stdout.split()
    text, calls = "The black cat eats the small bird.", 100
    t = translator("natural")
    with tempfile.TemporaryDirectory() as work:
        program = os.path.join(work, "overhead")
        subprocess.run([cc, "-O2", "-I", os.path.join(ROOT, "include"),
                        os.path.join(ROOT, "tests", "python", "overhead.c"),
                        os.path.join(build, "libted.a")] + libs +
                       ["-lstdc++", "-lm", "-lpthread", "-o", program], check=True)
        for _ in range(3):  # a busy machine disturbs one side more: measure again
            c_best = py_best = float("inf")
            for _ in range(8):
                out = run_ted_program(program, MODELS["natural"], text, str(calls), "1")
                c_best = min(c_best, float(out))
                start = time.perf_counter()
                for _ in range(calls):
                    t.translate(text)
                py_best = min(py_best, (time.perf_counter() - start) / calls)
            if py_best <= c_best * 1.05:
                break
    print("info overhead: one sentence, C API %.1f us, Python %.1f us (%+.1f%%)" %
          (c_best * 1e6, py_best * 1e6, (py_best / c_best - 1) * 100))
    assert py_best <= c_best * 1.05, "Python %.1f us, C %.1f us" % (py_best * 1e6, c_best * 1e6)


def run_ted_program(program, *args):
    return subprocess.run([program] + list(args), capture_output=True, text=True,
                          check=True).stdout


def bench_batch_throughput():
    """The whole test set through Python as fast as `ted translate` (which
    also starts and loads the model): within 5%, the fastest of 3 each."""
    if os.environ.get("SAN") == "1":
        skip("timings of the sanitized build say nothing")
    t = translator("natural")
    path = os.path.join(MODELS["natural"], "test.en")
    lines = read_lines("natural")
    ted_best = py_best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        run_ted("translate", "-m", MODELS["natural"], "-i", path)
        ted_best = min(ted_best, time.perf_counter() - start)
        start = time.perf_counter()
        t.translate(lines)
        py_best = min(py_best, time.perf_counter() - start)
    print("info throughput: %d sentences, ted translate %.1f/s, Python %.1f/s" %
          (len(lines), len(lines) / ted_best, len(lines) / py_best))
    assert py_best <= ted_best * 1.05, "Python %.2fs, ted %.2fs" % (py_best, ted_best)


# ------------------------------------------------------------ the binding

STRUCTS_C = r"""
#include <stdio.h>
#include "ted/learn.h"
#include "ted/ted.h"
int main(void)
{
    printf("ted_error %zu\nted_translate_options %zu\nted_translation %zu\n"
           "ted_source %zu\nted_attention_view %zu\nted_decode_options %zu\n"
           "ted_languages %zu\nted_translate_call %zu\n",
           sizeof(ted_error), sizeof(ted_translate_options), sizeof(ted_translation),
           sizeof(ted_source), sizeof(ted_attention_view), sizeof(ted_decode_options),
           sizeof(ted_languages), sizeof(ted_translate_call));
    printf("ted_learn_candidate %zu\nted_learn_step %zu\nted_learn_trace %zu\n",
           sizeof(ted_learn_candidate), sizeof(ted_learn_step), sizeof(ted_learn_trace));
    printf("ted_learn_change %zu\n", sizeof(ted_learn_change));
    return 0;
}
"""


def test_struct_sizes_match_the_header():
    """ctypes mirrors the header's structs: their sizes as the C compiler
    lays them out."""
    from ted import _capi
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc:
        skip("no C compiler")
    with tempfile.TemporaryDirectory() as work:
        source, program = os.path.join(work, "s.c"), os.path.join(work, "s")
        with open(source, "w") as f:
            f.write(STRUCTS_C)
        subprocess.run([cc, "-I", os.path.join(ROOT, "include"), source, "-o", program],
                       check=True)
        out = subprocess.run([program], capture_output=True, text=True, check=True).stdout
    want = {line.split()[0]: int(line.split()[1]) for line in out.strip().split("\n")}
    assert want == _capi.sizes, (want, _capi.sizes)


def header_functions():
    """The functions include/ted/*.h declares, as the C compiler reads them
    (gcc -aux-info): name -> (return type, parameter types)."""
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc:
        skip("no C compiler")
    include = os.path.join(ROOT, "include")
    with tempfile.TemporaryDirectory() as work:
        source, aux = os.path.join(work, "h.c"), os.path.join(work, "aux")
        with open(source, "w") as f:
            for header in sorted(os.listdir(os.path.join(include, "ted"))):
                f.write('#include "ted/%s"\n' % header)
        subprocess.run([cc, "-I", include, "-fsyntax-only", "-aux-info", aux, source],
                       check=True)
        with open(aux) as f:
            lines = f.read().splitlines()
    functions = {}
    for line in lines:
        found = re.match(r"/\* \S*include/ted/\w+\.h:.*\*/ extern (.*?)\b(ted_\w+) \((.*)\);$",
                         line)
        if found:
            returns, name, params = found.groups()
            functions[name] = (returns.strip(), [] if params == "void" else params.split(", "))
    return functions


def test_ctypes_functions_match_the_header():
    """Every function the package calls is declared in include/ted/*.h and
    exported by the libted.so it loads, with the header's number of
    parameters, and returns nothing where the header's returns void."""
    from ted import _capi
    declared = header_functions()
    nm = subprocess.run(["nm", "-D", "--defined-only", _capi.library_path],
                        capture_output=True, text=True, check=True).stdout
    exported = {line.split()[2].split("@")[0] for line in nm.splitlines()
                if len(line.split()) == 3}
    assert len(_capi.functions) > 40, sorted(_capi.functions)
    wrong = []
    for name, (restype, argtypes) in sorted(_capi.functions.items()):
        if name not in declared:
            wrong.append("%s: not in include/ted/*.h" % name)
            continue
        if name not in exported:
            wrong.append("%s: not exported by %s" % (name, _capi.library_path))
        returns, params = declared[name]
        if len(argtypes) != len(params):
            wrong.append("%s: %d argtypes, the header %d (%s)" %
                         (name, len(argtypes), len(params), ", ".join(params)))
        if (restype is None) != (returns == "void"):
            wrong.append("%s: restype %s, the header returns %s" % (name, restype, returns))
    assert not wrong, "; ".join(wrong)


def test_version_is_the_header_version():
    """ted.__version__ is ted_version() of the library: the header's
    TED_VERSION, and the version pyproject.toml gives the package."""
    with open(os.path.join(ROOT, "include", "ted", "ted.h")) as f:
        header = re.search(r'^#define TED_VERSION "(.*)"$', f.read(), re.M).group(1)
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        project = re.search(r'^version = "(.*)"$', f.read(), re.M).group(1)
    assert ted.__version__ == header == project, (ted.__version__, header, project)


def test_close():
    with ted.Translator(MODELS["toy"]) as t:
        assert t.translate("the dog sleeps .") == "le chien dort ."
    expect_error(ted.ArgumentError, lambda: t.translate("the dog sleeps ."), "closed")
    expect_error(ted.ArgumentError, lambda: t.tokenize("the dog"), "closed")
    t.close()


# The interleavings of copies, closes from other threads and Ctrl-C, seeded,
# in a fresh interpreter under faulthandler: a crash is its exit status.
# Prints how each run ended, by kind.
OWNERSHIP_SCRIPT = r"""
import collections, copy, faulthandler, os, pickle, random, signal, sys, threading, time
import ted

faulthandler.enable()
model, runs, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
texts = ["the black cat eats the small bird .", "the dog sleeps ."] * 100
want = ted.Translator(model).translate(texts[:2])
seen = collections.Counter()
main = threading.get_ident()


def later(seconds, action):
    timer = threading.Timer(seconds, action)
    timer.start()
    return timer


def outcome(kind, work):
    try:
        got = work()
    except ted.CancelledError:
        seen[kind + ": cancelled"] += 1
    except ted.ArgumentError as e:
        assert "closed" in str(e), e
        seen[kind + ": closed"] += 1
    except KeyboardInterrupt:
        seen[kind + ": interrupted"] += 1
    else:
        if isinstance(got, list) and len(got) == len(texts):
            assert got[:2] == want, got[:2]
        seen[kind + ": done"] += 1


for run in range(runs):
    t = ted.Translator(model)
    kind = rng.choice(["copy", "close", "close-trace", "interrupt", "pickle"])
    delay = rng.uniform(0, 0.02)
    if kind == "copy":
        u = copy.copy(t) if rng.random() < 0.5 else copy.deepcopy(t)
        t.close()
        assert u.translate(texts[:2]) == want
        outcome("copy-after-close", lambda: t.translate("the dog sleeps ."))
        u.close()
        outcome("copy-closed", lambda: u.translate("the dog sleeps ."))
    elif kind == "close":
        u = copy.copy(t)
        timer = later(delay, lambda: (t.close(), u.close()))
        outcome("close", lambda: t.translate(texts, beam_size=4))
        timer.join()
    elif kind == "close-trace":
        timer = later(delay, t.close)
        work = rng.choice([lambda: [t.trace(x) for x in texts[:20]],
                           lambda: [t.logits(x, "le chat .") for x in texts[:40]]])
        outcome(kind, work)
        timer.join()
    elif kind == "interrupt":
        timer = threading.Timer(delay, lambda: signal.pthread_kill(main, signal.SIGINT))
        try:
            timer.start()
            outcome("interrupt", lambda: t.translate(texts, beam_size=4))
            timer.join()
            time.sleep(0.001)  # a signal that came after the call is raised here
        except KeyboardInterrupt:
            seen["interrupt: outside the call"] += 1
            timer.join()
        assert t.translate(texts[:2]) == want  # usable after it
    else:
        u = pickle.loads(pickle.dumps(t))
        t.close()
        assert u.translate(texts[:2]) == want
        u.close()
        seen["pickle: reopened"] += 1
    t.close()
    t.close()
for key in sorted(seen):
    print("%s %d" % (key, seen[key]))
"""


def sigint_as_at_a_terminal():
    """A child's SIGINT as at a terminal: a suite that tests/run-all.sh -j
    runs in the background inherits SIGINT ignored, and a Python started so
    never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_copies_closes_and_interrupts_never_crash():
    """200 runs, each a random one of: a copy (copy.copy, copy.deepcopy) used
    after the original is closed; close() from another thread during a beam
    search, a trace or logits; SIGINT during a beam search on the main
    thread; a pickled copy used after the original is closed. No run crashes; each ends done, ted.CancelledError,
    ted.ArgumentError ("closed") or KeyboardInterrupt, and a translation
    that ends is right; both cancellations and interrupts occur."""
    runs = 60 if QUICK else 200
    start = time.perf_counter()
    p = subprocess.run([sys.executable, "-X", "faulthandler", "-c", OWNERSHIP_SCRIPT,
                        MODELS["toy"], str(runs), "7"], capture_output=True, text=True,
                       timeout=300, preexec_fn=sigint_as_at_a_terminal)
    seconds = time.perf_counter() - start
    assert p.returncode == 0, "exit %d: %s" % (p.returncode, p.stderr[-1500:])
    seen = dict(line.rsplit(" ", 1) for line in p.stdout.strip().split("\n"))
    print("info ownership: %d runs in %.1fs: %s" % (runs, seconds, seen))
    for kind in ("close: cancelled", "interrupt: interrupted", "copy-after-close: closed",
                 "copy-closed: closed", "pickle: reopened"):
        assert kind in seen, "no run ended '%s': %s" % (kind, seen)


INTERRUPT_SCRIPT = r"""
import sys, time
import ted
model = sys.argv[1]
t = ted.Translator(model)
with open(model + "/test.en", encoding="utf-8") as f:
    lines = f.read().split("\n")[:-1]
texts = (lines * 2)[:2500]
print("ready", flush=True)
start = time.monotonic()
try:
    t.translate(texts, beam_size=4)
except KeyboardInterrupt:
    print("interrupted %.3f" % (time.monotonic() - start), flush=True)
print(t.translate("The black cat eats the small bird."), flush=True)
"""


def test_ctrl_c_stops_a_translation_at_once():
    """SIGINT 0.5 s into a beam search of 2 500 sentences (seconds of work)
    raises KeyboardInterrupt within 1 s of the signal, and the Translator
    translates afterwards."""
    p = subprocess.Popen([sys.executable, "-c", INTERRUPT_SCRIPT, MODELS["natural"]],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=sigint_as_at_a_terminal)
    assert p.stdout.readline() == "ready\n"
    time.sleep(0.5)
    sent = time.monotonic()
    p.send_signal(signal.SIGINT)
    try:
        line = p.stdout.readline()
        waited = time.monotonic() - sent
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert line.startswith("interrupted "), (line, err[-500:])
    assert waited < 1.0, "KeyboardInterrupt %.2fs after SIGINT" % waited
    assert out == "Le chat noir mange le petit oiseau.\n", (out, err[-500:])


def test_close_cancels_calls_of_other_threads():
    """close() during another thread's long beam search returns within
    1 s; that call raises ted.CancelledError, naming the close."""
    t = ted.Translator(MODELS["natural"])
    lines = (read_lines("natural") * 2)[:2500]
    raised = []

    def work():
        try:
            t.translate(lines, beam_size=4)
        except ted.Error as e:
            raised.append(e)

    th = threading.Thread(target=work)
    th.start()
    time.sleep(0.3)
    start = time.perf_counter()
    t.close()
    seconds = time.perf_counter() - start
    th.join()
    assert seconds < 1.0, "close() took %.2fs" % seconds
    assert len(raised) == 1 and isinstance(raised[0], ted.CancelledError), raised
    assert "closed" in str(raised[0]) and raised[0].status_name == "cancelled", raised[0]
    expect_error(ted.ArgumentError, lambda: t.translate("The dog."), "closed")


def test_lone_surrogates_are_input_errors():
    t = translator("toy")
    for call in (lambda: t.translate("the \ud800 cat ."),
                 lambda: t.translate(["the dog .", "the cat \udfff ."]),
                 lambda: t.tokenize("the \ud800 cat ."),
                 lambda: t.tokenize_target("le \ud800 chat"),
                 lambda: t.logits("the \ud800 cat .", "le chat"),
                 lambda: t.trace("\ud83d the cat .")):
        expect_error(ted.InputError, call, "invalid UTF-8 (UTF-16 surrogate)")
    expect_error(ted.InputError, lambda: t.translate(["the dog .", "the cat \udfff ."]),
                 "sentence 2")


def test_token_ids_are_checked():
    """Ids outside the vocabulary are ted.ArgumentError (they do not wrap
    modulo 2**32), what is no whole number TypeError; NumPy integers are
    ids."""
    t = translator("toy")
    vocab = t.config["model"]["tgt_vocab_size"]
    five = t.target_token(5)
    assert t.target_token(np.int64(5)) == five and five
    for call, what in ((lambda: t.detokenize([2 ** 32 + 5]), "ids[0]: 4294967301"),
                       (lambda: t.detokenize([5, -1]), "ids[1]: -1"),
                       (lambda: t.detokenize([vocab]), "ids[0]: %d" % vocab),
                       (lambda: t.target_token(-2 ** 32 + 5), "id: -4294967291"),
                       (lambda: t.target_token(vocab), "not a token id"),
                       (lambda: t.source_token(2 ** 40), "not a token id")):
        expect_error(ted.ArgumentError, call, what)
    for call in (lambda: t.detokenize(["5"]), lambda: t.detokenize([5.0]),
                 lambda: t.target_token("5"), lambda: t.detokenize([True])):
        try:
            call()
        except TypeError as e:
            assert "token id" in str(e), e
        else:
            raise AssertionError("a token id that is no whole number was taken")
    assert t.detokenize([np.int32(i) for i in t.tokenize_target("le chien dort .")]) == \
        "le chien dort ."


def test_nul_characters_are_refused():
    """A NUL character would end the string in C: a path or language code
    holding one is ted.ArgumentError, a text ted.InputError, never cut."""
    e = expect_error(ted.ArgumentError,
                     lambda: ted.Translator(MODELS["natural"] + "\0/../../not-this"),
                     "model_dir", "NUL character")
    assert "not-this" in str(e), e
    expect_error(ted.ArgumentError, lambda: ted.Translator(os.fsencode(MODELS["toy"]) + b"\0x"),
                 "NUL character")
    t = translator("toy")
    expect_error(ted.ArgumentError, lambda: t.translate("the dog", source_lang="en\0x"),
                 "source_lang", "NUL character")
    expect_error(ted.ArgumentError, lambda: t.tokenize("the dog", target_lang="fr\0"),
                 "target_lang", "NUL character")
    for call in (lambda: t.translate("the\0dog"), lambda: t.tokenize("the dog\0"),
                 lambda: t.tokenize_target("\0le chien"), lambda: t.logits("the\0", "le"),
                 lambda: t.trace("a\0b")):
        expect_error(ted.InputError, call, "NUL byte")


def test_help_and_types():
    assert "Translator" in ted.__doc__
    assert ted.Translator.translate.__doc__ and ted.Translator.trace.__doc__
    package = os.path.dirname(ted.__file__)
    assert os.path.exists(os.path.join(package, "py.typed"))


def main(words):
    """Runs every test, or those whose name holds one of `words`; the
    timings (bench_*) run only when a word names them."""
    tests = [(name, f) for name, f in globals().items()
             if callable(f) and (name.startswith("test_") and not words
                                 or name.startswith(("test_", "bench_"))
                                 and any(w in name for w in words))]
    failed = 0
    for name, f in tests:
        label = name.split("_", 1)[1].replace("_", "-")
        try:
            f()
        except Skipped as e:
            print("skip python/%s: %s" % (label, e))
            continue
        except Exception as e:  # noqa: BLE001 - every failure is one FAIL line
            failed += 1
            print("FAIL python/%s: %s: %s" % (label, type(e).__name__,
                                               str(e).replace("\n", " ")[:400]))
        else:
            print("ok python/%s" % label)
        sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
