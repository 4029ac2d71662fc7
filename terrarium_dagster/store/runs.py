"""Runs and model calls: the one-writer lease, run records, and every request sent with its tokens
and outcome.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from collections.abc import Sequence
from typing import Any, TypedDict, Unpack

import sqlite_utils

from terrarium_dagster.errors import InputError, StoreError, WriterLeaseError
from terrarium_dagster.store.base import (
    Aggregate,
    guarded,
    json_payload,
    now_iso,
)
from terrarium_dagster.store.lease import (
    STALE_BEATS,
    Heartbeat,
    heartbeat_path,
    holder_alive,
    read_beat,
)
from terrarium_dagster.store.ledger import (
    ANSWERED_AFTER_STOP,
    CallLedger,
    is_abandoned,
    ledger_path,
)
from terrarium_dagster.store.models import (
    AgentCallRecord,
    CallTotals,
    RunRecord,
    WriterLease,
)
from terrarium_dagster.store.records import (
    _agent_call,
    _filters,
    from_row,
)


class CallFilter(TypedDict, total=False):
    """Which agent calls a question is about: each column given (not None) narrows them."""

    run_id: str | None
    thread_id: int | None
    scene_id: str | None
    purpose: str | None


class RunLog(Aggregate):
    """The store's runs aggregate: `store.runs`."""

    def __init__(self, store: Any) -> None:
        super().__init__(store)
        self.ledger = CallLedger(ledger_path(store.where))
        self._heartbeat: Heartbeat | None = None

    # ------------------------------------------------------------------------- writer lease
    @guarded
    def acquire_writer_lease(self, run_id: str) -> WriterLease | None:
        """Take the store's one-writer lease for `run_id`, at once or not at all.

        A live holder refuses with `WriterLeaseError` naming it (run, process, host, since). A
        holder that died (no heartbeat for `STALE_BEATS` of its beats: see `store/lease.py`;
        never judged by pid or host name) is taken over; its run, if still marked running, is
        marked `died`. Once taken, the lease beats on its own thread until released. Returns the
        lease that was taken over, if any.
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
        own = self._heartbeat
        made = own is not None and own.run_id == run_id and own.made  # its file, made before
        self.stop_heartbeat()  # a lease taken again by its own run beats anew
        heartbeat = Heartbeat(heartbeat_path(self.where), run_id)
        try:
            previous = self._take_lease(me, heartbeat)
        except BaseException:
            heartbeat.stop()
            raise
        heartbeat.made = heartbeat.made or made
        self._heartbeat = heartbeat
        self.settle_ledger()  # a killed run's calls: on the books before anything else
        return previous if previous is not None and previous.run_id != run_id else None

    def _take_lease(self, me: WriterLease, heartbeat: Heartbeat) -> WriterLease | None:
        run_id = me.run_id
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
            heartbeat.start()  # before the commit: the row is never seen without a fresh beat
        return previous

    def _refuse_live_holder(self, lease: WriterLease | None, run_id: str) -> None:
        if lease is not None and lease.run_id != run_id and self.holder_alive(lease):
            beat = read_beat(heartbeat_path(self.where))
            silent = (
                f"; a holder silent for {beat.every * STALE_BEATS:.0f} s is taken over"
                if beat
                else ""
            )
            raise WriterLeaseError(
                f"annotator store {self.where} is being written by run {lease.run_id} "
                f"(pid {lease.pid} on {lease.host}, since {lease.since}); one "
                f"writer at a time: wait for it to finish or stop it{silent}"
            )

    def holder_alive(self, lease: WriterLease) -> bool:
        """Does the lease's holder still beat (whatever host or container it runs in)?"""
        return holder_alive(heartbeat_path(self.where), lease.run_id)

    @guarded
    def release_writer_lease(self, run_id: str) -> None:
        """Give the lease back; the lease's side file goes too where this lease made it (a
        command refused after taking the lease leaves the folder as it found it)."""
        own = self._heartbeat if self._heartbeat and self._heartbeat.run_id == run_id else None
        with self.transaction():
            self.conn.execute("DELETE FROM writer_lease WHERE id = 1 AND run_id = ?", (run_id,))
            if own is not None:  # under the write lock: no taker has the file open
                own.remove_made_file()
        if own is not None:
            self.stop_heartbeat()

    def stop_heartbeat(self) -> None:
        """Stop this process's beat (the store closes): a lease not released goes stale."""
        if self._heartbeat is not None:
            self._heartbeat.stop()
            self._heartbeat = None

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
        return self.records(self._run_record, "SELECT * FROM run ORDER BY started_at, id")

    @staticmethod
    def _run_record(row: sqlite3.Row) -> RunRecord:
        return from_row(RunRecord, row, json_columns=("config",))

    # ------------------------------------------------------------------------------ agent calls
    @guarded
    def log_agent_call(self, call: AgentCallRecord) -> int:
        """Record one model call; returns its id."""
        if not isinstance(call, AgentCallRecord):
            raise InputError("log_agent_call takes an AgentCallRecord")
        row = call.model_dump(exclude={"id", "request_key"})
        with self.transaction():
            return self.insert("agent_call", row | {"created_at": call.created_at or now_iso()})

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
        late = [row for row in rows if row["error"] == ANSWERED_AFTER_STOP]
        with self.transaction():  # sqlite-utils' bulk insert nests as a savepoint in it
            # a row settled from the ledger before (its key is in the table) is not added twice
            sqlite_utils.Database(self.conn).table("agent_call").insert_all(rows, ignore=True)
            for row in late:  # an answer after the stop replaces the row settled as abandoned
                columns = [name for name in row if name != "request_key"]
                self.conn.execute(
                    f"UPDATE agent_call SET {', '.join(f'{name} = ?' for name in columns)} "
                    "WHERE request_key = ?",
                    [row[name] for name in columns] + [row["request_key"]],
                )
        return len(calls)

    @guarded
    def settle_ledger(self) -> int:
        """Move the ledger's answered calls (and the unanswered ones of dead processes) into the
        table in one short transaction, then empty the ledger if all of it is there. Outside a
        transaction only (a scene's open transaction holds the write lock: the calls wait in
        the ledger, which readers count). Returns the rows settled."""
        if self.store.read_only or self.store.in_transaction:
            return 0
        view = self.ledger.read()
        rows = view.rows(settled_only=True)
        if rows:
            self.record_calls(rows)
        if view.keys() or view.unsent:  # emptied once what is on the books is in the table
            self.ledger.clear(self._committed_keys(view.keys()))
        return len(rows)

    def _committed_keys(self, keys: set[str]) -> set[str]:
        found = self.conn.execute(
            "SELECT request_key FROM agent_call WHERE request_key IN "
            "(SELECT value FROM json_each(?))",
            (json.dumps(sorted(keys)),),
        )
        return {row[0] for row in found}

    def _unsettled(self, **columns: object) -> list[AgentCallRecord]:
        """Calls in the ledger and not in the table (sent before a kill, or waiting for a
        scene's commit), matching the given column values: they are on the books too."""
        view = self.ledger.read()
        if not view.keys():
            return []
        rows = view.rows(settled_only=False)
        keys = {row.request_key for row in rows if row.request_key}
        committed = self._committed_keys(keys)  # type: ignore[arg-type]
        return [
            row
            for row in rows
            if row.request_key not in committed
            and all(value is None or getattr(row, name) == value for name, value in columns.items())
        ]

    @guarded
    def agent_calls(self, **which: Unpack[CallFilter]) -> list[AgentCallRecord]:
        """The calls recorded (in id order), then those still in the ledger."""
        recorded = [_agent_call(row) for row in self.stored_rows("agent_call", **which)]
        return recorded + self._unsettled(**which)

    @guarded
    def calls_per_server(self, *, run_id: str | None = None) -> list[tuple[str, int, int, int]]:
        """(server, calls, failed calls, abandoned calls) for each server the calls went to,
        busiest first, those still in the ledger included. Abandoned (`is_abandoned`: the run
        stopped with the call in flight) is not failed."""
        where, params = _filters(run_id=run_id)
        rows = self.conn.execute(
            "SELECT COALESCE(server, '') AS server, error, COUNT(*) AS calls "
            f"FROM agent_call{where} GROUP BY COALESCE(server, ''), error",
            params,
        ).fetchall()
        counted = [(row["server"], row["error"], int(row["calls"])) for row in rows]
        counted += [(call.server or "", call.error, 1) for call in self._unsettled(run_id=run_id)]
        servers: dict[str, list[int]] = {}
        for server, error, calls in counted:
            tally = servers.setdefault(server, [0, 0, 0])
            tally[0] += calls
            if is_abandoned(error):
                tally[2] += calls
            elif error is not None:
                tally[1] += calls
        return sorted(
            ((server, *tally) for server, tally in servers.items()),  # type: ignore[misc]
            key=lambda row: (-row[1], row[0]),
        )

    @guarded
    def agent_call_totals(
        self,
        *,
        purposes: Sequence[str] | None = None,
        after_call_id: int | None = None,
        **which: Unpack[CallFilter],
    ) -> CallTotals:
        """Sums over the calls, those still in the ledger included; `purposes`: only calls of
        these purposes; `after_call_id`: only the calls recorded after that one (the ledger's
        are newer than any)."""
        where, params = _filters(**which)
        clauses = [where.removeprefix(" WHERE ")] if where else []
        if purposes is not None:
            clauses.append(f"purpose IN ({', '.join('?' * len(purposes))})")
            params.extend(purposes)
        if after_call_id is not None:
            clauses.append("id > ?")
            params.append(after_call_id)
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        row = self.conn.execute(
            "SELECT COUNT(*) AS calls, COALESCE(SUM(prompt_tokens), 0) AS prompt_tokens, "
            "COALESCE(SUM(cached_tokens), 0) AS cached_tokens, "
            "COALESCE(SUM(completion_tokens), 0) AS completion_tokens, "
            f"COALESCE(SUM(latency_ms), 0.0) AS latency_ms FROM agent_call{where}",
            params,
        ).fetchone()
        totals = dict(row)
        for call in self._unsettled(**which):
            if purposes is not None and call.purpose not in purposes:
                continue
            totals["calls"] += 1
            for name in ("prompt_tokens", "cached_tokens", "completion_tokens", "latency_ms"):
                totals[name] += getattr(call, name)
        return CallTotals(**totals)
