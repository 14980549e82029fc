"""Browser view: a thin, loopback-only edge over MemoryService (server-rendered HTML, a little JS).

Every page is one or two service calls rendered as HTML; every rule about memories stays in the service.
What lives here is only what a browser edge needs:

- it binds 127.0.0.1 and refuses any request whose Host is not the loopback address and port it serves
  (a DNS-rebinding page would arrive as `Host: evil.example:PORT`) and any request carrying a foreign
  Origin (a cross-site form or fetch);
- every POST must carry the per-process random token that only pages served here contain;
- the edit form carries the sha256 of the file it was filled from, and the service refuses the write if
  the file changed meanwhile: the page then shows the new version and keeps what the person typed.
"""

from __future__ import annotations

import hmac
import html
import secrets
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, Headers
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .domain.errors import InputError, MemoryMcpError, NotFoundError, StaleWriteError, TransitionError
from .domain.lifecycle import ALLOWED, PURGEABLE
from .domain.models import EditableMemory, MemoryType, ReadAnswer, State, StatusAnswer, StoreInfo, Trust
from .tools.service import MemoryService

LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 5052
PAGE_SIZE = 100
MAX_PAGE = 100_000
MAX_FORM_BYTES = 4 * 1024 * 1024
SEARCH_LIMIT = 20  # the recall tool's maximum
TOKEN_FIELD = "_token"
TOKEN_HEADER = "x-memory-token"

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

DONE = {
    "archive": "Archived. It is kept and still recalled, ranked lower.",
    "restore": "Restored to active.",
    "reactivate": "Reactivated: active again, with the reason recorded.",
    "deprecate": "Deprecated. It is kept on disk but hidden from recall.",
    "purge": "Purged: the file was deleted (git history is the backstop).",
    "resolve": "Conflict resolved.",
    "edit": "Saved.",
    "unchanged": "Nothing changed, so nothing was written.",
}

ERROR_STATUS: list[tuple[type[MemoryMcpError], int]] = [
    (NotFoundError, 404),
    (StaleWriteError, 409),
    (TransitionError, 409),
    (InputError, 400),
    (MemoryMcpError, 400),
]


def esc(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _status_of(exc: MemoryMcpError) -> int:
    return next(code for cls, code in ERROR_STATUS if isinstance(exc, cls))


# ---------------------------------------------------------------- the loopback guard


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


# ---------------------------------------------------------------- page context and layout


def _place_params(place: StoreInfo) -> dict[str, str]:
    """The URL/form parameters that select a place; none for the home place."""
    if place.home:
        return {}
    return {"scope": place.scope, **({"store": place.store} if place.store else {})}


@dataclass
class Ctx:
    """Per-request rendering context: the place (scope, or named global store) viewed and the form token."""

    place: StoreInfo
    places: list[StoreInfo]
    token: str

    @property
    def where(self) -> dict[str, str | None]:
        """Service keyword arguments: every call stays in the place being viewed."""
        return {"scope": self.place.scope, "store": self.place.store}

    def url(self, target: str, /, **params: object) -> str:
        query = {k: v for k, v in params.items() if v not in (None, "")}
        query.update(_place_params(self.place))
        return target + ("?" + urlencode(query) if query else "")

    def hidden(self) -> str:
        out = f'<input type="hidden" name="{TOKEN_FIELD}" value="{esc(self.token)}">'
        for k, v in _place_params(self.place).items():
            out += f'<input type="hidden" name="{k}" value="{esc(v)}">'
        return out


def _layout(ctx: Ctx, title: str, body: str, active: str = "") -> str:
    def nav(key: str, label: str, path: str) -> str:
        cls = ' class="on"' if key == active else ""
        return f'<a{cls} href="{esc(ctx.url(path))}">{label}</a>'

    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)} · memory-mcp</title>
