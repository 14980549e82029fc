"""Bring the index in line with the canon: stat gate → sha256 → re-index only what changed.

Runs at the start of every tool call, so it must be cheap when nothing changed (one stat per file,
no reads) and must never fail because one file is bad or changes underneath it.
"""

from __future__ import annotations

import marshal
import os
import sqlite3
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import NamedTuple

try:  # hashlib's own blake2b, without hashlib: it loads OpenSSL (~3.5 ms of CPU in every new process) at import
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - an interpreter built without it
    from hashlib import blake2b

from ..canon import files as canon
from ..canon.dictionary import EntityDictionary
from ..domain import provenance
from ..domain.answers import ReconcileReport
from ..domain.errors import ContainmentError
from ..domain.vocabulary import State
from ..index import db as ix
from ..index import ledger
from ..index.reads import memory_ids
from .paths import Store

# A pass that (re)indexed at least this many memories, and at least a tenth of the store, ends by merging
# the FTS indexes (a first index, a rebuild, a large git pull); small edits leave that to FTS5's automerge.
BULK_REINDEX = 200

# A file modified this close to the moment we read it may be modified again within the same
# mtime tick with the same size; such an entry is recorded as "racy" (mtime 0) so the next pass
# hashes it again instead of trusting the stat (the same trick git uses for its index).
RACY_WINDOW_NS = 50_000_000


@dataclass(frozen=True)
class PassRules:
    """What one reconcile pass may take as a hand edit, and whether it may write memory files.

    `merged`: paths a sync's git merge just wrote, which are no person's hand edit (an archived memory whose text
    the merge changed stays archived). `write=False` (reindex --verify): no memory file is written: no new id for
    a copy, no reactivation; a duplicate id stays listed as one. A session's pass under other rules than
    `EVERY_CALL` is always a full pass (a change watch's pass over named files follows every call's rules)."""

    merged: frozenset[str] = frozenset()
    write: bool = True

    def reactivates(self, rel: str) -> bool:
        return self.write and rel not in self.merged


EVERY_CALL = PassRules()


class DiskEntry(NamedTuple):
    # a NamedTuple, not a frozen dataclass: one is built per file on every call, and this is 3x cheaper
    mtime_ns: int
    size: int
    problem: str | None = None
    inode: int = 0


# DiskEntry's own constructor is a Python function; this C one builds the same tuple (~10% of a scan)
_disk_entry = tuple.__new__
# os.scandir takes a folder descriptor where the platform supports it (not Windows); O_NONBLOCK: never wait on a FIFO
_SCAN_BY_FD = os.scandir in os.supports_fd and hasattr(os, "O_DIRECTORY")


