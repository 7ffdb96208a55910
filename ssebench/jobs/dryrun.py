"""``ssebench jobs run JOB --dry-run``: the matrix it would run and the preflight's verdict.

Nothing starts and nothing is written: one line per run (task, agent, model, level,
attempt, in the order they would start), the total and the job's shape, then the verdict
(``preflight: passed``, or every problem). Exit 0 when the job could start, 2 when not.
"""

from __future__ import annotations

from ssebench.jobs import matrix
from ssebench.jobs.jobfile import Job
from ssebench.jobs.preflight import Preflight
from ssebench.plural import count


def render(job: Job, backend: str, concurrency: int | None, verdict: Preflight) -> str:
    runs = matrix.expand(job)
    head = ("task", "agent", "model", "level", "attempt")
    rows = [(r.task_id, r.agent.name, r.agent.model or "-", str(r.level), str(r.attempt)) for r in runs]
    widths = [max(len(x) for x in column) for column in zip(head, *rows, strict=True)]
    lines = ["  ".join(x.ljust(w) for x, w in zip(row, widths, strict=True)).rstrip() for row in (head, *rows)]
    shape = " × ".join(
        [
            count(len(job.tasks), "task"),
            count(len(job.agents), "agent"),
            count(len(job.levels), "level"),
            count(job.attempts, "attempt"),
        ]
    )
    at_once = f"at most {concurrency} at once" if concurrency else "as many at once as the resources allow"
    lines.append(f"{count(len(runs), 'run')}: {shape}, on the {backend} backend, {at_once}")
    if not verdict.problems:
        lines.append("preflight: passed; nothing was started (--dry-run)")
    else:
        lines.append(f"preflight: {count(len(verdict.problems), 'problem')}; the job would not start:")
        lines += [f"  {p.line()}" for p in verdict.problems]
    return "\n".join(lines)
