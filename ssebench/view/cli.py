"""``ssebench view [DIR ...] [--host 127.0.0.1] [--port N] [--open]``: the local web page;
``ssebench view --export OUT [DIR ...]``: the same pages as a static site."""

from __future__ import annotations

import argparse
import signal
import socket
import sys
from pathlib import Path

DEFAULT_PORT = 8023


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "view",
        help="a local web page of runs and jobs (list, run pages, comparison)",
        description="Serve a local web page over results folders: one run's folder, a folder of runs, "
        "or a job's folder. Only files inside these folders are served.",
    )
    p.add_argument("dirs", nargs="*", metavar="DIR", help="results folders (default: ./ssebench-runs)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default: {DEFAULT_PORT}; 0: a free one)")
    p.add_argument("--open", action="store_true", help="open the page in the web browser")
    p.add_argument(
        "--export",
        metavar="OUT",
        type=Path,
        help="write the pages as a static site into the new folder OUT (opens from file://; "
        "no agent HOME, keys or tree in it) instead of serving them",
    )
    p.set_defaults(func=run_view)


def folders(dirs: list[str]) -> list[Path] | str:
    """The given folders, resolved, or the one line saying which is not a folder."""
    roots = []
    for text in dirs or ["ssebench-runs"]:
        path = Path(text).expanduser()
        if not path.is_dir():
            hint = "" if dirs else " (name the results folders to view: ssebench view DIR ...)"
            return (f"{text}: not a folder" if path.exists() else f"{text}: no such folder") + hint
        roots.append(path.resolve())
    return roots


def url(host: str, port: int) -> str:
    shown = "localhost" if host in ("127.0.0.1", "::1", "localhost") else host
    return f"http://{f'[{shown}]' if ':' in shown else shown}:{port}/"


def run_view(args: argparse.Namespace) -> int:
    roots = folders(args.dirs)
    if isinstance(roots, str):
        print(f"ssebench view: {roots}", file=sys.stderr)
        return 2
    if args.export is not None:
        return run_export(roots, args.export)
    from ssebench.server.cli import BindError, bind

    try:
        sock = bind(args.host, args.port)
    except BindError as exc:
        print(f"ssebench view: {exc}", file=sys.stderr)
        return 2
    address = url(args.host, sock.getsockname()[1])
    print(
        f"ssebench view: {address} ({len(roots)} folder{'s' if len(roots) != 1 else ''}); Ctrl-C stops it", flush=True
    )
    if args.open:
        import webbrowser

        webbrowser.open(address)
    return serve(roots, args.host, sock)


def serve(roots: list[Path], host: str, sock: socket.socket) -> int:
    """Serve until SIGTERM/SIGINT, both a normal end (status 0)."""
    import uvicorn

    from ssebench.view.app import create_app

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda _s, _f: None)
    config = uvicorn.Config(create_app(roots, host), log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    server.run(sockets=[sock])
    sys.stdout.flush()
    return 0


def run_export(roots: list[Path], out: Path) -> int:
    """Write the static site; one line naming it, or the one line saying why not (exit 2)."""
    from ssebench.runrecord import now
    from ssebench.view.export import ExportError, export

    try:
        site = export(roots, out, now())
    except (ExportError, OSError) as exc:
        print(f"ssebench view: --export {out}: {exc}", file=sys.stderr)
        return 2
    print(f"ssebench view: wrote {site.pages} pages and {site.files} files to {out}; open {out / 'index.html'}")
    return 0
