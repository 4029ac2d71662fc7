"""Provenance is never invented: the scene loop against a real loopback server speaking vLLM's
API. A write whose term or quote is not in the cited (or the scene's) posts comes back to the
model as an error result naming what was not found; nothing is written; the model's corrected
call is recorded with the post's own words."""

from __future__ import annotations

import json
from pathlib import Path

from terrarium_dagster.config import load_settings
from terrarium_dagster.engine import Engine
from terrarium_dagster.model.client import ChatClient, ClientConfig
from tests.support.corpus_builder import simple_quest
from tests.support.vllm_server import Reply, ScriptedVLLM


def _create(**arguments: object) -> Reply:
    return Reply(tool_calls=[("glossary_create", json.dumps(arguments))])


def _tool_result(server: ScriptedVLLM, request: int) -> dict[str, object]:
    message = server.chat_bodies[request]["messages"][-1]
    assert message["role"] == "tool"
    return json.loads(message["content"])


def test_invented_terms_and_quotes_are_error_results_and_the_correction_is_recorded(
    vllm_server: ScriptedVLLM, tmp_path: Path
) -> None:
    corpus = simple_quest(tmp_path / "corpus.db", threads=1, scenes_per_thread=2)
    vllm_server.script(
        _create(term="Zorvanth", definition="A lord no post names."),
        _create(term="Vaskari", definition="An envoy's contact.", quote="Vaskari rules the gate"),
        _create(
            term="Vaskari",
            definition="An envoy's contact.",
            quote="the envoy met  VASKARI at the gate",
        ),
        Reply(content="Scene done."),
    )
    settings = load_settings(
        corpus=corpus, db=str(tmp_path / "store.db"), agent_url=vllm_server.url
    )
    client = ChatClient(ClientConfig(base_url=vllm_server.url, max_retries=0, timeout_s=5.0))
    with Engine.open(settings, client=client) as engine:
        thread = engine.threads[0]
        scene_posts = [post.id for post in engine.corpus.scenes(thread.id)[0].posts]
        engine.annotate_thread(thread.id)
        store = engine.store
        entries = store.glossary.entries(include_deleted=True)
        assert [entry.term for entry in entries] == ["Vaskari"]
        (source,) = store.provenance.for_entry(entries[0].id)
        post = engine.corpus.post(source.post_id)
        assert post is not None and source.post_id in scene_posts
        assert source.quote == "The envoy met Vaskari at the gate"
        assert source.quote in post.text

    first = _tool_result(vllm_server, 1)
    assert first["ok"] is False
    assert str(first["error"]).startswith("'Zorvanth' does not occur in the current scene (post")
    second = _tool_result(vllm_server, 2)
    assert second["ok"] is False
    assert str(second["error"]).startswith("quote 'Vaskari rules the gate' is not in the current")
    assert _tool_result(vllm_server, 3)["ok"] is True
