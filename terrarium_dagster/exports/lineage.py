"""The lineage of a glossary entry: entry -> revisions -> posts (with URLs) -> threads.

`lineage` finds the entry by term or alias (normalized; a merged entry's name leads to the entry
it was merged into; ``E12`` or ``12`` also work), and collects its revisions and those of the
entries merged into it (who, when in the story, why, what changed), its sources with links, and
the threads they come from in story order. `render_lineage_text` is the CLI's text form; the
model itself dumps to JSON.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field

from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.corpus.story import book_place, in_quotes, is_book, scene_place
from terrarium_dagster.errors import CorpusError, EntryNotFoundError, InputError
from terrarium_dagster.exports.entry_records import Chapters
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.store.models import Entry, Provenance, Revision
from terrarium_dagster.store.normalize import normalize_term
from terrarium_dagster.store.undo import undone_revisions

VALUE_CHARS = 70
_ENTRY_ID = re.compile(r"^\s*[Ee]?(\d+)\s*$")
_CHANGE_KEYS = (
    "term",
    "status",
    "definition",
    "aliases",
    "tags",
    "merged_into",
    "deleted",
    "delete_reason",
)


class LineageEntry(BaseModel):
    id: int
    term: str
    aliases: list[str]
    status: str
    definition: str
    tags: list[str]
    deleted: bool = False
    merged_from: list[int] = Field(default_factory=list)


class LineageRevision(BaseModel):
    id: int
    entry_id: int | None
    action: str
    actor: str
    run_id: str | None = None
    thread_id: int | None = None
    thread_key: str | None = None
    scene_id: str | None = None
    snapshot_id: int | None = None
    reason: str | None = None
    changes: list[str] = Field(default_factory=list)
    decision_id: int | None = None
    decision: str | None = None
    undone_by: int | None = None


class LineageSource(BaseModel):
    ref: str
    post_id: int
    thread_id: int
    thread_title: str | None = None
    url: str | None = None
    quote: str = ""
    revision_id: int


class LineageThread(BaseModel):
    thread_id: int
    key: str | None = None
    title: str | None = None
    position: int | None = None
    url: str | None = None
    sources: int = 0
    revisions: int = 0


class Lineage(BaseModel):
    query: str
    matched: str
    book: bool = False  # an imported book: threads are chapters, posts paragraphs
    entry: LineageEntry
    revisions: list[LineageRevision]
    sources: list[LineageSource]
    threads: list[LineageThread]


# What a lineage row takes as it is from the stored revision or source it shows.
_FROM_REVISION = set(LineageRevision.model_fields) & set(Revision.model_fields)
_FROM_SOURCE = set(LineageSource.model_fields) & set(Provenance.model_fields)


def _short(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, list):
        text = "; ".join(str(item) for item in value) or "none"
    else:
        text = " ".join(str(value).split())
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1].rstrip() + "…"


_ENTRY_FIELDS = frozenset({"merged_into", "target", "source"})


def _value(key: str, value: Any) -> str:
    if key in _ENTRY_FIELDS and isinstance(value, int) and not isinstance(value, bool):
        return f"E{value}"
    return _short(value)


def _text_change(before: str, after: str) -> str:
    """``old -> new`` for two texts, from where they start to differ (so a long definition
    whose ending changed shows the ending)."""
    start = 0
    while start < min(len(before), len(after)) and before[start] == after[start]:
        start += 1
    if start > VALUE_CHARS // 2:
        cut = before.rfind(" ", 0, start) + 1
        return f"…{_short(before[cut:])} -> …{_short(after[cut:])}"
    return f"{_short(before)} -> {_short(after)}"


def revision_changes(revision: Revision) -> list[str]:
    """``field: old -> new`` for every state field the revision changed, then its details."""
    old = revision.old_value or {}
    new = revision.new_value or {}
    changes = []
    for key in _CHANGE_KEYS:
        if key not in old and key not in new:
            continue
        before, after = old.get(key), new.get(key)
        if revision.old_value is None:
            if after in (None, "", [], False):
                continue
            changes.append(f"{key}: {_value(key, after)}")
        elif before != after:
            if isinstance(before, str) and isinstance(after, str) and key == "definition":
                changes.append(f"{key}: {_text_change(before, after)}")
            else:
                changes.append(f"{key}: {_value(key, before)} -> {_value(key, after)}")
    if revision.detail:
        for key in sorted(revision.detail):
            changes.append(f"{key}: {_value(key, revision.detail[key])}")
    return changes


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _find(store: GlossaryStore, term: str) -> tuple[Entry, str]:
    if not isinstance(term, str) or not term.strip():
        raise InputError("give a term, an alias or an entry id (E12) to trace")
    found = store.glossary.find_by_term(term)
    if found is not None:
        return found, term.strip()
    match = _ENTRY_ID.match(term)
    if match:
        try:
            entry = store.glossary.resolve_entry(int(match.group(1)))
        except EntryNotFoundError:
            entry = None
        if entry is not None:
            return entry, f"E{match.group(1)}"
    if match:  # an id no entry has: no name is like it
        raise EntryNotFoundError(
            f"no entry E{match.group(1)} in the glossary (give the entry's term or an alias)"
        )
    raise EntryNotFoundError(store.glossary.unknown_name(term))


def _merged_sources(store: GlossaryStore, entry_id: int) -> list[int]:
    """Every entry merged (directly or through others) into ``entry_id``."""
    merged = [e for e in store.glossary.entries(statuses=["merged"]) if e.merged_into is not None]
    found: list[int] = []
    frontier = [entry_id]
    while frontier:
        current = frontier.pop()
        for entry in merged:
            if entry.merged_into == current and entry.id not in found:
                found.append(entry.id)
                frontier.append(entry.id)
    return sorted(found)


def lineage(store: GlossaryStore, corpus: Corpus, term: str) -> Lineage:
    """The trail of the entry named ``term``; EntryNotFoundError (with close names) if none."""
    entry, matched = _find(store, term)
    merged_from = _merged_sources(store, entry.id)
    threads = {thread.id: thread for thread in corpus.threads()}
    book = is_book(corpus)
    # a book's `>>N` (a curator's reason, a definition citing its source) as the paragraph's
    # place, as its sources are named; a quest's as the forum writes it
    cited = Chapters(list(threads.values())).cited if book else (lambda text: text)

    def key_of(thread_id: int | None) -> str | None:
        return threads[thread_id].key if thread_id in threads else None

    revisions: list[Revision] = []
    for entry_id in (entry.id, *merged_from):
        revisions.extend(store.history.revisions(entry_id))
    revisions.sort(key=lambda r: r.id)
    decisions = {
        int(row["revision_id"]): row
        for row in store.curation.curator_decisions()
        if row.get("revision_id") is not None
    }

    def decision_of(revision: Revision) -> dict[str, Any] | None:
        return decisions.get(revision.id) or (
            decisions.get(revision.group_id) if revision.group_id is not None else None
        )

    undone_map = undone_revisions(store.conn)

    def undone(revision: Revision) -> int | None:
        found = undone_map.get(revision.id)
        if found is None and revision.group_id is not None:
            found = undone_map.get(revision.group_id)
        return found

    trail = [
        LineageRevision(
            **(r.model_dump(include=_FROM_REVISION) | {"reason": cited(r.reason)}),
            actor=r.actor_kind,
            thread_key=key_of(r.thread_id),
            changes=[cited(change) or change for change in revision_changes(r)],
            decision_id=(decision_of(r) or {}).get("id"),
            decision=(decision_of(r) or {}).get("decision"),
            undone_by=undone(r),
        )
        for r in revisions
    ]
    sources = [
        LineageSource(
            **item.model_dump(include=_FROM_SOURCE),
            ref=item.ref,
            thread_title=threads[item.thread_id].title if item.thread_id in threads else None,
            url=corpus.post_url(item.ref, quote=item.quote),
        )
        for item in store.provenance.for_entry(entry.id)
    ]
    counts: dict[int, list[int]] = {}
    for source in sources:
        counts.setdefault(source.thread_id, [0, 0])[0] += 1
    for revision in trail:
        if revision.thread_id is not None:
            counts.setdefault(revision.thread_id, [0, 0])[1] += 1
    thread_rows = []
    for thread_id, (source_count, revision_count) in counts.items():
        thread = threads.get(thread_id)
        url = None
        if thread is not None:
            try:
                url = corpus.post_url(f"{thread.id}#{thread.id}")
            except (CorpusError, InputError):
                url = None
        thread_rows.append(
            LineageThread(
                thread_id=thread_id,
                key=thread.key if thread else None,
                title=thread.title if thread else None,
                position=thread.position if thread else None,
                url=url,
                sources=source_count,
                revisions=revision_count,
            )
        )
    thread_rows.sort(
        key=lambda t: (t.position is None, t.position if t.position is not None else 0, t.thread_id)
    )
    return Lineage(
        query=term,
        matched=matched,
        book=book,
        entry=LineageEntry(
            id=entry.id,
            term=entry.term,
            aliases=list(entry.aliases),
            status=entry.status,
            definition=cited(entry.definition) or entry.definition,
            tags=list(entry.tags),
            deleted=entry.deleted,
            merged_from=merged_from,
        ),
        revisions=trail,
        sources=sources,
        threads=thread_rows,
    )


def render_lineage_text(trail: Lineage) -> str:
    """The lineage as text for a terminal: entry, revisions, sources, threads."""
    entry = trail.entry
    lines = [f"E{entry.id} {entry.term} [{entry.status}{', deleted' if entry.deleted else ''}]"]
    asked = normalize_term(trail.matched)
    if re.fullmatch(r"e\d+", asked) and asked != f"e{entry.id}":  # a merged-away entry's id
        lines.append(f"  {trail.matched.upper()} was merged into this entry (its revisions below)")
    elif asked not in (normalize_term(entry.term), f"e{entry.id}"):
        lines.append(f"  found by: {trail.matched}")
    if entry.aliases:
        lines.append(f"  aliases: {'; '.join(entry.aliases)}")
    if entry.tags:
        lines.append(f"  tags: {', '.join(entry.tags)}")
    if entry.merged_from:
        lines.append(f"  merged from: {', '.join(f'E{i}' for i in entry.merged_from)}")
    lines.append(f"  definition: {' '.join(entry.definition.split()) or '(none)'}")
    lines.append("")
    lines.append(f"Revisions ({len(trail.revisions)}):")
    titles = {thread.thread_id: thread.title for thread in trail.threads}
    for revision in trail.revisions:
        where = [f"by {revision.actor}"]
        if trail.book and revision.scene_id:
            where.append(scene_place(revision.scene_id, titles.get(revision.thread_id or 0)))
        elif trail.book and revision.thread_id is not None:
            where.append(book_place(titles.get(revision.thread_id), revision.thread_id))
        else:
            if revision.thread_key or revision.thread_id is not None:
                where.append(f"thread {revision.thread_key or revision.thread_id}")
            if revision.scene_id:
                where.append(f"scene {revision.scene_id}")
        if revision.run_id:
            where.append(f"run {revision.run_id}")
        if revision.snapshot_id is not None:
            where.append(f"snapshot {revision.snapshot_id}")
        if revision.decision_id is not None:
            where.append(f"curator decision {revision.decision_id} {revision.decision}")
        subject = f"[E{revision.entry_id}] " if revision.entry_id != entry.id else ""
        lines.append(f"  #{revision.id} {subject}{revision.action} ({', '.join(where)})")
        if revision.undone_by is not None:
            lines.append(f"      undone by #{revision.undone_by}")
        if revision.reason:
            lines.append(f"      why: {' '.join(revision.reason.split())}")
        for change in revision.changes:
            lines.append(f"      {change}")
    lines.append("")
    lines.append(f"Sources ({len(trail.sources)}):")
    for source in trail.sources:
        link = f"  {source.url}" if source.url else ""
        if trail.book:
            place = book_place(source.thread_title, source.thread_id, source.post_id)
            lines.append(f"  {place}{link}")
        else:
            lines.append(f"  >>{source.post_id} ({source.ref}){link}")
        if source.quote:
            lines.append(f"      {in_quotes(' '.join(source.quote.split()))}")
    lines.append("")
    lines.append(f"{'Chapters' if trail.book else 'Threads'} ({len(trail.threads)}):")
    for thread in trail.threads:
        title = f" “{thread.title}”" if thread.title else ""
        name = (
            book_place(thread.title, thread.thread_id)
            if trail.book
            else f"{thread.key or thread.thread_id}{title}"
        )
        lines.append(
            f"  {name}: {_plural(thread.sources, 'source')}, "
            f"{_plural(thread.revisions, 'revision')}"
        )
    return "\n".join(lines)
