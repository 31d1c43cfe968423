#!/usr/bin/python3
"""Beam search requests decoded together: `ted serve` (the toy model) takes
the sentences of every waiting beam search request whose options are the
same into one turn of its beam search thread, and each request gets what
`ted translate` prints for its sentence.

    TED=build/ted /usr/bin/python3 tests/serve/test_beambatch.py

Two first requests (beam 2 and beam 3, each 8 sentences of 3 000 tokens:
seconds of work) hold the beam search threads (two where the server has a
second CPU, else one and the queue) while the others arrive, each on a
connection of its own, one sentence each, in an order of their threads':
8 of beam 4, 4 of beam 3 with n_best 2 and scores, and 8 of beam 4 with
min_length = max_length = 300 (100 under SAN=1: a turn of about half a second), 2 of whose
clients leave. Once all are held, the first two clients leave. Each group's
sentences have different lengths, so ted translate, given the group's
sentences as one file, decodes them in the batch the turn makes, row for
row: its texts are the reference, and its scores within 1e-4.

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  beambatch/held       the 20 requests wait behind the first two
  beambatch/beam-4     each of the 8 beam 4 requests gets ted translate
                       --beam 4's translation of its sentence
  beambatch/n-best     each of the 4 beam 3 requests gets ted translate
                       --beam 3 --n-best 2 --scores's hypotheses and scores:
                       requests with other options, waiting among the
                       first 8, get their own options' answer
  beambatch/turn-of-8  GET /metrics: ted_beam_turn_requests counts a turn
                       of 5 to 8 requests
  departed/stayed      the 6 long requests whose clients stay get ted
                       translate's translations of their sentences, after
                       2 clients of their turn left while it decoded
  departed/dropped     /metrics: the 2 departed requests' sentences and the
                       first two requests' 16 counted dropped, the others
                       translated
  alive/*              exit 0, no sanitizer report
"""
import json
import os
import socket
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import ted_test  # noqa: E402
from ted_test import (SAN, SLOW, answer_difference, check, failures, metric_counts,  # noqa: E402
                      translate_answer)

TOY = os.path.join(ROOT, "models", "toy-en-fr")
TIMEOUT = 120 * SLOW
TOLERANCE, RELATIVE = 1e-4, 2e-6  # as tests/serve/test_serve.py
BLOCKERS = ({"beam": 2, "min_length": 3000, "max_length": 3000},
            {"beam": 3, "min_length": 3000, "max_length": 3000})
BEAM4 = {"beam": 4}
NBEST = {"beam": 3, "n_best": 2, "scores": True}
# a turn of about half a second (AddressSanitizer's build is about 10 times slower)
LONG_STEPS = 100 if SAN else 300
LONG = {"beam": 4, "min_length": LONG_STEPS, "max_length": LONG_STEPS}


def distinct_lengths(lines, words):
    """The first line of each of these word counts."""
    first = {}
    for line in lines:
        first.setdefault(len(line.split()), line)
    return [first[n] for n in words]


def stats(server):
    status, _, body = server.call("GET", "/v1/stats")
    return body["models"][0] if status == 200 else {}


def wait_for(server, key, value, deadline):
    while stats(server).get(key) != value and time.monotonic() < deadline:
        time.sleep(0.005)
    return stats(server).get(key) == value


def send(server, request):
    """The request sent on a socket of its own, its answer not yet read."""
    body = json.dumps(request).encode()
    client = socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT)
    client.sendall(b"POST /v1/translate HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                   b"Content-Type: application/json\r\nContent-Length: %d\r\n"
                   b"Connection: close\r\n\r\n" % (server.port, len(body)) + body)
    return client


def answer(client):
    """The JSON answer read from a socket of send()."""
    raw = b""
    while chunk := client.recv(65536):
        raw += chunk
    client.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    try:
        return int(head.split()[1]), json.loads(body)
    except (IndexError, ValueError):
        return 0, raw[:200]


