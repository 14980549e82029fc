"""What one statement claims, as the conflict gate compares it: subject, attribute, values, scope and stance.

"Search service is now owned by Dana" claims, about the subject *search service*, that the attribute
*owner* has the value *Dana*. Two statements conflict when they claim different values (or opposite
stances) for the same attribute of the same subject in the same scope; a number, a version or a name in a
statement about another attribute is not a changed value. This module reads one statement; the pair is
judged in `search/conflicts.py`.

- **values**: numbers with their unit (durations and sizes in base units, so "24 hours" = "1 day", and
  "two approvals" = "2 approvals"), versions of a named thing ("Elasticsearch 8.11"), times of day,
  weekdays, channels (#ops), identifiers with digits (eu-west-1), and names (capitalised inside a
  sentence, mixed case, the statement's own entities), each under a key that says what it measures;
- **attribute words**: the content words left when entity names, values, scope and stance words,
  function words, generic verbs and replacement cues are taken out, each mapped to its concept when the
  lexicon knows it ("owned" / "responsable" / "담당자" → owner), otherwise its stem;
- **scope** (staging, production…), **stances** (enabled/disabled, short/long, 존댓말/반말…), a negation,
  the replacement cues, the language and the subject (the first content word of the title).

Every word list comes from `domain/vocabulary.py` and every word goes through `domain/text.py`'s fold and
stem and the planner's `terms_of`, so the gate reads words exactly as the index does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ..domain import vocabulary as vocab
from ..domain.added_text import without_added_text
from ..domain.text import HANGUL, Term, fold, fold_case, stem
from ..domain.text import words as split_words
from .planner import STOPWORDS, terms_of


def _forms(word: str) -> set[str]:
    f = fold(word)
    s = stem(f)
    # a one-syllable Korean stem ("한도" → 한) would catch every word that starts with it
    return {f} if HANGUL.search(f) and len(s) < 2 else {f, s}


def _table(groups: dict) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, words in groups.items():
        for w in words.split():
            for form in _forms(w):
                out.setdefault(form, key)
    return out


_CONCEPT = _table(vocab.CONCEPTS)
_SCOPE = _table(vocab.STATEMENT_SCOPES)
_STANCE = _table(vocab.STANCES)
_PERMISSION = vocab.PERMISSION_AXIS
_WEEKDAY = _table(vocab.WEEKDAYS)
_WEEK = list(vocab.WEEKDAYS)
_DAY_OF = {**_WEEKDAY, **{w: day for day, words in vocab.WEEKDAYS_IN_RANGES.items() for w in words.split()}}
_DAY_WORDS = "|".join(re.escape(w) for w in sorted(_DAY_OF, key=len, reverse=True))
_RANGE_JOIN = "|".join(
    re.escape(j) if not j.isalpha() else rf"\b{j}\b"
    for j in sorted(vocab.WEEKDAY_RANGE_JOINS.split(), key=len, reverse=True)
)
# "Tue-Thu", "Monday through Friday", "lunes hasta viernes", "월~금": every day from the first to the last
_WEEKDAY_RANGE = re.compile(rf"(?<![\w])({_DAY_WORDS})\s*(?:{_RANGE_JOIN})\s*({_DAY_WORDS})(?![a-z])")
_DURATION = _table(vocab.DURATION_UNITS)
_SIZE = _table(vocab.SIZE_UNITS)
_VALUE_WORD = {
    form: (cls, value)
    for cls, values in vocab.VALUE_WORDS.items()
    for value, words in values.items()
    for w in words.split()
    for form in _forms(w)
}
_PHRASES = {fold(k): fold(v) for k, v in vocab.STANCE_PHRASES.items()}
_PHRASE_RE = re.compile(
    r"(?<!\w)(" + "|".join(re.escape(p) for p in sorted(_PHRASES, key=len, reverse=True)) + r")(?!\w)"
)
_SUBJECT_CONCEPTS = vocab.SUBJECT_CONCEPTS
_NUMBER_WORD = {fold(w): n for n, words in vocab.NUMBER_WORDS.items() for w in words.split()}
_GENERIC = frozenset(f for w in vocab.GENERIC_WORDS for f in _forms(w)) | STOPWORDS
_CUES = tuple(fold(c.strip()) for c in vocab.REPLACEMENT_CUES.split("|") if c.strip())
_CUES_LATIN = tuple(c for c in _CUES if not HANGUL.search(c))
_CUES_KO = tuple(c for c in _CUES if HANGUL.search(c))
_CUE_WORDS = frozenset(w for c in _CUES_LATIN for w in c.split())
_CUE_RE = re.compile(r"\b(" + "|".join(re.escape(c) for c in sorted(_CUES_LATIN, key=len, reverse=True)) + r")\b")
_NEGATIONS = [fold(n) for n in vocab.NEGATIONS.split("|")]
_NEGATION_RE = re.compile(r"\b(" + "|".join(re.escape(n) for n in _NEGATIONS if not HANGUL.search(n)) + r")\b")
_NEGATION_KO = tuple(n for n in _NEGATIONS if HANGUL.search(n))
_NUMBER_WORD_RE = re.compile(r"\b(" + "|".join(map(re.escape, _NUMBER_WORD)) + r")\b")
# a number and the word right after it: "24 hours", "3 replicas", "40gb", "5회로", "200 por"
_QUANTITY = re.compile(r"(?<![\w.])(\d+(?:[.,]\d+)*)\s*(%|[^\W\d_]+)?")
_TIME = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)|\b(\d{1,2}):(\d{2})\b")
# the spaces belong to 오전/오후 (`(오전|오후)?\s*` tried a long run of spaces from each of its positions: quadratic)
_TIME_KO = re.compile(r"(?:(오전|오후)\s*)?(\d{1,2})시(?!간)(?:\s*(\d{1,2})분)?")
_TIME_ES = re.compile(r"\ba las (\d{1,2})(?::(\d{2}))?")
# each pattern that starts with a run of letters or digits starts only where such a run does (the lookbehind):
# tried at every position of a long run, it backtracked over the rest of it each time, so a body of 200,000
# digits took an hour (quadratic; found by the fuzzer); the matches are the same
_CODE = re.compile(r"(?<![a-z0-9])(?:[a-z0-9]+(?:[-._/][a-z0-9]+)+|[a-z]+\d[a-z0-9]*|\d+[a-z]+\d[a-z0-9]*)")
_CHANNEL = re.compile(r"#[\w-]+")
# host names, URLs and paths: "staging.atlas.dev", "https://x.y/z", "/var/log/deploy"
_ADDRESS = re.compile(
    r"(?<![a-z0-9-])(?:[a-z][a-z0-9+.-]{0,30}://)?[a-z0-9-]+(?:\.[a-z0-9-]+)+(?:/[\w./-]*)?|(?<![\w/])/[\w.-]+(?:/[\w.-]+)+"
)
_TLDS = frozenset("com org net io dev app co ai cloud internal local".split())
_ORDINAL = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th|º|ª)\b")
_HALF = re.compile(r"\bhalf an?\s+|\bmedia\s+|\bmedio\s+")
_ONE = re.compile(
    r"\b(?:a|an|one|un|una)\s+(?=(?:"
    + "|".join(
        re.escape(fold(w)) for words in vocab.DURATION_UNITS.values() for w in words.split() if not HANGUL.search(w)
    )
    + r")\b)"
)
_AMOUNT = r"\d+(?:[.,]\d+)*+"  # possessive, and a match starts only where a number does (below): linear
_SIGNS = "".join(re.escape(x) for x in vocab.CURRENCY_SIGNS.split())
_CURRENCY = "|".join(re.escape(fold(w)) for w in sorted(vocab.CURRENCY_WORDS.split(), key=len, reverse=True))
_PRICE_PERIOD = (
    r"(?:\s*(?:/|\b(?:"
    + "|".join(re.escape(fold(w)) for w in vocab.PRICE_PER.split() if w != "/")
    + r")\s+)(?:"
    + "|".join(re.escape(fold(w)) for w in sorted(vocab.PRICE_PERIODS.split(), key=len, reverse=True))
    + r")(?![a-z]))?"
)
# "$15.49/mo", "£2.80", "12,50 €", "13.90 euros al mes", "2,400원", "3만원", "1.5k USD": the amount (k, 만 multiply)
_MONEY = re.compile(
    rf"(?<![\w.,])(?:[{_SIGNS}]\s?({_AMOUNT})(k|만)?|({_AMOUNT})(k|만)?\s?(?:[{_SIGNS}]|(?:{_CURRENCY})(?![a-z])))"
    + _PRICE_PERIOD
)
_DEGREES = "|".join(re.escape(fold(w)) for w in vocab.DEGREES.split())
_TEMPERATURE = re.compile(rf"(?<![\w.])(-?\d+(?:[.,]\d+)?)\s?(?:{_DEGREES})\s?(?:celsius|fahrenheit|c|f)?(?![a-z])")
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+")
_KILO = re.compile(r"\d+(?:\.\d+)?k")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9+#]*")
_ES_MARKS = frozenset("el la los las del de que es son por para con se y su al lo una un".split())
# not "a": a Spanish preposition as often as an English article ("Cultura cierra a las 20:00" read as English)
_EN_MARKS = frozenset("the is are of to in on for with and an by at it".split())
_KO_COUNTERS = ("회", "번", "개", "명", "대", "건", "줄", "자")


@dataclass(frozen=True)
class Statement:
    """What the gate compares: one memory's text, entities and type."""

    title: str
    body: str
    entities: tuple[str, ...]
    type: str

    @property
    def text(self) -> str:
        """Title and body, without the text an importer added (`domain/added_text.py`): never evidence."""
        body = without_added_text(self.body)
        return self.title if body.strip() in ("", self.title.strip()) else f"{self.title}\n{body}"


