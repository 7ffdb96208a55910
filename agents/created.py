"""What ``ssebench agents install`` created, so ``list`` and ``uninstall`` can tell it apart.

Installing into a client that is not there creates its config file and folders
(``~/.gemini/settings.json``): afterwards the folder alone would make the client look
installed, and uninstalling would leave the folder behind. So every config file and folder
that an install creates is recorded in one state file, ``$XDG_STATE_HOME/ssebench/
agents-created.json`` (default ``~/.local/state/ssebench/agents-created.json``): a state
file rather than a marker inside the client's folder, which would put a file of ours where
the client reads; under XDG's state folder, as it is neither configuration (nothing a user
edits, and ``~/.config`` stays untouched when a client's config lives elsewhere) nor cache
(deleting it would make ssebench's folders count as the user's again).

- ``list`` does not count a recorded folder or file as "config present" while it holds
  only what ssebench wrote (recorded files, their ``.bak``, recorded folders).
- ``uninstall`` removes the entry; then a recorded file that became empty is gone (the
  editor deletes it), its ``.bak`` (a copy of our own entry) is removed, and recorded
  folders are removed when empty, deepest first. Whatever holds someone else's data stays,
  and is forgotten: from then on it is the user's.
The state file is written under a lock and atomically; it disappears when nothing is left.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ssebench.agents.base import Env


def state_path(env: Env) -> Path:
    value = env.vars.get("XDG_STATE_HOME")
    base = Path(value) if value and os.path.isabs(value) else env.home / ".local" / "state"
    return base / "ssebench" / "agents-created.json"


@dataclass
class Created:
    """The recorded paths (absolute strings)."""

    files: set[str] = field(default_factory=set)
    folders: set[str] = field(default_factory=set)
    # Folders made only to hold the state file (e.g. ~/.local/state): removed with it when empty.
    state_folders: set[str] = field(default_factory=set)

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


def _load(path: Path) -> Created:
    try:
        data = json.loads(path.read_text("utf-8"))
        return Created(*(set(map(str, data.get(key, []))) for key in ("files", "folders", "state_folders")))
    except (OSError, ValueError, AttributeError, TypeError):
        return Created()  # missing or damaged: nothing is known to be ours


def load(env: Env) -> Created:
    return _load(state_path(env))


def _save(path: Path, created: Created) -> None:
    if not created.files and not created.folders:
        path.unlink(missing_ok=True)
        for folder in sorted(map(Path, created.state_folders | {str(path.parent)}),
                             key=lambda p: len(p.parts), reverse=True):
            try:
                folder.rmdir()  # ours, when nothing else is in it
            except OSError:
                pass
        return
    created.state_folders.update(str(f) for f in missing_parents(path) if f != path.parent)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    text = json.dumps({"files": sorted(created.files), "folders": sorted(created.folders),
                       "state_folders": sorted(created.state_folders)}, indent=2) + "\n"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".created.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def editing(env: Env) -> Iterator[Created]:
    """Load the records under a lock, let the caller change them, save."""
    from ssebench.agents.files import lock_for

    path = state_path(env)
    with lock_for(path):
        created = _load(path)
        yield created
        _save(path, created)


def missing_parents(path: Path) -> list[Path]:
    """The folders above *path* that do not exist yet, outermost first."""
    out = []
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        out.append(parent)
        parent = parent.parent
    return list(reversed(out))


def record_install(env: Env, path: Path, existed: bool, new_folders: list[Path]) -> None:
    """After a real install into *path*: remember the file and folders that it created."""
    made_file = not existed and path.exists()
    made = [f for f in new_folders if f.is_dir()]
    if not made_file and not made:
        return
    with editing(env) as created:
        if made_file:
            created.files.add(str(path))
        created.folders.update(str(f) for f in made)


def clean_after_uninstall(env: Env, path: Path) -> list[Path]:
    """After a real uninstall from *path*: remove what we created and nothing else.

    Returns what was removed (for the message)."""
    if not state_path(env).exists():
        return []
    removed: list[Path] = []
    with editing(env) as created:
        key = str(path)
        if key in created.files:
            bak = path.with_name(path.name + ".bak")
            if not path.exists() and bak.is_file():
                bak.unlink()
                removed.append(bak)
            created.files.discard(key)  # gone, or now holding someone else's data
        for folder in sorted((Path(f) for f in created.folders if path.is_relative_to(f)),
                             key=lambda p: len(p.parts), reverse=True):
            try:
                folder.rmdir()
                removed.append(folder)
            except FileNotFoundError:
                pass
            except OSError:
                pass  # not empty: someone else's now
            created.folders.discard(str(folder))
    return removed
