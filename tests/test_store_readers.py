"""Readers never block and never write: `status`, `export`, `lineage`, `snapshots` open the store
read-only (``mode=ro`` + ``query_only``).

Real files: the readers run (as processes) on a store in a read-only place (a read-only bind
mount when the tests run as root, whom file modes do not stop; else a read-only folder and file),
and (in-process) beside another process that holds the store's write lock; `status` shows a
run whose process was killed as `died` while the store still says `running`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from terrarium_dagster.errors import StoreError
from terrarium_dagster.store.annotator import GlossaryStore
from tests.support.cli import TERRARIUM, digest, store_copy, terrarium_main

READERS = (
    ("status", "--json"),
    ("snapshots",),
    ("lineage", "Dakh'ren"),
    ("export", "--format", "json", "--out", "{out}"),
)


@pytest.fixture(scope="module")
def built_once(offline_sample_store: Path) -> Path:
    """One offline run's store: the session's (tests/conftest.py), the same `terrarium run`."""
    return offline_sample_store


@pytest.fixture
def built_store(built_once: Path, tmp_path: Path) -> Path:
    """A copy of one offline run's store, in a folder of its own."""
    return store_copy(built_once, tmp_path)


def _reader(db: Path, args: tuple[str, ...], out: Path) -> subprocess.CompletedProcess[str]:
    """A reader command run by `terrarium`'s main in this process: it must let go of the store's
    files itself (a process's exit would close what it left open)."""
    return terrarium_main(*(arg.format(out=out) for arg in args), "--db", str(db))


def _read_only_view(folder: Path, view: Path) -> list[str]:
    """A command prefix under which `view` shows `folder` read-only."""
    view.mkdir()
    if os.geteuid() != 0:
        shutil.copytree(folder, view, dirs_exist_ok=True)
        for path in view.iterdir():
            path.chmod(0o444)
        view.chmod(0o555)
        return []
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("root without mount namespaces: no way to make a read-only place here")
    return [
        "unshare",
        "-m",
        "sh",
        "-c",
        f'mount --bind -o ro "{folder}" "{view}" && exec "$@"',
        "sh",
    ]


