#!/usr/bin/python3
"""`ted serve`'s LibreTranslate API over loopback (Debian's Python, the
standard library only). The client library (libretranslatepy) and the
OpenAPI fuzzing (schemathesis) are tests/serve/client_libre.py, in the
test virtualenv; the CORS check in a browser is tests/browser/test_cors.py.

    TED=build/ted /usr/bin/python3 tests/serve/test_libre.py [--only GROUP,...]

Every translation is compared with what `ted translate` prints for the
same lines; languages and detections with the models' own files and the
held-out sentences of tests/data/detect (one file per language, written
for this test, in none of the models' data).

Groups (one "ok NAME" or "FAIL NAME: why" line per check):
  translate/*  POST /translate with JSON, form-encoded, multipart and
               query-string fields: the same answers, equal to ted
               translate's; q a string or a list; line breaks kept;
               paragraphs cut into sentences by default, equal to ted
               translate --split-sentences; "format": "html" equal to ted
               translate --format html on a page; alternatives equal to ted
               translate --beam N+1 --n-best N+1 (without repeats), of a
               paragraph each sentence's k-th hypothesis; GET /languages,
               GET /frontend/settings
  errors/*     missing and unknown fields' values, a format other than
               text and html, a bad alternatives, malformed JSON, another
               Content-Type: LibreTranslate's status and {"error": ...}
  routes/*     labelled copies of the test models: /languages from their
               config.yaml, the preference order, a pair through English
               equal to translating in two steps with ted translate (a
               paragraph's sentences each through both), the /v1 answer's
               route; a multilingual model (NLLB's codes)
               named by ISO codes, equal to ted translate --source-lang
               --target-lang
  detect/*     POST /detect and "source": "auto" over five languages;
               accuracy on the held-out sentences (an info line per
               language), 0-100 confidences, most likely first
  keys/*       --api-keys: 403 without a key or with a wrong one, 200 with
               one, 429 with Retry-After past its requests per minute
  cors/*       --cors ORIGIN: the header for that origin only, preflight
               answered; no CORS headers without --cors
"""
import json
import os
import shutil
import sys
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import ted_test  # noqa: E402
from ted_test import SLOW, TED, check, failures, ted_output  # noqa: E402

EN_FR = os.path.join(ROOT, "models", "en-fr")
TOY = os.path.join(ROOT, "models", "toy-en-fr")
TINY = os.path.join(ROOT, "tests", "data", "tiny-model")
DETECT = os.path.join(ROOT, "tests", "data", "detect")
PAGE = os.path.join(ROOT, "tests", "data", "html", "article.html")
LANGUAGES = ["en", "fr", "de", "es", "it"]
TIMEOUT = 120 * SLOW
# The share of held-out sentences the detector must place right, per
# language and in all (the measured figures are printed as info lines).
ACCURACY = 0.8


def translate_lines(model, lines, *flags):
    """What ted translate prints for `lines`, one line each."""
    out = ted_output(["translate", "-m", model, *flags], "".join(x + "\n" for x in lines),
                     TIMEOUT)
    return out.splitlines()


def n_best(model, line, n):
    """ted translate --beam n --n-best n: the texts of its hypotheses, best first."""
    out = translate_lines(model, [line], "--beam", str(n), "--n-best", str(n))
    return [row.split(" ||| ")[1] for row in out]


def alternatives_of(hypotheses):
    """LibreTranslate's alternatives: the others, each once, none empty or
    equal to the translation."""
    seen, kept = {hypotheses[0], ""}, []
    for text in hypotheses[1:]:
        if text not in seen:
            seen.add(text)
            kept.append(text)
    return kept


def form(fields):
    return urllib.parse.urlencode(fields, doseq=True)


def multipart(fields):
    boundary = "tedboundary7c3f"
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'
             for k, v in fields.items()]
    body = "".join(parts) + f"--{boundary}--\r\n"
    return body.encode(), f"multipart/form-data; boundary={boundary}"


def post_form(server, path, fields, query=None):
    target = path + ("?" + form(query) if query else "")
    return server.call("POST", target, form(fields),
                       {"Content-Type": "application/x-www-form-urlencoded"})


# ---- translate/* -------------------------------------------------------------------------

