"""Two backfills launched together, the later range's run first: a real `dagster dev` on loopback,
driven through GraphQL's `launchPartitionBackfill` as the UI launches a backfill.

A user selects threads 1–3 and launches a backfill of every thread asset, then at once threads
4–5. The backfill daemon submits the two runs side by side, in any order, so the later range's run
can be the first one out of the queue. The engine refuses its first thread before thread 1
("thread t00003-… cannot be annotated before t00000-…"); the run must wait for the first
backfill's run, not fail. The order is made deterministic here: both backfills are launched
while the story's pool is held at 0 (so both runs are queued) and the second carries a higher
`dagster/priority`, so it leaves the queue first, as it does when it happens to be submitted first.

What must hold: both runs succeed and both backfills complete; every thread is annotated once, in
story order, and never by two steps at once; the later run says in its log what it waited for.
The corpus is five one-scene threads, so the runs take seconds.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.corpus_builder import simple_quest
from tests.support.dagster_dev import POOL, DagsterDev, dev_environment

ASSETS = ["scene_batches", "thread_annotations", "curated_glossary", "glossary_export"]
ENDED = ("SUCCESS", "FAILURE", "CANCELED")


@pytest.fixture
def five_threads(tmp_path: Path) -> Path:
    return simple_quest(tmp_path / "corpus.db", threads=5, scenes_per_thread=1)


@pytest.fixture
def dev(tmp_path: Path, _isolated_home: Path, five_threads: Path) -> Iterator[DagsterDev]:
    env = dev_environment(_isolated_home, tmp_path / "store" / "terrarium.db")
    env["TERRARIUM_CORPUS"] = str(five_threads)
    with DagsterDev(tmp_path, env) as running:
        yield running


def _step_events(dev: DagsterDev, run_id: str) -> list[dict[str, Any]]:
    data = dev.graphql(
        """query ($id: ID!) { logsForRun(runId: $id, limit: 1000) {
             __typename ... on EventConnection { events { __typename
               ... on MessageEvent { message timestamp stepKey }
               ... on ExecutionStepFailureEvent { error { message } } } } } }""",
        id=run_id,
    )
    return list(data["logsForRun"].get("events") or [])


def _failures(dev: DagsterDev, run_id: str) -> list[str]:
    return [
        (event.get("error") or {}).get("message") or event.get("message", "")
        for event in _step_events(dev, run_id)
        if event["__typename"] in ("ExecutionStepFailureEvent", "RunFailureEvent")
    ]


def _step_spans(dev: DagsterDev, run_id: str) -> list[tuple[float, float]]:
    """When the run's thread step ran, attempt by attempt: from each start (or restart) to the
    success, failure or retry that ended it."""
    spans, begun = [], None
    for event in _step_events(dev, run_id):
        kind, at = event["__typename"], int(event.get("timestamp") or 0) / 1000
        if kind in ("ExecutionStepStartEvent", "ExecutionStepRestartEvent"):
            begun = at
        elif begun is not None and kind in (
            "ExecutionStepSuccessEvent",
            "ExecutionStepFailureEvent",
            "ExecutionStepUpForRetryEvent",
        ):
            spans.append((begun, at))
            begun = None
    return spans


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_two_backfills_whose_later_range_runs_first_both_complete_in_story_order(
    dev: DagsterDev, five_threads: Path
) -> None:
    keys = dev.wait_for_threads(five_threads)

    dev.set_pool_limit(POOL, 0)
    first = dev.launch_backfill(ASSETS, keys[:3])
    second = dev.launch_backfill(ASSETS, keys[3:], tags={"dagster/priority": "1"})
    run_ids = {}
    for name, backfill in (("first", first), ("second", second)):
        (run,) = dev.wait_for(
            lambda backfill=backfill: dev.backfill(backfill)["runs"],
            timeout=60,
            what=f"the {name} backfill's run",
        )
        run_ids[name] = run["runId"]
        dev.wait_for(
            lambda run_id=run["runId"]: dev.run(run_id)["status"] == "QUEUED",
            timeout=30,
            what=f"the {name} backfill's run to be queued",
        )
    dev.set_pool_limit(POOL, 1)

    statuses = dev.wait_for(
        lambda: (
            (now := {name: dev.run(run_id)["status"] for name, run_id in run_ids.items()})
            and all(status in ENDED for status in now.values())
            and now
        ),
        timeout=120,
        what="both backfills' runs to end",
        every=0.5,
    )
    failures = {name: _failures(dev, run_id) for name, run_id in run_ids.items()}
    assert statuses == {"first": "SUCCESS", "second": "SUCCESS"}, (statuses, failures)

    # The later range's run left the queue first, met the order, and waited for the first run
    # without holding the pool: its log names the thread and the run it waited for.
    waited = [
        event["message"]
        for event in _step_events(dev, run_ids["second"])
        if "is waiting for" in (event.get("message") or "")
    ]
    assert waited and keys[0] in waited[0] and run_ids["first"] in waited[0], waited

    # Every thread annotated once, in story order: the first range by the first run, then the
    # second range by the second run; never two attempts of the step at once.
    annotations = dev.materializations("thread_annotations")
    assert [event["partition"] for event in annotations] == keys, dev.explain(annotations)
    by_run = [event["runId"] for event in annotations]
    assert by_run == [run_ids["first"]] * 3 + [run_ids["second"]] * 2, dev.explain(annotations)
    assert not any("already annotated" in event["description"] for event in annotations)
    spans = sorted(span for run_id in run_ids.values() for span in _step_spans(dev, run_id))
    for earlier, later in itertools.pairwise(spans):
        assert earlier[1] <= later[0], spans
    for asset in ("scene_batches", "curated_glossary", "glossary_export"):
        partitions = [event["partition"] for event in dev.materializations(asset)]
        assert partitions == keys, (asset, partitions)

    for name, backfill in (("first", first), ("second", second)):
        status = dev.wait_for(
            lambda backfill=backfill: (
                (status := dev.backfill(backfill)["status"]) not in ("REQUESTED", "CANCELING")
                and status
            ),
            timeout=60,
            what=f"the {name} backfill to complete",
        )
        assert status == "COMPLETED_SUCCESS", (name, status)
