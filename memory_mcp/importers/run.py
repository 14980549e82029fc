"""Plan and apply an import through the service: dedupe, dry run, remember, links, conflicts, problems.

Dedupe key: remember's own duplicate check, the sha256 of the normalised title and body (see
tools/known.py). It is derived from the memory file itself, so it survives an index rebuild, and a
memory that was archived or deprecated since still counts as imported (nothing retracted comes back).
An input item that fails a check is skipped whole before anything is written; each memory is written
by one remember call (its own atomic file write), so an interrupted import leaves whole memories only,
and running it again creates just the rest.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from pydantic import BaseModel, Field

from ..domain.errors import AlreadyDoneError, InputError, MemoryMcpError
from ..domain.models import ProgressFn, stage_reporter
from ..domain.provenance import import_origin
from ..domain.text import clip
from ..tools.service import MemoryService
from . import FORMATS, parser
from .records import IMPORT_TYPES, Draft, Link

SAMPLE = 5
TRUST = "imported"


class ImportedMemory(BaseModel):
    title: str
    type: str
    source: str
    entities: list[str]
    id: str | None = Field(default=None, description="Set once written (or for the memory already holding it).")
    path: str | None = None


class ImportConflict(BaseModel):
    """A pair the conflict gate recorded while importing: judgement material, nothing was replaced."""

    id: str
    title: str
    other_id: str
    other_title: str
    pair_hash: str
    reasons: list[str]


class ImportProblem(BaseModel):
    where: str = Field(description="The file, `file:line` or `file item N` that was skipped.")
    reason: str


class ImportAnswer(BaseModel):
    format: str
    path: str
    dry_run: bool
    scope: str | None = None
    new_store: str | None = Field(default=None, description="The store this import creates (or would create).")
    to_create: int = Field(description="Memories created (dry run: that would be created).")
    by_type: dict[str, int]
    already_present: int = Field(description="Items whose text a memory already holds (any state): not written.")
    repeated_in_input: int = Field(description="Items that repeat an earlier item's text: written once.")
    links: int = Field(description="`related` links written (dry run: to write at most).")
    links_present: int = 0
    sample: list[ImportedMemory] = Field(description="The first memories created (or that would be).")
    created: list[ImportedMemory] = Field(default_factory=list)
    conflicts: list[ImportConflict] = Field(default_factory=list)
    problems: list[ImportProblem] = Field(default_factory=list)
    dropped: list[str] = Field(default_factory=list, description="What the format holds that no memory keeps.")


@dataclass
class ImportPlan:
    format: str
    path: Path
    scope: str | None
    new: list[Draft] = field(default_factory=list)
    present: dict[str, str] = field(default_factory=dict)  # key -> id of the memory already holding it
    same_as: dict[str, str] = field(default_factory=dict)  # key -> key of the earlier item with the same text
    repeated: int = 0
    links: list[Link] = field(default_factory=list)
    problems: list[ImportProblem] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    new_store: str | None = None


def plan_import(service: MemoryService, fmt: str, path: Path, scope: str | None = None) -> ImportPlan:
    """Parse `path` as `fmt` and sort its items into new, already present and repeated; nothing is written."""
    if fmt not in FORMATS:
        raise InputError(f"format: {fmt!r} is not one of {', '.join(FORMATS)}")
    if not path.exists():
        raise InputError(f"path: '{path}' does not exist")
    parsed = parser(fmt)(path)
    plan = ImportPlan(fmt, path, scope, links=parsed.links, dropped=parsed.dropped)
    plan.problems = [ImportProblem(where=p.where, reason=p.reason) for p in parsed.problems]
    drafts = []
    for n, draft in enumerate(parsed.drafts):
        checked = _checked(service, draft, n)
        if isinstance(checked, str):
            plan.problems.append(ImportProblem(where=draft.source, reason=checked))
        else:
            drafts.append(checked)
    known = service.known([(d.title, d.body) for d in drafts], scope=scope)
    first_with: dict[str, str] = {}
    for draft, k in zip(drafts, known, strict=True):
        if k.norm_hash in first_with:
            plan.same_as[draft.key] = first_with[k.norm_hash]
            plan.repeated += 1
        elif k.existing_id is not None:
            plan.present[draft.key] = k.existing_id
            first_with[k.norm_hash] = draft.key
        else:
            plan.new.append(draft)
            first_with[k.norm_hash] = draft.key
    missing = service.missing_stores(scope, home=True)
    plan.new_store = str(missing[0].root) if missing and plan.new else None
    return plan


def _checked(service: MemoryService, draft: Draft, n: int) -> Draft | str:
    """The draft within the argument limits (title, source and entities clipped or dropped; a body too long
    is a problem), with a key of its own; or the reason it cannot be imported."""
    limits = service.limits
    if draft.type not in IMPORT_TYPES:
        return f"type {draft.type!r} is not one of {', '.join(IMPORT_TYPES)}"
    title = clip(" ".join(draft.title.split()), limits.max_title)
    if not title:
        return "no title"
    try:
        body = limits.body(draft.body)
    except InputError as exc:
        return str(exc)
    entities = [e.strip() for e in draft.entities if e.strip() and len(e) <= limits.max_entity_len and "\n" not in e]
    source = clip(" ".join(draft.source.split()), limits.max_source)
    key = draft.key or f"#{n}"
    return replace(
        draft, title=title, body=body, entities=tuple(entities[: limits.max_entities]), source=source, key=key
    )


def apply_import(service: MemoryService, plan: ImportPlan, progress: ProgressFn | None = None) -> ImportAnswer:
    """Remember every new draft (trust imported), then write the links; report conflicts and problems."""
    ids = dict(plan.present)
    created: list[ImportedMemory] = []
    conflicts: list[ImportConflict] = []
    problems = list(plan.problems)
    scope = plan.scope
    report = stage_reporter(progress, "import", scope or "home")
    origin = import_origin(plan.format, plan.path.name)
    total = len(plan.new)
    report(0, total)
    for done, d in enumerate(plan.new, 1):
        try:
            answer = service.remember(
                d.title, d.body, d.type, TRUST, list(d.entities), d.source, scope=scope, origin=origin
            )
        except InputError as exc:  # checked beforehand; kept so one odd item never stops the rest
            problems.append(ImportProblem(where=d.source, reason=str(exc)))
            continue
        scope = scope or answer.scope
        ids[d.key] = answer.id
        if answer.created:
            created.append(_imported(d, answer.id, answer.path))
        conflicts += [
            ImportConflict(id=answer.id, title=d.title, other_id=c.id, other_title=c.title, pair_hash=c.pair_hash,
                           reasons=c.reasons)
            for c in answer.conflicts
        ]  # fmt: skip
        report(done, total)
    links = links_present = 0
    for link in plan.links:
        a, b = ids.get(plan.same_as.get(link.a, link.a)), ids.get(plan.same_as.get(link.b, link.b))
        if a is None or b is None or a == b:
            continue
        try:
            service.update("link", a, other_id=b, scope=scope)
            links += 1
        except AlreadyDoneError:
            links_present += 1
        except MemoryMcpError as exc:
            problems.append(ImportProblem(where=f"link {link.why}: {a} <> {b}", reason=str(exc)))
    return _answer(plan, False, scope, created, conflicts, problems, links, links_present)


def dry_run(plan: ImportPlan) -> ImportAnswer:
    """What apply_import would do, as its answer (links: those whose two ends will exist)."""
    keys = set(plan.present) | {d.key for d in plan.new} | set(plan.same_as)
    links = sum(1 for link in plan.links if link.a in keys and link.b in keys)
    return _answer(plan, True, plan.scope, [_imported(d) for d in plan.new], [], plan.problems, links, 0)


def _answer(
    plan: ImportPlan,
    dry: bool,
    scope: str | None,
    created: list[ImportedMemory],
    conflicts: list[ImportConflict],
    problems: list[ImportProblem],
    links: int,
    links_present: int,
) -> ImportAnswer:
    return ImportAnswer(
        format=plan.format,
        path=str(plan.path),
        dry_run=dry,
        scope=scope,
        new_store=plan.new_store,
        to_create=len(created),
        by_type=dict(Counter(m.type for m in created).most_common()),
        already_present=len(plan.present),
        repeated_in_input=plan.repeated,
        links=links,
        links_present=links_present,
        sample=created[:SAMPLE],
        created=[] if dry else created,
        conflicts=conflicts,
        problems=problems,
        dropped=plan.dropped,
    )


def _imported(d: Draft, mem_id: str | None = None, path: str | None = None) -> ImportedMemory:
    return ImportedMemory(title=d.title, type=d.type, source=d.source, entities=list(d.entities), id=mem_id, path=path)
