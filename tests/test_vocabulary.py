"""One vocabulary: the MCP input schemas and the CLI choices offer exactly the words of
`domain/vocabulary.py`, read from the real stdio server and the real `memory-mcp --help`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from memory_mcp.domain import vocabulary as v

from .helpers import stdio_tools
from .test_cli import run

pytestmark = pytest.mark.anyio


def _enum(schema: dict[str, Any], prop: str) -> list[str]:
    spec = schema["properties"][prop]
    return spec["enum"] if "enum" in spec else next(s["enum"] for s in spec.get("anyOf", []) if "enum" in s)


async def test_the_mcp_schemas_offer_the_vocabulary(store: Path) -> None:
    async with stdio_tools(store) as t:
        tools = {tool.name: tool.input_schema for tool in (await t.client.list_tools()).tools}
    recall, update, forget = tools["memory_recall"], tools["memory_update"], tools["memory_forget"]
    assert _enum(recall, "type") == list(v.TYPES)
    assert _enum(recall, "state") == list(v.STATES)
    assert _enum(recall, "mode") == list(v.RECALL_MODES)
    assert _enum(tools["memory_remember"], "trust") == list(v.TOOL_TRUSTS)  # `confirmed` is a person's to give
    assert _enum(update, "op") == list(v.UPDATE_OPS)
    assert _enum(update, "resolution") == list(v.RESOLUTIONS)
    assert _enum(forget, "mode") == list(v.FORGET_MODES)
    for name, schema in tools.items():
        assert _enum(schema, "scope") == list(v.SCOPES), name


def _choices(help_text: str, flag: str) -> list[str]:
    found = re.search(re.escape(flag) + r" \{([^}]*)\}", help_text)
    assert found, f"{flag} has no choices in:\n{help_text}"
    return found.group(1).split(",")


def test_the_cli_offers_the_vocabulary(store: Path) -> None:
    recall = run(store, "recall", "--help").stdout
    assert _choices(recall, "--type") == list(v.TYPES)
    assert _choices(recall, "--state") == list(v.STATES)
    assert _choices(recall, "--mode") == list(v.RECALL_MODES)
    assert _choices(recall, "--scope") == list(v.SCOPES)
    assert _choices(run(store, "remember", "--help").stdout, "--trust") == list(v.TRUSTS)
