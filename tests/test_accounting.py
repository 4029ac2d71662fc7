"""Honest accounting: `terrarium status` adds up to what the server saw, failed requests included.

A real `terrarium run` over the sample quest against the scripted vLLM server (tests/support/
vllm_server.py), which answers with the offline backend and injects faults the client retries: a
500, a 503 right after it (the same call retried twice), a 429, a body that is not JSON, a body
without choices, a dropped connection and a read timeout. Then a run that meets a persistent 503
(every attempt of one call) stops with exit 1, and the same command resumes to the end. Every
request the server received is a call row: `status` counts them all, and its token totals equal
the usage the server reported.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from terrarium_dagster.backends.offline import OfflineBackend, count_prompt_tokens
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.store.ledger import NO_ANSWER
from tests.support.cli import TERRARIUM, run_args, terrarium
from tests.support.kill_server import KillPoint, run_kill_server
from tests.support.vllm_server import (
    DEFAULT_MODEL,
    Fault,
    RecordedRequest,
    Reply,
    run_vllm_server,
)

MAX_RETRIES = 2


@dataclass
class Ledger:
    """What the server answered: per chat request, the tokens its usage reported (0 for a fault)."""

    faults: dict[int, Fault]
    down_from: int | None = None  # from this request on, every request is a 503 (the server down)
    backend: OfflineBackend = field(
        default_factory=lambda: OfflineBackend(model=DEFAULT_MODEL, max_model_len=32768)
    )
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    faulted: int = 0

    def answer(self, request: RecordedRequest) -> Reply | Fault:
        self.requests += 1
        fault = self.faults.get(self.requests)
        if self.down_from is not None and self.requests >= self.down_from:
            fault = Fault.unavailable()
        if fault is not None:
            self.faulted += 1
            return fault
        completion = self.backend.complete(request.json)
        message = completion["choices"][0]["message"]
        usage = completion["usage"]
        self.prompt_tokens += usage["prompt_tokens"]
        self.completion_tokens += usage["completion_tokens"]
        calls = [
            (call["function"]["name"], call["function"]["arguments"], call["id"])
            for call in message.get("tool_calls") or []
        ]
        return Reply(
            content=message.get("content"),
            tool_calls=calls,
            finish_reason=completion["choices"][0]["finish_reason"],
            prompt_tokens=usage["prompt_tokens"],
            completion_tokens=usage["completion_tokens"],
            cached_tokens=0,
        )


def _token_count(body: dict[str, object]) -> int:
    messages = body.get("messages")
    return count_prompt_tokens(messages if isinstance(messages, list) else [], body.get("tools"))


_terrarium = partial(terrarium, timeout=600)


# The client's timeout: the fault below outlasts it, while an answer computed on a machine busy
# with the rest of the suite stays well within it (at 1 s an ordinary answer once timed out: the
# server had reported its usage, the client never read it, and the totals differed by it).
TIMEOUT_S = 4


def _run(url: str, corpus: Path, db: Path) -> subprocess.CompletedProcess[str]:
    return _terrarium(
        *run_args(db, corpus, agent_url=url, max_retries=MAX_RETRIES, timeout_s=TIMEOUT_S)
    )


def _with_ledger(ledger: Ledger) -> Callable[[RecordedRequest], Reply | Fault]:
    return ledger.answer


def test_status_adds_up_to_what_the_server_saw_retries_and_failures_included(
    sample_db: Path, tmp_path: Path
) -> None:
    transient = {
        3: Fault.server_error(),
        4: Fault.unavailable(),  # the same call's second attempt
        9: Fault.rate_limited(retry_after=0),
        14: Fault.malformed_json(),
        20: Fault.bad_schema(),
        26: Fault.drop(),
        31: Fault.timeout(delay_s=TIMEOUT_S + 1.5),
    }
    # then the server goes down until the run gives up (a summary that fails falls back to an
    # extractive one and the run goes on, so the outage lasts until a call stops the run)
    ledger = Ledger(faults=transient, down_from=36)
    db = tmp_path / "store.db"
    with run_vllm_server(enforce_context=False, token_counter=_token_count) as server:
        server.fallback = _with_ledger(ledger)
        stopped = _run(server.url, sample_db, db)
        outage = ledger.faulted - len(transient)
        ledger.down_from = None  # the server is back
        resumed = _run(server.url, sample_db, db)
        received = len(server.chat_requests)
    assert stopped.returncode == 1, stopped.stderr
    assert f"failed after {MAX_RETRIES + 1} attempts" in stopped.stderr
    assert resumed.returncode == 0, resumed.stderr
    assert received == ledger.requests > 36

    status = _terrarium("status", "--json", "--db", str(db))
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert report["calls"] == received, "every request the server received is a call"
    assert report["prompt_tokens"] == ledger.prompt_tokens
    assert report["completion_tokens"] == ledger.completion_tokens
    assert report["cached_tokens"] == 0
    assert report["runs_by_status"] == {"failed": 1, "finished": 1}

    with GlossaryStore(db, read_only=True) as store:
        errors = [call.error for call in store.runs.agent_calls() if call.error]
    retried = [error for error in errors if error.startswith("retried: ")]
    assert outage >= MAX_RETRIES + 1
    assert len(errors) == ledger.faulted == len(transient) + outage
    failed_calls = len(errors) - len(retried)  # a call's last attempt is its own error row
    assert failed_calls >= 1  # at least the call that stopped the run
    assert len(retried) >= len(transient) + MAX_RETRIES  # the stopping call's retries too
    assert any("HTTP 500" in error for error in retried)
    assert any("malformed response" in error for error in retried)
    assert any("read timeout" in error for error in retried)


def test_status_equals_what_the_server_saw_after_sigkills_during_calls(
    sample_db: Path, tmp_path: Path
) -> None:
    """Every request is on the books before it is sent: runs SIGKILLed while a request is with
    the server (inside a curation that has written, so its transaction holds the write lock; at
    a scene's request; inside a compaction) leave `status` equal to what the server saw, right
    after each kill and after the run that finishes."""
    db = tmp_path / "killed.db"
    kill_points = [
        KillPoint("curate", occurrence=2),  # the curation has written: its lock is held
        KillPoint("scene", scene_number=2, occurrence=3),
        KillPoint("flush", occurrence=2),  # inside a compaction
        KillPoint("curate", occurrence=7),
        KillPoint("summarize_thread", occurrence=3),
    ]
    seen_after_kill: list[tuple[int, int]] = []
    with run_kill_server() as server:
        server.kill_points = kill_points
        command = [TERRARIUM, *run_args(db, sample_db, agent_url=server.url)]
        for _ in range(len(kill_points) + 1):
            process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            server.victim = process
            try:
                _, err = process.communicate(timeout=300)
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait(timeout=30)
            assert process.returncode in (0, -9), err
            status = _terrarium("status", "--json", "--db", str(db))
            assert status.returncode == 0, status.stderr
            seen_after_kill.append((json.loads(status.stdout)["calls"], len(server.requests)))
            if process.returncode == 0:
                break
    assert len(server.kills) == len(kill_points), server.kills
    assert [recorded for recorded, _ in seen_after_kill] == [seen for _, seen in seen_after_kill], (
        "status counts every request the server received, also right after a SIGKILL"
    )
    with GlossaryStore(db, read_only=True) as store:
        calls = store.runs.agent_calls()
        unanswered = [call for call in calls if call.error == NO_ANSWER]
    assert len(unanswered) == len(kill_points), "each killed request is a call without answer"
    assert len({call.request_key for call in calls}) == len(calls), "no call on the books twice"
    assert not Path(f"{db}-calls").exists() or Path(f"{db}-calls").stat().st_size == 0
