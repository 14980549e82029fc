"""The CLI does what the tools do: `update` (edit, supersede, set-state, link, resolve-conflict) and
`forget` (archive, deprecate, purge) with the tools' rules and messages, and recall and the context
within a budget in bytes. The tools run in process (`mcp.Client` on the real server), the CLI through its
entry point, both on the same store of real files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory_mcp.domain.models import RecallResult

from .helpers import (
    Tools,
    frontmatter,
    memory_tools,
    no_user_settings,  # noqa: F401 (an autouse fixture: pytest finds it here)
)
from .helpers import run_cli as run


def ok(store: Path, capsys, *args: str) -> dict[str, Any]:
    code, out, err = run(store, capsys, *args, "--json")
    assert code == 0, err
    return json.loads(out)


def state_of(store: Path, answer: dict[str, Any]) -> str:
    return frontmatter(store / answer["path"])["state"]


@pytest.mark.anyio
async def test_update_ops_from_the_cli_change_the_files_as_the_tool_does(store: Path, capsys) -> None:
    async with memory_tools(store) as t:
        a = await t.remember("Standup at nine", "The team standup is at nine.", entities=["team"])
        b = await t.remember("Standup moved to ten", "The team standup is now at ten.", entities=["team"])

        edited = ok(store, capsys, "update", "edit", a["id"], "--title", "Daily standup at nine", "--entity", "crew")
        assert edited["message"] == "edited: entities, title"
        text = (store / edited["path"]).read_text(encoding="utf-8")
        assert "# Daily standup at nine" in text and frontmatter(store / edited["path"])["entities"] == ["crew"]

        linked = ok(store, capsys, "update", "link", a["id"], "--other-id", b["id"])
        assert linked["message"] == f"{a['id']} and {b['id']} linked as related"
        assert frontmatter(store / b["path"])["related"] == [a["id"]]

        sup = ok(store, capsys, "update", "supersede", a["id"], "--by", b["id"])
        assert sup["state"] == "archived" and frontmatter(store / b["path"])["supersedes"] == [a["id"]]
        back = ok(store, capsys, "update", "set-state", a["id"], "--state", "active")
        assert back["message"] == "archived → active" and state_of(store, back) == "active"
        # the tool sees every change the CLI made
        read = await t.read(id=a["id"])
        assert read["frontmatter"]["superseded_by"] == [b["id"]] and read["frontmatter"]["state"] == "active"


@pytest.mark.anyio
async def test_resolve_conflict_from_the_cli(store: Path, capsys) -> None:
    async with memory_tools(store) as t:
        await t.remember("Alex works on Tuesdays", "Alex works on Tuesdays.", entities=["alex"], trust="user-stated")
        b = await t.remember("Alex works on Fridays", "Alex works on Fridays.", entities=["alex"], trust="user-stated")
        # issue 42: a lone neighbour is listed, not written; the CLI settles a listed pair by the other's id
        (pair,) = b["listed"]
        done = ok(
            store, capsys, "update", "resolve-conflict", b["id"], "--other-id", pair["id"],
            "--resolution", "keep-both", "--note", "both days",
        )  # fmt: skip
        assert done["message"] == f"{b['id']} and {pair['id']}: not a conflict"
        (entry,) = frontmatter(store / b["path"])["conflicts"]
        assert entry["status"] == "resolved" and entry["resolution"] == "keep_both" and entry["note"] == "both days"
        assert (await t.status())["unresolved_conflicts_total"] == 0


@pytest.mark.anyio
async def test_forget_modes_from_the_cli(store: Path, capsys) -> None:
    async with memory_tools(store) as t:
        a = await t.remember("Old printer code", "The printer code is 1234.")
        b = await t.remember("Retracted claim", "Someone said the office moves in May.")
    archived = ok(store, capsys, "forget", "archive", a["id"])
    assert archived["state"] == "archived" and state_of(store, archived) == "archived"
    deprecated = ok(store, capsys, "forget", "deprecate", b["id"], "--reason", "never true")
    assert frontmatter(store / deprecated["path"])["deprecated_reason"] == "never true"
    purged = ok(store, capsys, "forget", "purge", a["id"], "--confirm")
    assert purged["state"] is None and not (store / a["path"]).exists()
    code, out, _ = run(store, capsys, "forget", "purge", b["id"], "--confirm")
    assert code == 0 and out.startswith(f"purge {b['id']}: deleted memories/")


# each: the CLI arguments and the same call as the tool's arguments; both must refuse with the same reason
REFUSALS = [
    (["update", "link", "{a}", "--title", "x"], {"op": "link", "id": "{a}", "title": "x"}),
    (["update", "set-state", "{a}"], {"op": "set_state", "id": "{a}"}),
    (["update", "set-state", "{a}", "--state", "deprecated"], {"op": "set_state", "id": "{a}", "state": "deprecated"}),
    (["update", "supersede", "{a}", "--by", "{a}"], {"op": "supersede", "id": "{a}", "by": "{a}"}),
    (["update", "edit", "{a}"], {"op": "edit", "id": "{a}"}),
    (["update", "edit", "nope", "--title", "x"], {"op": "edit", "id": "nope", "title": "x"}),
    (["update", "resolve-conflict", "{a}", "--pair-hash", "ffff", "--resolution", "keep-both"],
     {"op": "resolve_conflict", "id": "{a}", "pair_hash": "ffff", "resolution": "keep_both"}),
    (["forget", "deprecate", "{a}"], {"mode": "deprecate", "id": "{a}"}),
    (["forget", "purge", "{a}", "--confirm"], {"mode": "purge", "id": "{a}", "confirm": True}),
    (["forget", "purge", "{b}"], {"mode": "purge", "id": "{b}"}),
]  # fmt: skip


@pytest.mark.anyio
async def test_the_cli_refuses_what_the_tools_refuse_with_the_same_message(store: Path, capsys) -> None:
    async with memory_tools(store) as t:
        a = (await t.remember("Kept memory", "A memory in use."))["id"]
        b = (await t.remember("Filed memory", "A memory already archived."))["id"]
        await t.ok("memory_forget", id=b, mode="archive")
        before = sorted(p.read_bytes() for p in (store / "memories").glob("*.md"))
        for cli_args, tool_args in REFUSALS:
            args = [x.format(a=a, b=b) for x in cli_args]
            call = {k: v.format(a=a, b=b) if isinstance(v, str) else v for k, v in tool_args.items()}
            tool = "memory_update" if "op" in call else "memory_forget"
            said = await t.err(tool, **call)
            code, out, err = run(store, capsys, *args)
            assert code == 2 and out == "", (args, out, err)
            message = err.strip().removeprefix("memory-mcp: ")
            assert message and message in said, (args, message, said)
        # nothing was written by any refusal
        assert sorted(p.read_bytes() for p in (store / "memories").glob("*.md")) == before


# ---------------------------------------------------------------- budgets in bytes


async def _seed_for_budget(t: Tools) -> None:
    for n in range(8):
        body = f"The glacier survey number {n} measured the ice. " + "Long detail about crevasses. " * (n * 3)
        await t.remember(f"Glacier survey {n}", body)


def _cited(results: list[dict[str, Any]]) -> int:
    return sum(RecallResult.model_validate(r).cited_bytes() for r in results)


@pytest.mark.anyio
async def test_recall_budget_fills_best_first_and_the_cli_agrees(store: Path, capsys) -> None:
    async with memory_tools(store) as t:
        await _seed_for_budget(t)
        full = await t.recall("glacier survey", limit=20)
        assert len(full["results"]) == 8
        budget = _cited(full["results"][:3]) + 10  # room for three, not four
        fitted = await t.recall("glacier survey", budget=budget)
        ids = [r["id"] for r in fitted["results"]]
        assert ids == [r["id"] for r in full["results"][:3]], "best first: a prefix of the ranking"
        assert fitted["used_bytes"] == _cited(fitted["results"]) <= budget == fitted["budget_bytes"]
        assert fitted["left_out"] == 5
        text = await t.raw("memory_recall", query="glacier survey", budget=budget)
        assert "5 more result(s) did not fit the budget" in text.content[0].text
        # a count still caps it
        assert len((await t.recall("glacier survey", budget=100_000, limit=2))["results"]) == 2
        assert len((await t.recall("glacier survey", budget=100_000))["results"]) == 8
        said = await t.err("memory_recall", query="glacier survey", budget=100)
    answer = ok(store, capsys, "recall", "glacier survey", "--budget", str(budget))
    assert [r["id"] for r in answer["results"]] == ids and answer["left_out"] == 5
    code, out, err = run(store, capsys, "recall", "glacier survey", "--budget", "100")
    assert code == 2 and err.strip().removeprefix("memory-mcp: ") in said and "at least 256" in said
    code, out, _ = run(store, capsys, "recall", "glacier survey", "--budget", str(budget))
    assert f"-- budget: {answer['used_bytes']} of {budget} bytes used; 5 more did not fit" in out


@pytest.mark.anyio
async def test_a_budget_smaller_than_the_best_result_clips_its_excerpt(store: Path) -> None:
    async with memory_tools(store) as t:
        await t.remember("Glacier survey", "The glacier survey measured the ice. " + "Crevasse detail. " * 40)
        await t.remember("Glacier survey two", "Another glacier survey. " + "More detail. " * 40)
        answer = await t.recall("glacier survey", budget=256)
        (best,) = answer["results"]
        assert answer["used_bytes"] <= 256 and best["excerpt"].endswith("…") and answer["left_out"] == 1


@pytest.mark.anyio
async def test_context_resource_takes_a_budget_like_the_cli(store: Path, capsys) -> None:
    async with memory_tools(store) as t:
        await _seed_for_budget(t)
        small = (await t.client.read_resource("memory://context?budget=600")).contents[0].text
        default = (await t.client.read_resource("memory://context")).contents[0].text
        assert len(small.encode()) <= 600 < len(default.encode())
        templates = await t.client.list_resource_templates()
        assert [x.uri_template for x in templates.resource_templates] == ["memory://context{?budget}"]
        with pytest.raises(Exception, match="budget: 100 bytes, at least 512"):
            await t.client.read_resource("memory://context?budget=100")
    code, out, _ = run(store, capsys, "context", "--budget", "600")
    assert code == 0 and out == small
