"""``ssebench dataset import arvo SRC DEST``: ARVO's records as task folders.

ARVO (Atlas of Reproducible Vulnerabilities for Open Source Software; the base of
CyberGym's tasks) publishes one record per OSS-Fuzz vulnerability in its repository:
``meta/<localId>.json`` (project, crash type, sanitizer, fuzzer, the OSS-Fuzz report, the
fix commit) and ``patches/<localId>.diff`` (the fix commit, ``git show``). The
vulnerable tree, the PoC (the fuzzer's reproducer) and OSS-Fuzz's build script are not
in the repository: they are in the record's image (``n132/arvo:<localId>-vul``: ``/src``,
``/tmp/poc``, ``/src/build.sh``). SRC is an ARVO-Meta checkout plus, per record to
import, ``arvo/<localId>/`` with what the user exported from that image: ``src/`` (the
project's tree), ``poc`` and ``build.sh``. The field map: docs/datasets.md.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssebench import ui
from ssebench.dataset.lockfile import DatasetError

# The build: OSS-Fuzz's build script with OSS-Fuzz's variables, the fuzz targets linked
# with a standalone driver (no libFuzzer: gcc has none), into $SSE_TREE/sse-out.
BUILD_SH = """\
#!/usr/bin/env bash
# OSS-Fuzz's build script for this record (oss-fuzz-build.sh, from the record's image),
# run as OSS-Fuzz runs it: $SRC holds the project, $OUT gets the fuzz targets. The
# targets link a standalone driver instead of libFuzzer: it runs each input file once.
set -euo pipefail
export SRC="$(dirname "$SSE_TREE")" WORK="$SSE_TREE/sse-work" OUT="$SSE_TREE/sse-out"
export CC="${CC:-gcc}" CXX="${CXX:-g++}"
export SANITIZER_FLAGS="-fsanitize=address -fno-omit-frame-pointer"
export CFLAGS="-g -O1 $SANITIZER_FLAGS" CXXFLAGS="-g -O1 $SANITIZER_FLAGS"
mkdir -p "$WORK" "$OUT"
$CC $CFLAGS -c "$SSE_TASK_DIR/standalone.c" -o "$WORK/standalone.o"
ar rcs "$WORK/libstandalone.a" "$WORK/standalone.o"
export LIB_FUZZING_ENGINE="$WORK/libstandalone.a $SANITIZER_FLAGS"
cd "$SSE_TREE"
bash "$SSE_TASK_DIR/oss-fuzz-build.sh"
"""

STANDALONE_C = """\
/* Runs a libFuzzer target once per file named on the command line (OSS-Fuzz's
   LIB_FUZZING_ENGINE, for a build without libFuzzer). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

int main(int argc, char **argv) {
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) { perror(argv[i]); return 2; }
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fseek(f, 0, SEEK_SET);
        uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
        if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) { perror(argv[i]); return 2; }
        fclose(f);
        LLVMFuzzerTestOneInput(buf, (size_t)n);
        free(buf);
    }
    return 0;
}
"""


@dataclass(frozen=True)
class ArvoRecord:
    """The fields of one ARVO record that a task uses."""

    local_id: int
    project: str
    crash_type: str
    sanitizer: str
    fuzz_target: str
    fix_commit: str
    fix: str  # the fix commit's diff, from its first ``diff --git``

    @property
    def task_id(self) -> str:
        return f"arvo-{self.local_id}"


def read_record(src: Path, local_id: str) -> ArvoRecord:
    """The record *local_id* of the ARVO-Meta checkout *src*; raises DatasetError naming file and key."""
    meta, patch = src / "meta" / f"{local_id}.json", src / "patches" / f"{local_id}.diff"
    try:
        data = json.loads(meta.read_text())
    except FileNotFoundError:
        raise DatasetError(f"{meta}: no such ARVO record") from None
    except (OSError, ValueError) as exc:
        raise DatasetError(f"{meta}: not an ARVO record: {exc}") from None
    fields = {}
    for key in ("localId", "project", "crash_type", "sanitizer", "fix_commit"):
        if not isinstance(data.get(key), (str, int)) or data.get(key) == "":
            raise DatasetError(f"{meta}: key '{key}': missing or empty")
        fields[key] = data[key]
    if str(fields["localId"]) != local_id:
        raise DatasetError(f"{meta}: key 'localId': {fields['localId']}, not {local_id} as its name says")
    if not re.fullmatch(r"[A-Za-z0-9._+-]+", str(fields["project"])):
        raise DatasetError(f"{meta}: key 'project': not a project name: {fields['project']!r}")
    report = _first_comment(data)
    target = re.search(r"^Fuzz Target: (\S+)", report, re.M)
    if target is None:
        raise DatasetError(f"{meta}: key 'report.comments[0].content': no 'Fuzz Target:' line")
    try:
        text = patch.read_text(errors="surrogateescape")
    except FileNotFoundError:
        raise DatasetError(f"{patch}: missing (ARVO's fix for record {local_id})") from None
    start = text.find("diff --git ")
    if start < 0:
        raise DatasetError(f"{patch}: no 'diff --git' in it: not a fix")
    return ArvoRecord(
        int(fields["localId"]),
        str(fields["project"]),
        str(fields["crash_type"]),
        str(fields["sanitizer"]),
        target.group(1),
        str(fields["fix_commit"]),
        text[start:],
    )


def _first_comment(data: dict[str, Any]) -> str:
    comments = (data.get("report") or {}).get("comments") or []
    content = comments[0].get("content") if comments and isinstance(comments[0], dict) else None
    return content if isinstance(content, str) else ""


def task_toml(record: ArvoRecord) -> str:
    """The task file of *record*: ARVO has no functional or intent tests (docs/datasets.md)."""
    description = (
        f"{record.project}: a {record.crash_type} that OSS-Fuzz found with "
        f"{_sanitizer(record.sanitizer)} (ARVO record {record.local_id}). Fix it at its root."
    )
    return (
        f"# ARVO record {record.local_id} ({record.project}), imported by ssebench dataset import arvo.\n"
        f"# The upstream fix ({record.fix_commit}) is beside this folder: ../{record.task_id}.fix.patch\n"
        f'id = "{record.task_id}"\n'
        'source = "src"\n'
        f"description = {json.dumps(description)}\n\n"
        "[build]\n"
        "run = 'bash \"$SSE_TASK_DIR/build.sh\"'\n"
        "timeout = 3600\n\n"
        "[pocs]\n"
        f'run = \'"$SSE_TREE/sse-out/{record.fuzz_target}" "$SSE_POC"\'\n'
        f'files = ["pocs/{record.local_id}"]\n'
        "timeout = 300\n"
    )


def _sanitizer(name: str) -> str:
    return {"asan": "AddressSanitizer", "msan": "MemorySanitizer", "ubsan": "UndefinedBehaviorSanitizer"}.get(
        name, name
    )


def _export(src: Path, record: ArvoRecord) -> tuple[Path, Path, Path]:
    """The tree, PoC and build script exported from the record's image; named when missing."""
    folder = src / "arvo" / str(record.local_id)
    image = f"n132/arvo:{record.local_id}-vul"
    tree, poc, build = folder / "src", folder / "poc", folder / "build.sh"
    for path, what in ((tree, f"/src/{record.project}"), (poc, "/tmp/poc"), (build, "/src/build.sh")):
        if not os.path.lexists(path):
            raise DatasetError(f"{path}: missing: export it from the record's image ({image}: {what})")
    return tree, poc, build


def write_task(src: Path, dest: Path, record: ArvoRecord) -> Path:
    """One task folder (and its fix beside it), whole or not at all."""
    tree, poc, build = _export(src, record)
    target, fix = dest / record.task_id, dest / f"{record.task_id}.fix.patch"
    for path in (target, fix):
        if os.path.lexists(path):
            raise DatasetError(f"{path}: exists; import into a new folder or remove it first")
    staging = Path(tempfile.mkdtemp(prefix=f".{record.task_id}.", dir=dest))
    try:
        shutil.copytree(tree, staging / "task" / "src", symlinks=True)
        (staging / "task" / "pocs").mkdir()
        shutil.copyfile(poc, staging / "task" / "pocs" / str(record.local_id))
        shutil.copyfile(build, staging / "task" / "oss-fuzz-build.sh")
        (staging / "task" / "build.sh").write_text(BUILD_SH)
        (staging / "task" / "standalone.c").write_text(STANDALONE_C)
        (staging / "task" / "task.toml").write_text(task_toml(record))
        (staging / "fix.patch").write_text(record.fix, errors="surrogateescape")
        os.rename(staging / "task", target)
        os.link(staging / "fix.patch", fix)
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def run(src: Path, dest: Path, ids: list[str] | None) -> int:
    if not (src / "meta").is_dir():
        raise DatasetError(f"{src}: not an ARVO-Meta checkout (no meta/ folder)")
    exported = src / "arvo"
    wanted = ids or (sorted(p.name for p in exported.iterdir()) if exported.is_dir() else [])
    if not wanted:
        raise DatasetError(f"{src / 'arvo'}: no exported records (arvo/<localId>/: src/, poc, build.sh); or give --id")
    records = [read_record(src, str(i)) for i in wanted]  # every record read before anything is written
    for record in records:
        _export(src, record)
    dest.mkdir(parents=True, exist_ok=True)
    for record in records:
        target = write_task(src, dest, record)
        ui.echo(f"  {record.task_id}: {record.project}, {record.crash_type} -> {target}")
    ui.echo((f"Imported {len(records)} ARVO record{'s' if len(records) != 1 else ''} into {dest}", "ok"))
    return 0
