"""MCP over Streamable HTTP: the stdio server's tools, resources and prompts for clients that take a URL.

- `access.py`: who may call it: the bearer token file and its constant-time check, an external authorization
  server's tokens by introspection (`--oauth-*`), the Host/Origin allow-lists (loopback names by default);
- `guard.py`: refuses a token in the URL, closes the connection of a request that did not authenticate,
  bounds a request body's size and the time to send it, and reads it only after the token check;
- `connections.py`: uvicorn's h11 protocol with a deadline for request heads and a cap on connections
  that have not sent one;
- `serve.py`: `serve_http`: binds the socket, assembles the SDK's app around `build_server`, runs uvicorn.
"""

from .access import DEFAULT_HOST, DEFAULT_PORT, default_token_file, load_or_create_token
from .serve import MCP_PATH, HttpOptions, serve_http

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "MCP_PATH",
    "HttpOptions",
    "default_token_file",
    "load_or_create_token",
    "serve_http",
]
