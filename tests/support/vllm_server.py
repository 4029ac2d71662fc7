"""A scripted, vLLM-compatible HTTP server on 127.0.0.1 for tests (stdlib only).

It speaks the parts of vLLM's OpenAI-compatible API the engine uses, with vLLM's shapes:

- `GET /v1/models`: `{"object": "list", "data": [{"id", "max_model_len", ...}]}`;
- `POST /v1/chat/completions`: answers come from a SCRIPT, a queue of steps, each a `Reply`
  (content, tool calls, reasoning, usage), a `Fault` (HTTP errors, timeouts, dropped connections,
  malformed bodies, misbehaving model output) or a callable `(RecordedRequest) -> Reply | Fault`.
  When the script is empty, `fallback(request)` answers, or a plain `Reply()` ("done");
- `POST /tokenize` (at the root, like vLLM): `{"count", "max_model_len", "tokens"}` with a
  deterministic count; `tokenize_enabled = False` makes it a 404 like a server without it;
- `GET /health`: 200.

Like vLLM, a chat request whose prompt count + `max_tokens` exceeds `max_model_len` gets a 400
with vLLM's context-overflow message (before a script step is consumed), unless
`enforce_context = False`. The prompt count of a chat request equals the /tokenize count of the
same messages and tools (`count_tokens`), so token accounting can be checked exactly.

Every request is recorded (`requests`, `chat_requests`, `chat_bodies`) for assertions.

Use the `vllm_server` fixture (function-scoped, always stopped) or `run_vllm_server(...)`:

    def test_x(vllm_server: ScriptedVLLM) -> None:
        vllm_server.script(Fault.unavailable(), Reply(tool_calls=[("read_post", '{"post_id": 1}')]))
        client = ChatClient(ClientConfig(base_url=vllm_server.url))
"""

from __future__ import annotations

import contextlib
import json
import math
import socket
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import pytest

DEFAULT_MODEL = "test-model"
DEFAULT_MAX_MODEL_LEN = 32768
CHAT_PATH = "/v1/chat/completions"
MODELS_PATH = "/v1/models"
TOKENIZE_PATH = "/tokenize"

ReasoningField = Literal["reasoning", "reasoning_content", "both"]
OverflowStyle = Literal["v0.18", "v0.10", "v0.10-max-tokens", "v0.9", "renderer", "decoder"]


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received: `json` is the parsed body (None if not JSON)."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes
    json: Any

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.json.get("messages") or []) if isinstance(self.json, dict) else []

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self.json.get("tools") or []) if isinstance(self.json, dict) else []


@dataclass(frozen=True)
class Reply:
    """A well-formed chat completion.

    `content` None means "done" when there are no tool calls (None beside tool calls); pass ""
    for an empty answer. `tool_calls` are `(name, arguments_json_text)` or
    `(name, arguments_json_text, call_id)`; ids default to `chatcmpl-tool-<n>`.
    `reasoning` is put in `reasoning_field` ("reasoning", vLLM >= 0.16; "reasoning_content",
    older; "both", 0.11.1-0.15). `finish_reason` defaults to "tool_calls" or "stop".
    `prompt_tokens` defaults to the server's count of the request, `completion_tokens` to a
    count of the reply; `cached_tokens` None leaves `prompt_tokens_details` null (a server
    without --enable-prompt-tokens-details). `delay_s` waits before answering. A call id of ""
    sends the call without an `id`; `omit_usage` sends no `usage` (servers that misbehave).
    """

    content: str | None = None
    tool_calls: Sequence[tuple[str, str] | tuple[str, str, str]] = ()
    reasoning: str | None = None
    reasoning_field: ReasoningField = "reasoning"
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    delay_s: float = 0.0
    omit_usage: bool = False

    # -- replies that decide nothing (a reasoning model's, served without a reasoning parser or
    # -- with too few max_tokens): the engine must ask again, never take them as an answer

    @classmethod
    def reasoning_only(cls, reasoning: str = "Let me think about the terms here.") -> Reply:
        """All reasoning, no answer: `reasoning` set, content "" and no tool call."""
        return cls(content="", reasoning=reasoning)

    @classmethod
    def think_only(cls, thought: str = "The scene names a new place; I should record") -> Reply:
        """A `<think>` block in the content and nothing after it (no reasoning parser)."""
        return cls(content=f"<think>{thought}</think>\n")

    @classmethod
    def cut(cls, content: str = '{"decisions": [{"entry_id": "E1", "deci', **calls: Any) -> Reply:
        """Cut off by max_tokens: `finish_reason: length` (beside `tool_calls=` if given)."""
        return cls(content=content, finish_reason="length", **calls)


