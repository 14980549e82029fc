"""The per-store thread lock: mutual exclusion, reentrancy, and turns given in arrival order."""

from __future__ import annotations

import threading
import time

import pytest

from memory_mcp.store.fair_lock import FairLock


def _wait_until(condition, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.001)


def test_waiting_threads_get_the_lock_in_arrival_order() -> None:
    lock = FairLock()
    order: list[int] = []
    lock.acquire()
    threads = []
    for n in range(8):
        t = threading.Thread(target=lambda n=n: (lock.acquire(), order.append(n), lock.release()))
        t.start()
        threads.append(t)
        _wait_until(lambda n=n: lock.waiting == n + 1)  # queued before the next one starts
    # a thread arriving now, while the lock is being handed over, must not overtake the queue
    lock.release()
    lock.acquire()
    order.append(-1)
    lock.release()
    for t in threads:
        t.join()
    assert order == [0, 1, 2, 3, 4, 5, 6, 7, -1]
    assert lock.waiting == 0


def test_it_excludes_other_threads_and_is_reentrant() -> None:
    lock = FairLock()
    inside = 0
    most = 0
    count = 0

    def work() -> None:
        nonlocal inside, most, count
        for _ in range(200):
            with lock:
                with lock:  # the same thread again: no deadlock
                    inside += 1
                    most = max(most, inside)
                    count += 1
                    inside -= 1

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (most, count) == (1, 1600)
    with lock:  # free again afterwards
        pass


def test_only_the_holder_can_release() -> None:
    lock = FairLock()
    with pytest.raises(RuntimeError, match="does not hold it"):
        lock.release()
    lock.acquire()
    errors: list[Exception] = []

    def other() -> None:
        try:
            lock.release()
        except RuntimeError as exc:
            errors.append(exc)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert len(errors) == 1
    lock.release()
