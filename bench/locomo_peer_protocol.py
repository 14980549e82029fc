"""LoCoMo retrieval on MemPalace's own protocol, with memory-mcp's keyword recall as the retriever.

One command, run from a checkout (with the project's Python):

    python bench/locomo_peer_protocol.py                        # both granularities, all 10 conversations
    python bench/locomo_peer_protocol.py --granularity dialog --split dev --dump /tmp/dialog-dev.jsonl

The protocol is the one of MemPalace's public `benchmarks/locomo_bench.py` (MemPalace/mempalace; read at
commit 0948696, its published figures in `benchmarks/BENCHMARKS.md` at 6806f98), reimplemented here from
its description, no code copied:

- one store per conversation ("one palace per conversation"), built from `locomo10.json` as is;
- the corpus at one of two granularities: `session`, one document per session (its turns, each written
  `<speaker> said, "<text>"`, one per line; id `session_<n>`), or `dialog`, one document per turn (the same
  line alone; id = the turn's `dia_id`). Sessions are read from `session_1` upwards until one is missing;
  image captions are not part of a document;
- every question of the file (1,986: all five categories, adversarial included, nothing dropped) is asked
  in its conversation's store; its gold is its `evidence` list as written: at dialog granularity the set of
  its strings, at session granularity the set of sessions named by a leading `D<n>:` in each string. The
  file's slips stay as they are (`"D8:6; D9:17"` counts as one id that no turn has, and only session 8 at
  session granularity): that is what the peer's figures were scored on;
- R@k of a question = the share of its gold ids found among the first k results, order inside the k not
  counted; a question with no gold counts 1.0 (4 open-domain questions); the figure is the mean over
  questions, overall and per category number.

Categories are reported by number with the upstream names (snap-research/locomo's evaluation code:
1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial). MemPalace labels the same numbers
1 Single-hop, 2 Temporal, 3 Temporal-inference, 4 Open-domain, 5 Adversarial: its "Single-hop" row is
category 1, which the upstream code calls multi-hop.

The random column is the exact expectation of R@k under a uniformly random order of the store's
documents: each gold id that names a document is in the first k with probability min(k, N) / N. At session
granularity (19-32 sessions per conversation) that alone is 31-53% at k = 10.

memory-mcp side: each document is one canon memory file (title `-`, which no question can match, body =
the document; type `episode`, trust `imported`, created/updated = the session's date), each conversation
its own store, indexed with `MemoryService.reindex` and asked through `MemoryService.recall(question,
limit=20, store=..., touch=False)`, keyword mode (the default). `touch=False` keeps one question's recall
from changing the next one's ranking (heat).

The development / test split for tuning (issue 28 §3), fixed, by conversation: `dev` = the conversations
at even positions of the file (conv-26, conv-41, conv-43, conv-47, conv-49: 1,020 questions), `test` = the
others (conv-30, conv-42, conv-44, conv-48, conv-50: 966 questions). Only the dev half is looked at question
by question (`--dump`); the test half is only ever scored.

The data is read from the shared bench folder (`--bench-dir`, default `../shared/bench` beside the
checkout or `$MEMORY_MCP_BENCH_DIR`); stores, dumps and JSON are written outside the repository only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from eval_retrieval import DEFAULT_BENCH, REPO, write_stores

DEPTH = 20  # memory_recall's maximum limit
KS = (1, 5, 10)
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
DEV = ("conv-26", "conv-41", "conv-43", "conv-47", "conv-49")
TEST = ("conv-30", "conv-42", "conv-44", "conv-48", "conv-50")
GRANULARITIES = ("session", "dialog")
_SESSION_OF_EVIDENCE = re.compile(r"D(\d+):")

# MemPalace's published LoCoMo retrieval figures (benchmarks/BENCHMARKS.md), top-10, no LLM, all 1,986
# questions; the per-category rows under its own labels mapped to category numbers.
PUBLISHED = {
    ("session", "hybrid v5"): {"R@5": 0.837, "R@10": 0.889, 1: 0.721, 2: 0.908, 3: 0.700, 4: 0.926, 5: 0.953},
    ("session", "raw"): {"R@10": 0.603, 1: 0.590, 2: 0.692, 3: 0.460, 4: 0.581, 5: 0.619},
    ("dialog", "raw"): {"R@10": 0.480},
}


@dataclass
class Document:
    doc_id: str  # the id the protocol scores: `session_<n>` or a turn's dia_id
    text: str
    when: str | None  # ISO date of its session
    follows: str | None = None  # dialog: the turn before it in its session (the memory's `follows`)


@dataclass
class Question:
    store: str
    index: int
    text: str
    category: int
    gold: set[str]


@dataclass
class Scored:
    question: Question
    ranked: list[str]
    recall: dict[int, float] = field(default_factory=dict)
    random: dict[int, float] = field(default_factory=dict)


def log(msg: str) -> None:
    print(msg, flush=True)


def session_date(raw: str) -> str | None:
    """`1:56 pm on 8 May, 2023` -> `2023-05-08T13:56:00` (None when it does not read)."""
    try:
        return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").isoformat()
    except ValueError:
        return None


def said(turn: dict) -> str:
    return f'{turn.get("speaker", "?")} said, "{turn.get("text", "")}"'


def documents_of(conversation: dict, granularity: str, threads: bool = True) -> list[Document]:
    docs: list[Document] = []
    number = 1
    while f"session_{number}" in conversation:
        turns = conversation[f"session_{number}"]
        when = session_date(conversation.get(f"session_{number}_date_time", ""))
        if granularity == "session":
            docs.append(Document(f"session_{number}", "\n".join(said(t) for t in turns), when))
        else:
            ids = [t.get("dia_id", f"D{number}:?") for t in turns]
            docs.extend(
                Document(i, said(t), when, ids[n - 1] if n and threads else None)
                for n, (i, t) in enumerate(zip(ids, turns, strict=True))
            )
        number += 1
    return docs


def gold_of(evidence: list[str], granularity: str) -> set[str]:
    if granularity == "dialog":
        return set(evidence)
    return {f"session_{m.group(1)}" for e in evidence if (m := _SESSION_OF_EVIDENCE.match(e))}


def recall_at(ranked: list[str], gold: set[str], k: int) -> float:
    if not gold:
        return 1.0
    top = set(ranked[:k])
    return sum(1 for g in gold if g in top) / len(gold)


def random_recall_at(gold: set[str], doc_ids: set[str], k: int) -> float:
    """Expected R@k when the store's documents come in a uniformly random order."""
    if not gold:
        return 1.0
    n = len(doc_ids)
    return sum(1 for g in gold if g in doc_ids) / len(gold) * min(k, n) / n


