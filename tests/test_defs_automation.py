"""What starts runs: the assets' automation conditions and the incremental schedule, for real.

Automation conditions are evaluated with `dagster.evaluate_automation_conditions` on a test
instance, tick after tick (the cursor carried along), as the automation sensor evaluates them; the
schedule's requests are executed with `dagster.materialize` and the same tags, so a request that
Dagster would launch is shown to do what it says.
"""

from __future__ import annotations

import shutil
import sqlite3
import time
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from dagster._core.execution.backfill import PartitionBackfill
from dagster._core.test_utils import create_run_for_test

from terrarium_dagster.definitions import defs
from terrarium_dagster.defs.asset_checks import GLOSSARY_CHECKS
from terrarium_dagster.defs.assets import (
    curated_glossary,
    glossary_export,
    scene_batches,
    thread_annotations,
    thread_glossary,
)
from terrarium_dagster.defs.partitions import RANGE_END_TAG, RANGE_START_TAG, range_tags
from terrarium_dagster.defs.resources import CorpusResource
from terrarium_dagster.defs.schedules import (
    annotation_in_progress,
    incremental_annotation_schedule,
    next_unannotated_range,
)
from terrarium_dagster.defs.sensors import (
    DEFAULT_AUTOMATION_SENSOR,
    FOLLOW_UP_PRIORITY,
    SENSOR_INTERVAL_ENV,
    sensor_interval,
    thread_discovery_sensor,
)
from terrarium_dagster.engine import DONE
from terrarium_dagster.store.annotator import GlossaryStore

ALL = [thread_glossary]


def for_asset(result: dg.ExecuteInProcessResult, asset: dg.AssetKey) -> list[str | None]:
    """The partitions `asset` materialized in `result`, in order."""
    return [
        event.partition
        for event in result.asset_materializations_for_node("thread_glossary")
        if event.asset_key == asset
    ]


pytest_plugins = ["tests.support.dagster_fixtures"]


def execute(
    instance: dg.DagsterInstance, resources: dict[str, Any], request: dg.RunRequest
) -> dg.ExecuteInProcessResult:
    """Run what a sensor or schedule asked for, with the request's selection and tags."""
    tags = dict(request.tags)
    return dg.materialize(
        ALL,
        selection=list(request.asset_selection or []),
        instance=instance,
        resources=resources,
        partition_key=request.partition_key,
        tags=tags,
        raise_on_error=False,
    )


def annotate(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str]
) -> dg.ExecuteInProcessResult:
    result = dg.materialize(
        ALL,
        selection=[thread_annotations],
        instance=instance,
        resources=resources,
        partition_key=keys[0] if len(keys) == 1 else None,
        tags=range_tags(keys[0], keys[-1]) if len(keys) > 1 else None,
    )
    assert result.success
    return result


def requested_keys(request: dg.RunRequest, keys: list[str]) -> list[str]:
    if request.partition_key is not None:
        return [request.partition_key]
    start, end = request.tags[RANGE_START_TAG], request.tags[RANGE_END_TAG]
    return keys[keys.index(start) : keys.index(end) + 1]


def test_definitions_hold_every_asset_check_sensor_schedule_and_resource() -> None:
    loaded = defs()
    repo = loaded.get_repository_def()
    assets = {key.to_user_string() for key in repo.asset_graph.get_all_asset_keys()}
    assert {"scene_batches", "thread_annotations", "curated_glossary", "glossary_export"} <= assets
    checks = {key.name for key in repo.asset_graph.asset_check_keys}
    assert {"entries_have_sources", "names_are_unique", "references_resolve"} <= checks
    sensors = ("thread_discovery_sensor", DEFAULT_AUTOMATION_SENSOR, "orphaned_run_sensor")
    for name in sensors:
        assert repo.get_sensor_def(name).default_status == dg.DefaultSensorStatus.RUNNING
    assert {sensor.name for sensor in repo.sensor_defs} == set(sensors)
    automation = repo.get_sensor_def(DEFAULT_AUTOMATION_SENSOR)
    assert isinstance(automation, dg.AutomationConditionSensorDefinition)
    assert automation.run_tags == {"dagster/priority": FOLLOW_UP_PRIORITY}
    # Curation follows annotation and the export follows curation; annotation is asked for.
    graph = repo.asset_graph
    assert graph.get(thread_annotations).automation_condition is None
    for key in (curated_glossary, glossary_export):
        assert graph.get(key).automation_condition is not None, key
    assert repo.get_schedule_def("incremental_annotation_schedule") is not None
    assert {"corpus", "store", "agent"} <= set(loaded.resources or {})


