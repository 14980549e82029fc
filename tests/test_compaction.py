"""Compaction candidates: active episodes neither updated nor recalled for 30+ days, grouped by entity.

Times are set the way they happen: `created`/`updated` in the files (as a person or an old server wrote
them), recall times by real recalls; a recall "40 days ago" is a real recall by a service whose clock
says so (`MemoryService(clock=...)`), which is the same code path as a recall today.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory_mcp.tools.limits import Limits
from memory_mcp.tools.service import MemoryService

from .helpers import Tools, write_file

pytestmark = pytest.mark.anyio

WORDS = ("ammonite", "basilisk", "cormorant", "dugong", "echidna")


def _episode(store: Path, n: int, *, created_days: float, updated_days: float) -> str:
    def ago(days: float) -> str:
        return (datetime.now(UTC) - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")

    mem_id = f"ep-{WORDS[n]}"
    write_file(
        store / "memories" / f"{mem_id}.md",
        f"---\nid: {mem_id}\ntype: episode\nstate: active\nentities: [billing]\ncreated: {ago(created_days)}\n"
        f"updated: {ago(updated_days)}\n---\n# Billing incident {WORDS[n]}\n\nThe {WORDS[n]} invoice run failed.\n",
    )
    return mem_id


def _candidates(service: MemoryService) -> set[str]:
    groups = service.status().compaction_candidates
    assert len(groups) <= 1 and all(g.entity == "billing" for g in groups)
    return set(groups[0].ids) if groups else set()


async def test_an_episode_edited_or_recalled_lately_is_not_a_candidate(mem_tools: Tools, store: Path) -> None:
    edited = _episode(store, 0, created_days=60, updated_days=2)
    old = [_episode(store, n, created_days=60, updated_days=60) for n in range(1, 5)]
    [group] = (await mem_tools.status())["compaction_candidates"]
    assert sorted(group["ids"]) == sorted(old) and edited not in group["ids"]  # created 60 days ago, edited 2
    assert "not updated or recalled for 30+ days" in group["suggestion"]
    assert await mem_tools.recall_ids(WORDS[1], limit=1) == [old[0]]  # recalled just now: in use
    [group] = (await mem_tools.status())["compaction_candidates"]
    assert sorted(group["ids"]) == sorted(old[1:])


def test_a_recall_40_days_ago_counts_as_not_recalled_and_20_days_ago_as_recalled(store: Path) -> None:
    ids = [_episode(store, n, created_days=90, updated_days=90) for n in range(4)]
    limits = Limits(compaction_min_group=2)

    def service_at(days_ago: float) -> MemoryService:
        moment = datetime.now(UTC) - timedelta(days=days_ago)
        return MemoryService(store, limits=limits, clock=lambda: moment)

    for days_ago, n in ((40, 0), (20, 1)):
        past = service_at(days_ago)
        try:
            assert [r.id for r in past.recall(WORDS[n], limit=1).results] == [ids[n]]
        finally:
            past.close()
    now = MemoryService(store, limits=limits)
    try:
        assert _candidates(now) == {ids[0], ids[2], ids[3]}  # recalled 40 days ago: a candidate again
        # the same store seen from 15 days ago: the 40-day-old recall was then only 25 days old
        then = service_at(15)
        try:
            assert _candidates(then) == {ids[2], ids[3]}
        finally:
            then.close()
        # the last recall time is index-only: a rebuild from readable .index/ keeps it
        now.reindex()
        assert _candidates(now) == {ids[0], ids[2], ids[3]}
        assert any("last recall times" in s for s in now.status().index.not_restored_by_rebuild)
    finally:
        now.close()
