"""The current belief comes first (issue 28 §1), through the real stdio server and the real CLI: a memory never
ranks above one that superseded it, and a superseded result brings its current version in, marked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from memory_mcp.tools.service import MemoryService

from .helpers import EXAMPLE_STORE, Tools, frontmatter, hand_memory, result_text, settle, write_file
from .test_cli import run
from .test_semantic import FakeProvider

pytestmark = pytest.mark.anyio

# a chain whose current memory shares no word with the way the first one was put
HEROKU = ("Billing API deploys to Heroku", "The billing API is deployed to Heroku dynos with git push from CI.")
ECS = ("Billing API moves to AWS ECS", "The billing API moves off Heroku to ECS on Fargate; deploys register tasks.")
EKS = ("Payments service runs on Kubernetes", "Since June it runs on the shared EKS cluster via Argo CD and Helm.")
OTHER = [
    ("Deploy freeze in December", "No deploys to production in the last two weeks of December."),
    ("Heroku review apps for the web", "Pull requests of the web app get a Heroku review app."),
    ("Billing API owner", "Marco owns the billing API and its on-call."),
]


def successors_of(root: Path) -> dict[str, set[str]]:
    """id → every id that superseded it, directly or through a chain, as the files on disk say."""
    direct: dict[str, set[str]] = {}
    for path in (root / "memories").glob("*.md"):
        meta = frontmatter(path)
        direct.setdefault(meta["id"], set()).update(meta.get("superseded_by") or [])
        for old in meta.get("supersedes") or []:
            direct.setdefault(old, set()).add(meta["id"])
    out: dict[str, set[str]] = {}
    for start in direct:
        seen: set[str] = set()
        todo = list(direct[start])
        while todo:
            n = todo.pop()
            if n not in seen and n != start:
                seen.add(n)
                todo.extend(direct.get(n, ()))
        out[start] = seen
    return out


def assert_successors_first(root: Path, results: list[dict[str, Any]]) -> None:
    later = successors_of(root)
    ids = [r["id"] for r in results]
    for n, mem_id in enumerate(ids):
        above_its_successor = [i for i in ids[n + 1 :] if i in later.get(mem_id, ())]
        assert not above_its_successor, f"{mem_id} (#{n + 1}) ranks above {above_its_successor}, which superseded it"


async def _chain(t: Tools) -> dict[str, str]:
    ids = {}
    for key, (title, body) in (("heroku", HEROKU), ("ecs", ECS), ("eks", EKS)):
        ids[key] = (await t.remember(title, body, type="decision"))["id"]
    for title, body in OTHER:
        await t.remember(title, body)
    await t.ok("memory_update", op="supersede", id=ids["heroku"], by=ids["ecs"])
    await t.ok("memory_update", op="supersede", id=ids["ecs"], by=ids["eks"])
    return ids


async def test_a_superseded_result_brings_its_current_version_above_it(tools: Tools, store: Path) -> None:
    ids = await _chain(tools)
    raw = await tools.raw("memory_recall", query="billing api deploy heroku", limit=10)
    answer = raw.structured_content
    results = answer["results"]
    got = [r["id"] for r in results]
    assert ids["heroku"] in got and ids["eks"] in got
    eks = results[got.index(ids["eks"])]
    # the current version did not match: it was brought in right above the first of its chain that did
    assert eks["matched"] is False
    assert set(eks["current_version_of"]) == {ids["heroku"], ids["ecs"]}
    first_of_chain = min(got.index(ids["heroku"]), got.index(ids["ecs"]))
    assert got.index(ids["eks"]) == first_of_chain - 1 or got.index(ids["eks"]) < first_of_chain
    assert all(r["matched"] for r in results if r["id"] != ids["eks"])
    assert all(not r["current_version_of"] for r in results if r["id"] != ids["eks"])
    assert_successors_first(store, results)
    # the text the model reads says it too, pointing at the superseded results by rank
    text = result_text(raw)
    marks = {f"#{got.index(ids[k]) + 1}" for k in ("heroku", "ecs")}
    eks_line = next(line for line in text.splitlines() if line.startswith(f"{got.index(ids['eks']) + 1}. "))
    assert "current version of" in eks_line and all(m in eks_line for m in marks), text

    # the chain's order holds for every query that finds its members, whichever matches best
    for query in ("heroku dynos git push", "billing api ecs fargate", "billing api", "deploys"):
        found = await tools.recall(query, limit=20)
        assert_successors_first(store, found["results"])
        if ids["heroku"] in [r["id"] for r in found["results"]]:
            assert ids["eks"] in [r["id"] for r in found["results"]], query

    # a query only the current version matches: nothing else changes
    alone = await tools.recall("argo cd helm", limit=5)
    assert [r["id"] for r in alone["results"]] == [ids["eks"]]
    assert alone["results"][0]["matched"] is True and alone["results"][0]["current_version_of"] == []

    # the limit keeps the current version over the stale one
    one = await tools.recall("heroku dynos git push", limit=1)
    assert [r["id"] for r in one["results"]] == [ids["eks"]]
    assert one["results"][0]["current_version_of"] == [ids["heroku"]]


async def test_filters_and_states_decide_what_is_current(tools: Tools, store: Path) -> None:
    ids = await _chain(tools)
    # a recall of archived memories only is not given an active memory
    archived = await tools.recall("billing api heroku", state="archived", limit=10)
    assert {r["id"] for r in archived["results"]} == {ids["heroku"], ids["ecs"]}
    assert_successors_first(store, archived["results"])
    # nor is a recall about another type
    facts = await tools.recall("billing api heroku", type="fact", limit=10)
    assert ids["eks"] not in [r["id"] for r in facts["results"]]

    # a retracted newest memory is no current version: nothing is brought in
    await tools.ok("memory_forget", id=ids["eks"], mode="deprecate", reason="the EKS move was called off")
    found = await tools.recall("billing api heroku", limit=10)
    assert ids["eks"] not in [r["id"] for r in found["results"]]
    assert all(r["matched"] and not r["current_version_of"] for r in found["results"])
    assert_successors_first(store, found["results"])
    # shown with include_deprecated it still ranks above what it superseded, but is not "current"
    shown = await tools.recall("heroku kubernetes", limit=10, include_deprecated=True)
    got = [r["id"] for r in shown["results"]]
    assert got.index(ids["eks"]) < got.index(ids["ecs"]) < got.index(ids["heroku"])
    assert_successors_first(store, shown["results"])
    assert all(not r["current_version_of"] for r in shown["results"])


async def test_a_deprecated_memory_shown_brings_its_current_version(tools: Tools, store: Path) -> None:
    old = (await tools.remember("VPN client is Cisco AnyConnect", "Everyone connects with Cisco AnyConnect."))["id"]
    new = (await tools.remember("Remote access goes through Tailscale", "Install Tailscale and log in with SSO."))["id"]
    await tools.ok("memory_update", op="supersede", id=old, by=new)
    await tools.ok("memory_forget", id=old, mode="deprecate", reason="AnyConnect licence was wrong all along")
    hidden = await tools.recall("cisco anyconnect vpn")
    assert hidden["results"] == []
    shown = await tools.recall("cisco anyconnect vpn", include_deprecated=True)
    assert [r["id"] for r in shown["results"]] == [new, old]
    assert shown["results"][0]["matched"] is False
    assert shown["results"][0]["current_version_of"] == [old]
    assert shown["results"][1]["state"] == "deprecated"


async def test_links_written_by_hand_on_either_side_and_cycles(tools: Tools, store: Path) -> None:
    await tools.status()
    mem = store / "memories"
    # only the older file says it was superseded; only the newest file says what it supersedes
    write_file(mem / "a.md", hand_memory("HAND_A", "Standup at 9:30", "Daily standup is at 9:30 in room Tokyo.",
                                         state="archived", extra="superseded_by: [HAND_B]\n"))  # fmt: skip
    write_file(mem / "b.md", hand_memory("HAND_B", "Standup moved", "The daily meeting is now at ten, online.",
                                         state="archived"))  # fmt: skip
    write_file(mem / "c.md", hand_memory("HAND_C", "Team sync on Mondays", "We replaced the daily with a Monday sync.",
                                         extra="supersedes: [HAND_B]\n"))  # fmt: skip
    # a cycle typed by hand must not hang or drop results
    write_file(mem / "x.md", hand_memory("HAND_X", "Lunch order Tokyo", "Sushi on Fridays for room Tokyo.",
                                         extra="superseded_by: [HAND_Y]\n"))  # fmt: skip
    write_file(mem / "y.md", hand_memory("HAND_Y", "Lunch order", "Pizza on Fridays.",
                                         extra="superseded_by: [HAND_X]\n"))  # fmt: skip
    settle()
    found = await tools.recall("standup 9:30 room tokyo", limit=10)
    got = [r["id"] for r in found["results"]]
    assert got.index("HAND_C") < got.index("HAND_A")
    assert "HAND_X" in got
    c = found["results"][got.index("HAND_C")]
    assert c["matched"] is False and "HAND_A" in c["current_version_of"]
    assert_successors_first(store, [r for r in found["results"] if not r["id"].startswith("HAND_X")])


def test_cli_on_the_example_store(tmp_path: Path) -> None:
    root = tmp_path / "example"
    shutil.copytree(EXAMPLE_STORE, root)
    heroku, ecs, eks = "01JZ89NQQ0XZ8PVXEQZVA8HSG0", "01KC4J4HR0KCGDEMYMYE08NGF0", "01KT40PGS0DP83MSTJJC0987G3"
    for query in ("atlas api deploy", "atlas api heroku"):
        done = run(root, "recall", query, "--json")
        assert done.returncode == 0, done.stderr
        results = json.loads(done.stdout)["results"]
        got = [r["id"] for r in results]
        assert got.index(eks) < got.index(ecs) < got.index(heroku), (query, got)
        assert_successors_first(root, results)
    text = run(root, "recall", "atlas api heroku")
    first = text.stdout.splitlines()[0]
    assert first.startswith("1. Atlas API runs on Kubernetes (EKS) [current version of #"), text.stdout


def test_hybrid_mode_keeps_the_current_version_first(tmp_path: Path) -> None:
    root = tmp_path / "store"
    mem = root / "memories"
    write_file(mem / "old.md", hand_memory("PARK_OLD", "Where the automobile is", "The automobile is parked in the garage.",
                                           state="archived", extra="superseded_by: [PARK_NEW]\n"))  # fmt: skip
    write_file(mem / "new.md", hand_memory("PARK_NEW", "Parking moved", "It now stands at the office lot, level two.",
                                           extra="supersedes: [PARK_OLD]\n"))  # fmt: skip
    write_file(mem / "other.md", hand_memory("GARAGE_DOOR", "Garage door code", "The garage door code is 4711."))
    settle()
    service = MemoryService(root, embedder=FakeProvider())
    try:
        for mode in ("hybrid", "bm25"):
            found = service.recall("automobile garage", mode=mode, touch=False)
            assert found.mode == mode
            got = [r.id for r in found.results]
            assert got.index("PARK_NEW") == got.index("PARK_OLD") - 1, (mode, got)
            new = found.results[got.index("PARK_NEW")]
            assert new.matched is False and new.current_version_of == ["PARK_OLD"]
    finally:
        service.close()
