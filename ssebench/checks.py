"""The check kinds: one row per kind, and the one type for how a check ended.

Everything that differs between the build, the PoCs, the intent tests and the
functional tests is a field of its :class:`CheckKind` row in :data:`KINDS`: the wire
name, the label the spec's texts use, the keys of its table in ``task.toml``, up to
which difficulty level it runs, the headline reason when it fails and that reason's
precedence, how the daemon runs it (its step function, named here and imported only
when a run needs it, so the server never imports the daemon) and the words ``ssebench task
check`` says about it. The difficulty levels, the task loader, the daemon's sequence,
its HTTP API, the MCP server's report, ``task check`` and grading read these rows instead
of spelling a kind out again: adding a kind is a row here, its step function and its
table in the task loader (docs/daemon.md, "The check kinds").
"""

from __future__ import annotations

import enum
import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol


class Check(str, enum.Enum):
    """The task's checks, in the order they run; the value is the wire name."""

    BUILD = "build"
    POCS = "pocs"
    INTENT = "intent"
    FUNCTIONAL = "functional"

    @property
    def kind(self) -> CheckKind:
        """This check's row of :data:`KINDS`."""
        return _BY_CHECK[self]

    @property
    def label(self) -> str:
        """The name the spec uses in result texts."""
        return _BY_CHECK[self].label


class State(str, enum.Enum):
    """How a check ended; the value is the wire name (docs/daemon-api.md)."""

    PASSED = "passed"
    FAILED = "failed"
    NOT_RUN = "not_run"  # the build failed, so the check was skipped


@dataclass(frozen=True)
class CheckKind:
    """One kind of check: what it is called, when it runs, how, and what is said about it.

    ``max_level``: the check runs at difficulty levels 0 to ``max_level`` (the levels
    withhold checks from the last kind backwards, so one number per kind is the rule).
    ``always``: every task has it (the build; the PoCs, which pass when the task has
    none), so a run always reports it when it was asked for. ``counted``: its result
    carries ``pocs_passed``/``pocs_total``. ``covered_by``: it passes without running
    when that check passed. ``gates``: it runs whenever anything runs, first, and when it
    does not pass nothing after it runs (the build). ``fresh_view``: it runs in a fresh
    view of the built tree, discarded after it (else in the build mirror itself).
    ``shows_fix``: a run without it cannot show that the vulnerability is fixed.
    ``step``: ``"module:function"`` of the daemon's step that runs it
    (:mod:`ssebench.daemon.steps`). ``task_line``, ``none_line``, ``empty_note``: what
    ``ssebench task check`` says about its table (``{run}``, ``{timeout}``, ``{network}``,
    ``{count}``/``{files}`` of its files, ``{diff}``), about a task without it, and at a
    level when the task has none of its files.
    """

    check: Check
    label: str
    task_keys: frozenset[str]
    default_timeout: float
    max_level: int
    failure_reason: str
    precedence: int  # the headline names the failed check with the lowest number
    step: str
    always: bool = False
    counted: bool = False
    covered_by: Check | None = None
    gates: bool = False
    fresh_view: bool = True
    shows_fix: bool = False
    task_line: str = "{run} ({timeout}{network})"
    none_line: str = "none"
    empty_note: str | None = None

    @property
    def name(self) -> str:
        """The wire name, also the name of the check's table in ``task.toml``."""
        return self.check.value

    def step_function(self) -> Callable[..., Any]:
        """The daemon's step that runs this kind, imported now (the server never needs it)."""
        module, _, name = self.step.partition(":")
        function: Callable[..., Any] = getattr(importlib.import_module(module), name)
        return function


KINDS: tuple[CheckKind, ...] = (
    CheckKind(
        Check.BUILD,
        "build",
        frozenset({"run", "timeout", "network"}),
        1800.0,
        max_level=3,
        failure_reason="The project failed to build. Please reassess the correctness of your patch.",
        precedence=1,
        step="ssebench.daemon.steps:build_step",
        always=True,
        gates=True,
        fresh_view=False,
    ),
    CheckKind(
        Check.POCS,
        "PoCs",
        frozenset({"run", "files", "timeout", "network"}),
        300.0,
        max_level=1,
        failure_reason=(
            "At least one proof-of-concept (PoC) still triggers the vulnerability. Please reassess "
            "your patch and make sure it fixes the root cause of the vulnerability."
        ),
        precedence=3,
        step="ssebench.daemon.steps:pocs_step",
        always=True,
        counted=True,
        shows_fix=True,
        task_line="{count}, each run as: {run} ({timeout} each{network}): {files}",
        none_line="none (the PoC step passes: 'the task has none')",
        empty_note="none: reported passed",
    ),
    CheckKind(
        Check.INTENT,
        "intent tests",
        frozenset({"diff", "run", "timeout", "network", "files"}),
        1800.0,
        max_level=0,
        failure_reason=(
            "One or more intent test(s) failed. These tests validate behavior after the "
            "vulnerability fix. Please reassess your patch to ensure it correctly addresses the "
            "vulnerability and aligns with common patterns in the project."
        ),
        precedence=4,
        step="ssebench.daemon.steps:intent_step",
        task_line="apply {diff}, then: {run} ({timeout}{network})",
    ),
    CheckKind(
        Check.FUNCTIONAL,
        "functional tests",
        frozenset({"run", "timeout", "network"}),
        1800.0,
        max_level=2,
        failure_reason=(
            "One or more functionality test(s) failed. Please reassess your patch and make sure "
            "it fixes the vulnerability without compromising the program's functionality."
        ),
        precedence=2,
        step="ssebench.daemon.steps:command_step",
        covered_by=Check.INTENT,
    ),
)

_BY_CHECK: dict[Check, CheckKind] = {kind.check: kind for kind in KINDS}

CHECK_ORDER: tuple[Check, ...] = tuple(kind.check for kind in KINDS)
FAILURE_PRECEDENCE: tuple[Check, ...] = tuple(kind.check for kind in sorted(KINDS, key=lambda k: k.precedence))
# The keys each check's table in task.toml may hold (docs/task-format.md).
TASK_TABLE_KEYS: dict[str, set[str]] = {kind.name: set(kind.task_keys) for kind in KINDS}


class _Ended(Protocol):
    @property
    def check(self) -> Check: ...

    @property
    def state(self) -> State: ...


def failed_check(results: Iterable[_Ended]) -> Check | None:
    """The check the headline names: the first failed one by precedence."""
    failed = {r.check for r in results if r.state is State.FAILED}
    return next((c for c in FAILURE_PRECEDENCE if c in failed), None)


def task_checks(task: object) -> tuple[Check, ...]:
    """The checks a task has, in run order: the ``always`` kinds, and those whose table
    the task file has (``ssebench.task.Task`` names its fields after the tables)."""
    return tuple(k.check for k in KINDS if k.always or getattr(task, k.name) is not None)
