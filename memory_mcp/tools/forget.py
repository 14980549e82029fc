"""memory_forget: archive, deprecate or purge a memory."""

from __future__ import annotations

from ..canon import files as canon
from ..domain.errors import InputError
from ..domain.lifecycle import check_purge
from ..domain.models import ForgetAnswer
from ..domain.textinput import check_optional
from ..domain.vocabulary import FORGET_MODES, State
from ..store.scopes import locate, merged_report
from .arguments import word_arg
from .state import ServiceState
from .update import transition


def forget(
    svc: ServiceState,
    id: str,
    mode: str,
    reason: str | None = None,
    confirm: bool = False,
    store: str | None = None,
    scope: str | None = None,
) -> ForgetAnswer:
    word_arg(mode, FORGET_MODES, "mode")
    reason = check_optional(reason, "reason")
    with svc.scopes.open(scope, store) as opened:
        o, mem = locate(opened, id)
        s = o.session
        now = canon.now_iso()
        if mode == "purge":
            check_purge(State(mem.state))
            if confirm is not True:
                raise InputError("confirm: purge deletes the file; pass confirm=true to really delete it")
            s.store.memory_file(mem.path).unlink()
            s.write_files([mem.path])
            return ForgetAnswer(
                id=id,
                mode=mode,
                path=mem.path,
                state=None,
                message=f"deleted {mem.path}"
                + (
                    " (git history is the backstop)"
                    if s.store.in_git_repository()
                    else " for good (no version control holds a copy)"
                ),
                index=merged_report(opened),
            )
        target = State.ARCHIVED if mode == "archive" else State.DEPRECATED
        transition(s, mem, target, reason, now)
        s.write_files([mem.path])
        return ForgetAnswer(
            id=id,
            mode=mode,
            path=mem.path,
            state=target.value,
            message=f"{mem.state} → {target.value}",
            index=merged_report(opened),
        )
