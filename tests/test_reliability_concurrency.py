"""Concurrency: several real stdio servers write to one store at once, with recalls interleaved, while a
person edits the files by hand (some saves atomic, some in place like many editors do).

At the end: exactly one file per remember call, every file parseable, every memory findable by its own
unique word, every hand edit still there, and `memory-mcp reindex --verify` clean.

Short variant (default suite): 3 processes x 20 remembers. Long variant: 4 x 250 = 1,000
(`python -m pytest -m long`).
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest

from memory_mcp.domain.errors import StoreAccessError
from memory_mcp.store.lock import StoreLock
from memory_mcp.tools.service import MemoryService

from .helpers import REPO, Tools, hand_memory, stdio_tools, write_file
from .reliability_support import read_canon, verify_clean

pytestmark = pytest.mark.anyio

# A wide vocabulary, so memories look like a real store's: a handful of shared words would make the
# conflict gate pair most of them, and every answer lists every open conflict (that cost is not what
# this test measures).
_VOCAB_RNG = random.Random(99)
WORDS = [
    "".join(_VOCAB_RNG.choice("bcdfghjklmnprstvwz") + _VOCAB_RNG.choice("aeiou") for _ in range(3)) for _ in range(3000)
]
ENTITIES = [f"system-{n}" for n in range(40)]


@dataclass
class Load:
    acked: dict[str, str] = field(default_factory=dict)  # unique word -> memory id
    remembers: int = 0
    recalls: int = 0
    transient_misses: int = 0  # found on a retry (a hand save caught half-written)
    hand_edits: dict[str, int] = field(default_factory=dict)  # "atomic" / "in place" -> count
    notes: dict[str, list[int]] = field(default_factory=dict)  # file name -> hand notes appended
    errors: list[str] = field(default_factory=list)


def _token(worker: int, n: int) -> str:
    # zero-padded with a closing letter: no token is a prefix of another
    return f"loadw{worker}n{n:04d}q"


async def _find(t: Tools, token: str, mem_id: str, load: Load) -> None:
    for attempt in range(4):
        load.recalls += 1
        results = (await t.recall(token))["results"]
        if results and results[0]["id"] == mem_id:
            if attempt:
                load.transient_misses += 1
            return
        await anyio.sleep(0.05)
    raise AssertionError(f"{token} ({mem_id}) not found after 4 recalls: {[r['id'] for r in results]}")


async def _worker(root: Path, worker: int, count: int, load: Load, seed: int) -> None:
    rng = random.Random(seed * 100 + worker)
    async with stdio_tools(root) as t:
        for n in range(count):
            token = _token(worker, n)
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 24)))
            made = await t.remember(
                f"Load {worker}-{n} {rng.choice(WORDS)} {rng.choice(WORDS)}",
                f"{words} {token}.",
                entities=rng.sample(ENTITIES, rng.randint(0, 2)),
                type=rng.choice(["fact", "decision", "episode"]),
            )
            assert made["created"] is True, made
            load.remembers += 1
            load.acked[token] = made["id"]
            # read-your-writes across processes: this one, and any other server's acknowledged memory
            await _find(t, token, made["id"], load)
            if rng.random() < 0.5:
                other = rng.choice(list(load.acked))
                await _find(t, other, load.acked[other], load)


def _hand_editor(root: Path, load: Load, stop: threading.Event, seed: int) -> None:
    """A person saving notes into random memory files while the servers work."""
    rng = random.Random(seed)
    memories = root / "memories"
    k = 0
    while not stop.is_set():
        time.sleep(rng.uniform(0.005, 0.03))
        names = [p.name for p in memories.glob("*.md")]  # nothing yet before the first remember
        if not names:
            continue
        name = rng.choice(names)
        path = memories / name
        k += 1
        try:
            text = path.read_text(encoding="utf-8")
            assert text.endswith("\n"), f"{name} does not end with a newline"
            new = f"{text}\nHand note {k}.\n"
            if rng.random() < 0.5:
                fd, tmp = tempfile.mkstemp(dir=memories, prefix=f".{name}.", suffix=".edit")
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.write(new)
                os.replace(tmp, path)
                kind = "atomic"
            else:
                with path.open("w", encoding="utf-8") as fh:  # truncate, then write: a reader may see it torn
                    fh.write(new)
                kind = "in place"
        except Exception as exc:  # reported by the test, never swallowed
            load.errors.append(f"hand editor on {name}: {exc!r}")
            return
        load.hand_edits[kind] = load.hand_edits.get(kind, 0) + 1
        load.notes.setdefault(name, []).append(k)


async def _run_load(root: Path, processes: int, per_process: int, seed: int) -> Load:
    load = Load()
    stop = threading.Event()
    editor = threading.Thread(target=_hand_editor, args=(root, load, stop, seed), daemon=True)
    root.mkdir(parents=True)
    editor.start()
    try:
        async with anyio.create_task_group() as tg:
            for w in range(processes):
                tg.start_soon(_worker, root, w, per_process, load, seed)
    finally:
        stop.set()
        editor.join(30)
    assert load.errors == []
    return load


def _check_store(root: Path, load: Load, expected: int) -> None:
    files = read_canon(root)
    assert len(files) == expected, f"{len(files)} memory files, expected exactly {expected}"
    bad = [(f.path.name, f.problem) for f in files if f.memory is None]
    assert bad == [], bad
    assert sorted(f.memory.id for f in files) == sorted(load.acked.values())
    for f in files:
        notes = [int(n) for n in re.findall(r"^Hand note (\d+)\.$", f.path.read_text(encoding="utf-8"), re.M)]
        assert notes == load.notes.get(f.path.name, []), f"{f.path.name}: hand notes {notes}"
    # every memory findable by its own word, from a fresh process's point of view
    service = MemoryService(root)
    try:
        status = service.status()
        assert status.total == expected and status.unparseable == [], (status.total, status.unparseable)
        missing = []
        for token, mem_id in load.acked.items():
            results = service.recall(token, limit=5).results
            if not results or results[0].id != mem_id:
                missing.append(token)
        assert missing == [], f"not findable: {missing[:20]}"
    finally:
        service.close()
    verify_clean(root)


def _report(name: str, load: Load, processes: int, seconds: float) -> None:
    calls = load.remembers + load.recalls
    print(
        f"\n[{name}] {processes} server processes: {load.remembers} remembers + {load.recalls} recalls "
        f"= {calls} calls in {seconds:.1f}s ({calls / seconds:.0f} calls/s); hand edits {load.hand_edits}, "
        f"files with hand notes {len(load.notes)}; transient misses (found on retry) {load.transient_misses}; "
        "lost 0"
    )


async def test_3_servers_x_20_remembers_with_hand_edits(tmp_path: Path) -> None:
    started = time.perf_counter()
    root = tmp_path / "store"
    load = await _run_load(root, processes=3, per_process=20, seed=1)
    _check_store(root, load, expected=60)
    assert sum(load.hand_edits.values()) > 0
    _report("concurrency short", load, 3, time.perf_counter() - started)


@pytest.mark.long
async def test_4_servers_x_250_remembers_with_hand_edits(tmp_path: Path) -> None:
    started = time.perf_counter()
    root = tmp_path / "store"
    load = await _run_load(root, processes=4, per_process=250, seed=2)
    _check_store(root, load, expected=1000)
    assert load.hand_edits.get("atomic", 0) > 0 and load.hand_edits.get("in place", 0) > 0
    _report("concurrency long", load, 4, time.perf_counter() - started)


# ---------------------------------------------------------------- files changing under reconcile


def _churn(root: Path, stop: threading.Event, counts: dict[str, int], errors: list[str]) -> None:
    """Create, rewrite, rename, truncate, delete and swap files for FIFOs and folders, as fast as possible."""
    rng = random.Random(4)
    memories = root / "memories"
    n = 0
    while not stop.is_set():
        n += 1
        path = memories / f"churn-{rng.randrange(8)}.md"
        action = rng.choice(["create", "rewrite", "rename", "truncate", "delete", "fifo", "folder"])
        try:
            if action == "create" and not (path.is_fifo() or path.is_dir()):  # opening a FIFO would block us
                path.write_text(hand_memory(f"churn-{n}", f"Churn {n}", f"churnword{n} moving target"))
            elif action == "rewrite" and path.is_file():
                path.write_text(hand_memory(f"churn-{n}", f"Churn {n}", f"churnword{n} rewritten"))
            elif action == "rename" and path.is_file():
                os.replace(path, memories / f"churn-{rng.randrange(8)}.md")
            elif action == "truncate" and path.is_file():
                os.truncate(path, rng.randrange(max(1, path.stat().st_size)))
            elif action == "delete" and path.is_file():
                path.unlink()
            elif action == "fifo" and not path.exists():
                os.mkfifo(path)  # a reader that blocks on it would hang the server
            elif action == "folder" and not path.exists():
                path.mkdir()
            elif path.is_fifo() or path.is_dir():
                path.rmdir() if path.is_dir() else path.unlink()
            else:
                continue
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            continue  # the churn's own races (gone, or now a folder): not what is under test
        except Exception as exc:
            errors.append(f"churn {action} {path.name}: {exc!r}")
            return
        counts[action] = counts.get(action, 0) + 1


async def test_files_changing_and_vanishing_during_reconcile(mem_tools: Tools, store: Path) -> None:
    t = mem_tools
    anchor = await t.remember("Anchor memory", "The steady word anchorword stays put.")
    stop, counts, errors = threading.Event(), {}, []
    churn = threading.Thread(target=_churn, args=(store, stop, counts, errors), daemon=True)
    churn.start()
    calls = 0
    try:
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            # every call reconciles while files appear, vanish, change size and type under it
            found = await t.recall("anchorword")
            assert [r["id"] for r in found["results"]][:1] == [anchor["id"]]
            await t.status()
            calls += 2
    finally:
        stop.set()
        churn.join(10)
    assert errors == []
    assert sum(counts.values()) > 50, counts
    # leave only regular files, then one call converges on exactly what is on disk
    for p in (store / "memories").iterdir():
        if p.is_fifo():
            p.unlink()
        elif p.is_dir():
            p.rmdir()
    time.sleep(0.1)
    status = await t.status()
    on_disk = read_canon(store)
    assert status["total"] == sum(1 for f in on_disk if f.memory is not None) - _duplicates(on_disk)
    assert {u["path"] for u in status["unparseable"]} == {
        f"memories/{f.path.name}" for f in on_disk if f.memory is None
    } | _duplicate_paths(status)
    verify = await t.ok("memory_reindex", verify=True)
    assert verify["mismatches"] == [], verify["mismatches"]
    print(f"\n[churn] {sum(counts.values())} file changes {counts} under {calls} calls; all answered")


def _duplicates(files: list) -> int:
    ids = [f.memory.id for f in files if f.memory is not None]
    return len(ids) - len(set(ids))


def _duplicate_paths(status: dict) -> set[str]:
    return {u["path"] for u in status["unparseable"] if u["reason"].startswith("duplicate id")}


# ---------------------------------------------------------------- the store lock


async def test_a_recall_reads_while_another_process_holds_the_store_lock_until_something_changes(
    tmp_path: Path,
) -> None:
    """A recall that comes when nothing changed since the server's last pass reads without the store lock (a
    sync or a reindex in another process holding it does not stall it); once a file changed, the recall waits
    for the lock and then answers with the change: never an answer that misses a finished edit."""
    root = tmp_path / "store"
    async with stdio_tools(root) as t:
        made = (await t.remember("Herbarium shelves", "Quartzite shelves hold the herbarium folios."))["id"]
        assert await t.recall_ids("herbarium") == [made]
        holder = StoreLock(root, root / ".index" / "write.lock", timeout=5)
        holder.acquire()
        try:
            with anyio.fail_after(20):  # the store lock's own wait is a minute: only a lock-free read answers
                assert await t.recall_ids("quartzite folios") == [made]
            write_file(root / "memories" / "fact" / "hand.md", hand_memory("01JHAND0000000000000000001",
                       "Herbarium loans", "Herbarium folios leave on loan for six weeks."))  # fmt: skip
            answers: list[list[str]] = []

            async def recall() -> None:
                answers.append(await t.recall_ids("herbarium loan"))

            async with anyio.create_task_group() as tg:
                tg.start_soon(recall)
                await anyio.sleep(1.5)
                assert answers == []  # the edit is waiting for the lock's holder: so is the recall
                holder.release()
            assert answers[0][0] == "01JHAND0000000000000000001"
        finally:
            holder.release()  # a second release does nothing


async def test_after_another_process_wrote_only_heat_a_recall_reads_without_the_lock_again(tmp_path: Path) -> None:
    """Another process's commit that changed no memory (its recalls' heat) costs one locked pass, after which
    recalls read without the store lock again: it must not send every later recall through the lock."""
    root = tmp_path / "store"
    async with stdio_tools(root) as t:
        made = (await t.remember("Herbarium shelves", "Quartzite shelves hold the herbarium folios."))["id"]
        assert await t.recall_ids("herbarium") == [made]
        other = MemoryService(root)  # a second process's worth of store: its recall's heat is committed at close
        assert [r.id for r in other.recall("quartzite").results] == [made]
        other.close()
        assert await t.recall_ids("herbarium") == [made]  # sees the foreign commit: one pass under the lock
        holder = StoreLock(root, root / ".index" / "write.lock", timeout=5)
        holder.acquire()
        try:
            with anyio.fail_after(20):  # the store lock's own wait is a minute: only a lock-free read answers
                assert await t.recall_ids("quartzite folios") == [made]
        finally:
            holder.release()


def test_store_lock_busy_is_a_clear_error_and_a_killed_holder_frees_it(tmp_path: Path) -> None:
    root = tmp_path / "store"
    (root / ".index").mkdir(parents=True)
    lock_path = root / ".index" / "write.lock"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from pathlib import Path\n"
            "from memory_mcp.store.lock import StoreLock\n"
            "lock = StoreLock(Path(sys.argv[1]), Path(sys.argv[2]))\n"
            "lock.acquire()\n"
            "print('held', flush=True)\n"
            "time.sleep(120)\n",
            str(root),
            str(lock_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        waiter = StoreLock(root, lock_path, timeout=0.5)
        started = time.monotonic()
        with pytest.raises(StoreAccessError, match=r"^store: busy: another process held"):
            waiter.acquire()
        assert time.monotonic() - started >= 0.5
        # a holder that dies without releasing (crash, SIGKILL) frees the lock: the kernel drops it
        holder.send_signal(signal.SIGKILL)
        holder.wait(30)
        waiter = StoreLock(root, lock_path, timeout=5)
        waiter.acquire()
        waiter.release()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(30)


def _swap_fifo(path: Path, fifo: Path, data: bytes, stop: threading.Event, swaps: list[int]) -> None:
    """Put `data` at `path`, then the FIFO `fifo` in its place, then the data again, as fast as possible (one FIFO
    moved back and forth, so a reader stuck on it can be let go through its other name)."""
    tmp = path.with_name(".swap.tmp")
    os.mkfifo(fifo)
    while not stop.is_set():
        tmp.write_bytes(data)
        os.replace(tmp, path)
        time.sleep(0.0005)
        os.replace(fifo, path)
        time.sleep(0.0005)
        os.replace(path, fifo)
        swaps[0] += 1


def _unblock_fifo_reader(fifo: Path) -> None:
    """A reader stuck on a FIFO returns once a writer opened and closed it."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


