"""A synchronous client for OpenAI-compatible servers: vLLM, llama.cpp's `llama-server`,
llama-cpp-python's server.

`ChatClient` speaks `GET /v1/models`, `POST /v1/chat/completions` and a tokenizer at the server
root: vLLM's `POST /tokenize` (messages in, `{"count"}` out) or llama.cpp's (`/apply-template`
then `/tokenize` of the prompt text; see `model/server.py`, which finds out which at start). It
sends deterministic bytes (sorted JSON keys, compact separators), refuses malformed conversations
before they leave the process (a programming error: `ValueError`), and retries with exponential
backoff and full jitter only where a retry is safe: a refused or dropped connection, a read
timeout, HTTP 429 (honouring `Retry-After`) and 5xx, except a 500 that comes back the same for
the same request (a server that cannot take this body, not a passing fault).

A chat call given a `weight` waits, attempt by attempt, for room on the server (`capacity`, an
`model/capacity.py::Capacity` the probe fills from llama.cpp's slots and cache): llama.cpp's
500 "Context size has been exceeded" while other requests were in flight is a capacity answer
(sent again when there is room, no retry spent), and a 429 lowers what may be in flight too.
A call given a `book` (`AttemptBook`) puts each HTTP attempt on it before it leaves.

Errors (from `terrarium_dagster.errors`):
- the prompt does not fit the model's window -> `ContextOverflowError` (a `ServerContextOverflow`
  carrying the numbers parsed from vLLM's, llama.cpp's or llama-cpp-python's message), never
  retried: the caller compacts instead;
- any other 4xx, or the same 500 twice -> `AgentError` with the status and the server's whole
  message, never retried further;
- a body that is not JSON or not the expected shape -> `AgentError("malformed response ...")`;
- retries exhausted -> `AgentError` naming the last cause and the number of attempts.
"""

from __future__ import annotations

import json
import logging
import random
import re
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Protocol, TypeVar

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from terrarium_dagster.errors import (
    AgentError,
    ConfigError,
    Interrupted,
    TerrariumError,
)
from terrarium_dagster.model.accounting import CallScope
from terrarium_dagster.model.capacity import Capacity, Ticket
from terrarium_dagster.model.conversation_checks import (
    sendable_messages,
    validate_messages,
    validate_tools,
)
from terrarium_dagster.model.protocol import (
    AppliedTemplate,
    ChatMessage,
    ChatRequest,
    ChatResponse,
    ModelInfo,
    ModelList,
    ServerInfo,
    TokenizeResponse,
    TokenizeShape,
    TokenList,
    ToolCall,
    Usage,
)
from terrarium_dagster.model.server_answers import (
    ServerContextOverflow,
    error_details,
    one_line,
    parse_context_overflow,
    server_message,
)

logger = logging.getLogger(__name__)

#: Body keys `extra_body` may not override: they are the request itself.
RESERVED_BODY_KEYS = frozenset({"model", "messages", "tools", "tool_choice", "stream"})

#: Transport failures after which sending the same request again is safe.
RETRYABLE_TRANSPORT_ERRORS: tuple[type[httpx.TransportError], ...] = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.ReadTimeout,
    httpx.WriteTimeout,
    httpx.PoolTimeout,
    httpx.RemoteProtocolError,
    httpx.ReadError,
    httpx.WriteError,
)

#: llama.cpp's answer when the requests it decodes together outgrow its KV cache (every request
#: in flight fails with it): a capacity answer, not a fault of the request.
CACHE_FULL = re.compile(r"context size has been exceeded", re.IGNORECASE)
ABANDONED = "abandoned: interrupted"

_ModelT = TypeVar("_ModelT", bound=BaseModel)

#: How the server counts a chat prompt: vLLM's `/tokenize` (messages in, count out), llama.cpp's
#: (`/apply-template`, then `/tokenize` of the prompt's text), or not at all (estimated).


