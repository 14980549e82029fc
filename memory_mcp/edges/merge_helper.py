"""The warm merge helper: one process that merges memory files for git's driver client, so a `git pull`
merging many files pays the imports once instead of once per file.

The first driver process of a merge (`merge-driver --helper SOCKET`, started by `edges/merge_client.py` when
no helper answered) merges its file, gives git its exit code, and forks this helper, which serves the next
files on the socket and leaves after `IDLE_SECONDS` without a request. It answers
only the user it runs as (the socket's folder is the user's alone; on Linux the peer's uid is checked too),
holds a lock so that one helper serves an install, and stops serving — answering "stale", so the client runs
the full driver — as soon as a module it loaded changed on disk (an upgrade mid-pull must not merge with
half-old code). Requests are NUL-separated fields: `merge CWD BASE OURS THEIRS PATH`, `status`, `stop`.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import io
import os
import socket
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .merge_client import ask

IDLE_SECONDS = 20.0  # long enough to span one pull's merges, short enough to leave nothing behind
MAX_REQUEST_BYTES = 1 << 16
# what git set for the driver of one repository: the helper serves merges from any repository after it
REPOSITORY_VARIABLES = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX", "GIT_REFLOG_ACTION")


# the driver's merge of one file: git's %O %A %B %P, the work tree's top -> exit code (message on stderr)
MergeFile = Callable[[list[str], Path], int]


@dataclass
class HelperState:
    merge_file: MergeFile
    code: list[tuple[str, int, int]]  # each loaded memory_mcp module file: path, mtime_ns, size
    served: int = 0
    stopping: bool = False


def stay_as_helper(sock_path: str, merge_file: MergeFile) -> None:
    """Fork a helper for `sock_path`; the calling process returns at once (and exits with its own code)."""
    try:
        pid = os.fork()
    except OSError:
        return  # no helper this time: the next file runs the full driver again
    if pid:
        return
    try:
        _detach()
        serve(sock_path, merge_file)
    finally:
        os._exit(0)


def _detach() -> None:
    """Leave git's session, pipes and working directory: git waits for the driver, never for its helper."""
    os.setsid()
    os.chdir("/")
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, 65536)
    sys.stdout = io.StringIO()  # any stray print lands nowhere rather than on a closed pipe
    sys.stderr = io.StringIO()
    for name in REPOSITORY_VARIABLES:
        os.environ.pop(name, None)
    gc.enable()  # the driver turned it off for its short life; this one lives for a while


def serve(sock_path: str, merge_file: MergeFile) -> None:
    """Serve merges on `sock_path` until idle or stopped; return at once when another helper holds the lock."""
    lock = os.open(_lock_path(sock_path), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock)
        return
    os.ftruncate(lock, 0)
    os.write(lock, f"{os.getpid()}\n".encode())
    with contextlib.suppress(FileNotFoundError):
        os.unlink(sock_path)  # a socket left by a helper that was killed: the lock says nobody serves it
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    mask = os.umask(0o077)
    try:
        listener.bind(sock_path)
    finally:
        os.umask(mask)
    listener.listen(64)
    listener.settimeout(IDLE_SECONDS)
    state = HelperState(merge_file, _code_stamp())
    try:
        while not state.stopping:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                break
            _answer(conn, state)
        # no new client can connect once the name is gone; those already queued are answered, never dropped
        os.unlink(sock_path)
        listener.setblocking(False)
        while True:
            try:
                conn, _ = listener.accept()
            except BlockingIOError:
                break
            conn.setblocking(True)
            _answer(conn, state)
    finally:
        listener.close()
        os.close(lock)


def _answer(conn: socket.socket, state: HelperState) -> None:
    with conn:
        conn.settimeout(30.0)
        try:
            if not _same_user(conn):
                return
            fields = _read(conn).decode("utf-8", "surrogateescape").split("\0")
            conn.sendall("\0".join(_reply(fields, state)).encode("utf-8", "surrogateescape"))
        except OSError:
            return  # the client went away: it reports that itself


def _reply(fields: list[str], state: HelperState) -> list[str]:
    kind = fields[0]
    if kind == "status":
        return ["ok", str(state.served), str(os.getpid())]
    if kind == "stop":
        state.stopping = True
        return ["stopped"]
    if kind != "merge" or len(fields) != 6:
        return ["2", f"memory-mcp merge helper: not a request: {kind[:40]!r}\n"]
    if _code_stamp([path for path, _, _ in state.code]) != state.code:
        state.stopping = True  # memory-mcp changed on disk: the next driver process starts from the new code
        return ["stale"]
    errors = io.StringIO()
    with contextlib.redirect_stderr(errors):
        try:
            code = state.merge_file(fields[2:], Path(fields[1]))
        except Exception as exc:  # merge_file catches its own; this is the helper's last guard
            print(f"memory-mcp merge-driver: {fields[5]}: {type(exc).__name__}: {exc}", file=sys.stderr)
            code = 1
    state.served += 1
    return [str(code), errors.getvalue()]


def _read(conn: socket.socket) -> bytes:
    chunks, size = [], 0
    while chunk := conn.recv(65536):
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_REQUEST_BYTES:
            raise OSError("request too large")
    return b"".join(chunks)


def _same_user(conn: socket.socket) -> bool:
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return True  # no peer credentials here: the folder only the user can enter is the guard
    _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    return uid == os.getuid()


def _code_stamp(paths: list[str] | None = None) -> list[tuple[str, int, int]]:
    if paths is None:
        paths = sorted(
            str(module.__file__)
            for name, module in list(sys.modules.items())
            if name.split(".")[0] == "memory_mcp" and getattr(module, "__file__", None)
        )
    stamp = []
    for path in paths:
        try:
            st = os.stat(path)
            stamp.append((path, st.st_mtime_ns, st.st_size))
        except OSError:
            stamp.append((path, -1, -1))
    return stamp


def _lock_path(sock_path: str) -> str:
    return sock_path.removesuffix(".sock") + ".lock"


def stop(sock_path: str, wait_seconds: float = 10.0) -> bool:
    """Ask the helper on `sock_path` to stop and wait until it let go of its lock; True when one was running."""
    try:
        answered = ask(sock_path, ["stop"], timeout=wait_seconds) is not None
    except OSError:
        answered = False
    lock_file = _lock_path(sock_path)
    if not os.path.exists(lock_file):
        return answered
    lock = os.open(lock_file, os.O_RDWR)
    deadline = time.monotonic() + wait_seconds
    try:
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # granted once the helper process has exited
                return answered
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the merge helper on {sock_path} did not stop") from None
                time.sleep(0.02)
    finally:
        os.close(lock)
