"""`dagster dev` on loopback for tests and benchmarks: started in its own process group with a
temporary DAGSTER_HOME, driven through the GraphQL API the UI uses, stopped with its children."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx
import yaml

REPO = Path(__file__).resolve().parents[2]
# First on the PYTHONPATH of a test's `dagster dev`: its backfill daemon loops every few seconds
# (sitecustomize.py); an instance may name the scheduler there (due_at_once.py).
DAGSTER_TICKS = Path(__file__).resolve().parent / "dagster_ticks"
# Added to the instance a test's `dagster dev` runs on (the shipped file, copied): the queue is
# looked at every second (Dagster's default is every 5 s), so a run freed from its pool starts
# sooner. The pools and limits stay the shipped file's (its `concurrency` settings win).
QUICK_QUEUE = {
    "run_coordinator": {
        "module": "dagster._core.run_coordinator",
        "class": "QueuedRunCoordinator",
        "config": {"dequeue_interval_seconds": 1},
    }
}
# The run tags that say what launched a run, for `DagsterDev.explain`.
ORIGIN_TAGS = frozenset(
    f"dagster/{name}"
    for name in (
        "backfill",
        "sensor_name",
        "schedule_name",
        "from_automation_condition",
        "run_key",
        "parent_run_id",
        "root_run_id",
    )
)
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

    def __init__(
        self,
        workdir: Path,
        env: dict[str, str],
        *,
        port: int | None = None,
        workspace: Path = REPO / "workspace.yaml",
        instance: Path = REPO / "dagster.yaml",
        quick: bool = True,
    ) -> None:
        """`quick`: the backfill daemon and the run queue loop every second or two (see
        `DAGSTER_TICKS`, `QUICK_QUEUE`), for tests; a benchmark of what a user waits passes
        False and gets Dagster's own pace."""
        self.workdir = workdir
        self.quick = quick
        self.workspace = workspace
        self.instance = instance
        self.home = workdir / "dagster_home"
        self.log_path = workdir / "dagster_dev.log"
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/graphql"
        self.env = {**env, "DAGSTER_HOME": str(self.home)}
        if quick:
            paths = [str(DAGSTER_TICKS), *filter(None, [env.get("PYTHONPATH")])]
            self.env["PYTHONPATH"] = os.pathsep.join(paths)
        self.process: subprocess.Popen[bytes] | None = None
        self.client = httpx.Client(timeout=httpx.Timeout(30.0, connect=5.0))

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        write_instance(self.instance, self.home, quick=self.quick)
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "dagster",
                    "dev",
                    "-w",
                    str(self.workspace),
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

    def wait_for_threads(self, corpus: Path, *, timeout: float = 60) -> list[str]:
        """Once the code location has loaded, wait until the discovery sensor (running by
        default) has added every thread of `corpus` as a partition, in story order; their keys."""
        from terrarium_dagster.corpus.reader import Corpus

        with Corpus(corpus) as reader:
            keys = [thread.key for thread in reader.threads()]
        self.wait_until_loaded()
        self.wait_for(
            lambda: self.partition_keys("thread_annotations") == keys,
            timeout=timeout,
            what=f"thread_discovery_sensor to add the {len(keys)} threads of {corpus.name}",
        )
        return keys

    def partition_keys(self, asset: str) -> list[str]:
        data = self.graphql(
            """query ($key: AssetKeyInput!) { assetNodeOrError(assetKey: $key) {
                 __typename ... on AssetNode { partitionKeys } } }""",
            key={"path": asset.split("/")},
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

    def launch_run(self, assets: list[str], partition: str) -> str:
        """One run of `assets` for one partition, as the UI's *Materialize* on a partition."""
        data = self.graphql(
            """mutation ($params: ExecutionParams!) { launchPipelineExecution(
                 executionParams: $params) { __typename
                 ... on LaunchRunSuccess { run { runId } }
                 ... on Error { message } } }""",
            params={
                "selector": {
                    "repositoryLocationName": "terrarium_dagster",
                    "repositoryName": "__repository__",
                    "pipelineName": "__ASSET_JOB",
                    "assetSelection": [{"path": [name]} for name in assets],
                },
                "mode": "default",
                "executionMetadata": {"tags": [{"key": "dagster/partition", "value": partition}]},
            },
        )
        result = data["launchPipelineExecution"]
        assert result["__typename"] == "LaunchRunSuccess", result
        return str(result["run"]["runId"])

    def launch_backfill(
        self,
        assets: str | list[str],
        partitions: list[str],
        run_config: dict[str, Any] | None = None,
        tags: dict[str, str] | None = None,
    ) -> str:
        names = [assets] if isinstance(assets, str) else assets
        params: dict[str, Any] = {
            "partitionNames": partitions,
            "assetSelection": [{"path": name.split("/")} for name in names],
        }
        if run_config is not None:
            params["runConfigData"] = run_config
        if tags:
            params["tags"] = [{"key": key, "value": value} for key, value in tags.items()]
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
                   partition runId timestamp description stepKey
                   metadataEntries { __typename label
                     ... on MarkdownMetadataEntry { mdStr }
                     ... on IntMetadataEntry { intValue }
                     ... on FloatMetadataEntry { floatValue }
                     ... on TextMetadataEntry { text }
                     ... on PathMetadataEntry { path }
                     ... on UrlMetadataEntry { url }
                     ... on JsonMetadataEntry { jsonString }
                     ... on TableMetadataEntry { table { records } } } } } } }""",
            key={"path": asset.split("/")},
        )
        found = data["assetOrError"]
        if found["__typename"] != "Asset":
            return []
        events = found["assetMaterializations"]
        for event in events:
            event["metadata"] = {entry["label"]: entry for entry in event["metadataEntries"]}
        return sorted(events, key=lambda event: int(event["timestamp"]))

    def explain(self, events: list[dict[str, Any]]) -> str:
        """Materializations as lines a failed assertion can show: which run (and what launched
        it: backfill, sensor, schedule, automation) wrote each one, when, and what it said."""
        runs = {run["runId"]: run for run in self.runs()}
        lines = []
        for event in events:
            run = runs.get(event["runId"], {})
            tags = run.get("tags", {})
            origin = {key: value for key, value in tags.items() if key in ORIGIN_TAGS}
            lines.append(
                f"{event['partition']} at {event['timestamp']} run {event['runId']} "
                f"({run.get('status', '?')}, step {event.get('stepKey')}) {origin}: "
                f"{event.get('description')}"
            )
        return "\n".join(lines)

    def checks_for_latest(self, asset: str) -> dict[str, dict[str, Any] | None]:
        """Each check of `asset` and its execution for the asset's latest materialization (None
        is what the UI shows as "Not evaluated")."""
        data = self.graphql(
            """query ($key: AssetKeyInput!) { assetNodeOrError(assetKey: $key) { __typename
                 ... on AssetNode { assetChecksOrError { __typename ... on AssetChecks {
                   checks { name executionForLatestMaterialization { runId status } } } } } } }""",
            key={"path": asset.split("/")},
        )
        checks = data["assetNodeOrError"]["assetChecksOrError"]["checks"]
        return {check["name"]: check["executionForLatestMaterialization"] for check in checks}

    def check_executions(self, asset: str, check: str) -> list[dict[str, Any]]:
        data = self.graphql(
            """query ($key: AssetKeyInput!, $check: String!) {
                 assetCheckExecutions(assetKey: $key, checkName: $check, limit: 50) {
                   runId status partition evaluation { success severity } } }""",
            key={"path": asset.split("/")},
            check=check,
        )
        return list(data["assetCheckExecutions"])


def _signal_group(group: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, sig)


def _group_alive(group: int) -> bool:
    """Whether a process of the group still runs. A zombie does not: one of `dagster dev`'s
    children, orphaned when it exits, can stay a zombie for seconds (until something reaps it),
    and `killpg(group, 0)` counted it, so every stop waited out its whole deadline."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            state, _ppid, pgrp = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:3]
            if int(pgrp) == group and state != "Z":
                return True
    return False


def write_instance(source: Path, home: Path, *, quick: bool = True) -> None:
    """DAGSTER_HOME's dagster.yaml: `source` as it is, then (`quick`) `QUICK_QUEUE`."""
    text = source.read_text(encoding="utf-8")
    if quick:
        assert "run_coordinator" not in (yaml.safe_load(text) or {}), f"{source} sets its own"
        added = yaml.safe_dump(QUICK_QUEUE, sort_keys=False)
        text = f"{text}\n# added by tests/support/dagster_dev.py\n{added}"
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(text, encoding="utf-8")


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
