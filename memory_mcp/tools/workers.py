"""Searches in worker processes: what one process cannot do faster than one core, several do side by side.

A recall is Python work (planning, scoring, ranking) that holds the interpreter for its whole length, so the
calls of many clients of one HTTP server queue for a single core however many the machine has. A
`WorkerPool` runs such calls in a few worker processes instead, each with its own `MemoryService` on the
same stores, built by the factory it was given (the server's own settings). Nothing is shared but the
stores, and several processes on one store are what the store lock and the reconcile-first rule are made
for: each worker reconciles before it reads, a keyword recall reads a snapshot of the index without holding
the store lock (`StoreSession.reading`), and writes stay in the serving process.

A worker that dies (killed, out of memory) breaks the pool: the call is answered by the serving process
itself and the pool is started again for the next one, so a client never sees the difference. A pool that
keeps breaking (workers that cannot start) is given up after `MAX_RESTARTS`: every call then runs here.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

# builds a worker's `MemoryService` (not named here: the service module imports this one); picklable, since
# workers are spawned and given it
ServiceFactory = Callable[[], Any]

MAX_RESTARTS = 3
ORPHAN_POLL_S = 1.0
MAX_DEFAULT_WORKERS = 4  # past a few, the serving process's own share of each call (HTTP, JSON) is the limit
_service: Any = None  # in a worker: its own service, built once when the worker starts


def default_workers() -> int:
    """Workers when none are asked for: one per CPU up to `MAX_DEFAULT_WORKERS`; none on a single CPU (a
    worker would only add its hand-over to every call)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return 0 if cpus < 2 else min(cpus, MAX_DEFAULT_WORKERS)


def _start_worker(make_service: ServiceFactory) -> None:
    global _service
    # Ctrl-C reaches the whole process group: the serving process stops its workers itself, without tracebacks
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_exit_when_orphaned, args=(os.getppid(),), name="orphan-watch", daemon=True).start()
    _service = make_service()


def _exit_when_orphaned(parent: int) -> None:
    # a serving process killed outright (SIGKILL, OOM) cannot stop its workers, and they would wait forever
    # on a queue their siblings keep open: each leaves as soon as it sees it has a new parent
    while os.getppid() == parent:
        time.sleep(ORPHAN_POLL_S)
    os._exit(0)


def _call(operation: str, kwargs: dict[str, Any]) -> Any:
    assert _service is not None, "not a worker process"
    return getattr(_service, operation)(**kwargs)


class WorkerPool:
    """`size` worker processes answering calls of the service by name (`run("recall", {...})`)."""

    def __init__(self, make_service: ServiceFactory, size: int) -> None:
        if size < 1:
            raise ValueError("a worker pool needs at least one worker")
        self.size = size
        self._make_service = make_service
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = self._start()
        self.restarts = 0

    def _start(self) -> ProcessPoolExecutor:
        import multiprocessing  # imported here: a one-shot CLI call never starts workers
        from concurrent.futures import ProcessPoolExecutor

        # spawn, not fork: the serving process holds SQLite connections, an inotify watch and threads
        context = multiprocessing.get_context("spawn")
        return ProcessPoolExecutor(self.size, context, initializer=_start_worker, initargs=(self._make_service,))

    def run(self, operation: str, kwargs: dict[str, Any], here: Callable[[], Any]) -> Any:
        """The answer of `operation(**kwargs)` from a worker; `here()` answers instead when the pool broke."""
        with self._lock:
            pool = self._pool
        if pool is None:
            return here()
        from concurrent.futures.process import BrokenProcessPool

        try:
            return pool.submit(_call, operation, kwargs).result()
        except BrokenProcessPool:
            with self._lock:
                if self._pool is pool:  # the first caller to see it starts a new pool; the others reuse that
                    pool.shutdown(wait=False, cancel_futures=True)
                    self.restarts += 1
                    self._pool = self._start() if self.restarts <= MAX_RESTARTS else None
            return here()

    @property
    def active(self) -> bool:
        return self._pool is not None

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
