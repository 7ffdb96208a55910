"""ssebench.container.docker without an engine: what a user sees when Docker is not there
or the input is wrong, before anything is built or written."""

from __future__ import annotations

import socket
import zipfile
from pathlib import Path

import pytest

from ssebench.agents.registry import names
from ssebench.container import docker, images
from ssebench.container.docker import DockerEngine, DockerRunError, run_in_docker

# The Docker tests' runs (xdist group "docker") hold the host's port 3000 while their task
# container serves on it: a test that holds that port, or whose run_in_docker checks it
# before what it tests, goes in their group so the two never overlap.
ON_PORT_3000 = pytest.mark.xdist_group("docker")


def _task(folder: Path) -> Path:
    (folder / "src").mkdir(parents=True)
    (folder / "task.toml").write_text('id = "t"\nsource = "src"\n[build]\nrun = "true"\n', encoding="utf-8")
    return folder


def test_folder_without_task_file_is_refused_before_docker_is_asked(tmp_path: Path) -> None:
    with pytest.raises(DockerRunError) as error:
        run_in_docker(task=tmp_path, agent=None, agent_command=["true"], results_dir=tmp_path / "r", difficulty=2)
    assert str(error.value) == f"{tmp_path}: a folder without task.toml, not a task file"
    assert not (tmp_path / "r").exists()


def test_unknown_agent_is_refused_before_docker_is_asked(tmp_path: Path) -> None:
    with pytest.raises(DockerRunError) as error:
        run_in_docker(
            task=_task(tmp_path / "task"),
            agent="cursor",
            agent_command=[],
            results_dir=tmp_path / "r",
            difficulty=2,
        )
    assert str(error.value) == f"no agent layer for 'cursor': the bundled agents are {', '.join(names())}"
    assert not (tmp_path / "r").exists()


@ON_PORT_3000
def test_no_engine_names_where_it_looked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A real Unix socket that nobody serves HTTP on: docker's answer is a connection error.
    path = tmp_path / "dead.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.close()
    monkeypatch.setenv("DOCKER_HOST", f"unix://{path}")
    if docker.shutil.which("docker") is None:
        with pytest.raises(DockerRunError, match="^the docker command is not installed"):
            DockerEngine.locate()
        return
    with pytest.raises(DockerRunError) as error:
        run_in_docker(
            task=_task(tmp_path / "task"),
            agent=None,
            agent_command=["true"],
            results_dir=tmp_path / "r",
            difficulty=2,
        )
    assert str(error.value) == (
        f"no Docker engine answers at unix://{path}; start ssebench's own with "
        f"{docker.script('docker-engine.sh')} start, or set DOCKER_HOST"
    )
    assert not (tmp_path / "r").exists()


def test_requirements_come_from_the_wheel_metadata_without_extras(tmp_path: Path) -> None:
    wheel = tmp_path / "x-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(
            "x-1.0.dist-info/METADATA",
            (
                "Metadata-Version: 2.3\nName: x\nVersion: 1.0\n"
                "Requires-Dist: httpx>=0.27\nRequires-Dist: fastmcp<5,>=4.2\n"
                "Provides-Extra: test\nRequires-Dist: pytest>=8; extra == 'test'\n"
            ),
        )
    assert images._requirements(wheel) == ["fastmcp<5,>=4.2", "httpx>=0.27"]


def test_image_tags_change_with_any_input(tmp_path: Path) -> None:
    one, two = tmp_path / "a.whl", tmp_path / "b.whl"
    one.write_bytes(b"wheel")
    two.write_bytes(b"wheel")
    assert images._digest(b"FROM x", one) == images._digest(b"FROM x", one)
    assert images._digest(b"FROM x", one) != images._digest(b"FROM y", one)
    assert images._digest(b"FROM x", one) != images._digest(b"FROM x", two)  # the name counts
    one.write_bytes(b"wheel2")
    assert images._digest(b"FROM x", one) != images._digest(b"FROM x", two)


@ON_PORT_3000
def test_busy_port_3000_is_named_before_anything_is_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSEBENCH_DOCKER_NETWORK", raising=False)
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        holder.bind(("127.0.0.1", docker.MCP_PORT))
    except OSError:
        holder.close()
        pytest.skip("port 3000 is already in use here (the test needs to hold it)")
    try:
        with pytest.raises(DockerRunError) as error:
            run_in_docker(
                task=_task(tmp_path / "task"),
                agent=None,
                agent_command=["true"],
                results_dir=tmp_path / "r",
                difficulty=2,
            )
    finally:
        holder.close()
    assert str(error.value) == (
        "port 3000 on 127.0.0.1 is in use; with --network host the task container's MCP server needs it "
        "(another run, or ssebench up?). Free it or set SSEBENCH_DOCKER_NETWORK=bridge"
    )
    assert not (tmp_path / "r").exists()


def test_a_task_file_of_any_name_keeps_its_name_in_the_containers(tmp_path: Path) -> None:
    """``run --task x/custom.toml --docker``: the folder is mounted at /task and the daemon,
    the entrypoint and grading are given /task/custom.toml, not an assumed task.toml."""
    folder = _task(tmp_path / "x")
    (folder / "task.toml").rename(folder / "custom.toml")
    plan = docker.plan_run(
        folder / "custom.toml",
        agent=None,
        agent_command=["true"],
        results_dir=tmp_path / "r",
        difficulty=3,
        network="none",
    )
    assert plan.task.file == folder / "custom.toml" and plan.task_file == "/task/custom.toml"
    assert (plan.env["SSE_DIFFICULTY"], plan.env["SSE_RESULTS_DIR"]) == ("3", "/results")
    # a folder still means its task.toml
    with pytest.raises(DockerRunError, match=f"^{folder}: a folder without task.toml, not a task file$"):
        docker.plan_run(folder, agent=None, agent_command=["true"], results_dir=tmp_path / "r", network="none")
    assert not (tmp_path / "r").exists()  # planning writes nothing
