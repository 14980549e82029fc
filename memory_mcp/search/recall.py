"""One recall's search: candidates per scope, ranking (keyword or hybrid), current versions first, collapse of
near-duplicates, the best result's thread continuation, cited lines, open conflicts, then the byte budget.

`find` is the one entry point the recall operation calls (tests/test_layers.py holds it to that): it takes the
opened scopes and a checked query and returns the results in order; the operation answers and bumps heat.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..domain.answers import CollapsedResult, OpenConflict, RecallResult
from ..domain.text import clip
from ..index import conflict_pairs as conflict_table
from ..index import reads
from ..index import vectors as vector_table
from ..store.scopes import Opened
from .collapse import collapse_ranked
from .fusion import fuse
from .planner import DOCUMENTS, MEMORIES, Candidate, Filters, Plan, plan_and_fetch
from .rank import UNLIMITED, DeferredLines, Pool, SearchSettings, memory_result, rank, result_key
from .semantic import SemanticUnavailable
from .succession import current_first
from .threads import continue_best

__all__ = ["Found", "RecallQuery", "SearchSettings", "find", "fit_budget", "mark_open_conflicts", "memory_result"]


@dataclass(frozen=True)
class RecallQuery:
    """A checked recall: the query text, how many results, the mode, and the filters (None: any)."""

    text: str
    limit: int
    mode: str  # bm25, hybrid or auto
    type: str | None = None
    state: str | None = None
    entity: str | None = None  # as given: each scope's dictionary makes it canonical
    trust: str | None = None
    include_deprecated: bool = False
    budget: int | None = None  # bytes of cited results, or None
    as_of: str | None = None  # YYYY-MM-DD: only what the store held as current that day (no documents)
    today: str | None = None  # YYYY-MM-DD: without as_of, memories past their valid_until are left out


@dataclass
class Found:
    """What the search found, best first, and how."""

    results: list[RecallResult]
    plan: str  # the legs that ran, joined by "+" ("no terms" when none)
    mode: str  # what ran: bm25 or hybrid
    note: str = ""  # why hybrid did not run, or how many memories wait for a vector
    pending: int = 0  # memories without a vector yet (hybrid)
    collapsed: list[CollapsedResult] = field(default_factory=list)
    left_out: int = 0  # ranked results the budget left out


def find(settings: SearchSettings, opened: Sequence[Opened], q: RecallQuery) -> Found:
    """Search every opened scope (memories, and the indexed documents when no filter applies); rank all in
    one list. A provider failure in hybrid is never an error: the search falls back to bm25 and says why."""
    lines: DeferredLines = {}
    pools: list[Pool] = []
    filtered = bool(q.type or q.state or q.entity or q.trust or q.as_of)
    for o in opened:
        s = o.session
        filters = Filters(
            types=[q.type] if q.type else [],
            states=[q.state] if q.state else [],
            entity=s.dictionary.canonical(q.entity) if q.entity else None,
            include_deprecated=q.include_deprecated,
            trusts=[q.trust] if q.trust else [],
            as_of=q.as_of,
            unexpired_on=q.today if q.as_of is None and q.today and reads.any_validity_end(s.conn) else None,
        )
        plan = plan_and_fetch(s.conn, q.text, filters, want=q.limit, dictionary=s.dictionary, k=settings.ranking)
        pools.append(Pool(o.scope, s, MEMORIES, plan, filters))
        if s.sources and not filtered:
            plan = plan_and_fetch(s.conn, q.text, None, q.limit, s.dictionary, settings.ranking, corpus=DOCUMENTS)
            pools.append(Pool(o.scope, s, DOCUMENTS, plan))
    semantic = settings.semantic
    ran, note, pending, ranked = "bm25", "", 0, None
    if q.mode == "hybrid" or (q.mode == "auto" and semantic.config.auto_hybrid):
        if semantic.available():
            try:
                ranked, pending = _hybrid(settings, pools, q.text, q.limit * 3 + 10, lines)
                ran = "hybrid"
            except SemanticUnavailable as exc:
                note = f"hybrid unavailable ({exc}); answered with bm25"
        elif q.mode == "hybrid":
            note = f"hybrid unavailable ({semantic.why_unavailable()}); answered with bm25"
    if ranked is None:
        ranked = rank(settings, pools, UNLIMITED, lines)
    if pending:
        note = f"{pending} memories have no vector yet (a few are embedded per recall; memory_reindex: all)"
    ranked, succession = current_first(settings, pools, ranked, lines)
    cosine_min = semantic.config.collapse_cosine if ran == "hybrid" else 1.0
    results, collapsed = collapse_ranked(settings, pools, ranked, q.limit, cosine_min if cosine_min < 1.0 else None)
    succession.mark(results)
    results = continue_best(settings, pools, results, q.limit, lines)
    for r in results:
        if (locate := lines.get(result_key(r.scope, r.id))) is not None:
            r.line = locate()
    mark_open_conflicts(opened, results)
    ranked_count = len(results)
    if q.budget is not None:
        results = fit_budget(results, q.budget)
    legs = [leg for p in pools for leg in p.plan.legs] + (["cosine"] if ran == "hybrid" else [])
    return Found(
        results=results,
        plan="+".join(dict.fromkeys(legs)) or "no terms",
        mode=ran,
        note=note,
        pending=pending,
        collapsed=collapsed,
        left_out=ranked_count - len(results),
    )


def fit_budget(results: list[RecallResult], budget: int) -> list[RecallResult]:
    """The best results whose cited bytes fit in `budget`, in rank order, stopping at the first that does not
    fit (a later, shorter one never jumps ahead). The best result is always kept, its excerpt clipped to fit."""
    kept: list[RecallResult] = []
    used = 0
    for r in results:
        size = r.cited_bytes()
        if used + size > budget:
            if not kept:
                kept.append(_clipped(r, budget))
            break
        kept.append(r)
        used += size
    return kept


def _clipped(r: RecallResult, budget: int) -> RecallResult:
    """`r` with its excerpt cut (by characters, so never inside one) until its cited bytes fit, or to nothing."""
    excerpt = r.excerpt
    while excerpt and r.model_copy(update={"excerpt": excerpt}).cited_bytes() > budget:
        excerpt = clip(excerpt, max(1, len(excerpt) - max(1, len(excerpt) // 8))) if len(excerpt) > 1 else ""
    return r.model_copy(update={"excerpt": excerpt})


def mark_open_conflicts(opened: Sequence[Opened], results: Sequence[RecallResult]) -> None:
    """Each memory result learns the unresolved conflicts it is in (a pair lives in one scope's index)."""
    for o in opened:
        in_scope = {r.id: r for r in results if r.kind == "memory" and r.scope == o.scope}
        for pair, mem_id, other_id, other_title in conflict_table.open_pairs_touching(o.session.conn, list(in_scope)):
            in_scope[mem_id].conflicts.append(OpenConflict(pair_hash=pair, other_id=other_id, other_title=other_title))


def _hybrid(
    settings: SearchSettings, pools: list[Pool], query: str, want: int, lines: DeferredLines
) -> tuple[list[RecallResult], int]:
    """Keyword ranking and cosine ranking, fused by `fusion.fuse` (the best `want`); raises SemanticUnavailable.

    The query is embedded first and missing vectors are filled (at most `embed_per_recall` per store),
    so a provider failure is known before anything is changed. A memory only the cosine leg found is
    scored and cited like a keyword result (keyword score 0); `fused` orders the list.
    """
    semantic = settings.semantic
    cfg, name = semantic.config, semantic.name
    qvec = semantic.embed_query(query)
    mem_pools = [p for p in pools if p.corpus is MEMORIES]
    pending = 0
    for pool in mem_pools:
        conn = pool.session.conn
        if cfg.embed_per_recall:
            semantic.fill(conn, cfg.embed_per_recall)
        pending += vector_table.pending_count(conn, name)
    ranked = rank(settings, pools, UNLIMITED, lines)  # keyword candidates (memories and documents)
    kw_keys = ranked.keys[: cfg.depth]
    states = settings.ranking.state
    cos: list[tuple[float, float, Pool, int, str]] = []  # (order value, cosine, pool, rowid, memory id)
    for pool in mem_pools:
        where, params = pool.filters.sql() if pool.filters is not None else ("", [])
        # archived and deprecated order below active in the cosine leg too (trust is left to the keyword leg)
        for rowid, mem_id, c, w in vector_table.cosine_rank(
            pool.session.conn, name, qvec, where, params, lambda st: states.get(st, 1.0), cfg.depth
        ):
            cos.append((w, c, pool, rowid, mem_id))
    cos.sort(key=lambda x: (-x[0], x[4]))
    cos = cos[: cfg.depth]
    cos_of = {result_key(p.scope, i): c for _, c, p, _, i in cos}
    fused = fuse(
        list(zip(kw_keys, ranked.scores, strict=False)), [(result_key(p.scope, i), w) for w, _, p, _, i in cos], cfg
    )
    order = [k for k, _ in fused[:want]]
    fused_of = dict(fused[:want])
    # only the results that can be shown are built: keyword ones from the keyword ranking (where a memory
    # below its fusion depth keeps its keyword score), the rest for memories only the cosine leg found
    kw_at = {k: n for n, k in enumerate(ranked.keys)}
    by_key = {k: ranked[kw_at[k]] for k in order if k in kw_at}
    missing = {k for k in order if k not in by_key}
    if missing:
        extra = []
        for p in mem_pools:
            found = {
                rowid: Candidate(rowid) for _, _, q, rowid, i in cos if q is p and result_key(p.scope, i) in missing
            }
            if found:
                extra.append(Pool(p.scope, p.session, MEMORIES, Plan(p.plan.terms, p.plan.legs, found), p.filters))
        by_key.update((result_key(r.scope, r.id), r) for r in rank(settings, extra, UNLIMITED, lines))
    out = []
    for k in order:
        r = by_key[k]
        r.fused = round(fused_of[k], 6)
        r.cosine = round(cos_of[k], 4) if k in cos_of else None
        out.append(r)
    return out, pending
