"""A mem0 export: the JSON list of memories its API and SDK return (`get_all`, or a saved copy of it).

Accepted shapes: a JSON list of memory objects, or an object holding that list under `results` (the
v2 `get_all` answer) or `memories`. Each object needs `memory` (the text); `id`, `hash`, `metadata`,
`categories`, `created_at`, `updated_at`, `user_id`, `agent_id`, `app_id`, `run_id` and the other fields
mem0 documents are read; any other field makes the item a problem (skipped), so a file of something
else is never half-imported as memories.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .records import IMPORT_TYPES, Draft, Parsed

FORMAT = "mem0"
# the fields of a mem0 memory object (platform and open-source get_all answers)
KNOWN_FIELDS = {
    "id", "memory", "hash", "metadata", "categories", "created_at", "updated_at", "user_id", "agent_id",
    "app_id", "run_id", "actor_id", "role", "score", "immutable", "expiration_date", "owner", "organization",
    "structured_attributes",
}  # fmt: skip
# who or what a memory is about: kept as entities
ENTITY_FIELDS = ("user_id", "agent_id", "app_id")
TITLE_CHARS = 120


def parse(path: Path) -> Parsed:
    out = Parsed()
    if path.is_dir():
        out.skip(str(path), "a folder: give mem0's JSON export file")
        return out
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        out.skip(path.name, f"cannot read as UTF-8 text ({exc})")
        return out
    except json.JSONDecodeError as exc:
        out.skip(path.name, f"not a mem0 export: not JSON (line {exc.lineno}: {exc.msg})")
        return out
    items = data if isinstance(data, list) else _listed(data)
    if items is None:
        out.skip(path.name, 'not a mem0 export: expected a JSON list of memories (or {"results": [...]})')
        return out
    for n, item in enumerate(items, 1):
        where = f"{path.name} item {n}"
        if not isinstance(item, dict):
            out.skip(where, "not a JSON object")
            continue
        if unknown := sorted(set(item) - KNOWN_FIELDS):
            out.skip(where, f"unknown field{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}")
            continue
        text = item.get("memory")
        if not isinstance(text, str) or not text.strip():
            out.skip(where, "no `memory` text")
            continue
        metadata = item.get("metadata") or {}
        if not isinstance(metadata, dict):
            out.skip(where, "`metadata` is not an object")
            continue
        out.drafts.append(_draft(path.name, n, item, text.strip(), metadata))
    if {"score", "hash"} & {k for i in items if isinstance(i, dict) for k in i}:
        out.drop("mem0's search score and content hash (recomputed here)")
    return out


def _listed(data: Any) -> list[Any] | None:
    if isinstance(data, dict):
        for key in ("results", "memories"):
            if isinstance(data.get(key), list):
                return data[key]
    return None


def _draft(file: str, n: int, item: dict[str, Any], text: str, metadata: dict[str, Any]) -> Draft:
    first = text.split("\n", 1)[0]
    title = first if len(first) <= TITLE_CHARS else first[: TITLE_CHARS - 1].rstrip() + "…"
    extra = []
    categories = item.get("categories") or []
    categories = [categories] if isinstance(categories, str) else categories
    if categories:
        extra.append("Categories: " + ", ".join(map(str, categories)) + ".")
    if metadata:
        extra.append("Metadata: " + "; ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in metadata.items()))
    for key in ("run_id", "actor_id", "role", "immutable", "expiration_date", "structured_attributes"):
        if item.get(key) not in (None, "", [], {}):
            extra.append(f"{key}: {json.dumps(item[key], ensure_ascii=False)}")
    body = "\n\n".join([text, *extra])  # the text even when it is the whole title: a memory has a body
    stamps = [f"{k.split('_')[0]} {item[k]}" for k in ("created_at", "updated_at") if item.get(k)]
    ident = [f"id {item['id']}"] if item.get("id") else []
    source = f"{FORMAT} import: {file} item {n}" + (f" ({', '.join(ident + stamps)})" if ident or stamps else "")
    kind = metadata.get("type") if metadata.get("type") in IMPORT_TYPES else "fact"
    entities = tuple(dict.fromkeys(str(item[k]) for k in ENTITY_FIELDS if item.get(k)))
    return Draft(title, body, str(kind), source, entities)
