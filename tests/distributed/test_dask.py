"""ted.dask on a real local Dask cluster (distributed.LocalCluster: 2 worker
processes of 1 thread, nannies restarting a dead one), against the ted
program on the same lines (tests/distributed/common.py).

    BUILD=build TED=build/ted .venv/bin/python tests/distributed/test_dask.py

Checks (one "ok NAME" / "FAIL NAME: why" line each):
  dask/dataframe   en-fr's test.en (1500 lines, 6 partitions) as a DataFrame
                   column: the translations equal `ted translate`'s, row for
                   row, in order, the other columns kept; a "ted" event per
                   partition (Client.get_events)
  dask/missing-values  a missing value of an Arrow string Series (pandas.NA)
                   stays missing, the rows around it translated
  dask/bag         multi-en-fr-es's first 300 test lines as a Bag, eng_Latn to fra_Latn:
                   equal to `ted translate`'s with those languages, in order
  dask/killed      a worker killed (SIGKILL) in the middle of the job: Dask
                   reruns its task elsewhere and each row comes back once, with
                   its right translation
  dask/missing     a Translator whose directory is missing on the workers:
                   the job fails with ted.FileError and ted's message
"""
import os
import sys
import time

import common
from common import check, fail, failures

if common.SAN:
    print("skip dask/all: the engines' worker processes cannot load the sanitized library")
    sys.exit(0)

import dask.bag as db  # noqa: E402
import dask.dataframe as dd  # noqa: E402
import pandas as pd  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402

import ted  # noqa: E402
import ted.dask  # noqa: E402


def main():
    lines = common.lines_of(os.path.join(common.EN_FR, "test.en"))
    want = common.reference(common.EN_FR, lines, "--threads", "1")
    start = time.perf_counter()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        started = time.perf_counter()
        frame = pd.DataFrame({"id": range(len(lines)), "text": lines})
        df = dd.from_pandas(frame, npartitions=6)
        out = ted.dask.translate(df, common.EN_FR, column="text").compute()
        problem = common.first_difference(out["translation"].tolist(), want) or \
            common.first_difference(out["id"].tolist(), list(range(len(lines))))
        events = [e for _, e in client.get_events("ted")]
        if problem is None and sum(e["sentences"] for e in events) != len(lines):
            problem = "the ted events count %s sentences" % [e["sentences"] for e in events]
        check("dask/dataframe", problem is None, problem)

        texts = pd.Series([lines[0], None, lines[1]], dtype="string[pyarrow]")
        got = ted.dask.translate(dd.from_pandas(texts, npartitions=1), common.EN_FR).compute()
        problem = common.first_difference(list(got), [want[0], None, want[1]])
        check("dask/missing-values", problem is None, problem)

        multi = common.lines_of(os.path.join(common.MULTI, "test.eng_Latn"))[:300]
        want_multi = common.reference(common.MULTI, multi, "--source-lang", "eng_Latn",
                                      "--target-lang", "fra_Latn",
                                      "--threads", "1")
        got = ted.dask.translate(db.from_sequence(multi, npartitions=4), common.MULTI,
                                 source_lang="eng_Latn", target_lang="fra_Latn").compute()
        problem = common.first_difference(list(got), want_multi)
        check("dask/bag", problem is None, problem)

        killed(client, lines, want)
        missing(lines)
        seconds = time.perf_counter() - started
    print("info dask: cluster started in %.1f s, the checks took %.1f s" %
          (started - start, seconds))


def killed(client, lines, want):
    work = common.scratch()
    marker = os.path.join(work, "killed")
    translator = common.DiesOnce(common.EN_FR, marker, lines[len(lines) // 2])
    frame = pd.DataFrame({"id": range(len(lines)), "text": lines})
    df = dd.from_pandas(frame, npartitions=10)
    try:
        out = ted.dask.translate(df, translator, column="text").compute()
    except Exception as e:  # noqa: BLE001 - the check says what was raised
        return fail("dask/killed", "the job failed: %s: %s" % (type(e).__name__, e))
    if not common.killed(marker):
        return fail("dask/killed", "no worker was killed")
    problem = common.exactly_once(list(zip(out["id"], out["translation"])), want)
    check("dask/killed", problem is None, problem)


def missing(lines):
    with common.MissingModel() as m:
        df = dd.from_pandas(pd.DataFrame({"text": lines[:40]}), npartitions=2)
        try:
            ted.dask.translate(df, m.translator, column="text").compute()
        except ted.FileError as e:
            return m.verify("dask/missing", e)
        except Exception as e:  # noqa: BLE001 - the check says what was raised
            return fail("dask/missing", "%s, not ted.FileError: %s" % (type(e).__name__, e))
        fail("dask/missing", "the job succeeded")


if __name__ == "__main__":
    main()
    sys.exit(1 if failures() else 0)
