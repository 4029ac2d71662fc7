"""What the offline backend reads from a chat request: the messages checked as vLLM checks them,
the tool names, and the assistant's earlier tool calls with their results.

`BadRequest` is a request the server refuses; `Call` a tool call made, `Reply` what the
assistant answers next.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from terrarium_dagster.backends.wire import content_text

ROLES = frozenset({"system", "user", "assistant", "tool"})

ENTRY_REF = re.compile(r"\bE(\d+)\b")


class BadRequest(Exception):
    """A request the server refuses; `status` and `kind` become the error response."""

    def __init__(self, message: str, status: int = 400, kind: str = "BadRequestError") -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind


@dataclass(frozen=True, slots=True)
class Call:
    """A tool call made by the assistant, with its parsed arguments and its parsed result."""

    id: str
    name: str
    args: dict[str, Any]
    result: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Reply:
    """What the assistant answers: text, or tool calls (name, arguments)."""

    content: str | None = None
    tool_calls: tuple[tuple[str, dict[str, Any]], ...] = ()


def _parse_json_object(text: Any) -> dict[str, Any]:
    if isinstance(text, Mapping):
        return dict(text)
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def checked_messages(messages: Any) -> list[dict[str, Any]]:
    """The messages, checked as vLLM checks them (raises `BadRequest`)."""
    if not isinstance(messages, list) or not messages:
        raise BadRequest("'messages' must be a non-empty list")
    pending: set[str] = set()
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise BadRequest(f"messages[{index}] must be an object")
        role = message.get("role")
        if role not in ROLES:
            raise BadRequest(f"messages[{index}].role must be one of system, user, assistant, tool")
        content = message.get("content")
        if content is not None and not isinstance(content, str | list):
            raise BadRequest(f"messages[{index}].content must be a string, a list or null")
        if role != "tool" and pending:
            raise BadRequest(
                f"messages[{index}]: an assistant message with 'tool_calls' must be followed by "
                f"tool messages responding to each 'tool_call_id' (missing: {sorted(pending)})"
            )
        if role == "assistant":
            calls = message.get("tool_calls") or []
            if not isinstance(calls, list):
                raise BadRequest(f"messages[{index}].tool_calls must be a list")
            for call in calls:
                function = call.get("function") if isinstance(call, dict) else None
                if not isinstance(function, dict) or not isinstance(function.get("name"), str):
                    raise BadRequest(f"messages[{index}].tool_calls has a call without a function")
                pending.add(str(call.get("id", "")))
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                raise BadRequest(
                    f"messages[{index}]: messages with role 'tool' must be a response to a "
                    f"preceding message with 'tool_calls' (unknown tool_call_id {call_id!r})"
                )
            pending.discard(call_id)
    if pending:
        raise BadRequest(
            f"the last assistant message's tool calls have no tool results: {sorted(pending)}"
        )
    return messages


def requested_tool_names(tools: Any) -> list[str]:
    """The names of the request's function tools (raises `BadRequest` when malformed)."""
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise BadRequest("'tools' must be a list")
    names = []
    for index, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise BadRequest(f"tools[{index}] must be a function tool with a name")
        names.append(function["name"])
    return names


def calls_after(messages: Sequence[Mapping[str, Any]]) -> tuple[int, list[Call]]:
    """(number of assistant turns, the tool calls with their results) in `messages`."""
    results: dict[str, dict[str, Any]] = {}
    for message in messages:
        if message.get("role") == "tool":
            results[str(message.get("tool_call_id"))] = _parse_json_object(
                content_text(message.get("content"))
            )
    turns = 0
    calls: list[Call] = []
    for message in messages:
        if message.get("role") != "assistant":
            continue
        turns += 1
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            call_id = str(call.get("id", ""))
            calls.append(
                Call(
                    call_id,
                    str(function.get("name", "")),
                    _parse_json_object(function.get("arguments")),
                    results.get(call_id),
                )
            )
    return turns, calls


def entry_number(value: Any) -> int | None:
    """The number of an entry reference (`E12`, `12`), or None."""
    match = re.fullmatch(r"\s*[Ee]?(\d+)\s*", str(value)) if value is not None else None
    return int(match.group(1)) if match else None
