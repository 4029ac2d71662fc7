"""vLLM's OpenAI-compatible wire format, the pieces every in-process stand-in shares.

The offline backend answers with them, and the benchmarks' vLLM simulator
(`terrarium_dagster.testing.simulator`) uses the same ones rather than copies: how a message's
content reads as text, which message is the last user turn, vLLM's error body and its
"maximum context length" message, and a deterministic token id.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from typing import Any

VOCAB_SIZE = 151_000


def content_text(content: Any) -> str:
    """A message's content as text (a string, or OpenAI content parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return str(content)


def last_user_index(messages: Sequence[Mapping[str, Any]]) -> int | None:
    """The index of the last user message, or None when there is none."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user":
            return index
    return None


def token_id(piece: str) -> int:
    """A deterministic token id for a piece of text."""
    return zlib.crc32(piece.encode()) % VOCAB_SIZE


def error_body(message: str, status: int, kind: str = "BadRequestError") -> dict[str, Any]:
    """The `error` object of an OpenAI-style error response."""
    return {"message": message, "type": kind, "param": None, "code": status}


def overflow_message(max_model_len: int, prompt: int, max_tokens: int | None) -> str:
    """vLLM's 400 message for a request beyond the model's window."""
    if max_tokens is not None:
        return (
            f"This model's maximum context length is {max_model_len} tokens. However, "
            f"you requested {prompt + max_tokens} tokens ({prompt} in the messages, "
            f"{max_tokens} in the completion). Please reduce the length of the messages or "
            "completion."
        )
    return (
        f"This model's maximum context length is {max_model_len} tokens. However, your "
        f"request has {prompt} input tokens. Please reduce the length of the input messages."
    )
