"""Who may call the HTTP endpoint: the bearer token (its file and its check) and the Host/Origin allow-lists.

The token is a random secret in a file only its owner can read (0600, in a 0700 folder). It is compared
in constant time and never written anywhere else: not to stderr, not to a log (only the file's path is
printed). Host and Origin allow-lists stop a web page from reaching a loopback server through DNS
rebinding: by default only the loopback names with the served port are accepted.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import math
import os
import re
import secrets
import stat
import time
import urllib.parse
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp.server.auth.provider import AccessToken

from ...config import default_user_config
from ...domain.errors import InputError

TOKEN_FILE_NAME = "http-token"
# a header value: visible ASCII, no spaces; 32 characters of secrets.token_urlsafe are 192 bits
TOKEN_PATTERN = re.compile(r"[\x21-\x7e]{32,512}")
# the names a browser or client on this machine uses for the loopback address ([::1] as a Host header spells it)
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8765

_log = logging.getLogger("memory_mcp.http")


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
        token = read_private_file(path, "token file")
    except FileNotFoundError:
        return _create_token(path)
    if not TOKEN_PATTERN.fullmatch(token):
        raise InputError(
            f"token file: {path} must hold one line of 32 to 512 visible ASCII characters without spaces "
            "(delete it to have a new one generated)"
        )
    return TokenFile(path, token, created=False)


def read_private_file(path: Path, what: str) -> str:
    """The stripped text of a secret's file that only its owner can read or write (FileNotFoundError when it
    does not exist); a link, a file others can read or write, or not a regular file is refused (InputError)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise InputError(f"{what}: cannot read {path} ({exc.strerror or exc}; a symlink is refused)") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{what}: {path} is not a regular file")
        if st.st_mode & 0o077:
            raise InputError(
                f"{what}: {path} can be read or written by others (mode {stat.S_IMODE(st.st_mode):04o}); "
                f"run `chmod 600 {path}`"
            )
        raw = os.read(fd, 4096)
    finally:
        os.close(fd)
    return raw.decode("ascii", errors="replace").strip()


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


STATIC_CLIENT_ID = "memory-mcp-token"  # the client id of the server's own token (a memory's origin says "static token")


class StaticTokenVerifier:
    """The SDK's `TokenVerifier` for one shared secret, compared in constant time. Its holder owns the server:
    the token carries every scope the server requires (`scopes`)."""

    def __init__(self, token: str, scopes: list[str] | None = None) -> None:
        self._token = token.encode("ascii")
        self._scopes = list(scopes or [])

    def matches(self, candidate: str) -> bool:
        return hmac.compare_digest(candidate.encode("utf-8", "surrogateescape"), self._token)

    async def verify_token(self, token: str) -> AccessToken | None:
        if not self.matches(token):
            return None
        return AccessToken(token=token, client_id=STATIC_CLIENT_ID, scopes=self._scopes, expires_at=None)


# ---------------------------------------------------------------- tokens of an external authorization server

INTROSPECTION_TIMEOUT_S = 5.0
INTROSPECTION_CACHE_S = 60.0  # an active token is asked about again after this long (or at its expiry)
INTROSPECTION_CACHE_SIZE = 1024


@dataclass(frozen=True)
class OAuthOptions:
    """An external OAuth authorization server whose access tokens the server accepts (RFC 7662 introspection)."""

    issuer: str  # named in the protected-resource metadata; a token's `iss`, when it says one, must be this
    introspection_url: str
    client_id: str | None = None  # how this server authenticates to the introspection endpoint (HTTP Basic)
    client_secret: str | None = field(default=None, repr=False)
    scopes: tuple[str, ...] = ()  # every request's token must hold these


def oauth_options(
    issuer: str | None, introspection_url: str | None, client_file: Path | None, scopes: list[str]
) -> OAuthOptions | None:
    """The `--oauth-*` flags checked: both URLs or neither; https unless the host is a loopback address (a
    token sent in the clear to another machine is a token given away); a client file of `id:secret`, private."""
    if issuer is None and introspection_url is None:
        if client_file is not None or scopes:
            raise InputError("--oauth-client-file and --oauth-scope need --oauth-issuer and --oauth-introspect")
        return None
    if issuer is None or introspection_url is None:
        raise InputError("--oauth-issuer and --oauth-introspect go together (the server that issues the tokens, and "
                         "its RFC 7662 introspection endpoint)")  # fmt: skip
    for flag, url in (("--oauth-issuer", issuer), ("--oauth-introspect", introspection_url)):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InputError(f"{flag}: {url!r} is not an http(s) URL")
        if parts.scheme == "http" and not is_loopback(parts.hostname):
            raise InputError(f"{flag}: {url!r} is plain HTTP to another machine; use https")
    client_id = client_secret = None
    if client_file is not None:
        try:
            text = read_private_file(client_file.expanduser().absolute(), "--oauth-client-file")
        except FileNotFoundError:
            raise InputError(f"--oauth-client-file: {client_file} does not exist") from None
        client_id, sep, client_secret = text.partition(":")
        if not sep or not client_id or not client_secret or "\n" in text:
            raise InputError(f"--oauth-client-file: {client_file} must hold one line: client_id:client_secret")
    for scope in scopes:
        if not re.fullmatch(r"[\x21\x23-\x5b\x5d-\x7e]+", scope):
            raise InputError(f"--oauth-scope: {scope!r} is not an OAuth scope token (RFC 6749 §3.3)")
    return OAuthOptions(issuer.rstrip("/"), introspection_url, client_id, client_secret, tuple(scopes))


