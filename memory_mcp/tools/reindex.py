"""memory_reindex: reconcile, verify, close stale conflicts, embed what lacks a vector."""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path

from ..canon import files as canon
from ..domain.answers import Unparseable
from ..domain.models import AutoClosedConflict, Mismatch, ProgressFn, ReindexAnswer, stage_reporter
from ..index import db as ix
from ..index import reads
from ..index import vectors as vector_table
from ..index.fts_queries import word_sizes
from ..index.ledger import file_rows, file_rows_at, unparseable_files
from ..search import semantic as sem
from ..search.conflicts import (
    AUTO_CLOSED,
    StalePair,
    stale_open_pairs,
)
from ..store.reconcile import PassRules, StatGate
from ..store.session import StoreSession
from .state import ServiceState


def reindex(
    svc: ServiceState,
    verify: bool = False,
    store: str | None = None,
    scope: str | None = None,
    progress: ProgressFn | None = None,
) -> ReindexAnswer:
    """Rebuild every scope's index (or the one named); with verify, report mismatches first.

    With verify, no memory file is written: the stale conflicts a reindex would close are reported, not closed,
    and a copy's duplicate id is a finding, not renumbered (replicas that sync stay byte-identical).
    `progress` hears how far the rebuild ("index", per file) and the embedding ("embed") are."""
    started = time.perf_counter()
    files = memories = 0
    unparseable: list[Unparseable] = []
    mismatches: list[Mismatch] = []
    auto_closed: list[AutoClosedConflict] = []
    not_saved: list[str] = []
    quarantined: list[str] = []
    # verify compares the files with the index as the reconcile-first pass leaves it (a pass that writes no memory
    # file); without it, that pass would only index what the rebuild indexes again
    with svc.scopes.open(scope, store, write=False) if verify else svc.scopes.rebuilding(scope, store) as opened:
        for o in opened:
            s = o.session
            mismatches += [m.model_copy(update={"scope": o.scope}) for m in (_verify(s) if verify else [])]
            report, _ = s.rebuild(stage_reporter(progress, "index", o.scope), PassRules(write=not verify))
            if not verify:  # what the rebuild's screen holds in the index goes into the files
                held = _write_quarantine_markers(s)
                quarantined += [f"{o.scope}: {p}" if len(opened) > 1 else p for p in held]
            closing = _close_stale_conflicts(svc, s, write=not verify)
            auto_closed += [c.model_copy(update={"scope": o.scope}) for c in closing]
            files += report.scanned
            memories += reads.memory_count(s.conn)
            unparseable += [u.model_copy(update={"scope": o.scope}) for u in unparseable_files(s.conn)]
            if s.index_in_memory:
                not_saved.append(f"{o.scope}: {s.index_in_memory}" if len(opened) > 1 else s.index_in_memory)
        answer = ReindexAnswer(
            store="+".join(o.session.store.name for o in opened),
            scopes=[o.scope for o in opened],
            files=files,
            memories=memories,
            unparseable=unparseable,
            verified=verify,
            mismatches=mismatches,
            auto_closed=auto_closed,
            seconds=0.0,
            not_saved="; ".join(not_saved) or None,
            quarantined=quarantined,
        )
    # vectors survived the rebuild (keyed by content); embed what is new, outside the store lock
    answer.embedded, answer.semantic_note = embed_pending(svc, store=store, scope=scope, progress=progress)
    answer.seconds = round(time.perf_counter() - started, 4)
    return answer


def _write_quarantine_markers(s: StoreSession) -> list[str]:
    """Write into each file the quarantine its reconcile holds in the index only (hand edits, syncs, files from
    before the screen): the memories this reindex put in quarantine, by path. A file changed since it was read
    is left for the next reindex; nothing is deleted."""
    held = [(r[2], r[4]) for r in reads.quarantined(s.conn)]
    ledger = file_rows_at(s.conn, [path for path, _ in held])
    written = []
    for path, marker in held:
        full = s.store.root / path
        try:
            if "quarantine" in canon.read_frontmatter(full):
                continue
            canon.rewrite(
                full,
                lambda meta, marker=marker: meta.__setitem__("quarantine", marker),
                expected_sha=ledger[path].sha256,
            )
        except (canon.CanonError, KeyError, OSError):
            continue
        written.append(path)
    if written:
        s.write_files(written)
    return written


def _close_stale_conflicts(svc: ServiceState, s: StoreSession, write: bool = True) -> list[AutoClosedConflict]:
    """Resolve, in the holder's file, open pairs an earlier gate recorded that today's gate rejects.

    The entry becomes `status: resolved`, `resolution: auto-closed`, with the gate's reasons as the
    note, so the file says why. A file edited since it was indexed is left for the next reindex.
    `write=False` (verify): the pairs it would close, nothing written.
    """
    stale = stale_open_pairs(s.conn, svc.limits.near_text_similarity)
    if not write:
        return [_closed(p) for p in stale]
    by_holder: dict[str, list[StalePair]] = defaultdict(list)
    for pair in stale:
        by_holder[pair.holder.path].append(pair)
    now, closed, written = canon.now_iso(), [], []
    ledger = file_rows_at(s.conn, list(by_holder))
    for path, pairs in by_holder.items():
        why = {p.other_id: p for p in pairs}

        def mutate(meta: dict, why: dict[str, StalePair] = why) -> None:
            for entry in meta.get("conflicts") or []:
                pair = why.get(str(entry.get("with")))
                if pair is not None and str(entry.get("status") or "open") == "open":
                    entry["status"] = "resolved"
                    entry["resolution"] = AUTO_CLOSED
                    entry["resolved"] = now
                    entry["note"] = "not recorded by the current gate: " + "; ".join(pair.reasons)

        try:
            canon.rewrite(s.store.root / path, mutate, expected_sha=ledger[path].sha256)
        except (canon.CanonError, KeyError):
            continue  # changed by hand since the rebuild read it: the next reindex looks again
        written.append(path)
        closed += [_closed(p) for p in pairs]
    if written:
        s.write_files(written)
    return closed


