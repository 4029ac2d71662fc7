"""Exact resume, byte for byte: a run SIGKILLed at chosen points and resumed writes what an
uninterrupted run writes.

Real `terrarium run` processes over a generated quest at a small budget (so compaction, summaries,
the flush and a multi-request curation all happen), against a loopback server answering with the
offline backend (tests/support/kill_server.py). The server SIGKILLs the run when a chosen request
arrives, deterministically: right after a scene committed (the next scene's first request), in
the middle of a compaction (a flush request), inside a curation (its first request, with the thread
end committed, and a later one, with decisions made but not committed) and at a thread boundary
(the next thread's first request, after the curation committed). Each time the same command
resumes. The store is then compared with an uninterrupted run's (tests/support/store_dump.py):
glossary, aliases, provenance, revisions, curator decisions, compactions, snapshots, thread
progress and the saved context state (the token counter's calibration and exact counts included),
byte for byte apart from times and run ids.
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.testing.synthetic import generate_corpus
from tests.support.cli import TERRARIUM, run_args, said
from tests.support.kill_server import ChatRequest, KillPoint, KillServer, run_kill_server
from tests.support.store_dump import dump_differences, store_dump

BUDGET = 8192


@pytest.fixture(scope="module")
def quest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("exact_resume") / "quest.db"
    return generate_corpus(
        path, threads=6, posts_per_thread=10, seed=3, qm_ratio=0.5, words_per_post=(150, 450)
    )


@pytest.fixture(scope="module")
def shared_server() -> Iterator[KillServer]:
    """One server for the module's tests on `quest` (each starts from `reset`)."""
    with run_kill_server() as server:
        yield server


@pytest.fixture(scope="module")
def uninterrupted(
    shared_server: KillServer, quest: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, list[tuple[ChatRequest, int]]]:
    """The uninterrupted run over `quest`, once for the module (the same command, the same
    answers: every test's baseline was this store), and the requests it sent."""
    shared_server.reset()
    baseline = tmp_path_factory.mktemp("uninterrupted") / "baseline.db"
    assert _run_until_done(shared_server, quest, baseline, attempts=1) == [0]
    return baseline, list(shared_server.requests)


@pytest.fixture
def server(
    shared_server: KillServer, uninterrupted: tuple[Path, list[tuple[ChatRequest, int]]]
) -> KillServer:
    """The shared server, forgetting what earlier tests asked of it."""
    shared_server.reset()
    return shared_server


def _command(server: KillServer, corpus: Path, db: Path) -> list[str]:
    return [
        TERRARIUM,
        *run_args(db, corpus, agent_url=server.url, context_budget=BUDGET, max_tokens=768),
    ]


def _run_until_done(
    server: KillServer, corpus: Path, db: Path, attempts: int, stopped: tuple[int, ...] = (-9,)
) -> list[int]:
    """Run the same command until it exits 0; the exit codes of every attempt."""
    codes: list[int] = []
    for _ in range(attempts):
        process = subprocess.Popen(
            _command(server, corpus, db),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        server.victim = process
        try:
            _, err = process.communicate(timeout=300)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=30)
        codes.append(process.returncode)
        assert process.returncode in (0, *stopped), err
        if process.returncode == 0:
            return codes
    raise AssertionError(f"no run finished in {attempts} attempts: {codes}")


