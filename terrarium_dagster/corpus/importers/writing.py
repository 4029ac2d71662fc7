"""Writing a book as a corpus (`write_corpus`): its chapters as threads, its paragraphs as story
posts with a scene break between scenes, its title in a `book` table; its back matter as
Markdown beside the corpus (`reference_path`, `reference_text`); and never writing over what is
not a corpus (`refuse_replacing_what_is_not_a_corpus`)."""

from __future__ import annotations

import html
import re
import sqlite3
from pathlib import Path

from terrarium_dagster.corpus.corpus_schema import CORPUS_INDEXES, CORPUS_SCHEMA
from terrarium_dagster.corpus.importers.model import Book
from terrarium_dagster.errors import InputError

FIRST_POST_ID = 1
FIRST_TIME = 1_000_000_000
AUTHOR = "Narrator"


BOOK_TABLE = "CREATE TABLE book (title TEXT, source TEXT)"


def reference_path(corpus: Path) -> Path:
    """Where an import writes the book's back matter (glossary, appendices) for reference."""
    return corpus.with_name(f"{corpus.name}.reference.md")


def same_corpus(one: Path, other: Path) -> bool:
    """Whether two corpus files hold the same tables with the same rows (read only: neither
    is changed, no -wal or -shm is left)."""

    def rows(path: Path) -> dict[str, list[tuple[object, ...]]]:
        uri = path.resolve().as_uri() + "?mode=ro&immutable=1"
        conn = sqlite3.connect(uri, uri=True)
        try:
            names = [
                row[0]
                for row in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
                )
            ]
            return {
                name: conn.execute(f'SELECT * FROM "{name}" ORDER BY rowid').fetchall()
                for name in names
            }
        finally:
            conn.close()

    try:
        return rows(one) == rows(other)
    except sqlite3.Error:
        return False


def refuse_replacing_what_is_not_a_corpus(target: Path) -> None:
    """`--replace` writes over a corpus (an earlier import), never over anything else: an
    annotator store (its glossary would be lost), the book itself, notes."""
    try:
        with target.open("rb") as handle:
            head = handle.read(16)
    except OSError:
        return  # unreadable: writing over it says why
    what = None
    if head and head != b"SQLite format 3\x00":
        what = "not a corpus (not an SQLite file)"
    elif head:
        uri = target.resolve().as_uri() + "?mode=ro&immutable=1"  # leaves no -wal, -shm
        try:
            conn = sqlite3.connect(uri, uri=True)
            try:
                tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
            finally:
                conn.close()
        except sqlite3.Error:
            tables = set()
        if {"meta", "entry"} <= tables:
            what = "an annotator store (its glossary would be lost)"
        elif not {"thread", "post"} <= tables:
            what = "an SQLite file that is not a corpus"
    if what is not None:
        raise InputError(
            f"--out {target} is {what}; nothing was changed; --replace writes over a corpus "
            "only: give another file name"
        )


def write_corpus(partial: Path, book: Book, source: Path) -> None:
    """The book's chapters, scenes and paragraphs as a corpus in the file `partial`."""
    chapters = book.chapters
    post_id, time = FIRST_POST_ID, FIRST_TIME
    conn = sqlite3.connect(partial, isolation_level=None)
    try:
        conn.executescript(CORPUS_SCHEMA)
        conn.execute(BOOK_TABLE)
        conn.execute("BEGIN")
        conn.execute(
            "INSERT INTO book (title, source) VALUES (?, ?)",
            (book.title or title_from_name(source), source.name),
        )
        for chapter in chapters:
            thread_id = post_id
            conn.execute("INSERT INTO thread (id, title) VALUES (?, ?)", (thread_id, chapter.title))
            for number, scene in enumerate(scene for scene in chapter.scenes if scene):
                if number:
                    _post(conn, thread_id, post_id, time, "* * *", ("scene_break",))
                    post_id, time = post_id + 1, time + 60
                for paragraph in scene:
                    _post(conn, thread_id, post_id, time, paragraph, ("qm_post", "story_post"))
                    post_id, time = post_id + 1, time + 60
        conn.execute("COMMIT")
        conn.executescript(CORPUS_INDEXES)  # after the rows: faster than kept up row by row
    finally:
        conn.close()


def reference_text(book: Book) -> str:
    """The back matter as Markdown: for reading beside the glossary, never as story."""
    parts = [f"# {book.title or 'The book'}: reference (not story)\n"]
    for section in book.reference:
        parts.append(f"## {section.title}\n")
        parts.extend(f"{paragraph}\n" for paragraph in section.paragraphs)
    return "\n".join(parts)


def title_from_name(path: Path) -> str:
    stem = re.sub(r"[_-]+", " ", path.stem).strip()
    return stem[:1].upper() + stem[1:] if stem else "Book"


def _post(
    conn: sqlite3.Connection,
    thread_id: int,
    post_id: int,
    time: int,
    text: str,
    tags: tuple[str, ...],
) -> None:
    conn.execute(
        "INSERT INTO post (thread_id, id, name, trip_code, subject, time, file_url, file_name, "
        "body) VALUES (?, ?, ?, NULL, NULL, ?, NULL, NULL, ?)",
        (thread_id, post_id, AUTHOR, time, html.escape(text, quote=False)),
    )
    conn.executemany("INSERT INTO tag (post_id, name) VALUES (?, ?)", [(post_id, t) for t in tags])
