"""Bad input never crashes with a traceback and never starts anything half-way (issue 11,
items 4, 5, 7, 8): entrypoint settings, the entrypoint under SIGTERM, the task loader,
the config writers. Real processes and real files throughout.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ssebench.supervise import free_port
from ssebench.task import Task, TaskError, load_task

ENTRY = [sys.executable, "-c", "from ssebench.cli import main; main()", "entrypoint"]


def survivors(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("SSE_TEST_MARKER") == marker:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def entry_env(tmp_path: Path, task_file: Path, marker: str, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "SSE_TASK": str(task_file),
        "SSE_RESULTS_DIR": str(tmp_path / "results"),
        "SSE_MCP_PORT": str(free_port()),
        "SSE_TEST_MARKER": marker,
        "MCP_LOG_DIR": str(tmp_path / "mcp-logs"),
    }
    env.pop("SSE_DIFFICULTY", None)
    env.update(extra)
    return env


def run_entry(
    tmp_path: Path, task_file: Path, *args: str, timeout: float = 60, **extra: str
) -> subprocess.CompletedProcess[str]:
    marker = uuid.uuid4().hex
    result = subprocess.run(
        [*ENTRY, *args],
        env=entry_env(tmp_path, task_file, marker, **extra),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert not survivors(marker)
    return result


def assert_refused_before_start(result: subprocess.CompletedProcess[str], tmp_path: Path, message: str) -> None:
    """Exit 2, one line naming the problem, no traceback, nothing started or written."""
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    assert result.stderr == f"ssebench entrypoint: {message}\n"
    results = tmp_path / "results"
    assert not results.exists() or not any(results.iterdir())  # no daemon.log: nothing started


# --------------------------------------------------------------------------- item 4: settings


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        (
            "SSE_MCP_HOST",
            "256.1.1.1",
            "SSE_MCP_HOST must be an IPv4 address (four numbers from 0 to 255) or a host name, got '256.1.1.1'",
        ),
        ("SSE_MCP_HOST", "[::1", "SSE_MCP_HOST must be an IPv4 or IPv6 address or a host name, got '[::1'"),
        (
            "SSE_MCP_HOST",
            "localhost:99",
            "SSE_MCP_HOST must be an address without a port (give the port in SSE_MCP_PORT), got 'localhost:99'",
        ),
        ("SSE_MCP_HOST", "local host", "SSE_MCP_HOST must be an IPv4 or IPv6 address or a host name, got 'local host'"),
        (
            "SSE_MCP_HOST",
            "fe80::1%eth0",
            "SSE_MCP_HOST must be an IPv4 or IPv6 address or a host name, got 'fe80::1%eth0'",
        ),
        ("SSE_MCP_PORT", "99999", "SSE_MCP_PORT must be a TCP port from 1 to 65535, got '99999'"),
        (
            "SSE_MCP_TIMEOUT",
            "9" * 400,
            "SSE_MCP_TIMEOUT must be at most 1000000000 seconds (about 31 years), got a 400-digit number",
        ),
        (
            "SSE_AGENT_TIMEOUT",
            "1000000001",
            "SSE_AGENT_TIMEOUT must be at most 1000000000 seconds (about 31 years), got '1000000001'",
        ),
        (
            "SSE_MCP_PATH",
            "/mcp\nX-Evil: 1",
            "SSE_MCP_PATH must hold only URL path characters (letters, digits, "
            "-._~!$&'()*+,;=:@/ and %XX), got '/mcp\\nX-Evil: 1'",
        ),
        (
            "SSE_MCP_PATH",
            "/a?b",
            "SSE_MCP_PATH must hold only URL path characters (letters, digits, -._~!$&'()*+,;=:@/ and %XX), got '/a?b'",
        ),
        ("SSE_MCP_PATH", "mcp", "SSE_MCP_PATH must start with '/', got 'mcp'"),
        ("SSE_TREE", "/tmp/a\nb", "SSE_TREE must be a path without control characters, got '/tmp/a\\nb'"),
        ("SSE_RESULTS_DIR", "/tmp/r\tx", "SSE_RESULTS_DIR must be a path without control characters, got '/tmp/r\\tx'"),
        ("MCP_LOG_DIR", "/tmp/l\nx", "MCP_LOG_DIR must be a path without control characters, got '/tmp/l\\nx'"),
        (
            "SSE_DAEMON_SOCKET",
            "/tmp/" + "s" * 120,
            f"SSE_DAEMON_SOCKET is 125 bytes long; a Unix socket path may have at most 107, got '/tmp/{'s' * 120}'",
        ),
    ],
)
def test_malformed_setting_stops_before_anything_starts(
    tmp_path: Path, task_factory, variable: str, value: str, message: str
) -> None:
    task = task_factory()
    result = run_entry(tmp_path, task.file, "--", "true", **{variable: value})
    assert_refused_before_start(result, tmp_path, message)


@pytest.mark.timeout(60)
def test_a_path_setting_that_is_not_utf8_is_refused(tmp_path: Path, task_factory) -> None:
    task = task_factory()
    env = {k.encode(): v.encode() for k, v in entry_env(tmp_path, task.file, uuid.uuid4().hex).items()}
    env[b"SSE_TREE"] = b"/tmp/\xff"
    result = subprocess.run([*ENTRY, "--", "true"], env=env, capture_output=True, text=True, timeout=50)
    assert_refused_before_start(result, tmp_path, "SSE_TREE must be a path in UTF-8, got b'/tmp/\\xff'")


@pytest.mark.timeout(60)
def test_results_folder_that_cannot_be_created_is_a_setting_error(tmp_path: Path, task_factory) -> None:
    task = task_factory()
    blocker = tmp_path / "file"
    blocker.write_text("not a folder\n")
    result = run_entry(tmp_path, task.file, "--", "true", SSE_RESULTS_DIR=str(blocker / "results"))
    assert (result.returncode, result.stderr) == (
        2,
        f"ssebench entrypoint: SSE_RESULTS_DIR: cannot create '{blocker / 'results'}': Not a directory\n",
    )
    assert blocker.read_text() == "not a folder\n"


def test_ipv6_and_bracketed_hosts_make_a_valid_url() -> None:
    from ssebench.container.settings import from_environment

    assert from_environment({"SSE_MCP_HOST": "::1"}).mcp_url == "http://[::1]:3000/mcp"
    assert from_environment({"SSE_MCP_HOST": "[::1]", "SSE_MCP_PORT": "8080"}).mcp_url == "http://[::1]:8080/mcp"
    assert from_environment({"SSE_MCP_HOST": "my-box.example"}).mcp_url == "http://my-box.example:3000/mcp"
    assert from_environment({"SSE_MCP_PATH": "/a/%20b"}).mcp_url == "http://127.0.0.1:3000/a/%20b"


# --------------------------------------------------------------------------- item 7: the task loader


def write_task(root: Path, body: bytes) -> Path:
    (root / "src").mkdir(parents=True, exist_ok=True)
    file = root / "task.toml"
    file.write_bytes(body)
    return file


GOOD = b'id = "t"\nsource = "src"\n[build]\nrun = "true"\n'


def test_bom_task_is_accepted(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path, b"\xef\xbb\xbf" + GOOD))
    assert (task.id, task.build.run) == ("t", "true")


@pytest.mark.parametrize(
    ("body", "fault"),
    [
        (b"a = " + b"[" * 5000, "not valid TOML for a task: arrays or tables nested too deeply"),
        (b"a = " + b"{b = " * 3000, "not valid TOML for a task: arrays or tables nested too deeply"),
        (
            GOOD.replace(b'run = "true"', b'run = "true\\u0000; rm -rf x"'),
            "key 'build.run': a string must not contain control characters, found U+0000",
        ),
        (
            GOOD.replace(b'run = "true"', b'run = """\ntrue\nmake\\u001b[2J\n"""'),
            "key 'build.run': a string must not contain control characters, found U+001B (line 2 of the value)",
        ),
        (
            GOOD.replace(b'source = "src"', b'source = "s\\nrc"'),
            "key 'source': a path must not contain control characters, found U+000A",
        ),
        (
            GOOD + b"timeout = 1" + b"0" * 400 + b"\n",
            "key 'build.timeout': must be at most 604800 seconds (a week), got a 401-digit number",
        ),
        (b"\xef\xbb\xbf\xef\xbb\xbf" + GOOD, "not valid TOML: Invalid statement (at line 1, column 1)"),
    ],
)
def test_bad_task_gives_one_line(tmp_path: Path, body: bytes, fault: str) -> None:
    file = write_task(tmp_path, body)
    with pytest.raises(TaskError) as err:
        load_task(file)
    assert str(err.value) == f"{file}: {fault}"


def test_a_fifo_as_the_task_file_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "task.toml"
    os.mkfifo(fifo)
    with pytest.raises(TaskError) as err:
        load_task(fifo)
    assert str(err.value) == f"{fifo}: is not a regular file, not a task file"


def test_multi_line_run_with_tabs_is_fine(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path, GOOD.replace(b'run = "true"', b'run = """\nif true; then\n\ttrue\nfi\n"""')))
    assert task.build.run == "if true; then\n\ttrue\nfi\n"


def test_oversized_task_file_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    file = write_task(tmp_path, GOOD + b"# " + b"x" * (2 * 1024 * 1024) + b"\n")
    with pytest.raises(TaskError) as err:
        load_task(file)
    assert str(err.value) == (
        f"{file}: the task file is larger than 1024 KiB; a task file names its PoCs and diffs, it does not hold them"
    )


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("body", "fault"),
    [
        (b"a = " + b"[" * 5000, "not valid TOML for a task: arrays or tables nested too deeply"),
        (
            GOOD.replace(b'run = "true"', b'run = "tr\\u0000ue"'),
            "key 'build.run': a string must not contain control characters, found U+0000",
        ),
    ],
)
def test_entrypoint_refuses_bad_task_with_exit_2(tmp_path: Path, body: bytes, fault: str) -> None:
    file = write_task(tmp_path / "task", body)
    result = run_entry(tmp_path, file, "--", "true")
    assert_refused_before_start(result, tmp_path, f"{file}: {fault}")


@pytest.mark.timeout(60)
def test_entrypoint_runs_a_bom_task_past_the_loader(tmp_path: Path) -> None:
    """A BOM task loads: the entrypoint goes on to the next check (here: no agent command)."""
    file = write_task(tmp_path / "task", b"\xef\xbb\xbf" + GOOD)
    result = run_entry(tmp_path, file)
    assert (result.returncode, result.stderr) == (
        2,
        "ssebench entrypoint: no agent command: give it after '--', e.g. ssebench entrypoint -- claude -p ...\n",
    )


toml_fragments = st.sampled_from(
    [
        b'id = "t"\n',
        b'source = "src"\n',
        b"[build]\n",
        b'run = "true"\n',
        b"timeout = 5\n",
        b"[pocs]\n",
        b'files = ["x"]\n',
        b"[intent]\n",
        b'diff = "d"\n',
        b"[functional]\n",
        b"network = true\n",
        b"[",
        b"]",
        b"{",
        b"}",
        b'"',
        b"'''",
        b'"""',
        b"=",
        b"\x00",
        b"\xef\xbb\xbf",
        b"\xff",
        b"\n",
        b"1e999",
        b"-0",
        b"1979-05-27T07:32:00Z",
        b"\\u0000",
        b"\\uD800",
        b"a.b.c",
        b"#",
        b"\r\n",
        b"[[x]]\n",
        b"inf",
        b"nan",
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=st.one_of(
        st.binary(max_size=300),
        st.lists(toml_fragments, max_size=25).map(b"".join),
        st.lists(toml_fragments, max_size=12).map(lambda parts: GOOD + b"".join(parts)),
    )
)
def test_fuzzed_task_files_give_a_task_or_one_line(body: bytes) -> None:
    with tempfile.TemporaryDirectory() as root:
        file = write_task(Path(root), body)
        try:
            task = load_task(file)
        except TaskError as exc:
            message = str(exc)
            assert message.startswith(f"{file}: ") and "\n" not in message and "\r" not in message
        else:
            assert isinstance(task, Task)


