"""The derived index: one SQLite file, disposable, rebuilt from canon whenever it is missing or wrong.

Plain SQL, one function per operation. Nothing here decides anything about memories: the
reconciler and the service call these to mirror the canon.
"""

from __future__ import annotations

import json
import os
import sqlite3
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from ..canon.files import norm_hash, now_iso
from ..domain.fields import COLUMNS
from ..domain.memory import Memory, OptionalValues, first_paragraph
from ..domain.text import FTS_TRIGRAM_TOKENIZER, FTS_WORD_TOKENIZER, searchable

SCHEMA_VERSION = 9

# The full-text tables hold no copy of the text (version 9): contentless FTS5 tables (`content=''`) over the one copy
# in `memories` (or `doc_chunks`). What was inserted is derived again from that copy to delete a row
# (`searched_texts`), so the texts a delete hands FTS5 must be the ones it was given: the index records the Unicode
# and SQLite versions that made them (TEXT_VERSIONS) and is rebuilt when either changes.
FTS_TABLES = {
    "fts_word": f"""CREATE VIRTUAL TABLE fts_word USING fts5 (
    title, entities, body,
    tokenize = "{FTS_WORD_TOKENIZER}", content = ''
)""",
    "fts_tri": f"CREATE VIRTUAL TABLE fts_tri USING fts5 (title, entities, body, tokenize = '{FTS_TRIGRAM_TOKENIZER}', "
    "content = '')",
    "fts_doc_word": f"""CREATE VIRTUAL TABLE fts_doc_word USING fts5 (
    title, entities, body,
    tokenize = "{FTS_WORD_TOKENIZER}", content = ''
)""",
    "fts_doc_tri": f"CREATE VIRTUAL TABLE fts_doc_tri USING fts5 (title, entities, body, "
    f"tokenize = '{FTS_TRIGRAM_TOKENIZER}', content = '')",
}
TEXT_VERSIONS = f"unicode {unicodedata.unidata_version}, sqlite {sqlite3.sqlite_version}"

