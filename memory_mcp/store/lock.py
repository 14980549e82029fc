"""The cross-process store lock: every server, CLI run and web view sharing a store takes it per call.

Two locks, taken together, so that a process that cannot write `.index/` still excludes the others:

- `.index/write.lock`: on POSIX `flock` on that file, opened as `filelock` opens it (so a process of an older
  version, which takes it through `filelock`, and this one exclude each other); on Windows, and where `flock`
  is refused on that file (a file system without it), through `filelock` itself (its Windows lock, its soft
  lock), imported only then: a one-shot call does not pay ~10 ms of imports for a lock it takes with one
  system call; and
- on POSIX, `flock` on the store directory itself, opened read-only: it needs no write permission, so a
  process whose `.index/` is read-only (another account's index, a read-only mount) still takes the same
  lock as everyone else.

When the lock file cannot be opened (permissions, read-only file system) the directory lock alone is used;
when neither can be taken the call fails with a clear `StoreAccessError` instead of running unlocked.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from ..domain.errors import StoreAccessError

if TYPE_CHECKING:
    from filelock import FileLock

try:  # POSIX only; on Windows the lock file alone serialises writers
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

LOCK_TIMEOUT_S = 60.0
_POLL_S = 0.005


class StoreLock:
    """Reentrant (per process, per session) exclusive lock on one store. Callers serialise threads."""

    def __init__(self, root: Path, lock_path: Path, timeout: float = LOCK_TIMEOUT_S) -> None:
        self.root = root
        self.lock_path = lock_path
        self.timeout = timeout
        self._file_lock: FileLock | None = None  # filelock's, only where a plain flock cannot be used
        self._file_fd: int | None = None  # the lock file, held with flock (POSIX)
        self._flock_refused = False  # flock refused on the lock file once: filelock from then on
        self._depth = 0
        self._dir_fd: int | None = None
        self._holds_file_lock = False
        # why the lock file could not be used on the last acquire (None when it was)
        self.file_lock_problem: str | None = None

    def __enter__(self) -> StoreLock:
        self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()

    def acquire(self) -> None:
        if self._depth:
            self._depth += 1
            return
        deadline = time.monotonic() + self.timeout
        dir_problem = self._acquire_dir(deadline)
        try:
            self._acquire_file(deadline)
        except BaseException:
            self._release_dir()
            raise
        if not self._holds_file_lock and self._dir_fd is None:
            raise StoreAccessError(
                f"store: cannot take the store lock: {self.file_lock_problem}; and {dir_problem}. "
                "Nothing was read or written."
            )
        self._depth = 1

    def release(self) -> None:
        if self._depth == 0:
            return
        self._depth -= 1
        if self._depth:
            return
        try:
            if self._holds_file_lock:
                self._holds_file_lock = False
                fd, self._file_fd = self._file_fd, None
                if fd is not None:
                    os.close(fd)  # closing the only descriptor drops the flock; the file stays, as filelock leaves it
                elif self._file_lock is not None:
                    self._file_lock.release()
        finally:
            self._release_dir()

    # ------------------------------------------------------------ the two locks

    def _acquire_file(self, deadline: float) -> None:
        if fcntl is not None and not self._flock_refused and self._flock_file(deadline):
            return
        from filelock import FileLock
        from filelock import Timeout as FileLockTimeout

        if self._file_lock is None:
            self._file_lock = FileLock(str(self.lock_path), timeout=self.timeout, thread_local=False)
        try:
            self._file_lock.acquire(timeout=max(0.0, deadline - time.monotonic()))
        except FileLockTimeout:
            raise StoreAccessError(
                f"store: busy: another process held {self.lock_path} for {self.timeout:.0f} s; try again"
            ) from None
        except OSError as exc:
            # read-only .index/ or a lock file owned by another account: fall back to the directory lock
            self.file_lock_problem = f"{self.lock_path} is not usable ({exc.strerror or exc})"
            return
        self.file_lock_problem = None
        self._holds_file_lock = True

    def _flock_file(self, deadline: float) -> bool:
        """Take flock on the lock file (created if missing, as filelock creates it); False: flock is refused on
        it, or it cannot be opened (read-only `.index/`, another account's file, no `.index/` yet): filelock
        then takes over, and words a problem exactly as before."""
        flags = os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(self.lock_path, flags, 0o666)
        except OSError:
            return False
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise StoreAccessError(
                            f"store: busy: another process held {self.lock_path} for {self.timeout:.0f} s; try again"
                        ) from None
                    time.sleep(_POLL_S)
                except OSError:  # no flock on this file system: filelock's own fallback, from now on
                    os.close(fd)
                    self._flock_refused = True
                    return False
        except BaseException:
            os.close(fd)
            raise
        self._file_fd = fd
        self.file_lock_problem = None
        self._holds_file_lock = True
        return True

    def _acquire_dir(self, deadline: float) -> str | None:
        """Take flock on the store directory; returns why it could not, or None."""
        if fcntl is None:
            return "directory locks are not available on this platform"
        try:
            fd = os.open(self.root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError as exc:
            return f"the store directory cannot be opened ({exc.strerror})"
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise StoreAccessError(
                            f"store: busy: another process held the lock on {self.root} for {self.timeout:.0f} s; "
                            "try again"
                        ) from None
                    time.sleep(_POLL_S)
                except OSError as exc:  # e.g. a network file system without flock
                    os.close(fd)
                    return f"the store directory cannot be locked ({exc.strerror})"
        except BaseException:
            os.close(fd)
            raise
        self._dir_fd = fd
        return None

    def _release_dir(self) -> None:
        fd, self._dir_fd = self._dir_fd, None
        if fd is not None:
            os.close(fd)  # closing the only descriptor drops the flock
