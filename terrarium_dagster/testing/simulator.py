"""A vLLM-protocol simulator for benchmarks: token accounting and prefix caching without a GPU.

`SimulatedVLLM` is an `httpx.BaseTransport` that sits in front of another transport (the offline
backend, a recorded server) or a plain callable that produces the answers. It does what vLLM does
to a chat request before the model sees it, with its own deterministic stand-ins:

- renders the request through a ChatML-style chat template (system with the tool schemas, user,
  assistant with tool calls, tool results grouped in a user turn, the generation prompt);
- tokenizes the text with a deterministic regex tokenizer (about 4 characters per token on
  English, one token per non-ASCII letter, the template's markers as single tokens);
- refuses a prompt that with `max_tokens` exceeds `max_model_len` with vLLM's 400 message;
- accounts automatic prefix caching as vLLM does: the prompt is cut into full blocks of
  `block_size` tokens, each block's hash chains the previous block's, a request reuses the
  leading blocks found in an LRU cache of `cache_blocks` blocks (never the whole prompt: the last
  token is always computed), then its blocks enter the cache; a request's blocks are touched tail
  first so that its prefix is the last to be evicted;
- rewrites `usage` with its own counts (`prompt_tokens`, `completion_tokens`,
  `prompt_tokens_details.cached_tokens`) and serves `/v1/models` and `/tokenize` with the same
  tokenizer.

The blocks of the generated answer are cached with the prompt's, as vLLM keeps a finished
sequence's blocks: the next round, which sends the answer back, reuses them when the template
renders it as generated (here: always, except reasoning, which the next prompt leaves out when
the loop drops it). `stats` keeps the totals a benchmark reports.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import httpx

from terrarium_dagster.backends.wire import (
    content_text,
    error_body,
    last_user_index,
    overflow_message,
    token_id,
)

Message = dict[str, Any]
Answer = Callable[[dict[str, Any]], dict[str, Any]]

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
_TOKEN = re.compile(
    r"<\|im_start\|>|<\|im_end\|>"
    r"| ?[A-Za-z]{1,6}"
    r"| ?[0-9]{1,3}"
    r"| ?[^\W\d_A-Za-z]"
    r"| ?[^\w\s]"
    r"|\n+|[ \t]+|.",
    re.DOTALL,
)
_TOOLS_PREAMBLE = (
    "# Tools\n\nThese functions are available; call them by writing a JSON object with the "
    "function's name and arguments inside <tool_call></tool_call> tags.\n<tools>\n"
)


def tokenize_text(text: str) -> list[str]:
    """The simulator's tokens of `text` (their concatenation is `text`)."""
    return _TOKEN.findall(text)


def token_ids(tokens: Sequence[str]) -> list[int]:
    return [token_id(token) for token in tokens]


def _tool_call_text(call: dict[str, Any]) -> str:
    function = call.get("function") or {}
    arguments = function.get("arguments", "")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, sort_keys=True, ensure_ascii=False)
    name = json.dumps(function.get("name", ""), ensure_ascii=False)
    return f'<tool_call>\n{{"name": {name}, "arguments": {arguments}}}\n</tool_call>'


def render_chat(
    messages: Sequence[Message],
    tools: Sequence[dict[str, Any]] | None = None,
    *,
    add_generation_prompt: bool = True,
) -> str:
    """The prompt text of a chat request, ChatML style."""
    parts: list[str] = []
    rest = list(messages)
    system = None
    if rest and rest[0].get("role") == "system":
        system = content_text(rest.pop(0).get("content"))
    if system is not None or tools:
        text = system or ""
        if tools:
            schemas = "\n".join(
                json.dumps(tool, sort_keys=True, ensure_ascii=False) for tool in tools
            )
            text = (
                f"{text}\n\n{_TOOLS_PREAMBLE}{schemas}\n</tools>"
                if text
                else (f"{_TOOLS_PREAMBLE}{schemas}\n</tools>")
            )
        parts.append(f"{IM_START}system\n{text}{IM_END}\n")
    index = 0
    while index < len(rest):
        message = rest[index]
        role = message.get("role")
        if role == "tool":
            results = []
            while index < len(rest) and rest[index].get("role") == "tool":
                content = content_text(rest[index].get("content"))
                results.append(f"<tool_response>\n{content}\n</tool_response>")
                index += 1
            parts.append(f"{IM_START}user\n" + "\n".join(results) + f"{IM_END}\n")
            continue
        text = content_text(message.get("content"))
        if role == "assistant":
            calls = [_tool_call_text(call) for call in message.get("tool_calls") or []]
            if calls:
                text = (text + "\n" if text else "") + "\n".join(calls)
        parts.append(f"{IM_START}{role}\n{text}{IM_END}\n")
        index += 1
    if add_generation_prompt:
        parts.append(f"{IM_START}assistant\n")
    return "".join(parts)


