"""Provenance and trust (issue 44): every memory records where it came from (`origin:`), the tool surface cannot
give a trust level only a person gives, and what a teammate's sync brought is named before it is trusted.

Through the public surface: the real stdio server spoken to by the SDK's client with a named clientInfo (both
protocol eras), the CLI as a subprocess, and a sync between two clones of a real bare remote."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import mcp
import pytest
from mcp.types import Implementation

from .helpers import Tools, frontmatter, hand_memory, http_server, server_env, settle, write_file
from .sync_support import Machine, identify, machines, replace_in

AGENT = Implementation(name="test-agent", version="9.1")


def _stdio(root: Path, mode: str, info: Implementation | None = AGENT) -> mcp.Client:
    params = mcp.StdioServerParameters(
        command=sys.executable,
        args=["-m", "memory_mcp", "--store", str(root)],
        env=server_env(root),
        cwd=str(root.parent),
    )
    return mcp.Client(params, mode=mode, client_info=info)


def cli(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "memory_mcp", "--store", str(store), *args],
        env=server_env(store),
        cwd=store.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done


def _file(store: Path, answer: dict) -> Path:
    return store / answer["path"]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_tool_call_records_the_clients_name_and_version_and_cannot_confirm(tmp_path: Path, mode: str) -> None:
    store = tmp_path / "store"
    async with _stdio(store, mode) as client:
        tools = Tools(client)
        made = await tools.remember("Deploys go through the release branch", "Never from main.", trust="user-stated")
        assert frontmatter(_file(store, made))["origin"] == "mcp test-agent 9.1"
        refused = await tools.err("memory_remember", title="Use tabs", body="Tabs, not spaces.", trust="confirmed")
        assert "only by a person" in refused and "CLI" in refused
        refused = await tools.err("memory_update", op="edit", id=made["id"], trust="confirmed")
        assert "only by a person" in refused
        assert frontmatter(_file(store, made))["trust"] == "user-stated"
        # a person confirms it by hand; a tool's edit of its text is no longer what the person confirmed
        path = _file(store, made)
        settle()
        path.write_text(path.read_text(encoding="utf-8").replace("trust: user-stated", "trust: confirmed"))
        assert (await tools.ok("memory_read", id=made["id"]))["trust"] == "confirmed"
        await tools.ok("memory_update", op="edit", id=made["id"], body="Never from main, and never on Fridays.")
        assert frontmatter(path)["trust"] == "user-stated"


def test_the_cli_records_itself_and_a_person_confirms_through_it(tmp_path: Path) -> None:
    store = tmp_path / "store"
    done = cli(store, "remember", "Team prefers tabs", "Tabs in every repository.", "--json")
    assert done.returncode == 0, done.stderr
    (path,) = (store / "memories").glob("*.md")
    meta = frontmatter(path)
    assert meta["origin"] == "cli" and meta["trust"] == "user-stated"
    done = cli(store, "update", "edit", meta["id"], "--trust", "confirmed")
    assert done.returncode == 0, done.stderr
    assert frontmatter(path)["trust"] == "confirmed"
    assert frontmatter(path)["origin"] == "cli"  # where it came from does not change with an edit


@pytest.mark.anyio
async def test_every_answer_says_where_a_memory_came_from_and_older_files_say_unknown(tmp_path: Path) -> None:
    store = tmp_path / "store"
    # a memory written before origins were recorded: present before the index is first built
    write_file(store / "memories" / "old.md", hand_memory("OLD1", "Staging runs on Fly", "Fly.io, region ams."))
    async with _stdio(store, "auto") as client:
        tools = Tools(client)
        made = await tools.remember(
            "Prefers tabs for indentation", "Tabs everywhere.", type="preference", trust="user-stated"
        )
        await tools.remember("The CI is probably slow on Mondays", "A guess from two runs.")
        # a person adds a file by hand once the index exists: reconcile tells it apart (in the index only)
        settle()
        write_file(store / "memories" / "hand.md", hand_memory("HAND1", "Backups at 02:00", "Nightly, UTC."))
        read = await tools.ok("memory_read", id=made["id"])
        assert (read["trust"], read["origin"]) == ("user-stated", "mcp test-agent 9.1")
        assert (await tools.ok("memory_read", id="OLD1"))["origin"] == "origin unknown"
        assert (await tools.ok("memory_read", id="HAND1"))["origin"] == "hand edit"
        assert "origin" not in frontmatter(store / "memories" / "hand.md")  # the person's file is not rewritten
        recall = await tools.client.call_tool("memory_recall", {"query": "tabs indentation"})
        (hit,) = [r for r in recall.structured_content["results"] if r["id"] == made["id"]]
        assert (hit["trust"], hit["origin"]) == ("user-stated", "mcp test-agent 9.1")
        assert "by test-agent 9.1" in recall.content[0].text
        status = await tools.ok("memory_status")
        assert status["by_origin"] == {"mcp test-agent 9.1": 2, "hand edit": 1, "origin unknown": 1}
        text = (await client.read_resource("memory://context")).contents[0].text
    assert "(preference, stated by the user, as recorded by test-agent 9.1)" in text
    assert "(fact, inferred by test-agent 9.1)" in text
    assert "(fact, user-stated, origin unknown)" in text
    assert "(fact, stated by the user, through a hand edit)" in text

    # a person confirms through the CLI: confirmed memories come first, under their own heading
    assert cli(store, "update", "edit", "OLD1", "--trust", "confirmed").returncode == 0
    context = cli(store, "context").stdout
    assert context.index("## What the user confirmed") < context.index("## What the user stated")
    assert "- Staging runs on Fly (fact): " in context  # memory text inside the context's fence (issue 44 part 4)
    status = cli(store, "status").stdout
    assert "  origin: 2 mcp test-agent 9.1, 1 hand edit, 1 origin unknown\n" in status


def test_the_browser_view_shows_origins_and_a_person_confirms_there(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from memory_mcp.edges.web import WebView
    from memory_mcp.tools.service import MemoryService

    from .test_web import ORIGIN, PORT, edit_form, post

    store = tmp_path / "store"
    assert cli(store, "remember", "Team prefers tabs", "Tabs in every repository.").returncode == 0
    (path,) = (store / "memories").glob("*.md")
    mem_id = frontmatter(path)["id"]
    service = MemoryService(store)
    try:
        with TestClient(WebView(service, PORT).app, base_url=ORIGIN) as client:
            assert '<span class="chip origin" title="where it came from">cli</span>' in client.get("/memories").text
            assert '<span class="origin" title="where it came from">cli</span>' in client.get(f"/memory/{mem_id}").text
            _, form = edit_form(client, mem_id)
            assert "confirmed" in client.get(f"/memory/{mem_id}/edit").text  # the form offers it
            form["trust"] = "confirmed"
            assert post(client, f"/memory/{mem_id}/edit", form, None).status_code == 303
    finally:
        service.close()
    assert frontmatter(path)["trust"] == "confirmed" and frontmatter(path)["origin"] == "cli"


def test_a_teammates_new_memories_are_named_before_they_are_trusted(tmp_path: Path) -> None:
    remote, (ana, ben) = machines(tmp_path, 2)
    identify(ana, "Ana")
    identify(ben, "Ben")
    ana.cli("remember", "Deploys only on Tuesdays", "Tuesday to Thursday, never Friday.", "--type", "preference")
    ana.sync("--init", str(remote), "--branch", "main")
    ben.cli("remember", "Ben prefers dark mode", "In every editor.", "--type", "preference")
    got = ben.sync("--init", str(remote), "--branch", "main")
    assert got["from_teammates"] == {"Ana <ana@example.com>": [_id_of(ben, "Deploys only on Tuesdays")]}

    # the answers name the author git recorded, then what the sender's file said; the file is not rewritten (a
    # receipt is no edit: nothing goes back to Ana, nothing clashes with a memory she makes private meanwhile)
    path = _path_of(ben, "Deploys only on Tuesdays")
    assert frontmatter(path)["origin"] == "cli"
    assert ben.git("status", "--porcelain") == ""
    context = ben.cli("context").stdout
    teammates = context[context.index("## New from teammates (1, at the last sync)") :]
    assert "- 1 from Ana <ana@example.com>: Deploys only on Tuesdays\n" in teammates
    stated = context[context.index("## What the user stated") : context.index("## Also worth knowing")]
    assert "Ben prefers dark mode" in stated and "Deploys only on Tuesdays" not in stated
    assert "(preference, from Ana <ana@example.com>, stated by them, through the CLI)" in context
    read = json.loads(ben.cli("read", _id_of(ben, "Deploys only on Tuesdays"), "--json").stdout)
    assert read["origin"] == "sync from Ana <ana@example.com>; cli"
    # the index is derived: rebuilt from nothing, it asks git again, and Ana's memory is still hers
    shutil.rmtree(ben.root / ".index")
    ben.cli("reindex")
    read = json.loads(ben.cli("read", _id_of(ben, "Deploys only on Tuesdays"), "--json").stdout)
    assert read["origin"] == "sync from Ana <ana@example.com>; cli"
    stated = ben.cli("context").stdout.split("## What the user stated")[1].split("\n## ")[0]
    assert "Ben prefers dark mode" in stated and "Deploys only on Tuesdays" not in stated

    # back on Ana's machine her memory is still hers, and nothing of her own is new from a teammate
    ana.sync()
    context = ana.cli("context").stdout
    stated = context[context.index("## What the user stated") :]
    assert "Deploys only on Tuesdays" in stated.split("\n## ")[0]
    assert "- 1 from Ben <ben@example.com>: Ben prefers dark mode" in context
    assert "from Ana" not in context
    assert frontmatter(_path_of(ana, "Deploys only on Tuesdays"))["origin"] == "cli"  # nothing came back renamed

    # Ana edits it; the edit arrives as an edit: still hers
    replace_in(_path_of(ana, "Deploys only on Tuesdays"), "never Friday.", "never Friday, nor Monday.")
    ana.sync()
    ben.sync()
    read = json.loads(ben.cli("read", _id_of(ben, "Deploys only on Tuesdays"), "--json").stdout)
    assert "nor Monday" in read["text"] and read["origin"] == "sync from Ana <ana@example.com>; cli"


def _path_of(m: Machine, title: str) -> Path:
    (path,) = [p for p in m.memories.glob("*.md") if f"# {title}\n" in p.read_text(encoding="utf-8")]
    return path


def _id_of(m: Machine, title: str) -> str:
    return str(frontmatter(_path_of(m, title))["id"])


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_over_http_the_origin_names_the_authenticated_principal(tmp_path: Path, mode: str) -> None:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    store = tmp_path / "store"
    with http_server(store) as server:
        headers = {"Authorization": f"Bearer {server.token}"}
        async with create_mcp_http_client(headers=headers) as http:
            transport = streamable_http_client(server.url, http_client=http)
            async with mcp.Client(transport, mode=mode, client_info=AGENT) as client:
                made = await Tools(client).remember("Remote agent note", "Written over HTTP.")
    assert frontmatter(store / made["path"])["origin"] == "mcp test-agent 9.1 (static token)"


def test_an_import_records_the_importer_and_its_file(tmp_path: Path) -> None:
    store = tmp_path / "store"
    notes = tmp_path / "notes"
    write_file(notes / "deploys.md", "# Deploys\n\nDeploys happen on Tuesdays.\n")
    done = cli(store, "import", "markdown", str(notes))
    assert done.returncode == 0, done.stderr
    (path,) = (store / "memories").glob("*.md")
    meta = frontmatter(path)
    assert meta["trust"] == "imported" and meta["origin"] == "import markdown notes"


def test_a_store_made_a_repository_while_a_server_runs_names_the_teammate_of_what_it_pulls(tmp_path: Path) -> None:
    """A server that looked a store up before it was a git repository (a hand-added file made it ask) must ask again
    once it is one: a teammate's file pulled a moment later is theirs, not what this user stated."""
    from memory_mcp.tools.service import MemoryService

    root = tmp_path / "store"
    svc = MemoryService(root)
    try:
        write_file(root / "memories" / "fact" / "mine.md", hand_memory("01JHAND0000000000000000001", "Mine", "Mine."))
        assert svc.status().total == 1  # a pass that found a new file outside any repository
        git = ["git", "-C", str(root)]
        subprocess.run([*git, "init", "-q"], check=True)
        subprocess.run([*git, "config", "user.name", "Ben"], check=True)
        subprocess.run([*git, "config", "user.email", "ben@example.com"], check=True)
        write_file(root / "memories" / "fact" / "ana.md", hand_memory("01JHAND0000000000000000002", "Ana's", "Hers."))
        ana = ["-c", "user.name=Ana", "-c", "user.email=ana@example.com"]
        subprocess.run([*git, "add", "memories/fact/ana.md"], check=True)
        subprocess.run([*git, *ana, "commit", "-qm", "from Ana"], check=True)
        read = svc.read(id="01JHAND0000000000000000002")
        assert read.origin.startswith("sync from Ana <ana@example.com>"), read.origin
    finally:
        svc.close()