def test_next_unannotated_range_starts_at_the_first_thread_not_done() -> None:
    keys = ["a", "b", "c", "d"]
    assert next_unannotated_range(keys, set()) == keys
    assert next_unannotated_range(keys, {"a", "b"}) == ["c", "d"]
    assert next_unannotated_range(keys, {"a", "c"}) == ["b"]
    assert next_unannotated_range(keys, set(keys)) == []


def test_sensor_interval_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SENSOR_INTERVAL_ENV, raising=False)
    assert sensor_interval(30) == 30
    monkeypatch.setenv(SENSOR_INTERVAL_ENV, "2")
    assert sensor_interval(30) == 2
    monkeypatch.setenv(SENSOR_INTERVAL_ENV, "0")
    with pytest.raises(ValueError, match=SENSOR_INTERVAL_ENV):
        sensor_interval(30)


def evaluate(
    instance: dg.DagsterInstance, previous: dg.EvaluateAutomationConditionsResult | None = None
) -> dg.EvaluateAutomationConditionsResult:
    """One tick of the automation sensor over the code location's definitions."""
    return dg.evaluate_automation_conditions(
        defs=defs(), instance=instance, cursor=previous.cursor if previous else None
    )


def requested(result: dg.EvaluateAutomationConditionsResult) -> dict[str, set[str | None]]:
    return {
        key.to_user_string(): set(result.get_requested_partitions(key))
        for key in (thread_annotations, curated_glossary, glossary_export)
        if result.get_num_requested(key)
    }


def execute_requested(
    instance: dg.DagsterInstance,
    resources: dict[str, Any],
    result: dg.EvaluateAutomationConditionsResult,
    keys: list[str],
) -> dg.ExecuteInProcessResult:
    """Run what a tick requested as the backfill Dagster makes of it: one run over the range."""
    follow_ups = (curated_glossary, glossary_export)
    selection = [key for key in follow_ups if result.get_num_requested(key)]
    partitions = sorted(
        set().union(*(result.get_requested_partitions(key) for key in selection)),
        key=keys.index,
    )
    return dg.materialize(
        ALL,
        selection=selection,
        instance=instance,
        resources=resources,
        partition_key=partitions[0] if len(partitions) == 1 else None,
        tags=range_tags(partitions[0], partitions[-1]) if len(partitions) > 1 else None,
    )


def test_nothing_is_requested_until_a_thread_is_annotated(
    instance: dg.DagsterInstance, keys: list[str]
) -> None:
    first = evaluate(instance)
    assert first.total_requested == 0
    assert evaluate(instance, first).total_requested == 0, "new partitions alone start nothing"


