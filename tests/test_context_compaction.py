"""Compaction: each tier alone and together, the doom-loop cases, tool pairs, chained summaries,
fallbacks, the flush, the overflow path and the current scene's shrinking.

Token counts come from the vLLM simulator's tokenizer (the exact count a server would give) through
`ServerCounter`, so "within budget" below means within budget by the server's count.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from terrarium_dagster.context import (
    SYSTEM_PROMPT,
    CompactionEvent,
    CompactionPolicy,
    ContextManager,
    ContextState,
    ServerCounter,
    parse_overflow,
    scene_message,
    tool_pair_problems,
)
from terrarium_dagster.context.compaction import TRUNCATION_MARKER
from terrarium_dagster.context.compaction import manager as compaction_manager
from terrarium_dagster.context.prompts import (
    FLUSH_HEADING,
    FOLD_STORY_HEADING,
    PREVIOUS_SUMMARY_HEADING,
    SUMMARIZE_CHUNK_HEADING,
    SUMMARIZE_THREAD_HEADING,
    parse_entry_refs,
)
from terrarium_dagster.context.state import canonical_message
from terrarium_dagster.errors import (
    AgentError,
    BudgetError,
    ContextOverflowError,
    NoAnswerError,
)
from terrarium_dagster.testing.simulator import SimulatedVLLM

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "glossary_create",
            "description": "Create an entry.",
            "parameters": {
                "type": "object",
                "properties": {"term": {"type": "string"}, "definition": {"type": "string"}},
            },
        },
    }
]
SIM = SimulatedVLLM(lambda body: {"content": "ok"}, max_model_len=1_000_000)


def true_count(messages: list[dict[str, Any]]) -> int:
    return SIM.count(messages, TOOLS)


def prose(seed: int, words: int) -> str:
    vocabulary = ("the", "river", "stone", "gate", "fire", "road", "night", "guard", "elder")
    return " ".join(vocabulary[(seed * 31 + i * 7) % len(vocabulary)] for i in range(words))


def scene_turns(
    thread_id: int,
    number: int,
    *,
    words: int = 120,
    entry_id: int | None = None,
    think: str = "",
    result_chars: int = 80,
) -> tuple[str, list[dict[str, Any]]]:
    """A finished scene: its message, a create call with its result, a final answer."""
    scene_id = f"{thread_id}#{number}"
    text = scene_message(
        scene_id=scene_id,
        thread_id=thread_id,
        title=f"Thread {thread_id}",
        scene_number=number,
        scene_count=999,
        first_post_id=number,
        last_post_id=number,
        known_entries=[],
        story=f"[post {number}]\nScene {number} begins. {prose(number, words)}",
    )
    entry = entry_id if entry_id is not None else thread_id * 1000 + number
    call_id = f"call-{thread_id}-{number}"
    messages = [
        {"role": "user", "content": text},
        {
            "role": "assistant",
            "content": f"<think>{think}</think>" if think else None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {
                        "name": "glossary_create",
                        "arguments": f'{{"definition":"a term","term":"T{entry}"}}',
                    },
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": call_id,
            "content": f'{{"entry_id":"E{entry}","note":"{"x" * result_chars}","ok":true}}',
        },
        {"role": "assistant", "content": (f"<think>{think}</think>" if think else "") + "Done."},
    ]
    return scene_id, messages


@dataclass
class Summarizer:
    """Answers summary tasks; `mode` picks a good answer or one of the bad ones."""

    mode: str = "good"
    calls: list[list[dict[str, Any]]] = field(default_factory=list)

    def __call__(self, messages: list[dict[str, Any]]) -> str:
        self.calls.append(messages)
        instruction = messages[-1]["content"]
        if self.mode == "empty":
            return "   "
        if self.mode == "error":
            return "Error: the model could not answer."
        if self.mode == "raise":
            raise NoAnswerError("the model did not answer")
        if self.mode == "server_gone":
            raise AgentError("server gone")
        ids = re.search(r"^entries: (.*)$", instruction, re.MULTILINE)
        if self.mode == "drop_ids":
            return "They travelled on and met the elder at the gate."
        return f"They travelled on. Entries: {ids.group(1) if ids else '(none)'}."

    def instructions(self) -> list[str]:
        return [call[-1]["content"] for call in self.calls]


@dataclass
class Flusher:
    calls: list[list[dict[str, Any]]] = field(default_factory=list)
    fail: bool = False

    def __call__(self, messages: list[dict[str, Any]]) -> None:
        self.calls.append(messages)
        if self.fail:
            raise AgentError("failed after 7 attempts: HTTP 503")


def manager(
    *,
    budget: int,
    max_tokens: int = 256,
    summarizer: Summarizer | None = None,
    flusher: Flusher | None = None,
    policy: CompactionPolicy | None = None,
    state: ContextState | None = None,
    events: list[CompactionEvent] | None = None,
    check_pairs: bool = True,
) -> ContextManager:
    def record(event: CompactionEvent) -> None:
        if events is not None:
            events.append(event)
        if check_pairs:
            assert tool_pair_problems(cm.build()) == [], event.tier

    cm = ContextManager(
        state or ContextState(),
        system_prompt=SYSTEM_PROMPT,
        tools=TOOLS,
        budget=budget,
        max_tokens=max_tokens,
        counter=ServerCounter(lambda messages, tools: SIM.count(messages, tools)),
        summarizer=summarizer or Summarizer(),
        flusher=flusher,
        recorder=record,
        policy=policy,
    )
    return cm


def fill(cm: ContextManager, thread_id: int, numbers: range, **kwargs: Any) -> None:
    for number in numbers:
        scene_id, messages = scene_turns(thread_id, number, **kwargs)
        cm.end_scene(scene_id, thread_id, messages)


def next_scene(thread_id: int, number: int, words: int = 120) -> tuple[str, str]:
    scene_id, messages = scene_turns(thread_id, number, words=words)
    return scene_id, messages[0]["content"]


def prepare(cm: ContextManager, thread_id: int, number: int, reserve: int = 0, words: int = 120):
    scene_id, text = next_scene(thread_id, number, words)
    events = cm.prepare(text, thread_id=thread_id, scene_id=scene_id, reserve_tokens=reserve)
    assert true_count(cm.build(text)) + reserve <= cm.limit or not events
    return scene_id, text, events


def squeeze(
    cm: ContextManager, thread_id: int, number: int, *, free: int, reserve: int = 0
) -> None:
    """Set the budget so that scene `number` needs `free` tokens more than there is room for."""
    _, text = next_scene(thread_id, number)
    cm.budget = true_count(cm.build(text)) + reserve + cm.sizes.max_tokens - free


def history_scene_ids(cm: ContextManager) -> list[str]:
    return [span.scene_id for span in cm.state.scenes]


# -- nothing to do ---------------------------------------------------------------------------------


def test_prepare_does_nothing_when_the_scene_fits() -> None:
    summarizer = Summarizer()
    cm = manager(budget=20_000, summarizer=summarizer)
    fill(cm, 1, range(1, 6))
    before = cm.state.to_json()
    _, _, events = prepare(cm, 1, 6)
    assert events == [] and summarizer.calls == [] and cm.state.to_json() == before


# -- tier 1 ----------------------------------------------------------------------------------------


def test_summarize_chunk_replaces_the_oldest_scenes_of_the_thread_with_a_summary() -> None:
    summarizer, events = Summarizer(), []
    # room for the summary request itself (the cached prefix plus the instruction): under a
    # tighter budget the request would not fit, so none is sent and the extractive summary is used
    cm = manager(budget=6400, summarizer=summarizer, events=events)
    fill(cm, 1, range(1, 21))
    full_before = cm.build()
    _, text, _ = prepare(cm, 1, 21)
    assert [e.tier for e in events] == ["summarize_chunk"]
    chunk = events[0].scene_ids
    assert len(chunk) >= 8 and chunk == [f"1#{n}" for n in range(1, len(chunk) + 1)]
    assert history_scene_ids(cm) == [f"1#{n}" for n in range(len(chunk) + 1, 21)]
    summary = cm.state.chunk_summary(1)
    assert summary is not None and summary.scene_ids == chunk
    assert summary.entry_ids == [1000 + n for n in range(1, len(chunk) + 1)]
    assert set(parse_entry_refs(summary.text)) == set(summary.entry_ids)
    # the request continues the cached prefix: the conversation as sent, instruction last
    request = summarizer.calls[0]
    assert request[-1]["content"].startswith(SUMMARIZE_CHUNK_HEADING + "\n")
    assert request[:-1] == full_before[: len(request) - 1]
    assert true_count(cm.build(text)) <= cm.limit * 0.5
    assert events[0].tokens_after < events[0].tokens_before


def test_chunk_goes_down_to_half_a_chunk_when_the_thread_has_no_more_old_scenes() -> None:
    events: list[CompactionEvent] = []
    cm = manager(budget=100_000, events=events, policy=CompactionPolicy(chunk_scenes=8))
    fill(cm, 1, range(1, 6))  # 4 old scenes + the one kept: half of 8
    squeeze(cm, 1, 6, free=50)
    prepare(cm, 1, 6)
    assert events[0].tier == "summarize_chunk"
    assert events[0].scene_ids == ["1#1", "1#2", "1#3", "1#4"]
    assert history_scene_ids(cm) == ["1#5"]


def test_chunk_smaller_than_half_is_not_summarized_and_the_next_tier_runs() -> None:
    summarizer, events = Summarizer(), []
    cm = manager(
        budget=100_000,
        summarizer=summarizer,
        events=events,
        policy=CompactionPolicy(chunk_scenes=8, min_free_tokens=100),
    )
    fill(cm, 1, range(1, 4), result_chars=1200)
    squeeze(cm, 1, 4, free=50)
    prepare(cm, 1, 4)
    assert "summarize_chunk" not in [e.tier for e in events]
    assert events and events[0].tier in ("truncate", "cut_middle")
    assert not any(SUMMARIZE_CHUNK_HEADING in text for text in summarizer.instructions())


# -- tier 2 ----------------------------------------------------------------------------------------


def test_fold_thread_turns_a_finished_threads_history_into_a_thread_summary() -> None:
    summarizer, events = Summarizer(), []
    cm = manager(budget=100_000, summarizer=summarizer, events=events)
    fill(cm, 1, range(1, 12))
    cm.end_thread(1, entry_ids=[77])
    fill(cm, 2, range(1, 3))
    squeeze(cm, 2, 3, free=50)
    prepare(cm, 2, 3)
    assert [e.tier for e in events] == ["fold_thread"]
    assert history_scene_ids(cm) == ["2#1", "2#2"]
    summary = cm.state.thread_summary(1)
    assert summary is not None and summary.kind == "thread"
    assert set(summary.entry_ids) == {1000 + n for n in range(1, 12)} | {77}
    request = summarizer.calls[0]
    assert request[-1]["content"].startswith(SUMMARIZE_THREAD_HEADING + "\nthread 1 ")
    assert request[-2]["content"] == "Done."  # ends with thread 1's last scene


def test_fold_story_folds_finished_threads_summaries_into_the_story_so_far() -> None:
    summarizer, events = Summarizer(), []
    cm = manager(
        budget=100_000,
        summarizer=summarizer,
        events=events,
        policy=CompactionPolicy(max_thread_summaries=2),
    )
    for thread_id in (1, 2, 3):
        fill(cm, thread_id, range(1, 6))
        cm.end_thread(thread_id)
    fill(cm, 4, range(1, 3))
    squeeze(cm, 4, 3, free=50)
    prepare(cm, 4, 3)
    tiers = [e.tier for e in events]
    assert tiers.count("fold_thread") == 3 and tiers[-1] == "fold_story"
    assert cm.state.summaries == []
    assert cm.state.story_thread_ids == [1, 2, 3]
    assert set(cm.state.story_entry_ids) == {t * 1000 + n for t in (1, 2, 3) for n in range(1, 6)}
    assert summarizer.instructions()[-1].startswith(FOLD_STORY_HEADING)
    block = cm.build()[1]["content"]
    assert block.startswith("# Story so far\nThey travelled on.")


# -- tiers 3 to 5 ----------------------------------------------------------------------------------


def lossy_policy(**kwargs: Any) -> CompactionPolicy:
    """Summary tiers cannot run: every scene of the (only) thread counts as recent."""
    return CompactionPolicy(keep_recent_scenes=1000, min_free_tokens=100, **kwargs)


def test_trim_thinking_removes_think_blocks_from_old_assistant_turns() -> None:
    events: list[CompactionEvent] = []
    cm = manager(budget=100_000, events=events, policy=lossy_policy())
    fill(cm, 1, range(1, 5), think=prose(9, 150))
    before = true_count(cm.build())
    squeeze(cm, 1, 5, free=50)
    prepare(cm, 1, 5)
    assert [e.tier for e in events] == ["trim_thinking"]
    assert not any("<think>" in str(m.get("content")) for m in cm.state.history)
    assert true_count(cm.build()) < before - 4 * 150
    assert [m["content"] for m in cm.state.history if m["role"] == "assistant"][-1] == "Done."


def test_truncate_keeps_head_and_tail_of_old_long_messages() -> None:
    events: list[CompactionEvent] = []
    cm = manager(budget=100_000, events=events, policy=lossy_policy(truncate_tokens=300))
    fill(cm, 1, range(1, 5), result_chars=2400)
    squeeze(cm, 1, 5, free=50)
    prepare(cm, 1, 5)
    assert [e.tier for e in events] == ["truncate"]
    results = [m["content"] for m in cm.state.history if m["role"] == "tool"]
    truncated = [r for r in results if "truncated" in r]
    assert truncated and all(
        r.startswith('{"entry_id":"E100') and r.endswith("}") for r in truncated
    )
    assert TRUNCATION_MARKER.split("{")[0] in truncated[0]
    assert history_scene_ids(cm) == ["1#1", "1#2", "1#3", "1#4"]


def test_cut_middle_drops_whole_middle_scenes_after_one_flush() -> None:
    events, flusher = [], Flusher()
    policy = lossy_policy(truncate_tokens=10_000)
    cm = manager(budget=100_000, events=events, flusher=flusher, policy=policy)
    fill(cm, 1, range(1, 9))
    squeeze(cm, 1, 9, free=150, reserve=300)
    prepare(cm, 1, 9, reserve=300)
    assert [e.tier for e in events] == ["cut_middle"]
    kept = history_scene_ids(cm)
    assert kept[0] == "1#1" and kept[-1] == "1#8" and len(kept) < 8
    dropped = events[0].scene_ids
    assert dropped == [f"1#{n}" for n in range(2, 2 + len(dropped))]
    assert events[0].entry_ids == [1000 + n for n in range(2, 2 + len(dropped))]
    note = cm.state.chunk_summary(1)
    assert note is not None and set(events[0].entry_ids) <= set(parse_entry_refs(note.text))
    assert len(flusher.calls) == 1 and events[0].flushed


def test_repeated_cuts_keep_one_merged_note_that_stops_growing() -> None:
    """At a small window the last resort runs scene after scene: the thread's summary holds ONE
    note naming the first and last scene dropped, its entry list capped (the latest kept, the
    rest counted), every entry id still in the summary's `entry_ids`."""
    events: list[CompactionEvent] = []
    cm = manager(budget=100_000, events=events, policy=lossy_policy(truncate_tokens=10_000))
    sizes = []
    for number in range(1, 61):
        scene_id, messages = scene_turns(1, number, entry_id=7 * number)  # no ranges to fold
        cm.end_scene(scene_id, 1, messages)
        if number < 4:
            continue
        squeeze(cm, 1, number + 1, free=150, reserve=300)
        prepare(cm, 1, number + 1, reserve=300)
        note = cm.state.chunk_summary(1)
        assert note is not None
        assert note.text.count("left the context without a summary") == 1, note.text
        sizes.append(len(note.text))
    dropped = [i for e in events if e.tier == "cut_middle" for i in e.entry_ids]
    assert len(set(dropped)) > 40 and set(dropped) <= set(note.entry_ids)
    assert note.text.startswith(f"(Scenes {events[0].scene_ids[0]} .. ")
    assert re.search(r"\] and \d+ earlier\.\)$", note.text), note.text
    assert max(sizes) < 1000, sizes


