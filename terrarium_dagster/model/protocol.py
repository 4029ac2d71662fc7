"""The OpenAI chat-completions protocol as vLLM's OpenAI-compatible server speaks it.

Responses are parsed into pydantic models that ignore fields they do not know (vLLM adds
`logprobs`, `stop_reason`, `kv_transfer_params`, ...) and refuse bodies that miss a field the
engine relies on. Requests are sent as plain dicts carrying only the standard message keys, so
what the model sees is exactly what the engine built: `assistant_message_dict` turns a reply into
the dict appended to the history (its reasoning is not sent back).

vLLM specifics handled here:
- reasoning text arrives as `reasoning_content` (vLLM <= 0.15) or `reasoning` (0.11.1 and later;
  the only name from 0.16 on); both are read into `ChatMessage.reasoning`;
- `usage.prompt_tokens_details.cached_tokens` is present with `--enable-prompt-tokens-details`
  (null or absent otherwise);
- `GET /v1/models` carries `max_model_len` for each served model;
- `POST /tokenize` (at the server root) answers `{"count", "max_model_len", "tokens"}`.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from terrarium_dagster.jsonform import canonical_json

Role = Literal["system", "user", "assistant", "tool"]

#: The keys a message sent to the server may carry, by role. Anything else is refused before
#: sending (see `validate_messages` in `model/client.py`).
MESSAGE_KEYS: dict[str, frozenset[str]] = {
    "system": frozenset({"role", "content", "name"}),
    "user": frozenset({"role", "content", "name"}),
    "assistant": frozenset({"role", "content", "tool_calls", "name"}),
    "tool": frozenset({"role", "content", "tool_call_id", "name"}),
}
TOOL_CALL_KEYS = frozenset({"id", "type", "function"})
FUNCTION_KEYS = frozenset({"name", "arguments"})


class _Lenient(BaseModel):
    """Server data: unknown fields are ignored, known ones are validated."""

    model_config = ConfigDict(extra="ignore", frozen=True)


class FunctionCall(_Lenient):
    """The function a tool call invokes; `arguments` is the model's JSON text, unparsed."""

    name: str
    arguments: str

    @field_validator("arguments", mode="before")
    @classmethod
    def _arguments_as_text(cls, value: Any) -> Any:
        # The protocol says a string; some servers send the object itself. Keep the text form.
        if isinstance(value, dict | list):
            return canonical_json(value)
        return value


class ToolCall(_Lenient):
    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class ChatMessage(_Lenient):
    """A message of the conversation; on a response, the assistant's reply.

    `reasoning` is filled from either `reasoning` or `reasoning_content` (vLLM's older name).
    An empty `tool_calls` list (vLLM sends `[]` when there is none) becomes None.
    """

    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    reasoning: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _reasoning_either_name(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("reasoning") is None:
            legacy = data.get("reasoning_content")
            if legacy is not None:
                data = {**data, "reasoning": legacy}
        return data

    @field_validator("tool_calls", mode="after")
    @classmethod
    def _empty_tool_calls_are_none(cls, value: list[ToolCall] | None) -> list[ToolCall] | None:
        return value or None


class PromptTokensDetails(_Lenient):
    cached_tokens: int | None = None


class Usage(_Lenient):
    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(ge=0)
    total_tokens: int = Field(ge=0)
    prompt_tokens_details: PromptTokensDetails | None = None

    @property
    def cached_tokens(self) -> int:
        """Prompt tokens served from vLLM's prefix cache; 0 when the server does not say."""
        details = self.prompt_tokens_details
        if details is None or details.cached_tokens is None:
            return 0
        return details.cached_tokens


class Choice(_Lenient):
    index: int = 0
    message: ChatMessage
    finish_reason: str | None = None


class ChatResponse(_Lenient):
    """A chat completion. A missing `usage` is tolerated (the caller counts locally), and a tool
    call without an `id` gets a stable one made from the response id and its position."""

    id: str
    model: str
    choices: list[Choice] = Field(min_length=1)
    usage: Usage | None = None

    @model_validator(mode="before")
    @classmethod
    def _tool_call_ids(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
            return data
        response_id = str(data.get("id") or "response")
        choices = []
        for number, choice in enumerate(data["choices"]):
            message = choice.get("message") if isinstance(choice, dict) else None
            calls = message.get("tool_calls") if isinstance(message, dict) else None
            if isinstance(calls, list) and any(
                isinstance(call, dict) and not call.get("id") for call in calls
            ):
                calls = [
                    {**call, "id": call.get("id") or f"call-{response_id}-{number}-{position}"}
                    if isinstance(call, dict)
                    else call
                    for position, call in enumerate(calls)
                ]
                choice = {**choice, "message": {**message, "tool_calls": calls}}
            choices.append(choice)
        return {**data, "choices": choices}


class ChatRequest(BaseModel):
    """The body of `POST /v1/chat/completions` (before `extra_body` is merged in).

    Dumped with `exclude_none=True`, so unset options are absent rather than null.
    """

    model_config = ConfigDict(extra="forbid")

    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    chat_template_kwargs: dict[str, Any] | None = None
    stream: bool = False


class ModelMeta(_Lenient):
    """llama.cpp's `meta` of a served model: `n_ctx` is a slot's context window (the one that
    counts), `n_ctx_train` the window the model was trained with."""

    n_ctx: int | None = None
    n_ctx_train: int | None = None


class ModelInfo(_Lenient):
    """One entry of `GET /v1/models`; `max_model_len` is vLLM's context window, `meta.n_ctx`
    llama.cpp's (None where the server does not say)."""

    id: str
    max_model_len: int | None = None
    owned_by: str | None = None
    root: str | None = None
    meta: ModelMeta | None = None

    @field_validator("meta", mode="before")
    @classmethod
    def _meta_object_or_none(cls, value: Any) -> Any:
        return value if isinstance(value, dict) else None


class ModelList(_Lenient):
    data: list[ModelInfo]


class TokenizeResponse(_Lenient):
    """The answer of vLLM's `POST /tokenize`."""

    count: int = Field(ge=0)
    max_model_len: int | None = None
    tokens: list[int] = Field(default_factory=list)


class TokenList(_Lenient):
    """The answer of llama.cpp's `POST /tokenize` (`{"content": text}` in): the token ids."""

    tokens: list[Any]


class AppliedTemplate(_Lenient):
    """The answer of llama.cpp's `POST /apply-template`: the prompt the chat template makes."""

    prompt: str


def tool_call_dict(call: ToolCall) -> dict[str, Any]:
    """A tool call as the history carries it: only id, type and function{name, arguments}."""
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.function.name, "arguments": call.function.arguments},
    }


