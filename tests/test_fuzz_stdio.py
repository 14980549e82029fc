"""A fuzzer over the real stdio server: generated arguments for all seven tools, hand edits between calls.

One `memory-mcp` process serves the whole run (spoken to with `mcp.Client` over stdio, its stderr sent to a
file); each example starts from an empty `memories/` (deleted by hand, as a person would) and runs a few
steps. A step is a tool call with arguments drawn from the tool's own input schema — text of every Unicode
category, control characters, astral characters (surrogate pairs in JSON), empty and huge strings, numbers
out of range, values of the wrong type, ids, paths, pair hashes and sha256s of other memories — or a hand
edit of a memory file. Every call must keep these properties:

- it succeeds, and the memory it reports is then readable by id and by path (the same file both ways) and,
  when its title has words and it is not deprecated, recall by that title finds it; a purged one is gone;
- or it fails with `isError`, a message naming one of the tool's arguments, and every file outside the
  derived index (`.index/`) byte-identical to before the call;
- the server's stderr never carries a traceback, and the server keeps answering.

Lone surrogates are left out: the SDK client cannot encode them into its UTF-8 JSON at all (it raises
before anything is sent). The default run is derandomized (the same examples every time, so a failure
reproduces); `-m long` runs many more from a seed it prints (`MEMORY_MCP_FUZZ_SEED=<n>` replays one).
"""

from __future__ import annotations

import os
import random
import re
import shutil
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given, note, seed, settings
from hypothesis import strategies as st
from mcp.client.stdio import stdio_client

from .helpers import hand_memory, result_text, server_env

CALL_TIMEOUT = 60.0  # seconds: a call that takes longer has hung the server
DEFAULT_EXAMPLES = 300
LONG_EXAMPLES = 600
STEPS = (3, 12)  # steps per example

# ---------------------------------------------------------------- the server, one per test run


@dataclass(repr=False)  # hypothesis prints the failing example's arguments: keep this one short
class Server:
    portal: BlockingPortal
    client: mcp.Client
    root: Path  # the store the server was started on
    home: Path  # HOME and cwd of the server: sibling stores (`store=`) and a project scope live here
    errlog: Path
    schemas: dict[str, dict[str, Any]]
    outcomes: Counter[str] = field(default_factory=Counter)  # "<tool> ok|error", "hand edit", "example"

    def call(self, name: str, args: dict[str, Any]) -> Any:
        if os.environ.get("FUZZ_DEBUG"):
            print("CALL", name, _short(args), flush=True)

        async def bounded() -> Any:
            with anyio.fail_after(CALL_TIMEOUT):
                return await self.client.call_tool(name, args)

        return self.portal.call(bounded)

    def stderr(self) -> str:
        return self.errlog.read_text(encoding="utf-8", errors="replace")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("fuzz")
    home = base / "home"
    root = home / "store"
    home.mkdir()
    errlog = base / "server-stderr.log"
    params = mcp.StdioServerParameters(
        command=sys.executable, args=["-m", "memory_mcp", "--store", str(root)], env=server_env(root), cwd=str(home)
    )
    with errlog.open("w", encoding="utf-8") as log, start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(mcp.Client(stdio_client(params, errlog=log))) as client:
            tools = portal.call(client.list_tools).tools
            schemas = {t.name: t.input_schema for t in tools}
            started = time.monotonic()
            found = Server(portal, client, root, home, errlog, schemas)
            yield found
            # shown with -s: what the run exercised, for the figures in the docs
            print(f"\nfuzz: {time.monotonic() - started:.1f} s, {dict(sorted(found.outcomes.items()))}")


# ---------------------------------------------------------------- what the arguments are drawn from

# every category but lone surrogates (Cs): controls, format characters, private use, unassigned, astral planes
CHARS = st.characters(codec="utf-8")
CONTROLS = st.characters(max_codepoint=0x1F) | st.sampled_from(
    [
        "\x00",
        "\x1b",
        "\r",
        "\x0b",
        "\x7f",
        "\x85",
        "\u2028",
        "\u2029",
        "\ufeff",
        "\u200b",
        "\u202e",
        "\ufffe",
        "\U0010ffff",
    ]
)
WORD_LIST = (
    ["postgres", "backup", "TTL", "one", "hour", "tabs", "atlas-web", "배포", "서버", "déjà", "naïve", "Straße",
     "日本語", "emoji\U0001f600", "x", "a", "the", "don't", "C++", "#tag", "[[link]]", "---", "# heading", "`code`"]
)  # fmt: skip
WORDS = st.sampled_from(WORD_LIST)
LIMITS = [0, 1, 60, 100, 120, 200, 201, 1000, 1001, 2000, 2001]  # around the title/entity/source/query limits


