"""Undoing one change of the glossary with a compensating revision (`Rollback.undo_change`).

A change is a revision with its group (both sides of a merge, every entry of a rollback). Undoing
it writes, for each entry it touched, one 'undo' revision that reverses what that change did and
nothing else — a three-way revert, so it works however the entry changed since:

- a field the change set (term, definition, status with ``merged_into``, ``deleted`` with its
  reason) goes back to its value before the change if it still holds the value the change gave
  it; a field a later revision has changed since keeps the later value (listed in ``kept``,
  naming that revision);
- aliases and tags the change added are removed, those it removed come back;
- sources the change recorded are superseded, sources it superseded are recorded again (copies);
- an entry the change created is soft-deleted;
- for a MERGE, sources recorded on the target *after* the merge whose quote names the merged
  entry (and none of the target's own names) move back to the merged entry with it.

Nothing is erased. Refused with one line that says what to do instead (`InputError`): an unknown
revision, a change already undone, a change whose every part a later revision has replaced, a
name taken since by another live entry.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from terrarium_dagster.errors import DuplicateTermError, InputError
from terrarium_dagster.store.base import dump_json
from terrarium_dagster.store.models import Revision, UndoneChange
from terrarium_dagster.store.normalize import mentions, normalize_term, normalize_text
from terrarium_dagster.store.provenance import ProvenanceRows, provenance_key
from terrarium_dagster.store.rows import EntryRows, full_state

if TYPE_CHECKING:
    import sqlite3

    from terrarium_dagster.store.history import History
    from terrarium_dagster.store.inputs import Actor

# Fields that change together (an entry is 'merged' exactly when it has a merge target).
_UNITS: tuple[tuple[str, ...], ...] = (
    ("term",),
    ("definition",),
    ("status", "merged_into"),
    ("deleted", "delete_reason"),
)
_LISTS: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("aliases", normalize_term),
    ("tags", str.casefold),
)
_MAX_DEPTH = 64
_HOW = "`terrarium lineage TERM` lists an entry's revisions"

ProvenanceCopy = tuple[int, int, str, int | None]


@dataclass
class _Plan:
    """What the undo writes for one entry."""

    entry_id: int
    current: dict[str, Any]
    target: dict[str, Any]
    supersede: list[int] = field(default_factory=list)
    copy: list[ProvenanceCopy] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    later: list[int] = field(default_factory=list)

    @property
    def changes(self) -> bool:
        return self.target != self.current or bool(self.supersede or self.copy)


def _ids(values: Collection[int]) -> str:
    return dump_json(sorted(values))


def _group(conn: sqlite3.Connection, history: History, revision: Revision) -> list[Revision]:
    if revision.group_id is None:
        return [revision]
    rows = conn.execute(
        "SELECT id FROM revision WHERE group_id = ? ORDER BY id", (revision.group_id,)
    ).fetchall()
    return [history.revision(row[0]) for row in rows] or [revision]


ROLLBACK_ACTION = "rollback"  # a revision that puts an entry back as it stood at its boundary


def rolled_back_by(conn: sqlite3.Connection, revision_ids: Collection[int]) -> int | None:
    """The first 'rollback' revision after ``revision_ids`` that put the glossary back to a
    point before them (`store/rollback.py`: `run --rewind`), or None."""
    if not revision_ids:
        return None
    row = conn.execute(
        "SELECT MIN(id) FROM revision WHERE action = ? AND id > ? "
        "AND json_extract(detail, '$.boundary') < ?",
        (ROLLBACK_ACTION, max(revision_ids), min(revision_ids)),
    ).fetchone()
    return None if row is None or row[0] is None else int(row[0])


def undone_by(
    conn: sqlite3.Connection, revision_ids: Collection[int], depth: int = 0
) -> int | None:
    """The 'undo' revision that undid any of ``revision_ids`` and was not itself undone since."""
    if not revision_ids or depth > _MAX_DEPTH:
        return None
    rows = conn.execute(
        "SELECT DISTINCT r.id, r.group_id FROM revision r, json_each(r.detail, '$.undone') u "
        "WHERE r.action = 'undo' AND r.detail IS NOT NULL "
        "AND u.value IN (SELECT value FROM json_each(?)) ORDER BY r.id",
        (_ids(revision_ids),),
    ).fetchall()
    for row in rows:
        group = [row["id"]]
        if row["group_id"] is not None:
            group = [
                other[0]
                for other in conn.execute(
                    "SELECT id FROM revision WHERE group_id = ?", (row["group_id"],)
                )
            ]
        if undone_by(conn, group, depth + 1) is None:
            return int(row["id"])
    return None


def undone_revisions(conn: sqlite3.Connection) -> dict[int, int]:
    """Every revision undone by an 'undo' revision still in force: revision id -> the undo's id
    (one pass over the undo revisions, for listings such as `lineage`)."""
    members: dict[int, list[int]] = {}
    group_of: dict[int, int] = {}
    undoers: dict[int, list[int]] = {}
    for row in conn.execute(
        "SELECT id, group_id, detail FROM revision WHERE action = 'undo' AND detail IS NOT NULL "
        "ORDER BY id"
    ):
        undo_id = int(row["id"])
        group_of[undo_id] = int(row["group_id"] or undo_id)
        members.setdefault(group_of[undo_id], []).append(undo_id)
        for undone in json.loads(row["detail"]).get("undone") or []:
            undoers.setdefault(int(undone), []).append(undo_id)
    in_force: dict[int, bool] = {}

    def live(undo_id: int) -> bool:
        # An undo is in force unless an undo in force undid its group (undos only ever undo
        # earlier revisions, so this ends).
        if undo_id not in in_force:
            group = members[group_of[undo_id]]
            in_force[undo_id] = not any(
                live(other) for member in group for other in undoers.get(member, [])
            )
        return in_force[undo_id]

    found: dict[int, int] = {}
    for revision_id, undos in undoers.items():
        for undo_id in undos:
            if live(undo_id):
                found[revision_id] = undo_id
                break
    return found


def _last_change(
    conn: sqlite3.Connection, entry_id: int, after: int, fields: Sequence[str]
) -> int | None:
    """The latest revision of the entry after ``after`` that changed one of ``fields``."""
    rows = conn.execute(
        "SELECT id, old_value, new_value FROM revision WHERE entry_id = ? AND id > ? "
        "ORDER BY id DESC",
        (entry_id, after),
    ).fetchall()
    for row in rows:
        old = json.loads(row["old_value"]) if row["old_value"] else {}
        new = json.loads(row["new_value"]) if row["new_value"] else {}
        if any(old.get(name) != new.get(name) for name in fields):
            return int(row["id"])
    return None


def _plan_entry(
    sources: ProvenanceRows, entry_id: int, revisions: Sequence[Revision], why: str
) -> _Plan:
    conn = sources.conn
    _, current = sources.rows.current_state(entry_id)
    plan = _Plan(entry_id, current, dict(current))
    first, last = revisions[0], revisions[-1]
    target = plan.target
    if first.old_value is None:  # the change created it: undoing it deletes it (softly)
        if not current["deleted"]:
            target["deleted"], target["delete_reason"] = True, f"undo: {why}"
        else:
            later = _last_change(conn, entry_id, last.id, ("deleted",))
            plan.kept.append(f"E{entry_id} is deleted already (revision {later})")
            plan.later.extend([later] if later else [])
    else:
        old, new = full_state(first.old_value), full_state(last.new_value or {})
        for unit in _UNITS:
            before = tuple(old[name] for name in unit)
            after = tuple(new[name] for name in unit)
            if before == after:
                continue
            now = tuple(current[name] for name in unit)
            if now == after:
                target.update(zip(unit, before, strict=True))
                continue
            later = _last_change(conn, entry_id, last.id, unit)
            plan.later.extend([later] if later else [])
            state = "is as before already" if now == before else "was changed since"
            plan.kept.append(f"E{entry_id} {unit[0]} {state} (revision {later})")
        for name, key in _LISTS:
            before_keys = {key(item) for item in old[name]}
            after_keys = {key(item) for item in new[name]}
            added = after_keys - before_keys
            removed = [item for item in old[name] if key(item) not in after_keys]
            if not added and not removed:
                continue
            result = [item for item in target[name] if key(item) not in added]
            have = {key(item) for item in result}
            for item in removed:
                if key(item) not in have:
                    have.add(key(item))
                    result.append(item)
            if result == current[name]:
                later = _last_change(conn, entry_id, last.id, (name,))
                plan.later.extend([later] if later else [])
                plan.kept.append(f"E{entry_id} {name} were changed since (revision {later})")
            target[name] = result
        term = normalize_term(target["term"])
        target["aliases"] = [a for a in target["aliases"] if normalize_term(a) != term]
    # Sources: what the change recorded goes, what it superseded comes back.
    mine = {revision.id for revision in revisions}
    ids = _ids(mine)
    live = sources.live(entry_id)
    plan.supersede = [row["id"] for row in live if row["revision_id"] in mine]
    keys = {
        provenance_key(row["post_id"], row["thread_id"], row["quote"])
        for row in live
        if row["id"] not in plan.supersede
    }
    for row in conn.execute(
        "SELECT * FROM provenance WHERE entry_id = ? "
        "AND superseded_revision_id IN (SELECT value FROM json_each(?)) ORDER BY id",
        (entry_id, ids),
    ).fetchall():
        item = provenance_key(row["post_id"], row["thread_id"], row["quote"])
        if item not in keys:
            keys.add(item)
            plan.copy.append((row["post_id"], row["thread_id"], row["quote"], row["id"]))
    return plan


def _names(state: dict[str, Any] | None) -> list[str]:
    if not state:
        return []
    return [str(state.get("term") or ""), *[str(alias) for alias in state.get("aliases") or []]]


def _move_merged_sources(
    sources: ProvenanceRows, group: Sequence[Revision], plans: dict[int, _Plan]
) -> None:
    """Sources the merge target gained after the merge for the merged entry's names go back."""
    for revision in group:
        source_id = (revision.detail or {}).get("source")
        target_id = revision.entry_id
        if revision.action != "merge" or source_id not in plans or target_id not in plans:
            continue
        source_revision = next((r for r in group if r.entry_id == source_id), None)
        if source_revision is None:
            continue
        source_names = [n for n in _names(source_revision.old_value) if n]
        own_names = [n for n in _names(revision.old_value) if n]
        source_plan, target_plan = plans[source_id], plans[target_id]
        source_keys = {
            provenance_key(row["post_id"], row["thread_id"], row["quote"])
            for row in sources.live(source_id)
        } | {provenance_key(post, thread, quote) for post, thread, quote, _ in source_plan.copy}
        for row in sources.live(target_id):
            if row["revision_id"] <= revision.id or row["id"] in target_plan.supersede:
                continue
            folded = normalize_text(row["quote"])
            if not folded or not any(mentions(folded, name) for name in source_names):
                continue
            if any(mentions(folded, name) for name in own_names):
                continue
            target_plan.supersede.append(row["id"])
            item = provenance_key(row["post_id"], row["thread_id"], row["quote"])
            if item not in source_keys:
                source_keys.add(item)
                source_plan.copy.append((row["post_id"], row["thread_id"], row["quote"], row["id"]))


