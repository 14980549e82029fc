"""Many small cases through the in-process server (same tools, same validation, no process start):
bad arguments name the argument, edits never lose a write, links, sibling stores, the dictionary,
and concurrent calls."""

from __future__ import annotations

import hashlib
from pathlib import Path

import anyio
import pytest

from .helpers import Tools, frontmatter, hand_memory, settle, write_file

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    "args, says",
    [
        ({"title": "   ", "body": "x"}, "title"),
        ({"title": "t" * 201, "body": "x"}, "title"),
        ({"title": "ok", "body": "nul \x00 here"}, "body"),
        ({"title": "ok", "body": "x", "type": "rumour"}, "type"),
        ({"title": "ok", "body": "x", "trust": "gospel"}, "trust"),
        ({"title": "ok", "body": "x", "review_after": "next week"}, "review_after"),
        ({"title": "ok", "body": "x", "review_after": "2026-02-30"}, "review_after"),
        ({"title": "ok", "body": "x", "entities": [""]}, "entities"),
        ({"title": "ok", "body": "x", "entities": ["two\nlines"]}, "entities"),
        ({"title": "ok", "body": "x", "entities": ["e" * 101]}, "entities"),
        ({"title": "ok", "body": "x", "entities": [f"e{n}" for n in range(51)]}, "entities"),
        ({"title": "ok", "body": "x", "source": "a\nb"}, "source"),
        ({"title": "ok", "body": "x", "supersedes": ["no-such-id"]}, "supersedes"),
        ({"title": "ok", "body": "x", "store": "../elsewhere"}, "store"),
        ({"title": "ok", "body": "x", "store": "/tmp/abs"}, "store"),
    ],
)
async def test_remember_refuses_bad_arguments_by_name(mem_tools: Tools, store: Path, args: dict, says: str) -> None:
    message = await mem_tools.err("memory_remember", **args)
    assert says in message, message
    assert not list(store.parent.glob("*/memories/*.md")), "a refused remember wrote a file"


async def test_a_body_cannot_smuggle_frontmatter(mem_tools: Tools, store: Path) -> None:
    evil = "---\nid: hijacked\nstate: deprecated\n---\n# Fake title"
    made = await mem_tools.remember("Harmless title", evil)
    fm = frontmatter(store / made["path"])
    assert fm["id"] == made["id"] and fm["state"] == "active"
    got = await mem_tools.read(id=made["id"])
    assert "id: hijacked" in got["text"]
    assert "no memory" in await mem_tools.err("memory_read", id="hijacked")
    assert (await mem_tools.recall("Harmless"))["results"][0]["title"] == "Harmless title"


async def test_update_ops_and_their_errors(mem_tools: Tools, store: Path) -> None:
    t = mem_tools
    a = await t.remember("Grafana dashboards", "Dashboards for atlas-api latency live in Grafana.")
    b = await t.remember("Latency SLO", "The atlas-api p99 latency SLO is 300 ms.")
    path = store / a["path"]

    assert "op" in await t.err("memory_update", op="rename", id=a["id"])
    assert "no memory" in await t.err("memory_update", op="edit", id="missing", body="x")
    assert "edit" in await t.err("memory_update", op="edit", id=a["id"])
    assert "by" in await t.err("memory_update", op="supersede", id=a["id"])
    assert "state" in await t.err("memory_update", op="set_state", id=a["id"])
    assert "other_id" in await t.err("memory_update", op="link", id=a["id"])
    assert "itself" in await t.err("memory_update", op="link", id=a["id"], other_id=a["id"])
    assert "pair_hash" in await t.err("memory_update", op="resolve_conflict", id=a["id"])

    # edit keeps what it was not asked to change
    done = await t.ok(
        "memory_update", op="edit", id=a["id"], entities=["grafana", "atlas-api"], review_after="2027-03-01"
    )
    assert done["changed"] == [a["id"]]
    fm = frontmatter(path)
    assert fm["entities"] == ["grafana", "atlas-api"] and str(fm["review_after"]) == "2027-03-01"
    assert "Dashboards for atlas-api latency live in Grafana." in path.read_text(encoding="utf-8")
    await t.ok("memory_update", op="edit", id=a["id"], title="Grafana dashboards for atlas-api")
    assert (await t.recall("grafana"))["results"][0]["title"] == "Grafana dashboards for atlas-api"

    # expected_sha256: a write based on a stale read is refused and nothing is written
    stale = "0" * 64
    before = path.read_bytes()
    message = await t.err("memory_update", op="edit", id=a["id"], body="overwrite", expected_sha256=stale)
    assert "expected_sha256" in message and "nothing was written" in message
    assert path.read_bytes() == before
    fresh = hashlib.sha256(before).hexdigest()
    await t.ok(
        "memory_update", op="edit", id=a["id"], body="Dashboards moved to the SRE folder.", expected_sha256=fresh
    )
    assert "SRE folder" in path.read_text(encoding="utf-8")

    # link is symmetric and not repeated
    linked = await t.ok("memory_update", op="link", id=a["id"], other_id=b["id"])
    assert set(linked["changed"]) == {a["id"], b["id"]}
    assert frontmatter(path)["related"] == [b["id"]] and frontmatter(store / b["path"])["related"] == [a["id"]]
    assert "already linked" in await t.err("memory_update", op="link", id=b["id"], other_id=a["id"])


