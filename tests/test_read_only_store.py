"""A store that cannot be written, given to a writer (`run`, `why`, `undo`, `edition`): one line,
exit 2, nothing written beside it; given to a reader, read, with nothing left beside it.

Seen: a `chmod 444` store made `terrarium run` say "failed: acquire_writer_lease failed on
store.db: attempt to write a readonly database", exit 1, after SQLite had made the store's WAL
files beside it (`why` its call ledger too); one in a read-only
folder, "failed: cannot open annotator store ...: attempt to write a readonly database".
And `status`, `export`, `lineage`, `snapshots` (and `serve`) on a `chmod 444` store in a
folder they could write left its -wal and -shm files there: SQLite made them for its mode=ro
connection, and the connection made to remove them could not write the store either.

The commands run as processes; as root (whom file modes do not stop) under `setpriv` without
the capabilities that override them, so a mode of 0o444 or 0o555 is what it is for a user.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import TERRARIUM, digest, said, store_copy

WRITERS = (
    ("run", "--offline"),
    ("why", "Dakh'ren", "--offline"),
    ("undo", "--decision", "1"),
    ("edition", "--as-of-thread", "ch2", "--offline"),
)


def _as_a_user() -> list[str]:
    """A command prefix under which file modes bind this process as they bind a user."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("root without setpriv: file modes do not stop root")
    caps = "-dac_override,-dac_read_search"
    return ["setpriv", f"--bounding-set={caps}", f"--inh-caps={caps}"]


def _terrarium(*args: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TERRARIUM_")}
    return subprocess.run(
        [*_as_a_user(), TERRARIUM, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
    )


def _refused_in_one_line(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if said(line)]
    assert len(lines) == 1, done.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])


def test_a_read_only_store_file_is_refused_by_every_writer(
    offline_sample_store: Path, tmp_path: Path
) -> None:
    store = store_copy(offline_sample_store, tmp_path)
    store.chmod(0o444)
    before = digest(store)
    for command in WRITERS:
        for _ in range(2):  # the same command again: the same line, still nothing written
            done = _terrarium(*command, "--db", str(store))
            _refused_in_one_line(done, f"annotator store {store} is read-only", "chmod u+w")
            assert digest(store) == before, command
            assert sorted(p.name for p in store.parent.iterdir()) == [store.name], command
    store.chmod(0o644)


def test_a_store_in_a_read_only_folder_is_refused_by_a_writer(
    offline_sample_store: Path, tmp_path: Path
) -> None:
    store = store_copy(offline_sample_store, tmp_path)
    before = digest(store)
    store.parent.chmod(0o555)
    try:
        done = _terrarium("run", "--offline", "--db", str(store))
        _refused_in_one_line(done, "in a folder that cannot be written", str(store.parent))
    finally:
        store.parent.chmod(0o755)
    assert digest(store) == before
    assert sorted(p.name for p in store.parent.iterdir()) == [store.name]


READERS = (
    ("status", "--json"),
    ("snapshots",),
    ("lineage", "Dakh'ren"),
    ("export", "--format", "json", "--out", "{out}"),
)


def test_a_read_only_store_file_is_read_with_nothing_left_beside_it(
    offline_sample_store: Path, tmp_path: Path
) -> None:
    store = store_copy(offline_sample_store, tmp_path)
    store.chmod(0o444)
    before = digest(store)
    out = tmp_path / "glossary.json"
    for command in READERS:
        for _ in range(2):
            done = _terrarium(*(arg.format(out=out) for arg in command), "--db", str(store))
            assert done.returncode == 0, (command, done.stderr)
            assert sorted(p.name for p in store.parent.iterdir()) == [store.name], command
    assert digest(store) == before
    assert out.is_file()
    store.chmod(0o644)
