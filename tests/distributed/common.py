"""What tests/distributed/test_ray.py, test_spark.py and test_dask.py share:
the package found in the tree, the reference (the ted program's output on
the same lines), a Translator whose worker process is killed once in the
middle of a job, the exactly-once check and a model directory missing on
the workers.

The engines' worker processes inherit PYTHONPATH, which names the package
of the tree and this directory (the workers unpickle DiesOnce from here).
"""
import atexit
import collections
import os
import shutil
import signal
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
from ted_test import SAN, TED, check, fail, failures, ok  # noqa: E402,F401

BUILD = os.path.abspath(os.environ.get("BUILD", os.path.join(ROOT, "build")))
# the engines' worker processes inherit these: the package of the tree, this
# directory and the library of this build
os.environ["PYTHONPATH"] = os.pathsep.join(
    [os.path.join(ROOT, "python"), os.path.dirname(os.path.abspath(__file__))] +
    ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))
os.environ["TED_LIBRARY"] = os.path.join(BUILD, "libted.so")
sys.path.insert(0, os.path.join(ROOT, "python"))
import ted  # noqa: E402

EN_FR = os.path.join(ROOT, "models", "en-fr")
MULTI = os.path.join(ROOT, "models", "multi-en-fr-es")


def lines_of(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def reference(model, lines, *args):
    """`ted translate` over `lines`: one translation a line."""
    p = subprocess.run([os.path.abspath(TED), "translate", "-m", model] + list(args),
                       input="\n".join(lines) + "\n", capture_output=True, text=True,
                       timeout=300)
    if p.returncode != 0:
        raise SystemExit("FAIL reference: ted translate: %s" % p.stderr.strip()[-300:])
    return p.stdout.split("\n")[:-1]


def ted_message(model):
    """What `ted translate` says of a model directory that does not exist."""
    p = subprocess.run([os.path.abspath(TED), "translate", "-m", model, "x"],
                       capture_output=True, text=True)
    return p.stderr.strip()


def first_difference(got, want):
    for i, (a, b) in enumerate(zip(got, want)):
        if a != b:
            return "row %d: %r != %r" % (i, a, b)
    return None if len(got) == len(want) else "%d rows, not %d" % (len(got), len(want))


def exactly_once(pairs, want):
    """pairs: (row id, translation) as a job gave them back in any order;
    None when each row of `want` is there once with its translation."""
    counts = collections.Counter(i for i, _ in pairs)
    twice = [i for i, n in counts.items() if n > 1]
    if twice:
        return "rows given more than once: %s" % twice[:5]
    missing = sorted(set(range(len(want))) - set(counts))
    if missing:
        return "rows missing: %s (of %d)" % (missing[:5], len(missing))
    return first_difference([t for _, t in sorted(pairs)], want)


def _claim(marker):
    """True for the first process to claim `marker` (a file made with
    O_EXCL), False for every later one."""
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False


def _reopen_dying(model_dir, marker, fatal):
    return DiesOnce(model_dir, marker, fatal)


class DiesOnce(ted.Translator):
    """A Translator whose process is killed (SIGKILL) the first time, of all
    the processes of a job, it is given the text `fatal`: a worker that
    dies in the middle of a job, some of its batches done and others not.
    It pickles as itself (the marker file says whether the kill happened)."""

    def __init__(self, model_dir, marker, fatal):
        super().__init__(model_dir)
        self.marker, self.fatal = marker, fatal

    def __reduce__(self):
        return (_reopen_dying, (os.path.abspath(self.model_dir), self.marker, self.fatal))

    def translate(self, texts, **options):
        if not isinstance(texts, str) and self.fatal in texts and _claim(self.marker):
            os.kill(os.getpid(), signal.SIGKILL)
        return super().translate(texts, **options)


def killed(marker):
    """Whether a worker was killed (the marker exists)."""
    return os.path.exists(marker)


class MissingModel:
    """A Translator of a copy of en-fr whose directory is removed before the
    job runs: each worker that unpickles it finds no model there."""

    def __enter__(self):
        self.work = tempfile.mkdtemp(prefix="ted-distributed-")
        self.model = os.path.join(self.work, "en-fr")
        shutil.copytree(EN_FR, self.model)
        self.translator = ted.Translator(self.model)
        shutil.rmtree(self.model)
        self.message = ted_message(self.model)
        return self

    def verify(self, name, error):
        """ok when `error` (what the job raised, as text) holds ted's message
        for the directory and no pickling error."""
        text = str(error)
        said = self.message.split(": ", 1)[-1] if self.message.startswith("ted") else \
            self.message
        if self.model + "/config.yaml: cannot open" not in text or said not in text:
            fail(name, "the error does not give ted's message %r: %s" % (said, text[-600:]))
        elif "PicklingError" in text or "UnpicklingError" in text:
            fail(name, "a pickling error: %s" % text[-600:])
        else:
            ok(name, said)

    def __exit__(self, *exc):
        self.translator.close()
        shutil.rmtree(self.work, ignore_errors=True)


def scratch():
    """A directory of this run, removed at its exit."""
    work = tempfile.mkdtemp(prefix="ted-distributed-")
    atexit.register(shutil.rmtree, work, True)
    return work

