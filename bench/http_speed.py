"""Recall throughput and latency over Streamable HTTP at 1, 4 and 16 concurrent clients, beside stdio.

    python bench/http_speed.py                 # a 10k-memory store, 8 s per level
    python bench/http_speed.py --size 2000 --seconds 4

One store of synthetic memories (bench/speed.py's generator), one `memory-mcp serve --http` process (with
its default worker processes, or `--workers N`) and, in the same run, one stdio server on the same store. Each level runs N SDK clients (each its own session)
in this process, each recalling generated queries (limit 10) back to back for the given time; printed:
recalls/s over all clients, p50/p95 latency per call. Then a mixed run: 16 clients each alternating
remember (a unique marker word) and recall, after which every remembered memory must be found by its
word from a fresh client (lost = 0). `uptime` is printed before and after: the machine may be shared.
The clients run in this process, so they share the CPUs with the server: the figures are a lower bound.

Because the load of a shared machine moves the wall-clock figures, each row also gives the CPU time per
call of the server (its process and its worker processes, from /proc, Linux; "-" elsewhere; "in workers":
the workers' share) and of this client process: they change
little with the load and say where a call's time goes. The row "http, 16 clients, read" calls
memory_read of one memory instead: its server CPU per call is the transport's own cost (HTTP, the SDK's
JSON-RPC handling, auth), so a recall's server CPU minus it is the recall itself. The row "http, 16 raw
clients" drives the same recalls with a light load generator instead of the SDK client (each its own
session, initialized as the protocol says, then one JSON-RPC POST per call over a kept-alive connection, the
answer parsed; httpx2, the SDK's own HTTP library): its client CPU is a fraction of the SDK client's, so it
shows what the server itself can serve when the clients do not share its two CPUs so heavily. Unless the
server runs with `--workers 0` already, the same raw load is then put on a second server with `--workers 0`
(every call in the serving process) on the same store, in the same run: the row "..., --workers 0".
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import httpx2
import mcp
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

PROTOCOL_VERSION = "2025-06-18"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from speed import generate, pct, queries  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def start_server(
    store: Path, token_file: Path, env: dict[str, str], workers: int | None = None
) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, "-m", "memory_mcp", "--store", str(store), "serve", "--http", "--port", "0"]
    cmd += [] if workers is None else ["--workers", str(workers)]
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


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of process `pid` so far (Linux /proc), None where that cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def worker_cpu_seconds(pid: int) -> float:
    """`cpu_seconds` of the live children of process `pid` (the server's worker processes); 0 when none."""
    return sum(c for c in map(cpu_seconds, child_pids(pid)) if c is not None)


def child_pids(parent: int | None = None) -> list[int]:
    """The children of process `parent` (default: this one; Linux /proc): how the stdio server's pid and an
    HTTP server's workers are found."""
    parent, out = os.getpid() if parent is None else parent, []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == parent:
                out.append(int(entry.name))
        except (OSError, ValueError, IndexError):
            pass
    return out


class CpuWindow:
    """CPU seconds spent by the server (its own process and its worker processes) and by this (client) process
    between start() and stop(). A worker restarted in between would count only its new life (none here)."""

    def __init__(self, server_pid: int | None) -> None:
        self.server_pid = server_pid

    def _server(self) -> tuple[float, float] | None:
        own = cpu_seconds(self.server_pid) if self.server_pid else None
        return None if own is None else (own, worker_cpu_seconds(self.server_pid))

    def start(self) -> None:
        self.s0 = self._server()
        self.c0 = time.process_time()

    def stop(self, calls: int) -> dict:
        s1, per = self._server(), 1000 / max(calls, 1)
        own = workers = None
        if s1 is not None and self.s0 is not None:
            own, workers = (s1[0] - self.s0[0]) * per, (s1[1] - self.s0[1]) * per
        return {"server_cpu": None if own is None else own + workers, "worker_cpu": workers,
                "client_cpu": (time.process_time() - self.c0) * per}  # fmt: skip


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


async def read_for(client: mcp.Client, mem_id: str, seconds: float, out: list[float]) -> None:
    """memory_read of one memory's first lines, back to back: a call whose work is almost all transport."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        r = await client.call_tool("memory_read", {"id": mem_id, "to_line": 3})
        out.append(time.perf_counter() - t0)
        if r.is_error:
            raise SystemExit(f"read failed: {r.content}")


async def level(
    http: Http, clients: int, qs: list[str], seconds: float, cpu: CpuWindow, read_id: str | None = None
) -> dict:
    """`clients` sessions recalling (or, with `read_id`, reading that memory) back to back for `seconds`."""
    latencies: list[float] = []

    async def one(n: int, ready: anyio.Event) -> None:
        async with http.client() as c:
            await c.call_tool("memory_status", {})  # the session is open before the clock starts
            await ready.wait()
            if read_id is None:
                await recall_for(c, qs, n * 37, seconds, latencies)
            else:
                await read_for(c, read_id, seconds, latencies)

    what = f"http, {clients} client(s)" + (", read" if read_id else "")
    return await timed_clients(what, clients, one, 1.0 + clients * 0.2, cpu, latencies)


async def timed_clients(
    what: str,
    clients: int,
    one: Callable[[int, anyio.Event], Awaitable[None]],
    settle: float,
    cpu: CpuWindow,
    latencies: list[float],
) -> dict:
    """Start `clients` tasks `one(n, ready)`, start the clock once they are set up, and sum up their calls."""
    ready = anyio.Event()
    async with anyio.create_task_group() as tg:
        for n in range(clients):
            tg.start_soon(one, n, ready)
        await anyio.sleep(settle)
        cpu.start()
        t0 = time.perf_counter()
        ready.set()
    elapsed = time.perf_counter() - t0
    return {"what": what, "n": len(latencies), "rate": len(latencies) / elapsed,
            "p50": pct(latencies, 0.50) * 1000, "p95": pct(latencies, 0.95) * 1000,
            **cpu.stop(len(latencies))}  # fmt: skip


async def stdio_level(store: Path, env: dict[str, str], qs: list[str], seconds: float) -> dict:
    params = mcp.StdioServerParameters(
        command=sys.executable, args=["-m", "memory_mcp", "--store", str(store)], env=env
    )
    latencies: list[float] = []
    before = set(child_pids())
    async with mcp.Client(params) as c:
        await c.call_tool("memory_status", {})
        spawned = set(child_pids()) - before
        cpu = CpuWindow(spawned.pop() if len(spawned) == 1 else None)
        cpu.start()
        t0 = time.perf_counter()
        await recall_for(c, qs, 0, seconds, latencies)
        elapsed = time.perf_counter() - t0
        used = cpu.stop(len(latencies))
    return {"what": "stdio, 1 client", "n": len(latencies), "rate": len(latencies) / elapsed,
            "p50": pct(latencies, 0.50) * 1000, "p95": pct(latencies, 0.95) * 1000, **used}  # fmt: skip


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


async def raw_level(http: Http, clients: int, qs: list[str], seconds: float, cpu: CpuWindow) -> dict:
    """`clients` light JSON-RPC clients recalling back to back (see the module docstring)."""
    headers = {
        "Authorization": f"Bearer {http.token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": PROTOCOL_VERSION,
    }
    latencies: list[float] = []

    def answer_of(r: httpx2.Response) -> dict:
        if r.headers.get("content-type", "").startswith("text/event-stream"):
            for line in r.text.splitlines():
                if line.startswith("data:"):
                    return json.loads(line[5:])
            raise SystemExit("an event stream with no data")
        return r.json()

    async def one(n: int, ready: anyio.Event) -> None:
        async with httpx2.AsyncClient(headers=headers, timeout=60) as c:
            hello = {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            }
            r = await c.post(http.url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello})
            session = {"mcp-session-id": r.headers["mcp-session-id"]} if "mcp-session-id" in r.headers else {}
            await c.post(http.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
            await ready.wait()
            end, i = time.perf_counter() + seconds, n * 37
            while time.perf_counter() < end:
                call = {"name": "memory_recall", "arguments": {"query": qs[i % len(qs)], "limit": 10}}
                t0 = time.perf_counter()
                r = await c.post(
                    http.url,
                    json={"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": call},
                    headers=session,
                )
                got = answer_of(r)
                latencies.append(time.perf_counter() - t0)
                if "result" not in got or got["result"].get("isError"):
                    raise SystemExit(f"raw recall failed: {str(got)[:300]}")
                i += 1

    return await timed_clients(f"http, {clients} raw clients", clients, one, 1.0 + clients * 0.1, cpu, latencies)


def first_id(store: Path) -> str:
    """The id of the first generated memory (read from its file: the generator decides ids)."""
    path = min((store / "memories").glob("*.md"))
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("id:"):
            return line.split(":", 1)[1].strip().strip("'\"")
    raise SystemExit(f"no id in {path}")


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


async def run(args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix="http-speed-"))
    store = work / "store"
    print(f"generating {args.size} memories ...", flush=True)
    generate(store, args.size)
    env = {"HOME": str(work), "PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO)}
    token_file = work / "token"
    proc, url = start_server(store, token_file, env, args.workers)
    try:
        http = Http(url, token_file.read_text().strip())
        async with http.client() as c:  # the cold index is built here, outside the timings
            t0 = time.perf_counter()
            await c.call_tool("memory_status", {})
            print(f"cold index over HTTP: {time.perf_counter() - t0:.1f} s", flush=True)
        qs = queries(500)
        print(f"load before: {uptime()}", flush=True)
        rows = [await stdio_level(store, env, qs, args.seconds)]
        cpu = CpuWindow(proc.pid)
        for n in (1, 4, 16):
            rows.append(await level(http, n, qs, args.seconds, cpu))
        rows.append(await level(http, 16, qs, args.seconds, cpu, read_id=first_id(store)))
        rows.append(await raw_level(http, 16, qs, args.seconds, cpu))
        if args.workers != 0:  # the same load on a server that answers every call itself, in the same run
            alone, alone_url = start_server(store, work / "token-alone", env, 0)
            try:
                http_alone = Http(alone_url, (work / "token-alone").read_text().strip())
                row = await raw_level(http_alone, 16, qs, args.seconds, CpuWindow(alone.pid))
                rows.append(row | {"what": row["what"] + ", --workers 0"})
            finally:
                alone.terminate()
                alone.wait(timeout=30)
        print(f"load after:  {uptime()}")
        workers = "the server's default" if args.workers is None else args.workers
        print(
            f"\n{args.size} memories, recall limit 10, {args.seconds:g} s per row; --workers {workers}; CPU = ms per call"
        )
        print(
            f"{'':<36}{'calls':>7}{'calls/s':>9}{'p50 ms':>9}{'p95 ms':>9}{'server CPU':>12}{'in workers':>12}"
            f"{'client CPU':>12}"
        )
        for r in rows:
            server = "-" if r["server_cpu"] is None else f"{r['server_cpu']:.2f}"
            workers = "-" if r.get("worker_cpu") is None else f"{r['worker_cpu']:.2f}"
            print(
                f"{r['what']:<36}{r['n']:>7}{r['rate']:>9.1f}{r['p50']:>9.1f}{r['p95']:>9.1f}"
                f"{server:>12}{workers:>12}{r['client_cpu']:>12.2f}"
            )
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
    p.add_argument("--workers", type=int, help="the server's --workers (default: its own default)")
    anyio.run(run, p.parse_args())


if __name__ == "__main__":
    main()
