"""The window on real prose, counted by a tokenizer that is not the client's.

A real public novel excerpt (the foreword and chapters III-IV of Edgar Rice Burroughs's *The Gods
of Mars*, Project Gutenberg #64, CRLF line endings as Gutenberg ships it; tests/data/books/)
is imported with `terrarium import` and annotated by `terrarium run` as a process through a
loopback server that enforces its window like vLLM and counts every prompt in Qwen3's real
tokens (its byte-level BPE and chat template: `terrarium_dagster/testing/qwen3.py`), which is
also what its `/tokenize` and each reply's `usage` say. The client knows none of that: it
estimates, calibrates against the server's numbers and asks `/tokenize` near the limit, as it
would with a real vLLM.

At 8,192 and at the smallest workable window (the number the refusal just below it names, so
what the README calls the minimum is checked to work), serially and with 4 and 16 requests in
flight: exit 0, zero 400s, every request within the window, every chapter curated, every story
post sent. A scene whose request cannot fit beside the context is read again in smaller parts
rather than stopping the run (the smallest window on this book needs it). Three more books, in
other formats (plain text, Markdown, an EPUB), run to the end at 8,192 the same way, serially
and at 16.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from terrarium_dagster.config import load_settings
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.model.client import ChatClient, ClientConfig
from terrarium_dagster.model.sampling import request_options
from terrarium_dagster.model.session import ModelSession
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.testing import qwen3
from tests.support.cli import run_args, said, terrarium
from tests.support.window_server import run_window_server

BOOK = Path(__file__).parent / "data" / "books" / "gods-of-mars-iii-iv.txt"
_POST_LINE = re.compile(r"^\[post (\d+)\]$", re.MULTILINE)
_SMALLEST = re.compile(r"smallest this run works in, ([\d,]+) tokens")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("book") / "gods.db"
    imported = terrarium("import", str(BOOK), "--out", str(path))
    assert imported.returncode == 0, imported.stderr
    assert "3 chapters" in imported.stdout, imported.stdout
    return path


@pytest.fixture(scope="module")
def smallest(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> int:
    """The smallest workable window, as the one-line refusal just below it names it."""
    db = tmp_path_factory.mktemp("refused") / "s.db"
    with run_window_server(3000, counting=qwen3.request_tokens) as server:
        refused = terrarium(*run_args(db, corpus, agent_url=server.url, context_budget=3000))
        assert server.requests == [], "refused before any request"
    assert refused.returncode == 2, refused.stderr
    lines = [line for line in refused.stderr.splitlines() if said(line)]
    assert len(lines) == 1, refused.stderr
    found = _SMALLEST.search(lines[0])
    assert found, lines[0]
    assert not db.exists(), "nothing is created"
    return int(found.group(1).replace(",", ""))


def _story_posts(corpus: Path) -> set[int]:
    with Corpus(corpus) as reader:
        return {
            post.id
            for thread in reader.threads()
            for scene in reader.scenes(thread.id)
            for post in scene.posts
        }


@pytest.mark.parametrize(
    ("size", "concurrency"),
    [("8192", 1), ("8192", 16), ("smallest", 1), ("smallest", 4), ("smallest", 16)],
)
def test_a_real_book_runs_to_the_end_with_no_request_over_the_window(
    tmp_path: Path, corpus: Path, smallest: int, size: str, concurrency: int
) -> None:
    window = smallest if size == "smallest" else int(size)
    db = tmp_path / "s.db"
    with run_window_server(window, counting=qwen3.request_tokens) as server:
        done = terrarium(
            *run_args(
                db, corpus, agent_url=server.url, context_budget=window, concurrency=concurrency
            ),
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        over = [r for r in server.requests if r.prompt_tokens + r.max_tokens > window]
        assert server.overflows == 0 and not over, [(r.prompt_tokens, r.max_tokens) for r in over]
        sent: set[int] = set()
        for request in server.requests:
            if request.scene is not None:
                assert "characters of post" not in request.scene, "a post was cut, not split"
                sent.update(int(n) for n in _POST_LINE.findall(request.scene))
        assert sent == _story_posts(corpus), "every paragraph of the story was read"
    with GlossaryStore(db, read_only=True) as store:
        states = store.progress.thread_states()
        assert len(states) == 3 and {state.status for state in states} == {"curated"}
        assert len(store.glossary.entries()) > 5


@pytest.fixture(scope="module")
def imported_books(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """Each book of `BOOK`'s folder imported by `terrarium import` once for the module (the
    import is the same at every concurrency): a test runs on a copy of it."""
    folder = tmp_path_factory.mktemp("imported")
    done: dict[str, Path] = {}

    def imported(book: str) -> Path:
        if book not in done:
            corpus = folder / f"{book}.db"
            result = terrarium("import", str(BOOK.parent / book), "--out", str(corpus))
            assert result.returncode == 0, result.stderr
            done[book] = corpus
        return done[book]

    return imported


@pytest.mark.parametrize("concurrency", [1, 16])
@pytest.mark.parametrize(
    "book",
    ["princess-of-mars-ch1-10.txt", "thuvia-maid-of-mars.md", "time-machine-pandoc.epub"],
)
def test_more_real_books_in_other_formats_run_at_8192_with_no_request_over_the_window(
    tmp_path: Path, imported_books: Callable[[str], Path], book: str, concurrency: int
) -> None:
    """Not one book: ten chapters of *A Princess of Mars* (plain text), *Thuvia* (Markdown) and
    *The Time Machine* (an EPUB), each imported and annotated to the end at 8,192 through the
    window-enforcing server counting Qwen3's tokens, serially and at the default concurrency:
    exit 0, zero 400s, no request over the window, every paragraph read, every chapter
    curated."""
    corpus = tmp_path / "c.db"
    shutil.copyfile(imported_books(book), corpus)
    db = tmp_path / "s.db"
    with run_window_server(8192, counting=qwen3.request_tokens) as server:
        done = terrarium(
            *run_args(
                db, corpus, agent_url=server.url, context_budget=8192, concurrency=concurrency
            ),
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        over = [r for r in server.requests if r.prompt_tokens + r.max_tokens > 8192]
        assert server.overflows == 0 and not over, [(r.prompt_tokens, r.max_tokens) for r in over]
        sent = {
            int(n)
            for request in server.requests
            if request.scene is not None
            for n in _POST_LINE.findall(request.scene)
        }
        assert sent == _story_posts(corpus), "every paragraph of the story was read"
    with Corpus(corpus) as reader:
        chapters = len(reader.threads())
    with GlossaryStore(db, read_only=True) as store:
        states = store.progress.thread_states()
        assert len(states) == chapters and {state.status for state in states} == {"curated"}


def test_an_exact_count_renders_the_thinking_switch_as_the_longer_prompt(tmp_path: Path) -> None:
    """Scene rounds to a Qwen3 server go with thinking off, which renders an empty think block
    after the generation prompt: the session's `/tokenize` count must include it (the config's
    switch alone would count the shorter, thinking-on prompt, a few tokens short)."""
    messages = [
        {"role": "system", "content": "You annotate a story."},
        {"role": "user", "content": "# Scene 1\nThe thoat ran."},
    ]
    settings = load_settings(model_family="qwen3", context_budget=8192)
    with (
        run_window_server(8192, counting=qwen3.request_tokens) as server,
        ChatClient(ClientConfig(base_url=server.url, max_retries=0)) as client,
        GlossaryStore(tmp_path / "s.db") as store,
    ):
        session = ModelSession(
            client,
            store,
            budget=8192,
            max_tokens=1024,
            run_id=None,
            request_options=lambda purpose: request_options(settings, "Qwen3-8B", purpose),
        )
        counted = session.count(messages, None, exact_above=0)
    off = qwen3.request_tokens(
        {"messages": messages, "chat_template_kwargs": {"enable_thinking": False}}
    )
    on = qwen3.request_tokens({"messages": messages})
    assert counted == off > on
