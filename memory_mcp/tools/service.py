"""The service: the seven operations, each reconcile-first, each answering with a pydantic record.

Edges (MCP server, CLI, web view) call these methods and translate; every rule lives here or in
the core modules this calls (canon, index, reconcile, query, ranking, lifecycle, conflicts).
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, overload

from ulid import ULID

from ..canon import files as canon
from ..config import Settings
from ..domain.errors import InputError, NotFoundError, StaleWriteError, StoreMissingError
from ..domain.lifecycle import check_editable, check_purge, check_transition
from ..domain.models import (
    AutoClosedConflict,
    BrowseAnswer,
    ChainLink,
    CollapsedResult,
    CompactionCandidate,
    ConflictHistoryEntry,
    ContextAnswer,
    EditableMemory,
    ExportAnswer,
    ForgetAnswer,
    IndexFreshness,
    MemoryItem,
    MemoryType,
    Mismatch,
    ProgressFn,
    ReadAnswer,
    RecallAnswer,
    RecallResult,
    ReindexAnswer,
    RememberAnswer,
    State,
    StatusAnswer,
    StoreInfo,
    Trust,
    Unparseable,
    UpdateAnswer,
    stage_reporter,
)
from ..domain.ranking import DEFAULT as RANKING
from ..domain.ranking import RankingConstants, ScoreParts, components, score
from ..domain.text import fold
from ..index import db as ix
from ..index import vectors as vector_table
from ..search import semantic as sem
from ..search.conflicts import (
    AUTO_CLOSED,
    MAX_CONFLICTS,
    MAX_RELATED,
    NEAR_TEXT_SIMILARITY,
    StalePair,
    find_neighbours,
    stale_open_pairs,
)
from ..search.planner import DOCUMENTS, MEMORIES, Candidate, Corpus, Filters, Plan, best_line, coverage, plan_and_fetch
from ..store.documents import (
    DOCUMENT_TRUST,
    ChunkRow,
    DocumentSource,
    chunks_by_rowid,
    cited_line,
    display_path,
    indexed_document,
    source_status,
)
from ..store.paths import STORE_NAME, Store
from ..store.reconcile import StatGate, unparseable_files
from ..store.scopes import GLOBAL, LOCAL, Opened, Scopes, locate, merged_report
from ..store.session import StoreSession
from .context import (
    DEFAULT_BUDGET,
    ScopeContext,
    build_context,
    current_handoff,
    handoff_info,
    important_memories,
    reviews_due,
)

MAX_TITLE = 200
MAX_BODY = 200_000
MAX_ENTITIES = 50
MAX_ENTITY_LEN = 100
MAX_SOURCE = 1000
MAX_QUERY = 2000
MAX_READ_LINES = 200
RECALL_LIMIT = (1, 20)
BROWSE_LIMIT = (1, 500)
COMPACTION_MIN_AGE_DAYS = 30
COMPACTION_MIN_GROUP = 3
NOT_RESTORED_BY_REBUILD = [
    "recall counts (heat) and last recall times when .index/ is deleted or unreadable "
    "(derived, index-only: compaction then counts every old episode as never recalled)"
]
# each op of memory_update and the fields it takes: any other field given is refused, naming the op
UPDATE_OP_FIELDS = {
    "edit": ("title", "body", "type", "trust", "entities", "source", "review_after", "expected_sha256"),
    "supersede": ("by",),
    "set_state": ("state", "reason"),
    "link": ("other_id",),
    "resolve_conflict": ("pair_hash", "resolution", "winner", "note"),
}
UPDATE_OPS = tuple(UPDATE_OP_FIELDS)
FORGET_MODES = ("archive", "deprecate", "purge")
RESOLUTIONS = ("keep_both", "supersede")


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Limits:
    """Argument limits and lifecycle thresholds; defaults above, overridable by settings (limits.*, ...)."""

    max_title: int = MAX_TITLE
    max_body: int = MAX_BODY
    max_entities: int = MAX_ENTITIES
    max_entity_len: int = MAX_ENTITY_LEN
    max_source: int = MAX_SOURCE
    max_query: int = MAX_QUERY
    max_read_lines: int = MAX_READ_LINES
    recall_default: int = 5
    recall_max: int = RECALL_LIMIT[1]
    compaction_min_age_days: int = COMPACTION_MIN_AGE_DAYS
    compaction_min_group: int = COMPACTION_MIN_GROUP
    near_text_similarity: float = NEAR_TEXT_SIMILARITY
    max_conflicts: int = MAX_CONFLICTS
    max_related: int = MAX_RELATED
    context_budget: int = DEFAULT_BUDGET

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        g = settings.get
        return cls(
            **{name: g(f"limits.{name}") for name in ("max_title", "max_body", "max_entities", "max_entity_len")},
            max_source=g("limits.max_source"),
            max_query=g("limits.max_query"),
            max_read_lines=g("limits.max_read_lines"),
            recall_default=g("recall.default_limit"),
            recall_max=g("recall.max_limit"),
            compaction_min_age_days=g("compaction.min_age_days"),
            compaction_min_group=g("compaction.min_group"),
            near_text_similarity=g("conflicts.near_text_similarity"),
            max_conflicts=g("conflicts.max_conflicts"),
            max_related=g("conflicts.max_related"),
            context_budget=g("context.budget_bytes"),
        )

    def title(self, title: str) -> str:
        title = " ".join(title.split())
        if not title:
            raise InputError("title: must not be empty")
        if len(title) > self.max_title:
            raise InputError(f"title: {len(title)} characters, at most {self.max_title}")
        return title

    def body(self, body: str) -> str:
        if "\x00" in body:
            raise InputError("body: contains a NUL character")
        if len(body) > self.max_body:
            raise InputError(f"body: {len(body)} characters, at most {self.max_body}")
        if body.lstrip().startswith("---"):
            body = "\u200b" + body.lstrip()  # never let a body start a second frontmatter block
        return body.strip()

    def entities(self, entities: list[str] | None) -> list[str]:
        entities = entities or []
        if len(entities) > self.max_entities:
            raise InputError(f"entities: {len(entities)} given, at most {self.max_entities}")
        for e in entities:
            if not e.strip() or len(e) > self.max_entity_len or "\n" in e:
                raise InputError(f"entities: '{e[:40]}' must be 1..{self.max_entity_len} characters on one line")
        return entities

    def source(self, source: str | None) -> str:
        source = (source or "").strip()
        if len(source) > self.max_source or "\n" in source:
            raise InputError(f"source: at most {self.max_source} characters on one line")
        return source

    def line_range(self, from_line: int | None, to_line: int | None, total: int) -> tuple[int, int]:
        start = 1 if from_line is None else from_line
        if start < 1:
            raise InputError("from_line: must be at least 1")
        if to_line is not None and to_line < start:
            raise InputError("to_line: must not be before from_line")
        end = min(total, start + self.max_read_lines - 1) if to_line is None else to_line
        if end - start + 1 > self.max_read_lines:
            raise InputError(f"to_line: at most {self.max_read_lines} lines per read ({start}..{end} asked)")
        return start, min(end, total)


def _enum_arg(cls: type, value: str | None, name: str) -> Any:
    if value is None:
        return None
    try:
        return cls(value)
    except ValueError:
        allowed = ", ".join(m.value for m in cls)
        raise InputError(f"{name}: '{value}' is not one of {allowed}") from None


def _check_date(value: str | None, name: str) -> str | None:
    if value is None or value == "":
        return None
    try:
        return date.fromisoformat(value).isoformat()
    except ValueError:
        raise InputError(f"{name}: '{value}' is not a date (YYYY-MM-DD)") from None


def _key(scope: str, result_id: str) -> str:
    """A result's identity across scopes (the same id may exist in both)."""
    return f"{scope}\x00{result_id}"


# result key → how to find its cited line, for the few results a recall returns
_DeferredLines = dict[str, Callable[[], int]]


class _Ranked(Sequence[RecallResult]):
    """Ranked results built only when looked at: a recall ranks ~100 candidates and returns 5-20."""

    def __init__(self, builders: list[Callable[[], RecallResult]]) -> None:
        self._builders = builders
        self._built: list[RecallResult | None] = [None] * len(builders)

    def __len__(self) -> int:
        return len(self._builders)

    @overload
    def __getitem__(self, i: int) -> RecallResult: ...
    @overload
    def __getitem__(self, i: slice) -> list[RecallResult]: ...
    def __getitem__(self, i: int | slice) -> RecallResult | list[RecallResult]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        built = self._built[i]
        if built is None:
            built = self._built[i] = self._builders[i]()
        return built


