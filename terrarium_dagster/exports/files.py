"""Writing export files so that a failed export leaves the previous one intact.

An export folder keeps a manifest (`.export-manifest.json`): for each file, a hash of what
determines its content and its size. A later export that would write a file with the same hash
links the earlier folder's file instead of rendering and writing it again.

An export that changes nothing touches nothing: a file that already holds what would be written
is left as it is (its inode, mtime and ctime), and a staged folder whose files would all be the
target's own is thrown away instead of swapped in, before any link into it is made, so a reader
of the folder (`terrarium serve`), rsync or a backup sees no change when there was none.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from terrarium_dagster.errors import InputError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def follow_umask(path: Path, *, directory: bool) -> None:
    """Give a file or folder made by `tempfile` (0600/0700) the mode the umask asks for."""
    os.chmod(path, (0o777 if directory else 0o666) & ~_umask())


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8, newlines as they are) to a temporary file beside ``path``, then
    rename it over ``path``."""
    write_bytes_atomic(path, text.encode("utf-8"))


#: The file in an exports folder that names the store whose exports it holds.
EXPORTS_OWNER = ".terrarium-store"


def exports_beside(db: str) -> Path:
    """The exports folder a store's exports go to unless told otherwise: `exports/` beside it."""
    return Path(db).expanduser().resolve().parent / "exports"


def claim_exports(root: Path, db: str, *, record: bool = True) -> None:
    """An exports folder holds one store's exports (its thread folders, its site): the first
    store to write there is recorded in it (`EXPORTS_OWNER`), and another store is refused in
    one line, nothing written, while that one still exists (two stores in one folder wrote
    over each other's thread folders, and `serve` listed one's exports as the other's). A
    store that moved, or whose recorded store is gone, takes the folder over. `record=False`
    only checks (a command that may yet refuse for another reason writes nothing). A folder
    that is a file, or lies under one, is refused in one line too."""
    blocking = next((path for path in (root, *root.parents) if path.exists()), None)
    if blocking is not None and not blocking.is_dir():
        where = "is a file" if blocking == root else f"is under a file, {blocking}"
        raise InputError(f"the exports folder {root} {where}: give the exports a folder")
    store = str(Path(db).expanduser().resolve())
    marker = root / EXPORTS_OWNER
    try:
        recorded = marker.read_text(encoding="utf-8").strip()
    except (FileNotFoundError, NotADirectoryError):
        recorded = ""
    except OSError:
        return  # unreadable: the write itself says what is wrong
    if recorded == store:
        return
    if recorded and Path(recorded).is_file():
        # a store not written yet is most often a misspelt name of the one recorded
        missing = "" if Path(store).exists() else f"; there is no store at {db} yet: misspelt?"
        raise InputError(
            f"{root} holds the exports of another store, {recorded}: keep each store in a folder "
            f"of its own (or give this one another exports folder){missing}"
        )
    if not record:
        return
    try:
        root.mkdir(parents=True, exist_ok=True)
        write_text_atomic(marker, store + "\n")
    except OSError:
        return  # the write itself says what is wrong


def refuse_foreign_folder(target: Path, ours: Callable[[Path], bool], what: str) -> None:
    """An export that replaces its folder whole (`staged_directory`) refuses, in one line and
    before anything is written, a folder holding anything it did not write (the store, the
    corpus, notes: `--out .` or the project's folder), and the current folder or one above it."""
    if not target.exists():
        return
    if not target.is_dir():
        raise InputError(f"--out {target} is a file: {what} is a folder; give a folder's name")
    here = Path.cwd().resolve()
    if target.resolve() in (here, *here.parents):
        raise InputError(
            f"--out {target} is the current folder or holds it: {what} replaces its folder "
            "whole; give a new folder's name"
        )
    # what the user knows first: a hidden file (another export's manifest) named last
    foreign = sorted(
        (path.name for path in target.iterdir() if not ours(path)),
        key=lambda name: (name.startswith("."), name),
    )
    if foreign:
        shown = ", ".join(foreign[:3]) + (" ..." if len(foreign) > 3 else "")
        raise InputError(
            f"{target} holds files that are not {what} ({shown}) and {what} replaces its "
            "folder whole; nothing was written; give --out a new folder, or the one it was "
            "written to"
        )


class _Staging(threading.local):
    """The folders being staged in this thread (innermost last) and the links into them that
    wait for their folder's swap (destination -> source, absolute paths)."""

    def __init__(self) -> None:
        self.folders: list[str] = []
        self.links: dict[str, str] = {}


_STAGING = _Staging()


def _waiting_in(folder: str) -> dict[str, str]:
    """The links waiting under ``folder``."""
    prefix = folder + os.sep
    return {dest: src for dest, src in _STAGING.links.items() if dest.startswith(prefix)}


def _may_wait(target: str) -> bool:
    """Whether a link made at ``target`` may wait: it is in a folder being staged."""
    return any(target.startswith(folder + os.sep) for folder in _STAGING.folders)


