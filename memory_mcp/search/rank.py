"""Ranking assembly: the candidates of every pool (memories, documents; each scope) scored on one scale."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import overload

from ..domain import provenance
from ..domain.answers import RecallResult, ScoreComponents
from ..domain.ranking import RankingConstants, ScoreParts, score_parts, score_total
from ..domain.text import Term, fold
from ..domain.vocabulary import State
from ..index import db as ix
from ..store.documents import (
    DOCUMENT_TRUST,
    ChunkRow,
    chunks_by_rowid,
    cited_line,
    display_path,
)
from ..store.session import StoreSession
from .planner import DOCUMENTS, Corpus, Filters, Plan, best_line, coverage
from .semantic import Semantic

UNLIMITED = 1_000_000_000  # "every candidate" for a ranking that is cut later (after fusion or collapse)


@dataclass(frozen=True)
class SearchSettings:
    """What a recall reads of the service: its clock (freshness, heat), ranking constants, the project root
    (document paths are shown relative to it), the embedder and the near-duplicate threshold."""

    clock: Callable[[], datetime]
    ranking: RankingConstants
    project_root: Path | None
    semantic: Semantic
    collapse_jaccard: float | None  # None: never collapse near-duplicates


@dataclass
class Pool:
    """Candidates of one corpus (memories or documents) in one scope, before ranking on a shared scale."""

    scope: str
    session: StoreSession
    corpus: Corpus
    plan: Plan
    filters: Filters | None = None


def document_result(
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
        components=ScoreComponents(**parts._asdict()),
        type="document",
        state=State.ACTIVE.value,
        trust=DOCUMENT_TRUST,
        entities=[chunk.label],
        updated=chunk.updated,
    )


def memory_result(
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
        components=ScoreComponents(**parts._asdict()) if parts is not None else None,
        type=m.type,
        state=m.state,
        trust=m.trust,
        origin=provenance.shown(m.origin),
        entities=m.entities,
        updated=m.updated,
        quarantine=m.quarantine,
    )


class _WideRows:
    """The whole rows of the candidates that become results, read a page at a time in rank order.

    A recall ranks ~100 candidates and builds its 10 or so results, best first: the first row asked for brings
    the next `PAGE` of its pool's ranking in one query (one query per row was ~5% of a recall; a page of 24 read
    and decoded rows nobody built once collapse stopped building results it drops).
    """

    PAGE = 12

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._rows: dict[int, ix.IndexedMemory] = {}
        self._order: list[int] = []
        self._at: dict[int, int] = {}

    def rank_order(self, rowids: list[int]) -> None:
        """This pool's candidates, best first (set once the pools are ranked together)."""
        self._order = rowids
        self._at = {rowid: n for n, rowid in enumerate(rowids)}

    def __call__(self, rowid: int) -> ix.IndexedMemory:
        row = self._rows.get(rowid)
        if row is None:
            start = self._at.get(rowid)
            page = [rowid] if start is None else self._order[start : start + self.PAGE]
            self._rows.update(ix.memories_by_rowid(self._conn, [r for r in page if r not in self._rows]))
            row = self._rows[rowid]
        return row


def _best_line_of(wide: _WideRows, rowid: int, terms: list[Term]) -> int:
    m = wide(rowid)
    return best_line(terms, m.title, m.title_line, m.body, m.body_line)


def _memory_result_of(
    wide: _WideRows,
    rowid: int,
    scope: str,
    total: float,
    parts: Callable[[], ScoreParts],
    locate: Callable[[], int] | None,
) -> RecallResult:
    return memory_result(scope, wide(rowid), total, parts(), locate)


class Ranked(Sequence[RecallResult]):
    """Ranked results built only when looked at: a recall ranks ~100 candidates and returns 5-20."""

    def __init__(self, builders: list[Callable[[], RecallResult]], scores: list[float], keys: list[str]) -> None:
        self._builders = builders
        self._built: list[RecallResult | None] = [None] * len(builders)
        # each result's keyword score and result_key, readable without building the result
        self.scores = scores
        self.keys = keys

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


# result key → how to find its cited line, for the few results a recall returns
DeferredLines = dict[str, Callable[[], int]]


def result_key(scope: str, result_id: str) -> str:
    """A result's identity across scopes (the same id may exist in both)."""
    return f"{scope}\x00{result_id}"


