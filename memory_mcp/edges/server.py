"""MCP edge: seven tools, the `memory://context` resource and the `memory_start` prompt (stdio here; the
same server over Streamable HTTP in `edges/http/`).

Each handler translates arguments and errors, nothing more. What the model reads is kept lean: input
schemas without titles or `null` arms, one description per field, recall's text a compact rendering.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from typing import Annotated, Any, Literal, ParamSpec, TypeVar

import anyio.from_thread
from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from ..domain import answers, status_answers
from ..domain.answers import RecallAnswer
from ..domain.errors import InputError, MemoryMcpError
from ..domain.fields import BY_NAME, EDIT_FIELDS, EDIT_VALUES
from ..domain.memory import OptionalValues
from ..domain.models import (
    ForgetAnswer,
    Progress,
    ProgressFn,
    ReadAnswer,
    ReindexAnswer,
    RememberAnswer,
    StatusAnswer,
    UpdateAnswer,
)
from ..domain.provenance import Origin, mcp_origin
from ..domain.visible import visible, visible_data
from ..domain.vocabulary import (
    FORGET_MODES,
    PERSON_TRUSTS,
    RECALL_MODES,
    RESOLUTIONS,
    SCOPES,
    STATES,
    TOOL_TRUSTS,
    TYPES,
    UPDATE_OPS,
)
from ..tools.arguments import person_trust_refusal
from ..tools.service import MemoryService
from .answer_text import read_text, recall_text, remember_text, usage_guide

P = ParamSpec("P")
R = TypeVar("R")

INSTRUCTIONS = """Long-term memory kept as Markdown files the user can read and edit.
At session start read memory://context (or the memory_start prompt): the last handoff and what matters most.
Recall before answering questions about the user, their projects and past decisions; cite `path:line`.
Remember durable facts, preferences and decisions (not chit-chat); say trust=user-stated only for what the
user said. memory_remember lists memories the new one may contradict: settle each with the call it shows, or ask;
nothing is overwritten. Before the session ends, remember type=handoff: where you left off."""

# every tool takes `store` and `scope`; they are described once, on memory_remember (the model reads all tools)
StoreArg = str | None
# the argument words, built from the one vocabulary (Literal[tuple] is Literal of its items)
ScopeArg = Literal[SCOPES] | None
TypeName = Literal[TYPES]
StateName = Literal[STATES]
TrustName = Literal[TOOL_TRUSTS]  # a level only a person gives (`confirmed`) is not the tools' to write
RecallMode = Literal[RECALL_MODES]
UpdateOp = Literal[UPDATE_OPS]
Resolution = Literal[RESOLUTIONS]
ForgetMode = Literal[FORGET_MODES]


class LeanSchema(GenerateJsonSchema):
    """Input schemas as a model reads them: no `title` on fields or the model, `X | None` said as `X`
    (leaving an argument out means none), no `default: null`. Validation is unchanged: the SDK still
    validates against the pydantic argument model, which accepts null where the function does."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        json_schema = super().default_schema(schema)
        if "default" in json_schema and json_schema["default"] is None:
            del json_schema["default"]
        return json_schema

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        json_schema = super().model_schema(schema)
        json_schema.pop("title", None)
        return json_schema


