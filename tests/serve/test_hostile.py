#!/usr/bin/python3
"""`ted serve` against a hostile client, over loopback, with the toy model
(docs/serving.md, "What ted refuses").

    TED=build/ted /usr/bin/python3 tests/serve/test_hostile.py

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  framing/*     two Content-Lengths, Content-Length with chunked,
                "chunked, identity", "gzip, chunked", chunked in HTTP/1.0,
                two Hosts, a space before a header's colon: each answered
                with its status (400, or 501 for the unknown coding) and the
                connection closed, within a socket timeout (no hang)
  cross-site/*  a POST of text/plain (the form a page of another site may
                send without asking), or with no Content-Type: 415, nothing
                decoded; application/json with a charset is taken
  host/*        a Host naming another server (DNS rebinding), or this one
                on another port: 421; localhost and 127.0.0.1 with the port
                are taken; --allow-host NAME adds a name; HTTP/1.1 without
                Host: 400
  log/*         a path with %0d%0a writes no line of its own on stderr
  utf8/*        every error body is valid UTF-8 JSON: a 404 for /%ff%fe,
                field names of invalid UTF-8, a long name of 2-byte
                characters (cut between characters), on every JSON endpoint
  connections/* under `ulimit -n 256`, 240 idle connections leave /healthz
                answered; past --max-connections-per-client the client's
                idle connections are closed and a new one is answered; an
                idle connection is closed after --idle-timeout
  drain/*       SIGTERM during a /v1/beam decode: it is answered, exit 0; a
                second SIGTERM during the drain ends the process at once
                (exit 1)
  explore/*     \\u0000 in /v1/explore and /v1/beam: 400 as /v1/translate;
                test.en a FIFO or a link to /dev/zero: /v1/explorer answers
                at once, without examples, and the server stops on SIGTERM
  alive/*       no sanitizer reported anything
Under SAN=1 (AddressSanitizer) every wait is SLOW times longer.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import ted_test  # noqa: E402
from ted_test import SLOW, TED, check, failures  # noqa: E402

MODEL = os.path.join(ROOT, "models", "toy-en-fr")
WAIT = 5 * SLOW          # seconds an answer may take before it counts as a hang
BODY = b'{"text": ["the dog sleeps ."]}'


def serve(*options, model=MODEL):
    return ted_test.Server([model], *options, timeout=WAIT)


def started(name, *options, model=MODEL):
    """serve(...), or None with a FAIL line for check `name`."""
    try:
        return serve(*options, model=model)
    except RuntimeError as e:
        check(name, False, str(e))
        return None


# ---- raw exchanges ----------------------------------------------------------------

def exchange(port, data, timeout=WAIT):
    """Sends bytes on a fresh connection; (status, body, closed): what came
    back until the server closed it (closed True) or the timeout passed."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        chunks, closed = [], False
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    closed = True
                    break
                chunks.append(chunk)
        except (ConnectionResetError, BrokenPipeError):
            closed = True
        except socket.timeout:
            pass
    raw = b"".join(chunks)
    head, _, body = raw.partition(b"\r\n\r\n")
    parts = head.split(b" ", 2)
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
    return status, body, closed


def post(port, headers, body=BODY, path=b"/v1/translate"):
    """A raw POST with these header lines (bytes, each without CRLF)."""
    lines = [b"POST " + path + b" HTTP/1.1", b"Host: 127.0.0.1:%d" % port] + headers
    return exchange(port, b"\r\n".join(lines) + b"\r\n\r\n" + body)


def chunked(body):
    return b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)


