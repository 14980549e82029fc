"""Nothing a user types can lose a memory (issue 24 §1), through the real stdio server and the real CLI.

The rule for text arguments (`memory_mcp/domain/textinput.py`): a control character (C0, DEL, C1) or a
lone surrogate in any text that reaches a file is refused with an error naming the field; nothing is
written; the memory is as it was. Multi-line fields (body, reason, note) also take tab and line breaks.
And `export` never overwrites a MEMORY.md that it did not write.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import REPO, server_env, stdio_tools

pytestmark = pytest.mark.anyio

# one of each kind the rule refuses everywhere
REFUSED_EVERYWHERE = ["\x00", "\x01", "\x1b", "\x7f", "\x85", "\x9f"]
# refused in single-line fields only
LINE_BREAKS = ["\t", "\n", "\r"]


def canon_bytes(root: Path) -> dict[str, bytes]:
    """Every file of the store a person owns (the index is derived and may change)."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".index" not in p.relative_to(root).parts
    }


async def test_a_control_character_in_any_text_argument_is_refused_and_the_memory_stays(store: Path) -> None:
    async with stdio_tools(store) as t:
        good = await t.remember("A memory that must survive", "Kestrel nests on the north tower.", entities=["tower"])
        before = canon_bytes(store)
        cases: list[tuple[str, str, dict]] = []  # (field the message must name, tool, arguments)
        for bad in REFUSED_EVERYWHERE + LINE_BREAKS:
            cases += [
                ("title", "memory_remember", {"title": f"nul{bad}title", "body": "fine"}),
                ("entities", "memory_remember", {"title": "ok", "body": "fine", "entities": ["ok", f"x{bad}y"]}),
                ("source", "memory_remember", {"title": "ok", "body": "fine", "source": f"chat{bad}log"}),
                ("title", "memory_update", {"op": "edit", "id": good["id"], "title": f"bad{bad}x"}),
                ("entities", "memory_update", {"op": "edit", "id": good["id"], "entities": [f"a{bad}b"]}),
                ("source", "memory_update", {"op": "edit", "id": good["id"], "source": f"s{bad}"}),
                ("entity", "memory_recall", {"query": "kestrel", "entity": f"tower{bad}"}),
            ]
        for bad in REFUSED_EVERYWHERE:
            cases += [
                ("body", "memory_remember", {"title": "ok", "body": f"line one{bad}line two"}),
                ("body", "memory_update", {"op": "edit", "id": good["id"], "body": f"new{bad}body"}),
                ("reason", "memory_forget", {"id": good["id"], "mode": "deprecate", "reason": f"old{bad}"}),
                ("reason", "memory_update", {"op": "set_state", "id": good["id"], "state": "deprecated",
                                             "reason": f"old{bad}"}),
                ("note", "memory_update", {"op": "resolve_conflict", "id": good["id"], "pair_hash": "0" * 16,
                                           "resolution": "keep_both", "note": f"n{bad}"}),
            ]  # fmt: skip
        for field, tool, args in cases:
            message = await t.err(tool, **args)
            assert field in message and "U+" in message, f"{tool} {args!r}: {message}"
            assert canon_bytes(store) == before, f"{tool} {args!r} changed the store"
        # the memory is as it was: readable by id and by path, and recalled
        got = await t.read(id=good["id"])
        assert got["path"] == good["path"] and "Kestrel nests" in got["text"]
        assert (await t.read(path=good["path"]))["id"] == good["id"]
        assert good["id"] in await t.recall_ids("kestrel north tower")
        assert (await t.status())["unparseable"] == []

        # what multi-line fields take: tab and line breaks (CRLF and a lone CR written as a newline)
        made = await t.remember("Multi-line body", "col\tumn\r\nsecond line\rthird line")
        text = (store / made["path"]).read_text(encoding="utf-8")
        assert "col\tumn\nsecond line\nthird line" in text and "\r" not in text
        done = await t.ok("memory_forget", id=made["id"], mode="deprecate", reason="first line\nsecond line")
        assert done["state"] == "deprecated"


async def test_a_lone_surrogate_is_a_clear_error_not_a_crash(store: Path) -> None:
    """A lone surrogate cannot be encoded as UTF-8. A command line that is not valid UTF-8 carries one (Python
    decodes it with surrogateescape). (Over MCP the SDK client refuses to send one, and the SDK server drops a
    request line holding one before any tool runs: see the report of issue 24.)"""
    async with stdio_tools(store) as t:
        await t.remember("Survivor", "Still here.")
    before = canon_bytes(store)
    done = subprocess.run(
        [sys.executable, "-m", "memory_mcp", "--store", str(store), "remember", b"bad\xfftitle", "body"],
        env=server_env(store) | {"PYTHONPATH": str(REPO)},
        capture_output=True,
        timeout=60,
    )
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 2 and "title" in err and "surrogate" in err and "Traceback" not in err, err
    assert canon_bytes(store) == before


# ---------------------------------------------------------------- export


def export(store: Path, to: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memory_mcp", "--store", str(store), "export", *extra],
        env=server_env(store) | {"PYTHONPATH": str(REPO)},
        cwd=str(to),
        capture_output=True,
        text=True,
        timeout=60,
    )


async def test_export_never_overwrites_a_hand_written_memory_md(store: Path, tmp_path: Path) -> None:
    async with stdio_tools(store) as t:
        await t.remember("Exported fact", "Export writes this one.")
    project = tmp_path / "project"
    project.mkdir()
    target = project / "MEMORY.md"
    target.write_text("# My own notes\n\nWritten by hand; not memory-mcp's.\n", encoding="utf-8")
    mine = target.read_bytes()

    refused = export(store, project)
    assert refused.returncode == 2, refused
    assert str(target) in refused.stderr and "--force" in refused.stderr and "Traceback" not in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert target.read_bytes() == mine, "a hand-written MEMORY.md was overwritten"
    assert not list(project.glob(".MEMORY.md*")), "a temp file was left behind"

    forced = export(store, project, "--force")
    assert forced.returncode == 0, forced.stderr
    assert f"wrote {target}:" in forced.stdout  # the absolute path, though the command ran with --to .
    assert "Exported fact" in target.read_text(encoding="utf-8")

    # a MEMORY.md that export wrote (it carries the generated marker) is simply replaced
    again = export(store, project, "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["path"] == str(target)
    assert "Exported fact" in target.read_text(encoding="utf-8")