def _name_taken(history: History, error: DuplicateTermError, revision_id: int) -> InputError:
    """The one line for a name another live entry took since: which revision to undo first."""
    holder = getattr(error, "existing_entry_id", None)
    message = str(error).split(";")[0]
    if holder is None:
        return InputError(f"cannot undo revision {revision_id}: {message}")
    taken_by = None
    for revision in reversed(history.revisions(holder)):
        before = {normalize_term(n) for n in _names(revision.old_value)}
        after = {normalize_term(n) for n in _names(revision.new_value)}
        if after - before:
            taken_by = revision.id
            break
    advice = (
        f"undo revision {taken_by} first (`terrarium undo --revision {taken_by}`)"
        if taken_by is not None
        else f"E{holder} must give that name up first"
    )
    return InputError(f"cannot undo revision {revision_id}: {message}; {advice}, then this one")


def check_revision(
    conn: sqlite3.Connection, history: History, revision_id: int
) -> tuple[Revision, list[Revision]]:
    """The refusals of an undo of ``revision_id`` that need no write (one line each): not a
    positive id, no such revision, already undone, rolled back since, a change of no entry.
    Returns the revision and its group. `undo_change` asks it first, and a command asks it
    before it takes the writer lease, so that a refused undo writes nothing at all."""
    if isinstance(revision_id, bool) or not isinstance(revision_id, int) or revision_id < 1:
        raise InputError(f"a revision id is a positive integer, not {revision_id!r}")
    if conn.execute("SELECT 1 FROM revision WHERE id = ?", (revision_id,)).fetchone() is None:
        raise InputError(f"no revision {revision_id} in the annotator store ({_HOW})")
    undone = history.revision(revision_id)
    group = _group(conn, history, undone)
    group_ids = [revision.id for revision in group]
    earlier = undone_by(conn, group_ids)
    if earlier is not None:
        raise InputError(
            f"revision {revision_id} ({undone.action}) was already undone by revision {earlier}; "
            f"undo revision {earlier} to bring the change back"
        )
    rolled = rolled_back_by(conn, group_ids)
    if rolled is not None:
        raise InputError(
            f"revision {revision_id} ({undone.action}) was rolled back by revision {rolled} (a "
            "thread annotated again with --rewind, or a rollback): nothing of it is left to undo"
        )
    if all(revision.entry_id is None for revision in group):
        raise InputError(f"revision {revision_id} changed no entry; there is nothing to undo")
    return undone, group