def test_framing(server):
    port = server.port
    json_type = b"Content-Type: application/json"
    attacks = [
        ("two-content-lengths", [json_type, b"Content-Length: %d" % len(BODY),
                                 b"Content-Length: 5"], BODY, 400),
        ("content-length-and-chunked", [json_type, b"Content-Length: 5",
                                        b"Transfer-Encoding: chunked"], chunked(BODY), 400),
        ("chunked-then-identity", [json_type, b"Transfer-Encoding: chunked, identity"],
         chunked(BODY), 400),
        ("gzip-then-chunked", [json_type, b"Transfer-Encoding: gzip, chunked"], chunked(BODY),
         501),
        ("space-before-colon", [json_type, b"Content-Length : %d" % len(BODY)], BODY, 400),
    ]
    for name, headers, body, want in attacks:
        start = time.monotonic()
        status, answer, closed = post(port, headers, body)
        seconds = time.monotonic() - start
        check(f"framing/{name}", status == want and closed and seconds < WAIT,
              f"status {status} (expected {want}), connection {'closed' if closed else 'kept'},"
              f" {seconds:.1f} s: {answer[:200]!r}")
    status, answer, closed = exchange(port, b"POST /v1/translate HTTP/1.0\r\n"
                                      b"Transfer-Encoding: chunked\r\n"
                                      b"Content-Type: application/json\r\n\r\n" + chunked(BODY))
    check("framing/chunked-in-http-1.0", status == 400 and closed,
          f"status {status}, closed {closed}: {answer[:200]!r}")
    status, answer, closed = exchange(port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                                      b"Host: evil.example\r\n\r\n" % port)
    check("framing/two-hosts", status == 400 and closed,
          f"status {status}, closed {closed}: {answer[:200]!r}")


# ---- cross-site requests -----------------------------------------------------------

def test_cross_site(server):
    port = server.port
    evil = b"Origin: http://evil.example"
    before = len(server.matching(" 200 1 sentence"))
    for name, headers in (("text-plain", [b"Content-Type: text/plain", evil]),
                          ("form", [b"Content-Type: application/x-www-form-urlencoded", evil]),
                          ("no-content-type", [evil])):
        status, answer, _ = post(port, headers + [b"Content-Length: %d" % len(BODY)])
        check(f"cross-site/{name}", status == 415 and b"application/json" in answer,
              f"status {status}: {answer[:200]!r}")
    status, answer, _ = post(port, [b"Content-Type: text/plain", b"Content-Length: 30"],
                             b'{"source": "the dog sleeps ."}', path=b"/v1/explore")
    check("cross-site/explore-text-plain", status == 415, f"status {status}: {answer[:200]!r}")
    time.sleep(0.2)
    check("cross-site/nothing-decoded", len(server.matching(" 200 1 sentence")) == before,
          str(server.lines[-4:]))
    status, answer, _ = post(port, [b"Content-Type: Application/JSON; charset=utf-8",
                                    b"Content-Length: %d" % len(BODY), b"Connection: close"])
    check("cross-site/json-with-charset", status == 200 and b"le chien dort" in answer,
          f"status {status}: {answer[:200]!r}")


def get_with_host(port, host):
    return exchange(port, b"GET /v1/models HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
                    % host)


def test_hosts(server):
    port = server.port
    cases = [("foreign", b"evil.example:%d" % port, 421),
             ("foreign-no-port", b"evil.example", 421),
             ("other-port", b"127.0.0.1:%d" % (port + 1 if port < 65535 else 1), 421),
             ("localhost", b"localhost:%d" % port, 200),
             ("ipv6-loopback", b"[::1]:%d" % port, 200),
             ("loopback", b"127.0.0.1:%d" % port, 200)]
    for name, host, want in cases:
        status, answer, _ = get_with_host(port, host)
        check(f"host/{name}", status == want, f"Host {host!r}: {status} {answer[:200]!r}")
    status, answer, closed = exchange(port, b"GET /healthz HTTP/1.1\r\n\r\n")
    check("host/missing", status == 400 and closed, f"{status} {closed} {answer[:200]!r}")
    allowed = started("host/allowed", "--allow-host", "ted.example")
    if not allowed:
        return
    try:
        status, answer, _ = get_with_host(allowed.port, b"ted.example")
        check("host/allowed", status == 200, f"{status} {answer[:200]!r}")
        status, answer, _ = get_with_host(allowed.port, b"evil.example:%d" % allowed.port)
        check("host/allowed-only-that", status == 421, f"{status} {answer[:200]!r}")
    finally:
        allowed.stop()


