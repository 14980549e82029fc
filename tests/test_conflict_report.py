"""Every answer lists a few open conflicts and the total, never all of them (a store can hold thousands)."""

from __future__ import annotations

from pathlib import Path

from memory_mcp.store.session import REPORTED_CONFLICTS
from memory_mcp.tools.service import MemoryService


def test_answers_cap_the_conflict_list_and_give_the_total(tmp_path: Path) -> None:
    service = MemoryService(tmp_path / "store")
    try:
        for n in range(8):
            service.remember(
                f"Billing retries attempt {n}",
                f"The billing service retries failed charges {n + 2} times before giving up.",
                type="decision",
                entities=["billing-service"],
            )
        status = service.status()
        total = status.unresolved_conflicts_total
        assert total > REPORTED_CONFLICTS  # 8 same-type memories on one entity: many open pairs
        assert len(status.unresolved_conflicts) == total  # status lists them all (up to 200)
        answer = service.recall("billing retries")
        assert answer.index.unresolved_conflicts_total == total
        assert len(answer.index.unresolved_conflicts) == REPORTED_CONFLICTS
        oldest = sorted(status.unresolved_conflicts, key=lambda c: (c.detected, c.pair_hash))[:REPORTED_CONFLICTS]
        assert [c.pair_hash for c in answer.index.unresolved_conflicts] == [c.pair_hash for c in oldest]
        # the conflict history of a memory names the other memory's title
        first = answer.results[0]
        history = service.read(id=first.id).conflicts
        assert history and all(h.other_title and h.other_title.startswith("Billing retries") for h in history)
    finally:
        service.close()
