"""Summon against the scripted vLLM server: what is sent, read-only, the log, one at a time, budget.

The store and the corpus are real SQLite files; the server is a real HTTP server on 127.0.0.1
whose recorded requests show exactly what a summon sends.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from terrarium_dagster.agent.tools import (
    ToolAccess,
    ToolOutcome,
    ToolRegistry,
    default_registry,
    dispatch,
)
from terrarium_dagster.context.prompts import SYSTEM_PROMPT
from terrarium_dagster.context.state import ContextState, Cursor, Message
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.errors import BudgetError
from terrarium_dagster.model.client import ChatClient, ClientConfig
from terrarium_dagster.model.session import ModelSession
from terrarium_dagster.snapshots.context_snapshots import save_snapshot
from terrarium_dagster.store.annotator import Actor, GlossaryStore
from terrarium_dagster.store.models import ProvenanceIn
from terrarium_dagster.summon.summoning import (
    SUMMON_HEADING,
    SummonError,
    SummonManager,
    snapshot_tools,
)
from tests.support.corpus_builder import simple_quest
from tests.support.vllm_server import Reply, ScriptedVLLM

PAST_PROMPT = SYSTEM_PROMPT + "\n(past run)"
PAST_MARKER = "PAST-SCENE-TEXT"
CURRENT_MARKER = "CURRENT-SCENE-TEXT"
URL = "https://quest.example/t/{thread_id}#{post_id}"


@dataclass
class World:
    store: GlossaryStore
    corpus: Corpus
    past_id: int  # end of the first scene: it created E1 Vaskari
    current_id: int  # one scene later: it also created E2 Orlundel
    scenes: list[Any]


def _scene_turns(scene_id: str, marker: str, term: str, entry_id: int, call: str) -> list[Message]:
    arguments = json.dumps({"term": term, "definition": f"{term}, a name."}, sort_keys=True)
    result = {"entry": {"id": f"E{entry_id}", "term": term}, "ok": True, "posts": [1000]}
    return [
        {"role": "user", "content": f"# Scene {scene_id}\n{marker}\n## Story\n{term} ..."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call,
                    "type": "function",
                    "function": {"name": "glossary_create", "arguments": arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call, "content": json.dumps(result, sort_keys=True)},
        {"role": "assistant", "content": f"Scene {scene_id} done: created [E{entry_id}]."},
    ]


@pytest.fixture(name="world")
def world_fixture(tmp_path: Path) -> Iterator[World]:
    corpus = Corpus(simple_quest(tmp_path / "quest.db"), url_template=URL)
    store = GlossaryStore(tmp_path / "g.db")
    thread = corpus.threads()[0]
    scenes = corpus.scenes(thread.id)
    first, second = scenes[0], scenes[1]
    store.progress.set_thread_state(
        thread.id, thread_key=thread.key, position=0, status="annotating"
    )

    state = ContextState()
    actor = Actor(kind="agent", run_id="run-1", thread_id=thread.id, scene_id=first.id)
    source = [ProvenanceIn(post_id=first.posts[0].id, thread_id=thread.id)]
    store.glossary.create_entry(actor, "Vaskari", "Vaskari, a name.", provenance=source)
    state.append_scene(
        first.id, thread.id, _scene_turns(first.id, PAST_MARKER, "Vaskari", 1, "c1"), [1]
    )
    state.cursor = Cursor(thread_id=thread.id, scene_id=first.id)
    past_id = save_snapshot(
        store,
        kind="shutdown",
        thread_id=thread.id,
        scene_id=first.id,
        run_id="run-1",
        state=state,
        system_prompt=PAST_PROMPT,
        tools=default_registry(),
        model="test-model",
    )
    actor = Actor(kind="agent", run_id="run-1", thread_id=thread.id, scene_id=second.id)
    source = [ProvenanceIn(post_id=second.posts[0].id, thread_id=thread.id)]
    store.glossary.create_entry(actor, "Orlundel", "Orlundel, a city.", provenance=source)
    state.append_scene(
        second.id, thread.id, _scene_turns(second.id, CURRENT_MARKER, "Orlundel", 2, "c2"), [2]
    )
    state.cursor = Cursor(thread_id=thread.id, scene_id=second.id)
    current_id = save_snapshot(
        store,
        kind="shutdown",
        thread_id=thread.id,
        scene_id=second.id,
        run_id="run-1",
        state=state,
        system_prompt=SYSTEM_PROMPT,
        tools=default_registry(),
        model="test-model",
    )
    try:
        yield World(store, corpus, past_id, current_id, scenes)
    finally:
        store.close()
        corpus.close()


def _manager(
    server: ScriptedVLLM, world: World, *, budget: int = 32768, max_tokens: int = 256
) -> SummonManager:
    client = ChatClient(ClientConfig(base_url=server.url, max_retries=0))
    session = ModelSession(
        client, world.store, budget=budget, max_tokens=max_tokens, run_id="run-2"
    )
    return SummonManager(world.store, session, corpus=world.corpus, run_id="run-2")


def _contents(messages: list[dict[str, Any]]) -> str:
    return "\n".join(str(m.get("content") or "") for m in messages)


def _tool_results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool results of the summon round (after its question)."""
    start = max(i for i, m in enumerate(messages) if m["role"] == "user")
    return [json.loads(m["content"]) for m in messages[start:] if m["role"] == "tool"]


