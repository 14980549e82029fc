"""The conflict gate's pairwise rules: does a new memory claim another value for one attribute of one subject?

Each pair (found by `search/conflict_candidates.py`) is judged from the two `Claim`s (`search/claims.py`) by `assess`:

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
   call" / "async reviews") is a *possible* conflict.

These are the rules' verdicts and the signals measured on the way (`PairSignals`); `conflict_weighing` weighs
them into one probability, and `conflicts` decides what is listed to the agent and what is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import get_args

from ..domain.models import NeighbourKind
from ..domain.text import fold, squeezed_folded
from ..domain.vocabulary import PERMISSION_AXIS, Trust
from ..index import db as ix
from .claims import Claim, Statement, claim_of, entity_words
from .conflict_limits import NEAR_TEXT_SIMILARITY
from .planner import terms_of

__all__ = ["NEAR_TEXT_SIMILARITY", "Assessment", "PairSignals", "Statement", "assess", "statement_of"]

TRUST_RANK = {
    Trust.AGENT_INFERRED.value: 0,
    Trust.IMPORTED.value: 1,
    Trust.USER_STATED.value: 2,
    Trust.CONFIRMED.value: 3,
}
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
# Keys whose values name *what* is measured, so sharing one is itself a shared attribute.
# value kinds a thing has one of at a time, so a change of one says "the same attribute" with no shared word
# ("Espresso is £2.40" / "Espresso £2.80 from today"; "Standup 9:30" / "Standup moved to Tuesdays")
_SCHEDULE_OR_PRICE = ("time", "weekday", "money", "temperature")
_SPECIFIC_KEYS = ("version:", "unit:", "channel", "percent", "count", *_SCHEDULE_OR_PRICE)
NEIGHBOUR_RELATED, NEIGHBOUR_DUPLICATE, NEIGHBOUR_POSSIBLE = get_args(NeighbourKind)

# The signals that say a value moved (`PairSignals.change_sign`): a pair the rules call agreeing with none of them is
# never written, however it is weighed (design 10: of such pairs weighed ≥ 0.52 out of set, 7 of 17 were conflicts;
# "Dana owns the search service" was written against "Search service is now owned by Dana")
CHANGE_SIGNS = (
    "cue",
    "typed_value_changed",
    "number_changed",
    "names_changed",
    "names_old_value",
    "stance_flip",
    "negation_differs",
)


@dataclass
class PairSignals:
    """What the learned weighing (`conflict_model`) reads of one pair that reached the attribute test.

    Every field is a number in 0..1 measured by `assess`, or among the new memory's neighbours by
    `judge_neighbours` (the fields below that comment); the field names are the model's feature names."""

    same_attribute: float = 0.0  # the rules found the same attribute (words, a value kind, or a cosine)
    overlap: float = 0.0  # attribute words of the smaller side found in the other
    title_overlap: float = 0.0  # the same over the titles alone
    shared_words: float = 0.0  # attribute words in common, capped at 4, over 4
    typed_value_changed: float = 0.0  # a value of a kind that says what it measures (time, version, unit...)
    number_changed: float = 0.0  # only bare numbers differ
    values_agree: float = 0.0
    stance_flip: float = 0.0
    stance_same: float = 0.0
    negation_differs: float = 0.0
    cue: float = 0.0  # the new statement says it changes something ("now", "switched", "이제", "ya no")
    names_changed: float = 0.0  # a name only the old one has against a name only the new one has
    names_old_value: float = 0.0  # the new text names the old value beside a new one, with a cue
    # an entity on both (how many memories carry it is not a signal: that grows with the store, which the
    # labelled cases, 2-6 memories each, cannot teach)
    shared_entity: float = 0.0
    tags_disjoint: float = 0.0  # both tagged, no tag in common
    two_languages: float = 0.0
    text_similarity: float = 0.0  # stem Jaccard of the two texts
    same_type: float = 0.0
    rule_conflict: float = 0.0  # the rules' verdict: sure enough to write
    rule_possible: float = 0.0  # the rules' verdict: a possible conflict
    rule_duplicate: float = 0.0  # the rules' verdict: an agreeing statement
    different_subjects: float = 0.0  # the titles open with two different subjects (two people, two services)
    different_scopes: float = 0.0  # staging / production, iOS / Android...
    value_kinds_shared: float = 0.0  # both give a value of one kind (a duration, a time, a version...), equal or not
    title_trigrams: float = 0.0  # character trigrams of the two titles, values masked (Jaccard)
    # among the new memory's neighbours (set by `judge_neighbours`):
    closest_attribute: float = 0.0  # the one same-entity neighbour sharing the most attribute words and values
    most_similar: float = 0.0  # the one neighbour with the highest text similarity
    most_similar_title: float = 0.0  # the one neighbour with the highest title trigram similarity
    similarity_margin: float = 0.0  # (its text similarity − the best other neighbour's + 1) / 2; 0.5 when alone
    closest_changed: float = 0.0  # the closest neighbour (text, title and entities together) and a change sign
    closest_unchanged: float = 0.0  # the closest neighbour and no change sign
    # with an embedder only (0 without): the cosine of the two titles, and how it ranks among the neighbours
    cosine: float = 0.0
    most_similar_cosine: float = 0.0  # the one neighbour with the highest cosine
    cosine_margin: float = 0.0  # (its cosine − the best other neighbour's + 1) / 2
    cosine_closest_changed: float = 0.0  # the highest cosine and a change sign

    @property
    def change_sign(self) -> bool:
        """Anything that says a value moved: a cue, a changed value or name, a flipped stance, a negation."""
        return any(getattr(self, name) for name in CHANGE_SIGNS)

    @property
    def closeness(self) -> float:
        return self.text_similarity + self.title_trigrams + 0.1 * self.shared_entity


