"""MCP over Streamable HTTP: the real `memory-mcp serve --http` process on a free loopback port, driven by
the SDK's HTTP client: the same tools, resources and prompts as stdio, project binding, many clients at
once, and a client that vanishes mid-call."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from memory_mcp.store.lock import StoreLock

from .helpers import REPO, TOOL_NAMES, hand_memory, http_server, http_tools, server_env, stdio_tools, write_file

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_tools_resources_and_prompts_round_trip(store: Path, mode: str) -> None:
    with http_server(store) as server:
        async with http_tools(server, mode=mode) as t:
            tools = {tool.name: tool for tool in (await t.client.list_tools()).tools}
            assert set(tools) == TOOL_NAMES
            made = await t.remember("Deploys go through Fly.io", "Staging deploys run `fly deploy` from main.")
            assert made["created"] is True
            [hit] = (await t.recall("fly deploy staging"))["results"]
            assert hit["id"] == made["id"]
            read = await t.read(id=made["id"])
            assert "fly deploy" in read["text"]
            edited = await t.ok(
                "memory_update", op="edit", id=made["id"], body="Staging deploys run `fly deploy --remote-only`."
            )
            assert edited["id"] == made["id"]
            assert "--remote-only" in (await t.read(id=made["id"]))["text"]
            other = await t.remember("Backups run nightly", "pgBackRest to S3 at 02:00.")
            forgot = await t.ok("memory_forget", id=other["id"], mode="archive")
            assert forgot["state"] == "archived"
            status = await t.status()
            assert status["total"] == 2 and status["by_state"] == {"active": 1, "archived": 1}
            reindexed = await t.ok("memory_reindex", verify=True)
            assert reindexed["memories"] == 2 and reindexed["mismatches"] == []
            refused = await t.err("memory_recall", query="x", limit=99)
            assert "limit" in refused

            [context] = (await t.client.read_resource("memory://context")).contents
            assert "Deploys go through Fly.io" in context.text
            prompts = (await t.client.list_prompts()).prompts
            assert [p.name for p in prompts] == ["memory_start"]
            prompt = await t.client.get_prompt("memory_start")
            assert "Deploys go through Fly.io" in prompt.messages[0].content.text
        # what a stdio client is offered is exactly what an HTTP client is offered
        async with stdio_tools(store, mode=mode) as s:
            stdio_tools_listed = {tool.name: tool for tool in (await s.client.list_tools()).tools}
        assert {n: x.model_dump() for n, x in tools.items()} == {
            n: x.model_dump() for n, x in stdio_tools_listed.items()
        }
    assert server.process.returncode is not None


async def test_project_root_binds_the_local_scope(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home-store"
    project.mkdir()
    with http_server(home, "--project-root", str(project)) as server:
        async with http_tools(server) as t:
            local = await t.remember("Uses pnpm workspaces", "This repo builds with pnpm.")
            shared = await t.remember("Prefers dark mode", "Everywhere.", scope="global")
            status = await t.ok("memory_status", scope="local")
            assert status["scope"] == "local" and status["total"] == 1
    assert local["path"].startswith("memories/") and (project / ".memory" / local["path"]).is_file()
    assert (home / shared["path"]).is_file()


async def _client_work(server, n: int, calls: int, written: dict[str, tuple[str, str]], errors: list[str]) -> None:
    """One client's mixed calls: a remember, then a recall of it (read-your-writes), now and then a recall of
    another client's memory, a status, or an edit of its own memory."""
    try:
        async with http_tools(server) as t:
            mine: list[str] = []
            for i in range(calls):
                word = f"zq{n}x{i}w"
                step = i % 5
                if step in (0, 1) or not mine:
                    made = await t.remember(f"Client {n} note {i}", f"The marker word is {word}.")
                    written[made["id"]] = (word, made["path"])
                    mine.append(made["id"])
                    found = [r["id"] for r in (await t.recall(word))["results"]]
                    if made["id"] not in found:
                        errors.append(f"client {n}: its own write {made['id']} was not recalled right after")
                elif step == 2:
                    others = [k for k in list(written) if k not in mine]
                    if others:
                        word_of_other = written[others[i % len(others)]][0]
                        await t.recall(word_of_other)
                elif step == 3:
                    await t.status()
                else:
                    target = mine[-1]
                    word_of_target = next(w for k, (w, _) in written.items() if k == target)
                    await t.ok(
                        "memory_update", op="edit", id=target, body=f"The marker word is {word_of_target}. Edited."
                    )
    except Exception as exc:  # noqa: BLE001 - every failure is collected and asserted below
        errors.append(f"client {n}: {type(exc).__name__}: {exc}")


async def _many_clients(store: Path, clients: int, calls: int) -> None:
    written: dict[str, tuple[str, str]] = {}
    errors: list[str] = []
    with http_server(store) as server:
        async with anyio.create_task_group() as tg:
            for n in range(clients):
                tg.start_soon(_client_work, server, n, calls, written, errors)
        assert errors == []
        async with http_tools(server) as t:
            for mem_id, (word, _) in written.items():
                assert mem_id in [r["id"] for r in (await t.recall(word))["results"]], f"{mem_id} ({word}) lost"
            status = await t.status()
            assert status["total"] == len(written) and status["unparseable"] == []
    files = sorted((store / "memories").rglob("*.md"))
    assert len(files) == len(written)
    verify = subprocess.run(
        [sys.executable, "-m", "memory_mcp", "--store", str(store), "reindex", "--verify", "--json"],
        capture_output=True, text=True, env=server_env(store), timeout=120,
    )  # fmt: skip
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert json.loads(verify.stdout)["unparseable"] == []


