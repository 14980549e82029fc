"""The re-scoring leg's bm25, computed outside FTS5, against FTS5's own bm25 on the same real index.

Random memories (English, Spanish and Korean words, capitals beyond ASCII, repeated letters so phrases
overlap themselves, empty and long columns, entities) are written with the index's own functions; for
many queries the planner's phrases score every candidate both ways, and the two must agree exactly:
same rows, same doubles (and never more than 1e-9 apart, whatever happens). Writes between rounds
check that the cached statistics follow the table.
"""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest

from memory_mcp.domain.models import Memory, MemoryType, State, Trust
from memory_mcp.index import db
from memory_mcp.index.bm25 import exact_bm25, fts_fold
from memory_mcp.index.fts_queries import fts_scores
from memory_mcp.search.planner import gram_phrases, terms_of

WORDS = """budget dinner banana bananas review reviews meeting meetings aaaa aaa anana deploy deployed
servidor reunión añoranza camión CAMIÓN Ärger ÄRGER straße STRASSE σοφία ΣΟΦΊΑ ΟΔΟΣ ΛΟΓΟΣ İstanbul ıi Kelvin
\u212aelvin 회의 회의를 서버에서 배포했다 dog dogs cat 𐐀𐐨 ﬁle""".split()
ENTITIES = ["billing-service", "alice", "김민수", "garcía"]


def _memory(n: int, title: str, body: str) -> Memory:
    return Memory(
        id=f"M{n:05d}", type=MemoryType.FACT, state=State.ACTIVE, trust=Trust.USER_STATED, title=title,
        body=body, entities=[], source="", created="2026-01-01T00:00:00Z", updated="2026-01-01T00:00:00Z",
        review_after=None, supersedes=[], superseded_by=[],
    )  # fmt: skip


def _text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def _write(conn: sqlite3.Connection, rng: random.Random, start: int, count: int) -> None:
    with db.atomic(conn):
        for n in range(start, start + count):
            long_note = rng.random() < 0.05
            body = _text(rng, 40, 120) if long_note else _text(rng, 0, 14)
            mem = _memory(n, _text(rng, 0, 4).capitalize(), body)
            db.put_memory(conn, f"memories/{mem.id}.md", mem, rng.sample(ENTITIES, rng.choice([0, 0, 1, 2])))


@pytest.fixture
def conn(tmp_path: Path) -> sqlite3.Connection:
    c = db.connect(tmp_path / "index.sqlite3")
    db.create_schema(c)
    _write(c, random.Random(5), 0, 600)
    yield c
    c.close()


def _compare(conn: sqlite3.Connection, rng: random.Random, weights: tuple[float, float, float], queries: int) -> int:
    """Score the candidates of `queries` random queries both ways; the number of (query, row) pairs compared."""
    rowids = [r[0] for r in conn.execute("SELECT rowid FROM memories")]
    pairs = 0
    for _ in range(queries):
        query = _text(rng, 1, 4)
        phrases = gram_phrases(terms_of(query), query)
        if not phrases:
            continue
        among = rng.sample(rowids, min(len(rowids), 150))
        expression = " OR ".join('"' + p.replace('"', '""') + '"' for p in phrases)
        weight_args = ", ".join(map(str, weights))
        by_fts5 = dict(fts_scores(conn, "fts_tri", "memory_flags", expression, weight_args, "", [], 0, among))
        ours = exact_bm25(conn, "fts_tri", phrases, weights, among)
        assert ours is not None
        mine = dict(ours)
        assert mine.keys() == by_fts5.keys(), query
        for rowid, score in by_fts5.items():
            assert abs(mine[rowid] - score) <= 1e-9 * abs(score), (query, rowid)
            assert mine[rowid] == score, (query, rowid)  # the same doubles, in fact
        pairs += len(by_fts5)
    return pairs


@pytest.mark.parametrize("weights", [(3.0, 2.0, 1.0), (1.5, 0.7, 0.3), (1.0, 1.0, 1.0)])
def test_exact_bm25_gives_fts5s_scores_for_thousands_of_rows(conn: sqlite3.Connection, weights) -> None:
    assert _compare(conn, random.Random(11), weights, 120) > 3000


def test_the_cached_statistics_follow_every_write(conn: sqlite3.Connection) -> None:
    rng = random.Random(13)
    assert _compare(conn, rng, (3.0, 2.0, 1.0), 30) > 0
    _write(conn, rng, 600, 200)  # new rows: N, avgdl and every phrase's row count move
    assert _compare(conn, rng, (3.0, 2.0, 1.0), 30) > 0
    with db.atomic(conn):
        for n in range(0, 300, 3):
            db.drop_memory_at(conn, f"memories/M{n:05d}.md")
    assert _compare(conn, rng, (3.0, 2.0, 1.0), 30) > 0
    with db.atomic(conn):  # the same rows again, with other words: counts change, row count does not
        _write(conn, random.Random(99), 0, 300)
    assert _compare(conn, rng, (3.0, 2.0, 1.0), 30) > 0


def test_inside_a_write_transaction_it_leaves_the_scoring_to_fts5(conn: sqlite3.Connection) -> None:
    # FTS5's pending rows are not in the records read outside it: the caller must ask FTS5 then
    rowids = [r[0] for r in conn.execute("SELECT rowid FROM memories LIMIT 50")]
    assert exact_bm25(conn, "fts_tri", ["banana", "ban"], (3.0, 2.0, 1.0), rowids) is not None
    with db.atomic(conn):
        assert exact_bm25(conn, "fts_tri", ["banana", "ban"], (3.0, 2.0, 1.0), rowids) is None


def test_inside_a_read_snapshot_it_scores_the_snapshot(conn: sqlite3.Connection, tmp_path: Path) -> None:
    # a recall reads one snapshot (`db.read_snapshot`): nothing is pending there, so the scores are computed,
    # and they are FTS5's on the snapshot's rows even after another connection committed more meanwhile
    with db.read_snapshot(conn):
        assert db.writing(conn) is False
        other = db.connect(tmp_path / "index.sqlite3")
        try:
            _write(other, random.Random(7), 600, 300)  # committed by another connection
        finally:
            other.close()
        assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 600
        assert _compare(conn, random.Random(17), (3.0, 2.0, 1.0), 30) > 0
    assert not conn.in_transaction and conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 900
    assert _compare(conn, random.Random(17), (3.0, 2.0, 1.0), 30) > 0


def test_folding_is_the_trigram_tokenizers_own(conn: sqlite3.Connection) -> None:
    # every token FTS5 stored, at its position, is the trigram of fts_fold's text at that position
    conn.execute("CREATE VIRTUAL TABLE temp.tri_tokens USING fts5vocab(main, fts_tri, 'instance')")
    columns = {"title": 0, "entities": 1, "body": 2}
    # the texts the contentless table was given, derived again from each memory's row as a delete derives them
    rows = conn.execute("SELECT rowid, title, entities, body FROM memories")
    texts = {r[0]: db.searched_texts(r[1], json.loads(r[2]), r[3]) for r in rows}
    folded = {rowid: [fts_fold(t) for t in cols] for rowid, cols in texts.items()}
    seen = 0
    for term, rowid, column, offset in conn.execute("SELECT term, doc, col, offset FROM temp.tri_tokens"):
        assert folded[rowid][columns[column]][offset : offset + 3] == term
        seen += 1
    assert seen == sum(max(0, len(t) - 2) for cols in folded.values() for t in cols)
    assert any(t != t.lower() for cols in texts.values() for t in cols)  # capitals were there to fold
