"""Speed of memory-mcp on synthetic stores: cold index, reconcile, recall latency, peak memory.

    python bench/speed.py                      # 1k and 10k memories
    python bench/speed.py --sizes 1000,10000,50000

For each size a store of synthetic memories is generated (mixed English, Korean and Spanish text built
from the word lists below, with realistic sizes: a short title, a body of one to six sentences, a few
long ones, 0-3 entities), then a fresh process measures, through `MemoryService`:

- cold index: the first tool call on a store without an index (parse + index every file), memories/s;
- no-change reconcile: the reconcile-first step every tool call runs when nothing changed (p50, max), with
  the change watch and without it; and a one-shot call's whole index work: open the index (schema and
  integrity checks) and run that step, watch off (interpreter start and imports not counted);
- one-file-changed reconcile: the same after one memory file was edited by hand (p50, max);
- recall p50/p95: `recall(query, limit=10)` with its default `touch=True` (a recall also writes heat),
  over generated queries of one to four words;
- peak RSS of the measuring process (ru_maxrss), and the index size on disk.

Every timing is given as wall time and as CPU time of the measuring process (`time.process_time`):
on a busy machine the wall figures grow with the load, the CPU figures much less.

With `--basic-memory-python PY` (a side venv with the PyPI package basic-memory, Python >= 3.12),
the same memories are also written as basic-memory notes (frontmatter title, type, tags = entities;
body) and measured in the same run by `bench/peer_basic_memory.py` in its own process: cold index
(its project index pass, semantic search off), no-change and one-file-changed passes of the same
index pass, text search p50/p95 over the same queries (limit 10), peak RSS, database size; printed
with the ratios basic-memory / memory-mcp.

With `--baseline REV` (a git revision of this repository) the same stores are also measured with the
code of REV, in the same run: REV is unpacked with `git archive` into the work folder and put first on
the measuring process's import path. Each size then runs `--rounds` interleaved A/B rounds (the order
alternates: baseline first, then candidate first), each on a fresh copy of the same generated store, and
the table gives per figure the median over rounds for the baseline and the candidate and their ratio
(candidate / baseline: below 1 is faster), wall and CPU.

Each size runs in its own process so the peak RSS belongs to that size alone. Nothing here reads the
retrieval benchmark data; the text is generated from the word lists in this file.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memory_mcp.store.session import StoreSession

EN = """account address agent alert answer api apple archive backup bank battery billing birthday book branch
bridge budget bug build cache calendar camera car card cat chart city client cloud coffee config contract cost
customer dashboard database date deadline deploy design dinner doctor document dog domain draft email error
event family file flight folder friend garden github guitar health holiday hotel invoice issue job key kitchen
laptop latency league library license log login market meeting memory menu message migration mobile model
money monitor mother music network note office order owner package page password payment phone photo plan
policy price printer project queue quota recipe release report repository request review road room router
salary schedule school screen script search secret server service session shop sister ski song spreadsheet
sprint staging storage student subscription summary support table team test ticket timezone token train
travel trip update upgrade user vacation vendor version video wallet weather website window work year""".split()
EN_VERBS = """prefers uses wants moved booked fixed deployed asked changed cancelled renewed approved rejected likes
needs bought sold planned visited called scheduled migrated rotated upgraded reviewed paid lost found""".split()
ES = """agenda almuerzo amigo año archivo banco biblioteca billete calle cambio casa cena cliente coche
comida contraseña correo cuenta cumpleaños dato deuda día dinero documento empresa equipo escuela factura
familia fecha foto gasto guitarra hermana hotel idioma informe jefe libro llave lunes madre mañana médico
mensaje mercado mesa música noche nota oficina padre pago país pedido película perro playa precio problema
proyecto prueba pueblo recibo regalo reunión ropa salud semana servidor tarea tarjeta teléfono tienda trabajo
tren vacaciones venta viaje vuelo""".split()
ES_VERBS = """prefiere usa quiere cambió reservó pagó canceló compró vendió visitó llamó revisó aprobó necesita
olvidó encontró""".split()
KO = """회의 일정 서버 배포 비밀번호 계정 결제 예산 보고서 프로젝트 고객 주문 배송 사무실 출장 항공권 호텔 예약
가족 어머니 동생 친구 생일 선물 식당 메뉴 커피 점심 저녁 운동 병원 약속 학교 숙제 시험 도서관 책 영화 음악
기타 여행 휴가 바다 날씨 주말 월요일 금요일 은행 카드 통장 월급 세금 영수증 계약 문서 파일 폴더 백업 데이터
모델 검색 색인 오류 버그 테스트 릴리스 버전 업데이트 네트워크 라우터 노트북 전화 메시지 이메일 주소 도시 지하철
버스 자동차 주차 정원 고양이 강아지 요리 레시피 김치 라면 사진 카메라 정책 규칙 보안 인증 토큰 로그""".split()
KO_PARTICLES = ["은", "는", "이", "가", "을", "를", "에", "에서", "으로", "와", "의", "도", ""]
KO_ENDINGS = """했다 한다 좋아한다 바꿨다 예약했다 취소했다 샀다 보냈다 확인했다 옮겼다 끝냈다 필요하다""".split()
ENTITIES = """billing-service atlas-project home-router family-calendar tax-2024 staging-db mobile-app alice bob
carol dave 김민수 이지은 garcía lópez kitchen-renovation ski-trip""".split()
TYPES = ["fact", "preference", "decision", "episode", "reference", "knowledge"]


def sentence(rng: random.Random, lang: str) -> str:
    if lang == "ko":
        words = [rng.choice(KO) + rng.choice(KO_PARTICLES) for _ in range(rng.randint(4, 10))]
        return " ".join(words) + " " + rng.choice(KO_ENDINGS) + "."
    nouns, verbs = (EN, EN_VERBS) if lang == "en" else (ES, ES_VERBS)
    words = [rng.choice(nouns) for _ in range(rng.randint(6, 16))]
    words.insert(rng.randint(1, 3), rng.choice(verbs))
    return (" ".join(words)).capitalize() + "."


def memory_text(rng: random.Random, lang: str) -> tuple[str, str]:
    title_words = KO if lang == "ko" else (EN if lang == "en" else ES)
    title = " ".join(rng.choice(title_words) for _ in range(rng.randint(3, 7)))
    n = rng.choice([1, 1, 2, 2, 3, 4, 6]) if rng.random() > 0.05 else rng.randint(15, 30)  # 5% long notes
    return title.capitalize(), " ".join(sentence(rng, lang) for _ in range(n))


def records(n: int, seed: int = 42):
    """The synthetic memories: (i, type, entities, day, title, body), the same for a given seed."""
    rng = random.Random(seed)
    for i in range(n):
        lang = rng.choices(["en", "ko", "es"], weights=[2, 1, 1])[0]
        title, body = memory_text(rng, lang)
        ents = rng.sample(ENTITIES, rng.choice([0, 0, 1, 1, 2, 3]))
        day = f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:00:00Z"
        yield i, rng.choice(TYPES), ents, day, title, body


def generate(root: Path, n: int, seed: int = 42) -> None:
    """Write n canon files with a plain template (the frontmatter the server itself writes)."""
    mem_dir = root / "memories"
    mem_dir.mkdir(parents=True, exist_ok=True)
    for i, kind, ents, day, title, body in records(n, seed):
        text = (
            f"---\nid: S{i:07d}\ntype: {kind}\nstate: active\ntrust: user-stated\n"
            f"entities: [{', '.join(ents)}]\ncreated: '{day}'\nupdated: '{day}'\n---\n\n# {title}\n\n{body}\n"
        )
        (mem_dir / f"m-{i:07d}.md").write_text(text, encoding="utf-8")


def generate_basic_memory(folder: Path, n: int, seed: int = 42) -> None:
    """The same memories as basic-memory notes: frontmatter title, type, tags (= entities); body."""
    from peer_basic_memory import write_note

    folder.mkdir(parents=True, exist_ok=True)
    for i, kind, ents, _day, title, body in records(n, seed):
        write_note(folder, i, f"S{i:07d}", title, body, note_type=kind, tags=ents)


def queries(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        lang = rng.choices(["en", "ko", "es"], weights=[2, 1, 1])[0]
        words = KO if lang == "ko" else (EN if lang == "en" else ES)
        picked = [rng.choice(words) for _ in range(rng.randint(1, 4))]
        if lang == "ko":
            picked = [w + rng.choice(KO_PARTICLES) for w in picked]
        out.append(" ".join(picked))
    return out


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


def time_unchanged_calls(session: StoreSession, n: int) -> tuple[list[float], list[float]]:
    """Wall and CPU milliseconds of `n` reconcile-first steps with nothing changed."""
    wall, cpu = [], []
    for _ in range(n):
        t0, c0 = time.perf_counter(), time.process_time()
        with session.transaction():
            pass
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return wall, cpu


# what the `memory-mcp` console script runs (the same code path, whichever build is first on the import path)
CLI = "import sys; from memory_mcp.edges.cli import main; sys.exit(main())"
STAT_FLOOR = "import os, sys; [e.stat() for e in os.scandir(sys.argv[1])]"


def child(argv: list[str], cwd: Path) -> tuple[float, float, float]:
    """Wall milliseconds, CPU milliseconds (user + system) and peak RSS (MB) of one new process (its own
    rusage, from wait4: on a busy machine the CPU figure is the one that compares). The peak RSS is at least this
    process's own when it started the child: Linux keeps, across the child's exec, the high-water mark of the memory
    it was forked with. With `--store` this process stays small (~20 MB); in a full run it holds a whole service
    (~56 MB at 10k), which the one-shot RSS figures then cannot go below."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = (time.perf_counter() - t0) * 1000
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    proc.stderr and proc.stderr.close()
    if proc.returncode != 0:
        raise SystemExit(f"{argv[2:]} failed (exit {proc.returncode}): {err.strip()[-400:]}")
    return wall, (usage.ru_utime + usage.ru_stime) * 1000, usage.ru_maxrss / 1024


