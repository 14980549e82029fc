"""The state machine: active, archived, deprecated; purge deletes the file.

active     → archived    (archive, or automatically when superseded)
active     → deprecated  (reason required)
archived   → active      (restore, or a hand edit of the body)
archived   → deprecated  (reason required)
deprecated → active      (reactivation: reason required, kept as `reactivated_reason`)
deprecated → archived    is the one forbidden move: a retracted memory is reactivated or purged, never
                         quietly filed back among the kept ones.
archived | deprecated → purged (confirm=true; deletes the file; git history is the backstop). An active
                         memory is archived or deprecated first, so nothing in use is deleted in one step.
"""

from __future__ import annotations

from .errors import InputError, TransitionError
from .vocabulary import State

ALLOWED: dict[State, set[State]] = {
    State.ACTIVE: {State.ARCHIVED, State.DEPRECATED},
    State.ARCHIVED: {State.ACTIVE, State.DEPRECATED},
    State.DEPRECATED: {State.ACTIVE},
}
PURGEABLE = {State.ARCHIVED, State.DEPRECATED}


def needs_reason(current: State, target: State) -> bool:
    """Deprecating, and reactivating a deprecated memory, must say why."""
    return target is State.DEPRECATED or (current is State.DEPRECATED and target is State.ACTIVE)


def check_transition(current: State, target: State, reason: str | None = None) -> None:
    if current == target:
        raise TransitionError(f"the memory is already {current.value}")
    if target not in ALLOWED[current]:
        if current is State.DEPRECATED:
            raise TransitionError(
                f"deprecated → {target.value} is not allowed: reactivate it (state active, with a reason) or purge it"
            )
        raise TransitionError(f"{current.value} → {target.value} is not allowed")
    if needs_reason(current, target) and not (reason and reason.strip()):
        if target is State.DEPRECATED:
            raise InputError("reason: deprecating a memory requires a reason")
        raise InputError("reason: reactivating a deprecated memory requires a reason")


def check_purge(current: State) -> None:
    if current not in PURGEABLE:
        raise TransitionError(
            f"mode: cannot purge an {current.value} memory: it must be archived or deprecated first "
            "(memory_forget mode=archive or mode=deprecate), then purged with confirm=true"
        )


def check_editable(current: State) -> None:
    if current is State.DEPRECATED:
        raise TransitionError(
            "a deprecated memory cannot be edited (reactivate it first with a reason, or remember a new one)"
        )
