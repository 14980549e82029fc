"""Containment: a symlinked `memories/`, store root or `.index/` never lets the server outside the store.

Each setup is the issue's `ln -s` reproduction, on the real stdio server (and the CLI, and the browser
view): a store whose `memories/` (a project's, or the account's) or whose project `.memory/` resolves
outside is refused on every tool with an error naming the link and where it points, and the directory
outside is byte-for-byte what it was (nothing created, served, changed or deleted). Links *inside*
`memories/` that lead out are confined file by file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import mcp
import pytest
from starlette.testclient import TestClient

from memory_mcp.domain.errors import ContainmentError
from memory_mcp.edges.web import WebView
from memory_mcp.store.paths import Store
from memory_mcp.tools.service import MemoryService

from .helpers import REPO, Tools, hand_memory, server_env, settle, write_file

pytestmark = pytest.mark.anyio

PLANTED_ID = "planted-outside-0001"
PLANTED_WORD = "quokkaplanted"


@asynccontextmanager
async def server(account: Path, project: Path | None) -> AsyncIterator[Tools]:
    args = ["-m", "memory_mcp", "--store", str(account)]
    if project is not None:
        args += ["--project-root", str(project)]
    params = mcp.StdioServerParameters(
        command=sys.executable, args=args, env=server_env(account), cwd=str(account.parent)
    )
    async with mcp.Client(params) as client:
        yield Tools(client)


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every path under `folder` with its bytes (files) or its kind: what must not change."""
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames:
            out[os.path.relpath(os.path.join(dirpath, name), folder)] = "dir"
        for name in filenames:
            full = os.path.join(dirpath, name)
            out[os.path.relpath(full, folder)] = Path(full).read_bytes()
    return out


def _setup(tmp_path: Path, kind: str) -> tuple[Path, Path | None, Path, str]:
    """(account store, project root or None, the outside directory, the link as the error names it)."""
    account, outside = tmp_path / "account", tmp_path / "outside"
    outside.mkdir()
    planted = hand_memory(PLANTED_ID, f"Planted {PLANTED_WORD} note", f"The {PLANTED_WORD} file lives outside.")
    if kind == "project memories/":
        project = tmp_path / "proj"
        (project / ".memory").mkdir(parents=True)
        os.symlink("../../outside", project / ".memory" / "memories")
        write_file(outside / "planted.md", planted)
        return account, project, outside, "memories/"
    if kind == "project .memory/":
        project = tmp_path / "proj"
        project.mkdir()
        os.symlink("../outside", project / ".memory")
        write_file(outside / "memories" / "planted.md", planted)
        write_file(outside / "config.toml", "[recall]\ndefault_limit = 7\n")
        return account, project, outside, ".memory/"
    assert kind == "account memories/"
    account.mkdir()
    os.symlink("../outside", account / "memories")
    write_file(outside / "planted.md", planted)
    return account, None, outside, "memories/"


SETUPS = ["project memories/", "project .memory/", "account memories/"]
# every tool, with arguments that would touch the planted file if the link were followed
CALLS = [
    ("memory_remember", {"title": "Lands outside", "body": "It must not land outside."}),
    ("memory_recall", {"query": PLANTED_WORD}),
    ("memory_read", {"id": PLANTED_ID}),
    ("memory_read", {"path": "memories/planted.md"}),
    ("memory_update", {"op": "edit", "id": PLANTED_ID, "body": "overwritten"}),
    ("memory_update", {"op": "set_state", "id": PLANTED_ID, "state": "archived"}),
    ("memory_forget", {"id": PLANTED_ID, "mode": "archive"}),
    ("memory_forget", {"id": PLANTED_ID, "mode": "purge", "confirm": True}),
    ("memory_status", {}),
    ("memory_reindex", {"verify": True}),
    ("memory_reindex", {}),
]


