"""A loopback model server that takes time the way vLLM's continuous batching does.

The answers come from the offline backend, or from another backend given as `backend` (the
forgetful model of `testing.forgetful`); deterministic: the same request, the same answer;
the time they take comes from a small model of vLLM's engine loop:

- one engine loop; each step takes `step_ms + per_sequence_ms × running sequences`;
- each running sequence past its prefill decodes one token per step;
- uncached prompt tokens are prefilled at `prefill_tokens_per_s`, at most `prefill_chunk`
  tokens per step (chunked prefill), oldest request first, and that time adds to the step;
- a prefix cache: a prompt's leading messages that an earlier request already prefilled are
  cached (counted per message, as vLLM's block cache counts per block), reported as
  `usage.prompt_tokens_details.cached_tokens`;
- every duration is multiplied by `scale`, so a benchmark of many requests runs in minutes.

For tests it can also add random `jitter_s` to each answer (replies then arrive in any order),
fail requests for a while (`fail_first` answers 503), record the peak number of requests in
flight, and count requests per path.

Used by `tests/test_throughput.py` and `benchmarks/bench_throughput.py`; not by the product.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from terrarium_dagster.backends.offline import OfflineBackend, count_prompt_tokens


@dataclass
class BatchingModel:
    """The engine loop's timing parameters (vLLM-like defaults for a 30B-class model)."""

    step_ms: float = 16.0
    per_sequence_ms: float = 0.25
    prefill_tokens_per_s: float = 8000.0
    prefill_chunk: int = 2048
    scale: float = 1.0


@dataclass
class _Sequence:
    prefill_left: int
    decode_left: int
    done: threading.Event = field(default_factory=threading.Event)


class EngineLoop:
    """A thread that steps running sequences like vLLM's scheduler (see the module doc)."""

    def __init__(self, model: BatchingModel) -> None:
        self.model = model
        self._running: list[_Sequence] = []
        self._cond = threading.Condition()
        self._stopped = False
        self.steps = 0
        self.busy_s = 0.0
        self._thread = threading.Thread(target=self._loop, name="batching-engine", daemon=True)
        self._thread.start()

    def run(self, uncached_prompt: int, completion: int) -> None:
        """Block until a sequence with these sizes has been prefilled and decoded."""
        sequence = _Sequence(max(0, uncached_prompt), max(1, completion))
        with self._cond:
            self._running.append(sequence)
            self._cond.notify()
        sequence.done.wait()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        model = self.model
        while True:
            with self._cond:
                while not self._running and not self._stopped:
                    self._cond.wait()
                if self._stopped:
                    for sequence in self._running:
                        sequence.done.set()
                    return
                running = list(self._running)
            budget = model.prefill_chunk
            prefilled = 0
            finished = []
            for sequence in running:
                if sequence.prefill_left > 0:
                    take = min(budget, sequence.prefill_left)
                    sequence.prefill_left -= take
                    budget -= take
                    prefilled += take
                    continue
                sequence.decode_left -= 1
                if sequence.decode_left <= 0:
                    finished.append(sequence)
            duration_s = (model.step_ms + model.per_sequence_ms * len(running)) / 1000.0
            duration_s += prefilled / model.prefill_tokens_per_s
            time.sleep(duration_s * model.scale)
            self.steps += 1
            self.busy_s += duration_s
            with self._cond:
                for sequence in finished:
                    self._running.remove(sequence)
                    sequence.done.set()


