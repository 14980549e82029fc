"""Near-duplicate collapse: a result that restates a better-ranked one (same text, same body, word overlap,
or optionally cosine) is dropped, with the reason."""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..domain.answers import CollapsedResult, RecallResult
from ..domain.text import fold_case, folded_body
from ..domain.text import words as split_words
from ..index import reads
from ..index import vectors as vector_table
from ..index.vectors import cosine
from ..store.session import StoreSession
from .planner import MEMORIES
from .rank import Pool, Ranked, SearchSettings, result_key, split_key


def words(text: str) -> frozenset[str]:
    """The word set overlap compares: case folded only (`fold_case`), accents kept."""
    return frozenset(split_words(fold_case(text)))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    shared = len(a & b)  # |a ∪ b| = |a| + |b| - |a ∩ b|: the union set need not be built (the same float)
    return shared / (len(a) + len(b) - shared)


@dataclass
class DupCandidate:
    """One ranked result as duplicate detection sees it."""

    id: str
    same: str  # equality key: the memory's norm_hash (normalised title + body); unique for documents
    words: frozenset[str]
    vec: array | None = None  # unpacked once: collapse compares each result with every kept one
    body: str = ""  # the folded body when it has at least `min_words` words: the same body under two titles


@dataclass
class Collapse:
    kept: list[str] = field(default_factory=list)
    dropped: list[tuple[str, str, str]] = field(default_factory=list)  # (kept_id, dropped_id, reason)


def collapse(
    ranked: Sequence[DupCandidate],
    jaccard_min: float,
    cosine_min: float | None = None,
    want: int | None = None,
    min_words: int = 4,
) -> Collapse:
    """Walk the ranking best first; a result that restates one already kept is dropped, with the reason.

    Same statement: equal normalised text (`same`); or word-set Jaccard ≥ `jaccard_min` (both texts with at least
    `min_words` words, so "ok" and "ok!" are caught by equality, not by chance overlap of two words);
    or cosine ≥ `cosine_min` when both have vectors. Stops once `want` results are kept.
    """
    out = Collapse()
    kept: list[DupCandidate] = []
    for cand in ranked:
        if want is not None and len(kept) >= want:
            break
        reason, against = None, None
        for k in kept:
            if cand.same == k.same:
                reason, against = "same text", k
                break
            if cand.body and cand.body == k.body:  # one statement filed twice, e.g. a Korean and an English title
                reason, against = "same body", k
                break
            if min(len(cand.words), len(k.words)) >= min_words:
                j = jaccard(cand.words, k.words)
                if j >= jaccard_min:
                    reason, against = f"word overlap {j:.2f}", k
                    break
            if cosine_min is not None and cand.vec is not None and k.vec is not None:
                c = cosine(cand.vec, k.vec)
                if c >= cosine_min:
                    reason, against = f"cosine {c:.3f}", k
                    break
        if against is None:
            kept.append(cand)
            out.kept.append(cand.id)
        else:
            out.dropped.append((against.id, cand.id, reason or ""))
    return out


def collapse_ranked(
    settings: SearchSettings,
    pools: list[Pool],
    ranked: Sequence[RecallResult],
    limit: int,
    cosine_min: float | None,
) -> tuple[list[RecallResult], list[CollapsedResult]]:
    """The first `limit` results once near-duplicate memories (same statement twice, across scopes or
    reworded) are dropped in favour of the better-ranked one. Document chunks are never collapsed.

    `cosine_min` (hybrid with `semantic.collapse_cosine` below 1): a cosine that high also counts as the same
    statement; None (the default in both modes): equal text or word overlap only, so a mode never merges
    results the other would keep."""
    if settings.collapse_jaccard is None:
        return list(ranked[:limit]), []
    sessions = {p.scope: p.session for p in pools if p.corpus is MEMORIES}
    # compared by key and stored text: only the results kept are built (a result is a model, ~40 µs)
    keys = ranked.keys if isinstance(ranked, Ranked) else [result_key(r.scope, r.id) for r in ranked]
    window = limit + 5
    while True:
        head = keys[:window]
        cands = _dup_candidates(settings, sessions, head, cosine_min is not None)
        done = collapse(cands, settings.collapse_jaccard, cosine_min, want=limit)
        if len(done.kept) >= limit or window >= len(keys):
            break
        window *= 2
    at = {k: n for n, k in enumerate(head)}
    results = [ranked[at[k]] for k in done.kept]
    collapsed = [
        CollapsedResult(kept_id=split_key(k)[1], dropped_id=split_key(d)[1], reason=why) for k, d, why in done.dropped
    ]
    return results, collapsed


def _dup_candidates(
    settings: SearchSettings, sessions: dict[str, StoreSession], keys: list[str], with_vectors: bool
) -> list[DupCandidate]:
    """Each result key as collapse compares it; a key that is no stored memory (a document chunk, a row gone
    meanwhile: memory ids never hold the ':' of a chunk's `doc:` id) is unique, never collapsed."""
    by_scope: dict[str, list[str]] = {}
    for key in keys:
        scope, mem_id = split_key(key)
        by_scope.setdefault(scope, []).append(mem_id)
    texts: dict[tuple[str, str], tuple[str, str, str]] = {}
    for scope, s in sessions.items():
        ids = by_scope.get(scope, [])
        texts.update(((scope, mem_id), text) for mem_id, text in reads.texts_by_id(s.conn, ids).items())
    vecs: dict[tuple[str, str], bytes] = {}
    if with_vectors:
        for scope, s in sessions.items():
            hashes = [t[2] for (sc, _), t in texts.items() if sc == scope]
            got = vector_table.vectors_for(s.conn, settings.semantic.name, hashes)
            for (sc, mid), t in texts.items():
                if sc == scope and t[2] in got:
                    vecs[(sc, mid)] = got[t[2]]
    out = []
    for key in keys:
        scope, mem_id = split_key(key)
        t = texts.get((scope, mem_id))
        if t is None:
            out.append(DupCandidate(key, "\x00" + key, frozenset()))
            continue
        blob = vecs.get((scope, mem_id))
        vec = vector_table.unpack(blob) if blob is not None else None
        body = folded_body(t[1])
        out.append(DupCandidate(key, t[2], words(f"{t[0]}\n{t[1]}"), vec, body if len(body.split()) >= 4 else ""))
    return out
