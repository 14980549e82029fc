"""Indexed documents: read-only notes and READMEs searched beside memories, cited by `path:line`.

Sources come from settings (`documents.sources`). They are reconciled in the same pass as the canon —
stat gate → sha256 → re-chunk only files that changed — and chunked by `#`/`##`/`###` headings (or about
`chunk_chars` characters where there are none), each chunk keeping its real line range. The server never
writes a document.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import sqlite3
import stat
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..canon import files as canon
from ..config import DocumentSource
from ..domain.answers import DocumentsReport, SkippedDocument, SourceStatus
from ..domain.memory import first_paragraph
from ..domain.text import Term, fold
from ..index import document_tables as doc_table

_HEADING = re.compile(r"^#{1,3}\s+(\S.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
# A document ranks like imported knowledge: below what the person stated themselves.
DOCUMENT_TRUST = "imported"


@dataclass
class Chunk:
    heading: str
    start_line: int
    end_line: int
    text: str


def chunk_text(text: str, fallback_title: str, chunk_chars: int = 1200) -> list[Chunk]:
    """Sections at `#`..`###` headings (not inside code fences); long sections split at blank lines."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    sections: list[tuple[str, int, int]] = []  # heading, first index, last index (inclusive)
    heading, start, in_fence = fallback_title, 0, False
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            in_fence = not in_fence
        match = None if in_fence else _HEADING.match(line)
        if match and i > start:
            sections.append((heading, start, i - 1))
            start = i
        if match:
            heading = match.group(1)
    if lines:
        sections.append((heading, start, len(lines) - 1))
    chunks: list[Chunk] = []
    for title, first, last in sections:
        chunks.extend(_split_section(lines, title, first, last, chunk_chars))
    return [c for c in chunks if c.text.strip()]


def _split_section(lines: list[str], title: str, first: int, last: int, limit: int) -> list[Chunk]:
    out: list[Chunk] = []
    piece_start, size = first, 0
    for i in range(first, last + 1):
        size += len(lines[i]) + 1
        at_break = i == last or not lines[i].strip() or size >= 2 * limit
        if size >= limit and at_break:
            out.append(Chunk(title, piece_start + 1, i + 1, "\n".join(lines[piece_start : i + 1])))
            piece_start, size = i + 1, 0
    if piece_start <= last:
        out.append(Chunk(title, piece_start + 1, last + 1, "\n".join(lines[piece_start : last + 1])))
    return out


def _ignored(rel: str, patterns: Sequence[str]) -> bool:
    return _ignore_matcher(tuple(patterns))(rel)


@functools.lru_cache(maxsize=64)
def _ignore_matcher(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    """One compiled test for a source's ignore patterns (this runs for every file on every call)."""
    if not patterns:
        return lambda rel: False
    # fnmatch semantics: `*` also crosses `/`; a pattern matches the path or the path as a directory
    match = re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns)).match
    # "dir/**" also ignores the directory itself
    dirs = {p[:-3] for p in patterns if p.endswith("/**")}
    prefixes = tuple(p[:-2] for p in patterns if p.endswith("/**"))

    def ignored(rel: str) -> bool:
        return bool(match(rel) or match(rel + "/") or rel in dirs or rel.startswith(prefixes))

    return ignored


def scan_source(source: DocumentSource) -> dict[str, tuple[int, int]]:
    """Absolute path → (mtime_ns, size) for every candidate file of a source; one stat each, no reads."""
    out: dict[str, tuple[int, int]] = {}
    # real paths: memory_read resolves the path it is given, and must find the same string in doc_files
    # (a project bound through a symlink, a source directory that is a symlink)
    root = Path(os.path.realpath(source.path))
    if source.within is not None:
        # a project's source checked at load time may have been swapped for a symlink since
        real_within = Path(os.path.realpath(source.within))
        if root != real_within and real_within not in root.parents:
            return out
    if not root.is_dir():
        return out
    exts = tuple(e.lower() for e in source.extensions)
    for folder, dirs, files in os.walk(root, followlinks=False):
        rel_folder = os.path.relpath(folder, root)
        rel_folder = "" if rel_folder == "." else rel_folder.replace(os.sep, "/") + "/"
        dirs[:] = [d for d in dirs if not d.startswith(".") and not _ignored(rel_folder + d, source.ignore)]
        for name in files:
            if not name.lower().endswith(exts) or _ignored(rel_folder + name, source.ignore):
                continue
            full = os.path.join(folder, name)
            try:
                st = os.stat(full, follow_symlinks=False)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):  # a symlink (not followed), a fifo, a socket
                continue
            out[full] = (st.st_mtime_ns, st.st_size)
    return out