def test_summon_sends_the_past_context_not_the_current_one(
    vllm_server: ScriptedVLLM, world: World
) -> None:
    vllm_server.script(Reply(content="In scene 1000#1000 I created [E1] Vaskari, >>1000."))
    manager = _manager(vllm_server, world)
    answer = manager.summon(world.past_id, "Why did you write [E1] Vaskari?")
    assert answer == "In scene 1000#1000 I created [E1] Vaskari, >>1000."
    (request,) = vllm_server.chat_requests
    messages = request.messages
    assert messages[0] == {"role": "system", "content": PAST_PROMPT}
    sent = _contents(messages)
    assert PAST_MARKER in sent
    assert CURRENT_MARKER not in sent and "Orlundel" not in sent
    last = messages[-1]
    assert last["role"] == "user" and last["content"].startswith(SUMMON_HEADING + "\n")
    assert "Why did you write [E1] Vaskari?" in last["content"]
    assert [t["function"]["name"] for t in request.tools] == [
        "glossary_search",
        "read_post",
    ]


def test_a_summoned_context_cannot_write_the_glossary(
    vllm_server: ScriptedVLLM, world: World
) -> None:
    store = world.store
    before = (store.history.last_revision_id(), [e.id for e in store.glossary.entries()])
    create = json.dumps({"term": "Sardomir", "definition": "A name."})
    update = json.dumps({"entry_id": "E1", "definition": "Rewritten."})
    vllm_server.script(
        Reply(tool_calls=[("glossary_create", create), ("glossary_update", update)]),
        Reply(content="I cannot change it now."),
    )
    manager = _manager(vllm_server, world)
    assert manager.summon(world.past_id, "Fix [E1] please.") == "I cannot change it now."
    second = vllm_server.chat_requests[1].messages
    results = _tool_results(second)
    assert len(results) == 2
    for result in results:
        assert result["ok"] is False
        assert "read-only" in result["error"]
    assert (store.history.last_revision_id(), [e.id for e in store.glossary.entries()]) == before
    assert store.glossary.get_entry(1).definition == "Vaskari, a name."


def test_the_read_tools_of_a_summoned_context_stop_at_its_own_time(
    vllm_server: ScriptedVLLM, world: World
) -> None:
    later_post = world.scenes[1].posts[0].id
    own_post = world.scenes[0].posts[0].id
    vllm_server.script(
        Reply(
            tool_calls=[
                ("glossary_search", json.dumps({"query": "Orlundel"})),
                ("glossary_search", json.dumps({"query": "Vaskari"})),
                ("read_post", json.dumps({"post_id": later_post})),
                ("read_post", json.dumps({"post_id": own_post})),
            ]
        ),
        Reply(content="Looked it up."),
    )
    _manager(vllm_server, world).summon(world.past_id, "What did you know then?")
    orlundel, vaskari, later, own = _tool_results(vllm_server.chat_requests[1].messages)
    assert orlundel["ok"] is True and orlundel["hits"] == []  # created after the snapshot
    assert [hit["id"] for hit in vaskari["hits"]] == ["E1"]
    assert later["ok"] is False and "after the current scene" in later["error"]
    assert own["ok"] is True and own["post"]["id"] == own_post


def test_a_multi_turn_summon_is_logged_with_its_calls_when_dismissed(
    vllm_server: ScriptedVLLM, world: World
) -> None:
    vllm_server.script(Reply(content="First: >>1000."), Reply(content="Second: none."))
    manager = _manager(vllm_server, world)
    actor = Actor(kind="agent", run_id="run-2", thread_id=1042, scene_id="1042#1042")
    assert manager.summon(world.past_id, "Why [E1]?", summoner=actor) == "First: >>1000."
    assert manager.continue_("And the gate?") == "Second: none."
    follow_up = vllm_server.chat_requests[1].messages
    assert [m["content"] for m in follow_up[-3:-1]] == [
        vllm_server.chat_requests[0].messages[-1]["content"],
        "First: >>1000.",
    ]
    assert follow_up[-1]["content"].startswith(SUMMON_HEADING)
    assert "And the gate?" in follow_up[-1]["content"]

    log_id = manager.dismiss()
    assert manager.session is None
    (logged,) = world.store.memory.summons(world.past_id)
    assert logged["id"] == log_id and logged["run_id"] == "run-2"
    exchange = logged["exchange"]
    assert exchange["answers"] == ["First: >>1000.", "Second: none."]
    assert [m["role"] for m in exchange["exchange"]] == ["user", "assistant"] * 2
    assert exchange["summoned_by"]["scene_id"] == "1042#1042"
    assert exchange["ended"] == "dismissed"
    calls = [c for c in world.store.runs.agent_calls(run_id="run-2") if c.purpose == "summon"]
    assert len(calls) == 2
    expected = [vllm_server.count_tokens(body) for body in vllm_server.chat_bodies]
    assert [c.prompt_tokens for c in calls] == expected
    assert all(c.thread_id == 1042 and c.completion_tokens > 0 for c in calls)
    assert exchange["prompt_tokens"] == sum(expected)


