"""`[[Term]]` cross-references in definitions and the names they resolve to.

A definition may write ``[[Term]]`` or ``[[Term|label]]``. A reference resolves when the
normalized text names a page entry's term or alias; a reference naming a merged entry follows the
redirect to the entry it was merged into. Rejected and deleted entries have no page, so
references to them do not resolve.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from terrarium_dagster.store.models import Entry, EntryView
from terrarium_dagster.store.normalize import normalize_term
from terrarium_dagster.store.wiki_links import tidy_links

REFERENCE = re.compile(r"\[\[([^\[\]|\n]+?)(?:\|([^\[\]\n]*?))?\]\]")
MAX_REDIRECTS = 16


@dataclass(frozen=True, slots=True)
class Reference:
    """One ``[[target|label]]`` occurrence in a definition."""

    target: str
    label: str | None
    start: int
    end: int

    @property
    def text(self) -> str:
        """What a reader sees: the label if given, else the target."""
        return self.label.strip() if self.label and self.label.strip() else self.target.strip()


def find_references(definition: str) -> list[Reference]:
    return [
        Reference(match.group(1).strip(), match.group(2), match.start(), match.end())
        for match in REFERENCE.finditer(definition or "")
    ]


def is_page_entry(entry: Entry) -> bool:
    """Whether the entry is part of the readable glossary (has a wiki page)."""
    return not entry.deleted and entry.merged_into is None and entry.status != "rejected"


def is_live(entry: Entry) -> bool:
    """Not deleted and not merged away: its term and aliases belong to it."""
    return not entry.deleted and entry.merged_into is None


class NameIndex:
    """Normalized term/alias -> page entry id, with merged entries redirecting to their target.

    Terms win over aliases; among equals the lowest id wins (deterministic even on a corrupted
    glossary where two entries share a name; the checks report that case).
    """

    def __init__(self, entries: Iterable[Entry]) -> None:
        self._by_id: dict[int, Entry] = {}
        pages: list[Entry] = []
        merged: list[Entry] = []
        for entry in entries:
            self._by_id[entry.id] = entry
            if is_page_entry(entry):
                pages.append(entry)
            elif not entry.deleted and entry.merged_into is not None:
                merged.append(entry)
        self._names: dict[str, int] = {}
        ranked: list[tuple[int, int, str]] = []
        for entry in pages:
            ranked.append((0, entry.id, normalize_term(entry.term)))
            ranked.extend((1, entry.id, normalize_term(alias)) for alias in entry.aliases)
        for entry in merged:
            target = self.redirect(entry.id)
            if target is not None:
                ranked.append((2, target, normalize_term(entry.term)))
                ranked.extend((2, target, normalize_term(alias)) for alias in entry.aliases)
        for _rank, entry_id, name in sorted(ranked):
            if name and name not in self._names:
                self._names[name] = entry_id

    def redirect(self, entry_id: int) -> int | None:
        """The page entry an entry id ends up at, following merges; None if it has no page."""
        seen: set[int] = set()
        current = self._by_id.get(entry_id)
        while current is not None and current.merged_into is not None:
            if current.id in seen or len(seen) > MAX_REDIRECTS:
                return None
            seen.add(current.id)
            current = self._by_id.get(current.merged_into)
        if current is None or not is_page_entry(current):
            return None
        return current.id

    def resolve(self, name: str) -> int | None:
        return self._names.get(normalize_term(name))

    def names(self) -> dict[str, int]:
        return dict(self._names)


def linked_views(entries: Sequence[EntryView]) -> list[EntryView]:
    """The entries as every export shows them: each definition's `[[links]]` made flat and
    pointed only at the page entries among `entries` (by term or alias; merged names redirect),
    never at the entry itself or an ordinary word (`glossary.links.tidy_links`); what does not
    qualify keeps its text without brackets. Links can go stale after they were written (the
    entry linked to rejected, deleted or merged), so this runs on every export."""
    index = NameIndex(entries)
    views: list[EntryView] = []
    for entry in entries:
        own = index.redirect(entry.id)
        tidy = tidy_links(entry.definition, index.resolve, own=own)
        update: dict[str, str] = {} if tidy == entry.definition else {"definition": tidy}
        if entry.edition:  # the reader's edition: its links as every export shows them too
            edition = tidy_links(entry.edition, index.resolve, own=own)
            if edition != entry.edition:
                update["edition"] = edition
        views.append(entry.model_copy(update=update) if update else entry)
    return views


@dataclass(frozen=True, slots=True)
class UnresolvedReference:
    """A ``[[reference]]`` that names no page entry, and where it was written."""

    entry_id: int
    term: str
    target: str


def unresolved_references(
    entries: Sequence[Entry], index: NameIndex | None = None
) -> list[UnresolvedReference]:
    """Every reference in a page entry's definition that names no entry, in term order. A
    reference to a name the curator rejected is not one: the curation decided it is no entry,
    and every export shows it as plain text (`rejected_references` lists those)."""
    return _dangling(entries, index)[0]


def rejected_references(
    entries: Sequence[Entry], index: NameIndex | None = None
) -> list[UnresolvedReference]:
    """Every reference in a page entry's definition to a name the curator rejected (a term or
    alias of a rejected entry among `entries`), in term order."""
    return _dangling(entries, index)[1]


def _dangling(
    entries: Sequence[Entry], index: NameIndex | None
) -> tuple[list[UnresolvedReference], list[UnresolvedReference]]:
    """The references that resolve to no page entry: those naming nothing, and those naming a
    rejected entry."""
    index = index or NameIndex(entries)
    rejected = {
        normalize_term(name)
        for entry in entries
        if entry.status == "rejected" and not entry.deleted
        for name in (entry.term, *entry.aliases)
    }
    missing: list[UnresolvedReference] = []
    to_rejected: list[UnresolvedReference] = []
    for entry in sorted(entries, key=lambda e: (e.norm_term, e.id)):
        if not is_page_entry(entry):
            continue
        for reference in find_references(entry.definition):
            if index.resolve(reference.target) is None:
                item = UnresolvedReference(entry.id, entry.term, reference.target)
                known = normalize_term(reference.target) in rejected
                (to_rejected if known else missing).append(item)
    return missing, to_rejected
