"""Which corpus a store was built from: an identity that survives a rename and a growing story.

A path is no identity (`terrarium import --replace` writes another book at the same path; a
corpus may be moved). What a corpus keeps while it grows is its beginning: new posts and threads
come at the end, so the book's recorded title (an imported corpus) and its first threads in story
order, by id and title, name it. The store records them on its first run (`Engine`); a later run
or reader against a corpus whose beginning differs is refused, naming both.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.corpus.story import recorded_title, story_name
from terrarium_dagster.corpus.units import thread_title

FIRST_THREADS = 3  # how many of the first threads name a corpus
IDENTITY_META = "corpus_identity"  # the store's meta key that holds it


class CorpusIdentity(BaseModel):
    """The beginning of a corpus, and what it is called (for messages)."""

    name: str
    book_title: str | None = None
    first_threads: list[tuple[int, str]] = Field(default_factory=list)

    def matches(self, other: CorpusIdentity) -> bool:
        """The same corpus, perhaps grown: the same book title and the same first threads
        (compared as far as both have threads: a corpus of one thread may gain a second)."""
        if self.book_title != other.book_title:
            return False
        shared = min(len(self.first_threads), len(other.first_threads))
        # a store recorded a title of only whitespace as it was; the reader now gives it as ""
        return [(i, thread_title(t)) for i, t in self.first_threads[:shared]] == [
            (i, thread_title(t)) for i, t in other.first_threads[:shared]
        ]

    def difference(self, other: CorpusIdentity) -> str:
        """Where `other` (the corpus given) departs from this one (the store's), for a refusal
        whose two descriptions can read the same: a thread inserted before the third in story
        order (an earlier first post) changes no first thread, only the second or third."""
        if self.book_title != other.book_title:
            return f'book title "{self.book_title}" in the store, "{other.book_title}" given'
        for number, (mine, theirs) in enumerate(
            zip(self.first_threads, other.first_threads, strict=False), start=1
        ):
            if tuple(mine) != tuple(theirs):
                return (
                    f'thread {number} in story order: {mine[0]} "{mine[1]}" in the store, '
                    f'{theirs[0]} "{theirs[1]}" given'
                )
        return "the same beginning"

    def describe(self) -> str:
        """`"Treasure Island" (first thread 1 "PART ONE")` — how a message names it."""
        if not self.first_threads:
            return f'"{self.name}"'
        thread_id, title = self.first_threads[0]
        return f'"{self.name}" (first thread {thread_id} "{title}")'


def corpus_identity(corpus: Corpus) -> CorpusIdentity:
    threads = corpus.threads()[:FIRST_THREADS]
    return CorpusIdentity(
        name=story_name(corpus),
        book_title=recorded_title(corpus),
        first_threads=[(thread.id, thread.title or "") for thread in threads],
    )
