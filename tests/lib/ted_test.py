"""The helpers every Python test script shares (tests/parity, tests/serve,
tests/browser), on Python's standard library alone (parse_logits imports
numpy when called).

Each check prints one line, which tests/run-all.sh counts:
    ok NAME[: detail]      the check held
    FAIL NAME: why         it did not
Any other line ("# ...", "info ...", "skip NAME: why") is not counted, so a
measurement or a check this machine cannot make is printed that way.

A script finds this module with
    sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
and ends with `sys.exit(1 if failures() else 0)`.
"""
import contextlib
import http.client
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TED = os.environ.get("TED", os.path.join("build", "ted"))
SAN = os.environ.get("SAN") == "1"   # an AddressSanitizer build (make SAN=1)
SLOW = 10 if SAN else 1               # how much slower it runs
TIMEOUT = 120                         # seconds a command run by run() may take


# ---- the lines run-all.sh counts --------------------------------------------------

_failures = 0


def ok(name, detail=""):
    print(f"ok {name}" + (f": {detail}" if detail else ""), flush=True)


def fail(name, why):
    global _failures
    _failures += 1
    print(f"FAIL {name}: {why}", flush=True)


def check(name, condition, why):
    """ok when condition holds, else FAIL with why."""
    if condition:
        ok(name)
    else:
        fail(name, why)


def report(name, problem=None, detail=""):
    """ok (with detail) when problem is None, else FAIL with problem."""
    if problem is None:
        ok(name, detail)
    else:
        fail(name, problem)


def failures():
    """How many FAIL lines were printed so far."""
    return _failures


def reference_transformers(tokenizer="sentencepiece"):
    """transformers, quiet, for a test that compares ted with it, after the
    tokenizer package its models need (`tokenizer`); torch on one thread.
    None, after a FAIL "setup" line naming what is not installed."""
    import torch
    torch.set_num_threads(1)
    try:
        importlib.import_module(tokenizer)
        import transformers
    except ImportError as e:
        debian = "; python3-sentencepiece" if tokenizer == "sentencepiece" else ""
        report("setup", f"{e.name} is not installed (make venv{debian})")
        return None
    transformers.logging.set_verbosity_error()
    return transformers


# ---- sanitizer reports --------------------------------------------------------------

