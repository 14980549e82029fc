"""A writer process for the crash test: writes memories as fast as it can until it is killed.

Usage: python tests/reliability_writer.py STORE SEED KNOWN_JSON ACK_FILE

It goes through MemoryService (every write the MCP tools make is made there: canon file, supersede links,
index) and mixes three kinds of write: a new memory, an edit that rewrites an existing memory's file, and
a new memory that supersedes an old one (rewriting the old file too). After each write *returns* it appends
one JSON line to ACK_FILE: that write is acknowledged, and the test holds the store to it after a SIGKILL.
KNOWN_JSON lists memories acknowledged by earlier runs ({"id", "body", "superseded"}), so edits and
supersedes also hit files written long before this process started.
"""

from __future__ import annotations

import json
import os
import random
import sys
from collections.abc import Callable
from pathlib import Path

from memory_mcp.domain.errors import MemoryMcpError
from memory_mcp.domain.secrets import secret_kinds
from memory_mcp.tools.service import MemoryService

WORDS = (
    "backup restore index ledger replica shard quota cache schema deploy rollout tenant billing invoice "
    "cluster gateway token session audit metric alert pager runbook migration snapshot"
).split()


def run(store: str, seed: int, known_json: str, ack_path: str) -> None:
    rng = random.Random(seed)
    known: list[dict] = json.loads(known_json)
    fd = os.open(ack_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def ack(record: dict) -> None:
        # one short write per line: a kill leaves at most one torn last line, which the reader ignores
        os.write(fd, (json.dumps(record) + "\n").encode("utf-8"))

    service = MemoryService(Path(store))
    service.status()  # open and reconcile before saying ready, so the kills land among writes
    secret_kinds("warm")  # the secret scanner loads its plugins on first use: not inside the kill window
    ack({"ready": True})
    n = 0
    while True:
        n += 1
        try:
            _one_write(service, rng, known, n, seed, ack)
        except MemoryMcpError as exc:  # reported, so the test fails loudly instead of waiting for writes
            ack({"error": f"{type(exc).__name__}: {exc}"})
            raise


def _one_write(
    service: MemoryService, rng: random.Random, known: list[dict], n: int, seed: int, ack: Callable[[dict], None]
) -> None:
    editable = [k for k in known if not k["superseded"]]
    roll = rng.random()
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 40)))
    if roll < 0.55 or not editable:
        token = f"crash{seed}x{n}"
        body = f"{words} {token}."
        made = service.remember(f"Crash memory {seed} {n}", body)
        known.append({"id": made.id, "body": body, "superseded": False})
        ack({"op": "remember", "id": made.id, "path": made.path, "token": token})
    elif roll < 0.85:
        target = rng.choice(editable)
        token = f"edit{seed}x{n}"
        body = f"{target['body']} {token}."
        service.update("edit", target["id"], body=body)
        target["body"] = body
        ack({"op": "edit", "id": target["id"], "token": token})
    else:
        old = rng.choice(editable)
        token = f"crash{seed}x{n}"
        body = f"{words} {token}."
        made = service.remember(f"Crash replacement {seed} {n}", body, supersedes=[old["id"]])
        old["superseded"] = True
        known.append({"id": made.id, "body": body, "superseded": False})
        ack({"op": "supersede", "id": made.id, "old": old["id"], "path": made.path, "token": token})


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    run(sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]).read_text(encoding="utf-8"), sys.argv[4])
