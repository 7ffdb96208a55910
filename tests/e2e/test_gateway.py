"""The model gateway for real: LiteLLM's proxy (its pinned venv) started by ``ssebench jobs``, in
front of the scripted OpenAI chat API, with custom command agents that call the model through it
with httpx. One job, three agents: ``ok`` asks twice; ``spender`` (max_tokens 250) asks until the
gateway refuses; ``parallel`` (max_tokens 250) sends eight requests at once, of which the gateway
lets exactly as many through as sequential ones would get (its budget holds under parallel
requests: over by less than one request's tokens). What each run's record, folder, the report and the job's log say is exact; no
proxy process is left, after the job and after a Ctrl-C; no key is in a log or a record.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ssebench.agents.usage import Usage
from tests.e2e.conftest import install_gateway
from tests.e2e.models import OpenAIChatModel
from tests.helpers.jobs import DEMO, JOBS, jobs, jobs_env

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]

UPSTREAM_KEY = "sk-upstream-e2e-never-shown"
#: a model API that reports cache reads: 100 prompt tokens of which 40 cached, 10 out
USAGE = {
    "prompt_tokens": 100,
    "completion_tokens": 10,
    "total_tokens": 110,
    "prompt_tokens_details": {"cached_tokens": 40},
}
PRICES = {"input": 2.0, "output": 8.0, "cached": 0.5}  # US dollars per million tokens
AGENT = """\
import os, sys, time, httpx
url, key = os.environ["OPENAI_BASE_URL"] + "/chat/completions", os.environ["OPENAI_API_KEY"]
for _ in range(int(sys.argv[1])):
    answer = httpx.post(url, headers={"Authorization": "Bearer " + key}, timeout=120,
                        json={"model": "scripted-model", "messages": [{"role": "user", "content": "fix it"}]})
    if answer.status_code != 200:
        print(answer.json()["error"]["message"], file=sys.stderr)
        sys.exit(1)
if len(sys.argv) > 3:  # what the proxy's admin routes say to the run's key
    root, auth = url.split("/v1/")[0], {"Authorization": "Bearer " + key}
    codes = [httpx.get(root + "/model/info", headers=auth).status_code,
             httpx.post(root + "/model/new", headers=auth, json={}).status_code]
    open(sys.argv[3] + ".part", "w").write(" ".join(map(str, codes)))
    os.replace(sys.argv[3] + ".part", sys.argv[3])
time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 0)
"""


PARALLEL = 8
#: eight requests at once (all threads released together), each printing what it got back
PARALLEL_AGENT = """\
import os, sys, threading, httpx
url, key = os.environ["OPENAI_BASE_URL"] + "/chat/completions", os.environ["OPENAI_API_KEY"]
n = int(sys.argv[1])
start, codes, lock = threading.Barrier(n), [], threading.Lock()
def ask():
    start.wait()
    answer = httpx.post(url, headers={"Authorization": "Bearer " + key}, timeout=120,
                        json={"model": "scripted-model", "messages": [{"role": "user", "content": "fix it"}]})
    with lock:
        codes.append(answer.status_code)
        if answer.status_code != 200:
            print(answer.json()["error"]["message"], file=sys.stderr)
threads = [threading.Thread(target=ask) for _ in range(n)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
sys.exit(0 if codes == [200] * n else 1)
"""


class CachingModel(OpenAIChatModel):
    usage = USAGE


@pytest.fixture(scope="module")
def litellm() -> Path:
    return install_gateway()


def _job(folder: Path, url: str, agents: str) -> Path:
    (folder / "agent.py").write_text(AGENT, encoding="utf-8")
    (folder / "parallel.py").write_text(PARALLEL_AGENT, encoding="utf-8")
    job = folder / "job.toml"
    prices = ", ".join(f"{k} = {v}" for k, v in PRICES.items())
    gateway = f'[gateway]\nurl = "{url}/v1"\nkey_env = "SSE_E2E_VENDOR_KEY"\nprices = {{ "scripted-model" = {{ {prices} }} }}\n'
    job.write_text(f'tasks = ["{DEMO}"]\nlevels = [0]\n{gateway}{agents}', encoding="utf-8")
    return job


def _agent(name: str, *args: str, budget: str = "") -> str:
    argv = json.dumps([sys.executable, "AGENT", *args]).replace("AGENT", "{agent}")
    return f'[[agents]]\nname = "{name}"\ncommand = {argv}\n{budget}'


def _env(tmp: Path, litellm: Path) -> dict[str, str]:
    (tmp / "tmp").mkdir(exist_ok=True)
    return {"SSE_GATEWAY_LITELLM": str(litellm), "SSE_E2E_VENDOR_KEY": UPSTREAM_KEY, "TMPDIR": str(tmp / "tmp")}


def _processes_under(folder: Path) -> list[str]:
    """Command lines of processes naming FOLDER (the proxy's config lives in the job's TMPDIR)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and str(folder).encode() in (entry / "cmdline").read_bytes():
                found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            continue
    return found


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory, litellm: Path) -> tuple[Path, subprocess.CompletedProcess[str], int]:
    tmp = tmp_path_factory.mktemp("gateway")
    with CachingModel() as model:
        agents = _agent("ok", "2") + _agent("spender", "10", budget="max_tokens = 250\n")
        agents = agents.replace("{agent}", str(tmp / "agent.py"))
        agents += _agent("parallel", str(PARALLEL), budget="max_tokens = 250\n").replace(
            "{agent}", str(tmp / "parallel.py")
        )
        job = _job(tmp, model.url, agents)
        done = jobs("run", job, "--results", tmp / "out", env=_env(tmp, litellm))
        answered = len([r for r in model.requests if r.path.endswith("/chat/completions")])
    return tmp, done, answered