@dataclass
class Assessment:
    """The gate's verdict on one pair, with the evidence for it."""

    conflict: bool
    reasons: list[str] = field(default_factory=list)
    text_similarity: float = 0.0
    kind: str = NEIGHBOUR_RELATED  # for a non-conflict: related, near-duplicate or possible-conflict
    judged: bool = False  # reached the attribute test (an embedder's cosine can still change the verdict)
    # what the learned weighing reads; None for a verdict the rules alone settle (episodes, the same body)
    signals: PairSignals | None = None
    # with an embedder: the new title's unit vector minus the old one's, which the semantic model projects on a
    # learnt direction (what e5 reads as "this one changes that one", in any of the three languages)
    title_shift: tuple[float, ...] | None = None
    # set by `conflict_weighing.weigh`: the learnt probability that the new statement contradicts the old one
    weight: float | None = None
    # with an embedder, when its cosine changed the verdict (a pair in two languages judged again): the verdict the
    # keywords alone gave, which alone decides whether the pair is written (`conflict_weighing.weigh`)
    keyword: Assessment | None = None
    # what found a memory sharing no entity with the new one, beside words: it names one of the new memory's entities,
    # or a tag of its in the other script sounds like one of the new memory's words (`conflict_candidates`)
    found_by: str | None = None


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


def matched(a: frozenset[str], b: frozenset[str]) -> set[str]:
    return {x for x in a if x in b or any(_same_word(x, y) for y in b)}


def attribute_words(claim: Claim, other: Claim) -> frozenset[str]:
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


def values_compared(new: Claim, old: Claim) -> tuple[list[str], list[str]]:
    """(keys whose values differ, keys whose values agree) over the keys both statements give.

    Equal sets agree; any other pair differs ("Mondays" → "Tuesdays and Thursdays", "월요일 대신 화요일")."""
    changed, agreed = [], []
    new_v, old_v = dict(new.values), dict(old.values)
    for key in sorted(set(new_v) & set(old_v)):
        (agreed if new_v[key] == old_v[key] else changed).append(key)
    if not changed and not agreed:  # a count with a unit on one side, bare on the other ("200 por minuto")
        nums = [
            {v for k, vs in side.items() if k.startswith("unit:") or k in ("number", "count", "money") for v in vs}
            for side in (new_v, old_v)
        ]
        if nums[0] and nums[1]:
            (agreed if nums[0] & nums[1] else changed).append("number")
    return changed, agreed


def _value_kinds(c: Claim) -> set[str]:
    """The kinds of value a statement gives ("unit:replica" → unit), bare numbers aside."""
    return {k.split(":", 1)[0] for k, _ in c.values} - {"number"}


