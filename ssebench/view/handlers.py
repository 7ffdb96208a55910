"""The view's pages as Starlette handlers (app.py routes to them and adds the safety layer).

Each handler gathers what its page shows in one worker-thread call and renders a template
(also in a thread: 1,000 rows are CPU work). Pages carry a version (``/api/version``):
the page's script asks for it every 2 s and, when it changed, fetches the page again and
swaps its content, so a run that ends shows up without a reload.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any
from urllib.parse import quote

from markupsafe import Markup
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse

from ssebench.view import dialog, files, jobpage, table
from ssebench.view.index import Index
from ssebench.view.jobs import JobFolder
from ssebench.view.pages import compare_context, run_context
from ssebench.view.runs import RunRow

log = logging.getLogger("ssebench.view")


class View:
    """The routes, holding one :class:`Index` per given folder."""

    def __init__(self, roots: list[Path], env: Any) -> None:
        self.indexes = [Index(root, number) for number, root in enumerate(roots)]
        self.env = env
        self.reports = jobpage.ReportCache()
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
        """The template NAME rendered in a worker thread."""
        roots = [str(i.root) for i in self.indexes]
        text = await run_in_threadpool(self.env.get_template(name).render, roots=roots, **context)
        return HTMLResponse(text, status_code=code)

    def index_of(self, request: Request) -> Index:
        number = request.path_params["root"]
        if not 0 <= number < len(self.indexes):
            raise HTTPException(404, f"there is no folder number {number}")
        return self.indexes[number]

    def all_runs(self) -> tuple[list[RunRow], list[tuple[Index, JobFolder]], str]:
        """Every run and job of every folder, and the version they make (blocking)."""
        runs: list[RunRow] = []
        jobs: list[tuple[Index, JobFolder]] = []
        for index in self.indexes:
            runs += index.runs()
            jobs += [(index, job) for job in index.jobs]
        return runs, jobs, self.version()

    def version(self) -> str:
        return "-".join(str(i.generation) for i in self.indexes)

    async def runs_list(self, request: Request) -> Response:
        runs, jobs, version = await run_in_threadpool(self.all_runs)
        query = dict(request.query_params)
        shown = table.select(runs, query)
        return await self.page(
            "list.html",
            runs=shown,
            row=self.row,
            total=len(runs),
            query=query,
            columns=table.COLUMNS,
            choices=table.choices(runs),
            filters=table.FILTERS,
            labels=table.LABELS,
            outcomes=table.outcomes(shown),
            jobs=jobs,
            version=version,
            behind=None,
        )

    async def jobs_list(self, request: Request) -> Response:
        _, jobs, version = await run_in_threadpool(self.all_runs)
        listed = [
            {"index": i, "job": j, "report": await run_in_threadpool(self.report, i, j), "base": job_base(i, j)}
            for i, j in jobs
        ]
        return await self.page("jobs.html", jobs=listed, version=version, **_job_helpers())

    def report(self, index: Index, job: JobFolder) -> Any:
        """The job's report (a JobReport, or the line saying why none), cached per version."""
        return self.reports.get(index.root / job.rel if job.rel else index.root, index.generation)

    def job_of(self, request: Request) -> tuple[Index, JobFolder]:
        index = self.index_of(request)
        rel = request.path_params["rel"].strip("/")
        job = index.job(rel)
        if job is None:
            raise HTTPException(404, f"{rel or 'the folder'} is not a job folder in {index.root}")
        return index, job

    async def job_page(self, request: Request) -> Response:
        index, job = self.job_of(request)
        await run_in_threadpool(index.runs)
        report = await run_in_threadpool(self.report, index, job)
        context: dict[str, Any] = {"job": job, "index": index, "base": job_base(index, job), "version": self.version()}
        if isinstance(report, str):
            return await self.page("job.html", report=None, problem=report, **context)
        return await self.page(
            "job.html", report=report, problem=None, matrix=jobpage.matrix(report), **_job_helpers(), **context
        )

    async def job_runs(self, request: Request) -> Response:
        """The runs behind one number of a job's report (the page its figures link to)."""
        index, job = self.job_of(request)
        runs = await run_in_threadpool(index.runs)
        report = await run_in_threadpool(self.report, index, job)
        if isinstance(report, str):
            raise HTTPException(404, report)
        query = dict(request.query_params)
        picked = jobpage.pick(report, query)
        if picked is None:
            raise HTTPException(404, f"the report of job {job.name} has no such number")
        words, ids = picked
        mine = {r.run_id: r for r in runs if r.job == job.rel and r.run_id is not None}
        shown = [mine[i] for i in ids if i in mine]
        scope = " · ".join(f"{k} {query[k]}" for k in ("task", "agent", "model", "level") if query.get(k))
        behind = {
            "job": job,
            "base": job_base(index, job),
            "what": f"{scope or 'every run'} · {words}",
            "missing": [i for i in ids if i not in mine],
        }
        return await self.page(
            "list.html", runs=shown, row=self.row, total=len(ids), query={}, columns=table.COLUMNS, choices={},
            filters=(), labels={}, outcomes=table.outcomes(shown), jobs=[], version=self.version(), behind=behind,
        )  # fmt: skip

    async def compare_jobs(self, request: Request) -> Response:
        from ssebench.jobs.report import compare

        wanted = request.query_params.getlist("job")
        if len(wanted) != 2:
            raise HTTPException(400, "pick two jobs to compare (tick them in the list of jobs)")
        picked = []
        for jid in wanted:
            number, _, rel = jid.partition("/")
            index = self.indexes[int(number)] if number.isdigit() and int(number) < len(self.indexes) else None
            job = index.job(rel.strip("/")) if index is not None else None
            if index is None or job is None:
                raise HTTPException(404, f"{jid} is not a job folder of the folders being viewed")
            await run_in_threadpool(index.runs)
            report = await run_in_threadpool(self.report, index, job)
            if isinstance(report, str):
                raise HTTPException(404, report)
            picked.append((index, job, report))
        comparison = compare(picked[0][2], picked[1][2])
        bases = [job_base(i, j) for i, j, _ in picked]
        return await self.page(
            "compare_jobs.html", jobs=[j for _, j, _ in picked], bases=bases, reports=comparison.jobs,
            rows=jobpage.compare_rows(comparison), version=self.version(), **_job_helpers(),
        )  # fmt: skip

    async def api_version(self, request: Request) -> Response:
        """``{"version": ...}``: what the page was made from; it changes when the page would."""
        wanted = request.query_params.get("run")
        if wanted is None:
            await run_in_threadpool(self.all_runs)
            version = self.version()
        else:
            number, _, rel = wanted.partition("/")
            index = self.indexes[int(number)] if number.isdigit() and int(number) < len(self.indexes) else None
            run = await run_in_threadpool(index.run, rel.strip("/")) if index is not None else None
            if run is None:
                raise HTTPException(404, f"{wanted} is not a run of the folders being viewed")
            version = run_version(run)
        return JSONResponse({"version": version}, headers={"Cache-Control": "no-store"})

    async def run_page(self, request: Request) -> Response:
        index = self.index_of(request)
        rel = request.path_params["rel"].strip("/")
        offset = _int(request.query_params.get("offset"), 0)
        context = await run_in_threadpool(run_context, index, rel, offset)
        if context is None:
            raise HTTPException(404, f"{rel or 'the folder'} is not a run folder in {index.root}")
        return await self.page("run.html", version=run_version(context["run"]), **context)

    async def dialog_part(self, request: Request) -> Response:
        """The events appended since ``offset``, as HTML, for the live view (X-Next-Offset)."""
        index = self.index_of(request)
        rel = request.path_params["rel"].strip("/")
        offset = _int(request.query_params.get("offset"), 0)
        located = await run_in_threadpool(index.locate, rel)
        if located is None:
            raise HTTPException(404, "not a run folder")
        path = index.folder(located) / "dialog.jsonl"
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
        exporting = bool(self.env.globals.get("exporting"))
        if exporting and not files.exportable(rel, (index.root / rel).is_dir()):
            raise HTTPException(404, f"{rel} is not part of an exported site")
        entries = await run_in_threadpool(files.listing, index.root, rel, exporting)
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


def job_base(index: Index, job: JobFolder) -> str:
    """The job's path below ``/job/`` and ``/job-runs/``: its folder's number, then its folder."""
    return f"{index.number}/{quote(job.rel)}"


def _job_helpers() -> dict[str, Any]:
    return {"runs_url": jobpage.runs_url, "heat": jobpage.heat, "percent": jobpage.percent}


def run_version(run: RunRow) -> str:
    """A run page's version: what the page shows of the run (not the dialog, which it follows)."""
    data = run.as_json()
    data.pop("live", None)
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def _int(text: str | None, default: int) -> int:
    try:
        return max(0, int(text or default))
    except ValueError:
        return default
