"""Records exchanged across module borders: the memory itself and every answer the service gives.

The service returns these pydantic models; the MCP edge hands them straight to the SDK as structured
output and the CLI prints them as JSON, so one definition serves every surface.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .memory import ConflictRecord, Memory, first_paragraph
from .ranking import ScoreParts
from .vocabulary import MemoryType, State, Trust

# what the conflict gate calls a neighbour it does not record (search/conflicts.py)
NeighbourKind = Literal["related", "near-duplicate", "possible-conflict"]
# what a listed memory is to the new one: a conflict written into the new file, or one of the kinds above
ListedKind = Literal["conflict", "possible-conflict", "near-duplicate", "related"]
# the one call the gate suggests to settle a listed pair (`memory_update op=resolve_conflict`, `resolution`)
SettleCall = Literal["supersede", "keep_both"]

# re-exported: the record is declared in memory.py (no pydantic, so the merge driver starts fast), the words
# in vocabulary.py
__all__ = ["ConflictRecord", "Memory", "MemoryType", "State", "Trust", "first_paragraph"]


# ---------------------------------------------------------------- answers


class Answer(BaseModel):
    """The base of every model here: its validator and serializer are built at its first use, not at import
    (a one-shot command builds the few it answers with, not all forty)."""

    model_config = ConfigDict(defer_build=True)


@dataclass(frozen=True)
class Progress:
    """How far a long operation is: `done` of `total` items in `stage` ("index" files, "embed" or "import"
    memories)."""

    stage: str
    done: int
    total: int
    scope: str = "global"

    @property
    def message(self) -> str:
        what = {"index": "files indexed", "import": "memories imported"}.get(self.stage, "memories embedded")
        return f"{self.scope}: {self.done}/{self.total} {what}"


# the core calls it; edges translate (a terminal bar, MCP progress notifications)
ProgressFn = Callable[[Progress], None]


def stage_reporter(progress: ProgressFn | None, stage: str, scope: str) -> Callable[[int, int], None]:
    """`report(done, total)` for one stage, passing on about 100 steps at most (plus the first and the last)."""

    def report(done: int, total: int) -> None:
        if progress is not None and (done in (0, total) or done % max(1, total // 100) == 0):
            progress(Progress(stage, done, total, scope))

    return report


class ReconcileReport(Answer):
    """What one reconcile pass did. A no-change pass has hashed == reindexed == removed == 0."""

    scanned: int = 0
    hashed: int = 0
    reindexed: int = 0
    removed: int = 0
    unparseable: int = 0
    rebuilt: bool = False
    rebuild_reason: str | None = None
    index_in_memory: str | None = Field(
        default=None,
        description="Set when the index file cannot be used (e.g. read-only): why, and that answers come from "
        "an in-memory index rebuilt from the Markdown files (recall counts are not kept).",
    )
    quarantined: list[str] = Field(
        default_factory=list, description="Memories (paths) this pass put in quarantine: the screen caught them."
    )
    scan: str = Field(
        default="full",
        description="full: every file in memories/ was stat-ed; changed-files: the change watch (inotify) named "
        "the only files that changed and just those were read; none: the watch saw no change and no other process "
        "wrote the index, so nothing was read.",
    )
    renumbered: list[str] = Field(
        default_factory=list,
        description="Files that held an id another file keeps (a copy made by hand), given a new id of their own by "
        "this pass: 'path: ID stays with <path>; this file is now NEW_ID'.",
    )
    seconds: float = 0.0


class Unparseable(Answer):
    path: str
    reason: str
    scope: str = "global"


class SkippedDocument(Answer):
    path: str
    reason: str


class DocumentsReport(Answer):
    """What the reconcile pass did to the indexed document sources."""

    scanned: int = 0
    hashed: int = 0
    reindexed: int = 0
    removed: int = 0
    skipped: list[SkippedDocument] = Field(default_factory=list)
    seconds: float = 0.0


class SourceStatus(Answer):
    label: str
    path: str
    files: int
    skipped: int
    bytes: int
    last_indexed: str | None


class ScopeReport(Answer):
    scope: str
    store: str
    root: str
    reconcile: ReconcileReport


class ConflictSummary(Answer):
    scope: str = "global"
    pair_hash: str
    a_id: str
    b_id: str
    a_title: str
    b_title: str
    detected: str


class IndexReport(Answer):
    store: str
    reconcile: ReconcileReport = Field(description="Summed over every scope this call reconciled.")
    scopes: list[ScopeReport] = Field(default_factory=list)
    unparseable: list[Unparseable] = Field(default_factory=list)
    unresolved_conflicts: list[ConflictSummary] = Field(
        default_factory=list, description="The oldest open conflicts, at most 10 per scope (see the total)."
    )
    unresolved_conflicts_total: int = 0
    documents: DocumentsReport | None = None


class ScoreComponents(Answer):
    text: float
    trust: float
    state: float
    freshness: float
    heat: float
    word: float
    trigram: float
    like: float
    coverage: float


# the ranking's own record of the same parts (domain/ranking.py, no pydantic): one list of fields for both
assert tuple(ScoreComponents.model_fields) == ScoreParts._fields, "ScoreComponents and ranking.ScoreParts differ"


class HandoffInfo(Answer):
    """The current handoff of one scope: where the last session left off."""

    id: str
    scope: str = "global"
    path: str
    title: str
    excerpt: str
    updated: str


class ContextAnswer(Answer):
    """The session-start context (memory://context, `memory-mcp context`): Markdown within a byte budget."""

    text: str
    bytes: int
    budget_bytes: int
    handoff: HandoffInfo | None = None
    memories_shown: int = 0
    memories_left_out: int = Field(default=0, description="Active memories that did not fit the budget.")
    unresolved_conflicts: int = 0
    review_due: int = 0
    quarantined: int = Field(default=0, description="Memories held back in quarantine (never listed here).")


class OpenConflict(Answer):
    """An unresolved conflict a recalled memory is in: the memory on the other side of the pair."""

    pair_hash: str
    other_id: str
    other_title: str


class RecallResult(Answer):
    id: str = Field(description="Memory id, or `doc:<path>#<start line>` for a document chunk.")
    kind: str = Field(default="memory", description="memory | document")
    scope: str = Field(default="global", description="local | global (documents: the scope indexing them)")
    label: str | None = Field(default=None, description="Document source label.")
    path: str
    line: int
    title: str
    excerpt: str
    score: float
    components: ScoreComponents | None = Field(default=None, description="None for a handoff listed without a query.")
    type: str
    state: str
    trust: str
    origin: str | None = Field(default=None, description="Where the memory came from (documents: none).")
    entities: list[str]
    updated: str
    cosine: float | None = Field(default=None, description="Hybrid mode: cosine of this memory to the query.")
    fused: float | None = Field(
        default=None, description="Hybrid mode: fused keyword and cosine score (results are ordered by it)."
    )
    conflicts: list[OpenConflict] = Field(
        default_factory=list,
        description="Unresolved conflicts this memory is in (memory_update op=resolve_conflict settles one).",
    )
    current_version_of: list[str] = Field(
        default_factory=list,
        description="Ids of superseded memories (directly or through a chain) this one is the current version of: "
        "those listed below it, and the one that brought it into the results.",
    )
    matched: bool = Field(
        default=True,
        description="False: the query did not find this memory; it is here as the current version of a "
        "superseded result that it did find (listed right above it), or as that result's continuation.",
    )
    quarantine: str | None = Field(
        default=None, description="Set when the memory is in quarantine (the screen caught it): the day and why."
    )
    continues: str | None = Field(
        default=None,
        description="Id of the result right above this memory that it follows in its thread (the best result's "
        "next memories are shown after it: a reply often holds the answer to words the message before it had).",
    )

    def cited_bytes(self) -> int:
        """What a result costs against a recall budget: the UTF-8 bytes of its title, its citation
        `path:line` and its excerpt, one line each (what every rendering of a result shows)."""
        return len(f"{self.title}\n{self.path}:{self.line}\n{self.excerpt}\n".encode())


class CollapsedResult(Answer):
    """A result left out because it restates one ranked above it."""

    kept_id: str
    dropped_id: str
    reason: str = Field(description="same text | word overlap J | cosine C")


class RecallAnswer(Answer):
    query: str
    plan: str = Field(description="Which query legs ran: all-terms, any-term, trigram, like, cosine.")
    results: list[RecallResult]
    index: IndexReport
    mode: str = Field(default="bm25", description="The ranking that ran: bm25 (keywords) or hybrid (+ cosine).")
    semantic_available: bool = Field(default=False, description="An embedding provider is configured and working.")
    semantic_note: str = Field(default="", description="Why hybrid did not run, or what it has not embedded yet.")
    semantic_pending: int = Field(default=0, description="Hybrid mode: memories without a vector yet.")
    collapsed: list[CollapsedResult] = Field(
        default_factory=list, description="Near-duplicates dropped in favour of the better-ranked result."
    )
    budget_bytes: int | None = Field(
        default=None,
        description="The budget asked for: results were filled best first while the bytes of their title, "
        "path:line and excerpt (`cited_bytes`) fit in it.",
    )
    used_bytes: int | None = Field(default=None, description="With a budget: the cited bytes of the results.")
    left_out: int = Field(default=0, description="With a budget: ranked results that did not fit.")
    as_of: str | None = Field(default=None, description="An as-of view: what the store held as current that day.")


class ConflictCandidate(Answer):
    """Judgement material for a neighbour of a new memory: never acted on automatically."""

    id: str
    path: str
    title: str
    excerpt: str
    type: str
    trust: str
    origin: str = Field(default="origin unknown", description="Where it came from.")
    shared_entities: list[str]
    text_similarity: float
    days_apart: float
    latest_wins_eligible: bool
    pair_hash: str
    reasons: list[str] = Field(default_factory=list, description="The evidence that makes this pair a conflict.")


class ListedMemory(Answer):
    """An existing memory the new one may contradict or replace: judgement material for the agent, best first."""

    id: str
    path: str
    title: str
    type: str
    kind: ListedKind = Field(
        description="conflict (written into the new file as an open pair), possible-conflict (likely, written "
        "nowhere), near-duplicate (says the same) or related (another attribute, scope or subject)."
    )
    weight: float = Field(description="The gate's probability that the new memory contradicts this one (0..1).")
    evidence: str = Field(description="Why it is listed, in one line (the words the gate read, not a verdict).")
    written: bool = Field(description="Recorded in the new memory's file (`conflicts:`), shown at session start.")
    pair_hash: str
    settle: SettleCall = Field(
        description="The likelier settlement: supersede (the new memory replaces it) or keep_both (not a conflict: "
        "recorded, never listed again), each one memory_update op=resolve_conflict id=<new> other_id=<this>."
    )
    shared_entities: list[str] = Field(default_factory=list)


class RememberAnswer(Answer):
    id: str
    scope: str = "global"
    path: str
    created: bool = Field(description="False when the same normalised text already existed.")
    deduplicated_state: str | None = None
    superseded: list[str] = Field(default_factory=list)
    message: str = ""
    conflicts: list[ConflictCandidate] = Field(
        default_factory=list,
        description="The listed memories this one contradicts near certainly: recorded as open pairs in its file.",
    )
    listed: list[ListedMemory] = Field(
        default_factory=list,
        description="Best first: existing memories this one may contradict or replace, each settled by one "
        "memory_update op=resolve_conflict id=<this id> other_id=<its id> resolution=supersede or keep_both.",
    )
    quarantine: str | None = Field(
        default=None,
        description="Set when the poisoning screen held the memory back: the day and the reason. Kept, never in the "
        "session-start context, fenced and marked in recall; only a person releases it (CLI or browser view).",
    )
    index: IndexReport


class ChainLink(Answer):
    id: str
    title: str
    state: str
    path: str | None
    created: str | None = None
    superseded_at: str | None = Field(
        default=None, description="When a supersede ended it (recorded, else its successor's created)."
    )


class ConflictHistoryEntry(Answer):
    pair_hash: str
    other_id: str
    other_title: str | None = None
    status: str
    detected: str
    resolution: str | None = None
    resolved: str | None = None
    note: str | None = None


class ReadAnswer(Answer):
    id: str | None
    scope: str = "global"
    kind: str = Field(default="memory", description="memory | document")
    label: str | None = None
    path: str
    sha256: str = Field(description="sha256 of the whole file as read: pass it as expected_sha256 to edit safely.")
    text: str
    from_line: int
    to_line: int
    total_lines: int
    frontmatter: dict[str, Any]
    trust: str | None = Field(default=None, description="A memory's trust (documents: none).")
    origin: str | None = Field(default=None, description="Where the memory came from, or 'origin unknown'.")
    superseded_at: str | None = Field(
        default=None, description="When a supersede ended it (recorded, else its successor's created)."
    )
    supersedes_chain: list[ChainLink] = Field(default_factory=list)
    superseded_by_chain: list[ChainLink] = Field(default_factory=list)
    conflicts: list[ConflictHistoryEntry] = Field(default_factory=list)
    quarantine: str | None = Field(default=None, description="Set when the memory is in quarantine: why.")
    index: IndexReport


class EditableMemory(Answer):
    """A memory's editable fields and the sha256 of the exact file bytes they were parsed from."""

    id: str
    path: str
    sha256: str
    title: str
    body: str
    type: str
    state: str
    trust: str
    entities: list[str]
    source: str
    review_after: str | None
    valid_from: str | None = None
    valid_until: str | None = None
    follows: str | None = None


class MemoryItem(Answer):
    """One row of a filtered listing (no query): what a browser list shows."""

    id: str
    path: str
    title: str
    excerpt: str
    type: str
    state: str
    trust: str
    origin: str = "origin unknown"
    entities: list[str]
    created: str
    updated: str
    quarantine: str | None = None


class BrowseAnswer(Answer):
    items: list[MemoryItem]
    total: int = Field(description="Memories matching the filters (items may be a page of them).")
    state_counts: dict[str, int] = Field(description="Matches per state under the other filters.")
    entities: list[str] = Field(description="Every canonical entity name in the store, sorted.")
    index: IndexReport


class StoreInfo(Answer):
    """One place calls can reach: a scope and, for named sibling stores of the global one, its `store` name."""

    scope: str
    store: str | None = Field(description="The `store` argument that reaches it (named sibling stores only).")
    name: str
    root: str
    memories_dir: str
    home: bool = Field(description="Where new memories go by default.")


class UpdateAnswer(Answer):
    op: str
    id: str
    path: str
    state: str
    changed: list[str] = Field(description="Ids of every memory file this operation rewrote.")
    message: str
    quarantine: str | None = Field(default=None, description="Set when the memory is in quarantine: why.")
    index: IndexReport


class QuarantinedMemory(BaseModel):
    id: str
    scope: str = "global"
    title: str
    path: str
    state: str
    quarantine: str = Field(description="The day and the reason the screen held it back.")


class QuarantineAnswer(BaseModel):
    """The memories in quarantine (`memory-mcp quarantine`): released only by a person, CLI or browser view."""

    memories: list[QuarantinedMemory]
    index: IndexReport


class ForgetAnswer(Answer):
    id: str
    mode: str
    path: str
    state: str | None
    message: str
    index: IndexReport


class CompactionCandidate(Answer):
    entity: str
    ids: list[str]
    titles: list[str]
    oldest: str
    newest: str
    suggestion: str


class ReviewDue(Answer):
    id: str
    title: str
    path: str
    review_after: str


class ExpiredMemory(Answer):
    """An active memory past its `valid_until`: not served by default; review, archive or extend it."""

    id: str
    title: str
    path: str
    valid_until: str


class IndexFreshness(Answer):
    path: str
    size_bytes: int
    schema_version: int
    built_at: str
    last_reconcile: ReconcileReport
    change_watch: str = Field(
        default="off", description="'on (inotify)' when unchanged calls skip the scan, else 'off: <why>'."
    )
    not_restored_by_rebuild: list[str]


class DuplicatePair(Answer):
    """Two memories saying the same normalised text (e.g. remembered on two machines before a sync); recall
    serves the pair once."""

    kept_id: str
    duplicate_id: str
    title: str


class StatusAnswer(Answer):
    scope: str = "global"
    scopes: list[str] = Field(default_factory=list, description="Scopes this server serves.")
    sources: list[SourceStatus] = Field(default_factory=list, description="Indexed document sources.")
    store: str
    root: str
    total: int
    by_state: dict[str, int]
    by_type: dict[str, int]
    by_trust: dict[str, int]
    by_origin: dict[str, int] = Field(default_factory=dict, description="Memories per origin (where they came from).")
    handoff: HandoffInfo | None = Field(default=None, description="The current handoff (where work left off).")
    unresolved_conflicts: list[ConflictSummary] = Field(description="The oldest open conflicts, at most 200.")
    unresolved_conflicts_total: int = 0
    review_due: list[ReviewDue]
    expired: list[ExpiredMemory] = Field(
        default_factory=list, description="Past valid_until, not recalled: review, archive or extend (edit)."
    )
    compaction_candidates: list[CompactionCandidate]
    unparseable: list[Unparseable]
    index: IndexFreshness
    duplicates: list[DuplicatePair] = Field(
        default_factory=list, description="Memories that say the same text (at most 200): archive or forget one."
    )


class ExportAnswer(Answer):
    text: str
    memories: int
    scopes: list[str]
    path: str | None = None  # the absolute path written (export_to)


class Mismatch(Answer):
    scope: str = "global"
    path: str
    id: str | None
    problem: str


class AutoClosedConflict(Answer):
    """An open pair recorded by an earlier conflict gate that today's gate does not count as a conflict."""

    scope: str = "global"
    pair_hash: str
    recorded_in: str = Field(description="The memory whose file records the pair (now resolved: auto-closed).")
    other_id: str
    reasons: list[str]


class ReindexAnswer(Answer):
    store: str
    scopes: list[str] = Field(default_factory=list)
    files: int
    memories: int
    unparseable: list[Unparseable]
    verified: bool
    mismatches: list[Mismatch]
    seconds: float
    auto_closed: list[AutoClosedConflict] = Field(
        default_factory=list,
        description="Open pairs from an earlier gate closed as no longer conflicting, and why (with verify: the "
        "pairs a reindex would close; verify writes no memory file).",
    )
    embedded: int = Field(default=0, description="Memories embedded for hybrid search by this reindex.")
    semantic_note: str = ""
    not_saved: str | None = Field(
        default=None,
        description="Set when the rebuilt index could not be saved (e.g. a read-only store): why; the rebuild "
        "then only served this process from a transient in-memory index.",
    )
    quarantined: list[str] = Field(
        default_factory=list, description="Memories (paths) this reindex put in quarantine: the screen caught them."
    )


class SyncChanges(Answer):
    """Memory files one side of a sync changed: the titles (every one), by kind."""

    added: list[str] = Field(default_factory=list)
    edited: list[str] = Field(default_factory=list)
    archived: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    other: list[str] = Field(default_factory=list, description="dictionary.md, config.toml")


class SyncAnswer(Answer):
    """What `memory-mcp sync` did: what went out, what came in, what the merge surfaced."""

    repo: str
    remote: str
    branch: str
    sent: SyncChanges
    received: SyncChanges
    surfaced: list[str] = Field(
        description="Merge decisions a person should know: concurrent edits kept as conflict pairs, kept edits of "
        "deleted memories, state clashes, files kept both ways."
    )
    setup: list[str] = Field(default_factory=list, description="What set-up changed (git init, attributes, driver).")
    pushed: bool
    push_attempts: int
    memory_merges: int = Field(description="Files changed on both sides that the memory-aware merge settled.")
    merge_seconds: float
    git_seconds: float
    reindex_seconds: float
    seconds: float
    index: IndexReport | None = None
    from_teammates: dict[str, list[str]] = Field(
        default_factory=dict,
        description="New memories another git author added, by author (ids): the next context names them.",
    )


class GitSetupAnswer(Answer):
    repo: str
    changed: list[str] = Field(description="Empty when everything was already set up.")
