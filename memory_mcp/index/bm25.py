"""FTS5's bm25 over a trigram table, computed exactly for a few given rows without the OR walk.

The re-scoring leg of a recall scores ~100 candidates with an OR of ~30 trigram phrases. Asked to SQLite,
FTS5 walks every phrase's whole doclist twice (once for its IDF, once for the OR) and then keeps only the
candidates: most of the store's rows are visited for a hundred answers. Here the same figure comes from
what bm25 is made of (sqlite's ext/fts5/fts5_aux.c, fts5Bm25Function):

    score(D) = Σ_phrase idf(p) · f(p,D)·(k1+1) / (f(p,D) + k1·(1 − b + b·|D|/avgdl)),  k1 = 1.2, b = 0.75
    f(p,D)   = Σ over the phrase's instances in D of its column's weight (added one instance at a time)
    idf(p)   = log((N − n(p) + 0.5) / (n(p) + 0.5)), 1e-6 when that is ≤ 0

- f(p,D): the trigram tokenizer emits one token per character position (every 3-character window, spaces
  and punctuation included, NUL skipped) after folding case code point by code point, so a phrase's
  instances in a column are the (overlapping) occurrences of the folded phrase in the folded column text;
- |D|: the tokens of the row, Σ max(0, characters − 2) over its columns;
- N and avgdl: the table's averages record (`<table>_data` id 1: varint row count, then varint token
  totals per column);
- n(p): rows matching the phrase alone, counted once and kept while the table's structure and averages
  records are byte for byte the same (every committed write to the table changes its structure record).

The arithmetic follows the C code's order of operations, so the scores are the same doubles.
`exact_bm25` returns None whenever it cannot vouch for that (inside a transaction that may have written,
where FTS5's pending rows are not in the records read here; a text holding NUL): the caller then asks FTS5.
A read snapshot (`db.read_snapshot`) has nothing pending: it is scored here.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from ..domain.text import FTS_TRIGRAM_TOKENIZER, searchable
from .db import searched_texts, writing
from .fts_queries import tokenizer_probe

K1 = 1.2
B = 0.75

# table names come from the planner's Corpus constants: the rows each contentless table was filled from
_CONTENT = {"fts_tri": "memories", "fts_doc_tri": "doc_chunks"}


@lru_cache(maxsize=16384)
def _searched_entities(stored: str) -> str:
    """The entities column a memory's full-text rows were given, from its stored JSON list (`db.searched_texts`):
    decoded once per distinct list (a recall re-scores ~100 candidates, mostly the same ones again)."""
    return searched_texts("", [] if stored == "[]" else json.loads(stored), "")[1]


def _searched_rows(conn: sqlite3.Connection, table: str, rowids: Sequence[int]) -> list[tuple[int, str, str, str]]:
    """(rowid, title, entities, body) as the full-text table `table` was given them, by rowid."""
    marks = ",".join("?" * len(rowids))
    cur = conn.cursor()
    cur.row_factory = None
    rows = cur.execute(
        f"SELECT rowid, title, entities, body FROM {_CONTENT[table]} WHERE rowid IN ({marks}) ORDER BY rowid", rowids
    )
    if table == "fts_tri":
        return [(r[0], searchable(r[1]), _searched_entities(r[2]), searchable(r[3])) for r in rows]
    return [(r[0], searchable(r[1]), searchable(r[2]), searchable(r[3])) for r in rows]


@dataclass
class _TableStats:
    """What bm25 needs about a table as a whole, valid while its `records` are unchanged."""

    records: tuple[bytes, bytes]
    rows: int
    avgdl: float
    matching: dict[str, int] = field(default_factory=dict)  # phrase → rows it matches, n(p)


# per connection and table; a strong reference keeps a closed connection's identity from being reused
_STATS: OrderedDict[tuple[sqlite3.Connection, str], _TableStats] = OrderedDict()
_STATS_KEPT = 16
_STATS_LOCK = threading.Lock()
_PHRASES_KEPT = 100_000  # row counts kept per table (a few MB at most)


def _varints(blob: bytes) -> list[int]:
    """SQLite's big-endian varints (7 bits a byte, the 9th byte carries 8)."""
    out: list[int] = []
    value, count = 0, 0
    for byte in blob:
        if count == 8:
            out.append((value << 8) | byte)
            value, count = 0, 0
            continue
        value = (value << 7) | (byte & 0x7F)
        count += 1
        if not byte & 0x80:
            out.append(value)
            value, count = 0, 0
    return out


