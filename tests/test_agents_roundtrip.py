"""The format editors: only the entry changes, install is idempotent, uninstall undoes install.

Fixture configs carry comments, odd formatting, other servers and unicode; hypothesis
generates more (JSON, JSONC, TOML, YAML).
"""

from __future__ import annotations

import json
import string
from typing import Any

import pytest
import tomlkit
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ssebench.agents import formats
from ssebench.agents.base import ServerSettings
from ssebench.agents.registry import CLIENTS

JSON_FIXTURES = {
    "plain": '{\n  "numStartups": 12,\n  "theme": "dark"\n}\n',
    "claude-like": (
        '{\n  "numStartups": 12,\n  "projects": {\n    "/home/ü/src": {"allowedTools": [], "history": []}\n  },\n'
        '  "mcpServers": {\n    "other": {\n      "type": "stdio",\n      "command": "npx"\n    }\n  },\n'
        '  "userID": "abc"\n}\n'
    ),
    "tabs-crlf": '{\r\n\t"a": [1, 2, 3],\r\n\t"b": {"c": "d"}\r\n}\r\n',
    "one-line": '{"a": 1, "mcpServers": {"x": {"url": "u"}}}',
    "no-final-newline": '{\n    "a": "✓ ünïcødé"\n}',
    "jsonc-zed": (
        "// Zed settings\n//\n// For information on how to configure Zed, see the docs.\n{\n"
        '  "ui_font_size": 16, // bigger\n  /* a block\n     comment */\n  "context_servers": {\n'
        '    "local": {\n      "command": "uvx",\n      "args": ["srv"], // trailing\n    },\n  },\n'
        '  "theme": {"mode": "system", "light": "One Light",},\n}\n'
    ),
    "jsonc-comment-last": '{\n  "a": 1 // the last line has a comment\n}\n',
    "jsonc-comment-before-close": '{\n  "a": 1,\n  // commented-out: "b": 2\n}\n',
    "json5-ish": '{\n  unquoted: \'single\',\n  hex: 0x1F,\n  "mcp": {"x": {enabled: true,},},\n}\n',
}

TOML_FIXTURES = {
    "commented": (
        '# top comment\nmodel = "o3"  # inline\n\n[profiles.a]\nmodel = "x"\n\n'
        '[mcp_servers.docs]\ncommand = "npx"\nenv = { K = "ü" }\n\n# tail\n'
    ),
    "empty-ish": "# only a comment\n",
    "explicit-parent": "[mcp_servers]\n\n[mcp_servers.other]\nurl = 'http://x'\n",
    "after-array-of-tables": '[[hooks]]\nname = "a"\n\n[[hooks]]\nname = "b"\n',
    "odd-spacing": "a=1\n[ profiles . x ]\nb  =  2   # spaced\n",
    "crlf": '# windows\r\nmodel = "x"\r\n\r\n[mcp_servers.a]\r\nurl = "u"\r\n',
    "quoted-keys": '"mcp_servers".other = { url = "x" }\n["profile ü"]\nk = 1\n',
}

YAML_FIXTURES = {
    "goose": (
        "# goose config\nGOOSE_PROVIDER: anthropic  # provider\nextensions:\n  developer:\n    bundled: true\n"
        "    enabled: true   # on\n    name: developer\n    timeout: 300\n    type: builtin\n"
        '  memory:\n    enabled: false\n    type: builtin\n    name: memory\n    args:\n    - a\n    - "b"\n'
        "GOOSE_MODEL: claude-x\n"
    ),
    "four-space": "extensions:\n    other:\n        enabled: true\n        uri: 'http://ü'\nGOOSE_MODE: auto\n",
    "no-extensions": "GOOSE_PROVIDER: openai\nGOOSE_MODEL: gpt\n",
}