_OPTIONAL_COLUMNS = "".join(f"\n    {name} TEXT," for name in COLUMNS)  # the field table's plain columns
SCHEMA = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
-- one row per canon file seen, parseable or not: the stat gate and the hash ledger
CREATE TABLE files (
    path TEXT PRIMARY KEY,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    memory_id TEXT,
    error TEXT,
    inode INTEGER NOT NULL DEFAULT 0  -- a rename onto a same-size, same-mtime path is still a change
);
CREATE INDEX files_with_errors ON files (path) WHERE error IS NOT NULL;  -- listed in every answer
CREATE TABLE memories (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    path TEXT NOT NULL UNIQUE,
    type TEXT NOT NULL,
    state TEXT NOT NULL,
    trust TEXT NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL,            -- the one copy of the text: the excerpt is cut from it when read
    source TEXT NOT NULL,
    created TEXT NOT NULL,
    updated TEXT NOT NULL,{_OPTIONAL_COLUMNS}
    entities TEXT NOT NULL,        -- JSON list of canonical entity names
    supersedes TEXT NOT NULL,      -- JSON list of ids
    superseded_by TEXT NOT NULL,   -- JSON list of ids
    related TEXT NOT NULL,         -- JSON list of ids
    title_line INTEGER NOT NULL,
    body_line INTEGER NOT NULL,
    norm_hash TEXT NOT NULL        -- dedupe key: normalised title + body
);
CREATE INDEX memories_norm_hash ON memories (norm_hash);
CREATE INDEX memories_valid_until ON memories (valid_until) WHERE valid_until IS NOT NULL;  -- expiry
-- the filter columns again, in narrow rows: the search legs join this, not the wide rows above (a third
-- of a trigram leg's time at 10k memories went on reading memories rows only to test their state)
CREATE TABLE memory_flags (rowid INTEGER PRIMARY KEY, type TEXT NOT NULL, state TEXT NOT NULL, trust TEXT NOT NULL);
CREATE INDEX memories_state_type ON memories (state, type);
CREATE TABLE entities (
    entity TEXT NOT NULL,
    memory_rowid INTEGER NOT NULL,
    PRIMARY KEY (entity, memory_rowid)
) WITHOUT ROWID;
CREATE INDEX entities_by_memory ON entities (memory_rowid);
CREATE TABLE supersede_links (
    old_id TEXT NOT NULL,
    new_id TEXT NOT NULL,
    PRIMARY KEY (old_id, new_id)
) WITHOUT ROWID;
CREATE INDEX supersede_links_new ON supersede_links (new_id);
-- mirrored from the canon (`conflicts:` in the newer memory's frontmatter), so it survives rebuilds
CREATE TABLE conflicts (
    pair_hash TEXT PRIMARY KEY,
    a_id TEXT NOT NULL,
    b_id TEXT NOT NULL,
    recorded_in TEXT NOT NULL,
    status TEXT NOT NULL,
    detected TEXT NOT NULL,
    resolution TEXT,
    resolved TEXT,
    note TEXT
);
CREATE INDEX conflicts_recorded_in ON conflicts (recorded_in);
-- every answer lists the oldest open conflicts: read in order, however many a store holds (version 8)
CREATE INDEX conflicts_open ON conflicts (detected, pair_hash) WHERE status = 'open';
-- index-only: recall counts are not canon and do not survive deleting .index/
CREATE TABLE heat (memory_id TEXT PRIMARY KEY, recalls INTEGER NOT NULL, last_recalled TEXT NOT NULL);
-- the ledger's paths in write order ('' = every file): what another process wrote (`ledger.written_since`)
CREATE TABLE ledger_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, path TEXT NOT NULL);
{FTS_TABLES["fts_word"]};
{FTS_TABLES["fts_tri"]};
-- indexed documents (read-only sources from settings): the same ledger idea, and chunks with line ranges
CREATE TABLE doc_files (
    path TEXT PRIMARY KEY,           -- absolute path
    label TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    skipped TEXT,                    -- why it is not indexed (binary, too large, not UTF-8)
    indexed_at TEXT NOT NULL
);
CREATE TABLE doc_chunks (
    rowid INTEGER PRIMARY KEY,
    path TEXT NOT NULL,
    label TEXT NOT NULL,
    title TEXT NOT NULL,             -- the chunk's heading (or the file name)
    body TEXT NOT NULL,
    entities TEXT NOT NULL,          -- the source label, searchable like a memory's entities
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    updated TEXT NOT NULL
);
CREATE INDEX doc_chunks_path ON doc_chunks (path);
{FTS_TABLES["fts_doc_word"]};
{FTS_TABLES["fts_doc_tri"]};
"""


class IndexUnavailable(Exception):
    """The index file cannot be opened or created at all (not merely stale)."""


class Rollback(Exception):
    """Raised inside `atomic()` to undo the block on purpose; `atomic()` re-raises it for the caller to catch."""


@contextmanager
def atomic(conn: sqlite3.Connection) -> Iterator[None]:
    """One write transaction: BEGIN IMMEDIATE ... COMMIT, or a savepoint when one is already open.

    Any exception undoes the block (only the inner one when nested) and propagates. IMMEDIATE takes the
    write lock at the start, so a writer never fails half-way on a lock another connection holds.
    """
    if conn.in_transaction:
        conn.execute("SAVEPOINT atomic")  # the innermost savepoint of a name is the one ROLLBACK TO reaches
        try:
            yield
        except BaseException:
            conn.execute("ROLLBACK TO atomic")
            conn.execute("RELEASE atomic")
            raise
        conn.execute("RELEASE atomic")
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


# connections inside `read_snapshot`: their open transaction has written nothing (`writing` tells them apart)
_READING: set[sqlite3.Connection] = set()  # held only while inside (connections take no weak reference)


@contextmanager
def read_snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """One read transaction: every query inside sees the index as it was at its start, whatever other
    processes commit meanwhile (the write-ahead log keeps that snapshot whole). Nothing may be written in it."""
    conn.execute("BEGIN")
    _READING.add(conn)
    try:
        conn.execute("SELECT 1 FROM meta LIMIT 1")  # a deferred transaction takes its snapshot at the first read
        yield
    finally:
        _READING.discard(conn)
        if conn.in_transaction:
            conn.execute("COMMIT")


def writing(conn: sqlite3.Connection) -> bool:
    """Whether `conn` is inside a transaction that may hold uncommitted writes (not a `read_snapshot`)."""
    return conn.in_transaction and conn not in _READING


def connect(path: Path | str) -> sqlite3.Connection:
    """A connection to the index file (or ":memory:" when the file cannot be used)."""
    conn = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA busy_timeout = 30000")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def _texts_once(conn: sqlite3.Connection) -> None:
    """Version 9: the full-text tables made contentless and filled again from the one copy of each text; the stored
    excerpt and body digest dropped (both are read from the body)."""
    for table, sql in FTS_TABLES.items():
        conn.execute(f"DROP TABLE {table}")
        conn.execute(sql)
    memories = conn.execute("SELECT rowid, title, entities, body FROM memories")
    rows = [(r[0], *searched_texts(r[1], json.loads(r[2]), r[3])) for r in memories]
    chunks = conn.execute("SELECT rowid, title, entities, body FROM doc_chunks")
    doc_rows = [(r[0], searchable(r[1]), searchable(r[2]), searchable(r[3])) for r in chunks]
    for tables, filled in ((("fts_word", "fts_tri"), rows), (("fts_doc_word", "fts_doc_tri"), doc_rows)):
        for table in tables:
            conn.executemany(f"INSERT INTO {table} (rowid, title, entities, body) VALUES (?,?,?,?)", filled)
    have = {row[1] for row in conn.execute("PRAGMA table_info(memories)")}
    for column in ("excerpt", "body_sha"):
        if column in have:
            conn.execute(f"ALTER TABLE memories DROP COLUMN {column}")
    set_meta(conn, "text_versions", TEXT_VERSIONS)


# Upgrades that derive what is new from what the index already holds, so recall counts (index-only) and
# stored vectors survive the upgrade; an index too old for these is rebuilt from canon instead. A step is SQL, or a
# function of the connection (inside the step's transaction).
MIGRATIONS: dict[int, tuple[str | Callable[[sqlite3.Connection], None], ...]] = {
    3: (
        "CREATE TABLE memory_flags (rowid INTEGER PRIMARY KEY, type TEXT NOT NULL, state TEXT NOT NULL, "
        "trust TEXT NOT NULL)",
        "INSERT INTO memory_flags (rowid, type, state, trust) SELECT rowid, type, state, trust FROM memories",
        "CREATE INDEX files_with_errors ON files (path) WHERE error IS NOT NULL",
    ),
    # 5 records the scan digest (meta `scan_digest`) that version 4 would not forget when it writes the
    # ledger: the bump keeps a version-4 server from writing a version-5 index (it rebuilds it instead)
    4: ("DELETE FROM meta WHERE key = 'scan_digest'",),
    # 6 adds the validity days and `superseded_at` (issue 27): only the canon holds them, so every ledger row is
    # made stale and the next pass re-reads each file once (recall counts and vectors are kept)
    5: (
        "ALTER TABLE memories ADD COLUMN valid_from TEXT",
        "ALTER TABLE memories ADD COLUMN valid_until TEXT",
        "ALTER TABLE memories ADD COLUMN superseded_at TEXT",
        "CREATE INDEX memories_valid_until ON memories (valid_until) WHERE valid_until IS NOT NULL",
        "UPDATE files SET mtime_ns = -1, sha256 = ''",
        "DELETE FROM meta WHERE key = 'scan_digest'",
    ),
    # 7 stores the full-text copies in NFKC (`domain.text.searchable`): every memory and document is re-read once
    6: (
        "UPDATE files SET mtime_ns = -1, sha256 = ''",
        "UPDATE doc_files SET mtime_ns = -1, sha256 = ''",
        "DELETE FROM meta WHERE key = 'scan_digest'",
    ),
    # 8 logs every ledger write (`ledger_log`): a version-7 process would write the ledger without logging it,
    # so the bump makes it rebuild the index rather than write one whose log another process trusts; and
    # indexes the open conflicts in the order every answer lists them
    7: (
        "CREATE TABLE ledger_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, path TEXT NOT NULL)",
        "CREATE INDEX conflicts_open ON conflicts (detected, pair_hash) WHERE status = 'open'",
    ),
    8: (_texts_once,),
}


def migrate(conn: sqlite3.Connection) -> None:
    """Bring an older index to SCHEMA_VERSION in place when a migration exists (one transaction per step)."""
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = int(row[0]) if row else None
    except (sqlite3.DatabaseError, ValueError):
        return  # schema_problem says why
    while version in MIGRATIONS:
        with atomic(conn):
            for statement in MIGRATIONS[version]:
                if isinstance(statement, str):
                    conn.execute(statement)
                else:
                    statement(conn)
            version += 1
            conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))
    if version == SCHEMA_VERSION:
        _add_field_columns(conn)
        _add_late_indexes(conn)


# `updated` as the canon writes it (UTC, whole seconds) compares as text in time order; ODD_STAMP is true of
# any other form (hand-written), over alias `m`: the condition of a partial index, so written out as a literal
CANONICAL_STAMP = "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]Z"
ODD_STAMP = f"NOT m.updated GLOB '{CANONICAL_STAMP}'"

# Indexes added after their schema version: a process that does not know one still writes the tables it covers
# (SQLite keeps an index it did not create), so each is created where missing without a version bump.
LATE_INDEXES: dict[str, str] = {
    # a thread's next memory (an index made before `follows` was a field: its column came with the fields)
    "memories_follows": "CREATE INDEX memories_follows ON memories (follows) WHERE follows IS NOT NULL",
    # the open conflicts of a recall's results (`conflict_pairs.open_pairs_touching`), either side
    "conflicts_open_a": "CREATE INDEX conflicts_open_a ON conflicts (a_id) WHERE status = 'open'",
    "conflicts_open_b": "CREATE INDEX conflicts_open_b ON conflicts (b_id) WHERE status = 'open'",
    # the most recently updated active memories, read in order (the session-start context,
    # `reads.context_candidates`), not every memory sorted
    "memories_recent": "CREATE INDEX memories_recent ON memories (state, updated, id)",
    "memories_odd_stamps": "CREATE INDEX memories_odd_stamps ON memories (state) WHERE "
    + ODD_STAMP.replace("m.updated", "updated"),
    # the current handoff and the memories in quarantine, which every session-start context and status asks for:
    # a few rows each, read through these instead of a scan of every memory (~20 ms each at 10k)
    "memories_handoff": "CREATE INDEX memories_handoff ON memories (updated, id) WHERE type = 'handoff'",
    "memories_quarantine": "CREATE INDEX memories_quarantine ON memories (quarantine) WHERE quarantine IS NOT NULL",
    # the reviews due (`reads.reviews_due`, every context and status): the memories with a review date, not every
    # active memory's row (~0.2 s at 100k)
    "memories_review_after": "CREATE INDEX memories_review_after ON memories (review_after) "
    "WHERE review_after IS NOT NULL",
}


def _add_late_indexes(conn: sqlite3.Connection) -> None:
    have = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    missing = [sql for name, sql in LATE_INDEXES.items() if name not in have]
    if missing:
        with atomic(conn):
            for sql in missing:
                conn.execute(sql)


def _add_field_columns(conn: sqlite3.Connection) -> None:
    """A plain column the field table declares (`COLUMNS`) and this index lacks is added, and every file is
    re-read once (only the canon holds its values): a new field needs no schema version of its own."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(memories)")}
    missing = [name for name in COLUMNS if name not in have]
    if not have or not missing:
        return
    with atomic(conn):
        for name in missing:
            conn.execute(f"ALTER TABLE memories ADD COLUMN {name} TEXT")
        conn.execute("UPDATE files SET mtime_ns = -1, sha256 = ''")
        conn.execute("DELETE FROM meta WHERE key = 'scan_digest'")