def _table_stats(conn: sqlite3.Connection, table: str) -> _TableStats | None:
    rows = dict(conn.execute(f"SELECT id, block FROM {table}_data WHERE id IN (1, 10)").fetchall())
    averages, structure = rows.get(1), rows.get(10)
    if not averages or structure is None:
        return None  # an empty table has no averages yet (and nothing to score)
    records = (bytes(averages), bytes(structure))
    key = (conn, table)
    with _STATS_LOCK:
        stats = _STATS.get(key)
        if stats is not None and stats.records == records:
            _STATS.move_to_end(key)
            return stats
    numbers = _varints(records[0])
    n_rows, n_tokens = numbers[0], sum(numbers[1:])
    if n_rows <= 0:
        return None
    stats = _TableStats(records, n_rows, float(n_tokens) / float(n_rows))
    with _STATS_LOCK:
        _STATS[key] = stats
        _STATS.move_to_end(key)
        while len(_STATS) > _STATS_KEPT:
            _STATS.popitem(last=False)
    return stats


# ---------------------------------------------------------------- the trigram tokenizer's case folding

# code point → the code point FTS5 folds it to, for the characters where that is not Python's lower(); asked
# of SQLite itself for every non-ASCII character met (its fold table is its own)
_FOLD: dict[int, int] = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}
_KNOWN: set[str] = set()
# a character outside ASCII and the known ones whose fold is lower()'s: such a text takes the slow way
_NOT_LOWER: list[re.Pattern[str]] = [re.compile(r"[^\x00-\x7f]")]
_PROBE_LOCK = threading.Lock()  # sessions of two scopes may serve calls on two threads


def _learn_folds(chars: set[str]) -> None:
    """Ask an in-memory trigram table how it folds these characters (each at its own token position)."""
    if not chars:
        return  # another thread learnt them meanwhile
    probe = tokenizer_probe(FTS_TRIGRAM_TOKENIZER)
    order = sorted(chars)
    probe.execute("INSERT INTO probe (rowid, t) VALUES (1, ?)", ("".join(order) + "  ",))
    try:
        for term, offset in probe.execute("SELECT term, offset FROM probe_at"):
            _FOLD[ord(order[offset])] = ord(term[0])
    finally:
        probe.execute("DELETE FROM probe WHERE rowid = 1")
    _KNOWN.update(order)
    # Σ is left out: lower() makes it ς at the end of a word, where FTS5 folds it to σ as everywhere
    like_lower = "".join(sorted(c for c in _KNOWN if c.lower() == chr(_FOLD[ord(c)]) and c != "\u03a3"))
    _NOT_LOWER[0] = re.compile("[^\\x00-\\x7f" + re.escape(like_lower) + "]") if like_lower else _NOT_LOWER[0]


def fts_fold(text: str) -> str:
    """`text` as the trigram tokenizer folds it (one code point for one: positions are kept)."""
    if _NOT_LOWER[0].search(text) is None:
        return text.lower()  # ASCII, or only characters lower() folds as FTS5 does
    unknown = {c for c in text if not c.isascii()} - _KNOWN
    unknown.discard("\x00")  # never a token (a text holding it is left to FTS5)
    if unknown:
        with _PROBE_LOCK:
            _learn_folds(unknown - _KNOWN)
    return text.translate(_FOLD)


# ---------------------------------------------------------------- counting and scoring


def _overlapping(phrase: str) -> bool:
    """Whether two instances of the phrase can overlap (a proper prefix equals a suffix): str.count misses those."""
    return any(phrase[:k] == phrase[-k:] for k in range(1, len(phrase)))


def _count_overlapping(text: str, phrase: str) -> int:
    n, at = 0, text.find(phrase)
    while at >= 0:
        n += 1
        at = text.find(phrase, at + 1)
    return n


