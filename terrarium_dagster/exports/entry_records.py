"""The exported form of an entry: every field, its sources with links, its references.

Shared by the JSON and YAML exports (the same records, so the two round-trip to equal data).
Entries are sorted by normalized term, then id; sources by post, then quote. Nothing here reads a
clock, so the same glossary gives the same bytes.

A forum quest's post is named as its forum does: `ref` "thread#post" ("100#104"), and a
definition cites a post as `>>104`. An imported book's paragraph is named as the reader's site
and the wiki name it (`Chapters`): `ref` "“CHAPTER III: MY ADVENT ON MARS”, paragraph 13", with
`chapter` (its number in the book, from 1), `chapter_title` (as the reader sees it: a bare
numeral is "Chapter IV") and `paragraph` (its number in the chapter) beside the ids; and a
`>>N` citation in the definition or the reader's edition is written as that place, in the same
words (a post the book does not hold stays `>>N`).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel, SerializeAsAny

from terrarium_dagster.corpus.story import book_place, chapter_title, paragraph_number
from terrarium_dagster.corpus.units import Thread
from terrarium_dagster.exports.references import NameIndex, find_references, linked_views
from terrarium_dagster.store.models import EntryView, Provenance


class UrlForPost(Protocol):
    """A post's link (`corpus.quote_links`): `quote`, when given, is highlighted on the served
    page."""

    def __call__(self, thread_id: int, post_id: int, quote: str | None = None) -> str | None: ...


class PostLink(BaseModel):
    post_id: int
    thread_id: int
    ref: str
    url: str | None = None


class SourceRecord(PostLink):
    quote: str = ""
    thread_title: str | None = None


class BookPlace(BaseModel):
    """Where a paragraph is in an imported book, as a reader counts: the chapter's number in
    the book (from 1), its title as shown, the paragraph's number in the chapter."""

    chapter: int
    chapter_title: str
    paragraph: int


class BookPostLink(PostLink):
    """A book's `PostLink`: its `BookPlace` after the ids (`ref` names that place)."""

    chapter: int
    chapter_title: str
    paragraph: int


class BookSourceRecord(SourceRecord):
    """A book's `SourceRecord`: its `BookPlace` after the quote."""

    chapter: int
    chapter_title: str
    paragraph: int


# a `>>post` citation in a definition
_CITATION = re.compile(r">>(\d+)")
# a `>>post` citation with the parentheses around it ("(>>12)", "(>>3, >>7)"), or a run of them
_CITATION_RUN = re.compile(r"\s*\(\s*(?:>>\d+[\s,;]*)+\)|\s*>>\d+(?:[\s,;]*>>\d+)*")


def drop_citations(text: str) -> str:
    """The text without its `>>post` citations (and the parentheses around them): where a
    post's number means nothing (a chat's lorebook, the wiki index's one line)."""
    return _CITATION_RUN.sub("", text)


@dataclass(frozen=True)
class Chapters:
    """An imported book's chapters (its threads in story order), to name its paragraphs as a
    reader does. A chapter's paragraphs are the posts from its id on (`paragraph_number`)."""

    threads: Sequence[Thread]
    _by_id: dict[int, Thread] = field(init=False, repr=False)
    _starts: list[int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {thread.id: thread for thread in self.threads})
        object.__setattr__(self, "_starts", sorted(self._by_id))

    def place(self, thread_id: int, post_id: int) -> BookPlace | None:
        thread = self._by_id.get(thread_id)
        if thread is None:
            return None
        return BookPlace(
            chapter=thread.position + 1,
            chapter_title=chapter_title(thread.title) if thread.title else "",
            paragraph=paragraph_number(post_id, thread_id),
        )

    def ref(self, thread_id: int, post_id: int) -> str:
        """`“CHAPTER III: MY ADVENT ON MARS”, paragraph 13` (`corpus.story.book_place`)."""
        thread = self._by_id.get(thread_id)
        return book_place(thread.title if thread else None, thread_id, post_id)

    def thread_of(self, post_id: int) -> int | None:
        """The chapter holding the post `post_id`, None when no chapter does."""
        at = bisect.bisect_right(self._starts, post_id) - 1
        if at < 0:
            return None
        thread = self._by_id[self._starts[at]]
        return thread.id if post_id < thread.id + thread.post_count else None

    def cited(self, text: str | None) -> str | None:
        """`text` with each `>>N` citation written as the paragraph's place."""
        if not text or ">>" not in text:
            return text

        def place(match: re.Match[str]) -> str:
            post_id = int(match.group(1))
            thread_id = self.thread_of(post_id)
            return match.group(0) if thread_id is None else self.ref(thread_id, post_id)

        return _CITATION.sub(place, text)


class ReferenceRecord(BaseModel):
    target: str
    label: str | None = None
    entry_id: int | None = None


class EntryRecord(BaseModel):
    id: int
    term: str
    normalized_term: str
    aliases: list[str]
    definition: str
    edition: str | None = None  # the reader's edition as of the export's thread
    status: str
    tags: list[str]
    # a book's links and sources carry its places too (`BookPostLink`, `BookSourceRecord`)
    first_seen: SerializeAsAny[PostLink] | None = None
    last_seen: SerializeAsAny[PostLink] | None = None
    merged_into: int | None = None
    references: list[ReferenceRecord]
    sources: list[SerializeAsAny[SourceRecord]]
    created_revision: int | None = None
    updated_revision: int | None = None


