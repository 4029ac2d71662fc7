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
  back: ``terrarium recover``. SQLite's report itself (which pages, which cells) goes to the log
  at debug level, never into the message.
- `refuse_not_a_store` names a file that is not an SQLite database at all (notes, a book, a
  JSON file given as ``--db``) as what it is: not a store, rather than a damaged one (which
  `recover` could not help).
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

from terrarium_dagster.errors import DamagedStoreError, InputError

log = logging.getLogger(__name__)
SQLITE_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database file

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


def empty_store_error(where: str) -> InputError:
    """An empty file given to a command that reads a store: nothing to read (nor to write to)."""
    return InputError(
        f"{where} is empty, not an annotator store yet: nothing to read; "
        f"`terrarium run --db {where}` builds a store there"
    )


def refuse_not_a_store(path: Path, where: str, *, writer: bool = True) -> None:
    """Refuse, in one line, a non-empty file that is not an SQLite database at all (a new file
    name is offered to a `writer` only: a reader has nothing to read in a new store)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(len(SQLITE_HEADER))
    except OSError:
        return  # unreadable or absent: opening it says why
    if head and head != SQLITE_HEADER:
        raise InputError(
            f"{where} is not an annotator store (not an SQLite database); nothing was written; "
            "give --db a store `terrarium run` made"
            + (", or a new file name for a new store" if writer else "")
        )


def check_integrity(conn: sqlite3.Connection, where: str) -> None:
    """Refuse a damaged store with one line (SQLite's quick_check); its report is logged at
    debug level."""
    try:
        rows = conn.execute("PRAGMA quick_check(100)").fetchall()
    except sqlite3.DatabaseError as exc:
        if is_damage(exc):
            log.debug("quick_check of %s: %s", where, exc)
            raise damage_error(where, " ".join(str(exc).split())) from exc
        raise
    problems = [str(row[0]) for row in rows if str(row[0]) != "ok"]
    if problems:
        log.debug("quick_check of %s found:\n%s", where, "\n".join(problems))
        count = f"{len(problems)}+" if len(problems) >= 100 else str(len(problems))
        found = f"{count} problem{'' if count == '1' else 's'}"
        raise damage_error(where, f"SQLite's integrity check found {found}; -v logs them")
