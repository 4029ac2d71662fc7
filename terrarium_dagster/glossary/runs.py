"""Runs and model calls: the one-writer lease, run records, and every request sent with its tokens
and outcome.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from collections.abc import Sequence
from typing import Any

import sqlite_utils

from terrarium_dagster.errors import InputError, StoreError, WriterLeaseError
from terrarium_dagster.glossary.base import (
    Aggregate,
    guarded,
    json_payload,
    now_iso,
)
from terrarium_dagster.glossary.models import (
    AgentCallRecord,
    CallTotals,
    RunRecord,
    WriterLease,
)
from terrarium_dagster.glossary.records import (
    _agent_call,
    _filters,
)


class RunLog(Aggregate):
    """The store's runs aggregate: `store.runs`."""

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
        # A live holder is refused from the last commit, at once: the holder may hold SQLite's
        # write lock for as long as a model call lasts (a scene that has written), and waiting
        # for it would be waiting for the holder.
        self._refuse_live_holder(self._lease_row(), run_id)
        with self.transaction():  # BEGIN IMMEDIATE: two openers cannot both see it free
            previous = self._lease_row()
            self._refuse_live_holder(previous, run_id)
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

    def _refuse_live_holder(self, lease: WriterLease | None, run_id: str) -> None:
        if lease is not None and lease.run_id != run_id and lease.alive():
            raise WriterLeaseError(
                f"annotator store {self.where} is being written by run {lease.run_id} "
                f"(pid {lease.pid} on {lease.host}, since {lease.since}); one "
                "writer at a time: wait for it to finish or stop it"
            )

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
    def record_calls(self, calls: Sequence[AgentCallRecord]) -> int:
        """Record model calls in one short transaction of their own (after a scene's commit or
        rollback, so a rolled-back scene keeps what the server was asked); returns the count."""
        if not all(isinstance(call, AgentCallRecord) for call in calls):
            raise InputError("record_calls takes AgentCallRecords")
        rows = [
            call.model_dump(exclude={"id"}) | {"created_at": call.created_at or now_iso()}
            for call in calls
        ]
        with self.transaction():  # sqlite-utils' bulk insert nests as a savepoint in it
            sqlite_utils.Database(self.conn).table("agent_call").insert_all(rows)
        return len(calls)

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
