"""Helpers for the test suite: a real stdio server, an in-memory client, and canon-file utilities.

The stdio helper starts `python -m memory_mcp --store <tmp>` and talks to it with the SDK's
`mcp.Client`, so tests go through the same process boundary, JSON-RPC framing and schema
validation a real MCP client does. Files under `<store>/memories/` are written by hand between
calls to play the person editing their memories in an editor.
"""

from __future__ import annotations

import os
import queue
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp
import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from ruamel.yaml import YAML

from memory_mcp.edges import cli
from memory_mcp.edges.server import build_server
from memory_mcp.tools.service import MemoryService

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_STORE = REPO / "example_store"
TOOL_NAMES = {
    "memory_remember",
    "memory_recall",
    "memory_read",
    "memory_update",
    "memory_forget",
    "memory_status",
    "memory_reindex",
}


def server_env(root: Path) -> dict[str, str]:
    # the SDK passes only a short allow-list to the child: give it what it needs, and a HOME that
    # is not the developer's, so nothing can touch a real ~/.memory-mcp
    return {
        "HOME": str(root.parent),
        "PATH": os.environ.get("PATH", ""),
        "MEMORY_MCP_ROOT": str(root),
        "PYTHONPATH": str(REPO),
        "PYTHONDONTWRITEBYTECODE": "1",
    }


class Tools:
    """Thin wrapper: `ok()` asserts success and returns the structured answer, `err()` the error text."""

    def __init__(self, client: mcp.Client) -> None:
        self.client = client

    async def raw(self, name: str, **args: Any) -> Any:
        return await self.client.call_tool(name, {k: v for k, v in args.items() if v is not None})

    async def ok(self, name: str, **args: Any) -> dict[str, Any]:
        r = await self.raw(name, **args)
        assert not r.is_error, f"{name}({_short(args)}) failed: {result_text(r)}"
        assert r.structured_content is not None, f"{name} returned no structured content"
        return r.structured_content

    async def err(self, name: str, **args: Any) -> str:
        r = await self.raw(name, **args)
        assert r.is_error, f"{name}({_short(args)}) should have failed but answered {r.structured_content}"
        return result_text(r)

    async def remember(self, title: str, body: str, **kw: Any) -> dict[str, Any]:
        return await self.ok("memory_remember", title=title, body=body, **kw)

    async def recall(self, query: str, **kw: Any) -> dict[str, Any]:
        return await self.ok("memory_recall", query=query, **kw)

    async def recall_ids(self, query: str, **kw: Any) -> list[str]:
        kw.setdefault("limit", 20)
        return [r["id"] for r in (await self.recall(query, **kw))["results"]]

    async def read(self, **kw: Any) -> dict[str, Any]:
        return await self.ok("memory_read", **kw)

    async def status(self) -> dict[str, Any]:
        return await self.ok("memory_status")


def _short(args: dict[str, Any]) -> str:
    text = repr(args)
    return text if len(text) <= 300 else text[:300] + "…"


def result_text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


@asynccontextmanager
async def stdio_tools(root: Path, mode: str = "auto", env: dict[str, str] | None = None) -> AsyncIterator[Tools]:
    """One real `memory-mcp` process on `root`, spoken to over stdio (`env`: extra variables, e.g. settings)."""
    params = mcp.StdioServerParameters(
        command=sys.executable,
        args=["-m", "memory_mcp", "--store", str(root)],
        env=server_env(root) | (env or {}),
        cwd=str(root.parent),
    )
    async with mcp.Client(params, mode=mode) as client:
        yield Tools(client)


@asynccontextmanager
async def memory_tools(root: Path) -> AsyncIterator[Tools]:
    """The same server in process (the fast path for many small cases)."""
    service = MemoryService(root)
    try:
        async with mcp.Client(build_server(service)) as client:
            yield Tools(client)
    finally:
        service.close()


# ---------------------------------------------------------------- canon files by hand


def hand_memory(
    mem_id: str,
    title: str,
    body: str,
    *,
    state: str = "active",
    type: str = "fact",
    entities: list[str] | None = None,
    extra: str = "",
) -> str:
    """A canon file as a person would type it."""
    ents = ", ".join(entities or [])
    return (
        f"---\nid: {mem_id}\ntype: {type}\nstate: {state}\ntrust: user-stated\nentities: [{ents}]\n"
        f"created: 2026-01-05T10:00:00Z\nupdated: 2026-01-05T10:00:00Z\n{extra}---\n# {title}\n\n{body}\n"
    )


