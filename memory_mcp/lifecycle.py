"""The state machine: active → archived → deprecated, with purge as the only way out.

active   → archived    (archive, or automatically when superseded)
archived → active      (restore, or a hand edit of the body)
active   → deprecated  (reason required)
archived → deprecated  (reason required)
deprecated is terminal: it can only be purged.
any      → purged      (confirm=true; deletes the file; git history is the backstop)
"""

from __future__ import annotations

from .errors import InputError, TransitionError
from .models import State

ALLOWED: dict[State, set[State]] = {
    State.ACTIVE: {State.ARCHIVED, State.DEPRECATED},
    State.ARCHIVED: {State.ACTIVE, State.DEPRECATED},
    State.DEPRECATED: set(),
}


def check_transition(current: State, target: State, reason: str | None = None) -> None:
    if current == target:
        raise TransitionError(f"the memory is already {current.value}")
    if target not in ALLOWED[current]:
        if current is State.DEPRECATED:
            raise TransitionError(
                f"deprecated → {target.value} is not allowed: deprecated is terminal (purge it, or remember anew)"
            )
        raise TransitionError(f"{current.value} → {target.value} is not allowed")
    if target is State.DEPRECATED and not (reason and reason.strip()):
        raise InputError("reason: deprecating a memory requires a reason")


def check_editable(current: State) -> None:
    if current is State.DEPRECATED:
        raise TransitionError("a deprecated memory cannot be edited (it is terminal; remember a new one instead)")
