"""Errors a person can act on (issue 24 §2), through the real CLI and the real stdio server."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import mcp
import pytest

from .helpers import REPO, Tools, a_written_conflict, server_env, stdio_tools
from .reliability_support import as_unprivileged, unprivileged_works

pytestmark = pytest.mark.anyio


def cli(
    store: Path, *args: str, prefix: list[str] | None = None, store_flag: bool = True
) -> subprocess.CompletedProcess:
    home = next(p for p in store.parents if p.is_dir())  # the store's parent may be a file
    argv = [*(prefix or [sys.executable]), "-m", "memory_mcp", *(["--store", str(store)] if store_flag else []), *args]
    return subprocess.run(
        argv,
        env=server_env(store) | {"PYTHONPATH": str(REPO), "HOME": str(home)},
        cwd=str(home),
        capture_output=True,
        text=True,
        timeout=60,
    )


def one_clean_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    return done.stderr


@pytest.fixture
def unprivileged(tmp_path: Path):
    problem = unprivileged_works(tmp_path / "probe")
    if problem:
        pytest.skip(problem)
    yield
    for p in [tmp_path, *tmp_path.rglob("*")]:
        if p.is_dir() and not p.is_symlink():
            os.chmod(p, 0o755)


# ---------------------------------------------------------------- store paths


async def test_a_store_path_that_is_a_file_is_one_clear_line_on_the_cli_and_over_mcp(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("not a store\n", encoding="utf-8")
    for store in (afile, afile / "sub"):
        for args in (["remember", "t", "b"], ["recall", "x"], ["status"], ["reindex"], ["read", "x"], ["export"],
                     ["context"]):  # fmt: skip
            line = one_clean_line(cli(store, *args))
            assert str(afile) in line and "is a file" in line, (args, line)
            assert "no memories/ folder" not in line, line
    assert afile.read_text(encoding="utf-8") == "not a store\n"
    params = mcp.StdioServerParameters(
        command=sys.executable,
        args=["-m", "memory_mcp", "--store", str(afile / "sub")],
        env=server_env(afile) | {"HOME": str(tmp_path)},
        cwd=str(tmp_path),
    )
    async with mcp.Client(params) as client:
        t = Tools(client)
        for tool, args in (("memory_remember", {"title": "t", "body": "b"}), ("memory_recall", {"query": "x"})):
            message = await t.err(tool, **args)
            assert str(afile) in message and "is a file" in message, message


async def test_a_store_that_cannot_be_created_names_the_path_and_the_reason(tmp_path: Path, unprivileged) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    os.chmod(locked, 0o555)
    store = locked / "store"
    line = one_clean_line(cli(store, "remember", "t", "b", prefix=as_unprivileged([])))
    assert str(store) in line and "Permission denied" in line, line
    params = mcp.StdioServerParameters(
        command=sys.executable,
        args=as_unprivileged(["-m", "memory_mcp", "--store", str(store)])[1:],
        env=server_env(store) | {"PYTHONPATH": str(REPO)},
        cwd=str(tmp_path),
    )
    async with mcp.Client(params) as client:
        r = await client.call_tool("memory_remember", {"title": "t", "body": "b"})
        text = " ".join(getattr(c, "text", "") for c in r.content)
        assert r.is_error and str(store) in text and "Permission denied" in text, text
    assert not store.exists()


async def test_reindex_of_a_read_only_store_says_the_index_was_not_saved(tmp_path: Path, unprivileged) -> None:
    store = tmp_path / "ro"
    async with stdio_tools(store) as t:
        await t.remember("Read-only fact", "The word kestrelro is stored.")
    for p in [store, *store.rglob("*")]:
        os.chmod(p, 0o555 if p.is_dir() else 0o444)
    done = cli(store, "reindex", prefix=as_unprivileged([]))
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "reindexed" not in done.stdout and "NOT saved" in done.stdout and "transient" in done.stdout, done.stdout
    assert "Permission denied" in done.stdout and str(store / ".index") in done.stdout, done.stdout
    recalled = cli(store, "recall", "kestrelro", prefix=as_unprivileged([]))
    assert recalled.returncode == 0 and "Read-only fact" in recalled.stdout, recalled.stderr
    for out in (done.stdout + done.stderr, recalled.stdout + recalled.stderr):
        assert "sqlite3" not in out and "-sound" not in out, out  # no internal file names


# ---------------------------------------------------------------- commands


def test_context_with_no_store_yet_is_a_short_context_and_exit_0(tmp_path: Path) -> None:
    store = tmp_path / "fresh-machine"
    done = cli(store, "context")
    assert done.returncode == 0, done.stderr
    assert "No memories yet" in done.stdout and len(done.stdout.encode()) < 400, done.stdout
    assert not store.exists(), "reading the context created a store"


async def test_read_accepts_the_path_line_citation_recall_prints(store: Path) -> None:
    body = "\n\n".join(f"Paragraph {n} about the heron colony." for n in range(1, 8))
    async with stdio_tools(store) as t:
        made = await t.remember("Heron colony notes", body)
        hit = (await t.recall("heron colony"))["results"][0]
        citation = f"{hit['path']}:{hit['line']}"
        got = await t.read(path=citation)
        assert (got["id"], got["from_line"]) == (made["id"], hit["line"])
        # the line of paragraph 2 as the file has it (the frontmatter's length is the file's business)
        lines = (store / made["path"]).read_text(encoding="utf-8").splitlines()
        line = next(n for n, text in enumerate(lines, 1) if text.startswith("Paragraph 2"))
        later = await t.read(path=f"{made['path']}:{line}")
        assert later["from_line"] == line and later["text"].startswith("Paragraph 2"), later["text"]
    done = cli(store, "read", f"{made['path']}:{line}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith(f"# {made['path']} (lines {line}-") and "Paragraph 2" in done.stdout


async def test_resolve_conflict_with_pair_hash_alone(store: Path) -> None:
    async with stdio_tools(store) as t:
        _, b = await a_written_conflict(t)  # issue 42: only a near-certain pair is written (TABS / SPACES is listed)
        pair = b["conflicts"][0]["pair_hash"]
        done = await t.ok("memory_update", op="resolve_conflict", pair_hash=pair, resolution="keep_both")
        assert done["id"] == b["id"] and "resolved" in done["message"]
        assert (await t.status())["unresolved_conflicts_total"] == 0
        assert "id" in await t.err("memory_update", op="edit", title="no id")
        assert "pair_hash" in await t.err("memory_update", op="resolve_conflict", pair_hash="f" * 16,
                                          resolution="keep_both")  # fmt: skip


async def test_purge_mentions_git_history_only_in_a_git_repository(tmp_path: Path) -> None:
    async def purge_message(store: Path) -> str:
        async with stdio_tools(store) as t:
            made = await t.remember("Short-lived", f"Purged from {store.name}.")
            await t.ok("memory_forget", id=made["id"], mode="archive")
            return (await t.ok("memory_forget", id=made["id"], mode="purge", confirm=True))["message"]

    plain = tmp_path / "plain"
    assert "git" not in await purge_message(plain)
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=60)
    assert "git history" in await purge_message(repo / "store")


def test_cli_input_errors_exit_2(store: Path) -> None:
    assert cli(store, "remember", "Something", "to find").returncode == 0
    for query in ("", "   "):
        line = one_clean_line(cli(store, "recall", query))
        assert "query" in line, line
    for argv in (["--store", "", "status"], ["status", "--store", ""], ["--store", "", "remember", "t", "b"]):
        done = cli(store, *argv, store_flag=False)
        assert done.returncode == 2 and "--store" in done.stderr and "empty" in done.stderr, done.stderr
    assert not (store.parent / "memories").exists(), "an empty --store was read as the current folder"


def _on_a_terminal(store: Path, args: list[str], wait_for: str) -> tuple[str, int, subprocess.Popen]:
    """`memory-mcp ARGS` with a terminal as standard input; returns its first stderr line, the terminal's
    master side and the process (stdout and stderr are pipes)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "memory_mcp", "--store", str(store), *args],
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(store) | {"PYTHONPATH": str(REPO)},
        cwd=str(store.parent),
    )
    os.close(slave)
    deadline, seen = time.monotonic() + 60, b""
    while wait_for.encode() not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stderr], [], [], 1)
        if ready:
            chunk = os.read(proc.stderr.fileno(), 4096)
            if not chunk:
                break
            seen += chunk
    return seen.decode("utf-8", "replace"), master, proc


def test_remember_without_a_body_on_a_terminal_says_it_reads_standard_input(store: Path) -> None:
    said, master, proc = _on_a_terminal(store, ["remember", "Typed at a terminal"], "standard input")
    try:
        assert "reading the body from standard input" in said, said
        os.write(master, b"The body typed by hand.\n\x04")  # Ctrl-D ends it
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0 and b"created" in out, err
    files = list((store / "memories").glob("*.md"))
    assert len(files) == 1 and "The body typed by hand." in files[0].read_text(encoding="utf-8")


def test_plain_memory_mcp_on_a_terminal_says_what_it_is_and_still_serves_stdio(store: Path) -> None:
    said, master, proc = _on_a_terminal(store, [], "--help")
    try:
        lines = [line for line in said.splitlines() if line.strip()]
        assert len(lines) == 1 and "MCP server on stdio" in lines[0] and "memory-mcp --help" in lines[0], said
        request = (
            '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
            '"capabilities":{},"clientInfo":{"name":"tty","version":"0"}}}\n'
        )
        os.write(master, request.encode())
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready and b'"serverInfo"' in proc.stdout.readline()
    finally:
        os.close(master)
        proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
