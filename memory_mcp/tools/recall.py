"""memory_recall: check the arguments, open the scopes, search (`search.recall.find`), bump heat, answer."""

from __future__ import annotations

from ..canon import files as canon
from ..domain.answers import RecallAnswer, RecallResult
from ..domain.errors import InputError
from ..domain.textinput import check_text
from ..domain.vocabulary import RECALL_MODES, MemoryType, State, Trust
from ..search.recall import RecallQuery, SearchSettings, find, mark_open_conflicts, memory_result
from ..store.scopes import Opened, merged_report
from .arguments import check_date, enum_arg, word_arg
from .state import ServiceState

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

    mode: bm25 (keywords), hybrid (keywords fused with cosine, `fusion.fuse`), auto (hybrid when a provider is
    available and `semantic.auto_hybrid` says it helps, else bm25). A provider failure is never an error:
    the answer falls back to bm25 and says why in `semantic_note`.

    budget: bytes instead of (or beside) a count. Results are taken best first while their cited bytes
    (title, `path:line` and excerpt, `RecallResult.cited_bytes`) fit; the best result is always given,
    its excerpt clipped to fit. Without `limit`, a budget ranks up to `recall.max_limit` results.

    as_of: a day; only what the store held as current then (a filter, `reads.CURRENT_ON`), no documents.
    Without it, memories past their `valid_until` are left out.

    With worker processes (`svc.workers`, `serve --http --workers N`) a recall that writes nothing but its
    heat runs in one of them, so that many clients' recalls use every core.
    """
    arguments = dict(locals())  # every argument as given, before anything below binds a name
    del arguments["svc"]
    if svc.workers is not None and not writes_index(svc, mode):
        return svc.workers.run("recall", arguments, here=lambda: _recall(svc, **arguments))
    return _recall(svc, **arguments)


def writes_index(svc: ServiceState, mode: str | None) -> bool:
    """Whether a recall in this mode may write the index beyond its heat: hybrid embeds what has no vector
    yet, so it holds the store lock throughout; a keyword recall reads a snapshot without it."""
    return mode != "bm25" and svc.semantic.available()


def _recall(
    svc: ServiceState,
    query: str | None,
    limit: int | None,
    type: str | None,
    state: str | None,
    entity: str | None,
    include_deprecated: bool,
    store: str | None,
    touch: bool,
    trust: str | None,
    scope: str | None,
    mode: str | None,
    budget: int | None,
    as_of: str | None,
) -> RecallAnswer:
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
    may_embed = writes_index(svc, mode)
    with (svc.scopes.open if may_embed else svc.scopes.reading)(scope, store) as opened:
        index = merged_report(opened)
        if not query.strip():
            return RecallAnswer(
                query=query,
                plan="empty query",
                results=[],
                index=index,
                semantic_available=svc.semantic.available(),
            )
        found = find(
            _search_settings(svc),
            opened,
            RecallQuery(
                text=query,
                limit=limit,
                mode=mode,
                type=mem_type.value if mem_type else None,
                state=mem_state.value if mem_state else None,
                entity=entity,
                trust=mem_trust.value if mem_trust else None,
                include_deprecated=include_deprecated,
                budget=budget,
                as_of=as_of,
                today=today,
            ),
        )
        if touch:  # written by a later call of the session (`session.RecallCounts`)
            now = canon.iso_utc(svc.clock())
            for o, ids in _recalled(opened, found.results):
                o.session.recalls.add(ids, now)
    return RecallAnswer(
        query=query,
        plan=found.plan,
        results=found.results,
        index=index,
        mode=found.mode,
        semantic_available=svc.semantic.available(),
        semantic_note=found.note,
        semantic_pending=found.pending,
        collapsed=found.collapsed,
        budget_bytes=budget,
        used_bytes=sum(r.cited_bytes() for r in found.results) if budget is not None else None,
        left_out=found.left_out,
        as_of=as_of,
    )


def _recalled(opened: list[Opened], results: list[RecallResult]) -> list[tuple[Opened, list[str]]]:
    """Each scope with the ids of its memories among the results (those whose heat a recall counts)."""
    out = []
    for o in opened:
        ids = [r.id for r in results if r.kind == "memory" and r.scope == o.scope]
        if ids:
            out.append((o, ids))
    return out


def _search_settings(svc: ServiceState) -> SearchSettings:
    """What the search reads of the service (its clock, ranking constants, project root, embedder, collapse)."""
    return SearchSettings(svc.clock, svc.ranking, svc.scopes.project_root, svc.semantic, svc.collapse_jaccard)


def _current_handoffs(svc: ServiceState, store: str | None, scope: str | None) -> RecallAnswer:
    """recall(type=handoff) without a query: each scope's current handoff, newest first."""
    from .context import current_handoff  # the context's module (and its arrivals) only for this form of recall

    results = []
    with svc.scopes.open(scope, store) as opened:
        for o in opened:
            mem = current_handoff(o.session.conn)
            if mem is not None:  # not ranked: no score components
                results.append(memory_result(o.scope, mem, 1.0, None, None))
        results.sort(key=lambda r: r.updated, reverse=True)
        mark_open_conflicts(opened, results)
        return RecallAnswer(
            query="",
            plan="current handoff",
            results=results,
            index=merged_report(opened),
            semantic_available=svc.semantic.available(),
        )
