"""One-shot CLI calls (no change watch) skip the ledger comparison when nothing changed, and still see every
change: an edit, an add, a delete, a rename, and a save that keeps the size and restores the mtime."""

from __future__ import annotations

import json
import os
import random
import sqlite3
from pathlib import Path
from typing import Any

from .helpers import db_path, hand_memory, settle, tamper, write_file
from .test_cli import run


def _recall(store: Path, query: str) -> dict[str, Any]:
    out = run(store, "recall", query, "--json", "--limit", "10")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _found(answer: dict[str, Any]) -> dict[str, str]:
    return {r["id"]: r["path"] for r in answer["results"]}


def _digest(store: Path) -> str | None:
    conn = sqlite3.connect(db_path(store))
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'scan_digest'").fetchone()
    finally:
        conn.close()
    return row[0] if row else None


def _quiet(store: Path) -> None:
    """Two unchanged calls: the first finds nothing to do and records the digest, the second uses it."""
    settle()
    first = _recall(store, "ferry")
    if _digest(store) is None:  # that call re-stamped a file the server had read within its write's mtime tick
        first = _recall(store, "ferry")
    assert _digest(store) is not None
    second = _recall(store, "ferry")
    rec = second["index"]["reconcile"]
    assert (rec["hashed"], rec["reindexed"], rec["removed"]) == (0, 0, 0)
    assert rec["scanned"] == first["index"]["reconcile"]["scanned"]
    assert _found(second) == _found(first)


def test_one_shot_calls_see_every_change_after_an_unchanged_call(store: Path) -> None:
    mem = store / "memories"
    out = run(store, "remember", "Ferry timetable", "The ferry leaves at nine.")
    assert out.returncode == 0, out.stderr
    a, b = mem / "ferry-a.md", mem / "ferry-b.md"
    write_file(a, hand_memory("ferry-a", "Ferry alpha", "The ferry alpha pier is north."))
    write_file(b, hand_memory("ferry-b", "Ferry bravo", "The ferry bravo pier is south."))
    assert {"ferry-a", "ferry-b"} <= set(_found(_recall(store, "ferry")))

    _quiet(store)  # an edit in place
    write_file(a, hand_memory("ferry-a", "Ferry alpha", "The ferry alpha pier moved to the harbour."))
    assert _digest(store) is not None
    assert list(_found(_recall(store, "harbour"))) == ["ferry-a"]
    assert _digest(store) is None  # that call re-indexed a file: no digest until a pass finds nothing to do

    _quiet(store)  # an add
    write_file(mem / "ferry-c.md", hand_memory("ferry-c", "Ferry charlie", "The ferry charlie runs at dawn."))
    assert list(_found(_recall(store, "dawn"))) == ["ferry-c"]

    _quiet(store)  # a delete
    (mem / "ferry-c.md").unlink()
    gone = _recall(store, "dawn")
    assert _found(gone) == {} and gone["index"]["reconcile"]["removed"] == 1

    _quiet(store)  # a rename, into a new folder
    (mem / "boats").mkdir()
    os.rename(b, mem / "boats" / "ferry-b.md")
    assert _found(_recall(store, "bravo")) == {"ferry-b": "memories/boats/ferry-b.md"}

    _quiet(store)  # an editor's save (new file renamed over the old) with the same size and the old mtime
    before = a.stat()
    text = hand_memory("ferry-a", "Ferry alpha", "The ferry alpha pier moved to the harbour.")
    changed = text.replace("harbour", "marinas")
    assert len(changed.encode()) == len(text.encode()) == before.st_size
    tmp = mem / ".ferry-a.md.swp"
    tmp.write_text(changed, encoding="utf-8")
    os.utime(tmp, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(tmp, a)
    assert (a.stat().st_mtime_ns, a.stat().st_size) == (before.st_mtime_ns, before.st_size)
    assert list(_found(_recall(store, "marinas"))) == ["ferry-a"]
    assert _found(_recall(store, "harbour")) == {}


def test_a_version_4_index_is_upgraded_in_place_and_its_ledger_compared_again(store: Path) -> None:
    out = run(store, "remember", "Heat keeper", "The espresso machine needs descaling monthly.")
    assert out.returncode == 0, out.stderr
    for _ in range(2):
        _recall(store, "espresso")
    conn = sqlite3.connect(db_path(store))
    with conn:  # what a version-4 index looked like: no scan digest
        conn.execute("DELETE FROM meta WHERE key = 'scan_digest'")
        conn.execute("DROP INDEX memories_valid_until")  # ... and none of version 6's validity columns
        for column in ("valid_from", "valid_until", "superseded_at"):
            conn.execute(f"ALTER TABLE memories DROP COLUMN {column}")
        conn.execute("DROP TABLE ledger_log")  # ... nor version 8's ledger log
        conn.execute("DROP INDEX conflicts_open")
        conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    conn.close()
    answer = _recall(store, "espresso")
    assert answer["index"]["reconcile"]["rebuilt"] is False  # upgraded, not rebuilt
    assert answer["results"][0]["components"]["heat"] > 0  # recall counts survived
    conn = sqlite3.connect(db_path(store))
    try:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "9"
    finally:
        conn.close()
    _recall(store, "espresso")  # versions 6 and 7 made every ledger row stale: that call re-read the file once
    assert _digest(store) is not None  # this call compared the ledger, found nothing to do, and says so


def test_a_ledger_row_dropped_behind_the_servers_back_is_restored(store: Path) -> None:
    out = run(store, "remember", "Boiler service", "The boiler was serviced by Rossi.")
    assert out.returncode == 0, out.stderr
    _quiet(store)
    tamper(store, "DELETE FROM files")  # code that does not know the digest (a tool, a bug) empties the ledger
    again = _recall(store, "boiler")
    assert again["index"]["reconcile"]["hashed"] == 1 and len(again["results"]) == 1


def test_an_index_built_from_nothing_keeps_no_free_pages(store: Path) -> None:
    # FTS5's merge after a bulk load frees a good part of the file (a sixth at 10k memories); a cold `reindex` gives
    # those pages back
    rng = random.Random(43)
    for n in range(400):
        body = " ".join(f"w{rng.randrange(20_000)}" for _ in range(200))
        write_file(store / "memories" / f"note-{n:03d}.md", hand_memory(f"N{n:05d}", f"Ferry note {n}", body))
    out = run(store, "reindex")
    assert out.returncode == 0, out.stderr
    conn = sqlite3.connect(db_path(store))
    try:
        assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 400
        assert conn.execute("PRAGMA freelist_count").fetchone()[0] == 0
    finally:
        conn.close()
    assert list(_found(_recall(store, "Ferry note 7"))) != []