def test_translate(server):
    lines = ["I saw the cat.", "The dog sleeps.", "My sister did not see the old green car."]
    want = translate_lines(EN_FR, lines)
    fields = {"q": lines[0], "source": "en", "target": "fr"}
    answers = {
        "json": server.call("POST", "/translate", fields),
        "form": post_form(server, "/translate", fields),
        "query": server.call("POST", "/translate?" + form(fields), "",
                             {"Content-Type": "application/x-www-form-urlencoded"}),
        "query-over-form": post_form(server, "/translate", {"q": "nothing at all"}, fields),
    }
    body, kind = multipart(fields)
    answers["multipart"] = server.call("POST", "/translate", body, {"Content-Type": kind})
    for name, (status, _, data) in answers.items():
        check(f"translate/{name}", status == 200 and data == {"translatedText": want[0]},
              f"{status} {data}, ted translate {want[0]!r}")
    status, _, data = server.call("POST", "/translate", dict(fields, q=lines))
    check("translate/list", status == 200 and data == {"translatedText": want},
          f"{status} {data}, ted translate {want}")
    text = lines[1] + "\n" + lines[2] + "\r\n\r\n" + lines[0]
    status, _, data = server.call("POST", "/translate", dict(fields, q=text))
    joined = want[1] + "\n" + want[2] + "\r\n\r\n" + want[0]
    check("translate/lines", status == 200 and data == {"translatedText": joined},
          f"{status} {data}, ted translate {joined!r}")
    test_documents(server, fields)
    test_alternatives(server, fields, lines)
    test_language_lists(server)


PARAGRAPHS = ["Dr. Smith arrived at 10 a.m. on Monday.  He said \"Hello, my friend.\"",
              "Wait... What happened?\tThe cat ate the bird... and then it slept.",
              "  The black cat eats the small bird. My sister did not see the old green car. "]


def test_documents(server, fields):
    """Paragraphs are cut into sentences as ted translate --split-sentences
    cuts them; an HTML page is translated as ted translate --format html."""
    want = translate_lines(EN_FR, PARAGRAPHS, "--split-sentences")
    for i, paragraph in enumerate(PARAGRAPHS):
        status, _, data = server.call("POST", "/translate", dict(fields, q=paragraph))
        check(f"translate/paragraph-{i}", status == 200 and data == {"translatedText": want[i]},
              f"{status} {data}, ted translate --split-sentences {want[i]!r}")
    status, _, data = server.call("POST", "/translate", dict(fields, q=PARAGRAPHS))
    check("translate/paragraph-list", status == 200 and data == {"translatedText": want},
          f"{status} {data}, ted translate --split-sentences {want}")
    with open(PAGE, encoding="utf-8", newline="") as f:
        page = f.read()
    out = ted_output(["translate", "-m", EN_FR, "--format", "html"], page, TIMEOUT)
    status, _, data = post_form(server, "/translate", dict(fields, q=page, format="html"))
    check("translate/html", status == 200 and data == {"translatedText": out},
          f"{status} {str(data)[:300]}, ted translate --format html {out[:300]!r}")
    status, _, data = server.call("POST", "/translate", dict(fields, q=[page, "<p>I saw the cat."
                                                                              "</p>"],
                                                             format="html"))
    small = ted_output(["translate", "-m", EN_FR, "--format", "html"], "<p>I saw the cat.</p>",
                       TIMEOUT)
    check("translate/html-list", status == 200 and data == {"translatedText": [out, small]},
          f"{status} {str(data)[:300]}, ted translate --format html {small!r}")
    sentences = ["The black cat eats the small bird.", "My sister did not see the old green car."]
    hypotheses = [n_best(EN_FR, x, 3) for x in sentences]
    rebuilt = ["  " + a + " " + b for a, b in zip(*hypotheses)]
    status, _, data = server.call("POST", "/translate", dict(fields, q="  " + " ".join(sentences),
                                                             alternatives=2))
    want = {"translatedText": rebuilt[0], "alternatives": alternatives_of(rebuilt)}
    check("translate/alternatives-paragraph", status == 200 and data == want,
          f"{status} {data}, ted translate --n-best 3 of each sentence: {want}")


