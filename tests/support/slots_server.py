"""A loopback server that holds requests the way llama.cpp's `llama-server` does, answering with
the offline backend.

It has `slots` slots sharing one KV cache of `cache_tokens` tokens (llama.cpp's default with four
slots: a unified cache) and publishes them as llama.cpp does (`/v1/models` `owned_by:
"llamacpp"` with `meta.n_ctx`, `/props` with `total_slots` and `default_generation_settings.
n_ctx`; `publish=False` leaves them out). A chat request waits for a free slot, then holds its
prompt and its answer's tokens in the cache for `hold_s` (its decoding); when what the requests
in its slots hold together exceeds the cache, every one of them fails at once with llama.cpp's
`HTTP 500 ... Context size has been exceeded.` With `rate_limit`, a request that finds that many
already in flight is refused with a 429 instead (a vLLM behind a rate limiter).

Each chat request is recorded: its status, and the slots and tokens in use when it was decoded,
so a test can assert that nothing ever outgrew the server.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx

from terrarium_dagster.backends.offline import OFFLINE_MODEL, OfflineBackend, count_prompt_tokens
from tests.support.serving import serving

CACHE_FULL = "Context size has been exceeded."


@dataclass
class SlotsRequest:
    status: int
    tokens: int  # prompt + answer, as held in the cache
    busy_slots: int  # slots decoding beside it (itself included)
    held_tokens: int  # what they held together


@dataclass
class SlotsServer:
    slots: int
    cache_tokens: int
    hold_s: float
    rate_limit: int | None = None
    publish: bool = True
    requests: list[SlotsRequest] = field(default_factory=list)
    url: str = ""
    _cond: threading.Condition = field(default_factory=threading.Condition)
    _decoding: dict[int, int] = field(default_factory=dict)  # request number -> tokens held
    _failed: set[int] = field(default_factory=set)  # decoding requests the cache overflow ended
    _waiting: int = 0
    _numbers: int = 0

    @property
    def cache_full(self) -> int:
        return sum(1 for request in self.requests if request.status == 500)

    @property
    def rate_limited(self) -> int:
        return sum(1 for request in self.requests if request.status == 429)

    @property
    def answered(self) -> int:
        return sum(1 for request in self.requests if request.status == 200)

    @property
    def most_busy(self) -> int:
        return max((request.busy_slots for request in self.requests), default=0)

    @property
    def most_held(self) -> int:
        ok = [r.held_tokens for r in self.requests if r.status == 200]
        return max(ok, default=0)

    def decode(self, tokens: int) -> int:
        """Hold `tokens` in a slot for `hold_s`: 200, or 500 when the cache overflowed, or 429
        when the rate limit refused it."""
        with self._cond:
            self._numbers += 1
            number = self._numbers
            in_flight = len(self._decoding) + self._waiting
            if self.rate_limit is not None and in_flight >= self.rate_limit:
                self.requests.append(SlotsRequest(429, tokens, in_flight + 1, 0))
                return 429
            self._waiting += 1
            while len(self._decoding) >= self.slots:
                self._cond.wait()
            self._waiting -= 1
            self._decoding[number] = tokens
            held = sum(self._decoding.values())
            busy = len(self._decoding)
            if held > self.cache_tokens:  # llama.cpp fails every slot it is decoding
                self._failed.update(self._decoding)
        time.sleep(self.hold_s)
        with self._cond:
            del self._decoding[number]
            status = 500 if number in self._failed else 200
            self._failed.discard(number)
            self.requests.append(SlotsRequest(status, tokens, busy, held))
            self._cond.notify_all()
        return status


@contextlib.contextmanager
def run_slots_server(
    *,
    slots: int = 4,
    cache_tokens: int = 8192,
    hold_s: float = 0.05,
    rate_limit: int | None = None,
    publish: bool = True,
) -> Iterator[SlotsServer]:
    state = SlotsServer(slots, cache_tokens, hold_s, rate_limit, publish)
    backend = OfflineBackend(max_model_len=cache_tokens)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            return

        def _reply(self, status: int, payload: Any) -> None:
            body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _forward(self, body: bytes | None) -> httpx.Response:
            request = httpx.Request(self.command, f"http://offline{self.path}", content=body)
            return backend.handle_request(request)

        def do_GET(self) -> None:
            if self.path == "/v1/models":
                meta = {"n_ctx": cache_tokens, "n_ctx_train": cache_tokens} if publish else None
                model = {"id": OFFLINE_MODEL, "object": "model", "owned_by": "llamacpp"}
                self._reply(200, {"object": "list", "data": [{**model, "meta": meta}]})
            elif self.path == "/props":
                if not publish:
                    self._reply(404, {"error": {"code": 404, "message": "Not Found"}})
                    return
                settings = {"n_ctx": cache_tokens, "params": {}}
                caps = {"supports_tools": True}
                props = {"total_slots": slots, "default_generation_settings": settings}
                self._reply(200, {**props, "chat_template_caps": caps})
            else:
                response = self._forward(None)
                self._reply(response.status_code, response.content)

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if not self.path.rstrip("/").endswith("/chat/completions"):
                response = self._forward(body)
                self._reply(response.status_code, response.content)
                return
            payload: dict[str, Any] = json.loads(body)
            response = self._forward(body)
            answer = response.json()
            prompt = count_prompt_tokens(payload.get("messages") or [], payload.get("tools"))
            completion = int(answer.get("usage", {}).get("completion_tokens") or 0)
            status = state.decode(prompt + completion)
            if status == 200:
                self._reply(200, response.content)
            elif status == 429:
                error = {"code": 429, "message": "Too Many Requests", "type": "rate_limit"}
                self._reply(429, {"error": error})
            else:
                error = {"code": 500, "message": CACHE_FULL, "type": "server_error"}
                self._reply(500, {"error": error})

    with serving(Handler) as url:
        state.url = url
        yield state