def run_granularity(
    samples: list[dict], granularity: str, work: Path, threads: bool = True
) -> tuple[list[Scored], dict]:
    from memory_mcp.tools.service import MemoryService

    stores_dir = work / f"stores-{granularity}"
    if stores_dir.exists():
        shutil.rmtree(stores_dir)
    corpus: list[dict] = []
    doc_ids: dict[str, set[str]] = {}
    for sample in samples:
        store = sample["sample_id"]
        docs = documents_of(sample["conversation"], granularity, threads)
        doc_ids[store] = {d.doc_id for d in docs}
        for d in docs:
            corpus.append(
                {
                    "id": f"{store}\x00{d.doc_id}",
                    "store": store,
                    "title": "-",
                    "text": d.text,
                    "date_iso": d.when,
                    "dia_id": d.doc_id,
                    "follows": f"{store}\x00{d.follows}" if d.follows else None,
                }  # fmt: skip
            )
    stores, id_map = write_stores(corpus, stores_dir, titles=False)
    service = MemoryService(stores_dir / stores[0])
    t0 = time.perf_counter()
    for store in stores:
        answer = service.reindex(store=store)
        if answer.unparseable:
            raise SystemExit(f"{store}: {len(answer.unparseable)} files did not parse: {answer.unparseable[:3]}")
    index_s = time.perf_counter() - t0
    scored: list[Scored] = []
    t0 = time.perf_counter()
    for sample in samples:
        store = sample["sample_id"]
        for index, qa in enumerate(sample["qa"]):
            q = Question(
                store, index, qa["question"], int(qa["category"]), gold_of(qa.get("evidence", []), granularity)
            )
            answer = service.recall(q.text, limit=DEPTH, store=store, touch=False)
            ranked = [id_map[r.id].split("\x00", 1)[1] for r in answer.results]
            s = Scored(q, ranked)
            for k in KS:
                s.recall[k] = recall_at(ranked, q.gold, k)
                s.random[k] = random_recall_at(q.gold, doc_ids[store], k)
            scored.append(s)
    recall_s = time.perf_counter() - t0
    service.close()
    return scored, {"documents": len(corpus), "index_s": round(index_s, 1), "recall_s": round(recall_s, 1)}


