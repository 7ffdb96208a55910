"""How long `ssebench agents install/uninstall claude` takes on a large ~/.claude.json.

Claude Code keeps every project's history in ~/.claude.json, so the file grows to megabytes;
the JSON editor must stay fast there (json-five's round-trip model took 3 s for 780 kB, which
is why agents/formats/jsonc.py uses only its tokenizer).

    .venv/bin/python benchmarks/bench_agents.py [SIZE_MB ...]   # default: 1 5
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SSEBENCH = Path(sys.executable).with_name("ssebench")


def claude_json(size_mb: float) -> str:
    project = {
        "allowedTools": [],
        "history": [{"display": "fix the overflow in parse_header " * 3, "pastedContents": {}} for _ in range(20)],
        "mcpServers": {},
        "hasTrustDialogAccepted": True,
    }
    one = len(json.dumps(project, indent=2))
    count = max(1, int(size_mb * 1_000_000 / one))
    data = {
        "numStartups": 42,
        "projects": {f"/home/u/src/p{i}": project for i in range(count)},
        "mcpServers": {"other": {"type": "stdio", "command": "npx", "args": ["-y", "x"]}},
    }
    return json.dumps(data, indent=2) + "\n"


def timed(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([str(SSEBENCH), "agents", *args], env=env, check=True, capture_output=True, timeout=600)
    return time.perf_counter() - start


def main(sizes: list[float]) -> None:
    for size in sizes:
        with tempfile.TemporaryDirectory() as home:
            path = Path(home) / ".claude.json"
            original = claude_json(size)
            path.write_text(original)
            env = {**os.environ, "HOME": home}
            env.pop("CLAUDE_CONFIG_DIR", None)
            install = timed(["install", "claude"], env)
            again = timed(["install", "claude"], env)
            uninstall = timed(["uninstall", "claude"], env)
            assert path.read_text() == original
            print(
                f"{len(original) / 1e6:5.1f} MB  install {install:5.2f} s  "
                f"install again {again:5.2f} s  uninstall {uninstall:5.2f} s"
            )


if __name__ == "__main__":
    main([float(a) for a in sys.argv[1:]] or [1.0, 5.0])
