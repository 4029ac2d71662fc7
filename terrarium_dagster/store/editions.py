"""The reader's edition: `store.editions`.

An edition row is one entry's reader-facing text as of a thread: written from the entry's
evidence up to the end of that thread (the glossary boundary `revision_id`, the thread's end
revision when it was written), naming the entry's revisions it was written from, the posts it
was shown (the only ones it may cite), the request that wrote it (`request`, the `scene_id` of
its call rows) and how it came out (`written`; `kept`: every answer was refused and the
previous text stands). A thread's edition is complete when its `edition_thread` row exists for
the thread's current end revision; a thread annotated again (a rewind) has a new end revision,
so its old edition rows stay on record but no longer count.

The edition at a reading position is, for each entry, its row of the latest complete thread at
or before that position: exact for any position, and nothing of a later thread.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from terrarium_dagster.store.base import Aggregate, guarded, now_iso
from terrarium_dagster.store.records import from_row

OUTCOMES = ("written", "kept")


@dataclass(frozen=True)
class EditionText:
    """One entry's edition as of one thread."""

    entry_id: int
    thread_id: int
    position: int
    revision_id: int
    text: str
    outcome: str
    revisions: tuple[int, ...]
    posts: tuple[int, ...]
    request: str | None
    attempts: int
    tokens: int

    def key(self) -> tuple[object, ...]:
        """Everything but who wrote it when (run ids and times): what two runs must agree on."""
        return (
            self.entry_id,
            self.thread_id,
            self.position,
            self.revision_id,
            self.text,
            self.outcome,
            self.revisions,
            self.posts,
            self.request,
            self.attempts,
        )


@dataclass(frozen=True)
class EditionThread:
    """A thread whose edition is complete (for the glossary boundary `revision_id`)."""

    thread_id: int
    position: int
    revision_id: int
    rewritten: int
    requests: int
    tokens: int


_CURRENT = (
    "JOIN thread_state s ON s.thread_id = e.thread_id "
    "JOIN edition_thread t ON t.thread_id = e.thread_id AND t.revision_id = e.revision_id "
    "AND t.revision_id = s.end_revision_id"
)


def _stamped(
    record: EditionText | EditionThread, run_id: str | None, stamp: str
) -> dict[str, object]:
    """The row of an edition record: its fields (id lists as JSON), who wrote it and when."""
    fields = {
        name: json.dumps(list(value)) if isinstance(value, tuple) else value
        for name, value in asdict(record).items()
    }
    return fields | {"run_id": run_id, "created_at": stamp}


def _text(row: sqlite3.Row) -> EditionText:
    revisions, posts = (tuple(json.loads(row[column])) for column in ("revisions", "posts"))
    return from_row(EditionText, row, revisions=revisions, posts=posts)


class EditionLog(Aggregate):
    """The store's edition aggregate: `store.editions`."""

    @guarded
    def record_thread(
        self,
        thread: EditionThread,
        texts: Sequence[EditionText],
        *,
        run_id: str | None,
    ) -> None:
        """A thread's edition: its rewritten entries and the row that makes it complete, in one
        transaction (joins an open one)."""
        for text in texts:
            if text.outcome not in OUTCOMES:
                raise ValueError(f"edition outcome {text.outcome!r} is not one of {OUTCOMES}")
        stamp = now_iso()
        with self.transaction():
            for text in texts:
                self.insert("edition", _stamped(text, run_id, stamp))
            self.insert("edition_thread", _stamped(thread, run_id, stamp))

    @guarded
    def thread(self, thread_id: int) -> EditionThread | None:
        """The thread's complete edition for its current end revision (None: not written, or
        stale since the thread was annotated again)."""
        row = self.conn.execute(
            "SELECT t.* FROM edition_thread t JOIN thread_state s ON s.thread_id = t.thread_id "
            "AND s.end_revision_id = t.revision_id WHERE t.thread_id = ?",
            (thread_id,),
        ).fetchone()
        if row is None:
            return None
        return from_row(EditionThread, row)

    @guarded
    def of_thread(self, thread_id: int) -> list[EditionText]:
        """The entries the thread's (current) edition rewrote, in entry order."""
        return self.records(
            _text,
            f"SELECT e.* FROM edition e {_CURRENT} WHERE e.thread_id = ? ORDER BY e.entry_id",
            (thread_id,),
        )

    @guarded
    def as_of(self, position: int) -> dict[int, EditionText]:
        """Entry id -> its edition at reading position `position` (a thread's position): the
        row of the latest complete thread at or before it."""
        rows = self.conn.execute(
            f"SELECT e.* FROM edition e {_CURRENT} WHERE e.position <= ? "
            "ORDER BY e.entry_id, e.position",
            (position,),
        ).fetchall()
        latest: dict[int, EditionText] = {}
        for row in rows:
            latest[int(row["entry_id"])] = _text(row)
        return latest

    @guarded
    def all_current(self) -> list[EditionText]:
        """Every current edition row, in (position, entry) order (the comparison of two runs)."""
        return self.records(
            _text, f"SELECT e.* FROM edition e {_CURRENT} ORDER BY e.position, e.entry_id"
        )