def table(scored: list[Scored]) -> dict[str, dict]:
    """Rows ALL and one per category: n, memory-mcp R@k and random R@k."""
    groups: dict[str, list[Scored]] = defaultdict(list)
    for s in scored:
        groups["ALL"].append(s)
        groups[f"{s.question.category} {CATEGORY_NAMES.get(s.question.category, '?')}"].append(s)
    out: dict[str, dict] = {}
    for name in ["ALL", *sorted(k for k in groups if k != "ALL")]:
        rows = groups[name]
        out[name] = {"n": len(rows)}
        for k in KS:
            out[name][f"R@{k}"] = round(sum(s.recall[k] for s in rows) / len(rows), 4)
            out[name][f"random R@{k}"] = round(sum(s.random[k] for s in rows) / len(rows), 4)
    return out


def print_table(title: str, rows: dict[str, dict]) -> None:
    log(f"\n{title}")
    cols = [f"R@{k}" for k in KS] + [f"random R@{k}" for k in KS]
    header = f"{'category':<16}{'n':>6}" + "".join(f"{c:>13}" for c in cols)
    log(header)
    log("-" * len(header))
    for name, r in rows.items():
        log(f"{name:<16}{r['n']:>6}" + "".join(f"{r[c]:>13.4f}" for c in cols))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench-dir", type=Path, default=Path(os.environ.get("MEMORY_MCP_BENCH_DIR", DEFAULT_BENCH)))
    p.add_argument("--granularity", choices=(*GRANULARITIES, "both"), default="both")
    p.add_argument("--split", choices=("all", "dev", "test"), default="all", help="which conversations to run")
    p.add_argument("--work", type=Path, help="work folder (default: a new temp folder, removed afterwards)")
    p.add_argument(
        "--no-threads",
        action="store_true",
        help="dialog: no `follows` links between a session's turns (recall's thread continuation has nothing to follow)",
    )
    p.add_argument("--dump", type=Path, help="write every question's ranking and recall here (JSONL)")
    p.add_argument("--json", type=Path, help="write every table as JSON here")
    args = p.parse_args(argv)

    data = args.bench_dir.resolve() / "data" / "locomo10.json"
    if not data.is_file():
        p.error(f"--bench-dir: no data/locomo10.json in {args.bench_dir}")
    for out in (args.work, args.dump, args.json):
        if out is not None and (out.resolve() == REPO or REPO in out.resolve().parents):
            p.error(f"{out}: must be outside the repository (the benchmark data may not be copied into it)")
    samples = json.loads(data.read_text(encoding="utf-8"))
    wanted = {"dev": DEV, "test": TEST}.get(args.split)
    if wanted is not None:
        samples = [s for s in samples if s["sample_id"] in wanted]
        if len(samples) != len(wanted):
            raise SystemExit(f"expected conversations {wanted}, found {[s['sample_id'] for s in samples]}")
    work = (args.work or Path(tempfile.mkdtemp(prefix="memory-mcp-locomo-peer-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    granularities = GRANULARITIES if args.granularity == "both" else (args.granularity,)
    everything: dict = {"split": args.split, "conversations": [s["sample_id"] for s in samples]}
    dump_rows: list[dict] = []
    try:
        for granularity in granularities:
            scored, timing = run_granularity(samples, granularity, work, threads=not args.no_threads)
            log(f"\n=== {granularity} granularity: {timing['documents']} documents, "
                f"index {timing['index_s']} s, {len(scored)} questions in {timing['recall_s']} s ===")  # fmt: skip
            tables = {"all": table(scored)}
            if args.split == "all":
                for half, names in (("dev", DEV), ("test", TEST)):
                    rows = [s for s in scored if s.question.store in names]
                    if rows:  # a file without the split's conversations has no half to show
                        tables[half] = table(rows)
            for half, rows in tables.items():
                print_table(f"{granularity}, {half} conversations", rows)
            published = {mode: figs for (g, mode), figs in PUBLISHED.items() if g == granularity}
            for mode, figs in published.items():
                shown = ", ".join(
                    f"{k if isinstance(k, str) else f'{k} {CATEGORY_NAMES[k]}'} {v:.3f}" for k, v in figs.items()
                )
                log(f"MemPalace published ({mode}, top-10, all conversations): {shown}")
            everything[granularity] = {"timing": timing, "tables": tables}
            for s in scored:
                q = s.question
                dump_rows.append(
                    {
                        "granularity": granularity,
                        "store": q.store,
                        "index": q.index,
                        "question": q.text,
                        "category": q.category,
                        "gold": sorted(q.gold),
                        "ranked": s.ranked,
                        "recall": {f"R@{k}": v for k, v in s.recall.items()},
                    }  # fmt: skip
                )
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    if args.dump:
        with args.dump.open("w", encoding="utf-8") as fh:
            for row in dump_rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    if args.json:
        args.json.write_text(json.dumps(everything, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