class ClientConfig(BaseModel):
    """How to reach the server and what to ask of it. Field names follow `config.Settings`.

    `base_url` may be given with or without a trailing `/v1`; `root_url` and `api_url` are the
    normalised forms. `api_key` is the caller's (read from TERRARIUM_API_KEY or OPENAI_API_KEY).
    `enable_thinking` becomes `chat_template_kwargs.enable_thinking` (Qwen3); None omits it.
    `extra_body` is merged into every chat request (it cannot replace the reserved keys).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str
    model: str | None = None
    api_key: SecretStr | None = None
    timeout_s: float = Field(default=120.0, gt=0)
    connect_timeout_s: float = Field(default=10.0, gt=0)
    max_retries: int = Field(default=5, ge=0, le=50)
    backoff_initial_s: float = Field(default=1.0, ge=0)
    backoff_max_s: float = Field(default=60.0, ge=0)
    temperature: float = Field(default=0.2, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    max_tokens: int = Field(default=1024, ge=1)
    enable_thinking: bool | None = None
    seed: int | None = None
    extra_body: dict[str, Any] = Field(default_factory=dict)

    @field_validator("base_url")
    @classmethod
    def _normalise_base_url(cls, value: str) -> str:
        url = value.strip().rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"must start with http:// or https:// (got {value!r})")
        if url.endswith("/v1"):
            url = url[: -len("/v1")]
        if url.split("://", 1)[1] == "":
            raise ValueError(f"has no host (got {value!r})")
        return url

    @field_validator("model")
    @classmethod
    def _blank_model_is_none(cls, value: str | None) -> str | None:
        return (value.strip() or None) if value is not None else None

    @field_validator("extra_body")
    @classmethod
    def _no_reserved_keys(cls, value: dict[str, Any]) -> dict[str, Any]:
        clash = sorted(RESERVED_BODY_KEYS & value.keys())
        if clash:
            raise ValueError(f"may not set {', '.join(clash)}")
        return value

    @property
    def root_url(self) -> str:
        """The server root (where vLLM serves /tokenize, /health)."""
        return self.base_url

    @property
    def api_url(self) -> str:
        """The OpenAI API prefix: root + /v1."""
        return self.base_url + "/v1"

    def chat_template_kwargs(self) -> dict[str, Any] | None:
        """The `chat_template_kwargs` to send (from `extra_body` and `enable_thinking`)."""
        kwargs = dict(self.extra_body.get("chat_template_kwargs") or {})
        if self.enable_thinking is not None:
            kwargs["enable_thinking"] = self.enable_thinking
        return kwargs or None


class FailedAttempt(BaseModel):
    """One HTTP attempt of a call that ended without an answer to keep (a 5xx, a 429, a timeout,
    a dropped connection, a malformed reply, the call's own failure): the server was asked, so it
    is recorded as a call of its own. `usage` is what a malformed reply still reported, if
    anything."""

    model_config = ConfigDict(frozen=True)

    outcome: str
    latency_ms: float = 0.0
    usage: Usage | None = None
    server: str | None = None  # the replica asked (set by the replica pool)


class AttemptBook(Protocol):
    """Where a chat call's HTTP attempts go on the books, one row each (the model session's):
    `begin` before an attempt leaves (it may refuse, raising `Interrupted`: the run stopped;
    `departs`: `left` will be called when its headers start to go, the network transport's trace
    says so), `fail` when the open attempt ended without an answer to keep (`retried`: the call
    goes on). The answered attempt stays open for the caller to complete. `stopped` is set when
    the run stops: a request waiting for room gives up."""

    stopped: threading.Event

    def begin(self, server: str, *, departs: bool = False) -> None: ...

    def left(self) -> None: ...

    def fail(self, attempt: FailedAttempt, *, retried: bool) -> None: ...


def outcome_of(exc: BaseException) -> str:
    """What an attempt ended by an exception is recorded as."""
    if isinstance(exc, Interrupted | KeyboardInterrupt):
        return ABANDONED
    return str(exc) or type(exc).__name__


class ChatResult(BaseModel):
    """One answered chat call: the reply, its token accounting and what it cost to get it.

    `latency_ms` is the duration of the successful HTTP exchange (not the backoff before it);
    `attempts` counts every HTTP attempt made, the successful one included; `failed_attempts`
    are the ones before it. A chat call that fails carries its retried attempts on the error
    (`TerrariumError.failed_attempts`), the last one being the error itself.
    """

    model_config = ConfigDict(frozen=True)

    message: ChatMessage
    finish_reason: str | None
    usage: Usage | None = None
    latency_ms: float
    attempts: int
    model: str
    response_id: str
    failed_attempts: tuple[FailedAttempt, ...] = ()
    server: str | None = None  # the replica that answered (set by the replica pool)

    @property
    def reasoning(self) -> str | None:
        return self.message.reasoning

    @property
    def content(self) -> str | None:
        return self.message.content

    @property
    def tool_calls(self) -> list[ToolCall]:
        return list(self.message.tool_calls or [])

    @property
    def prompt_tokens(self) -> int:
        return self.usage.prompt_tokens if self.usage else 0

    @property
    def cached_tokens(self) -> int:
        return self.usage.cached_tokens if self.usage else 0

    @property
    def completion_tokens(self) -> int:
        return self.usage.completion_tokens if self.usage else 0


class ServerUnreachableError(AgentError):
    """No connection to the server could be made, however often it was tried."""


class MalformedResponseError(AgentError):
    """The server answered 2xx with a body that is not the protocol's (retried as transient)."""


