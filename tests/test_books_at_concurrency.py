"""Every request on the books at any concurrency: a server that fails persistently from one
request on stops a run at concurrency 16 with one clear line, and the store holds a call for each
request the server received — the failing call's attempts and those its sibling drafts had in
flight or retried when the run stopped — then the resumed run writes the reference glossary.

A real `terrarium run` (a process of its own) against the scripted vLLM server, which answers
with the offline backend until the outage begins, then fails every chat request the same way.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from terrarium_dagster.backends.offline import OfflineBackend
from terrarium_dagster.model.accounting import ABANDONED_AT_STOP
from terrarium_dagster.store.annotator import GlossaryStore
from tests.support.cli import run_args, terrarium
from tests.support.corpus_builder import simple_quest
from tests.support.store_dump import store_dump
from tests.support.vllm_server import DEFAULT_MODEL, Fault, RecordedRequest, Reply, run_vllm_server

CONCURRENCY = 16
MAX_RETRIES = 2
TIMEOUT_S = 4  # a hung request is given up after this (the machine may be busy)


@dataclass
class Outage:
    """The server: the offline backend's answers, then `fault` for every chat request from
    request number `down_from` on (None: no outage)."""

    fault: Fault
    down_from: int | None
    backend: OfflineBackend = field(
        default_factory=lambda: OfflineBackend(model=DEFAULT_MODEL, max_model_len=32768)
    )
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, request: RecordedRequest) -> Reply | Fault:
        with self.lock:
            self.requests += 1
            number = self.requests
        if self.down_from is not None and number >= self.down_from:
            return self.fault
        completion = self.backend.complete(request.json)
        message = completion["choices"][0]["message"]
        calls = [
            (call["function"]["name"], call["function"]["arguments"], call["id"])
            for call in message.get("tool_calls") or []
        ]
        return Reply(
            content=message.get("content"),
            tool_calls=calls,
            finish_reason=completion["choices"][0]["finish_reason"],
        )


@pytest.fixture(scope="module")
def quest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Forty scenes over two threads: blocks of sixteen drafts in flight at once."""
    return simple_quest(
        tmp_path_factory.mktemp("quest") / "quest.db", threads=2, scenes_per_thread=20
    )


def _run(url: str, corpus: Path, db: Path) -> tuple[int, str]:
    done = terrarium(
        *run_args(
            db,
            corpus,
            agent_url=url,
            concurrency=CONCURRENCY,
            max_retries=MAX_RETRIES,
            timeout_s=TIMEOUT_S,
        ),
        timeout=300,
    )
    return done.returncode, done.stderr


def _calls(db: Path) -> int:
    status = terrarium("status", "--json", "--db", str(db))
    assert status.returncode == 0, status.stderr
    return int(json.loads(status.stdout)["calls"])


@pytest.fixture(scope="module")
def reference(quest: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """What an uninterrupted run against the same answers writes."""
    db = tmp_path_factory.mktemp("reference") / "store.db"
    with run_vllm_server(enforce_context=False) as server:
        server.fallback = Outage(Fault.unavailable(), down_from=None).answer
        code, err = _run(server.url, quest, db)
        assert code == 0, err
        assert _calls(db) == len(server.chat_requests)
    return store_dump(db)


CASES = {
    "503 from the first request": (Fault.unavailable(), 1),
    "503 in the first block": (Fault.unavailable(), 9),
    "503 in a later block": (Fault.unavailable(), 30),
    "429": (Fault.rate_limited(retry_after=0), 12),
    "connection reset": (Fault.drop(), 12),
    "malformed JSON": (Fault.malformed_json(), 12),
    "an HTML page": (Fault.html(), 12),
    "empty choices": (Fault.no_choices(), 12),
    "a hang": (Fault.timeout(delay_s=TIMEOUT_S + 1), 12),
}
# four run in the suite; TERRARIUM_ALL_FAULTS=1 runs all nine (about twenty seconds each)
FAST = ["503 in the first block", "connection reset", "an HTML page", "a hang"]
ALL = os.environ.get("TERRARIUM_ALL_FAULTS") == "1"


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            case,
            marks=pytest.mark.skipif(case not in FAST and not ALL, reason="TERRARIUM_ALL_FAULTS"),
        )
        for case in CASES
    ],
)
def test_a_persistent_fault_at_concurrency_16_leaves_every_request_on_the_books(
    case: str, quest: Path, reference: dict[str, object], tmp_path: Path
) -> None:
    fault, down_from = CASES[case]
    db = tmp_path / "store.db"
    outage = Outage(fault, down_from)
    with run_vllm_server(enforce_context=False) as server:
        server.fallback = outage.answer
        code, err = _run(server.url, quest, db)
        seen_by_stop = len(server.chat_requests)
        assert code == 1, err
        lines = [line for line in err.splitlines() if line.startswith("terrarium: failed")]
        assert len(lines) == 1, err
        assert "failed" in lines[0] or "malformed" in lines[0], lines[0]
        assert _calls(db) == seen_by_stop, "every request the server received is a call"
        with GlossaryStore(db, read_only=True) as store:
            abandoned = [c for c in store.runs.agent_calls() if c.error == ABANDONED_AT_STOP]
        assert seen_by_stop > down_from, "the outage began before the run stopped"

        outage.down_from = None  # the server is back
        code, err = _run(server.url, quest, db)
        assert code == 0, err
        assert _calls(db) == len(server.chat_requests)
    assert store_dump(db) == reference
    if case == "a hang":  # its siblings were with the server when the run stopped
        assert abandoned
