"""The query planner: user text → safe FTS5 expressions and LIKE probes → ranked candidates.

User text is never FTS5 syntax: it is split into word terms and every term is emitted as a quoted
string, so quotes, AND, `*` and parentheses are just text. Legs:

- word FTS5 (unicode61, diacritics removed) with prefix matching on a light stem, so Korean particles
  and verb endings (보안을 끄는 → 보안*, 끄*) and English plurals are absorbed; all terms first, any
  term when all-terms found fewer results than asked for;
- trigram FTS5 for substrings and the whole phrase;
- LIKE for terms of one or two characters that trigrams cannot see.
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from dataclasses import dataclass, field

from .dictionary import EntityDictionary
from .ranking import DEFAULT, RankingConstants

CANDIDATES_PER_LEG = 200
MAX_QUERY_CHARS = 2000
_WORD = re.compile(r"\w+", re.UNICODE)
_HANGUL = re.compile(r"[\uac00-\ud7a3]")
# Korean particles and endings, longest first; stripped to find the stem a prefix search starts from.
_KO_SUFFIXES = sorted(
    """이었다 였다 했다 한다 하는 하고 해서 에서는 에서 에게 으로는 으로 로는 까지 부터 보다 처럼 만큼
    이라 라고 이다 입니다 습니다 니다 은 는 이 가 을 를 에 의 와 과 도 만 로 고 며 면 서 다 요 게 지 던
    는데 지만""".split(),
    key=len,
    reverse=True,
)
# Too common to be worth a LIKE scan (the word legs still see them).
_SHORT_STOPWORDS = {
    "a", "an", "am", "as", "at", "be", "by", "do", "go", "he", "i", "if", "in", "is", "it", "me", "my",
    "no", "of", "on", "or", "so", "to", "up", "us", "we", "de", "el", "la", "lo", "en", "y", "o", "se",
    "un", "al", "es", "su", "the", "and",
}  # fmt: skip


_COMBINING: dict[int, None] = {}


def _combining_marks() -> dict[int, None]:
    # every code point with a non-zero combining class, as a str.translate table (built once, ~0.1 s)
    if not _COMBINING:
        _COMBINING.update({cp: None for cp in range(0x300, 0x110000) if unicodedata.combining(chr(cp))})
    return _COMBINING


def fold(text: str) -> str:
    """Case-folded, NFKC, diacritics removed: how both the index and the query compare letters.

    Hangul survives whole: NFKD splits a syllable into conjoining jamo (combining class 0, so kept)
    and NFC puts it back together. ASCII text takes the fast path (nothing to decompose).
    """
    text = text.casefold()
    if text.isascii():
        return text
    return unicodedata.normalize("NFC", unicodedata.normalize("NFKD", text).translate(_combining_marks()))


_fold_keep_hangul = fold  # kept as a name for callers; fold keeps Hangul syllables whole


@dataclass
class Term:
    text: str  # the folded term as typed
    stem: str  # prefix the word leg searches with
    variants: list[str] = field(default_factory=list)  # dictionary expansions (canonical entities)


def stem(term: str) -> str:
    if _HANGUL.search(term):
        for suffix in _KO_SUFFIXES:
            if term.endswith(suffix) and len(term) - len(suffix) >= 1:
                return term[: -len(suffix)]
        return term
    if len(term) > 4 and term.endswith("ies"):
        return term[:-3]
    if len(term) > 4 and term.endswith(("ches", "shes", "sses", "xes", "zes")):
        return term[:-2]
    if len(term) > 3 and term.endswith("s") and not term.endswith(("ss", "us", "is")):
        return term[:-1]
    return term


def terms_of(query: str, dictionary: EntityDictionary | None = None) -> list[Term]:
    words = [_fold_keep_hangul(w) for w in _WORD.findall(query[:MAX_QUERY_CHARS])]
    seen: dict[str, Term] = {}
    for w in words:
        w = w.replace("_", "")
        if w and w not in seen:
            seen[w] = Term(text=w, stem=stem(w))
    terms = list(seen.values())
    if dictionary is not None:
        for canonical in dictionary.expand_query_terms([t.text for t in terms]):
            # attach the canonical name to the alias term so all-terms mode accepts either spelling
            for t in terms:
                if dictionary.canonical(t.text) == canonical or canonical.startswith(t.text):
                    t.variants.append(canonical)
                    break
            else:
                terms.append(Term(text=canonical, stem=canonical))
    return terms


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _word_group(t: Term) -> str:
    options = [_quote(t.stem) + " *"]
    for v in t.variants:
        options.extend(_quote(part) + " *" for part in v.split("-") if part)
    return options[0] if len(options) == 1 else "(" + " OR ".join(options) + ")"


def word_match(terms: list[Term], all_terms: bool) -> str:
    groups = [_word_group(t) for t in terms if len(t.stem) >= 1]
    return (" AND " if all_terms else " OR ").join(groups)


def trigram_match(terms: list[Term], phrase: str) -> str | None:
    parts = {t.text for t in terms if len(t.text) >= 3}
    parts |= {t.stem for t in terms if len(t.stem) >= 3}
    for t in terms:
        parts |= {v for v in t.variants if len(v) >= 3}
    folded_phrase = " ".join(_fold_keep_hangul(w) for w in _WORD.findall(phrase))
    if len(terms) > 1 and len(folded_phrase) >= 3:
        parts.add(folded_phrase)
    return " OR ".join(_quote(p) for p in sorted(parts)) if parts else None


def like_terms(terms: list[Term]) -> list[str]:
    out: list[str] = []
    for t in terms:
        for candidate in {t.text, t.stem}:
            if 1 <= len(candidate) <= 2 and candidate not in _SHORT_STOPWORDS and candidate not in out:
                if len(candidate) == 1 and candidate.isascii():
                    continue
                out.append(candidate)
    return out


@dataclass
class Filters:
    types: list[str] = field(default_factory=list)
    states: list[str] = field(default_factory=list)
    entity: str | None = None
    include_deprecated: bool = False
    trusts: list[str] = field(default_factory=list)

    def sql(self) -> tuple[str, list[object]]:
        clauses: list[str] = []
        params: list[object] = []
        if self.types:
            clauses.append(f"m.type IN ({','.join('?' * len(self.types))})")
            params.extend(self.types)
        if self.states:
            clauses.append(f"m.state IN ({','.join('?' * len(self.states))})")
            params.extend(self.states)
        elif not self.include_deprecated:
            clauses.append("m.state != 'deprecated'")
        if self.trusts:
            clauses.append(f"m.trust IN ({','.join('?' * len(self.trusts))})")
            params.extend(self.trusts)
        if self.entity:
            clauses.append("m.rowid IN (SELECT memory_rowid FROM entities WHERE entity = ?)")
            params.append(self.entity)
        return (" AND " + " AND ".join(clauses) if clauses else ""), params


@dataclass(frozen=True)
class Corpus:
    """Which tables a search runs over: memories, or indexed document chunks (same column names)."""

    word: str
    trigram: str
    rows: str


MEMORIES = Corpus("fts_word", "fts_tri", "memories")
DOCUMENTS = Corpus("fts_doc_word", "fts_doc_tri", "doc_chunks")


@dataclass
class Candidate:
    rowid: int
    word: float = 0.0  # raw bm25 (higher is better)
    trigram: float = 0.0
    like: float = 0.0  # share of LIKE terms found


@dataclass
class Plan:
    terms: list[Term]
    legs: list[str]
    candidates: dict[int, Candidate]


def plan_and_fetch(
    conn: sqlite3.Connection,
    query: str,
    filters: Filters | None,
    want: int,
    dictionary: EntityDictionary | None = None,
    k: RankingConstants = DEFAULT,
    corpus: Corpus = MEMORIES,
) -> Plan:
    """Candidates with raw leg scores. `filters=None` means no filter (documents have no state/type)."""
    terms = terms_of(query, dictionary)
    plan = Plan(terms=terms, legs=[], candidates={})
    if not terms:
        return plan
    where, params = filters.sql() if filters is not None else ("", [])
    w_title, w_ent, w_body = k.column_weights

    def run_fts(table: str, expr: str, weights: str) -> list[tuple[int, float]]:
        sql = (
            f"SELECT f.rowid, -bm25({table}, {weights}) AS s FROM {table} f "
            f"JOIN {corpus.rows} m ON m.rowid = f.rowid WHERE {table} MATCH ?{where} "
            f"ORDER BY s DESC LIMIT {CANDIDATES_PER_LEG}"
        )
        try:
            return [(r[0], r[1]) for r in conn.execute(sql, [expr, *params])]
        except sqlite3.OperationalError:
            return []  # an expression FTS5 still rejects (should not happen: every term is quoted)

    weights = f"{w_title}, {w_ent}, {w_body}"
    hits = run_fts(corpus.word, word_match(terms, all_terms=True), weights)
    plan.legs.append("all-terms")
    if len(hits) < want and len(terms) > 1:
        plan.legs.append("any-term")
        seen = {r for r, _ in hits}
        # all-terms hits keep their rank above any-term hits: they are placed first with their score
        extra = [(r, s) for r, s in run_fts(corpus.word, word_match(terms, all_terms=False), weights) if r not in seen]
        hits += extra
    for rowid, s in hits:
        plan.candidates.setdefault(rowid, Candidate(rowid)).word = max(s, 0.0)
    tri_expr = trigram_match(terms, query)
    if tri_expr:
        plan.legs.append("trigram")
        for rowid, s in run_fts(corpus.trigram, tri_expr, weights):
            plan.candidates.setdefault(rowid, Candidate(rowid)).trigram = max(s, 0.0)
    short = like_terms(terms)
    if short:
        plan.legs.append("like")
        found: dict[int, int] = {}
        for term in short:
            pattern = "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            sql = (
                f"SELECT m.rowid FROM {corpus.rows} m WHERE (m.title LIKE ? ESCAPE '\\' OR m.body LIKE ? ESCAPE '\\' "
                f"OR m.entities LIKE ? ESCAPE '\\'){where} LIMIT {CANDIDATES_PER_LEG * 5}"
            )
            for (rowid,) in conn.execute(sql, [pattern, pattern, pattern, *params]):
                found[rowid] = found.get(rowid, 0) + 1
        for rowid, n in found.items():
            plan.candidates.setdefault(rowid, Candidate(rowid)).like = n / len(short)
    return plan


def coverage(terms: list[Term], folded_text: str) -> float:
    if not terms:
        return 0.0
    found = 0
    for t in terms:
        options = [t.stem, *t.variants, *(v.replace("-", " ") for v in t.variants)]
        if any(o and o in folded_text for o in options):
            found += 1
    return found / len(terms)


def best_line(terms: list[Term], title: str, title_line: int, body: str, body_line: int) -> int:
    """The file line holding the most query terms (the title line when it ties the best body line)."""
    best, best_hits = title_line, _line_hits(terms, fold(title))
    # folding never adds or removes a newline, so the folded body splits into the same lines
    for offset, line in enumerate(fold(body).split("\n")):
        hits = _line_hits(terms, line)
        if hits > best_hits:
            best, best_hits = body_line + offset, hits
    return best


def _line_hits(terms: list[Term], folded_line: str) -> int:
    return sum(1 for t in terms if t.stem and t.stem in folded_line)
