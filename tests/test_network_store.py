"""A store on a network filesystem is refused at open with one line, unless overridden knowingly.

The real thing where this machine allows it: a FUSE mount made with `bindfs` (Debian's package,
installed by .ci/run; skipped with the reason outside CI when it is missing, failing under
CI=true; skipped where FUSE cannot mount). `terrarium run --db` on it exits 2 with one line naming
the filesystem and the override, and leaves nothing on the mount; `--network-store` opens it. NFS
and SMB cannot be mounted here: their lines of `/proc/self/mountinfo` (as the kernel writes them)
are classified by the same function the store's open calls.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from terrarium_dagster.store.filesystem import mount_of, network_reason, refusal
from tests.support.cli import run_args, terrarium

MOUNTINFO = """\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw
60 27 0:50 / /srv/stories rw,relatime - nfs4 files:/export/stories rw,vers=4.2
61 60 8:2 / /srv/stories/local rw,relatime - ext4 /dev/sdb1 rw
62 27 0:51 / /mnt/share\\040drive rw,relatime - cifs //nas/share rw
63 27 0:52 / /home/me/remote rw - fuse.sshfs me@host:/data rw
64 27 0:53 / /var/lib/containers rw - fuse.fuse-overlayfs fuse-overlayfs rw
65 27 0:54 / /media/win rw - fuseblk /dev/sdc1 rw
"""


@pytest.mark.parametrize(
    ("path", "refused"),
    [
        ("/srv/stories/banished/terrarium.db", "nfs4"),
        ("/srv/stories/local/terrarium.db", None),  # a local disk mounted inside the NFS share
        ("/mnt/share drive/terrarium.db", "cifs"),
        ("/home/me/remote/t.db", "fuse.sshfs"),
        ("/var/lib/containers/t.db", None),
        ("/media/win/t.db", None),
        ("/home/me/t.db", None),
    ],
)
def test_mount_lines_are_classified(path: str, refused: str | None) -> None:
    found = mount_of(Path(path), MOUNTINFO)
    assert found is not None
    reason = network_reason(found[1])
    assert (reason is not None) == (refused is not None)
    if refused is not None:
        assert refused in str(reason)


def test_the_refusal_is_one_line_naming_the_filesystem_and_the_override(tmp_path: Path) -> None:
    info = tmp_path / "mountinfo"
    info.write_text(MOUNTINFO)
    line = refusal("/srv/stories/banished/terrarium.db", info)
    assert line is not None and "\n" not in line
    assert "nfs4" in line and "/srv/stories" in line and "TERRARIUM_NETWORK_STORE" in line
    assert refusal("/srv/stories/local/terrarium.db", info) is None
    assert refusal("/srv/stories/x.db", tmp_path / "no-such-mountinfo") is None  # not Linux


@pytest.fixture
def fuse_mount(tmp_path: Path) -> Iterator[Path]:
    backing, mount = tmp_path / "backing", tmp_path / "mount"
    backing.mkdir()
    mount.mkdir()
    missing = shutil.which("bindfs") is None or shutil.which("fusermount") is None
    mounted = (
        not missing
        and subprocess.run(["bindfs", str(backing), str(mount)], check=False).returncode == 0
    )
    if missing and os.environ.get("CI") == "true":
        pytest.fail("bindfs is not installed; .ci/run installs it")
    if not mounted:  # no FUSE device or no right to mount: the machine's, not ours to install
        pytest.skip("bindfs is not installed" if missing else "FUSE cannot mount here")
    try:
        yield mount
    finally:
        subprocess.run(["fusermount", "-u", str(mount)], check=False)


def test_a_store_on_a_fuse_mount_is_refused_unless_overridden(
    fuse_mount: Path, sample_db: Path
) -> None:
    store = fuse_mount / "story" / "terrarium.db"
    store.parent.mkdir()  # a store's folder is not made (a mistyped one would be)
    done = terrarium(*run_args(store, sample_db), timeout=120)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "FUSE" in line and str(fuse_mount) in line and "network_store" in line, line
    assert not store.exists() and not any(fuse_mount.rglob("terrarium.db*"))

    allowed = terrarium(*run_args(store, sample_db, network_store=True), timeout=180)
    assert allowed.returncode == 0, allowed.stderr
    assert store.is_file()
