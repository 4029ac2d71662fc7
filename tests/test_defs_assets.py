"""The thread assets through `dagster.materialize`: order, rewind, curation, export, checks.

Every test runs the real engine with the offline backend on the bundled sample quest, against a
store in a temporary folder, in a temporary Dagster instance.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from terrarium_dagster.config import load_settings
from terrarium_dagster.defs.asset_checks import GLOSSARY_CHECKS
from terrarium_dagster.defs.assets import (
    LLM_POOL,
    THREAD_ASSETS,
    curated_glossary,
    glossary_edition,
    glossary_export,
    scene_batches,
    thread_annotations,
    thread_glossary,
)
from terrarium_dagster.defs.edition import edition_check_specs
from terrarium_dagster.defs.failures import fail_on, failure_for
from terrarium_dagster.defs.partitions import range_tags, threads_partitions
from terrarium_dagster.defs.resources import (
    AgentResource,
    CorpusResource,
    StoreResource,
    engine_settings,
)
from terrarium_dagster.engine import DONE, Engine
from terrarium_dagster.errors import ConfigError, InputError, OrderError
from terrarium_dagster.exports.files import MANIFEST_FILE
from terrarium_dagster.store.annotator import Actor, GlossaryStore

STEP = "thread_glossary"


pytest_plugins = ["tests.support.dagster_fixtures"]


def run(
    instance: dg.DagsterInstance,
    resources: dict[str, Any],
    asset: dg.AssetKey | Sequence[dg.AssetKey],
    keys: Sequence[str],
    *,
    rewind: bool | None = None,
) -> dg.ExecuteInProcessResult:
    """One run of `asset` (or several) over `keys`, as a single-run backfill would launch it."""
    run_config = {"ops": {STEP: {"config": {"rewind": rewind}}}} if rewind is not None else None
    return dg.materialize(
        [thread_glossary],
        selection=[asset] if isinstance(asset, dg.AssetKey) else list(asset),
        instance=instance,
        resources=resources,
        partition_key=keys[0] if len(keys) == 1 else None,
        tags=range_tags(keys[0], keys[-1]) if len(keys) > 1 else None,
        run_config=run_config,
        raise_on_error=False,
    )


def materialized(result: dg.ExecuteInProcessResult, asset: str) -> list[dg.AssetMaterialization]:
    return [
        event
        for event in result.asset_materializations_for_node(STEP)
        if event.asset_key == dg.AssetKey(asset)
    ]


def failure_message(result: dg.ExecuteInProcessResult, asset: str) -> str:
    failure = result.failure_data_for_node(STEP)
    assert failure is not None, f"{asset} did not fail"
    return failure.error.message if failure.error else ""


def statuses(store_path: Path) -> dict[str, str]:
    with GlossaryStore(store_path) as store:
        return {state.thread_key: state.status for state in store.progress.thread_states()}


def test_asset_definitions_declare_partitions_single_run_backfills_and_the_llm_pool() -> None:
    assert set(thread_glossary.keys) == set(THREAD_ASSETS)
    assert thread_glossary.partitions_def == threads_partitions
    assert thread_glossary.backfill_policy == dg.BackfillPolicy.single_run()
    assert thread_glossary.can_subset
    assert thread_glossary.op.pool == LLM_POOL
    # Annotation needs no scene_batches materialization (no "Unsynced" from a needless dep).
    assert scene_batches not in thread_glossary.asset_deps[thread_annotations]
    assert thread_glossary.asset_deps[curated_glossary] == {thread_annotations}


def test_annotating_a_range_yields_one_materialization_per_thread_in_story_order(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str], store_path: Path
) -> None:
    result = run(instance, resources, thread_annotations, keys)
    assert result.success
    events = materialized(result, "thread_annotations")
    assert [event.partition for event in events] == keys
    assert set(statuses(store_path).values()) <= set(DONE)
    assert instance.get_materialized_partitions(thread_annotations) == set(keys)
    for event in events:
        metadata = event.metadata
        assert metadata["scenes_annotated"].value == metadata["scenes"].value > 0
        assert metadata["snapshot_id"].value is not None
        for label in (
            "entries_created",
            "entries_updated",
            "entries_deleted",
            "model_calls",
            "prompt_tokens",
            "cached_tokens",
            "completion_tokens",
            "compactions",
            "duration_s",
        ):
            assert label in metadata, label
        assert metadata["model_calls"].value > 0


def test_annotation_metadata_links_touched_entries_to_their_source_posts(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str]
) -> None:
    result = run(instance, resources, thread_annotations, keys[:1])
    assert result.success
    (event,) = materialized(result, "thread_annotations")
    metadata = event.metadata
    created = metadata["entries_created"].value
    assert created > 0, "the offline agent found no term in the first sample thread"
    rows = metadata["touched_entries"].value.records
    assert len(rows) == min(
        created + metadata["entries_updated"].value + metadata["entries_deleted"].value, 50
    )
    first = rows[0].data
    assert first["entry"].startswith("E") and first["sources"]
    assert first["first_source_url"].startswith("http://127.0.0.1:8765/post/")
    lineage = metadata["lineage"].value
    assert f"| {first['entry']} |" in lineage
    assert "](http://127.0.0.1:8765/post/" in lineage


def test_annotating_a_thread_before_its_predecessor_fails_fast_naming_it(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str], store_path: Path
) -> None:
    result = run(instance, resources, thread_annotations, keys[1:2])
    assert not result.success
    message = failure_message(result, "thread_annotations")
    assert keys[0] in message and "not annotated" in message
    assert materialized(result, "thread_annotations") == []
    assert not any(status in DONE for status in statuses(store_path).values())


def test_a_run_whose_threads_are_not_neighbours_fails_naming_the_gap(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str], store_path: Path
) -> None:
    # A range run over [k0, k2] cannot happen through a backfill (one run per contiguous range),
    # but the asset still refuses it before writing anything.
    with dg.instance_for_test() as sparse:
        sparse.add_dynamic_partitions(threads_partitions.name, [keys[0], keys[2]])
        result = run(sparse, resources, thread_annotations, [keys[0], keys[2]])
    assert not result.success
    assert keys[1] in failure_message(result, "thread_annotations")
    assert not statuses(store_path)


def test_a_run_over_partitions_left_from_another_corpus_names_them_and_what_to_do(
    resources: dict[str, Any], keys: list[str], store_path: Path
) -> None:
    """A store of another book opened in the same Dagster home: *Materialize all* took the
    other story's partitions too and failed with 'no thread 32266754 in the corpus'."""
    stale = ["t00000-90000001", "t00001-90000002"]
    with dg.instance_for_test() as mixed:
        mixed.add_dynamic_partitions(threads_partitions.name, [*stale, *keys[:2]])
        result = run(mixed, resources, thread_annotations, [*stale, *keys[:2]])
    assert not result.success
    message = failure_message(result, "thread_annotations")
    assert "2 of the run's partitions name no thread of the corpus" in message
    assert all(key in message for key in stale) and "delete them" in message
    assert not statuses(store_path)


