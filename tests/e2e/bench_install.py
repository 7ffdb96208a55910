"""Install cost of each pinned agent CLI: time and size of a cold ``npm install`` of it alone.

Run by hand (not a test): ``.venv/bin/python tests/e2e/bench_install.py [--warm]``.
Each CLI goes into its own temporary folder with an empty npm cache (``--warm`` keeps the
user's npm cache), at the version configs/agent-clis/package.json pins; then ``--version`` is run
to show it works on this Node. Prints one Markdown table row per CLI.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

E2E = Path(__file__).resolve().parent
BINARIES = {
    "@anthropic-ai/claude-code": "claude",
    "@openai/codex": "codex",
    "@google/gemini-cli": "gemini",
    "opencode-ai": "opencode",
    "@modelcontextprotocol/inspector": "mcp-inspector",
}


def size_of(folder: Path) -> int:
    """Bytes on disk, each file once (npm hard-links a platform binary into two places)."""
    seen: dict[tuple[int, int], int] = {}
    for p in folder.rglob("*"):
        if p.is_file() and not p.is_symlink():
            st = p.stat()
            seen[(st.st_dev, st.st_ino)] = st.st_size
    return sum(seen.values())


def measure(package: str, version: str, warm: bool) -> tuple[float, int, str]:
    with tempfile.TemporaryDirectory(prefix="sse-npm-") as tmp:
        root = Path(tmp)
        (root / "package.json").write_text(json.dumps({"name": "bench", "private": True}))
        cache = ["--cache", str(root / "npm-cache")] if not warm else []
        started = time.monotonic()
        subprocess.run(
            [
                "npm",
                "install",
                "--no-save",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                *cache,
                f"{package}@{version}",
            ],
            cwd=root,
            check=True,
            stdin=subprocess.DEVNULL,
            capture_output=True,
        )
        seconds = time.monotonic() - started
        size = size_of(root / "node_modules")
        binary = root / "node_modules" / ".bin" / BINARIES[package]
        flag = "--help" if BINARIES[package] == "mcp-inspector" else "--version"
        out = subprocess.run([str(binary), flag], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        first = (out.stdout or out.stderr).strip().splitlines()[:1]
        shutil.rmtree(root / "npm-cache", ignore_errors=True)
        return seconds, size, first[0] if first else f"exit {out.returncode}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--warm", action="store_true", help="use the user's npm cache")
    args = parser.parse_args()
    pins = json.loads((E2E.parents[1] / "configs" / "agent-clis" / "package.json").read_text())["dependencies"]
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    print(f"Node {node}, {'warm' if args.warm else 'cold'} npm cache\n")
    print("| CLI | version | install | size | `--version` |")
    print("|---|---|---|---|---|")
    for package, version in pins.items():
        seconds, size, first = measure(package, version, args.warm)
        print(f"| {package} | {version} | {seconds:.0f} s | {size / 2**20:.0f} MiB | {first} |", flush=True)


if __name__ == "__main__":
    main()
