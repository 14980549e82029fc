"""Fixtures shared by every test module (helpers live in tests/helpers.py)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from memory_mcp.edges.merge_helper import stop

from .helpers import Tools, memory_tools, stdio_tools


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The stress variants (`-m long`) run for minutes: they get half an hour before a hang is declared."""
    for item in items:
        if item.get_closest_marker("long") is not None and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(1800))


@pytest.fixture(autouse=True, scope="session")
def merge_helpers_of_this_run() -> Iterator[Path]:
    """The git merge driver leaves a warm helper behind it (edges/merge_helper.py): this run's helpers live in
    a runtime folder of its own (short: a socket path has ~100 bytes), and are stopped when the run ends."""
    folder = Path(tempfile.mkdtemp(prefix="mm-run-"))
    before = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = str(folder)
    yield folder / "memory-mcp"
    for sock in (folder / "memory-mcp").glob("*.sock"):
        stop(str(sock))
    if before is None:
        os.environ.pop("XDG_RUNTIME_DIR", None)
    else:
        os.environ["XDG_RUNTIME_DIR"] = before
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A store directory that does not exist yet (the server creates its layout on first use)."""
    return tmp_path / "store"


@pytest.fixture
async def tools(store: Path) -> AsyncIterator[Tools]:
    """The real stdio server on a fresh store."""
    async with stdio_tools(store) as t:
        yield t


@pytest.fixture
async def mem_tools(store: Path) -> AsyncIterator[Tools]:
    """The in-process server on a fresh store."""
    async with memory_tools(store) as t:
        yield t
