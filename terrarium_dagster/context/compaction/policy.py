"""The budget of a compaction: the policy's knobs and the caps they come to for a prompt limit."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CompactionPolicy:
    """Knobs of compaction. `None` values are derived from the prompt limit and max_tokens."""

    low_water: float = 0.4  # summary tiers compact down to this share of the prompt limit
    min_free_tokens: int | None = None  # a lossy pass frees at least this; default limit // 8
    chunk_scenes: int = 8
    keep_recent_scenes: int = 1  # scenes of the current thread never summarized yet
    chunk_summary_tokens: int | None = None  # default clamp(limit // 24, 128, max_tokens - 32)
    thread_summary_tokens: int | None = None  # default clamp(limit // 32, 96, max_tokens - 32)
    story_tokens: int | None = None  # default clamp(limit // 12, 160, max_tokens - 32)
    max_thread_summaries: int = 3  # more finished-thread summaries than this get folded
    truncate_tokens: int | None = None  # tier 4 truncates messages above; default limit // 40
    stub_tokens: int = 96  # what shrink_current leaves of a tool result


@dataclass
class Caps:
    """The budget in tokens: the prompt limit, the low-water target, and each summary's size."""

    limit: int
    target: int
    min_free: int
    chunk_summary: int
    thread_summary: int
    story: int
    truncate: int
    truncate_keep: int


def caps_for(policy: CompactionPolicy, limit: int, max_tokens: int) -> Caps:
    """The caps of `policy` for a prompt limit of `limit` and answers of `max_tokens`."""
    summary_room = max(64, max_tokens - 32)

    def clamp(value: int | None, default: int, low: int) -> int:
        return max(1, min(value if value is not None else max(low, default), summary_room))

    truncate = policy.truncate_tokens or max(200, limit // 40)
    return Caps(
        limit=limit,
        target=max(1, min(limit, int(limit * policy.low_water))),
        min_free=max(1, policy.min_free_tokens or limit // 8),
        chunk_summary=clamp(policy.chunk_summary_tokens, limit // 24, 128),
        thread_summary=clamp(policy.thread_summary_tokens, limit // 32, 96),
        story=clamp(policy.story_tokens, limit // 12, 160),
        truncate=truncate,
        truncate_keep=max(32, truncate // 3),
    )


HISTORY_FRAME_TOKENS = 48  # the history's headings and the assistant's "Noted." around them


def history_floor(policy: CompactionPolicy, limit: int, max_tokens: int) -> int:
    """The history no compaction removes at a prompt limit of `limit`: the story so far at its
    cap, the current thread's summary at its cap with the note of the scenes dropped from it
    (within half a chunk summary's cap: `cut_middle.NOTE_SHARE`), and their frame. What a
    scene's request has beside it once a long book has filled the history."""
    caps = caps_for(policy, limit, max_tokens)
    note = max(32, caps.chunk_summary // 2)
    return caps.story + caps.chunk_summary + note + HISTORY_FRAME_TOKENS
