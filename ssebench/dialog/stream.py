"""The one base of every dialog reader: what an agent's record names as its ``reader``.

A reader knows only its CLI's event schema: :meth:`StreamConverter.feed` maps one of the CLI's
JSON events to dialog events (ssebench/dialog/events.py) and updates the summary the
pipeline's ``complete`` line is made of (ssebench/dialog/convert.py does the rest the same way
for every CLI). Kept apart from the pipeline, with nothing heavier than the event helpers, so
that the agent modules that subclass it stay cheap to import at start-up.
"""

from __future__ import annotations

from collections.abc import Iterable

from ssebench.agents.usage import Usage
from ssebench.dialog.events import Event


class StreamConverter:
    """Map one CLI's stream events to dialog events.

    Subclasses implement :meth:`feed` and update the summary attributes as the stream reports
    them: ``add_tokens`` for the CLI's token counts, ``cost_usd`` for its own cost figure.
    """

    #: the CLI prints pretty-printed JSON documents (Nanocoder's ``--json`` report), not JSON
    #: lines: the pipeline joins the lines from one that is ``{`` to the next that is ``}``
    documents = False

    def __init__(self, agent: str) -> None:
        self.agent = agent  # the name its ``init`` event carries
        self.tokens: dict[str, int] = {"input": 0, "output": 0, "cached": 0}
        self.cost_usd: float | None = None  # the CLI's own cost figure for the session, if any
        self.duration: float | None = None  # seconds, when the CLI reports it
        self.failed: str | None = None  # the CLI's own error message, if it reported one
        self.finished = False  # the CLI reported the end of the session
        self._counted = False  # the CLI reported token counts at all

    def feed(self, event: dict) -> Iterable[Event]:  # pragma: no cover - abstract
        raise NotImplementedError

    def finish(self) -> Iterable[Event]:
        """Events still buffered when the stream ends (e.g. merged text deltas)."""
        return ()

    def add_tokens(self, input: int = 0, output: int = 0, cached: int = 0) -> None:
        self._counted = True
        self.tokens["input"] += int(input or 0)
        self.tokens["output"] += int(output or 0)
        self.tokens["cached"] += int(cached or 0)

    def add_cost(self, usd: object) -> None:
        """Add one step's cost, as the CLI reported it (a number; anything else is not a cost)."""
        if isinstance(usd, (int, float)) and not isinstance(usd, bool):
            self.cost_usd = (self.cost_usd or 0.0) + float(usd)

    def usage(self) -> Usage | None:
        """The CLI's own token and cost report so far; None when its stream carries none."""
        if not self._counted and self.cost_usd is None:
            return None
        return Usage(
            input_tokens=self.tokens["input"],
            output_tokens=self.tokens["output"],
            cached_tokens=self.tokens["cached"],
            cost_usd=self.cost_usd,
        )