def completion_text(message: dict[str, Any]) -> str:
    """What the model generated for an answer message (reasoning, content, tool calls)."""
    reasoning = message.get("reasoning_content") or message.get("reasoning") or ""
    text = f"<think>\n{reasoning}\n</think>\n\n" if reasoning else ""
    text += content_text(message.get("content"))
    calls = [_tool_call_text(call) for call in message.get("tool_calls") or []]
    if calls:
        text = (text + "\n" if text else "") + "\n".join(calls)
    return text + IM_END


@dataclass
class CallStat:
    """One chat completion as the simulator accounted it."""

    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    first_line: str  # of the last user message: "# Scene …", "# Task: …"


@dataclass
class SimStats:
    calls: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    largest_prompt: int = 0
    largest_request: int = 0  # prompt + max_tokens
    overflows: int = 0
    tokenize_calls: int = 0
    log: list[CallStat] = field(default_factory=list)

    @property
    def uncached_prompt_tokens(self) -> int:
        return self.prompt_tokens - self.cached_tokens

    def as_dict(self) -> dict[str, int]:
        """The counters (every field but the log) and the uncached prompt tokens."""
        counts = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "log"}
        return {**counts, "uncached_prompt_tokens": self.uncached_prompt_tokens}


class PrefixCache:
    """vLLM-style automatic prefix caching over token blocks, with LRU eviction."""

    def __init__(self, *, block_size: int = 16, capacity: int = 4096) -> None:
        if block_size < 1 or capacity < 1:
            raise ValueError("block_size and capacity must be positive")
        self.block_size = block_size
        self.capacity = capacity
        self._blocks: OrderedDict[bytes, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._blocks)

    def block_hashes(self, tokens: Sequence[str]) -> list[bytes]:
        """Chained hashes of the full blocks of `tokens`."""
        hashes: list[bytes] = []
        previous = b""
        full = len(tokens) // self.block_size * self.block_size
        for start in range(0, full, self.block_size):
            block = "\x00".join(tokens[start : start + self.block_size]).encode()
            previous = hashlib.blake2b(previous + b"\x01" + block, digest_size=16).digest()
            hashes.append(previous)
        return hashes

    def lookup(self, tokens: Sequence[str]) -> int:
        """Cached tokens for a prompt of `tokens`: its leading full blocks found in the cache,
        never the whole prompt (the last token is always computed)."""
        usable = (len(tokens) - 1) // self.block_size
        hits = 0
        for digest in self.block_hashes(tokens[: usable * self.block_size]):
            if digest not in self._blocks:
                break
            hits += 1
        return hits * self.block_size

    def insert(self, tokens: Sequence[str]) -> None:
        """Cache the full blocks of `tokens`, touched tail first so the prefix is evicted last."""
        for digest in reversed(self.block_hashes(tokens)):
            self._blocks[digest] = None
            self._blocks.move_to_end(digest)
        while len(self._blocks) > self.capacity:
            self._blocks.popitem(last=False)

    def lookup_and_insert(self, tokens: Sequence[str]) -> int:
        cached = self.lookup(tokens)
        self.insert(tokens)
        return cached

    def clear(self) -> None:
        self._blocks.clear()


