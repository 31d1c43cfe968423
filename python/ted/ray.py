"""Ray Data: a column of a Dataset translated by one Translator per actor.

    import ray, ted.ray
    ds = ray.data.from_items([{"text": line} for line in lines])
    ds = ted.ray.translate(ds, "models/en-fr", column="text")   # adds "translation"

translate() is Dataset.map_batches with the callable class Translate, as
Ray's batch inference runs a model: an actor pool of `workers` actors,
each opening the model once (ted.Translator: the weights mapped, shared
by the actors of a machine) and asking `threads` CPUs of Ray, so that
workers x threads stays within the cluster's CPUs. Ray's progress bar
counts the rows; each batch logs an INFO line on the actor's "ted" logger
("ted: N sentences in S s"). docs/distributed.md.
"""
from __future__ import annotations

from typing import Any, Dict, Optional

import numpy as np

try:
    import ray
    import ray.data
except ImportError as e:  # ted itself needs no engine
    raise ImportError("ted.ray needs Ray Data: pip install 'ray[data]' (%s)" % e) from None

from ._batch import ModelArg, carried, check_options, open_model, translate_texts


class Translate:
    """A callable class for Dataset.map_batches: the model opened once per
    actor (`model`: a model directory, or a Translator, pickled as its
    directory), each batch's `column` translated into `output_column`
    (missing values stay None), the other columns kept. `threads`: the
    CPUs this actor uses (ask Ray for as many: num_cpus). `options`:
    Translator.translate's (beam_size, source_lang, target_lang...)."""

    def __init__(self, model: ModelArg, column: str = "text",
                 output_column: str = "translation", threads: int = 1,
                 **options: Any) -> None:
        check_options(options)
        self.translator = open_model(model)
        self.column, self.output_column = column, output_column
        self.threads, self.options = threads, options

    def __call__(self, batch: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        texts = batch[self.column].tolist()
        out = translate_texts(self.translator, texts, self.threads, **self.options)
        batch[self.output_column] = np.array(out, dtype=object)
        return batch


def translate(ds: "ray.data.Dataset", model: ModelArg, *, column: str = "text",
              output_column: str = "translation", workers: Optional[int] = None,
              threads: int = 1, batch_size: int = 256, **options: Any) -> "ray.data.Dataset":
    """`ds` with `column` translated into `output_column`: map_batches over
    an actor pool of `workers` Translate actors (default: the cluster's
    CPUs // threads), each given `threads` CPUs, `batch_size` rows a call."""
    check_options(options)
    if workers is None:
        workers = max(1, int(ray.cluster_resources().get("CPU", 1)) // threads)
    return ds.map_batches(Translate, fn_constructor_args=(carried(model),),
                          fn_constructor_kwargs=dict(column=column, output_column=output_column,
                                                     threads=threads, **options),
                          compute=ray.data.ActorPoolStrategy(size=workers), num_cpus=threads,
                          batch_size=batch_size,
                          batch_format="numpy")
