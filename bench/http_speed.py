"""Recall throughput and latency over Streamable HTTP at 1, 4 and 16 concurrent clients, beside stdio.

    python bench/http_speed.py                 # a 10k-memory store, 8 s per level
    python bench/http_speed.py --size 2000 --seconds 4

One store of synthetic memories (bench/speed.py's generator), one `memory-mcp serve --http` process and,
in the same run, one stdio server on the same store. Each level runs N SDK clients (each its own session)
in this process, each recalling generated queries (limit 10) back to back for the given time; printed:
recalls/s over all clients, p50/p95 latency per call. Then a mixed run: 16 clients each alternating
remember (a unique marker word) and recall, after which every remembered memory must be found by its
word from a fresh client (lost = 0). `uptime` is printed before and after: the machine may be shared.
The clients run in this process, so they share the CPUs with the server: the figures are a lower bound.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import mcp
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
from speed import generate, pct, queries  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def start_server(store: Path, token_file: Path, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, "-m", "memory_mcp", "--store", str(store), "serve", "--http", "--port", "0"]
    proc = subprocess.Popen([*cmd, "--token-file", str(token_file)], stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stderr is not None
    for line in proc.stderr:
        if "MCP over Streamable HTTP at " in line:
            return proc, line.split(" at ", 1)[1].split(" ", 1)[0]
    raise SystemExit("the HTTP server did not start")


class Http:
    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token

    def client(self):
        return _http_client(self.url, self.token)


class _http_client:
    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token

    async def __aenter__(self) -> mcp.Client:
        self.http = create_mcp_http_client(headers={"Authorization": f"Bearer {self.token}"})
        await self.http.__aenter__()
        self.c = mcp.Client(streamable_http_client(self.url, http_client=self.http))
        return await self.c.__aenter__()

    async def __aexit__(self, *exc) -> None:
        await self.c.__aexit__(*exc)
        await self.http.__aexit__(*exc)


async def recall_for(client: mcp.Client, qs: list[str], offset: int, seconds: float, out: list[float]) -> None:
    end = time.perf_counter() + seconds
    i = offset
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        r = await client.call_tool("memory_recall", {"query": qs[i % len(qs)], "limit": 10})
        out.append(time.perf_counter() - t0)
        if r.is_error:
            raise SystemExit(f"recall failed: {r.content}")
        i += 1


async def level(http: Http, clients: int, qs: list[str], seconds: float) -> dict:
    latencies: list[float] = []

    async def one(n: int) -> None:
        async with http.client() as c:
            await c.call_tool("memory_status", {})  # the session is open before the clock starts
            await ready.wait()
            await recall_for(c, qs, n * 37, seconds, latencies)

    ready = anyio.Event()
    async with anyio.create_task_group() as tg:
        for n in range(clients):
            tg.start_soon(one, n)
        await anyio.sleep(1.0 + clients * 0.2)
        t0 = time.perf_counter()
        ready.set()
    elapsed = time.perf_counter() - t0
    return {"what": f"http, {clients} client(s)", "n": len(latencies), "rate": len(latencies) / elapsed,
            "p50": pct(latencies, 0.50) * 1000, "p95": pct(latencies, 0.95) * 1000}  # fmt: skip


async def stdio_level(store: Path, env: dict[str, str], qs: list[str], seconds: float) -> dict:
    params = mcp.StdioServerParameters(
        command=sys.executable, args=["-m", "memory_mcp", "--store", str(store)], env=env
    )
    latencies: list[float] = []
    async with mcp.Client(params) as c:
        await c.call_tool("memory_status", {})
        t0 = time.perf_counter()
        await recall_for(c, qs, 0, seconds, latencies)
        elapsed = time.perf_counter() - t0
    return {"what": "stdio, 1 client", "n": len(latencies), "rate": len(latencies) / elapsed,
            "p50": pct(latencies, 0.50) * 1000, "p95": pct(latencies, 0.95) * 1000}  # fmt: skip


async def mixed(http: Http, clients: int, calls: int, qs: list[str]) -> tuple[int, int, int, float]:
    written: dict[str, str] = {}
    errors: list[str] = []

    async def one(n: int) -> None:
        async with http.client() as c:
            for i in range(calls):
                if i % 2 == 0:
                    word = f"mixq{n}z{i}k"
                    r = await c.call_tool("memory_remember", {"title": f"mixed {n} {i}", "body": f"marker {word}"})
                    if r.is_error:
                        errors.append(str(r.content))
                    else:
                        written[r.structured_content["id"]] = word
                else:
                    r = await c.call_tool("memory_recall", {"query": qs[(n * 13 + i) % len(qs)]})
                    if r.is_error:
                        errors.append(str(r.content))

    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for n in range(clients):
            tg.start_soon(one, n)
    elapsed = time.perf_counter() - t0
    lost = 0
    async with http.client() as c:
        for mem_id, word in written.items():
            r = await c.call_tool("memory_recall", {"query": word, "limit": 20})
            lost += mem_id not in [x["id"] for x in r.structured_content["results"]]
    return len(written), len(errors), lost, elapsed


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


async def run(args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix="http-speed-"))
    store = work / "store"
    print(f"generating {args.size} memories ...", flush=True)
    generate(store, args.size)
    env = {"HOME": str(work), "PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO)}
    token_file = work / "token"
    proc, url = start_server(store, token_file, env)
    try:
        http = Http(url, token_file.read_text().strip())
        async with http.client() as c:  # the cold index is built here, outside the timings
            t0 = time.perf_counter()
            await c.call_tool("memory_status", {})
            print(f"cold index over HTTP: {time.perf_counter() - t0:.1f} s", flush=True)
        qs = queries(500)
        print(f"load before: {uptime()}", flush=True)
        rows = [await stdio_level(store, env, qs, args.seconds)]
        for n in (1, 4, 16):
            rows.append(await level(http, n, qs, args.seconds))
        print(f"load after:  {uptime()}")
        print(f"\n{args.size} memories, recall limit 10, {args.seconds:g} s per row")
        print(f"{'':<22}{'recalls':>9}{'recalls/s':>11}{'p50 ms':>9}{'p95 ms':>9}")
        for r in rows:
            print(f"{r['what']:<22}{r['n']:>9}{r['rate']:>11.1f}{r['p50']:>9.1f}{r['p95']:>9.1f}")
        made, errors, lost, elapsed = await mixed(http, 16, args.mixed_calls, qs)
        print(
            f"\nmixed: 16 clients x {args.mixed_calls} calls (remember/recall alternating) in {elapsed:.1f} s: "
            f"{made} remembered, {errors} errors, {lost} lost"
        )
        print(f"load at the end: {uptime()}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size", type=int, default=10_000)
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--mixed-calls", type=int, default=20)
    anyio.run(run, p.parse_args())


if __name__ == "__main__":
    main()