class PrefixCache:
    """Which message prefixes have been prefilled (by digest), and their token counts."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def cached_tokens(self, messages: list[dict[str, Any]], tools: Any) -> int:
        """Tokens of the longest message prefix already prefilled; remembers every prefix."""
        running = hashlib.sha256(json.dumps(tools, sort_keys=True).encode())
        digests = []
        for message in messages:
            running.update(json.dumps(message, sort_keys=True).encode())
            digests.append(running.copy().hexdigest())
        with self._lock:
            hit = 0
            for index, digest in enumerate(digests):
                if digest in self._seen:
                    hit = index + 1
            self._seen.update(digests)
        if hit == 0:
            return 0
        return count_prompt_tokens(messages[:hit], tools, add_generation_prompt=False)


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up (a killed or interrupted run) is not an error worth a traceback.
    Sixteen connections at once are not refused: socketserver's backlog of 5 reset some of a
    run's requests at `--concurrency 16` ("Connection reset by peer; retry 1 of 5"), which
    vLLM's backlog of 2048 never does."""

    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class BatchingServer:
    """The offline backend on 127.0.0.1, timed like continuous batching (a context manager)."""

    def __init__(
        self,
        model: BatchingModel | None = None,
        *,
        max_model_len: int = 32768,
        jitter_s: float = 0.0,
        fail_first: int = 0,
        seed: int | None = None,
        backend: OfflineBackend | None = None,
    ) -> None:
        self.backend = backend or OfflineBackend(max_model_len=max_model_len)
        self.model = model
        self.jitter_s = jitter_s
        self.fail_first = fail_first
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.in_flight = 0
        self.peak_in_flight = 0
        self.chat_requests = 0
        self.chat_failures = 0
        self.prompt_tokens = 0
        self.cached_tokens = 0
        self.completion_tokens = 0
        self.requests_by_path: dict[str, int] = {}
        self.chat_bodies: list[dict[str, Any]] = []
        self.cache = PrefixCache()
        self._engine: EngineLoop | None = None
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> BatchingServer:
        if self.model is not None:
            self._engine = EngineLoop(self.model)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                return

            def do_GET(self) -> None:
                outer._forward(self, b"")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                outer._forward(self, self.rfile.read(length))

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._engine is not None:
            self._engine.stop()

    def stats(self) -> dict[str, Any]:
        """What the server saw: requests, peak in flight, tokens (cached and not), engine time."""
        with self._lock:
            return {
                "chat_requests": self.chat_requests,
                "chat_failures": self.chat_failures,
                "peak_in_flight": self.peak_in_flight,
                "prompt_tokens": self.prompt_tokens,
                "cached_tokens": self.cached_tokens,
                "uncached_tokens": self.prompt_tokens - self.cached_tokens,
                "completion_tokens": self.completion_tokens,
                "engine_steps": self._engine.steps if self._engine else 0,
                "engine_busy_s": round(self._engine.busy_s, 3) if self._engine else 0.0,
            }

    def _forward(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        path = handler.path.split("?")[0]
        if path == "/stats":
            payload = json.dumps(self.stats()).encode()
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            handler.wfile.write(payload)
            return
        with self._lock:
            self.requests_by_path[path] = self.requests_by_path.get(path, 0) + 1
        chat = path.rstrip("/").endswith("/chat/completions")
        if chat:
            with self._lock:
                self.chat_requests += 1
                self.in_flight += 1
                self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
                failing = self.chat_failures < self.fail_first
                if failing:
                    self.chat_failures += 1
                delay = self._rng.uniform(0, self.jitter_s) if self.jitter_s else 0.0
        try:
            if chat and failing:
                status, payload = 503, json.dumps({"error": {"message": "busy"}}).encode()
            else:
                request = httpx.Request(handler.command, f"http://model{path}", content=body)
                response = self.backend.handle_request(request)
                status, payload = response.status_code, response.read()
                if chat and status == 200:
                    payload = self._timed(json.loads(body), json.loads(payload))
            if chat and delay:
                time.sleep(delay)
        finally:
            if chat:
                with self._lock:
                    self.in_flight -= 1
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    def _timed(self, request: dict[str, Any], answer: dict[str, Any]) -> bytes:
        """Take the time the batching engine would, and report the prefix cache's hits."""
        usage = answer.get("usage") or {}
        prompt = int(usage.get("prompt_tokens") or 0)
        completion = int(usage.get("completion_tokens") or 0)
        cached = min(prompt, self.cache.cached_tokens(request["messages"], request.get("tools")))
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
        answer["usage"] = usage
        with self._lock:
            self.prompt_tokens += prompt
            self.cached_tokens += cached
            self.completion_tokens += completion
            self.chat_bodies.append(request)
        if self._engine is not None:
            self._engine.run(prompt - cached, completion)
        return json.dumps(answer).encode()


@contextmanager
def batching_server(**kwargs: Any) -> Iterator[BatchingServer]:
    with BatchingServer(**kwargs) as server:
        yield server


def main(argv: list[str] | None = None) -> None:
    """`python -m terrarium_dagster.testing.batching --scale 0.1`: serve until killed; the first
    line printed is the base URL (GET /stats says what the server saw)."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every duration")
    parser.add_argument("--max-model-len", type=int, default=32768)
    parser.add_argument(
        "--model",
        choices=("offline", "forgetful"),
        default="offline",
        help="the answers: the offline backend's, or the forgetful model's (testing.forgetful)",
    )
    parser.add_argument("--lookups", type=int, default=3, help="the forgetful model's per scene")
    args = parser.parse_args(argv)
    backend = None
    if args.model == "forgetful":
        from terrarium_dagster.testing.forgetful import ForgetfulBackend

        backend = ForgetfulBackend(max_model_len=args.max_model_len, lookups=args.lookups)
    model = BatchingModel(scale=args.scale)
    with BatchingServer(model, max_model_len=args.max_model_len, backend=backend) as s:
        print(s.url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            sys.exit(0)


if __name__ == "__main__":
    main()
