#!/usr/bin/python3
"""`ted serve` at the edges of its fields and limits, over loopback, with the
toy model and copies of the tiny one (docs/serving.md).

    TED=build/ted /usr/bin/python3 tests/serve/test_bounds.py [--only GROUP,...]

Groups (one "ok NAME" or "FAIL NAME: why" line per check):
  nul/*           a NUL character in a field, wherever it comes from (the
                  query string's %00, a form, a multipart form, JSON's
                  \\u0000 in a string or a list): 400 naming the field, never
                  a translation of the text cut there
  alternatives/*  LibreTranslate's `alternatives` past --alternatives-limit
                  (default 10, and 2): 400 with LibreTranslate's own
                  message, in JSON and in a form; at the limit, answered
  turns/*         a beam search request of 400 sentences does not hold back
                  one that comes after it until all 400 are decoded; its
                  translations equal ted translate --beam 11's
  pivot/*         a route through English whose first leg's translation is
                  longer than the second model's max_positions: 422 naming
                  the leg and its model (ted translate with the first model
                  shows that translation is that long), not a 400 about the
                  client's text
  host/*          Host: localhost, 127.0.0.1 and [::1] without the port are
                  answered; another port, or another name without a port,
                  still 421
  blanks/*        250 000 empty texts are answered, each with "", without
                  counting against --max-request-tokens; blanks beside a
                  sentence keep their places
  stream/*        a streamed beam search or n-best request: its token
                  events list the tokens of the translation (the toy
                  model's tokens are its words), as ted translate gives it
"""
import json
import os
import shutil
import socket
import sys
import threading
import time
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import ted_test  # noqa: E402
from ted_test import SLOW, TED, check, failures, ted_output  # noqa: E402

TOY = os.path.join(ROOT, "models", "toy-en-fr")
TINY = os.path.join(ROOT, "tests", "data", "tiny-model")
TIMEOUT = 120 * SLOW
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def translate_lines(model, lines, *flags):
    return ted_output(["translate", "-m", model, *flags],
                      "".join(line + "\n" for line in lines)).splitlines()


def error_of(data):
    return data.get("error", "") if isinstance(data, dict) else str(data)[:200]


# ---- nul/* --------------------------------------------------------------------------------

def multipart(fields):
    boundary = "tedboundary51a9"
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'
             for k, v in fields.items()]
    body = "".join(parts) + f"--{boundary}--\r\n"
    return body.encode(), {"Content-Type": f"multipart/form-data; boundary={boundary}"}


def refused_naming(status, data, field):
    message = error_of(data)
    return status == 400 and message.startswith(field + ": ") and "NUL" in message


def test_nul(server):
    cut = "The cat\u0000<b>"
    query = "q=The%20cat%00%3Cb%3E&source=en&target=fr"
    status, _, data = server.call("POST", "/translate?" + query, "", FORM)
    check("nul/query-translate", refused_naming(status, data, "q"), f"{status} {data}")
    status, _, data = server.call("POST", "/detect?q=The%20cat%00%3Cb%3E", "", FORM)
    check("nul/query-detect", refused_naming(status, data, "q"), f"{status} {data}")
    status, _, data = server.call("POST", "/translate?source=en&target=fr&x%00y=1",
                                  "q=the%20cat", FORM)
    check("nul/query-name", refused_naming(status, data, "a field's name"), f"{status} {data}")
    body = urllib.parse.urlencode({"q": cut, "source": "en", "target": "fr"})
    status, _, data = server.call("POST", "/translate", body, FORM)
    check("nul/form", refused_naming(status, data, "q"), f"{status} {data}")
    body, headers = multipart({"source": "en", "target": "fr", "q": cut})
    status, _, data = server.call("POST", "/translate", body, headers)
    check("nul/multipart", refused_naming(status, data, "q"), f"{status} {data}")
    status, _, data = server.call("POST", "/translate", {"q": ["the dog .", cut],
                                                         "source": "en", "target": "fr"})
    check("nul/json-list", refused_naming(status, data, "q[1]"), f"{status} {data}")
    status, _, data = server.translate({"text": ["the dog .", "the cat .", cut]})
    check("nul/v1-text", refused_naming(status, data, "text[2]"), f"{status} {data}")
    status, _, data = server.translate({"text": ["the cat ."], "target_lang": "f\u0000r"})
    check("nul/v1-field", refused_naming(status, data, "target_lang"), f"{status} {data}")
    want = translate_lines(TOY, ["The cat <b>"])[0]
    status, _, data = server.call("POST", "/translate?q=The%20cat%20%3Cb%3E&source=en&target=fr",
                                  "", FORM)
    check("nul/without-it", status == 200 and data == {"translatedText": want},
          f"{status} {data}, ted translate: {want!r}")


