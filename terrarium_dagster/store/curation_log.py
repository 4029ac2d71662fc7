"""The curation log: the curator's decisions and their undoing."""

from __future__ import annotations

from typing import Any

from terrarium_dagster.errors import InputError, StoreError
from terrarium_dagster.store.base import (
    Aggregate,
    guarded,
    now_iso,
)


class CurationLog(Aggregate):
    """The store's curation aggregate: `store.curation`."""

    # ----------------------------------------------------------------------- curator decisions
    @guarded
    def log_curator_decision(
        self,
        run_id: str | None,
        thread_id: int | None,
        entry_id: int | None,
        decision: str,
        target_entry_id: int | None,
        reasoning: str | None,
        revision_id: int | None,
    ) -> int:
        if not isinstance(decision, str) or not decision.strip():
            raise InputError("curator decision must be a non-empty string")
        row = {
            "run_id": run_id,
            "thread_id": thread_id,
            "entry_id": entry_id,
            "decision": decision,
            "target_entry_id": target_entry_id,
            "reasoning": reasoning,
            "revision_id": revision_id,
            "created_at": now_iso(),
        }
        with self.transaction():
            return self.insert("curator_decision", row)

    @guarded
    def mark_decision_undone(self, decision_id: int, undone_revision_id: int | None) -> None:
        """Record that a curator decision was undone by ``undone_revision_id`` (None: in force
        again, its undo undone)."""
        with self.transaction():
            cursor = self.conn.execute(
                "UPDATE curator_decision SET undone_revision_id = ? WHERE id = ?",
                (undone_revision_id, decision_id),
            )
            if cursor.rowcount == 0:
                raise StoreError(f"no curator decision {decision_id} in the annotator store")

    @guarded
    def curator_decisions(
        self, *, thread_id: int | None = None, entry_id: int | None = None
    ) -> list[dict[str, Any]]:
        rows = self.stored_rows("curator_decision", thread_id=thread_id, entry_id=entry_id)
        return [dict(row) for row in rows]
