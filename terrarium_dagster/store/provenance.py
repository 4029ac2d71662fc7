"""Provenance: the sources of an entry (post, thread, quote, the revision that recorded it).

Source rows are never removed: a change supersedes them (`superseded_revision_id`) and copies
carry `moved_from`. `ProvenanceRows` records and supersedes sources and keeps each entry's first
and last sighting in story order; `ProvenanceLog` (`store.provenance`) reads them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from terrarium_dagster.store.base import Aggregate, StoreConnection, guarded
from terrarium_dagster.store.inputs import parse_entry_id
from terrarium_dagster.store.models import Entry, Provenance, ProvenanceIn
from terrarium_dagster.store.records import from_row
from terrarium_dagster.store.rows import EntryRows, json_ids


def provenance_key(post_id: int, thread_id: int, quote: str) -> tuple[int, int, str]:
    return (post_id, thread_id, quote)


def seen_span(rows: Iterable[tuple[int, int, int | None]]) -> tuple[int | None, ...]:
    """(first_post, first_thread, last_post, last_thread) of (post_id, thread_id, position) rows:
    story order by thread position when every thread's position is known, else by post id."""
    items = list(rows)
    if not items:
        return (None, None, None, None)
    if all(position is not None for _, _, position in items):
        ordered = sorted(items, key=lambda item: (item[2], item[0]))
    else:
        ordered = sorted(items, key=lambda item: item[0])
    first, last = ordered[0], ordered[-1]
    return (first[0], first[1], last[0], last[1])


def provenance_record(row: sqlite3.Row) -> Provenance:
    return from_row(Provenance, row)


class ProvenanceRows(Aggregate):
    """Writes of source rows inside the caller's transaction (composed by the store's parts)."""

    def __init__(self, store: StoreConnection) -> None:
        super().__init__(store)
        self.rows = EntryRows(store)

    def live(self, entry_id: int, post_ids: Sequence[int] | None = None) -> list[sqlite3.Row]:
        """The entry's live sources in id order (only those of `post_ids`, when given)."""
        if post_ids is None:
            return self.conn.execute(
                "SELECT * FROM provenance WHERE entry_id = ? AND superseded_revision_id IS NULL "
                "ORDER BY id",
                (entry_id,),
            ).fetchall()
        if not post_ids:
            return []
        return self.conn.execute(
            "SELECT * FROM provenance WHERE entry_id = ? AND superseded_revision_id IS NULL "
            "AND post_id IN (SELECT value FROM json_each(?)) ORDER BY id",
            (entry_id, json_ids(post_ids)),
        ).fetchall()

    def new_items(self, entry_id: int, items: Sequence[ProvenanceIn]) -> list[ProvenanceIn]:
        """Items not already recorded (live) for the entry, without repeats."""
        # only the rows of these posts: an entry of a long story may have thousands of sources
        seen = {
            provenance_key(row["post_id"], row["thread_id"], row["quote"])
            for row in self.live(entry_id, [item.post_id for item in items])
        }
        fresh: list[ProvenanceIn] = []
        for item in items:
            key = provenance_key(item.post_id, item.thread_id, item.quote)
            if key not in seen:
                seen.add(key)
                fresh.append(item)
        return fresh

    def insert(
        self,
        entry_id: int,
        items: Iterable[tuple[int, int, str, int | None]],
        revision_id: int,
    ) -> None:
        """Insert (post_id, thread_id, quote, moved_from) rows recorded by ``revision_id``."""
        self.conn.executemany(
            "INSERT INTO provenance (entry_id, post_id, thread_id, quote, revision_id, moved_from)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [
                (entry_id, post_id, thread_id, quote, revision_id, moved_from)
                for post_id, thread_id, quote, moved_from in items
            ],
        )

    def supersede(self, provenance_ids: Iterable[int], revision_id: int) -> None:
        self.conn.executemany(
            "UPDATE provenance SET superseded_revision_id = ? WHERE id = ?",
            [(revision_id, provenance_id) for provenance_id in provenance_ids],
        )

    def extend_seen(self, entry_id: int, fresh: Sequence[ProvenanceIn]) -> None:
        """First/last seen after sources were only added: the old ends and the new sources
        compared, without reading every source of the entry (a recurring name of a long story
        has thousands). Falls back to `_refresh_seen` where a thread's position is unknown."""
        row = self.conn.execute(
            "SELECT first_seen_post, first_seen_thread, last_seen_post, last_seen_thread "
            "FROM entry WHERE id = ?",
            (entry_id,),
        ).fetchone()
        points = [(item.post_id, item.thread_id) for item in fresh]
        if row[0] is not None:
            points += [(row[0], row[1]), (row[2], row[3])]
        threads = sorted({thread_id for _, thread_id in points})
        positions = dict(
            self.conn.execute(
                "SELECT thread_id, position FROM thread_state "
                "WHERE thread_id IN (SELECT value FROM json_each(?))",
                (json_ids(threads),),
            ).fetchall()
        )
        if any(positions.get(thread_id) is None for thread_id in threads):
            self.refresh_seen([entry_id])
            return
        seen = seen_span((post, thread, positions[thread]) for post, thread in points)
        self.conn.execute(
            "UPDATE entry SET first_seen_post = ?, first_seen_thread = ?, "
            "last_seen_post = ?, last_seen_thread = ? WHERE id = ?",
            (*seen, entry_id),
        )

    def refresh_seen(self, entry_ids: Iterable[int]) -> None:
        """Recompute first/last seen post and thread from live provenance."""
        for entry_id in sorted(set(entry_ids)):
            rows = self.conn.execute(
                "SELECT p.post_id, p.thread_id, t.position FROM provenance p "
                "LEFT JOIN thread_state t ON t.thread_id = p.thread_id "
                "WHERE p.entry_id = ? AND p.superseded_revision_id IS NULL",
                (entry_id,),
            ).fetchall()
            seen = seen_span((row[0], row[1], row[2]) for row in rows)
            self.conn.execute(
                "UPDATE entry SET first_seen_post = ?, first_seen_thread = ?, "
                "last_seen_post = ?, last_seen_thread = ? WHERE id = ?",
                (*seen, entry_id),
            )


