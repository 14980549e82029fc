"""CLI edge: `memory-mcp [serve|recall|remember|read|status|context|reindex|config]`.

Exit codes: 0 ok, 1 `reindex --verify` found mismatches, 2 usage or input error.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pydantic import BaseModel

from .config import ConfigError, Settings, describe, load_settings
from .errors import InputError, MemoryMcpError
from .models import ReadAnswer, RecallAnswer, ReindexAnswer, RememberAnswer, StatusAnswer
from .service import MemoryService

EXIT_OK, EXIT_MISMATCH, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 too; keep its message, our wording
        self.print_usage(sys.stderr)
        print(f"memory-mcp: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="memory-mcp", description="Local, git-friendly long-term memory for AI agents (MCP, stdio).")
    p.add_argument("--store", type=Path, help="store directory (default: $MEMORY_MCP_ROOT or ~/.memory-mcp/default)")
    p.add_argument("--project-root", type=Path, help="the project root (local scope, project config)")
    p.add_argument("--config", type=Path, help="an extra TOML settings file, above the user and project files")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override one setting (repeatable)")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)
    sv = sub.add_parser("serve", help="serve the MCP tools over stdio (the default)")
    sv.add_argument("--ui-port", type=int, metavar="N", help="also serve the browser view on 127.0.0.1:N")

    u = sub.add_parser("ui", help="serve the browser view on 127.0.0.1 (URL printed on stderr)")
    u.add_argument("--port", type=int, default=5052, help="loopback port (default 5052; 0 picks a free one)")

    r = sub.add_parser("recall", help="search memories and print cited results")
    r.add_argument("query")
    r.add_argument("--limit", type=int, default=5)
    r.add_argument("--type")
    r.add_argument("--state")
    r.add_argument("--entity")
    r.add_argument("--include-deprecated", action="store_true")
    r.add_argument("--mode", choices=["auto", "bm25", "hybrid"], default="auto", help="ranking (default: auto)")
    r.add_argument("--scope", choices=["local", "global"], help="default: both (recall, read) or home")
    r.add_argument("--json", action="store_true", help="print the structured answer as JSON")

    m = sub.add_parser("remember", help="store a memory")
    m.add_argument("title")
    m.add_argument("body", nargs="?", help="body text; '-' or omitted reads standard input")
    m.add_argument("--type", default="fact")
    m.add_argument("--trust", default="user-stated")
    m.add_argument("--entity", action="append", dest="entities", default=[])
    m.add_argument("--source")
    m.add_argument("--review-after")
    m.add_argument("--supersedes", action="append", default=[])
    m.add_argument("--scope", choices=["local", "global"], help="default: both (recall, read) or home")
    m.add_argument("--json", action="store_true")

    d = sub.add_parser("read", help="print a memory by id or store-relative path")
    d.add_argument("target", help="an id, or a path such as memories/x.md")
    d.add_argument("--from-line", type=int)
    d.add_argument("--to-line", type=int)
    d.add_argument("--scope", choices=["local", "global"], help="default: both (recall, read) or home")
    d.add_argument("--json", action="store_true")

    s = sub.add_parser("status", help="counts, conflicts, reviews due, index health")
    s.add_argument("--scope", choices=["local", "global"], help="default: both (recall, read) or home")
    s.add_argument("--json", action="store_true")

    k = sub.add_parser("context", help="print the session-start context (what memory://context serves)")
    k.add_argument("--budget", type=int, metavar="BYTES", help="largest size in bytes (default: context.budget_bytes)")
    k.add_argument("--scope", choices=["local", "global"], help="default: both")
    k.add_argument("--json", action="store_true")

    x = sub.add_parser("reindex", help="rebuild the index from the Markdown files")
    x.add_argument("--verify", action="store_true", help="re-hash everything; exit 1 on any mismatch")
    x.add_argument("--scope", choices=["local", "global"], help="default: both (recall, read) or home")
    x.add_argument("--json", action="store_true")

    e = sub.add_parser("export", help="write MEMORY.md: active memories by type, newest first (never read back)")
    e.add_argument("--scope", choices=["local", "global"])
    e.add_argument("--to", type=Path, default=Path("."), help="directory to write MEMORY.md into (default: here)")

    # the same options after the subcommand; SUPPRESS keeps them from clobbering the top-level ones
    c = sub.add_parser("config", help="print every effective setting and the layer it came from")
    c.add_argument("--project-root", dest="config_project_root", type=Path, default=argparse.SUPPRESS)
    c.add_argument("--config", dest="config_path", type=Path, default=argparse.SUPPRESS)
    c.add_argument("--set", dest="config_set", action="append", metavar="KEY=VALUE", default=argparse.SUPPRESS)
    c.add_argument("--json", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "config":
        return _config(args)
    try:
        settings = load_cli_settings(args)
    except ConfigError as exc:
        print(f"memory-mcp: {exc}", file=sys.stderr)
        return EXIT_USAGE
    # one service per process: the MCP tools, the browser view and the CLI commands share its locks
    service = MemoryService.from_settings(settings, args.store)
    if args.command in (None, "serve"):
        from .server import serve  # the MCP SDK is only imported when serving

        ui = _start_ui(service, args.ui_port) if getattr(args, "ui_port", None) is not None else None
        try:
            serve(service)
        finally:
            if ui is not None:
                ui.stop()
        return EXIT_OK
    if args.command == "ui":
        return _ui(service, args.port)
    try:
        return _run(service, args)
    except MemoryMcpError as exc:
        print(f"memory-mcp: {exc}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        service.close()


def _start_ui(service: MemoryService, port: int):
    """The browser view beside the MCP server, in a thread; the URL goes to stderr (stdout is MCP's)."""
    from .web import make_server

    try:
        ui = make_server(service, port).start()
    except MemoryMcpError as exc:
        print(f"memory-mcp: {exc}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE) from None
    print(f"memory-mcp: browser view at {ui.url}", file=sys.stderr, flush=True)
    return ui


def _ui(service: MemoryService, port: int) -> int:
    from .web import make_server

    try:
        ui = make_server(service, port)
        print(f"memory-mcp: browser view at {ui.url} (Ctrl-C to stop)", file=sys.stderr, flush=True)
        ui.serve_forever()
    except MemoryMcpError as exc:
        print(f"memory-mcp: {exc}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        service.close()
    return EXIT_OK


def _run(service: MemoryService, args: argparse.Namespace) -> int:
    if args.command == "recall":
        answer = service.recall(
            args.query,
            args.limit,
            args.type,
            args.state,
            args.entity,
            args.include_deprecated,
            scope=args.scope,
            mode=args.mode,
        )
        _emit(answer, args.json, _recall_text)
    elif args.command == "remember":
        body = args.body if args.body not in (None, "-") else sys.stdin.read()
        answer = service.remember(
            args.title,
            body,
            args.type,
            args.trust,
            args.entities,
            args.source,
            args.review_after,
            args.supersedes,
            scope=args.scope,
        )
        _emit(answer, args.json, _remember_text)
    elif args.command == "read":
        is_path = "/" in args.target or args.target.endswith(".md")
        answer = service.read(
            id=None if is_path else args.target,
            path=args.target if is_path else None,
            from_line=args.from_line,
            to_line=args.to_line,
            scope=args.scope,
        )
        _emit(answer, args.json, _read_text)
    elif args.command == "export":
        answer = service.export(scope=args.scope)
        if not args.to.is_dir():
            raise InputError(f"--to: '{args.to}' is not a directory")
        target = args.to / "MEMORY.md"
        target.write_text(answer.text, encoding="utf-8")
        print(f"wrote {target}: {answer.memories} active memories ({', '.join(answer.scopes)})")
    elif args.command == "status":
        _emit(service.status(scope=args.scope), args.json, _status_text)
    elif args.command == "context":
        _emit(service.context(scope=args.scope, budget=args.budget), args.json, lambda a: a.text.rstrip("\n"))
    elif args.command == "reindex":
        answer = service.reindex(verify=args.verify, scope=args.scope)
        _emit(answer, args.json, _reindex_text)
        return EXIT_MISMATCH if answer.mismatches else EXIT_OK
    return EXIT_OK


def load_cli_settings(args: argparse.Namespace) -> Settings:
    """Settings from the global options, and from the `config` subcommand's own copies of them when given."""
    return load_settings(
        project_root=getattr(args, "config_project_root", None) or args.project_root,
        config_path=getattr(args, "config_path", None) or args.config,
        overrides=[*args.set, *getattr(args, "config_set", [])],
    )


def _config(args: argparse.Namespace) -> int:
    try:
        settings = load_cli_settings(args)
    except ConfigError as exc:
        print(f"memory-mcp: {exc}", file=sys.stderr)
        return EXIT_USAGE
    rows = describe(settings)
    if args.json:
        root = settings.project_root
        out = {"project_root": str(root) if root else None, "layers": list(settings.layers), "settings": rows}
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return EXIT_OK
    print("# layers, lowest first: " + "; ".join(settings.layers))
    width = max(len(r["key"]) for r in rows)
    for r in rows:
        value = json.dumps(r["value"], ensure_ascii=False)
        print(f"{r['key']:<{width}} = {value}  # {r['origin']}")
    return EXIT_OK


def _emit(answer: BaseModel, as_json: bool, render) -> None:
    print(answer.model_dump_json(indent=2) if as_json else render(answer))


def _recall_text(a: RecallAnswer) -> str:
    lines = []
    for n, r in enumerate(a.results, 1):
        tag = "" if r.state == "active" else f" [{r.state}]"
        lines.append(f"{n}. {r.title}{tag}  ({r.type}, score {r.score:.3f})")
        lines.append(f"   {r.path}:{r.line}")
        lines.append(f"   {r.excerpt}")
    if not a.results:
        lines.append("no results" if a.query.strip() else "empty query: nothing to search for")
    lines += [f"-- collapsed {c.dropped_id} into {c.kept_id} ({c.reason})" for c in a.collapsed]
    lines.append(f"-- mode: {a.mode}" + (f" ({a.semantic_note})" if a.semantic_note else ""))
    lines.extend(_index_lines(a.index))
    return "\n".join(lines)


def _index_lines(index) -> list[str]:
    rec = index.reconcile
    out = [
        f"-- reconcile: scanned {rec.scanned}, hashed {rec.hashed}, reindexed {rec.reindexed}, "
        f"removed {rec.removed}, unparseable {rec.unparseable}"
        + (f" (rebuilt: {rec.rebuild_reason})" if rec.rebuilt else "")
    ]
    out += [f"-- unparseable: {u.path}: {u.reason}" for u in index.unparseable]
    out += [f"-- unresolved conflict {c.pair_hash}: {c.a_title} <> {c.b_title}" for c in index.unresolved_conflicts]
    return out


def _remember_text(a: RememberAnswer) -> str:
    head = f"{'created' if a.created else 'already remembered'} {a.id} at {a.path}"
    lines = [head] + [f"superseded {i}" for i in a.superseded]
    for c in a.conflicts:
        lines.append(
            f"possible conflict {c.pair_hash} with {c.id} ({c.title}); shared {c.shared_entities}, "
            f"similarity {c.text_similarity}, {c.days_apart} days apart, latest_wins_eligible={c.latest_wins_eligible}"
        )
    return "\n".join(lines)


def _read_text(a: ReadAnswer) -> str:
    lines = [f"# {a.path} (lines {a.from_line}-{a.to_line} of {a.total_lines})", a.text]
    if a.supersedes_chain:
        lines.append("supersedes: " + " <- ".join(f"{c.id} [{c.state}]" for c in a.supersedes_chain))
    if a.superseded_by_chain:
        lines.append("superseded by: " + " -> ".join(f"{c.id} [{c.state}]" for c in a.superseded_by_chain))
    return "\n".join(lines)


def _status_text(a: StatusAnswer) -> str:
    lines = [
        f"store {a.store} at {a.root}: {a.total} memories",
        f"  by state: {a.by_state}",
        f"  by type:  {a.by_type}",
        f"  by trust: {a.by_trust}",
        f"  handoff: {a.handoff.title} ({a.handoff.path})" if a.handoff else "  handoff: none",
        f"  unresolved conflicts: {a.unresolved_conflicts_total}",
        f"  review due: {len(a.review_due)}",
        f"  compaction candidates: {len(a.compaction_candidates)}",
        f"  unparseable: {len(a.unparseable)}",
        f"  index: {a.index.path}, {a.index.size_bytes} bytes, schema {a.index.schema_version}",
    ]
    lines += [f"  ! {u.path}: {u.reason}" for u in a.unparseable]
    return "\n".join(lines)


def _reindex_text(a: ReindexAnswer) -> str:
    lines = [f"reindexed {a.memories} memories from {a.files} files in {a.seconds:.3f}s"]
    if a.embedded or a.semantic_note:
        note = f" ({a.semantic_note})" if a.semantic_note else ""
        lines.append(f"embedded {a.embedded} memories for hybrid search{note}")
    lines += [f"unparseable {u.path}: {u.reason}" for u in a.unparseable]
    if a.verified:
        lines.append(f"verify: {len(a.mismatches)} mismatch(es)")
        lines += [f"  {m.path}: {m.problem}" for m in a.mismatches]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
