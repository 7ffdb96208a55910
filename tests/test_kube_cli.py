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


def _run(tmp_path: Path, *flags: str):
    task = str(DEMO / "task.toml")
    return jobs("run", "--task", task, "--agent", "claude", "--backend", "kubernetes", *flags, cwd=tmp_path)


def test_no_kubeconfig_is_one_line(tmp_path: Path) -> None:
    done = _run(tmp_path, "--kubeconfig", "nothere", "--results", "out")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "ssebench jobs: the kubernetes backend is not available: cannot reach the cluster: ConfigException:"
        " Invalid kube-config file. No configuration found. (kubeconfig: --kubeconfig nothere)\n"
    )


def test_a_cluster_that_does_not_answer_is_one_line_and_resume_takes_the_flags(tmp_path: Path) -> None:
    (tmp_path / "refused.kubeconfig").write_text(REFUSED)
    done = _run(tmp_path, "--kubeconfig", "refused.kubeconfig", "--namespace", "ns1", "--results", "out")
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert line.startswith(
        "ssebench jobs: the kubernetes backend is not available: cannot reach the cluster: MaxRetryError: "
    )
    assert line.endswith("Connection refused (kubeconfig: --kubeconfig refused.kubeconfig)")
    again = jobs("resume", "out", "--backend", "kubernetes", "--kubeconfig", "nothere", cwd=tmp_path)
    assert again.returncode == 2
    assert again.stderr.endswith("No configuration found. (kubeconfig: --kubeconfig nothere)\n")
