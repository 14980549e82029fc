"""memory_read: path escapes refused with clear errors, line ranges, and what a read returns."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .helpers import Tools, hand_memory, write_file

pytestmark = pytest.mark.anyio


async def test_path_escapes_are_refused(tools: Tools, store: Path, tmp_path: Path) -> None:
    made = await tools.remember("Inside the store", "A memory that is really inside.")
    outside = tmp_path / "secret.md"
    write_file(outside, hand_memory("secret-0001", "Outside secret", "supersecret token value"))
    os.symlink(outside, store / "memories" / "leak.md")
    (tmp_path / "outside-dir").mkdir()
    write_file(tmp_path / "outside-dir" / "x.md", hand_memory("secret-0002", "Outside dir", "supersecret dir value"))
    os.symlink(tmp_path / "outside-dir", store / "memories" / "linked-dir")

    cases = {
        "../secret.md": "leaves the store",
        "memories/../../secret.md": "leaves the store",
        "/etc/passwd": "absolute",
        str(outside): "absolute",
        "memories/leak.md": "outside the store",
        "memories/linked-dir/x.md": "outside the store",
        ".index/index.sqlite3": "not a memory file",
        "memories/../.index/index.sqlite3": "leaves the store",
        "dictionary.md": "not a memory file",
        ".gitignore": "not a memory file",
        "C:\\Windows\\win.ini": "absolute",
        "": "path",
    }
    for path, why in cases.items():
        message = await tools.err("memory_read", path=path)
        assert why in message, f"{path!r}: {message!r}"
        assert "supersecret" not in message
    assert "no file" in await tools.err("memory_read", path="memories/nothing-here.md")

    # the store's own files read fine by path, and give back their id
    got = await tools.read(path=made["path"])
    assert got["id"] == made["id"] and "really inside" in got["text"]

    # nothing behind a symlink that leaves the store is indexed, and the link is reported
    assert await tools.recall_ids("supersecret") == []
    status = await tools.status()
    reported = {u["path"]: u["reason"] for u in status["unparseable"]}
    assert "outside the store" in reported.get("memories/leak.md", "")
    assert status["total"] == 1


async def _line_ranges(tools: Tools, store: Path) -> None:
    body = "\n".join(f"Line {n} of a long runbook." for n in range(1, 251))
    made = await tools.remember("Long runbook", body)
    lines = (store / made["path"]).read_text(encoding="utf-8").split("\n")[:-1]
    total = len(lines)
    assert total > 250

    whole = await tools.read(id=made["id"])
    assert (whole["from_line"], whole["to_line"], whole["total_lines"]) == (1, 200, total)
    assert whole["text"] == "\n".join(lines[:200])
    rest = await tools.read(id=made["id"], from_line=201)
    assert (rest["from_line"], rest["to_line"]) == (201, total)
    assert rest["text"] == "\n".join(lines[200:])
    exact = await tools.read(id=made["id"], from_line=11, to_line=210)
    assert exact["text"] == "\n".join(lines[10:210])
    one = await tools.read(path=made["path"], from_line=total, to_line=total)
    assert one["text"] == lines[-1]

    assert "200" in await tools.err("memory_read", id=made["id"], from_line=1, to_line=201)
    assert "200" in await tools.err("memory_read", id=made["id"], from_line=50, to_line=400)
    assert "to_line" in await tools.err("memory_read", id=made["id"], from_line=20, to_line=10)
    assert "from_line" in await tools.err("memory_read", id=made["id"], from_line=0)
    assert "id" in await tools.err("memory_read", id=made["id"], path=made["path"])
    assert "id" in await tools.err("memory_read")
    # past the end: an empty slice, not an error and not someone else's lines
    beyond = await tools.read(id=made["id"], from_line=total + 5)
    assert beyond["text"] == ""


async def _read_returns_frontmatter_and_history(tools: Tools) -> None:
    a = await tools.remember(
        "Python services pin 3.11",
        "All python services are pinned to 3.11.",
        entities=["python"],
        review_after="2027-01-01",
        source="team meeting",
    )
    b = await tools.remember(
        "Python services pin 3.12", "All python services move to 3.12.", entities=["python"], supersedes=[a["id"]]
    )
    got = await tools.read(id=a["id"])
    fm = got["frontmatter"]
    assert fm["id"] == a["id"] and fm["state"] == "archived" and fm["entities"] == ["python"]
    assert fm["review_after"] == "2027-01-01" and fm["source"] == "team meeting"
    assert fm["superseded_by"] == [b["id"]]
    assert [c["id"] for c in got["superseded_by_chain"]] == [b["id"]]
    assert got["text"].splitlines()[0] == "---"
    assert "# Python services pin 3.11" in got["text"]


async def test_line_ranges_frontmatter_and_history(tools: Tools, store: Path) -> None:
    await _line_ranges(tools, store)
    await _read_returns_frontmatter_and_history(tools)