def compiled() -> None:
    """The measured package's bytecode written, as `pip install` writes it: with PYTHONDONTWRITEBYTECODE set (some
    CI and sandboxes set it) every new process would compile each module it imports again, ~140 ms of a one-shot
    call that no installed copy pays. compileall writes it whatever that variable says."""
    import compileall

    import memory_mcp

    compileall.compile_dir(Path(memory_mcp.__file__).parent, quiet=1)


def one_shot(root: Path, calls: int) -> dict:
    """Each command as a hook or a script runs it: a new process per call, index built, nothing changed;
    beside the floors measured in the same run: `python -c pass` and a new process that stats every file of
    memories/ (what the reconcile-first step cannot do without). The kinds are interleaved call by call, so
    the load changes them alike. Medians of `calls` calls; peak RSS is the largest of the calls."""
    py = sys.executable
    compiled()
    cli = [py, "-c", CLI, "--store", str(root)]
    kinds = {
        "pass": [py, "-c", "pass"],
        "stat": [py, "-c", STAT_FLOOR, str(root / "memories")],
        "recall": None,  # a different query each call
        "status": [*cli, "status"],
        "context": [*cli, "context"],
    }
    wall: dict[str, list[float]] = {k: [] for k in kinds}
    cpu: dict[str, list[float]] = {k: [] for k in kinds}
    rss: dict[str, list[float]] = {k: [] for k in kinds}
    words = queries(calls, seed=11)
    child([*cli, "status"], root)  # the first open after the in-process measures: not counted
    for i in range(calls):
        for kind, argv in kinds.items():
            ms, cpu_ms, mb = child(argv or [*cli, "recall", words[i]], root)
            wall[kind].append(ms)
            cpu[kind].append(cpu_ms)
            rss[kind].append(mb)
    out = {f"oneshot_{k}_ms": round(statistics.median(v), 1) for k, v in wall.items()}
    out["oneshot_load"] = round(os.getloadavg()[0], 2)  # the 1-minute load average as the calls ended
    out.update({f"oneshot_{k}_cpu_ms": round(statistics.median(v), 1) for k, v in cpu.items()})
    out.update({f"oneshot_{k}_rss_mb": round(max(v), 1) for k, v in rss.items() if k not in ("pass", "stat")})
    return out