def schema_problem(conn: sqlite3.Connection, integrity: bool = True) -> str | None:
    """Why this connection's database cannot be used as our index, or None when it can.

    `integrity=False` leaves out `PRAGMA quick_check` (it reads every page: ~30-40 ms of a one-shot call at 10k
    memories), for a file exactly as a session that found it sound left it (`as_recorded`)."""
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None:
            return "index has no schema version"
        if int(row[0]) != SCHEMA_VERSION:
            return f"index schema version {row[0]} != {SCHEMA_VERSION}"
        made_by = meta_value(conn, "text_versions")
        if made_by != TEXT_VERSIONS:  # a delete would hand the contentless tables other texts than they were given
            return f"index texts made with {made_by or 'unknown versions'}, not {TEXT_VERSIONS}"
        conn.execute("SELECT count(*) FROM memories").fetchone()
        conn.execute("SELECT count(*) FROM fts_word WHERE fts_word MATCH 'x'").fetchone()
        conn.execute("SELECT count(*) FROM fts_tri WHERE fts_tri MATCH 'xyz'").fetchone()
        quick = conn.execute("PRAGMA quick_check").fetchone()[0] if integrity else "ok"
        if quick != "ok":
            return f"index failed quick_check: {quick}"
    except (sqlite3.DatabaseError, ValueError) as exc:
        return f"index unreadable: {exc}"
    return None


