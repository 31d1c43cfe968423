"""ted.ray on a real local Ray cluster (ray.init(num_cpus=2): Ray Data's
actor pool of 2 actors, one CPU each), against the ted program on the same
lines (tests/distributed/common.py).

    BUILD=build TED=build/ted .venv/bin/python tests/distributed/test_ray.py

Checks (one "ok NAME" / "FAIL NAME: why" line each):
  ray/dataset   en-fr's test.en (1500 rows, 6 blocks) through
                ted.ray.translate with 2 workers, Ray Data keeping the order
                (preserve_order): the translations equal `ted translate`'s,
                row for row, the "id" column kept
  ray/killed    an actor killed (SIGKILL) in the middle of the job: Ray
                restarts it and retries its batch; each row comes back once,
                with its right translation
  ray/missing   a Translator whose directory is missing on the workers: the
                job fails with ted's message
"""
import os
import sys
import time

import common
from common import check, fail, failures

if common.SAN:
    print("skip ray/all: the engines' worker processes cannot load the sanitized library")
    sys.exit(0)

os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a local cluster of this test alone
import ray  # noqa: E402
import ray.data  # noqa: E402

import ted.ray  # noqa: E402


def dataset(lines, blocks):
    return ray.data.from_items([{"id": i, "text": t} for i, t in enumerate(lines)],
                               override_num_blocks=blocks)


def main():
    lines = common.lines_of(os.path.join(common.EN_FR, "test.en"))
    want = common.reference(common.EN_FR, lines, "--threads", "1")
    start = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             logging_level="WARNING")
    started = time.perf_counter()
    try:
        context = ray.data.DataContext.get_current()
        context.execution_options.preserve_order = True
        context.enable_progress_bars = False
        rows = ted.ray.translate(dataset(lines, 6), common.EN_FR, workers=2).take_all()
        problem = common.first_difference([r["translation"] for r in rows], want) or \
            common.first_difference([r["id"] for r in rows], list(range(len(lines))))
        check("ray/dataset", problem is None, problem)
        context.execution_options.preserve_order = False
        killed(lines, want)
        missing(lines)
    finally:
        seconds = time.perf_counter() - started
        ray.shutdown()
    print("info ray: cluster started in %.1f s, the checks took %.1f s" %
          (started - start, seconds))


def killed(lines, want):
    work = common.scratch()
    marker = os.path.join(work, "killed")
    translator = common.DiesOnce(common.EN_FR, marker, lines[len(lines) // 2])
    try:
        rows = ted.ray.translate(dataset(lines, 10), translator, workers=2,
                                 batch_size=100).take_all()
    except Exception as e:  # noqa: BLE001 - the check says what was raised
        return fail("ray/killed", "the job failed: %s: %s" % (type(e).__name__, e))
    if not common.killed(marker):
        return fail("ray/killed", "no actor was killed")
    problem = common.exactly_once([(r["id"], r["translation"]) for r in rows], want)
    check("ray/killed", problem is None, problem)


def missing(lines):
    context = ray.data.DataContext.get_current()
    with common.MissingModel() as m:
        try:
            ted.ray.translate(dataset(lines[:40], 2), m.translator, workers=1).take_all()
        except Exception as e:  # noqa: BLE001 - Ray wraps the task's error
            return m.verify("ray/missing", e)
        fail("ray/missing", "the job succeeded (max_consecutive_actor_init_deaths %s)" %
             context.max_consecutive_actor_init_deaths)


if __name__ == "__main__":
    main()
    sys.exit(1 if failures() else 0)