# -- together, in order ----------------------------------------------------------------------------


def test_tiers_run_in_order_until_the_scene_fits() -> None:
    events: list[CompactionEvent] = []
    order = ["summarize_chunk", "fold_thread", "fold_story", "trim_thinking", "truncate"]
    order.append("cut_middle")
    cm = manager(budget=2600, events=events, policy=CompactionPolicy(min_free_tokens=150))
    fill(cm, 1, range(1, 4), think=prose(3, 120), result_chars=1500)
    cm.end_thread(1)
    fill(cm, 2, range(1, 10), think=prose(4, 60), result_chars=1500)
    _, text, _ = prepare(cm, 2, 10, reserve=300)
    tiers = [e.tier for e in events]
    assert tiers[:2] == ["summarize_chunk", "fold_thread"]
    assert [order.index(t) for t in tiers] == sorted(order.index(t) for t in tiers)
    assert true_count(cm.build(text)) + 300 <= cm.limit
    assert cm.state.compactions == {t: tiers.count(t) for t in set(tiers)}


# -- doom loops ------------------------------------------------------------------------------------


def test_single_huge_thread_stays_within_budget_with_bounded_work() -> None:
    summarizer, events = Summarizer(), []
    cm = manager(budget=4096, summarizer=summarizer, events=events)
    for number in range(1, 301):
        scene_id, messages = scene_turns(7, number)
        cm.prepare(messages[0]["content"], thread_id=7, scene_id=scene_id, reserve_tokens=200)
        assert true_count(cm.build(messages[:1])) + 200 <= cm.limit
        cm.end_scene(scene_id, 7, messages)
    assert {e.tier for e in events} == {"summarize_chunk"}
    assert len(summarizer.calls) == len(events) <= 300 // 4
    summary = cm.state.chunk_summary(7)
    assert summary is not None
    covered = set(summary.scene_ids) | set(history_scene_ids(cm))
    assert covered == {f"7#{n}" for n in range(1, 301)}
    assert set(summary.entry_ids) | {s.entry_ids[0] for s in cm.state.scenes} == {
        7000 + n for n in range(1, 301)
    }


