"""What the model sees, through the real stdio server: lean tool schemas that still say everything,
recall's compact text beside the full structured record, plain argument errors, the trust default,
per-op update fields, and malformed JSON on stdin."""

from __future__ import annotations

import json
import select
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .helpers import EXAMPLE_STORE, TOOL_NAMES, Tools, frontmatter, server_env, stdio_tools
from .npm_tools import INSPECTOR, npm_package

pytestmark = pytest.mark.anyio

TOOL_SURFACE_BUDGET = 7000  # bytes of name + description + inputSchema over all tools (issue 10: was 11.3 KB)
RECALL_TEXT_BUDGET = 2500  # bytes of recall's text content for 5 results on the example store (was ~7 KB)
REMEMBER_TEXT_BUDGET = 300  # bytes of remember's text for a memory with no conflict (issue 24: ~1.1-1.5 KB of JSON)
CONFLICT_TEXT_BUDGET = 900  # ... and with one conflict and one related neighbour (was 2.7 KB)


def _keys(schema: Any) -> set[str]:
    """Every JSON-schema keyword used anywhere in `schema` (property names are not keywords)."""
    if isinstance(schema, list):
        return {k for v in schema for k in _keys(v)}
    if not isinstance(schema, dict):
        return set()
    keys = set(schema) | {k for key, v in schema.items() if key != "properties" for k in _keys(v)}
    return keys | {k for v in schema.get("properties", {}).values() for k in _keys(v)}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_tool_surface_is_lean_and_still_complete(store: Path, mode: str) -> None:
    async with stdio_tools(store, mode=mode) as t:
        tools = (await t.client.list_tools()).tools
    assert {tool.name for tool in tools} == TOOL_NAMES
    seen = 0
    for tool in tools:
        wire = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
        shown = {k: wire[k] for k in ("name", "description", "inputSchema")}
        seen += len(json.dumps(shown, ensure_ascii=False).encode("utf-8"))  # json.dumps spacing, as issue 10 counted
        schema = wire["inputSchema"]
        assert {"title", "anyOf"}.isdisjoint(_keys(schema)), f"{tool.name}: {schema}"
        assert None not in [p.get("default", 0) for p in schema["properties"].values()], tool.name
        assert tool.output_schema is not None, f"{tool.name} lost its outputSchema"
        lines = tool.description.splitlines()
        assert lines and not any(line.startswith(" ") for line in lines), f"{tool.name}: indented description"
    assert seen <= TOOL_SURFACE_BUDGET, seen

    by_name = {tool.name: tool for tool in tools}
    remember = by_name["memory_remember"]
    # every type, every trust value and what entities are for is said where the model decides
    for word in ("fact", "preference", "decision", "episode", "reference", "knowledge", "handoff"):
        assert word in remember.description
    for word in ("user-stated", "agent-inferred", "imported", "entities", "conflicts", "resolve_conflict"):
        assert word in remember.description
    props = remember.input_schema["properties"]
    assert props["trust"] == {
        "default": "agent-inferred",
        "enum": ["user-stated", "agent-inferred", "imported"],
        "type": "string",
    }
    assert props["entities"] == {"items": {"type": "string"}, "type": "array"}  # optional: no null arm
    assert "store" in props["store"]["description"] and "local" in props["scope"]["description"]
    # update: each op names its own fields
    update = by_name["memory_update"].description
    for line in ("- edit: any of title, body", "- supersede: by", "- set_state: state", "- link: other_id"):
        assert line in update
    assert "- resolve_conflict: pair_hash (no id needed) or other_id" in update
    # the schema still validates what it did: null is accepted where the argument is optional
    assert by_name["memory_recall"].input_schema.get("required", []) == []


