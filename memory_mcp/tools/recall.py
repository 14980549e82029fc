"""memory_recall: plan, rank (keyword or hybrid), current versions first, collapse near-duplicates, answer."""

from __future__ import annotations

from collections.abc import Sequence

from ..canon import files as canon
from ..domain.errors import InputError
from ..domain.models import CollapsedResult, OpenConflict, RecallAnswer, RecallResult
from ..domain.text import clip, fold
from ..domain.textinput import check_text
from ..domain.vocabulary import RECALL_MODES, MemoryType, State, Trust
from ..index import conflicts as conflict_table
from ..index import db as ix
from ..index import reads
from ..index import vectors as vector_table
from ..search import semantic as sem
from ..search.planner import DOCUMENTS, MEMORIES, Candidate, Filters, Plan, plan_and_fetch
from ..store.scopes import Opened, merged_report
from ..store.session import StoreSession
from .arguments import check_date, enum_arg, word_arg
from .context import (
    current_handoff,
)
from .rank import DeferredLines, Pool, memory_result, rank, result_key
from .state import ServiceState
from .succession import current_first

# the smallest recall budget: room for a title and a citation (the best result is clipped to fit it)
MIN_BUDGET = 256


def recall(
    svc: ServiceState,
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
    budget: int | None = None,
    as_of: str | None = None,
) -> RecallAnswer:
    """Search every scope (or the one named) and the indexed documents; rank all in one list.

    mode: bm25 (keywords), hybrid (keywords fused with cosine, `semantic.fuse`), auto (hybrid when a provider is
    available and `semantic.auto_hybrid` says it helps, else bm25). A provider failure is never an error:
    the answer falls back to bm25 and says why in `semantic_note`.

    budget: bytes instead of (or beside) a count. Results are taken best first while their cited bytes
    (title, `path:line` and excerpt, `RecallResult.cited_bytes`) fit; the best result is always given,
    its excerpt clipped to fit. Without `limit`, a budget ranks up to `recall.max_limit` results.

    as_of: a day; only what the store held as current then (a filter, `reads.CURRENT_ON`), no documents.
    Without it, memories past their `valid_until` are left out.
    """
    mode = mode or "auto"
    if query is None:
        if type != MemoryType.HANDOFF.value:
            raise InputError("query: required, unless type=handoff (which returns the current handoff)")
        return _current_handoffs(svc, store, scope)
    word_arg(mode, RECALL_MODES, "mode")
    if budget is not None and budget < MIN_BUDGET:
        raise InputError(f"budget: {budget} bytes, at least {MIN_BUDGET}")
    if limit is None:
        limit = svc.limits.recall_default if budget is None else svc.limits.recall_max
    if not 1 <= limit <= svc.limits.recall_max:
        raise InputError(f"limit: {limit} is outside 1..{svc.limits.recall_max}")
    if entity is not None:
        check_text(entity, "entity")
    if len(query) > svc.limits.max_query:
        raise InputError(f"query: {len(query)} characters, at most {svc.limits.max_query}")
    mem_type = enum_arg(MemoryType, type, "type")
    mem_state = enum_arg(State, state, "state")
    mem_trust = enum_arg(Trust, trust, "trust")
    as_of = check_date(as_of, "as_of")
    today = svc.clock().astimezone().date().isoformat()  # validity days are local calendar days, like reviews
    lines: DeferredLines = {}
    with svc.scopes.open(scope, store) as opened:
        index = merged_report(opened)
        if not query.strip():
            return RecallAnswer(
                query=query,
                plan="empty query",
                results=[],
                index=index,
                semantic_available=svc.semantic.available(),
            )
        pools: list[Pool] = []
        for o in opened:
            s = o.session
            filters = Filters(
                types=[mem_type.value] if mem_type else [],
                states=[mem_state.value] if mem_state else [],
                entity=s.dictionary.canonical(entity) if entity else None,
                include_deprecated=include_deprecated,
                trusts=[mem_trust.value] if mem_trust else [],
                as_of=as_of,
                unexpired_on=today if as_of is None and reads.any_validity_end(s.conn) else None,
            )
            plan = plan_and_fetch(s.conn, query, filters, want=limit, dictionary=s.dictionary, k=svc.ranking)
            pools.append(Pool(o.scope, s, MEMORIES, plan, filters))
            if s.sources and not (mem_type or mem_state or entity or mem_trust or as_of):
                plan = plan_and_fetch(s.conn, query, None, limit, s.dictionary, svc.ranking, corpus=DOCUMENTS)
                pools.append(Pool(o.scope, s, DOCUMENTS, plan))
        ran, note, pending, ranked = "bm25", "", 0, None
        if mode == "hybrid" or (mode == "auto" and svc.semantic.config.auto_hybrid):
            if svc.semantic.available():
                try:
                    ranked, pending = _hybrid(svc, pools, query, limit * 3 + 10, lines)
                    ran = "hybrid"
                except sem.SemanticUnavailable as exc:
                    note = f"hybrid unavailable ({exc}); answered with bm25"
            elif mode == "hybrid":
                note = f"hybrid unavailable ({svc.semantic.why_unavailable()}); answered with bm25"
        if ranked is None:
            ranked = rank(svc, pools, sem.UNLIMITED, lines)
        if pending:
            note = f"{pending} memories have no vector yet (a few are embedded per recall; memory_reindex: all)"
        ranked, succession = current_first(svc, pools, ranked, lines)
        cosine_min = svc.semantic.config.collapse_cosine if ran == "hybrid" else 1.0
        results, collapsed = _collapse(svc, pools, ranked, limit, cosine_min if cosine_min < 1.0 else None)
        succession.mark(results)
        for r in results:
            if (locate := lines.get(result_key(r.scope, r.id))) is not None:
                r.line = locate()
        _mark_open_conflicts(opened, results)
        ranked_count = len(results)
        if budget is not None:
            results = fit_budget(results, budget)
        if touch:
            for o in opened:
                ids = [r.id for r in results if r.kind == "memory" and r.scope == o.scope]
                if ids:
                    ix.bump_heat(o.session.conn, ids, canon.iso_utc(svc.clock()))
        legs = [leg for p in pools for leg in p.plan.legs] + (["cosine"] if ran == "hybrid" else [])
        plan_text = "+".join(dict.fromkeys(legs)) or "no terms"
        return RecallAnswer(
            query=query,
            plan=plan_text,
            results=results,
            index=index,
            mode=ran,
            semantic_available=svc.semantic.available(),
            semantic_note=note,
            semantic_pending=pending,
            collapsed=collapsed,
            budget_bytes=budget,
            used_bytes=sum(r.cited_bytes() for r in results) if budget is not None else None,
            left_out=ranked_count - len(results),
            as_of=as_of,
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


def _mark_open_conflicts(opened: Sequence[Opened], results: Sequence[RecallResult]) -> None:
    """Each memory result learns the unresolved conflicts it is in (a pair lives in one scope's index)."""
    for o in opened:
        in_scope = {r.id: r for r in results if r.kind == "memory" and r.scope == o.scope}
        for pair, mem_id, other_id, other_title in conflict_table.open_pairs_touching(o.session.conn, list(in_scope)):
            in_scope[mem_id].conflicts.append(OpenConflict(pair_hash=pair, other_id=other_id, other_title=other_title))


def _current_handoffs(svc: ServiceState, store: str | None, scope: str | None) -> RecallAnswer:
    """recall(type=handoff) without a query: each scope's current handoff, newest first."""
    results = []
    with svc.scopes.open(scope, store) as opened:
        for o in opened:
            mem = current_handoff(o.session.conn)
            if mem is not None:  # not ranked: no score components
                results.append(memory_result(o.scope, mem, 1.0, None, None))
        results.sort(key=lambda r: r.updated, reverse=True)
        _mark_open_conflicts(opened, results)
        return RecallAnswer(
            query="",
            plan="current handoff",
            results=results,
            index=merged_report(opened),
            semantic_available=svc.semantic.available(),
        )


def _hybrid(
    svc: ServiceState, pools: list[Pool], query: str, want: int, lines: DeferredLines
) -> tuple[list[RecallResult], int]:
    """Keyword ranking and cosine ranking, fused by `semantic.fuse` (the best `want`); raises SemanticUnavailable.

    The query is embedded first and missing vectors are filled (at most `embed_per_recall` per store),
    so a provider failure is known before anything is changed. A memory only the cosine leg found is
    scored and cited like a keyword result (keyword score 0); `fused` orders the list.
    """
    cfg, name = svc.semantic.config, svc.semantic.name
    qvec = svc.semantic.embed_query(query)
    mem_pools = [p for p in pools if p.corpus is MEMORIES]
    pending = 0
    for pool in mem_pools:
        conn = pool.session.conn
        if cfg.embed_per_recall:
            svc.semantic.fill(conn, cfg.embed_per_recall)
        pending += vector_table.pending_count(conn, name)
    ranked = rank(svc, pools, sem.UNLIMITED, lines)  # keyword candidates (memories and documents)
    kw_keys = ranked.keys[: cfg.depth]
    states = svc.ranking.state
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
    fused = sem.fuse(
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
        by_key.update((result_key(r.scope, r.id), r) for r in rank(svc, extra, sem.UNLIMITED, lines))
    out = []
    for k in order:
        r = by_key[k]
        r.fused = round(fused_of[k], 6)
        r.cosine = round(cos_of[k], 4) if k in cos_of else None
        out.append(r)
    return out, pending


def _collapse(
    svc: ServiceState, pools: list[Pool], ranked: Sequence[RecallResult], limit: int, cosine_min: float | None
) -> tuple[list[RecallResult], list[CollapsedResult]]:
    """The first `limit` results once near-duplicate memories (same statement twice, across scopes or
    reworded) are dropped in favour of the better-ranked one. Document chunks are never collapsed.

    `cosine_min` (hybrid with `semantic.collapse_cosine` below 1): a cosine that high also counts as the same
    statement; None (the default in both modes): equal text or word overlap only, so a mode never merges
    results the other would keep."""
    if svc.collapse_jaccard is None:
        return list(ranked[:limit]), []
    sessions = {p.scope: p.session for p in pools if p.corpus is MEMORIES}
    window = limit + 5
    while True:
        head = ranked[:window]
        cands = _dup_candidates(svc, sessions, head, cosine_min is not None)
        done = sem.collapse(cands, svc.collapse_jaccard, cosine_min, want=limit)
        if len(done.kept) >= limit or window >= len(ranked):
            break
        window *= 2
    by_key = {result_key(r.scope, r.id): r for r in head}
    results = [by_key[k] for k in done.kept]
    collapsed = [
        CollapsedResult(kept_id=by_key[k].id, dropped_id=by_key[d].id, reason=why) for k, d, why in done.dropped
    ]
    return results, collapsed


def _dup_candidates(
    svc: ServiceState, sessions: dict[str, StoreSession], results: list[RecallResult], with_vectors: bool
) -> list[sem.DupCandidate]:
    texts: dict[tuple[str, str], tuple[str, str, str]] = {}
    for scope, s in sessions.items():
        ids = [r.id for r in results if r.kind == "memory" and r.scope == scope]
        texts.update(((scope, mem_id), text) for mem_id, text in reads.texts_by_id(s.conn, ids).items())
    vecs: dict[tuple[str, str], bytes] = {}
    if with_vectors:
        for scope, s in sessions.items():
            hashes = [t[2] for (sc, _), t in texts.items() if sc == scope]
            got = vector_table.vectors_for(s.conn, svc.semantic.name, hashes)
            for (sc, mid), t in texts.items():
                if sc == scope and t[2] in got:
                    vecs[(sc, mid)] = got[t[2]]
    out = []
    for r in results:
        key = result_key(r.scope, r.id)
        t = texts.get((r.scope, r.id)) if r.kind == "memory" else None
        if t is None:  # a document chunk (or a row gone meanwhile): unique, never collapsed
            out.append(sem.DupCandidate(key, "\x00" + key, frozenset()))
            continue
        blob = vecs.get((r.scope, r.id))
        vec = vector_table.unpack(blob) if blob is not None else None
        body = " ".join(fold(t[1]).split())
        out.append(
            sem.DupCandidate(key, t[2], sem.words(f"{t[0]}\n{t[1]}"), vec, body if len(body.split()) >= 4 else "")
        )
    return out
