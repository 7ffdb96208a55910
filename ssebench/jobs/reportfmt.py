"""The report's shapes: aligned text (rich tables on a terminal), Markdown, CSV and JSON.

All of them render the one typed report (:mod:`ssebench.jobs.reportmodel`), so they agree
with each other and with ``ssebench view``. The text and Markdown tables are built once as
:class:`Section` rows, then laid out as plain columns (pipes, files, tests: stable bytes),
rich tables (a terminal) or Markdown.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, Any

from ssebench.jobs.reportmodel import CALL_ENDINGS, GroupNumbers, JobComparison, JobReport
from ssebench.plural import count
from ssebench.runrecord import Outcome

Document = JobReport | JobComparison
#: run ids a failure bucket names in text before "+N more" (JSON has them all)
IDS_SHOWN = 3
#: the columns a narrow terminal may wrap (the others keep their figures whole)
_WRAPPED = ("no verdict", "reason", "run ids")
#: the headers of rich tables, on two lines where that keeps a column narrow
_RICH_HEAD = {
    "pass rate (95% CI)": "pass rate\n(95% CI)",
    "median s": "median\ns",
    "never called": "never\ncalled",
    "no verdict": "no\nverdict",
    "tokens/run": "tokens\n/run",
}
#: outcomes that are no verdict on the fix, as a cell's runs column names them
_NO_VERDICT = (Outcome.INFRASTRUCTURE, Outcome.USAGE, Outcome.CANCELLED)


@dataclass(frozen=True)
class Section:
    title: str
    head: tuple[str, ...]
    rows: list[list[str]]
    note: str = ""  # printed under the table
    above: str = ""  # printed before the title (the job's headline)


def shown_ks(attempts: int) -> list[int]:
    """The k of the pass@k columns in text: all up to 4 attempts, else 1, 2, half and all."""
    return list(range(1, attempts + 1)) if attempts <= 4 else sorted({1, 2, attempts // 2, attempts})


def _dash(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _rate(n: GroupNumbers) -> str:
    if n.pass_rate is None or n.pass_rate_ci95 is None:
        return "-"
    low, high = n.pass_rate_ci95
    return f"{n.pass_rate:.0%} ({low:.0%}-{high:.0%})"


def _passed(n: GroupNumbers) -> str:
    return f"{n.passed}/{n.graded}" if n.graded else "-"


def _no_verdict(n: GroupNumbers) -> str:
    """``1 infrastructure, 1 not run``: the runs that reached no verdict, by why."""
    why = [f"{n.outcomes[o.value]} {o.value}" for o in _NO_VERDICT if n.outcomes[o.value]]
    return ", ".join(why + ([f"{n.not_run} not run"] if n.not_run else []))


def _usage_cells(n: GroupNumbers) -> list[str]:
    tokens = "-" if n.tokens_per_run is None else f"{n.tokens_per_run:,.0f}"
    return [tokens, "-" if n.cost_per_run is None else f"${n.cost_per_run:.2f}"]


class _Columns:
    """Which optional columns a job's tables have: the model, the pass@k, tokens and cost."""

    def __init__(self, report: JobReport) -> None:
        self.model = any(c.model for c in report.cells)
        self.ks = shown_ks(report.attempts)
        self.usage = report.totals.usage is not None

    def head(self, *identity: str) -> tuple[str, ...]:
        ident = [h for h in identity if h != "model" or self.model]
        usage = ["tokens/run", "cost/run"] if self.usage else []
        tail = ["median s", "calls/run", "never called", *usage, "no verdict"]
        return (*ident, "runs", "passed", "pass rate (95% CI)", *(f"pass@{k}" for k in self.ks), *tail)

    def row(self, identity: Sequence[object], n: GroupNumbers) -> list[str]:
        ident = [str(x) if x is not None else "-" for x in identity]
        if not self.model:
            ident.pop(-2)  # identity ends with model, level
        usage = _usage_cells(n) if self.usage else []
        ks = [_dash(n.pass_at_k.get(str(k)), 2) for k in self.ks]
        tail = [_dash(n.duration_median), _dash(n.calls_per_run, 2), str(n.never_called), *usage, _no_verdict(n)]
        return [*ident, str(n.runs), _passed(n), _rate(n), *ks, *tail]


def _outcome_line(n: GroupNumbers) -> str:
    parts = [f"{value} {outcome}" for outcome, value in n.outcomes.items() if value]
    parts += [f"{n.not_run} not run"] if n.not_run else []
    return ", ".join(parts) or "no runs"


def _ids(ids: Sequence[str]) -> str:
    more = len(ids) - IDS_SHOWN
    return ", ".join(ids[:IDS_SHOWN]) + (f" (+{more} more)" if more > 0 else "")


def job_sections(report: JobReport) -> list[Section]:
    cols = _Columns(report)
    headline = (
        f"job {report.job_id}: {count(report.runs, 'run')} "
        f"({count(report.attempts, 'attempt')} per task × agent × level): {_outcome_line(report.totals)}"
    )
    pass_note = "pass@k: per task, the unbiased estimator over its attempts; here the mean over tasks"
    sections = [
        Section(
            f"job {report.job_id}: by agent × level",
            cols.head("agent", "model", "level"),
            [cols.row((c.agent, c.model, c.level), c) for c in report.cells],
            pass_note,
            headline,
        ),
        Section(
            f"job {report.job_id}: by task × agent × level",
            cols.head("task", "agent", "model", "level"),
            [cols.row((g.task, g.agent, g.model, g.level), g) for g in report.groups],
        ),
    ]
    failed = report.totals.failures
    if failed:
        rows = [[str(b.count), b.outcome.value, b.reason, _ids(b.run_ids)] for b in failed]
        title = f"job {report.job_id}: runs that did not pass, by reason"
        sections.append(Section(title, ("runs", "outcome", "reason", "run ids"), rows))
    return sections