class SimulatedVLLM(httpx.BaseTransport):
    """vLLM's request accounting in front of a transport or callable that answers."""

    def __init__(
        self,
        inner: httpx.BaseTransport | Answer,
        *,
        max_model_len: int,
        block_size: int = 16,
        cache_blocks: int = 4096,
        model: str = "simulated",
    ) -> None:
        self.inner = inner
        self.max_model_len = max_model_len
        self.model = model
        self.cache = PrefixCache(block_size=block_size, capacity=cache_blocks)
        self.stats = SimStats()
        self._lock = threading.Lock()

    # -- accounting ---------------------------------------------------------------------------

    def prompt_tokens(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] | None = None
    ) -> list[str]:
        return tokenize_text(render_chat(messages, tools))

    def count(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] | None = None
    ) -> int:
        """Prompt tokens of a chat request, as this server counts them."""
        return len(self.prompt_tokens(messages, tools))

    def reset(self) -> None:
        with self._lock:
            self.cache.clear()
            self.stats = SimStats()

    # -- transport ----------------------------------------------------------------------------

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path.rstrip("/")
        if request.method == "GET" and path.endswith("/models"):
            return self._models(request)
        if request.method == "POST" and path.endswith("/tokenize"):
            return self._tokenize(request)
        if request.method == "POST" and path.endswith("/chat/completions"):
            return self._chat(request)
        if isinstance(self.inner, httpx.BaseTransport):
            return self.inner.handle_request(request)
        return _error(404, f"no route for {request.method} {path}", "NotFoundError")

    def close(self) -> None:
        if isinstance(self.inner, httpx.BaseTransport):
            self.inner.close()

    def _models(self, request: httpx.Request) -> httpx.Response:
        data: list[dict[str, Any]] = []
        if isinstance(self.inner, httpx.BaseTransport):
            response = self.inner.handle_request(request)
            response.read()
            if response.status_code == 200:
                data = list(response.json().get("data") or [])
        if not data:
            data = [{"id": self.model, "object": "model", "owned_by": "simulator"}]
        for model in data:
            model["max_model_len"] = self.max_model_len
        return httpx.Response(200, json={"object": "list", "data": data})

    def _tokenize(self, request: httpx.Request) -> httpx.Response:
        try:
            body = json.loads(request.content or b"{}")
        except json.JSONDecodeError as exc:
            return _error(400, f"invalid JSON: {exc}")
        if "messages" in body:
            text = render_chat(
                body["messages"],
                body.get("tools"),
                add_generation_prompt=body.get("add_generation_prompt", True),
            )
        else:
            text = str(body.get("prompt", ""))
        tokens = tokenize_text(text)
        with self._lock:
            self.stats.tokenize_calls += 1
        return httpx.Response(
            200,
            json={
                "count": len(tokens),
                "max_model_len": self.max_model_len,
                "tokens": token_ids(tokens),
            },
        )

    def _chat(self, request: httpx.Request) -> httpx.Response:
        try:
            body = json.loads(request.content or b"{}")
        except json.JSONDecodeError as exc:
            return _error(400, f"invalid JSON: {exc}")
        if body.get("stream"):
            return _error(400, "the simulator does not stream")
        messages = body.get("messages") or []
        tools = body.get("tools")
        tokens = self.prompt_tokens(messages, tools)
        prompt = len(tokens)
        max_tokens = body.get("max_tokens") or body.get("max_completion_tokens")
        requested = prompt + int(max_tokens or 0)
        if prompt >= self.max_model_len or requested > self.max_model_len:
            with self._lock:
                self.stats.overflows += 1
            wanted = int(max_tokens) if max_tokens else None
            return _error(400, overflow_message(self.max_model_len, prompt, wanted))
        with self._lock:
            cached = self.cache.lookup_and_insert(tokens)
        response = self._answer(request, body)
        if response.status_code != 200:
            return response
        payload = response.json()
        choices = payload.get("choices") or []
        message = (choices[0].get("message") if choices else None) or {}
        generated = tokenize_text(completion_text(message))
        completion = len(generated)
        with self._lock:  # like vLLM, the finished sequence's blocks stay cached
            self.cache.insert([*tokens, *generated])
        payload["usage"] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        }
        with self._lock:
            stats = self.stats
            stats.calls += 1
            stats.prompt_tokens += prompt
            stats.cached_tokens += cached
            stats.completion_tokens += completion
            stats.largest_prompt = max(stats.largest_prompt, prompt)
            stats.largest_request = max(stats.largest_request, requested)
            stats.log.append(CallStat(prompt, cached, completion, _last_user_first_line(messages)))
        return httpx.Response(200, json=payload)

    def _answer(self, request: httpx.Request, body: dict[str, Any]) -> httpx.Response:
        if isinstance(self.inner, httpx.BaseTransport):
            forwarded = httpx.Request(
                request.method, request.url, headers=request.headers, content=request.content
            )
            response = self.inner.handle_request(forwarded)
            response.read()
            return response
        payload = self.inner(body)
        if "choices" not in payload:  # a bare message
            payload = {
                "id": "chatcmpl-sim",
                "object": "chat.completion",
                "model": body.get("model") or self.model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", **payload},
                        "finish_reason": "tool_calls" if payload.get("tool_calls") else "stop",
                    }
                ],
            }
        return httpx.Response(200, json=payload)


def _error(status: int, message: str, kind: str = "BadRequestError") -> httpx.Response:
    return httpx.Response(status, json={"error": error_body(message, status, kind)})


def _last_user_first_line(messages: Sequence[Message]) -> str:
    index = last_user_index(messages)
    if index is None:
        return ""
    return content_text(messages[index].get("content")).split("\n", 1)[0][:80]
