"""Checks of enum, date and optional-value arguments, shared by the operations that take them."""

from __future__ import annotations

import sqlite3
from datetime import date
from typing import Any

from ..canon.files import ID_PATTERN
from ..domain.errors import InputError, NotFoundError
from ..domain.fields import BY_NAME, EDIT_VALUES, Kind
from ..domain.memory import OptionalValues
from ..domain.provenance import Origin
from ..domain.textinput import check_text
from ..domain.vocabulary import PERSON_TRUSTS, TOOL_TRUSTS, Trust
from ..index import reads


def trust_arg(trust: str, origin: Origin | None) -> Trust:
    """A trust level the caller may write: one only a person gives (`confirmed`) only through a person's surface
    (the CLI, the browser view; a hand edit needs no call), never through a tool call or an unnamed caller."""
    level = enum_arg(Trust, trust, "trust")
    if level.value in PERSON_TRUSTS and (origin is None or not origin.by_person):
        raise InputError(person_trust_refusal(level.value))
    return level


def person_trust_refusal(level: str) -> str:
    """Why a tool call may not give `level` (the MCP edge says it too, when its schema refuses the word)."""
    return (
        f"trust: '{level}' is given only by a person, through the CLI (memory-mcp update edit ID --trust {level}), "
        f"the browser view or by editing the file; a tool call may write {', '.join(TOOL_TRUSTS)}"
    )


def check_date(value: str | None, name: str) -> str | None:
    if value is None or value == "":
        return None
    try:
        return date.fromisoformat(value).isoformat()
    except ValueError:
        raise InputError(f"{name}: '{value}' is not a date (YYYY-MM-DD)") from None


def _check_dates(values: dict[str, str | None], before: dict[str, str | None] | None = None) -> dict[str, str | None]:
    """The optional days of a memory (`fields.DATE_FIELDS`) as given, each checked; `valid_until` before
    `valid_from` (either given, the other as the file has it in `before`) is refused naming the field."""
    checked = {name: check_date(value, name) for name, value in values.items() if value is not None}
    merged = {**(before or {}), **checked}
    start, end = merged.get("valid_from"), merged.get("valid_until")
    if start and end and end < start:
        name = "valid_until" if "valid_until" in checked else "valid_from"
        raise InputError(f"{name}: valid_until {end} is before valid_from {start}")
    return checked


def check_values(values: OptionalValues | None, before: OptionalValues | None = None) -> dict[str, str | None]:
    """The optional values a caller set (`fields.EDIT_VALUES`), each checked as its kind says, by field name;
    '' clears a value (None). A value the caller may not set is refused naming it."""
    given = values.given() if values is not None else {}
    for name in given:
        if name not in EDIT_VALUES:
            raise InputError(f"{name}: is written by the server, not set by a caller")
    day_fields = [n for n in EDIT_VALUES if BY_NAME[n].kind is Kind.DATE]
    checked = _check_dates(
        {n: v for n, v in given.items() if n in day_fields},
        {n: getattr(before, n) for n in day_fields} if before is not None else None,
    )
    checked |= {n: check_text(v, n).strip() or None for n, v in given.items() if n not in day_fields}
    for name, value in checked.items():
        if value and BY_NAME[name].kind is Kind.LINK and not ID_PATTERN.match(value):
            raise InputError(f"{name}: {value[:70]!r} is not a memory id")
    return {n: checked[n] for n in EDIT_VALUES if n in checked}  # in the table's order


def check_follows(conn: sqlite3.Connection, values: dict[str, str | None], own_id: str | None = None) -> None:
    """`follows` names another memory of the same store (a thread link to nothing would never show)."""
    follows = values.get("follows")
    if not follows:
        return
    if follows == own_id:
        raise InputError(f"follows: '{follows}' is this memory itself")
    if not reads.memory_states(conn, [follows]):
        raise NotFoundError(f"follows: no memory with id '{follows}' in this store")


def word_arg(value: str, allowed: tuple[str, ...], name: str) -> str:
    """One of the vocabulary's words (an op, a mode, a resolution), or an error listing them."""
    if value not in allowed:
        raise InputError(f"{name}: '{value}' is not one of {', '.join(allowed)}")
    return value


def enum_arg(cls: type, value: str | None, name: str) -> Any:
    if value is None:
        return None
    try:
        return cls(value)
    except ValueError:
        allowed = ", ".join(m.value for m in cls)
        raise InputError(f"{name}: '{value}' is not one of {allowed}") from None
