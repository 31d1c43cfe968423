#!/usr/bin/python3
"""deploy/systemd/ted-serve@.service and its environment file.

    TED=build/ted /usr/bin/python3 tests/deploy/test_systemd.py

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  systemd/verify      systemd-analyze verify has nothing to say of the unit
                      (skipped without systemd-analyze)
  systemd/exposure    systemd-analyze security rates the unit's exposure 2.0
                      or below ("OK" or better; 10 is a service without
                      hardening)
  systemd/exec-start  the unit's ExecStart, with %i a free port and the
                      variables of ted-serve.env (the model: the toy one),
                      starts ted serve on that port; it answers /healthz with
                      Host: ted (nginx's Host) and, on SIGTERM, exits 0
  systemd/limits      the limits ExecStart gives ted serve are those
                      deploy/nginx/ted.conf matches (1m body, 30 s, 4 s < 5 s)
"""
import http.client
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
from ted_test import SLOW, TED, check, failures, run, scratch_directory  # noqa: E402

UNIT = os.path.join(ROOT, "deploy", "systemd", "ted-serve@.service")
ENV = os.path.join(ROOT, "deploy", "systemd", "ted-serve.env")
NGINX = os.path.join(ROOT, "deploy", "nginx", "ted.conf")
MODEL = os.path.join(ROOT, "models", "toy-en-fr")


def exec_start():
    """ExecStart's words, its continuation lines joined."""
    text = open(UNIT, encoding="utf-8").read().replace("\\\n", " ")
    line = next(line for line in text.splitlines() if line.startswith("ExecStart="))
    return shlex.split(line[len("ExecStart="):])


def environment():
    values = {}
    for line in open(ENV, encoding="utf-8"):
        if line.strip() and not line.startswith("#"):
            key, value = line.rstrip("\n").split("=", 1)
            values[key] = value
    return values


def command(port):
    """ExecStart as systemd runs it: $VAR split into words, ${VAR} one word."""
    values = dict(environment(), TED_MODELS=f"-m {MODEL}", TED_THREADS="1")
    words = []
    for word in exec_start():
        word = word.replace("%i", str(port))
        if re.fullmatch(r"\$[A-Z_]+", word):
            words += values[word[1:]].split()
        else:
            words.append(re.sub(r"\$\{([A-Z_]+)\}", lambda m: values[m.group(1)], word))
    return [os.path.abspath(TED)] + words[1:]


def test_analyze(tmp):
    if not shutil.which("systemd-analyze"):
        print("skip systemd/verify: systemd-analyze is not installed")
        print("skip systemd/exposure: systemd-analyze is not installed")
        return
    unit = os.path.join(tmp, "ted-serve@.service")
    with open(unit, "w", encoding="utf-8") as f:  # with a binary that exists here
        f.write(open(UNIT, encoding="utf-8").read().replace("/usr/local/bin/ted",
                                                            os.path.abspath(TED)))
    instance = os.path.join(tmp, "ted-serve@8081.service")
    status, out, err = run(["systemd-analyze", "verify", instance])
    check("systemd/verify", status == 0 and not err.strip() and not out.strip(),
          f"exit {status}: {(out + err).strip()[:500]}")
    status, out, err = run(["systemd-analyze", "security", "--offline=yes", instance])
    level = re.search(r"Overall exposure level for \S+: ([0-9.]+)", out)
    check("systemd/exposure", status == 0 and level and float(level.group(1)) <= 2.0,
          f"exit {status}: {(level.group(0) if level else (out + err)[-300:])}")


def test_exec_start():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = command(port)
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    first = proc.stderr.readline().decode("utf-8", "replace").strip()
    status = None
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30 * SLOW)
        c.request("GET", "/healthz", headers={"Host": "ted"})
        status = c.getresponse().status
        c.close()
    except OSError as e:
        status = str(e)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(30 * SLOW)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = "still running"
    check("systemd/exec-start", first == f"ted serve: listening on http://127.0.0.1:{port}"
          and status == 200 and code == 0,
          f"{' '.join(args)}: {first!r}, /healthz {status}, exit {code}")


def option(args, name):
    return args[args.index(name) + 1] if name in args else None


def test_limits():
    args = exec_start()
    nginx = open(NGINX, encoding="utf-8").read()
    keepalive = re.search(r"keepalive_timeout (\d+)s;", nginx)
    agree = (option(args, "--max-body") == "1048576" and "client_max_body_size 1m;" in nginx
             and option(args, "--timeout") == "30" and "client_header_timeout 30s;" in nginx
             and "client_body_timeout 30s;" in nginx and keepalive
             and int(keepalive.group(1)) < int(option(args, "--idle-timeout") or 0)
             and option(args, "--allow-host") == "ted" and "proxy_pass http://ted;" in nginx)
    check("systemd/limits", agree, f"ExecStart {args} against {NGINX}")


def main():
    with scratch_directory("ted-systemd-") as tmp:
        test_analyze(tmp)
    test_exec_start()
    test_limits()
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())
