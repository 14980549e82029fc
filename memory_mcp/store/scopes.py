"""Scopes: `local` (the bound project's `.memory/` store) and `global` (the account store).

One server serves one project: the local scope is only ever `<project-root>/<local_dir>`, and the global
scope is the account store or a named sibling of it, so no other project's memory is reachable.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..domain.answers import IndexReport, ReconcileReport
from ..domain.errors import InputError, NotFoundError, StoreMissingError
from ..domain.vocabulary import SCOPES
from ..index import db as ix
from .documents import DocumentSource
from .paths import Store, open_store
from .reconcile import PassRules
from .session import StoreSession, index_report

LOCAL, GLOBAL = SCOPES


@dataclass
class Opened:
    """A store opened for one call: its lock is held and it has been reconciled."""

    scope: str
    session: StoreSession
    report: ReconcileReport


class Scopes:
    def __init__(
        self,
        global_root: Path,
        project_root: Path | None = None,
        local_dir: str = ".memory",
        sources: Sequence[DocumentSource] = (),
        chunk_chars: int = 1200,
        change_watch: bool = True,
        one_call: bool = False,
    ) -> None:
        self.change_watch = change_watch
        self.one_call = one_call  # the process makes one call: no change watch is opened (`CanonWatch`)
        self.global_root = global_root.expanduser().absolute()
        self.project_root = project_root.expanduser().absolute() if project_root else None
        self.local_dir = local_dir
        self.sources = tuple(sources)
        self.chunk_chars = chunk_chars
        self._sessions: dict[tuple[str, str], StoreSession] = {}
        self._lock = threading.Lock()

    @property
    def names(self) -> list[str]:
        return [LOCAL, GLOBAL] if self.project_root else [GLOBAL]

    @property
    def home(self) -> str:
        """Where new memories go by default and where document sources are indexed."""
        return LOCAL if self.project_root else GLOBAL

    def check(self, scope: str | None) -> str | None:
        if scope is None:
            return None
        if scope not in SCOPES:
            raise InputError(f"scope: '{scope}' is not one of local, global")
        if scope == LOCAL and self.project_root is None:
            raise InputError("scope: 'local' needs a server bound to a project (--project-root DIR)")
        return scope

    def target(self, scope: str | None = None, store: str | None = None) -> tuple[str, Store]:
        """The scope and store one call on one scope uses (default: the home scope), without opening it."""
        scope = self.check(scope) or (GLOBAL if store else self.home)
        if scope == LOCAL:
            if store:
                raise InputError("store: named stores belong to the global scope; drop `store` or use scope=global")
            assert self.project_root is not None
            return scope, Store("local", self.project_root / self.local_dir, container=self.project_root)
        return scope, open_store(self.global_root, store)

    def targets(self, scope: str | None, store: str | None) -> list[tuple[str, Store]]:
        """What `sessions` would open, without opening (or creating) anything."""
        scope = self.check(scope)
        if scope is not None or store:
            return [self.target(scope, store)]
        return [self.target(name) for name in self.names]

    def session(self, scope: str | None = None, store: str | None = None, *, create: bool = False) -> StoreSession:
        """The session of one scope; a named sibling store (`store`) that is not there is refused unless
        `create` (a remember): a call that reads or fails must not lay out a store for a mistyped name."""
        scope, target = self.target(scope, store)
        if store and not create and not target.exists():
            raise StoreMissingError(
                f"store: no store named '{store}' ({target.root} has no memories/ folder); "
                f"memory_remember with store='{store}' creates it"
            )
        key = (scope, str(target.root))
        with self._lock:
            if key not in self._sessions:
                home = scope == self.home and not (scope == GLOBAL and store)
                self._sessions[key] = StoreSession(
                    target, scope, self.sources if home else (), self.chunk_chars, self.change_watch, self.one_call
                )
            return self._sessions[key]

    def sessions(self, scope: str | None, store: str | None) -> list[StoreSession]:
        """The stores one call touches: one scope when named, otherwise every scope (local first)."""
        scope = self.check(scope)
        if scope is not None:
            return [self.session(scope, store)]
        if store:
            return [self.session(GLOBAL, store)]
        return [self.session(name) for name in self.names]

    def open(
        self, scope: str | None = None, store: str | None = None, write: bool = True
    ) -> AbstractContextManager[list[Opened]]:
        """Every scope the call touches, each in its `StoreSession.transaction` (its store lock held);
        `write=False`: its reconcile writes no memory file (reindex --verify)."""
        if not write:
            return self._entered(scope, store, lambda s: s.transaction(rules=PassRules(write=False)))
        return self._entered(scope, store, StoreSession.transaction)

    def rebuilding(self, scope: str | None = None, store: str | None = None) -> AbstractContextManager[list[Opened]]:
        """`open` for a call that rebuilds each index first: no reconcile-first pass (`StoreSession.transaction`)."""
        return self._entered(scope, store, functools.partial(StoreSession.transaction, catch_up=False))

    def reading(self, scope: str | None = None, store: str | None = None) -> AbstractContextManager[list[Opened]]:
        """`open` for a call that only reads the indexes (`StoreSession.reading`): no store lock while it reads."""
        return self._entered(scope, store, StoreSession.reading)

    @contextmanager
    def _entered(
        self,
        scope: str | None,
        store: str | None,
        enter: Callable[[StoreSession], AbstractContextManager[ReconcileReport]],
    ) -> Iterator[list[Opened]]:
        # always local before global: one lock order for every call, so two calls never deadlock
        with ExitStack() as stack:
            opened = []
            for s in self.sessions(scope, store):
                opened.append(Opened(s.scope, s, stack.enter_context(enter(s))))
            yield opened

    def close(self) -> None:
        for s in self._sessions.values():
            s.close()


def locate(opened: list[Opened], mem_id: str) -> tuple[Opened, ix.IndexedMemory]:
    for o in opened:
        mem = ix.get_memory(o.session.conn, mem_id=mem_id)
        if mem is not None:
            return o, mem
    where = " or ".join(o.scope for o in opened)
    raise NotFoundError(f"id: no memory with id '{mem_id}' in the {where} scope")


def merged_report(opened: list[Opened]) -> IndexReport:
    """One index report for a call that reconciled several scopes: counts summed, lists joined."""
    reports = [index_report(o.session, o.report) for o in opened]
    first = reports[0]
    if len(reports) == 1:
        return first
    total = ReconcileReport()
    for r in reports:
        for field in ("scanned", "hashed", "reindexed", "removed", "unparseable"):
            setattr(total, field, getattr(total, field) + getattr(r.reconcile, field))
        total.seconds += r.reconcile.seconds
        total.quarantined += r.reconcile.quarantined
        total.renumbered += r.reconcile.renumbered
        if r.reconcile.index_in_memory:
            reason = f"{r.scopes[0].scope}: {r.reconcile.index_in_memory}"
            total.index_in_memory = f"{total.index_in_memory}; {reason}" if total.index_in_memory else reason
        if r.reconcile.rebuilt:
            total.rebuilt = True
            reason = f"{r.scopes[0].scope}: {r.reconcile.rebuild_reason}"
            total.rebuild_reason = f"{total.rebuild_reason}; {reason}" if total.rebuild_reason else reason
    return IndexReport(
        store=first.store,
        reconcile=total,
        scopes=[s for r in reports for s in r.scopes],
        unparseable=[u for r in reports for u in r.unparseable],
        unresolved_conflicts=[c for r in reports for c in r.unresolved_conflicts],
        unresolved_conflicts_total=sum(r.unresolved_conflicts_total for r in reports),
        documents=next((r.documents for r in reports if r.documents is not None), None),
    )
