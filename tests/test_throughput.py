"""Many requests in flight, one story order: the concurrent engine over real loopback servers.

The servers answer with the offline backend (the same request, the same answer) after random
delays, so replies arrive in any order; what the run writes must not depend on that order.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from terrarium_dagster.cli import main
from terrarium_dagster.testing.batching import BatchingServer
from terrarium_dagster.testing.quality import score, vocabulary_in
from terrarium_dagster.testing.synthetic import generate_corpus
from tests.support.cli import TERRARIUM, run_args
from tests.support.store_dump import store_dump


@pytest.fixture(scope="module")
def quest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three threads of about fifteen scenes each: blocks of 8 are full ones."""
    path = tmp_path_factory.mktemp("quest") / "quest.db"
    return generate_corpus(path, threads=3, posts_per_thread=110, seed=18)


@pytest.fixture
def jittery() -> Iterator[BatchingServer]:
    with BatchingServer(jitter_s=0.03, seed=None) as server:
        yield server


def _run(corpus: Path, db: Path, url: str, *extra: str) -> int:
    return main([*run_args(db, corpus, agent_url=url), *extra])


@dataclass(frozen=True)
class ConcurrentRun:
    """A run of the quest at concurrency 8 on a jittery server of its own: the store it wrote,
    the most requests the server saw at once, and the body of every chat request it sent."""

    store: Path
    peak_in_flight: int
    chat_bodies: list[dict[str, Any]]

    def copy(self, tmp_path: Path) -> Path:
        """The store, copied for a test (a file of its own to read or write)."""
        copied = tmp_path / "concurrent-8.db"
        shutil.copyfile(self.store, copied)
        return copied


@pytest.fixture(scope="module")
def at_eight(quest: Path, tmp_path_factory: pytest.TempPathFactory) -> ConcurrentRun:
    """The quest annotated at concurrency 8, once for the module: the tests that read such a run
    (its glossary, its recall, its requests) read this one."""
    db = tmp_path_factory.mktemp("at_eight") / "s.db"
    with BatchingServer(jitter_s=0.03, seed=None) as server:
        assert _run(quest, db, server.url, "--concurrency", "8") == 0
        return ConcurrentRun(db, server.peak_in_flight, list(server.chat_bodies))


def _scene_counts(corpus: Path) -> list[int]:
    from terrarium_dagster.corpus.reader import Corpus

    with closing(Corpus(corpus)) as reader:
        return [len(reader.scenes(thread.id)) for thread in reader.threads()]


def test_the_batching_server_takes_a_burst_of_connections_without_resetting_any() -> None:
    """A run at --concurrency 16 through `python -m terrarium_dagster.testing.batching` saw
    "Connection reset by peer; retry 1 of 5" on two requests sent at once (socketserver's
    listen backlog of 5): 64 connections opened together are all answered."""
    import http.client
    import threading
    from urllib.parse import urlparse

    failures: list[str] = []
    with BatchingServer() as server:
        address = urlparse(server.url)
        barrier = threading.Barrier(64)

        def ask() -> None:
            barrier.wait()
            try:
                conn = http.client.HTTPConnection(address.hostname, address.port, timeout=10)
                conn.request("GET", "/v1/models")
                response = conn.getresponse()
                response.read()
                conn.close()
                if response.status != 200:
                    failures.append(str(response.status))
            except OSError as error:
                failures.append(repr(error))

        threads = [threading.Thread(target=ask) for _ in range(64)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert failures == []


def test_two_runs_at_concurrency_8_write_the_same_glossary_whatever_the_reply_order(
    quest: Path, at_eight: ConcurrentRun, jittery: BatchingServer, tmp_path: Path
) -> None:
    assert min(_scene_counts(quest)) >= 8, "the quest must fill blocks of 8"
    first, second = at_eight.copy(tmp_path), tmp_path / "second.db"
    peak = at_eight.peak_in_flight
    assert _run(quest, second, jittery.url, "--concurrency", "8") == 0
    assert 4 <= peak <= 8, f"the server saw at most {peak} requests at once"
    assert store_dump(first) == store_dump(second)
    with closing(sqlite3.connect(first)) as conn:
        status = dict(conn.execute("SELECT status, COUNT(*) FROM thread_state GROUP BY status"))
    assert status == {"curated": 3}


def test_a_concurrent_run_keeps_the_serial_runs_recall_and_adds_no_duplicate(
    quest: Path, at_eight: ConcurrentRun, jittery: BatchingServer, tmp_path: Path
) -> None:
    serial, concurrent = tmp_path / "serial.db", at_eight.copy(tmp_path)
    assert _run(quest, serial, jittery.url, "--concurrency", "1") == 0
    gold = vocabulary_in(quest, 18)
    serial_score, concurrent_score = score(serial, gold), score(concurrent, gold)
    assert concurrent_score.recall >= serial_score.recall, (concurrent_score, serial_score)
    assert concurrent_score.duplicates <= serial_score.duplicates
    with closing(sqlite3.connect(concurrent)) as conn:
        unsourced = conn.execute(
            "SELECT COUNT(*) FROM entry e WHERE e.deleted = 0 AND NOT EXISTS "
            "(SELECT 1 FROM provenance p WHERE p.entry_id = e.id)"
        ).fetchone()[0]
    assert unsourced == 0, "every entry keeps a source"


def test_sigkill_at_random_points_of_a_concurrent_run_resumes_to_the_uninterrupted_store(
    quest: Path, jittery: BatchingServer, tmp_path: Path
) -> None:
    baseline = tmp_path / "baseline.db"
    assert _run(quest, baseline, jittery.url, "--concurrency", "6") == 0
    calls_per_run = jittery.chat_requests

    killed = tmp_path / "killed.db"
    command = [TERRARIUM, *run_args(killed, quest, agent_url=jittery.url, concurrency=6)]
    rng = random.Random(1125)
    kills = 0
    for share in sorted(rng.uniform(0.1, 0.9) for _ in range(3)):
        start = jittery.chat_requests
        process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
        )
        target = start + max(2, int(calls_per_run * share / 3))
        deadline = time.monotonic() + 120
        while jittery.chat_requests < target and process.poll() is None:
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.01)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            kills += 1
        process.wait(timeout=30)
        assert process.stderr is not None
        process.stderr.close()
    assert kills >= 2
    resumed = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert store_dump(killed) == store_dump(baseline)


