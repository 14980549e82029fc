"""One id, one memory (issue 41): a copied or hand-renamed file never hides an edit or the original, whichever
machine and whichever scan order; lifecycle decisions survive merges; `reindex --verify` only reads.

Every step is the real CLI in a subprocess, over real clones of a real bare git remote (tests/sync_support.py).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.sync_support import Machine, machines, memory_text, replace_in, write

ID = "01KH60JFE05BTRAVE29W5R9Y1F"
NAME = "postgres-port-r9y1f.md"
BODY = "The staging database listens on 5433.\n\nBackups run nightly.\n\nReplicas lag by a second.\n\nOwner: infra."


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Machine, Machine]:
    remote, (a, b) = machines(tmp_path, 2)
    write(a.memories / NAME, memory_text(ID, "Postgres port", BODY))
    a.sync("--init", str(remote), "--branch", "main")
    b.sync("--init", str(remote), "--branch", "main")
    return a, b


def ids_by_file(m: Machine) -> dict[str, str]:
    """file name -> the id its frontmatter names (read by a regex: a broken file still has one)."""
    out = {}
    for name, data in m.files().items():
        found = re.search(r"^id:\s*(\S+)", data.decode("utf-8"), re.M)
        out[name] = found.group(1) if found else ""
    return out


def assert_one_file_per_id(m: Machine) -> None:
    ids = list(ids_by_file(m).values())
    assert len(ids) == len(set(ids)), f"two files with one id: {ids_by_file(m)}"


def read_json(m: Machine, target: str) -> dict:
    return json.loads(m.cli("read", target, "--json").stdout)


def settle(a: Machine, b: Machine) -> None:
    for _ in range(2):
        a.sync()
        b.sync()
    assert a.git("rev-parse", "HEAD") == b.git("rev-parse", "HEAD")
    assert a.files() == b.files()


# ---------------------------------------------------------------- a copy never hides the original


def test_a_copy_never_hides_the_original_and_verify_finds_it_without_writing(tmp_path: Path) -> None:
    m = Machine(tmp_path / "store", tmp_path)
    write(m.memories / NAME, memory_text(ID, "Postgres port", BODY))
    assert read_json(m, ID)["path"] == f"memories/{NAME}"
    # the copy's name sorts before the original's: a scan in path order meets it first
    shutil.copy(m.memories / NAME, m.memories / "a-copy.md")
    before = m.files()
    done = m.cli("reindex", "--verify", code=1)  # a duplicate id is a finding
    assert "duplicate id" in done.stdout and "a-copy.md" in done.stdout
    assert m.files() == before  # verify only reads
    # the original keeps its id (the index knew it), whatever order the rebuild read the files in
    assert read_json(m, ID)["path"] == f"memories/{NAME}"
    m.cli("reindex")
    assert read_json(m, ID)["path"] == f"memories/{NAME}"
    # the copy is a memory of its own: a new id in its file, findable, nothing unparseable
    ids = ids_by_file(m)
    assert ids[NAME] == ID and ids["a-copy.md"] != ID and re.fullmatch(r"[0-9A-Z]{26}", ids["a-copy.md"])
    assert read_json(m, ids["a-copy.md"])["path"] == "memories/a-copy.md"
    assert m.status()["unparseable"] == []
    m.cli("reindex", "--verify")  # clean now


def test_a_copy_edited_before_the_index_saw_either_keeps_the_older_created(tmp_path: Path) -> None:
    """With no index to remember which file held the id, the older `created` keeps it, then the path."""
    m = Machine(tmp_path / "store", tmp_path)
    write(m.memories / "z-original.md", memory_text(ID, "Postgres port", BODY))
    later = memory_text(ID, "Postgres port copy", "Edited copy.", created="2026-03-01T00:00:00Z")
    write(m.memories / "a-copy.md", later)
    out = json.loads(m.cli("status", "--json").stdout)
    assert out["unparseable"] == []
    assert read_json(m, ID)["path"] == "memories/z-original.md"
    copy_id = ids_by_file(m)["a-copy.md"]
    assert copy_id != ID and "Edited copy." in read_json(m, copy_id)["text"]
    assert "Edited copy." in m.cli("recall", "Edited copy").stdout


# ---------------------------------------------------------------- sync treats a hand rename as a rename


def test_a_hand_rename_on_one_machine_and_an_edit_on_the_other_end_as_one_file_with_the_edit(pair) -> None:
    a, b = pair
    (a.memories / NAME).rename(a.memories / "postgres-staging-port.md")
    a.sync()
    replace_in(b.memories / NAME, "Owner: infra.", "Owner: platform team.")
    out = b.sync()
    assert any("renamed" in note for note in out["surfaced"]), out["surfaced"]
    settle(a, b)
    for m in (a, b):
        assert list(m.files()) == ["postgres-staging-port.md"], m.files()
        assert "Owner: platform team." in read_json(m, ID)["text"]
        assert m.status()["unparseable"] == []
        shutil.rmtree(m.root / ".index")  # the canon alone says the same
        assert "Owner: platform team." in read_json(m, ID)["text"]


def test_an_edit_on_one_machine_and_a_rename_merged_there_keep_the_edit(pair) -> None:
    """The other order: the editing machine syncs first, the renaming machine merges."""
    a, b = pair
    replace_in(b.memories / NAME, "Owner: infra.", "Owner: platform team.")
    b.sync()
    (a.memories / NAME).rename(a.memories / "postgres-staging-port.md")
    a.sync()
    settle(a, b)
    for m in (a, b):
        assert list(m.files()) == ["postgres-staging-port.md"]
        assert "Owner: platform team." in read_json(m, ID)["text"]


def test_a_frontmatter_typo_on_one_machine_and_an_edit_on_the_other_never_share_an_id(pair) -> None:
    """The machine whose file has the typo merges (the typo committed by hand: sync itself holds an unparseable
    file back): the other side's edit becomes a memory of its own, never a second file under the same id."""
    a, b = pair
    replace_in(b.memories / NAME, "Owner: infra.", "Owner: platform team.")
    b.sync()
    replace_in(a.memories / NAME, "type: fact", "type: [fact")
    a.git("-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qam", "by hand")
    out = a.sync(code=2)  # merged here; the push is refused while an unparseable file is in the commits
    assert "may not leave this machine" in out["stderr"]
    assert_one_file_per_id(a)
    edited = [i for name, i in ids_by_file(a).items() if b"platform team" in a.files()[name]]
    assert len(edited) == 1 and edited[0] != ID and "platform team" in read_json(a, edited[0])["text"]
    # once the typo is fixed, both are memories and neither hides the other
    replace_in(a.memories / NAME, "type: [fact", "type: fact")
    assert_one_file_per_id(a)
    assert a.status()["unparseable"] == []
    assert read_json(a, ID)["path"] == f"memories/{NAME}"
    assert read_json(a, edited[0])["path"] != f"memories/{NAME}"


