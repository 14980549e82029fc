"""The conflict gate's queries: neighbours of a new memory (by entity, by words) and the conflicts ledger."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence


def broad_entities(conn: sqlite3.Connection, entities: Sequence[str], min_count: int) -> frozenset[str]:
    """The entities of `entities` that at least `min_count` active memories carry."""
    if not entities:
        return frozenset()
    marks = ",".join("?" * len(entities))
    rows = conn.execute(
        f"SELECT e.entity FROM entities e JOIN memories m ON m.rowid = e.memory_rowid "
        f"WHERE e.entity IN ({marks}) AND m.state = 'active' GROUP BY e.entity HAVING count(*) >= ?",
        [*entities, min_count],
    )
    return frozenset(r[0] for r in rows)


def rowids_sharing_an_entity(conn: sqlite3.Connection, entities: Sequence[str], mem_type: str) -> set[int]:
    """Active memories of this type carrying one of `entities`."""
    marks = ",".join("?" * len(entities))
    return {
        r[0]
        for r in conn.execute(
            f"SELECT e.memory_rowid FROM entities e JOIN memories m ON m.rowid = e.memory_rowid "
            f"WHERE e.entity IN ({marks}) AND m.type = ? AND m.state = 'active'",
            [*entities, mem_type],
        )
    }


def rowids_matching_words(conn: sqlite3.Connection, expression: str, mem_type: str) -> set[int]:
    """The 20 best active memories of this type for an FTS5 word expression (already quoted)."""
    return {
        r[0]
        for r in conn.execute(
            "SELECT f.rowid FROM fts_word f JOIN memories m ON m.rowid = f.rowid "
            "WHERE fts_word MATCH ? AND m.type = ? AND m.state = 'active' ORDER BY rank LIMIT 20",
            (expression, mem_type),
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
