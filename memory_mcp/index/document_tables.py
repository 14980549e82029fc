"""The documents tables: `doc_files` (the ledger of indexed documents) and `doc_chunks` with their two
full-text tables. Callers hold the transaction (documents are reconciled inside the canon's)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ..canon.files import now_iso
from ..domain.text import searchable

DOC_FTS_TABLES = ("fts_doc_word", "fts_doc_tri")


def doc_file_rows(conn: sqlite3.Connection) -> dict[str, sqlite3.Row]:
    """path → (path, label, mtime_ns, size, sha256, skipped) of every document the ledger knows."""
    return {r[0]: r for r in conn.execute("SELECT path, label, mtime_ns, size, sha256, skipped FROM doc_files")}


def has_doc_files(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM doc_files LIMIT 1").fetchone() is not None


def drop_doc_file(conn: sqlite3.Connection, path: str) -> None:
    conn.execute("DELETE FROM doc_files WHERE path = ?", (path,))
    drop_chunks(conn, path)


def touch_doc_file(conn: sqlite3.Connection, path: str, mtime_ns: int, size: int) -> None:
    """The content is unchanged: only the stat stamp moves."""
    conn.execute("UPDATE doc_files SET mtime_ns = ?, size = ? WHERE path = ?", (mtime_ns, size, path))


def put_chunk(
    conn: sqlite3.Connection, path: str, label: str, title: str, body: str, start_line: int, end_line: int, updated: str
) -> None:
    cur = conn.execute(
        "INSERT INTO doc_chunks (path, label, title, body, entities, start_line, end_line, updated) "
        "VALUES (?,?,?,?,?,?,?,?)",
        (path, label, title, body, label, start_line, end_line, updated),
    )
    for table in DOC_FTS_TABLES:  # names from the constant above, never from input
        conn.execute(
            f"INSERT INTO {table} (rowid, title, entities, body) VALUES (?,?,?,?)",
            (cur.lastrowid, searchable(title), searchable(label), searchable(body)),
        )


def record_doc_file(
    conn: sqlite3.Connection, path: str, label: str, mtime: int, size: int, sha: str, skipped: str | None
) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO doc_files (path, label, mtime_ns, size, sha256, skipped, indexed_at) "
        "VALUES (?,?,?,?,?,?,?)",
        (path, label, mtime, size, sha, skipped, now_iso()),
    )


def drop_chunks(conn: sqlite3.Connection, path: str) -> None:
    # the full-text tables are contentless (index/db.py FTS_TABLES): a row is deleted with the texts it was given
    rows = conn.execute("SELECT rowid, title, entities, body FROM doc_chunks WHERE path = ?", (path,)).fetchall()
    for rowid, title, label, body in rows:
        searched = (rowid, searchable(title), searchable(label), searchable(body))
        for table in DOC_FTS_TABLES:  # names from the constant above, never from input
            conn.execute(
                f"INSERT INTO {table} ({table}, rowid, title, entities, body) VALUES ('delete',?,?,?,?)", searched
            )
    conn.execute("DELETE FROM doc_chunks WHERE path = ?", (path,))


def skipped_documents(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """(path, why) of the documents the ledger skipped, by path."""
    return [
        (r[0], r[1])
        for r in conn.execute("SELECT path, skipped FROM doc_files WHERE skipped IS NOT NULL ORDER BY path")
    ]


def source_totals(conn: sqlite3.Connection, label: str) -> tuple[int, int, str | None, int | None]:
    """(files, bytes, last indexed, skipped files) of one source."""
    row = conn.execute(
        "SELECT count(*), coalesce(sum(size), 0), max(indexed_at), "
        "sum(CASE WHEN skipped IS NOT NULL THEN 1 ELSE 0 END) FROM doc_files WHERE label = ?",
        (label,),
    ).fetchone()
    return row[0], row[1], row[2], row[3]


def indexed_label(conn: sqlite3.Connection, path: str) -> str | None:
    """The source label of the indexed (not skipped) document at this path."""
    row = conn.execute("SELECT label FROM doc_files WHERE path = ? AND skipped IS NULL", (path,)).fetchone()
    return row[0] if row else None


def chunk_rows(conn: sqlite3.Connection, rowids: Sequence[int]) -> list[sqlite3.Row]:
    """(rowid, path, label, title, body, start_line, end_line, updated) of these chunks."""
    out: list[sqlite3.Row] = []
    for start in range(0, len(rowids), 500):
        part = list(rowids[start : start + 500])
        sql = (
            "SELECT rowid, path, label, title, body, start_line, end_line, updated FROM doc_chunks "
            f"WHERE rowid IN ({','.join('?' * len(part))})"
        )
        out += conn.execute(sql, part).fetchall()
    return out
