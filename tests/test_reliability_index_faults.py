"""Index faults: a truncated, garbage, empty, foreign or read-only index, found at start or done to it while
a server runs. The server keeps answering from a rebuilt index (a file when it can write one, memory when
it cannot) and says so in every answer; the canon is never touched by the repair.

Every case runs the real stdio server (`python -m memory_mcp`) and damages the real SQLite file.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import sys
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import mcp
import pytest

from memory_mcp.index import db as ix
from memory_mcp.store.lock import StoreLock

from .helpers import REPO, Tools, db_path, hand_memory, reconcile_of, server_env, stdio_tools, write_file
from .reliability_support import as_unprivileged, cli, unprivileged_works, verify_clean

pytestmark = pytest.mark.anyio

TOKENS = [f"faultword{n}" for n in range(6)]


def _seed(root: Path) -> dict[str, str]:
    """Six hand-written memories (token -> id) and a healthy index built by the CLI."""
    ids = {}
    for n, token in enumerate(TOKENS):
        mem_id = f"fault-{n:04d}"
        write_file(
            root / "memories" / f"fault-{n}.md",
            hand_memory(mem_id, f"Fault memory {n}", f"Body {n} carries the word {token}."),
        )
        ids[token] = mem_id
    done = cli(root, "status", "--json")
    assert done.returncode == 0, done.stderr
    assert db_path(root).stat().st_size > 0
    return ids


async def _all_findable(t: Tools, ids: dict[str, str], store: str | None = None) -> dict:
    answer = {}
    for token, mem_id in ids.items():
        answer = await t.recall(token, store=store)
        assert [r["id"] for r in answer["results"]][:1] == [mem_id], (store, token, answer["results"])
    return answer


def _canon_bytes(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((root / "memories").glob("*.md"))}


def _is_our_index(path: Path) -> bool:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() is not None
    finally:
        conn.close()


# ---------------------------------------------------------------- damage found at start


def _truncate_half(db: Path) -> None:
    os.truncate(db, db.stat().st_size // 2)


def _garbage(db: Path) -> None:
    db.write_bytes(random.Random(5).randbytes(db.stat().st_size))


def _empty(db: Path) -> None:
    db.write_bytes(b"")


def _foreign(db: Path) -> None:
    for p in db.parent.glob(db.name + "*"):
        p.unlink()
    conn = sqlite3.connect(db)
    conn.executescript("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users VALUES (1, 'x');")
    conn.close()


def _header_zeroed(db: Path) -> None:
    with db.open("r+b") as fh:
        fh.write(b"\x00" * 100)


def _garbage_wal(db: Path) -> None:
    db.with_name(db.name + "-wal").write_bytes(random.Random(7).randbytes(64 * 1024))


def _directory(db: Path) -> None:
    for p in db.parent.glob(db.name + "*"):
        p.unlink()
    (db / "something").mkdir(parents=True)  # cannot be opened as SQLite, cannot be removed by unlink


START_FAULTS: dict[str, Callable[[Path], None]] = {
    "truncated to half": _truncate_half,
    "overwritten with random bytes": _garbage,
    "empty file": _empty,
    "another application's SQLite": _foreign,
    "header zeroed": _header_zeroed,
    "garbage write-ahead log": _garbage_wal,
    "a directory in its place": _directory,
}


def _slug(fault: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in fault).strip("-")


async def test_damaged_index_at_start_is_rebuilt_and_answers(tmp_path: Path) -> None:
    """One server; each fault in its own sibling store, so each store's first call opens a damaged index."""
    template = tmp_path / "template"
    ids = _seed(template)
    canon_before = _canon_bytes(template)
    base = tmp_path / "base"
    shutil.copytree(template, base)
    for fault, damage in START_FAULTS.items():
        shutil.copytree(template, tmp_path / _slug(fault))
        damage(db_path(tmp_path / _slug(fault)))
    async with stdio_tools(base) as t:
        await _all_findable(t, ids)
        for fault in START_FAULTS:
            name = _slug(fault)
            rec = reconcile_of(await t.recall(TOKENS[0], store=name))
            if fault == "garbage write-ahead log":
                # SQLite checks every WAL frame's checksum: garbage frames are ignored, the file is intact
                assert rec["rebuilt"] is False, rec
            else:
                assert rec["rebuilt"] is True and rec["rebuild_reason"], (fault, rec)
            if fault == "a directory in its place":
                # no index file can be made there: answers come from memory, and say so
                assert "in-memory index" in (rec["index_in_memory"] or ""), rec
                made = await t.remember("Beside a broken index", "Still a file: faultwordextra.", store=name)
                assert (tmp_path / name / made["path"]).is_file()
                assert [r["id"] for r in (await t.recall("faultwordextra", store=name))["results"]][:1] == [made["id"]]
                continue
            assert rec["index_in_memory"] is None, (fault, rec)
            await _all_findable(t, ids, store=name)
            checked = await t.ok("memory_reindex", verify=True, store=name)
            assert checked["mismatches"] == [] and checked["memories"] == len(ids), (fault, checked)
    for fault in START_FAULTS:
        root = tmp_path / _slug(fault)
        if fault == "a directory in its place":
            continue
        assert _is_our_index(db_path(root)), fault
        assert _canon_bytes(root) == canon_before, fault  # the repair never touches the canon