# ---- what is logged, what is answered ------------------------------------------------

def test_log(server):
    status, _, _ = exchange(server.port, b"GET /%0d%0aFORGED%20line HTTP/1.1\r\n" +
                            b"Host: 127.0.0.1:%d\r\nConnection: close\r\n\r\n" % server.port)
    time.sleep(0.2)
    forged = [line for line in server.lines if line.startswith("FORGED")]
    escaped = server.matching("\\x0d\\x0aFORGED")
    check("log/no-forged-line", status == 404 and not forged and escaped,
          f"{status}; forged {forged}, escaped {escaped}")


def valid_error(body):
    """None when body is UTF-8 JSON {"error": ...}, else why not."""
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        return f"{type(e).__name__}: {body[:200]!r}"
    return None if isinstance(data, dict) and "error" in data else f"{data!r:.200}"


def test_utf8(server):
    port = server.port
    status, body, _ = exchange(port, b"GET /%ff%fe HTTP/1.1\r\n" +
                               b"Host: 127.0.0.1:%d\r\nConnection: close\r\n\r\n" % port)
    why = valid_error(body)
    check("utf8/404-path", status == 404 and why is None, f"{status} {why}")
    long_name = ("x" + "é" * 70).encode()  # %.64s and %.100s would cut a character
    cases = [("field-name", b'{"text": ["a"], "\xff\xfe": 1}'),
             ("long-field-name", b'{"text": ["a"], "' + long_name + b'": 1}'),
             ("model-name", b'{"text": ["a"], "model": "\xc3\x28\xe2\x82"}'),
             ("cut-model-name", b'{"text": ["a"], "model": "' + long_name * 3 + b'"}')]
    for path in (b"/v1/translate", b"/v1/explore", b"/v1/beam"):
        endpoint = path.decode().rsplit("/", 1)[1]
        for name, body in cases:
            if path != b"/v1/translate":
                body = body.replace(b'"text": ["a"]', b'"source": "the cat ."')
            status, answer, _ = post(port, [b"Content-Type: application/json",
                                            b"Content-Length: %d" % len(body),
                                            b"Connection: close"], body, path)
            why = valid_error(answer)
            check(f"utf8/{endpoint}-{name}", status in (400, 404) and why is None,
                  f"{status} {why}")


# ---- connections ------------------------------------------------------------------------

def open_idle(port, count):
    sockets = []
    try:
        for _ in range(count):
            sockets.append(socket.create_connection(("127.0.0.1", port), timeout=WAIT))
    except OSError:
        pass
    return sockets


def healthz(port):
    try:
        return exchange(port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                        b"Connection: close\r\n\r\n" % port)[0]
    except OSError as e:
        return f"{type(e).__name__}: {e}"


def test_descriptor_limit(scratch):
    """ted serve with 256 descriptors (ulimit -n in a wrapper), 240 idle
    connections: /healthz is answered."""
    wrapper = os.path.join(scratch, "ted-256")
    with open(wrapper, "w") as f:
        f.write(f'#!/bin/sh\nulimit -n 256 || exit 1\nexec "{os.path.abspath(TED)}" "$@"\n')
    os.chmod(wrapper, 0o755)
    real, ted_test.TED = ted_test.TED, wrapper
    try:
        server = started("connections/healthz-past-240-idle")
    finally:
        ted_test.TED = real
    if not server:
        return
    idle = open_idle(server.port, 240)
    try:
        time.sleep(0.5)
        start = time.monotonic()
        status = healthz(server.port)
        seconds = time.monotonic() - start
        check("connections/healthz-past-240-idle", status == 200 and len(idle) == 240,
              f"{len(idle)} idle connections; /healthz: {status} in {seconds:.1f} s")
    finally:
        for s in idle:
            s.close()
    check("connections/descriptor-limit-exit-0", server.stop() == 0, server.last_words())