def test_two_replicas_one_failing_for_a_while_finish_on_the_other_and_the_books_name_each(
    quest: Path, tmp_path: Path
) -> None:
    single = tmp_path / "single.db"
    pair = tmp_path / "pair.db"
    with closing(sqlite3.connect(quest)) as conn:
        first_thread = str(conn.execute("SELECT MIN(id) FROM thread").fetchone()[0])
    with (
        BatchingServer(jitter_s=0.01) as steady,
        BatchingServer(jitter_s=0.01, fail_first=8) as flaky,
    ):
        assert (
            _run(quest, single, steady.url, "--concurrency", "4", "--threads", f"..{first_thread}")
            == 0
        )
        steady_before = steady.chat_requests
        urls = f"{flaky.url},{steady.url}"
        code = _run(
            quest,
            pair,
            urls,
            "--concurrency",
            "4",
            "--threads",
            f"..{first_thread}",
            "--max-retries",
            "0",
        )
        assert code == 0
        assert flaky.chat_failures == 8 and flaky.chat_requests > 8, "the flaky one came back"
        served = {flaky.url: flaky.chat_requests, steady.url: steady.chat_requests - steady_before}
    with closing(sqlite3.connect(pair)) as conn:
        rows = conn.execute(
            "SELECT server, COUNT(*), SUM(error IS NOT NULL) FROM agent_call GROUP BY server"
        ).fetchall()
    books = {server: calls for server, calls, _ in rows}
    failed = {server: int(bad or 0) for server, _, bad in rows}
    assert books == {url.removesuffix("/v1"): count for url, count in served.items()}
    assert failed[flaky.url.removesuffix("/v1")] == 8
    glossary = ("entry", "alias", "provenance")
    one, two = store_dump(single), store_dump(pair)
    assert {t: one[t] for t in glossary} == {t: two[t] for t in glossary}

    status = subprocess.run(
        [TERRARIUM, "status", "--db", str(pair)], capture_output=True, text=True, timeout=60
    )
    assert f"server {steady.url.removesuffix('/v1')}:" in status.stdout
    assert "8 failed" in status.stdout


