"""The corpus reader: story order, posts, ranges, URLs, quotes, scenes, streaming, no N+1."""

from __future__ import annotations

import inspect
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from terrarium_dagster.corpus import reader as reader_module
from terrarium_dagster.corpus.reader import Corpus, parse_ref
from terrarium_dagster.corpus.scenes import batch_scenes
from terrarium_dagster.corpus.units import Post, parse_thread_key
from terrarium_dagster.errors import CorpusError, InputError
from terrarium_dagster.testing.synthetic import generate_corpus, vocabulary
from tests.support.corpus_builder import PostRow, write_corpus

URL = "https://quest.example/sample/{thread_id}#{post_id}"
QM = ("qm_post", "story_post")


@pytest.fixture
def story(tmp_path: Path) -> Path:
    """Three threads whose ids are not in story order, an empty thread and orphan posts.

    Story order: 300 (first post at t=50), 100 (t=100), 200 (t=100, higher id than 100).
    """
    posts = [
        PostRow(
            100, 100, 100, "Opening<br>of &quot;one&quot;", ("op_post", "qm_post", "story_post")
        ),
        PostRow(101, 100, 110, "more story", QM, name="QM", trip="!trip"),
        PostRow(102, 100, 120, '<a class="quotelink" href="#p101">&gt;&gt;101</a><br>vote', ()),
        PostRow(103, 100, 115, "skewed clock", QM),  # id after 102, time before it
        PostRow(104, 100, 130, "tally", ("qm_post", "vote_tally_post")),
        PostRow(105, 100, 140, "after tally", QM),
        PostRow(200, 200, 100, "two", ("qm_post", "qm_post")),  # duplicate tag row
        PostRow(201, 200, 105, "player", ()),
        PostRow(300, 300, 50, "three", QM, subject="The start"),
        PostRow(900, 999, 10, "orphan: no thread row", QM),
    ]
    links = [(102, 101), (102, 101), (102, 100), (201, 200)]
    threads: dict[int, str | None] = {100: "One", 200: "Two", 300: None, 400: "Empty"}
    return write_corpus(tmp_path / "story.db", threads, posts, links)


def test_threads_in_story_order_by_first_post_time_then_id(story: Path) -> None:
    with Corpus(story) as corpus:
        threads = corpus.threads()
    assert [thread.id for thread in threads] == [300, 100, 200]
    assert [thread.position for thread in threads] == [0, 1, 2]
    assert [thread.key for thread in threads] == ["t00000-300", "t00001-100", "t00002-200"]
    assert [thread.first_time for thread in threads] == [50, 100, 100]
    assert [thread.post_count for thread in threads] == [1, 6, 2]


def test_thread_without_title_has_empty_title(story: Path) -> None:
    with Corpus(story) as corpus:
        assert corpus.thread(300).title == ""


def test_threads_without_posts_are_skipped(story: Path) -> None:
    with Corpus(story) as corpus:
        assert 400 not in [thread.id for thread in corpus.threads()]
        with pytest.raises(CorpusError, match="no thread 400"):
            corpus.thread(400)


def test_thread_by_key(story: Path) -> None:
    with Corpus(story) as corpus:
        assert corpus.thread_by_key("t00001-100").id == 100
        with pytest.raises(CorpusError, match="stale"):
            corpus.thread_by_key("t00002-100")
        with pytest.raises(CorpusError, match="no thread 555"):
            corpus.thread_by_key("t00001-555")
        with pytest.raises(InputError, match="malformed thread key"):
            corpus.thread_by_key("100")


@pytest.mark.parametrize(
    "key", ["t1-100", "t00001_100", "x00001-100", "t000001-100", "", "t00001-"]
)
def test_parse_thread_key_refuses_malformed_keys(key: str) -> None:
    with pytest.raises(InputError, match="malformed thread key"):
        parse_thread_key(key)


def test_parse_thread_key_round_trips() -> None:
    assert parse_thread_key("t00042-32266754") == (42, 32266754)
    assert parse_thread_key("t123456-7") == (123456, 7)