def _closed(p: StalePair) -> AutoClosedConflict:
    return AutoClosedConflict(pair_hash=p.pair_hash, recorded_in=p.holder.id, other_id=p.other_id, reasons=p.reasons)


def embed_pending(
    svc: ServiceState, store: str | None = None, scope: str | None = None, progress: ProgressFn | None = None
) -> tuple[int, str]:
    """Embed every memory that lacks a vector; (how many, why it stopped early or was skipped).

    Batches are embedded without holding the store lock (a large store takes minutes on a CPU), so
    other calls go on meanwhile; each batch is read, and its vectors written, under the lock.
    """
    if svc.semantic.provider is None:
        return 0, ""
    if not svc.semantic.available():
        return 0, f"not embedded: {svc.semantic.why_unavailable()}"
    name, batch, done = svc.semantic.name, svc.semantic.config.batch, 0
    with svc.scopes.open(scope, store) as opened:
        for o in opened:
            vector_table.prune(o.session.conn)
        total = sum(vector_table.pending_count(o.session.conn, name) for o in opened)
        where_all = "+".join(o.scope for o in opened)
    report = stage_reporter(progress, "embed", where_all)
    report(0, total)
    try:
        while True:
            todo: tuple[str, list[tuple[str, str]]] | None = None
            with svc.scopes.open(scope, store) as opened:
                for o in opened:
                    items = vector_table.pending(o.session.conn, name, batch)
                    if items:
                        todo = (o.scope, items)
                        break
            if todo is None:
                return done, ""
            where, items = todo
            vecs = svc.semantic.embed([text for _, text in items])
            pairs = [(h, v) for (h, _), v in zip(items, vecs, strict=True)]
            with svc.scopes.open(where, store) as opened:
                vector_table.store_vectors(opened[0].session.conn, name, pairs)
            done += len(items)
            report(min(done, total), max(total, done))
    except sem.SemanticUnavailable as exc:
        return done, f"embedding stopped after {done} memories: {exc}"


def _verify(s: StoreSession) -> list[Mismatch]:
    """Re-hash and re-parse every file; compare with what the index says (before it is rebuilt)."""
    conn = s.conn
    out: list[Mismatch] = []
    disk = StatGate(s.store).scan()
    files = file_rows(conn)
    for rel in sorted(files.keys() - disk.keys()):
        out.append(Mismatch(path=rel, id=files[rel].memory_id, problem="indexed but the file is gone"))
    indexed_paths = reads.memory_paths(conn)
    for rel in sorted(indexed_paths - disk.keys() - files.keys()):
        out.append(Mismatch(path=rel, id=None, problem="memory row without a file"))
    for row in files.values():  # a copy holding another file's id: the next call gives it an id of its own
        if row.error and row.error.startswith("duplicate id") and row.path in disk:
            out.append(Mismatch(path=row.path, id=row.memory_id, problem=row.error))
    for rel in sorted(disk):
        if disk[rel].problem:
            continue
        row = files.get(rel)
        data = canon.read_bytes(s.store.memory_file(rel))
        sha = canon.sha256_bytes(data)
        if row is None:
            out.append(Mismatch(path=rel, id=None, problem="file not in the index"))
            continue
        if row.sha256 != sha:
            out.append(Mismatch(path=rel, id=row.memory_id, problem="sha256 differs from the index"))
            continue
        if row.error:
            continue
        try:
            mem = canon.parse(data, Path(rel).stem, "")
        except canon.CanonError as exc:
            out.append(Mismatch(path=rel, id=row.memory_id, problem=f"indexed as a memory but: {exc}"))
            continue
        got = ix.get_memory(conn, path=rel)
        if got is None:
            out.append(Mismatch(path=rel, id=mem.id, problem="parseable file has no memory row"))
            continue
        expected = {
            "id": mem.id,
            "title": mem.title,
            "body": mem.body,
            "state": mem.state.value,
            "type": mem.type.value,
            "trust": mem.trust.value,
            "entities": s.dictionary.normalise(mem.entities),
            "supersedes": mem.supersedes,
            "superseded_by": mem.superseded_by,
        }
        for key, value in expected.items():
            if getattr(got, key) != value:
                out.append(Mismatch(path=rel, id=mem.id, problem=f"index field '{key}' differs from the file"))
        # the word table keeps no copy of the text (contentless): its record of each column's length must be the file's
        texts = ix.searched_texts(mem.title, expected["entities"], mem.body)
        if reads.fts_word_sizes(conn, got.rowid) != word_sizes(*texts):
            out.append(Mismatch(path=rel, id=mem.id, problem="full-text row differs from the file"))
    return out