<link rel="icon" href="/assets/icon.svg" type="image/svg+xml"><link rel="stylesheet" href="/assets/app.css"><script src="/assets/app.js" defer></script>
</head><body>
<header class="top"><a class="brand" href="{esc(ctx.url("/"))}">memory<span>-mcp</span></a>
<nav>{nav("memories", "Memories", "/memories")}{nav("status", "Status", "/status")}{nav("stores", "Stores", "/stores")}</nav>
<div class="where" title="{esc(ctx.place.memories_dir)}">{esc(ctx.place.scope)}
{f"<b>{esc(ctx.place.name)}</b>" if ctx.place.store else ""} <code>{esc(ctx.place.root)}</code></div></header>
<main>{body}</main>
<footer>Local only: served on {LOOPBACK}. Files in <code>{esc(ctx.place.memories_dir)}</code> are the canon;
the index is derived.</footer>
</body></html>"""


def _badge(kind: str, value: str) -> str:
    return f'<span class="badge {kind} {kind}-{esc(value)}">{esc(value)}</span>'


def _flash(request: Request, error: str | None = None) -> str:
    if error:
        return f'<div class="flash error" role="alert">{esc(error)}</div>'
    done = DONE.get(request.query_params.get("done", ""))
    return f'<div class="flash ok" role="status">{esc(done)}</div>' if done else ""


def _memory_href(ctx: Ctx, mem_id: str, line: int | None = None) -> str:
    path = f"/memory/{quote(mem_id, safe='')}"
    if line is None:
        return ctx.url(path)
    start = 1 if line <= 200 else line - 20
    return ctx.url(path, **({"from": start} if start > 1 else {})) + f"#L{line}"


def _day(stamp: str | None) -> str:
    return (stamp or "")[:10]


def _options(values: list[str], selected: str, blank: str) -> str:
    out = [f'<option value="">{esc(blank)}</option>']
    for v in values:
        sel = " selected" if v == selected else ""
        out.append(f'<option value="{esc(v)}"{sel}>{esc(v)}</option>')
    return "".join(out)


def _chips(entities: list[str]) -> str:
    return "".join(f'<span class="chip">{esc(e)}</span>' for e in entities)


# ---------------------------------------------------------------- the app


class WebView:
    """Routes of the browser view over one MemoryService; `app` is the ASGI application."""

    def __init__(self, service: MemoryService, port: int, token: str | None = None) -> None:
        self.service = service
        self.port = port
        self.token = token or secrets.token_urlsafe(32)
        routes = [
            Route("/", self.memories),
            Route("/memories", self.memories),
            Route("/memory/{id}", self.memory),
            Route("/memory/{id}/edit", self.edit_form),
            Route("/memory/{id}/edit", self.edit_save, methods=["POST"]),
            Route("/memory/{id}/{action}", self.action, methods=["POST"]),
            Route("/status", self.status),
            Route("/stores", self.stores),
            Route("/document", self.document),
            Route("/assets/app.css", self.css),
            Route("/assets/app.js", self.js),
            Route("/assets/icon.svg", self.icon),
        ]
        # a memory body is at most 200,000 characters: no form needs more than a few megabytes
        self.app: ASGIApp = LoopbackGuard(Starlette(routes=routes, max_body_size=MAX_FORM_BYTES), port)

    # ------------------------------------------------------------ plumbing

    async def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await run_in_threadpool(fn, *args, **kwargs)

    async def _ctx(self, scope: object, store: object) -> Ctx:
        scope = scope if isinstance(scope, str) and scope else None
        store = store if isinstance(store, str) and store else None
        places: list[StoreInfo] = await self._call(self.service.stores)
        for place in places:
            if scope is None and store is None and place.home:
                return Ctx(place, places, self.token)
            if store is not None and place.store == store and scope in (None, place.scope):
                return Ctx(place, places, self.token)
            if store is None and scope == place.scope and place.store is None:
                return Ctx(place, places, self.token)
        # never create a store from a URL: only the places that exist can be viewed
        what = f"store '{store}'" if store else f"scope '{scope}'"
        raise NotFoundError(f"{what}: not a place this server serves (see /stores)")

    async def _form(self, request: Request) -> FormData:
        """The POSTed form, once the per-process token has been checked."""
        form = await request.form()
        sent = form.get(TOKEN_FIELD) or request.headers.get(TOKEN_HEADER) or ""
        if not isinstance(sent, str) or not hmac.compare_digest(sent.encode(), self.token.encode()):
            raise _Forbidden("the form token is missing or wrong (reload the page and try again)")
        return form

    def _page(self, ctx: Ctx, title: str, body: str, active: str = "", status: int = 200) -> HTMLResponse:
        return HTMLResponse(_layout(ctx, title, body, active), status_code=status)

    async def _guarded(self, request: Request, render: Callable[[Ctx], Awaitable[Response]]) -> Response:
        """Run a page; anticipated errors become a page with the message (and the right status)."""
        try:
            ctx = await self._ctx(request.query_params.get("scope"), request.query_params.get("store"))
        except MemoryMcpError as exc:
            return HTMLResponse(f"<!doctype html><title>error</title><p>{esc(exc)}</p>", status_code=404)
        try:
            return await render(ctx)
        except MemoryMcpError as exc:
            return self._page(ctx, "Error", _flash(request, str(exc)), status=_status_of(exc))

    # ------------------------------------------------------------ list and search

    async def memories(self, request: Request) -> Response:
        return await self._guarded(request, lambda ctx: self._memories(request, ctx))

    async def _memories(self, request: Request, ctx: Ctx) -> Response:
        p = request.query_params
        q, state, mtype, trust, entity = (p.get(k, "").strip() for k in ("q", "state", "type", "trust", "entity"))
        try:
            page = min(MAX_PAGE, max(1, int(p.get("page", "1"))))
        except ValueError:
            raise InputError("page: must be a whole number") from None
        filters = {"type": mtype or None, "trust": trust or None, "entity": entity or None, **ctx.where}
        listing = await self._call(
            self.service.browse,
            state=None if q else state or None,
            limit=1 if q else PAGE_SIZE,
            offset=0 if q else (page - 1) * PAGE_SIZE,
            **filters,
        )
        rows: list[str] = []
        if q:
            answer = await self._call(
                self.service.recall,
                q,
                limit=SEARCH_LIMIT,
                state=state or None,
                include_deprecated=not state or state == State.DEPRECATED.value,
                touch=False,  # a person browsing is not the agent recalling: leave the heat alone
                **filters,
            )
            for r in answer.results:
                if r.kind == "document":  # an indexed document chunk: open it at the cited line
                    href = ctx.url("/document", path=r.path, line=r.line) + f"#L{r.line}"
                else:
                    href = _memory_href(ctx, r.id, r.line)
                rows.append(
                    _item(
                        href,
                        r.id,
                        r.title,
                        r.excerpt,
                        r.type,
                        r.state,
                        r.trust,
                        r.entities,
                        r.updated,
                        cite=f"{r.path}:{r.line}",
                        score=r.score,
                        label=r.label,
                    )  # fmt: skip
                )
            summary = f"{len(answer.results)} result{'s' if len(answer.results) != 1 else ''} for <b>{esc(q)}</b>"
            summary += f' <span class="muted">(recall plan: {esc(answer.plan)})</span>'
            counts: dict[str, int] | None = None
        else:
            for m in listing.items:
                rows.append(
                    _item(
                        _memory_href(ctx, m.id),
                        m.id,
                        m.title,
                        m.excerpt,
                        m.type,
                        m.state,
                        m.trust,
                        m.entities,
                        m.updated,
                        cite=m.path,
                    )  # fmt: skip
                )
            first = (page - 1) * PAGE_SIZE + 1
            summary = (
                f"{first}–{first + len(rows) - 1} of {listing.total}" if rows else f"none of {listing.total}"
            ) + " memories, most recently updated first"
            counts = listing.state_counts
        keep = {"q": q, "type": mtype, "trust": trust, "entity": entity}
        tabs = []
        for value, label in [("", "All"), *((s.value, s.value.capitalize()) for s in State)]:
            n = (
                ""
                if counts is None
                else f" <span class=n>{sum(counts.values()) if not value else counts.get(value, 0)}</span>"
            )
            cls = "tab on" if value == state else "tab"
            tabs.append(
                f'<a class="{cls}" data-state="{esc(value or "all")}" href="{esc(ctx.url("/memories", state=value, **keep))}">'
                f"{label}{n}</a>"
            )
        pager = ""
        if not q and listing.total > PAGE_SIZE:
            nav = []
            if page > 1:
                nav.append(f'<a href="{esc(ctx.url("/memories", state=state, page=page - 1, **keep))}">← newer</a>')
            if page * PAGE_SIZE < listing.total:
                nav.append(f'<a href="{esc(ctx.url("/memories", state=state, page=page + 1, **keep))}">older →</a>')
            pager = f'<nav class="pager">{" ".join(nav)}</nav>'
        notices = _index_notices(ctx, listing.index)
        body = f"""{_flash(request)}{notices}
