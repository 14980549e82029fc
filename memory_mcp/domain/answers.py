"""The answers a one-shot text command builds and prints: the reconcile and index reports, recall's results and
answer, the session-start context (the status's own records: status_answers.py). Plain dataclasses (`Record`), so
`memory-mcp recall`, `context` or `status` never imports pydantic (~70 ms of a ~100 ms call's floor); every other
answer is a pydantic model in models.py, which re-exports these, and a pydantic model holds them as fields like
any dataclass.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from functools import cache
from typing import TYPE_CHECKING, Any, Literal, Self

from .ranking import ScoreParts


class Record:
    """The base of the answers a one-shot text command builds and prints (the reconcile and index reports, recall's
    results and answer, the session-start context): plain dataclasses, so `memory-mcp recall` or `context` never
    imports pydantic. The pydantic names the other answers have are kept: `model_dump` (and its JSON), `model_copy`,
    `model_validate`, through pydantic's TypeAdapter of the class, built at its first use (`--json`, the MCP
    server); pydantic reads each field's description from its metadata into the JSON schema (`_field`)."""

    __slots__ = ()

    def model_dump(self, *, mode: Literal["python", "json"] = "python") -> dict[str, Any]:
        return _adapter(type(self)).dump_python(self, mode=mode)

    def model_dump_json(self) -> str:
        """Compact JSON of the plain fields, written without pydantic (every reconcile stores its report so)."""
        return json.dumps(asdict(self), separators=(",", ":"), ensure_ascii=False)

    def model_copy(self, *, update: dict[str, Any] | None = None) -> Self:
        return replace(self, **(update or {}))

    @classmethod
    def model_validate(cls, data: Any) -> Self:
        return _adapter(cls).validate_python(data)


if TYPE_CHECKING:
    from pydantic import TypeAdapter


@cache
def _adapter(cls: type) -> TypeAdapter[Any]:
    from pydantic import TypeAdapter

    return TypeAdapter(cls)


def _field(*, default: Any = MISSING, default_factory: Any = MISSING, description: str | None = None) -> Any:
    """A record's field, as pydantic's `Field` is written: its default and the description its schema shows."""
    return field(
        default=default, default_factory=default_factory, metadata={"description": description} if description else {}
    )


@dataclass(kw_only=True)
class ReconcileReport(Record):
    """What one reconcile pass did. A no-change pass has hashed == reindexed == removed == 0."""

    scanned: int = 0
    hashed: int = 0
    reindexed: int = 0
    removed: int = 0
    unparseable: int = 0
    rebuilt: bool = False
    rebuild_reason: str | None = None
    index_in_memory: str | None = _field(
        default=None,
        description="Set when the index file cannot be used (e.g. read-only): why, and that answers come from "
        "an in-memory index rebuilt from the Markdown files (recall counts are not kept).",
    )
    quarantined: list[str] = _field(
        default_factory=list, description="Memories (paths) this pass put in quarantine: the screen caught them."
    )
    scan: str = _field(
        default="full",
        description="full: every file in memories/ was stat-ed; changed-files: the change watch (inotify) named "
        "the only files that changed and just those were read; none: the watch saw no change and no other process "
        "wrote the index, so nothing was read.",
    )
    renumbered: list[str] = _field(
        default_factory=list,
        description="Files that held an id another file keeps (a copy made by hand), given a new id of their own by "
        "this pass: 'path: ID stays with <path>; this file is now NEW_ID'.",
    )
    seconds: float = 0.0


@dataclass(kw_only=True)
class Unparseable(Record):
    path: str
    reason: str
    scope: str = "global"


@dataclass(kw_only=True)
class SkippedDocument(Record):
    path: str
    reason: str


@dataclass(kw_only=True)
class DocumentsReport(Record):
    """What the reconcile pass did to the indexed document sources."""

    scanned: int = 0
    hashed: int = 0
    reindexed: int = 0
    removed: int = 0
    skipped: list[SkippedDocument] = _field(default_factory=list)
    seconds: float = 0.0


@dataclass(kw_only=True)
class SourceStatus(Record):
    label: str
    path: str
    files: int
    skipped: int
    bytes: int
    last_indexed: str | None


@dataclass(kw_only=True)
class ScopeReport(Record):
    scope: str
    store: str
    root: str
    reconcile: ReconcileReport


@dataclass(kw_only=True)
class ConflictSummary(Record):
    scope: str = "global"
    pair_hash: str
    a_id: str
    b_id: str
    a_title: str
    b_title: str
    detected: str


@dataclass(kw_only=True)
class IndexReport(Record):
    store: str
    reconcile: ReconcileReport = _field(description="Summed over every scope this call reconciled.")
    scopes: list[ScopeReport] = _field(default_factory=list)
    unparseable: list[Unparseable] = _field(default_factory=list)
    unresolved_conflicts: list[ConflictSummary] = _field(
        default_factory=list, description="The oldest open conflicts, at most 10 per scope (see the total)."
    )
    unresolved_conflicts_total: int = 0
    documents: DocumentsReport | None = None


