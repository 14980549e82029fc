"""A thread's continuation after the best result (issue 28 §3, search/threads.py), through the real stdio server:
a memory that `follows` another is shown right after the best result it continues, marked, in the text and
the structured content; the recall's filters apply to it; `follows` must name a memory of the store."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import result_text, stdio_tools

pytestmark = pytest.mark.anyio


async def _thread(t) -> tuple[str, str, str, str]:
    asks = (await t.remember("Melanie asks", "Do you have any pets?", type="episode"))["id"]
    answers = (await t.remember("Caroline answers", "Not yet. Maybe next year.", follows=asks))["id"]
    tells = (await t.remember("Melanie tells", "We got another cat named Bailey; Oliver is well.", follows=answers))[
        "id"
    ]
    other = (await t.remember("Pets at the office", "No pets at the office, allergies."))["id"]
    return asks, answers, tells, other


async def test_the_best_results_next_memories_follow_it_marked(store: Path) -> None:
    async with stdio_tools(store) as t:
        asks, answers, tells, other = await _thread(t)
        assert await t.recall_ids("do you have any pets", limit=2) == [asks, answers]  # the limit holds
        answer = await t.recall("do you have any pets", limit=5)
        ids = [r["id"] for r in answer["results"]]
        assert ids[:3] == [asks, answers, tells]
        by_id = {r["id"]: r for r in answer["results"]}
        assert by_id[answers]["continues"] == asks and by_id[answers]["matched"] is False
        assert by_id[tells]["continues"] == answers
        assert by_id[asks]["continues"] is None
        text = result_text(await t.raw("memory_recall", query="do you have any pets", limit=5))
        assert "follows #1, not matched by the query" in text and "follows #2" in text
        # no thread: a memory nobody follows is a result like any other
        alone = (await t.recall("allergies office"))["results"]
        assert alone[0]["id"] == other and alone[0]["continues"] is None


async def test_the_continuation_obeys_the_recalls_filters(store: Path) -> None:
    async with stdio_tools(store) as t:
        asks, answers, tells, _ = await _thread(t)
        await t.ok("memory_forget", id=answers, mode="archive")
        shown = await t.recall_ids("do you have any pets")
        assert shown[:3] == [asks, answers, tells]  # archived memories are recalled unless filtered out
        active = await t.recall_ids("do you have any pets", state="active")
        assert answers not in active and tells not in active[1:2]  # the thread stops where the filter does


async def test_follows_must_name_a_memory_of_the_store(store: Path) -> None:
    async with stdio_tools(store) as t:
        first = (await t.remember("First", "One body."))["id"]
        missing = await t.err("memory_remember", title="Second", body="Two body.", follows="01KH0000000000000000000009")
        assert "follows: no memory with id '01KH0000000000000000000009'" in missing
        shape = await t.err("memory_remember", title="Second", body="Two body.", follows="x" * 5000)
        assert "follows: 'xxxx" in shape and "is not a memory id" in shape
        second = (await t.remember("Second", "Two body.", follows=first))["id"]
        assert "follows: '" in await t.err("memory_update", op="edit", id=second, follows=second)
        text = (await t.read(id=second))["text"]
        assert f"follows: {first}" in text
