"""The store's disk must be local: SQLite's WAL (a shared-memory index beside the file, POSIX
locks) does not work over a network filesystem, where two hosts or a flaky lock can damage the
store. A writer's open of a store on NFS, SMB/CIFS or FUSE (sshfs, s3fs, rclone, ...) is
refused with one line, unless the user says knowingly that it is safe (`network_store`).

Where a path lives is read from Linux's `/proc/self/mountinfo` (the mount whose mount point is
the longest prefix of the store's folder); elsewhere nothing is refused.
"""

from __future__ import annotations

import re
from pathlib import Path

MOUNTINFO = Path("/proc/self/mountinfo")

NETWORK_FILESYSTEMS = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "ncpfs",
        "afs",
        "ceph",
        "glusterfs",
        "lustre",
        "gpfs",
        "9p",
        "davfs",
    }
)
# FUSE filesystems that are a local disk (NTFS through ntfs-3g; rootless containers' overlay).
LOCAL_FUSE = frozenset({"fuseblk", "fuse.fuse-overlayfs"})

_OCTAL = re.compile(r"\\([0-7]{3})")


def _unescape(field: str) -> str:
    return _OCTAL.sub(lambda match: chr(int(match.group(1), 8)), field)


def mount_of(path: Path, mountinfo: str) -> tuple[str, str] | None:
    """(mount point, filesystem type) of the mount holding `path` (absolute, resolved)."""
    best: tuple[str, str] | None = None
    for line in mountinfo.splitlines():
        fields = line.split(" ")
        if "-" not in fields or len(fields) < 5:
            continue
        point = _unescape(fields[4])
        fstype = fields[fields.index("-") + 1]
        inside = path == Path(point) or Path(point) in path.parents
        if inside and (best is None or len(point) >= len(best[0])):
            best = (point, fstype)  # later lines of the same point are mounted over earlier ones
    return best


def network_reason(fstype: str) -> str | None:
    """Why a filesystem type cannot hold the store, or None when it can."""
    if fstype in NETWORK_FILESYSTEMS or fstype.startswith("nfs"):
        return f"a network filesystem ({fstype})"
    if fstype.startswith("fuse") and fstype not in LOCAL_FUSE:
        return f"a FUSE filesystem ({fstype}), which may be remote"
    return None


def _resolved(path: Path) -> Path:
    """The path with the symbolic links of its existing part resolved (a store not created yet
    lives where its nearest existing folder leads)."""
    path = path.expanduser().absolute()
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate.resolve() / path.relative_to(candidate)
    return path


def refusal(path: str | Path, mountinfo_file: Path = MOUNTINFO) -> str | None:
    """One line refusing a store at `path` on a non-local filesystem, or None."""
    try:
        mountinfo = mountinfo_file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None  # not Linux: nothing to tell
    found = mount_of(_resolved(Path(path)), mountinfo)
    reason = network_reason(found[1]) if found else None
    if found is None or reason is None:
        return None
    return (
        f"annotator store {path} is on {reason} mounted at {found[0]}: SQLite's WAL needs one "
        "host's local disk (locks and a shared-memory index); put the store on a local disk, "
        "or set network_store (TERRARIUM_NETWORK_STORE=1) if you know this one is safe"
    )
