#!/bin/sh
# SIGINT stops `ted translate` between decoding steps: a beam search over
# 2 500 sentences of models/en-fr (seconds of work) interrupted 0.5 s in
# exits within 2 s of the signal with status 130 (an exit, not death by
# the signal) and one line on standard error saying so; with -o FILE, FILE
# keeps what it held and no temporary file is left; waiting on an input
# that never comes, it exits so too. Each check prints "ok NAME" or
# "FAIL NAME: why".
TED=${TED:-build/ted}
PYTHON=${PYTHON:-/usr/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. tests/lib/checks.sh

"$PYTHON" - "$TED" models/en-fr "$work" <<'PY'
import os, signal, subprocess, sys, time

ted, model, work = sys.argv[1:4]
with open(os.path.join(model, "test.en"), encoding="utf-8") as f:
    lines = f.read().split("\n")[:-1]
source = os.path.join(work, "in.txt")
with open(source, "w", encoding="utf-8") as f:
    f.write("\n".join((lines * 2)[:2500]) + "\n")


def default_sigint():
    # a child of a shell's background job starts with SIGINT ignored
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt(name, args, stdin=subprocess.DEVNULL, after=0.5):
    """Runs ted with `args`, sends SIGINT `after` seconds in; returns the
    exit status, standard output and error, or None after a FAIL line."""
    p = subprocess.Popen([ted] + args, stdin=stdin, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, preexec_fn=default_sigint)
    time.sleep(after)
    if p.poll() is not None:
        print("FAIL %s: ted ended before the signal (exit %d): %s"
              % (name, p.returncode, p.stderr.read().decode()[:300]))
        return None
    sent = time.monotonic()
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        print("FAIL %s: still running 20 s after SIGINT" % name)
        return None
    waited = time.monotonic() - sent
    err = err.decode("utf-8", "replace")
    problems = []
    if p.returncode != 130:
        problems.append("exit %d, not 130" % p.returncode)
    if waited > 2.0:
        problems.append("exited %.1f s after SIGINT" % waited)
    if err.count("\n") != 1 or "interrupted (SIGINT)" not in err:
        problems.append("standard error %r" % err[:300])
    if out and not out.endswith(b"\n"):
        problems.append("a line cut short on standard output")
    if problems:
        print("FAIL %s: %s" % (name, "; ".join(problems)))
        return None
    print("ok %s" % name)
    return out


interrupt("translate-sigint-beam", ["translate", "-m", model, "--beam", "4", "-i", source])

target = os.path.join(work, "out.txt")
with open(target, "w") as f:
    f.write("what was there\n")
if interrupt("translate-sigint-output-file",
             ["translate", "-m", model, "--beam", "4", "-i", source, "-o", target]) is not None:
    with open(target) as f:
        kept = f.read()
    left = [n for n in os.listdir(work) if n.startswith("out.txt.")]
    if kept == "what was there\n" and not left:
        print("ok translate-sigint-output-file-kept")
    else:
        print("FAIL translate-sigint-output-file-kept: %r, temporary files %s" % (kept, left))

# standard input open, no line coming: the read is interrupted
read_end, write_end = os.pipe()
interrupt("translate-sigint-reading", ["translate", "-m", model], stdin=read_end, after=0.3)
os.close(read_end)
os.close(write_end)
PY
