"""A thread's next memories after the best result.

A memory may continue another (`follows`: the message before it in a conversation, the step before it in a
procedure). The words of a question are often in the message a reply answers ("do you have any pets?"),
while the answer is in the reply ("we got another cat, Bailey"), which shares no word with the question. So
after ranking, current versions and collapse, the best result's next memories along `follows` (at most
`DEPTH`, each admitted by the recall's filters) are placed right after it, marked `continues` (the id they
follow), and `matched` false when the query had not found them; one the query ranked lower moves up. The
recall's limit holds: what the continuation pushes past it is left out. A store with no `follows` is
untouched (one indexed lookup).

Measured on LoCoMo at dialog granularity (bench/locomo_peer_protocol.py, docs/benchmarks.md): only the best
result's continuation, two deep, was chosen on the development half; the test half was scored once.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..domain.answers import RecallResult
from ..index import reads
from .planner import MEMORIES, Candidate, Plan
from .rank import UNLIMITED, DeferredLines, Pool, SearchSettings, rank, result_key

DEPTH = 2  # how many next memories follow the best result


def continue_best(
    settings: SearchSettings, pools: Sequence[Pool], results: list[RecallResult], limit: int, lines: DeferredLines
) -> list[RecallResult]:
    """`results` with the best result's next memories in its thread right after it, at most `limit` in all."""
    if not results or results[0].kind != "memory":
        return results
    best = results[0]
    pool = next((p for p in pools if p.corpus is MEMORIES and p.scope == best.scope), None)
    if pool is None:
        return results
    conn = pool.session.conn
    where, params = pool.filters.sql() if pool.filters is not None else ("", [])
    chain: list[tuple[int, str, str]] = []  # (rowid, id, the id it follows)
    seen = {best.id}
    previous = best.id
    while len(chain) < DEPTH and (found := reads.next_in_thread(conn, previous, where, params)) is not None:
        rowid, mem_id = found
        if mem_id in seen:
            break  # a thread that loops back on itself (a hand edit)
        chain.append((rowid, mem_id, previous))
        seen.add(mem_id)
        previous = mem_id
    if not chain:
        return results
    shown = {result_key(r.scope, r.id): r for r in results}
    missing = {rowid: Candidate(rowid) for rowid, mem_id, _ in chain if result_key(best.scope, mem_id) not in shown}
    built: dict[str, RecallResult] = {}
    if missing:
        plan = Plan(pool.plan.terms, pool.plan.legs, missing)
        ranked = rank(settings, [Pool(pool.scope, pool.session, MEMORIES, plan, pool.filters)], UNLIMITED, lines)
        built = {key: ranked[n] for n, key in enumerate(ranked.keys)}
    continuation = []
    for _, mem_id, follows in chain:
        key = result_key(best.scope, mem_id)
        r = shown.get(key) or built.get(key)
        if r is None:
            break  # the ranking would not build it: the thread is shown as far as it could be
        if key not in shown:
            r.matched = False
        r.continues = follows
        continuation.append(r)
    moved = {id(r) for r in continuation}
    rest = [r for r in results[1:] if id(r) not in moved]
    return [best, *continuation, *rest][:limit]