async def test_sibling_stores_are_separate(mem_tools: Tools, store: Path) -> None:
    home = await mem_tools.remember("Home store memory", "Lives in the default store: zeppelin.")
    work = await mem_tools.remember("Work store memory", "Lives in the work store: zeppelin.", store="work")
    assert (store / home["path"]).is_file()
    assert (store.parent / "work" / work["path"]).is_file()
    assert await mem_tools.recall_ids("zeppelin") == [home["id"]]
    assert await mem_tools.recall_ids("zeppelin", store="work") == [work["id"]]
    assert "no memory" in await mem_tools.err("memory_read", id=work["id"])
    status = await mem_tools.ok("memory_status", store="work")
    assert status["total"] == 1 and status["store"] == "work"


async def test_dictionary_aliases_normalise_entities_and_expand_queries(mem_tools: Tools, store: Path) -> None:
    await mem_tools.status()  # creates the layout
    write_file(store / "dictionary.md", "# Entities\n\n- kubernetes: container orchestration (aka: k8s, 쿠버네티스)\n")
    made = await mem_tools.remember(
        "Cluster upgrade window", "The cluster upgrade happens on Sundays.", entities=["K8s"]
    )
    assert frontmatter(store / made["path"])["entities"] == ["kubernetes"]
    assert made["id"] in await mem_tools.recall_ids("k8s upgrade")
    assert made["id"] in await mem_tools.recall_ids("쿠버네티스")
    assert made["id"] in await mem_tools.recall_ids("upgrade", entity="k8s")
    # a hand-written alias in a file is indexed under the canonical name too
    write_file(
        store / "memories" / "hand.md", "---\nid: hand-k8s\nentities: [k8s]\n---\n# Node pools\n\nTwo node pools.\n"
    )
    assert "hand-k8s" in await mem_tools.recall_ids("pools", entity="kubernetes")


async def test_concurrent_calls_are_safe(mem_tools: Tools, store: Path) -> None:
    made: list[dict] = []

    async def remember(n: int) -> None:
        made.append(await mem_tools.remember(f"Parallel memory {n}", f"Written concurrently, number {n}, about kites."))

    async def recall() -> None:
        await mem_tools.recall("kites")

    async with anyio.create_task_group() as tg:
        for n in range(16):
            tg.start_soon(remember, n)
            tg.start_soon(recall)
    assert len({m["id"] for m in made}) == 16
    assert len(list((store / "memories").glob("*.md"))) == 16
    settle()
    assert len(await mem_tools.recall_ids("kites")) == 16
    verify = await mem_tools.ok("memory_reindex", verify=True)
    assert verify["mismatches"] == [] and verify["memories"] == 16


async def test_status_reports_reviews_due_and_compaction_candidates(mem_tools: Tools, store: Path) -> None:
    due = await mem_tools.remember("Check the TLS expiry", "Certificates renew in March.", review_after="2020-01-01")
    await mem_tools.remember("Later review", "Not due for a long time.", review_after="2099-01-01")
    # three old episodes about one entity, never recalled: worth distilling
    for n, word in enumerate(("pager", "handover", "escalation")):
        text = hand_memory(
            f"ep-{n}", f"On-call week {n}", f"The {word} went badly.", type="episode", entities=["on-call"]
        )
        write_file(store / "memories" / f"episode-{n}.md", text)
    status = await mem_tools.status()
    assert [r["id"] for r in status["review_due"]] == [due["id"]]
    [group] = status["compaction_candidates"]
    assert group["entity"] == "on-call" and sorted(group["ids"]) == ["ep-0", "ep-1", "ep-2"]
    assert "supersedes" in group["suggestion"]
    # recalling one of them means it is still in use: the group falls below three
    assert await mem_tools.recall_ids("handover") == ["ep-1"]
    assert (await mem_tools.status())["compaction_candidates"] == []
    # an archived memory is not due for review
    await mem_tools.ok("memory_forget", id=due["id"], mode="archive")
    assert (await mem_tools.status())["review_due"] == []
