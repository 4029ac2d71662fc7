"""The store is sound: damage is refused before anything is written (what is readable is salvaged
by `recover.py`).

- `check_integrity` runs SQLite's ``PRAGMA quick_check`` (every b-tree page, cell and freelist
  page is read and its structure checked; it is O(size), without the index-versus-table
  comparison of ``integrity_check``). Every open of an existing store runs it: a writer's before
  the migrations, the lease or anything else touch the file, a reader's before it answers
  (benchmarks/bench_integrity.py measures it at Banished scale). Damage a later read meets is
  the same one-line `DamagedStoreError`.
- `damage_error` turns SQLite's own words for damage (``SQLITE_CORRUPT``: "database disk image
  is malformed"; ``SQLITE_NOTADB``: "file is not a database") into that one line, naming the way
  back: ``terrarium recover``.
"""

from __future__ import annotations

import sqlite3

from terrarium_dagster.errors import DamagedStoreError

# SQLite's names for a file that is not a sound database.
DAMAGE_ERRORS = frozenset({"SQLITE_CORRUPT", "SQLITE_NOTADB", "SQLITE_CORRUPT_INDEX"})
_DAMAGE_WORDS = ("malformed", "not a database", "corrupt")


def recover_hint(where: str) -> str:
    return f"recover what is readable with `terrarium recover --db {where} --out NEW.db`"


def is_damage(exc: sqlite3.Error) -> bool:
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name.startswith("SQLITE_CORRUPT") or name == "SQLITE_NOTADB":
        return True
    text = str(exc).lower()
    return any(word in text for word in _DAMAGE_WORDS)


def damage_error(where: str, detail: str) -> DamagedStoreError:
    return DamagedStoreError(
        f"annotator store {where} is damaged ({detail}); nothing was written; {recover_hint(where)}"
    )


def check_integrity(conn: sqlite3.Connection, where: str) -> None:
    """Refuse a damaged store with one line: SQLite's quick_check, first problem named."""
    try:
        rows = conn.execute("PRAGMA quick_check(3)").fetchall()
    except sqlite3.DatabaseError as exc:
        if is_damage(exc):
            raise damage_error(where, f"quick_check: {exc}") from exc
        raise
    problems = [str(row[0]) for row in rows if str(row[0]) != "ok"]
    if problems:
        more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
        raise damage_error(where, f"quick_check: {problems[0]}{more}")