def test_rematerializing_a_thread_later_threads_built_on_is_a_success_that_changes_nothing(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str], store_path: Path
) -> None:
    first = run(instance, resources, [thread_annotations, curated_glossary], keys[:3])
    assert first.success
    with GlossaryStore(store_path) as store:
        revisions_before = store.history.last_revision_id()
    result = run(instance, resources, [thread_annotations, curated_glossary], keys[1:2])
    assert result.success, "nothing to do is not a failure: the partition stays green"
    (annotated,) = materialized(result, "thread_annotations")
    (curated,) = materialized(result, "curated_glossary")
    assert annotated.metadata["already_done"].value is True
    # the recorded report is the annotation's: its figures are the first materialization's, not
    # the thread's curation calls added to them (it said 30 calls where annotation made 5)
    (annotated_first,) = [
        event for event in materialized(first, "thread_annotations") if event.partition == keys[1]
    ]
    for label in ("model_calls", "prompt_tokens", "completion_tokens", "cached_tokens"):
        assert annotated.metadata[label] == annotated_first.metadata[label], label
    (curated_first,) = [
        event for event in materialized(first, "curated_glossary") if event.partition == keys[1]
    ]
    assert curated.metadata["model_calls"] == curated_first.metadata["model_calls"]
    assert curated.metadata["already_done"].value is True
    assert "nothing changed" in (annotated.description or "")
    assert "rewind: true" in (annotated.description or ""), "it says how to redo it"
    with GlossaryStore(store_path) as store:
        assert store.history.last_revision_id() == revisions_before


