"""The answer `memory-mcp status` (and `memory_status`) builds and prints, with its own records: plain dataclasses
(`answers.Record`) like the recall's and the context's, so a one-shot `status` imports no pydantic; apart from
answers.py so that a recall or a context does not create them (~0.45 ms each in a new process)."""

from __future__ import annotations

from dataclasses import dataclass

from .answers import ConflictSummary, HandoffInfo, ReconcileReport, Record, ReviewDue, SourceStatus, Unparseable, _field


@dataclass(kw_only=True)
class CompactionCandidate(Record):
    entity: str
    ids: list[str]
    titles: list[str]
    oldest: str
    newest: str
    suggestion: str


@dataclass(kw_only=True)
class ExpiredMemory(Record):
    """An active memory past its `valid_until`: not served by default; review, archive or extend it."""

    id: str
    title: str
    path: str
    valid_until: str


@dataclass(kw_only=True)
class IndexFreshness(Record):
    path: str
    size_bytes: int
    schema_version: int
    built_at: str
    last_reconcile: ReconcileReport
    change_watch: str = _field(
        default="off", description="'on (inotify)' when unchanged calls skip the scan, else 'off: <why>'."
    )
    not_restored_by_rebuild: list[str]


@dataclass(kw_only=True)
class DuplicatePair(Record):
    """Two memories saying the same normalised text (e.g. remembered on two machines before a sync); recall
    serves the pair once."""

    kept_id: str
    duplicate_id: str
    title: str


@dataclass(kw_only=True)
class StatusAnswer(Record):
    scope: str = "global"
    scopes: list[str] = _field(default_factory=list, description="Scopes this server serves.")
    sources: list[SourceStatus] = _field(default_factory=list, description="Indexed document sources.")
    store: str
    root: str
    total: int
    by_state: dict[str, int]
    by_type: dict[str, int]
    by_trust: dict[str, int]
    by_origin: dict[str, int] = _field(default_factory=dict, description="Memories per origin (where they came from).")
    handoff: HandoffInfo | None = _field(default=None, description="The current handoff (where work left off).")
    unresolved_conflicts: list[ConflictSummary] = _field(description="The oldest open conflicts, at most 200.")
    unresolved_conflicts_total: int = 0
    review_due: list[ReviewDue]
    expired: list[ExpiredMemory] = _field(
        default_factory=list, description="Past valid_until, not recalled: review, archive or extend (edit)."
    )
    compaction_candidates: list[CompactionCandidate]
    unparseable: list[Unparseable]
    index: IndexFreshness
    duplicates: list[DuplicatePair] = _field(
        default_factory=list, description="Memories that say the same text (at most 200): archive or forget one."
    )
