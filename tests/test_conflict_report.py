"""Every answer lists a few open conflicts and the total, never all of them (a store can hold thousands)."""

from __future__ import annotations

from pathlib import Path

from memory_mcp.store.session import REPORTED_CONFLICTS
from memory_mcp.tools.service import MemoryService

from .helpers import hand_memory, write_file


def test_answers_cap_the_conflict_list_and_give_the_total(tmp_path: Path) -> None:
    root = tmp_path / "store"
    service = MemoryService(root)
    try:
        # issue 42 writes only near-certain pairs, so the open pairs here are written by hand (a person's word), 12
        # pairs detected on 12 days
        for n in range(REPORTED_CONFLICTS + 2):
            day = f"2026-01-{n + 10:02d}T10:00:00Z"
            extra = f"conflicts:\n  - with: old{n:02d}\n    status: open\n    detected: {day}\n"
            write_file(root / "memories" / f"old{n:02d}.md", hand_memory(f"old{n:02d}", f"Retries {n}", "Old retries."))
            write_file(
                root / "memories" / f"new{n:02d}.md",
                hand_memory(f"new{n:02d}", f"Retries {n} now", "New retries.", extra=extra),
            )
        status = service.status()
        total = status.unresolved_conflicts_total
        assert total > REPORTED_CONFLICTS
        assert len(status.unresolved_conflicts) == total  # status lists them all (up to 200)
        answer = service.recall("retries")
        assert answer.index.unresolved_conflicts_total == total
        assert len(answer.index.unresolved_conflicts) == REPORTED_CONFLICTS
        oldest = sorted(status.unresolved_conflicts, key=lambda c: (c.detected, c.pair_hash))[:REPORTED_CONFLICTS]
        assert [c.pair_hash for c in answer.index.unresolved_conflicts] == [c.pair_hash for c in oldest]
        # the conflict history of a memory names the other memory's title
        first = answer.results[0]
        history = service.read(id=first.id).conflicts
        assert history and all(h.other_title and h.other_title.startswith("Retries") for h in history)
    finally:
        service.close()