def _compare_section(document: JobComparison) -> Section:
    a, b = (j.job_id for j in document.jobs)
    model = any(r.model for r in document.comparison)

    def pct(v: float | None) -> str:
        return "-" if v is None else f"{v:.0%}"

    rows = [
        [r.agent, *([r.model or "-"] if model else []), str(r.level)]
        + [pct(r.pass_rate_a), pct(r.pass_rate_b), _signed(r.delta)]
        for r in document.comparison
    ]
    head = ("agent", *(["model"] if model else []), "level", f"pass rate {a}", f"pass rate {b}", "change")
    return Section(f"{a} → {b}", head, rows)


def _signed(v: float | None) -> str:
    return "-" if v is None else f"{v * 100:+.0f} pts"


def sections(document: Document) -> list[Section]:
    if isinstance(document, JobReport):
        return job_sections(document)
    return [*job_sections(document.jobs[0]), *job_sections(document.jobs[1]), _compare_section(document)]


def text(document: Document) -> str:
    """Aligned plain columns (no colour, no box characters: stable in logs, pipes and tests)."""
    out = []
    for section in sections(document):
        out += [section.above, ""] if section.above else []
        out.append(_plain(section))
    return "\n".join(out)


def _plain(section: Section) -> str:
    widths = [max(len(str(x)) for x in column) for column in zip(section.head, *section.rows, strict=True)]
    out = [section.title]
    for row in (section.head, *section.rows):
        out.append("  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)).rstrip())
    out += [f"({section.note})"] if section.note else []
    return "\n".join(out) + "\n"


def markdown(document: Document) -> str:
    out = []
    for section in sections(document):
        out += [f"**{section.above}**", ""] if section.above else []
        out += [f"### {section.title}", ""]
        out += ["| " + " | ".join(section.head) + " |", "|" + "---|" * len(section.head)]
        out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in section.rows]
        out += ["", f"_{section.note}_"] if section.note else []
        out.append("")
    return "\n".join(out)


def show_rich(document: Document, stream: IO[str]) -> None:
    """The text report as rich tables (a terminal); a table wider than the terminal is
    printed as plain columns instead (the terminal wraps its lines; no figure is cut)."""
    from ssebench import ui

    console = ui.console(stream)
    for section in sections(document):
        if section.above:
            console.print(ui.styled((section.above, "head")))
        if _needed_width(section) <= console.width:
            console.print(_table(section))
        else:
            console.print(_plain(section).rstrip("\n"))


def _needed_width(section: Section) -> int:
    """The width the rich table needs without cutting a figure (wrapped columns: 12)."""
    widths = []
    for i, name in enumerate(section.head):
        head = max(len(line) for line in _RICH_HEAD.get(name, name).split("\n"))
        cells = max((len(row[i]) for row in section.rows), default=0)
        widths.append(min(12, max(head, cells)) if name in _WRAPPED else max(head, cells))
    return sum(widths) + 3 * (len(widths) - 1)


def _table(section: Section) -> Any:
    from rich import box
    from rich.table import Table

    table = Table(
        title=section.title,
        title_justify="left",
        title_style="bold",
        header_style="bold",
        caption=section.note or None,
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for name in section.head:
        table.add_column(_RICH_HEAD.get(name, name), no_wrap=name not in _WRAPPED)
    for row in section.rows:
        table.add_row(*row)
    return table


def to_json(document: Document) -> str:
    return json.dumps(document.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


def csv_columns(attempts: int) -> list[str]:
    return [
        *(
            "job_id",
            "task",
            "agent",
            "model",
            "level",
            "runs",
            "graded",
            "passed",
            "pass_rate",
            "ci95_low",
            "ci95_high",
        ),
        *(f"pass_at_{k}" for k in range(1, attempts + 1)),
        *("duration_median", "duration_p90", "calls_per_run", "never_called"),
        *(f"calls_{e}" for e in CALL_ENDINGS),
        *(o.value for o in Outcome),
        *("not_run", "input_tokens", "output_tokens", "cached_tokens", "cost_usd", "gateway_runs"),
    ]


def _num(value: float | None, digits: int = 4) -> str:
    return "" if value is None else str(round(value, digits))


def to_csv(document: Document) -> str:
    """One row per job × task × agent × model × level (the report's groups)."""
    reports = [document] if isinstance(document, JobReport) else list(document.jobs)
    attempts = max(r.attempts for r in reports)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(csv_columns(attempts))
    for report in reports:
        for g in report.groups:
            ci = g.pass_rate_ci95 or (None, None)
            u = g.usage
            writer.writerow(
                [report.job_id, g.task, g.agent, g.model or "", g.level, g.runs, g.graded, g.passed]
                + [_num(g.pass_rate), _num(ci[0]), _num(ci[1])]
                + [_num(g.pass_at_k.get(str(k))) for k in range(1, attempts + 1)]
                + [_num(g.duration_median, 3), _num(g.duration_p90, 3), _num(g.calls_per_run, 3), g.never_called]
                + [g.test_patch_endings[e] for e in CALL_ENDINGS]
                + [g.outcomes[o.value] for o in Outcome]
                + [g.not_run, *((u.input_tokens, u.output_tokens, u.cached_tokens) if u else ("", "", ""))]
                + [_num(u.cost_usd, 6) if u else "", len(u.gateway_run_ids) if u else ""]
            )
    return out.getvalue()


def render(document: Document, fmt: str) -> str:
    """FMT: json, csv, markdown or text."""
    shapes = {"json": to_json, "csv": to_csv, "markdown": markdown}
    return shapes.get(fmt, text)(document)
