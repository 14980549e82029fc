"""The merge driver's own processes, run exactly as git runs them (the configured command, through the shell).

git starts one driver process per merged file, so what it imports is its cost: the configured client loads
only the standard library and hands the merge to a warm helper; with none alive it becomes the full driver,
which must keep the CLI, the service, pydantic, the MCP SDK and PyYAML off its path (structural checks: no
times asserted). Also: the helper merges byte for byte as a process per file does, answers only from a
folder that is the user's alone, is not used once its code changed on disk, and stops when asked; the work
tree git starts in never shadows modules; older configured commands keep working; an internal error is an
exit code git sees.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from memory_mcp.canon.merge import same_copy
from memory_mcp.edges.merge_client import ask
from memory_mcp.edges.merge_helper import stop
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


@pytest.fixture
def runtime() -> Iterator[Path]:
    """A runtime folder of this test's own (XDG_RUNTIME_DIR), so no helper from another test answers; every
    helper started in it is stopped at the end."""
    folder = Path(tempfile.mkdtemp(prefix="mm-"))
    yield folder
    for sock in (folder / "memory-mcp").glob("*.sock"):
        stop(str(sock))
    shutil.rmtree(folder, ignore_errors=True)


def _helper_env(runtime: Path) -> dict[str, str]:
    return _env() | {"XDG_RUNTIME_DIR": str(runtime)}


def _sockets(runtime: Path) -> list[Path]:
    return sorted((runtime / "memory-mcp").glob("*.sock"))


def _status(runtime: Path) -> tuple[int, int]:
    """(merges served, pid) of the one helper in `runtime` (waiting for it: git's driver process exits first,
    then its forked helper starts listening)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for sock in _sockets(runtime):
            answer = ask(str(sock), ["status"])
            if answer is not None:
                assert answer[0] == "ok", answer
                return int(answer[1]), int(answer[2])
        time.sleep(0.02)
    raise AssertionError(f"no merge helper answers in {runtime}")


def _gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


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


def test_the_driver_process_loads_no_cli_service_pydantic_mcp_or_pyyaml(tmp_path: Path, runtime: Path) -> None:
    _versions(tmp_path)  # no helper in a fresh runtime folder: the client becomes the full driver
    done = _run_as_git(tmp_path, driver_command(), _helper_env(runtime) | {"PYTHONPROFILEIMPORTTIME": "1"})
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


def test_the_client_git_runs_loads_only_the_standard_library(tmp_path: Path, runtime: Path) -> None:
    _versions(tmp_path / "first")
    assert _run_as_git(tmp_path / "first", driver_command(), _helper_env(runtime)).returncode == 0  # starts one
    _versions(tmp_path)
    # the configured command runs with -I (PYTHON* variables ignored): ask its interpreter for the list
    traced = driver_command().replace(" -I -S ", " -I -S -X importtime ")
    done = _run_as_git(tmp_path, traced, _helper_env(runtime))
    assert done.returncode == 0, done.stderr
    _merged_ok(tmp_path)
    loaded = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", done.stderr, re.MULTILINE))
    assert "_socket" in loaded
    assert not {m for m in loaded if m.startswith(("memory_mcp", "ruamel", "socket", "site"))}, sorted(loaded)
    assert _status(runtime)[0] == 1  # the helper merged it


def test_a_warm_helper_merges_the_next_files_byte_for_byte_as_a_process_per_file(tmp_path: Path, runtime: Path) -> None:
    per_file = tmp_path / "per-file"
    _versions(per_file)
    old_command = f"{sys.executable} -P -m memory_mcp merge-driver %O %A %B %P"
    assert _run_as_git(per_file, old_command, _helper_env(runtime)).returncode == 0
    assert _sockets(runtime) == []  # the older command starts no helper
    for n in range(3):
        work = tmp_path / str(n)
        _versions(work)
        done = _run_as_git(work, driver_command(), _helper_env(runtime))
        assert done.returncode == 0, done.stderr
        assert (work / ".ours").read_bytes() == (per_file / ".ours").read_bytes()
        if n == 0:  # the first file's process merged it itself, then stayed as the helper for the others
            assert _status(runtime)[0] == 0
    served, pid = _status(runtime)
    assert served == 2
    # an internal error through the helper: exit 1, the reason on stderr, ours left for git, nothing added
    broken = "---\nid: [unclosed\n---\n\n# Broken\n"
    _versions(tmp_path / "broken", ours=broken)
    done = _run_as_git(tmp_path / "broken", driver_command(), _helper_env(runtime))
    assert done.returncode == 1
    assert "memory-mcp merge-driver: memories/postgres-backups.md" in done.stderr
    assert (tmp_path / "broken" / ".ours").read_text(encoding="utf-8") == broken
    assert list((tmp_path / "broken" / "memories").iterdir()) == []
    assert _status(runtime) == (3, pid)
    assert stop(str(_sockets(runtime)[0]))
    assert _gone(pid) and _sockets(runtime) == []


def test_a_runtime_folder_others_can_enter_is_never_used(tmp_path: Path, runtime: Path) -> None:
    (runtime / "memory-mcp").mkdir(mode=0o755)
    (runtime / "memory-mcp").chmod(0o755)
    for n in range(2):
        _versions(tmp_path / str(n))
        done = _run_as_git(tmp_path / str(n), driver_command(), _helper_env(runtime))
        assert done.returncode == 0, done.stderr
        _merged_ok(tmp_path / str(n))
    assert list((runtime / "memory-mcp").iterdir()) == []  # no socket, no lock: each file ran the full driver


def test_a_helper_whose_code_changed_on_disk_is_not_used(tmp_path: Path, runtime: Path) -> None:
    """An upgrade while a helper idles: the next file is merged by the new code, and the old helper leaves."""
    install = tmp_path / "install"
    shutil.copytree(REPO / "memory_mcp", install / "memory_mcp", ignore=shutil.ignore_patterns("__pycache__"))
    client = install / "memory_mcp" / "edges" / "merge_client.py"
    command = f"{sys.executable} -I -S {client} %O %A %B %P"
    env = _helper_env(runtime) | {"PYTHONPATH": str(install)}
    _versions(tmp_path / "0")
    assert _run_as_git(tmp_path / "0", command, env).returncode == 0
    _served, old_pid = _status(runtime)
    merge_module = install / "memory_mcp" / "canon" / "merge.py"
    later = merge_module.stat().st_mtime + 60
    os.utime(merge_module, (later, later))
    _versions(tmp_path / "1")
    done = _run_as_git(tmp_path / "1", command, env)
    assert done.returncode == 0, done.stderr
    _merged_ok(tmp_path / "1")
    assert _gone(old_pid)


def test_many_merges_at_once_are_each_answered_by_one_helper(tmp_path: Path, runtime: Path) -> None:
    """Two pulls in two repositories at the same moment: the helper answers each file for its own work tree."""
    _versions(tmp_path / "first")
    assert _run_as_git(tmp_path / "first", driver_command(), _helper_env(runtime)).returncode == 0
    _status(runtime)  # the helper is up
    works = [tmp_path / f"w{n}" for n in range(12)]
    for work in works:
        _versions(work)
    with ThreadPoolExecutor(max_workers=6) as pool:
        done = list(pool.map(lambda w: _run_as_git(w, driver_command(), _helper_env(runtime)), works))
    assert [d.returncode for d in done] == [0] * len(works), [d.stderr for d in done]
    for work in works:
        _merged_ok(work)
    assert _status(runtime)[0] == len(works)