def cold_reindex(root: Path) -> dict:
    """`memory-mcp reindex` in a new process on a copy of the store without its index: memories per second."""
    copy = root.parent / f"{root.name}-reindex"
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".index"))
    n = sum(1 for _ in (copy / "memories").glob("*.md"))
    t0, c0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    child([sys.executable, "-c", CLI, "--store", str(copy), "reindex"], copy)
    seconds = time.perf_counter() - t0
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime)
    shutil.rmtree(copy)
    return {
        "reindex_s": round(seconds, 2),
        "reindex_memories_per_s": round(n / seconds),
        "reindex_cpu_memories_per_s": round(n / cpu),
    }


def index_sizes(root: Path) -> dict:
    """The index file after a checkpoint (its write-ahead log folded in, then emptied) and the canon it holds."""
    db = root / ".index" / "index.sqlite3"
    import sqlite3

    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    canon = sum(p.stat().st_size for p in (root / "memories").glob("*.md"))
    return {
        "index_mb": round(db.stat().st_size / 1e6, 1),
        "canon_mb": round(canon / 1e6, 2),
        "index_per_canon": round(db.stat().st_size / canon, 2),
    }


def oneshot_store(root: Path, calls: int) -> dict:
    """The one-shot figures alone on an existing store (say example_store): its index built first."""
    child([sys.executable, "-c", CLI, "--store", str(root), "status"], root)
    import memory_mcp

    row = {
        "code": str(Path(memory_mcp.__file__).resolve().parent.parent),
        # counted, not listed: a list of 100k paths (~60 MB) would become every child's peak RSS (below)
        "memories": sum(1 for _ in (root / "memories").glob("*.md")),
    }
    return {**row, **one_shot(root, calls), **index_sizes(root)}


