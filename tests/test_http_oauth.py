"""Tokens of an external OAuth authorization server (`serve --http --oauth-issuer … --oauth-introspect …`).

A real introspection endpoint (RFC 7662) runs on a free loopback port beside a real server: what it says of a
token decides, and the server still accepts its own bearer token. Every refused request changes nothing.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx2
import pytest

from .helpers import frontmatter, http_server, http_tools, server_env

pytestmark = pytest.mark.anyio

ISSUER = "https://auth.example.org"
ACCEPT = "application/json, text/event-stream"


class Introspection:
    """An RFC 7662 endpoint answering from `claims` (token → JSON object; 500 for "broken"); it logs each call."""

    def __init__(self) -> None:
        self.claims: dict[str, dict] = {}
        self.calls: list[tuple[str, str | None]] = []  # (token, Authorization header)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the http.server name)
                length = int(self.headers.get("Content-Length", 0))
                form = urllib.parse.parse_qs(self.rfile.read(length).decode())
                token = form.get("token", [""])[0]
                outer.calls.append((token, self.headers.get("Authorization")))
                if token == "broken":
                    self.send_response(500)
                    self.end_headers()
                    return
                body = json.dumps(outer.claims.get(token, {"active": False})).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/introspect"


@contextmanager
def introspection() -> Iterator[Introspection]:
    endpoint = Introspection()
    thread = threading.Thread(target=endpoint.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield endpoint
    finally:
        endpoint.httpd.shutdown()
        endpoint.httpd.server_close()
        thread.join(10)


def _client_file(tmp_path: Path) -> Path:
    path = tmp_path / "oauth-client"
    path.write_text("memory-server:s3cret-for-introspection\n")
    path.chmod(0o600)
    return path


def _initialize(url: str, token: str) -> httpx2.Response:
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    return httpx2.post(
        url,
        json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
        headers={"Authorization": f"Bearer {token}", "Accept": ACCEPT, "Content-Type": "application/json"},
        timeout=30,
    )


async def test_an_introspected_token_is_accepted_only_when_active_meant_for_this_server_and_scoped(
    store: Path, tmp_path: Path
) -> None:
    with introspection() as auth:
        flags = ("--oauth-issuer", ISSUER, "--oauth-introspect", auth.url, "--oauth-scope", "memory")
        with http_server(store, *flags, "--oauth-client-file", str(_client_file(tmp_path))) as server:
            future = int(time.time()) + 3600
            good = {"active": True, "aud": server.url, "scope": "memory read", "exp": future, "iss": ISSUER}
            auth.claims = {
                "good-token": good | {"sub": "dana", "client_id": "agent"},
                "inactive": good | {"active": False},
                "other-audience": good | {"aud": "https://other.example.org/mcp"},
                "no-audience": {k: v for k, v in good.items() if k != "aud"},
                "expired": good | {"exp": int(time.time()) - 10},
                "other-issuer": good | {"iss": "https://evil.example.org"},
                "unscoped": good | {"scope": "read"},
            }
            before = sorted(p.relative_to(store) for p in store.rglob("*.md"))
            for token in ("inactive", "other-audience", "no-audience", "expired", "other-issuer", "broken", "unknown"):
                r = _initialize(server.url, token)
                assert r.status_code == 401, (token, r.status_code, r.text)
                assert r.headers["www-authenticate"].startswith("Bearer "), token
            r = _initialize(server.url, "unscoped")
            assert r.status_code == 403 and "insufficient_scope" in r.headers["www-authenticate"], r.text
            assert sorted(p.relative_to(store) for p in store.rglob("*.md")) == before

            # the accepted token: a whole session, asked about once (remembered until its expiry or a minute)
            auth.calls.clear()
            async with http_tools(server, token="good-token") as t:
                made = await t.remember("Introspected", "An OAuth client remembered this.")
                found = await t.recall("oauth client remembered")
            # the memory says who wrote it: the client's name and version, and the token's subject (issue 44)
            assert frontmatter(store / made["path"])["origin"].endswith(" (token subject dana)")
            assert found["results"][0]["id"] == made["id"]
            assert [token for token, _ in auth.calls] == ["good-token"]
            expected = "Basic " + base64.b64encode(b"memory-server:s3cret-for-introspection").decode()
            assert auth.calls[0][1] == expected
            # the server's own token still works, and is never sent to the authorization server
            async with http_tools(server) as t:
                assert (await t.recall("introspected"))["results"][0]["id"] == made["id"]
            assert all(token != server.token for token, _ in auth.calls)

            metadata = httpx2.get(server.base + "/.well-known/oauth-protected-resource/mcp", timeout=30).json()
            assert [a.rstrip("/") for a in metadata["authorization_servers"]] == [ISSUER]
            assert metadata["scopes_supported"] == ["memory"]
    secret = "s3cret-for-introspection"
    assert all(secret not in line for line in server.stderr_lines)


def _refused(store: Path, *args: str) -> str:
    env = os.environ | server_env(store)
    cmd = [sys.executable, "-m", "memory_mcp", "--store", str(store), "serve", "--http", "--port", "0", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 2, done.stderr
    return done.stderr


def test_oauth_flags_that_would_leak_or_cannot_work_are_refused_before_listening(store: Path, tmp_path: Path) -> None:
    plain = _refused(store, "--oauth-issuer", ISSUER, "--oauth-introspect", "http://auth.example.org/introspect")
    assert "plain HTTP to another machine; use https" in plain
    alone = _refused(store, "--oauth-introspect", "https://auth.example.org/introspect")
    assert "--oauth-issuer and --oauth-introspect go together" in alone
    open_file = _client_file(tmp_path)
    open_file.chmod(0o644)
    shared = _refused(
        store, "--oauth-issuer", ISSUER, "--oauth-introspect", "https://auth.example.org/i",
        "--oauth-client-file", str(open_file),
    )  # fmt: skip
    assert "can be read or written by others" in shared and "s3cret" not in shared
    no_auth = _refused(store, "--no-auth", "--oauth-issuer", ISSUER, "--oauth-introspect", "https://auth.example.org/i")
    assert "contradict" in no_auth
    assert not any("MCP over Streamable HTTP at" in said for said in (plain, alone, shared, no_auth))
