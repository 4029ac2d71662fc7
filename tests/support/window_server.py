"""A loopback server that enforces a model window the way vLLM does, answering with the offline
backend.

Every chat request is counted (by default the offline backend's tokenizer, the same one its
`/tokenize` serves; `counting` gives the server another tokenizer, e.g. Qwen3's real one from
`terrarium_dagster/testing/qwen3.py`, which its `/tokenize` and each reply's `usage` then report)
and refused with vLLM's 400 wording when prompt + `max_tokens` exceeds `max_model_len`;
otherwise the offline backend answers. The server's count is the only one that decides: the
backend's own window check is turned off (`OfflineBackend.enforce_window`), so a backend that
counts with another tokenizer never refuses what the server admitted. Each request is recorded
(prompt tokens, max_tokens, status: the backend's when it answered with an error), so a test can
assert that no request ever went over the window and that none was refused.

Two faults for requests that call no tool (`tool_choice: none`, summaries; or no tools at all,
curation): `untooled_window`
enforces a smaller window on them than `/v1/models` advertises (a server whose real window is
smaller than it says: the first refusal teaches the client the real one), and
`refuse_all_untooled` refuses every one of them as too long, whatever its size (a persistent
overflow the client cannot recover from).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx

from terrarium_dagster.backends.offline import OfflineBackend, count_prompt_tokens
from tests.support.serving import serving
from tests.support.vllm_server import overflow_message

Counting = Callable[[Mapping[str, Any]], int]
"""Prompt tokens of a chat request body, as a server's own tokenizer and template count them."""


def offline_counting(body: Mapping[str, Any]) -> int:
    """The offline backend's count (what its `/tokenize` and `usage` say)."""
    return count_prompt_tokens(body.get("messages") or [], body.get("tools"))


@dataclass
class WindowRequest:
    prompt_tokens: int
    max_tokens: int
    tool_choice: str | None
    status: int
    scene: str | None = None  # the scene message, for a scene round's request


@dataclass
class WindowServer:
    max_model_len: int
    untooled_window: int | None = None
    refuse_all_untooled: bool = False
    counting: Counting | None = None
    requests: list[WindowRequest] = field(default_factory=list)
    url: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def overflows(self) -> int:
        return sum(1 for request in self.requests if request.status == 400)

    @property
    def largest(self) -> int:
        return max((r.prompt_tokens + r.max_tokens for r in self.requests), default=0)


@contextlib.contextmanager
def run_window_server(
    max_model_len: int,
    *,
    untooled_window: int | None = None,
    refuse_all_untooled: bool = False,
    counting: Counting | None = None,
    backend: OfflineBackend | None = None,
) -> Iterator[WindowServer]:
    """`counting`: the server's own tokenizer (default the offline backend's); it decides the
    refusals and is what `/tokenize` and each reply's `usage.prompt_tokens` say, as on vLLM.
    `backend` answers instead of the offline backend (the forgetful model of
    `testing.forgetful`, built with the same `max_model_len`)."""
    state = WindowServer(max_model_len, untooled_window, refuse_all_untooled, counting)
    count = counting or offline_counting
    backend = backend or OfflineBackend(max_model_len=max_model_len)
    backend.enforce_window = False  # this server's count decides

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            return

        def _reply(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _forward(
            self,
            body: bytes | None,
            prompt: int | None = None,
            record: WindowRequest | None = None,
        ) -> None:
            request = httpx.Request(self.command, f"http://offline{self.path}", content=body)
            response = backend.handle_request(request)
            content = response.content
            if record is not None:
                record.status = response.status_code
            if counting is not None and prompt is not None and response.status_code == 200:
                payload = json.loads(content)  # the usage this server's tokenizer counts
                usage = payload.get("usage") or {}
                completion = int(usage.get("completion_tokens") or 0)
                payload["usage"] = {
                    **usage,
                    "prompt_tokens": prompt,
                    "total_tokens": prompt + completion,
                }
                content = json.dumps(payload).encode()
            self._reply(response.status_code, content)

        def _tokenize(self, body: bytes) -> None:
            payload: dict[str, Any] = json.loads(body)
            if "messages" not in payload:
                self._forward(body)
                return
            tokens = count(payload)
            answer = {"count": tokens, "max_model_len": state.max_model_len, "tokens": []}
            self._reply(200, json.dumps(answer).encode())

        def do_GET(self) -> None:
            self._forward(None)

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            path = self.path.rstrip("/")
            if counting is not None and path.endswith("/tokenize"):
                self._tokenize(body)
                return
            if not path.endswith("/chat/completions"):
                self._forward(body)
                return
            payload: dict[str, Any] = json.loads(body)
            prompt = count(payload)
            completion = int(payload.get("max_tokens") or 0)
            tool_choice = payload.get("tool_choice")
            untooled = tool_choice == "none" or not payload.get("tools")
            status = 200
            limit = state.max_model_len
            if untooled and state.untooled_window is not None:
                limit = state.untooled_window
            if prompt + completion > limit or (untooled and state.refuse_all_untooled):
                status = 400
            users = [m for m in payload.get("messages") or [] if m.get("role") == "user"]
            last = str(users[-1].get("content") or "") if users else ""
            scene = last if last.startswith("# Scene ") else None
            record = WindowRequest(prompt, completion, tool_choice, status, scene)
            with state._lock:
                state.requests.append(record)
            if status == 400:
                message = overflow_message("v0.18", limit, prompt, completion)
                error = {"message": message, "type": "BadRequestError", "param": "input_tokens"}
                self._reply(400, json.dumps({"error": {**error, "code": 400}}).encode())
                return
            self._forward(body, prompt, record)

    with serving(Handler) as url:
        state.url = url
        yield state