@pytest.mark.parametrize("kind", SETUPS)
async def test_every_tool_refuses_a_store_linked_outside(tmp_path: Path, kind: str) -> None:
    account, project, outside, link = _setup(tmp_path, kind)
    before = snapshot(outside)
    async with server(account, project) as t:
        for name, args in CALLS:
            message = await t.err(name, **args)
            assert f"{link} is a symlink to {outside}" in message, f"{name}: {message}"
            assert "outside the" in message and "refusing" in message, f"{name}: {message}"
        if project is not None:
            # the account scope is not affected, and the refused store was not created through the link
            made = await t.remember("Account note", "Stays in the account store.", scope="global")
            assert (account / made["path"]).is_file()
            assert PLANTED_ID not in await t.recall_ids(PLANTED_WORD, scope="global")
    assert snapshot(outside) == before, "something outside the store was created, changed or deleted"


async def test_the_issue_reproduction_through_the_cli(tmp_path: Path) -> None:
    """`ln -s ../../out R/proj/.memory/memories && memory-mcp --project-root R/proj remember ...`"""
    account, project, outside, _ = _setup(tmp_path, "project memories/")
    before = snapshot(outside)
    env = {**server_env(account), "HOME": str(tmp_path)}
    for argv in (["remember", "lands outside", "x"], ["recall", PLANTED_WORD], ["read", PLANTED_ID]):
        r = subprocess.run(
            [sys.executable, "-m", "memory_mcp", "--project-root", str(project), *argv],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode == 2, r
        assert f"memories/ is a symlink to {outside}, outside the store {project / '.memory'}" in r.stderr
    assert snapshot(outside) == before


def test_a_project_file_behind_the_link_is_not_read(tmp_path: Path) -> None:
    account, project, outside, _ = _setup(tmp_path, "project .memory/")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "memory_mcp",
            "--store",
            str(account),
            "--project-root",
            str(project),
            "config",
            "--json",
        ],
        env=server_env(account),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    answer = json.loads(r.stdout)
    limit = next(s for s in answer["settings"] if s["key"] == "recall.default_limit")
    assert (limit["value"], limit["origin"]) == (5, "default")  # the outside file says 7
    [layer] = [x for x in answer["layers"] if x.startswith("project file")]
    assert f"not read: it resolves through a symlink to {outside / 'config.toml'}" in layer


async def test_a_link_planted_while_the_server_runs_is_refused_at_the_next_call(tmp_path: Path) -> None:
    account, outside = tmp_path / "account", tmp_path / "outside"
    write_file(outside / "planted.md", hand_memory(PLANTED_ID, "Planted", f"The {PLANTED_WORD} file."))
    async with server(account, None) as t:
        kept = await t.remember("Kept memory", "Written before the link is planted.")
        os.rename(account / "memories", tmp_path / "moved-away")
        os.symlink("../outside", account / "memories")
        before = snapshot(outside)
        message = await t.err("memory_recall", query=PLANTED_WORD)
        assert f"memories/ is a symlink to {outside}" in message
        assert f"is a symlink to {outside}" in await t.err("memory_forget", id=kept["id"], mode="purge", confirm=True)
        assert snapshot(outside) == before
        os.unlink(account / "memories")
        os.rename(tmp_path / "moved-away", account / "memories")
        assert kept["id"] in await t.recall_ids("Kept memory")  # the store is usable again once the link is gone


@pytest.mark.parametrize("name", [".index", ".index/index.sqlite3", ".index/write.lock", "dictionary.md", ".gitignore"])
async def test_index_lock_and_dictionary_links_leading_outside_are_refused(tmp_path: Path, name: str) -> None:
    account, outside = tmp_path / "account", tmp_path / "outside"
    (account / "memories").mkdir(parents=True)
    write_file(outside / "victim.txt", "someone else's file\n")
    if name != ".index":
        (account / ".index").mkdir()
    target = outside if name == ".index" else outside / "victim.txt"
    os.symlink(target, account / name)
    before = snapshot(outside)
    async with server(account, None) as t:
        message = await t.err("memory_status")
        shown = ".index/" if name == ".index" else name
        assert f"{shown} is a symlink to {target}, outside the store" in message, message
        await t.err("memory_remember", title="Nothing written", body="Through no link.")
    assert snapshot(outside) == before


