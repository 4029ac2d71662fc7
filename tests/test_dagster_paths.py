"""The paths that complete a thread without a user, through a real `dagster dev` driven by
GraphQL as the UI is (annotation alone followed by automation's curation is in
tests/test_dagster_dev.py).

One `dagster dev` (the sample quest, the offline backend, the schedule's cron every minute, the
instance's scheduler `DueAtOnceScheduler`: the schedule switched on is due at once, not at the
next minute; tests/support/dagster_ticks/due_at_once.py):

1. The schedule, switched on, annotates and curates the threads in one run: every thread gets
   its `scene_batches`, and every glossary check is evaluated against the latest
   `curated_glossary` materialization (what the UI shows as the check's status: not "Not
   evaluated").
2. Re-materializing an annotated thread that later threads built on (what a user does from the
   partition's page) succeeds, says it changed nothing, and no partition turns red.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from terrarium_dagster.defs.asset_checks import GLOSSARY_CHECKS
from tests.support.dagster_dev import REPO, DagsterDev, dev_environment

LOCATION = "terrarium_dagster"
REPOSITORY = "__repository__"
SCHEDULE = "incremental_annotation_schedule"
CHECKS = sorted(item.name for item in GLOSSARY_CHECKS)
INSTANCE = REPO / "dagster.yaml"
DUE_AT_ONCE = {"scheduler": {"module": "due_at_once", "class": "DueAtOnceScheduler"}}


def _partition_stats(dev: DagsterDev, asset: str) -> dict[str, int]:
    data = dev.graphql(
        """query ($key: AssetKeyInput!) { assetNodeOrError(assetKey: $key) { __typename
             ... on AssetNode { partitionStats {
               numMaterialized numFailed numMaterializing numPartitions } } } }""",
        key={"path": [asset]},
    )
    return dict(data["assetNodeOrError"]["partitionStats"])


def _partitions(dev: DagsterDev, asset: str) -> set[str]:
    return {event["partition"] for event in dev.materializations(asset)}


def _all_checks_evaluated(dev: DagsterDev) -> bool:
    checks = dev.checks_for_latest("curated_glossary")
    return sorted(checks) == CHECKS and all(
        execution and execution["status"] in ("SUCCEEDED", "FAILED")
        for execution in checks.values()
    )


@pytest.fixture
def dev(tmp_path: Path, _isolated_home: Path, sample_db: Path) -> Any:
    env = dev_environment(_isolated_home, tmp_path / "store" / "terrarium.db")
    env["TERRARIUM_SCHEDULE_CRON"] = "* * * * *"
    instance = tmp_path / "dagster.yaml"  # the shipped instance, with the scheduler
    scheduler = yaml.safe_dump(DUE_AT_ONCE, sort_keys=False)
    instance.write_text(f"{INSTANCE.read_text(encoding='utf-8')}\n{scheduler}", encoding="utf-8")
    with DagsterDev(tmp_path, env, instance=instance) as running:
        yield running


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_schedule_batches_scenes_and_evaluates_checks_and_a_rematerialization_stays_green(
    dev: DagsterDev, sample_db: Path
) -> None:
    keys = dev.wait_for_threads(sample_db)

    # 1. The schedule annotates and curates every thread in one run.
    started = dev.graphql(
        """mutation ($selector: ScheduleSelector!) { startSchedule(scheduleSelector: $selector) {
             __typename ... on ScheduleStateResult { scheduleState { status } }
             ... on PythonError { message } } }""",
        selector={
            "repositoryLocationName": LOCATION,
            "repositoryName": REPOSITORY,
            "scheduleName": SCHEDULE,
        },
    )
    assert started["startSchedule"]["__typename"] == "ScheduleStateResult", started
    dev.wait_for(
        lambda: set(keys) <= _partitions(dev, "curated_glossary"),
        timeout=200,
        what="the schedule's run to annotate and curate the threads",
    )
    scheduled = dev.wait_for(
        lambda: (
            (runs := [r for r in dev.runs() if r["tags"].get("dagster/schedule_name") == SCHEDULE])
            and all(r["status"] in ("SUCCESS", "FAILURE", "CANCELED") for r in runs)
            and runs
        ),
        timeout=120,
        what="the schedule's run to finish",
    )
    assert all(run["status"] == "SUCCESS" for run in scheduled), dev.log_tail()
    assert set(keys) <= _partitions(dev, "scene_batches"), "the schedule batched the scenes"
    dev.wait_for(lambda: _all_checks_evaluated(dev), timeout=30, what="the checks to evaluate")
    # (the schedule stays on: every thread is annotated now, so its ticks skip)

    # 2. Re-materializing an annotated thread that later threads built on: green, unchanged.
    run_id = dev.launch_run(["thread_annotations", "curated_glossary"], keys[1])
    status = dev.wait_for(
        lambda: (s := dev.run(run_id)["status"]) in ("SUCCESS", "FAILURE", "CANCELED") and s,
        timeout=120,
        what="the re-materialization",
    )
    assert status == "SUCCESS", dev.log_tail()
    latest = [e for e in dev.materializations("thread_annotations") if e["runId"] == run_id]
    assert [event["partition"] for event in latest] == [keys[1]]
    assert latest[0]["metadata"]["already_done"]["__typename"] == "BoolMetadataEntry"
    time.sleep(2)
    for asset in ("scene_batches", "thread_annotations", "curated_glossary", "glossary_export"):
        stats = _partition_stats(dev, asset)
        assert stats["numFailed"] == 0, (asset, stats)
    assert _partition_stats(dev, "thread_annotations")["numMaterialized"] == len(keys)
