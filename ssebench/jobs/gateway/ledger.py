"""What the gateway counted for one run, and what that makes of the run's record.

The proxy's hooks append one JSON line per request of a run's key to its ledger: the tokens
the model API reported (input without cache reads, output, cache reads) and the cost from the
job's prices or LiteLLM's table, or ``refused`` when the run's budget was spent. Here those
lines become the record's :class:`~ssebench.runrecord.GatewayFacts`; the agent's usage is the
gateway's where the agent reported none (``Usage.source`` says so); and a run that went over its
budget ends as ``budget`` with one line saying which budget and by how much.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ssebench.agents.usage import Usage
from ssebench.runrecord import STATUSES, GatewayFacts, Outcome, RunResult

BUDGET = "budget"
#: the outcomes the agent's own work decided: these a spent budget overrides (never an
#: infrastructure failure, a refusal or a cancellation: they say more about the run)
AGENT_DECIDED = (Outcome.PASSED, Outcome.FAILED, Outcome.AGENT_ERROR, Outcome.AGENT_TIMEOUT)


def read_lines(path: Path) -> list[dict[str, Any]]:
    """The ledger's entries (a torn last line of a killed proxy is skipped)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    entries = []
    for line in text.splitlines():
        try:
            entries.append(json.loads(line))
        except ValueError:
            continue
    return entries


def facts(entries: Iterable[dict[str, Any]], max_cost: float | None, max_tokens: int | None) -> GatewayFacts:
    """The run's gateway facts from its ledger entries and budget."""
    counted = [e for e in entries if not e.get("refused")]
    refused = sum(1 for e in entries if e.get("refused"))
    costs = [e.get("cost_usd") for e in counted]
    sources = sorted({str(e["prices"]) for e in counted if e.get("prices")})
    usage = None
    if counted:
        usage = Usage(
            input_tokens=sum(int(e["input_tokens"]) for e in counted),
            output_tokens=sum(int(e["output_tokens"]) for e in counted),
            cached_tokens=sum(int(e["cached_tokens"]) for e in counted),
            # a cost only when every request had a price: a partial sum would look measured
            cost_usd=round(sum(float(c) for c in costs if c is not None), 9) if None not in costs else None,
            source="gateway",
        )
    return GatewayFacts(
        requests=len(counted),
        refused=refused,
        usage=usage,
        prices="; ".join(sources) or None,
        max_cost=max_cost,
        max_tokens=max_tokens,
    )


def over_budget(gateway: GatewayFacts) -> str | None:
    """Which budget the run went over, as one line's part, or None when it stayed within."""
    usage = gateway.usage
    tokens = usage.input_tokens + usage.cached_tokens + usage.output_tokens if usage else 0
    cost = usage.cost_usd if usage and usage.cost_usd is not None else 0.0
    refused = f"; {gateway.refused} request{'s' if gateway.refused != 1 else ''} refused" if gateway.refused else ""
    limit = gateway.max_tokens
    if limit is not None and (tokens > limit or (gateway.refused and tokens >= limit)):
        return f"{tokens:,} tokens used of max_tokens {gateway.max_tokens:,}{refused}"
    if gateway.max_cost is not None and (cost > gateway.max_cost or (gateway.refused and cost >= gateway.max_cost)):
        return f"${cost:.4f} spent of max_cost ${gateway.max_cost:g}{refused}"
    return None


def apply(result: RunResult, gateway: GatewayFacts) -> RunResult:
    """The record with the gateway's facts; the gateway's usage where the agent reported none;
    ``budget`` (with grading's verdict kept in ``grading``, the run not passed) when it went over."""
    update: dict[str, Any] = {"gateway": gateway}
    if result.agent is not None and result.agent.usage is None and gateway.usage is not None:
        update["agent"] = result.agent.model_copy(update={"usage": gateway.usage})
    why = over_budget(gateway)
    if why is not None and result.outcome in AGENT_DECIDED:
        update["status"] = BUDGET
        update["outcome"] = STATUSES[BUDGET]
        update["reason"] = f"the run's model budget ran out: {why} (counted at the model gateway)"
        update["passed"] = False if result.passed is not None else None
    return result.model_copy(update=update)
