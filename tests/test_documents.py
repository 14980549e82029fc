"""Indexed documents through the real stdio server: citations that open at the right line, edits and
deletions seen on the next call with only that file re-hashed, and memory_read refusing anything that is
not an indexed document.

The corpus is generated here (about 30 Markdown and text files: headings, long sections without headings,
code fences with `#` comment lines, Korean and Spanish lines, a CRLF file and a BOM file), with a few
words planted at known lines so some citations can be checked exactly, not only "contains the word".
"""

from __future__ import annotations

import hashlib
import os
import random
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from memory_mcp.config import ConfigError, load_settings

from .helpers import Tools
from .test_scopes import project_tools

pytestmark = pytest.mark.anyio

MAX_BYTES = 20_000

FILLER = [
    "The team agreed to keep the dashboard simple",
    "Most of the discussion was about naming",
    "Nobody remembered why the old timeout was chosen",
    "The numbers looked fine on the second run",
    "A follow-up ticket was opened for the flaky check",
    "The vendor answered after three days",
    "We will revisit this after the quarter closes",
    "The old cron entry was left in place for now",
    "Two people volunteered to pair on the cleanup",
    "The graph showed a small bump around midnight",
    "It took longer than planned because of the holidays",
    "The checklist now has one more box to tick",
]
TOPICAL = [
    "The deploy job waits for the Kubernetes deployment to report ready",
    "Every PostgreSQL replica is checked before the switch",
    "A rollback plan is written down before the release starts",
    "The on-call engineer owns the rollback decision",
    "The migration script runs against a PostgreSQL snapshot first",
    "Our staging cluster mirrors the Kubernetes deployment of production",
]
KOREAN = [
    "배포를 자동화하기 전에 스테이징에서 두 번 확인한다.",
    "배포는 금요일 오후에 하지 않는다.",
    "데이터베이스 백업은 매일 새벽에 돈다.",
    "장애가 나면 먼저 채널에 공유한다.",
    "자동화 스크립트는 저장소 루트에 있다.",
]
SPANISH = [
    "La configuración del despliegue se revisa cada lunes.",
    "El despliegue a producción necesita dos aprobaciones.",
    "La base de datos PostgreSQL tiene una réplica de lectura.",
    "Guardamos la configuración en el repositorio, nunca en el servidor.",
    "Las notas de la reunión quedan en la wiki del equipo.",
]
FENCE = [
    "```bash",
    "# build and push the image",
    "docker build -t registry.local/app:$TAG .",
    "kubectl apply -f deploy/app.yaml",
    "kubectl rollout status deployment/app",
    "## not a heading either",
    "```",
]
SERVICES = ["billing", "search", "gateway", "ledger", "notifier", "scheduler", "catalog", "auth"]

# query → the words (folded) one of which the cited line must hold
QUERIES = {
    "rollback": ["rollback"],
    "kubernetes deployment": ["kubernetes", "deployment"],
    "kubectl": ["kubectl"],
    "배포를 자동화": ["배포", "자동화"],
    "configuracion despliegue": ["configuracion", "despliegue"],
    "postgres": ["postgres"],
    "runbook": ["runbook"],
    "notes": ["notes"],
    "sync": ["sync"],
    "handbook": ["handbook"],
    "image": ["image"],
    "zorblax": ["zorblax"],
}


def fold(text: str) -> str:
    """Case and accents ignored (Hangul kept whole), written independently of memory_mcp.query."""
    decomposed = unicodedata.normalize("NFD", text.casefold())
    return unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))


@dataclass
class Corpus:
    root: Path  # the project root
    files: dict[str, str] = field(default_factory=dict)  # path relative to the project root → text
    headings: dict[str, set[str]] = field(default_factory=dict)  # real #..### headings outside fences
    planted: dict[str, tuple[str, int]] = field(default_factory=dict)  # word → (path, line)


def _paragraph(rng: random.Random, n: int, pool: list[str] = FILLER) -> str:
    return " ".join(f"{rng.choice(pool)}." for _ in range(n))