# Continue CLI's config.yaml: servers (and models) are lists of named items
YAML_LIST_FIXTURES = {
    "continue": (
        "# my Continue config\nname: Main Config  # shown in cn\nversion: 1.0.0\nschema: v1\nmodels:\n"
        "  - name: Claude\n    provider: anthropic\n    model: claude-x\n    roles:\n      - chat\n\n"
        'mcpServers:\n  - name: other\n    command: npx\n    args: ["-y", "srv-ü"]\n'
    ),
    "flush-lists": "name: x\nversion: 0.0.1\nrules:\n- be brief\n- 'quoted: yes'\n",
    "no-servers": "name: Local\nversion: 1.0.0\nschema: v1\n",
}

# gptme's config.toml: servers are an array of named tables, read only with [mcp] enabled
TOML_LIST_FIXTURES = {
    "gptme": (
        '# my gptme config\n[user]\nname = "me"  # kept\n\n[prompt]\nabout_user = "I like tests"\n\n'
        '[mcp]\nenabled = true\nauto_start = true\n\n[[mcp.servers]]\nname = "other"\ncommand = "npx"\n'
        'args = ["-y", "srv-ü"]\n'
    ),
    "no-mcp": '[env]\nOPENAI_API_KEY = "x"\n\n[[providers]]\nname = "local"\nbase_url = "http://h/v1"\n',
}

# Mistral Vibe's config.toml: [[mcp_servers]] at the top level, beside its providers and models
TOML_ARRAY_FIXTURES = {
    "vibe": (
        '# my vibe config\nactive_model = "devstral"  # kept\nenable_telemetry = false\n\n[[providers]]\n'
        'name = "mistral"\napi_base = "https://api.mistral.ai/v1"\n\n[[mcp_servers]]\nname = "other"\n'
        'transport = "stdio"\ncommand = "npx"\nargs = ["-y", "srv-ü"]\n'
    ),
    "no-mcp": 'active_model = "local"\n\n[[models]]\nname = "m"\nprovider = "local"\nalias = "m"\n',
}

FIXTURES = {
    "json": JSON_FIXTURES,
    "toml": TOML_FIXTURES,
    "yaml": YAML_FIXTURES,
    "yaml-list": YAML_LIST_FIXTURES,
    "toml-list": TOML_LIST_FIXTURES,
    "toml-array": TOML_ARRAY_FIXTURES,
}
CASES = [
    pytest.param(client, name, id=f"{client.name}-{name}")
    for client in CLIENTS.values()
    for name in FIXTURES[client.format]
]


def entry_for(client, name: str = "ssebench") -> tuple[tuple[str, ...], dict[str, Any]]:
    s = ServerSettings(name=name)
    return client.entry_path(s), client.entry(s)


@pytest.mark.parametrize(("client", "fixture"), CASES)
def test_round_trip_on_fixture(client, fixture: str) -> None:
    original = FIXTURES[client.format][fixture]
    editor = formats.EDITORS[client.format]
    path, entry = entry_for(client)
    installed = editor.set(original, path, entry)
    assert installed != original
    assert editor.get(installed, path) == entry
    assert editor.set(installed, path, entry) == installed  # idempotent, byte for byte
    assert editor.remove(installed, path) == original  # undone, byte for byte
    assert editor.remove(original, path) == original  # nothing to remove: untouched


@pytest.mark.parametrize("fixture", sorted(JSON_FIXTURES))
def test_json_install_only_adds_lines(fixture: str) -> None:
    original = JSON_FIXTURES[fixture]
    editor = formats.EDITORS["json"]
    installed = editor.set(original, ("mcpServers", "ssebench"), {"url": "u"})
    if "\n" in original.strip():
        # every original line survives, in order (one may gain a comma)
        kept = iter(installed.splitlines())
        for line in original.splitlines():
            assert any(
                candidate in (line, line.rstrip() + ",", line.replace(" //", ", //", 1))
                or candidate.startswith(line.rstrip() + ",")
                for candidate in kept
            ), line


def test_toml_install_appends_only_the_table() -> None:
    original = TOML_FIXTURES["commented"]
    client = CLIENTS["codex"]
    path, entry = entry_for(client)
    installed = formats.EDITORS["toml"].set(original, path, entry)
    assert installed.startswith(original + "\n[mcp_servers.ssebench]\n")