def test_sigkill_at_scene_commits_compaction_curation_and_thread_boundaries_resumes_exactly(
    quest: Path,
    uninterrupted: tuple[Path, list[tuple[ChatRequest, int]]],
    server: KillServer,
    tmp_path: Path,
) -> None:
    with Corpus(quest) as corpus:
        threads = [thread.id for thread in corpus.threads()]
    baseline, sent = uninterrupted
    seen = Counter((request.kind, request.thread_id) for request, _ in sent)
    # the kill points below are requests an uninterrupted run sends
    twice_curated = next(t for t in threads[:4] if seen[("curate", t)] >= 2)
    assert seen[("flush", None)] >= 2, "the budget is meant to make the run compact"
    scene_three = next(
        t for t in threads[1:] if any(r.thread_id == t and r.scene_number == 3 for r, _ in sent)
    )
    kill_points = [
        KillPoint("scene", scene_three, scene_number=3, round=0),  # scene 2 just committed
        KillPoint("flush", occurrence=2),  # inside a compaction, inside a scene
        KillPoint("curate", twice_curated, occurrence=2),  # a curation half done
        KillPoint("curate", threads[3]),  # the thread end committed, its curation open
        KillPoint("scene", threads[4], scene_number=1, round=0),  # after a curation commit
    ]
    server.kill_points = kill_points
    resumed = tmp_path / "resumed.db"
    codes = _run_until_done(server, quest, resumed, attempts=len(kill_points) + 1)
    assert set(server.kills) == set(kill_points), "every kill point was reached"
    assert codes == [-9] * len(kill_points) + [0]

    expected, actual = store_dump(baseline), store_dump(resumed)
    assert dump_differences(expected, actual) == []
    assert expected == actual
    # what the comparison covered: a compacted context with the counter's learned state in it
    (state,) = [json.loads(row[1]) for row in actual["context_state"][1:]]
    assert state["calibration"]["observations"] > 0 and state["anchors"]
    assert len(actual["compaction"]) > 1 and len(actual["curator_decision"]) > 1
    assert len(actual["snapshot"]) - 1 == len(threads)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_clean_stop_in_a_scene_a_flush_and_a_curation_resumes_exactly(
    quest: Path,
    uninterrupted: tuple[Path, list[tuple[ChatRequest, int]]],
    server: KillServer,
    tmp_path: Path,
    stop: int,
) -> None:
    """SIGINT/SIGTERM abandon the call in flight and exit 130; the finished store is the
    uninterrupted run's, the clean stop's own bookkeeping included."""
    with Corpus(quest) as corpus:
        threads = [thread.id for thread in corpus.threads()]
    baseline, _sent = uninterrupted
    kill_points = [
        KillPoint("scene", threads[1], scene_number=2, round=0, stop_signal=stop),
        KillPoint("flush", occurrence=2, stop_signal=stop),
        KillPoint("curate", threads[2], stop_signal=stop),
    ]
    server.kill_points = kill_points
    resumed = tmp_path / "resumed.db"
    codes = _run_until_done(server, quest, resumed, attempts=len(kill_points) + 1, stopped=(130,))
    assert set(server.kills) == set(kill_points), "every stop point was reached"
    assert codes == [130] * len(kill_points) + [0]
    expected, actual = store_dump(baseline), store_dump(resumed)
    assert dump_differences(expected, actual) == []


def test_a_flush_that_fails_stops_the_run_at_once_and_the_resumed_run_is_exact(
    quest: Path,
    uninterrupted: tuple[Path, list[tuple[ChatRequest, int]]],
    server: KillServer,
    tmp_path: Path,
) -> None:
    """The pre-compaction flush is a call like any other: when the server fails it for good,
    the run stops after that one call's retries (not after the summaries' too), and the
    resumed run flushes again and writes what an uninterrupted run writes."""
    baseline, _sent = uninterrupted
    server.failing = {"flush"}
    resumed = tmp_path / "resumed.db"
    command = [*_command(server, quest, resumed), "--max-retries", "2"]
    stopped = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert stopped.returncode == 1, stopped.stderr
    lines = [line for line in stopped.stderr.splitlines() if said(line)]
    assert len(lines) == 1 and "503" in lines[0], stopped.stderr
    failed = [request for request, status in server.requests if status == 503]
    assert len(failed) == 3 and {r.kind for r in failed} == {"flush"}  # one call, 2 retries
    assert server.requests[-1][1] == 503, "nothing was asked after the flush failed"
    server.failing = set()
    assert _run_until_done(server, quest, resumed, attempts=1) == [0]
    assert dump_differences(store_dump(baseline), store_dump(resumed)) == []


def test_a_stop_between_two_parts_of_a_split_scene_resumes_at_the_next_part_exactly(
    tmp_path: Path,
) -> None:
    """Scenes far longer than the room are read in parts, one transaction each: a SIGKILL or a
    SIGTERM between two parts (and inside a later part) resumes at the next part, and the store
    is the uninterrupted run's."""
    quest = generate_corpus(
        tmp_path / "long.db",
        threads=2,
        posts_per_thread=8,
        seed=5,
        qm_ratio=0.9,
        words_per_post=(700, 2600),
    )
    with Corpus(quest) as corpus:
        first = corpus.threads()[0].id
    with run_kill_server() as server:
        baseline = tmp_path / "baseline.db"
        assert _run_until_done(server, quest, baseline, attempts=1) == [0]
        openings = [r for r, _ in server.requests if r.kind == "scene" and r.round == 0]
        assert sum(1 for r in openings if (r.thread_id, r.scene_number) == (first, 1)) >= 3
        kill_points = [
            KillPoint("scene", first, scene_number=1, round=0, occurrence=2),  # part 1 done
            KillPoint("scene", first, scene_number=1, round=0, occurrence=3, stop_signal=15),
        ]
        server.requests.clear()
        server.kill_points = kill_points
        resumed = tmp_path / "resumed.db"
        codes = _run_until_done(server, quest, resumed, attempts=3, stopped=(-9, 130))
    assert codes == [-9, 130, 0]
    assert dump_differences(store_dump(baseline), store_dump(resumed)) == []