class ProvenanceLog(Aggregate):
    """The sources of entries (`store.provenance`)."""

    def __init__(self, store: StoreConnection) -> None:
        super().__init__(store)
        self.rows = EntryRows(store)
        self.sources = ProvenanceRows(store)

    @guarded
    def for_entry(
        self, entry_id: int, *, include_superseded: bool = False, limit: int | None = None
    ) -> list[Provenance]:
        """Sources of an entry (live ones unless asked), by post id; the first `limit` only
        when given (a report's first sources of an entry named in hundreds of posts)."""
        entry_id = parse_entry_id(entry_id)
        live = "" if include_superseded else " AND superseded_revision_id IS NULL"
        first = "" if limit is None else f" LIMIT {max(0, int(limit))}"
        with self.reading():
            self.rows.row(entry_id)
            return self.records(
                provenance_record,
                f"SELECT * FROM provenance WHERE entry_id = ?{live} ORDER BY post_id, id{first}",
                (entry_id,),
            )

    @guarded
    def sourced_posts(self, entry_id: int, post_ids: Iterable[int]) -> set[int]:
        """Which of `post_ids` are already live sources of the entry (reads only those)."""
        entry_id = parse_entry_id(entry_id)
        wanted = sorted(set(post_ids))
        with self.reading():
            return {row["post_id"] for row in self.sources.live(entry_id, wanted)}

    @guarded
    def entries_without_provenance(self) -> list[Entry]:
        """Live entries (not deleted, not merged) with no live source post, in id order."""
        with self.reading():
            ids = [
                row[0]
                for row in self.conn.execute(
                    "SELECT e.id FROM entry e WHERE e.deleted = 0 AND e.merged_into IS NULL "
                    "AND NOT EXISTS (SELECT 1 FROM provenance p WHERE p.entry_id = e.id "
                    "AND p.superseded_revision_id IS NULL) ORDER BY e.id"
                )
            ]
            found = self.rows.load_many(ids)
        return [found[entry_id] for entry_id in ids]
