"""The browser view's routes: each reads the request, calls MemoryService, and renders a template.

Pages are templates in `templates/` (rendered by `render.py`), assets are files in `static/`; both are
served behind the LoopbackGuard. What lives here is only what a browser edge needs on top of that:

- every POST must carry the per-process random token that only pages served here contain;
- the edit form carries the sha256 of the file it was filled from, and the service refuses the write if
  the file changed meanwhile: the page then shows the new version and keeps what the person typed.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from ...domain import provenance
from ...domain.errors import InputError, MemoryMcpError, NotFoundError, StaleWriteError, TransitionError
from ...domain.lifecycle import ALLOWED, PURGEABLE
from ...domain.models import EditableMemory, ReadAnswer, State, StatusAnswer, StoreInfo
from ...tools.service import MemoryService
from . import forms
from .guard import LoopbackGuard
from .render import render

PAGE_SIZE = 100
MAX_PAGE = 100_000
MAX_FORM_BYTES = 4 * 1024 * 1024
SEARCH_LIMIT = 20  # the recall tool's maximum
TOKEN_FIELD = "_token"
TOKEN_HEADER = "x-memory-token"
STATIC_DIR = Path(__file__).parent / "static"

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


def _status_of(exc: MemoryMcpError) -> int:
    return next(code for cls, code in ERROR_STATUS if isinstance(exc, cls))


def _place_params(place: StoreInfo) -> dict[str, str]:
    """The URL/form parameters that select a place; none for the home place."""
    if place.home:
        return {}
    return {"scope": place.scope, **({"store": place.store} if place.store else {})}


def _place_url(place: StoreInfo) -> str:
    params = _place_params(place)
    return "/memories" + ("?" + urlencode(params) if params else "")


@dataclass
class Ctx:
    """Per-request rendering context: the place (scope, or named global store) viewed and the form token."""

    place: StoreInfo
    places: list[StoreInfo]
    token: str
    token_field: str = TOKEN_FIELD

    @property
    def where(self) -> dict[str, str | None]:
        """Service keyword arguments: every call stays in the place being viewed."""
        return {"scope": self.place.scope, "store": self.place.store}

    @property
    def place_params(self) -> dict[str, str]:
        return _place_params(self.place)

    def url(self, target: str, /, **params: object) -> str:
        query = {k: v for k, v in params.items() if v not in (None, "")}
        query.update(self.place_params)
        return target + ("?" + urlencode(query) if query else "")

    @staticmethod
    def memory_path(mem_id: str) -> str:
        return f"/memory/{quote(mem_id, safe='')}"

    def memory_url(self, mem_id: str, line: int | None = None) -> str:
        """A memory's page in this place; with a line, scrolled to it (a long file opens near it)."""
        path = self.memory_path(mem_id)
        if line is None:
            return self.url(path)
        start = 1 if line <= 200 else line - 20
        return self.url(path, **({"from": start} if start > 1 else {})) + f"#L{line}"


@dataclass(frozen=True)
class Moves:
    """The buttons a memory page offers: only the moves `lifecycle.py` allows from the memory's state."""

    edit: bool
    archive: bool
    restore: bool
    reactivate: bool
    deprecate: bool
    purge: bool

    @classmethod
    def of(cls, state: State) -> Moves:
        return cls(
            edit=state is not State.DEPRECATED,
            archive=state is State.ACTIVE,
            restore=state is State.ARCHIVED,
            reactivate=state is State.DEPRECATED and State.ACTIVE in ALLOWED[state],
            deprecate=State.DEPRECATED in ALLOWED[state],
            purge=state in PURGEABLE,
        )