def test_an_annotation_alone_is_followed_by_its_curation_and_export_once(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str], store_path: Path
) -> None:
    tick = evaluate(instance)
    annotate(instance, resources, keys[:2])
    tick = evaluate(instance, tick)
    # Both follow-ups in one tick (one backfill: curation, then export, thread by thread).
    assert requested(tick) == {
        "curated_glossary": set(keys[:2]),
        "glossary_export": set(keys[:2]),
    }
    # Requested once: the next tick, before anything ran, asks for nothing again.
    again = evaluate(instance, tick)
    assert again.total_requested == 0

    # What the tick asked for curates and exports both threads and runs the glossary checks.
    result = execute_requested(instance, resources, tick, keys)
    tick = again
    assert for_asset(result, curated_glossary) == keys[:2]
    assert for_asset(result, glossary_export) == keys[:2]
    assert {item.check_name for item in result.get_asset_check_evaluations()} == {
        item.name for item in GLOSSARY_CHECKS
    }
    with GlossaryStore(store_path) as store:
        statuses = {s.thread_key: s.status for s in store.progress.thread_states()}
    assert [statuses[key] for key in keys[:2]] == ["curated", "curated"]
    for key in keys[:2]:
        assert (store_path.parent / "exports" / key / "glossary.json").is_file()
    # Their materializations start nothing more.
    tick = evaluate(instance, tick)
    assert tick.total_requested == 0

    # A later annotation gets its own follow-ups, for that thread only.
    annotate(instance, resources, keys[2:3])
    tick = evaluate(instance, tick)
    assert requested(tick) == {"curated_glossary": {keys[2]}, "glossary_export": {keys[2]}}
    assert execute_requested(instance, resources, tick, keys).success


def test_a_run_of_the_whole_chain_is_not_followed_up(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str]
) -> None:
    tick = evaluate(instance)
    # "Materialize all" over two threads: annotated, curated and exported in that one run.
    done = dg.materialize(
        ALL,
        selection=[scene_batches, thread_annotations, curated_glossary, glossary_export],
        instance=instance,
        resources=resources,
        tags=range_tags(keys[0], keys[1]),
    )
    assert done.success
    tick = evaluate(instance, tick)
    assert tick.total_requested == 0, requested(tick)
    # Annotation and curation together: only the export follows.
    done = dg.materialize(
        ALL,
        selection=[thread_annotations, curated_glossary],
        instance=instance,
        resources=resources,
        partition_key=keys[2],
    )
    assert done.success
    tick = evaluate(instance, tick)
    assert requested(tick) == {"glossary_export": {keys[2]}}


def test_recurating_a_thread_alone_is_followed_by_its_export(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str]
) -> None:
    annotate(instance, resources, keys[:2])
    tick = evaluate(instance)  # the initial evaluation: what is already there is handled
    done = dg.materialize(
        ALL,
        selection=[curated_glossary],
        instance=instance,
        resources=resources,
        partition_key=keys[0],
    )
    assert done.success
    tick = evaluate(instance, tick)
    assert requested(tick) == {"glossary_export": {keys[0]}}
    assert execute_requested(instance, resources, tick, keys).success
    assert evaluate(instance, tick).total_requested == 0


def schedule_context(
    instance: dg.DagsterInstance, resources: dict[str, Any]
) -> dg.ScheduleEvaluationContext:
    return dg.build_schedule_context(
        instance=instance,
        resources={"store": resources["store"], "corpus": resources["corpus"]},
        scheduled_execution_time=datetime(2026, 1, 1, 12, tzinfo=UTC),
    )


def test_schedule_requests_the_next_unannotated_range_and_it_runs(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str], store_path: Path
) -> None:
    annotate(instance, resources, keys[:1])
    with schedule_context(instance, resources) as context:
        request = incremental_annotation_schedule(context)
    assert isinstance(request, dg.RunRequest)
    assert requested_keys(request, keys) == keys[1:]
    assert list(request.asset_selection or []) == [thread_annotations, curated_glossary]

    result = execute(instance, resources, request)
    assert result.success
    assert for_asset(result, thread_annotations) == (keys[1:])
    with GlossaryStore(store_path) as store:
        assert all(state.status in DONE for state in store.progress.thread_states())

    with schedule_context(instance, resources) as context:
        skipped = incremental_annotation_schedule(context)
    assert isinstance(skipped, dg.SkipReason)
    assert f"all {len(keys)} threads are annotated" in (skipped.skip_message or "")


def test_schedule_skips_while_an_annotation_run_is_in_progress(
    instance: dg.DagsterInstance, resources: dict[str, Any]
) -> None:
    assert annotation_in_progress(instance) is None
    running = create_run_for_test(
        instance,
        job_name="__ASSET_JOB",
        status=dg.DagsterRunStatus.STARTED,
        asset_selection=frozenset({thread_annotations}),
    )
    with schedule_context(instance, resources) as context:
        skipped = incremental_annotation_schedule(context)
    assert isinstance(skipped, dg.SkipReason)
    assert running.run_id in (skipped.skip_message or "")


