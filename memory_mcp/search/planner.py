"""The query planner: user text → safe FTS5 expressions and LIKE probes → ranked candidates.

User text is never FTS5 syntax: it is split into word terms and every term is emitted as a quoted
string, so quotes, AND, `*` and parentheses are just text. Legs:

- word FTS5 (unicode61, diacritics removed) with prefix matching on a light stem, so Korean particles
  and verb endings (보안을 끄는 → 보안*, 끄*) and English plurals are absorbed; all terms first, any
  term when all-terms found fewer results than asked for;
- trigram FTS5 for substrings and the whole phrase, unless all-terms alone found as many results as asked
  for (a query of two or more terms): the any-term rule again;
- LIKE for terms of one or two characters that trigrams cannot see.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field

from ..canon.dictionary import EntityDictionary
from ..domain.ranking import DEFAULT, RankingConstants
from ..domain.text import Term, fold, stem, verb_root
from ..domain.text import words as split_words
from ..index import reads
from ..index.bm25 import exact_bm25
from ..index.fts_queries import any_in_state, fts_scores, like_rowids, word_tokenizer_fold, word_tokenizer_joins

CANDIDATES_PER_LEG = DEFAULT.candidates_per_leg  # the default; plans use RankingConstants.candidates_per_leg
MAX_QUERY_CHARS = 2000
# Too common to be worth a LIKE scan (the word legs still see them).
_SHORT_STOPWORDS = {
    "a", "an", "am", "as", "at", "be", "by", "do", "go", "he", "i", "if", "in", "is", "it", "me", "my",
    "no", "of", "on", "or", "so", "to", "up", "us", "we", "de", "el", "la", "lo", "en", "y", "o", "se",
    "un", "al", "es", "su", "the", "and",
}  # fmt: skip


def words_of(query: str) -> list[str]:
    """The query's words, split where the word index splits them: Python's `\\w` plus the characters the
    index's tokenizer keeps inside a word and Python does not (a combining mark, an unassigned code point:
    `\\ud7fc0` is one word there, and searching for its `0` alone never met it)."""
    if query.isascii():
        return split_words(query)
    joins = word_tokenizer_joins(c for c in set(query) if not c.isascii() and not split_words(c))
    if not joins:
        return split_words(query)
    return re.findall("[\\w" + re.escape("".join(sorted(joins))) + "]+", query)


def terms_of(query: str, dictionary: EntityDictionary | None = None) -> list[Term]:
    seen: dict[str, Term] = {}
    for word in words_of(query[:MAX_QUERY_CHARS]):
        w = fold(word)
        # `_` joins a word here (`\w`) and separates tokens in the index: "max_connections" is searched as the
        # phrase "max connections" (it was once stripped, and "maxconnections" matched nothing); a word of
        # underscores alone has no token to search
        if w.strip("_") and w not in seen:
            # where SQLite folds the word otherwise (Greek tonos kept, a full-width letter or a ligature as it
            # is), its own form is searched too: the index holds that token, never `fold`'s
            typed = word_tokenizer_fold(word).strip()
            seen[w] = Term(text=w, stem=stem(w), root=verb_root(w), typed=typed if typed and typed != w else None)
            # German writes one word with ß or with ss ("Straße", "Strasse"; Swiss German never uses ß): the
            # index keeps each as written, so the query asks for the other spelling too
            if "ß" in w or "ss" in w:
                seen[w].variants.append(w.replace("ß", "ss") if "ß" in w else w.replace("ss", "ß"))
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
    options = [_quote(t.stem) + " *"] + ([_quote(t.typed) + " *"] if t.typed else [])
    for v in t.variants:
        options.extend(_quote(part) + " *" for part in v.split("-") if part)
    return options[0] if len(options) == 1 else "(" + " OR ".join(options) + ")"


def word_match(terms: list[Term], all_terms: bool) -> str:
    groups = [_word_group(t) for t in terms if len(t.stem) >= 1]
    return (" AND " if all_terms else " OR ").join(groups)


# Function words of the languages the example store holds (en, es). They still go to the word leg (bm25's
# IDF already makes them cheap there), but they do not count for coverage and get no trigram expansion:
# "what did Caroline do" is about Caroline, and a memory without "what" is not a worse answer.
STOPWORDS = frozenset(
    """what when where who whom which why how did does do done is are was were be been being the a an of to in
    on at for with and or but by from about as has have had his her hers their theirs them they he she it its this
    that these those i you we my your our me us not no can could would should will shall may might than then there
    here into onto over under up down out off so if just also any some all each other such only own same too very s
    kind kinds type types sort sorts many much often ever still yet likely
    t que qué cuando cuándo donde dónde quien quién como cómo cual cuál el la los las un una unos unas de del y o en
    por para con es son fue era su sus lo le les se al""".split()
)


def trigram_phrases(terms: list[Term], phrase: str) -> list[str]:
    """The whole terms, their stems, verb roots and dictionary variants and the phrase: what the trigram leg
    retrieves."""
    parts = {t.text for t in terms if len(t.text) >= 3}
    parts |= {t.stem for t in terms if len(t.stem) >= 3}
    parts |= {t.root for t in terms if t.root}
    parts |= {t.typed for t in terms if t.typed and len(t.typed) >= 3}
    for t in terms:
        parts |= {v for v in t.variants if len(v) >= 3}
    folded_phrase = " ".join(fold(w) for w in split_words(phrase))
    if len(terms) > 1 and len(folded_phrase) >= 3:
        parts.add(folded_phrase)
    return sorted(parts)


def trigram_match(terms: list[Term], phrase: str) -> str | None:
    """The OR of `trigram_phrases`, or None when there is none."""
    parts = trigram_phrases(terms, phrase)
    return " OR ".join(_quote(p) for p in parts) if parts else None


def gram_phrases(terms: list[Term], phrase: str, gram_min_len: int = DEFAULT.gram_min_len) -> list[str]:
    """`trigram_phrases` plus every trigram of each longer content word: what the re-scoring leg scores with.

    The trigrams let "painting" meet "painted" and "camping" meet "camp" (bm25 rewards the memory that
    shares the most of them), which a stemmer would need a rule for in every language. They only score
    memories another leg found: a nonsense word must not find memories that merely share letters.
    Empty when no term is long enough to add anything.
    """
    grams: set[str] = set()
    for t in terms:
        if len(t.text) >= gram_min_len and t.text not in STOPWORDS:
            grams |= {t.text[i : i + 3] for i in range(len(t.text) - 2)}
    if not grams:
        return []
    return trigram_phrases(terms, phrase) + sorted(grams)


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
    as_of: str | None = None  # YYYY-MM-DD: only what the store held as current that day (`reads.CURRENT_ON`)
    unexpired_on: str | None = None  # YYYY-MM-DD: leave out memories whose `valid_until` is before it

    def sql(self, deprecated_exist: bool = True) -> tuple[str, list[object]]:
        """The clause over alias `m` and its parameters. With `deprecated_exist=False` (the store holds no
        deprecated memory) the default exclusion of deprecated memories is left out: it would keep every row."""
        clauses: list[str] = []
        params: list[object] = []
        if self.types:
            clauses.append(f"m.type IN ({','.join('?' * len(self.types))})")
            params.extend(self.types)
        if self.states:
            clauses.append(f"m.state IN ({','.join('?' * len(self.states))})")
            params.extend(self.states)
        elif not self.include_deprecated and deprecated_exist and self.as_of is None:
            clauses.append("m.state != 'deprecated'")
        if self.as_of is not None:
            clauses.append(reads.CURRENT_ON)
            params.extend(reads.current_on_params(self.as_of))
        elif self.unexpired_on is not None:
            clauses.append(reads.NOT_EXPIRED)
            params.append(self.unexpired_on)
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
    filter_rows: str  # narrow rows holding what `Filters` tests (type, state, trust), joined by the FTS legs


MEMORIES = Corpus("fts_word", "fts_tri", "memories", "memory_flags")
DOCUMENTS = Corpus("fts_doc_word", "fts_doc_tri", "doc_chunks", "doc_chunks")


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
    # an empty clause lets every leg skip the join with the filter table (the same rows, found faster)
    where, params = filters.sql(any_in_state(conn, "deprecated")) if filters is not None else ("", [])
    w_title, w_ent, w_body = k.column_weights
    depth = max(k.candidates_per_leg, want)

    weights = f"{w_title}, {w_ent}, {w_body}"

    def run_fts(table: str, expr: str, only: list[int] | None = None) -> list[tuple[int, float]]:
        return fts_scores(conn, table, corpus.filter_rows, expr, weights, where, params, depth, only or ())

    hits = run_fts(corpus.word, word_match(terms, all_terms=True))
    plan.legs.append("all-terms")
    # every term found as a word in as many memories as asked for: substrings inside other words and rows holding
    # one term alone are not needed to fill the answer. Their trigram OR was most of a recall's time (it scores
    # every row holding any term: thousands on a 4-word query at 10k), and leaving it out measured no worse on
    # either benchmark (docs/benchmarks.md). A single term keeps it: one phrase is cheap, and compounds need it
    several = len(terms) > 1
    full = several and len(hits) >= want
    if several and not full:
        plan.legs.append("any-term")
        seen = {r for r, _ in hits}
        # all-terms hits keep their rank above any-term hits: they are placed first with their score
        extra = [(r, s) for r, s in run_fts(corpus.word, word_match(terms, all_terms=False)) if r not in seen]
        hits += extra
    for rowid, s in hits:
        plan.candidates.setdefault(rowid, Candidate(rowid)).word = max(s, 0.0)
    tri_expr = None if full else trigram_match(terms, query)
    if tri_expr:
        plan.legs.append("trigram")
        for rowid, s in run_fts(corpus.trigram, tri_expr):
            plan.candidates.setdefault(rowid, Candidate(rowid)).trigram = max(s, 0.0)
    grams = gram_phrases(terms, query, k.gram_min_len)
    if grams and plan.candidates:
        # re-score every candidate with the trigram expression widened by word trigrams (retrieves nothing new):
        # the same bm25 FTS5 would give, computed for the candidates alone (FTS5 itself when that cannot be)
        plan.legs.append("trigram-grams")
        for c in plan.candidates.values():
            c.trigram = 0.0
        ids = list(plan.candidates)
        scores = exact_bm25(conn, corpus.trigram, grams, k.column_weights, ids)
        if scores is None:
            scores = run_fts(corpus.trigram, " OR ".join(_quote(p) for p in grams), only=ids)
        for rowid, s in scores:
            plan.candidates[rowid].trigram = max(s, 0.0)
    short = like_terms(terms)
    if short:
        plan.legs.append("like")
        found: dict[int, int] = {}
        extra_where, extra_params = where, list(params)
        if len(plan.candidates) >= want:
            # a full LIKE scan costs O(store) and can flood the ranking with weak hits: once the indexed legs
            # found as many as asked for, LIKE only scores those (the all-terms → any-term rule again)
            ids = list(plan.candidates)
            extra_where += f" AND m.rowid IN ({','.join('?' * len(ids))})"
            extra_params += ids
        for term in short:
            pattern = "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            for rowid in like_rowids(conn, corpus.rows, pattern, extra_where, extra_params, depth * 5):
                found[rowid] = found.get(rowid, 0) + 1
        for rowid, n in found.items():
            plan.candidates.setdefault(rowid, Candidate(rowid)).like = n / len(short)
    return plan


def coverage(terms: list[Term]) -> Callable[[str], float]:
    """Share of the query's content words (stopwords left out unless there is nothing else) in a folded text:
    the forms each word may take are listed once per query, then every candidate's text is looked through."""
    terms = [t for t in terms if t.text not in STOPWORDS] or terms
    forms = [[o for o in (t.stem, *t.variants, *(v.replace("-", " ") for v in t.variants), t.root) if o] for t in terms]

    def share(folded_text: str) -> float:
        if not forms:
            return 0.0
        return sum(1 for options in forms if any(o in folded_text for o in options)) / len(forms)

    return share


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