def test_alternatives(server, fields, lines):
    status, _, data = server.call("POST", "/translate", dict(fields, alternatives=2))
    hypotheses = n_best(EN_FR, lines[0], 3)
    want = {"translatedText": hypotheses[0], "alternatives": alternatives_of(hypotheses)}
    check("translate/alternatives", status == 200 and data == want,
          f"{status} {data}, ted translate --n-best 3 {hypotheses}")
    status, _, data = post_form(server, "/translate", dict(fields, q=lines[2], alternatives="3"))
    hypotheses = n_best(EN_FR, lines[2], 4)
    want = {"translatedText": hypotheses[0], "alternatives": alternatives_of(hypotheses)}
    check("translate/alternatives-form", status == 200 and data == want,
          f"{status} {data}, ted translate --n-best 4 {hypotheses}")
    status, _, data = server.call("POST", "/translate", dict(fields, q=lines[:2], alternatives=1))
    lists = [alternatives_of(n_best(EN_FR, line, 2)) for line in lines[:2]]
    check("translate/alternatives-list",
          status == 200 and data.get("alternatives") == lists, f"{status} {data}, {lists}")


def test_language_lists(server):
    status, _, data = server.call("GET", "/languages")
    check("translate/languages", status == 200 and
          data == [{"code": "en", "name": "English", "targets": ["fr"]},
                   {"code": "fr", "name": "French", "targets": []}], f"{status} {data}")
    status, _, data = server.call("GET", "/frontend/settings")
    check("translate/settings", status == 200 and data.get("keyRequired") is False and
          data.get("language", {}).get("target", {}).get("code") == "fr" and
          data["language"]["source"]["code"] == "auto", f"{status} {data}")


# ---- errors/* -----------------------------------------------------------------------------

def test_errors(server):
    good = {"q": "I saw the cat.", "source": "en", "target": "fr"}
    cases = {
        "missing-q": (dict(good, q=""), 400, "Invalid request: missing q parameter"),
        "missing-source": ({"q": "x", "target": "fr"}, 400,
                           "Invalid request: missing source parameter"),
        "missing-target": ({"q": "x", "source": "en"}, 400,
                           "Invalid request: missing target parameter"),
        "unknown-source": (dict(good, source="xx"), 400, "xx is not supported"),
        "unknown-target": (dict(good, target="xx"), 400, "xx is not supported"),
        "unknown-target-auto": (dict(good, source="auto", target="xx"), 400,
                                "xx is not supported"),
        "unknown-pair": (dict(good, source="en", target="en"), 400,
                         "English (en) is not available as a target language from English (en)"),
        "format-xml": (dict(good, format="xml"), 400, "xml format is not supported"),
        "alternatives": (dict(good, alternatives="two"), 400,
                         "Invalid request: alternatives parameter is not a number"),
        "q-type": (dict(good, q=5), 400, "q: expected a string or a list of strings"),
        "q-item-type": (dict(good, q=["a", 5]), 400, "q[1]: expected a string"),
    }
    for name, (fields, status_wanted, message) in cases.items():
        status, _, data = server.call("POST", "/translate", fields)
        check(f"errors/{name}", status == status_wanted and data == {"error": message},
              f"{status} {data}")
    status, _, data = server.call("POST", "/translate", '{"q": "x", ')
    check("errors/malformed-json", status == 400 and "malformed JSON" in data.get("error", ""),
          f"{status} {data}")
    status, _, data = server.call("POST", "/translate", "q=x", {"Content-Type": "text/plain"})
    check("errors/content-type", status == 415 and "error" in data, f"{status} {data}")
    status, _, data = server.call("GET", "/translate")
    check("errors/method", status == 405 and "error" in data, f"{status} {data}")
    status, _, data = post_form(server, "/translate", dict(good, q="a\x00b"))
    check("errors/nul", status == 400 and "NUL" in data.get("error", ""), f"{status} {data}")


# ---- routes/* -----------------------------------------------------------------------------

def labelled(scratch, name, source, target, model=TINY):
    """A copy of `model` whose config.yaml says it translates source ->
    target (tokenizer.source_lang / target_lang)."""
    directory = os.path.join(scratch, name)
    shutil.copytree(model, directory)
    path = os.path.join(directory, "config.yaml")
    with open(path, encoding="utf-8") as f:
        lines = [line for line in f
                 if not line.startswith(("  source_lang:", "  target_lang:"))]
    text = "".join(lines).replace("tokenizer:\n", f"tokenizer:\n  source_lang: {source}\n"
                                  f"  target_lang: {target}\n", 1)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return directory


