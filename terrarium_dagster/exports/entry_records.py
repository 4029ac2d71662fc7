"""The exported form of an entry: every field, its sources with links, its references.

Shared by the JSON and YAML exports (the same records, so the two round-trip to equal data).
Entries are sorted by normalized term, then id; sources by post, then quote. Nothing here reads a
clock, so the same glossary gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from pydantic import BaseModel

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
    first_seen: PostLink | None = None
    last_seen: PostLink | None = None
    merged_into: int | None = None
    references: list[ReferenceRecord]
    sources: list[SourceRecord]
    created_revision: int | None = None
    updated_revision: int | None = None


def exported_entries(entries: Sequence[EntryView]) -> list[EntryView]:
    """The entries an export carries: everything not deleted, by normalized term then id."""
    return sorted((e for e in entries if not e.deleted), key=lambda e: (e.norm_term, e.id))


def _link(post_id: int | None, thread_id: int | None, url_for_post: UrlForPost) -> PostLink | None:
    if post_id is None or thread_id is None:
        return None
    return PostLink(
        post_id=post_id,
        thread_id=thread_id,
        ref=f"{thread_id}#{post_id}",
        url=url_for_post(thread_id, post_id),
    )


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
) -> EntryRecord:
    first, last = seen_range(entry)
    return EntryRecord(
        id=entry.id,
        term=entry.term,
        normalized_term=entry.norm_term,
        aliases=list(entry.aliases),
        definition=entry.definition,
        edition=entry.edition,
        status=entry.status,
        tags=list(entry.tags),
        first_seen=_link(*(first or (None, None)), url_for_post),
        last_seen=_link(*(last or (None, None)), url_for_post),
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
            SourceRecord(
                post_id=item.post_id,
                thread_id=item.thread_id,
                ref=item.ref,
                url=url_for_post(item.thread_id, item.post_id, item.quote),
                quote=item.quote,
                thread_title=thread_titles.get(item.thread_id),
            )
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
) -> dict[str, Any]:
    """``{"meta": {...sorted keys, entry_count}, "entries": [records]}`` as plain data."""
    chosen = linked_views(exported_entries(entries))
    index = NameIndex(chosen)
    records = [
        entry_record(
            entry,
            index,
            url_for_post=url_for_post or _no_url,
            thread_titles=thread_titles or {},
        ).model_dump(mode="json")
        for entry in chosen
    ]
    header = {**meta, "entry_count": len(records)}
    return {"meta": {key: header[key] for key in sorted(header)}, "entries": records}
