"""The offline backend's tokenizer: a deterministic count of a chat request's tokens.

About 4 characters a token; what `/tokenize` and `usage.prompt_tokens` report, and what
`max_tokens` and `max_model_len` are measured in.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from terrarium_dagster.backends.wire import content_text, token_id
from terrarium_dagster.jsonform import canonical_json

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = 4
GENERATION_PROMPT_TOKENS = 3
TOOLS_OVERHEAD_TOKENS = 10


def count_tokens(text: str) -> int:
    """Deterministic stand-in for a tokenizer: one token per 4 characters, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


def count_message_tokens(message: Mapping[str, Any]) -> int:
    tokens = MESSAGE_OVERHEAD_TOKENS + count_tokens(str(message.get("role", "")))
    tokens += count_tokens(content_text(message.get("content")))
    if message.get("tool_calls"):
        tokens += count_tokens(canonical_json(message["tool_calls"]))
    if message.get("tool_call_id"):
        tokens += count_tokens(str(message["tool_call_id"]))
    return tokens


def count_prompt_tokens(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None = None,
    *,
    add_generation_prompt: bool = True,
) -> int:
    """The prompt tokens of a chat request, as `/tokenize` and `usage.prompt_tokens` report."""
    total = sum(count_message_tokens(message) for message in messages)
    if tools:
        total += TOOLS_OVERHEAD_TOKENS + count_tokens(canonical_json(list(tools)))
    if add_generation_prompt:
        total += GENERATION_PROMPT_TOKENS
    return total


def token_ids(text: str) -> list[int]:
    """Deterministic token ids, one for every 4 characters."""
    return [token_id(text[i : i + 4]) for i in range(0, len(text), 4)]
