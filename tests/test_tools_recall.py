"""Queries through the real server: Korean particles, two-character terms, phrases and substrings,
FTS5 syntax typed as plain text, filters, and the limits on arguments."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from .helpers import Tools, db_path, stdio_tools

pytestmark = pytest.mark.anyio

MEMORIES = {
    "ko_security": (
        "로컬 도커에서만 보안 해제",
        "로컬 도커 환경에서만 보안을 끄고 테스트한다. 스테이징에서는 절대 끄지 않는다.",
    ),
    "ko_compound": ("개인정보 정책 변경", "개인정보보안 정책을 11월에 바꿨다."),
    "db": ("Main DB is Postgres 16", "The DB behind atlas-api is PostgreSQL 16 on RDS."),
    "rotation": ("On-call rotation", "We agreed to a split rotation schedule starting in January."),
    "syntax": (
        "Search syntax notes",
        'An "unbalanced quote, the words AND OR NOT, foo* globs, (x parentheses, col:val pairs and NEAR(a b) are plain text.',
    ),
    "es": ("Guía de configuración", "La configuración del entorno local usa Vagrant."),
}
FTS5_SYNTAX = ['"unbalanced', "AND OR NOT", "foo*", "(x", "col:val", "NEAR(a b)", "*", '"', "^", "-", "a OR", "title:x"]


async def _seed(t: Tools) -> dict[str, str]:
    return {key: (await t.remember(title, body))["id"] for key, (title, body) in MEMORIES.items()}


async def test_queries_in_every_shape(tools: Tools, store: Path) -> None:
    ids = await _seed(tools)

    # Korean: a different particle/ending on the same stems still finds it
    found = await tools.recall("보안을 끄는")
    assert found["results"] and found["results"][0]["id"] == ids["ko_security"]
    hit = found["results"][0]
    line = (store / hit["path"]).read_text(encoding="utf-8").split("\n")[hit["line"] - 1]
    assert "보안을 끄고" in line, f"cited line {hit['line']} is {line!r}"
    assert (await tools.recall("스테이징에서"))["results"][0]["id"] == ids["ko_security"]

    # two characters: Latin (word leg) and Korean inside a compound (substring leg)
    assert (await tools.recall("DB"))["results"][0]["id"] == ids["db"]
    assert ids["ko_compound"] in await tools.recall_ids("보안")
    assert ids["ko_security"] in await tools.recall_ids("보안")

    # phrase and substring
    assert (await tools.recall("split rotation schedule"))["results"][0]["id"] == ids["rotation"]
    assert (await tools.recall("ostgre"))["results"][0]["id"] == ids["db"]
    assert (await tools.recall("정보보"))["results"][0]["id"] == ids["ko_compound"]
    # accents do not matter either way
    assert (await tools.recall("configuracion"))["results"][0]["id"] == ids["es"]
    assert (await tools.recall("CONFIGURACIÓN entorno"))["results"][0]["id"] == ids["es"]

    # FTS5 syntax is only text: never an error, and the words in it still match
    for query in FTS5_SYNTAX:
        r = await tools.raw("memory_recall", query=query)
        assert not r.is_error, f"{query!r}: {r.content}"
        assert isinstance(r.structured_content["results"], list)
    for query in ('"unbalanced', "AND OR NOT", "foo*", "(x parentheses", "col:val", "NEAR(a b)"):
        assert (await tools.recall(query))["results"][0]["id"] == ids["syntax"], query

    # nothing to search for
    for query in ("", "   ", "!!! ???"):
        answer = await tools.recall(query)
        assert answer["results"] == [], query
    # something no memory says
    assert await tools.recall_ids("zebra quantum xylophone") == []
    await _results_cite_and_explain(tools, store)


async def _results_cite_and_explain(tools: Tools, store: Path) -> None:
    ids = await _seed(tools)
    answer = await tools.recall("PostgreSQL RDS")
    top = answer["results"][0]
    assert top["id"] == ids["db"]
    text = (store / top["path"]).read_text(encoding="utf-8").split("\n")
    assert "PostgreSQL 16 on RDS" in text[top["line"] - 1]
    assert top["score"] > 0 and set(top["components"]) >= {"text", "trust", "state", "freshness", "coverage"}
    assert top["components"]["coverage"] == 1.0
    assert answer["plan"]


async def test_filters_and_deprecated_visibility(tools: Tools) -> None:
    a = await tools.remember(
        "Billing runs on Stripe",
        "billing-service charges through Stripe.",
        type="decision",
        entities=["billing-service"],
    )
    b = await tools.remember(
        "Billing invoices are PDFs", "billing-service emails PDF invoices.", type="fact", entities=["billing-service"]
    )
    c = await tools.remember(
        "Billing used Braintree",
        "billing-service used Braintree before Stripe.",
        type="fact",
        entities=["billing-service"],
    )
    await tools.ok("memory_forget", id=c["id"], mode="deprecate", reason="moved to Stripe")
    assert set(await tools.recall_ids("billing")) == {a["id"], b["id"]}
    assert set(await tools.recall_ids("billing", include_deprecated=True)) == {a["id"], b["id"], c["id"]}
    assert await tools.recall_ids("billing", state="deprecated") == [c["id"]]
    assert await tools.recall_ids("billing", type="decision") == [a["id"]]
    await tools.ok("memory_forget", id=b["id"], mode="archive")
    assert await tools.recall_ids("billing", state="archived") == [b["id"]]
    assert set(await tools.recall_ids("billing", entity="billing-service")) == {a["id"], b["id"]}
    assert await tools.recall_ids("billing", entity="nothing-like-this") == []
    # limit is honoured, and kept inside 1..20
    assert len((await tools.recall("billing", limit=1, include_deprecated=True))["results"]) == 1
    for bad in (0, 21, -1):
        message = await tools.err("memory_recall", query="billing", limit=bad)
        assert "limit" in message
    assert "state" in await tools.err("memory_recall", query="billing", state="gone")
    assert "type" in await tools.err("memory_recall", query="billing", type="rumour")
    assert "query" in await tools.err("memory_recall", query="x" * 2001)


def _heat(store: Path, mem_id: str) -> int:
    """The recall count the shared index holds for a memory, read as another process would."""
    conn = sqlite3.connect(db_path(store))
    try:
        row = conn.execute("SELECT recalls FROM heat WHERE memory_id = ?", (mem_id,)).fetchone()
    finally:
        conn.close()
    return row[0] if row else 0


async def test_a_recalls_heat_is_written_by_the_next_call_and_at_close(store: Path) -> None:
    """A recall counts its results' heat in memory; the server's next call that writes anyway (any tool but a
    keyword recall) writes it under the store lock, a recall once a second has passed, and the close: another
    process sees every count, and the next recall of the same server already ranks by it."""
    async with stdio_tools(store) as t:
        made = await t.remember("Espresso machine", "It needs descaling monthly.")
        first = (await t.recall("espresso descaling"))["results"][0]
        assert first["id"] == made["id"] and first["components"]["heat"] == 0
        second = (await t.recall("espresso descaling"))["results"][0]
        assert second["components"]["heat"] > 0  # the first recall's count, before this one ranked
        await t.status()
        assert _heat(store, made["id"]) == 2
        await t.recall("espresso")
        await anyio.sleep(1.1)  # past RecallCounts.WRITE_EVERY_S: the next recall writes what is counted
        await t.recall("espresso")
        assert _heat(store, made["id"]) == 3
        await t.recall("espresso")
    assert _heat(store, made["id"]) == 5  # written when the server closed
