"""memory_status: counts, index freshness, conflicts, compaction candidates."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta

from ..canon import files as canon
from ..domain import provenance
from ..domain.status_answers import (
    CompactionCandidate,
    DuplicatePair,
    ExpiredMemory,
    IndexFreshness,
    StatusAnswer,
)
from ..index import conflict_pairs as conflict_table
from ..index import db as ix
from ..index import reads
from ..index.ledger import unparseable_files
from ..store.documents import (
    source_status,
)
from ..store.session import StoreSession
from .context import (
    current_handoff,
    handoff_info,
    reviews_due,
)
from .state import ServiceState

NOT_RESTORED_BY_REBUILD = [
    "recall counts (heat) and last recall times when .index/ is deleted or unreadable "
    "(derived, index-only: compaction then counts every old episode as never recalled)"
]


def status(svc: ServiceState, store: str | None = None, scope: str | None = None) -> StatusAnswer:
    """One scope's health (default: the home scope, local when a project is bound)."""
    s = svc.scopes.session(scope, store)
    with s.transaction() as report:
        conn = s.conn
        by = {}
        for col in reads.COUNTED_COLUMNS:
            by[col] = reads.counts_by(conn, col)
        # review dates are local calendar days
        today = svc.clock().astimezone().date()
        review = reviews_due(conn, today)
        expired = [
            ExpiredMemory(id=r[0], title=r[1], path=r[2], valid_until=r[3])
            for r in reads.expired(conn, today.isoformat())
        ]
        handoff = current_handoff(conn)
        return StatusAnswer(
            scope=s.scope,
            scopes=svc.scopes.names,
            sources=source_status(conn, s.sources),
            store=s.store.name,
            root=str(s.store.root),
            total=sum(by["state"].values()),
            by_state=by["state"],
            by_type=by["type"],
            by_trust=by["trust"],
            by_origin=_origins(by["origin"]),
            handoff=handoff_info(s.scope, handoff) if handoff is not None else None,
            unresolved_conflicts=conflict_table.open_summaries(s.conn, s.scope),
            unresolved_conflicts_total=conflict_table.open_count(s.conn),
            review_due=review,
            expired=expired,
            compaction_candidates=_compaction(svc, s),
            unparseable=[u.model_copy(update={"scope": s.scope}) for u in unparseable_files(conn)],
            index=IndexFreshness(
                path=s.store.relative(s.store.db_path),
                size_bytes=ix.index_size(s.store.db_path),
                schema_version=ix.SCHEMA_VERSION,
                built_at=ix.meta_value(conn, "built_at"),
                last_reconcile=report,
                change_watch=s.change_watch,
                not_restored_by_rebuild=NOT_RESTORED_BY_REBUILD,
            ),
            duplicates=[DuplicatePair(kept_id=k, duplicate_id=d, title=t) for k, d, t in reads.duplicate_pairs(conn)],
        )


def _compaction(svc: ServiceState, s: StoreSession) -> list[CompactionCandidate]:
    """Active episodes neither updated (the file's `updated`) nor recalled (the index's last recall time)
    for `compaction.min_age_days`, grouped by a shared entity."""
    cutoff = canon.iso_utc(svc.clock() - timedelta(days=svc.limits.compaction_min_age_days))
    rows = reads.stale_episodes(s.conn, cutoff)
    groups: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for entity, mid, title, created in rows:
        groups[entity].append((mid, title, created))
    out = []
    for entity, items in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        if len(items) < svc.limits.compaction_min_group:
            continue
        out.append(
            CompactionCandidate(
                entity=entity,
                ids=[i[0] for i in items],
                titles=[i[1] for i in items],
                oldest=items[0][2],
                newest=items[-1][2],
                suggestion=(
                    f"distil these {len(items)} episodes about '{entity}' (not updated or recalled for "
                    f"{svc.limits.compaction_min_age_days}+ days) into one knowledge "
                    "memory that supersedes them (memory_remember type=knowledge supersedes=[...])"
                ),
            )
        )
    return out


def _origins(counts: dict[str | None, int]) -> dict[str, int]:
    """Memories per origin as answers show it (none recorded: "origin unknown"), most first."""
    out: dict[str, int] = {}
    for text, n in counts.items():
        key = provenance.shown(text)
        out[key] = out.get(key, 0) + n
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))
