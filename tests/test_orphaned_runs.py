"""A run whose worker died with `dagster dev` is marked failed, so its pool slot comes back.

A real Dagster instance on the default run launcher, a run in it as a killed `dagster dev` leaves
it (STARTED, its worker's pid logged, that process gone), and the sensor evaluated on it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml

from terrarium_dagster.defs.orphaned_runs import orphaned_run_sensor, worker_alive


@dg.op
def _step() -> None:
    pass


@dg.job
def _thread_job() -> None:
    _step()


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test() as test_instance:
        yield test_instance


def _started_run(instance: dg.DagsterInstance, pid: int) -> str:
    """A run as the launcher leaves it once its worker started: STARTED, with the worker's pid."""
    run = instance.create_run_for_job(_thread_job)
    instance.report_dagster_event(
        dg.DagsterEvent(event_type_value="PIPELINE_START", job_name=run.job_name),
        run_id=run.run_id,
    )
    instance.report_engine_event(f"Started process for run (pid: {pid}).", run)
    return run.run_id


def _running(args: list[str]) -> subprocess.Popen[bytes]:
    """`args` started, once its process runs them (not its parent's copy before the exec)."""
    process = subprocess.Popen(args)
    cmdline = Path(f"/proc/{process.pid}/cmdline")
    while cmdline.exists() and args[-1].encode() not in cmdline.read_bytes():
        time.sleep(0.01)
    return process


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_run_whose_worker_is_gone_is_marked_failed_and_a_living_one_is_not(
    instance: dg.DagsterInstance,
) -> None:
    dead = _started_run(instance, _dead_pid())
    living = _running([sys.executable, "-c", "import time; time.sleep(60)", "worker"])
    try:
        alive = _started_run(instance, living.pid)
        result = orphaned_run_sensor(dg.build_sensor_context(instance=instance))
        assert isinstance(result, dg.SkipReason) and dead in str(result.skip_message)
        run = instance.get_run_by_id(dead)
        assert run is not None and run.status == dg.DagsterRunStatus.FAILURE
        still = instance.get_run_by_id(alive)
        assert still is not None and still.status == dg.DagsterRunStatus.STARTED
        # the next evaluation finds nothing more to do
        again = orphaned_run_sensor(dg.build_sensor_context(instance=instance))
        assert isinstance(again, dg.SkipReason)
        assert again.skip_message == "no run whose worker is gone"
    finally:
        living.kill()
        living.wait()


def test_a_pid_reused_by_a_later_process_is_no_worker() -> None:
    assert not worker_alive(_dead_pid(), time.time())
    before = time.time() - 60  # the worker's pid was logged a minute before this process began
    other = _running(["sleep", "30"])
    try:
        assert worker_alive(other.pid, time.time())
        assert not worker_alive(other.pid, before)
    finally:
        other.kill()
        other.wait()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_dagster_dev_killed_with_its_run_gives_the_story_back_once_it_is_started_again(
    tmp_path: Path, _isolated_home: Path
) -> None:
    """The helper's sweep: `dagster dev` killed (its whole process group) while a run annotates;
    started again, the dead run stayed STARTED and held the story's pool slot, so every later run
    of the story waited in the queue for good."""
    from tests.support.corpus_builder import simple_quest
    from tests.support.dagster_dev import REPO, DagsterDev, dev_environment

    shipped = yaml.safe_load((REPO / "dagster.yaml").read_text(encoding="utf-8"))
    assert shipped["run_monitoring"]["enabled"] is True
    assert shipped["run_monitoring"]["free_slots_after_run_end_seconds"] > 0
    # the checkout's instance, its daemon looking every 2 s instead of 15 (the test's pace)
    quick = {**shipped["run_monitoring"], "poll_interval_seconds": 2}
    quick["free_slots_after_run_end_seconds"] = 1
    instance = tmp_path / "dagster.yaml"
    instance.write_text(yaml.safe_dump({**shipped, "run_monitoring": quick}), encoding="utf-8")
    corpus = simple_quest(tmp_path / "corpus.db", threads=2, scenes_per_thread=2)
    env = dev_environment(_isolated_home, tmp_path / "store" / "terrarium.db")
    env["TERRARIUM_CORPUS"] = str(corpus)
    slow = subprocess.Popen(  # a model server that takes seconds a request: the run is mid-way
        [sys.executable, "-m", "terrarium_dagster.testing.batching", "--scale", "40"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = slow.stdout.readline().strip() if slow.stdout else ""
        served = {**env, "TERRARIUM_OFFLINE": "0", "TERRARIUM_AGENT_URL": url}
        first = DagsterDev(tmp_path, served, instance=instance)
        first.start()
        try:
            keys = first.wait_for_threads(corpus)
            run_id = first.launch_run(["thread_annotations"], keys[0])
            first.wait_for(
                lambda: (
                    any(
                        "Started process for run" in (event.get("message") or "")
                        for event in _events(first, run_id)
                    )
                    and first.run(run_id)["status"] == "STARTED"
                ),
                timeout=90,
                what="the run's worker to start",
            )
            time.sleep(3)  # its step claims the pool slot, then sends its first request
            assert first.process is not None
            os.killpg(first.process.pid, signal.SIGKILL)  # dagster dev and its run worker
            first.process.wait()
            first.process = None
        finally:
            first.stop()
    finally:
        slow.kill()
        slow.wait()
    with DagsterDev(
        tmp_path, env, instance=instance
    ) as again:  # offline now: the next run is quick
        again.wait_until_loaded()
        again.wait_for(
            lambda: again.run(run_id)["status"] == "FAILURE",
            timeout=90,
            what="orphaned_run_sensor to mark the dead run failed",
        )
        message = " ".join(event.get("message") or "" for event in _events(again, run_id))
        assert "worker (pid" in message and "is gone" in message, message
        retry = again.launch_run(["thread_annotations"], keys[0])
        again.wait_for(
            lambda: again.run(retry)["status"] in ("SUCCESS", "FAILURE"),
            timeout=120,
            what="the next run to leave the queue (the slot freed) and finish",
        )
        assert again.run(retry)["status"] == "SUCCESS", again.log_tail()


def _events(dev: Any, run_id: str) -> list[dict[str, Any]]:
    data = dev.graphql(
        """query ($id: ID!) { logsForRun(runId: $id, limit: 1000) {
             __typename ... on EventConnection { events { __typename
               ... on MessageEvent { message } } } } }""",
        id=run_id,
    )
    return list(data["logsForRun"].get("events") or [])
