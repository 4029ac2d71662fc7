"""The call ledger (store/ledger.py) on a real store file: every request on the books before
it is sent, from several threads at once, inside a scene's transaction too, and a dead process's
unanswered calls settled by the next writer."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.store.ledger import NO_ANSWER
from terrarium_dagster.store.models import AgentCallRecord

THREADS, CALLS = 8, 25


def _call(purpose: str, **fields: object) -> AgentCallRecord:
    return AgentCallRecord(run_id="r1", purpose=purpose, **fields)  # type: ignore[arg-type]


def test_calls_from_many_threads_are_each_recorded_once(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    with GlossaryStore(db) as store:
        ledger = store.runs.ledger
        start = threading.Barrier(THREADS)
        errors: list[BaseException] = []

        def work(worker: int) -> None:
            try:
                start.wait()
                for number in range(CALLS):
                    key = ledger.sent(_call(f"w{worker}"))
                    retried = [_call(f"w{worker}", error="retried: HTTP 503")] if number % 5 else []
                    ledger.done(key, [*retried, _call(f"w{worker}", prompt_tokens=number)])
                    if number % 3 == 0:
                        store.runs.settle_ledger()
            except BaseException as exc:  # pragma: no cover - shown by the assertion
                errors.append(exc)

        workers = [threading.Thread(target=work, args=(n,)) for n in range(THREADS)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert errors == []
        store.runs.settle_ledger()
        calls = store.runs.agent_calls()
    retries = THREADS * (CALLS - len(range(0, CALLS, 5)))
    assert len(calls) == THREADS * CALLS + retries
    assert len({call.request_key for call in calls}) == len(calls)
    assert sum(call.prompt_tokens for call in calls) == THREADS * sum(range(CALLS))
    assert Path(f"{db}-calls").stat().st_size == 0, "a settled ledger is emptied"


def test_a_call_sent_inside_a_scene_transaction_is_counted_before_the_commit(
    tmp_path: Path,
) -> None:
    db = tmp_path / "store.db"
    with GlossaryStore(db) as writer:
        with writer.transaction():
            writer.set_meta("scene", "open")  # the scene has written: it holds the write lock
            key = writer.runs.ledger.sent(_call("annotate"))
            assert writer.runs.settle_ledger() == 0  # waits: nothing commits inside a scene
            with GlossaryStore(db, read_only=True) as reader:  # `status` meanwhile
                assert reader.runs.agent_call_totals().calls == 1
            writer.runs.ledger.done(key, [_call("annotate", prompt_tokens=7)])
        assert writer.runs.settle_ledger() == 1
        (call,) = writer.runs.agent_calls()
    assert call.prompt_tokens == 7 and call.error is None


def test_a_dead_process_s_unanswered_call_is_settled_by_the_next_writer(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    GlossaryStore(db).close()
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        text=True,
        capture_output=True,
        check=True,
    )
    row = _call("annotate", error=NO_ANSWER, request_key="k-dead").model_dump(exclude={"id"})
    line = {"k": "k-dead", "pid": int(gone.stdout), "host": socket.gethostname(), "sent": row}
    Path(f"{db}-calls").write_text(json.dumps(line) + "\n" + '{"k": "cut sh')  # a torn last line
    with GlossaryStore(db, read_only=True) as reader:
        assert reader.runs.agent_call_totals().calls == 1  # on the books before it is settled
    with GlossaryStore(db) as writer:
        writer.runs.acquire_writer_lease("r2")
        (call,) = writer.runs.agent_calls()
        writer.runs.release_writer_lease("r2")
    assert call.error == NO_ANSWER and call.request_key == "k-dead"
    assert Path(f"{db}-calls").stat().st_size == 0
    assert os.getpid() != int(gone.stdout)


_ONE_ATTEMPT = """
import sys
from terrarium_dagster.backends.offline import OfflineBackend
from terrarium_dagster.model.client import ChatClient, ClientConfig
from terrarium_dagster.model.session import Books, ModelSession
from terrarium_dagster.store.annotator import GlossaryStore

url, db = sys.argv[1], sys.argv[2]
offline = ChatClient(ClientConfig(base_url="http://offline/v1"), transport=OfflineBackend())
store = GlossaryStore(db)
session = ModelSession(offline, store, budget=4096, max_tokens=64, run_id="r1")
config = ClientConfig(base_url=url, model="m", connect_timeout_s=60, timeout_s=60, max_retries=0)
book = Books(session, "annotate", None, None)  # the session's books, over the network
messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "# Scene 1#2"}]
ChatClient(config).chat(messages, book=book)
"""


@pytest.mark.parametrize("reached", [False, True], ids=["connecting", "with-the-server"])
def test_a_request_killed_before_it_left_is_no_call_and_one_with_the_server_is(
    tmp_path: Path, reached: bool
) -> None:
    """A run SIGKILLed after a request went on the books but before its first byte left (here:
    its connect hangs, the server's accept queue full) sent nothing the server could count: the
    next writer settles no call for it. Killed once the server holds the request, it is a call
    that got no answer."""
    db = tmp_path / "store.db"
    GlossaryStore(db).close()
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    filler = socket.create_connection(server.getsockname())  # the accept queue is full now
    held: list[socket.socket] = []
    if reached:  # a server that takes the request and never answers
        accepted, _ = server.accept()
        held.append(accepted)
        filler.close()
    url = f"http://127.0.0.1:{server.getsockname()[1]}/v1"
    child = subprocess.Popen([sys.executable, "-c", _ONE_ATTEMPT, url, str(db)])
    try:
        ledger = Path(f"{db}-calls")
        deadline = time.monotonic() + 30
        wanted = '"left"' if reached else '"sent"'
        while time.monotonic() < deadline and wanted not in _text(ledger):
            time.sleep(0.02)
        assert wanted in _text(ledger), _text(ledger)
        if reached:
            request, _ = server.accept()  # the request's connection: its headers arrive
            held.append(request)
            request.settimeout(10)
            assert request.recv(4096).startswith(b"POST /v1/chat/completions")
        else:
            time.sleep(0.3)  # the connect is hanging, its request on the books
            assert '"left"' not in _text(ledger)
    finally:
        child.kill()
        child.wait(timeout=30)
        for connection in [*held, filler, server]:
            connection.close()
    with GlossaryStore(db, read_only=True) as reader:
        assert reader.runs.agent_call_totals().calls == int(reached)
    with GlossaryStore(db) as writer:
        writer.runs.acquire_writer_lease("r2")
        calls = writer.runs.agent_calls()
        writer.runs.release_writer_lease("r2")
    assert [call.error for call in calls] == [NO_ANSWER] * int(reached)
    assert Path(f"{db}-calls").stat().st_size == 0


def _text(path: Path) -> str:
    return path.read_text() if path.exists() else ""
