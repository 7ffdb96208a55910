"""``ssebench view``'s web app: Starlette routes over the given results folders.

Pages are rendered on the server (jinja2, autoescape on: a dialog is an agent's output
and may hold HTML and script) and work with JavaScript off; the one script, static/view.js,
follows a live dialog and refreshes a page whose runs changed. Every blocking read runs in
a worker thread (handlers.py). Errors are pages with a message; files are served only from
inside the folders, as text or downloads, never as HTML, under a Content-Security-Policy
that allows no inline script and no inline style.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ssebench.view.handlers import View

HERE = Path(__file__).resolve().parent
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


def environment(exporting: bool = False, exported_at: str = "") -> jinja2.Environment:
    """The templates; EXPORTING: for the static site (no script, no forms, no live parts)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True, undefined=jinja2.StrictUndefined
    )
    env.filters["q"] = lambda text: quote(str(text), safe="/")
    env.filters["seconds"] = lambda s: "—" if s is None else f"{s:.1f} s"
    env.filters["size"] = lambda n: (
        f"{n:,} B" if n < 10_000 else f"{n / 1024:,.0f} KiB" if n < 10 << 20 else f"{n / (1 << 20):,.1f} MiB"
    )
    env.globals["fileurl"] = file_url
    env.globals["exporting"] = exporting
    env.globals["exported_at"] = exported_at
    return env


def file_url(run: Any, name: str) -> str:
    """The URL of the file NAME of a run's folder."""
    rel = f"{run.rel}/{name}" if run.rel else name
    return f"/files/{run.root}/{quote(rel, safe='/')}"


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


def allowed_hosts(host: str) -> list[str]:
    """The Host headers answered: the bound address and, on loopback, the usual names."""
    if host in ("0.0.0.0", "::", ""):
        return ["*"]
    names = {f"[{host}]" if ":" in host else host}
    if host in ("127.0.0.1", "::1", "localhost"):
        names |= {"127.0.0.1", "localhost", "[::1]"}
    return sorted(names)


def create_app(roots: list[Path], host: str = "127.0.0.1", exporting: bool = False, exported_at: str = "") -> Starlette:
    """The view's app over ROOTS; EXPORTING: the pages as ``--export`` writes them."""
    view = View(roots, environment(exporting, exported_at))
    routes = [
        Route("/", view.runs_list),
        Route("/jobs", view.jobs_list),
        Route("/job/{root:int}/{rel:path}", view.job_page),
        Route("/job-runs/{root:int}/{rel:path}", view.job_runs),
        Route("/compare-jobs", view.compare_jobs),
        Route("/api/version", view.api_version),
        Route("/run/{root:int}/{rel:path}", view.run_page),
        Route("/dialog/{root:int}/{rel:path}", view.dialog_part),
        Route("/compare", view.compare),
        Route("/files/{root:int}/{rel:path}", view.file),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    middleware = [Middleware(SecurityHeaders), Middleware(HostCheck, hosts=allowed_hosts(host))]
    handlers: dict[Any, Any] = {HTTPException: view.error, Exception: view.error}
    return Starlette(routes=routes, middleware=middleware, exception_handlers=handlers)
