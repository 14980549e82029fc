"""What a sync brought from teammates (issue 44): memory files another git author added are named in the canon
(`origin: sync from Ana <ana@example.com>; <what the sender's file said>`) and listed for the next session-start
context, so a teammate's memory is seen as theirs before anyone trusts it as what this user stated.

Runs after the git exchange (store/sync.py) and before the reconcile that indexes what arrived. The list of the
last sync's arrivals is derived data, kept beside the index (`.index/arrivals.json`): losing it loses only the
notice, never a memory or its origin line.
"""

from __future__ import annotations

import json
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
    """After a sync: every memory file added since `before` by a commit of another author gets its origin line
    (unless it already names a sync), and the list is kept for the next context (with `also`'s: the same sync's
    first exchange, when a second one sent what the reconcile rewrote)."""
    from .sync import open_repo

    git, _ = open_repo(store.root)
    git.config.append("core.quotePath=false")
    me = _me(git)
    out = Arrivals(me=me, synced=canon.now_iso(), new=list(also.new) if also is not None else [])
    if git.text("rev-parse", "-q", "--verify", "HEAD", check=False):
        rel = store.root.resolve().relative_to(git.root.resolve()).as_posix()
        folder = ("" if rel == "." else rel + "/") + "memories/"
        log = git.text(
            "log", "--diff-filter=A", "--no-renames", "--format=%x01%an <%ae>", "--name-only",
            f"{before}..HEAD" if before else "HEAD", "--", folder,
        )  # fmt: skip
        seen: set[str] = set()
        for chunk in log.split("\x01")[1:]:  # newest first: the latest add of a path is its arrival
            author, *paths = [line for line in chunk.split("\n") if line.strip()]
            for path in paths:
                if path in seen or not path.endswith(".md"):
                    continue
                seen.add(path)
                if not provenance.same_person(author, me):
                    arrival = _stamp(git.root / path, author)
                    if arrival is not None and arrival not in out.new:
                        out.new.append(arrival)
    _save(store, out)
    return out


def _stamp(path: Path, author: str) -> Arrival | None:
    try:
        meta = canon.read_frontmatter(path)
    except (OSError, canon.CanonError):
        return None  # gone since, or not a memory: reconcile reports it
    mem_id = str(meta.get("id") or "").strip()
    if not mem_id:
        return None
    earlier = provenance.parse(meta.get("origin"))
    if earlier is None or earlier.surface is not provenance.Surface.SYNC:
        origin = provenance.sync_origin(author, earlier).text

        def name(m: dict) -> None:
            m["origin"] = origin

        try:
            canon.rewrite(path, name)
        except (OSError, canon.CanonError):
            pass  # a read-only store keeps the file as it came; the list still names the author
    return Arrival(mem_id, author)


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
