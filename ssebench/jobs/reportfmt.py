"""The report's text, Markdown and CSV shapes (the numbers come from :mod:`ssebench.jobs.report`)."""

from __future__ import annotations

from typing import Any

CSV_COLUMNS = (
    "job_id",
    "agent",
    "level",
    "runs",
    "graded",
    "passed",
    "pass_rate",
    "ci95_low",
    "ci95_high",
    "k",
    "pass_at_k",
    "duration_median",
    "duration_p90",
    "test_patch_calls_per_run",
    "calls_passed",
    "calls_failed",
    "calls_no_checks",
    "calls_internal_failure",
    "calls_cancelled",
    "calls_error",
    "agent_failures",
    "infra_failures",
    "usage_failures",
)
_HEAD = ("agent", "level", "runs", "pass rate (95% CI)", "pass@k", "median s", "p90 s", "calls/run", "calls")
_TASK_HEAD = ("task", "runs", "pass rate (95% CI)", "pass@k", "median s", "calls/run", "infra")


def _num(value: float | None, digits: int = 3) -> str:
    return "" if value is None else str(round(value, digits))


def csv_row(job_id: str, c: dict[str, Any]) -> list[object]:
    ci = c["pass_rate_ci95"] or [None, None]
    endings = c["test_patch_endings"]
    return [
        job_id,
        c["agent"],
        c["level"],
        c["runs"],
        c["graded"],
        c["passed"],
        _num(c["pass_rate"], 4),
        _num(ci[0], 4),
        _num(ci[1], 4),
        c["k"],
        _num(c["pass_at_k"], 4),
        _num(c["duration_median"], 3),
        _num(c["duration_p90"], 3),
        _num(c["test_patch_calls_per_run"], 3),
        *(endings[e] for e in ("passed", "failed", "no_checks", "internal_failure", "cancelled", "error")),
        c["agent_failures"],
        c["infra_failures"],
        c["usage_failures"],
    ]


def _rate(c: dict[str, Any]) -> str:
    if c["pass_rate"] is None:
        return "-"
    low, high = c["pass_rate_ci95"]
    return f"{c['passed']}/{c['graded']} = {c['pass_rate']:.0%} ({low:.0%}-{high:.0%})"


def _calls(c: dict[str, Any]) -> str:
    shown = [f"{n} {e}" for e, n in c["test_patch_endings"].items() if n]
    return ", ".join(shown) or "-"


def _failures(c: dict[str, Any]) -> str:
    """`` (1 infra, 2 usage)``: the runs that reached no verdict, by why."""
    shown = [f"{c[key]} {name}" for key, name in (("infra_failures", "infra"), ("usage_failures", "usage")) if c[key]]
    return f" ({', '.join(shown)})" if shown else ""


def _dash(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _cell_row(c: dict[str, Any]) -> list[str]:
    return [
        c["agent"],
        str(c["level"]),
        f"{c['runs']}" + _failures(c),
        _rate(c),
        _dash(c["pass_at_k"], 2),
        _dash(c["duration_median"]),
        _dash(c["duration_p90"]),
        _dash(c["test_patch_calls_per_run"], 2),
        _calls(c),
    ]


def _task_row(t: dict[str, Any]) -> list[str]:
    return [
        t["task"],
        str(t["runs"]),
        _rate(t),
        _dash(t["pass_at_k"], 2),
        _dash(t["duration_median"]),
        _dash(t["test_patch_calls_per_run"], 2),
        str(t["infra_failures"]),
    ]


def _compare_rows(rows: list[dict[str, Any]]) -> list[list[str]]:
    def pct(v: float | None) -> str:
        return "-" if v is None else f"{v:.0%}"

    return [
        [r["agent"], str(r["level"]), pct(r["pass_rate_a"]), pct(r["pass_rate_b"]), _signed(r["delta"])] for r in rows
    ]


def _signed(v: float | None) -> str:
    return "-" if v is None else f"{v * 100:+.0f} pts"


def _sections(document: dict[str, Any]) -> list[tuple[str, tuple[str, ...], list[list[str]]]]:
    jobs = document.get("jobs") or [document]
    sections = []
    for job in jobs:
        k = job["cells"][0]["k"] if job["cells"] else 1
        head = tuple(h.replace("pass@k", f"pass@{k}") for h in _HEAD)
        sections.append((f"job {job['job_id']}: {job['runs']} runs", head, [_cell_row(c) for c in job["cells"]]))
        task_head = tuple(h.replace("pass@k", f"pass@{k}") for h in _TASK_HEAD)
        sections.append((f"job {job['job_id']}: per task", task_head, [_task_row(t) for t in job["tasks"]]))
    if "comparison" in document:
        a, b = jobs[0]["job_id"], jobs[1]["job_id"]
        head = ("agent", "level", f"pass rate {a}", f"pass rate {b}", "change")
        sections.append((f"{a} → {b}", head, _compare_rows(document["comparison"])))
    return sections


def markdown(document: dict[str, Any]) -> str:
    out = []
    for title, head, rows in _sections(document):
        out += [f"### {title}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(row) + " |" for row in rows]
        out.append("")
    return "\n".join(out)


def text(document: dict[str, Any]) -> str:
    """Aligned plain columns (no colour, no box characters: stable in logs and tests)."""
    out = []
    for title, head, rows in _sections(document):
        widths = [max(len(str(x)) for x in column) for column in zip(head, *rows, strict=True)]
        out.append(title)
        for row in (head, *rows):
            out.append("  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)).rstrip())
        out.append("")
    return "\n".join(out)
