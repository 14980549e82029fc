"""Randomised convergence: K replicas of one store apply random remember / edit / archive / supersede / forget
(purge) / hand edits, the same memories on several replicas included, and sync through a real bare remote in
random orders until nothing moves. Then: every canon is byte-identical; no file holds a conflict marker or is
unparseable; every memory created anywhere still exists unless a purge removed it; every clash is an open
conflict pair; a fixed probe set of recalls returns the same ids everywhere. A failure prints its seed.

The replicas are in-process `MemoryService`s (the core the CLI and the server call); every sync is
`MemoryService.sync`, so git, and the merge driver as a process per file, run exactly as under the CLI.
"""

from __future__ import annotations

import random
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from memory_mcp.canon import files as canon
from memory_mcp.domain.errors import MemoryMcpError
from memory_mcp.store.sync import SyncOptions
from memory_mcp.tools.service import MemoryService
from tests.sync_support import MARKERS

WORDS = (
    "postgres redis kafka deploy staging backup replica latency cache queue token alice marco infra "
    "billing grafana docker helm terraform vault nightly tuesday rollback canary shard index"
).split()
PROBES = ["postgres backup", "redis cache", "deploy staging", "kafka queue", "alice infra", "grafana latency"]


@dataclass
class Run:
    seed: int
    rng: random.Random
    created: set[str] = field(default_factory=set)
    purged: set[str] = field(default_factory=set)
    clashes: int = 0
    copies: set[str] = field(default_factory=set)  # file names of the clash copies the syncs reported
    ops: int = 0


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def _active_ids(svc: MemoryService) -> list[str]:
    return sorted(i.id for i in svc.browse(limit=200).items if i.state == "active")


def _ids(svc: MemoryService, state: str | None = None) -> list[str]:
    return sorted(i.id for i in svc.browse(limit=200, state=state).items)


def _operate(run: Run, svc: MemoryService, root: Path) -> None:
    rng = run.rng
    op = rng.choice(["remember", "remember", "edit", "edit", "archive", "supersede", "purge", "hand"])
    active = _active_ids(svc)
    target = rng.choice(active) if active else None
    run.ops += 1
    try:
        if op == "remember" or target is None:
            answer = svc.remember(_sentence(rng, 3), _sentence(rng, 8), entities=[rng.choice(WORDS)])
            run.created.add(answer.id)
        elif op == "edit":
            svc.update("edit", target, body=_sentence(rng, 8) + "\n\n" + _sentence(rng, 5))
        elif op == "archive":
            svc.update("set_state", target, state="archived")
        elif op == "supersede":
            answer = svc.remember(_sentence(rng, 3), _sentence(rng, 8), supersedes=[target])
            run.created.add(answer.id)
        elif op == "purge":
            svc.update("set_state", target, state="archived")
            svc.forget(target, "purge", confirm=True)
            run.purged.add(target)
        else:  # a person's edit in an editor: a line appended to the body, `updated` untouched
            path = root / svc.read(id=target).path
            path.write_text(path.read_text(encoding="utf-8").rstrip("\n") + f"\n\n{_sentence(rng, 4)}\n")
    except MemoryMcpError:
        pass  # a move the lifecycle forbids right now (e.g. a cycle): nothing was written


def _head(root: Path) -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()


def _canon_bytes(root: Path) -> dict[str, bytes]:
    out = {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted((root / "memories").rglob("*.md"))}
    if (root / "dictionary.md").exists():
        out["dictionary.md"] = (root / "dictionary.md").read_bytes()
    return out