def closed_by_server(s, timeout):
    s.settimeout(timeout)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    except (socket.timeout, OSError):
        return False


def closed_now(s):
    """Whether the server has closed s (without waiting)."""
    s.setblocking(False)
    try:
        return s.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def test_per_client_cap():
    """--max-connections-per-client 8: 12 idle connections and a 13th that
    asks /healthz: it is answered, and the server closes 5 idle ones to keep
    within 8."""
    server = started("connections/per-client-cap", "--max-connections-per-client", "8",
                     "--idle-timeout", "60")
    if not server:
        return
    idle = open_idle(server.port, 12)
    try:
        time.sleep(0.3)
        status = healthz(server.port)
        time.sleep(0.3 * SLOW)
        closed = [closed_now(s) for s in idle]
        # 5 closed; which ones follows when each was registered, which two HTTP threads race for
        check("connections/per-client-cap", status == 200 and 4 <= sum(closed) <= 6,
              f"/healthz {status}; of 12 idle, closed: {closed}")
    finally:
        for s in idle:
            s.close()
    check("connections/per-client-exit-0", server.stop() == 0, server.last_words())


def test_idle_timeout():
    server = started("connections/idle-timeout", "--idle-timeout", "1")
    if not server:
        return
    with socket.create_connection(("127.0.0.1", server.port), timeout=WAIT) as s:
        start = time.monotonic()
        closed = closed_by_server(s, 3.0 * SLOW)
        seconds = time.monotonic() - start
    check("connections/idle-timeout", closed and 0.8 < seconds < 3.0 * SLOW,
          f"an idle connection {'closed' if closed else 'open'} after {seconds:.1f} s "
          "(--idle-timeout 1)")
    check("connections/idle-timeout-exit-0", server.stop() == 0, server.last_words())


# ---- the drain ---------------------------------------------------------------------------

# 104 decoder steps of a beam of 16 on the toy model: about 0.15 s (1.5 s under SAN)
LONG_BEAM = {"source": "the " * 98, "beam": 16, "length_penalty": 5.0}


def test_drain_beam():
    """SIGTERM while a /v1/beam request is decoded, and while its body is on
    its way: both are answered, then the server exits 0."""
    server = started("drain/beam-decoding")
    if not server:
        return
    result = {}

    def beam():
        try:
            result["answer"] = server.call("POST", "/v1/beam", LONG_BEAM)
        except OSError as e:
            result["answer"] = (type(e).__name__, None, str(e))

    body = json.dumps(LONG_BEAM).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=WAIT) as s:
        s.sendall(b"POST /v1/beam HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: %d\r\n"
                  b"Content-Type: application/json\r\n\r\n" % (server.port, len(body)) +
                  body[:10])
        t = threading.Thread(target=beam)
        t.start()
        time.sleep(0.03 * SLOW)
        server.proc.send_signal(signal.SIGTERM)
        t.join(WAIT)  # one explorer decode at a time: the next would get 503
        try:
            s.sendall(body[10:])
            late = exchange_rest(s)
        except OSError as e:
            late = f"{type(e).__name__}: {e}".encode()
    try:
        server.proc.wait(WAIT)  # on its own: a second SIGTERM would stop it at once
    except subprocess.TimeoutExpired:
        pass
    status = server.stop()
    answer = result.get("answer", (None, None, None))
    check("drain/beam-decoding", answer[0] == 200 and "best" in answer[2] and status == 0,
          f"answer {answer[0]} {str(answer[2])[:120]}; exit {status}; {server.last_words()}")
    check("drain/beam-body-in-flight", late.startswith(b"HTTP/1.1 200") and b'"best"' in late,
          f"{late[:200]!r}")