def test_a_refusal_names_the_run_config_that_lifts_it_in_one_line_without_a_chained_trace() -> None:
    failure = failure_for(OrderError("thread t00001-2 is not annotated", setting="rewind"))
    assert failure.description is not None and "\n" not in failure.description
    assert "ops: {thread_glossary: {config: {rewind: true}}}" in failure.description
    assert failure.allow_retries is False
    try:
        fail_on(_refuse)
    except dg.Failure as raised:
        assert raised.__cause__ is None and raised.__suppress_context__
        assert raised.description == "no such thing"
    else:
        raise AssertionError("fail_on must raise")


def _refuse() -> None:
    raise InputError("no such thing")


def test_rematerializing_the_last_annotated_thread_reports_it_as_already_done(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str], store_path: Path
) -> None:
    assert run(instance, resources, thread_annotations, keys[:1]).success
    with GlossaryStore(store_path) as store:
        revisions_before = store.history.last_revision_id()
    result = run(instance, resources, thread_annotations, keys[:1])
    assert result.success
    (event,) = materialized(result, "thread_annotations")
    assert event.metadata["already_done"].value is True
    assert event.metadata["scenes_annotated"].value == 0
    with GlossaryStore(store_path) as store:
        assert store.history.last_revision_id() == revisions_before
    # its log line says what the recorded annotation did, never as this run's ("0 scenes, +7
    # ~0 -0 entries, 2 calls (already annotated ...)" read as two calls just made)
    lines = [entry.user_message for entry in instance.all_logs(result.run_id)]
    (line,) = [line for line in lines if line.startswith(f"{keys[0]}: already")]
    assert line.startswith(f"{keys[0]}: already annotated: nothing changed"), line
    assert "; its annotation wrote +" in line and "0 scenes" not in line


