"""The conflict gate: a new memory that likely contradicts or replaces an old one, told apart from neighbours.

Candidates are active memories of the same type that share an entity with the new one or share words
with it. Each is weighed with keyword evidence only (no model needed, see `assess`):

- the *attribute*: content words both statements use once shared entities, values and cue words are
  set aside ("session TTL", "code reviews"), as an overlap coefficient, and title similarity;
- the *value*: numbers, weekdays and names (capitalised words, entities only one side has) that
  differ between otherwise parallel statements ("24 hours" → "1 hour", "Heroku" → "ECS");
- *replacement cues* in the new text ("now", "instead of", "no longer", "이제", "대신", "ahora", "ya no");
- a negation present in only one of the two texts;
- the *subject*: statements opening on different people or things that the other never mentions
  ("Bob prefers pytest" vs "Alice wants tabs") are about different subjects.

A *conflict* is the same subject and the same attribute with a different value (or a replacement cue
naming a new value), or near-identical text. Everything else that shares an entity is only *related*.
Episodes record events and do not contradict each other. Each conflict carries its `reasons`.
Conflicts are recorded in the newer memory's frontmatter (`conflicts:`), so a pair is surfaced once
and its resolution survives an index rebuild; related memories are returned, never written.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache

from ..domain.models import ConflictCandidate, RelatedMemory
from ..domain.text import Term, fold, stem
from ..domain.vocabulary import Trust
from ..index import conflicts as conflict_table
from ..index import db as ix
from .planner import STOPWORDS, terms_of

NEAR_TEXT_SIMILARITY = 0.5
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
# Events happen; a second one does not contradict the first.
EVENT_TYPES = {"episode"}
# Content-word overlap (shared / smaller set) and title similarity at which two statements are parallel.
PARALLEL_OVERLAP = 0.5
PARALLEL_TITLE = 0.5

# Words that say nothing about which attribute a statement is about: function words, and verbs so
# generic that "X uses A" and "X uses B" share no attribute ("uses Tailwind" vs "uses Sentry").
_GENERIC = (
    frozenset(
        """use uses used using usa usan usar utiliza utilizan want wants wanted prefer prefers preferred like likes
    liked prefiere prefieren quiere quieren gusta run runs running corre corren need needs must should get gets
    have has make makes keep kept go goes its it's our we they also every ya mas más muy este esta esto estos estas
    ese esa eso hay está están ser sea todo todos pero sobre cada solo también nos mi tu a al del
    한 한다 하 하는 했다 했 것 수 등 및 있 있다 이다 된다 되 쓴 쓰 사용 선호 좋아""".split()
    )
    | STOPWORDS
)
# Replacement cues, folded (accents removed). Latin-script cues match whole words; Korean ones as substrings.
_CUES_LATIN = (
    "now",
    "instead of",
    "no longer",
    "not anymore",
    "anymore",
    "moved",
    "moves",
    "moving",
    "migrated",
    "migrates",
    "switched",
    "switches",
    "replaced",
    "replaces",
    "changed",
    "lowered",
    "raised",
    "increased",
    "reduced",
    "upgraded",
    "downgraded",
    "from now on",
    "ahora",
    "ya no",
    "en lugar de",
    "en vez de",
    "cambio",
    "cambiamos",
    "se migro",
    "migramos",
    "pasa a",
    "pasamos a",
    "dejo de",
    "sustituye",
    "reemplaza",
)
_CUES_KO = (
    "이제",
    "대신",
    "더 이상",
    "더이상",
    "바꿨",
    "바꾼",
    "바꾸",
    "변경",
    "옮겼",
    "옮긴",
    "이전했",
    "전환",
    "늘렸",
    "줄였",
    "올렸",
    "낮췄",
)
_CUE_WORDS = frozenset(w for cue in _CUES_LATIN for w in cue.split())
_CUE_RE = re.compile(r"\b(" + "|".join(re.escape(c) for c in sorted(_CUES_LATIN, key=len, reverse=True)) + r")\b")
_NEGATION_RE = re.compile(r"\b(not|never|no|don't|doesn't|isn't|aren't|won't|without|nunca|sin|tampoco)\b")
_NEGATION_KO = ("않", "없", "말고", "못 ")
_NUMBER = re.compile(r"\d+(?:[.:,]\d+)*")
# identifiers holding a digit are one value: "eu-west-1", "v2.3", "40gb", "2-space"
_CODE = re.compile(r"[a-z0-9]+(?:[-._/][a-z0-9]+)*")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9+#]*")
_WEEKDAYS = {
    **dict.fromkeys(("monday", "mondays", "lunes", "월요일"), "mon"),
    **dict.fromkeys(("tuesday", "tuesdays", "martes", "화요일"), "tue"),
    **dict.fromkeys(("wednesday", "wednesdays", "miercoles", "수요일"), "wed"),
    **dict.fromkeys(("thursday", "thursdays", "jueves", "목요일"), "thu"),
    **dict.fromkeys(("friday", "fridays", "viernes", "금요일"), "fri"),
    **dict.fromkeys(("saturday", "saturdays", "sabado", "sabados", "토요일"), "sat"),
    **dict.fromkeys(("sunday", "sundays", "domingo", "domingos", "일요일"), "sun"),
}
_KO_WEEKDAY = re.compile("[월화수목금토일]요일")
_WEEKDAY_RE = re.compile(r"(?<!\w)(" + "|".join(sorted(_WEEKDAYS, key=len, reverse=True)) + ")")


@dataclass(frozen=True)
class Statement:
    """What the gate compares: one memory's text, entities and type."""

    title: str
    body: str
    entities: tuple[str, ...]
    type: str

    @property
    def text(self) -> str:
        return f"{self.title}\n{self.body}"