# ---- alternatives/* -----------------------------------------------------------------------

def test_alternatives(server, limited):
    line = "the dog sleeps ."
    request = {"q": line, "source": "en", "target": "fr", "alternatives": 11}
    status, _, data = server.call("POST", "/translate", request)
    check("alternatives/past-default", status == 400 and error_of(data) ==
          "Invalid request: alternatives parameter must be <= 10", f"{status} {data}")
    status, _, data = server.call("POST", "/translate", dict(request, alternatives=1000))
    check("alternatives/1000", status == 400 and "<= 10" in error_of(data), f"{status} {data}")
    status, _, data = server.call("POST", "/translate", dict(request, alternatives=10))
    check("alternatives/at-default", status == 200 and "alternatives" in data,
          f"{status} {data}")
    body = urllib.parse.urlencode({"q": line, "source": "en", "target": "fr",
                                   "alternatives": "3"})
    status, _, data = limited.call("POST", "/translate", body, FORM)
    check("alternatives/past-option", status == 400 and error_of(data) ==
          "Invalid request: alternatives parameter must be <= 2", f"{status} {data}")
    status, _, data = limited.call("POST", "/translate", dict(request, alternatives=2))
    check("alternatives/at-option", status == 200 and "alternatives" in data,
          f"{status} {data}")


# ---- turns/* ------------------------------------------------------------------------------

def held(server):
    _, _, data = server.call("GET", "/v1/stats")
    return sum(m["sentences"] for m in data["models"])


def test_turns(server):
    with open(os.path.join(TOY, "test.en"), encoding="utf-8") as f:
        lines = f.read().splitlines()[:400]
    answers = {}

    def big():
        answers["big"] = server.translate({"text": lines, "beam": 11})
        answers["big-at"] = time.monotonic()

    thread = threading.Thread(target=big)
    thread.start()
    deadline = time.monotonic() + 30 * SLOW
    while held(server) == 0 and time.monotonic() < deadline and thread.is_alive():
        time.sleep(0.005)
    accepted = held(server) > 0
    status, _, data = server.call("POST", "/translate", {"q": "the cat .", "source": "en",
                                                         "target": "fr", "alternatives": 1})
    small_at = time.monotonic()
    big_waiting = thread.is_alive()
    thread.join()
    check("turns/small-first", accepted and status == 200 and big_waiting and
          small_at < answers["big-at"],
          f"big request {'accepted' if accepted else 'not seen'} first; the small one "
          f"answered {status} {'before' if big_waiting else 'after'} it")
    status, _, data = answers["big"]
    want = translate_lines(TOY, lines, "--beam", "11")
    got = data.get("translations") if isinstance(data, dict) else None
    same = sum(a == b for a, b in zip(got or [], want))
    check("turns/big-equal", status == 200 and got is not None and same == len(want),
          f"{status}: {same}/{len(want)} equal to ted translate --beam 11")


# ---- pivot/* ------------------------------------------------------------------------------

def labelled(scratch, name, source, target, max_positions=None):
    """A copy of the tiny model that says it translates source -> target,
    its max_positions changed when given (its positions are sinusoidal)."""
    directory = os.path.join(scratch, name)
    shutil.copytree(TINY, directory)
    path = os.path.join(directory, "config.yaml")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = text.replace("tokenizer:\n", f"tokenizer:\n  source_lang: {source}\n"
                        f"  target_lang: {target}\n", 1)
    if max_positions:
        text = text.replace("  max_positions: 64\n", f"  max_positions: {max_positions}\n")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return directory


def test_pivot(scratch):
    de_en = labelled(scratch, "de-en", "de", "en")
    en_fr = labelled(scratch, "en-fr", "en", "fr", max_positions=8)
    server = ted_test.Server([f"de-en={de_en}", f"en-fr={en_fr}"], timeout=TIMEOUT)
    try:
        options = {"sample": True, "temperature": 100, "max_length": 40, "seed": 0}
        between = translate_lines(de_en, ["s5 s6"], "--sample", "--temperature", "100",
                                  "--max-length", "40", "--seed", "0")[0]
        # the whitespace tokenizer: a word a token, with BOS and EOS
        tokens = len(between.split()) + 2
        status, _, data = server.translate(dict(options, text=["s5 s6"], source_lang="de",
                                                target_lang="fr"))
        message = error_of(data)
        check("pivot/422-names-leg", tokens > 8 and status == 422 and "leg 2 of 2" in message
              and '"en-fr"' in message and f"{tokens} tokens" in message,
              f"the first leg's translation is {tokens} tokens; answer {status} {data}")
        status, _, data = server.translate(dict(options, text=["s5 s6"], model="de-en"))
        check("pivot/first-leg-alone", status == 200 and data == {"translations": [between]},
              f"{status} {data}, ted translate {between!r}")
    finally:
        check("pivot/exit-0", server.stop() == 0, server.last_words())


