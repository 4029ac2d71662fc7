"""Tier 4: old long messages keep their head and tail around a marker."""

from __future__ import annotations

from terrarium_dagster.context.compaction.events import CompactionEvent
from terrarium_dagster.context.compaction.step import Compaction, CompactionStep
from terrarium_dagster.context.compaction.text import TRUNCATED, truncate_text


class Truncate(CompactionStep):
    """Old long messages keep their head and tail around a marker."""

    name = "truncate"

    def run(self, job: Compaction, goal: int) -> CompactionEvent | None:
        state, counter = job.state, job.counter
        freed = 0
        touched: list[str] = []
        count = 0
        for span in state.scenes:
            for index in range(span.start, span.end):
                message = state.history[index]
                content = message.get("content")
                if not isinstance(content, str) or TRUNCATED.search(content):
                    continue
                size = counter.estimate_message(message)
                if size <= job.caps.truncate:
                    continue
                kept = truncate_text(counter, content, job.caps.truncate_keep)
                shortened = {**message, "content": kept}
                state.replace_message(index, shortened)
                freed += size - counter.estimate_message(shortened)
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
