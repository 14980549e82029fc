"""The service facade: the operations over the bound project's local store and the account's global store.

Each operation is a function of tools/ (remember.py, recall.py, update.py, ...) that takes the shared
state (`ServiceState`: scopes, limits, ranking, embedder, clock) and returns its answer; `MemoryService`
holds that state and binds the functions as its methods, so the edges (MCP server, CLI, web view) call
`service.recall(...)` and translate. Every rule lives in those functions or the layers below them.
"""

from __future__ import annotations

from . import browse, context, export, forget, known, quarantine, read, recall, reindex, remember, status, update
from . import sync as git_sync
from .state import ServiceState


class MemoryService(ServiceState):
    """The seven operations (remember, recall, read, update, forget, status, reindex) and the rest the edges use."""

    # each right-hand side reads a module of tools/: a name is rebound to its function only after its last use
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