def _memory_result(
    scope: str, m: ix.IndexedMemory, total: float, parts: ScoreParts | None, locate: Callable[[], int] | None
) -> RecallResult:
    return RecallResult(
        id=m.id,
        kind="memory",
        scope=scope,
        path=m.path,
        line=locate() if locate is not None else m.title_line,
        title=m.title,
        excerpt=m.excerpt,
        score=total,
        components=components(parts) if parts is not None else None,
        type=m.type,
        state=m.state,
        trust=m.trust,
        entities=m.entities,
        updated=m.updated,
    )


def _document_result(
    scope: str, chunk: ChunkRow, doc_id: str, shown: str, line: int, total: float, parts: ScoreParts
) -> RecallResult:
    return RecallResult(
        id=doc_id,
        kind="document",
        scope=scope,
        label=chunk.label,
        path=shown,
        line=line,
        title=chunk.title,
        excerpt=chunk.excerpt,
        score=total,
        components=components(parts),
        type="document",
        state=State.ACTIVE.value,
        trust=DOCUMENT_TRUST,
        entities=[chunk.label],
        updated=chunk.updated,
    )


def _is_memory_path(path: str) -> bool:
    return Path(path).parts[:1] == ("memories",)


@dataclass
class _Pool:
    """Candidates of one corpus (memories or documents) in one scope, before ranking on a shared scale."""

    scope: str
    session: StoreSession
    corpus: Corpus
    plan: Plan
    filters: Filters | None = None


