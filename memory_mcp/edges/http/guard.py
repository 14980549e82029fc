"""The request guard in front of the MCP app: no token in the URL, a bounded body read in bounded time.

A token in a URL ends up in proxy logs, shell history and browser history, so the MCP authorization spec
forbids it: a request naming `access_token` in its query (RFC 6750's URI method), or carrying the
server's token as any query value, is refused before anything else runs, whatever its header says. A
POST body is read here in full, at most `max_body_bytes` within `body_seconds` (a client that trickles
its body cannot hold a worker), then handed to the app unchanged.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# one bound for both this guard and the SDK's own check: the largest body a tool accepts (200,000
# characters, each up to 6 bytes as a JSON \u escape) fits with room to spare
MAX_BODY_BYTES = 4 * 1024 * 1024
BODY_SECONDS = 30.0


class RequestGuard:
    """ASGI middleware over the whole HTTP app (the MCP endpoint and the metadata document)."""

    def __init__(
        self,
        app: ASGIApp,
        token_matches: Callable[[str], bool] | None,
        max_body_bytes: int = MAX_BODY_BYTES,
        body_seconds: float = BODY_SECONDS,
    ) -> None:
        self.app = app
        self.token_matches = token_matches
        self.max_body_bytes = max_body_bytes
        self.body_seconds = body_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self._token_in_query(scope.get("query_string", b"")):
            await _refuse(
                send,
                400,
                "invalid_request",
                "an access token in the URL is refused: send it as the header Authorization: Bearer <token>",
                bearer=True,
            )
            return
        if scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = await self._read_body(scope, receive, send)
        if body is None:
            return
        await self.app(scope, _replay(body, receive), send)

    def _token_in_query(self, query: bytes) -> bool:
        pairs = urllib.parse.parse_qsl(query.decode("latin-1"), keep_blank_values=True)
        if any(key.lower() == "access_token" for key, _ in pairs):
            return True
        return self.token_matches is not None and any(self.token_matches(value) for _, value in pairs)

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
    if status in (408, 413):
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
