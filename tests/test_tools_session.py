"""Session start through the real stdio server: the memory://context resource, the memory_start prompt,
the same text from `memory-mcp context`, and the current handoff from recall and status."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from .helpers import Tools, hand_memory, server_env, settle, stdio_tools, write_file
from .test_cli import _command, run

pytestmark = pytest.mark.anyio

CONFLICT = "conflicts:\n  - with: hand-b\n    status: open\n    detected: 2026-10-20T09:00:00Z\n"


def _cli(store: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [*_command(), "--store", str(store), *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=server_env(store), cwd=store.parent, timeout=60)


async def _read_context(t: Tools) -> str:
    read = await t.client.read_resource("memory://context")
    [content] = read.contents
    assert content.mime_type == "text/markdown"
    return content.text


async def _seed(t: Tools, store: Path) -> dict[str, str]:
    """A handoff, user-stated and inferred memories, a hand-recorded conflict and a review that is due."""
    ids = {}
    ids["fact"] = (await t.remember("Staging runs on Fly.io", "The staging stack runs on Fly.io in fra."))["id"]
    ids["inferred"] = (
        await t.remember("Prefers short answers, probably", "Seems to like terse replies.", type="preference")
    )["id"]
    ids["pref"] = (
        await t.remember(
            "Wants tests before merging", "The user wants tests on every PR.", type="preference", trust="user-stated"
        )
    )["id"]
    ids["decision"] = (
        await t.remember("Postgres over MySQL for billing", "Chosen for JSONB.", type="decision", trust="user-stated")
    )["id"]
    ids["review"] = (
        await t.remember("TLS certificate renewal", "Certificates renew in March.", review_after="2020-01-01")
    )["id"]
    ids["handoff"] = (
        await t.remember(
            "Left off: billing migration step 3",
            "Migrated invoices; next: payments table, then switch reads.",
            type="handoff",
        )
    )["id"]
    write_file(store / "memories" / "hand-a.md", hand_memory("hand-a", "Lint with ruff", "Use ruff.", extra=CONFLICT))
    write_file(store / "memories" / "hand-b.md", hand_memory("hand-b", "Lint with flake8", "Use flake8."))
    settle()
    return ids


async def test_context_resource_prompt_and_cli_say_the_same_in_order(store: Path) -> None:
    async with stdio_tools(store, mode="legacy") as t:
        ids = await _seed(t, store)
        listed = (await t.client.list_resources()).resources
        assert [str(r.uri) for r in listed] == ["memory://context"]
        text = await _read_context(t)
        prompts = (await t.client.list_prompts()).prompts
        assert [p.name for p in prompts] == ["memory_start"]
        got = await t.client.get_prompt("memory_start")
        prompt_text = "\n".join(m.content.text for m in got.messages)
        status = await t.status()

    assert text.startswith("# Memory context\n")
    order = [
        "Left off: billing migration step 3",  # the handoff, with its body
        "next: payments table",
        "## What the user stated",  # user-stated preferences and decisions before the rest
        "## Also worth knowing",
        "Prefers short answers, probably",
        "## Unresolved conflicts (1)",
        "pair_hash ",
        "## Reviews due (1)",
        "TLS certificate renewal",
    ]
    at = 0
    for part in order:  # each one after the one before
        at = text.find(part, at)
        assert at >= 0, (part, text)
    # both user-stated ones in the first section (their order between them is by freshness, which ties)
    stated = text[text.index("## What the user stated") : text.index("## Also worth knowing")]
    assert "Wants tests before merging" in stated and "Postgres over MySQL for billing" in stated
    assert "Prefers short answers" not in stated and "Staging runs on Fly.io" not in stated
    [conflict_line] = [line for line in text.splitlines() if "pair_hash " in line]
    assert "Lint with ruff" in conflict_line and "Lint with flake8" in conflict_line
    assert len(text.encode("utf-8")) <= 4096
    # the prompt carries the same context after how to use the tools
    assert text in prompt_text and prompt_text.index("memory_recall") < prompt_text.index(text)
    assert "trust" in prompt_text and "handoff" in prompt_text
    # status names the current handoff
    assert status["handoff"]["id"] == ids["handoff"] and status["handoff"]["title"].startswith("Left off")

    cli = _cli(store, "context")
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout == text
    status_cli = _cli(store, "status")
    assert "  handoff: Left off: billing migration step 3 (memories/" in status_cli.stdout


async def test_context_keeps_to_its_budget_and_still_lists_conflicts_and_reviews(store: Path) -> None:
    # 1536: every line but a confirmed one names who says so (provenance), and the notes-not-instructions line and
    # the fences around memory text take ~150 bytes more (issue 44)
    async with stdio_tools(store, env={"MEMORY_MCP_CONTEXT__BUDGET_BYTES": "1536"}) as t:
        await _seed(t, store)
        for n in range(40):
            await t.remember(f"Filler memory {n}", f"Some ordinary fact number {n} about the garden shed.")
        text = await _read_context(t)
    assert len(text.encode("utf-8")) <= 1536
    assert "Left off: billing migration step 3" in text
    assert "## Unresolved conflicts (" in text and "## Reviews due (1)" in text  # fillers may conflict too
    assert "more active memories: memory_recall finds them" in text
    # what the user stated gets the room first (which of the two fits depends on freshness)
    assert text.index("## What the user stated") < text.index("## Unresolved conflicts")
    assert "Wants tests before merging" in text or "Postgres over MySQL for billing" in text


async def test_a_store_without_handoff_says_so(store: Path) -> None:
    async with stdio_tools(store) as t:
        text = await _read_context(t)
        assert "No handoff yet" in text
        assert (await t.status())["handoff"] is None
        assert (await t.ok("memory_recall", type="handoff"))["results"] == []


async def test_recall_without_query_returns_the_current_handoff(store: Path) -> None:
    async with stdio_tools(store) as t:
        first = await t.remember("Left off: parser rewrite", "Tokenizer done; next the AST.", type="handoff")
        await t.remember("Parser uses a Pratt loop", "Operator precedence via binding powers.")
        found = await t.ok("memory_recall", type="handoff")
        assert [r["id"] for r in found["results"]] == [first["id"]]
        assert found["plan"] == "current handoff"
        second = await t.remember("Left off: AST done", "AST done; next the type checker.", type="handoff")
        found = await t.ok("memory_recall", type="handoff")
        assert [r["id"] for r in found["results"]] == [second["id"]]
        text = " ".join(c.text for c in (await t.raw("memory_recall", type="handoff")).content)
        assert "Left off: AST done" in text and found["results"][0]["path"] in text
        # without a query any other recall is an error naming the query
        assert "query: required, unless type=handoff" in await t.err("memory_recall")
        assert "query: required" in await t.err("memory_recall", type="decision")
        # a query with type=handoff still searches (archived handoffs too)
        old = await t.recall("parser rewrite", type="handoff", state="archived")
        assert [r["id"] for r in old["results"]] == [first["id"]]


def _stamped(mem_id: str, title: str, kind: str, updated: str, extra: str = "") -> str:
    return (
        f"---\nid: {mem_id}\ntype: {kind}\nstate: active\ntrust: user-stated\nentities: []\n"
        f"created: '2024-01-01T00:00:00Z'\nupdated: '{updated}'\n{extra}---\n# {title}\n\nAbout {title}.\n"
    )


def _memory_lines(text: str) -> list[str]:
    # one line per memory, inside its section's ~~~memory fence (issue 44): `- title (type, ...): excerpt [path]`
    return [line for line in text.splitlines() if line.startswith("- ") and line.endswith(".md]")]


def test_a_small_budget_shows_the_head_of_the_full_ranking(store: Path) -> None:
    """The context reads only the memories its budget could show (not every one): what it shows is exactly
    the start of what a budget large enough for all of them shows, whatever makes a memory rank high — an
    old one often recalled, one dated in the future, a hand-written stamp in another form."""
    memories = store / "memories"
    for n in range(90):  # more than the 512-byte budget's bound on lines, in each tier
        kind = "preference" if n % 3 == 0 else "fact"
        write_file(
            memories / f"m{n:03d}.md",
            _stamped(f"m{n:03d}", f"Plain note {n}", kind, f"2025-{n % 12 + 1:02d}-0{n % 9 + 1}T08:00:00Z"),
        )
    write_file(memories / "old.md", _stamped("old", "Ancient ferry timetable", "preference", "2019-01-01T00:00:00Z"))
    write_file(memories / "future.md", _stamped("future", "Dated ahead", "preference", "2999-01-01T00:00:00Z"))
    write_file(memories / "odd.md", _stamped("odd", "Written by hand", "preference", "2999-02-03"))
    write_file(
        memories / "gone.md",
        _stamped("gone", "Expired long ago", "preference", "2999-01-01T00:00:00Z", extra="valid_until: 2020-01-01\n"),
    )
    settle()
    for _ in range(12):  # recalled often: hot enough to rank high despite its age
        assert run(store, "recall", "ancient ferry timetable").returncode == 0
    full = run(store, "context", "--budget", "100000")
    small = run(store, "context", "--budget", "768")  # (768: the notes line and the fences take ~120 bytes, issue 44)
    assert full.returncode == 0 and small.returncode == 0, (full.stderr, small.stderr)
    every = _memory_lines(full.stdout)
    assert len(every) == 93 and not any("Expired long ago" in line for line in every)
    shown = _memory_lines(small.stdout)
    assert shown and shown == every[: len(shown)]
    assert f"_{93 - len(shown)} more active memories" in small.stdout
    # the ones that rank high for each reason are among them
    assert all(any(title in line for line in shown) for title in ("Ancient ferry", "Dated ahead", "Written by hand"))
