"""Sensors: discover new corpus threads; curate each thread once annotated, export once curated.

All three run by default. Their minimum interval is `TERRARIUM_SENSOR_INTERVAL` seconds when that is
set (tests and demos use a second or two), else a minute for discovery and 30 s for the others.
"""

from __future__ import annotations

import os

import dagster as dg

from terrarium_dagster.defs.assets import curated_glossary, glossary_export, thread_annotations
from terrarium_dagster.defs.partitions import (
    PartitionOrderError,
    contiguous_ranges,
    foreign_keys,
    new_thread_keys,
    range_run_request,
    threads_partitions,
)
from terrarium_dagster.defs.resources import CorpusResource
from terrarium_dagster.errors import InputError

SENSOR_INTERVAL_ENV = "TERRARIUM_SENSOR_INTERVAL"
# Curation runs jump the queue: a thread is curated before more threads are annotated.
CURATION_PRIORITY = "1"
MATERIALIZATIONS_PER_TICK = 500


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
    description="Adds a `threads` partition for every corpus thread not yet known, in story order.",
)
def thread_discovery_sensor(
    context: dg.SensorEvaluationContext, corpus: CorpusResource
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
            "`dagster instance` tools; see the README)"
        )
    try:
        new_keys = new_thread_keys(existing, discovered)
    except PartitionOrderError as exc:
        return dg.SkipReason(str(exc))
    if not new_keys:
        return dg.SkipReason(f"no new threads ({len(existing) - len(foreign)} known)")
    context.log.info(f"adding {len(new_keys)} thread partitions: {new_keys[0]} .. {new_keys[-1]}")
    return dg.SensorResult(
        dynamic_partitions_requests=[threads_partitions.build_add_request(new_keys)]
    )


@dg.sensor(
    name="curation_sensor",
    target=[curated_glossary],
    minimum_interval_seconds=sensor_interval(30),
    default_status=dg.DefaultSensorStatus.RUNNING,
    description=(
        "When threads' annotations materialize, requests one run per contiguous range of them "
        "that curates those threads (ahead of queued annotation runs)."
    ),
)
def curation_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
    return follow_materializations(
        context,
        upstream=thread_annotations,
        target=curated_glossary,
        tags={"dagster/priority": CURATION_PRIORITY},
    )


@dg.sensor(
    name="export_sensor",
    target=[glossary_export],
    minimum_interval_seconds=sensor_interval(30),
    default_status=dg.DefaultSensorStatus.RUNNING,
    description=(
        "When threads' curations materialize, requests one run per contiguous range of them that "
        "exports the glossary as of each of those threads."
    ),
)
def export_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
    return follow_materializations(context, upstream=curated_glossary, target=glossary_export)


def follow_materializations(
    context: dg.SensorEvaluationContext,
    *,
    upstream: dg.AssetKey,
    target: dg.AssetKey,
    tags: dict[str, str] | None = None,
) -> dg.SensorResult | dg.SkipReason:
    """Request `target` for the threads whose `upstream` materialized since the cursor.

    One run per contiguous range of those threads (in story order); the cursor is the storage id
    of the last materialization seen, so each is followed once. A run gets its own asset step
    (rather than sharing a run with the upstream asset): the assets yield one materialization per
    thread and no output, so a downstream step in the same run would be skipped.
    """
    after = int(context.cursor) if context.cursor else None
    records = context.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=upstream, after_storage_id=after),
        limit=MATERIALIZATIONS_PER_TICK,
        ascending=True,
    ).records
    if not records:
        return dg.SkipReason(f"no new {upstream.to_user_string()} materializations")
    last_seen = max(record.storage_id for record in records)
    # A run that selected the target too (a "Materialize all", a backfill of the chain) does it
    # thread by thread itself: follow only what such a run did not (and will not) do.
    selections: dict[str, frozenset[dg.AssetKey]] = {}

    def done_by_its_run(record: dg.EventLogRecord) -> bool:
        if record.run_id not in selections:
            run = context.instance.get_run_by_id(record.run_id)
            selections[record.run_id] = frozenset((run.asset_selection if run else None) or ())
        if target in selections[record.run_id]:
            return True
        later = context.instance.fetch_materializations(
            dg.AssetRecordsFilter(
                asset_key=target,
                asset_partitions=[record.partition_key] if record.partition_key else None,
                after_storage_id=record.storage_id,
            ),
            limit=MATERIALIZATIONS_PER_TICK,
        ).records
        return any(item.run_id == record.run_id for item in later)

    threads = {
        record.partition_key
        for record in records
        if record.partition_key and not done_by_its_run(record)
    }
    if not threads:
        return dg.SensorResult(run_requests=[], cursor=str(last_seen))
    ordered = context.instance.get_dynamic_partitions(threads_partitions.name)
    name = target.to_user_string()
    requests = [
        range_run_request(
            keys,
            asset_selection=[target],
            run_key=f"{name} {keys[0]}..{keys[-1]} after {last_seen}",
            tags=tags,
        )
        for keys in contiguous_ranges(ordered, threads)
    ]
    return dg.SensorResult(run_requests=requests, cursor=str(last_seen))
