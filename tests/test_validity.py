"""Memory that knows time (issue 27 part 2), through the real stdio server and the real CLI on real files:
validity days and expiry, `superseded_at`, recall `as_of`, and the supersede chain's dates in memory_read."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .helpers import frontmatter, settle, stdio_tools, write_file
from .test_cli import run

pytestmark = pytest.mark.anyio


def _file(mem_id: str, title: str, body: str, created: str, extra: str = "", state: str = "active") -> str:
    """A canon file written by hand, with its own history (`created`, `updated`, links)."""
    head = f"id: {mem_id}\ntype: fact\nstate: {state}\ntrust: user-stated\nentities: [atlas-api]\n"
    return f"---\n{head}created: {created}\nupdated: {created}\n{extra}---\n\n# {title}\n\n{body}\n"


def _files(store: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((store / "memories").glob("*.md"))}


async def test_validity_days_are_written_checked_and_an_expired_memory_is_not_served(store: Path) -> None:
    async with stdio_tools(store) as t:
        old = await t.remember(
            "Sprint freeze on the billing repo",
            "No merges to the billing repo until the sprint review.",
            valid_from="2026-01-05",
            valid_until="2026-01-16",
        )
        live = await t.remember(
            "Grafana holds the billing dashboards", "Dashboards for billing live in Grafana.", valid_until="2099-12-31"
        )
        text = (store / old["path"]).read_text()
        assert "valid_from: 2026-01-05\nvalid_until: 2026-01-16\n" in text  # dates unquoted, in the field order
        assert old["conflicts"] == [] == live["conflicts"]
        assert await t.recall_ids("billing") == [live["id"]]  # past valid_until: not served
        status = await t.status()
        assert [(e["id"], e["valid_until"]) for e in status["expired"]] == [(old["id"], "2026-01-16")]
        context = (await t.client.read_resource("memory://context")).contents[0].text
        assert "Sprint freeze" not in context and "billing dashboards" in context
        assert (store / old["path"]).exists()  # expiry hides, it never deletes
        # bad days and an end before the start are refused naming the field; nothing is written
        before = _files(store)
        assert "valid_until" in await t.err("memory_remember", title="T", body="B", valid_until="2026-02-30")
        err = await t.err("memory_remember", title="T", body="B", valid_from="2026-03-01", valid_until="2026-02-01")
        assert "valid_until" in err and "before valid_from" in err
        err = await t.err("memory_update", op="edit", id=old["id"], valid_until="2026-01-01")
        assert "valid_until" in err and "2026-01-05" in err  # checked against the file's valid_from
        assert "valid_from" in await t.err("memory_update", op="edit", id=old["id"], valid_from="soon")
        assert _files(store) == before
        # extending it serves it again; an empty value removes the day from the file
        await t.ok("memory_update", op="edit", id=old["id"], valid_until="2099-01-31")
        assert old["id"] in await t.recall_ids("billing")
        assert (await t.status())["expired"] == []
        await t.ok("memory_update", op="edit", id=old["id"], valid_from="")
        assert "valid_from" not in frontmatter(store / old["path"])


async def test_a_supersede_records_when_and_read_shows_the_chain_with_its_dates(store: Path) -> None:
    async with stdio_tools(store) as t:
        first = await t.remember("Atlas API cache is Memcached", "The atlas API caches sessions in Memcached.")
        second = await t.remember(
            "Atlas API cache is Redis", "The atlas API caches sessions in Redis 7.", supersedes=[first["id"]]
        )
        meta1, meta2 = frontmatter(store / first["path"]), frontmatter(store / second["path"])
        assert meta1["state"] == "archived" and str(meta1["superseded_at"]) == str(meta2["created"])
        third = await t.remember("Atlas API cache is Valkey", "The atlas API caches sessions in Valkey.")
        await t.ok("memory_update", op="supersede", id=second["id"], by=third["id"])
        meta2, meta3 = frontmatter(store / second["path"]), frontmatter(store / third["path"])
        assert meta2["state"] == "archived" and meta2["superseded_at"] >= meta3["created"]
        recorded = re.search(r"^superseded_at: (\S+)$", (store / second["path"]).read_text(), re.M)
        read = await t.read(id=second["id"])
        assert recorded is not None and read["superseded_at"] == recorded.group(1)
        assert [(c["id"], c["superseded_at"] is not None) for c in read["supersedes_chain"]] == [(first["id"], True)]
        assert read["superseded_by_chain"][0]["id"] == third["id"] and read["superseded_by_chain"][0]["created"]
        assert read["superseded_by_chain"][0]["superseded_at"] is None  # the current one


HISTORY = {
    "pg.md": _file(
        "ATLASPG",
        "atlas-api stores its data in PostgreSQL 15",
        "The atlas-api service keeps orders in a PostgreSQL 15 database.",
        "2026-02-03T10:00:00Z",
        "superseded_by: [ATLASCRDB]\n",  # no superseded_at: written before the field existed
        state="archived",
    ),
    "crdb.md": _file(
        "ATLASCRDB",
        "atlas-api moved its database to CockroachDB",
        "The atlas-api service moved its orders database to CockroachDB.",
        "2026-06-10T09:00:00Z",
        "supersedes: [ATLASPG]\n",
    ),
    "mysql.md": _file(
        "ATLASMYSQL",
        "atlas-api database is MySQL",
        "The atlas-api service database is MySQL (a mistake, retracted).",
        "2026-01-10T09:00:00Z",
        "deprecated_reason: wrong\n",
        state="deprecated",
    ).replace("updated: 2026-01-10T09:00:00Z", "updated: 2026-03-01T09:00:00Z"),
    "spanner.md": _file(
        "ATLASSPANNER",
        "atlas-api database will be Spanner from September",
        "The atlas-api service database will be Spanner, planned in April.",
        "2026-04-01T09:00:00Z",
        "valid_from: 2026-09-01\n",
    ),
}


def _history(store: Path) -> None:
    for name, text in HISTORY.items():
        write_file(store / "memories" / name, text)
    settle()


async def test_recall_as_of_answers_what_the_store_held_as_current_that_day(store: Path) -> None:
    _history(store)
    query = "which database does atlas-api use"
    async with stdio_tools(store) as t:
        now = await t.recall(query, limit=20)
        assert now.get("as_of") is None
        assert [r["id"] for r in now["results"]][0] == "ATLASCRDB" and "ATLASMYSQL" not in str(now["results"])
        expected = {
            "2026-01-20": {"ATLASMYSQL"},  # before PostgreSQL was written down; MySQL not yet retracted
            "2026-02-15": {"ATLASMYSQL", "ATLASPG"},
            "2026-05-15": {"ATLASPG"},  # MySQL retracted in March; Spanner not valid yet; CockroachDB not written
            "2026-06-10": {"ATLASCRDB"},  # superseded on the day its successor was created (no superseded_at)
            "2026-10-01": {"ATLASCRDB", "ATLASSPANNER"},
        }
        for day, ids in expected.items():
            answer = await t.recall(query, limit=20, as_of=day)
            assert answer["as_of"] == day
            assert {r["id"] for r in answer["results"]} == ids, day
        may = await t.raw("memory_recall", query=query, as_of="2026-05-15")
        assert "as of 2026-05-15" in may.content[0].text and "pg.md" in may.content[0].text
        assert "as_of" in await t.err("memory_recall", query=query, as_of="May")
        read = await t.read(id="ATLASPG")
        assert read["superseded_at"] == "2026-06-10T09:00:00Z"  # the successor's created stands in
        assert read["superseded_by_chain"][0]["created"] == "2026-06-10T09:00:00Z"
    out = run(store, "recall", query, "--as-of", "2026-05-15")
    assert out.returncode == 0, out.stderr
    assert "as of 2026-05-15" in out.stdout and "memories/pg.md" in out.stdout and "crdb.md" not in out.stdout
    out = run(store, "read", "ATLASPG")
    assert "superseded by: ATLASCRDB [active, created 2026-06-10]" in out.stdout


def test_the_cli_takes_and_checks_the_days(store: Path) -> None:
    made = run(store, "remember", "Office closed", "The office is closed.", "--valid-until", "2026-01-02", "--json")
    assert made.returncode == 0, made.stderr
    mem = json.loads(made.stdout)
    assert frontmatter(store / mem["path"])["valid_until"].isoformat() == "2026-01-02"
    assert "expired 2026-01-02: Office closed" in run(store, "status").stdout
    bad = run(store, "update", "edit", mem["id"], "--valid-from", "2026-02-01")
    assert bad.returncode != 0 and "valid_from" in bad.stderr + bad.stdout
    ok = run(store, "update", "edit", mem["id"], "--valid-until", "2099-01-01")
    assert ok.returncode == 0, ok.stderr
    assert "Office closed" in run(store, "recall", "office closed").stdout
