"""Hostile input: generated frontmatter, YAML and bodies (hypothesis), explicit attack files through the
real stdio server, and every tool argument at and one past its limit.

Properties:
- `canon.parse` answers a Memory or raises CanonError, for any bytes at all;
- a server rewrite of any parseable file keeps its id, title, body and every other field;
- through reconcile, every file in memories/ is either a memory or reported unparseable with a reason, and
  a good memory next to bad files stays findable.

Default runs try a few hundred inputs; `python -m pytest -m long` tries thousands (see guarantees.md).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import string
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_mcp.canon import files as canon
from memory_mcp.tools.limits import (
    MAX_BODY,
    MAX_ENTITIES,
    MAX_ENTITY_LEN,
    MAX_QUERY,
    MAX_READ_LINES,
    MAX_SOURCE,
    MAX_TITLE,
    RECALL_LIMIT,
)
from memory_mcp.tools.service import MemoryService

from .helpers import Tools, hand_memory, reconcile_of, stdio_tools, write_file

# ---------------------------------------------------------------- generators

HOSTILE_LINES = [
    "id: &a anchored",
    "alias: *a",
    "obj: !!python/object/apply:os.system ['touch PWNED']",
    "obj: !!python/name:os.system",
    "custom: !mytag value",
    "bin: !!binary aGVsbG8=",
    "set: !!set {a, b}",
    "<<: {merged: 1}",
    "nested: " + "[" * 400 + "]" * 400,
    "nested: " + "{a: " * 300 + "1" + "}" * 300,
    "created: 2020-13-45",
    "updated: 2021-02-30T25:61:00Z",
    "review_after: 0000-00-00",
    "big: " + "9" * 5000,
    "float: 1e400",
    "? [complex, key]\n: value",
    "id: [list, id]",
    "id: {map: id}",
    "id: ''",
    "id: null",
    "id: 12345",
    "id: .inf",
    "id: ../../etc/passwd",
    "type: banana",
    "state: [active]",
    "trust: {a: 1}",
    "entities: {a: 1}",
    "entities: [[nested]]",
    "entities: " + ", ".join(f"e{n}" for n in range(300)),
    "supersedes: 7",
    "conflicts: text",
    "conflicts: [{}]",
    "conflicts: [{with: [x, y]}]",
    "conflicts: [{with: abc, status: [1]}]",
    "title: {a: b}",
    "source: [a, b]",
    "%YAML 1.1",
    "%TAG ! tag:example.com,2000:",
    "...",
    "---",
    "\tid: tabbed",
    "key: 'unterminated",
    'key: "\\uD800 lone surrogate escape"',
    "key: |\n  block\n  text",
    "key: >-\n folded\n text",
    "id: dup\nid: dup2",
    "# only a comment",
    "",
]
YAMLISH = st.text(alphabet=st.sampled_from(list("abcdeid:-[]{}&*!|>'\"#%@`,?\n\t 0123456789.~<=\\")), max_size=200)
IDS = st.one_of(
    st.from_regex(r"\A[0-9A-Za-z][0-9A-Za-z_-]{0,20}\Z", fullmatch=True),
    st.text(max_size=30),
)


@st.composite
def frontmatter_text(draw: st.DrawFn) -> str:
    lines = []
    if draw(st.booleans()):
        lines.append(f"id: {draw(IDS)}")
    for _ in range(draw(st.integers(0, 6))):
        choice = draw(st.integers(0, 3))
        if choice == 0:
            lines.append(draw(st.sampled_from(HOSTILE_LINES)))
        elif choice == 1:
            lines.append(draw(YAMLISH))
        elif choice == 2:
            key = draw(st.sampled_from(["type", "state", "trust", "entities", "source", "created", "x"]))
            lines.append(f"{key}: {draw(st.text(max_size=40))}")
        else:
            lines.append(f"# {draw(st.text(max_size=40))}")
    return "\n".join(lines)


@st.composite
def canon_files(draw: st.DrawFn) -> bytes:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=3000))
    fm = draw(frontmatter_text())
    title = draw(st.sampled_from(["", "# ", "# Title\n\n", "#NoSpace\n"])) + draw(st.text(max_size=60))
    body = draw(st.one_of(st.text(max_size=800), st.sampled_from(["---\nid: second\n---\n", "\x00", "\r\n\r\n"])))
    opening = draw(st.sampled_from(["---\n", "---\r\n", "\ufeff---\n", "--- \n", "", "---", "----\n"]))
    closing = draw(st.sampled_from(["\n---\n", "\n---", "\r\n---\r\n", "\n...\n", "", "\n--- \n"]))
    text = opening + fm + closing + title + "\n" + body
    encoding = draw(st.sampled_from(["utf-8", "utf-8", "utf-8", "utf-16", "latin-1"]))
    return text.encode(encoding, errors="replace")


TAME_LINES = [
    "# a comment line",
    "unknown_key: value  # trailing comment",
    "nested:\n  a: 1\n  b: [x, y]",
    "quoted: 'it''s quoted'",
    'dq: "tab\\tand\\nnewline"',
    "block: |\n  line one\n  line two",
    "folded: >\n  folded\n  text",
    "empty:",
    "list:\n  - a\n  - b",
    "hex: 0x1F",
    "yes_no: yes",
    "a_date: 2026-01-02",
    "a_time: 2026-01-02T03:04:05Z",
    "unicode: 한국어 café ñandú",
    "entities: [alpha, beta-gamma]",
    "entities:\n  - x\n  - y",
    "type: decision",
    "state: archived",
    "trust: imported",
    "source: https://example.com/x?y=1#z",
    "supersedes: [abc]",
    "superseded_by: []",
    "related: [r1]",
    "review_after: 2027-01-01",
    "created: 2026-01-05T10:00:00Z",
    "updated: 2026-01-06",
    "conflicts:\n  - with: other\n    status: open\n    detected: 2026-01-01T00:00:00Z",
]


@st.composite
def valid_ish_files(draw: st.DrawFn) -> bytes:
    """Files a person could plausibly write: mostly parseable, full of comments, odd scalars and unicode."""
    lines = [f"id: {draw(st.from_regex(r'[0-9A-Za-z][0-9A-Za-z_-]{0,20}', fullmatch=True))}"]
    for _ in range(draw(st.integers(0, 8))):
        if draw(st.booleans()):
            lines.append(draw(st.sampled_from(TAME_LINES)))
        else:
            key = draw(st.from_regex(r"x_[a-z]{1,8}", fullmatch=True))
            lines.append(f"{key}: {json.dumps(draw(st.text(max_size=40)))}")
    draw(st.randoms()).shuffle(lines)
    title = draw(st.text(alphabet=st.characters(blacklist_categories=["Cs", "Cc"]), max_size=60))
    body = draw(st.text(max_size=600))
    text = "---\n" + "\n".join(lines) + "\n---\n" + draw(st.sampled_from(["", "\n"])) + f"# {title}\n\n{body}\n"
    if draw(st.booleans()):
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
    return text.encode("utf-8", errors="replace")


COMMON = {
    "deadline": None,
    "database": None,  # no .hypothesis/ directory in the work tree
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
}

# ---------------------------------------------------------------- property: parse never crashes


def _parse_answers_or_refuses(data: bytes) -> None:
    try:
        mem = canon.parse(data, "fallback", "2026-01-01T00:00:00Z")
    except canon.CanonError as exc:
        assert str(exc).strip(), "a refusal must carry a reason"
        str(exc).encode("utf-8")  # the reason is stored in SQLite and sent as JSON: real Unicode only
        return
    assert canon.ID_PATTERN.match(mem.id), mem.id
    texts = [mem.id, mem.title, mem.body, mem.source, mem.created, mem.updated, mem.review_after or ""]
    texts += [*mem.entities, *mem.supersedes, *mem.superseded_by, *mem.related]
    texts += [str(c.__dict__) for c in mem.conflicts]
    for text in texts:
        assert isinstance(text, str)
        text.encode("utf-8")  # a lone surrogate here would fail the index write and the JSON answer


@settings(max_examples=300, **COMMON)
@given(st.one_of(canon_files(), valid_ish_files()))
def test_parse_answers_or_refuses_with_a_reason(data: bytes) -> None:
    _parse_answers_or_refuses(data)


@pytest.mark.long
@settings(max_examples=20_000, **COMMON)
@given(st.one_of(canon_files(), valid_ish_files()))
def test_parse_answers_or_refuses_with_a_reason_long(data: bytes) -> None:
    _parse_answers_or_refuses(data)


# ---------------------------------------------------------------- property: rewrites keep everything

_SCRATCH = Path(tempfile.mkdtemp(prefix="memory-mcp-hostile-"))


@pytest.fixture(scope="module", autouse=True)
def _remove_scratch() -> Iterator[None]:
    # hypothesis runs each example many times inside one test: no per-test tmp_path, one scratch dir
    yield
    shutil.rmtree(_SCRATCH, ignore_errors=True)


def _rewrite_keeps_the_rest(data: bytes) -> None:
    try:
        before = canon.parse(data, "fallback", "2026-01-01T00:00:00Z")
    except canon.CanonError:
        return
    path = _SCRATCH / f"m{random.randrange(1 << 30)}.md"
    path.write_bytes(data)
    try:
        target = "deprecated" if before.state.value != "deprecated" else "active"

        def mutate(meta: dict) -> None:
            meta["state"] = target

        try:
            canon.rewrite(path, mutate)
        except canon.CanonError as exc:  # refusing to write is allowed; writing garbage is not
            assert path.read_bytes() == data, f"refused ({exc}) but changed the file"
            return
        after = canon.parse(path.read_bytes(), "fallback", "2026-01-01T00:00:00Z")
    finally:
        path.unlink(missing_ok=True)
    assert after.state.value == target
    for name in ("id", "type", "trust", "title", "body", "entities", "source", "supersedes", "superseded_by"):
        assert getattr(after, name) == getattr(before, name), (name, getattr(before, name), getattr(after, name))


@settings(max_examples=200, **COMMON)
@given(valid_ish_files())
def test_server_rewrite_of_any_parseable_file_keeps_every_other_field(data: bytes) -> None:
    _rewrite_keeps_the_rest(data)


@pytest.mark.long
@settings(max_examples=5_000, **COMMON)
@given(valid_ish_files())
def test_server_rewrite_of_any_parseable_file_keeps_every_other_field_long(data: bytes) -> None:
    _rewrite_keeps_the_rest(data)


# ---------------------------------------------------------------- property: reconcile reports every bad file


def _reconcile_reports_every_file(files: list[bytes]) -> None:
    root = Path(tempfile.mkdtemp(prefix="store-", dir=_SCRATCH))
    memories = root / "memories"
    memories.mkdir()
    write_file(memories / "good.md", hand_memory("goodmemory0001", "Good memory", "The word hostilegoodword."))
    names = []
    for n, data in enumerate(files):
        (memories / f"h{n}.md").write_bytes(data)
        names.append(f"memories/h{n}.md")
    service = MemoryService(root)
    try:
        status = service.status()
        reported = {u.path: u.reason for u in status.unparseable}
        assert all(reason.strip() for reason in reported.values()), reported
        for rel in names:
            if rel in reported:
                continue
            answer = service.read(path=rel)
            assert answer.id is not None, f"{rel} is neither a memory nor reported: {answer}"
        assert status.total + len(reported) == len(names) + 1
        found = service.recall("hostilegoodword").results
        assert [r.id for r in found][:1] == ["goodmemory0001"]
    finally:
        service.close()


@settings(max_examples=30, **COMMON)
@given(st.lists(st.one_of(canon_files(), valid_ish_files()), min_size=1, max_size=4))
def test_reconcile_reports_every_bad_file_and_keeps_the_good_one(files: list[bytes]) -> None:
    _reconcile_reports_every_file(files)


@pytest.mark.long
@settings(max_examples=1_000, **COMMON)
@given(st.lists(st.one_of(canon_files(), valid_ish_files()), min_size=1, max_size=6))
def test_reconcile_reports_every_bad_file_and_keeps_the_good_one_long(files: list[bytes]) -> None:
    _reconcile_reports_every_file(files)


# ---------------------------------------------------------------- explicit attack files, real server

BILLION_LAUGHS = "\n".join(
    ["id: laughs", 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{c}: &{c} [{', '.join(['*' + p] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi", strict=True)]
)


def _frontmatter_of_size(n: int) -> str:
    head = "id: bigfm\nnote: "
    return head + "a" * (n - len(head) - 1) + "\n"


def _file_of_size(n: int, mem_id: str, word: str) -> bytes:
    head = f"---\nid: {mem_id}\n---\n# Sized file\n\n{word} ".encode()
    pad = n - len(head) - 1
    return head + b"w " * (pad // 2) + b"w" * (pad % 2) + b"\n"


@pytest.fixture
def hostile_store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    m = root / "memories"
    m.mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    write_file(outside / "secret.md", hand_memory("secret-0001", "Outside secret", "secretoutsideword"))
    write_file(root / "notes.md", hand_memory("rootnotes-01", "Store root notes", "rootnotesword"))
    write_file(m / "good.md", hand_memory("good-0001", "Good memory", "The word hostilegoodword."))
    write_file(m / ".hidden.md", hand_memory("hidden-0001", "Hidden", "hiddenfileword"))
    (root / ".index").mkdir()
    write_file(root / ".index" / "stray.md", hand_memory("stray-0001", "Stray", "strayindexword"))
    files = {
        "alias-bomb.md": f"---\n{BILLION_LAUGHS}\n---\n# Laughs\n",
        "python-tag.md": "---\nid: pytag\nobj: !!python/object/apply:os.system ['touch PWNED']\n---\n# T\n",
        "custom-tag.md": "---\nid: ctag\nv: !custom 1\n---\n# T\n",
        "deep.md": "---\nid: deep\nx: " + "[" * 5000 + "]" * 5000 + "\n---\n# T\n",
        "bad-date.md": "---\nid: baddate\ncreated: 2020-13-45\n---\n# T\n",
        "big-int.md": "---\nid: bigint\nx: " + "9" * 5000 + "\n---\n# T\n",
        "no-id.md": "---\ntype: fact\n---\n# No id\n",
        "unclosed.md": "---\nid: unclosed\n# never closed\n",
        "empty.md": "",
        "fm-at-limit.md": f"---\n{_frontmatter_of_size(canon.MAX_FRONTMATTER_BYTES)}---\n# FM at limit\n\nfmlimitword\n",
        "fm-too-big.md": f"---\n{_frontmatter_of_size(canon.MAX_FRONTMATTER_BYTES + 1)}---\n# FM too big\n",
        "surrogate.md": '---\nid: surr\nsource: "\\ud800"\n---\n# Lone surrogate escape\n',
        "surrogate-dup.md": '---\nid: surrdup\nx: ""\nx: "\\udc00"\n---\n# Duplicate key quoting one\n',
    }
    for name, text in files.items():
        (m / name).write_text(text, encoding="utf-8")
    (m / "huge.md").write_bytes(_file_of_size(canon.MAX_FILE_BYTES + 1, "huge", "hugeword"))
    (m / "at-limit.md").write_bytes(_file_of_size(canon.MAX_FILE_BYTES, "atlimit", "sizelimitword"))
    (m / "binary.md").write_bytes(b"---\nid: bin\n---\n" + random.Random(3).randbytes(2000) + b"\x00")
    (m / "latin1.md").write_bytes("---\nid: latin\n---\n# Café\n\ncafé\n".encode("latin-1"))
    (m / "utf16.md").write_bytes(hand_memory("utf16", "Wide", "utf16word").encode("utf-16"))
    os.symlink(m / "loop-b.md", m / "loop-a.md")
    os.symlink(m / "loop-a.md", m / "loop-b.md")
    os.symlink(outside / "secret.md", m / "escape.md")
    os.symlink(outside, m / "escape-dir")
    os.symlink(root / "notes.md", m / "root-notes.md")
    os.symlink(root, m / "store-root-dir")
    (m / "sub").mkdir()
    os.symlink(m, m / "sub" / "up")  # a directory loop inside memories/
    os.mkfifo(m / "fifo.md")  # would block a naive reader forever
    os.mkfifo(root / "dictionary.md")  # so would a dictionary that is a FIFO
    return root


EXPECTED_REASONS = {
    "memories/alias-bomb.md": "anchors are not allowed",
    "memories/python-tag.md": "python/object/apply:os.system",
    "memories/custom-tag.md": "'!custom' is not allowed",
    "memories/deep.md": "nested too deeply",
    "memories/bad-date.md": "bad YAML value",
    "memories/big-int.md": "bad YAML value",
    "memories/no-id.md": "missing id",
    "memories/unclosed.md": "not closed",
    "memories/empty.md": "no frontmatter",
    "memories/fm-too-big.md": f"frontmatter larger than {canon.MAX_FRONTMATTER_BYTES} bytes",
    "memories/surrogate.md": "lone surrogate",
    "memories/surrogate-dup.md": "duplicate key",
    "memories/huge.md": f"file larger than {canon.MAX_FILE_BYTES} bytes",
    "memories/binary.md": "binary file",
    "memories/latin1.md": "not UTF-8",
    "memories/utf16.md": "binary file",
    "memories/loop-a.md": "symlink loop",
    "memories/loop-b.md": "symlink loop",
    "memories/escape.md": "outside the store",
    "memories/root-notes.md": "outside memories/",
}


@pytest.mark.anyio
async def test_attack_files_are_reported_and_never_served(hostile_store: Path) -> None:
    root = hostile_store
    async with stdio_tools(root) as t:
        status = await t.status()
        reported = {u["path"]: u["reason"] for u in status["unparseable"]}
        for path, words in EXPECTED_REASONS.items():
            assert words in reported.get(path, ""), (path, reported.get(path))
        assert set(reported) == set(EXPECTED_REASONS), set(reported) ^ set(EXPECTED_REASONS)
        # good.md, and the two files exactly at the size limits
        assert status["total"] == 3, status["total"]
        for word, mem_id in (("hostilegoodword", "good-0001"), ("sizelimitword", "atlimit"), ("fmlimitword", "bigfm")):
            assert [r["id"] for r in (await t.recall(word))["results"]][:1] == [mem_id], word
        # nothing outside memories/, hidden, or behind a link that leaves it is ever served
        served = {"good-0001", "atlimit", "bigfm"}
        for word in ("secretoutsideword", "rootnotesword", "hiddenfileword", "strayindexword", "hugeword"):
            answer = await t.recall(word)
            assert {r["id"] for r in answer["results"]} <= served, (word, answer["results"])
        for path in ("memories/escape.md", "memories/escape-dir/secret.md", "../outside/secret.md", "/etc/passwd"):
            message = await t.err("memory_read", path=path)
            assert message.startswith("path:") or "path:" in message, message
        assert "path:" in await t.err("memory_read", path="notes.md")
        assert reconcile_of(await t.recall("hostilegoodword"))["unparseable"] == len(EXPECTED_REASONS)
    assert not (root / "PWNED").exists() and not Path("PWNED").exists()


# ---------------------------------------------------------------- tool arguments at and past every limit


def _text(n: int) -> str:
    return (string.ascii_lowercase * (n // 26 + 1))[:n]


@pytest.mark.anyio
async def test_every_argument_at_and_past_its_limit(mem_tools: Tools) -> None:
    t = mem_tools
    refusals: list[tuple[str, str]] = []  # (argument the message must name, message)

    async def refused(argument: str, name: str, **args: object) -> None:
        message = await t.err(name, **args)
        refusals.append((argument, message))
        assert argument in message, f"{name} {argument}: {message}"

    # memory_remember: each limit exactly met is stored
    at_limit = await t.remember(
        "T" + _text(MAX_TITLE - 1),
        "b" * MAX_BODY,
        entities=[f"e{n}-" + _text(MAX_ENTITY_LEN - len(f"e{n}-")) for n in range(MAX_ENTITIES)],
        source="s" * MAX_SOURCE,
        review_after="2030-02-28",
    )
    assert at_limit["created"] is True
    got = await t.read(id=at_limit["id"])
    assert len(got["frontmatter"]["entities"]) == MAX_ENTITIES and len(got["frontmatter"]["source"]) == MAX_SOURCE

    # ... and one past each is refused, naming the argument
    await refused("title", "memory_remember", title="T" * (MAX_TITLE + 1), body="b")
    await refused("title", "memory_remember", title=" \n\t ", body="b")
    await refused("body", "memory_remember", title="Body too long", body="b" * (MAX_BODY + 1))
    await refused("body", "memory_remember", title="Body with NUL", body="a\x00b")
    entities = [f"e{n}" for n in range(MAX_ENTITIES + 1)]
    await refused("entities", "memory_remember", title="Too many entities", body="b", entities=entities)
    await refused("entities", "memory_remember", title="Long entity", body="b", entities=["e" * (MAX_ENTITY_LEN + 1)])
    await refused("entities", "memory_remember", title="Entity newline", body="b", entities=["a\nb"])
    await refused("source", "memory_remember", title="Long source", body="b", source="s" * (MAX_SOURCE + 1))
    await refused("source", "memory_remember", title="Source newline", body="b", source="a\nb")
    await refused("review_after", "memory_remember", title="Bad date", body="b", review_after="2030-02-30")
    await refused("type", "memory_remember", title="Bad type", body="b", type="rumour")
    await refused("trust", "memory_remember", title="Bad trust", body="b", trust="certain")
    await refused("supersedes", "memory_remember", title="Bad supersedes", body="b", supersedes=["no-such-id"])
    await refused("title", "memory_remember", title=12, body="b")

    # memory_recall
    assert (await t.recall("q" * MAX_QUERY))["results"] == []
    await refused("query", "memory_recall", query="q" * (MAX_QUERY + 1))
    for limit in RECALL_LIMIT:
        assert (await t.recall("title", limit=limit))["query"] == "title"
    await refused("limit", "memory_recall", query="x", limit=RECALL_LIMIT[0] - 1)
    await refused("limit", "memory_recall", query="x", limit=RECALL_LIMIT[1] + 1)
    await refused("type", "memory_recall", query="x", type="rumour")
    await refused("state", "memory_recall", query="x", state="gone")

    # memory_read
    lines = "\n".join(f"line {n}" for n in range(MAX_READ_LINES + 50))
    long_one = await t.remember("Many lines", lines)
    whole = await t.read(id=long_one["id"], from_line=1, to_line=MAX_READ_LINES)
    assert (whole["from_line"], whole["to_line"]) == (1, MAX_READ_LINES)
    await refused("to_line", "memory_read", id=long_one["id"], from_line=1, to_line=MAX_READ_LINES + 1)
    await refused("to_line", "memory_read", id=long_one["id"], from_line=10, to_line=9)
    await refused("from_line", "memory_read", id=long_one["id"], from_line=0)
    await refused("id", "memory_read")
    await refused("id", "memory_read", id=long_one["id"], path=long_one["path"])
    await refused("id", "memory_read", id="no-such-id")
    for bad in ("../x.md", "/etc/passwd", "memories/../../x.md", "memories/\x00.md", "C:/x.md"):
        await refused("path", "memory_read", path=bad)

    # memory_update and memory_forget
    mem_id = at_limit["id"]
    await refused("op", "memory_update", op="explode", id=mem_id)
    await refused("id", "memory_update", op="edit", id="no-such-id", title="x")
    await refused("title", "memory_update", op="edit", id=mem_id, title="T" * (MAX_TITLE + 1))
    await refused("body", "memory_update", op="edit", id=mem_id, body="b" * (MAX_BODY + 1))
    await refused("expected_sha256", "memory_update", op="edit", id=mem_id, body="new", expected_sha256="0" * 64)
    await refused("by", "memory_update", op="supersede", id=mem_id, by=mem_id)
    await refused("mode", "memory_forget", id=mem_id, mode="shred")
    await refused("mode", "memory_forget", id=mem_id, mode="purge")  # active: archive or deprecate it first
    await refused("reason", "memory_forget", id=mem_id, mode="deprecate")

    # the store argument is a name, never a path
    await t.remember("Longest store name", "Sixty-four letters are a name.", store="s" * 64)
    await t.recall("x", store="s" * 64)
    for bad in ("s" * 65, "../evil", "a/b", ".hidden", "", "name with space"):
        if bad == "":
            continue  # empty means the default store
        await refused("store", "memory_recall", query="x", store=bad)

    # nothing refused was written
    assert (await t.status())["total"] == 2
    assert len(refusals) >= 40
