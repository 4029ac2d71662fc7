"""A normalizing dump of an annotator store: what a run wrote, without what differs by nature.

Two runs over the same corpus with the same model answers, one interrupted and resumed, must write
the same glossary, provenance, revisions, curator decisions, compactions, snapshots and saved
context state, byte for byte, apart from times and run ids (which this dump leaves out). Row ids
are kept: SQLite's AUTOINCREMENT counters roll back with a transaction, so they agree too, and the
context state names entries by id. The model calls (`agent_call`) and the runs (`run`) are not
part of it: an interrupted run sends more requests and has more runs.

The store is opened read-only (`mode=ro`): dumping changes nothing.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

# table -> columns left out (times and run ids); every other column is compared
COMPARED: dict[str, tuple[str, ...]] = {
    "entry": (),
    "alias": (),
    "provenance": (),
    "revision": ("run_id", "created_at"),
    "curator_decision": ("run_id", "created_at"),
    "compaction": ("run_id", "created_at"),
    "snapshot": ("run_id", "created_at"),
    "summon_log": ("run_id", "created_at"),
    "context_state": ("updated_at",),
    "thread_state": ("run_id", "updated_at"),
    "source_post": ("recorded_at", "checked_at"),
    "meta": (),
    "entry_fts": (),
    "sqlite_sequence": (),
}

Dump = dict[str, list[tuple[Any, ...]]]


def store_dump(path: Path, *, everything: bool = False) -> Dump:
    """Every compared table's rows (ordered by their columns, ids first), minus the columns
    left out; with `everything`, every table and every column (runs, calls, the lease), as
    stored."""
    dump: Dump = {}
    uri = f"{path.resolve().as_uri()}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True)) as conn:
        tables = COMPARED
        if everything:
            names = conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
            tables = {name: () for (name,) in names}
        for table, skipped in tables.items():
            columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
            kept = [column for column in columns if column not in skipped]
            if not kept:
                continue
            quoted = ", ".join(f'"{column}"' for column in kept)
            order = ", ".join(str(n) for n in range(1, len(kept) + 1))  # ids first: id order
            rows = conn.execute(f'SELECT {quoted} FROM "{table}" ORDER BY {order}').fetchall()
            if table == "sqlite_sequence" and not everything:
                # the counters of compared tables only: calls and runs differ by nature
                rows = [row for row in rows if row[0] in tables]
            dump[table] = [tuple(kept), *rows]
    return dump


def dump_differences(expected: Dump, actual: Dump, *, limit: int = 5) -> list[str]:
    """Readable differences: per table, the first rows that differ (empty when equal)."""
    problems: list[str] = []
    for table in sorted(set(expected) | set(actual)):
        want, got = expected.get(table, []), actual.get(table, [])
        if want == got:
            continue
        if len(want) != len(got):
            problems.append(f"{table}: {len(want) - 1} rows expected, {len(got) - 1} found")
        header = want[0] if want else got[0]
        shown = 0
        for index, (a, b) in enumerate(zip(want[1:], got[1:], strict=False)):
            if a == b:
                continue
            columns = [
                f"{name}: {_difference(x, y)}"
                for name, x, y in zip(header, a, b, strict=True)
                if x != y
            ]
            problems.append(f"{table} row {index + 1}: " + "; ".join(columns))
            shown += 1
            if shown >= limit:
                break
    return problems


def _difference(expected: object, actual: object, width: int = 120) -> str:
    """`expected != actual`, around the first differing character for long texts."""
    if not (isinstance(expected, str) and isinstance(actual, str)):
        return f"{expected!r} != {actual!r}"
    at = next(
        (i for i, (x, y) in enumerate(zip(expected, actual, strict=False)) if x != y),
        min(len(expected), len(actual)),
    )
    start = max(0, at - width // 2)
    return (
        f"from character {at}: {expected[start : at + width]!r} != {actual[start : at + width]!r}"
    )


def glossary_fingerprint(db: Path) -> dict[str, list[tuple[object, ...]]]:
    """Entries, aliases, provenance and revisions, without run ids and wall-clock times."""
    with sqlite3.connect(db) as connection:
        return {
            "entry": connection.execute(
                "SELECT id, term, definition, status, tags, merged_into, deleted FROM entry "
                "ORDER BY id"
            ).fetchall(),
            "alias": connection.execute(
                "SELECT entry_id, alias, deleted FROM alias ORDER BY id"
            ).fetchall(),
            "provenance": connection.execute(
                "SELECT entry_id, post_id, thread_id, quote, revision_id, superseded_revision_id "
                "FROM provenance ORDER BY id"
            ).fetchall(),
            "revision": connection.execute(
                "SELECT id, entry_id, action, old_value, new_value, reason, actor_kind, "
                "thread_id, scene_id FROM revision ORDER BY id"
            ).fetchall(),
        }
