"""The reader's edition in the exports: each entry's edition text as of the export's thread
(`store.editions`), attached to its view (`EntryView.edition`)."""

from __future__ import annotations

from collections.abc import Sequence

from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.store.models import EntryView

LATEST = 2**62  # a reading position past every thread: the newest edition of each entry


def with_editions(
    store: GlossaryStore, entries: Sequence[EntryView], position: int | None
) -> list[EntryView]:
    """`entries` with the edition of each as of the thread at `position` (None: the newest
    edition written); an entry without one keeps `edition` None."""
    texts = store.editions.as_of(LATEST if position is None else position)
    if not texts:
        return list(entries)
    return [
        entry.model_copy(update={"edition": texts[entry.id].text}) if entry.id in texts else entry
        for entry in entries
    ]
