"""``ssebench view --export DIR``: the same pages as a static site that opens from ``file://``.

The site is made by the view itself: its app (in export mode: no script, no forms, no live
parts) is asked for ``/`` and ``/jobs`` in-process, and every page they link to, page by
page; each page is written as a file, its links rewritten to the files of the pages they
name (relative, so the folder can be moved, zipped or attached). The files a page links to
are copied (as ``NAME.txt``, so a browser shows them as text) only when an exported site may
hold them (:func:`ssebench.view.files.exportable`: the records, dialogs, logs and call
texts; never the agent's HOME, install.log or the tree). A link that would not resolve is
an error: the export says which and leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import hashlib
import html
import os
import posixpath
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

import httpx

from ssebench.view import files

LINK = re.compile(r'(?<![\w-])(href|src)="([^"]*)"')
#: how many pages at most (a runaway crawl is a bug, not a site)
MAX_PAGES = 200_000


class ExportError(RuntimeError):
    """The export failed: one message; nothing was left in the target folder."""


@dataclass
class Site:
    """What an export wrote."""

    pages: int = 0
    files: int = 0
    broken: list[str] = field(default_factory=list)


def target(url: str, roots: list[Path]) -> str:
    """The file (relative to the site) that holds the page or file URL names."""
    parts = urlsplit(url)
    path = unquote(parts.path)
    if path.startswith("/static/"):
        return path[1:]
    if path.startswith("/files/") and not _is_folder(path, roots):
        return path[1:] + ".txt"
    name = path.strip("/") or "index"
    if parts.query:
        digest = hashlib.sha256(parts.query.encode()).hexdigest()[:10]
        readable = re.sub(r"[^A-Za-z0-9._=-]+", "_", unquote(parts.query))[:60]
        name += f"~{readable}-{digest}"
    return name + ".html"


def _is_folder(path: str, roots: list[Path]) -> bool:
    number, _, rel = path[len("/files/") :].partition("/")
    if not number.isdigit() or int(number) >= len(roots):
        return False
    found = files.resolve(roots[int(number)], rel.strip("/"))
    return found is not None and found.is_dir()


def _file_source(url: str, roots: list[Path]) -> tuple[Path, str] | None:
    """The root and relative path of a /files/ link to a file an export may hold."""
    number, _, rel = unquote(urlsplit(url).path)[len("/files/") :].partition("/")
    if not number.isdigit() or int(number) >= len(roots) or not files.exportable(rel, False):
        return None
    return roots[int(number)], rel


def rewrite(page: str, url: str, roots: list[Path], found: list[str]) -> str:
    """PAGE (what URL answered) with each internal link made relative to the file of the page
    or file it names; every internal URL it links to is added to FOUND."""
    here = target(url, roots)
    path = urlsplit(url).path

    def one(match: re.Match[str]) -> str:
        attribute, value = match.group(1), html.unescape(match.group(2))
        link, _, fragment = value.partition("#")
        if link.startswith("?"):
            link = path + link
        if not link.startswith("/"):
            return match.group(0)  # a fragment, or an outside link: as it is
        found.append(link)
        relative = posixpath.relpath(target(link, roots), posixpath.dirname(here) or ".")
        shown = quote(relative) + (f"#{fragment}" if fragment else "")
        return f'{attribute}="{html.escape(shown)}"'

    return LINK.sub(one, page)


async def _crawl(app: object, roots: list[Path], out: Path, site: Site) -> None:
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    todo, seen = ["/", "/jobs", "/static/view.css"], set[str]()
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        while todo:
            url = todo.pop()
            if target(url, roots) in seen:  # one file per page, however it is linked
                continue
            seen.add(target(url, roots))
            if len(seen) > MAX_PAGES:
                raise ExportError(f"more than {MAX_PAGES:,} pages: stopped")
            await _one(client, url, roots, out, site, todo)


async def _one(client: httpx.AsyncClient, url: str, roots: list[Path], out: Path, site: Site, todo: list[str]) -> None:
    """Write the page or file URL names (and queue the URLs its page links to)."""
    where = out / target(url, roots)
    where.parent.mkdir(parents=True, exist_ok=True)
    if url.startswith("/files/") and where.suffix == ".txt":
        source = _file_source(url, roots)
        opened = await asyncio.to_thread(files.open_file, *source) if source else None
        if opened is None:
            site.broken.append(url)
            return
        await asyncio.to_thread(_copy, opened[0], opened[1], where)
        site.files += 1
        return
    response = await client.get(url)
    if response.status_code != 200:
        site.broken.append(f"{url} (HTTP {response.status_code})")
        return
    if url.startswith("/static/"):
        where.write_bytes(response.content)
        return
    links: list[str] = []
    page = rewrite(response.text, url, roots, links)
    where.write_text(page, encoding="utf-8")
    site.pages += 1
    todo.extend(links)


def _copy(fd: int, size: int, where: Path) -> None:
    with open(where, "wb") as out:
        for chunk in files.chunks(fd, size):
            out.write(chunk)


def export(roots: list[Path], folder: Path, exported_at: str) -> Site:
    """Write the site of ROOTS into FOLDER (new, or an empty folder): whole, or not at all."""
    from ssebench.view.app import create_app

    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ExportError(f"{folder}: not an empty folder (the export makes a new one)")
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        app = create_app(roots, exporting=True, exported_at=exported_at)
        site = Site()
        asyncio.run(_crawl(app, roots, staging, site))
        if site.broken:
            raise ExportError("these links would not resolve: " + ", ".join(sorted(site.broken)[:20]))
        os.chmod(staging, 0o755)
        if folder.exists():
            folder.rmdir()
        staging.rename(folder)
        return site
    finally:
        shutil.rmtree(staging, ignore_errors=True)
