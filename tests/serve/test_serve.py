#!/usr/bin/python3
"""`ted serve` over loopback, with the toy model (models/toy-en-fr).

    TED=build/ted /usr/bin/python3 tests/serve/test_serve.py

Every answer is compared with what `ted translate` prints for the same
sentences and options (computed first, one run per distinct request):
texts exactly, scores within 2e-5 + 2e-6 x their size (ted translate
prints 6 decimals, and a sentence decoded in another batch goes through
other float32 kernels: the last bits of a log-prob of -48 may differ).

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  api/*       /healthz, /v1/models (config and parameter count), greedy,
              sampling, beam search with n-best lists and scores, blank
              texts, the model named or not
  load/*      32 concurrent clients x 20 requests of 1-8 test sentences
              (greedy, seeded sampling, n-best lists from sampling and beam
              search, scores): every answer equals ted translate's, none
              lost. Under SAN=1 (AddressSanitizer, ~10x slower) 32 x 5
              requests.
  fault/*     malformed and truncated JSON, wrong types, unknown and
              repeated fields, bad option values, invalid UTF-8, NUL, a text
              over max_positions, an unknown model, path and method: each a
              JSON error with its status (400, 404, 405); a body over
              --max-body (413, with and without Content-Length); clients
              that disconnect mid-request and mid-decode; a client sending
              one byte a second (cut by --timeout while others are
              answered); 500 idle connections (others still answered); a
              full queue (429 with Retry-After)
  drain/*     SIGTERM in the middle of a load: every request accepted
              before it is answered (and right), later ones get 503 or find
              the server gone, exit status 0
  alive/*     after all of it the server still answers, exits 0 on SIGTERM,
              and no sanitizer reported anything
"""
import http.client
import json
import os
import random
import socket
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import ted_test  # noqa: E402
from ted_test import (SAN, SLOW, TED, answer_difference, check, fail, failures, run,  # noqa: E402
                      translate_answer)


MODEL = os.path.join(ROOT, "models", "toy-en-fr")
# Scores agree up to float32 rounding, which depends on what a sentence was batched with
# (the matrix products sum in another order over another number of rows): ted translate
# itself, on 400 test sentences sampled at temperature 3 with --batch-size 1, 8 and 64, gives
# token log-probs up to 4.4e-5 apart (the unlikely tokens a hot draw picks have the largest
# logits in magnitude, and so the largest rounding); ted serve against ted translate, up to
# 5.0e-5. The bound is twice that.
TOLERANCE = 1e-4           # absolute, plus RELATIVE x the score's size
RELATIVE = 2e-6
CLIENTS = 32
REQUESTS = 5 if SAN else 20      # per client
POOL = 16 if SAN else 40         # distinct requests the clients draw from
TIMEOUT = 120 * SLOW             # seconds any one exchange may take


# ---- the server ---------------------------------------------------------------

def serve(*options):
    """`ted serve` with the toy model and options, started (ted_test.Server)."""
    return ted_test.Server([MODEL], *options, timeout=TIMEOUT)


# ---- what ted translate prints ----------------------------------------------------

def expected_answer(request):
    """The answer ted translate gives, as ted serve's JSON would hold it."""
    return translate_answer(MODEL, request, TIMEOUT)


def difference(got, want):
    return answer_difference(got, want, TOLERANCE, RELATIVE)


