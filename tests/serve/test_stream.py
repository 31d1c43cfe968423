#!/usr/bin/python3
"""Streamed answers of `ted serve` ("stream": true, Server-Sent Events), with
the toy model (whitespace tokens) and the en-fr model (SentencePiece).

    TED=build/ted /usr/bin/python3 tests/serve/test_stream.py

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  stream/*      for greedy, seeded sampling, scores, beam search, n-best
                lists and blank texts: the answer is text/event-stream; each
                sentence's token events, their texts concatenated, equal the
                translation the same request without "stream" answers; the
                tokens of a greedy sentence come in several events; the
                tokens, joined as the tokenizer joins them (spaces; for the
                SentencePiece model, SentencePiece's own decode_pieces and
                transformers' clean-up, for sentences whose pieces are all
                in target.spm), give the translation; the last event
                is "done" with the unstreamed answer (scores within 1e-6).
                Whether events come while a request decodes is checked by
                disconnect/events-while-decoding (a fast decode may be over
                before the first event is read: then its events come in one)
  refused/*     a bad streamed request gets the JSON error of an unstreamed one
  disconnect/*  a client reads the first events of 1024 sampled sentences while
                the batch is full (--max-batch 8) and most of them wait, then
                closes its connection: its rows
                leave the running batch (GET /v1/stats: rows and waiting
                sentences back to 0, every sentence not yet done counted as
                dropped) long before its sentences could have been decoded,
                the log says "cut", and the server answers the next request
  beam-disconnect/*  a beam search request of 96 long sentences (beam 16,
                three turns of 32, each of many steps), streamed or not, whose
                client closes its connection once the server holds the job:
                the turn being decoded stops (GET /v1/stats: nothing held
                within seconds; /metrics: at least 64 of the sentences
                counted dropped, at most one turn translated), and a short
                beam search request after it is answered
  alive/*       no sanitizer report
"""
import http.client
import json
import os
import socket
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import ted_test  # noqa: E402
from ted_test import SLOW, check, fail, failures, metric_counts  # noqa: E402

TOY = os.path.join(ROOT, "models", "toy-en-fr")
EN_FR = os.path.join(ROOT, "models", "en-fr")
SCORE_TOLERANCE = 1e-6


def read_events(response):
    """The (event, data parsed as JSON) pairs of an SSE body, read to its end."""
    events, name, data = [], None, []
    for raw in response:
        line = raw.decode("utf-8").rstrip("\n")
        if line.startswith("event: "):
            name = line[len("event: "):]
        elif line.startswith("data: "):
            data.append(line[len("data: "):])
        elif line == "" and name is not None:
            events.append((name, json.loads("\n".join(data))))
            name, data = None, []
    return events


