#!/bin/sh
# ted serve under valgrind memcheck: greedy, sampled, beam search and
# refused requests, LibreTranslate's endpoints, a streamed one, clients gone
# mid-stream and mid-request, then SIGTERM; no memcheck
# error (invalid access, uninitialised value, bad free), no definitely lost
# block, exit status 0. As tests/valgrind.sh, with the AVX2 kernels
# (memcheck cannot run AVX-512). Prints "ok NAME" or "FAIL NAME: why";
# exits 1 when a check failed.
TED=${TED:-build/ted}
TED_CPU=${TED_CPU:-avx2}
export TED_CPU
PYTHON=${PYTHON:-/usr/bin/python3}
VALGRIND_ERROR=99
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. tests/lib/checks.sh

if ! command -v valgrind >/dev/null; then
    echo "FAIL serve-valgrind: not installed (scripts/install-deps.sh installs it)"
    exit 1
fi

# The server under memcheck and its checks (checked: the exit status says
# whether all passed). --fair-sched: memcheck runs one thread at a time, and
# its default lock may let the batching thread starve the HTTP threads.
serve_checks() {
    valgrind --quiet --fair-sched=yes --leak-check=full --errors-for-leak-kinds=definite \
        --error-exitcode=$VALGRIND_ERROR --log-file="$work/valgrind.log" \
        "$TED" serve -m models/toy-en-fr --port 0 --max-body 4096 2>"$work/err" &
    server=$!
    port=""
    for _ in $(seq 600); do
        port=$(sed -n 's/^ted serve: listening on http:\/\/127.0.0.1:\([0-9]*\)$/\1/p' "$work/err")
        [ -n "$port" ] && break
        kill -0 $server 2>/dev/null || break
        sleep 0.1
    done
    if [ -z "$port" ]; then
        echo "FAIL serve-valgrind-start: $(head -c 500 "$work/err")"
        kill -9 $server 2>/dev/null
        exit 1
    fi

    "$PYTHON" - "$port" "$work/err" <<'PYTHON' || echo "FAIL serve-valgrind-client: exit status $?"
import http.client, json, socket, sys, time
port, server_log = int(sys.argv[1]), sys.argv[2]

def with_server_log(kind, value, trace):  # a client's error comes with the server's last lines
    sys.__excepthook__(kind, value, trace)
    with open(server_log, encoding="utf-8", errors="replace") as f:
        print("the server's log ends:", *f.read().splitlines()[-5:], sep="\n", file=sys.stderr)
sys.excepthook = with_server_log

def call(method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    c.request(method, path, body=json.dumps(body) if isinstance(body, dict) else body,
              headers={"Content-Type": "application/json"} if method == "POST" else {})
    r = c.getresponse()
    data = json.loads(r.read())
    c.close()
    return r.status, data

cases = [
    ("greedy", {"text": ["the black cat eats the small bird .", ""]}, 200,
     {"translations": ["le chat noir mange le petit oiseau .", ""]}),
    ("sampling", {"text": ["the dog sleeps ."], "sample": True, "seed": 7, "n_best": 3,
                  "scores": True}, 200, None),
    ("beam", {"text": ["the dog sleeps .", "the old queen sings ."], "beam": 4, "n_best": 2},
     200, None),
    ("malformed", b'{"text": [', 400, None),
    ("unknown-field", {"text": ["a"], "bogus": 1}, 400, None),
    ("bad-value", {"text": ["a"], "beam": 0}, 400, None),
    ("too-large", {"text": ["the cat sleeps ."] * 400}, 413, None),
]
for name, body, status, want in cases:
    got, data = call("POST", "/v1/translate", body)
    right = got == status and (want is None or data == want)
    print(f"ok serve-valgrind-{name}" if right else f"FAIL serve-valgrind-{name}: {got} {data}")
def stream(body, events=None):
    """A streamed answer's status, lines and events: all of them, or the
    first `events` lines, after which the client leaves."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    c.request("POST", "/v1/translate", json.dumps(dict(body, stream=True)),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    lines = [r.readline() for _ in range(events)] if events else r.read().splitlines()
    c.sock.close()  # gone mid-stream when `events` is given
    c.close()
    return r.status, lines, [json.loads(l[6:]) for l in lines if l.startswith(b"data: ")]
def log_lines():  # what the server has logged so far, but for GET /v1/stats
    with open(server_log, encoding="utf-8", errors="replace") as f:
        return [line for line in f.read().splitlines() if "GET /v1/stats" not in line]
status, lines, data = stream({"text": ["the black cat eats the small bird .", ""]})
right = status == 200 and data and \
    data[-1] == {"translations": ["le chat noir mange le petit oiseau .", ""]} and \
    "".join(d["text"] for d in data[:-1]) == "le chat noir mange le petit oiseau ."
print("ok serve-valgrind-stream" if right else f"FAIL serve-valgrind-stream: {status} {lines[:3]}")
# A client that reads the first event of 64 sampled sentences (32 decode, 32 wait:
# --max-batch is 32) and leaves: the server sees it gone ("cut"), the rows of its
# sentences leave the batch and the waiting ones are dropped (GET /v1/stats).
status, lines, data = stream({"text": ["the cat sleeps ."] * 64, "sample": True, "seed": 5,
                              "temperature": 5, "max_length": 100}, events=2)
print("ok serve-valgrind-stream-left" if status == 200 and data else
      f"FAIL serve-valgrind-stream-left: {status} {lines}; the server's log: {log_lines()[-3:]}")
def left_and_freed():  # the counts of GET /v1/stats, and whether the log says "cut"
    got, data = call("GET", "/v1/stats")
    counts = data["models"][0] if got == 200 else {}
    cut = any("POST /v1/translate cut 64 sentences" in line for line in log_lines())
    return counts, cut and counts.get("dropped", 0) > 0 and \
        (counts.get("rows"), counts.get("waiting"), counts.get("sentences")) == (0, 0, 0)
deadline = time.monotonic() + 300
counts, freed = left_and_freed()
while not freed and time.monotonic() < deadline:
    time.sleep(0.2)
    counts, freed = left_and_freed()
print("ok serve-valgrind-stream-left-freed" if freed else
      f"FAIL serve-valgrind-stream-left-freed: {counts}; the server's log: {log_lines()[-3:]}")
with socket.create_connection(("127.0.0.1", port)) as s:  # gone mid-request
    s.sendall(b"POST /v1/translate HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: 50\r\n"
              b"Content-Type: application/json\r\n\r\n{\"te" % port)
def raw(data):  # what ted answers on a fresh connection, until it closes it
    with socket.create_connection(("127.0.0.1", port), timeout=300) as s:
        s.sendall(data.replace(b"HOST", b"127.0.0.1:%d" % port))
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
        return answer
refusals = [  # what ted refuses from the headers (serve/guard.h), then closes
    ("two-content-lengths", b"POST /v1/translate HTTP/1.1\r\nHost: HOST\r\nContent-Type: "
     b"application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}", b" 400 "),
    ("not-json", b"POST /v1/translate HTTP/1.1\r\nHost: HOST\r\nContent-Type: text/plain\r\n"
     b"Content-Length: 2\r\n\r\n{}", b" 415 "),
    ("foreign-host", b"GET /v1/models HTTP/1.1\r\nHost: evil.example\r\n\r\n", b" 421 "),
    ("explore-nul", b"POST /v1/explore HTTP/1.1\r\nHost: HOST\r\nContent-Type: application/json"
     b"\r\nConnection: close\r\nContent-Length: 21\r\n\r\n{\"source\": \"a\\u0000\"}", b" 400 "),
]
for name, data, status in refusals:
    answer = raw(data)
    print(f"ok serve-valgrind-{name}" if status in answer.split(b"\r\n")[0]
          else f"FAIL serve-valgrind-{name}: {answer[:200]!r}")
libre = [  # LibreTranslate's API: JSON and form fields, paragraphs, HTML, alternatives, detection
    ("libre-json", "/translate", {"q": ["the dog sleeps .", "the cat .\nthe queen sings ."],
                                  "source": "auto", "target": "fr", "alternatives": 2}, 200),
    ("libre-html", "/translate", {"q": "<p>the dog sleeps. <b>the cat</b> sings.</p><!-- x -->",
                                  "source": "en", "target": "fr", "format": "html",
                                  "alternatives": 1}, 200),
    ("libre-unknown", "/translate", {"q": "a", "source": "xx", "target": "fr"}, 400),
    ("libre-detect", "/detect", {"q": "the black cat eats the small bird ."}, 200),
]
for name, path, body, status in libre:
    got, data = call("POST", path, body)
    print(f"ok serve-valgrind-{name}" if got == status else f"FAIL serve-valgrind-{name}: {got} {data}")
answer = raw(b"POST /translate HTTP/1.1\r\nHost: HOST\r\nContent-Type: application/x-www-form-"
             b"urlencoded\r\nConnection: close\r\nContent-Length: 42\r\n\r\n"
             b"q=the+dog+sleeps+.&source=en&target=fr&x=1")
print("ok serve-valgrind-libre-form" if b" 200 " in answer.split(b"\r\n")[0]
      else f"FAIL serve-valgrind-libre-form: {answer[:200]!r}")
for path in ("/languages", "/frontend/settings"):
    got, data = call("GET", path)
    name = path.strip("/").replace("/", "-")
    print(f"ok serve-valgrind-{name}" if got == 200 else f"FAIL serve-valgrind-{name}: {got} {data}")
got, data = call("GET", "/v1/models")
print("ok serve-valgrind-models" if got == 200 and data["models"][0]["name"] == "toy-en-fr"
      else f"FAIL serve-valgrind-models: {got} {data}")
PYTHON

    kill -TERM $server
    wait $server
    status=$?
    if [ "$status" -eq $VALGRIND_ERROR ] || grep -qE 'definitely lost: [1-9]|ERROR SUMMARY: [1-9]|Invalid|uninitialised' "$work/valgrind.log"; then
        echo "FAIL serve-valgrind: memcheck: $(grep -m 8 -vE '^==[0-9]+== *$' "$work/valgrind.log" | head -c 1500)"
    elif [ "$status" -ne 0 ]; then
        echo "FAIL serve-valgrind: exit status $status: $(tail -n 3 "$work/err")"
    else
        echo "ok serve-valgrind"
    fi
}

checked serve_checks