@dataclass
class Assessment:
    """The gate's verdict on one pair, with the evidence for it."""

    conflict: bool
    reasons: list[str] = field(default_factory=list)
    text_similarity: float = 0.0


# Texts are analysed through small caches: the new memory's side is the same for every candidate.
@lru_cache(maxsize=4096)
def _terms(text: str) -> tuple[Term, ...]:
    return tuple(terms_of(text))


@lru_cache(maxsize=4096)
def _token_set(text: str) -> frozenset[str]:
    return frozenset(t.stem for t in _terms(text) if len(t.stem) >= 2)


def similarity(a: str, b: str) -> float:
    sa, sb = _token_set(a), _token_set(b)
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / len(sa | sb)


def entity_words(entities: tuple[str, ...] | list[str]) -> frozenset[str]:
    """The words of entity names ("alice-kim" → alice, kim, alice-kim): set aside from content words."""
    return _entity_words(tuple(entities))


@lru_cache(maxsize=4096)
def _entity_words(entities: tuple[str, ...]) -> frozenset[str]:
    out: set[str] = set()
    for e in entities:
        f = fold(e)
        out.add(f)
        out |= {w for w in re.split(r"[\W_]+", f) if w}
    return frozenset(out | {stem(w) for w in out})  # "atlas" is indexed as the stem "atla"


def content_words(text: str, entities: tuple[str, ...] | list[str] = ()) -> set[str]:
    """Stems that can name an attribute: no function words, generic verbs, cue words, entities or numbers."""
    return set(_content_list(text, entities))


def _content_list(text: str, entities: tuple[str, ...] | list[str] = ()) -> tuple[str, ...]:
    skip = entity_words(entities)
    return tuple(w for w in _content_words_of(text) if w not in skip)


@lru_cache(maxsize=4096)
def _content_words_of(text: str) -> tuple[str, ...]:
    out: list[str] = []
    for t in _terms(text):
        word = t.stem.lstrip("0123456789")  # "24시간" → 시간, "40gb" → gb: the unit is content, the number a value
        if len(word) < 2 and not re.search("[\uac00-\ud7a3]", word):
            continue
        if word in _GENERIC or word in _CUE_WORDS or t.text in _GENERIC or word.isdigit() or _KO_WEEKDAY.search(word):
            continue
        if any(cue in word for cue in _CUES_KO):
            continue
        if t.text in _WEEKDAYS or word in out:
            continue
        out.append(word)
    return tuple(out)


def subject_phrase(new_title: str, old_title: str, entities: tuple[str, ...]) -> set[str]:
    """The content words both titles open with ("배포 서버", "servicio facturacion"): the subject, not an attribute."""
    a, b = _content_list(new_title, entities), _content_list(old_title, entities)
    prefix: set[str] = set()
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        prefix.add(x)
    return prefix


@lru_cache(maxsize=4096)
def _values(text: str, entities: tuple[str, ...]) -> frozenset[str]:
    return frozenset(values_of(text, entities))


