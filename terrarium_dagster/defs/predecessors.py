"""A run that reaches a thread before the run annotating the thread ahead of it waits for that run.

Dagster's queue takes a story's runs in the order they were submitted (then by `dagster/priority`),
and the backfill daemon submits the runs of backfills launched together side by side, in any
order: threads 4–5 can leave the queue before threads 1–3. The engine refuses to annotate a thread
whose predecessor is not annotated (`engine/order.py::Standing.check_order`, the one order check,
raising `PredecessorNotAnnotated` before anything is written). When the missing thread's
annotation is on its way — a run queued or in progress whose partitions hold it, or a backfill
selecting annotation whose run is not submitted yet — the thread step asks Dagster to run it again
later (`RetryRequested`) instead of failing. The step then ends, and the pool's slot is the step's,
not the run's (`granularity: op` in dagster.yaml), so the earlier run takes the slot; the step's
next attempt waits for the slot behind it and finds its predecessor annotated. Waiting never
holds the slot, so two runs never wait for each other (a run only ever waits for an earlier
thread). The refusal stands, a failure naming the missing thread, when nothing is on its way and
when waiting cannot help: pools claimed by whole runs (`granularity: run`), or every run slot of
the queue taken by runs waiting like this one.
"""

from __future__ import annotations

from collections.abc import Set

import dagster as dg

from terrarium_dagster.defs.failures import failure_for
from terrarium_dagster.defs.partitions import (
    PARTITION_TAG,
    RANGE_END_TAG,
    RANGE_START_TAG,
    threads_partitions,
)
from terrarium_dagster.defs.story_location import WRITER_POOL
from terrarium_dagster.errors import PredecessorNotAnnotated

# Runs that may still write: waiting in the queue, starting, running.
IN_PROGRESS = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]
BACKFILLS_LOOKED_AT = 100
BACKFILL_TAG = "dagster/backfill"

# The step's attempts while the earlier run is on its way but has not taken the pool's slot yet
# (queued behind other stories' runs, starting): 5 s, 10 s, 20 s, 40 s, then every minute, a day
# in all. While the earlier run holds the slot, the waiting step waits for the slot and spends no
# attempt.
FIRST_WAIT_SECONDS = 5
LONGEST_WAIT_SECONDS = 60
MOST_ATTEMPTS = 24 * 60

# Step events, the last of which says whether a started run's step is waiting to be retried.
STEP_EVENTS = {
    dg.DagsterEventType.STEP_START,
    dg.DagsterEventType.STEP_RESTARTED,
    dg.DagsterEventType.STEP_UP_FOR_RETRY,
    dg.DagsterEventType.STEP_SUCCESS,
    dg.DagsterEventType.STEP_FAILURE,
}
STARTED = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]


def annotation_on_its_way(
    instance: dg.DagsterInstance, annotations: dg.AssetKey, missing: str, *, own_run_id: str
) -> str | None:
    """What will annotate the thread `missing` (a partition key), said in a few words: another
    run queued or in progress that selects `annotations` over a range holding it, or a backfill
    selecting it whose run is not submitted yet; None when nothing will."""
    keys = instance.get_dynamic_partitions(threads_partitions.name)
    position = {key: index for index, key in enumerate(keys)}
    if missing not in position:
        return None
    target = position[missing]
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=IN_PROGRESS)):
        if run.run_id == own_run_id or not _selects(run.asset_selection, annotations):
            continue
        first = run.tags.get(RANGE_START_TAG) or run.tags.get(PARTITION_TAG)
        last = run.tags.get(RANGE_END_TAG) or run.tags.get(PARTITION_TAG)
        if first in position and last in position and position[first] <= target <= position[last]:
            return f"run {run.run_id} ({run.status.value.lower()}) annotates it"
    for backfill in instance.get_backfills(limit=BACKFILLS_LOOKED_AT):
        if backfill.status.value != "REQUESTED":  # the status enum is not public API
            continue
        if not _selects(backfill.asset_selection, annotations):
            continue
        submitted = instance.get_runs(
            filters=dg.RunsFilter(tags={BACKFILL_TAG: backfill.backfill_id}), limit=1
        )
        if not submitted:  # its partitions are known once its run is (judged above)
            return f"backfill {backfill.backfill_id} annotates threads (its run is not submitted)"
    return None


