"""CLI edge: `memory-mcp [serve|ui|recall|remember|read|update|forget|status|context|reindex|export|import|config|
sync|git-setup|merge-driver]`.

Exit codes: 0 ok, 1 `reindex --verify` found mismatches or git reported a failure during `sync`, 2 usage or
input error.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import memory_mcp

from ..config import ConfigError, Settings, describe, load_settings
from ..domain import provenance
from ..domain.errors import InputError, MemoryMcpError
from ..domain.fields import BY_NAME, EDIT_VALUES
from ..domain.memory import OptionalValues
from ..domain.visible import quarantine_label, visible, visible_data
from ..domain.vocabulary import FORGET_MODES, RECALL_MODES, RESOLUTIONS, SCOPES, STATES, TRUSTS, TYPES, UPDATE_OPS
from ..importers import FORMATS
from ..tools.service import MemoryService
from ..tools.workers import MAX_DEFAULT_WORKERS, default_workers
from .answer_text import result_marks, weak_results_note

if TYPE_CHECKING:
    from pydantic import BaseModel
    from tqdm import tqdm

    from ..domain.answers import RecallAnswer
    from ..domain.models import (
        ChainLink,
        ForgetAnswer,
        Progress,
        QuarantineAnswer,
        ReadAnswer,
        ReindexAnswer,
        RememberAnswer,
        StatusAnswer,
        SyncAnswer,
        UpdateAnswer,
    )
    from ..importers.run import ImportAnswer

EXIT_OK, EXIT_MISMATCH, EXIT_USAGE = 0, 1, 2
EXIT_GIT_FAILED = 1
EXIT_INTERRUPTED = 130  # what a shell reports for a command Ctrl-C stopped

# the commands that make one service call and exit (what hooks and scripts run): no change watch is opened for
# them, since no later call of the process could skip its scan (`CanonWatch`). serve, ui, import (one call per
# memory), sync and reindex keep it.
ONE_CALL = frozenset(
    {"recall", "read", "status", "context", "quarantine", "release", "update", "forget", "remember", "export"}
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 too; keep its message, our wording
        self.print_usage(sys.stderr)
        print(f"memory-mcp: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


# The options every command takes. They are accepted before and after the subcommand: the copies after it
# go to `after_*` (SUPPRESS: absent unless given), and _merge_global_options lets them win (--set adds up).
GLOBAL_OPTIONS = ("store", "project_root", "config", "set")


def _path(value: str) -> Path:
    """A path option's value: an empty one (say, `--store "$UNSET_VARIABLE"`) is refused, never read as '.'."""
    if not value.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return Path(value)


def _global_options(parser: argparse.ArgumentParser, after: bool) -> None:
    def dest(name: str) -> dict:
        return {"dest": f"after_{name}", "default": argparse.SUPPRESS} if after else {"dest": name}

    parser.add_argument(
        "--store",
        type=_path,
        metavar="DIR",
        help="the account (global) store directory (default: $MEMORY_MCP_ROOT, else the scopes.global_root "
        "setting, else ~/.memory-mcp/default)",
        **dest("store"),
    )
    parser.add_argument(
        "--project-root",
        type=_path,
        metavar="DIR",
        help="bind a project: its store <DIR>/.memory is the local scope, <DIR>/.memory/config.toml its settings",
        **dest("project_root"),
    )
    parser.add_argument(
        "--config",
        type=_path,
        metavar="PATH",
        help="an extra TOML settings file, above the user and project files",
        **dest("config"),
    )
    parser.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override one setting, e.g. --set recall.default_limit=10 (repeatable; see `memory-mcp config`)",
        **({"dest": "after_set", "default": argparse.SUPPRESS} if after else {"dest": "set", "default": []}),
    )


