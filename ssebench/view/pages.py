"""What the run and comparison pages show, gathered in one blocking call (run in a thread)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ssebench.view import dialog, diff
from ssebench.view.index import Index
from ssebench.view.runs import DIALOG, RESULTS, Run, read_json

#: how many runs the comparison shows side by side at most
COMPARE_LIMIT = 8


def grade_rows(results: Any) -> list[dict[str, Any]]:
    """results.json's grading checks (check, state, elapsed, PoCs, log tail), defensively."""
    grading = results.get("grading") if isinstance(results, dict) else None
    checks = grading.get("checks") if isinstance(grading, dict) else None
    rows = []
    for c in checks if isinstance(checks, list) else []:
        if not isinstance(c, dict):
            continue
        pocs = f"{c.get('pocs_passed')} of {c.get('pocs_total')} PoCs" if "pocs_total" in c else ""
        rows.append(
            {
                "check": str(c.get("check")),
                "state": str(c.get("state")),
                "elapsed": c.get("elapsed") if isinstance(c.get("elapsed"), int | float) else None,
                "timed_out": c.get("timed_out") is True,
                "pocs": pocs,
                "tail": dialog.cut(str(c.get("log_tail") or "")),
            }
        )
    return rows


def run_diff(folder: Path, results: Any) -> diff.Diff:
    source, tree, problems = diff.locate(folder, results)
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
    folder = index.root / rel
    problems = list(run.problems)
    results = read_json(folder / RESULTS, [])
    page, dialog_problem = _dialog_page(folder / DIALOG, offset)
    if dialog_problem:
        problems.append(dialog_problem)
    return {
        "run": run,
        "rid": run_id(run),
        "results": results if isinstance(results, dict) else {},
        "grade": grade_rows(results),
        "page": page,
        "last_offset": dialog.last_page_offset(folder / DIALOG),
        "diff": run_diff(folder, results),
        "problems": problems,
        "error": results.get("error") if isinstance(results, dict) else None,
    }


def _dialog_page(path: Path, offset: int) -> tuple[dialog.Page | None, str | None]:
    try:
        return dialog.read_page(path, offset), None
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"{DIALOG}: cannot be read ({exc.strerror or exc})"


def run_id(run: Run) -> str:
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
        results = read_json(index.root / run.rel / RESULTS, [])
        runs.append(run)
        columns.append(
            {
                "run": run,
                "rid": run_id(run),
                "grade": grade_rows(results),
                "diff": run_diff(index.root / run.rel, results),
            }
        )
    tasks = sorted({r.task or "?" for r in runs})
    return {"columns": columns, "tasks": tasks}
