"""Memories from teammates (issue 44): a memory file another git author added is shown as theirs
(`sync from Ana <ana@example.com>; <what the sender's file said>`) and listed for the next session-start context,
so a teammate's memory is seen as theirs before anyone trusts it as what this user stated.

Who added a file is a fact git already holds, so it is read from git, never written into the file: stamping the
file made every receipt an edit that travelled back to the team (a second commit and push of every file a sync
brought, and its author's own memories returned to them renamed), and it turned a memory its author had just made
private into a merge that could not proceed. Reconcile asks git (`authors`) about every memory file new to the
index, in whatever way it came (a sync, a plain `git pull`, a first build after the index was deleted), and the
index holds the origin the answers show. The list of the last sync's arrivals is derived data too
(`.index/arrivals.json`): losing it loses only the notice.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..canon import files as canon
from ..domain import provenance
from .paths import Store

if TYPE_CHECKING:
    from .git import Git

ARRIVALS_FILE = "arrivals.json"


@dataclass(frozen=True)
class Arrival:
    id: str
    author: str  # "Ana <ana@example.com>", as git recorded the commit that added the file


@dataclass
class Arrivals:
    """The last sync's new memories from other authors, and who this machine commits as."""

    me: str = ""
    synced: str = ""
    new: list[Arrival] = field(default_factory=list)

    def by_author(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for a in self.new:
            out.setdefault(a.author, []).append(a.id)
        return out


def head(store_root: Path) -> str | None:
    """The commit the store's repository is at before a sync (None: no commit yet, or not a repository)."""
    from .sync import open_repo  # git is loaded by a sync, not by the session-start context that reads `load`

    try:
        git, _ = open_repo(store_root)
    except Exception:  # the sync itself reports a missing repository
        return None
    return git.text("rev-parse", "-q", "--verify", "HEAD", check=False) or None


def _me(git: Git) -> str:
    ident = git.text("var", "GIT_AUTHOR_IDENT", check=False)  # "Name <email> 1733580000 +0100"
    return ident.rsplit(" ", 2)[0] if ident.count(" ") >= 2 else ident


def receive(store: Store, before: str | None, also: Arrivals | None = None) -> Arrivals:
    """After a sync: every memory file added since `before` by a commit of another author, kept as the list for
    the next context (with `also`'s: the same sync's first exchange, when a second one sent what the reconcile
    rewrote). The files are not touched: reconcile shows them as the author's (`authors`)."""
    repo = _repo(store)
    if repo is None:  # the sync before this made it a work tree; gone since: nothing to list
        return Arrivals(synced=canon.now_iso())
    git, me = repo
    out = Arrivals(me=me, synced=canon.now_iso(), new=list(also.new) if also is not None else [])
    listed = set(out.new)
    for path, author in _added_by(git, _folder(store, git), f"{before}..HEAD" if before else "HEAD").items():
        if not provenance.same_person(author, me):
            arrival = _arrival(git.root / path, author)
            if arrival is not None and arrival not in listed:
                out.new.append(arrival)
                listed.add(arrival)
    _save(store, out)
    return out


def authors(store: Store, rels: list[str]) -> dict[str, str]:
    """The git author who added each of `rels` (store-relative memory paths), for those another person added:
    {} when the store is in no git work tree, or git has no commit adding them (a file made here, by hand)."""
    repo = _repo(store)
    if repo is None:
        return {}
    git, me = repo
    folder = _folder(store, git)
    wanted = {folder + rel.removeprefix("memories/"): rel for rel in rels}
    named = None
    if len(wanted) <= _NAMED_PATHS:
        # only files git tracks can have been added by a commit: a file made here and not yet synced costs no walk
        # of the history (in a project's repository that can be long)
        listed = git.run("ls-files", "-z", "--", *wanted, check=False).stdout.split(b"\0")
        named = [p for p in (item.decode("utf-8") for item in listed if item) if p in wanted]
        if not named:
            return {}
    added = _added_by(git, folder, "HEAD", named)
    return {wanted[p]: a for p, a in added.items() if p in wanted and not provenance.same_person(a, me)}


_NAMED_PATHS = 200  # past this many files, one log of the whole folder is cheaper than naming each

# store root -> (when looked up, (the work tree's git, who this machine commits as)). A server whose other
# processes add files asks at every pass that finds one: the lookup's git calls are made once a minute, the log
# itself each time. A store found in no work tree is not remembered: a `git init` or clone may come any moment
_REPOS: dict[Path, tuple[float, tuple[Git, str]]] = {}
_REPO_SECONDS = 60.0


def _repo(store: Store) -> tuple[Git, str] | None:
    from .sync import open_repo  # the identity sync commits as (a machine without one gets a stand-in there)

    now = time.monotonic()
    cached = _REPOS.get(store.root)
    if cached is not None and now - cached[0] < _REPO_SECONDS:
        return cached[1]
    try:
        git, _ = open_repo(store.root)
    except Exception:  # no git here, or the store is in no work tree (yet: never remembered, it may become one)
        return None
    git.config.append("core.quotePath=false")
    _REPOS[store.root] = (now, (git, _me(git)))
    return _REPOS[store.root][1]


def _folder(store: Store, git: Git) -> str:
    """The memories folder as git names it (relative to the work tree's top level)."""
    rel = store.root.resolve().relative_to(git.root.resolve()).as_posix()
    return ("" if rel == "." else rel + "/") + "memories/"


def _added_by(git: Git, folder: str, revisions: str, paths: list[str] | None = None) -> dict[str, str]:
    """path -> "Name <mail>" of the newest commit in `revisions` that added it (memory files under `folder`);
    {} when there is no such revision (a repository without a commit yet)."""
    log = git.text(
        "log", "--diff-filter=A", "--no-renames", "--format=%x01%an <%ae>", "--name-only", revisions, "--",
        *(paths if paths is not None else [folder]), check=False,
    )  # fmt: skip
    out: dict[str, str] = {}
    for chunk in log.split("\x01")[1:]:  # newest first: the latest add of a path is its arrival
        author, *names = [line for line in chunk.split("\n") if line.strip()]
        for name in names:
            if name.endswith(".md") and name not in out:
                out[name] = author
    return out


def _arrival(path: Path, author: str) -> Arrival | None:
    from ..canon.merge import id_of  # the merge code (and ruamel) only after a sync, never for a context

    try:
        mem_id = id_of(canon.read_bytes(path))  # the id line only: no YAML for a thousand arrivals
    except OSError:
        return None  # gone since: reconcile reports it
    return Arrival(mem_id, author) if mem_id else None


def _save(store: Store, arrivals: Arrivals) -> None:
    try:
        store.index_dir.mkdir(parents=True, exist_ok=True)
        data = json.dumps(asdict(arrivals), ensure_ascii=False, indent=1).encode("utf-8")
        canon.atomic_write(store.index_dir / ARRIVALS_FILE, data)
    except OSError:
        pass  # derived: the memories and their origin lines are in the canon already


def load(store: Store) -> Arrivals | None:
    """The last sync's arrivals (None: this store never synced here, or the notice was lost with the index)."""
    try:
        raw = json.loads((store.index_dir / ARRIVALS_FILE).read_text(encoding="utf-8"))
        new = [Arrival(str(a["id"]), str(a["author"])) for a in raw.get("new", [])]
        return Arrivals(str(raw.get("me", "")), str(raw.get("synced", "")), new)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