def _scope_option(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument(
        "--scope",
        choices=SCOPES,
        help="local = the bound project's store (<project-root>/.memory), global = the account store "
        f"(--store). Default: {default}",
    )


def _json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the structured answer as JSON (for scripts)")


# the options that mean something only with `serve --http` (refused without it rather than ignored)
HTTP_ONLY = (
    "--host", "--port", "--token-file", "--allow-remote", "--allow-host", "--allow-origin", "--public-url", "--no-auth",
    "--workers", "--oauth-issuer", "--oauth-introspect", "--oauth-client-file", "--oauth-scope",
)  # fmt: skip


def _http_options(parser: argparse.ArgumentParser) -> None:
    h = parser.add_argument_group("over HTTP (Streamable HTTP at /mcp; README: 'Serving over HTTP')")
    h.add_argument("--http", action="store_true", help="serve MCP over HTTP instead of stdio")
    h.add_argument("--host", help="address to listen on (default: 127.0.0.1)")
    h.add_argument("--port", type=int, metavar="N", help="TCP port (default: 8765; 0 picks a free one)")
    h.add_argument(
        "--token-file",
        type=Path,
        metavar="PATH",
        help="the bearer token file, created (0600) when missing (default: http-token beside the user config file)",
    )
    h.add_argument(
        "--allow-remote", action="store_true", help="allow a --host that is not a loopback address (use TLS in front)"
    )
    h.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="also accept this Host header, e.g. memory.example.org (repeatable; default: loopback names only)",
    )
    h.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="URL",
        help="also accept this Origin header, e.g. https://app.example.org (repeatable)",
    )
    h.add_argument(
        "--public-url",
        metavar="URL",
        help="the base URL clients use (behind a proxy), e.g. https://memory.example.org; named in the metadata",
    )
    h.add_argument("--no-auth", action="store_true", help="no bearer token (loopback only; any local process can call)")
    h.add_argument(
        "--oauth-issuer",
        metavar="URL",
        help="also accept access tokens of this OAuth authorization server (named in the metadata document)",
    )
    h.add_argument(
        "--oauth-introspect",
        metavar="URL",
        help="its RFC 7662 token introspection endpoint (https unless on loopback); needs --oauth-issuer",
    )
    h.add_argument(
        "--oauth-client-file",
        type=Path,
        metavar="PATH",
        help="a 0600 file holding client_id:client_secret, sent to the introspection endpoint (HTTP Basic)",
    )
    h.add_argument(
        "--oauth-scope",
        action="append",
        default=[],
        metavar="SCOPE",
        help="a scope every token must hold (repeatable; the server's own token holds them all)",
    )
    h.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help=f"processes that answer keyword recalls side by side (default: {default_workers()}, the CPUs up to "
        f"{MAX_DEFAULT_WORKERS}; 0: every call in the serving process)",
    )


class _Unbuilt:
    """A command's parser left out (`build_parser(only=...)`): what the builders add to it goes nowhere."""

    def add_argument(self, *args: object, **kwargs: object) -> None:
        return None

    def add_argument_group(self, *args: object, **kwargs: object) -> _Unbuilt:
        return self


# the global options that take a value: the words after them are not the command
_VALUED_GLOBALS = ("--store", "--project-root", "--config", "--set")


