"""Small windows: a scene too large for the room is read in parts, and nothing is cut away.

Unit: `next_part` splits a scene at post boundaries, then a long post at its paragraphs (a long
paragraph at sentences), in order, every piece of the story in exactly one part, each part within
the room; a scene that fits is its own only part, unchanged.

End to end, `terrarium run` as a process through a loopback server that enforces an 8,192-token
window like vLLM (tests/support/window_server.py): a generated story whose scenes are far longer
than the room left, and a real public novel (chapters I-IV of William Morris's *News from
Nowhere*, Project Gutenberg #3261 as GITenberg keeps it, tests/data/) imported with
`terrarium import` (the novel at 4,096 too): exit 0, zero 400s, every story post sent whole
(no "not shown" cut). A run
stopped between two parts of a scene resumes at the next part, exactly (tests/test_exact_resume.py
has the harness). A budget below the smallest workable one is refused at start: one line, exit 2.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from terrarium_dagster.agent.scene_parts import PART_MARK, next_part, post_pieces
from terrarium_dagster.config import load_settings
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.corpus.units import Post, Scene
from terrarium_dagster.engine import Engine
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.testing.synthetic import generate_corpus
from tests.support.cli import run_args, said, terrarium
from tests.support.corpus_builder import PostRow, write_corpus
from tests.support.window_server import WindowServer, run_window_server

NOVEL = Path(__file__).parent / "data" / "news_from_nowhere_i-iv.txt"
WINDOW = 8192
_POST_LINE = re.compile(r"^\[post (\d+)\]$", re.MULTILINE)


def _post(post_id: int, text: str) -> Post:
    return Post(post_id, 1, "QM", None, None, post_id, text, frozenset({"qm_post"}))


def _scene(*texts: str) -> Scene:
    posts = tuple(_post(10 + i, text) for i, text in enumerate(texts))
    return Scene(id="1#10", thread_id=1, index=0, posts=posts)


def _parts(scene: Scene, room: int) -> list[Scene]:
    parts, position = [], (0, 0)
    while position is not None:
        part, position = next_part(scene, position, room)
        parts.append(part)
    return parts


def test_a_scene_that_fits_is_its_own_only_part() -> None:
    scene = _scene("A short update.", "Another one.")
    assert next_part(scene, (0, 0), 10_000) == (scene, None)


def test_a_long_scene_is_split_at_posts_then_paragraphs_in_order_and_nothing_is_lost() -> None:
    long_post = "\n\n".join(f"Paragraph {n} of the long post. " * 12 for n in range(12))
    one_paragraph = "A sentence that never ends well. " * 120  # one paragraph, longer than the room
    scene = _scene("Short opening.", long_post, "Short middle.", one_paragraph, "Short close.")
    room = 1200
    parts = _parts(scene, room)
    assert len(parts) > 5
    assert all(len(part.text) <= room for part in parts)
    assert parts[0].id == f"1#10{PART_MARK}10.0"
    assert all(part.id.startswith("1#10" + PART_MARK) for part in parts)
    # every post in order, each piece of its text in exactly one part
    sent: dict[int, list[str]] = {}
    for part in parts:
        for post in part.posts:
            sent.setdefault(post.id, []).append(post.text)
    assert list(sent) == [post.id for post in scene.posts]
    for post in scene.posts:
        expected = post_pieces(post.text, room)
        assert "\n\n".join(sent[post.id]).split("\n\n") == expected
        assert " ".join(expected).split() == post.text.split()  # no word lost or added


def test_resuming_at_a_part_gives_the_same_parts() -> None:
    scene = _scene(*("Words of the update. " * 60 for _ in range(6)))
    parts = _parts(scene, 1500)
    position = (2, 0)
    resumed = []
    while position is not None:
        part, position = next_part(scene, position, 1500)
        resumed.append(part)
    assert [p.id for p in resumed] == [p.id for p in parts if p.id >= resumed[0].id]


def _scene_posts(server: WindowServer) -> set[int]:
    sent: set[int] = set()
    for request in server.requests:
        if request.scene is not None:
            assert "characters of post" not in request.scene, "a post was cut, not split"
            sent.update(int(n) for n in _POST_LINE.findall(request.scene))
    return sent


def _story_posts(corpus: Path) -> set[int]:
    with Corpus(corpus) as reader:
        return {
            post.id
            for thread in reader.threads()
            for scene in reader.scenes(thread.id)
            for post in scene.posts
        }


def test_a_story_whose_scenes_outgrow_the_room_completes_at_8192_with_no_400(
    tmp_path: Path,
) -> None:
    corpus = generate_corpus(
        tmp_path / "long.db",
        threads=4,
        posts_per_thread=10,
        seed=11,
        qm_ratio=0.9,
        words_per_post=(700, 2600),
    )
    with run_window_server(WINDOW) as server:
        done = terrarium(
            *run_args(tmp_path / "s.db", corpus, agent_url=server.url, context_budget=WINDOW),
            timeout=600,
        )
        assert done.returncode == 0, done.stderr
        assert server.overflows == 0 and server.largest <= WINDOW
        assert _scene_posts(server) == _story_posts(corpus)  # every post read, none cut away
        parts = {r.scene.split("\n", 1)[0] for r in server.requests if r.scene}
        assert any(PART_MARK in heading for heading in parts), "the scenes were split"
    with GlossaryStore(tmp_path / "s.db", read_only=True) as store:
        assert {state.status for state in store.progress.thread_states()} == {"curated"}


@pytest.mark.parametrize(("window", "concurrency"), [(WINDOW, 1), (4096, 1), (WINDOW, 16)])
def test_a_real_novel_imported_completes_at_8192_and_4096_with_no_400(
    tmp_path: Path, window: int, concurrency: int
) -> None:
    corpus = tmp_path / "nowhere.db"
    imported = terrarium("import", str(NOVEL), "--out", str(corpus))
    assert imported.returncode == 0, imported.stderr
    assert "4 chapters" in imported.stdout
    with run_window_server(window) as server:
        done = terrarium(
            *run_args(
                tmp_path / "s.db",
                corpus,
                agent_url=server.url,
                context_budget=window,
                concurrency=concurrency,  # drafted side by side: blocks end before split scenes
            ),
            timeout=600,
        )
        assert done.returncode == 0, done.stderr
        assert server.overflows == 0 and server.largest <= window
        assert _scene_posts(server) == _story_posts(corpus)
    with GlossaryStore(tmp_path / "s.db", read_only=True) as store:
        states = store.progress.thread_states()
        assert len(states) == 4 and {state.status for state in states} == {"curated"}
        terms = {entry.term for entry in store.glossary.entries()}
        assert "Hammersmith" in terms or "Guest House" in terms or len(terms) > 10


@pytest.mark.parametrize("budget", [2048, 3072])
def test_a_budget_below_the_smallest_workable_one_is_refused_with_one_line(
    tmp_path: Path, budget: int
) -> None:
    corpus = tmp_path / "q.db"
    generate_corpus(corpus, threads=1, posts_per_thread=4, seed=1)
    done = terrarium(*run_args(tmp_path / "s.db", corpus, context_budget=budget, max_tokens=1000))
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if said(line)]
    assert len(lines) == 1 and "smallest" in lines[0], done.stderr
    assert not (tmp_path / "s.db").exists(), "nothing is created"
    assert re.search(r"smallest .*?(\d[\d,]*) tokens", lines[0])


def test_a_scene_read_in_parts_is_counted_once_in_the_threads_report(tmp_path: Path) -> None:
    """A thread of two scenes, one a post far longer than the room (read in six parts), was
    reported as 6 scenes annotated: the Dagster metadata said scenes 2, scenes_annotated 6,
    and the asset's line 't00000-1: 6 scenes'. A scene counts once, when its last part is done,
    whether it is read alone or at the end of a block, and a stop between parts counts none."""
    long_post = "<br>".join(f"Paragraph {n}: Ysolde Marrow walks to Dunmarsh." for n in range(900))
    posts = [
        PostRow(id=1, thread=1, time=1, body=long_post, tags=("qm_post",)),
        PostRow(id=2, thread=1, time=2, body="[X] North"),
        PostRow(id=3, thread=1, time=3, body="Ysolde Marrow rests.", tags=("qm_post",)),
    ]
    corpus = write_corpus(tmp_path / "long.db", {1: "Long"}, posts)
    for concurrency in (1, 16):
        db = tmp_path / f"store-{concurrency}.db"
        settings = load_settings(
            offline=True, corpus=corpus, db=str(db), context_budget=8192, concurrency=concurrency
        )
        with Engine.open(settings) as engine:
            report = engine.annotate_thread(1)
        with GlossaryStore(db) as store:
            parts = store.progress.thread_state(1).extra.get("answers", {}).get("answers", 0)
        assert parts > 3, "the long post was read in parts"
        assert report.scenes_annotated == 2, (concurrency, report.scenes_annotated)
