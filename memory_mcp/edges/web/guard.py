"""The loopback guard: Host and Origin must be the loopback origin served; every response gets security headers.

A DNS-rebinding page arrives as `Host: evil.example:PORT`, a cross-site form or fetch with a foreign
`Origin`; both are refused before any route runs.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

LOOPBACK = "127.0.0.1"

SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; form-action 'self'; "
        b"frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),  # "no-referrer" makes Chromium send `Origin: null` on our own forms
    (b"cache-control", b"no-store"),
]


class LoopbackGuard:
    """ASGI middleware: Host and Origin must be the loopback origin served; adds security headers."""

    def __init__(self, app: ASGIApp, port: int) -> None:
        self.app = app
        self.hosts = {f"{LOOPBACK}:{port}", f"localhost:{port}"}
        self.origins = {f"http://{h}" for h in self.hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        hosts = headers.getlist("host")
        origins = headers.getlist("origin")
        problem = None
        if len(hosts) != 1 or hosts[0].lower() not in self.hosts:
            problem = "Host header is not the loopback address this view serves"
        elif origins and (len(origins) != 1 or origins[0].lower() not in self.origins):
            problem = "Origin is not the loopback origin this view serves"
        if problem is not None:
            await Response(f"forbidden: {problem}\n", status_code=403, media_type="text/plain")(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + SECURITY_HEADERS
            await send(message)

        await self.app(scope, receive, send_with_headers)
