"""`memory-mcp sync` between real clones of a real bare remote: one test per merge rule, the usage errors,
the push race, private memories, and git-setup for a project's own repository (plain `git pull`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sync_support import (
    Machine,
    Project,
    assert_clean_canon,
    cli_env,
    machines,
    memory_text,
    replace_in,
    write,
)

ID = "01KH60JFE05BTRAVE29W5R9Y1F"
NAME = "postgres-port-r9y1f.md"
BODY = "The staging database listens on 5433.\n\nBackups run nightly.\n\nReplicas lag by a second.\n\nOwner: infra."


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Machine, Machine]:
    """Two machines sharing one memory through a bare remote (A pushed it, B pulled it)."""
    remote, (a, b) = machines(tmp_path, 2)
    write(a.memories / NAME, memory_text(ID, "Postgres port", BODY))
    first = a.sync("--init", str(remote), "--branch", "main")
    assert first["pushed"] and first["sent"]["added"] == ["Postgres port"]
    got = b.sync("--init", str(remote), "--branch", "main")
    assert got["received"]["added"] == ["Postgres port"] and not got["pushed"]
    assert b.files() == a.files()
    return a, b


def converge(*ms: Machine, clean: bool = True) -> None:
    """Sync the machines in turn until they hold one commit (at most twice round), then check the canon."""
    for _ in range(2):
        for m in ms:
            m.sync()
        if len({m.git("rev-parse", "HEAD").strip() for m in ms}) == 1:
            break
    assert len({m.git("rev-parse", "HEAD").strip() for m in ms}) == 1, "replicas did not converge on one commit"
    assert len({tuple(m.files().items()) for m in ms}) == 1
    for m in ms:
        if clean:
            assert_clean_canon(m)
        else:
            assert not any(b"<<<<<<<" in data for data in m.files().values())


def test_first_and_second_machine(tmp_path: Path) -> None:
    remote, (a, b) = machines(tmp_path, 2)
    a.cli("remember", "Deploys happen on Tuesdays", "Only Tuesday to Thursday.", "--entity", "deploy")
    out = a.sync("--init", str(remote))
    assert out["sent"]["added"] == ["Deploys happen on Tuesdays"] and out["pushed"]
    assert ".index/" in (a.root / ".gitignore").read_text()
    assert "merge=memory-mcp" in (a.root / ".gitattributes").read_text()
    assert a.git("ls-files", "--", ".index") == ""
    got = b.sync("--init", str(remote))  # a new machine with no store at all
    assert got["received"]["added"] == ["Deploys happen on Tuesdays"]
    assert b.recall_ids("Tuesdays") == a.recall_ids("Tuesdays")
    again = b.sync()
    assert again["sent"]["added"] == [] and again["received"]["added"] == [] and not again["pushed"]
    log = a.git("log", "-1", "--format=%B")
    assert "added: Deploys happen on Tuesdays" in log


def test_entities_merge_as_sets_and_a_removal_stays_removed(pair) -> None:
    a, b = pair
    replace_in(a.memories / NAME, "entities: [postgres]", "entities: [postgres, staging]")
    a.sync()
    write(b.memories / NAME, memory_text(ID, "Postgres port", BODY, entities="[db]", updated="2026-02-01T00:00:00Z"))
    b.sync()
    converge(a, b)
    text = (a.memories / NAME).read_text()
    assert "entities: [db, staging]" in text  # postgres removed on B stays removed; both additions kept


def test_updated_takes_the_later_time_and_one_sided_fields_take_that_side(pair) -> None:
    a, b = pair
    replace_in(a.memories / NAME, "type: fact", "type: decision")
    replace_in(a.memories / NAME, "updated: 2026-01-01T00:00:00Z", "updated: 2026-03-01T00:00:00Z")
    a.sync()
    replace_in(b.memories / NAME, "trust: user-stated", "trust: agent-inferred")
    replace_in(b.memories / NAME, "updated: 2026-01-01T00:00:00Z", "updated: 2026-02-01T00:00:00Z")
    out = b.sync()
    assert out["memory_merges"] == 1 and out["surfaced"] == []
    converge(a, b)
    text = (a.memories / NAME).read_text()
    assert "type: decision" in text and "trust: agent-inferred" in text
    assert "updated: 2026-03-01T00:00:00Z" in text


def test_state_changed_differently_takes_the_later_move_and_is_surfaced(pair) -> None:
    a, b = pair
    replace_in(a.memories / NAME, "state: active", "state: archived")
    a.sync()
    replace_in(b.memories / NAME, "state: active", "state: deprecated\ndeprecated_reason: wrong port")
    out = b.sync()
    assert any("state changed on both machines" in note for note in out["surfaced"])
    converge(a, b)
    assert "state: deprecated" in (a.memories / NAME).read_text()


def test_validity_days_follow_their_declared_rules(pair) -> None:
    """valid_until changed differently on both machines: the later edit's day, said; superseded_at: the later time."""
    a, b = pair
    replace_in(
        a.memories / NAME, "updated: 2026-01-01T00:00:00Z", "updated: 2026-03-01T00:00:00Z\nvalid_until: 2026-12-31"
    )
    replace_in(a.memories / NAME, "superseded_by: []", "superseded_by: []\nsuperseded_at: 2026-02-01T00:00:00Z")
    a.sync()
    replace_in(
        b.memories / NAME, "updated: 2026-01-01T00:00:00Z", "updated: 2026-02-01T00:00:00Z\nvalid_until: 2027-06-30"
    )
    replace_in(b.memories / NAME, "superseded_by: []", "superseded_by: []\nsuperseded_at: 2026-02-05T00:00:00Z")
    out = b.sync()
    assert any("'valid_until' changed on both machines" in note for note in out["surfaced"])
    converge(a, b)
    text = (a.memories / NAME).read_text()
    assert "valid_until: 2026-12-31" in text and "superseded_at: 2026-02-05T00:00:00Z" in text


