"""Links between memories as written in their files (`supersedes`, `related`) and supersede chains."""

from __future__ import annotations

from ..canon import files as canon
from ..domain.models import ChainLink
from ..domain.vocabulary import State
from ..index import db as ix
from ..index import reads
from ..store.session import StoreSession
from .state import ServiceState


def link_entry(svc: ServiceState, mem_id: str, path: str) -> str:
    """A link to this memory as the files write it (`files.obsidian_links`)."""
    return canon.link_entry(mem_id, path, svc.obsidian_links)


def link_supersede(
    svc: ServiceState, s: StoreSession, old: ix.IndexedMemory, new_id: str, new_path: str, now: str
) -> None:
    def mutate(meta: dict) -> None:
        canon.add_link(meta, "superseded_by", new_id, link_entry(svc, new_id, new_path))
        if meta.get("state", "active") == State.ACTIVE.value:
            meta["state"] = State.ARCHIVED.value
        if not meta.get("superseded_at"):  # when it stopped being current: the first supersede
            meta["superseded_at"] = now
        meta["updated"] = now

    canon.rewrite(s.store.memory_file(old.path), mutate)


def chain(s: StoreSession, mem: ix.IndexedMemory, direction: str) -> list[ChainLink]:
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
        out.append(chain_link(s, other))
        frontier.extend(getattr(other, direction))
    return out


def chain_link(s: StoreSession, mem: ix.IndexedMemory) -> ChainLink:
    """One memory of a supersede chain with its dates: when it was written and when it stopped being current."""
    return ChainLink(
        id=mem.id,
        title=mem.title,
        state=mem.state,
        path=mem.path,
        created=mem.created,
        superseded_at=reads.superseded_at(s.conn, mem.id),
    )
