"""ted.spark on a real local Spark (master local[2,3]: 2 cores, a failed task
tried up to 3 times; Debian's OpenJDK), against the ted program on the same
lines (tests/distributed/common.py).

    BUILD=build TED=build/ted .venv/bin/python tests/distributed/test_spark.py

Checks (one "ok NAME" / "FAIL NAME: why" line each):
  spark/dataframe  en-fr's test.en (1500 rows, 4 partitions, Arrow batches of
                   100 rows) through ted.spark.translate: the translations
                   equal `ted translate`'s, row for row, in order, "id" kept
  spark/udf        the multilingual model (its first 300 test lines) through
                   translate_udf in a select,
                   eng_Latn to fra_Latn: equal to `ted translate`'s
  spark/killed     a Python worker killed (SIGKILL) in the middle of the job:
                   Spark retries its task; each row comes back once, with its
                   right translation
  spark/missing    a Translator whose directory is missing on the workers: the
                   job fails with ted's message
"""
import os
import shutil
import sys
import time

import common
from common import check, fail, failures

if common.SAN:
    print("skip spark/all: the engines' worker processes cannot load the sanitized library")
    sys.exit(0)
if not shutil.which("java"):
    print("FAIL spark/all: no java (scripts/install-deps.sh --test installs "
          "default-jre-headless)")
    sys.exit(1)

os.environ["PYSPARK_PYTHON"] = sys.executable  # the workers: this virtualenv's Python
from pyspark.sql import SparkSession  # noqa: E402

import ted.spark  # noqa: E402


def frame(spark, lines, partitions):
    rows = [(i, t) for i, t in enumerate(lines)]
    return spark.createDataFrame(rows, "id long, text string").repartitionByRange(
        partitions, "id")


def main():
    lines = common.lines_of(os.path.join(common.EN_FR, "test.en"))
    want = common.reference(common.EN_FR, lines, "--threads", "1")
    start = time.perf_counter()
    spark = (SparkSession.builder.master("local[2,3]").appName("ted-test")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    started = time.perf_counter()
    try:
        rows = ted.spark.translate(frame(spark, lines, 4), "text", common.EN_FR).collect()
        problem = common.first_difference([r["translation"] for r in rows], want) or \
            common.first_difference([r["id"] for r in rows], list(range(len(lines))))
        check("spark/dataframe", problem is None, problem)
        multi(spark)
        killed(spark, lines, want)
        missing(spark, lines)
    finally:
        seconds = time.perf_counter() - started
        spark.stop()
    print("info spark: session started in %.1f s, the checks took %.1f s" %
          (started - start, seconds))


def multi(spark):
    lines = common.lines_of(os.path.join(common.MULTI, "test.eng_Latn"))[:300]
    want = common.reference(common.MULTI, lines, "--source-lang", "eng_Latn",
                            "--target-lang", "fra_Latn", "--threads", "1")
    udf = ted.spark.translate_udf(common.MULTI, source_lang="eng_Latn", target_lang="fra_Latn")
    rows = frame(spark, lines, 2).select("id", udf("text").alias("fr")).collect()
    problem = common.first_difference([r["fr"] for r in rows], want)
    check("spark/udf", problem is None, problem)


def killed(spark, lines, want):
    work = common.scratch()
    marker = os.path.join(work, "killed")
    translator = common.DiesOnce(common.EN_FR, marker, lines[len(lines) // 2])
    try:
        rows = ted.spark.translate(frame(spark, lines, 4), "text", translator).collect()
    except Exception as e:  # noqa: BLE001 - the check says what was raised
        return fail("spark/killed", "the job failed: %s: %s" % (type(e).__name__,
                                                               str(e)[-600:]))
    if not common.killed(marker):
        return fail("spark/killed", "no worker was killed")
    problem = common.exactly_once([(r["id"], r["translation"]) for r in rows], want)
    check("spark/killed", problem is None, problem)


def missing(spark, lines):
    with common.MissingModel() as m:
        try:
            ted.spark.translate(frame(spark, lines[:40], 2), "text", m.translator).collect()
        except Exception as e:  # noqa: BLE001 - Spark wraps the task's error
            return m.verify("spark/missing", e)
        fail("spark/missing", "the job succeeded")


if __name__ == "__main__":
    main()
    sys.exit(1 if failures() else 0)
