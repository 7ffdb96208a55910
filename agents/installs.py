"""What ``ssebench agents install`` did, in one record, so ``list`` and ``uninstall`` can tell
ssebench's doing from the user's.

Installing into a client that is not there creates its config file and folders
(``~/.gemini/settings.json``): afterwards the folder alone would make the client look
installed, and uninstalling would leave the folder behind. And an install may add more than its
entry (an empty ``"mcpServers": {}`` container, a whole file): uninstall must take back exactly
that, so a ``{}`` the user had stays byte for byte. One state file records both,
``$XDG_STATE_HOME/ssebench/agents-created.json`` (default ``~/.local/state/...``): a state
file rather than a marker inside the client's folder, which would put a file of ours where
the client reads; under XDG's state folder, as it is neither configuration nor cache (deleting
it would make ssebench's folders count as the user's again). Losing it is safe: uninstall then
takes the entry only, and what ssebench created counts as the user's.

- ``files``/``folders``: config files and folders an install created. :meth:`InstallRecord.ours_only`
  is the one rule for "ssebench's, not the user's"; :func:`detected` (``list``, ``--all``)
  does not count a config present only because of it.
- ``entries``: per config file and entry, a :class:`Provenance` (what else install added).
- ``uninstall`` removes the entry (:func:`removed_text`), then a recorded file that became
  empty is gone (the editor deletes it), its ``.bak`` (a copy of our own entry) is removed, and
  recorded folders are removed when empty, deepest first. Whatever holds someone else's data
  stays, and is forgotten: from then on it is the user's.
The state file is written under a lock and atomically; it disappears when nothing is left.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ssebench.agents import files
from ssebench.agents.base import Client, Env, Scope
from ssebench.agents.formats import Editor


@dataclass(frozen=True)
class Provenance:
    """What an install added besides the entry, so uninstall removes that and nothing else:
    an empty ``"mcpServers": {}`` or a ``{}`` file that was there before stays, byte for byte."""

    containers_created: int  # the innermost containers of the entry's path that install made
    file_created: bool  # there was no file
    blank: str | None = None  # the text of a blank file (whitespace only) install filled
    # sha256 of the text install wrote and of the text before it (which NAME.bak then holds):
    # while the file is still exactly what install wrote, uninstall gives back the .bak's text,
    # byte for byte whatever the format (a YAML `extensions: {}` turned into a block, say).
    after_sha: str | None = None
    before_sha: str | None = None


@dataclass
class InstallRecord:
    """The recorded paths (absolute strings) and entries (key: :func:`_entry_key`)."""

    files: set[str] = field(default_factory=set)
    folders: set[str] = field(default_factory=set)
    # Folders made only to hold the state file (e.g. ~/.local/state): removed with it when empty.
    state_folders: set[str] = field(default_factory=set)
    entries: dict[str, dict] = field(default_factory=dict)

    def ours_only(self, path: Path) -> bool:
        """True when *path* is something we created and holds nothing else."""
        text = str(path)
        if text in self.files:
            return True
        if text.endswith(".bak") and text[:-4] in self.files:
            return True
        if text not in self.folders or not path.is_dir():
            return False
        try:
            return all(self.ours_only(child) for child in path.iterdir())
        except OSError:
            return False

    def provenance(self, path: Path, entry_path: Sequence[str]) -> Provenance | None:
        """What the install of this entry added; a file ssebench created counts as all of it.
        None: nothing is known, so uninstall takes the entry only."""
        data = self.entries.get(_entry_key(path, entry_path))
        if data is not None:
            try:
                return Provenance(
                    int(data["containers_created"]),
                    bool(data["file_created"]),
                    data.get("blank"),
                    data.get("after_sha"),
                    data.get("before_sha"),
                )
            except (KeyError, TypeError, ValueError):
                pass  # damaged: as if none
        if str(path) in self.files:
            return Provenance(len(entry_path) - 1, True)
        return None


def state_path(env: Env) -> Path:
    value = env.vars.get("XDG_STATE_HOME")
    base = Path(value) if value and os.path.isabs(value) else env.home / ".local" / "state"
    return base / "ssebench" / "agents-created.json"


def _entry_key(path: Path, entry_path: Sequence[str]) -> str:
    return json.dumps([str(files.real_path(path)), *entry_path], ensure_ascii=False)


def _load(path: Path) -> InstallRecord:
    try:
        data = json.loads(path.read_text("utf-8"))
        keys = ("files", "folders", "state_folders")
        files, folders, state_folders = (set(map(str, data.get(key, []))) for key in keys)
        entries = data.get("entries", {})
        return InstallRecord(files, folders, state_folders, entries=dict(entries) if isinstance(entries, dict) else {})
    except (OSError, ValueError, AttributeError, TypeError):
        return InstallRecord()  # missing or damaged: nothing is known to be ours


def load(env: Env) -> InstallRecord:
    return _load(state_path(env))


def _save(path: Path, record: InstallRecord) -> None:
    if not record.files and not record.folders and not record.entries:
        path.unlink(missing_ok=True)
        for folder in sorted(
            map(Path, record.state_folders | {str(path.parent)}), key=lambda p: len(p.parts), reverse=True
        ):
            with contextlib.suppress(OSError):
                folder.rmdir()  # ours, when nothing else is in it
        return
    record.state_folders.update(str(f) for f in missing_parents(path) if f != path.parent)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    data = {
        "files": sorted(record.files),
        "folders": sorted(record.folders),
        "state_folders": sorted(record.state_folders),
        "entries": record.entries,
    }
    files.atomic_write(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode(), 0o600)


@contextmanager
def editing(env: Env) -> Iterator[InstallRecord]:
    """Load the record under a lock, let the caller change it, save."""
    path = state_path(env)
    with files.lock_for(path, files.cache_folder(env.vars, env.home)):
        record = _load(path)
        yield record
        _save(path, record)


def missing_parents(path: Path) -> list[Path]:
    """The folders above *path* that do not exist yet, outermost first."""
    out = []
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        out.append(parent)
        parent = parent.parent
    return list(reversed(out))


# -- install and uninstall ------------------------------------------------------------------


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def provenance(editor: Editor, before: str | None, entry_path: Sequence[str]) -> Provenance:
    """What setting the entry into ``before`` (None: no file) adds besides the entry."""
    if before is None:
        return Provenance(len(entry_path) - 1, True)
    if before.strip() == "":
        return Provenance(len(entry_path) - 1, False, before if len(before) <= 4096 else "")
    containers = entry_path[:-1]
    return Provenance(len(containers) - editor.present(before, containers), False)


def after_install(
    env: Env, change: files.Change, editor: Editor, entry_path: Sequence[str], new_folders: list[Path]
) -> None:
    """After a real install: record the file and folders it created and what it added. An
    entry that was there already keeps the record of the install that added it. Best effort:
    without a record, uninstall is cautious."""
    path = change.path
    made_file = change.before is None and path.exists()
    made = [f for f in new_folders if f.is_dir()]
    added = change.changed and not (
        change.before is not None and change.before.strip() and editor.get(change.before, entry_path) is not None
    )
    if not made_file and not made and not added:
        return
    with contextlib.suppress(OSError), editing(env) as record:
        if made_file:
            record.files.add(str(path))
        record.folders.update(str(f) for f in made)
        if added:
            found = provenance(editor, change.before, entry_path)
            if change.before is not None and change.after is not None:
                found = Provenance(
                    found.containers_created, found.file_created, found.blank, _sha(change.after), _sha(change.before)
                )
            record.entries[_entry_key(path, entry_path)] = asdict(found)


def removed_text(
    editor: Editor, text: str, entry_path: Sequence[str], record: Provenance | None, target: Path | None = None
) -> str | None:
    """``text`` without the entry and without what the install recorded in ``record`` added
    (None: delete the file). Without a record only the entry goes: an empty container or an
    empty ``{}`` may have been the user's."""
    if record is not None and record.after_sha == _sha(text) and target is not None:
        real = files.real_path(target)
        try:
            previous = files.read_text(real.with_name(real.name + ".bak"))
        except files.ConfigError:
            previous = None
        if previous is not None and _sha(previous) == record.before_sha:
            return previous  # untouched since install: exactly what was there before
    prune = record.containers_created if record else 0
    result = editor.remove(text, entry_path, prune=prune)
    if result is not None:
        return result
    if record is not None and record.file_created:
        return None
    if record is not None and record.blank is not None:
        return record.blank
    return editor.remove(text, entry_path, prune=prune, keep_empty=True)


