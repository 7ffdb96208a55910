"""One parser per kind in ssebench/settings.py (issue 19): each gives one line naming the
variable (or flag) and the bad value, and the old names are the same functions."""

from __future__ import annotations

from pathlib import Path

import pytest

from ssebench import settings
from ssebench.settings import SettingsError


@pytest.mark.parametrize(
    "parse, raw, message",
    [
        (settings.duration, "soon", "X must be a positive duration (e.g. 600, 10m, 2h, 7d), got 'soon'"),
        (settings.size, "lots", "X must be a size in bytes (e.g. 1073741824, 512M, 1G), got 'lots'"),
        (settings.count, "-3", "X must be a whole number (1 or more), got '-3'"),
        (settings.whole_seconds, "10m", "X must be a whole number of seconds (1 or more), got '10m'"),
        (settings.port, "99999", "X must be a TCP port from 1 to 65535, got '99999'"),
        (
            settings.host,
            "localhost:99",
            "X must be an address without a port (give the port in SSE_MCP_PORT), got 'localhost:99'",
        ),
        (settings.url_path, "mcp", "X must start with '/', got 'mcp'"),
        (settings.path, "a\nb", "X must be a path without control characters, got 'a\\nb'"),
        (settings.boolean, "maybe", "X must be one of 1, 0, true, false, yes, no, on, off, got 'maybe'"),
    ],
)
def test_each_parser_names_the_variable_and_the_value(parse, raw: str, message: str) -> None:
    with pytest.raises(SettingsError) as caught:
        parse("X", raw)
    assert str(caught.value) == message
    assert isinstance(caught.value, ValueError) and caught.value.exit_code == 2


def test_the_values_each_kind_takes() -> None:
    assert settings.duration("X", "1.5") == 1.5 and settings.duration("X", "7d") == 7 * 86400
    assert settings.size("X", "512MiB") == 512 << 20 and settings.size("X", " 4096 ") == 4096
    assert settings.count("X", " 64 ") == 64 and settings.whole_seconds("X", " 300 ") == 300
    assert settings.port("X", "3000") == 3000 and settings.host("X", "[::1]") == "::1"
    assert settings.url_path("X", "/mcp") == "/mcp" and settings.path("X", "/a/b") == Path("/a/b")
    assert [settings.boolean("X", v) for v in ("1", "On", " yes ", "0", "off", "FALSE")] == [True] * 3 + [False] * 3


def test_a_plain_number_of_seconds_takes_no_unit() -> None:
    assert settings.duration("X", "0.2", units=False) == 0.2
    with pytest.raises(SettingsError, match="^X must be a positive number of seconds, got '10m'$"):
        settings.duration("X", "10m", units=False)


def test_value_reads_one_variable_of_the_table() -> None:
    env = {"SSE_PIDS_LIMIT": "64", "SSE_OUTPUT_LIMIT": "  "}
    assert settings.value("SSE_PIDS_LIMIT", settings.count, 1024, env) == 64
    assert settings.value("SSE_OUTPUT_LIMIT", settings.size, 7, env) == 7  # blank: the default
    assert settings.value("SSE_MEMORY_LIMIT", settings.size, 8, env) == 8
    with pytest.raises(SettingsError, match="^SSE_PIDS_LIMIT must be a whole number"):
        settings.value("SSE_PIDS_LIMIT", settings.count, 1, {"SSE_PIDS_LIMIT": "x"})


def test_the_old_names_are_the_shared_parsers() -> None:
    from ssebench.container import settings as container_settings
    from ssebench.daemon.limits import parse_size
    from ssebench.server.limits import parse_duration

    assert parse_size is settings.size and parse_duration is settings.duration
    assert container_settings.SettingsError is SettingsError


def test_every_parser_named_in_the_table_exists() -> None:
    import importlib

    for variable in settings.VARIABLES:
        if variable.parser:
            module, _, name = variable.parser.partition(":")
            assert callable(
                getattr(
                    importlib.import_module(
                        module.replace("server.", "ssebench.server.", 1) if module.startswith("server.") else module
                    ),
                    name,
                )
            ), variable.name


def test_a_bad_sandbox_switch_stops_the_start_with_one_line() -> None:
    from ssebench.daemon.limits import Limits
    from ssebench.daemon.sandbox import SandboxUnavailable
    from ssebench.daemon.sandbox_setup import detect

    with pytest.raises(
        SandboxUnavailable, match="^SSE_NO_SANDBOX must be one of 1, 0, true, false, yes, no, on, off, got '2'$"
    ):
        detect(environ={"SSE_NO_SANDBOX": "2"})
    assert not detect(environ={"SSE_NO_SANDBOX": "yes"}).enabled
    with pytest.raises(SettingsError, match="^SSE_SANDBOX_CGROUP must be one of"):
        Limits.from_env({"SSE_SANDBOX_CGROUP": "of"})