<form class="filters" method="get" action="/memories" role="search">
  <input type="search" name="q" value="{esc(q)}" placeholder="Search memories (the same recall as the tools)…" aria-label="search">
  <select name="type" aria-label="type">{_options([t.value for t in MemoryType], mtype, "any type")}</select>
  <select name="trust" aria-label="trust">{_options([t.value for t in Trust], trust, "any trust")}</select>
  <input name="entity" list="entities" value="{esc(entity)}" placeholder="entity" aria-label="entity">
  <datalist id="entities">{"".join(f'<option value="{esc(e)}">' for e in listing.entities)}</datalist>
  <input type="hidden" name="state" value="{esc(state)}">
  {"".join(f'<input type="hidden" name="{k}" value="{esc(v)}">' for k, v in _place_params(ctx.place).items())}
  <button type="submit">Search</button>
  <a class="reset" href="{esc(ctx.url("/memories"))}">Reset</a>
</form>
<nav class="tabs">{"".join(tabs)}</nav>
<p class="summary">{summary}</p>
<ol class="items">{"".join(rows) or '<li class="empty">Nothing matches.</li>'}</ol>{pager}"""
        return self._page(ctx, "Memories", body, "memories")

    # ------------------------------------------------------------ one memory

    async def memory(self, request: Request) -> Response:
        return await self._guarded(request, lambda ctx: self._memory_page(request, ctx, request.path_params["id"]))

    async def _memory_page(self, request: Request, ctx: Ctx, mem_id: str, error: str | None = None) -> Response:
        try:
            start = max(1, int(request.query_params.get("from", "1")))
        except ValueError:
            raise InputError("from: must be a whole number") from None
        fields: EditableMemory = await self._call(self.service.editable, mem_id, **ctx.where)
        read: ReadAnswer = await self._call(self.service.read, id=mem_id, from_line=start, **ctx.where)
        status = 200 if error is None else 400
        return self._page(ctx, fields.title, _flash(request, error) + _memory_body(ctx, fields, read), status=status)

    async def action(self, request: Request) -> Response:
        async def render(ctx: Ctx) -> Response:
            mem_id, action = request.path_params["id"], request.path_params["action"]
            form = await self._form(request)
            text = {k: v.strip() for k, v in form.items() if isinstance(v, str)}
            try:
                if action == "archive":
                    await self._call(self.service.forget, mem_id, "archive", **ctx.where)
                elif action == "restore":
                    await self._call(self.service.update, "set_state", mem_id, state="active", **ctx.where)
                elif action == "reactivate":
                    reason = text.get("reason", "")
                    await self._call(
                        self.service.update, "set_state", mem_id, state="active", reason=reason, **ctx.where
                    )
                elif action == "deprecate":
                    reason = text.get("reason", "")
                    await self._call(self.service.forget, mem_id, "deprecate", reason=reason, **ctx.where)
                elif action == "purge":
                    fields = await self._call(self.service.editable, mem_id, **ctx.where)
                    typed = text.get("confirm_text", "")
                    if typed not in (fields.id, fields.title):
                        raise InputError("confirm: type the memory's id or its exact title to purge it")
                    await self._call(self.service.forget, mem_id, "purge", confirm=True, **ctx.where)
                    return RedirectResponse(ctx.url("/memories", done="purge"), status_code=303)
                elif action == "resolve":
                    choice = text.get("choice", "keep_both")
                    winner = choice.removeprefix("win:") if choice.startswith("win:") else None
                    await self._call(
                        self.service.update,
                        "resolve_conflict",
                        mem_id,
                        pair_hash=text.get("pair_hash", ""),
                        resolution="supersede" if winner else "keep_both",
                        winner=winner,
                        note=text.get("note") or None,
                        **ctx.where,
                    )
                else:
                    return self._page(ctx, "Not found", _flash(request, f"no action '{action}'"), status=404)
            except MemoryMcpError as exc:  # show the memory again with the reason (a gone memory: 404 page)
                page = await self._memory_page(request, ctx, mem_id, error=str(exc))
                page.status_code = _status_of(exc)
                return page
            return RedirectResponse(ctx.url(f"/memory/{quote(mem_id, safe='')}", done=action), status_code=303)

        return await self._guarded_post(request, render)

    async def _guarded_post(self, request: Request, render: Callable[[Ctx], Awaitable[Response]]) -> Response:
        try:
            form = await request.form()
            ctx = await self._ctx(form.get("scope"), form.get("store"))
        except MemoryMcpError as exc:
            return HTMLResponse(f"<!doctype html><title>error</title><p>{esc(exc)}</p>", status_code=404)
        try:
            return await render(ctx)
        except _Forbidden as exc:
            return self._page(ctx, "Forbidden", _flash(request, str(exc)), status=403)
        except MemoryMcpError as exc:
            return self._page(ctx, "Error", _flash(request, str(exc)), status=_status_of(exc))

    # ------------------------------------------------------------ edit (stale-write protected)

    async def edit_form(self, request: Request) -> Response:
        async def render(ctx: Ctx) -> Response:
            fields = await self._call(self.service.editable, request.path_params["id"], **ctx.where)
            return self._page(ctx, f"Edit {fields.title}", _edit_body(ctx, fields, _values_of(fields)))

        return await self._guarded(request, render)

    async def edit_save(self, request: Request) -> Response:
        async def render(ctx: Ctx) -> Response:
            mem_id = request.path_params["id"]
            form = await self._form(request)
            sent = {k: (form.get(k) if isinstance(form.get(k), str) else "") for k in EDIT_FIELDS + ("sha256",)}
            submitted = {k: str(sent[k]).replace("\r\n", "\n") for k in EDIT_FIELDS}  # browsers send CRLF
            current: EditableMemory = await self._call(self.service.editable, mem_id, **ctx.where)
            if current.sha256 != sent["sha256"]:
                return await self._stale(request, ctx, current, submitted)
            changes = _changes(current, submitted)
            if not changes:
                return RedirectResponse(ctx.url(f"/memory/{quote(mem_id, safe='')}", done="unchanged"), 303)
            try:
                await self._call(
                    self.service.update, "edit", mem_id, expected_sha256=current.sha256, **ctx.where, **changes
                )
            except StaleWriteError:  # changed between our read and the write: the service refused it
                fresh = await self._call(self.service.editable, mem_id, **ctx.where)
                return await self._stale(request, ctx, fresh, submitted)
            except MemoryMcpError as exc:
                body = _flash(request, str(exc)) + _edit_body(ctx, current, submitted)
                return self._page(ctx, f"Edit {current.title}", body, status=_status_of(exc))
            return RedirectResponse(ctx.url(f"/memory/{quote(mem_id, safe='')}", done="edit"), status_code=303)

        return await self._guarded_post(request, render)

    async def _stale(self, request: Request, ctx: Ctx, current: EditableMemory, submitted: dict[str, str]) -> Response:
        """Nothing was written: show the file as it is now, keep the person's text, arm the form anew."""
        read: ReadAnswer = await self._call(self.service.read, id=current.id, **ctx.where)
        notice = (
            '<div class="flash error stale" role="alert"><b>This file changed since you opened it; nothing was '
            "saved.</b> The current version is shown below and your changes are still in the form. Saving again "
            "replaces the current version with what is in the form.</div>"
        )
        body = (
            notice
            + _edit_body(ctx, current, submitted)
            + (f'<section class="card"><h2>Current version on disk</h2>{_source_lines(read)}</section>')
        )
        return self._page(ctx, f"Edit {current.title}", body, status=409)

    # ------------------------------------------------------------ status and stores

    async def status(self, request: Request) -> Response:
        async def render(ctx: Ctx) -> Response:
            answer: StatusAnswer = await self._call(self.service.status, **ctx.where)
            return self._page(ctx, "Status", _flash(request) + _status_body(ctx, answer), "status")

        return await self._guarded(request, render)

    async def stores(self, request: Request) -> Response:
        async def render(ctx: Ctx) -> Response:
            rows = []
            for p in ctx.places:
                href = "/memories" + ("?" + urlencode(_place_params(p)) if _place_params(p) else "")
                notes = " <span class=muted>(home: new memories go here)</span>" if p.home else ""
                if p == ctx.place:
                    notes += " <span class=badge>viewing</span>"
                rows.append(
                    f'<tr><td>{esc(p.scope)}</td><td><a href="{esc(href)}">{esc(p.name)}</a>{notes}</td>'
                    f"<td><code>{esc(p.root)}</code></td><td><code>{esc(p.memories_dir)}</code></td></tr>"
                )
            body = f"""<h1>Scopes and stores</h1>
<p class="muted"><b>local</b> is the bound project's memory, <b>global</b> the account's; named stores next to
the global one are reached with <code>store=NAME</code>. Each memory is one Markdown file in its memories
directory.</p>
<table class="grid"><thead><tr><th>Scope</th><th>Store</th><th>Directory</th><th>Memories directory</th></tr>
</thead><tbody>{"".join(rows)}</tbody></table>"""
            return self._page(ctx, "Stores", body, "stores")

        return await self._guarded(request, render)

    async def document(self, request: Request) -> Response:
        """An indexed document (read-only source) around a cited line, read through the service."""

        async def render(ctx: Ctx) -> Response:
            p = request.query_params
            try:
                line = max(1, int(p.get("line", "1")))
            except ValueError:
                raise InputError("line: must be a whole number") from None
            start = max(1, line - 20)
            read: ReadAnswer = await self._call(self.service.read, path=p.get("path", ""), from_line=start, **ctx.where)
            body = f"""<p class="crumbs"><a href="{esc(ctx.url("/memories"))}">Memories</a> ›</p>
<h1 class="mem-title"><code>{esc(read.path)}</code></h1>
<p class="muted">An indexed document: read-only here (edit it in its own place); lines {read.from_line}–{read.to_line}
of {read.total_lines}.</p><section class="card">{_source_lines(read)}</section>"""
            return self._page(ctx, read.path, body)

        return await self._guarded(request, render)

    async def css(self, request: Request) -> Response:
        return Response(CSS, media_type="text/css")

    async def js(self, request: Request) -> Response:
        return Response(JS, media_type="text/javascript")

    async def icon(self, request: Request) -> Response:
        return Response(ICON, media_type="image/svg+xml")


