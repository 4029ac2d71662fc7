"""Tier 2: a finished thread still in the history into a thread summary (`fold_thread`);
finished threads' summaries into the story so far (`fold_story`)."""

from __future__ import annotations

from terrarium_dagster.context import prompts
from terrarium_dagster.context.compaction.events import CompactionEvent
from terrarium_dagster.context.compaction.flush import flush_before_drop
from terrarium_dagster.context.compaction.step import Compaction, CompactionStep
from terrarium_dagster.context.compaction.summaries import (
    SummaryRequest,
    ask_ahead_of_flush,
    ask_summary,
    origin_prefix,
    placeholder_of,
    scenes_summary,
    summary_event,
    summary_of_scenes,
    words,
)
from terrarium_dagster.context.compaction.text import clip_text
from terrarium_dagster.context.state import ContextState, Summary


class Fold(CompactionStep):
    """A finished thread still in the history into a thread summary; finished threads'
    summaries into the story so far."""

    name = "fold"
    summarizes = True

    def run(self, job: Compaction, goal: int) -> CompactionEvent | None:
        kept = (job.thread_id, job.keep_thread_id)
        finished = [t for t in job.state.history_threads() if t not in kept]
        if finished:
            return _fold_thread(job, finished[0])
        if job.keep_thread_id is not None:
            return None  # the fold that keeps a thread folds only those before it
        return _fold_story(job)

    def wanted(self, job: Compaction) -> bool:
        """More finished-thread summaries than the policy keeps are folded anyway (once a
        compaction is under way); so is every finished thread but the kept one at a thread's
        first request (`defer_fold`): what that fold asks is then decided by the history alone,
        never by the size of the scenes it makes room for, so it can be asked for ahead
        (`ContextManager.fold_requests`)."""
        finished = [s for s in job.state.summaries if s.thread_id != job.thread_id]
        if bool(job.events) and len(finished) > job.policy.max_thread_summaries:
            return True
        if job.reason != "thread_start" or job.keep_thread_id is None:
            return False
        kept = (job.thread_id, job.keep_thread_id)
        return any(t not in kept for t in job.state.history_threads())


def _fold_thread(job: Compaction, thread_id: int) -> CompactionEvent:
    state, caps = job.state, job.caps
    spans = [s for s in state.scenes if s.thread_id == thread_id]
    scene_ids = [s.scene_id for s in spans]
    previous = state.chunk_summary(thread_id) or state.thread_summary(thread_id)
    new_ids = {i for s in spans for i in s.entry_ids} | set(
        state.thread_entry_ids.get(thread_id, [])
    )
    entry_ids = sorted(new_ids | set(previous.entry_ids if previous else []))
    placeholder = placeholder_of(previous)  # kept as it is, never rewritten by the model
    instruction = prompts.summarize_thread_message(
        thread_id=thread_id,
        scene_ids=scene_ids,
        entry_ids=new_ids,
        max_words=words(caps.thread_summary),
        previous_summary=previous.text if previous and not placeholder else None,
    )
    request = (
        scenes_summary(
            job,
            instruction,
            spans=spans,
            previous=previous,
            cap_tokens=caps.thread_summary,
            entry_ids=entry_ids,
        )
        if scene_ids or not placeholder
        else None
    )
    flushed_before = state.flushed_thread_id == thread_id  # kept a request: flushed then
    if request is not None and not flushed_before:
        ask_ahead_of_flush(job, request)
    flushed = flushed_before or flush_before_drop(job, scene_ids)
    answer = ask_summary(job, request) if request is not None else None
    summary = summary_of_scenes(
        job,
        answer,
        kind="thread",
        thread_id=thread_id,
        spans=spans,
        previous=previous,
        entry_ids=entry_ids,
        cap_tokens=caps.thread_summary,
        title=f"Thread {thread_id} (extractive summary):",
    )
    state.remove_scenes(scene_ids)
    if flushed_before:
        state.flushed_thread_id = None
    _put_thread_summary(state, summary)
    state.thread_entry_ids.pop(thread_id, None)
    return summary_event("fold_thread", summary, scene_ids, flushed=flushed)


def story_folding(job: Compaction) -> list[Summary]:
    """The summaries a fold of the story takes: every finished thread's, or with
    `story_from_origin` only those the compaction found (not the ones its own passes just
    wrote), so the fold's request is decided by the context as it stood before the compaction
    and can be asked for ahead of it (`ContextManager.story_fold_ahead`)."""
    folding = [s for s in job.state.summaries if s.thread_id != job.thread_id]
    if not job.story_from_origin:
        return folding
    found = {(s.thread_id, s.kind, s.text) for s in job.origin.summaries}
    return [s for s in folding if (s.thread_id, s.kind, s.text) in found]


def story_request(job: Compaction, folding: list[Summary]) -> SummaryRequest | None:
    """The request for the story so far with `folding` folded in; None when one of them is a
    placeholder: a thread summarized extractively (the model's summary was unusable or did not
    fit) is folded by the code, which invents nothing."""
    if any(s.fallback for s in folding):
        return None
    instruction = prompts.fold_story_message(
        thread_summaries=[(s.thread_id, s.text, s.entry_ids) for s in folding],
        max_words=words(job.caps.story),
        previous_summary=job.state.story_so_far or None,
    )
    return SummaryRequest(origin_prefix(job, None), instruction, cap_tokens=job.caps.story)


def _fold_story(job: Compaction) -> CompactionEvent | None:
    state, caps = job.state, job.caps
    folding = story_folding(job)
    if not folding:
        return None
    entry_ids = sorted({i for s in folding for i in s.entry_ids})
    request = story_request(job, folding)
    text = None if request is None else ask_summary(job, request)
    fallback = text is None
    if text is None:
        added = "\n".join(
            f"Thread {s.thread_id}: {_first_sentence(s.text)} "
            f"Entries: {prompts.entry_refs(s.entry_ids)}"
            for s in folding
        )
        combined = f"{state.story_so_far.strip()}\n{added}".strip()
        text = clip_text(job.counter, combined, caps.story, keep_end=True)
    before = job.counter.estimate_text(state.story_so_far) + sum(s.tokens_after for s in folding)
    state.story_so_far = text
    state.story_entry_ids = sorted(set(state.story_entry_ids) | set(entry_ids))
    state.story_thread_ids.extend(
        s.thread_id for s in folding if s.thread_id not in state.story_thread_ids
    )
    folded = {s.thread_id for s in folding}
    state.summaries = [s for s in state.summaries if s.thread_id not in folded]
    return CompactionEvent(
        tier="fold_story",
        entry_ids=entry_ids,
        scene_ids=[scene for s in folding for scene in s.scene_ids],
        summary=text,
        fallback=fallback,
        detail=f"folded threads {sorted(folded)} ({before} summary tokens)",
    )


def _put_thread_summary(state: ContextState, summary: Summary) -> None:
    """In place of the thread's chunk summary, else before the first chunk summary."""
    summaries = state.summaries
    position = next(
        (i for i, s in enumerate(summaries) if s.thread_id == summary.thread_id),
        next((i for i, s in enumerate(summaries) if s.kind == "chunk"), len(summaries)),
    )
    state.summaries = [
        *[s for s in summaries[:position] if s.thread_id != summary.thread_id],
        summary,
        *[s for s in summaries[position:] if s.thread_id != summary.thread_id],
    ]


def _first_sentence(text: str) -> str:
    line = text.strip().split("\n", 1)[0]
    end = line.find(". ")
    return (line[: end + 1] if 0 < end < 240 else line[:240]).strip()