def sentences():
    with open(os.path.join(MODEL, "test.en"), encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def request_pool(rng, lines, count):
    """Distinct requests: greedy, seeded sampling, n-best lists, scores."""
    pool = []
    for n in range(count):
        request = {"text": rng.sample(lines, rng.randint(1, 8))}
        kind = n % 5
        if kind in (1, 2):
            request.update(sample=True, seed=rng.randrange(1 << 40))
            request.update(rng.choice([{}, {"temperature": 0.7}, {"top_k": 5},
                                       {"top_p": 0.9, "temperature": 1.5}]))
        elif kind == 3:  # hot: every draw counts, so each sample's stream must be its own
            request.update(sample=True, seed=rng.randrange(1000), n_best=rng.randint(2, 4),
                           temperature=3, max_length=12)
        elif kind == 4:
            beam = rng.randint(2, 5)
            request.update(beam=beam, n_best=rng.randint(1, beam))
        if rng.random() < 0.3:
            request["scores"] = True
        pool.append(request)
    return pool


# ---- the API ----------------------------------------------------------------------

def test_api(server):
    status, headers, data = server.call("GET", "/healthz")
    check("api/healthz", status == 200 and data == {"status": "ok"}, f"{status} {data}")
    status, headers, data = server.call("GET", "/v1/models")
    try:
        model = data["models"][0]
        config = model["config"]
        right = (len(data["models"]) == 1 and model["name"] == "toy-en-fr"
                 and config["model"]["d_model"] == 128 and config["model"]["heads"] == 4
                 and config["tokenizer"]["lowercase"] is True
                 and config["decoding"]["max_length_offset"] == 4)
    except (KeyError, TypeError, IndexError):
        right = False
    check("api/models", status == 200 and right, f"{status} {str(data)[:300]}")
    _, info, _ = run([TED, "info", "-m", MODEL], timeout=TIMEOUT)
    parameters = [line for line in info.splitlines() if line.startswith("parameters: ")]
    want = int(parameters[0].split()[1]) if parameters else -1
    check("api/models-parameters", right and model["parameters"] == want,
          f"{data['models'][0].get('parameters') if right else data}, ted info {want}")
    check("api/json", headers.get("Content-Type") == "application/json", str(headers))
    cases = {
        "greedy": {"text": ["the black cat eats the small bird .", "the dog sleeps ."]},
        "named-model": {"model": "toy-en-fr", "text": ["my sister did not see the car ."]},
        "blank-texts": {"text": ["", "   ", "the cat sleeps ."]},
        "no-texts": {"text": []},
        "blank-n-best": {"text": ["", "the cat sleeps ."], "beam": 3, "n_best": 2},
        "sampling": {"text": ["the cat sleeps .", "the queen sings ."], "sample": True,
                     "seed": "12345678901234567", "temperature": 2, "scores": True},
        "sampling-n-best": {"text": ["the cat sleeps ."], "sample": True, "seed": 5,
                            "n_best": 6, "top_k": 10},
        "beam-n-best": {"text": ["the old queen sings .", "the dog ."], "beam": 4,
                        "n_best": 3, "scores": True, "length_penalty": 1.0,
                        "length_normalization": "power"},
        "max-length": {"text": ["the black cat eats the small bird ."], "max_length": 3},
        "early-stopping": {"text": ["the old queen sings .", "i am on this will ."], "beam": 4,
                           "n_best": 2, "scores": True, "early_stopping": False},
        "early-stopping-never": {"text": ["the queens will know the small child ."],
                                 "beam": 3, "max_length": 6, "early_stopping": "never"},
        "rules": {"text": ["the the the cat sleeps .", "the dog ."], "scores": True,
                  "no_repeat_ngram_size": 1, "repetition_penalty": 1.5, "min_length": 12,
                  "max_length": 30},
        "rules-beam": {"text": ["the the the cat sleeps .", "the dog ."], "beam": 3,
                       "n_best": 2, "scores": True, "no_repeat_ngram_size": 2,
                       "min_length": 9, "max_length": 30},
        "rules-words": {"text": ["the the the cat sleeps .", "the dog ."], "beam": 2,
                        "bad_words_ids": [[5], [7, 8]], "min_new_tokens": 6, "max_length": 30,
                        "encoder_no_repeat_ngram_size": 2},
    }
    for name, request in cases.items():
        status, _, data = server.translate(request)
        want = expected_answer({k: v for k, v in request.items() if k != "model"})
        why = difference(data, want) if status == 200 else f"status {status}: {data}"
        check(f"api/{name}", why is None, why)


def test_generate(server):
    """POST /v1/generate: the body and answer of /v1/translate, decoded as
    `ted generate` decodes (the model's own settings, the options given)."""
    for name, request in {"plain": {"text": ["the cat sleeps .", "the dog ."]},
                          "beam-scores": {"text": ["the small child ."], "beam": 3,
                                          "scores": True}}.items():
        status, _, data = server.call("POST", "/v1/generate", request)
        want = translate_answer(MODEL, request, TIMEOUT, command="generate")
        why = difference(data, want) if status == 200 else f"status {status}: {data}"
        check(f"generate/{name}", why is None, why)


def test_port_taken(server):
    """A second server on the same port: one message, exit status 1."""
    status, _, err = run([TED, "serve", "-m", MODEL, "--port", str(server.port)],
                         timeout=TIMEOUT)
    lines = err.splitlines()
    check("api/port-taken", status == 1 and len(lines) == 1
          and "cannot listen on 127.0.0.1 port" in lines[0], f"{status} {lines}")


# ---- load ---------------------------------------------------------------------------

def client(server, pool, expected, rng, count, results):
    connection = server.connect()
    for _ in range(count):
        n = rng.randrange(len(pool))
        try:
            status, _, data = server.translate(pool[n], connection)
            why = difference(data, expected[n]) if status == 200 else f"{status}: {data}"
        except (OSError, http.client.HTTPException) as e:
            why = f"{type(e).__name__}: {e}"
            connection.close()
            connection = server.connect()
        results.append((n, why))
    connection.close()


def test_load(server, pool, expected, name="load"):
    results = []
    threads = [threading.Thread(target=client,
                                args=(server, pool, expected, random.Random(k), REQUESTS,
                                      results))
               for k in range(CLIENTS)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT * 4)
    seconds = time.monotonic() - start
    wrong = [(n, why) for n, why in results if why]
    total = CLIENTS * REQUESTS
    check(f"{name}/all-answered", len(results) == total,
          f"{len(results)} answers of {total} requests")
    check(f"{name}/answers-equal-ted-translate", not wrong,
          f"{len(wrong)} wrong, e.g. request {wrong[:1]}")
    kinds = {"greedy": 0, "sample": 0, "beam": 0, "n-best": 0}
    for n, _ in results:
        r = pool[n]
        kinds["beam" if "beam" in r else "sample" if r.get("sample") else "greedy"] += 1
        kinds["n-best"] += r.get("n_best", 1) > 1
    check(f"{name}/mixed", all(kinds.values()), str(kinds))
    print(f"# {name}: {total} requests from {CLIENTS} clients in {seconds:.1f} s {kinds}",
          flush=True)


def test_load_between_steps(pool, expected):
    """The same load where the matrix products take every CPU (--threads as
    many as the process may use): no encoding thread then, the batching
    thread encodes the newcomers between two steps."""
    server = serve("--threads", str(len(os.sched_getaffinity(0))))
    try:
        test_load(server, pool, expected, "load-between-steps")
    finally:
        status = server.stop()
    check("load-between-steps/exit-0", status == 0, f"exit status {status}: {server.lines[-5:]}")


# ---- faults -------------------------------------------------------------------------

def expect_error(server, name, body, status, needle, headers=None):
    got, _, data = server.call("POST", "/v1/translate", body, headers)
    message = data.get("error", "") if isinstance(data, dict) else ""
    check(f"fault/{name}", got == status and needle in message and set(data) == {"error"},
          f"status {got}, expected {status}; {data!r:.300}")


def test_bad_requests(server):
    bad = [
        ("malformed-json", b'{"text": ["a" "b"]}', 400, "malformed JSON"),
        ("truncated-json", b'{"text": ["the cat sleeps', 400, "malformed JSON"),
        ("trailing-garbage", b'{"text": ["a"]} x', 400, "malformed JSON"),
        ("empty-body", b"", 400, "malformed JSON"),
        ("not-an-object", b'["the cat"]', 400, "not a JSON object"),
        ("text-missing", {"beam": 2}, 400, "text: missing"),
        ("text-not-a-list", {"text": "the cat"}, 400, "text: expected a list of strings"),
        ("text-item-not-a-string", {"text": ["a", 3]}, 400, "text[1]: expected a string"),
        ("beam-a-string", {"text": ["a"], "beam": "4"}, 400, "beam: expected a whole number"),
        ("beam-fraction", {"text": ["a"], "beam": 2.5}, 400, "beam: expected a whole number"),
        ("sample-a-number", {"text": ["a"], "sample": 1}, 400, "sample: expected true or false"),
        ("seed-negative", {"text": ["a"], "sample": True, "seed": -1}, 400, "seed: expected"),
        ("model-a-number", {"text": ["a"], "model": 1}, 400, "model: expected a string"),
        ("normalization-word", {"text": ["a"], "beam": 2, "length_normalization": "x"}, 400,
         "length_normalization: expected"),
        ("early-stopping-word", {"text": ["a"], "beam": 2, "early_stopping": "sometimes"}, 400,
         'early_stopping: expected false, true, "never" or "marian"'),
        ("early-stopping-greedy", {"text": ["a"], "early_stopping": True}, 400,
         "early_stopping applies to beam search"),
        ("unknown-field", {"text": ["a"], "bream": 2}, 400, 'unknown field "bream"'),
        ("repeated-field", b'{"text": ["a"], "beam": 2, "beam": 3}', 400, "given twice"),
        ("beam-zero", {"text": ["a"], "beam": 0}, 400, "beam: 0 is not a whole number from 1"),
        ("beam-too-wide", {"text": ["a"], "beam": 849}, 400,
         "beam 849: the beam must be smaller than the target vocabulary (849 tokens)"),
        ("beam-and-sample", {"text": ["a"], "beam": 2, "sample": True}, 400,
         'beam and "sample": true exclude each other'),
        ("temperature-zero", {"text": ["a"], "sample": True, "temperature": 0}, 400,
         "temperature: 0 is not a number > 0"),
        ("top-p-above-one", {"text": ["a"], "sample": True, "top_p": 1.5}, 400,
         "top_p: 1.5 is not a number > 0 and <= 1"),
        ("temperature-without-sample", {"text": ["a"], "temperature": 2}, 400,
         'temperature applies to sampling; add "sample": true'),
        ("n-best-greedy", {"text": ["a"], "n_best": 2}, 400, "n_best 2 needs beam search"),
        ("n-best-above-beam", {"text": ["a"], "beam": 2, "n_best": 3}, 400,
         "n_best 3 is more than the beam size 2"),
        ("n-best-too-many", {"text": ["a"], "sample": True, "n_best": 5000}, 400,
         "n_best: 5000 is not a whole number from 1 to 1024"),
        ("max-length-zero", {"text": ["a"], "max_length": 0}, 400, "max_length: 0"),
        ("min-length-negative", {"text": ["a"], "min_length": -1}, 400, "min_length: -1"),
        ("bad-words-empty", {"text": ["a"], "bad_words_ids": [[]]}, 400,
         "bad_words_ids: expected lists of token ids"),
        ("bad-words-outside", {"text": ["a"], "bad_words_ids": [[99999]]}, 400,
         "bad_words_ids: 99999 is not a target token"),
        ("repetition-penalty-word", {"text": ["a"], "repetition_penalty": "high"}, 400,
         "repetition_penalty"),
        ("invalid-utf8", b'{"text": ["ok", "the \xff cat"]}', 400, "text[1]: "),
        ("nul-escaped", b'{"text": ["the \\u0000 cat"]}', 400, "NUL"),
        ("lone-surrogate", b'{"text": ["the \\ud800 cat"]}', 400, "malformed JSON"),
        ("over-max-positions", {"text": ["the " * 5000]}, 400,
         "text[0]: 5002 tokens, more than the model's max_positions (5000)"),
        ("unknown-model", {"text": ["a"], "model": "de-en"}, 404, 'model "de-en" is not served'),
    ]
    for name, body, status, needle in bad:
        expect_error(server, name, body, status, needle)
    got, _, data = server.call("GET", "/v1/translation")
    check("fault/unknown-path", got == 404 and "no such path" in data.get("error", ""),
          f"{got} {data}")
    got, headers, data = server.call("GET", "/v1/translate")
    check("fault/wrong-method", got == 405 and headers.get("Allow") == "POST"
          and "takes POST" in data.get("error", ""), f"{got} {headers} {data}")
    got, headers, data = server.call("DELETE", "/healthz")
    check("fault/wrong-method-get", got == 405 and headers.get("Allow") == "GET",
          f"{got} {headers} {data}")


def raw_exchange(port, data, timeout=10 * SLOW):
    """Sends bytes on a fresh connection; returns what came back until close."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        chunks = []
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
        except (ConnectionResetError, socket.timeout):
            pass
        return b"".join(chunks)


def test_body_limit(server, limit):
    body = json.dumps({"text": ["the cat sleeps ."] * (limit // 16)}).encode()
    expect_error(server, "body-over-limit", body, 413, "--max-body")
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 1000]), body[i:i + 1000])
                      for i in range(0, len(body), 1000)) + b"0\r\n\r\n"
    answer = raw_exchange(server.port, b"POST /v1/translate HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                          b"Transfer-Encoding: chunked\r\nContent-Type: application/json\r\n"
                          b"\r\n" % server.port + chunks)
    check("fault/chunked-body-over-limit", answer.startswith(b"HTTP/1.1 413")
          and b"--max-body" in answer, repr(answer[:300]))


def test_disconnects(server):
    with socket.create_connection(("127.0.0.1", server.port)) as s:
        s.sendall(b"POST /v1/translate HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: 100\r\n"
                  b'Content-Type: application/json\r\n\r\n{"text": [' % server.port)
    long_decode = json.dumps({"text": ["the cat sleeps ."] * 4, "sample": True, "seed": 1,
                              "n_best": 32, "temperature": 50, "max_length": 300}).encode()
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", server.port)) as s:
            s.sendall(b"POST /v1/translate HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: %d\r\n"
                      b"Content-Type: application/json\r\n\r\n%s"
                      % (server.port, len(long_decode), long_decode))
            time.sleep(0.05)
    status, _, data = server.translate({"text": ["the dog sleeps ."]})
    check("fault/client-gone", status == 200 and data == {"translations": ["le chien dort ."]},
          f"{status} {data}")


def test_slow_client(server, timeout):
    """One byte a second: cut after --timeout; meanwhile others are answered."""
    body = json.dumps({"text": ["the cat sleeps ."]}).encode()
    request = (b"POST /v1/translate HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: %d\r\n"
               b"Content-Type: application/json\r\n\r\n" % (server.port, len(body))) + body
    outcome = {}

    def slow():
        start = time.monotonic()
        try:
            with socket.create_connection(("127.0.0.1", server.port), timeout=60) as s:
                for byte in request:
                    s.sendall(bytes([byte]))
                    time.sleep(1.0)
                    if time.monotonic() - start > timeout + 20:
                        break
                outcome["reply"] = s.recv(100)
        except OSError as e:
            outcome["error"] = type(e).__name__
        outcome["seconds"] = time.monotonic() - start

    t = threading.Thread(target=slow)
    t.start()
    latencies = []
    while t.is_alive() and len(latencies) < 60:
        start = time.monotonic()
        status, _, data = server.translate({"text": ["the dog sleeps ."]})
        latencies.append((time.monotonic() - start, status))
        time.sleep(0.2)
    t.join(60)
    cut = outcome.get("reply", b"") == b"" or "error" in outcome
    seconds = outcome.get("seconds", 0)
    check("fault/slow-client-cut", cut and timeout <= seconds <= timeout + 5,
          f"{outcome}, --timeout {timeout}")
    check("fault/slow-client-others-answered",
          latencies and all(s == 200 and t < 2 * SLOW for t, s in latencies),
          f"{[(round(t, 2), s) for t, s in latencies]}")


def test_idle_connections(server):
    idle = []
    try:
        for _ in range(500):
            idle.append(socket.create_connection(("127.0.0.1", server.port), timeout=10))
        time.sleep(0.2)
        start = time.monotonic()
        status, _, data = server.translate({"text": ["the dog sleeps ."]})
        seconds = time.monotonic() - start
        check("fault/500-idle-connections", status == 200 and seconds < 2 * SLOW
              and data == {"translations": ["le chien dort ."]},
              f"{status} {data} in {seconds:.2f} s")
    except OSError as e:
        fail("fault/500-idle-connections", f"{len(idle)} connections open: {e}")
    finally:
        for s in idle:
            s.close()


def test_full_queue():
    """--max-batch 1 --max-queue 2: while a long request of 2 sentences is
    decoding, any other sentence is refused with 429 and Retry-After."""
    server = serve("--max-batch", "1", "--max-queue", "2")
    long_request = {"text": ["the cat sleeps .", "the dog sleeps ."], "sample": True, "seed": 3,
                    "n_best": 64, "temperature": 50, "max_length": 400 if SAN else 1500}
    result = {}
    t = threading.Thread(target=lambda: result.update(answer=server.translate(long_request)))
    t.start()
    time.sleep(0.3)  # it is read and accepted in a few milliseconds
    status, headers, data = server.translate({"text": ["the queen sings ."]})
    busy = t.is_alive()
    t.join(TIMEOUT)
    check("fault/queue-full-429", status == 429 and headers.get("Retry-After") == "1"
          and "queue" in data.get("error", ""),
          f"{status} {headers} {data} (the long request was {'' if busy else 'not '}running)")
    status, _, data = result.get("answer", (None, None, None))
    check("fault/queue-full-first-answered", status == 200 and len(data["translations"]) == 2,
          f"{status} {str(data)[:200]}")
    status, _, data = server.translate({"text": ["a", "b", "c"]})
    check("fault/more-sentences-than-the-queue", status == 413 and "--max-queue" in
          data.get("error", ""), f"{status} {data}")
    check("fault/queue-server-exit", server.stop() == 0, server.last_words())


# ---- draining -----------------------------------------------------------------------

def test_drain(pool, expected):
    server = serve()
    slow = {"text": sentences()[:60 if SAN else 300], "beam": 8}  # about 2 s
    slow_expected = expected_answer(slow)
    results, stop_at = [], [None]

    def load(k):
        rng = random.Random(100 + k)
        while stop_at[0] is None or time.monotonic() < stop_at[0] + 30 * SLOW:
            n = rng.randrange(len(pool))
            sent = time.monotonic()
            try:
                status, _, data = server.translate(pool[n])
            except (OSError, http.client.HTTPException) as e:
                results.append((sent, time.monotonic(), "error", type(e).__name__))
                if server.proc.poll() is not None:
                    return
                continue
            why = difference(data, expected[n]) if status == 200 else None
            results.append((sent, time.monotonic(), status, why))
            if status == 503:
                time.sleep(0.01)

    def slow_client():
        sent = time.monotonic()
        status, _, data = server.translate(slow)
        results.append((sent, time.monotonic(), status, difference(data, slow_expected)
                        if status == 200 else data))

    threads = [threading.Thread(target=load, args=(k,)) for k in range(8)]
    threads.append(threading.Thread(target=slow_client))
    for t in threads:
        t.start()
    time.sleep(1.0 * SLOW)
    stop_at[0] = time.monotonic()
    status = server.stop()
    exited = time.monotonic()
    for t in threads:
        t.join(TIMEOUT)
    check("drain/exit-0", status == 0, f"exit status {status}: {server.lines[-5:]}")
    answered = [r for r in results if r[2] == 200]
    wrong = [r for r in answered if r[3]]
    check("drain/answers-right", answered and not wrong, f"{len(wrong)} wrong: {wrong[:1]}")
    lost = [r for r in results if r[2] not in (200, 503) and r[1] < stop_at[0]]
    check("drain/none-lost-before-sigterm", not lost, f"{lost[:3]}")
    late = [r for r in results if r[2] == "error" and r[1] < exited - 1.0 * SLOW]
    check("drain/errors-only-once-stopped", not late,
          f"{len(late)} failed exchanges while the server still ran: {late[:3]}")
    in_flight = [r for r in answered if r[0] < stop_at[0] < r[1]]
    check("drain/in-flight-answered", in_flight,
          "no request accepted before SIGTERM was answered after it")
    refused = [r for r in results if r[2] == 503]
    print(f"# drain: {len(answered)} answered ({len(in_flight)} across SIGTERM), "
          f"{len(refused)} refused with 503", flush=True)
    check("drain/log", any("SIGTERM: answering" in line for line in server.lines),
          server.last_words())


# ---- main -----------------------------------------------------------------------------

def main():
    rng = random.Random(20240611)
    lines = sentences()
    pool = request_pool(rng, lines, POOL)
    expected = [expected_answer(r) for r in pool]

    server = serve("--max-body", "65536", "--timeout", "3")
    try:
        test_port_taken(server)
        test_api(server)
        test_generate(server)
        test_load(server, pool, expected)
        test_bad_requests(server)
        test_body_limit(server, 65536)
        test_disconnects(server)
        test_slow_client(server, 3)
        test_idle_connections(server)
        status, _, data = server.call("GET", "/healthz")
        check("alive/after-faults", status == 200, f"{status} {data}")
    finally:
        status = server.stop()
    check("alive/exit-0", status == 0, f"exit status {status}: {server.lines[-5:]}")
    logged = [line for line in server.lines if " POST /v1/translate " in line]
    check("alive/log-lines", len(logged) >= CLIENTS * REQUESTS
          and all(line.split()[4] in ("200", "400", "404", "413", "cut") for line in logged),
          f"{len(logged)} lines, e.g. {logged[:2]}")
    test_full_queue()
    test_drain(pool, expected)
    test_load_between_steps(pool, expected)
    reports = [line for s in ted_test.Server.started for line in s.sanitizer_reports()]
    check("alive/no-sanitizer-report", not reports, reports[:5])
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())
