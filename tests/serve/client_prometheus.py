#!/usr/bin/env python3
"""`ted serve`'s GET /metrics as Prometheus reads it: the page parsed by
prometheus_client's own parser (tests/requirements.txt), in the test
virtualenv:

    TED=build/ted .venv/bin/python tests/serve/client_prometheus.py

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails),
on a server of two models (toy-en-fr and en-fr):
  format/*   the page is text/plain version 0.0.4 and parses; every family
             has its type, each model's histograms their buckets, +Inf
             equal to _count and never decreasing, before any translation
  counts/*   after greedy requests with "scores": true, each model's
             sentences translated are those sent, its tokens chosen are the
             tokens the answers list (token_log_probs, EOS included), and
             its steps fed as many rows in all (a greedy row chooses one
             token a step); its steps and rows histograms count the same
             steps, its encoder passes at least one and at most one a
             sentence; nothing failed or dropped, and at rest nothing is
             held, waiting or in the batch
  http/*     the requests before each of two scrapes counted by status (200,
             400, 404) as the server's log lists them (a request is counted
             before it is logged), and timed: the histogram counts every
             request logged
  alive/*    no sanitizer report
"""
import os
import re
import sys
import time

from prometheus_client.parser import text_string_to_metric_families

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import ted_test  # noqa: E402
from ted_test import SLOW, check, failures  # noqa: E402

TOY = os.path.join(ROOT, "models", "toy-en-fr")
EN_FR = os.path.join(ROOT, "models", "en-fr")
MODELS = {"toy-en-fr": ["the cat sleeps .", "the black dog eats the small bird .",
                        "she thinks that the queen will not sing ."],
          "en-fr": ["The cat sleeps.", "She thinks that the queen will not sing."]}
HISTOGRAMS = ["ted_step_seconds", "ted_step_rows", "ted_encode_seconds"]
# a request's line in the log: "ted serve: GET /metrics 200 0 sentences 0.3 ms"
REQUEST_LINE = re.compile(r"^ted serve: [A-Z]+ \S+ (\d+|cut) \d+ sentences? [\d.]+ ms$")


def scrape(server):
    """(status, content type, {family name: family}) of GET /metrics."""
    status, headers, body = server.get("/metrics")
    families = {f.name: f for f in text_string_to_metric_families(body.decode("utf-8"))}
    return status, headers.get("Content-Type", ""), families


def value(families, family, sample, **labels):
    """The value of one sample, or None when the page has none."""
    for s in families[family].samples if family in families else []:
        if s.name == sample and s.labels == labels:
            return s.value
    return None


def check_histogram(families, name, **labels):
    """Its buckets never decrease, and +Inf equals _count."""
    buckets = [(s.labels["le"], s.value) for s in families[name].samples
               if s.name == name + "_bucket" and
               all(s.labels.get(k) == v for k, v in labels.items())]
    counts = [v for _, v in buckets]
    count = value(families, name, name + "_count", **labels)
    return (len(buckets) > 1 and buckets[-1][0] == "+Inf" and counts == sorted(counts) and
            counts[-1] == count)


def check_format(server):
    status, content_type, families = scrape(server)
    check("format/served", status == 200 and content_type.startswith("text/plain") and
          "version=0.0.4" in content_type, f"{status} {content_type}")
    types = {"ted_step_seconds": "histogram", "ted_step_rows": "histogram",
             "ted_encode_seconds": "histogram", "ted_tokens_total": "counter",
             "ted_sentences_total": "counter", "ted_batch_rows": "gauge",
             "ted_encoding_rows": "gauge", "ted_waiting_sentences": "gauge",
             "ted_held_sentences": "gauge", "ted_http_requests_total": "counter",
             "ted_http_requests_cut_total": "counter", "ted_http_request_seconds": "histogram"}
    # prometheus_client names a counter family without its _total
    got = {name: families[name.removesuffix("_total")].type
           for name in types if name.removesuffix("_total") in families}
    check("format/families", got == types, f"{got}")
    bad = [(name, model) for name in HISTOGRAMS for model in MODELS
           if not check_histogram(families, name, model=model)]
    check("format/histograms", not bad, f"{bad}")
    zero = [model for model in MODELS
            if value(families, "ted_tokens", "ted_tokens_total", model=model) != 0]
    check("format/zero-before", not zero, f"tokens counted before any request: {zero}")


def translate_all(server):
    """Greedy requests of MODELS' sentences with scores, a sentence at a
    time and then all together: {model: (sentences, tokens)} and the
    number of requests."""
    sent, requests = {}, 0
    for model, texts in MODELS.items():
        sentences = tokens = 0
        for batch in [[t] for t in texts] + [texts]:
            status, _, answer = server.translate({"text": batch, "model": model,
                                                  "scores": True})
            requests += 1
            if status != 200:
                raise RuntimeError(f"{model}: {status} {answer}")
            sentences += len(batch)
            tokens += sum(len(hyps[0]["token_log_probs"]) for hyps in answer["translations"])
        sent[model] = (sentences, tokens)
    return sent, requests


