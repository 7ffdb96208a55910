"""The README's promises about itself and `make`: issue 31's points, as a newcomer reads them."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")


def test_the_readme_starts_with_exactly_the_two_commands() -> None:
    """The developers' rule: it starts with two commands for a fresh machine with Python 3.11+."""
    assert README.splitlines()[:6] == [
        "# ssebench — agent integration kit",
        "",
        "```sh",
        "make demo    # set up (venv) and run the main job: test_patch on the bundled example task, unfixed and fixed",
        "make test    # set up and run every test (fast, slow and end-to-end with the real agent CLIs)",
        "```",
    ]


def test_what_ssebench_is_comes_before_any_install() -> None:
    after_commands = README.split("```\n", 1)[1].lstrip("\n")  # after the commands block
    assert after_commands.startswith("ssebench runs AI agents on security tasks: ")
    assert README.index("ssebench runs AI agents on security tasks") < README.index("## Plain install")


def test_the_readme_says_what_make_test_installs() -> None:
    said = " ".join(README[: README.index("## Plain install")].split())
    for word in ("`docker.io`", "`debootstrap`", "`docker-compose`", "`strace`", "`chromium`", "6.6 GiB of agent CLIs"):
        assert word in said, word


def test_make_test_deps_says_what_it_installs_first() -> None:
    """Its first command is the notice; what it prints for this user is one line."""
    planned = subprocess.run(
        ["make", "--no-print-directory", "-n", "test-deps", f"VENV={REPO / '.venv'}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    first = planned[: planned.index("; fi\n") + len("; fi")]
    assert first.startswith('if [ "$(id -u)" = 0 ]; then echo "make test-deps: installing'), planned
    shown = subprocess.run(["sh", "-c", first], capture_output=True, text=True, timeout=30, check=True).stdout
    home = os.environ["HOME"]
    if os.geteuid() == 0:
        assert shown == (
            "make test-deps: installing what is missing for the end-to-end tests: Debian packages (docker.io, "
            "debootstrap, docker-compose, strace, chromium, Go, etcd, containerd) and, in the background, about "
            f"6.6 GiB of agent CLIs and the jobs' model gateway (LiteLLM) from npm and PyPI into {home}/.cache/ssebench\n"
        )
    else:
        assert re.fullmatch(r"make test-deps: installing [^\n]+ \(not root: no Debian packages; [^\n]+\)\n", shown)