# --------------------------------------------------------------------------- item 5: SIGTERM like docker stop


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_sigterm_with_an_agent_ignoring_term_finishes_inside_docker_stops_10s(tmp_path: Path, task_factory) -> None:
    """`docker stop`: SIGTERM, then SIGKILL 10 s later. The agent ignores TERM (so does its
    child); the entrypoint's one grace period must end, results.json be written and the
    entrypoint exit before that kill."""
    task = task_factory()
    ready = tmp_path / "agent-ready"
    marker = uuid.uuid4().hex
    script = f"trap '' TERM; sleep 300 & touch {ready}; while :; do wait; done"
    proc = subprocess.Popen(
        [*ENTRY, "--", "bash", "-c", script],
        env=entry_env(tmp_path, task.file, marker),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    killed_by_docker = False
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the agent never started"
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        try:
            _, stderr = proc.communicate(timeout=10)  # what docker stop waits by default
        except subprocess.TimeoutExpired:
            killed_by_docker = True
            proc.kill()
            _, stderr = proc.communicate()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not killed_by_docker, "the entrypoint was still running 10 s after SIGTERM"
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    data = json.loads((tmp_path / "results" / "results.json").read_text())
    assert (data["status"], data["error"]) == ("interrupted", "interrupted by SIGTERM")
    assert data["agent"]["signal"] == "SIGKILL"  # it ignored TERM: killed after the grace
    grading = {k: v for k, v in data["stages"]["grading"].items() if v is not None}  # a stage's unset fields: null
    assert grading == {"state": "skipped", "detail": "interrupted by SIGTERM"}
    deadline = time.monotonic() + 5
    while survivors(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not survivors(marker)


# --------------------------------------------------------------------------- item 8: config writers

SSEBENCH = Path(sys.executable).with_name("ssebench")


class User:
    """A private HOME; runs the real `ssebench agents` command in it."""

    def __init__(self, root: Path) -> None:
        self.home = root / "home"
        self.home.mkdir()
        self.env = {"HOME": str(self.home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}

    def agents(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(SSEBENCH), "agents", *args], cwd=self.home, env=self.env, capture_output=True, text=True, timeout=60
        )

    def listing(self, folder: Path) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


@pytest.fixture
def user(tmp_path: Path) -> User:
    return User(tmp_path)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("agent", "name", "original"),
    [
        ("claude", "c.json", '{"mcpServers": {}}\n'),
        ("claude", "c.json", "{}"),
        ("claude", "c.json", "{}\n"),
        ("claude", "c.json", "   \n"),
        ("claude", "c.json", ""),
        ("claude", "c.json", '{\n  "a": 1,\n  "mcpServers": {}\n}\n'),
        ("zed", "settings.json", '// zed\n{\n  "context_servers": {},\n}\n'),
        ("goose", "config.yaml", "extensions: {}\n"),
        ("goose", "config.yaml", "GOOSE_MODE: auto\nextensions:\n"),
        ("codex", "config.toml", "[mcp_servers]\n"),
    ],
)
def test_uninstall_gives_back_the_original_bytes(user: User, agent: str, name: str, original: str) -> None:
    config = user.home / name
    config.write_text(original)
    assert user.agents("install", agent, "--file", name).returncode == 0
    assert config.read_text() != original
    done = user.agents("uninstall", agent, "--file", name)
    assert done.returncode == 0, done.stderr
    assert config.read_bytes() == original.encode()


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("agent", "name", "original", "container"),
    [
        ("claude", "c.json", '{"mcpServers": {}}\n', "mcpServers"),
        ("zed", "settings.json", '{\n  "context_servers": {}\n}\n', "context_servers"),
    ],
)
def test_a_container_the_user_had_survives_later_rewrites(
    user: User, agent: str, name: str, original: str, container: str
) -> None:
    """The client rewrote the file after install (no byte-exact undo possible): the entry goes,
    the empty container the user had stays, the client's change stays."""
    config = user.home / name
    config.write_text(original)
    assert user.agents("install", agent, "--file", name).returncode == 0
    data = json.loads(config.read_text())
    config.write_text(json.dumps({"numStartups": 7, **data}, indent=2) + "\n")  # as a client rewrites it
    assert user.agents("uninstall", agent, "--file", name).returncode == 0
    assert json.loads(config.read_text()) == {"numStartups": 7, container: {}}