def reconcile_documents(
    conn: sqlite3.Connection, sources: Sequence[DocumentSource], chunk_chars: int
) -> DocumentsReport:
    """Runs inside the caller's transaction (the home store's lock is held)."""
    started = time.perf_counter()
    report = DocumentsReport()
    known = doc_table.doc_file_rows(conn)
    seen: dict[str, tuple[str, int, int, int]] = {}
    for source in sources:
        for path, (mtime, size) in scan_source(source).items():
            seen.setdefault(path, (source.label, mtime, size, source.max_file_bytes))
    report.scanned = len(seen)
    for path in sorted(known.keys() - seen.keys()):
        doc_table.drop_doc_file(conn, path)
        report.removed += 1
    for path in sorted(seen):
        label, mtime, size, max_bytes = seen[path]
        row = known.get(path)
        if row is not None and row[1] == label and row[2] == mtime and row[3] == size:
            continue
        if size > max_bytes:
            doc_table.record_doc_file(conn, path, label, mtime, size, "", f"larger than {max_bytes} bytes")
            doc_table.drop_chunks(conn, path)
            continue
        try:
            _, data = canon.read_regular(path, follow=False)  # a file swapped for a symlink since the scan is refused
        except OSError as exc:
            doc_table.record_doc_file(conn, path, label, mtime, size, "", f"cannot read: {exc.strerror}")
            doc_table.drop_chunks(conn, path)
            continue
        report.hashed += 1
        sha = canon.sha256_bytes(data)
        gate_mtime = 0 if time.time_ns() - mtime < 50_000_000 else mtime  # racy entry: re-hash next time
        if row is not None and row[4] == sha and row[1] == label and not row[5]:
            doc_table.touch_doc_file(conn, path, gate_mtime, size)
            continue
        try:
            text = canon.decode(data)
        except canon.CanonError as exc:
            doc_table.record_doc_file(conn, path, label, gate_mtime, size, sha, str(exc))
            doc_table.drop_chunks(conn, path)
            continue
        doc_table.drop_chunks(conn, path)
        for c in chunk_text(text, Path(path).name, chunk_chars):
            doc_table.put_chunk(conn, path, label, c.heading, c.text, c.start_line, c.end_line, _iso(mtime))
        doc_table.record_doc_file(conn, path, label, gate_mtime, size, sha, None)
        report.reindexed += 1
    report.skipped = [SkippedDocument(path=path, reason=why) for path, why in doc_table.skipped_documents(conn)]
    report.seconds = round(time.perf_counter() - started, 6)
    return report


def _iso(ns: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ns / 1e9))


def source_status(conn: sqlite3.Connection, sources: Sequence[DocumentSource]) -> list[SourceStatus]:
    out = []
    for source in sources:
        row = doc_table.source_totals(conn, source.label)
        out.append(
            SourceStatus(
                label=source.label,
                path=str(source.path),
                files=row[0] - (row[3] or 0),
                skipped=row[3] or 0,
                bytes=row[1],
                last_indexed=row[2],
            )
        )
    return out


def indexed_document(conn: sqlite3.Connection, path: Path) -> str | None:
    """The indexed (not skipped) document at this absolute path, or None: only these may be read."""
    return doc_table.indexed_label(conn, str(path))


@dataclass
class ChunkRow:
    rowid: int
    path: str
    label: str
    title: str
    body: str
    start_line: int
    end_line: int
    updated: str

    @property
    def excerpt(self) -> str:
        lines = self.body.split("\n")
        if lines and _HEADING.match(lines[0]):
            lines = lines[1:]
        return first_paragraph("\n".join(lines))


def cited_line(terms: Sequence[Term], chunk: ChunkRow) -> int | None:
    """The chunk's file line holding the most query terms, or None when no line holds one.

    A chunk can match through text that is not on any of its lines: its heading (a later piece of a long
    section), its file name (the title of text before the first heading) or its source label. Such a chunk
    has nothing to cite, and a citation must open at a line that really contains a query term.
    """
    # folding never adds or removes a newline, so a folded offset's line is the body's line
    body = fold(chunk.body)
    hits: dict[int, int] = {}  # line offset in the chunk -> how many query terms it holds
    for t in terms:
        lines: set[int] = set()
        for option in {t.stem, *t.variants, *(v.replace("-", " ") for v in t.variants)} - {""}:
            at = body.find(option)
            while at != -1:
                lines.add(body.count("\n", 0, at))
                at = body.find(option, at + 1)
        for offset in lines:
            hits[offset] = hits.get(offset, 0) + 1
    if not hits:
        return None
    return chunk.start_line + min(hits, key=lambda offset: (-hits[offset], offset))


def chunks_by_rowid(conn: sqlite3.Connection, rowids: list[int]) -> dict[int, ChunkRow]:
    return {r[0]: ChunkRow(*r) for r in doc_table.chunk_rows(conn, rowids)}


def display_path(path: Path, project_root: Path | None) -> str:
    """How a document is cited: relative to the project root when inside it, else absolute."""
    if project_root is not None:
        # indexed paths are real paths; the project root may have been given through a symlink
        for base in (project_root, Path(os.path.realpath(project_root))):
            try:
                return path.relative_to(base).as_posix()
            except ValueError:
                pass
    return str(path)
