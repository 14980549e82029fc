"""The conflict gate: a new memory's neighbours come back as judgement material, never overwritten.

A neighbour is an active memory of the same type that shares an entity with the new one or says
nearly the same thing. Each pair is identified by its pair hash and recorded in the newer memory's
frontmatter (`conflicts:`), so it is surfaced once and its resolution survives an index rebuild.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

from . import index as ix
from .models import ConflictCandidate, Trust
from .query import fold, terms_of

NEAR_TEXT_SIMILARITY = 0.5
MAX_CONFLICTS = 5
TRUST_RANK = {Trust.AGENT_INFERRED.value: 0, Trust.IMPORTED.value: 1, Trust.USER_STATED.value: 2}
# Statements that change over time: a newer one may simply replace an older one. Episodes record events
# (a later one does not make an earlier one false); knowledge and reference are distilled or cited
# material a later memory more often adds to than replaces. Handoffs never reach the gate.
TIME_VARYING_TYPES = {"fact", "preference", "decision"}
# Further apart than this, a newer statement reads as "replaced"; closer, as "contradicted the same week".
LATEST_WINS_MIN_DAYS = 7


def _token_set(text: str) -> set[str]:
    return {t.stem for t in terms_of(text) if len(t.stem) >= 2}


def similarity(a: str, b: str) -> float:
    sa, sb = _token_set(a), _token_set(b)
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / len(sa | sb)


def _days_between(a: str, b: str) -> float:
    def parse(s: str) -> datetime:
        try:
            d = datetime.fromisoformat(s.replace("Z", "+00:00"))
        except ValueError:
            return datetime.now(UTC)
        return d if d.tzinfo else d.replace(tzinfo=UTC)

    return round(abs((parse(a) - parse(b)).total_seconds()) / 86400, 2)


def latest_wins_eligible(mem_type: str, a_created: str, a_trust: str, b_created: str, b_trust: str) -> bool:
    """May the newer of two memories simply replace the older? A time-varying type, more than
    LATEST_WINS_MIN_DAYS apart, and the newer at least as trusted as the older."""
    if mem_type not in TIME_VARYING_TYPES or _days_between(a_created, b_created) <= LATEST_WINS_MIN_DAYS:
        return False
    (_, newer_trust), (_, older_trust) = sorted(((a_created, a_trust), (b_created, b_trust)), reverse=True)
    return TRUST_RANK.get(newer_trust, 0) >= TRUST_RANK.get(older_trust, 0)


def find_neighbours(
    conn: sqlite3.Connection,
    *,
    title: str,
    body: str,
    mem_type: str,
    trust: str,
    entities: list[str],
    created: str,
    new_id: str,
    near_text: float = NEAR_TEXT_SIMILARITY,
    max_conflicts: int = MAX_CONFLICTS,
) -> list[ConflictCandidate]:
    """Active same-type memories sharing an entity or with near text; pairs already recorded are skipped."""
    rowids: set[int] = set()
    if entities:
        marks = ",".join("?" * len(entities))
        rowids |= {
            r[0]
            for r in conn.execute(
                f"SELECT e.memory_rowid FROM entities e JOIN memories m ON m.rowid = e.memory_rowid "
                f"WHERE e.entity IN ({marks}) AND m.type = ? AND m.state = 'active'",
                [*entities, mem_type],
            )
        }
    words = sorted(_token_set(f"{title} {body}"))[:64]
    if words:
        expr = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        rowids |= {
            r[0]
            for r in conn.execute(
                "SELECT f.rowid FROM fts_word f JOIN memories m ON m.rowid = f.rowid "
                "WHERE fts_word MATCH ? AND m.type = ? AND m.state = 'active' ORDER BY rank LIMIT 20",
                (expr, mem_type),
            )
        }
    candidates = []
    recorded = {r[0] for r in conn.execute("SELECT pair_hash FROM conflicts")}
    for mem in ix.memories_by_rowid(conn, sorted(rowids)).values():
        if mem.id == new_id or ix.pair_hash(mem.id, new_id) in recorded:
            continue
        shared = sorted(set(entities) & set(mem.entities))
        sim = similarity(f"{title} {body}", f"{mem.title} {mem.body}")
        if not shared and sim < near_text:
            continue
        # a shared entity alone is weak evidence unless the texts also overlap somewhat
        if shared and sim < 0.08 and fold(title) != fold(mem.title):
            continue
        candidates.append(
            ConflictCandidate(
                id=mem.id,
                path=mem.path,
                title=mem.title,
                excerpt=mem.excerpt,
                type=mem.type,
                trust=mem.trust,
                shared_entities=shared,
                text_similarity=round(sim, 3),
                days_apart=_days_between(created, mem.created),
                latest_wins_eligible=latest_wins_eligible(mem_type, created, trust, mem.created, mem.trust),
                pair_hash=ix.pair_hash(mem.id, new_id),
            )
        )
    candidates.sort(key=lambda c: (len(c.shared_entities), c.text_similarity), reverse=True)
    return candidates[:max_conflicts]
