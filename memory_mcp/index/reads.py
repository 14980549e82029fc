"""The index's read queries the operations need beyond single memories: handoffs, reviews, counts,
compaction groups, conflict history, browse listings, the verify pass.

Each returns plain rows (tuples) in the order the SQL gives; the tools turn them into answers.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence

from ..domain.memory import first_paragraph
from .db import ODD_STAMP

COUNTED_COLUMNS = ("state", "type", "trust", "origin")  # the only columns `counts_by` may group by


def active_handoff_ids(conn: sqlite3.Connection) -> list[str]:
    return [row[0] for row in conn.execute("SELECT id FROM memories WHERE type = 'handoff' AND state = 'active'")]


def current_handoff_id(conn: sqlite3.Connection) -> str | None:
    row = conn.execute(
        "SELECT id FROM memories WHERE type = 'handoff' AND +state = 'active' AND quarantine IS NULL "
        "ORDER BY updated DESC, id LIMIT 1"  # `+state`: through the handoffs' own index, not every active memory
    ).fetchone()
    return row[0] if row else None


def quarantined_count(conn: sqlite3.Connection) -> int:
    """Memories in quarantine (any state): the context counts them, never lists them."""
    return conn.execute("SELECT count(*) FROM memories WHERE quarantine IS NOT NULL").fetchone()[0]


def quarantined(conn: sqlite3.Connection) -> list[tuple[str, str, str, str, str]]:
    """(id, title, path, state, quarantine) of every memory in quarantine, newest marker first."""
    return [
        tuple(r)
        for r in conn.execute(
            "SELECT id, title, path, state, quarantine FROM memories WHERE quarantine IS NOT NULL "
            "ORDER BY quarantine DESC, id"
        )
    ]


def reviews_due(conn: sqlite3.Connection, day: str) -> list[tuple[str, str, str, str]]:
    """(id, title, path, review_after) of active memories to review on or before `day`, oldest date first."""
    return [
        tuple(r)
        for r in conn.execute(
            # through the partial index on review_after (`+`: not the index on state, type)
            "SELECT id, title, path, review_after FROM memories WHERE review_after IS NOT NULL AND review_after <= ? "
            "AND +state = 'active' AND quarantine IS NULL ORDER BY review_after",
            (day,),
        )
    ]


# the memories the session-start context lists: active, not a handoff, not past their validity (`?`: today)
_LISTED = (
    "+m.state = 'active' AND +m.type != 'handoff' AND (m.valid_until IS NULL OR m.valid_until >= ?) "
    "AND +m.quarantine IS NULL"  # a memory in quarantine is never listed (issue 44)
)
# (rowid, id, type, trust, origin, updated, recalls) of a listed memory
_CANDIDATE = "SELECT m.rowid, m.id, m.type, m.trust, m.origin, m.updated, coalesce(h.recalls, 0) "
_WITH_HEAT = "FROM memories m LEFT JOIN heat h ON h.memory_id = m.id "
Candidate = tuple[int, str, str, str, str | None, str, int]


def listed_count(conn: sqlite3.Connection, today: str) -> int:
    """How many memories the session-start context could list (the ones it does not show are counted)."""
    total = conn.execute("SELECT count(*) FROM memories WHERE state = 'active' AND type != 'handoff'").fetchone()[0]
    expired = conn.execute(  # through the partial index on valid_until: only the memories that have one
        "SELECT count(*) FROM memories WHERE valid_until < ? AND +state = 'active' AND +type != 'handoff'", (today,)
    ).fetchone()[0]
    held = conn.execute(  # through the partial index on quarantine (`+`: not the index on state, type)
        "SELECT count(*) FROM memories WHERE quarantine IS NOT NULL AND +state = 'active' AND +type != 'handoff' "
        "AND (valid_until IS NULL OR valid_until >= ?)",
        (today,),
    ).fetchone()[0]
    return total - expired - held


def listed_unordered(conn: sqlite3.Connection, today: str) -> list[Candidate]:
    """The listed memories whose rank no index order gives: every one recalled at least once (from the heat
    table, only they have a row there) and every one whose `updated` is hand-written in another form than the
    canon's (ODD_STAMP, through its partial index). Rows may repeat."""
    recalled = f"FROM heat h CROSS JOIN memories m ON m.id = h.memory_id WHERE h.recalls > 0 AND {_LISTED}"
    odd = f"{_WITH_HEAT}WHERE {ODD_STAMP} AND m.state = 'active' AND {_LISTED}"
    return [tuple(r) for sql in (recalled, odd) for r in conn.execute(_CANDIDATE + sql, (today,))]