def _title_trigrams(a: Claim, b: Claim) -> float:
    ta, tb = _masked_trigrams(a.masked), _masked_trigrams(b.masked)
    return len(ta & tb) / len(ta | tb) if ta and tb else 0.0


@lru_cache(maxsize=16384)
def _masked_trigrams(masked: str) -> frozenset[str]:
    text = " " + " ".join(fold(masked).split()) + " "
    return frozenset(text[i : i + 3] for i in range(len(text) - 2))


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
    skip |= _opening_names(new, old)
    named = sorted(n for n in old.said_names - skip if n in new.said or n in new.said_names)
    # the new value is written in the text too: a tag alone ("security-review") names no new value
    new_own = new.said_names - old.names - skip - set(named) or new.value("code") - old.value("code")  # S3, gp3
    return named if new_own else []


def _opening_names(new: Claim, old: Claim) -> set[str]:
    """Names both titles open with ("billing-api CI runs…" / "billing-api CI timeout…"): the subject, no value."""
    return set(new.title_opening) & set(old.title_opening)


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
    This is the rules' verdict, with the signals measured on the way (`signals`); `find_neighbours` weighs
    those (`weigh`) before anything is written.
    """
    verdict = _rules(new, old, near_text, broad_entities, cosine)
    if verdict.signals is not None:
        verdict.signals.rule_conflict = float(verdict.conflict)
        verdict.signals.rule_possible = float(verdict.kind == NEIGHBOUR_POSSIBLE)
        verdict.signals.rule_duplicate = float(verdict.kind == NEIGHBOUR_DUPLICATE)
    return verdict


def _rules(
    new: Statement,
    old: Statement,
    near_text: float,
    broad_entities: frozenset[str],
    cosine: float | None,
) -> Assessment:
    sim = similarity(new.text, old.text)
    if old.type in EVENT_TYPES:  # what happened stays true; a new event may make a stored fact untrue
        if new.type in EVENT_TYPES:
            return Assessment(False, ["episodes record events; they do not contradict each other"], sim)
        return Assessment(False, ["an episode records an event: it stays true"], sim)
    a, b = claim_of(new), claim_of(old)
    if squeezed_folded(new.body) == squeezed_folded(old.body) and len(new.body.split()) >= 4:
        return Assessment(False, ["near-duplicate: the same body under another title"], sim, NEIGHBOUR_DUPLICATE)
    # two subjects or two scopes: the rules call the pair related, but the words are still measured, so the
    # weighing can tell a first word misread as the subject ("Everyone now comes to the office") from two
    # people or two environments
    apart_subjects = _different_subjects(a, b)
    apart_scopes = None
    if a.scopes and b.scopes and not a.scopes & b.scopes:
        apart_scopes = f"different scopes: {', '.join(sorted(a.scopes))} / {', '.join(sorted(b.scopes))}"
    elif a.body_scopes and b.body_scopes and not a.body_scopes & b.body_scopes:
        # one title, two scopes in the bodies ("Staging DB host": staging in one body, production in the other)
        apart_scopes = f"different scopes: {', '.join(sorted(a.body_scopes))} / {', '.join(sorted(b.body_scopes))}"
    shared_entities = set(new.entities) & set(old.entities)
    new_words, old_words = attribute_words(a, b), attribute_words(b, a)
    opening = _opening(a, b)
    any_hit = matched(new_words, old_words)  # before the shared opening is set aside
    new_words, old_words = frozenset(new_words - opening), frozenset(old_words - opening)
    hit_new, hit_old = matched(new_words, old_words), matched(old_words, new_words)
    small = min(len(new_words), len(old_words))
    overlap = max(len(hit_new), len(hit_old)) / small if small else 0.0
    # the titles alone: a body's extra words ("waits before timing out") dilute the whole-text overlap
    new_title = frozenset(a.title_words) - b.entity_words - b.names - opening
    old_title = frozenset(b.title_words) - a.entity_words - a.names - opening
    small_title = min(len(new_title), len(old_title))
    title_overlap = len(matched(new_title, old_title)) / small_title if small_title else 0.0
    changed, agreed = values_compared(a, b)
    old_stance = dict(b.stances)
    new_sides: dict[str, set[str]] = {}
    for ax, side in a.stances:
        new_sides.setdefault(ax, set()).add(side)
    # a denial that names no side of the permission axis denies what the other grants ("No screen time on school
    # nights" / "Kids can have an hour of tablet time"; "does not accept crypto" / "Customers can pay in Bitcoin")
    if b.negated and PERMISSION_AXIS not in old_stance and new_sides.get(PERMISSION_AXIS) == {"+"}:
        old_stance[PERMISSION_AXIS] = "-"
    if a.negated and PERMISSION_AXIS not in new_sides and old_stance.get(PERMISSION_AXIS) == "+":
        new_sides[PERMISSION_AXIS] = {"-"}
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
        typed := [k for k in changed if k in specific and (a.cues or k in _SCHEDULE_OR_PRICE)]
    ):
        # an entity few memories carry and a value of one kind changed, in other words: with a replacement cue,
        # or a time of day, a weekday, a price or a temperature (one at a time) even without one
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
    typed_changed = [k for k in changed if k != "number"]
    signals = PairSignals(
        same_attribute=float(same),
        overlap=min(overlap, 1.0),
        title_overlap=min(title_overlap, 1.0),
        shared_words=min(len(any_hit), 4) / 4,
        typed_value_changed=float(bool(typed_changed)),
        number_changed=float(bool(changed) and not typed_changed),
        values_agree=float(bool(agreed)),
        stance_flip=float(bool(stance_flip)),
        stance_same=float(bool(stance_same)),
        negation_differs=float(negation),
        cue=float(bool(a.cues)),
        names_changed=float(bool(old_names and new_names)),
        names_old_value=float(bool(named_old)),
        shared_entity=float(bool(shared_entities)),
        tags_disjoint=float(bool(new.entities and old.entities and not shared_entities)),
        two_languages=float(a.lang != b.lang),
        text_similarity=sim,
        same_type=float(new.type == old.type),
        value_kinds_shared=float(bool(_value_kinds(a) & _value_kinds(b))),
        title_trigrams=_title_trigrams(a, b),
        different_subjects=float(apart_subjects is not None),
        different_scopes=float(apart_scopes is not None),
    )
    apart = apart_subjects or apart_scopes
    if apart:
        return Assessment(False, [apart, *reasons], sim, NEIGHBOUR_RELATED, False, signals)

    def verdict(conflict: bool, why: list[str], kind: str = NEIGHBOUR_RELATED) -> Assessment:
        return Assessment(conflict, why, sim, kind, True, signals)

    def suspected() -> Assessment:
        if _written(a, b, new, old, changed, stance_flip, named_old, bool(old_names and new_names)):
            return verdict(True, reasons)
        return verdict(False, ["possible conflict: evidence too weak to record", *reasons], NEIGHBOUR_POSSIBLE)

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
        return verdict(False, [f"another attribute (word overlap {overlap:.2f})", *reasons])
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
        return verdict(
            False, [f"near-duplicate: agrees on {', '.join((agreed + stance_same)[:3])}", *reasons], NEIGHBOUR_DUPLICATE
        )
    extra_new, extra_old = new_words - hit_new, old_words - hit_old
    if (extra_new or a.stances) and (extra_old or b.stances):
        reasons.append(f"differs: {', '.join(sorted(extra_old)[:3])} → {', '.join(sorted(extra_new)[:3])}")
        return verdict(False, ["possible conflict: same attribute, other words", *reasons], NEIGHBOUR_POSSIBLE)
    if sim >= 0.8:
        return verdict(False, [f"near-duplicate: near-identical text ({sim:.2f})", *reasons], NEIGHBOUR_DUPLICATE)
    return verdict(False, ["same attribute, nothing differs", *reasons])


def days_between(a: str, b: str) -> float:
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
    if mem_type not in TIME_VARYING_TYPES or days_between(a_created, b_created) <= LATEST_WINS_MIN_DAYS:
        return False
    (_, newer_trust), (_, older_trust) = sorted(((a_created, a_trust), (b_created, b_trust)), reverse=True)
    return TRUST_RANK.get(newer_trust, 0) >= TRUST_RANK.get(older_trust, 0)


def statement_of(mem: ix.IndexedMemory) -> Statement:
    return Statement(title=mem.title, body=mem.body, entities=tuple(mem.entities), type=mem.type)