def context_only(cm: ContextManager) -> dict[str, object]:
    """The context state without what the token counter learned (the server's exact count of
    the refused request may be learned on the way to the refusal)."""
    return cm.state.model_dump(exclude={"calibration", "anchors"})


def test_single_scene_larger_than_the_budget_is_a_budget_error_that_changes_nothing() -> None:
    summarizer = Summarizer()
    cm = manager(budget=3000, summarizer=summarizer)
    fill(cm, 1, range(1, 12))
    before = context_only(cm)
    scene_id, text = next_scene(1, 12, words=4000)
    with pytest.raises(BudgetError, match=r"scene 1#12 needs \d+ prompt tokens .* limit of 2744"):
        cm.prepare(text, thread_id=1, scene_id=scene_id)
    assert summarizer.calls == [] and context_only(cm) == before


def test_scene_that_cannot_fit_beside_the_summaries_is_an_error_after_every_tier() -> None:
    summarizer, events = Summarizer(), []
    cm = manager(budget=100_000, summarizer=summarizer, events=events)
    fill(cm, 1, range(1, 12))
    cm.end_thread(1)
    scene_id, text = next_scene(2, 1)
    # room for the system prompt and the scene, not for any story block beside them
    alone = true_count(
        [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": text}]
    )
    cm.budget = alone + cm.sizes.max_tokens + 5
    before = cm.state.to_json()
    with pytest.raises(BudgetError, match="every compaction tier has run") as caught:
        cm.prepare(text, thread_id=2, scene_id=scene_id)
    assert "split the scene" in str(caught.value)
    assert events and len(events) <= 11 + 4  # each tier ran while it had material, then gave up
    assert cm.state.to_json() == before  # the run stops on the state it can resume from


def test_no_finished_thread_to_fold_passes_to_the_next_tier() -> None:
    summarizer, events = Summarizer(), []
    cm = manager(budget=100_000, summarizer=summarizer, events=events, policy=lossy_policy())
    fill(cm, 1, range(1, 6), think=prose(2, 200))
    squeeze(cm, 1, 6, free=50)
    prepare(cm, 1, 6)
    assert summarizer.calls == []  # nothing to summarize or fold: straight to the lossy tiers
    assert events[0].tier == "trim_thinking"


def test_everything_already_truncated_passes_to_cut_middle() -> None:
    events: list[CompactionEvent] = []
    cm = manager(budget=100_000, events=events, policy=lossy_policy(truncate_tokens=200))
    for number in range(1, 8):
        scene_id, messages = scene_turns(1, number, words=300, result_chars=1200)
        marker = TRUNCATION_MARKER.format(count=5000)
        for message in messages:
            message["content"] = f"{message['content']}\n{marker}" if message["content"] else None
        cm.end_scene(scene_id, 1, messages)
    squeeze(cm, 1, 8, free=100)
    prepare(cm, 1, 8)
    assert [e.tier for e in events] == ["cut_middle"]


def test_compaction_passes_are_bounded_even_when_summaries_free_nothing() -> None:
    """A summarizer whose answers are as long as the material: passes still end."""
    events: list[CompactionEvent] = []

    def verbose(messages: list[dict[str, Any]]) -> str:
        return prose(5, 2000)

    cm = manager(budget=3000, summarizer=verbose, events=events)  # type: ignore[arg-type]
    fill(cm, 1, range(1, 15))
    prepare(cm, 1, 15)
    assert len(events) <= 14 + 4
    assert true_count(cm.build()) <= cm.limit


# -- chained summaries and fallbacks ---------------------------------------------------------------


def test_chained_summaries_integrate_the_previous_one_and_keep_all_entry_ids() -> None:
    summarizer = Summarizer(mode="drop_ids")
    cm = manager(budget=100_000, summarizer=summarizer)
    fill(cm, 1, range(1, 17))
    squeeze(cm, 1, 17, free=50)
    prepare(cm, 1, 17)
    first = cm.state.chunk_summary(1)
    assert first is not None
    fill(cm, 1, range(17, 33))
    squeeze(cm, 1, 33, free=50)
    prepare(cm, 1, 33)
    second = cm.state.chunk_summary(1)
    assert second is not None and len(cm.state.summaries) == 1
    instruction = summarizer.instructions()[-1]
    assert f"{PREVIOUS_SUMMARY_HEADING}\n{first.text}" in instruction
    assert set(first.entry_ids) < set(second.entry_ids)
    assert second.scene_ids[: len(first.scene_ids)] == first.scene_ids
    # appended where the model dropped them
    assert set(parse_entry_refs(second.text)) == set(second.entry_ids)


def test_the_code_adds_entry_ids_and_the_posts_a_summary_covers() -> None:
    summarizer = Summarizer(mode="drop_ids")  # the model writes prose only, as it is asked
    cm = manager(budget=100_000, summarizer=summarizer)
    fill(cm, 1, range(1, 17))
    squeeze(cm, 1, 17, free=50)
    prepare(cm, 1, 17)
    summary = cm.state.chunk_summary(1)
    assert summary is not None and not summary.fallback
    instruction = summarizer.instructions()[0]
    assert "do not write them" in instruction and "cite" not in instruction
    assert set(parse_entry_refs(summary.text)) == set(summary.entry_ids)
    last = summary.scene_ids[-1].rpartition("#")[2]
    assert summary.text.endswith(f"Posts >>1–>>{last}.")  # scene 1#n holds post n


class Scripted(Summarizer):
    """Fails the first summary request, answers the others."""

    def __call__(self, messages: list[dict[str, Any]]) -> str:
        if not self.calls:
            self.calls.append(messages)
            return "   "
        return super().__call__(messages)


def test_a_placeholder_summary_is_kept_as_it_is_never_rewritten_by_the_model() -> None:
    summarizer, events = Scripted(), []
    cm = manager(budget=100_000, summarizer=summarizer, events=events)
    fill(cm, 1, range(1, 17))
    squeeze(cm, 1, 17, free=50)
    prepare(cm, 1, 17)
    first = cm.state.chunk_summary(1)
    assert first is not None and first.fallback  # extractive: a placeholder
    fill(cm, 1, range(17, 33))
    squeeze(cm, 1, 33, free=50)
    prepare(cm, 1, 33)
    second = cm.state.chunk_summary(1)
    assert second is not None and not second.fallback
    instruction = summarizer.instructions()[-1]
    assert PREVIOUS_SUMMARY_HEADING not in instruction  # not handed to the model to fold
    # kept by the code instead: its end, where the model's summary follows it within the cap
    # (its head gives way first: an entry list counts a token per digit)
    assert "- 1#5: Scene 5 begins." in first.text and "- 1#5: Scene 5 begins." in second.text


def test_no_story_fold_is_asked_over_a_placeholder_thread_summary() -> None:
    summarizer, events = Summarizer(mode="empty"), []
    cm = manager(
        budget=100_000,
        summarizer=summarizer,
        events=events,
        policy=CompactionPolicy(max_thread_summaries=2),
    )
    for thread_id in (1, 2, 3):
        fill(cm, thread_id, range(1, 6))
        cm.end_thread(thread_id)
    fill(cm, 4, range(1, 3))
    squeeze(cm, 4, 3, free=50)
    prepare(cm, 4, 3)
    assert [e.tier for e in events][-1] == "fold_story" and events[-1].fallback
    assert not any(text.startswith(FOLD_STORY_HEADING) for text in summarizer.instructions())
    assert cm.state.story_thread_ids == [1, 2, 3]


@pytest.mark.parametrize("mode", ["empty", "error", "raise"])
def test_unusable_summary_falls_back_to_an_extractive_one_and_still_frees(mode: str) -> None:
    events: list[CompactionEvent] = []
    cm = manager(budget=100_000, summarizer=Summarizer(mode=mode), events=events)
    fill(cm, 1, range(1, 17))
    squeeze(cm, 1, 17, free=50)
    _, text, _ = prepare(cm, 1, 17)
    assert events[0].tier == "summarize_chunk" and events[0].fallback
    summary = cm.state.chunk_summary(1)
    assert summary is not None and summary.fallback
    assert "Scene 1 begins." in summary.text  # the first story line of each scene
    assert set(parse_entry_refs(summary.text)) == set(summary.entry_ids)
    assert true_count(cm.build(text)) <= cm.limit


def test_a_summary_the_server_fails_stops_the_compaction_not_falls_back() -> None:
    """Going on with an extractive summary would write another context than an uninterrupted
    run (whose server answered): the failure stops the run, which resumes exactly."""
    cm = manager(budget=100_000, summarizer=Summarizer(mode="server_gone"))
    fill(cm, 1, range(1, 17))
    squeeze(cm, 1, 17, free=50)
    before = cm.state.model_copy(deep=True)
    with pytest.raises(AgentError, match="server gone"):
        prepare(cm, 1, 17)
    assert cm.state.summaries == before.summaries


def test_a_flush_the_server_fails_stops_the_compaction() -> None:
    cm = manager(budget=100_000, flusher=Flusher(fail=True))
    fill(cm, 1, range(1, 12))
    cm.end_thread(1)
    fill(cm, 2, range(1, 12))
    squeeze(cm, 2, 12, free=50)
    with pytest.raises(AgentError):
        prepare(cm, 2, 12)


# -- the flush -------------------------------------------------------------------------------------


def test_flush_runs_once_before_turns_are_dropped_and_is_not_kept() -> None:
    flusher, events = Flusher(), []
    cm = manager(budget=100_000, flusher=flusher, events=events)
    fill(cm, 1, range(1, 12))
    cm.end_thread(1)
    fill(cm, 2, range(1, 12))
    full_before = cm.build()
    squeeze(cm, 2, 12, free=50)
    prepare(cm, 2, 12)
    assert len({e.tier for e in events}) >= 2  # several passes, one flush
    assert len(flusher.calls) == 1
    request = flusher.calls[0]
    assert request[-1]["content"].startswith(FLUSH_HEADING + "\n")
    assert request[:-1] == full_before
    assert not any(FLUSH_HEADING in str(m.get("content")) for m in cm.state.history)


def test_no_flush_when_no_turns_are_dropped() -> None:
    flusher = Flusher()
    cm = manager(budget=100_000, flusher=flusher, policy=lossy_policy())
    fill(cm, 1, range(1, 5), think=prose(9, 150))
    squeeze(cm, 1, 5, free=50)
    prepare(cm, 1, 5)
    assert flusher.calls == []


# -- the current scene and the overflow path -------------------------------------------------------


def big_rounds(thread_id: int, number: int, rounds: int, chars: int) -> list[dict[str, Any]]:
    _, base = scene_turns(thread_id, number)
    messages = [base[0]]
    for index in range(rounds):
        call_id = f"r{index}"
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "read_post", "arguments": f'{{"post_id":{index}}}'},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call_id, "content": prose(index, chars)})
    return messages


