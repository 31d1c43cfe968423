"""The models a process opens for pickled Translators and batch engines.

A Translator pickles as its model directory and `threads` (Translator.
__reduce__); unpickling calls reopen(), which opens each model once per
process and gives out handles of it (copy.copy: no second load). A worker
of Ray, Spark or Dask thus loads a model once, whatever number of tasks
unpickle it, and the worker processes of one machine share its weights:
the library maps the weights file, so its pages are the page cache's,
one copy for every process.

The process keeps the handle it opened until it exits (close_all() closes
them), as a worker keeps a model between tasks.
"""
from __future__ import annotations

import copy
import os
import socket
import threading
from typing import TYPE_CHECKING, Dict, Optional, Tuple

from ._errors import Error, from_status

if TYPE_CHECKING:
    from ._translator import Translator

_lock = threading.Lock()
_open: Dict[Tuple[str, Tuple[int, int, int]], "Translator"] = {}


def _key(model_dir: str) -> Tuple[str, Tuple[int, int, int]]:
    """The directory's real path and its config.yaml's identity (inode, size,
    modification time): a model written again in place opens again."""
    real = os.path.realpath(model_dir)
    try:
        st = os.stat(os.path.join(real, "config.yaml"))
    except OSError:
        return real, (0, 0, 0)
    return real, (st.st_ino, st.st_size, st.st_mtime_ns)


def reopen(model_dir: str, threads: Optional[int] = None) -> "Translator":
    """A Translator of `model_dir`: a handle of the one this process opened,
    else a new one (kept for the next call), computing on a pool of
    `threads` threads of its own when given (the constructor's `threads`).
    A model that cannot be opened raises its ted.Error, the message naming
    this host ("on HOST: ...") since the directory is looked up where the
    call runs."""
    from ._translator import Translator
    key = _key(model_dir)
    with _lock:
        held = _open.get(key)
        if held is not None:
            try:
                handle = copy.copy(held)
            except Error:  # closed by close_all() or by its owner
                held = None
        if held is None:
            try:
                held = Translator(model_dir, threads=threads)
            except Error as e:
                raise from_status(e.status, "on %s: %s" % (socket.gethostname(),
                                                           e.message)) from None
            _open[key] = held
            handle = copy.copy(held)
    return handle


def close_all() -> None:
    """Closes the handles reopen() keeps; a model is freed once the handles
    it gave out are closed too."""
    with _lock:
        held = list(_open.values())
        _open.clear()
    for t in held:
        t.close()
