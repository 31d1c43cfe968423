#!/usr/bin/python3
"""The bulk recipes of docs/deploy.md on the toy model: a file through GNU
parallel (`--pipe -k`), and through the Slurm array script
(deploy/slurm/translate-array.sh, each task run as Slurm would run it,
with SLURM_ARRAY_TASK_ID set), give the output of one `ted translate`
process over the whole file, line for line.

    TED=build/ted /usr/bin/python3 tests/deploy/test_bulk.py

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  bulk/parallel   600 lines (a blank one among them) in blocks of 37 lines,
                  3 jobs at once: the output equals one process's
  bulk/slurm      the same file split into 4 parts (split -n l/4), one task
                  per part, the parts joined by cat: equal too
  bulk/slurm-usage  the script refuses to run outside an array task
"""
import glob
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
from ted_test import TED, check, fail, failures, run, scratch_directory, ted_output  # noqa: E402

MODEL = os.path.join(ROOT, "models", "toy-en-fr")
SCRIPT = os.path.join(ROOT, "deploy", "slurm", "translate-array.sh")
TED_PATH = os.path.abspath(TED)


def first_difference(got, want):
    for i, (a, b) in enumerate(zip(got, want)):
        if a != b:
            return f"line {i + 1}: {a!r} != {b!r}"
    return None if len(got) == len(want) else f"{len(got)} lines, not {len(want)}"


def test_parallel(text, want):
    if not shutil.which("parallel"):
        return fail("bulk/parallel", "GNU parallel is not installed "
                                     "(scripts/install-deps.sh --test installs it)")
    status, out, err = run(["parallel", "--will-cite", "--pipe", "-k", "-N", "37", "-j", "3",
                            TED_PATH, "translate", "-m", MODEL, "--threads", "1"], text)
    problem = f"exit {status}: {err[-300:]}" if status != 0 else \
        first_difference(out.splitlines(), want)
    check("bulk/parallel", problem is None, problem)


def test_slurm(tmp, text, want):
    parts = os.path.join(tmp, "parts")
    os.mkdir(parts)
    source = os.path.join(tmp, "big.en")
    with open(source, "w", encoding="utf-8") as f:
        f.write(text)
    status, _, err = run(["split", "-n", "l/4", "-d", "-a", "4", source,
                          os.path.join(parts, "big.en.")])
    problems = [] if status == 0 else [f"split: {err}"]
    for task in range(4):
        env = dict(os.environ, SLURM_ARRAY_TASK_ID=str(task), SLURM_CPUS_PER_TASK="1",
                   TED=TED_PATH)
        p = subprocess.run(["sh", SCRIPT, MODEL, os.path.join(parts, "big.en"),
                            os.path.join(parts, "big.fr")], env=env, capture_output=True,
                           timeout=120)
        if p.returncode != 0:
            problems.append(f"task {task}: exit {p.returncode}: {p.stderr[-300:]!r}")
    outputs = sorted(glob.glob(os.path.join(parts, "big.fr.*")))
    joined = []
    for path in outputs:  # cat parts/big.fr.*
        with open(path, encoding="utf-8") as f:
            joined += f.read().splitlines()
    if len(outputs) != 4:
        problems.append(f"parts written: {[os.path.basename(p) for p in outputs]}")
    problem = "; ".join(problems) or first_difference(joined, want)
    check("bulk/slurm", problem is None, problem)
    p = subprocess.run(["sh", SCRIPT, MODEL, source, source + ".fr"], capture_output=True,
                       env={k: v for k, v in os.environ.items() if k != "SLURM_ARRAY_TASK_ID"})
    check("bulk/slurm-usage", p.returncode != 0 and b"SLURM_ARRAY_TASK_ID" in p.stderr,
          f"exit {p.returncode}: {p.stderr!r}")


def main():
    lines = open(os.path.join(MODEL, "test.en"), encoding="utf-8").read().splitlines()[:599]
    lines.insert(300, "")
    text = "\n".join(lines) + "\n"
    want = ted_output(["translate", "-m", MODEL], text).splitlines()
    test_parallel(text, want)
    with scratch_directory("ted-bulk-") as tmp:
        test_slurm(tmp, text, want)
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())