def create_schema(conn: sqlite3.Connection) -> None:
    conn.executescript(SCHEMA)
    for sql in LATE_INDEXES.values():
        conn.execute(sql)
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('schema_version', ?), ('built_at', ?), ('text_versions', ?)",
        (str(SCHEMA_VERSION), now_iso(), TEXT_VERSIONS),
    )


def _record_path(path: Path) -> Path:
    return path.with_name(path.name + "-sound")


def _identity(path: Path) -> str | None:
    """The index file and its write-ahead log as they are on disk: device, inode, size, mtime, ctime of each.

    ctime too: no tool sets it back, so a file rewritten with its old size and mtime restored still differs."""
    parts: list[str] = []
    base = os.fspath(path)
    for p in (base, base + "-wal"):  # plain strings: this runs at the end of every call
        try:
            st = os.stat(p)
        except FileNotFoundError:
            parts.append("-")
            continue
        except OSError:
            return None
        parts.append(f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}")
    return parts[0] if parts[0] == "-" else " ".join(parts)


def record_sound(path: Path, last: str | None = None) -> str | None:
    """Record the index file (and its log) as a session that found it sound leaves it, unless `last` (what this
    session recorded before) already says so; returns what is recorded now.

    Called at the end of every call that met no database error (the store's write lock held) and after a
    session's connection closed: every state recorded is one our own checked work led to. A store that cannot
    be written keeps no record, and then the next open checks as before."""
    identity = _identity(path)
    if identity is None or identity == "-" or identity == last:
        return last
    # written in place, not through a renamed copy (10 µs, not 240, on every call that changed the index): a torn
    # or half-written record (a crash, two closing processes at once) only fails to match, and the next open checks
    data = (identity + "\n").encode("ascii")
    try:
        fd = os.open(_record_path(path), os.O_WRONLY | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o644)
        try:
            os.write(fd, data)
            os.ftruncate(fd, len(data))
        finally:
            os.close(fd)
    except OSError:
        return last
    return identity


