"""Writing export files so that a failed export leaves the previous one intact."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def follow_umask(path: Path, *, directory: bool) -> None:
    """Give a file or folder made by `tempfile` (0600/0700) the mode the umask asks for."""
    os.chmod(path, (0o777 if directory else 0o666) & ~_umask())


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, then rename it over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
            stream.write(text)
        follow_umask(Path(temporary), directory=False)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@contextmanager
def staged_directory(target: Path) -> Iterator[Path]:
    """A fresh directory beside ``target`` to build into; on success it replaces ``target``.

    If the body raises, the staging directory is removed and ``target`` is left as it was. The
    swap is two renames (old aside, new in place), then the old copy is removed.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.new-", dir=target.parent))
    follow_umask(staging, directory=True)
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    retired: Path | None = None
    if target.exists():
        retired = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
        retired.rmdir()
        os.replace(target, retired)
    try:
        os.replace(staging, target)
    except BaseException:
        if retired is not None:
            os.replace(retired, target)
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if retired is not None:
        shutil.rmtree(retired, ignore_errors=True)
