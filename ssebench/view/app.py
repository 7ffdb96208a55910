"""``ssebench view``'s web app: Starlette routes over the given results folders.

Pages are rendered on the server (jinja2, autoescape on: a dialog is an agent's output
and may hold HTML and script) and work with JavaScript off; the one script, static/view.js,
only follows a live dialog. Every blocking read runs in a worker thread. Errors are pages
with a message; files are served only from inside the folders, as text or downloads, never
as HTML, under a Content-Security-Policy that allows no inline script.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ssebench.view import dialog, files, table
from ssebench.view.index import Index
from ssebench.view.pages import compare_context, run_context
from ssebench.view.runs import RunRow

HERE = Path(__file__).resolve().parent
log = logging.getLogger("ssebench.view")
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True, undefined=jinja2.StrictUndefined
    )
    env.filters["q"] = lambda text: quote(str(text), safe="/")
    env.filters["seconds"] = lambda s: "—" if s is None else f"{s:.1f} s"
    env.filters["size"] = lambda n: (
        f"{n:,} B" if n < 10_000 else f"{n / 1024:,.0f} KiB" if n < 10 << 20 else f"{n / (1 << 20):,.1f} MiB"
    )
    return env


class SecurityHeaders:
    """Adds the CSP and no-sniff headers to every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + HEADERS
            await send(message)

        await self.app(scope, receive, send_with_headers if scope["type"] == "http" else send)


