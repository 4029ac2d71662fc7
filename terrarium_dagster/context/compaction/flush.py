"""The pre-compaction flush: before the first pass that drops turns, the agent gets one call
(through the `Flusher` the compaction was handed) to record what it has not written yet. The
flush's own messages are not kept. A flush that fails stops the run like any failed call (the
scene rolls back and the resumed run flushes again): going on without it would write another
glossary than an uninterrupted run."""

from __future__ import annotations

from collections.abc import Sequence

from terrarium_dagster.context import prompts
from terrarium_dagster.context.compaction.step import Compaction
from terrarium_dagster.context.layout import prefix_messages


def flush_before_drop(job: Compaction, scene_ids: Sequence[str]) -> bool:
    """Once per compaction, before the first pass that drops turns; True when it ran."""
    if job.flushed or job.flusher is None:
        return False
    job.flushed = True
    instruction = {"role": "user", "content": prompts.flush_message(list(scene_ids))}
    for state in (job.origin, job.state):  # the cached prefix first; the compacted one else
        messages = [*prefix_messages(state, job.system_prompt), instruction]
        if job.fits(messages):
            job.flusher(messages)
            return True
    return False