def test_rewind_rolls_back_to_the_previous_thread_and_marks_later_threads_for_redo(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str], store_path: Path
) -> None:
    first = run(instance, resources, thread_annotations, keys[:3])
    assert first.success
    with GlossaryStore(store_path) as store:
        revisions_before = store.history.last_revision_id()
        end_of_first = store.progress.thread_state(_thread_id(keys[0])).end_revision_id
        glossary_after_first = _names(store.history.glossary_as_of(end_of_first))

    result = run(instance, resources, thread_annotations, keys[1:2], rewind=True)
    assert result.success, failure_message(result, "thread_annotations")
    (event,) = materialized(result, "thread_annotations")
    assert json.loads(json.dumps(event.metadata["rewound_threads"].value)) == keys[1:3]
    assert event.metadata["scenes_annotated"].value == event.metadata["scenes"].value
    # the redo's own figures, as the first annotation's: not the undone attempt's added to them
    (before,) = [e for e in materialized(first, "thread_annotations") if e.partition == keys[1]]
    for label in ("entries_created", "entries_updated", "model_calls", "prompt_tokens"):
        assert event.metadata[label] == before.metadata[label], label
    # The later thread still shows materialized in the UI: the run's log says it needs a redo.
    warnings = [
        entry.user_message
        for entry in instance.all_logs(result.run_id)
        if entry.level == logging.WARNING and "rewound" in entry.user_message
    ]
    assert warnings == [
        f"{keys[1]} was rewound: 1 later thread ({keys[2]}) is marked for redo; its "
        "materializations and exports describe the glossary before the rewind until annotated "
        f"again (backfill {keys[2]}, or start incremental_annotation_schedule)"
    ], warnings

    after = statuses(store_path)
    assert after[keys[0]] in DONE and after[keys[1]] in DONE
    assert after[keys[2]] not in DONE, "the later thread must be marked for redo"
    with GlossaryStore(store_path) as store:
        # Nothing erased: the rollback and the redo are new revisions after the old ones.
        assert store.history.last_revision_id() > revisions_before
        assert store.history.revision(revisions_before).id == revisions_before
        rollbacks = [
            r
            for r in store.history.revisions(since_id=revisions_before)
            if r.actor_kind == "rollback"
        ]
        assert rollbacks, "the rewind must be recorded as rollback revisions"
        assert _names(store.history.glossary_as_of(end_of_first)) == glossary_after_first

    # The later thread can be annotated again, in order.
    assert run(instance, resources, thread_annotations, keys[2:3]).success
    assert statuses(store_path)[keys[2]] in DONE


def test_curated_glossary_curates_each_thread_of_a_range_and_runs_the_glossary_checks(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str], store_path: Path
) -> None:
    assert run(instance, resources, thread_annotations, keys).success
    result = run(instance, resources, curated_glossary, keys)
    assert result.success
    events = materialized(result, "curated_glossary")
    assert [event.partition for event in events] == keys
    assert set(statuses(store_path).values()) == {"curated"}
    for event in events:
        for label in ("reviewed", "confirmed", "rejected", "merged", "revised", "left_tentative"):
            assert label in event.metadata
    evaluations = {item.check_name: item for item in result.get_asset_check_evaluations()}
    assert set(evaluations) == {item.name for item in GLOSSARY_CHECKS}
    for item in GLOSSARY_CHECKS:
        evaluation = evaluations[item.name]
        assert evaluation.severity == item.severity
        if item.severity == dg.AssetCheckSeverity.ERROR:
            assert evaluation.passed, (item.name, evaluation.description)
    # "live" as the export counts it: the check names the glossary's entries and the rejected
    # ones apart (it said "24 live entries" where the export said "22 ..., 2 rejected")
    sources = evaluations["entries_have_sources"]
    details = sources.metadata["details"].value
    rejected, live = details["rejected_entries"], details["live_entries"]
    assert f"({live - rejected} in the glossary, {rejected} rejected)" in (
        sources.description or ""
    )


def test_curating_a_thread_that_is_not_annotated_fails_with_the_engine_message(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str]
) -> None:
    result = run(instance, resources, curated_glossary, keys[:1])
    assert not result.success
    assert "cannot be curated before it is annotated" in failure_message(result, "curated_glossary")


def test_glossary_checks_fail_on_an_entry_without_a_source_post(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str], store_path: Path
) -> None:
    assert run(instance, resources, thread_annotations, keys[:1]).success
    with GlossaryStore(store_path) as store:
        store.glossary.create_entry(
            Actor(kind="user"),
            "Unsourced Thing",
            "Written by hand, with no source post.",
            status="confirmed",
        )
    result = run(instance, resources, curated_glossary, keys[:1])
    assert result.success, "a failed check must not fail the curation"
    evaluations = {item.check_name: item for item in result.get_asset_check_evaluations()}
    sources = evaluations["entries_have_sources"]
    assert not sources.passed
    assert sources.severity == dg.AssetCheckSeverity.ERROR
    assert "Unsourced Thing" in (sources.description or "")
    assert evaluations["names_are_unique"].passed


