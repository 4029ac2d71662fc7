"""The story's name, for whatever is named after it (the reader's site, the lorebook's world).

A corpus made by `terrarium import` records the book's title (the `book` table it adds beside
the corpus schema); a quest's threads carry it in their titles ("Lanternwake Quest #3: ..."),
so the first thread's title up to its number or subtitle is the name, unless that is only a
chapter heading ("CHAPTER I", "Part 2"); otherwise the corpus file's name stands in.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from contextlib import closing

from terrarium_dagster.corpus.reader import Corpus

_CHAPTERISH = re.compile(
    r"^(?:chapter|book|part|volume|prologue|foreword|preface|introduction|contents|text)\b"
    r"|^[IVXLCDM]+\.?$|^\d+\.?$",
    re.I,
)


def recorded_title(corpus: Corpus) -> str | None:
    """The title an import recorded (`book.title`), if the corpus has one."""
    try:
        with closing(sqlite3.connect(f"file:{corpus.path}?mode=ro", uri=True)) as conn:
            row = conn.execute("SELECT title FROM book LIMIT 1").fetchone()
    except sqlite3.Error:
        return None
    title = " ".join(str(row[0]).split()) if row and row[0] else ""
    return title or None


def story_name(corpus: Corpus) -> str:
    """What the story is called (never empty)."""
    recorded = recorded_title(corpus)
    if recorded:
        return recorded
    threads = corpus.threads()
    if threads:
        first = threads[0].title or ""
        name = re.split(r"\s*(?:#\d+|:|—| - )", first, maxsplit=1)[0].strip()
        if name and not _CHAPTERISH.match(name):
            return name
    stem = corpus.path.stem.replace("_", " ").replace("-", " ").strip()
    return stem[:1].upper() + stem[1:] if stem else "Story"


def is_book(corpus: Corpus) -> bool:
    """Whether the corpus came from `terrarium import` (a novel or a document): its threads are
    chapters and its posts paragraphs, with no real times or authors to show."""
    return recorded_title(corpus) is not None


_BARE_NUMBER = re.compile(r"^(?:[IVXLCDM]+|\d+)\.?$", re.I)


def chapter_title(title: str) -> str:
    """A chapter's title as a reader sees it: a bare number or numeral ("I", "12.") is
    "Chapter I"; any other title stands as it is."""
    text = " ".join(title.split())
    return f"Chapter {text.rstrip('.')}" if _BARE_NUMBER.match(text) else text


def paragraph_number(post_id: int, thread_id: int) -> int:
    """A post's place in its chapter, counted from 1 (an imported chapter's id is the id of its
    first paragraph, and paragraphs are numbered consecutively)."""
    return post_id - thread_id + 1


def book_place(chapter: str | None, thread_id: int, post_id: int | None = None) -> str:
    """Where something is in an imported book, as a reader names it: `“7: I Go to Bristol”,
    paragraph 14` (the chapter alone without a paragraph; the chapter's id when its title is
    not known)."""
    name = f"“{chapter_title(chapter)}”" if chapter else f"chapter {thread_id}"
    if post_id is None:
        return name
    return f"{name}, paragraph {paragraph_number(post_id, thread_id)}"


def post_place(corpus: Corpus) -> Callable[[int, int], str]:
    """How a report names a post of this corpus (thread id, post id): `post 3#41` in a forum
    quest; a chapter and its paragraph in a book (`book_place`), as the reader's pages name it."""
    if not is_book(corpus):
        return lambda thread_id, post_id: f"post {thread_id}#{post_id}"
    titles = {thread.id: thread.title for thread in corpus.threads()}
    return lambda thread_id, post_id: book_place(titles.get(thread_id), thread_id, post_id)


def scene_place(scene_id: str, chapter: str | None) -> str:
    """A scene id (`thread#first post`) in a book: the chapter and paragraph it starts at."""
    thread, _, first = scene_id.partition("#")
    try:
        return book_place(chapter, int(thread), int(first.split("~")[0]))
    except ValueError:
        return f"scene {scene_id}"


def in_quotes(text: str) -> str:
    """`text` between curly quotes, as the quotations of a source are shown, without doubling a
    mark the quoted words begin or end with themselves (a line of speech: "“Gregson…")."""
    opening = "" if text.startswith("“") else "“"
    closing = "" if text.endswith("”") else "”"
    return f"{opening}{text}{closing}"
