"""The order a summon trims a past context in: compaction steps of the run's interface
(`context/compaction/step.py`), composed with two of the run's own, run by the same pipeline.

Each step is built from data — the entry ids the question names (`focus`), the record of what was
trimmed (`trimmed`, logged with the exchange), the exchange and the pending round — never from the
summon that runs it. No step calls the model.
"""

from __future__ import annotations

import math
import re
from typing import Any

from terrarium_dagster.context.compaction import CompactionEvent
from terrarium_dagster.context.compaction.cut_middle import CutMiddle
from terrarium_dagster.context.compaction.step import Compaction, CompactionStep
from terrarium_dagster.context.compaction.truncate import Truncate
from terrarium_dagster.context.state import ContextState, Message, SceneSpan

STORY_CUT_MARKER = "[… the beginning of the story so far was cut for the summon …] "
MIN_STORY_CHARS = 200

_ENTRY_MENTION = re.compile(r"\bE(\d+)\b")


def entry_ids_in(text: str) -> list[int]:
    """Entry ids a text names as ``E12`` / ``[E12]``."""
    return sorted({int(number) for number in _ENTRY_MENTION.findall(text)})


def summon_steps(
    *,
    focus: set[int],
    trimmed: dict[str, Any],
    exchange: list[Message],
    pending: list[Message],
) -> tuple[CompactionStep, ...]:
    """The order a summon trims in: unrelated scenes, summaries, the story so far, long
    messages (the run's `Truncate`), the remaining scenes (the run's `CutMiddle`), old rounds of
    the exchange."""
    return (
        DropScenes(focus),
        DropSummaries(focus, trimmed),
        CutStory(trimmed),
        Truncate(),
        CutMiddle(),
        DropExchangeRound(exchange, pending, trimmed),
    )


class DropScenes(CompactionStep):
    """History scenes that do not concern the question's entries, oldest first."""

    name = "drop_scenes"

    def __init__(self, focus: set[int]) -> None:
        self.focus = focus

    def run(self, job: Compaction, goal: int) -> CompactionEvent | None:
        past = job.state
        spans = [s for s in past.scenes if not _concerns(past, s, self.focus)]
        dropped: list[str] = []
        freed = 0
        for span in spans:
            dropped.append(span.scene_id)
            freed += job.estimate(past.scene_messages(span))
            if freed >= goal:
                break
        if not dropped:
            return None
        past.remove_scenes(dropped)
        return CompactionEvent(tier="drop_scenes", scene_ids=dropped)


class DropSummaries(CompactionStep):
    """Summaries, oldest first, those naming the question's entries last."""

    name = "drop_summaries"

    def __init__(self, focus: set[int], trimmed: dict[str, Any]) -> None:
        self.focus = focus
        self.trimmed = trimmed

    def run(self, job: Compaction, goal: int) -> CompactionEvent | None:
        past = job.state
        if not past.summaries:
            return None
        ordered = sorted(
            range(len(past.summaries)),
            key=lambda i: (bool(set(past.summaries[i].entry_ids) & self.focus), i),
        )
        freed = 0
        drop: set[int] = set()
        for index in ordered:
            drop.add(index)
            freed += job.counter.estimate_text(past.summaries[index].text) + 8
            if freed >= goal:
                break
        self.trimmed["summaries"].extend(
            f"{past.summaries[i].kind}:{past.summaries[i].thread_id}" for i in sorted(drop)
        )
        past.summaries = [s for i, s in enumerate(past.summaries) if i not in drop]
        return CompactionEvent(tier="drop_summaries", items=len(drop))


class CutStory(CompactionStep):
    """The story so far, keeping its end."""

    name = "cut_story"

    def __init__(self, trimmed: dict[str, Any]) -> None:
        self.trimmed = trimmed

    def run(self, job: Compaction, goal: int) -> CompactionEvent | None:
        past = job.state
        story = past.story_so_far
        if not story.strip():
            return None
        tokens = max(1, job.counter.estimate_text(story))
        keep = len(story) - math.ceil(goal * len(story) / tokens) - len(STORY_CUT_MARKER)
        if keep < MIN_STORY_CHARS:
            past.story_so_far = ""
            cut = len(story)
        else:
            past.story_so_far = STORY_CUT_MARKER + story[-keep:]
            cut = len(story) - keep
        self.trimmed["story_chars"] += cut
        return CompactionEvent(tier="cut_story", items=cut)


class DropExchangeRound(CompactionStep):
    """The oldest round of the summon exchange itself (never the current one)."""

    name = "drop_exchange"

    def __init__(
        self, exchange: list[Message], pending: list[Message], trimmed: dict[str, Any]
    ) -> None:
        self.exchange = exchange
        self.pending = pending
        self.trimmed = trimmed

    def run(self, job: Compaction, goal: int) -> CompactionEvent | None:
        exchange = self.exchange
        starts = [i for i, m in enumerate(exchange) if m.get("role") == "user"]
        if not starts:
            return None
        end = starts[1] if len(starts) > 1 else len(exchange)
        del exchange[:end]
        job.scene_messages[:] = [*exchange, *self.pending]
        self.trimmed["exchange_rounds"] += 1
        return CompactionEvent(tier="drop_exchange", items=1)


def _concerns(past: ContextState, span: SceneSpan, focus: set[int]) -> bool:
    """True when a history scene wrote or mentions one of the focus entries."""
    if not focus:
        return False
    if set(span.entry_ids) & focus:
        return True
    for message in past.scene_messages(span):
        text = message.get("content")
        if isinstance(text, str) and set(entry_ids_in(text)) & focus:
            return True
        for call in message.get("tool_calls") or []:
            arguments = str((call.get("function") or {}).get("arguments") or "")
            if set(entry_ids_in(arguments)) & focus:
                return True
    return False
