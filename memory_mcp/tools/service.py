"""The service facade: the operations over the bound project's local store and the account's global store.

Each operation is a function of tools/ (remember.py, recall.py, update.py, ...) that takes the shared
state (`ServiceState`: scopes, limits, ranking, embedder, clock) and returns its answer; `MemoryService`
holds that state and binds the functions as its methods, so the edges (MCP server, CLI, web view) call
`service.recall(...)` and translate. Every rule lives in those functions or the layers below them.

A module of tools/ is imported at the first call of one of its operations, not with the service: a one-shot
`memory-mcp recall` loads recall's modules, not sync's, the importers' or the conflict gate's.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .state import ServiceState

if TYPE_CHECKING:  # the modules the operations come from (imported at their first call; named here for readers)
    from . import browse, context, export, forget, known, quarantine, read, recall, reindex, remember, status, update
    from . import sync as git_sync


class _Operation:
    """A method of MemoryService that is the function `name` of the tools/ module `module`, imported on first use;
    the class attribute is then replaced by the function itself, so later calls cost a plain method call."""

    def __init__(self, module: str, name: str | None = None) -> None:
        self.module, self.name = module, name

    def __set_name__(self, owner: type, attribute: str) -> None:
        self.attribute = attribute
        self.name = self.name or attribute

    def load(self) -> Callable[..., Any]:
        return getattr(importlib.import_module(f".{self.module}", __package__), self.name)

    def __get__(self, obj: object, owner: type | None = None) -> Callable[..., Any]:
        function = self.load()
        setattr(MemoryService, self.attribute, function)
        return function if obj is None else function.__get__(obj, owner)


class MemoryService(ServiceState):
    """The seven operations (remember, recall, read, update, forget, status, reindex) and the rest the edges use."""

    if (
        TYPE_CHECKING
    ):  # what a type checker sees: the functions themselves (a module name is rebound after its last use)
        remember = remember.remember
        recall = recall.recall
        context = context.context
        read = read.read
        update = update.update
        forget = forget.forget
        status = status.status
        embed_pending = reindex.embed_pending
        reindex = reindex.reindex
        export_to = export.export_to
        export = export.export
        known = known.known
        editable = browse.editable
        stores = browse.stores
        browse = browse.browse
        quarantined = quarantine.quarantined
        release = quarantine.release
        sync = git_sync.sync
        git_setup = git_sync.git_setup
    else:
        remember = _Operation("remember")
        recall = _Operation("recall")
        context = _Operation("context")
        read = _Operation("read")
        update = _Operation("update")
        forget = _Operation("forget")
        status = _Operation("status")
        embed_pending = _Operation("reindex")
        reindex = _Operation("reindex")
        export_to = _Operation("export")
        export = _Operation("export")
        known = _Operation("known")
        editable = _Operation("browse")
        stores = _Operation("browse")
        browse = _Operation("browse")
        quarantined = _Operation("quarantine")
        release = _Operation("quarantine")
        sync = _Operation("sync")
        git_setup = _Operation("sync")
