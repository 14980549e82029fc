"""The official MCP memory server's knowledge graph (`@modelcontextprotocol/server-memory`).

Its file (`memory.jsonl` by default, `MEMORY_FILE_PATH` to move it) holds one JSON object per line:
`{"type": "entity", "name": ..., "entityType": ..., "observations": [...]}` or
`{"type": "relation", "from": ..., "to": ..., "relationType": ...}`. Observations are meant to be
atomic facts, so each becomes one memory (type fact) about its entity, titled `entity: observation`
(the entity type goes into `source`: written into every body it would make them all look alike to
the conflict gate); a relation becomes one memory
naming both entities, linked (`related`) to the first memory of each end, so the graph can be walked.
An entity with no observations keeps its name and type in a memory of its own.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..domain.added_text import relation_line
from .records import Draft, Link, Parsed

FORMAT = "mcp-memory"
ENTITY_FIELDS = {"type", "name", "entityType", "observations"}
RELATION_FIELDS = {"type", "from", "to", "relationType"}


def parse(path: Path) -> Parsed:
    out = Parsed()
    if path.is_dir():
        out.skip(str(path), "a folder: give the memory server's JSONL file (memory.jsonl)")
        return out
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        out.skip(path.name, f"cannot read as UTF-8 text ({exc})")
        return out
    entities: dict[str, tuple[int, str, list[str]]] = {}  # name -> (first line, entityType, observations)
    relations: list[tuple[int, str, str, str]] = []
    objects = 0
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path.name}:{n}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            out.skip(where, f"not a JSON object ({exc.msg})")
            continue
        if not isinstance(item, dict):
            out.skip(where, "not a JSON object")
            continue
        objects += 1
        kind = item.get("type")
        fields = ENTITY_FIELDS if kind == "entity" else RELATION_FIELDS if kind == "relation" else None
        if fields is None:
            out.skip(where, f"type {kind!r} is neither 'entity' nor 'relation'")
            continue
        if unknown := sorted(set(item) - fields):
            out.skip(where, f"unknown field{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} in this {kind}")
            continue
        if missing := [f for f in sorted(fields) if f != "observations" and not _text(item.get(f))]:
            out.skip(where, f"{kind} without {', '.join(missing)} (each must be non-empty text)")
            continue
        if kind == "relation":
            relations.append((n, item["from"].strip(), item["relationType"].strip(), item["to"].strip()))
            continue
        observations = item.get("observations", [])
        if not isinstance(observations, list) or not all(isinstance(o, str) for o in observations):
            out.skip(where, "observations must be a list of text")
            continue
        name = item["name"].strip()
        first, etype, obs = entities.get(name, (n, item["entityType"].strip(), []))
        entities[name] = (first, etype, obs + [o for o in observations if o.strip() and o not in obs])
    if objects == 0 and out.problems:
        # nothing in it parsed: it is not this format at all; one problem for the file, not one per line
        out.problems[:] = []
        out.skip(path.name, "not the MCP memory server's JSONL (no line is a JSON object)")
        return out
    anchor: dict[str, str] = {}  # entity name -> key of its first memory
    for name, (line, etype, observations) in entities.items():
        source = f"{FORMAT} import: {path.name}:{line} (entity {name}, {etype})"
        if not observations:
            anchor[name] = f"entity:{name}"
            out.drafts.append(Draft(name, f"{name} ({etype}).", "fact", source, (name,), anchor[name]))
            continue
        for i, obs in enumerate(observations):
            key = f"entity:{name}" if i == 0 else ""
            anchor.setdefault(name, key)
            out.drafts.append(Draft(f"{name}: {obs}", obs, "fact", source, (name,), key))
    for line, a, rel, b in relations:
        key = f"relation:{line}"
        words = rel.replace("_", " ")
        source = f"{FORMAT} import: {path.name}:{line} (relation {rel})"
        body = f"{a} {words} {b}.\n\n{relation_line(rel, a, b)}"
        out.drafts.append(Draft(f"{a} {words} {b}", body, "fact", source, tuple(dict.fromkeys((a, b))), key))
        for end in dict.fromkeys((a, b)):
            if end in anchor:
                out.links.append(Link(key, anchor[end], rel))
            else:
                out.drop("links to entities the file never defines (the relation's text still names them)")
    return out


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())
