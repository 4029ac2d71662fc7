"""The way back from a damaged store (`terrarium recover`): `recover` copies every row it can still
read, table by table, into a new store of the current schema (a damaged page loses the rows on it,
the rows after it are still reached by seeking past it), rebuilds the full-text index, checks the
result, and leaves the damaged file as it was.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from terrarium_dagster.errors import DamagedStoreError, InputError
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.store.base import let_go_of_wal, remove_store_files
from terrarium_dagster.store.integrity import is_damage, refuse_not_a_store

# How far a salvaging scan seeks past an unreadable rowid before it gives up on a table.
_SEEK_LIMIT = 1 << 62


@dataclass
class TableSalvage:
    table: str
    copied: int = 0
    unreadable: int = 0  # damaged stretches met while scanning (each loses the rows on a page)
    lost_all: bool = False  # the table could not be read at all


@dataclass
class RecoverReport:
    source: str
    out: str
    tables: list[TableSalvage] = field(default_factory=list)
    dangling: int = 0  # rows pointing at a row that was lost (PRAGMA foreign_key_check)
    check_problems: int = 0  # what SQLite's quick_check of the damaged store found

    @property
    def copied(self) -> int:
        return sum(table.copied for table in self.tables)

    @property
    def damaged_tables(self) -> list[str]:
        return [t.table for t in self.tables if t.unreadable or t.lost_all]


def _open_damaged(path: Path) -> sqlite3.Connection:
    """The store read in ONE read transaction: a run writing it meanwhile (WAL) commits after
    the snapshot every table is read from, so the copy is the store at one moment, never rows
    of one moment pointing at rows of another."""
    conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True, isolation_level=None)
    conn.execute("PRAGMA query_only = ON")
    conn.execute("BEGIN")
    return conn


def _check_problems(conn: sqlite3.Connection) -> int:
    """How many problems SQLite's quick_check finds (damage in an index, a derived table or
    free pages loses no row, but the store is damaged all the same)."""
    try:
        rows = conn.execute("PRAGMA quick_check(100)").fetchall()
    except sqlite3.DatabaseError:
        return 1
    return sum(1 for row in rows if str(row[0]) != "ok")


def _rowid_tables(conn: sqlite3.Connection, names: list[str]) -> list[str]:
    return [name for name in names if name != "entry_fts" and not name.startswith("entry_fts_")]


def _salvage_table(
    source: sqlite3.Connection, target: sqlite3.Connection, table: str, columns: list[str]
) -> TableSalvage:
    """Copy `table` row by row in rowid order; a damaged stretch is stepped over by seeking to
    ever larger rowids beyond the last one read."""
    salvage = TableSalvage(table)
    names = ", ".join(f'"{c}"' for c in columns)
    insert = (
        f'INSERT OR IGNORE INTO "{table}" (rowid, {names}) '
        f"VALUES (?, {', '.join('?' for _ in columns)})"
    )
    select = f'SELECT rowid, {names} FROM "{table}" WHERE rowid > ? ORDER BY rowid'
    last = -(1 << 63)
    step = 1
    while True:
        try:
            for row in source.execute(select, (last,)):
                target.execute(insert, tuple(row))
                salvage.copied += 1
                last = row[0]
                step = 1
            return salvage
        except sqlite3.DatabaseError as exc:
            if not is_damage(exc):
                raise
            salvage.unreadable += 1
            if salvage.copied == 0 and last == -(1 << 63):
                last = 0  # the first seek failed: try the positive rowids
            # seek past the damaged page: 1, 2, 4 ... rowids further
            while step < _SEEK_LIMIT:
                last += step
                step *= 2
                try:
                    source.execute(select + " LIMIT 1", (last,)).fetchall()
                    break
                except sqlite3.DatabaseError as again:
                    if not is_damage(again):
                        raise
            else:
                salvage.lost_all = salvage.copied == 0
                return salvage


def _rebuild_search_index(conn: sqlite3.Connection) -> None:
    """The full-text index is derived (term, live aliases in order, definition): built anew."""
    conn.execute("DELETE FROM entry_fts")
    conn.execute(
        "INSERT INTO entry_fts (rowid, term, aliases, definition) "
        "SELECT e.id, e.term, COALESCE((SELECT group_concat(alias, ' ; ') FROM "
        "(SELECT alias FROM alias a WHERE a.entry_id = e.id AND a.deleted = 0 ORDER BY a.id)), "
        "''), e.definition FROM entry e"
    )


def _refuse_not_store_tables(tables: list[str], where: str) -> None:
    """A corpus, an empty database or someone else's tables hold nothing of a store: refused in
    one line rather than 'recovered' into an empty store called a copy of them."""
    names = {name for name in tables if not name.startswith("sqlite_")}
    if names & {"meta", "entry", "revision"}:
        return
    if {"thread", "post"} <= names:
        what = "a corpus, not an annotator store (a corpus needs no recovering)"
    elif not names:
        what = "an empty database, not an annotator store"
    else:
        what = "an SQLite database but not an annotator store"
    raise InputError(f"{where} is {what}; nothing was written; give --db the damaged store's file")


def recover(source_path: Path, out_path: Path) -> RecoverReport:
    """Salvage `source_path` into a new store at `out_path` (which must not exist). The store
    read is left as it was: the WAL files its read-only opening made beside it are removed."""
    source_path = Path(source_path).expanduser()
    beside = [Path(f"{source_path}{suffix}") for suffix in ("-wal", "-shm")]
    absent = not any(path.exists() for path in beside)
    try:
        return _salvage(source_path, out_path)
    finally:
        if absent and any(path.exists() for path in beside):
            let_go_of_wal(source_path)


def _salvage(source_path: Path, out_path: Path) -> RecoverReport:
    out_path = Path(out_path).expanduser()
    if not source_path.is_file():
        raise InputError(f"no annotator store at {source_path}")
    if out_path.exists():
        raise InputError(f"--out {out_path} exists: recover writes a new store, never over one")
    if out_path.resolve() == source_path.resolve():
        raise InputError("--out must differ from --db: the damaged store is kept as it is")
    # nothing to recover from notes or a book
    refuse_not_a_store(source_path, str(source_path), writer=False)
    report = RecoverReport(source=str(source_path), out=str(out_path))
    try:
        source = _open_damaged(source_path)
        tables = [
            row[0]
            for row in source.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
        ]
    except sqlite3.DatabaseError as exc:
        raise InputError(
            f"annotator store {source_path} cannot be read at all ({exc}): its schema is "
            "damaged; restore a copy of the file"
        ) from exc
    try:
        _refuse_not_store_tables(tables, str(source_path))
    except InputError:
        source.close()
        raise
    report.check_problems = _check_problems(source)
    store = GlossaryStore(out_path)
    try:
        conn = store.conn
        known = {
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        conn.execute("PRAGMA foreign_keys = OFF")  # rows arrive table by table
        conn.execute("BEGIN IMMEDIATE")
        try:
            for table in _rowid_tables(source, tables):
                if table not in known or table.startswith("sqlite_"):
                    continue
                here = {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')}
                try:
                    there = [row[1] for row in source.execute(f'PRAGMA table_info("{table}")')]
                except sqlite3.DatabaseError:
                    report.tables.append(TableSalvage(table, lost_all=True))
                    continue
                columns = [c for c in there if c in here]
                if table == "writer_lease":  # a dead run's lease is not worth keeping
                    continue
                report.tables.append(_salvage_table(source, conn, table, columns))
            # the full-text index is derived: built again from the entries recovered
            _rebuild_search_index(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        finally:
            conn.execute("PRAGMA foreign_keys = ON")
        report.dangling = len(conn.execute("PRAGMA foreign_key_check").fetchall())
        problems = [row[0] for row in conn.execute("PRAGMA quick_check").fetchall()]
        if problems != ["ok"]:
            raise DamagedStoreError(f"the recovered store failed its check: {problems[0]}")
    except BaseException:
        store.close()
        source.close()
        remove_store_files(out_path)
        raise
    store.close()
    source.close()
    return report
