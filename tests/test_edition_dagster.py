"""`glossary_edition` through `dagster.materialize`: a thread range annotated, curated and
given its edition in one run, one edition materialization per thread with its metadata, both
checks evaluated and passing; asked again, nothing is rewritten; before its curation it fails
naming the thread."""

from __future__ import annotations

from typing import Any

import dagster as dg

from terrarium_dagster.defs.assets import curated_glossary, thread_annotations, thread_glossary
from terrarium_dagster.defs.edition import (
    CITATIONS_CHECK,
    NOTHING_LATER_CHECK,
    glossary_edition,
)
from terrarium_dagster.defs.partitions import range_tags

pytest_plugins = ["tests.support.dagster_fixtures"]


def _run(
    instance: dg.DagsterInstance, resources: dict[str, Any], assets: list[Any], keys: list[str]
) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [thread_glossary],
        selection=assets,
        instance=instance,
        resources=resources,
        partition_key=keys[0] if len(keys) == 1 else None,
        tags=range_tags(keys[0], keys[-1]) if len(keys) > 1 else None,
        raise_on_error=False,
    )


def _edition_log(instance: dg.DagsterInstance, run_id: str) -> list[tuple[str, float]]:
    """The run's edition lines (the step's own log messages) with their times."""
    return [
        (record.user_message, record.timestamp)
        for record in instance.all_logs(run_id)
        if record.dagster_event is None
        and (" rewritten (" in record.user_message or "already written" in record.user_message)
    ]


def test_an_edition_range_materializes_per_thread_with_metadata_and_passing_checks(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str]
) -> None:
    chosen = keys[:3]
    # one run, as "Materialize all" launches it: annotation and curation, then the edition
    result = _run(
        instance, resources, [thread_annotations, curated_glossary, glossary_edition], chosen
    )
    assert result.success
    events = [
        e
        for e in result.asset_materializations_for_node("thread_glossary")
        if e.asset_key == glossary_edition
    ]
    assert [e.partition for e in events] == chosen
    for event in events:
        meta = event.metadata
        assert meta["entries_rewritten"].value > 0
        assert meta["tokens"].value > 0 and meta["tokens_per_entry"].value > 0
        assert meta["requests_in_flight_peak"].value >= 1
        assert meta["already_done"].value is False
        rows = meta["rewritten_entries"].value.records
        assert rows and all(r.data["term"] and r.data["lead"] for r in rows)
    checks = {
        c.check_name: c
        for c in result.get_asset_check_evaluations()
        if c.asset_key == glossary_edition
    }
    assert set(checks) == {CITATIONS_CHECK, NOTHING_LATER_CHECK}
    assert all(c.passed and c.asset_key == glossary_edition for c in checks.values())
    # each thread's line is in the run's log as its edition commits, not once all are written
    said = _edition_log(instance, result.run_id)
    assert [line.split(":")[0] for line, _ in said] == chosen
    # worded as the terminal words it (`edition.writer.edition_line`)
    assert all(" rewritten (" in line and " kept), " in line for line, _ in said)
    first_materialized = min(
        record.timestamp
        for record in instance.all_logs(result.run_id)
        if record.dagster_event is not None
        and record.dagster_event.is_step_materialization
        and record.dagster_event.asset_key == glossary_edition
    )
    assert all(when < first_materialized for _, when in said)

    before = _run(instance, resources, [glossary_edition], [keys[3]])
    assert not before.success  # thread 4 is not curated: refused, nothing written
    failure = before.failure_data_for_node("thread_glossary")
    assert failure is not None and failure.error is not None
    assert keys[3] in failure.error.message and "curated" in failure.error.message

    again = _run(instance, resources, [glossary_edition], chosen[1:2])
    assert again.success
    (event,) = [
        e
        for e in again.asset_materializations_for_node("thread_glossary")
        if e.asset_key == glossary_edition
    ]
    assert event.metadata["already_done"].value is True
    assert [line for line, _ in _edition_log(instance, again.run_id)] == [
        f"{key}: already written (nothing sent)" for key in chosen[:2]
    ]  # every thread up to the run's is looked at, in story order
