"""Compaction: keeping the agent's context within its token budget.

`manager.py` (ContextManager) is what the agent loop and summon talk to; it measures prompts
and checks requests with the `PromptSizes` it owns (`sizes.py`); `pipeline.py` runs the
strategies, one file each (`summarize_chunk`, `fold`, `trim_thinking`, `truncate`, `cut_middle`),
over the data of `step.py::Compaction`; they reach the model only through the functions handed in.
"""

from terrarium_dagster.context.compaction.events import CompactionEvent
from terrarium_dagster.context.compaction.manager import (
    CallPlan,
    CompactionRecorder,
    ContextManager,
)
from terrarium_dagster.context.compaction.policy import CompactionPolicy
from terrarium_dagster.context.compaction.sizes import PromptSizes, parse_overflow
from terrarium_dagster.context.compaction.step import Flusher, Summarizer
from terrarium_dagster.context.compaction.text import TRUNCATION_MARKER, strip_thinking

__all__ = [
    "TRUNCATION_MARKER",
    "CallPlan",
    "CompactionEvent",
    "CompactionPolicy",
    "CompactionRecorder",
    "ContextManager",
    "Flusher",
    "PromptSizes",
    "Summarizer",
    "parse_overflow",
    "strip_thinking",
]
