"""Compaction steps: small strategies behind one interface, composed in order.

A `CompactionStep` frees tokens from a context (`cm.state`) in one pass and says what it did (a
`CompactionEvent`), or returns None when it has nothing left to do, so the driver
(`ContextManager.compact`) moves on to the next step. Each pass makes structural progress (a
scene leaves the history, a summary is folded, a block is trimmed, a message is truncated), so a
compaction always ends. Steps that *summarize* aim low (the policy's low-water mark) so that
compactions are rare; the others lose information and aim only at the limit.

The run's steps, in order (`RUN_STEPS`): `SummarizeChunk`, `Fold`, `TrimThinking`, `Truncate`,
`CutMiddle`. Summon (`agent/summon.py`) composes its own order over a snapshot's copy from
steps of the same interface, sharing `TrimThinking`, `Truncate` and `CutMiddle`.
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import BaseModel, Field

from terrarium_dagster.context import prompts
from terrarium_dagster.context.state import ContextState, Message, SceneSpan, Summary

if TYPE_CHECKING:
    from terrarium_dagster.context.compaction import ContextManager

Tier = Literal[
    "summarize_chunk",
    "fold_thread",
    "fold_story",
    "trim_thinking",
    "truncate",
    "cut_middle",
    "shrink_current",
    "drop_scenes",
    "drop_summaries",
    "cut_story",
    "drop_exchange",
]


TRUNCATION_MARKER = "[… truncated {count} characters …]"
_TRUNCATED = re.compile(r"\[… truncated \d+ characters …\]")
_THINK_BLOCK = re.compile(r"<(think|thinking)>.*?</\1>\s*", re.DOTALL)
_THINK_OPENLESS = re.compile(r"^.*?</(?:think|thinking)>\s*", re.DOTALL)


class CompactionEvent(BaseModel):
    """One compaction pass, as recorded in the store (`log_compaction`)."""

    tier: Tier
    reason: Literal["budget", "overflow", "thread_start"] = "budget"
    thread_id: int | None = None  # the thread of the scene being prepared
    scene_id: str | None = None  # the scene being prepared
    # prompt tokens of the next request before and after the pass (the server's count when
    # /tokenize answers, else the calibrated estimate); the driver sets them
    tokens_before: int = 0
    tokens_after: int = 0
    entry_ids: list[int] = Field(default_factory=list)
    scene_ids: list[str] = Field(default_factory=list)  # scenes the pass summarized/cut/touched
    summary: str = ""  # the summary text written, if any
    fallback: bool = False  # the summary is the extractive fallback (model answer unusable)
    flushed: bool = False  # the pre-compaction flush ran right before this pass
    detail: str = ""
    items: int = 0  # how many things the pass removed or cut (messages, summaries, characters)


@dataclass
class Caps:
    limit: int
    target: int
    min_free: int
    chunk_summary: int
    thread_summary: int
    story: int
    truncate: int
    truncate_keep: int


@dataclass
class Compaction:
    """One compaction in progress."""

    origin: ContextState
    scene_messages: list[Message]
    reserve: int
    thread_id: int | None
    scene_id: str | None
    reason: Literal["budget", "overflow", "thread_start"]
    flushed: bool = False
    events: list[CompactionEvent] = field(default_factory=list)


class CompactionStep(ABC):
    """One way to make a context smaller. `summarizes`: the step writes summaries (a model
    call) and aims at the low-water mark; otherwise it aims at the limit."""

    name: ClassVar[str]
    summarizes: ClassVar[bool] = False

    @abstractmethod
    def run(
        self, cm: ContextManager, job: Compaction, goal: int, caps: Caps
    ) -> CompactionEvent | None:
        """Free about `goal` tokens from `cm.state`; None when this step can do nothing more."""

    def wanted(self, cm: ContextManager, job: Compaction) -> bool:
        """Whether the step should run although the prompt already fits (default: no)."""
        return False


class SummarizeChunk(CompactionStep):
    """The oldest scenes of the current (long) thread into the thread's running summary."""

    name = "summarize_chunk"
    summarizes = True

    def run(
        self, cm: ContextManager, job: Compaction, goal: int, caps: Caps
    ) -> CompactionEvent | None:
        if job.thread_id is None:
            return None
        spans = [s for s in cm.state.scenes if s.thread_id == job.thread_id]
        eligible = spans[: max(0, len(spans) - cm.policy.keep_recent_scenes)]
        if not eligible:
            return None
        previous = cm.state.chunk_summary(job.thread_id)
        growth = caps.chunk_summary - (previous.tokens_after if previous else 0)
        chosen: list[SceneSpan] = []
        material = 0
        for span in eligible:
            chosen.append(span)
            material += cm.estimate(cm.state.scene_messages(span))
            if len(chosen) >= cm.policy.chunk_scenes and material >= (goal + growth) * 1.1:
                break
        half = math.ceil(cm.policy.chunk_scenes / 2)
        if len(chosen) < half and material < goal + growth:
            return None  # less than half a chunk that would not do the job: the next tier runs
        flushed = cm.flush_before_drop(job, [s.scene_id for s in chosen])
        scene_ids = [s.scene_id for s in chosen]
        new_ids = {i for s in chosen for i in s.entry_ids}
        entry_ids = sorted(new_ids | set(previous.entry_ids if previous else []))
        instruction = prompts.summarize_chunk_message(
            thread_id=job.thread_id,
            scene_ids=scene_ids,
            entry_ids=new_ids,
            max_words=_words(caps.chunk_summary),
            previous_summary=previous.text if previous else None,
        )
        text = cm.summarize(
            cm.origin_prefix(job, chosen[-1].scene_id),
            instruction,
            cap_tokens=caps.chunk_summary,
            entry_ids=entry_ids,
            require_ids=True,
        )
        fallback = text is None
        if text is None:
            text = cm.extractive(
                title=f"Thread {job.thread_id}, scenes {scene_ids[0]} .. {scene_ids[-1]} "
                "(extractive summary):",
                spans=chosen,
                messages_of=cm.state.scene_messages,
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
            tokens_after=cm.counter.estimate_text(text),
            fallback=fallback,
        )
        cm.state.remove_scenes(scene_ids)
        cm.state.set_summary(summary)
        return CompactionEvent(
            tier="summarize_chunk",
            entry_ids=entry_ids,
            scene_ids=scene_ids,
            summary=text,
            fallback=fallback,
            flushed=flushed,
        )