@dataclass(frozen=True)
class Claim:
    """One statement read for the gate (see the module docstring)."""

    lang: str  # ko, es or en
    subject: str | None
    title_words: tuple[str, ...]  # attribute words of the title, in order (the shared opening is the subject)
    words: frozenset[str]  # attribute words of the whole text
    values: tuple[tuple[str, frozenset[str]], ...]  # (key, values) sorted by key
    names: frozenset[str]  # names and own entities (folded)
    scopes: frozenset[str]
    stances: tuple[tuple[str, str], ...]  # (axis, side)
    negated: bool
    cues: tuple[str, ...]
    mentions: frozenset[str]  # every folded word and stem of the text and its entity words
    said: frozenset[str]  # every folded word and stem of the text itself (not its entity tags)
    said_names: frozenset[str]  # names written in the text, or tags one of whose words it writes
    entity_words: frozenset[str]
    masked: str  # the title with its values replaced by a placeholder (what an embedder compares)
    title_opening: tuple[str, ...] = ()  # the title's first three folded words (where its subject is written)
    # every scope the body names, its title aside ("Staging DB host" whose body says production: issue 42)
    body_scopes: frozenset[str] = frozenset()

    def value(self, key: str) -> frozenset[str]:
        return dict(self.values).get(key, frozenset())


