"""The scene loop against a real HTTP server speaking vLLM's API, with injected faults."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from terrarium_dagster.cli import main
from terrarium_dagster.config import load_settings
from terrarium_dagster.engine import Engine
from terrarium_dagster.errors import AgentError
from terrarium_dagster.model.client import ChatClient, ClientConfig
from terrarium_dagster.store.annotator import GlossaryStore
from tests.support.cli import TERRARIUM, run_args
from tests.support.corpus_builder import simple_quest
from tests.support.vllm_server import Fault, Reply, ScriptedVLLM


def _engine(server: ScriptedVLLM, tmp_path: Path, **overrides: object) -> Engine:
    corpus = tmp_path / "corpus.db"
    if not corpus.exists():
        simple_quest(corpus, threads=1, scenes_per_thread=2)
    settings = load_settings(
        corpus=corpus,
        db=str(tmp_path / "store.db"),
        agent_url=server.url,
        **overrides,
    )
    client = ChatClient(
        ClientConfig(
            base_url=server.url,
            max_retries=3,
            backoff_initial_s=0.01,
            backoff_max_s=0.02,
            timeout_s=1.0,
        )
    )
    return Engine.open(settings, client=client)


def _first_thread(engine: Engine) -> int:
    return engine.threads[0].id


def _create(term: str, definition: str) -> Reply:
    arguments = json.dumps({"term": term, "definition": definition})
    return Reply(tool_calls=[("glossary_create", arguments)])


def test_transient_server_errors_are_retried_and_the_scene_commits(
    vllm_server: ScriptedVLLM, tmp_path: Path
) -> None:
    vllm_server.script(
        Fault.server_error(),
        Fault.unavailable(),
        Fault.rate_limited(retry_after=0),
        _create("Vaskari", "An envoy's contact at the gate."),
        Reply(content="Scene done."),
    )
    with _engine(vllm_server, tmp_path) as engine:
        report = engine.annotate_thread(_first_thread(engine))
        assert report.scenes_annotated == 2
        assert [e.term for e in engine.store.glossary.entries()] == ["Vaskari"]


def test_timeout_and_dropped_connection_are_retried(
    vllm_server: ScriptedVLLM, tmp_path: Path
) -> None:
    vllm_server.script(Fault.timeout(delay_s=3), Fault.drop(), Reply(content="nothing new"))
    with _engine(vllm_server, tmp_path) as engine:
        report = engine.annotate_thread(_first_thread(engine))
    assert report.scenes_annotated == 2


def test_malformed_tool_arguments_get_an_error_result_and_the_run_goes_on(
    vllm_server: ScriptedVLLM, tmp_path: Path
) -> None:
    vllm_server.script(
        Fault.bad_arguments("glossary_create", '{"term": "Vaskari", "definition": '),
        _create("Vaskari", "An envoy's contact."),
        Reply(content="done"),
    )
    with _engine(vllm_server, tmp_path) as engine:
        engine.annotate_thread(_first_thread(engine))
        assert [e.term for e in engine.store.glossary.entries()] == ["Vaskari"]
    second = vllm_server.chat_bodies[1]["messages"]
    tool_result = json.loads(second[-1]["content"])
    assert second[-1]["role"] == "tool" and tool_result["ok"] is False
    assert "json" in tool_result["error"].lower()


def test_an_unknown_tool_gets_an_error_result_naming_the_available_tools(
    vllm_server: ScriptedVLLM, tmp_path: Path
) -> None:
    vllm_server.script(Fault.unknown_tool("delete_everything"), Reply(content="ok"))
    with _engine(vllm_server, tmp_path) as engine:
        engine.annotate_thread(_first_thread(engine))
    result = json.loads(vllm_server.chat_bodies[1]["messages"][-1]["content"])
    assert result["ok"] is False and "glossary_search" in result["error"]


def test_empty_content_is_asked_again_not_taken_for_the_end_of_the_scene(
    vllm_server: ScriptedVLLM, tmp_path: Path
) -> None:
    vllm_server.script(
        Fault.empty_reply(), Fault.empty_reply(null_content=True), _create("Vaskari", "An envoy.")
    )
    with _engine(vllm_server, tmp_path) as engine:
        report = engine.annotate_thread(_first_thread(engine))
        assert report.scenes_annotated == 2
        assert [e.term for e in engine.store.glossary.entries()] == ["Vaskari"]
    # asked again with more room, then asked to answer without thinking aloud
    assert "without thinking aloud" in vllm_server.chat_bodies[2]["messages"][-1]["content"]


def test_reasoning_is_read_but_never_sent_back(vllm_server: ScriptedVLLM, tmp_path: Path) -> None:
    vllm_server.script(
        Reply(
            tool_calls=[("glossary_search", '{"query": "Vaskari"}')],
            reasoning="thinking about Vaskari",
            reasoning_field="reasoning_content",
        ),
        Reply(content="done", reasoning="more thoughts", reasoning_field="reasoning"),
    )
    with _engine(vllm_server, tmp_path) as engine:
        engine.annotate_thread(_first_thread(engine))
    for body in vllm_server.chat_bodies:
        for message in body["messages"]:
            assert "reasoning" not in message and "reasoning_content" not in message


def test_context_overflow_compacts_and_retries_once(
    vllm_server: ScriptedVLLM, tmp_path: Path
) -> None:
    vllm_server.script(Fault.context_overflow(), Reply(content="done"))
    with _engine(vllm_server, tmp_path) as engine:
        report = engine.annotate_thread(_first_thread(engine))
    assert report.scenes_annotated == 2
    # the overflowing request was not retried blindly: one overflow, then a (re-laid) request
    assert len(vllm_server.chat_requests) >= 2


def test_persistent_failure_stops_with_a_clear_error_and_keeps_committed_scenes(
    vllm_server: ScriptedVLLM, tmp_path: Path
) -> None:
    vllm_server.script(_create("Vaskari", "An envoy's contact."), Reply(content="done"))
    vllm_server.fallback = lambda request: Fault.server_error()
    with _engine(vllm_server, tmp_path) as engine, pytest.raises(AgentError, match="attempts"):
        engine.annotate_thread(_first_thread(engine))
    with GlossaryStore(tmp_path / "store.db") as store:
        (state,) = store.progress.thread_states()
        assert state.scenes_done == 1 and state.status == "annotating"
        assert [e.term for e in store.glossary.entries()] == ["Vaskari"]
        # the committed state is what resumes; a stop adds no snapshot of its own
        assert store.memory.snapshots() == []
        assert store.memory.load_context_state()


def test_cli_exits_1_when_the_server_is_unreachable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = simple_quest(tmp_path / "c.db", threads=1, scenes_per_thread=1)
    # one retry (its backoff is the default's first): the default five sleep for about 15 s
    code = main(
        run_args(tmp_path / "s.db", corpus, agent_url="http://127.0.0.1:9/v1", max_retries=1)
    )
    assert code == 1
    assert "failed" in capsys.readouterr().err


def test_the_calls_of_a_rolled_back_scene_are_still_recorded(
    vllm_server: ScriptedVLLM, tmp_path: Path
) -> None:
    # Scene 1 commits; scene 2 gets one good answer (a write), then the server fails for good:
    # the scene rolls back, but both of its requests stay on the record with their outcome.
    vllm_server.script(
        _create("Vaskari", "An envoy's contact."),
        Reply(content="done"),
        _create("Orrin", "A ferryman."),
    )
    vllm_server.fallback = lambda request: Fault.server_error()
    with _engine(vllm_server, tmp_path) as engine, pytest.raises(AgentError, match="attempts"):
        engine.annotate_thread(_first_thread(engine))
    with GlossaryStore(tmp_path / "store.db") as store:
        assert [e.term for e in store.glossary.entries()] == ["Vaskari"], "scene 2 rolled back"
        calls = store.runs.agent_calls()
        failed = [call for call in calls if call.error]
        # every request the server got: 3 answered, then 2 attempts of one call (the same 500
        # twice is not a passing fault: not asked a third time)
        assert len(calls) == len(vllm_server.chat_requests) == 5 and len(failed) == 2
        assert (failed[0].error or "").startswith("retried: HTTP 500")
        assert "attempts" in (failed[-1].error or "")
        assert calls[2].completion_tokens > 0, "the rolled-back scene's good answer is counted"


def test_ctrl_c_abandons_the_call_in_flight_within_seconds(
    vllm_server: ScriptedVLLM, tmp_path: Path
) -> None:
    import signal
    import subprocess
    import time

    corpus = tmp_path / "corpus.db"
    simple_quest(corpus, threads=1, scenes_per_thread=2)
    vllm_server.script(Reply(content="slow", delay_s=60))
    db = tmp_path / "store.db"
    process = subprocess.Popen(
        [TERRARIUM, *run_args(db, corpus, agent_url=vllm_server.url + "/v1")],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not vllm_server.chat_requests and time.monotonic() < deadline:
            time.sleep(0.05)
        assert vllm_server.chat_requests, "the run never called the server"
        time.sleep(0.3)
        interrupted = time.monotonic()
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=20)
        waited = time.monotonic() - interrupted
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    stderr = process.stderr.read() if process.stderr else ""
    assert code == 130, stderr
    assert waited < 3, f"Ctrl-C took {waited:.1f} s"
    assert "Traceback" not in stderr and "resume" in stderr
    with GlossaryStore(db) as store:
        assert store.memory.snapshots(kind="shutdown") == []
        assert any(call.error and "interrupted" in call.error for call in store.runs.agent_calls())


def test_the_summon_calls_of_a_rolled_back_scene_are_still_recorded(
    vllm_server: ScriptedVLLM, tmp_path: Path
) -> None:
    # Thread 1 ends with a snapshot; in thread 2 the agent summons it (a request of its own),
    # then the server fails for good: the scene rolls back, the summon request stays recorded.
    simple_quest(tmp_path / "corpus.db", threads=2, scenes_per_thread=1)
    with _engine(vllm_server, tmp_path) as engine:
        vllm_server.script(Reply(content="done"))
        engine.annotate_thread(engine.threads[0].id)
        sent_before = len(vllm_server.chat_requests)
        summon = json.dumps({"snapshot_id": 1, "question": "Who is the envoy?"})
        vllm_server.script(
            Reply(tool_calls=[("summon_snapshot", summon)]),
            Reply(content="The envoy is Vaskari."),
        )
        vllm_server.fallback = lambda request: Fault.server_error()
        with pytest.raises(AgentError, match="attempts"):
            engine.annotate_thread(engine.threads[1].id)
        assert len(vllm_server.chat_requests) > sent_before + 2, "the summon was sent"
    with GlossaryStore(tmp_path / "store.db") as store:
        purposes = [call.purpose for call in store.runs.agent_calls()]
        assert "summon" in purposes, purposes
        assert store.memory.summons() == [], "the summon log rolled back with the scene"