# --- helpers -------------------------------------------------------------------------------


def encode_body(body: Mapping[str, Any]) -> bytes:
    """Deterministic request bytes: sorted keys, compact separators, UTF-8, no NaN."""
    try:
        text = json.dumps(
            body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError) as exc:
        raise ValueError(f"request body is not JSON-serializable: {exc}") from None
    return text.encode("utf-8")


def backoff_delay(retry: int, initial_s: float, max_s: float, rng: random.Random) -> float:
    """Full-jitter delay before retry number `retry` (1 for the first retry).

    Uniform in [0, min(max_s, initial_s * 2 ** (retry - 1))].
    """
    ceiling = min(max_s, initial_s * (2 ** (retry - 1)))
    return rng.uniform(0.0, ceiling)


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` header (delta-seconds or an HTTP date); None if bad."""
    if value is None:
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)


class ChatClient:
    """A vLLM (OpenAI-compatible) client on `httpx.Client`; not thread-safe, one per run.

    `transport` replaces the network (the offline backend is an `httpx.BaseTransport`);
    `sleep` and `rng` exist so tests can observe the backoff without waiting.
    """

    def __init__(
        self,
        config: ClientConfig,
        transport: httpx.BaseTransport | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self._config = config
        self._sleep = sleep
        self._rng = rng if rng is not None else random.Random()
        self._closed = threading.Event()  # `close`: what is still in flight ends quietly
        # the failure the last retry line named, whichever call said it: sixteen drafts that
        # meet one persistent fault say it once (then debug lines) until a request sent after
        # it is answered (`_said_since`: when the attempt that met it was sent)
        self._said: str | None = None
        self._said_since = 0.0
        self._said_lock = threading.Lock()
        headers = {"Accept": "application/json", "User-Agent": "terrarium-dagster"}
        if config.api_key is not None:
            headers["Authorization"] = f"Bearer {config.api_key.get_secret_value()}"
        # httpx's own network transport reports when a request's headers start to go (its
        # trace): the moment an attempt leaves, for the books; another transport does not
        self._traced = transport is None
        self._http = httpx.Client(
            transport=transport,
            headers=headers,
            timeout=httpx.Timeout(config.timeout_s, connect=config.connect_timeout_s),
            follow_redirects=False,
        )
        self._model_info: ModelInfo | None = None
        self._tokenize_shape: TokenizeShape = "vllm"  # until the server shows otherwise
        self.server_info: ServerInfo | None = None  # what `model.server` found, once probed
        self.capacity = Capacity()  # the server's slots and cache (`model.server` fills them in)

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def config(self) -> ClientConfig:
        return self._config

    @property
    def model_info(self) -> ModelInfo | None:
        """The model `resolve_model` found (None before it ran)."""
        return self._model_info

    @property
    def tokenize_supported(self) -> bool:
        """False once the server showed it cannot count a chat prompt (no /tokenize, or an
        answer of no known shape): counts are estimated from then on."""
        return self._tokenize_shape != "none"

    @property
    def tokenize_shape(self) -> TokenizeShape:
        """How chat prompts are counted exactly on this server (see `TokenizeShape`)."""
        return self._tokenize_shape

    def use_tokenize_shape(self, shape: TokenizeShape) -> None:
        """Count chat prompts this way from now on (the server probe's finding)."""
        self._tokenize_shape = shape

    def close(self) -> None:
        """No request leaves from now on; one still in flight (a sibling's, when the run stopped
        on another's failure) ends without a retry or a line of its own."""
        self._closed.set()
        self._http.close()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- endpoints --------------------------------------------------------------------------

    def models(self) -> list[ModelInfo]:
        """The models the server serves (`GET /v1/models`), with their `max_model_len`."""
        response, _, _ = self._send("GET", self._config.api_url + "/models", None)
        return self._parse(response, ModelList, "GET /v1/models").data

    def resolve_model(self) -> ModelInfo:
        """The configured model if the server serves it, else the first served one.

        `ConfigError` naming the served models when the configured one is not among them.
        """
        served = self.models()
        if not served:
            raise AgentError(f"the server at {self._config.root_url} serves no model")
        wanted = self._config.model
        if wanted is None:
            info = served[0]
        else:
            matches = [model for model in served if model.id == wanted]
            if not matches:
                names = ", ".join(repr(model.id) for model in served)
                raise ConfigError(
                    f"model {wanted!r} is not served by {self._config.root_url}; it serves: {names}"
                )
            info = matches[0]
        self._model_info = info
        return info

    def model_name(self) -> str:
        """The model name requests carry: the configured one, else the first served one."""
        if self._config.model is not None:
            return self._config.model
        if self._model_info is None:
            self.resolve_model()
        assert self._model_info is not None
        return self._model_info.id

    def optional_json(
        self, method: str, path: str, body: Mapping[str, Any] | None = None
    ) -> Any | None:
        """The JSON answer of an endpoint the server may not have (`path` from the server root):
        None when it answers 4xx or a body that is not JSON; 5xx and transport faults are
        retried as any request's. For probing what the server offers."""
        passthrough = frozenset(range(400, 500)) - {429}
        response, _, _ = self._send(
            method, self._config.root_url + path, body, passthrough=passthrough, overflow=False
        )
        if response.status_code >= 400:
            return None
        try:
            return response.json()
        except ValueError:
            return None

    def chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str | dict[str, Any] = "auto",
        max_tokens: int | None = None,
        options: Mapping[str, Any] | None = None,
        *,
        weight: int | None = None,
        book: AttemptBook | None = None,
        scope: CallScope | None = None,
    ) -> ChatResult:
        """One chat completion. `ValueError` (before sending) if the conversation is malformed.

        `weight` (prompt + max_tokens, as the window gate measured them) makes each attempt wait
        until the server has room for it (`self.capacity`); `book` puts each attempt on the
        books before it is sent (the answered one is left open for the caller to complete);
        `scope` (the run, thread and scene the call serves) names it in the retry warnings."""
        # the body, after validating the messages and tools; `options` (this call's sampling and
        # `chat_template_kwargs`, see model.sampling) win over the config's
        validate_messages(messages)
        if tools:
            validate_tools(tools)
        config = self._config
        request = ChatRequest(
            model=self.model_name(),
            messages=sendable_messages(messages),
            tools=tools or None,
            tool_choice=tool_choice if tools else None,
            max_tokens=max_tokens if max_tokens is not None else config.max_tokens,
            temperature=config.temperature,
            top_p=config.top_p,
            seed=config.seed,
            chat_template_kwargs=config.chat_template_kwargs(),
        )
        body = dict(config.extra_body)
        body.update(request.model_dump(exclude_none=True))
        for key, value in (options or {}).items():
            if key == "chat_template_kwargs" and isinstance(value, Mapping):
                body[key] = {**(body.get(key) or {}), **value}
            else:
                body[key] = value
        what = "POST /v1/chat/completions"
        attempts_allowed = self._config.max_retries + 1
        failures: list[FailedAttempt] = []  # every attempt retried: each is a call to record
        said: set[str] = set()  # the garbled replies this call met (and some line named)
        try:
            for malformed in range(1, attempts_allowed + 1):
                response, started, latency_ms = self._send(
                    "POST",
                    self._config.api_url + "/chat/completions",
                    body,
                    failures=failures,
                    weight=weight,
                    book=book,
                    scope=scope,
                )
                try:
                    parsed = self._parse(response, ChatResponse, what)
                    break
                except MalformedResponseError as exc:
                    # One garbled answer is a transient fault (a proxy, a restarting server):
                    # ask again; the same request, so nothing else changes. Persistent: stop.
                    if malformed == attempts_allowed:
                        raise
                    failed = FailedAttempt(
                        outcome=str(exc), latency_ms=latency_ms, usage=_usage_of(response)
                    )
                    failures.append(failed)
                    if book is not None:
                        book.fail(failed, retried=True)
                    logger.log(
                        self._level_of(str(exc), said, started),
                        "%s%s; asking again (%d of %d)",
                        exc,
                        scope.describe() if scope else "",
                        malformed,
                        attempts_allowed - 1,
                    )
                    self._sleep(
                        backoff_delay(
                            malformed,
                            self._config.backoff_initial_s,
                            self._config.backoff_max_s,
                            self._rng,
                        )
                    )
        except BaseException as exc:  # failed (or interrupted): its attempts go with it
            if book is not None:  # the attempt still open (if any) ended with the call
                book.fail(FailedAttempt(outcome=outcome_of(exc)), retried=False)
            if isinstance(exc, TerrariumError):
                exc.failed_attempts = tuple(failures)
            raise
        with self._said_lock:
            if started > self._said_since:  # sent after the failure said: news again
                self._said = None
        if parsed.usage is None:
            logger.warning("%s answered without usage: its tokens are counted locally", what)
        choice = parsed.choices[0]
        return ChatResult(
            message=choice.message,
            finish_reason=choice.finish_reason,
            usage=parsed.usage,
            latency_ms=latency_ms,
            attempts=len(failures) + 1,
            model=parsed.model,
            response_id=parsed.id,
            failed_attempts=tuple(failures),
        )

    def tokenize(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        *,
        template_kwargs: Mapping[str, Any] | None = None,
    ) -> int | None:
        """The server's exact prompt token count for these messages (and tools); None if the
        server has no /tokenize (404/405, remembered: it is not asked again).
        `template_kwargs` are rendered with (over the configured `chat_template_kwargs`): the
        chat template's switches change the prompt (Qwen3's thinking switch off adds an empty
        think block), so a count must render them as the request will.

        The count includes the generation prompt, as a chat request's `prompt_tokens` does.
        Messages are checked for shape only, so a fragment of a conversation can be counted.
        """
        if self._tokenize_shape == "none":
            return None
        validate_messages(messages, complete=False)
        if self._tokenize_shape == "llama.cpp":
            return self._tokenize_rendered(messages, tools, template_kwargs)
        rendering = self._rendering(messages, tools, template_kwargs)
        body = {
            "model": self.model_name(),
            "messages": rendering["messages"],
            "add_generation_prompt": True,
            **rendering,
        }
        try:
            response, _, _ = self._send(
                "POST", self._config.root_url + "/tokenize", body, passthrough=frozenset({404, 405})
            )
        except ServerContextOverflow:
            raise
        except AgentError as exc:  # an optional endpoint: an estimate will do this time
            logger.warning("/tokenize failed (%s); estimating this count", exc)
            return None
        if response.status_code in (404, 405):
            self._tokenize_shape = "none"
            logger.info(
                "the server at %s has no /tokenize (HTTP %d); token counts will be estimated",
                self._config.root_url,
                response.status_code,
            )
            return None
        try:
            return self._parse(response, TokenizeResponse, "POST /tokenize").count
        except MalformedResponseError as exc:
            try:  # llama.cpp's shape: no count, the tokens of a "content" it was not given
                TokenList.model_validate(response.json())
            except (ValueError, ValidationError):
                self._tokenize_shape = "none"
                logger.warning("%s; token counts will be estimated from now on", exc)
                return None
            self._tokenize_shape = "llama.cpp"
            logger.info(
                "the server at %s counts in llama.cpp's shape: counting through /apply-template",
                self._config.root_url,
            )
            return self._tokenize_rendered(messages, tools, template_kwargs)

    def _rendering(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        template_kwargs: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        """What a count renders the prompt from: the messages, the tools (checked) and the chat
        template's switches (the configured ones under `template_kwargs`)."""
        body: dict[str, Any] = {"messages": sendable_messages(messages)}
        if tools:
            validate_tools(tools)
            body["tools"] = tools
        switches = {**(self._config.chat_template_kwargs() or {}), **(template_kwargs or {})}
        if switches:
            body["chat_template_kwargs"] = switches
        return body

    def _tokenize_rendered(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        template_kwargs: Mapping[str, Any] | None = None,
    ) -> int | None:
        """llama.cpp's exact count: the chat template's prompt (`POST /apply-template`, tools
        included), then its tokens (`POST /tokenize` with `content`, special tokens parsed and
        added as a chat request's are). Either endpoint missing switches counting off, once."""
        body = self._rendering(messages, tools, template_kwargs)
        try:
            rendered = self.optional_json("POST", "/apply-template", body)
            prompt = AppliedTemplate.model_validate(rendered).prompt if rendered else None
            counted = None
            if prompt is not None:
                counted = self.optional_json(
                    "POST",
                    "/tokenize",
                    {"content": prompt, "add_special": True, "parse_special": True},
                )
            tokens = TokenList.model_validate(counted).tokens if counted else None
        except ValidationError:
            tokens = None
        except AgentError as exc:  # a passing failure: an estimate will do this time
            logger.warning("/tokenize failed (%s); estimating this count", exc)
            return None
        if tokens is None:
            self._tokenize_shape = "none"
            logger.warning(
                "the server at %s cannot render and count a chat prompt "
                "(/apply-template, /tokenize); token counts will be estimated from now on",
                self._config.root_url,
            )
            return None
        return len(tokens)

    # -- transport --------------------------------------------------------------------------

    def _send(
        self,
        method: str,
        url: str,
        body: Mapping[str, Any] | None,
        *,
        passthrough: frozenset[int] = frozenset(),
        failures: list[FailedAttempt] | None = None,
        overflow: bool = True,
        weight: int | None = None,
        book: AttemptBook | None = None,
        scope: CallScope | None = None,
    ) -> tuple[httpx.Response, float, float]:
        """(response, started, latency_ms) of the first acceptable answer (`started`: when its
        attempt was sent, `time.perf_counter`); raises otherwise.
        Each attempt that failed and is retried is appended to `failures` (and to `book`, which
        had it on the books before it left). A 4xx other than 429 is final, and so is a 500
        with the same message as the attempt before it (the server cannot take this body:
        asking again changes nothing).

        With a `weight`, each attempt first waits for room on the server (`self.capacity`). A
        capacity answer — llama.cpp's 500 about its full cache while other requests were in
        flight — lowers what may be in flight and sends the request again when there is room,
        without spending an attempt; a 429 lowers it too (and is retried as before)."""
        what = f"{method} {httpx.URL(url).path}"
        said: set[str] = set()  # the failures this call met (and some line named)
        content = encode_body(body) if body is not None else None
        headers = {"Content-Type": "application/json"} if content is not None else None
        attempts_allowed = self._config.max_retries + 1
        cause = "no attempt made"
        unreachable = False  # the last attempt could not even connect
        last_500: str | None = None  # the message of the previous attempt's HTTP 500
        attempt = 0
        while attempt < attempts_allowed:
            attempt += 1
            retry_after: float | None = None
            unreachable = False
            full = False  # the server answered that it holds too much beside this request
            ticket = self._room(weight, book)
            started = time.perf_counter()
            answered = False
            try:
                extensions = None
                if book is not None:
                    book.begin(self._config.root_url, departs=self._traced)
                    if self._traced:
                        extensions = {"trace": _departure(book)}
                response = self._http.request(
                    method, url, content=content, headers=headers, extensions=extensions
                )
            except RETRYABLE_TRANSPORT_ERRORS as exc:
                cause = self._describe_transport_error(exc)
                unreachable = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
            except httpx.HTTPError as exc:
                raise AgentError(f"{what} failed: {type(exc).__name__}: {exc}") from exc
            else:
                latency_ms = (time.perf_counter() - started) * 1000.0
                status = response.status_code
                answered = status < 400
                if status < 400 or status in passthrough:
                    return response, started, latency_ms
                message = server_message(response)
                found = parse_context_overflow(message, error_details(response))
                if overflow and found is not None:
                    limit, requested, prompt = found
                    raise ServerContextOverflow(
                        message,
                        status=status,
                        max_context_length=limit,
                        requested_tokens=requested,
                        prompt_tokens=prompt,
                    )
                if status != 429 and status < 500:
                    raise AgentError(f"{what} failed: HTTP {status}: {message}")
                cause = f"HTTP {status}: {message}"
                if ticket is not None and status == 429:
                    self.capacity.back_off(ticket, cause, tokens=False)
                full = (
                    ticket is not None
                    and status == 500
                    and CACHE_FULL.search(message) is not None
                    and self.capacity.crowded(ticket)
                )
                if full and ticket is not None:
                    self.capacity.back_off(ticket, cause, tokens=True)
                elif status == 500 and message == last_500:
                    raise AgentError(
                        f"{what} failed after {attempt} attempts: HTTP 500 again with the same "
                        f"message for the same request, so not a passing fault: {message}"
                    )
                else:
                    last_500 = message if status == 500 else None
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
            finally:
                if ticket is not None:
                    self.capacity.release(ticket, answered=answered)
            if self._closed.is_set() or (book is not None and book.stopped.is_set()):
                # the run has stopped (its books are settled): this failure is the stop's, not
                # the server's, and is neither retried nor said after the run's last line
                raise Interrupted(f"{what}: the run stopped while it was with the server")
            if full:  # not the request's fault: sent again when there is room, no attempt spent
                attempt -= 1
                cause += " (the server was full: sent again when there is room)"
            elif attempt == attempts_allowed:
                break
            spent = (time.perf_counter() - started) * 1000.0
            failed = FailedAttempt(outcome=cause, latency_ms=spent)
            if failures is not None:
                failures.append(failed)
            if book is not None:
                book.fail(failed, retried=True)
            serving = scope.describe() if scope else ""
            if full:
                level = self._level_of(cause, said, started)
                logger.log(level, "%s%s: %s", what, serving, cause)
                continue
            if retry_after is not None:
                delay = min(retry_after, self._config.backoff_max_s)
            else:
                delay = backoff_delay(
                    attempt, self._config.backoff_initial_s, self._config.backoff_max_s, self._rng
                )
            # a failure said once: the same one again is a debug line (the last is the error)
            logger.log(
                self._level_of(cause, said, started),
                "%s%s: %s; retry %d of %d in %.2f s",
                what,
                serving,
                cause,
                attempt,
                attempts_allowed - 1,
                delay,
            )
            self._sleep(delay)
        error = ServerUnreachableError if unreachable else AgentError
        tries = f"{attempts_allowed} attempt{'s' * (attempts_allowed != 1)}"
        raise error(f"{what} failed after {tries}; last error: {cause}")

    def _level_of(self, cause: str, said: set[str], started: float) -> int:
        """WARNING for a failure news to this call (`said`: the failures it met) and not the
        last one any call said since a request sent after it was answered; DEBUG for the same
        one again (this call's next attempt, or another call in flight beside it, whose
        requests sent before the failure may still be answered). `started`: when the attempt
        that met it was sent."""
        kind = _VARYING.sub("…", cause)  # the same failure, whatever the body it cut or garbled
        with self._said_lock:
            news = kind not in said and kind != self._said
            said.add(kind)  # met by this call: said by it or by another beside it
            if news:
                self._said = kind
                self._said_since = started
            return logging.WARNING if news else logging.DEBUG

    def _room(self, weight: int | None, book: AttemptBook | None) -> Ticket | None:
        """Wait for room on the server for a request of `weight` tokens (None: not gated)."""
        if weight is None:
            return None
        return self.capacity.acquire(weight, give_up=book.stopped if book is not None else None)

    def _describe_transport_error(self, exc: httpx.TransportError) -> str:
        root = self._config.root_url
        if isinstance(exc, httpx.ConnectTimeout):
            return f"cannot connect to {root} within {self._config.connect_timeout_s:g} s"
        if isinstance(exc, httpx.ConnectError):
            return f"cannot connect to {root}: {exc}"
        if isinstance(exc, httpx.ReadTimeout):
            return f"no response from {root} within {self._config.timeout_s:g} s (read timeout)"
        if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
            return f"connection to {root} dropped: {exc or type(exc).__name__}"
        return f"{type(exc).__name__} talking to {root}: {exc}"

    @staticmethod
    def _parse(response: httpx.Response, model: type[_ModelT], what: str) -> _ModelT:
        try:
            data = response.json()
        except ValueError:
            snippet = one_line(response.text, 120)
            raise MalformedResponseError(
                f"malformed response from server: {what} answered a body that is not JSON: "
                f"{snippet!r}"
            ) from None
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            details = "; ".join(
                f"{'.'.join(str(part) for part in error['loc']) or 'body'}: {error['msg']}"
                for error in exc.errors()[:3]
            )
            raise MalformedResponseError(
                f"malformed response from server: {what}: {one_line(details, 300)}"
            ) from None


# what differs from one request to the next in a failure's description: byte counts, the
# quoted start of a garbled body
_VARYING = re.compile(r"'[^']*'|\"[^\"]*\"|\d+")


def _departure(book: AttemptBook) -> Callable[[str, dict[str, Any]], None]:
    """An httpcore trace that tells `book` when the request's headers start to leave."""

    def trace(event: str, info: dict[str, Any]) -> None:
        if event.endswith(".send_request_headers.started"):
            book.left()

    return trace


def _usage_of(response: httpx.Response) -> Usage | None:
    """The token counts a malformed reply still carries, if it carries any."""
    try:
        data = response.json()
        return Usage.model_validate(data["usage"]) if isinstance(data, dict) else None
    except (ValueError, KeyError, TypeError, ValidationError):
        return None
