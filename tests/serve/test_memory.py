#!/usr/bin/python3
"""`ted serve`'s memory and admission, with the toy model (models/toy-en-fr).

    TED=build/ted /usr/bin/python3 tests/serve/test_memory.py

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  budget/*    a request whose hypotheses x max_length, summed over its texts,
              is over --max-request-tokens gets 413 with a JSON error naming
              the option, before anything is decoded (sampling n_best 1024,
              beam 848, the default and a set limit); one just under it is
              translated
  rss/*       a burst of 32 "the cat ." with max_length 5000 (each ends after
              a few tokens) keeps the server's peak RSS small, and its RSS
              comes back once the burst is answered (skipped under SAN=1:
              AddressSanitizer keeps freed memory in quarantine)
  fair/*      a short greedy sentence sent while a 1024-sample request decodes
              (at temperature 5: its samples rarely end before max_length) is
              answered in a fraction of that request's time (under a quarter;
              ~2% here, ~97% before): a sentence's samples count against
              --max-batch, and never all of it
"""
import os
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import ted_test  # noqa: E402
from ted_test import SAN, SLOW, check, failures, ok  # noqa: E402

MODEL = os.path.join(ROOT, "models", "toy-en-fr")
TIMEOUT = 300 * SLOW
DEFAULT_BUDGET = 1 << 18   # --max-request-tokens' default (serve/request.h)
MIB = 1024 * 1024


def serve(*options):
    return ted_test.Server([MODEL], *options, timeout=TIMEOUT)


def memory(server, key):
    """VmRSS or VmHWM (the peak) of the server, in bytes."""
    with open(f"/proc/{server.proc.pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def refused(name, server, request, option_named=True):
    """The request gets 413 and a JSON error that names --max-request-tokens."""
    start = time.monotonic()
    status, _, data = server.translate(request)
    took = time.monotonic() - start
    error = data.get("error", "") if isinstance(data, dict) else ""
    check(name, status == 413 and (not option_named or "--max-request-tokens" in error)
          and took < 10 * SLOW, f"{status} {str(data)[:200]} after {took:.1f} s")


def test_budget():
    server = serve()
    try:
        # 1024 x 260 = 266240 > 2^18
        refused("budget/sample-n-best-1024", server,
                {"text": ["the cat ."], "sample": True, "n_best": 1024, "max_length": 260})
        # 848 x 310 = 262880 > 2^18
        refused("budget/beam-848", server, {"text": ["the cat ."], "beam": 848, "max_length": 310})
        # 2 texts x 1024 x 128 = 262144: at the limit, not over it
        status, _, data = server.translate({"text": ["the cat .", "the dog ."], "sample": True,
                                            "n_best": 1024, "max_length": 128, "seed": 1})
        check("budget/at-the-limit", status == 200 and len(data["translations"]) == 2
              and len(data["translations"][0]) == 1024, f"{status} {str(data)[:200]}")
        refused("budget/three-texts-over", server,
                {"text": ["a", "b", "c"], "sample": True, "n_best": 1024, "max_length": 128})
        status, _, data = server.translate({"text": ["the cat ."], "max_length": 5000})
        check("budget/greedy-5000", status == 200, f"{status} {data}")
    finally:
        server.stop()
    try:
        server = serve("--max-request-tokens", "1000")
    except RuntimeError as e:
        check("budget/set-limit", False, str(e))
        return
    try:
        refused("budget/set-limit", server,
                {"text": ["the cat ."], "sample": True, "n_best": 8, "max_length": 126})
        status, _, data = server.translate({"text": ["the cat ."], "sample": True,
                                            "n_best": 8, "max_length": 125})
        check("budget/set-limit-under", status == 200, f"{status} {str(data)[:200]}")
    finally:
        server.stop()


def test_rss():
    if SAN:
        ok("rss/skipped", "AddressSanitizer keeps freed memory in quarantine")
        return
    server = serve()
    try:
        server.translate({"text": ["the cat ."]})
        before = memory(server, "VmRSS")
        answers = []

        def client():
            answers.append(server.translate({"text": ["the cat ."], "max_length": 5000})[0])

        threads = [threading.Thread(target=client) for _ in range(32)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        check("rss/burst-answered", answers == [200] * 32, f"{answers}")
        peak = memory(server, "VmHWM")
        check("rss/peak", peak < before + 128 * MIB,
              f"peak RSS {peak / MIB:.0f} MiB, {before / MIB:.0f} MiB before the burst")
        after = memory(server, "VmRSS")
        deadline = time.monotonic() + 10
        while after > before + 32 * MIB and time.monotonic() < deadline:
            time.sleep(0.2)
            after = memory(server, "VmRSS")
        check("rss/returns", after < before + 32 * MIB,
              f"RSS {after / MIB:.0f} MiB after the burst, {before / MIB:.0f} MiB before")
    finally:
        server.stop()


def test_fair():
    server = serve()
    try:
        big = {"start": time.monotonic()}

        def big_client():
            status, _, data = server.translate({"text": ["the cat ."], "sample": True,
                                                "n_best": 1024, "temperature": 5.0,
                                                "max_length": 200, "seed": 7})
            big["status"], big["done"] = status, time.monotonic()

        thread = threading.Thread(target=big_client)
        thread.start()
        time.sleep(0.3 * SLOW)  # the big request is decoding
        short_start = time.monotonic()
        status, _, data = server.translate({"text": ["the dog ."]})
        short = time.monotonic() - short_start
        thread.join()
        check("fair/short-answered", status == 200, f"{status} {data}")
        check("fair/big-answered", big.get("status") == 200, f"{big}")
        # the big answer (1024 x 200 tokens) takes a while to build and read: the short
        # one must not wait for the big one's decode, so it takes a fraction of it
        took = big.get("done", 0) - big["start"]
        check("fair/short-not-behind", short < took / 4,
              f"the short sentence took {short:.2f} s, the 1024-sample request {took:.2f} s")
    finally:
        server.stop()


def main():
    test_budget()
    test_rss()
    test_fair()
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())
