"""The agent's context: token accounting, message layout, compaction, summaries, prompts.

No Dagster and no HTTP here: the model is reached through small callables (`Summarizer`,
`Flusher`, a tokenize function) that the agent loop provides.
"""

from terrarium_dagster.context.compaction import (
    CallPlan,
    CompactionEvent,
    CompactionPolicy,
    CompactionRecorder,
    ContextManager,
    Flusher,
    Summarizer,
    parse_overflow,
    strip_thinking,
)
from terrarium_dagster.context.layout import build_messages, story_block
from terrarium_dagster.context.prompts import SYSTEM_PROMPT, canonical_tools, scene_message
from terrarium_dagster.context.state import (
    ContextState,
    Cursor,
    SceneSpan,
    Summary,
    repair_tool_pairs,
    tool_pair_problems,
)
from terrarium_dagster.context.tokens import HeuristicCounter, ServerCounter, TokenCounter

__all__ = [
    "SYSTEM_PROMPT",
    "CallPlan",
    "CompactionEvent",
    "CompactionPolicy",
    "CompactionRecorder",
    "ContextManager",
    "ContextState",
    "Cursor",
    "Flusher",
    "HeuristicCounter",
    "SceneSpan",
    "ServerCounter",
    "Summarizer",
    "Summary",
    "TokenCounter",
    "build_messages",
    "canonical_tools",
    "parse_overflow",
    "repair_tool_pairs",
    "scene_message",
    "story_block",
    "strip_thinking",
    "tool_pair_problems",
]
