"""One declaration per field (issue 27): the field table in domain/fields.py is what the canon, the index,
the tools, the CLI and the edit form read, so a new optional field is three edits. The proof adds one —
`owner`, free text — to a copy of the package, in exactly three files, and drives that copy through its
real CLI and its real stdio server."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import mcp
import pytest

from memory_mcp.domain.fields import COLUMNS, EDIT_VALUES
from memory_mcp.domain.memory import OptionalValues
from memory_mcp.domain.models import EditableMemory

from .helpers import REPO, server_env

# the whole change a new field needs: (file, an anchor in it, what goes after the anchor)
NEW_FIELD_EDITS = (
    (
        "domain/fields.py",
        '    FieldSpec("supersedes", Kind.LINKS, _LINK_RULE),\n',
        '    FieldSpec("owner", Kind.TEXT, column=True, edit=True, description="Who answers for it."),\n',
    ),
    ("domain/memory.py", "    superseded_at: str | None = None", "\n    owner: str | None = None"),
    ("domain/models.py", "    valid_until: str | None = None\n", "    owner: str | None = None\n"),
)


def test_the_typed_records_name_exactly_the_field_tables_values() -> None:
    assert tuple(f.name for f in dataclasses.fields(OptionalValues)) == COLUMNS
    assert set(EDIT_VALUES) <= set(EditableMemory.model_fields)


def _package_with_owner(tmp_path: Path) -> Path:
    root = tmp_path / "pkg"
    shutil.copytree(REPO / "memory_mcp", root / "memory_mcp", ignore=shutil.ignore_patterns("__pycache__"))
    for name, anchor, addition in NEW_FIELD_EDITS:
        path = root / "memory_mcp" / name
        text = path.read_text(encoding="utf-8")
        assert text.count(anchor) == 1, f"{name}: the anchor moved; update NEW_FIELD_EDITS"
        path.write_text(text.replace(anchor, anchor + addition), encoding="utf-8")
    return root


def _cli(package: Path, store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = server_env(store) | {"PYTHONPATH": str(package)}
    done = subprocess.run(
        [sys.executable, "-m", "memory_mcp", "--store", str(store), *args],
        env=env,
        cwd=store.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done


def _owners(store: Path) -> dict[str, str | None]:
    with sqlite3.connect(f"file:{store / '.index' / 'index.sqlite3'}?mode=ro", uri=True) as conn:
        return dict(conn.execute("SELECT id, owner FROM memories"))


@pytest.mark.anyio
async def test_a_new_field_is_three_edits_and_reaches_every_edge(tmp_path: Path) -> None:
    store = tmp_path / "store"
    # a store and index made by today's package: the field does not exist yet, a hand edit adds it
    _cli(REPO, store, "remember", "Deploy runbook", "Blue-green deploys from the release branch.")
    (old,) = sorted((store / "memories").glob("*.md"))
    old.write_text(old.read_text(encoding="utf-8").replace("trust:", "owner: Ana\ntrust:", 1), encoding="utf-8")

    package = _package_with_owner(tmp_path)
    assert "--owner TEXT" in _cli(package, store, "remember", "--help").stdout
    made = _cli(
        package, store, "remember", "Pager rota", "Weekly, handed over on Mondays.", "--owner", "Dana", "--json"
    )
    new = store / json.loads(made.stdout)["path"]
    assert "owner: Dana\n" in new.read_text(encoding="utf-8")
    owners = _owners(store)  # the older index gained the column, and re-read the hand-edited file
    assert sorted(v for v in owners.values() if v) == ["Ana", "Dana"]

    params = mcp.StdioServerParameters(
        command=sys.executable,
        args=["-m", "memory_mcp", "--store", str(store)],
        env=server_env(store) | {"PYTHONPATH": str(package)},
        cwd=str(store.parent),
    )
    async with mcp.Client(params) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["memory_remember"].input_schema["properties"]["owner"]["description"] == "Who answers for it."
        assert "owner" in tools["memory_update"].input_schema["properties"]
        mem_id = next(k for k, v in owners.items() if v == "Dana")
        edited = await client.call_tool("memory_update", {"op": "edit", "id": mem_id, "owner": "Eve"})
        assert not edited.is_error, edited.content
        refused = await client.call_tool("memory_update", {"op": "edit", "id": mem_id, "owner": "E\x00ve"})
        assert refused.is_error and "owner" in refused.content[0].text
        secret = await client.call_tool("memory_update", {"op": "edit", "id": mem_id, "owner": "AKIAIOSFODNN7EXAMPLE"})
        assert secret.is_error and "owner" in secret.content[0].text  # a text field is checked for secrets too
        read = await client.call_tool("memory_read", {"id": mem_id})
        assert read.structured_content["frontmatter"]["owner"] == "Eve"
    assert _owners(store)[mem_id] == "Eve"
    assert "owner: Eve\n" in new.read_text(encoding="utf-8")
