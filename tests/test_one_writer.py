"""One writer per store: a lease taken where a writer opens the store (CLI and Dagster alike).

Real processes on real files: two `terrarium run` processes on one store, the first busy in a model
call (a loopback server holds its request, before and after the scene's first write): the second is
refused at once with one line naming the holder (exit 2) and writes nothing (the whole store,
runs and calls included, compared before and after). A holder process that takes the lease the
way `terrarium run` does (`Engine.open`) and waits: a Dagster run beside it fails the same way; a
holder killed with SIGKILL is detected as dead and taken over, its run shown as `died`.
"""

from __future__ import annotations

import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import closing
from functools import partial
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from terrarium_dagster.defs.assets import thread_annotations, thread_glossary
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.testing.synthetic import generate_corpus
from tests.support.cli import TERRARIUM, run_args, terrarium
from tests.support.kill_server import KillPoint, run_kill_server
from tests.support.store_dump import dump_differences, store_dump

pytest_plugins = ["tests.support.dagster_fixtures"]

HOLDER = textwrap.dedent(
    """
    import sys, time
    from terrarium_dagster.config import load_settings
    from terrarium_dagster.engine import Engine

    settings = load_settings(offline=True, corpus=sys.argv[1], db=sys.argv[2])
    with Engine.open(settings, run_id="holder-run") as engine:
        engine.annotate_thread(engine.threads[0].id)
        print("holding", flush=True)
        time.sleep(120)
    """
)


_terrarium = partial(terrarium, timeout=120)


@pytest.fixture
def holder(sample_db: Path, store_path: Path) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(sample_db), str(store_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.strip() == "holding", process.stderr.read() if process.stderr else ""
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)


def _snapshot(store_path: Path) -> tuple[int, list[tuple[str, str]], list[Any]]:
    with GlossaryStore(store_path) as store:
        return (
            store.history.last_revision_id(),
            [(run.id, run.status) for run in store.runs.runs()],
            [(s.thread_key, s.status, s.scenes_done) for s in store.progress.thread_states()],
        )


def test_a_second_writer_is_refused_at_once_naming_the_holder_and_writes_nothing(
    holder: subprocess.Popen[str], sample_db: Path, store_path: Path
) -> None:
    before = _snapshot(store_path)
    started = time.monotonic()
    done = _terrarium(*run_args(store_path, sample_db))
    assert time.monotonic() - started < 15, "the refusal must not wait"
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "holder-run" in line and f"pid {holder.pid}" in line and "since" in line
    assert "Traceback" not in done.stderr
    assert _snapshot(store_path) == before
    assert holder.poll() is None, "the holder keeps running"


def test_a_dagster_run_beside_a_cli_writer_fails_naming_the_holder(
    holder: subprocess.Popen[str],
    instance: dg.DagsterInstance,
    resources: dict[str, Any],
    keys: list[str],
    store_path: Path,
) -> None:
    before = _snapshot(store_path)
    result = dg.materialize(
        [thread_glossary],
        selection=[thread_annotations],
        instance=instance,
        resources=resources,
        partition_key=keys[1],
        raise_on_error=False,
    )
    assert not result.success
    failure = result.failure_data_for_node("thread_glossary")
    assert failure is not None and failure.error is not None
    assert "holder-run" in failure.error.message
    assert _snapshot(store_path) == before


def test_a_killed_holder_is_taken_over_and_its_run_shown_as_died(
    holder: subprocess.Popen[str], sample_db: Path, store_path: Path
) -> None:
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=10)
    done = _terrarium(*run_args(store_path, sample_db))
    assert done.returncode == 0, done.stderr
    with GlossaryStore(store_path) as store:
        runs = {run.id: run for run in store.runs.runs()}
        assert runs["holder-run"].status == "died"
        assert store.runs.writer_lease() is None, "a finished run releases the lease"
        assert {state.status for state in store.progress.thread_states()} == {"curated"}


@pytest.fixture(scope="module")
def quest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated quest that compacts at a budget of 8,192 tokens."""
    path = tmp_path_factory.mktemp("one_writer") / "quest.db"
    return generate_corpus(
        path, threads=3, posts_per_thread=10, seed=3, qm_ratio=0.5, words_per_post=(150, 450)
    )


def _write_lock_taken(store_path: Path) -> bool:
    with closing(sqlite3.connect(store_path, timeout=0, isolation_level=None)) as conn:
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError:
            return True
        conn.execute("ROLLBACK")
        return False


@pytest.mark.parametrize(
    ("held", "write_lock"),
    [
        (KillPoint("scene", scene_number=2), False),
        (KillPoint("scene", scene_number=1, occurrence=2), True),
    ],
    ids=["before-the-scene-writes", "holding-the-write-lock"],
)
def test_two_concurrent_terrarium_runs_the_second_is_refused_at_once_and_writes_nothing(
    quest: Path, tmp_path: Path, held: KillPoint, write_lock: bool
) -> None:
    """Two real `terrarium run` on one store. The first is held in a model call: at the second
    scene's request it holds the lease but not SQLite's write lock (the scene has not written
    yet); at the next thread's first scene request (its compaction, which folded the finished
    thread, already recorded in the open scene) it holds the write lock too. Either way the second
    is refused at once."""
    store_path = tmp_path / "store.db"
    with run_kill_server() as server:
        server.hold = held
        command = [
            TERRARIUM,
            *run_args(store_path, quest, agent_url=server.url, context_budget=8192, max_tokens=768),
        ]
        first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            while not server.held.wait(timeout=0.05):
                assert first.poll() is None, "the first run ended before the held request"
            assert _write_lock_taken(store_path) == write_lock
            before = store_dump(store_path, everything=True)
            started = time.monotonic()
            second = subprocess.run(command, capture_output=True, text=True, timeout=120)
            waited = time.monotonic() - started
            after = store_dump(store_path, everything=True)
        finally:
            server.release.set()
            try:
                first.wait(timeout=300)
            finally:
                if first.poll() is None:
                    first.kill()
                    first.wait(timeout=30)
        assert first.returncode == 0, first.stderr.read() if first.stderr else ""
    assert second.returncode == 2, second.stderr
    # at once: not after SQLite's busy timeout (10 s) on the write lock the first run holds;
    # the bound leaves the process's own start (2-4 s on a loaded 2-core machine) out of it
    assert waited < 10, f"the refusal took {waited:.1f} s"
    (line,) = second.stderr.strip().splitlines()
    header, lease = before["writer_lease"]
    holder_run = lease[header.index("run_id")]
    assert f"run {holder_run}" in line and f"pid {first.pid}" in line, line
    assert "since" in line and socket.gethostname() in line, line
    assert dump_differences(before, after) == [] and before == after
    with GlossaryStore(store_path, read_only=True) as store:
        assert [(run.id, run.status) for run in store.runs.runs()] == [(holder_run, "finished")]
