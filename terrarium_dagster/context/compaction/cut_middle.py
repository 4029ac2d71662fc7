"""Tier 5, the last resort: whole scenes dropped from the middle of the history, oldest first;
their ids and entry ids stay noted in their thread's summary."""

from __future__ import annotations

import re
from collections.abc import Sequence

from terrarium_dagster.context import prompts
from terrarium_dagster.context.compaction.events import CompactionEvent
from terrarium_dagster.context.compaction.flush import flush_before_drop
from terrarium_dagster.context.compaction.step import Compaction, CompactionStep
from terrarium_dagster.context.state import SceneSpan, Summary
from terrarium_dagster.context.tokens import TokenCounter


class CutMiddle(CompactionStep):
    """Whole scenes dropped from the middle of the history, oldest first (the last resort)."""

    name = "cut_middle"

    def run(self, job: Compaction, goal: int) -> CompactionEvent | None:
        spans = list(job.state.scenes)
        if not spans:
            return None
        # the middle first (oldest first), then the oldest scene, the most recent one last
        order = [*spans[1:-1], spans[0], spans[-1]] if len(spans) > 2 else list(spans)
        dropped: list[SceneSpan] = []
        freed = 0
        for span in order:
            dropped.append(span)
            freed += job.estimate(job.state.scene_messages(span))
            if freed >= goal:
                break
        scene_ids = [s.scene_id for s in dropped]
        flushed = flush_before_drop(job, scene_ids)
        entry_ids = sorted({i for s in dropped for i in s.entry_ids})
        job.state.remove_scenes(scene_ids)
        _note_dropped(job, dropped)
        return CompactionEvent(
            tier="cut_middle",
            entry_ids=entry_ids,
            scene_ids=scene_ids,
            flushed=flushed,
            detail=f"{len(dropped)} scenes dropped without summary",
        )


NOTE = re.compile(
    r"\n?\(Scenes (\S+) \.\. (\S+) left the context without a summary; entries: ([^\n]*?)\.\)"
)
EARLIER = re.compile(r" and (\d+) earlier$")
NOTE_SHARE = 2  # the note keeps within 1/NOTE_SHARE of a chunk summary's cap


def _note_dropped(job: Compaction, dropped: Sequence[SceneSpan]) -> None:
    """Keep the dropped scenes' ids and entry ids in their thread's summary: ONE note per
    summary, merged with the note an earlier cut left there, so that repeated cuts at a small
    window never grow the summary without end (its entry list keeps within half a chunk
    summary's cap: the latest entries by id, the rest counted; all stay in `entry_ids`)."""
    state, counter = job.state, job.counter
    for thread_id in dict.fromkeys(s.thread_id for s in dropped):
        spans = [s for s in dropped if s.thread_id == thread_id]
        ids = sorted({i for s in spans for i in s.entry_ids})
        existing = state.chunk_summary(thread_id) or state.thread_summary(thread_id)
        first, last = spans[0].scene_id, spans[-1].scene_id
        body = existing.text if existing is not None else ""
        earlier = NOTE.findall(body)
        hidden = 0  # entries an earlier note counted without naming them
        named = list(ids)
        if earlier:
            first = earlier[0][0]
            for note in earlier:
                named.extend(prompts.parse_entry_refs(note[2].split(" and ")[0]))
                counted = EARLIER.search(note[2])
                hidden += int(counted.group(1)) if counted else 0
            body = NOTE.sub("", body).strip()
        cap = max(32, job.caps.chunk_summary // NOTE_SHARE)
        note = _note(counter, first, last, sorted(set(named)), hidden, cap)
        state.set_summary(_noted(counter, existing, body, spans, ids, note))


def _note(
    counter: TokenCounter, first: str, last: str, ids: list[int], hidden: int, cap: int
) -> str:
    """The note of scenes `first` .. `last` dropped, naming the latest of `ids` within about
    `cap` tokens and counting the rest (with `hidden`, those an earlier note counted)."""
    shown = list(ids)
    while True:
        more = len(ids) - len(shown) + hidden
        refs = prompts.entry_refs(shown) + (f" and {more} earlier" if more else "")
        note = f"(Scenes {first} .. {last} left the context without a summary; entries: {refs}.)"
        if len(shown) <= 1 or counter.estimate_text(note) <= cap:
            return note
        shown = shown[len(shown) // 4 or 1 :]  # the latest entries are kept


def _noted(
    counter: TokenCounter,
    existing: Summary | None,
    body: str,
    spans: Sequence[SceneSpan],
    ids: list[int],
    note: str,
) -> Summary:
    if existing is None:
        return Summary(
            kind="chunk",
            thread_id=spans[0].thread_id,
            scene_ids=[s.scene_id for s in spans],
            entry_ids=ids,
            text=note,
            tokens_after=counter.estimate_text(note),
            fallback=True,
        )
    text = f"{body}\n{note}" if body else note
    return existing.model_copy(
        update={
            "text": text,
            "scene_ids": [*existing.scene_ids, *(s.scene_id for s in spans)],
            "entry_ids": sorted(set(existing.entry_ids) | set(ids)),
            "tokens_after": counter.estimate_text(text),
        }
    )
