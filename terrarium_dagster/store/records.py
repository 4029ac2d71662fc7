"""Row helpers shared by the store's aggregates."""

from __future__ import annotations

import enum
import json
import sqlite3

from terrarium_dagster.errors import InputError
from terrarium_dagster.store.models import (
    AgentCallRecord,
    Checkpoint,
    ThreadState,
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
