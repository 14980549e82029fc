"""Searches in worker processes: what one process cannot do faster than one core, several do side by side.

A recall is Python work (planning, scoring, ranking) that holds the interpreter for its whole length, so the
calls of many clients of one HTTP server queue for a single core however many the machine has. A
`WorkerPool` runs such calls in a few worker processes instead, each with its own `MemoryService` on the
same stores, built by the factory it was given (the server's own settings). Nothing is shared but the
stores, and several processes on one store are what the store lock and the reconcile-first rule are made
for: each worker reconciles before it reads, a keyword recall reads a snapshot of the index without holding
the store lock (`StoreSession.reading`), and writes stay in the serving process.

Each worker has its own pipe, and the calling thread talks to an idle worker directly (send, then wait for
the answer), where `concurrent.futures`' process pool passes every call through two more threads of the
serving process (its queue manager and feeder). That was not measured to save CPU (3.5 vs 3.46 ms per call in
the serving process, on a busy machine); it keeps a call's path short, and a dead worker is seen by the very
call that used it. A freed worker goes to the caller that has waited longest (`_Handoff`), never to one that
came later: with 16 clients calling back to back, a free-for-all let some calls be overtaken again and again
(measured over HTTP: p95 ~135 ms against ~92 ms in arrival order, the same ~200 recalls/s).

A worker that dies (killed, out of memory) is replaced, and the call it had is answered by the serving
process itself, so a client never sees the difference. After `MAX_RESTARTS` workers that died young (within
`YOUNG_S` of their start: workers that cannot start) the pool gives up: every call then runs in the serving
process.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

# builds a worker's `MemoryService` (not named here: the service module imports this one); picklable, since
# workers are spawned and given it
ServiceFactory = Callable[[], Any]

MAX_RESTARTS = 3
MAX_DEFAULT_WORKERS = 4  # past a few, the serving process's own share of each call (HTTP, JSON) is the limit
YOUNG_S = 60.0
ORPHAN_POLL_S = 1.0
STOP_WAIT_S = 5.0


def default_workers() -> int:
    """Workers when none are asked for: one per CPU up to `MAX_DEFAULT_WORKERS`; none on a single CPU (a
    worker would only add its hand-over to every call)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return 0 if cpus < 2 else min(cpus, MAX_DEFAULT_WORKERS)


def _serve(conn: Any, make_service: ServiceFactory) -> None:
    """A worker's life: build the service, then answer (operation, arguments) until told to stop."""
    # Ctrl-C reaches the whole process group: the serving process stops its workers itself, without tracebacks
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_exit_when_orphaned, args=(os.getppid(),), name="orphan-watch", daemon=True).start()
    service = make_service()
    try:
        while True:
            try:
                call = conn.recv()
            except (EOFError, OSError):
                return  # the serving process is gone
            if call is None:
                return
            operation, kwargs = call
            try:
                answer: tuple[bool, Any] = (True, getattr(service, operation)(**kwargs))
            except Exception as exc:  # the caller re-raises it: a MemoryMcpError stays one
                answer = (False, exc)
            try:
                conn.send(answer)
            except Exception as exc:  # an answer or an error that does not pickle: say so, not hang
                conn.send((False, RuntimeError(f"worker could not return its answer: {exc}")))
    finally:
        service.close()


def _exit_when_orphaned(parent: int) -> None:
    # a serving process killed outright (SIGKILL, OOM) cannot stop its workers: each leaves on its own as soon
    # as it sees it has a new parent
    while os.getppid() == parent:
        time.sleep(ORPHAN_POLL_S)
    os._exit(0)


class _Worker:
    def __init__(self, context: Any, make_service: ServiceFactory) -> None:
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child, make_service), name="memory-mcp-worker")
        self.process.daemon = True  # a backstop: multiprocessing ends daemons when the serving process exits
        self.process.start()
        self.started = time.monotonic()
        child.close()

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except (OSError, ValueError):
            pass
        self.process.join(STOP_WAIT_S)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(STOP_WAIT_S)
        self.conn.close()


