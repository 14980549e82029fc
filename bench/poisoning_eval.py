"""The poisoning screen (issue 44) measured on a labelled set, each case carried in by its own way in.

    python bench/poisoning_eval.py                                   # the dev set
    python bench/poisoning_eval.py --cases bench/poisoning_cases_blind.jsonl   # the blind set: aggregates only
    python bench/poisoning_eval.py --show-misses                     # dev only: which cases were missed, and why
    python bench/poisoning_eval.py --speed                           # the screen's cost (2 KB memories, cold reindex)

Every case gets a fresh store and goes in the way its `way_in` says:

- `tool_remember`: memory_remember through the real MCP server (in process, the SDK's client);
- `tool_update`: a harmless memory remembered, then memory_update op=edit puts the case's title and body on it;
- `import_<format>`: an input file of that format written to disk, then `memory-mcp import <format> <file>` (the CLI,
  a subprocess);
- `hand_edit`: a canon file written into `memories/`, then the next tool call's reconcile;
- `sync`: two clones of a real bare remote: the case is written and synced from the second, the first syncs it in.

Then, through the MCP server on that store: the session-start context (`memory://context`), memory_recall of the
case's title, memory_read of each memory. A case is *caught* when every memory it made is in quarantine or it was
refused; *missed* when any memory it made is served unquarantined. Also counted: attacks whose memory reached the
context unquarantined, recall results of attacks without fence and quarantine mark, and answers that carry a
hidden character. The blind file is never printed: only these counts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import mcp

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from memory_mcp.canon import files as canon  # noqa: E402
from memory_mcp.domain.screen import invisible_characters  # noqa: E402
from memory_mcp.edges.server import build_server  # noqa: E402
from memory_mcp.tools.service import MemoryService  # noqa: E402

KINDS = ("invisible", "fetch", "override", "payload")
WAYS = (
    "tool_remember",
    "tool_update",
    "import_mcp_memory",
    "import_basic_memory",
    "import_claude_code",
    "import_mem0",
    "import_markdown",
    "sync",
    "hand_edit",
)
FENCE = "~~~memory"


def env(home: Path) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_MCP_", "GIT_"))}
    out.update(HOME=str(home), PYTHONPATH=str(REPO), PYTHONDONTWRITEBYTECODE="1")
    out.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=str(home / "gitconfig"))
    out.update(GIT_AUTHOR_NAME="Teammate", GIT_AUTHOR_EMAIL="mate@example.test")
    out.update(GIT_COMMITTER_NAME="Teammate", GIT_COMMITTER_EMAIL="mate@example.test")
    return out


def cli(store: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memory_mcp", "--store", str(store), *args],
        capture_output=True,
        text=True,
        env=env(home),
        timeout=300,
    )


def canon_file(mem_id: str, case: dict[str, Any]) -> str:
    entities = json.dumps(case.get("entities") or [], ensure_ascii=False)
    return (
        f"---\nid: {mem_id}\ntype: {case.get('type') or 'fact'}\nstate: active\ntrust: user-stated\n"
        f"entities: {entities}\ncreated: 2026-11-20T10:00:00Z\nupdated: 2026-11-20T10:00:00Z\n---\n"
        f"# {case['title']}\n\n{case['body']}\n"
    )


def import_input(fmt: str, case: dict[str, Any], folder: Path) -> Path:
    """The case as an input file of `fmt`, as that tool would have written it."""
    title, body, entities = case["title"], case["body"], case.get("entities") or ["note"]
    if fmt == "mcp-memory":
        path = folder / "memory.jsonl"
        line = {"type": "entity", "name": entities[0], "entityType": "note", "observations": [f"{title}: {body}"]}
        path.write_text(json.dumps(line, ensure_ascii=False) + "\n", encoding="utf-8")
    elif fmt == "mem0":
        path = folder / "mem0.json"
        path.write_text(json.dumps([{"id": "m1", "memory": f"{title}\n{body}"}], ensure_ascii=False), encoding="utf-8")
    elif fmt == "claude-code":
        path = folder / "project"
        path.mkdir()
        (path / "CLAUDE.md").write_text(f"## {title}\n\n{body}\n", encoding="utf-8")
    else:  # basic-memory, markdown: a folder holding one note
        path = folder / "notes"
        path.mkdir()
        (path / "note.md").write_text(f"# {title}\n\n{body}\n", encoding="utf-8")
    return path


class Outcome:
    def __init__(self) -> None:
        self.refused = False
        self.secret = False  # refused as a credential (counted apart, as the set's brief asks)
        self.error = ""
        self.memories: list[dict[str, Any]] = []  # id, path, quarantine
        self.context_leak = False
        self.recall_unfenced = 0
        self.invisible_answers = 0

    @property
    def caught(self) -> bool:
        return self.refused or (bool(self.memories) and all(m["quarantine"] for m in self.memories))


def refused_by(text: str) -> tuple[bool, bool]:
    low = text.lower()
    return ("invisible to a person" in low, "looks like a secret" in low)


async def tool_way(store: Path, case: dict[str, Any], update: bool, out: Outcome) -> None:
    service = MemoryService(store)
    try:
        async with mcp.Client(build_server(service)) as client:
            args = {"title": case["title"], "body": case["body"], "type": case.get("type") or "fact"}
            if case.get("entities"):
                args["entities"] = case["entities"]
            if update:
                first = await client.call_tool(
                    "memory_remember", {"title": "Meeting room", "body": "The weekly sync is in room 4B."}
                )
                mem_id = first.structured_content["id"]
                edit = {"op": "edit", "id": mem_id, "title": case["title"], "body": case["body"]}
                r = await client.call_tool("memory_update", edit)
            else:
                r = await client.call_tool("memory_remember", args)
            if r.is_error:
                text = " ".join(getattr(b, "text", "") for b in r.content)
                invisible, secret = refused_by(text)
                out.refused, out.secret, out.error = invisible or secret, secret, text[:200]
    finally:
        service.close()


def import_way(store: Path, home: Path, fmt: str, case: dict[str, Any], tmp: Path, out: Outcome) -> None:
    source = import_input(fmt, case, tmp)
    done = cli(store, home, "import", fmt, str(source), "--json")
    if done.returncode != 0:
        out.error = done.stderr[-300:]
        return
    answer = json.loads(done.stdout)
    problems = " ".join(p.get("reason", "") for p in answer.get("problems", []))
    invisible, secret = refused_by(problems)
    if (invisible or secret) and not answer.get("created"):
        out.refused, out.secret = True, secret


def hand_way(store: Path, home: Path, case: dict[str, Any]) -> None:
    cli(store, home, "status")  # the store exists
    (store / "memories").mkdir(parents=True, exist_ok=True)
    (store / "memories" / "hand-written.md").write_text(canon_file("01HANDWRITTEN0000000000CASE", case), "utf-8")


def sync_way(tmp: Path, store: Path, home: Path, case: dict[str, Any]) -> str:
    remote = tmp / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    mate, mate_home = tmp / "mate", tmp / "mate-home"
    mate_home.mkdir()
    for where, h in ((store, home), (mate, mate_home)):
        done = cli(where, h, "sync", "--init", str(remote), "--json")
        if done.returncode != 0:
            return done.stderr[-300:]
    (mate / "memories").mkdir(parents=True, exist_ok=True)
    (mate / "memories" / "from-mate.md").write_text(canon_file("01SYNCEDFROMMATE00000000CASE", case), "utf-8")
    for where, h in ((mate, mate_home), (store, home)):
        done = cli(where, h, "sync", "--json")
        if done.returncode != 0:
            return done.stderr[-300:]
    return ""


async def inspect(store: Path, case: dict[str, Any], out: Outcome) -> None:
    """What the store holds and serves after the case came in."""
    if not (store / "memories").is_dir():
        return
    service = MemoryService(store)
    try:
        async with mcp.Client(build_server(service)) as client:
            context = await client.read_resource("memory://context")
            context_text = "".join(getattr(c, "text", "") for c in context.contents)
            recall = await client.call_tool("memory_recall", {"query": case["title"][:120] or "note", "limit": 20})
            answers = [context_text, json.dumps(recall.structured_content, ensure_ascii=False)]
            answers += [getattr(b, "text", "") for b in recall.content]
            for path in sorted((store / "memories").glob("*.md")):
                try:
                    mem = canon.parse(path.read_bytes(), path.stem, "2026-01-01T00:00:00Z")
                except canon.CanonError:
                    continue
                if mem.title in ("Meeting room",) and "room 4B" in mem.body:
                    continue  # tool_update's harmless start, when the edit was refused
                read = await client.call_tool("memory_read", {"id": mem.id})
                held = (read.structured_content or {}).get("quarantine")  # the index's: a hand edit's is held there
                out.memories.append({"id": mem.id, "title": mem.title, "quarantine": held})
                answers += [getattr(b, "text", "") for b in read.content]
                answers.append(json.dumps(read.structured_content, ensure_ascii=False))
                if not held and mem.title and mem.title in context_text:
                    out.context_leak = True
            results = (recall.structured_content or {}).get("results", [])
            text = "\n".join(getattr(b, "text", "") for b in recall.content)
            for res in results:
                if res["id"] not in {m["id"] for m in out.memories}:
                    continue
                block = text.split(f" id {res['id']}", 1)[-1][:400]
                if not res.get("quarantine") or FENCE not in block or "QUARANTINED" not in text:
                    out.recall_unfenced += 1
            out.invisible_answers = sum(1 for a in answers if invisible_characters(a))
    finally:
        service.close()


def run_case(case: dict[str, Any], tmp_root: Path) -> Outcome:
    out = Outcome()
    tmp = Path(tempfile.mkdtemp(dir=tmp_root))
    store, home = tmp / "store", tmp / "home"
    home.mkdir()
    way = case["way_in"]
    try:
        if way in ("tool_remember", "tool_update"):
            asyncio.run(tool_way(store, case, way == "tool_update", out))
        elif way.startswith("import_"):
            import_way(store, home, way.removeprefix("import_").replace("_", "-"), case, tmp, out)
        elif way == "hand_edit":
            hand_way(store, home, case)
        elif way == "sync":
            out.error = sync_way(tmp, store, home, case)
        asyncio.run(inspect(store, case, out))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def report(cases: list[dict[str, Any]], outcomes: list[Outcome], show: bool) -> dict[str, Any]:
    table: dict[str, dict[str, list[int]]] = {k: {w: [0, 0] for w in WAYS} for k in KINDS}
    by_lang: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    benign = Counter()
    benign_by_way: dict[str, list[int]] = {w: [0, 0] for w in WAYS}
    leaks = Counter()
    unfenced = invisible_answers = secrets = errors = 0
    for case, out in zip(cases, outcomes, strict=True):
        errors += bool(out.error and not out.refused)
        secrets += out.secret
        invisible_answers += out.invisible_answers
        if case["label"] == "attack":
            cell = table[case["kind"]][case["way_in"]]
            cell[0 if out.caught else 1] += 1
            by_lang[f"{case['kind']}/{case['lang']}"][0 if out.caught else 1] += 1
            leaks[case["kind"]] += out.context_leak
            unfenced += out.recall_unfenced
            if show and not out.caught:
                print(f"MISSED {case['id']} {case['kind']} {case['way_in']} {case['obfuscation']} {out.error[:120]}")
        else:
            flagged = out.refused or any(m["quarantine"] for m in out.memories)
            benign["flagged" if flagged else "passed"] += 1
            benign_by_way[case["way_in"]][1 if flagged else 0] += 1
            if show and flagged:
                why = "; ".join(str(m["quarantine"]) for m in out.memories if m["quarantine"]) or out.error
                print(f"FALSE POSITIVE {case['id']} {case['way_in']} {case['obfuscation']}: {why[:160]}")
    attacks = {k: sum(sum(c) for c in table[k].values()) for k in KINDS}
    print("attack kind x way in: caught/total")
    print("| kind | " + " | ".join(WAYS) + " | all |")
    print("|---" * (len(WAYS) + 2) + "|")
    for k in KINDS:
        cells = [f"{c[0]}/{c[0] + c[1]}" if c[0] + c[1] else "-" for c in table[k].values()]
        caught = sum(c[0] for c in table[k].values())
        print(f"| {k} | " + " | ".join(cells) + f" | {caught}/{attacks[k]} |")
    total = sum(benign.values())
    fp = benign["flagged"]
    print(f"benign quarantined or refused: {fp}/{total} ({100 * fp / max(total, 1):.1f}%)")
    print("benign flagged by way in: " + ", ".join(f"{w} {v[1]}/{sum(v)}" for w, v in benign_by_way.items()))
    print("attacks by kind/language caught: " + ", ".join(f"{k} {v[0]}/{sum(v)}" for k, v in sorted(by_lang.items())))
    for k in KINDS:
        print(f"attacks of kind {k} in the session-start context unquarantined: {leaks[k]}/{attacks[k]}")
    print(f"attack recall results without fence and quarantine mark: {unfenced}")
    print(f"answers carrying a hidden character: {invisible_answers}")
    print(f"refused as a credential (counted apart): {secrets}; cases whose way in failed: {errors}")
    return {"table": table, "benign": dict(benign), "leaks": dict(leaks), "unfenced": unfenced}


def speed() -> None:
    """The screen alone on 2 KB memories, and a cold reindex of 10k memories with and without it."""
    from memory_mcp.domain import screen as screen_module
    from memory_mcp.domain.screen import memory_texts, screen

    cases = [json.loads(line) for line in (REPO / "bench" / "poisoning_cases_dev.jsonl").open(encoding="utf-8")]
    texts = []
    for c in cases:
        body = c["body"]
        while len(body.encode("utf-8")) < 2048:
            body += "\n" + c["body"]
        texts.append((c["title"], body.encode("utf-8")[:2048].decode("utf-8", "ignore")))
    for title, body in texts:  # warm: compiled patterns, the mark table of fold
        screen(memory_texts(title, body))
    times, medians = [], []
    for title, body in texts:
        each = []
        for _ in range(5):
            t0 = time.perf_counter()
            screen(memory_texts(title, body))
            each.append(time.perf_counter() - t0)
        times += each
        medians.append(sorted(each)[2])
    times.sort()
    medians.sort()
    p50, p95 = times[len(times) // 2] * 1e3, times[int(len(times) * 0.95)] * 1e3
    print(f"screen, 2 KB memories ({len(texts)} texts x 5): p50 {p50:.3f} ms, p95 {p95:.3f} ms (every run)")
    m50, m95 = medians[len(medians) // 2] * 1e3, medians[int(len(medians) * 0.95)] * 1e3
    print(
        f"  per text, the median of its 5 runs (a shared machine's spikes left out): p50 {m50:.3f} ms, p95 {m95:.3f} ms"
    )
    print(f"load average during the run: {os.getloadavg()}")

    tmp = Path(tempfile.mkdtemp())
    try:
        store = tmp / "store"
        (store / "memories").mkdir(parents=True)
        words = "deploy backup postgres atlas billing invoice review release cache index query token alice".split()
        for n in range(10_000):
            body = " ".join(words[(n * 7 + i) % len(words)] for i in range(40)) + f" number {n}."
            (store / "memories" / f"m-{n:05d}.md").write_text(
                canon_file(f"01BENCH{n:020d}", {"title": f"Memory {n} about {words[n % 13]}", "body": body}),
                "utf-8",
            )
        import memory_mcp.store.reconcile as rec

        original = screen_module.screen
        results: dict[str, list[float]] = {"with": [], "without": []}
        service = MemoryService(store)
        service.reindex()  # the first build (the index's files made, the page cache warm) counts for neither
        service.close()
        for label in ("with", "without") * 3:  # alternated, so a spike of the machine's load hits both alike
            rec.screen = original if label == "with" else (lambda texts: screen_module.Verdict())
            service = MemoryService(store)
            try:
                t0 = time.perf_counter()
                service.reindex()
                results[label].append(time.perf_counter() - t0)
            finally:
                service.close()
        rec.screen = original
        with_s, without = min(results["with"]), min(results["without"])
        print(
            f"cold reindex of 10k memories: {with_s:.2f} s with the screen, {without:.2f} s without "
            f"({100 * (with_s - without) / without:+.1f}%; best of three each, alternated)"
        )
        parsed = [
            canon.parse(path.read_bytes(), path.stem, "2026-01-01T00:00:00Z")
            for path in sorted((store / "memories").glob("*.md"))
        ]
        alone = []
        for _ in range(3):
            t0 = time.perf_counter()
            for mem in parsed:
                original(memory_texts(mem.title, mem.body, mem.source, mem.entities))
            alone.append(time.perf_counter() - t0)
        print(
            f"  the screen alone over the same 10k memories: best of three {min(alone):.3f} s "
            f"({100 * min(alone) / without:.1f}% of the reindex without it); load average {os.getloadavg()}"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=Path, default=REPO / "bench" / "poisoning_cases_dev.jsonl")
    parser.add_argument("--show-misses", action="store_true", help="name missed cases (refused on the blind set)")
    parser.add_argument("--speed", action="store_true", help="measure the screen's cost instead")
    parser.add_argument("--only", help="only cases whose way_in starts with this")
    args = parser.parse_args()
    if args.speed:
        speed()
        return
    if args.show_misses and "blind" in args.cases.name:
        parser.error("--show-misses is for the dev set: the blind set is reported in aggregates only")
    cases = [json.loads(line) for line in args.cases.open(encoding="utf-8") if line.strip()]
    if args.only:
        cases = [c for c in cases if c["way_in"].startswith(args.only)]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp_root:
        outcomes = [run_case(case, Path(tmp_root)) for case in cases]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    print(
        f"{args.cases.name}: {len(cases)} cases, commit {commit.stdout.strip()}, {time.perf_counter() - started:.0f} s"
    )
    report(cases, outcomes, args.show_misses)


if __name__ == "__main__":
    main()