class MemoryService:
    """The seven operations over the bound project's local store and the account's global store."""

    def __init__(
        self,
        root: Path,
        project_root: Path | None = None,
        *,
        local_dir: str = ".memory",
        sources: Sequence[DocumentSource] = (),
        chunk_chars: int = 1200,
        ranking: RankingConstants = RANKING,
        limits: Limits | None = None,
        embedder: sem.EmbeddingProvider | None = None,
        semantic: sem.SemanticConfig | None = None,
        collapse_jaccard: float | None = 0.9,
        change_watch: bool = True,
        clock: Callable[[], datetime] = utc_now,
        obsidian_links: bool = False,
    ) -> None:
        self.root = root.expanduser().absolute()
        # what "now" is for recall times, freshness, reviews due and compaction ages (injectable to age a recall)
        self.clock = clock
        # links between memories written as `[[file-stem|ID]]` (Obsidian resolves them) instead of bare ids
        self.obsidian_links = obsidian_links
        self.ranking = ranking
        self.limits = limits or Limits()
        # hybrid search: None = keyword recall only; collapse_jaccard None = never collapse near-duplicates
        self.semantic = sem.Semantic(embedder, semantic)
        self.collapse_jaccard = collapse_jaccard
        self.scopes = Scopes(self.root, project_root, local_dir, sources, chunk_chars, change_watch)

    @classmethod
    def from_settings(cls, settings: Settings, store: Path | None = None) -> MemoryService:
        """A service configured by layered settings; `store` (the CLI's --store) overrides the global root."""
        return cls(
            store if store is not None else settings.global_root(),
            settings.project_root,
            local_dir=settings.get("scopes.local_dir"),
            sources=settings.document_sources(),
            chunk_chars=settings.get("documents.chunk_chars"),
            ranking=settings.ranking(),
            limits=Limits.from_settings(settings),
            embedder=sem.make_provider(
                settings.get("semantic.provider"),
                settings.get("semantic.ollama_url"),
                settings.get("semantic.ollama_model"),
                settings.get("semantic.timeout_s"),
            ),
            semantic=sem.SemanticConfig(
                auto_hybrid=settings.get("semantic.auto_hybrid"),
                rrf_k=settings.get("semantic.rrf_k"),
                depth=settings.get("semantic.depth"),
                embed_per_recall=settings.get("semantic.embed_per_recall"),
                collapse_cosine=settings.get("semantic.collapse_cosine"),
            ),
            collapse_jaccard=(
                settings.get("recall.collapse_jaccard") if settings.get("recall.collapse_duplicates") else None
            ),
            change_watch=settings.get("index.change_watch"),
            obsidian_links=settings.get("files.obsidian_links"),
        )

    def session(self, store: str | None = None, scope: str | None = None) -> StoreSession:
        return self.scopes.session(scope, store)

    def missing_stores(self, scope: str | None = None, store: str | None = None, *, home: bool = False) -> list[Store]:
        """The stores a call would use that do not exist yet (nothing is opened or created).

        `home`: a one-scope call (remember, status), else every scope (recall, read, reindex, export)."""
        targets = [self.scopes.target(scope, store)] if home else self.scopes.targets(scope, store)
        return [t for _, t in targets if not t.exists()]

    def scope_for_reading(
        self, scope: str | None = None, store: str | None = None, *, home: bool = False
    ) -> str | None:
        """The scope a read should name so that it creates no store: a read of a store that is not there
        is almost always a mistyped path, so it fails (StoreMissingError) instead of making an empty one.
        Of two scopes only one existing (a new project, say), the read uses that one."""
        targets = [self.scopes.target(scope, store)] if home else self.scopes.targets(scope, store)
        present = [name for name, t in targets if t.exists()]
        if not present:
            where = " or ".join(str(t.root) for _, t in targets)
            raise StoreMissingError(
                f"store: no memory store at {where} (no memories/ folder); check --store, --project-root or "
                "MEMORY_MCP_ROOT, or create it with a first `memory-mcp remember`"
            )
        return present[0] if len(present) < len(targets) else scope

    def close(self) -> None:
        self.scopes.close()

    # ------------------------------------------------------------ remember

    def remember(
        self,
        title: str,
        body: str,
        type: str = "fact",
        trust: str = "agent-inferred",
        entities: list[str] | None = None,
        source: str | None = None,
        review_after: str | None = None,
        supersedes: list[str] | None = None,
        store: str | None = None,
        scope: str | None = None,
    ) -> RememberAnswer:
        title, body = self.limits.title(title), self.limits.body(body)
        mem_type = _enum_arg(MemoryType, type, "type")
        mem_trust = _enum_arg(Trust, trust, "trust")
        entities, source = self.limits.entities(entities), self.limits.source(source)
        review = _check_date(review_after, "review_after")
        supersedes = list(dict.fromkeys(supersedes or []))
        s = self.scopes.session(scope, store)
        with s.transaction() as report:
            conn = s.conn
            existing = ix.find_by_norm_hash(conn, canon.norm_hash(title, body))
            if existing is not None:
                return RememberAnswer(
                    id=existing.id,
                    scope=s.scope,
                    path=existing.path,
                    created=False,
                    deduplicated_state=existing.state,
                    index=s.index_report(report),
                )
            olds = []
            for old_id in supersedes:
                old = ix.get_memory(conn, mem_id=old_id)
                if old is None:
                    raise NotFoundError(f"supersedes: no memory with id '{old_id}'")
                if old.state == State.DEPRECATED.value:
                    raise InputError(f"supersedes: '{old_id}' is deprecated; only active or archived can be superseded")
                olds.append(old)
            replaced_handoff = []
            if mem_type is MemoryType.HANDOFF:
                # at most one active handoff per store: the new one replaces the current one
                for row in conn.execute("SELECT id FROM memories WHERE type = 'handoff' AND state = 'active'"):
                    if row[0] not in supersedes:
                        supersedes.append(row[0])
                        olds.append(ix.get_memory(conn, mem_id=row[0]))
                        replaced_handoff.append(row[0])
            entities = s.dictionary.normalise(entities)
            new_id = str(ULID())
            now = canon.now_iso()
            found = find_neighbours(
                conn,
                title=title,
                body=body,
                mem_type=mem_type.value,
                trust=mem_trust.value,
                entities=entities,
                created=now,
                new_id=new_id,
                near_text=self.limits.near_text_similarity,
                max_conflicts=self.limits.max_conflicts,
                max_related=self.limits.max_related,
            )
            handoff = mem_type is MemoryType.HANDOFF
            neighbours = [n for n in found.conflicts if n.id not in supersedes and not handoff]
            related = [r for r in found.related if r.id not in supersedes and not handoff]
            fields: dict[str, Any] = {
                "id": new_id,
                "type": mem_type.value,
                "state": State.ACTIVE.value,
                "trust": mem_trust.value,
                "entities": entities,
                "source": source or None,
                "created": now,
                "updated": now,
                "review_after": review,
                "supersedes": [self._entry(o.id, o.path) for o in olds],
                "superseded_by": [],
            }
            if neighbours:
                fields["conflicts"] = [{"with": n.id, "status": "open", "detected": now} for n in neighbours]
            path = self._new_path(s.store, title, new_id)
            canon.atomic_write(path, canon.render_new(fields, title, body).encode("utf-8"))
            rel = s.store.relative(path)
            changed = [rel]
            for old in olds:
                self._link_supersede(s, old, new_id, rel, now)
                changed.append(old.path)
            s.write_files(changed)
            return RememberAnswer(
                id=new_id,
                scope=s.scope,
                path=rel,
                created=True,
                superseded=[o.id for o in olds],
                message=f"replaced the previous handoff {', '.join(replaced_handoff)}" if replaced_handoff else "",
                conflicts=neighbours,
                related=related,
                index=s.index_report(report),
            )

    @staticmethod
    def _new_path(store: Store, title: str, mem_id: str) -> Path:
        base = f"{canon.slugify(title)}-{mem_id[-6:].lower()}"
        name, n = f"{base}.md", 2
        while os.path.lexists(store.memories_dir / name):
            name, n = f"{base}-{n}.md", n + 1
        return store.memory_file(f"memories/{name}")

    def _entry(self, mem_id: str, path: str) -> str:
        """A link to this memory as the files write it (`files.obsidian_links`)."""
        return canon.link_entry(mem_id, path, self.obsidian_links)

    def _link_supersede(self, s: StoreSession, old: ix.IndexedMemory, new_id: str, new_path: str, now: str) -> None:
        def mutate(meta: dict) -> None:
            canon.add_link(meta, "superseded_by", new_id, self._entry(new_id, new_path))
            if meta.get("state", "active") == State.ACTIVE.value:
                meta["state"] = State.ARCHIVED.value
            meta["updated"] = now

        canon.rewrite(s.store.memory_file(old.path), mutate)

    # ------------------------------------------------------------ recall

    def recall(
        self,
        query: str | None,
        limit: int | None = None,
        type: str | None = None,
        state: str | None = None,
        entity: str | None = None,
        include_deprecated: bool = False,
        store: str | None = None,
        touch: bool = True,
        trust: str | None = None,
        scope: str | None = None,
        mode: str | None = None,
    ) -> RecallAnswer:
        """Search every scope (or the one named) and the indexed documents; rank all in one list.

        mode: bm25 (keywords), hybrid (keywords fused with cosine by RRF), auto (hybrid when a provider is
        available and `semantic.auto_hybrid` says it helps, else bm25). A provider failure is never an error:
        the answer falls back to bm25 and says why in `semantic_note`.
        """
        mode = mode or "auto"
        if query is None:
            if type != MemoryType.HANDOFF.value:
                raise InputError("query: required, unless type=handoff (which returns the current handoff)")
            return self._current_handoffs(store, scope)
        if mode not in sem.MODES:
            raise InputError(f"mode: '{mode}' is not one of {', '.join(sem.MODES)}")
        limit = self.limits.recall_default if limit is None else limit
        if not 1 <= limit <= self.limits.recall_max:
            raise InputError(f"limit: {limit} is outside 1..{self.limits.recall_max}")
        if len(query) > self.limits.max_query:
            raise InputError(f"query: {len(query)} characters, at most {self.limits.max_query}")
        mem_type = _enum_arg(MemoryType, type, "type")
        mem_state = _enum_arg(State, state, "state")
        mem_trust = _enum_arg(Trust, trust, "trust")
        lines: _DeferredLines = {}
        with self.scopes.open(scope, store) as opened:
            index = merged_report(opened)
            if not query.strip():
                return RecallAnswer(
                    query=query,
                    plan="empty query",
                    results=[],
                    index=index,
                    semantic_available=self.semantic.available(),
                )
            pools: list[_Pool] = []
            for o in opened:
                s = o.session
                filters = Filters(
                    types=[mem_type.value] if mem_type else [],
                    states=[mem_state.value] if mem_state else [],
                    entity=s.dictionary.canonical(entity) if entity else None,
                    include_deprecated=include_deprecated,
                    trusts=[mem_trust.value] if mem_trust else [],
                )
                plan = plan_and_fetch(s.conn, query, filters, want=limit, dictionary=s.dictionary, k=self.ranking)
                pools.append(_Pool(o.scope, s, MEMORIES, plan, filters))
                if s.sources and not (mem_type or mem_state or entity or mem_trust):
                    plan = plan_and_fetch(s.conn, query, None, limit, s.dictionary, self.ranking, corpus=DOCUMENTS)
                    pools.append(_Pool(o.scope, s, DOCUMENTS, plan))
            ran, note, pending, ranked = "bm25", "", 0, None
            if mode == "hybrid" or (mode == "auto" and self.semantic.config.auto_hybrid):
                if self.semantic.available():
                    try:
                        ranked, pending = self._hybrid(pools, query, limit * 3 + 10, lines)
                        ran = "hybrid"
                    except sem.SemanticUnavailable as exc:
                        note = f"hybrid unavailable ({exc}); answered with bm25"
                elif mode == "hybrid":
                    note = f"hybrid unavailable ({self.semantic.why_unavailable()}); answered with bm25"
            if ranked is None:
                ranked = self._rank(pools, sem.UNLIMITED, lines)
            if pending:
                note = f"{pending} memories have no vector yet (a few are embedded per recall; memory_reindex: all)"
            results, collapsed = self._collapse(pools, ranked, limit, ran == "hybrid")
            for r in results:
                if (locate := lines.get(_key(r.scope, r.id))) is not None:
                    r.line = locate()
            if touch:
                for o in opened:
                    ids = [r.id for r in results if r.kind == "memory" and r.scope == o.scope]
                    if ids:
                        ix.bump_heat(o.session.conn, ids, canon.iso_utc(self.clock()))
            legs = [leg for p in pools for leg in p.plan.legs] + (["cosine"] if ran == "hybrid" else [])
            plan_text = "+".join(dict.fromkeys(legs)) or "no terms"
            return RecallAnswer(
                query=query,
                plan=plan_text,
                results=results,
                index=index,
                mode=ran,
                semantic_available=self.semantic.available(),
                semantic_note=note,
                semantic_pending=pending,
                collapsed=collapsed,
            )

    def _current_handoffs(self, store: str | None, scope: str | None) -> RecallAnswer:
        """recall(type=handoff) without a query: each scope's current handoff, newest first."""
        results = []
        with self.scopes.open(scope, store) as opened:
            for o in opened:
                mem = current_handoff(o.session.conn)
                if mem is not None:  # not ranked: no score components
                    results.append(_memory_result(o.scope, mem, 1.0, None, None))
            results.sort(key=lambda r: r.updated, reverse=True)
            return RecallAnswer(
                query="",
                plan="current handoff",
                results=results,
                index=merged_report(opened),
                semantic_available=self.semantic.available(),
            )

    def context(self, store: str | None = None, scope: str | None = None, budget: int | None = None) -> ContextAnswer:
        """The session-start context: handoff, important memories, conflicts, reviews (context.py)."""
        budget = self.limits.context_budget if budget is None else budget
        if budget < 512:
            raise InputError(f"budget: {budget} bytes, at least 512")
        parts = []
        with self.scopes.open(scope, store) as opened:
            for o in opened:
                conn = o.session.conn
                parts.append(
                    ScopeContext(
                        scope=o.scope,
                        handoff=current_handoff(conn),
                        memories=important_memories(conn, o.scope),
                        conflicts=o.session.open_conflicts(limit=10),
                        conflicts_total=o.session.count_open_conflicts(),
                        reviews=reviews_due(conn),
                    )
                )
        return build_context(parts, budget)

    def _hybrid(
        self, pools: list[_Pool], query: str, want: int, lines: _DeferredLines
    ) -> tuple[list[RecallResult], int]:
        """Keyword ranking and cosine ranking, fused by RRF (the best `want`); raises SemanticUnavailable.

        The query is embedded first and missing vectors are filled (at most `embed_per_recall` per store),
        so a provider failure is known before anything is changed. A memory only the cosine leg found is
        scored and cited like a keyword result (keyword score 0); `fused` orders the list.
        """
        cfg, name = self.semantic.config, self.semantic.name
        qvec = self.semantic.embed_query(query)
        mem_pools = [p for p in pools if p.corpus is MEMORIES]
        pending = 0
        for pool in mem_pools:
            conn = pool.session.conn
            if cfg.embed_per_recall:
                self.semantic.fill(conn, cfg.embed_per_recall)
            pending += vector_table.pending_count(conn, name)
        ranked = self._rank(pools, sem.UNLIMITED, lines)  # keyword candidates (memories and documents)
        kw_keys = [_key(r.scope, r.id) for r in ranked[: cfg.depth]]
        states = self.ranking.state
        cos: list[tuple[float, float, _Pool, int, str]] = []  # (order value, cosine, pool, rowid, memory id)
        for pool in mem_pools:
            where, params = pool.filters.sql() if pool.filters is not None else ("", [])
            # archived and deprecated order below active in the cosine leg too (trust is left to the keyword leg)
            for rowid, mem_id, c, w in vector_table.cosine_rank(
                pool.session.conn, name, qvec, where, params, lambda st: states.get(st, 1.0), cfg.depth
            ):
                cos.append((w, c, pool, rowid, mem_id))
        cos.sort(key=lambda x: (-x[0], x[4]))
        cos = cos[: cfg.depth]
        cos_of = {_key(p.scope, i): c for _, c, p, _, i in cos}
        fused = sem.rrf([kw_keys, [_key(p.scope, i) for _, _, p, _, i in cos]], cfg.rrf_k)
        kw_pos = {k: n for n, k in enumerate(kw_keys)}
        order = sorted(fused, key=lambda k: (-fused[k], kw_pos.get(k, len(kw_pos)), k))[:want]
        # results for memories only the cosine leg found, built only for those that can be shown
        by_key = {_key(r.scope, r.id): r for r in ranked}
        missing = {k for k in order if k not in by_key}
        if missing:
            extra = []
            for p in mem_pools:
                found = {rowid: Candidate(rowid) for _, _, q, rowid, i in cos if q is p and _key(p.scope, i) in missing}
                if found:
                    extra.append(_Pool(p.scope, p.session, MEMORIES, Plan(p.plan.terms, p.plan.legs, found), p.filters))
            by_key.update((_key(r.scope, r.id), r) for r in self._rank(extra, sem.UNLIMITED, lines))
        out = []
        for k in order:
            r = by_key[k]
            r.fused = round(fused[k], 6)
            r.cosine = round(cos_of[k], 4) if k in cos_of else None
            out.append(r)
        return out, pending

    def _collapse(
        self, pools: list[_Pool], ranked: Sequence[RecallResult], limit: int, with_vectors: bool
    ) -> tuple[list[RecallResult], list[CollapsedResult]]:
        """The first `limit` results once near-duplicate memories (same statement twice, across scopes or
        reworded) are dropped in favour of the better-ranked one. Document chunks are never collapsed."""
        if self.collapse_jaccard is None:
            return list(ranked[:limit]), []
        sessions = {p.scope: p.session for p in pools if p.corpus is MEMORIES}
        window = limit + 5
        while True:
            head = ranked[:window]
            cands = self._dup_candidates(sessions, head, with_vectors)
            cosine_min = self.semantic.config.collapse_cosine if with_vectors else None
            done = sem.collapse(cands, self.collapse_jaccard, cosine_min, want=limit)
            if len(done.kept) >= limit or window >= len(ranked):
                break
            window *= 2
        by_key = {_key(r.scope, r.id): r for r in head}
        results = [by_key[k] for k in done.kept]
        collapsed = [
            CollapsedResult(kept_id=by_key[k].id, dropped_id=by_key[d].id, reason=why) for k, d, why in done.dropped
        ]
        return results, collapsed

    def _dup_candidates(
        self, sessions: dict[str, StoreSession], results: list[RecallResult], with_vectors: bool
    ) -> list[sem.DupCandidate]:
        texts: dict[tuple[str, str], tuple[str, str, str]] = {}
        for scope, s in sessions.items():
            ids = [r.id for r in results if r.kind == "memory" and r.scope == scope]
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for row in s.conn.execute(
                    f"SELECT id, title, body, norm_hash FROM memories WHERE id IN ({marks})", chunk
                ):
                    texts[(scope, row[0])] = (row[1], row[2], row[3])
        vecs: dict[tuple[str, str], bytes] = {}
        if with_vectors:
            for scope, s in sessions.items():
                hashes = [t[2] for (sc, _), t in texts.items() if sc == scope]
                got = vector_table.vectors_for(s.conn, self.semantic.name, hashes)
                for (sc, mid), t in texts.items():
                    if sc == scope and t[2] in got:
                        vecs[(sc, mid)] = got[t[2]]
        out = []
        for r in results:
            key = _key(r.scope, r.id)
            t = texts.get((r.scope, r.id)) if r.kind == "memory" else None
            if t is None:  # a document chunk (or a row gone meanwhile): unique, never collapsed
                out.append(sem.DupCandidate(key, "\x00" + key, frozenset()))
                continue
            blob = vecs.get((r.scope, r.id))
            vec = vector_table.unpack(blob) if blob is not None else None
            out.append(sem.DupCandidate(key, t[2], sem.words(f"{t[0]}\n{t[1]}"), vec))
        return out

    def _rank(self, pools: list[_Pool], limit: int, lines: _DeferredLines | None = None) -> Sequence[RecallResult]:
        """Score candidates from every pool on one scale: each pool's legs are divided by that pool's best value.

        Raw bm25 is not comparable between FTS tables: each store has its own term statistics, and a term in
        half or more of a small store's rows gets FTS5's clamped idf (1e-6), so a project store of a few
        memories would score next to nothing against the account store or the documents. Per pool, the best
        match is 1.0; coverage, trust, state, freshness and heat then order the pools' results together.
        """
        # a document chunk is a result only when one of its lines holds a query term: that line is its citation
        cited: dict[int, dict[int, tuple[ChunkRow, int]]] = {}
        for n, pool in enumerate(pools):
            if pool.corpus is DOCUMENTS and pool.plan.candidates:
                chunks = chunks_by_rowid(pool.session.conn, list(pool.plan.candidates))
                lines = {rowid: (chunk, cited_line(pool.plan.terms, chunk)) for rowid, chunk in chunks.items()}
                cited[n] = {rowid: (chunk, line) for rowid, (chunk, line) in lines.items() if line is not None}
                pool.plan.candidates = {r: c for r, c in pool.plan.candidates.items() if r in cited[n]}
        now = self.clock()
        scored: list[tuple[float, str, Callable[[], RecallResult]]] = []
        for n, pool in enumerate(pools):
            cands, terms = pool.plan.candidates, pool.plan.terms
            if not cands:
                continue
            max_word = max(c.word for c in cands.values()) or 1.0
            max_tri = max(c.trigram for c in cands.values()) or 1.0
            conn = pool.session.conn
            if pool.corpus is DOCUMENTS:
                for rowid, (chunk, line) in cited[n].items():
                    c = cands[rowid]
                    total, comp = score(
                        word=c.word / max_word,
                        trigram=c.trigram / max_tri,
                        like=c.like,
                        coverage=coverage(terms, fold(f"{chunk.title}\n{chunk.label}\n{chunk.body}")),
                        trust=DOCUMENT_TRUST,
                        state=State.ACTIVE.value,
                        updated=chunk.updated,
                        recalls=0,
                        last_recalled=None,
                        now=now,
                        k=self.ranking,
                    )
                    shown = display_path(Path(chunk.path), self.scopes.project_root)
                    doc_id = f"doc:{shown}#{chunk.start_line}"
                    build = partial(_document_result, pool.scope, chunk, doc_id, shown, line, total, comp)
                    scored.append((total, doc_id, build))
                continue
            mems = ix.memories_by_rowid(conn, list(cands))
            heat = ix.heat_of(conn, [m.id for m in mems.values()])
            for rowid, m in mems.items():
                c = cands[rowid]
                recalls, last = heat.get(m.id, (0, None))
                total, comp = score(
                    word=c.word / max_word,
                    trigram=c.trigram / max_tri,
                    like=c.like,
                    coverage=coverage(terms, fold(f"{m.title}\n{' '.join(m.entities)}\n{m.body}")),
                    trust=m.trust,
                    state=m.state,
                    updated=m.updated,
                    recalls=recalls,
                    last_recalled=last,
                    now=now,
                    k=self.ranking,
                )
                locate = partial(best_line, terms, m.title, m.title_line, m.body, m.body_line)
                if lines is not None:  # folding every candidate's body only to cite a line was ~10% of a recall
                    lines[_key(pool.scope, m.id)] = locate
                build = partial(_memory_result, pool.scope, m, total, comp, None if lines is not None else locate)
                scored.append((total, m.id, build))
        scored.sort(key=lambda x: (-x[0], x[1]))
        return _Ranked([build for _, _, build in scored[:limit]])

    # ------------------------------------------------------------ read

    def read(
        self,
        id: str | None = None,
        path: str | None = None,
        from_line: int | None = None,
        to_line: int | None = None,
        store: str | None = None,
        scope: str | None = None,
    ) -> ReadAnswer:
        """A memory by id or store-relative path, or a line range of an indexed document (nothing else)."""
        if (id is None) == (path is None):
            raise InputError("id/path: give exactly one of id or path")
        with self.scopes.open(scope, store) as opened:
            index = merged_report(opened)
            label = None
            if id is not None:
                o, mem = locate(opened, id)
                full, rel = o.session.store.memory_file(mem.path), mem.path
            elif _is_memory_path(path):
                o, full, rel = self._memory_file(opened, path)
                mem = ix.get_memory(o.session.conn, path=rel)
            else:
                o, full, label = self._document_file(opened, path)
                rel, mem = display_path(full, self.scopes.project_root), None
            data = full.read_bytes()
            try:
                text = canon.decode(data)
            except canon.CanonError as exc:
                raise InputError(f"path: '{rel}' cannot be read as text: {exc}") from None
            lines = text.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            start, end = self.limits.line_range(from_line, to_line, len(lines))
            frontmatter: dict[str, Any] = {}
            if label is None:
                try:
                    frontmatter = canon.read_frontmatter(full)
                except canon.CanonError:
                    pass
            answer = ReadAnswer(
                id=mem.id if mem else None,
                scope=o.scope,
                kind="memory" if label is None else "document",
                label=label,
                path=rel,
                sha256=canon.sha256_bytes(data),
                text="\n".join(lines[start - 1 : end]),
                from_line=start,
                to_line=end,
                total_lines=len(lines),
                frontmatter=frontmatter,
                index=index,
            )
            if mem is not None:
                answer.supersedes_chain = self._chain(o.session, mem, "supersedes")
                answer.superseded_by_chain = self._chain(o.session, mem, "superseded_by")
                answer.conflicts = self._conflict_history(o.session, mem.id)
            return answer

    @staticmethod
    def _memory_file(opened: list[Opened], path: str) -> tuple[Opened, Path, str]:
        for o in opened:
            full = o.session.store.resolve_inside(path)  # refuses escapes before anything is read
            rel = o.session.store.relative(full)
            if not rel.startswith("memories/") or not rel.endswith(".md"):
                raise InputError(f"path: '{path}' is not a memory file (memories/*.md)")
            full = o.session.store.memory_file(rel)
            if full.is_file():
                return o, full, rel
        raise NotFoundError(f"path: no file at '{path}'")

    def _document_file(self, opened: list[Opened], path: str) -> tuple[Opened, Path, str]:
        home = next((o for o in opened if o.session.sources), None)
        candidate = Path(path)
        if not candidate.is_absolute() and self.scopes.project_root is not None:
            candidate = self.scopes.project_root / candidate
        label = None
        if home is not None and candidate.is_absolute():
            try:
                label = indexed_document(home.session.conn, candidate.resolve(strict=True))
            except (OSError, RuntimeError):
                label = None
        if home is None or label is None:
            opened[0].session.store.resolve_inside(path)  # the precise refusal for escapes and absolute paths
            raise InputError(f"path: '{path}' is not a memory file (memories/*.md) and not an indexed document")
        return home, candidate.resolve(), label

    @staticmethod
    def _chain(s: StoreSession, mem: ix.IndexedMemory, direction: str) -> list[ChainLink]:
        out: list[ChainLink] = []
        seen = {mem.id}
        frontier = list(getattr(mem, direction))
        while frontier:
            nid = frontier.pop(0)
            if nid in seen:
                continue
            seen.add(nid)
            other = ix.get_memory(s.conn, mem_id=nid)
            if other is None:
                out.append(ChainLink(id=nid, title="(missing)", state="missing", path=None))
                continue
            out.append(ChainLink(id=other.id, title=other.title, state=other.state, path=other.path))
            frontier.extend(getattr(other, direction))
        return out

    @staticmethod
    def _conflict_history(s: StoreSession, mem_id: str) -> list[ConflictHistoryEntry]:
        rows = s.conn.execute(
            "SELECT c.pair_hash, c.a_id, c.b_id, c.status, c.detected, c.resolution, c.resolved, c.note, m.title "
            "FROM conflicts c LEFT JOIN memories m ON m.id = (CASE WHEN c.a_id = ? THEN c.b_id ELSE c.a_id END) "
            "WHERE c.a_id = ? OR c.b_id = ? ORDER BY c.detected",
            (mem_id, mem_id, mem_id),
        )
        return [
            ConflictHistoryEntry(
                pair_hash=r[0],
                other_id=r[2] if r[1] == mem_id else r[1],
                other_title=r[8],
                status=r[3],
                detected=r[4],
                resolution=r[5],
                resolved=r[6],
                note=r[7],
            )
            for r in rows
        ]

    # ------------------------------------------------------------ browse (web view)

    def browse(
        self,
        state: str | None = None,
        type: str | None = None,
        trust: str | None = None,
        entity: str | None = None,
        limit: int = BROWSE_LIMIT[1],
        offset: int = 0,
        store: str | None = None,
        scope: str | None = None,
    ) -> BrowseAnswer:
        """One scope's memories matching the filters, without a query, newest update first (state None = all)."""
        if not BROWSE_LIMIT[0] <= limit <= BROWSE_LIMIT[1]:
            raise InputError(f"limit: {limit} is outside {BROWSE_LIMIT[0]}..{BROWSE_LIMIT[1]}")
        if offset < 0:
            raise InputError("offset: must not be negative")
        mem_state = _enum_arg(State, state, "state")
        mem_type = _enum_arg(MemoryType, type, "type")
        mem_trust = _enum_arg(Trust, trust, "trust")
        s = self.scopes.session(scope, store)
        with s.transaction() as report:
            others = Filters(
                types=[mem_type.value] if mem_type else [],
                trusts=[mem_trust.value] if mem_trust else [],
                entity=s.dictionary.canonical(entity) if entity else None,
                include_deprecated=True,
            )
            where, params = others.sql()
            sql = f"SELECT m.state, count(*) FROM memories m WHERE 1 = 1{where} GROUP BY 1"
            counts = {r[0]: r[1] for r in s.conn.execute(sql, params)}
            if mem_state is not None:
                where += " AND m.state = ?"
                params = [*params, mem_state.value]
            items = [
                MemoryItem(
                    id=m.id,
                    path=m.path,
                    title=m.title,
                    excerpt=m.excerpt,
                    type=m.type,
                    state=m.state,
                    trust=m.trust,
                    entities=m.entities,
                    created=m.created,
                    updated=m.updated,
                )
                for m in ix.filtered_memories(s.conn, where, params, limit, offset)
            ]
            return BrowseAnswer(
                items=items,
                total=counts.get(mem_state.value, 0) if mem_state else sum(counts.values()),
                state_counts=counts,
                entities=[r[0] for r in s.conn.execute("SELECT DISTINCT entity FROM entities ORDER BY entity")],
                index=s.index_report(report),
            )

    def editable(self, id: str, store: str | None = None, scope: str | None = None) -> EditableMemory:
        """A memory's editable fields parsed from the file bytes, with their sha256 (for a safe edit)."""
        with self.scopes.open(scope, store) as opened:
            o, mem = locate(opened, id)
            data = o.session.store.memory_file(mem.path).read_bytes()
            try:
                parsed = canon.parse(data, Path(mem.path).stem, "")
            except canon.CanonError as exc:
                raise InputError(f"id: '{mem.path}' cannot be parsed: {exc}") from None
            return EditableMemory(
                id=parsed.id,
                path=mem.path,
                sha256=canon.sha256_bytes(data),
                title=parsed.title,
                body=parsed.body,
                type=parsed.type.value,
                state=parsed.state.value,
                trust=parsed.trust.value,
                entities=parsed.entities,
                source=parsed.source,
                review_after=parsed.review_after,
            )

    def stores(self) -> list[StoreInfo]:
        """Every place a call can reach: the local scope (when bound), the global store, and the named
        sibling stores that already exist next to it (global scope, `store=NAME`)."""
        sc = self.scopes

        def info(scope: str, store: str | None, name: str, root: Path) -> StoreInfo:
            home = sc.home == scope and store is None
            return StoreInfo(
                scope=scope, store=store, name=name, root=str(root), memories_dir=str(root / "memories"), home=home
            )

        out = []
        if sc.project_root is not None:
            out.append(info(LOCAL, None, LOCAL, sc.project_root / sc.local_dir))
        out.append(info(GLOBAL, None, sc.global_root.name, sc.global_root))
        try:
            siblings = sorted(p for p in sc.global_root.parent.iterdir() if p != sc.global_root)
        except OSError:
            siblings = []
        for p in siblings:
            if STORE_NAME.match(p.name) and (p / "memories").is_dir():
                out.append(info(GLOBAL, p.name, p.name, p))
        return out

    # ------------------------------------------------------------ update

    def update(
        self,
        op: str,
        id: str,
        title: str | None = None,
        body: str | None = None,
        type: str | None = None,
        trust: str | None = None,
        entities: list[str] | None = None,
        source: str | None = None,
        review_after: str | None = None,
        state: str | None = None,
        reason: str | None = None,
        by: str | None = None,
        other_id: str | None = None,
        pair_hash: str | None = None,
        resolution: str | None = None,
        winner: str | None = None,
        note: str | None = None,
        expected_sha256: str | None = None,
        store: str | None = None,
        scope: str | None = None,
    ) -> UpdateAnswer:
        """Change a memory in whichever scope holds it (ids it refers to must be in the same scope)."""
        if op not in UPDATE_OPS:
            raise InputError(f"op: '{op}' is not one of {', '.join(UPDATE_OPS)}")
        given = dict(title=title, body=body, type=type, trust=trust, entities=entities, source=source)
        given |= dict(review_after=review_after, state=state, reason=reason, by=by, other_id=other_id)
        given |= dict(pair_hash=pair_hash, resolution=resolution, winner=winner, note=note)
        given |= dict(expected_sha256=expected_sha256)
        stray = [name for name, value in given.items() if value is not None and name not in UPDATE_OP_FIELDS[op]]
        if stray:
            takes = ", ".join(UPDATE_OP_FIELDS[op])
            raise InputError(f"{stray[0]}: op={op} does not take {', '.join(stray)} (it takes {takes})")
        with self.scopes.open(scope, store) as opened:
            o, mem = locate(opened, id)
            s = o.session
            now = canon.now_iso()
            if op == "edit":
                changed, message = self._edit(
                    s, mem, now, title, body, type, trust, entities, source, review_after, expected_sha256
                )
            elif op == "supersede":
                changed, message = self._supersede(s, mem, by, now)
            elif op == "set_state":
                changed, message = self._set_state(s, mem, state, reason, now)
            elif op == "link":
                changed, message = self._link(s, mem, other_id, now)
            else:
                changed, message = self._resolve(s, mem, pair_hash, resolution, winner, note, now)
            s.write_files([p for _, p in changed])
            fresh = ix.get_memory(s.conn, mem_id=id)
            return UpdateAnswer(
                op=op,
                id=id,
                path=fresh.path if fresh else mem.path,
                state=fresh.state if fresh else mem.state,
                changed=[i for i, _ in changed],
                message=message,
                index=merged_report(opened),
            )

    def _edit(
        self,
        s: StoreSession,
        mem: ix.IndexedMemory,
        now: str,
        title: str | None,
        body: str | None,
        type: str | None,
        trust: str | None,
        entities: list[str] | None,
        source: str | None,
        review_after: str | None,
        expected_sha256: str | None,
    ) -> tuple[list[tuple[str, str]], str]:
        check_editable(State(mem.state))
        fields: dict[str, Any] = {}
        if type is not None:
            fields["type"] = _enum_arg(MemoryType, type, "type").value
        if trust is not None:
            fields["trust"] = _enum_arg(Trust, trust, "trust").value
        if entities is not None:
            fields["entities"] = s.dictionary.normalise(self.limits.entities(entities))
        if source is not None:
            fields["source"] = self.limits.source(source)
        if review_after is not None:
            fields["review_after"] = _check_date(review_after, "review_after")
        new_title = self.limits.title(title) if title is not None else None
        new_body = self.limits.body(body) if body is not None else None
        if not fields and new_title is None and new_body is None:
            raise InputError(
                "edit: op=edit needs at least one of title, body, type, trust, entities, source, review_after"
            )

        def mutate(meta: dict) -> None:
            for key, value in fields.items():
                if value is None:
                    meta.pop(key, None)
                elif isinstance(value, list):
                    canon.set_list(meta, key, value)
                else:
                    meta[key] = value
            meta["updated"] = now

        try:
            canon.rewrite(s.store.memory_file(mem.path), mutate, new_title, new_body, expected_sha=expected_sha256)
        except canon.CanonError as exc:
            raise StaleWriteError(f"expected_sha256: {exc}; nothing was written") from None
        return [(mem.id, mem.path)], "edited: " + ", ".join(
            [*fields, *(["title"] if new_title else []), *(["body"] if new_body is not None else [])]
        )

    def _supersede(
        self, s: StoreSession, old: ix.IndexedMemory, by: str | None, now: str
    ) -> tuple[list[tuple[str, str]], str]:
        if not by:
            raise InputError("by: op=supersede needs `by`, the id of the memory that replaces this one")
        new = ix.get_memory(s.conn, mem_id=by)
        if new is None:
            raise NotFoundError(f"by: no memory with id '{by}'")
        if new.id == old.id:
            raise InputError("by: a memory cannot supersede itself")
        for m in (old, new):
            check_editable(State(m.state))
        if old.id in {c.id for c in self._chain(s, new, "superseded_by")}:
            raise InputError(f"by: '{by}' is already superseded (directly or not) by '{old.id}': that would be a cycle")
        if by in old.superseded_by:
            raise InputError(f"by: '{old.id}' is already superseded by '{by}'")

        def add_link(meta: dict) -> None:
            canon.add_link(meta, "supersedes", old.id, self._entry(old.id, old.path))
            meta["updated"] = now

        canon.rewrite(s.store.memory_file(new.path), add_link)
        self._link_supersede(s, old, new.id, new.path, now)
        return [(new.id, new.path), (old.id, old.path)], f"{old.id} superseded by {new.id}; {old.id} archived"

    def _set_state(
        self, s: StoreSession, mem: ix.IndexedMemory, state: str | None, reason: str | None, now: str
    ) -> tuple[list[tuple[str, str]], str]:
        target = _enum_arg(State, state, "state")
        if target is None:
            raise InputError("state: op=set_state needs `state`, the target state (active, archived, deprecated)")
        self._transition(s, mem, target, reason, now)
        return [(mem.id, mem.path)], f"{mem.state} → {target.value}"

    @staticmethod
    def _transition(s: StoreSession, mem: ix.IndexedMemory, target: State, reason: str | None, now: str) -> None:
        current = State(mem.state)
        check_transition(current, target, reason)

        def mutate(meta: dict) -> None:
            meta["state"] = target.value
            meta["updated"] = now
            if target is State.DEPRECATED:
                meta["deprecated_reason"] = (reason or "").strip()
            elif current is State.DEPRECATED:  # reactivation; deprecated_reason stays as the history
                meta["reactivated_reason"] = (reason or "").strip()

        canon.rewrite(s.store.memory_file(mem.path), mutate)

    def _link(
        self, s: StoreSession, mem: ix.IndexedMemory, other_id: str | None, now: str
    ) -> tuple[list[tuple[str, str]], str]:
        if not other_id:
            raise InputError("other_id: op=link needs `other_id`, the id of the related memory")
        other = ix.get_memory(s.conn, mem_id=other_id)
        if other is None:
            raise NotFoundError(f"other_id: no memory with id '{other_id}'")
        if other.id == mem.id:
            raise InputError("other_id: a memory cannot be linked to itself")
        changed = []
        for a, b in ((mem, other), (other, mem)):
            if b.id in a.related:
                continue

            def mutate(meta: dict, b: ix.IndexedMemory = b) -> None:
                canon.add_link(meta, "related", b.id, self._entry(b.id, b.path))
                meta["updated"] = now

            canon.rewrite(s.store.memory_file(a.path), mutate)
            changed.append((a.id, a.path))
        if not changed:
            raise InputError(f"other_id: '{mem.id}' and '{other.id}' are already linked")
        return changed, f"{mem.id} and {other.id} linked as related"

    def _resolve(
        self,
        s: StoreSession,
        mem: ix.IndexedMemory,
        pair: str | None,
        resolution: str | None,
        winner: str | None,
        note: str | None,
        now: str,
    ) -> tuple[list[tuple[str, str]], str]:
        if not pair:
            raise InputError(
                "pair_hash: op=resolve_conflict needs `pair_hash`, the conflict's (as remember or status give it)"
            )
        if resolution is None:
            raise InputError(
                "resolution: op=resolve_conflict needs `resolution`: keep_both, or supersede with `winner`"
            )
        if resolution not in RESOLUTIONS:
            raise InputError(f"resolution: '{resolution}' is not one of {', '.join(RESOLUTIONS)}")
        row = s.conn.execute(
            "SELECT a_id, b_id, recorded_in, status FROM conflicts WHERE pair_hash = ?", (pair,)
        ).fetchone()
        if row is None or mem.id not in (row[0], row[1]):
            raise NotFoundError(f"pair_hash: no conflict '{pair}' involving '{mem.id}'")
        if row[3] == "resolved":
            raise InputError(f"pair_hash: conflict '{pair}' is already resolved")
        a_id, b_id, recorded_in = row[0], row[1], row[2]
        changed: list[tuple[str, str]] = []
        message = f"conflict {pair} resolved: {resolution}"
        if resolution == "supersede":
            if winner is None:
                raise InputError(f"winner: resolution=supersede needs `winner`, one of the pair ({a_id}, {b_id})")
            if winner not in (a_id, b_id):
                raise InputError(f"winner: must be one of the pair ({a_id}, {b_id})")
            loser = b_id if winner == a_id else a_id
            loser_mem = ix.get_memory(s.conn, mem_id=loser)
            if loser_mem is None:
                raise NotFoundError(f"winner: the other memory '{loser}' is gone")
            changed, sup_message = self._supersede(s, loser_mem, winner, now)
            message += f" ({sup_message})"
        holder = ix.get_memory(s.conn, mem_id=recorded_in)
        if holder is None:
            raise NotFoundError(f"pair_hash: the memory recording the conflict ({recorded_in}) is gone")
        other = a_id if recorded_in == b_id else b_id

        def mutate(meta: dict) -> None:
            for entry in meta.get("conflicts") or []:
                if str(entry.get("with")) == other:
                    entry["status"] = "resolved"
                    entry["resolution"] = resolution if resolution != "supersede" else f"supersede: {winner} wins"
                    entry["resolved"] = now
                    if note:
                        entry["note"] = note.strip()

        canon.rewrite(s.store.memory_file(holder.path), mutate)
        if holder.id not in {i for i, _ in changed}:
            changed.append((holder.id, holder.path))
        return changed, message

    # ------------------------------------------------------------ forget

    def forget(
        self,
        id: str,
        mode: str,
        reason: str | None = None,
        confirm: bool = False,
        store: str | None = None,
        scope: str | None = None,
    ) -> ForgetAnswer:
        if mode not in FORGET_MODES:
            raise InputError(f"mode: '{mode}' is not one of {', '.join(FORGET_MODES)}")
        with self.scopes.open(scope, store) as opened:
            o, mem = locate(opened, id)
            s = o.session
            now = canon.now_iso()
            if mode == "purge":
                check_purge(State(mem.state))
                if confirm is not True:
                    raise InputError("confirm: purge deletes the file; pass confirm=true to really delete it")
                s.store.memory_file(mem.path).unlink()
                s.write_files([mem.path])
                return ForgetAnswer(
                    id=id,
                    mode=mode,
                    path=mem.path,
                    state=None,
                    message=f"deleted {mem.path} (git history is the backstop)",
                    index=merged_report(opened),
                )
            target = State.ARCHIVED if mode == "archive" else State.DEPRECATED
            self._transition(s, mem, target, reason, now)
            s.write_files([mem.path])
            return ForgetAnswer(
                id=id,
                mode=mode,
                path=mem.path,
                state=target.value,
                message=f"{mem.state} → {target.value}",
                index=merged_report(opened),
            )

    # ------------------------------------------------------------ status

    def status(self, store: str | None = None, scope: str | None = None) -> StatusAnswer:
        """One scope's health (default: the home scope, local when a project is bound)."""
        s = self.scopes.session(scope, store)
        with s.transaction() as report:
            conn = s.conn
            by = {}
            for col in ("state", "type", "trust"):
                by[col] = {r[0]: r[1] for r in conn.execute(f"SELECT {col}, count(*) FROM memories GROUP BY {col}")}
            # review dates are local calendar days
            review = reviews_due(conn, self.clock().astimezone().date())
            handoff = current_handoff(conn)
            return StatusAnswer(
                scope=s.scope,
                scopes=self.scopes.names,
                sources=source_status(conn, s.sources),
                store=s.store.name,
                root=str(s.store.root),
                total=sum(by["state"].values()),
                by_state=by["state"],
                by_type=by["type"],
                by_trust=by["trust"],
                handoff=handoff_info(s.scope, handoff) if handoff is not None else None,
                unresolved_conflicts=s.open_conflicts(),
                unresolved_conflicts_total=s.count_open_conflicts(),
                review_due=review,
                compaction_candidates=self._compaction(s),
                unparseable=[u.model_copy(update={"scope": s.scope}) for u in unparseable_files(conn)],
                index=IndexFreshness(
                    path=s.store.relative(s.store.db_path),
                    size_bytes=s.db_size(),
                    schema_version=ix.SCHEMA_VERSION,
                    built_at=ix.meta_value(conn, "built_at"),
                    last_reconcile=report,
                    change_watch=s.change_watch,
                    not_restored_by_rebuild=NOT_RESTORED_BY_REBUILD,
                ),
            )

    def _compaction(self, s: StoreSession) -> list[CompactionCandidate]:
        """Active episodes neither updated (the file's `updated`) nor recalled (the index's last recall time)
        for `compaction.min_age_days`, grouped by a shared entity."""
        cutoff = canon.iso_utc(self.clock() - timedelta(days=self.limits.compaction_min_age_days))
        rows = s.conn.execute(
            """SELECT e.entity, m.id, m.title, m.created FROM memories m
               JOIN entities e ON e.memory_rowid = m.rowid
               LEFT JOIN heat h ON h.memory_id = m.id
               WHERE m.type = 'episode' AND m.state = 'active' AND m.updated < ?
                 AND (h.last_recalled IS NULL OR h.last_recalled < ?) AND m.superseded_by = '[]'
               ORDER BY e.entity, m.created""",
            (cutoff, cutoff),
        )
        groups: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
        for entity, mid, title, created in rows:
            groups[entity].append((mid, title, created))
        out = []
        for entity, items in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            if len(items) < self.limits.compaction_min_group:
                continue
            out.append(
                CompactionCandidate(
                    entity=entity,
                    ids=[i[0] for i in items],
                    titles=[i[1] for i in items],
                    oldest=items[0][2],
                    newest=items[-1][2],
                    suggestion=(
                        f"distil these {len(items)} episodes about '{entity}' (not updated or recalled for "
                        f"{self.limits.compaction_min_age_days}+ days) into one knowledge "
                        "memory that supersedes them (memory_remember type=knowledge supersedes=[...])"
                    ),
                )
            )
        return out

    # ------------------------------------------------------------ export

    def export(self, scope: str | None = None, store: str | None = None) -> ExportAnswer:
        """MEMORY.md: active memories grouped by type, newest first, each with its id. A rendering only:
        it lives outside memories/ and is never read back as memory."""
        order = [t.value for t in MemoryType]
        lines = [
            "# MEMORY",
            "",
            f"<!-- generated by memory-mcp export at {canon.now_iso()}; a rendering, not canon: edit memories/*.md -->",
        ]
        count = 0
        with self.scopes.open(scope, store) as opened:
            for o in opened:
                rows = o.session.conn.execute(
                    "SELECT id, type, title, excerpt, updated FROM memories WHERE state = 'active' "
                    # ids break same-second ties: ULIDs sort by creation time, so this stays newest first
                    "ORDER BY updated DESC, created DESC, id DESC"
                ).fetchall()
                if len(opened) > 1:
                    lines += ["", f"## {o.scope} ({o.session.store.root})"]
                by_type: dict[str, list] = defaultdict(list)
                for r in rows:
                    by_type[r[1]].append(r)
                for t in sorted(by_type, key=lambda t: order.index(t) if t in order else len(order)):
                    lines += ["", f"{'###' if len(opened) > 1 else '##'} {t}", ""]
                    for mem_id, _, title, excerpt, updated in by_type[t]:
                        lines.append(f"- **{title}** — {excerpt} `{mem_id}` ({updated[:10]})")
                        count += 1
            return ExportAnswer(text="\n".join(lines) + "\n", memories=count, scopes=[o.scope for o in opened])

    # ------------------------------------------------------------ reindex

    def reindex(
        self,
        verify: bool = False,
        store: str | None = None,
        scope: str | None = None,
        progress: ProgressFn | None = None,
    ) -> ReindexAnswer:
        """Rebuild every scope's index (or the one named); with verify, report mismatches first.

        `progress` hears how far the rebuild ("index", per file) and the embedding ("embed") are."""
        started = time.perf_counter()
        files = memories = 0
        unparseable: list[Unparseable] = []
        mismatches: list[Mismatch] = []
        auto_closed: list[AutoClosedConflict] = []
        with self.scopes.open(scope, store) as opened:
            for o in opened:
                s = o.session
                mismatches += [m.model_copy(update={"scope": o.scope}) for m in (self._verify(s) if verify else [])]
                report, _ = s.rebuild(stage_reporter(progress, "index", o.scope))
                auto_closed += [c.model_copy(update={"scope": o.scope}) for c in self._close_stale_conflicts(s)]
                files += report.scanned
                memories += s.conn.execute("SELECT count(*) FROM memories").fetchone()[0]
                unparseable += [u.model_copy(update={"scope": o.scope}) for u in unparseable_files(s.conn)]
            answer = ReindexAnswer(
                store="+".join(o.session.store.name for o in opened),
                scopes=[o.scope for o in opened],
                files=files,
                memories=memories,
                unparseable=unparseable,
                verified=verify,
                mismatches=mismatches,
                auto_closed=auto_closed,
                seconds=0.0,
            )
        # vectors survived the rebuild (keyed by content); embed what is new, outside the store lock
        answer.embedded, answer.semantic_note = self.embed_pending(store=store, scope=scope, progress=progress)
        answer.seconds = round(time.perf_counter() - started, 4)
        return answer

    def _close_stale_conflicts(self, s: StoreSession) -> list[AutoClosedConflict]:
        """Resolve, in the holder's file, open pairs an earlier gate recorded that today's gate rejects.

        The entry becomes `status: resolved`, `resolution: auto-closed`, with the gate's reasons as the
        note, so the file says why. A file edited since it was indexed is left for the next reindex.
        """
        stale = stale_open_pairs(s.conn, self.limits.near_text_similarity)
        by_holder: dict[str, list[StalePair]] = defaultdict(list)
        for pair in stale:
            by_holder[pair.holder.path].append(pair)
        now, closed, written = canon.now_iso(), [], []
        ledger = ix.file_rows_at(s.conn, list(by_holder))
        for path, pairs in by_holder.items():
            why = {p.other_id: p for p in pairs}

            def mutate(meta: dict, why: dict[str, StalePair] = why) -> None:
                for entry in meta.get("conflicts") or []:
                    pair = why.get(str(entry.get("with")))
                    if pair is not None and str(entry.get("status") or "open") == "open":
                        entry["status"] = "resolved"
                        entry["resolution"] = AUTO_CLOSED
                        entry["resolved"] = now
                        entry["note"] = "not a conflict by the current gate: " + "; ".join(pair.reasons)

            try:
                canon.rewrite(s.store.root / path, mutate, expected_sha=ledger[path].sha256)
            except (canon.CanonError, KeyError):
                continue  # changed by hand since the rebuild read it: the next reindex looks again
            written.append(path)
            closed += [
                AutoClosedConflict(
                    pair_hash=p.pair_hash, recorded_in=p.holder.id, other_id=p.other_id, reasons=p.reasons
                )
                for p in pairs
            ]
        if written:
            s.write_files(written)
        return closed

    def embed_pending(
        self, store: str | None = None, scope: str | None = None, progress: ProgressFn | None = None
    ) -> tuple[int, str]:
        """Embed every memory that lacks a vector; (how many, why it stopped early or was skipped).

        Batches are embedded without holding the store lock (a large store takes minutes on a CPU), so
        other calls go on meanwhile; each batch is read, and its vectors written, under the lock.
        """
        if self.semantic.provider is None:
            return 0, ""
        if not self.semantic.available():
            return 0, f"not embedded: {self.semantic.why_unavailable()}"
        name, batch, done = self.semantic.name, self.semantic.config.batch, 0
        with self.scopes.open(scope, store) as opened:
            for o in opened:
                vector_table.prune(o.session.conn)
            total = sum(vector_table.pending_count(o.session.conn, name) for o in opened)
            where_all = "+".join(o.scope for o in opened)
        report = stage_reporter(progress, "embed", where_all)
        report(0, total)
        try:
            while True:
                todo: tuple[str, list[tuple[str, str]]] | None = None
                with self.scopes.open(scope, store) as opened:
                    for o in opened:
                        items = vector_table.pending(o.session.conn, name, batch)
                        if items:
                            todo = (o.scope, items)
                            break
                if todo is None:
                    return done, ""
                where, items = todo
                vecs = self.semantic.embed([text for _, text in items])
                pairs = [(h, v) for (h, _), v in zip(items, vecs, strict=True)]
                with self.scopes.open(where, store) as opened:
                    vector_table.store_vectors(opened[0].session.conn, name, pairs)
                done += len(items)
                report(min(done, total), max(total, done))
        except sem.SemanticUnavailable as exc:
            return done, f"embedding stopped after {done} memories: {exc}"

    @staticmethod
    def _verify(s: StoreSession) -> list[Mismatch]:
        """Re-hash and re-parse every file; compare with what the index says (before it is rebuilt)."""
        conn = s.conn
        out: list[Mismatch] = []
        disk = StatGate(s.store).scan()
        files = ix.file_rows(conn)
        for rel in sorted(files.keys() - disk.keys()):
            out.append(Mismatch(path=rel, id=files[rel].memory_id, problem="indexed but the file is gone"))
        indexed_paths = {r[0] for r in conn.execute("SELECT path FROM memories")}
        for rel in sorted(indexed_paths - disk.keys() - files.keys()):
            out.append(Mismatch(path=rel, id=None, problem="memory row without a file"))
        for rel in sorted(disk):
            if disk[rel].problem:
                continue
            row = files.get(rel)
            data = s.store.memory_file(rel).read_bytes()
            sha = canon.sha256_bytes(data)
            if row is None:
                out.append(Mismatch(path=rel, id=None, problem="file not in the index"))
                continue
            if row.sha256 != sha:
                out.append(Mismatch(path=rel, id=row.memory_id, problem="sha256 differs from the index"))
                continue
            if row.error:
                continue
            try:
                mem = canon.parse(data, Path(rel).stem, "")
            except canon.CanonError as exc:
                out.append(Mismatch(path=rel, id=row.memory_id, problem=f"indexed as a memory but: {exc}"))
                continue
            got = ix.get_memory(conn, path=rel)
            if got is None:
                out.append(Mismatch(path=rel, id=mem.id, problem="parseable file has no memory row"))
                continue
            expected = {
                "id": mem.id,
                "title": mem.title,
                "body": mem.body,
                "state": mem.state.value,
                "type": mem.type.value,
                "trust": mem.trust.value,
                "entities": s.dictionary.normalise(mem.entities),
                "supersedes": mem.supersedes,
                "superseded_by": mem.superseded_by,
            }
            for key, value in expected.items():
                if getattr(got, key) != value:
                    out.append(Mismatch(path=rel, id=mem.id, problem=f"index field '{key}' differs from the file"))
            fts = conn.execute("SELECT title, body FROM fts_word WHERE rowid = ?", (got.rowid,)).fetchone()
            if fts is None or fts[0] != mem.title or fts[1] != mem.body:
                out.append(Mismatch(path=rel, id=mem.id, problem="full-text row differs from the file"))
        return out