def test_toml_existing_entry_is_replaced_in_place() -> None:
    original = TOML_FIXTURES["commented"].replace("# tail\n", '[mcp_servers.ssebench]\nurl = "old"\n\n# tail\n')
    editor = formats.EDITORS["toml"]
    updated = editor.set(original, ("mcp_servers", "ssebench"), {"url": "new", "tool_timeout_sec": 5})
    assert updated == original.replace('url = "old"\n', 'url = "new"\ntool_timeout_sec = 5\n')


def test_toml_inline_table_entry_falls_back_to_tomlkit() -> None:
    original = 'mcp_servers = { other = { url = "x" } }\n'
    editor = formats.EDITORS["toml"]
    installed = editor.set(original, ("mcp_servers", "ssebench"), {"url": "u"})
    assert tomlkit.parse(installed).unwrap() == {"mcp_servers": {"other": {"url": "x"}, "ssebench": {"url": "u"}}}
    removed = editor.remove(installed, ("mcp_servers", "ssebench"))
    assert removed is not None
    assert tomlkit.parse(removed).unwrap() == {"mcp_servers": {"other": {"url": "x"}}}


def test_json_duplicate_keys_last_one_wins() -> None:
    text = '{\n  "mcpServers": {"ssebench": {"url": "a"}},\n  "mcpServers": {"other": {}}\n}\n'
    editor = formats.EDITORS["json"]
    assert editor.get(text, ("mcpServers", "ssebench")) is None
    installed = editor.set(text, ("mcpServers", "ssebench"), {"url": "b"})
    assert json.loads(installed)["mcpServers"] == {"other": {}, "ssebench": {"url": "b"}}


def test_json_empty_root_and_pruning() -> None:
    editor = formats.EDITORS["json"]
    assert editor.remove(editor.set("{}", ("mcpServers", "x"), {"url": "u"}), ("mcpServers", "x")) is None
    kept = "{\n  // keep me\n}\n"
    assert editor.remove(editor.set(kept, ("mcpServers", "x"), {"url": "u"}), ("mcpServers", "x")) == kept


def test_yaml_comment_only_file_keeps_its_comments() -> None:
    original = "# goose: nothing configured yet\n"
    editor = formats.EDITORS["yaml"]
    installed = editor.set(original, ("extensions", "ssebench"), {"uri": "u", "timeout": 5})
    assert installed == original + "extensions:\n  ssebench:\n    uri: u\n    timeout: 5\n"


# --------------------------------------------------------------------------- generated configs

keys = st.text(alphabet=string.ascii_letters + "_-é✓", min_size=1, max_size=8)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.text(alphabet=string.printable.replace("\r", "").replace("\x0b", "").replace("\x0c", "") + "üñ✓€", max_size=12),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=3)),
    max_leaves=8,
)
servers = st.dictionaries(
    keys.filter(lambda k: k != "ssebench"),
    st.fixed_dictionaries({"url": st.text(string.ascii_letters, max_size=8)}),
    min_size=1,
    max_size=3,
)


def json_config(container: str):
    return (
        st.tuples(
            st.dictionaries(keys.filter(lambda k: k != container), json_values, max_size=4),
            st.one_of(st.none(), servers),
        )
        .map(lambda t: {**t[0], **({container: t[1]} if t[1] else {})})
        .filter(bool)
    )


def render_jsonc(value: Any, data, indent: str, level: int = 0) -> str:
    """JSON text with random comments and trailing commas, laid out like a hand-edited file."""
    if not isinstance(value, dict) or not value:
        return json.dumps(value, ensure_ascii=False)
    pad = indent * (level + 1)
    parts = []
    for k, v in value.items():
        comment = data.draw(st.sampled_from(["", "// note ✓", "/* block */"]))
        line = f"{pad}{json.dumps(k, ensure_ascii=False)}: {render_jsonc(v, data, indent, level + 1)}"
        parts.append((line, comment))
    trailing = data.draw(st.booleans())
    lines = []
    for i, (line, comment) in enumerate(parts):
        comma = "," if i < len(parts) - 1 or trailing else ""
        lines.append(line + comma + (f" {comment}" if comment else ""))
    return "{\n" + "\n".join(lines) + "\n" + indent * level + "}"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=json_config("mcpServers"), indent=st.sampled_from([None, 2, 4, "\t"]))
