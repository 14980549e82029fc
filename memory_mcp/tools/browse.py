"""The browser view's listing, the editable form of one memory, and the stores behind the view."""

from __future__ import annotations

from pathlib import Path

from ..canon import files as canon
from ..domain import provenance
from ..domain.errors import InputError
from ..domain.fields import EDIT_VALUES
from ..domain.models import BrowseAnswer, EditableMemory, MemoryItem, StoreInfo
from ..domain.vocabulary import MemoryType, State, Trust
from ..index import db as ix
from ..index import reads
from ..search.planner import Filters
from ..store.paths import STORE_NAME
from ..store.scopes import GLOBAL, LOCAL, locate
from ..store.session import index_report
from .arguments import enum_arg
from .limits import BROWSE_LIMIT
from .state import ServiceState


def browse(
    svc: ServiceState,
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
    mem_state = enum_arg(State, state, "state")
    mem_type = enum_arg(MemoryType, type, "type")
    mem_trust = enum_arg(Trust, trust, "trust")
    s = svc.scopes.session(scope, store)
    with s.transaction() as report:
        others = Filters(
            types=[mem_type.value] if mem_type else [],
            trusts=[mem_trust.value] if mem_trust else [],
            entity=s.dictionary.canonical(entity) if entity else None,
            include_deprecated=True,
        )
        where, params = others.sql()
        counts = reads.state_counts(s.conn, where, params)
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
                origin=provenance.shown(m.origin),
                entities=m.entities,
                created=m.created,
                updated=m.updated,
                quarantine=m.quarantine,
            )
            for m in ix.filtered_memories(s.conn, where, params, limit, offset)
        ]
        return BrowseAnswer(
            items=items,
            total=counts.get(mem_state.value, 0) if mem_state else sum(counts.values()),
            state_counts=counts,
            entities=reads.entity_names(s.conn),
            index=index_report(s, report),
        )


def editable(svc: ServiceState, id: str, store: str | None = None, scope: str | None = None) -> EditableMemory:
    """A memory's editable fields parsed from the file bytes, with their sha256 (for a safe edit)."""
    with svc.scopes.open(scope, store) as opened:
        o, mem = locate(opened, id)
        data = canon.read_bytes(o.session.store.memory_file(mem.path))
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
            **{name: getattr(parsed, name) for name in EDIT_VALUES},
        )


def stores(svc: ServiceState) -> list[StoreInfo]:
    """Every place a call can reach: the local scope (when bound), the global store, and the named
    sibling stores that already exist next to it (global scope, `store=NAME`)."""
    sc = svc.scopes

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
