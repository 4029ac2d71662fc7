"""A scheduler for a test's `dagster dev`: a schedule switched on is due at once.

Dagster runs a schedule at the first tick of its cron after the schedule was switched on, and its
scheduler daemon looks at the schedules once a minute, at the minute: a test that switched a
schedule on from the UI (GraphQL's `startSchedule`) waited for the next minute, half a minute on
average and up to one, for the run it then watched. With this class as the instance's
`scheduler` (tests/test_dagster_paths.py writes it into its instance), a schedule switched on
counts as switched on a second before its cron's latest tick, so that tick is due already, and
the daemon looks every `SCHEDULER_LOOP_S` (its schedules still run at their cron's ticks only):
the daemon launches the tick's run as it launches every scheduled run (the schedule evaluated at
the tick's time, its tags and run key), a second or two after the switch. `dagster dev` imports
this module from this folder (first on its PYTHONPATH: `dev_environment`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import dagster._scheduler.scheduler as scheduler_loop
from dagster._core.scheduler import DagsterDaemonScheduler
from dagster._core.scheduler.instigation import InstigatorState, ScheduleInstigatorData

if TYPE_CHECKING:
    from dagster import DagsterInstance
    from dagster._core.remote_representation import RemoteSchedule

SCHEDULER_LOOP_S = 1.0
_NEXT_ITERATION = "_get_next_scheduler_iteration_time"

if not callable(getattr(scheduler_loop, _NEXT_ITERATION, None)):
    raise ImportError(f"dagster._scheduler.scheduler.{_NEXT_ITERATION} is gone: {__file__}")


def _next_iteration(start_time: float) -> float:
    return start_time + SCHEDULER_LOOP_S


setattr(scheduler_loop, _NEXT_ITERATION, _next_iteration)


class DueAtOnceScheduler(DagsterDaemonScheduler):
    """Dagster's daemon scheduler, whose `start_schedule` dates the start a second before the
    cron's latest tick."""

    def start_schedule(
        self, instance: DagsterInstance, remote_schedule: RemoteSchedule
    ) -> InstigatorState:
        stored = instance.get_instigator_state(
            remote_schedule.get_remote_origin_id(), remote_schedule.selector_id
        )
        if remote_schedule.get_current_instigator_state(stored).is_running:
            return super().start_schedule(instance, remote_schedule)  # already on: as it is
        started = super().start_schedule(instance, remote_schedule)
        data = started.instigator_data
        assert isinstance(data, ScheduleInstigatorData), data
        latest_tick = next(remote_schedule.execution_time_iterator(time.time(), ascending=False))
        due = started.with_data(
            ScheduleInstigatorData(data.cron_schedule, latest_tick.timestamp() - 1)
        )
        instance.update_instigator_state(due)
        return due
