"""Links between memories as written in their files (`supersedes`, `related`) and supersede chains."""

from __future__ import annotations

from ..canon import files as canon
from ..domain.models import ChainLink
from ..domain.vocabulary import State
from ..index import db as ix
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
        out.append(ChainLink(id=other.id, title=other.title, state=other.state, path=other.path))
        frontier.extend(getattr(other, direction))
    return out