@lru_cache(maxsize=256)
def concept_words(name: str) -> frozenset[str]:
    """Every folded, stemmed word the lexicon gives a concept (owner → owner, owned, responsable, 담당자…)."""
    return frozenset(w for w, c in _CONCEPT.items() if c == name and len(w) >= 2)


def weekday_words() -> frozenset[str]:
    """Each weekday's name in every language the vocabulary knows ("friday", "viernes", "금요일")."""
    return frozenset(
        fold(w) for words in vocab.WEEKDAYS.values() for w in words.split() if len(w) > 4 or HANGUL.search(w)
    )


def is_function_word(t: Term) -> bool:
    """A function word, generic verb, replacement cue or number: no help in finding the same attribute."""
    return t.text in _GENERIC or t.stem in _GENERIC or t.text in _CUE_WORDS or t.stem.isdigit() or len(t.stem) < 2


def concept(word: str) -> str | None:
    """The attribute a word names ("owned", "responsable", "담당자" → owner), or None."""
    return _lookup(_CONCEPT, word)  # type: ignore[return-value]


def _lookup(table: dict[str, object], word: str) -> object | None:
    if word in table:
        return table[word]
    if HANGUL.search(word):  # Korean endings the light stemmer keeps: 맡는다, 반말로, 비활성화했다
        for end in range(len(word) - 1, 1, -1):
            if word[:end] in table:
                return table[word[:end]]
    return None


def entity_words(entities: tuple[str, ...]) -> frozenset[str]:
    """The words of entity names ("search-service" → search, service, search-service) and their concepts."""
    return _entity_words(tuple(entities))


@lru_cache(maxsize=8192)
def _entity_words(entities: tuple[str, ...]) -> frozenset[str]:
    out: set[str] = set()
    for e in entities:
        f = fold(e)
        out.add(f)
        out |= {w for w in re.split(r"[\W_]+", f) if w}
    out |= {stem(w) for w in out}
    return frozenset(out | {c for w in out if (c := concept(w))})


def language(text: str) -> str:
    if HANGUL.search(text):
        return "ko"
    folded = fold(text)
    found = split_words(folded)
    es = sum(w in _ES_MARKS for w in found) + 2 * len(re.findall("[ñ¿¡]", fold_case(text)))
    es += len(re.findall("[áéíóú]", fold_case(text)))
    en = sum(w in _EN_MARKS for w in found)
    return "es" if es > en else "en"