def _selects(selection: Set[dg.AssetKey] | None, key: dg.AssetKey) -> bool:
    return selection is not None and key in selection


def wait_or_refuse(
    context: dg.AssetExecutionContext, annotations: dg.AssetKey, refusal: PredecessorNotAnnotated
) -> dg.RetryRequested | dg.Failure:
    """What the thread step raises when its first thread's predecessor is not annotated: a
    retry later while that thread's annotation is on its way, else the refusal as a failure."""
    on_its_way = annotation_on_its_way(
        context.instance, annotations, refusal.missing, own_run_id=context.run.run_id
    )
    attempt = context.retry_number
    if on_its_way is None:
        return failure_for(refusal)
    if _slot_held_by_the_run(context.instance):
        return _failure(
            refusal,
            f"{on_its_way}, but it cannot start while this run holds the {WRITER_POOL} pool: "
            "set `concurrency: pools: granularity: op` in dagster.yaml so that such a run "
            "waits for it, or launch this range again once it is done",
        )
    if _run_slots_all_waiting(context.instance, own_run_id=context.run.run_id):
        return _failure(
            refusal,
            f"{on_its_way}, but every run the queue lets start (`max_concurrent_runs`) is "
            "waiting like this one, so it cannot start: launch this range again once "
            f"{refusal.missing} is done",
        )
    if attempt >= MOST_ATTEMPTS:
        return _failure(
            refusal,
            f"{on_its_way}, but has not started after {MOST_ATTEMPTS} tries: launch this "
            f"range again once {refusal.missing} is done",
        )
    wait = min(LONGEST_WAIT_SECONDS, FIRST_WAIT_SECONDS * 2**attempt)
    context.log.info(
        f"{refusal.thread} is waiting for {refusal.missing}, which is not annotated yet: "
        f"{on_its_way}. Trying again in {wait} s; meanwhile the {WRITER_POOL} pool's slot is free "
        "for it (nothing was written)."
    )
    return dg.RetryRequested(max_retries=MOST_ATTEMPTS, seconds_to_wait=wait)


def _slot_held_by_the_run(instance: dg.DagsterInstance) -> bool:
    """The instance's pools are claimed by whole runs (`granularity: run`): a run waiting in its
    step would keep the slot the earlier run needs."""
    pools = instance.get_settings("concurrency").get("pools") or {}
    return pools.get("granularity") == "run"


def _run_slots_all_waiting(instance: dg.DagsterInstance, *, own_run_id: str) -> bool:
    """Every run the queue lets start at once (`concurrency: runs: max_concurrent_runs`) has
    started, and each one's step is waiting to be retried, as this one is about to: a queued
    earlier run would never start."""
    runs = instance.get_settings("concurrency").get("runs") or {}
    limit = runs.get("max_concurrent_runs")
    if not isinstance(limit, int) or limit < 1:
        return False
    started = instance.get_runs(filters=dg.RunsFilter(statuses=STARTED))
    if len(started) < limit:
        return False
    return all(run.run_id == own_run_id or _waiting(instance, run.run_id) for run in started)


def _waiting(instance: dg.DagsterInstance, run_id: str) -> bool:
    events = instance.all_logs(run_id, of_type=STEP_EVENTS)
    return bool(events) and events[-1].dagster_event_type == dg.DagsterEventType.STEP_UP_FOR_RETRY


def _failure(refusal: PredecessorNotAnnotated, why: str) -> dg.Failure:
    failure = failure_for(refusal)
    return dg.Failure(
        description=f"{failure.description} ({why})",
        metadata=failure.metadata,
        allow_retries=False,
    )