def test_only_one_summon_at_a_time_with_clear_errors(
    vllm_server: ScriptedVLLM, world: World
) -> None:
    manager = _manager(vllm_server, world)
    with pytest.raises(SummonError, match="no snapshot is summoned; nothing to continue"):
        manager.continue_("Hello?")
    with pytest.raises(SummonError, match="nothing to dismiss"):
        manager.dismiss()
    manager.summon(world.past_id, "Why [E1]?")
    with pytest.raises(SummonError, match=f"snapshot {world.past_id} .* still summoned"):
        manager.summon(world.current_id, "Why [E2]?")
    assert len(vllm_server.chat_requests) == 1  # the refused summon sent nothing
    assert manager.dismiss_if_open() is not None
    assert manager.dismiss_if_open() is None
    assert world.store.memory.summons()[0]["exchange"]["ended"] == "scene_end"
    manager.summon(world.current_id, "Why [E2]?")
    manager.abandon()  # its scene was rolled back: forgotten, not logged
    assert manager.session is None
    assert len(world.store.memory.summons()) == 1


def _agent_registry(manager: SummonManager) -> ToolRegistry:
    registry = default_registry()
    for tool in snapshot_tools(manager):
        registry.register(tool)
    return registry


def _call(registry: ToolRegistry, access: ToolAccess, name: str, **arguments: Any) -> ToolOutcome:
    call = {
        "id": f"call-{name}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return dispatch(registry, access, call)


def test_the_agent_lists_summons_converses_and_dismisses_through_its_tools(
    vllm_server: ScriptedVLLM, world: World
) -> None:
    manager = _manager(vllm_server, world)
    registry = _agent_registry(manager)
    assert not any(registry[name].writes for name in ("list_snapshots", "summon_snapshot"))
    scene = world.scenes[2]
    actor = Actor(kind="agent", run_id="run-2", thread_id=scene.thread_id, scene_id=scene.id)
    access = ToolAccess(store=world.store, corpus=world.corpus, actor=actor, scene=scene)

    listed = json.loads(_call(registry, access, "list_snapshots").result_json)
    assert [s["id"] for s in listed["snapshots"]] == [world.past_id, world.current_id]
    blame = json.loads(_call(registry, access, "list_snapshots", entry_id="E1").result_json)
    assert blame["entry"] == "E1"
    assert blame["edits"][0]["summon"] == world.past_id

    vllm_server.script(Reply(content="Because of >>1000."), Reply(content="Yes."))
    summoned = _call(
        registry, access, "summon_snapshot", snapshot_id=world.past_id, question="Why [E1]?"
    )
    assert summoned.ok and json.loads(summoned.result_json)["answer"] == "Because of >>1000."
    again = _call(registry, access, "summon_snapshot", snapshot_id=world.current_id, question="?")
    assert not again.ok
    assert f"snapshot {world.past_id}" in json.loads(again.result_json)["error"]
    assert json.loads(_call(registry, access, "summon_continue", message="Sure?").result_json)[
        "answer"
    ] == ("Yes.")
    dismissed = json.loads(_call(registry, access, "summon_dismiss").result_json)
    assert dismissed["dismissed"] == world.past_id and dismissed["questions"] == 2
    gone = _call(registry, access, "summon_continue", message="Still there?")
    assert not gone.ok and "no snapshot is summoned" in json.loads(gone.result_json)["error"]
    unknown = _call(registry, access, "summon_snapshot", snapshot_id=99, question="?")
    assert not unknown.ok and "no snapshot 99" in json.loads(unknown.result_json)["error"]
    calls = [c for c in world.store.runs.agent_calls(run_id="run-2") if c.purpose == "summon"]
    assert {(c.thread_id, c.scene_id) for c in calls} == {(scene.thread_id, scene.id)}


def test_a_snapshot_later_in_the_story_than_the_current_scene_is_not_offered(
    vllm_server: ScriptedVLLM, world: World
) -> None:
    later_thread = world.corpus.threads()[1]
    state = ContextState(cursor=Cursor(thread_id=later_thread.id, scene_id=None))
    world.store.progress.set_thread_state(
        later_thread.id, thread_key=later_thread.key, position=1, status="annotating"
    )
    future = save_snapshot(
        world.store,
        kind="shutdown",
        thread_id=later_thread.id,
        scene_id=None,
        run_id="run-1",
        state=state,
        system_prompt=SYSTEM_PROMPT,
        tools=default_registry(),
        model=None,
    )
    manager = _manager(vllm_server, world)
    registry = _agent_registry(manager)
    scene = world.scenes[2]
    access = ToolAccess(
        store=world.store, corpus=world.corpus, actor=Actor(kind="agent"), scene=scene
    )
    listed = json.loads(_call(registry, access, "list_snapshots").result_json)
    assert future not in [s["id"] for s in listed["snapshots"]]
    refused = _call(registry, access, "summon_snapshot", snapshot_id=future, question="?")
    assert not refused.ok and "later in the story" in json.loads(refused.result_json)["error"]
    assert vllm_server.chat_requests == []


def _big_snapshot(world: World, scenes: int, focus_at: int) -> int:
    """A snapshot whose history is far larger than the model window; scene `focus_at` wrote E1."""
    state = ContextState(story_so_far="Long ago. " * 2000)
    filler = "The caravan crossed the salt flats and nothing of note happened. " * 25
    for index in range(scenes):
        scene_id = f"1000#{5000 + index}"
        if index == focus_at:
            turns = _scene_turns(scene_id, "FOCUS-SCENE", "Vaskari", 1, f"f{index}")
            state.append_scene(scene_id, 1000, turns, [1])
        else:
            turns = [
                {"role": "user", "content": f"# Scene {scene_id}\nOLD-{index}\n{filler}"},
                {"role": "assistant", "content": f"Scene {scene_id} done: nothing new."},
            ]
            state.append_scene(scene_id, 1000, turns, [])
    state.cursor = Cursor(thread_id=1000, scene_id=world.scenes[0].id)
    return save_snapshot(
        world.store,
        kind="thread_end",
        thread_id=1000,
        scene_id=world.scenes[0].id,
        run_id="run-1",
        state=state,
        system_prompt=SYSTEM_PROMPT,
        tools=default_registry(),
        model=None,
    )


def test_a_snapshot_larger_than_the_window_is_trimmed_and_never_sent_over_budget(
    vllm_server: ScriptedVLLM, world: World
) -> None:
    vllm_server.max_model_len = 4096
    big = _big_snapshot(world, scenes=120, focus_at=70)
    vllm_server.script(
        Reply(tool_calls=[("read_post", json.dumps({"post_id": world.scenes[0].posts[0].id}))]),
        Reply(content="I wrote [E1] from >>1000."),
        Reply(content="Nothing more."),
    )
    manager = _manager(vllm_server, world, budget=32768, max_tokens=256)
    assert manager.summon(big, "Why did you write [E1] Vaskari?") == "I wrote [E1] from >>1000."
    assert manager.continue_("Anything else about [E1]?") == "Nothing more."
    requests = vllm_server.chat_requests
    assert len(requests) == 3  # none was refused and sent again
    for request in requests:
        assert vllm_server.count_tokens(request.json) + request.json["max_tokens"] <= 4096
        sent = _contents(request.messages)
        assert "FOCUS-SCENE" in sent  # the scene that wrote E1 is kept
        assert "OLD-0\n" not in sent  # the oldest unrelated scenes are not
    manager.dismiss()
    trimmed = world.store.memory.summons(big)[0]["exchange"]["trimmed"]
    assert len(trimmed["scenes"]) > 100
    assert trimmed["story_chars"] > 0


def test_a_question_that_cannot_fit_at_all_is_a_budget_error_and_sends_nothing(
    vllm_server: ScriptedVLLM, world: World
) -> None:
    vllm_server.max_model_len = 600
    manager = _manager(vllm_server, world, budget=32768, max_tokens=256)
    with pytest.raises(BudgetError, match="window of 600 tokens"):
        manager.summon(world.past_id, "Why? " * 400)
    assert vllm_server.chat_requests == []
    assert manager.session is None


def test_without_a_corpus_no_tools_are_offered(vllm_server: ScriptedVLLM, world: World) -> None:
    vllm_server.script(Reply(content="From memory."))
    client = ChatClient(ClientConfig(base_url=vllm_server.url, max_retries=0))
    session = ModelSession(client, world.store, budget=8192, max_tokens=256, run_id=None)
    manager = SummonManager(world.store, session)
    assert manager.summon(world.past_id, "Why [E1]?") == "From memory."
    assert vllm_server.chat_requests[0].tools == []
    manager.dismiss()
    assert world.store.memory.summons()[0]["exchange"]["tools"] == []