FaultKind = Literal[
    "http",
    "context_overflow",
    "timeout",
    "drop",
    "malformed_json",
    "bad_schema",
    "html",
    "no_choices",
    "bad_arguments",
    "unknown_tool",
    "empty",
]


@dataclass(frozen=True)
class Fault:
    """A failure to inject. Build one with the class methods; `kind` says what happens.

    Transport/HTTP faults: `http` (status + vLLM error envelope, optional Retry-After),
    `context_overflow` (400 with vLLM's wording), `timeout` (no answer for `delay_s`, then the
    connection is closed), `drop` (connection closed without a response), `malformed_json` (200
    with a truncated JSON body), `bad_schema` (200, valid JSON missing required fields), `html`
    (200 with an HTML page), `no_choices` (200, a completion with an empty `choices` list).
    Model misbehaviour (200, valid body): `bad_arguments` (tool-call arguments that are not valid
    JSON), `unknown_tool` (a call to a tool nobody declared), `empty` (no content, no tool calls).
    """

    kind: FaultKind
    status: int = 500
    message: str = ""
    retry_after: str | None = None
    delay_s: float = 0.0
    tool_name: str = ""
    arguments: str = ""
    overflow_style: OverflowStyle = "v0.18"
    prompt_tokens: int | None = None
    null_content: bool = False

    @classmethod
    def http(cls, status: int, message: str = "", retry_after: float | str | None = None) -> Fault:
        text = message or _DEFAULT_MESSAGES.get(status, f"HTTP {status}")
        after = None if retry_after is None else _header_value(retry_after)
        return cls(kind="http", status=status, message=text, retry_after=after)

    @classmethod
    def server_error(cls, message: str = "") -> Fault:
        """HTTP 500."""
        return cls.http(500, message)

    @classmethod
    def unavailable(cls, message: str = "", retry_after: float | str | None = None) -> Fault:
        """HTTP 503 (engine sleeping, restarting, overloaded)."""
        return cls.http(503, message, retry_after)

    @classmethod
    def rate_limited(cls, retry_after: float | str | None = 1, message: str = "") -> Fault:
        """HTTP 429 with a Retry-After header (seconds or an HTTP date; None: no header)."""
        return cls.http(429, message, retry_after)

    @classmethod
    def bad_request(cls, message: str = "invalid request") -> Fault:
        """HTTP 400 that is not about the context window."""
        return cls.http(400, message)

    @classmethod
    def context_overflow(
        cls, style: OverflowStyle = "v0.18", prompt_tokens: int | None = None
    ) -> Fault:
        """HTTP 400 with vLLM's context-length message. The numbers come from the request
        (its prompt count, unless `prompt_tokens` is given, and its `max_tokens`) and the
        server's `max_model_len`; `style` picks the vLLM version's wording."""
        return cls(
            kind="context_overflow", status=400, overflow_style=style, prompt_tokens=prompt_tokens
        )

    @classmethod
    def timeout(cls, delay_s: float = 5.0) -> Fault:
        """Say nothing for `delay_s` (longer than the client's read timeout), then hang up."""
        return cls(kind="timeout", delay_s=delay_s)

    @classmethod
    def drop(cls) -> Fault:
        """Close the connection after reading the request, without any response."""
        return cls(kind="drop")

    @classmethod
    def malformed_json(cls) -> Fault:
        return cls(kind="malformed_json", status=200)

    @classmethod
    def bad_schema(cls) -> Fault:
        return cls(kind="bad_schema", status=200)

    @classmethod
    def html(cls) -> Fault:
        """200 with an HTML page (a proxy's or a login page) instead of JSON."""
        return cls(kind="html", status=200)

    @classmethod
    def no_choices(cls) -> Fault:
        """200, a chat completion whose `choices` list is empty."""
        return cls(kind="no_choices", status=200)

    @classmethod
    def bad_arguments(
        cls, tool_name: str = "glossary_create", arguments: str = '{"term": "Ashfall", "defin'
    ) -> Fault:
        return cls(kind="bad_arguments", status=200, tool_name=tool_name, arguments=arguments)

    @classmethod
    def unknown_tool(cls, tool_name: str = "summon_dragon", arguments: str = "{}") -> Fault:
        return cls(kind="unknown_tool", status=200, tool_name=tool_name, arguments=arguments)

    @classmethod
    def empty_reply(cls, null_content: bool = False) -> Fault:
        """A reply with no tool calls and content "" (or null with `null_content`)."""
        return cls(kind="empty", status=200, null_content=null_content)