async def test_recall_text_is_compact_and_the_record_stays_structured(store: Path) -> None:
    shutil.copytree(EXAMPLE_STORE, store, ignore=shutil.ignore_patterns(".index"))
    async with stdio_tools(store) as t:
        first = await t.raw("memory_recall", query="postgres backup", limit=5)
        assert "index: rebuilt" in first.content[0].text  # something happened: one line says what
        r = await t.raw("memory_recall", query="postgres backup", limit=5)
    assert not r.is_error
    [block] = r.content
    text = block.text
    answer = r.structured_content
    assert len(answer["results"]) == 5
    assert len(text.encode("utf-8")) <= RECALL_TEXT_BUDGET, len(text.encode("utf-8"))
    assert "index:" not in text  # nothing happened on the second call: no index line
    assert not text.lstrip().startswith("{")
    for n, res in enumerate(answer["results"], 1):
        block = "\n".join(_result_block(text, n))
        assert block.startswith(f"{n}. ({res['type']}")
        assert f"{res['path']}:{res['line']}" in block and res["id"] in block
        assert f"score {res['score']:.2f}" in block
        # the memory's own text only inside the fence: a model can tell it from instructions
        assert f"\n~~~memory\n{res['title']}\n" in block and block.endswith("\n~~~")
        assert set(res["components"]) >= {"text", "trust", "freshness", "heat", "coverage"}  # full record kept
    assert answer["index"]["reconcile"]["scanned"] == 35 and answer["plan"]


async def test_recall_text_marks_a_result_in_an_unresolved_conflict_and_names_the_other(tools: Tools) -> None:
    tabs = ("Alice wants tabs in atlas-web", "Alice Kim wants tabs for indentation in the atlas-web frontend code.")
    spaces = ("Alice wants 2-space indentation in atlas-web", "Alice Kim wants 2-space indentation in the atlas-web frontend code, not tabs.")  # fmt: skip
    a = await tools.remember(*tabs, type="preference", entities=["alice-kim", "atlas-web"])
    b = await tools.remember(*spaces, type="preference", entities=["atlas-web", "alice-kim"])
    [pair] = [c["pair_hash"] for c in b["conflicts"]]
    calm = await tools.remember("atlas-web deploys from main", "The atlas-web frontend deploys from main on merge.")
    assert calm["conflicts"] == []

    r = await tools.raw("memory_recall", query="atlas-web frontend indentation", limit=5)
    text, answer = r.content[0].text, r.structured_content
    number = {res["id"]: n for n, res in enumerate(answer["results"], 1)}
    assert {a["id"], b["id"], calm["id"]} <= set(number), text
    by_id = {res["id"]: res for res in answer["results"]}
    assert by_id[a["id"]]["conflicts"] == [{"pair_hash": pair, "other_id": b["id"], "other_title": spaces[0]}]
    assert by_id[b["id"]]["conflicts"] == [{"pair_hash": pair, "other_id": a["id"], "other_title": tabs[0]}]
    assert by_id[calm["id"]]["conflicts"] == []
    # each result's block: its three lines, then the conflict line; the calm one has none
    blocks = {res["id"]: _result_block(text, n) for n, res in enumerate(answer["results"], 1)}
    for mine, other in ((a, b), (b, a)):
        line = f"   ! unresolved conflict: contradicted by result {number[other['id']]} (pair_hash {pair})"
        assert blocks[mine["id"]][-1] == line, text
    assert "conflict" not in "\n".join(blocks[calm["id"]])

    # the other side not among the results: named by id (its title is memory text, kept inside fences), so the
    # model can open it
    one = await tools.raw("memory_recall", query="tabs for indentation", limit=1)
    (only,) = one.structured_content["results"]
    assert only["id"] == a["id"], one.content[0].text
    assert one.content[0].text.splitlines()[5] == (
        f"   ! unresolved conflict: contradicted by id {b['id']} (pair_hash {pair})"
    )

    await tools.ok("memory_update", op="resolve_conflict", id=a["id"], pair_hash=pair, resolution="keep_both")
    settled = await tools.raw("memory_recall", query="atlas-web frontend indentation", limit=5)
    assert "conflict" not in settled.content[0].text
    assert all(res["conflicts"] == [] for res in settled.structured_content["results"])