class HostCheck:
    """Answers only requests whose Host is one of HOSTS (``*``: any): a page elsewhere cannot
    reach the view through DNS rebinding. Unlike Starlette's, it reads ``[::1]:port`` right."""

    def __init__(self, app: ASGIApp, hosts: list[str]) -> None:
        self.app, self.hosts = app, set(hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and "*" not in self.hosts and host_name(scope) not in self.hosts:
            await PlainTextResponse("Invalid host header", status_code=400)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def host_name(scope: Scope) -> str:
    """The Host header without its port (``[::1]`` keeps its brackets)."""
    host = dict(scope.get("headers", [])).get(b"host", b"").decode("latin-1")
    if host.startswith("["):
        name, bracket, rest = host.partition("]")
        return name + bracket if bracket and (not rest or rest.startswith(":")) else host
    return host.split(":", 1)[0]


class View:
    """The routes, holding one :class:`Index` per given folder."""

    def __init__(self, roots: list[Path]) -> None:
        self.indexes = [Index(root, number) for number, root in enumerate(roots)]
        self.env = environment()
        self._rows: dict[tuple[int, str], tuple[RunRow, Markup]] = {}

    def row(self, run: RunRow) -> Markup:
        """A run's row of the list, rendered once per version of the run (the index keeps the
        same object while its files are unchanged), so 1,000 rows do not cost 1,000 renders."""
        key = (run.root, run.rel)
        cached = self._rows.get(key)
        if cached is None or cached[0] is not run:
            cached = (run, Markup(self.env.get_template("row.html").render(r=run)))
            self._rows[key] = cached
        return cached[1]

    async def page(self, name: str, code: int = 200, **context: Any) -> HTMLResponse:
        """The template NAME rendered in a worker thread (1,000 rows are CPU work)."""
        roots = [str(i.root) for i in self.indexes]
        text = await run_in_threadpool(self.env.get_template(name).render, roots=roots, **context)
        return HTMLResponse(text, status_code=code)

    def index_of(self, request: Request) -> Index:
        number = request.path_params["root"]
        if not 0 <= number < len(self.indexes):
            raise HTTPException(404, f"there is no folder number {number}")
        return self.indexes[number]

    async def runs_list(self, request: Request) -> Response:
        runs = []
        for index in self.indexes:
            runs += await run_in_threadpool(index.runs)
        query = dict(request.query_params)
        shown = table.select(runs, query)
        agents, levels, cells = table.summary(shown)
        return await self.page(
            "list.html",
            runs=shown,
            row=self.row,
            total=len(runs),
            query=query,
            columns=table.COLUMNS,
            choices=table.choices(runs),
            filters=table.FILTERS,
            agents=agents,
            levels=levels,
            cells=cells,
        )

    async def run_page(self, request: Request) -> Response:
        index = self.index_of(request)
        rel = request.path_params["rel"].strip("/")
        offset = _int(request.query_params.get("offset"), 0)
        context = await run_in_threadpool(run_context, index, rel, offset)
        if context is None:
            raise HTTPException(404, f"{rel or 'the folder'} is not a run folder in {index.root}")
        return await self.page("run.html", **context)

    async def dialog_part(self, request: Request) -> Response:
        """The events appended since ``offset``, as HTML, for the live view (X-Next-Offset)."""
        index = self.index_of(request)
        rel = request.path_params["rel"].strip("/")
        offset = _int(request.query_params.get("offset"), 0)
        located = await run_in_threadpool(index.locate, rel)
        if located is None:
            raise HTTPException(404, "not a run folder")
        path = located[0] / "dialog.jsonl"
        try:
            page = await run_in_threadpool(dialog.read_page, path, offset)
        except FileNotFoundError:
            page = dialog.Page(0, 0, 0, [])
        except OSError as exc:  # a symlink (not followed), a folder: the run page names it
            raise HTTPException(404, f"dialog.jsonl cannot be read ({exc.strerror or exc})") from None
        done = any(e.kind == "complete" for e in page.events)
        body = self.env.get_template("events.html").render(events=page.events)
        headers = {"X-Next-Offset": str(page.next_offset), "X-Complete": "1" if done else "0"}
        return HTMLResponse(body, headers={**headers, "Cache-Control": "no-store"})

    async def compare(self, request: Request) -> Response:
        wanted = request.query_params.getlist("run")
        context = await run_in_threadpool(compare_context, self.indexes, wanted)
        if isinstance(context, str):
            raise HTTPException(404 if "not" in context else 400, context)
        return await self.page("compare.html", **context)

    async def file(self, request: Request) -> Response:
        index = self.index_of(request)
        rel = request.path_params["rel"].strip("/")
        entries = await run_in_threadpool(files.listing, index.root, rel)
        if entries is not None:
            return await self.page("files.html", root=index.number, rel=rel, entries=entries, base=str(index.root))
        opened = await run_in_threadpool(files.open_file, index.root, rel)
        if opened is None:
            raise HTTPException(404, f"no file {rel} in {index.root}")
        fd, size = opened
        name = quote(Path(rel).name)
        kind = "attachment" if request.query_params.get("download") else "inline"
        headers = {"Content-Disposition": f"{kind}; filename*=UTF-8''{name}", "Content-Length": str(size)}
        return StreamingResponse(files.chunks(fd, size), media_type="text/plain; charset=utf-8", headers=headers)

    async def error(self, request: Request, exc: Exception) -> Response:
        if isinstance(exc, HTTPException):
            return await self.page("error.html", exc.status_code, status=exc.status_code, message=exc.detail)
        log.exception("ssebench view: %s failed", request.url.path)
        message = f"this page could not be made ({type(exc).__name__}: {exc}); the server's log has the details"
        return await self.page("error.html", 500, status=500, message=message)


def _int(text: str | None, default: int) -> int:
    try:
        return max(0, int(text or default))
    except ValueError:
        return default


def allowed_hosts(host: str) -> list[str]:
    """The Host headers answered: the bound address and, on loopback, the usual names."""
    if host in ("0.0.0.0", "::", ""):
        return ["*"]
    names = {f"[{host}]" if ":" in host else host}
    if host in ("127.0.0.1", "::1", "localhost"):
        names |= {"127.0.0.1", "localhost", "[::1]"}
    return sorted(names)


def create_app(roots: list[Path], host: str = "127.0.0.1") -> Starlette:
    view = View(roots)
    routes = [
        Route("/", view.runs_list),
        Route("/run/{root:int}/{rel:path}", view.run_page),
        Route("/dialog/{root:int}/{rel:path}", view.dialog_part),
        Route("/compare", view.compare),
        Route("/files/{root:int}/{rel:path}", view.file),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    middleware = [Middleware(SecurityHeaders), Middleware(HostCheck, hosts=allowed_hosts(host))]
    handlers: dict[Any, Any] = {HTTPException: view.error, Exception: view.error}
    return Starlette(routes=routes, middleware=middleware, exception_handlers=handlers)
