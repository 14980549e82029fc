"""The merge driver's own process, run exactly as git runs it (the configured command, through the shell).

git starts one driver process per merged file, so what that process imports is its cost: these checks keep
the CLI, the service, pydantic, the MCP SDK and PyYAML off its path (a structural check: no times asserted),
keep the work tree it starts in from shadowing modules, keep the older configured commands working, and keep
an internal error an exit code git sees.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from memory_mcp.canon.merge import same_copy
from memory_mcp.store.sync import driver_command

from .sync_support import REPO

# top-level packages, and our modules, the driver must never load: each is tens of ms per merged file
FORBIDDEN = ("mcp", "pydantic", "pydantic_core", "yaml", "frontmatter", "starlette", "uvicorn", "sqlite3")
FORBIDDEN_OURS = (
    "memory_mcp.tools",
    "memory_mcp.edges.cli",
    "memory_mcp.edges.server",
    "memory_mcp.index",
    "memory_mcp.search",
    "memory_mcp.config",
    "memory_mcp.importers",
)
ID = "01KH0000000000000000000001"


def memory(entities: str, updated: str, body: str) -> str:
    return (
        f"---\nid: {ID}\ntype: fact\nstate: active\ntrust: user-stated\nentities: [{entities}]\n"
        f"created: 2026-01-01T00:00:00Z\nupdated: {updated}\nsupersedes: []\nsuperseded_by: []\n---\n\n"
        f"# Postgres backups\n\n{body}\n"
    )


BASE = memory("postgres", "2026-01-01T00:00:00Z", "Nightly at 02:00.\n\nKept 7 days.\n\nOn the replica.")
OURS = memory("postgres, backup", "2026-02-01T00:00:00Z", "Nightly at 03:00.\n\nKept 7 days.\n\nOn the replica.")
THEIRS = memory("postgres", "2026-03-01T00:00:00Z", "Nightly at 02:00.\n\nKept 7 days.\n\nOn the primary.")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_MCP_", "PYTHON"))}
    return env | {"PYTHONPATH": str(REPO)}


def _versions(work: Path, ours: str = OURS) -> None:
    (work / "memories").mkdir(parents=True, exist_ok=True)
    for name, text in ((".base", BASE), (".ours", ours), (".theirs", THEIRS)):
        (work / name).write_text(text, encoding="utf-8")


def _run_as_git(work: Path, command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """git expands %O %A %B %P and runs the line through the shell, from the top of the work tree."""
    line = command.replace("%O", ".base").replace("%A", ".ours").replace("%B", ".theirs")
    line = line.replace("%P", "memories/postgres-backups.md")
    return subprocess.run(line, shell=True, cwd=work, env=env, capture_output=True, text=True, timeout=60)


def _merged_ok(work: Path) -> None:
    merged = (work / ".ours").read_text(encoding="utf-8")
    assert "entities: [postgres, backup]" in merged and "updated: 2026-03-01T00:00:00Z" in merged
    assert "Nightly at 03:00." in merged and "On the primary." in merged


def test_the_driver_process_loads_no_cli_service_pydantic_mcp_or_pyyaml(tmp_path: Path) -> None:
    _versions(tmp_path)
    done = _run_as_git(tmp_path, driver_command(), _env() | {"PYTHONPROFILEIMPORTTIME": "1"})
    assert done.returncode == 0, done.stderr
    _merged_ok(tmp_path)  # the whole path ran: both frontmatters, git's line merge, the write
    loaded = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", done.stderr, re.MULTILINE))
    assert {"memory_mcp.edges.merge_driver", "memory_mcp.canon.merge", "ruamel.yaml"} <= loaded, sorted(loaded)
    assert not {m for m in loaded if m.split(".")[0] in FORBIDDEN}
    assert not {m for m in loaded if m.startswith(FORBIDDEN_OURS)}


def test_modules_in_the_work_tree_do_not_shadow_the_drivers(tmp_path: Path) -> None:
    # a project whose top level holds a module named like a stdlib one, or a checkout of memory-mcp itself
    marker = tmp_path / "shadowed"
    (tmp_path / "signal.py").write_text(f"open({str(marker)!r}, 'w').close()\nraise SystemExit(3)\n")
    (tmp_path / "memory_mcp").mkdir()
    (tmp_path / "memory_mcp" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\nraise SystemExit(3)\n")
    _versions(tmp_path)
    done = _run_as_git(tmp_path, driver_command(), _env())
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    _merged_ok(tmp_path)


def test_older_configured_commands_still_merge_alike(tmp_path: Path) -> None:
    """Repositories set up before keep `python -m memory_mcp merge-driver` (or the console script): same bytes."""
    outputs = []
    script = Path(sys.executable).parent / "memory-mcp"
    commands = [driver_command(), f"{sys.executable} -m memory_mcp merge-driver %O %A %B %P"]
    if script.exists():
        commands.append(f"{script} merge-driver %O %A %B %P")
    for n, command in enumerate(commands):
        work = tmp_path / str(n)
        _versions(work)
        done = _run_as_git(work, command, _env())
        assert done.returncode == 0, (command, done.stderr)
        outputs.append((work / ".ours").read_bytes())
    assert len(set(outputs)) == 1
    _merged_ok(tmp_path / "0")


def test_an_internal_error_exits_non_zero_and_leaves_ours(tmp_path: Path) -> None:
    broken = "---\nid: [unclosed\n---\n\n# Broken\n"  # ours is not a memory: the driver cannot merge it
    _versions(tmp_path, ours=broken)
    done = _run_as_git(tmp_path, driver_command(), _env())
    assert done.returncode == 1
    assert "memory-mcp merge-driver: memories/postgres-backups.md" in done.stderr
    assert (tmp_path / ".ours").read_text(encoding="utf-8") == broken  # ours left as it was, for git
    assert list((tmp_path / "memories").iterdir()) == []  # nothing added beside it


def test_a_held_file_is_the_same_copy_by_bytes_or_by_id() -> None:
    """sync writes a clash copy only once: a file already under its name is that copy when it has the same
    bytes or the same memory id (another machine settled the same clash first), and not otherwise."""
    copy = OURS.encode()
    assert same_copy(copy, copy)
    assert same_copy(THEIRS.encode(), copy)  # same id, other text
    assert not same_copy(OURS.replace(ID, "01KH0000000000000000000002").encode(), copy)
    assert not same_copy(b"not a memory at all", copy)