async def test_remember_text_is_compact_and_says_what_to_do_with_a_conflict(tools: Tools) -> None:
    tabs = ("Alice wants tabs in atlas-web", "Alice Kim wants tabs for indentation in the atlas-web frontend code.")
    spaces = ("Alice wants 2-space indentation in atlas-web", "Alice Kim wants 2-space indentation in the atlas-web frontend code, not tabs.")  # fmt: skip
    first = await tools.raw("memory_remember", title=tabs[0], body=tabs[1], type="preference", entities=["alice-kim", "atlas-web"])  # fmt: skip
    a, text = first.structured_content, first.content[0].text
    assert len(text.encode("utf-8")) <= REMEMBER_TEXT_BUDGET, text
    assert not text.lstrip().startswith("{") and '"reconcile"' not in text and "scanned" not in text
    assert text.splitlines()[0] == f"remembered: {a['path']} id {a['id']} (global)"
    assert a["index"]["scopes"][0]["reconcile"] and a["created"] is True  # the full record stays structured

    second = await tools.raw("memory_remember", title=spaces[0], body=spaces[1], type="preference", entities=["alice-kim", "atlas-web"])  # fmt: skip
    b, text = second.structured_content, second.content[0].text
    assert len(text.encode("utf-8")) <= CONFLICT_TEXT_BUDGET, len(text.encode("utf-8"))
    [c] = b["conflicts"]
    [item] = b["listed"]  # issue 42: every memory it may contradict, best first, each with its one call
    lines = text.splitlines()
    assert lines[0] == f"remembered: {b['path']} id {b['id']} (global)"
    assert lines[1] == "1 listed, best first, that this may contradict or replace; 1 written as open conflict(s)."
    assert lines[2].startswith("Settle each with its call: supersede if this replaces it, keep_both if not a conflict")
    assert lines[3] == "~~~memory listed"  # the listed memories' text is quoted as data (issue 44)
    assert lines[4].startswith(f"1. {tabs[0][:30]}") and f"(preference; conflict {item['weight']:.2f}): " in lines[4]
    assert lines[5] == "~~~"
    assert lines[6] == f"1. memory_update op=resolve_conflict id={b['id']} other_id={a['id']} resolution=supersede"
    assert item["id"] == c["id"] == a["id"] and item["written"] and c["reasons"]
    assert c["text_similarity"] > 0 and "text_similarity" not in text  # numbers stay in the structured record

    again = await tools.raw("memory_remember", title=tabs[0], body=tabs[1])
    assert again.content[0].text == f"already remembered (active), nothing written: {a['path']} id {a['id']} (global)"