@contextmanager
def staged_directory(target: Path) -> Iterator[Path]:
    """A fresh directory beside ``target`` to build into; on success it replaces ``target``.

    If the body raises, the staging directory is removed and ``target`` is left as it was. The
    swap is two renames (old aside, new in place), then the old copy is removed. A link into the
    staging directory (`write_or_link`, a `FolderWriter` reusing a file) waits for the swap:
    when the body staged nothing but ``target``'s own files (each to be a link of the file at the
    same path in ``target``, and no file or folder more or less), there is nothing to swap and no
    link is made: ``target`` is left as it is (not renamed, no file's link count, so not its
    ctime, changed) and the staging directory removed; so is ``target``'s parent, whose
    modification time the staging directory's coming and going changed: it is set back (a
    `make` or an rsync keyed on folders' times sees nothing new).
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    before = _folder_state(target.parent)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.new-", dir=target.parent))
    follow_umask(staging, directory=True)
    where = os.path.abspath(staging)
    _STAGING.folders.append(where)
    try:
        yield staging
    except BaseException:
        _STAGING.folders.remove(where)
        _forget_links(where)
        shutil.rmtree(staging, ignore_errors=True)
        _set_back(target.parent, before)
        raise
    _STAGING.folders.remove(where)
    waiting = _waiting_in(where)
    if _same_files(staging, target, waiting):
        _forget_links(where)
        shutil.rmtree(staging, ignore_errors=True)
        _set_back(target.parent, before)
        return
    nested = _may_wait(os.path.abspath(target))  # the target is itself being staged
    if not nested:
        try:
            _make_links(waiting)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        finally:
            _forget_links(where)
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
        _forget_links(where)
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if nested:  # they wait on, now under the target, for the outer folder's swap
        moved = os.path.abspath(target)
        for dest in waiting:
            _STAGING.links[moved + dest[len(where) :]] = _STAGING.links.pop(dest)
    if retired is not None:
        shutil.rmtree(retired, ignore_errors=True)


_FolderState = tuple[int, int, frozenset[str]] | None
"""A folder's access and modification times (ns) and its entries' names; None: unreadable."""


def _folder_state(folder: Path) -> _FolderState:
    try:
        info = os.stat(folder)
        return info.st_atime_ns, info.st_mtime_ns, frozenset(os.listdir(folder))
    except OSError:
        return None


def _set_back(folder: Path, before: _FolderState) -> None:
    """Give ``folder`` back the times it had ``before`` when it holds the same entries again
    (a staging folder made and removed in it, nothing else): its mtime says nothing changed.
    Another process's change in the meantime (an entry more or less) keeps the new time."""
    if before is None:
        return
    after = _folder_state(folder)
    if after is None or after[2] != before[2] or after[1] == before[1]:
        return
    with suppress(OSError):  # not ours to set (another user's folder): its time stays new
        os.utime(folder, ns=(before[0], before[1]))


def _forget_links(folder: str) -> None:
    for dest in _waiting_in(folder):
        del _STAGING.links[dest]


def _make_links(links: dict[str, str]) -> None:
    """Make the links that waited (a copy where a link fails)."""
    for dest, source in links.items():
        try:
            os.link(source, dest)
        except OSError:
            shutil.copyfile(source, dest)
            follow_umask(Path(dest), directory=False)


_Kind = tuple[int, int] | str
"""What a path in a folder is, for `_same_files`: a regular file's (device, inode), "folder",
or a string no other path's kind equals (anything else: never the same)."""


def _kinds(root: Path) -> dict[str, _Kind]:
    """Every path under ``root`` (relative) and what it is; symbolic links are not followed."""
    kinds: dict[str, _Kind] = {}
    for folder, folders, names in os.walk(root):
        for name in (*folders, *names):
            path = os.path.join(folder, name)
            info = os.lstat(path)
            relative = os.path.relpath(path, root)
            if stat.S_ISREG(info.st_mode):
                kinds[relative] = (info.st_dev, info.st_ino)
            elif stat.S_ISDIR(info.st_mode):
                kinds[relative] = "folder"
            else:
                kinds[relative] = f"other:{relative}:{root}"
    return kinds


def _same_files(staging: Path, target: Path, waiting: dict[str, str]) -> bool:
    """Whether ``target`` already holds exactly what ``staging`` does, with the links
    ``waiting`` to be made in it: the same folders, and at each path the same file (one inode,
    linked into both)."""
    try:
        if target.is_symlink() or not target.is_dir():
            return False
        staged = _kinds(staging)
        root = os.path.abspath(staging)
        for dest, source in waiting.items():
            info = os.stat(source)
            staged[os.path.relpath(dest, root)] = (info.st_dev, info.st_ino)
        return staged == _kinds(target)
    except OSError:
        return False


MANIFEST_FILE = ".export-manifest.json"
MANIFEST_FORMAT = 1


