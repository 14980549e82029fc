"""The command line as a person runs it: the installed `memory-mcp` script in a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memory_mcp.edges import cli

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


# ---------------------------------------------------------------- habits of people at a terminal


def _run_bare(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*_command(), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=60)


def test_global_options_work_before_and_after_the_command(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    env = server_env(a)
    del env["MEMORY_MCP_ROOT"]
    made = _run_bare(tmp_path, env, "remember", "Kept in store b", "A memory for store b.", "--store", str(b), "--json")
    assert made.returncode == 0, made.stderr
    assert (b / json.loads(made.stdout)["path"]).is_file() and not a.exists()
    # after the command, and the one after wins when both are given
    after = _run_bare(tmp_path, env, "--store", str(a), "status", "--store", str(b), "--json")
    assert after.returncode == 0, after.stderr
    assert json.loads(after.stdout)["root"] == str(b)
    assert _run_bare(tmp_path, env, "reindex", "--store", str(b)).returncode == 0
    # --set adds up across both places; --store is the top layer for scopes.global_root and says so
    shown = _run_bare(
        tmp_path,
        env,
        "--set",
        "recall.default_limit=7",
        "--store",
        str(a),
        "config",
        "--set",
        "ranking.freshness_max=0.3",
        "--store",
        str(b),
        "--json",
    )
    assert shown.returncode == 0, shown.stderr
    rows = {r["key"]: r for r in json.loads(shown.stdout)["settings"]}
    assert rows["recall.default_limit"]["value"] == 7 and rows["ranking.freshness_max"]["value"] == 0.3
    assert rows["scopes.global_root"] == {**rows["scopes.global_root"], "value": str(b), "origin": "--store"}


def test_config_shows_the_store_in_effect_and_where_it_came_from(tmp_path: Path) -> None:
    env = server_env(tmp_path / "from-env")  # MEMORY_MCP_ROOT is set
    text = _run_bare(tmp_path, env, "config").stdout
    line = next(x for x in text.splitlines() if x.startswith("scopes.global_root"))
    assert str(tmp_path / "from-env") in line and "env MEMORY_MCP_ROOT" in line, line
    line = next(
        x for x in _run_bare(tmp_path, env, "--store", "rel", "config").stdout.splitlines() if "global_root" in x
    )
    assert f'"{tmp_path / "rel"}"' in line and line.endswith("# --store"), line


READ_COMMANDS = [["status"], ["recall", "anything"], ["read", "01ABC"], ["reindex"], ["export"], ["ui", "--port", "0"]]


@pytest.mark.parametrize("args", READ_COMMANDS, ids=lambda a: a[0])
def test_reading_a_missing_store_fails_and_creates_nothing(tmp_path: Path, args: list[str]) -> None:
    typo = tmp_path / "some" / "typo"
    done = _run_bare(tmp_path, server_env(tmp_path / "unused"), "--store", str(typo), *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert f"no memory store at {typo}" in done.stderr and done.stdout == ""
    assert not typo.exists() and not (tmp_path / "some").exists()


def test_only_a_write_creates_a_store_and_says_so_once(store: Path) -> None:
    first = run(store, "remember", "First memory", "The first one creates the store.")
    assert first.returncode == 0, first.stderr
    assert first.stderr.count(f"created a new store at {store}") == 1
    assert (store / "memories").is_dir()
    second = run(store, "remember", "Second memory", "The store is there now.")
    assert second.returncode == 0 and second.stderr == ""
    assert run(store, "status").returncode == 0


def test_a_read_in_a_new_project_uses_the_account_store_and_creates_no_project_store(tmp_path: Path) -> None:
    account, project = tmp_path / "account", tmp_path / "atlas"
    project.mkdir()
    assert (
        run(account, "remember", "Account memory about zeppelins", "Zeppelins are in the account store.").returncode
        == 0
    )
    found = run(account, "--project-root", str(project), "recall", "zeppelins", "--json")
    assert found.returncode == 0, found.stderr
    assert [r["scope"] for r in json.loads(found.stdout)["results"]] == ["global"]
    assert not (project / ".memory").exists()
    # status reads the home scope, which is the project's: missing, so it says which
    status = run(account, "--project-root", str(project), "status")
    assert status.returncode == 2 and str(project / ".memory") in status.stderr
    assert not (project / ".memory").exists()


def test_help_lists_choices_and_defaults(store: Path) -> None:
    def words(*args: str) -> str:  # argparse wraps to the terminal width
        return " ".join(run(store, *args).stdout.split())

    remember = words("remember", "--help")
    assert "--type {fact,preference,decision,episode,reference,knowledge,handoff}" in remember
    assert "--trust {user-stated,agent-inferred,imported,confirmed}" in remember
    assert "(default: fact)" in remember and "(default: user-stated)" in remember
    assert "local = the bound project's store" in remember and "Default: local when a project is bound" in remember
    recall = words("recall", "--help")
    assert "--state {active,archived,deprecated}" in recall and "(default: 5)" in recall
    top = words("--help")
    assert "before or after the command" in top


def test_human_output_has_no_python_reprs_and_counts_in_words(store: Path) -> None:
    assert run(store, "remember", "Only memory", "The one memory.", "--entity", "solo").returncode == 0
    one = run(store, "status")
    assert one.returncode == 0, one.stderr
    assert ": 1 memory\n" in one.stdout and "1 memories" not in one.stdout
    assert "{" not in one.stdout and "'" not in one.stdout.split("\n", 1)[1], one.stdout
    assert "state:  1 active" in one.stdout and "unparseable files: none" in one.stdout
    # a neighbour line names shared entities as words, not a Python list; since issue 25 a restatement is a
    # neighbour (the same attribute, nothing changed), not a conflict
    near = run(store, "remember", "Only memory again", "The one memory, restated.", "--entity", "solo")
    assert "shared entities: solo" in near.stdout and "[" not in near.stdout, near.stdout
    two = run(store, "status").stdout
    assert ": 2 memories\n" in two and "unresolved conflicts: 1" not in two
    assert "reindexed 2 memories from 2 files" in run(store, "reindex").stdout
    exported = run(store, "export", "--to", str(store.parent), "--json")
    assert json.loads(exported.stdout)["memories"] == 2


def test_reindex_progress_shows_on_a_terminal_and_is_quiet_otherwise(store: Path) -> None:
    memories = store / "memories"
    memories.mkdir(parents=True)
    for n in range(300):
        (memories / f"m{n}.md").write_text(
            f"---\nid: PROGRESS{n:04d}\n---\n# Memory {n}\n\nBody {n}.\n", encoding="utf-8"
        )
    quiet = run(store, "reindex")
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr  # stderr is a pipe: no bar
    assert "300 memories" in quiet.stdout

    import fcntl  # stderr on a pseudo-terminal, as when a person runs it
    import pty
    import struct
    import termios

    controller, terminal = pty.openpty()
    # a real terminal has a size; tqdm draws nothing on a 0-column one
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    try:
        done = subprocess.run(
            [*_command(), "--store", str(store), "reindex"],
            stdout=subprocess.PIPE,
            stderr=terminal,
            env={**server_env(store), "TERM": "xterm"},
            cwd=store.parent,
            timeout=60,
        )
        os.close(terminal)
        terminal = -1
        seen = b""
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(controller)
        if terminal != -1:
            os.close(terminal)
    assert done.returncode == 0
    text = seen.decode("utf-8", "replace")
    assert "global: indexing" in text and "/300 [" in text, text[-500:]
    assert b"300 memories" in done.stdout  # the answer still goes to stdout
