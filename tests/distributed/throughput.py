"""The throughput of ted.dask, ted.ray and ted.spark with 1 and 2 workers
(one thread each) on the shipped models, against `ted translate` on the
same lines; a measurement, not a test (docs/performance.md#distributed).

    BUILD=build TED=build/ted .venv/bin/python tests/distributed/throughput.py [REPEAT]

The input is each model's test set REPEAT times (default 4). Each engine's
cluster starts once per worker count; a first small job opens the model
on every worker before the timed one, so a figure is the translation
alone, the engine's scheduling included; the start-up is printed apart.
"""
import os
import subprocess
import sys
import time

import common

MODELS = [("en-fr", common.EN_FR, "test.en", {}),
          ("multi-en-fr-es", common.MULTI, "test.eng_Latn",
           {"source_lang": "eng_Latn", "target_lang": "fra_Latn"})]


def cli(model, lines, options, threads):
    args = [os.path.abspath(common.TED), "translate", "-m", model, "--threads", str(threads)]
    for key, value in options.items():
        args += ["--" + key.replace("_", "-"), value]
    start = time.perf_counter()
    subprocess.run(args, input="\n".join(lines) + "\n", capture_output=True, text=True,
                   check=True)
    return time.perf_counter() - start


def dask_runs(workers, jobs):
    import dask.dataframe as dd
    import pandas as pd
    from distributed import Client, LocalCluster

    import ted.dask
    start = time.perf_counter()
    with LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None) as c, \
            Client(c):
        up = time.perf_counter() - start
        for name, model, lines, options in jobs:
            def job(texts):
                df = dd.from_pandas(pd.DataFrame({"text": texts}), npartitions=8)
                ted.dask.translate(df, model, column="text", **options).compute()
            yield name, up, timed(job, lines)


def ray_runs(workers, jobs):
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray
    import ray.data

    import ted.ray
    start = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    ray.data.DataContext.get_current().enable_progress_bars = False
    up = time.perf_counter() - start
    try:
        for name, model, lines, options in jobs:
            def job(texts):
                ds = ray.data.from_items([{"text": t} for t in texts], override_num_blocks=8)
                ted.ray.translate(ds, model, workers=workers, **options).materialize()
            yield name, up, timed(job, lines)
    finally:
        ray.shutdown()


def spark_runs(workers, jobs):
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import ted.spark
    start = time.perf_counter()
    spark = (SparkSession.builder.master("local[%d]" % workers)
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    print("# spark master %s" % spark.sparkContext.master)
    up = time.perf_counter() - start
    try:
        for name, model, lines, options in jobs:
            def job(texts):
                df = spark.createDataFrame([(t,) for t in texts], "text string").repartition(8)
                ted.spark.translate(df, "text", model, **options).write.format("noop") \
                    .mode("overwrite").save()
            yield name, up, timed(job, lines)
    finally:
        spark.stop()


def timed(job, lines):
    job(lines[:64])  # every worker opens the model, the engine warms up
    start = time.perf_counter()
    job(lines)
    return time.perf_counter() - start


def cpu():
    with open("/proc/cpuinfo") as f:
        info = f.read()
    model = next(line.split(":", 1)[1].strip() for line in info.splitlines()
                 if line.startswith("model name"))
    flags = next(line.split(":", 1)[1].split() for line in info.splitlines()
                 if line.startswith("flags"))
    wanted = [f for f in flags if f.startswith(("avx", "fma", "f16c", "amx"))]
    return "%s, %d CPUs, %s" % (model, os.cpu_count(), " ".join(wanted))


def main():
    repeat = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    jobs = [(name, model, common.lines_of(os.path.join(model, test)) * repeat, options)
            for name, model, test, options in MODELS]
    print("# %s; ted kernels %s; load average %s" %
          (cpu(), common.ted.Translator(common.EN_FR).kernels, os.getloadavg()))
    print("| model | lines | runner | workers | start-up s | seconds | sentences/s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, model, lines, options in jobs:
        for threads in (1, 2):
            seconds = cli(model, lines, options, threads)
            print("| %s | %d | ted translate --threads %d | 1 | | %.2f | %.0f |" %
                  (name, len(lines), threads, seconds, len(lines) / seconds), flush=True)
    for engine, runs in (("ted.dask", dask_runs), ("ted.ray", ray_runs),
                         ("ted.spark", spark_runs)):
        for workers in (1, 2):
            for name, up, seconds in runs(workers, jobs):
                count = len(next(j[2] for j in jobs if j[0] == name))
                print("| %s | %d | %s | %d | %.1f | %.2f | %.0f |" %
                      (name, count, engine, workers, up, seconds, count / seconds), flush=True)


if __name__ == "__main__":
    main()
