"""The message list sent to the model, most stable part first.

```
system            the system prompt (the tool schemas travel in the request's `tools`)
user + assistant  "# Story so far" block: story so far, thread and chunk summaries; acknowledged
history           finished scenes of the recent conversation, append-only between compactions
current scene     the scene message (and this scene's own tool rounds): the only part that changes
```

The story block sits right after the system prompt. It changes only at compaction, and a
compaction rewrites the history after it anyway, so the cache loses nothing it would have kept;
between compactions every call extends the previous prompt and prefills only what is new. The
block is a user message acknowledged by a constant assistant message so that roles keep
alternating for chat templates that insist on it.
"""

from __future__ import annotations

from collections.abc import Sequence

from terrarium_dagster.context.prompts import STORY_ACK, STORY_SO_FAR_HEADING
from terrarium_dagster.context.state import ContextState, Message, Summary


def summary_heading(summary: Summary) -> str:
    if summary.kind == "thread":
        return f"## Thread {summary.thread_id} (finished)"
    if summary.scene_ids:
        return (
            f"## Thread {summary.thread_id} so far "
            f"(scenes {summary.scene_ids[0]} .. {summary.scene_ids[-1]})"
        )
    return f"## Thread {summary.thread_id} so far"


def story_block(state: ContextState) -> str | None:
    """The "# Story so far" text, or None while there is nothing to say yet."""
    story = state.story_so_far.strip()
    if not story and not state.summaries:
        return None
    parts = [STORY_SO_FAR_HEADING, story or "(the story so far is in the summaries below)"]
    for summary in state.summaries:
        parts.append("")
        parts.append(summary_heading(summary))
        parts.append(summary.text.strip())
    return "\n".join(parts) + "\n"


def head_messages(state: ContextState, system_prompt: str) -> list[Message]:
    """System prompt and story block: the part before the history."""
    messages: list[Message] = [{"role": "system", "content": system_prompt}]
    block = story_block(state)
    if block is not None:
        messages.append({"role": "user", "content": block})
        messages.append({"role": "assistant", "content": STORY_ACK})
    return messages


def prefix_messages(
    state: ContextState, system_prompt: str, upto: int | None = None
) -> list[Message]:
    """Head plus the history (or its first `upto` messages): the cached prefix of the next call."""
    history = state.history if upto is None else state.history[:upto]
    return [*head_messages(state, system_prompt), *history]


def build_messages(
    state: ContextState,
    system_prompt: str,
    scene_block: str | Sequence[Message] | None = None,
) -> list[Message]:
    """The full message list: head, history, then the current scene.

    `scene_block` is the scene message (a string, sent as a user message) or the current scene's
    messages so far (its user message and the tool rounds), or None for the prefix alone.
    """
    messages = prefix_messages(state, system_prompt)
    if isinstance(scene_block, str):
        messages.append({"role": "user", "content": scene_block})
    elif scene_block is not None:
        messages.extend(scene_block)
    return messages
