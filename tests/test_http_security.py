"""Who can call `serve --http`, and what a refused request changes: nothing.

Each refused request is a real `memory_remember` on an open session, sent raw (httpx2) so its headers and
URL can be wrong on purpose; the store's every file (canon and index) is compared byte for byte before and
after, and the same request with the right headers does write, so the refusals are what kept it out.
"""

from __future__ import annotations

import json
import os
import secrets
import selectors
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

import anyio
import httpx2
import pytest

from memory_mcp.edges.http.connections import HEAD_SECONDS, MAX_WAITING_HEADS

from .helpers import HttpServer, http_server, http_tools, server_env

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


def _percent(text: str) -> str:
    return "".join(f"%{b:02X}" for b in text.encode())


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
            ("token as a bare query key", f"{url}?{token}", session.headers(), 400),
            ("token as a bare key after another", f"{url}?x=1&{token}", session.headers(), 400),
            ("token after ;", f"{url}?x=1;{token}", session.headers(), 400),
            ("access_token after ;", f"{url}?x=1;access_token={token}", session.headers(token=None), 400),
            ("access_token without a value", f"{url}?ACCESS_TOKEN", session.headers(), 400),
            ("token percent-encoded as a key", f"{url}?{_percent(token)}", session.headers(), 400),
            ("token percent-encoded twice", f"{url}?k={_percent(_percent(token))}", session.headers(), 400),
            ("token in the path", f"{url}/{token}", session.headers(), 400),
            ("another token-shaped value", f"{url}?state={secrets.token_urlsafe(32)}", session.headers(), 400),
            ("foreign Host", url, session.headers(Host=f"evil.example.com:{port}"), 421),
            ("foreign Host, no token", url, session.headers(token=None, Host=f"evil.example.com:{port}"), 401),
            ("foreign Origin", url, session.headers(Origin="http://evil.example.com"), 403),
            ("Origin null", url, session.headers(Origin="null"), 403),
            ("loopback Origin on another port", url, session.headers(Origin="http://127.0.0.1:1"), 403),
        ]
        for n, (what, target, headers, status) in enumerate(cases, 1):
            r = http.post(target, json=_remember(n), headers=headers)
            assert str(r.request.url) == target, f"{what}: the client changed the URL to {r.request.url}"
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


# ---------------------------------------------------------------- hostile connections: slow heads, unread bodies

GIVE_UP_S = HEAD_SECONDS + 20  # every wait below is bounded by this; none of them is a timing assertion
MOST_OF_THE_WAITING = MAX_WAITING_HEADS * 3 // 4


def _port(server: HttpServer) -> int:
    return int(server.base.rsplit(":", 1)[1])


def _half_head(port: int) -> bytes:
    return f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nX-Slow: ".encode()


