#!/usr/bin/python3
"""Language codes in `ted serve`'s /v1/translate: "source_lang" and
"target_lang", with multilingual copies of tests/data/tiny-model
(ted_test.tiny_multilingual_model) and the toy model.

    TED=build/ted /usr/bin/python3 tests/serve/test_languages.py

Every answer is compared with what `ted translate --source-lang
--target-lang` prints for the same sentences and options: texts exactly,
scores (the forced code counted with log-prob 0, as generate() scores it)
within 1e-4.

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  forced/*    NLLB's layout, the target code forced as the first target
              token by the running batch: greedy, seeded samples and beam
              search into each of two languages, the code's log-prob 0;
              requests into both languages at once, sharing the batch
  source/*    multi-target Marian's layout, the code put in the source
  bilingual/* the toy model's own codes
  refuse/*    no target language for a model with several, an unknown code,
              a code of the wrong type: a 400 JSON error naming it
"""
import os
import sys
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import ted_test  # noqa: E402
from ted_test import SLOW, check, failures, scratch_directory  # noqa: E402

TOY = os.path.join(ROOT, "models", "toy-en-fr")
TIMEOUT = 120 * SLOW
TOLERANCE = 1e-4
SENTENCES = ["s0 s1 s2", "s3 s4", "s5 s0 s1 s2 s3", "s1", "", "s2 s2 s4 s5"]
def expected_answer(model, request):
    return ted_test.translate_answer(model, request, TIMEOUT)


def difference(got, want):
    return ted_test.answer_difference(got, want, TOLERANCE)


def same_as_translate(server, name, model, request):
    status, _, got = server.translate(request)
    want = expected_answer(model, request)
    problem = difference(got, want) if status == 200 else f"status {status}: {got}"
    check(name, problem is None, problem)
    return got


def test_forced(server, model):
    base = {"model": "forced", "text": SENTENCES}
    answers = {}
    for code in ("t8", "t9"):
        greedy = dict(base, target_lang=code, scores=True)
        answers[code] = same_as_translate(server, f"forced/greedy-{code}", model, greedy)
        same_as_translate(server, f"forced/sample-{code}", model,
                          dict(base, target_lang=code, sample=True, seed=7, n_best=3,
                               scores=True))
        same_as_translate(server, f"forced/beam-{code}", model,
                          dict(base, target_lang=code, beam=3, n_best=2, scores=True))
    # The code is forced: the first token of each hypothesis, with the
    # log-prob 0 generate() gives forced_bos_token_id; what follows it
    # differs between the two languages.
    firsts = {code: [t[0]["token_log_probs"][0] for t in answers[code]["translations"]
                     if t[0]["text"]] for code in answers}
    rests = {code: [t[0]["token_log_probs"][1:] for t in answers[code]["translations"]]
             for code in answers}
    check("forced/code-scores-0", all(firsts.values()) and
          all(p == 0 for first in firsts.values() for p in first), f"{firsts}")
    check("forced/languages-differ", rests["t8"] != rests["t9"], f"{rests}")

    # Both languages at once, in the same running batch: each sentence its own prefix.
    results = {}

    def client(k, code):
        results[k] = server.translate(dict(base, target_lang=code, scores=True))

    threads = [threading.Thread(target=client, args=(k, ("t8", "t9")[k % 2])) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    wrong = []
    for k in range(8):
        status, _, got = results.get(k, (None, None, None))
        want = answers[("t8", "t9")[k % 2]]
        if status != 200 or difference(got, want):
            wrong.append((k, status, difference(got, want) if status == 200 else got))
    check("forced/both-languages-at-once (8 requests)", not wrong, str(wrong[:2]))


def test_refusals(server):
    cases = [
        ("no-target", {"model": "forced", "text": ["s0"]}, 400,
         "no target language given, and the model translates into 2 languages: t8, t9"),
        ("unknown-target", {"model": "forced", "text": ["s0"], "target_lang": "de"}, 400,
         'unknown target language "de"; the model\'s: t8, t9'),
        ("unknown-source", {"model": "forced", "text": ["s0"], "target_lang": "t8",
                            "source_lang": "xx"}, 400, 'unknown source language "xx"'),
        ("bilingual-other", {"model": "toy-en-fr", "text": ["the cat ."], "target_lang": "de"},
         400, 'unknown target language "de"; the model\'s: fr'),
        ("beam-no-target", {"model": "forced", "text": ["s0"], "beam": 2}, 400,
         "no target language given"),
        ("type", {"model": "forced", "text": ["s0"], "target_lang": 8}, 400,
         "target_lang: expected a string"),
        ("twice", '{"model": "forced", "text": ["s0"], "target_lang": "t8", "target_lang": "t9"}',
         400, 'field "target_lang" given twice'),
    ]
    for name, body, status, needle in cases:
        got, _, answer = server.call("POST", "/v1/translate", body)
        error = answer.get("error", "") if isinstance(answer, dict) else ""
        check(f"refuse/{name} ({got})", got == status and needle in error, f"{got} {answer}")


def main():
    with scratch_directory("ted-serve-languages-") as tmp:
        forced = ted_test.tiny_multilingual_model(os.path.join(tmp, "forced"), "forced")
        marian = ted_test.tiny_multilingual_model(os.path.join(tmp, "marian"), "source")
        server = ted_test.Server([f"forced={forced}", f"marian={marian}", TOY], timeout=TIMEOUT)
        try:
            test_forced(server, forced)
            for code in ("s6", "s7"):
                same_as_translate(server, f"source/greedy-{code}", marian,
                                  {"model": "marian", "text": SENTENCES, "source_lang": "en",
                                   "target_lang": code, "scores": True})
            same_as_translate(server, "bilingual/own-codes", TOY,
                              {"model": "toy-en-fr", "text": ["the black cat eats the bird ."],
                               "source_lang": "en", "target_lang": "fr"})
            test_refusals(server)
        finally:
            status = server.stop()
            check("alive/exit", status == 0, f"exit status {status}")
            reports = server.sanitizer_reports()
            check("alive/no-sanitizer-report", not reports, str(reports[:3]))
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())
