"""The files ledger: one row per canon file seen, parseable or not (the stat gate and the hash ledger).

Callers hold the transaction (`db.atomic`). The no-change pass reads the whole ledger on every tool call,
so its reads build plain tuples, not `sqlite3.Row` objects.
"""

from __future__ import annotations

import sqlite3
from typing import NamedTuple

from ..domain.answers import Unparseable
from .db import drop_memory_at

_COLUMNS = "path, mtime_ns, size, sha256, memory_id, error, inode"


class FileRow(NamedTuple):
    """One ledger row. A NamedTuple: the no-change pass loads one per file (3x cheaper than a dataclass)."""

    path: str
    mtime_ns: int
    size: int
    sha256: str
    memory_id: str | None
    error: str | None
    inode: int = 0


def file_rows(conn: sqlite3.Connection) -> dict[str, FileRow]:
    cur = conn.cursor()
    cur.row_factory = None  # plain tuples: sqlite3.Row objects would double the cost of this hot loop
    rows = cur.execute(f"SELECT {_COLUMNS} FROM files")
    return {r[0]: FileRow._make(r) for r in rows}


def file_rows_at(conn: sqlite3.Connection, paths: list[str]) -> dict[str, FileRow]:
    out: dict[str, FileRow] = {}
    cur = conn.cursor()
    cur.row_factory = None
    for start in range(0, len(paths), 500):
        chunk = paths[start : start + 500]
        sql = f"SELECT {_COLUMNS} FROM files WHERE path IN ({','.join('?' * len(chunk))})"
        out.update((r[0], FileRow._make(r)) for r in cur.execute(sql, chunk))
    return out


def put_file(conn: sqlite3.Connection, row: FileRow) -> None:
    _written(conn, row.path)
    conn.execute(f"INSERT OR REPLACE INTO files ({_COLUMNS}) VALUES (?,?,?,?,?,?,?)", row)


def drop_file(conn: sqlite3.Connection, path: str) -> None:
    _written(conn, path)
    conn.execute("DELETE FROM files WHERE path = ?", (path,))
    drop_memory_at(conn, path)


def restamp_file(conn: sqlite3.Connection, path: str, mtime_ns: int, size: int, inode: int) -> None:
    """The content hashed the same: only the stat stamp moves."""
    _written(conn, path)
    conn.execute("UPDATE files SET mtime_ns = ?, size = ?, inode = ? WHERE path = ?", (mtime_ns, size, inode, path))


def forget_stamps(conn: sqlite3.Connection) -> None:
    """Make every file look changed, so the next pass hashes and re-reads each one."""
    _written(conn, EVERY_FILE)
    conn.execute("UPDATE files SET mtime_ns = -1, sha256 = ''")


# The scan digest: a full pass that found nothing to do records a digest of its scan, so the next pass with
# the same scan can skip loading and comparing the ledger. Every ledger write above forgets it first (in the
# writer's transaction); the row count and the highest rowid recorded beside it also catch a row added,
# replaced or dropped by code that does not know the digest (a tool, a test, a bug).


# The ledger log: every write above also appends its path (in the writer's transaction), so that a process
# that finds the index committed by another process since its last pass knows which ledger rows that process
# wrote (another server's remember) and re-checks those files with the ones its change watch named, instead
# of a full pass. Only the last LOG_KEPT entries are kept: a process whose last pass is older than the oldest
# entry cannot tell, and does a full pass.
EVERY_FILE = ""
LOG_KEPT = 4096


def _written(conn: sqlite3.Connection, path: str) -> None:
    _forget_scan_digest(conn)
    seq = conn.execute("INSERT INTO ledger_log (path) VALUES (?)", (path,)).lastrowid
    if seq and seq % 1024 == 0:
        conn.execute("DELETE FROM ledger_log WHERE seq <= ?", (seq - LOG_KEPT,))


def log_position(conn: sqlite3.Connection) -> int:
    """The last ledger write's sequence number (0 before any)."""
    return conn.execute("SELECT coalesce(max(seq), 0) FROM ledger_log").fetchone()[0]


def written_since(conn: sqlite3.Connection, position: int) -> set[str] | None:
    """The paths written to the ledger after `position`, or None when that cannot be told (entries trimmed,
    or a write of every file)."""
    oldest, newest = conn.execute("SELECT min(seq), max(seq) FROM ledger_log").fetchone()
    if newest is None or newest <= position:
        return set()
    if oldest > position + 1:
        return None
    paths = {r[0] for r in conn.execute("SELECT path FROM ledger_log WHERE seq > ?", (position,))}
    return None if EVERY_FILE in paths else paths


def _forget_scan_digest(conn: sqlite3.Connection) -> None:
    # a plain statement, not a trigger: a statement with a trigger opens a savepoint, and FTS5 flushes its
    # pending rows at every savepoint (one segment per file, 40% slower cold index)
    conn.execute("DELETE FROM meta WHERE key = 'scan_digest'")


def shape(conn: sqlite3.Connection) -> str:
    """The ledger's row count and top rowid: a row added, replaced or dropped changes it."""
    # two subqueries: each alone is answered from the b-tree without a scan, together they would scan
    count, top = conn.execute("SELECT (SELECT count(*) FROM files), (SELECT max(rowid) FROM files)").fetchone()
    return f"{count}:{top}"


def scan_digest_holds(conn: sqlite3.Connection, digest: str) -> bool:
    """Whether the last full pass found nothing to do with a scan of this digest, and the ledger is as it left it."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'scan_digest'").fetchone()
    return row is not None and row[0] == f"{digest} {shape(conn)}"


def record_scan_digest(conn: sqlite3.Connection, digest: str) -> None:
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('scan_digest', ?)", (f"{digest} {shape(conn)}",))


def duplicate_rows(conn: sqlite3.Connection) -> list[FileRow]:
    """The files recorded as holding an id another file already has, by path."""
    cur = conn.cursor()
    cur.row_factory = None
    rows = cur.execute(f"SELECT {_COLUMNS} FROM files WHERE error LIKE 'duplicate id%' ORDER BY path")
    return [FileRow._make(r) for r in rows]


def id_holders(conn: sqlite3.Connection) -> dict[str, str]:
    """memory id -> the path of the file the index holds it at (duplicates left out)."""
    rows = conn.execute("SELECT memory_id, path FROM files WHERE memory_id IS NOT NULL AND error IS NULL")
    return dict(rows.fetchall())


def has_duplicate_ids(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM files WHERE error LIKE 'duplicate id%' LIMIT 1").fetchone() is not None


def has_racy_stamp(conn: sqlite3.Connection) -> bool:
    """A parsed file recorded as "racy" (mtime 0: read within the mtime tick of a write)."""
    return conn.execute("SELECT 1 FROM files WHERE mtime_ns <= 0 AND error IS NULL LIMIT 1").fetchone() is not None


def file_count(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT count(*) FROM files").fetchone()[0]


def unparseable_count(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT count(*) FROM files WHERE error IS NOT NULL").fetchone()[0]


def unparseable_files(conn: sqlite3.Connection) -> list[Unparseable]:
    rows = conn.execute("SELECT path, error FROM files WHERE error IS NOT NULL ORDER BY path")
    return [Unparseable(path=r[0], reason=r[1]) for r in rows]