def assistant_message_dict(message: ChatMessage) -> dict[str, Any]:
    """The dict to append to the history for the assistant's reply.

    Only standard keys: `role`, `content` and, when the model called tools, `tool_calls`. The
    reasoning text is left out (it is not sent back to the model). Content is always a string
    (an empty one beside tool calls: llama-cpp-python refuses null), and arguments that are not
    a JSON object are sent back re-encoded (`history_arguments`: llama.cpp refuses invalid JSON
    in the history with HTTP 500).
    """
    result: dict[str, Any] = {"role": "assistant", "content": message.content or ""}
    if message.tool_calls:
        result["tool_calls"] = [
            {
                **tool_call_dict(call),
                "function": {
                    "name": call.function.name,
                    "arguments": history_arguments(call.function.arguments),
                },
            }
            for call in message.tool_calls
        ]
    return result


def history_arguments(arguments: str) -> str:
    """Tool-call arguments as the history may carry them: a JSON object's text as it came, else
    a JSON object holding what the model wrote (`{"unparsed_arguments": text}`), so every server
    can read the history back while the model still sees what it wrote (its tool result says
    why the call failed)."""
    try:
        value = json.loads(arguments)
    except ValueError:
        value = None
    if isinstance(value, dict):
        return arguments
    return canonical_json({"unparsed_arguments": arguments})


# -- what a server is (found once by `model.server.probe_server`) ---------------------------

ServerKind = Literal["vllm", "llama.cpp", "llama-cpp-python", "offline", "openai-compatible"]
TokenizeShape = Literal["vllm", "llama.cpp", "none"]


class ServerInfo(BaseModel):
    """What the probe found. `window` is None where the server does not publish one (the budget
    and a 400 overflow set it then); `tools` is None where it cannot be seen before a request;
    `counting` is how a chat prompt is counted exactly ("none": estimated); `slots` and
    `cache_tokens` are what the server holds at once (None: not published, as on vLLM, which
    queues what it cannot hold)."""

    model_config = ConfigDict(frozen=True)

    url: str
    kind: ServerKind
    model: str | None = None
    window: int | None = None
    window_source: str | None = None
    tools: bool | None = None
    tools_source: str | None = None
    counting: TokenizeShape = "none"
    slots: int | None = None  # requests it decodes at once (llama.cpp's `total_slots`)
    cache_tokens: int | None = None  # what those requests hold together at most (its KV cache)

    def line(self) -> str:
        """One line for the user: server kind, model, window, tools, counting."""
        window = (
            f"window {self.window} tokens ({self.window_source})"
            if self.window
            else "window not published (the budget, or an overflow, sets it)"
        )
        if self.tools is None:
            tools = "tools: not shown before a request"
        else:
            tools = f"tools: {'yes' if self.tools else 'NO'} ({self.tools_source})"
        counting = {
            "vllm": "token counts exact (/tokenize)",
            "llama.cpp": "token counts exact (/apply-template + /tokenize)",
            "none": "token counts estimated (no /tokenize for chat prompts)",
        }[self.counting]
        model = f" serving {self.model}" if self.model else ""
        capacity = ""
        if self.slots:
            cache = f" sharing a cache of {self.cache_tokens} tokens" if self.cache_tokens else ""
            capacity = f"; {self.slots} slots{cache}"
        return f"server: {self.kind} at {self.url}{model}; {window}; {tools}; {counting}{capacity}"
