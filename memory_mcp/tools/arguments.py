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