def measure(root: Path, n_queries: int, oneshot_calls: int = 10) -> dict:
    from memory_mcp.tools.service import MemoryService

    service = MemoryService(root)
    session = service.session()
    t0, c0 = time.perf_counter(), time.process_time()
    with session.transaction() as report:
        pass
    cold, cold_cpu = time.perf_counter() - t0, time.process_time() - c0
    indexed = report.reindexed
    nochange, nochange_cpu = time_unchanged_calls(session, 30)
    # the same no-change call with the change watch off: the full stat scan a one-shot CLI call, a server on
    # a network filesystem or one outside Linux makes (a second service; its writes end the first one's skip)
    scanning = MemoryService(root, change_watch=False)
    scan_session = scanning.session()
    with scan_session.transaction():
        pass
    scan, scan_cpu = time_unchanged_calls(scan_session, 15)
    scanning.close()
    # a one-shot call's whole index work (interpreter start and imports aside): open the index (schema and
    # integrity checks), then the same unchanged pass, watch off
    oneshot, oneshot_cpu = [], []
    for _ in range(5):
        t0, c0 = time.perf_counter(), time.process_time()
        fresh = MemoryService(root, change_watch=False)
        with fresh.session().transaction():
            pass
        fresh.close()
        oneshot.append((time.perf_counter() - t0) * 1000)
        oneshot_cpu.append((time.process_time() - c0) * 1000)
    files = sorted((root / "memories").glob("*.md"))
    rng = random.Random(3)
    changed, changed_cpu = [], []
    for i in range(15):
        path = rng.choice(files)
        path.write_text(path.read_text(encoding="utf-8") + f"\nEdited by hand, pass {i}.\n", encoding="utf-8")
        t0, c0 = time.perf_counter(), time.process_time()
        with session.transaction() as report:
            pass
        changed.append((time.perf_counter() - t0) * 1000)
        changed_cpu.append((time.process_time() - c0) * 1000)
        if report.reindexed < 1:
            raise SystemExit("the edited file was not re-indexed")
        time.sleep(0.06)  # past the racy window, so the next pass trusts the stat again
    with session.transaction():
        pass  # settle the last edit
    lat, lat_cpu = [], []
    hits = 0
    for q in queries(n_queries):
        t0, c0 = time.perf_counter(), time.process_time()
        answer = service.recall(q, limit=10)
        lat.append((time.perf_counter() - t0) * 1000)
        lat_cpu.append((time.process_time() - c0) * 1000)
        hits += bool(answer.results)
    service.close()
    import memory_mcp

    extra = {**one_shot(root, oneshot_calls), **cold_reindex(root), **index_sizes(root)} if oneshot_calls else {}

    return {
        "code": str(Path(memory_mcp.__file__).resolve().parent.parent),
        "memories": len(files),
        "indexed": indexed,
        "cold_index_s": round(cold, 3),
        "cold_memories_per_s": round(len(files) / cold),
        "cold_cpu_s": round(cold_cpu, 3),
        "cold_cpu_memories_per_s": round(len(files) / cold_cpu),
        "nochange_p50_ms": round(statistics.median(nochange), 2),
        "nochange_max_ms": round(max(nochange), 2),
        "nochange_cpu_p50_ms": round(statistics.median(nochange_cpu), 2),
        "nochange_scan_p50_ms": round(statistics.median(scan), 2),
        "nochange_scan_cpu_p50_ms": round(statistics.median(scan_cpu), 2),
        "oneshot_open_p50_ms": round(statistics.median(oneshot), 2),
        "oneshot_open_cpu_p50_ms": round(statistics.median(oneshot_cpu), 2),
        "onechange_p50_ms": round(statistics.median(changed), 2),
        "onechange_max_ms": round(max(changed), 2),
        "onechange_cpu_p50_ms": round(statistics.median(changed_cpu), 2),
        "recall_p50_ms": round(statistics.median(lat), 2),
        "recall_p95_ms": round(pct(lat, 0.95), 2),
        "recall_cpu_p50_ms": round(statistics.median(lat_cpu), 2),
        "recall_cpu_p95_ms": round(pct(lat_cpu, 0.95), 2),
        "recall_with_results": f"{hits}/{len(lat)}",
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        **extra,
    }


TARGETS = {
    "cold_memories_per_s": (">=", 2000),
    "nochange_p50_ms": ("<=", 50),  # target stated at 10k files
    "nochange_cpu_p50_ms": ("<=", 50),
    "nochange_scan_p50_ms": ("<=", 50),  # the same without the change watch
    "nochange_scan_cpu_p50_ms": ("<=", 50),
    "recall_p95_ms": ("<=", 20),  # target stated at 10k memories
    "recall_cpu_p95_ms": ("<=", 20),
    "cold_cpu_memories_per_s": (">=", 2000),
}


# issue 43's targets for one-shot calls, the cold reindex and the index size: (label, figure, goal, met), the
# goal computed from the same row (floors measured in the same run); None where the row lacks a figure
def oneshot_targets(r: dict) -> list[tuple[str, float, float, bool]]:
    if "oneshot_recall_ms" not in r:
        return []
    recall, context = r["oneshot_recall_ms"], r["oneshot_context_ms"]
    out = [
        ("one-shot recall <= 5 x python -c pass (stated for example_store)", recall, 5 * r["oneshot_pass_ms"]),
        ("one-shot recall <= 150 ms (stated at 10k)", recall, 150.0),
        ("one-shot recall <= 1.3 x stat floor + 100 ms (stated at 100k)", recall, 1.3 * r["oneshot_stat_ms"] + 100),
        ("one-shot context <= one-shot recall + 50 ms (every size)", context, recall + 50),
        ("one-shot context peak RSS <= 80 MB (stated at 100k)", r["oneshot_context_rss_mb"], 80.0),
        ("index <= 4 x canon (checkpointed file; at 10k and 100k)", r["index_per_canon"], 4.0),
    ]
    if "oneshot_recall_cpu_ms" in r:  # the same ratios in CPU time (what a busy machine does not distort)
        recall_cpu = r["oneshot_recall_cpu_ms"]
        out += [
            ("(CPU) one-shot recall <= 5 x python -c pass", recall_cpu, 5 * r["oneshot_pass_cpu_ms"]),
            ("(CPU) one-shot recall <= 1.3 x stat floor + 100 ms", recall_cpu, 1.3 * r["oneshot_stat_cpu_ms"] + 100),
            ("(CPU) one-shot context <= one-shot recall + 50 ms", r["oneshot_context_cpu_ms"], recall_cpu + 50),
        ]
    rows = [(label, figure, round(goal, 1), figure <= goal) for label, figure, goal in out]
    if "reindex_memories_per_s" in r:
        per_s = r["reindex_memories_per_s"]
        rows.append(("cold reindex >= 2,000 memories/s, new process (stated at 10k)", per_s, 2000, per_s >= 2000))
    return rows