def test_prepare_call_shrinks_the_oldest_tool_results_of_the_current_scene() -> None:
    events: list[CompactionEvent] = []
    cm = manager(budget=3000, events=events)
    scene = big_rounds(1, 1, rounds=4, chars=600)
    plan = cm.prepare_call(scene, thread_id=1)
    assert true_count(plan.messages) <= cm.limit
    assert plan.scene_messages[0] == scene[0]
    assert tool_pair_problems(plan.messages) == []
    assert [e.tier for e in plan.events] == ["shrink_current"] == [e.tier for e in events]
    assert plan.scene_messages[-1]["content"] == scene[-1]["content"]  # the newest kept whole


def test_prepare_call_drops_old_rounds_when_stubs_are_not_enough() -> None:
    cm = manager(budget=1800)
    scene = big_rounds(1, 1, rounds=40, chars=60)
    plan = cm.prepare_call(scene, thread_id=1)
    assert true_count(plan.messages) <= cm.limit
    assert tool_pair_problems(plan.messages) == []
    assert len(plan.scene_messages) < len(scene) and plan.scene_messages[0] == scene[0]
    assert plan.scene_messages[-2:] == scene[-2:]


def test_a_scene_whose_rounds_outgrow_what_the_history_leaves_compacts_the_history() -> None:
    """A last round too large beside the history (tool calls with long arguments, which shrinking
    cannot cut) makes room by compacting the history, as an overflow would: not a BudgetError."""
    events: list[CompactionEvent] = []
    cm = manager(budget=5000, events=events)
    fill(cm, 1, range(1, 14))
    _, text = next_scene(1, 14)
    call = {
        "id": "big",
        "type": "function",
        "function": {
            "name": "glossary_create",
            "arguments": json.dumps({"term": "Gate", "definition": prose(3, 900)}),
        },
    }
    scene = [
        {"role": "user", "content": text},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "big", "content": '{"ok": true, "entry_id": 99}'},
    ]
    assert true_count(cm.build(scene)) > cm.limit  # the history leaves too little for it
    plan = cm.prepare_call(scene, thread_id=1)
    assert true_count(plan.messages) <= cm.limit
    assert plan.scene_messages == [canonical_message(m) for m in scene]  # the scene kept whole
    assert any(e.tier != "shrink_current" for e in plan.events)
    assert tool_pair_problems(plan.messages) == []


