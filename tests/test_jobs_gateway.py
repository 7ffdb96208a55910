"""The model gateway's parts without the proxy: what a ledger makes of a run's record, the
variables a run gets, the preflight, the job as job.json keeps it (tests/e2e/test_gateway.py
runs the real proxy)."""

from __future__ import annotations

import argparse
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from ssebench.agents.usage import Usage
from ssebench.jobs import jobfile, jobspec, preflight
from ssebench.jobs.gateway import checks, gate, ledger
from ssebench.runrecord import Outcome
from tests.helpers.jobs import DEMO, record_of

URL = "http://127.0.0.1:4000"


def _answered(fresh: int, output: int, cached: int, cost: float | None = 0.001) -> dict[str, object]:
    return {"model": "m", "input_tokens": fresh, "output_tokens": output, "cached_tokens": cached, "cost_usd": cost,
            "prices": "the job file's [gateway.prices]" if cost is not None else None}  # fmt: skip


def test_the_ledger_sums_every_answered_request_and_counts_the_refused() -> None:
    entries = [_answered(60, 10, 40), _answered(60, 10, 40), {"refused": True, "why": "…"}]
    got = ledger.facts(entries, None, 200)
    assert (got.requests, got.refused, got.max_tokens, got.prices) == (2, 1, 200, "the job file's [gateway.prices]")
    assert got.usage == Usage(120, 20, 80, 0.002, source="gateway")


def test_a_request_without_a_price_leaves_the_cost_unknown_not_zero() -> None:
    got = ledger.facts([_answered(5, 1, 0), _answered(5, 1, 0, cost=None)], None, None)
    assert got.usage is not None and (got.usage.input_tokens, got.usage.cost_usd) == (10, None)
    assert ledger.facts([], None, None).usage is None


def test_a_run_over_its_budget_ends_as_budget_with_its_reason_and_grading_kept() -> None:
    record = record_of(Outcome.AGENT_ERROR, "t.a.L2.a1").model_copy(update={"passed": True})
    spent = ledger.facts([_answered(100, 10, 0)] * 3 + [{"refused": True}], None, 250)
    got = ledger.apply(record, spent)
    assert (got.outcome, got.status, got.passed) == (Outcome.BUDGET, "budget", False)
    assert got.reason == (
        "the run's model budget ran out: 330 tokens used of max_tokens 250; 1 request refused (counted at the model gateway)"
    )
    assert got.agent is not None and got.agent.usage == Usage(300, 30, 0, 0.003, source="gateway")
    assert got.gateway == spent


def test_the_agents_own_usage_stays_and_a_cost_budget_names_dollars() -> None:
    own = Usage(1, 2, 3, 0.5)
    record = record_of(Outcome.PASSED, "t.a.L2.a1")
    record = record.model_copy(update={"agent": record.agent.model_copy(update={"usage": own})})  # type: ignore[union-attr]
    got = ledger.apply(record, ledger.facts([_answered(100, 10, 0, cost=0.02)] * 2, 0.03, None))
    assert got.agent is not None and got.agent.usage == own
    assert (
        got.reason == "the run's model budget ran out: $0.0400 spent of max_cost $0.03 (counted at the model gateway)"
    )


@given(
    st.sampled_from(list(Outcome)),
    st.lists(st.tuples(st.integers(0, 500), st.integers(0, 50), st.integers(0, 100)), max_size=6),
    st.integers(0, 3),
    st.one_of(st.none(), st.integers(1, 2000)),
)
def test_only_the_agents_own_endings_become_budget_and_only_over_it(
    outcome: Outcome, answers: list[tuple[int, int, int]], refused: int, max_tokens: int | None
) -> None:
    entries = [_answered(*a) for a in answers] + [{"refused": True}] * refused
    before = record_of(outcome, "t.a.L2.a1")
    got = ledger.apply(before, ledger.facts(entries, None, max_tokens))
    used = sum(sum(a) for a in answers)
    over = max_tokens is not None and (used > max_tokens or (refused > 0 and used >= max_tokens))
    if over and outcome in ledger.AGENT_DECIDED:
        assert (got.outcome, got.status) == (Outcome.BUDGET, "budget")
        assert got.passed == (False if before.passed is not None else None)
    else:
        assert (got.outcome, got.status, got.reason, got.passed) == (
            outcome,
            before.status,
            before.reason,
            before.passed,
        )


def test_a_custom_command_gets_both_vendors_variables_with_its_key() -> None:
    assert gate.agent_vars(None, {}, URL, "sk-run") == {
        "OPENAI_BASE_URL": f"{URL}/v1",
        "OPENAI_API_KEY": "sk-run",
        "ANTHROPIC_BASE_URL": URL,
        "ANTHROPIC_API_KEY": "sk-run",
    }


def test_a_bundled_agent_gets_its_own_variables_and_one_credential() -> None:
    assert gate.agent_vars("claude", {}, URL, "sk-run") == {
        "ANTHROPIC_AUTH_TOKEN": "",
        "CLAUDE_CODE_OAUTH_TOKEN": "",
        "ANTHROPIC_BASE_URL": URL,
        "ANTHROPIC_API_KEY": "sk-run",
    }
    assert gate.agent_vars("qwen", {}, URL, "sk-run")["OPENAI_BASE_URL"] == f"{URL}/v1"