def _result_block(text: str, n: int) -> list[str]:
    """The lines of the n-th result in recall's text: from its `n. ` line up to the next result's."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{n}. "))
    end = next((i for i, line in enumerate(lines) if line.startswith(f"{n + 1}. ")), len(lines))
    return lines[start:end]


@pytest.mark.parametrize(
    "tool, args, argument, allowed",
    [
        ("memory_remember", {"title": "t", "body": "b", "type": "rumour"}, "type", "fact, preference, decision"),
        ("memory_remember", {"title": "t", "body": "b", "trust": "gospel"}, "trust", "user-stated, agent-inferred"),
        ("memory_recall", {"query": "x", "mode": "psychic"}, "mode", "auto, bm25, hybrid"),
        ("memory_recall", {"query": "x", "state": "gone"}, "state", "active, archived, deprecated"),
        ("memory_forget", {"id": "x", "mode": "shred"}, "mode", "archive, deprecate, purge"),
        ("memory_update", {"id": "x", "op": "rename"}, "op", "edit, supersede, set_state, link, resolve_conflict"),
        ("memory_status", {"scope": "planet"}, "scope", "local, global"),
    ],
)
async def test_invalid_enum_names_the_argument_and_its_values_plainly(
    tools: Tools, tool: str, args: dict, argument: str, allowed: str
) -> None:
    message = await tools.err(tool, **args)
    assert f"{argument}: " in message and allowed in message, message
    for noise in ("pydantic", "http", "literal_error", "validation error", "input_type", "Input should"):
        assert noise not in message, message


async def test_other_argument_errors_are_plain_too(tools: Tools, store: Path) -> None:
    message = await tools.err("memory_recall", query="x", limit="many")
    assert "limit: 'many' is not valid" in message and "http" not in message and "pydantic" not in message
    assert "title: required" in await tools.err("memory_remember", body="no title")
    assert not (store / "memories").exists() or not list((store / "memories").glob("*.md"))


async def test_trust_defaults_to_agent_inferred(tools: Tools, store: Path) -> None:
    made = await tools.remember("Probably prefers dark mode", "Inferred from their editor screenshots.")
    assert frontmatter(store / made["path"])["trust"] == "agent-inferred"
    said = await tools.remember("Prefers dark mode", "The user said so.", type="preference", trust="user-stated")
    assert frontmatter(store / said["path"])["trust"] == "user-stated"


async def test_update_errors_name_the_ops_missing_or_foreign_field(mem_tools: Tools) -> None:
    t = mem_tools
    a = (await t.remember("Grafana dashboards", "Dashboards for atlas-api live in Grafana."))["id"]
    missing = {
        "edit": "op=edit needs at least one of title, body",
        "supersede": "by: op=supersede needs `by`",
        "set_state": "state: op=set_state needs `state`",
        "link": "other_id: op=link needs `other_id`",
        "resolve_conflict": "pair_hash: op=resolve_conflict needs `pair_hash`",
    }
    for op, says in missing.items():
        assert says in await t.err("memory_update", op=op, id=a), op
    assert "body: op=set_state does not take body (it takes state, reason)" in await t.err(
        "memory_update", op="set_state", id=a, state="archived", body="x"
    )
    assert "op=supersede does not take other_id" in await t.err("memory_update", op="supersede", id=a, other_id=a)
    # nothing was changed by the refusals
    assert (await t.read(id=a))["frontmatter"]["state"] == "active"


def _line(proc: subprocess.Popen, timeout: float = 20.0) -> dict[str, Any]:
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "the server did not answer"
    return json.loads(proc.stdout.readline())


def _send(proc: subprocess.Popen, text: str) -> None:
    proc.stdin.write(text + "\n")
    proc.stdin.flush()


def test_malformed_json_on_stdin_does_not_stop_the_server(store: Path) -> None:
    """The SDK's stdio transport turns an unparsable line into an exception item that its dispatcher
    drops (no -32700 reply; see docs/design/guarantees.md). What we guarantee: the server keeps serving,
    and the next request is the next thing answered."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "memory_mcp", "--store", str(store)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=server_env(store),
        cwd=store.parent,
    )
    try:
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        _send(proc, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}))
        assert _line(proc)["id"] == 1
        _send(proc, json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        _send(proc, '{"jsonrpc": "2.0", "id": 2, "method": "tools/list"')  # cut short
        _send(proc, "not json at all")
        _send(proc, json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}))
        reply = _line(proc)
        assert reply["id"] == 3 and len(reply["result"]["tools"]) == len(TOOL_NAMES)
        assert proc.poll() is None
    finally:
        proc.stdin.close()
        proc.wait(timeout=20)


# what the MCP Inspector CLI's schema portability check (2.12.0) warns about, as it walks every subschema:
# a `type` array such as ["string", "null"], a schema that constrains nothing, a bare boolean schema, a remote $ref
_CONSTRAINING = frozenset(
    "type enum const multipleOf maximum exclusiveMaximum minimum exclusiveMinimum maxLength minLength pattern format "
    "contentMediaType contentEncoding contentSchema maxItems minItems uniqueItems maxContains minContains "
    "maxProperties minProperties required dependentRequired allOf anyOf oneOf not items prefixItems contains "
    "additionalItems unevaluatedItems properties patternProperties additionalProperties unevaluatedProperties "
    "propertyNames dependentSchemas dependencies $ref $dynamicRef $recursiveRef".split()
)
_SCHEMA_MAPS = ("properties", "patternProperties", "dependentSchemas", "$defs", "definitions")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_ONE = ("items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else")