def _matching_rows(conn: sqlite3.Connection, table: str, phrase: str) -> int:
    quoted = '"' + phrase.replace('"', '""') + '"'
    return conn.execute(f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (quoted,)).fetchone()[0]


def exact_bm25(
    conn: sqlite3.Connection,
    table: str,
    phrases: Sequence[str],
    weights: tuple[float, float, float],
    rowids: Sequence[int],
) -> list[tuple[int, float]] | None:
    """(rowid, -bm25) of the rows among `rowids` matching the OR of `phrases`, as FTS5 computes it for
    `bm25(table, *weights)` with that expression; None when only FTS5 itself can say (see the module)."""
    content = _CONTENT.get(table)
    if content is None or writing(conn) or not phrases:
        return None
    stats = _table_stats(conn, table)
    if stats is None:
        return None
    try:
        folded = [fts_fold(p) for p in phrases]
    except UnicodeEncodeError:
        return None  # a lone surrogate: SQLite's reading of it (or refusal) decides
    if any(len(p) < 3 for p in folded):
        return None  # a phrase of fewer than three characters has no trigram: FTS5's own reading applies
    overlaps = [_overlapping(p) for p in folded]
    # integral weights (the defaults) add up exactly whatever the order: count × weight is FTS5's sum
    integral = all(float(w).is_integer() and abs(w) < 2**20 for w in weights)
    rows = _searched_rows(conn, table, rowids)
    if not rows:
        return []
    # each column of every candidate folded in one call, NUL-separated (folding keeps positions and NUL), and
    # the phrases any candidate's column holds found once: most of the ~30 phrases are in no candidate's column
    by_column: list[list[str]] = []
    present: list[list[int]] = []
    for j in range(1, 4):
        joined = "\x00".join(r[j] if isinstance(r[j], str) else "" for r in rows)
        if joined.count("\x00") != len(rows) - 1:
            return None  # the tokenizer skips NUL, which would shift positions
        folded_column = fts_fold(joined)
        by_column.append(folded_column.split("\x00"))
        present.append([i for i, p in enumerate(folded) if p in folded_column])  # no phrase holds NUL
    columns = [(by_column[j], present[j], weights[j]) for j in range(3)]
    wanted = sorted({i for _, held, _ in columns for i in held})
    # first every row's phrase frequencies: a phrase no candidate holds needs no IDF (its term is 0 everywhere),
    # which spares counting the rows of most whole phrases ("budget dinner cat review")
    found: list[tuple[int, float, list[tuple[int, float]]]] = []  # (rowid, length norm, [(phrase, f)])
    for n_row, row in enumerate(rows):
        counts: dict[int, float] = {}
        size = 0
        for texts, held, weight in columns:
            text = texts[n_row]
            if len(text) <= 2:
                continue  # no token: FTS5 sees nothing in this column
            size += len(text) - 2
            for i in held:
                p = folded[i]
                n = _count_overlapping(text, p) if overlaps[i] else text.count(p)
                if not n:
                    continue
                freq = counts.get(i, 0.0)
                if integral:
                    freq += n * weight
                else:  # FTS5 adds the column weight once per instance, in column order
                    for _ in range(n):
                        freq += weight
                counts[i] = freq
        if counts:
            freqs = [(i, counts[i]) for i in wanted if i in counts]
            found.append((row[0], K1 * (1 - B + B * float(size) / stats.avgdl), freqs))
    idf: dict[int, float] = {}
    for i in sorted({i for _, _, freqs in found for i, f in freqs if f}):
        n = stats.matching.get(folded[i])
        if n is None:
            if len(stats.matching) >= _PHRASES_KEPT:
                stats.matching.clear()  # a server that never writes must not grow this without bound
            n = stats.matching[folded[i]] = _matching_rows(conn, table, folded[i])
        value = math.log((stats.rows - n + 0.5) / (n + 0.5))
        idf[i] = value if value > 0.0 else 1e-6
    out: list[tuple[int, float]] = []
    for rowid, norm, freqs in found:
        score = 0.0
        for i, freq in freqs:  # in phrase order, as FTS5 sums (a zero term adds nothing)
            if freq:
                score += idf[i] * ((freq * (K1 + 1.0)) / (freq + norm))
        out.append((rowid, score))
    return out