def _command_word(argv: list[str]) -> str | None:
    """The command `argv` names when it can be told without the parser (only value-taking global options,
    spelled in full, before it); None otherwise (`--help`, `-V`, an abbreviated option, no command)."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word in _VALUED_GLOBALS:
            i += 2
        elif word.partition("=")[0] in _VALUED_GLOBALS:
            i += 1
        else:
            return None if word.startswith("-") else word
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; `only`: with that command's parser alone (a one-shot call parses one command:
    building all of them cost ~4 ms of CPU), or all of them when `only` names none."""
    p = _Parser(
        prog="memory-mcp",
        description="Local, git-friendly long-term memory for AI agents (MCP over stdio or HTTP).",
        epilog="Global options (--store, --project-root, --config, --set) go before or after the command; "
        "given in both places, the one after the command wins (--set values add up).",
    )
    p.add_argument("-V", "--version", action="version", version=f"memory-mcp {memory_mcp.__version__}")
    _global_options(p, after=False)
    # prog given: argparse would otherwise build a help formatter (and import shutil) to compute the same name
    sub = p.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND", prog=p.prog)

    def command(name: str, help: str) -> argparse.ArgumentParser:
        if only is not None and name != only:
            return _Unbuilt()  # type: ignore[return-value]
        c = sub.add_parser(name, help=help, description=help)
        _global_options(c, after=True)
        return c

    both, home = "both scopes (local first) when a project is bound", "local when a project is bound, else global"
    sv = command("serve", "serve the MCP tools over stdio (the default command), or over HTTP with --http")
    sv.add_argument("--ui-port", type=int, metavar="N", help="also serve the browser view on 127.0.0.1:N")
    _http_options(sv)

    u = command("ui", "serve the browser view on 127.0.0.1 (URL printed on stderr)")
    u.add_argument(
        "--port", type=int, default=5052, metavar="N", help="loopback port (default: 5052; 0 picks a free one)"
    )

    r = command("recall", "search memories and print cited results")
    r.add_argument("query", help="plain words in any language (no search syntax)")
    r.add_argument(
        "--limit", type=int, metavar="N", help="how many results, 1-20 (default: 5); with --budget, up to 20"
    )
    r.add_argument(
        "--budget",
        type=int,
        metavar="BYTES",
        help="fill results best first while their title, path:line and excerpt fit in BYTES (UTF-8, at least 256)",
    )
    r.add_argument("--type", choices=TYPES, help="only memories of this type (default: any)")
    r.add_argument("--state", choices=STATES, help="only memories in this state (default: any but deprecated)")
    r.add_argument("--entity", metavar="E", help="only memories about this entity")
    r.add_argument("--include-deprecated", action="store_true", help="rank deprecated memories too")
    r.add_argument("--mode", choices=RECALL_MODES, default="auto", help="ranking (default: auto)")
    r.add_argument("--as-of", metavar="YYYY-MM-DD", help="what the store held as current on that day")
    _scope_option(r, both)
    _json_option(r)

    m = command("remember", "store a memory (creates the store if there is none yet)")
    m.add_argument("title", help="one-line title; becomes the file's `# heading`")
    m.add_argument("body", nargs="?", help="body text; '-' or omitted reads standard input")
    m.add_argument("--type", choices=TYPES, default="fact", help="(default: fact)")
    m.add_argument("--trust", choices=TRUSTS, default="user-stated", help="(default: user-stated)")
    m.add_argument(
        "--entity", action="append", dest="entities", default=[], metavar="E", help="what it is about (repeatable)"
    )
    m.add_argument("--source", metavar="S", help="where it came from (a conversation, a URL, a file)")
    for spec in map(BY_NAME.get, EDIT_VALUES):
        m.add_argument(spec.flag, metavar=spec.metavar, help=spec.help)
    m.add_argument("--supersedes", action="append", default=[], metavar="ID", help="an id it replaces (repeatable)")
    m.add_argument(
        "--private",
        action="store_true",
        help="keep it on this machine (`sync: local`): never synced, may hold a secret",
    )
    _scope_option(m, home)
    _json_option(m)

    d = command("read", "print a memory by id or store-relative path")
    d.add_argument("target", help="an id, or a path such as memories/x.md")
    d.add_argument("--from-line", type=int, metavar="N", help="first line to print (default: 1)")
    d.add_argument("--to-line", type=int, metavar="N", help="last line to print (default: the end, at most 200 lines)")
    _scope_option(d, both)
    _json_option(d)

    st = command("status", "counts, conflicts, reviews due, index health")
    _scope_option(st, home)
    _json_option(st)

    k = command("context", "print the session-start context (what memory://context serves)")
    k.add_argument(
        "--budget", type=int, metavar="BYTES", help="largest size in bytes (default: the context.budget_bytes setting)"
    )
    _scope_option(k, both)
    _json_option(k)

    x = command("reindex", "rebuild the index from the Markdown files (progress on a terminal)")
    x.add_argument("--verify", action="store_true", help="re-hash everything first; exit 1 on any mismatch")
    _scope_option(x, "every scope")
    _json_option(x)

    e = command("export", "write MEMORY.md: active memories by type, newest first (never read back)")
    _scope_option(e, "every scope")
    e.add_argument(
        "--to", type=_path, default=Path("."), metavar="DIR", help="directory to write MEMORY.md into (default: .)"
    )
    e.add_argument("--force", action="store_true", help="replace a MEMORY.md that memory-mcp export did not write")
    _json_option(e)

    q = command("quarantine", "list the memories the poisoning screen held back, with why (a person reviews them)")
    _scope_option(q, both)
    _json_option(q)
    rl = command("release", "take a memory out of quarantine after reading it (people only: no MCP tool can)")
    rl.add_argument("id", help="the memory's id (memory-mcp quarantine lists them)")
    _scope_option(rl, both)
    _json_option(rl)

    c = command("config", "print every effective setting and the layer it came from")
    _json_option(c)
    _change_commands(command)
    _import_command(command)

    y = command("sync", "exchange memories with a git remote: commit, fetch, merge memory by memory, push")
    y.add_argument("--init", metavar="URL", help="make the store a git repository with this remote (first time)")
    y.add_argument("--remote", default="origin", metavar="NAME", help="the remote (default: origin)")
    y.add_argument("--branch", metavar="NAME", help="the branch (default: the current one, else main)")
    y.add_argument("--no-push", action="store_true", help="commit and merge, but do not push")
    _scope_option(y, home)
    _json_option(y)

    g = command("git-setup", "make git merge this store's memory files field by field (.gitattributes, git config)")
    _scope_option(g, home)
    _json_option(g)

    command("merge-driver", "the git merge driver (git runs it: merge-driver %%O %%A %%B %%P)").add_argument(
        "files", nargs=4, metavar="F", help="base, ours, theirs, path"
    )
    if only is not None and only not in sub.choices:
        return build_parser()
    return p


# ---------------------------------------------------------------- update and forget (the tools' parity)


def _cli_word(word: str) -> str:
    """A tool's argument word as the CLI spells it (set_state -> set-state); `_tool_word` reads it back."""
    return word.replace("_", "-")


def _tool_word(word: str | None) -> str | None:
    return None if word is None else word.replace("-", "_")


