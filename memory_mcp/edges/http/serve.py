"""`memory-mcp serve --http`: the same MCP server as stdio, over the SDK's Streamable HTTP transport at /mcp.

Nothing here knows a tool: `build_server` is the stdio server's own construction, given a token verifier.
The SDK supplies the transport, its sessions, the bearer check (401 + `WWW-Authenticate`), the RFC 9728
metadata document and the Host/Origin check; this module sets their bounds and binds the socket.
Concurrent sessions share one `MemoryService`, whose per-store locks serialise their calls exactly as
they serialise a stdio server's concurrent requests.
"""

from __future__ import annotations

import functools
import signal
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path

import uvicorn
from mcp.server.auth.middleware.bearer_auth import RequireAuthMiddleware
from mcp.server.auth.settings import AuthSettings
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import Route

from ...domain.errors import InputError
from ...tools.service import MemoryService
from ...tools.workers import ServiceFactory, WorkerPool
from ..server import build_server
from .access import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    EitherVerifier,
    IntrospectionVerifier,
    StaticTokenVerifier,
    allowed_hosts,
    allowed_origins,
    check_public_url,
    default_token_file,
    is_loopback,
    load_or_create_token,
    oauth_options,
    url_host,
)
from .connections import HeadLimitedH11Protocol, WaitingHeads
from .guard import MAX_BODY_BYTES, BodyGuard, RequestGuard

MCP_PATH = "/mcp"
SESSION_IDLE_SECONDS = 15 * 60  # a session nobody used for this long is closed (a client that vanished)
MAX_SESSIONS = 1000
MAX_CONNECTIONS = 512  # open connections at which a request gets 503 (those without a head make room first)


