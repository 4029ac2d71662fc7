"""What a server says when it refuses a request: the window's numbers in a context overflow
(vLLM's, llama.cpp's and llama-cpp-python's wordings), the error object beside the message, and
the message itself on one line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import httpx

from terrarium_dagster.errors import ContextOverflowError

MESSAGE_LIMIT = 500
_SERVER_MESSAGE_LIMIT = 8000  # a server's error is shown whole (only a runaway one is cut)


class ServerContextOverflow(ContextOverflowError):
    """The server refused the request because prompt (+ max_tokens) exceed the model's window.

    The numbers are parsed from the server's message when it states them (None otherwise):
    `max_context_length` (the window), `requested_tokens` (prompt + completion asked for, or the
    least total the message proves), `prompt_tokens` (the prompt alone).
    """

    def __init__(
        self,
        server_message: str,
        *,
        status: int,
        max_context_length: int | None,
        requested_tokens: int | None,
        prompt_tokens: int | None,
    ) -> None:
        super().__init__(f"context overflow (HTTP {status}): {server_message}")
        self.server_message = server_message
        self.status = status
        self.max_context_length = max_context_length
        self.requested_tokens = requested_tokens
        self.prompt_tokens = prompt_tokens


# --- context-overflow messages -------------------------------------------------------------
# vLLM's wordings over its versions (all HTTP 400, matched case-insensitively):
#   <=0.9   "This model's maximum context length is L tokens. However, you requested T tokens
#            (P in the messages, C in the completion). Please reduce ..."
#   0.10-17 "This model's maximum context length is L tokens. However, your request has P input
#            tokens. ..." / "'max_tokens' or 'max_completion_tokens' is too large: C. This
#            model's maximum context length is L tokens and your request has P input tokens ..."
#   0.18+   "This model's maximum context length is L tokens. However, you requested C output
#            tokens and your prompt contains [at least] P input tokens, for a total of
#            [at least] T tokens. ..." (or "... contains N characters (more than ...")
#   renderer "You passed P input tokens and requested C output tokens. However, the model's
#            context length is only L tokens, resulting in a maximum input length of K tokens."
#   V1 engine "The decoder prompt (length P) is longer than the maximum model length of L."
# llama.cpp's llama-server (HTTP 400, `type: exceed_context_size_error`, `n_prompt_tokens` and
# `n_ctx` beside the message):
#           "request (P tokens) exceeds the available context size (L tokens), try increasing it"
#           "input (P tokens) is larger than the max context size (L tokens). skipping"
#           (older: "the request exceeds the available context size, try increasing it")
# llama-cpp-python: its server rewrites the error into vLLM <=0.9's wording above (with
#           `code: context_length_exceeded`); the library's own words, seen where it does not:
#           "Requested tokens (P) exceed context window of L"
_OVERFLOW_MARKERS = re.compile(
    r"maximum context length|context length is only|maximum model length|context_length_exceeded"
    r"|exceeds? the available context size|larger than the max context size"
    r"|exceed_context_size_error|exceed context window",
    re.IGNORECASE,
)


def _ignoring_case(*patterns: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(pattern, re.IGNORECASE) for pattern in patterns)


_LIMIT_PATTERNS = _ignoring_case(
    r"maximum context length is (\d+)",
    r"context length is only (\d+)",
    r"maximum model length of (\d+)",
    r"available context size \((\d+) tokens\)",
    r"max context size \((\d+) tokens\)",
    r"exceed context window of (\d+)",
)
_PROMPT_PATTERNS = _ignoring_case(
    r"prompt contains (?:at least )?(\d+) input tokens",
    r"request has (\d+) input tokens",
    r"\((\d+) in the messages",
    r"requested (\d+) tokens in the messages",
    r"you passed (\d+) input tokens",
    r"decoder prompt \(length (\d+)\)",
    r"request \((\d+) tokens\) exceeds",
    r"input \((\d+) tokens\) is larger",
    r"requested tokens \((\d+)\) exceed",
)
_TOTAL_PATTERN = re.compile(r"for a total of (?:at least )?(\d+) tokens", re.IGNORECASE)
_REQUESTED_TOTAL_PATTERN = re.compile(r"you requested (\d+) tokens", re.IGNORECASE)
_OUTPUT_PATTERNS = (
    re.compile(r"requested (\d+) output tokens", re.IGNORECASE),
    re.compile(r"is too large: (\d+)", re.IGNORECASE),
)


def _first_int(patterns: Iterable[re.Pattern[str]], text: str) -> int | None:
    for pattern in patterns:
        match = pattern.search(text)
        if match:
            return int(match.group(1))
    return None


def parse_context_overflow(
    message: str, details: Mapping[str, Any] | None = None
) -> tuple[int | None, int | None, int | None] | None:
    """(max_context_length, requested_tokens, prompt_tokens) if `message` is a context overflow.

    None when the message is not about the context window. Any number the message does not
    state is None. `details` is the error object beside the message, where a server puts the
    numbers as fields (llama.cpp: `type`, `n_ctx`, `n_prompt_tokens`).
    """
    details = details or {}
    kind = str(details.get("type") or "") + " " + str(details.get("code") or "")
    if not _OVERFLOW_MARKERS.search(message) and not _OVERFLOW_MARKERS.search(kind):
        return None
    limit = _first_int(_LIMIT_PATTERNS, message)
    prompt = _first_int(_PROMPT_PATTERNS, message)
    if limit is None and _positive_int(details.get("n_ctx")):
        limit = int(details["n_ctx"])
    if prompt is None and _positive_int(details.get("n_prompt_tokens")):
        prompt = int(details["n_prompt_tokens"])
    requested: int | None = None
    total = _TOTAL_PATTERN.search(message) or _REQUESTED_TOTAL_PATTERN.search(message)
    if total:
        requested = int(total.group(1))
    elif prompt is not None:
        output = _first_int(_OUTPUT_PATTERNS, message)
        requested = prompt + (output or 0)
    return limit, requested, prompt


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def one_line(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """`text` on one line, cut at `limit` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def error_details(response: httpx.Response) -> dict[str, Any]:
    """The error object of a failed response (`{"error": {...}}`), or {} when there is none."""
    try:
        data = response.json()
    except ValueError:
        return {}
    error = data.get("error") if isinstance(data, dict) else None
    return error if isinstance(error, dict) else {}


def server_message(response: httpx.Response) -> str:
    """The error text of a failed response, whole (on one line), from the OpenAI-style envelope
    vLLM, llama.cpp and llama-cpp-python use, or whatever else came back."""
    limit = _SERVER_MESSAGE_LIMIT
    try:
        data = response.json()
    except ValueError:
        return one_line(response.text, limit) or response.reason_phrase or "(empty body)"
    found: Any = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict):
            found = error.get("message")
        elif isinstance(error, str):
            found = error
        if found is None:
            found = data.get("message", data.get("detail"))
    if found is None:
        found = data
    if not isinstance(found, str):
        found = json.dumps(found, sort_keys=True, ensure_ascii=False)
    return one_line(found, limit) or "(empty message)"