def _huge(ch: str, n: int) -> str:
    return (ch or "x") * n


WORDY = st.lists(WORDS, min_size=1, max_size=6).map(" ".join)  # something recall can find
# mostly words, often with other scripts, symbols or a control character in them: text a tool must either store
# so that it reads back, or refuse
TEXT = st.one_of(
    WORDY,
    WORDY,
    st.tuples(WORDY, CONTROLS, WORDY).map(" ".join),
    st.tuples(WORDY, CONTROLS, WORDY).map("".join),
    st.tuples(WORDY, st.text(CHARS, min_size=1, max_size=20)).map(" ".join),
    st.text(CHARS, max_size=30),
    st.text(CHARS | CONTROLS, max_size=30),
)
# empty, blank, format-lookalike and huge strings
ODD_TEXT = st.one_of(
    st.sampled_from(["", " ", "\n", "\t", "\r\n", "\x00", "---", "---\nid: x\n---", "\\", "'", '"', "%s", "{}"]),
    st.builds(_huge, CHARS, st.sampled_from(LIMITS)),
)
HUGE_BODY = st.builds(_huge, CHARS, st.sampled_from([200_000, 200_001, 1_100_000]))
INTS = st.one_of(
    st.integers(-3, 25), st.sampled_from([0, 200, 201, 2**31, 2**63, -(2**63)]), st.integers(-(2**70), 2**70)
)
JSON = st.recursive(
    st.none() | st.booleans() | INTS | st.floats(allow_nan=False, allow_infinity=False) | st.text(CHARS, max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)
DATES = st.sampled_from(["2026-12-31", "2027-02-28", "2026-02-30", "2026-13-01", "31.12.2026", "tomorrow", "", "2026-12-31T00:00:00Z"])  # fmt: skip
STORES = st.sampled_from(["work", "../escape", "", ".", "a/b", "/tmp", "store", "Work"]) | st.text(CHARS, max_size=8)
OP_FIELDS = {
    "edit": {"title", "body", "type", "trust", "entities", "source", "review_after", "follows", "expected_sha256"},
    "supersede": {"by"},
    "set_state": {"state", "reason"},
    "link": {"other_id"},
    "resolve_conflict": {"pair_hash", "other_id", "resolution", "winner", "note"},
}


@dataclass
class Known:
    """What earlier calls reported: the pools ids, paths, pair hashes and sha256s are drawn from."""

    ids: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    pairs: list[str] = field(default_factory=list)
    shas: list[str] = field(default_factory=list)
    titles: list[str] = field(default_factory=list)

    def add(self, mem_id: str | None = None, path: str | None = None) -> None:
        if mem_id and mem_id not in self.ids:
            self.ids.append(mem_id)
        if path and path not in self.paths:
            self.paths.append(path)


def _pool(values: list[str], junk: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.sampled_from(values) | junk if values else junk


# A call is either plausible — every argument a value the tool should take, ids and paths of memories made
# earlier in the example, so that it gets past the arguments and reaches the write path — with, often, one
# character of some category spliced into one of its text arguments; or hostile: any argument may be odd,
# huge, out of range, of the wrong type or left out.
HOSTILE_CALLS = 20  # percent
SPIKED_CALLS = 45  # percent of plausible calls that carry one spliced character
SPIKES = st.one_of(
    CONTROLS,  # what the text rule refuses, and the lookalikes it lets through
    CHARS,  # any category but lone surrogates
    st.characters(min_codepoint=0xAC00, max_codepoint=0xD7FF),  # Hangul syllables and Jamo Extended-B
    st.sampled_from(["́", "‍", " ", "　", "😀", "א", "ก", "-", "'", "\\"]),
)
TEXT_FIELDS = {"title", "body", "source", "reason", "note", "entity", "query", "entities"}
PLAIN_TEXT = {  # what a plausible call puts in each text argument
    "title": WORDY,
    "body": st.lists(WORDY, min_size=1, max_size=3).map(". ".join),
    "entities": st.lists(WORDS, max_size=3),
}
TOOL_WEIGHTS = {  # how often each tool is called: writers first, so that the others have memories to act on
    "memory_remember": 6, "memory_update": 4, "memory_recall": 3, "memory_read": 2, "memory_forget": 2,
    "memory_status": 1, "memory_reindex": 1,
}  # fmt: skip
TOOLS = st.sampled_from([t for t, n in TOOL_WEIGHTS.items() for _ in range(n)])


def plausible_value(data: st.DataObject, name: str, schema: dict[str, Any], known: Known) -> Any:
    """A value the tool should take: a choice from the schema, a number in range, words, a known id or path."""
    ids = st.sampled_from(known.ids) if known.ids else st.just("01ARZ3NDEKTSV4RRFFQ69G5FAV")
    if "enum" in schema:
        return data.draw(st.sampled_from(schema["enum"]), label=name)
    kind = schema.get("type")
    if kind == "integer":
        return data.draw(st.integers(1, 20), label=name)
    if kind == "boolean":
        return data.draw(st.booleans(), label=name)
    if kind == "array":
        return data.draw(st.lists(ids, max_size=2) if name == "supersedes" else PLAIN_TEXT["entities"], label=name)
    strategy = {
        "id": ids,
        "by": ids,
        "other_id": ids,
        "winner": ids,
        "follows": ids,
        "path": st.sampled_from(known.paths) if known.paths else st.just("memories/none.md"),
        "pair_hash": _pool(known.pairs, st.just("0" * 16)),
        "expected_sha256": _pool(known.shas, st.just("0" * 64)),
        "review_after": st.sampled_from(["2026-12-31", "2027-02-28", "2030-01-01"]),
        "store": st.sampled_from(["work", "Work"]),
        "query": _pool(known.titles, WORDY),
    }.get(name, PLAIN_TEXT.get(name, WORDY))
    return data.draw(strategy, label=name)


def hostile_value(data: st.DataObject, name: str, schema: dict[str, Any], known: Known) -> Any:
    """Mostly a value of the schema's type from wider pools, sometimes a hostile one: odd or huge text, a number
    out of range, a value of another JSON type."""
    hostile = data.draw(st.integers(0, 99), label=f"{name}: hostile?") < 30
    if hostile and data.draw(st.booleans(), label=f"{name}: wrong type?"):
        return data.draw(JSON, label=name)
    text = ODD_TEXT if hostile else TEXT
    ids = _pool(known.ids, st.sampled_from(["", "x", "01ARZ3NDEKTSV4RRFFQ69G5FAV", "../x", "*"]) | text)
    if "enum" in schema:
        return data.draw(text if hostile else st.sampled_from(schema["enum"]), label=name)
    kind = schema.get("type")
    if kind == "integer":
        return data.draw(INTS if hostile else st.integers(1, 20), label=name)
    if kind == "boolean":
        return data.draw(st.booleans(), label=name)
    if kind == "array":
        item = ids if name == "supersedes" else text
        return data.draw(st.lists(item, max_size=60 if hostile else 4), label=name)
    if hostile and name == "body" and data.draw(st.integers(0, 9), label="huge body?") == 0:
        return data.draw(HUGE_BODY, label=name)
    strategy = {
        "id": ids,
        "by": ids,
        "other_id": ids,
        "winner": ids,
        "follows": ids,
        "path": _pool(known.paths, st.sampled_from(["memories/../x.md", "/etc/passwd", "memories/", "x.md:3"]) | text),
        "pair_hash": _pool(known.pairs, st.sampled_from(["", "0" * 16]) | text),
        "expected_sha256": _pool(known.shas, st.sampled_from(["", "0" * 64]) | text),
        "review_after": DATES if not hostile else text,
        "store": STORES,
        "query": _pool(known.titles, text),
    }.get(name, text)
    return data.draw(strategy, label=name)


def spike(data: st.DataObject, args: dict[str, Any]) -> None:
    """Splice one character of some category into one text argument (or one entity) at some position."""
    names = [n for n in sorted(args) if n in TEXT_FIELDS and (isinstance(args[n], str) or args[n])]
    if not names:
        return
    name = data.draw(st.sampled_from(names), label="spiked argument")
    char = data.draw(SPIKES, label="spike")
    if isinstance(args[name], list):
        items = list(args[name])
        n = data.draw(st.integers(0, len(items) - 1), label="spiked item")
        at = data.draw(st.integers(0, len(items[n])), label="at")
        items[n] = items[n][:at] + char + items[n][at:]
        args[name] = items
    else:
        at = data.draw(st.integers(0, len(args[name])), label="at")
        args[name] = args[name][:at] + char + args[name][at:]


def arguments(data: st.DataObject, tool: str, schema: dict[str, Any], known: Known) -> dict[str, Any]:
    props: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    hostile = data.draw(st.integers(0, 99), label="hostile call?") < HOSTILE_CALLS
    value_for = hostile_value if hostile else plausible_value
    args: dict[str, Any] = {}
    wanted: set[str] = set()
    if tool == "memory_update":
        args["op"] = value_for(data, "op", props["op"], known)
        wanted = OP_FIELDS.get(args["op"], set()) if isinstance(args["op"], str) else set()
        if not hostile or (isinstance(args["op"], str) and args["op"] in OP_FIELDS):
            wanted |= {"id"}
    if tool == "memory_read" and not hostile:
        wanted = {data.draw(st.sampled_from(["id", "path"]), label="read by")}
    if tool == "memory_forget" and not hostile:
        wanted = {"reason", "confirm"}
    for name, prop in props.items():
        if name in args:
            continue
        if name in required or name == "query":
            chance = 90 if hostile else 100
        elif name in wanted:
            chance = 55 if hostile else 85
        elif name in ("store", "scope"):
            chance = 6
        elif tool in ("memory_update", "memory_read"):
            chance = 8 if hostile else 0  # a field the op does not take, or both id and path
        else:
            chance = 30
        if data.draw(st.integers(0, 99), label=f"{name}?") < chance:
            args[name] = value_for(data, name, prop, known)
    if not hostile and data.draw(st.integers(0, 99), label="spiked call?") < SPIKED_CALLS:
        spike(data, args)
    if hostile and data.draw(st.integers(0, 99), label="unknown argument?") < 10:
        args[data.draw(st.sampled_from(["foo", "ID", "titel", "_meta"]), label="unknown name")] = "x"
    return args


# ---------------------------------------------------------------- the properties


def snapshot(home: Path) -> dict[str, bytes]:
    """Every file under the server's home except the derived indexes."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(home):
        dirnames[:] = [d for d in dirnames if d != ".index"]
        for name in filenames:
            path = Path(dirpath, name)
            out[str(path.relative_to(home))] = path.read_bytes()
    return out


def _renumbered(before: dict[str, bytes], path: str, after: dict[str, bytes]) -> bool:
    """The reconcile every call starts with gave a hand-made file a new id, its old one being another file's too
    (`id: 00000` and `id: 0` are both the YAML number 0): a settled hand edit, written whether the call then
    succeeds or fails. Only the id line differs."""
    old, new = before.get(path), after.get(path)
    if old is None or new is None or old.count(b"\n") != new.count(b"\n"):
        return False
    differ = [(a, b) for a, b in zip(old.split(b"\n"), new.split(b"\n"), strict=True) if a != b]
    return len(differ) == 1 and differ[0][0].startswith(b"id: ") and differ[0][1].startswith(b"id: ")


def _where(args: dict[str, Any]) -> dict[str, Any]:
    return {k: args[k] for k in ("store", "scope") if k in args}


class Step:
    """One example's run: the calls, their checks, and the pools they draw from."""

    def __init__(self, server: Server, data: st.DataObject) -> None:
        self.server, self.data, self.known = server, data, Known()
        self.stderr_seen = len(server.stderr())

    def call(self, tool: str, args: dict[str, Any]) -> Any:
        try:
            r = self.server.call(tool, args)
        except Exception as exc:  # a JSON-RPC error, a dead server or a hang: never acceptable here
            raise AssertionError(f"{tool}({_short(args)}) raised {type(exc).__name__}: {exc}") from exc
        self.check_stderr(f"{tool}({_short(args)})")
        return r

    def check_stderr(self, after: str) -> None:
        text = self.server.stderr()
        fresh, self.stderr_seen = text[self.stderr_seen :], len(text)
        assert "Traceback" not in fresh, f"stderr after {after}:\n{fresh[-4000:]}"

    def read_ok(self, where: dict[str, Any], **by: Any) -> dict[str, Any]:
        r = self.call("memory_read", {**by, **where})
        assert not r.is_error, f"memory_read({by}, {where}) after it was reported: {result_text(r)}"
        return r.structured_content

    def check_readable(self, mem_id: str, path: str, where: dict[str, Any]) -> dict[str, Any]:
        by_id = self.read_ok(where, id=mem_id)
        by_path = self.read_ok(where, path=path)
        assert by_id["path"] == path and by_path["id"] == mem_id, (by_id["path"], path, by_path["id"], mem_id)
        assert by_id["sha256"] == by_path["sha256"]
        self.known.shas.append(by_id["sha256"])
        return by_id

    def check_recallable(self, mem_id: str, title: str, where: dict[str, Any]) -> None:
        """Recall by the memory's own title finds it, when the title has a letter or a digit to search for."""
        r = self.call("memory_recall", {"query": title, "limit": 20, "include_deprecated": True, **where})
        assert not r.is_error, f"recall by its own title {title!r}: {result_text(r)}"
        answer = r.structured_content
        if not any(c.isalnum() for c in title):
            return
        found = [x["id"] for x in answer["results"]]
        assert mem_id in found, f"recall({title!r}) did not find {mem_id}: {found} (plan {answer['plan']})"

    def tool_step(self, tool: str) -> None:
        args = arguments(self.data, tool, self.server.schemas[tool], self.known)
        before = snapshot(self.server.home)
        note(f"call {tool}({_short(args)})")
        r = self.call(tool, args)
        self.server.outcomes[f"{tool} {'error' if r.is_error else 'ok'}"] += 1
        if r.is_error and os.environ.get("FUZZ_DEBUG"):
            print(tool, result_text(r)[:150])
        if r.is_error:
            message = result_text(r)
            names = set(self.server.schemas[tool].get("properties", {})) | set(args)
            # an argument error names the argument; a refused move names the state the memory is in
            states = ("active", "archived", "deprecated")
            assert any(re.search(rf"\b{re.escape(n)}\b", message) for n in [*names, *states]), (
                f"{tool}({_short(args)}) failed without naming an argument: {message!r}"
            )
            after = snapshot(self.server.home)
            changed = sorted(
                k
                for k in before.keys() | after.keys()
                if before.get(k) != after.get(k) and not _renumbered(before, k, after)
            )
            assert not changed, f"{tool}({_short(args)}) failed ({message!r}) but changed {changed}"
            return
        answer = r.structured_content
        assert answer is not None, f"{tool} answered no structured content"
        self.after_success(tool, args, answer)

    def after_success(self, tool: str, args: dict[str, Any], answer: dict[str, Any]) -> None:
        where = _where(args)
        if tool == "memory_remember":
            self.known.add(answer["id"], answer["path"])
            self.known.pairs += [c["pair_hash"] for c in answer["conflicts"]]
            read = self.check_readable(answer["id"], answer["path"], where)
            title = args["title"]
            self.known.titles.append(title)
            if read["frontmatter"].get("state") != "deprecated":
                self.check_recallable(answer["id"], title, where)
        elif tool == "memory_update":
            self.known.add(answer["id"], answer["path"])
            self.check_readable(answer["id"], answer["path"], where)
            if args.get("op") == "edit" and isinstance(args.get("title"), str) and answer["state"] != "deprecated":
                self.check_recallable(answer["id"], args["title"], where)
        elif tool == "memory_forget":
            if answer["mode"] == "purge":
                gone = self.call("memory_read", {"id": answer["id"], **where})
                assert gone.is_error, f"{answer['id']} was purged but is still readable"
            else:
                read = self.check_readable(answer["id"], answer["path"], where)
                assert read["frontmatter"].get("state") == answer["state"]
        elif tool == "memory_read":
            if answer["kind"] == "memory" and answer["id"]:
                self.known.add(answer["id"], answer["path"])
                self.known.shas.append(answer["sha256"])
                self.check_readable(answer["id"], answer["path"], where)
        elif tool == "memory_recall":
            for res in answer["results"][:3]:
                if res["kind"] == "memory":
                    self.known.add(res["id"], res["path"])
                    self.check_readable(res["id"], res["path"], {"scope": res["scope"], **_where(args)})
        elif tool == "memory_status":
            self.known.pairs += [c["pair_hash"] for c in answer["unresolved_conflicts"]]

    def hand_edit(self) -> None:
        """Change a memory file (or add one) behind the server's back, as a person in an editor would."""
        memories = self.server.root / "memories"
        files = sorted(memories.glob("*.md")) if memories.is_dir() else []
        kind = self.data.draw(
            st.sampled_from(["new", "append", "retitle", "state", "delete", "binary"] if files else ["new"]),
            label="hand edit",
        )
        if kind == "new":
            mem_id = self.data.draw(st.from_regex(r"[A-Za-z0-9_-]{1,30}", fullmatch=True), label="hand id")
            title = self.data.draw(TEXT, label="hand title")
            body = self.data.draw(TEXT, label="hand body")
            name = self.data.draw(st.from_regex(r"[a-z0-9-]{1,20}", fullmatch=True), label="hand file")
            note(f"hand edit: new memories/{name}.md id {mem_id!r} title {title[:60]!r}")
            memories.mkdir(parents=True, exist_ok=True)
            (memories / f"{name}.md").write_bytes(hand_memory(mem_id, title, body).encode("utf-8", "replace"))
            self.known.add(mem_id, f"memories/{name}.md")
            return
        path = self.data.draw(st.sampled_from(files), label="hand file")
        note(f"hand edit: {kind} {path.name}")
        text = path.read_bytes()
        if kind == "append":
            path.write_bytes(text + b"\n" + self.data.draw(TEXT, label="appended").encode("utf-8") + b"\n")
        elif kind == "retitle":
            title = self.data.draw(TEXT, label="new title").encode("utf-8")
            path.write_bytes(re.sub(rb"(?m)^# .*$", lambda _: b"# " + title, text, count=1))
        elif kind == "state":
            state = self.data.draw(st.sampled_from([b"archived", b"deprecated", b"bogus", b""]), label="state")
            path.write_bytes(re.sub(rb"(?m)^state: .*$", lambda _: b"state: " + state, text, count=1))
        elif kind == "delete":
            path.unlink()
        else:
            path.write_bytes(b"\x00\xff\xfe" + text[:40])

    def run(self) -> None:
        self.server.outcomes["example"] += 1
        for n in range(self.data.draw(st.integers(*STEPS), label="steps")):
            if self.data.draw(st.integers(0, 99), label=f"step {n}: hand edit?") < 12:
                self.server.outcomes["hand edit"] += 1
                self.hand_edit()
            else:
                self.tool_step(self.data.draw(TOOLS, label=f"step {n}"))
        alive = self.call("memory_status", {})
        assert not alive.is_error, result_text(alive)


def _short(args: dict[str, Any]) -> str:
    text = repr(args)
    return text if len(text) <= 400 else text[:400] + "…"


def reset(server: Server) -> None:
    """An empty `memories/` in the server's store and no sibling store (by hand: the server learns it on its
    next call), so that no example depends on another."""
    memories = server.root / "memories"
    if memories.is_dir():
        for child in memories.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
    for sibling in server.home.iterdir():
        if sibling != server.root:
            shutil.rmtree(sibling) if sibling.is_dir() and not sibling.is_symlink() else sibling.unlink()


FUZZ_SETTINGS = settings(
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)


# MEMORY_MCP_FUZZ_SEED=<n> runs the default test from that seed too (to see that it finds a bug from any seed)
REPLAY_SEED = os.environ.get("MEMORY_MCP_FUZZ_SEED")


@settings(FUZZ_SETTINGS, max_examples=DEFAULT_EXAMPLES, derandomize=REPLAY_SEED is None)
@seed(int(REPLAY_SEED or 0) if REPLAY_SEED else None)
@given(data=st.data())
def test_fuzz_every_tool_over_stdio(server: Server, data: st.DataObject) -> None:
    reset(server)
    Step(server, data).run()


LONG_SEED = int(REPLAY_SEED or random.randrange(2**32))


@pytest.mark.long
@settings(FUZZ_SETTINGS, max_examples=LONG_EXAMPLES, print_blob=True)
@seed(LONG_SEED)
@given(data=st.data())
def test_fuzz_every_tool_over_stdio_long(server: Server, data: st.DataObject) -> None:
    note(f"seed {LONG_SEED} (replay with MEMORY_MCP_FUZZ_SEED={LONG_SEED})")
    reset(server)
    Step(server, data).run()