def _change_commands(command) -> None:
    """`update OP ID` and `forget MODE ID`: memory_update and memory_forget with the same rules and messages
    (a field the op does not take is refused by the service, naming the op and the fields it takes)."""
    u = command("update", "change a memory: edit, supersede, set-state, link, resolve-conflict (as memory_update)")
    u.add_argument("op", choices=[_cli_word(op) for op in UPDATE_OPS], help="what to change")
    u.add_argument("id", help="the memory's id")
    u.add_argument("--title", help="edit: the new title")
    u.add_argument("--body", help="edit: the new body ('-' reads standard input)")
    u.add_argument("--type", choices=TYPES, help="edit: the new type")
    u.add_argument("--trust", choices=TRUSTS, help="edit: the new trust")
    u.add_argument(
        "--entity", action="append", dest="entities", metavar="E", help="edit: the entities, all of them (repeatable)"
    )
    u.add_argument("--source", help="edit: where it came from")
    for spec in map(BY_NAME.get, EDIT_VALUES):
        u.add_argument(spec.flag, metavar=spec.metavar, help=f"edit: {spec.help} ('' clears it)")
    u.add_argument("--expected-sha256", metavar="HEX", help="edit: refuse if the file changed since it was read")
    u.add_argument("--by", metavar="ID", help="supersede: the id of the memory replacing this one")
    u.add_argument("--state", choices=STATES, help="set-state: the target state")
    u.add_argument("--reason", help="set-state: why (needed to deprecate, and to reactivate a deprecated memory)")
    u.add_argument(
        "--other-id", metavar="ID", help="link: the related memory; resolve-conflict: the other memory of a listed pair"
    )
    u.add_argument("--pair-hash", metavar="HASH", help="resolve-conflict: the conflict (as remember or status give it)")
    u.add_argument("--resolution", choices=[_cli_word(r) for r in RESOLUTIONS], help="resolve-conflict: the decision")
    u.add_argument("--winner", metavar="ID", help="resolve-conflict with supersede: the memory that stays")
    u.add_argument("--note", help="resolve-conflict: a note kept with the resolution")
    _scope_option(u, "whichever scope holds the id")
    _json_option(u)

    f = command("forget", "archive, deprecate (with --reason) or purge (with --confirm) a memory (as memory_forget)")
    f.add_argument("mode", choices=FORGET_MODES, help="archive: kept, ranked lower; deprecate: hidden; purge: deleted")
    f.add_argument("id", help="the memory's id")
    f.add_argument("--reason", help="deprecate: why (required)")
    f.add_argument("--confirm", action="store_true", help="purge: really delete the file (only archived or deprecated)")
    _scope_option(f, "whichever scope holds the id")
    _json_option(f)


def _run_change(service: MemoryService, args: argparse.Namespace, scope: str | None) -> int:
    if args.command == "forget":
        answer = service.forget(args.id, args.mode, args.reason, args.confirm, scope=scope)
        _emit(answer, args.json, _forget_text)
        return EXIT_OK
    body = sys.stdin.read() if args.body == "-" else args.body
    answer = service.update(
        _tool_word(args.op), args.id, title=args.title, body=body, type=args.type, trust=args.trust,
        entities=args.entities, source=args.source, state=args.state, reason=args.reason, by=args.by,
        other_id=args.other_id, pair_hash=args.pair_hash, resolution=_tool_word(args.resolution), winner=args.winner,
        note=args.note, expected_sha256=args.expected_sha256, scope=scope, values=_values(args), origin=provenance.CLI,
    )  # fmt: skip
    _emit(answer, args.json, _update_text)
    return EXIT_OK


def _values(args: argparse.Namespace) -> OptionalValues:
    """The optional values given as flags (`--review-after`, `--valid-until`, ...)."""
    return OptionalValues(**{name: getattr(args, name) for name in EDIT_VALUES})


def _update_text(a: UpdateAnswer) -> str:
    changed = f" (files changed: {', '.join(a.changed)})" if len(a.changed) > 1 else ""
    return f"{_cli_word(a.op)} {a.id}: {a.message}{changed}\n  {a.path} [{a.state}]"


def _forget_text(a: ForgetAnswer) -> str:
    return f"{a.mode} {a.id}: {a.message}" + (f"\n  {a.path} [{a.state}]" if a.state else "")


# ---------------------------------------------------------------- import


def _import_command(command) -> None:
    i = command("import", "bring in memories kept by another tool (trust: imported; the same input twice adds nothing)")
    i.add_argument("format", choices=FORMATS, help="the input's format (see the README's 'Coming from...')")
    i.add_argument("path", type=Path, help="the file or folder to import")
    i.add_argument(
        "--dry-run", action="store_true", help="show what would be created (counts, a sample); write nothing"
    )
    _scope_option(i, "local when a project is bound, else global")
    _json_option(i)


def _run_import(service: MemoryService, args: argparse.Namespace) -> int:
    from ..importers.run import apply_import, dry_run, plan_import  # the importers load only for `import`

    plan = plan_import(service, args.format, args.path, scope=args.scope)
    if args.dry_run:
        answer = dry_run(plan)
    else:
        with TerminalProgress() as progress:
            answer = apply_import(service, plan, progress=progress)
    _emit(answer, args.json, _import_text)
    return EXIT_OK