# ---------------------------------------------------------------- lifecycle decisions survive merges


@pytest.mark.parametrize("merger", ["archiver", "editor"])
def test_an_archive_on_one_side_and_an_edit_on_the_other_end_archived_with_the_edit(pair, merger: str) -> None:
    a, b = pair
    archiver, editor = a, b
    first, second = (editor, archiver) if merger == "archiver" else (archiver, editor)
    replace_in(archiver.memories / NAME, "state: active", "state: archived")
    archiver.cli("status")  # each index knows the memory as it was before the sync
    replace_in(editor.memories / NAME, "Owner: infra.", "Owner: platform team.")
    editor.cli("status")
    first.sync()
    out = second.sync()
    assert any("archived" in note and "edit" in note for note in out["surfaced"]), out["surfaced"]
    settle(a, b)
    for m in (a, b):
        got = read_json(m, ID)
        assert got["frontmatter"]["state"] == "archived" and "Owner: platform team." in got["text"], m.root
        assert "state: archived" in (m.memories / NAME).read_text()


def test_a_deprecate_on_one_side_and_an_edit_on_the_other_end_deprecated_with_the_edit(pair) -> None:
    a, b = pair
    replace_in(a.memories / NAME, "state: active", "state: deprecated\ndeprecated_reason: wrong port")
    a.sync()
    replace_in(b.memories / NAME, "Owner: infra.", "Owner: platform team.")
    b.cli("status")
    out = b.sync()
    assert any("deprecated" in note for note in out["surfaced"]), out["surfaced"]
    settle(a, b)
    for m in (a, b):
        got = read_json(m, ID)
        assert got["frontmatter"]["state"] == "deprecated" and "Owner: platform team." in got["text"]


# ---------------------------------------------------------------- sync --init with a bad URL


def test_a_failed_init_shows_gits_message_and_leaves_no_remote(tmp_path: Path) -> None:
    m = Machine(tmp_path / "store", tmp_path)
    m.cli("remember", "Deploys happen on Tuesdays", "Only Tuesday to Thursday.")
    done = m.cli("sync", "--init", str(tmp_path / "nowhere.git"), code=None)
    assert done.returncode != 0
    assert "does not appear to be a git repository" in done.stderr, done.stderr
    assert m.git("remote").strip() == ""
