#!/usr/bin/env python3
"""`ted serve` as a LibreTranslate server for real clients, in the test
virtualenv (make venv; tests/requirements.txt pins both packages):

    TED=build/ted .venv/bin/python tests/serve/client_libre.py [--only GROUP,...]

Groups (one "ok NAME" or "FAIL NAME: why" line per check):
  client/*   libretranslatepy (argosopentech/LibreTranslate-py), its code
             unchanged, against a live server: translate one sentence, a
             text of several lines and paragraphs of several sentences,
             languages, detect; without keys and with --api-keys (the
             client's api_key, a wrong one, none). Its translations equal
             ted translate's (--split-sentences for paragraphs: the server
             cuts a text into sentences as LibreTranslate does). The client
             has no format argument: "format": "html" is checked with the
             requests of tests/serve/test_libre.py.
  openapi/*  schemathesis against the live server's /openapi.yaml: every
             operation, its examples, coverage and fuzzing phases (a bounded
             number of examples each), every response of a documented
             status and content type, conforming to its schema, and no 5xx.
  decoding/* (with openapi) the same document with the served models and
             languages as the only values of those fields, positive cases
             only: requests that pass validation and reach the decoding
             threads; no 5xx, the server alive after them.
"""
import os
import subprocess
import sys
import urllib.error

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import ted_test  # noqa: E402
from ted_test import SLOW, check, failures, ted_output  # noqa: E402

EN_FR = os.path.join(ROOT, "models", "en-fr")
TOY = os.path.join(ROOT, "models", "toy-en-fr")
TIMEOUT = 120 * SLOW
# Examples per operation and phase: enough to reach every field's kinds of
# value, few enough for a run of seconds (a minute under AddressSanitizer).
EXAMPLES = 10
# Positive examples per operation and phase with the served names: enough
# for a hundred or so requests decoded.
DECODING_EXAMPLES = 40


# Paragraphs of several sentences, with their own spacing.
PARAGRAPHS = ["Dr. Smith arrived at 10 a.m. on Monday.  He said \"Hello, my friend.\"",
              "The black cat eats the small bird. Wait... What happened?\tThe dog sleeps."]


def translate_lines(lines, *flags):
    out = ted_output(["translate", "-m", EN_FR, *flags], "".join(x + "\n" for x in lines),
                     TIMEOUT)
    return out.splitlines()


def http_status(call):
    """The HTTP status an HTTPError of the client carries, or 200."""
    try:
        call()
        return 200
    except urllib.error.HTTPError as e:
        return e.code


def test_client(scratch):
    from libretranslatepy import LibreTranslateAPI
    lines = ["I saw the cat.", "The dog sleeps.", "My sister did not see the old green car."]
    want = translate_lines(lines)
    server = ted_test.Server([EN_FR], timeout=TIMEOUT)
    try:
        lt = LibreTranslateAPI(server.base)
        got = lt.translate(lines[0], "en", "fr")
        check("client/translate", got == want[0], f"{got!r}, ted translate {want[0]!r}")
        got = lt.translate("\n".join(lines), "en", "fr")
        check("client/translate-lines", got == "\n".join(want), f"{got!r}, ted translate {want}")
        got = [lt.translate(line, "en", "fr") for line in lines]
        check("client/translate-several", got == want, f"{got}, ted translate {want}")
        paragraphs = translate_lines(PARAGRAPHS, "--split-sentences")
        got = lt.translate(PARAGRAPHS[0], "en", "fr")
        check("client/translate-paragraph", got == paragraphs[0],
              f"{got!r}, ted translate --split-sentences {paragraphs[0]!r}")
        got = lt.translate("\n".join(PARAGRAPHS), "en", "fr")
        check("client/translate-paragraphs", got == "\n".join(paragraphs),
              f"{got!r}, ted translate --split-sentences {paragraphs}")
        got = lt.languages()
        check("client/languages", got == [{"code": "en", "name": "English", "targets": ["fr"]},
                                          {"code": "fr", "name": "French", "targets": []}],
              str(got))
        got = lt.detect(lines[2])
        check("client/detect", isinstance(got, list) and got and got[0]["language"] == "en" and
              0 <= got[0]["confidence"] <= 100, str(got))
    finally:
        check("client/exit-0", server.stop() == 0, server.last_words())
    test_client_keys(scratch, lines, want)


def test_client_keys(scratch, lines, want):
    from libretranslatepy import LibreTranslateAPI
    path = os.path.join(scratch, "keys")
    with open(path, "w") as f:
        f.write("client-key 100\n")
    server = ted_test.Server([EN_FR], "--api-keys", path, timeout=TIMEOUT)
    try:
        lt = LibreTranslateAPI(server.base, api_key="client-key")
        got = lt.translate(lines[1], "en", "fr")
        check("client/key-translate", got == want[1], f"{got!r}, ted translate {want[1]!r}")
        got = lt.detect(lines[1])
        check("client/key-detect", got and got[0]["language"] == "en", str(got))
        got = lt.languages()
        check("client/key-languages", [x["code"] for x in got] == ["en", "fr"], str(got))
        status = http_status(lambda: LibreTranslateAPI(server.base).translate(lines[0], "en",
                                                                               "fr"))
        check("client/no-key", status == 403, f"HTTP {status}")
        wrong = LibreTranslateAPI(server.base, api_key="not-a-key")
        status = http_status(lambda: wrong.detect(lines[0]))
        check("client/wrong-key", status == 403, f"HTTP {status}")
    finally:
        check("client/key-exit-0", server.stop() == 0, server.last_words())


