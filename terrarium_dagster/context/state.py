"""The agent's context between model calls: summaries, recent conversation, cursor.

`ContextState` is what the store keeps (`save_context_state`) and what a snapshot saves. The
system prompt and the tool schemas are not part of it: they are constants of the run. Everything
here serialises deterministically (`to_json`: sorted keys, compact), so two identical runs write
identical states.

The recent conversation (`history`) is a list of OpenAI message dicts, grouped into scenes by
`scenes`: each `SceneSpan` covers the half-open range `[start, end)` of `history` holding that
scene's user message, the assistant turns and the tool results. Spans are contiguous and cover the
whole history, so compaction can remove whole scenes without ever separating a tool call from its
result.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from terrarium_dagster.jsonform import canonical_json

STATE_VERSION = 1
STANDARD_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id")

Message = dict[str, Any]


class Summary(BaseModel):
    """A summary in the context: a long thread's running chunk summary or a finished thread's."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["chunk", "thread"]
    thread_id: int
    scene_ids: list[str] = Field(default_factory=list)
    entry_ids: list[int] = Field(default_factory=list)
    text: str
    tokens_before: int = 0  # tokens of what it replaced (material plus the previous summary)
    tokens_after: int = 0  # tokens of the summary itself
    fallback: bool = False  # True when the text is the deterministic extractive summary

    @property
    def tokens(self) -> int:
        return self.tokens_after


class SceneSpan(BaseModel):
    """Where one finished scene sits in `ContextState.history`."""

    model_config = ConfigDict(extra="forbid")

    scene_id: str
    thread_id: int
    start: int
    end: int
    entry_ids: list[int] = Field(default_factory=list)


class Cursor(BaseModel):
    """The last committed scene."""

    model_config = ConfigDict(extra="forbid")

    thread_id: int | None = None
    scene_id: str | None = None


class ContextState(BaseModel):
    """The live context of the agent, without the system prompt and the tools."""

    model_config = ConfigDict(extra="forbid")

    version: int = STATE_VERSION
    story_so_far: str = ""
    story_entry_ids: list[int] = Field(default_factory=list)
    story_thread_ids: list[int] = Field(default_factory=list)
    summaries: list[Summary] = Field(default_factory=list)
    history: list[Message] = Field(default_factory=list)
    scenes: list[SceneSpan] = Field(default_factory=list)
    thread_entry_ids: dict[int, list[int]] = Field(default_factory=dict)
    cursor: Cursor = Field(default_factory=Cursor)
    compactions: dict[str, int] = Field(default_factory=dict)
    calibration: dict[str, float] = Field(default_factory=dict)
    # the token counter's exact counts of recent prompts (digest, tokens), oldest first: with the
    # calibration, what makes a resumed run count every prompt as an uninterrupted one does
    anchors: list[tuple[str, int]] = Field(default_factory=list)
    # a finished thread kept in the history whose pre-compaction flush already ran (at the
    # next thread's first request, `ContextManager.defer_fold`): its fold does not flush again
    flushed_thread_id: int | None = None

    @model_validator(mode="after")
    def _spans_cover_history(self) -> ContextState:
        position = 0
        for span in self.scenes:
            if span.start != position or span.end <= span.start:
                raise ValueError(
                    f"scene {span.scene_id} spans history[{span.start}:{span.end}], "
                    f"expected to start at {position}"
                )
            position = span.end
        if position != len(self.history):
            raise ValueError(
                f"scenes cover {position} messages of a history of {len(self.history)}"
            )
        return self

    # -- serialisation ----------------------------------------------------------------------

    def to_json(self) -> str:
        """Deterministic JSON: sorted keys, compact separators."""
        return canonical_json(self.model_dump(mode="json"))

    @classmethod
    def from_json(cls, text: str) -> ContextState:
        return cls.model_validate_json(text)

    # -- queries ----------------------------------------------------------------------------

    def scene_messages(self, span: SceneSpan) -> list[Message]:
        return self.history[span.start : span.end]

    def chunk_summary(self, thread_id: int) -> Summary | None:
        return next(
            (s for s in self.summaries if s.kind == "chunk" and s.thread_id == thread_id), None
        )

    def thread_summary(self, thread_id: int) -> Summary | None:
        return next(
            (s for s in self.summaries if s.kind == "thread" and s.thread_id == thread_id), None
        )

    def history_threads(self) -> list[int]:
        """Threads with scenes in the history, oldest first."""
        seen: list[int] = []
        for span in self.scenes:
            if span.thread_id not in seen:
                seen.append(span.thread_id)
        return seen

    # -- edits (all keep the spans contiguous) ----------------------------------------------

    def append_scene(
        self, scene_id: str, thread_id: int, messages: Sequence[Message], entry_ids: Iterable[int]
    ) -> None:
        start = len(self.history)
        self.history.extend(messages)
        self.scenes.append(
            SceneSpan(
                scene_id=scene_id,
                thread_id=thread_id,
                start=start,
                end=len(self.history),
                entry_ids=sorted(set(entry_ids)),
            )
        )

    def remove_scenes(self, scene_ids: Iterable[str]) -> list[SceneSpan]:
        """Drop whole scenes from the history; returns the removed spans (old positions)."""
        drop = set(scene_ids)
        kept_history: list[Message] = []
        kept_spans: list[SceneSpan] = []
        removed: list[SceneSpan] = []
        for span in self.scenes:
            if span.scene_id in drop:
                removed.append(span)
                continue
            messages = self.history[span.start : span.end]
            start = len(kept_history)
            kept_history.extend(messages)
            kept_spans.append(span.model_copy(update={"start": start, "end": len(kept_history)}))
        self.history = kept_history
        self.scenes = kept_spans
        return removed

    def replace_message(self, index: int, message: Message) -> None:
        self.history[index] = message

    def set_summary(self, summary: Summary) -> None:
        """Put `summary` in place of the same kind for the same thread, or append it."""
        for position, existing in enumerate(self.summaries):
            if existing.kind == summary.kind and existing.thread_id == summary.thread_id:
                self.summaries[position] = summary
                return
        self.summaries.append(summary)

    def count_compaction(self, tier: str) -> None:
        self.compactions[tier] = self.compactions.get(tier, 0) + 1


