"""A one-shot text command (a hook's `memory-mcp recall`, `context` or `status`, a new process each time) loads
only what it uses (issue 43): no pydantic, no YAML library, no MCP SDK, no importers, no conflict gate, no git, no
change watch. Read in a real new process over a real store whose index is built, nothing changed: the modules the
command loaded, listed."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import EXAMPLE_STORE, server_env

# what a recall or the context never needs when nothing changed: each costs a one-shot call 5-70 ms to import
NOT_LOADED = (
    "pydantic",
    "pydantic_core",
    "ruamel",
    "yaml",
    "mcp",
    "filelock",
    "inotify_simple",  # the change watch: opened only by a process that makes more than one call
    "ctypes",
    "hashlib",  # loads OpenSSL: the scan digest is BLAKE2b, the dictionary's sha256 CPython's own (canon.files)
    "memory_mcp.domain.screen",
    "memory_mcp.domain.screen_model",  # its weights, ~10 ms to load
    "memory_mcp.domain.models",
    "memory_mcp.importers.run",
    "memory_mcp.importers.notes",
    "memory_mcp.search.conflicts",
    "memory_mcp.search.claims",
    "memory_mcp.store.sync",
    "memory_mcp.store.git",
    "memory_mcp.canon.merge",
    "memory_mcp.tools.remember",
)
PROBE = (
    "import sys\n"
    "from memory_mcp.edges.cli import main\n"
    "code = main(sys.argv[1:])\n"
    f"heavy = {list(NOT_LOADED)!r}\n"
    "loaded = sorted(m for m in sys.modules if any(m == h or m.startswith(h + '.') for h in heavy))\n"
    "print('LOADED', ','.join(loaded), file=sys.stderr)\n"
    "sys.exit(code)\n"
)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("oneshot") / "store"
    shutil.copytree(EXAMPLE_STORE, root)
    return root


def _run(*argv: str, store: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, env=server_env(store), timeout=120, check=False
    )


@pytest.mark.parametrize(
    "command", [("recall", "postgres backups"), ("context",), ("status",)], ids=["recall", "context", "status"]
)
def test_a_one_shot_call_loads_no_pydantic_yaml_sdk_or_gate(store: Path, command: tuple[str, ...]) -> None:
    first = _run("-m", "memory_mcp", "--store", str(store), "status", store=store)
    assert first.returncode == 0, first.stderr  # the index is built: what follows changes nothing
    out = _run("-c", PROBE, "--store", str(store), *command, store=store)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip(), "the command printed its answer"
    line = [x for x in out.stderr.splitlines() if x.startswith("LOADED")][-1]
    assert line == "LOADED ", f"`memory-mcp {command[0]}` loaded {line[len('LOADED ') :]}"
