"""What the daemon's container gets for the check sandbox (docs/docker.md, "The check
sandbox in a container"): the exact ``docker run`` options, the seccomp profile's rules
and the non-root user. The Docker end-to-end tests run them for real."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ssebench.container import docker

pytestmark = pytest.mark.timeout(30)

# What bwrap calls to build its sandbox: the profile must let these through.
BWRAP_NEEDS = {"unshare", "clone", "clone3", "mount", "umount2", "pivot_root", "chroot", "sethostname"}
# What ASan/LSan and ordinary builds need in a check.
CHECKS_NEED = {"ptrace", "personality", "process_vm_readv", "prctl", "execve", "wait4"}


def test_sidecar_options_are_exactly_what_bwrap_needs() -> None:
    assert docker.sandbox_options(1000, 1001) == [
        "--user", "1000:1001",
        "--cap-drop", "ALL",
        "--security-opt", "no-new-privileges",
        "--security-opt", "systempaths=unconfined",
        "--security-opt", "apparmor=unconfined",
        "--security-opt", f"seccomp={docker.SANDBOX_SECCOMP_PROFILE}",
        "--mount", "type=volume,dst=/tmp",
        "--pids-limit", "2048",  # 2 x the per-check default (1024)
        "--memory", str(6 << 30), "--memory-swap", str(6 << 30),  # the per-check 4 GiB + 2 GiB
    ]
    assert docker.SANDBOX_SECCOMP_PROFILE.is_absolute()  # the docker CLI reads it wherever it runs


def test_seccomp_profile_denies_a_list_and_lets_bwrap_through() -> None:
    profile = json.loads(docker.SANDBOX_SECCOMP_PROFILE.read_text(encoding="utf-8"))
    assert profile["defaultAction"] == "SCMP_ACT_ALLOW"
    (rule,) = profile["syscalls"]
    assert (rule["action"], rule["errnoRet"]) == ("SCMP_ACT_ERRNO", 1)  # EPERM
    denied = set(rule["names"])
    assert not denied & (BWRAP_NEEDS | CHECKS_NEED)
    assert {"keyctl", "add_key", "bpf", "perf_event_open", "userfaultfd", "kexec_load", "init_module",
            "finit_module", "open_by_handle_at", "setns", "io_uring_setup", "fsopen", "reboot",
            "swapon", "settimeofday"} <= denied
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
    monkeypatch.setattr(docker, "SANDBOX_SECCOMP_PROFILE", missing)
    with pytest.raises(docker.DockerRunError) as error:
        docker.sandbox_options(1000, 1000)
    assert str(error.value) == f"the sandbox's seccomp profile is missing: {missing} does not exist"
