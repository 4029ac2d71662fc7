"""End to end: a real `dagster dev` on loopback, driven through the GraphQL API the UI uses.

The test starts `dagster dev` with a temporary DAGSTER_HOME (the repo's dagster.yaml copied in) and
a temporary annotator store, lets `thread_discovery_sensor` add the sample corpus's threads, and
launches two backfills over neighbouring ranges of threads — the first of all four assets (what
"Materialize all" does), the second of `thread_annotations` alone — while the
`terrarium_llm` pool is held at 0 slots, so both runs are queued at once. Freeing one slot must run
them one after the other (the second waits while the first runs: never two writers). Then
Declarative Automation (`default_automation_condition_sensor`, running by default) curates and
exports the threads the second run only annotated — each thread curated and exported exactly once,
none of what the first run did redone — and the test checks the order of the materializations, the
metadata's links to source posts, and that every export equals what `terrarium export` writes for
the same thread.
"""

from __future__ import annotations

import contextlib
import filecmp
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from terrarium_dagster.exports.files import MANIFEST_FILE

REPO = Path(__file__).resolve().parent.parent
POOL = "terrarium_llm"
T = TypeVar("T")


class GraphQLError(AssertionError):
    """The webserver answered a GraphQL request with errors."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _default_sigint() -> None:
    """In the child: take SIGINT's default back (a shell's background job ignores it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class DagsterDev:
    """`dagster dev` in its own process group, with a GraphQL client for its webserver."""

    def __init__(self, workdir: Path, env: dict[str, str], *, port: int | None = None) -> None:
        self.workdir = workdir
        self.home = workdir / "dagster_home"
        self.log_path = workdir / "dagster_dev.log"
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/graphql"
        self.env = {**env, "DAGSTER_HOME": str(self.home)}
        self.process: subprocess.Popen[bytes] | None = None
        self.client = httpx.Client(timeout=httpx.Timeout(30.0, connect=5.0))

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / "dagster.yaml", self.home / "dagster.yaml")
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "dagster",
                    "dev",
                    "-w",
                    str(REPO / "workspace.yaml"),
                    "-h",
                    "127.0.0.1",
                    "-p",
                    str(self.port),
                ],
                cwd=REPO,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_default_sigint,
            )

    def stop(self) -> None:
        """SIGINT to the whole process group, then SIGKILL whatever is left."""
        self.client.close()
        process = self.process
        if process is None:
            return
        self.process = None
        group = process.pid  # start_new_session: the group id is the leader's pid
        _signal_group(group, signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=30)
        deadline = time.monotonic() + 10
        while _group_alive(group) and time.monotonic() < deadline:
            time.sleep(0.2)
        _signal_group(group, signal.SIGKILL)
        if process.poll() is None:
            process.wait(timeout=10)

    def __enter__(self) -> DagsterDev:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    # -- GraphQL ----------------------------------------------------------------------------

    def graphql(self, query: str, **variables: Any) -> dict[str, Any]:
        response = self.client.post(self.url, json={"query": query, "variables": variables})
        response.raise_for_status()
        body = response.json()
        if body.get("errors"):
            raise GraphQLError(json.dumps(body["errors"])[:2000])
        return body["data"]

    def wait_for(
        self, probe: Callable[[], T | None], *, timeout: float, what: str, every: float = 0.5
    ) -> T:
        """Poll `probe` until it returns something truthy; fail with the server's log."""
        deadline = time.monotonic() + timeout
        while True:
            if self.process is not None and self.process.poll() is not None:
                raise AssertionError(
                    f"dagster dev exited while waiting for {what}\n{self.log_tail()}"
                )
            try:
                value = probe()
            except (httpx.TransportError, httpx.HTTPStatusError):
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out after {timeout:.0f}s waiting for {what}\n{self.log_tail()}"
                )
            time.sleep(every)

    def wait_until_loaded(self, timeout: float = 120) -> None:
        self.wait_for(self._location_loaded, timeout=timeout, what="the code location to load")

    def _location_loaded(self) -> bool:
        data = self.graphql(
            """{ workspaceOrError { __typename ... on Workspace { locationEntries {
                 name loadStatus locationOrLoadError { __typename
                   ... on PythonError { message stack } } } } } }"""
        )
        entries = data["workspaceOrError"].get("locationEntries") or []
        for entry in entries:
            location = entry["locationOrLoadError"] or {}
            if location.get("__typename") == "PythonError":
                stack = "".join(location.get("stack") or [])
                raise AssertionError(
                    f"code location failed to load: {location['message']}\n{stack}"
                )
        return bool(entries) and all(
            entry["loadStatus"] == "LOADED"
            and (entry["locationOrLoadError"] or {}).get("__typename") == "RepositoryLocation"
            for entry in entries
        )

    def partition_keys(self, asset: str) -> list[str]:
        data = self.graphql(
            """query ($key: AssetKeyInput!) { assetNodeOrError(assetKey: $key) {
                 __typename ... on AssetNode { partitionKeys } } }""",
            key={"path": [asset]},
        )
        return list(data["assetNodeOrError"].get("partitionKeys") or [])

    def set_pool_limit(self, pool: str, limit: int) -> None:
        data = self.graphql(
            "mutation ($key: String!, $limit: Int!) { setConcurrencyLimit("
            "concurrencyKey: $key, limit: $limit) }",
            key=pool,
            limit=limit,
        )
        assert data["setConcurrencyLimit"] is True

    def launch_backfill(
        self,
        assets: str | list[str],
        partitions: list[str],
        run_config: dict[str, Any] | None = None,
    ) -> str:
        names = [assets] if isinstance(assets, str) else assets
        params: dict[str, Any] = {
            "partitionNames": partitions,
            "assetSelection": [{"path": [name]} for name in names],
        }
        if run_config is not None:
            params["runConfigData"] = run_config
        data = self.graphql(
            """mutation ($params: LaunchBackfillParams!) {
                 launchPartitionBackfill(backfillParams: $params) {
                   __typename
                   ... on LaunchBackfillSuccess { backfillId }
                   ... on Error { message } } }""",
            params=params,
        )
        result = data["launchPartitionBackfill"]
        assert result["__typename"] == "LaunchBackfillSuccess", result
        return str(result["backfillId"])

    def backfill(self, backfill_id: str) -> dict[str, Any]:
        data = self.graphql(
            """query ($id: String!) { partitionBackfillOrError(backfillId: $id) {
                 __typename
                 ... on PartitionBackfill { id status runs { runId status } }
                 ... on Error { message } } }""",
            id=backfill_id,
        )
        backfill = data["partitionBackfillOrError"]
        assert backfill["__typename"] == "PartitionBackfill", backfill
        return backfill

    def runs(self) -> list[dict[str, Any]]:
        data = self.graphql(
            """{ runsOrError(limit: 200) { __typename ... on Runs { results {
                 runId status creationTime startTime endTime
                 assetSelection { path } tags { key value } } } } }"""
        )
        runs = data["runsOrError"]["results"]
        for run in runs:
            run["assets"] = {"/".join(key["path"]) for key in run.get("assetSelection") or []}
            run["tags"] = {tag["key"]: tag["value"] for tag in run["tags"]}
        return runs

    def run(self, run_id: str) -> dict[str, Any]:
        (run,) = [item for item in self.runs() if item["runId"] == run_id]
        return run

    def run_event_times(self, run_id: str) -> dict[str, float]:
        """Seconds since the epoch of the run's lifecycle events, by GraphQL type name."""
        data = self.graphql(
            """query ($id: ID!) { logsForRun(runId: $id, limit: 1000) {
                 __typename ... on EventConnection { events { __typename
                   ... on MessageEvent { timestamp } } } } }""",
            id=run_id,
        )
        times: dict[str, float] = {}
        for event in data["logsForRun"].get("events") or []:
            if "timestamp" in event:
                times.setdefault(event["__typename"], int(event["timestamp"]) / 1000)
        return times

    def materializations(self, asset: str) -> list[dict[str, Any]]:
        """The asset's materializations, oldest first, with metadata as {label: entry}."""
        data = self.graphql(
            """query ($key: AssetKeyInput!) { assetOrError(assetKey: $key) {
                 __typename ... on Asset { assetMaterializations(limit: 500) {
                   partition runId timestamp
                   metadataEntries { __typename label
                     ... on MarkdownMetadataEntry { mdStr }
                     ... on IntMetadataEntry { intValue }
                     ... on FloatMetadataEntry { floatValue }
                     ... on TextMetadataEntry { text }
                     ... on PathMetadataEntry { path }
                     ... on UrlMetadataEntry { url }
                     ... on JsonMetadataEntry { jsonString }
                     ... on TableMetadataEntry { table { records } } } } } } }""",
            key={"path": [asset]},
        )
        found = data["assetOrError"]
        if found["__typename"] != "Asset":
            return []
        events = found["assetMaterializations"]
        for event in events:
            event["metadata"] = {entry["label"]: entry for entry in event["metadataEntries"]}
        return sorted(events, key=lambda event: int(event["timestamp"]))

    def check_executions(self, asset: str, check: str) -> list[dict[str, Any]]:
        data = self.graphql(
            """query ($key: AssetKeyInput!, $check: String!) {
                 assetCheckExecutions(assetKey: $key, checkName: $check, limit: 50) {
                   runId status partition evaluation { success severity } } }""",
            key={"path": [asset]},
            check=check,
        )
        return list(data["assetCheckExecutions"])