@pytest.mark.timeout(120)
def test_what_install_created_goes_and_without_a_record_only_the_entry_goes(user: User) -> None:
    config = user.home / "c.json"
    assert user.agents("install", "claude", "--file", "c.json").returncode == 0
    assert user.agents("uninstall", "claude", "--file", "c.json").returncode == 0
    assert not config.exists()  # ssebench made the file: it goes
    config.write_text('{"a": 1}\n')
    assert user.agents("install", "claude", "--file", "c.json").returncode == 0
    import shutil

    shutil.rmtree(user.home / ".local" / "state")  # the install record (agents/installs.py) is lost
    assert user.agents("uninstall", "claude", "--file", "c.json").returncode == 0
    assert json.loads(config.read_text()) == {"a": 1, "mcpServers": {}}  # cautious: the container may be the user's


def refused(done: subprocess.CompletedProcess[str], path: Path, message: str) -> None:
    assert (done.returncode, done.stdout) == (1, ""), done.stderr
    assert done.stderr == f"ssebench agents: {path}{message}. The file was not changed.\n"


@pytest.mark.timeout(120)
def test_read_only_config_is_refused(user: User) -> None:
    config = user.home / ".claude.json"
    config.write_text('{"a": 1, "mcpServers": {"ssebench": {"type": "http", "url": "http://old/mcp"}}}\n')
    config.chmod(0o444)
    before = user.listing(user.home)
    for action in ("install", "uninstall"):  # each would change it
        refused(
            user.agents(action, "claude"),
            config,
            ": is read-only (mode 0444); ssebench does not replace a "
            "read-only config (chmod u+w lets it edit the file)",
        )
        assert user.listing(user.home) == before  # no .bak, no temp file
    assert config.stat().st_mode & 0o777 == 0o444