def print_targets(r: dict, title: str) -> None:
    rows = oneshot_targets(r)
    if not rows:
        return
    print(f"\n{title}: one-shot figures against their targets (figure / goal: below 1 is inside, except mem/s)")
    print("| target | figure | goal | figure / goal | |")
    print("|---|---|---|---|---|")
    for label, figure, goal, ok in rows:
        print(f"| {label} | {figure:g} | {goal:g} | {figure / goal:.2f} | {'met' if ok else 'MISSED'} |")


ONESHOT_COLUMNS = [
    ("memories", "memories"),
    ("oneshot_pass_ms", "python -c pass ms"),
    ("oneshot_pass_cpu_ms", "(CPU)"),
    ("oneshot_stat_ms", "stat floor ms"),
    ("oneshot_stat_cpu_ms", "(CPU)"),
    ("oneshot_recall_ms", "one-shot recall ms"),
    ("oneshot_recall_cpu_ms", "(CPU)"),
    ("oneshot_status_ms", "status ms"),
    ("oneshot_status_cpu_ms", "(CPU)"),
    ("oneshot_context_ms", "context ms"),
    ("oneshot_context_cpu_ms", "(CPU)"),
    ("oneshot_recall_rss_mb", "recall RSS MB"),
    ("oneshot_context_rss_mb", "context RSS MB"),
    ("canon_mb", "canon MB"),
    ("index_mb", "index MB (checkpointed)"),
    ("index_per_canon", "index / canon"),
]


def print_oneshot(rows: list[dict]) -> None:
    rows = [r for r in rows if "oneshot_recall_ms" in r]
    if not rows:
        return
    print("\none-shot calls (a new process per call, medians; floors measured in the same run):")
    print("| " + " | ".join(c[1] for c in ONESHOT_COLUMNS) + " |")
    print("|" + "---|" * len(ONESHOT_COLUMNS))
    for r in rows:
        print("| " + " | ".join(f"{r[k]:,}" if isinstance(r[k], int) else str(r[k]) for k, _ in ONESHOT_COLUMNS) + " |")
    for r in rows:
        print(f"{r['memories']:,} memories: load average (1 min) at the end of the calls: {r.get('oneshot_load', '?')}")
        print_targets(r, f"{r['memories']:,} memories")