def undo_change(
    rows: EntryRows,
    sources: ProvenanceRows,
    history: History,
    actor: Actor,
    revision_id: int,
    why: str,
) -> UndoneChange:
    """Undo revision ``revision_id`` and its group (see the module docstring). Runs inside the
    caller's transaction."""
    conn = rows.conn
    undone, group = check_revision(conn, history, revision_id)
    group_ids = [revision.id for revision in group]
    by_entry: dict[int, list[Revision]] = {}
    for revision in group:
        if revision.entry_id is not None:
            by_entry.setdefault(revision.entry_id, []).append(revision)
    plans = {
        entry_id: _plan_entry(sources, entry_id, revisions, why)
        for entry_id, revisions in sorted(by_entry.items())
    }
    _move_merged_sources(sources, group, plans)
    kept = [line for plan in plans.values() for line in plan.kept]
    if not any(plan.changes for plan in plans.values()):
        later = sorted({rid for plan in plans.values() for rid in plan.later})
        advice = (
            f"undo revision {later[-1]} first (`terrarium undo --revision {later[-1]}`) to go "
            "back further"
            if later
            else "later changes have replaced it"
        )
        what = "; ".join(kept) or "its changes are gone"
        raise InputError(
            f"nothing left to undo of revision {revision_id} ({undone.action}): {what}; {advice}"
        )
    written: list[int] = []
    group_id: int | None = None
    for entry_id, plan in plans.items():
        if not plan.changes:
            continue
        detail: dict[str, Any] = {
            "undone": group_ids,
            "provenance_superseded": len(plan.supersede),
            "provenance_added": len(plan.copy),
        }
        if plan.kept:
            detail["kept"] = plan.kept
        new_revision = rows.change(
            entry_id, plan.current, plan.target, actor, "undo", why, detail, group_id
        )
        if group_id is None:
            group_id = new_revision
            conn.execute("UPDATE revision SET group_id = id WHERE id = ?", (new_revision,))
        sources.supersede(plan.supersede, new_revision)
        sources.insert(entry_id, plan.copy, new_revision)
        written.append(new_revision)
    sources.refresh_seen(plans)
    for entry_id, plan in plans.items():
        state = plan.target
        if state["deleted"] or state["merged_into"] is not None:
            continue
        names = [(name, normalize_term(name)) for name in _names(state) if name]
        try:
            rows.check_free(names, {entry_id})
        except DuplicateTermError as exc:
            raise _name_taken(history, exc, revision_id) from None
    return UndoneChange(
        revision_id=revision_id,
        action=undone.action,
        undone=group_ids,
        entry_ids=sorted(plans),
        revision_ids=written,
        kept=kept,
    )
