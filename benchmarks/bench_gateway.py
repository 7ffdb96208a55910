"""What the model gateway costs: its start, its memory, and the time it adds to each request.

Starts the real proxy as ``ssebench jobs`` does (ssebench/jobs/gateway/proxy.py: LiteLLM's proxy
from its pinned venv, ssebench's hooks, a run's key with a budget) in front of the scripted
OpenAI chat API (tests/e2e/models), then sends N sequential chat requests straight to the API
and N through the gateway with the run's key, and prints: the start (seconds until its health
route answered), the proxy's RSS after the requests, and the median and p90 time of a request
each way (the difference is the gateway's overhead). The ledger must count exactly N requests.

    .venv/bin/python benchmarks/bench_gateway.py [N]   (SSE_GATEWAY_LITELLM, else the e2e cache's)
"""

from __future__ import annotations

import hashlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
import psutil

from ssebench.jobs.gateway import ledger
from ssebench.jobs.gateway.proxy import Proxy, litellm_command
from ssebench.jobs.gateway.spec import GatewaySpec
from tests.e2e.models import OpenAIChatModel

BODY = {"model": "scripted-model", "messages": [{"role": "user", "content": "fix it"}]}


def timed(client: httpx.Client, url: str, key: str, n: int) -> list[float]:
    took = []
    for _ in range(n):
        started = time.perf_counter()
        answer = client.post(f"{url}/chat/completions", json=BODY, headers={"Authorization": f"Bearer {key}"})
        took.append(time.perf_counter() - started)
        assert answer.status_code == 200, answer.text
    return took


def show(name: str, took: list[float]) -> str:
    p90 = statistics.quantiles(took, n=10)[-1] if len(took) > 1 else took[0]
    return f"{name}: median {statistics.median(took) * 1000:.1f} ms, p90 {p90 * 1000:.1f} ms"


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    command = litellm_command()
    if command is None:
        from tests.e2e.conftest import install_gateway

        command = install_gateway()
    import os

    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-upstream")
    with tempfile.TemporaryDirectory() as folder, OpenAIChatModel() as model:
        spec = GatewaySpec(url=f"{model.url}/v1", prices={"scripted-model": {"input": 1.0, "output": 2.0}})
        with Proxy(spec, Path(folder), command).start() as proxy:
            key = "sk-ssebench-bench"
            budget = {"run": "bench", "max_cost": 100.0, "max_tokens": None}
            (proxy.keys / f"{hashlib.sha256(key.encode()).hexdigest()}.json").write_text(json.dumps(budget))
            with httpx.Client(timeout=60) as client:
                timed(client, f"{proxy.url}/v1", key, 3)  # warm both paths
                direct = timed(client, f"{model.url}/v1", "unused", n)
                through = timed(client, f"{proxy.url}/v1", key, n)
            assert proxy.proc is not None
            rss = psutil.Process(proxy.proc.pid).memory_info().rss
            time.sleep(0.5)  # the last request's callback
            counted = ledger.facts(ledger.read_lines(proxy.ledger / "bench.jsonl"), None, None)
            print(
                f"gateway: LiteLLM proxy up in {proxy.seconds:.1f} s, RSS {rss / 2**20:.0f} MiB after {n + 3} requests"
            )
            print(show("direct", direct))
            print(show("through the gateway", through))
            print(
                f"overhead: median {(statistics.median(through) - statistics.median(direct)) * 1000:.1f} ms a request"
            )
            print(
                f"ledger: {counted.requests} requests counted (sent {n + 3}), cost ${(counted.usage.cost_usd or 0):.6f}"
            )


if __name__ == "__main__":
    main()
