"""A store shared through git: set-up (merge driver, attributes), and one sync (commit, fetch, merge, push).

Only the canon travels: `memories/`, `dictionary.md`, `config.toml` (never `.index/`, whose recall counts and
times are this machine's). A memory whose frontmatter says `sync: local` is never staged, and a push is
refused while one is in the commits (committed by hand). Memory files and dictionary.md merge through the
memory-aware merge driver (`canon/merge.py`, run by git as `python -P -m memory_mcp merge-driver`); what git
cannot hand to a driver (edited here, deleted there; a driver that failed) is resolved here so that no file
ever keeps a conflict marker and no edit is lost. A failed merge is aborted: nothing half-done stays.
"""

from __future__ import annotations

import glob
import os
import shlex
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import FrameType
from typing import NamedTuple

from ..canon import files as canon
from ..canon import merge, sharing
from ..canon.sharing import Withheld, is_local_only
from ..domain.secrets import SecretScanner
from .git import (
    Git,
    GitFailedError,
    GitSetupError,
    SyncInterrupted,
    check_version,
    git_binary,
    git_message,
    merge_lines,
    work_tree_of,
)
from .paths import GITIGNORE

DRIVER = "memory-mcp"
CANON_NAMES = ("memories", "dictionary.md", "config.toml")
PUSH_ATTEMPTS = 4
UNMERGED = frozenset({"DD", "AU", "UD", "UA", "DU", "AA", "UU"})  # `git status --porcelain` XY of unmerged paths
TITLES_SHOWN = 10

Progress = Callable[[str], None]
# the store lock every writer takes (`StoreSession.exclusive`): held while sync touches the work tree
Hold = Callable[[], AbstractContextManager[object]]


# git's driver client (`edges/merge_client.py`), named by path: git runs it as a script, not as this package
DRIVER_CLIENT = Path(__file__).resolve().parents[1] / "edges" / "merge_client.py"


def driver_command() -> str:
    """What git runs per file: this interpreter, so the driver is the same install as the CLI that set it up,
    with the driver's small client (a warm helper does the merge). `-I -S`: no site imports or PYTHON*
    variables (the client needs only the standard library), and the work tree git starts it in must not shadow
    the stdlib's modules (`-I` implies `-P`)."""
    return f"{shlex.quote(sys.executable)} -I -S {shlex.quote(str(DRIVER_CLIENT))} %O %A %B %P"


def attribute_lines(prefix: str) -> list[str]:
    return [f"{prefix}memories/**/*.md merge={DRIVER}", f"{prefix}dictionary.md merge={DRIVER}"]


@dataclass
class Changes:
    """Canon files one side of an exchange changed, by kind, with the titles of the first few."""

    added: list[str] = field(default_factory=list)
    edited: list[str] = field(default_factory=list)
    archived: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    other: list[str] = field(default_factory=list)  # dictionary.md, config.toml

    @property
    def total(self) -> int:
        return len(self.added) + len(self.edited) + len(self.archived) + len(self.removed) + len(self.other)

    def summary(self) -> str:
        parts = [
            f"{len(v)} {k}" for k, v in (("added", self.added), ("edited", self.edited), ("archived", self.archived))
        ]
        parts += [f"{len(self.removed)} removed"] if self.removed else []
        parts += [", ".join(self.other)] if self.other else []
        return ", ".join(p for p in parts if not p.startswith("0 ")) or "nothing"


@dataclass
class SyncResult:
    repo: Path
    remote: str
    branch: str
    sent: Changes = field(default_factory=Changes)
    received: Changes = field(default_factory=Changes)
    notes: list[str] = field(default_factory=list)  # surfaced merge decisions, kept edits, kept-both files
    # memory files (store-relative) that git wrote into the work tree: no person's hand edit (`reconcile`'s merged)
    arrived: list[str] = field(default_factory=list)
    setup: list[str] = field(default_factory=list)  # what set-up changed (attributes, driver config, init)
    pushed: bool = False
    push_attempts: int = 0
    memory_merges: int = 0  # files changed on both sides that the memory-aware merge settled
    merge_seconds: float = 0.0
    git_seconds: float = 0.0
    seconds: float = 0.0


@dataclass
class SyncOptions:
    remote: str = "origin"
    branch: str | None = None
    push: bool = True
    init_url: str | None = None


# ---------------------------------------------------------------- set-up


def open_repo(store_root: Path, init_url: str | None = None) -> tuple[Git, list[str]]:
    """The git work tree holding the store (made one with `init_url`), and what was set up on the way."""
    binary = git_binary()
    check_version(binary)
    store_root.mkdir(parents=True, exist_ok=True) if init_url else None
    if not store_root.is_dir():
        raise GitSetupError(f"sync: no store at {store_root}; run `memory-mcp sync --init URL` to start one")
    top = work_tree_of(store_root, binary)
    changes = []
    if top is None:
        if init_url is None:
            raise GitSetupError(
                f"sync: {store_root} is not a git work tree; run `memory-mcp sync --init URL` (URL: an empty or "
                "existing git repository, e.g. a private GitHub repo or a bare repo on a server)"
            )
        git = Git(store_root, binary)
        git.run("init", "-q")
        changes.append(f"made {store_root} a git repository")
        top = store_root
    git = Git(top, binary)
    if not git.ok("var", "GIT_AUTHOR_IDENT"):  # no user.name/email on this machine: commits still need one
        host = socket.gethostname() or "localhost"
        git.config += [f"user.name=memory-mcp on {host}", f"user.email=memory-mcp@{host}"]
    return git, changes