def print_table(rows: list[dict]) -> None:
    cols = [
        ("memories", "memories"),
        ("cold_index_s", "cold s"),
        ("cold_memories_per_s", "cold mem/s"),
        ("cold_cpu_memories_per_s", "(CPU)"),
        ("nochange_p50_ms", "no-change p50 ms"),
        ("nochange_max_ms", "max"),
        ("nochange_cpu_p50_ms", "(CPU p50)"),
        ("nochange_scan_p50_ms", "no-change, watch off p50 ms"),
        ("nochange_scan_cpu_p50_ms", "(CPU p50)"),
        ("onechange_p50_ms", "1-changed p50 ms"),
        ("onechange_max_ms", "max"),
        ("onechange_cpu_p50_ms", "(CPU p50)"),
        ("recall_p50_ms", "recall p50 ms"),
        ("recall_p95_ms", "p95"),
        ("recall_cpu_p50_ms", "(CPU p50)"),
        ("recall_cpu_p95_ms", "(CPU p95)"),
        ("peak_rss_mb", "peak RSS MB"),
        ("index_mb", "index MB"),
        ("reindex_memories_per_s", "reindex (new process) mem/s"),
    ]
    print("\n| " + " | ".join(c[1] for c in cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print(
            "| "
            + " | ".join(f"{r.get(k, '-'):,}" if isinstance(r.get(k), int) else str(r.get(k, "-")) for k, _ in cols)
            + " |"
        )
    print_oneshot(rows)
    ten = next((r for r in rows if r["memories"] == 10_000), None)
    if ten:
        print("\ntargets at 10k memories:")
        for key, (op, goal) in TARGETS.items():
            ok = ten[key] >= goal if op == ">=" else ten[key] <= goal
            print(f"  {key} {ten[key]} {op} {goal}: {'met' if ok else 'MISSED'}")
    if len(rows) > 1:
        a, b = rows[0], rows[-1]
        scale = b["memories"] / a["memories"]
        print(f"\ngrowth {a['memories']:,} -> {b['memories']:,} memories (x{scale:g}):")
        keys = ("cold_index_s", "nochange_p50_ms", "nochange_scan_p50_ms", "onechange_p50_ms", "recall_p50_ms")
        for key in (*keys, "recall_p95_ms"):
            print(f"  {key}: x{b[key] / a[key]:.1f}" if a[key] else f"  {key}: -")


RATIOS = [
    ("cold_index_s", "cold index"),
    ("cold_cpu_s", "(CPU)"),
    ("nochange_p50_ms", "no-change p50"),
    ("nochange_cpu_p50_ms", "(CPU)"),
    ("nochange_scan_p50_ms", "no-change vs our watch-off scan"),
    ("nochange_scan_cpu_p50_ms", "(CPU)"),
    ("onechange_p50_ms", "1-changed p50"),
    ("onechange_cpu_p50_ms", "(CPU)"),
    ("recall_p50_ms", "search p50"),
    ("recall_p95_ms", "p95"),
    ("recall_cpu_p50_ms", "(CPU p50)"),
    ("recall_cpu_p95_ms", "(CPU p95)"),
    ("peak_rss_mb", "peak RSS"),
    ("index_mb", "index size"),
]


# basic-memory's no-change figure is one full check of every file: compared with both of our no-change calls
PEER_KEY = {"nochange_scan_p50_ms": "nochange_p50_ms", "nochange_scan_cpu_p50_ms": "nochange_cpu_p50_ms"}


def print_peer(rows: list[dict], peers: dict[int, dict]) -> None:
    """basic-memory's own figures, then basic-memory / memory-mcp for the operations that correspond."""
    done = [(r, peers[r["memories"]]) for r in rows if r["memories"] in peers]
    if not done:
        return
    version = done[0][1].get("basic_memory_version", "?")
    print(f"\nbasic-memory {version}, same stores as notes, measured in this run (project index pass, text search):")
    cols = [("memories", "memories")] + [(k, label) for k, label in RATIOS]
    print("| " + " | ".join(c[1] for c in cols) + " |")
    print("|" + "---|" * len(cols))
    for _, peer in done:
        values = [peer[PEER_KEY.get(k, k)] for k, _ in cols]
        print("| " + " | ".join(f"{v:,}" if isinstance(v, int) else str(v) for v in values) + " |")
    print("\nratio basic-memory / memory-mcp (above 1 = basic-memory slower or bigger):")
    print("| " + " | ".join(c[1] for c in cols) + " |")
    print("|" + "---|" * len(cols))
    for mine, peer in done:
        cells = [f"{mine['memories']:,}"]
        for key, _ in RATIOS:
            a, b = mine.get(key), peer.get(PEER_KEY.get(key, key))
            cells.append(f"x{b / a:,.1f}" if a and b is not None else "-")
        print("| " + " | ".join(cells) + " |")


def run_peer(python: str, work: Path, n: int, n_queries: int, passes: int) -> dict | None:
    """The same store as basic-memory notes, measured by bench/peer_basic_memory.py in `python`."""
    folder = work / f"basic-memory-{n}"
    if folder.exists():
        shutil.rmtree(folder)
    me = [sys.executable, os.path.abspath(__file__), "--worker", str(folder / "notes")]
    subprocess.run([*me, "--generate-basic-memory", str(n)], check=True)
    qfile = folder / "queries.json"
    qfile.write_text(json.dumps(queries(n_queries), ensure_ascii=False), encoding="utf-8")
    driver = Path(__file__).with_name("peer_basic_memory.py")
    cmd = [python, str(driver), "speed", "--notes", str(folder / "notes"), "--queries", str(qfile)]
    cmd += ["--work", str(folder / "work"), "--nochange", str(passes), "--changed", str(passes)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, LOGFIRE_IGNORE_NO_CONFIG="1"))
    if proc.returncode != 0:
        tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
        print(f"basic-memory: not measured at {n:,} (driver failed, exit {proc.returncode}): {tail}", flush=True)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


# the figures compared with --baseline: (key, label), wall beside CPU
AB_FIGURES = [
    ("cold_index_s", "cold index s"),
    ("cold_cpu_s", "(CPU)"),
    ("nochange_p50_ms", "no-change p50 ms, watch on"),
    ("nochange_cpu_p50_ms", "(CPU)"),
    ("nochange_scan_p50_ms", "no-change p50 ms, watch off"),
    ("nochange_scan_cpu_p50_ms", "(CPU)"),
    ("oneshot_open_p50_ms", "open + no-change p50 ms, watch off"),
    ("oneshot_open_cpu_p50_ms", "(CPU)"),
    ("onechange_p50_ms", "1-changed p50 ms"),
    ("onechange_cpu_p50_ms", "(CPU)"),
    ("recall_p50_ms", "recall p50 ms"),
    ("recall_p95_ms", "recall p95 ms"),
    ("recall_cpu_p50_ms", "(CPU p50)"),
    ("recall_cpu_p95_ms", "(CPU p95)"),
    ("peak_rss_mb", "peak RSS MB"),
    ("oneshot_pass_ms", "python -c pass ms (floor)"),
    ("oneshot_pass_cpu_ms", "(CPU)"),
    ("oneshot_stat_ms", "stat every file, new process ms (floor)"),
    ("oneshot_stat_cpu_ms", "(CPU)"),
    ("oneshot_recall_ms", "one-shot recall ms"),
    ("oneshot_recall_cpu_ms", "(CPU)"),
    ("oneshot_status_ms", "one-shot status ms"),
    ("oneshot_status_cpu_ms", "(CPU)"),
    ("oneshot_context_ms", "one-shot context ms"),
    ("oneshot_context_cpu_ms", "(CPU)"),
    ("oneshot_recall_rss_mb", "one-shot recall peak RSS MB"),
    ("oneshot_context_rss_mb", "one-shot context peak RSS MB"),
    ("reindex_memories_per_s", "cold reindex, new process, mem/s"),
    ("reindex_cpu_memories_per_s", "(CPU)"),
    ("canon_mb", "canon MB"),
    ("index_mb", "index MB (checkpointed)"),
    ("index_per_canon", "index / canon"),
]


def unpack_revision(rev: str, into: Path) -> Path:
    """The tree of `rev` (a revision of the repository holding this script), unpacked with git archive."""
    repo = Path(__file__).resolve().parent.parent
    sha = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--verify", f"{rev}^{{commit}}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    tree = into / f"baseline-{sha[:10]}"
    if not (tree / "memory_mcp").is_dir():
        tree.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "-C", str(repo), "archive", sha, "memory_mcp"], check=True, capture_output=True
        )
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return tree


