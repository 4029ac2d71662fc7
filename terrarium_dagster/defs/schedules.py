"""The incremental schedule: annotate the next contiguous range of threads not yet annotated.

It skips a tick while annotation is queued or running (a run, or a backfill not finished), so a
slow run is never doubled. Stopped by default: starting it commits the model to hours of work.
The cron expression is `TERRARIUM_SCHEDULE_CRON` when set, else hourly.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence

import dagster as dg

from terrarium_dagster.defs.assets import curated_glossary, thread_annotations
from terrarium_dagster.defs.living_sensors import grown_last_thread
from terrarium_dagster.defs.partitions import range_run_request, threads_partitions
from terrarium_dagster.defs.predecessors import BACKFILLS_LOOKED_AT, IN_PROGRESS
from terrarium_dagster.defs.resources import CorpusResource, StoreResource
from terrarium_dagster.engine import DONE
from terrarium_dagster.errors import InputError

SCHEDULE_CRON_ENV = "TERRARIUM_SCHEDULE_CRON"


def next_unannotated_range(keys: Sequence[str], done: Collection[str]) -> list[str]:
    """From the first key not in `done`, every following key up to the next done one (or end)."""
    start = next((index for index, key in enumerate(keys) if key not in done), None)
    if start is None:
        return []
    stop = start
    while stop + 1 < len(keys) and keys[stop + 1] not in done:
        stop += 1
    return list(keys[start : stop + 1])


def annotation_in_progress(instance: dg.DagsterInstance) -> str | None:
    """Why annotation counts as busy (a run or backfill that includes it), or None."""
    key = thread_annotations
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=IN_PROGRESS)):
        if run.asset_selection is None or key in run.asset_selection:
            return f"run {run.run_id} is {run.status.value.lower()} and annotates threads"
    for backfill in instance.get_backfills(limit=BACKFILLS_LOOKED_AT):
        if backfill.status.value != "REQUESTED":  # the status enum is not public API
            continue
        if backfill.asset_selection is None or key in backfill.asset_selection:
            return f"backfill {backfill.backfill_id} is in progress and annotates threads"
    return None


@dg.schedule(
    name="incremental_annotation_schedule",
    cron_schedule=os.environ.get(SCHEDULE_CRON_ENV) or "0 * * * *",
    target=[thread_annotations, curated_glossary],
    default_status=dg.DefaultScheduleStatus.STOPPED,
    description=(
        "Annotates and curates the next contiguous range of threads not annotated yet, in one run "
        "(or the last thread again when story posts were added to it); skips while annotation "
        "is queued or running."
    ),
)
def incremental_annotation_schedule(
    context: dg.ScheduleEvaluationContext, store: StoreResource, corpus: CorpusResource
) -> dg.RunRequest | dg.SkipReason:
    busy = annotation_in_progress(context.instance)
    if busy:
        return dg.SkipReason(busy)
    keys = context.instance.get_dynamic_partitions(threads_partitions.name)
    if not keys:
        return dg.SkipReason("no threads known yet (thread_discovery_sensor adds them)")
    try:
        with store.read() as glossary:
            states = glossary.progress.thread_states()
    except InputError:  # no store yet: nothing is annotated
        states = []
    done = {state.thread_key for state in states if state.status in DONE}
    pending = next_unannotated_range(keys, done)
    if not pending:
        grown = grown_last_thread(store, corpus)  # the living quest: its last thread grew
        if grown is not None:
            return dg.RunRequest(
                partition_key=grown.key,
                asset_selection=[thread_annotations, curated_glossary],
                run_key=grown.run_key,
            )
        return dg.SkipReason(f"all {len(keys)} threads are annotated")
    return range_run_request(
        pending,
        asset_selection=[thread_annotations, curated_glossary],
        run_key=f"annotate {pending[0]}..{pending[-1]} at {context.scheduled_execution_time}",
    )
