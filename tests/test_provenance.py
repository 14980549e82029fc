"""Provenance and trust (issue 44): every memory records where it came from (`origin:`), the tool surface cannot
give a trust level only a person gives, and what a teammate's sync brought is named before it is trusted.

Through the public surface: the real stdio server spoken to by the SDK's client with a named clientInfo (both
protocol eras), the CLI as a subprocess, and a sync between two clones of a real bare remote."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import mcp
import pytest
from mcp.types import Implementation

from .helpers import Tools, frontmatter, server_env

AGENT = Implementation(name="test-agent", version="9.1")


def _stdio(root: Path, mode: str, info: Implementation | None = AGENT) -> mcp.Client:
    params = mcp.StdioServerParameters(
        command=sys.executable,
        args=["-m", "memory_mcp", "--store", str(root)],
        env=server_env(root),
        cwd=str(root.parent),
    )
    return mcp.Client(params, mode=mode, client_info=info)


def cli(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "memory_mcp", "--store", str(store), *args],
        env=server_env(store),
        cwd=store.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done


def _file(store: Path, answer: dict) -> Path:
    return store / answer["path"]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_tool_call_records_the_clients_name_and_version_and_cannot_confirm(tmp_path: Path, mode: str) -> None:
    store = tmp_path / "store"
    async with _stdio(store, mode) as client:
        tools = Tools(client)
        made = await tools.remember("Deploys go through the release branch", "Never from main.", trust="user-stated")
        assert frontmatter(_file(store, made))["origin"] == "mcp test-agent 9.1"
        refused = await tools.err("memory_remember", title="Use tabs", body="Tabs, not spaces.", trust="confirmed")
        assert "only by a person" in refused and "CLI" in refused
        refused = await tools.err("memory_update", op="edit", id=made["id"], trust="confirmed")
        assert "only by a person" in refused
        assert frontmatter(_file(store, made))["trust"] == "user-stated"


def test_the_cli_records_itself_and_a_person_confirms_through_it(tmp_path: Path) -> None:
    store = tmp_path / "store"
    done = cli(store, "remember", "Team prefers tabs", "Tabs in every repository.", "--json")
    assert done.returncode == 0, done.stderr
    (path,) = (store / "memories").glob("*.md")
    meta = frontmatter(path)
    assert meta["origin"] == "cli" and meta["trust"] == "user-stated"
    done = cli(store, "update", "edit", meta["id"], "--trust", "confirmed")
    assert done.returncode == 0, done.stderr
    assert frontmatter(path)["trust"] == "confirmed"
    assert frontmatter(path)["origin"] == "cli"  # where it came from does not change with an edit
