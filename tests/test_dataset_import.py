"""``ssebench dataset import arvo``: real ARVO records (tests/fixtures/arvo) into task folders.

The records' own files (meta JSON, the fix diff) are real. What ARVO keeps in each
record's Docker image (the vulnerable tree, the PoC, OSS-Fuzz's build script) cannot be
fetched here; the export folder is a small stand-in with the same layout, and the
imported task is checked by ``task check``. docs/datasets.md says what maps where.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.helpers.daemon import run_ssebench

RECORDS = Path(__file__).resolve().parent / "fixtures" / "arvo"
IDS = ("51390", "51988", "52258")


def arvo_src(root: Path, ids: tuple[str, ...] = IDS) -> Path:
    src = root / "ARVO-Meta"
    shutil.copytree(RECORDS, src)
    for local_id in ids:
        export = src / "arvo" / local_id
        (export / "src").mkdir(parents=True)
        (export / "src" / "README").write_text("hunspell's tree, from the record's image\n")
        (export / "poc").write_bytes(b"SFX A Y 1\n")
        (export / "build.sh").write_text("echo OSS-Fuzz's build script\n")
    return src


def test_import_writes_one_task_per_record_and_its_fix_beside_it(tmp_path: Path) -> None:
    src, dest = arvo_src(tmp_path), tmp_path / "dataset"
    done = run_ssebench("dataset", "import", "arvo", str(src), str(dest))
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout == (
        f"  arvo-51390: hunspell, Heap-buffer-overflow READ 7 -> {dest / 'arvo-51390'}\n"
        f"  arvo-51988: hunspell, Heap-buffer-overflow READ 1 -> {dest / 'arvo-51988'}\n"
        f"  arvo-52258: hunspell, Heap-buffer-overflow READ 1 -> {dest / 'arvo-52258'}\n"
        f"Imported 3 ARVO records into {dest}\n"
    )
    assert sorted(p.name for p in dest.iterdir()) == [
        "arvo-51390",
        "arvo-51390.fix.patch",
        "arvo-51988",
        "arvo-51988.fix.patch",
        "arvo-52258",
        "arvo-52258.fix.patch",
    ]
    toml = (dest / "arvo-52258" / "task.toml").read_text()
    assert toml == (
        "# ARVO record 52258 (hunspell), imported by ssebench dataset import arvo.\n"
        "# The upstream fix (cca31da62a61ef0fdfff47deb947c655bdb7d187) is beside this folder: "
        "../arvo-52258.fix.patch\n"
        'id = "arvo-52258"\n'
        'source = "src"\n'
        'description = "hunspell: a Heap-buffer-overflow READ 1 that OSS-Fuzz found with AddressSanitizer '
        '(ARVO record 52258). Fix it at its root."\n\n'
        "[build]\n"
        "run = 'bash \"$SSE_TASK_DIR/build.sh\"'\n"
        "timeout = 3600\n\n"
        "[pocs]\n"
        'run = \'"$SSE_TREE/sse-out/affdicfuzzer" "$SSE_POC"\'\n'
        'files = ["pocs/52258"]\n'
        "timeout = 300\n"
    )
    fix = (dest / "arvo-52258.fix.patch").read_text()
    assert fix.startswith("diff --git a/src/hunspell/suggestmgr.cxx b/src/hunspell/suggestmgr.cxx\n")
    record = (RECORDS / "patches" / "52258.diff").read_text()
    assert fix == record[record.index("diff --git") :]  # the commit's diff, its header left out
    check = run_ssebench("task", "check", str(dest / "arvo-52258" / "task.toml"))
    assert check.returncode == 0, check.stderr
    assert (dest / "arvo-52258" / "oss-fuzz-build.sh").read_text() == "echo OSS-Fuzz's build script\n"
    assert (dest / "arvo-52258" / "pocs" / "52258").read_bytes() == b"SFX A Y 1\n"


def test_what_is_missing_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    src, dest = arvo_src(tmp_path), tmp_path / "dataset"
    (src / "arvo" / "51988" / "poc").unlink()
    done = run_ssebench("dataset", "import", "arvo", str(src), str(dest))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"ssebench dataset: {src / 'arvo' / '51988' / 'poc'}: missing: export it from the record's image "
        "(n132/arvo:51988-vul: /tmp/poc)\n"
    )
    assert not dest.exists()
    done = run_ssebench("dataset", "import", "arvo", str(src), str(dest), "--id", "1")
    assert done.stderr == f"ssebench dataset: {src / 'meta' / '1.json'}: no such ARVO record\n"
    (src / "meta" / "51390.json").write_text('{"localId": 51390, "project": "hunspell"}')
    done = run_ssebench("dataset", "import", "arvo", str(src), str(dest), "--id", "51390")
    assert done.stderr == f"ssebench dataset: {src / 'meta' / '51390.json'}: key 'crash_type': missing or empty\n"
    done = run_ssebench("dataset", "import", "arvo", str(tmp_path), str(dest))
    assert done.stderr == f"ssebench dataset: {tmp_path}: not an ARVO-Meta checkout (no meta/ folder)\n"