class Fold(CompactionStep):
    """A finished thread still in the history into a thread summary; finished threads'
    summaries into the story so far."""

    name = "fold"
    summarizes = True

    def run(
        self, cm: ContextManager, job: Compaction, goal: int, caps: Caps
    ) -> CompactionEvent | None:
        finished = [t for t in cm.state.history_threads() if t != job.thread_id]
        if finished:
            return self._fold_thread(cm, job, finished[0], caps)
        return self._fold_story(cm, job, caps)

    def wanted(self, cm: ContextManager, job: Compaction) -> bool:
        """More finished-thread summaries than the policy keeps are folded anyway (once a
        compaction is under way)."""
        finished = [s for s in cm.state.summaries if s.thread_id != job.thread_id]
        return bool(job.events) and len(finished) > cm.policy.max_thread_summaries

    def _fold_thread(
        self, cm: ContextManager, job: Compaction, thread_id: int, caps: Caps
    ) -> CompactionEvent:
        spans = [s for s in cm.state.scenes if s.thread_id == thread_id]
        scene_ids = [s.scene_id for s in spans]
        flushed = cm.flush_before_drop(job, scene_ids)
        previous = cm.state.chunk_summary(thread_id) or cm.state.thread_summary(thread_id)
        new_ids = {i for s in spans for i in s.entry_ids} | set(
            cm.state.thread_entry_ids.get(thread_id, [])
        )
        entry_ids = sorted(new_ids | set(previous.entry_ids if previous else []))
        instruction = prompts.summarize_thread_message(
            thread_id=thread_id,
            scene_ids=scene_ids,
            entry_ids=new_ids,
            max_words=_words(caps.thread_summary),
            previous_summary=previous.text if previous else None,
        )
        text = cm.summarize(
            cm.origin_prefix(job, scene_ids[-1]),
            instruction,
            cap_tokens=caps.thread_summary,
            entry_ids=entry_ids,
            require_ids=True,
        )
        fallback = text is None
        if text is None:
            text = cm.extractive(
                title=f"Thread {thread_id} (extractive summary):",
                spans=spans,
                messages_of=cm.state.scene_messages,
                previous=previous.text if previous else "",
                entry_ids=entry_ids,
                cap_tokens=caps.thread_summary,
            )
        material = sum(cm.estimate(cm.state.scene_messages(s)) for s in spans)
        summary = Summary(
            kind="thread",
            thread_id=thread_id,
            scene_ids=[*(previous.scene_ids if previous else []), *scene_ids],
            entry_ids=entry_ids,
            text=text,
            tokens_before=material + (previous.tokens_after if previous else 0),
            tokens_after=cm.counter.estimate_text(text),
            fallback=fallback,
        )
        cm.state.remove_scenes(scene_ids)
        cm.put_thread_summary(summary)
        cm.state.thread_entry_ids.pop(thread_id, None)
        return CompactionEvent(
            tier="fold_thread",
            entry_ids=entry_ids,
            scene_ids=scene_ids,
            summary=text,
            fallback=fallback,
            flushed=flushed,
        )

    def _fold_story(
        self, cm: ContextManager, job: Compaction, caps: Caps
    ) -> CompactionEvent | None:
        folding = [s for s in cm.state.summaries if s.thread_id != job.thread_id]
        if not folding:
            return None
        entry_ids = sorted({i for s in folding for i in s.entry_ids})
        instruction = prompts.fold_story_message(
            thread_summaries=[(s.thread_id, s.text, s.entry_ids) for s in folding],
            max_words=_words(caps.story),
            previous_summary=cm.state.story_so_far or None,
        )
        text = cm.summarize(
            cm.origin_prefix(job, None),
            instruction,
            cap_tokens=caps.story,
            entry_ids=entry_ids,
            require_ids=False,
        )
        fallback = text is None
        if text is None:
            added = "\n".join(
                f"Thread {s.thread_id}: {_first_sentence(s.text)} "
                f"Entries: {prompts.entry_refs(s.entry_ids)}"
                for s in folding
            )
            combined = f"{cm.state.story_so_far.strip()}\n{added}".strip()
            text = cm.clip_text(combined, caps.story, keep_end=True)
        before = cm.counter.estimate_text(cm.state.story_so_far) + sum(
            s.tokens_after for s in folding
        )
        cm.state.story_so_far = text
        cm.state.story_entry_ids = sorted(set(cm.state.story_entry_ids) | set(entry_ids))
        cm.state.story_thread_ids.extend(
            s.thread_id for s in folding if s.thread_id not in cm.state.story_thread_ids
        )
        folded = {s.thread_id for s in folding}
        cm.state.summaries = [s for s in cm.state.summaries if s.thread_id not in folded]
        return CompactionEvent(
            tier="fold_story",
            entry_ids=entry_ids,
            scene_ids=[scene for s in folding for scene in s.scene_ids],
            summary=text,
            fallback=fallback,
            detail=f"folded threads {sorted(folded)} ({before} summary tokens)",
        )