def test_prepare_call_with_a_scene_message_over_budget_is_a_budget_error() -> None:
    cm = manager(budget=1500)
    _, text = next_scene(1, 1, words=3000)
    with pytest.raises(BudgetError, match="current scene needs") as raised:
        cm.prepare_call([{"role": "user", "content": text}])
    # the numbers add up: the limit is the window minus max_tokens, as the message says
    wording = r"limit of (\d+) tokens \(a window of (\d+) minus max_tokens (\d+)\)"
    found = re.search(wording, str(raised.value))
    assert found is not None, raised.value
    limit, window, answer = map(int, found.groups())
    assert (limit, window, answer) == (cm.limit, 1500, 256) and limit == window - answer


def test_overflow_400_recalibrates_compacts_and_returns_messages_for_one_retry() -> None:
    events: list[CompactionEvent] = []
    sim = SimulatedVLLM(lambda body: {"content": "ok"}, max_model_len=4000)
    cm = manager(budget=4000, max_tokens=256, events=events)
    fill(cm, 1, range(1, 9))
    _, text = next_scene(1, 9)
    scene = [{"role": "user", "content": text}]
    sent = cm.build(scene)
    with httpx.Client(transport=sim, base_url="http://sim.invalid") as client:
        # the server counts more than we thought: simulate it with a too-large max_tokens
        body = {
            "messages": sent,
            "tools": cm.sizes.tools,
            "max_tokens": 4000 - true_count(sent) + 50,
        }
        refused = client.post("/v1/chat/completions", json=body)
        assert refused.status_code == 400
        message = refused.json()["error"]["message"]
        plan = cm.on_overflow(scene, AgentError(message), thread_id=1, scene_id="1#9")
        retry = client.post(
            "/v1/chat/completions",
            json={
                "messages": plan.messages,
                "tools": cm.sizes.tools,
                "max_tokens": cm.sizes.max_tokens,
            },
        )
    assert retry.status_code == 200
    assert plan.events and all(e.reason == "overflow" for e in plan.events)
    assert events[0].tier == "summarize_chunk"
    assert plan.messages[-1] == scene[0]
    assert cm.sizes.counter.count_messages(sent, cm.sizes.tools) == true_count(
        sent
    )  # learnt the exact count


