"""git, through its own binary: one small runner, and the line merge the memory merge uses (`git merge-file`).

Nothing of git is re-implemented here: every diff, merge, commit and transfer is git's. The runner times its
calls so `sync` can say how much of its time was git's.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..domain.errors import InputError, MemoryMcpError

# `git add/commit --pathspec-from-file` (2.26) is the newest feature used; tested with 2.39
GIT_MIN_VERSION = (2, 26)


class GitSetupError(InputError):
    """git is missing, too old, or the store is not a git work tree with a remote: the message says how to fix it."""


class GitFailedError(MemoryMcpError):
    """git itself reported a failure (network, authentication, a refused push): nothing half-done is left."""


class SyncInterrupted(MemoryMcpError):
    """SIGINT or SIGTERM stopped a sync between two steps: every step done is whole, the next sync goes on."""


def git_binary() -> str:
    found = shutil.which("git")
    if found is None:
        raise GitSetupError("git: no git binary on PATH; install git 2.26 or later (https://git-scm.com)")
    return found


@dataclass
class Git:
    """git run in one work tree (`root`, its top level), every call timed into `seconds`."""

    root: Path
    binary: str = field(default_factory=git_binary)
    seconds: float = 0.0
    env: dict[str, str] = field(default_factory=dict)
    config: list[str] = field(default_factory=list)  # `-c key=value` for every call

    def run(
        self,
        *args: str,
        check: bool = True,
        stdin: bytes | None = None,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        started = time.perf_counter()
        full_env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", **self.env, **(env or {})}
        done = subprocess.run(
            [self.binary, "--literal-pathspecs", *(x for kv in self.config for x in ("-c", kv)), *args],
            cwd=self.root,
            input=stdin,
            capture_output=True,
            env=full_env,
            check=False,
            # its own session: a Ctrl-C on the terminal reaches sync (which finishes the step, `Interrupts`),
            # never a git half-way through writing the work tree or the index
            start_new_session=True,
        )
        self.seconds += time.perf_counter() - started
        if check and done.returncode != 0:
            raise GitFailedError(f"git {args[0]} failed: {git_message(done.stderr or done.stdout)}")
        return done

    def text(self, *args: str, check: bool = True, env: dict[str, str] | None = None) -> str:
        return self.run(*args, check=check, env=env).stdout.decode("utf-8", "replace").strip()

    def ok(self, *args: str) -> bool:
        return self.run(*args, check=False).returncode == 0

    def with_paths(
        self, args: Sequence[str], paths: Sequence[str], env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        """`git <args> --pathspec-from-file=- --pathspec-file-nul` fed `paths` (no argv limit at 10k files)."""
        data = b"".join(p.encode("utf-8") + b"\0" for p in paths)
        return self.run(*args, "--pathspec-from-file=-", "--pathspec-file-nul", stdin=data, env=env)

    def blobs(self, specs: Sequence[str]) -> dict[str, bytes | None]:
        """`<rev>:<path>` -> the blob's bytes (None when missing), all through one `git cat-file --batch`."""
        if not specs:
            return {}
        done = self.run("cat-file", "--batch", stdin="".join(f"{s}\n" for s in specs).encode("utf-8"))
        out, data, pos = {}, done.stdout, 0
        for spec in specs:
            end = data.index(b"\n", pos)
            header = data[pos:end].split()
            pos = end + 1
            if len(header) == 3 and header[1] == b"blob":
                size = int(header[2])
                out[spec] = data[pos : pos + size]
                pos += size + 1
            else:
                out[spec] = None
        return out


def git_message(stderr: bytes) -> str:
    """What git said, on one line: its first `fatal:`/`error:` line (the cause, e.g. "does not appear to be a git
    repository") and its last lines (the advice), blank lines dropped."""
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    cause = [line for line in lines if line.startswith(("fatal:", "error:"))][:1]
    return " / ".join(dict.fromkeys(cause + lines[-3:])) or "no message"


def git_version(binary: str) -> tuple[int, int]:
    out = subprocess.run([binary, "--version"], capture_output=True, check=False).stdout.decode()
    match = re.search(r"(\d+)\.(\d+)", out)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def check_version(binary: str) -> None:
    have = git_version(binary)
    if have < GIT_MIN_VERSION:
        need = ".".join(map(str, GIT_MIN_VERSION))
        raise GitSetupError(f"git: version {have[0]}.{have[1]} is too old; sync needs {need} or later")


def work_tree_of(path: Path, binary: str) -> Path | None:
    """The top level of the git work tree holding `path`, or None."""
    done = subprocess.run(
        [binary, "rev-parse", "--show-toplevel"], cwd=path, capture_output=True, check=False, env=_plain_env()
    )
    if done.returncode != 0:
        return None
    return Path(done.stdout.decode("utf-8").strip())


def _plain_env() -> dict[str, str]:
    # a driver or hook runs with GIT_DIR/GIT_INDEX_FILE set for the outer repository: never follow them
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | {"LC_ALL": "C"}


def merge_lines(base: str, ours: str, theirs: str, binary: str | None = None) -> str | None:
    """git's three-way line merge (`git merge-file -p`) of three texts: the merged text, or None on a clash."""
    with tempfile.TemporaryDirectory(prefix="memory-mcp-merge-") as tmp:
        names = []
        for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = Path(tmp) / name
            path.write_bytes(text.encode("utf-8"))
            names.append(str(path))
        done = subprocess.run(
            [binary or git_binary(), "merge-file", "-p", "-q", *names],
            capture_output=True,
            check=False,
            start_new_session=True,  # as in `Git.run`: a terminal's Ctrl-C is sync's to handle
        )
    if done.returncode == 0:
        return done.stdout.decode("utf-8")
    if 0 < done.returncode < 128:
        return None  # that many clashing hunks
    raise GitFailedError(f"git merge-file failed: {git_message(done.stderr)}")