def test_routes(scratch):
    de_en = labelled(scratch, "de-en", "de", "en")
    en_fr_toy = labelled(scratch, "toy", "en", "fr", TOY)
    models = [("de-en", de_en), ("fr-en", labelled(scratch, "fr-en", "fr", "en")),
              ("en-fr-toy", en_fr_toy), ("en-fr", EN_FR)]
    server = ted_test.Server([f"{n}={d}" for n, d in models], timeout=TIMEOUT)
    try:
        status, _, data = server.call("GET", "/languages")
        want = [{"code": "de", "name": "German", "targets": ["en", "fr"]},
                {"code": "en", "name": "English", "targets": ["fr"]},
                {"code": "fr", "name": "French", "targets": ["en"]}]
        check("routes/languages", status == 200 and data == want, f"{status} {data}")
        line = "The black cat eats the small bird."
        status, _, data = server.call("POST", "/translate", {"q": line, "source": "en",
                                                             "target": "fr"})
        want = translate_lines(en_fr_toy, [line])[0]
        check("routes/first-model", status == 200 and data == {"translatedText": want},
              f"{status} {data}, the first en-fr model (toy) says {want!r}")
        line = "Der Hund schläft."
        between = translate_lines(de_en, [line])
        want = translate_lines(en_fr_toy, between)[0]
        status, _, data = server.call("POST", "/translate", {"q": line, "source": "de",
                                                             "target": "fr"})
        check("routes/pivot", status == 200 and data == {"translatedText": want},
              f"{status} {data}, ted translate twice: {between} then {want!r}")
        test_pivot_paragraph(server, de_en, en_fr_toy)
        status, _, data = server.translate({"text": [line], "source_lang": "de",
                                            "target_lang": "fr"})
        route = [{"model": "de-en", "source_lang": "de", "target_lang": "en"},
                 {"model": "en-fr-toy", "source_lang": "en", "target_lang": "fr"}]
        check("routes/v1-pivot", status == 200 and data == {"translations": [want],
                                                             "route": route},
              f"{status} {data}")
        status, _, data = server.translate({"text": [line], "source_lang": "fr",
                                            "target_lang": "de"})
        check("routes/v1-no-route", status == 400 and "error" in data, f"{status} {data}")
    finally:
        check("routes/exit-0", server.stop() == 0, server.last_words())


def test_pivot_paragraph(server, de_en, en_fr_toy):
    """A paragraph through two models: each sentence through both, in its
    place between the paragraph's own spaces."""
    sentences = ["Der Hund schläft.", "Die Katze frisst den Vogel!", "Wo ist er?"]
    between = translate_lines(de_en, sentences)
    after = translate_lines(en_fr_toy, between)
    want = after[0] + "  " + after[1] + "\n" + after[2]
    status, _, data = server.call("POST", "/translate", {
        "q": sentences[0] + "  " + sentences[1] + "\n" + sentences[2], "source": "de",
        "target": "fr"})
    check("routes/pivot-paragraph", status == 200 and data == {"translatedText": want},
          f"{status} {data}, each sentence through ted translate twice: {want!r}")


def multilingual(scratch):
    """A copy of the tiny model whose vocabularies hold NLLB's codes of
    English, French and German, and whose config.yaml names them as its
    languages (the code first in the source, the target's forced)."""
    directory = os.path.join(scratch, "multi")
    shutil.copytree(TINY, directory)
    codes = ["eng_Latn", "fra_Latn", "deu_Latn"]
    for name in ("vocab.src", "vocab.tgt"):
        path = os.path.join(directory, name)
        with open(path, encoding="utf-8") as f:
            tokens = f.read().split("\n")
        tokens = [t for t in tokens if t]
        tokens[-3:] = codes
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(tokens) + "\n")
    path = os.path.join(directory, "config.yaml")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = text.replace("tokenizer:\n", "tokenizer:\n  languages: [eng_Latn, fra_Latn, deu_Latn]\n"
                        "  source_language_token: first\n  target_language_token: forced\n", 1)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return directory