class _Forbidden(Exception):
    """A POST without the right token."""


# ---------------------------------------------------------------- fragments


def _item(
    href: str,
    mem_id: str,
    title: str,
    excerpt: str,
    mtype: str,
    state: str,
    trust: str,
    entities: list[str],
    updated: str,
    cite: str,
    score: float | None = None,
    label: str | None = None,
) -> str:
    score_html = f'<span class="score" title="recall score">{score:.3f}</span>' if score is not None else ""
    if label:
        score_html = f'<span class="chip">{esc(label)}</span>' + score_html
    return f"""<li class="item state-{esc(state)}" data-id="{esc(mem_id)}" data-state="{esc(state)}" data-type="{esc(mtype)}" data-trust="{esc(trust)}">
<div class="head"><a class="title" href="{esc(href)}">{esc(title)}</a>
{_badge("type", mtype)}{_badge("state", state)}{_badge("trust", trust)}{score_html}</div>
<p class="excerpt">{esc(excerpt)}</p>
<div class="meta"><code class="cite">{esc(cite)}</code>{_chips(entities)}<span class="muted">updated {esc(_day(updated))}</span></div>
</li>"""


def _index_notices(ctx: Ctx, index: Any) -> str:
    parts = []
    if index.unresolved_conflicts_total:
        n = index.unresolved_conflicts_total
        parts.append(f"{n} unresolved conflict{'s' if n != 1 else ''}")
    if index.unparseable:
        n = len(index.unparseable)
        parts.append(f"{n} unparseable file{'s' if n != 1 else ''}")
    if not parts:
        return ""
    return f'<div class="notice">{" · ".join(parts)} — <a href="{esc(ctx.url("/status"))}">see status</a></div>'


