"""End to end: a real `dagster dev` on loopback, driven through the GraphQL API the UI uses.

The test starts `dagster dev` with a temporary DAGSTER_HOME (the repo's dagster.yaml copied in, the
run queue and the backfill daemon made quicker: tests/support/dagster_dev.py) and
a temporary annotator store, lets `thread_discovery_sensor` add the sample corpus's threads, and
launches two backfills over neighbouring ranges of threads — the first of all four assets (what
"Materialize all" does), the second of `thread_annotations` alone — while the
`terrarium_llm` pool is held at 0 slots, so both runs are queued at once. Freeing one slot must run
them one after the other (the second waits while the first runs: never two writers). Then
Declarative Automation (`default_automation_condition_sensor`, running by default) curates and
exports the threads the second run only annotated — each thread curated and exported exactly once,
none of what the first run did redone, every thread's scene batches recorded and every check
evaluated against the latest curation — and the test checks the order of the materializations, the
metadata's links to source posts, and that every export equals what `terrarium export` writes for
the same thread.
"""

from __future__ import annotations

import filecmp
import itertools
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from terrarium_dagster.defs.asset_checks import GLOSSARY_CHECKS
from terrarium_dagster.exports.files import MANIFEST_FILE
from tests.support.cli import TERRARIUM
from tests.support.dagster_dev import (
    POOL,
    REPO,
    DagsterDev,
    dev_environment,
)


@pytest.fixture
def dagster_dev(tmp_path: Path, _isolated_home: Path, sample_db: Path) -> Iterator[DagsterDev]:
    store = tmp_path / "store" / "terrarium.db"
    dev = DagsterDev(tmp_path, dev_environment(_isolated_home, store))
    try:
        dev.start()
        yield dev
    finally:
        dev.stop()


def _overlap(first: dict[str, Any], second: dict[str, Any]) -> bool:
    return first["startTime"] < second["endTime"] and second["startTime"] < first["endTime"]


def _export_files(folder: Path) -> list[str]:
    """The export's files, but its manifest (which lists every format's files)."""
    return sorted(
        str(path.relative_to(folder))
        for path in folder.rglob("*")
        if path.is_file() and path.name != MANIFEST_FILE
    )


