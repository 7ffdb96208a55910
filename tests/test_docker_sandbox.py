"""What the daemon's container gets for the check sandbox (docs/docker.md, "The check
sandbox in a container"): the exact ``docker run`` options, the seccomp profile's rules
and the non-root user. The Docker end-to-end tests run them for real."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from ssebench.container import docker, sidecar
from ssebench.container.workspace import Workspace

pytestmark = pytest.mark.timeout(30)

# What bwrap calls to build its sandbox: the profile must let these through.
BWRAP_NEEDS = {"unshare", "clone", "clone3", "mount", "umount2", "pivot_root", "chroot", "sethostname"}
# What ASan/LSan and ordinary builds need in a check.
CHECKS_NEED = {"ptrace", "personality", "process_vm_readv", "prctl", "execve", "wait4"}


def test_sidecar_options_are_exactly_what_bwrap_needs() -> None:
    assert docker.sandbox_options(1000, 1001) == [
        "--user",
        "1000:1001",
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "--security-opt",
        "systempaths=unconfined",
        "--security-opt",
        "apparmor=unconfined",
        "--security-opt",
        f"seccomp={sidecar.SANDBOX_SECCOMP_PROFILE}",
        "--mount",
        "type=volume,dst=/tmp",
        "--pids-limit",
        "2048",  # 2 x the per-check default (1024)
        "--memory",
        str(6 << 30),
        "--memory-swap",
        str(6 << 30),  # the per-check 4 GiB + 2 GiB
    ]
    assert sidecar.SANDBOX_SECCOMP_PROFILE.is_absolute()  # the docker CLI reads it wherever it runs


def test_seccomp_profile_denies_a_list_and_lets_bwrap_through() -> None:
    profile = json.loads(sidecar.SANDBOX_SECCOMP_PROFILE.read_text(encoding="utf-8"))
    assert profile["defaultAction"] == "SCMP_ACT_ALLOW"
    (rule,) = profile["syscalls"]
    assert (rule["action"], rule["errnoRet"]) == ("SCMP_ACT_ERRNO", 1)  # EPERM
    denied = set(rule["names"])
    assert not denied & (BWRAP_NEEDS | CHECKS_NEED)
    assert {
        "keyctl",
        "add_key",
        "bpf",
        "perf_event_open",
        "userfaultfd",
        "kexec_load",
        "init_module",
        "finit_module",
        "open_by_handle_at",
        "setns",
        "io_uring_setup",
        "fsopen",
        "reboot",
        "swapon",
        "settimeofday",
    } <= denied
    assert {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86"} <= set(profile["architectures"])  # 32-bit entry filtered too


def test_the_daemon_never_runs_as_root_in_its_container(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "getuid", lambda: 0)
    monkeypatch.setattr(os, "getgid", lambda: 0)
    assert docker.daemon_user() == (65534, 65534)
    monkeypatch.setattr(os, "getuid", lambda: 1000)
    monkeypatch.setattr(os, "getgid", lambda: 100)
    assert docker.daemon_user() == (1000, 100)


def test_missing_seccomp_profile_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    missing = tmp_path / "sandbox-seccomp.json"
    monkeypatch.setattr(sidecar, "SANDBOX_SECCOMP_PROFILE", missing)
    with pytest.raises(docker.DockerRunError) as error:
        docker.sandbox_options(1000, 1000)
    assert str(error.value) == f"the sandbox's seccomp profile is missing: {missing} does not exist"


# --- the one-container layout (run_in_docker(..., sidecar=False), the compose file) --------


def _one_container_call(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, uid: int) -> dict:
    """The docker run that _run_one_container asks for (the engine call captured)."""
    calls: list[dict] = []

    def run_container(self, **kwargs):
        private = next(host for host, inside in kwargs["mounts"].items() if inside == "/results")
        (private / "results.json").write_text("{}\n", encoding="utf-8")  # what the entrypoint writes
        calls.append(kwargs)
        return 1

    monkeypatch.setattr(docker.DockerEngine, "run_container", run_container)
    monkeypatch.setattr(os, "getuid", lambda: uid)
    monkeypatch.setattr(os, "getgid", lambda: uid)
    owners: list[tuple[str, int]] = []
    monkeypatch.setattr(docker, "chown_tree", lambda root, u, g: owners.append((root.name, u)))
    space = Workspace(
        task=tmp_path / "task", tree=tmp_path / "tree", sockets=tmp_path / "sockets", results=tmp_path / "private"
    )
    space.results.mkdir()
    (space.task / "src").mkdir(parents=True)
    (space.task / "task.toml").write_text('id = "t"\nsource = "src"\n[build]\nrun = "true"\n', encoding="utf-8")
    results = tmp_path / "results"
    plan = docker.plan_run(
        space.task / "task.toml",
        agent=None,
        agent_command=["claude", "-p", "x"],
        results_dir=results,
        difficulty=2,
        network="none",  # planned without the host network's port check, then run with it
    )
    plan = dataclasses.replace(plan, network="host")
    code = docker._run_one_container(
        docker.DockerEngine("unix:///nowhere"), space, plan, image="img", log_path=results / "container.log"
    )
    assert code == 1
    assert (results / "results.json").read_text(encoding="utf-8") == "{}\n"  # copied to the user's folder
    (call,) = calls
    return {**call, "owners": owners}


def test_one_container_gets_the_sandbox_options_and_never_runs_as_root(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    call = _one_container_call(monkeypatch, tmp_path, uid=0)
    assert call["options"] == docker.sandbox_options(65534, 65534)  # root on the host: nobody in the container
    assert call["owners"] == [("task", 65534), ("private", 65534)]  # its copies handed to that user
    assert call["command"] == ["--", "claude", "-p", "x"]
    assert call["mounts"] == {tmp_path / "task": "/task", tmp_path / "private": "/results"}
    assert call["env"] == {
        "HOME": "/root",
        "SSE_DIFFICULTY": "2",
        "SSE_RESULTS_DIR": "/results",
        "SSE_TASK": "/task/task.toml",
    }  # no SSE_NO_SANDBOX: the checks are sandboxed


def test_one_container_runs_as_the_host_user(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    call = _one_container_call(monkeypatch, tmp_path, uid=1000)
    assert call["options"] == docker.sandbox_options(1000, 1000)
    assert call["owners"] == []  # the copies are the user's already


COMPOSE_FILE = Path(__file__).resolve().parent / "e2e" / "docker" / "docker-compose.yml"


def test_compose_file_runs_non_root_without_capabilities() -> None:
    """Compose cannot pass systempaths=unconfined (the engine refuses it; the docker CLI
    translates it), so the compose container's checks are unsandboxed, said in the file;
    it still runs as a non-root user, capped like the daemon's container."""
    from ruamel.yaml import YAML

    service = YAML(typ="safe").load(COMPOSE_FILE.read_text(encoding="utf-8"))["services"]["task"]
    assert service["user"] == "${SSEBENCH_USER:-65534:65534}"  # never root
    assert service["cap_drop"] == ["ALL"]
    assert service["security_opt"] == ["no-new-privileges"]
    assert service["pids_limit"] == sidecar.SIDECAR_PIDS_LIMIT
    assert service["mem_limit"] == service["memswap_limit"] == f"{sidecar.SIDECAR_MEMORY_LIMIT >> 30}g"
    assert service["environment"] == {"HOME": "/root", "SSE_NO_SANDBOX": "1"}


def test_agent_layers_open_home_to_the_non_root_user() -> None:
    from ssebench.container.dockerfile import render_agent_dockerfile

    for agent in ("claude", "codex", "gemini", "opencode", "kilo", "cline", "copilot"):
        assert render_agent_dockerfile(agent, "ssebench-task:x").rstrip().endswith(" && chmod -R a+rwX /root")