class SlowHeads:
    """`count` loopback sockets that each send half a request head and then nothing. While it runs, a socket
    the server closes is opened again, at most `burst` every tenth of a second, so hostile connections stay
    open the whole time; `stop` ends that and leaves the open ones for the deadline to close."""

    def __init__(self, port: int, count: int, burst: int = 32) -> None:
        self.port, self.count, self.burst = port, count, burst
        self.selector = selectors.DefaultSelector()
        self.stopping = threading.Event()
        self.reopened = 0
        self.lock = threading.Lock()
        for _ in range(count):
            self._open()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _open(self) -> None:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        sock.sendall(_half_head(self.port))
        sock.setblocking(False)
        self.selector.register(sock, selectors.EVENT_READ)

    def _closed_by_server(self, timeout: float) -> list[tuple[socket.socket, bytes]]:
        """The sockets the server closed (or answered) within `timeout`, unregistered and closed here."""
        done = []
        for key, _ in self.selector.select(timeout):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            try:
                answer = sock.recv(4096)
            except OSError:
                answer = b""
            self.selector.unregister(sock)
            sock.close()
            done.append((sock, answer))
        return done

    def _run(self) -> None:
        owed = 0
        while not self.stopping.is_set():
            tick = time.monotonic() + 0.1
            with self.lock:
                owed += len(self._closed_by_server(0.1))
                for _ in range(min(owed, self.burst)):
                    self._open()
                    owed -= 1
                    self.reopened += 1
            self.stopping.wait(max(0.0, tick - time.monotonic()))

    def open_now(self) -> int:
        with self.lock:
            return len(self.selector.get_map())

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=10)

    def wait_closed_by_server(self, give_up_s: float, all_of_them: bool = True) -> list[bytes]:
        """What the server sent each socket it closed within `give_up_s`; with `all_of_them`, the wait ends
        when none is left open, and raises if one outlives it."""
        answers = []
        end = time.monotonic() + give_up_s
        while self.selector.get_map() and time.monotonic() < end:
            answers += [answer for _, answer in self._closed_by_server(min(0.5, give_up_s))]
        if all_of_them:
            left = len(self.selector.get_map())
            assert not left, f"{left} slow heads still open after {give_up_s} s"
        return answers

    def close(self) -> None:
        self.stop()
        for key in list(self.selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
        self.selector.close()


def _read_response(sock: socket.socket) -> bytes:
    """One whole response with a Content-Length (socket timeout: the caller's bound)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(next(line for line in head.lower().split(b"\r\n") if line.startswith(b"content-length:"))[15:])
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


def _read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (socket timeout: the caller's bound)."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


@pytest.mark.anyio
async def test_a_slow_head_flood_keeps_no_authorised_call_out_and_every_head_has_a_deadline(store: Path) -> None:
    """520 sockets that send half a request head and stop (the count that made every call 503 on 15edb0e),
    reopened as the server drops them: authorised calls through the SDK's client are answered meanwhile; once
    the flood stops reopening, every slow head (one trickled a byte at a time, one on a kept-alive connection
    too) is answered 408 and closed at the server's head deadline."""
    with http_server(store) as server:
        port = _port(server)
        flood = SlowHeads(port, 520)
        try:
            assert flood.open_now() >= MAX_WAITING_HEADS
            with anyio.fail_after(GIVE_UP_S):
                async with http_tools(server) as t:
                    made = await t.remember("Written under a flood", "The marker word is slowlorisxq.")
                    assert [r["id"] for r in (await t.recall("slowlorisxq"))["results"]] == [made["id"]]
                    assert (await t.status())["total"] == 1
            assert flood.open_now() >= MOST_OF_THE_WAITING, "the calls were answered once the flood was gone"
            assert flood.reopened > 0, "the server never made room for a newcomer"
            flood.stop()
            flood.wait_closed_by_server(0.5, all_of_them=False)  # those dropped to make room, not seen yet

            # a kept-alive connection of a token holder: its next head is bounded too
            kept = socket.create_connection(("127.0.0.1", port), timeout=GIVE_UP_S)
            metadata = f"GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            kept.sendall(f"{metadata}Authorization: Bearer {server.token}\r\n\r\n".encode())
            answer = _read_response(kept)
            assert answer.startswith(b"HTTP/1.1 200 ") and b"connection: close" not in answer.lower()
            kept.sendall(_half_head(port))
            # one that trickles its head a byte at a time does not extend its deadline
            trickle = socket.create_connection(("127.0.0.1", port), timeout=1)
            trickle.sendall(_half_head(port))
            started = time.monotonic()
            while time.monotonic() - started < GIVE_UP_S:
                try:
                    trickle.sendall(b"x")
                    if trickle.recv(65536):
                        break
                except TimeoutError:
                    continue
                except OSError:
                    break
            trickled = time.monotonic() - started
            trickle.close()
            assert trickled < GIVE_UP_S, "a head sent a byte a second was never cut off"

            # those still open when the flood stopped (the newest; the two above may have pushed out two more)
            answers = flood.wait_closed_by_server(GIVE_UP_S)
            timed_out = [a for a in answers if a.startswith(b"HTTP/1.1 408 ")]
            assert len(timed_out) >= MOST_OF_THE_WAITING and all(a == b"" for a in answers if a not in timed_out), (
                answers[:3]
            )
            assert _read_until_closed(kept).startswith(b"HTTP/1.1 408 ")
            kept.close()
        finally:
            flood.close()
        # the server still answers, and the flood wrote nothing
        async with http_tools(server) as t:
            assert (await t.status())["total"] == 1


def test_a_request_without_a_valid_token_is_refused_before_its_body_is_read(tmp_path: Path) -> None:
    """A head announcing a 4 MB body, with no token or a wrong one, is answered 401 and closed without a byte
    of the body sent; so is a request to another path, and the metadata document read without a token.
    The server's token here is a hand-written one with URL separators in it: in a query it is still found."""
    store = tmp_path / "store"
    token_file = tmp_path / "http-token"
    token_file.write_text("hand/written=token;" + secrets.token_urlsafe(24) + "\n")
    token_file.chmod(0o600)
    with http_server(store, token_file=token_file) as server:
        port = _port(server)
        token = server.token
        head = f"Host: 127.0.0.1:{port}\r\nAccept: {ACCEPT}\r\nContent-Type: application/json\r\n"
        cases = [
            ("no token", "POST /mcp", "", b"401"),
            ("wrong token", "POST /mcp", f"Authorization: Bearer {token[:-1]}x\r\n", b"401"),
            ("another path", "POST /upload", "", b"404"),
            ("token in the query", f"POST /mcp?k={urllib.parse.quote(token, safe='')}", "", b"400"),
            ("token in the query, as it is", f"POST /mcp?{token}", "", b"400"),
        ]
        for what, request_line, extra, status in cases:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.sendall(f"{request_line} HTTP/1.1\r\n{head}{extra}Content-Length: 4000000\r\n\r\n".encode())
                try:
                    answer = _read_until_closed(sock)
                except TimeoutError:
                    raise AssertionError(f"{what}: no answer in 10 s without the body (it waits for it)") from None
            assert answer.startswith(b"HTTP/1.1 " + status + b" "), (what, answer[:200])
            assert b"connection: close" in answer.lower(), what
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(f"GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\n{head}\r\n".encode())
            answer = _read_until_closed(sock)
        assert answer.startswith(b"HTTP/1.1 200 ") and b'"resource"' in answer
    assert not (store / "memories").exists() or not list((store / "memories").rglob("*.md"))
