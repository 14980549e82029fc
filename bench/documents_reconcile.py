"""Reconcile cost of an indexed document source: first full index, nothing changed, one file changed.

One command, run from a checkout:

    python bench/documents_reconcile.py                 # 500 files, 20 repeats
    python bench/documents_reconcile.py --files 2000 --repeats 50 --keep

What it does:

1. generates a document source in a temporary folder: `--files` Markdown files of realistic sizes
   (log-normal, median ~3.5 KB, 0.2-80 KB), in nested folders, with `#`/`##`/`###` headings, paragraphs,
   lists, code fences and a few Korean and Spanish lines. Nothing is read from benchmark data;
2. binds a project to it (`<project>/.memory/config.toml` with one `[[documents.sources]]`) and builds
   the service exactly as the CLI does: `MemoryService.from_settings(load_settings(project_root=...))`,
   with an account store in the same temporary folder and no user config file;
3. times `service.recall(...)` — every tool call reconciles first — and reads the documents part of the
   reconcile from the answer (`index.documents.seconds`, counts in `index.documents`):
   - the first call (the full index: every file stat-ed, hashed, chunked, inserted);
   - `--repeats` calls with nothing changed (stat gate only), median;
   - `--repeats` calls each after one file was edited (a different file each time), median; its mtime is
     put 2 s in the past so the 50 ms racy-window re-hash never counts a file twice.

It prints the figures next to the upstream design's (0.31 s with nothing changed, 3.8 s with one file
changed, 530 files) and the ratio upstream / here. The figures depend on this machine and its load.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory_mcp.config import load_settings  # noqa: E402
from memory_mcp.tools.service import MemoryService  # noqa: E402

UPSTREAM = {"files": 530, "no_change": 0.31, "one_changed": 3.8}
QUERY = "deploy rollback checklist"

WORDS = (
    "service deploy release rollback cache queue worker schema migration index replica backup restore "
    "config secret token gateway proxy request response latency timeout retry budget alert dashboard "
    "metric trace log incident review owner team sprint ticket branch merge review test fixture build "
    "image container cluster node volume network policy access audit checklist runbook handbook note "
    "decision context consequence option tradeoff vendor contract invoice customer feature flag rollout "
    "the a of to and in for on with by from when after before every each our this that is are was be"
).split()
KOREAN = ["배포 전에 스테이징에서 확인한다.", "장애가 나면 먼저 채널에 공유한다.", "백업은 매일 새벽에 돈다."]
SPANISH = ["La configuración del despliegue se revisa cada lunes.", "El despliegue necesita dos aprobaciones."]
AREAS = ["platform", "product", "infra", "security", "data", "mobile", "web", "ops"]


@dataclass
class Timing:
    documents_s: float  # index.documents.seconds: the documents part of the reconcile
    wall_s: float  # the whole call: reconcile of every scope, query, ranking, answer
    hashed: int
    reindexed: int


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(6, 18))]
    return " ".join(words).capitalize() + "."


def _document(rng: random.Random, target: int, n: int) -> str:
    out = [f"# {_sentence(rng)[:-1].title()} {n}", ""]
    size = 0
    while size < target:
        r = rng.random()
        if r < 0.15:
            block = [f"{'#' * rng.choice((2, 2, 3))} {_sentence(rng)[:-1][:60]}", ""]
        elif r < 0.25:
            block = [f"- {_sentence(rng)}" for _ in range(rng.randint(2, 6))] + [""]
        elif r < 0.32:
            block = ["```bash", "# not a heading: a shell comment", *(_sentence(rng) for _ in range(3)), "```", ""]
        elif r < 0.36:
            block = [rng.choice(KOREAN), rng.choice(SPANISH), ""]
        else:
            block = [" ".join(_sentence(rng) for _ in range(rng.randint(2, 6))), ""]
        out += block
        size += sum(len(line) + 1 for line in block)
    return "\n".join(out) + "\n"


def build_source(root: Path, files: int, seed: int) -> list[Path]:
    rng = random.Random(seed)
    paths = []
    for n in range(files):
        target = int(min(80_000, max(200, rng.lognormvariate(math.log(3500), 0.9))))
        folder = root / rng.choice(AREAS) / rng.choice(("notes", "adr", "runbooks", "meetings"))
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"doc-{n:04d}.md"
        path.write_text(_document(rng, target, n), encoding="utf-8")
        paths.append(path)
    past = time.time_ns() - 3600 * 10**9  # out of the racy window from the start
    for p in paths:
        os.utime(p, ns=(past, past))
    return paths


def timed_call(service: MemoryService) -> Timing:
    started = time.perf_counter()
    answer = service.recall(QUERY, limit=5, touch=False)
    wall = time.perf_counter() - started
    docs = answer.index.documents
    assert docs is not None, "the documents source was not reconciled"
    return Timing(docs.seconds, wall, docs.hashed, docs.reindexed)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--seed", type=int, default=20260412)
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder and print its path")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="memory-mcp-docbench-"))
    try:
        project = tmp / "project"
        paths = build_source(project / "docs", args.files, args.seed)
        (project / ".memory").mkdir()
        (project / ".memory" / "config.toml").write_text(
            '[[documents.sources]]\nlabel = "docs"\npath = "docs"\n', encoding="utf-8"
        )
        settings = load_settings(project_root=project, env={}, user_config=tmp / "no-user-config.toml")
        service = MemoryService.from_settings(settings, store=tmp / "account")
        try:
            first = timed_call(service)
            assert first.hashed == args.files and first.reindexed == args.files, first

            quiet = [timed_call(service) for _ in range(args.repeats)]
            assert all(t.hashed == 0 for t in quiet), [t.hashed for t in quiet]

            changed: list[Timing] = []
            rng = random.Random(args.seed + 1)
            for i in range(args.repeats):
                path = paths[(i * 37) % len(paths)]
                with path.open("a", encoding="utf-8") as f:
                    f.write(f"\n## Addendum {i}\n\n{_sentence(rng)}\n")
                past = time.time_ns() - 2 * 10**9 + i
                os.utime(path, ns=(past, past))
                t = timed_call(service)
                assert (t.hashed, t.reindexed) == (1, 1), t
                changed.append(t)

            # the same no-change reconcile through memory_status (home scope only, no query): its wall time
            status_walls = []
            for _ in range(args.repeats):
                started = time.perf_counter()
                status = service.status()
                status_walls.append(time.perf_counter() - started)
            source = status.sources[0]
            chunks = service.session().conn.execute("SELECT count(*) FROM doc_chunks").fetchone()[0]
        finally:
            service.close()
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    def med(ts: list[Timing], field: str) -> float:
        return statistics.median(getattr(t, field) for t in ts)

    print(f"machine: {platform.platform()}, Python {platform.python_version()}, {os.cpu_count()} CPUs")
    print(
        f"source: {source.files} files, {source.bytes / 1e6:.2f} MB, {chunks} chunks "
        f"(sizes log-normal, median ~3.5 KB); query {QUERY!r}; repeats {args.repeats}"
    )
    print()
    rows = [
        ("first full index", first.documents_s, first.wall_s, None),
        (f"nothing changed (median of {args.repeats})", med(quiet, "documents_s"), med(quiet, "wall_s"), "no_change"),
        (
            f"one file changed (median of {args.repeats})",
            med(changed, "documents_s"),
            med(changed, "wall_s"),
            "one_changed",
        ),
    ]
    head = (
        f"{'reconcile':<34} {'documents s':>12} {'call wall s':>12} {'upstream s':>11} "
        f"{'upstream/documents':>19} {'upstream/wall':>14}"
    )
    print(head)
    print("-" * len(head))
    for name, docs_s, wall_s, key in rows:
        up = UPSTREAM[key] if key else None
        r_docs = f"{up / docs_s:,.1f}x" if up and docs_s > 0 else "-"
        r_wall = f"{up / wall_s:,.1f}x" if up and wall_s > 0 else "-"
        print(f"{name:<34} {docs_s:>12.4f} {wall_s:>12.4f} {up if up else '-':>11} {r_docs:>19} {r_wall:>14}")
    print(
        f"memory_status with nothing changed (reconcile + counts, no query): median wall "
        f"{statistics.median(status_walls):.4f} s"
    )
    print()
    print(
        f"upstream: {UPSTREAM['files']} files; 'documents s' is index.documents.seconds (the document part of the "
        "reconcile), 'call wall s' the whole memory_recall call (both scopes reconciled, query, ranking)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