def split_key(key: str) -> tuple[str, str]:
    """(scope, id) of a `result_key`."""
    scope, result_id = key.split("\x00", 1)
    return scope, result_id


def rank(settings: SearchSettings, pools: list[Pool], limit: int, lines: DeferredLines | None = None) -> Ranked:
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
            # (not named `lines`: that would hide the caller's deferred lines from the memory pools below)
            at = {rowid: (chunk, cited_line(pool.plan.terms, chunk)) for rowid, chunk in chunks.items()}
            cited[n] = {rowid: (chunk, line) for rowid, (chunk, line) in at.items() if line is not None}
            pool.plan.candidates = {r: c for r, c in pool.plan.candidates.items() if r in cited[n]}
    now = settings.clock()
    scored: list[tuple[float, str, Callable[[], RecallResult], str]] = []  # (score, id, build, scope)
    pages: list[tuple[_WideRows, str, dict[str, int]]] = []  # each memory pool's rows, scope, id → rowid
    for n, pool in enumerate(pools):
        cands, terms = pool.plan.candidates, pool.plan.terms
        if not cands:
            continue
        covered = coverage(terms)
        max_word = max(c.word for c in cands.values()) or 1.0
        max_tri = max(c.trigram for c in cands.values()) or 1.0
        conn = pool.session.conn
        if pool.corpus is DOCUMENTS:
            for rowid, (chunk, line) in cited[n].items():
                c = cands[rowid]
                word, trigram = c.word / max_word, c.trigram / max_tri
                cover = covered(fold(f"{chunk.title}\n{chunk.label}\n{chunk.body}"))
                t = score_total(
                    word=word, trigram=trigram, like=c.like, coverage=cover, trust=DOCUMENT_TRUST,
                    state=State.ACTIVE.value, updated=chunk.updated, recalls=0, last_recalled=None, now=now,
                    k=settings.ranking,
                )  # fmt: skip
                comp = score_parts(
                    t, word=word, trigram=trigram, like=c.like, coverage=cover, trust=DOCUMENT_TRUST,
                    state=State.ACTIVE.value, k=settings.ranking,
                )  # fmt: skip
                total = t.total
                shown = display_path(Path(chunk.path), settings.project_root)
                doc_id = f"doc:{shown}#{chunk.start_line}"
                build = partial(document_result, pool.scope, chunk, doc_id, shown, line, total, comp)
                scored.append((total, doc_id, build, pool.scope))
            continue
        rows = ix.ranking_rows(conn, list(cands))
        ids = [m.id for m in rows]
        heat = pool.session.recalls.added_to(ix.heat_of(conn, ids), ids)  # with this process's unwritten counts
        wide = _WideRows(conn)
        pages.append((wide, pool.scope, {m.id: m.rowid for m in rows}))
        k = settings.ranking
        for m in rows:
            c = cands[m.rowid]
            recalls, last = heat.get(m.id, (0, None))
            word, trigram = c.word / max_word, c.trigram / max_tri
            cover = covered(fold(f"{m.title}\n{' '.join(m.entities)}\n{m.body}"))
            t = score_total(
                word=word, trigram=trigram, like=c.like, coverage=cover, trust=m.trust, state=m.state,
                updated=m.updated, recalls=recalls, last_recalled=last, now=now, k=k,
            )  # fmt: skip
            parts = partial(
                score_parts,
                t,
                word=word,
                trigram=trigram,
                like=c.like,
                coverage=cover,
                trust=m.trust,
                state=m.state,
                k=k,
            )
            locate = partial(_best_line_of, wide, m.rowid, terms)
            if lines is not None:  # folding every candidate's body only to cite a line was ~10% of a recall
                lines[result_key(pool.scope, m.id)] = locate
            build = partial(
                _memory_result_of, wide, m.rowid, pool.scope, t.total, parts, None if lines is not None else locate
            )
            scored.append((t.total, m.id, build, pool.scope))
    scored.sort(key=lambda x: (-x[0], x[1]))
    for wide, scope_of_pool, rowid_of in pages:
        wide.rank_order([rowid_of[rid] for _, rid, _, scope in scored if scope == scope_of_pool and rid in rowid_of])
    head = scored[:limit]
    keys = [result_key(scope, rid) for _, rid, _, scope in head]
    return Ranked([build for _, _, build, _ in head], [total for total, _, _, _ in head], keys)
