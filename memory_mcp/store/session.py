"""One open store: its index connection, its locks, its dictionary, and the reconcile-first rule.

Every operation runs inside `StoreSession.transaction()`: a per-process lock (tool calls run in worker
threads; granted in arrival order, `fair_lock.py`) plus a cross-process file lock (several servers and the
CLI may share a store), then a reconcile so the answer reflects the canon as it is on disk right now.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..canon import files as canon
from ..canon.dictionary import DictionaryFile, EntityDictionary
from ..domain.answers import DocumentsReport, IndexReport, ReconcileReport, ScopeReport
from ..domain.errors import StoreAccessError
from ..index import conflict_pairs as conflict_table
from ..index import db as ix
from ..index import ledger
from ..index import vectors as vector_table
from ..index.document_tables import has_doc_files
from ..index.reads import memory_ids
from .documents import DocumentSource, reconcile_documents
from .fair_lock import FairLock
from .lock import StoreLock
from .paths import Store
from .reconcile import EVERY_CALL, PassRules, StatGate, index_file, reconcile, reconcile_files
from .watch import CanonWatch

# SQLite errors that mean "wait", not "this index is damaged or unusable"
_TRANSIENT_SQLITE = ("SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_INTERRUPT", "SQLITE_NOMEM")


# every answer's index report lists at most this many open conflicts per scope, with the total beside it
REPORTED_CONFLICTS = 10


class RecallCounts:
    """The recalls of a session's memories not yet written (`heat`): memory id → (recalls, the last one's time).

    A call that writes anyway (`transaction`) writes them under the store lock it holds, and so does the session's
    close; a keyword recall (`reading`) writes them only once `WRITE_EVERY_S` has passed since the last write. A
    write per recall was a write transaction per recall: 16 clients' recalls in worker processes committed ~200
    times a second, held the store lock longer and made every other process re-check the index at its next call
    (two processes recalling side by side: 5-15% fewer recalls than without heat). Ranking adds what is counted
    here (`added_to`), so this process's next recall ranks by its own counts at once; other processes see them
    within `WRITE_EVERY_S`, and a process killed outright loses at most that long of them (heat is derived)."""

    WRITE_EVERY_S = 1.0
    MAX_PENDING = 1024  # memories counted before a write is due anyway

    def __init__(self) -> None:
        self._counts: dict[str, tuple[int, str]] = {}
        self._lock = threading.Lock()  # recalls of several threads count here without the session's lock
        self._written_at = time.monotonic()

    def __bool__(self) -> bool:
        return bool(self._counts)

    def due(self) -> bool:
        """Whether a recall should write the counts now."""
        return bool(self._counts) and (
            time.monotonic() - self._written_at >= self.WRITE_EVERY_S or len(self._counts) >= self.MAX_PENDING
        )

    def added_to(self, heat: dict[str, tuple[int, str]], ids: list[str]) -> dict[str, tuple[int, str]]:
        """`heat` as read from the index for these ids, with what is counted here and not yet written added."""
        with self._lock:
            pending = {mem_id: self._counts[mem_id] for mem_id in ids if mem_id in self._counts}
        if not pending:
            return heat
        out = dict(heat)
        for mem_id, (n, last) in pending.items():
            out[mem_id] = (out.get(mem_id, (0, last))[0] + n, last)  # as `add_heat` will write it
        return out

    def add(self, ids: list[str], when: str) -> None:
        with self._lock:
            for mem_id in ids:
                self._counts[mem_id] = (self._counts.get(mem_id, (0, ""))[0] + 1, when)

    def write(self, conn: sqlite3.Connection) -> None:
        """Write what was counted (the store lock held). Heat is derived and index-only: an index that cannot
        take it now loses these counts, never the call."""
        with self._lock:
            counts, self._counts = self._counts, {}
            self._written_at = time.monotonic()
        if counts:
            try:
                ix.add_heat(conn, counts)
            except sqlite3.Error:
                pass


@dataclass(frozen=True)
class QuietBaseline:
    """The index as of the last pass the change watch was armed for. What can differ from the disk since is
    what the watch reports (files changed on disk) plus what `rechecks` names (ledger rows others wrote)."""

    conn: sqlite3.Connection
    data_version: int  # PRAGMA data_version: it changes when another connection commits
    ledger_shape: str  # `ledger.shape`: row count and top rowid
    log_position: int  # `ledger.log_position`

    @classmethod
    def of(cls, conn: sqlite3.Connection, data_version: int) -> QuietBaseline:
        return cls(conn, data_version, ledger.shape(conn), ledger.log_position(conn))

    def holds(self, conn: sqlite3.Connection | None) -> bool:
        """Whether no other connection has committed to the index since (`conn` is the one it was taken on)."""
        return conn is self.conn and ix.data_version(conn) == self.data_version

    def rechecks(self, conn: sqlite3.Connection) -> set[str] | None:
        """The ledger paths other processes wrote since (another server's remember: re-check those files too),
        or None when only a full pass can tell: another connection, an unlogged ledger change (a stray tool:
        its rows moved with nothing in the log), a log trimmed past this point or a write of every file.
        Commits that left the ledger alone (a recall's heat) need nothing re-checked."""
        if conn is not self.conn:
            return None
        if self.holds(conn):
            return set()
        written = ledger.written_since(conn, self.log_position)
        if written is None or (not written and ledger.shape(conn) != self.ledger_shape):
            return None
        return written


class StoreSession:
    def __init__(
        self,
        store: Store,
        scope: str = "global",
        sources: Sequence[DocumentSource] = (),
        chunk_chars: int = 1200,
        change_watch: bool = True,
        one_call: bool = False,
    ) -> None:
        self.store = store
        self.scope = scope
        # document sources are indexed by the store that is this server's home (local when a project is bound)
        self.sources = tuple(sources)
        self.chunk_chars = chunk_chars
        self.last_documents = DocumentsReport()
        # calls of this process queue here in arrival order (many HTTP sessions: no call is overtaken)
        self._thread_lock = FairLock()
        self.recalls = RecallCounts()  # recalls' heat not yet written (`RecallCounts`)
        self._conn: sqlite3.Connection | None = None
        self._db_inode: int | None = None
        # (inode, size, mtime_ns) of the index file when this session last let go of it: a change seen at the
        # next call means another process checkpointed it, or something damaged it (then it is re-checked)
        self._db_stamp: tuple[int, int, int] | None = None
        self._recorded: str | None = None  # what this session last recorded of the index file (`ix.record_sound`)
        # set when the index file cannot be used (read-only .index/, read-only disk): why, for every answer
        self.index_in_memory: str | None = None
        self._index_dir_probe: tuple | None = None
        self._pending_rebuild_reason: str | None = None
        self._dictionary = DictionaryFile(store.dictionary_path)
        self.last_report = ReconcileReport()
        store.check_contained()  # before anything is created: a symlinked folder must not be written through
        store.ensure()
        self._store_lock = StoreLock(store.root, store.lock_path)
        self._gate = StatGate(store)
        self._watch = CanonWatch(store.memories_dir, enabled=change_watch, one_call=one_call)
        self._quiet_baseline: QuietBaseline | None = None
        self._documents_none = False  # the last pass found no document source and no document indexed

    # ------------------------------------------------------------ connection

    @property
    def dictionary(self) -> EntityDictionary:
        return self._dictionary.dictionary

    @property
    def conn(self) -> sqlite3.Connection:
        assert self._conn is not None, "use inside transaction()"
        return self._conn

    def _open(self) -> None:
        """Open the index file, rebuilding it when missing, foreign, stale or corrupt; in memory when unwritable."""
        try:
            self._open_file()
            self.index_in_memory = None
        except (sqlite3.DatabaseError, OSError) as exc:
            if _transient(exc):
                raise
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            self._open_memory(f"index file not usable ({_why(exc, self.store)})")

    def _open_memory(self, why: str) -> None:
        """A private in-memory index rebuilt from canon: answers keep coming when .index/ cannot be written."""
        conn = ix.connect(":memory:")
        ix.create_schema(conn)
        self._conn = conn
        self._db_inode, self._db_stamp = None, None
        self.index_in_memory = f"{why}: answering from an in-memory index rebuilt from the Markdown files"
        self._pending_rebuild_reason = self.index_in_memory
        self._index_dir_probe = _probe_index_dir(self.store)

    def _open_file(self) -> None:
        path = self.store.db_path
        reason: str | None = None
        if path.exists():
            sound = ix.as_recorded(path)  # before connecting: opening may create or replay the write-ahead log
            try:
                conn = ix.connect(path)
                ix.migrate(conn)
                reason = ix.schema_problem(conn, integrity=not sound)
            except sqlite3.DatabaseError as exc:
                conn, reason = None, f"index unreadable: {exc}"
            if reason is None:
                ix.set_meta(conn, "opened_at", canon.now_iso())  # fails here, not mid-call, when read-only
                self._adopt(conn)
                return
            if conn is not None:
                conn.close()
            ix.remove_files(path)
        else:
            reason = "index missing"
        conn = ix.connect(path)
        ix.create_schema(conn)
        self._adopt(conn)
        self._pending_rebuild_reason = reason

    def _adopt(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._db_inode = self.store.db_path.stat().st_ino
        self._db_stamp = self._file_stamp()

    def _file_stamp(self) -> tuple[int, int, int] | None:
        try:
            st = self.store.db_path.stat()
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def _check_connection(self) -> None:
        if self._conn is not None and self.index_in_memory is not None:
            probe = _probe_index_dir(self.store)
            if probe != self._index_dir_probe:
                self._index_dir_probe = probe
                self._retry_file()
            return
        else:
            # another process may have rebuilt (replaced) or checkpointed the file, someone deleted .index/,
            # or something truncated or overwrote it: anything but "as we left it" is opened and checked again
            # (a fresh connection, so no cached page hides the damage)
            # (the same file left sound by another process's call, its commit checkpointed: the connection stays)
            stamp = self._file_stamp()
            if self._conn is not None and stamp is not None:
                if stamp == self._db_stamp or (stamp[0] == self._db_inode and ix.as_recorded(self.store.db_path)):
                    self._db_stamp = stamp
                    return
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self.store.ensure()
        self._open()

    def _retry_file(self) -> None:
        """In memory, and .index/ changed (permissions restored, file replaced): use the file again if it works."""
        memory_conn, self._conn = self._conn, None
        try:
            self._open_file()
        except (sqlite3.DatabaseError, OSError):
            self._conn = memory_conn  # still unusable: keep answering from memory
            return
        if memory_conn is not None:
            memory_conn.close()
        self.index_in_memory = None

    def _discard(self, reason: str) -> None:
        """Drop a damaged or unusable index and open a fresh one (a file when possible, else memory)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self.index_in_memory is None:
            try:
                ix.remove_files(self.store.db_path)
            except OSError:
                pass  # read-only: _open falls back to memory
        self._open()
        self._pending_rebuild_reason = self.index_in_memory or reason

    def close(self) -> None:
        with self._thread_lock:
            self._watch.close()
            self._quiet_baseline = None
            if self._conn is not None and self.recalls:
                try:
                    with self._store_lock:
                        self.recalls.write(self.conn)
                        self._let_go(damaged=False)
                except StoreAccessError:
                    pass  # a store busy for a minute at shutdown: these recall counts are lost, nothing else
            if self._conn is not None:
                # the file as this session's last call left it (nobody else wrote or damaged it since) is recorded
                # again once the connection is gone (closing checkpoints it), which spares the next open its check
                untouched = self.index_in_memory is None and self._file_stamp() == self._db_stamp
                self._conn.close()
                self._conn = None
                if untouched:
                    self._recorded = ix.record_sound(self.store.db_path)

    # ------------------------------------------------------------ the reconcile-first rule

    @contextmanager
    def transaction(self, catch_up: bool = True, rules: PassRules = EVERY_CALL) -> Iterator[ReconcileReport]:
        """The store lock held, the reconcile-first pass done by `rules` (a sync's, a verify's; `catch_up=False`:
        not, when `rebuild()` comes next)."""
        with exclusive(self):
            if catch_up:
                report = self._catch_up(rules=rules)
            else:  # the rebuild would only do it again (on an index missing or empty, the whole store twice)
                self._check_connection()
                report = ReconcileReport(scan="none")
            damaged = False
            try:
                yield report
            except OSError as exc:
                # a read-only store, a full disk, a file removed under us: say so instead of a bare failure
                raise StoreAccessError(_access_message(exc, self.store)) from exc
            except sqlite3.DatabaseError:
                damaged = True
                raise
            finally:
                self._let_go(damaged)

    @contextmanager
    def reading(self) -> Iterator[ReconcileReport]:
        """`transaction()` for a call that only reads the index (a keyword recall): reconcile under the store lock,
        then read one snapshot of the index (`ix.read_snapshot`) with the lock let go, so the searches of several
        processes run side by side. What another process writes meanwhile is seen by the next call.
        When nothing changed since the last pass (`_quiet`), no lock at all: a write finished meanwhile (under the
        lock, files before commit) is in the snapshot whole or not at all, as if this call came earlier or later."""
        with self._thread_lock:
            self.store.check_contained()
            if self._quiet():
                report = self._unchanged_report()
                snapshot = ix.read_snapshot(self.conn)
                snapshot.__enter__()
            else:
                with self._store_lock:
                    report = self._catch_up(reading=True)
                    self._let_go(damaged=False)
                    snapshot = ix.read_snapshot(self.conn)
                    snapshot.__enter__()  # taken under the lock: the snapshot is the index this reconcile left
            try:
                yield report
            except OSError as exc:
                raise StoreAccessError(_access_message(exc, self.store)) from exc
            finally:
                snapshot.__exit__(None, None, None)

    def _quiet(self) -> bool:
        """Whether a reconcile now would find nothing and write nothing (it only reads to tell)."""
        return (
            self._quiet_baseline is not None
            and self.index_in_memory is None
            and self._pending_rebuild_reason is None
            and self._documents_none
            and not self.recalls.due()
            and self._watch.quiet()  # armed, nothing queued
            and self._dictionary.unchanged()
            and self._file_stamp() == self._db_stamp
            and self._quiet_baseline.holds(self._conn)  # no other process's commit since the last pass
        )

    def _catch_up(self, reading: bool = False, rules: PassRules = EVERY_CALL) -> ReconcileReport:
        """The start of every call, the store lock held: reconcile, then write the recalls counted since (a
        recall only when they are due: `RecallCounts`)."""
        report = self._reconcile_first(rules)
        self._reconcile_documents()
        if not reading or self.recalls.due():
            self.recalls.write(self.conn)
        return report

    def _let_go(self, damaged: bool) -> None:
        """Before the store lock is released: the index file as this call leaves it (`_check_connection`)."""
        self._db_stamp = self._file_stamp() if self.index_in_memory is None else None
        if not damaged and self.index_in_memory is None:
            # the index as this call left it, found sound: the next process to open it may skip its
            # integrity check while nothing else touches it (written only when it changed)
            self._recorded = ix.record_sound(self.store.db_path, self._recorded)

    def _reconcile_first(self, rules: PassRules = EVERY_CALL) -> ReconcileReport:
        for attempt in (1, 2):
            self._check_connection()
            try:
                dictionary_changed = self._load_dictionary()
                changes = self._watch.poll()
                trusted = changes is not None and changes.complete and not dictionary_changed and rules == EVERY_CALL
                rechecks = self._rechecks() if trusted else None
                if changes is not None and rechecks is not None:
                    named = changes.files | {self.store.root / rel for rel in rechecks}
                    if not named:
                        return self._unchanged_report()
                    report = self._reconcile_named(named)
                    if report is not None:
                        return report
                self._quiet_baseline = None
                data_version = ix.data_version(self.conn)
                suspects = {self.store.relative(p) for p in changes.files} if changes else set()
                report = reconcile(self.store, self.conn, self.dictionary, self._gate, suspects, rules=rules)
                if self._pending_rebuild_reason:
                    report.rebuilt, report.rebuild_reason = True, self._pending_rebuild_reason
                    self._pending_rebuild_reason = None
                report.index_in_memory = self.index_in_memory
                self.last_report = report
                ix.set_meta(self.conn, "last_reconcile", report.model_dump_json())
                self._rearm_watch(data_version)
                return report
            except sqlite3.DatabaseError as exc:
                # damage the open-time checks could not see (or the file became read-only): rebuild once
                if attempt == 2 or _transient(exc):
                    raise
                self._discard(f"index failed during reconcile ({_why(exc, self.store)})")
        raise AssertionError("unreachable")

    def _rechecks(self) -> set[str] | None:
        """What besides the watch's files must be re-checked (`QuietBaseline.rechecks`); None: a full pass. When
        others committed nothing to re-check (a recall's heat), the baseline moves on: a next call may read unlocked."""
        baseline = self._quiet_baseline
        if baseline is None or self._pending_rebuild_reason or self._conn is None:
            return None
        if baseline.holds(self._conn):
            return set()
        if (written := baseline.rechecks(self._conn)) == set():
            self._quiet_baseline = QuietBaseline.of(self._conn, ix.data_version(self._conn))
        return written

    def _reconcile_named(self, files: set[Path]) -> ReconcileReport | None:
        """Only the files the watch named, when nothing else can have changed; None: do a full pass."""
        data_version = ix.data_version(self.conn)
        report = reconcile_files(self.store, self.conn, self.dictionary, {self.store.relative(p) for p in files})
        if report is None:
            return None
        report.index_in_memory, report.scan = self.index_in_memory, "changed-files"
        self.last_report = report
        ix.set_meta(self.conn, "last_reconcile", report.model_dump_json())
        self._watch.resume()
        self._quiet_baseline = QuietBaseline.of(self.conn, data_version)
        return report

    def _unchanged_report(self) -> ReconcileReport:
        last = self.last_report
        return ReconcileReport(
            scanned=last.scanned, unparseable=last.unparseable, index_in_memory=self.index_in_memory, scan="none"
        )

    @property
    def change_watch(self) -> str:
        return self._watch.describe(self._gate.saw_symlink)

    def _rearm_watch(self, data_version: int) -> None:
        # a "racy" entry (mtime 0: read within the mtime tick of a write) needs its folder watched before it was read
        if not self._watch.active:
            return  # nothing to arm (and no need to look for racy entries across the whole ledger)
        racy = ledger.has_racy_stamp(self.conn)
        if self._watch.rearm(self._gate.folders, trusted=not self._gate.saw_symlink, racy=racy):
            self._quiet_baseline = QuietBaseline.of(self.conn, data_version)

    def _reconcile_documents(self) -> None:
        self._documents_none = not self.sources and not has_doc_files(self.conn)
        if self._documents_none:
            self.last_documents = DocumentsReport()
            return
        with ix.atomic(self.conn):
            self.last_documents = reconcile_documents(self.conn, self.sources, self.chunk_chars)

    def _load_dictionary(self) -> bool:
        """Reload dictionary.md when it changed; True when it did (every file is then re-read)."""
        if not self._dictionary.reload():
            return False
        if ix.meta_value(self.conn, "dictionary_sha256") != self._dictionary.digest:
            # entity spellings may normalise differently now: have every file re-read on this pass
            ledger.forget_stamps(self.conn)
            ix.set_meta(self.conn, "dictionary_sha256", self._dictionary.digest)
        return True

    def write_files(self, rels: list[str]) -> None:
        """Index files the service just wrote, so the next call does not see them as hand edits."""
        with ix.atomic(self.conn):
            for rel in rels:
                index_file(self.store, self.conn, self.dictionary, rel)

    def rebuild(
        self, progress: Callable[[int, int], None] | None = None, rules: PassRules = EVERY_CALL
    ) -> tuple[ReconcileReport, dict[str, tuple[int, str]]]:
        """Drop the index file and rebuild it from canon; recall counts and which file holds each id are carried
        over when readable. `progress(done, total)` hears how many files are indexed; `rules`: `PassRules`."""
        heat: dict[str, tuple[int, str]] = {}
        self.recalls.write(self.conn)  # counted since the last call: carried over with the rest
        owners: dict[str, str] | None = None
        try:
            heat, owners = ix.all_heat(self.conn), ledger.id_holders(self.conn)
        except sqlite3.DatabaseError:
            pass
        # embeddings are keyed by content hash: unchanged text keeps its vector, so a rebuild re-embeds nothing
        vectors = vector_table.export_vectors(self.conn)
        self.conn.close()
        self._conn = None
        if self.index_in_memory is None:
            try:
                ix.remove_files(self.store.db_path)
            except OSError:
                pass  # cannot remove it: _open checks it again, or falls back to memory
        self._open()
        self._pending_rebuild_reason = None
        self._quiet_baseline = None
        self._dictionary.forget()
        self._load_dictionary()
        report = reconcile(self.store, self.conn, self.dictionary, progress=progress, owners_before=owners, rules=rules)
        report.rebuilt, report.rebuild_reason = True, "memory_reindex"
        self._reconcile_documents()
        live = memory_ids(self.conn)
        ix.put_heat(self.conn, {mem_id: counts for mem_id, counts in heat.items() if mem_id in live})
        vector_table.import_vectors(self.conn, vectors)
        self.last_report = report
        return report, heat


@contextmanager
def exclusive(s: StoreSession) -> Iterator[None]:
    """Both of a session's locks, and no reconcile: every call's start, and sync's while it commits and merges,
    so that no other writer's acknowledged write lands in the middle of it."""
    with s._thread_lock:
        s.store.check_contained()  # on every call: a link may have been planted since the last one
        with s._store_lock:
            yield


def index_report(s: StoreSession, report: ReconcileReport) -> IndexReport:
    """What a call's answer says of one store's index: its reconcile, unparseable files and open conflicts."""
    return IndexReport(
        store=s.store.name,
        reconcile=report,
        scopes=[ScopeReport(scope=s.scope, store=s.store.name, root=str(s.store.root), reconcile=report)],
        unparseable=[u.model_copy(update={"scope": s.scope}) for u in ledger.unparseable_files(s.conn)],
        unresolved_conflicts=conflict_table.open_summaries(s.conn, s.scope, REPORTED_CONFLICTS),
        unresolved_conflicts_total=conflict_table.open_count(s.conn),
        documents=s.last_documents if s.sources or s.last_documents.removed else None,
    )


def _probe_index_dir(store: Store) -> tuple:
    # what would make the file usable again: permissions or owner of .index/ or the file, a new file
    out: list[object] = []
    for p in (store.index_dir, store.db_path):
        try:
            st = p.stat()
            out.append((st.st_mode, st.st_uid, st.st_ino))
        except OSError:
            out.append(None)
    return tuple(out)


def _transient(exc: BaseException) -> bool:
    return getattr(exc, "sqlite_errorname", "").startswith(_TRANSIENT_SQLITE)


def _why(exc: BaseException, store: Store) -> str:
    """The error as a person reads it: a file of the index's own (the database, its log, its records) is
    named by its folder, `.index/`, which is what a person can fix (permissions, a read-only mount)."""
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    name = getattr(exc, "filename", None)
    if name and Path(name).parent == store.index_dir:
        return f"{text} in {store.index_dir}/"
    return f"{text}: {name}" if name else text


def _access_message(exc: OSError, store: Store) -> str:
    where = exc.filename
    if where is not None:
        try:
            where = store.relative(Path(where))
        except ValueError:
            pass
    target = f" '{where}'" if where is not None else ""
    return f"store: cannot access{target}: {exc.strerror or exc}"
