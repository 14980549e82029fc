"""Records exchanged across module borders: the memory itself and every answer the service gives.

The service returns these pydantic models; the MCP edge hands them straight to the SDK as structured
output and the CLI prints them as JSON, so one definition serves every surface. The answers of the calls a hook
makes in a new process (recall, the session-start context, the reports inside every answer) are plain dataclasses
declared in answers.py and re-exported here: a one-shot `memory-mcp recall` imports no pydantic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .answers import (
    CollapsedResult,
    ConflictSummary,
    ContextAnswer,
    DocumentsReport,
    HandoffInfo,
    IndexReport,
    OpenConflict,
    RecallAnswer,
    RecallResult,
    ReconcileReport,
    ReviewDue,
    ScopeReport,
    ScoreComponents,
    SkippedDocument,
    SourceStatus,
    Unparseable,
)
from .memory import ConflictRecord, Memory, first_paragraph
from .status_answers import CompactionCandidate, DuplicatePair, ExpiredMemory, IndexFreshness, StatusAnswer
from .vocabulary import MemoryType, State, Trust

# what the conflict gate calls a neighbour it does not record (search/conflicts.py)
NeighbourKind = Literal["related", "near-duplicate", "possible-conflict"]
# what a listed memory is to the new one: a conflict written into the new file, or one of the kinds above
ListedKind = Literal["conflict", "possible-conflict", "near-duplicate", "related"]
# the one call the gate suggests to settle a listed pair (`memory_update op=resolve_conflict`, `resolution`)
SettleCall = Literal["supersede", "keep_both"]

# re-exported: the record is declared in memory.py (no pydantic, so the merge driver starts fast), the words
# in vocabulary.py, the answers a one-shot text command prints in answers.py and status_answers.py (no pydantic
# either)
__all__ = [
    "ConflictRecord",
    "Memory",
    "MemoryType",
    "State",
    "Trust",
    "first_paragraph",
    "CollapsedResult",
    "CompactionCandidate",
    "ConflictSummary",
    "ContextAnswer",
    "DocumentsReport",
    "DuplicatePair",
    "ExpiredMemory",
    "HandoffInfo",
    "IndexFreshness",
    "IndexReport",
    "OpenConflict",
    "RecallAnswer",
    "RecallResult",
    "ReconcileReport",
    "ReviewDue",
    "ScopeReport",
    "ScoreComponents",
    "SkippedDocument",
    "SourceStatus",
    "StatusAnswer",
    "Unparseable",
]


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
