"""basic-memory notes: Markdown files with frontmatter (title, type, tags, permalink, custom fields),
observations `- [category] text #tag (context)` and relations `- relation_type [[Target]] (context)`,
found anywhere in the note (the `## Observations` / `## Relations` headings are customary, not required).

Each note becomes one memory (type knowledge, or its frontmatter `type` when that is one of ours) with its
prose and relation lines; each observation becomes a memory of its own about the note (type from its
category when that is one of ours, else fact); each relation whose target note is in the import becomes
a `related` link between the two notes' memories (its line stays in the note's text either way).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..domain.added_text import observation_body
from ..domain.text import fold_case
from .notes import as_list, outside_fences, properties_line, readable_notes, title_and_body
from .records import IMPORT_TYPES, Draft, Link, Parsed

FORMAT = "basic-memory"
OBSERVATION = re.compile(r"^\s*[-*]\s+\[([^\[\]]+)\]\s+(\S.*?)\s*$")
RELATION = re.compile(r"^\s*[-*]\s+([^\[\]\s][^\[\]]*?)\s+\[\[([^\[\]]+)\]\]\s*(.*?)\s*$")
TAG = re.compile(r"(?<!\S)#([\w/-]+)")
CONTEXT = re.compile(r"\s*\(([^()]*)\)\s*$")
OBSERVATIONS_HEADING = re.compile(r"^#{1,6}\s+Observations\s*$", re.IGNORECASE)
TASK_BOXES = {" ", "x", "X"}  # `- [ ] todo` is a task list item, not an observation


def parse(path: Path) -> Parsed:
    out = Parsed()
    names: dict[str, str] = {}  # title, permalink or file stem (case-folded) -> the note's key
    relations: list[tuple[str, str, str]] = []  # (note key, relation type, target)
    for note in readable_notes(path, out, "notes"):
        name = note.name
        title, body = title_and_body(note)
        key = f"note:{name}"
        for alias in (title, str(note.meta.get("permalink") or ""), note.path.stem):
            if alias:
                names.setdefault(fold_case(alias), key)
        tags = as_list(note.meta.get("tags"))
        kept, observations = [], []
        lines = body.split("\n")
        for line, outside in zip(lines, outside_fences(lines), strict=True):
            obs = OBSERVATION.match(line) if outside else None
            if obs and obs.group(1) not in TASK_BOXES:
                observations.append((obs.group(1).strip(), obs.group(2)))
                continue
            rel = RELATION.match(line) if outside else None
            if rel:
                relations.append((key, rel.group(1).strip(), rel.group(2).split("|")[0].strip()))
            kept.append(line)
        if observations:
            kept = [line for line in kept if not OBSERVATIONS_HEADING.match(line)]
        note_type = str(note.meta.get("type") or "")
        mapped = note_type in IMPORT_TYPES
        props = properties_line(note.meta, {"title", "tags"} | ({"type"} if mapped else set()))
        text = "\n\n".join(p for p in ("\n".join(kept).strip(), props) if p)
        source = f"{FORMAT} import: {name}"
        entities = tuple(dict.fromkeys([title, *tags]))
        out.drafts.append(Draft(title, text, note_type if mapped else "knowledge", source, entities, key))
        for category, content in observations:
            obs_tags = TAG.findall(content)
            plain = CONTEXT.sub("", TAG.sub("", content)).strip() or content
            kind = category.lower() if category.lower() in IMPORT_TYPES else "fact"
            obs_body = observation_body(category, content, title)
            out.drafts.append(
                Draft(plain, obs_body, kind, f"{source} (observation)", tuple(dict.fromkeys([title, *obs_tags])))
            )
    for key, rel, target in relations:
        other = names.get(fold_case(target))
        if other is None:
            out.drop("relations to notes outside the import (their lines stay in the note's text)")
        elif other != key:
            out.links.append(Link(key, other, rel))
    return out