def test_glossary_export_writes_the_glossary_as_of_each_thread_like_engine_export(
    instance: dg.DagsterInstance,
    resources: dict[str, Any],
    keys: list[str],
    store_path: Path,
    tmp_path: Path,
) -> None:
    assert run(instance, resources, thread_annotations, keys[:2]).success
    result = run(instance, resources, glossary_export, keys[:2])
    assert result.success
    events = {event.partition: event for event in materialized(result, "glossary_export")}
    assert list(events) == keys[:2]
    settings = engine_settings(resources["corpus"], resources["store"], resources["agent"])
    for key in keys[:2]:
        folder = store_path.parent / "exports" / key
        assert Path(events[key].metadata["path"].value) == folder
        files = _files(folder)
        assert {"glossary.json", "glossary.yaml"} <= set(files)
        assert any(name.startswith("wiki/") for name in files)
        # Every file but the manifest, which the export keeps for the next one.
        assert events[key].metadata["files"].value == len(files) - 1
        assert MANIFEST_FILE in files
        reference = tmp_path / "reference" / key
        with Engine.open(settings) as engine:
            engine.edits.export(reference, as_of_thread=_thread_id(key))
        assert _files(reference) == files
        for name in files:
            assert (folder / name).read_bytes() == (reference / name).read_bytes(), name
    first = json.loads((store_path.parent / "exports" / keys[0] / "glossary.json").read_text())
    assert first["meta"]["as_of_thread_key"] == keys[0]


def test_glossary_export_refuses_an_exports_folder_another_store_owns(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str], store_path: Path
) -> None:
    """A second store in the store's folder (`terrarium dev --db other.db`) wrote its thread
    folders over the first one's: the exports folder is the first store's."""
    assert run(instance, resources, thread_annotations, keys[:1]).success
    other = store_path.parent / "other.db"
    other.write_bytes(b"SQLite format 3\x00")
    exports = store_path.parent / "exports"
    exports.mkdir(exist_ok=True)
    (exports / ".terrarium-store").write_text(f"{other}\n")
    result = run(instance, resources, glossary_export, keys[:1])
    assert f"holds the exports of another store, {other}" in failure_message(
        result, "glossary_export"
    )
    assert sorted(path.name for path in exports.iterdir()) == [".terrarium-store"]


def test_reexporting_a_thread_replaces_its_folder_without_leftovers(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str], store_path: Path
) -> None:
    assert run(instance, resources, thread_annotations, keys[:1]).success
    assert run(instance, resources, glossary_export, keys[:1]).success
    folder = store_path.parent / "exports" / keys[0]
    (folder / "stale.txt").write_text("from an older export")
    assert run(instance, resources, glossary_export, keys[:1]).success
    assert not (folder / "stale.txt").exists()
    assert sorted(p.name for p in folder.parent.iterdir()) == [".terrarium-store", keys[0]]


def test_resources_make_the_settings_the_engine_opens_with(
    sample_db: Path, store_path: Path
) -> None:
    settings = engine_settings(
        CorpusResource(path=str(sample_db), url_template="https://x.example/{thread_id}#{post_id}"),
        StoreResource(path=str(store_path)),
        AgentResource(url="http://127.0.0.1:9/v1", model="qwen", max_tokens=512, temperature=0.0),
    )
    assert settings.corpus == sample_db
    assert settings.db == str(store_path)
    assert settings.agent_url == "http://127.0.0.1:9/v1" and not settings.offline
    assert (settings.model, settings.max_tokens, settings.temperature) == ("qwen", 512, 0.0)
    assert not engine_settings(CorpusResource(), StoreResource(), AgentResource()).offline
    with pytest.raises(ConfigError, match="agent_url"):
        engine_settings(CorpusResource(), StoreResource(), AgentResource(url="gpu:8000"))