def test_overflow_from_a_smaller_server_window_lowers_the_budget() -> None:
    cm = manager(budget=8000, max_tokens=256)
    fill(cm, 1, range(1, 12))
    _, text = next_scene(1, 12)
    scene = [{"role": "user", "content": text}]
    prompt = true_count(cm.build(scene))
    message = (
        "This model's maximum context length is 3000 tokens. However, you requested "
        f"{prompt + 256} tokens ({prompt} in the messages, 256 in the completion)."
    )
    plan = cm.on_overflow(scene, message, thread_id=1, scene_id="1#12")
    assert cm.budget == 3000
    assert true_count(plan.messages) + 256 <= 3000


# -- checks and bookkeeping ------------------------------------------------------------------------


def test_check_refuses_over_budget_and_orphaned_tool_calls() -> None:
    cm = manager(budget=2000)
    _, messages = scene_turns(1, 1)
    assert cm.sizes.check(cm.build(messages)) >= true_count(cm.build(messages))
    with pytest.raises(ValueError, match="no result"):
        cm.sizes.check(cm.build(messages[:2]))
    with pytest.raises(ValueError, match="answers no open call"):
        cm.sizes.check(cm.build([messages[0], messages[2]]))
    _, huge = next_scene(1, 2, words=3000)
    with pytest.raises(BudgetError, match="exceeds the context budget of 2000"):
        cm.sizes.check(cm.build(huge))
    assert not cm.sizes.fits(cm.build(huge))


