"""An agent's own token and cost report, as its CLI prints it (Claude Code's ``result``,
Codex's ``turn.completed``, opencode's ``step_finish``, ...).

:class:`Usage` is what a run record embeds. The figures come from the agent's dialog reader
(``StreamConverter.usage()``), the one place that knows the CLI's stream, so they are the same
numbers the dialog's ``complete.tokens`` shows; :func:`read_usage` reads them back from a saved
stream (``agent-stdout.log``). A CLI whose stream carries no counts (Copilot CLI, Continue
CLI, Nanocoder when the model API sent none) gives None, never zeros that would look measured.
The cost is the CLI's own figure, where it prints one (Claude Code's ``total_cost_usd``,
opencode's and Kilo's per-step ``cost``, Cline's ``totalCost``), from its own price list: a
model it has no price for costs 0 there (Cline against an unknown model).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Usage:
    """Tokens as the dialog counts them (``input`` without cache reads, ``cached`` the cache
    reads) and the CLI's own cost in US dollars (None when it reports none)."""

    input_tokens: int
    output_tokens: int
    cached_tokens: int
    cost_usd: float | None = None
    #: who counted: the agent's own stream, or a model gateway between agent and vendor
    source: Literal["agent", "gateway"] = "agent"


def read_usage(agent: str, lines: Iterable[str]) -> Usage | None:
    """The usage the registered ``agent``'s CLI reported in ``lines`` (its stdout), or None.

    ValueError (naming the known agents) for an agent that is not registered."""
    from ssebench.agents import registry
    from ssebench.dialog.convert import DialogPipeline
    from ssebench.dialog.writer import DialogWriter

    converter = registry.agent(agent).converter()
    with open(os.devnull, "w", encoding="utf-8") as nowhere:  # the dialog itself is not kept
        pipeline = DialogPipeline(DialogWriter(nowhere), converter)
        for line in lines:
            pipeline.feed_line(line)
        pipeline.close()
    return converter.usage()