def quick_to_validate(schema: dict[str, Any]) -> dict[str, Any]:
    """An output schema that says the same as pydantic's but costs a validating client less: every `$ref` written
    out in place (non-recursive models only). A nullable value stays `anyOf: [X, {type: null}]`, never a type array
    (`type: [X, "null"]`): clients that map tool schemas onto a single-`type` dialect reject or flatten those (the
    MCP Inspector's portability check warns on each; tests/test_tools_surface.py runs the same check).

    The SDK's client validates every structured result against the tool's output schema (jsonschema); written out
    in place, a recall's ~10 KB answer costs the client less CPU than through `$defs` lookups."""
    defs = schema.get("$defs", {})

    def rewrite(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [rewrite(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in defs and ref[8:] not in seen:
            merged = {**defs[ref[8:]], **{k: v for k, v in node.items() if k != "$ref"}}
            return rewrite(merged, (*seen, ref[8:]))
        return {k: rewrite(v, seen) for k, v in node.items() if k != "$defs"}

    out = rewrite(schema, ())
    if any(_refers(out)):  # a recursive model keeps its definitions
        out["$defs"] = defs
    return out


def _refers(node: Any) -> Iterator[bool]:
    if isinstance(node, dict):
        yield "$ref" in node
        for value in node.values():
            yield from _refers(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refers(item)


def argument_error(tool: str, exc: ValidationError, schema: dict[str, Any]) -> str:
    """Arguments the schema refuses, said plainly: the argument, what was wrong, the allowed values."""
    problems = []
    for err in exc.errors(include_url=False):
        name = ".".join(str(part) for part in err["loc"]) or "arguments"
        allowed = schema.get("properties", {}).get(str(err["loc"][0]) if err["loc"] else "", {}).get("enum")
        given = repr(err.get("input"))[:60]
        if err["type"] == "missing":
            problems.append(f"{name}: required")
        elif name == "trust" and err.get("input") in PERSON_TRUSTS:
            problems.append(person_trust_refusal(str(err["input"])))
        elif allowed is not None:
            problems.append(f"{name}: {given} is not one of {', '.join(map(str, allowed))}")
        else:
            problems.append(f"{name}: {given} is not valid ({err['msg'].lower()})")
    return f"Error executing tool {tool}: " + "; ".join(problems)


class LeanTool(Tool):
    """A tool whose argument errors name the argument and its allowed values, without the validation
    library's report (type codes, input repr, documentation URLs)."""

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        try:
            self.fn_metadata.validate_arguments(arguments)
        except ValidationError as exc:
            raise ToolError(argument_error(self.name, exc, self.parameters)) from None
        return await super().run(arguments, context, convert_result=convert_result)


def _tool_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Anticipated failures reach the model as readable tool errors. No answer and no error carries a hidden
    character a memory holds: an answer returned as a record (status, update, forget, reindex) is given back with
    each of them escaped (`<U+E0041>`), as `_served` gives the answers that carry memory text."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            answer = fn(*args, **kwargs)
        except MemoryMcpError as exc:
            raise ToolError(visible(str(exc))) from exc
        if isinstance(answer, BaseModel | answers.Record):  # a pydantic model or a plain record (status)
            data = answer.model_dump(mode="json")
            shown = visible_data(data)
            if shown != data:
                return type(answer).model_validate(shown)
        return answer

    return wrapper


class _Registry:
    """Collects the tools before the server exists (MCPServer takes them as `tools=`)."""

    def __init__(self) -> None:
        self.tools: list[Tool] = []

    def tool(self, title: str, annotations: ToolAnnotations, description: str) -> Callable[[Callable], Callable]:
        def register(fn: Callable) -> Callable:
            tool = LeanTool.from_function(
                _tool_errors(fn), title=title, description=description, annotations=annotations
            )
            tool.parameters = tool.fn_metadata.arg_model.model_json_schema(by_alias=True, schema_generator=LeanSchema)
            meta = tool.fn_metadata
            name = getattr(meta.output_model, "__name__", "")
            record = getattr(answers, name, None) or getattr(status_answers, name, None)
            if isinstance(record, type) and issubclass(record, answers.Record):
                # an answer declared as a plain dataclass (domain/answers.py, status_answers.py): the SDK would publish
                # a model of its bare type hints; pydantic's own schema of the dataclass keeps every field's description
                # and default
                tool.fn_metadata = FuncMetadata(arg_model=meta.arg_model, output_model=record, wrap_output=False)
            if tool.fn_metadata.output_schema is not None:
                tool.fn_metadata.output_schema = quick_to_validate(tool.fn_metadata.output_schema)
            self.tools.append(tool)
            return fn

        return register


REMEMBER = """Store one durable memory as a Markdown file. Types: fact (a stable truth), preference (how the user \
likes things), decision (a choice made, with its why), episode (something that happened, dated), reference \
(where to find something), knowledge (distilled how-to or background), handoff (where you left off: at most one \
active, a new one replaces it). trust: user-stated only for what the user said or confirmed; agent-inferred \
(default) for your own conclusions; imported for copied material. entities: the people, projects and systems it \
is about, in canonical names: they filter recall and group related memories. The same text again returns the \
original. `listed`: what this may contradict, ranked, with evidence and a resolve_conflict call \
(supersede, or keep_both: no conflict); `conflicts`: those written."""

RECALL = """Search memories and indexed documents in one ranked list. Each result cites path:line \
(open with memory_read) and has an id for memory_update. Without a query, type=handoff returns the current handoff."""

READ = """Read one memory by id or path (or a document path as recall cites it), at most 200 lines: \
text, frontmatter, sha256 (pass it as expected_sha256 to edit safely), supersede chain both ways, conflict history."""

UPDATE = f"""Change a memory. Each op takes its own fields:
- edit: any of title, body, {", ".join(EDIT_FIELDS)} (others unchanged); expected_sha256 \
refuses a stale write.
- supersede: by (the id replacing this one; this one is archived).
- set_state: state; reason when deprecating, and when reactivating a deprecated memory (deprecated → archived is \
refused).
- link: other_id (written both ways as related).
- resolve_conflict: pair_hash (no id needed) or other_id, resolution (keep_both | supersede), winner (default \
id), note."""

FORGET = """archive (kept, ranked lower), deprecate (kept, hidden from recall; reason required) or purge (deletes \
the file; only an archived or deprecated memory, and confirm=true required)."""

STATUS = """Counts, the current handoff, unresolved conflicts, reviews due, compaction candidates, unparseable \
files, index health."""

REINDEX = """Rebuild the derived index from the Markdown files (the canon never changes); verify=true first \
re-hashes every file and reports index/canon mismatches."""


def _described(name: str) -> Any:
    """A frontmatter field's argument description, as the field table declares it."""
    return Field(description=BY_NAME[name].description)


def _value_args(described: bool) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """A handler taking `**values` gets one argument per optional value the field table lets a caller set
    (`fields.EDIT_VALUES`: review_after, valid_from, ...) in its published signature, after `source`: the tool's
    input schema is derived from the table, and the handler passes them on as `OptionalValues`. `described`:
    with the table's descriptions (memory_update names them in its own description: the model reads it once)."""

    def derive(fn: Callable[P, R]) -> Callable[P, R]:
        signature = inspect.signature(fn, eval_str=True)
        params = list(signature.parameters.values())
        values = [p for p in params if p.kind is inspect.Parameter.VAR_KEYWORD]
        if [p.name for p in values] != ["values"]:
            raise TypeError(f"{fn.__name__}: a handler with value arguments takes **values")
        params.remove(values[0])
        at = [p.name for p in params].index("source") + 1
        params[at:at] = [
            inspect.Parameter(
                name,
                params[at - 1].kind,
                default=None,
                annotation=Annotated[str | None, _described(name)] if described else str | None,
            )
            for name in EDIT_VALUES
        ]
        fn.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        return fn

    return derive


def build_server(
    service: MemoryService, token_verifier: TokenVerifier | None = None, auth: AuthSettings | None = None
) -> MCPServer:
    """The MCP server over `service`; over HTTP, `token_verifier` and `auth` make it require a bearer token."""
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)
    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)
    registry = _Registry()
    tool = registry.tool

    @tool("Remember", ToolAnnotations(read_only_hint=False, idempotent_hint=True), REMEMBER)
    @_value_args(described=True)
    def memory_remember(
        title: Annotated[str, Field(description="One line; becomes the file's # heading.")],
        body: Annotated[str, Field(description="Markdown; the first paragraph is the recall excerpt.")],
        type: TypeName = "fact",
        trust: TrustName = "agent-inferred",
        entities: list[str] | None = None,
        source: Annotated[str | None, _described("source")] = None,
        supersedes: Annotated[list[str] | None, Field(description="Ids it replaces (they are archived).")] = None,
        store: Annotated[StoreArg, Field(description="Every tool: a sibling store's name (not a path).")] = None,
        scope: Annotated[
            ScopeArg,
            Field(
                description="Every tool: local = this project's, global = the account's; default: both to read, local to write."
            ),
        ] = None,
        private: Annotated[bool, Field(description="Never synced (`sync: local`); may hold a secret.")] = False,
        ctx: Context | None = None,
        **values: str | None,
    ) -> Annotated[CallToolResult, RememberAnswer]:
        answer = service.remember(
            title, body, type, trust, entities, source, supersedes, store=store, scope=scope, private=private,
            values=OptionalValues(**values), origin=tool_origin(ctx),
        )  # fmt: skip
        return _served(answer, remember_text(answer))

    @tool("Recall", read_only, RECALL)
    def memory_recall(
        query: Annotated[str | None, Field(description="Plain words, any language, no syntax.")] = None,
        limit: Annotated[int | None, Field(description="1-20, default 5.")] = None,
        type: TypeName | None = None,
        state: StateName | None = None,
        entity: str | None = None,
        include_deprecated: bool = False,
        store: StoreArg = None,
        scope: ScopeArg = None,
        mode: Annotated[
            RecallMode,
            Field(description="hybrid = + embeddings (if set up); auto = as configured."),
        ] = "auto",
        budget: Annotated[
            int | None,
            Field(description="Bytes instead of a count (at least 256)."),
        ] = None,
        as_of: Annotated[str | None, Field(description="YYYY-MM-DD: as it stood then.")] = None,
    ) -> Annotated[CallToolResult, RecallAnswer]:
        answer = service.recall(
            query, limit, type, state, entity, include_deprecated, store=store, scope=scope, mode=mode, budget=budget,
            as_of=as_of,
        )  # fmt: skip
        return _served(answer, recall_text(answer))

    @tool("Read", read_only, READ)
    def memory_read(
        id: str | None = None,
        path: str | None = None,
        from_line: Annotated[int | None, Field(ge=1)] = None,
        to_line: Annotated[int | None, Field(ge=1)] = None,
        store: StoreArg = None,
        scope: ScopeArg = None,
    ) -> Annotated[CallToolResult, ReadAnswer]:
        answer = service.read(id, path, from_line, to_line, store=store, scope=scope)
        return _served(answer, read_text(answer))

    @tool("Update", writes, UPDATE)
    @_value_args(described=False)
    def memory_update(
        op: UpdateOp,
        id: str | None = None,
        title: str | None = None,
        body: str | None = None,
        type: TypeName | None = None,
        trust: TrustName | None = None,
        entities: list[str] | None = None,
        source: str | None = None,
        state: StateName | None = None,
        reason: str | None = None,
        by: str | None = None,
        other_id: str | None = None,
        pair_hash: str | None = None,
        resolution: Resolution | None = None,
        winner: str | None = None,
        note: str | None = None,
        expected_sha256: str | None = None,
        store: StoreArg = None,
        scope: ScopeArg = None,
        ctx: Context | None = None,
        **values: str | None,
    ) -> UpdateAnswer:
        return service.update(
            op, id, title=title, body=body, type=type, trust=trust, entities=entities, source=source, state=state,
            reason=reason, by=by, other_id=other_id, pair_hash=pair_hash, resolution=resolution, winner=winner,
            note=note, expected_sha256=expected_sha256, store=store, scope=scope, values=OptionalValues(**values),
            origin=tool_origin(ctx),
        )  # fmt: skip

    @tool("Forget", ToolAnnotations(read_only_hint=False, destructive_hint=True), FORGET)
    def memory_forget(
        id: str,
        mode: ForgetMode,
        reason: str | None = None,
        confirm: bool = False,
        store: StoreArg = None,
        scope: ScopeArg = None,
    ) -> ForgetAnswer:
        return service.forget(id, mode, reason, confirm, store=store, scope=scope)

    @tool("Status", read_only, STATUS)
    def memory_status(store: StoreArg = None, scope: ScopeArg = None) -> StatusAnswer:
        return service.status(store=store, scope=scope)

    @tool("Reindex", ToolAnnotations(read_only_hint=False, idempotent_hint=True), REINDEX)
    def memory_reindex(
        ctx: Context, verify: bool = False, store: StoreArg = None, scope: ScopeArg = None
    ) -> ReindexAnswer:
        return service.reindex(verify, store=store, scope=scope, progress=_progress_notifier(ctx))

    server = MCPServer(
        name="memory-mcp",
        instructions=INSTRUCTIONS,
        version="0.1.0",
        tools=registry.tools,
        token_verifier=token_verifier,
        auth=auth,
    )

    @server.resource(
        "memory://context",
        name="context",
        title="Memory context",
        description="Read at session start: the current handoff, the most important memories, unresolved "
        "conflicts and reviews due, within a byte budget (context.budget_bytes).",
        mime_type="text/markdown",
    )
    def context() -> str:
        return _context_text(service)

    @server.resource(
        "memory://context{?budget}",
        name="context-budget",
        title="Memory context within a budget",
        description="memory://context within `budget` bytes of its Markdown text (UTF-8, at least 512), "
        "e.g. memory://context?budget=2048.",
        mime_type="text/markdown",
    )
    def context_within(budget: int | None = None) -> str:
        try:
            return _context_text(service, budget)
        except InputError as exc:
            raise ResourceError(str(exc)) from None

    @server.prompt(
        name="memory_start",
        title="Start with memory",
        description="The memory context for this session and how to use the memory tools.",
    )
    def memory_start() -> str:
        return usage_guide() + "\n\n" + _context_text(service)

    return server


def _served(answer: BaseModel, text: str) -> CallToolResult:
    """An answer that carries memory text: the compact text (memory text fenced) and the structured record, with
    every hidden character a memory holds escaped in both (`<U+E0041>`: no answer carries one as itself)."""
    return CallToolResult(
        content=[TextContent(type="text", text=visible(text))],
        structured_content=visible_data(answer.model_dump(mode="json")),
    )


def tool_origin(ctx: Context | None) -> Origin:
    """Who is calling: the client's name and version from its clientInfo (the handshake's in the 2025 era, the
    request's `_meta` in the stateless 2026-07-28 era: the SDK gives both as the session's client params), and
    over HTTP the authenticated principal."""
    info = None
    if ctx is not None:
        try:
            params = ctx.session.client_params
        except (AttributeError, ValueError):  # no request in flight (a direct call of the handler)
            params = None
        info = params.client_info if params is not None else None
    return mcp_origin(info.name if info else None, info.version if info else None, _principal(ctx))


def _principal(ctx: Context | None) -> str:
    token: AccessToken | None = get_access_token()
    if token is None and ctx is not None:  # a 2025-era session answers in its own task: ask the HTTP request
        try:
            request = ctx.request_context.request
        except (AttributeError, ValueError):
            request = None
        scope = getattr(request, "scope", None)
        user = scope.get("user") if isinstance(scope, dict) else None
        token = getattr(user, "access_token", None)
    if token is None:
        return ""
    from .http.access import STATIC_CLIENT_ID  # only an HTTP server has a token to ask about

    if token.client_id == STATIC_CLIENT_ID:
        return "static token"
    return f"token subject {token.subject}" if token.subject else f"token client {token.client_id}"


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


def _context_text(service: MemoryService, budget: int | None = None) -> str:
    """The context, or why it is unavailable (a busy or unreadable store must not fail the session start;
    a budget out of range is the reader's mistake, so it is an error)."""
    try:
        return visible(service.context(budget=budget).text)
    except InputError:
        raise
    except MemoryMcpError as exc:
        return f"# Memory context\n\nunavailable: {exc}\n"


def serve(service: MemoryService) -> None:
    try:
        build_server(service).run()
    finally:
        service.close()
