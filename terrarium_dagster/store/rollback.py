"""Going back: the glossary rolled back to a revision or to the end of a thread, and one change
undone (`undo`). Each writes new revisions (nothing is erased): a rollback restores every entry
changed since the boundary; an undo reverses one change and nothing else.
"""

from __future__ import annotations

import json
from typing import Any

from terrarium_dagster.errors import StoreError
from terrarium_dagster.store.base import Aggregate, StoreConnection, dump_json, guarded, now_iso
from terrarium_dagster.store.history import History
from terrarium_dagster.store.inputs import Actor, check_actor, clean_boundary, clean_reason
from terrarium_dagster.store.models import Entry, UndoneChange
from terrarium_dagster.store.progress import ThreadProgress
from terrarium_dagster.store.provenance import ProvenanceRows, provenance_key
from terrarium_dagster.store.rows import EntryRows, full_state
from terrarium_dagster.store.undo import ROLLBACK_ACTION, undo_change


class Rollback(Aggregate):
    """Rollback and undo (`store.rollback`)."""

    def __init__(self, store: StoreConnection) -> None:
        super().__init__(store)
        self.rows = EntryRows(store)
        self.sources = ProvenanceRows(store)
        self.history = History(store)
        self.progress = ThreadProgress(store)

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
        _, current = self.rows.current_state(entry_id)
        target = self._state_as_of(entry_id, boundary)
        if target is None:
            target = dict(current)
            if not current["deleted"]:
                target["deleted"] = True
                target["delete_reason"] = f"{action}: {reason}"
        live_now = self.sources.live(entry_id)
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
        revision_id = self.rows.change(
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
        self.sources.supersede(to_supersede, revision_id)
        self.sources.insert(entry_id, to_copy, revision_id)
        self.sources.refresh_seen([entry_id])
        return revision_id

    def _rollback(self, actor: Actor, boundary: int, reason: str, detail: dict[str, Any]) -> int:
        changed_ids = self.rows.revised("id > ?", (boundary,))
        group_id: int | None = None
        count = 0
        for entry_id in changed_ids:
            revision_id = self._restore_entry(
                entry_id, boundary, actor, ROLLBACK_ACTION, reason, detail, group_id
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
        check_actor(actor)
        boundary = clean_boundary(revision_id)
        why = clean_reason(reason, required=True, what="reason for the rollback")
        assert why is not None
        with self.transaction():
            return self._rollback(actor, boundary, why, {"boundary": boundary})

    @guarded
    def rollback_threads_from(self, actor: Actor, thread_id: int, reason: str) -> int:
        """Undo everything recorded since the end of the thread before ``thread_id`` in story
        order (revision 0 if it is the first), and mark that thread and every later one
        'pending' (cursor, end revision and snapshot cleared; history stays in revisions).
        StoreError if the thread has no state or the thread before it has not finished.
        Returns the number of entries changed."""
        check_actor(actor)
        why = clean_reason(reason, required=True, what="reason for the rollback")
        assert why is not None
        with self.transaction():
            state = self.progress.thread_state(thread_id)
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
            (last_call,) = self.conn.execute(
                "SELECT COALESCE(MAX(id), 0) FROM agent_call"
            ).fetchone()
            marker = dump_json(  # what came before it is the undone attempt's (thread reports)
                {
                    "boundary": boundary,
                    "reason": why,
                    "revision": self.history.last_revision_id(),
                    "call": int(last_call),
                }
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
        check_actor(actor)
        why = clean_reason(reason, required=True, what="reason for the undo")
        assert why is not None
        with self.transaction():
            return undo_change(self.rows, self.sources, self.history, actor, revision_id, why)

    @guarded
    def undo_revision(self, actor: Actor, revision_id: int, reason: str) -> list[Entry]:
        """`undo_change`, returning the entries it touched as they are now (in id order)."""
        done = self.undo_change(actor, revision_id, reason)
        with self.reading():
            found = self.rows.load_many(done.entry_ids)
        return [found[entry_id] for entry_id in done.entry_ids]
