"""What git runs per merged memory file: `python -I -S <this file> %O %A %B %P` (`store/sync.driver_command`).

A driver process that imports the canon, ruamel.yaml and git's line merge costs ~70 ms per file, most of it
imports; a plain `git pull` merging a hundred memories waited seconds for them. So this file imports only the
standard library's socket and os (started with `-I -S`: not even `site`), hands the merge to a warm helper over
a Unix socket, and prints its answer: ~15 ms per file. With no helper alive it becomes the full driver
(`python -P -m memory_mcp merge-driver --helper SOCKET ...`, `edges/merge_driver.py`), which merges this
file and then stays as the helper for the next files, leaving after a few idle seconds.

The helper is the user's own process behind a socket in a directory only the user can enter; a directory
that is not the user's, or open to others, is never used (the full driver runs instead). Any doubt — no
helper, a helper started from other code, a socket path too long — falls back to the full driver, so the
merge itself never depends on the helper.
"""

from __future__ import annotations

import os
import sys
import zlib

try:  # the C module under `socket`: importing `socket` itself builds its enums, ~8 ms of this ~10 ms process
    import _socket as socket
except ImportError:  # pragma: no cover - an interpreter without it
    import socket  # type: ignore[no-redef]

# a Unix socket path has ~104-108 bytes (platform); a longer one means no helper, not an error
MAX_SOCKET_PATH = 100
EXIT_INTERNAL = 1


def runtime_dir() -> str:
    """Where helpers' sockets live: $XDG_RUNTIME_DIR/memory-mcp, else a per-user folder in the temporary
    directory."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg:
        return os.path.join(xdg, "memory-mcp")
    return os.path.join(os.environ.get("TMPDIR") or "/tmp", f"memory-mcp-{os.getuid()}")


def private_dir(path: str) -> bool:
    """The directory exists (made here if not), is a real directory owned by this user, and nobody else may
    enter it: only then is a socket in it the user's own."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return False
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (st.st_mode & 0o170000) == 0o040000 and st.st_uid == os.getuid() and not st.st_mode & 0o077


def helper_socket() -> str | None:
    """This install's helper socket (one per interpreter and copy of memory-mcp), or None when a helper
    cannot be used here (no Unix sockets or fork, an unsafe directory)."""
    if not hasattr(socket, "AF_UNIX") or not hasattr(os, "fork"):
        return None
    folder = runtime_dir()
    if not private_dir(folder):
        return None
    key = zlib.crc32(f"{sys.executable}\0{os.path.abspath(__file__)}".encode())
    path = os.path.join(folder, f"merge-{key:08x}.sock")
    return path if len(path.encode()) <= MAX_SOCKET_PATH else None


def ask(path: str, fields: list[str], timeout: float = 120.0) -> list[str] | None:
    """Send one request (fields joined by NUL) and return the answer's fields; None when no helper listens.
    Raises OSError when the helper took the request and gave no answer."""
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError:
        return None
    try:
        conn.settimeout(timeout)
        try:
            conn.connect(path)
        except OSError:  # no socket, a stale one, or one not ours to use: no helper
            return None
        conn.sendall("\0".join(fields).encode("utf-8", "surrogateescape"))
        conn.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    finally:
        conn.close()
    if not chunks:
        raise OSError("the merge helper closed the connection without an answer")
    return b"".join(chunks).decode("utf-8", "surrogateescape").split("\0")


def main(argv: list[str]) -> int:
    sock = helper_socket()
    if sock is not None and len(argv) == 4:
        try:
            answer = ask(sock, ["merge", os.getcwd(), *argv])
        except OSError as exc:
            # it may have written part of the result: git must see a failed merge (ours in place), not a re-run
            print(f"memory-mcp merge-driver: {argv[3]}: the merge helper failed: {exc}", file=sys.stderr)
            return EXIT_INTERNAL
        if answer is not None and answer[0] != "stale":
            sys.stderr.write(answer[1] if len(answer) > 1 else "")
            return int(answer[0]) if answer[0].isdigit() else EXIT_INTERNAL
    helper = ["--helper", sock] if sock is not None else []
    # no helper (or one started from code since replaced): this process becomes the full driver
    os.execv(sys.executable, [sys.executable, "-P", "-m", "memory_mcp", "merge-driver", *helper, *argv])
    return EXIT_INTERNAL  # not reached


if __name__ == "__main__":
    sys.stderr.flush()
    code = main(sys.argv[1:])
    sys.stderr.flush()
    os._exit(code)