def turns_over(server, low, high):
    """The beam search turns of more than `low` and at most `high` requests
    (ted_beam_turn_requests' buckets)."""
    _, _, body = server.get("/metrics")
    buckets = {}
    for line in body.decode().splitlines():
        if line.startswith("ted_beam_turn_requests_bucket{"):
            buckets[line.split('le="', 1)[1].split('"', 1)[0]] = int(line.rsplit(" ", 1)[1])
    return buckets.get(str(high), 0) - buckets.get(str(low), 0)


def group_difference(got, options, lines):
    """None when each answer of `got` (status, JSON) is ted translate's for
    its line, the group's lines translated as one file; else what differs."""
    want = translate_answer(TOY, dict(options, text=lines), TIMEOUT)["translations"]
    for (status, data), expected, line in zip(got, want, lines):
        why = answer_difference(data, {"translations": [expected]}, TOLERANCE, RELATIVE) \
            if status == 200 else f"{status} {data}"
        if why:
            return f"{line!r}: {why}"
    return None


def test_turns(server, lines):
    groups = {"beam-4": (BEAM4, distinct_lengths(lines, range(4, 12))),
              "n-best": (NBEST, distinct_lengths(lines, range(12, 16))),
              "long": (LONG, distinct_lengths(lines, range(16, 24)))}
    before = metric_counts(server)
    deadline = time.monotonic() + 30 * SLOW
    blockers = []
    for options in BLOCKERS:
        blockers.append(send(server, dict(options, text=lines[:8])))
        wait_for(server, "sentences", 8 * len(blockers), deadline)
    sockets = {name: [None] * len(texts) for name, (_, texts) in groups.items()}

    def client(name, k):
        options, texts = groups[name]
        sockets[name][k] = send(server, dict(options, text=[texts[k]]))

    threads = [threading.Thread(target=client, args=(name, k))
               for name, (_, texts) in groups.items() for k in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check("beambatch/held", wait_for(server, "sentences", 36, deadline),
          f"{stats(server)}: 36 sentences expected")
    for blocker in blockers:
        blocker.close()
    results = {name: [answer(c) for c in sockets[name]] for name in ("beam-4", "n-best")}
    for name in ("beam-4", "n-best"):
        options, texts = groups[name]
        why = group_difference(results[name], options, texts)
        check(f"beambatch/{name}", why is None, why)
    eights = turns_over(server, 4, 8)
    check("beambatch/turn-of-8", eights >= 1, f"{eights} turns of 5 to 8 requests")
    return before, groups["long"], sockets["long"]


def test_departed(server, before, group, clients):
    options, texts = group
    deadline = time.monotonic() + 30 * SLOW
    wait_for(server, "sentences", 8, deadline)  # the turn of the long ones begins
    time.sleep(0.05)
    for client in clients[:2]:
        client.close()
    stayed = [answer(c) for c in clients[2:]]
    # all 8 sentences, as the turn holds them: the same batch, row for row
    want = translate_answer(TOY, dict(options, text=texts), TIMEOUT)["translations"]
    wrong = [f"{texts[k + 2]!r}: {status} {str(data)[:200]}"
             for k, (status, data) in enumerate(stayed)
             if status != 200 or data != {"translations": [want[k + 2]]}]
    check("departed/stayed", not wrong, "; ".join(wrong))
    wait_for(server, "sentences", 0, deadline)
    after = metric_counts(server)
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in ("translated", "dropped", "failed")}
    check("departed/dropped", delta == {"translated": 18, "dropped": 18, "failed": 0},
          f"sentences: {delta}, expected 18 translated, 18 dropped")


def main():
    with open(os.path.join(TOY, "test.en"), encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    server = ted_test.Server([TOY], timeout=TIMEOUT)
    try:
        before, group, clients = test_turns(server, lines)
        test_departed(server, before, group, clients)
    finally:
        status = server.stop()
    check("alive/exit", status == 0, f"exit status {status}: {server.last_words()}")
    reports = [line for s in ted_test.Server.started for line in s.sanitizer_reports()]
    check("alive/no-sanitizer-report", not reports, reports[:5])
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())
