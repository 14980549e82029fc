"""Claude Code's memory files: CLAUDE.md instructions and the per-project auto-memory folder.

- CLAUDE.md files (`CLAUDE.md`, `CLAUDE.local.md`, `.claude/CLAUDE.md`, `.claude/rules/*.md`, in the
  folder given and below it): each `#`..`###` section becomes one memory (type knowledge) titled by its
  heading, its source naming the file and the heading path; the folder holding the file (the project)
  is the entity. Text before the first heading is a section titled by the file.
- The auto-memory folder (`~/.claude/projects/<project>/memory/`, recognised by its `MEMORY.md`): each
  topic file becomes one memory. Its frontmatter (`name`, `description`, `type`: user, feedback, project
  or reference) gives the title, the first paragraph and the type (user → fact, feedback → preference,
  project → knowledge, reference → reference). `MEMORY.md` is the index: its lines that only link to a
  topic file are dropped (the file itself is imported); any other section becomes a memory.
"""

from __future__ import annotations

import re
from pathlib import Path

from .notes import Note, NoteError, display_name, markdown_files, read_note, sections, title_and_body
from .records import Draft, Parsed

FORMAT = "claude-code"
INSTRUCTION_FILES = {"CLAUDE.md", "CLAUDE.local.md"}
INDEX_FILE = "MEMORY.md"
TOPIC_FIELDS = {"name", "description", "type"}
TOPIC_TYPES = {"user": "fact", "feedback": "preference", "project": "knowledge", "reference": "reference"}
INDEX_LINE = re.compile(r"^\s*[-*]\s+\[[^\]]*\]\(([^)\s]+\.md)\)")


def parse(path: Path) -> Parsed:
    out = Parsed()
    for file, role in _memory_files(path):
        name = display_name(file, path)
        try:
            note = read_note(file, name)
        except NoteError as exc:
            out.skip(name, str(exc))
            continue
        if role == "topic":
            _topic(out, note)
        else:
            _sections(out, note, _project_of(file) if role == "instructions" else None, role == "index")
    if not out.drafts and not out.problems:
        out.skip(
            str(path),
            "no Claude Code memory here: no CLAUDE.md, CLAUDE.local.md, .claude/rules/*.md or auto-memory "
            "folder (MEMORY.md)",
        )
    return out


def _memory_files(root: Path) -> list[tuple[Path, str]]:
    """(file, role): role is instructions (a CLAUDE.md or a rule), index (MEMORY.md) or topic (an auto-memory file)."""
    if root.is_file():
        if root.name == INDEX_FILE:
            return [(root, "index")]
        if (root.parent / INDEX_FILE).is_file():
            return [(root, "topic")]
        return [(root, "instructions")]
    memory_dirs = {p.parent for p in markdown_files(root) if p.name == INDEX_FILE}
    found = []
    for p in markdown_files(root, hidden=frozenset({".claude"})):
        if p.parent in memory_dirs:
            found.append((p, "index" if p.name == INDEX_FILE else "topic"))
        elif p.name in INSTRUCTION_FILES or (".claude" in p.parts and "rules" in p.relative_to(root).parts[:-1]):
            found.append((p, "instructions"))
    return found


def _project_of(file: Path) -> str | None:
    """The project a CLAUDE.md belongs to: the folder holding it (or holding its .claude folder)."""
    parts = file.resolve().parent.parts
    while parts and (parts[-1].startswith(".") or parts[-1] == "rules"):
        parts = parts[:-1]
    return parts[-1] if len(parts) > 1 else None


def _sections(out: Parsed, note: Note, project: str | None, index: bool) -> None:
    linked = set()
    for section in sections(note.content, note.first_line):
        lines = section.body.split("\n")
        if index:  # the index's pointer lines name topic files imported on their own
            keep = [line for line in lines if not INDEX_LINE.match(line)]
            linked |= {m.group(1) for line in lines if (m := INDEX_LINE.match(line))}
            lines = keep
        body = "\n".join(lines).strip()
        if not body:
            continue  # a heading with nothing under it: it still names the sections below it
        title = section.title or note.path.name
        where = " > ".join(section.headings) if section.headings else "(top)"
        source = f"{FORMAT} import: {note.name} § {where} (line {section.line})"
        out.drafts.append(Draft(title, body, "knowledge", source, (project,) if project else ()))
    if linked:
        out.drop("MEMORY.md's one-line pointers to topic files (each topic file is imported itself)")


def _topic(out: Parsed, note: Note) -> None:
    if unknown := sorted(set(note.meta) - TOPIC_FIELDS):
        out.skip(note.name, f"unknown frontmatter field{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}")
        return
    kind = str(note.meta.get("type") or "project")
    if kind not in TOPIC_TYPES:
        out.skip(note.name, f"type {kind!r} is not one of {', '.join(TOPIC_TYPES)}")
        return
    title, body = title_and_body(note)
    title = str(note.meta.get("name") or title)
    description = str(note.meta.get("description") or "").strip()
    if description and description not in body:
        body = f"{description}\n\n{body}".strip()
    if not body:
        out.skip(note.name, "empty memory file")
        return
    out.drafts.append(Draft(title, body, TOPIC_TYPES[kind], f"{FORMAT} import: {note.name}", ()))
