"""The thread boundary off the critical path: the fold the next thread starts with (the flush, the
finished thread's summary) is asked for beside the curation, not after it, and the run writes
what the old order (curation, then the fold, one request at a time) writes.

Real `terrarium run`s over a generated quest of three threads against a loopback server answering
with the offline backend. The server can hold each curation request of a thread until that
thread's summary request has arrived: a run that sends the summary only after the curation would
wait out the hold, so the overlap is proved by what the server saw, not by timing.
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import httpx
import pytest

from terrarium_dagster.agent.calls import SceneCalls
from terrarium_dagster.agent.loop import Annotator
from terrarium_dagster.backends.offline import OfflineBackend
from terrarium_dagster.cli import main
from terrarium_dagster.context.compaction import manager as compaction_manager
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.testing.recurring import generate_recurring_quest
from terrarium_dagster.testing.synthetic import generate_corpus
from tests.support.cli import run_args
from tests.support.kill_server import (
    ChatRequest,
    KillPoint,
    KillServer,
    classify,
    run_kill_server,
)
from tests.support.serving import serving
from tests.support.store_dump import dump_differences, store_dump

HOLD_S = 30.0  # how long a held curation request waits for its thread's summary at most
STORY_HOLD_S = 2.0  # how long a story fold waits for a scene request to arrive at most
SUMMARY = "summarize_thread"
# a hold: the kind of request that waits for one of another kind (about the same thread)
BESIDE_CURATION = {"curate": SUMMARY, SUMMARY: "curate", "flush": "curate"}
BESIDE_FLUSH = {"flush": SUMMARY, SUMMARY: "flush"}


@pytest.fixture(scope="module")
def quest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("boundary") / "quest.db"
    return generate_corpus(path, threads=3, posts_per_thread=40, seed=3)


@pytest.fixture(scope="module")
def threads(quest: Path) -> list[int]:
    with closing(Corpus(quest)) as corpus:
        return [thread.id for thread in corpus.threads()]


@dataclass
class BoundaryServer:
    """What the server saw: every chat request's kind and thread, the requests in flight when
    each arrived, and the peak in flight. For the threads in `hold`, a curation request waits
    for the thread's summary to arrive, and the summary and the flush wait for a curation
    request to arrive: a run that sends them side by side has them with the server at once, a
    run that sends one after the other waits out `HOLD_S`. (`waits`: which kind waits for
    which.)"""

    url: str = ""
    hold: set[int] = field(default_factory=set)
    waits: dict[str, str] = field(default_factory=lambda: dict(BESIDE_CURATION))
    seen: list[ChatRequest] = field(default_factory=list)
    beside: list[tuple[ChatRequest, frozenset[tuple[str, int | None]]]] = field(
        default_factory=list
    )
    peak: int = 0
    # a kind that waits for one of another kind about the thread after its own (`next_of`)
    waits_next: dict[str, str] = field(default_factory=dict)
    next_of: dict[int, int] = field(default_factory=dict)
    # a story fold waits for a scene request to arrive; whether one did, a story fold each
    story_waits_scene: bool = False
    story_met: list[bool] = field(default_factory=list)
    _scene_after_story: threading.Event | None = None
    _flight: Counter[tuple[str, int | None]] = field(default_factory=Counter)
    _arrived: dict[tuple[str, int], threading.Event] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def arrive(self, request: ChatRequest) -> threading.Event | None:
        """Record `request`; the event it must wait for (None: none)."""
        key = (request.kind, request.thread_id)
        with self._lock:
            self.seen.append(request)
            self.beside.append((request, frozenset(k for k, n in self._flight.items() if n)))
            self._flight[key] += 1
            self.peak = max(self.peak, sum(self._flight.values()))
            if request.kind == "scene" and self._scene_after_story is not None:
                self._scene_after_story.set()
            if request.kind == "fold_story" and self.story_waits_scene:
                self._scene_after_story = threading.Event()
                return self._scene_after_story
            thread = request.thread_id
            if thread is None:
                return None
            self._event(request.kind, thread).set()
            if thread not in self.hold:
                return None
            if request.kind in self.waits_next:  # waits for a request about the next thread
                return self._event(self.waits_next[request.kind], self.next_of[thread])
            if request.kind not in self.waits:
                return None
            return self._event(self.waits[request.kind], thread)

    def leave(self, request: ChatRequest) -> None:
        with self._lock:
            self._flight[(request.kind, request.thread_id)] -= 1

    def _event(self, kind: str, thread_id: int) -> threading.Event:
        return self._arrived.setdefault((kind, thread_id), threading.Event())

    def met(self, kind: str, thread_id: int, other: str = "curate") -> bool:
        """Whether a `kind` request about `thread_id` and an `other` one (a curation request)
        about that thread were with the server at once."""
        for request, others in self.beside:
            for one, two in ((kind, other), (other, kind)):
                if (request.kind, request.thread_id) == (one, thread_id) and (
                    two,
                    thread_id,
                ) in others:
                    return True
        return False

    def met_next(self, kind: str, thread_id: int, other: str) -> bool:
        """Whether a `kind` request about `thread_id` and an `other` one about the thread after
        it were with the server at once."""
        pair = {(kind, thread_id), (other, self.next_of[thread_id])}
        return any(
            (request.kind, request.thread_id) in pair and (pair - {key}) <= others
            for request, others in self.beside
            for key in [(request.kind, request.thread_id)]
        )

    def kinds(self) -> Counter[str]:
        return Counter(request.kind for request in self.seen)

    def reset(
        self,
        hold: set[int],
        waits: dict[str, str] = BESIDE_CURATION,
        waits_next: dict[str, str] | None = None,
    ) -> None:
        with self._lock:
            self.hold, self.waits, self.seen, self.beside, self.peak = hold, waits, [], [], 0
            self.waits_next = dict(waits_next or {})
            self.story_waits_scene, self.story_met, self._scene_after_story = False, [], None
            self._arrived.clear()


_LEAVING = re.compile(r"leaving context: scenes (\d+)#")


def _about(payload: dict[str, object]) -> ChatRequest:
    """`classify`'s reading of a request, with the thread a flush is about (the thread whose
    scenes leave the context)."""
    request = classify(payload)
    if request.kind == "flush":
        messages = payload.get("messages")
        assert isinstance(messages, list)
        found = _LEAVING.search(str(messages[-1].get("content") or ""))
        if found:
            return replace(request, thread_id=int(found.group(1)))
    return request


@contextmanager
def _boundary_server() -> Iterator[BoundaryServer]:
    """A `BoundaryServer` on loopback answering with the offline backend."""
    state = BoundaryServer()
    backend = OfflineBackend(max_model_len=32768)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            return

        def _answer(self, body: bytes | None, done: Callable[[], None] = lambda: None) -> None:
            request = httpx.Request(self.command, f"http://offline{self.path}", content=body)
            response = backend.handle_request(request)
            done()  # out of flight before the client can read the answer and send the next
            self.send_response(response.status_code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(response.content)))
            self.end_headers()
            self.wfile.write(response.content)

        def do_GET(self) -> None:
            self._answer(None)

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._answer(body)
                return
            request = _about(json.loads(body))
            awaited = state.arrive(request)
            if awaited is not None:
                story = request.kind == "fold_story"
                met = awaited.wait(timeout=STORY_HOLD_S if story else HOLD_S)
                if story:
                    state.story_met.append(met)
            self._answer(body, partial(state.leave, request))

    with serving(Handler) as url:
        state.url = url
        yield state


@pytest.fixture
def server() -> Iterator[BoundaryServer]:
    with _boundary_server() as state:
        yield state


def _killed_and_resumed(server: KillServer, command: list[str]) -> list[int]:
    """Run `command` until it ends well, `server` killing it at each of its kill points; the
    exit codes."""
    codes: list[int] = []
    for _ in range(len(server.kill_points) + 1):
        process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        server.victim = process
        _, err = process.communicate(timeout=300)
        codes.append(process.returncode)
        assert process.returncode in (0, -9), err
        if process.returncode == 0:
            break
    return codes


# a window in which the quest's threads fill the mark of a fold a block late: each thread
# boundary folds the thread before the one just finished
BUDGET = 16_000
# The mark of that fold (`DEFERRED_FOLD_MARK` times `min_free`) is half the window, and each of
# this quest's threads fills about a third of it: the finished threads would fill the mark only
# where the window overflows, so the budget's own compaction would come first. These tests are
# about where a fold's requests go and what the run writes, not about when the fold is due, so
# they pin the mark at which this quest folds at every boundary, in this process and in the
# runs they start (`PINNED_MARK_MAIN`).
QUEST_FOLD_MARK = 2
PINNED_MARK_MAIN = (
    "import sys\n"
    "from terrarium_dagster.context.compaction import manager\n"
    f"manager.DEFERRED_FOLD_MARK = {QUEST_FOLD_MARK}\n"
    "from terrarium_dagster.cli import main\n"
    "raise SystemExit(main(sys.argv[1:]))\n"
)


@pytest.fixture(autouse=True)
def quest_fold_mark(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compaction_manager, "DEFERRED_FOLD_MARK", QUEST_FOLD_MARK)


def _run(quest: Path, db: Path, url: str, concurrency: int, **options: object) -> None:
    options.setdefault("context_budget", BUDGET)
    assert main(run_args(db, quest, agent_url=url, concurrency=concurrency, **options)) == 0


@pytest.mark.parametrize("concurrency", [4, 2])
def test_the_fold_is_asked_for_beside_the_curation_and_writes_what_the_fold_after_it_writes(
    quest: Path,
    threads: list[int],
    server: BoundaryServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    concurrency: int,
) -> None:
    first, last = threads[:-1], threads[-1]
    server.reset(hold=set(first))
    beside = tmp_path / "beside.db"
    _run(quest, beside, server.url, concurrency=concurrency)
    for thread in first:  # the curation waited for nothing: the summary came beside it
        assert server.met(SUMMARY, thread), f"thread {thread}'s summary came after its curation"
        if concurrency > 2:  # room for the flush's first round too (at 2: the summary alone)
            assert server.met("flush", thread), f"the flush after thread {thread} came after it"
    assert not server.met(SUMMARY, last), "no fold follows the last thread in this run"
    asked = server.kinds()
    assert asked[SUMMARY] == len(first) and asked["flush"] == len(first), asked
    assert server.peak <= concurrency, "the requests sent ahead count against the concurrency"

    # the old order: the curation, then the fold's requests one at a time
    server.reset(hold=set())
    monkeypatch.setattr(Annotator, "send_fold_ahead", lambda self, thread, **_: 0)
    after = tmp_path / "after.db"
    _run(quest, after, server.url, concurrency=concurrency)
    assert not any(server.met(SUMMARY, thread) for thread in first)
    assert server.kinds() == asked, "each request sent once, ahead or at its turn"
    expected, actual = store_dump(after), store_dump(beside)
    assert dump_differences(expected, actual) == []
    assert expected == actual
    (state,) = [json.loads(row[1]) for row in actual["context_state"][1:]]
    assert state["summaries"] or state["story_so_far"], "the folds are in the compared context"


def test_a_fold_with_no_curation_before_it_asks_for_its_summary_beside_its_flush(
    quest: Path,
    threads: list[int],
    server: BoundaryServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first thread in a run of its own: the run that goes on from it folds it at once,
    with no curation to overlap; the summary (decided by the context, never by the flush's
    answer) goes out beside the flush."""
    first = str(threads[0])
    server.reset(hold={threads[0]}, waits=BESIDE_FLUSH)
    beside = tmp_path / "beside.db"
    _run(quest, beside, server.url, concurrency=4, threads=first)
    _run(quest, beside, server.url, concurrency=4)
    assert server.met(SUMMARY, threads[0], other="flush")
    asked = server.kinds()

    server.reset(hold=set())
    monkeypatch.setattr(Annotator, "send_fold_ahead", lambda self, thread, **_: 0)
    monkeypatch.setattr(SceneCalls, "ahead", lambda self, purpose, messages: False)
    after = tmp_path / "after.db"
    _run(quest, after, server.url, concurrency=4, threads=first)
    _run(quest, after, server.url, concurrency=4)
    assert not server.met(SUMMARY, threads[0], other="flush")
    assert server.kinds() == asked
    assert dump_differences(store_dump(after), store_dump(beside)) == []


