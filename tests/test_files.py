"""The files themselves: names that keep every script and suit every OS, times in one style, Obsidian links."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import mcp
import pytest

from memory_mcp.edges.server import build_server
from memory_mcp.tools.service import MemoryService

from .helpers import Tools, a_written_conflict, frontmatter, hand_memory, settle, write_file

pytestmark = pytest.mark.anyio

# characters Windows refuses in a name, and names it refuses whatever the extension
WINDOWS_BAD = set('<>:"/\\|?*') | {chr(c) for c in range(32)}
WINDOWS_RESERVED = {"con", "prn", "aux", "nul", *(f"com{n}" for n in range(10)), *(f"lpt{n}" for n in range(10))}


@asynccontextmanager
async def tools_with(root: Path, **options: object) -> AsyncIterator[Tools]:
    service = MemoryService(root, **options)
    try:
        async with mcp.Client(build_server(service)) as client:
            yield Tools(client)
    finally:
        service.close()


def _portable(name: str) -> None:
    stem = name.removesuffix(".md")
    assert not (set(name) & WINDOWS_BAD), name
    assert stem.split(".")[0] not in WINDOWS_RESERVED and not name.endswith((" ", ".")), name
    assert unicodedata.is_normalized("NFC", name), name
    assert len(name.encode("utf-8")) <= 143, name  # eCryptfs, the tightest common limit; ext4/APFS/NTFS 255


SLUGS = [
    ("레디스 캐시 TTL은 기본 1시간", "레디스-캐시-ttl은-기본-1시간"),
    ("Despliegues a producción solo de martes a jueves", "despliegues-a-producción-solo-de-martes-a-jueves"),
    ("東京のサーバーは午前2時に再起動", "東京のサーバーは午前2時に再起動"),
    ("हिन्दी में लिखा नोट", "हिन्दी-में-लिखा-नोट"),  # combining marks stay: the words stay readable
    ("Привет, мир: заметка", "привет-мир-заметка"),
    ("مرحبا بالعالم", "مرحبا-بالعالم"),
    ("ｆｕｌｌ　ｗｉｄｔｈ ＴＴＬ", "full-width-ttl"),
    ("Cafe\u0301 au lait", "café-au-lait"),  # decomposed input, composed (NFC) name
    ('a/b\\c:d*e?f"g<h>i|j. ', "a-b-c-d-e-f-g-h-i-j"),
    ("CON", "con-memory"),
    ("🎉🎉🎉", "memory"),
]


async def test_file_names_keep_every_script_and_are_safe_everywhere(store: Path) -> None:
    async with tools_with(store) as t:
        for title, slug in SLUGS:
            made = await t.remember(title, f"A note titled {title}.")
            name = Path(made["path"]).name
            assert re.fullmatch(re.escape(slug) + r"-[0-9a-z]{6}\.md", name), (title, name)
            assert (store / made["path"]).is_file()
            _portable(name)
        long = await t.remember("캐시" * 90, "A very long Korean title.")
        name = Path(long["path"]).name
        _portable(name)
        assert name.startswith("캐시캐시캐시") and len(name.encode("utf-8")) <= 120 + len("-123456.md")
        # the Hangul name is a working citation
        hit = (await t.recall("레디스 캐시"))["results"][0]
        assert hit["path"].startswith("memories/레디스-캐시-ttl은-기본-1시간-")
        assert (await t.read(path=hit["path"]))["id"] == hit["id"]


TIME_LINE = re.compile(r"^(created|updated|review_after|detected|resolved): (.*)$", re.M)


def _times(path: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, value in TIME_LINE.findall(re.sub(r"^\s+", "", path.read_text(encoding="utf-8"), flags=re.M)):
        out.setdefault(key, []).append(value)
    return out


async def test_the_server_writes_times_in_one_style(store: Path) -> None:
    async with tools_with(store) as t:
        # issue 42: only a near-certain pair is written (a lone Tuesday / Thursday pair is listed, not written)
        a, b = await a_written_conflict(t, review_after="2027-01-31")
        assert b["conflicts"], "the gate records a conflict with its detected time"
        await t.ok("memory_forget", id=a["id"], mode="archive")
        pair = b["conflicts"][0]["pair_hash"]
        await t.ok("memory_update", op="resolve_conflict", id=b["id"], pair_hash=pair, resolution="keep_both")
    for made in (a, b):
        times = _times(store / made["path"])
        values = [v for vs in times.values() for v in vs]
        assert values and all(not v.startswith(("'", '"')) for v in values), times
        assert all(re.fullmatch(r"\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}Z)?", v) for v in values), times
    assert set(_times(store / b["path"])) == {"created", "updated", "review_after", "detected", "resolved"}


@pytest.mark.parametrize("quote", ["", "'", '"'])
async def test_a_rewrite_keeps_the_style_of_hand_written_times_and_changes_only_what_it_must(
    store: Path, quote: str
) -> None:
    path = store / "memories" / "by-hand.md"
    text = hand_memory("byhand01", "Written by hand", "Someone typed this file.")
    text = text.replace("T10:00:00Z", f"T10:00:00Z{quote}").replace(": 2026-01-05", f": {quote}2026-01-05")
    write_file(path, text)
    settle()
    async with tools_with(store) as t:
        await t.ok("memory_forget", id="byhand01", mode="archive")
    before, after = text.splitlines(), path.read_text(encoding="utf-8").splitlines()
    changed = [(x, y) for x, y in zip(before, after, strict=True) if x != y]
    assert [x.split(":")[0] for x, _ in changed] == ["state", "updated"], changed
    updated = changed[1][1].removeprefix("updated: ")
    assert updated.startswith(quote) and updated.endswith(quote) and updated != f"{quote}2026-01-05T10:00:00Z{quote}"
    if quote:
        assert updated[1] != quote


def _link_parts(entry: str) -> tuple[str, str]:
    match = re.fullmatch(r"\[\[([^|\]]+)\|([^|\]]+)\]\]", entry)
    assert match, entry
    return match.group(1), match.group(2)


async def test_obsidian_links_resolve_to_files_and_parse_back_to_ids(store: Path) -> None:
    memories = store / "memories"
    async with tools_with(store, obsidian_links=True) as t:
        old = await t.remember("Atlas API deploys to Heroku", "Atlas API is deployed to Heroku.")
        new = await t.remember("Atlas API moves to AWS ECS", "Atlas API now runs on ECS.", supersedes=[old["id"]])
        ref = await t.remember("레디스 캐시 TTL은 기본 1시간", "Redis cache TTL is one hour.")
        await t.ok("memory_update", op="link", id=new["id"], other_id=ref["id"])
        by_id = {m["id"]: m for m in (old, new, ref)}
        for made, key, target in (
            (new, "supersedes", old),
            (old, "superseded_by", new),
            (new, "related", ref),
            (ref, "related", new),
        ):
            entries = frontmatter(store / made["path"])[key]
            stem, mem_id = _link_parts(entries[0])
            assert mem_id == target["id"]
            # Obsidian resolves [[stem]] by file name: that file exists and is the target's
            assert (memories / f"{stem}.md").is_file() and f"memories/{stem}.md" == by_id[mem_id]["path"]
        # ...and everything that reads ids still sees ids
        read_old = await t.read(id=old["id"])
        assert [c["id"] for c in read_old["superseded_by_chain"]] == [new["id"]]
        assert read_old["frontmatter"]["state"] == "archived"
        assert [c["id"] for c in (await t.read(id=new["id"]))["supersedes_chain"]] == [old["id"]]
        verify = await t.ok("memory_reindex", verify=True)
        assert verify["mismatches"] == [] and verify["unparseable"] == []


async def test_bare_id_and_obsidian_link_files_by_hand_both_work(store: Path) -> None:
    write_file(store / "memories" / "one.md", hand_memory("handone1", "First by hand", "The first one."))
    write_file(
        store / "memories" / "two.md",
        hand_memory("handtwo2", "Second by hand", "The second one.", extra="supersedes: [handone1]\n"),
    )
    write_file(
        store / "memories" / "three.md",
        hand_memory("handthree3", "Third by hand", "Links back.", extra='related:\n  - "[[two|handtwo2]]"\n'),
    )
    write_file(
        store / "memories" / "four.md",
        hand_memory("handfour4", "Fourth by hand", "Links by id.", extra='related: ["[[handtwo2]]"]\n'),
    )
    settle()
    async with tools_with(store, obsidian_links=True) as t:
        assert (await t.status())["unparseable"] == []
        two = await t.read(id="handtwo2")
        assert [c["id"] for c in two["supersedes_chain"]] == ["handone1"]
        # a new link appended to a hand-written list keeps the entries already there, as they were
        await t.ok("memory_update", op="link", id="handthree3", other_id="handone1")
        text = (store / "memories" / "three.md").read_text(encoding="utf-8")
        assert '  - "[[two|handtwo2]]"\n  - ' in text
        assert re.search(r"\[\[one\|handone1\]\]", text)
        four = (store / "memories" / "four.md").read_bytes()
        linked = await t.ok("memory_update", op="link", id="handfour4", other_id="handtwo2")
        # `[[handtwo2]]` already names handtwo2: only the other side gets the link
        assert linked["changed"] == ["handtwo2"] and (store / "memories" / "four.md").read_bytes() == four


async def test_properties_are_flat_except_conflicts(store: Path) -> None:
    """Obsidian's Properties panel shows scalars and lists of scalars; nested maps only as raw text."""
    async with tools_with(store, obsidian_links=True) as t:
        a = await t.remember("Team uses tabs", "Tabs everywhere.", entities=["style"], source="chat")
        b = await t.remember("Team uses spaces", "Spaces everywhere.", entities=["style"], supersedes=[a["id"]])
        await t.ok("memory_update", op="link", id=b["id"], other_id=a["id"])
        c = await t.remember("Team uses two spaces", "Two spaces.", entities=["style"])
    for made in (a, b, c):
        for key, value in frontmatter(store / made["path"]).items():
            if key == "conflicts":  # one record of 3-6 fields per pair: a list of maps on purpose
                assert all(isinstance(e, dict) for e in value)
                continue
            items = value if isinstance(value, list) else [value]
            assert all(not isinstance(v, dict | list) for v in items), (key, value)