def test_posts_in_time_then_id_order_with_tags_and_clean_text(story: Path) -> None:
    with Corpus(story) as corpus:
        posts = list(corpus.posts(100))
    assert [post.id for post in posts] == [100, 101, 103, 102, 104, 105]
    first = posts[0]
    assert first.text == 'Opening\nof "one"'
    assert first.tags == frozenset({"op_post", "qm_post", "story_post"})
    assert first.ref == "100#100"
    assert (posts[1].name, posts[1].trip_code) == ("QM", "!trip")
    assert posts[3].text == ">>101\nvote"
    assert posts[3].tags == frozenset()
    assert not posts[3].is_qm
    assert posts[4].is_qm and posts[4].is_vote_tally


def test_duplicate_tag_rows_collapse(story: Path) -> None:
    with Corpus(story) as corpus:
        assert next(corpus.posts(200)).tags == frozenset({"qm_post"})


def test_posts_streams_as_a_generator(story: Path) -> None:
    with Corpus(story) as corpus:
        posts = corpus.posts(100)
        assert inspect.isgenerator(posts)
        assert next(posts).id == 100
        # A second stream on the same connection does not disturb the first.
        assert [post.id for post in corpus.posts(200)] == [200, 201]
        assert next(posts).id == 101


def test_posts_of_unknown_thread_is_a_corpus_error(story: Path) -> None:
    with Corpus(story) as corpus, pytest.raises(CorpusError, match="no thread 12345"):
        corpus.posts(12345)


def test_post_and_has_post(story: Path) -> None:
    with Corpus(story) as corpus:
        found = corpus.post(300)
        assert found is not None
        assert (found.thread_id, found.subject, found.text) == (300, "The start", "three")
        assert corpus.post(7) is None
        assert corpus.has_post(101)
        assert not corpus.has_post(7)


def test_posts_by_id_are_the_posts_post_reads_in_chunks_a_missing_id_left_out(
    story: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reader_module, "POSTS_PER_QUERY", 2)  # several queries
    with Corpus(story) as corpus:
        ids = [post.id for thread in corpus.threads() for post in corpus.posts(thread.id)]
        found = corpus.posts_by_id([*ids, 7, ids[0]])
        assert sorted(found) == sorted(ids)
        assert all(found[post_id] == corpus.post(post_id) for post_id in ids)
        assert corpus.posts_by_id([]) == {}


def test_post_range_from_a_post_in_time_then_id_order(story: Path) -> None:
    with Corpus(story) as corpus:
        assert [post.id for post in corpus.post_range(100, 101, 3)] == [101, 103, 102]
        assert [post.id for post in corpus.post_range(100, 103, 100)] == [103, 102, 104, 105]
        assert corpus.post_range(100, 105, 0) == []


def test_post_range_refuses_bad_arguments(story: Path) -> None:
    with Corpus(story) as corpus:
        with pytest.raises(InputError, match="post 200 is in thread 200, not 100"):
            corpus.post_range(100, 200, 5)
        with pytest.raises(InputError, match="no post 7"):
            corpus.post_range(100, 7, 5)
        with pytest.raises(InputError, match="count"):
            corpus.post_range(100, 100, -1)
        with pytest.raises(CorpusError, match="no thread 8"):
            corpus.post_range(8, 100, 1)


def test_quotes_of_reads_the_link_table(story: Path) -> None:
    with Corpus(story) as corpus:
        assert corpus.quotes.quotes_of(102) == [100, 101]
        assert corpus.quotes.quotes_of(101) == []


def test_post_url_from_template(story: Path) -> None:
    with Corpus(story, url_template=URL) as corpus:
        post = corpus.post(101)
        assert post is not None
        assert corpus.post_url(post) == "https://quest.example/sample/100#101"
        assert corpus.post_url("100#103") == "https://quest.example/sample/100#103"
        with pytest.raises(InputError, match="malformed post reference"):
            corpus.post_url("103")


def test_post_url_without_template_is_none(story: Path) -> None:
    with Corpus(story) as corpus:
        assert corpus.post_url("100#101") is None


