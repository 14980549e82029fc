"""A tampered index is caught by memory_reindex verify=true (and by the CLI's exit code); reindex
puts it right without touching the canon."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from memory_mcp.index.db import searched_texts

from .helpers import Tools, db_path, settle, tamper

pytestmark = pytest.mark.anyio


async def _seed(t: Tools) -> list[dict]:
    made = [
        await t.remember(f"Verify subject {n}", f"Memory {n} whose index row gets tampered with.") for n in range(3)
    ]
    settle()
    await t.status()  # past the racy window: the ledger now trusts every file's stat
    return made


def _canon(store: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((store / "memories").glob("*.md"))}


async def _clean_index_verifies_clean(tools: Tools, store: Path) -> None:
    await _seed(tools)
    answer = await tools.ok("memory_reindex", verify=True)
    assert answer["verified"] is True and answer["mismatches"] == []
    assert (answer["files"], answer["memories"]) == (3, 3)
    plain = await tools.ok("memory_reindex")
    assert plain["verified"] is False and plain["mismatches"] == []


async def _tampered_title_is_caught_and_repaired(tools: Tools, store: Path) -> None:
    made = await _seed(tools)
    canon = _canon(store)
    tamper(store, "UPDATE memories SET title = 'forged title' WHERE id = ?", (made[1]["id"],))
    # the forged title is what the index now serves (the stat gate trusts the unchanged file)...
    served = {r["id"]: r["title"] for r in (await tools.recall("Verify subject 1"))["results"]}
    assert served[made[1]["id"]] == "forged title"
    answer = await tools.ok("memory_reindex", verify=True)
    problems = [(m["path"], m["id"], m["problem"]) for m in answer["mismatches"]]
    assert problems and all(p[1] == made[1]["id"] and p[0] == made[1]["path"] for p in problems), problems
    assert any("title" in p[2] for p in problems), problems
    # ...and the reindex that reported it rebuilt the index from the canon
    again = await tools.ok("memory_reindex", verify=True)
    assert again["mismatches"] == []
    found = await tools.recall("Verify subject 1")
    assert found["results"][0]["title"] == "Verify subject 1"
    assert _canon(store) == canon, "verify/reindex must never change the canon"


async def _tampered_sha_and_full_text_are_caught(tools: Tools, store: Path) -> None:
    made = await _seed(tools)
    tamper(store, "UPDATE files SET sha256 = ? WHERE path = ?", ("0" * 64, made[0]["path"]))
    # the word table is contentless: its row is replaced by one made of a forged body (the memory row is untouched)
    conn = sqlite3.connect(db_path(store))
    rowid, title, entities, body = conn.execute(
        "SELECT rowid, title, entities, body FROM memories WHERE id = ?", (made[2]["id"],)
    ).fetchone()
    conn.close()
    texts = searched_texts(title, json.loads(entities), body)
    delete = "INSERT INTO fts_word (fts_word, rowid, title, entities, body) VALUES ('delete', ?, ?, ?, ?)"
    tamper(store, delete, (rowid, *texts))
    add = "INSERT INTO fts_word (rowid, title, entities, body) VALUES (?, ?, ?, ?)"
    tamper(store, add, (rowid, texts[0], texts[1], "forged body"))
    answer = await tools.ok("memory_reindex", verify=True)
    by_path = {m["path"]: m["problem"] for m in answer["mismatches"]}
    assert "sha256" in by_path.get(made[0]["path"], ""), answer["mismatches"]
    assert "full-text" in by_path.get(made[2]["path"], ""), answer["mismatches"]
    assert made[1]["path"] not in by_path
    assert (await tools.ok("memory_reindex", verify=True))["mismatches"] == []


async def test_verify_catches_every_kind_of_tampering(tools: Tools, store: Path) -> None:
    await _clean_index_verifies_clean(tools, store)
    await _tampered_title_is_caught_and_repaired(tools, store)
    await _tampered_sha_and_full_text_are_caught(tools, store)


# a one-shot `memory-mcp reindex` in a new process, counting the opens of each canon file (an audit hook sees
# every open the interpreter makes)
_COUNT_OPENS = """
import collections, json, sys
opened = collections.Counter()
def hook(event, args):
    if event == "open" and isinstance(args[0], str) and "/memories/" in args[0]:
        opened[args[0]] += 1
sys.addaudithook(hook)
from memory_mcp.edges.cli import main
code = main(["--store", sys.argv[1], "reindex"])
print(json.dumps({"code": code, "opened": sorted(opened.values())}))
"""


def test_reindex_of_a_store_without_index_reads_each_file_once(store: Path) -> None:
    """The rebuild is the one pass: the reconcile-first step that every other call makes before its work is
    not made first (on a store without an index it indexed every file, then the rebuild did it all again)."""
    import json
    import subprocess
    import sys

    from .helpers import hand_memory, write_file

    for n in range(5):
        write_file(store / "memories" / f"m{n}.md", hand_memory(f"m{n}", f"Subject {n}", f"Body {n}."))
    settle()
    for index in ("missing", "present"):  # a cold rebuild, then one over the index it left
        out = subprocess.run(
            [sys.executable, "-c", _COUNT_OPENS, str(store)], capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0, out.stderr
        answer = json.loads(out.stdout.strip().splitlines()[-1])
        assert answer == {"code": 0, "opened": [1] * 5}, index
        assert (store / ".index" / "index.sqlite3").exists()
