"""The rows of an entry: reading an entry (its row, live aliases, state) and writing one change
(the revision with the full state before and after, then the entry, alias and full-text rows made
to match it). Every part of the glossary store writes entries through `EntryRows.change`.

Names: a term or alias is compared by `normalize_term`. The names of *live* entries (not deleted,
not merged) are unique across terms and aliases (`EntryRows.check_free`); a merged entry's names
become aliases of its target, which then owns them. Rejected entries are live: their names stay
taken, so a rejected term is not created again unnoticed.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from terrarium_dagster.errors import DuplicateTermError, EntryNotFoundError, StoreError
from terrarium_dagster.store.base import Aggregate, dump_json, now_iso
from terrarium_dagster.store.inputs import Actor
from terrarium_dagster.store.models import Entry, Revision
from terrarium_dagster.store.normalize import normalize_term
from terrarium_dagster.store.records import from_row

STATE_KEYS: tuple[str, ...] = (
    "term",
    "definition",
    "status",
    "tags",
    "aliases",
    "deleted",
    "delete_reason",
    "merged_into",
)
_INDEXED = ("term", "aliases", "definition")  # what the full-text row holds (`EntryRows.index`)
DEFAULT_STATE: dict[str, Any] = {
    "term": "",
    "definition": "",
    "status": "tentative",
    "tags": [],
    "aliases": [],
    "deleted": False,
    "delete_reason": None,
    "merged_into": None,
}


def json_ids(ids: Iterable[int]) -> str:
    return dump_json(list(ids))


def full_state(raw: dict[str, Any]) -> dict[str, Any]:
    """A stored state with every key (states written by older code may lack newer keys)."""
    state = {**DEFAULT_STATE, **{key: raw[key] for key in STATE_KEYS if key in raw}}
    state["tags"] = list(state["tags"])
    state["aliases"] = list(state["aliases"])
    state["deleted"] = bool(state["deleted"])
    return state


def duplicate(surface: str, row: sqlite3.Row) -> DuplicateTermError:
    entry_id, term, alias = row["id"], row["term"], row["alias"]
    if alias is None:
        what = f"the term of entry E{entry_id} {term!r}"
    else:
        what = f"an alias ({alias!r}) of entry E{entry_id} {term!r}"
    error = DuplicateTermError(
        f"{surface!r} is already {what}; update E{entry_id} or choose another name"
    )
    error.existing_entry_id = entry_id  # type: ignore[attr-defined]
    error.existing_term = term  # type: ignore[attr-defined]
    return error


def revision_record(row: sqlite3.Row) -> Revision:
    return from_row(Revision, row, json_columns=("old_value", "new_value", "detail"))


class EntryRows(Aggregate):
    """Reads and writes of entry rows inside the caller's transaction (no public API of the
    store: its parts compose these)."""

    def row(self, entry_id: int) -> sqlite3.Row:
        row = self.conn.execute("SELECT * FROM entry WHERE id = ?", (entry_id,)).fetchone()
        if row is None:
            raise EntryNotFoundError(f"no entry E{entry_id} in the glossary")
        return row

    def revised(self, condition: str, params: Sequence[object]) -> list[int]:
        """Ids of the entries with a revision where `condition` holds (SQL over the revision's
        columns, with `params`), in id order."""
        rows = self.conn.execute(
            f"SELECT DISTINCT entry_id FROM revision WHERE {condition} "
            "AND entry_id IS NOT NULL ORDER BY entry_id",
            params,
        )
        return [row[0] for row in rows]

    def aliases(self, entry_ids: Iterable[int] | None) -> dict[int, list[str]]:
        """Live aliases per entry, in the order they were added (one query)."""
        if entry_ids is None:
            rows = self.conn.execute(
                "SELECT entry_id, alias FROM alias WHERE deleted = 0 ORDER BY entry_id, id"
            )
        else:
            rows = self.conn.execute(
                "SELECT entry_id, alias FROM alias WHERE deleted = 0 "
                "AND entry_id IN (SELECT value FROM json_each(?)) ORDER BY entry_id, id",
                (json_ids(entry_ids),),
            )
        aliases: dict[int, list[str]] = {}
        for row in rows:
            aliases.setdefault(row["entry_id"], []).append(row["alias"])
        return aliases

    @staticmethod
    def entry(row: sqlite3.Row, aliases: list[str]) -> Entry:
        return from_row(Entry, row, json_columns=("tags",), aliases=aliases)

    @staticmethod
    def state(row: sqlite3.Row, aliases: list[str]) -> dict[str, Any]:
        return {
            "term": row["term"],
            "definition": row["definition"],
            "status": row["status"],
            "tags": json.loads(row["tags"]),
            "aliases": list(aliases),
            "deleted": bool(row["deleted"]),
            "delete_reason": row["delete_reason"],
            "merged_into": row["merged_into"],
        }

    def current_state(self, entry_id: int) -> tuple[sqlite3.Row, dict[str, Any]]:
        row = self.row(entry_id)
        return row, self.state(row, self.aliases([entry_id]).get(entry_id, []))

    def load(self, entry_id: int) -> Entry:
        row = self.row(entry_id)
        return self.entry(row, self.aliases([entry_id]).get(entry_id, []))

    def load_many(self, entry_ids: Sequence[int]) -> dict[int, Entry]:
        if not entry_ids:
            return {}
        rows = self.conn.execute(
            "SELECT * FROM entry WHERE id IN (SELECT value FROM json_each(?))",
            (json_ids(entry_ids),),
        ).fetchall()
        aliases = self.aliases([row["id"] for row in rows])
        return {row["id"]: self.entry(row, aliases.get(row["id"], [])) for row in rows}

    def guard_changeable(self, row: sqlite3.Row, doing: str) -> None:
        if row["deleted"]:
            raise StoreError(
                f"entry E{row['id']} {row['term']!r} is deleted ({row['delete_reason']}); "
                f"restore it before {doing}"
            )
        if row["merged_into"] is not None:
            raise StoreError(
                f"entry E{row['id']} {row['term']!r} was merged into E{row['merged_into']}; "
                f"use E{row['merged_into']} instead"
            )

    def check_free(self, names: Sequence[tuple[str, str]], exclude_ids: Collection[int]) -> None:
        """DuplicateTermError if a name is the term or a live alias of another live entry."""
        if not names:
            return
        norms = json_ids(sorted({norm for _, norm in names}))
        excluded = json_ids(exclude_ids)
        rows = self.conn.execute(
            "SELECT e.id, e.term, e.norm_term AS norm, NULL AS alias FROM entry e "
            "WHERE e.norm_term IN (SELECT value FROM json_each(:norms)) "
            "AND e.deleted = 0 AND e.merged_into IS NULL "
            "AND e.id NOT IN (SELECT value FROM json_each(:excluded)) "
            "UNION ALL "
            "SELECT e.id, e.term, a.norm_alias AS norm, a.alias FROM alias a "
            "JOIN entry e ON e.id = a.entry_id "
            "WHERE a.norm_alias IN (SELECT value FROM json_each(:norms)) AND a.deleted = 0 "
            "AND e.deleted = 0 AND e.merged_into IS NULL "
            "AND e.id NOT IN (SELECT value FROM json_each(:excluded)) "
            "ORDER BY 1",
            {"norms": norms, "excluded": excluded},
        ).fetchall()
        taken: dict[str, sqlite3.Row] = {}
        for row in rows:
            taken.setdefault(row["norm"], row)
        for surface, norm in names:
            if norm in taken:
                raise duplicate(surface, taken[norm])

    def write_revision(
        self,
        entry_id: int,
        action: str,
        old: dict[str, Any] | None,
        new: dict[str, Any],
        actor: Actor,
        reason: str | None,
        detail: dict[str, Any] | None = None,
        group_id: int | None = None,
    ) -> int:
        row = {
            "entry_id": entry_id,
            "action": action,
            "old_value": None if old is None else dump_json(old),
            "new_value": dump_json(new),
            "detail": None if detail is None else dump_json(detail),
            "group_id": group_id,
            "reason": reason,
            "actor_kind": actor.kind,
            "run_id": actor.run_id,
            "thread_id": actor.thread_id,
            "scene_id": actor.scene_id,
            "snapshot_id": actor.snapshot_id,
            "created_at": now_iso(),
        }
        revision_id = self.insert("revision", row)
        self.conn.execute(
            "UPDATE entry SET updated_revision = ?, "
            "created_revision = COALESCE(created_revision, ?) WHERE id = ?",
            (revision_id, revision_id, entry_id),
        )
        return revision_id

    def apply_state(
        self,
        entry_id: int,
        state: dict[str, Any],
        revision_id: int,
        old: dict[str, Any] | None = None,
    ) -> None:
        """Make the entry, alias and FTS rows match ``state`` (the FTS row only when what it
        indexes differs from ``old``, the state before: a change of status, tags or sources
        leaves the index as it is)."""
        self.conn.execute(
            "UPDATE entry SET term = ?, norm_term = ?, definition = ?, status = ?, tags = ?, "
            "merged_into = ?, deleted = ?, delete_reason = ? WHERE id = ?",
            (
                state["term"],
                normalize_term(state["term"]),
                state["definition"],
                state["status"],
                dump_json(state["tags"]),
                state["merged_into"],
                int(state["deleted"]),
                state["delete_reason"],
                entry_id,
            ),
        )
        wanted = list(state["aliases"])
        kept: set[str] = set()
        for row in self.conn.execute(
            "SELECT id, alias FROM alias WHERE entry_id = ? AND deleted = 0 ORDER BY id",
            (entry_id,),
        ).fetchall():
            if row["alias"] in wanted and row["alias"] not in kept:
                kept.add(row["alias"])
            else:
                self.conn.execute(
                    "UPDATE alias SET deleted = 1, removed_revision_id = ? WHERE id = ?",
                    (revision_id, row["id"]),
                )
        for alias in wanted:
            if alias not in kept:
                kept.add(alias)
                self.conn.execute(
                    "INSERT INTO alias (entry_id, alias, norm_alias, revision_id) "
                    "VALUES (?, ?, ?, ?)",
                    (entry_id, alias, normalize_term(alias), revision_id),
                )
        if old is None or any(old[key] != state[key] for key in _INDEXED):
            self.index(entry_id, state)

    def index(self, entry_id: int, state: dict[str, Any]) -> None:
        self.conn.execute("DELETE FROM entry_fts WHERE rowid = ?", (entry_id,))
        self.conn.execute(
            "INSERT INTO entry_fts (rowid, term, aliases, definition) VALUES (?, ?, ?, ?)",
            (entry_id, state["term"], " ; ".join(state["aliases"]), state["definition"]),
        )

    def change(
        self,
        entry_id: int,
        old: dict[str, Any] | None,
        new: dict[str, Any],
        actor: Actor,
        action: str,
        reason: str | None,
        detail: dict[str, Any] | None = None,
        group_id: int | None = None,
    ) -> int:
        revision_id = self.write_revision(
            entry_id, action, old, new, actor, reason, detail, group_id
        )
        self.apply_state(entry_id, new, revision_id, old)
        return revision_id
