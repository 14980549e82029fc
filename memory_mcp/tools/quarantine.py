"""Quarantine: the memories the poisoning screen held back, and their release by a person.

Only the CLI (`memory-mcp quarantine`, `memory-mcp release ID`) and the browser view call `release`: no MCP tool
takes a memory out of quarantine, so an agent that planted one cannot free it through the tools (an agent with
shell access can edit the file itself: docs/design/guarantees.md says what is and is not defended).
"""

from __future__ import annotations

from ..canon import files as canon
from ..domain.errors import InputError
from ..domain.models import QuarantineAnswer, QuarantinedMemory, UpdateAnswer
from ..domain.screen import release_marker
from ..index import db as ix
from ..index import reads
from ..store.scopes import locate, merged_report
from .state import ServiceState


def quarantined(svc: ServiceState, store: str | None = None, scope: str | None = None) -> QuarantineAnswer:
    """Every memory in quarantine, with why and since when."""
    with svc.scopes.open(scope, store) as opened:
        held = [
            QuarantinedMemory(id=r[0], title=r[1], path=r[2], state=r[3], quarantine=r[4], scope=o.scope)
            for o in opened
            for r in reads.quarantined(o.session.conn)
        ]
        return QuarantineAnswer(memories=held, index=merged_report(opened))


def release(svc: ServiceState, id: str, store: str | None = None, scope: str | None = None) -> UpdateAnswer:
    """A person's release: the marker goes, `released:` records the day and the digest of the text released (a
    later change to the text is screened again)."""
    with svc.scopes.open(scope, store) as opened:
        o, mem = locate(opened, id)
        s = o.session
        if mem.quarantine is None:
            raise InputError(f"id: '{id}' is not in quarantine; nothing to release")
        was = mem.quarantine
        now = canon.now_iso()

        def mutate(meta: dict) -> None:
            meta.pop("quarantine", None)
            meta["released"] = release_marker(mem.title, mem.body, now[:10])

        canon.rewrite(s.store.memory_file(mem.path), mutate)
        s.write_files([mem.path])
        fresh = ix.get_memory(s.conn, mem_id=mem.id)
        return UpdateAnswer(
            op="release",
            id=mem.id,
            path=mem.path,
            state=fresh.state if fresh else mem.state,
            changed=[mem.id],
            message=f"released from quarantine (was: {was})",
            quarantine=fresh.quarantine if fresh else None,
            index=merged_report(opened),
        )
