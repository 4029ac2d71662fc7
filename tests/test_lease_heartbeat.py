"""Leases that survive containers: a writer's liveness is its lock and heartbeat on the lease
file (`store/lease.py`), never its pid or host name.

Real processes on a real store. A holder takes the lease the way every writer does
(`Engine.open`) and then does nothing at all (no scene commits): a contender keeps trying and is
refused for many beats, then the holder is killed with SIGKILL and the contender takes the lease
over at once (the kernel released the dead holder's lock), the holder's run marked `died`. The
same with holder and contender each in its own pid namespace (`unshare --pid`, as two containers),
where both are pid 1 on the same host name: the old pid check took the dead holder for alive
forever (its pid was the contender's own). The processes beat every `BEAT_S` seconds so that
"many beats" take seconds; a beat's staleness (the rule where a filesystem keeps no locks) is
checked on real beats, and the default interval makes it about a minute at most.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from terrarium_dagster.store import lease
from terrarium_dagster.store.annotator import GlossaryStore

BEAT_S = 0.4
STALE_S = BEAT_S * lease.STALE_BEATS

WRITER = textwrap.dedent(
    """
    import os, sys, time
    from terrarium_dagster.config import load_settings
    from terrarium_dagster.engine import Engine
    from terrarium_dagster.errors import WriterLeaseError
    from terrarium_dagster.store import lease

    lease.HEARTBEAT_S = float(sys.argv[4])
    role, corpus, db = sys.argv[1:4]
    settings = load_settings(offline=True, corpus=corpus, db=db)
    if role == "hold":
        engine = Engine.open(settings, run_id="holder-run")
        print("holding", os.getpid(), flush=True)
        time.sleep(300)
    refused = 0
    print("trying", os.getpid(), flush=True)
    while True:
        try:
            engine = Engine.open(settings, run_id="contender-run")
        except WriterLeaseError:
            refused += 1
            time.sleep(0.05)
            continue
        print("took", time.time(), refused, flush=True)
        engine.close()
        break
    """
)


class Writer:
    """A writer process (optionally in a pid namespace of its own), stopped at the end."""

    def __init__(self, role: str, corpus: Path, db: Path, *, own_pid_namespace: bool) -> None:
        prefix = (
            ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child=SIGKILL"]
            if own_pid_namespace
            else []
        )
        self.process = subprocess.Popen(
            [*prefix, sys.executable, "-c", WRITER, role, str(corpus), str(db), str(BEAT_S)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "TERRARIUM_CONCURRENCY": "1"},
        )

    def line(self) -> list[str]:
        assert self.process.stdout is not None
        text = self.process.stdout.readline()
        if not text:
            self.process.wait(timeout=30)
            stderr = self.process.stderr.read() if self.process.stderr else ""
            raise AssertionError(f"writer exited {self.process.returncode}: {stderr[-2000:]}")
        return text.split()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store" / "terrarium.db"


@pytest.fixture
def writers() -> Iterator[list[Writer]]:
    started: list[Writer] = []
    yield started
    for writer in started:
        writer.stop()


def _unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", "true"], capture_output=True, check=False
    )
    return probe.returncode == 0


def _takeover(
    writers: list[Writer], sample_db: Path, store_path: Path, *, own_pid_namespace: bool
) -> tuple[str, str]:
    holder = Writer("hold", sample_db, store_path, own_pid_namespace=own_pid_namespace)
    writers.append(holder)
    word, holder_pid = holder.line()
    assert word == "holding"
    contender = Writer("contend", sample_db, store_path, own_pid_namespace=own_pid_namespace)
    writers.append(contender)
    word, contender_pid = contender.line()
    assert word == "trying"

    # Alive and idle (no scene commits) for several times the stale age: never taken over.
    time.sleep(3 * STALE_S + 1.0)
    assert contender.process.poll() is None, "the lease was taken while its holder lived"
    with GlossaryStore(store_path, read_only=True) as store:
        held = store.runs.writer_lease()
        assert held is not None and held.run_id == "holder-run"
        assert store.runs.holder_alive(held)

    holder.process.send_signal(signal.SIGKILL)
    killed_at = time.time()
    word, took_at, refused = contender.line()
    assert word == "took" and int(refused) > 0
    waited = float(took_at) - killed_at
    assert waited < 3.0, f"took {waited:.1f}s to take over a dead holder's lease"
    assert contender.process.wait(timeout=30) == 0
    with GlossaryStore(store_path, read_only=True) as store:
        runs = {run.id: run.status for run in store.runs.runs()}
        assert store.runs.writer_lease() is None, "the contender released it"
    assert runs.get("holder-run", "died") == "died"
    return holder_pid, contender_pid


def test_a_writer_killed_by_sigkill_is_taken_over_within_a_few_beats_never_before(
    writers: list[Writer], sample_db: Path, store_path: Path
) -> None:
    _takeover(writers, sample_db, store_path, own_pid_namespace=False)


def test_two_writers_with_the_same_pid_on_the_same_host_name(
    writers: list[Writer], sample_db: Path, store_path: Path
) -> None:
    if not _unshare_works():
        pytest.skip("unshare --pid needs root (or user namespaces): no pid namespace here")
    holder_pid, contender_pid = _takeover(writers, sample_db, store_path, own_pid_namespace=True)
    assert holder_pid == contender_pid == "1", "each writer is pid 1 of its own namespace"


def test_a_beat_goes_stale_after_its_holder_stops_beating(tmp_path: Path) -> None:
    path = tmp_path / "store.db-lease"
    heartbeat = lease.Heartbeat(path, "run-a", every=BEAT_S)
    heartbeat.start()
    try:
        time.sleep(3 * STALE_S)  # beating on its own thread all along
        beat = lease.read_beat(path)
        assert beat is not None and beat.run_id == "run-a" and beat.fresh()
        assert lease.lock_held(path) is True
        assert lease.holder_alive(path, "run-a")
    finally:
        heartbeat.stop()
    assert lease.lock_held(path) is False and not lease.holder_alive(path, "run-a")
    assert not beat.fresh(now=beat.at + STALE_S + 0.01) and beat.fresh(now=beat.at + STALE_S / 2)
    # the default: a holder silent on a filesystem without locks is taken over within a minute
    assert lease.HEARTBEAT_S * lease.STALE_BEATS <= 60 and lease.HEARTBEAT_S >= 5
