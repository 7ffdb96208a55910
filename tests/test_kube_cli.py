"""`ssebench jobs run|resume --backend kubernetes` without a reachable cluster: one clear
line, exit 2, nothing started (issue 22). The real cluster's runs: tests/e2e/test_kubernetes.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.jobs import DEMO, jobs

pytest.importorskip("kubernetes", reason="the kubernetes client is not installed (pip install -e '.[test]')")

REFUSED = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""


NO_ENGINE = {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}
#: the preflight's lines before the cluster's: the Pod gets only the agent's env (none here), no engine
HEAD = (
    "ssebench jobs: preflight found 3 problems; nothing was started:\n"
    "  agent claude: no model API key: set ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN or CLAUDE_CODE_OAUTH_TOKEN "
    "(and ANTHROPIC_BASE_URL for another endpoint); on kubernetes, in the agent's env in the job file "
    "(a Pod gets no other variable)\n"
    "  docker: no Docker engine answers at unix:///nonexistent/docker.sock; start ssebench's own with "
)


def _run(tmp_path: Path, *flags: str):
    task = str(DEMO / "task.toml")
    argv = ("run", "--task", task, "--agent", "claude", "--backend", "kubernetes", "--registry", "r.example/sse")
    return jobs(*argv, *flags, cwd=tmp_path, env=NO_ENGINE)


def test_no_kubeconfig_is_one_line_among_every_problem(tmp_path: Path) -> None:
    done = _run(tmp_path, "--kubeconfig", "nothere", "--results", "out")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(HEAD)
    assert done.stderr.splitlines()[-1] == (
        "  kubernetes: cannot reach the cluster: ConfigException:"
        " Invalid kube-config file. No configuration found. (kubeconfig: --kubeconfig nothere)"
    )
    assert not (tmp_path / "out").exists()  # nothing started, no job folder


def test_a_cluster_that_does_not_answer_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "refused.kubeconfig").write_text(REFUSED)
    done = _run(tmp_path, "--kubeconfig", "refused.kubeconfig", "--namespace", "ns1", "--results", "out")
    assert done.returncode == 2
    line = done.stderr.splitlines()[-1]
    assert line.startswith("  kubernetes: cannot reach the cluster: MaxRetryError: ")
    assert line.endswith("Connection refused (kubeconfig: --kubeconfig refused.kubeconfig)")
    assert not (tmp_path / "out").exists()


def test_resume_takes_the_flags_and_checks_first(tmp_path: Path) -> None:
    """A job made elsewhere, resumed on kubernetes: the same preflight, job.json untouched."""
    from ssebench.jobs import folder as jobfolder
    from ssebench.jobs import jobfile

    job = tmp_path / "job.toml"
    job.write_text(f'tasks = ["{DEMO}"]\n[[agents]]\nname = "noop"\ncommand = ["true"]\n')
    jobfolder.create(tmp_path / "out", jobfile.load(job), None, "local").close()
    before = (tmp_path / "out" / "job.json").read_bytes()
    flags = ("--backend", "kubernetes", "--registry", "r.example/sse", "--kubeconfig", "nothere")
    again = jobs("resume", "out", *flags, cwd=tmp_path, env=NO_ENGINE)
    assert again.returncode == 2
    assert again.stderr.endswith("No configuration found. (kubeconfig: --kubeconfig nothere)\n")
    assert (tmp_path / "out" / "job.json").read_bytes() == before


def test_a_bad_model_cidr_is_a_usage_error(tmp_path: Path) -> None:
    done = _run(tmp_path, "--model-cidr", "1.2.3")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "ssebench jobs run: error: argument --model-cidr: not an address range (CIDR): '1.2.3'"
    )


def test_the_flags_make_the_backend_they_say() -> None:
    """--model-cidr opens the NetworkPolicy's egress; without --registry images are imported."""
    import argparse

    from ssebench.jobs.backends import kube_setup

    parser = argparse.ArgumentParser()
    kube_setup.add_arguments(parser)
    args = parser.parse_args(["--model-cidr", "10.1.2.3/16", "--model-cidr", "192.0.2.7", "--namespace", "ns1"])
    assert (args.namespace, args.registry, args.kubeconfig) == ("ns1", None, None)
    assert args.model_cidr == ["10.1.0.0/16", "192.0.2.7/32"]
