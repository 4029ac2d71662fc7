"""Run and thread state, agent-call accounting, compactions, context state, checkpoints, summons,
curator decisions and meta: the store's bookkeeping beside the glossary itself.

Every write runs in `transaction()`, so inside a scene transaction it joins the scene's commit.
"""

from __future__ import annotations

import enum
import json
import os
import socket
import sqlite3
from collections.abc import Sequence
from typing import Any

from terrarium_dagster.errors import InputError, StoreError, WriterLeaseError
from terrarium_dagster.glossary.base import (
    StoreConnection,
    dump_json,
    guarded,
    json_payload,
    now_iso,
)
from terrarium_dagster.glossary.models import (
    CHECKPOINT_KINDS,
    THREAD_STATUSES,
    AgentCallRecord,
    CallTotals,
    Checkpoint,
    RunRecord,
    ThreadState,
    WriterLease,
)


class _Unset(enum.Enum):
    UNSET = 0


UNSET = _Unset.UNSET
"""Default of `set_thread_state` arguments: leave the column as it is (None clears it)."""


def _optional_int(value: object, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{what} must be an integer or None, not {value!r}")
    return value


def _thread_state(row: sqlite3.Row) -> ThreadState:
    return ThreadState(
        thread_id=row["thread_id"],
        thread_key=row["thread_key"],
        position=row["position"],
        status=row["status"],
        scenes_total=row["scenes_total"],
        scenes_done=row["scenes_done"],
        cursor_scene_id=row["cursor_scene_id"],
        run_id=row["run_id"],
        end_revision_id=row["end_revision_id"],
        checkpoint_id=row["checkpoint_id"],
        updated_at=row["updated_at"],
        extra=json.loads(row["extra"]),
    )


def _checkpoint(row: sqlite3.Row) -> Checkpoint:
    return Checkpoint(
        id=row["id"],
        kind=row["kind"],
        thread_id=row["thread_id"],
        scene_id=row["scene_id"],
        run_id=row["run_id"],
        state_json=row["state"],
        revision_id=row["revision_id"],
        created_at=row["created_at"],
    )


def _agent_call(row: sqlite3.Row) -> AgentCallRecord:
    return AgentCallRecord(**dict(row))


def _filters(**columns: object) -> tuple[str, list[object]]:
    """A WHERE clause for the given non-None column values."""
    clauses = [f"{name} = ?" for name, value in columns.items() if value is not None]
    params = [value for value in columns.values() if value is not None]
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


class StoreRecords(StoreConnection):
    """Bookkeeping tables of the annotator store."""

    # ----------------------------------------------------------------------------------- meta
    @guarded
    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row["value"]

    @guarded
    def set_meta(self, key: str, value: str | None) -> None:
        with self.transaction():
            self.conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    # ------------------------------------------------------------------------- writer lease
    @guarded
    def acquire_writer_lease(self, run_id: str) -> WriterLease | None:
        """Take the store's one-writer lease for `run_id`, at once or not at all.

        A live holder refuses with `WriterLeaseError` naming it (run, process, host, since). A
        holder that died (its pid gone on this host, or no heartbeat for `LEASE_STALE_S` from
        another host) is taken over; its run, if still marked running, is marked `died`. Returns
        the lease that was taken over, if any.
        """
        me = WriterLease(
            run_id=run_id,
            pid=os.getpid(),
            host=socket.gethostname(),
            since=now_iso(),
            heartbeat=now_iso(),
        )
        with self.transaction():  # BEGIN IMMEDIATE: two openers cannot both see it free
            previous = self._lease_row()
            if previous is not None and previous.run_id != run_id and previous.alive():
                raise WriterLeaseError(
                    f"annotator store {self.where} is being written by run {previous.run_id} "
                    f"(pid {previous.pid} on {previous.host}, since {previous.since}); one "
                    "writer at a time: wait for it to finish or stop it"
                )
            if previous is not None and previous.run_id != run_id:
                self.conn.execute(
                    "UPDATE run SET status = 'died', finished_at = ?, error = ? "
                    "WHERE id = ? AND status = 'running'",
                    (
                        now_iso(),
                        f"its process ({previous.pid} on {previous.host}) died",
                        previous.run_id,
                    ),
                )
            self.conn.execute(
                "INSERT INTO writer_lease (id, run_id, pid, host, since, heartbeat) "
                "VALUES (1, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
                "run_id = excluded.run_id, pid = excluded.pid, host = excluded.host, "
                "since = excluded.since, heartbeat = excluded.heartbeat",
                (me.run_id, me.pid, me.host, me.since, me.heartbeat),
            )
        return previous if previous is not None and previous.run_id != run_id else None

    @guarded
    def refresh_writer_lease(self, run_id: str) -> None:
        """The holder's heartbeat (what another host judges liveness by)."""
        with self.transaction():
            self.conn.execute(
                "UPDATE writer_lease SET heartbeat = ? WHERE id = 1 AND run_id = ?",
                (now_iso(), run_id),
            )

    @guarded
    def release_writer_lease(self, run_id: str) -> None:
        with self.transaction():
            self.conn.execute("DELETE FROM writer_lease WHERE id = 1 AND run_id = ?", (run_id,))

    @guarded
    def writer_lease(self) -> WriterLease | None:
        return self._lease_row()

    def _lease_row(self) -> WriterLease | None:
        row = self.conn.execute(
            "SELECT run_id, pid, host, since, heartbeat FROM writer_lease WHERE id = 1"
        ).fetchone()
        return None if row is None else WriterLease(**dict(row))

    # ------------------------------------------------------------------------------------ runs
    @guarded
    def start_run(self, run_id: str, config: dict[str, Any] | str | None = None) -> None:
        """Record a run as running. Starting a known run again (a resumed run) keeps its
        ``started_at`` and replaces its config."""
        if not isinstance(run_id, str) or not run_id.strip():
            raise InputError("run id must be a non-empty string")
        payload = json_payload(config if config is not None else {}, "run config")
        with self.transaction():
            self.conn.execute(
                "INSERT INTO run (id, started_at, status, config) VALUES (?, ?, 'running', ?) "
                "ON CONFLICT (id) DO UPDATE SET status = 'running', config = excluded.config, "
                "finished_at = NULL, error = NULL",
                (run_id, now_iso(), payload),
            )

    @guarded
    def finish_run(self, run_id: str, status: str, error: str | None = None) -> None:
        if not isinstance(status, str) or not status.strip():
            raise InputError("run status must be a non-empty string")
        with self.transaction():
            cursor = self.conn.execute(
                "UPDATE run SET status = ?, finished_at = ?, error = ? WHERE id = ?",
                (status, now_iso(), error, run_id),
            )
            if cursor.rowcount == 0:
                raise StoreError(f"no run {run_id!r} in the annotator store; start_run it first")

    @guarded
    def run(self, run_id: str) -> RunRecord | None:
        row = self.conn.execute("SELECT * FROM run WHERE id = ?", (run_id,)).fetchone()
        return None if row is None else self._run_record(row)

    @guarded
    def runs(self) -> list[RunRecord]:
        rows = self.conn.execute("SELECT * FROM run ORDER BY started_at, id").fetchall()
        return [self._run_record(row) for row in rows]

    @staticmethod
    def _run_record(row: sqlite3.Row) -> RunRecord:
        return RunRecord(
            id=row["id"],
            started_at=row["started_at"],
            finished_at=row["finished_at"],
            status=row["status"],
            config=json.loads(row["config"]),
            error=row["error"],
        )

    # ---------------------------------------------------------------------------- thread state
    @guarded
    def thread_state(self, thread_id: int) -> ThreadState | None:
        row = self.conn.execute(
            "SELECT * FROM thread_state WHERE thread_id = ?", (thread_id,)
        ).fetchone()
        return None if row is None else _thread_state(row)

    @guarded
    def thread_states(self) -> list[ThreadState]:
        """All recorded thread states in story order (position)."""
        rows = self.conn.execute(
            "SELECT * FROM thread_state ORDER BY position, thread_id"
        ).fetchall()
        return [_thread_state(row) for row in rows]

    @guarded
    def set_thread_state(
        self,
        thread_id: int,
        *,
        thread_key: str | _Unset = UNSET,
        position: int | _Unset = UNSET,
        status: str | _Unset = UNSET,
        scenes_total: int | _Unset = UNSET,
        scenes_done: int | _Unset = UNSET,
        cursor_scene_id: str | _Unset | None = UNSET,
        run_id: str | _Unset | None = UNSET,
        end_revision_id: int | _Unset | None = UNSET,
        checkpoint_id: int | _Unset | None = UNSET,
        extra: dict[str, Any] | _Unset = UNSET,
    ) -> ThreadState:
        """Create or update a thread's state; only the arguments given change (None clears a
        nullable column). A new row needs ``thread_key`` and ``position``. ``extra`` is merged
        key by key into the stored extra."""
        if isinstance(thread_id, bool) or not isinstance(thread_id, int):
            raise InputError(f"thread id must be an integer, not {thread_id!r}")
        if status is not UNSET and status not in THREAD_STATUSES:
            raise InputError(f"thread status {status!r} is not one of {', '.join(THREAD_STATUSES)}")
        for name, value in (
            ("position", position),
            ("scenes_total", scenes_total),
            ("scenes_done", scenes_done),
        ):
            if value is not UNSET and (
                isinstance(value, bool) or not isinstance(value, int) or value < 0
            ):
                raise InputError(f"{name} must be a non-negative integer, not {value!r}")
        if end_revision_id is not UNSET:
            _optional_int(end_revision_id, "end_revision_id")
        if checkpoint_id is not UNSET:
            _optional_int(checkpoint_id, "checkpoint_id")
        if extra is not UNSET and not isinstance(extra, dict):
            raise InputError("thread state extra must be a dict")
        with self.transaction():
            current = self.thread_state(thread_id)
            if current is None:
                if thread_key is UNSET or position is UNSET:
                    raise StoreError(
                        f"thread {thread_id} has no state yet; give thread_key and position"
                    )
                self.conn.execute(
                    "INSERT INTO thread_state (thread_id, thread_key, position, updated_at) "
                    "VALUES (?, ?, ?, ?)",
                    (thread_id, thread_key, position, now_iso()),
                )
                current = self.thread_state(thread_id)
                assert current is not None
            values: dict[str, object] = {
                "thread_key": thread_key,
                "position": position,
                "status": status,
                "scenes_total": scenes_total,
                "scenes_done": scenes_done,
                "cursor_scene_id": cursor_scene_id,
                "run_id": run_id,
                "end_revision_id": end_revision_id,
                "checkpoint_id": checkpoint_id,
            }
            changes = {name: value for name, value in values.items() if value is not UNSET}
            if extra is not UNSET:
                changes["extra"] = dump_json({**current.extra, **extra})
            changes["updated_at"] = now_iso()
            assignments = ", ".join(f"{name} = ?" for name in changes)
            self.conn.execute(
                f"UPDATE thread_state SET {assignments} WHERE thread_id = ?",
                (*changes.values(), thread_id),
            )
            state = self.thread_state(thread_id)
            assert state is not None
            return state

    # ------------------------------------------------------------------------------ agent calls
    @guarded
    def log_agent_call(self, call: AgentCallRecord) -> int:
        """Record one model call; returns its id."""
        if not isinstance(call, AgentCallRecord):
            raise InputError("log_agent_call takes an AgentCallRecord")
        with self.transaction():
            cursor = self.conn.execute(
                "INSERT INTO agent_call (run_id, thread_id, scene_id, purpose, model, "
                "prompt_tokens, cached_tokens, completion_tokens, latency_ms, finish_reason, "
                "error, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    call.run_id,
                    call.thread_id,
                    call.scene_id,
                    call.purpose,
                    call.model,
                    call.prompt_tokens,
                    call.cached_tokens,
                    call.completion_tokens,
                    call.latency_ms,
                    call.finish_reason,
                    call.error,
                    call.created_at or now_iso(),
                ),
            )
            return int(cursor.lastrowid or 0)

    @guarded
    def agent_calls(
        self,
        *,
        run_id: str | None = None,
        thread_id: int | None = None,
        scene_id: str | None = None,
    ) -> list[AgentCallRecord]:
        where, params = _filters(run_id=run_id, thread_id=thread_id, scene_id=scene_id)
        rows = self.conn.execute(f"SELECT * FROM agent_call{where} ORDER BY id", params)
        return [_agent_call(row) for row in rows.fetchall()]

    @guarded
    def agent_call_totals(
        self,
        *,
        run_id: str | None = None,
        thread_id: int | None = None,
        purpose: str | None = None,
    ) -> CallTotals:
        where, params = _filters(run_id=run_id, thread_id=thread_id, purpose=purpose)
        row = self.conn.execute(
            "SELECT COUNT(*) AS calls, COALESCE(SUM(prompt_tokens), 0) AS prompt_tokens, "
            "COALESCE(SUM(cached_tokens), 0) AS cached_tokens, "
            "COALESCE(SUM(completion_tokens), 0) AS completion_tokens, "
            f"COALESCE(SUM(latency_ms), 0.0) AS latency_ms FROM agent_call{where}",
            params,
        ).fetchone()
        return CallTotals(**dict(row))

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
            cursor = self.conn.execute(
                "INSERT INTO compaction (run_id, thread_id, scene_id, tier, tokens_before, "
                "tokens_after, entry_ids, summary, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    thread_id,
                    scene_id,
                    tier,
                    int(tokens_before),
                    int(tokens_after),
                    dump_json(list(entry_ids)),
                    summary,
                    now_iso(),
                ),
            )
            return int(cursor.lastrowid or 0)

    @guarded
    def compactions(
        self, *, thread_id: int | None = None, run_id: str | None = None
    ) -> list[dict[str, Any]]:
        """Compaction events, oldest first; ``entry_ids`` decoded to a list."""
        where, params = _filters(thread_id=thread_id, run_id=run_id)
        rows = self.conn.execute(f"SELECT * FROM compaction{where} ORDER BY id", params)
        result = []
        for row in rows.fetchall():
            record = dict(row)
            record["entry_ids"] = json.loads(record["entry_ids"])
            result.append(record)
        return result

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

    # ------------------------------------------------------------------- checkpoints (snapshots)
    @guarded
    def save_checkpoint(
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
        if kind not in CHECKPOINT_KINDS:
            raise InputError(
                f"checkpoint kind {kind!r} is not one of {', '.join(CHECKPOINT_KINDS)}"
            )
        payload = json_payload(state_json, "checkpoint state")
        _optional_int(revision_id, "checkpoint revision_id")
        with self.transaction():
            cursor = self.conn.execute(
                "INSERT INTO snapshot (kind, thread_id, scene_id, run_id, state, revision_id, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (kind, thread_id, scene_id, run_id, payload, revision_id, now_iso()),
            )
            return int(cursor.lastrowid or 0)

    @guarded
    def checkpoint(self, snapshot_id: int) -> Checkpoint:
        row = self.conn.execute("SELECT * FROM snapshot WHERE id = ?", (snapshot_id,)).fetchone()
        if row is None:
            raise StoreError(f"no snapshot {snapshot_id} in the annotator store")
        return _checkpoint(row)

    @guarded
    def checkpoints(
        self, thread_id: int | None = None, *, kind: str | None = None
    ) -> list[Checkpoint]:
        where, params = _filters(thread_id=thread_id, kind=kind)
        rows = self.conn.execute(f"SELECT * FROM snapshot{where} ORDER BY id", params)
        return [_checkpoint(row) for row in rows.fetchall()]

    @guarded
    def latest_checkpoint(
        self, *, thread_id: int | None = None, kind: str | None = None
    ) -> Checkpoint | None:
        where, params = _filters(thread_id=thread_id, kind=kind)
        row = self.conn.execute(
            f"SELECT * FROM snapshot{where} ORDER BY id DESC LIMIT 1", params
        ).fetchone()
        return None if row is None else _checkpoint(row)

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
            cursor = self.conn.execute(
                "INSERT INTO summon_log (snapshot_id, run_id, exchange, created_at) "
                "VALUES (?, ?, ?, ?)",
                (snapshot_id, run_id, payload, now_iso()),
            )
            return int(cursor.lastrowid or 0)

    @guarded
    def summons(self, snapshot_id: int | None = None) -> list[dict[str, Any]]:
        """Logged summon exchanges, oldest first; ``exchange`` decoded."""
        where, params = _filters(snapshot_id=snapshot_id)
        rows = self.conn.execute(f"SELECT * FROM summon_log{where} ORDER BY id", params)
        result = []
        for row in rows.fetchall():
            record = dict(row)
            record["exchange"] = json.loads(record["exchange"])
            result.append(record)
        return result

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
        with self.transaction():
            cursor = self.conn.execute(
                "INSERT INTO curator_decision (run_id, thread_id, entry_id, decision, "
                "target_entry_id, reasoning, revision_id, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    thread_id,
                    entry_id,
                    decision,
                    target_entry_id,
                    reasoning,
                    revision_id,
                    now_iso(),
                ),
            )
            return int(cursor.lastrowid or 0)

    @guarded
    def mark_decision_undone(self, decision_id: int, undone_revision_id: int) -> None:
        """Record that a curator decision was undone by ``undone_revision_id``."""
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
        where, params = _filters(thread_id=thread_id, entry_id=entry_id)
        rows = self.conn.execute(f"SELECT * FROM curator_decision{where} ORDER BY id", params)
        return [dict(row) for row in rows.fetchall()]
