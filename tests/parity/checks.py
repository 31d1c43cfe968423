"""The lines every parity script prints, which tests/run-all.sh counts:
"ok NAME[: detail]" or "FAIL NAME: problem". `failures` counts the FAILs."""
failures = 0


def report(name, problem=None, detail=""):
    global failures
    if problem is None:
        print(f"ok {name}" + (f": {detail}" if detail else ""), flush=True)
    else:
        failures += 1
        print(f"FAIL {name}: {problem}", flush=True)