def test_parse_ref() -> None:
    assert parse_ref("100#101") == (100, 101)
    assert parse_ref(" 100#101\n") == (100, 101)


@pytest.mark.parametrize("ref", ["101", "a#b", "#1", "1#", "1#2#3", "-1#2", "1 # 2", "١#٢", ""])
def test_parse_ref_refuses_malformed_refs(ref: str) -> None:
    with pytest.raises(InputError, match="malformed post reference"):
        parse_ref(ref)


def test_scenes_of_a_thread(story: Path) -> None:
    with Corpus(story) as corpus:
        scenes = corpus.scenes(100)
        assert [scene.post_ids for scene in scenes] == [(100, 101, 103), (105,)]
        assert [scene.id for scene in scenes] == ["100#100", "100#105"]
        assert scenes == batch_scenes(corpus.posts(100))


def test_iter_scenes_streams_thread_by_thread_in_story_order(story: Path) -> None:
    with Corpus(story) as corpus:
        scenes = corpus.iter_scenes()
        assert inspect.isgenerator(scenes)
        assert [scene.id for scene in scenes] == ["300#300", "100#100", "100#105", "200#200"]


@pytest.mark.parametrize("index_thread_id", [False, True])
def test_iter_scenes_strategies_agree_with_scenes(tmp_path: Path, index_thread_id: bool) -> None:
    path = generate_corpus(
        tmp_path / "s.db", threads=4, posts_per_thread=120, seed=7, indexes=index_thread_id
    )
    with Corpus(path) as corpus:
        expected = [scene for thread in corpus.threads() for scene in corpus.scenes(thread.id)]
        assert len(expected) > 20
        assert list(corpus.iter_scenes("single_query")) == expected
        assert list(corpus.iter_scenes("per_thread")) == expected
        assert list(corpus.iter_scenes()) == expected


def test_iter_scenes_refuses_an_unknown_strategy(story: Path) -> None:
    with Corpus(story) as corpus, pytest.raises(InputError, match="unknown scan strategy"):
        corpus.iter_scenes("sideways")  # type: ignore[arg-type]


def _count_statements(corpus: Corpus, read: Callable[[], Iterable[object]]) -> tuple[int, int]:
    """How many SQL statements `read()` runs, and how many items it gives."""
    statements: list[str] = []
    corpus.connection.set_trace_callback(statements.append)
    try:
        consumed = sum(1 for _ in read())
    finally:
        corpus.connection.set_trace_callback(None)
    return len(statements), consumed


@pytest.fixture
def long_thread(tmp_path: Path) -> Path:
    posts = [
        PostRow(1000 + i, 1000, 5000 + i, f"post {i}<br>line", QM if i % 3 else ("qm_post",))
        for i in range(500)
    ]
    posts += [PostRow(2000 + i, 2000, 9000 + i, "p", QM if i % 2 else ()) for i in range(100)]
    return write_corpus(tmp_path / "long.db", {1000: "Long", 2000: "Other"}, posts)


def test_reading_a_thread_of_500_posts_is_one_statement(long_thread: Path) -> None:
    with Corpus(long_thread) as corpus:
        statements, consumed = _count_statements(corpus, lambda: corpus.posts(1000))
    assert consumed == 500
    assert statements == 1


def test_scenes_of_a_thread_of_500_posts_is_one_statement(long_thread: Path) -> None:
    with Corpus(long_thread) as corpus:
        statements, consumed = _count_statements(corpus, lambda: corpus.scenes(1000))
    assert consumed == 1
    assert statements == 1


@pytest.mark.parametrize(
    ("strategy", "expected"), [(None, 1), ("single_query", 1), ("per_thread", 2)]
)
def test_iter_scenes_runs_a_constant_number_of_statements(
    long_thread: Path, strategy: str | None, expected: int
) -> None:
    with Corpus(long_thread) as corpus:
        statements, consumed = _count_statements(corpus, lambda: corpus.iter_scenes(strategy))  # type: ignore[arg-type]
    assert consumed == 1 + 50
    assert statements == expected


