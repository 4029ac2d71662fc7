"""The offline backend: vLLM's OpenAI-compatible API served in-process by a deterministic program.

`OfflineBackend` is an `httpx.BaseTransport`; give it to `httpx.Client(transport=...)` or to
`ChatClient(config, transport=...)`. It serves

- `GET /v1/models`: one model, `terrarium-offline`, with `max_model_len` (default 32768);
- `POST /tokenize`: a deterministic count (about 4 characters a token, see `count_prompt_tokens`);
- `POST /v1/chat/completions`: the deterministic answers below;
- `GET /health`.

It is stateless: every answer is a function of the request alone (the same request gives the same
bytes), so a run resumed after a crash receives exactly the answers it would have received.
Malformed requests get HTTP 400 with an OpenAI-style error body; an unknown model 404; a prompt
plus `max_tokens` beyond `max_model_len` gets vLLM's 400 "maximum context length" error.

What it answers is decided by the first line of the LAST user message (the prompt conventions
of `context/prompts.py`) and by the assistant/tool turns that follow that message:

- `# Scene <id>`: the scene annotator's tool calls and final answer (`backends.scene_annotator`;
  the message parsed by `backends.scene_message`, names matched by `backends.name_forms`,
  definitions composed by `backends.describe`).
- `# Task: summarize_chunk | summarize_thread | fold_story`: an extractive summary of the scene
  exchanges in the conversation (`backends.extractive_summary`).
- `# Task: flush`: "Nothing to record" without tools (every scene was written as it was read).
- `# Task: curate`: one line per decision (`E12 CONFIRM reason`, `E7 MERGE E3 reason`) from
  `offline_curate` (CONFIRM, REJECT, MERGE; `backends.offline_curator`).
- `# Task: summon`: what the snapshot context in the conversation recorded about the entry the
  question names (`backends.summon_reply`).
- An edition request: the reader's text composed from the evidence shown (`edition.compose`).
- Anything else: a short plain answer.

Usage: `prompt_tokens` from `count_prompt_tokens`, `completion_tokens` from the reply's text and
tool-call JSON, `cached_tokens` 0 (the benchmark simulator replaces usage). `max_tokens` is
honoured: a reply over it keeps as many whole tool calls as fit, or cuts its text, with
`finish_reason: "length"`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx

from terrarium_dagster.backends.chat_request import (
    BadRequest,
    Call,
    Reply,
    calls_after,
    checked_messages,
    entry_number,
    requested_tool_names,
)
from terrarium_dagster.backends.extractive_summary import SUMMARY_CHARS, summarize
from terrarium_dagster.backends.offline_curator import (
    CurateEntryView,
    curate_answer,
    offline_curate,
)
from terrarium_dagster.backends.offline_tokenizer import (
    CHARS_PER_TOKEN,
    count_prompt_tokens,
    count_tokens,
    token_ids,
)
from terrarium_dagster.backends.scene_annotator import (
    MAX_POSTS_PER_CALL,
    SceneAnnotator,
)
from terrarium_dagster.backends.scene_message import (
    KnownEntry,
    SceneMessage,
    parse_scene_message,
    with_earlier_known,
)
from terrarium_dagster.backends.summon_reply import summon_answer
from terrarium_dagster.backends.wire import (
    content_text,
    error_body,
    last_user_index,
    overflow_message,
)
from terrarium_dagster.edition.compose import compose_edition, edition_task
from terrarium_dagster.jsonform import canonical_json

# what other code imports from here: the backend, and the pieces tests and stand-ins reuse
__all__ = [
    "DEFAULT_MAX_MODEL_LEN",
    "MAX_POSTS_PER_CALL",
    "OFFLINE_MODEL",
    "BadRequest",
    "Call",
    "CurateEntryView",
    "KnownEntry",
    "OfflineBackend",
    "Reply",
    "SceneAnnotator",
    "SceneMessage",
    "_calls_after",
    "_entry_number",
    "count_prompt_tokens",
    "offline_curate",
    "parse_scene_message",
    "summon_answer",
    "with_earlier_known",
]

OFFLINE_MODEL = "terrarium-offline"
DEFAULT_MAX_MODEL_LEN = 32768

_TASK_LINE = re.compile(r"^# Task: ?([a-z_]+)")

# the names `testing/forgetful.py` imports from here, as they were called before the split
_calls_after = calls_after
_entry_number = entry_number


# what the offline backend's calls name as their server: a reserved host (RFC 2606's `.invalid`),
# so no request could ever reach a real server by it
OFFLINE_URL = "http://offline.invalid/v1"


def is_offline(server: str) -> bool:
    """Whether a call row's server is the offline backend (its host, whatever the path)."""
    return urlsplit(server).hostname == urlsplit(OFFLINE_URL).hostname