def check_counts(families, sent):
    for model, (sentences, tokens) in sent.items():
        translated = value(families, "ted_sentences", "ted_sentences_total", model=model,
                           outcome="translated")
        check(f"counts/sentences/{model}", translated == sentences,
              f"{translated} translated, {sentences} sent")
        chosen = value(families, "ted_tokens", "ted_tokens_total", model=model)
        check(f"counts/tokens/{model}", chosen == tokens,
              f"{chosen} counted, {tokens} in the answers")
        rows = value(families, "ted_step_rows", "ted_step_rows_sum", model=model)
        check(f"counts/rows/{model}", rows == tokens, f"{rows} rows fed, {tokens} tokens")
        steps = value(families, "ted_step_seconds", "ted_step_seconds_count", model=model)
        stepped = value(families, "ted_step_rows", "ted_step_rows_count", model=model)
        check(f"counts/steps/{model}", steps == stepped and 0 < steps <= tokens,
              f"{steps} timed, {stepped} by rows, {tokens} tokens")
        passes = value(families, "ted_encode_seconds", "ted_encode_seconds_count", model=model)
        check(f"counts/encoder-passes/{model}", 1 <= passes <= sentences,
              f"{passes} passes for {sentences} sentences")
        others = [value(families, "ted_sentences", "ted_sentences_total", model=model,
                        outcome=outcome) for outcome in ("failed", "dropped")]
        check(f"counts/none-failed/{model}", others == [0, 0], f"failed, dropped: {others}")
        bad = [name for name in HISTOGRAMS if not check_histogram(families, name, model=model)]
        check(f"counts/histograms/{model}", not bad, f"{bad}")


def http_counts(families):
    codes = {code: value(families, "ted_http_requests", "ted_http_requests_total", code=code)
             or 0 for code in ("200", "400", "404")}
    timed = value(families, "ted_http_request_seconds", "ted_http_request_seconds_count")
    return codes, timed


def logged(server):
    """The requests the server has logged, by status: a request is counted,
    then logged, when libmicrohttpd reports it complete, which may come just
    after its client has read the answer."""
    statuses = [m.group(1) for m in map(REQUEST_LINE.match, server.lines) if m]
    return {code: statuses.count(code) for code in ("200", "400", "404")}, len(statuses)


HELD = ("ted_batch_rows", "ted_encoding_rows", "ted_waiting_sentences", "ted_held_sentences")


def at_rest(families):
    """Whether every model's gauges say it holds nothing."""
    return all(s.value == 0 for name in HELD if name in families
               for s in families[name].samples)


def settled(server, requests):
    """The page once the `requests` made so far are logged (up to 10 s),
    and what the log says of them."""
    deadline = time.monotonic() + 10 * SLOW
    while logged(server)[1] < requests and time.monotonic() < deadline:
        time.sleep(0.02)
    log = logged(server)
    return scrape(server)[2], log


def check_at_rest(server, models):
    """Once every answer is sent, each model's gauges come back to 0 (a
    loop updates them just after the answer it sends: up to 10 s)."""
    deadline = time.monotonic() + 10 * SLOW
    families = scrape(server)[2]
    while not at_rest(families) and time.monotonic() < deadline:
        time.sleep(0.02)
        families = scrape(server)[2]
    for model in models:
        held = [value(families, name, name, model=model) for name in HELD]
        check(f"counts/at-rest/{model}", held == [0, 0, 0, 0], f"{held}")


def main():
    server = ted_test.Server([TOY, EN_FR])
    try:
        check_format(server)
        before, log0 = settled(server, 1)
        sent, requests = translate_all(server)
        server.get("/no-such-path")
        server.call("POST", "/v1/translate", "{not json")
        after, log1 = settled(server, 2 + requests + 2)
        check_counts(after, sent)
        (codes0, timed0), (codes1, timed1) = http_counts(before), http_counts(after)
        grown = {code: codes1[code] - codes0[code] for code in codes0}
        check("http/by-status", (codes0, codes1) == (log0[0], log1[0]) and
              grown == {"200": requests + 1, "400": 1, "404": 1},
              f"{codes0}, then {codes1} (the log: {log0[0]}, {log1[0]}) for {requests} "
              f"translations, a scrape, a 400 and a 404")
        check("http/timed", (timed0, timed1) == (log0[1], log1[1]),
              f"{timed0}, then {timed1} timed; {log0[1]}, then {log1[1]} logged")
        check("http/histogram", check_histogram(after, "ted_http_request_seconds"), "buckets")
        check_at_rest(server, sent)
    finally:
        server.stop()
    check("alive/no-sanitizer-report", not server.sanitizer_reports(),
          "\n".join(server.last_words()))
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())
