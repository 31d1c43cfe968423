"""Apache Spark: a column translated by a pandas UDF.

    import ted.spark
    df = spark.createDataFrame([(line,) for line in lines], ["text"])
    df = ted.spark.translate(df, "text", "models/en-fr")   # adds "translation"
    # or: df.select(ted.spark.translate_udf("models/en-fr")("text"))

Each Python worker opens the model once and keeps it between tasks
(ted._shared.reopen; Spark reuses its Python workers), its weights mapped
and shared by the workers of a machine. Each task translates its Arrow
batches (spark.sql.execution.arrow.maxRecordsPerBatch rows) with the CPUs
Spark gives a task (spark.task.cpus), so executors x cores stays within
the machines' CPUs. Spark's UI shows the tasks; each batch logs an INFO
line on the Python worker's "ted" logger ("ted: N sentences in S s").
docs/distributed.md.
"""
from __future__ import annotations

from typing import Any, Optional

try:
    import pandas as pd
    from pyspark import TaskContext
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.functions import pandas_udf
except ImportError as e:  # ted itself needs no engine
    raise ImportError("ted.spark needs PySpark with pandas and PyArrow: pip install "
                      "'pyspark[sql]' (%s)" % e) from None

from ._batch import ModelArg, carried, check_options, open_model, translate_texts


def translate_udf(model: ModelArg, *, threads: Optional[int] = None, **options: Any) -> Any:
    """A pandas UDF (string -> string) translating a column with `model` (a
    model directory, or a Translator, pickled as its directory); missing
    values stay null. `threads`: the CPUs a task uses (default: the task's,
    spark.task.cpus). `options`: Translator.translate's."""
    check_options(options)
    model = carried(model)

    @pandas_udf("string")  # type: ignore[call-overload]
    def translate(texts: pd.Series) -> pd.Series:
        context = TaskContext.get()
        n = threads or (context.cpus() if context is not None else 1)
        out = translate_texts(open_model(model), texts.tolist(), n, **options)
        return pd.Series(out, index=texts.index, dtype=object)

    return translate


def translate(df: DataFrame, column: str, model: ModelArg, *,
              output_column: str = "translation", threads: Optional[int] = None,
              **options: Any) -> DataFrame:
    """`df` with `column` translated into `output_column` (translate_udf)."""
    udf = translate_udf(model, threads=threads, **options)
    source: Column = df[column]
    return df.withColumn(output_column, udf(source))