def test_default_strategy_is_per_thread_with_an_index_on_thread_id(tmp_path: Path) -> None:
    posts = [PostRow(1, 1, 10, "a", QM), PostRow(2, 2, 20, "b", QM), PostRow(3, 3, 30, "c", QM)]
    path = write_corpus(tmp_path / "i.db", {1: "a", 2: "b", 3: "c"}, posts, index_thread_id=True)
    with Corpus(path) as corpus:
        statements, consumed = _count_statements(corpus, corpus.iter_scenes)
    assert (statements, consumed) == (3, 3)


def test_closed_corpus_refuses_queries(story: Path) -> None:
    corpus = Corpus(story)
    with corpus:
        assert corpus.has_post(100)
    with pytest.raises(sqlite3.ProgrammingError):
        corpus.has_post(100)
    corpus.close()  # closing twice is harmless


# -- the synthetic corpus generator --------------------------------------------------------


def _dump(path: Path) -> list[list[tuple[object, ...]]]:
    conn = sqlite3.connect(path)
    try:
        return [
            conn.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
            for table in ("thread", "post", "tag", "link")
        ]
    finally:
        conn.close()


def test_synthetic_corpus_is_deterministic(tmp_path: Path) -> None:
    first = generate_corpus(tmp_path / "a.db", threads=2, posts_per_thread=60, seed=11)
    second = generate_corpus(tmp_path / "b.db", threads=2, posts_per_thread=60, seed=11)
    other = generate_corpus(tmp_path / "c.db", threads=2, posts_per_thread=60, seed=12)
    assert _dump(first) == _dump(second)
    assert _dump(first) != _dump(other)


def test_synthetic_corpus_has_the_shape_asked_for(tmp_path: Path) -> None:
    path = generate_corpus(tmp_path / "s.db", threads=3, posts_per_thread=200, seed=1)
    with Corpus(path) as corpus:
        threads = corpus.threads()
        assert [thread.post_count for thread in threads] == [200, 200, 200]
        posts = [post for thread in threads for post in corpus.posts(thread.id)]
        tags = {tag for post in posts for tag in post.tags}
        assert {"op_post", "qm_post", "story_post", "vote_tally_post"} <= tags
        qm_share = sum(post.is_qm for post in posts) / len(posts)
        assert 0.25 < qm_share < 0.5
        quoting = [post for post in posts if post.text.startswith(">>")]
        assert quoting
        assert all(corpus.quotes.quotes_of(post.id) for post in quoting)
        story_text = " ".join(post.text for post in posts if post.is_qm)
        assert vocabulary(1).names[0] in story_text
        assert "&#039;" not in story_text and "<br>" not in story_text


def test_synthetic_corpus_replaces_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    path.write_text("old contents")
    generate_corpus(path, threads=1, posts_per_thread=5)
    with Corpus(path) as corpus:
        assert corpus.threads()[0].post_count == 5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.db"]


@pytest.mark.parametrize(
    "arguments",
    [
        {"threads": 0, "posts_per_thread": 5},
        {"threads": 1, "posts_per_thread": 0},
        {"threads": 1, "posts_per_thread": 5, "qm_ratio": 1.5},
        {"threads": 1, "posts_per_thread": 5, "words_per_post": (10, 5)},
    ],
)
def test_synthetic_corpus_refuses_bad_arguments(tmp_path: Path, arguments: dict) -> None:
    with pytest.raises(ValueError):
        generate_corpus(tmp_path / "s.db", **arguments)
    assert not (tmp_path / "s.db").exists()


def test_post_is_immutable(story: Path) -> None:
    with Corpus(story) as corpus:
        post = corpus.post(100)
    assert isinstance(post, Post)
    with pytest.raises(AttributeError):
        post.text = "changed"  # type: ignore[misc]


def test_a_stream_left_open_survives_closing_the_corpus(story: Path) -> None:
    corpus = Corpus(story)
    posts = corpus.posts(100)
    assert next(posts).id == 100
    corpus.close()
    posts.close()  # finalising the stream after the corpus closed raises nothing
