"""The glossary aggregate: entries, aliases, provenance and the revision log.

Every change goes through `transaction()` and writes, in the same transaction, one revision per
entry touched with the full entry state before and after (term, definition, status, tags, aliases,
deleted, delete_reason, merged_into). The entry, alias and FTS rows are the current state; the
revision log is the history, so "the glossary as of revision N" is a lookup (the latest revision of
each entry with id <= N) and nothing is ever erased: deletes are soft, provenance rows are
superseded (never removed), rollbacks are new revisions.

Names: a term or alias is compared by `normalize_term`. The names of *live* entries (not deleted,
not merged) are unique across terms and aliases; a merged entry's names become aliases of its
target, which then owns them. Rejected entries are live: their names stay taken, so a rejected
term is not created again unnoticed.
"""

from __future__ import annotations

import json
import re
import sqlite3
import unicodedata
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from terrarium_dagster.errors import (
    DuplicateTermError,
    EntryNotFoundError,
    InputError,
    StoreError,
)
from terrarium_dagster.glossary.base import Aggregate, dump_json, guarded, now_iso
from terrarium_dagster.glossary.fts import fts_query
from terrarium_dagster.glossary.links import any_target, tidy_links
from terrarium_dagster.glossary.models import (
    Entry,
    EntryView,
    Provenance,
    ProvenanceIn,
    Revision,
    SearchHit,
    UndoneChange,
)
from terrarium_dagster.glossary.normalize import normalize_term

ActorKind = Literal["agent", "curator", "user", "rollback", "system"]
ACTOR_KINDS: tuple[str, ...] = ("agent", "curator", "user", "rollback", "system")

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
_DEFAULT_STATE: dict[str, Any] = {
    "term": "",
    "definition": "",
    "status": "tentative",
    "tags": [],
    "aliases": [],
    "deleted": False,
    "delete_reason": None,
    "merged_into": None,
}
SETTABLE_STATUSES: tuple[str, ...] = ("tentative", "confirmed", "rejected")

MAX_NAME_CHARS = 200
MAX_TAG_CHARS = 64
MAX_DEFINITION_CHARS = 20_000
MAX_SEARCH_LIMIT = 200
# bm25 column weights: term, aliases, definition.
_BM25 = "bm25(entry_fts, 10.0, 5.0, 1.0)"
_WRAPPING_QUOTES = '"“”„«»'
_ENTRY_REF = re.compile(r"^\s*[Ee]?(\d+)\s*$")
_MAX_REDIRECTS = 64


@dataclass(frozen=True)
class Actor:
    """Who made a change; recorded on every revision."""

    kind: ActorKind
    run_id: str | None = None
    thread_id: int | None = None
    scene_id: str | None = None
    snapshot_id: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in ACTOR_KINDS:
            raise InputError(f"actor kind {self.kind!r} is not one of {', '.join(ACTOR_KINDS)}")


