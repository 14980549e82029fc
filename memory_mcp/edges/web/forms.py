"""The edit form: a memory's fields as form values, and the submitted values as `update(op="edit")` arguments."""

from __future__ import annotations

from typing import Any

from ...domain import fields
from ...domain.memory import OptionalValues
from ...domain.models import EditableMemory

EDIT_FIELDS = ("title", "body", *fields.EDIT_FIELDS)


def values_of(m: EditableMemory) -> dict[str, str]:
    """The form's values, filled from the file."""
    return {
        "title": m.title,
        "body": m.body,
        "type": m.type,
        "trust": m.trust,
        "entities": ", ".join(m.entities),
        "source": m.source,
        **{name: getattr(m, name) or "" for name in fields.EDIT_VALUES},
    }


def entities_of(text: str) -> list[str]:
    return [e.strip() for e in text.replace("\n", ",").split(",") if e.strip()]


def changes(current: EditableMemory, submitted: dict[str, str]) -> dict[str, Any]:
    """The form fields that differ from the file, as service.update arguments (only those are sent)."""
    before = values_of(current)
    out: dict[str, Any] = {}
    for key in EDIT_FIELDS:
        new = submitted[key].strip()
        if key == "entities":
            if entities_of(new) != current.entities:
                out[key] = entities_of(new)
        elif new != before[key].strip():
            out[key] = new
    values = {key: out.pop(key) for key in fields.EDIT_VALUES if key in out}
    return out | ({"values": OptionalValues(**values)} if values else {})
