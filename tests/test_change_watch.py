"""The change watch (inotify): unchanged calls skip the scan, and no change is ever missed because of it.

Driven through the real stdio server, the long-running process the watch is for. Each test first checks
that the watch is on for this store (Linux, local filesystem); elsewhere they are skipped, and every call
simply scans as before (the rest of the suite covers that path).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memory_mcp.store.watch import CanonWatch, filesystem_type

from .helpers import Tools, hand_memory, reconcile_of, server_env, settle, stdio_tools, tamper, write_file

pytestmark = pytest.mark.anyio


async def watch_on(tools: Tools) -> None:
    state = (await tools.status())["index"]["change_watch"]
    if not state.startswith("on"):
        pytest.skip(f"change watch not available here: {state}")


async def settled_quiet_call(tools: Tools, query: str) -> dict:
    """Two calls after files settled: the first may re-hash racy entries, the second must skip the scan."""
    settle()
    await tools.recall(query)
    answer = await tools.recall(query)
    assert reconcile_of(answer)["scan"] == "none", reconcile_of(answer)
    return answer


async def test_unchanged_calls_skip_the_scan_and_every_kind_of_change_is_seen(tools: Tools, store: Path) -> None:
    await watch_on(tools)
    mem = store / "memories"
    write_file(mem / "a.md", hand_memory("watch-a", "Boiler service", "The boiler is serviced by Rossi in May."))
    write_file(mem / "b.md", hand_memory("watch-b", "Bike lock", "The bike lock code is kept in the drawer."))
    answer = await settled_quiet_call(tools, "boiler")
    assert [r["id"] for r in answer["results"]] == ["watch-a"]
    assert reconcile_of(answer)["scanned"] == 2

    # an in-place edit of the same size whose mtime is put back: invisible to a stat gate, seen by the watch
    before = (mem / "a.md").stat()
    text = (mem / "a.md").read_text(encoding="utf-8")
    write_file(mem / "a.md", text.replace("Rossi", "Bruni"))
    os.utime(mem / "a.md", ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (mem / "a.md").stat().st_size == before.st_size
    answer = await tools.recall("Bruni")
    assert [r["id"] for r in answer["results"]] == ["watch-a"]
    # only the named file was read, not the whole store
    assert reconcile_of(answer)["scan"] == "changed-files" and reconcile_of(answer)["reindexed"] == 1
    assert await tools.recall_ids("Rossi") == []

    # a folder made after the watch was set up, a file in it, then an edit inside it
    await settled_quiet_call(tools, "boiler")
    write_file(mem / "home" / "c.md", hand_memory("watch-c", "Garden tap", "The garden tap leaks in winter."))
    answer = await tools.recall("garden tap")
    assert [r["id"] for r in answer["results"]] == ["watch-c"]
    assert reconcile_of(answer)["scan"] == "full"  # a new folder: only a scan sees what is in it
    await settled_quiet_call(tools, "garden")
    write_file(mem / "home" / "c.md", hand_memory("watch-c", "Garden tap", "The garden tap was replaced in June."))
    answer = await tools.recall("replaced june")
    assert [r["id"] for r in answer["results"]] == ["watch-c"] and reconcile_of(answer)["scan"] == "changed-files"

    # two files swapped by hand (each id now at the other's path): the named-files pass hands over to a full one
    await settled_quiet_call(tools, "garden")
    os.rename(mem / "a.md", mem / "swap.tmp")
    os.rename(mem / "home" / "c.md", mem / "a.md")
    os.rename(mem / "swap.tmp", mem / "home" / "c.md")
    answer = await tools.recall("garden tap")
    assert [(r["id"], r["path"]) for r in answer["results"]] == [("watch-c", "memories/a.md")]
    assert answer["index"]["unparseable"] == []
    assert (await tools.read(id="watch-a"))["path"] == "memories/home/c.md"
    os.rename(mem / "a.md", mem / "swap.tmp")
    os.rename(mem / "home" / "c.md", mem / "a.md")
    os.rename(mem / "swap.tmp", mem / "home" / "c.md")

    # rename and delete
    await settled_quiet_call(tools, "garden")
    os.rename(mem / "b.md", mem / "home" / "bike.md")
    found = await tools.recall("bike lock")
    assert [(r["id"], r["path"]) for r in found["results"]] == [("watch-b", "memories/home/bike.md")]
    assert reconcile_of(found)["scan"] == "changed-files" and reconcile_of(found)["removed"] == 1
    await settled_quiet_call(tools, "bike")
    (mem / "home" / "bike.md").unlink()
    found = await tools.recall("bike lock")
    assert found["results"] == [] and reconcile_of(found)["scan"] == "changed-files"

    # a folder removed as a whole
    await settled_quiet_call(tools, "garden")
    (mem / "home" / "c.md").unlink()
    (mem / "home").rmdir()
    answer = await tools.recall("garden tap")
    assert answer["results"] == [] and reconcile_of(answer)["scanned"] == 1
    assert reconcile_of(answer)["scan"] == "full"


async def test_another_process_writing_the_index_makes_the_next_call_scan(tools: Tools, store: Path) -> None:
    await watch_on(tools)
    write_file(store / "memories" / "a.md", hand_memory("watch-a", "Boiler service", "Serviced by Rossi."))
    await settled_quiet_call(tools, "boiler")
    # no file changed, but another process dropped this file's ledger row: the server must not trust its skip
    tamper(store, "DELETE FROM files WHERE path = ?", ("memories/a.md",))
    answer = await tools.recall("boiler")
    rec = reconcile_of(answer)
    assert rec["scan"] == "full" and rec["reindexed"] == 1
    assert [r["id"] for r in answer["results"]] == ["watch-a"]


async def test_dictionary_change_is_applied_on_a_quiet_store(tools: Tools, store: Path) -> None:
    await watch_on(tools)
    write_file(
        store / "memories" / "a.md",
        hand_memory("watch-a", "Billing outage", "The invoices were late.", entities=["billing-svc"]),
    )
    await settled_quiet_call(tools, "invoices")
    assert await tools.recall_ids("invoices", entity="billing-service") == []
    write_file(store / "dictionary.md", "- billing-service: the billing backend (aka: billing-svc)\n")
    answer = await tools.recall("invoices", entity="billing-service")
    assert [r["id"] for r in answer["results"]] == ["watch-a"]
    assert answer["results"][0]["entities"] == ["billing-service"]


async def test_symlinks_in_memories_turn_the_skip_off_and_changes_are_still_seen(tools: Tools, store: Path) -> None:
    await watch_on(tools)
    mem = store / "memories"
    write_file(mem / "real" / "a.md", hand_memory("watch-a", "Boiler service", "Serviced by Rossi."))
    os.symlink(mem / "real", mem / "linked", target_is_directory=True)
    settle()
    await tools.recall("boiler")
    status = await tools.status()
    assert status["index"]["change_watch"].startswith("off: memories/ holds symlinks")
    assert status["index"]["last_reconcile"]["scan"] == "full"
    write_file(mem / "real" / "a.md", hand_memory("watch-a", "Boiler service", "Serviced by Bruni."))
    assert await tools.recall_ids("Bruni") == ["watch-a"]


def test_filesystems_that_may_miss_changes_turn_the_watch_off(tmp_path: Path) -> None:
    if not Path("/proc/self/mountinfo").exists():
        pytest.skip("no /proc/self/mountinfo")
    assert filesystem_type(Path("/proc/self")) == "proc"
    watch = CanonWatch(Path("/proc/self"))
    assert not watch.active and watch.why_off is not None and "proc" in watch.why_off
    assert watch.poll() is None  # unknown: every call scans
    watch.close()


async def test_a_one_shot_status_reports_the_watch_a_server_keeps(tools: Tools, store: Path) -> None:
    """A one-shot CLI call opens no watch (no later call of it could use one) and so scans every file, like a
    server's first call; its status still says what a server of this store keeps."""
    served = (await tools.status())["index"]["change_watch"]
    out = subprocess.run(
        [sys.executable, "-m", "memory_mcp", "--store", str(store), "status", "--json"],
        capture_output=True, text=True, env=server_env(store), timeout=120, check=True,
    )  # fmt: skip
    index = json.loads(out.stdout)["index"]
    assert index["change_watch"] == served
    assert index["last_reconcile"]["scan"] == "full"