def test_schedule_skips_while_an_annotation_backfill_is_requested(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str]
) -> None:
    asset_graph = defs().get_repository_def().asset_graph
    backfill = PartitionBackfill.from_asset_partitions(
        backfill_id="queuedfill",
        asset_graph=asset_graph,
        partition_names=keys[:2],
        asset_selection=[thread_annotations],
        backfill_timestamp=time.time(),
        tags={},
        dynamic_partitions_store=instance,
        all_partitions=False,
        title=None,
        description=None,
        run_config=None,
    )
    instance.add_backfill(backfill)
    with schedule_context(instance, resources) as context:
        skipped = incremental_annotation_schedule(context)
    assert isinstance(skipped, dg.SkipReason)
    assert "queuedfill" in (skipped.skip_message or "")


def test_schedule_ignores_runs_that_do_not_annotate(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str]
) -> None:
    create_run_for_test(
        instance,
        job_name="__ASSET_JOB",
        status=dg.DagsterRunStatus.STARTED,
        asset_selection=frozenset({glossary_export}),
    )
    with schedule_context(instance, resources) as context:
        request = incremental_annotation_schedule(context)
    assert isinstance(request, dg.RunRequest)
    assert requested_keys(request, keys) == keys


def test_a_last_thread_that_grew_is_requested_by_the_sensor_and_the_schedule_and_runs(
    instance: dg.DagsterInstance,
    resources: dict[str, Any],
    keys: list[str],
    store_path: Path,
    sample_db: Path,
    tmp_path: Path,
) -> None:
    """The living quest in Dagster: story posts appended to the last annotated thread make the
    discovery sensor and the schedule request that partition again (once per growth), and the
    run annotates them as new scenes of it."""
    corpus = tmp_path / "quest.db"
    shutil.copy(sample_db, corpus)
    resources = {**resources, "corpus": CorpusResource(path=str(corpus))}
    annotate(instance, resources, keys)
    with GlossaryStore(store_path, read_only=True) as store:
        before = store.progress.thread_states()[-1]
    with closing(sqlite3.connect(corpus)) as conn, conn:
        (last_time,) = conn.execute(
            "SELECT max(time) FROM post WHERE thread_id = ?", (before.thread_id,)
        ).fetchone()
        new_id = conn.execute("SELECT max(id) FROM post").fetchone()[0] + 1
        conn.execute(
            "INSERT INTO post (thread_id, id, name, time, body) VALUES (?, ?, 'QM', ?, ?)",
            (before.thread_id, new_id, last_time + 60, "Warden Ysolde Varrick lit the Gloamford."),
        )
        conn.execute("INSERT INTO tag (post_id, name) VALUES (?, 'qm_post')", (new_id,))

    sensed = thread_discovery_sensor(
        dg.build_sensor_context(instance=instance, resources=resources)
    )
    assert isinstance(sensed, dg.SensorResult)
    (request,) = sensed.run_requests or []
    assert request.partition_key == keys[-1] and "grown" in (request.run_key or "")
    with schedule_context(instance, resources) as context:
        scheduled = incremental_annotation_schedule(context)
    assert isinstance(scheduled, dg.RunRequest)
    assert scheduled.partition_key == keys[-1] and scheduled.run_key == request.run_key

    assert execute(instance, resources, request).success
    with GlossaryStore(store_path, read_only=True) as store:
        after = store.progress.thread_states()[-1]
        cited = store.conn.execute(
            "SELECT count(*) FROM provenance WHERE post_id = ?", (new_id,)
        ).fetchone()[0]
    assert after.status == "curated" and after.scenes_done == before.scenes_done + 1
    assert cited > 0
    again = thread_discovery_sensor(dg.build_sensor_context(instance=instance, resources=resources))
    assert isinstance(again, dg.SkipReason)