def as_recorded(path: Path) -> bool:
    """Whether the index file and its log are exactly as `record_sound` last recorded them.

    Any write since by something else, a crash mid-call, a replaced, copied, truncated or overwritten file
    changes the identity: only then does opening it pay for the full integrity check."""
    try:
        recorded = _record_path(path).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return False
    return recorded == _identity(path)


def index_size(path: Path) -> int:
    """Bytes of the index file and its write-ahead log (0 for what is missing)."""
    total = 0
    for suffix in ("", "-wal"):
        try:
            total += os.path.getsize(os.fspath(path) + suffix)
        except OSError:
            pass
    return total


def remove_files(path: Path) -> None:
    for suffix in ("-sound", "", "-wal", "-shm", "-journal"):
        target = path.with_name(path.name + suffix)
        try:
            target.unlink()
        except FileNotFoundError:
            pass


def meta_value(conn: sqlite3.Connection, key: str) -> str:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else ""


def set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))


def optimize_search(conn: sqlite3.Connection) -> None:
    """Merge each memory FTS index into one b-tree (FTS5 'optimize'), after a bulk load.

    Row-by-row inserts leave many small segments that every query must visit: merged, the trigram legs of a
    recall ran ~25% faster at 10k memories, for ~0.8 s of merging once.
    """
    for table in ("fts_word", "fts_tri"):
        conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")


def compact(conn: sqlite3.Connection) -> None:
    """Rewrite the file without its free pages (VACUUM), outside any transaction: after an index is built from
    nothing, FTS5's merge (`optimize_search`) has left about a sixth of the file free. Only space is at stake:
    a VACUUM that cannot run now (another statement open on this connection, a busy file) is left out."""
    try:
        conn.execute("VACUUM")
    except sqlite3.OperationalError:
        pass