def _job(
    tmp_path: Path, extra: str = "", agent: str = 'command = ["true"]\nmax_tokens = 500\n', name: str = "a"
) -> jobfile.Job:
    path = tmp_path / "job.toml"
    path.write_text(f'tasks = ["{DEMO}"]\n[[agents]]\nname = "{name}"\n{agent}[gateway]\n{extra}', encoding="utf-8")
    return jobfile.load(path)


def test_the_preflight_names_every_gateway_problem(tmp_path: Path) -> None:
    job = _job(tmp_path, 'key_env = "SSE_TEST_VENDOR_KEY"\n')
    assert job.gateway is not None
    found = checks.problems(job.gateway, {"PATH": str(tmp_path)})
    assert [p.text.split(" (set ")[0] for p in found] == [
        "litellm: not found on PATH",
        "SSE_TEST_VENDOR_KEY is not set: the vendor's key the gateway forwards with ([gateway] key_env)",
    ]
    not_litellm = tmp_path / "litellm"
    not_litellm.write_text("#!/bin/sh\n")
    found = checks.problems(job.gateway, {"SSE_GATEWAY_LITELLM": str(not_litellm), "SSE_TEST_VENDOR_KEY": "k"})
    assert [p.text.split(":")[0] for p in found] == [
        f"{not_litellm} is not a venv of LiteLLM, the gateway needs 1.106.12"
    ]


def test_the_preflight_sees_the_gateways_variables_not_a_missing_key(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    job = _job(tmp_path, agent="", name="claude")
    args = argparse.Namespace(ignore_lock=True, registry=None)
    verdict = preflight.check(job, "local", args)
    assert not [p for p in verdict.problems if "API key" in p.text]


def test_job_json_keeps_the_gateway_and_budgets_and_resume_names_a_change(tmp_path: Path) -> None:
    job = _job(tmp_path, "prices = { m = { input = 1, output = 2 } }\n")
    spec = jobspec.to_spec(job)
    assert spec["gateway"] == {"api": "openai", "url": "https://api.openai.com/v1", "key_env": "OPENAI_API_KEY",
                               "prices": {"m": {"input": 1.0, "output": 2.0}}}  # fmt: skip
    again = jobspec.from_spec(spec, job)
    assert (again.gateway, again.agents[0].max_tokens) == (job.gateway, 500)
    changed = jobspec.to_spec(_job(tmp_path, agent='command = ["true"]\nmax_tokens = 900\n'))
    assert jobspec.differences(spec, changed) == ["gateway: {'api': 'openai', 'url': 'https://api.openai.com/v1', "
                                                  "'key_env': 'OPENAI_API_KEY', 'prices': {'m': {'input': 1.0, 'output': 2.0}}} → "
                                                  "{'api': 'openai', 'url': 'https://api.openai.com/v1', 'key_env': 'OPENAI_API_KEY', "
                                                  "'prices': {}}", "agents a: max_tokens: 500 → 900"]  # fmt: skip


def test_the_pages_say_what_the_gateway_counted(tmp_path: Path) -> None:
    """The job page's usage names the runs counted at the gateway; a run's page its usage, its
    source and the gateway's facts (``ssebench view`` over HTTP)."""
    import httpx

    from ssebench import runrecord
    from ssebench.view.samplejob import write_job
    from tests.helpers.view import screenshots_script

    write_job(tmp_path)
    folder = next(f for f in sorted((tmp_path / "demo-job" / "runs").iterdir()) if runrecord.read(f).agent is not None)
    counted = ledger.facts([_answered(60, 10, 40, 0.00022)] * 3 + [{"refused": True}], None, 250)
    record = runrecord.read(folder)
    record = record.model_copy(update={"agent": record.agent.model_copy(update={"usage": None})})  # type: ignore[union-attr]
    runrecord.write(folder, ledger.apply(record, counted))
    with screenshots_script().viewer(tmp_path) as url:
        job = httpx.get(f"{url}/job/0/demo-job", timeout=30).text
        run = httpx.get(f"{url}/run/0/demo-job/runs/{folder.name}", timeout=30).text
    assert ", 1 counted at the model gateway)" in job
    assert (
        '<dd id="usage">180 in · 30 out · 120 cached · $0.0007 <small>(counted at the model gateway)</small></dd>'
        in run
    )
    assert (
        '<dd id="gateway">3 requests · 1 refused (budget spent) · max_tokens 250 · cost $0.0007 '
        "<small>(prices: the job file&#39;s [gateway.prices])</small></dd>"
    ) in run


def test_a_proxy_that_does_not_start_is_one_line_and_leaves_its_log_for_the_next(tmp_path: Path) -> None:
    import pytest

    from ssebench.jobs.gateway.proxy import GatewayError, Proxy
    from ssebench.jobs.gateway.spec import GatewaySpec

    broken = tmp_path / "litellm"
    broken.write_text("#!/bin/sh\necho 'no proxy here'\nexit 3\n")
    broken.chmod(0o755)
    for _ in range(2):  # jobs resume starts it again in the same folder: the log grows
        with pytest.raises(GatewayError) as error:
            Proxy(GatewaySpec(), tmp_path, broken).start()
        assert str(error.value) == (
            "the model gateway (LiteLLM's proxy) exited with status 3 before it was ready: no proxy here "
            f"(its log: {tmp_path / 'gateway.log'})"
        )
    assert (tmp_path / "gateway.log").read_text() == "no proxy here\nno proxy here\n"
