"""Row helpers shared by the store's aggregates: a row made into its model (`from_row`, the one
place rows become models), filters, the `UNSET` marker."""

from __future__ import annotations

import dataclasses
import enum
import json
import sqlite3
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel

from terrarium_dagster.errors import InputError
from terrarium_dagster.store.models import (
    AgentCallRecord,
    Snapshot,
    ThreadState,
)

Model = TypeVar("Model")


def from_row(
    model: type[Model],
    row: sqlite3.Row,
    *,
    json_columns: Iterable[str] = (),
    columns: Mapping[str, str] | None = None,
    **given: Any,
) -> Model:
    """The `model` (a pydantic model or a dataclass) of one row: each field from the column of
    its name (`columns` names the others), a JSON column decoded (NULL stays None), a field the
    row lacks left to its default; `given` fields as they are."""
    if isinstance(model, type) and issubclass(model, BaseModel):
        names: Iterable[str] = model.model_fields
    else:
        names = (field.name for field in dataclasses.fields(model))  # type: ignore[arg-type]
    decoded = set(json_columns)
    present = set(row.keys())
    values = dict(given)
    for name in names:
        column = (columns or {}).get(name, name)
        if name in values or column not in present:
            continue
        value = row[column]
        values[name] = json.loads(value) if column in decoded and value is not None else value
    return model(**values)


def decoded(rows: Iterable[sqlite3.Row], column: str) -> list[dict[str, Any]]:
    """Rows as dicts, their JSON `column` decoded (a log's rows: compactions, summons)."""
    return [{**dict(row), column: json.loads(row[column])} for row in rows]


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
    # the stored column keeps its first name
    return from_row(
        ThreadState, row, json_columns=("extra",), columns={"snapshot_id": "checkpoint_id"}
    )


def _snapshot(row: sqlite3.Row) -> Snapshot:
    return from_row(Snapshot, row, columns={"state_json": "state"})


def _agent_call(row: sqlite3.Row) -> AgentCallRecord:
    return from_row(AgentCallRecord, row)


def _filters(**columns: object) -> tuple[str, list[object]]:
    """A WHERE clause for the given non-None column values."""
    clauses = [f"{name} = ?" for name, value in columns.items() if value is not None]
    params = [value for value in columns.values() if value is not None]
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params