def _section_lines(rng: random.Random, paragraphs: int, topical: float = 0.3) -> list[str]:
    out: list[str] = []
    for _ in range(paragraphs):
        pool = TOPICAL if rng.random() < topical else FILLER
        out += [_paragraph(rng, rng.randint(3, 7), pool), ""]
    return out


def build_corpus(project: Path, seed: int = 7) -> Corpus:
    rng = random.Random(seed)
    c = Corpus(project)

    def add(rel: str, lines: list[str], headings: set[str], newline: str = "\n", bom: bool = False) -> None:
        text = newline.join(lines) + newline
        c.files[rel] = text
        c.headings[rel] = headings
        path = project / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))

    for svc in SERVICES:
        title = f"{svc.capitalize()} runbook"
        lines = [f"# {title}", "", _paragraph(rng, 3, TOPICAL), "", "## Deploy", ""]
        lines += _section_lines(rng, 2) + FENCE + [""]
        # a long section whose later paragraphs never say its heading's words
        lines += ["## Rollback procedure", "", "Start the rollback from the release page.", ""]
        lines += _section_lines(rng, 6, topical=0.0)
        lines += ["### Verify", "", _paragraph(rng, 4), "", rng.choice(KOREAN), rng.choice(SPANISH)]
        add(f"docs/runbooks/{svc}-runbook.md", lines, {title, "Deploy", "Rollback procedure", "Verify"})

    for n in range(1, 7):
        title = f"ADR-{n:03d}: {rng.choice(['Use PostgreSQL', 'Split the gateway', 'Adopt feature flags'])}"
        lines = [f"# {title}", "", "## Context", ""] + _section_lines(rng, 2)
        lines += ["## Decision", ""] + _section_lines(rng, 1, topical=0.8)
        lines += ["## Consequences", ""] + _section_lines(rng, 2)
        add(f"docs/adr/{n:03d}-decision.md", lines, {title, "Context", "Decision", "Consequences"})

    # meeting notes: plain text, no headings at all, several chunks long
    for n in range(6):
        lines = [f"Meeting notes, sync {n + 1}", ""]
        for _ in range(9):
            lines += [_paragraph(rng, rng.randint(4, 8)), ""]
            if rng.random() < 0.5:
                lines += [rng.choice(KOREAN if rng.random() < 0.5 else SPANISH), ""]
        rel = f"docs/meetings/2026-03-{n + 10:02d}-sync.txt"
        if n == 2:
            lines.insert(15, "Action item: the zorblax migration is owned by Dana.")
            c.planted["zorblax"] = (rel, 16)
        add(rel, lines, set())

    for n in range(4):
        title = f"Guía de configuración {n + 1}"
        lines = [f"# {title}", "", SPANISH[n], SPANISH[(n + 1) % 5], "", "## Despliegue", ""]
        lines += [_paragraph(rng, 3), "", SPANISH[(n + 2) % 5], ""] + FENCE
        add(f"docs/es/guia-{n + 1}.md", lines, {title, "Despliegue"})

    for n in range(4):
        title = f"배포 가이드 {n + 1}"
        lines = [f"# {title}", "", KOREAN[n], KOREAN[(n + 1) % 5], "", "## 자동화", "", KOREAN[(n + 2) % 5], ""]
        lines += _section_lines(rng, 2)
        add(f"docs/ko/guide-{n + 1}.md", lines, {title, "자동화"})

    # no heading before the first section; a CRLF file and a BOM file with planted words
    lines = [_paragraph(rng, 5), "", "The quillfeather switch happens at dawn.", "", "## Later", "", _paragraph(rng, 3)]
    add("docs/preamble.md", lines, {"Later"}, newline="\r\n")
    c.planted["quillfeather"] = ("docs/preamble.md", 3)
    lines = ["# Glossary", "", "brindlewood: the codename of the archive service.", "", _paragraph(rng, 4), ""]
    lines += ["handbook: everything under docs/ (this file included).", ""]
    add("docs/glossary.md", lines, {"Glossary"}, bom=True)
    c.planted["brindlewood"] = ("docs/glossary.md", 3)

    for n, topic in enumerate(["Onboarding", "Tooling", "Release calendar"]):
        lines = [f"# {topic}", "", _paragraph(rng, 4, TOPICAL), "", "## Notes", "", _paragraph(rng, 3)]
        add(f"wiki/page-{n + 1}.md", lines, {topic, "Notes"})
    return c


