"""memory_update: edit, supersede, set_state, link, resolve_conflict."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from ..canon import files as canon
from ..domain.errors import AlreadyDoneError, InputError, NotFoundError, StaleWriteError
from ..domain.fields import EDIT_FIELDS, EDIT_VALUES
from ..domain.lifecycle import check_editable, check_transition
from ..domain.memory import OptionalValues
from ..domain.models import UpdateAnswer
from ..domain.provenance import Origin
from ..domain.screen import memory_texts, quarantine_marker, screen
from ..domain.secrets import refuse_secrets
from ..domain.textinput import check_optional
from ..domain.vocabulary import PERSON_TRUSTS, RESOLUTIONS, UPDATE_OP_FIELDS, UPDATE_OPS, MemoryType, State, Trust
from ..index import db as ix
from ..index import reads
from ..store.scopes import Opened, locate, merged_report
from ..store.session import StoreSession
from .arguments import check_follows, check_values, enum_arg, trust_arg, word_arg
from .links import chain, link_entry, link_supersede
from .state import ServiceState


@dataclass(frozen=True)
class UpdateRequest:
    """The fields of one memory_update call; each op reads the ones UPDATE_OP_FIELDS gives it."""

    title: str | None = None
    body: str | None = None
    type: str | None = None
    trust: str | None = None
    entities: list[str] | None = None
    source: str | None = None
    values: OptionalValues = field(default_factory=OptionalValues)  # review_after, valid_from, ...
    state: str | None = None
    reason: str | None = None
    by: str | None = None
    other_id: str | None = None
    pair_hash: str | None = None
    resolution: str | None = None
    winner: str | None = None
    note: str | None = None
    expected_sha256: str | None = None

    def stray(self, op: str) -> list[str]:
        """The fields given that `op` does not take."""
        given = [f.name for f in dataclasses.fields(self) if f.name != "values" and getattr(self, f.name) is not None]
        return [name for name in [*given, *self.values.given()] if name not in UPDATE_OP_FIELDS[op]]


def update(
    svc: ServiceState,
    op: str,
    id: str | None = None,
    *,
    title: str | None = None,
    body: str | None = None,
    type: str | None = None,
    trust: str | None = None,
    entities: list[str] | None = None,
    source: str | None = None,
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
    values: OptionalValues | None = None,
    origin: Origin | None = None,
) -> UpdateAnswer:
    """Change a memory in whichever scope holds it (ids it refers to must be in the same scope). `origin`: the
    surface asking (only a person's may give `confirmed`; a tool's edit of a confirmed text lowers it)."""
    word_arg(op, UPDATE_OPS, "op")
    reason, note = check_optional(reason, "reason"), check_optional(note, "note")
    request = UpdateRequest(
        title=title, body=body, type=type, trust=trust, entities=entities, source=source,
        values=values or OptionalValues(), state=state, reason=reason, by=by, other_id=other_id,
        pair_hash=pair_hash, resolution=resolution, winner=winner, note=note, expected_sha256=expected_sha256,
    )  # fmt: skip
    stray = request.stray(op)
    if stray:
        takes = ", ".join(UPDATE_OP_FIELDS[op])
        raise InputError(f"{stray[0]}: op={op} does not take {', '.join(stray)} (it takes {takes})")
    if id is None and op != "resolve_conflict":
        raise InputError(f"id: op={op} needs `id`, the memory to change")
    with svc.scopes.open(scope, store) as opened:
        o, mem = locate(opened, id) if id is not None else _pair_holder(opened, pair_hash)
        id = mem.id
        s = o.session
        now = canon.now_iso()
        if op == "edit":
            changed, message = _edit(svc, s, mem, now, request, origin)
        elif op == "supersede":
            changed, message = _supersede(svc, s, mem, request.by, now)
        elif op == "set_state":
            changed, message = _set_state(svc, s, mem, request.state, request.reason, now)
        elif op == "link":
            changed, message = _link(svc, s, mem, request.other_id, now)
        else:
            changed, message = _resolve(svc, s, mem, request, now)
        s.write_files([p for _, p in changed])
        fresh = ix.get_memory(s.conn, mem_id=id)
        return UpdateAnswer(
            op=op,
            id=id,
            path=fresh.path if fresh else mem.path,
            state=fresh.state if fresh else mem.state,
            changed=[i for i, _ in changed],
            message=message,
            quarantine=fresh.quarantine if fresh else mem.quarantine,
            index=merged_report(opened),
        )


def _stays_local(s: StoreSession, mem: ix.IndexedMemory) -> bool:
    """The memory is private (`sync: local`): it never leaves this machine, so it may hold a secret."""
    meta = canon.read_frontmatter(s.store.memory_file(mem.path))
    return str(meta.get(canon.SYNC_FIELD) or "").strip() == canon.SYNC_LOCAL


def _edit(
    svc: ServiceState,
    s: StoreSession,
    mem: ix.IndexedMemory,
    now: str,
    request: UpdateRequest,
    origin: Origin | None = None,
) -> tuple[list[tuple[str, str]], str]:
    check_editable(State(mem.state))
    title, body, type, trust = request.title, request.body, request.type, request.trust
    entities, source = request.entities, request.source
    fields: dict[str, Any] = {}
    if type is not None:
        fields["type"] = enum_arg(MemoryType, type, "type").value
    if trust is not None:
        fields["trust"] = trust_arg(trust, origin).value
    elif mem.trust in PERSON_TRUSTS and (title is not None or body is not None) and not (origin and origin.by_person):
        # what a person confirmed is no longer what the file says once a tool rewrites it
        fields["trust"] = Trust.USER_STATED.value
    if entities is not None:
        fields["entities"] = s.dictionary.normalise(svc.limits.entities(entities))
    if source is not None:
        fields["source"] = svc.limits.source(source)
    fields.update(check_values(request.values, before=mem))
    check_follows(s.conn, fields, own_id=mem.id)
    new_title = svc.limits.title(title) if title is not None else None
    new_body = svc.limits.body(body) if body is not None else None
    if not fields and new_title is None and new_body is None:
        raise InputError(f"edit: op=edit needs at least one of title, body, {', '.join(EDIT_FIELDS)}")
    # every text that reaches the file, the optional values included (a text field may hold a credential)
    texts = {"title": new_title, "body": new_body, "source": fields.get("source"), "entities": fields.get("entities")}
    texts |= {n: v for n, v in fields.items() if n in EDIT_VALUES and isinstance(v, str)}
    if any(texts.values()) and not _stays_local(s, mem):
        refuse_secrets(texts)
    verdict = screen(
        memory_texts(new_title or "", new_body or "", fields.get("source"), entities and fields.get("entities"))
    )
    if verdict.invisible:
        raise InputError(verdict.refusal())
    if not verdict.clean and mem.quarantine is None:
        # the tool surface can put a memory in quarantine, never take one out
        fields["quarantine"] = quarantine_marker(verdict, now[:10])

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
        canon.rewrite(s.store.memory_file(mem.path), mutate, new_title, new_body, expected_sha=request.expected_sha256)
    except canon.CanonError as exc:
        raise StaleWriteError(f"expected_sha256: {exc}; nothing was written") from None
    held = "; put in quarantine: " + fields["quarantine"] if "quarantine" in fields else ""
    return [(mem.id, mem.path)], "edited: " + ", ".join(
        [
            *(f for f in fields if f != "quarantine"),
            *(["title"] if new_title else []),
            *(["body"] if new_body is not None else []),
        ]
    ) + held


def _pair_holder(opened: list[Opened], pair_hash: str | None) -> tuple[Opened, ix.IndexedMemory]:
    """resolve_conflict named by its pair alone: the memory whose file records the pair."""
    if not pair_hash:
        raise InputError("pair_hash: op=resolve_conflict needs `pair_hash` (or `id` with it)")
    for o in opened:
        row = reads.conflict_pair(o.session.conn, pair_hash)
        holder = ix.get_memory(o.session.conn, mem_id=row[2]) if row is not None else None
        if holder is not None:
            return o, holder
    raise NotFoundError(f"pair_hash: no conflict '{pair_hash}'")


def _named_memory(
    s: StoreSession, mem: ix.IndexedMemory, field: str, value: str | None, needs: str, itself: str
) -> ix.IndexedMemory:
    """The other memory an op names in `field` (supersede's `by`, link's `other_id`): given, found, not `mem`."""
    if not value:
        raise InputError(f"{field}: {needs}")
    other = ix.get_memory(s.conn, mem_id=value)
    if other is None:
        raise NotFoundError(f"{field}: no memory with id '{value}'")
    if other.id == mem.id:
        raise InputError(f"{field}: {itself}")
    return other


def _supersede(
    svc: ServiceState, s: StoreSession, old: ix.IndexedMemory, by: str | None, now: str
) -> tuple[list[tuple[str, str]], str]:
    new = _named_memory(s, old, "by", by, "op=supersede needs `by`, the id of the memory that replaces this one",
                        "a memory cannot supersede itself")  # fmt: skip
    for m in (old, new):
        check_editable(State(m.state))
    if old.id in {c.id for c in chain(s, new, "superseded_by")}:
        raise InputError(f"by: '{by}' is already superseded (directly or not) by '{old.id}': that would be a cycle")
    if by in old.superseded_by:
        raise InputError(f"by: '{old.id}' is already superseded by '{by}'")

    def add_link(meta: dict) -> None:
        canon.add_link(meta, "supersedes", old.id, link_entry(svc, old.id, old.path))
        meta["updated"] = now

    canon.rewrite(s.store.memory_file(new.path), add_link)
    link_supersede(svc, s, old, new.id, new.path, now)
    return [(new.id, new.path), (old.id, old.path)], f"{old.id} superseded by {new.id}; {old.id} archived"


def _set_state(
    svc: ServiceState, s: StoreSession, mem: ix.IndexedMemory, state: str | None, reason: str | None, now: str
) -> tuple[list[tuple[str, str]], str]:
    target = enum_arg(State, state, "state")
    if target is None:
        raise InputError("state: op=set_state needs `state`, the target state (active, archived, deprecated)")
    transition(s, mem, target, reason, now)
    return [(mem.id, mem.path)], f"{mem.state} → {target.value}"


def transition(s: StoreSession, mem: ix.IndexedMemory, target: State, reason: str | None, now: str) -> None:
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
    svc: ServiceState, s: StoreSession, mem: ix.IndexedMemory, other_id: str | None, now: str
) -> tuple[list[tuple[str, str]], str]:
    other = _named_memory(s, mem, "other_id", other_id, "op=link needs `other_id`, the id of the related memory",
                          "a memory cannot be linked to itself")  # fmt: skip
    changed = []
    for a, b in ((mem, other), (other, mem)):
        if b.id in a.related:
            continue

        def mutate(meta: dict, b: ix.IndexedMemory = b) -> None:
            canon.add_link(meta, "related", b.id, link_entry(svc, b.id, b.path))
            meta["updated"] = now

        canon.rewrite(s.store.memory_file(a.path), mutate)
        changed.append((a.id, a.path))
    if not changed:
        raise AlreadyDoneError(f"other_id: '{mem.id}' and '{other.id}' are already linked")
    return changed, f"{mem.id} and {other.id} linked as related"


def _resolve(
    svc: ServiceState,
    s: StoreSession,
    mem: ix.IndexedMemory,
    request: UpdateRequest,
    now: str,
) -> tuple[list[tuple[str, str]], str]:
    pair, resolution, winner, note = request.pair_hash, request.resolution, request.winner, request.note
    if not pair and not request.other_id:
        raise InputError(
            "pair_hash: op=resolve_conflict needs `pair_hash`, the conflict's (as remember or status give it), "
            "or `other_id`, the other memory of a pair remember listed"
        )
    if resolution is None:
        raise InputError("resolution: op=resolve_conflict needs `resolution`: keep_both, or supersede with `winner`")
    word_arg(resolution, RESOLUTIONS, "resolution")
    if request.other_id:
        other = _named_memory(s, mem, "other_id", request.other_id, "", "a memory is no conflict of itself")
        if pair and pair != ix.pair_hash(mem.id, other.id):
            raise InputError(f"pair_hash: '{pair}' is not the pair of '{mem.id}' and '{other.id}'")
        pair = ix.pair_hash(mem.id, other.id)
        if reads.conflict_pair(s.conn, pair) is None:
            return _settle_listed(svc, s, mem, other, request, now)
        winner = winner or mem.id  # named by id and other_id: id is the memory that stays
    row = reads.conflict_pair(s.conn, pair)
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
        changed, sup_message = _supersede(svc, s, loser_mem, winner, now)
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


def _settle_listed(
    svc: ServiceState, s: StoreSession, mem: ix.IndexedMemory, other: ix.IndexedMemory, request: UpdateRequest, now: str
) -> tuple[list[tuple[str, str]], str]:
    """A pair remember listed and did not write, settled: recorded as resolved in `mem`'s file (so the gate never
    lists it again), and with supersede the loser archived. The winner defaults to `mem` (the new memory the
    listing came with)."""
    resolution, winner = request.resolution, request.winner or mem.id
    changed: list[tuple[str, str]] = []
    message = f"{mem.id} and {other.id}: {'not a conflict' if resolution == 'keep_both' else resolution}"
    if resolution == "supersede":
        if winner not in (mem.id, other.id):
            raise InputError(f"winner: must be one of the pair ({mem.id}, {other.id})")
        loser = other if winner == mem.id else mem
        changed, sup_message = _supersede(svc, s, loser, winner, now)
        message += f" ({sup_message})"
    entry = {"with": other.id, "status": "resolved", "detected": now, "resolved": now}
    entry["resolution"] = resolution if resolution != "supersede" else f"supersede: {winner} wins"
    if request.note:
        entry["note"] = request.note.strip()

    def mutate(meta: dict) -> None:
        current = meta.get("conflicts")
        if isinstance(current, list):
            current.append(entry)
        else:
            meta["conflicts"] = [entry]

    canon.rewrite(s.store.memory_file(mem.path), mutate)
    if mem.id not in {i for i, _ in changed}:
        changed.append((mem.id, mem.path))
    return changed, message
