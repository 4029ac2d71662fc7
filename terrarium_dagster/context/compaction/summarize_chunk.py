"""Tier 1: the oldest scenes of the current (long) thread into the thread's running summary.

A chunk is `chunk_scenes` scenes, more when the budget needs more, down to half a chunk when the
thread has no more old scenes (or fewer when they are large); less than that hands over to the
next tier.
"""

from __future__ import annotations

import math

from terrarium_dagster.context import prompts
from terrarium_dagster.context.compaction.events import CompactionEvent
from terrarium_dagster.context.compaction.flush import flush_before_drop
from terrarium_dagster.context.compaction.step import Compaction, CompactionStep
from terrarium_dagster.context.compaction.summaries import (
    ask_ahead_of_flush,
    ask_summary,
    placeholder_of,
    scenes_summary,
    summary_event,
    summary_of_scenes,
    words,
)
from terrarium_dagster.context.state import SceneSpan


class SummarizeChunk(CompactionStep):
    """The oldest scenes of the current (long) thread into the thread's running summary."""

    name = "summarize_chunk"
    summarizes = True

    def run(self, job: Compaction, goal: int) -> CompactionEvent | None:
        if job.thread_id is None:
            return None
        state, caps, policy = job.state, job.caps, job.policy
        spans = [s for s in state.scenes if s.thread_id == job.thread_id]
        eligible = spans[: max(0, len(spans) - policy.keep_recent_scenes)]
        if not eligible:
            return None
        previous = state.chunk_summary(job.thread_id)
        growth = caps.chunk_summary - (previous.tokens_after if previous else 0)
        chosen: list[SceneSpan] = []
        material = 0
        for span in eligible:
            chosen.append(span)
            material += job.estimate(state.scene_messages(span))
            if len(chosen) >= policy.chunk_scenes and material >= (goal + growth) * 1.1:
                break
        half = math.ceil(policy.chunk_scenes / 2)
        if len(chosen) < half and material < goal + growth:
            return None  # less than half a chunk that would not do the job: the next tier runs
        scene_ids = [s.scene_id for s in chosen]
        new_ids = {i for s in chosen for i in s.entry_ids}
        entry_ids = sorted(new_ids | set(previous.entry_ids if previous else []))
        placeholder = placeholder_of(previous)  # kept as it is, never rewritten by the model
        instruction = prompts.summarize_chunk_message(
            thread_id=job.thread_id,
            scene_ids=scene_ids,
            entry_ids=new_ids,
            max_words=words(caps.chunk_summary),
            previous_summary=previous.text if previous and not placeholder else None,
        )
        request = scenes_summary(
            job,
            instruction,
            spans=chosen,
            previous=previous,
            cap_tokens=caps.chunk_summary,
            entry_ids=entry_ids,
        )
        ask_ahead_of_flush(job, request)
        flushed = flush_before_drop(job, scene_ids)
        answer = ask_summary(job, request)
        summary = summary_of_scenes(
            job,
            answer,
            kind="chunk",
            thread_id=job.thread_id,
            spans=chosen,
            previous=previous,
            entry_ids=entry_ids,
            cap_tokens=caps.chunk_summary,
            title=f"Thread {job.thread_id}, scenes {scene_ids[0]} .. {scene_ids[-1]} "
            "(extractive summary):",
        )
        state.remove_scenes(scene_ids)
        state.set_summary(summary)
        return summary_event("summarize_chunk", summary, scene_ids, flushed=flushed)