def test_body_edits_on_different_lines_merge_cleanly(pair) -> None:
    a, b = pair
    replace_in(a.memories / NAME, "listens on 5433", "listens on 5434")
    a.sync()
    replace_in(b.memories / NAME, "Owner: infra.", "Owner: platform.")
    out = b.sync()
    assert out["surfaced"] == [] and out["memory_merges"] == 1
    converge(a, b)
    text = (a.memories / NAME).read_text()
    assert "5434" in text and "Owner: platform." in text
    assert len(a.files()) == 1


def test_body_clash_keeps_the_later_edit_and_the_other_as_an_open_conflict(pair) -> None:
    a, b = pair
    replace_in(a.memories / NAME, "listens on 5433", "listens on 6000")
    replace_in(a.memories / NAME, "updated: 2026-01-01T00:00:00Z", "updated: 2026-05-01T00:00:00Z")
    a.sync()
    replace_in(b.memories / NAME, "listens on 5433", "listens on 7000")
    replace_in(b.memories / NAME, "updated: 2026-01-01T00:00:00Z", "updated: 2026-04-01T00:00:00Z")
    out = b.sync()
    assert any("edited on two machines" in note for note in out["surfaced"])
    converge(a, b)
    files = a.files()
    assert len(files) == 2
    assert "6000" in (a.memories / NAME).read_text()  # the later edit (A's) keeps the file
    (copy_name,) = [n for n in files if n != NAME]
    copy = files[copy_name].decode()
    assert "7000" in copy and f"id: {ID}" not in copy
    assert f"concurrent edit of {ID} on another machine" in copy
    # its title says it is the other machine's version (issue 42: "Staging DB host <> Staging DB host" said nothing)
    title = (a.memories / NAME).read_text().split("\n# ", 1)[1].split("\n", 1)[0]
    assert f"\n# {title} (the other machine's version)\n" in copy
    assert "status: open" in copy and "note: edited on two machines" in copy
    status = a.status()
    assert status["unresolved_conflicts_total"] == 1
    pair_ids = {status["unresolved_conflicts"][0]["a_id"], status["unresolved_conflicts"][0]["b_id"]}
    assert ID in pair_ids
    # a reindex does not auto-close it: it is a person's decision, not the gate's
    a.cli("reindex")
    assert a.status()["unresolved_conflicts_total"] == 1


def test_modify_delete_keeps_the_edit_and_says_so(pair) -> None:
    a, b = pair
    (a.memories / NAME).unlink()
    a.sync()
    replace_in(b.memories / NAME, "Owner: infra.", "Owner: data team.")
    out = b.sync()
    assert any("deleted on the other side; the edit was kept" in note for note in out["surfaced"])
    converge(a, b)
    assert "Owner: data team." in (a.memories / NAME).read_text()


