"""Re-judging the open pairs older gates wrote: `reindex` closes those today's gate would not write."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from ..index import conflict_pairs as conflict_table
from ..index import db as ix
from .conflict_candidates import broad_entities
from .conflict_rules import NEAR_TEXT_SIMILARITY, Assessment, assess, statement_of
from .conflict_weighing import judge_neighbours, mark_among_neighbours, weigh

# The resolution written into a pair an earlier gate recorded and the current one no longer counts.
AUTO_CLOSED = "auto-closed"


@dataclass
class StalePair:
    """An open pair the gate recorded that today's gate no longer counts as a conflict."""

    pair_hash: str
    holder: ix.IndexedMemory  # the newer memory, whose file records the pair
    other_id: str
    reasons: list[str]


def stale_open_pairs(conn: sqlite3.Connection, near_text: float = NEAR_TEXT_SIMILARITY) -> list[StalePair]:
    """Open pairs recorded by the gate itself that today's gate would not record.

    A pair counts as the gate's when it was detected the moment its holder was created (that is how
    `memory_remember` records it). Pairs added later by hand or by another tool are a person's word
    and are never re-judged; resolved pairs are never touched. The holder is judged again among its
    neighbours as the store holds them now (`judge_neighbours`, the pair itself included) and weighed
    (keyword model: reindex does not embed); an other memory no longer among its candidates is weighed as if
    it were the holder's only neighbour.
    """
    stale = []
    verdicts: dict[str, dict[str, Assessment]] = {}
    for pair, a_id, b_id, holder_id, detected in conflict_table.open_pairs(conn):
        holder = ix.get_memory(conn, mem_id=holder_id)
        other = ix.get_memory(conn, mem_id=a_id if holder_id == b_id else b_id)
        if holder is None or other is None or detected != holder.created:
            continue
        if holder.id not in verdicts:
            judged = judge_neighbours(
                conn,
                title=holder.title,
                body=holder.body,
                mem_type=holder.type,
                entities=list(holder.entities),
                new_id=holder.id,
                near_text=near_text,
                skip_recorded=False,
            )
            verdicts[holder.id] = {mem.id: verdict for mem, _, verdict in judged}
        verdict = verdicts[holder.id].get(other.id)
        if verdict is None:
            broad = broad_entities(conn, holder.entities)
            verdict = assess(statement_of(holder), statement_of(other), near_text, broad)
            if verdict.signals is not None:
                mark_among_neighbours([verdict.signals])
                verdict.signals.closest_attribute = 1.0
        verdict = weigh(verdict)
        if not verdict.conflict:
            stale.append(StalePair(pair, holder, other.id, verdict.reasons))
    return stale
