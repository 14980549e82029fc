"""Dedupe, the conflict gate, pair-hash idempotence, resolution, and resolutions surviving a rebuild."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from .helpers import Tools, frontmatter, reconcile_of, write_file

pytestmark = pytest.mark.anyio

TABS = ("Alice wants tabs in atlas-web", "Alice Kim wants tabs for indentation in the atlas-web frontend code.")
SPACES = ("Alice wants 2-space indentation in atlas-web", "Alice Kim wants 2-space indentation in the atlas-web frontend code, not tabs.")  # fmt: skip


async def _dedupe_returns_the_original(tools: Tools, store: Path) -> None:
    first = await tools.remember("Staging runs in eu-west-1", "Staging runs in eu-west-1; production in us-east-1.")
    assert first["created"] is True
    again = await tools.remember("Staging runs in eu-west-1", "Staging runs in eu-west-1; production in us-east-1.")
    assert (again["created"], again["id"], again["path"]) == (False, first["id"], first["path"])
    assert again["deduplicated_state"] == "active"
    # case and whitespace differences are the same text
    loose = await tools.remember("staging RUNS in  eu-west-1", "Staging runs in eu-west-1;\nproduction in us-east-1.  ")
    assert (loose["created"], loose["id"]) == (False, first["id"])
    assert len(list((store / "memories").glob("*.md"))) == 1
    # an archived original is still the original, and its state is reported
    await tools.ok("memory_forget", id=first["id"], mode="archive")
    archived = await tools.remember("Staging runs in eu-west-1", "Staging runs in eu-west-1; production in us-east-1.")
    assert (archived["created"], archived["id"], archived["deduplicated_state"]) == (False, first["id"], "archived")
    # different text is a different memory
    other = await tools.remember("Staging runs in eu-west-2", "Staging moved to eu-west-2.")
    assert other["created"] is True and other["id"] != first["id"]
    assert len(list((store / "memories").glob("*.md"))) == 2
    # a deprecated original was retracted: saying it again is a new, visible memory, not a silent revival
    await tools.ok("memory_forget", id=first["id"], mode="deprecate", reason="staging moved")
    anew = await tools.remember("Staging runs in eu-west-1", "Staging runs in eu-west-1; production in us-east-1.")
    assert anew["created"] is True and anew["id"] != first["id"]
    assert frontmatter(store / first["path"])["state"] == "deprecated"
    found = await tools.recall_ids("staging eu-west-1 production")
    assert found[0] == anew["id"] and first["id"] not in found
    again = await tools.remember("Staging runs in eu-west-1", "Staging runs in eu-west-1; production in us-east-1.")
    assert (again["created"], again["id"], again["deduplicated_state"]) == (False, anew["id"], "active")


async def test_conflict_gate_records_surfaces_once_and_resolution_survives_rebuild(tools: Tools, store: Path) -> None:
    a = await tools.remember(*TABS, type="preference", entities=["alice-kim", "atlas-web"])
    assert a["conflicts"] == []
    b = await tools.remember(*SPACES, type="preference", entities=["atlas-web", "alice-kim"])
    assert b["created"] is True
    assert len(b["conflicts"]) == 1
    c = b["conflicts"][0]
    assert c["id"] == a["id"] and c["path"] == a["path"] and c["title"] == TABS[0]
    assert c["shared_entities"] == ["alice-kim", "atlas-web"]
    assert 0 <= c["days_apart"] < 0.01
    assert c["latest_wins_eligible"] is False  # the same day: contradicted, not replaced
    assert 0 < c["text_similarity"] <= 1
    pair = c["pair_hash"]
    assert len(pair) >= 8

    # recorded in the newer memory's file, nothing overwritten in the older one
    b_fm = frontmatter(store / b["path"])
    assert [(e["with"], e["status"]) for e in b_fm["conflicts"]] == [(a["id"], "open")]
    assert "conflicts" not in frontmatter(store / a["path"])
    assert frontmatter(store / a["path"])["state"] == "active"

    status = await tools.status()
    assert [(u["pair_hash"], {u["a_id"], u["b_id"]}) for u in status["unresolved_conflicts"]] == [
        (pair, {a["id"], b["id"]})
    ]
    recalled = await tools.recall("atlas-web indentation")
    assert [u["pair_hash"] for u in recalled["index"]["unresolved_conflicts"]] == [pair]
    history = (await tools.read(id=a["id"]))["conflicts"]
    assert [(h["pair_hash"], h["other_id"], h["status"]) for h in history] == [(pair, b["id"], "open")]

    # idempotence: editing either memory, or remembering the same text again, does not surface it again
    await tools.ok("memory_update", op="edit", id=b["id"], body=SPACES[1] + " Enforced by Prettier.")
    await tools.ok("memory_update", op="edit", id=a["id"], entities=["alice-kim", "atlas-web", "prettier"])
    again = await tools.remember(*TABS, type="preference", entities=["alice-kim", "atlas-web"])
    assert (again["created"], again["conflicts"]) == (False, [])
    b_fm = frontmatter(store / b["path"])
    assert len(b_fm["conflicts"]) == 1
    status = await tools.status()
    assert [u["pair_hash"] for u in status["unresolved_conflicts"]] == [pair]
    # a third neighbour is a new pair with each of them, never the old pair again
    third = await tools.remember(
        "Alice wants 4-space indentation in atlas-web",
        "Alice Kim now wants 4-space indentation in the atlas-web frontend code.",
        type="preference",
        entities=["alice-kim", "atlas-web"],
    )
    third_pairs = {x["pair_hash"] for x in third["conflicts"]}
    assert pair not in third_pairs
    assert {x["id"] for x in third["conflicts"]} == {a["id"], b["id"]}

    # resolving: bad input first, then keep_both with a note
    message = await tools.err(
        "memory_update", op="resolve_conflict", id=a["id"], pair_hash="0" * 16, resolution="keep_both"
    )
    assert "pair_hash" in message
    message = await tools.err(
        "memory_update", op="resolve_conflict", id=a["id"], pair_hash=pair, resolution="supersede", winner="nobody"
    )
    assert "winner" in message
    done = await tools.ok(
        "memory_update",
        op="resolve_conflict",
        id=a["id"],
        pair_hash=pair,
        resolution="keep_both",
        note="different repos",
    )
    assert b["id"] in done["changed"]
    entry = frontmatter(store / b["path"])["conflicts"][0]
    assert (entry["status"], entry["resolution"], entry["note"]) == ("resolved", "keep_both", "different repos")
    message = await tools.err(
        "memory_update", op="resolve_conflict", id=a["id"], pair_hash=pair, resolution="keep_both"
    )
    assert "already resolved" in message
    open_pairs = {u["pair_hash"] for u in (await tools.status())["unresolved_conflicts"]}
    assert pair not in open_pairs and open_pairs == third_pairs

    # supersede resolution: the winner supersedes the loser, which is archived
    loser_pair = next(x for x in third["conflicts"] if x["id"] == a["id"])["pair_hash"]
    await tools.ok(
        "memory_update",
        op="resolve_conflict",
        id=third["id"],
        pair_hash=loser_pair,
        resolution="supersede",
        winner=third["id"],
    )
    a_fm = frontmatter(store / a["path"])
    assert a_fm["state"] == "archived" and a_fm["superseded_by"] == [third["id"]]

    # the index is disposable: delete it, and the resolutions come back from the canon
    shutil.rmtree(store / ".index")
    after = await tools.status()
    assert after["index"]["last_reconcile"]["rebuilt"] is True
    still_open = {u["pair_hash"] for u in after["unresolved_conflicts"]}
    assert still_open == third_pairs - {loser_pair}
    assert pair not in still_open
    history = {h["pair_hash"]: h for h in (await tools.read(id=b["id"]))["conflicts"]}
    assert history[pair]["status"] == "resolved" and history[pair]["resolution"] == "keep_both"
    assert history[pair]["note"] == "different repos"
    recalled = await tools.recall("atlas-web indentation")
    assert reconcile_of(recalled)["rebuilt"] is False
    assert {u["pair_hash"] for u in recalled["index"]["unresolved_conflicts"]} == still_open
    # and a pair resolved before the rebuild is still never surfaced again
    again = await tools.remember(SPACES[0], SPACES[1] + " Enforced by Prettier.", type="preference")
    assert (again["created"], again["id"], again["conflicts"]) == (False, b["id"], [])


async def _latest_wins_only_for_time_varying_types_and_equal_or_higher_trust(tools: Tools) -> None:
    await tools.remember(
        "Deploy freeze on Fridays",
        "No production deploys on Fridays.",
        type="decision",
        trust="user-stated",
        entities=["deploy-policy"],
    )
    weaker = await tools.remember(
        "Deploy freeze on Fridays and Thursdays",
        "No production deploys on Fridays and Thursdays.",
        type="decision",
        trust="agent-inferred",
        entities=["deploy-policy"],
    )
    assert [c["latest_wins_eligible"] for c in weaker["conflicts"]] == [False]
    await tools.remember(
        "Incident: disk full on deploy server",
        "The deploy server disk filled up with old releases.",
        type="episode",
        entities=["deploy-server"],
    )
    episode = await tools.remember(
        "Incident: disk full on deploy server again",
        "The deploy server disk filled up with old releases again.",
        type="episode",
        entities=["deploy-server"],
    )
    # events do not contradict each other: a stored episode stays true, so it is never listed as a memory the new
    # one may contradict or replace (issue 42; before, it was listed as `related`)
    assert episode["conflicts"] == [] and episode["listed"] == []
    # a different type is not a neighbour at all
    fact = await tools.remember(
        "Deploy server disk is 40 GB", "The deploy server disk is 40 GB.", type="fact", entities=["deploy-server"]
    )
    assert fact["conflicts"] == []


async def _conflicts_written_by_hand_are_honoured(tools: Tools, store: Path) -> None:
    a = await tools.remember("Backups run nightly", "Postgres backups run nightly.", entities=["postgres"])
    b = await tools.remember(
        "Backups run hourly", "Postgres backups run hourly with WAL archiving.", entities=["redis"]
    )
    assert b["conflicts"] == []
    path = store / b["path"]
    text = path.read_text(encoding="utf-8")
    hand = text.replace(
        "---\n# ", f"conflicts:\n  - with: {a['id']}\n    status: open\n    detected: 2026-11-01\n---\n# ", 1
    )
    write_file(path, hand)
    pairs = [{u["a_id"], u["b_id"]} for u in (await tools.status())["unresolved_conflicts"]]
    assert pairs.count({a["id"], b["id"]}) == 1


async def test_dedupe_latest_wins_and_hand_written_conflicts(tools: Tools, store: Path) -> None:
    await _dedupe_returns_the_original(tools, store)
    await _latest_wins_only_for_time_varying_types_and_equal_or_higher_trust(tools)
    await _conflicts_written_by_hand_are_honoured(tools, store)


def _aged(mem_id: str, title: str, body: str, *, days: float, mem_type: str, trust: str, entity: str) -> str:
    when = (datetime.now(UTC) - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return (
        f"---\nid: {mem_id}\ntype: {mem_type}\nstate: active\ntrust: {trust}\nentities: [{entity}]\n"
        f"created: {when}\nupdated: {when}\n---\n# {title}\n\n{body}\n"
    )


@pytest.mark.parametrize(
    ("days", "mem_type", "older_trust", "newer_trust", "eligible"),
    [
        (10, "fact", "user-stated", "user-stated", True),  # replaced: more than a week apart, as trusted
        (10, "preference", "agent-inferred", "user-stated", True),  # the newer is more trusted
        (7.5, "decision", "imported", "imported", True),
        (6.5, "fact", "user-stated", "user-stated", False),  # the same week: contradicted, not replaced
        (10, "fact", "user-stated", "agent-inferred", False),  # the newer is less trusted
        (10, "knowledge", "user-stated", "user-stated", False),  # added to more often than replaced
        # (episodes never reach this question: the gate lists them as related, see test_conflict_gate.py)
    ],
)
async def test_latest_wins_needs_more_than_a_week_and_at_least_equal_trust(
    mem_tools: Tools, store: Path, days: float, mem_type: str, older_trust: str, newer_trust: str, eligible: bool
) -> None:
    write_file(
        store / "memories" / "older.md",
        _aged("older-one", "Build cache lives on the NAS", "The build cache for ci-runner lives on the NAS.",
              days=days, mem_type=mem_type, trust=older_trust, entity="ci-runner"),
    )  # fmt: skip
    newer = await mem_tools.remember(
        "Build cache lives in S3",
        "The build cache for ci-runner lives in S3 now, not on the NAS.",
        type=mem_type,
        trust=newer_trust,
        entities=["ci-runner"],
    )
    [c] = newer["conflicts"]
    assert c["id"] == "older-one" and abs(c["days_apart"] - days) < 0.01
    assert c["latest_wins_eligible"] is eligible