@dataclass
class HttpOptions:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    token_file: Path | None = None
    no_auth: bool = False
    allow_remote: bool = False
    allow_hosts: list[str] = field(default_factory=list)
    allow_origins: list[str] = field(default_factory=list)
    public_url: str | None = None
    # also accept an external authorization server's tokens (`access.oauth_options` checks these)
    oauth_issuer: str | None = None
    oauth_introspect: str | None = None
    oauth_client_file: Path | None = None
    oauth_scopes: list[str] = field(default_factory=list)
    workers: int = 0  # processes for keyword recalls (`WorkerPool`); 0: every call in the serving process
    worker_service: ServiceFactory | None = None  # builds a worker's service (picklable: workers are spawned)


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on `host:port` (port 0: any free port)."""
    if not 0 <= port <= 65535:
        raise InputError(f"--port: {port} is not a TCP port (0..65535; 0 picks a free one)")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise InputError(f"--host: cannot listen on {host!r} ({exc.strerror or exc})") from None
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise InputError(f"--port: cannot listen on {url_host(host)}:{port} ({exc.strerror or exc})") from None
    sock.listen(128)
    return sock


def serve_http(service: MemoryService, options: HttpOptions) -> None:
    """Serve until SIGINT/SIGTERM; refuses (InputError) before binding anything it should not."""
    remote = not is_loopback(options.host)
    if remote and not options.allow_remote:
        raise InputError(
            f"--host {options.host}: not a loopback address; other machines could reach the server. "
            "Add --allow-remote to mean it (and put a TLS reverse proxy in front)"
        )
    if remote and options.no_auth:
        raise InputError("--no-auth is only allowed on a loopback address")
    if options.workers < 0:
        raise InputError(f"--workers: {options.workers}; 0 or more (0: every call in the serving process)")
    public_url = check_public_url(options.public_url) if options.public_url else None
    oauth = oauth_options(
        options.oauth_issuer, options.oauth_introspect, options.oauth_client_file, options.oauth_scopes
    )
    if oauth is not None and options.no_auth:
        raise InputError("--oauth-issuer/--oauth-introspect and --no-auth contradict each other")
    token = None if options.no_auth else load_or_create_token(options.token_file or default_token_file())
    sock = bind(options.host, options.port)
    port = sock.getsockname()[1]
    # the URL clients use: a wildcard bind has no single address, so the metadata names loopback unless told
    shown_host = DEFAULT_HOST if options.host in ("0.0.0.0", "::") else options.host
    base = public_url or f"http://{url_host(shown_host)}:{port}"
    scopes = list(oauth.scopes) if oauth else []
    static = StaticTokenVerifier(token.token, scopes) if token else None
    verifier: StaticTokenVerifier | EitherVerifier | None = static
    if static is not None and oauth is not None:
        verifier = EitherVerifier(static, IntrospectionVerifier(oauth, base + MCP_PATH))
    # with only the static token there is no authorization server: the issuer is this server itself, whose
    # metadata document then names no OAuth endpoints (clients send the header; they cannot run an OAuth flow).
    # The audience of an external server's token is checked by its verifier (`IntrospectionVerifier`).
    auth = (
        AuthSettings(
            issuer_url=oauth.issuer if oauth else base,
            resource_server_url=base + MCP_PATH,
            required_scopes=scopes or None,
            validate_token_resource=False,
        )
        if verifier
        else None
    )
    server = build_server(service, token_verifier=verifier, auth=auth)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        max_request_body_size=MAX_BODY_BYTES,
        session_idle_timeout=SESSION_IDLE_SECONDS,
        max_sessions=MAX_SESSIONS,
        transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=allowed_hosts(options.host, port, public_url, options.allow_hosts),
            allowed_origins=allowed_origins(port, public_url, options.allow_origins),
        ),
        host=options.host,
    )
    guard_bodies(app)
    guarded = RequestGuard(app, token.token if token else None)
    # no access log: it would print request lines (a refused token in a query included) and goes to stdout;
    # h11 with a deadline for request heads (`connections.py`), whatever else is installed; no WebSocket
    config = uvicorn.Config(
        guarded,
        http=functools.partial(HeadLimitedH11Protocol, heads=WaitingHeads()),
        ws="none",
        log_config=None,
        access_log=False,
        log_level="warning",
        server_header=False,
        lifespan="on",
        limit_concurrency=MAX_CONNECTIONS,
        timeout_graceful_shutdown=5,
    )
    if token is not None and token.created:
        say(f"created a bearer token in {token.path} (mode 0600); clients send 'Authorization: Bearer <its contents>'")
    if remote:
        say(
            f"listening on {url_host(options.host)}:{port}, reachable from other machines. This server speaks plain "
            "HTTP: put a reverse proxy with TLS in front of it (README: 'Serving over HTTP')"
        )
    if token is None:
        say("WARNING: --no-auth: any process on this machine can call the tools")
    where = f"bearer token in {token.path}" if token else "no authentication"
    if oauth is not None:
        where += f" or a token of {oauth.issuer} (introspected at {oauth.introspection_url})"
    if options.workers and options.worker_service is not None:
        service.workers = WorkerPool(options.worker_service, options.workers)
        where += f"; {options.workers} worker processes"
    say(f"MCP over Streamable HTTP at {base}{MCP_PATH} ({where}; Ctrl-C to stop)")
    # uvicorn re-raises SIGTERM once it has shut down; the default action would end the process before the
    # caller's cleanup (the index connection, the worker processes): a handler turns it into a normal exit
    signal.signal(signal.SIGTERM, _exit_normally)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()


def guard_bodies(app: Starlette) -> None:
    """Put `BodyGuard` in front of the MCP transport, behind the SDK's bearer check (`RequireAuthMiddleware`,
    the endpoint of the SDK's `/mcp` route when a verifier is given): a body is read only once its request
    carries a valid token."""
    [route] = [r for r in app.routes if isinstance(r, Route) and r.path == MCP_PATH]
    if isinstance(route.app, RequireAuthMiddleware):
        route.app.app = BodyGuard(route.app.app)
    else:  # --no-auth: no bearer check
        route.app = BodyGuard(route.app)


def _exit_normally(signum: int, frame: object) -> None:
    raise SystemExit(0)


def say(line: str) -> None:
    print(f"memory-mcp: {line}", file=sys.stderr, flush=True)
