"""Reading Markdown notes for the importers: files under a folder, frontmatter, heading sections.

Frontmatter is read by the canon's own safe reader (no YAML tags, anchors or aliases; dates become ISO
text), sections are the document chunker's `#`..`###` sections (never split by size here).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..canon import files as canon
from ..domain.added_text import properties_line as added_properties_line
from ..store.documents import chunk_text
from .records import Parsed

# a note larger than this is not a note (a memory body holds at most limits.max_body characters anyway)
MAX_NOTE_BYTES = 4 * 1024 * 1024
_HEADING = re.compile(r"^(#{1,6})\s+(\S.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
# folders that hold tooling, never notes
SKIPPED_DIRS = {"node_modules", "__pycache__"}


class NoteError(Exception):
    """A file that cannot be read as a note; the message is the reason."""


@dataclass(frozen=True)
class Note:
    """One Markdown file: its frontmatter, its content and the file line the content starts on."""

    path: Path
    name: str  # as reported and written into `source`: relative to the imported folder
    meta: dict[str, Any]
    content: str
    first_line: int


@dataclass(frozen=True)
class Section:
    """A heading's section: the heading path (outermost first), its body without the heading, its line."""

    headings: tuple[str, ...]
    body: str
    line: int

    @property
    def title(self) -> str:
        return self.headings[-1] if self.headings else ""


def markdown_files(root: Path, hidden: frozenset[str] = frozenset()) -> list[Path]:
    """`root` itself when it is a file, else every `.md` file under it, sorted; hidden folders and files
    are skipped (except the hidden folder names given), and so are links (never followed out of the folder)."""
    if root.is_file():
        return [root]
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if (not d.startswith(".") or d in hidden) and d not in SKIPPED_DIRS)
        for name in sorted(files):
            path = Path(folder) / name
            if name.endswith(".md") and not name.startswith(".") and not path.is_symlink():
                found.append(path)
    return found


def display_name(path: Path, root: Path) -> str:
    """How a file is named in reports and sources: relative to the imported folder, or its own name."""
    if root.is_file():
        return path.name
    return path.relative_to(root).as_posix()


def read_note(path: Path, name: str) -> Note:
    """The note at `path`, or NoteError (binary, not UTF-8, too large, frontmatter that is not safe YAML)."""
    try:
        size = path.stat().st_size
        if size > MAX_NOTE_BYTES:
            raise NoteError(f"larger than {MAX_NOTE_BYTES // (1024 * 1024)} MiB")
        text = canon.decode(path.read_bytes())
        meta, content, first_line = canon.split(text, round_trip=False)
    except OSError as exc:
        raise NoteError(f"cannot read: {exc.strerror or exc}") from None
    except canon.CanonError as exc:
        raise NoteError(str(exc)) from None
    except Exception as exc:  # the YAML library's own errors: the frontmatter is not YAML
        raise NoteError(f"frontmatter is not valid YAML ({' '.join(str(exc).split())[:200]})") from None
    if not isinstance(meta, dict):
        raise NoteError("frontmatter is not a map of fields")
    return Note(path, name, canon.to_plain(dict(meta)), content, first_line)


def readable_notes(root: Path, out: Parsed, what: str) -> Iterator[Note]:
    """Every note under `root` that reads as one; each file that does not (or an empty folder: "no Markdown
    (.md) `what` here") is reported as skipped in `out`."""
    files = markdown_files(root)
    if not files:
        out.skip(str(root), f"no Markdown (.md) {what} here")
    for file in files:
        name = display_name(file, root)
        if file.suffix != ".md":
            out.skip(name, "not a Markdown (.md) file")
            continue
        try:
            note = read_note(file, name)
        except NoteError as exc:
            out.skip(name, str(exc))
            continue
        yield note


def sections(content: str, first_line: int = 1) -> list[Section]:
    """The content cut at `#`..`###` headings outside code fences; text before the first heading has no
    heading. Each section's body is its text without the heading line, stripped; empty sections are kept
    (their heading still names the sections under it)."""
    out = []
    trail: list[tuple[int, str]] = []  # (level, heading) of the enclosing headings
    for chunk in chunk_text(content, "", chunk_chars=len(content) + 2):
        lines = chunk.text.split("\n")
        match = _HEADING.match(lines[0]) if chunk.heading else None
        if match and match.group(2) == chunk.heading:
            level = len(match.group(1))
            trail = [(lv, h) for lv, h in trail if lv < level] + [(level, chunk.heading)]
            lines = lines[1:]
        out.append(Section(tuple(h for _, h in trail), "\n".join(lines).strip(), chunk.start_line + first_line - 1))
    return out


def first_heading(content: str) -> tuple[str | None, str]:
    """The `# Title` a note opens with (blank lines allowed before it) and the content without it."""
    lines = content.split("\n")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        match = _HEADING.match(line)
        if match and len(match.group(1)) == 1:
            return match.group(2), "\n".join(lines[i + 1 :]).strip()
        break
    return None, content.strip()


def outside_fences(lines: list[str]) -> list[bool]:
    """For each line, whether it is outside a fenced code block (a fence line itself counts as inside)."""
    out, inside = [], False
    for line in lines:
        if _FENCE.match(line):
            inside = not inside
            out.append(False)
            continue
        out.append(not inside)
    return out


def properties_line(meta: dict[str, Any], skip: set[str]) -> str:
    """Frontmatter fields no memory field holds, as one line of text (so nothing is lost): '' when none."""
    rest = [(k, v) for k, v in meta.items() if k not in skip and v not in (None, "", [], {})]
    if not rest:
        return ""
    shown = "; ".join(f"{k}: {', '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in rest)
    return added_properties_line(shown)


def as_list(value: Any) -> list[str]:
    """A frontmatter list field (YAML list or comma-separated text) as non-empty strings."""
    if value is None:
        return []
    items = value if isinstance(value, list) else str(value).split(",")
    return [str(v).strip().lstrip("#") for v in items if str(v).strip().lstrip("#")]


def title_and_body(note: Note) -> tuple[str, str]:
    """The note's title (frontmatter `title`, else its opening `# heading`, else the file name) and its body
    (the content, without that heading when it is the title)."""
    heading, rest = first_heading(note.content)
    meta_title = str(note.meta.get("title") or "").strip()
    title = meta_title or heading or note.path.stem
    if heading is not None and (not meta_title or " ".join(heading.split()) == " ".join(meta_title.split())):
        return title, rest
    return title, note.content.strip()
