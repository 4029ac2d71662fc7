"""Context state, message layout and prompts: deterministic, in DESIGN order, tool pairs kept."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from terrarium_dagster.context import (
    SYSTEM_PROMPT,
    ContextState,
    Summary,
    build_messages,
    canonical_tools,
    prompts,
    repair_tool_pairs,
    scene_message,
    tool_pair_problems,
)
from terrarium_dagster.context.state import entry_ids_written


def call(call_id: str, name: str = "glossary_create", arguments: str = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def scene(thread_id: int, number: int) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"# Scene {thread_id}#{number}\nstory"},
        {"role": "assistant", "content": None, "tool_calls": [call(f"c{number}")]},
        {"role": "tool", "tool_call_id": f"c{number}", "content": '{"entry_id":"E5","ok":true}'},
        {"role": "assistant", "content": "Done."},
    ]


def state_with(scenes: int, *, summaries: bool = False) -> ContextState:
    state = ContextState()
    for number in range(1, scenes + 1):
        state.append_scene(f"1#{number}", 1, scene(1, number), [number])
    if summaries:
        state.story_so_far = "Long ago, the exile began."
        state.summaries.append(
            Summary(kind="thread", thread_id=0, scene_ids=["0#1"], entry_ids=[1], text="Before.")
        )
        state.summaries.append(
            Summary(kind="chunk", thread_id=1, scene_ids=["1#0"], entry_ids=[2], text="Lately.")
        )
    return state


# -- state -----------------------------------------------------------------------------------------


def test_state_json_is_deterministic_and_round_trips() -> None:
    one, two = state_with(3, summaries=True), state_with(3, summaries=True)
    one.compactions = {"truncate": 1, "cut_middle": 2}
    two.compactions = {"cut_middle": 2, "truncate": 1}
    assert one.to_json() == two.to_json()
    assert json.loads(one.to_json()) == json.loads(
        json.dumps(json.loads(one.to_json()), sort_keys=True)
    )
    assert ContextState.from_json(one.to_json()) == one


def test_state_rejects_spans_that_do_not_cover_the_history() -> None:
    data = json.loads(state_with(2).to_json())
    data["scenes"][1]["start"] = 5
    with pytest.raises(ValidationError, match="expected to start at 4"):
        ContextState.model_validate(data)
    data = json.loads(state_with(2).to_json())
    data["history"].append({"role": "user", "content": "stray"})
    with pytest.raises(ValidationError, match="cover 8 messages of a history of 9"):
        ContextState.model_validate(data)


def test_removing_scenes_keeps_spans_contiguous() -> None:
    state = state_with(4)
    removed = state.remove_scenes(["1#2", "1#3"])
    assert [s.scene_id for s in removed] == ["1#2", "1#3"]
    assert [(s.scene_id, s.start, s.end) for s in state.scenes] == [("1#1", 0, 4), ("1#4", 4, 8)]
    assert state.history == scene(1, 1) + scene(1, 4)
    ContextState.model_validate(state.model_dump())


# -- tool pairs ------------------------------------------------------------------------------------


def test_tool_pair_problems_finds_every_kind_of_orphan() -> None:
    good = scene(1, 1)
    assert tool_pair_problems(good) == []
    assert "no result" in tool_pair_problems(good[:2])[0]
    assert "answers no open call" in tool_pair_problems([good[0], good[2]])[0]
    assert "no result before message 2" in tool_pair_problems([good[0], good[1], good[3]])[0]
    twice = [good[0], good[1], good[2], good[2]]
    assert "answers no open call" in tool_pair_problems(twice)[0]


def test_repair_removes_unanswered_calls_and_unasked_results() -> None:
    two_calls = {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [call("a"), call("b")],
    }
    messages = [
        {"role": "user", "content": "# Scene 1#1"},
        two_calls,
        {"role": "tool", "tool_call_id": "b", "content": "{}"},
        {"role": "tool", "tool_call_id": "zzz", "content": "{}"},
        {"role": "assistant", "content": None, "tool_calls": [call("c")]},
    ]
    repaired = repair_tool_pairs(messages)
    assert tool_pair_problems(repaired) == []
    assert repaired[1]["tool_calls"] == [call("b")] and repaired[1]["content"] == "Let me look."
    assert len(repaired) == 3


def test_entry_ids_written_reads_glossary_writes_only() -> None:
    messages = [
        {"role": "user", "content": "# Scene 1#1\n- [E9] Known"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                call("s", "glossary_search", '{"query":"x"}'),
                call("u", "glossary_update", '{"entry_id":"E4"}'),
                call("k", "glossary_create", "{}"),
                call("bad", "glossary_create", "{}"),
            ],
        },
        {"role": "tool", "tool_call_id": "s", "content": '{"hits":[{"entry_id":"E7"}],"ok":true}'},
        {"role": "tool", "tool_call_id": "u", "content": '{"ok":true}'},
        {"role": "tool", "tool_call_id": "k", "content": '{"entry":{"id":12},"ok":true}'},
        {"role": "tool", "tool_call_id": "bad", "content": '{"error":"E3 exists","ok":false}'},
    ]
    assert entry_ids_written(messages) == [4, 12]


# -- layout ----------------------------------------------------------------------------------------


def test_layout_puts_the_stable_parts_first_and_the_scene_last() -> None:
    state = state_with(2, summaries=True)
    messages = build_messages(state, SYSTEM_PROMPT, "# Scene 1#3\nnew")
    assert messages[0] == {"role": "system", "content": SYSTEM_PROMPT}
    block = messages[1]["content"]
    assert messages[1]["role"] == "user" and messages[2] == {
        "role": "assistant",
        "content": "Noted.",
    }
    assert block.index("# Story so far\nLong ago") < block.index("## Thread 0 (finished)\nBefore.")
    assert block.index("Before.") < block.index("## Thread 1 so far (scenes 1#0 .. 1#0)\nLately.")
    assert messages[3:-1] == state.history
    assert messages[-1] == {"role": "user", "content": "# Scene 1#3\nnew"}


def test_layout_without_summaries_has_no_story_block() -> None:
    messages = build_messages(state_with(1), SYSTEM_PROMPT, None)
    assert messages == [{"role": "system", "content": SYSTEM_PROMPT}, *scene(1, 1)]


def test_appending_a_scene_extends_the_previous_prefix() -> None:
    state = state_with(2, summaries=True)
    before = build_messages(state, SYSTEM_PROMPT)
    state.append_scene("1#3", 1, scene(1, 3), [3])
    after = build_messages(state, SYSTEM_PROMPT)
    assert after[: len(before)] == before
    assert json.dumps(after[: len(before)]) == json.dumps(before)


# -- prompts ---------------------------------------------------------------------------------------


def test_scene_message_follows_the_prompt_conventions() -> None:
    text = scene_message(
        scene_id="42#100",
        thread_id=42,
        title='The "Long" Road',
        scene_number=3,
        scene_count=9,
        first_post_id=100,
        last_post_id=104,
        known_entries=["- [E1] Karvel [tentative]: a river."],
        story="[post 100]\nThey crossed.",
    )
    lines = text.splitlines()
    assert lines[0] == "# Scene 42#100"
    assert lines[1] == 'thread 42 "The \\"Long\\" Road" · scene 3 of 9'
    assert text.index("## Known entries\n- [E1] Karvel") < text.index("## Story\n[post 100]")
    empty = scene_message(
        scene_id="1#1",
        thread_id=1,
        title="T",
        scene_number=1,
        scene_count=1,
        first_post_id=1,
        last_post_id=1,
        known_entries=[],
        story="s",
    )
    assert "## Known entries\n(none)\n" in empty


def test_task_messages_start_with_their_fixed_first_line() -> None:
    chunk = prompts.summarize_chunk_message(
        thread_id=7, scene_ids=["7#1", "7#5"], entry_ids=[3, 1, 2], max_words=100
    )
    chained = prompts.summarize_chunk_message(
        thread_id=7, scene_ids=["7#9"], entry_ids=[], max_words=100, previous_summary="Before."
    )
    thread = prompts.summarize_thread_message(
        thread_id=7, scene_ids=["7#9"], entry_ids=[4], max_words=80, previous_summary="Before."
    )
    fold = prompts.fold_story_message(
        thread_summaries=[(7, "Seven.", [4]), (8, "Eight.", [9])],
        max_words=200,
        previous_summary="Story.",
    )
    flush = prompts.flush_message(["7#1", "7#5"])
    assert chunk.splitlines()[:3] == [
        "# Task: summarize_chunk",
        "thread 7 · scenes 7#1 .. 7#5 (2 scenes)",
        "scene ids: 7#1, 7#5",
    ]
    # the code appends entry ids and posts: the model is told not to write them
    for instruction in (chunk, chained, thread):
        assert "[E1]" not in instruction and "do not write them" in instruction
    assert "Keep every fact of the previous summary" in chained
    assert "Keep every fact of the previous summary" not in chunk
    assert "## Previous summary" not in chunk
    assert chained.endswith("## Previous summary\nBefore.\n")
    assert thread.startswith("# Task: summarize_thread\nthread 7 · scenes 7#9 .. 7#9")
    assert "## Previous summary\nBefore." in thread
    assert fold.startswith("# Task: fold_story\nthreads: 7, 8\n")
    assert fold.index("## Previous summary\nStory.") < fold.index("### Thread 7\nSeven.")
    assert flush.startswith("# Task: flush\nleaving context: scenes 7#1 .. 7#5\n")


def test_entry_refs_round_trip_through_ranges() -> None:
    ids = [1, 2, 3, 4, 9, 11, 12, 20, 21, 22]
    text = prompts.entry_refs(ids)
    assert text == "[E1]–[E4], [E9], [E11], [E12], [E20]–[E22]"
    assert prompts.parse_entry_refs(text) == ids
    assert prompts.parse_entry_refs("E5, [E7]-[E9] and >>123") == [5, 7, 8, 9]


def test_tool_schemas_serialise_identically_whatever_the_key_order() -> None:
    one = [{"type": "function", "function": {"name": "a", "parameters": {"b": 1, "a": 2}}}]
    two = [{"function": {"parameters": {"a": 2, "b": 1}, "name": "a"}, "type": "function"}]
    assert json.dumps(canonical_tools(one)) == json.dumps(canonical_tools(two))
    assert prompts.tools_json(one) == prompts.tools_json(two)
    assert canonical_tools(None) is None


def test_system_prompt_names_the_job_and_the_conventions() -> None:
    for phrase in ("# Scene", "# Task:", "## Known entries", "SCENE DONE", "no search needed"):
        assert phrase in SYSTEM_PROMPT
    assert prompts.ENTRY_RULES in SYSTEM_PROMPT and prompts.STATUS_RULES in SYSTEM_PROMPT
