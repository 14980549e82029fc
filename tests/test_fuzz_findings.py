"""What the stdio fuzzer (test_fuzz_stdio.py) found, each pinned as a regression test through the real stdio server."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from .helpers import stdio_tools
from .test_text_arguments import canon_bytes

pytestmark = pytest.mark.anyio


def tree(home: Path) -> list[str]:
    return sorted(p.relative_to(home).as_posix() for p in home.rglob("*"))


async def test_a_call_naming_a_store_that_is_not_there_creates_nothing(store: Path) -> None:
    async with stdio_tools(store) as t:
        await t.remember("Home memory", "Lives in the default store.")
        home = store.parent
        before = tree(home)
        for tool, args in [
            ("memory_read", {"id": "01ARZ3NDEKTSV4RRFFQ69G5FAV", "store": "work"}),
            ("memory_recall", {"query": "anything", "store": "work"}),
            ("memory_status", {"store": "work"}),
            ("memory_forget", {"id": "x", "mode": "archive", "store": "work"}),
            ("memory_remember", {"title": "t", "body": "b", "supersedes": ["nope"], "store": "work"}),
        ]:
            message = await t.err(tool, **args)
            assert "store" in message or "supersedes" in message, (tool, message)
            assert tree(home) == before, f"{tool} laid out {sorted(set(tree(home)) - set(before))}"
        made = await t.remember("Work memory", "Kept in the work store: zeppelin.", store="work")
        assert (home / "work" / made["path"]).is_file()
        assert await t.recall_ids("zeppelin", store="work") == [made["id"]]


async def test_a_title_of_any_characters_is_recalled_by_itself(store: Path) -> None:
    # U+D7FC is unassigned: the index's tokenizer keeps it inside the word, Python's \w did not. "Straße"
    # (the long run, seed 3996702809): casefold made the query "strasse", the index holds "straße". Greek
    # with tonos, full-width letters, ligatures: `fold` strips or maps what SQLite's tokenizer keeps
    titles = ["\ud7fc0", "a\ud7fc0b", "x\u0301y", "\ud7b0z", "\uac00\ud7fc", "Straße", "GROẞE Welt"]
    titles += ["Ωμέγα", "ΐota", "ｆｕｌｌ", "ﬁnance", "Ελληνικά κείμενα"]
    async with stdio_tools(store) as t:
        made = {title: (await t.remember(title, "some body words"))["id"] for title in titles}
        for title, mem_id in made.items():
            assert mem_id in await t.recall_ids(title, limit=20), title


async def test_an_empty_body_is_refused_naming_body(store: Path) -> None:
    async with stdio_tools(store) as t:
        good = await t.remember("Kept", "A body.")
        before = canon_bytes(store)
        for body in ["", " ", "\n\t\n"]:
            assert "body: must not be empty" in await t.err("memory_remember", title="t", body=body)
            assert "body: must not be empty" in await t.err("memory_update", op="edit", id=good["id"], body=body)
            assert canon_bytes(store) == before
        assert "A body." in (await t.read(id=good["id"]))["text"]


async def test_a_long_run_of_one_character_is_remembered_in_seconds(store: Path) -> None:
    # the conflict gate's patterns backtracked over the rest of a run from each of its positions: 200,000
    # digits took about an hour, and the store stayed locked meanwhile
    async with stdio_tools(store) as t:
        for body in ["0" * 199_000, "ab1-c.d/ " * 20_000, "가" * 199_000, "a " * 99_000]:
            with anyio.fail_after(120):  # a hang detector, not a speed claim: each takes about a second
                made = await t.remember(f"long {body[:3]}", body)
            assert (await t.read(id=made["id"]))["id"] == made["id"]


async def test_ss_and_sharp_s_find_each_other(store: Path) -> None:
    # found beside the "Straße" finding: German writes one word both ways, and the index keeps each as written
    async with stdio_tools(store) as t:
        sharp = (await t.remember("Office on the Hauptstraße", "Second floor, left door."))["id"]
        swiss = (await t.remember("Depot in the Bahnhofstrasse", "Open from seven."))["id"]
        assert sharp in await t.recall_ids("Hauptstrasse")
        assert swiss in await t.recall_ids("Bahnhofstraße")
        assert sharp in await t.recall_ids("HAUPTSTRASSE")


async def test_compatibility_characters_in_stored_text_are_found_by_plain_words(store: Path) -> None:
    # text pasted from a PDF keeps its ligatures, CJK input often brings full-width Latin: the index held them
    # as written, so "finance" never met "ﬁnance" (the query fold maps them, SQLite's tokenizer does not)
    async with stdio_tools(store) as t:
        pdf = (await t.remember("Quarterly ﬁnance review", "The ｆｕｌｌ report is due on Friday."))["id"]
        plain = (await t.remember("Plain note", "Nothing about money here."))["id"]
        for query in ["finance", "FINANCE", "ﬁnance", "full report", "ｆｕｌｌ"]:
            found = await t.recall_ids(query)
            assert found and found[0] == pdf, query
            assert plain not in found, query
        text = (await t.read(id=pdf))["text"]
        assert "ﬁnance" in text and "ｆｕｌｌ" in text  # the canon and what is shown keep what was written
        result = await t.recall("finance")
        assert "ﬁnance" in str(result)


async def test_a_snake_case_word_is_found_as_typed(store: Path) -> None:
    # the fuzzer's "0_0" title: the planner dropped `_` from query words ("max_connections" became
    # "maxconnections"), which the index, splitting at `_`, never holds
    async with stdio_tools(store) as t:
        pool = (await t.remember("Pool size", "Set max_connections to 200 on the primary."))["id"]
        titled = (await t.remember("0_0", "postgres"))["id"]
        for query in ["max_connections", "MAX_CONNECTIONS", "max connections"]:
            assert (await t.recall_ids(query))[0] == pool, query
        assert titled in await t.recall_ids("0_0")
        assert (await t.recall("___"))["results"] == []  # underscores alone search nothing
