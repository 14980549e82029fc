"""Drive the peer project basic-memory (PyPI) from outside, for side-by-side figures.

This file has two halves:

- `write_note` / `write_notes` (standard library only): our bench scripts import them to write
  a corpus as basic-memory notes, one Markdown file per memory (frontmatter `title`, `type`,
  `tags`, and `corpus_id`, the bench id the driver maps results back to; body = the memory's text).
  basic-memory does not put frontmatter fields other than `tags` into its full-text index, so
  `corpus_id` cannot match a query. File names are neutral (`m000123.md`): basic-memory indexes
  the file path and the permalink made from it.
- the driver, run by the interpreter of a side venv that has basic-memory installed (it needs
  Python >= 3.12; the project's own code never imports basic_memory):

      /tmp/bmvenv/bin/python bench/peer_basic_memory.py search --notes DIR --queries Q.jsonl \\
          --out RUN.jsonl --work W [--depth 20]
      /tmp/bmvenv/bin/python bench/peer_basic_memory.py speed --notes DIR --queries Q.json --work W

  `search`: every sub-folder of DIR is one basic-memory project (so each bench store is searched
  alone); the driver indexes them all, then runs every query (`qid`, `store`, `query`) in its own
  store's project and writes `{"qid": ..., "ranked": [corpus ids]}` lines, best first.
  `speed`: DIR is one project; cold index, no-change re-index, one-file-changed re-index, search
  p50/p95 (wall and process CPU), peak RSS. Both print one JSON object on the last stdout line.

How basic-memory is configured and called (version 0.24.x, read from its source):

- everything it writes goes under `--work`: HOME, BASIC_MEMORY_CONFIG_DIR (config.json and its
  SQLite database `memory.db`) and an empty FASTEMBED_CACHE_PATH; HF_HUB_OFFLINE=1. The user's
  real ~/.basic-memory is never read or written;
- semantic search is off: config `default_search_type: "text"` (what `search_notes` runs when
  no `search_type` is given), the index pass runs with `embeddings=False` (what
  `bm reindex --search` does: no vector targets, no embedding provider, no model download), and
  every search is built as `search_type="text"` -> SQLite FTS5. After the run the driver reports
  the evidence: files in the FastEmbed cache (`model_files`, 0 expected), whether basic-memory
  could have run vector search at all here (`vector_runtime_available`: False on an interpreter
  whose sqlite3 cannot load extensions, such as a pyenv build; basic-memory then says it runs
  keyword-only) and which embedding libraries were imported (`embedding_modules_loaded`);
- indexing = `run_local_project_index_for_project(project, force_full=False, embeddings=False)`,
  the project index pass behind `bm project index` / `bm reindex --search` (change detection by
  checksum, parse, entity + search rows, relation resolution). With its default
  `ensure_frontmatter_on_sync` it writes a `permalink` into each note's frontmatter on first sync;
- search = the `SearchQuery` that the MCP tool `search_notes` builds (its own
  `_build_search_query`, search_type "text", default entity-level results) passed to
  `SearchService.search(query, limit=depth)`, the call behind the API route the tool uses. The
  HTTP/ASGI hop and the Markdown formatting of the tool are left out (memory-mcp is timed at its
  service too). basic-memory's text search is strict (all terms) and retries a relaxed OR query
  only when the strict one finds nothing — its behaviour, kept as is;
- loguru output is limited to warnings (its default handler logs DEBUG lines per file).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import sys
import time
from pathlib import Path

NOTE_PREFIX = "m"


def write_note(
    folder: Path, index: int, corpus_id: str, title: str, text: str, note_type: str = "note", tags=()
) -> Path:
    """One basic-memory note; JSON strings are valid YAML double-quoted scalars."""
    lines = ["---", f"title: {json.dumps(title, ensure_ascii=False)}", f"type: {note_type}"]
    if tags:
        lines.append(f"tags: {json.dumps(list(tags), ensure_ascii=False)}")
    lines += [f"corpus_id: {json.dumps(corpus_id, ensure_ascii=False)}", "---", "", text.rstrip() + "\n"]
    path = folder / f"{NOTE_PREFIX}{index:06d}.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def write_notes(docs, root: Path, titles: bool = True) -> list[str]:
    """Bench corpus rows -> one folder (= one basic-memory project) per `store`; returns store names."""
    stores: list[str] = []
    counters: dict[str, int] = {}
    for doc in docs:
        store = doc["store"]
        if store not in counters:
            stores.append(store)
            counters[store] = 0
            (root / store).mkdir(parents=True, exist_ok=True)
        title = (doc.get("title") or "-") if titles else "-"
        write_note(root / store, counters[store], doc["id"], title, doc["text"])
        counters[store] += 1
    return stores


def read_corpus_ids(folder: Path) -> dict[str, str]:
    """File name -> corpus id, from the frontmatter as `write_note` wrote it (read before indexing:
    basic-memory rewrites the frontmatter when it adds permalinks)."""
    out = {}
    for path in folder.glob(f"{NOTE_PREFIX}*.md"):
        with path.open(encoding="utf-8") as fh:
            fh.readline()
            for line in fh:
                if line.startswith("corpus_id: "):
                    out[path.name] = json.loads(line[len("corpus_id: ") :])
                    break
                if line.rstrip() == "---":
                    break
    return out


# ---------------------------------------------------------------- driver (side venv only) ----


def isolate(work: Path, projects: dict[str, Path]) -> None:
    """Private HOME/config/cache under `work`, config.json with our projects; before importing basic_memory."""
    for sub in ("home", "config", "fastembed_cache"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    os.environ["HOME"] = str(work / "home")
    os.environ["BASIC_MEMORY_CONFIG_DIR"] = str(work / "config")
    os.environ.pop("XDG_CONFIG_HOME", None)
    os.environ.pop("BASIC_MEMORY_HOME", None)
    os.environ["FASTEMBED_CACHE_PATH"] = str(work / "fastembed_cache")
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["BASIC_MEMORY_LOG_LEVEL"] = "WARNING"
    config = {
        "projects": {name: {"path": str(path)} for name, path in projects.items()},
        "default_project": next(iter(projects)),
        "default_search_type": "text",
        "log_level": "WARNING",
        "auto_update": False,
    }
    (work / "config" / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")


class Peer:
    """basic-memory's own services for every configured project, in one process."""

    async def open(self) -> None:
        from loguru import logger

        logger.remove()
        logger.add(sys.stderr, level="WARNING")

        from basic_memory import db
        from basic_memory.config import ConfigManager
        from basic_memory.mcp.tools.search import _build_search_query
        from basic_memory.repository import ProjectRepository
        from basic_memory.services.initialization import reconcile_projects_with_config

        # imported here, not at the first search: it loads the whole MCP tool stack (seconds)
        self.build_query = _build_search_query
        self.db = db
        self.config = ConfigManager().config
        if self.config.default_search_type != "text":
            raise SystemExit("basic-memory did not read our config (default_search_type is not 'text')")
        if not await reconcile_projects_with_config(self.config):
            raise SystemExit("basic-memory could not register the projects")
        _, self.session_maker = await db.get_or_create_db(
            db_path=self.config.database_path, db_type=db.DatabaseType.FILESYSTEM
        )
        async with db.scoped_session(self.session_maker) as session:
            projects = await ProjectRepository().get_active_projects(session)
        self.projects = {Path(p.path).resolve(): p for p in projects}
        self.services: dict = {}

    def project(self, folder: Path):
        return self.projects[folder.resolve()]

    async def index(self, folder: Path):
        from basic_memory.index.local_project import (
            LocalProjectIndexRuntimeFactory,
            run_local_project_index_for_project,
        )

        return await run_local_project_index_for_project(
            self.project(folder),
            runtime_factory=LocalProjectIndexRuntimeFactory(),
            force_full=False,
            embeddings=False,
        )

    def search_service(self, folder: Path):
        if folder in self.services:
            return self.services[folder]
        from basic_memory.markdown.entity_parser import EntityParser
        from basic_memory.markdown.markdown_processor import MarkdownProcessor
        from basic_memory.repository import EntityRepository
        from basic_memory.repository.search_repository import create_search_repository
        from basic_memory.services.file_service import FileService
        from basic_memory.services.search_service import SearchService

        project = self.project(folder)
        home = Path(project.path)
        processor = MarkdownProcessor(EntityParser(home), app_config=self.config)
        service = SearchService(
            create_search_repository(self.session_maker, project_id=project.id, app_config=self.config),
            EntityRepository(project_id=project.id),
            FileService(home, processor, app_config=self.config),
            session_maker=self.session_maker,
        )
        self.services[folder] = service
        return service

    async def search(self, folder: Path, text: str, limit: int) -> list[str]:
        """File paths (project-relative), best first, as search_notes(search_type="text") ranks them."""
        query = self.build_query(
            query=text,
            search_type="text",
            note_types=[],
            entity_types=[],
            categories=[],
            after_date=None,
            metadata_filters=None,
            tags=None,
            status=None,
            min_similarity=None,
            valid_at=None,
            valid_overlaps=None,
            time_kind=None,
        )
        if query is None:
            return []
        rows = await self.search_service(folder).search(query, limit=limit)
        return [row.file_path for row in rows]

    async def close(self) -> None:
        await self.db.shutdown_db()


