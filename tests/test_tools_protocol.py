"""The real stdio server speaks both protocol generations and advertises the seven tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import TOOL_NAMES, stdio_tools

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_tools_listed_and_callable_in_both_protocol_modes(store: Path, mode: str) -> None:
    async with stdio_tools(store, mode=mode) as t:
        listed = await t.client.list_tools()
        by_name = {tool.name: tool for tool in listed.tools}
        assert set(by_name) == TOOL_NAMES
        for tool in listed.tools:
            assert tool.description, f"{tool.name} has no description"
            assert tool.output_schema is not None, f"{tool.name} has no output schema"
        # read-only tools say so; forget is flagged destructive
        assert by_name["memory_recall"].annotations.read_only_hint is True
        assert by_name["memory_forget"].annotations.destructive_hint is True

        made = await t.remember(f"Protocol {mode} check", f"The {mode} handshake stores and recalls memories.")
        assert made["created"] is True
        assert (store / made["path"]).is_file()
        found = await t.recall(f"{mode} handshake")
        assert [r["id"] for r in found["results"]] == [made["id"]]
        # errors reach the model as readable tool errors, not protocol failures
        message = await t.err("memory_read", id="no-such-id")
        assert "no memory with id 'no-such-id'" in message
        r = await t.client.call_tool("memory_nonexistent", {})
        assert r.is_error
        assert "limit" in await t.err("memory_recall", query="x", limit="many")
        assert "mode" in await t.err("memory_forget", id="x", mode="shred")


async def test_output_schemas_are_written_out_for_quick_validation(store: Path) -> None:
    """Every SDK client validates each structured answer against the tool's output schema: the schemas are
    published without `$ref` indirection (the same constraints: a recall's answer still validates, and a wrong
    type in a nullable field is still refused). Nullable fields stay anyOf, not type lists (issue 45: portable)."""
    from jsonschema.validators import validator_for

    async with stdio_tools(store) as t:
        listed = await t.client.list_tools()
        await t.remember("Schema check", "Answers validate against the published schema.")
        answer = await t.recall("schema check")
    for tool in listed.tools:
        text = str(tool.output_schema)
        assert "$ref" not in text and "$defs" not in text, tool.name
        assert "'type': [" not in text, tool.name
    schema = {tool.name: tool.output_schema for tool in listed.tools}["memory_recall"]
    validator = validator_for(schema)(schema)
    assert not list(validator.iter_errors(answer))
    wrong = {**answer, "as_of": 7}
    assert list(validator.iter_errors(wrong))
    wrong = {**answer, "results": [{**answer["results"][0], "cosine": "high"}]}
    assert list(validator.iter_errors(wrong))
