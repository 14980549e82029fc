"""Fusion of the keyword and cosine rankings, tried offline on dumps, tuned on a dev split only.

    python bench/eval_hybrid.py --work /tmp/hyb --keep --reuse-stores --runs bm25,hybrid --dump-fusion
    python bench/hybrid_fusion_sweep.py --work /tmp/hyb      # every fusion below, dev / test / all
    python bench/hybrid_fusion_sweep.py --work /tmp/hyb --score-runs   # the product runs themselves, per split

`eval_hybrid.py --dump-fusion` writes, per dataset, `fusion-dump.jsonl` into the work folder (outside the
repository: it is made from the benchmark data): for every question, what the product's hybrid recall
handed `fusion.fuse`, the keyword ranking (top `semantic.depth`, with each result's keyword score) and
the cosine ranking (top `semantic.depth`, with each cosine). Neither depends on the fusion settings.

This script re-fuses those two rankings with `fusion.fuse` under each candidate `SemanticConfig`, keeps
the top 20 (no collapse, so compare with the `-nocollapse` runs) and scores them with the shared
scorer's own `evaluate`, per split:

- LoCoMo: dev = the conversations at even positions of the data file (1st, 3rd, ...), test = the others;
- KorQuAD: dev = questions whose first gold paragraph id has an even SHA-1 (first byte), test = the others.

The split was fixed before any fusion was tried; choices are made on dev and reported on test.

`--score-runs` replays nothing: it scores the run files `eval_hybrid.py` wrote (`run-bm25.jsonl`,
`run-hybrid.jsonl`: the product's recall, collapse included) on the same splits, per category.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from memory_mcp.search import fusion  # noqa: E402
from memory_mcp.search import semantic as sem  # noqa: E402

DEFAULT_BENCH = REPO.parent / "shared" / "bench"
DEPTH = 20
METRICS = ("R@1", "R@5", "R@10", "hit@5", "MRR", "nDCG@10")
PARTS = ("dev", "test", "all")


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def split_of(dataset: str, query: dict, store_order: list[str]) -> str:
    if dataset == "locomo":
        return "dev" if store_order.index(query["store"]) % 2 == 0 else "test"
    first = hashlib.sha1(query["relevant"][0].encode("utf-8")).digest()[0]
    return "dev" if first % 2 == 0 else "test"


def load_scorer(bench: Path):  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(bench))
    import baseline_bm25

    return baseline_bm25


def run_of(rows: list[dict], cfg: sem.SemanticConfig | None) -> dict[str, list[str]]:
    """qid -> top 20 ids: keyword order when cfg is None, else the fusion."""
    out: dict[str, list[str]] = {}
    for r in rows:
        kw = [(k, s) for k, s in r["kw"]]
        if cfg is None:
            out[r["qid"]] = [k for k, _ in kw[:DEPTH]]
            continue
        cos = [(k, s) for k, s in r["cos"]]
        # a smaller semantic.depth than the dump's: both rankings cut, as the product would
        out[r["qid"]] = [k for k, _ in fusion.fuse(kw[: cfg.depth], cos[: cfg.depth], cfg)[:DEPTH]]
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", type=Path, required=True)
    p.add_argument("--datasets", default="locomo,korquad")
    p.add_argument("--bench-dir", type=Path, default=Path(os.environ.get("MEMORY_MCP_BENCH_DIR", DEFAULT_BENCH)))
    p.add_argument("--depth", type=int, default=100, help="semantic.depth of the dump")
    p.add_argument("--configs", default="", help="sweep only these candidate names (comma-separated)")
    p.add_argument("--json", type=Path, help="sweep: write every figure here")
    p.add_argument("--score-runs", action="store_true", help="score eval_hybrid.py's run files per split instead")
    args = p.parse_args(argv)
    datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    scorer = load_scorer(args.bench_dir.resolve())
    everything: dict = {}
    for d in datasets:
        dwork = args.work.resolve() / d
        raw = read_jsonl(dwork / "bench" / "queries.jsonl")
        store_order = list(dict.fromkeys(q["store"] for q in raw))
        known = {doc["id"] for doc in read_jsonl(dwork / "bench" / "corpus.jsonl")}
        queries = scorer.load_queries(dwork / "bench" / "queries.jsonl", known)
        split = {q["qid"]: split_of(d, q, store_order) for q in raw}
        if args.score_runs:
            runs = {
                n: {r["qid"]: r["ranked"] for r in read_jsonl(dwork / f"run-{n}.jsonl")} for n in ("bm25", "hybrid")
            }
            figures = {
                n: {p: scorer.evaluate([q for q in queries if p == "all" or split[q.qid] == p], run) for p in PARTS}
                for n, run in runs.items()
            }
            everything[d] = figures
            print_runs(d, figures)
            continue
        rows = read_jsonl(dwork / "fusion-dump.jsonl")
        base = sem.SemanticConfig(depth=args.depth)
        candidates = {"bm25": None} | candidates_for(base)
        if args.configs:
            wanted = set(args.configs.split(","))
            candidates = {k: v for k, v in candidates.items() if k in wanted or k == "bm25"}
        figures: dict[str, dict] = {}
        for name, cfg in candidates.items():
            run = run_of(rows, cfg)
            figures[name] = {
                part: scorer.evaluate([q for q in queries if part == "all" or split[q.qid] == part], run)
                for part in PARTS
            }
        everything[d] = figures
        print_sweep(d, figures)
    if args.json:
        args.json.write_text(json.dumps(everything, indent=1), encoding="utf-8")
    return 0


def candidates_for(base: sem.SemanticConfig) -> dict[str, sem.SemanticConfig]:
    out: dict[str, sem.SemanticConfig] = {}
    for k in (10, 30, 60, 120):
        out[f"rrf k={k}"] = replace(base, fusion="rrf", rrf_k=k)
    for share in (0.3, 0.4, 0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9):
        out[f"score share={share}"] = replace(base, fusion="score", keyword_share=share)
    for depth in (20, 50):
        for share in (0.7, 0.75, 0.8):
            out[f"score share={share} depth={depth}"] = replace(base, keyword_share=share, depth=depth)
    return out


def print_sweep(dataset: str, figures: dict[str, dict]) -> None:
    b = figures["bm25"]
    for part in ("dev", "test", "all"):
        for row in ("ALL", "ALL w/o adversarial", "adversarial", "multi-hop", "open-domain"):
            if row not in b[part]:
                continue
            print(f"\n{dataset} {part} {row} (n={int(b[part][row]['n'])}), minus bm25 (bm25 itself first)")
            print(f"| {'fusion':<28} |" + "".join(f" {m:>7} |" for m in METRICS) + " min |")
            for name, fig in figures.items():
                m = fig[part][row]
                if name == "bm25":
                    vals = [m[k] for k in METRICS]
                    print(f"| {name:<28} |" + "".join(f" {v:>7.4f} |" for v in vals) + "     |")
                    continue
                deltas = [m[k] - b[part][row][k] for k in METRICS]
                print(f"| {name:<28} |" + "".join(f" {v:>+7.4f} |" for v in deltas) + f" {min(deltas):+.4f} |")


def print_runs(dataset: str, figures: dict[str, dict]) -> None:
    """One Markdown row per split and category: bm25 / hybrid (hybrid - bm25) for each metric."""
    b, h = figures["bm25"], figures["hybrid"]
    print(f"\n{dataset}: bm25 / hybrid (hybrid - bm25)")
    print("| split | category (n) |" + "".join(f" {m} |" for m in METRICS))
    print("| --- | --- |" + " --- |" * len(METRICS))
    for part in PARTS:
        for row in b[part]:
            cells = [
                f"{b[part][row][m]:.4f} / {h[part][row][m]:.4f} ({h[part][row][m] - b[part][row][m]:+.4f})"
                for m in METRICS
            ]
            print(f"| {part} | {row} ({int(b[part][row]['n']):,}) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    sys.exit(main())