def test_a_bad_agent_setting_fails_the_asset_with_the_setting_named(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str]
) -> None:
    bad = {**resources, "agent": AgentResource(url="gpu-box:8000")}
    result = run(instance, bad, thread_annotations, keys[:1])
    assert not result.success
    assert "agent_url" in failure_message(result, "thread_annotations")


def test_store_resource_puts_exports_beside_the_store_unless_told(tmp_path: Path) -> None:
    db = tmp_path / "somewhere" / "terrarium.db"
    assert StoreResource(path=str(db)).export_root() == db.parent / "exports"
    chosen = tmp_path / "shared-exports"
    assert StoreResource(path=str(db), exports_dir=str(chosen)).export_root() == chosen
    default = Path(load_settings().db).parent / "exports"
    assert StoreResource().export_root() == default


def _thread_id(key: str) -> int:
    return int(key.rsplit("-", 1)[1])


def _names(views: Sequence[Any]) -> set[str]:
    return {view.term for view in views if not view.deleted}


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_materialize_all_over_a_range_annotates_curates_and_exports_every_thread_in_order(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str], store_path: Path
) -> None:
    result = run(instance, resources, list(THREAD_ASSETS), keys)
    assert result.success
    for asset in (
        "scene_batches",
        "thread_annotations",
        "curated_glossary",
        "glossary_edition",
        "glossary_export",
    ):
        assert [event.partition for event in materialized(result, asset)] == keys, asset
    assert set(statuses(store_path).values()) == {"curated"}
    order = [
        (event.asset_key.path[-1], event.partition)
        for event in result.asset_materializations_for_node(STEP)
        if event.asset_key in (thread_annotations, curated_glossary)
    ]
    expected = [(name, key) for key in keys for name in ("thread_annotations", "curated_glossary")]
    assert order == expected, "each thread is curated before the next one is annotated"
    assert {item.check_name for item in result.get_asset_check_evaluations()} == {
        *(item.name for item in GLOSSARY_CHECKS),
        *(spec.name for spec in edition_check_specs()),
    }


def test_a_selection_of_scene_batches_and_thread_annotations_annotates(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str], store_path: Path
) -> None:
    result = run(instance, resources, [scene_batches, thread_annotations], keys[:2])
    assert result.success
    assert [event.partition for event in materialized(result, "scene_batches")] == keys[:2]
    assert [event.partition for event in materialized(result, "thread_annotations")] == keys[:2]
    assert materialized(result, "curated_glossary") == []
    assert statuses(store_path)[keys[1]] in DONE


def test_curation_metadata_is_a_readable_decision_table_with_the_backend(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str]
) -> None:
    result = run(instance, resources, [thread_annotations, curated_glossary], keys[:1])
    assert result.success
    (annotation,) = materialized(result, "thread_annotations")
    (curation,) = materialized(result, "curated_glossary")
    for event in (annotation, curation):
        assert event.metadata["backend"].value.startswith("offline")
        assert event.metadata["model"].value == "offline"
        assert keys[0] in (event.description or "")
    table = curation.metadata["decisions"].value
    assert [column.name for column in table.schema.columns] == [
        "id",
        "term",
        "decision",
        "target",
        "reasoning",
    ]
    decided = sum(
        curation.metadata[name].value for name in ("confirmed", "rejected", "merged", "revised")
    )
    assert len(table.records) >= min(decided, 50) > 0
    for record in table.records:
        assert record.data["term"] and record.data["decision"]
        assert isinstance(record.data["id"], int)


def test_export_metadata_links_over_http_to_the_served_exports(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str]
) -> None:
    assert run(instance, resources, [thread_annotations, curated_glossary], keys[:1]).success
    result = run(instance, resources, glossary_export, keys[:1])
    (event,) = materialized(result, "glossary_export")
    link = event.metadata["export"].value
    assert link == f"http://127.0.0.1:8765/exports/{keys[0]}/"
    assert event.metadata["wiki_index"].value.startswith(link)
    assert all(not str(item.value).startswith("file:") for item in event.metadata.values())


