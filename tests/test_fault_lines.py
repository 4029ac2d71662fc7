"""A server that fails every request for good, met by a run at `--concurrency 16`: each new thing
is said once, the run stops with one error line, and every request the server saw is on the books.

Sixteen scene drafts are in flight when the fault begins, and each of them meets it: the same
failure, said by each draft and by each of its attempts, was sixteen lines and more before the
one that matters (a garbled body six lines a draft; a 429 that found one request alone in flight
repeated the capacity line "at most 1 requests" once per refusal).
"""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
import time
from collections import Counter
from contextlib import closing
from pathlib import Path

import pytest

from terrarium_dagster.model.client import ChatClient, ClientConfig
from tests.support.cli import run_args, said, terrarium_main
from tests.support.corpus_builder import simple_quest
from tests.support.vllm_server import Fault, Reply, ScriptedVLLM

_STAMP = re.compile(r"^\S+ \S+ (?P<level>[A-Z]+) (?P<logger>\S+): (?P<text>.*)$")
_SCOPE = re.compile(r" for (scene|thread) \S+")


@pytest.fixture(scope="module")
def quest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One thread of 20 scenes: a block of 16 drafts in flight at once."""
    return simple_quest(
        tmp_path_factory.mktemp("fault_lines") / "quest.db", threads=1, scenes_per_thread=20
    )


def _booked(db: Path) -> int:
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as connection:
        return int(connection.execute("SELECT count(*) FROM agent_call").fetchone()[0])


@pytest.mark.parametrize(
    "fault",
    [
        Fault.unavailable("engine restarting"),
        Fault.rate_limited(retry_after=0),
        Fault.html(),
        Fault.no_choices(),
    ],
    ids=["503", "429", "html", "no-choices"],
)
def test_a_persistent_fault_at_concurrency_16_is_said_once_then_one_error_line(
    vllm_server: ScriptedVLLM, quest: Path, tmp_path: Path, fault: Fault
) -> None:
    vllm_server.fallback = lambda request: fault
    db = tmp_path / "store.db"
    done = terrarium_main(
        *run_args(db, quest, agent_url=vllm_server.url, concurrency=16, max_retries=2, timeout_s=5)
    )
    assert done.returncode == 1, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert "Traceback" not in done.stderr
    assert said(lines[-1]) and lines[-1].startswith("terrarium: failed:"), done.stderr
    assert sum(1 for line in lines if said(line)) == 1, done.stderr
    logged = [_STAMP.match(line) for line in lines[:-1] if not line.startswith("terrarium:")]
    assert all(match is not None for match in logged), done.stderr
    records = [match for match in logged if match is not None]
    assert {match["level"] for match in records} <= {"WARNING"}, done.stderr
    # nothing said twice: one line for the fault (whichever draft met it first), and the
    # capacity gate's line only when its limits change
    texts = Counter(
        _SCOPE.sub("", re.sub(r"(retry|asking again \()\d+ of \d+.*", "", match["text"]))
        for match in records
    )
    assert max(texts.values(), default=1) == 1, done.stderr
    about_the_fault = [m for m in records if m["logger"] == "terrarium_dagster.model.client"]
    assert len(about_the_fault) == 1, done.stderr
    assert len(vllm_server.chat_requests) >= 3, "the failing call's three attempts at least"
    assert _booked(db) == len(vllm_server.chat_requests), "every request is on the books"


def test_a_call_says_its_own_failure_once_though_another_call_was_answered_in_between(
    vllm_server: ScriptedVLLM, caplog: pytest.LogCaptureFixture
) -> None:
    """The same garbled reply twice for one call is one warning, even when a call beside it was
    answered between its attempts (an answer makes a failure news again for the other calls,
    not for the call that already said it)."""
    messages = [
        {"role": "system", "content": "You annotate a story."},
        {"role": "user", "content": "# Scene 1#2\nThe Ashfall came."},
    ]
    beside: list[str | None] = []

    def sleep(_seconds: float) -> None:
        if not beside:  # the first backoff: another request is answered meanwhile
            beside.append(client.chat(messages).content)

    # the first call's attempts: HTML, (the other call's answer), HTML, then an answer
    vllm_server.script(Fault.html(), Reply(content="beside"), Fault.html(), Reply(content="ok"))
    config = ClientConfig(base_url=vllm_server.url, max_retries=3)
    with (
        ChatClient(config, sleep=sleep) as client,
        caplog.at_level(logging.DEBUG, logger="terrarium_dagster.model.client"),
    ):
        assert client.chat(messages).content == "ok"
    assert beside == ["beside"]
    garbled = [r for r in caplog.records if "not JSON" in r.getMessage()]
    assert [r.levelno for r in garbled] == [logging.WARNING, logging.DEBUG]


def test_a_failure_another_call_said_is_not_said_again_by_this_call_after_an_answer(
    vllm_server: ScriptedVLLM, caplog: pytest.LogCaptureFixture
) -> None:
    """Call B says a garbled reply; call A meets the same one beside it (a debug line), then a
    third call is answered, then A meets it again: A has met it, so still a debug line."""
    messages = [
        {"role": "system", "content": "You annotate a story."},
        {"role": "user", "content": "# Scene 1#2\nThe Ashfall came."},
    ]
    answers: list[str | None] = []
    backoffs = 0

    def sleep(_seconds: float) -> None:
        nonlocal backoffs
        backoffs += 1
        if backoffs in (1, 2):  # B's backoff: A is sent; A's backoff: C is answered
            answers.append(client.chat(messages).content)

    vllm_server.script(
        Fault.html(),  # B, first attempt
        Fault.html(),  # A, first attempt
        Reply(content="C"),
        Fault.html(),  # A, second attempt
        Reply(content="A"),
        Reply(content="B"),
    )
    config = ClientConfig(base_url=vllm_server.url, max_retries=3)
    with (
        ChatClient(config, sleep=sleep) as client,
        caplog.at_level(logging.DEBUG, logger="terrarium_dagster.model.client"),
    ):
        assert client.chat(messages).content == "B"
    assert answers == ["C", "A"]
    garbled = [r for r in caplog.records if "not JSON" in r.getMessage()]
    assert [r.levelno for r in garbled] == [logging.WARNING, logging.DEBUG, logging.DEBUG]


def test_an_answer_to_a_request_sent_before_the_failure_does_not_make_it_news_again(
    vllm_server: ScriptedVLLM, caplog: pytest.LogCaptureFixture
) -> None:
    """A request sent before the server began to fail, answered after: it says nothing about
    whether the server recovered, so a third call meeting the failure adds a debug line only
    (at --concurrency 16, the drafts sent just before a fault each made it news again: five
    warnings at its onset, milliseconds apart)."""
    messages = [
        {"role": "system", "content": "You annotate a story."},
        {"role": "user", "content": "# Scene 1#2\nThe Ashfall came."},
    ]
    early: list[str | None] = []
    backoffs = 0

    def sleep(_seconds: float) -> None:
        nonlocal backoffs
        backoffs += 1
        if backoffs == 1:  # B's backoff: the early request is answered, then C meets the fault
            sender.join(timeout=10)
            assert early == ["A"]
            assert client.chat(messages).content == "C"

    vllm_server.script(
        Reply(content="A", delay_s=0.5),  # sent first, answered after B failed
        Fault.html(),  # B
        Fault.html(),  # C
        Reply(content="C"),
        Reply(content="B"),
    )
    config = ClientConfig(base_url=vllm_server.url, max_retries=3)
    with (
        ChatClient(config, sleep=sleep) as client,
        caplog.at_level(logging.DEBUG, logger="terrarium_dagster.model.client"),
    ):
        sender = threading.Thread(target=lambda: early.append(client.chat(messages).content))
        sender.start()
        while not vllm_server.chat_requests:
            time.sleep(0.01)
        assert client.chat(messages).content == "B"
    garbled = [r for r in caplog.records if "not JSON" in r.getMessage()]
    assert [r.levelno for r in garbled] == [logging.WARNING, logging.DEBUG]


def test_garbled_bodies_that_differ_are_one_failure_said_once(
    vllm_server: ScriptedVLLM, caplog: pytest.LogCaptureFixture
) -> None:
    """Two replies that are not JSON, each garbled its own way (an HTML page, a body cut short):
    the line names what the server sent, but it is one failure, said once (a body cut mid-stream
    names its byte counts, which differ for every request: sixteen warnings at concurrency 16)."""
    messages = [
        {"role": "system", "content": "You annotate a story."},
        {"role": "user", "content": "# Scene 1#2\nThe Ashfall came."},
    ]
    beside: list[str | None] = []
    backoffs = 0

    def sleep(_seconds: float) -> None:
        nonlocal backoffs
        backoffs += 1
        if backoffs == 1:  # B's backoff: A meets a body garbled another way
            beside.append(client.chat(messages).content)

    vllm_server.script(Fault.html(), Fault.malformed_json(), Reply(content="A"), Reply(content="B"))
    config = ClientConfig(base_url=vllm_server.url, max_retries=3)
    with (
        ChatClient(config, sleep=sleep) as client,
        caplog.at_level(logging.DEBUG, logger="terrarium_dagster.model.client"),
    ):
        assert client.chat(messages).content == "B"
    assert beside == ["A"]
    garbled = [r for r in caplog.records if "not JSON" in r.getMessage()]
    assert "<!DOCTYPE html>" in garbled[0].getMessage()
    assert "chatcmpl-broken" in garbled[1].getMessage()
    assert [r.levelno for r in garbled] == [logging.WARNING, logging.DEBUG]