# what a copy of a store leaves out: its index, unless --keep-index (a 100k store's is built once, not per run)
LEFT_OUT = [".index"]


def measure_with(code: Path, src: Path, run: Path, worker_args: list[str]) -> dict:
    """One measuring process on a fresh copy of `src` (its index left out), importing memory_mcp from `code`."""
    if run.exists():
        shutil.rmtree(run)
    shutil.copytree(src, run, symlinks=True, ignore=shutil.ignore_patterns(*LEFT_OUT))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(code), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    me = [sys.executable, os.path.abspath(__file__), "--worker", str(run), *worker_args]
    out = subprocess.run(me, check=True, capture_output=True, text=True, env=env)
    shutil.rmtree(run)
    row = json.loads(out.stdout.strip().splitlines()[-1])
    if Path(row["code"]) != code.resolve():
        raise SystemExit(f"measured {row['code']}, not {code}: the import path did not take")
    return row


def run_ab(
    sizes: list[int], work: Path, rev: str, rounds: int, worker_args: list[str], store: Path | None = None
) -> list[dict]:
    """Baseline `rev` against this checkout on the same stores, `rounds` interleaved rounds per size (or on a
    copy of `store`, one-shot figures only)."""
    base_code = unpack_revision(rev, work)
    mine = Path(__file__).resolve().parent.parent
    out = []
    for n in [0] if store else sizes:
        src = work / f"store-{n}"
        if src.exists():
            shutil.rmtree(src)
        if store:
            shutil.copytree(store, src, ignore=shutil.ignore_patterns(*LEFT_OUT))
        else:
            subprocess.run(
                [sys.executable, os.path.abspath(__file__), "--worker", str(src), "--generate", str(n)], check=True
            )
        rows: dict[str, list[dict]] = {"baseline": [], "candidate": []}
        for r in range(rounds):
            order = [("baseline", base_code), ("candidate", mine)]
            for name, code in order if r % 2 == 0 else order[::-1]:
                load = os.getloadavg()[0]
                row = measure_with(code, src, work / f"run-{n}", worker_args)
                row["load_before"] = round(load, 2)
                rows[name].append(row)
                print(json.dumps({"size": n, "round": r + 1, "variant": name, **row}), flush=True)
        shutil.rmtree(src)
        out.append({"memories": rows["candidate"][0]["memories"], "rev": rev, **rows})
    return out


