"""Serving the browser view: a uvicorn server on a socket bound to 127.0.0.1 only."""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass

import uvicorn

from ...domain.errors import InputError
from ...tools.service import MemoryService
from .app import WebView
from .guard import LOOPBACK

DEFAULT_PORT = 5052


def bind_loopback(port: int) -> socket.socket:
    """A listening TCP socket on 127.0.0.1 only (port 0: any free port)."""
    if not 0 <= port <= 65535:
        raise InputError(f"ui port: {port} is not a TCP port (0..65535; 0 picks a free one)")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((LOOPBACK, port))
    except OSError as exc:
        sock.close()
        raise InputError(f"ui port: cannot listen on {LOOPBACK}:{port}: {exc.strerror or exc}") from None
    sock.listen(64)
    return sock


@dataclass
class UiServer:
    """A running (or ready to run) browser view on a loopback socket."""

    view: WebView
    sock: socket.socket
    server: uvicorn.Server
    thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self.sock.getsockname()[1]

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}/"

    def serve_forever(self) -> None:
        self.server.run(sockets=[self.sock])

    def start(self, timeout: float = 10.0) -> UiServer:
        """Serve from a daemon thread (e.g. beside the MCP server on stdio); returns once it accepts."""
        self.thread = threading.Thread(target=self.serve_forever, name="memory-mcp-ui", daemon=True)
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the browser view did not start")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self.server.should_exit = True
        if self.thread is not None:
            self.thread.join(timeout)
        self.sock.close()


def make_server(service: MemoryService, port: int = DEFAULT_PORT) -> UiServer:
    sock = bind_loopback(port)
    view = WebView(service, sock.getsockname()[1])
    # no access log and no log config of uvicorn's own: its access log writes to stdout, which is the MCP
    # channel when the view runs inside `serve`; warnings still reach stderr through logging's last resort
    config = uvicorn.Config(
        view.app, log_config=None, access_log=False, log_level="warning", lifespan="off", server_header=False
    )
    return UiServer(view, sock, uvicorn.Server(config))
