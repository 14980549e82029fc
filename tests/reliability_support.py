"""Shared pieces of the reliability tests: canon checks from outside, the CLI as a subprocess, and a way to
run the server without the power to write a read-only index.

Tests here usually run as root (containers, CI images), and root ignores file modes. `as_unprivileged()`
gives the child process what a normal account has: on Linux, when root, the capabilities that bypass file
permissions are dropped from the child's bounding set before it execs Python (tests/reliability_no_dac.py),
so chmod 0o444 / 0o555 really stops its writes. As a normal user nothing needs dropping.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from memory_mcp.canon import files as canon

from .helpers import REPO, server_env

NO_DAC = Path(__file__).with_name("reliability_no_dac.py")


@dataclass
class CanonFile:
    path: Path
    memory: canon.Memory | None
    problem: str | None


def read_canon(root: Path) -> list[CanonFile]:
    """Every visible `memories/**/*.md`, parsed by the same rules the server uses."""
    out = []
    for path in sorted((root / "memories").rglob("*.md")):
        if any(part.startswith(".") for part in path.relative_to(root).parts):
            continue
        try:
            mem = canon.parse(path.read_bytes(), path.stem, "1970-01-01T00:00:00Z")
            out.append(CanonFile(path, mem, None))
        except canon.CanonError as exc:
            out.append(CanonFile(path, None, str(exc)))
    return out


def cli(root: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`memory-mcp --store ROOT ARGS...` as a child process with an isolated HOME."""
    return subprocess.run(
        [sys.executable, "-m", "memory_mcp", "--store", str(root), *args],
        env={**server_env(root), "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=str(root.parent),
    )


def verify_clean(root: Path) -> dict:
    """`memory-mcp reindex --verify --json`: asserts exit 0 and no mismatch, returns the answer."""
    done = cli(root, "reindex", "--verify", "--json")
    assert done.returncode == 0, f"reindex --verify exit {done.returncode}: {done.stdout[-2000:]} {done.stderr[-2000:]}"
    answer = json.loads(done.stdout)
    assert answer["mismatches"] == [], answer["mismatches"]
    return answer


def as_unprivileged(argv: list[str]) -> list[str]:
    """The command line that runs `python ARGV...` unable to override file permissions."""
    return [sys.executable, str(NO_DAC), *argv]


def unprivileged_works(probe_dir: Path) -> str | None:
    """None when a child started with as_unprivileged() is really stopped by a 0o555 directory; else why not."""
    probe_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(probe_dir, 0o555)
    try:
        done = subprocess.run(
            as_unprivileged(["-c", f"open({str(probe_dir / 'x')!r}, 'w')"]),
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        os.chmod(probe_dir, 0o755)
    if done.returncode == 0:
        return "cannot drop the right to override file permissions here (root without CAP_SETPCAP?)"
    if "PermissionError" not in done.stderr:
        return f"the unprivileged child failed another way: {done.stderr[-500:]}"
    return None