def _signal_group(group: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, sig)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def dev_environment(terrarium_home: Path, store: Path) -> dict[str, str]:
    """The environment for `dagster dev`: ours, minus any TERRARIUM_* the developer has set."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("TERRARIUM_")}
    env.update(
        {
            "TERRARIUM_HOME": str(terrarium_home),
            "TERRARIUM_DB": str(store),
            "TERRARIUM_SENSOR_INTERVAL": "1",
            "TERRARIUM_OFFLINE": "1",
            "DAGSTER_DISABLE_TELEMETRY": "1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


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
        [str(Path(sys.executable).with_name("terrarium")), *args],
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
    from terrarium_dagster.corpus.reader import Corpus

    with Corpus(sample_db) as corpus:
        expected_keys = [thread.key for thread in corpus.threads()]
    assert len(expected_keys) >= 3, "the sample quest needs at least three threads"
    dev = dagster_dev
    dev.wait_until_loaded()

    # The discovery sensor (running by default) adds the sample's threads, in story order.
    keys = dev.wait_for(
        lambda: (found := dev.partition_keys("thread_annotations")) == expected_keys and found,
        timeout=60,
        what="thread_discovery_sensor to add the sample's threads",
    )
    assert keys == expected_keys

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
    assert [event["partition"] for event in annotations] == keys
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

    # Lineage: each materialization names its checkpoint and links its entries to their posts.
    touched_any = False
    for event in annotations:
        metadata = event["metadata"]
        assert metadata["checkpoint_id"]["__typename"] == "IntMetadataEntry"
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

    # An automation tick, then the backfill daemon's (every 30 s), then the run.
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
            _run_cli(
                "export", "--format", fmt, "--out", str(out), "--as-of-thread", key, env=dev.env
            )
            produced = _export_files(out)
            assert produced, f"terrarium export --format {fmt} wrote nothing"
            _match, mismatch, errors = filecmp.cmpfiles(folder, out, produced, shallow=False)
            assert not mismatch and not errors, (key, fmt, mismatch, errors)