def parse_entry_id(value: object) -> int:
    """An entry id from an int, ``"12"`` or ``"E12"``; InputError otherwise."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value > 0:
            return value
    elif isinstance(value, str):
        match = _ENTRY_REF.match(value)
        if match:
            return int(match.group(1))
    raise InputError(f"{value!r} is not an entry id (expected a positive integer or 'E<number>')")


# ------------------------------------------------------------------------------ argument checks
def _check_actor(actor: object) -> Actor:
    if not isinstance(actor, Actor):
        raise InputError(f"actor must be an Actor, not {type(actor).__name__}")
    return actor


_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Co"})  # control, format, surrogate, private use


def _clean_name(name: object, what: str) -> tuple[str, str]:
    """(surface form, normalized form) of a term or alias."""
    if not isinstance(name, str):
        raise InputError(f"{what} must be a string, not {type(name).__name__}")
    printable = "".join(
        c if c.isspace() or unicodedata.category(c) not in _INVISIBLE else ""
        for c in name  # NUL and other control characters go; whitespace is folded below
    )
    surface = " ".join(printable.split()).strip(_WRAPPING_QUOTES).strip()
    if len(surface) > MAX_NAME_CHARS:
        raise InputError(f"{what} {surface[:40]!r}... is longer than {MAX_NAME_CHARS} characters")
    norm = normalize_term(surface)
    if not norm:
        raise InputError(f"{what} {name!r} has no letters or digits to name anything")
    return surface, norm


def _clean_names(names: object, what: str) -> list[tuple[str, str]]:
    if isinstance(names, str) or not isinstance(names, Iterable):
        raise InputError(f"{what}es must be a list of strings, not {type(names).__name__}")
    return [_clean_name(name, what) for name in names]


def _clean_definition(definition: object) -> str:
    if not isinstance(definition, str):
        raise InputError(f"definition must be a string, not {type(definition).__name__}")
    text = definition.strip()
    if len(text) > MAX_DEFINITION_CHARS:
        raise InputError(f"definition is longer than {MAX_DEFINITION_CHARS} characters")
    return text


def _clean_tags(tags: object) -> list[str]:
    if isinstance(tags, str) or not isinstance(tags, Iterable):
        raise InputError(f"tags must be a list of strings, not {type(tags).__name__}")
    cleaned: list[str] = []
    seen: set[str] = set()
    for tag in tags:
        if not isinstance(tag, str):
            raise InputError(f"tag {tag!r} is not a string")
        text = " ".join(tag.split())
        if not text:
            continue
        if len(text) > MAX_TAG_CHARS:
            raise InputError(f"tag {text[:30]!r}... is longer than {MAX_TAG_CHARS} characters")
        if text.casefold() not in seen:
            seen.add(text.casefold())
            cleaned.append(text)
    return cleaned


def _clean_status(status: object) -> str:
    if status not in SETTABLE_STATUSES:
        raise InputError(
            f"status {status!r} is not one of {', '.join(SETTABLE_STATUSES)} "
            "(an entry becomes 'merged' only through a merge)"
        )
    return str(status)


def _clean_items(items: object) -> list[ProvenanceIn]:
    if isinstance(items, str | dict) or not isinstance(items, Iterable):
        raise InputError("provenance must be a list of ProvenanceIn (post_id, thread_id, quote)")
    cleaned: list[ProvenanceIn] = []
    for item in items:
        try:
            cleaned.append(ProvenanceIn.model_validate(item))
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(part) for part in problem["loc"]) or "item"
            raise InputError(f"bad provenance {item!r}: {where}: {problem['msg']}") from exc
    return cleaned


def _clean_reason(reason: object, *, required: bool, what: str = "reason") -> str | None:
    if reason is None and not required:
        return None
    if not isinstance(reason, str) or not reason.strip():
        raise InputError(f"a non-empty {what} is required")
    return reason.strip()


def _clean_boundary(revision_id: object) -> int:
    if isinstance(revision_id, bool) or not isinstance(revision_id, int) or revision_id < 0:
        raise InputError(f"revision id must be a non-negative integer, not {revision_id!r}")
    return revision_id


# ------------------------------------------------------------------------------------- helpers
def _json_ids(ids: Iterable[int]) -> str:
    return dump_json(list(ids))


def provenance_key(post_id: int, thread_id: int, quote: str) -> tuple[int, int, str]:
    return (post_id, thread_id, quote)


def full_state(raw: dict[str, Any]) -> dict[str, Any]:
    """A stored state with every key (states written by older code may lack newer keys)."""
    state = {**_DEFAULT_STATE, **{key: raw[key] for key in STATE_KEYS if key in raw}}
    state["tags"] = list(state["tags"])
    state["aliases"] = list(state["aliases"])
    state["deleted"] = bool(state["deleted"])
    return state


def _add_names(
    term_norm: str, aliases: list[str], additions: Iterable[tuple[str, str]]
) -> tuple[list[str], list[tuple[str, str]]]:
    """Aliases plus those additions that are not already the term or an alias (normalized)."""
    taken = {normalize_term(alias) for alias in aliases} | {term_norm}
    result = list(aliases)
    added: list[tuple[str, str]] = []
    for surface, norm in additions:
        if norm in taken:
            continue
        taken.add(norm)
        result.append(surface)
        added.append((surface, norm))
    return result, added


def _seen(rows: Iterable[tuple[int, int, int | None]]) -> tuple[int | None, ...]:
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


def _duplicate(surface: str, row: sqlite3.Row) -> DuplicateTermError:
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


def _revision(row: sqlite3.Row) -> Revision:
    return Revision(
        id=row["id"],
        entry_id=row["entry_id"],
        action=row["action"],
        old_value=None if row["old_value"] is None else json.loads(row["old_value"]),
        new_value=None if row["new_value"] is None else json.loads(row["new_value"]),
        detail=None if row["detail"] is None else json.loads(row["detail"]),
        group_id=row["group_id"],
        reason=row["reason"],
        actor_kind=row["actor_kind"],
        run_id=row["run_id"],
        thread_id=row["thread_id"],
        scene_id=row["scene_id"],
        snapshot_id=row["snapshot_id"],
        created_at=row["created_at"],
    )


def _provenance(row: sqlite3.Row) -> Provenance:
    return Provenance(
        id=row["id"],
        entry_id=row["entry_id"],
        post_id=row["post_id"],
        thread_id=row["thread_id"],
        quote=row["quote"],
        revision_id=row["revision_id"],
        superseded_revision_id=row["superseded_revision_id"],
        moved_from=row["moved_from"],
    )


class Glossary(Aggregate):
    """The glossary aggregate (`store.glossary`): entries, aliases, provenance, revisions, as-of
    views, rollback. Every public mutating method runs in `transaction()`: alone it is atomic,
    inside an outer ``with store.transaction():`` (the scene transaction) it joins it.
    """

    # ============================================================================ internal reads
    def _row(self, entry_id: int) -> sqlite3.Row:
        row = self.conn.execute("SELECT * FROM entry WHERE id = ?", (entry_id,)).fetchone()
        if row is None:
            raise EntryNotFoundError(f"no entry E{entry_id} in the glossary")
        return row

    def _aliases(self, entry_ids: Iterable[int] | None) -> dict[int, list[str]]:
        """Live aliases per entry, in the order they were added (one query)."""
        if entry_ids is None:
            rows = self.conn.execute(
                "SELECT entry_id, alias FROM alias WHERE deleted = 0 ORDER BY entry_id, id"
            )
        else:
            rows = self.conn.execute(
                "SELECT entry_id, alias FROM alias WHERE deleted = 0 "
                "AND entry_id IN (SELECT value FROM json_each(?)) ORDER BY entry_id, id",
                (_json_ids(entry_ids),),
            )
        aliases: dict[int, list[str]] = {}
        for row in rows:
            aliases.setdefault(row["entry_id"], []).append(row["alias"])
        return aliases

    @staticmethod
    def _entry(row: sqlite3.Row, aliases: list[str]) -> Entry:
        return Entry(
            id=row["id"],
            term=row["term"],
            norm_term=row["norm_term"],
            definition=row["definition"],
            status=row["status"],
            tags=json.loads(row["tags"]),
            aliases=aliases,
            merged_into=row["merged_into"],
            deleted=bool(row["deleted"]),
            delete_reason=row["delete_reason"],
            first_seen_post=row["first_seen_post"],
            first_seen_thread=row["first_seen_thread"],
            last_seen_post=row["last_seen_post"],
            last_seen_thread=row["last_seen_thread"],
            created_revision=row["created_revision"],
            updated_revision=row["updated_revision"],
        )

    @staticmethod
    def _state(row: sqlite3.Row, aliases: list[str]) -> dict[str, Any]:
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

    def _current_state(self, entry_id: int) -> tuple[sqlite3.Row, dict[str, Any]]:
        row = self._row(entry_id)
        return row, self._state(row, self._aliases([entry_id]).get(entry_id, []))

    def _load(self, entry_id: int) -> Entry:
        row = self._row(entry_id)
        return self._entry(row, self._aliases([entry_id]).get(entry_id, []))

    def _load_many(self, entry_ids: Sequence[int]) -> dict[int, Entry]:
        if not entry_ids:
            return {}
        rows = self.conn.execute(
            "SELECT * FROM entry WHERE id IN (SELECT value FROM json_each(?))",
            (_json_ids(entry_ids),),
        ).fetchall()
        aliases = self._aliases([row["id"] for row in rows])
        return {row["id"]: self._entry(row, aliases.get(row["id"], [])) for row in rows}

    def _live_provenance(
        self, entry_id: int, post_ids: Sequence[int] | None = None
    ) -> list[sqlite3.Row]:
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
            (entry_id, _json_ids(post_ids)),
        ).fetchall()

    @guarded
    def sourced_posts(self, entry_id: int, post_ids: Iterable[int]) -> set[int]:
        """Which of `post_ids` are already live sources of the entry (reads only those)."""
        entry_id = parse_entry_id(entry_id)
        wanted = sorted(set(post_ids))
        with self.reading():
            return {row["post_id"] for row in self._live_provenance(entry_id, wanted)}

    def _guard_changeable(self, row: sqlite3.Row, doing: str) -> None:
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

    def _check_free(self, names: Sequence[tuple[str, str]], exclude_ids: Collection[int]) -> None:
        """DuplicateTermError if a name is the term or a live alias of another live entry."""
        if not names:
            return
        norms = _json_ids(sorted({norm for _, norm in names}))
        excluded = _json_ids(exclude_ids)
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
                raise _duplicate(surface, taken[norm])

    # =========================================================================== internal writes
    def _write_revision(
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
        cursor = self.conn.execute(
            "INSERT INTO revision (entry_id, action, old_value, new_value, detail, group_id, "
            "reason, actor_kind, run_id, thread_id, scene_id, snapshot_id, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                entry_id,
                action,
                None if old is None else dump_json(old),
                dump_json(new),
                None if detail is None else dump_json(detail),
                group_id,
                reason,
                actor.kind,
                actor.run_id,
                actor.thread_id,
                actor.scene_id,
                actor.snapshot_id,
                now_iso(),
            ),
        )
        revision_id = int(cursor.lastrowid or 0)
        self.conn.execute(
            "UPDATE entry SET updated_revision = ?, "
            "created_revision = COALESCE(created_revision, ?) WHERE id = ?",
            (revision_id, revision_id, entry_id),
        )
        return revision_id

    def _apply_state(self, entry_id: int, state: dict[str, Any], revision_id: int) -> None:
        """Make the entry, alias and FTS rows match ``state``."""
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
        self._index(entry_id, state)

    def _index(self, entry_id: int, state: dict[str, Any]) -> None:
        self.conn.execute("DELETE FROM entry_fts WHERE rowid = ?", (entry_id,))
        self.conn.execute(
            "INSERT INTO entry_fts (rowid, term, aliases, definition) VALUES (?, ?, ?, ?)",
            (entry_id, state["term"], " ; ".join(state["aliases"]), state["definition"]),
        )

    def _change(
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
        revision_id = self._write_revision(
            entry_id, action, old, new, actor, reason, detail, group_id
        )
        self._apply_state(entry_id, new, revision_id)
        return revision_id

    def _new_items(self, entry_id: int, items: Sequence[ProvenanceIn]) -> list[ProvenanceIn]:
        """Items not already recorded (live) for the entry, without repeats."""
        # only the rows of these posts: an entry of a long story may have thousands of sources
        seen = {
            provenance_key(row["post_id"], row["thread_id"], row["quote"])
            for row in self._live_provenance(entry_id, [item.post_id for item in items])
        }
        fresh: list[ProvenanceIn] = []
        for item in items:
            key = provenance_key(item.post_id, item.thread_id, item.quote)
            if key not in seen:
                seen.add(key)
                fresh.append(item)
        return fresh

    def _insert_provenance(
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

    def _supersede(self, provenance_ids: Iterable[int], revision_id: int) -> None:
        self.conn.executemany(
            "UPDATE provenance SET superseded_revision_id = ? WHERE id = ?",
            [(revision_id, provenance_id) for provenance_id in provenance_ids],
        )

    def _extend_seen(self, entry_id: int, fresh: Sequence[ProvenanceIn]) -> None:
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
                (_json_ids(threads),),
            ).fetchall()
        )
        if any(positions.get(thread_id) is None for thread_id in threads):
            self._refresh_seen([entry_id])
            return
        seen = _seen((post, thread, positions[thread]) for post, thread in points)
        self.conn.execute(
            "UPDATE entry SET first_seen_post = ?, first_seen_thread = ?, "
            "last_seen_post = ?, last_seen_thread = ? WHERE id = ?",
            (*seen, entry_id),
        )

    def _refresh_seen(self, entry_ids: Iterable[int]) -> None:
        """Recompute first/last seen post and thread from live provenance."""
        for entry_id in sorted(set(entry_ids)):
            rows = self.conn.execute(
                "SELECT p.post_id, p.thread_id, t.position FROM provenance p "
                "LEFT JOIN thread_state t ON t.thread_id = p.thread_id "
                "WHERE p.entry_id = ? AND p.superseded_revision_id IS NULL",
                (entry_id,),
            ).fetchall()
            seen = _seen((row[0], row[1], row[2]) for row in rows)
            self.conn.execute(
                "UPDATE entry SET first_seen_post = ?, first_seen_thread = ?, "
                "last_seen_post = ?, last_seen_thread = ? WHERE id = ?",
                (*seen, entry_id),
            )

    # ================================================================================= entries
    @guarded
    def create_entry(
        self,
        actor: Actor,
        term: str,
        definition: str,
        *,
        tags: Iterable[str] = (),
        aliases: Iterable[str] = (),
        status: str = "tentative",
        provenance: Sequence[ProvenanceIn] = (),
        reason: str | None = None,
    ) -> Entry:
        """Create an entry. DuplicateTermError (naming the existing entry) when the term or an
        alias is already a name of a live entry; aliases equal to the term are dropped."""
        _check_actor(actor)
        surface, norm = _clean_name(term, "term")
        text = _clean_definition(definition)
        chosen_status = _clean_status(status)
        tag_list = _clean_tags(tags)
        alias_list, alias_names = _add_names(norm, [], _clean_names(aliases, "alias"))
        items = _clean_items(provenance)
        reason = _clean_reason(reason, required=False)
        with self.transaction():
            self._check_free([(surface, norm), *alias_names], ())
            text = tidy_links(text, any_target)
            cursor = self.conn.execute(
                "INSERT INTO entry (term, norm_term, definition, status, tags) "
                "VALUES (?, ?, ?, ?, ?)",
                (surface, norm, text, chosen_status, dump_json(tag_list)),
            )
            entry_id = int(cursor.lastrowid or 0)
            state = {
                **_DEFAULT_STATE,
                "term": surface,
                "definition": text,
                "status": chosen_status,
                "tags": tag_list,
                "aliases": alias_list,
            }
            fresh = self._new_items(entry_id, items)
            detail = {"provenance_added": len(fresh)} if fresh else None
            revision_id = self._change(entry_id, None, state, actor, "create", reason, detail)
            self._insert_provenance(
                entry_id, ((i.post_id, i.thread_id, i.quote, None) for i in fresh), revision_id
            )
            self._refresh_seen([entry_id])
            return self._load(entry_id)

    def _update(
        self,
        actor: Actor,
        entry_id: int,
        *,
        term: str | None = None,
        definition: str | None = None,
        tags: Iterable[str] | None = None,
        status: str | None = None,
        add_aliases: Iterable[str] = (),
        remove_aliases: Iterable[str] = (),
        provenance: Sequence[ProvenanceIn] = (),
        reason: str | None = None,
        action: str | None = None,
    ) -> Entry:
        _check_actor(actor)
        entry_id = parse_entry_id(entry_id)
        new_name = None if term is None else _clean_name(term, "term")
        text = None if definition is None else _clean_definition(definition)
        tag_list = None if tags is None else _clean_tags(tags)
        new_status = None if status is None else _clean_status(status)
        additions = _clean_names(add_aliases, "alias")
        removals = _clean_names(remove_aliases, "alias")
        items = _clean_items(provenance)
        reason = _clean_reason(reason, required=False)
        with self.transaction():
            row, old = self._current_state(entry_id)
            self._guard_changeable(row, "changing it")
            new = dict(old)
            to_check: list[tuple[str, str]] = []
            term_norm = normalize_term(old["term"])
            if new_name is not None:
                new["term"], new_norm = new_name
                if new_norm != term_norm:
                    to_check.append(new_name)
                term_norm = new_norm
            if text is not None:
                new["definition"] = tidy_links(text, any_target)
            if tag_list is not None:
                new["tags"] = tag_list
            if new_status is not None:
                new["status"] = new_status
            aliases = list(old["aliases"])
            for surface, norm in removals:
                position = next(
                    (i for i, alias in enumerate(aliases) if normalize_term(alias) == norm), None
                )
                if position is None:
                    raise InputError(
                        f"{surface!r} is not an alias of entry E{entry_id} {old['term']!r}"
                    )
                del aliases[position]
            aliases = [alias for alias in aliases if normalize_term(alias) != term_norm]
            new["aliases"], added = _add_names(term_norm, aliases, additions)
            to_check.extend(added)
            self._check_free(to_check, {entry_id})
            fresh = self._new_items(entry_id, items)
            if new == old and not fresh:
                return self._load(entry_id)
            chosen = action or ("update" if new != old else "provenance")
            detail = {"provenance_added": len(fresh)} if fresh else None
            revision_id = self._change(entry_id, old, new, actor, chosen, reason, detail)
            if fresh:
                self._insert_provenance(
                    entry_id,
                    ((i.post_id, i.thread_id, i.quote, None) for i in fresh),
                    revision_id,
                )
                self._extend_seen(entry_id, fresh)
            return self._load(entry_id)

    @guarded
    def update_entry(
        self,
        actor: Actor,
        entry_id: int,
        *,
        term: str | None = None,
        definition: str | None = None,
        tags: Iterable[str] | None = None,
        status: str | None = None,
        add_aliases: Iterable[str] = (),
        remove_aliases: Iterable[str] = (),
        provenance: Sequence[ProvenanceIn] = (),
        reason: str | None = None,
    ) -> Entry:
        """Change an entry (None/empty arguments leave a field as it is). A change that changes
        nothing writes no revision. Deleted or merged entries are refused (StoreError)."""
        return self._update(
            actor,
            entry_id,
            term=term,
            definition=definition,
            tags=tags,
            status=status,
            add_aliases=add_aliases,
            remove_aliases=remove_aliases,
            provenance=provenance,
            reason=reason,
        )

    @guarded
    def add_alias(
        self, actor: Actor, entry_id: int, alias: str, reason: str | None = None
    ) -> Entry:
        """Add one alias (a no-op if it already is the term or an alias of this entry)."""
        return self._update(actor, entry_id, add_aliases=[alias], reason=reason, action="alias")

    @guarded
    def add_provenance(
        self,
        actor: Actor,
        entry_id: int,
        items: Sequence[ProvenanceIn],
        reason: str | None = None,
    ) -> list[Provenance]:
        """Record sources of an entry; returns the live provenance rows for ``items`` (already
        recorded ones are not recorded twice and write no revision)."""
        cleaned = _clean_items(items)
        entry_id = parse_entry_id(entry_id)
        with self.transaction():
            self._update(actor, entry_id, provenance=cleaned, reason=reason, action="provenance")
            by_key = {
                provenance_key(row["post_id"], row["thread_id"], row["quote"]): _provenance(row)
                for row in self._live_provenance(entry_id)
            }
            return [by_key[provenance_key(i.post_id, i.thread_id, i.quote)] for i in cleaned]

    @guarded
    def delete_entry(self, actor: Actor, entry_id: int, reason: str) -> Entry:
        """Soft-delete an entry (its rows, aliases and provenance stay; its names become free)."""
        _check_actor(actor)
        entry_id = parse_entry_id(entry_id)
        why = _clean_reason(reason, required=True, what="reason for the delete")
        with self.transaction():
            row, old = self._current_state(entry_id)
            if row["deleted"]:
                raise StoreError(
                    f"entry E{entry_id} {row['term']!r} is already deleted ({row['delete_reason']})"
                )
            new = {**old, "deleted": True, "delete_reason": why}
            self._change(entry_id, old, new, actor, "delete", why)
            return self._load(entry_id)

    @guarded
    def restore_entry(self, actor: Actor, entry_id: int, reason: str | None = None) -> Entry:
        """Undo a soft delete. DuplicateTermError if another live entry took one of its names."""
        _check_actor(actor)
        entry_id = parse_entry_id(entry_id)
        why = _clean_reason(reason, required=False)
        with self.transaction():
            row, old = self._current_state(entry_id)
            if not row["deleted"]:
                raise StoreError(f"entry E{entry_id} {row['term']!r} is not deleted")
            if row["merged_into"] is None:
                names = [(old["term"], normalize_term(old["term"]))]
                names += [(alias, normalize_term(alias)) for alias in old["aliases"]]
                self._check_free(names, {entry_id})
            new = {**old, "deleted": False, "delete_reason": None}
            self._change(entry_id, old, new, actor, "restore", why)
            return self._load(entry_id)

    @guarded
    def merge_entries(self, actor: Actor, source_id: int, target_id: int, reason: str) -> Entry:
        """Merge ``source`` into ``target``: the source's term and aliases become aliases of the
        target, its tags join the target's, its live provenance rows are superseded and copied
        onto the target; the source becomes status 'merged' with ``merged_into`` = target (a
        redirect). Two revisions ('merged_into' on the source, 'merge' on the target) share a
        group id. Returns the target."""
        _check_actor(actor)
        source_id, target_id = parse_entry_id(source_id), parse_entry_id(target_id)
        why = _clean_reason(reason, required=True, what="reason for the merge")
        if source_id == target_id:
            raise InputError(f"cannot merge entry E{source_id} into itself")
        with self.transaction():
            source_row, old_source = self._current_state(source_id)
            target_row, old_target = self._current_state(target_id)
            self._guard_changeable(source_row, "merging it")
            self._guard_changeable(target_row, "merging into it")
            names = [(old_source["term"], normalize_term(old_source["term"]))]
            names += [(alias, normalize_term(alias)) for alias in old_source["aliases"]]
            target_aliases, _ = _add_names(
                normalize_term(old_target["term"]), old_target["aliases"], names
            )
            new_target = {
                **old_target,
                "aliases": target_aliases,
                "tags": _clean_tags([*old_target["tags"], *old_source["tags"]]),
            }
            new_source = {**old_source, "status": "merged", "merged_into": target_id}
            moving = self._live_provenance(source_id)
            target_keys = {
                provenance_key(row["post_id"], row["thread_id"], row["quote"])
                for row in self._live_provenance(target_id)
            }
            copies: list[tuple[int, int, str, int | None]] = []
            for row in moving:
                key = provenance_key(row["post_id"], row["thread_id"], row["quote"])
                if key not in target_keys:
                    target_keys.add(key)
                    copies.append((row["post_id"], row["thread_id"], row["quote"], row["id"]))
            source_revision = self._change(
                source_id,
                old_source,
                new_source,
                actor,
                "merged_into",
                why,
                {"target": target_id, "provenance_moved": len(moving)},
            )
            self.conn.execute("UPDATE revision SET group_id = id WHERE id = ?", (source_revision,))
            target_revision = self._change(
                target_id,
                old_target,
                new_target,
                actor,
                "merge",
                why,
                {"source": source_id, "provenance_added": len(copies)},
                group_id=source_revision,
            )
            self._supersede((row["id"] for row in moving), source_revision)
            self._insert_provenance(target_id, copies, target_revision)
            self._refresh_seen([source_id, target_id])
            return self._load(target_id)

    # ================================================================================== queries
    @guarded
    def get_entry(self, entry_id: int) -> Entry:
        """The entry with that id (deleted and merged ones too); EntryNotFoundError if none."""
        with self.reading():
            return self._load(parse_entry_id(entry_id))

    @guarded
    def get_entries(self, entry_ids: Sequence[int]) -> list[Entry]:
        """Entries in the order asked (two queries); EntryNotFoundError if any is missing."""
        ids = [parse_entry_id(entry_id) for entry_id in entry_ids]
        with self.reading():
            found = self._load_many(ids)
        missing = [entry_id for entry_id in ids if entry_id not in found]
        if missing:
            raise EntryNotFoundError(f"no entry E{missing[0]} in the glossary")
        return [found[entry_id] for entry_id in ids]

    @guarded
    def resolve_entry(self, entry_id: int) -> Entry:
        """The entry, or the entry it was merged into (following redirects)."""
        current = parse_entry_id(entry_id)
        with self.reading():
            for _ in range(_MAX_REDIRECTS):
                row = self._row(current)
                if row["merged_into"] is None:
                    return self._load(current)
                current = row["merged_into"]
        raise StoreError(f"entry E{entry_id} redirects through more than {_MAX_REDIRECTS} merges")

    @guarded
    def find_by_term(self, term: str) -> Entry | None:
        """The live entry whose term or alias normalizes like ``term``; a merged entry's name
        leads to the entry it was merged into. None if no live entry has that name."""
        if not isinstance(term, str):
            raise InputError(f"term must be a string, not {type(term).__name__}")
        norm = normalize_term(term)
        if not norm:
            return None
        with self.reading():
            row = self.conn.execute(
                "SELECT id FROM entry WHERE norm_term = :n AND deleted = 0 AND merged_into IS NULL "
                "UNION SELECT a.entry_id FROM alias a JOIN entry e ON e.id = a.entry_id "
                "WHERE a.norm_alias = :n AND a.deleted = 0 AND e.deleted = 0 "
                "AND e.merged_into IS NULL ORDER BY 1 LIMIT 1",
                {"n": norm},
            ).fetchone()
            if row is not None:
                return self._load(row[0])
            merged = self.conn.execute(
                "SELECT id FROM entry WHERE norm_term = :n AND deleted = 0 "
                "AND merged_into IS NOT NULL "
                "UNION SELECT a.entry_id FROM alias a JOIN entry e ON e.id = a.entry_id "
                "WHERE a.norm_alias = :n AND a.deleted = 0 AND e.deleted = 0 "
                "AND e.merged_into IS NOT NULL ORDER BY 1",
                {"n": norm},
            ).fetchall()
            for candidate in merged:
                target = self.resolve_entry(candidate[0])
                if target.live:
                    return target
        return None

    @guarded
    def search(self, query: str, limit: int = 10, include_deleted: bool = False) -> list[SearchHit]:
        """Full-text search (FTS5 bm25 over term, aliases and definition, weighted 10/5/1), with
        an entry whose normalized term or alias equals the query placed first (``exact``).
        Any string is safe. Without ``include_deleted`` only live entries (not deleted, not
        merged) are returned; with it, deleted and merged ones too."""
        if not isinstance(query, str):
            raise InputError(f"search query must be a string, not {type(query).__name__}")
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise InputError(f"search limit must be an integer, not {limit!r}")
        limit = min(limit, MAX_SEARCH_LIMIT)
        if limit < 1:
            return []
        live_only = "" if include_deleted else " AND e.deleted = 0 AND e.merged_into IS NULL"
        norm = normalize_term(query)
        expression = fts_query(query, prefix_last=True)
        with self.reading():
            exact: list[int] = []
            if norm:
                rows = self.conn.execute(
                    "SELECT e.id FROM entry e WHERE e.norm_term = :n" + live_only + " UNION "
                    "SELECT e.id FROM alias a JOIN entry e ON e.id = a.entry_id "
                    "WHERE a.norm_alias = :n AND a.deleted = 0" + live_only,
                    {"n": norm},
                ).fetchall()
                exact = sorted(row[0] for row in rows)
            scores: dict[int, float] = {}
            ranked: list[int] = []
            if expression is not None:
                rows = self.conn.execute(
                    f"SELECT f.id, f.rank FROM (SELECT rowid AS id, {_BM25} AS rank "
                    "FROM entry_fts WHERE entry_fts MATCH ?) f "
                    "JOIN entry e ON e.id = f.id WHERE 1" + live_only + " "
                    "ORDER BY f.rank, f.id LIMIT ?",
                    (expression, limit + len(exact)),
                ).fetchall()
                for row in rows:
                    scores[row[0]] = -float(row[1])
                    ranked.append(row[0])
            exact.sort(key=lambda entry_id: (-scores.get(entry_id, 0.0), entry_id))
            exact_set = set(exact)
            chosen = exact + [entry_id for entry_id in ranked if entry_id not in exact_set]
            chosen = chosen[:limit]
            entries = self._load_many(chosen)
        return [
            SearchHit(
                entry=entries[entry_id],
                score=scores.get(entry_id, 0.0),
                exact=entry_id in exact_set,
            )
            for entry_id in chosen
        ]

    @guarded
    def entries(
        self, *, statuses: Iterable[str] | None = None, include_deleted: bool = False
    ) -> list[Entry]:
        """Entries in id order (merged ones included, deleted ones only if asked), with their
        aliases (two queries in all)."""
        clauses: list[str] = []
        params: list[object] = []
        if statuses is not None:
            if isinstance(statuses, str):
                statuses = [statuses]
            chosen = list(statuses)
            clauses.append("status IN (SELECT value FROM json_each(?))")
            params.append(dump_json(chosen))
        if not include_deleted:
            clauses.append("deleted = 0")
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        with self.reading():
            rows = self.conn.execute(f"SELECT * FROM entry{where} ORDER BY id", params).fetchall()
            aliases = self._aliases(None)
        return [self._entry(row, aliases.get(row["id"], [])) for row in rows]

    @guarded
    def entries_touching(self, thread_id: int) -> list[Entry]:
        """Entries (as they are now, deleted ones included) with a revision made in that thread."""
        with self.reading():
            ids = [
                row[0]
                for row in self.conn.execute(
                    "SELECT DISTINCT entry_id FROM revision WHERE thread_id = ? "
                    "AND entry_id IS NOT NULL ORDER BY entry_id",
                    (thread_id,),
                )
            ]
            found = self._load_many(ids)
        return [found[entry_id] for entry_id in ids]

    @guarded
    def live_names(self) -> list[tuple[int, str]]:
        """(entry id, name) for every term and alias of every live entry, for mention matching."""
        rows = self.conn.execute(
            "SELECT id, term FROM entry WHERE deleted = 0 AND merged_into IS NULL "
            "UNION ALL SELECT a.entry_id, a.alias FROM alias a JOIN entry e ON e.id = a.entry_id "
            "WHERE a.deleted = 0 AND e.deleted = 0 AND e.merged_into IS NULL ORDER BY 1, 2"
        ).fetchall()
        return [(row[0], row[1]) for row in rows]

    @guarded
    def provenance(self, entry_id: int, *, include_superseded: bool = False) -> list[Provenance]:
        """Sources of an entry (live ones unless asked), by post id."""
        entry_id = parse_entry_id(entry_id)
        live = "" if include_superseded else " AND superseded_revision_id IS NULL"
        with self.reading():
            self._row(entry_id)
            rows = self.conn.execute(
                f"SELECT * FROM provenance WHERE entry_id = ?{live} ORDER BY post_id, id",
                (entry_id,),
            ).fetchall()
        return [_provenance(row) for row in rows]

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
            found = self._load_many(ids)
        return [found[entry_id] for entry_id in ids]

    @guarded
    def integrity_problems(self) -> list[str]:
        """Invariants the store keeps, checked from scratch (read-only): foreign keys, unique
        live names, the FTS index matching the entries. One line per problem; an empty list
        means the store is sound."""
        problems: list[str] = []
        with self.reading():
            for row in self.conn.execute("PRAGMA foreign_key_check"):
                problems.append(f"foreign key: {row[0]} row {row[1]} points at a missing {row[2]}")
            owners: dict[str, int] = {}
            for entry_id, name in self.live_names():
                norm = normalize_term(name)
                if owners.setdefault(norm, entry_id) != entry_id:
                    problems.append(
                        f"name {norm!r} belongs to live entries E{owners[norm]} and E{entry_id}"
                    )
            indexed = {
                row[0]: (row[1], row[2], row[3])
                for row in self.conn.execute(
                    "SELECT rowid, term, aliases, definition FROM entry_fts"
                )
            }
            aliases = self._aliases(None)
            for row in self.conn.execute("SELECT id, term, definition FROM entry"):
                expected = (row[1], " ; ".join(aliases.get(row[0], [])), row[2])
                if indexed.pop(row[0], None) != expected:
                    problems.append(f"full-text index out of date for entry E{row[0]}")
            problems.extend(f"full-text index row {rowid} has no entry" for rowid in indexed)
        return problems

    @guarded
    def entry_views(self, *, include_deleted: bool = False) -> list[EntryView]:
        """The current glossary with live provenance (what exports need), in id order."""
        with self.reading():
            entries = self.entries(include_deleted=include_deleted)
            rows = self.conn.execute(
                "SELECT * FROM provenance WHERE superseded_revision_id IS NULL "
                "ORDER BY entry_id, post_id, id"
            ).fetchall()
        provenance: dict[int, list[Provenance]] = {}
        for row in rows:
            provenance.setdefault(row["entry_id"], []).append(_provenance(row))
        return [
            EntryView(**entry.model_dump(), provenance=provenance.get(entry.id, []))
            for entry in entries
        ]

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
        clauses: list[str] = []
        params: list[object] = []
        if entry_id is not None:
            clauses.append("entry_id = ?")
            params.append(parse_entry_id(entry_id))
        if thread_id is not None:
            clauses.append("thread_id = ?")
            params.append(thread_id)
        if since_id is not None:
            clauses.append("id > ?")
            params.append(since_id)
        if run_id is not None:
            clauses.append("run_id = ?")
            params.append(run_id)
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        rows = self.conn.execute(f"SELECT * FROM revision{where} ORDER BY id", params).fetchall()
        return [_revision(row) for row in rows]

    @guarded
    def revision(self, revision_id: int) -> Revision:
        row = self.conn.execute("SELECT * FROM revision WHERE id = ?", (revision_id,)).fetchone()
        if row is None:
            raise StoreError(f"no revision {revision_id} in the annotator store")
        return _revision(row)

    @guarded
    def last_revision_id(self) -> int:
        """The id of the newest revision, 0 when there is none."""
        row = self.conn.execute("SELECT COALESCE(MAX(id), 0) FROM revision").fetchone()
        return int(row[0])

    # =================================================================================== as-of
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
            first_post, first_thread, last_post, last_thread = _seen(
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
                    provenance=[_provenance(row) for row in sources],
                )
            )
        return views

    @guarded
    def glossary_as_of(self, revision_id: int, *, include_deleted: bool = False) -> list[EntryView]:
        """Entries (aliases, live provenance) as they stood right after revision ``revision_id``,
        in id order: each entry's latest revision <= the boundary, and the provenance rows
        recorded by then and not superseded by then. Entries deleted by then are left out
        unless ``include_deleted``; merged ones are included (status 'merged', a redirect)."""
        boundary = _clean_boundary(revision_id)
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
        second = _clean_boundary(second_revision)
        low, high = sorted((_clean_boundary(first_revision), second))
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
        boundary = _clean_boundary(revision_id)
        entry_id = parse_entry_id(entry_id)
        with self.reading():
            self._row(entry_id)
            views = self._views_as_of(boundary, True, entry_id)
        return views[0] if views else None

    @guarded
    def glossary_as_of_thread(
        self, thread_id: int, *, include_deleted: bool = False
    ) -> list[EntryView]:
        """The glossary as of the end of a thread (its ``thread_state.end_revision_id``).
        StoreError naming the thread if it has not finished."""
        with self.reading():
            state = self.store.progress.thread_state(thread_id)
            if state is None or state.end_revision_id is None:
                name = f"{state.thread_key} ({thread_id})" if state else str(thread_id)
                status = state.status if state else "never annotated"
                raise StoreError(
                    f"thread {name} has not finished annotation ({status}); "
                    "there is no glossary as of its end"
                )
            return self._views_as_of(state.end_revision_id, include_deleted)

    # ============================================================================ rollback/undo
    def _state_as_of(self, entry_id: int, boundary: int) -> dict[str, Any] | None:
        row = self.conn.execute(
            "SELECT new_value FROM revision WHERE entry_id = ? AND id <= ? "
            "ORDER BY id DESC LIMIT 1",
            (entry_id, boundary),
        ).fetchone()
        return None if row is None else full_state(json.loads(row["new_value"]))

    def _restore_entry(
        self,
        entry_id: int,
        boundary: int,
        actor: Actor,
        action: str,
        reason: str,
        detail: dict[str, Any],
        group_id: int | None,
    ) -> int | None:
        """Bring one entry (state and live provenance) back to how it stood at ``boundary``, as a
        new revision. An entry created after the boundary becomes deleted. Returns the revision
        id, or None when the entry already is as it stood."""
        _, current = self._current_state(entry_id)
        target = self._state_as_of(entry_id, boundary)
        if target is None:
            target = dict(current)
            if not current["deleted"]:
                target["deleted"] = True
                target["delete_reason"] = f"{action}: {reason}"
        live_now = self._live_provenance(entry_id)
        live_then = self.conn.execute(
            "SELECT * FROM provenance WHERE entry_id = ? AND revision_id <= ? "
            "AND (superseded_revision_id IS NULL OR superseded_revision_id > ?) ORDER BY id",
            (entry_id, boundary, boundary),
        ).fetchall()
        then_ids = {row["id"] for row in live_then}
        now_ids = {row["id"] for row in live_now}
        to_supersede = [row["id"] for row in live_now if row["id"] not in then_ids]
        kept = {
            provenance_key(row["post_id"], row["thread_id"], row["quote"])
            for row in live_now
            if row["id"] in then_ids
        }
        to_copy: list[tuple[int, int, str, int | None]] = []
        for row in live_then:
            key = provenance_key(row["post_id"], row["thread_id"], row["quote"])
            if row["id"] not in now_ids and key not in kept:
                kept.add(key)
                to_copy.append((row["post_id"], row["thread_id"], row["quote"], row["id"]))
        if target == current and not to_supersede and not to_copy:
            return None
        revision_id = self._change(
            entry_id,
            current,
            target,
            actor,
            action,
            reason,
            {
                **detail,
                "provenance_superseded": len(to_supersede),
                "provenance_added": len(to_copy),
            },
            group_id,
        )
        if group_id is None:
            self.conn.execute("UPDATE revision SET group_id = id WHERE id = ?", (revision_id,))
        self._supersede(to_supersede, revision_id)
        self._insert_provenance(entry_id, to_copy, revision_id)
        self._refresh_seen([entry_id])
        return revision_id

    def _rollback(self, actor: Actor, boundary: int, reason: str, detail: dict[str, Any]) -> int:
        changed_ids = [
            row[0]
            for row in self.conn.execute(
                "SELECT DISTINCT entry_id FROM revision WHERE id > ? AND entry_id IS NOT NULL "
                "ORDER BY entry_id",
                (boundary,),
            )
        ]
        group_id: int | None = None
        count = 0
        for entry_id in changed_ids:
            revision_id = self._restore_entry(
                entry_id, boundary, actor, "rollback", reason, detail, group_id
            )
            if revision_id is not None:
                group_id = group_id or revision_id
                count += 1
        return count

    @guarded
    def rollback_to_revision(self, actor: Actor, revision_id: int, reason: str) -> int:
        """Bring the glossary back to how it stood right after ``revision_id``: every entry
        changed since gets a 'rollback' revision restoring its state then (entries created since
        become deleted with reason "rollback: <reason>"); provenance recorded since is
        superseded, provenance superseded since is recorded again (copies). Nothing is erased.
        Returns the number of entries changed."""
        _check_actor(actor)
        boundary = _clean_boundary(revision_id)
        why = _clean_reason(reason, required=True, what="reason for the rollback")
        assert why is not None
        with self.transaction():
            return self._rollback(actor, boundary, why, {"boundary": boundary})

    @guarded
    def rollback_threads_from(self, actor: Actor, thread_id: int, reason: str) -> int:
        """Undo everything recorded since the end of the thread before ``thread_id`` in story
        order (revision 0 if it is the first), and mark that thread and every later one
        'pending' (cursor, end revision and checkpoint cleared; history stays in revisions).
        StoreError if the thread has no state or the thread before it has not finished.
        Returns the number of entries changed."""
        _check_actor(actor)
        why = _clean_reason(reason, required=True, what="reason for the rollback")
        assert why is not None
        with self.transaction():
            state = self.store.progress.thread_state(thread_id)
            if state is None:
                raise StoreError(f"thread {thread_id} has no recorded state; nothing to roll back")
            previous = self.conn.execute(
                "SELECT * FROM thread_state WHERE position < ? "
                "ORDER BY position DESC, thread_id DESC LIMIT 1",
                (state.position,),
            ).fetchone()
            if previous is None:
                boundary = 0
            elif previous["end_revision_id"] is None:
                raise StoreError(
                    f"thread {previous['thread_key']} ({previous['thread_id']}), before "
                    f"{state.thread_key}, has not finished ({previous['status']}); "
                    f"roll back from {previous['thread_key']} instead"
                )
            else:
                boundary = int(previous["end_revision_id"])
            count = self._rollback(
                actor, boundary, why, {"boundary": boundary, "from_thread": thread_id}
            )
            marker = dump_json(
                {"boundary": boundary, "reason": why, "revision": self.last_revision_id()}
            )
            self.conn.execute(
                "UPDATE thread_state SET status = 'pending', scenes_done = 0, "
                "cursor_scene_id = NULL, end_revision_id = NULL, checkpoint_id = NULL, "
                "updated_at = ?, extra = json_set(extra, '$.rolled_back', json(?)) "
                "WHERE position >= ?",
                (now_iso(), marker, state.position),
            )
            return count

    @guarded
    def undo_change(self, actor: Actor, revision_id: int, reason: str) -> UndoneChange:
        """Undo one change (a revision with its group: both sides of a merge, a whole rollback)
        with compensating 'undo' revisions that reverse what it did and nothing else, however
        the entries changed since (`glossary.undo`). Nothing is erased. InputError, with one
        line saying what to do instead, for an unknown revision, a change already undone, one
        whose every part later revisions replaced, or a name another live entry took since."""
        from terrarium_dagster.glossary.undo import undo_change

        _check_actor(actor)
        why = _clean_reason(reason, required=True, what="reason for the undo")
        assert why is not None
        with self.transaction():
            return undo_change(self, actor, revision_id, why)

    @guarded
    def undo_revision(self, actor: Actor, revision_id: int, reason: str) -> list[Entry]:
        """`undo_change`, returning the entries it touched as they are now (in id order)."""
        done = self.undo_change(actor, revision_id, reason)
        with self.reading():
            found = self._load_many(done.entry_ids)
        return [found[entry_id] for entry_id in done.entry_ids]
