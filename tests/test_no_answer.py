"""An answer that decides nothing is never a decision.

A loopback server speaking vLLM's API (tests/support/vllm_server.py) answers chosen requests the
way a reasoning model does when it is served without a reasoning parser or given too few tokens:
reasoning only, a `<think>` block only, nothing at all, or a reply cut off by `max_tokens`
(`finish_reason: length`). Each is asked again (with more room to answer, then asked to answer
without thinking aloud) and the answer that follows is the one used: nothing the model meant to
write is lost. A model that never answers stops the run with one line (exit 1), the scene or the
curation rolled back, and the resumed run asks the same question again: nothing is skipped.
"""

from __future__ import annotations

import json
import subprocess
from collections import deque
from collections.abc import Sequence
from pathlib import Path

import pytest

from terrarium_dagster.config import load_settings
from terrarium_dagster.engine import Engine
from terrarium_dagster.errors import NoAnswerError
from terrarium_dagster.model.client import ChatClient, ClientConfig
from terrarium_dagster.store.annotator import GlossaryStore
from tests.support.cli import TERRARIUM, run_args, said
from tests.support.corpus_builder import simple_quest
from tests.support.vllm_server import RecordedRequest, Reply, ScriptedVLLM

MAX_TOKENS = 256


def _engine(server: ScriptedVLLM, tmp_path: Path) -> Engine:
    corpus = tmp_path / "corpus.db"
    if not corpus.exists():
        simple_quest(corpus, threads=2, scenes_per_thread=2)
    settings = load_settings(
        corpus=corpus, db=str(tmp_path / "store.db"), agent_url=server.url, max_tokens=MAX_TOKENS
    )
    client = ChatClient(
        ClientConfig(base_url=server.url, max_retries=0, max_tokens=MAX_TOKENS, timeout_s=5.0)
    )
    return Engine.open(settings, client=client)


def _create(term: str) -> Reply:
    arguments = json.dumps({"term": term, "definition": f"{term}, as the scene names it."})
    return Reply(tool_calls=[("glossary_create", arguments)])


def _curating(request: RecordedRequest) -> bool:
    """A curation request (its curate message is the last task; a nudge may follow it)."""
    users = [str(m.get("content") or "") for m in request.messages if m.get("role") == "user"]
    tasks = [text for text in users if text.startswith(("# Task:", "# Scene"))]
    return bool(tasks) and tasks[-1].startswith("# Task: curate")


class Model:
    """Answers scene rounds from `scenes` and curation requests from `curations` (each a queue;
    empty: "done" for a scene, no decision for a curation)."""

    def __init__(self, scenes: Sequence[Reply] = (), curations: Sequence[Reply] = ()) -> None:
        self.scenes: deque[Reply] = deque(scenes)
        self.curations: deque[Reply] = deque(curations)

    def __call__(self, request: RecordedRequest) -> Reply:
        if _curating(request):
            undecided = Reply(content="No decision.")
            return self.curations.popleft() if self.curations else undecided
        return self.scenes.popleft() if self.scenes else Reply(content="done")


def _max_tokens(server: ScriptedVLLM) -> list[int]:
    return [int(body["max_tokens"]) for body in server.chat_bodies]


@pytest.mark.parametrize(
    "silent",
    [Reply.reasoning_only(), Reply.think_only(), Reply(content=""), Reply.cut("The scene")],
    ids=["reasoning-only", "think-only", "empty", "cut-empty"],
)
def test_a_scene_reply_that_decides_nothing_is_asked_again_with_more_room(
    vllm_server: ScriptedVLLM, tmp_path: Path, silent: Reply
) -> None:
    vllm_server.fallback = Model(scenes=[silent, _create("Vaskari")])
    with _engine(vllm_server, tmp_path) as engine:
        engine.annotate_thread(engine.threads[0].id)
        assert [e.term for e in engine.store.glossary.entries()] == ["Vaskari"]
    first, second = _max_tokens(vllm_server)[:2]
    assert first == MAX_TOKENS and second > MAX_TOKENS  # the same question, more room to answer
    assert vllm_server.chat_bodies[0]["messages"] == vllm_server.chat_bodies[1]["messages"]


def test_a_cut_off_reply_is_not_executed_and_the_full_answer_is(
    vllm_server: ScriptedVLLM, tmp_path: Path
) -> None:
    cut = Reply(
        tool_calls=[("glossary_create", json.dumps({"term": "Half", "definition": "cut"}))],
        finish_reason="length",
    )
    both = Reply(
        tool_calls=[
            ("glossary_create", json.dumps({"term": "Vaskari", "definition": "An envoy."})),
            ("glossary_create", json.dumps({"term": "Orlundel", "definition": "A gate."})),
        ]
    )
    vllm_server.fallback = Model(scenes=[cut, both])
    with _engine(vllm_server, tmp_path) as engine:
        engine.annotate_thread(engine.threads[0].id)
        terms = sorted(e.term for e in engine.store.glossary.entries())
    assert terms == ["Orlundel", "Vaskari"]  # the cut reply's call was never run


def test_without_room_for_more_tokens_the_model_is_asked_to_answer_without_thinking(
    vllm_server: ScriptedVLLM, tmp_path: Path
) -> None:
    vllm_server.fallback = Model(
        scenes=[Reply.reasoning_only(), Reply.think_only(), _create("Vaskari")]
    )
    with _engine(vllm_server, tmp_path) as engine:
        engine.annotate_thread(engine.threads[0].id)
        assert [e.term for e in engine.store.glossary.entries()] == ["Vaskari"]
    third = vllm_server.chat_bodies[2]["messages"]
    assert third[-1]["role"] == "user" and "without thinking aloud" in third[-1]["content"]
    # the nudge asked for the answer; it is not part of the scene's conversation afterwards
    later = vllm_server.chat_bodies[3]["messages"]
    assert all("without thinking aloud" not in str(m.get("content")) for m in later)