def _run_cli(*args: str, env: dict[str, str]) -> None:
    done = subprocess.run(
        [TERRARIUM, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
@pytest.mark.timeout(540)
def test_backfills_through_dagster_dev_annotate_in_order_one_writer_then_curate_and_export(
    dagster_dev: DagsterDev, sample_db: Path
) -> None:
    dev = dagster_dev
    # The discovery sensor (running by default) adds the sample's threads, in story order.
    keys = dev.wait_for_threads(sample_db)
    assert len(keys) >= 3, "the sample quest needs at least three threads"

    # Hold the pool at 0 so that both backfills' runs are queued together, in launch order.
    first_range, second_range = keys[:2], keys[2:]
    dev.set_pool_limit(POOL, 0)
    # The first is "Materialize all" over a range (all four assets), the second annotation alone.
    everything = ["scene_batches", "thread_annotations", "curated_glossary", "glossary_export"]
    first_backfill = dev.launch_backfill(everything, first_range)
    (first_run,) = dev.wait_for(
        lambda: dev.backfill(first_backfill)["runs"], timeout=90, what="the first backfill's run"
    )
    second_backfill = dev.launch_backfill("thread_annotations", second_range)
    (second_run,) = dev.wait_for(
        lambda: dev.backfill(second_backfill)["runs"], timeout=90, what="the second backfill's run"
    )
    for queued in (first_run, second_run):
        dev.wait_for(
            lambda queued=queued: dev.run(queued["runId"])["status"] == "QUEUED",
            timeout=30,
            what=f"run {queued['runId']} to be queued behind the pool",
        )

    # One slot: the first run starts, the second waits for it.
    dev.set_pool_limit(POOL, 1)
    seen_while_first_ran: set[str] = set()

    def first_run_done() -> bool:
        runs = {run["runId"]: run for run in dev.runs()}
        first, second = runs[first_run["runId"]], runs[second_run["runId"]]
        if first["status"] == "STARTED":
            seen_while_first_ran.add(second["status"])
        return first["status"] in ("SUCCESS", "FAILURE", "CANCELED")

    dev.wait_for(first_run_done, timeout=120, what="the first backfill's run", every=0.25)
    assert dev.run(first_run["runId"])["status"] == "SUCCESS", dev.log_tail()
    assert seen_while_first_ran == {"QUEUED"}, seen_while_first_ran

    for backfill_id in (first_backfill, second_backfill):
        status = dev.wait_for(
            lambda backfill_id=backfill_id: (
                (status := dev.backfill(backfill_id)["status"])
                not in ("REQUESTED", "CANCELING", "FAILING")
                and status
            ),
            timeout=150,
            what=f"backfill {backfill_id} to finish",
        )
        assert status == "COMPLETED_SUCCESS", dev.log_tail()

    # Every thread annotated once, in story order, across the two runs.
    annotations = dev.materializations("thread_annotations")
    assert [event["partition"] for event in annotations] == keys, dev.explain(annotations)
    assert {event["runId"] for event in annotations[:2]} == {first_run["runId"]}
    assert {event["runId"] for event in annotations[2:]} == {second_run["runId"]}
    # "Materialize all" did every asset of its range in its one run, curation included.
    for asset in ("scene_batches", "curated_glossary", "glossary_export"):
        events = [e for e in dev.materializations(asset) if e["runId"] == first_run["runId"]]
        assert [event["partition"] for event in events] == first_range, asset
    first_curations = [
        e for e in dev.materializations("curated_glossary") if e["runId"] == first_run["runId"]
    ]
    assert all(e["metadata"]["model_calls"]["intValue"] >= 0 for e in first_curations)
    assert all("backend" in e["metadata"] for e in first_curations)

    # Lineage: each materialization names its snapshot and links its entries to their posts.
    touched_any = False
    for event in annotations:
        metadata = event["metadata"]
        assert metadata["snapshot_id"]["__typename"] == "IntMetadataEntry"
        assert metadata["scenes_annotated"]["intValue"] == metadata["scenes"]["intValue"]
        created = metadata["entries_created"]["intValue"]
        lineage = metadata["lineage"]["mdStr"]
        rows = metadata["touched_entries"]["table"]["records"]
        if created:
            touched_any = True
            assert "](http://127.0.0.1:8765/post/" in lineage, lineage
            assert rows and json.loads(rows[0])["sources"]
        for label in ("prompt_tokens", "cached_tokens", "completion_tokens", "model_calls"):
            assert label in metadata
    assert touched_any, "the offline agent created no entry in the whole sample"

    # Declarative Automation curates and exports the threads the second run only annotated.
    def curated_and_exported() -> bool:
        curated = {event["partition"] for event in dev.materializations("curated_glossary")}
        exported = {event["partition"] for event in dev.materializations("glossary_export")}
        return set(keys) <= curated and set(keys) <= exported

    # An automation tick, then the backfill daemon's (every 2 s here, 30 s in Dagster), the run.
    dev.wait_for(curated_and_exported, timeout=240, what="curation and export of every thread")
    time.sleep(5)  # a few more automation ticks: nothing more may be requested
    for asset in ("curated_glossary", "glossary_export"):
        events = dev.materializations(asset)
        partitions = [event["partition"] for event in events]
        assert sorted(partitions) == sorted(keys), (asset, partitions)  # each exactly once
        automated = [e for e in events if e["runId"] != first_run["runId"]]
        assert {e["partition"] for e in automated} == set(second_range), asset
        for event in automated:
            tags = dev.run(event["runId"])["tags"]
            assert tags.get("dagster/from_automation_condition") == "true", tags

    # Every thread annotated has its scene batches, whichever selection annotated it (the
    # second backfill selected annotation alone), and after automation's curations every check
    # is evaluated against the latest curation (never "Not evaluated").
    scene_batches = {event["partition"] for event in dev.materializations("scene_batches")}
    assert scene_batches == set(keys), scene_batches
    checks = dev.checks_for_latest("curated_glossary")
    assert sorted(checks) == sorted(item.name for item in GLOSSARY_CHECKS)
    assert all(e and e["status"] in ("SUCCEEDED", "FAILED") for e in checks.values()), checks

    # Never two writers: runs in the LLM pool never overlap in time.
    writers = [
        run
        for run in dev.runs()
        if run["assets"] & {"thread_annotations", "curated_glossary"} and run["startTime"]
    ]
    assert all(run["status"] == "SUCCESS" for run in writers), [r["status"] for r in writers]
    writers.sort(key=lambda run: run["startTime"])
    for earlier, later in itertools.pairwise(writers):
        assert not _overlap(earlier, later), (earlier["runId"], later["runId"])

    # The glossary checks ran with the curation, and the integrity ones passed.
    for check in ("entries_have_sources", "names_are_unique", "provenance_points_at_posts"):
        executions = dev.check_executions("curated_glossary", check)
        assert executions, f"{check} never ran"
        assert executions[0]["evaluation"]["success"] is True, (check, executions[0])

    # The exports equal what `terrarium export` writes for the same thread.
    exports = {event["partition"]: event for event in dev.materializations("glossary_export")}
    for key in (keys[0], keys[-1]):
        folder = Path(exports[key]["metadata"]["path"]["path"])
        assert folder.is_dir() and _export_files(folder)
        for fmt in ("json", "yaml", "wiki"):
            out = dev.workdir / "cli_export" / key / fmt
            target = out / {"json": "glossary.json", "yaml": "glossary.yaml"}.get(fmt, "")
            out.mkdir(parents=True)  # --out's folder must exist (a wiki's own folder is made)
            _run_cli(
                "export", "--format", fmt, "--out", str(target), "--as-of-thread", key, env=dev.env
            )
            produced = _export_files(out)
            assert produced, f"terrarium export --format {fmt} wrote nothing"
            _match, mismatch, errors = filecmp.cmpfiles(folder, out, produced, shallow=False)
            assert not mismatch and not errors, (key, fmt, mismatch, errors)