class TrimThinking(CompactionStep):
    """`<think>` blocks out of old assistant turns."""

    name = "trim_thinking"

    def run(
        self, cm: ContextManager, job: Compaction, goal: int, caps: Caps
    ) -> CompactionEvent | None:
        trimmed: list[str] = []
        for span in cm.state.scenes:
            for index in range(span.start, span.end):
                message = cm.state.history[index]
                content = message.get("content")
                if message.get("role") != "assistant" or not isinstance(content, str):
                    continue
                kept = strip_thinking(content)
                if kept != content:
                    cm.state.replace_message(index, {**message, "content": kept})
                    if span.scene_id not in trimmed:
                        trimmed.append(span.scene_id)
        if not trimmed:
            return None
        return CompactionEvent(
            tier="trim_thinking",
            scene_ids=trimmed,
            detail="thinking blocks removed from old assistant turns",
        )


class Truncate(CompactionStep):
    """Old long messages keep their head and tail around a marker."""

    name = "truncate"

    def run(
        self, cm: ContextManager, job: Compaction, goal: int, caps: Caps
    ) -> CompactionEvent | None:
        freed = 0
        touched: list[str] = []
        count = 0
        for span in cm.state.scenes:
            for index in range(span.start, span.end):
                message = cm.state.history[index]
                content = message.get("content")
                if not isinstance(content, str) or _TRUNCATED.search(content):
                    continue
                size = cm.counter.estimate_message(message)
                if size <= caps.truncate:
                    continue
                shortened = {**message, "content": cm.truncate_text(content, caps.truncate_keep)}
                cm.state.replace_message(index, shortened)
                freed += size - cm.counter.estimate_message(shortened)
                count += 1
                if span.scene_id not in touched:
                    touched.append(span.scene_id)
            if freed >= goal:
                break
        if not count:
            return None
        return CompactionEvent(
            tier="truncate",
            items=count,
            scene_ids=touched,
            detail=f"{count} long messages truncated to head and tail",
        )