def test_a_fifo_swapped_in_where_a_memory_was_never_blocks_a_call(tmp_path: Path) -> None:
    """A memory file swapped for a FIFO between the scan and the read (here: the copy of a memory, which the pass
    reads again to settle the duplicate id) is reported, never opened for a blocking read: the CI run of 81836b8
    hung on it for 90 minutes."""
    root = tmp_path / "store"
    svc = MemoryService(root)
    made = svc.remember("Anchor memory", "The steady word anchorword stays put.")
    original = root / made.path
    copy, fifo = original.with_name("copy-of-anchor.md"), tmp_path / "fifo"
    stop, swaps, calls, errors = threading.Event(), [0], [0], []

    def work() -> None:
        try:
            deadline = time.monotonic() + 3.0
            while time.monotonic() < deadline:
                svc.status()
                calls[0] += 1
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(repr(exc))

    swapper = threading.Thread(target=_swap_fifo, args=(copy, fifo, original.read_bytes(), stop, swaps), daemon=True)
    worker = threading.Thread(target=work, daemon=True)
    swapper.start()
    worker.start()
    worker.join(30)
    stop.set()
    swapper.join(10)
    hung = worker.is_alive()
    while worker.is_alive():
        _unblock_fifo_reader(fifo)
        worker.join(0.2)
    svc.close()
    assert not hung, f"a call blocked on a FIFO after {calls[0]} calls and {swaps[0]} swaps"
    assert errors == [] and calls[0] > 5 and swaps[0] > 50, (errors, calls, swaps)