async def test_links_inside_memories_that_lead_out_are_never_followed(tmp_path: Path) -> None:
    """A symlinked file and an intermediate symlinked subfolder inside a real memories/."""
    account, outside = tmp_path / "account", tmp_path / "outside"
    write_file(outside / "secret.md", hand_memory("secret-file", "Secret", f"The {PLANTED_WORD} secret."))
    write_file(outside / "dir" / "deep.md", hand_memory("secret-deep", "Deep", f"The {PLANTED_WORD} deep one."))
    (account / "memories").mkdir(parents=True)
    os.symlink(outside / "secret.md", account / "memories" / "secret.md")
    os.symlink(outside / "dir", account / "memories" / "sub")
    before = snapshot(outside)
    async with server(account, None) as t:
        assert await t.recall_ids(PLANTED_WORD, include_deprecated=True) == []
        for mem_id in ("secret-file", "secret-deep"):
            assert "no memory with id" in await t.err("memory_read", id=mem_id)
            assert "no memory with id" in await t.err("memory_forget", id=mem_id, mode="purge", confirm=True)
        assert "symlink" in await t.err("memory_read", path="memories/secret.md")
        assert "symlink" in await t.err("memory_read", path="memories/sub/deep.md")
        reasons = {u["path"]: u["reason"] for u in (await t.status())["unparseable"]}
        assert reasons == {"memories/secret.md": "symlink points outside the store"}
        await t.ok("memory_reindex", verify=True)
    assert snapshot(outside) == before


def test_every_memory_file_operation_is_confined_by_resolved_path(tmp_path: Path) -> None:
    """The core rule the tools rely on, below the per-call check: `Store.memory_file`."""
    store = Store("s", tmp_path / "s")
    (store.memories_dir / "real").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, store.memories_dir / "sub")
    os.symlink(outside / "x.md", store.memories_dir / "file.md")
    os.symlink("real", store.memories_dir / "inside")
    assert store.memory_file("memories/real/a.md") == store.memories_dir / "real" / "a.md"
    assert store.memory_file("memories/inside/a.md") == store.memories_dir / "inside" / "a.md"  # stays inside
    for rel in ("memories/sub/a.md", "memories/file.md", "memories/sub/deeper/a.md"):
        with pytest.raises(ContainmentError, match="goes through the symlink memories/"):
            store.memory_file(rel)
    for rel in ("notes.md", "memories", "memories/../x.md", ".index/index.sqlite3"):
        with pytest.raises(ContainmentError, match="not inside memories/"):
            store.memory_file(rel)


def test_the_browser_view_refuses_a_linked_store(tmp_path: Path) -> None:
    account, project, outside, _ = _setup(tmp_path, "project memories/")
    before = snapshot(outside)
    service = MemoryService(account, project)
    try:
        with TestClient(WebView(service, 5098).app, base_url="http://127.0.0.1:5098") as c:
            for url in ("/memories", f"/memories?q={PLANTED_WORD}", f"/memory/{PLANTED_ID}", "/status"):
                page = c.get(url)
                assert page.status_code >= 400 and f"memories/ is a symlink to {outside}" in page.text, url
                assert PLANTED_WORD not in page.text.replace(f"q={PLANTED_WORD}", "")
    finally:
        service.close()
    assert snapshot(outside) == before


async def test_a_project_document_source_swapped_for_a_link_is_not_followed(tmp_path: Path) -> None:
    account, project, outside = tmp_path / "account", tmp_path / "proj", tmp_path / "outside"
    write_file(project / ".memory" / "config.toml", '[[documents.sources]]\nlabel = "docs"\npath = "docs"\n')
    write_file(project / "docs" / "guide.md", "# Guide\n\nThe wombatguide is here.\n")
    write_file(outside / "secret.md", f"# Secret\n\nThe {PLANTED_WORD} document.\n")
    async with server(account, project) as t:
        assert [r["kind"] for r in (await t.recall("wombatguide"))["results"]] == ["document"]
        os.rename(project / "docs", tmp_path / "docs-away")
        os.symlink(outside, project / "docs")
        settle()
        assert await t.recall_ids(PLANTED_WORD) == []
        assert await t.recall_ids("wombatguide") == []
        await t.err("memory_read", path=str(outside / "secret.md"))
        # a document file swapped for a link to a file outside is skipped, not followed
        os.unlink(project / "docs")
        os.rename(tmp_path / "docs-away", project / "docs")
        (project / "docs" / "guide.md").unlink()
        os.symlink(outside / "secret.md", project / "docs" / "guide.md")
        settle()
        assert await t.recall_ids(PLANTED_WORD) == []