def _source_lines(read: ReadAnswer) -> str:
    lines = read.text.split("\n") if read.text else []
    rows = "".join(
        f'<tr id="L{n}"><td class="ln"><a href="#L{n}">{n}</a></td><td class="code">{esc(line) or " "}</td></tr>'
        for n, line in enumerate(lines, read.from_line)
    )
    more = ""
    if read.to_line < read.total_lines:
        more = f'<p class="muted">lines {read.from_line}–{read.to_line} of {read.total_lines}</p>'
    return f'<table class="src"><tbody>{rows}</tbody></table>{more}'


def _fm_value(value: Any) -> str:
    if isinstance(value, list):
        if value and all(isinstance(v, dict) for v in value):
            return "".join(f"<div>{_fm_value(v)}</div>" for v in value)
        return _chips([str(v) for v in value]) if value else '<span class="muted">[]</span>'
    if isinstance(value, dict):
        return ", ".join(f"{esc(k)}: {esc(v)}" for k, v in value.items())
    return esc(value) if value not in (None, "") else '<span class="muted">—</span>'


def _memory_body(ctx: Ctx, m: EditableMemory, read: ReadAnswer) -> str:
    base = f"/memory/{quote(m.id, safe='')}"
    fm_rows = "".join(f"<tr><th>{esc(k)}</th><td>{_fm_value(v)}</td></tr>" for k, v in read.frontmatter.items())

    def link(c: Any) -> str:
        if c.path is None:
            return f'<span class="link missing">{esc(c.id)} (missing)</span>'
        return f'<a class="link" href="{esc(_memory_href(ctx, c.id))}">{esc(c.title)}</a>{_badge("state", c.state)}'

    chain = ""
    if read.supersedes_chain or read.superseded_by_chain:
        older = [link(c) for c in reversed(read.supersedes_chain)]
        newer = [link(c) for c in read.superseded_by_chain]
        steps = [*older, f'<b class="link this">{esc(m.title)}</b>{_badge("state", m.state)}', *newer]
        chain = (
            '<section class="card"><h2>Supersede chain</h2><p class="muted">oldest first</p>'
            f'<ol class="chain">{"".join(f"<li>{s}</li>" for s in steps)}</ol></section>'
        )
    conflicts = ""
    if read.conflicts:
        items = []
        for c in read.conflicts:
            other = f'<a href="{esc(_memory_href(ctx, c.other_id))}">{esc(c.other_title or c.other_id)}</a>'
            head = f'{_badge("conflict", c.status)} with {other} <span class="muted">detected {esc(_day(c.detected))} · pair {esc(c.pair_hash)}</span>'
            if c.status == "open":
                resolve = f"""<form method="post" action="{esc(base)}/resolve" class="resolve">{ctx.hidden()}
<input type="hidden" name="pair_hash" value="{esc(c.pair_hash)}">
<label><input type="radio" name="choice" value="keep_both" checked> Keep both (they do not contradict)</label>
<label><input type="radio" name="choice" value="win:{esc(m.id)}"> This one wins (the other is superseded and archived)</label>
<label><input type="radio" name="choice" value="win:{esc(c.other_id)}"> The other wins (this one is superseded and archived)</label>
<input name="note" placeholder="note (optional)" aria-label="note">
<button type="submit">Resolve conflict</button></form>"""
                items.append(f"<li>{head}{resolve}</li>")
            else:
                detail = " · ".join(
                    esc(x) for x in (c.resolution, f"resolved {_day(c.resolved)}" if c.resolved else None, c.note) if x
                )
                items.append(f'<li>{head}<div class="muted">{detail}</div></li>')
        conflicts = f'<section class="card"><h2>Conflicts</h2><ul class="conflicts">{"".join(items)}</ul></section>'
    actions = []
    state = State(m.state)
    if state is not State.DEPRECATED:
        actions.append(f'<a class="button" href="{esc(ctx.url(base + "/edit"))}">Edit</a>')
    if state is State.ACTIVE:
        actions.append(
            f'<form method="post" action="{esc(base)}/archive">{ctx.hidden()}'
            '<button type="submit" name="archive">Archive</button></form>'
        )
    if state is State.ARCHIVED:
        actions.append(
            f'<form method="post" action="{esc(base)}/restore">{ctx.hidden()}'
            '<button type="submit">Restore to active</button></form>'
        )
    if state is State.DEPRECATED and State.ACTIVE in ALLOWED[state]:
        actions.append(
            f'<form method="post" action="{esc(base)}/reactivate" class="stack">{ctx.hidden()}'
            '<input name="reason" required placeholder="why it holds again (required)" aria-label="reason">'
            '<button type="submit">Reactivate</button></form>'
        )
    if State.DEPRECATED in ALLOWED[state]:
        actions.append(
            f'<form method="post" action="{esc(base)}/deprecate" class="stack">{ctx.hidden()}'
            '<input name="reason" required placeholder="why it is wrong or obsolete (required)" aria-label="reason">'
            '<button type="submit">Deprecate</button></form>'
        )
    if state in PURGEABLE:
        actions.append(
            f'<form method="post" action="{esc(base)}/purge" class="stack purge">{ctx.hidden()}'
            f'<input name="confirm_text" autocomplete="off" data-id="{esc(m.id)}" data-title="{esc(m.title)}" '
            f'placeholder="type the id or title to purge" aria-label="confirm purge">'
            '<button type="submit" class="danger">Purge (delete the file)</button></form>'
        )
    else:
        actions.append('<p class="muted">To purge it, archive or deprecate it first.</p>')
    return f"""<p class="crumbs"><a href="{esc(ctx.url("/memories"))}">Memories</a> ›</p>
<h1 class="mem-title">{esc(m.title)}</h1>
<div class="mem-meta">{_badge("type", m.type)}{_badge("state", m.state)}{_badge("trust", m.trust)}{_chips(m.entities)}
<span class="muted">id <code>{esc(m.id)}</code> · <code>{esc(read.path)}</code> · sha256 <code title="{esc(read.sha256)}">{esc(read.sha256[:12])}</code></span></div>
<div class="cols"><section class="card wide"><h2>File</h2>{_source_lines(read)}</section>
<aside><section class="card actions"><h2>Actions</h2>{"".join(actions)}</section>
{chain}{conflicts}
<section class="card"><h2>Frontmatter</h2><table class="kv">{fm_rows}</table></section></aside></div>"""