def test_add_add_same_file_name_different_ids_keeps_both(pair) -> None:
    a, b = pair
    write(a.memories / "notes.md", memory_text("01KH60JFE05BTRAVE29W5RAAAA", "Redis TTL", "Sessions last 24h."))
    a.sync()
    write(b.memories / "notes.md", memory_text("01KH60JFE05BTRAVE29W5RBBBB", "Kafka retention", "Seven days."))
    b.sync()
    converge(a, b)
    assert len(a.files()) == 3
    assert a.recall_ids("Redis TTL sessions") and a.recall_ids("Kafka retention")


def test_same_statement_on_two_machines_is_served_once_and_reported(pair) -> None:
    a, b = pair
    a.cli("remember", "CI runs on CircleCI", "All pipelines run on CircleCI.")
    a.sync()
    b.cli("remember", "CI runs on CircleCI", "All pipelines run on CircleCI.")
    b.sync()
    converge(a, b)
    assert len(a.files()) == 3
    assert len(a.recall_ids("CircleCI pipelines")) == 1
    dups = a.status()["duplicates"]
    assert len(dups) == 1 and dups[0]["title"] == "CI runs on CircleCI"


def test_dictionary_takes_the_union_of_aliases(pair) -> None:
    a, b = pair
    write(a.root / "dictionary.md", "# Entities\n\n- postgres: the database (aka: pg)\n")
    a.sync()
    b.sync()
    replace_in(a.root / "dictionary.md", "(aka: pg)", "(aka: pg, postgresql)")
    a.sync()
    replace_in(b.root / "dictionary.md", "(aka: pg)", "(aka: pg, psql)")
    b.sync()
    converge(a, b)
    text = (a.root / "dictionary.md").read_text()
    assert "- postgres: the database (aka: pg, psql, postgresql)" in text or "(aka: pg, postgresql, psql)" in text
    assert "<<<" not in text


def test_a_failing_merge_never_leaves_markers_sync_keeps_both(pair) -> None:
    a, b = pair
    # ours is not a memory any more (broken YAML), pushed with plain git (sync would keep it here): the
    # memory-aware merge refuses, sync keeps both versions
    replace_in(a.memories / NAME, "type: fact", "type: [fact")
    a.git("-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qam", "by hand")
    a.git("push", "-q", "origin", "HEAD:main")
    replace_in(b.memories / NAME, "Owner: infra.", "Owner: ops.")
    out = b.sync()
    assert any("memory-aware merge failed" in note and "kept both versions" in note for note in out["surfaced"])
    converge(a, b, clean=False)  # A's broken file stays A's broken file (listed as unparseable), never a marker
    texts = [d.decode() for d in a.files().values()]
    assert len(texts) == 2 and any("Owner: ops." in t for t in texts) and any("type: [fact" in t for t in texts)


def test_a_file_that_cannot_be_parsed_stays_here_until_fixed_and_then_merges(pair) -> None:
    a, b = pair
    replace_in(a.memories / NAME, "type: fact", "type: [fact")
    replace_in(a.memories / NAME, "Backups run nightly.", "Backups run hourly.")
    out = a.sync()
    assert any(NAME in n and "cannot be parsed" in n for n in out["surfaced"]), out["surfaced"]
    assert "[fact" not in a.git("show", f"origin/main:memories/{NAME}")
    replace_in(b.memories / NAME, "Owner: infra.", "Owner: ops.")
    b.sync()
    refused = a.cli("sync", code=1)  # B's edit cannot be merged into a file A holds back: said, nothing lost
    assert NAME in refused.stderr and "holds back" in refused.stderr
    assert "[fact" in (a.memories / NAME).read_text() and "hourly" in (a.memories / NAME).read_text()
    replace_in(a.memories / NAME, "type: [fact", "type: fact")
    converge(a, b)
    text = (b.memories / NAME).read_text()
    assert "Owner: ops." in text and "Backups run hourly." in text


