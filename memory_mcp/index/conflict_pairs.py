"""The conflict gate's queries: neighbours of a new memory (by entity, by words) and the conflicts ledger."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ..domain.answers import ConflictSummary


def entity_counts(conn: sqlite3.Connection, entities: Sequence[str]) -> dict[str, int]:
    """How many active memories carry each of `entities` (absent: none)."""
    if not entities:
        return {}
    marks = ",".join("?" * len(entities))
    rows = conn.execute(
        f"SELECT e.entity, count(*) FROM entities e JOIN memories m ON m.rowid = e.memory_rowid "
        f"WHERE e.entity IN ({marks}) AND m.state = 'active' GROUP BY e.entity",
        list(entities),
    )
    return {r[0]: r[1] for r in rows}


def entity_names(conn: sqlite3.Connection) -> list[str]:
    """Every entity any indexed memory carries, once (the primary key's order: no join, ~3 ms at 10,000 memories;
    joined with the memories to keep the active ones it took ~30). Callers filter by memory afterwards."""
    return [r[0] for r in conn.execute("SELECT DISTINCT entity FROM entities")]


def rowids_sharing_an_entity(conn: sqlite3.Connection, entities: Sequence[str], types: Sequence[str]) -> set[int]:
    """Active memories of these types carrying one of `entities`."""
    if not entities:
        return set()
    marks, kinds = ",".join("?" * len(entities)), ",".join("?" * len(types))
    return {
        r[0]
        for r in conn.execute(
            f"SELECT e.memory_rowid FROM entities e JOIN memories m ON m.rowid = e.memory_rowid "
            f"WHERE e.entity IN ({marks}) AND m.type IN ({kinds}) AND m.state = 'active'",
            [*entities, *types],
        )
    }


def rowids_matching_words(
    conn: sqlite3.Connection, expression: str, types: Sequence[str], limit: int, entities: Sequence[str] = ()
) -> set[int]:
    """The `limit` best active memories of these types for an FTS5 word expression (already quoted); with
    `entities`, only among the memories carrying one of them."""
    kinds = ",".join("?" * len(types))
    carrying = ""
    if entities:
        carrying = (
            f" AND h.rowid IN (SELECT memory_rowid FROM entities WHERE entity IN ({','.join('?' * len(entities))}))"
        )
    # the matches first (MATERIALIZED), then the filters: probing the FTS table row by row per entity is slow
    return {
        r[0]
        for r in conn.execute(
            "WITH h AS MATERIALIZED (SELECT rowid, rank FROM fts_word WHERE fts_word MATCH ?) "
            f"SELECT h.rowid FROM h JOIN memories m ON m.rowid = h.rowid "
            f"WHERE m.type IN ({kinds}) AND m.state = 'active'{carrying} ORDER BY h.rank LIMIT ?",
            (expression, *types, *entities, limit),
        )
    }


def recorded_pairs(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT pair_hash FROM conflicts")}


def open_pairs(conn: sqlite3.Connection) -> list[sqlite3.Row]:
    """(pair_hash, a_id, b_id, recorded_in, detected) of every open pair, by pair hash."""
    return conn.execute(
        "SELECT pair_hash, a_id, b_id, recorded_in, detected FROM conflicts WHERE status = 'open' ORDER BY pair_hash"
    ).fetchall()


def open_count(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT count(*) FROM conflicts WHERE status = 'open'").fetchone()[0]


def open_summaries(conn: sqlite3.Connection, scope: str, limit: int = 200) -> list[ConflictSummary]:
    """The oldest open conflicts of one scope's index (a store can hold thousands; every answer lists a few)."""
    return [
        ConflictSummary(scope=scope, pair_hash=r[0], a_id=r[1], b_id=r[2], detected=r[3], a_title=r[4], b_title=r[5])
        for r in oldest_open(conn, limit)
    ]


def oldest_open(conn: sqlite3.Connection, limit: int) -> list[tuple[str, str, str, str, str, str]]:
    """(pair_hash, a_id, b_id, detected, a's title, b's title) of the oldest open pairs; a title is
    '(missing)' when that memory is not indexed."""
    rows = conn.execute(
        """SELECT c.pair_hash, c.a_id, c.b_id, c.detected,
                  coalesce(a.title, '(missing)'), coalesce(b.title, '(missing)')
           FROM conflicts c
           LEFT JOIN memories a ON a.id = c.a_id
           LEFT JOIN memories b ON b.id = c.b_id
           WHERE c.status = 'open' ORDER BY c.detected, c.pair_hash LIMIT ?""",
        (limit,),
    )
    return [tuple(r) for r in rows]


def open_pairs_touching(conn: sqlite3.Connection, ids: Sequence[str]) -> list[tuple[str, str, str, str]]:
    """(pair_hash, memory id, the other memory's id, its title) for every open pair one of `ids` is in, once per
    side that is in `ids`; the title is '(missing)' when the other memory is not indexed."""
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    rows = conn.execute(
        f"""SELECT c.pair_hash, c.a_id, c.b_id, coalesce(o.title, '(missing)')
            FROM conflicts c LEFT JOIN memories o ON o.id = c.b_id
            WHERE c.status = 'open' AND c.a_id IN ({marks})
            UNION ALL
            SELECT c.pair_hash, c.b_id, c.a_id, coalesce(o.title, '(missing)')
            FROM conflicts c LEFT JOIN memories o ON o.id = c.a_id
            WHERE c.status = 'open' AND c.b_id IN ({marks})
            ORDER BY 1""",
        [*ids, *ids],
    )
    return [tuple(r) for r in rows]