def test_json_install_uninstall_identity(config: dict[str, Any], indent) -> None:
    text = json.dumps(config, indent=indent, ensure_ascii=False) + "\n"
    editor = formats.EDITORS["json"]
    path, entry = entry_for(CLIENTS["claude"])
    installed = editor.set(text, path, entry)
    assert json.loads(installed)["mcpServers"]["ssebench"] == entry
    assert {k: v for k, v in json.loads(installed).items() if k != "mcpServers"} == {
        k: v for k, v in config.items() if k != "mcpServers"
    }
    assert editor.set(installed, path, entry) == installed
    assert editor.remove(installed, path) == text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=json_config("mcp"), data=st.data(), indent=st.sampled_from(["  ", "    ", "\t"]))
def test_jsonc_install_uninstall_identity(config: dict[str, Any], data, indent: str) -> None:
    text = "// generated\n" + render_jsonc(config, data, indent) + "\n"
    editor = formats.EDITORS["json"]
    path, entry = entry_for(CLIENTS["opencode"])
    installed = editor.set(text, path, entry)
    assert editor.get(installed, path) == entry
    assert editor.set(installed, path, entry) == installed
    assert editor.remove(installed, path) == text


@pytest.mark.parametrize("name", [c.name for c in CLIENTS.values() if c.format == "json"])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), indent=st.sampled_from(["  ", "    ", "\t"]))
def test_every_json_client_round_trips_hand_edited_jsonc(name: str, data, indent: str) -> None:
    """Each JSON client's own container (``servers``, ``mcp``, ``context_servers``...) in a file
    with random comments, trailing commas and other servers: install, again, uninstall."""
    client = CLIENTS[name]
    config = data.draw(json_config(client.container[0]))
    text = "// mine\n" + render_jsonc(config, data, indent) + "\n"
    editor = formats.EDITORS["json"]
    path, entry = entry_for(client)
    installed = editor.set(text, path, entry)
    assert editor.get(installed, path) == entry
    assert editor.set(installed, path, entry) == installed
    assert editor.remove(installed, path) == text


toml_keys = st.text(alphabet=string.ascii_lowercase + "_", min_size=1, max_size=6)
toml_scalars = st.one_of(
    st.booleans(), st.integers(-1000, 1000), st.text(alphabet=string.ascii_letters + " üñ✓", max_size=10)
)


