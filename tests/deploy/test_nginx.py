#!/usr/bin/python3
"""deploy/nginx/ted.conf, the nginx configuration of docs/deploy.md, with
Debian's nginx in front of two `ted serve` processes on the toy model.

    TED=build/ted /usr/bin/python3 tests/deploy/test_nginx.py

nginx runs as the user running the test, from a temporary directory
(`nginx -p DIR -c DIR/nginx.conf -e DIR/error.log`: its pid, logs and
temporary files there), with deploy/nginx/ted.conf included as it is
shipped but for its addresses: the two backends' ports and a free port to
listen on. Every translation is compared with what `ted translate` prints
for the same lines.

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  nginx/spread       requests from 4 clients are all answered, and each
                     backend's own log counts some of them (the counts add
                     up to the requests sent)
  nginx/stream       a streamed answer passes through nginx and ends with the
                     right translations
  nginx/stream-incremental  the first events of a long stream (1024 sampled
                     sentences) reach the client while most of its sentences
                     still wait in the backend (nginx does not buffer them)
  nginx/stream-left  when that client closes, the backend drops the rest of
                     its sentences (GET /v1/stats: dropped, none left)
  nginx/kill/*       8 clients send requests while one backend is killed
                     (SIGKILL): every request is answered 200 and right;
                     nginx's access log shows each backend answered some,
                     and requests that it retried on the other backend
                     after the killed one failed them
  nginx/drain/*      the same with SIGTERM: the backend answers what it had
                     accepted and exits 0, the others go to the other one;
                     none is lost
  nginx/body-limit   a body over client_max_body_size (1m, ted's
                     --max-body) is refused by nginx with 413
"""
import http.client
import json
import os
import random
import shutil
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
from ted_test import SLOW, check, fail, failures, ted_output  # noqa: E402

