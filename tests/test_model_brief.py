"""The model's brief as sent on the wire: thinking and sampling chosen per kind of request, the
curator's request without tools, SCENE DONE read from the answer and never from its thinking.

Runs the engine against the loopback vLLM server (tests/support/vllm_server.py), which records
every request body."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from terrarium_dagster.config import load_settings
from terrarium_dagster.curation.review_prompt import CURATOR_SYSTEM_PROMPT
from terrarium_dagster.engine import Engine
from terrarium_dagster.model import sampling
from terrarium_dagster.model.client import ChatClient, ClientConfig
from tests.support.corpus_builder import simple_quest
from tests.support.vllm_server import Reply, ScriptedVLLM


def _engine(server: ScriptedVLLM, tmp_path: Path, **overrides: object) -> Engine:
    corpus = tmp_path / "corpus.db"
    simple_quest(corpus, threads=1, scenes_per_thread=2)
    settings = load_settings(
        corpus=corpus, db=str(tmp_path / "store.db"), agent_url=server.url, **overrides
    )
    client = ChatClient(ClientConfig(base_url=server.url, max_retries=0, timeout_s=5.0))
    return Engine.open(settings, client=client)


def _create(term: str, definition: str, content: str | None = "SCENE DONE") -> Reply:
    arguments = json.dumps({"term": term, "definition": definition})
    return Reply(content=content, tool_calls=[("glossary_create", arguments)])


def _purpose_of(body: dict) -> str:
    last_user = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    return "curate" if last_user.startswith("# Task: curate") else "annotate"


def test_qwen3_scene_rounds_do_not_think_and_the_curator_thinks_with_room_and_no_tools(
    vllm_server: ScriptedVLLM, tmp_path: Path
) -> None:
    vllm_server.script(_create("Vaskari", "An envoy at the gate."), Reply(content="nothing new"))
    with _engine(vllm_server, tmp_path, model_family="qwen3") as engine:
        thread = engine.threads[0].id
        engine.annotate_thread(thread)
        vllm_server.script(Reply(content="E1 CONFIRM\n"))
        report = engine.curate_thread(thread)
    assert report.confirmed == [1]
    bodies = vllm_server.chat_bodies
    scene_rounds = [body for body in bodies if _purpose_of(body) == "annotate"]
    (curate,) = [body for body in bodies if _purpose_of(body) == "curate"]
    assert len(scene_rounds) == 2  # one round per scene: SCENE DONE beside the calls
    for body in scene_rounds:
        assert body["chat_template_kwargs"] == {"enable_thinking": False}
        assert (body["temperature"], body["top_p"], body["top_k"]) == (0.7, 0.8, 20)
        assert body["max_tokens"] == 1024 and body["tools"]
    assert curate["chat_template_kwargs"] == {"enable_thinking": True}
    assert (curate["temperature"], curate["top_p"], curate["top_k"]) == (0.6, 0.95, 20)
    assert curate["max_tokens"] == 4096  # room to think: curator_max_tokens
    assert "tools" not in curate and "tool_choice" not in curate
    # no tools, so no cached prefix to continue: the curator's own short system prompt only
    assert [m["role"] for m in curate["messages"]] == ["system", "user"]
    assert curate["messages"][0]["content"] == CURATOR_SYSTEM_PROMPT


def test_explicit_settings_win_and_other_families_get_no_thinking_switch(
    vllm_server: ScriptedVLLM, tmp_path: Path
) -> None:
    vllm_server.script(Reply(content="nothing new"))
    with _engine(
        vllm_server, tmp_path, model_family="llama3", temperature=0.3, curator_thinking=False
    ) as engine:
        engine.annotate_thread(engine.threads[0].id)
    body = vllm_server.chat_bodies[0]
    assert "chat_template_kwargs" not in body
    assert (body["temperature"], body["top_p"]) == (0.3, 0.9)  # temperature given, top_p advised


@pytest.mark.parametrize(
    ("family", "purpose", "expected"),
    [
        ("qwen3", "summary", {"enable_thinking": False, "temperature": 0.7}),
        ("qwen3", "flush", {"enable_thinking": False, "temperature": 0.7}),
        ("qwen3", "summon", {"enable_thinking": False, "temperature": 0.7}),
        ("qwen3", "curate", {"enable_thinking": True, "temperature": 0.6}),
        ("mistral", "annotate", {"temperature": 0.15}),
        ("llama3", "curate", {"temperature": 0.6}),
    ],
)
def test_each_kind_of_request_has_its_thinking_and_sampling(
    family: str, purpose: str, expected: dict
) -> None:
    options = sampling.request_options(load_settings(offline=True), f"{family}-served", purpose)
    assert options["temperature"] == expected["temperature"]
    thinking = options.get("chat_template_kwargs", {}).get("enable_thinking")
    assert thinking == expected.get("enable_thinking")


def test_the_family_is_read_from_the_served_model_name() -> None:
    names = {
        "Qwen/Qwen3-14B": "qwen3",
        "Qwen3-32B-AWQ": "qwen3",
        "meta-llama/Llama-3.1-8B-Instruct": "llama3",
        "mistralai/Mistral-Small-3.2-24B-Instruct-2506": "mistral",
        "terrarium-offline": "other",
    }
    for name, family in names.items():
        assert sampling.model_family("auto", name) == family
    assert sampling.model_family("qwen3", "anything") == "qwen3"


def test_scene_done_written_inside_thinking_does_not_end_the_scene(
    vllm_server: ScriptedVLLM, tmp_path: Path
) -> None:
    # a server without a reasoning parser leaves the thinking in the content
    thinking = "<think>I will create it and then write SCENE DONE.</think>"
    vllm_server.script(
        _create("Vaskari", "An envoy at the gate.", content=thinking),
        Reply(content="Recorded Vaskari."),
        Reply(content="nothing new"),
    )
    with _engine(vllm_server, tmp_path, max_rounds=3) as engine:
        engine.annotate_thread(engine.threads[0].id)
    first_scene = [
        body for body in vllm_server.chat_bodies if body["messages"][-1]["role"] != "user"
    ]
    assert len(first_scene) == 1  # the scene was asked again after its tool results
