"""Write task folders for tests: task.toml, a source tree, PoCs and an intent diff.

    from tests.helpers.tasks import make_task
    task = make_task(tmp_path, build="make", pocs=["crash", "ok"], functional="make test")
    task.file   # Path of task.toml; task.tree is the source tree ("src")

Every keyword maps to one part of task-format.md, so a test says only what it needs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# A diff that adds one file, ``intent-added.txt`` ("added"), to the tree: applies to any tree.
ADD_FILE_DIFF = """\
diff --git a/intent-added.txt b/intent-added.txt
new file mode 100644
--- /dev/null
+++ b/intent-added.txt
@@ -0,0 +1 @@
+added
"""

# The default PoC command: a PoC "still triggers" unless its content is "fixed".
POC_RUN = 'test "$(cat "$SSE_POC")" = fixed'


@dataclass
class TaskFiles:
    dir: Path
    file: Path
    tree: Path
    pocs: list[Path] = field(default_factory=list)
    intent_diff: Path | None = None


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def make_task(
    root: Path,
    *,
    task_id: str = "test-task",
    description: str = "A test task.",
    build: str = "true",
    build_timeout: float | None = None,
    pocs: Sequence[str | bytes] | None = None,
    poc_run: str = POC_RUN,
    poc_timeout: float | None = None,
    functional: str | None = "true",
    functional_timeout: float | None = None,
    intent: str | None = None,
    intent_diff: str = ADD_FILE_DIFF,
    intent_timeout: float | None = None,
    tree_files: Mapping[str, str | bytes] | None = None,
    top_toml: str = "",
    extra_toml: str = "",
) -> TaskFiles:
    """Write a task under *root* (created if missing) and return its paths.

    - ``pocs``: PoC file contents, written to ``pocs/poc-1`` ...; ``None`` leaves out
      the ``[pocs]`` table, ``[]`` writes one with ``files = []``.
    - ``functional`` / ``intent``: the ``run`` command, ``None`` leaves the table out;
      ``intent_diff`` is the text of ``intent.diff``.
    - ``tree_files``: files of the source tree ``src/`` (default: one README).
    - ``top_toml``: inserted verbatim after the top-level keys; ``extra_toml``: appended
      verbatim at the end, i.e. inside the last table (for bad-file tests).
    """
    root.mkdir(parents=True, exist_ok=True)
    tree = root / "src"
    tree.mkdir(exist_ok=True)
    for rel, content in (tree_files or {"README": "a test tree\n"}).items():
        path = tree / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)

    lines = [
        f"id = {_toml_str(task_id)}",
        'source = "src"',
        f"description = {_toml_str(description)}",
        top_toml,
        "[build]",
        f"run = {_toml_str(build)}",
    ]
    if build_timeout is not None:
        lines.append(f"timeout = {build_timeout}")
    result = TaskFiles(dir=root, file=root / "task.toml", tree=tree)
    if pocs is not None:
        (root / "pocs").mkdir(exist_ok=True)
        for i, content in enumerate(pocs, start=1):
            path = root / "pocs" / f"poc-{i}"
            path.write_bytes(content if isinstance(content, bytes) else content.encode())
            result.pocs.append(path)
        files = ", ".join(_toml_str(f"pocs/{p.name}") for p in result.pocs)
        lines += ["", "[pocs]", f"run = {_toml_str(poc_run)}", f"files = [{files}]"]
        if poc_timeout is not None:
            lines.append(f"timeout = {poc_timeout}")
    if functional is not None:
        lines += ["", "[functional]", f"run = {_toml_str(functional)}"]
        if functional_timeout is not None:
            lines.append(f"timeout = {functional_timeout}")
    if intent is not None:
        result.intent_diff = root / "intent.diff"
        result.intent_diff.write_text(intent_diff)
        lines += ["", "[intent]", 'diff = "intent.diff"', f"run = {_toml_str(intent)}"]
        if intent_timeout is not None:
            lines.append(f"timeout = {intent_timeout}")
    result.file.write_text("\n".join(lines) + "\n" + extra_toml)
    return result
