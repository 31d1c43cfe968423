"""The lines the Python test scripts print, which tests/run-all.sh counts:
"ok NAME" or "FAIL NAME: why". `failures()` is how many FAILs so far."""
_failures = 0


def ok(name):
    print(f"ok {name}", flush=True)


def fail(name, why):
    global _failures
    _failures += 1
    print(f"FAIL {name}: {why}", flush=True)


def check(name, condition, why):
    if condition:
        ok(name)
    else:
        fail(name, why)


def failures():
    return _failures
