"""One writer per store: a lease taken where a writer opens the store (CLI and Dagster alike).

Real processes on real files: a holder process takes the lease the way `terrarium run` does
(`Engine.open`) and waits; a second `terrarium run` on the same store is refused at once with one
line naming the holder (exit 2) and writes nothing; a Dagster run beside it fails the same way; a
holder killed with SIGKILL is detected as dead and taken over, its run shown as `died`.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from terrarium_dagster.defs.assets import thread_annotations, thread_glossary
from terrarium_dagster.glossary.store import GlossaryStore

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


def _terrarium(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).with_name("terrarium")), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


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
            store.glossary.last_revision_id(),
            [(run.id, run.status) for run in store.runs.runs()],
            [(s.thread_key, s.status, s.scenes_done) for s in store.progress.thread_states()],
        )


def test_a_second_writer_is_refused_at_once_naming_the_holder_and_writes_nothing(
    holder: subprocess.Popen[str], sample_db: Path, store_path: Path
) -> None:
    before = _snapshot(store_path)
    started = time.monotonic()
    done = _terrarium("run", "--offline", "--corpus", str(sample_db), "--db", str(store_path))
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
    done = _terrarium("run", "--offline", "--corpus", str(sample_db), "--db", str(store_path))
    assert done.returncode == 0, done.stderr
    with GlossaryStore(store_path) as store:
        runs = {run.id: run for run in store.runs.runs()}
        assert runs["holder-run"].status == "died"
        assert store.runs.writer_lease() is None, "a finished run releases the lease"
        assert {state.status for state in store.progress.thread_states()} == {"curated"}