def test_a_run_with_no_model_server_and_no_offline_choice_fails_with_one_line(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str], store_path: Path
) -> None:
    result = run(instance, {**resources, "agent": AgentResource()}, thread_annotations, keys[:1])
    assert not result.success
    message = failure_message(result, "thread_annotations")
    assert "TERRARIUM_AGENT_URL" in message and "TERRARIUM_OFFLINE" in message
    assert not any(status in DONE for status in statuses(store_path).values())


def test_touched_entries_link_to_their_pages_on_the_served_site(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str]
) -> None:
    result = run(instance, resources, [thread_annotations, curated_glossary], keys[:1])
    (event,) = materialized(result, "thread_annotations")
    links = {
        label: value for label, value in event.metadata.items() if label.startswith("entry · ")
    }
    assert 0 < len(links) <= 10
    assert all(isinstance(value, dg.UrlMetadataValue) for value in links.values())
    page = f"http://127.0.0.1:8765/?upto={keys[0]}#/entry/"
    assert all(value.url.startswith(page) for value in links.values())
    assert "](http://127.0.0.1:8765/post/" in event.metadata["lineage"].value
    (curation,) = materialized(result, "curated_glossary")
    assert curation.metadata["find_an_entry"].value == "http://127.0.0.1:8765/"
    assert curation.metadata["glossary_site"].value == f"http://127.0.0.1:8765/?upto={keys[0]}"
    decided = [label for label in curation.metadata if label.startswith("entry · ")]
    assert decided, "the curated entries link to their pages"


def test_annotation_alone_records_the_scene_batches_of_the_threads_it_annotated(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str]
) -> None:
    result = run(instance, resources, thread_annotations, keys[:2])
    assert result.success
    assert [event.partition for event in materialized(result, "scene_batches")] == keys[:2]
    (first, _) = materialized(result, "scene_batches")
    assert first.metadata["scenes"].value > 0


def test_a_curation_launched_without_its_checks_still_evaluates_all_four(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str]
) -> None:
    assert run(instance, resources, thread_annotations, keys[:1]).success
    result = dg.materialize(
        [thread_glossary],
        selection=dg.AssetSelection.assets(curated_glossary).without_checks(),
        instance=instance,
        resources=resources,
        partition_key=keys[0],
    )
    assert result.success
    assert [event.partition for event in materialized(result, "curated_glossary")] == keys[:1]
    assert {item.check_name for item in result.get_asset_check_evaluations()} == {
        item.name for item in GLOSSARY_CHECKS
    }


def test_the_checks_alone_run_without_a_partition_as_the_ui_launches_them(
    instance: dg.DagsterInstance, resources: dict[str, Any], keys: list[str]
) -> None:
    # Before, a run of the checks alone (the UI's "Execute" on the checks, no partition) failed
    # with Dagster's "Cannot access partition_key for a non-partitioned run".
    checks = dg.AssetSelection.checks_for_assets(curated_glossary, glossary_edition)
    before = dg.materialize(
        [thread_glossary],
        selection=checks,
        instance=instance,
        resources=resources,
        raise_on_error=False,
    )
    assert "no annotator store" in failure_message(before, "the checks")  # one line, no trace
    chain = [thread_annotations, curated_glossary, glossary_edition]
    assert run(instance, resources, chain, keys[:2]).success
    result = dg.materialize(
        [thread_glossary], selection=checks, instance=instance, resources=resources
    )
    assert result.success
    assert not result.asset_materializations_for_node(STEP)
    evaluations = {item.check_name: item for item in result.get_asset_check_evaluations()}
    assert set(evaluations) == {item.name for item in GLOSSARY_CHECKS} | {
        spec.name for spec in edition_check_specs()
    }
    assert all(item.passed for item in evaluations.values())


