"""memory_reindex reports progress over MCP when the client asks for it (a progress token)."""

from __future__ import annotations

import sys
from pathlib import Path

import mcp
import pytest

from memory_mcp.edges.server import build_server
from memory_mcp.search import semantic as sem
from memory_mcp.tools.service import MemoryService

from .helpers import REPO, hand_memory, server_env, settle, write_file
from .test_semantic import FakeProvider


def _fill(store: Path, prefix: str, n: int) -> None:
    for i in range(n):
        write_file(store / "memories" / f"{prefix}-{i}.md", hand_memory(f"{prefix}{i:04d}", f"{prefix} {i}", "Body."))


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_reindex_sends_increasing_progress_over_stdio(tmp_path: Path, mode: str) -> None:
    account, project = tmp_path / "account", tmp_path / "atlas"
    _fill(account, "GLOBALMEM", 150)
    _fill(project / ".memory", "LOCALMEM", 120)
    settle()
    params = mcp.StdioServerParameters(
        command=sys.executable,
        args=["-m", "memory_mcp", "--store", str(account), "--project-root", str(project)],
        env=server_env(account),
        cwd=str(REPO),
    )
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with mcp.Client(params, mode=mode) as client:
        done = await client.call_tool("memory_reindex", {}, progress_callback=on_progress)
        assert not done.is_error and done.structured_content["memories"] == 270
        # without a progress callback (no token) the same call answers the same
        quiet = await client.call_tool("memory_reindex", {})
        assert not quiet.is_error and quiet.structured_content["memories"] == 270

    values = [p for p, _, _ in seen]
    assert len(values) > 10, seen
    assert all(b > a for a, b in zip(values, values[1:], strict=False)), "progress must increase every time"
    assert seen[-1][0] == seen[-1][1] == 270  # both scopes' files laid end to end
    messages = {m for _, _, m in seen}
    assert "local: 120/120 files indexed" in messages and "global: 150/150 files indexed" in messages
    assert all(t is not None and p <= t for p, t, _ in seen)


@pytest.mark.anyio
async def test_reindex_progress_covers_the_embeddings_too(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _fill(store, "EMBEDMEM", 70)
    settle()
    fake = FakeProvider()  # a bag-of-words embedder standing in for a model (tests/test_semantic.py)
    service = MemoryService(store, embedder=fake, semantic=sem.SemanticConfig(batch=32))
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    try:
        async with mcp.Client(build_server(service)) as client:
            done = await client.call_tool("memory_reindex", {}, progress_callback=on_progress)
    finally:
        service.close()
    assert not done.is_error and done.structured_content["embedded"] == 70 == len(fake.texts)
    values = [p for p, _, _ in seen]
    assert all(b > a for a, b in zip(values, values[1:], strict=False))
    embed = [(p, t, m) for p, t, m in seen if m and "embedded" in m]
    # batches of 32: 32, 64, 70 memories embedded, counted after the 70 files
    assert [m for _, _, m in embed] == [f"global: {n}/70 memories embedded" for n in (32, 64, 70)]
    assert seen[-1][:2] == (140, 140)
