"""Sensors: discover new corpus threads; evaluate the assets' automation conditions.

Discovery stays a sensor (Declarative Automation cannot add dynamic partitions); curation after
annotation and export after curation are automation conditions on the assets, evaluated by
`default_automation_condition_sensor`. Both sensors run by default. Their minimum interval is
`TERRARIUM_SENSOR_INTERVAL` seconds when that is set (tests and demos use a second or two), else a
minute for discovery and 30 s for automation.
"""

from __future__ import annotations

import os

import dagster as dg

from terrarium_dagster.defs.assets import curated_glossary, thread_annotations
from terrarium_dagster.defs.living_sensors import grown_last_thread
from terrarium_dagster.defs.partitions import (
    PartitionOrderError,
    foreign_keys,
    new_thread_keys,
    threads_partitions,
)
from terrarium_dagster.defs.resources import CorpusResource, StoreResource
from terrarium_dagster.defs.schedules import annotation_in_progress
from terrarium_dagster.errors import InputError

SENSOR_INTERVAL_ENV = "TERRARIUM_SENSOR_INTERVAL"
# Follow-up runs (curation, export) jump the queue: a thread is curated before more are annotated.
FOLLOW_UP_PRIORITY = "1"
# The name Dagster gives the automation sensor it would create (stopped) if this one did not exist.
DEFAULT_AUTOMATION_SENSOR = "default_automation_condition_sensor"


def sensor_interval(default: int) -> int:
    """`TERRARIUM_SENSOR_INTERVAL` (whole seconds, at least 1) when set, else `default`."""
    value = os.environ.get(SENSOR_INTERVAL_ENV, "").strip()
    if not value:
        return default
    try:
        seconds = int(value)
    except ValueError:
        raise ValueError(f"{SENSOR_INTERVAL_ENV} must be whole seconds, not {value!r}") from None
    if seconds < 1:
        raise ValueError(f"{SENSOR_INTERVAL_ENV} must be at least 1, not {seconds}")
    return seconds


@dg.sensor(
    name="thread_discovery_sensor",
    minimum_interval_seconds=sensor_interval(60),
    default_status=dg.DefaultSensorStatus.RUNNING,
    target=[thread_annotations, curated_glossary],
    description=(
        "Adds a `threads` partition for every corpus thread not yet known, in story order; "
        "requests the last annotated thread again when story posts were added to it."
    ),
)
def thread_discovery_sensor(
    context: dg.SensorEvaluationContext, corpus: CorpusResource, store: StoreResource
) -> dg.SensorResult | dg.SkipReason:
    try:
        with corpus.open() as reader:
            discovered = [thread.key for thread in reader.threads()]
    except InputError as exc:  # a broken corpus or a bad setting: say so, change nothing
        return dg.SkipReason(f"corpus unreadable: {exc}")
    existing = context.instance.get_dynamic_partitions(threads_partitions.name)
    foreign = foreign_keys(existing, discovered)
    if foreign:
        context.log.warning(
            f"ignoring {len(foreign)} threads partition(s) that name no corpus thread: "
            f"{', '.join(foreign[:5])}{' …' if len(foreign) > 5 else ''} (delete them in the UI: "
            "Assets → thread_annotations → Partitions, or with "
            "`dagster instance` tools)"
        )
    try:
        new_keys = new_thread_keys(existing, discovered)
    except PartitionOrderError as exc:
        return dg.SkipReason(str(exc))
    run_requests = _grown_thread_requests(context, corpus, store)
    if not new_keys and not run_requests:
        return dg.SkipReason(f"no new threads ({len(existing) - len(foreign)} known)")
    partitions = []
    if new_keys:
        context.log.info(
            f"adding {len(new_keys)} thread partitions: {new_keys[0]} .. {new_keys[-1]}"
        )
        partitions = [threads_partitions.build_add_request(new_keys)]
    return dg.SensorResult(run_requests=run_requests, dynamic_partitions_requests=partitions)


def _grown_thread_requests(
    context: dg.SensorEvaluationContext, corpus: CorpusResource, store: StoreResource
) -> list[dg.RunRequest]:
    """The living quest: the last annotated thread's partition again, once per growth seen,
    when story posts were added to it (not while annotation is queued or running)."""
    grown = grown_last_thread(store, corpus)
    if grown is None:
        return []
    busy = annotation_in_progress(context.instance)
    if busy:
        context.log.info(f"{grown.key} has {grown.new_posts} new story posts; waiting: {busy}")
        return []
    context.log.info(f"{grown.key} has {grown.new_posts} new story posts: annotating them")
    return [
        dg.RunRequest(
            partition_key=grown.key,
            asset_selection=[thread_annotations, curated_glossary],
            run_key=grown.run_key,
        )
    ]


# Declarative Automation's sensor, running by default (Dagster's own default one is stopped until
# switched on). It evaluates the thread assets' automation conditions: curation follows an
# annotation, the export follows a curation (see `FOLLOWS_UPSTREAM` in assets.py). Its runs jump
# the queue, so a thread is curated before more threads are annotated.
automation_condition_sensor = dg.AutomationConditionSensorDefinition(
    DEFAULT_AUTOMATION_SENSOR,
    target=dg.AssetSelection.all(),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=sensor_interval(30),
    run_tags={"dagster/priority": FOLLOW_UP_PRIORITY},
    description=(
        "Declarative Automation of the thread assets: curates a thread whose annotation "
        "materialized without its curation, exports a thread whose curation materialized "
        "without its export (one backfill per tick; never what a run of the whole chain did)."
    ),
)
