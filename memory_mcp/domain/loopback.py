"""Which embedding server addresses are allowed: loopback only, so no memory text leaves the machine."""

from __future__ import annotations

import ipaddress
import urllib.parse


def check_loopback_url(url: str) -> str:
    """`url` without a trailing slash, when it is http(s) to localhost or a loopback address; else ValueError."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme not in ("http", "https") or not host:
        raise ValueError(f"{url!r} is not an http(s) URL")
    if host != "localhost":
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise ValueError(f"{url!r}: only a loopback address (127.0.0.1, ::1, localhost) is allowed")
    return url.rstrip("/")
