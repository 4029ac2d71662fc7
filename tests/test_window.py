"""Every request fits the window: a loopback server that enforces `max_model_len` like vLLM.

The server (tests/support/window_server.py) answers with the offline backend and refuses, with
vLLM's 400 wording, any request whose prompt + `max_tokens` exceeds its window; it records every
request. `terrarium run` goes through it as a real process over a generated corpus with long
quest-master updates, at several budgets and with a server window smaller than the budget: each
run ends with exit 0, no 400, and every request within the window. A 400 on a curation or summary
request is recovered; one on every such request stops the run with one line (exit 1).
"""

from __future__ import annotations

import sqlite3
import subprocess
from collections import Counter
from collections.abc import Mapping
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest

from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.testing.synthetic import generate_corpus
from tests.support.cli import TERRARIUM, run_args, said
from tests.support.window_server import WindowServer, offline_counting, run_window_server

LONG_UPDATES = (150, 450)
LONG_THREADS = 30


@pytest.fixture(scope="module")
def long_quest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Thirty threads of long quest-master updates: at 8,192 every tier of compaction happens
    again and again (thread folds, story folds, truncation), at 32,768 the story so far is
    folded every few threads (the test counts them). Sixty threads, as it had, compacted the
    same ways, only twice as often in twice the time."""
    path = tmp_path_factory.mktemp("window") / "quest.db"
    return generate_corpus(
        path,
        threads=LONG_THREADS,
        posts_per_thread=8,
        seed=9,
        qm_ratio=0.5,
        words_per_post=LONG_UPDATES,
    )


@pytest.fixture(scope="module")
def short_quest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("window") / "short.db"
    return generate_corpus(
        path, threads=12, posts_per_thread=8, seed=4, qm_ratio=0.5, words_per_post=LONG_UPDATES
    )


def _run(server: WindowServer, corpus: Path, db: Path, budget: int, *extra: str) -> str:
    done = subprocess.run(
        [
            TERRARIUM,
            *run_args(db, corpus, agent_url=server.url, context_budget=budget, max_tokens=768),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    return f"{done.returncode}\n{done.stderr}"


def _assert_within(server: WindowServer, window: int) -> None:
    assert server.requests, "no request reached the server"
    assert server.overflows == 0, f"{server.overflows} requests over the window"
    assert server.largest <= window, (server.largest, window)


@pytest.mark.parametrize("budget", [8192, 32768])
def test_a_long_quest_runs_to_the_end_within_a_window_equal_to_the_budget(
    long_quest: Path, tmp_path: Path, budget: int
) -> None:
    with run_window_server(budget) as server:
        outcome = _run(server, long_quest, tmp_path / "s.db", budget)
        assert outcome.startswith("0\n"), outcome
        _assert_within(server, budget)
    with GlossaryStore(tmp_path / "s.db") as store:
        assert {state.status for state in store.progress.thread_states()} == {"curated"}
        assert len(store.progress.thread_states()) == LONG_THREADS
    # long enough that the context was compacted over and over, at every tier the budget calls
    # for: most finished threads folded, the story so far folded again and again, and at the
    # smallest budget scenes truncated too
    with closing(sqlite3.connect(f"file:{tmp_path / 's.db'}?mode=ro", uri=True)) as db:
        tiers = Counter(tier for (tier,) in db.execute("SELECT tier FROM compaction"))
    assert tiers["fold_thread"] >= LONG_THREADS // 2, tiers
    assert tiers["fold_story"] >= 4, tiers
    if budget == 8192:
        assert tiers["truncate"] >= 1, tiers


@pytest.mark.parametrize("budget", [12288, 16384, 131072])
def test_other_budgets_run_to_the_end_within_the_window(
    short_quest: Path, tmp_path: Path, budget: int
) -> None:
    window = min(budget, 65536)
    with run_window_server(window) as server:
        outcome = _run(server, short_quest, tmp_path / "s.db", budget)
        assert outcome.startswith("0\n"), outcome
        _assert_within(server, window)


def test_a_server_window_smaller_than_the_budget_is_read_and_respected(
    short_quest: Path, tmp_path: Path
) -> None:
    with run_window_server(8192) as server:
        outcome = _run(server, short_quest, tmp_path / "s.db", 32768)
        assert outcome.startswith("0\n"), outcome
        _assert_within(server, 8192)


def test_a_400_on_curation_and_summary_requests_is_recovered_and_the_window_kept(
    short_quest: Path, tmp_path: Path
) -> None:
    # The server advertises 16,384 but refuses untooled requests (curation, with 4,096 tokens of
    # room to think; summaries) over 6,000: the first refusal teaches the run the real window; it
    # retries smaller, keeps to it from then on, and records it for the next run.
    with run_window_server(16384, untooled_window=6000) as server:
        outcome = _run(server, short_quest, tmp_path / "s.db", 16384)
        assert outcome.startswith("0\n"), outcome
        assert server.overflows == 1
        first = next(i for i, r in enumerate(server.requests) if r.status == 400)
        later = server.requests[first + 1 :]
        assert later and all(r.prompt_tokens + r.max_tokens <= 6000 for r in later)
    with GlossaryStore(tmp_path / "s.db") as store:
        assert store.get_meta("server_window") == "6000"
        assert {state.status for state in store.progress.thread_states()} == {"curated"}


def test_an_overflow_on_every_curation_request_stops_with_one_line(
    short_quest: Path, tmp_path: Path
) -> None:
    with run_window_server(16384, refuse_all_untooled=True) as server:
        outcome = _run(server, short_quest, tmp_path / "s.db", 16384)
    code, _, stderr = outcome.partition("\n")
    assert code == "1", outcome
    lines = [line for line in stderr.splitlines() if said(line)]
    assert len(lines) == 1 and "too long" in lines[0], stderr
    assert "Traceback" not in stderr


def test_the_servers_count_alone_decides_and_every_refusal_is_on_its_record() -> None:
    # The stand-in counts with its own tokenizer (here one that counts a third of the offline
    # backend's tokens); its backend, which counts another way, used to refuse what the server
    # had admitted, and those 400s were on no record (the window benchmarks said "0 refused"
    # while the store held three failed calls). Now the server's count decides, and an error the
    # backend answers is recorded with its status.
    def a_third(body: Mapping[str, Any]) -> int:
        return offline_counting(body) // 3

    words = " ".join(["lantern"] * 3000)
    body = {
        "model": "terrarium-offline",
        "messages": [{"role": "user", "content": f"# Scene 1\n{words}"}],
        "max_tokens": 64,
    }
    assert offline_counting(body) + 64 > 4096 >= a_third(body) + 64
    with run_window_server(4096, counting=a_third) as server:
        answered = httpx.post(f"{server.url}/v1/chat/completions", json=body, timeout=30)
        assert answered.status_code == 200, answered.text
        malformed = httpx.post(
            f"{server.url}/v1/chat/completions", json={**body, "n": 2}, timeout=30
        )
        assert malformed.status_code == 400
    assert [request.status for request in server.requests] == [200, 400]
    assert server.overflows == 1