def test_a_model_that_never_answers_stops_the_run_and_the_resumed_run_asks_again(
    vllm_server: ScriptedVLLM, tmp_path: Path
) -> None:
    silent = [Reply.reasoning_only(), Reply.think_only(), Reply(content="")]
    vllm_server.fallback = Model(scenes=[_create("Vaskari"), Reply(content="done"), *silent])
    engine = _engine(vllm_server, tmp_path)
    with (
        pytest.raises(NoAnswerError, match="did not answer the annotate request in 3 tries"),
        engine,
    ):
        engine.annotate_thread(engine.threads[0].id)
    with GlossaryStore(tmp_path / "store.db") as store:
        (state,) = store.progress.thread_states()
        assert state.scenes_done == 1  # scene 2 rolled back: not skipped, not half-written
    vllm_server.fallback = Model(scenes=[_create("Orlundel")])
    with _engine(vllm_server, tmp_path) as engine:
        report = engine.annotate_thread(engine.threads[0].id)
        assert report.scenes_annotated == 1
        assert sorted(e.term for e in engine.store.glossary.entries()) == ["Orlundel", "Vaskari"]


def test_a_cut_curator_answer_is_asked_again_and_its_decisions_applied(
    vllm_server: ScriptedVLLM, tmp_path: Path
) -> None:
    confirm = "E1 CONFIRM Named twice.\n"
    vllm_server.fallback = Model(
        scenes=[_create("Vaskari")], curations=[Reply.cut(), Reply(content=confirm)]
    )
    with _engine(vllm_server, tmp_path) as engine:
        engine.annotate_thread(engine.threads[0].id)
        report = engine.curate_thread(engine.threads[0].id)
        assert report.confirmed == [1] and report.left_tentative == []
        assert engine.store.glossary.get_entry(1).status == "confirmed"
    curations = [b for b in vllm_server.chat_bodies if "# Task: curate" in json.dumps(b)]
    assert len(curations) == 2 and curations[1]["max_tokens"] > curations[0]["max_tokens"]


def test_a_curation_that_never_decides_stops_and_is_retried_at_the_next_boundary(
    tmp_path: Path,
) -> None:
    """Through `terrarium run`: the curation of thread 1 gets no answer (one line, exit 1, the
    thread left annotated and uncurated); the resumed run curates it before thread 2."""
    confirm = "E1 CONFIRM Named twice.\n"
    corpus = simple_quest(tmp_path / "corpus.db", threads=2, scenes_per_thread=2)
    db = tmp_path / "store.db"
    options = {"max_tokens": MAX_TOKENS, "max_retries": 0}
    with ScriptedVLLM() as server:
        server.fallback = Model(
            scenes=[_create("Vaskari")],
            curations=[Reply.think_only(), Reply.cut(), Reply.reasoning_only()],
        )
        stopped = subprocess.run(
            [TERRARIUM, *run_args(db, corpus, agent_url=server.url, **options)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert stopped.returncode == 1, stopped.stderr
        lines = [line for line in stopped.stderr.splitlines() if said(line)]
        assert len(lines) == 1 and "did not answer the curate request" in lines[0], stopped.stderr
        with GlossaryStore(db, read_only=True) as store:
            states = {s.thread_key: s.status for s in store.progress.thread_states()}
            assert list(states.values()) == ["annotated"]
            assert store.curation.curator_decisions() == []  # nothing taken for a decision
        server.fallback = Model(curations=[Reply(content=confirm)])
        resumed = subprocess.run(
            [TERRARIUM, *run_args(db, corpus, agent_url=server.url, **options)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert resumed.returncode == 0, resumed.stderr
    with GlossaryStore(db, read_only=True) as store:
        assert {s.status for s in store.progress.thread_states()} == {"curated"}
        assert store.glossary.get_entry(1).status == "confirmed"


def test_a_cut_curator_answer_keeps_its_complete_lines_and_asks_about_the_rest(
    vllm_server: ScriptedVLLM, tmp_path: Path
) -> None:
    """The curator's own check: a cut answer that decides something is taken for what it
    decides; the entries it did not reach are asked about again. A retry that decides nothing
    stops the run (nothing of the curation is kept); the resumed run curates again."""
    two = Reply(
        tool_calls=[
            ("glossary_create", json.dumps({"term": "Vaskari", "definition": "An envoy."})),
            ("glossary_create", json.dumps({"term": "Orlundel", "definition": "A gate."})),
        ]
    )
    vllm_server.fallback = Model(
        scenes=[two],
        curations=[
            Reply.cut("E1 CONFIRM Named twice.\nE2 REJ"),  # E1 decided, E2 not reached
            Reply.cut("E2 CONF"),  # asked about E2 alone: cut again, nothing decided
            Reply.cut("E2 CO"),  # the session asks again with more room: still nothing
            Reply.cut("E2"),  # and with the nudge: no answer, the run stops
        ],
    )
    with _engine(vllm_server, tmp_path) as engine:
        engine.annotate_thread(engine.threads[0].id)
        with pytest.raises(NoAnswerError):
            engine.curate_thread(engine.threads[0].id)
    vllm_server.fallback = Model(
        curations=[
            Reply.cut("E1 CONFIRM Named twice.\nE2 REJ"),
            Reply(content="E2 REJECT A gate.\n"),
        ]
    )
    with _engine(vllm_server, tmp_path) as engine:
        report = engine.curate_thread(engine.threads[0].id)
        assert report.confirmed == [1] and report.rejected == [2]
    retry = vllm_server.chat_bodies[-1]["messages"][-1]["content"]
    assert "E2: the answer was cut off before deciding it" in retry