def replacement_cues(text: str) -> list[str]:
    """The replacement cues a statement uses ("now", "instead of", "이제", "ya no"), in order."""
    folded = fold(text)
    found = [m.group(1) for m in _CUE_RE.finditer(folded)]
    found += [cue for cue in _CUES_KO if cue in folded]
    return list(dict.fromkeys(found))


def negated(text: str) -> bool:
    folded = fold(text)
    return bool(_NEGATION_RE.search(folded)) or any(n in folded for n in _NEGATION_KO)


def _number(text: str) -> float | None:
    if _THOUSANDS.fullmatch(text):  # "1,500 requests": a thousands separator (a decimal comma has 1-2 digits)
        return float(text.replace(",", ""))
    try:
        return float(text.replace(",", ".")) if text.count(",") <= 1 and "." not in text else float(text)
    except ValueError:
        return None


def _fmt(x: float) -> str:
    return f"{x:g}"


def _unit_of(unit: str) -> tuple[str, float] | None:
    """("duration", seconds) or ("size", bytes) for a unit word, else None."""
    for dim, table in (("duration", _DURATION), ("size", _SIZE)):
        if HANGUL.search(unit):  # "초로", "시간이다": the unit opens the word
            hit = next((table[unit[:end]] for end in range(len(unit), 0, -1) if unit[:end] in table), None)
        else:
            hit = table.get(unit) or table.get(stem(unit))
        if hit is not None:
            return dim, float(hit)  # type: ignore[arg-type]
    return None


def _names_in(text: str) -> list[str]:
    """Capitalised inside a sentence, mixed case or all caps: "Dana", "CircleCI", "ECS"."""
    out = []
    for line in text.splitlines():
        for sentence in re.split(r"(?<=[.!?;:])\s+", line):
            for i, m in enumerate(_NAME.finditer(sentence)):
                w = m.group()
                if any(c.isupper() for c in w[1:]) or (w[0].isupper() and (i > 0 or m.start() > 0)):
                    out.append(fold(w))
    return out


