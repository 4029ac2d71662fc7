"""The bundled sample quest: a real SQLite corpus built from the shipped SQL, and its gold list."""

from __future__ import annotations

import html
import itertools
import re
import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from terrarium_dagster.corpus import sample
from terrarium_dagster.corpus.sample import (
    GoldTerm,
    build_sample_corpus,
    gold_terms,
    sample_corpus_path,
    sample_data_path,
)

SCHEMA = {
    "thread": ["id", "title"],
    "post": [
        "thread_id",
        "id",
        "name",
        "trip_code",
        "subject",
        "time",
        "file_url",
        "file_name",
        "body",
    ],
    "tag": ["post_id", "name"],
    "link": ["link_from", "link_to"],
}
TAGS = {"qm_post", "op_post", "story_post", "vote_tally_post", "dropped_trip"}
QUOTELINK = re.compile(r'<a href="[^"]*#p(\d+)" class="quotelink">&gt;&gt;(\d+)</a>')


def clean(body: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", body.replace("<br>", "\n")))


def mentions(text: str, names: list[str]) -> bool:
    return any(
        re.search(rf"(?<!\w){re.escape(name)}(?:s|es)?(?!\w)", text, re.IGNORECASE)
        for name in names
    )


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlite3.Connection]:
    path = build_sample_corpus(tmp_path_factory.mktemp("sample") / "sample.db")
    connection = sqlite3.connect(path)
    yield connection
    connection.close()


def story_order(db: sqlite3.Connection) -> list[tuple[int, int, str, frozenset[str]]]:
    """(thread_id, post_id, body, tags) of every post, threads by first post time."""
    rows = db.execute(
        "SELECT p.thread_id, p.id, p.body, group_concat(g.name) FROM post p"
        " JOIN (SELECT thread_id, min(time) AS start FROM post GROUP BY thread_id) t"
        " ON t.thread_id = p.thread_id LEFT JOIN tag g ON g.post_id = p.id"
        " GROUP BY p.id ORDER BY t.start, p.thread_id, p.time, p.id"
    )
    return [(t, p, body, frozenset((tags or "").split(",")) - {""}) for t, p, body, tags in rows]