# ---- host/* -------------------------------------------------------------------------------

def status_for_host(port, host):
    with socket.create_connection(("127.0.0.1", port), timeout=10 * SLOW) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % host)
        raw = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            raw += chunk
    parts = raw.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None


def test_hosts(server):
    port = server.port
    other = port + 1 if port < 65535 else 1
    cases = [("localhost", b"localhost", 200), ("loopback", b"127.0.0.1", 200),
             ("ipv6-loopback", b"[::1]", 200), ("localhost-empty-port", b"localhost:", 200),
             ("localhost-port", b"localhost:%d" % port, 200),
             ("localhost-other-port", b"localhost:%d" % other, 421),
             ("loopback-other-port", b"127.0.0.1:%d" % other, 421),
             ("foreign", b"evil.example", 421), ("foreign-port", b"evil.example:%d" % port, 421),
             ("loopback-lookalike", b"127.0.0.1.evil.example", 421)]
    for name, host, want in cases:
        status = status_for_host(port, host)
        check(f"host/{name}", status == want, f"Host {host!r}: {status}, expected {want}")


# ---- blanks/* -----------------------------------------------------------------------------

def test_blanks(server):
    status, _, data = server.translate({"text": [""] * 250000})
    got = data.get("translations") if isinstance(data, dict) else None
    check("blanks/250000", status == 200 and got == [""] * 250000,
          f"{status} {error_of(data) if status != 200 else len(got or [])}")
    want = translate_lines(TOY, ["the cat ."])[0]
    status, _, data = server.translate({"text": ["", "the cat .", ""]})
    check("blanks/beside-a-sentence", status == 200 and data == {"translations":
                                                                 ["", want, ""]},
          f"{status} {data}, ted translate {want!r}")


# ---- stream/* -----------------------------------------------------------------------------

def stream_events(server, request):
    c = server.connect()
    try:
        c.request("POST", "/v1/translate", json.dumps(dict(request, stream=True)),
                  {"Content-Type": "application/json"})
        r = c.getresponse()
        events = []
        for block in r.read().decode("utf-8").split("\n\n"):
            lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
            if "event" in lines:
                events.append((lines["event"], json.loads(lines["data"])))
        return r.status, events
    finally:
        c.close()


def test_stream(server):
    lines = ["the dog sleeps .", "", "five kings painted rabbits but they played under the bed ."]
    cases = [("beam", {"beam": 4}, ["--beam", "4"]),
             ("n-best", {"sample": True, "n_best": 3, "seed": 7},
              ["--sample", "--n-best", "3", "--seed", "7"])]
    for name, options, flags in cases:
        status, events = stream_events(server, dict(options, text=lines))
        tokens = {i: [] for i in range(len(lines))}
        for event, data in events:
            if event == "token":
                tokens[data["index"]] += data["tokens"]
        out = translate_lines(TOY, lines, *flags)
        if options.get("n_best"):  # "INDEX ||| TEXT ||| ..." lines, best first
            best = {}
            for line in out:
                fields = line.split(" ||| ")
                best.setdefault(int(fields[0]), fields[1])
            out = [best.get(i, "") for i in range(len(lines))]
        want = {i: text.split() for i, text in enumerate(out)}
        check(f"stream/{name}-tokens", status == 200 and tokens == want,
              f"{status}: tokens {tokens}, ted translate {want}")


def main():
    groups = ted_test.only_groups(__doc__.split("\n")[0],
                                  ["nul", "alternatives", "turns", "pivot", "host", "blanks",
                                   "stream"])
    server = ted_test.Server([TOY], timeout=TIMEOUT)
    try:
        if "nul" in groups:
            test_nul(server)
        if "alternatives" in groups:
            limited = ted_test.Server([TOY], "--alternatives-limit", "2", timeout=TIMEOUT)
            try:
                test_alternatives(server, limited)
            finally:
                check("alternatives/exit-0", limited.stop() == 0, limited.last_words())
        if "turns" in groups:
            test_turns(server)
        if "host" in groups:
            test_hosts(server)
        if "blanks" in groups:
            test_blanks(server)
        if "stream" in groups:
            test_stream(server)
    finally:
        check("alive/exit-0", server.stop() == 0, server.last_words())
    if "pivot" in groups:
        with ted_test.scratch_directory("ted-bounds-") as scratch:
            test_pivot(scratch)
    reports = [line for s in ted_test.Server.started for line in s.sanitizer_reports()]
    check("alive/no-sanitizer-report", not reports, reports[:5])
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())