def _class_clause(
    table: str, trusts: Sequence[str], types: Sequence[str], other_trusts: bool, other_types: bool
) -> str:
    """The SQL condition naming one class of memories (see `listed_freshest`) on `table`'s trust and type columns;
    its parameters are `trusts` then `types`."""
    cls = f"{table}.trust {'NOT ' if other_trusts else ''}IN ({','.join('?' * len(trusts))})"
    if types:
        cls += f" AND {table}.type {'NOT ' if other_types else ''}IN ({','.join('?' * len(types))})"
    return cls


def listed_freshest(
    conn: sqlite3.Connection,
    today: str,
    now: str,
    trusts: Sequence[str],
    types: Sequence[str] = (),
    other_trusts: bool = False,
    other_types: bool = False,
) -> tuple[Iterator[Candidate], Iterator[Candidate]]:
    """The listed memories of one class (trust one of `trusts`, or none of them with `other_trusts`; likewise
    type and `types` when given) whose `updated` is the canon's form, in two runs each read lazily: updated up
    to `now`, most recent first (then by id), and updated after it, by id. Ordered so: freshest first."""
    cls = _class_clause("m", trusts, types, other_trusts, other_types)
    where = f"WHERE m.state = 'active' AND {_LISTED} AND {cls} AND NOT {ODD_STAMP} "
    params = [today, *trusts, *types, now]
    past = _lazy(conn, _CANDIDATE + _WITH_HEAT + where + "AND m.updated <= ? ORDER BY m.updated DESC, m.id", params)
    return past, _lazy(conn, _CANDIDATE + _WITH_HEAT + where + "AND m.updated > ? ORDER BY m.id", params)


def listed_if_few(
    conn: sqlite3.Connection,
    today: str,
    at_most: int,
    trusts: Sequence[str],
    types: Sequence[str] = (),
    other_trusts: bool = False,
    other_types: bool = False,
) -> list[Candidate] | None:
    """Every listed memory of one class (as `listed_freshest` names it) when the class has at most `at_most` active
    memories, unordered; None when it has more. Told from the narrow `memory_flags` rows (a class with no member
    costs one pass over them, not one over the index and a row of `memories` per entry, ~0.5 s at 100k)."""
    cls = _class_clause("f", trusts, types, other_trusts, other_types)
    rowids = [
        r[0]
        for r in conn.execute(
            f"SELECT f.rowid FROM memory_flags f WHERE f.state = 'active' AND f.type != 'handoff' AND {cls} LIMIT ?",
            [*trusts, *types, at_most + 1],
        )
    ]
    if len(rowids) > at_most:
        return None
    out: list[Candidate] = []
    for start in range(0, len(rowids), 500):  # under SQLite's bound-parameter limit
        part = rowids[start : start + 500]
        where = f"WHERE m.rowid IN ({','.join('?' * len(part))}) AND m.state = 'active' AND {_LISTED}"
        out += [tuple(r) for r in conn.execute(_CANDIDATE + _WITH_HEAT + where, [*part, today])]
    return out


def _lazy(conn: sqlite3.Connection, sql: str, params: list[object]) -> Iterator[Candidate]:
    """Rows as they are read; the statement is reset when the reader closes the iterator (or drops it)."""
    cur = conn.cursor()
    cur.row_factory = None
    try:
        yield from cur.execute(sql, params)
    finally:
        cur.close()


# When a memory stopped being current by a supersede: the time recorded in its file, else its first successor's
# `created` (files written before `superseded_at` existed). Over alias `c` of `memories`.
_ENDED = (
    "COALESCE(c.superseded_at, (SELECT min(n.created) FROM supersede_links l JOIN memories n ON n.id = l.new_id "
    "WHERE l.old_id = c.id))"
)
# A `Filters.sql()` clause over alias `m` (memory rows or their narrow flags, same rowids) and its parameters:
# the memories the store held as current on a day. Created on or before it; not superseded, and not deprecated
# (the deprecation's time is its `updated`: a deprecated memory cannot be edited), on or before it; valid then.
CURRENT_ON = (
    "m.rowid IN (SELECT c.rowid FROM memories c WHERE substr(c.created, 1, 10) <= ? "
    "AND (c.valid_from IS NULL OR c.valid_from <= ?) AND (c.valid_until IS NULL OR c.valid_until >= ?) "
    "AND (c.state != 'deprecated' OR substr(c.updated, 1, 10) > ?) "
    f"AND ({_ENDED} IS NULL OR substr({_ENDED}, 1, 10) > ?))"
)
# ... and the memories whose validity ended before a day (left out of default recall)
NOT_EXPIRED = "m.rowid NOT IN (SELECT rowid FROM memories WHERE valid_until < ?)"