def stream(server, request):
    """(status, content type, events) of a streamed request."""
    c = server.connect()
    try:
        c.request("POST", "/v1/translate", json.dumps(dict(request, stream=True)),
                  {"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            return r.status, r.getheader("Content-Type"), json.loads(r.read())
        return r.status, r.getheader("Content-Type"), read_events(r)
    finally:
        c.close()


def first_text(answer):
    return answer if isinstance(answer, str) else answer[0]["text"]


def scores_differ(got, want):
    """Where two answers differ: texts exactly, numbers within SCORE_TOLERANCE."""
    if isinstance(want, float) and isinstance(got, (int, float)):
        return None if abs(got - want) <= SCORE_TOLERANCE else f"{got} != {want}"
    if isinstance(want, list) and isinstance(got, list) and len(got) == len(want):
        return next((d for d in map(scores_differ, got, want) if d), None)
    if isinstance(want, dict) and isinstance(got, dict) and got.keys() == want.keys():
        return next((f"{k}: {d}" for k in want if (d := scores_differ(got[k], want[k]))), None)
    return None if got == want else f"{got!r} != {want!r}"


def spm_join(processor):
    """The text SentencePiece makes of pieces, with transformers' clean-up
    (MarianTokenizer.decode: no space before . , ! ?)."""
    def join(tokens):
        """The text, or None when a piece is not in the SentencePiece model (the model's
        vocabulary may hold more pieces: SentencePiece spells those as they are)."""
        if any(processor.piece_to_id(t) == processor.unk_id() for t in tokens):
            return None
        text = processor.decode_pieces(tokens)
        for a, b in ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"),
                     (" n't", "n't"), (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"),
                     (" 're", "'re")):
            text = text.replace(a, b)
        return text
    return join


def check_stream(server, name, request, join):
    """One request streamed and not: the checks of stream/* (module doc)."""
    status, _, plain = server.translate(request)
    if status != 200:
        return fail(f"stream/{name}", f"the unstreamed request got {status}: {plain}")
    status, kind, events = stream(server, request)
    if status != 200 or kind != "text/event-stream":
        return fail(f"stream/{name}", f"status {status}, Content-Type {kind}: {events}")
    if not events or events[-1][0] != "done" or any(e != "token" for e, _ in events[:-1]):
        return fail(f"stream/{name}", f"not token events then done: {[e for e, _ in events]}")
    texts = plain["translations"]
    pieces = [[] for _ in texts]
    joined = ["" for _ in texts]
    for _, event in events[:-1]:
        pieces[event["index"]] += event["tokens"]
        joined[event["index"]] += event["text"]
    wanted = [first_text(t) for t in texts]
    check(f"stream/{name}/texts", joined == wanted, f"{joined} != {wanted}")
    problem = scores_differ(events[-1][1], plain)
    check(f"stream/{name}/done-event", problem is None, problem)
    streamed = [i for i, p in enumerate(pieces) if p and (not join or join(p) is not None)]
    if join and streamed:
        made = [join(pieces[i]) for i in streamed]
        want = [wanted[i] for i in streamed]
        check(f"stream/{name}/tokens", made == want, f"{made} != {want}")


def test_streams(toy, en_fr, join_spm):
    lines = open(os.path.join(TOY, "test.en"), encoding="utf-8").read().splitlines()[:6]
    words = " ".join
    check_stream(toy, "greedy", {"text": lines[:4] + [""] + lines[4:]}, words)
    check_stream(toy, "sample", {"text": lines, "sample": True, "seed": 7, "temperature": 2,
                                 "max_length": 60}, words)
    check_stream(toy, "scores", {"text": lines[:2], "scores": True}, words)
    check_stream(toy, "beam", {"text": lines[:3], "beam": 4}, None)
    check_stream(toy, "n-best", {"text": lines[:2], "sample": True, "seed": 3, "n_best": 3},
                 None)
    check_stream(toy, "blank", {"text": ["", " "]}, None)
    en = open(os.path.join(EN_FR, "test.en"), encoding="utf-8").read().splitlines()[:6]
    if join_spm:
        check_stream(en_fr, "sentencepiece", {"text": en, "scores": True}, join_spm)
        check_stream(en_fr, "sentencepiece-sample",
                     {"text": en, "sample": True, "seed": 11, "max_length": 40}, join_spm)


def test_refused(toy):
    status, _, body = stream(toy, {"text": ["the dog ."], "beam": 0})
    check("refused/bad-field", status == 400 and "beam" in body.get("error", ""),
          f"{status} {body}")
    status, _, body = stream(toy, {"text": ["the dog ."], "model": "nope"})
    check("refused/unknown-model", status == 404, f"{status} {body}")


def stats(server):
    status, _, body = server.call("GET", "/v1/stats")
    return body["models"][0] if status == 200 else {}


def test_disconnect(toy):
    """1024 sampled sentences of up to 200 tokens, 8 rows at a time (the
    server runs --max-batch 8): seconds of work. The client reads two
    events, then closes."""
    request = {"text": ["the black cat eats the small bird ."] * 1024, "sample": True,
               "temperature": 5, "max_length": 200, "seed": 5, "stream": True}
    c = toy.connect()
    c.request("POST", "/v1/translate", json.dumps(request), {"Content-Type": "application/json"})
    r = c.getresponse()
    lines = [r.readline() for _ in range(6)]
    before = stats(toy)
    c.sock.close()
    c.close()
    deadline = time.monotonic() + 10 * SLOW
    after = stats(toy)
    while (after.get("rows") or after.get("waiting")) and time.monotonic() < deadline:
        time.sleep(0.02)
        after = stats(toy)
    check("disconnect/streamed", r.status == 200 and lines[0] == b"event: token\n",
          f"{r.status} {lines}")
    # the first events came while the batch decoded and most sentences waited: the
    # tokens are sent as they are decoded, not once the request is done
    check("disconnect/events-while-decoding",
          0 < before.get("rows", 0) <= 8 and before.get("waiting", 0) > 0,
          f"before the client left: {before}")
    check("disconnect/rows-freed", after.get("rows") == 0 and after.get("waiting") == 0 and
          after.get("sentences") == 0, f"after: {after}")
    dropped = after.get("dropped", 0)
    # the sentences that waited are dropped, not decoded (but for the few that the
    # batch took and finished between the look at /v1/stats and the close)
    check("disconnect/dropped", before.get("waiting", 2) // 2 <= dropped <= 1024,
          f"dropped {dropped} sentences; {before.get('waiting')} were waiting")
    time.sleep(0.2)
    check("disconnect/logged-cut", any("POST /v1/translate cut 1024 sentences" in line
                                       for line in toy.lines), toy.last_words())
    status, _, body = toy.translate({"text": ["the dog sleeps ."]})
    check("disconnect/next-request", status == 200 and body["translations"] == ["le chien dort ."],
          f"{status} {body}")


def test_beam_disconnect(toy, streamed):
    """96 sentences of 24 words, beam 16: three turns of 32 sentences, each
    of about 30 steps of 512 rows (a second or more). The client sends the
    request on a plain socket and closes it once the job is held: before
    the first turn ends."""
    name = "beam-disconnect/" + ("streamed" if streamed else "plain")
    count = 96
    request = {"text": [" ".join(["the black cat eats the small bird ."] * 3)] * count,
               "beam": 16, "stream": streamed}
    body = json.dumps(request).encode()
    before = metric_counts(toy)
    client = socket.create_connection(("127.0.0.1", toy.port), timeout=10 * SLOW)
    client.sendall(b"POST /v1/translate HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                   b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                   % (toy.port, len(body)) + body)
    deadline = time.monotonic() + 10 * SLOW
    while stats(toy).get("sentences", 0) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    held = stats(toy).get("sentences", 0)
    client.close()
    left = time.monotonic()
    while stats(toy).get("sentences") and time.monotonic() < deadline:
        time.sleep(0.02)
    seconds = time.monotonic() - left
    after = metric_counts(toy)
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in ("translated", "dropped", "failed")}
    check(name + "/held", held == count, f"{held} sentences held before the client left")
    check(name + "/stopped", stats(toy).get("sentences") == 0,
          f"the job still held {seconds:.1f} s after its client left: {stats(toy)}")
    check(name + "/dropped", delta["dropped"] >= count - 32 and delta["translated"] <= 32 and
          sum(delta.values()) == count, f"{delta} of {count} sentences")
    status, _, answer = toy.translate({"text": ["the dog sleeps ."], "beam": 2})
    check(name + "/next-request", status == 200 and answer["translations"] == ["le chien dort ."],
          f"{status} {answer}")


def main():
    try:
        import sentencepiece
        join_spm = spm_join(sentencepiece.SentencePieceProcessor(
            model_file=os.path.join(EN_FR, "target.spm")))
    except ImportError:
        join_spm = None
        print("skip stream/sentencepiece: python3-sentencepiece is not installed")
    toy = ted_test.Server([TOY], "--max-batch", "8")
    en_fr = ted_test.Server([EN_FR])
    try:
        test_streams(toy, en_fr, join_spm)
        test_refused(toy)
        test_disconnect(toy)
        test_beam_disconnect(toy, True)
        test_beam_disconnect(toy, False)
    finally:
        statuses = [toy.stop(), en_fr.stop()]
    check("alive/exit", statuses == [0, 0], f"exit statuses {statuses}")
    reports = [line for s in ted_test.Server.started for line in s.sanitizer_reports()]
    check("alive/no-sanitizer-report", not reports, reports[:5])
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())
