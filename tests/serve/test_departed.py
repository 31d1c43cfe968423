#!/usr/bin/python3
"""Clients that leave before their unstreamed greedy answer: `ted serve`
(--max-batch 8, the toy model) stops decoding their requests.

    TED=build/ted /usr/bin/python3 tests/serve/test_departed.py

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  departed/held        a long request (32 sentences, min_length = max_length =
                       3000: 12 000 steps of the 8 rows at least, seconds of
                       work) fills the batch, and a second one of 8 sentences
                       waits behind it; each sent on its own socket
  departed/next-request  both clients close their sockets (the waiting one
                       first): a third request is answered, and right, within
                       2 s (its sentence waits behind none of theirs)
  departed/stopped     GET /v1/stats: nothing held, no rows, nothing waiting
  departed/dropped     /metrics: the 40 sentences counted dropped, none
                       translated
  departed/abandoned   /metrics: ted_requests_abandoned_total grows by 2
  departed/logged-cut  the log says "cut" for both requests
  alive/*              exit 0, no sanitizer report
"""
import json
import os
import socket
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import ted_test  # noqa: E402
from ted_test import SLOW, check, failures, metric_counts  # noqa: E402

TOY = os.path.join(ROOT, "models", "toy-en-fr")


def stats(server):
    status, _, body = server.call("GET", "/v1/stats")
    return body["models"][0] if status == 200 else {}


def send(server, request):
    """The request sent on a socket of its own, its answer never read."""
    body = json.dumps(request).encode()
    client = socket.create_connection(("127.0.0.1", server.port), timeout=10 * SLOW)
    client.sendall(b"POST /v1/translate HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                   b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                   % (server.port, len(body)) + body)
    return client


def test_departed(toy):
    before = metric_counts(toy)
    long = {"text": ["the black cat eats the small bird ."] * 32, "min_length": 3000,
            "max_length": 3000}
    waiting = {"text": ["the dog sleeps ."] * 8, "min_length": 3000, "max_length": 3000}
    first = send(toy, long)
    deadline = time.monotonic() + 10 * SLOW
    while stats(toy).get("rows", 0) < 8 and time.monotonic() < deadline:
        time.sleep(0.01)
    second = send(toy, waiting)
    while stats(toy).get("sentences", 0) < 40 and time.monotonic() < deadline:
        time.sleep(0.01)
    held = stats(toy)
    second.close()
    first.close()
    left = time.monotonic()
    status, _, answer = toy.translate({"text": ["the dog sleeps ."]})
    seconds = time.monotonic() - left
    check("departed/held", held.get("sentences") == 40 and held.get("rows") == 8,
          f"before the clients left: {held}")
    check("departed/next-request",
          status == 200 and answer["translations"] == ["le chien dort ."] and seconds < 2 * SLOW,
          f"{status} {answer} after {seconds:.2f} s")
    now = stats(toy)
    while (now.get("sentences") or now.get("rows") or now.get("waiting")) and \
            time.monotonic() < deadline:
        time.sleep(0.02)
        now = stats(toy)
    check("departed/stopped", now.get("sentences") == 0 and now.get("rows") == 0 and
          now.get("waiting") == 0, f"{time.monotonic() - left:.1f} s after: {now}")
    after = metric_counts(toy)
    delta = {k: after.get(k, 0) - before.get(k, 0)
             for k in ("translated", "dropped", "failed", "abandoned")}
    check("departed/dropped", delta["dropped"] == 40 and delta["translated"] == 1 and
          delta["failed"] == 0, f"sentences: {delta}")
    check("departed/abandoned", delta["abandoned"] == 2, f"requests: {delta}")
    time.sleep(0.2)
    cut = [line for line in toy.lines if "POST /v1/translate cut" in line]
    check("departed/logged-cut", len(cut) == 2, f"{cut} {toy.last_words()}")


def main():
    toy = ted_test.Server([TOY], "--max-batch", "8")
    try:
        test_departed(toy)
    finally:
        statuses = [toy.stop()]
    check("alive/exit", statuses == [0], f"exit statuses {statuses}")
    reports = [line for s in ted_test.Server.started for line in s.sanitizer_reports()]
    check("alive/no-sanitizer-report", not reports, reports[:5])
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())
