"""Outside clients from npm for the tests that run them: the MCP Inspector CLI and the Claude Code CLI.

Each pinned package is installed once into a cache folder (`$MEMORY_MCP_NPM_CACHE`, else
`~/.cache/memory-mcp/npm/<package>@<version>`) and reused; without npm, or when the install fails (no network),
the calling test is skipped saying why. Installs and runs are bounded by timeouts below the test's own (300 s):
a registry that accepts connections and never answers held `npm install` for over 10 minutes, so the registry is
pinged first and npm's own fetches are given a timeout. Tests that use these carry the `npm` marker
(`pytest -m 'not npm'` leaves them out)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

INSPECTOR = ("@modelcontextprotocol/inspector", "2.12.0")
CLAUDE_CODE = ("@anthropic-ai/claude-code", "2.1.337")
INSTALL_TIMEOUT = 150  # seconds: a cold install of either package took ~10 s here
PING_TIMEOUT = 10  # seconds for `npm ping` (its answer took 0.1-0.7 s here)
# npm's own fetch limits: without them a registry that never answers holds npm for many minutes
FETCH_LIMITS = ("--fetch-timeout=60000", "--fetch-retries=1", "--fetch-retry-mintimeout=1000", "--fetch-retry-maxtimeout=5000")  # fmt: skip


def _cache_root() -> Path:
    given = os.environ.get("MEMORY_MCP_NPM_CACHE")
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memory-mcp" / "npm"


def npm_package(package: tuple[str, str], binary: str) -> Path:
    """The path of `binary` from the pinned npm `package`, installed into the cache when missing (else skip)."""
    name, version = package
    prefix = _cache_root() / f"{name.replace('/', '+')}@{version}"
    found = prefix / "node_modules" / ".bin" / binary
    if found.exists():
        return found
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip(f"{name}: npm and node are not installed")
    try:
        ping = subprocess.run(
            ["npm", "ping", f"--fetch-timeout={PING_TIMEOUT * 1000}", "--fetch-retries=0"],
            capture_output=True,
            text=True,
            timeout=PING_TIMEOUT + 10,
        )
    except subprocess.TimeoutExpired:
        pytest.skip(f"{name}@{version}: the npm registry did not answer `npm ping` within {PING_TIMEOUT + 10} s")
    if ping.returncode != 0:
        pytest.skip(f"{name}@{version}: the npm registry is unreachable (npm ping): {ping.stderr.strip()[-300:]}")
    prefix.mkdir(parents=True, exist_ok=True)
    # the suite runs on several workers (pytest-xdist): one installs, the others wait and reuse its install
    with (prefix.parent / f"{prefix.name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if found.exists():
            return found
        return _install(name, version, prefix, found)


def _install(name: str, version: str, prefix: Path, found: Path) -> Path:
    try:
        done = subprocess.run(
            [
                "npm",
                "install",
                "--prefix",
                str(prefix),
                "--no-audit",
                "--no-fund",
                "--silent",
                *FETCH_LIMITS,
                f"{name}@{version}",
            ],  # fmt: skip
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        pytest.skip(f"{name}@{version}: npm install took over {INSTALL_TIMEOUT} s (no network?)")
    if done.returncode != 0 or not found.exists():
        pytest.skip(f"{name}@{version}: npm install failed (no network?): {done.stderr.strip()[-300:]}")
    return found
