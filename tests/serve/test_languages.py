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
  trained/*   models/multi-en-fr-es, trained from English into French and
              Spanish and back: /languages and /frontend/settings offer
              those three; an untrained language or direction is refused;
              LibreTranslate's fr -> es and es -> fr go through English
              and give the README's sentences
  codes/*     the same files naming all 202 NLLB codes: /languages spells
              every code one way (BCP 47: "yue", "zh-Hant"), names each as
              Debian's iso-codes does, and takes the spelling it gives
"""
import json
import os
import re
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


MULTI = os.path.join(ROOT, "models", "multi-en-fr-es")
ENGLISH = "Your owls will eat my fresh cake tomorrow."
FRENCH = "Vos chouettes mangeront mon gâteau frais demain."
SPANISH = "Vuestros búhos comerán mi pastel fresco mañana."


def libre(server, text, source, target):
    status, _, answer = server.call("POST", "/translate",
                                    {"q": text, "source": source, "target": target})
    return status, answer


def test_trained(server):
    status, _, body = server.get("/languages")
    languages = json.loads(body) if status == 200 else []
    got = {item["code"]: (item["name"], sorted(item["targets"])) for item in languages}
    want = {"en": ("English", ["es", "fr"]), "es": ("Spanish", ["en", "fr"]),
            "fr": ("French", ["en", "es"])}
    check("trained/languages", got == want, f"{status} {got}")
    status, _, body = server.get("/frontend/settings")
    target = json.loads(body)["language"]["target"] if status == 200 else {}
    check("trained/settings-target", target.get("code") in want and
          target.get("name") == want.get(target.get("code"), ("",))[0], f"{status} {target}")
    # The model was trained from and into English only: fr -> es goes
    # through English (the route says so), and gives the README's Spanish.
    cases = [("fr", "es", FRENCH, SPANISH), ("es", "fr", SPANISH, FRENCH),
             ("en", "es", ENGLISH, SPANISH)]
    for source, target, text, want_text in cases:
        status, answer = libre(server, text, source, target)
        check(f"trained/libre-{source}-{target}", status == 200 and
              answer.get("translatedText") == want_text, f"{status} {answer}")
    status, _, answer = server.translate({"text": [FRENCH], "source_lang": "fr",
                                          "target_lang": "es"})
    legs = [(leg["source_lang"], leg["target_lang"]) for leg in answer.get("route", [])]
    check("trained/route-through-english", status == 200 and legs == [("fr", "en"), ("en", "es")]
          and answer.get("translations") == [SPANISH], f"{status} {answer}")
    refusals = [
        ("direction", {"source_lang": "fra_Latn", "target_lang": "spa_Latn"},
         "the model does not translate fra_Latn into spa_Latn; from fra_Latn it translates "
         "into eng_Latn"),
        ("untrained-target", {"source_lang": "en", "target_lang": "de"},
         'target language "de" (deu_Latn): the model was not trained to translate into it; '
         "it translates into eng_Latn, fra_Latn, spa_Latn"),
    ]
    for name, languages, needle in refusals:
        status, _, answer = server.translate(dict(languages, model="multi-en-fr-es",
                                                  text=[FRENCH]))
        check(f"trained/refuse-{name} ({status})", status == 400 and
              answer.get("error") == needle, f"{status} {answer}")
    status, answer = libre(server, ENGLISH, "en", "de")
    check(f"trained/libre-refuses-untrained ({status})", status == 400 and
          "de" in answer.get("error", ""), f"{status} {answer}")


def iso_639_3():
    """Debian's iso-codes: {alpha_3 or alpha_2: name}, or None."""
    path = "/usr/share/iso-codes/json/iso_639-3.json"
    if not os.path.exists(path):
        return None
    names = {}
    with open(path, encoding="utf-8") as f:
        for entry in json.load(f)["639-3"]:
            name = re.sub(r" \(.*\)$", "", entry["name"])
            names[entry["alpha_3"]] = name
            if "alpha_2" in entry:
                names[entry["alpha_2"]] = name
    return names


def test_codes(server, model):
    status, _, body = server.get("/languages")
    languages = json.loads(body) if status == 200 else []
    codes = [item["code"] for item in languages]
    odd = [c for c in codes if not re.fullmatch(r"[a-z]{2,3}(-[A-Z][a-z]{3})?", c)]
    check("codes/202", len(codes) == 202 and len(set(codes)) == 202, f"{status} {len(codes)}")
    check("codes/one-spelling", not odd, f"{odd[:8]}")
    check("codes/examples", {"yue", "zh-Hans", "zh-Hant", "ks-Arab", "ks-Deva", "fr"} <=
          set(codes), f"{codes[:12]}")
    names = iso_639_3()
    if names is not None:
        wrong = [(item["code"], item["name"]) for item in languages
                 if item["name"] != names.get(item["code"].split("-")[0], "") +
                 (f" ({item['code'].split('-')[1]})" if "-" in item["code"] else "")
                 and item["code"].split("-")[0] in names]
        unnamed = [item["code"] for item in languages if item["name"] == item["code"]]
        check("codes/names", not wrong and not unnamed, f"{wrong[:5]} {unnamed[:5]}")
    want = ted_test.translate_answer(model, {"text": [ENGLISH], "source_lang": "eng_Latn",
                                             "target_lang": "zho_Hant"}, TIMEOUT)
    for code in ("zh-Hant", "zh-hant"):
        status, answer = libre(server, ENGLISH, "en", code)
        check(f"codes/libre-{code}", status == 200 and
              [answer.get("translatedText")] == want["translations"], f"{status} {answer}")
    status, answer = libre(server, ENGLISH, "en", "yue")
    want = ted_test.translate_answer(model, {"text": [ENGLISH], "source_lang": "eng_Latn",
                                             "target_lang": "yue_Hant"}, TIMEOUT)
    check("codes/libre-yue", status == 200 and
          [answer.get("translatedText")] == want["translations"], f"{status} {answer}")


def all_languages(into):
    """models/multi-en-fr-es without its top-level languages: every code of
    tokenizer.languages, in every direction."""
    os.makedirs(into)
    for name in os.listdir(MULTI):
        if name != "config.yaml":
            os.symlink(os.path.join(MULTI, name), os.path.join(into, name))
    with open(os.path.join(MULTI, "config.yaml"), encoding="utf-8") as f:
        lines = [line for line in f if not line.startswith("languages:")]
    with open(os.path.join(into, "config.yaml"), "w", encoding="utf-8") as f:
        f.writelines(lines)
    return into


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
            stopped(server)
        every = all_languages(os.path.join(tmp, "all"))
        for name, models, test in (("trained", [MULTI], test_trained),
                                   ("codes", [every], lambda server: test_codes(server, every))):
            try:
                server = ted_test.Server(models, timeout=TIMEOUT)
            except RuntimeError as e:
                ted_test.fail(f"{name}/serve", str(e))
                continue
            try:
                test(server)
            finally:
                stopped(server)
    return 1 if failures() else 0


def stopped(server):
    status = server.stop()
    check("alive/exit", status == 0, f"exit status {status}")
    reports = server.sanitizer_reports()
    check("alive/no-sanitizer-report", not reports, str(reports[:3]))


if __name__ == "__main__":
    sys.exit(main())