def print_ab(results: list[dict]) -> None:
    for res in results:
        base, cand = res["baseline"], res["candidate"]
        loads = [r["load_before"] for r in base + cand]
        print(
            f"\n{res['memories']:,} memories: baseline {res['rev']} vs this checkout, median of {len(base)} "
            f"interleaved rounds (load average 1 min before each run: {min(loads)}-{max(loads)})"
        )
        print("| figure | baseline | candidate | candidate / baseline |")
        print("|---|---|---|---|")
        medians = {}
        for key, label in AB_FIGURES:
            if key not in base[0] or key not in cand[0]:
                continue
            a = statistics.median(r[key] for r in base)
            b = statistics.median(r[key] for r in cand)
            medians[key] = (a, b)
            print(f"| {label} | {a:g} | {b:g} | {'x%.2f' % (b / a) if a else '-'} |")
        for i, name in enumerate(("baseline", "candidate")):
            print_targets({"memories": res["memories"], **{k: v[i] for k, v in medians.items()}}, name)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1000,10000", help="comma-separated store sizes (50000 takes minutes)")
    p.add_argument("--queries", type=int, default=300, help="recall queries per size")
    p.add_argument("--work", type=Path, help="work folder (default: a temp folder, removed afterwards)")
    p.add_argument("--json", type=Path, help="write the figures as JSON here")
    p.add_argument(
        "--basic-memory-python",
        help="interpreter of a side venv with basic-memory (Python >= 3.12): also measure it on the same stores",
    )
    p.add_argument("--basic-memory-passes", type=int, default=10, help="no-change and one-changed passes for it")
    p.add_argument(
        "--baseline", metavar="REV", help="also measure git revision REV on the same stores, A/B interleaved"
    )
    p.add_argument("--rounds", type=int, default=2, help="A/B rounds per size with --baseline")
    p.add_argument(
        "--oneshot", type=int, default=10, help="calls of each one-shot command per size (a new process each; 0: none)"
    )
    p.add_argument(
        "--store",
        type=Path,
        help="measure only the one-shot figures, on a copy of this store (say example_store); with --baseline too",
    )
    p.add_argument(
        "--keep-index",
        action="store_true",
        help="with --store: copy the store's index too (built once, say at 100k, instead of once per run); both "
        "builds must read its schema",
    )
    p.add_argument("--oneshot-only", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--generate", type=int, help=argparse.SUPPRESS)
    p.add_argument("--generate-basic-memory", type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.keep_index:
        LEFT_OUT.clear()
    if args.generate is not None:
        generate(args.worker, args.generate)
        return 0
    if args.generate_basic_memory is not None:
        generate_basic_memory(args.worker, args.generate_basic_memory)
        return 0
    if args.worker is not None and args.oneshot_only:
        print(json.dumps(oneshot_store(args.worker, max(1, args.oneshot))))
        return 0
    if args.worker is not None:
        print(json.dumps(measure(args.worker, args.queries, args.oneshot)))
        return 0
    worker_args = ["--queries", str(args.queries), "--oneshot", str(args.oneshot)]
    if args.store:
        worker_args.append("--oneshot-only")
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    work = args.work or Path(tempfile.mkdtemp(prefix="memory-mcp-speed-"))
    if args.baseline:
        started = time.perf_counter()
        try:
            results = run_ab(sizes, work, args.baseline, args.rounds, worker_args, args.store)
        finally:
            if args.work is None:
                shutil.rmtree(work, ignore_errors=True)
        print_ab(results)
        print(f"\ntotal {time.perf_counter() - started:.0f} s (nproc {os.cpu_count()})")
        if args.json:
            args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
        return 0
    if args.store:
        started = time.perf_counter()
        try:
            row = measure_with(Path(__file__).resolve().parent.parent, args.store, work / "run-store", worker_args)
        finally:
            if args.work is None:
                shutil.rmtree(work, ignore_errors=True)
        print(json.dumps(row), flush=True)
        print_oneshot([row])
        print(f"\ntotal {time.perf_counter() - started:.0f} s (nproc {os.cpu_count()})")
        return 0
    rows, peers = [], {}
    peer_python = args.basic_memory_python
    if not peer_python:
        print("basic-memory: not run (no --basic-memory-python given)", flush=True)
    else:
        probe = subprocess.run([peer_python, "-c", "import basic_memory"], capture_output=True, text=True)
        if probe.returncode != 0:
            why = (probe.stderr.strip().splitlines() or ["?"])[-1]
            print(f"basic-memory: not run ({peer_python} cannot import basic_memory: {why})", flush=True)
            peer_python = None
    started = time.perf_counter()
    try:
        for n in sizes:
            root = work / f"store-{n}"
            if root.exists():
                shutil.rmtree(root)
            t0 = time.perf_counter()
            me = [sys.executable, os.path.abspath(__file__), "--worker", str(root)]
            subprocess.run([*me, "--generate", str(n)], check=True)
            gen_s = time.perf_counter() - t0
            out = subprocess.run([*me, *worker_args], check=True, capture_output=True, text=True)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            row["generate_s"] = round(gen_s, 1)
            rows.append(row)
            print(json.dumps(row), flush=True)
            if peer_python:
                t0 = time.perf_counter()
                peer = run_peer(peer_python, work, n, args.queries, args.basic_memory_passes)
                if peer is not None:
                    peer["measure_s"] = round(time.perf_counter() - t0, 1)
                    peers[n] = peer
                    print("basic-memory " + json.dumps(peer), flush=True)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print_table(rows)
    print_peer(rows, peers)
    print(f"\ntotal {time.perf_counter() - started:.0f} s (nproc {os.cpu_count()})")
    if args.json:
        out = {"memory-mcp": rows, "basic-memory": list(peers.values())} if peers else rows
        args.json.write_text(json.dumps(out, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
