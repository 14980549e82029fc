"""Helpers for the git sync tests: a bare remote in a temp folder, stores that are its clones, the real CLI.

Every git call is the real git binary; every sync is `python -m memory_mcp ... sync` in a subprocess (the
merge driver therefore runs as git runs it, a process per file).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
MARKERS = ("<<<<<<<", ">>>>>>>", "|||||||")


def cli_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_MCP_", "GIT_"))}
    env.update(HOME=str(home), PYTHONPATH=str(REPO), PYTHONDONTWRITEBYTECODE="1")
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=str(home / "gitconfig"))
    return env


@dataclass
class Machine:
    """One store on one 'machine' (its own folder and HOME)."""

    root: Path
    home: Path

    def cli(self, *args: str, code: int | None = 0, stdin: str | None = None, env: dict | None = None):
        done = subprocess.run(
            [sys.executable, "-m", "memory_mcp", "--store", str(self.root), *args],
            capture_output=True,
            text=True,
            input=stdin,
            env=env or cli_env(self.home),
            timeout=120,
        )
        if code is not None:
            assert done.returncode == code, f"{args} exit {done.returncode}\n{done.stdout}\n{done.stderr}"
        return done

    def sync(self, *args: str, code: int = 0) -> dict[str, Any]:
        done = self.cli("sync", "--json", *args, code=code)
        return json.loads(done.stdout) if code == 0 else {"stderr": done.stderr}

    def status(self) -> dict[str, Any]:
        return json.loads(self.cli("status", "--json").stdout)

    def recall_ids(self, query: str) -> list[str]:
        done = self.cli("recall", query, "--json", "--limit", "20")
        return [r["id"] for r in json.loads(done.stdout)["results"]]

    def git(self, *args: str, check: bool = True) -> str:
        done = subprocess.run(
            ["git", *args], cwd=self.root, capture_output=True, text=True, env=cli_env(self.home), check=False
        )
        assert not check or done.returncode == 0, f"git {args}: {done.stderr}"
        return done.stdout

    @property
    def memories(self) -> Path:
        return self.root / "memories"

    def files(self) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted(self.memories.glob("*.md"))}

    def file_of(self, mem_id: str) -> Path:
        for path in self.memories.glob("*.md"):
            if f"id: {mem_id}\n" in path.read_text(encoding="utf-8"):
                return path
        raise AssertionError(f"no file holds {mem_id}")


def identify(m: Machine, name: str) -> None:
    """Give the machine's git a person: `Name <name@example.com>` (without one, every test machine commits as
    `memory-mcp on <this host>`: one person)."""
    (m.home / "gitconfig").write_text(f"[user]\n\tname = {name}\n\temail = {name.lower()}@example.com\n")


def machines(tmp: Path, n: int) -> tuple[Path, list[Machine]]:
    remote = tmp / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    out = []
    for i in range(n):
        home = tmp / f"home{i}"
        home.mkdir()
        out.append(Machine(tmp / f"store{i}", home))
    return remote, out


def memory_text(mem_id: str, title: str, body: str, **fields: Any) -> str:
    meta = {
        "id": mem_id,
        "type": "fact",
        "state": "active",
        "trust": "user-stated",
        "entities": "[postgres]",
        "created": "2026-01-01T00:00:00Z",
        "updated": "2026-01-01T00:00:00Z",
        "supersedes": "[]",
        "superseded_by": "[]",
    } | fields
    head = "\n".join(f"{k}: {v}" for k, v in meta.items() if v is not None)
    return f"---\n{head}\n---\n\n# {title}\n\n{body}\n"


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def replace_in(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def assert_clean_canon(m: Machine) -> None:
    """No conflict marker and no unparseable file in this store."""
    for name, data in m.files().items():
        text = data.decode("utf-8")
        assert not any(marker in text for marker in MARKERS), f"conflict marker in {name}:\n{text}"
    assert m.status()["unparseable"] == []


class Project:
    """A project repository's bare remote in `tmp`, and its clones (git-setup: team memory in `.memory/`),
    every git and CLI call run with one isolated environment."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.origin = tmp / "project.git"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(self.origin)], check=True)
        home = tmp / "h"
        home.mkdir()
        self.env = cli_env(home)

    def git(self, cwd: Path, *args: str) -> str:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=self.env)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def clone(self, name: str) -> Path:
        path = self.tmp / name
        self.git(self.tmp, "clone", "-q", str(self.origin), str(path))
        for key, value in (("user.name", "t"), ("user.email", "t@x")):
            self.git(path, "config", key, value)
        return path

    def git_setup(self, project: Path) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "memory_mcp", "--project-root", str(project), "git-setup"],
            capture_output=True,
            text=True,
            env=self.env,
        )