def chattr(flag: str, path: Path) -> bool:
    return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0


@pytest.fixture
def immutable():
    """chattr +i where the filesystem and our privileges allow it; undone at teardown."""
    flagged: list[Path] = []

    def make(path: Path) -> None:
        if not chattr("+i", path):
            pytest.skip("chattr +i is not possible here (filesystem or privileges)")
        flagged.append(path)

    yield make
    for path in flagged:
        chattr("-i", path)


@pytest.mark.timeout(120)
def test_immutable_config_is_refused_and_nothing_is_left_behind(user: User, immutable) -> None:
    config = user.home / ".claude.json"
    config.write_text('{"a": 1}\n')
    (user.home / ".claude.json.bak").write_text("an older backup\n")
    immutable(config)
    before = user.listing(user.home)
    refused(
        user.agents("install", "claude"),
        config,
        ": is immutable (chattr +i); ssebench leaves it so (chattr -i lets it edit the file)",
    )
    assert user.listing(user.home) == before
    assert not (user.home / ".claude.json.lock").exists()


@pytest.mark.timeout(120)
def test_a_folder_that_refuses_new_files_leaves_nothing_behind(user: User, immutable) -> None:
    folder = user.home / "proj"
    folder.mkdir()
    config = folder / "c.json"
    config.write_text('{"a": 1}\n')
    immutable(folder)
    refused(
        user.agents("install", "claude", "--file", str(config)),
        config,
        f": cannot be written: cannot create a file in {folder}: Operation not permitted "
        "(an immutable file or folder? lsattr shows an 'i')",
    )
    assert user.listing(folder) == {"c.json": b'{"a": 1}\n'}