def data_version(conn: sqlite3.Connection) -> int:
    """Changes whenever *another* connection commits to this database (SQLite's PRAGMA data_version)."""
    return conn.execute("PRAGMA data_version").fetchone()[0]


# ---------------------------------------------------------------- memories


def pair_hash(a: str, b: str) -> str:
    lo, hi = sorted((a, b))
    from hashlib import sha256  # here: loading OpenSSL (~3.5 ms) would slow every one-shot call, which records no pair

    return sha256(f"conflict:{lo}:{hi}".encode()).hexdigest()[:16]


def entity_text(entities: Iterable[str]) -> str:
    # "billing-service" is searchable as the words "billing service" as well as the whole name
    return " ".join(f"{e} {e.replace('-', ' ')}" if "-" in e else e for e in entities)


def drop_memory_at(conn: sqlite3.Connection, path: str) -> None:
    row = conn.execute("SELECT rowid, id FROM memories WHERE path = ?", (path,)).fetchone()
    if row is None:
        return
    _drop_memory_row(conn, row[0], row[1])


def _drop_memory_row(conn: sqlite3.Connection, rowid: int, mem_id: str) -> None:
    row = conn.execute("SELECT title, entities, body FROM memories WHERE rowid = ?", (rowid,)).fetchone()
    if row is not None:  # the full-text rows first, from the texts they were made of (contentless tables)
        searched = (rowid, *searched_texts(row[0], json.loads(row[1]), row[2]))
        for table in ("fts_word", "fts_tri"):
            conn.execute(
                f"INSERT INTO {table} ({table}, rowid, title, entities, body) VALUES ('delete',?,?,?,?)", searched
            )
    conn.execute("DELETE FROM memories WHERE rowid = ?", (rowid,))
    conn.execute("DELETE FROM memory_flags WHERE rowid = ?", (rowid,))
    conn.execute("DELETE FROM entities WHERE memory_rowid = ?", (rowid,))
    conn.execute("DELETE FROM supersede_links WHERE new_id = ?", (mem_id,))
    conn.execute("DELETE FROM conflicts WHERE recorded_in = ?", (mem_id,))


def searched_texts(title: str, entities: list[str], body: str) -> tuple[str, str, str]:
    """(title, entities, body) as a memory's full-text rows hold them: what was inserted, and what a delete and the
    re-scoring leg (`bm25.exact_bm25`) derive again from the memory's row."""
    return searchable(title), searchable(entity_text(entities)), searchable(body)


def put_memory(conn: sqlite3.Connection, path: str, mem: Memory, entities: list[str]) -> None:
    """Insert or replace one memory and everything derived from it (FTS rows, links, conflicts)."""
    old = conn.execute("SELECT rowid, id FROM memories WHERE path = ? OR id = ?", (path, mem.id)).fetchall()
    for row in old:
        _drop_memory_row(conn, row[0], row[1])
    cur = conn.execute(
        f"""INSERT INTO memories (id, path, type, state, trust, title, body, source, created,
               updated, entities, supersedes, superseded_by, related, title_line,
               body_line, norm_hash, {", ".join(COLUMNS)})
           VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?{",?" * len(COLUMNS)})""",
        (
            mem.id,
            path,
            mem.type.value,
            mem.state.value,
            mem.trust.value,
            mem.title,
            mem.body,
            mem.source,
            mem.created,
            mem.updated,
            json.dumps(entities, ensure_ascii=False),
            json.dumps(mem.supersedes),
            json.dumps(mem.superseded_by),
            json.dumps(mem.related),
            mem.title_line,
            mem.body_line,
            norm_hash(mem.title, mem.body),
            *(getattr(mem, name) for name in COLUMNS),
        ),
    )
    rowid = cur.lastrowid
    conn.execute(
        "INSERT OR REPLACE INTO memory_flags (rowid, type, state, trust) VALUES (?,?,?,?)",
        (rowid, mem.type.value, mem.state.value, mem.trust.value),
    )
    searched = (rowid, *searched_texts(mem.title, entities, mem.body))
    conn.execute("INSERT INTO fts_word (rowid, title, entities, body) VALUES (?,?,?,?)", searched)
    conn.execute("INSERT INTO fts_tri (rowid, title, entities, body) VALUES (?,?,?,?)", searched)
    conn.executemany(
        "INSERT OR IGNORE INTO entities (entity, memory_rowid) VALUES (?, ?)",
        [(e, rowid) for e in entities],
    )
    conn.executemany(
        "INSERT OR IGNORE INTO supersede_links (old_id, new_id) VALUES (?, ?)",
        [(old_id, mem.id) for old_id in mem.supersedes],
    )
    for c in mem.conflicts:
        conn.execute(
            """INSERT OR REPLACE INTO conflicts
               (pair_hash, a_id, b_id, recorded_in, status, detected, resolution, resolved, note)
               VALUES (?,?,?,?,?,?,?,?,?)""",
            (
                pair_hash(mem.id, c.other_id),
                c.other_id,
                mem.id,
                mem.id,
                c.status,
                c.detected,
                c.resolution,
                c.resolved,
                c.note,
            ),
        )