def current_on_params(day: str) -> list[object]:
    """CURRENT_ON's parameters: the day at each of its places."""
    return [day] * CURRENT_ON.count("?")


def any_validity_end(conn: sqlite3.Connection) -> bool:
    """Whether any memory has a `valid_until` (the partial index answers it): without one, nothing expires."""
    return conn.execute("SELECT 1 FROM memories WHERE valid_until IS NOT NULL LIMIT 1").fetchone() is not None


def expired(conn: sqlite3.Connection, day: str) -> list[tuple[str, str, str, str]]:
    """(id, title, path, valid_until) of active memories whose validity ended before `day`, oldest first."""
    return [
        tuple(r)
        for r in conn.execute(
            "SELECT id, title, path, valid_until FROM memories WHERE state = 'active' "
            "AND valid_until IS NOT NULL AND valid_until < ? ORDER BY valid_until, id",
            (day,),
        )
    ]


def superseded_at(conn: sqlite3.Connection, mem_id: str) -> str | None:
    """When a supersede ended this memory (see `_ENDED`), or None when nothing superseded it."""
    row = conn.execute(f"SELECT {_ENDED} FROM memories c WHERE c.id = ?", (mem_id,)).fetchone()
    return str(row[0]) if row and row[0] is not None else None


def active_for_export(conn: sqlite3.Connection) -> list[tuple[str, str, str, str, str]]:
    """(id, type, title, excerpt, updated) of active memories, newest first."""
    rows = conn.execute(
        "SELECT id, type, title, body, updated FROM memories WHERE state = 'active' "
        # ids break same-second ties: ULIDs sort by creation time, so this stays newest first
        "ORDER BY updated DESC, created DESC, id DESC"
    )
    return [(r[0], r[1], r[2], first_paragraph(r[3]), r[4]) for r in rows]


def texts_by_id(conn: sqlite3.Connection, ids: Sequence[str]) -> dict[str, tuple[str, str, str]]:
    """id → (title, body, norm_hash) of the memories with these ids."""
    out: dict[str, tuple[str, str, str]] = {}
    for start in range(0, len(ids), 500):
        chunk = list(ids[start : start + 500])
        marks = ",".join("?" * len(chunk))
        for row in conn.execute(f"SELECT id, title, body, norm_hash FROM memories WHERE id IN ({marks})", chunk):
            out[row[0]] = (row[1], row[2], row[3])
    return out


