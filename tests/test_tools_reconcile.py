"""Hand edits converge on the next call; unparseable files are reported, never fatal; the index is
disposable; a call with nothing changed hashes nothing."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from memory_mcp.index import db

from .helpers import Tools, db_path, frontmatter, hand_memory, reconcile_of, settle, stdio_tools, write_file

pytestmark = pytest.mark.anyio


async def test_hand_create_edit_rename_delete_converge_then_nothing_to_hash(tools: Tools, store: Path) -> None:
    await tools.remember("Baseline memory", "Something the server wrote itself.")
    path = store / "memories" / "hand-notes.md"
    write_file(path, hand_memory("hand-0001", "Grafana alert thresholds", "Alert thresholds live in terraform."))

    found = await tools.recall("grafana thresholds")
    assert [(r["id"], r["path"]) for r in found["results"]] == [("hand-0001", "memories/hand-notes.md")]
    rec = reconcile_of(found)
    assert rec["hashed"] >= 1 and rec["reindexed"] == 1 and rec["scanned"] == 2
    assert "terraform" in (await tools.read(id="hand-0001"))["text"]

    # edit: body and title change in place
    settle()
    write_file(path, hand_memory("hand-0001", "Grafana alert rules", "Alert thresholds moved to pulumi."))
    assert await tools.recall_ids("pulumi") == ["hand-0001"]
    assert "hand-0001" not in await tools.recall_ids("terraform")
    got = await tools.read(id="hand-0001")
    assert "pulumi" in got["text"] and "terraform" not in got["text"]
    assert (await tools.recall("grafana"))["results"][0]["title"] == "Grafana alert rules"

    # rename, into a sub-folder: same memory, new path, no duplicate
    (store / "memories" / "ops").mkdir()
    moved = store / "memories" / "ops" / "grafana.md"
    os.rename(path, moved)
    found = await tools.recall("pulumi")
    assert [(r["id"], r["path"]) for r in found["results"]] == [("hand-0001", "memories/ops/grafana.md")]
    assert found["index"]["unparseable"] == []
    assert reconcile_of(found)["removed"] == 1
    assert (await tools.read(id="hand-0001"))["path"] == "memories/ops/grafana.md"

    # delete: gone from every answer
    moved.unlink()
    status = await tools.status()
    assert status["total"] == 1 and status["index"]["last_reconcile"]["removed"] == 1
    assert await tools.recall_ids("pulumi grafana") == []
    assert "no memory with id 'hand-0001'" in await tools.err("memory_read", id="hand-0001")

    # once everything has settled, a call with nothing changed hashes nothing
    made = [await tools.remember(f"Stable memory {n}", f"Body number {n} about the quiet path.") for n in range(4)]
    settle()
    await tools.status()  # files the server wrote a moment ago were racy: this pass may hash them once more
    for answer in (await tools.recall("quiet path"), await tools.read(id=made[3]["id"])):
        rec = reconcile_of(answer)
        assert rec["scanned"] == 5
        assert (rec["hashed"], rec["reindexed"], rec["removed"], rec["rebuilt"]) == (0, 0, 0, False)
    # a purge removes its file itself: the next pass still has nothing to do (purge needs it archived first)
    await tools.ok("memory_forget", id=made[0]["id"], mode="archive")
    await tools.ok("memory_forget", id=made[0]["id"], mode="purge", confirm=True)
    rec = (await tools.status())["index"]["last_reconcile"]
    assert rec["scanned"] == 4
    assert (rec["hashed"], rec["reindexed"], rec["removed"]) == (0, 0, 0)


async def _server_rewrites_keep_hand_written_comments_and_unknown_keys(tools: Tools, store: Path) -> None:
    path = store / "memories" / "kept.md"
    extra = "# a comment the person wrote\nproject_code: ATL-7\nreview_notes:\n  - asked Alice\n"
    text = hand_memory("keep-0001", "Kept fields", "Nothing stored is ever lost.", extra=extra)
    write_file(path, text)
    await tools.ok("memory_forget", id="keep-0001", mode="archive")
    after = path.read_text(encoding="utf-8")
    assert "# a comment the person wrote" in after
    fm = frontmatter(path)
    assert fm["project_code"] == "ATL-7" and fm["review_notes"] == ["asked Alice"] and fm["state"] == "archived"
    assert after.endswith("# Kept fields\n\nNothing stored is ever lost.\n")


async def _crlf_file_from_a_windows_editor_is_a_memory(tools: Tools, store: Path) -> None:
    text = hand_memory("crlf-0001", "Written on Windows", "Line endings are CRLF here.\nSecond line.")
    (store / "memories").mkdir(parents=True, exist_ok=True)
    (store / "memories" / "windows.md").write_bytes(text.replace("\n", "\r\n").encode("utf-8"))
    found = await tools.recall("CRLF line endings")
    assert found["index"]["unparseable"] == []
    assert [r["id"] for r in found["results"]] == ["crlf-0001"]
    assert found["results"][0]["title"] == "Written on Windows"
    await tools.ok("memory_forget", id="crlf-0001", mode="archive")
    assert frontmatter_state_crlf(store / "memories" / "windows.md") == "archived"


def frontmatter_state_crlf(path: Path) -> str:
    text = path.read_bytes().decode("utf-8").replace("\r\n", "\n")
    return next(line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("state:"))


async def _archived_memory_edited_by_hand_becomes_active(tools: Tools, store: Path) -> None:
    made = await tools.remember("Redis session TTL", "Sessions in redis expire after 24 hours.", entities=["redis"])
    await tools.ok("memory_forget", id=made["id"], mode="archive")
    path = store / made["path"]
    assert frontmatter(path)["state"] == "archived"

    # a frontmatter-only edit (adding an entity) is not "using it again": it stays archived
    settle()
    write_file(path, path.read_text(encoding="utf-8").replace("entities: [redis]", "entities: [redis, sessions]"))
    got = await tools.read(id=made["id"])
    assert got["frontmatter"]["entities"] == ["redis", "sessions"]
    assert (await tools.recall("redis sessions"))["results"][0]["state"] == "archived"

    # a body edit is: the memory comes back as active, in the index and in the file
    settle()
    text = re.sub(r"updated: .*", "updated: 2026-01-01T00:00:00Z", path.read_text(encoding="utf-8"))
    write_file(path, text.replace("24 hours.", "12 hours since the November change."))
    found = await tools.recall("redis sessions expire")
    assert [(r["id"], r["state"]) for r in found["results"]] == [(made["id"], "active")]
    fm = frontmatter(path)
    assert fm["state"] == "active" and str(fm["updated"]) > "2026-01-01T00:00:00Z"
    assert "12 hours since the November change." in path.read_text(encoding="utf-8")
    assert made["id"] in await tools.recall_ids("redis", state="active")

    # deprecated is terminal: a body edit does not bring it back
    await tools.ok("memory_forget", id=made["id"], mode="deprecate", reason="sessions moved to JWT")
    settle()
    write_file(path, path.read_text(encoding="utf-8").replace("12 hours", "6 hours"))
    got = await tools.read(id=made["id"])
    assert got["frontmatter"]["state"] == "deprecated" and "6 hours" in got["text"]


BAD_FILES = {
    "bad-yaml.md": ("---\nid: [unclosed\ntype: fact\n---\n# Bad YAML\n\nbody\n", "bad YAML"),
    "no-id.md": ("---\ntype: fact\nstate: active\n---\n# No id\n\nbody\n", "missing id"),
    "plain-note.md": ("# Just a note\n\nNo frontmatter at all.\n", "no frontmatter"),
    "zombie.md": (hand_memory("zombie-0001", "Unknown state", "body", state="zombie"), "unknown state 'zombie'"),
    "alias.md": ("---\nid: alias-0001\nentities: &e [a]\nsupersedes: *e\n---\n# Alias\n\nbody\n", "YAML"),
    "unclosed.md": ("---\nid: open-0001\n# Never closed\n\nbody\n", "not closed"),
}


async def test_unparseable_files_are_reported_not_fatal_and_heal(tools: Tools, store: Path) -> None:
    good = await tools.remember("Kubernetes access guide", "Use aws eks update-kubeconfig to reach the cluster.")
    memories = store / "memories"
    for name, (text, _) in BAD_FILES.items():
        write_file(memories / name, text)
    (memories / "latin1.md").write_bytes(hand_memory("latin-0001", "Café", "Crème brûlée").encode("latin-1"))
    shutil.copy(store / good["path"], memories / "copy-of-guide.md")  # same id twice
    expected = {f"memories/{n}": why for n, (_, why) in BAD_FILES.items()}
    expected["memories/latin1.md"] = "UTF-8"
    before = {p.name: p.read_bytes() for p in memories.iterdir()}

    found = await tools.recall("kubernetes cluster access")
    # nothing hidden: the original keeps its id, the copy is given one of its own (in its file)
    (renumbered,) = reconcile_of(found)["renumbered"]
    assert renumbered.startswith(f"memories/copy-of-guide.md: {good['id']} stays with {good['path']}")
    copy_id = renumbered.rsplit(" ", 1)[1]
    # the two say the same: served once, the other named as collapsed into it
    (served,) = [r["id"] for r in found["results"]]
    assert {served, found["collapsed"][0]["dropped_id"]} == {good["id"], copy_id}
    assert (await tools.read(id=good["id"]))["path"] == good["path"]
    copied = await tools.read(id=copy_id)
    assert copied["path"] == "memories/copy-of-guide.md" and "update-kubeconfig" in copied["text"]
    assert (
        before.pop("copy-of-guide.md").replace(good["id"].encode(), copy_id.encode())
        == (memories / "copy-of-guide.md").read_bytes()
    )  # only its id line changed
    reported = {u["path"]: u["reason"] for u in found["index"]["unparseable"]}
    assert reported.keys() == expected.keys()
    for path, why in expected.items():
        assert why in reported[path], f"{path}: {reported[path]!r} does not say {why!r}"
    assert reconcile_of(found)["unparseable"] == len(expected)
    status = await tools.status()
    assert {u["path"]: u["reason"] for u in status["unparseable"]} == reported
    assert status["total"] == 2
    # nothing else was rewritten or removed, and a broken file can still be read to fix it
    assert {p.name: p.read_bytes() for p in memories.iterdir() if p.name != "copy-of-guide.md"} == before
    broken = await tools.read(path="memories/bad-yaml.md")
    assert broken["id"] is None and "id: [unclosed" in broken["text"]

    # fixing the files makes them memories on the next call
    settle()
    write_file(memories / "bad-yaml.md", hand_memory("yaml-0001", "Fixed YAML", "kubernetes was here"))
    write_file(memories / "no-id.md", hand_memory("noid-0001", "Fixed id", "kubernetes too"))
    write_file(memories / "zombie.md", hand_memory("zombie-0001", "Known state", "kubernetes also", state="archived"))
    for name in ("alias.md", "unclosed.md", "latin1.md", "plain-note.md"):
        (memories / name).unlink()
    found = await tools.recall("kubernetes", limit=10)
    assert {r["id"] for r in found["results"]} - {good["id"], copy_id} == {"yaml-0001", "noid-0001", "zombie-0001"}
    assert found["index"]["unparseable"] == []

    # the copy is a memory of its own: deleting the original leaves it, under its own id
    (store / good["path"]).unlink()
    found = await tools.recall("update-kubeconfig")
    assert [(r["id"], r["path"]) for r in found["results"]] == [(copy_id, "memories/copy-of-guide.md")]
    assert found["index"]["unparseable"] == []
    assert (await tools.status())["unparseable"] == []


async def test_deleted_or_corrupt_index_is_rebuilt_from_the_canon(store: Path) -> None:
    async with stdio_tools(store) as t:
        ids = [
            (await t.remember(f"Rebuild subject {n}", f"Memory number {n} for the rebuild."))["id"] for n in range(4)
        ]
        await t.ok("memory_forget", id=ids[0], mode="archive")
        shutil.rmtree(store / ".index")
        answer = await t.recall("rebuild subject", limit=10)
        rec = reconcile_of(answer)
        assert rec["rebuilt"] is True and "missing" in rec["rebuild_reason"]
        assert {r["id"] for r in answer["results"]} == set(ids)
        assert {r["id"]: r["state"] for r in answer["results"]}[ids[0]] == "archived"
        assert reconcile_of(await t.recall("rebuild"))["rebuilt"] is False
        # replaced by garbage while the server runs
        db = db_path(store)
        tmp = db.with_name("garbage")
        tmp.write_bytes(b"this is not a database" * 100)
        for suffix in ("-wal", "-shm"):
            db.with_name(db.name + suffix).unlink(missing_ok=True)
        os.replace(tmp, db)
        answer = await t.recall("rebuild subject", limit=10)
        assert reconcile_of(answer)["rebuilt"] is True
        assert {r["id"] for r in answer["results"]} == set(ids)
    # corrupted in place while no server runs: the next server rebuilds it
    db = db_path(store)
    with db.open("r+b") as fh:
        fh.seek(0)
        fh.write(b"\x00" * 4096)
    async with stdio_tools(store) as t:
        answer = await t.recall("rebuild subject", limit=10)
        assert reconcile_of(answer)["rebuilt"] is True
        assert {r["id"] for r in answer["results"]} == set(ids)


async def _swapped_and_rotated_files_converge_on_the_next_call(tools: Tools, store: Path) -> None:
    made = [await tools.remember(f"Rotation member {n}", f"Rotation body {n} about carousels.") for n in range(3)]
    paths = [store / m["path"] for m in made]
    contents = [p.read_bytes() for p in paths]
    settle()
    await tools.status()
    expected = {m["id"]: m["path"] for m in made}

    async def assert_converged(moved: dict[str, str]) -> None:
        found = await tools.recall("carousels", limit=10)
        assert found["index"]["unparseable"] == [], found["index"]["unparseable"]
        assert {r["id"]: r["path"] for r in found["results"]} == moved

    # swap two files' contents in place (as a checkout or a careless mv can)
    paths[0].write_bytes(contents[1])
    paths[1].write_bytes(contents[0])
    swapped = dict(expected) | {made[0]["id"]: made[1]["path"], made[1]["id"]: made[0]["path"]}
    await assert_converged(swapped)
    # rotate all three by renames through a temporary name
    tmp = paths[0].with_name("tmp.md")
    os.rename(paths[0], tmp)
    os.rename(paths[1], paths[0])
    os.rename(paths[2], paths[1])
    os.rename(tmp, paths[2])
    rotated = {
        made[1]["id"]: made[2]["path"],
        made[0]["id"]: made[0]["path"],
        made[2]["id"]: made[1]["path"],
    }
    await assert_converged(rotated)


async def _renames_keeping_size_and_mtime_are_seen(tools: Tools, store: Path) -> None:
    # files restored from an archive share one mtime; same-size files swapped by renames keep theirs
    a, b = store / "memories" / "restored-a.md", store / "memories" / "restored-b.md"
    write_file(a, hand_memory("restored-a", "Restored alpha", "Ferry timetable alpha."))
    write_file(b, hand_memory("restored-b", "Restored bravo", "Ferry timetable bravo."))
    assert a.stat().st_size == b.stat().st_size
    for path in (a, b):
        os.utime(path, ns=(1_767_225_600_000_000_000, 1_767_225_600_000_000_000))
    found = await tools.recall("ferry timetable")
    assert {r["id"]: r["path"] for r in found["results"]} == {
        "restored-a": "memories/restored-a.md",
        "restored-b": "memories/restored-b.md",
    }
    tmp = a.with_name("tmp.md")
    os.rename(a, tmp)
    os.rename(b, a)
    os.rename(tmp, b)
    found = await tools.recall("ferry timetable")
    assert {r["id"]: r["path"] for r in found["results"]} == {
        "restored-a": "memories/restored-b.md",
        "restored-b": "memories/restored-a.md",
    }
    assert found["index"]["unparseable"] == []
    assert (await tools.read(id="restored-a"))["path"] == "memories/restored-b.md"


async def test_hand_edits_keep_comments_crlf_reactivate_archived_and_swaps(tools: Tools, store: Path) -> None:
    await _server_rewrites_keep_hand_written_comments_and_unknown_keys(tools, store)
    await _crlf_file_from_a_windows_editor_is_a_memory(tools, store)
    await _archived_memory_edited_by_hand_becomes_active(tools, store)
    await _swapped_and_rotated_files_converge_on_the_next_call(tools, store)
    await _renames_keeping_size_and_mtime_are_seen(tools, store)


async def test_an_index_from_the_previous_version_is_upgraded_in_place_keeping_recall_counts(store: Path) -> None:
    async with stdio_tools(store) as t:
        kept = await t.remember("Heat keeper", "The espresso machine needs descaling monthly.")
        other = await t.remember("Archived note", "The old espresso machine was sold.")
        await t.ok("memory_forget", id=other["id"], mode="archive")
        for _ in range(3):
            await t.recall("espresso descaling")
        heat_before = (await t.recall("espresso"))["results"][0]["components"]["heat"]
    assert heat_before > 0
    # what a version-3 index looked like: no narrow filter table, no partial index on errors
    conn = sqlite3.connect(db_path(store))
    with conn:
        conn.execute("DROP TABLE memory_flags")
        conn.execute("DROP INDEX files_with_errors")
        conn.execute("DROP INDEX memories_valid_until")  # ... nor version 6's validity columns
        for column in ("valid_from", "valid_until", "superseded_at"):
            conn.execute(f"ALTER TABLE memories DROP COLUMN {column}")
        conn.execute("DROP TABLE ledger_log")  # ... nor version 8's ledger log
        conn.execute("DROP INDEX conflicts_open")
        conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    conn.close()
    async with stdio_tools(store) as t:
        answer = await t.recall("espresso")
        assert reconcile_of(answer)["rebuilt"] is False  # upgraded, not rebuilt
        ranked = {r["id"]: r for r in answer["results"]}
        assert ranked[kept["id"]]["components"]["heat"] >= heat_before  # recall counts survived
        assert ranked[other["id"]]["state"] == "archived"
        assert await t.recall_ids("espresso", state="archived") == [other["id"]]
        assert await t.recall_ids("espresso", state="active") == [kept["id"]]
    conn = sqlite3.connect(db_path(store))
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "9"
    conn.close()


async def test_a_version_6_index_is_re_read_so_stored_ligatures_become_findable(store: Path) -> None:
    """Version 7 keeps the full-text copies in NFKC: an index from version 6 held them as written."""
    async with stdio_tools(store) as t:
        made = await t.remember("Quarterly ﬁnance review", "The ｆｕｌｌ report is due on Friday.")
        await t.recall("report")
    conn = sqlite3.connect(db_path(store))
    with conn:  # what version 6 stored: a copy of the text as written, in full-text tables with content
        rowid = conn.execute("SELECT rowid FROM memories WHERE id = ?", (made["id"],)).fetchone()[0]
        _with_content_copies(conn)
        for table in ("fts_word", "fts_tri"):
            conn.execute(
                f"UPDATE {table} SET title = ?, body = ? WHERE rowid = ?",
                ("Quarterly ﬁnance review", "The ｆｕｌｌ report is due on Friday.", rowid),
            )
        conn.execute("DROP TABLE ledger_log")
        conn.execute("DROP INDEX conflicts_open")
        conn.execute("UPDATE meta SET value = '6' WHERE key = 'schema_version'")
    assert "finance" not in conn.execute("SELECT title FROM fts_word").fetchone()[0]
    conn.close()
    async with stdio_tools(store) as t:
        answer = await t.recall("finance")
        assert reconcile_of(answer)["rebuilt"] is False  # upgraded, not rebuilt
        assert [r["id"] for r in answer["results"]] == [made["id"]]
        assert (await t.ok("memory_reindex", verify=True))["mismatches"] == []


def _with_content_copies(conn: sqlite3.Connection) -> None:
    """The memory full-text tables as versions up to 8 made them: each with its own copy of the texts, filled from
    the memory rows; and the two columns version 9 dropped (the stored excerpt, the body's digest)."""
    rows = [
        (r[0], *db.searched_texts(r[1], json.loads(r[2]), r[3]))
        for r in conn.execute("SELECT rowid, title, entities, body FROM memories")
    ]
    for table in ("fts_word", "fts_tri"):
        conn.execute(f"DROP TABLE {table}")
        tokenizer = "unicode61 remove_diacritics 2" if table == "fts_word" else "trigram"
        conn.execute(f"CREATE VIRTUAL TABLE {table} USING fts5 (title, entities, body, tokenize = '{tokenizer}')")
        conn.executemany(f"INSERT INTO {table} (rowid, title, entities, body) VALUES (?,?,?,?)", rows)
    conn.execute("ALTER TABLE memories ADD COLUMN excerpt TEXT NOT NULL DEFAULT ''")
    conn.execute("ALTER TABLE memories ADD COLUMN body_sha TEXT NOT NULL DEFAULT ''")
    conn.execute("DELETE FROM meta WHERE key = 'text_versions'")


async def test_a_version_8_index_is_upgraded_in_place_to_hold_each_text_once(store: Path) -> None:
    """Version 9's full-text tables keep no copy of the text (contentless) and the excerpt is cut from the body
    when read: a version-8 index is upgraded without a rebuild (recall counts kept), the same memory found by the
    same words and its excerpt the same, the file smaller."""
    made = await _recalled_memory(store)
    async with stdio_tools(store) as t:
        for n in range(60):
            await t.remember(f"Filler {n}", f"Note number {n} about the espresso grinder and its burrs. " * 8)
        before = await t.recall("espresso descaling")
    conn = sqlite3.connect(db_path(store))
    with conn:
        _with_content_copies(conn)
        conn.execute("UPDATE meta SET value = '8' WHERE key = 'schema_version'")
    conn.execute("VACUUM")
    size_8 = db_path(store).stat().st_size
    conn.close()
    async with stdio_tools(store) as t:
        answer = await t.recall("espresso descaling")
        _kept_in_place(answer, made)
        assert [(r["id"], r["excerpt"]) for r in answer["results"]] == [
            (r["id"], r["excerpt"]) for r in before["results"]
        ]
        assert (await t.ok("memory_reindex", verify=True))["mismatches"] == []
    conn = sqlite3.connect(db_path(store))
    try:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "9"
        columns = {r[1] for r in conn.execute("PRAGMA table_info(memories)")}
        assert "excerpt" not in columns and "body_sha" not in columns
        assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'fts_word_content'").fetchone() is None
    finally:
        conn.close()
    conn = sqlite3.connect(db_path(store))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("VACUUM")
    conn.close()
    assert db_path(store).stat().st_size < size_8


async def _recalled_memory(store: Path) -> dict:
    """A memory remembered and recalled three times (heat: what a rebuild from canon would lose)."""
    async with stdio_tools(store) as t:
        made = await t.remember("Espresso machine", "It needs descaling monthly.")
        for _ in range(3):
            await t.recall("espresso")
    return made


def _kept_in_place(answer: dict, made: dict) -> None:
    """The index was upgraded, not rebuilt: the memory is found and its recall counts survived."""
    assert reconcile_of(answer)["rebuilt"] is False
    assert answer["results"][0]["id"] == made["id"] and answer["results"][0]["components"]["heat"] > 0


async def test_a_version_7_index_is_upgraded_in_place_and_starts_its_ledger_log(store: Path) -> None:
    """Version 8 logs every ledger write (another server's remember then costs a named re-check, not a full
    pass): a version-7 index gains the log without a rebuild, recall counts kept."""
    made = await _recalled_memory(store)
    conn = sqlite3.connect(db_path(store))
    with conn:
        conn.execute("DROP TABLE ledger_log")
        conn.execute("DROP INDEX conflicts_open")
        conn.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    conn.close()
    async with stdio_tools(store) as t:
        answer = await t.recall("espresso")
        _kept_in_place(answer, made)
        await t.remember("Grinder", "The grinder burrs are replaced yearly.")
    conn = sqlite3.connect(db_path(store))
    try:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "9"
        assert [r[0] for r in conn.execute("SELECT path FROM ledger_log")][-1].startswith("memories/")
        assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'conflicts_open'").fetchone() is not None
    finally:
        conn.close()


async def test_an_index_without_the_open_conflict_lookups_gains_them_without_a_rebuild(store: Path) -> None:
    """The indexes a recall uses to find the open conflicts of its results came after schema 8 (a process that
    does not know them still writes the table): an index without them gains them in place, counts kept."""
    made = await _recalled_memory(store)
    conn = sqlite3.connect(db_path(store))
    with conn:
        conn.execute("DROP INDEX conflicts_open_a")
        conn.execute("DROP INDEX conflicts_open_b")
    conn.close()
    async with stdio_tools(store) as t:
        answer = await t.recall("espresso")
        _kept_in_place(answer, made)
    conn = sqlite3.connect(db_path(store))
    try:
        plan = " ".join(
            str(row[3])
            for row in conn.execute(
                "EXPLAIN QUERY PLAN SELECT pair_hash FROM conflicts WHERE status = 'open' AND a_id IN ('x')"
            )
        )
        assert "conflicts_open_a" in plan, plan
    finally:
        conn.close()
