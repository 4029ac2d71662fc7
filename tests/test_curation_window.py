"""A curation at a small window is counted exactly before it is sent, never refused as too long.

The token counter learns its scales from the scene rounds; a curation's review message (entry
lines, ids, brackets) is of another shape. At a window of 4,096 with 16 in flight, one
curation request was estimated 19% under what the server counted, under the 15% margin the gate
counted exactly within, and the server refused it (3,108 prompt tokens and 1,024 for the
answer). A request that is not a scene round is now counted exactly once its estimate passes
half the limit (`agent/calls.py::OTHER_EXACT_SHARE`).

A generated quest whose names recur, through the loopback server that enforces its window and
answers with the forgetful model (`testing/forgetful.py`)."""

from __future__ import annotations

from pathlib import Path

from terrarium_dagster.testing.forgetful import ForgetfulBackend
from terrarium_dagster.testing.recurring import generate_recurring_quest
from tests.support.cli import run_args, terrarium
from tests.support.window_server import run_window_server

WINDOW = 4096


def test_no_curation_request_goes_over_a_small_window_at_concurrency_16(tmp_path: Path) -> None:
    quest = tmp_path / "quest.db"
    generate_recurring_quest(
        str(quest), threads=7, scenes_per_thread=16, people=40, places=18, seed=41
    )
    db = tmp_path / "store.db"
    with run_window_server(WINDOW, backend=ForgetfulBackend(max_model_len=WINDOW)) as server:
        done = terrarium(
            *run_args(
                db,
                quest,
                agent_url=server.url,
                context_budget=WINDOW,
                max_tokens=768,
                concurrency=16,
            )
        )
    assert done.returncode == 0, done.stderr
    over = [r for r in server.requests if r.prompt_tokens + r.max_tokens > WINDOW]
    assert server.overflows == 0 and not over, [(r.prompt_tokens, r.max_tokens) for r in over]
    assert server.largest > WINDOW * 0.9, "the window was used nearly to the full"