@dataclass(frozen=True, slots=True)
class PlannedFile:
    """A file an export will hold: the hash of what determines its text, and the text."""

    key: str
    text: Callable[[], str]


Manifest = dict[str, tuple[str, int]]
"""An export folder's files: relative path -> (content key, size in bytes)."""


def read_manifest(folder: Path) -> Manifest | None:
    """The manifest an export left in ``folder``; None when there is none (or it is unreadable)."""
    try:
        data = json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8"))
        if data.get("format") != MANIFEST_FORMAT:
            return None
        return {path: (str(key), int(size)) for path, (key, size) in data["files"].items()}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def manifest_text(manifest: Manifest) -> str:
    """The manifest as JSON, one file a line, in path order."""
    lines = [
        f"{json.dumps(path, ensure_ascii=False)}: [{json.dumps(key)}, {int(size)}]"
        for path, (key, size) in sorted(manifest.items())
    ]
    return f'{{"format": {MANIFEST_FORMAT}, "files": {{\n' + ",\n".join(lines) + "\n}}\n"


@dataclass(frozen=True, slots=True)
class Base:
    """An earlier export whose files a new one may link: its folder, its manifest, and whether
    the folder is one this process just wrote (its files are then not checked against the
    manifest's sizes)."""

    folder: Path
    manifest: Manifest
    trusted: bool = False


@dataclass(slots=True)
class FolderWriter:
    """Writes planned files into a folder, linking (or copying) a file from a base instead of
    writing it when the base's manifest has it with the same key and size. The bases are asked
    in order: the folder the export replaces comes first, so that a file it already holds stays
    the same file (its inode and mtime) rather than becoming a link to another folder's copy or
    a new file with the same bytes.

    Links are safe: export files are never changed in place (every write is a new file renamed
    into place), so a file shared by two export folders never changes under either.
    """

    folder: Path
    bases: Sequence[Base] = ()
    manifest: Manifest = field(default_factory=dict)
    written: int = 0
    reused: int = 0
    _in_place: tuple[bool, ...] = ()

    def __post_init__(self) -> None:
        here = self.folder.resolve()
        self._in_place = tuple(base.folder.resolve() == here for base in self.bases)

    def put(self, path: str, planned: PlannedFile, *, atomic: bool = False) -> None:
        for base, in_place in zip(self.bases, self._in_place, strict=True):
            known = base.manifest.get(path)
            if known is None or known[0] != planned.key:
                continue
            # Plain strings, not Path objects: a wiki has thousands of files.
            source = os.path.join(base.folder, path)
            try:
                if not (base.trusted or os.stat(source).st_size == known[1]):
                    continue
                if not in_place:
                    _link(source, os.path.join(self.folder, path), atomic=atomic)
            except OSError:
                continue
            self.manifest[path] = known
            self.reused += 1
            return
        target = self.folder / path
        data = planned.text().encode("utf-8")
        if atomic:
            write_bytes_atomic(target, data)
        else:
            _STAGING.links.pop(os.path.abspath(target), None)
            target.write_bytes(data)
        self.manifest[path] = (planned.key, len(data))
        self.written += 1


def _link(source: str, target: str, *, atomic: bool) -> None:
    """``target`` becomes the same file as ``source`` (a hard link; a copy where links fail)."""
    if _may_wait(os.path.abspath(target)):
        _STAGING.links[os.path.abspath(target)] = os.path.abspath(source)
        return
    if atomic:
        head, name = os.path.split(target)
        temporary = os.path.join(head, f".{name}.link")
        Path(temporary).unlink(missing_ok=True)
    else:
        temporary = target
    try:
        os.link(source, temporary)
    except OSError:
        shutil.copyfile(source, temporary)
        follow_umask(Path(temporary), directory=False)
    if atomic:
        os.replace(temporary, target)


def _holds(path: Path | str, data: bytes) -> bool:
    """Whether ``path`` is a regular file holding exactly ``data`` (False if it cannot be read)."""
    path = _STAGING.links.get(os.path.abspath(path), path)  # a link waiting: its source
    try:
        info = os.lstat(path)  # never opened unless a regular file (a FIFO would block)
        if not stat.S_ISREG(info.st_mode) or info.st_size != len(data):
            return False
        with open(path, "rb") as stream:
            return stream.read(len(data) + 1) == data
    except OSError:
        return False


def write_or_link(path: Path, data: bytes, earlier: Path | None) -> None:
    """Put ``data`` at ``path`` (a new file, in a folder being staged): a hard link to
    ``earlier`` when that file already holds exactly ``data`` (it stays the same file: inode and
    mtime), else written."""
    if earlier is not None and _holds(earlier, data):
        try:
            _link(str(earlier), str(path), atomic=True)
            return
        except OSError:
            pass
    write_bytes_atomic(path, data)


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path``; a file
    that already holds exactly ``data`` is left as it is (the same file: inode and mtime)."""
    if _holds(path, data):
        return
    _STAGING.links.pop(os.path.abspath(path), None)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        follow_umask(Path(temporary), directory=False)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
