"""Dask: a DataFrame column, a Series or a Bag of sentences translated
partition by partition.

    import dask.dataframe as dd, ted.dask
    df = dd.from_pandas(pandas.DataFrame({"text": lines}), npartitions=8)
    df = ted.dask.translate(df, "models/en-fr", column="text")   # adds "translation"

map_partitions with `model` (a model directory, or a Translator, pickled as
its directory): each worker process opens the model once and keeps it
between tasks (ted._shared.reopen), its weights mapped and shared by the
workers of a machine. Each task uses `threads` CPUs: keep workers x
threads_per_worker x threads within the cores. The dashboard shows the
tasks; each partition logs an INFO line on the "ted" logger and a "ted"
event (Client.get_events("ted")). docs/distributed.md.
"""
from __future__ import annotations

import functools
from typing import Any, List, Optional

try:
    import dask.bag as db
    import dask.dataframe as dd
    import pandas as pd
    from dask.base import normalize_token
except ImportError as e:  # ted itself needs no engine
    raise ImportError("ted.dask needs Dask's DataFrame: pip install 'dask[dataframe]' (%s)"
                      % e) from None

from ._batch import Deferred, ModelArg, carried, check_options, open_model, translate_texts
from ._errors import ArgumentError


@normalize_token.register(Deferred)
def _token(model: Deferred) -> Any:
    """A carried Translator's token in Dask's graph: what it reopens with
    (Dask would otherwise unpickle it to check, opening the model)."""
    return (model.reopen.__module__, model.reopen.__qualname__) + tuple(model.args)


def _event(count: int) -> None:
    """A "ted" event on the worker running the task (the dashboard's and
    Client.get_events' log), where there is one."""
    try:
        from distributed import get_worker
        get_worker().log_event("ted", {"sentences": count})
    except (ImportError, ValueError):  # no distributed, or not on a worker
        pass


def translate_list(texts: List[Any], model: ModelArg, threads: int = 1,
                   **options: Any) -> List[Optional[str]]:
    """One partition (a list of texts) translated, in order."""
    out = translate_texts(open_model(model), list(texts), threads, **options)
    _event(len(out))
    return out


def translate_series(texts: "pd.Series", model: ModelArg, threads: int = 1,
                     **options: Any) -> "pd.Series":
    """One partition (a pandas Series) translated, index kept."""
    out = translate_list(texts.tolist(), model, threads, **options)
    return pd.Series(out, index=texts.index, dtype=object, name=texts.name)


def translate(data: Any, model: ModelArg, *, column: Optional[str] = None,
              output_column: str = "translation", threads: int = 1, **options: Any) -> Any:
    """A Bag of texts (a Bag of translations), a Series (a Series named
    `output_column`) or a DataFrame with `column` translated into
    `output_column`; lazy, as Dask is. `options`: Translator.translate's."""
    check_options(options)
    model = carried(model)
    if isinstance(data, db.Bag):
        return data.map_partitions(functools.partial(translate_list, model=model,
                                                     threads=threads, **options))
    if isinstance(data, dd.DataFrame):
        if column is None:
            raise ArgumentError("column: name the DataFrame's column of texts")
        return data.assign(**{output_column: translate(data[column], model, threads=threads,
                                                       output_column=output_column,
                                                       **options)})
    if isinstance(data, dd.Series):
        part = functools.partial(translate_series, model=model, threads=threads, **options)
        return data.map_partitions(part, meta=pd.Series([], dtype=object,
                                                        name=output_column)).rename(
            output_column)
    raise TypeError("ted.dask.translate: expected a dask Bag, Series or DataFrame, got %s"
                    % type(data).__name__)
