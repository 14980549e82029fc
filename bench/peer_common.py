"""What every peer driver in bench/ shares (standard library only: imported by side venvs too).

- `run_queries`: every bench query (`qid`, `store`, `query`) through one search callable, timed in wall
  and process CPU, the peer's own result keys mapped back to corpus ids (first occurrence kept, in
  order) -> run rows in the shared scorer's format plus latency figures;
- `StdioMcpClient`: a minimal MCP client over stdio (newline-delimited JSON-RPC 2.0: `initialize`,
  `notifications/initialized`, `tools/call`), enough to ask a peer's real MCP server the same
  questions the driver asked its Python API and compare the answers;
- small helpers: percentiles, peak RSS, JSONL reading and writing, evenly spread query samples.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def write_jsonl(path: Path, rows: Iterable[dict]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def pct(values: list[float], p: float) -> float:
    """The value at share `p` of the sorted list (nearest rank, as the other bench scripts do)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


def peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def spread_sample(rows: list, limit: int | None) -> list:
    """`limit` rows evenly spread over `rows` (all of them when `limit` is None or not smaller)."""
    if limit is None or limit >= len(rows):
        return list(rows)
    return [rows[i * len(rows) // limit] for i in range(limit)]


@dataclass
class QueryRun:
    rows: list[dict] = field(default_factory=list)
    wall_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)
    unmapped: int = 0

    def figures(self) -> dict:
        """Latency and coverage figures for the driver's JSON summary."""
        return {
            "queries": len(self.rows),
            "with_results": sum(1 for r in self.rows if r["ranked"]),
            "unmapped_results": self.unmapped,
            "search_p50_ms": round(statistics.median(self.wall_ms), 2),
            "search_p95_ms": round(pct(self.wall_ms, 0.95), 2),
            "search_cpu_p50_ms": round(statistics.median(self.cpu_ms), 2),
            "search_cpu_p95_ms": round(pct(self.cpu_ms, 0.95), 2),
            "search_total_s": round(sum(self.wall_ms) / 1000, 1),
        }


def run_queries(
    queries: list[dict],
    search: Callable[[dict], list[str]],
    corpus_ids: Callable[[str, str], list[str]],
) -> QueryRun:
    """`search(query row)` -> the peer's result keys, best first; `corpus_ids(store, key)` -> the corpus
    ids that key stands for ([] when unknown). Only the search call is timed."""
    run = QueryRun()
    for q in queries:
        t0, c0 = time.perf_counter(), time.process_time()
        keys = search(q)
        run.wall_ms.append((time.perf_counter() - t0) * 1000)
        run.cpu_ms.append((time.process_time() - c0) * 1000)
        ranked: list[str] = []
        seen: set[str] = set()
        for key in keys:
            ids = corpus_ids(q["store"], key)
            if not ids:
                run.unmapped += 1
            for cid in ids:
                if cid not in seen:
                    seen.add(cid)
                    ranked.append(cid)
        run.rows.append({"qid": q["qid"], "ranked": ranked})
    return run


class StdioMcpClient:
    """A peer's MCP server as a child process, spoken to over stdio, one request at a time."""

    def __init__(self, cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> None:
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
            text=True,
            encoding="utf-8",
        )
        self.next_id = 1
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "memory-mcp-bench", "version": "0"},
            },
        )
        self.notify("notifications/initialized")

    def notify(self, method: str) -> None:
        self._send({"jsonrpc": "2.0", "method": method})

    def _send(self, message: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict) -> dict:
        request_id = self.next_id
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            line = line.strip()
            if not line.startswith("{"):
                continue  # a server that prints banners on stdout
            message = json.loads(line)
            if message.get("id") != request_id:
                continue  # notifications and log messages
            if "error" in message:
                raise RuntimeError(f"{method}: {message['error']}")
            return message["result"]
        raise RuntimeError(f"{method}: the MCP server closed its output (exit {self.proc.poll()})")

    def call_tool(self, name: str, arguments: dict) -> dict:
        """The tool's structured result: `structuredContent`, else the first text block read as JSON."""
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        if result.get("isError"):
            raise RuntimeError(f"{name}: {result.get('content')}")
        if isinstance(result.get("structuredContent"), dict):
            return result["structuredContent"]
        for block in result.get("content", []):
            if block.get("type") == "text":
                return json.loads(block["text"])
        raise RuntimeError(f"{name}: no JSON in the answer")

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def private_env(home: Path, **extra: str) -> dict[str, str]:
    """The current environment with HOME (and the XDG folders under it) moved into the work folder,
    Hugging Face and tokenizer downloads off: a peer reads and writes nothing of the user's."""
    env = dict(os.environ)
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        env.pop(name, None)
    env.update(HOME=str(home), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    env.update(extra)
    return env