def _patterns(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


# What the sanitizer runtimes print (tests/lib/sanitizer-patterns.txt, one
# fixed string a line; tests/lib/checks.sh greps the same file).
SANITIZER_PATTERNS = _patterns(os.path.join(HERE, "sanitizer-patterns.txt"))


def sanitizer_reports(lines):
    """The lines that hold a sanitizer's report."""
    return [line for line in lines if any(p in line for p in SANITIZER_PATTERNS)]


# ---- running programs ------------------------------------------------------------

def run(args, stdin=None, timeout=TIMEOUT, binary=False):
    """(exit status, stdout, stderr) of a command. stdin is text (written as
    UTF-8) or bytes; stdout is bytes when binary, else text decoded as UTF-8
    (an invalid byte becomes U+FFFD); stderr is text. The status is None
    when the command could not run or timed out, with why in stderr."""
    if isinstance(stdin, str):
        stdin = stdin.encode("utf-8")
    try:
        p = subprocess.run(args, input=stdin, capture_output=True, timeout=timeout,
                           stdin=None if stdin is not None else subprocess.DEVNULL)
    except OSError as e:
        return None, b"" if binary else "", f"{args[0]}: {e.strerror}"
    except subprocess.TimeoutExpired:
        return None, b"" if binary else "", f"timed out after {timeout} s"
    out = p.stdout if binary else p.stdout.decode("utf-8", "replace")
    return p.returncode, out, p.stderr.decode("utf-8", "replace")


def quote(args):
    """A command as a shell would read it, for messages."""
    return " ".join(a if a and all(c.isalnum() or c in "-_./=" for c in a) else repr(a)
                    for a in args)


def ted_problem(args, stdin=None, timeout=TIMEOUT):
    """(stdout, None) when `ted ARGS` exits 0, else (None, why)."""
    status, out, err = run([TED] + args, stdin, timeout)
    if status != 0:
        last = err.strip().splitlines()[-1] if err.strip() else ""
        return None, f"`{quote([TED] + args)}` exited {status}: {last}"
    return out, None


def ted_output(args, stdin=None, timeout=TIMEOUT):
    """The standard output of `ted ARGS`; RuntimeError (why) unless it exits 0."""
    out, problem = ted_problem(args, stdin, timeout)
    if problem:
        raise RuntimeError(problem)
    return out


# ted serve's /v1/translate JSON fields and the ted translate options that
# ask the same
TRANSLATE_FLAGS = {"beam": "--beam", "temperature": "--temperature", "top_k": "--top-k",
                   "top_p": "--top-p", "seed": "--seed", "n_best": "--n-best",
                   "max_length": "--max-length", "length_penalty": "--length-penalty",
                   "length_normalization": "--length-normalization",
                   "early_stopping": "--early-stopping", "source_lang": "--source-lang",
                   "target_lang": "--target-lang", "repetition_penalty": "--repetition-penalty",
                   "no_repeat_ngram_size": "--no-repeat-ngram-size",
                   "min_length": "--min-length", "min_new_tokens": "--min-new-tokens",
                   "encoder_no_repeat_ngram_size": "--encoder-no-repeat-ngram-size"}


def translate_answer(model, request, timeout=TIMEOUT, command="translate"):
    """What `ted translate` (`command`) prints for a /v1/translate request,
    as ted serve's JSON would hold it."""
    args = [command, "-m", model]
    for key, value in request.items():
        if key in TRANSLATE_FLAGS:
            value = str(value).lower() if isinstance(value, bool) else str(value)
            args += [TRANSLATE_FLAGS[key], value]
        elif key in ("sample", "scores") and value:
            args.append("--" + key)
        elif key == "bad_words_ids":
            args += [a for ids in value for a in ("--bad-words-ids", ",".join(map(str, ids)))]
    texts = request["text"]
    out = ted_output(args, "".join(t + "\n" for t in texts), timeout).splitlines()
    if not (request.get("scores") or request.get("n_best", 1) > 1):
        return {"translations": out}
    lists = [[] for _ in texts]
    for line in out:
        fields = line.split(" ||| ")
        hypothesis = {"text": fields[1], "score": float(fields[2]),
                      "log_prob": float(fields[3])}
        if request.get("scores"):
            hypothesis["token_log_probs"] = [float(x) for x in fields[4].split()] \
                if len(fields) > 4 else []
        lists[int(fields[0])].append(hypothesis)
    return {"translations": lists}


def answer_difference(got, want, tolerance, relative=0.0):
    """None when ted serve's answer `got` agrees with translate_answer's
    `want` (texts exactly, numbers within tolerance + relative x their
    size), else what differs."""
    if not isinstance(got, dict) or set(got) != {"translations"}:
        return f"not a translations object: {str(got)[:200]}"
    a, b = got["translations"], want["translations"]
    if len(a) != len(b):
        return f"{len(a)} translations, expected {len(b)}"
    for i, (x, y) in enumerate(zip(a, b)):
        if isinstance(y, str):
            if x != y:
                return f"text {i}: {x!r}, ted translate {y!r}"
            continue
        if not isinstance(x, list) or len(x) != len(y):
            return f"text {i}: {str(x)[:200]}, ted translate {y}"
        for k, (h, e) in enumerate(zip(x, y)):
            if set(h) != set(e) or h["text"] != e["text"]:
                return f"text {i} hypothesis {k}: {h}, ted translate {e}"
            numbers = [(h["score"], e["score"]), (h["log_prob"], e["log_prob"])]
            numbers += list(zip(h.get("token_log_probs", []), e.get("token_log_probs", [])))
            if len(h.get("token_log_probs", [])) != len(e.get("token_log_probs", [])) or \
                    any(abs(u - v) > tolerance + relative * abs(v) for u, v in numbers):
                return f"text {i} hypothesis {k}: scores {h}, ted translate {e}"
    return None


def ted_lines(args, lines):
    """ted's output lines for input `lines` (UTF-8, split on "\\n" only: a
    line may hold U+2028 or a form feed), or (None, why)."""
    status, out, err = run([TED] + args, "".join(line + "\n" for line in lines))
    if status != 0:
        return None, f"`{quote([TED] + args)}` exited {status}: " + (
            err.strip().splitlines() or [""])[-1]
    out = out.split("\n")
    if len(out) != len(lines) + 1 or out[-1]:
        return None, f"`{quote([TED] + args)}`: {len(out) - 1} lines for {len(lines)}"
    return out[:-1], None


def compare_lines(name, got, want, lines, what, minimum=1.0, note="", among=None):
    """Reports how many of `got` equal the reference's `want` (of the
    indices `among`, or all); fails below `minimum`."""
    among = range(len(want)) if among is None else among
    same = sum(got[i] == want[i] for i in among)
    detail = f"{same}/{len(among)} {what} identical{note}"
    if len(among) > 0 and same >= minimum * len(among):
        return report(name, detail=detail)
    first = next((i for i in among if got[i] != want[i]), None)
    where = "" if first is None else (f"; first at {lines[first]!r}: ted {got[first]!r}, "
                                      f"transformers {want[first]!r}")
    report(name, detail + where)


def edit_json(name, **changes):
    """An edit of a model directory: the JSON file `name` with `changes`."""
    def edit(model_dir):
        path = os.path.join(model_dir, name)
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
        value.update(changes)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(value, f)
    return edit


def parse_logits(text, rows=None, cols=None):
    """`ted logits` output as a float64 array; ValueError when it is not a
    table of numbers, or not rows x cols where those are given."""
    import numpy as np

    lines = text.splitlines()
    if rows is not None and len(lines) != rows:
        raise ValueError(f"{len(lines)} lines, expected {rows}")
    table = []
    for i, line in enumerate(lines):
        row = [float(x) for x in line.split()]
        want = cols if cols is not None else len(table[0]) if table else len(row)
        if len(row) != want:
            raise ValueError(f"line {i + 1} has {len(row)} values, expected {want}")
        table.append(row)
    return np.array(table, dtype=np.float64)


def ted_logits(model_dir, source, target):
    """`ted logits` of a sentence pair as a float64 array; ValueError (why)
    when ted fails or writes no table of numbers."""
    out, problem = ted_problem(["logits", "-m", model_dir, "--source", source,
                                "--target", target])
    if problem:
        raise ValueError(problem)
    return parse_logits(out)


def only_groups(description, groups):
    """The groups of checks a script runs: its --only GROUP[,GROUP...], or all."""
    import argparse
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--only", type=lambda v: v.split(","), default=groups,
                        metavar="GROUP[,GROUP...]",
                        help=f"run these groups of checks only: {', '.join(groups)}")
    only = parser.parse_args().only
    unknown = sorted(set(only) - set(groups))
    if unknown:
        parser.error(f"--only: unknown group {unknown[0]} (groups: {', '.join(groups)})")
    return only