def run_convergence(tmp: Path, seed: int, replicas: int, rounds: int, ops_per_round: int) -> Run:
    run = Run(seed, random.Random(seed))
    remote = tmp / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    roots = [tmp / f"r{i}" for i in range(replicas)]
    services = [MemoryService(root) for root in roots]
    try:
        services[0].remember("Postgres backups run nightly", "Backups of postgres run nightly to S3.")
        for svc in services:
            svc.sync(SyncOptions(init_url=str(remote), branch="main"))
        for _ in range(rounds):
            for svc, root in zip(services, roots, strict=True):
                for _ in range(run.rng.randint(1, ops_per_round)):
                    _operate(run, svc, root)
            for i in run.rng.sample(range(replicas), run.rng.randint(1, replicas)):  # some replicas sync
                _note(run, services[i].sync(SyncOptions()))
        for _ in range(3 * replicas + 3):  # until nothing moves: one round in which no replica sends anything
            moved = False
            for i in run.rng.sample(range(replicas), replicas):
                answer = services[i].sync(SyncOptions())
                _note(run, answer)
                moved = moved or answer.pushed
            if not moved and len({_head(r) for r in roots}) == 1:
                break
        _check(run, services, roots)
    finally:
        for svc in services:
            svc.close()
    return run


def _note(run: Run, answer) -> None:
    for note in answer.surfaced:
        match = re.search(r"edited on two machines: .* is now (\S+\.md)", note)
        if match:
            run.clashes += 1
            run.copies.add(match.group(1))


def _check(run: Run, services: list[MemoryService], roots: list[Path]) -> None:
    heads = {_head(r) for r in roots}
    assert len(heads) == 1, "replicas did not reach one commit"
    canons = [_canon_bytes(r) for r in roots]
    assert all(c == canons[0] for c in canons), "canons differ between replicas"
    for rel, data in canons[0].items():
        text = data.decode("utf-8")
        assert not any(m in text for m in MARKERS), f"conflict marker in {rel}"
    existing: set[str] = set()
    copies: dict[str, str] = {}
    for rel, data in canons[0].items():
        if rel == "dictionary.md":
            continue
        mem = canon.parse(data, rel, "")  # raises (fails the test) on an unparseable file
        existing.add(mem.id)
        match = re.match(r"concurrent edit of (\S+) on another machine", mem.source)
        if match:
            copies[mem.id] = match.group(1)
            assert any(c.other_id == match.group(1) for c in mem.conflicts), f"clash copy {mem.id} records no pair"
    for svc in services:
        status = svc.status()
        assert status.unparseable == []
        open_pairs = {frozenset((c.a_id, c.b_id)) for c in status.unresolved_conflicts}
        for copy_id, original in copies.items():
            assert frozenset((copy_id, original)) in open_pairs, f"clash {copy_id} <> {original} is not an open pair"
    lost = run.created - existing - run.purged
    assert not lost, f"memories lost: {sorted(lost)}"
    names = {rel.rpartition("/")[2] for rel in canons[0]}
    for name in run.copies:  # every clash left its copy, unless a later purge removed that copy
        suffix = name.removesuffix(".md").rpartition("-")[2].upper()
        assert name in names or any(p.endswith(suffix) for p in run.purged), f"clash copy {name} is gone"
    probes = [[[r.id for r in svc.recall(q, limit=10).results] for q in PROBES] for svc in services]
    assert all(p == probes[0] for p in probes), "the probe recalls differ between replicas"


@pytest.mark.parametrize("seed", [11, 12])
def test_replicas_converge(tmp_path: Path, seed: int) -> None:
    started = time.perf_counter()
    try:
        run = run_convergence(tmp_path, seed, replicas=3, rounds=3, ops_per_round=3)
    except AssertionError as exc:
        raise AssertionError(f"seed {seed}: {exc}") from exc
    print(
        f"[convergence] seed {seed}: 3 replicas, {run.ops} ops, {len(run.created)} created, "
        f"{len(run.purged)} purged, {run.clashes} clashes, {time.perf_counter() - started:.1f} s"
    )


@pytest.mark.long
@pytest.mark.parametrize("seed", range(100, 110))
def test_replicas_converge_long(tmp_path: Path, seed: int) -> None:
    started = time.perf_counter()
    try:
        run = run_convergence(tmp_path, seed, replicas=4, rounds=6, ops_per_round=6)
    except AssertionError as exc:
        raise AssertionError(f"seed {seed}: {exc}") from exc
    print(
        f"[convergence long] seed {seed}: 4 replicas, {run.ops} ops, {len(run.created)} created, "
        f"{len(run.purged)} purged, {run.clashes} clashes, {time.perf_counter() - started:.1f} s"
    )