def setup_repo(git: Git, store_root: Path) -> list[str]:
    """Idempotently: `.gitattributes` routes the store's memory files and dictionary to the driver, and the
    repository's own config defines it. Returns what changed (empty when it was already set)."""
    changes = []
    rel = store_root.resolve().relative_to(git.root.resolve()).as_posix()
    prefix = "" if rel == "." else rel + "/"
    attributes = git.root / ".gitattributes"
    text = attributes.read_text(encoding="utf-8") if attributes.exists() else ""
    missing = [line for line in attribute_lines(prefix) if line not in text.splitlines()]
    if missing:
        head = text if not text or text.endswith("\n") else text + "\n"
        note = "# memory-mcp: merge memory files field by field (memory-mcp git-setup)\n"
        canon.atomic_write(attributes, (head + (note if note not in text else "") + "\n".join(missing) + "\n").encode())
        changes.append(f"wrote {len(missing)} line(s) to {attributes}")
    for key, value in (
        (f"merge.{DRIVER}.name", "memory-mcp: field-by-field merge of memory files"),
        (f"merge.{DRIVER}.driver", driver_command()),
    ):
        if git.text("config", "--local", "--get", key, check=False) != value:
            git.run("config", "--local", key, value)
            changes.append(f"set git config {key}")
    return changes


def _prefix(git: Git, store_root: Path) -> str:
    rel = store_root.resolve().relative_to(git.root.resolve()).as_posix()
    return "" if rel == "." else rel + "/"


# ---------------------------------------------------------------- sync


def sync(
    store_root: Path,
    options: SyncOptions,
    progress: Progress | None = None,
    hold: Hold = nullcontext,
    settle: Callable[[list[str]], None] | None = None,
) -> SyncResult:
    """Commit, fetch, merge, push. Every step that reads or writes the work tree runs holding the store lock
    (`hold`), as every server's write does, and runs to its end even when SIGINT or SIGTERM comes (`Interrupts`):
    a server's acknowledged write is committed before the merge or written after it, never lost between."""
    say = progress or (lambda _message: None)
    started = time.perf_counter()
    git, setup = open_repo(store_root, options.init_url)
    prefix = _prefix(git, store_root)
    setup += _ensure_ignores(git, store_root) if options.init_url else []
    setup += setup_repo(git, store_root)
    remote = options.remote
    remotes = git.text("remote").split()
    if options.init_url:
        reached = git.run("ls-remote", "-q", options.init_url, check=False)
        if reached.returncode != 0:  # before the remote is configured: a wrong URL leaves nothing behind
            raise GitFailedError(f"sync --init: cannot use {options.init_url}: {git_message(reached.stderr)}")
        if remote in remotes:
            if git.text("remote", "get-url", remote) != options.init_url:
                git.run("remote", "set-url", remote, options.init_url)
                setup.append(f"set remote {remote} to {options.init_url}")
        else:
            git.run("remote", "add", remote, options.init_url)
            setup.append(f"added remote {remote} = {options.init_url}")
    elif remote not in remotes:
        raise GitSetupError(
            f"sync: the repository at {git.root} has no remote '{remote}'"
            + (f" (it has: {', '.join(remotes)}; pass --remote NAME)" if remotes else "")
            + "; add one with `git remote add origin URL` or run `memory-mcp sync --init URL`"
        )
    branch = _choose_branch(git, remote, options.branch)
    result = SyncResult(git.root, remote, branch, setup=setup)
    paths = [prefix + name for name in CANON_NAMES]
    with Interrupts() as interrupts, SecretScanner() as scanner:
        checks = ShareChecks(scanner)

        def locked_step(remote_ref: str | None) -> None:
            with hold(), interrupts.critical():
                _finish_interrupted(git, prefix, result, checks)
                _add(result.sent, _commit_local(git, paths, result.notes, [".gitignore", ".gitattributes"], checks))
                if remote_ref is not None:
                    seen = len(result.arrived)
                    _merge(git, remote_ref, paths, branch, result)
                    if settle is not None and len(result.arrived) > seen:
                        # indexed as merged before the lock goes: no other call may read them as hand edits
                        settle(result.arrived[seen:])

        say("committing local changes")
        locked_step(None)
        for attempt in range(1, PUSH_ATTEMPTS + 1):
            interrupts.checkpoint("before the fetch")
            say(f"fetching {remote}/{branch}")
            remote_ref = _fetch(git, remote, branch)
            interrupts.checkpoint("after the fetch")
            if remote_ref is not None:
                say("merging")
                locked_step(remote_ref)  # what a server wrote since the first commit goes in first
            interrupts.checkpoint("after the merge, before the push")
            if not options.push:
                break
            if not _has_head(git):
                break  # nothing here and nothing there yet
            _check_outgoing(git, prefix, remote, remote_ref, checks)
            if remote_ref is not None and git.ok("merge-base", "--is-ancestor", "HEAD", remote_ref):
                break  # nothing of ours the remote lacks
            say(f"pushing to {remote}/{branch}")
            result.push_attempts = attempt
            pushed = git.run("push", "-q", remote, f"HEAD:refs/heads/{branch}", check=False)
            if pushed.returncode == 0:
                result.pushed = True
                break
            message = pushed.stderr.decode("utf-8", "replace")
            if (
                not any(w in message for w in ("rejected", "fetch first", "non-fast-forward"))
                or attempt == PUSH_ATTEMPTS
            ):
                raise GitFailedError(f"git push failed: {git_message(pushed.stderr)}")
    result.git_seconds = round(git.seconds, 4)
    result.seconds = round(time.perf_counter() - started, 4)
    return result


