"""The state every operation shares, held once by the `MemoryService` facade."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Self

from ..config import Settings
from ..domain.errors import StoreAccessError, StoreMissingError
from ..domain.ranking import DEFAULT as RANKING
from ..domain.ranking import RankingConstants
from ..search import semantic as sem
from ..store.documents import (
    DocumentSource,
)
from ..store.paths import Store
from ..store.scopes import Scopes
from ..store.session import StoreSession
from .limits import Limits

if TYPE_CHECKING:
    from .workers import WorkerPool


def utc_now() -> datetime:
    return datetime.now(UTC)


class ServiceState:
    """What every operation shares: the scopes (stores), limits, ranking constants, the embedder, the clock."""

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
        one_call: bool = False,
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
        self.scopes = Scopes(self.root, project_root, local_dir, sources, chunk_chars, change_watch, one_call)
        # worker processes for keyword recalls (`serve --http --workers N`); None: every call runs here
        self.workers: WorkerPool | None = None

    @classmethod
    def from_settings(cls, settings: Settings, store: Path | None = None, *, one_call: bool = False) -> Self:
        """A service configured by layered settings; `store` (the CLI's --store) overrides the global root;
        `one_call`: the process makes one call and exits (a one-shot CLI command: `CanonWatch`)."""
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
                fusion=settings.get("semantic.fusion"),
                keyword_share=settings.get("semantic.keyword_share"),
                keyword_first=settings.get("semantic.keyword_first"),
                rrf_k=settings.get("semantic.rrf_k"),
                depth=settings.get("semantic.depth"),
                embed_per_recall=settings.get("semantic.embed_per_recall"),
                collapse_cosine=settings.get("semantic.collapse_cosine"),
            ),
            collapse_jaccard=(
                settings.get("recall.collapse_jaccard") if settings.get("recall.collapse_duplicates") else None
            ),
            change_watch=settings.get("index.change_watch"),
            one_call=one_call,
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
        for _, t in targets:
            problem = t.unusable()
            if problem:
                raise StoreAccessError(f"store: {problem}")
        present = [name for name, t in targets if t.exists()]
        if not present:
            where = " or ".join(str(t.root) for _, t in targets)
            raise StoreMissingError(
                f"store: no memory store at {where} (no memories/ folder); check --store, --project-root or "
                "MEMORY_MCP_ROOT, or create it with a first `memory-mcp remember`"
            )
        return present[0] if len(present) < len(targets) else scope

    def close(self) -> None:
        if self.workers is not None:
            self.workers.close()
            self.workers = None
        self.scopes.close()