def exported_entries(entries: Sequence[EntryView]) -> list[EntryView]:
    """The entries an export carries: everything not deleted, by normalized term then id."""
    return sorted((e for e in entries if not e.deleted), key=lambda e: (e.norm_term, e.id))


def _link(
    post_id: int | None,
    thread_id: int | None,
    url_for_post: UrlForPost,
    chapters: Chapters | None,
) -> PostLink | None:
    if post_id is None or thread_id is None:
        return None
    link = PostLink(
        post_id=post_id,
        thread_id=thread_id,
        ref=f"{thread_id}#{post_id}",
        url=url_for_post(thread_id, post_id),
    )
    place = chapters.place(thread_id, post_id) if chapters else None
    if chapters is None or place is None:
        return link
    fields = {**link.model_dump(), **place.model_dump()}
    return BookPostLink(**(fields | {"ref": chapters.ref(thread_id, post_id)}))


def _source(
    item: Provenance,
    url_for_post: UrlForPost,
    thread_titles: Mapping[int, str],
    chapters: Chapters | None,
) -> SourceRecord:
    record = SourceRecord(
        post_id=item.post_id,
        thread_id=item.thread_id,
        ref=item.ref,
        url=url_for_post(item.thread_id, item.post_id, item.quote),
        quote=item.quote,
        thread_title=thread_titles.get(item.thread_id),
    )
    place = chapters.place(item.thread_id, item.post_id) if chapters else None
    if chapters is None or place is None:
        return record
    fields = {**record.model_dump(), **place.model_dump()}
    return BookSourceRecord(**(fields | {"ref": chapters.ref(item.thread_id, item.post_id)}))


def sorted_sources(provenance: Sequence[Provenance]) -> list[Provenance]:
    return sorted(provenance, key=lambda p: (p.post_id, p.quote, p.id))


def seen_range(entry: EntryView) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
    """First and last (post_id, thread_id) the entry is sourced from.

    Taken from the view's own provenance (so an as-of view shows nothing later than its
    boundary); the entry's recorded first/last seen only when it has no provenance.
    """
    if entry.provenance:
        ordered = sorted(entry.provenance, key=lambda p: p.post_id)
        return (ordered[0].post_id, ordered[0].thread_id), (
            ordered[-1].post_id,
            ordered[-1].thread_id,
        )
    first = (
        (entry.first_seen_post, entry.first_seen_thread)
        if entry.first_seen_post is not None and entry.first_seen_thread is not None
        else None
    )
    last = (
        (entry.last_seen_post, entry.last_seen_thread)
        if entry.last_seen_post is not None and entry.last_seen_thread is not None
        else None
    )
    return first, last


def entry_record(
    entry: EntryView,
    index: NameIndex,
    *,
    url_for_post: UrlForPost,
    thread_titles: Mapping[int, str],
    chapters: Chapters | None = None,
) -> EntryRecord:
    """The entry's record; `chapters` for an imported book (its places, see the module)."""
    first, last = seen_range(entry)
    return EntryRecord(
        id=entry.id,
        term=entry.term,
        normalized_term=entry.norm_term,
        aliases=list(entry.aliases),
        definition=(chapters.cited(entry.definition) or "") if chapters else entry.definition,
        edition=chapters.cited(entry.edition) if chapters else entry.edition,
        status=entry.status,
        tags=list(entry.tags),
        first_seen=_link(*(first or (None, None)), url_for_post, chapters),
        last_seen=_link(*(last or (None, None)), url_for_post, chapters),
        merged_into=entry.merged_into,
        references=[
            ReferenceRecord(
                target=reference.target,
                label=reference.label.strip() if reference.label else None,
                entry_id=index.resolve(reference.target),
            )
            for reference in find_references(entry.definition)
        ],
        sources=[
            _source(item, url_for_post, thread_titles, chapters)
            for item in sorted_sources(entry.provenance)
        ],
        created_revision=entry.created_revision,
        updated_revision=entry.updated_revision,
    )


def _no_url(_thread_id: int, _post_id: int, _quote: str | None = None) -> str | None:
    return None


def glossary_document(
    entries: Sequence[EntryView],
    *,
    meta: Mapping[str, Any],
    url_for_post: UrlForPost | None = None,
    thread_titles: Mapping[int, str] | None = None,
    chapters: Chapters | None = None,
) -> dict[str, Any]:
    """``{"meta": {...sorted keys, entry_count}, "entries": [records]}`` as plain data (an
    imported book's places named as a reader names them: `chapters`)."""
    chosen = linked_views(exported_entries(entries))
    index = NameIndex(chosen)
    records = [
        entry_record(
            entry,
            index,
            url_for_post=url_for_post or _no_url,
            thread_titles=thread_titles or {},
            chapters=chapters,
        ).model_dump(mode="json")
        for entry in chosen
    ]
    header = {**meta, "entry_count": len(records)}
    return {"meta": {key: header[key] for key in sorted(header)}, "entries": records}
