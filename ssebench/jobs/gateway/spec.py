"""The job file's ``[gateway]`` table and the agents' budgets (``max_cost``, ``max_tokens``).

Why a table of its own: the gateway is one per job (one proxy, one vendor behind it), while a
budget is per agent (``[[agents]]``). A budget without a gateway is refused: nothing else counts
what a run spends while it runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: the vendor APIs the gateway forwards to: LiteLLM's provider, its base URL, its key's variable
APIS: dict[str, tuple[str, str, str]] = {
    "openai": ("openai", "https://api.openai.com/v1", "OPENAI_API_KEY"),
    "anthropic": ("anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY"),
}
KEYS = ("api", "url", "key_env", "prices")
PRICE_KEYS = ("input", "output", "cached")


@dataclass(frozen=True)
class GatewaySpec:
    """A checked ``[gateway]`` table."""

    api: str = "openai"
    url: str = APIS["openai"][1]
    key_env: str = APIS["openai"][2]  # the variable holding the vendor's key (its value is never stored)
    #: model -> US dollars per million tokens: input, output, cached (cache reads; default: input)
    prices: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        prices = {m: dict(p) for m, p in sorted(self.prices.items())}
        return {"api": self.api, "url": self.url, "key_env": self.key_env, "prices": prices}


Fail = Callable[[str, str], Exception]


def parse(table: object, fail: Fail) -> GatewaySpec:
    """The ``[gateway]`` table, checked (``fail(key, problem)`` makes the one-line error)."""
    if not isinstance(table, dict):
        raise fail("gateway", "must be a table")
    for key in table:
        if key not in KEYS:
            raise fail(f"gateway.{key}", f"unknown key (known keys: {', '.join(KEYS)})")
    api = table.get("api", "openai")
    if api not in APIS:
        raise fail("gateway.api", f"must be one of {', '.join(APIS)}, got {api!r}")
    _, url, key_env = APIS[api]
    url, key_env = table.get("url", url), table.get("key_env", key_env)
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise fail("gateway.url", f"must be an http(s) URL, got {url!r}")
    if not isinstance(key_env, str) or not key_env.replace("_", "").isalnum():
        raise fail("gateway.key_env", f"must be the name of an environment variable, got {key_env!r}")
    return GatewaySpec(api, url.rstrip("/"), key_env, _prices(table.get("prices", {}), fail))


def _prices(table: object, fail: Fail) -> dict[str, dict[str, float]]:
    if not isinstance(table, dict):
        raise fail("gateway.prices", "must be a table of models")
    prices: dict[str, dict[str, float]] = {}
    for model, row in table.items():
        key = f"gateway.prices.{model}"
        if not isinstance(row, dict) or not {"input", "output"} <= row.keys():
            raise fail(key, "must be a table with input and output (US dollars per million tokens), cached optional")
        for name, value in row.items():
            if name not in PRICE_KEYS:
                raise fail(f"{key}.{name}", f"unknown key (known keys: {', '.join(PRICE_KEYS)})")
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < float("inf"):
                problem = f"must be a price of 0 or more (US dollars per million tokens), got {value!r}"
                raise fail(f"{key}.{name}", problem)
        prices[model] = {k: float(v) for k, v in row.items()}
    return prices


def budget(table: Mapping[str, Any], key: str, fail: Fail, gateway: bool) -> tuple[float | None, int | None]:
    """An agent's ``max_cost`` (US dollars) and ``max_tokens`` per run, checked."""
    cost, tokens = table.get("max_cost"), table.get("max_tokens")
    number = isinstance(cost, int | float) and not isinstance(cost, bool)
    if cost is not None and not (number and 0 < cost < float("inf")):
        raise fail(f"{key}.max_cost", f"must be a positive number of US dollars, got {cost!r}")
    if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1):
        raise fail(f"{key}.max_tokens", f"must be a whole number of tokens above 0, got {tokens!r}")
    if (cost is not None or tokens is not None) and not gateway:
        which = "max_cost" if cost is not None else "max_tokens"
        raise fail(f"{key}.{which}", "a budget needs the [gateway] table: the model gateway counts what a run spends")
    return (float(cost) if cost is not None else None), tokens