class StatGate:
    """Lists canon files with their (mtime_ns, size); says which differ from the ledger."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.real_root = store.root.resolve()
        self.real_memories = store.memories_dir.resolve()
        # what the last scan walked: the folders (for a change watch) and whether a symlink was among them
        self.folders: list[Path] = []
        self.saw_symlink = False

    def scan(self) -> dict[str, DiskEntry]:
        out: dict[str, DiskEntry] = {}
        self.folders, self.saw_symlink = [], False
        top = self.store.memories_dir
        if not top.is_dir():
            return out
        stack = [top]
        seen_dirs = {top.resolve()}
        while stack:
            folder = stack.pop()
            self.folders.append(folder)
            # listing through a folder descriptor lets each stat resolve one name, not the whole path (~7%)
            try:
                fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NONBLOCK) if _SCAN_BY_FD else None
            except OSError:
                continue
            try:
                self._scan_folder(folder, fd, out, stack, seen_dirs)
            finally:
                if fd is not None:
                    os.close(fd)
        return out

    def _scan_folder(
        self, folder: Path, fd: int | None, out: dict[str, DiskEntry], stack: list[Path], seen_dirs: set[Path]
    ) -> None:
        try:
            entries = os.scandir(fd if fd is not None else folder)
        except OSError:
            return
        # one Path computation per folder, not per file: this loop runs on every call without a change watch
        # (every one-shot call), so its fast path is kept to what each file needs beyond its stat
        prefix = self.store.relative(folder) + "/"
        with entries:
            for entry in entries:
                name = entry.name
                try:
                    # the common case first: a plain Markdown file, not hidden (d_type says so, no extra system call)
                    if name[-3:] == ".md" and name[0] != "." and entry.is_file(follow_symlinks=False):
                        st = entry.stat()
                        out[prefix + name] = _disk_entry(DiskEntry, (st.st_mtime_ns, st.st_size, None, st.st_ino))
                        continue
                except OSError:
                    continue
                if name.startswith("."):
                    continue
                self._other_entry(folder, prefix, name, entry, out, stack, seen_dirs)

    def _other_entry(
        self,
        folder: Path,
        prefix: str,
        name: str,
        entry: os.DirEntry,
        out: dict[str, DiskEntry],
        stack: list[Path],
        seen_dirs: set[Path],
    ) -> None:
        """An entry of `memories/` that is not a plain Markdown file: a symlink, a folder, anything else."""
        rel, path = prefix + name, folder / name
        if entry.is_symlink():
            self.saw_symlink = True
            problem = self._symlink_problem(path)
            if problem:
                if name.endswith(".md"):
                    out[rel] = DiskEntry(0, 0, problem)
                return
        try:
            if entry.is_dir():
                real = path.resolve()
                if real not in seen_dirs:
                    seen_dirs.add(real)
                    stack.append(path)
                return
            if not name.endswith(".md") or not entry.is_file():
                return
            st = entry.stat()
        except OSError:
            return
        out[rel] = DiskEntry(st.st_mtime_ns, st.st_size, inode=st.st_ino)

    def _symlink_problem(self, path: Path) -> str | None:
        try:
            real = path.resolve(strict=True)
        except (OSError, RuntimeError):
            return "symlink loop or dangling symlink"
        if real != self.real_root and self.real_root not in real.parents:
            return "symlink points outside the store"
        if real != self.real_memories and self.real_memories not in real.parents:
            # .index/, dictionary.md and the rest of the store are not memories, even through a link
            return "symlink points outside memories/"
        return None

    @staticmethod
    def digest(disk: dict[str, DiskEntry]) -> str:
        """One value for everything a full pass compares: each path in scan order with its stamp and problem.

        marshal (C speed, ~2 ms at 10k files) encodes the same data as the same bytes; different bytes
        for the same data (another order, another Python) only cost a full comparison, never a skip. The
        stamps go in as one flat list (four values per path, in C), not a tuple built per path; hashed with
        BLAKE2b (256 bits: as safe against an accidental match as sha256, without OpenSSL's load)."""
        data = marshal.dumps(list(disk), 2) + marshal.dumps(list(chain.from_iterable(disk.values())), 2)
        return blake2b(data, digest_size=32).hexdigest()

    @staticmethod
    def unchanged(row: ledger.FileRow | None, entry: DiskEntry) -> bool:
        if row is None or row.mtime_ns != entry.mtime_ns or row.size != entry.size:
            return False
        # the inode catches files swapped by renames that keep size and mtime (0 = unknown, e.g. Windows)
        return not row.inode or not entry.inode or row.inode == entry.inode


def reconcile(
    store: Store,
    conn: sqlite3.Connection,
    dictionary: EntityDictionary,
    gate: StatGate | None = None,
    suspects: set[str] | frozenset[str] = frozenset(),
    progress: Callable[[int, int], None] | None = None,
    owners_before: dict[str, str] | None = None,
    rules: PassRules = EVERY_CALL,
) -> ReconcileReport:
    """One pass. `suspects` (paths a change watch saw written) are hashed even when their stat looks unchanged.

    `progress(done, total)` hears how many of the scanned files have been looked at (reindex shows it).
    Two files with one id: the one that keeps it is the one the index held it at (`owners_before`, id -> path;
    default: the ledger before this pass), then the older `created`, then the path; the other is given a new id
    of its own, in its file (`_settle_duplicates`). `rules`: see `PassRules`."""
    started = time.perf_counter()
    gate = gate or StatGate(store)
    disk = gate.scan()
    step = progress or (lambda done, total: None)
    # The last full pass found exactly this scan in line with the ledger, and nothing wrote the ledger since
    # (every ledger write forgets the digest): the comparison would find nothing, so it is skipped.
    digest = StatGate.digest(disk) if not suspects else ""
    if digest and ledger.scan_digest_holds(conn, digest):
        step(len(disk), len(disk))
        report = ReconcileReport(scanned=len(disk), unparseable=ledger.unparseable_count(conn))
        report.seconds = round(time.perf_counter() - started, 6)
        return report
    known = ledger.file_rows(conn)
    report = ReconcileReport(scanned=len(disk))
    # a memory file new to an index already built was added by hand (a first build cannot tell: "origin
    # unknown"); one whose id just left another path was renamed, not made
    hand = _HandEdits({known[rel].memory_id for rel in known.keys() - disk.keys()}) if known else None
    with ix.atomic(conn):
        writes_before = conn.total_changes
        for rel in sorted(known.keys() - disk.keys()):
            ledger.drop_file(conn, rel)
            report.removed += 1
        # owners only matter for files recorded as duplicates; skip the full id scan when there are none
        has_dupes = any(r.error and r.error.startswith("duplicate id") for r in known.values())
        owners = memory_ids(conn) if has_dupes else set()
        new: list[str] = []
        for done, rel in enumerate(sorted(disk)):
            step(done, len(disk))
            entry = disk[rel]
            row = known.get(rel)
            retry = row is not None and _duplicate_owner_gone(row, owners)
            if entry.problem is not None:
                if row is None or row.error != entry.problem:
                    ix.drop_memory_at(conn, rel)
                    ledger.put_file(conn, ledger.FileRow(rel, 0, 0, "", None, entry.problem))
                    report.reindexed += 1
                continue
            if StatGate.unchanged(row, entry) and not retry and rel not in suspects:
                continue
            known_sha = None if retry else _sha(row)
            outcome = index_file(store, conn, dictionary, rel, known_sha, hand, rules.reactivates(rel))
            if outcome.quarantined:
                report.quarantined.append(rel)
            if outcome.new:
                new.append(rel)
            report.hashed += outcome.hashed
            report.reindexed += outcome.reindexed
            report.removed += outcome.removed
            if outcome.memory_id:
                owners.add(outcome.memory_id)
        # Swapped or rotated files (a↔b by hand, a git checkout) make a file look like a duplicate of
        # one whose old row is only replaced later in this pass: retry those now, so this call's
        # answer is already right instead of the next one's.
        dupes = ledger.duplicate_rows(conn)
        owners = memory_ids(conn) if dupes else set()
        for row in dupes:
            if row.path in disk and _duplicate_owner_gone(row, owners):
                outcome = index_file(store, conn, dictionary, row.path, reactivate=rules.reactivates(row.path))
                if outcome.memory_id:
                    owners.add(outcome.memory_id)
        if new:
            _name_teammates(store, conn, new)
        if dupes:
            if owners_before is None:  # the ledger as this pass found it (only a duplicate needs it)
                owners_before = {r.memory_id: r.path for r in known.values() if r.memory_id and not r.error}
            report.renumbered = _settle_duplicates(store, conn, dictionary, owners_before, rules.write)
        step(len(disk), len(disk))
        if report.reindexed >= max(BULK_REINDEX, len(disk) // 10):
            ix.optimize_search(conn)
        if digest and conn.total_changes == writes_before and not (dupes and ledger.has_duplicate_ids(conn)):
            # this pass changed nothing: the same scan next time would not either (a duplicate left by a pass that
            # could not write is settled by the next one that can)
            ledger.record_scan_digest(conn, digest)
    if not known and report.reindexed >= BULK_REINDEX and not conn.in_transaction:
        ix.compact(conn)  # built from nothing: the pages the merge above freed are given back (~15% of the file)
    report.unparseable = ledger.unparseable_count(conn)
    report.seconds = round(time.perf_counter() - started, 6)
    return report


def reconcile_files(
    store: Store, conn: sqlite3.Connection, dictionary: EntityDictionary, rels: set[str]
) -> ReconcileReport | None:
    """A pass over only these files (a change watch named them, and no folder changed): what a full pass
    would do for them, without stat-ing the rest. None when only a full pass can judge (a duplicate id,
    a symlink, something that is not a regular file): nothing is changed then."""
    started = time.perf_counter()
    if ledger.has_duplicate_ids(conn):
        return None
    # the scan's rules: Markdown files only, hidden names skipped
    wanted = sorted(r for r in rels if r.endswith(".md") and not any(p.startswith(".") for p in r.split("/")))
    gone, present = [], []
    for rel in wanted:
        try:
            mode = os.lstat(store.root / rel).st_mode
        except FileNotFoundError:
            gone.append(rel)
            continue
        except OSError:
            return None
        if not stat.S_ISREG(mode):
            return None
        present.append(rel)
    known = ledger.file_rows_at(conn, wanted)
    report = ReconcileReport()
    hand = _HandEdits({known[rel].memory_id for rel in gone if rel in known})
    try:
        with ix.atomic(conn):
            for rel in gone:  # removals first, as in the full pass: a rename must not look like a duplicate
                if rel in known:
                    ledger.drop_file(conn, rel)
                    report.removed += 1
            for rel in present:
                outcome = index_file(store, conn, dictionary, rel, known_sha=_sha(known.get(rel)), hand=hand)
                if outcome.quarantined:
                    report.quarantined.append(rel)
                report.hashed += outcome.hashed
                report.reindexed += outcome.reindexed
                report.removed += outcome.removed
            if ledger.has_duplicate_ids(conn):  # this pass made one: only the full pass's retry settles it
                raise ix.Rollback
    except ix.Rollback:
        return None
    report.scanned = ledger.file_count(conn)
    report.unparseable = ledger.unparseable_count(conn)
    report.seconds = round(time.perf_counter() - started, 6)
    return report


def _settle_duplicates(
    store: Store, conn: sqlite3.Connection, dictionary: EntityDictionary, owners_before: dict[str, str], write: bool
) -> list[str]:
    """Every id held by two files or more: the file the index held it at keeps it, else the older `created`,
    else the first path (never the order a scan met them in); each other file is given a new id in its own file
    (a deterministic one: `canon.merge.new_id_for` of the id and the path, so replicas settling the same copy
    write the same bytes). A file that cannot be written (read-only, changed since it was read) stays listed
    as a duplicate, naming the file that keeps the id. Returns what was renumbered."""
    groups: dict[str, list[str]] = {}
    for row in ledger.duplicate_rows(conn):
        if row.memory_id:
            groups.setdefault(row.memory_id, []).append(row.path)
    renumbered: list[str] = []
    for mem_id, paths in groups.items():
        owner = ix.memory_path(conn, mem_id)
        if owner is None:
            continue
        claims = {rel: claim for rel in [owner, *paths] if (claim := _claim(store, rel, mem_id)) is not None}
        if owner not in claims or len(claims) < 2:
            continue
        keep = min(claims, key=lambda rel: (owners_before.get(mem_id) != rel, claims[rel][1], rel))
        moved = []
        for rel in sorted(claims.keys() - {keep}):
            new_id = _renumber(store, conn, rel, mem_id, claims[rel]) if write else None
            if new_id is not None:
                moved.append(rel)
                renumbered.append(f"{rel}: {mem_id} stays with {keep}; this file is now {new_id}")
        for rel in moved:  # under their new ids first: the id is then free for the file that keeps it
            index_file(store, conn, dictionary, rel, reactivate=False)
        if keep != owner:
            if owner not in moved:
                ix.drop_memory_at(conn, owner)
            index_file(store, conn, dictionary, keep, reactivate=False)
            if owner not in moved:  # recorded again, now as the duplicate of the file that keeps the id
                index_file(store, conn, dictionary, owner, reactivate=False)
    return renumbered


def _claim(store: Store, rel: str, mem_id: str) -> tuple[bytes, str] | None:
    """(bytes, created) of a file that still holds `mem_id`; None when it does not (changed, gone, unreadable)."""
    try:
        path = store.memory_file(rel)
        st, data = canon.read_regular(path)
        mem = canon.parse(data, Path(rel).stem, _iso_from_ns(st.st_mtime_ns))
    except (OSError, ContainmentError, canon.CanonError):
        return None
    return (data, mem.created) if mem.id == mem_id else None


def _renumber(store: Store, conn: sqlite3.Connection, rel: str, mem_id: str, claim: tuple[bytes, str]) -> str | None:
    """Give the file at `rel` a new id of its own (only the `id:` line changes); None when it cannot be written."""
    data, created = claim
    from ..canon.merge import new_id_for  # only a duplicate id loads the merge module (and ruamel with it)

    new_id = new_id_for(mem_id, rel.encode("utf-8"), created)
    if ix.memory_path(conn, new_id) is not None:
        return None
    try:
        canon.rewrite(
            store.memory_file(rel), lambda meta: meta.__setitem__("id", new_id), expected_sha=canon.sha256_bytes(data)
        )
    except (OSError, ContainmentError, canon.CanonError):
        return None
    return new_id


def _sha(row: ledger.FileRow | None) -> str | None:
    return row.sha256 if row is not None else None


def _duplicate_owner_gone(row: ledger.FileRow, owners: set[str]) -> bool:
    return bool(row.error and row.error.startswith("duplicate id") and row.memory_id not in owners)


def _name_teammates(store: Store, conn: sqlite3.Connection, rels: list[str]) -> None:
    """Memory files new to the index that another git author added are shown as theirs (store/arrivals.py)."""
    from .arrivals import authors  # git, only when a pass found new files: a one-shot call that finds none skips it

    added = authors(store, rels)
    if not added:
        return
    shown = ix.memory_origins(conn, list(added))
    for rel, author in added.items():
        if rel in shown:
            ix.set_origin(conn, rel, provenance.by_teammate(author, shown[rel]))


@dataclass(frozen=True)
class _HandEdits:
    """A pass that may tell a file added by hand: a new file without an `origin:` line whose id is not one of
    `renamed` (ids whose old path this pass dropped) is recorded in the index as a hand edit. The file itself is
    not rewritten: the person may still have it open in an editor."""

    renamed: set[str | None]


@dataclass
class FileOutcome:
    hashed: int = 0
    reindexed: int = 0
    removed: int = 0
    memory_id: str | None = None
    quarantined: bool = False  # this pass put the memory in quarantine
    new: bool = False  # a memory at a path the index did not hold one at: who added it is asked of git


def index_file(
    store: Store,
    conn: sqlite3.Connection,
    dictionary: EntityDictionary,
    rel: str,
    known_sha: str | None = None,
    hand: _HandEdits | None = None,
    reactivate: bool = True,
) -> FileOutcome:
    """Hash one file and, when its content is new, parse and index it (inside the caller's transaction).
    `hand`: this pass may record a new file without an origin as a hand edit (see _HandEdits). `reactivate`: an
    archived memory whose body changed is a person using it again, and is rewritten as active."""
    outcome = FileOutcome()
    try:
        path = store.memory_file(rel)
    except ContainmentError as exc:  # defence in depth: the scan already reports links leading outside
        ix.drop_memory_at(conn, rel)
        ledger.put_file(conn, ledger.FileRow(rel, 0, 0, "", None, str(exc)[:500]))
        outcome.reindexed = 1
        return outcome
    try:
        before, data = canon.read_regular(path, cap=canon.MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        ledger.drop_file(conn, rel)
        outcome.removed = 1
        return outcome
    except OSError as exc:
        ix.drop_memory_at(conn, rel)
        ledger.put_file(conn, ledger.FileRow(rel, 0, 0, "", None, f"cannot read: {exc.strerror}"))
        outcome.reindexed = 1
        return outcome
    outcome.hashed = 1
    sha = canon.sha256_bytes(data)
    mtime = _gate_mtime(before.st_mtime_ns)
    if known_sha is not None and sha == known_sha:
        ledger.restamp_file(conn, rel, mtime, before.st_size, before.st_ino)
        return outcome
    outcome.reindexed = 1
    fallback_time = _iso_from_ns(before.st_mtime_ns)
    try:
        mem = canon.parse(data, Path(rel).stem, fallback_time)
    except Exception as exc:
        # CanonError is the expected kind; anything else is a parser bug, and one file must never stop
        # the pass that keeps every other memory findable: record it as this file's reason instead
        reason = str(exc) if isinstance(exc, canon.CanonError) else f"cannot parse ({type(exc).__name__}: {exc})"
        reason = reason.encode("utf-8", "backslashreplace").decode("utf-8")  # always storable in SQLite
        ix.drop_memory_at(conn, rel)
        ledger.put_file(conn, ledger.FileRow(rel, mtime, before.st_size, sha, None, reason[:500], before.st_ino))
        return outcome
    owner = ix.memory_path(conn, mem.id)
    if owner is not None and owner != rel:
        ix.drop_memory_at(conn, rel)
        reason = f"duplicate id {mem.id} (also in {owner})"
        ledger.put_file(conn, ledger.FileRow(rel, mtime, before.st_size, sha, mem.id, reason, before.st_ino))
        return outcome
    previous = ix.get_memory(conn, path=rel)
    if mem.origin is None:
        if previous is not None and previous.id == mem.id and previous.origin == provenance.HAND.text:
            mem.origin = previous.origin  # the label reconcile gave it when it appeared stays with it
        elif previous is None and hand is not None and mem.id not in hand.renamed:
            mem.origin = provenance.HAND.text
    if previous is not None and previous.id == mem.id:
        mem.origin = provenance.still_from(previous.origin, mem.origin)  # a teammate's memory stays theirs
    if (
        reactivate
        and previous is not None
        and previous.state == State.ARCHIVED.value
        and mem.state is State.ARCHIVED
        and previous.body != mem.body
    ):
        # A person edited an archived memory's body by hand: they are using it again. Only when the file
        # is still the bytes just read (a newer save is never overwritten; the next pass sees it), and
        # only when it can be written (a read-only store keeps it archived).
        try:
            sha = canon.rewrite(path, _reactivate, expected_sha=sha)
            before = path.stat()
        except (canon.CanonError, OSError):
            pass
        else:
            mtime = _gate_mtime(before.st_mtime_ns)
            mem.state = State.ACTIVE
            mem.updated = canon.now_iso()
    # the screen's tables load with the first file a pass indexes, not with every call (a recall of unchanged files)
    from ..domain.screen import memory_texts, quarantine_marker, released_for, screen

    if mem.quarantine is None and not released_for(mem.released, mem.title, mem.body):
        # every way in that is not a tool call (a hand edit, a sync, a copied file, a store from before the
        # screen) is screened here, on the first read of new content. Held in the index only: the server never
        # rewrites a file a person may be editing (`reindex`, asked for, writes the marker into the file)
        verdict = screen(memory_texts(mem.title, mem.body, mem.source, mem.entities))
        if not verdict.clean:
            mem.quarantine = quarantine_marker(verdict, canon.now_iso()[:10])
            outcome.quarantined = True
    ix.put_memory(conn, rel, mem, dictionary.normalise(mem.entities))
    ledger.put_file(conn, ledger.FileRow(rel, mtime, before.st_size, sha, mem.id, None, before.st_ino))
    outcome.memory_id, outcome.new = mem.id, previous is None
    return outcome


def _reactivate(meta: dict) -> None:
    meta["state"] = State.ACTIVE.value
    meta["updated"] = canon.now_iso()


def _gate_mtime(mtime_ns: int) -> int:
    return 0 if time.time_ns() - mtime_ns < RACY_WINDOW_NS else mtime_ns


def _iso_from_ns(ns: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ns / 1e9))
