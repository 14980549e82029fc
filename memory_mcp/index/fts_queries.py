"""The search legs' queries: a ranked FTS5 match and a LIKE probe, over memories or document chunks.

Table names come from the planner's `Corpus` constants, never from input; `where` is a `Filters.sql()`
clause over alias `m` with its parameters, and every user term arrives as a bound, already quoted value.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence

from ..domain.text import FTS_WORD_TOKENIZER, HANGUL


def fts_scores(
    conn: sqlite3.Connection,
    table: str,
    filter_rows: str,
    expression: str,
    weights: str,
    where: str,
    params: Sequence[object],
    limit: int,
    among: Sequence[int] = (),
) -> list[tuple[int, float]]:
    """(rowid, -bm25) of the best `limit` rows of `table` matching the FTS5 `expression`, best first;
    only rows in `among` when given (then `limit` is its length)."""
    # unary + keeps SQLite from handing the rowid list to FTS5, which would re-run the match once per rowid;
    # CROSS JOIN pins FTS5 as the outer loop for the same reason (with a small joined table the planner
    # otherwise scans that table and runs the match once per row: 10x slower at 10k memories)
    only = f" AND +f.rowid IN ({','.join('?' * len(among))})" if among else ""
    # without a filter the join would only look up every matching row's flags for nothing (~1 µs a row)
    join = f"CROSS JOIN {filter_rows} m ON m.rowid = f.rowid " if where else ""
    sql = (
        f"SELECT f.rowid, -bm25({table}, {weights}) AS s FROM {table} f "
        f"{join}WHERE {table} MATCH ?{where}{only} "
        f"ORDER BY s DESC LIMIT {len(among) if among else limit}"
    )
    try:
        return [(r[0], r[1]) for r in conn.execute(sql, [expression, *params, *among])]
    except sqlite3.OperationalError:
        return []  # an expression FTS5 still rejects (should not happen: every term is quoted)


def like_rowids(
    conn: sqlite3.Connection, rows: str, pattern: str, where: str, params: Sequence[object], limit: int
) -> list[int]:
    """Rows of `rows` whose title, body or entities hold the LIKE `pattern` (escaped with a backslash)."""
    sql = (
        f"SELECT m.rowid FROM {rows} m WHERE (m.title LIKE ? ESCAPE '\\' OR m.body LIKE ? ESCAPE '\\' "
        f"OR m.entities LIKE ? ESCAPE '\\'){where} LIMIT {limit}"
    )
    return [r[0] for r in conn.execute(sql, [pattern, pattern, pattern, *params])]


def any_in_state(conn: sqlite3.Connection, state: str) -> bool:
    """Whether any memory is in this state (the `memories_state_type` index answers it)."""
    return conn.execute("SELECT 1 FROM memories WHERE state = ? LIMIT 1", (state,)).fetchone() is not None


# ---------------------------------------------------------------- how the word leg's tokenizer reads a character

WORD_TOKENIZER = FTS_WORD_TOKENIZER  # the word tables' tokenizer, declared once in domain/text.py
_IN_WORD: dict[str, str | None] = {}  # character → what the word tokenizer makes of it inside a word (None: a split)
_PROBES: dict[str, sqlite3.Connection] = {}
_WORD_PROBE_LOCK = threading.Lock()  # sessions of two scopes may serve calls on two threads


def tokenizer_probe(tokenizer: str) -> sqlite3.Connection:
    """An in-memory FTS5 table `probe` (one column, `t`) with this tokenizer and its token list `probe_at`
    (fts5vocab, 'instance'), one per tokenizer: how SQLite itself reads a text. Callers hold their own lock."""
    if tokenizer not in _PROBES:
        probe = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        probe.execute(f"CREATE VIRTUAL TABLE probe USING fts5 (t, tokenize = '{tokenizer}')")
        probe.execute("CREATE VIRTUAL TABLE probe_at USING fts5vocab (probe, 'instance')")
        _PROBES[tokenizer] = probe
    return _PROBES[tokenizer]


def word_sizes(title: str, entities: str, body: str) -> bytes:
    """FTS5's docsize record (tokens per column) of a row of these three texts in a word table: what the index
    holds for a memory whose full-text row was made of them (`reads.fts_word_sizes`)."""
    with _WORD_PROBE_LOCK:
        probe = _PROBES.get("sizes")
        if probe is None:
            probe = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            probe.execute(
                f"CREATE VIRTUAL TABLE sized USING fts5 (title, entities, body, tokenize = '{WORD_TOKENIZER}')"
            )
            _PROBES["sizes"] = probe
        probe.execute("INSERT INTO sized (rowid, title, entities, body) VALUES (1, ?, ?, ?)", (title, entities, body))
        try:
            return bytes(probe.execute("SELECT sz FROM sized_docsize WHERE id = 1").fetchone()[0])
        finally:
            probe.execute("DELETE FROM sized WHERE rowid = 1")


def _probe(chars: Iterable[str]) -> None:
    """Ask SQLite itself, once per character, what the word tables' tokenizer makes of `x?x`: one token (the
    character kept inside a word, folded its way) or two (a split). Its Unicode tables are not Python's."""
    unknown = {c for c in chars if c not in _IN_WORD and c != "\x00"}
    if not unknown:
        return
    with _WORD_PROBE_LOCK:
        probe = tokenizer_probe(WORD_TOKENIZER)
        order = sorted(unknown)
        probe.executemany("INSERT INTO probe (rowid, t) VALUES (?, ?)", [(n, f"x{c}x") for n, c in enumerate(order, 1)])
        try:
            found: dict[int, list[str]] = {}
            for doc, term in probe.execute("SELECT doc, term FROM probe_at"):
                found.setdefault(doc, []).append(term)
        finally:
            probe.execute("DELETE FROM probe")
        for n, c in enumerate(order, 1):
            terms = found.get(n, [])
            _IN_WORD[c] = terms[0][1:-1] if len(terms) == 1 else None


def word_tokenizer_joins(chars: Iterable[str]) -> set[str]:
    """Those of `chars` the word tables' tokenizer keeps inside a word (`x?x` is one token): a query must split
    its words where the index did (an unassigned code point, a combining mark)."""
    chars = set(chars)
    _probe(chars)
    return {c for c in chars if _IN_WORD.get(c) is not None}


def word_tokenizer_fold(word: str) -> str:
    """`word` as the word tables' tokenizer folds it (its case folding, its diacritics: Greek tonos kept, a
    full-width letter or a ligature kept as it is), a split as a space. Where this differs from
    `domain.text.fold`, the planner searches for this form too, or the index's token is never met."""
    if word.isascii():
        return word.lower()
    # Hangul syllables are kept whole and as they are (tests/test_unit_search_index.py): not asked about
    _probe(c for c in set(word) if not c.isascii() and not HANGUL.match(c))
    return "".join(_tokenizer_char(c) for c in word)


def _tokenizer_char(c: str) -> str:
    if c.isascii() or HANGUL.match(c):
        return c.lower()
    folded = _IN_WORD.get(c)
    return " " if folded is None else folded
