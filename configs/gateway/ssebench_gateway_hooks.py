"""ssebench's hooks inside LiteLLM's proxy: one key per run, its usage ledger, its budget.

Loaded by the proxy itself (``general_settings.custom_auth`` and ``litellm_settings.callbacks``
in the config ssebench/jobs/gateway/proxy.py writes beside a copy of this file), so it runs in
the gateway's own venv and imports nothing of ssebench. Why not LiteLLM's own virtual keys:
they live in a Postgres database (Prisma), which a job on one machine has not got; this file
gives each run its key and budget from plain files instead.

``gateway.json`` beside this file names two folders: ``keys/`` (one ``<sha256 of a key>.json``
per run: its run id and budget, written by ssebench before the run starts; a key itself is
never stored) and ``ledger/`` (one ``<run id>.jsonl`` per run, a line per model request: its
tokens and cost, or that it was refused), and the job's own prices (US dollars per million
tokens, by model). A request whose run has spent its budget is refused with HTTP 400 and one
line naming the budget: the agent learns why, and ssebench records the run as ``budget``.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.metadata
import json
import re
import secrets
import time
from pathlib import Path
from typing import Any

import litellm
from fastapi import HTTPException
from litellm.integrations.custom_logger import CustomLogger
from litellm.proxy._types import UserAPIKeyAuth

_STATE = json.loads(Path(__file__).with_name("gateway.json").read_text(encoding="utf-8"))
KEYS, LEDGER = Path(_STATE["keys"]), Path(_STATE["ledger"])
PRICES: dict[str, dict[str, float]] = _STATE["prices"]
#: a run with a budget has one request at a time past the budget check: run id -> (the request's
#: slot token, when it was let through). Others of the run wait until that one is counted (its
#: ledger line) or failed, so every check sees every answer before it: a run spends at most its
#: budget plus one request. The token (random, in the request's metadata) is what frees the slot:
#: no other request of the run, whatever metadata it sends, can free it.
HOLDER: dict[str, tuple[str, float]] = {}
SLOT = "ssebench_slot"
#: seconds after which a slot whose request never reported back (LiteLLM lost its callback) is
#: taken over by the next request of the run; longer than any model request should take
LEASE = 900.0
POLL = 0.02
BUNDLED = f"LiteLLM {importlib.metadata.version('litellm')}'s bundled price table"


def _run_of(key: str) -> dict[str, Any] | None:
    """The run a key belongs to (its key file), None for any other key."""
    digest = hashlib.sha256(key.encode()).hexdigest()
    try:
        return dict(json.loads((KEYS / f"{digest}.json").read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


#: what a run's key may ask: the model APIs' own routes, never the proxy's admin routes (custom
#: auth skips LiteLLM's route checks, and an agent must not reconfigure or read the gateway)
MODEL_ROUTES = re.compile(
    r"(/v1)?/(chat/completions|completions|responses(/[^/]+)?|messages(/count_tokens)?|models(/[^/]+)?|embeddings)"
    r"|(/v1beta|/gemini/v1beta)/models/[^/]+:(generateContent|streamGenerateContent|countTokens)"
)


async def auth(request: Any, api_key: str) -> UserAPIKeyAuth:
    """A run's key, and only a run's key, on a model route is let in (the master key is not)."""
    run = _run_of(api_key.removeprefix("Bearer ").strip())
    if run is None:
        raise HTTPException(status_code=401, detail="ssebench gateway: not a key of this job's runs")
    if not MODEL_ROUTES.fullmatch(request.url.path):
        raise HTTPException(status_code=403, detail=f"ssebench gateway: {request.url.path} is not a model route")
    return UserAPIKeyAuth(api_key=hashlib.sha256(api_key.encode()).hexdigest(), key_alias=run["run"])


def _append(run_id: str, entry: dict[str, Any]) -> None:
    with open(LEDGER / f"{run_id}.jsonl", "a", encoding="utf-8") as ledger:
        ledger.write(json.dumps({"at": round(time.time(), 3), **entry}) + "\n")


def _spent(run_id: str) -> tuple[int, float]:
    """Tokens (input + cached + output) and dollars the run's answered requests took."""
    tokens, cost = 0, 0.0
    try:
        lines = (LEDGER / f"{run_id}.jsonl").read_text(encoding="utf-8").splitlines()
    except OSError:
        return 0, 0.0
    for line in lines:
        entry = json.loads(line)
        if not entry.get("refused"):
            tokens += entry["input_tokens"] + entry["cached_tokens"] + entry["output_tokens"]
            cost += entry.get("cost_usd") or 0.0
    return tokens, cost