def test_end_scene_removes_calls_that_were_never_answered() -> None:
    cm = manager(budget=5000)
    _, messages = scene_turns(1, 1)
    unanswered = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "late", "type": "function", "function": {"name": "x", "arguments": "{}"}}
        ],
    }
    cm.end_scene(
        "1#1", 1, [*messages, unanswered, {"role": "tool", "tool_call_id": "zz", "content": "?"}]
    )
    assert cm.state.history == messages
    assert cm.state.scenes[0].entry_ids == [1001]  # read from the create call's result
    assert cm.state.cursor.scene_id == "1#1" and cm.state.cursor.thread_id == 1


def test_calibration_is_saved_in_the_state_and_restored() -> None:
    cm = manager(budget=5000)
    _, messages = scene_turns(1, 1)
    cm.sizes.observe(cm.build(messages), 999)
    cm.end_scene("1#1", 1, messages)
    restored = manager(budget=5000, state=ContextState.from_json(cm.state.to_json()))
    assert restored.sizes.counter.calibration() == cm.sizes.counter.calibration()
    assert restored.sizes.counter.calibration()["observations"] == 1


def test_what_the_counter_learned_after_the_last_scene_is_in_the_state_too() -> None:
    """A request after the last scene (a curation, a thread-end summary) teaches the counter; the
    state saved then carries it, exact counts included, so a run resumed from it counts the next
    prompt as an uninterrupted one does."""
    cm = manager(budget=5000)
    _, messages = scene_turns(1, 1)
    cm.end_scene("1#1", 1, messages)
    curation = [*cm.build(), {"role": "user", "content": "# Task: curate\nE1 ..."}]
    cm.sizes.observe(curation, 777)
    restored = manager(budget=5000, state=ContextState.from_json(cm.state.to_json()))
    assert restored.sizes.counter.calibration() == cm.sizes.counter.calibration()
    assert restored.sizes.counter.calibration()["observations"] == 1
    follow_up = [*curation, {"role": "assistant", "content": "E1: CONFIRM"}]
    assert restored.sizes.count(follow_up) == cm.sizes.count(follow_up)
    assert restored.sizes.counter.count_messages(curation, TOOLS) == 777  # the exact count, kept


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            "This model's maximum context length is 4096 tokens. However, you requested 4200 "
            "tokens (3900 in the messages, 300 in the completion). Please reduce the length.",
            (4096, 3900),
        ),
        (
            "This model's maximum context length is 4096 tokens. However, your request has 5000 "
            "input tokens. Please reduce the length of the input messages.",
            (4096, 5000),
        ),
        (
            "This model's maximum context length is 4096 tokens. However, you requested 300 "
            "output tokens and your prompt contains at least 3901 input tokens, for a total of "
            "at least 4201 tokens.",
            (4096, 3901),
        ),
        (
            "You passed 3990 input tokens and requested 300 output tokens. However, the model's "
            "context length is only 4096 tokens, resulting in a maximum input length of 3796.",
            (4096, 3990),
        ),
        ("upstream failure", (None, None)),
    ],
)
def test_parse_overflow_reads_vllms_wordings(
    message: str, expected: tuple[int | None, int | None]
) -> None:
    assert parse_overflow(message) == expected


# -- thread boundaries and other requests ----------------------------------------------------------


def test_first_scene_of_a_thread_folds_the_finished_thread_before_it_piles_up() -> None:
    summarizer, flusher, events = Summarizer(), Flusher(), []
    policy = CompactionPolicy(min_free_tokens=1000)
    cm = manager(
        budget=100_000, summarizer=summarizer, flusher=flusher, events=events, policy=policy
    )
    fill(cm, 1, range(1, 15))  # well over min_free_tokens
    cm.end_thread(1)
    full_before = cm.build()
    _, text, _ = prepare(cm, 2, 1)  # fits easily: the fold is about cost, not room
    assert [(e.tier, e.reason) for e in events] == [("fold_thread", "thread_start")]
    assert cm.state.history == [] and cm.state.thread_summary(1) is not None
    assert len(flusher.calls) == 1
    assert summarizer.calls[0][:-1] == full_before  # the whole cached prefix, instruction last
    assert cm.build(text)[-1] == {"role": "user", "content": text}


def test_first_scene_of_a_thread_keeps_a_small_finished_thread() -> None:
    summarizer = Summarizer()
    cm = manager(
        budget=100_000, summarizer=summarizer, policy=CompactionPolicy(min_free_tokens=1000)
    )
    fill(cm, 1, range(1, 3))  # under min_free_tokens
    cm.end_thread(1)
    _, _, events = prepare(cm, 2, 1)
    assert events == [] and summarizer.calls == []
    assert history_scene_ids(cm) == ["1#1", "1#2"]


def test_make_room_leaves_the_asked_tokens_free_after_the_prefix() -> None:
    events: list[CompactionEvent] = []
    cm = manager(budget=100_000, events=events)
    fill(cm, 1, range(1, 21))
    cm.budget = true_count(cm.build()) + cm.sizes.max_tokens + 500
    assert cm.make_room(400, thread_id=1) == []
    cm.make_room(2000, thread_id=1)
    assert events and events[0].tier == "summarize_chunk"
    assert true_count(cm.build()) + 2000 <= cm.limit


def test_make_room_that_cannot_be_made_is_a_budget_error_that_changes_nothing() -> None:
    cm = manager(budget=100_000)
    fill(cm, 1, range(1, 6))
    cm.budget = true_count(cm.build()) + cm.sizes.max_tokens
    before = context_only(cm)
    with pytest.raises(BudgetError, match="and 99000 more for its own messages"):
        cm.make_room(99_000, thread_id=1)
    assert context_only(cm) == before