@pytest.mark.timeout(120)
@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a 0555 folder; the bind-mount test covers root")
def test_a_folder_without_write_permission_leaves_nothing_behind(user: User) -> None:
    folder = user.home / "proj"
    folder.mkdir()
    config = folder / "c.json"
    config.write_text('{"a": 1}\n')
    folder.chmod(0o555)
    try:
        done = user.agents("install", "claude", "--file", str(config))
    finally:
        folder.chmod(0o755)
    refused(done, config, f": cannot be written: cannot create a file in {folder}: Permission denied")
    assert user.listing(folder) == {"c.json": b'{"a": 1}\n'}


@pytest.mark.timeout(120)
def test_a_config_on_a_read_only_mount_is_refused(user: User) -> None:
    """A real read-only bind mount (a private mount namespace, so nothing outside sees it)."""
    folder = user.home / "ro"
    folder.mkdir()
    config = folder / "c.json"
    config.write_text('{"a": 1}\n')
    script = (
        'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && touch "$1/probe" 2>/dev/null; '
        '[ -e "$1/probe" ] && exit 99; shift; exec "$@"'
    )
    done = subprocess.run(
        [
            "unshare",
            "-m",
            "sh",
            "-c",
            script,
            "sh",
            str(folder),
            str(SSEBENCH),
            "agents",
            "install",
            "claude",
            "--file",
            str(config),
        ],
        cwd=user.home,
        env=user.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode != 1 and "ssebench agents:" not in done.stderr:
        pytest.skip(f"no private read-only bind mount here: {done.stderr.strip()[:200]}")
    refused(done, config, ": is on a read-only file system; ssebench cannot change it there")
    assert user.listing(folder) == {"c.json": b'{"a": 1}\n'}


@pytest.mark.timeout(120)
def test_a_backup_that_cannot_be_replaced_undoes_the_change(user: User, immutable) -> None:
    """The config is replaced first, its .bak second: when the .bak fails the old bytes go back."""
    config = user.home / "c.json"
    config.write_text('{"a": 1}\n')
    bak = user.home / "c.json.bak"
    bak.write_text("an older backup\n")
    immutable(bak)
    refused(
        user.agents("install", "claude", "--file", "c.json"),
        config,
        f": its backup {bak} cannot be written: Operation not permitted "
        "(an immutable file or folder? lsattr shows an 'i')",
    )
    assert user.listing(user.home) == {"c.json": b'{"a": 1}\n', "c.json.bak": b"an older backup\n"}


@pytest.mark.timeout(60)
def test_a_fifo_in_place_of_the_config_is_refused_not_waited_on(user: User) -> None:
    config = user.home / "c.json"
    os.mkfifo(config)
    for action in ("install", "uninstall"):
        refused(
            user.agents(action, "claude", "--file", "c.json"),
            config,
            ": is not a regular file (a FIFO, socket or device), not a config file",
        )
    import stat

    assert stat.S_ISFIFO(config.stat().st_mode) and not (user.home / "c.json.bak").exists()


@pytest.mark.timeout(120)
def test_doubly_bommed_file_is_refused(user: User) -> None:
    config = user.home / "c.json"
    original = '\ufeff\ufeff{"a": 1}\n'.encode()
    config.write_bytes(original)
    for action in ("install", "uninstall"):
        refused(
            user.agents(action, "claude", "--file", "c.json"),
            config,
            ", line 1: starts with two byte-order marks (U+FEFF); no client reads it so, remove one and try again",
        )
    assert user.listing(user.home) == {"c.json": original}


@pytest.mark.timeout(120)
def test_a_single_bom_is_kept(user: User) -> None:
    config = user.home / "c.json"
    original = '\ufeff{"a": 1}\n'.encode()
    config.write_bytes(original)
    assert user.agents("install", "claude", "--file", "c.json").returncode == 0
    assert config.read_bytes().startswith("\ufeff{".encode())
    assert user.agents("uninstall", "claude", "--file", "c.json").returncode == 0
    assert config.read_bytes() == original


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("agent", "name", "text"),
    [
        ("claude", "c.json", '{"a": ' + "[" * 3000 + "]" * 3000 + "}\n"),
        ("zed", "c.json", '// jsonc\n{"a": ' + "[" * 3000 + "]" * 3000 + ",}\n"),
        ("codex", "c.toml", "a = " + "[" * 3000 + "]" * 3000 + "\n"),
        ("goose", "c.yaml", "a: " + "[" * 3000 + "]" * 3000 + "\n"),
    ],
)
def test_deep_nesting_is_a_clear_error(user: User, agent: str, name: str, text: str) -> None:
    config = user.home / name
    config.write_text(text)
    for action in ("install", "uninstall"):
        done = user.agents(action, agent, "--file", name)
        assert (done.returncode, done.stdout) == (1, ""), done.stderr
        assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1
        assert done.stderr.startswith(f"ssebench agents: {config}")
        assert done.stderr.endswith(". The file was not changed.\n")
    assert user.listing(user.home) == {name: text.encode()}


