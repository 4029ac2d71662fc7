"""Nothing is overwritten without being asked, and a store knows which corpus it belongs to.

Real books (trimmed Project Gutenberg texts in tests/data/books) are imported with `terrarium`
(its main in-process); a store built from one is run and read against the other.
"""

from __future__ import annotations

import sqlite3
import subprocess
from functools import partial
from pathlib import Path

from tests.support.cli import digest, run_args, terrarium_main
from tests.support.corpus_builder import PostRow, write_corpus

BOOKS = Path(__file__).parent / "data" / "books"
MARS = BOOKS / "princess-of-mars-ch1-10.txt"
DUBLINERS = BOOKS / "dubliners-1990s.txt"

_terrarium = partial(terrarium_main, clean=True)


def _refused(done: subprocess.CompletedProcess[str], *words: str) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def test_import_over_an_existing_corpus_is_refused_unless_replace(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.db"
    assert _terrarium("import", str(MARS), "--out", str(corpus), cwd=tmp_path).returncode == 0
    before = digest(corpus)
    for _ in range(2):  # as a newcomer would: the same command again
        _refused(
            _terrarium("import", str(DUBLINERS), "--out", str(corpus), cwd=tmp_path),
            f"--out {corpus} exists",
            "--replace",
            "nothing was changed",
        )
        assert digest(corpus) == before
    replaced = _terrarium("import", str(DUBLINERS), "--out", str(corpus), "--replace")
    assert replaced.returncode == 0, replaced.stderr
    with sqlite3.connect(corpus) as conn:
        assert conn.execute("SELECT title FROM book").fetchone()[0] == "Dubliners"


def test_the_same_import_again_says_nothing_changed_and_writes_nothing(tmp_path: Path) -> None:
    """A newcomer runs `terrarium import book.txt --out corpus.db` twice: the second was refused
    as if it would overwrite. Into a corpus that already holds this very import it says so,
    exit 0, and touches nothing (not even the folder); a changed book is still refused."""
    corpus = tmp_path / "corpus.db"
    assert _terrarium("import", str(MARS), "--out", str(corpus)).returncode == 0
    before, folder = digest(corpus), sorted(tmp_path.iterdir())
    stamps = (corpus.stat().st_mtime_ns, tmp_path.stat().st_mtime_ns)
    for _ in range(2):
        again = _terrarium("import", str(MARS), "--out", str(corpus))
        assert again.returncode == 0, again.stderr
        assert again.stdout.splitlines() == [
            f"{corpus} already holds this import of A Princess of Mars (10 chapters): "
            "nothing changed"
        ]
        assert digest(corpus) == before and sorted(tmp_path.iterdir()) == folder
        assert (corpus.stat().st_mtime_ns, tmp_path.stat().st_mtime_ns) == stamps
    edited = tmp_path / MARS.name
    edited.write_text(MARS.read_text(encoding="utf-8").replace("Dejah", "Deja"), "utf-8")
    _refused(
        _terrarium("import", str(edited), "--out", str(corpus)),
        f"--out {corpus} exists",
        "--replace",
    )
    assert digest(corpus) == before


def test_a_store_refuses_another_corpus_and_accepts_its_own_grown(tmp_path: Path) -> None:
    corpus, store = tmp_path / "corpus.db", tmp_path / "store.db"
    assert _terrarium("import", str(MARS), "--out", str(corpus)).returncode == 0
    first = _terrarium(*run_args(store, corpus, max_scenes=2), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'corpus_identity'").fetchone()

    # the same path now holds another book: the run, and every reader, refuse it in one line
    assert _terrarium("import", str(DUBLINERS), "--out", str(corpus), "--replace").returncode == 0
    before = digest(store)
    line = _refused(
        _terrarium(*run_args(store, corpus, max_scenes=2), cwd=tmp_path),
        "A Princess of Mars",
        "Dubliners",
        "nothing was written",
    )
    assert str(store) in line
    for reader in (
        ["export", "--db", str(store), "--format", "json", "--out", str(tmp_path / "g.json")],
        ["lineage", "Sola", "--db", str(store)],
    ):
        _refused(_terrarium(*reader, cwd=tmp_path), "A Princess of Mars", "Dubliners")
    assert digest(store) == before
    assert not (tmp_path / "g.json").exists()
    status = _terrarium("status", "--db", str(store), cwd=tmp_path)  # says so, checks nothing
    assert status.returncode == 0, status.stderr
    assert f"corpus: {corpus} now holds another corpus" in status.stdout
    assert "edited" not in status.stdout  # another book's posts are not edits of this one's

    # its own corpus, grown by a thread at the end (a quest grows), is still its own
    assert _terrarium("import", str(MARS), "--out", str(corpus), "--replace").returncode == 0
    with sqlite3.connect(corpus) as conn:
        last_post = conn.execute("SELECT max(id), max(time) FROM post").fetchone()
        thread = last_post[0] + 1
        conn.execute("INSERT INTO thread (id, title) VALUES (?, 'A NEW CHAPTER')", (thread,))
        conn.execute(
            "INSERT INTO post (thread_id, id, name, time, body) VALUES (?, ?, 'x', ?, 'More.')",
            (thread, thread, last_post[1] + 60),
        )
        conn.execute("INSERT INTO tag (post_id, name) VALUES (?, 'qm_post')", (thread,))
    again = _terrarium(*run_args(store, corpus, max_scenes=2), cwd=tmp_path)
    assert again.returncode == 0, again.stderr


def test_a_store_from_before_identities_adopts_its_corpus(tmp_path: Path) -> None:
    corpus, other, store = tmp_path / "corpus.db", tmp_path / "other.db", tmp_path / "store.db"
    assert _terrarium("import", str(MARS), "--out", str(corpus)).returncode == 0
    assert _terrarium("import", str(DUBLINERS), "--out", str(other)).returncode == 0
    assert _terrarium(*run_args(store, corpus, max_scenes=1)).returncode == 0
    with sqlite3.connect(store) as conn:  # as an older version left it
        conn.execute("DELETE FROM meta WHERE key = 'corpus_identity'")
    adopted = _terrarium(*run_args(store, corpus, max_scenes=1))
    assert adopted.returncode == 0, adopted.stderr
    _refused(_terrarium(*run_args(store, other, max_scenes=1)), "A Princess of Mars")


def test_a_file_that_is_not_a_store_is_named_so(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("shopping: eggs, milk\n" * 40)
    before = digest(notes)
    for args in (
        run_args(notes, max_scenes=1),
        ["status", "--db", str(notes)],
        ["export", "--db", str(notes), "--format", "json", "--out", str(tmp_path / "g.json")],
        ["recover", "--db", str(notes), "--out", str(tmp_path / "new.db")],
    ):
        line = _refused(_terrarium(*args, cwd=tmp_path), "is not an annotator store")
        assert "damaged" not in line and "recover" not in line, line
    assert digest(notes) == before
    assert not (tmp_path / "new.db").exists()

    corpus = tmp_path / "corpus.db"  # the corpus given as the store: said so
    assert _terrarium("import", str(MARS), "--out", str(corpus)).returncode == 0
    before = digest(corpus)
    _refused(_terrarium("status", "--db", str(corpus)), "is a corpus", "--corpus")
    assert digest(corpus) == before


def test_a_damaged_store_is_refused_in_one_line_with_the_report_in_the_log(
    tmp_path: Path,
) -> None:
    corpus, store = tmp_path / "corpus.db", tmp_path / "store.db"
    assert _terrarium("import", str(MARS), "--out", str(corpus)).returncode == 0
    assert _terrarium(*run_args(store, corpus, max_scenes=2)).returncode == 0
    with sqlite3.connect(store) as conn:  # free pages, then lose the free list
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode = DELETE")
        conn.execute("CREATE TABLE filler (x BLOB)")
        conn.execute("INSERT INTO filler VALUES (zeroblob(40000))")
        conn.execute("DROP TABLE filler")
        assert conn.execute("PRAGMA freelist_count").fetchone()[0] > 2
    with store.open("r+b") as handle:  # header: first free-list trunk page, free page count
        handle.seek(32)
        handle.write(bytes(8))
    before = digest(store)
    line = _refused(
        _terrarium(*run_args(store, corpus, max_scenes=1)),
        "is damaged",
        "nothing was written",
        "terrarium recover",
    )
    assert "never used" not in line
    verbose = _terrarium("-v", "status", "--db", str(store))
    assert verbose.returncode == 2
    assert "never used" in verbose.stderr  # the integrity report, at debug level
    assert digest(store) == before


def test_a_thread_inserted_among_the_first_three_is_named_in_the_refusal(tmp_path: Path) -> None:
    """A thread added with an earlier first post than the store's third thread changes the
    corpus's beginning but not its first thread: both descriptions read the same, so the line
    names the thread in story order that differs."""
    corpus, store = tmp_path / "corpus.db", tmp_path / "store.db"
    posts = [
        PostRow(id=n, thread=n, time=100 * n, body=f"Magister Quillon rules Dunharrow {n}.",
                tags=("qm_post",))
        for n in (10, 20, 30)
    ]  # fmt: skip
    write_corpus(corpus, {10: "First", 20: "Second", 30: "Third"}, posts)
    assert _terrarium(*run_args(store, corpus), cwd=tmp_path).returncode == 0
    with sqlite3.connect(corpus) as conn:
        conn.execute("INSERT INTO thread (id, title) VALUES (5, 'Found later')")
        conn.execute("INSERT INTO post (thread_id, id, time, body) VALUES (5, 5, 1500, 'More.')")
        conn.execute("INSERT INTO tag (post_id, name) VALUES (5, 'qm_post')")
    before = digest(store)
    _refused(
        _terrarium(*run_args(store, corpus), cwd=tmp_path),
        'thread 2 in story order: 20 "Second" in the store, 5 "Found later" given',
        "nothing was written",
    )
    assert digest(store) == before
