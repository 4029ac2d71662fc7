"""Tier 3: `<think>` blocks out of old assistant turns."""

from __future__ import annotations

from terrarium_dagster.context.compaction.events import CompactionEvent
from terrarium_dagster.context.compaction.step import Compaction, CompactionStep
from terrarium_dagster.context.compaction.text import strip_thinking


class TrimThinking(CompactionStep):
    """`<think>` blocks out of old assistant turns."""

    name = "trim_thinking"

    def run(self, job: Compaction, goal: int) -> CompactionEvent | None:
        state = job.state
        trimmed: list[str] = []
        for span in state.scenes:
            for index in range(span.start, span.end):
                message = state.history[index]
                content = message.get("content")
                if message.get("role") != "assistant" or not isinstance(content, str):
                    continue
                kept = strip_thinking(content)
                if kept != content:
                    state.replace_message(index, {**message, "content": kept})
                    if span.scene_id not in trimmed:
                        trimmed.append(span.scene_id)
        if not trimmed:
            return None
        return CompactionEvent(
            tier="trim_thinking",
            scene_ids=trimmed,
            detail="thinking blocks removed from old assistant turns",
        )