class CutMiddle(CompactionStep):
    """Whole scenes dropped from the middle of the history, oldest first (the last resort)."""

    name = "cut_middle"

    def run(
        self, cm: ContextManager, job: Compaction, goal: int, caps: Caps
    ) -> CompactionEvent | None:
        spans = list(cm.state.scenes)
        if not spans:
            return None
        # the middle first (oldest first), then the oldest scene, the most recent one last
        order = [*spans[1:-1], spans[0], spans[-1]] if len(spans) > 2 else list(spans)
        dropped: list[SceneSpan] = []
        freed = 0
        for span in order:
            dropped.append(span)
            freed += cm.estimate(cm.state.scene_messages(span))
            if freed >= goal:
                break
        scene_ids = [s.scene_id for s in dropped]
        flushed = cm.flush_before_drop(job, scene_ids)
        entry_ids = sorted({i for s in dropped for i in s.entry_ids})
        cm.state.remove_scenes(scene_ids)
        cm.note_dropped(dropped)
        return CompactionEvent(
            tier="cut_middle",
            entry_ids=entry_ids,
            scene_ids=scene_ids,
            flushed=flushed,
            detail=f"{len(dropped)} scenes dropped without summary",
        )


RUN_STEPS: tuple[CompactionStep, ...] = (
    SummarizeChunk(),
    Fold(),
    TrimThinking(),
    Truncate(),
    CutMiddle(),
)


def strip_thinking(text: str) -> str:
    """`text` without `<think>…</think>` blocks (and a leading block missing its opening tag)."""
    if "</think" not in text:
        return text
    stripped = _THINK_BLOCK.sub("", text)
    if "</think" in stripped:
        stripped = _THINK_OPENLESS.sub("", stripped, count=1)
    return stripped


def _words(tokens: int) -> int:
    return max(40, int(tokens * 0.65))


def _first_sentence(text: str) -> str:
    line = text.strip().split("\n", 1)[0]
    end = line.find(". ")
    return (line[: end + 1] if 0 < end < 240 else line[:240]).strip()