def write_config(project: Path) -> None:
    (project / ".memory").mkdir(exist_ok=True)
    (project / ".memory" / "config.toml").write_text(
        f"""
[[documents.sources]]
label = "handbook"
path = "docs"
ignore = ["drafts/**", "*.tmp.md"]
max_file_bytes = {MAX_BYTES}

[[documents.sources]]
label = "wiki"
path = "wiki"
extensions = [".md"]
""",
        encoding="utf-8",
    )


def age(path: Path, seconds: float) -> None:
    """Put a file's mtime in the past, out of the reconciler's racy window (50 ms)."""
    past = time.time_ns() - int(seconds * 1e9)
    os.utime(path, ns=(past, past))


def age_all(root: Path, seconds: float = 120) -> None:
    for folder, _, names in os.walk(root):
        for name in names:
            if not Path(folder, name).is_symlink():
                age(Path(folder, name), seconds)


def snapshot(root: Path) -> dict[str, tuple[str, int]]:
    """sha256 and mtime of every file outside .memory/: the server must never write a document."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.is_symlink() and ".memory" not in p.relative_to(root).parts:
            out[str(p.relative_to(root))] = (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
    return out


async def cited_line(t: Tools, result: dict) -> str:
    got = await t.read(path=result["path"], from_line=result["line"], to_line=result["line"])
    assert got["kind"] == "document" and got["label"] == result["label"]
    assert (got["from_line"], got["to_line"]) == (result["line"], result["line"])
    return got["text"]


def _documents(answer: dict) -> list[dict]:
    return [r for r in answer["results"] if r["kind"] == "document"]


# ---------------------------------------------------------------- citations


async def test_every_document_citation_opens_at_a_line_holding_a_query_term(tmp_path: Path) -> None:
    project, store = tmp_path / "proj", tmp_path / "account"
    project.mkdir()
    corpus = build_corpus(project)
    write_config(project)
    age_all(project)
    before = snapshot(project)
    assert len(corpus.files) >= 30

    async with project_tools(project, store) as t:
        mem = await t.remember("Rollback owner", "The release captain decides on a rollback.", trust="user-stated")
        failures: list[str] = []
        checked = 0
        for query, needles in QUERIES.items():
            answer = await t.recall(query, limit=20)
            docs = _documents(answer)
            if not docs:
                failures.append(f"{query!r}: no document result")
            scores = [r["score"] for r in answer["results"]]
            if scores != sorted(scores, reverse=True):
                failures.append(f"{query!r}: results not sorted by score")
            for r in docs:
                checked += 1
                rel = r["path"]
                if rel not in corpus.files:
                    failures.append(f"{query!r}: cites {rel}, not a corpus file (relative to the project root)")
                    continue
                if r["label"] != ("wiki" if rel.startswith("wiki/") else "handbook") or r["scope"] != "local":
                    failures.append(f"{query!r}: {rel} has label {r['label']!r}, scope {r['scope']!r}")
                # the line as served, and the same line in the file as written
                text = await cited_line(t, r)
                on_disk = corpus.files[rel].replace("\r\n", "\n").split("\n")[r["line"] - 1]
                if text != on_disk:
                    failures.append(f"{query!r}: {rel}:{r['line']} read {text!r}, file has {on_disk!r}")
                if not any(n in fold(text) for n in needles):
                    failures.append(f"{query!r}: {rel}:{r['line']} is {text!r}, none of {needles}")
                names = corpus.headings[rel] | {Path(rel).name}
                if r["title"] not in names:
                    failures.append(f"{query!r}: {rel} chunk titled {r['title']!r}, not a heading of the file")
        assert not failures, f"{len(failures)} bad citations of {checked}:\n" + "\n".join(failures[:40])
        assert checked >= 60, f"only {checked} document results over {len(QUERIES)} queries"

        # planted words: the exact line, also in a CRLF file and after a BOM
        for word, (rel, line) in corpus.planted.items():
            docs = _documents(await t.recall(word, limit=20))
            assert [(r["path"], r["line"]) for r in docs] == [(rel, line)], word

        # memories and documents share one ranked list: the person's own memory titled with the query
        # leads the imported documents (same text match, higher trust), whatever the two corpora's sizes
        mixed = await t.recall("rollback", limit=20)
        assert {r["kind"] for r in mixed["results"]} == {"memory", "document"}
        assert mixed["results"][0]["id"] == mem["id"], mixed["results"][:3]

        # a range read: exact lines, and the 200-line cap
        rel = "docs/runbooks/billing-runbook.md"
        lines = corpus.files[rel].split("\n")
        got = await t.read(path=rel, from_line=5, to_line=12)
        assert got["text"] == "\n".join(lines[4:12]) and got["total_lines"] == len(lines) - 1
        assert "200" in await t.err("memory_read", path=rel, from_line=1, to_line=201)
        got = await t.read(path=rel)
        assert got["from_line"] == 1 and got["to_line"] == min(200, len(lines) - 1)

        status = await t.ok("memory_status")
        sources = {s["label"]: s for s in status["sources"]}
        assert set(sources) == {"handbook", "wiki"}
        wiki = [p for p in corpus.files if p.startswith("wiki/")]
        assert sources["wiki"]["files"] == len(wiki)
        assert sources["handbook"]["files"] == len(corpus.files) - len(wiki)
        assert sources["wiki"]["bytes"] == sum((project / p).stat().st_size for p in wiki)
        assert sources["handbook"]["skipped"] == 0 and sources["handbook"]["last_indexed"]

    assert snapshot(project) == before, "the server wrote to a document"


# ---------------------------------------------------------------- edits and deletions


async def test_edits_and_deletions_are_seen_next_call_with_only_that_file_rehashed(tmp_path: Path) -> None:
    project, store = tmp_path / "proj", tmp_path / "account"
    project.mkdir()
    corpus = build_corpus(project)
    write_config(project)
    age_all(project)
    total = len(corpus.files)

    async with project_tools(project, store) as t:
        first = (await t.recall("zorblax"))["index"]["documents"]
        assert (first["scanned"], first["hashed"], first["reindexed"], first["removed"]) == (total, total, total, 0)
        quiet = (await t.recall("zorblax"))["index"]["documents"]
        assert (quiet["scanned"], quiet["hashed"], quiet["reindexed"]) == (total, 0, 0)

        # edit: the planted word moves to a new last line, replaced where it was
        rel, old_line = corpus.planted["zorblax"]
        path = project / rel
        lines = path.read_text(encoding="utf-8").split("\n")
        lines[old_line - 1] = "Action item: the migration is owned by Dana."
        lines[-1:] = ["Decision: the snowberry cutover replaces the zorblax plan.", ""]
        path.write_text("\n".join(lines), encoding="utf-8")
        age(path, 60)
        answer = await t.recall("snowberry")
        docs = answer["index"]["documents"]
        assert (docs["scanned"], docs["hashed"], docs["reindexed"], docs["removed"]) == (total, 1, 1, 0)
        assert [(r["path"], r["line"]) for r in _documents(answer)] == [(rel, len(lines) - 1)]
        assert [(r["path"], r["line"]) for r in _documents(await t.recall("zorblax"))] == [(rel, len(lines) - 1)]

        # a touch without a change: hashed again, nothing re-chunked
        age(path, 30)
        docs = (await t.recall("snowberry"))["index"]["documents"]
        assert (docs["hashed"], docs["reindexed"]) == (1, 0)
        assert (await t.recall("snowberry"))["index"]["documents"]["hashed"] == 0

        # a new file: indexed on the next call, alone
        new = project / "docs" / "adr" / "007-new.md"
        new.write_text("# ADR-007: Adopt snowberry\n\nWe adopt the snowberry layout.\n", encoding="utf-8")
        time.sleep(0.1)  # out of the racy window the other way: by waiting
        answer = await t.recall("snowberry", limit=20)
        docs = answer["index"]["documents"]
        assert (docs["scanned"], docs["hashed"], docs["reindexed"]) == (total + 1, 1, 1)
        assert ("docs/adr/007-new.md", 1) in [(r["path"], r["line"]) for r in _documents(answer)]

        # delete: gone from recall and from memory_read on the next call, nothing re-hashed
        path.unlink()
        answer = await t.recall("snowberry", limit=20)
        docs = answer["index"]["documents"]
        assert (docs["scanned"], docs["hashed"], docs["reindexed"], docs["removed"]) == (total, 0, 0, 1)
        assert rel not in [r["path"] for r in _documents(answer)]
        assert "not an indexed document" in await t.err("memory_read", path=rel, from_line=1, to_line=1)
        again = (await t.recall("snowberry"))["index"]["documents"]
        assert (again["hashed"], again["removed"]) == (0, 0)
        handbook = (await t.ok("memory_status"))["sources"][0]
        assert handbook["label"] == "handbook" and handbook["files"] == total - 3  # one added, one deleted, no wiki


# ---------------------------------------------------------------- refusals and skipped files


async def test_memory_read_refuses_anything_not_indexed_and_skips_are_reported(tmp_path: Path) -> None:
    project, store = tmp_path / "proj", tmp_path / "account"
    project.mkdir()
    corpus = build_corpus(project)
    write_config(project)
    docs = project / "docs"
    secret = "kestrelmoon secret line"
    refused = {
        "outside.md": f"# Outside\n\n{secret}\n",  # in the project, in no source
        "docs/tool.py": f"# {secret}\n",  # a source directory, not an indexed extension
        "docs/drafts/plan.md": f"# Draft\n\n{secret}\n",  # ignored by drafts/**
        "docs/scratch.tmp.md": f"# Scratch\n\n{secret}\n",  # ignored by *.tmp.md
        "wiki/notes.txt": f"{secret}\n",  # .txt is not an extension of the wiki source
        ".memory/config.toml.bak": f"{secret}\n",
    }
    for rel, text in refused.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text, encoding="utf-8")
    skipped = {
        "docs/logo.md": (b"# Logo\n\x00\x01\x02 kestrelmoon", "binary"),
        "docs/huge.md": (("kestrelmoon " * 2000).encode(), f"larger than {MAX_BYTES} bytes"),
        "docs/latin1.txt": ("configuración kestrelmoon".encode("latin-1"), "not UTF-8"),
    }
    for rel, (data, _) in skipped.items():
        (project / rel).write_bytes(data)
    outside_project = tmp_path / "elsewhere.md"
    outside_project.write_text(f"{secret}\n", encoding="utf-8")
    (docs / "link.md").symlink_to(outside_project)  # a link out of the source is not followed
    age_all(project)

    async with project_tools(project, store) as t:
        answer = await t.recall("kestrelmoon", limit=20)
        assert _documents(answer) == [], "nothing readable holds the word"
        report = answer["index"]["documents"]
        reasons = {Path(s["path"]).relative_to(project).as_posix(): s["reason"] for s in report["skipped"]}
        assert set(reasons) == set(skipped)
        for rel, (_, why) in skipped.items():
            assert why in reasons[rel], f"{rel}: {reasons[rel]}"
        assert report["scanned"] == len(corpus.files) + len(skipped)

        attempts = [
            *refused,
            *skipped,
            "docs/link.md",
            str(outside_project),
            str(project / "outside.md"),
            "../elsewhere.md",
            "docs/../outside.md",
            "docs/runbooks/../../outside.md",
            "memories/../../outside.md",
            "/etc/hostname",
            "docs/missing.md",
        ]
        for rel in attempts:
            text = await t.err("memory_read", path=rel, from_line=1, to_line=3)
            assert "path" in text, f"{rel}: {text}"
            assert secret not in text and "kestrelmoon" not in text

        # the same files are readable once they are indexed: the refusal is about the index, not the name
        assert (await t.read(path="docs/runbooks/billing-runbook.md", from_line=1, to_line=1))["text"]
        assert (await t.read(path=str(project / "docs/glossary.md"), from_line=3, to_line=3))["text"].startswith(
            "brindlewood"
        )

        status = await t.ok("memory_status")
        handbook = next(s for s in status["sources"] if s["label"] == "handbook")
        assert handbook["skipped"] == len(skipped)
        assert handbook["files"] == len([p for p in corpus.files if p.startswith("docs/")])
        expected_bytes = sum((project / p).stat().st_size for p in corpus.files if p.startswith("docs/"))
        expected_bytes += sum(len(data) for data, _ in skipped.values())
        assert handbook["bytes"] == expected_bytes

        # a skipped file fixed by hand is indexed on the next call
        (docs / "latin1.txt").write_text("configuración kestrelmoon\n", encoding="utf-8")
        age(docs / "latin1.txt", 60)
        answer = await t.recall("kestrelmoon", limit=20)
        assert [(r["path"], r["line"]) for r in _documents(answer)] == [("docs/latin1.txt", 1)]
        assert answer["index"]["documents"]["hashed"] == 1
        assert await cited_line(t, _documents(answer)[0]) == "configuración kestrelmoon"


# ---------------------------------------------------------------- symlinks


async def test_a_project_bound_through_a_symlink_reads_its_own_citations(tmp_path: Path) -> None:
    real, store = tmp_path / "real-project", tmp_path / "account"
    (real / "notes-real" / "sub").mkdir(parents=True)
    (real / "notes-real" / "sub" / "plan.md").write_text("# Plan\n\nThe gallimaufry step comes first.\n")
    (real / "docs").symlink_to("notes-real")  # a source directory that is a symlink inside the project
    (real / ".memory").mkdir()
    (real / ".memory" / "config.toml").write_text('[[documents.sources]]\nlabel = "docs"\npath = "docs"\n')
    link = tmp_path / "link-to-project"
    link.symlink_to(real)
    age_all(real)

    async with project_tools(link, store) as t:
        docs = _documents(await t.recall("gallimaufry"))
        assert [(r["path"], r["line"]) for r in docs] == [("notes-real/sub/plan.md", 3)]
        assert "gallimaufry" in await cited_line(t, docs[0])
        # the same file by the path through the symlinks, relative and absolute
        for path in ("docs/sub/plan.md", str(link / "docs" / "sub" / "plan.md")):
            assert "gallimaufry" in (await t.read(path=path, from_line=3, to_line=3))["text"]


def test_a_project_file_cannot_index_outside_its_project_through_a_symlink(tmp_path: Path) -> None:
    project, secrets = tmp_path / "cloned", tmp_path / "home-secrets"
    (project / ".memory").mkdir(parents=True)
    secrets.mkdir()
    (project / "inside").mkdir()
    (project / "docs").symlink_to(secrets)
    (project / "ok").symlink_to("inside")
    config = project / ".memory" / "config.toml"
    config.write_text('[[documents.sources]]\nlabel = "docs"\npath = "docs"\n')
    with pytest.raises(ConfigError) as refused:
        load_settings(project_root=project, env={}, user_config=tmp_path / "none.toml")
    text = str(refused.value)
    assert "documents.sources[0].path" in text and "symlink" in text and str(config) in text
    # a symlink that stays inside the project is fine
    config.write_text('[[documents.sources]]\nlabel = "docs"\npath = "ok"\n')
    settings = load_settings(project_root=project, env={}, user_config=tmp_path / "none.toml")
    assert [s.label for s in settings.document_sources()] == ["docs"]


async def test_with_documents_indexed_a_memory_still_cites_the_line_holding_the_query(tmp_path: Path) -> None:
    # the document pool is ranked first; the memory pools after it must still get their cited lines
    project, store = tmp_path / "proj", tmp_path / "account"
    project.mkdir()
    build_corpus(project)
    write_config(project)
    age_all(project)
    async with project_tools(project, store) as t:
        body = "First a line about nothing much.\nThen another one.\nThe zanzibarquota flag of each release sits on line three."
        mem = await t.remember("Flags of the deploy", body, trust="user-stated")
        answer = await t.recall("release zanzibarquota", limit=20)
        assert any(r["kind"] == "document" for r in answer["results"])  # both pools had candidates
        hit = next(r for r in answer["results"] if r["kind"] == "memory")
        assert hit["id"] == mem["id"]
        got = await t.read(path=hit["path"], from_line=hit["line"], to_line=hit["line"])
        assert "zanzibarquota" in got["text"], (hit["line"], got["text"])
