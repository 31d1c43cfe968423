"""One partition of a batch job, as ted.ray, ted.spark and ted.dask
translate it (docs/distributed.md).

A partition goes to the library in one call: ted_translate orders its
sentences by length and cuts the batches from that order, so a batch
holds sentences of like length whatever the partition's order. With
threads > 1 on a model that decodes a batch per CPU (ted_translate_workers),
the partition is cut, by length, into pieces that Python threads translate
at once on the one Translator (its calls run in parallel); a larger model
takes the threads for its matrix products instead (ted_set_threads).
"""
from __future__ import annotations

import logging
import math
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, List, Optional, Sequence, Union

from . import _capi, _shared
from ._errors import ArgumentError
from ._translator import Translator

log = logging.getLogger("ted")

ModelArg = Union[str, "os.PathLike[str]", Translator]


class Deferred:
    """A Translator as a job carries it to the workers: what it pickles as
    (Translator.__reduce__), opened by the task that uses it (open_model)
    rather than by whatever process unpickles the job (Dask's scheduler
    unpickles the task graph). A model missing on a worker is then the
    task's ted.Error, which the engine reports as the job's."""

    def __init__(self, translator: Translator) -> None:
        self.reopen, self.args = translator.__reduce__()[:2]

    def __call__(self) -> Translator:
        return self.reopen(*self.args)

    def __repr__(self) -> str:
        return "ted.Translator(%r)" % (self.args[0],)


def carried(model: Union[ModelArg, Deferred]) -> Union[str, Deferred]:
    """`model` as a job carries it: a model directory as an absolute path
    (relative to the process that builds the job, as a Translator pickles),
    a Translator Deferred."""
    if isinstance(model, Deferred):
        return model
    if isinstance(model, Translator):
        return Deferred(model)
    return os.path.abspath(os.fspath(model))


def open_model(model: Union[ModelArg, Deferred]) -> Translator:
    """The Translator a task uses: `model` itself (a Translator), opened on
    the worker (Deferred), else the model directory opened once per
    process."""
    if isinstance(model, Translator):
        return model
    if isinstance(model, Deferred):
        return model()
    return _shared.reopen(os.fspath(model))


def check_options(options: dict) -> None:
    """A column holds one text per row: n_best and return_scores, which give
    lists and Hypothesis objects, belong to Translator.translate."""
    for name, plain in (("n_best", 1), ("return_scores", False)):
        if options.get(name, plain) != plain:
            raise ArgumentError("%s: a translated column holds one text per row; use "
                                "ted.Translator.translate for %s" % (name, name))


def _missing(text: Any) -> bool:
    """None, a float NaN or pandas.NA: the missing values of the engines'
    columns (pandas' object and Arrow string columns)."""
    if text is None:
        return True
    if isinstance(text, float):
        return math.isnan(text)
    return type(text).__name__ == "NAType"


def _per_batch(translator: Translator, threads: int) -> bool:
    """Whether the model decodes best a batch per CPU (a small model), so
    that `threads` partition pieces go at once (ted_translate_workers)."""
    owner = translator._loaded()
    call = owner.enter()
    try:
        return _capi.lib.ted_translate_workers(owner.pointer, threads) > 1
    finally:
        owner.leave(call)


def _pieces(texts: List[str], threads: int) -> List[List[int]]:
    """The indices of `texts` ordered by length, cut into 4 pieces per thread
    (a thread that ends early takes the next)."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    size = max(1, -(-len(order) // (threads * 4)))
    return [order[k:k + size] for k in range(0, len(order), size)]


def translate_texts(translator: Translator, texts: Sequence[Any], threads: int = 1,
                    **options: Any) -> List[Optional[str]]:
    """The translations of `texts`, in order; a missing value (None, NaN)
    stays None. One INFO line on the "ted" logger per call (sentences,
    seconds, sentences per second), which the engines show in their logs."""
    start = time.perf_counter()
    out: List[Optional[str]] = [None] * len(texts)
    present = [i for i, text in enumerate(texts) if not _missing(text)]
    items = [texts[i] for i in present]
    if threads > 1 and len(items) > 1 and _per_batch(translator, threads):
        pieces = _pieces(items, threads)
        with ThreadPoolExecutor(threads) as pool:
            done = pool.map(lambda p: translator.translate([items[i] for i in p], **options),
                            pieces)
            for piece, got in zip(pieces, done):
                for i, text in zip(piece, got):
                    out[present[i]] = text
    else:
        if threads > 1:
            _capi.lib.ted_set_threads(threads)
        for i, text in zip(present, translator.translate(items, **options)):
            out[i] = text
    seconds = time.perf_counter() - start
    log.info("ted: %d sentences in %.2f s (%.1f sentences/s, %d threads, pid %d)",
             len(items), seconds, len(items) / seconds if seconds > 0 else 0.0, threads,
             os.getpid())
    return out
