"""Fixtures shared by every test module (helpers live in tests/helpers.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from .helpers import Tools, memory_tools, stdio_tools


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