EDIT_FIELDS = ("title", "body", "type", "trust", "entities", "source", "review_after")


def _values_of(m: EditableMemory) -> dict[str, str]:
    return {
        "title": m.title,
        "body": m.body,
        "type": m.type,
        "trust": m.trust,
        "entities": ", ".join(m.entities),
        "source": m.source,
        "review_after": m.review_after or "",
    }


def _entities_of(text: str) -> list[str]:
    return [e.strip() for e in text.replace("\n", ",").split(",") if e.strip()]


def _changes(current: EditableMemory, submitted: dict[str, str]) -> dict[str, Any]:
    """The form fields that differ from the file, as service.update arguments (only those are sent)."""
    before = _values_of(current)
    changes: dict[str, Any] = {}
    for key in EDIT_FIELDS:
        new = submitted[key].strip()
        if key == "entities":
            if _entities_of(new) != current.entities:
                changes[key] = _entities_of(new)
        elif new != before[key].strip():
            changes[key] = new
    return changes


def _edit_body(ctx: Ctx, m: EditableMemory, values: dict[str, str]) -> str:
    base = f"/memory/{quote(m.id, safe='')}"
    types = "".join(
        f'<option value="{t.value}"{" selected" if t.value == values["type"] else ""}>{t.value}</option>'
        for t in MemoryType
    )
    trusts = "".join(
        f'<option value="{t.value}"{" selected" if t.value == values["trust"] else ""}>{t.value}</option>'
        for t in Trust
    )
    return f"""<p class="crumbs"><a href="{esc(ctx.url("/memories"))}">Memories</a> ›
<a href="{esc(ctx.url(base))}">{esc(m.title)}</a> ›</p>
<h1>Edit memory</h1>
<form method="post" action="{esc(base)}/edit" class="card edit">{ctx.hidden()}
<input type="hidden" name="sha256" value="{esc(m.sha256)}">
<label>Title <input name="title" value="{esc(values["title"])}" required maxlength="200"></label>
<label>Body (Markdown) <textarea name="body" rows="14">{esc(values["body"])}</textarea></label>
<div class="row">
<label>Type <select name="type">{types}</select></label>
<label>Trust <select name="trust">{trusts}</select></label>
<label>Review after <input name="review_after" type="date" value="{esc(values["review_after"])}"></label>
</div>
<label>Entities (comma-separated) <input name="entities" value="{esc(values["entities"])}"></label>
<label>Source <input name="source" value="{esc(values["source"])}"></label>
<p class="muted">Saved only if <code>{esc(m.path)}</code> still has sha256 <code>{esc(m.sha256[:12])}</code>;
otherwise nothing is written and you see the new version.</p>
<div class="row"><button type="submit" class="primary">Save</button>
<a class="button" href="{esc(ctx.url(base))}">Cancel</a></div>
</form>"""