@dataclass
class IndexedMemory(OptionalValues):
    rowid: int
    id: str
    path: str
    type: str
    state: str
    trust: str
    title: str
    body: str
    source: str
    created: str
    updated: str
    entities: list[str]
    supersedes: list[str]
    superseded_by: list[str]
    related: list[str]
    title_line: int
    body_line: int
    norm_hash: str
    # and the field table's plain columns (OptionalValues), selected last in its order

    @property
    def excerpt(self) -> str:
        """The body's first paragraph, cut to its length (`domain.memory.first_paragraph`): not stored."""
        return first_paragraph(self.body)


_CORE_COLUMNS = (
    "rowid, id, path, type, state, trust, title, body, source, created, updated, "
    "entities, supersedes, superseded_by, related, title_line, body_line, norm_hash"
)
_CORE = _CORE_COLUMNS.count(",") + 1
_COLUMNS = ", ".join([_CORE_COLUMNS, *COLUMNS])


def _indexed(row: sqlite3.Row | tuple) -> IndexedMemory:
    values = list(row)
    for i in (11, 12, 13, 14):
        # most of these lists are empty: "[]" skips the JSON decoder (a recall reads ~100 rows, 4 lists each)
        values[i] = [] if values[i] == "[]" else json.loads(values[i])
    return IndexedMemory(*values[:_CORE], **dict(zip(COLUMNS, values[_CORE:], strict=True)))


def get_memory(conn: sqlite3.Connection, *, mem_id: str | None = None, path: str | None = None):
    if mem_id is not None:
        row = conn.execute(f"SELECT {_COLUMNS} FROM memories WHERE id = ?", (mem_id,)).fetchone()
    else:
        row = conn.execute(f"SELECT {_COLUMNS} FROM memories WHERE path = ?", (path,)).fetchone()
    return _indexed(row) if row else None


def memory_origins(conn: sqlite3.Connection, paths: list[str]) -> dict[str, str | None]:
    """path -> the origin the index shows, for the memories at `paths`."""
    out: dict[str, str | None] = {}
    for start in range(0, len(paths), 500):
        chunk = paths[start : start + 500]
        marks = ",".join("?" * len(chunk))
        out.update(conn.execute(f"SELECT path, origin FROM memories WHERE path IN ({marks})", chunk).fetchall())
    return out


def set_origin(conn: sqlite3.Connection, path: str, origin: str) -> None:
    """The origin shown for the memory at `path` (the file keeps its own line: see store/arrivals.py)."""
    conn.execute("UPDATE memories SET origin = ? WHERE path = ?", (origin, path))


def memory_path(conn: sqlite3.Connection, mem_id: str) -> str | None:
    """The canon path of the memory with this id."""
    row = conn.execute("SELECT path FROM memories WHERE id = ?", (mem_id,)).fetchone()
    return row[0] if row else None


def memories_by_rowid(conn: sqlite3.Connection, rowids: list[int]) -> dict[int, IndexedMemory]:
    out: dict[int, IndexedMemory] = {}
    cur = conn.cursor()
    cur.row_factory = None  # plain tuples: every recall reads ~100 candidates here
    for start in range(0, len(rowids), 500):
        chunk = rowids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for row in cur.execute(f"SELECT {_COLUMNS} FROM memories WHERE rowid IN ({marks})", chunk):
            out[row[0]] = _indexed(row)
    return out