def after_uninstall(env: Env, path: Path, entry_path: Sequence[str], changed: bool) -> list[Path]:
    """After a real uninstall from *path*: forget the entry, remove what we created and nothing
    else. Returns what was removed (for the message)."""
    if not state_path(env).exists():
        return []
    removed: list[Path] = []
    with editing(env) as record:
        if changed:
            record.entries.pop(_entry_key(path, entry_path), None)
        key = str(path)
        if key in record.files:
            bak = path.with_name(path.name + ".bak")
            if not path.exists() and bak.is_file():
                bak.unlink()
                removed.append(bak)
            record.files.discard(key)  # gone, or now holding someone else's data
        for folder in sorted(
            (Path(f) for f in record.folders if path.is_relative_to(f)), key=lambda p: len(p.parts), reverse=True
        ):
            try:
                folder.rmdir()
                removed.append(folder)
            except OSError:
                pass  # gone already, or not empty: someone else's now
            record.folders.discard(str(folder))
    return removed


# -- is the client here ---------------------------------------------------------------------


def installed(client: Client, env: Env) -> bool | None:
    """The client's program is on PATH; None for a client without one (a desktop app)."""
    if not client.binaries:
        return None
    return any(shutil.which(b, path=env.vars.get("PATH")) for b in client.binaries)


def config_present(client: Client, env: Env, record: InstallRecord) -> bool:
    """The client's user config file, or the folder it lives in, exists and is not only
    what ssebench created (a home folder itself never counts)."""
    path = client.config_path(Scope.USER, env)
    if path is None:
        return False
    if path.exists():
        return not record.ours_only(path)
    folder = path.parent
    return folder.is_dir() and folder != env.home and not record.ours_only(folder)


def detected(client: Client, env: Env, record: InstallRecord) -> bool:
    """The one rule for "this client is here": its program on PATH, or its config present."""
    return bool(installed(client, env)) or config_present(client, env, record)