def _record(tmp: Path, agent: str) -> dict:  # type: ignore[type-arg]
    return json.loads((tmp / "out" / "runs" / f"demo-overflow.{agent}.L0.a1" / "results.json").read_text())


def test_usage_is_recorded_exactly_as_the_model_api_reported_it(
    job: tuple[Path, subprocess.CompletedProcess[str], int],
) -> None:
    tmp, done, answered = job
    assert done.returncode == 0, done.stderr
    ok = _record(tmp, "ok")
    cost = round(2 * (60 * PRICES["input"] + 10 * PRICES["output"] + 40 * PRICES["cached"]) / 1e6, 9)
    assert ok["agent"]["usage"] == {**Usage(120, 20, 80, cost, source="gateway").__dict__}
    assert ok["gateway"] == {"requests": 2, "refused": 0, "usage": ok["agent"]["usage"],
                             "prices": "the job file's [gateway.prices]", "max_cost": None, "max_tokens": None}  # fmt: skip
    assert (ok["status"], ok["outcome"]) == ("checks_failed", "failed")  # it fixed nothing: graded, failed
    ledger = (tmp / "out" / "runs" / "demo-overflow.ok.L0.a1" / "gateway.jsonl").read_text().splitlines()
    assert [json.loads(line)["input_tokens"] for line in ledger] == [60, 60]
    spender, parallel = _record(tmp, "spender"), _record(tmp, "parallel")
    counted = ok["gateway"]["requests"] + spender["gateway"]["requests"] + parallel["gateway"]["requests"]
    assert answered == counted  # every answer counted once


def test_a_run_over_its_budget_is_budget_with_its_reason(
    job: tuple[Path, subprocess.CompletedProcess[str], int],
) -> None:
    tmp, done, _ = job
    spender = _record(tmp, "spender")
    assert (spender["status"], spender["outcome"], spender["passed"]) == ("budget", "budget", False)
    assert spender["reason"] == (
        "the run's model budget ran out: 330 tokens used of max_tokens 250; 1 request refused (counted at the model gateway)"
    )
    assert (spender["gateway"]["requests"], spender["gateway"]["refused"], spender["gateway"]["max_tokens"]) == (
        3,
        1,
        250,
    )
    # what the agent was told, as its last error line
    assert spender["agent"]["error"] == (
        "the agent exited with status 1: ssebench gateway: this run's model budget is spent: 330 tokens used of "
        "max_tokens 250"
    )
    assert "· budget ·" in done.stderr and "2 budget, 1 checks_failed" in done.stderr


def test_a_budget_holds_under_parallel_requests(job: tuple[Path, subprocess.CompletedProcess[str], int]) -> None:
    """Eight requests at once against max_tokens 250 (110 tokens an answer): one at a time past
    the check, so three are answered (110, 220, then 330: over by less than one answer) and the
    other five refused, as if the agent had asked one after another."""
    tmp, _, _ = job
    parallel = _record(tmp, "parallel")
    assert (parallel["status"], parallel["outcome"]) == ("budget", "budget")
    assert parallel["reason"] == (
        "the run's model budget ran out: 330 tokens used of max_tokens 250; 5 requests refused "
        "(counted at the model gateway)"
    )
    assert (parallel["gateway"]["requests"], parallel["gateway"]["refused"]) == (3, PARALLEL - 3)
    assert parallel["agent"]["usage"]["input_tokens"] == 3 * 60
    folder = tmp / "out" / "runs" / "demo-overflow.parallel.L0.a1"
    lines = [json.loads(line) for line in (folder / "gateway.jsonl").read_text().splitlines()]
    assert [bool(line.get("refused")) for line in lines] == [False] * 3 + [True] * (PARALLEL - 3)