def values_of(text: str, entities: tuple[str, ...] | list[str] = ()) -> set[str]:
    """Numbers, weekdays and names in a text, plus its entities: what a parallel statement may change."""
    folded = fold(text)
    values = set(_NUMBER.findall(folded)) | {c for c in _CODE.findall(folded) if any(ch.isdigit() for ch in c)}
    values |= {_WEEKDAYS[m.group(1)] for m in _WEEKDAY_RE.finditer(folded)}
    for line in text.splitlines():
        for sentence in re.split(r"(?<=[.!?;:])\s+", line):
            for i, m in enumerate(_NAME.finditer(sentence)):
                word = m.group()
                # a name: mixed or upper case anywhere ("CircleCI", "ECS"), or capitalised inside a sentence
                if any(c.isupper() for c in word[1:]) or (word[0].isupper() and (i > 0 or m.start() > 0)):
                    values.add(fold(word))
    return values | {fold(e) for e in entities}


def replacement_cues(text: str) -> list[str]:
    """The replacement cues a new statement uses ("now", "instead of", "이제", "ya no"), in order."""
    folded = fold(text)
    found = [m.group(1) for m in _CUE_RE.finditer(folded)]
    found += [cue for cue in _CUES_KO if cue in folded]
    return list(dict.fromkeys(found))


def negated(text: str) -> bool:
    folded = fold(text)
    return bool(_NEGATION_RE.search(folded)) or any(n in folded for n in _NEGATION_KO)


def subject_of(title: str) -> str | None:
    """The first word of a title that is not a function word or cue: who or what it is about."""
    for t in terms_of(title):
        if t.stem not in STOPWORDS and t.stem not in _CUE_WORDS and not t.stem.isdigit():
            return t.stem
    return None


def overlap(a: set[str], b: set[str]) -> float:
    """Shared / the smaller set: a short statement inside a longer one overlaps fully."""
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def _mentions(words: set[str], subject: str) -> bool:
    return subject in words or any(w.startswith(subject) or subject.startswith(w) for w in words if len(w) >= 3)


@lru_cache(maxsize=4096)
def _all_words(s: Statement) -> frozenset[str]:
    terms = _terms(s.text)
    return frozenset({t.stem for t in terms} | {t.text for t in terms} | entity_words(s.entities))


def _names(entity: str, words: set[str]) -> bool:
    """Is the entity written in these words ("aws-ecs" as "AWS ECS")?"""
    parts = [w for w in re.split(r"[\W_]+", fold(entity)) if w]
    return fold(entity) in words or (len(parts) > 1 and set(parts) <= words)


def _is_number(value: str) -> bool:
    return value.replace(".", "").replace(":", "").replace(",", "").isdigit()