# -- messages -------------------------------------------------------------------------------


def canonical_message(message: Message) -> Message:
    """The message with only the standard keys, in a fixed order (tool calls normalised too)."""
    out: Message = {}
    for key in STANDARD_KEYS:
        if key not in message:
            continue
        value = message[key]
        if key == "tool_calls":
            if not value:
                continue
            value = [_canonical_tool_call(call) for call in value]
        elif key in ("name", "tool_call_id") and value is None:
            continue
        out[key] = value
    if out.get("role") == "assistant" and "content" not in out:
        out["content"] = None
    return out


def _canonical_tool_call(call: Any) -> Message:
    if hasattr(call, "model_dump"):
        call = call.model_dump()
    function = dict(call.get("function") or {})
    arguments = function.get("arguments", "")
    if not isinstance(arguments, str):
        arguments = canonical_json(arguments)
    return {
        "id": str(call.get("id", "")),
        "type": call.get("type") or "function",
        "function": {"name": str(function.get("name", "")), "arguments": arguments},
    }


def tool_pair_problems(messages: Sequence[Message]) -> list[str]:
    """Every way `messages` separates a tool call from its result (empty when all pairs hold).

    The rule: an assistant message with `tool_calls` is followed, before any other kind of
    message, by exactly one `tool` message per call id; a `tool` message answers a call of the
    assistant message right before its run of tool messages.
    """
    problems: list[str] = []
    pending: set[str] = set()
    open_index: int | None = None
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if open_index is None or call_id not in pending:
                problems.append(f"message {index}: tool result {call_id!r} answers no open call")
            else:
                pending.discard(call_id)
            continue
        if pending:
            problems.append(
                f"message {open_index}: tool call(s) {sorted(pending)} have no result "
                f"before message {index}"
            )
        pending = set()
        open_index = None
        calls = message.get("tool_calls") or []
        if role == "assistant" and calls:
            ids = [call["id"] for call in calls]
            if len(set(ids)) != len(ids):
                problems.append(f"message {index}: duplicate tool call ids {ids}")
            pending = set(ids)
            open_index = index
    if pending:
        problems.append(f"message {open_index}: tool call(s) {sorted(pending)} have no result")
    return problems


def repair_tool_pairs(messages: Sequence[Message]) -> list[Message]:
    """A copy of `messages` where unanswered tool calls and unasked tool results are removed.

    Used on a finished scene before it enters the history (a scene cut short by the round limit
    may end with calls that were never executed). An assistant message left with neither content
    nor calls is dropped.
    """
    out: list[Message] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        calls = message.get("tool_calls") or []
        if message.get("role") == "assistant" and calls:
            results: list[Message] = []
            cursor = index + 1
            while cursor < len(messages) and messages[cursor].get("role") == "tool":
                results.append(messages[cursor])
                cursor += 1
            call_ids = [call["id"] for call in calls]
            answered: dict[str, Message] = {}
            for result in results:
                call_id = result.get("tool_call_id")
                if call_id in call_ids and call_id not in answered:
                    answered[call_id] = result
            kept_calls = [call for call in calls if call["id"] in answered]
            repaired = dict(message)
            if kept_calls:
                repaired["tool_calls"] = kept_calls
            else:
                repaired.pop("tool_calls", None)
            if kept_calls or (repaired.get("content") or "").strip():
                out.append(repaired)
            out.extend(answered[call["id"]] for call in kept_calls)
            index = cursor
            continue
        if message.get("role") != "tool":
            out.append(message)
        index += 1
    return out


_ENTRY_ID = re.compile(r"\bE(\d+)\b")
_ENTRY_ID_FIELD = re.compile(r'"(?:entry_id|id)"\s*:\s*"?E?(\d+)')
GLOSSARY_WRITE_TOOLS = ("glossary_create", "glossary_update", "glossary_delete")


def entry_ids_written(messages: Sequence[Message]) -> list[int]:
    """Entry ids a scene's turns wrote, read from glossary write calls and their results.

    A fallback for when the caller does not say which entries a scene touched.
    """
    written_calls: set[str] = set()
    found: set[int] = set()
    for message in messages:
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            if function.get("name") in GLOSSARY_WRITE_TOOLS:
                written_calls.add(call.get("id"))
                arguments = str(function.get("arguments") or "")
                found.update(int(m) for m in _ENTRY_ID_FIELD.findall(arguments))
        if message.get("role") == "tool" and message.get("tool_call_id") in written_calls:
            content = str(message.get("content") or "")
            if '"ok":false' in content.replace(" ", ""):
                continue
            found.update(int(m) for m in _ENTRY_ID_FIELD.findall(content))
            found.update(int(m) for m in _ENTRY_ID.findall(content))
    return sorted(found)
