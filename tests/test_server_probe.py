"""What the client learns about the server at start, and the messages every server accepts.

The real llama.cpp server is driven in tests/test_llama_server.py; here the vLLM-like loopback
server and the words the three servers use."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from terrarium_dagster.config import load_settings
from terrarium_dagster.defs.metadata import annotation_metadata
from terrarium_dagster.engine import Engine
from terrarium_dagster.errors import ConfigError
from terrarium_dagster.model.client import ChatClient, ClientConfig
from terrarium_dagster.model.conversation_checks import sendable_messages
from terrarium_dagster.model.protocol import ChatMessage, assistant_message_dict
from terrarium_dagster.model.server import ServerInfo, probe_server, require_tools
from terrarium_dagster.model.server_answers import parse_context_overflow
from terrarium_dagster.model.session import ModelSession
from terrarium_dagster.status import render_status, store_status
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.store.models import ANSWERS_KEY, ThreadState
from tests.support.corpus_builder import simple_quest
from tests.support.vllm_server import Reply, ScriptedVLLM

# llama-server 0.0.11434 (HTTP 400, type exceed_context_size_error, numbers beside the message)
LLAMA_CPP_OVERFLOW = (
    "request (8794 tokens) exceeds the available context size (8192 tokens), try increasing it"
)
LLAMA_CPP_DETAILS = {
    "code": 400,
    "message": LLAMA_CPP_OVERFLOW,
    "type": "exceed_context_size_error",
    "n_prompt_tokens": 8794,
    "n_ctx": 8192,
}


@pytest.mark.parametrize(
    ("message", "details", "expected"),
    [
        (LLAMA_CPP_OVERFLOW, LLAMA_CPP_DETAILS, (8192, 8794, 8794)),
        (
            "the request exceeds the available context size, try increasing it",
            {"type": "exceed_context_size_error", "n_prompt_tokens": 2100, "n_ctx": 2048},
            (2048, 2100, 2100),
        ),
        (
            "input (3000 tokens) is larger than the max context size (2048 tokens). skipping",
            None,
            (2048, 3000, 3000),
        ),
        # llama-cpp-python's server (its rewrite of the library's error)
        (
            "This model's maximum context length is 2048 tokens. However, you requested 2300 "
            "tokens (2044 in the messages, 256 in the completion). Please reduce the length of "
            "the messages or completion.",
            {"code": "context_length_exceeded", "type": "invalid_request_error"},
            (2048, 2300, 2044),
        ),
        # llama-cpp-python's library, where its words come through as they are
        ("Requested tokens (2400) exceed context window of 2048", None, (2048, 2400, 2400)),
    ],
    ids=["llama.cpp", "llama.cpp-old", "llama.cpp-input", "llama-cpp-python", "llama_cpp"],
)
def test_overflow_wordings_of_llama_cpp_and_llama_cpp_python_teach_the_window(
    message: str,
    details: dict[str, object] | None,
    expected: tuple[int, int, int],
) -> None:
    assert parse_context_overflow(message, details) == expected


def test_an_error_that_is_not_about_the_window_is_not_an_overflow() -> None:
    assert parse_context_overflow("tools param requires --jinja flag", {"type": "x"}) is None


def test_messages_sent_carry_no_null_content_and_no_invalid_arguments() -> None:
    reply = ChatMessage.model_validate(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "a", "function": {"name": "glossary_search", "arguments": '{"query": '}},
                {"id": "b", "function": {"name": "glossary_search", "arguments": '{"query":"x"}'}},
            ],
        }
    )
    history = assistant_message_dict(reply)
    assert history["content"] == ""
    broken, good = (call["function"]["arguments"] for call in history["tool_calls"])
    assert json.loads(broken) == {"unparsed_arguments": '{"query": '}, "what it wrote, as JSON"
    assert good == '{"query":"x"}', "valid arguments go back as they came"
    # a history stored before (null content, raw arguments) is sent the same way
    stored = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "[1"}}
        ],
    }
    (sent,) = sendable_messages([stored])
    assert sent["content"] == "" and json.loads(sent["tool_calls"][0]["function"]["arguments"])
    assert stored["content"] is None, "the caller's history is not changed"


def test_the_probe_finds_vllm_its_window_and_exact_counting_in_one_line(
    vllm_server: ScriptedVLLM, caplog: pytest.LogCaptureFixture
) -> None:
    vllm_server.max_model_len = 12288
    with (
        caplog.at_level(logging.DEBUG, logger="terrarium_dagster.model.server"),
        ChatClient(ClientConfig(base_url=vllm_server.api_url, max_retries=0)) as client,
    ):
        info = probe_server(client)
    assert info.kind == "vllm" and info.window == 12288 and info.counting == "vllm"
    assert info.tools is None, "vLLM shows tool support only by answering"
    (line,) = [r.getMessage() for r in caplog.records if r.name.endswith("model.server")]
    assert line == info.line()
    assert "vllm" in line and "window 12288 tokens (max_model_len)" in line and "exact" in line
    paths = [request.path for request in vllm_server.requests]
    assert paths == ["/v1/models"], "vLLM is known by its models: nothing else asked"


def test_a_session_takes_the_probed_window_without_asking_again(
    vllm_server: ScriptedVLLM, tmp_path: Path
) -> None:
    vllm_server.max_model_len = 4096
    client = ChatClient(ClientConfig(base_url=vllm_server.url, max_retries=0))
    info = probe_server(client)
    with GlossaryStore(tmp_path / "s.db") as store:
        session = ModelSession(client, store, budget=32768, max_tokens=512, run_id=None)
        assert session.window == 4096 == info.window
    assert len(vllm_server.requests_to("/v1/models")) == 1
    client.close()


def test_a_server_without_tools_is_refused_naming_the_fix() -> None:
    info = ServerInfo(
        url="http://127.0.0.1:8080",
        kind="llama.cpp",
        tools=False,
        tools_source="/props chat_template_caps",
    )
    with pytest.raises(ConfigError, match="cannot take tools") as caught:
        require_tools(info)
    assert "--chat-template-file" in str(caught.value) and caught.value.exit_code == 2
    require_tools(info.model_copy(update={"tools": None}))  # unknown: not refused


def _run_thread(server: ScriptedVLLM, tmp_path: Path, max_rounds: int = 6) -> Path:
    corpus = tmp_path / "corpus.db"
    simple_quest(corpus, threads=1, scenes_per_thread=2)
    db = tmp_path / "store.db"
    settings = load_settings(corpus=corpus, db=str(db), agent_url=server.url, max_rounds=max_rounds)
    client = ChatClient(ClientConfig(base_url=server.url, max_retries=0))
    with Engine.open(settings, client=client) as engine:
        engine.annotate_thread(engine.threads[0].id)
    return db


@pytest.mark.parametrize(
    ("answers", "reason"),
    [
        ([Reply(content="Nothing to note.")] * 2, "no tool call in 2 answers"),
        # a tool-call parser that does not match the model's format: text where JSON should be
        (
            [Reply(tool_calls=[("glossary_search", "query=envoy")]), Reply(content="done")] * 2,
            "none of its 2 tool calls had JSON arguments (does the server's --tool-call-parser"
            " match the model?)",
        ),
    ],
    ids=["no-tool-call", "no-json-arguments"],
)
def test_a_thread_without_tool_calls_or_with_every_answer_cut_is_suspect(
    vllm_server: ScriptedVLLM,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    answers: list[Reply],
    reason: str,
) -> None:
    vllm_server.script(*answers)
    with caplog.at_level(logging.WARNING, logger="terrarium_dagster.engine"):
        db = _run_thread(vllm_server, tmp_path)
    report = store_status(str(db))
    (thread,) = report["threads"]
    assert thread["suspect"] == reason
    assert f"SUSPECT: {reason}" in render_status(report)
    assert any("SUSPECT" in record.getMessage() for record in caplog.records)
    # and in Dagster: the thread's materialization metadata
    with Engine.open(load_settings(db=str(db)), model=False) as engine:
        report_of_thread = engine.annotate_thread(engine.threads[0].id)  # done: its record
    assert report_of_thread.already_done
    metadata = annotation_metadata(report_of_thread)
    assert metadata["suspect"] is True and reason in str(metadata["suspect_reason"])


def test_a_thread_whose_agent_calls_tools_is_not_suspect(
    vllm_server: ScriptedVLLM, tmp_path: Path
) -> None:
    search = Reply(tool_calls=[("glossary_search", '{"query": "envoy"}')])
    vllm_server.script(search, Reply(content="done"), Reply(content="done"))
    db = _run_thread(vllm_server, tmp_path)
    (thread,) = store_status(str(db))["threads"]
    assert thread["suspect"] is None


@pytest.mark.parametrize(
    ("answers", "reason"),
    [
        ({"answers": 3, "cut": 3, "tool_calls": 4}, "all 3 answers cut at max_tokens"),
        ({"answers": 3, "cut": 0, "tool_calls": 0}, "no tool call in 3 answers"),
        # a one-scene chapter with nothing to note (Tom Sawyer's CONCLUSION, offline)
        ({"answers": 1, "cut": 0, "tool_calls": 0}, None),
        ({"answers": 1, "cut": 1, "tool_calls": 1}, "its one answer cut at max_tokens"),
        ({"answers": 3, "cut": 2, "tool_calls": 1}, None),
        ({"answers": 0, "cut": 0, "tool_calls": 0}, None),
        (
            {"answers": 4, "cut": 0, "tool_calls": 3, "unreadable": 3},
            "none of its 3 tool calls had JSON arguments (does the server's --tool-call-parser"
            " match the model?)",
        ),
        ({"answers": 4, "cut": 0, "tool_calls": 3, "unreadable": 2}, None),  # one call worked
        ({"answers": 1, "cut": 0, "tool_calls": 1, "unreadable": 1}, None),  # one slip
        (None, None),
    ],
)
def test_what_makes_a_thread_suspect(answers: dict[str, int] | None, reason: str | None) -> None:
    # a cut answer without tool calls is asked again (and stops the run if it stays cut), so
    # "all cut" is what is left when llama-server says "length" beside every tool call
    extra = {} if answers is None else {ANSWERS_KEY: answers}
    state = ThreadState(thread_id=1, thread_key="t1", position=0, status="annotated", extra=extra)
    assert state.suspect == reason


def test_offline_beside_a_url_left_in_the_settings_books_its_calls_to_the_offline_backend(
    tmp_path: Path,
) -> None:
    # A story switched to `offline: true` that kept its `agent_url` (docs/many-stories.md): its
    # calls were recorded against the URL, where no server ever answered.
    corpus = tmp_path / "corpus.db"
    simple_quest(corpus, threads=1, scenes_per_thread=2)
    db = tmp_path / "store.db"
    url = "http://127.0.0.1:9/v1"  # nothing listens there
    settings = load_settings(corpus=corpus, db=str(db), agent_url=url, offline=True)
    with Engine.open(settings) as engine:
        engine.annotate_thread(engine.threads[0].id)
    report = store_status(str(db))
    assert [row["server"] for row in report["calls_per_server"]] != []
    assert not any("127.0.0.1:9" in str(row["server"]) for row in report["calls_per_server"])
    assert "the offline backend:" in render_status(report)