Step = Reply | Fault | Callable[[RecordedRequest], Reply | Fault]

_DEFAULT_MESSAGES = {
    400: "invalid request",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}
_ERROR_TYPES = {
    400: "BadRequestError",
    401: "Unauthorized",
    404: "NotFoundError",
    429: "RateLimitError",
    500: "InternalServerError",
    503: "ServiceUnavailableError",
}
_CREATED = 1_750_000_000


def _header_value(value: float | str) -> str:
    if isinstance(value, str):
        return value
    return f"{value:g}"


def default_token_count(body: Mapping[str, Any]) -> int:
    """About one token per four characters of the canonical JSON of messages and tools."""
    payload = {"messages": body.get("messages") or [], "tools": body.get("tools") or []}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return max(1, math.ceil(len(text) / 4))


def _text_tokens(*texts: str | None) -> int:
    return max(1, math.ceil(sum(len(text) for text in texts if text) / 4))


def overflow_message(style: OverflowStyle, limit: int, prompt: int, completion: int) -> str:
    """vLLM's context-length refusal, worded as the given vLLM version words it."""
    total = prompt + completion
    if style == "v0.18":
        return (
            f"This model's maximum context length is {limit} tokens. However, you requested "
            f"{completion} output tokens and your prompt contains at least {prompt} input "
            f"tokens, for a total of at least {total} tokens. Please reduce the length of the "
            f"input prompt or the number of requested output tokens. "
            f"(parameter=input_tokens, value={prompt})"
        )
    if style == "v0.10":
        return (
            f"This model's maximum context length is {limit} tokens. However, your request has "
            f"{prompt} input tokens. Please reduce the length of the input messages."
        )
    if style == "v0.10-max-tokens":
        return (
            f"'max_tokens' or 'max_completion_tokens' is too large: {completion}. This model's "
            f"maximum context length is {limit} tokens and your request has {prompt} input "
            f"tokens ({completion} > {limit} - {prompt})."
        )
    if style == "v0.9":
        return (
            f"This model's maximum context length is {limit} tokens. However, you requested "
            f"{total} tokens ({prompt} in the messages, {completion} in the completion). "
            f"Please reduce the length of the messages or completion."
        )
    if style == "renderer":
        return (
            f"You passed {prompt} input tokens and requested {completion} output tokens. "
            f"However, the model's context length is only {limit} tokens, resulting in a "
            f"maximum input length of {limit - completion} tokens. Please reduce the length "
            f"of the input prompt."
        )
    return (
        f"The decoder prompt (length {prompt}) is longer than the maximum model length of "
        f"{limit}. Make sure that `max_model_len` is no smaller than the number of text tokens."
    )


@dataclass
class _Response:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    action: Literal["send", "drop", "hang"] = "send"
    delay_s: float = 0.0


def _json_response(status: int, payload: Any, headers: dict[str, str] | None = None) -> _Response:
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    return _Response(status, body, {"Content-Type": "application/json", **(headers or {})})