def test_a_serial_run_keeps_one_request_at_a_time_at_the_boundary(
    quest: Path, threads: list[int], server: BoundaryServer, tmp_path: Path
) -> None:
    server.reset(hold=set())
    _run(quest, tmp_path / "serial.db", server.url, concurrency=1)
    assert server.peak == 1
    assert server.kinds()[SUMMARY] == len(threads) - 1
    assert not any(server.met(SUMMARY, thread) for thread in threads)


@pytest.mark.parametrize(
    ("concurrency", "fold_at"),
    [
        # two blocks a thread: the first thread's summary goes out beside its curation (killed
        # there, open); the second thread's first scene holds the fold that took the replies
        # sent ahead, in its open transaction (killed there: the curation committed)
        (4, 1),
        # one block a thread: the first thread's flush runs at the second thread's block, its
        # summary goes out beside that block (killed there), its fold is at the third thread's
        # first scene (killed there, open)
        (8, 2),
    ],
)
def test_sigkill_at_the_summary_sent_ahead_and_at_the_fold_that_takes_it_resumes_exactly(
    quest: Path, threads: list[int], tmp_path: Path, concurrency: int, fold_at: int
) -> None:
    command = [
        sys.executable,
        "-c",
        PINNED_MARK_MAIN,
        *run_args(None, quest, offline=False, concurrency=concurrency, context_budget=BUDGET),
    ]
    with run_kill_server() as server:
        url = ["--agent-url", server.url]
        baseline = tmp_path / "baseline.db"
        done = subprocess.run(
            [*command, *url, "--db", str(baseline)], capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
        server.requests.clear()
        server.kill_points = [
            KillPoint(SUMMARY, threads[0]),
            KillPoint("scene", threads[fold_at], scene_number=1, round=0),
        ]
        resumed = tmp_path / "resumed.db"
        codes = _killed_and_resumed(server, [*command, *url, "--db", str(resumed)])
    assert codes == [-9, -9, 0]
    assert set(server.kills) == set(server.kill_points)
    expected, actual = store_dump(baseline), store_dump(resumed)
    assert dump_differences(expected, actual) == []
    assert expected == actual


@dataclass(frozen=True)
class SentInTurn:
    """A run at concurrency 8 that sends nothing ahead (the old order), on the server of its
    own: the store it wrote and what the server saw."""

    db: Path
    server: BoundaryServer


@pytest.fixture(scope="module")
def sent_in_turn_at_8(
    quest: Path, threads: list[int], tmp_path_factory: pytest.TempPathFactory
) -> SentInTurn:
    """The run both tests at concurrency 8 compare theirs with (the same run in each: made
    once). Its server is stopped and its patches undone once it has run: what the server saw
    stays recorded."""
    db = tmp_path_factory.mktemp("in_turn") / "after.db"
    with pytest.MonkeyPatch.context() as patch, _boundary_server() as server:
        patch.setattr(compaction_manager, "DEFERRED_FOLD_MARK", QUEST_FOLD_MARK)
        patch.setattr(Annotator, "send_fold_ahead", lambda self, thread, **_: 0)
        patch.setattr(SceneCalls, "ahead", lambda self, purpose, messages: False)
        server.next_of = dict(itertools.pairwise(threads))
        server.reset(hold=set())
        _run(quest, db, server.url, concurrency=8)
    return SentInTurn(db, server)


def test_a_thread_of_one_block_is_folded_at_the_next_one_and_its_summary_comes_beside_it(
    quest: Path,
    threads: list[int],
    server: BoundaryServer,
    tmp_path: Path,
    sent_in_turn_at_8: SentInTurn,
) -> None:
    """At a concurrency above a thread's scene count every thread is one block. The thread that
    just finished stays in the history through the next thread's block and is folded at the
    block after; its summary goes out as that block starts and is decoded beside its scenes
    (the server holds each summary until a scene of the next thread arrives: a run that asked
    for it before the block, or after it, would wait the hold out). The store is the one a
    run that sends nothing ahead writes."""
    first = threads[:-1]
    server.next_of = dict(itertools.pairwise(threads))
    server.reset(hold=set(first), waits={}, waits_next={SUMMARY: "scene"})
    beside = tmp_path / "beside.db"
    _run(quest, beside, server.url, concurrency=8)
    assert server.met_next(SUMMARY, threads[0], "scene"), "the summary came apart from the block"
    asked = server.kinds()
    # both are flushed at the next thread's block; the second is folded after this run's last
    # block (in a run that goes on), so its summary is not asked for in this one
    assert asked["flush"] == len(first) and asked[SUMMARY] == 1, asked
    assert server.peak <= 8

    in_turn = sent_in_turn_at_8
    assert not in_turn.server.met_next(SUMMARY, first[0], "scene")
    assert in_turn.server.kinds() == asked, "each request sent once, ahead or at its turn"
    expected, actual = store_dump(in_turn.db), store_dump(beside)
    assert dump_differences(expected, actual) == []
    (state,) = [json.loads(row[1]) for row in actual["context_state"][1:]]
    kept = {span["thread_id"] for span in state["scenes"]}
    assert kept == {threads[-2], threads[-1]}, "the thread before the last is kept, not folded"
    assert state["flushed_thread_id"] == threads[-2], "its flush ran at the last thread's block"


def test_a_kept_threads_flush_goes_beside_the_curation_once_the_fold_before_it_is_known(
    quest: Path,
    threads: list[int],
    server: BoundaryServer,
    tmp_path: Path,
    sent_in_turn_at_8: SentInTurn,
) -> None:
    """One block a thread: the second thread's first request folds the first thread (whose
    summary went out beside the second thread's block, and is back by its curation) and then
    flushes the second thread, kept. With that summary known, the fold is worked out ahead to
    its end, so the kept thread's flush goes out beside the curation (the server holds each
    until the other arrives) instead of after it, one request at a time. The store is the one
    a run that sends nothing ahead writes."""
    middle = threads[1]
    server.reset(hold={middle}, waits={"flush": "curate", "curate": "flush"})
    beside = tmp_path / "beside.db"
    _run(quest, beside, server.url, concurrency=8)
    assert server.met("flush", middle), "the kept thread's flush came after the curation"
    asked = server.kinds()

    in_turn = sent_in_turn_at_8
    assert not in_turn.server.met("flush", middle)
    assert in_turn.server.kinds() == asked, "each request sent once, ahead or at its turn"
    assert dump_differences(store_dump(in_turn.db), store_dump(beside)) == []


@pytest.fixture(scope="module")
def long_quest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Twelve threads of sixteen scenes whose names recur: the budget compacts inside a thread,
    by then with thread summaries to fold into the story so far."""
    path = tmp_path_factory.mktemp("story") / "quest.db"
    generate_recurring_quest(path, threads=12, scenes_per_thread=16, people=30, places=20, seed=7)
    return path


def test_the_story_fold_goes_out_beside_the_block_before_the_compaction_that_takes_it(
    long_quest: Path, server: BoundaryServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At concurrency > 1 a fold of the story takes the thread summaries the compaction found,
    not those its own passes just wrote, so its request is known a block early: it goes out
    beside the block whose scenes will call for the compaction, and the compaction takes its
    reply. The store is the one a run that sends nothing ahead writes, with the same
    requests."""
    monkeypatch.setattr(compaction_manager, "DEFERRED_FOLD_MARK", 4)  # the default mark
    server.reset(hold=set())
    server.story_waits_scene = True  # a story fold asked at its turn would wait HOLD_S out
    beside = tmp_path / "beside.db"
    _run(long_quest, beside, server.url, concurrency=8)
    asked = server.kinds()
    # a story fold at a thread's first request (whose fold may write summaries first) is
    # asked for at its turn; one inside a thread went out with the block before
    assert asked["fold_story"] >= 2, asked
    assert server.story_met.count(True) >= 2, "no story fold went out beside a block's scenes"

    server.reset(hold=set())
    monkeypatch.setattr(Annotator, "send_fold_ahead", lambda self, thread, **_: 0)
    monkeypatch.setattr(SceneCalls, "ahead", lambda self, purpose, messages: False)
    after = tmp_path / "after.db"
    _run(long_quest, after, server.url, concurrency=8)
    assert server.kinds() == asked, "each request sent once, ahead or at its turn"
    expected, actual = store_dump(after), store_dump(beside)
    assert dump_differences(expected, actual) == []
    assert expected == actual
