"""memory_remember: write a new memory file, after the conflict gate and the duplicate check."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ulid import ULID

from ..canon import files as canon
from ..domain.errors import InputError, NotFoundError
from ..domain.memory import OptionalValues
from ..domain.models import RememberAnswer
from ..domain.provenance import Origin
from ..domain.screen import memory_texts, quarantine_marker, screen
from ..domain.secrets import refuse_secrets
from ..domain.vocabulary import MemoryType, State
from ..index import db as ix
from ..index import reads
from ..search.conflict_candidates import semantic_nearest
from ..search.conflicts import find_neighbours
from ..store.paths import Store
from ..store.session import index_report
from .arguments import check_follows, check_values, enum_arg, trust_arg
from .links import link_entry, link_supersede
from .state import ServiceState


def remember(
    svc: ServiceState,
    title: str,
    body: str,
    type: str = "fact",
    trust: str = "agent-inferred",
    entities: list[str] | None = None,
    source: str | None = None,
    supersedes: list[str] | None = None,
    store: str | None = None,
    scope: str | None = None,
    private: bool = False,
    values: OptionalValues | None = None,
    origin: Origin | None = None,
) -> RememberAnswer:
    """`origin`: the surface making the memory (the edge says; None writes none: "origin unknown")."""
    title, body = svc.limits.title(title), svc.limits.body(body)
    mem_type = enum_arg(MemoryType, type, "type")
    mem_trust = trust_arg(trust, origin)
    entities, source = svc.limits.entities(entities), svc.limits.source(source)
    values_set = check_values(values)
    supersedes = list(dict.fromkeys(supersedes or []))
    if not private:  # a private memory (`sync: local`) never leaves this machine: it may hold anything
        refuse_secrets({"title": title, "body": body, "source": source, "entities": entities, **values_set})
    verdict = screen(memory_texts(title, body, source, entities))
    if verdict.invisible:
        raise InputError(verdict.refusal())
    if (supersedes or values_set.get("follows")) and svc.missing_stores(scope, store, home=True):
        # before the new store is laid out: a link to a memory of a store that does not exist yet is an error
        name, first = ("supersedes", supersedes[0]) if supersedes else ("follows", values_set["follows"])
        raise NotFoundError(f"{name}: no memory with id '{first}' (the store has no memories yet)")
    s = svc.scopes.session(scope, store, create=True)
    with s.transaction() as report:
        conn = s.conn
        check_follows(conn, values_set)
        existing = ix.find_by_norm_hash(conn, canon.norm_hash(title, body))
        if existing is not None:
            return RememberAnswer(
                id=existing.id,
                scope=s.scope,
                path=existing.path,
                created=False,
                deduplicated_state=existing.state,
                index=index_report(s, report),
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
            for handoff_id in reads.active_handoff_ids(conn):
                if handoff_id not in supersedes:
                    supersedes.append(handoff_id)
                    olds.append(ix.get_memory(conn, mem_id=handoff_id))
                    replaced_handoff.append(handoff_id)
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
            near_text=svc.limits.near_text_similarity,
            max_conflicts=svc.limits.max_conflicts,
            max_related=svc.limits.max_related,
            embed=svc.semantic.embed if svc.semantic.available() else None,
            nearest=semantic_nearest(conn, svc.semantic) if svc.semantic.available() else None,
        )
        handoff = mem_type is MemoryType.HANDOFF
        neighbours = [n for n in found.conflicts if n.id not in supersedes and not handoff]
        listed = [n for n in found.listed if n.id not in supersedes and not handoff]
        fields: dict[str, Any] = {
            "id": new_id,
            "type": mem_type.value,
            "state": State.ACTIVE.value,
            "trust": mem_trust.value,
            "entities": entities,
            "source": source or None,
            "origin": origin.text if origin is not None else None,
            "created": now,
            "updated": now,
            **values_set,
            "supersedes": [link_entry(svc, o.id, o.path) for o in olds],
            "superseded_by": [],
        }
        if private:
            fields[canon.SYNC_FIELD] = canon.SYNC_LOCAL
        quarantine = None if verdict.clean else quarantine_marker(verdict, now[:10])
        if quarantine:
            fields["quarantine"] = quarantine
        if neighbours:
            fields["conflicts"] = [{"with": n.id, "status": "open", "detected": now} for n in neighbours]
        path = new_path(s.store, title, new_id)
        canon.atomic_write(path, canon.render_new(fields, title, body).encode("utf-8"))
        rel = s.store.relative(path)
        changed = [rel]
        for old in olds:
            link_supersede(svc, s, old, new_id, rel, now)
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
            listed=listed,
            quarantine=quarantine,
            index=index_report(s, report),
        )


def new_path(store: Store, title: str, mem_id: str) -> Path:
    base = f"{canon.slugify(title)}-{mem_id[-6:].lower()}"
    name, n = f"{base}.md", 2
    while os.path.lexists(store.memories_dir / name):
        name, n = f"{base}-{n}.md", n + 1
    return store.memory_file(f"memories/{name}")
