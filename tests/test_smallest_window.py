"""The smallest window the refusal names holds what a long book puts beside a scene.

Once a long book has filled the history, compaction leaves the story so far and the chapter's
summary at their caps, which nothing removes; the scene part beside them, with its known entries
and a tool round of a model that writes several entries, needs about 1,200 Qwen3 tokens (a part
of *The Prince*'s last chapter read at the smallest room, its three searches and nine writes).
The window the one-line refusal names must hold both beside the fixed prefix and max_tokens,
counted as the server counts them: a window it accepts must never stop a run mid-book (at 3,690,
the number named before, *The Prince* and *A Christmas Carol* stopped in their last chapters).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from terrarium_dagster.agent.tools import default_registry
from terrarium_dagster.context import prompts
from terrarium_dagster.context.compaction import ContextManager
from terrarium_dagster.context.compaction.policy import CompactionPolicy, caps_for
from terrarium_dagster.context.compaction.text import clip_text
from terrarium_dagster.context.state import ContextState, Summary
from terrarium_dagster.context.tokens import Message, ServerCounter
from tests.support.cli import run_args, said, terrarium
from tests.support.window_server import run_window_server

qwen3 = pytest.importorskip("terrarium_dagster.testing.qwen3")

BOOK = Path(__file__).parent / "data" / "books" / "gods-of-mars-iii-iv.txt"
SCENE_AND_ROUND = 1200  # Qwen3 tokens: a real scene part and its tool rounds at the smallest room
MAX_TOKENS = 1024  # the default
_SMALLEST = re.compile(r"smallest this run works in, ([\d,]+) tokens")


def _server_count(messages: list[Message], tools: list[dict[str, object]] | None) -> int:
    body = {
        "messages": messages,
        "tools": tools,
        "chat_template_kwargs": {"enable_thinking": False},
    }
    return qwen3.request_tokens(body)


def _entry_list(first: int, count: int) -> str:
    return ", ".join(f"[E{n}]" for n in range(first, first + count))


def _named_smallest(tmp_path: Path) -> int:
    corpus = tmp_path / "book.db"
    assert terrarium("import", str(BOOK), "--out", str(corpus)).returncode == 0
    with run_window_server(3000, counting=qwen3.request_tokens) as server:
        refused = terrarium(
            *run_args(tmp_path / "s.db", corpus, agent_url=server.url, context_budget=3000)
        )
    lines = [line for line in refused.stderr.splitlines() if said(line)]
    assert refused.returncode == 2 and len(lines) == 1, refused.stderr
    found = _SMALLEST.search(lines[0])
    assert found, lines[0]
    return int(found.group(1).replace(",", ""))


def test_the_smallest_window_holds_a_long_books_history_beside_a_real_scene_and_its_round(
    tmp_path: Path,
) -> None:
    window = _named_smallest(tmp_path)
    tools = prompts.canonical_tools(default_registry().schemas()) or []
    system = prompts.system_prompt(book=True)
    counter = ServerCounter(tokenize=_server_count)
    limit = window - MAX_TOKENS
    caps = caps_for(CompactionPolicy(), limit, MAX_TOKENS)  # the run's policy
    # the history at its caps, clipped as compaction clips it (story folds, summaries, notes)
    story = "\n".join(
        f"Thread {n}: Thread {n} (extractive summary): Entries: {_entry_list(n, 30)}"
        for n in range(100, 2000, 100)
    )
    note = (
        f"(Scenes 900#900 .. 900#960@961.1 left the context without a summary; "
        f"entries: {_entry_list(900, 40)}.)"
    )
    state = ContextState(story_so_far=clip_text(counter, story, caps.story, keep_end=True))
    chunk = clip_text(counter, story.replace("Thread", "Scene"), caps.chunk_summary)
    noted = clip_text(counter, note, max(32, caps.chunk_summary // 2))
    state.set_summary(Summary(kind="chunk", thread_id=900, text=f"{chunk}\n{noted}"))
    # a finished chapter's summary not folded yet (the policy keeps up to three)
    finished = clip_text(counter, story, caps.thread_summary)
    state.set_summary(Summary(kind="thread", thread_id=800, text=finished))
    state.cursor.thread_id = 900
    context = ContextManager(
        state,
        system_prompt=system,
        tools=tools,
        budget=window,
        max_tokens=MAX_TOKENS,
        counter=counter,
        summarizer=None,
    )
    prose = BOOK.read_text(encoding="utf-8")[20_000:]
    low, high = 0, 20_000  # the longest stretch of the book within SCENE_AND_ROUND tokens
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (
            (middle, high) if qwen3.count(prose[:middle]) <= SCENE_AND_ROUND else (low, middle - 1)
        )
    text = prose[:low]
    scene = [{"role": "user", "content": f"# Scene 900#961@961.2\n{text}"}]
    prompt = _server_count(context.build(scene), tools)
    assert prompt <= limit, f"{prompt} prompt tokens at the smallest window {window} ({limit})"