def files_failed(result) -> int:
    return sum(1 for b in result.batch_results for f in b.file_results if f.status.value == "failed")


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


def model_files(work: Path) -> int:
    return sum(1 for p in (work / "fastembed_cache").rglob("*") if p.is_file())


def semantic_state() -> dict:
    """Evidence that no semantic path ran: can this interpreter load sqlite-vec at all, and was any
    embedding library imported in this process."""
    from basic_memory.repository.semantic_runtime import sqlite_vector_runtime_available

    return {
        "vector_runtime_available": sqlite_vector_runtime_available(),
        "embedding_modules_loaded": sorted(m for m in ("fastembed", "onnxruntime", "litellm") if m in sys.modules),
    }


def peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


async def run_search(args) -> dict:
    folders = {p.name: p for p in sorted(args.notes.iterdir()) if p.is_dir()}
    isolate(args.work, {f"bench-{i}": p for i, p in enumerate(folders.values())})
    import basic_memory

    ids = {name: read_corpus_ids(folder) for name, folder in folders.items()}
    peer = Peer()
    await peer.open()
    t0, c0 = time.perf_counter(), time.process_time()
    files = failed = 0
    for folder in folders.values():
        result = await peer.index(folder)
        files += result.total_files
        failed += files_failed(result)
    index_s, index_cpu = time.perf_counter() - t0, time.process_time() - c0
    queries = [json.loads(line) for line in args.queries.open(encoding="utf-8") if line.strip()]
    lat, cpu, rows, unmapped = [], [], [], 0
    for q in queries:
        folder = folders[q["store"]]
        t0, c0 = time.perf_counter(), time.process_time()
        paths = await peer.search(folder, q["query"], args.depth)
        lat.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
        ranked, seen = [], set()
        for path in paths:
            cid = ids[q["store"]].get(Path(path).name)
            if cid is None:
                unmapped += 1
            elif cid not in seen:
                seen.add(cid)
                ranked.append(cid)
        rows.append({"qid": q["qid"], "ranked": ranked})
    await peer.close()
    with args.out.open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    return {
        "basic_memory_version": basic_memory.__version__,
        "projects": len(folders),
        "files": files,
        "failed_files": failed,
        "index_s": round(index_s, 2),
        "index_cpu_s": round(index_cpu, 2),
        "memories_per_s": round(files / index_s) if index_s else None,
        "queries": len(rows),
        "with_results": sum(1 for r in rows if r["ranked"]),
        "unmapped_results": unmapped,
        "search_p50_ms": round(statistics.median(lat), 2),
        "search_p95_ms": round(pct(lat, 0.95), 2),
        "search_cpu_p50_ms": round(statistics.median(cpu), 2),
        "search_cpu_p95_ms": round(pct(cpu, 0.95), 2),
        "search_total_s": round(sum(lat) / 1000, 1),
        "peak_rss_mb": peak_rss_mb(),
        "model_files": model_files(args.work),
        **semantic_state(),
    }


