"""Where a request's CPU work runs: a read lane and a bounded write lane, off the event loop.

Writes (parsing, embedding a catalog) are slow and serialised by the writer anyway; on their
own single-worker lane with a bounded queue they can never occupy the threads searches need.
A job whose caller has gone, or whose deadline passed while it waited, is dropped unrun, so a
burst of abandoned calls costs nothing once its callers give up.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

from registry.errors import CallerGone, NotReady, Overloaded

logger = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")


# Worker threads run at a lower scheduling priority than the event loop, so on a saturated
# machine a cache hit (answered on the loop) is not kept waiting by model and ranking work;
# decision 0039 compares 0, 5, 10 and 15.
WORKER_NICENESS = 15


def _yield_to_the_loop() -> None:
    """Lowers the calling thread to WORKER_NICENESS; on Linux a nice value is a thread's own,
    and the threads it starts take it."""
    with contextlib.suppress(OSError, AttributeError):  # not Linux, or not permitted
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), WORKER_NICENESS)


class OpensBelowTheLoop:
    """Runs each opening (a model's) on a thread of its own, lowered to WORKER_NICENESS before
    it starts anything, while the caller goes on; `wait()` returns once every opening ended.

    On Linux a new thread takes the nice value of the thread that creates it, so the threads
    a model library starts while opening (ONNX Runtime's intra-op pool, the tokenizer's at its
    first batch) run below the event loop, as the read lane's do. Started from the main
    thread they ran at the loop's priority: under read load the intra-op thread, spinning
    between passes, took 43% of a core at nice 0 while the nice-15 read threads waited for a
    core holding the GIL, and cache hits waited for the GIL with them (decision 0074).
    """

    def __init__(self) -> None:
        self._openings: list[Future[Any]] = []

    def __call__(self, opening: Callable[[], T]) -> Future[T]:
        opened: Future[T] = Future()

        def run() -> None:
            _yield_to_the_loop()
            try:
                opened.set_result(opening())
            except BaseException as exc:  # handed to whoever waits: nothing else sees it
                opened.set_exception(exc)

        threading.Thread(target=run, name="capreg-open", daemon=True).start()
        self._openings.append(opened)
        return opened

    def wait(self) -> None:
        """Returns once every opening has ended; raises the first one's error."""
        for opened in self._openings:
            opened.result()


class Lanes:
    """Two thread pools and the admission rule of the write one."""

    def __init__(self, *, read_workers: int, write_queue: int, read_queue: int = 64) -> None:
        self._reads = ThreadPoolExecutor(
            read_workers, thread_name_prefix="capreg-read", initializer=_yield_to_the_loop
        )
        self._writes = ThreadPoolExecutor(
            1, thread_name_prefix="capreg-write", initializer=_yield_to_the_loop
        )
        self._write_queue = write_queue
        self._read_limit = read_workers + read_queue
        self._pending_writes = 0
        self._pending_reads = 0
        self._lock = threading.Lock()
        self._active = 0
        self._idle = threading.Event()
        self._idle.set()

    async def read(self, call: Any, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        with self._lock:
            if self._pending_reads >= self._read_limit:
                raise Overloaded(
                    f"{self._pending_reads} searches are already running or waiting; retry shortly",
                    retry_after=0.05,
                )
            self._pending_reads += 1
        try:
            return await self._run(self._reads, call, work, *args, **kwargs)
        finally:
            with self._lock:
                self._pending_reads -= 1

    async def write(self, call: Any, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        with self._lock:
            # One change runs; at most `write_queue` wait behind it.
            if self._pending_writes > self._write_queue:
                raise Overloaded(
                    f"{self._pending_writes - 1} catalog changes are already waiting; retry in a "
                    "few seconds"
                )
            self._pending_writes += 1
        try:
            return await self._run(self._writes, call, work, *args, **kwargs)
        finally:
            with self._lock:
                self._pending_writes -= 1

    @property
    def pending_writes(self) -> int:
        return self._pending_writes

    @property
    def pending_reads(self) -> int:
        return self._pending_reads

    async def _run(
        self,
        pool: ThreadPoolExecutor,
        call: Any,
        work: Callable[P, T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """Runs `work` on `pool` unless `call` (a gRPC servicer context, or None) is over
        by the time a worker takes it."""
        gone = threading.Event()
        deadline = None
        if call is not None:
            remaining = call.time_remaining()
            if remaining is not None:
                deadline = time.monotonic() + remaining
            call.add_done_callback(lambda _call: gone.set())

        def guarded() -> T:
            if gone.is_set():
                raise CallerGone("the caller went away before the work started")
            if deadline is not None and time.monotonic() >= deadline:
                raise CallerGone("the call's deadline passed before the work started")
            self._started()
            try:
                return work(*args, **kwargs)
            finally:
                self._finished()

        # The caller's context (its request id) goes with the work: what the work logs, the
        # audit record of a change included, carries the id of the call that asked for it.
        context = contextvars.copy_context()
        try:
            future = asyncio.get_running_loop().run_in_executor(pool, context.run, guarded)
        except RuntimeError as exc:  # the pool was shut down: the server is stopping
            raise NotReady("the server is stopping; retry on another replica") from exc
        return await future

    def _started(self) -> None:
        with self._lock:
            self._active += 1
            self._idle.clear()

    def _finished(self) -> None:
        with self._lock:
            self._active -= 1
            if not self._active:
                self._idle.set()

    async def drain(self, timeout: float) -> bool:
        """Drops queued jobs and waits up to `timeout` seconds for running ones; True when
        none is left running. A write cut short by exiting is safe: the store keeps the old
        or the new catalog whole."""
        for pool in (self._reads, self._writes):
            pool.shutdown(wait=False, cancel_futures=True)
        return await asyncio.to_thread(self._idle.wait, max(timeout, 0.0))