def memory_count(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT count(*) FROM memories").fetchone()[0]


def memory_ids(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT id FROM memories")}


def memory_paths(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT path FROM memories")}


def fts_word_sizes(conn: sqlite3.Connection, rowid: int) -> bytes | None:
    """The word index's record of a memory row's length (tokens per column, FTS5's docsize), None when it has none:
    the contentless table keeps no text to compare (`fts_queries.word_sizes` gives the same record for a text)."""
    row = conn.execute("SELECT sz FROM fts_word_docsize WHERE id = ?", (rowid,)).fetchone()
    return bytes(row[0]) if row is not None else None


def counts_by(conn: sqlite3.Connection, column: str) -> dict[str, int]:
    """How many memories have each value of `column` (one of COUNTED_COLUMNS)."""
    if column not in COUNTED_COLUMNS:
        raise ValueError(f"counts_by: {column!r} is not one of {COUNTED_COLUMNS}")
    return {r[0]: r[1] for r in conn.execute(f"SELECT {column}, count(*) FROM memories GROUP BY {column}")}


def stale_episodes(conn: sqlite3.Connection, cutoff: str) -> list[tuple[str, str, str, str]]:
    """(entity, id, title, created) of active, unsuperseded episodes neither updated nor recalled since `cutoff`."""
    return [
        tuple(r)
        for r in conn.execute(
            """SELECT e.entity, m.id, m.title, m.created FROM memories m
           JOIN entities e ON e.memory_rowid = m.rowid
           LEFT JOIN heat h ON h.memory_id = m.id
           WHERE m.type = 'episode' AND m.state = 'active' AND m.updated < ?
             AND (h.last_recalled IS NULL OR h.last_recalled < ?) AND m.superseded_by = '[]'
           ORDER BY e.entity, m.created""",
            (cutoff, cutoff),
        )
    ]


def conflict_history(conn: sqlite3.Connection, mem_id: str) -> list[sqlite3.Row]:
    """(pair_hash, a_id, b_id, status, detected, resolution, resolved, note, other's title) of every pair
    the memory is in, oldest first."""
    return conn.execute(
        "SELECT c.pair_hash, c.a_id, c.b_id, c.status, c.detected, c.resolution, c.resolved, c.note, m.title "
        "FROM conflicts c LEFT JOIN memories m ON m.id = (CASE WHEN c.a_id = ? THEN c.b_id ELSE c.a_id END) "
        "WHERE c.a_id = ? OR c.b_id = ? ORDER BY c.detected",
        (mem_id, mem_id, mem_id),
    ).fetchall()


def conflict_pair(conn: sqlite3.Connection, pair_hash: str) -> tuple[str, str, str, str] | None:
    """(a_id, b_id, recorded_in, status) of one recorded pair."""
    row = conn.execute(
        "SELECT a_id, b_id, recorded_in, status FROM conflicts WHERE pair_hash = ?", (pair_hash,)
    ).fetchone()
    return tuple(row) if row is not None else None


def state_counts(conn: sqlite3.Connection, where: str, params: Sequence[object]) -> dict[str, int]:
    """Memories per state among those matching `where` (a Filters clause over alias m)."""
    sql = f"SELECT m.state, count(*) FROM memories m WHERE 1 = 1{where} GROUP BY 1"
    return {r[0]: r[1] for r in conn.execute(sql, list(params))}


def entity_names(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT DISTINCT entity FROM entities ORDER BY entity")]


def direct_successors(conn: sqlite3.Connection, ids: Sequence[str]) -> list[tuple[str, str]]:
    """(old id, new id) supersede links out of these memories, as either side's file states them: the newer
    one's `supersedes` (the links table) or the older one's `superseded_by`. The pair may repeat."""
    out: list[tuple[str, str]] = []
    for start in range(0, len(ids), 500):
        chunk = list(ids[start : start + 500])
        marks = ",".join("?" * len(chunk))
        out += conn.execute(f"SELECT old_id, new_id FROM supersede_links WHERE old_id IN ({marks})", chunk).fetchall()
        rows = conn.execute(
            f"SELECT id, superseded_by FROM memories WHERE id IN ({marks}) AND superseded_by != '[]'", chunk
        )
        out += [(old, new) for old, later in rows for new in json.loads(later)]
    return out


def memory_states(
    conn: sqlite3.Connection, ids: Sequence[str], where: str = "", params: Sequence[object] = ()
) -> dict[str, tuple[int, str]]:
    """id → (rowid, state) of those of these memories that exist and pass a `Filters.sql()` clause (alias `m`)."""
    out: dict[str, tuple[int, str]] = {}
    for start in range(0, len(ids), 500):
        chunk = list(ids[start : start + 500])
        marks = ",".join("?" * len(chunk))
        sql = f"SELECT m.id, m.rowid, m.state FROM memories m WHERE m.id IN ({marks}){where}"
        out.update((mem_id, (rowid, state)) for mem_id, rowid, state in conn.execute(sql, [*chunk, *params]))
    return out


def next_in_thread(
    conn: sqlite3.Connection, mem_id: str, where: str = "", params: Sequence[object] = ()
) -> tuple[int, str] | None:
    """(rowid, id) of the memory that follows `mem_id` in its thread and passes a `Filters.sql()` clause (alias
    `m`); of several (a thread that branched), the first created."""
    return conn.execute(
        f"SELECT m.rowid, m.id FROM memories m WHERE m.follows = ?{where} ORDER BY m.created, m.id LIMIT 1",
        [mem_id, *params],
    ).fetchone()


def duplicate_pairs(conn: sqlite3.Connection, limit: int = 200) -> list[tuple[str, str, str]]:
    """(kept id, duplicate id, title) of memories saying the same normalised text, not deprecated: the one
    created first is kept (two machines can each remember the same statement before they sync)."""
    rows = conn.execute(
        """SELECT d.id, m.id, m.title FROM memories m
           JOIN memories d ON d.norm_hash = m.norm_hash AND (d.created, d.id) < (m.created, m.id)
           WHERE m.state != 'deprecated' AND d.state != 'deprecated'
             AND NOT EXISTS (SELECT 1 FROM memories e WHERE e.norm_hash = m.norm_hash
                             AND e.state != 'deprecated' AND (e.created, e.id) < (d.created, d.id))
           ORDER BY m.created, m.id LIMIT ?""",
        (limit,),
    )
    return [tuple(r) for r in rows]
