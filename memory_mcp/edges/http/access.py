"""Who may call the HTTP endpoint: the bearer token (its file and its check) and the Host/Origin allow-lists.

The token is a random secret in a file only its owner can read (0600, in a 0700 folder). It is compared
in constant time and never written anywhere else: not to stderr, not to a log (only the file's path is
printed). Host and Origin allow-lists stop a web page from reaching a loopback server through DNS
rebinding: by default only the loopback names with the served port are accepted.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import re
import secrets
import stat
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from mcp.server.auth.provider import AccessToken

from ...config import default_user_config
from ...domain.errors import InputError

TOKEN_FILE_NAME = "http-token"
# a header value: visible ASCII, no spaces; 32 characters of secrets.token_urlsafe are 192 bits
TOKEN_PATTERN = re.compile(r"[\x21-\x7e]{32,512}")
# the names a browser or client on this machine uses for the loopback address ([::1] as a Host header spells it)
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8765


def default_token_file() -> Path:
    """`$XDG_CONFIG_HOME/memory-mcp/http-token`, else `~/.config/memory-mcp/http-token` (beside config.toml)."""
    return default_user_config().parent / TOKEN_FILE_NAME


@dataclass(frozen=True)
class TokenFile:
    path: Path
    token: str = field(repr=False)  # never printed, not even in a traceback's repr
    created: bool


def load_or_create_token(path: Path) -> TokenFile:
    """The token in `path`, created (0600) with a fresh random one when the file does not exist yet.

    A file others can read or write, a link, or a value that is not one line of 32-512 visible ASCII
    characters is refused: the server does not start on a secret that may be known or guessable.
    """
    path = path.expanduser().absolute()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return _create_token(path)
    except OSError as exc:
        raise InputError(f"token file: cannot read {path} ({exc.strerror or exc}; a symlink is refused)") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"token file: {path} is not a regular file")
        if st.st_mode & 0o077:
            raise InputError(
                f"token file: {path} can be read or written by others (mode {stat.S_IMODE(st.st_mode):04o}); "
                f"run `chmod 600 {path}`"
            )
        raw = os.read(fd, 4096)
    finally:
        os.close(fd)
    token = raw.decode("ascii", errors="replace").strip()
    if not TOKEN_PATTERN.fullmatch(token):
        raise InputError(
            f"token file: {path} must hold one line of 32 to 512 visible ASCII characters without spaces "
            "(delete it to have a new one generated)"
        )
    return TokenFile(path, token, created=False)


def _create_token(path: Path) -> TokenFile:
    token = secrets.token_urlsafe(32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:  # another server created it first: use that one
        return load_or_create_token(path)
    except OSError as exc:
        raise InputError(f"token file: cannot create {path} ({exc.strerror or exc})") from None
    try:
        os.write(fd, (token + "\n").encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    return TokenFile(path, token, created=True)


class StaticTokenVerifier:
    """The SDK's `TokenVerifier` for one shared secret, compared in constant time."""

    def __init__(self, token: str) -> None:
        self._token = token.encode("ascii")

    def matches(self, candidate: str) -> bool:
        return hmac.compare_digest(candidate.encode("utf-8", "surrogateescape"), self._token)

    async def verify_token(self, token: str) -> AccessToken | None:
        if not self.matches(token):
            return None
        return AccessToken(token=token, client_id="memory-mcp-token", scopes=[], expires_at=None)


# ---------------------------------------------------------------- where it listens, and the names it answers to


def is_loopback(host: str) -> bool:
    name = host.strip("[]")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def url_host(host: str) -> str:
    """`host` as it appears in a URL or a Host header (IPv6 in brackets)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def allowed_hosts(bind_host: str, port: int, public_url: str | None, extra: list[str]) -> list[str]:
    """Host header values accepted: the loopback names and the bound address with the port, the public
    URL's host, and each `--allow-host` (a bare name also with any port: a proxy may or may not add one)."""
    hosts = [f"{name}:{port}" for name in LOOPBACK_NAMES]
    if bind_host not in ("0.0.0.0", "::") and not is_loopback(bind_host):
        hosts.append(f"{url_host(bind_host)}:{port}")
    names = list(extra)
    if public_url:
        names.append(urllib.parse.urlsplit(public_url).netloc)
    for name in names:
        hosts += [name] if _has_port(name) else [name, f"{name}:*"]
    return list(dict.fromkeys(h.lower() for h in hosts))


def _has_port(name: str) -> bool:
    return "]:" in name if name.startswith("[") else ":" in name


def allowed_origins(port: int, public_url: str | None, extra: list[str]) -> list[str]:
    """Origin header values accepted (a request without Origin, as clients other than browsers send, passes)."""
    origins = [f"http://{name}:{port}" for name in LOOPBACK_NAMES]
    if public_url:
        parts = urllib.parse.urlsplit(public_url)
        origins.append(f"{parts.scheme}://{parts.netloc}")
    origins += [o.rstrip("/") for o in extra]
    return list(dict.fromkeys(o.lower() for o in origins))


def check_public_url(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise InputError(f"--public-url: {url!r} is not an http(s) base URL such as https://memory.example.org")
    return url.rstrip("/")