def test_when_every_replica_fails_the_error_names_each_one(quest: Path, tmp_path: Path) -> None:
    with (
        BatchingServer(fail_first=10_000) as first,
        BatchingServer(fail_first=10_000) as second,
    ):
        urls = f"{first.url},{second.url}"
        process = subprocess.run(
            [
                TERRARIUM,
                *run_args(tmp_path / "s.db", quest, agent_url=urls, max_retries=0, concurrency=4),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert process.returncode != 0
    last = process.stderr.strip().splitlines()[-1]
    assert first.url.removesuffix("/v1") in last and second.url.removesuffix("/v1") in last
    assert "Traceback" not in process.stderr


_POST = re.compile(r"\[post (\d+)|>>(\d+)")
_SCENE_THREAD = re.compile(r"^# Scene (\d+)#", re.MULTILINE)


def test_no_request_and_no_as_of_export_of_a_concurrent_run_holds_a_later_thread(
    quest: Path, at_eight: ConcurrentRun, tmp_path: Path
) -> None:
    db = at_eight.copy(tmp_path)
    with closing(sqlite3.connect(quest)) as conn:
        thread_of = dict(conn.execute("SELECT id, thread_id FROM post"))
        order = [row[0] for row in conn.execute("SELECT id FROM thread ORDER BY id")]
    position = {thread: index for index, thread in enumerate(order)}
    checked = 0
    for body in at_eight.chat_bodies:
        text = "\n".join(str(m.get("content") or "") for m in body["messages"])
        scenes = _SCENE_THREAD.findall(str(body["messages"][-1].get("content") or ""))
        if not scenes:
            continue
        at = position[thread_of[int(scenes[-1])]]
        for match in _POST.finditer(text):
            post = int(match.group(1) or match.group(2))
            if post in thread_of:
                assert position[thread_of[post]] <= at, f"a request for thread {at} cites {post}"
        checked += 1
    assert checked > 20

    first_thread = order[0]
    out = tmp_path / "asof.json"
    export = ["export", "--db", str(db), "--format", "json", "--out", str(out)]
    assert main([*export, "--as-of-thread", str(first_thread)]) == 0
    exported = json.loads(out.read_text(encoding="utf-8"))
    entries = exported["entries"] if isinstance(exported, dict) else exported
    assert entries
    for entry in entries:
        for source in entry.get("sources", []):
            assert thread_of[int(source["post_id"])] == first_thread, source


def test_a_dagster_backfill_runs_at_the_resources_concurrency_and_reports_it_per_thread(
    sample_db: Path, tmp_path: Path
) -> None:
    import dagster as dg

    from terrarium_dagster.corpus.reader import Corpus
    from terrarium_dagster.defs.assets import thread_annotations, thread_glossary
    from terrarium_dagster.defs.partitions import range_tags, threads_partitions
    from terrarium_dagster.defs.resources import AgentResource, CorpusResource, StoreResource

    with Corpus(sample_db) as corpus:
        keys = [thread.key for thread in corpus.threads()][:2]
    resources = {
        "corpus": CorpusResource(path=str(sample_db)),
        "store": StoreResource(path=str(tmp_path / "store.db")),
        "agent": AgentResource(offline=True, concurrency=4),
    }
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(threads_partitions.name, keys)
        result = dg.materialize(
            [thread_glossary],
            selection=[thread_annotations],
            instance=instance,
            resources=resources,
            tags=range_tags(keys[0], keys[-1]),
        )
    assert result.success
    events = [
        event
        for event in result.asset_materializations_for_node("thread_glossary")
        if event.asset_key == thread_annotations
    ]
    assert [event.partition for event in events] == keys
    for event in events:
        assert event.metadata["model_calls"].value > 0
        assert event.metadata["completion_tokens_per_s"].value > 0
        assert event.metadata["requests_in_flight_peak"].value >= 2


def test_progress_says_one_line_per_thread_when_not_on_a_terminal() -> None:
    import io

    from terrarium_dagster.cli import Progress

    now = [0.0]
    stream = io.StringIO()
    progress = Progress(stream, clock=lambda: now[0])
    progress.plan(2, 4, lambda: 3)
    for thread, scenes in (("t00000-1", 2), ("t00001-2", 2)):
        progress("scene", {"created": 0, "updated": 0, "scene_ended": False})  # a part: no scene
        for _ in range(scenes):
            now[0] += 10
            progress("call", {"scene_id": "x"})
            progress("scene", {"created": 1, "updated": 0, "completion": int(now[0]) * 5})
        progress("thread", {"thread_key": thread})
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("thread t00000-1 done (1/2): 2 scenes in 20.0s")
    assert "scenes 2/4" in lines[0] and "ETA 0m20s" in lines[0] and "5 tok/s" in lines[0]
    assert "scenes 4/4" in lines[1] and "ETA —" in lines[1]


def test_sigint_during_a_concurrent_run_stops_at_once_and_resumes_to_the_uninterrupted_store(
    quest: Path, tmp_path: Path
) -> None:
    with BatchingServer(jitter_s=0.3) as slow:
        baseline = tmp_path / "baseline.db"
        assert _run(quest, baseline, slow.url, "--concurrency", "8", "--threads", "..1000000") == 0
        db = tmp_path / "s.db"
        command = [
            TERRARIUM,
            *run_args(db, quest, agent_url=slow.url, concurrency=8, threads="..1000000"),
        ]
        start = slow.chat_requests
        process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        deadline = time.monotonic() + 60
        while slow.chat_requests < start + 10 and time.monotonic() < deadline:
            time.sleep(0.02)
        interrupted = time.monotonic()
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=30)
        waited = time.monotonic() - interrupted
        assert process.stderr is not None
        stderr = process.stderr.read()
        process.stderr.close()
        assert code == 130, stderr
        assert waited < 5, f"Ctrl-C took {waited:.1f} s"
        assert "Traceback" not in stderr and "resume" in stderr
        resumed = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert store_dump(db) == store_dump(baseline)
