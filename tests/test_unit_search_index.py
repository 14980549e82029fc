"""Unit tests of the index and the query planner over a real SQLite file in a temporary folder.

No server, no canon files: the index's own functions write rows, the planner reads them back, so a
change of the schema or of the SQL the planner emits is caught here before any end-to-end test.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memory_mcp.domain.models import Memory, MemoryType, State, Trust
from memory_mcp.domain.text import FTS_WORD_TOKENIZER
from memory_mcp.index import db
from memory_mcp.index import vectors as vector_table
from memory_mcp.search.planner import Filters, plan_and_fetch, terms_of, word_match


def _memory(
    mem_id: str, title: str, body: str, state: State = State.ACTIVE, type: MemoryType = MemoryType.FACT
) -> Memory:
    return Memory(
        id=mem_id, type=type, state=state, trust=Trust.USER_STATED, title=title, body=body, entities=[],
        source="", created="2026-01-01T00:00:00Z", updated="2026-01-01T00:00:00Z", review_after=None,
        supersedes=[], superseded_by=[],
    )  # fmt: skip


@pytest.fixture
def conn(tmp_path: Path) -> sqlite3.Connection:
    c = db.connect(tmp_path / "index.sqlite3")
    db.create_schema(c)
    mems = [
        _memory("M1", "Postgres backups run nightly", "pgbackrest keeps seven days of backups."),
        _memory("M2", "Tabs in atlas-web", "Alice wants tabs, not spaces, in the atlas-web repo."),
        _memory("M3", "보안 설정을 끄는 방법", "테스트 서버에서만 보안 설정을 끈다."),
        _memory("M4", "Old backup policy", "Backups were weekly.", state=State.DEPRECATED),
    ]
    for m in mems:
        db.put_memory(c, f"memories/{m.id}.md", m, [])
    yield c
    c.close()


def test_a_fresh_index_has_the_current_schema(conn: sqlite3.Connection) -> None:
    assert db.schema_problem(conn) is None
    assert db.meta_value(conn, "schema_version") == str(db.SCHEMA_VERSION)


def test_the_contentless_tables_forget_a_replaced_or_dropped_memorys_words(conn: sqlite3.Connection) -> None:
    # the full-text tables hold no text: a replaced row is deleted with the texts derived again from the memory row.
    # Had the delete handed FTS5 other texts, the old words would stay behind the rowid the next memory reuses.
    def matching(table: str, phrase: str) -> list[int]:
        return [r[0] for r in conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ?", (f'"{phrase}"',))]

    folded = _memory("M5", "Ｑｕａｒｔｅｒｌｙ ﬁnance", "Café ｆｕｌｌ report 회의를 했다", type=MemoryType.EPISODE)
    db.put_memory(conn, "memories/M5.md", folded, ["billing-service", "김민수"])
    rowid = db.get_memory(conn, mem_id="M5").rowid
    for table, phrase in (
        ("fts_word", "finance"),
        ("fts_tri", "inanc"),
        ("fts_word", "billing"),
        ("fts_tri", "김민수"),
    ):
        assert matching(table, phrase) == [rowid]
    db.drop_memory_at(conn, "memories/M5.md")
    db.put_memory(conn, "memories/M6.md", _memory("M6", "Garden", "Tomatoes need water."), [])
    assert db.get_memory(conn, mem_id="M6").rowid == rowid  # the freed rowid is taken again
    for table, phrase in (
        ("fts_word", "finance"),
        ("fts_tri", "inanc"),
        ("fts_word", "billing"),
        ("fts_tri", "김민수"),
    ):
        assert matching(table, phrase) == []
    assert matching("fts_word", "tomatoes") == [rowid]
    for table in ("fts_word", "fts_tri"):
        conn.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")
    totals = conn.execute("SELECT block FROM fts_word_data WHERE id = 1").fetchone()[0]
    assert totals[0] == 5  # the averages record counts the rows left: M1-M4 and M6


def test_an_index_whose_texts_another_unicode_or_sqlite_made_is_not_used(conn: sqlite3.Connection) -> None:
    # a delete derives the texts again (NFKC, the tokenizers): made by other versions, they may differ from the rows
    assert db.meta_value(conn, "text_versions") == db.TEXT_VERSIONS
    db.set_meta(conn, "text_versions", "unicode 13.0.0, sqlite 3.31.1")
    assert "unicode 13.0.0, sqlite 3.31.1" in (db.schema_problem(conn) or "")
    conn.execute("DELETE FROM meta WHERE key = 'text_versions'")
    assert "unknown versions" in (db.schema_problem(conn) or "")


def test_put_and_get_a_memory_by_id_and_path(conn: sqlite3.Connection) -> None:
    by_id = db.get_memory(conn, mem_id="M1")
    assert by_id is not None and by_id.title == "Postgres backups run nightly"
    assert db.get_memory(conn, path="memories/M1.md") == by_id
    db.put_memory(conn, "memories/M1.md", _memory("M1", "Postgres backups run hourly", "changed"), [])
    assert db.get_memory(conn, mem_id="M1").title == "Postgres backups run hourly"
    assert len(db.all_memories(conn)) == 4  # replaced, not added
    db.drop_memory_at(conn, "memories/M1.md")
    assert db.get_memory(conn, mem_id="M1") is None


def test_heat_counts_recalls(conn: sqlite3.Connection) -> None:
    assert db.heat_of(conn, ["M1"]).get("M1", (0, ""))[0] == 0
    db.add_heat(conn, {"M1": (1, "2026-02-01T00:00:00Z")})
    db.add_heat(conn, {"M1": (3, "2026-02-02T00:00:00Z"), "M2": (1, "2026-02-02T00:00:00Z")})
    assert db.heat_of(conn, ["M1", "M2"]) == {"M1": (4, "2026-02-02T00:00:00Z"), "M2": (1, "2026-02-02T00:00:00Z")}


def _found(conn: sqlite3.Connection, query: str, filters: Filters | None = None) -> set[str]:
    plan = plan_and_fetch(conn, query, filters if filters is not None else Filters(), want=10)
    mems = db.memories_by_rowid(conn, list(plan.candidates))
    return {m.id for m in mems.values()}


def test_the_planner_finds_by_word_stem_and_substring(conn: sqlite3.Connection) -> None:
    assert _found(conn, "backup") == {"M1"}  # plural absorbed by the stem; M4 is deprecated
    assert _found(conn, "atlas") == {"M2"}
    assert _found(conn, "보안을") == {"M3"}  # the particle is stripped
    assert _found(conn, "backrest") == {"M1"}  # a substring, through the trigram leg


def test_filters_reach_the_sql(conn: sqlite3.Connection) -> None:
    assert _found(conn, "backups", Filters(include_deprecated=True)) == {"M1", "M4"}
    assert _found(conn, "backups", Filters(states=["deprecated"])) == {"M4"}
    assert _found(conn, "backups", Filters(types=["decision"])) == set()


@pytest.mark.parametrize("query", ['"tabs', "tabs AND (atlas*", "NEAR(tabs spaces)", "tabs OR", "-tabs ^x :y"])
def test_user_text_is_never_fts5_syntax(conn: sqlite3.Connection, query: str) -> None:
    assert "M2" in _found(conn, query)  # no sqlite3.OperationalError, the words still match
    expression = word_match(terms_of(query), all_terms=False)
    conn.execute("SELECT count(*) FROM fts_word WHERE fts_word MATCH ?", (expression,)).fetchone()


def test_vectors_round_trip_and_rank_by_cosine(conn: sqlite3.Connection) -> None:
    m1, m2 = db.get_memory(conn, mem_id="M1"), db.get_memory(conn, mem_id="M2")
    vector_table.store_vectors(conn, "toy", [(m1.norm_hash, [1.0, 0.0]), (m2.norm_hash, [0.6, 0.8])])
    ranked = vector_table.cosine_rank(conn, "toy", [1.0, 0.1])
    assert [mem_id for _, mem_id, _, _ in ranked] == ["M1", "M2"]
    assert vector_table.pending_count(conn, "toy") == 2  # M3 and M4 have no vector yet
    db.drop_memory_at(conn, "memories/M2.md")
    assert vector_table.prune(conn) == 1


def _titles(conn: sqlite3.Connection) -> set[str]:
    return {m.title for m in db.all_memories(conn)}


def test_atomic_commits_or_undoes_the_whole_block(conn: sqlite3.Connection) -> None:
    with db.atomic(conn):
        db.put_memory(conn, "memories/M5.md", _memory("M5", "Kept", "committed"), [])
    assert "Kept" in _titles(conn) and not conn.in_transaction
    with pytest.raises(ValueError), db.atomic(conn):
        db.put_memory(conn, "memories/M6.md", _memory("M6", "Undone", "rolled back"), [])
        raise ValueError("half-way")
    assert "Undone" not in _titles(conn) and not conn.in_transaction


def test_a_nested_atomic_is_a_savepoint(conn: sqlite3.Connection) -> None:
    with db.atomic(conn):
        db.put_memory(conn, "memories/M7.md", _memory("M7", "Outer", "kept"), [])
        with pytest.raises(db.Rollback), db.atomic(conn):
            db.put_memory(conn, "memories/M8.md", _memory("M8", "Inner", "undone"), [])
            raise db.Rollback
        assert conn.in_transaction  # the outer transaction is still open
    titles = _titles(conn)
    assert "Outer" in titles and "Inner" not in titles


def test_once_all_terms_found_enough_the_trigram_leg_is_left_out(tmp_path: Path) -> None:
    c = db.connect(tmp_path / "full.sqlite3")
    db.create_schema(c)
    with db.atomic(c):
        for n in range(30):  # more than asked for hold both words
            db.put_memory(c, f"memories/f{n}.md", _memory(f"F{n}", f"Note {n}", "The ferry left the harbour."), [])
        # both words only inside longer ones: no word match, a substring match of each
        db.put_memory(c, "memories/c.md", _memory("C", "Superferry at the seaharbour", "Glued words."), [])
    plan = plan_and_fetch(c, "ferry harbour", Filters(), want=10)
    assert plan.legs == ["all-terms", "trigram-grams"]
    assert "C" not in _ids(c, plan) and len(plan.candidates) == 30
    # asked for more than all-terms found: the substrings fill up, as any-term does
    more = plan_and_fetch(c, "ferry harbour", Filters(), want=40)
    assert "trigram" in more.legs and "C" in _ids(c, more)
    # a single term keeps its trigram leg whatever the word leg found (compounds need it)
    one = plan_and_fetch(c, "harbour", Filters(), want=10)
    assert "trigram" in one.legs and "C" in _ids(c, one)
    c.close()


def _ids(c: sqlite3.Connection, plan) -> set[str]:
    marks = ",".join("?" * len(plan.candidates))
    return {r[0] for r in c.execute(f"SELECT id FROM memories WHERE rowid IN ({marks})", list(plan.candidates))}


def test_a_query_word_is_also_searched_as_the_index_tokenizer_folds_it() -> None:
    # `fold` drops the Greek tonos and maps full-width letters and ligatures; SQLite's word tokenizer keeps them,
    # so the planner also searches the word in the tokenizer's own form (asked of SQLite, per character)
    (omega,) = terms_of("Ωμέγα")
    assert (omega.text, omega.typed) == ("ωμεγα", "ωμέγα")
    assert word_match([omega], all_terms=True) == '("ωμεγα" * OR "ωμέγα" *)'
    assert [t.typed for t in terms_of("ｆｕｌｌ ﬁnance café Straße plain 한국어")] == [
        "ｆｕｌｌ",
        "ﬁnance",
        None,
        None,
        None,
        None,
    ]


def test_the_word_tokenizer_keeps_every_hangul_syllable_whole_and_as_it_is() -> None:
    # what lets word_tokenizer_fold skip asking SQLite about Hangul: one query there may hold hundreds of them
    syllables = [chr(c) for c in range(0xAC00, 0xD7A4)]
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5 (x, tokenize = '{FTS_WORD_TOKENIZER}')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab (t, 'row')")
    conn.execute("INSERT INTO t (x) VALUES (?)", (" ".join(syllables),))
    assert sorted(row[0] for row in conn.execute("SELECT term FROM v")) == syllables
