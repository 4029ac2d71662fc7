"""What one compaction pass did: the event a strategy returns and the store records."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

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

Reason = Literal["budget", "overflow", "thread_start"]


class CompactionEvent(BaseModel):
    """One compaction pass, as recorded in the store (`log_compaction`)."""

    tier: Tier
    reason: Reason = "budget"
    thread_id: int | None = None  # the thread of the scene being prepared
    scene_id: str | None = None  # the scene being prepared
    # prompt tokens of the next request before and after the pass (the server's count when
    # /tokenize answers, else the calibrated estimate); the pipeline sets them
    tokens_before: int = 0
    tokens_after: int = 0
    entry_ids: list[int] = Field(default_factory=list)
    scene_ids: list[str] = Field(default_factory=list)  # scenes the pass summarized/cut/touched
    summary: str = ""  # the summary text written, if any
    fallback: bool = False  # the summary is the extractive fallback (model answer unusable)
    flushed: bool = False  # the pre-compaction flush ran right before this pass
    detail: str = ""
    items: int = 0  # how many things the pass removed or cut (messages, summaries, characters)