def test_multilingual(scratch):
    multi = multilingual(scratch)
    server = ted_test.Server([f"bi={labelled(scratch, 'bi', 'en', 'fr')}", f"multi={multi}"],
                             timeout=TIMEOUT)
    try:
        status, _, data = server.call("GET", "/languages")
        want = [{"code": "de", "name": "German", "targets": ["en", "fr"]},
                {"code": "en", "name": "English", "targets": ["de", "fr"]},
                {"code": "fr", "name": "French", "targets": ["de", "en"]}]
        check("routes/multilingual-languages", status == 200 and data == want, f"{status} {data}")
        line = "s1 s2 s3"
        want = translate_lines(multi, [line], "--source-lang", "deu_Latn", "--target-lang",
                               "fra_Latn")[0]
        status, _, data = server.call("POST", "/translate", {"q": line, "source": "de",
                                                             "target": "fr"})
        check("routes/multilingual", status == 200 and data == {"translatedText": want},
              f"{status} {data}, ted translate --source-lang deu_Latn --target-lang fra_Latn "
              f"{want!r}")
        status, _, data = server.translate({"text": [line], "model": "multi",
                                            "source_lang": "deu_Latn", "target_lang": "fr"})
        check("routes/multilingual-v1", status == 200 and data.get("translations") == [want],
              f"{status} {data}, ted translate {want!r}")
        want = translate_lines(os.path.join(scratch, "bi"), [line])[0]
        status, _, data = server.call("POST", "/translate", {"q": line, "source": "en",
                                                             "target": "fr"})
        check("routes/bilingual-first", status == 200 and data == {"translatedText": want},
              f"{status} {data}, the bilingual model says {want!r}")
    finally:
        check("routes/multilingual-exit-0", server.stop() == 0, server.last_words())


# ---- detect/* -----------------------------------------------------------------------------