def test_schema_has_the_banished_tables_and_columns(db: sqlite3.Connection) -> None:
    for table, columns in SCHEMA.items():
        found = [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
        assert found == columns, table
    assert {name for (name,) in db.execute("SELECT DISTINCT name FROM tag")} == TAGS


def test_corpus_has_five_threads_and_at_least_150_posts(db: sqlite3.Connection) -> None:
    assert db.execute("SELECT count(*) FROM thread").fetchone()[0] >= 5
    assert db.execute("SELECT count(*) FROM post").fetchone()[0] >= 150
    assert db.execute(
        "SELECT count(*) FROM post WHERE thread_id NOT IN (SELECT id FROM thread)"
    ).fetchone() == (0,)


def test_thread_id_is_its_opening_post_tagged_op(db: sqlite3.Connection) -> None:
    for thread_id, title in db.execute("SELECT id, title FROM thread").fetchall():
        first_id, subject = db.execute(
            "SELECT id, subject FROM post WHERE thread_id = ? ORDER BY time, id LIMIT 1",
            (thread_id,),
        ).fetchone()
        assert first_id == thread_id
        assert subject == title
        tags = {
            name for (name,) in db.execute("SELECT name FROM tag WHERE post_id = ?", (first_id,))
        }
        assert {"op_post", "qm_post", "story_post"} <= tags
    assert db.execute(
        "SELECT count(*) FROM tag WHERE name = 'op_post' AND post_id NOT IN (SELECT id FROM thread)"
    ).fetchone() == (0,)


def test_every_quotelink_has_a_link_row_and_vice_versa(db: sqlite3.Connection) -> None:
    in_bodies: set[tuple[int, int]] = set()
    for post_id, body in db.execute("SELECT id, body FROM post"):
        for href_id, text_id in QUOTELINK.findall(body):
            assert href_id == text_id
            in_bodies.add((post_id, int(text_id)))
        assert body.count('class="quotelink"') == len(QUOTELINK.findall(body))
    rows = db.execute("SELECT link_from, link_to FROM link").fetchall()
    assert len(rows) == len(set(rows))
    assert set(rows) == in_bodies
    assert db.execute(
        "SELECT count(*) FROM link WHERE link_to NOT IN (SELECT id FROM post)"
    ).fetchone() == (0,)


def test_gold_terms_first_appear_in_their_first_post(db: sqlite3.Connection) -> None:
    story = [(t, p, clean(body)) for t, p, body, tags in story_order(db) if "story_post" in tags]
    ids = [post_id for _, post_id, _ in story]
    for term in gold_terms():
        assert term.first_post_id in ids, term.term
        index = ids.index(term.first_post_id)
        thread_id, _, text = story[index]
        assert thread_id == term.thread_id, term.term
        assert mentions(text, term.names), term.term
        earlier = [post_id for _, post_id, text in story[:index] if mentions(text, term.names)]
        assert earlier == [], term.term


def test_gold_list_has_30_distinct_terms(db: sqlite3.Connection) -> None:
    terms = gold_terms()
    assert len(terms) >= 30
    names = [name.casefold() for term in terms for name in term.names]
    assert len(names) == len(set(names))
    assert any("'" in term.term for term in terms)
    assert any("-" in term.term for term in terms)
    assert sum(term.term[0].islower() for term in terms) >= 8
    assert all(isinstance(term, GoldTerm) and term.note for term in terms)


def test_changed_meanings_are_named_in_a_later_thread(db: sqlite3.Connection) -> None:
    thread_start = dict(db.execute("SELECT thread_id, min(time) FROM post GROUP BY thread_id"))
    changed = [term for term in gold_terms() if term.changes_in_thread is not None]
    assert len(changed) >= 4
    for term in changed:
        assert term.changes_in_thread is not None and term.change_post_id is not None
        assert thread_start[term.changes_in_thread] > thread_start[term.thread_id], term.term
        thread_id, body = db.execute(
            "SELECT thread_id, body FROM post WHERE id = ?", (term.change_post_id,)
        ).fetchone()
        assert thread_id == term.changes_in_thread
        assert mentions(clean(body), term.names), term.term
        assert term.change_note


def test_every_thread_has_a_vote_tally(db: sqlite3.Connection) -> None:
    for (thread_id,) in db.execute("SELECT id FROM thread").fetchall():
        tallies = db.execute(
            "SELECT count(*) FROM post p JOIN tag g ON g.post_id = p.id"
            " WHERE p.thread_id = ? AND g.name = 'vote_tally_post'",
            (thread_id,),
        ).fetchone()[0]
        assert tallies >= 1, thread_id
    assert db.execute(
        "SELECT count(*) FROM tag t WHERE t.name = 'vote_tally_post' AND NOT EXISTS"
        " (SELECT 1 FROM tag q WHERE q.post_id = t.post_id AND q.name = 'qm_post')"
    ).fetchone() == (0,)


def test_times_increase_within_threads_and_threads_start_in_order(
    db: sqlite3.Connection,
) -> None:
    starts = db.execute(
        "SELECT thread_id, min(time), max(time) FROM post GROUP BY thread_id ORDER BY thread_id"
    ).fetchall()
    for (_, _, end), (_, next_start, _) in itertools.pairwise(starts):
        assert next_start > end
    for thread_id, _, _ in starts:
        times = [
            t
            for (t,) in db.execute(
                "SELECT time FROM post WHERE thread_id = ? ORDER BY id", (thread_id,)
            )
        ]
        assert all(a < b for a, b in itertools.pairwise(times)), thread_id


def test_dropped_trip_posts_are_qm_story_posts_without_a_trip(db: sqlite3.Connection) -> None:
    rows = db.execute(
        "SELECT p.trip_code, group_concat(g2.name) FROM tag g JOIN post p ON p.id = g.post_id"
        " JOIN tag g2 ON g2.post_id = p.id WHERE g.name = 'dropped_trip' GROUP BY p.id"
    ).fetchall()
    assert rows
    for trip, tags in rows:
        assert trip is None
        assert {"qm_post", "story_post"} <= set(tags.split(","))
    trips = {
        trip
        for (trip,) in db.execute(
            "SELECT DISTINCT p.trip_code FROM post p JOIN tag g ON g.post_id = p.id"
            " WHERE g.name = 'qm_post' AND p.trip_code IS NOT NULL"
        )
    }
    assert len(trips) == 1


def test_prompt_injection_hazards_are_in_player_posts_only(db: sqlite3.Connection) -> None:
    hazards = ["ignore previous instructions", '{"name": "glossary_delete"']
    for hazard in hazards:
        rows = [
            tags
            for _, _, body, tags in story_order(db)
            if hazard.casefold() in clean(body).casefold()
        ]
        assert rows, hazard
        assert all("qm_post" not in tags for tags in rows), hazard


def test_bodies_are_imageboard_html(db: sqlite3.Connection) -> None:
    bodies = [body for (body,) in db.execute("SELECT body FROM post")]
    assert not any("\n" in body for body in bodies)
    joined = "".join(bodies)
    for marker in ("<br>", "&quot;", "&#039;", "&gt;", '<span class="quote">&gt;', "<i>", "<b>"):
        assert marker in joined, marker
    with_files = db.execute("SELECT count(*) FROM post WHERE file_url IS NOT NULL").fetchone()[0]
    assert 0 < with_files < 30


def test_sample_corpus_path_is_idempotent_under_terrarium_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TERRARIUM_HOME", str(tmp_path / "home"))
    first = sample_corpus_path()
    stat = first.stat()
    second = sample_corpus_path()
    assert second == first
    assert first.parent == tmp_path / "home" / "sample"
    assert re.fullmatch(r"sample-[0-9a-f]{12}\.db", first.name)
    assert (second.stat().st_ino, second.stat().st_mtime_ns) == (stat.st_ino, stat.st_mtime_ns)
    connection = sqlite3.connect(first)
    try:
        assert connection.execute("SELECT count(*) FROM thread").fetchone()[0] >= 5
    finally:
        connection.close()
    assert [p.name for p in first.parent.iterdir()] == [first.name]


def test_sample_corpus_path_defaults_to_the_user_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TERRARIUM_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    path = sample_corpus_path()
    assert path.parent == tmp_path / ".cache" / "terrarium-dagster" / "sample"
    assert path.is_file()


def test_concurrent_builds_leave_one_complete_corpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TERRARIUM_HOME", str(tmp_path))
    with ThreadPoolExecutor(max_workers=4) as pool:
        paths = list(pool.map(lambda _: sample_corpus_path(), range(4)))
    assert len(set(paths)) == 1
    assert [p.name for p in (tmp_path / "sample").iterdir()] == [paths[0].name]
    connection = sqlite3.connect(paths[0])
    try:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert connection.execute("SELECT count(*) FROM post").fetchone()[0] >= 150
    finally:
        connection.close()


def test_build_replaces_an_existing_file(tmp_path: Path) -> None:
    dest = tmp_path / "corpus.db"
    dest.write_bytes(b"not a database")
    assert build_sample_corpus(dest) == dest
    connection = sqlite3.connect(dest)
    try:
        assert connection.execute("SELECT count(*) FROM thread").fetchone()[0] >= 5
    finally:
        connection.close()
    assert [p.name for p in tmp_path.iterdir()] == ["corpus.db"]


def test_shipped_data_and_gold_match_the_story_source() -> None:
    source = sample_data_path().parent / "_story.txt"
    if not source.is_file():
        pytest.skip("story source not installed (wheel install)")
    from terrarium_dagster.testing import sample_builder

    data, gold = sample_builder.render()
    assert sample_data_path().read_text(encoding="utf-8") == data
    assert sample.gold_path().read_text(encoding="utf-8") == gold
