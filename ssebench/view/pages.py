"""What the run and comparison pages show, gathered in one blocking call (run in a thread)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ssebench.runrecord import RunResult
from ssebench.view import dialog, diff, runpage
from ssebench.view.index import Index
from ssebench.view.runs import DIALOG, RunRow, read_record

#: how many runs the comparison shows side by side at most
COMPARE_LIMIT = 8


def grade_rows(record: RunResult | None) -> list[dict[str, Any]]:
    """The record's final grading: check, state, time, PoCs, log tail."""
    rows = []
    for c in record.grading.checks if record is not None and record.grading is not None else ():
        pocs = f"{c.pocs_passed} of {c.pocs_total} PoCs" if c.pocs_total is not None else ""
        tail = dialog.cut(c.log_tail or "")
        row = {"check": c.check, "state": c.state, "elapsed": c.elapsed, "timed_out": c.timed_out}
        rows.append({**row, "pocs": pocs, "tail": tail})
    return rows


def run_diff(folder: Path, record: RunResult | None) -> diff.Diff:
    source, tree, problems = diff.locate(folder, record)
    if source is None or tree is None:
        return diff.Diff(str(source) if source else None, str(tree) if tree else None, problems=problems)
    result = diff.tree_diff(source, tree)
    result.problems[:0] = problems
    return result


def run_context(index: Index, rel: str, offset: int) -> dict[str, Any] | None:
    """Everything run.html shows of the run REL of INDEX; None if REL is not a run there."""
    run = index.run(rel)
    if run is None:
        return None
    folder = index.root / run.rel
    record = read_record(folder, [])  # its problem, if any, is in run.problems already
    problems = list(run.problems)
    page, dialog_problem = _dialog_page(folder / DIALOG, offset)
    if dialog_problem:
        problems.append(dialog_problem)
    return {
        "run": run,
        "rid": run_id(run),
        "has_folder": folder.is_dir(),
        "grade": grade_rows(record),
        "graded_files": [n for n in ("grading.log", "grading.json") if (folder / n).is_file()],
        "calls": runpage.calls(folder, record),
        "outputs": runpage.outputs(folder),
        "stages": runpage.stages(record),
        "record": record,
        "page": page,
        "last_offset": dialog.last_page_offset(folder / DIALOG),
        "diff": run_diff(folder, record),
        "problems": problems,
        "error": record.error if record is not None else None,
    }


def _dialog_page(path: Path, offset: int) -> tuple[dialog.Page | None, str | None]:
    try:
        return dialog.read_page(path, offset), None
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"{DIALOG}: cannot be read ({exc.strerror or exc})"


def run_id(run: RunRow) -> str:
    """How URLs name a run: its folder's number, then its folder below it."""
    return f"{run.root}/{run.rel}" if run.rel else f"{run.root}/"


def compare_context(indexes: list[Index], wanted: list[str]) -> dict[str, Any] | str:
    """The runs named by WANTED (``root/rel`` each) side by side, or the reason why not."""
    if len(wanted) < 2:
        return "pick two or more runs to compare (tick them in the list)"
    if len(wanted) > COMPARE_LIMIT:
        return f"at most {COMPARE_LIMIT} runs can be compared at once"
    runs, columns = [], []
    for rid in wanted:
        number, _, rel = rid.partition("/")
        index = indexes[int(number)] if number.isdigit() and int(number) < len(indexes) else None
        run = index.run(rel.strip("/")) if index else None
        if index is None or run is None:
            return f"{rid} is not a run folder of the folders being viewed"
        record = read_record(index.root / run.rel, [])
        runs.append(run)
        columns.append(
            {
                "run": run,
                "rid": run_id(run),
                "grade": grade_rows(record),
                "diff": run_diff(index.root / run.rel, record),
            }
        )
    tasks = sorted({r.task or "?" for r in runs})
    return {"columns": columns, "tasks": tasks}
