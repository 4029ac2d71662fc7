"""A run whose first thread's predecessor another run will annotate waits for it (in process).

`defs/predecessors.py`: the thread step meets the engine's one order check; when a run of the
instance (not yet finished) selects annotation over a range holding the missing thread, the step
asks to be retried later instead of failing, and annotates once its predecessor is done. When no
run will annotate the missing thread the refusal stands (`tests/test_defs_assets.py`). The real
queue, pool and backfills are in `tests/test_dagster_backfill_order.py`.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from terrarium_dagster.defs.assets import scene_batches, thread_annotations, thread_glossary
from terrarium_dagster.defs.partitions import PARTITION_TAG, range_tags, threads_partitions
from terrarium_dagster.defs.predecessors import annotation_on_its_way
from terrarium_dagster.defs.resources import engine_settings
from terrarium_dagster.engine import Engine
from terrarium_dagster.errors import WriterLeaseError
from terrarium_dagster.store.annotator import GlossaryStore

pytest_plugins = ["tests.support.dagster_fixtures"]


def _run_record(
    instance: dg.DagsterInstance,
    resources: dict[str, Any],
    tags: dict[str, str],
    *,
    selection: tuple[dg.AssetKey, ...] = (thread_annotations,),
) -> dg.DagsterRun:
    """A run of the instance that has not started, as the queue holds one (its tags say which
    threads it covers)."""
    job = dg.define_asset_job("annotate", selection=list(selection))
    definitions = dg.Definitions(assets=[thread_glossary], jobs=[job], resources=resources)
    return instance.create_run_for_job(
        definitions.resolve_job_def("annotate"),
        status=dg.DagsterRunStatus.NOT_STARTED,
        tags=tags,
        asset_selection=set(selection),
    )


def _asked_to_wait(instance: dg.DagsterInstance) -> bool:
    """A started run's step asked to be retried later."""
    started = instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
    return any(
        instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_UP_FOR_RETRY)
        for run in started
    )


def test_what_will_annotate_a_missing_thread_is_a_run_not_finished_whose_range_holds_it(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str]
) -> None:
    def on_its_way(missing: str, own: str = "me") -> str | None:
        return annotation_on_its_way(instance, thread_annotations, missing, own_run_id=own)

    assert on_its_way(keys[0]) is None
    later = _run_record(instance, resources, {PARTITION_TAG: keys[2]})
    curation = _run_record(
        instance, resources, range_tags(keys[0], keys[1]), selection=(scene_batches,)
    )
    assert on_its_way(keys[0]) is None  # a later thread; a run that does not annotate
    covering = _run_record(instance, resources, range_tags(keys[0], keys[1]))
    assert covering.run_id in (on_its_way(keys[1]) or "")
    assert "not_started" in (on_its_way(keys[0]) or "")
    assert on_its_way(keys[0], own=covering.run_id) is None  # never the waiting run itself
    instance.report_run_canceled(covering)
    assert on_its_way(keys[0]) is None
    assert on_its_way("t99999-1") is None
    for run in (later, curation):
        instance.report_run_canceled(run)


@pytest.mark.timeout(120)
def test_a_thread_whose_predecessor_a_queued_run_annotates_waits_then_runs_after_it(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str], store_path: Path
) -> None:
    earlier = _run_record(instance, resources, {PARTITION_TAG: keys[0]})
    settings = engine_settings(resources["corpus"], resources["store"], resources["agent"])
    done = threading.Event()

    def the_earlier_run() -> None:
        """Once the later thread's step has asked to wait: annotate the first thread, as the
        earlier run does when it takes the pool's slot."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not _asked_to_wait(instance):
            time.sleep(0.1)
        while time.monotonic() < deadline:
            try:
                with Engine.open(settings, run_id=earlier.run_id) as engine:
                    for _step in engine.sequence.run_threads(engine.threads[:1]):
                        pass
                break
            except WriterLeaseError:  # the waiting step's attempt, closing
                time.sleep(0.1)
        instance.report_run_canceled(earlier)
        done.set()

    helper = threading.Thread(target=the_earlier_run, daemon=True)
    helper.start()
    result = dg.materialize(
        [thread_glossary],
        selection=[scene_batches, thread_annotations],
        instance=instance,
        resources=resources,
        partition_key=keys[1],
        raise_on_error=False,
    )
    helper.join(timeout=60)
    assert done.is_set()
    assert result.success
    kinds = [event.event_type_value for event in result.all_events]
    assert kinds.count("STEP_UP_FOR_RETRY") >= 1
    waited = [
        record.user_message
        for record in instance.all_logs(result.run_id)
        if "is waiting for" in record.user_message
    ]
    assert waited and keys[0] in waited[0] and earlier.run_id in waited[0], waited
    # reported once, after the wait: the scene batches and the annotation of the later thread
    events = result.asset_materializations_for_node("thread_glossary")
    assert [(event.asset_key, event.partition) for event in events] == [
        (scene_batches, keys[1]),
        (thread_annotations, keys[1]),
    ]
    states = _statuses(store_path)
    assert states[keys[0]] in ("annotated", "curated") and states[keys[1]] == "annotated"


def test_with_pools_claimed_by_whole_runs_the_refusal_stands_and_names_the_setting(
    resources: dict[str, Any], keys: list[str], store_path: Path
) -> None:
    """Under `granularity: run` a waiting run would keep the slot its earlier run needs."""
    result, earlier, message = _second_thread_behind_a_queued_run(
        resources, keys, {"concurrency": {"pools": {"granularity": "run"}}}
    )
    assert not result.success
    assert f"cannot be annotated before {keys[0]}" in message
    assert earlier.run_id in message and "granularity: op" in message
    kinds = [event.event_type_value for event in result.all_events]
    assert "STEP_UP_FOR_RETRY" not in kinds
    assert not store_path.exists() or not _statuses(store_path)


def _second_thread_behind_a_queued_run(
    resources: dict[str, Any], keys: list[str], overrides: dict[str, Any]
) -> tuple[dg.ExecuteInProcessResult, dg.DagsterRun, str]:
    """The second thread's annotation materialized on an instance with `overrides`, while a run
    of the first thread waits in the queue (cancelled afterwards): the result, that run, and the
    thread step's failure message ("" when it did not fail)."""
    with dg.instance_for_test(overrides=overrides) as instance:
        instance.add_dynamic_partitions(threads_partitions.name, keys)
        earlier = _run_record(instance, resources, {PARTITION_TAG: keys[0]})
        result = dg.materialize(
            [thread_glossary],
            selection=[thread_annotations],
            instance=instance,
            resources=resources,
            partition_key=keys[1],
            raise_on_error=False,
        )
        instance.report_run_canceled(earlier)
    failure = result.failure_data_for_node("thread_glossary")
    return result, earlier, failure.error.message if failure and failure.error else ""


def _statuses(store_path: Path) -> dict[str, str]:
    with GlossaryStore(store_path) as store:
        return {state.thread_key: state.status for state in store.progress.thread_states()}


def test_a_run_that_would_wait_in_the_last_free_run_slot_for_a_queued_run_fails_at_once(
    resources: dict[str, Any], keys: list[str]
) -> None:
    """Every run the queue lets start is this one, waiting: the earlier run could never start."""
    result, earlier, message = _second_thread_behind_a_queued_run(
        resources, keys, {"concurrency": {"runs": {"max_concurrent_runs": 1}}}
    )
    assert not result.success
    assert earlier.run_id in message and "max_concurrent_runs" in message, message
    assert "STEP_UP_FOR_RETRY" not in [event.event_type_value for event in result.all_events]