def _status_body(ctx: Ctx, a: StatusAnswer) -> str:
    def counts(d: dict[str, int]) -> str:
        return " ".join(f'<span class="count">{esc(k)} <b>{v}</b></span>' for k, v in sorted(d.items()))

    def mem(mem_id: str, title: str) -> str:
        return f'<a href="{esc(_memory_href(ctx, mem_id))}">{esc(title)}</a>'

    def section(title: str, items: list[str], empty: str) -> str:
        inner = f"<ul>{''.join(f'<li>{i}</li>' for i in items)}</ul>" if items else f'<p class="muted">{empty}</p>'
        return f'<section class="card"><h2>{title} <span class="n">{len(items)}</span></h2>{inner}</section>'

    conflicts = [
        f'{mem(c.a_id, c.a_title)} <span class="vs">vs</span> {mem(c.b_id, c.b_title)} '
        f'<span class="muted">detected {esc(_day(c.detected))}</span>'
        for c in a.unresolved_conflicts
    ]
    review = [
        f'{mem(r.id, r.title)} <span class="muted">review after {esc(r.review_after)}</span>' for r in a.review_due
    ]
    compaction = [
        f"<b>{esc(c.entity)}</b>: {', '.join(mem(i, t) for i, t in zip(c.ids, c.titles, strict=False))}"
        f'<div class="muted">{esc(_day(c.oldest))} … {esc(_day(c.newest))} — {esc(c.suggestion)}</div>'
        for c in a.compaction_candidates
    ]
    unparseable = [f"<code>{esc(u.path)}</code> — {esc(u.reason)}" for u in a.unparseable]
    ix = a.index
    rec = ix.last_reconcile
    freshness = f"""<table class="kv">
<tr><th>index file</th><td><code>{esc(ix.path)}</code> ({ix.size_bytes:,} bytes, schema {ix.schema_version})</td></tr>
<tr><th>built at</th><td>{esc(ix.built_at)}</td></tr>
<tr><th>last reconcile</th><td>scanned {rec.scanned} files, hashed {rec.hashed}, reindexed {rec.reindexed},
removed {rec.removed}, unparseable {rec.unparseable} in {rec.seconds * 1000:.1f} ms{" — rebuilt: " + esc(rec.rebuild_reason) if rec.rebuilt else ""}</td></tr>
<tr><th>not restored by a rebuild</th><td>{esc("; ".join(ix.not_restored_by_rebuild))}</td></tr></table>"""
    return f"""<h1>Status of <code>{esc(a.store)}</code></h1>
<p class="muted"><code>{esc(a.root)}</code> · {a.total} memories</p>
<section class="card"><h2>Counts</h2><p>{counts(a.by_state)}</p><p>{counts(a.by_type)}</p><p>{counts(a.by_trust)}</p></section>
<div class="grid2">
{section("Unresolved conflicts", conflicts, "No open conflicts.")}
{section("Review due", review, "Nothing is due for review.")}
{section("Compaction candidates", compaction, "No groups of episodes left unedited and un-recalled for long.")}
{section("Unparseable files", unparseable, "Every file parses.")}
</div>
<section class="card"><h2>Index freshness</h2>{freshness}</section>"""


# ---------------------------------------------------------------- serving


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


# ---------------------------------------------------------------- static assets

ICON = """<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#1d2330"/>
<path d="M8 23V10l8 8 8-8v13" fill="none" stroke="#91a7ff" stroke-width="3" stroke-linejoin="round"/></svg>"""

JS = """// memory-mcp browser view: a little progressive enhancement, nothing required for the forms to work.
document.querySelectorAll("form.purge").forEach(function (form) {
  var input = form.querySelector("input[name=confirm_text]");
  var button = form.querySelector("button");
  function check() {
    var v = input.value.trim();
    button.disabled = !(v === input.dataset.id || v === input.dataset.title);
  }
  input.addEventListener("input", check);
  check();
});
document.querySelectorAll("form.filters select").forEach(function (select) {
  select.addEventListener("change", function () { select.form.requestSubmit(); });
});
"""

