"""What a conversation must be before it is sent: the standard keys and roles, tool calls each
answered by a tool message, one system message first (`validate_messages`, a `ValueError` for a
programming error, never a request), and the shape every server tested takes (`sendable_messages`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from terrarium_dagster.model.protocol import (
    FUNCTION_KEYS,
    MESSAGE_KEYS,
    TOOL_CALL_KEYS,
    history_arguments,
)


def _standard_object(
    value: Any, label: str, keys: frozenset[str], problems: list[str], missing: str
) -> bool:
    """Whether `value` is an object (else `missing` is a problem); its keys beyond `keys` are
    one problem more."""
    if not isinstance(value, dict):
        problems.append(missing)
        return False
    extra = sorted(set(value) - keys)
    if extra:
        problems.append(f"{label} has non-standard keys: {', '.join(extra)}")
    return True


def _check_tool_calls(index: int, calls: Any, problems: list[str]) -> list[str]:
    """Problems of one assistant message's `tool_calls`; returns the call ids found."""
    where = f"message {index} (assistant)"
    if not isinstance(calls, list) or not calls:
        problems.append(f"{where}: tool_calls must be a non-empty list")
        return []
    ids: list[str] = []
    for position, call in enumerate(calls):
        label = f"{where} tool call {position}"
        if not _standard_object(call, label, TOOL_CALL_KEYS, problems, f"{label} is not an object"):
            continue
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id:
            problems.append(f"{label} has no id")
        elif call_id in ids:
            problems.append(f"{where} repeats tool call id {call_id!r}")
        else:
            ids.append(call_id)
        if call.get("type") != "function":
            problems.append(f"{label} type must be 'function'")
        function = call.get("function")
        missing = f"{label} has no function object"
        if not _standard_object(function, f"{label} function", FUNCTION_KEYS, problems, missing):
            continue
        if not isinstance(function.get("name"), str) or not function.get("name"):
            problems.append(f"{label} function has no name")
        if not isinstance(function.get("arguments"), str):
            problems.append(f"{label} function arguments must be a JSON string")
    return ids


def _check_message(index: int, message: Any, problems: list[str]) -> str | None:
    """Problems of one message's shape; returns its role when it has a known one."""
    if not isinstance(message, dict):
        problems.append(f"message {index} is not an object")
        return None
    role = message.get("role")
    if role not in MESSAGE_KEYS:
        problems.append(f"message {index} has an unknown role {role!r}")
        return None
    where = f"message {index} ({role})"
    extra = sorted(set(message) - MESSAGE_KEYS[role])
    if extra:
        problems.append(f"{where} has non-standard keys: {', '.join(extra)}")
    content = message.get("content")
    if role == "assistant":
        if content is not None and not isinstance(content, str):
            problems.append(f"{where} content must be a string or null")
        if content is None and not message.get("tool_calls"):
            problems.append(f"{where} has neither content nor tool_calls")
    elif not isinstance(content, str):
        problems.append(f"{where} content must be a string")
    if "name" in message and not isinstance(message["name"], str):
        problems.append(f"{where} name must be a string")
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        problems.append(f"{where} has no tool_call_id")
    return role


def validate_messages(messages: Sequence[Mapping[str, Any]], *, complete: bool = True) -> None:
    """Refuse a message list the server must never see; `ValueError` lists every problem.

    Always: each message is an object with a known role and only the standard keys (role,
    content, name; tool_calls on assistant messages; tool_call_id on tool messages), string
    content (an assistant's may be null beside tool calls), well-formed tool calls.
    With `complete` (a whole conversation, as `chat` sends): exactly one system message and it
    is first; every assistant tool call is answered by a tool message with its id in the block
    of tool messages right after it, and no tool message answers a call that is not pending.
    """
    problems: list[str] = []
    if not isinstance(messages, Sequence) or isinstance(messages, str | bytes):
        raise ValueError("messages must be a list of message objects")
    if not messages:
        raise ValueError("messages is empty")
    roles = [_check_message(index, message, problems) for index, message in enumerate(messages)]
    if complete:
        systems = [index for index, role in enumerate(roles) if role == "system"]
        if not systems:
            problems.append("no system message")
        elif len(systems) > 1:
            problems.append(f"{len(systems)} system messages (at {systems}); exactly one allowed")
        elif systems[0] != 0:
            problems.append(f"the system message is at index {systems[0]}, not first")
    pending: dict[str, int] = {}  # call id -> index of the assistant message that made it
    unanswered: list[tuple[str, int]] = []
    for index, (message, role) in enumerate(zip(messages, roles, strict=True)):
        if role != "tool":
            unanswered.extend(pending.items())
            pending = {}
        if role == "assistant" and "tool_calls" in message:
            ids = _check_tool_calls(index, message["tool_calls"], problems)
            pending = dict.fromkeys(ids, index)
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if isinstance(call_id, str):
                if call_id in pending:
                    del pending[call_id]
                elif complete:
                    problems.append(
                        f"message {index} (tool) answers tool call {call_id!r}, "
                        "which is not pending (orphan tool result)"
                    )
    unanswered.extend(pending.items())
    if complete:
        for call_id, origin in unanswered:
            problems.append(f"tool call {call_id!r} of message {origin} has no tool result")
    if problems:
        raise ValueError("invalid messages: " + "; ".join(problems))


def validate_tools(tools: Sequence[Mapping[str, Any]]) -> None:
    """Refuse tool schemas that are not OpenAI function tools with distinct names."""
    problems: list[str] = []
    names: set[str] = set()
    for index, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(tool, dict) or tool.get("type") != "function":
            problems.append(f"tool {index} is not a {{'type': 'function', ...}} object")
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            problems.append(f"tool {index} has no function name")
            continue
        if function["name"] in names:
            problems.append(f"tool name {function['name']!r} appears twice")
        names.add(function["name"])
    if problems:
        raise ValueError("invalid tools: " + "; ".join(problems))


def sendable_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The messages as every server tested takes them: an assistant's null content becomes ""
    (llama-cpp-python answers 500 to null beside tool calls) and tool-call arguments that are not
    a JSON object are re-encoded (`protocol.history_arguments`; llama.cpp answers 500 to them)."""
    sendable: list[dict[str, Any]] = []
    for message in messages:
        if message.get("role") != "assistant":
            sendable.append(dict(message))
            continue
        fixed = dict(message)
        if fixed.get("content") is None:
            fixed["content"] = ""
        calls = fixed.get("tool_calls")
        if isinstance(calls, list):
            fixed["tool_calls"] = [_sendable_call(call) for call in calls]
        sendable.append(fixed)
    return sendable


def _sendable_call(call: Any) -> Any:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("arguments"), str):
        return call
    arguments = history_arguments(function["arguments"])
    if arguments == function["arguments"]:
        return call
    return {**call, "function": {**function, "arguments": arguments}}
