"""The command line as a person runs it: the installed `memory-mcp` script in a subprocess."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memory_mcp import cli

from .helpers import reconcile_of, server_env, settle, stdio_tools, tamper


def _command() -> list[str]:
    script = Path(sys.executable).parent / "memory-mcp"
    found = script if script.exists() else shutil.which("memory-mcp")
    return [str(found)] if found else [sys.executable, "-m", "memory_mcp"]


def run(store: Path, *args: str, stdin: str | None = None, store_flag: bool = True) -> subprocess.CompletedProcess:
    cmd = [*_command(), *(["--store", str(store)] if store_flag else []), *args]
    return subprocess.run(
        cmd, input=stdin, capture_output=True, text=True, env=server_env(store), cwd=store.parent, timeout=60
    )


def test_remember_recall_read_status_round_trip(store: Path) -> None:
    made = run(
        store,
        "remember",
        "Deploys only Tuesday to Thursday",
        "Production deploys happen Tuesday to Thursday.",
        "--type",
        "decision",
        "--entity",
        "deploy-policy",
        "--json",
    )
    assert made.returncode == 0, made.stderr
    answer = json.loads(made.stdout)
    assert answer["created"] is True and (store / answer["path"]).is_file()
    # body from standard input
    piped = run(
        store, "remember", "Freeze before holidays", "--json", stdin="No deploys in the week before a holiday.\n"
    )
    assert piped.returncode == 0, piped.stderr
    assert "week before a holiday" in (store / json.loads(piped.stdout)["path"]).read_text(encoding="utf-8")

    found = run(store, "recall", "deploys Tuesday", "--json")
    assert found.returncode == 0, found.stderr
    result = json.loads(found.stdout)
    assert result["results"][0]["id"] == answer["id"]
    assert set(reconcile_of(result)) >= {"scanned", "hashed", "reindexed", "removed", "unparseable", "rebuilt"}
    text = run(store, "recall", "deploys Tuesday")
    assert text.returncode == 0
    assert f"{answer['path']}:{result['results'][0]['line']}" in text.stdout
    assert "no results" in run(store, "recall", "zebra quantum").stdout

    read = run(store, "read", answer["path"])
    assert read.returncode == 0 and "# Deploys only Tuesday to Thursday" in read.stdout
    by_id = run(store, "read", answer["id"], "--json")
    assert json.loads(by_id.stdout)["path"] == answer["path"]

    status = run(store, "status")
    assert status.returncode == 0 and "2 memories" in status.stdout
    as_json = json.loads(run(store, "status", "--json").stdout)
    assert as_json["total"] == 2 and as_json["by_type"] == {"decision": 1, "fact": 1}

    # MEMORY_MCP_ROOT is the default store
    env_default = run(store, "status", "--json", store_flag=False)
    assert env_default.returncode == 0 and json.loads(env_default.stdout)["total"] == 2


def test_reindex_verify_exit_codes(store: Path) -> None:
    for n in range(3):
        assert run(store, "remember", f"Verify CLI {n}", f"Memory {n} for the CLI verify.").returncode == 0
    settle()
    clean = run(store, "reindex", "--verify")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "0 mismatch" in clean.stdout
    tamper(store, "UPDATE memories SET title = 'forged' WHERE title = 'Verify CLI 1'")
    caught = run(store, "reindex", "--verify", "--json")
    assert caught.returncode == 1, caught.stdout + caught.stderr
    mismatches = json.loads(caught.stdout)["mismatches"]
    assert mismatches and all("verify-cli-1" in m["path"] for m in mismatches)
    # that run rebuilt the index: verifying again is clean
    assert run(store, "reindex", "--verify").returncode == 0
    tamper(store, "UPDATE files SET sha256 = 'bad' WHERE path LIKE '%verify-cli-2%'")
    caught = run(store, "reindex", "--verify")
    assert caught.returncode == 1 and "sha256" in caught.stdout
    assert run(store, "reindex").returncode == 0


# Every usage or input error exits 2 with the reason on stderr and nothing on stdout. Three run as
# real subprocesses; the rest call the same entry point in process (a process start costs ~0.5 s).
USAGE_ERRORS = [
    (["frobnicate"], "invalid choice"),
    (["recall"], "query"),
    (["recall", "x", "--limit", "0"], "limit"),
    (["recall", "x", "--limit", "notanumber"], "--limit"),
    (["recall", "x", "--state", "gone"], "state"),
    (["remember", "", "empty title"], "title"),
    (["remember", "Bad date", "body", "--review-after", "someday"], "review_after"),
    (["read", "../outside.md"], "leaves the store"),
    (["read", ".index/index.sqlite3"], "not a memory file"),
    (["read", "no-such-id"], "no memory"),
]


@pytest.mark.parametrize("args, says", USAGE_ERRORS[:3])
def test_usage_and_input_errors_exit_2(store: Path, args: list[str], says: str) -> None:
    (store / "memories").mkdir(parents=True)  # a read of a missing store is its own error (below)
    done = run(store, *args)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert says in done.stderr, done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize("args, says", USAGE_ERRORS[3:])
def test_more_usage_and_input_errors_exit_2(
    store: Path, args: list[str], says: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(store.parent))  # no user settings file from the developer's home
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    (store / "memories").mkdir(parents=True)
    try:
        code = cli.main(["--store", str(store), *args])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 2, (code, out, err)
    assert says in err, err
    assert out == ""


@pytest.mark.anyio
async def test_cli_and_a_running_server_share_a_store(store: Path) -> None:
    async with stdio_tools(store) as t:
        made = await t.remember("Written by the server", "The server wrote this memory about lighthouses.")
        cli = run(store, "remember", "Written by the CLI", "The CLI wrote this memory about lighthouses.", "--json")
        assert cli.returncode == 0, cli.stderr
        cli_id = json.loads(cli.stdout)["id"]
        # the running server sees the CLI's file on its next call, and the CLI sees the server's
        assert set(await t.recall_ids("lighthouses")) == {made["id"], cli_id}
        found = json.loads(run(store, "recall", "lighthouses", "--json").stdout)
        assert {r["id"] for r in found["results"]} == {made["id"], cli_id}
        # a rebuild by the CLI does not confuse the server's open connection
        assert run(store, "reindex").returncode == 0
        assert set(await t.recall_ids("lighthouses")) == {made["id"], cli_id}
        await t.ok("memory_forget", id=cli_id, mode="archive")
        assert json.loads(run(store, "read", cli_id, "--json").stdout)["frontmatter"]["state"] == "archived"
