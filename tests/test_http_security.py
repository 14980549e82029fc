"""Who can call `serve --http`, and what a refused request changes: nothing.

Each refused request is a real `memory_remember` on an open session, sent raw (httpx2) so its headers and
URL can be wrong on purpose; the store's every file (canon and index) is compared byte for byte before and
after, and the same request with the right headers does write, so the refusals are what kept it out.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx2

from .helpers import HttpServer, http_server, server_env

LEGACY = "2025-11-25"
ACCEPT = "application/json, text/event-stream"


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _rpc(body: dict, response: httpx2.Response) -> dict:
    """The JSON-RPC answer to `body`, from a JSON or an SSE response."""
    if response.headers.get("content-type", "").startswith("application/json"):
        return response.json()
    for line in response.text.splitlines():
        if line.startswith("data: "):
            message = json.loads(line[6:])
            if message.get("id") == body.get("id"):
                return message
    raise AssertionError(f"no answer to {body['method']} in {response.text[:300]!r}")


class Session:
    """One legacy (2025-11-25) session opened with the right token, for sending requests right or wrong."""

    def __init__(self, server: HttpServer, http: httpx2.Client) -> None:
        self.server, self.http = server, http
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}},
        }
        r = http.post(server.url, json=init, headers=self.headers())
        assert r.status_code == 200, r.text
        assert _rpc(init, r)["result"]["protocolVersion"] == LEGACY
        self.id = r.headers["mcp-session-id"]
        r = http.post(
            server.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=self.headers()
        )
        assert r.status_code == 202, r.text

    def headers(self, token: str | None = "", **extra: str) -> dict[str, str]:
        h = {"Accept": ACCEPT, "Content-Type": "application/json", "MCP-Protocol-Version": LEGACY}
        if hasattr(self, "id"):
            h["Mcp-Session-Id"] = self.id
        token = self.server.token if token == "" else token
        if token is not None:
            h["Authorization"] = f"Bearer {token}"
        return h | extra


def _remember(n: int) -> dict:
    args = {"title": f"Refused write {n}", "body": f"This must never be stored ({n})."}
    return {
        "jsonrpc": "2.0",
        "id": 100 + n,
        "method": "tools/call",
        "params": {"name": "memory_remember", "arguments": args},
    }


def test_refused_requests_change_nothing_and_say_why(store: Path) -> None:
    with http_server(store) as server, httpx2.Client(timeout=30) as http:
        session = Session(server, http)
        seeded = _remember(0)
        r = http.post(server.url, json=seeded, headers=session.headers())
        assert r.status_code == 200 and _rpc(seeded, r)["result"]["isError"] is False
        before = _snapshot(store)
        token = server.token
        wrong = token[:-1] + ("A" if token[-1] != "A" else "B")
        port = server.url.split(":")[2].split("/")[0]
        url = server.url
        cases = [
            # (what, URL, headers, expected status)
            ("no token", url, session.headers(token=None), 401),
            ("wrong token", url, session.headers(token=wrong), 401),
            ("token cut short", url, session.headers(token=token[:-1]), 401),
            ("token with a suffix", url, session.headers(token=token + "x"), 401),
            ("basic auth", url, session.headers(token=None, Authorization="Basic " + token), 401),
            ("token in the query only", f"{url}?access_token={token}", session.headers(token=None), 400),
            ("token in the query and the header", f"{url}?access_token={token}", session.headers(), 400),
            ("token as another query value", f"{url}?key={token}", session.headers(), 400),
            ("foreign Host", url, session.headers(Host=f"evil.example.com:{port}"), 421),
            ("foreign Host, no token", url, session.headers(token=None, Host=f"evil.example.com:{port}"), 401),
            ("foreign Origin", url, session.headers(Origin="http://evil.example.com"), 403),
            ("Origin null", url, session.headers(Origin="null"), 403),
            ("loopback Origin on another port", url, session.headers(Origin="http://127.0.0.1:1"), 403),
        ]
        for n, (what, target, headers, status) in enumerate(cases, 1):
            r = http.post(target, json=_remember(n), headers=headers)
            assert r.status_code == status, f"{what}: {r.status_code} {r.text[:200]}"
            if status == 401:
                challenge = r.headers["www-authenticate"]
                assert challenge.startswith("Bearer ") and 'error="invalid_token"' in challenge, what
                metadata = f'resource_metadata="{server.base}/.well-known/oauth-protected-resource/mcp"'
                assert metadata in challenge, what
            if status == 400:
                assert 'error="invalid_request"' in r.headers["www-authenticate"], what
                assert "Authorization: Bearer" in r.json()["error_description"], what
        too_big = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "pad": "' + b"x" * (4 * 1024 * 1024) + b'"}'
        r = http.post(url, content=too_big, headers=session.headers())
        assert r.status_code == 413, r.text[:200]
        assert _snapshot(store) == before, "a refused request changed the store"

        # the control: the very same request with the right headers writes
        allowed = _remember(1)
        r = http.post(url, json=allowed, headers=session.headers(Origin=f"http://localhost:{port}"))
        assert r.status_code == 200 and _rpc(allowed, r)["result"]["isError"] is False, r.text[:300]
        assert _snapshot(store) != before
    assert token not in "".join(server.stderr_lines), "the token was printed"


def test_protected_resource_metadata_names_the_endpoint(store: Path) -> None:
    with http_server(store) as server, httpx2.Client(timeout=30) as http:
        r = http.get(f"{server.base}/.well-known/oauth-protected-resource/mcp")
        assert r.status_code == 200
        doc = r.json()
        assert doc["resource"] == server.url
        assert doc["authorization_servers"] == [server.base]
        assert doc["bearer_methods_supported"] == ["header"]
        assert server.token not in r.text


def test_added_hosts_and_origins_are_accepted(store: Path) -> None:
    with (
        http_server(store, "--allow-host", "memory.example.org", "--allow-origin", "https://app.example.org") as server,
        httpx2.Client(timeout=30) as http,
    ):
        session = Session(server, http)
        for n, extra in enumerate(
            [
                {"Host": "memory.example.org"},
                {"Host": "memory.example.org:443"},
                {"Origin": "https://app.example.org"},
            ],
            1,
        ):
            body = _remember(n)
            r = http.post(server.url, json=body, headers=session.headers(**extra))
            assert r.status_code == 200 and _rpc(body, r)["result"]["isError"] is False, (extra, r.text[:200])
        r = http.post(server.url, json=_remember(9), headers=session.headers(Host="other.example.org"))
        assert r.status_code == 421


def test_the_token_file_is_created_private_and_reused(tmp_path: Path) -> None:
    store, config = tmp_path / "store", tmp_path / "config"
    token_file = config / "memory-mcp" / "http-token"
    with http_server(
        store, env={"XDG_CONFIG_HOME": str(config)}, token_file=token_file, pass_token_file=False
    ) as server:
        assert server.token_file == token_file
        first = server.token
        created = [line for line in server.stderr_lines if "created a bearer token" in line]
        assert len(created) == 1 and str(token_file) in created[0]
    assert os.stat(token_file).st_mode & 0o777 == 0o600
    assert os.stat(token_file.parent).st_mode & 0o777 == 0o700
    assert len(first) >= 32
    with http_server(
        store, env={"XDG_CONFIG_HOME": str(config)}, token_file=token_file, pass_token_file=False
    ) as again:
        assert again.token == first
        assert not [line for line in again.stderr_lines if "created a bearer token" in line]
    assert first not in "".join(server.stderr_lines + again.stderr_lines)


def _start_refused(store: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "memory_mcp", "--store", str(store), "serve", "--http", "--port", "0", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=server_env(store), timeout=60)


def test_unsafe_starts_are_refused_before_listening(tmp_path: Path) -> None:
    store = tmp_path / "store"
    token_file = tmp_path / "token"
    cases = [
        (["--host", "0.0.0.0"], "--allow-remote"),
        (["--host", "0.0.0.0", "--allow-remote", "--no-auth"], "--no-auth is only allowed on a loopback address"),
        (["--token-file", str(token_file)], "can be read or written by others"),
        (["--token-file", str(tmp_path / "short")], "32 to 512 visible ASCII characters"),
        (["--token-file", str(tmp_path / "link")], "symlink"),
        (["--public-url", "ftp://x"], "--public-url"),
        (["--workers", "-1"], "--workers: -1; 0 or more"),
    ]
    token_file.write_text("a" * 40 + "\n")
    token_file.chmod(0o644)
    (tmp_path / "short").write_text("abc\n")
    (tmp_path / "short").chmod(0o600)
    (tmp_path / "link").symlink_to(tmp_path / "short")
    for args, message in cases:
        done = _start_refused(store, *args)
        assert done.returncode == 2, (args, done.stderr)
        assert message in done.stderr, (args, done.stderr)
        assert "MCP over Streamable HTTP at" not in done.stderr
    # HTTP options without --http are refused, not ignored (stdio would start and the port be forgotten)
    cmd = [sys.executable, "-m", "memory_mcp", "--store", str(store), "serve", "--port", "9000", "--no-auth"]
    done = subprocess.run(cmd, capture_output=True, text=True, env=server_env(store), timeout=60)
    assert done.returncode == 2 and "--port, --no-auth: only with --http" in done.stderr, done.stderr
    assert not store.exists()


def test_a_remote_bind_warns_that_tls_belongs_to_a_proxy(store: Path) -> None:
    public = "https://memory.example.org"
    with (
        http_server(store, "--host", "0.0.0.0", "--allow-remote", "--public-url", public) as server,
        httpx2.Client(timeout=30) as http,
    ):
        [warning] = [line for line in server.stderr_lines if "reverse proxy with TLS" in line]
        port = warning.split("listening on 0.0.0.0:", 1)[1].split(",", 1)[0]
        assert server.url == f"{public}/mcp"
        # the proxy forwards the public name; the metadata names the public URL
        r = http.get(f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp")
        assert r.json()["resource"] == f"{public}/mcp"
        server.url = f"http://127.0.0.1:{port}/mcp"
        session = Session(server, http)
        body = _remember(1)
        r = http.post(server.url, json=body, headers=session.headers(Host="memory.example.org", Origin=public))
        assert r.status_code == 200 and _rpc(body, r)["result"]["isError"] is False, r.text[:200]
        r = http.post(server.url, json=_remember(2), headers=session.headers(token=None, Host="memory.example.org"))
        assert r.status_code == 401
