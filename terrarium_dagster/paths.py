"""Where terrarium keeps its files when the user does not say.

`TERRARIUM_HOME` wins. Otherwise, when running from a source checkout (a `pyproject.toml` beside
the package), the checkout's `data/` folder; otherwise `~/.local/share/terrarium-dagster`.
"""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def project_root() -> Path | None:
    """The source checkout the package runs from, if any."""
    root = _PACKAGE_DIR.parent
    return root if (root / "pyproject.toml").is_file() else None


def data_dir() -> Path:
    """The folder for the default annotator store and exports (created on demand by callers)."""
    home = os.environ.get("TERRARIUM_HOME")
    if home:
        return Path(home).expanduser()
    root = project_root()
    if root is not None:
        return root / "data"
    return Path.home() / ".local" / "share" / "terrarium-dagster"


def default_store_path() -> Path:
    return data_dir() / "terrarium.db"


def default_export_dir() -> Path:
    return data_dir() / "exports"


def unwritable_reason(path: Path, *, folder: bool) -> str | None:
    """Why `path` (a folder to write into when `folder`, else a file to create) cannot be
    written, or None when it can be as far as can be told before writing: an existing part of
    it is a file, or the nearest existing folder above it refuses writes."""
    path = Path(path).expanduser()
    if path.exists():
        if folder and not path.is_dir():
            return f"{path} is a file, not a folder"
        if not folder and path.is_dir():
            return f"{path} is a folder, not a file"
        target = path if folder else path.parent
        if not os.access(target, os.W_OK | os.X_OK):
            return f"{target} is not writable"
        return None
    parent = path.parent
    while not parent.exists():
        if parent == parent.parent:
            break
        parent = parent.parent
    if not parent.is_dir():
        return f"{parent} is a file, not a folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{parent} is not writable"
    return None