def _import_text(a: ImportAnswer) -> str:
    kinds = ", ".join(f"{n} {t}" for t, n in a.by_type.items())
    verb = "would import" if a.dry_run else "imported"
    lines = [f"{verb} {_count(a.to_create, 'memory', 'memories')}" + (f" ({kinds})" if kinds else "")
             + f" from {a.path} ({a.format})"]  # fmt: skip
    lines.append(
        f"  already present: {a.already_present}; repeated in the input: {a.repeated_in_input}; "
        f"links: {a.links} {'to write' if a.dry_run else 'written'}"
        + (f", {a.links_present} already there" if a.links_present else "")
    )
    if a.new_store:
        lines.append(f"  {'would create' if a.dry_run else 'created'} a new store at {a.new_store}")
    if a.sample:
        lines.append("  sample:" if a.dry_run else "  first created:")
        lines += [f"    {m.type:<10} {m.title}  <- {m.source}" for m in a.sample]
    lines += [f"  skipped {p.where}: {p.reason}" for p in a.problems]
    lines += [f"  not kept: {d}" for d in a.dropped]
    for c in a.conflicts:
        lines.append(f"  conflict written {c.pair_hash}: {c.title} ({c.id}) <> {c.other_title} ({c.other_id})")
        lines += [f"    because {r}" for r in c.reasons]
    if a.conflicts:
        lines.append(
            "-- settle each: `memory-mcp update resolve-conflict ID --other-id OTHER --resolution supersede` (ID"
            " replaces OTHER) or `--resolution keep-both` (not a conflict)"
        )
    if a.dry_run:
        lines.append("-- dry run: nothing was written")
    return "\n".join(lines)


def _merge_global_options(args: argparse.Namespace) -> argparse.Namespace:
    """Fold the copies of the global options given after the subcommand into the ones before it."""
    for name in GLOBAL_OPTIONS:
        after = f"after_{name}"
        if not hasattr(args, after):
            continue
        value = getattr(args, after)
        delattr(args, after)
        setattr(args, name, [*args.set, *value] if name == "set" else value)
    return args


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:  # `memory-mcp status | head`: the reader left; not an error worth a traceback
        sys.stdout = open(os.devnull, "w")  # keeps the interpreter's final flush of stdout quiet
        return EXIT_OK
    finally:
        if argv is None:
            # the program's own call (the console script, `python -m memory_mcp`): the process ends with it, so the
            # interpreter's last collections need not walk every object it made (~15 ms of CPU, ~15% of a one-shot
            # recall); atexit handlers, stream flushes and thread joins run as before
            gc.freeze()


