"""A call the run stopped with in flight (a sibling draft's at a Ctrl-C or a failure) is
abandoned, not failed: `terrarium status` counts it apart, in its JSON and its text. Its answer,
if it comes after all, is booked with its real usage; a process that exits first leaves it
abandoned.

A real session on a real store against the scripted vLLM server on loopback: one request
answered, one failed by a 503, one still with the server when the session closes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from terrarium_dagster.errors import AgentError
from terrarium_dagster.model.accounting import ABANDONED_AT_STOP
from terrarium_dagster.model.client import ChatClient, ChatResult, ClientConfig
from terrarium_dagster.model.session import ModelSession
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.store.ledger import ANSWERED_AFTER_STOP
from tests.support.cli import terrarium
from tests.support.vllm_server import Fault, RecordedRequest, Reply, run_vllm_server

SLOW_S = 1.0  # the answer of the request in flight when the session closes


def _messages(ask: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "You annotate."}, {"role": "user", "content": ask}]


def _answer(request: RecordedRequest) -> Reply | Fault:
    asked = request.json["messages"][-1]["content"]
    if asked == "fail":
        return Fault.unavailable()
    if asked == "slow":
        return Reply(content="late words", delay_s=SLOW_S, prompt_tokens=321, completion_tokens=7)
    return Reply(content="words", prompt_tokens=100, completion_tokens=5)


def _stopped_with_one_in_flight(db: Path) -> dict[str, ChatResult | BaseException]:
    """Three calls: answered, failed, and one the session closes with in flight (its sender
    then waits for its late answer). What each sender got."""
    got: dict[str, ChatResult | BaseException] = {}
    with run_vllm_server(enforce_context=False) as server, GlossaryStore(db) as store:
        server.fallback = _answer
        client = ChatClient(ClientConfig(base_url=server.url, max_retries=0))
        session = ModelSession(client, store, budget=8192, max_tokens=64, run_id="run-1")
        for ask in ("fine", "fail"):
            try:
                got[ask] = session.call(_messages(ask), purpose="annotate", tools=None)
            except AgentError as exc:
                got[ask] = exc

        def slow() -> None:
            try:
                got["slow"] = session.call(_messages("slow"), purpose="annotate", tools=None)
            except BaseException as exc:  # what the sender got is the finding
                got["slow"] = exc

        sender = threading.Thread(target=slow)
        sender.start()
        deadline = time.monotonic() + 10
        while len(server.chat_requests) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(server.chat_requests) == 3, "the slow request reached the server"
        session.close()  # the run stops with it in flight
        sender.join(timeout=30)
        session.record_calls()
    return got


@pytest.fixture(scope="module")
def stopped_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    db = tmp_path_factory.mktemp("abandoned") / "store.db"
    return db, _stopped_with_one_in_flight(db)  # type: ignore[return-value]


def test_status_counts_an_abandoned_call_apart_from_a_failed_one(
    stopped_store: tuple[Path, dict[str, object]],
) -> None:
    db, got = stopped_store
    assert isinstance(got["fine"], ChatResult) and isinstance(got["fail"], AgentError)
    status = terrarium("status", "--json", "--db", str(db))
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert (report["calls"], report["calls_failed"], report["calls_abandoned"]) == (3, 1, 1)
    [server] = report["calls_per_server"]
    assert (server["calls"], server["failed"], server["abandoned"]) == (3, 1, 1)
    text = terrarium("status", "--db", str(db))
    assert text.returncode == 0, text.stderr
    assert f"server {server['server']}: 3 calls, 1 failed, 1 abandoned" in text.stdout


def test_an_answer_that_comes_after_the_stop_is_booked_with_its_real_usage(
    stopped_store: tuple[Path, dict[str, object]],
) -> None:
    """It had been booked with 0 tokens (the row written at the stop, the answer dropped)."""
    db, got = stopped_store
    assert isinstance(got["slow"], ChatResult), "the sender got its answer"
    with GlossaryStore(db, read_only=True) as store:
        calls = store.runs.agent_calls()
    late = [call for call in calls if call.error == ANSWERED_AFTER_STOP]
    assert [(call.prompt_tokens, call.completion_tokens) for call in late] == [(321, 7)]
    assert late[0].latency_ms >= SLOW_S * 1000 * 0.9
    report = json.loads(terrarium("status", "--json", "--db", str(db)).stdout)
    assert (report["prompt_tokens"], report["completion_tokens"]) == (100 + 321, 5 + 7)


# A run that exits while its request is with the server: it closes its session and leaves.
_EXITS_EARLY = """
import os, sys, threading, time
from terrarium_dagster.model.client import ChatClient, ClientConfig
from terrarium_dagster.model.session import ModelSession
from terrarium_dagster.store.annotator import GlossaryStore

url, db = sys.argv[1], sys.argv[2]
store = GlossaryStore(db)
session = ModelSession(
    ChatClient(ClientConfig(base_url=url, max_retries=0)), store, budget=8192, max_tokens=64,
    run_id="run-2",
)
asked = [{"role": "system", "content": "You annotate."}, {"role": "user", "content": "slow"}]
threading.Thread(
    target=session.call, args=(asked,), kwargs={"purpose": "annotate", "tools": None},
    daemon=True,
).start()
while not store.runs.ledger.read().open:  # on the books: it is leaving
    time.sleep(0.01)
time.sleep(0.3)  # and with the server
session.close()
print("closed", flush=True)
sys.stdin.readline()  # the test reads the books meanwhile
os._exit(0)
"""


def test_a_run_that_exits_before_the_answer_leaves_the_call_abandoned(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    with run_vllm_server(enforce_context=False) as server:
        server.fallback = lambda request: Reply(content="late", delay_s=30, prompt_tokens=9)
        child = subprocess.Popen(
            [sys.executable, "-c", _EXITS_EARLY, server.url, str(db)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ},
        )
        try:
            assert child.stdout is not None and child.stdin is not None
            assert child.stdout.readline().strip() == "closed"
            # while it lives, its call is abandoned on the books already
            report = json.loads(terrarium("status", "--json", "--db", str(db)).stdout)
            assert (report["calls"], report["calls_abandoned"]) == (1, 1)
            child.stdin.write("\n")
            child.stdin.flush()
            assert child.wait(timeout=30) == 0
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
    report = json.loads(terrarium("status", "--json", "--db", str(db)).stdout)
    assert (report["calls"], report["calls_abandoned"], report["prompt_tokens"]) == (1, 1, 0)
    with GlossaryStore(db) as store:  # the next writer settles it, as abandoned
        store.runs.settle_ledger()
        [call] = store.runs.agent_calls()
    assert call.error == ABANDONED_AT_STOP and call.run_id == "run-2"
    assert not Path(f"{db}-calls").read_text()
