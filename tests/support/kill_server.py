"""A loopback model server that answers with the offline backend and can SIGKILL its client
(or stop it cleanly with SIGINT or SIGTERM: `KillPoint.stop_signal`).

The kill points are deterministic: each `KillPoint` names a request by what it asks (a scene's
first round, a curation request, a summary ...), the thread it is about and, for a scene, its
number in the thread. When the first request matching a live kill point arrives, the server
SIGKILLs the process registered as `victim`, waits until it is gone, and sends no answer; the
kill point is then spent, so the resumed run's identical request is answered. A kill at the first
round of scene n is a kill right after scene n-1 committed; a kill at a curation request is a kill
inside the curation's transaction; a kill at the first round of a thread's first scene is a kill
at the thread boundary (after the previous thread's curation committed).

A `hold` point instead keeps the matching request waiting (`held` is set) until the test sets
`release`: the run is then busy in a model call, holding the store's writer lease.

Every chat request is recorded (its kind and HTTP status), so a test can also check what the
server saw.
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx

from terrarium_dagster.backends.offline import OfflineBackend
from tests.support.serving import serving

_SCENE = re.compile(r"^# Scene \S+\nthread (\d+) .*· scene (\d+) of (\d+)")
_TASK = re.compile(r"^# Task: (\w+)")
_THREAD = re.compile(r"\bthread (\d+)\b")


@dataclass(frozen=True)
class ChatRequest:
    """What one chat request asks, read from its last user message."""

    kind: str  # "scene", "curate", "summarize_chunk", "flush", ... or "other"
    thread_id: int | None
    scene_number: int | None  # 1-based, scenes only
    round: int  # assistant turns after the last user message (0: the scene's first call)


@dataclass(frozen=True)
class KillPoint:
    """The request at which the victim dies: `kind`, its thread, and for a scene its number and
    round; `occurrence` counts matching requests (1: the first)."""

    kind: str
    thread_id: int | None = None
    scene_number: int | None = None
    round: int | None = None
    occurrence: int = 1
    stop_signal: int = signal.SIGKILL  # SIGINT or SIGTERM: a clean stop (the run exits 130)

    def matches(self, request: ChatRequest) -> bool:
        return (
            request.kind == self.kind
            and (self.thread_id is None or request.thread_id == self.thread_id)
            and (self.scene_number is None or request.scene_number == self.scene_number)
            and (self.round is None or request.round == self.round)
        )


@dataclass
class KillServer:
    url: str = ""
    victim: subprocess.Popen[Any] | None = None
    kill_points: list[KillPoint] = field(default_factory=list)
    requests: list[tuple[ChatRequest, int]] = field(default_factory=list)
    kills: list[KillPoint] = field(default_factory=list)
    hold: KillPoint | None = None
    failing: set[str] = field(default_factory=set)  # request kinds answered 503 (a fault)
    held: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    _seen: dict[KillPoint, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self) -> None:
        """Forget every request, kill point, fault and hold: the server as it started, for the
        next test of a module that shares it."""
        with self._lock:
            self.victim = None
            self.kill_points = []
            self.requests.clear()
            self.kills.clear()
            self.hold = None
            self.failing = set()
            self.held.clear()
            self.release.clear()
            self._seen.clear()

    def _due(self, request: ChatRequest) -> KillPoint | None:
        with self._lock:
            for point in self.kill_points:
                if point in self.kills or not point.matches(request):
                    continue
                self._seen[point] = self._seen.get(point, 0) + 1
                if self._seen[point] == point.occurrence and self.victim is not None:
                    self.kills.append(point)
                    return point
            return None

    def _hold_due(self, request: ChatRequest) -> bool:
        with self._lock:
            if self.hold is None or self.held.is_set() or not self.hold.matches(request):
                return False
            self._seen[self.hold] = self._seen.get(self.hold, 0) + 1
            return self._seen[self.hold] == self.hold.occurrence


def classify(payload: dict[str, Any]) -> ChatRequest:
    messages = payload.get("messages") or []
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=None)
    if last_user is None:
        return ChatRequest("other", None, None, 0)
    text = str(messages[last_user].get("content") or "")
    rounds = sum(1 for m in messages[last_user + 1 :] if m.get("role") == "assistant")
    scene = _SCENE.match(text)
    if scene:
        return ChatRequest("scene", int(scene.group(1)), int(scene.group(2)), rounds)
    task = _TASK.match(text)
    if task:
        thread = _THREAD.search(text)
        return ChatRequest(task.group(1), int(thread.group(1)) if thread else None, None, rounds)
    return ChatRequest("other", None, None, rounds)


@contextlib.contextmanager
def run_kill_server(
    max_model_len: int = 32768, *, backend: OfflineBackend | None = None
) -> Iterator[KillServer]:
    """The server; `backend` answers instead of the offline backend (the forgetful model of
    `testing.forgetful`)."""
    state = KillServer()
    backend = backend or OfflineBackend(max_model_len=max_model_len)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            return

        def _forward(self, body: bytes | None) -> int:
            request = httpx.Request(self.command, f"http://offline{self.path}", content=body)
            response = backend.handle_request(request)
            self.send_response(response.status_code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(response.content)))
            self.end_headers()
            self.wfile.write(response.content)
            return response.status_code

        def do_GET(self) -> None:
            self._forward(None)

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._forward(body)
                return
            request = classify(json.loads(body))
            point = state._due(request)
            if point is not None and state.victim is not None:
                # SIGKILL, or a clean stop (which abandons the call in flight at once)
                state.victim.send_signal(point.stop_signal)
                state.victim.wait(timeout=60)
                with state._lock:
                    state.requests.append((request, 0))
                return  # no answer: the client is gone
            if request.kind in state.failing:
                message = b'{"error": {"message": "Service Unavailable", "code": 503}}'
                self.send_response(503)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(message)))
                self.end_headers()
                self.wfile.write(message)
                with state._lock:
                    state.requests.append((request, 503))
                return
            if state._hold_due(request):
                state.held.set()
                state.release.wait(timeout=120)
            status = self._forward(body)
            with state._lock:
                state.requests.append((request, status))

    with serving(Handler) as url:
        state.url = url
        yield state