@contextlib.contextmanager
def scratch_directory(prefix):
    """A temporary directory for the block, removed after it unless
    TED_PARITY_KEEP is set (then its path is printed on stderr)."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        yield tmp
    finally:
        if os.environ.get("TED_PARITY_KEEP"):
            print(f"kept {tmp}", file=sys.stderr)
        else:
            if _failures:
                print("(TED_PARITY_KEEP=1 keeps the temporary directories)", file=sys.stderr)
            shutil.rmtree(tmp, ignore_errors=True)


# ---- ted serve ----------------------------------------------------------------------

def metric_counts(server):
    """The counters of the server's /metrics: ted_sentences_total by outcome
    ({"translated": n, "failed": n, "dropped": n}) and, as "abandoned",
    ted_requests_abandoned_total."""
    status, _, body = server.call("GET", "/metrics")
    counts = {}
    for line in (body.decode() if isinstance(body, bytes) else "").splitlines():
        if line.startswith("ted_sentences_total{"):
            outcome = line.split('outcome="', 1)[1].split('"', 1)[0]
            counts[outcome] = int(float(line.rsplit(" ", 1)[1]))
        elif line.startswith("ted_requests_abandoned_total{"):
            counts["abandoned"] = int(float(line.rsplit(" ", 1)[1]))
    return counts


class Server:
    """`ted serve -m MODEL... --port 0 OPTION...` on a free loopback port,
    which it names on the first line of its standard error; that stream is
    kept line by line (`lines`). Every server started is in Server.started,
    for a last look at their sanitizer reports."""

    started = []

    def __init__(self, models, *options, timeout=120 * SLOW):
        self.timeout = timeout  # seconds one exchange may take
        args = [TED, "serve"]
        for model in models:
            args += ["-m", model]
        self.proc = subprocess.Popen(args + ["--port", "0", *options],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        Server.started.append(self)
        self.lines = []
        first = threading.Event()

        def read():
            for raw in self.proc.stderr:
                self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
                first.set()
            first.set()

        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()
        if not first.wait(30 * SLOW) or not self.lines or \
                "listening on http://" not in self.lines[0]:
            self.proc.kill()
            raise RuntimeError(f"ted serve did not start: {self.lines[:3]}")
        self.port = int(self.lines[0].rsplit(":", 1)[1])
        self.base = f"http://127.0.0.1:{self.port}"

    def connect(self, timeout=None):
        return http.client.HTTPConnection("127.0.0.1", self.port,
                                          timeout=timeout or self.timeout)

    def call(self, method, path, body=None, headers=None, connection=None):
        """(status, headers, the body parsed as JSON, or its bytes when it is
        not JSON); a dict or list body is sent as JSON. A POST says
        Content-Type: application/json unless `headers` name another."""
        own = connection is None
        c = self.connect() if own else connection
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body)
            headers = dict(headers or {})
            if method == "POST":
                headers.setdefault("Content-Type", "application/json")
            c.request(method, path, body=body, headers=headers)
            r = c.getresponse()
            raw = r.read()
            try:
                data = json.loads(raw)
            except ValueError:
                data = raw
            return r.status, dict(r.getheaders()), data
        finally:
            if own:
                c.close()

    def get(self, path):
        """(status, headers, body bytes) of a GET."""
        c = self.connect()
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            c.close()

    def translate(self, request, connection=None):
        return self.call("POST", "/v1/translate", request, connection=connection)

    def stop(self, sig=signal.SIGTERM, timeout=60 * SLOW):
        """Sends sig and waits: the exit status, or "still running" (then it
        is killed). The reader is joined, so a report written at exit is in
        `lines`."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            status = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            status = "still running"
        self.reader.join(10)
        return status

    def matching(self, text):
        """The lines of standard error so far that contain text."""
        return [line for line in self.lines if text in line]

    def sanitizer_reports(self):
        return sanitizer_reports(self.lines)

    def last_words(self):
        """What explains how the server ended: a sanitizer's report (its
        first line and the frames after it), else its last three lines."""
        for i, line in enumerate(self.lines):
            if any(p in line for p in SANITIZER_PATTERNS):
                return self.lines[i:i + 16]
        return self.lines[-3:]