def exchange_rest(s):
    """What comes back on socket s until the answer's body is whole."""
    data = b""
    while b"\r\n\r\n" not in data or len(data.partition(b"\r\n\r\n")[2]) < content_length(data):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def content_length(data):
    for line in data.partition(b"\r\n\r\n")[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":", 1)[1])
    return 0


def test_second_signal():
    """A request whose body is on its way holds the drain; a second SIGTERM
    ends the process at once."""
    server = serve()
    with socket.create_connection(("127.0.0.1", server.port), timeout=WAIT) as s:
        s.sendall(b"POST /v1/translate HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                  b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"te"
                  % server.port)
        time.sleep(0.3)
        server.proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        draining = server.proc.poll() is None
        start = time.monotonic()
        status = server.stop(signal.SIGTERM, timeout=WAIT)
        seconds = time.monotonic() - start
    check("drain/second-signal", draining and status == 1 and seconds < 2 * SLOW
          and server.matching("SIGTERM again"),
          f"draining {draining}, exit {status} {seconds:.1f} s after the second: "
          f"{server.lines[-2:]}")


# ---- the explorer ---------------------------------------------------------------------------

def test_explore_nul(server):
    for path, body in (("/v1/explore", {"source": "the dog\u0000 sleeps ."}),
                       ("/v1/beam", {"source": "the dog\u0000 sleeps .", "beam": 2}),
                       ("/v1/translate", {"text": ["the dog\u0000 sleeps ."]})):
        status, _, data = server.call("POST", path, body)
        check(f"explore/nul{path.replace('/', '-')}",
              status == 400 and "NUL" in str(data.get("error", "")), f"{status} {data!r:.200}")


def model_copy(scratch, name, make_examples):
    """The toy model's files linked into scratch/name, test.en made by
    make_examples(path)."""
    directory = os.path.join(scratch, name)
    os.mkdir(directory)
    for entry in os.listdir(MODEL):
        if entry != "test.en":
            os.symlink(os.path.join(MODEL, entry), os.path.join(directory, entry))
    make_examples(os.path.join(directory, "test.en"))
    return directory


def test_examples_file(scratch, name, make_examples):
    directory = model_copy(scratch, name, make_examples)
    server = started(f"explore/{name}", model=directory)
    if not server:
        return
    answers = []
    for _ in range(3):
        try:
            answers.append(server.call("GET", "/v1/explorer")[:3:2])
        except OSError as e:
            answers.append((type(e).__name__, None))
    right = all(status == 200 and data["models"][0]["examples"] == [] for status, data in answers)
    check(f"explore/{name}", right and healthz(server.port) == 200, f"{answers}"[:300])
    check(f"explore/{name}-exit-0", server.stop(timeout=WAIT) == 0, server.last_words())


def main():
    server = serve("--timeout", "10")
    try:
        test_framing(server)
        test_cross_site(server)
        test_hosts(server)
        test_log(server)
        test_utf8(server)
        test_explore_nul(server)
        check("alive/after-attacks", healthz(server.port) == 200, "/healthz")
    finally:
        status = server.stop()
    check("alive/exit-0", status == 0, f"exit status {status}: {server.lines[-5:]}")
    with tempfile.TemporaryDirectory(prefix="ted-hostile-") as scratch:
        test_descriptor_limit(scratch)
        test_per_client_cap()
        test_idle_timeout()
        test_drain_beam()
        test_second_signal()
        test_examples_file(scratch, "test-en-fifo", os.mkfifo)
        test_examples_file(scratch, "test-en-dev-zero", lambda p: os.symlink("/dev/zero", p))
    reports = [line for s in ted_test.Server.started for line in s.sanitizer_reports()]
    check("alive/no-sanitizer-report", not reports, reports[:5])
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())