def assess(
    new: Statement,
    old: Statement,
    near_text: float = NEAR_TEXT_SIMILARITY,
    broad_entities: frozenset[str] = frozenset(),
) -> Assessment:
    """Does `new` contradict or replace `old`? Keyword evidence only; the reasons say which.

    `broad_entities` are carried by so many memories (a project name) that sharing one says little.
    """
    sim = similarity(new.text, old.text)
    if new.type in EVENT_TYPES or old.type in EVENT_TYPES:
        return Assessment(False, ["episodes record events; they do not contradict each other"], sim)
    new_all, old_all = _all_words(new), _all_words(old)
    new_subject, old_subject = subject_of(new.title), subject_of(old.title)
    if new_subject and old_subject and not _mentions(old_all, new_subject) and not _mentions(new_all, old_subject):
        return Assessment(False, [f"different subjects: {new_subject} / {old_subject}"], sim)

    shared_entities = set(new.entities) & set(old.entities)
    both = new.entities + old.entities
    new_words, old_words = content_words(new.text, both), content_words(old.text, both)
    shared = new_words & old_words
    opening = subject_phrase(new.title, old.title, both)  # shared only as the subject: not an attribute
    attribute = overlap(new_words - opening, old_words - opening)
    title_sim = _jaccard(content_words(new.title, new.entities), content_words(old.title, old.entities))
    new_title, old_title = content_words(new.title, both) - opening, content_words(old.title, both) - opening
    # a title restated in the other's text: "2-space indentation" vs a body about "tabs for indentation"
    title_in_text = max(
        len(new_title & old_words) / len(new_title) if new_title else 0.0,
        len(old_title & new_words) / len(old_title) if old_title else 0.0,
    )
    new_values, old_values = _values(new.text, new.entities), _values(old.text, old.entities)
    new_only, old_only = new_values - old_values, old_values - new_values
    cues = replacement_cues(new.text)

    near = sim >= near_text
    parallel = attribute >= PARALLEL_OVERLAP or title_sim >= PARALLEL_TITLE or title_in_text >= PARALLEL_TITLE
    changed = bool(new_only) and bool(old_values - shared_entities)
    negation = negated(new.text) != negated(old.text)
    reworded = bool(new_words - shared) and bool(old_words - shared)
    reasons = [f"near-identical text (similarity {sim:.2f})"] if near else []
    if parallel:
        reasons.append(f"same attribute: {', '.join(sorted(shared - opening)[:6]) or 'parallel titles'}")
    if changed:
        reasons.append(f"value changed: {', '.join(sorted(old_only)[:4]) or '-'} → {', '.join(sorted(new_only)[:4])}")
    elif parallel and not negation and reworded:
        reasons.append(
            f"differs: {', '.join(sorted(old_words - shared)[:3])} → {', '.join(sorted(new_words - shared)[:3])}"
        )
    if negation:
        reasons.append("only one of them is negated")
    if cues:
        reasons.append(f"replacement cue: {', '.join(cues[:3])}")
    if near or (parallel and (changed or negation or reworded)):
        return Assessment(True, reasons, sim)

    # not parallel in words, but a cue brings a new name in place of the old one ("moves to AWS ECS")
    specific = shared_entities - broad_entities
    new_text_words = _all_words(Statement(new.title, new.body, (), new.type))
    named_old = sorted(  # the new text names the old value ("instead of Vercel", "from pnpm to Yarn")
        e
        for e in old.entities
        if (e in specific or e not in new.entities)
        and _names(e, new_text_words)
        and not (new_subject and new_subject in entity_words([e]))
    )
    # or, about an entity few memories share, each names its own value (heroku → aws-ecs, eu-west-1 → eu-central-1)
    own_entities = bool(set(new.entities) - set(old.entities)) and bool(set(old.entities) - set(new.entities))
    own_names = any(not _is_number(v) for v in new_only) and any(not _is_number(v) for v in old_only)
    swapped = bool(specific) and (own_entities or own_names)
    if cues and (named_old or swapped):
        if named_old:
            reasons.append(f"names the old value: {', '.join(named_old[:3])}")
        return Assessment(True, reasons, sim)
    why_not = "parallel, but nothing differs" if parallel else f"another attribute (word overlap {attribute:.2f})"
    return Assessment(False, [why_not, *reasons], sim)


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
    return conflict_table.broad_entities(conn, entities, BROAD_ENTITY)


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
) -> Neighbours:
    """Active same-type memories sharing an entity or words, split into conflicts and related; recorded pairs skipped."""
    rowids: set[int] = set()
    if entities:
        rowids |= conflict_table.rowids_sharing_an_entity(conn, entities, mem_type)
    words = sorted(_token_set(f"{title} {body}"))[:64]
    if words:
        # stems as prefixes: the index holds "회의록은", the stem is "회의록"
        expr = " OR ".join('"' + w.replace('"', '""') + '"*' for w in words)
        rowids |= conflict_table.rowids_matching_words(conn, expr, mem_type)
    new = Statement(title=title, body=body, entities=tuple(entities), type=mem_type)
    broad = _broad_entities(conn, entities)
    found = Neighbours()
    recorded = conflict_table.recorded_pairs(conn)
    for mem in ix.memories_by_rowid(conn, sorted(rowids)).values():
        if mem.id == new_id or ix.pair_hash(mem.id, new_id) in recorded:
            continue
        shared = sorted(set(entities) & set(mem.entities))
        verdict = assess(new, statement_of(mem), near_text, broad)
        if not verdict.conflict:
            if shared:
                found.related.append(
                    RelatedMemory(
                        id=mem.id,
                        path=mem.path,
                        title=mem.title,
                        shared_entities=shared,
                        text_similarity=round(verdict.text_similarity, 3),
                        reasons=verdict.reasons,
                    )
                )
            continue
        sim = verdict.text_similarity
        found.conflicts.append(
            ConflictCandidate(
                id=mem.id,
                path=mem.path,
                title=mem.title,
                excerpt=mem.excerpt,
                type=mem.type,
                trust=mem.trust,
                shared_entities=shared,
                text_similarity=round(sim, 3),
                days_apart=_days_between(created, mem.created),
                latest_wins_eligible=latest_wins_eligible(mem_type, created, trust, mem.created, mem.trust),
                pair_hash=ix.pair_hash(mem.id, new_id),
                reasons=verdict.reasons,
            )
        )
    found.conflicts.sort(key=lambda c: (len(c.shared_entities), c.text_similarity), reverse=True)
    found.related.sort(key=lambda r: (len(r.shared_entities), r.text_similarity), reverse=True)
    found.conflicts, found.related = found.conflicts[:max_conflicts], found.related[:max_related]
    return found


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