def write_file(path: Path, text: str) -> None:
    """Write like an editor would (in place); the next tool call must notice."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def frontmatter(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), f"{path} has no frontmatter"
    return YAML(typ="safe").load(text[4 : text.index("\n---", 3)]) or {}


def settle() -> None:
    """Let files just written age past the reconciler's racy window (50 ms)."""
    time.sleep(0.12)


def db_path(root: Path) -> Path:
    return root / ".index" / "index.sqlite3"


def tamper(root: Path, sql: str, params: tuple = ()) -> None:
    """Change the derived index behind the server's back (as a bug or a stray tool might)."""
    conn = sqlite3.connect(db_path(root), timeout=30)
    try:
        with conn:
            cur = conn.execute(sql, params)
            assert cur.rowcount >= 1, f"tamper changed nothing: {sql}"
    finally:
        conn.close()


def reconcile_of(answer: dict[str, Any]) -> dict[str, Any]:
    return answer["index"]["reconcile"]


# ---------------------------------------------------------------- the server over Streamable HTTP


@dataclass
class HttpServer:
    """A running `memory-mcp serve --http` process on a free loopback port."""

    url: str  # the MCP endpoint, http://127.0.0.1:PORT/mcp
    token_file: Path
    process: subprocess.Popen
    stderr_lines: list[str]

    @property
    def token(self) -> str:
        return self.token_file.read_text(encoding="ascii").strip()

    @property
    def base(self) -> str:
        return self.url.removesuffix("/mcp")


@contextmanager
def http_server(
    root: Path, *args: str, env: dict[str, str] | None = None, token_file: Path | None = None, pass_token_file=True
) -> Iterator[HttpServer]:
    """`memory-mcp --store root serve --http --port 0 [--token-file F] ARGS`, stopped (SIGTERM, then SIGKILL)
    when the block ends. `token_file` defaults to `http-token` beside the store; with `pass_token_file=False`
    the server finds its own (at `token_file`, which the caller then names)."""
    token_file = token_file or root.parent / "http-token"
    cmd = [sys.executable, "-m", "memory_mcp", "--store", str(root), "serve", "--http", "--port", "0"]
    cmd += [*(["--token-file", str(token_file)] if pass_token_file else []), *args]
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=server_env(root) | (env or {}),
        cwd=str(root.parent),
    )
    lines: list[str] = []
    ready: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:  # keeps reading so the server never blocks on a full stderr pipe
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if "MCP over Streamable HTTP at " in line:
                ready.put(line)
        ready.put(None)

    threading.Thread(target=pump, daemon=True).start()
    try:
        line = ready.get(timeout=60)
        if line is None:
            raise AssertionError(f"the HTTP server did not start: {''.join(lines)}")
        url = line.split(" at ", 1)[1].split(" ", 1)[0]
        yield HttpServer(url, token_file, proc, lines)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


@asynccontextmanager
async def http_tools(server: HttpServer, mode: str = "auto", token: str | None = "") -> AsyncIterator[Tools]:
    """The SDK's Streamable HTTP client on `server` (token "" = the server's own; None = no header)."""
    token = server.token if token == "" else token
    headers = {"Authorization": f"Bearer {token}"} if token is not None else None
    async with create_mcp_http_client(headers=headers) as http:
        async with mcp.Client(streamable_http_client(server.url, http_client=http), mode=mode) as client:
            yield Tools(client)


@pytest.fixture(autouse=True)
def no_user_settings(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Import it into a test module whose CLI runs in process: no settings file from the developer's home."""
    monkeypatch.setenv("HOME", str(store.parent))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("MEMORY_MCP_ROOT", raising=False)


def run_cli(store: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`memory-mcp --store STORE ARGS` in process: exit code, stdout, stderr."""
    try:
        code = cli.main(["--store", str(store), *args])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


# the memories one keeps about Redis, then a change: the gate writes that pair (weighed ~0.96 among the others; issue
# 42 writes only pairs weighed near certain, so a lone neighbour, listed, is never written)
REDIS_FACTS = (
    "Redis session TTL is 24 hours",
    "Redis runs on port 6380",
    "Redis max memory is 4 GB",
    "Redis persistence uses AOF",
    "Redis runs version 7.2",
)
REDIS_CHANGE = ("Redis session TTL lowered to 1 hour", "The Redis session TTL was lowered to 1 hour.")


async def a_written_conflict(tools: Tools, **new: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the contradicted memory, the new one's answer) with the pair written into the new file."""
    made = [await tools.remember(title, f"{title}.", entities=["redis"]) for title in REDIS_FACTS]
    answer = await tools.remember(*REDIS_CHANGE, entities=["redis"], **new)
    assert [c["id"] for c in answer["conflicts"]] == [made[0]["id"]], answer["listed"]
    return made[0], answer
