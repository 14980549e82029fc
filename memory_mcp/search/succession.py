"""The current belief first: supersede chains in a recall's order.

Ranking scores each memory on its own words, so a superseded memory that says what the query says ("Atlas
API deploys to Heroku") outranks the memory that replaced it ("runs on Kubernetes"), which may share no
word with the query. After ranking (keyword or hybrid) and before near-duplicate collapse, two rules:

- a memory is never placed above a memory that superseded it (directly or through a chain): each
  successor in the candidates moves up to just above the first memory of its chain that ranks higher;
- a superseded memory's current version (the chain's newest memory, when it is active and the recall's
  filters admit it) joins the results right above it when the query did not find it (`matched` false).

The rules hold over the whole ranked list, so any prefix of it (the limit) and any subset (collapse keeps
the earlier of two near-duplicates) obeys them too. Current versions are marked (`current_version_of`)
once the results are known. Links are read from both sides' files (`supersedes`, `superseded_by`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..domain.answers import RecallResult
from ..domain.vocabulary import State
from ..index import reads
from .planner import MEMORIES, Candidate, Plan
from .rank import UNLIMITED, DeferredLines, Pool, Ranked, SearchSettings, rank, result_key, split_key


@dataclass
class Succession:
    """What the reordering found, for marking the results: result keys throughout."""

    current: dict[str, set[str]] = field(default_factory=dict)  # superseded memory → its current versions
    brought_by: dict[str, str] = field(default_factory=dict)  # current version the query did not find → the finder

    def mark(self, results: Sequence[RecallResult]) -> None:
        """Set `current_version_of` (and `matched` false for those brought in) on the results shown."""
        if not self.current:
            return
        for head in results:
            key = result_key(head.scope, head.id)
            of = [r.id for r in results if key in self.current.get(result_key(r.scope, r.id), ())]
            if (finder := self.brought_by.get(key)) is not None:
                head.matched = False
                finder_id = split_key(finder)[1]
                if finder_id not in of:
                    of.insert(0, finder_id)
            head.current_version_of = of


def current_first(
    settings: SearchSettings, pools: list[Pool], ranked: Sequence[RecallResult], lines: DeferredLines
) -> tuple[Sequence[RecallResult], Succession]:
    """`ranked` with successors above the memories they superseded and current versions brought in."""
    keys = ranked.keys if isinstance(ranked, Ranked) else [result_key(r.scope, r.id) for r in ranked]
    at = {k: n for n, k in enumerate(keys)}
    later: dict[str, set[str]] = {}  # a candidate → every candidate or current version that superseded it
    found = Succession()
    extra: dict[str, Callable[[], RecallResult]] = {}
    for pool in pools:
        if pool.corpus is not MEMORIES:
            continue
        mine = [mem_id for scope, mem_id in map(split_key, keys) if scope == pool.scope]
        chains = _chains(pool, mine)
        if chains is None:
            continue
        reach, heads = chains
        wanted: dict[str, int] = {}  # current versions the query did not find: id → rowid
        for mem_id, successors in reach.items():
            key = result_key(pool.scope, mem_id)
            now = {result_key(pool.scope, h) for h in heads.get(mem_id, {})}
            if now:
                found.current[key] = now
            for h, rowid in heads.get(mem_id, {}).items():
                if result_key(pool.scope, h) not in at:
                    wanted[h] = rowid
            later[key] = {result_key(pool.scope, s) for s in successors} & (at.keys() | now)
        if wanted:
            plan = Plan(pool.plan.terms, pool.plan.legs, {rowid: Candidate(rowid) for rowid in wanted.values()})
            built = rank(settings, [Pool(pool.scope, pool.session, MEMORIES, plan, pool.filters)], UNLIMITED, lines)
            for n, key in enumerate(built.keys):
                extra[key] = _getter(built, n)
    if not any(later.values()):
        return ranked, Succession()
    order = _successors_first(keys, later, at)
    builders: list[Callable[[], RecallResult]] = []
    scores: list[float] = []
    for k in order:
        if k in at:
            builders.append(_getter(ranked, at[k]))
            scores.append(ranked.scores[at[k]] if isinstance(ranked, Ranked) else ranked[at[k]].score)
        else:
            builders.append(extra[k])
            scores.append(0.0)
    for n, k in enumerate(order):
        if k not in at and (finder := next((x for x in order[n + 1 :] if k in found.current.get(x, ())), None)):
            found.brought_by[k] = finder
    return Ranked(builders, scores, order), found


def _getter(seq: Sequence[RecallResult], n: int) -> Callable[[], RecallResult]:
    return lambda: seq[n]


def _chains(pool: Pool, ids: list[str]) -> tuple[dict[str, set[str]], dict[str, dict[str, int]]] | None:
    """For each of these memories that was superseded: every memory after it in its chain, and its current
    versions (id → rowid). None when none of them was superseded (the common case: one query)."""
    conn = pool.session.conn
    succ: dict[str, set[str]] = {}
    seen, frontier = set(ids), ids
    while frontier:
        step = []
        for old, new in reads.direct_successors(conn, frontier):
            if old != new:
                succ.setdefault(old, set()).add(new)
                if new not in seen:
                    seen.add(new)
                    step.append(new)
        frontier = step
    if not succ:
        return None
    later_ids = sorted({n for news in succ.values() for n in news})
    exists = reads.memory_states(conn, later_ids)
    where, params = pool.filters.sql() if pool.filters is not None else ("", [])
    admitted = reads.memory_states(conn, later_ids, where, params)
    succ = {old: {n for n in news if n in exists} for old, news in succ.items()}
    reach: dict[str, set[str]] = {}
    heads: dict[str, dict[str, int]] = {}
    for mem_id in ids:
        if not succ.get(mem_id):
            continue
        after: set[str] = set()
        todo = list(succ[mem_id])
        while todo:
            n = todo.pop()
            if n not in after:
                after.add(n)
                todo.extend(succ.get(n, ()))
        after.discard(mem_id)  # a cycle written by hand: nothing is its own successor
        reach[mem_id] = after
        heads[mem_id] = {
            h: admitted[h][0]
            for h in after
            if not succ.get(h) and h in admitted and admitted[h][1] == State.ACTIVE.value
        }
    return reach, heads


def _successors_first(keys: list[str], later: dict[str, set[str]], at: dict[str, int]) -> list[str]:
    """The keys in rank order, each preceded by whatever superseded it and is not placed yet (depth first:
    a chain's newest first); among those, found ones in rank order, then brought-in ones by id."""

    def children(k: str) -> list[str]:
        return sorted(later.get(k, ()), key=lambda c: (0, at[c], c) if c in at else (1, 0, c))

    out: list[str] = []
    done: set[str] = set()
    for start in keys:
        if start in done:
            continue
        stack = [(start, iter(children(start)))]
        open_ = {start}
        while stack:
            node, pending = stack[-1]
            nxt = next((c for c in pending if c not in done and c not in open_), None)
            if nxt is None:
                stack.pop()
                open_.discard(node)
                done.add(node)
                out.append(node)
            else:
                open_.add(nxt)
                stack.append((nxt, iter(children(nxt))))
    return out
