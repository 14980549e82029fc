"""`memory-mcp import FORMAT PATH`: each format's fixture (written here from the format's documentation)
round-trips into memory files, a dry run writes nothing, a second import adds nothing, bad input is
reported by file or line and skipped, and the conflict gate's pairs come back in the report.

The CLI runs in process (`cli.main`), the store is real files and a real SQLite index.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from memory_mcp.canon import files as canon
from memory_mcp.canon.dictionary import entity_key
from memory_mcp.domain.models import Progress
from memory_mcp.importers.run import apply_import, plan_import
from memory_mcp.tools.service import MemoryService

from .helpers import no_user_settings  # noqa: F401 (an autouse fixture: pytest finds it here)
from .helpers import run_cli as run


def imported(store: Path, capsys: pytest.CaptureFixture[str], fmt: str, path: Path, *extra: str) -> dict[str, Any]:
    code, out, err = run(store, capsys, "import", fmt, str(path), "--json", *extra)
    assert code == 0, err
    return json.loads(out)


def on_disk(store: Path) -> dict[str, dict[str, Any]]:
    """Every memory file by title: its frontmatter (plain values) and body."""
    out = {}
    for path in sorted((store / "memories").glob("*.md")):
        meta, content, _ = canon.split(path.read_text(encoding="utf-8"), round_trip=False)
        title, _, body = content.strip().partition("\n")
        out[title.removeprefix("# ")] = {**canon.to_plain(dict(meta)), "body": body.strip(), "file": path.name}
    return out


def ents(*names: str) -> list[str]:
    return [entity_key(n) for n in names]


def assert_reimport_is_a_no_op(store: Path, capsys, fmt: str, path: Path, count: int) -> None:
    before = sorted(p.name for p in (store / "memories").glob("*.md"))
    again = imported(store, capsys, fmt, path)
    assert again["to_create"] == 0 and again["already_present"] == count, again
    # the key is the memory's own content: deleting the index changes nothing
    shutil.rmtree(store / ".index")
    again = imported(store, capsys, fmt, path)
    assert again["to_create"] == 0 and again["already_present"] == count
    assert sorted(p.name for p in (store / "memories").glob("*.md")) == before


# ---------------------------------------------------------------- the official MCP memory server


def write_knowledge_graph(folder: Path) -> Path:
    lines = [
        {"type": "entity", "name": "Maria_Lopez", "entityType": "person",
         "observations": ["Speaks fluent Portuguese", "Prefers code reviews in the morning"]},
        {"type": "entity", "name": "Harbor_Labs", "entityType": "organization", "observations": []},
        {"type": "relation", "from": "Maria_Lopez", "to": "Harbor_Labs", "relationType": "works_at"},
        {"type": "entity", "name": "Odd", "entityType": "thing", "observations": [], "importance": 3},
        {"type": "note", "text": "not a graph line"},
    ]  # fmt: skip
    text = "\n".join(json.dumps(x) for x in lines) + '\n{"type": "entity", "name": \n\n'
    path = folder / "memory.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


def test_mcp_memory_round_trip(store: Path, tmp_path: Path, capsys) -> None:
    path = write_knowledge_graph(tmp_path)
    dry = imported(store, capsys, "mcp-memory", path, "--dry-run")
    assert dry["dry_run"] is True and dry["to_create"] == 4 and dry["by_type"] == {"fact": 4}
    assert dry["links"] == 2 and len(dry["sample"]) == 4
    assert not (store / "memories").exists(), "a dry run writes nothing, not even the store"
    assert {(p["where"], p["reason"].split(" (")[0]) for p in dry["problems"]} == {
        ("memory.jsonl:4", "unknown field importance in this entity"),
        ("memory.jsonl:5", "type 'note' is neither 'entity' nor 'relation'"),
        ("memory.jsonl:6", "not a JSON object"),
    }

    done = imported(store, capsys, "mcp-memory", path)
    assert done["to_create"] == 4 and done["links"] == 2 and len(done["problems"]) == 3
    files = on_disk(store)
    assert set(files) == {
        "Maria_Lopez: Speaks fluent Portuguese",
        "Maria_Lopez: Prefers code reviews in the morning",
        "Harbor_Labs",
        "Maria_Lopez works at Harbor_Labs",
    }
    assert all(
        m["trust"] == "imported" and m["source"].startswith("mcp-memory import: memory.jsonl:") for m in files.values()
    )
    assert files["Maria_Lopez: Speaks fluent Portuguese"]["entities"] == ents("Maria_Lopez")
    assert "person" in files["Maria_Lopez: Speaks fluent Portuguese"]["source"]
    relation = files["Maria_Lopez works at Harbor_Labs"]
    assert relation["entities"] == ents("Maria_Lopez", "Harbor_Labs")
    assert "works_at" in relation["body"]
    # linked both ways to the first memory of each end
    anchors = {files["Maria_Lopez: Speaks fluent Portuguese"]["id"], files["Harbor_Labs"]["id"]}
    assert set(relation["related"]) == anchors
    assert relation["id"] in files["Harbor_Labs"]["related"]

    again = imported(store, capsys, "mcp-memory", path)
    assert again["links"] == 0 and again["links_present"] == 2
    assert_reimport_is_a_no_op(store, capsys, "mcp-memory", path, 4)


def test_a_file_that_is_not_the_format_is_one_problem_and_writes_nothing(store: Path, tmp_path: Path, capsys) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# Shopping\n\n- milk\n- bread\n", encoding="utf-8")
    for fmt, says in (("mcp-memory", "not the MCP memory server's JSONL"), ("mem0", "not a mem0 export")):
        answer = imported(store, capsys, fmt, notes)
        assert answer["to_create"] == 0
        (problem,) = answer["problems"]
        assert problem["where"] == "notes.md" and problem["reason"].startswith(says), problem
    code, out, err = run(store, capsys, "import", "markdown", str(tmp_path / "missing"))
    assert code == 2 and "does not exist" in err and out == ""
    assert not (store / "memories").exists()


# ---------------------------------------------------------------- Claude Code


def write_claude_code(root: Path) -> tuple[Path, Path]:
    project = root / "webshop"
    (project / ".claude" / "rules").mkdir(parents=True)
    (project / "CLAUDE.md").write_text(
        "# Webshop\n\nA Django shop; Python 3.12.\n\n## Build\n\nRun `make build`.\n\n"
        "```sh\n# not a heading, a shell comment\nmake build\n```\n\n## Conventions\n\n### Tests\n\n"
        "Use pytest, never unittest.\n",
        encoding="utf-8",
    )
    (project / ".claude" / "rules" / "api.md").write_text("# API rules\n\nEvery endpoint is versioned.\n")
    (project / "CLAUDE.local.md").write_text("Sandbox at http://localhost:8001.\n", encoding="utf-8")
    (project / "README.md").write_text("# Not memory\n\nA readme is not a Claude Code memory file.\n")
    memory = root / "projects" / "-home-me-webshop" / "memory"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text(
        "# Memory index\n\n- [Review style](feedback_reviews.md) — how reviews go\n"
        "- [Role](user_role.md) — who the user is\n\n## Loose notes\n\nStaging resets every Monday.\n",
        encoding="utf-8",
    )
    (memory / "feedback_reviews.md").write_text(
        "---\nname: Review style\ndescription: Short reviews, one comment per issue\ntype: feedback\n---\n\n"
        "The user asked for short reviews.\n",
        encoding="utf-8",
    )
    (memory / "user_role.md").write_text(
        "---\nname: Role\ndescription: Backend developer, new to React\ntype: user\n---\n", encoding="utf-8"
    )
    (memory / "odd.md").write_text("---\nname: Odd\ncolour: blue\n---\nText.\n", encoding="utf-8")
    return project, memory


def test_claude_code_round_trip(store: Path, tmp_path: Path, capsys) -> None:
    project, memory = write_claude_code(tmp_path)
    done = imported(store, capsys, "claude-code", project)
    assert done["to_create"] == 5 and done["by_type"] == {"knowledge": 5}
    files = on_disk(store)
    assert set(files) == {"Webshop", "Build", "Tests", "API rules", "CLAUDE.local.md"}
    assert files["Tests"]["source"] == "claude-code import: CLAUDE.md § Webshop > Conventions > Tests (line 16)"
    assert files["Build"]["body"].endswith("make build\n```"), "a # inside a code fence is not a heading"
    assert files["API rules"]["source"].startswith("claude-code import: .claude/rules/api.md § API rules")
    assert all(m["entities"] == ["webshop"] and m["trust"] == "imported" for m in files.values())
    assert_reimport_is_a_no_op(store, capsys, "claude-code", project, 5)

    auto = imported(store, capsys, "claude-code", memory)
    assert auto["to_create"] == 3 and auto["by_type"] == {"fact": 1, "knowledge": 1, "preference": 1}
    assert [(p["where"], p["reason"]) for p in auto["problems"]] == [("odd.md", "unknown frontmatter field colour")]
    assert any("MEMORY.md's one-line pointers" in d for d in auto["dropped"])
    files = on_disk(store)
    assert files["Review style"]["type"] == "preference"
    assert files["Review style"]["body"].startswith("Short reviews, one comment per issue")
    assert files["Review style"]["source"] == "claude-code import: feedback_reviews.md"
    assert files["Role"]["body"] == "Backend developer, new to React"
    assert files["Loose notes"]["body"] == "Staging resets every Monday."
    assert "Memory index" not in files, "the index's pointer lines are not a memory"


# ---------------------------------------------------------------- basic-memory


def write_basic_memory(folder: Path) -> Path:
    (folder / "coffee").mkdir(parents=True)
    (folder / "coffee" / "brewing.md").write_text(
        "---\ntitle: Coffee Brewing\ntype: note\ntags: [coffee, brewing]\npermalink: coffee-brewing\n---\n\n"
        "# Coffee Brewing\n\nNotes on making coffee at home.\n\n## Observations\n"
        "- [method] Pour over gives a cleaner cup than French press #brewing\n"
        "- [decision] Use a 1:16 ratio of coffee to water (after testing)\n"
        "- [ ] buy a scale\n\n## Relations\n- relates_to [[Coffee Beans]]\n- inspired_by [[Somewhere Else]]\n",
        encoding="utf-8",
    )
    (folder / "coffee" / "beans.md").write_text(
        "---\ntitle: Coffee Beans\ntype: note\nstatus: draft\n---\n\n# Coffee Beans\n\nLight roasts suit pour over.\n",
        encoding="utf-8",
    )
    (folder / "broken.md").write_text("---\ntitle: [unclosed\n---\nBody.\n", encoding="utf-8")
    return folder


def test_basic_memory_round_trip(store: Path, tmp_path: Path, capsys) -> None:
    folder = write_basic_memory(tmp_path / "bm")
    done = imported(store, capsys, "basic-memory", folder)
    assert done["to_create"] == 4 and done["by_type"] == {"knowledge": 2, "fact": 1, "decision": 1}
    assert [p["where"] for p in done["problems"]] == ["broken.md"]
    assert done["links"] == 1
    assert any("relations to notes outside the import" in d for d in done["dropped"])
    files = on_disk(store)
    brewing, beans = files["Coffee Brewing"], files["Coffee Beans"]
    assert brewing["entities"] == ents("Coffee Brewing", "coffee", "brewing")
    assert "[method]" not in brewing["body"] and "## Observations" not in brewing["body"]
    assert "- relates_to [[Coffee Beans]]" in brewing["body"] and "- [ ] buy a scale" in brewing["body"]
    assert "permalink: coffee-brewing" in brewing["body"]
    assert "status: draft" in beans["body"], "custom frontmatter is kept as text"
    assert brewing["related"] == [beans["id"]] and beans["related"] == [brewing["id"]]
    pour = files["Pour over gives a cleaner cup than French press"]
    assert pour["type"] == "fact" and pour["entities"] == ents("Coffee Brewing", "brewing")
    assert pour["body"].startswith("[method] Pour over gives a cleaner cup than French press #brewing")
    assert files["Use a 1:16 ratio of coffee to water"]["type"] == "decision"
    assert pour["source"] == "basic-memory import: coffee/brewing.md (observation)"
    assert_reimport_is_a_no_op(store, capsys, "basic-memory", folder, 4)


# ---------------------------------------------------------------- mem0


def write_mem0(folder: Path) -> Path:
    items = [
        {"id": "a1", "memory": "Prefers vegetarian food", "user_id": "alex", "categories": ["food"],
         "metadata": {"type": "preference"}, "hash": "x", "created_at": "2024-07-01T10:00:00-07:00",
         "updated_at": "2024-07-02T10:00:00-07:00"},
        {"id": "a2", "memory": "Is allergic to peanuts", "user_id": "alex", "metadata": None,
         "created_at": "2024-07-03T10:00:00-07:00"},
        {"id": "a3", "memory": "Works as a nurse", "user_id": "alex", "mood": "happy"},
        {"id": "a4", "user_id": "alex"},
        "just text",
    ]  # fmt: skip
    path = folder / "mem0-export.json"
    path.write_text(json.dumps({"results": items}), encoding="utf-8")
    return path


def test_mem0_round_trip(store: Path, tmp_path: Path, capsys) -> None:
    path = write_mem0(tmp_path)
    done = imported(store, capsys, "mem0", path)
    assert done["to_create"] == 2 and done["by_type"] == {"preference": 1, "fact": 1}
    assert [(p["where"], p["reason"]) for p in done["problems"]] == [
        ("mem0-export.json item 3", "unknown field mood"),
        ("mem0-export.json item 4", "no `memory` text"),
        ("mem0-export.json item 5", "not a JSON object"),
    ]
    files = on_disk(store)
    veg = files["Prefers vegetarian food"]
    assert veg["type"] == "preference" and veg["entities"] == ["alex"] and veg["trust"] == "imported"
    assert veg["source"] == (
        "mem0 import: mem0-export.json item 1 (id a1, created 2024-07-01T10:00:00-07:00, "
        "updated 2024-07-02T10:00:00-07:00)"
    )
    assert "Categories: food." in veg["body"] and 'Metadata: type="preference"' in veg["body"]
    assert files["Is allergic to peanuts"]["body"] == "Is allergic to peanuts"  # a memory always has a body
    # a plain list is the same export
    (tmp_path / "list.json").write_text(json.dumps(json.loads(path.read_text())["results"][:2]), encoding="utf-8")
    assert imported(store, capsys, "mem0", tmp_path / "list.json")["already_present"] == 2
    assert_reimport_is_a_no_op(store, capsys, "mem0", path, 2)


# ---------------------------------------------------------------- plain Markdown


def test_markdown_folder_round_trip(store: Path, tmp_path: Path, capsys) -> None:
    notes = tmp_path / "notes"
    (notes / "work").mkdir(parents=True)
    (notes / ".obsidian").mkdir()
    (notes / ".obsidian" / "hidden.md").write_text("# Hidden\n\nNot a note.\n")
    (notes / "work" / "oncall.md").write_text(
        "---\ntitle: On-call rota\ntags: [ops, oncall]\nreviewed: 2024-05-01\n---\n\nWeekly, handover on Monday.\n",
        encoding="utf-8",
    )
    (notes / "espresso.md").write_text("# Espresso ratio\n\n1:2 in 28 seconds.\n", encoding="utf-8")
    (notes / "idea.md").write_text("A note without a heading.\n", encoding="utf-8")
    (notes / "blob.md").write_bytes(b"\x00\x01binary")
    (notes / "empty.md").write_text("\n")
    done = imported(store, capsys, "markdown", notes)
    assert done["to_create"] == 3 and done["by_type"] == {"knowledge": 3}
    assert sorted((p["where"], p["reason"]) for p in done["problems"]) == [
        ("blob.md", "binary file (contains NUL bytes)"),
        ("empty.md", "empty note"),
    ]
    files = on_disk(store)
    assert set(files) == {"On-call rota", "Espresso ratio", "idea"}
    assert files["On-call rota"]["entities"] == ["ops", "oncall"]
    assert files["On-call rota"]["body"] == "Weekly, handover on Monday.\n\nProperties: reviewed: 2024-05-01"
    assert files["On-call rota"]["source"] == "markdown import: work/oncall.md"
    assert files["Espresso ratio"]["body"] == "1:2 in 28 seconds."
    assert_reimport_is_a_no_op(store, capsys, "markdown", notes, 3)


# ---------------------------------------------------------------- the rules every format shares


def test_the_conflict_gate_runs_and_its_pairs_are_reported(store: Path, tmp_path: Path, capsys) -> None:
    # issue 42: only a pair weighed near certain is written (a lone neighbour never is), so the store holds the
    # memories one remembers about Redis, and the import says the TTL changed
    ids = {}
    for title in ("Redis session TTL is 24 hours", "Redis runs on port 6380", "Redis max memory is 4 GB",
                  "Redis persistence uses AOF", "Redis runs version 7.2"):  # fmt: skip
        code, out, err = run(store, capsys, "remember", title, f"{title}.", "--entity", "redis", "--json")
        assert code == 0, err
        ids[title] = json.loads(out)["id"]
    mine = ids["Redis session TTL is 24 hours"]
    path = tmp_path / "export.json"
    path.write_text(json.dumps([{"id": "b1", "memory": "Redis session TTL lowered to 1 hour", "user_id": "redis"}]))
    done = imported(store, capsys, "mem0", path)
    assert done["to_create"] == 1
    (pair,) = done["conflicts"]
    assert pair["other_id"] == mine and pair["title"] == "Redis session TTL lowered to 1 hour" and pair["reasons"]
    # recorded like any remember's: the new file holds the open pair
    new = on_disk(store)["Redis session TTL lowered to 1 hour"]
    assert new["conflicts"][0]["with"] == mine and new["conflicts"][0]["status"] == "open"
    code, text, _ = run(store, capsys, "import", "mem0", str(path))
    assert code == 0 and "conflict written" not in text, "a re-import creates no memory, so no new pair"
    path.write_text(json.dumps([{"id": "b2", "memory": "Redis session TTL raised to 48 hours", "user_id": "redis"}]))
    code, text, _ = run(store, capsys, "import", "mem0", str(path))
    assert code == 0 and "conflict written" in text and "resolve-conflict" in text


def test_a_retracted_import_never_comes_back(store: Path, tmp_path: Path, capsys) -> None:
    path = write_mem0(tmp_path)
    imported(store, capsys, "mem0", path)
    peanuts = on_disk(store)["Is allergic to peanuts"]["id"]
    assert run(store, capsys, "forget", "deprecate", peanuts, "--reason", "wrong person")[0] == 0
    again = imported(store, capsys, "mem0", path)
    assert again["to_create"] == 0 and again["already_present"] == 2


def test_dry_run_text_shows_counts_and_a_sample(store: Path, tmp_path: Path, capsys) -> None:
    path = write_knowledge_graph(tmp_path)
    code, out, err = run(store, capsys, "import", "mcp-memory", str(path), "--dry-run")
    assert code == 0, err
    assert out.startswith("would import 4 memories (4 fact) from")
    assert "Maria_Lopez: Speaks fluent Portuguese  <- mcp-memory import: memory.jsonl:1" in out
    assert "skipped memory.jsonl:4: unknown field importance in this entity" in out
    assert out.rstrip().endswith("-- dry run: nothing was written")
    assert not (store / "memories").exists()


def test_import_reports_progress_per_memory(store: Path, tmp_path: Path) -> None:
    path = write_knowledge_graph(tmp_path)
    service = MemoryService(store)
    seen: list[Progress] = []
    try:
        answer = apply_import(service, plan_import(service, "mcp-memory", path), progress=seen.append)
    finally:
        service.close()
    assert answer.to_create == 4
    assert [(p.stage, p.done, p.total) for p in seen] == [("import", n, 4) for n in range(5)]
    assert seen[-1].message.endswith("4/4 memories imported")
