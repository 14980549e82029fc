"""MCP edge: seven tools over stdio. Each handler translates arguments and errors, nothing more."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Literal, ParamSpec, TypeVar

import anyio.from_thread
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from .errors import MemoryMcpError
from .models import (
    ForgetAnswer,
    Progress,
    ProgressFn,
    ReadAnswer,
    RecallAnswer,
    ReindexAnswer,
    RememberAnswer,
    StatusAnswer,
    UpdateAnswer,
)
from .service import MemoryService

P = ParamSpec("P")
R = TypeVar("R")

INSTRUCTIONS = """Long-term memory kept as Markdown files the user can read and edit.
Recall before answering questions about the user, their projects and past decisions; cite `path:line`.
Remember durable facts, preferences and decisions (not chit-chat). When memory_remember returns
conflicts, ask or decide explicitly with memory_update op=resolve_conflict: nothing is overwritten."""

StoreArg = Annotated[
    str | None,
    Field(description="Name of a sibling store to use instead of the default one (a name, not a path)."),
]
ScopeArg = Annotated[
    Literal["local", "global"] | None,
    Field(
        description="local = this project's memory, global = the account's. Default: both for recall and lookups by id; local (when a project is bound) for remember and status."
    ),
]
TypeName = Literal["fact", "preference", "decision", "episode", "reference", "knowledge", "handoff"]
StateName = Literal["active", "archived", "deprecated"]
TrustName = Literal["user-stated", "agent-inferred", "imported"]


def _tool_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Anticipated failures reach the model as readable tool errors."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except MemoryMcpError as exc:
            raise ToolError(str(exc)) from exc

    return wrapper


def build_server(service: MemoryService) -> MCPServer:
    server = MCPServer(name="memory-mcp", instructions=INSTRUCTIONS, version="0.1.0")
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)
    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)

    @server.tool(title="Remember", annotations=ToolAnnotations(read_only_hint=False, idempotent_hint=True))
    @_tool_errors
    def memory_remember(
        title: Annotated[str, Field(description="One-line title; becomes the file's `# heading`.")],
        body: Annotated[str, Field(description="Markdown body; its first paragraph is the recall excerpt.")],
        type: TypeName = "fact",
        trust: TrustName = "user-stated",
        entities: Annotated[list[str] | None, Field(description="People, projects, systems it is about.")] = None,
        source: Annotated[str | None, Field(description="Where this came from (conversation, URL, file).")] = None,
        review_after: Annotated[str | None, Field(description="YYYY-MM-DD: when to re-check it.")] = None,
        supersedes: Annotated[
            list[str] | None, Field(description="Ids this memory replaces (they are archived).")
        ] = None,
        store: StoreArg = None,
        scope: ScopeArg = None,
    ) -> RememberAnswer:
        """Store a memory as a Markdown file. The same text twice returns the original; neighbours that may
        contradict it come back as `conflicts` for you to judge (nothing is overwritten)."""
        return service.remember(
            title, body, type, trust, entities, source, review_after, supersedes, store=store, scope=scope
        )

    @server.tool(title="Recall", annotations=read_only)
    @_tool_errors
    def memory_recall(
        query: Annotated[str, Field(description="Plain words in any language; no search syntax needed.")],
        limit: Annotated[int | None, Field(description="1..20 results (settings may change both); default 5.")] = None,
        type: TypeName | None = None,
        state: StateName | None = None,
        entity: str | None = None,
        include_deprecated: bool = False,
        store: StoreArg = None,
        scope: ScopeArg = None,
        mode: Annotated[
            Literal["auto", "bm25", "hybrid"],
            Field(
                description="bm25 = keywords; hybrid = keywords fused with embeddings (when a provider is set up); "
                "auto = the configured default. The answer says which mode ran."
            ),
        ] = "auto",
    ) -> RecallAnswer:
        """Search memories (local and global scopes) and indexed documents in one ranked list; each result
        cites `path` and `line` (open it with memory_read) and explains its score. Near-duplicates are
        collapsed into the better-ranked result (`collapsed`)."""
        return service.recall(
            query, limit, type, state, entity, include_deprecated, store=store, scope=scope, mode=mode
        )

    @server.tool(title="Read", annotations=read_only)
    @_tool_errors
    def memory_read(
        id: str | None = None,
        path: Annotated[
            str | None, Field(description="memories/x.md, or an indexed document's path as recall cites it.")
        ] = None,
        from_line: Annotated[int | None, Field(ge=1)] = None,
        to_line: Annotated[int | None, Field(ge=1)] = None,
        store: StoreArg = None,
        scope: ScopeArg = None,
    ) -> ReadAnswer:
        """Read one memory (by id or path): text, frontmatter, supersede chain both ways, conflict history.
        At most 200 lines per call."""
        return service.read(id, path, from_line, to_line, store=store, scope=scope)

    @server.tool(title="Update", annotations=writes)
    @_tool_errors
    def memory_update(
        op: Literal["edit", "supersede", "set_state", "link", "resolve_conflict"],
        id: str,
        title: str | None = None,
        body: str | None = None,
        type: TypeName | None = None,
        trust: TrustName | None = None,
        entities: list[str] | None = None,
        source: str | None = None,
        review_after: str | None = None,
        state: Annotated[StateName | None, Field(description="set_state: the target state.")] = None,
        reason: Annotated[str | None, Field(description="Required to deprecate or to reactivate.")] = None,
        by: Annotated[str | None, Field(description="supersede: id of the memory replacing `id`.")] = None,
        other_id: Annotated[str | None, Field(description="link: id of the related memory.")] = None,
        pair_hash: Annotated[str | None, Field(description="resolve_conflict: the conflict's pair_hash.")] = None,
        resolution: Literal["keep_both", "supersede"] | None = None,
        winner: Annotated[str | None, Field(description="resolve_conflict with supersede: the id that wins.")] = None,
        note: str | None = None,
        expected_sha256: Annotated[
            str | None,
            Field(description="edit: refuse if the file's sha256 is no longer this (no lost write)."),
        ] = None,
        store: StoreArg = None,
        scope: ScopeArg = None,
    ) -> UpdateAnswer:
        """Change a memory: edit fields, supersede it by another, set its state, link two memories, or
        resolve a conflict pair."""
        return service.update(
            op, id, title, body, type, trust, entities, source, review_after, state, reason, by, other_id,
            pair_hash, resolution, winner, note, expected_sha256, store=store, scope=scope,
        )  # fmt: skip

    @server.tool(title="Forget", annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
    @_tool_errors
    def memory_forget(
        id: str,
        mode: Literal["archive", "deprecate", "purge"],
        reason: Annotated[str | None, Field(description="Required for deprecate.")] = None,
        confirm: Annotated[bool, Field(description="Required (true) for purge, which deletes the file.")] = False,
        store: StoreArg = None,
        scope: ScopeArg = None,
    ) -> ForgetAnswer:
        """Archive (kept, ranked lower), deprecate (kept, hidden from recall; reason required) or purge
        (file deleted; only an archived or deprecated one; confirm=true required). Nothing is ever deleted
        automatically."""
        return service.forget(id, mode, reason, confirm, store=store, scope=scope)

    @server.tool(title="Status", annotations=read_only)
    @_tool_errors
    def memory_status(store: StoreArg = None, scope: ScopeArg = None) -> StatusAnswer:
        """Counts, unresolved conflicts, reviews due, compaction candidates, unparseable files, index health."""
        return service.status(store=store, scope=scope)

    @server.tool(title="Reindex", annotations=ToolAnnotations(read_only_hint=False, idempotent_hint=True))
    @_tool_errors
    def memory_reindex(
        ctx: Context,
        verify: Annotated[bool, Field(description="Re-hash every file and report index/canon mismatches.")] = False,
        store: StoreArg = None,
        scope: ScopeArg = None,
    ) -> ReindexAnswer:
        """Rebuild the derived index from the Markdown files (nothing in the canon changes). Sends progress
        notifications (files indexed, then memories embedded) when the request carries a progress token."""
        return service.reindex(verify, store=store, scope=scope, progress=_progress_notifier(ctx))

    return server


def _progress_notifier(ctx: Context) -> ProgressFn:
    """The core's progress callback as MCP progress notifications (the SDK sends them only when the request
    carried a progress token). MCP wants `progress` to increase with every notification, so stages (each
    scope's files, then embeddings) are laid end to end. Tools run in a worker thread: each report is handed
    to the event loop; the core already limits them to about a hundred per stage."""
    stage: tuple[str, str] | None = None
    offset, last = 0, -1

    def notify(p: Progress) -> None:
        nonlocal stage, offset, last
        if (p.stage, p.scope) != stage:
            stage, offset = (p.stage, p.scope), max(last, 0)
        value = offset + p.done
        if value > last:
            last = value
            anyio.from_thread.run(ctx.report_progress, value, offset + p.total, p.message)

    return notify


def serve(service: MemoryService) -> None:
    try:
        build_server(service).run()
    finally:
        service.close()