def _error_response(
    status: int, message: str, *, param: str | None = None, headers: dict[str, str] | None = None
) -> _Response:
    envelope = {
        "error": {
            "message": message,
            "type": _ERROR_TYPES.get(status, "Error"),
            "param": param,
            "code": status,
        }
    }
    return _json_response(status, envelope, headers)


class ScriptedVLLM:
    """The server. Public attributes may be changed at any time (under the GIL, between
    requests): `models` [(id, max_model_len)], `max_model_len` (of the first model),
    `tokenize_enabled`, `enforce_context`, `fallback`, `token_counter`, `api_key`."""

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        max_model_len: int | None = DEFAULT_MAX_MODEL_LEN,
        extra_models: Sequence[tuple[str, int | None]] = (),
        tokenize_enabled: bool = True,
        enforce_context: bool = True,
        fallback: Callable[[RecordedRequest], Reply | Fault] | None = None,
        token_counter: Callable[[Mapping[str, Any]], int] = default_token_count,
        api_key: str | None = None,
    ) -> None:
        self.models: list[tuple[str, int | None]] = [(model, max_model_len), *extra_models]
        self.tokenize_enabled = tokenize_enabled
        self.enforce_context = enforce_context
        self.fallback = fallback
        self.token_counter = token_counter
        self.api_key = api_key
        self._lock = threading.Lock()
        self._steps: deque[Step] = deque()
        self._path_faults: dict[str, deque[Fault]] = {}
        self._requests: list[RecordedRequest] = []
        self._sequence = 0
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> ScriptedVLLM:
        if self._httpd is not None:
            raise RuntimeError("server already started")
        self._stopping.clear()
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler, self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"scripted-vllm-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, hang up every open connection, join the threads. Idempotent."""
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        httpd.server_close()  # joins the handler threads
        if thread is not None:
            thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> ScriptedVLLM:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The server root, e.g. http://127.0.0.1:41234 (clients add /v1)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        return self.url + "/v1"

    @property
    def max_model_len(self) -> int | None:
        return self.models[0][1]

    @max_model_len.setter
    def max_model_len(self, value: int | None) -> None:
        self.models[0] = (self.models[0][0], value)

    @property
    def model(self) -> str:
        return self.models[0][0]

    # -- scripting ------------------------------------------------------------------------------

    def script(self, *steps: Step) -> ScriptedVLLM:
        """Queue answers for the next chat completions, in order."""
        with self._lock:
            self._steps.extend(steps)
        return self

    enqueue = script

    def fail_next(self, path: str, *faults: Fault) -> ScriptedVLLM:
        """Answer the next requests to `path` (any endpoint, e.g. "/v1/models", "/tokenize")
        with these faults before anything else (the chat script is not consumed by them)."""
        with self._lock:
            self._path_faults.setdefault(path, deque()).extend(faults)
        return self

    @property
    def pending_steps(self) -> int:
        with self._lock:
            return len(self._steps)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [request for request in self.requests if request.path == CHAT_PATH]

    @property
    def chat_bodies(self) -> list[dict[str, Any]]:
        return [request.json for request in self.chat_requests]

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [request for request in self.requests if request.path == path]

    def count_tokens(self, body: Mapping[str, Any]) -> int:
        """The prompt count this server reports for a chat or tokenize body."""
        return self.token_counter(body)

    # -- request handling (called from handler threads) -----------------------------------------

    def _register(self, connection: socket.socket, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def _next_number(self) -> int:
        with self._lock:
            self._sequence += 1
            return self._sequence

    def _handle(self, request: RecordedRequest) -> _Response:
        with self._lock:
            self._requests.append(request)
            faults = self._path_faults.get(request.path)
            injected = faults.popleft() if faults else None
        if injected is not None:
            return self._render_fault(injected, request)
        if (
            self.api_key is not None
            and request.path.startswith("/v1")
            and request.headers.get("authorization") != f"Bearer {self.api_key}"
        ):
            return _json_response(401, {"error": "Unauthorized"})
        routes = {
            MODELS_PATH: ("GET", self._models),
            CHAT_PATH: ("POST", self._chat),
            TOKENIZE_PATH: ("POST", self._tokenize),
            "/health": ("GET", lambda _request: _Response(200)),
        }
        route = routes.get(request.path)
        if route is None or (request.path == TOKENIZE_PATH and not self.tokenize_enabled):
            return _json_response(404, {"detail": "Not Found"})
        method, handler = route
        if request.method != method:
            return _json_response(405, {"detail": "Method Not Allowed"})
        if method == "POST" and not isinstance(request.json, dict):
            return _error_response(400, "request body is not a JSON object")
        return handler(request)

    def _models(self, request: RecordedRequest) -> _Response:
        data = [
            {
                "id": model_id,
                "object": "model",
                "created": _CREATED,
                "owned_by": "vllm",
                "root": f"/models/{model_id}",
                "parent": None,
                "max_model_len": length,
                "permission": [],
            }
            for model_id, length in self.models
        ]
        return _json_response(200, {"object": "list", "data": data})

    def _unknown_model(self, body: Mapping[str, Any]) -> _Response | None:
        name = body.get("model")
        if name is None or any(name == model_id for model_id, _ in self.models):
            return None
        return _error_response(404, f"The model `{name}` does not exist.", param="model")

    def _tokenize(self, request: RecordedRequest) -> _Response:
        body = request.json
        refused = self._unknown_model(body)
        if refused is not None:
            return refused
        count = self.count_tokens(body)
        payload = {
            "count": count,
            "max_model_len": self.max_model_len,
            "tokens": list(range(count)),
        }
        return _json_response(200, payload)

    def _chat(self, request: RecordedRequest) -> _Response:
        body = request.json
        refused = self._unknown_model(body)
        if refused is not None:
            return refused
        limit = self.max_model_len
        if self.enforce_context and limit is not None:
            prompt = self.count_tokens(body)
            completion = int(body.get("max_tokens") or 0)
            if prompt + completion > limit:
                message = overflow_message("v0.18", limit, prompt, completion)
                return _error_response(400, message, param="input_tokens")
        with self._lock:
            step: Step | None = self._steps.popleft() if self._steps else None
        if step is None:
            step = self.fallback if self.fallback is not None else Reply()
        if callable(step) and not isinstance(step, Reply | Fault):
            step = step(request)
        if isinstance(step, Fault):
            return self._render_fault(step, request)
        return self._render_reply(step, request)

    def _render_reply(self, reply: Reply, request: RecordedRequest) -> _Response:
        number = self._next_number()
        calls = []
        for position, spec in enumerate(reply.tool_calls):
            name, arguments = spec[0], spec[1]
            call_id = spec[2] if len(spec) > 2 else f"chatcmpl-tool-{number:08d}{position:04d}"
            call = {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
            if call_id == "":
                del call["id"]
            calls.append(call)
        content = reply.content
        if content is None and not calls:
            content = "done"
        message: dict[str, Any] = {"role": "assistant", "content": content, "tool_calls": calls}
        if reply.reasoning_field in ("reasoning", "both"):
            message["reasoning"] = reply.reasoning
        if reply.reasoning_field in ("reasoning_content", "both"):
            message["reasoning_content"] = reply.reasoning
        prompt = (
            reply.prompt_tokens
            if reply.prompt_tokens is not None
            else self.count_tokens(request.json)
        )
        completion = reply.completion_tokens
        if completion is None:
            texts = [content, reply.reasoning] + [call["function"]["arguments"] for call in calls]
            completion = _text_tokens(*texts)
        details = None if reply.cached_tokens is None else {"cached_tokens": reply.cached_tokens}
        payload = {
            "id": f"chatcmpl-{number:032d}",
            "object": "chat.completion",
            "created": _CREATED + number,
            "model": request.json.get("model") or self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": reply.finish_reason or ("tool_calls" if calls else "stop"),
                    "stop_reason": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "total_tokens": prompt + completion,
                "completion_tokens": completion,
                "prompt_tokens_details": details,
            },
            "prompt_logprobs": None,
            "kv_transfer_params": None,
        }
        if reply.omit_usage:
            del payload["usage"]
        response = _json_response(200, payload)
        response.delay_s = reply.delay_s
        return response

    def _render_fault(self, fault: Fault, request: RecordedRequest) -> _Response:
        kind = fault.kind
        if kind == "http":
            headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            return _error_response(fault.status, fault.message, headers=headers)
        if kind == "context_overflow":
            body = request.json if isinstance(request.json, dict) else {}
            prompt = fault.prompt_tokens
            if prompt is None:
                prompt = self.count_tokens(body)
            completion = int(body.get("max_tokens") or 0)
            limit = self.max_model_len or DEFAULT_MAX_MODEL_LEN
            message = overflow_message(fault.overflow_style, limit, prompt, completion)
            return _error_response(400, message, param="input_tokens")
        if kind == "timeout":
            return _Response(0, action="hang", delay_s=fault.delay_s)
        if kind == "drop":
            return _Response(0, action="drop")
        if kind == "malformed_json":
            truncated = b'{"id": "chatcmpl-broken", "object": "chat.completion", "choices": [{"in'
            return _Response(200, truncated, {"Content-Type": "application/json"})
        if kind == "bad_schema":
            return _json_response(200, {"object": "chat.completion", "model": self.model})
        if kind == "html":
            page = b"<!DOCTYPE html><html><head><title>502</title></head><body>Bad</body></html>"
            return _Response(200, page, {"Content-Type": "text/html"})
        if kind == "no_choices":
            empty = {"id": "chatcmpl-empty", "object": "chat.completion", "model": self.model}
            return _json_response(200, {**empty, "choices": []})
        if kind in ("bad_arguments", "unknown_tool"):
            return self._render_reply(
                Reply(tool_calls=[(fault.tool_name, fault.arguments)]), request
            )
        # "empty": no content, no tool calls
        reply = Reply(content=None if fault.null_content else "", finish_reason="stop")
        response = self._render_reply(reply, request)
        if fault.null_content:
            payload = json.loads(response.body)
            payload["choices"][0]["message"]["content"] = None
            response.body = json.dumps(payload).encode("utf-8")
        return response


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # sixteen connections at once are not held back (as vLLM's 2048)

    def __init__(
        self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], app: ScriptedVLLM
    ) -> None:
        self.app = app
        super().__init__(address, handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ScriptedVLLM/1.0"
    timeout = 30  # a keep-alive connection nobody uses is closed after this
    disable_nagle_algorithm = True  # headers and body are separate writes
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.app._register(self.connection, add=True)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        self.server.app._register(self.connection, add=False)

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: tests assert on the request log instead."""

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        app = self.server.app
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        request = RecordedRequest(
            method=self.command,
            path=self.path.split("?", 1)[0],
            headers={key.lower(): value for key, value in self.headers.items()},
            body=raw,
            json=parsed,
        )
        response = app._handle(request)
        if response.delay_s > 0 and app._stopping.wait(response.delay_s):
            response.action = "drop"  # the server is stopping: do not keep the test waiting
        if response.action in ("drop", "hang"):
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        try:
            self.send_response(response.status)
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(response.body)))
            self.end_headers()
            self.wfile.write(response.body)
            self.wfile.flush()
        except OSError:
            self.close_connection = True


@contextlib.contextmanager
def run_vllm_server(**options: Any) -> Iterator[ScriptedVLLM]:
    """A started `ScriptedVLLM(**options)`, stopped on exit whatever happens."""
    server = ScriptedVLLM(**options)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(name="vllm_server")
def vllm_server_fixture() -> Iterator[ScriptedVLLM]:
    """The `vllm_server` fixture: a started `ScriptedVLLM` with defaults (model "test-model",
    max_model_len 32768), stopped after the test whatever happens.

    Import either name into a test module or conftest: `vllm_server_fixture` (no lint noise:
    test parameters named `vllm_server` do not shadow it) or `vllm_server`.
    """
    with run_vllm_server() as server:
        yield server


vllm_server = vllm_server_fixture
