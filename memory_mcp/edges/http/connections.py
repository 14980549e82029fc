"""Connections that have not sent a request head yet: a deadline for the head, and a cap on how many wait.

uvicorn gives each connection a worker-free asyncio protocol, so an idle socket costs little, but it offers no
deadline for a request's head (`timeout_keep_alive` runs only between requests and stops at the next
request's first byte) and its `limit_concurrency` counts every open socket: a few hundred sockets that send
half a head and stop would hold the count at the limit, and every request, authorised or not, would be
answered 503 for as long as they stayed open. `HeadLimitedH11Protocol` is uvicorn's h11 protocol with:

- a deadline for each request head (`HEAD_SECONDS` from the connection's start, or from the end of the
  previous response on a kept-alive connection): a head not complete by then is answered 408 (nothing, if not
  one byte came) and the connection closed; sending it a byte at a time does not extend it;
- `WaitingHeads`, a cap on connections that have not completed their first head: a new connection that
  finds the cap (or the server's whole connection limit) reached closes the one that has waited longest, so
  sockets that stall cannot keep a newcomer out: one that sends its head at once is served.

A connection that has completed a head leaves the count; the request guard (`guard.RequestGuard`) closes
every connection whose request was not authenticated once it is answered, so the connections that stay open
beyond that belong to token holders (`--no-auth`: to any local process).
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

HEAD_SECONDS = 10.0
MAX_WAITING_HEADS = 256  # connections without a complete first head; half the server's connection limit

_TIMEOUT_408 = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: 34\r\n"
    b"connection: close\r\n\r\nrequest head not received in time\n"
)


class WaitingHeads:
    """The connections of one server that have not completed their first request head, oldest first."""

    def __init__(self, cap: int = MAX_WAITING_HEADS, head_seconds: float = HEAD_SECONDS) -> None:
        self.cap = cap
        self.head_seconds = head_seconds
        self._waiting: dict[HeadLimitedH11Protocol, None] = {}  # insertion order: oldest first

    def __len__(self) -> int:
        return len(self._waiting)

    def admit(self, newcomer: HeadLimitedH11Protocol, open_connections: int, connection_limit: int | None) -> None:
        """Count `newcomer` in, first closing the longest waiting ones while the cap is reached, or while
        the open connections (the newcomer included) reach the server's limit, at which uvicorn answers 503."""
        while self._waiting and (
            len(self._waiting) >= self.cap or (connection_limit is not None and open_connections >= connection_limit)
        ):
            oldest = next(iter(self._waiting))
            self.discard(oldest)
            oldest.drop()
            open_connections -= 1
        self._waiting[newcomer] = None

    def discard(self, connection: HeadLimitedH11Protocol) -> None:
        self._waiting.pop(connection, None)


class HeadLimitedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for every request head and a cap on connections without one
    (`WaitingHeads`, shared by the server's connections: give it with `functools.partial`)."""

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
        *,
        heads: WaitingHeads,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.heads = heads
        self._head_deadline: asyncio.TimerHandle | None = None
        self._head_bytes = False  # a byte of the awaited head has come

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        # the connection set already holds this one: the limit is reached when it is at the limit
        self.heads.admit(self, len(self.connections), self.limit_concurrency)
        self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_done()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._head_bytes = True
        super().data_received(data)

    def handle_events(self) -> None:
        cycle = self.cycle
        super().handle_events()
        if self.cycle is not cycle:  # a request head was complete: a request/response cycle began
            self._head_done()

    def on_response_complete(self) -> None:
        if not self.transport.is_closing():
            self._await_head()  # the next request's head, on a kept-alive connection
        super().on_response_complete()

    def drop(self) -> None:
        """Closed to make room for a newer connection (`WaitingHeads.admit`)."""
        self._head_done()
        if not self.transport.is_closing():
            self.transport.close()

    def _await_head(self) -> None:
        self._cancel_deadline()
        self._head_bytes = False
        self._head_deadline = self.loop.call_later(self.heads.head_seconds, self._head_late)

    def _head_done(self) -> None:
        self._cancel_deadline()
        self.heads.discard(self)

    def _cancel_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_late(self) -> None:
        self._head_deadline = None
        self.heads.discard(self)
        if self.transport.is_closing():
            return
        if self._head_bytes and self.conn.our_state in (h11.IDLE, h11.DONE):
            self.transport.write(_TIMEOUT_408)
        self.transport.close()
