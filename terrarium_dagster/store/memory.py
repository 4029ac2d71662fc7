"""The agent's memory in the store (`store.memory`): its saved context state, the compaction
events, snapshots and summon logs. "Context" in this project is the agent's context
(`context.compaction.ContextManager`); this part is where it is kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from terrarium_dagster.errors import InputError, StoreError
from terrarium_dagster.store.base import (
    Aggregate,
    dump_json,
    guarded,
    json_payload,
    now_iso,
)
from terrarium_dagster.store.models import (
    SNAPSHOT_KINDS,
    Snapshot,
    SnapshotHeader,
)
from terrarium_dagster.store.records import (
    _filters,
    _optional_int,
    _snapshot,
    decoded,
)


class AgentMemory(Aggregate):
    """The agent's memory in the store: `store.memory`."""

    # ------------------------------------------------------------------------------ compactions
    @guarded
    def log_compaction(
        self,
        run_id: str | None,
        thread_id: int | None,
        scene_id: str | None,
        tier: str,
        tokens_before: int,
        tokens_after: int,
        entry_ids: Sequence[int],
        summary: str | None,
    ) -> int:
        if isinstance(entry_ids, str) or not all(
            isinstance(entry_id, int) and not isinstance(entry_id, bool) for entry_id in entry_ids
        ):
            raise InputError("compaction entry_ids must be a list of integers")
        with self.transaction():
            return self.insert(
                "compaction",
                {
                    "run_id": run_id,
                    "thread_id": thread_id,
                    "scene_id": scene_id,
                    "tier": tier,
                    "tokens_before": int(tokens_before),
                    "tokens_after": int(tokens_after),
                    "entry_ids": dump_json(list(entry_ids)),
                    "summary": summary,
                    "created_at": now_iso(),
                },
            )

    @guarded
    def compactions(
        self, *, thread_id: int | None = None, run_id: str | None = None
    ) -> list[dict[str, Any]]:
        """Compaction events, oldest first; ``entry_ids`` decoded to a list."""
        return decoded(
            self.stored_rows("compaction", thread_id=thread_id, run_id=run_id), "entry_ids"
        )

    # ---------------------------------------------------------------------------- context state
    @guarded
    def save_context_state(self, state_json: str | dict[str, Any]) -> None:
        """Replace the live context state (one row). Call it inside the scene transaction."""
        payload = json_payload(state_json, "context state")
        with self.transaction():
            self.conn.execute(
                "INSERT INTO context_state (id, state, updated_at) VALUES (1, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET state = excluded.state, "
                "updated_at = excluded.updated_at",
                (payload, now_iso()),
            )

    @guarded
    def load_context_state(self) -> str | None:
        row = self.conn.execute("SELECT state FROM context_state WHERE id = 1").fetchone()
        return None if row is None else row["state"]

    # ------------------------------------------------------------------- snapshots
    @guarded
    def save_snapshot(
        self,
        *,
        kind: str,
        thread_id: int | None,
        scene_id: str | None,
        run_id: str | None,
        state_json: str | dict[str, Any],
        revision_id: int | None,
    ) -> int:
        """Save a context snapshot; returns the snapshot id revisions and summons refer to."""
        if kind not in SNAPSHOT_KINDS:
            raise InputError(f"snapshot kind {kind!r} is not one of {', '.join(SNAPSHOT_KINDS)}")
        payload = json_payload(state_json, "snapshot state")
        _optional_int(revision_id, "snapshot revision_id")
        with self.transaction():
            cursor = self.conn.execute(
                "INSERT INTO snapshot (kind, thread_id, scene_id, run_id, state, revision_id, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (kind, thread_id, scene_id, run_id, payload, revision_id, now_iso()),
            )
            return int(cursor.lastrowid or 0)

    @guarded
    def snapshot(self, snapshot_id: int) -> Snapshot:
        return _snapshot(self.stored("snapshot", snapshot_id))

    @guarded
    def snapshots(self, thread_id: int | None = None, *, kind: str | None = None) -> list[Snapshot]:
        rows = self.stored_rows("snapshot", thread_id=thread_id, kind=kind)
        return [_snapshot(row) for row in rows]

    @guarded
    def latest_snapshot(
        self, *, thread_id: int | None = None, kind: str | None = None
    ) -> Snapshot | None:
        where, params = _filters(thread_id=thread_id, kind=kind)
        row = self.conn.execute(
            f"SELECT * FROM snapshot{where} ORDER BY id DESC LIMIT 1", params
        ).fetchone()
        return None if row is None else _snapshot(row)

    # ---------------------------------------------------------------------------------- summons
    @guarded
    def log_summon(
        self, snapshot_id: int, run_id: str | None, exchange_json: str | dict[str, Any] | list[Any]
    ) -> int:
        payload = json_payload(exchange_json, "summon exchange")
        with self.transaction():
            known = self.conn.execute("SELECT 1 FROM snapshot WHERE id = ?", (snapshot_id,))
            if known.fetchone() is None:
                raise StoreError(
                    f"no snapshot {snapshot_id} in the annotator store; cannot log a summon"
                )
            return self.insert(
                "summon_log",
                {
                    "snapshot_id": snapshot_id,
                    "run_id": run_id,
                    "exchange": payload,
                    "created_at": now_iso(),
                },
            )

    @guarded
    def summons(self, snapshot_id: int | None = None) -> list[dict[str, Any]]:
        """Logged summon exchanges, oldest first; ``exchange`` decoded."""
        return decoded(self.stored_rows("summon_log", snapshot_id=snapshot_id), "exchange")

    @guarded
    def snapshot_headers(self, *, thread_id: int | None = None) -> list[SnapshotHeader]:
        """Every snapshot's metadata (no payload read), oldest first."""
        where = "" if thread_id is None else " WHERE thread_id = ?"
        params: tuple[object, ...] = () if thread_id is None else (thread_id,)
        with self.reading() as conn:
            rows = conn.execute(
                "SELECT id, kind, thread_id, scene_id, run_id, revision_id, created_at, "
                f"length(state) AS size FROM snapshot{where} ORDER BY id",
                params,
            ).fetchall()
        return [SnapshotHeader(**dict(row)) for row in rows]

    @guarded
    def snapshot_uses(self) -> tuple[dict[int, int], dict[int, int]]:
        """Per snapshot id: how many revisions were made with it in force, how often it was
        summoned."""
        with self.reading() as conn:
            blamed = conn.execute(
                "SELECT snapshot_id, COUNT(*) FROM revision WHERE snapshot_id IS NOT NULL "
                "GROUP BY snapshot_id"
            ).fetchall()
            summoned = conn.execute(
                "SELECT snapshot_id, COUNT(*) FROM summon_log GROUP BY snapshot_id"
            ).fetchall()
        return (
            {int(row[0]): int(row[1]) for row in blamed},
            {int(row[0]): int(row[1]) for row in summoned},
        )