class RankingRow(NamedTuple):
    """What ranking reads of every candidate; the whole row (`IndexedMemory`) is read only for results."""

    rowid: int
    id: str
    trust: str
    state: str
    updated: str
    title: str
    entities: list[str]
    body: str


def ranking_rows(conn: sqlite3.Connection, rowids: list[int]) -> list[RankingRow]:
    """The ranking columns of these memories (a recall ranks ~100 candidates and returns 5-20)."""
    out: list[RankingRow] = []
    cur = conn.cursor()
    cur.row_factory = None
    for start in range(0, len(rowids), 500):
        chunk = rowids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        sql = f"SELECT rowid, id, trust, state, updated, title, entities, body FROM memories WHERE rowid IN ({marks})"
        for r in cur.execute(sql, chunk):
            out.append(RankingRow(r[0], r[1], r[2], r[3], r[4], r[5], [] if r[6] == "[]" else json.loads(r[6]), r[7]))
    return out


def all_memories(conn: sqlite3.Connection) -> list[IndexedMemory]:
    return [_indexed(r) for r in conn.execute(f"SELECT {_COLUMNS} FROM memories ORDER BY created")]


def filtered_memories(
    conn: sqlite3.Connection, where: str, params: list[object], limit: int, offset: int
) -> list[IndexedMemory]:
    """A page of memories under a `Filters.sql()` clause (alias `m`), newest update first."""
    sql = f"SELECT {_COLUMNS} FROM memories m WHERE 1 = 1{where} ORDER BY m.updated DESC, m.id LIMIT ? OFFSET ?"
    return [_indexed(r) for r in conn.execute(sql, [*params, limit, offset])]


def find_by_norm_hash(conn: sqlite3.Connection, digest: str, include_deprecated: bool = False) -> IndexedMemory | None:
    """The memory that says exactly this, active first. Deprecated ones match only when asked: a retracted
    memory comes back only by an explicit reactivation with a reason, so saying it again makes a new one
    (an import asks, so that re-importing never brings back what someone retracted)."""
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM memories WHERE norm_hash = ? AND (state != 'deprecated' OR ?) "
        "ORDER BY state = 'active' DESC, state = 'archived' DESC, created, id LIMIT 1",
        (digest, include_deprecated),
    ).fetchone()
    return _indexed(row) if row else None


# ---------------------------------------------------------------- heat


def heat_of(conn: sqlite3.Connection, ids: list[str]) -> dict[str, tuple[int, str]]:
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = conn.execute(f"SELECT memory_id, recalls, last_recalled FROM heat WHERE memory_id IN ({marks})", ids)
    return {r[0]: (r[1], r[2]) for r in rows}


def all_heat(conn: sqlite3.Connection) -> dict[str, tuple[int, str]]:
    """memory id → (recalls, last recalled) of every memory ever recalled."""
    return {r[0]: (r[1], r[2]) for r in conn.execute("SELECT memory_id, recalls, last_recalled FROM heat")}


def put_heat(conn: sqlite3.Connection, heat: dict[str, tuple[int, str]]) -> None:
    """Set these recall counts as they are (a rebuild carrying them over)."""
    conn.executemany(
        "INSERT OR REPLACE INTO heat (memory_id, recalls, last_recalled) VALUES (?,?,?)",
        [(mem_id, recalls, last) for mem_id, (recalls, last) in heat.items()],
    )


def add_heat(conn: sqlite3.Connection, recalls: dict[str, tuple[int, str]]) -> None:
    """Count recalls: memory id → (how many since the last count, when the last was), in one transaction."""
    # one transaction: in autocommit mode each row would be its own commit (10 WAL commits per recall)
    own = not conn.in_transaction
    if own:
        conn.execute("BEGIN IMMEDIATE")
    try:
        conn.executemany(
            """INSERT INTO heat (memory_id, recalls, last_recalled) VALUES (?, ?, ?)
               ON CONFLICT (memory_id) DO UPDATE SET recalls = recalls + excluded.recalls,
                                                    last_recalled = excluded.last_recalled""",
            [(mem_id, n, last) for mem_id, (n, last) in recalls.items()],
        )
        if own:
            conn.execute("COMMIT")
    except BaseException:
        if own:
            conn.execute("ROLLBACK")
        raise
