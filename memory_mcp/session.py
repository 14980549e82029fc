"""One open store: its index connection, its locks, its dictionary, and the reconcile-first rule.

Every operation runs inside `StoreSession.transaction()`: a per-process lock (tool calls run in worker
threads) plus a cross-process file lock (several servers and the CLI may share a store), then a
reconcile so the answer reflects the canon as it is on disk right now.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock

from . import canon
from . import index as ix
from .dictionary import EntityDictionary
from .models import ConflictSummary, IndexReport, ReconcileReport
from .reconcile import index_file, reconcile, unparseable_files
from .store import Store


class StoreSession:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._thread_lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._db_inode: int | None = None
        self._pending_rebuild_reason: str | None = None
        self.dictionary = EntityDictionary()
        self._dictionary_stamp: tuple[int, int] | None = None
        self.last_report = ReconcileReport()
        store.ensure()
        self._file_lock = FileLock(str(store.lock_path), timeout=60, thread_local=False)

    # ------------------------------------------------------------ connection

    @property
    def conn(self) -> sqlite3.Connection:
        assert self._conn is not None, "use inside transaction()"
        return self._conn

    def _open(self) -> None:
        """Open the index, rebuilding it from scratch when it is missing, foreign, stale or corrupt."""
        path = self.store.db_path
        reason: str | None = None
        if path.exists():
            try:
                conn = ix.connect(path)
                reason = ix.schema_problem(conn)
            except sqlite3.DatabaseError as exc:
                conn, reason = None, f"index unreadable: {exc}"
            if reason is None:
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

    def _check_connection(self) -> None:
        # another process may have rebuilt (replaced) the file, or someone deleted .index/
        try:
            inode = self.store.db_path.stat().st_ino
        except FileNotFoundError:
            inode = None
        if self._conn is None or inode != self._db_inode:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            self.store.ensure()
            self._open()

    def close(self) -> None:
        with self._thread_lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # ------------------------------------------------------------ the reconcile-first rule

    @contextmanager
    def transaction(self) -> Iterator[ReconcileReport]:
        with self._thread_lock, self._file_lock:
            self._check_connection()
            self._load_dictionary()
            report = reconcile(self.store, self.conn, self.dictionary)
            if self._pending_rebuild_reason:
                report.rebuilt, report.rebuild_reason = True, self._pending_rebuild_reason
                self._pending_rebuild_reason = None
            self.last_report = report
            ix.set_meta(self.conn, "last_reconcile", report.model_dump_json())
            yield report

    def _load_dictionary(self) -> None:
        path = self.store.dictionary_path
        try:
            st = path.stat()
            stamp = (st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            stamp = None
        if stamp == self._dictionary_stamp:
            return
        self.dictionary = EntityDictionary.load(path)
        self._dictionary_stamp = stamp
        digest = canon.sha256_bytes(path.read_bytes()) if stamp else ""
        if ix.meta_value(self.conn, "dictionary_sha256") != digest:
            # entity spellings may normalise differently now: have every file re-read on this pass
            self.conn.execute("UPDATE files SET mtime_ns = -1, sha256 = ''")
            ix.set_meta(self.conn, "dictionary_sha256", digest)

    def write_files(self, rels: list[str]) -> None:
        """Index files the service just wrote, so the next call does not see them as hand edits."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            for rel in rels:
                index_file(self.store, self.conn, self.dictionary, rel)
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    def rebuild(self) -> tuple[ReconcileReport, dict[str, tuple[int, str]]]:
        """Drop the index file and rebuild it from canon; recall counts are carried over when readable."""
        heat: dict[str, tuple[int, str]] = {}
        try:
            heat = {r[0]: (r[1], r[2]) for r in self.conn.execute("SELECT memory_id, recalls, last_recalled FROM heat")}
        except sqlite3.DatabaseError:
            pass
        self.conn.close()
        self._conn = None
        ix.remove_files(self.store.db_path)
        self._open()
        self._pending_rebuild_reason = None
        self._dictionary_stamp = None
        self._load_dictionary()
        report = reconcile(self.store, self.conn, self.dictionary)
        report.rebuilt, report.rebuild_reason = True, "memory_reindex"
        live = {r[0] for r in self.conn.execute("SELECT id FROM memories")}
        self.conn.executemany(
            "INSERT OR REPLACE INTO heat (memory_id, recalls, last_recalled) VALUES (?,?,?)",
            [(k, v[0], v[1]) for k, v in heat.items() if k in live],
        )
        self.last_report = report
        return report, heat

    # ------------------------------------------------------------ shared report pieces

    def index_report(self, report: ReconcileReport) -> IndexReport:
        return IndexReport(
            store=self.store.name,
            reconcile=report,
            unparseable=unparseable_files(self.conn),
            unresolved_conflicts=self.open_conflicts(),
        )

    def open_conflicts(self) -> list[ConflictSummary]:
        rows = self.conn.execute(
            """SELECT c.pair_hash, c.a_id, c.b_id, c.detected,
                      coalesce(a.title, '(missing)'), coalesce(b.title, '(missing)')
               FROM conflicts c
               LEFT JOIN memories a ON a.id = c.a_id
               LEFT JOIN memories b ON b.id = c.b_id
               WHERE c.status = 'open' ORDER BY c.detected"""
        )
        return [
            ConflictSummary(pair_hash=r[0], a_id=r[1], b_id=r[2], detected=r[3], a_title=r[4], b_title=r[5])
            for r in rows
        ]

    def db_size(self) -> int:
        total = 0
        for suffix in ("", "-wal"):
            p = Path(str(self.store.db_path) + suffix)
            try:
                total += os.path.getsize(p)
            except OSError:
                pass
        return total