def test_an_unreadable_corpus_fails_every_step_with_one_line_and_changes_nothing(
    instance: dg.DagsterInstance,
    resources: dict[str, Any],
    keys: list[str],
    sample_db: Path,
    store_path: Path,
    tmp_path: Path,
) -> None:
    # Before, the thread step, the export and the checks opened the corpus outside `fail_on`: a
    # corpus moved away failed the run with Dagster's "Error occurred while executing op" and
    # the engine's CorpusError chained under it, stack and all.
    corpus = tmp_path / "corpus.db"
    corpus.write_bytes(sample_db.read_bytes())
    here = {**resources, "corpus": CorpusResource(path=str(corpus))}
    assert run(instance, here, [thread_annotations, curated_glossary], keys[:1]).success
    with GlossaryStore(store_path) as store:
        revisions_before = store.history.last_revision_id()
    checks = dg.AssetSelection.checks_for_assets(curated_glossary)
    for broken, said in ((b"", "corpus file not found"), (b"not a database" * 100, "")):
        corpus.unlink(missing_ok=True)
        if broken:
            corpus.write_bytes(broken)
        for selection in (
            [thread_annotations, curated_glossary],
            [glossary_export],
            checks,
        ):
            result = dg.materialize(
                [thread_glossary],
                selection=selection,
                instance=instance,
                resources=here,
                partition_key=keys[1] if selection is not checks else None,
                raise_on_error=False,
            )
            failure = result.failure_data_for_node(STEP)
            assert failure is not None and failure.error is not None, selection
            assert failure.error.cause is None, failure.error.to_string()
            assert str(corpus) in failure.error.message and said in failure.error.message
            assert "Error occurred while executing op" not in failure.error.message
    with GlossaryStore(store_path) as store:
        assert store.history.last_revision_id() == revisions_before
    assert statuses(store_path).get(keys[1], "pending") == "pending"
    corpus.write_bytes(sample_db.read_bytes())
    assert run(instance, here, [thread_annotations, curated_glossary], keys[1:2]).success


def test_materialize_all_with_an_exports_folder_it_cannot_use_annotates_nothing(
    instance: dg.DagsterInstance,
    resources: dict[str, Any],
    keys: list[str],
    store_path: Path,
    tmp_path: Path,
) -> None:
    # Before, "Materialize all" with `exports_dir` naming a file (a slip in the Launchpad's
    # resources) annotated and curated the thread, then failed at its export with a chained
    # FileExistsError; an exports folder another store owns failed only at the export too.
    assert run(instance, resources, [thread_annotations, curated_glossary], keys[:1]).success
    with GlossaryStore(store_path) as store:
        revisions_before = store.history.last_revision_id()
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a folder")
    other = tmp_path / "other.db"
    other.write_bytes(b"SQLite format 3\x00")
    owned = tmp_path / "owned"
    owned.mkdir()
    (owned / ".terrarium-store").write_text(f"{other}\n")
    for exports_dir, said in (
        (a_file, f"the exports folder {a_file} is a file"),
        (a_file / "exports", f"the exports folder {a_file / 'exports'} is under a file, {a_file}"),
        (owned, f"holds the exports of another store, {other}"),
    ):
        store = StoreResource(path=str(store_path), exports_dir=str(exports_dir))
        result = run(instance, {**resources, "store": store}, list(THREAD_ASSETS), keys[1:2])
        failure = result.failure_data_for_node(STEP)
        assert failure is not None and failure.error is not None, exports_dir
        assert said in failure.error.message and failure.error.cause is None, failure.error
        assert not result.asset_materializations_for_node(STEP)
        with GlossaryStore(store_path) as glossary:
            assert glossary.history.last_revision_id() == revisions_before
        assert statuses(store_path).get(keys[1], "pending") == "pending"
    assert a_file.read_text() == "not a folder"
    assert sorted(path.name for path in owned.iterdir()) == [".terrarium-store"]
