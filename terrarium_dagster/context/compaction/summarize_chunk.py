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
    SummaryRequest,
    ask_summary,
    covered_posts,
    extractive,
    origin_prefix,
    words,
)
from terrarium_dagster.context.compaction.text import clip_text
from terrarium_dagster.context.state import SceneSpan, Summary


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
        flushed = flush_before_drop(job, scene_ids)
        new_ids = {i for s in chosen for i in s.entry_ids}
        entry_ids = sorted(new_ids | set(previous.entry_ids if previous else []))
        # a previous summary that is a placeholder (extractive) is kept as it is, never handed
        # to the model to rewrite (it would invent what the placeholder leaves out)
        placeholder = previous.text if previous and previous.fallback else ""
        instruction = prompts.summarize_chunk_message(
            thread_id=job.thread_id,
            scene_ids=scene_ids,
            entry_ids=new_ids,
            max_words=words(caps.chunk_summary),
            previous_summary=previous.text if previous and not placeholder else None,
        )
        first_scene = previous.scene_ids[0] if previous and previous.scene_ids else scene_ids[0]
        text = ask_summary(
            job,
            SummaryRequest(
                origin_prefix(job, chosen[-1].scene_id),
                instruction,
                cap_tokens=caps.chunk_summary,
                entry_ids=entry_ids,
                sources=covered_posts(first_scene, chosen, state.scene_messages),
            ),
        )
        if text is not None and placeholder:
            text = clip_text(
                job.counter, f"{placeholder}\n{text}", caps.chunk_summary, keep_end=True
            )
        fallback = text is None
        if text is None:
            text = extractive(
                job.counter,
                title=f"Thread {job.thread_id}, scenes {scene_ids[0]} .. {scene_ids[-1]} "
                "(extractive summary):",
                spans=chosen,
                messages_of=state.scene_messages,
                previous=previous.text if previous else "",
                entry_ids=entry_ids,
                cap_tokens=caps.chunk_summary,
            )
        summary = Summary(
            kind="chunk",
            thread_id=job.thread_id,
            scene_ids=[*(previous.scene_ids if previous else []), *scene_ids],
            entry_ids=entry_ids,
            text=text,
            tokens_before=material + (previous.tokens_after if previous else 0),
            tokens_after=job.counter.estimate_text(text),
            fallback=fallback,
        )
        state.remove_scenes(scene_ids)
        state.set_summary(summary)
        return CompactionEvent(
            tier="summarize_chunk",
            entry_ids=entry_ids,
            scene_ids=scene_ids,
            summary=text,
            fallback=fallback,
            flushed=flushed,
        )
