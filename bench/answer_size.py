"""Bytes the model sees: the tool surface, a recall's text content, and the session-start context.

One command, run from a checkout:

    python bench/answer_size.py                  # the example store, 5 results, the default queries
    python bench/answer_size.py --json           # the same figures as JSON

It copies `example_store/` to a temporary folder, starts the real stdio server on it
(`python -m memory_mcp --store <copy>`) and talks to it with the MCP SDK's client, exactly as a client
does, then prints:

- tool surface: for every tool of `tools/list`, the UTF-8 bytes of `{"name", "description",
  "inputSchema"}` as JSON (what a client puts in front of the model), compact and with `json.dumps`'
  default spacing (how issue 10 counted its 11.3 KB), their sums, and apart from
  it the bytes of the `outputSchema`s (kept for structured clients; most clients do not show them to
  the model);
- recall text: the UTF-8 bytes of the text content (the `content` blocks, what the model reads) and of
  the structured content (compact JSON) of `memory_recall(query, limit=5)` for each query, after one
  warm-up call so the index is built and the answer is the everyday one;
- context: the bytes of the `memory://context` resource and of the `memory_start` prompt, when the
  server offers them.

Every figure is measured on this run; nothing is read from benchmark data.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import mcp

REPO = Path(__file__).resolve().parent.parent
QUERIES = ("postgres backup", "atlas deploy", "alice indentation", "보안 설정", "facturación marco")


def _bytes(value: Any, compact: bool = True) -> int:
    seps = (",", ":") if compact else (", ", ": ")  # json.dumps' default spacing: how issue 10 counted 11.3 KB
    return len(json.dumps(value, ensure_ascii=False, separators=seps).encode("utf-8"))


def _text_bytes(blocks: list[Any]) -> int:
    return sum(len(getattr(b, "text", "").encode("utf-8")) for b in blocks)


async def measure(store: Path, queries: tuple[str, ...], limit: int) -> dict[str, Any]:
    params = mcp.StdioServerParameters(
        command=sys.executable,
        args=["-m", "memory_mcp", "--store", str(store)],
        env={"HOME": str(store.parent), "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"},
        cwd=str(store.parent),
    )
    out: dict[str, Any] = {"tools": {}, "recall": {}}
    async with mcp.Client(params) as client:
        listed = await client.list_tools()
        for tool in listed.tools:
            wire = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
            seen = {k: wire[k] for k in ("name", "description", "inputSchema") if k in wire}
            out["tools"][tool.name] = {
                "model": _bytes(seen),
                "spaced": _bytes(seen, compact=False),
                "output_schema": _bytes(wire.get("outputSchema")),
            }
        out["tool_surface_bytes"] = sum(t["model"] for t in out["tools"].values())
        out["tool_surface_spaced_bytes"] = sum(t["spaced"] for t in out["tools"].values())
        out["output_schema_bytes"] = sum(t["output_schema"] for t in out["tools"].values())
        await client.call_tool("memory_status", {})  # warm-up: builds the index once
        for query in queries:
            r = await client.call_tool("memory_recall", {"query": query, "limit": limit})
            out["recall"][query] = {
                "results": len((r.structured_content or {}).get("results", [])),
                "text": _text_bytes(r.content),
                "structured": _bytes(r.structured_content),
            }
        texts = [v["text"] for v in out["recall"].values()]
        out["recall_text_mean"] = round(sum(texts) / len(texts))
        out["recall_text_max"] = max(texts)
        resources = (await client.list_resources()).resources
        out["resources"] = [str(r.uri) for r in resources]
        if any(str(r.uri) == "memory://context" for r in resources):
            read = await client.read_resource("memory://context")
            out["context_bytes"] = sum(len(c.text.encode("utf-8")) for c in read.contents)
        prompts = (await client.list_prompts()).prompts
        out["prompts"] = [p.name for p in prompts]
        if any(p.name == "memory_start" for p in prompts):
            got = await client.get_prompt("memory_start")
            out["prompt_bytes"] = sum(len(m.content.text.encode("utf-8")) for m in got.messages)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=5)
    ap.add_argument("--query", action="append", help="a recall query (repeatable; default: five built-in ones)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="answer-size-") as tmp:
        store = Path(tmp) / "store"
        shutil.copytree(REPO / "example_store", store, ignore=shutil.ignore_patterns(".index"))
        figures = anyio.run(measure, store, tuple(args.query or QUERIES), args.limit)
    if args.json:
        print(json.dumps(figures, ensure_ascii=False, indent=2))
        return 0
    print("tool surface (name + description + inputSchema as JSON, UTF-8 bytes: compact / json.dumps spacing):")
    for name, t in figures["tools"].items():
        print(f"  {name:<16} {t['model']:>6} / {t['spaced']:>6}   outputSchema {t['output_schema']:>6}")
    total, spaced = figures["tool_surface_bytes"], figures["tool_surface_spaced_bytes"]
    print(f"  {'total':<16} {total:>6} / {spaced:>6}   outputSchema {figures['output_schema_bytes']:>6}")
    print(f"recall, limit {args.limit} (text content / structured content, bytes):")
    for query, r in figures["recall"].items():
        print(f"  {query!r:<24} {r['results']} results  text {r['text']:>6}  structured {r['structured']:>6}")
    print(f"  text mean {figures['recall_text_mean']}, max {figures['recall_text_max']}")
    print(f"resources: {figures['resources'] or 'none'}; prompts: {figures['prompts'] or 'none'}")
    if "context_bytes" in figures:
        print(f"  memory://context {figures['context_bytes']} bytes")
    if "prompt_bytes" in figures:
        print(f"  memory_start prompt {figures['prompt_bytes']} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
