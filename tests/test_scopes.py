"""Scopes through the real stdio server: a project's local store and the account's global store.

Two server processes bound to different projects share one account store (`--store`): each sees its own
local memories and the global ones, never the other project's. One recall ranks both scopes on one scale;
read/update/forget by id find a memory wherever it lives; `scope="local"` needs a bound project. Also the
reserved `handoff` type (one active per store) and `memory-mcp export` (MEMORY.md).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import mcp
import pytest

from memory_mcp.tools.service import MemoryService

from .helpers import Tools, frontmatter, server_env

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def project_tools(project: Path | None, store: Path) -> AsyncIterator[Tools]:
    """One real server process bound to `project` (None: no project) with `store` as the account store."""
    args = ["-m", "memory_mcp", "--store", str(store)]
    if project is not None:
        args += ["--project-root", str(project)]
    params = mcp.StdioServerParameters(
        command=sys.executable, args=[*args, "serve"], env=server_env(store), cwd=str(store.parent)
    )
    async with mcp.Client(params) as client:
        yield Tools(client)


def _project(tmp_path: Path, name: str) -> Path:
    p = tmp_path / name
    p.mkdir()
    return p


def _by_id(answer: dict) -> dict[str, dict]:
    return {r["id"]: r for r in answer["results"]}


async def test_two_projects_share_the_account_store_but_not_their_local_memories(tmp_path: Path) -> None:
    store = tmp_path / "account"
    p1, p2 = _project(tmp_path, "atlas"), _project(tmp_path, "borealis")
    async with project_tools(p1, store) as a, project_tools(p2, store) as b:
        # remember defaults to the local scope when a project is bound
        a_local = await a.remember("Atlas deploy checklist", "The zephyrine rollout of atlas needs two approvals.")
        b_local = await b.remember("Borealis deploy checklist", "The zephyrine rollout of borealis is automatic.")
        shared = await a.remember(
            "Zephyrine preference", "I like zephyrine rollouts announced in the team channel.", scope="global"
        )
        assert (a_local["scope"], b_local["scope"], shared["scope"]) == ("local", "local", "global")
        assert (p1 / ".memory" / a_local["path"]).is_file()
        assert (p2 / ".memory" / b_local["path"]).is_file()
        assert (store / shared["path"]).is_file()
        assert not (store / a_local["path"]).exists() and not (p2 / ".memory" / a_local["path"]).exists()

        seen_a = _by_id(await a.recall("zephyrine rollout", limit=20))
        seen_b = _by_id(await b.recall("zephyrine rollout", limit=20))
        assert set(seen_a) == {a_local["id"], shared["id"]}
        assert set(seen_b) == {b_local["id"], shared["id"]}
        assert seen_a[shared["id"]]["scope"] == seen_b[shared["id"]]["scope"] == "global"
        assert seen_a[a_local["id"]]["scope"] == "local" and seen_b[b_local["id"]]["scope"] == "local"

        # not by id either, in any scope
        for scope in (None, "local", "global"):
            text = await a.err("memory_read", id=b_local["id"], scope=scope)
            assert b_local["id"] in text and "no memory" in text
            await b.err("memory_update", op="edit", id=a_local["id"], title="Hijacked", scope=scope)
            await b.err("memory_forget", id=a_local["id"], mode="archive", scope=scope)
        assert frontmatter(p1 / ".memory" / a_local["path"])["state"] == "active"

        # a global memory remembered by one project is visible to the other at once, by id as well
        later = await b.remember("Zephyrine glossary", "Zephyrine is the name of our release train.", scope="global")
        assert later["id"] in _by_id(await a.recall("zephyrine", limit=20))
        assert (await a.read(id=later["id"]))["scope"] == "global"

        # each project's status counts its own local store
        assert (await a.ok("memory_status", scope="local"))["total"] == 1
        assert (await b.ok("memory_status", scope="local"))["total"] == 1
        assert (await a.ok("memory_status", scope="global"))["total"] == 2


async def test_one_recall_ranks_both_scopes_on_one_scale(tmp_path: Path) -> None:
    store, project = tmp_path / "account", _project(tmp_path, "atlas")
    async with project_tools(project, store) as t:
        # each scope holds one strong and one weak match for each of two queries
        local_strong = await t.remember(
            "Quarzite cache eviction policy",
            "Quarzite cache eviction runs hourly; quarzite keys older than a day are dropped.",
        )
        local_weak = await t.remember("Team lunch venue", "Lunch is at the usual place; ask about vellichor soup.")
        global_strong = await t.remember(
            "Vellichor font preference",
            "I prefer the vellichor typeface in every vellichor terminal and editor.",
            scope="global",
        )
        global_weak = await t.remember("Reading list", "A book about quarzite mining is on the list.", scope="global")

        for query, strong, weak in (
            ("quarzite cache", local_strong, global_weak),
            ("vellichor typeface", global_strong, local_weak),
        ):
            answer = await t.recall(query, limit=20)
            results = answer["results"]
            scores = [r["score"] for r in results]
            assert scores == sorted(scores, reverse=True), f"{query}: not sorted by score: {scores}"
            assert {r["scope"] for r in results} == {"local", "global"}, f"{query}: one list holds both scopes"
            assert all(r["kind"] == "memory" for r in results)
            ids = [r["id"] for r in results]
            assert ids[0] == strong["id"], f"{query}: the strongest match leads whatever its scope: {results}"
            assert weak["id"] in ids
            assert _by_id(answer)[strong["id"]]["scope"] == strong["scope"]
            assert _by_id(answer)[weak["id"]]["scope"] == weak["scope"]
            # the reconcile report covers both scopes
            assert {s["scope"] for s in answer["index"]["scopes"]} == {"local", "global"}

        # a word every local memory shares (the project's name) scores next to nothing in raw bm25 of a small
        # store; a local title match must still not rank below a passing mention in the account store
        atlas = [
            await t.remember("Atlas release train", "Ships every second Tuesday from the main branch."),
            await t.remember("Atlas on-call", "The atlas pager rotates weekly."),
            await t.remember("Atlas lunch", "The atlas team eats together on Fridays."),
        ]
        passing = await t.remember("Old maps", "I keep an atlas of old maps on the shelf.", scope="global")
        answer = await t.recall("atlas", limit=20)
        got = _by_id(answer)
        assert passing["id"] in got and all(m["id"] in got for m in atlas), answer["results"]
        best_local = max(r["score"] for r in answer["results"] if r["scope"] == "local")
        assert best_local >= got[passing["id"]]["score"], answer["results"]
        for m in atlas:  # a title match, not a near-zero text score
            assert got[m["id"]]["components"]["text"] > 0.5, got[m["id"]]
        scores = [r["score"] for r in answer["results"]]
        assert scores == sorted(scores, reverse=True)

        # naming a scope narrows the search to it
        assert {r["scope"] for r in (await t.recall("quarzite", scope="global"))["results"]} == {"global"}
        assert {r["scope"] for r in (await t.recall("quarzite", scope="local"))["results"]} == {"local"}


async def test_read_update_forget_by_id_find_the_scope_that_holds_it(tmp_path: Path) -> None:
    store, project = tmp_path / "account", _project(tmp_path, "atlas")
    async with project_tools(project, store) as t:
        glob = await t.remember("Editor theme", "I use a light editor theme.", scope="global")
        loc = await t.remember("Atlas build target", "Atlas builds for arm64 only.")
        gpath, lpath = store / glob["path"], project / ".memory" / loc["path"]

        for made, path, scope in ((glob, gpath, "global"), (loc, lpath, "local")):
            got = await t.read(id=made["id"])
            assert got["scope"] == scope and f"{path.name}" in got["path"]
            # a path read works in whichever scope holds the file
            assert (await t.read(path=made["path"]))["id"] == made["id"]
            # the wrong scope named explicitly does not find it
            other = "local" if scope == "global" else "global"
            assert "no memory" in await t.err("memory_read", id=made["id"], scope=other)

        edited = await t.ok("memory_update", op="edit", id=glob["id"], body="I use a dark editor theme now.")
        assert edited["id"] == glob["id"]
        assert "dark editor theme" in gpath.read_text(encoding="utf-8")
        assert not list((project / ".memory" / "memories").glob("editor-theme*"))

        await t.ok("memory_forget", id=loc["id"], mode="archive")
        assert frontmatter(lpath)["state"] == "archived"
        await t.ok("memory_forget", id=glob["id"], mode="deprecate", reason="switched editors")
        assert frontmatter(gpath)["state"] == "deprecated"

        # supersede across scopes is refused: the replacing memory must live in the same scope
        loc2 = await t.remember("Atlas build targets", "Atlas builds for arm64 and x86-64.")
        glob2 = await t.remember("Shell preference", "I use fish as my shell.", scope="global")
        text = await t.err("memory_update", op="supersede", id=loc2["id"], by=glob2["id"])
        assert glob2["id"] in text
        assert frontmatter(project / ".memory" / loc2["path"])["state"] == "active"


async def test_local_scope_without_a_project_is_a_clear_error(tmp_path: Path) -> None:
    store = tmp_path / "account"
    async with project_tools(None, store) as t:
        made = await t.remember("Global only", "Without a project everything is global.")
        assert made["scope"] == "global"
        calls = [
            ("memory_remember", {"title": "x", "body": "y"}),
            ("memory_recall", {"query": "global"}),
            ("memory_read", {"id": made["id"]}),
            ("memory_update", {"op": "edit", "id": made["id"], "title": "z"}),
            ("memory_forget", {"id": made["id"], "mode": "archive"}),
            ("memory_status", {}),
            ("memory_reindex", {}),
        ]
        for name, args in calls:
            text = await t.err(name, scope="local", **args)
            assert "scope" in text and "--project-root" in text, f"{name}: {text}"
        assert frontmatter(store / made["path"])["state"] == "active"
        status = await t.status()
        assert status["scopes"] == ["global"] and status["total"] == 1
        answer = await t.recall("global")
        assert [r["scope"] for r in answer["results"]] == ["global"]
        # a scope that is neither is refused by name too
        assert "scope" in await t.err("memory_recall", query="global", scope="elsewhere")


async def test_handoff_supersedes_the_previous_one_per_store(tmp_path: Path) -> None:
    store, project = tmp_path / "account", _project(tmp_path, "atlas")
    async with project_tools(project, store) as t:
        first = await t.remember("Handoff: parser refactor", "Stopped at the lexer; tests red.", type="handoff")
        assert first["superseded"] == [] and first["created"]
        second = await t.remember("Handoff: parser refactor day 2", "Lexer done; parser next.", type="handoff")
        assert second["superseded"] == [first["id"]]
        assert first["id"] in second["message"] and "handoff" in second["message"]
        old = frontmatter(project / ".memory" / first["path"])
        assert old["state"] == "archived" and old["superseded_by"] == [second["id"]]
        assert frontmatter(project / ".memory" / second["path"])["supersedes"] == [first["id"]]

        # a handoff in the other store does not touch this one
        elsewhere = await t.remember("Handoff: laptop setup", "Dotfiles half migrated.", type="handoff", scope="global")
        assert elsewhere["superseded"] == [] and elsewhere["message"] == ""
        assert frontmatter(project / ".memory" / second["path"])["state"] == "active"

        # an ordinary memory never supersedes a handoff
        fact = await t.remember("Parser uses Pratt", "The parser is a Pratt parser.")
        assert fact["superseded"] == []
        local = await t.ok("memory_status", scope="local")
        assert local["by_type"].get("handoff") == 2
        active = await t.recall("handoff", type="handoff", state="active", scope="local")
        assert [r["id"] for r in active["results"]] == [second["id"]]

        third = await t.remember("Handoff: parser refactor day 3", "Parser done; docs next.", type="handoff")
        assert third["superseded"] == [second["id"]]
        actives = [p for p in (project / ".memory" / "memories").glob("*.md") if frontmatter(p)["state"] == "active"]
        assert sorted(frontmatter(p)["type"] for p in actives) == ["fact", "handoff"]


def _export(store: Path, project: Path, to: Path, *extra: str) -> str:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "memory_mcp",
            "--store",
            str(store),
            "--project-root",
            str(project),
            "export",
            "--to",
            str(to),
            *extra,
        ],
        env=server_env(store),
        cwd=str(store.parent),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return (to / "MEMORY.md").read_text(encoding="utf-8")


def _sections(text: str, level: str) -> dict[str, str]:
    """Heading text → the text under it, for headings of exactly this level (e.g. '##')."""
    parts = re.split(rf"^{level} (.+)$", text, flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


async def test_export_writes_active_memories_grouped_by_type_with_ids(tmp_path: Path) -> None:
    store, project = tmp_path / "account", _project(tmp_path, "atlas")
    out = tmp_path / "out"
    out.mkdir()
    async with project_tools(project, store) as t:
        dec1 = await t.remember("Use SQLite for the index", "Decided: SQLite, one file per store.", type="decision")
        fact = await t.remember("Atlas runs on Python 3.11", "The atlas service runs on Python 3.11.")
        dec2 = await t.remember("Use ruff for lint", "Decided: ruff check and ruff format.", type="decision")
        gone = await t.remember("Old staging host", "Staging was on host-17.")
        await t.ok("memory_forget", id=gone["id"], mode="archive")
        h1 = await t.remember("Handoff: export", "Started the export.", type="handoff")
        h2 = await t.remember("Handoff: export 2", "Export nearly done.", type="handoff")
        pref = await t.remember("Prefers tabs", "I prefer tabs in Makefiles only.", type="preference", scope="global")

    text = _export(store, project, out, "--scope", "local")
    assert text.startswith("# MEMORY")
    groups = _sections(text, "##")
    assert set(groups) == {"fact", "decision", "handoff"}, groups.keys()
    assert list(groups) == ["fact", "decision", "handoff"], "types in a fixed order"
    assert fact["id"] in groups["fact"] and "Atlas runs on Python 3.11" in groups["fact"]
    # newest first within a type
    assert groups["decision"].index(dec2["id"]) < groups["decision"].index(dec1["id"])
    assert h2["id"] in groups["handoff"]
    # only active memories; nothing from the other scope
    for absent in (gone["id"], h1["id"], pref["id"]):
        assert absent not in text

    both = _export(store, project, out)
    scopes = _sections(both, "##")
    assert [k.split()[0] for k in scopes] == ["local", "global"]
    local_part, global_part = scopes.values()
    assert pref["id"] in global_part and pref["id"] not in local_part
    assert set(_sections(global_part, "###")) == {"preference"}
    assert set(_sections(local_part, "###")) == {"fact", "decision", "handoff"}

    # a rendering, never read back: exporting into the store does not create a memory
    _export(store, project, store)
    service = MemoryService(store, project)
    try:
        assert service.status(scope="global").total == 1
        assert not list((store / "memories").glob("MEMORY*"))
    finally:
        service.close()