def test_private_memories_never_travel_and_a_hand_commit_blocks_the_push(pair) -> None:
    a, b = pair
    write(a.memories / "private.md", memory_text("01KH60JFE05BTRAVE29W5RPRIV", "My token place", "x", sync="local"))
    out = a.sync()
    assert out["sent"]["added"] == []
    b.sync()
    assert "private.md" not in b.files()
    a.git("add", "memories/private.md")
    a.git("-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "by hand", "--no-verify")
    refused = a.sync(code=2)
    assert "private.md" in refused["stderr"] and "private (`sync: local`)" in refused["stderr"]


def test_usage_errors_exit_2_with_a_fix(tmp_path: Path) -> None:
    m = Machine(tmp_path / "store", tmp_path)
    m.cli("remember", "x", "y")
    done = m.cli("sync", code=2)
    assert "not a git work tree" in done.stderr and "--init" in done.stderr
    subprocess.run(["git", "init", "-q", str(m.root)], check=True)
    done = m.cli("sync", code=2)
    assert "no remote 'origin'" in done.stderr and "git remote add" in done.stderr
    env = cli_env(tmp_path) | {"PATH": str(Path(sys.executable).parent)}
    done = m.cli("sync", code=2, env=env)
    assert "no git binary" in done.stderr


def test_a_git_failure_exits_1_and_leaves_the_canon_as_it_was(pair, tmp_path: Path) -> None:
    a, _ = pair
    a.git("remote", "set-url", "origin", str(tmp_path / "nowhere.git"))
    replace_in(a.memories / NAME, "Owner: infra.", "Owner: sre.")
    before = a.files()
    done = a.cli("sync", code=1)
    assert "git fetch origin failed" in done.stderr
    assert a.files() == before
    assert a.git("status", "--porcelain", "--", "memories") == ""  # committed locally, waiting for the remote


def test_a_lost_push_race_fetches_merges_and_retries(pair, tmp_path: Path) -> None:
    a, b = pair
    # B pushes in between A's fetch and A's push: A's pre-push hook makes B sync once
    hook = a.root / ".git" / "hooks" / "pre-push"
    flag = tmp_path / "raced"
    hook.write_text(
        "#!/bin/sh\n"
        f'[ -e "{flag}" ] && exit 0\n'
        f'touch "{flag}"\n'
        f"env -u GIT_DIR -u GIT_WORK_TREE -u GIT_INDEX_FILE HOME={b.home} PYTHONPATH={Path(__file__).parent.parent} "
        f"{sys.executable} -m memory_mcp --store {b.root} sync >/dev/null\n"
    )
    hook.chmod(0o755)
    write(b.memories / "b.md", memory_text("01KH60JFE05BTRAVE29W5RBRAC", "From B", "raced in"))
    write(a.memories / "a.md", memory_text("01KH60JFE05BTRAVE29W5RARAC", "From A", "first try"))
    out = a.sync()
    assert out["pushed"] and out["push_attempts"] == 2
    assert "From B" in out["received"]["added"]
    hook.unlink()
    converge(a, b)


@pytest.mark.anyio
async def test_through_the_stdio_server_a_clash_reaches_status_and_the_context(pair) -> None:
    import mcp

    from tests.helpers import server_env

    a, b = pair
    for m, port, when in ((a, "6000", "2026-05-01"), (b, "7000", "2026-04-01")):
        replace_in(m.memories / NAME, "listens on 5433", f"listens on {port}")
        replace_in(m.memories / NAME, "updated: 2026-01-01T00:00:00Z", f"updated: {when}T00:00:00Z")
    a.sync()
    b.sync()
    params = mcp.StdioServerParameters(command=sys.executable, args=["-m", "memory_mcp"], env=server_env(b.root))
    async with mcp.Client(params) as client:
        status = (await client.call_tool("memory_status", {})).structured_content
        assert status["unresolved_conflicts_total"] == 1
        read = (await client.call_tool("memory_read", {"id": ID})).structured_content
        assert any(c["status"] == "open" for c in read["conflicts"])
        context = await client.read_resource("memory://context")
        assert "conflict" in context.contents[0].text.lower()


def test_git_setup_makes_a_plain_git_pull_merge_memories(tmp_path: Path) -> None:
    project = Project(tmp_path)
    git = project.git
    one = project.clone("one")
    write(one / ".memory" / "memories" / NAME, memory_text(ID, "Postgres port", BODY))
    first = project.git_setup(one)
    assert first.returncode == 0 and ".gitattributes" in first.stdout
    assert ".memory/memories/**/*.md merge=memory-mcp" in (one / ".gitattributes").read_text()
    again = project.git_setup(one)
    assert "already set up" in again.stdout
    git(one, "add", "-A")
    git(one, "commit", "-qm", "team memory")
    git(one, "push", "-q", "origin", "HEAD:main")
    two = project.clone("two")
    assert project.git_setup(two).returncode == 0
    replace_in(one / ".memory" / "memories" / NAME, "listens on 5433", "listens on 5434")
    replace_in(one / ".memory" / "memories" / NAME, "updated: 2026-01-01T00:00:00Z", "updated: 2026-02-01T00:00:00Z")
    git(one, "commit", "-qam", "port")
    git(one, "push", "-q", "origin", "HEAD:main")
    replace_in(two / ".memory" / "memories" / NAME, "Owner: infra.", "Owner: platform.")
    replace_in(two / ".memory" / "memories" / NAME, "updated: 2026-01-01T00:00:00Z", "updated: 2026-03-01T00:00:00Z")
    git(two, "commit", "-qam", "owner")
    git(two, "pull", "-q", "--no-rebase", "origin", "main")  # plain git: the driver merges the memory
    text = (two / ".memory" / "memories" / NAME).read_text()
    assert "5434" in text and "Owner: platform." in text and "updated: 2026-03-01T00:00:00Z" in text
    assert "<<<<<<<" not in text
    assert os.listdir(two / ".memory" / "memories") == [NAME]


def test_a_plain_git_pull_merges_many_files_through_the_helper_as_a_process_per_file_does(tmp_path: Path) -> None:
    """git starts the driver once per file changed on both sides: the first stays as a warm helper for the
    rest. The pull's result (clean merges, a body clash's copy) is byte for byte what the older command, a
    full driver process per file, gives."""
    project = Project(tmp_path)
    git = project.git

    def setup(clone: Path) -> None:
        done = project.git_setup(clone)
        assert done.returncode == 0, done.stderr

    ids = [f"01KH60JFE05BTRAVE29W5R9Y{n:02d}" for n in range(6)]
    one = project.clone("one")
    for n, mem_id in enumerate(ids):
        write(one / ".memory" / "memories" / f"m{n}.md", memory_text(mem_id, f"Postgres fact {n}", BODY))
    setup(one)
    git(one, "add", "-A")
    git(one, "commit", "-qm", "team memory")
    git(one, "push", "-q", "origin", "HEAD:main")
    two = project.clone("two")
    setup(two)
    for n in range(6):
        replace_in(one / ".memory" / "memories" / f"m{n}.md", "listens on 5433", "listens on 5434")
        replace_in(
            one / ".memory" / "memories" / f"m{n}.md",
            "2026-01-01T00:00:00Z\nsupersedes",
            "2026-02-01T00:00:00Z\nsupersedes",
        )
        mine = "Owner: platform." if n < 5 else "listens on 6000"  # the last one clashes with one's line
        replace_in(two / ".memory" / "memories" / f"m{n}.md", "Owner: infra." if n < 5 else "listens on 5433", mine)
        replace_in(
            two / ".memory" / "memories" / f"m{n}.md",
            "2026-01-01T00:00:00Z\nsupersedes",
            "2026-03-01T00:00:00Z\nsupersedes",
        )
    git(one, "commit", "-qam", "port")
    git(one, "push", "-q", "origin", "HEAD:main")
    git(two, "commit", "-qam", "owner")
    older = tmp_path / "older"
    subprocess.run(["cp", "-a", str(two), str(older)], check=True)
    old_command = f"{sys.executable} -P -m memory_mcp merge-driver %O %A %B %P"
    git(older, "config", "merge.memory-mcp.driver", old_command)

    git(two, "pull", "-q", "--no-rebase", "origin", "main")
    git(older, "pull", "-q", "--no-rebase", "origin", "main")
    folder = two / ".memory" / "memories"
    names = sorted(os.listdir(folder))
    assert len(names) == 7  # six memories and the clash's copy
    assert names == sorted(os.listdir(older / ".memory" / "memories"))
    for name in names:
        text = (folder / name).read_text(encoding="utf-8")
        assert "<<<<<<<" not in text
        assert text == (older / ".memory" / "memories" / name).read_text(encoding="utf-8")
    for n in range(5):
        text = (folder / f"m{n}.md").read_text(encoding="utf-8")
        assert "5434" in text and "Owner: platform." in text and "updated: 2026-03-01T00:00:00Z" in text
    (copy,) = set(names) - {f"m{n}.md" for n in range(6)}
    assert f"concurrent edit of {ids[5]}" in (folder / copy).read_text(encoding="utf-8")