CHECKS = ("not_a_server_error,status_code_conformance,content_type_conformance,"
          "response_schema_conformance,response_headers_conformance")


def schemathesis_run(scratch, schema, *options, examples=EXAMPLES):
    """schemathesis run over `schema` (a URL, or a file with --url): the
    completed process, its output in stdout. One request at a time: the
    explorer decodes one at a time and answers a second 503 (Retry-After),
    which is no server error. In the scratch directory, where schemathesis
    keeps its cache (.schemathesis/)."""
    schemathesis = os.path.join(os.path.dirname(sys.executable), "schemathesis")
    args = [schemathesis, "run", schema, "--checks", CHECKS, "--max-examples", str(examples),
            "--seed", "1", "--workers", "1", "--request-timeout", str(60 * SLOW), *options]
    run = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=600 * SLOW, check=False, cwd=scratch)
    summary = [line for line in run.stdout.splitlines() if "generated" in line]
    print(f"info {schema.rsplit('/', 1)[-1]}: {summary[-1].strip() if summary else '(no summary)'}")
    return run


def check_server_after(name, server):
    """No 5xx in the server's log, and it still answers."""
    fivexx = server.matching(" 500 ") + server.matching(" 503 ")
    check(f"{name}/no-5xx", not fivexx, fivexx[:5])
    check(f"{name}/alive", server.proc.poll() is None and
          server.call("GET", "/healthz")[0] == 200, "no /healthz after it")


def test_openapi(scratch):
    if not os.path.exists(os.path.join(os.path.dirname(sys.executable), "schemathesis")):
        check("openapi/schemathesis", False, "schemathesis is missing (make venv)")
        return
    # a small budget per request: fuzzed beams and lengths are refused (413)
    # rather than decoded at length
    server = ted_test.Server([TOY, EN_FR], "--max-request-tokens", "4096", timeout=TIMEOUT)
    try:
        run = schemathesis_run(scratch, f"{server.base}/openapi.yaml")
        check("openapi/conforms", run.returncode == 0, run.stdout[-3000:])
        check_server_after("openapi", server)
        test_decoding(scratch, server)
    finally:
        check("openapi/exit-0", server.stop() == 0, server.last_words())


def served_names(schema, models, languages):
    """The served document with its open strings narrowed to what this
    server serves: every request's model one of `models`, LibreTranslate's
    source and target among `languages`, no stream (schemathesis cannot
    read an event stream here; tests/serve/test_stream.py checks them)."""
    schemas = schema["components"]["schemas"]
    for name in ("TranslateRequest", "TranslateForm"):
        properties = schemas[name]["properties"]
        properties["source"]["enum"] = languages["source"]
        properties["target"]["enum"] = languages["target"]
    bodies = [op["requestBody"]["content"]["application/json"]["schema"]
              for path in ("/v1/explore", "/v1/beam")
              for op in [schema["paths"][path]["post"]]]
    for properties in [schemas["V1Request"]["properties"]] + [b["properties"] for b in bodies]:
        properties["model"]["enum"] = models
    schemas["V1Request"]["properties"]["stream"]["enum"] = [False]
    return schema


def test_decoding(scratch, server):
    """The positive phases of schemathesis with the names the server serves:
    most requests pass validation and are decoded (under SAN=1, by the
    sanitized decoding threads), not refused at the first field."""
    import yaml  # schemathesis's dependency, in the test virtualenv
    schema = yaml.safe_load(server.get("/openapi.yaml")[2])
    narrowed = os.path.join(scratch, "served-names.yaml")
    with open(narrowed, "w", encoding="utf-8") as f:
        yaml.safe_dump(served_names(schema, ["toy-en-fr", "en-fr"],
                                    {"source": ["en", "auto"], "target": ["fr"]}), f)
    before = len(server.matching(" 200 "))
    run = schemathesis_run(scratch, narrowed, "--url", server.base, "--mode", "positive",
                           "--exclude-path", "/openapi.yaml", examples=DECODING_EXAMPLES)
    check("decoding/conforms", run.returncode == 0, run.stdout[-3000:])
    decoding = ("POST /v1/translate ", "POST /translate ", "POST /v1/beam ", "POST /v1/explore ")
    decoded = [line for line in server.matching(" 200 ")[before:]
               if any(route in line for route in decoding)]
    print(f"info decoding/answered: {len(decoded)} decoding requests answered 200")
    check("decoding/reached-the-loop", len(decoded) >= 50,
          f"{len(decoded)} decoding requests answered 200")
    check_server_after("decoding", server)


def main():
    groups = ted_test.only_groups(__doc__.split("\n")[0], ["client", "openapi"])
    with ted_test.scratch_directory("ted-libre-client-") as scratch:
        if "client" in groups:
            test_client(scratch)
        if "openapi" in groups:
            test_openapi(scratch)
    reports = [line for s in ted_test.Server.started for line in s.sanitizer_reports()]
    check("alive/no-sanitizer-report", not reports, reports[:5])
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())
