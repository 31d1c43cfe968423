"""The loaded model behind Translator handles: one owner of the C model.

A Translator and its copies are handles of one Model. Every use of the C
model runs between enter() and leave(), so the model is freed only once no
call uses it: the last handle's close() cancels the running calls (their
ted_cancel flags: each stops at its next decoding step), waits for them to
leave, and frees the model; a call that starts after it raises
ted.ArgumentError. A thread that closes while it is itself inside a call
(a signal handler's close()) does not wait for itself: the last call to
leave frees the model.
"""
from __future__ import annotations

import os
import queue
import threading
from ctypes import byref, c_void_p
from typing import Callable, Dict, Optional, TypeVar

from . import _capi
from ._errors import ArgumentError, check

lib = _capi.lib
T = TypeVar("T")

CLOSED = "the Translator is closed"


class Call:
    """One use of the model: the thread it runs on, and the flag that
    cancels its decodes (None for a call that does not decode)."""

    __slots__ = ("thread", "flag")

    def __init__(self, flag: Optional[c_void_p]) -> None:
        self.thread = threading.get_ident()
        self.flag = flag


class Model:
    """A loaded C model (ted_model_load) and its handles and calls."""

    def __init__(self, pointer: c_void_p) -> None:
        self.pointer = pointer
        self._lock = threading.Condition(threading.Lock())
        self._handles = 1
        self._calls: Dict[Call, int] = {}
        self._closed = False

    def share(self) -> None:
        """One more handle (a copy of a Translator)."""
        with self._lock:
            if self._closed:
                raise ArgumentError(CLOSED)
            self._handles += 1

    def enter(self, cancellable: bool = False) -> Call:
        """Starts a call; `cancellable`: with a ted_cancel flag that close()
        requests. Raises ted.ArgumentError once the model is closed."""
        flag = None
        if cancellable:
            flag = c_void_p()
            err = _capi.Error_()
            check(lib.ted_cancel_new(byref(flag), byref(err)), err)
        call = Call(flag)
        with self._lock:
            if not self._closed:
                self._calls[call] = call.thread
                return call
        lib.ted_cancel_free(flag)
        raise ArgumentError(CLOSED)

    def cancel(self, call: Call) -> None:
        """Requests the call's flag, while the call still holds it."""
        with self._lock:
            if call in self._calls and call.flag:
                lib.ted_cancel_request(call.flag)

    def leave(self, call: Call) -> None:
        with self._lock:
            if self._calls.pop(call, None) is None:
                return
            pointer = self._take_when_done()
            self._lock.notify_all()
        lib.ted_cancel_free(call.flag)
        if pointer:
            lib.ted_model_free(pointer)

    def release(self) -> None:
        """A handle is closed. The last one cancels the running calls and
        waits for those of other threads; the model is freed once none
        runs."""
        me = threading.get_ident()
        with self._lock:
            self._handles -= 1
            if self._handles > 0 or self._closed:
                return
            self._closed = True
            for call in self._calls:
                if call.flag:
                    lib.ted_cancel_request(call.flag)
            while any(thread != me for thread in self._calls.values()):
                self._lock.wait()
            pointer = self._take_when_done()
        if pointer:
            lib.ted_model_free(pointer)

    def _take_when_done(self) -> Optional[c_void_p]:
        """The pointer to free (held lock): closed, and no call left."""
        if self._closed and not self._calls and self.pointer:
            pointer, self.pointer = self.pointer, None
            return pointer
        return None

    def run(self, work: Callable[[Call], T], cancellable: bool = False) -> T:
        """work(call) between enter() and leave(). On the main thread a
        cancellable call runs on another thread (_Beside) while this one waits,
        so that Ctrl-C (KeyboardInterrupt, which Python raises on the main
        thread only, between bytecodes) comes at once: the call's flag is
        requested, its decode stops at the next step, and the
        KeyboardInterrupt goes on."""
        call = self.enter(cancellable)
        if not cancellable or threading.current_thread() is not threading.main_thread():
            try:
                return work(call)
            finally:
                self.leave(call)
        return self._run_beside(work, call)

    def _run_beside(self, work: Callable[[Call], T], call: Call) -> T:
        outcome: list = []
        done = threading.Event()  # stays set: a KeyboardInterrupt raised once it
        # is set (the signal came as the call ended) finds it so

        def job() -> None:
            try:
                outcome.append((True, work(call)))
            except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
                outcome.append((False, e))
            finally:
                try:
                    self.leave(call)
                finally:
                    done.set()

        try:
            _BESIDE.submit(job)
        except BaseException:
            self.leave(call)
            raise
        try:
            # a timeout: a signal that another thread received is seen too
            while not done.wait(0.25):
                pass
        except BaseException:
            self.cancel(call)
            done.wait()
            raise
        ok, value = outcome[0]
        if ok:
            return value
        raise value


class _Beside:
    """The thread that runs the main thread's cancellable calls, one after
    another (started at the first; a forked child starts its own)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: "queue.SimpleQueue[Callable[[], None]]" = queue.SimpleQueue()
        self._pid = -1

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            if self._pid != os.getpid():
                self._jobs = queue.SimpleQueue()
                threading.Thread(target=self._serve, args=(self._jobs,), name="ted-calls",
                                 daemon=True).start()
                self._pid = os.getpid()
            self._jobs.put(job)

    @staticmethod
    def _serve(jobs: "queue.SimpleQueue[Callable[[], None]]") -> None:
        while True:
            job = jobs.get()
            try:
                job()
            except BaseException:  # noqa: BLE001 - a job hands its own errors on
                pass


_BESIDE = _Beside()
