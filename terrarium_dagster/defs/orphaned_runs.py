"""Runs whose worker is gone: marked failed, so the story's pool slot comes back.

Under `dagster dev` (and any deployment on the `DefaultRunLauncher`), a run's worker is a process
the code server starts on its own host. When the whole `dagster dev` dies with it (a kill of its
process group, a reboot of the GPU server), nothing ever marks the run as ended: that launcher
cannot be asked whether a worker lives, so Dagster's run monitoring leaves it STARTED, its
backfill REQUESTED, and the op's pool slot claimed, and every later run of the story waits in the
queue for good. The writer lease of the store was released the moment the worker died; only
Dagster does not know.

`orphaned_run_sensor` looks at the runs STARTED on that launcher: a run whose worker (the pid
Dagster logged as "Started process for run (pid: N)") is no process of this host any more, or a
process started after that line was logged (the pid reused), is reported failed with one line
saying why. The instance's `run_monitoring.free_slots_after_run_end_seconds` (dagster.yaml) then
frees its slot. Docker and Kubernetes launchers check their workers themselves.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import dagster as dg

from terrarium_dagster.defs.sensors import sensor_interval

LOGGED_AFTER_START_S = 5.0  # the pid is logged once its process runs: seconds allowed between
_PID = re.compile(r"\(pid: (\d+)\)")


def worker_pid(instance: dg.DagsterInstance, run_id: str) -> tuple[int, float] | None:
    """The pid of the run's worker as the launcher logged it, and when; None if not logged."""
    for record in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        message = record.dagster_event.message if record.dagster_event else None
        if message and message.startswith("Started process for run"):
            found = _PID.search(message)
            if found:
                return int(found.group(1)), record.timestamp
    return None


def process_started_at(pid: int) -> float | None:
    """When process `pid` of this host started (epoch seconds), or None where /proc cannot
    tell (not Linux)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        boot = next(
            float(line.split()[1])
            for line in Path("/proc/stat").read_text().splitlines()
            if line.startswith("btime ")
        )
    except (OSError, IndexError, StopIteration, ValueError):
        return None
    # field 22 of stat (the 20th after the command's name): start time in clock ticks after boot
    return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")


def worker_alive(pid: int, logged_at: float) -> bool:
    """Whether the worker whose pid was logged at `logged_at` still runs on this host: a process
    with that pid that started no later than it was logged (a later one reuses the pid). The
    worker's command line cannot tell: Dagster spawns it through `multiprocessing`."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's process: alive; its start time still tells whether it is ours
    started = process_started_at(pid)
    return started is None or started <= logged_at + LOGGED_AFTER_START_S


def orphaned_runs(instance: dg.DagsterInstance) -> Iterator[tuple[dg.DagsterRun, int]]:
    """The STARTED runs whose logged worker is gone, with its pid (only on the default run
    launcher: the others check their workers themselves)."""
    if not isinstance(instance.run_launcher, dg.DefaultRunLauncher):
        return
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED])):
        logged = worker_pid(instance, run.run_id)
        if logged is not None and not worker_alive(*logged):
            yield run, logged[0]


@dg.sensor(
    name="orphaned_run_sensor",
    minimum_interval_seconds=sensor_interval(60),
    default_status=dg.DefaultSensorStatus.RUNNING,
    description=(
        "Marks failed a run whose worker process is gone (dagster dev killed with its runs, a "
        "reboot), so that its pool slot is freed and the story's next run leaves the queue; "
        "only on the default run launcher, which cannot report a dead worker itself."
    ),
)
def orphaned_run_sensor(context: dg.SensorEvaluationContext) -> dg.SkipReason:
    failed = []
    for run, pid in orphaned_runs(context.instance):
        current = context.instance.get_run_by_id(run.run_id)
        if current is None or current.status != dg.DagsterRunStatus.STARTED:
            continue  # ended meanwhile (or another story's sensor saw it first)
        context.instance.report_run_failed(
            current,
            message=(
                f"the run's worker (pid {pid}) is gone: it died with the Dagster that started "
                "it; launch the threads again (the store resumes where the run stopped)"
            ),
        )
        failed.append(run.run_id)
        context.log.warning("run %s marked failed: its worker (pid %s) is gone", run.run_id, pid)
    if failed:
        return dg.SkipReason(f"marked failed: {', '.join(failed)} (their workers were gone)")
    return dg.SkipReason("no run whose worker is gone")