class _Forbidden(Exception):
    """A POST without the right token."""


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
            Mount("/assets", StaticFiles(directory=STATIC_DIR), name="assets"),
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

    def _page(
        self, request: Request, ctx: Ctx, template: str, title: str, active: str = "", status: int = 200, **values: Any
    ) -> HTMLResponse:
        values.setdefault("error", None)
        done = DONE.get(request.query_params.get("done", ""))
        page = render(template, ctx=ctx, title=title, active=active, done=done, **values)
        return HTMLResponse(page, status_code=status)

    def _error(self, request: Request, ctx: Ctx, title: str, message: str, status: int) -> HTMLResponse:
        return self._page(request, ctx, "error.html", title, status=status, error=message)

    @staticmethod
    def _no_place(exc: MemoryMcpError) -> HTMLResponse:
        return HTMLResponse(render("no_place.html", error=str(exc)), status_code=404)

    async def _guarded(self, request: Request, render_page: Callable[[Ctx], Awaitable[Response]]) -> Response:
        """Run a page; anticipated errors become a page with the message (and the right status)."""
        try:
            ctx = await self._ctx(request.query_params.get("scope"), request.query_params.get("store"))
        except MemoryMcpError as exc:
            return self._no_place(exc)
        try:
            return await render_page(ctx)
        except MemoryMcpError as exc:
            return self._error(request, ctx, "Error", str(exc), _status_of(exc))

    async def _guarded_post(self, request: Request, render_page: Callable[[Ctx], Awaitable[Response]]) -> Response:
        try:
            form = await request.form()
            ctx = await self._ctx(form.get("scope"), form.get("store"))
        except MemoryMcpError as exc:
            return self._no_place(exc)
        try:
            return await render_page(ctx)
        except _Forbidden as exc:
            return self._error(request, ctx, "Forbidden", str(exc), 403)
        except MemoryMcpError as exc:
            return self._error(request, ctx, "Error", str(exc), _status_of(exc))

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
        answer = None
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
        return self._page(
            request, ctx, "memories.html", "Memories", "memories",
            q=q, state=state, mtype=mtype, trust=trust, entity=entity, page=page, page_size=PAGE_SIZE,
            listing=listing, answer=answer, counts=None if q else listing.state_counts,
        )  # fmt: skip

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
        return self._page(
            request, ctx, "memory.html", fields.title, status=200 if error is None else 400,
            m=fields, read=read, moves=Moves.of(State(fields.state)), error=error,
        )  # fmt: skip

    async def action(self, request: Request) -> Response:
        async def run(ctx: Ctx) -> Response:
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
                elif action == "release":  # a person's decision: the one place besides the CLI that releases
                    await self._call(self.service.release, mem_id, **ctx.where)
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
                    return self._error(request, ctx, "Not found", f"no action '{action}'", 404)
            except MemoryMcpError as exc:  # show the memory again with the reason (a gone memory: 404 page)
                page = await self._memory_page(request, ctx, mem_id, error=str(exc))
                page.status_code = _status_of(exc)
                return page
            return RedirectResponse(ctx.url(ctx.memory_path(mem_id), done=action), status_code=303)

        return await self._guarded_post(request, run)

    # ------------------------------------------------------------ edit (stale-write protected)

    def _edit_page(
        self, request: Request, ctx: Ctx, m: EditableMemory, values: dict[str, str], status: int = 200, **extra: Any
    ) -> HTMLResponse:
        extra.setdefault("current", None)
        return self._page(request, ctx, "edit.html", f"Edit {m.title}", status=status, m=m, values=values, **extra)

    async def edit_form(self, request: Request) -> Response:
        async def run(ctx: Ctx) -> Response:
            fields = await self._call(self.service.editable, request.path_params["id"], **ctx.where)
            return self._edit_page(request, ctx, fields, forms.values_of(fields))

        return await self._guarded(request, run)

    async def edit_save(self, request: Request) -> Response:
        async def run(ctx: Ctx) -> Response:
            mem_id = request.path_params["id"]
            form = await self._form(request)
            sent = {k: (form.get(k) if isinstance(form.get(k), str) else "") for k in forms.EDIT_FIELDS + ("sha256",)}
            submitted = {k: str(sent[k]).replace("\r\n", "\n") for k in forms.EDIT_FIELDS}  # browsers send CRLF
            current: EditableMemory = await self._call(self.service.editable, mem_id, **ctx.where)
            if current.sha256 != sent["sha256"]:
                return await self._stale(request, ctx, current, submitted)
            changes = forms.changes(current, submitted)
            if not changes:
                return RedirectResponse(ctx.url(ctx.memory_path(mem_id), done="unchanged"), 303)
            try:
                await self._call(
                    self.service.update,
                    "edit",
                    mem_id,
                    expected_sha256=current.sha256,
                    origin=provenance.WEB,
                    **ctx.where,
                    **changes,
                )
            except StaleWriteError:  # changed between our read and the write: the service refused it
                fresh = await self._call(self.service.editable, mem_id, **ctx.where)
                return await self._stale(request, ctx, fresh, submitted)
            except MemoryMcpError as exc:
                return self._edit_page(request, ctx, current, submitted, _status_of(exc), error=str(exc))
            return RedirectResponse(ctx.url(ctx.memory_path(mem_id), done="edit"), status_code=303)

        return await self._guarded_post(request, run)

    async def _stale(self, request: Request, ctx: Ctx, current: EditableMemory, submitted: dict[str, str]) -> Response:
        """Nothing was written: show the file as it is now, keep the person's text, arm the form anew."""
        read: ReadAnswer = await self._call(self.service.read, id=current.id, **ctx.where)
        return self._edit_page(request, ctx, current, submitted, 409, current=read)

    # ------------------------------------------------------------ status, stores, documents

    async def status(self, request: Request) -> Response:
        async def run(ctx: Ctx) -> Response:
            answer: StatusAnswer = await self._call(self.service.status, **ctx.where)
            return self._page(request, ctx, "status.html", "Status", "status", a=answer)

        return await self._guarded(request, run)

    async def stores(self, request: Request) -> Response:
        async def run(ctx: Ctx) -> Response:
            places = [(p, _place_url(p)) for p in ctx.places]
            return self._page(request, ctx, "stores.html", "Stores", "stores", places=places)

        return await self._guarded(request, run)

    async def document(self, request: Request) -> Response:
        """An indexed document (read-only source) around a cited line, read through the service."""

        async def run(ctx: Ctx) -> Response:
            p = request.query_params
            try:
                line = max(1, int(p.get("line", "1")))
            except ValueError:
                raise InputError("line: must be a whole number") from None
            start = max(1, line - 20)
            read: ReadAnswer = await self._call(self.service.read, path=p.get("path", ""), from_line=start, **ctx.where)
            return self._page(request, ctx, "document.html", read.path, read=read)

        return await self._guarded(request, run)
