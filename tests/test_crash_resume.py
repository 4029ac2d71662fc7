"""Killing a run at any moment loses nothing and duplicates nothing: resume equals uninterrupted."""

from __future__ import annotations

import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

from terrarium_dagster.cli import main
from terrarium_dagster.store.annotator import GlossaryStore
from tests.support.cli import run_args
from tests.support.store_dump import glossary_fingerprint


def _command(corpus: Path, db: Path) -> list[str]:
    return [sys.executable, "-m", "terrarium_dagster.cli", *run_args(db, corpus)]


def _start(corpus: Path, db: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        _command(corpus, db),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ},
        start_new_session=True,
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait(timeout=30)
    if process.stderr:
        process.stderr.close()


def test_sigkill_at_random_points_then_resume_equals_an_uninterrupted_run(
    sample_db: Path, offline_sample_store: Path, tmp_path: Path
) -> None:
    baseline = tmp_path / "baseline.db"
    shutil.copyfile(offline_sample_store, baseline)  # an uninterrupted run's store

    killed = tmp_path / "killed.db"
    rng = random.Random(20261122)
    targets = sorted(rng.sample(range(1, 23), 4))  # scenes committed before each kill
    kills = 0
    for target in targets:
        process = _start(sample_db, killed)
        try:
            deadline = time.monotonic() + 120
            while process.poll() is None and time.monotonic() < deadline:
                if _scenes_committed(killed) >= target:
                    time.sleep(rng.uniform(0.0, 0.05))  # land anywhere in the next scene
                    break
                time.sleep(0.005)
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                kills += 1
        finally:
            _stop(process)
    assert kills >= 3, f"only {kills} runs were killed mid-way; the test proves too little"
    finisher = subprocess.run(_command(sample_db, killed), capture_output=True, timeout=300)
    assert finisher.returncode == 0, finisher.stderr.decode()
    assert glossary_fingerprint(killed) == glossary_fingerprint(baseline)


def test_sigint_stops_after_the_current_call_with_exit_130_and_resumes(
    sample_db: Path, offline_sample_store: Path, tmp_path: Path
) -> None:
    baseline = tmp_path / "baseline.db"
    shutil.copyfile(offline_sample_store, baseline)  # an uninterrupted run's store
    db = tmp_path / "interrupted.db"
    process = _start(sample_db, db)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _scenes_committed(db) == 0:
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=60)
        err = process.stderr.read().decode() if process.stderr else ""
    finally:
        _stop(process)
    assert code == 130, err
    assert "resume" in err
    with GlossaryStore(db) as store:
        assert store.memory.snapshots(kind="shutdown") == []  # the stop adds no snapshot
    assert main(run_args(db, sample_db)) == 0
    assert glossary_fingerprint(db) == glossary_fingerprint(baseline)


def _scenes_committed(db: Path) -> int:
    """Scenes committed so far, read without writing (the run may be creating the file)."""
    if not db.exists():
        return 0
    try:
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)) as connection:
            row = connection.execute("SELECT coalesce(sum(scenes_done), 0) FROM thread_state")
            return int(row.fetchone()[0])
    except sqlite3.Error:
        return 0
