"""Killing a run at any moment loses nothing and duplicates nothing: resume equals uninterrupted."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from terrarium_dagster.cli import main
from terrarium_dagster.glossary.store import GlossaryStore
from tests.test_run_cli import glossary_fingerprint


def _command(corpus: Path, db: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "terrarium_dagster.cli",
        "run",
        "--offline",
        "--corpus",
        str(corpus),
        "--db",
        str(db),
    ]


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
    sample_db: Path, tmp_path: Path
) -> None:
    baseline = tmp_path / "baseline.db"
    assert main(["run", "--offline", "--corpus", str(sample_db), "--db", str(baseline)]) == 0

    killed = tmp_path / "killed.db"
    rng = random.Random(20261122)
    kills = 0
    for _ in range(4):
        process = _start(sample_db, killed)
        try:
            time.sleep(rng.uniform(0.5, 1.8))
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                kills += 1

        finally:
            _stop(process)
    assert kills >= 1, "every run finished before it could be killed; the test proves nothing"
    finisher = subprocess.run(_command(sample_db, killed), capture_output=True, timeout=300)
    assert finisher.returncode == 0, finisher.stderr.decode()
    assert glossary_fingerprint(killed) == glossary_fingerprint(baseline)


def test_sigint_stops_after_the_current_call_with_exit_130_and_resumes(
    sample_db: Path, tmp_path: Path
) -> None:
    baseline = tmp_path / "baseline.db"
    assert main(["run", "--offline", "--corpus", str(sample_db), "--db", str(baseline)]) == 0
    db = tmp_path / "interrupted.db"
    process = _start(sample_db, db)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not _scenes_done(db):
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=60)
        err = process.stderr.read().decode() if process.stderr else ""
    finally:
        _stop(process)
    assert code == 130, err
    assert "resume" in err
    with GlossaryStore(db) as store:
        checkpoint = store.latest_checkpoint()
        assert checkpoint is not None and checkpoint.kind == "shutdown"
    assert main(["run", "--offline", "--corpus", str(sample_db), "--db", str(db)]) == 0
    assert glossary_fingerprint(db) == glossary_fingerprint(baseline)


def _scenes_done(db: Path) -> bool:
    if not db.exists():
        return False
    try:
        with GlossaryStore(db) as store:
            return any(state.scenes_done > 0 for state in store.thread_states())
    except Exception:  # the schema may not be written yet
        return False
