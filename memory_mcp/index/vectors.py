"""The `vectors` table: embeddings kept in the index by content hash and provider, and cosine over them.

Vectors are keyed by the memory's content hash (`memories.norm_hash`) and the provider's name, so an
edit re-embeds one memory and a rebuild re-embeds nothing that did not change.
"""

from __future__ import annotations

import math
import operator
import sqlite3
import sys
from array import array
from collections.abc import Callable, Sequence

VECTORS_SCHEMA = """CREATE TABLE IF NOT EXISTS vectors (
    content_sha TEXT NOT NULL,   -- memories.norm_hash: the same text has the same vector
    provider TEXT NOT NULL,      -- provider name incl. model: vectors of two models never mix
    dim INTEGER NOT NULL,
    vec BLOB NOT NULL,           -- float32, little-endian, L2-normalised
    PRIMARY KEY (content_sha, provider)
) WITHOUT ROWID"""


def pack(vec: Sequence[float]) -> bytes:
    """L2-normalised float32, little-endian (so cosine is a dot product and the file is portable)."""
    norm = math.sqrt(sum(x * x for x in vec)) or 1.0
    a = array("f", (x / norm for x in vec))
    if sys.byteorder == "big":
        a.byteswap()
    return a.tobytes()


def unpack(blob: bytes) -> array:
    a = array("f")
    a.frombytes(blob)
    if sys.byteorder == "big":
        a.byteswap()
    return a


def ensure_table(conn: sqlite3.Connection) -> None:
    conn.execute(VECTORS_SCHEMA)


def has_table(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'vectors'").fetchone() is not None


def export_vectors(conn: sqlite3.Connection) -> list[tuple[str, str, int, bytes]]:
    """Every stored vector, for carrying over a rebuild (empty when the table is absent or unreadable)."""
    try:
        if not has_table(conn):
            return []
        return [tuple(r) for r in conn.execute("SELECT content_sha, provider, dim, vec FROM vectors")]
    except sqlite3.DatabaseError:
        return []


def import_vectors(conn: sqlite3.Connection, rows: list[tuple[str, str, int, bytes]]) -> int:
    """Put carried vectors back, only those whose content still exists (the rest would never match)."""
    if not rows:
        return 0
    ensure_table(conn)
    live = {r[0] for r in conn.execute("SELECT norm_hash FROM memories")}
    keep = [r for r in rows if r[0] in live]
    conn.executemany("INSERT OR REPLACE INTO vectors (content_sha, provider, dim, vec) VALUES (?,?,?,?)", keep)
    return len(keep)


def embed_text(title: str, body: str) -> str:
    return f"{title}\n{body}".strip()


def pending(conn: sqlite3.Connection, provider: str, limit: int | None = None) -> list[tuple[str, str]]:
    """(content hash, text) of memories without a vector from this provider, newest first."""
    ensure_table(conn)
    sql = (
        "SELECT m.norm_hash, m.title, m.body FROM memories m LEFT JOIN vectors v "
        "ON v.content_sha = m.norm_hash AND v.provider = ? WHERE v.content_sha IS NULL "
        "GROUP BY m.norm_hash ORDER BY max(m.updated) DESC"
    )
    params: list[object] = [provider]
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    return [(r[0], embed_text(r[1], r[2])) for r in conn.execute(sql, params)]


def pending_count(conn: sqlite3.Connection, provider: str) -> int:
    ensure_table(conn)
    row = conn.execute(
        "SELECT count(DISTINCT m.norm_hash) FROM memories m LEFT JOIN vectors v "
        "ON v.content_sha = m.norm_hash AND v.provider = ? WHERE v.content_sha IS NULL",
        (provider,),
    ).fetchone()
    return int(row[0])


def store_vectors(conn: sqlite3.Connection, provider: str, items: list[tuple[str, list[float]]]) -> None:
    ensure_table(conn)
    conn.executemany(
        "INSERT OR REPLACE INTO vectors (content_sha, provider, dim, vec) VALUES (?,?,?,?)",
        [(sha, provider, len(vec), pack(vec)) for sha, vec in items],
    )


def prune(conn: sqlite3.Connection) -> int:
    """Drop vectors of text no memory has any more (edited or purged memories)."""
    ensure_table(conn)
    cur = conn.execute("DELETE FROM vectors WHERE content_sha NOT IN (SELECT norm_hash FROM memories)")
    return cur.rowcount


def cosine_rank(
    conn: sqlite3.Connection,
    provider: str,
    query_vec: Sequence[float],
    where: str = "",
    params: Sequence[object] = (),
    weight: Callable[[str], float] | None = None,
    depth: int = 100,
) -> list[tuple[int, str, float, float]]:
    """(memory rowid, memory id, cosine, weighted cosine) of the memories matching `where` (a Filters clause over alias m), best first.

    `weight(state)` scales the cosine for ordering (archived below active); both values are returned.
    """
    ensure_table(conn)
    q = unpack(pack(query_vec))
    rows = conn.execute(
        "SELECT m.rowid, m.state, v.vec, m.id FROM memories m JOIN vectors v "
        f"ON v.content_sha = m.norm_hash AND v.provider = ? AND v.dim = ? WHERE 1 = 1{where}",
        [provider, len(q), *params],
    ).fetchall()
    if not rows:
        return []
    sims = _dots([r[2] for r in rows], q)
    # a cosine of 0 or less is no evidence at all: such memories are not ranked
    pairs = [(r, s) for r, s in zip(rows, sims, strict=True) if s > 0]
    scored = [(r[0], r[3], s, s * (weight(r[1]) if weight else 1.0)) for r, s in pairs]
    scored.sort(key=lambda x: (-x[3], x[0]))
    return scored[:depth]


def _dots(blobs: list[bytes], q: array) -> list[float]:
    try:
        import numpy as np
    except ImportError:  # the Ollama provider needs no numpy: plain Python is fine for small stores
        return [sum(a * b for a, b in zip(unpack(blob), q, strict=True)) for blob in blobs]
    mat = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), len(q))
    return (mat @ np.frombuffer(q.tobytes(), dtype=np.float32)).tolist()