def test_the_setting_turns_the_watch_off_and_every_call_scans(tmp_path: Path) -> None:
    from memory_mcp.config import load_settings
    from memory_mcp.tools.service import MemoryService

    settings = load_settings(env={}, overrides=["index.change_watch=false"], user_config=tmp_path / "none.toml")
    service = MemoryService.from_settings(settings, store=tmp_path / "store")
    try:
        write_file(tmp_path / "store" / "memories" / "a.md", hand_memory("watch-a", "Boiler", "Serviced by Rossi."))
        settle()
        service.status()
        status = service.status()
        assert status.index.change_watch == "off: turned off (index.change_watch = false)"
        assert status.index.last_reconcile.scan == "full" and status.index.last_reconcile.scanned == 1
    finally:
        service.close()


async def test_another_server_recalling_keeps_the_skip_and_its_writes_are_seen(tools: Tools, store: Path) -> None:
    """Two servers on one store: a recall of one (it writes its heat to the shared index) must not cost the
    other a full pass, and what the other remembers or what is edited by hand is still seen at once."""
    await watch_on(tools)
    mem = store / "memories"
    write_file(mem / "a.md", hand_memory("watch-a", "Boiler service", "The boiler is serviced by Rossi in May."))
    await settled_quiet_call(tools, "boiler")
    async with stdio_tools(store) as other:
        for _ in range(3):
            assert await other.recall_ids("boiler") == ["watch-a"]  # each commits heat to the index
            answer = await tools.recall("boiler")
            assert reconcile_of(answer)["scan"] == "none", reconcile_of(answer)
            assert [r["id"] for r in answer["results"]] == ["watch-a"]
        remembered = await other.remember("Bike lock", "The bike lock code is kept in the kitchen drawer.")
        answer = await tools.recall("bike lock drawer")
        assert [r["id"] for r in answer["results"]] == [remembered["id"]]
        # the other server logged the one file it wrote, the one this server's watch saw: only it is re-checked
        assert reconcile_of(answer)["scan"] == "changed-files", reconcile_of(answer)
        # a ledger row dropped behind both servers' backs is in no log: whichever server calls next restores it
        # (a full pass when nothing else was logged since its last call, else a re-check of what was)
        tamper(store, "DELETE FROM files WHERE path = ?", ("memories/a.md",))
        assert await other.recall_ids("boiler") == ["watch-a"]
        assert await tools.recall_ids("boiler") == ["watch-a"]
        write_file(mem / "a.md", hand_memory("watch-a", "Boiler service", "The boiler is serviced by Bruni in May."))
        assert await tools.recall_ids("Bruni") == ["watch-a"]
        assert await other.recall_ids("Rossi") == []
