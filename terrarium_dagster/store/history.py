"""The glossary's history: the revision log and the glossary as it stood after any revision.

Every change writes one revision per entry touched with the full entry state before and after, so
"the glossary as of revision N" is a lookup (the latest revision of each entry with id <= N, and
the sources recorded by then and not superseded by then). Nothing is ever erased.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from terrarium_dagster.errors import StoreError
from terrarium_dagster.store.base import Aggregate, RowsAsRead, StoreConnection, guarded
from terrarium_dagster.store.inputs import clean_boundary, parse_entry_id
from terrarium_dagster.store.models import EntryView, Revision
from terrarium_dagster.store.normalize import normalize_term
from terrarium_dagster.store.progress import ThreadProgress
from terrarium_dagster.store.provenance import provenance_record, seen_span
from terrarium_dagster.store.records import _filters
from terrarium_dagster.store.rows import EntryRows, full_state, revision_record

KEPT_SOURCES = 200_000  # source rows kept as read (`History._source`), at most


class History(Aggregate):
    """Revisions and as-of views (`store.history`)."""

    def __init__(self, store: StoreConnection) -> None:
        super().__init__(store)
        self.rows = EntryRows(store)
        self.progress = ThreadProgress(store)
        # each source row as read, by its values: the site's views as of every chapter read the
        # same rows again (a book of 239 chapters: 650,000 records made of 2,700 rows)
        self._source = RowsAsRead(provenance_record, most=KEPT_SOURCES)

    @guarded
    def revisions(
        self,
        entry_id: int | None = None,
        *,
        thread_id: int | None = None,
        since_id: int | None = None,
        run_id: str | None = None,
    ) -> list[Revision]:
        """Revisions in id order, filtered by entry, thread, run, and id > ``since_id``."""
        where, params = _filters(
            entry_id=None if entry_id is None else parse_entry_id(entry_id),
            thread_id=thread_id,
            run_id=run_id,
        )
        if since_id is not None:
            where = f"{where} AND id > ?" if where else " WHERE id > ?"
            params.append(since_id)
        return self.records(revision_record, f"SELECT * FROM revision{where} ORDER BY id", params)

    @guarded
    def revision(self, revision_id: int) -> Revision:
        return revision_record(self.stored("revision", revision_id))

    @guarded
    def revision_count(self) -> int:
        """How many revisions the store holds (ids run with gaps in a recovered store)."""
        return int(self.conn.execute("SELECT count(*) FROM revision").fetchone()[0])

    @guarded
    def last_revision_id(self) -> int:
        """The id of the newest revision, 0 when there is none."""
        row = self.conn.execute("SELECT COALESCE(MAX(id), 0) FROM revision").fetchone()
        return int(row[0])

    def _views_as_of(
        self,
        boundary: int,
        include_deleted: bool,
        entry_id: int | None = None,
        *,
        entry_ids: Sequence[int] | None = None,
    ) -> list[EntryView]:
        only = only_p = ""
        if entry_id is not None:
            only, only_p = " AND entry_id = :entry", " AND p.entry_id = :entry"
        elif entry_ids is not None:
            chosen = "(SELECT value FROM json_each(:ids))"
            only, only_p = f" AND entry_id IN {chosen}", f" AND p.entry_id IN {chosen}"
        ids = json.dumps(sorted(set(entry_ids or ())))
        heads = self.conn.execute(
            "SELECT r.entry_id, r.new_value, m.first_id, m.last_id FROM "
            "(SELECT entry_id, MIN(id) AS first_id, MAX(id) AS last_id FROM revision "
            f"WHERE id <= :b AND entry_id IS NOT NULL{only} GROUP BY entry_id) m "
            "JOIN revision r ON r.id = m.last_id ORDER BY r.entry_id",
            {"b": boundary, "entry": entry_id, "ids": ids},
        ).fetchall()
        rows = self.conn.execute(
            "SELECT p.*, t.position FROM provenance p "
            "LEFT JOIN thread_state t ON t.thread_id = p.thread_id "
            "WHERE p.revision_id <= :b AND (p.superseded_revision_id IS NULL "
            f"OR p.superseded_revision_id > :b){only_p} ORDER BY p.entry_id, p.post_id, p.id",
            {"b": boundary, "entry": entry_id, "ids": ids},
        ).fetchall()
        provenance: dict[int, list[sqlite3.Row]] = {}
        for row in rows:
            provenance.setdefault(row["entry_id"], []).append(row)
        views: list[EntryView] = []
        for head in heads:
            state = full_state(json.loads(head["new_value"]))
            if state["deleted"] and not include_deleted:
                continue
            sources = provenance.get(head["entry_id"], [])
            first_post, first_thread, last_post, last_thread = seen_span(
                (row["post_id"], row["thread_id"], row["position"]) for row in sources
            )
            views.append(
                EntryView(
                    id=head["entry_id"],
                    term=state["term"],
                    norm_term=normalize_term(state["term"]),
                    definition=state["definition"],
                    status=state["status"],
                    tags=state["tags"],
                    aliases=state["aliases"],
                    merged_into=state["merged_into"],
                    deleted=state["deleted"],
                    delete_reason=state["delete_reason"],
                    first_seen_post=first_post,
                    first_seen_thread=first_thread,
                    last_seen_post=last_post,
                    last_seen_thread=last_thread,
                    created_revision=head["first_id"],
                    updated_revision=head["last_id"],
                    provenance=[self._source(row) for row in sources],
                )
            )
        return views

    @guarded
    def glossary_as_of(self, revision_id: int, *, include_deleted: bool = False) -> list[EntryView]:
        """Entries (aliases, live provenance) as they stood right after revision ``revision_id``,
        in id order: each entry's latest revision <= the boundary, and the provenance rows
        recorded by then and not superseded by then. Entries deleted by then are left out
        unless ``include_deleted``; merged ones are included (status 'merged', a redirect)."""
        boundary = clean_boundary(revision_id)
        with self.reading():
            return self._views_as_of(boundary, include_deleted)

    @guarded
    def changes_between(
        self, first_revision: int, second_revision: int
    ) -> tuple[list[EntryView], set[int]]:
        """What differs between the glossary as of two revisions (either order): the entries
        whose state or live provenance changed, as they stand at ``second_revision`` (deleted
        ones included), and the ids of entries that did not exist yet at it. Revisions are
        append-only, so these are the entries with a revision, or a provenance row recorded or
        superseded, between the two."""
        second = clean_boundary(second_revision)
        low, high = sorted((clean_boundary(first_revision), second))
        with self.reading():
            changed = {
                int(row[0])
                for row in self.conn.execute(
                    "SELECT entry_id FROM revision WHERE id > :low AND id <= :high "
                    "AND entry_id IS NOT NULL UNION SELECT entry_id FROM provenance "
                    "WHERE (revision_id > :low AND revision_id <= :high) OR "
                    "(superseded_revision_id > :low AND superseded_revision_id <= :high)",
                    {"low": low, "high": high},
                )
            }
            views = self._views_as_of(second, True, entry_ids=sorted(changed)) if changed else []
        return views, changed - {view.id for view in views}

    @guarded
    def entry_as_of(self, entry_id: int, revision_id: int) -> EntryView | None:
        """One entry as it stood after ``revision_id`` (deleted or not); None if not created."""
        boundary = clean_boundary(revision_id)
        entry_id = parse_entry_id(entry_id)
        with self.reading():
            self.rows.row(entry_id)
            views = self._views_as_of(boundary, True, entry_id)
        return views[0] if views else None

    @guarded
    def glossary_as_of_thread(
        self, thread_id: int, *, include_deleted: bool = False
    ) -> list[EntryView]:
        """The glossary as of the end of a thread (its ``thread_state.end_revision_id``).
        StoreError naming the thread if it has not finished."""
        with self.reading():
            state = self.progress.thread_state(thread_id)
            if state is None or state.end_revision_id is None:
                name = f"{state.thread_key} ({thread_id})" if state else str(thread_id)
                status = state.status if state else "never annotated"
                raise StoreError(
                    f"thread {name} has not finished annotation ({status}); "
                    "there is no glossary as of its end"
                )
            return self._views_as_of(state.end_revision_id, include_deleted)