def _values(text: str, entities: tuple[str, ...]) -> tuple[dict[str, set[str]], set[str], set[str], str]:
    """(key → values, names, the words the values are written with, the folded text with its times,
    channels and identifiers blanked out)."""
    folded = fold(text)
    keyed: dict[str, set[str]] = {}
    spent: set[str] = set()  # words that are part of a value, not of the attribute

    def add(key: str, value: str, *words: str) -> None:
        keyed.setdefault(key, set()).add(value)
        spent.update(fold(w) for w in words if w)

    def time(m: re.Match[str]) -> str:
        if m.group(3):
            h = int(m.group(1)) % 12 + (12 if m.group(3).startswith("p") else 0)
            add("time", f"{h:02d}:{m.group(2) or '00'}")
        else:
            add("time", f"{int(m.group(4)):02d}:{m.group(5)}")
        return " "

    def time_ko(m: re.Match[str]) -> str:
        add("time", f"{int(m.group(2)) % 12 + (12 if m.group(1) == '오후' else 0):02d}:{int(m.group(3) or 0):02d}")
        return " "

    def time_es(m: re.Match[str]) -> str:
        add("time", f"{int(m.group(1)):02d}:{m.group(2) or '00'}")
        return " "

    def channel(m: re.Match[str]) -> str:
        add("channel", m.group())
        return " "

    def code(m: re.Match[str]) -> str:
        c = m.group()
        if _KILO.fullmatch(c):  # "1.5k": a number, read below
            return c
        if any(ch.isdigit() for ch in c) and any(ch.isalpha() for ch in c):
            add("code", c)
            # "2-space" also takes a side on indentation, "v2" does not
            return " " + " ".join(p for p in re.split(r"[-._/]", c) if p in _STANCE) + " "
        return c

    def address(m: re.Match[str]) -> str:
        a = m.group()
        if re.fullmatch(r"[\d.]+", a) or (
            "/" not in a and a.count(".") < 2 and a.rsplit(".", 1)[-1] not in _TLDS
        ):  # a version, a decimal or "next.js": read as words and numbers
            return a
        add("address", m.group().rstrip("."))
        return " "

    def money(m: re.Match[str]) -> str:
        amount = _number(m.group(1) or m.group(3))
        if amount is not None:
            mult = {"k": 1000, "만": 10000}.get(m.group(2) or m.group(4) or "", 1)
            add("money", _fmt(amount * mult))
        return " "

    def temperature(m: re.Match[str]) -> str:
        degrees = _number(m.group(1))
        if degrees is not None:
            add("temperature", _fmt(degrees))
        return " "

    def weekday_range(m: re.Match[str]) -> str:
        first, last = _WEEK.index(str(_DAY_OF[m.group(1)])), _WEEK.index(str(_DAY_OF[m.group(2)]))
        for i in range(first, last + (1 if last >= first else 8)):
            add("weekday", _WEEK[i % 7], m.group(1), m.group(2))
        return " "

    def ordinal(m: re.Match[str]) -> str:
        add("ordinal", m.group(1))
        return " "

    rest = _PHRASE_RE.sub(lambda m: _PHRASES[m.group(1)], folded)
    rest = _HALF.sub("0.5 ", rest)
    rest = _MONEY.sub(money, rest)  # before times, paths and "a month": "$15.49/mo" is a price
    rest = _TEMPERATURE.sub(temperature, rest)
    rest = _WEEKDAY_RANGE.sub(weekday_range, rest)
    rest = _TIME.sub(time, rest)
    rest = _ADDRESS.sub(address, rest)
    rest = _ORDINAL.sub(ordinal, rest)
    rest = _ONE.sub("1 ", rest)
    rest = _TIME_KO.sub(time_ko, rest)
    rest = _TIME_ES.sub(time_es, rest)
    rest = _CHANNEL.sub(channel, rest)
    rest = _CODE.sub(code, rest)
    for word in split_words(rest):
        hit = (
            _VALUE_WORD.get(word)
            or _VALUE_WORD.get(stem(word))
            or (_lookup(_VALUE_WORD, word) if HANGUL.search(word) else None)
        )
        if hit:
            add(str(hit[0]), str(hit[1]), word)
    for word, day in _WEEKDAY.items():
        if re.search(rf"(?<!\w){re.escape(word)}(?!\w)" if not HANGUL.search(word) else re.escape(word), rest):
            add("weekday", str(day), word)
    names = {
        n
        for n in _names_in(text)
        if n not in ("am", "pm") and re.search(rf"(?<![a-z0-9]){re.escape(n)}(?![a-z0-9])", rest)
    }
    # a capitalised concept word is a name when the concept is a subject ("Teams", the product), not an attribute
    name_set = {
        n
        for n in names
        if not ((concept(n) not in (None, *_SUBJECT_CONCEPTS)) or n in _STANCE or n in _SCOPE or n in _WEEKDAY)
    }
    name_set |= {fold(e) for e in entities}
    rest = _NUMBER_WORD_RE.sub(lambda m: str(_NUMBER_WORD[m.group(1)]), rest)
    for m in _QUANTITY.finditer(rest):
        raw, unit = m.group(1), (m.group(2) or "")
        if unit in _GENERIC:  # "PostgreSQL 16 last night", "3 of them": no unit
            unit = ""
        before = rest[max(0, m.start() - 200) : m.start()].split()  # the word before (not all of them: quadratic)
        prev = re.sub(r"\W", "", before[-1]) if before else ""
        n = _number(raw)
        if n is None:
            continue
        dim = _unit_of(unit) if unit else None
        if dim is not None:
            add(dim[0], _fmt(n * dim[1]), unit)
        elif unit == "k":
            add("number", _fmt(n * 1000))
        elif unit == "%":
            add("percent", _fmt(n))
        elif unit and HANGUL.search(unit) and unit.startswith(_KO_COUNTERS):
            add("count", _fmt(n), unit)
        elif unit and not HANGUL.search(unit) and unit not in _GENERIC and len(unit) > 1:
            add(f"unit:{concept(unit) or stem(unit)}", _fmt(n))
        elif prev and (prev in name_set or prev in _entity_words(entities)) and not unit:
            add(f"version:{prev}", raw)
        elif "." in raw and prev:
            add(f"version:{prev}", raw)
        else:
            add("number", _fmt(n))
        spent.add(raw)
    return keyed, name_set, spent | name_set, rest


# what the gate reads of a memory: its title and the start of its body (a statement is said early; reading a
# 200,000-character body whole took the gate minutes, during which the store stayed locked)
CLAIM_CHARS = 20_000


def _scopes_named(text: str) -> frozenset[str]:
    found = set()
    for t in terms_of(text):
        scope = _lookup(_SCOPE, t.text) or _lookup(_SCOPE, t.stem)
        if scope:
            found.add(str(scope))
    return frozenset(found)