class Interrupts:
    """SIGINT and SIGTERM during a sync (main thread only). Outside a critical step the first one stops the sync
    at the next step boundary (`checkpoint`) and a second one at once; inside one (`critical`: the store lock
    held, the work tree being written) the step always runs to its end first. git runs in a session of its own
    (`Git.run`), so a Ctrl-C on the terminal never kills it half-way through a checkout."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._critical = False
        self._previous: dict[int, object] = {}

    def __enter__(self) -> Interrupts:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)  # type: ignore[arg-type]

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        again = self.received is not None
        self.received = signum
        if again and not self._critical:
            raise SyncInterrupted(self._message("at once"))

    @contextmanager
    def critical(self) -> Iterator[None]:
        self._critical = True
        try:
            yield
        finally:
            self._critical = False
        self.checkpoint("after a step that had to finish")

    def checkpoint(self, where: str) -> None:
        if self.received is not None:
            raise SyncInterrupted(self._message(where))

    def _message(self, where: str) -> str:
        name = "Ctrl-C" if self.received == signal.SIGINT else "SIGTERM"
        return (
            f"sync: stopped by {name} {where}; every memory is on disk as the last finished step left it and "
            "nothing half-merged was pushed; run `memory-mcp sync` again to finish"
        )


class ShareChecks:
    """`sharing.withheld` once per content in one sync (a blob met in the work tree and again as an outgoing
    commit's blob is scanned once)."""

    def __init__(self, scanner: SecretScanner) -> None:
        self.scanner = scanner
        self._seen: dict[str, Withheld | None] = {}

    def withheld(self, data: bytes) -> Withheld | None:
        key = sharing.blob_id(data)
        if key not in self._seen:
            self._seen[key] = sharing.withheld(data, self.scanner)
        return self._seen[key]


def _add(into: Changes, more: Changes) -> None:
    for kind in ("added", "edited", "archived", "removed", "other"):
        getattr(into, kind).extend(getattr(more, kind))


def pending_changes(store_root: Path, among: set[str] | None = None) -> bool:
    """The store's canon has changes sync would commit (e.g. the reconcile after a merge rewrote a file); with
    `among` (store-relative paths), only changes to those count."""
    git, _ = open_repo(store_root)
    prefix = _prefix(git, store_root)
    paths = [prefix + name for name in CANON_NAMES]
    for xy, path in _status_paths(git, paths):
        if among is not None and path.removeprefix(prefix) not in among:
            continue
        full = git.root / path
        if xy != "??" or not (full.is_file() and is_local_only(canon.read_bytes(full))):
            return True
    return False


def _current_branch(git: Git) -> str | None:
    done = git.run("symbolic-ref", "-q", "--short", "HEAD", check=False)
    return done.stdout.decode().strip() or None if done.returncode == 0 else None


def _choose_branch(git: Git, remote: str, asked: str | None) -> str:
    """--branch, else the branch this one tracks on the remote, else (a store with no commit yet) the remote's
    default branch or `main`. A store with no commit yet is put on that branch; the choice is remembered as the
    current branch's upstream, so the next sync needs no option."""
    local = _current_branch(git)
    branch = asked
    if branch is None and local is not None:
        if git.text("config", "--get", f"branch.{local}.remote", check=False) == remote:
            branch = git.text("config", "--get", f"branch.{local}.merge", check=False).removeprefix("refs/heads/")
    if not branch and not _has_head(git):
        listed = git.run("ls-remote", "--symref", remote, "HEAD", check=False).stdout.decode("utf-8", "replace")
        for line in listed.splitlines():
            if line.startswith("ref: refs/heads/") and line.endswith("\tHEAD"):
                branch = line.removeprefix("ref: refs/heads/").removesuffix("\tHEAD")
        branch = branch or "main"
    branch = branch or local or "main"
    if not _has_head(git):
        git.run("symbolic-ref", "HEAD", f"refs/heads/{branch}")
        local = branch
    if local is not None:
        git.run("config", f"branch.{local}.remote", remote)
        git.run("config", f"branch.{local}.merge", f"refs/heads/{branch}")
    return branch


def _ensure_ignores(git: Git, store_root: Path) -> list[str]:
    ignore = store_root / ".gitignore"
    if ignore.exists() and ".index/" in ignore.read_text(encoding="utf-8", errors="replace").split():
        return []
    current = ignore.read_text(encoding="utf-8") if ignore.exists() else ""
    sep = "" if not current or current.endswith("\n") else "\n"
    canon.atomic_write(ignore, (current + sep + GITIGNORE).encode("utf-8"))
    return [f"wrote .index/ into {ignore}"]


def _has_head(git: Git) -> bool:
    return git.ok("rev-parse", "-q", "--verify", "HEAD^{commit}")


def _is_memory_path(path: str, prefix: str) -> bool:
    return path.startswith(prefix + "memories/") and path.endswith(".md")


def _status_paths(git: Git, paths: list[str]) -> list[tuple[str, str]]:
    """(XY, path) of every changed or untracked file under `paths` (renames as delete + add)."""
    out = git.run("status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--", *paths).stdout
    return [(entry[:2].decode(), entry[3:].decode("utf-8")) for entry in out.split(b"\0") if entry]


def _plan_staging(
    git: Git, entries: list[tuple[str, str]], prefix: str, notes: list[str], checks: ShareChecks
) -> tuple[list[str], list[str]]:
    """Which changed paths to stage, and which shared memories to stop sharing (marked `sync: local` since).
    A memory file `sharing.withheld` keeps here is not staged, and is named in `notes` with the reason (a
    private one silently: staying here is what it asked for)."""
    stage, unshare = [], []
    for xy, path in entries:
        full = git.root / path
        if _is_memory_path(path, prefix) and full.is_file():
            why = checks.withheld(canon.read_bytes(full))
            if why is not None:
                if why.private and xy != "??":
                    unshare.append(path)  # was shared before it was marked local: stop sharing it
                elif not why.private:
                    notes.append(f"{path}: not shared: {why.reason}; it stays on this machine until that is fixed")
                continue
        stage.append(path)
    return stage, unshare


def _commit_local(git: Git, paths: list[str], notes: list[str], extra: list[str], checks: ShareChecks) -> Changes:
    """Commit the canon's changes through a temporary index that starts from HEAD: the commit holds exactly
    HEAD plus what `_plan_staging` chose (never the work-tree copy of a file it stopped sharing, never what a
    person staged outside the store), and the real index then follows HEAD for those paths only."""
    prefix = paths[0].rpartition("memories")[0]
    everything = paths + [prefix + name for name in extra]
    stage, unshare = _plan_staging(git, _status_paths(git, everything), prefix, notes, checks)
    if not stage and not unshare:
        return Changes()
    head = _has_head(git)
    env = {"GIT_INDEX_FILE": str(_git_path(git, "memory-mcp-sync.index"))}
    git.run("read-tree", *(["HEAD"] if head else ["--empty"]), env=env)
    if stage:
        git.with_paths(["add", "-A"], stage, env=env)
    if unshare:
        git.with_paths(["rm", "-q", "--cached", "--ignore-unmatch"], unshare, env=env)
        notes += [
            f"stopped sharing {p} (marked sync: local); other machines drop it at their next sync" for p in unshare
        ]
    staged = _name_status(git, ["diff", "--cached"], everything, env=env)
    if not staged or (not head and not any(c.path.removeprefix(prefix).split("/")[0] in CANON_NAMES for c in staged)):
        return Changes()  # nothing, or a new machine with nothing of its own: it takes the remote's history as it is
    changes = _describe(git, staged, prefix, work_tree=True)
    title = f"memory-mcp sync from {socket.gethostname()}: {changes.summary()}"
    tree = git.text("write-tree", env=env)
    commit = git.run("commit-tree", tree, *(["-p", "HEAD"] if head else []), stdin=_message(title, changes).encode())
    old = [git.text("rev-parse", "HEAD")] if head else []
    git.run("update-ref", "-m", "memory-mcp sync: commit local changes", "HEAD", commit.stdout.decode().strip(), *old)
    git.with_paths(["reset", "-q", "HEAD"], [c.path for c in staged] + unshare)
    return changes


def _git_path(git: Git, name: str) -> Path:
    return git.root / git.text("rev-parse", "--git-path", name)


class Change(NamedTuple):
    """One changed path as `git diff --raw` tells it: status (A, M, D, ...) and the blob ids on either side
    (`NO_BLOB` where that side has none)."""

    status: str
    path: str
    old: str
    new: str


NO_BLOB = "0" * 40


def _name_status(
    git: Git, command: list[str], paths: list[str], *revs: str, env: dict[str, str] | None = None
) -> list[Change]:
    """What changed, with each side's blob id: the blobs are then read by id (`Git.blobs`), never as
    `<rev>:<path>`, which makes git walk a 10k-entry folder tree for every file (~1.5 s per 1,000 files)."""
    raw = "--raw", "-z", "--no-renames", "--no-abbrev"
    out = git.run(*command, *raw, *revs, "--", *paths, env=env).stdout.split(b"\0")
    changes = []
    for i in range(0, len(out) - 1, 2):
        if out[i]:  # ':100644 100644 <old> <new> M', then the path
            _src_mode, _dst_mode, old, new, status = out[i].decode().lstrip(":").split(" ")
            changes.append(Change(status[:1], out[i + 1].decode("utf-8"), old, new))
    return changes


def _describe(git: Git, entries: list[Change], prefix: str, work_tree: bool) -> Changes:
    """Sort changed paths into added / edited / archived / removed, with titles (new side, or old for removals).
    `work_tree`: the new side is read from the work tree (what is being committed), else from its blob."""
    changes = Changes()
    mem = [c for c in entries if _is_memory_path(c.path, prefix)]
    changes.other = [c.path.removeprefix(prefix) for c in entries if not _is_memory_path(c.path, prefix)]
    wanted = [c.old for c in mem if c.old != NO_BLOB]
    wanted += [] if work_tree else [c.new for c in mem if c.new != NO_BLOB]
    blobs = git.blobs(list(dict.fromkeys(wanted)))
    for c in mem:
        before_data = blobs.get(c.old)
        if c.status == "D":
            changes.removed.append(_title_of(before_data, c.path))
            continue
        data = canon.read_bytes(git.root / c.path) if work_tree else blobs.get(c.new)
        title = _title_of(data, c.path)
        if c.status == "A" or before_data is None:
            changes.added.append(title)
        elif _state_of(data) != _state_of(before_data) and _state_of(data) != "active":
            changes.archived.append(title)
        else:
            changes.edited.append(title)
    return changes


def _title_of(data: bytes | None, path: str) -> str:
    if data and (heading := canon.heading_of(data)):
        return heading
    if data:
        try:
            return canon.parse(data, PurePosixPath(path).stem, "").title
        except canon.CanonError:
            pass
    return PurePosixPath(path).stem


def _state_of(data: bytes | None) -> str:
    if not data:
        return ""
    try:
        return canon.parse(data, "", "").state.value
    except canon.CanonError:
        return ""


def _message(title: str, changes: Changes) -> str:
    lines = [title, ""]
    for kind in ("added", "edited", "archived", "removed"):
        titles = getattr(changes, kind)
        lines += [f"{kind}: {t}" for t in titles[:TITLES_SHOWN]]
        if len(titles) > TITLES_SHOWN:
            lines.append(f"{kind}: … and {len(titles) - TITLES_SHOWN} more")
    return "\n".join(lines).rstrip() + "\n"


def _fetch(git: Git, remote: str, branch: str) -> str | None:
    """Fetch the remote branch; its tracking ref, or None when the remote has no such branch yet."""
    ref = f"refs/remotes/{remote}/{branch}"
    done = git.run("fetch", "-q", remote, f"+refs/heads/{branch}:{ref}", check=False)
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace")
        if "couldn't find remote ref" in message:
            return None
        raise GitFailedError(f"git fetch {remote} failed: {git_message(done.stderr)}")
    return ref


def _merge(git: Git, remote_ref: str, paths: list[str], branch: str, result: SyncResult) -> None:
    prefix = paths[0].rpartition("memories")[0]
    if not _has_head(git):  # a new machine with nothing to send: take the remote's history as it is
        git.run("checkout", "-q", "-f", "-B", branch, remote_ref)
        listed = [
            Change("A", path, NO_BLOB, info.split(" ")[2])
            for line in git.run("ls-tree", "-r", "-z", "--full-tree", "HEAD", "--", *paths).stdout.split(b"\0")
            if line
            for info, _, path in [line.decode("utf-8").partition("\t")]
        ]
        result.received = _describe(git, listed, prefix, work_tree=False)
        result.arrived += [c.path.removeprefix(prefix) for c in listed if _is_memory_path(c.path, prefix)]
        return
    if git.ok("merge-base", "--is-ancestor", remote_ref, "HEAD"):
        return  # we have everything
    before = git.text("rev-parse", "HEAD")
    if git.ok("merge-base", "--is-ancestor", "HEAD", remote_ref):
        done = git.run("merge", "-q", "--ff-only", remote_ref, check=False)
        if done.returncode != 0:
            raise GitFailedError(f"git merge failed: {_merge_failure(done.stderr.decode('utf-8', 'replace'))}")
    else:
        _true_merge(git, remote_ref, prefix, result)
    entries = _name_status(git, ["diff"], paths, before, "HEAD")
    result.arrived += [
        c.path.removeprefix(prefix) for c in entries if c.status != "D" and _is_memory_path(c.path, prefix)
    ]
    got = _describe(git, entries, prefix, work_tree=False)
    for kind in ("added", "edited", "archived", "removed", "other"):
        getattr(result.received, kind).extend(getattr(got, kind))


def _true_merge(git: Git, remote_ref: str, prefix: str, result: SyncResult) -> None:
    """A merge in the work tree, the store lock held (no other writer can add or change a file meanwhile). A
    failure undoes it; a process killed half-way leaves MERGE_HEAD, which the next sync finishes
    (`_finish_interrupted`)."""
    extra: list[str] = []
    untracked_before = _untracked(git, prefix)
    # names a copy made by this merge must not take: what this side held before the merge
    held = untracked_before | _listed(git, prefix)
    try:
        done = git.run(
            "-c",
            "merge.renames=false",
            # files changed on both sides are left unmerged for `_resolve_unmerged`, which merges them in this
            # process: the configured driver would start a Python per file (~65 ms each)
            "-c",
            f"merge.{DRIVER}.driver=false",
            "merge",
            "-q",
            "--no-ff",
            "--no-commit",
            "--allow-unrelated-histories",
            # the id is a memory's identity, not its text: a purge here and a similar new memory there are no
            # rename (rename detection would carry one memory's edits into another's file). git 2.39's `ort`
            # still pairs renames through a criss-cross merge base despite no-renames; `recursive` does not
            "-s",
            "recursive",
            "-X",
            "no-renames",
            remote_ref,
            check=False,
        )
        if done.returncode not in (0, 1) or not (git.root / ".git" / "MERGE_HEAD").exists():
            raise GitFailedError(f"git merge failed: {_merge_failure(done.stderr.decode('utf-8', 'replace'))}")
        extra = _finish_merge(git, prefix, result, held, f"merged {remote_ref.removeprefix('refs/remotes/')}")
    except BaseException:
        if (git.root / ".git" / "MERGE_HEAD").exists():
            git.run("merge", "--abort", check=False)
        # files this merge left behind (copies it added, a half-written checkout): the canon as it was. Only
        # this merge can have made them: every other writer waits for the store lock this sync holds
        for path in set(extra) | (_untracked(git, prefix) - untracked_before):
            full = git.root / path
            if full.exists() and not git.ok("ls-files", "--error-unmatch", path):
                full.unlink()
        raise
    result.merge_seconds = round(result.merge_seconds, 4)


def _merge_failure(stderr: str) -> str:
    """git's reason, and what to do when a file this sync keeps back (`sharing.withheld`) is in the merge's way."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    named = [line for line in lines if line.startswith(("memories/", ".memory/")) or "/memories/" in line]
    if named and any("would be overwritten" in line for line in lines):
        return (
            f"the other machine changed {', '.join(named[:5])}, which this machine holds back from sharing (see "
            "the reasons above: not parseable, a secret, or marked private); fix or move those files, then sync "
            "again. Nothing was merged"
        )
    return git_message(stderr.encode("utf-8"))


def _finish_merge(git: Git, prefix: str, result: SyncResult, held: set[str], title: str) -> list[str]:
    """Settle every unmerged path, stage what a resumed merge's work tree gained since, and commit the merge.
    Returns the copies it added beside the merged files."""
    extra = _follow_renames(git, "MERGE_HEAD", prefix, result, held)
    extra += _resolve_unmerged(git, prefix, result, held)
    present = [p for p in dict.fromkeys(extra) if (git.root / p).exists()]
    if present:
        git.with_paths(["add", "-f"], present)
    body = "\n".join(result.notes[:TITLES_SHOWN])
    git.run("commit", "-q", "--no-verify", "-m", f"memory-mcp sync from {socket.gethostname()}: {title}"
            + ("\n\n" + body if body else ""))  # fmt: skip
    return extra


def _finish_interrupted(git: Git, prefix: str, result: SyncResult, checks: ShareChecks) -> None:
    """What a sync killed half-way left (the store lock held): a git lock file no live process holds is removed,
    and a merge left open (MERGE_HEAD) is finished: its unmerged memories merged with the work tree's version
    (which holds what any server wrote into it since), the work tree's other changes staged as sync stages
    them, and the merge committed. No advice that drops either side's work."""
    lock = _git_path(git, "index.lock")
    if lock.exists():
        for _ in range(40):  # a git command finishing right now lets go within moments
            time.sleep(0.05)
            if not lock.exists():
                break
        if lock.exists():
            if _held_open(lock):
                raise GitSetupError(f"sync: another git command is running in {git.root} ({lock} is held); try again")
            lock.unlink(missing_ok=True)
            result.notes.append(f"removed {lock.name}, left by a git command that was killed")
    if not (git.root / ".git" / "MERGE_HEAD").exists():
        return
    canon_paths = [prefix + n for n in CANON_NAMES]
    # what the work tree gained since the merge was staged (a staged-only entry, such as a deletion the merge
    # made, is already in the index)
    entries = [(xy, p) for xy, p in _status_paths(git, canon_paths) if xy not in UNMERGED and xy[1] != " "]
    stage, unshare = _plan_staging(git, entries, prefix, result.notes, checks)
    if stage:
        git.with_paths(["add", "-A"], stage)
    if unshare:
        git.with_paths(["rm", "-q", "--cached", "--ignore-unmatch"], unshare)
    _finish_merge(git, prefix, result, _listed(git, prefix) | _untracked(git, prefix), "finished an interrupted merge")
    result.notes.append("finished the merge an interrupted sync had left open")


def _held_open(path: Path) -> bool:
    """Whether a live process has `path` open (Linux: /proc); elsewhere, whether it is younger than a minute."""
    proc = Path("/proc")
    if not (proc / "self" / "fd").is_dir():
        return time.time() - path.stat().st_mtime < 60
    target = str(path.resolve())
    for fd_dir in proc.glob("[0-9]*/fd"):
        try:
            if any(os.readlink(fd) == target for fd in fd_dir.iterdir()):
                return True
        except OSError:
            continue
    return False


def _untracked(git: Git, prefix: str) -> set[str]:
    return _listed(git, prefix, "--others", "--exclude-standard")


def _listed(git: Git, prefix: str, *which: str) -> set[str]:
    """The paths under memories/ `git ls-files` lists (tracked ones, or `which` asks for others), unquoted."""
    out = git.run("ls-files", "-z", *which, "--", prefix + "memories").stdout
    return {p.decode("utf-8") for p in out.split(b"\0") if p}


def _unmerged(git: Git) -> dict[str, dict[int, str]]:
    """Every path git left unmerged: its stages (1 base, 2 ours, 3 theirs) and their blobs' ids."""
    stages: dict[str, dict[int, str]] = {}
    for entry in git.run("ls-files", "-u", "-z").stdout.split(b"\0"):
        if not entry:
            continue
        info, _, path = entry.decode("utf-8").partition("\t")
        _mode, sha, stage = info.split()
        stages.setdefault(path, {})[int(stage)] = sha
    return stages


def _merge_memory_file(
    git: Git,
    path: str,
    sides: tuple[bytes | None, bytes, bytes],
    result: SyncResult,
    held: set[str],
    dictionary: bool = False,
) -> list[str]:
    """The memory-aware merge (`canon/merge.py`, the code the git driver runs) of one memory file or
    dictionary.md, written at `path` with the copies it adds beside it (a name this side did not hold, `held`);
    should it fail, both versions are kept. Returns the copies' paths."""
    base, ours, theirs = sides
    full = git.root / path
    folder, parent = full.parent, PurePosixPath(path).parent
    taken = lambda n: (parent / n).as_posix() in held  # noqa: E731
    notes = result.notes
    started = time.perf_counter()
    try:
        if dictionary:
            outcome = merge.merge_dictionary(base, ours, theirs, merge_lines)
        else:
            outcome = merge.merge_memory(base, ours, theirs, merge_lines, name_taken=taken)
        notes += outcome.notes
    except Exception as exc:  # like the driver: no failure may leave the merge stuck or lose a side
        outcome = merge.keep_both(ours, theirs, name_taken=taken)
        notes += [f"{path}: the memory-aware merge failed ({type(exc).__name__}: {exc}); kept both versions"]
        notes += outcome.notes
    result.memory_merges += 1
    result.merge_seconds += time.perf_counter() - started
    canon.atomic_write(full, outcome.data)
    added: list[str] = []
    for file in outcome.extra:
        rel = (parent / file.name).as_posix()
        target = folder / file.name
        if target.exists() and merge.same_copy(canon.read_bytes(target), file.data):
            notes.append(f"{rel}: the other side already holds this copy")
            continue
        if target.exists():  # another file under the name: the copy takes a free one
            name = merge.free_name(file.name.removesuffix(".md"), lambda n, f=folder: os.path.lexists(f / n))
            target, rel = folder / name, (parent / name).as_posix()
        canon.atomic_write(target, file.data)
        added.append(rel)
    return added


def _resolve_unmerged(git: Git, prefix: str, result: SyncResult, held: set[str]) -> list[str]:
    """Settle every path git left unmerged without writing a marker; returns files added beside them.

    A memory file or dictionary.md changed on both sides goes through the memory-aware merge here, in this
    process (`_merge_memory_file`); when the other side already sent a copy it adds (the clash was settled there
    first), it is not written twice."""
    stages = _unmerged(git)
    added: list[str] = []
    notes = result.notes
    data = git.blobs([sha for have in stages.values() for sha in have.values()])  # one `cat-file --batch`
    for path, have in stages.items():
        full = git.root / path
        blobs = {n: data[sha] or b"" for n, sha in have.items()}
        if _is_memory_path(path, prefix) and full.is_file() and is_local_only(canon.read_bytes(full)):
            # private here (this machine stopped sharing it), changed on the other side: the shared version goes
            # on in git as the other side left it, and this machine's private file is never written over
            shared = have.get(3) or have[min(have)]
            git.run("update-index", "--cacheinfo", f"100644,{shared},{path}")
            for stray in full.parent.glob(f"{glob.escape(full.name)}~*"):  # where git put theirs beside it
                stray.unlink()
            notes.append(f"{path}: private here (sync: local) and changed on the other machine; their version stays "
                         "shared, this machine keeps its private one")  # fmt: skip
            continue
        if 2 in blobs:
            blobs[2] = _this_side(full, blobs[2])
        memoryish = _is_memory_path(path, prefix) or path == prefix + "dictionary.md"
        if 2 in blobs and 3 in blobs and memoryish:
            sides = (blobs.get(1), blobs[2], blobs[3])
            added += _merge_memory_file(git, path, sides, result, held, dictionary=path == prefix + "dictionary.md")
        elif 2 in blobs and 3 in blobs:
            canon.atomic_write(full, blobs[2])
            notes.append(f"{path}: changed on both machines; kept this machine's version (the other is in git history)")
        else:
            side = 2 if 2 in blobs else 3
            canon.atomic_write(full, blobs[side])
            where = "here" if side == 2 else "on the other machine"
            notes.append(f"{path}: edited {where} and deleted on the other side; the edit was kept")
        git.run("add", "-f", "--", path)
    return added


def _this_side(full: Path, staged: bytes | None) -> bytes | None:
    """This side's version of a file in a merge: the work tree's (git left it there, and after an interrupted sync
    it also holds what a server wrote since), unless it is missing or holds markers (a person's half-done `git
    pull`): then the staged one."""
    if not full.is_file():
        return staged
    mine = canon.read_bytes(full)
    if any(line.startswith((b"<<<<<<< ", b">>>>>>> ")) for line in mine.splitlines()):
        return staged
    return mine


def _follow_renames(git: Git, remote_ref: str, prefix: str, result: SyncResult, held: set[str]) -> list[str]:
    """A memory file renamed by hand on one side, and changed under its old name (or renamed to another name) on
    the other, ends as ONE file at the new name holding both sides' changes; returns copies added beside it.

    git merges with rename detection off (a memory's identity is its id, not its text: similar texts are no
    rename), so the renames are found by id: on one side since the merge base, a memory file deleted while a
    file holding the same id was added. The old file (base) and both sides' versions then go through the
    memory-aware merge, written at the new name (of two new names, the first in path order); the old name goes."""
    bases = git.text("merge-base", "HEAD", remote_ref, check=False).split()
    if not bases:
        return []
    base, sides = bases[0], ("HEAD", remote_ref)
    renamed = {side: _renames(git, base, side, prefix) for side in sides}
    if not any(renamed.values()):
        return []
    stages = _unmerged(git)
    added: list[str] = []
    for x, y in (sides, sides[::-1]):
        for old, new in renamed[x].items():
            other_new = renamed[y].get(old)
            have = stages.get(old, {})
            their_stage = 3 if x == "HEAD" else 2
            if other_new is not None:  # renamed on both sides: to one name, git already merged it as add/add
                if other_new == new or x != "HEAD":
                    continue
                ours_path, theirs_path = new, other_new
                blobs = git.blobs([f"{base}:{old}", f"HEAD:{new}", f"{remote_ref}:{other_new}"])
                base_data, ours, theirs = (
                    blobs[f"{base}:{old}"],
                    blobs[f"HEAD:{new}"],
                    blobs[f"{remote_ref}:{other_new}"],
                )
                target, drop = min(ours_path, theirs_path), max(ours_path, theirs_path)
                ours = _this_side(git.root / ours_path, ours)
                if not git.ok("ls-files", "--error-unmatch", "--", drop):
                    continue  # settled already (a resumed merge)
            elif their_stage in have and 1 in have and new not in stages:  # changed under the old name there
                blobs = git.blobs([have[1], have[their_stage], f"{x}:{new}"])
                base_data, changed, moved = blobs[have[1]], blobs[have[their_stage]], blobs[f"{x}:{new}"]
                ours, theirs = (moved, changed) if x == "HEAD" else (changed, moved)
                ours = _this_side(git.root / (new if x == "HEAD" else old), ours)
                target, drop = new, old
            else:
                continue
            if ours is None or theirs is None:
                continue
            added += _merge_memory_file(git, target, (base_data, ours, theirs), result, held)
            git.run("rm", "-q", "-f", "--cached", "--ignore-unmatch", "--", drop)
            (git.root / drop).unlink(missing_ok=True)
            git.run("add", "-f", "--", target)
            result.notes.append(
                f"{old.removeprefix(prefix)} was renamed to {target.removeprefix(prefix)} on one machine and changed on "
                "the other: the change follows the rename (one file)"
            )
    return added


def _renames(git: Git, base: str, side: str, prefix: str) -> dict[str, str]:
    """old path -> new path of the memory files `side` renamed since `base`: same id, deleted here, added there."""
    entries = _name_status(git, ["diff"], [prefix + "memories"], base, side)
    gone = [c for c in entries if c.status == "D" and _is_memory_path(c.path, prefix)]
    new = [c for c in entries if c.status == "A" and _is_memory_path(c.path, prefix)]
    if not gone or not new:
        return {}
    blobs = git.blobs([c.old for c in gone] + [c.new for c in new])
    by_id: dict[str, str] = {}
    for c in new:
        by_id.setdefault(merge.id_of(blobs[c.new] or b""), c.path)
    by_id.pop("", None)
    return {c.path: by_id[i] for c in gone if (i := merge.id_of(blobs[c.old] or b"")) in by_id}


def _check_outgoing(git: Git, prefix: str, remote: str, remote_ref: str | None, checks: ShareChecks) -> None:
    """Refuse the push when any commit it would send holds a memory file that may not leave this machine
    (`sharing.withheld`: private, unparseable, a secret): every blob the remote lacks is checked, not only
    HEAD's, so a private text removed again by a later commit still blocks it. Sync's own commits never hold
    one; a hand commit can."""
    exclude = [remote_ref] if remote_ref else [f"--remotes={remote}"]
    out = git.text("rev-list", "--objects", "HEAD", "--not", *exclude)
    wanted = {}
    for line in out.splitlines():
        oid, _, path = line.partition(" ")
        if _is_memory_path(path, prefix):
            wanted.setdefault(oid, path)
    found = []
    for oid, data in git.blobs(list(wanted)).items():
        why = checks.withheld(data) if data is not None else None
        if why is not None:
            commit = git.text("log", "-1", "--format=%h (%s)", f"--find-object={oid}", "HEAD", "--not", *exclude)
            found.append(f"{wanted[oid]} in commit {commit or '?'}: {why.reason}")
    if found:
        fix = f"git reset {remote_ref.removeprefix('refs/remotes/')}" if remote_ref else "git update-ref -d HEAD"
        raise GitSetupError(
            f"sync: refusing to push: commits not yet on {remote} hold memory files that may not leave this machine: "
            + "; ".join(found[:5])
            + (f"; and {len(found) - 5} more" if len(found) > 5 else "")
            + f". A later commit that removes them is not enough (the earlier one would still be pushed): undo the "
            f"commits that are not pushed with `{fix}` (your files stay as they are), then run `memory-mcp sync` again"
        )