class WorkerPool:
    """`size` worker processes answering calls of the service by name (`run("recall", {...}, here)`)."""

    def __init__(self, make_service: ServiceFactory, size: int) -> None:
        if size < 1:
            raise ValueError("a worker pool needs at least one worker")
        import multiprocessing  # here: a one-shot CLI call never starts workers

        # spawn, not fork: the serving process holds SQLite connections, an inotify watch and threads
        self._context = multiprocessing.get_context("spawn")
        self._make_service = make_service
        self.size = size
        self.restarts = 0
        self._lock = threading.Lock()
        self._closed = False
        self._idle: list[_Worker] = []
        self._all: list[_Worker] = []  # started as calls need them (a server nobody recalls on spawns none)
        # callers waiting for a worker, oldest first: a freed worker goes to the oldest (`_give`), never to a
        # call that arrived later (a free-for-all let some calls be overtaken again and again: the p95)
        self._waiting: deque[_Handoff] = deque()

    @property
    def active(self) -> bool:
        return not self._closed and self.restarts <= MAX_RESTARTS

    def run(self, operation: str, kwargs: dict[str, Any], here: Callable[[], Any]) -> Any:
        """The answer of `operation(**kwargs)` from an idle worker (waiting for one); `here()` answers instead
        when the pool is given up, or when the worker died on this call (it is replaced)."""
        worker = self._take()
        if worker is None:
            return here()
        try:
            worker.conn.send((operation, kwargs))
            ok, value = worker.conn.recv()
        except (EOFError, OSError):
            self._replace(worker)
            return here()
        self._give(worker)
        if ok:
            return value
        raise value

    def _take(self) -> _Worker | None:
        """An idle worker, a new one while fewer than `size` run, else the next one freed once every caller that
        waited before this one has had its worker; None: the pool is given up or closed."""
        with self._lock:
            if not self.active:
                return None
            if self._idle:
                return self._idle.pop()
            if len(self._all) < self.size:
                worker = _Worker(self._context, self._make_service)
                self._all.append(worker)
                return worker
            handoff = _Handoff()
            self._waiting.append(handoff)
        return handoff.wait()

    def _give(self, worker: _Worker | None) -> None:
        """A freed worker to the oldest waiting caller, else back to the idle ones. None (a worker died): the
        oldest caller starts the worker that replaces it; once the pool is given up, every waiting caller
        answers its call itself."""
        with self._lock:
            if worker is None and not self.active:
                given_up, self._waiting = list(self._waiting), deque()
                for handoff in given_up:
                    handoff.give(None)
                return
            if not self._waiting:
                if worker is not None:
                    self._idle.append(worker)
                return
            if worker is None:
                worker = _Worker(self._context, self._make_service)
                self._all.append(worker)
            self._waiting.popleft().give(worker)

    def _replace(self, dead: _Worker) -> None:
        with self._lock:
            if time.monotonic() - dead.started < YOUNG_S:
                self.restarts += 1
            dead.process.join(0)
            dead.conn.close()
            if dead in self._all:  # not when the pool closed meanwhile
                self._all.remove(dead)
        self._give(None)  # a caller waiting for a worker starts the one that replaces it

    def close(self) -> None:
        with self._lock:
            self._closed = True
            workers, self._all, self._idle = self._all, [], []
        self._give(None)  # callers still waiting answer their calls themselves
        for worker in workers:
            worker.stop()


class _Handoff:
    """One waiting caller's gate: `give` hands it a worker (or None: answer the call yourself)."""

    def __init__(self) -> None:
        self._ready = threading.Event()
        self._worker: _Worker | None = None

    def give(self, worker: _Worker | None) -> None:
        self._worker = worker
        self._ready.set()

    def wait(self) -> _Worker | None:
        self._ready.wait()
        return self._worker