def _main(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["merge-driver"]:
        from .merge_driver import main as merge_driver

        return merge_driver(argv[1:])
    args = _merge_global_options(build_parser(_command_word(argv)).parse_args(argv))
    try:
        settings = load_cli_settings(args)
    except ConfigError as exc:
        print(f"memory-mcp: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.command == "config":
        return _config(settings, args.json)
    # one service per process: the MCP tools, the browser view and the CLI commands share its locks
    service = MemoryService.from_settings(settings, one_call=args.command in ONE_CALL)
    if args.command in (None, "serve"):
        from .server import serve  # the MCP SDK is only imported when serving

        if sys.stdin.isatty():  # a person typed `memory-mcp`: say what is waiting on the terminal
            print(
                "memory-mcp: an MCP server on stdio, waiting for a client on standard input "
                "(Ctrl-D to stop); `memory-mcp --help` lists the commands",
                file=sys.stderr,
                flush=True,
            )
        ui = _start_ui(service, args.ui_port) if getattr(args, "ui_port", None) is not None else None
        try:
            if getattr(args, "http", False):
                return _serve_http(service, args)
            given = [
                o for o in HTTP_ONLY if getattr(args, o.lstrip("-").replace("-", "_"), None) not in (None, False, [])
            ]
            if given:
                print(f"memory-mcp: {', '.join(given)}: only with --http", file=sys.stderr)
                return EXIT_USAGE
            serve(service)
        finally:
            if ui is not None:
                ui.stop()
        return EXIT_OK
    try:
        if args.command == "ui":
            service.scope_for_reading()  # browsing never creates a store
            return _ui(service, args.port)
        return _run(service, args)
    except KeyboardInterrupt:  # a Ctrl-C outside a step that must finish: one line, no traceback
        print("memory-mcp: interrupted (Ctrl-C)", file=sys.stderr)
        return EXIT_INTERRUPTED
    except MemoryMcpError as exc:
        from ..store.git import GitFailedError, SyncInterrupted  # raised only by sync and git-setup

        print(f"memory-mcp: {exc}", file=sys.stderr)
        if isinstance(exc, SyncInterrupted):
            return EXIT_INTERRUPTED
        return EXIT_GIT_FAILED if isinstance(exc, GitFailedError) else EXIT_USAGE
    finally:
        service.close()


def _worker_service(
    project_root: Path | None, config: Path | None, overrides: list[str], store: Path | None
) -> MemoryService:
    """The service of an HTTP worker process: the serving process's own settings, loaded again there."""
    return MemoryService.from_settings(
        load_settings(project_root=project_root, config_path=config, overrides=overrides, store=store)
    )


def _serve_http(service: MemoryService, args: argparse.Namespace) -> int:
    from .http import DEFAULT_HOST, DEFAULT_PORT, HttpOptions, serve_http

    options = HttpOptions(
        oauth_issuer=args.oauth_issuer,
        oauth_introspect=args.oauth_introspect,
        oauth_client_file=args.oauth_client_file,
        oauth_scopes=args.oauth_scope,
        workers=default_workers() if args.workers is None else args.workers,
        worker_service=functools.partial(_worker_service, args.project_root, args.config, args.set, args.store),
        host=args.host or DEFAULT_HOST,
        port=DEFAULT_PORT if args.port is None else args.port,
        token_file=args.token_file,
        no_auth=args.no_auth,
        allow_remote=args.allow_remote,
        allow_hosts=args.allow_host,
        allow_origins=args.allow_origin,
        public_url=args.public_url,
    )
    try:
        serve_http(service, options)
    except MemoryMcpError as exc:
        print(f"memory-mcp: {exc}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        service.close()
    return EXIT_OK


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

    ui = make_server(service, port)
    print(f"memory-mcp: browser view at {ui.url} (Ctrl-C to stop)", file=sys.stderr, flush=True)
    ui.serve_forever()
    return EXIT_OK


def _run(service: MemoryService, args: argparse.Namespace) -> int:
    if args.command == "import":
        return _run_import(service, args)
    if args.command == "remember":
        new_stores = service.missing_stores(args.scope, home=True)
        if args.body in (None, "-") and sys.stdin.isatty():
            print("memory-mcp: reading the body from standard input (end with Ctrl-D)", file=sys.stderr, flush=True)
        body = args.body if args.body not in (None, "-") else sys.stdin.read()
        answer = service.remember(
            args.title,
            body,
            args.type,
            args.trust,
            args.entities,
            args.source,
            args.supersedes,
            scope=args.scope,
            private=args.private,
            values=_values(args),
            origin=provenance.CLI,
        )
        for made in new_stores:
            print(f"memory-mcp: created a new store at {made.root}", file=sys.stderr)
        _emit(answer, args.json, _remember_text)
        return EXIT_OK
    if args.command == "context":  # the session-start hook: no store yet is a short context, not an error
        _emit(service.context(scope=args.scope, budget=args.budget), args.json, lambda a: a.text.rstrip("\n"))
        return EXIT_OK
    if args.command == "sync":
        from ..store.sync import SyncOptions

        options = SyncOptions(remote=args.remote, branch=args.branch, push=not args.no_push, init_url=args.init)
        answer = service.sync(options, scope=args.scope, progress=_terminal_steps())
        _emit(answer, args.json, _sync_text)
        return EXIT_OK
    if args.command == "git-setup":
        setup = service.git_setup(scope=args.scope)
        _emit(setup, args.json, lambda a: "\n".join(a.changed) or f"already set up in {a.repo}")
        return EXIT_OK
    # every other command only reads the stores: a missing one is an error, never a new empty store
    scope = service.scope_for_reading(args.scope, home=args.command == "status")
    if args.command in ("update", "forget"):
        return _run_change(service, args, scope)
    if args.command == "recall":
        if not args.query.strip():
            raise InputError("query: empty; give the words to search for")
        answer = service.recall(
            args.query,
            args.limit,
            args.type,
            args.state,
            args.entity,
            args.include_deprecated,
            scope=scope,
            mode=args.mode,
            budget=args.budget,
            as_of=args.as_of,
        )
        _emit(answer, args.json, _recall_text)
    elif args.command == "read":
        is_path = "/" in args.target or args.target.endswith(".md")
        answer = service.read(
            id=None if is_path else args.target,
            path=args.target if is_path else None,
            from_line=args.from_line,
            to_line=args.to_line,
            scope=scope,
        )
        _emit(answer, args.json, _read_text)
    elif args.command == "export":
        answer = service.export_to(args.to, force=args.force, scope=scope)
        if args.json:
            print(json.dumps({"path": answer.path, "memories": answer.memories, "scopes": answer.scopes}))
        else:
            print(
                f"wrote {answer.path}: {_count(answer.memories, 'active memory', 'active memories')} ({', '.join(answer.scopes)})"
            )
    elif args.command == "status":
        _emit(service.status(scope=scope), args.json, _status_text)
    elif args.command == "quarantine":
        _emit(service.quarantined(scope=scope), args.json, _quarantine_text)
    elif args.command == "release":
        _emit(service.release(args.id, scope=scope), args.json, _update_text)
    elif args.command == "reindex":
        with TerminalProgress() as progress:
            answer = service.reindex(verify=args.verify, scope=scope, progress=progress)
        _emit(answer, args.json, _reindex_text)
        if answer.not_saved:
            return EXIT_USAGE  # the index file is as it was: nothing a later command can use was rebuilt
        return EXIT_MISMATCH if answer.mismatches else EXIT_OK
    return EXIT_OK


class TerminalProgress:
    """Progress bars (tqdm) on stderr, one per stage and scope. tqdm draws nothing when stderr is not a
    terminal (`disable=None`), so pipes, files and CI logs stay quiet."""

    def __init__(self) -> None:
        self._bars: dict[tuple[str, str], tqdm] = {}

    def __enter__(self) -> TerminalProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        for bar in self._bars.values():
            bar.close()

    def __call__(self, p: Progress) -> None:
        bar = self._bars.get((p.stage, p.scope))
        if bar is None:
            from tqdm import tqdm  # imported only when a reindex runs

            what = {"index": ("indexing", "file"), "import": ("importing", "memory")}.get(
                p.stage, ("embedding", "memory")
            )
            bar = tqdm(
                total=p.total,
                desc=f"{p.scope}: {what[0]}",
                unit=f" {what[1]}",
                file=sys.stderr,
                disable=None,
                leave=False,
            )
            self._bars[(p.stage, p.scope)] = bar
        bar.total = p.total
        bar.update(p.done - bar.n)


def _terminal_steps():
    """Sync's steps on stderr when it is a terminal (quiet in pipes and CI logs)."""
    if not sys.stderr.isatty():
        return None
    return lambda step: print(f"memory-mcp sync: {step}…", file=sys.stderr, flush=True)


def _sync_text(a: SyncAnswer) -> str:
    def side(label: str, c) -> list[str]:
        counts = [(k, getattr(c, k)) for k in ("added", "edited", "archived", "removed")]
        head = ", ".join(f"{len(v)} {k}" for k, v in counts if v) or "nothing"
        lines = [f"{label}: {head}" + (f" (+ {', '.join(c.other)})" if c.other else "")]
        for kind, titles in counts:
            lines += [f"  {kind}: {t}" for t in titles[:5]] + (
                [f"  {kind}: … {len(titles) - 5} more"] if len(titles) > 5 else []
            )
        return lines

    lines = [*a.setup, *side("sent", a.sent), *side("received", a.received)]
    lines += [f"surfaced: {note}" for note in a.surfaced]
    where = f"{a.remote}/{a.branch}"
    lines.append(f"pushed to {where}" if a.pushed else f"not pushed ({where} already has everything, or --no-push)")
    if a.index is not None:
        lines.extend(_index_lines(a.index))
    lines.append(
        f"-- {a.seconds:.2f} s (git {a.git_seconds:.2f} s, {a.memory_merges} memory merge(s), index {a.reindex_seconds:.2f} s)"
    )
    return "\n".join(lines)


def load_cli_settings(args: argparse.Namespace) -> Settings:
    """Settings from the global options (before or after the subcommand, already merged)."""
    return load_settings(project_root=args.project_root, config_path=args.config, overrides=args.set, store=args.store)


def _config(settings: Settings, as_json: bool) -> int:
    rows = describe(settings)
    if as_json:
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
    """Print an answer; a hidden character a memory holds is printed escaped (`<U+E0041>`), never as itself."""
    if as_json:
        print(json.dumps(visible_data(answer.model_dump(mode="json")), indent=2, ensure_ascii=False))
    else:
        print(visible(render(answer)))


def _quarantine_text(a: QuarantineAnswer) -> str:
    lines = [f"{_count(len(a.memories), 'memory', 'memories')} in quarantine"]
    for m in a.memories:
        lines += [f"{m.id}  {m.path}  ({m.state})", f"  title: {m.title}", f"  held: {m.quarantine}"]
    if a.memories:
        lines.append("-- read one with `memory-mcp read ID`; release it with `memory-mcp release ID` if it is yours")
    return "\n".join(lines)


def _recall_text(a: RecallAnswer) -> str:
    lines = [f"-- as of {a.as_of}: what the store held as current that day"] if a.as_of else []
    for n, r in enumerate(a.results, 1):
        tag = "" if r.state == "active" else f" [{r.state}]"
        tag += f" [{quarantine_label(r.quarantine)}]" if r.quarantine else ""
        tag += "".join(f" [{mark}]" for mark in result_marks(a, r))
        who = f", {r.trust}, {provenance.short(r.origin)}" if r.kind == "memory" else ""
        lines.append(f"{n}. {r.title}{tag}  ({r.type}{who}, score {r.score:.3f})")
        lines.append(f"   {r.path}:{r.line}")
        lines.append(f"   {r.excerpt}")
    if not a.results:
        lines.append("no results")
    if a.budget_bytes is not None:
        lines.append(f"-- budget: {a.used_bytes} of {a.budget_bytes} bytes used; {a.left_out} more did not fit")
    lines += [f"-- collapsed {c.dropped_id} into {c.kept_id} ({c.reason})" for c in a.collapsed]
    if (weak := weak_results_note(a.results)) is not None:
        lines.append(f"-- {weak}")
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
    lines = [head] + [f"superseded {i}" for i in a.superseded] + ([a.message] if a.message else [])
    if a.quarantine:
        lines.append(
            f"put in quarantine: {a.quarantine} (kept, not in the session-start context; review it with "
            "`memory-mcp quarantine`, release it with `memory-mcp release ID`)"
        )
    if a.listed:
        lines.append(f"-- {len(a.listed)} listed, best first: memories this may contradict or replace")
        lines.append("-- settle each with its command: supersede if this replaces it, keep-both if not a conflict")
    for n, item in enumerate(a.listed, 1):
        state = "written as an open conflict" if item.written else "not written"
        shared = f"; shared entities: {', '.join(item.shared_entities)}" if item.shared_entities else ""
        lines.append(f"{n}. {item.title} ({item.id}; {item.type}; {item.kind} {item.weight:.2f}; {state}{shared})")
        lines.append(f"   because {item.evidence}")
        lines.append(
            f"   memory-mcp update resolve-conflict {a.id} --other-id {item.id} --resolution {_cli_word(item.settle)}"
        )
    return "\n".join(lines)


def _read_text(a: ReadAnswer) -> str:
    lines = [f"# {a.path} (lines {a.from_line}-{a.to_line} of {a.total_lines})", a.text]
    if a.origin is not None:
        lines.append(f"-- trust {a.trust}; origin: {a.origin}")
    if a.quarantine:
        lines.append(f"in quarantine: {a.quarantine}")
    if a.superseded_at:
        lines.append(f"superseded at {a.superseded_at}")
    if a.supersedes_chain:
        lines.append("supersedes: " + " <- ".join(_chain_link(c) for c in a.supersedes_chain))
    if a.superseded_by_chain:
        lines.append("superseded by: " + " -> ".join(_chain_link(c) for c in a.superseded_by_chain))
    return "\n".join(lines)


def _chain_link(c: ChainLink) -> str:
    """`ID [state, created 2026-03-02, superseded 2026-06-10]`: the link's dates as days."""
    dates = [f"created {c.created[:10]}"] if c.created else []
    dates += [f"superseded {c.superseded_at[:10]}"] if c.superseded_at else []
    return f"{c.id} [{', '.join([c.state, *dates])}]"


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _tally(counts: dict[str, int]) -> str:
    """{'active': 2, 'archived': 1} -> '2 active, 1 archived' (largest first); 'none' when empty."""
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{n} {k}" for k, n in items) or "none"


def _size(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _status_text(a: StatusAnswer) -> str:
    lines = [
        f"{a.scope} store '{a.store}' at {a.root}: {_count(a.total, 'memory', 'memories')}",
        f"  state:  {_tally(a.by_state)}",
        f"  type:   {_tally(a.by_type)}",
        f"  trust:  {_tally(a.by_trust)}",
        f"  origin: {_tally(a.by_origin)}",
        f"  handoff: {a.handoff.title} ({a.handoff.path})" if a.handoff else "  handoff: none",
        f"  unresolved conflicts: {a.unresolved_conflicts_total or 'none'}",
        f"  reviews due: {len(a.review_due) or 'none'}",
        f"  expired (past valid_until, not recalled): {len(a.expired) or 'none'}",
        f"  compaction candidates: {len(a.compaction_candidates) or 'none'}",
        f"  unparseable files: {len(a.unparseable) or 'none'}",
    ]
    lines += [f"    ! {u.path}: {u.reason}" for u in a.unparseable]
    lines += [f"  duplicate: {d.duplicate_id} says what {d.kept_id} says ({d.title})" for d in a.duplicates]
    lines += [f"  review due {r.review_after}: {r.title} ({r.path})" for r in a.review_due[:10]]
    lines += [f"  expired {r.valid_until}: {r.title} ({r.path})" for r in a.expired[:10]]
    for src in a.sources:
        lines.append(
            f"  documents '{src.label}': {_count(src.files, 'file', 'files')} in {src.path}, {_size(src.bytes)}"
        )
    idx = a.index
    lines.append(
        f"  index: {idx.path}, {_size(idx.size_bytes)}, schema {idx.schema_version}, change watch {idx.change_watch}"
    )
    return "\n".join(lines)


def _reindex_text(a: ReindexAnswer) -> str:
    counts = f"{_count(a.memories, 'memory', 'memories')} from {_count(a.files, 'file', 'files')} in {a.seconds:.2f} s"
    if a.not_saved:
        lines = [f"index NOT saved: read {counts} into a transient in-memory index, gone when this command ends"]
        lines.append(f"why: {a.not_saved}")
    else:
        lines = [f"reindexed {counts}"]
    if a.embedded or a.semantic_note:
        note = f" ({a.semantic_note})" if a.semantic_note else ""
        lines.append(f"embedded {_count(a.embedded, 'memory', 'memories')} for hybrid search{note}")
    lines += [f"unparseable {u.path}: {u.reason}" for u in a.unparseable]
    lines += [f"put in quarantine: {path}" for path in a.quarantined]
    lines += [
        f"{'would auto-close' if a.verified else 'auto-closed'} conflict {c.pair_hash} ({c.recorded_in} <> "
        f"{c.other_id}): {'; '.join(c.reasons)}"
        for c in a.auto_closed
    ]
    if a.verified:
        lines.append(f"verify: {_count(len(a.mismatches), 'mismatch', 'mismatches')}")
        lines += [f"  {m.path}: {m.problem}" for m in a.mismatches]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