# Claude Code's lock on ~/.claude.json: proper-lockfile's, a <file>.lock DIRECTORY made with
# mkdir and kept fresh (mtime) by its holder. A real process holds it here, as claude does.
HOLDER = """
import os, sys, time, json
config, hold, lock = sys.argv[1], float(sys.argv[2]), sys.argv[1] + ".lock"
os.mkdir(lock)
print("held", flush=True)
end = time.monotonic() + hold
while time.monotonic() < end:
    os.utime(lock)
    time.sleep(0.2)
data = json.load(open(config))
data["numStartups"] = data.get("numStartups", 0) + 1  # what claude writes while it holds the lock
with open(config + ".tmp", "w") as f:
    json.dump(data, f, indent=2)
os.replace(config + ".tmp", config)
os.rmdir(lock)
"""


def hold_claude_lock(config: Path, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(config), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


@pytest.mark.timeout(120)
def test_install_waits_for_claude_codes_lock_and_keeps_its_write(user: User) -> None:
    config = user.home / ".claude.json"
    config.write_text('{"numStartups": 1}\n')
    holder = hold_claude_lock(config, 1.5)
    try:
        done = user.agents("install", "claude")
    finally:
        holder.wait(timeout=30)
    assert done.returncode == 0, done.stderr
    data = json.loads(config.read_text())
    assert data["numStartups"] == 2  # claude's write, made while it held the lock, is kept
    assert data["mcpServers"]["ssebench"]["url"] == "http://localhost:3000/mcp"
    assert not (user.home / ".claude.json.lock").exists()


@pytest.mark.timeout(120)
def test_a_lock_held_too_long_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ssebench.agents import files, formats

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(files, "APP_LOCK_TIMEOUT_SECONDS", 1.0)
    config = tmp_path / ".claude.json"
    config.write_text('{"a": 1}\n')
    holder = hold_claude_lock(config, 8)
    try:
        with pytest.raises(files.ConfigError) as err:
            files.edit(config, lambda text: formats.EDITORS["json"].set(text, ("mcpServers", "s"), {"url": "u"}))
        assert str(err.value) == (
            f"{config}: is locked by Claude Code ({config}.lock has been held for more than "
            "1 s, refreshed by a running claude); try again when Claude Code is idle"
        )
        assert config.read_text() == '{"a": 1}\n'
        assert (tmp_path / ".claude.json.lock").is_dir()  # still the holder's
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.timeout(60)
def test_a_stale_claude_lock_is_taken_over_and_the_lock_is_held_while_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ssebench.agents import files, formats

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    config = tmp_path / ".claude.json"
    config.write_text('{"a": 1}\n')
    lock = tmp_path / ".claude.json.lock"
    lock.mkdir()
    old = time.time() - 60
    os.utime(lock, (old, old))  # its holder died a minute ago
    seen = []

    def transform(text: str | None) -> str:
        seen.append(lock.is_dir() and lock.stat().st_mtime > old)  # ours now, not the stale one
        return formats.EDITORS["json"].set(text, ("mcpServers", "s"), {"url": "u"})

    files.edit(config, transform)
    assert seen == [True]
    assert json.loads(config.read_text())["mcpServers"] == {"s": {"url": "u"}}
    assert not lock.exists()


SETTING_VARS = [
    "SSE_MCP_HOST",
    "SSE_MCP_PORT",
    "SSE_MCP_PATH",
    "SSE_MCP_TIMEOUT",
    "SSE_AGENT_TIMEOUT",
    "SSE_TASK",
    "SSE_TREE",
    "SSE_RESULTS_DIR",
    "SSE_DAEMON_SOCKET",
    "MCP_LOG_DIR",
    "SSE_DIALOG",
]


@settings(max_examples=300, deadline=None)
@given(
    values=st.dictionaries(
        st.sampled_from(SETTING_VARS),
        st.one_of(
            st.text(max_size=40), st.sampled_from(["::1", "[::1]", "1.2.3.4", "/mcp", "300", "a:b", "[", "%", "/%4"])
        ),
        max_size=4,
    )
)
def test_fuzzed_settings_give_settings_or_one_line(values: dict[str, str]) -> None:
    from urllib.parse import urlsplit

    from ssebench.container.settings import SettingsError, from_environment

    try:
        got = from_environment(values)
    except SettingsError as exc:
        assert "\n" not in str(exc) and "\r" not in str(exc)
    else:
        parts = urlsplit(got.mcp_url)  # what the agent is given is a URL that reads back
        assert (parts.scheme, parts.port, parts.path) == ("http", got.mcp_port, got.mcp_path)


# Configs with an entry, mutated a little (a bracket, a quote, a comment marker...): install
# and uninstall give a parseable file with (or without) the entry, or one line and no change.
FUZZ_BASES = {
    "claude": '{\n  "a": 1,\n  "mcpServers": {\n    "ssebench": {"type": "http", "url": "u"},\n    "o": {}\n  }\n}\n',
    "zed": '// c\n{\n  "context_servers": {\n    "ssebench": {"url": "u"}, // x\n  },\n}\n',
    "codex": 'model = "x"\n[mcp_servers.ssebench]\nurl = "u"\n\n[mcp_servers.o]\nurl = "v"\n',
    "goose": "extensions:\n  ssebench:\n    uri: u\n  o:\n    enabled: true\nGOOSE: 1\n",
}
FUZZ_FRAGMENTS = st.sampled_from(
    [
        "{",
        "}",
        "[",
        "]",
        '"',
        "'",
        ":",
        ",",
        "\n",
        " ",
        "//",
        "/*",
        "*/",
        "#",
        "a",
        "1",
        "mcpServers",
        "ssebench",
        "\ufeff",
        "null",
        "-",
        "? ",
        "&a",
        "*a",
        "!!",
        "|",
        ">",
        "\t",
        "=",
        "[[",
        "]]",
        ".",
        '"""',
        "{}",
        "[]",
        "\r\n",
        "\x00",
        "---\n",
        "inf",
        "    ",
        "x:",
        "x = 1",
        "[x]",
    ]
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(agent=st.sampled_from(sorted(FUZZ_BASES)), install=st.booleans(), data=st.data())
def test_fuzzed_configs_edit_cleanly_or_give_one_line(agent: str, install: bool, data) -> None:
    from ssebench.agents import actions, files, formats
    from ssebench.agents.base import Env, Scope
    from ssebench.agents.base import ServerSettings as ClientSettings
    from ssebench.agents.registry import CLIENTS

    text = FUZZ_BASES[agent]
    for _ in range(data.draw(st.integers(1, 3))):
        start = data.draw(st.integers(0, len(text)))
        end = data.draw(st.integers(start, min(len(text), start + 3)))
        text = text[:start] + data.draw(FUZZ_FRAGMENTS) + text[end:]
    client = CLIENTS[agent]
    saved = {name: os.environ.get(name) for name in ("XDG_CACHE_HOME", "XDG_STATE_HOME")}
    with tempfile.TemporaryDirectory() as root:
        os.environ["XDG_CACHE_HOME"] = str(Path(root) / "cache")  # locks: in the temp folder
        os.environ["XDG_STATE_HOME"] = str(Path(root) / "state")  # the install record too
        folder = Path(root) / "cfg"
        folder.mkdir()
        config = folder / "config"
        config.write_bytes(text.encode())
        try:
            action = actions.install if install else actions.uninstall
            action(client, ClientSettings(), Scope.USER, Env.current(), file=config)
        except files.ConfigError as exc:
            assert "\n" not in str(exc)
            assert config.read_bytes() == text.encode() and os.listdir(folder) == ["config"]
        else:
            after = files.read_text(config)
            if after is not None:
                entry = formats.EDITORS[client.format].get(after, client.entry_path(ClientSettings()))
                assert (entry is not None) == install
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


@pytest.mark.timeout(120)
def test_sigterm_while_waiting_for_the_daemon_ends_inside_docker_stops_10s(tmp_path: Path, task_factory) -> None:
    """A sidecar daemon that never answers, a long SSE_MCP_TIMEOUT: SIGTERM still ends the
    wait, and results.json says so, well before docker stop's kill."""
    task = task_factory()
    marker = uuid.uuid4().hex
    env = entry_env(
        tmp_path,
        task.file,
        marker,
        SSE_DAEMON_SOCKET=str(tmp_path / "nobody.sock"),
        SSE_TREE=str(task.tree),
        SSE_MCP_TIMEOUT="600",
    )
    env.pop("SSE_TASK")
    proc = subprocess.Popen(
        [*ENTRY, "--sidecar", "--", "true"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        # The entrypoint says each stage as it starts (stderr): the daemon's start is the wait.
        assert proc.stderr is not None
        seen = []
        while not any(": daemon: start: " in line for line in seen):
            line = proc.stderr.readline()
            assert line, "".join(seen) + proc.communicate(timeout=10)[1]
            seen.append(line)
        proc.send_signal(signal.SIGTERM)
        _, rest = proc.communicate(timeout=10)
        stderr = "".join(seen) + rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    data = json.loads((tmp_path / "results" / "results.json").read_text())
    assert (data["status"], data["error"]) == ("interrupted", "interrupted by SIGTERM")
    assert not survivors(marker)


def test_a_yaml_mapping_used_as_a_key_is_one_line_and_nothing_written(tmp_path: Path) -> None:
    # Found by the fuzz above: ruamel.yaml raised TypeError (a mapping as a key is unhashable).
    from ssebench.agents import actions, files
    from ssebench.agents.base import Env, Scope
    from ssebench.agents.base import ServerSettings as ClientSettings
    from ssebench.agents.registry import CLIENTS

    text = "? ensions:\n  ssebench:\n    uri: u\n  o:\n   ? a:led: true\nGOOSE: 1\n"
    config = tmp_path / "config.yaml"
    config.write_text(text)
    for action in (actions.install, actions.uninstall):
        with pytest.raises(files.ConfigError) as err:
            action(CLIENTS["goose"], ClientSettings(), Scope.USER, Env.current(), file=config)
        assert "a mapping key is itself a mapping or a list" in str(err.value) and "\n" not in str(err.value)
        assert config.read_text() == text and os.listdir(tmp_path) == ["config.yaml"]