@lru_cache(maxsize=16384)
def claim_of(s: Statement) -> Claim:
    text = s.text[:CLAIM_CHARS]
    keyed, names, spent, rest = _values(text, s.entities)
    ents = _entity_words(s.entities)
    words: list[str] = []
    title_words: list[str] = []
    scopes: set[str] = set()
    title_scopes: set[str] = set()  # a scope the title names is the statement's; the body may name others
    stances: set[tuple[str, str]] = set()
    mentions: set[str] = set(ents)
    title_terms = {t.text for t in terms_of(s.title)}
    said = {t.text for t in terms_of(text)} | {t.stem for t in terms_of(text)}
    folded = fold(text)
    said_names = frozenset(
        n
        for n in names
        if n in said
        or re.search(rf"(?<![a-z0-9]){re.escape(n)}(?![a-z0-9])", folded)
        or said & {w for w in re.split(r"[\W_]+", n) if len(w) >= 3}  # the tag dana-cho, the text "Dana"
    )
    mentions |= said | names
    for t in terms_of(rest):
        w = t.stem.lstrip("0123456789")
        scopes_here = title_scopes if t.text in title_terms else scopes
        if (t.text in ents or t.text in names) and t.text in _SCOPE:  # a tag or name that is a scope: [ios], EU
            scopes_here.add(str(_SCOPE[t.text]))
            continue
        if not w or t.text in spent or w in spent or t.text in _NUMBER_WORD or t.text.isdigit():
            continue
        if t.text in ents or any(cue in t.text for cue in _CUES_KO):
            continue  # an entity's own words ("atlas-web") are not its scope; a Korean cue is no attribute
        scope = _lookup(_SCOPE, t.text) or _lookup(_SCOPE, w)
        if scope:
            scopes_here.add(str(scope))
            continue
        stance = _lookup(_STANCE, t.text) or _lookup(_STANCE, w)
        if stance:
            stances.add(stance)  # type: ignore[arg-type]
            continue
        known = concept(t.text) or concept(w)  # a concept word counts even when it is short or common ("owns")
        if not known and (
            (len(w) < 2 and not HANGUL.search(w))
            or t.text in _GENERIC
            or w in _GENERIC
            or w in _CUE_WORDS
            or t.text in _CUE_WORDS
            or t.text in _WEEKDAY
            or any(cue in w for cue in _CUES_KO)
            or _unit_of(w)
            or _lookup(_WEEKDAY, w)
        ):
            continue
        word = str(known or w)
        if word in _SUBJECT_CONCEPTS:
            continue
        if word in ents or w in ents or t.text in ents:
            continue
        if word not in words:
            words.append(word)
        if t.text in title_terms and word not in title_words:
            title_words.append(word)
    subject = None
    for t in terms_of(s.title):
        if t.stem not in STOPWORDS and t.stem not in _CUE_WORDS and not t.stem.isdigit():
            subject = t.stem
            break
    masked = s.title
    for v in sorted(set(_names_in(s.title)), key=len, reverse=True):
        masked = re.sub(rf"(?i)(?<!\w){re.escape(v)}(?!\w)", "X", masked)
    masked = re.sub(r"#[\w-]+|\d+(?:[.:,]\d+)*", "X", masked)
    is_negated = negated(text)
    if is_negated and {side for ax, side in stances if ax == _PERMISSION} == {"+"}:  # "not permitted": denied
        stances = {(ax, "-" if ax == _PERMISSION else side) for ax, side in stances}
    if re.search(r"\bUS\b", text):  # "US" in capitals is the country, not the pronoun
        (title_scopes if re.search(r"\bUS\b", s.title) else scopes).add("us")
    return Claim(
        lang=language(text),
        subject=subject,
        title_words=tuple(title_words),
        words=frozenset(words),
        values=tuple(sorted((k, frozenset(v)) for k, v in keyed.items())),
        names=frozenset(names),
        scopes=frozenset(title_scopes or scopes),
        body_scopes=_scopes_named(without_added_text(s.body)[:CLAIM_CHARS]),
        stances=tuple(sorted(stances)),
        negated=is_negated,
        cues=tuple(replacement_cues(text)),
        mentions=frozenset(mentions),
        said=frozenset(said),
        said_names=said_names,
        entity_words=ents,
        masked=masked,
        title_opening=tuple(split_words(fold(s.title))[:3]),
    )
