"""Source posts of a living corpus: `store.sources`.

Every post cited as a source gets a row with the hash of its story text as it was when first
cited (`record`, in the transaction that cited it). `check` compares those hashes with the
corpus now: a post whose text changed is `edited`, one that is gone is `deleted`; for an edited
post, every live quote taken from it is looked for in its new text (`quotes_hold`). A writer
keeps what it found (`mark`), so readers (`terrarium status`, Dagster's check) report it
without the corpus; a post edited back to what was cited is clear again. Quotes are never
rewritten here: a stored quote that no longer holds is reported with its entries, never silently
kept as verbatim.

The corpus is reached through callables (post id -> text hash, post id -> text), so the store
does not depend on the corpus package.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from terrarium_dagster.store.base import Aggregate, guarded, now_iso
from terrarium_dagster.store.normalize import find_quotation

HashOf = Callable[[int], str | None]  # post id -> the hash of its story text now (None: gone)
TextOf = Callable[[int], str | None]  # post id -> its story text now (None: gone)


@dataclass(frozen=True)
class SourceChange:
    """A source post that changed since it was cited."""

    post_id: int
    thread_id: int
    change: str  # "edited" or "deleted"
    quotes_hold: bool  # every live quote from it is still its words (never, for a deleted one)
    entry_ids: tuple[int, ...] = ()
    broken_quotes: tuple[str, ...] = field(default=())


class SourceLog(Aggregate):
    """The store's source-post aggregate: `store.sources`."""

    @guarded
    def record(self, hash_of: HashOf, *, since_revision: int | None = None) -> int:
        """Hash the posts cited by provenance (recorded after `since_revision`, or all) that have
        no hash yet; joins the open transaction. Returns how many were recorded."""
        where = "" if since_revision is None else " AND p.revision_id > ?"
        params: tuple[object, ...] = () if since_revision is None else (since_revision,)
        rows = self.conn.execute(
            "SELECT DISTINCT p.post_id, p.thread_id FROM provenance p "
            "LEFT JOIN source_post s ON s.post_id = p.post_id "
            f"WHERE s.post_id IS NULL{where} ORDER BY p.post_id",
            params,
        ).fetchall()
        recorded = 0
        with self.transaction():
            for post_id, thread_id in rows:
                digest = hash_of(post_id)
                if digest is None:
                    continue  # a source that is not in the corpus: `check` cannot judge it
                self.conn.execute(
                    "INSERT INTO source_post (post_id, thread_id, text_hash, recorded_at) "
                    "VALUES (?, ?, ?, ?)",
                    (post_id, thread_id, digest, now_iso()),
                )
                recorded += 1
        return recorded

    @guarded
    def cited_posts(self) -> set[int]:
        """Every post a source names: hashed already, or cited and not yet hashed."""
        return {
            row[0]
            for row in self.conn.execute(
                "SELECT post_id FROM source_post UNION SELECT post_id FROM provenance"
            )
        }

    @guarded
    def check(self, hash_of: HashOf, text_of: TextOf) -> list[SourceChange]:
        """The source posts whose text is not what was cited (read only)."""
        changes: list[SourceChange] = []
        rows = self.conn.execute(
            "SELECT post_id, thread_id, text_hash FROM source_post ORDER BY post_id"
        ).fetchall()
        for post_id, thread_id, recorded in rows:
            now = hash_of(post_id)
            if now == recorded:
                continue
            quotes = self._live_quotes(post_id)
            text = text_of(post_id) if now is not None else None
            broken = tuple(
                quote
                for _, quote in quotes
                if quote and (text is None or find_quotation(text, quote) is None)
            )
            changes.append(
                SourceChange(
                    post_id=post_id,
                    thread_id=thread_id,
                    change="deleted" if now is None else "edited",
                    quotes_hold=now is not None and not broken,
                    entry_ids=tuple(sorted({entry_id for entry_id, _ in quotes})),
                    broken_quotes=broken,
                )
            )
        return changes

    def _live_quotes(self, post_id: int) -> list[tuple[int, str]]:
        return [
            (row[0], row[1] or "")
            for row in self.conn.execute(
                "SELECT p.entry_id, p.quote FROM provenance p JOIN entry e ON e.id = p.entry_id "
                "WHERE p.post_id = ? AND p.superseded_revision_id IS NULL AND e.deleted = 0 "
                "ORDER BY p.id",
                (post_id,),
            )
        ]

    @guarded
    def mark(self, changes: list[SourceChange]) -> None:
        """Keep what a check found: the changed posts marked, every other one clear."""
        changed = {change.post_id: change for change in changes}
        with self.transaction():
            marked = [
                row[0]
                for row in self.conn.execute(
                    "SELECT post_id FROM source_post WHERE change IS NOT NULL"
                )
            ]
            for post_id in marked:
                if post_id not in changed:
                    self.conn.execute(
                        "UPDATE source_post SET change = NULL, quotes_hold = NULL, "
                        "checked_at = ? WHERE post_id = ?",
                        (now_iso(), post_id),
                    )
            for change in changes:
                self.conn.execute(
                    "UPDATE source_post SET change = ?, quotes_hold = ?, checked_at = ? "
                    "WHERE post_id = ?",
                    (change.change, int(change.quotes_hold), now_iso(), change.post_id),
                )

    @guarded
    def marked(self) -> list[SourceChange]:
        """What the last check found (readers: no corpus needed)."""
        changes = []
        for post_id, thread_id, change, holds in self.conn.execute(
            "SELECT post_id, thread_id, change, quotes_hold FROM source_post "
            "WHERE change IS NOT NULL ORDER BY post_id"
        ).fetchall():
            quotes = self._live_quotes(post_id)
            changes.append(
                SourceChange(
                    post_id=post_id,
                    thread_id=thread_id,
                    change=change,
                    quotes_hold=bool(holds),
                    entry_ids=tuple(sorted({entry_id for entry_id, _ in quotes})),
                )
            )
        return changes

    @guarded
    def count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM source_post").fetchone()[0])


def describe(change: SourceChange, place: Callable[[int, int], str] | None = None) -> str:
    """One line for a report: what changed, whether its quotes hold, which entries cite it;
    the post named by `place` (thread id, post id: a book's chapter and paragraph), else as
    `post <thread>#<post>`."""
    entries = ", ".join(f"E{entry_id}" for entry_id in change.entry_ids) or "no live entry"
    if change.change == "deleted":
        verdict = "its quotes have no source now"
    elif change.quotes_hold:
        verdict = "its quotes still hold"
    else:
        verdict = "a quote from it is no longer its words"
    where = (
        place(change.thread_id, change.post_id)
        if place is not None
        else f"post {change.thread_id}#{change.post_id}"
    )
    return f"{where} {change.change}: {verdict} ({entries})"


def to_json(changes: list[SourceChange]) -> str:
    return json.dumps(
        [
            {
                "post": f"{c.thread_id}#{c.post_id}",
                "change": c.change,
                "quotes_hold": c.quotes_hold,
                "entries": [f"E{e}" for e in c.entry_ids],
            }
            for c in changes
        ],
        sort_keys=True,
    )
