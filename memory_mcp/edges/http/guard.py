"""The request guards: no token in the URL, no connection kept for an unauthenticated caller, and a request
body read only once its token has been checked, at most `max_body_bytes` within `body_seconds`.

A token in a URL ends up in proxy logs, shell history and browser history, so the MCP authorization spec
forbids it: `RequestGuard`, in front of everything, refuses (400) a URL that names `access_token`, that holds
the server's token anywhere (path or query, percent-encoded or not), or anything shaped like a token (a run
of 32 characters or more between the separators `/ ? & ; =`, as a key, a value or a bare word: no path the
server serves and no query it takes has one, every bearer token is one), whatever the request's header says. It also closes the
connection after every answer to a request that did not authenticate (a 401, the metadata document, a 404):
only a token holder keeps a connection open between requests (`connections.py` bounds those that have not
sent a request yet).

`BodyGuard` sits inside the SDK's bearer check, just in front of the MCP transport, so the body of a request
without a valid token is never read: the 401 goes out and the connection is closed. A POST body is read there
in full, at most `max_body_bytes` within `body_seconds` (a client that trickles its body cannot hold a
worker), then handed to the transport unchanged.
"""

from __future__ import annotations

import hmac
import json
import re
import urllib.parse

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# one bound for both this guard and the SDK's own check: the largest body a tool accepts (200,000
# characters, each up to 6 bytes as a JSON \u escape) fits with room to spare
MAX_BODY_BYTES = 4 * 1024 * 1024
BODY_SECONDS = 30.0
# a run this long between URL separators is shaped like a bearer token (ours has 43 characters); no path
# the server serves and no query it takes has one
URL_SEPARATORS = "/?&;="
TOKEN_SHAPE = re.compile(r"[^/?&;=\s]{32,}")
_CLOSE = (b"connection", b"close")


class RequestGuard:
    """ASGI middleware over the whole HTTP app (the MCP endpoint and the metadata document).

    `token` is the server's own (None with --no-auth: nothing authenticates, and no connection is closed for
    it). Only this guard and the token verifier hold it."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self._token = token.encode("ascii") if token else None
        # a token without a separator lies inside one run of its own length: TOKEN_SHAPE finds it wherever it
        # is; only a token with a separator (a hand-written token file) needs the window-by-window comparison
        self._compare_windows = bool(token) and bool(set(token) & set(URL_SEPARATORS))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self._token_in_url(scope.get("raw_path") or scope["path"].encode(), scope.get("query_string", b"")):
            await _refuse(
                send,
                400,
                "invalid_request",
                "an access token in the URL is refused: send it as the header Authorization: Bearer <token>",
                bearer=True,
            )
            return
        if self._token is None:
            await self.app(scope, receive, send)
            return

        async def send_closing_unless_authenticated(message: Message) -> None:
            if message["type"] == "http.response.start" and not _authenticated(scope):
                headers = list(message.get("headers", []))
                if _CLOSE not in headers:
                    message = {**message, "headers": [*headers, _CLOSE]}
            await send(message)

        await self.app(scope, receive, send_closing_unless_authenticated)

    def _token_in_url(self, raw_path: bytes, query: bytes) -> bool:
        """The path or query, as sent or percent-decoded, names `access_token` (RFC 6750's URI method), holds
        a token-shaped run, or holds the server's token."""
        spellings = []
        for part in (raw_path, query):
            text = part.decode("latin-1")
            spellings += dict.fromkeys((text, urllib.parse.unquote(text, "latin-1")))
        for text in spellings:
            if TOKEN_SHAPE.search(text):
                return True
            if any(name.strip().lower() == "access_token" for name in re.split(f"[{URL_SEPARATORS}]", text)):
                return True
        return self._compare_windows and any(self._holds_token(text) for text in spellings)

    def _holds_token(self, text: str) -> bool:
        """Whether the server's token occurs anywhere in `text`: every window of its length is compared in
        constant time (a substring search would tell by its timing how much of a guess matched)."""
        assert self._token is not None
        data, width = text.encode("latin-1", "replace"), len(self._token)
        found = False
        for start in range(len(data) - width + 1):
            found |= hmac.compare_digest(data[start : start + width], self._token)
        return found


def _authenticated(scope: Scope) -> bool:
    """The SDK's bearer check (Starlette's AuthenticationMiddleware) accepted the request's token."""
    return bool(getattr(scope.get("user"), "is_authenticated", False))


class BodyGuard:
    """ASGI middleware around the MCP transport, inside the bearer check: a POST body read in full, bounded
    in size and time, before the transport sees it."""

    def __init__(self, app: ASGIApp, max_body_bytes: int = MAX_BODY_BYTES, body_seconds: float = BODY_SECONDS) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.body_seconds = body_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = await self._read_body(scope, receive, send)
        if body is None:
            return
        await self.app(scope, _replay(body, receive), send)

    async def _read_body(self, scope: Scope, receive: Receive, send: Send) -> bytes | None:
        """The whole body, or None once a 413 or 408 has been sent."""
        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > self.max_body_bytes:
                await _refuse(send, 413, "request_too_large", f"request body over {self.max_body_bytes} bytes")
                return None
        chunks: list[bytes] = []
        size = 0
        with anyio.move_on_after(self.body_seconds) as deadline:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return None
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self.max_body_bytes:
                    await _refuse(send, 413, "request_too_large", f"request body over {self.max_body_bytes} bytes")
                    return None
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks)
        if deadline.cancelled_caught:
            await _refuse(send, 408, "request_timeout", f"request body not received within {self.body_seconds:g} s")
        return None


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands over the body already read, then waits on the real one (for the disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _refuse(send: Send, status: int, error: str, description: str, bearer: bool = False) -> None:
    body = json.dumps({"error": error, "error_description": description}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if bearer:
        headers.append((b"www-authenticate", f'Bearer error="{error}", error_description="{description}"'.encode()))
    headers.append(_CLOSE)  # the body, if any, is left unread: the connection cannot carry another request
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