def cosine(a: bytes | array, b: bytes | array) -> float:
    """Cosine of two packed (normalised) vectors: their dot product."""
    x = unpack(a) if isinstance(a, bytes) else a
    y = unpack(b) if isinstance(b, bytes) else b
    return float(sum(map(operator.mul, x, y)))


def vectors_for(conn: sqlite3.Connection, provider: str, hashes: list[str]) -> dict[str, bytes]:
    if not hashes or not has_table(conn):
        return {}
    marks = ",".join("?" * len(hashes))
    rows = conn.execute(
        f"SELECT content_sha, vec FROM vectors WHERE provider = ? AND content_sha IN ({marks})", [provider, *hashes]
    )
    return {r[0]: r[1] for r in rows}


def memory_vectors_signature(conn: sqlite3.Connection, provider: str) -> tuple[int, int, int]:
    """(this provider's vectors, memories, the highest memory rowid): changes when a vector or a memory is added or
    removed, so a copy of `memory_vectors` kept in memory knows when to read them again."""
    ensure_table(conn)
    vectors = conn.execute("SELECT count(*) FROM vectors WHERE provider = ?", (provider,)).fetchone()[0]
    count, top = conn.execute("SELECT count(*), coalesce(max(rowid), 0) FROM memories").fetchone()
    return int(vectors), int(count), int(top)


def memory_vectors(conn: sqlite3.Connection, provider: str, dim: int) -> list[tuple[int, bytes]]:
    """(memory rowid, packed vector) of every memory this provider has embedded."""
    ensure_table(conn)
    return [
        (r[0], r[1])
        for r in conn.execute(
            "SELECT m.rowid, v.vec FROM memories m JOIN vectors v "
            "ON v.content_sha = m.norm_hash AND v.provider = ? AND v.dim = ?",
            (provider, dim),
        )
    ]


def database_file(conn: sqlite3.Connection) -> str:
    """The file of the connection's main database ('' in memory): what a cache of its contents is keyed by."""
    row = conn.execute("PRAGMA database_list").fetchone()
    return str(row[2] or "") if row else ""