async def test_many_clients_at_once_lose_nothing(store: Path) -> None:
    await _many_clients(store, clients=16, calls=10)


@pytest.mark.long
async def test_16_clients_x_50_calls_lose_nothing(store: Path) -> None:
    await _many_clients(store, clients=16, calls=50)


CLIENT_THAT_VANISHES = """
import sys, anyio, mcp
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

async def main(url, token):
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        async with mcp.Client(streamable_http_client(url, http_client=http)) as client:
            print("calling", flush=True)
            await client.call_tool("memory_reindex", {"verify": True})
            print("answered", flush=True)

anyio.run(main, sys.argv[1], sys.argv[2])
"""


async def test_a_client_killed_mid_call_leaves_no_lock_held(store: Path) -> None:
    # enough files that a verified reindex takes a while: the client is killed while it runs
    for i in range(3000):
        write_file(store / "memories" / f"m{i}.md", hand_memory(f"m{i}", f"Note {i}", f"Body number {i} of many."))
    with http_server(store) as server:
        async with http_tools(server) as t:
            assert (await t.status())["total"] == 3000  # the index is built before the slow call
        client = subprocess.Popen(
            [sys.executable, "-c", CLIENT_THAT_VANISHES, server.url, server.token],
            stdout=subprocess.PIPE, text=True, env=server_env(store) | {"PYTHONPATH": str(REPO)},
        )  # fmt: skip
        try:
            assert client.stdout is not None
            assert client.stdout.readline().strip() == "calling"
            time.sleep(0.3)
            os.kill(client.pid, signal.SIGKILL)
        finally:
            client.wait(timeout=30)
        assert "answered" not in client.stdout.read(), "the call ended before the client was killed"
        # the call that lost its client finishes and lets go: another process takes the store lock
        lock = StoreLock(store, store / ".index" / "write.lock", timeout=60)
        with lock:
            pass
        async with http_tools(server) as t:
            assert (await t.status())["total"] == 3000
            made = await t.remember("After the vanished client", "Writes still work.")
            assert made["created"]


def _workers(pid: int) -> list[int]:
    """The worker processes `pid` started (Linux: /proc; empty elsewhere), not multiprocessing's tracker."""
    children = []
    for task in Path(f"/proc/{pid}/task").glob("*"):  # each thread's own children (the pool starts from any)
        try:
            children += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            pass
    workers = []
    for child in children:
        try:
            if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                workers.append(child)
        except OSError:
            pass  # gone already
    return workers


async def test_recalls_in_worker_processes_answer_as_the_serving_process_and_survive_a_killed_worker(
    tmp_path: Path,
) -> None:
    """`--workers 2`: keyword recalls run in worker processes with their own index connections; the answers
    are the serving process's own (`--workers 0`, same store), what a client remembers is found by the next
    recall, and a worker killed mid-service costs no call an error."""
    notes = [("Boiler service", "The boiler is serviced by Rossi every May."),
             ("Bike lock", "The bike lock code is kept in the kitchen drawer."),
             ("회의 일정", "주간 회의는 화요일 오전 10시에 열린다."),
             ("Cena familiar", "La cena del domingo es en casa de la abuela.")]  # fmt: skip
    for name in ("here", "store"):  # two stores alike: a recall counts heat, which the next recall ranks by
        for i, (title, body) in enumerate(notes):
            write_file(tmp_path / name / "memories" / f"m{i}.md", hand_memory(f"m{i}", title, body))
    store = tmp_path / "store"
    queries = ["boiler May", "kitchen drawer code", "회의", "cena domingo", "Rossi bike"]

    async def answers(root: Path, server_args: tuple[str, ...]) -> tuple[list, str]:
        with http_server(root, *server_args) as server:
            async with http_tools(server) as t:
                got = []
                for q in queries:
                    found = (await t.recall(q, mode="bm25"))["results"]
                    got.append([(r["id"], r["score"], r["line"]) for r in found])
            return got, "".join(server.stderr_lines)

    here, _ = await answers(tmp_path / "here", ("--workers", "0"))
    assert all(here), here
    in_workers, said = await answers(store, ("--workers", "2"))
    assert "2 worker processes" in said
    assert in_workers == here

    with http_server(store, "--workers", "2") as server:
        async with http_tools(server) as t:
            assert [r["id"] for r in (await t.recall("boiler", mode="bm25"))["results"]] == ["m0"]
            workers = _workers(server.process.pid)
            if not workers:
                pytest.skip("no /proc here to find the worker processes")
            made = await t.remember("Garden tap", "The garden tap leaks in winter.")
            assert [r["id"] for r in (await t.recall("garden tap leaks"))["results"]] == [made["id"]]
            for pid in workers:
                os.kill(pid, signal.SIGKILL)
            for _ in range(3):  # the call that finds the pool broken, then the restarted pool
                assert [r["id"] for r in (await t.recall("boiler", mode="bm25"))["results"]] == ["m0"]
            assert set(_workers(server.process.pid)).isdisjoint(workers)
        pids = _workers(server.process.pid)
    # stopping the server stops its workers
    server.process.wait(timeout=15)
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