def held_out(language):
    with open(os.path.join(DETECT, language + ".txt"), encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def test_detect(scratch):
    models = [f"{x}-en={labelled(scratch, 'd' + x, x, 'en')}" for x in LANGUAGES if x != "en"]
    server = ted_test.Server([f"en-fr={EN_FR}", *models], timeout=TIMEOUT)
    try:
        right_all = total = 0
        shaped = True
        for language in LANGUAGES:
            lines = held_out(language)
            right = 0
            for line in lines:
                status, _, data = server.call("POST", "/detect", {"q": line})
                ok = status == 200 and isinstance(data, list) and len(data) == len(LANGUAGES)
                confidences = [d.get("confidence", -1) for d in data] if ok else []
                shaped &= ok and all(0 <= c <= 100 for c in confidences) and \
                    confidences == sorted(confidences, reverse=True)
                right += ok and data[0]["language"] == language
            print(f"info detect/accuracy {language}: {right}/{len(lines)}")
            check(f"detect/accuracy-{language}", right >= ACCURACY * len(lines),
                  f"{right} of {len(lines)} right")
            right_all += right
            total += len(lines)
        print(f"info detect/accuracy all: {right_all}/{total} "
              f"({100.0 * right_all / total:.0f} %)")
        check("detect/shape", shaped, "a /detect answer is not a sorted list of 0-100 guesses")
        line = held_out("fr")[0]
        status, _, data = server.call("POST", "/translate", {"q": line, "source": "auto",
                                                             "target": "en"})
        want = translate_lines(os.path.join(scratch, "dfr"), [line])[0]
        detected = data.get("detectedLanguage", {}) if status == 200 else {}
        check("detect/auto", status == 200 and data.get("translatedText") == want and
              detected.get("language") == "fr" and 0 < detected.get("confidence", 0) <= 100,
              f"{status} {data}, ted translate {want!r}")
        status, _, data = server.call("POST", "/detect", {"q": ""})
        check("detect/missing-q", status == 400 and data == {
            "error": "Invalid request: missing q parameter"}, f"{status} {data}")
    finally:
        check("detect/exit-0", server.stop() == 0, server.last_words())


# ---- keys/* and cors/* ----------------------------------------------------------------------

def test_keys(scratch):
    path = os.path.join(scratch, "keys")
    with open(path, "w") as f:
        f.write("# keys of the test\nopen-key\nlimited-key 2\n")
    server = ted_test.Server([EN_FR], "--api-keys", path, timeout=TIMEOUT)
    fields = {"q": "I saw the cat.", "source": "en", "target": "fr"}
    try:
        status, _, data = server.call("POST", "/translate", fields)
        check("keys/missing", status == 403 and "error" in data, f"{status} {data}")
        status, _, data = post_form(server, "/translate", dict(fields, api_key="wrong"))
        check("keys/invalid", status == 403 and data == {"error": "Invalid API key"},
              f"{status} {data}")
        status, _, data = post_form(server, "/translate", dict(fields, api_key="open-key"))
        check("keys/valid", status == 200 and "translatedText" in data, f"{status} {data}")
        statuses = [server.call("POST", "/detect", dict(q="hello", api_key="limited-key"))
                    for _ in range(3)]
        (a, _, _), (b, _, _), (c, headers, data) = statuses
        retry = headers.get("Retry-After", "")
        check("keys/limit", (a, b, c) == (200, 200, 429) and retry.isdigit() and
              1 <= int(retry) <= 60 and "error" in data, f"{a} {b} {c} {headers} {data}")
        status, _, data = server.call("GET", "/languages")
        check("keys/languages-open", status == 200, f"{status} {data}")
        status, _, data = server.call("GET", "/frontend/settings")
        check("keys/settings", data.get("keyRequired") is True, f"{status} {data}")
        status, _, data = server.translate({"text": ["I saw the cat."]})
        check("keys/v1-missing", status == 403, f"{status} {data}")
        status, _, data = server.translate({"text": ["I saw the cat."], "api_key": "open-key"})
        check("keys/v1-valid", status == 200, f"{status} {data}")
    finally:
        check("keys/exit-0", server.stop() == 0, server.last_words())
    with open(path, "w") as f:
        f.write("a-key 0\n")
    _, problem = ted_test.ted_problem(["serve", "-m", EN_FR, "--port", "0", "--api-keys", path])
    check("keys/bad-file", problem is not None and "keys:1:" in problem, problem)
    missing = os.path.join(scratch, "no-such-file")
    _, problem = ted_test.ted_problem(["serve", "-m", EN_FR, "--port", "0", "--api-keys",
                                       missing])
    check("keys/no-file", problem is not None and "no-such-file" in problem, problem)


def test_cors():
    origin = "http://page.example:8000"
    for bad in ("page.example", "http://page.example/path", "ftp://page.example"):
        _, problem = ted_test.ted_problem(["serve", "-m", EN_FR, "--port", "0", "--cors", bad])
        check(f"cors/refused-{bad.split(':')[0]}", problem is not None and "--cors" in problem,
              problem)
    fields = {"q": "I saw the cat.", "source": "en", "target": "fr"}
    server = ted_test.Server([EN_FR], "--cors", origin, timeout=TIMEOUT)
    try:
        status, headers, _ = server.call("POST", "/translate", fields, {"Origin": origin})
        check("cors/allowed", status == 200 and
              headers.get("Access-Control-Allow-Origin") == origin, f"{status} {headers}")
        status, headers, _ = server.call("POST", "/translate", fields,
                                         {"Origin": "http://other.example"})
        check("cors/other-origin", status == 200 and
              "Access-Control-Allow-Origin" not in headers, f"{status} {headers}")
        status, headers, _ = server.call("OPTIONS", "/translate", None, {
            "Origin": origin, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type"})
        check("cors/preflight", status == 204 and
              headers.get("Access-Control-Allow-Origin") == origin and
              "POST" in headers.get("Access-Control-Allow-Methods", "") and
              "content-type" in headers.get("Access-Control-Allow-Headers", "").lower(),
              f"{status} {headers}")
    finally:
        check("cors/exit-0", server.stop() == 0, server.last_words())
    server = ted_test.Server([EN_FR], timeout=TIMEOUT)
    try:
        status, headers, _ = server.call("POST", "/translate", fields, {"Origin": origin})
        check("cors/off", status == 200 and not any(
            h.lower().startswith("access-control-") for h in headers), f"{status} {headers}")
        status, headers, _ = server.call("OPTIONS", "/translate", None, {"Origin": origin})
        check("cors/off-preflight", status == 405 and
              "Access-Control-Allow-Origin" not in headers, f"{status} {headers}")
    finally:
        server.stop()


def main():
    groups = ted_test.only_groups(__doc__.split("\n")[0],
                                  ["translate", "errors", "routes", "detect", "keys", "cors"])
    if {"translate", "errors"} & set(groups):
        server = ted_test.Server([f"en-fr={EN_FR}"], timeout=TIMEOUT)
        try:
            if "translate" in groups:
                test_translate(server)
            if "errors" in groups:
                test_errors(server)
        finally:
            check("translate/exit-0", server.stop() == 0, server.last_words())
    with ted_test.scratch_directory("ted-libre-") as scratch:
        if "routes" in groups:
            test_routes(scratch)
            test_multilingual(scratch)
        if "detect" in groups:
            test_detect(scratch)
        if "keys" in groups:
            test_keys(scratch)
    if "cors" in groups:
        test_cors()
    reports = [line for s in ted_test.Server.started for line in s.sanitizer_reports()]
    check("alive/no-sanitizer-report", not reports, reports[:5])
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())