class OfflineBackend(httpx.BaseTransport):
    """vLLM's OpenAI-compatible endpoints, answered in-process and deterministically."""

    def __init__(
        self,
        *,
        model: str = OFFLINE_MODEL,
        max_model_len: int = DEFAULT_MAX_MODEL_LEN,
        annotator: SceneAnnotator | None = None,
    ) -> None:
        if max_model_len < 256:
            raise ValueError("max_model_len must be at least 256")
        self.model = model
        self.max_model_len = max_model_len
        self.annotator = annotator or SceneAnnotator()
        # A server in front that counts prompts with its own tokenizer and refuses what does not
        # fit (tests/support/window_server.py) turns this off: one count decides, never two.
        self.enforce_window = True

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path.rstrip("/")
        try:
            if path.endswith("/models"):
                self._method(request, "GET")
                return self._json(200, self._models())
            if path.endswith("/health"):
                return httpx.Response(200)
            if path.endswith("/tokenize"):
                self._method(request, "POST")
                return self._json(200, self._tokenize(self._body(request)))
            if path.endswith("/chat/completions"):
                self._method(request, "POST")
                return self._json(200, self.complete(self._body(request)))
            raise BadRequest(f"no route for {request.method} {path}", 404, "NotFoundError")
        except BadRequest as exc:
            error = error_body(str(exc), exc.status, exc.kind)
            return self._json(exc.status, {"error": error, "object": "error"})

    # -- endpoints ------------------------------------------------------------------------------

    def _models(self) -> dict[str, Any]:
        card = {
            "id": self.model,
            "object": "model",
            "created": 0,
            "owned_by": "terrarium",
            "root": self.model,
            "parent": None,
            "max_model_len": self.max_model_len,
        }
        return {"object": "list", "data": [card]}

    def _tokenize(self, body: dict[str, Any]) -> dict[str, Any]:
        self._check_model(body)
        if "messages" in body:
            messages = body["messages"]
            if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
                raise BadRequest("'messages' must be a list of objects")
            tools = body.get("tools")
            requested_tool_names(tools)
            generation = bool(body.get("add_generation_prompt", True))
            count = count_prompt_tokens(messages, tools, add_generation_prompt=generation)
            text = canonical_json(messages)
        elif isinstance(body.get("prompt"), str):
            text = body["prompt"]
            count = count_tokens(text)
        else:
            raise BadRequest("give 'messages' (a list) or 'prompt' (a string)")
        ids = token_ids(text)
        tokens = (ids * (count // max(len(ids), 1) + 1))[:count] if ids else [0] * count
        return {"count": count, "max_model_len": self.max_model_len, "tokens": tokens}

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """The chat completion for a request body (raises `BadRequest`)."""
        self._check_model(body)
        if body.get("stream"):
            raise BadRequest("stream is not supported by the offline backend")
        if body.get("n", 1) != 1:
            raise BadRequest("n must be 1")
        messages = checked_messages(body.get("messages"))
        tools = body.get("tools")
        tool_names = requested_tool_names(tools)
        max_tokens = body.get("max_tokens")
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
        ):
            raise BadRequest("max_tokens must be a positive integer")
        prompt_tokens = count_prompt_tokens(messages, tools)
        wanted = max_tokens if max_tokens is not None else 0
        over = prompt_tokens + wanted > self.max_model_len or prompt_tokens >= self.max_model_len
        if over and self.enforce_window:
            raise BadRequest(overflow_message(self.max_model_len, prompt_tokens, wanted))
        budget = max_tokens if max_tokens is not None else self.max_model_len - prompt_tokens
        if body.get("tool_choice") == "none":
            tool_names = []
        reply = self.answer(messages, set(tool_names))
        digest = hashlib.sha256(canonical_json(body).encode()).hexdigest()[:16]
        message, completion_tokens, finish = self._render(reply, digest, budget)
        return {
            "id": f"chatcmpl-offline-{digest}",
            "object": "chat.completion",
            "created": 0,
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": finish,
                    "stop_reason": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                "prompt_tokens_details": {"cached_tokens": 0},
            },
        }

    # -- the annotator ----------------------------------------------------------------------------

    def answer(self, messages: Sequence[Mapping[str, Any]], tools: set[str]) -> Reply:
        """The reply to a conversation (see the module docstring)."""
        last_user = last_user_index(messages)
        if last_user is None:
            return Reply(content="Send a `# Scene` message or a `# Task:` message.")
        text = content_text(messages[last_user].get("content")).lstrip()
        edition = edition_task(messages)
        if edition is not None:  # the reader's text, composed from the evidence it is shown
            return Reply(content=compose_edition(edition))
        after = messages[last_user + 1 :]
        scene = parse_scene_message(text)
        if scene is not None:
            scene = with_earlier_known(scene, messages[:last_user])
            turns, calls = calls_after(after)
            return self.annotator.reply(scene, turns, calls, tools)
        task = _TASK_LINE.match(text)
        if task is None:
            return Reply(content="I annotate `# Scene` messages and answer `# Task:` requests.")
        name = task.group(1)
        history = messages[:last_user]
        if name in SUMMARY_CHARS:
            return Reply(content=summarize(name, text, history))
        if name == "flush":
            return Reply(content="Nothing to record: every term of these scenes is written.")
        if name == "curate":
            # never an empty reply (that decides nothing, and is asked again): NONE says so
            return Reply(content=curate_answer(messages, last_user) or "NONE\n")
        if name == "summon":
            return Reply(content=summon_answer(text, history))
        return Reply(content=f"Task {name!r} is not one the offline backend knows.")

    @staticmethod
    def _render(reply: Reply, digest: str, budget: int) -> tuple[dict[str, Any], int, str]:
        message: dict[str, Any] = {"role": "assistant", "reasoning_content": None}
        if reply.tool_calls:
            calls: list[dict[str, Any]] = []
            spent = 0
            for index, (name, args) in enumerate(reply.tool_calls):
                call = {
                    "id": f"call_{digest}_{index}",
                    "type": "function",
                    "function": {"name": name, "arguments": canonical_json(args)},
                }
                cost = count_tokens(canonical_json(call["function"]))
                if spent + cost > budget:
                    break
                calls.append(call)
                spent += cost
            if calls:
                complete = len(calls) == len(reply.tool_calls)
                message["content"] = reply.content if reply.content and complete else None
                message["tool_calls"] = calls
                finish = "tool_calls" if len(calls) == len(reply.tool_calls) else "length"
                return message, spent, finish
            message["content"] = ""
            message["tool_calls"] = []
            return message, budget, "length"
        content = reply.content or ""
        tokens = count_tokens(content)
        message["tool_calls"] = []
        if tokens > budget:
            message["content"] = content[: budget * CHARS_PER_TOKEN]
            return message, budget, "length"
        message["content"] = content
        return message, tokens, "stop"

    # -- plumbing ---------------------------------------------------------------------------------

    def _check_model(self, body: Mapping[str, Any]) -> None:
        model = body.get("model")
        if model is not None and model != self.model:
            raise BadRequest(f"The model `{model}` does not exist.", 404, "NotFoundError")

    @staticmethod
    def _method(request: httpx.Request, method: str) -> None:
        if request.method != method:
            raise BadRequest(f"method {request.method} not allowed", 405, "MethodNotAllowed")

    @staticmethod
    def _body(request: httpx.Request) -> dict[str, Any]:
        try:
            body = json.loads(request.read() or b"null")
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise BadRequest(f"the body is not valid JSON: {exc}") from None
        if not isinstance(body, dict):
            raise BadRequest("the body must be a JSON object")
        return body

    @staticmethod
    def _json(status: int, payload: Any) -> httpx.Response:
        content = canonical_json(payload).encode()
        return httpx.Response(status, content=content, headers={"content-type": "application/json"})