def test_readers_work_on_a_store_in_a_read_only_place(built_store: Path, tmp_path: Path) -> None:
    folder = built_store.parent
    for leftover in folder.glob("terrarium.db-*"):
        leftover.unlink()
    before = digest(built_store)
    view = tmp_path / "ro"
    prefix = _read_only_view(folder, view)
    try:
        for args in READERS:
            argv = [TERRARIUM, *(a.format(out=tmp_path / "out.json") for a in args)]
            done = subprocess.run(
                [*prefix, *argv, "--db", str(view / built_store.name)],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert done.returncode == 0, (args, done.stderr)
            assert "Traceback" not in done.stderr
            if args[0] == "status":
                report = json.loads(done.stdout)
                assert report["runs_by_status"] == {"finished": 1}
                assert report["writer"] is None
    finally:
        if not prefix:
            view.chmod(0o755)
    assert digest(built_store) == before, "a reader changed the store"
    assert sorted(p.name for p in folder.iterdir()) == ["terrarium.db"], "a reader wrote beside it"
    assert (tmp_path / "out.json").is_file()


def test_a_read_only_store_refuses_to_write(built_store: Path) -> None:
    with GlossaryStore(built_store, read_only=True) as store:
        assert store.history.last_revision_id() > 0
        with pytest.raises(StoreError, match="read-only"):
            store.set_meta("x", "y")
        assert store.get_meta("x") is None


def test_readers_leave_no_files_beside_the_store(built_store: Path, tmp_path: Path) -> None:
    """A ``mode=ro`` connection makes the WAL files of a store in WAL mode and cannot remove
    them: the readers let go of them, each command as often as it is run."""
    folder = built_store.parent
    for leftover in folder.glob("terrarium.db-*"):
        leftover.unlink()
    for args in (*READERS, *READERS):
        done = _reader(built_store, args, tmp_path / "out.json")
        assert done.returncode == 0, (args, done.stderr)
        assert sorted(p.name for p in folder.iterdir()) == ["terrarium.db"], args


def test_a_reader_leaves_the_wal_of_a_writer_that_came_meanwhile(built_store: Path) -> None:
    for leftover in built_store.parent.glob("terrarium.db-*"):
        leftover.unlink()
    reader = GlossaryStore(built_store, read_only=True)
    assert reader.history.last_revision_id() > 0
    writer = sqlite3.connect(built_store, isolation_level=None)
    try:
        writer.execute("INSERT INTO meta (key, value) VALUES ('writer', 'committed')")
        reader.close()  # not the last connection: the writer's WAL stays, with its commit
        assert Path(f"{built_store}-wal").stat().st_size > 0
    finally:
        writer.close()
    with GlossaryStore(built_store, read_only=True) as store:
        assert store.get_meta("writer") == "committed"
    assert sorted(p.name for p in built_store.parent.iterdir()) == ["terrarium.db"]


LOCKER = textwrap.dedent(
    """
    import sqlite3, sys, time
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO meta (key, value) VALUES ('locker', 'uncommitted')")
    print("locked", flush=True)
    time.sleep(120)
    """
)


@pytest.fixture
def write_lock(built_store: Path) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [sys.executable, "-c", LOCKER, str(built_store)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "locked"
        yield process
    finally:
        process.kill()
        process.wait(timeout=10)


def test_readers_do_not_wait_for_a_writer_holding_the_write_lock(
    write_lock: subprocess.Popen[str], built_store: Path, tmp_path: Path
) -> None:
    for args in READERS:
        started = time.monotonic()
        done = _reader(built_store, args, tmp_path / "out.json")
        assert done.returncode == 0, (args, done.stderr)
        assert time.monotonic() - started < 8, f"{args[0]} waited for the writer"
    with GlossaryStore(built_store, read_only=True) as store:
        assert store.get_meta("locker") is None, "readers see the last commit only"


HOLDER = textwrap.dedent(
    """
    import sys, time
    from terrarium_dagster.config import load_settings
    from terrarium_dagster.engine import Engine

    settings = load_settings(offline=True, corpus=sys.argv[1], db=sys.argv[2])
    with Engine.open(settings, run_id="killed-run") as engine:
        engine.annotate_thread(engine.threads[0].id)
        print("holding", flush=True)
        time.sleep(120)
    """
)


def test_status_shows_a_run_whose_process_is_gone_as_died(sample_db: Path, tmp_path: Path) -> None:
    built_store = tmp_path / "terrarium.db"
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(sample_db), str(built_store)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "holding"
        alive = json.loads(_reader(built_store, ("status", "--json"), tmp_path).stdout)
        assert alive["writer"]["run_id"] == "killed-run"
        assert alive["writer"]["pid"] == process.pid
        assert alive["runs_by_status"] == {"running": 1}
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        before = digest(built_store)
        done = _reader(built_store, ("status",), tmp_path)
        assert done.returncode == 0, done.stderr
        assert "runs: 1 (died 1)" in done.stdout
        assert "being written" not in done.stdout
        assert digest(built_store) == before
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)


SCENE_HOLDER = textwrap.dedent(
    """
    import sys
    from terrarium_dagster.config import load_settings
    from terrarium_dagster.engine import Engine

    settings = load_settings(offline=True, corpus=sys.argv[1], db=sys.argv[2])
    with Engine.open(settings, run_id="scene-run") as engine:
        engine.annotate_thread(engine.threads[0].id)
        store = engine.store
        # A scene: it reads, then "the model thinks" (no write lock held), then writes.
        with store.transaction(deferred=True):
            before = store.history.last_revision_id()
            print("thinking", flush=True)
            sys.stdin.readline()
            store.set_meta("scene-wrote", str(before))
        print("committed", flush=True)
    """
)


def test_why_answers_and_logs_while_a_run_holds_the_lease_and_a_scene_is_open(
    sample_db: Path, tmp_path: Path
) -> None:
    db = tmp_path / "terrarium.db"
    process = subprocess.Popen(
        [sys.executable, "-c", SCENE_HOLDER, str(sample_db), str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stdin is not None
        assert process.stdout.readline().strip() == "thinking", process.stderr
        started = time.monotonic()
        done = subprocess.run(
            [TERRARIUM, "why", "E1", "--offline", "--db", str(db)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert time.monotonic() - started < 8, "why waited for the run"
        assert "exchange logged as summon" in done.stdout
        process.stdin.write("go\n")
        process.stdin.flush()
        assert process.stdout.readline().strip() == "committed", process.stderr.read()
        assert process.wait(timeout=30) == 0
        with GlossaryStore(db, read_only=True) as store:
            assert store.get_meta("scene-wrote") is not None, "the scene wrote after why"
            assert len(store.memory.summons()) == 1
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)
