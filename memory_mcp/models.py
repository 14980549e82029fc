"""Records exchanged across module borders: the memory itself and every answer the service gives.

The service returns these pydantic models; the MCP edge hands them straight to the SDK as structured
output and the CLI prints them as JSON, so one definition serves every surface.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field


class MemoryType(StrEnum):
    FACT = "fact"
    PREFERENCE = "preference"
    DECISION = "decision"
    EPISODE = "episode"
    REFERENCE = "reference"
    KNOWLEDGE = "knowledge"


class State(StrEnum):
    ACTIVE = "active"
    ARCHIVED = "archived"
    DEPRECATED = "deprecated"


class Trust(StrEnum):
    USER_STATED = "user-stated"
    AGENT_INFERRED = "agent-inferred"
    IMPORTED = "imported"


@dataclass
class ConflictRecord:
    """One conflict pair as recorded in the newer memory's frontmatter (`conflicts:`)."""

    other_id: str
    status: str  # "open" | "resolved"
    detected: str
    resolution: str | None = None
    resolved: str | None = None
    note: str | None = None


@dataclass
class Memory:
    """A parsed canon file. `body_line` is the 1-based file line where the body starts."""

    id: str
    type: MemoryType
    state: State
    trust: Trust
    title: str
    body: str
    entities: list[str]
    source: str
    created: str
    updated: str
    review_after: str | None
    supersedes: list[str]
    superseded_by: list[str]
    related: list[str] = field(default_factory=list)
    conflicts: list[ConflictRecord] = field(default_factory=list)
    title_line: int = 1
    body_line: int = 1

    @property
    def excerpt(self) -> str:
        return first_paragraph(self.body)


def first_paragraph(body: str, limit: int = 320) -> str:
    para = ""
    for block in body.strip().split("\n\n"):
        if block.strip():
            para = " ".join(line.strip() for line in block.strip().splitlines())
            break
    return para if len(para) <= limit else para[: limit - 1].rstrip() + "…"


# ---------------------------------------------------------------- answers


class ReconcileReport(BaseModel):
    """What one reconcile pass did. A no-change pass has hashed == reindexed == removed == 0."""

    scanned: int = 0
    hashed: int = 0
    reindexed: int = 0
    removed: int = 0
    unparseable: int = 0
    rebuilt: bool = False
    rebuild_reason: str | None = None
    seconds: float = 0.0


class Unparseable(BaseModel):
    path: str
    reason: str


class ConflictSummary(BaseModel):
    pair_hash: str
    a_id: str
    b_id: str
    a_title: str
    b_title: str
    detected: str


class IndexReport(BaseModel):
    store: str
    reconcile: ReconcileReport
    unparseable: list[Unparseable] = Field(default_factory=list)
    unresolved_conflicts: list[ConflictSummary] = Field(default_factory=list)


class ScoreComponents(BaseModel):
    text: float
    trust: float
    state: float
    freshness: float
    heat: float
    word: float
    trigram: float
    like: float
    coverage: float


class RecallResult(BaseModel):
    id: str
    path: str
    line: int
    title: str
    excerpt: str
    score: float
    components: ScoreComponents
    type: str
    state: str
    trust: str
    entities: list[str]
    updated: str


class RecallAnswer(BaseModel):
    query: str
    plan: str = Field(description="Which query legs ran: all-terms, any-term, trigram, like.")
    results: list[RecallResult]
    index: IndexReport


class ConflictCandidate(BaseModel):
    """Judgement material for a neighbour of a new memory: never acted on automatically."""

    id: str
    path: str
    title: str
    excerpt: str
    type: str
    trust: str
    shared_entities: list[str]
    text_similarity: float
    days_apart: float
    latest_wins_eligible: bool
    pair_hash: str


class RememberAnswer(BaseModel):
    id: str
    path: str
    created: bool = Field(description="False when the same normalised text already existed.")
    deduplicated_state: str | None = None
    superseded: list[str] = Field(default_factory=list)
    conflicts: list[ConflictCandidate] = Field(default_factory=list)
    index: IndexReport


class ChainLink(BaseModel):
    id: str
    title: str
    state: str
    path: str | None


class ConflictHistoryEntry(BaseModel):
    pair_hash: str
    other_id: str
    status: str
    detected: str
    resolution: str | None = None
    resolved: str | None = None
    note: str | None = None


class ReadAnswer(BaseModel):
    id: str | None
    path: str
    text: str
    from_line: int
    to_line: int
    total_lines: int
    frontmatter: dict[str, Any]
    supersedes_chain: list[ChainLink] = Field(default_factory=list)
    superseded_by_chain: list[ChainLink] = Field(default_factory=list)
    conflicts: list[ConflictHistoryEntry] = Field(default_factory=list)
    index: IndexReport


class UpdateAnswer(BaseModel):
    op: str
    id: str
    path: str
    state: str
    changed: list[str] = Field(description="Ids of every memory file this operation rewrote.")
    message: str
    index: IndexReport


class ForgetAnswer(BaseModel):
    id: str
    mode: str
    path: str
    state: str | None
    message: str
    index: IndexReport


class CompactionCandidate(BaseModel):
    entity: str
    ids: list[str]
    titles: list[str]
    oldest: str
    newest: str
    suggestion: str


class ReviewDue(BaseModel):
    id: str
    title: str
    path: str
    review_after: str


class IndexFreshness(BaseModel):
    path: str
    size_bytes: int
    schema_version: int
    built_at: str
    last_reconcile: ReconcileReport
    not_restored_by_rebuild: list[str]


class StatusAnswer(BaseModel):
    store: str
    root: str
    total: int
    by_state: dict[str, int]
    by_type: dict[str, int]
    by_trust: dict[str, int]
    unresolved_conflicts: list[ConflictSummary]
    review_due: list[ReviewDue]
    compaction_candidates: list[CompactionCandidate]
    unparseable: list[Unparseable]
    index: IndexFreshness


class Mismatch(BaseModel):
    path: str
    id: str | None
    problem: str


class ReindexAnswer(BaseModel):
    store: str
    files: int
    memories: int
    unparseable: list[Unparseable]
    verified: bool
    mismatches: list[Mismatch]
    seconds: float