def test_the_report_counts_the_gateways_usage_and_the_budget(
    job: tuple[Path, subprocess.CompletedProcess[str], int],
) -> None:
    tmp, _, _ = job
    report = json.loads(jobs("report", tmp / "out", "--json").stdout)
    usage = report["totals"]["usage"]
    assert (usage["runs"], usage["input_tokens"], usage["cached_tokens"], usage["output_tokens"]) == (3, 480, 320, 80)
    runs = ["demo-overflow.ok.L0.a1", "demo-overflow.parallel.L0.a1", "demo-overflow.spender.L0.a1"]
    assert sorted(usage["gateway_run_ids"]) == sorted(runs)
    assert report["totals"]["outcomes"]["budget"] == 2
    assert {r["run_id"]: r["usage_source"] for r in report["run_index"]} == dict.fromkeys(runs, "gateway")


def test_no_proxy_is_left_and_no_key_is_in_a_file(job: tuple[Path, subprocess.CompletedProcess[str], int]) -> None:
    tmp, done, _ = job
    assert _processes_under(tmp) == []
    assert sorted(p.name for p in (tmp / "tmp").iterdir()) == []  # the proxy's folder went with the job's
    assert "model gateway: LiteLLM 1.106.12 on http://127.0.0.1:" in done.stderr
    for path in (tmp / "out").rglob("*"):
        if path.is_file():
            text = path.read_bytes()
            assert b"sk-ssebench-" not in text and UPSTREAM_KEY.encode() not in text, path


def test_ctrl_c_leaves_no_proxy(tmp_path: Path, litellm: Path) -> None:
    with CachingModel() as model:
        probe = tmp_path / "admin-routes.txt"
        agent = _agent("slow", "1", "600", str(probe)).replace("{agent}", str(tmp_path / "agent.py"))
        job = _job(tmp_path, model.url, agent)
        argv = [*JOBS, "run", str(job), "--results", str(tmp_path / "out")]
        proc = subprocess.Popen(argv, env={**jobs_env(), **_env(tmp_path, litellm)}, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 300
        while not probe.exists() and time.monotonic() < deadline:  # the agent reached the model through it
            assert proc.poll() is None
            time.sleep(0.2)
        assert model.requests
        assert probe.read_text() == "403 403"  # a run's key reaches no admin route of the proxy
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert _processes_under(tmp_path) == []
    assert _record(tmp_path, "slow")["status"] == "cancelled"


def test_a_bundled_agent_through_the_gateway(tmp_path: Path, litellm: Path, agent_clis: Path) -> None:
    """Qwen Code, the real CLI, through the gateway: the scripted API gets test_patch's exact
    text back; what the gateway counted is what the API reported for every request it answered."""
    from tests.e2e.conftest import clean_env
    from tests.e2e.models import TOOL_NAMES

    home = tmp_path / "home"
    home.mkdir()
    with CachingModel(tool_name=TOOL_NAMES["qwen"]) as model:
        agents = '[[agents]]\nname = "qwen"\nmodel = "scripted-model"\ntimeout = 600\n'
        job = _job(tmp_path, model.url, agents)
        env = {**clean_env(home, agent_clis), **_env(tmp_path, litellm)}
        done = subprocess.run([*JOBS, "run", str(job), "--results", str(tmp_path / "out")], env=env,
                              capture_output=True, text=True, timeout=900, check=False)  # fmt: skip
        answered = [r for r in model.requests if r.path.endswith("/chat/completions")]
        results = model.tool_results()
    assert done.returncode == 0, done.stderr
    record = _record(tmp_path, "qwen")
    folder = tmp_path / "out" / "runs" / "demo-overflow.qwen.L0.a1"
    assert [r.text for r in results] == [(folder / record["calls"][0]["text"]).read_text()]
    gateway = record["gateway"]
    assert gateway["requests"] == len(answered) and gateway["refused"] == 0
    n = len(answered)
    assert gateway["usage"] == {"input_tokens": 60 * n, "output_tokens": 10 * n, "cached_tokens": 40 * n,
                                "cost_usd": round(n * 220 / 1e6, 9), "source": "gateway"}  # fmt: skip
    # Qwen Code's stream carries no counts of its own here: the record's usage is the gateway's
    assert record["agent"]["usage"] == gateway["usage"]
    for path in (tmp_path / "out").rglob("*"):
        assert not path.is_file() or b"sk-ssebench-" not in path.read_bytes(), path
    assert _processes_under(tmp_path) == []