@pytest.mark.parametrize("client_name", [c.name for c in CLIENTS.values() if c.format == "toml"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    top=st.dictionaries(toml_keys.filter(lambda k: k != "mcp_servers"), toml_scalars, max_size=3),
    tables=st.dictionaries(
        toml_keys.filter(lambda k: k != "mcp_servers"),
        st.dictionaries(toml_keys, toml_scalars, min_size=1, max_size=3),
        max_size=3,
    ),
    others=st.dictionaries(
        toml_keys.filter(lambda k: k != "ssebench"),
        st.fixed_dictionaries({"url": st.text(string.ascii_letters, max_size=6)}),
        max_size=2,
    ),
    comments=st.lists(st.sampled_from(["# a comment ✓", "", "#"]), max_size=3),
)
def test_toml_install_uninstall_identity(client_name: str, top, tables, others, comments) -> None:
    assume(not set(top) & set(tables))
    doc = tomlkit.document()
    for line in comments:
        doc.add(tomlkit.comment(line) if line else tomlkit.nl())
    for k, v in top.items():
        doc.add(k, v)
    for name, table in tables.items():
        t = tomlkit.table()
        for k, v in table.items():
            t.add(k, v)
        t.add(tomlkit.comment("inside"))
        doc.add(name, t)
    if others:
        ms = tomlkit.table(is_super_table=True)
        for name, value in others.items():
            ms.add(name, value)
        doc.add("mcp_servers", ms)
    text = tomlkit.dumps(doc)
    assume(text.endswith("\n"))
    editor = formats.EDITORS["toml"]
    path, entry = entry_for(CLIENTS[client_name])
    installed = editor.set(text, path, entry)
    assert installed.startswith(text)
    assert editor.get(installed, path) == entry
    assert editor.set(installed, path, entry) == installed
    removed = editor.remove(installed, path)
    assert removed == (text if text.strip() else None)


@pytest.mark.parametrize("name", [c.name for c in CLIENTS.values() if c.format == "yaml"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    top=st.dictionaries(toml_keys.filter(lambda k: k != "extensions"), toml_scalars, min_size=1, max_size=3),
    others=st.dictionaries(
        toml_keys.filter(lambda k: k != "ssebench"),
        st.fixed_dictionaries({"enabled": st.booleans(), "type": st.just("builtin")}),
        max_size=2,
    ),
    comment=st.sampled_from(["", "# goose ✓\n"]),
    between=st.lists(st.sampled_from(["# next ✓\n", "\n", "  # indented\n"]), max_size=3),
)
def test_yaml_install_uninstall_identity(name: str, top, others, comment: str, between: list[str]) -> None:
    import io

    from ruamel.yaml import YAML

    yaml = YAML()
    data: dict[str, Any] = dict(top)
    if others:
        data[CLIENTS[name].container[0]] = others
    out = io.StringIO()
    yaml.dump(data, out)
    lines = out.getvalue().splitlines(keepends=True)
    top_level = [i for i, line in enumerate(lines) if i and not line.startswith((" ", "-"))]
    for i, extra in zip(reversed(top_level), between, strict=False):  # comments and blank lines before keys
        lines.insert(i, extra)
    text = comment + "".join(lines)
    editor = formats.EDITORS["yaml"]
    path, entry = entry_for(CLIENTS[name])
    installed = editor.set(text, path, entry)
    assert editor.get(installed, path) == entry
    assert editor.set(installed, path, entry) == installed
    assert editor.remove(installed, path) == text


def test_yaml_entry_goes_before_the_comments_of_the_next_key() -> None:
    original = (
        "extensions:\n  developer:\n    enabled: true\n    type: builtin\n\n"
        "# the model comes next\nGOOSE_MODEL: claude-x\n"
    )
    editor = formats.EDITORS["yaml"]
    installed = editor.set(original, ("extensions", "ssebench"), {"uri": "u", "timeout": 5, "envs": {}})
    assert installed == (
        "extensions:\n  developer:\n    enabled: true\n    type: builtin\n"
        "  ssebench:\n    uri: u\n    timeout: 5\n    envs: {}\n\n"
        "# the model comes next\nGOOSE_MODEL: claude-x\n"
    )
    assert editor.remove(installed, ("extensions", "ssebench")) == original


def test_yaml_flow_style_container_is_edited_by_ruamel() -> None:
    original = "extensions: {developer: {enabled: true}}\nGOOSE_MODE: auto\n"
    editor = formats.EDITORS["yaml"]
    installed = editor.set(original, ("extensions", "ssebench"), {"uri": "u"})
    assert editor.get(installed, ("extensions", "ssebench")) == {"uri": "u"}
    assert editor.get(installed, ("extensions", "developer")) == {"enabled": True}
    removed = editor.remove(installed, ("extensions", "ssebench"))
    assert removed is not None
    assert editor.get(removed, ("extensions", "developer")) == {"enabled": True}
    assert editor.get(removed, ("extensions", "ssebench")) is None


def test_yaml_null_container_gets_the_entry() -> None:
    editor = formats.EDITORS["yaml"]
    installed = editor.set("GOOSE_MODE: auto\nextensions:\nGOOSE_MODEL: x\n", ("extensions", "ssebench"), {"uri": "u"})
    assert installed == "GOOSE_MODE: auto\nextensions:\n  ssebench:\n    uri: u\nGOOSE_MODEL: x\n"
    assert editor.remove(installed, ("extensions", "ssebench")) == "GOOSE_MODE: auto\nGOOSE_MODEL: x\n"