# ---- multilingual test models ------------------------------------------------------

TINY_MODEL = os.path.join(ROOT, "tests", "data", "tiny-model")


def tiny_multilingual_model(into, layout="forced"):
    """A copy of tests/data/tiny-model in directory `into` whose config names
    languages by tokens of its vocabularies (docs/model-format.md#languages),
    as tests/cli/languages.sh builds them. layout "forced": NLLB's, the
    target codes t8 and t9 forced as the first target token; "source":
    multi-target Marian's, ">>s6<<" or ">>s7<<" (given as s6, s7) at the
    start of the source, which names its language en. Returns `into`."""
    os.makedirs(into, exist_ok=True)
    shutil.copy(os.path.join(TINY_MODEL, "model.safetensors"), into)
    shutil.copy(os.path.join(TINY_MODEL, "vocab.tgt"), into)
    if layout == "forced":
        lines = "  languages: [t8, t9]\n  target_language_token: forced\n"
        renamed = {}
    else:
        lines = ('  languages: [">>s6<<", ">>s7<<"]\n  target_language_token: source\n'
                 "  source_lang: en\n")
        renamed = {"s6": ">>s6<<", "s7": ">>s7<<"}
    with open(os.path.join(TINY_MODEL, "vocab.src")) as f:
        tokens = [renamed.get(t, t) for t in f.read().split("\n")]
    with open(os.path.join(into, "vocab.src"), "w") as f:
        f.write("\n".join(tokens))
    config = []
    with open(os.path.join(TINY_MODEL, "config.yaml")) as f:
        for line in f:
            if layout != "forced" and line.startswith("  source_bos:"):
                line = "  source_bos: false\n"
            config.append(line)
            if line.startswith("  source_eos:"):
                config.append(lines)
    with open(os.path.join(into, "config.yaml"), "w") as f:
        f.write("".join(config))
    return into