MODEL = os.path.join(ROOT, "models", "toy-en-fr")
CONF = os.path.join(ROOT, "deploy", "nginx", "ted.conf")
# the options deploy/nginx/ted.conf and ted-serve@.service agree on
BACKEND_OPTIONS = ["--allow-host", "ted", "--max-body", "1048576", "--timeout", "30",
                   "--idle-timeout", "5"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    """nginx with deploy/nginx/ted.conf in front of `backends` (ports)."""

    def __init__(self, backends):
        self.dir = tempfile.mkdtemp(prefix="ted-nginx-")
        os.chmod(self.dir, 0o755)  # started as root, its workers run as nobody
        self.port = free_port()
        shipped = open(CONF, encoding="utf-8").read()
        ours = shipped.replace("listen 8080;", f"listen 127.0.0.1:{self.port};")
        for default, port in zip(("127.0.0.1:8081", "127.0.0.1:8082"), backends):
            ours = ours.replace(f"server {default} ", f"server 127.0.0.1:{port} ")
        if ours.count("listen 127.0.0.1:") != 1 or any(f":{p} " not in ours for p in backends):
            raise RuntimeError(f"{CONF}: its listen or server lines changed")
        self.path = lambda name: os.path.join(self.dir, name)
        with open(self.path("ted.conf"), "w", encoding="utf-8") as f:
            f.write(ours)
        with open(self.path("nginx.conf"), "w", encoding="utf-8") as f:
            f.write(self.main_conf())
        self.proc = subprocess.Popen(["nginx", "-p", self.dir, "-c", self.path("nginx.conf"),
                                      "-e", self.path("error.log")],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"nginx did not start: {self.log('error.log')[-500:]}")

    def main_conf(self):
        temp = "".join(f"    {kind}_temp_path {self.path(kind)};\n"
                       for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        return f"""daemon off;
worker_processes 1;
pid {self.path("nginx.pid")};
error_log {self.path("error.log")} info;
events {{ worker_connections 512; }}
http {{
    log_format upstreams '$status|$upstream_addr|$upstream_status';
    access_log {self.path("access.log")} upstreams;
{temp}    include {self.path("ted.conf")};
}}
"""

    def log(self, name):
        try:
            with open(self.path(name), encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def connect(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=120 * SLOW)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)  # graceful: finish, then exit
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def translate(nginx, lines, connection=None):
    """(status, translations or the body) of one request through nginx."""
    c = connection or nginx.connect()
    try:
        c.request("POST", "/v1/translate", json.dumps({"text": lines}),
                  {"Content-Type": "application/json"})
        r = c.getresponse()
        body = r.read()
        try:
            return r.status, json.loads(body).get("translations", body)
        except ValueError:
            return r.status, body
    except (OSError, http.client.HTTPException) as e:
        return None, f"{type(e).__name__}: {e}"
    finally:
        if connection is None:
            c.close()


def answered(backend):
    """Translation requests a backend's own log says it answered 200."""
    return len(backend.matching("POST /v1/translate 200 "))


def load(nginx, pairs, clients, requests, during=None):
    """`clients` threads each send `requests` requests of 1-8 test lines
    through nginx, keeping their connection to nginx; `during` runs once a
    third of them are answered. Returns the wrong answers (why each)."""
    wrong, done = [], []
    third = threading.Event()

    def client(seed):
        rng = random.Random(seed)
        c = nginx.connect()
        for _ in range(requests):
            chosen = rng.sample(pairs, rng.randint(1, 8))
            status, got = translate(nginx, [en for en, _ in chosen], c)
            want = [fr for _, fr in chosen]
            if status != 200 or got != want:
                wrong.append(f"{status}: {str(got)[:200]}")
                c.close()
                c = nginx.connect()
            done.append(1)
            if len(done) >= clients * requests // 3:
                third.set()
        c.close()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    if during:
        third.wait(120 * SLOW)
        during()
    for t in threads:
        t.join()
    return wrong


def upstreams(nginx, requests):
    """nginx's access log, once it holds `requests` lines (it writes a line
    as a request ends, which may be just after its client has the answer):
    for each request, its status and the backends it went to, in order
    ("127.0.0.1:PORT"; more than one when nginx retried it)."""
    deadline = time.monotonic() + 10 * SLOW
    while True:
        lines = nginx.log("access.log").splitlines()
        if len(lines) >= requests or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    return [(int(line.split("|")[0]), line.split("|")[1].split(", ")) for line in lines]


def backends():
    return [ted_test.Server([MODEL], *BACKEND_OPTIONS) for _ in range(2)]


def test_spread(pairs):
    servers = backends()
    nginx = Nginx([s.port for s in servers])
    try:
        wrong = load(nginx, pairs, clients=4, requests=10)
        deadline = time.monotonic() + 10 * SLOW  # a backend logs a request once it is sent
        while sum(answered(s) for s in servers) < 40 and time.monotonic() < deadline:
            time.sleep(0.05)
        counts = [answered(s) for s in servers]
        check("nginx/spread", not wrong and sum(counts) == 40 and min(counts) > 0,
              f"answers per backend {counts} (of 40); wrong: {wrong[:3]}")
        test_stream(nginx, pairs)
        test_stream_left(nginx, servers)
        test_body_limit(nginx)
    finally:
        nginx.stop()
        for s in servers:
            s.stop()


def test_stream(nginx, pairs):
    lines = [en for en, _ in pairs[:3]]
    c = nginx.connect()
    c.request("POST", "/v1/translate", json.dumps({"text": lines, "stream": True}),
              {"Content-Type": "application/json"})
    r = c.getresponse()
    events = [json.loads(line[6:]) for line in r.read().splitlines()
              if line.startswith(b"data: ")]
    c.close()
    want = [fr for _, fr in pairs[:3]]
    texts = ["".join(e["text"] for e in events[:-1] if e.get("index") == i) for i in range(3)]
    check("nginx/stream", r.status == 200 and r.getheader("Content-Type") == "text/event-stream"
          and len(events) > 1 and events[-1] == {"translations": want} and texts == want,
          f"{r.status} {r.getheader('Content-Type')}: {events[-2:]}")


def test_stream_left(nginx, servers):
    """A stream of 1024 sampled sentences (seconds of work) through nginx:
    its first events come while its sentences still wait (nginx does not
    hold them back), and once the client closes, nginx closes its connection
    to the backend, which drops the sentences (GET /v1/stats)."""
    request = {"text": ["the black cat eats the small bird ."] * 1024, "sample": True,
               "temperature": 5, "max_length": 200, "seed": 5, "stream": True}
    c = nginx.connect()
    c.request("POST", "/v1/translate", json.dumps(request), {"Content-Type": "application/json"})
    r = c.getresponse()
    first = [r.readline() for _ in range(3)]
    waiting = sum(s.call("GET", "/v1/stats")[2]["models"][0]["waiting"] for s in servers)
    c.sock.close()
    c.close()
    check("nginx/stream-incremental", r.status == 200 and first[0] == b"event: token\n" and
          waiting > 0, f"{r.status} {first}: {waiting} sentences waiting at the first event")
    deadline = time.monotonic() + 20 * SLOW
    while time.monotonic() < deadline:
        counts = [s.call("GET", "/v1/stats")[2]["models"][0] for s in servers]
        if all(c["sentences"] == 0 for c in counts):
            break
        time.sleep(0.05)
    dropped = sum(c["dropped"] for c in counts)
    check("nginx/stream-left", dropped > 0 and all(c["sentences"] == 0 for c in counts),
          f"after the client left: {counts}")


def test_body_limit(nginx):
    body = json.dumps({"text": ["the cat ."] * 120000})  # 1.3 MB
    c = nginx.connect()
    try:
        c.request("POST", "/v1/translate", body, {"Content-Type": "application/json"})
        status = c.getresponse().status
    except (OSError, http.client.HTTPException) as e:
        status = f"{type(e).__name__}: {e}"
    c.close()
    check("nginx/body-limit", status == 413, f"a body of {len(body)} bytes got {status}")


def test_failover(pairs, name, sig):
    """8 clients x 12 requests; one backend gets `sig` a third of the way."""
    servers = backends()
    nginx = Nginx([s.port for s in servers])
    victim, other = servers
    try:
        wrong = load(nginx, pairs, clients=8, requests=12,
                     during=lambda: victim.proc.send_signal(sig))
        try:  # a drain ends by itself; a second SIGTERM (stop) would cut it
            status = victim.proc.wait(60 * SLOW)
        except subprocess.TimeoutExpired:
            status = "still running"
        victim.stop()
        log = upstreams(nginx, 96)
        check(f"nginx/{name}/none-lost", not wrong and len(log) == 96,
              f"{len(wrong)} of 96 requests failed: {wrong[:3]}; nginx logged {len(log)}")
        # which backend answered each request, as nginx saw it (a request the
        # victim answered just before SIGKILL may miss from its own log)
        ports = [f"127.0.0.1:{s.port}" for s in servers]
        counts = [sum(1 for status, went in log if status == 200 and went[-1] == p)
                  for p in ports]
        check(f"nginx/{name}/both-answered", min(counts) > 0 and sum(counts) == 96,
              f"answers per backend {counts}")
        again = sum(1 for _, went in log if len(went) > 1 and went[0] == ports[0])
        check(f"nginx/{name}/retried", again > 0,
              f"no request was sent to the other backend after the victim failed it: {log[-5:]}")
        if sig == signal.SIGTERM:
            check(f"nginx/{name}/drained", status == 0 and victim.matching(
                "SIGTERM: answering the"), f"exit status {status}: {victim.last_words()}")
        else:
            check(f"nginx/{name}/killed", status == -signal.SIGKILL, f"exit status {status}")
    finally:
        nginx.stop()
        for s in servers:
            s.stop()


def main():
    if not shutil.which("nginx"):
        fail("nginx", "not installed (scripts/install-deps.sh --test installs it)")
        return 1
    sources = open(os.path.join(MODEL, "test.en"), encoding="utf-8").read().splitlines()[:64]
    targets = ted_output(["translate", "-m", MODEL], "\n".join(sources) + "\n").splitlines()
    pairs = list(zip(sources, targets))
    test_spread(pairs)
    test_failover(pairs, "kill", signal.SIGKILL)
    test_failover(pairs, "drain", signal.SIGTERM)
    reports = [line for s in ted_test.Server.started for line in s.sanitizer_reports()]
    check("nginx/no-sanitizer-report", not reports, reports[:5])
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())