@dataclass(kw_only=True)
class ScoreComponents(Record):
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
assert tuple(f.name for f in fields(ScoreComponents)) == ScoreParts._fields, "ScoreComponents, ScoreParts differ"


@dataclass(kw_only=True)
class HandoffInfo(Record):
    """The current handoff of one scope: where the last session left off."""

    id: str
    scope: str = "global"
    path: str
    title: str
    excerpt: str
    updated: str


@dataclass(kw_only=True)
class ContextAnswer(Record):
    """The session-start context (memory://context, `memory-mcp context`): Markdown within a byte budget."""

    text: str
    bytes: int
    budget_bytes: int
    handoff: HandoffInfo | None = None
    memories_shown: int = 0
    memories_left_out: int = _field(default=0, description="Active memories that did not fit the budget.")
    unresolved_conflicts: int = 0
    review_due: int = 0
    quarantined: int = _field(default=0, description="Memories held back in quarantine (never listed here).")


@dataclass(kw_only=True)
class OpenConflict(Record):
    """An unresolved conflict a recalled memory is in: the memory on the other side of the pair."""

    pair_hash: str
    other_id: str
    other_title: str


@dataclass(kw_only=True)
class RecallResult(Record):
    id: str = _field(description="Memory id, or `doc:<path>#<start line>` for a document chunk.")
    kind: str = _field(default="memory", description="memory | document")
    scope: str = _field(default="global", description="local | global (documents: the scope indexing them)")
    label: str | None = _field(default=None, description="Document source label.")
    path: str
    line: int
    title: str
    excerpt: str
    score: float
    components: ScoreComponents | None = _field(default=None, description="None for a handoff listed without a query.")
    type: str
    state: str
    trust: str
    origin: str | None = _field(default=None, description="Where the memory came from (documents: none).")
    entities: list[str]
    updated: str
    cosine: float | None = _field(default=None, description="Hybrid mode: cosine of this memory to the query.")
    fused: float | None = _field(
        default=None, description="Hybrid mode: fused keyword and cosine score (results are ordered by it)."
    )
    conflicts: list[OpenConflict] = _field(
        default_factory=list,
        description="Unresolved conflicts this memory is in (memory_update op=resolve_conflict settles one).",
    )
    current_version_of: list[str] = _field(
        default_factory=list,
        description="Ids of superseded memories (directly or through a chain) this one is the current version of: "
        "those listed below it, and the one that brought it into the results.",
    )
    matched: bool = _field(
        default=True,
        description="False: the query did not find this memory; it is here as the current version of a "
        "superseded result that it did find (listed right above it), or as that result's continuation.",
    )
    quarantine: str | None = _field(
        default=None, description="Set when the memory is in quarantine (the screen caught it): the day and why."
    )
    continues: str | None = _field(
        default=None,
        description="Id of the result right above this memory that it follows in its thread (the best result's "
        "next memories are shown after it: a reply often holds the answer to words the message before it had).",
    )

    def cited_bytes(self) -> int:
        """What a result costs against a recall budget: the UTF-8 bytes of its title, its citation
        `path:line` and its excerpt, one line each (what every rendering of a result shows)."""
        return len(f"{self.title}\n{self.path}:{self.line}\n{self.excerpt}\n".encode())


@dataclass(kw_only=True)
class CollapsedResult(Record):
    """A result left out because it restates one ranked above it."""

    kept_id: str
    dropped_id: str
    reason: str = _field(description="same text | word overlap J | cosine C")


@dataclass(kw_only=True)
class RecallAnswer(Record):
    query: str
    plan: str = _field(description="Which query legs ran: all-terms, any-term, trigram, like, cosine.")
    results: list[RecallResult]
    index: IndexReport
    mode: str = _field(default="bm25", description="The ranking that ran: bm25 (keywords) or hybrid (+ cosine).")
    semantic_available: bool = _field(default=False, description="An embedding provider is configured and working.")
    semantic_note: str = _field(default="", description="Why hybrid did not run, or what it has not embedded yet.")
    semantic_pending: int = _field(default=0, description="Hybrid mode: memories without a vector yet.")
    collapsed: list[CollapsedResult] = _field(
        default_factory=list, description="Near-duplicates dropped in favour of the better-ranked result."
    )
    budget_bytes: int | None = _field(
        default=None,
        description="The budget asked for: results were filled best first while the bytes of their title, "
        "path:line and excerpt (`cited_bytes`) fit in it.",
    )
    used_bytes: int | None = _field(default=None, description="With a budget: the cited bytes of the results.")
    left_out: int = _field(default=0, description="With a budget: ranked results that did not fit.")
    as_of: str | None = _field(default=None, description="An as-of view: what the store held as current that day.")


@dataclass(kw_only=True)
class ReviewDue(Record):
    id: str
    title: str
    path: str
    review_after: str
