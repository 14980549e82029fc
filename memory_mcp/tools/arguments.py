"""Checks of enum and date arguments, shared by the operations that take them."""

from __future__ import annotations

from datetime import date
from typing import Any

from ..domain.errors import InputError


def check_date(value: str | None, name: str) -> str | None:
    if value is None or value == "":
        return None
    try:
        return date.fromisoformat(value).isoformat()
    except ValueError:
        raise InputError(f"{name}: '{value}' is not a date (YYYY-MM-DD)") from None


def check_dates(values: dict[str, str | None], before: dict[str, str | None] | None = None) -> dict[str, str | None]:
    """The optional days of a memory (`fields.DATE_FIELDS`) as given, each checked; `valid_until` before
    `valid_from` (either given, the other as the file has it in `before`) is refused naming the field."""
    checked = {name: check_date(value, name) for name, value in values.items() if value is not None}
    merged = {**(before or {}), **checked}
    start, end = merged.get("valid_from"), merged.get("valid_until")
    if start and end and end < start:
        name = "valid_until" if "valid_until" in checked else "valid_from"
        raise InputError(f"{name}: valid_until {end} is before valid_from {start}")
    return checked


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