async def run_speed(args) -> dict:
    folder = args.notes.resolve()
    isolate(args.work, {"bench": folder})
    import basic_memory

    peer = Peer()
    await peer.open()
    files = sorted(folder.glob("*.md"))
    t0, c0 = time.perf_counter(), time.process_time()
    result = await peer.index(folder)
    cold, cold_cpu = time.perf_counter() - t0, time.process_time() - c0
    failed = files_failed(result)
    nochange, nochange_cpu = [], []
    for _ in range(args.nochange):
        t0, c0 = time.perf_counter(), time.process_time()
        again = await peer.index(folder)
        nochange.append((time.perf_counter() - t0) * 1000)
        nochange_cpu.append((time.process_time() - c0) * 1000)
    reindexed_on_nochange = again.enqueued_files
    rng = random.Random(3)
    changed, changed_cpu = [], []
    for i in range(args.changed):
        path = rng.choice(files)
        path.write_text(path.read_text(encoding="utf-8") + f"\nEdited by hand, pass {i}.\n", encoding="utf-8")
        t0, c0 = time.perf_counter(), time.process_time()
        result = await peer.index(folder)
        changed.append((time.perf_counter() - t0) * 1000)
        changed_cpu.append((time.process_time() - c0) * 1000)
        if result.enqueued_files < 1:
            raise SystemExit("basic-memory did not re-index the edited file")
        time.sleep(0.06)  # same pause as memory-mcp's loop
    texts = json.loads(args.queries.read_text(encoding="utf-8"))
    lat, lat_cpu, hits = [], [], 0
    for text in texts:
        t0, c0 = time.perf_counter(), time.process_time()
        found = await peer.search(folder, text, args.limit)
        lat.append((time.perf_counter() - t0) * 1000)
        lat_cpu.append((time.process_time() - c0) * 1000)
        hits += bool(found)
    await peer.close()
    db = sum(p.stat().st_size for p in (args.work / "config").glob("memory.db*"))
    return {
        "basic_memory_version": basic_memory.__version__,
        "memories": len(files),
        "indexed": result.total_files,
        "failed_files": failed,
        "cold_index_s": round(cold, 3),
        "cold_memories_per_s": round(len(files) / cold),
        "cold_cpu_s": round(cold_cpu, 3),
        "cold_cpu_memories_per_s": round(len(files) / cold_cpu),
        "nochange_p50_ms": round(statistics.median(nochange), 2),
        "nochange_max_ms": round(max(nochange), 2),
        "nochange_cpu_p50_ms": round(statistics.median(nochange_cpu), 2),
        "nochange_reindexed_files": reindexed_on_nochange,
        "onechange_p50_ms": round(statistics.median(changed), 2),
        "onechange_max_ms": round(max(changed), 2),
        "onechange_cpu_p50_ms": round(statistics.median(changed_cpu), 2),
        "recall_p50_ms": round(statistics.median(lat), 2),
        "recall_p95_ms": round(pct(lat, 0.95), 2),
        "recall_cpu_p50_ms": round(statistics.median(lat_cpu), 2),
        "recall_cpu_p95_ms": round(pct(lat_cpu, 0.95), 2),
        "recall_with_results": f"{hits}/{len(lat)}",
        "peak_rss_mb": peak_rss_mb(),
        "index_mb": round(db / 1e6, 1),
        "model_files": model_files(args.work),
        **semantic_state(),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("search", help="index every sub-folder as a project, run the queries, write a run file")
    s.add_argument("--notes", type=Path, required=True)
    s.add_argument("--queries", type=Path, required=True, help="bench queries.jsonl (qid, store, query)")
    s.add_argument("--out", type=Path, required=True)
    s.add_argument("--work", type=Path, required=True, help="basic-memory's HOME/config/database go here")
    s.add_argument("--depth", type=int, default=20)
    v = sub.add_parser("speed", help="cold index, re-index, search latency, peak RSS of one folder")
    v.add_argument("--notes", type=Path, required=True)
    v.add_argument("--queries", type=Path, required=True, help="JSON list of query strings")
    v.add_argument("--work", type=Path, required=True)
    v.add_argument("--limit", type=int, default=10)
    v.add_argument("--nochange", type=int, default=10, help="no-change re-index passes")
    v.add_argument("--changed", type=int, default=10, help="one-file-changed re-index passes")
    args = p.parse_args(argv)
    args.work = args.work.resolve()
    import asyncio

    figures = asyncio.run(run_search(args) if args.command == "search" else run_speed(args))
    print(json.dumps(figures), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
