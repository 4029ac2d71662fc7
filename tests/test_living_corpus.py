"""A living quest: a corpus that grows and changes between runs (the CLI's main, a real corpus).

The sample quest is annotated; then, between runs, QM posts are appended to the last thread
(first continuing its last scene, then after a player's reply), a post cited as a source is
edited, then deleted, and posts are added to an earlier thread. Each new post of the last thread
is annotated as a new scene of it; the edit and the deletion are reported by `run` and `status`
with the entries that cite the post; the earlier thread's new posts are named by `status` and
left for a rewind (threads are annotated in story order).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import pytest

from terrarium_dagster.engine.opening import CORPUS_META
from terrarium_dagster.store.annotator import GlossaryStore
from tests.support.cli import run_args, terrarium_main


def _append(corpus: Path, thread_id: int, bodies: list[tuple[str, bool]]) -> list[int]:
    """Append posts (body, by the QM) to a thread, after its last post; their ids."""
    with closing(sqlite3.connect(corpus)) as conn, conn:
        last_id, last_time = conn.execute(
            "SELECT max(id), max(time) FROM post WHERE thread_id = ?", (thread_id,)
        ).fetchone()
        first_free = conn.execute("SELECT max(id) FROM post").fetchone()[0] + 1
        ids = []
        for offset, (body, by_qm) in enumerate(bodies):
            post_id = max(first_free, last_id + 1) + offset
            conn.execute(
                "INSERT INTO post (thread_id, id, name, time, body) VALUES (?, ?, ?, ?, ?)",
                (
                    thread_id,
                    post_id,
                    "QM" if by_qm else "Anonymous",
                    last_time + 60 * (offset + 1),
                    body,
                ),
            )
            if by_qm:
                conn.executemany(
                    "INSERT INTO tag (post_id, name) VALUES (?, ?)",
                    [(post_id, "qm_post"), (post_id, "story_post")],
                )
            ids.append(post_id)
    return ids


def _status(db: Path) -> dict[str, object]:
    done = terrarium_main("status", "--json", "--db", str(db))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _run(corpus: Path, db: Path) -> subprocess.CompletedProcess[str]:
    done = terrarium_main(*run_args(db, corpus))
    assert done.returncode == 0, done.stderr
    return done


def _cited(db: Path, post_ids: list[int]) -> set[int]:
    with closing(sqlite3.connect(db)) as conn:
        marks = ",".join("?" * len(post_ids))
        rows = conn.execute(
            f"SELECT DISTINCT post_id FROM provenance WHERE post_id IN ({marks})", post_ids
        )
        return {row[0] for row in rows}


def _tagged(db: Path) -> set[int]:
    with closing(sqlite3.connect(db)) as conn:
        rows = conn.execute(
            "SELECT id FROM entry WHERE EXISTS "
            "(SELECT 1 FROM json_each(entry.tags) WHERE value = 'source-changed')"
        )
        return {row[0] for row in rows}


def _merged_or_deleted(db: Path) -> set[int]:
    with closing(sqlite3.connect(db)) as conn:
        rows = conn.execute("SELECT id FROM entry WHERE deleted = 1 OR status = 'merged'")
        return {row[0] for row in rows}


@pytest.fixture
def quest(
    sample_db: Path, offline_sample_store: Path, tmp_path: Path
) -> tuple[Path, Path, list[int]]:
    """The sample quest as a corpus of its own, annotated: a copy of the sample and a copy of
    the store the offline run writes from it (`offline_sample_store`, annotated once), which
    records the copy as its corpus, as a run given the copy records it."""
    corpus = tmp_path / "quest.db"
    shutil.copy(sample_db, corpus)
    db = tmp_path / "store.db"
    shutil.copyfile(offline_sample_store, db)
    with GlossaryStore(db) as store:
        assert store.get_meta(CORPUS_META) == str(sample_db.resolve())
        store.set_meta(CORPUS_META, str(corpus.resolve()))
    threads = [thread["thread_id"] for thread in _status(db)["threads"]]  # type: ignore[index]
    return corpus, db, threads


def test_posts_added_to_the_last_thread_are_annotated_as_new_scenes(
    quest: tuple[Path, Path, list[int]],
) -> None:
    corpus, db, threads = quest
    last = threads[-1]
    before = _status(db)["threads"][-1]  # type: ignore[index]

    # QM posts right after the last scene: they continue it, and are a new scene of the thread
    grown = _append(
        corpus,
        last,
        [
            ("Warden Ysolde Varrick raised the Emberglass Lantern over the Gloamford.", True),
            ("The Emberglass Lantern burned blue; Ysolde Varrick waited at the Gloamford.", True),
        ],
    )
    waiting = _status(db)["threads"][-1]  # type: ignore[index]
    assert waiting["new_posts"] == 2 and waiting["scenes_total"] == before["scenes_total"]
    _run(corpus, db)
    after = _status(db)["threads"][-1]  # type: ignore[index]
    assert after["status"] == "curated" and after["new_posts"] == 0
    assert after["scenes_done"] == after["scenes_total"] == before["scenes_total"] + 1
    assert _cited(db, grown), "the new posts were not annotated"

    # a player's reply, then more QM posts: another new scene
    more = _append(
        corpus,
        last,
        [
            (">Follow the lantern", False),
            (
                "Brother Halvane Croft opened the Sunken Choir's gate for the Emberglass Lantern.",
                True,
            ),
        ],
    )
    _run(corpus, db)
    again = _status(db)["threads"][-1]  # type: ignore[index]
    assert again["scenes_done"] == again["scenes_total"] == before["scenes_total"] + 2
    assert _cited(db, more[1:])
    # nothing new: a run does nothing
    quiet = _run(corpus, db)
    assert "nothing left to annotate (0 calls)" in quiet.stdout
    assert _status(db)["threads"][-1] == again  # type: ignore[index]


def test_an_edited_or_deleted_source_post_is_reported_with_its_entries(
    quest: tuple[Path, Path, list[int]],
) -> None:
    corpus, db, _ = quest
    with closing(sqlite3.connect(db)) as conn:
        post_id, thread_id, quote = conn.execute(
            "SELECT post_id, thread_id, quote FROM provenance WHERE length(quote) > 20 "
            "ORDER BY id LIMIT 1"
        ).fetchone()
        entries = {
            f"E{row[0]}"
            for row in conn.execute(
                "SELECT entry_id FROM provenance WHERE post_id = ? "
                "AND superseded_revision_id IS NULL",
                (post_id,),
            )
        }
    assert _status(db)["living_corpus"]["sources_changed"] == []  # type: ignore[index]
    with closing(sqlite3.connect(corpus)) as conn, conn:
        original = conn.execute(
            "SELECT thread_id, id, name, trip_code, subject, time, file_url, file_name, body "
            "FROM post WHERE id = ?",
            (post_id,),
        ).fetchone()
        body = original[-1]
        conn.execute(
            "UPDATE post SET body = ? WHERE id = ?", ("Rewritten by the QM. " + body[-40:], post_id)
        )

    # status sees it at once (checked against the corpus), run says it and keeps it marked
    (change,) = _status(db)["living_corpus"]["sources_changed"]  # type: ignore[index]
    assert change["post"] == f"{thread_id}#{post_id}" and change["change"] == "edited"
    assert change["quotes_hold"] is False and set(change["entries"]) == entries
    done = _run(corpus, db)
    assert f"source changed: post {thread_id}#{post_id} edited" in done.stderr
    assert "no longer its words" in done.stderr
    with closing(sqlite3.connect(db)) as conn:
        marked = conn.execute(
            "SELECT change, quotes_hold FROM source_post WHERE post_id = ?", (post_id,)
        ).fetchone()
    assert marked == ("edited", 0)
    assert quote  # the stored quote is kept as cited (never rewritten silently)
    # ... and the entries citing it say so, in the store and in every export
    assert _tagged(db) == {int(e[1:]) for e in entries} - _merged_or_deleted(db)
    out = db.parent / "export.json"
    exported = terrarium_main("export", "--db", str(db), "--format", "json", "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    document = json.loads(out.read_text())
    marked_terms = {e["id"] for e in document["entries"] if "source-changed" in e["tags"]}
    assert marked_terms == _tagged(db)

    with closing(sqlite3.connect(corpus)) as conn, conn:
        conn.execute("DELETE FROM post WHERE id = ?", (post_id,))
    done = _run(corpus, db)
    assert f"post {thread_id}#{post_id} deleted: its quotes have no source now" in done.stderr
    (change,) = _status(db)["living_corpus"]["sources_changed"]  # type: ignore[index]
    assert change["change"] == "deleted"

    # the post restored as it was cited: clear again
    with closing(sqlite3.connect(corpus)) as conn, conn:
        conn.execute(
            "INSERT INTO post (thread_id, id, name, trip_code, subject, time, file_url, "
            "file_name, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            original,
        )
    done = _run(corpus, db)
    assert "source changed" not in done.stderr
    assert _status(db)["living_corpus"]["sources_changed"] == []  # type: ignore[index]
    assert _tagged(db) == set(), "the mark is taken off once the source holds again"


def test_posts_added_to_an_earlier_thread_are_named_and_left_for_a_rewind(
    quest: tuple[Path, Path, list[int]],
) -> None:
    corpus, db, threads = quest
    first = _status(db)["threads"][0]  # type: ignore[index]
    added = _append(corpus, threads[0], [("The Lanternwright Oskar Vell came too late.", True)])
    waiting = _status(db)["threads"][0]  # type: ignore[index]
    assert waiting["new_posts"] == 1
    done = terrarium_main("status", "--db", str(db))
    assert "--rewind --threads" in done.stdout
    _run(corpus, db)
    assert _status(db)["threads"][0]["scenes_total"] == first["scenes_total"]  # type: ignore[index]
    assert not _cited(db, added)


def test_a_run_with_nothing_left_reads_each_state_and_each_cited_post_about_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second run of a finished book of 239 chapters took 12 s to say "nothing left": every
    chapter's step parsed every chapter's state again, and the sources' check read each cited
    paragraph with a query of its own. Counted here: a state parsed per version of its row, the
    cited posts read in a query per few hundred."""
    from terrarium_dagster.cli import main
    from terrarium_dagster.corpus.reader import Corpus
    from terrarium_dagster.store import progress
    from terrarium_dagster.testing.synthetic import generate_corpus

    threads = 30
    corpus = generate_corpus(tmp_path / "book.db", threads=threads, posts_per_thread=2, seed=5)
    db = tmp_path / "store.db"
    assert main(run_args(db, corpus)) == 0
    parsed: list[int] = []
    posts_read: list[int] = []
    parse, original = progress._thread_state, Corpus.post

    def counted_parse(row: sqlite3.Row) -> object:
        parsed.append(row["thread_id"])
        return parse(row)

    def counted_post(self: Corpus, post_id: int) -> object:
        posts_read.append(post_id)
        return original(self, post_id)

    monkeypatch.setattr(progress, "_thread_state", counted_parse)
    monkeypatch.setattr(Corpus, "post", counted_post)
    assert main(run_args(db, corpus)) == 0
    # linear: each part of the store that reads them parses a row once (18 times more before)
    assert len(parsed) <= 5 * threads, f"{len(parsed)} thread states parsed for {threads}"
    assert posts_read == [], "cited posts read one by one"