def portability_findings(node: Any, path: str = "", keyword: str | None = None) -> list[str]:
    """The Inspector's portability warnings for one schema, as `path: what`."""
    if isinstance(node, bool):
        return [] if keyword in ("additionalProperties", "unevaluatedProperties", "items") else [f"{path}: bare {node}"]
    if not isinstance(node, dict):
        return []
    found = []
    if isinstance(node.get("type"), list):
        found.append(f"{path}: type array {node['type']}")
    if isinstance(node.get("$ref"), str) and not node["$ref"].startswith("#"):
        found.append(f"{path}: remote $ref")
    if keyword != "not" and not (set(node) & _CONSTRAINING or ("if" in node and ("then" in node or "else" in node))):
        found.append(f"{path}: constrains nothing")
    for key in _SCHEMA_MAPS:
        for name, sub in (node.get(key) or {}).items():
            found += portability_findings(sub, f"{path}.{key}.{name}", key)
    for key in _SCHEMA_LISTS:
        for i, sub in enumerate(node.get(key) or []):
            found += portability_findings(sub, f"{path}.{key}[{i}]", key)
    for key in _SCHEMA_ONE:
        if key in node:
            found += portability_findings(node[key], f"{path}.{key}", key)
    return found


async def test_tool_schemas_are_portable_and_output_stays_structured(store: Path) -> None:
    """Issue 45: output schemas said nullable values as `type: ["string", "null"]` (54 Inspector warnings across
    the 7 tools); strict function-calling clients reject or flatten those. A nullable value is an anyOf now."""
    async with stdio_tools(store) as t:
        tools = (await t.client.list_tools()).tools
        made = await t.raw("memory_remember", title="Deploys run on Fridays", body="We deploy atlas-web on Fridays.")
        recalled = await t.raw("memory_recall", query="deploy fridays")
    findings = []
    for tool in tools:
        wire = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
        assert "outputSchema" in wire, f"{tool.name} lost its outputSchema"
        for kind in ("inputSchema", "outputSchema"):
            findings += [f"{tool.name} {kind}{f}" for f in portability_findings(wire[kind])]
    assert findings == []
    # nullable values still come back as null in the structured answer, validated by the SDK's client
    assert not made.is_error and not recalled.is_error
    [result] = recalled.structured_content["results"]
    assert result["cosine"] is None and result["continues"] is None and result["title"] == "Deploys run on Fridays"


@pytest.mark.npm
def test_inspector_cli_finds_no_portability_warnings(store: Path) -> None:
    """The MCP Inspector CLI itself (npm; skipped without it): 0 errors and 0 warnings on tools/list."""
    inspector = npm_package(INSPECTOR, "mcp-inspector")
    command = [str(inspector), "--cli", sys.executable, "-m", "memory_mcp", "--store", str(store)]
    done = subprocess.run(
        [*command, "--method", "tools/list", "--strict"],
        capture_output=True,
        text=True,
        timeout=120,
        env=server_env(store),
    )
    assert done.returncode == 0, done.stderr
    assert "portability" not in done.stderr.lower() and "Warning" not in done.stderr, done.stderr
    assert {tool["name"] for tool in json.loads(done.stdout)["tools"]} == TOOL_NAMES
    call = subprocess.run(
        [*command, "--method", "tools/call", "--tool-name", "memory_status", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=server_env(store),
    )
    assert call.returncode == 0, call.stderr
    assert json.loads(call.stdout)["result"]["structuredContent"]["total"] == 0
    # resources and prompts as before
    for args, check in (
        (["--method", "resources/read", "--uri", "memory://context"], lambda r: r["contents"][0]["text"]),
        (["--method", "prompts/get", "--prompt-name", "memory_start"], lambda r: r["messages"][0]["content"]["text"]),
    ):
        done = subprocess.run([*command, *args], capture_output=True, text=True, timeout=120, env=server_env(store))
        assert done.returncode == 0, done.stderr
        assert "# Memory context" in check(json.loads(done.stdout)), done.stdout