# ---------------------------------------------------------------- damage done while a server runs


def _checkpoint(db: Path) -> None:
    # move every page into the main file first, so the damage hits the only copy (otherwise SQLite may
    # heal the file from its write-ahead log when the server's connection closes)
    conn = sqlite3.connect(db, timeout=30)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    finally:
        conn.close()


def _truncate_in_place(db: Path) -> None:
    _checkpoint(db)
    os.truncate(db, db.stat().st_size // 3)


def _garbage_in_place(db: Path) -> None:
    _checkpoint(db)
    size = db.stat().st_size
    with db.open("r+b") as fh:
        fh.write(random.Random(11).randbytes(size))


def _foreign_replacement(db: Path) -> None:
    _checkpoint(db)
    tmp = db.with_name("other-app.sqlite3")
    conn = sqlite3.connect(tmp)
    conn.executescript("CREATE TABLE meta (k TEXT); CREATE TABLE notes (body TEXT);")
    conn.close()
    os.replace(tmp, db)


def _index_dir_deleted(db: Path) -> None:
    shutil.rmtree(db.parent)


RUNNING_FAULTS: dict[str, Callable[[Path], None]] = {
    "truncated in place": _truncate_in_place,
    "overwritten in place": _garbage_in_place,
    "replaced by another application's SQLite": _foreign_replacement,
    ".index/ deleted": _index_dir_deleted,
}


async def test_damage_while_running_is_rebuilt_on_the_next_call(tmp_path: Path) -> None:
    root = tmp_path / "store"
    ids = _seed(root)
    canon_before = _canon_bytes(root)
    async with stdio_tools(root) as t:
        await _all_findable(t, ids)
        for n, (fault, damage) in enumerate(RUNNING_FAULTS.items()):
            damage(db_path(root))
            answer = await t.recall(TOKENS[1])
            rec = reconcile_of(answer)
            assert rec["rebuilt"] is True, (fault, rec)
            assert rec["index_in_memory"] is None, (fault, rec)
            await _all_findable(t, ids)
            made = await t.remember(f"After fault {n}", f"Written after the index was {fault}: faultafter{n}.")
            assert made["created"] is True
            ids[f"faultafter{n}"] = made["id"]
    assert _is_our_index(db_path(root))
    for name, data in canon_before.items():
        assert (root / "memories" / name).read_bytes() == data
    verify_clean(root)


# ---------------------------------------------------------------- read-only index


@asynccontextmanager
async def unprivileged_tools(root: Path) -> AsyncIterator[Tools]:
    """The real stdio server, unable to write what file modes forbid (see reliability_support)."""
    params = mcp.StdioServerParameters(
        command=sys.executable,
        args=as_unprivileged(["-m", "memory_mcp", "--store", str(root)])[1:],
        env={**server_env(root), "PYTHONPATH": str(REPO)},
        cwd=str(root.parent),
    )
    async with mcp.Client(params) as client:
        yield Tools(client)


@pytest.fixture
def unprivileged(tmp_path: Path) -> None:
    problem = unprivileged_works(tmp_path / "probe")
    if problem:
        pytest.skip(problem)


def _chmod_tree(root: Path, dir_mode: int, file_mode: int, *parts: str) -> None:
    for part in parts:
        top = root / part if part else root
        os.chmod(top, dir_mode)
        for p in top.iterdir():
            if p.is_file():
                os.chmod(p, file_mode)


@pytest.fixture
def restore_modes(tmp_path: Path):
    yield
    for p in [tmp_path, *tmp_path.rglob("*")]:
        if p.is_dir() and not p.is_symlink():
            os.chmod(p, 0o755)


async def test_read_only_index_and_read_only_store(tmp_path: Path, unprivileged: None, restore_modes: None) -> None:
    """One server unable to override file modes, three stores:
    ro-index: .index/ and its files read-only, memories/ writable;
    ro-store: the whole store read-only;
    ro-nolock: .index/ read-only and empty (no index, no lock file to open read-only)."""
    template = tmp_path / "template"
    ids = _seed(template)
    for name in ("ro-index", "ro-store", "ro-nolock"):
        shutil.copytree(template, tmp_path / name)
    ro_index, ro_store, ro_nolock = (tmp_path / n for n in ("ro-index", "ro-store", "ro-nolock"))
    for p in (ro_nolock / ".index").iterdir():
        p.unlink()
    _chmod_tree(ro_index, 0o555, 0o444, ".index")
    _chmod_tree(ro_nolock, 0o555, 0o444, ".index")
    write_file(ro_store / "dictionary.md", "- postgres: the database (aka: pg)\n")
    _chmod_tree(ro_store, 0o555, 0o444, ".index", "memories", "")
    os.chmod(ro_store / "dictionary.md", 0o000)  # unreadable: answers come without aliases, not never
    index_before = {p.name: p.read_bytes() for p in (ro_index / ".index").iterdir()}
    canon_before = _canon_bytes(ro_store)

    async with unprivileged_tools(ro_index) as t:
        # ro-index: answers from memory, says why, and still writes the canon under the store lock
        answer = await _all_findable(t, ids)
        why = reconcile_of(answer)["index_in_memory"]
        assert why and "Permission denied" in why and "in-memory index" in why, why
        status = await t.status()
        assert status["total"] == len(ids) and status["index"]["last_reconcile"]["index_in_memory"] == why
        made = await t.remember("Remembered beside a read-only index", "The word faultwordro is stored.")
        assert made["created"] is True and (ro_index / made["path"]).is_file()
        assert [r["id"] for r in (await t.recall("faultwordro"))["results"]][:1] == [made["id"]]
        write_file(
            ro_index / "memories" / "fault-0.md", hand_memory("fault-0000", "Fault memory 0", "Now faultwordedit.")
        )
        assert [r["id"] for r in (await t.recall("faultwordedit"))["results"]][:1] == ["fault-0000"]
        await _lock_is_shared_with_normal_processes(t, ro_index)

        # ro-store: reads work; a write fails with the reason and the file it could not write
        await _all_findable(t, ids, store="ro-store")
        assert "faultword3" in (await t.read(id="fault-0003", store="ro-store"))["text"]
        message = await t.err("memory_remember", title="Cannot be stored", body="Read-only.", store="ro-store")
        assert "Permission denied" in message and "memories/cannot-be-stored" in message, message
        message = await t.err("memory_forget", id="fault-0002", mode="archive", store="ro-store")
        assert "Permission denied" in message and "memories/fault-2.md" in message, message
        await _all_findable(t, ids, store="ro-store")  # a refused write leaves the server answering

        # ro-nolock: memory index, and writes still excluded by the directory lock
        answer = await _all_findable(t, ids, store="ro-nolock")
        assert reconcile_of(answer)["index_in_memory"]
        made = await t.remember("No lock file here", "Stored under the directory lock.", store="ro-nolock")
        assert (ro_nolock / made["path"]).is_file()

    assert {p.name: p.read_bytes() for p in (ro_index / ".index").iterdir()} == index_before
    assert _canon_bytes(ro_store) == canon_before
    assert list((ro_nolock / ".index").iterdir()) == []


async def _lock_is_shared_with_normal_processes(t: Tools, root: Path) -> None:
    """The read-only server cannot open .index/write.lock for writing; it must still exclude the others."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        # what every normal server, CLI run and web view takes around each call
        with StoreLock(root, root / ".index" / "write.lock"):
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(10)
    result: dict = {}

    async def write() -> None:
        result.update(await t.remember("Waited for the lock", "Written only after the holder let go."))

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(write)
            await anyio.sleep(1.0)
            assert result == {}, "the write went through while another process held the store lock"
            assert not list((root / "memories").glob("waited-for-the-lock*"))
            release.set()
    finally:
        release.set()
        holder.join(10)
    assert result["created"] is True and (root / result["path"]).is_file()


async def test_permissions_changing_under_running_servers(
    tmp_path: Path, unprivileged: None, restore_modes: None
) -> None:
    root = tmp_path / "store"
    ids = _seed(root)
    async with unprivileged_tools(root) as t:
        answer = await _all_findable(t, ids)
        assert reconcile_of(answer)["index_in_memory"] is None
        # made read-only under a running server: its open descriptors still work, answers go on
        _chmod_tree(root, 0o555, 0o444, ".index")
        await _all_findable(t, ids)
    async with unprivileged_tools(root) as t:
        # a server started now cannot open it for writing: memory
        answer = await _all_findable(t, ids)
        assert reconcile_of(answer)["index_in_memory"], reconcile_of(answer)
        # permissions restored: the same server goes back to the file on its next call
        _chmod_tree(root, 0o755, 0o644, ".index")
        answer = await _all_findable(t, ids)
        assert reconcile_of(answer)["index_in_memory"] is None
        made = await t.remember("Back on the file", "Indexed in the file again: faultwordback.")
    conn = sqlite3.connect(db_path(root))
    try:
        assert conn.execute("SELECT path FROM memories WHERE id = ?", (made["id"],)).fetchone() == (made["path"],)
    finally:
        conn.close()
    verify_clean(root)


# ---------------------------------------------------------------- the check a recorded sound state spares


def _zero_unused_page(db: Path) -> None:
    """Zero the root page of `doc_files` (no document sources here): only an integrity check reads it."""
    conn = sqlite3.connect(db)
    try:
        page = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'doc_files'").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    finally:
        conn.close()
    before = db.stat()
    with db.open("r+b") as fh:
        fh.seek((page - 1) * size)
        fh.write(b"\x00" * size)
    os.utime(db, ns=(before.st_atime_ns, before.st_mtime_ns))  # same size, same mtime: only ctime moved


def _recall_json(root: Path, word: str) -> dict:
    done = cli(root, "recall", word, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_damage_after_a_call_is_found_even_with_size_and_mtime_restored(tmp_path: Path) -> None:
    root = tmp_path / "store"
    ids = _seed(root)
    db = db_path(root)
    assert ix.as_recorded(db)  # the CLI call recorded the file as it left it
    _zero_unused_page(db)
    answer = _recall_json(root, TOKENS[2])
    rec = answer["index"]["reconcile"]
    assert rec["rebuilt"] is True and rec["rebuild_reason"].startswith(
        ("index failed quick_check", "index unreadable")
    ), rec
    assert [r["id"] for r in answer["results"]][:1] == [ids[TOKENS[2]]]
    # rebuilt and recorded again: the next call opens it without a rebuild
    assert reconcile_of(_recall_json(root, TOKENS[3]))["rebuilt"] is False


def test_a_file_as_a_sound_session_left_it_is_opened_without_the_integrity_check(tmp_path: Path) -> None:
    # the same damage, with the record forged to match: the open trusts the record (the check is skipped),
    # which is what spares a one-shot call ~40 ms at 10k memories; reading the damaged page would still fail
    root = tmp_path / "store"
    ids = _seed(root)
    db = db_path(root)
    _zero_unused_page(db)
    ix.record_sound(db)
    answer = _recall_json(root, TOKENS[1])
    assert reconcile_of(answer)["rebuilt"] is False
    assert [r["id"] for r in answer["results"]][:1] == [ids[TOKENS[1]]]


def test_a_write_by_anything_else_voids_the_record(tmp_path: Path) -> None:
    root = tmp_path / "store"
    _seed(root)
    db = db_path(root)
    assert ix.as_recorded(db)
    # another program writes and closes: the file is no longer as recorded
    other = sqlite3.connect(db)
    other.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('other program', 'was here')")
    other.commit()
    other.close()
    assert not ix.as_recorded(db)
    answer = _recall_json(root, TOKENS[0])  # checked, found sound, used; recorded again
    assert reconcile_of(answer)["rebuilt"] is False
    assert ix.as_recorded(db)
    # a writer still holding the file (as a crashed one leaves it): its write-ahead log moved, the record is void
    holder = ix.connect(db)
    ix.set_meta(holder, "held", "yes")
    try:
        assert db.with_name(db.name + "-wal").stat().st_size > 0
        assert not ix.as_recorded(db)
    finally:
        holder.close()