class IntrospectionVerifier:
    """The SDK's `TokenVerifier` for an external authorization server's tokens: each is asked about at the
    introspection endpoint (RFC 7662) and accepted only when it is active, not expired, issued by `issuer` (when
    it says), and meant for this server (its `aud` names `resource`, RFC 8707). An accepted token is remembered
    (by its SHA-256) until it expires or `INTROSPECTION_CACHE_S` passes; a refused one is asked about again.
    An endpoint that cannot be reached or answers badly refuses the token (401), never lets it in."""

    def __init__(self, options: OAuthOptions, resource: str) -> None:
        self.options = options
        self.resource = resource.rstrip("/")
        self._known: OrderedDict[bytes, tuple[float, AccessToken]] = OrderedDict()

    async def verify_token(self, token: str) -> AccessToken | None:
        key = hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()
        now = time.time()
        known = self._known.get(key)
        if known is not None and known[0] > now:
            return known[1]
        self._known.pop(key, None)
        claims = await self._introspect(token)
        access = None if claims is None else self._accepted(token, claims, now)
        if access is not None:
            until = min(now + INTROSPECTION_CACHE_S, access.expires_at or math.inf)
            self._known[key] = (until, access)
            while len(self._known) > INTROSPECTION_CACHE_SIZE:
                self._known.popitem(last=False)
        return access

    async def _introspect(self, token: str) -> dict[str, Any] | None:
        import httpx2  # the SDK's HTTP client

        auth = (self.options.client_id, self.options.client_secret or "") if self.options.client_id else None
        try:
            async with httpx2.AsyncClient(timeout=INTROSPECTION_TIMEOUT_S, follow_redirects=False) as client:
                answer = await client.post(
                    self.options.introspection_url,
                    data={"token": token, "token_type_hint": "access_token"},
                    headers={"Accept": "application/json"},
                    auth=auth,
                )
            claims = answer.json() if answer.status_code == 200 else None
        except (httpx2.HTTPError, ValueError) as exc:
            _log.warning("token introspection at %s failed: %s", self.options.introspection_url, type(exc).__name__)
            return None
        if answer.status_code != 200:
            _log.warning("token introspection at %s answered %s", self.options.introspection_url, answer.status_code)
        return claims if isinstance(claims, dict) else None

    def _accepted(self, token: str, claims: dict[str, Any], now: float) -> AccessToken | None:
        if claims.get("active") is not True:
            return None
        exp = claims.get("exp")
        if exp is not None and (not isinstance(exp, int | float) or exp <= now):
            return None
        issuer = claims.get("iss")
        if issuer is not None and str(issuer).rstrip("/") != self.options.issuer:
            return None
        audience = claims.get("aud")
        audiences = [audience] if isinstance(audience, str) else audience if isinstance(audience, list) else []
        if self.resource not in [str(a).rstrip("/") for a in audiences]:
            return None  # a token for another service (or for none said) is not one for this server
        scope = claims.get("scope")
        return AccessToken(
            token=token,
            client_id=str(claims.get("client_id") or "oauth-client"),
            scopes=scope.split() if isinstance(scope, str) else [],
            expires_at=int(exp) if exp is not None else None,
            resource=self.resource,
            subject=str(claims["sub"]) if claims.get("sub") is not None else None,
            claims={"iss": str(issuer)} if issuer is not None else None,
        )


class EitherVerifier:
    """The server's own bearer token, or else an external authorization server's (`IntrospectionVerifier`)."""

    def __init__(self, static: StaticTokenVerifier, oauth: IntrospectionVerifier) -> None:
        self.static, self.oauth = static, oauth

    async def verify_token(self, token: str) -> AccessToken | None:
        return await self.static.verify_token(token) or await self.oauth.verify_token(token)


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
