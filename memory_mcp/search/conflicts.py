"""What the conflict gate answers for a new memory: why each existing memory is listed, and which pairs are written.

Who judges is the calling agent (and the user it asks): the gate cannot read world knowledge ("Bitwarden replaces
LastPass"), stance flips said without a negation, or most pairs in two languages without an embedder. So it hands
the agent judgement material and writes into the user's files only what it is near certain of:

- **listed**: the new memory's neighbours (`conflict_candidates`), judged pair by pair (`conflict_rules`) and
  weighed (`conflict_weighing`), best first by that weight, at most `MAX_LISTED`, each with one line of
  evidence and the one call that settles it (`settle`: supersede, or keep_both: "not a conflict", which
  records the pair so it is never listed again). A neighbour is listed when its weight reaches `LIST_AT`, it
  shares an entity with the new memory, its text names one of the new memory's entities, or one of its entities,
  in the other script, sounds like one of the new memory's words ("masks" / 마스크); an old episode (an event stays
  true) never is.
- **written**: a listed pair weighed at the model's `WRITE_AT` (fitted for precision ≥ 0.95 on the development
  sets by bench/conflicts_train.py), unless the rules found the two agreeing with nothing that says a value moved,
  is recorded in the newer memory's frontmatter (`conflicts:`, open) and shown at every session start until
  settled. Everything else is listed and written nowhere.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field
from typing import get_args

from ..domain import provenance
from ..domain.models import ConflictCandidate, ListedKind, ListedMemory
from ..index import db as ix
from . import conflict_model
from .claims import Statement
from .conflict_candidates import Nearest
from .conflict_limits import MAX_CONFLICTS, MAX_LISTED, MAX_RELATED
from .conflict_rules import (
    EVENT_TYPES,
    NEAR_TEXT_SIMILARITY,
    NEIGHBOUR_DUPLICATE,
    NEIGHBOUR_POSSIBLE,
    Assessment,
    days_between,
    latest_wins_eligible,
)
from .conflict_stale import AUTO_CLOSED, StalePair, stale_open_pairs
from .conflict_weighing import Embed, judge_neighbours, weigh

__all__ = [
    "AUTO_CLOSED",
    "MAX_CONFLICTS",
    "MAX_RELATED",
    "NEAR_TEXT_SIMILARITY",
    "Neighbours",
    "StalePair",
    "Statement",
    "find_neighbours",
    "stale_open_pairs",
]

# A neighbour sharing no entity with the new memory is listed from this weight (one found by its words alone is
# most often another topic; chosen on the development sets, docs/benchmarks.md)
LIST_AT = 0.05
EVIDENCE_REASONS = 6  # reasons joined into the one line of evidence (the text clips it)
KIND_CONFLICT, KIND_POSSIBLE, KIND_DUPLICATE, KIND_RELATED = get_args(ListedKind)


@dataclass
class Neighbours:
    """The memories listed for a new one (best first) and the pairs among them written into its file."""

    conflicts: list[ConflictCandidate] = field(default_factory=list)
    listed: list[ListedMemory] = field(default_factory=list)


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
    max_related: int = MAX_LISTED,
    embed: Embed | None = None,
    nearest: Nearest | None = None,
) -> Neighbours:
    """A new memory's neighbours, judged and weighed, listed best first; the near-certain ones written."""
    semantic = embed is not None
    judged = judge_neighbours(
        conn,
        title=title,
        body=body,
        mem_type=mem_type,
        entities=entities,
        new_id=new_id,
        near_text=near_text,
        embed=embed,
        nearest=nearest,
    )
    shared = set(entities)
    weighed = [(mem, weigh(verdict, semantic)) for mem, _, verdict in judged if mem.type not in EVENT_TYPES]
    weighed = [(mem, v) for mem, v in weighed if _weight(v) >= LIST_AT or shared & set(mem.entities) or v.found_by]
    weighed.sort(key=lambda mv: (mv[1].conflict, _weight(mv[1]), mv[1].text_similarity), reverse=True)
    found = Neighbours()
    written = 0
    possible_at = conflict_model.thresholds(semantic)[1]
    for mem, verdict in weighed[:max_related]:
        write = verdict.conflict and written < max_conflicts
        written += write
        pair = ix.pair_hash(mem.id, new_id)
        common = sorted(shared & set(mem.entities))
        weight = round(_weight(verdict), 2)
        found.listed.append(
            ListedMemory(
                id=mem.id,
                path=mem.path,
                title=mem.title,
                type=mem.type,
                kind=_kind(verdict, write),
                weight=weight,
                evidence=evidence(verdict),
                written=write,
                pair_hash=pair,
                settle="supersede" if write or weight >= possible_at else "keep_both",
                shared_entities=common,
            )
        )
        if write:
            found.conflicts.append(
                ConflictCandidate(
                    id=mem.id,
                    path=mem.path,
                    title=mem.title,
                    excerpt=mem.excerpt,
                    type=mem.type,
                    trust=mem.trust,
                    origin=provenance.shown(mem.origin),
                    shared_entities=common,
                    text_similarity=round(verdict.text_similarity, 3),
                    days_apart=days_between(created, mem.created),
                    latest_wins_eligible=latest_wins_eligible(mem_type, created, trust, mem.created, mem.trust),
                    pair_hash=pair,
                    reasons=verdict.reasons,
                )
            )
    return found


def _weight(verdict: Assessment) -> float:
    """The weighed probability; a verdict the rules alone settle (the same body under another title) has none
    and ranks as a possible replacement."""
    if verdict.weight is not None:
        return verdict.weight
    return conflict_model.thresholds()[1] if verdict.kind == NEIGHBOUR_DUPLICATE else 0.0


def _kind(verdict: Assessment, written: bool) -> str:
    if written:
        return KIND_CONFLICT
    if verdict.conflict or verdict.kind == NEIGHBOUR_POSSIBLE:  # a conflict beyond max_conflicts is not written
        return KIND_POSSIBLE
    return KIND_DUPLICATE if verdict.kind == NEIGHBOUR_DUPLICATE else KIND_RELATED


def evidence(verdict: Assessment) -> str:
    """The reasons the rules found, in one line (the first ones: the attribute, then what differs)."""
    found = [_OVERLAP.sub("", r) for r in verdict.reasons[:EVIDENCE_REASONS]]
    return "; ".join(found) or "shares an entity"


_OVERLAP = re.compile(r" \(word overlap [0-9.]+\)")