CSS = """
:root { --bg: #f6f7f9; --card: #fff; --ink: #1d2330; --muted: #6b7280; --line: #e3e6eb; --accent: #3b5bdb;
  --ok: #2b8a3e; --warn: #b7791f; --bad: #c92a2a; --code: #f1f3f5; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Noto Sans KR", sans-serif; }
a { color: var(--accent); text-decoration: none; } a:hover { text-decoration: underline; }
code { font: 13px/1.4 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; background: var(--code);
  padding: 1px 4px; border-radius: 4px; }
header.top { display: flex; align-items: center; gap: 24px; padding: 10px 24px; background: #1d2330; color: #dfe3ea; }
header.top .brand { color: #fff; font-weight: 700; font-size: 17px; } header.top .brand span { color: #91a7ff; }
header.top nav a { color: #c5cbd6; margin-right: 14px; padding: 4px 2px; }
header.top nav a.on { color: #fff; border-bottom: 2px solid #91a7ff; }
header.top .where { margin-left: auto; font-size: 13px; color: #aab2c0; }
header.top .where code { background: #2c3445; color: #dfe3ea; }
main { max-width: 1180px; margin: 0 auto; padding: 20px 24px 40px; }
footer { max-width: 1180px; margin: 0 auto; padding: 0 24px 30px; color: var(--muted); font-size: 12px; }
h1 { font-size: 24px; margin: 6px 0 8px; } h2 { font-size: 15px; margin: 0 0 10px; color: #3a4150; }
.muted { color: var(--muted); font-size: 13px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 14px 16px; margin-bottom: 14px; }
.flash { padding: 10px 14px; border-radius: 8px; margin-bottom: 14px; }
.flash.ok { background: #ebfbee; border: 1px solid #b2f2bb; } .flash.error { background: #fff5f5; border: 1px solid #ffc9c9; }
.notice { background: #fff9db; border: 1px solid #ffe066; padding: 8px 12px; border-radius: 8px; margin-bottom: 12px; font-size: 14px; }
form.filters { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin-bottom: 12px; }
form.filters input[type=search] { flex: 1 1 320px; }
input, select, textarea, button, .button { font: inherit; font-size: 14px; border: 1px solid #cfd4dc; border-radius: 7px;
  padding: 6px 10px; background: #fff; color: var(--ink); }
textarea { width: 100%; font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 13px; }
button, .button { cursor: pointer; background: #f1f3f5; display: inline-block; }
button:hover, .button:hover { background: #e9ecef; text-decoration: none; }
button.primary, form.filters button { background: var(--accent); color: #fff; border-color: var(--accent); }
button.danger { background: #fff; color: var(--bad); border-color: #ffa8a8; }
button:disabled { opacity: .45; cursor: not-allowed; }
.reset { font-size: 13px; }
nav.tabs { display: flex; gap: 4px; border-bottom: 1px solid var(--line); margin-bottom: 10px; }
nav.tabs .tab { padding: 6px 12px; color: var(--muted); border-bottom: 2px solid transparent; }
nav.tabs .tab.on { color: var(--ink); border-color: var(--accent); font-weight: 600; }
.n { display: inline-block; min-width: 20px; text-align: center; font-size: 12px; background: #e9ecef;
  border-radius: 10px; padding: 0 6px; color: #495057; font-weight: 500; }
.summary { color: var(--muted); font-size: 13px; margin: 6px 0 10px; }
ol.items { list-style: none; padding: 0; margin: 0; }
ol.items li.item { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 10px 14px; margin-bottom: 8px; }
ol.items li.state-archived { background: #fcfcfd; } ol.items li.state-deprecated { opacity: .75; }
li.item .head { display: flex; align-items: center; gap: 6px; flex-wrap: wrap; }
li.item .title { font-weight: 600; font-size: 16px; margin-right: 6px; }
li.item .excerpt { margin: 4px 0 6px; color: #3a4150; font-size: 14px; }
li.item .meta { display: flex; gap: 6px; flex-wrap: wrap; align-items: center; font-size: 12px; }
.cite { font-size: 12px; } .score { margin-left: auto; font: 12px ui-monospace, monospace; color: var(--muted); }
.empty { color: var(--muted); padding: 20px; text-align: center; }
.badge { display: inline-block; font-size: 11.5px; padding: 1px 8px; border-radius: 10px; background: #edf2ff; color: #364fc7;
  border: 1px solid #dbe4ff; white-space: nowrap; }
.badge.state-active { background: #ebfbee; color: var(--ok); border-color: #b2f2bb; }
.badge.state-archived { background: #fff9db; color: var(--warn); border-color: #ffec99; }
.badge.state-deprecated, .badge.state-missing { background: #fff5f5; color: var(--bad); border-color: #ffc9c9; }
.badge.trust { background: #f8f9fa; color: #495057; border-color: #dee2e6; }
.badge.conflict-open { background: #fff5f5; color: var(--bad); border-color: #ffc9c9; }
.badge.conflict-resolved { background: #ebfbee; color: var(--ok); border-color: #b2f2bb; }
.chip { display: inline-block; font-size: 12px; padding: 0 7px; border-radius: 4px; background: #f1f3f5; color: #495057; }
.crumbs { margin: 0; font-size: 13px; }
.mem-meta { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; margin-bottom: 14px; }
.cols { display: grid; grid-template-columns: minmax(0, 1fr) 360px; gap: 14px; align-items: start; }
@media (max-width: 900px) { .cols { grid-template-columns: 1fr; } }
table.src { border-collapse: collapse; width: 100%; font: 13px/1.5 ui-monospace, Menlo, Consolas, monospace; }
table.src td.ln { width: 1%; padding: 0 10px 0 0; text-align: right; color: #adb5bd; user-select: none; vertical-align: top; }
table.src td.ln a { color: inherit; } table.src td.code { white-space: pre-wrap; word-break: break-word; }
table.src tr:target { background: #fff3bf; }
table.kv { border-collapse: collapse; width: 100%; font-size: 13px; }
table.kv th { text-align: left; color: var(--muted); font-weight: 500; padding: 3px 10px 3px 0; vertical-align: top; white-space: nowrap; }
table.kv td { padding: 3px 0; word-break: break-word; }
table.grid { border-collapse: collapse; width: 100%; background: var(--card); border: 1px solid var(--line); }
table.grid th, table.grid td { text-align: left; padding: 8px 12px; border-bottom: 1px solid var(--line); }
.actions form, .actions > a { margin: 0 0 8px; }
.actions form.stack { display: grid; gap: 6px; } .actions form.stack button { justify-self: start; }
ol.chain { margin: 0; padding-left: 20px; } ol.chain li { margin: 3px 0; } ol.chain .this { color: var(--ink); }
ol.chain .badge { margin-left: 6px; }
ul.conflicts { list-style: none; padding: 0; margin: 0; } ul.conflicts > li { margin-bottom: 10px; }
form.resolve { display: grid; gap: 4px; margin-top: 6px; font-size: 13px; }
form.edit label { display: block; margin-bottom: 10px; font-size: 13px; color: #3a4150; }
form.edit label input, form.edit label select { display: block; width: 100%; margin-top: 3px; }
form.edit .row { display: flex; gap: 12px; align-items: end; } form.edit .row label { flex: 1; }
.grid2 { display: grid; grid-template-columns: 1fr 1fr; gap: 14px; } .grid2 .card { margin: 0; }
@media (max-width: 900px) { .grid2 { grid-template-columns: 1fr; } }
.grid2 ul { margin: 0; padding-left: 18px; } .grid2 li { margin-bottom: 6px; }
.count { display: inline-block; margin-right: 14px; color: var(--muted); } .count b { color: var(--ink); }
.vs { color: var(--bad); font-weight: 600; font-size: 12px; }
.pager { display: flex; gap: 16px; justify-content: center; margin-top: 12px; }
"""