class ServerOverflow(ContextOverflowError):
    """An overflow error as a client reports it: the numbers parsed already."""

    def __init__(self, prompt_tokens: int, max_context_length: int) -> None:
        super().__init__("context overflow (HTTP 400)")
        self.prompt_tokens = prompt_tokens
        self.max_context_length = max_context_length


def test_overflow_uses_the_numbers_the_client_parsed() -> None:
    cm = manager(budget=8000, max_tokens=256)
    fill(cm, 1, range(1, 12))
    _, text = next_scene(1, 12)
    scene = [{"role": "user", "content": text}]
    sent = cm.build(scene)
    plan = cm.on_overflow(
        scene, ServerOverflow(true_count(sent), 5000), thread_id=1, scene_id="1#12"
    )
    assert cm.budget == 5000
    assert true_count(plan.messages) + 256 <= 5000
    assert cm.sizes.counter.count_messages(sent, cm.sizes.tools) == true_count(sent)


def folding_manager(
    summarizer: Summarizer, flusher: Flusher, *, defer_fold: bool
) -> ContextManager:
    """A manager of a 20,000-token window whose thread folds the tests below watch."""
    return ContextManager(
        ContextState(),
        system_prompt=SYSTEM_PROMPT,
        tools=TOOLS,
        budget=20_000,
        max_tokens=256,
        counter=ServerCounter(lambda messages, tools: SIM.count(messages, tools)),
        summarizer=summarizer,
        flusher=flusher,
        defer_fold=defer_fold,
    )


def test_a_deferred_fold_folds_every_finished_thread_but_the_kept_one_and_is_known_ahead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With `defer_fold` (a run drafting blocks), a thread's first request folds every finished
    thread but the one that just finished (kept), whatever the size of the scene it makes room
    for: what the fold asks is decided by the history alone, so `fold_requests` works it out
    ahead (each summary answered as it will be), down to the kept thread's flush."""
    summarizer, flusher = Summarizer(), Flusher()

    def make() -> ContextManager:
        return folding_manager(summarizer, flusher, defer_fold=True)

    cm = make()
    # no fold yet (this manager never made room for a scene); threads 1 and 2 fill the mark of
    # a fold a block late, and thread 3, kept, fills the mark of the fold after alone, so it is
    # flushed now (the mark pinned at twice `min_free`: at the default, half the window, three
    # threads that each fill it do not fit the window)
    monkeypatch.setattr(compaction_manager, "DEFERRED_FOLD_MARK", 2)
    for thread, scenes in ((1, 11), (2, 11), (3, 23)):
        fill(cm, thread, range(1, scenes + 1))
        cm.end_thread(thread, entry_ids=[])
    known: dict[str, str] = {}  # no summary is back yet
    assert [purpose for purpose, _ in cm.fold_requests(4)] == ["summary", "flush"]

    def replied(purpose: str, messages: list[dict[str, Any]]) -> str | None:
        return known.get(json.dumps(messages)) if purpose == "summary" else None

    ahead = cm.fold_requests(4, replied=replied)
    first_summary = ahead[0][1]
    known[json.dumps(first_summary)] = Summarizer()(first_summary)
    ahead = cm.fold_requests(4, replied=replied)
    second_summary = ahead[-1][1]
    known[json.dumps(second_summary)] = Summarizer()(second_summary)
    ahead = cm.fold_requests(4, replied=replied)

    _, text = next_scene(4, 1, words=5)  # a small scene: no budget needs the second fold
    events = cm.prepare(text, thread_id=4, scene_id="4#1")
    assert [event.tier for event in events] == ["fold_thread", "fold_thread"]
    assert {span.thread_id for span in cm.state.scenes} == {3}, "thread 3 is kept"
    assert summarizer.calls[-2:] == [first_summary, second_summary]
    asked = [("summary", call) for call in summarizer.calls[-2:]]
    asked.insert(1, ("flush", flusher.calls[0]))  # the fold's flush, before its first summary
    asked.append(("flush", flusher.calls[-1]))  # then the kept thread's
    # and the summary the fold after it will ask of thread 3, asked for ahead of that fold
    assert [purpose for purpose, _ in ahead] == ["summary", "flush", "summary", "summary", "flush"]
    kept_summary = ahead.pop(3)[1]
    assert sorted(map(json.dumps, ahead)) == sorted(map(json.dumps, asked))
    assert kept_summary[-2]["content"] == "Done."  # it ends with thread 3's last scene
    assert "thread 3 " in kept_summary[-1]["content"]


@pytest.mark.parametrize(
    ("defer_fold", "scenes", "folds"),
    [
        (False, 11, True),  # one request at a time: at `min_free` (here 2,468 tokens)
        (True, 11, False),  # a block late: the two threads before the kept one fill 7,494
        (True, 15, True),  # they fill 10,230: half the window (`DEFERRED_FOLD_MARK` = 4)
    ],
)
def test_a_fold_a_block_late_waits_until_the_finished_threads_fill_half_the_window(
    defer_fold: bool, scenes: int, folds: bool
) -> None:
    """Each fold rewrites the story block, so what follows it is prefilled again: a serial run
    folds at a thread's first scene, with nothing behind the story block; a run drafting blocks
    keeps the thread that just finished behind it, so it folds only once the threads before
    that one fill half the window (and each fold then saves twice as many of them)."""
    cm = folding_manager(Summarizer(), Flusher(), defer_fold=defer_fold)
    for thread, count in ((1, scenes), (2, scenes), (3, 5)):
        fill(cm, thread, range(1, count + 1))
        cm.end_thread(thread, entry_ids=[])
    _, text = next_scene(4, 1, words=5)
    events = cm.prepare(text, thread_id=4, scene_id="4#1")
    assert all(event.reason == "thread_start" for event in events)
    folded = {1, 2, 3} - set(cm.state.history_threads())
    if not folds:
        assert events == [] and folded == set()
    elif defer_fold:
        assert folded == {1, 2}, "the thread that just finished is kept"
    else:  # enough is freed by the oldest
        assert folded == {1}
