"""memory_read: a memory or an indexed document by path, with its chain and conflict history."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..canon import files as canon
from ..domain import provenance
from ..domain.errors import InputError, NotFoundError
from ..domain.models import (
    ConflictHistoryEntry,
    ReadAnswer,
)
from ..index import db as ix
from ..index import reads
from ..store.documents import (
    display_path,
    indexed_document,
)
from ..store.scopes import Opened, locate, merged_report
from ..store.session import StoreSession
from .links import chain
from .state import ServiceState


def read(
    svc: ServiceState,
    id: str | None = None,
    path: str | None = None,
    from_line: int | None = None,
    to_line: int | None = None,
    store: str | None = None,
    scope: str | None = None,
) -> ReadAnswer:
    """A memory by id or store-relative path, or a line range of an indexed document (nothing else)."""
    if (id is None) == (path is None):
        raise InputError("id/path: give exactly one of id or path")
    if path is not None:
        path, cited_line = split_citation(path)
        from_line = cited_line if from_line is None else from_line
    with svc.scopes.open(scope, store) as opened:
        index = merged_report(opened)
        label = None
        if id is not None:
            o, mem = locate(opened, id)
            full, rel = o.session.store.memory_file(mem.path), mem.path
        elif _is_memory_path(path):
            o, full, rel = _memory_file(opened, path)
            mem = ix.get_memory(o.session.conn, path=rel)
        else:
            o, full, label = _document_file(svc, opened, path)
            rel, mem = display_path(full, svc.scopes.project_root), None
        data = canon.read_bytes(full)
        try:
            text = canon.decode(data)
        except canon.CanonError as exc:
            raise InputError(f"path: '{rel}' cannot be read as text: {exc}") from None
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        start, end = svc.limits.line_range(from_line, to_line, len(lines))
        frontmatter: dict[str, Any] = {}
        if label is None:
            try:
                frontmatter = canon.read_frontmatter(full)
            except canon.CanonError:
                pass
        answer = ReadAnswer(
            id=mem.id if mem else None,
            scope=o.scope,
            kind="memory" if label is None else "document",
            label=label,
            path=rel,
            sha256=canon.sha256_bytes(data),
            text="\n".join(lines[start - 1 : end]),
            from_line=start,
            to_line=end,
            total_lines=len(lines),
            frontmatter=frontmatter,
            index=index,
        )
        if mem is not None:
            answer.trust, answer.origin = mem.trust, provenance.shown(mem.origin)
            answer.superseded_at = reads.superseded_at(o.session.conn, mem.id)
            answer.supersedes_chain = chain(o.session, mem, "supersedes")
            answer.superseded_by_chain = chain(o.session, mem, "superseded_by")
            answer.conflicts = _conflict_history(o.session, mem.id)
            answer.quarantine = mem.quarantine
        return answer


_CITATION = re.compile(r"^(.+):([1-9][0-9]{0,8})$")


def split_citation(path: str) -> tuple[str, int | None]:
    """`memories/x.md:14` (a `path:line` citation as recall prints it) → (`memories/x.md`, 14); a plain
    path → (path, None)."""
    match = _CITATION.match(path)
    return (match.group(1), int(match.group(2))) if match else (path, None)


def _memory_file(opened: list[Opened], path: str) -> tuple[Opened, Path, str]:
    for o in opened:
        full = o.session.store.resolve_inside(path)  # refuses escapes before anything is read
        rel = o.session.store.relative(full)
        if not rel.startswith("memories/") or not rel.endswith(".md"):
            raise InputError(f"path: '{path}' is not a memory file (memories/*.md)")
        full = o.session.store.memory_file(rel)
        if full.is_file():
            return o, full, rel
    raise NotFoundError(f"path: no file at '{path}'")


def _document_file(svc: ServiceState, opened: list[Opened], path: str) -> tuple[Opened, Path, str]:
    home = next((o for o in opened if o.session.sources), None)
    candidate = Path(path)
    if not candidate.is_absolute() and svc.scopes.project_root is not None:
        candidate = svc.scopes.project_root / candidate
    label = None
    if home is not None and candidate.is_absolute():
        try:
            label = indexed_document(home.session.conn, candidate.resolve(strict=True))
        except (OSError, RuntimeError):
            label = None
    if home is None or label is None:
        opened[0].session.store.resolve_inside(path)  # the precise refusal for escapes and absolute paths
        raise InputError(f"path: '{path}' is not a memory file (memories/*.md) and not an indexed document")
    return home, candidate.resolve(), label


def _conflict_history(s: StoreSession, mem_id: str) -> list[ConflictHistoryEntry]:
    rows = reads.conflict_history(s.conn, mem_id)
    return [
        ConflictHistoryEntry(
            pair_hash=r[0],
            other_id=r[2] if r[1] == mem_id else r[1],
            other_title=r[8],
            status=r[3],
            detected=r[4],
            resolution=r[5],
            resolved=r[6],
            note=r[7],
        )
        for r in rows
    ]


def _is_memory_path(path: str) -> bool:
    return Path(path).parts[:1] == ("memories",)