def _over(run: dict[str, Any]) -> str | None:
    """Why the run may not ask again (its budget is spent), or None."""
    tokens, cost = _spent(run["run"])
    if run.get("max_tokens") is not None and tokens >= run["max_tokens"]:
        return f"{tokens:,} tokens used of max_tokens {run['max_tokens']:,}"
    if run.get("max_cost") is not None and cost >= run["max_cost"]:
        return f"${cost:.4f} spent of max_cost ${run['max_cost']}"
    return None


def _price(model: str) -> tuple[dict[str, float] | None, str | None]:
    """The job's prices for MODEL (per million tokens), else None with LiteLLM's table named
    when it knows the model, else (None, None): no price."""
    bare = model.split("/", 1)[-1]
    for name in (model, bare):
        if name in PRICES:
            return PRICES[name], "the job file's [gateway.prices]"
    known = model in litellm.model_cost or bare in litellm.model_cost
    return None, BUNDLED if known else None


def _usage(response: Any) -> tuple[int, int, int]:
    """(input without cache reads, output, cache reads) as the model API reported them."""
    usage = getattr(response, "usage", None)
    prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
    output = int(getattr(usage, "completion_tokens", 0) or 0)
    details = getattr(usage, "prompt_tokens_details", None)
    cached = int(getattr(details, "cached_tokens", 0) or 0)
    return prompt - cached, output, cached


class Ledger(CustomLogger):
    """Counts every answered request of a run and refuses those past its budget."""

    async def async_pre_call_hook(self, user_api_key_dict: Any, cache: Any, data: dict, call_type: Any) -> dict:
        run = _run_of_alias(user_api_key_dict)
        if run is None or (run.get("max_cost") is None and run.get("max_tokens") is None):
            return data
        while (held := HOLDER.get(run["run"])) is not None and time.monotonic() - held[1] < LEASE:
            await asyncio.sleep(POLL)
        # no await from here on: the check and the taking of the slot are one step
        why = _over(run)
        if why is not None:
            _append(run["run"], {"refused": True, "why": why})
            raise HTTPException(status_code=400, detail=f"ssebench gateway: this run's model budget is spent: {why}")
        token = secrets.token_hex(16)
        HOLDER[run["run"]] = (token, time.monotonic())
        metadata = _metadata(data)
        if metadata is not None:
            metadata[SLOT] = token
        return data

    async def async_post_call_failure_hook(
        self, request_data: dict, original_exception: Exception, user_api_key_dict: Any, traceback_str: Any = None
    ) -> None:
        _release(_metadata(request_data))

    async def async_log_failure_event(self, kwargs: dict, response_obj: Any, start_time: Any, end_time: Any) -> None:
        _settled(kwargs)

    async def async_log_success_event(self, kwargs: dict, response_obj: Any, start_time: Any, end_time: Any) -> None:
        metadata = _metadata(kwargs.get("litellm_params") or {})
        if metadata is None:
            return
        run_id = metadata["user_api_key_alias"]
        model = str(kwargs.get("model") or "")
        fresh, output, cached = _usage(response_obj)
        prices, source = _price(model)
        if prices is not None:
            cost: float | None = (
                fresh * prices["input"] + output * prices["output"] + cached * prices.get("cached", prices["input"])
            ) / 1e6
        else:
            cost = float(kwargs.get("response_cost") or 0.0) if source else None
        entry = {"model": model, "input_tokens": fresh, "output_tokens": output, "cached_tokens": cached}
        _append(run_id, {**entry, "cost_usd": cost, "prices": source})
        _settled(kwargs)  # after the line: the run's next request is checked against it


def _settled(kwargs: dict) -> None:
    """A request of the run is counted (or failed): the next one may be checked."""
    _release(_metadata(kwargs.get("litellm_params") or {}))


def _metadata(data: dict) -> dict | None:
    """The request's metadata that LiteLLM wrote the key's alias into: ``litellm_metadata`` on
    the routes whose API has a ``metadata`` of its own (Anthropic's messages: that one is the
    client's), else ``metadata`` (LiteLLM strips a client's ``user_api_key_*`` keys from both)."""
    for name in ("litellm_metadata", "metadata"):
        found = data.get(name)
        if isinstance(found, dict) and found.get("user_api_key_alias"):
            return found
    return None


def _release(metadata: dict | None) -> None:
    """Free the run's slot when METADATA is of the request that holds it (once: later calls
    for the same request, or any other request's, change nothing)."""
    if metadata is None:
        return
    run_id, token = str(metadata.get("user_api_key_alias") or ""), metadata.get(SLOT)
    held = HOLDER.get(run_id)
    if held is not None and token is not None and held[0] == token:
        del HOLDER[run_id]


def _run_of_alias(auth_info: Any) -> dict[str, Any] | None:
    alias = getattr(auth_info, "key_alias", None)
    for path in KEYS.glob("*.json"):
        run = dict(json.loads(path.read_text(encoding="utf-8")))
        if run.get("run") == alias:
            return run
    return None


ledger = Ledger()
