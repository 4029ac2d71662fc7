"""The store's one SQLite connection and its transactions.

`StoreConnection` opens (and migrates) the file and provides `transaction()`: ``BEGIN IMMEDIATE``
... ``COMMIT``/``ROLLBACK`` at the outermost level, a ``SAVEPOINT`` when nested. Every public
method of the store runs under `guarded`: one lock (so a store shared between threads serializes its
use of the connection) and SQLite errors turned into `StoreError`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Concatenate, Generic, ParamSpec, Self, TypeVar

from terrarium_dagster.errors import DiskSpaceError, InputError, StoreError, TerrariumError
from terrarium_dagster.jsonform import canonical_json
from terrarium_dagster.store.integrity import (
    check_integrity,
    damage_error,
    empty_store_error,
    is_damage,
    refuse_not_a_store,
)
from terrarium_dagster.store.records import _filters
from terrarium_dagster.store.schema import (
    MIGRATIONS,
    migrate,
    refuse_unversioned,
    schema_version,
)

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S", bound="StoreConnection | Aggregate")

MEMORY = ":memory:"
_SQLITE_URL = "sqlite:///"


def guarded(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """Run a public store method under the store lock, with SQLite errors as StoreError."""

    @functools.wraps(method)
    def wrapper(self: S, *args: P.args, **kwargs: P.kwargs) -> R:
        with self._lock:
            if self._conn is None:
                raise StoreError(f"annotator store {self.where} is closed")
            try:
                return method(self, *args, **kwargs)
            except sqlite3.Error as exc:
                what = f"{method.__name__} failed on {self.where}"
                raise store_error(what, exc, self.where) from exc

    return wrapper


# SQLite's answers to a write the file system refused for want of room: SQLITE_FULL for a full
# disk (ENOSPC); an I/O error when a file size limit (RLIMIT_FSIZE, `ulimit -f`) stops the write.
_SPACE_ERRORS = frozenset(
    {"SQLITE_FULL", "SQLITE_IOERR_WRITE", "SQLITE_IOERR_SHMSIZE", "SQLITE_IOERR_TRUNCATE"}
)
LOW_SPACE_BYTES = 16 * 1024 * 1024


def space_shortage(exc: sqlite3.Error, where: str | Path) -> str | None:
    """Why a write failed for want of room (a phrase for the user), or None when it did not."""
    name = getattr(exc, "sqlite_errorname", "")
    if name not in _SPACE_ERRORS:
        return None
    try:
        import resource  # POSIX only

        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        if limit != resource.RLIM_INFINITY:
            return f"not enough disk space: a file size limit of {limit} bytes is set (ulimit -f)"
    except (ImportError, OSError, ValueError):
        pass
    folder = Path(where).expanduser().resolve().parent
    try:
        free: int | None = shutil.disk_usage(folder).free
    except OSError:
        free = None
    if name == "SQLITE_FULL" or (free is not None and free < LOW_SPACE_BYTES):
        left = f" ({free} bytes free in {folder})" if free is not None else ""
        return f"not enough disk space: the disk is full{left}"
    return None


def store_error(what: str, exc: sqlite3.Error, where: str | Path) -> TerrariumError:
    """`what` failed with `exc`: a DiskSpaceError naming the shortage when that was the cause, a
    DamagedStoreError when the file is damaged or not a database, an InputError when the file
    cannot be opened at all (a folder the user cannot enter, a path under a file)."""
    shortage = space_shortage(exc, where)
    if shortage is not None:
        return DiskSpaceError(f"{what}: {shortage}")
    if is_damage(exc):
        return damage_error(str(where), str(exc))
    if getattr(exc, "sqlite_errorname", "") == "SQLITE_CANTOPEN":
        return InputError(f"{what}: {exc} (check the path and its folder's permissions)")
    return StoreError(f"{what}: {exc}")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


dump_json = canonical_json  # everything the store writes as JSON


def json_payload(value: object, what: str) -> str:
    """A JSON document given as text (kept byte for byte) or as a dict/list (serialized)."""
    if isinstance(value, str):
        try:
            json.loads(value)
        except ValueError as exc:
            raise InputError(f"{what} is not valid JSON: {exc}") from exc
        return value
    if isinstance(value, dict | list):
        try:
            return dump_json(value)
        except (TypeError, ValueError) as exc:
            raise InputError(f"{what} cannot be serialized as JSON: {exc}") from exc
    raise InputError(f"{what} must be a JSON string, a dict or a list, not {type(value).__name__}")


def resolve_location(path: str | Path) -> tuple[str, str]:
    """(what sqlite3.connect gets, how messages name it). Accepts a path, ":memory:" or sqlite:///."""
    if isinstance(path, Path):
        location = path
    elif isinstance(path, str):
        if path == MEMORY:
            return MEMORY, MEMORY
        text = path
        if text.startswith(_SQLITE_URL):
            text = text[len(_SQLITE_URL) :]
        elif "://" in text:
            raise StoreError(
                f"unsupported annotator store URL {path!r}: give a file path or a sqlite:/// URL"
            )
        if not text:
            raise InputError("annotator store path is empty")
        location = Path(text)
    else:
        raise StoreError(f"annotator store path must be a str or Path, not {type(path).__name__}")
    location = location.expanduser()
    if location.is_dir():
        raise InputError(f"annotator store path {location} is a directory, not a file")
    try:
        location.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(
            f"cannot create the folder of annotator store {location}: {exc.strerror}"
        ) from exc
    return str(location), str(location)


# the files beside a store, by what they are (-calls: the call ledger; -lease: the writer's
# heartbeat), and every file a store is
SIDE_FILES = {
    "-wal": "write-ahead log",
    "-shm": "shared-memory index",
    "-journal": "rollback journal",
    "-calls": "call ledger",
    "-lease": "writer's lease",
}
STORE_FILE_SUFFIXES = ("", *SIDE_FILES)
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def pointing(option: str, value: str) -> str:
    """How a message asks for `value` where `option` names what gave the store's path: an
    option is given it (`give --db store.db`), a variable or a configuration file's setting is
    set to it (`set TERRARIUM_DB to store.db`)."""
    return f"give {option} {value}" if option.startswith("--") else f"set {option} to {value}"


def refuse_side_file(
    db: str | Path, option: str = "--db", *, store: bool = True, database: bool | None = None
) -> None:
    """Refuse, in one line, a path that names a side file of a file beside it (`store.db-calls`,
    `store.db-lease`, `store.db-wal`... of `store.db`): read, it is no store (an empty ledger
    read as an empty store, a lease as notes); written, a database there is taken for that
    file's (SQLite reads a store made at `store.db-wal` as `store.db`'s log, and the next
    opening of `store.db` removes it), and a folder there is in the way of that file. The one
    rule for every command given a store (`--db`, or `TERRARIUM_DB` or the configuration
    file's `db`: `option` names where the path came from) or making a file or a folder
    (`recover --out`, `import --out`, `export --out`: not a `store`, so another name is asked
    for); a store's own name never ends so."""
    path = str(db).removeprefix(_SQLITE_URL)
    sqlite_file = store if database is None else database  # a database is written there
    for suffix, kind in SIDE_FILES.items():
        stem = path.removesuffix(suffix)
        if stem == path or not stem:
            continue
        there = Path(stem).expanduser().is_file()
        # SQLite's own side files, for a database, whether their store is there yet or not: a
        # database made at `new.db-wal` is taken for the log of a `new.db` made later
        if there or (sqlite_file and suffix in SQLITE_SIDE_FILES):
            given = f"{option} {db}" if option.startswith("--") else f"{option} ({db})"
            instead = pointing(option, stem) if store else f"give {option} another name"
            whose = (
                f"the {kind} beside {stem} (a side file of that store)"
                if there
                else f"the {kind} SQLite keeps beside a store at {stem}"
            )
            raise InputError(f"{given} names {whose}; nothing was written; {instead}")


_READERS = "`status`, `export`, `lineage` and `snapshots` read it as it is"


def refuse_read_only(target: Path, where: str) -> None:
    """Refuse, in one line and before SQLite opens it, to write a store that cannot be written:
    its file read-only (`chmod 444`, a read-only mount) or its folder, where the WAL, the call
    ledger and the lease go beside it. SQLite opened such a store read-only without a word, and
    the first write failed as "acquire_writer_lease failed on store.db: attempt to write a
    readonly database", exit 1, the WAL files made beside a read-only file by then. A store
    not there yet is `resolve_location`'s and `unwritable_reason`'s to judge."""
    if not target.is_file():
        return
    if not os.access(target, os.W_OK):
        raise InputError(
            f"annotator store {where} is read-only (its file cannot be written); nothing was "
            f"written; make it writable to write to it (chmod u+w), or copy it; {_READERS}"
        )
    folder = target.parent
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(
            f"annotator store {where} is in a folder that cannot be written ({folder}), where "
            f"its log, call ledger and lease go beside it; nothing was written; make the folder "
            f"writable, or copy the store to one that is; {_READERS}"
        )


def _absent_store_files(target: str) -> frozenset[str]:
    """The store's files (the database, its WAL, shared memory and journal) not there yet."""
    if target == MEMORY:
        return frozenset()
    return frozenset(
        target + suffix for suffix in STORE_FILE_SUFFIXES if not Path(target + suffix).exists()
    )


def let_go_of_wal(location: Path) -> None:
    """Remove the empty WAL files a reader's opening made beside a store in WAL mode (`status`,
    `export`: a ``mode=ro`` connection cannot remove them itself). A plain connection closed as
    the store's last one does: SQLite checkpoints the WAL, which a reader never wrote, and deletes
    both files; where another connection still uses them (a run writing), they stay."""
    with contextlib.suppress(sqlite3.Error, OSError):
        conn = sqlite3.connect(f"{location.resolve().as_uri()}?mode=rw", uri=True, timeout=0)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            conn.close()


def remove_store_files(target: str | Path, *, only: frozenset[str] | None = None) -> None:
    """Delete a store's files (those in `only`, when given): a store that was being created and
    failed leaves nothing behind."""
    if str(target) == MEMORY:
        return
    for suffix in STORE_FILE_SUFFIXES:
        name = f"{target}{suffix}"
        if only is None or name in only:
            with contextlib.suppress(OSError):
                Path(name).unlink(missing_ok=True)


def _empty_file_times(target: str) -> tuple[int, int] | None:
    """The access and modification times of `target` when it is an empty file (`touch
    glossary.db`: a store is made there as where there was none), else None."""
    if target == MEMORY:
        return None
    try:
        found = Path(target).stat()
    except OSError:
        return None
    if found.st_size or not Path(target).is_file():
        return None
    return found.st_atime_ns, found.st_mtime_ns


def _undo_creation(target: str, made: frozenset[str], emptied: tuple[int, int] | None) -> None:
    """Leave `target`'s folder as it was before a store was made there: the files that were not
    there (`made`) removed, an empty file the store was made in (`emptied`: its times) empty
    again, with its times."""
    remove_store_files(target, only=made)
    if emptied is not None:
        with contextlib.suppress(OSError):
            os.truncate(target, 0)
            os.utime(target, ns=emptied)


class StoreConnection:
    """One SQLite connection in autocommit mode with explicit, nestable transactions."""

    def __init__(
        self, path: str | Path, *, busy_timeout_ms: int = 10_000, read_only: bool = False
    ) -> None:
        """Open the store at `path`. `read_only` (the readers: status, export, lineage, snapshots,
        score) opens an existing store with ``mode=ro`` and ``query_only``: it never writes, never
        migrates, never waits for a writer (WAL readers see the last commit), and works on a file
        or folder the user cannot write (then through ``immutable=1`` when SQLite cannot set up
        the shared WAL index beside the file, or when the file cannot be written and no writer's
        log is beside it: the WAL files are not made where nothing could remove them)."""
        self.read_only = read_only
        self.created = False  # True when this connection made the store (a new or empty file)
        self._made: frozenset[str] = frozenset()  # the store's files that were not there
        self._emptied: tuple[int, int] | None = None  # an empty file's times, the store made in it
        self._lock = threading.RLock()
        self._depth = 0
        self._read_only_since: int | None = None
        self._conn: sqlite3.Connection | None = None
        self._wal_made_beside: Path | None = None  # a reader's: the WAL files it made
        if read_only:
            self.where = str(path)
            refuse_not_a_store(Path(path).expanduser(), self.where, writer=False)
            location = Path(path).expanduser()
            wal = frozenset(f"{location}{suffix}" for suffix in ("-wal", "-shm"))
            absent = wal <= _absent_store_files(str(location))
            try:
                conn = self._open_read_only(path, busy_timeout_ms)
            except BaseException:  # refused (a damaged file): the WAL files it made go too
                if absent and not wal <= _absent_store_files(str(location)):
                    let_go_of_wal(location)
                raise
            if absent and not wal <= _absent_store_files(str(location)):
                self._wal_made_beside = location
        else:
            target, self.where = resolve_location(path)
            if target != MEMORY:
                refuse_not_a_store(Path(target), self.where)
                refuse_read_only(Path(target), self.where)
            new_files = _absent_store_files(target)
            emptied = _empty_file_times(target)
            creating = target in new_files or emptied is not None  # a store made here, not opened
            try:
                conn = sqlite3.connect(
                    target,
                    isolation_level=None,
                    check_same_thread=False,
                    timeout=busy_timeout_ms / 1000,
                )
            except sqlite3.Error as exc:
                raise store_error(f"cannot open annotator store {self.where}", exc, target) from exc
        try:
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            self._check_fts5(conn)
            if read_only:
                check_integrity(conn, self.where)  # a reader answers from a sound store only
                self._check_version(conn)
                self._conn = conn
                return
            if target != MEMORY and target not in new_files:
                # before anything writes (WAL mode, migrations, the lease): a damaged store is
                # refused with one line (benchmarks/bench_integrity.py: the cost at scale)
                check_integrity(conn, self.where)
                refuse_unversioned(conn, self.where)  # someone else's database, a reset one
            conn.execute("PRAGMA journal_mode = WAL").fetchone()
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA synchronous = NORMAL")
            blank = schema_version(conn) == 0
            self.created = migrate(conn, self.where) > 0 and blank and creating
            if self.created:
                self._made, self._emptied = new_files, emptied
        except sqlite3.Error as exc:
            conn.close()
            if read_only:
                self._let_go()
                raise store_error(f"cannot open annotator store {self.where}", exc, path) from exc
            # A store being created leaves none of its files behind (an empty file it was made
            # in, empty); an existing store's files are left alone (its WAL may be another
            # process's).
            if creating:
                _undo_creation(target, new_files, emptied)
            verb = "create" if creating else "open"
            error = store_error(f"cannot {verb} annotator store {self.where}", exc, self.where)
            if creating and isinstance(error, DiskSpaceError):
                error = DiskSpaceError(f"{error}; nothing was created")
            raise error from exc
        except BaseException:
            conn.close()
            if read_only:
                self._let_go()  # a store refused as damaged: its folder as it was
            elif creating:
                _undo_creation(target, new_files, emptied)
            raise
        self._conn = conn

    def _open_read_only(self, path: str | Path, busy_timeout_ms: int) -> sqlite3.Connection:
        if str(path) == ":memory:":
            raise StoreError("a read-only store needs a file, not :memory:")
        location = Path(path).expanduser().resolve()
        if not location.is_file():
            raise StoreError(f"no annotator store at {self.where}")
        uri = location.as_uri()
        last: sqlite3.Error | None = None
        # mode=ro first (sees a live writer's commits); immutable=1 when the folder or file
        # cannot be written, so SQLite cannot create the WAL index (nobody can write there then).
        queries = ("?mode=ro", "?mode=ro&immutable=1")
        if not os.access(location, os.W_OK) and not Path(f"{location}-wal").exists():
            # a file this process cannot write, no writer's log beside it: in a folder it can
            # write, mode=ro made the WAL files there, and nothing could remove them (the
            # connection `let_go_of_wal` opens to do so cannot write the file either)
            queries = queries[1:]
        for query in queries:
            try:
                conn = sqlite3.connect(
                    uri + query,
                    uri=True,
                    isolation_level=None,
                    check_same_thread=False,
                    timeout=busy_timeout_ms / 1000,
                )
                conn.execute("PRAGMA query_only = ON")
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
                return conn
            except sqlite3.Error as exc:
                last = exc
                if "conn" in locals():
                    conn.close()
                if is_damage(exc):
                    break  # a damaged file is damaged however it is opened
        assert last is not None
        raise store_error(f"cannot open annotator store {self.where} to read", last, self.where)

    def _check_version(self, conn: sqlite3.Connection) -> None:
        refuse_unversioned(conn, self.where)
        current, target = schema_version(conn), len(MIGRATIONS)
        if current > target:
            raise StoreError(
                f"annotator store {self.where} has schema version {current}, newer than this "
                f"terrarium-dagster understands ({target}); upgrade terrarium-dagster to open it"
            )
        if current == 0:  # no table at all: an empty database (refuse_unversioned let it by)
            raise empty_store_error(self.where)
        if current < target:
            raise InputError(
                f"annotator store {self.where} has schema version {current}, older than this "
                f"terrarium-dagster's ({target}); run `terrarium run` once to upgrade it"
            )

    @staticmethod
    def _check_fts5(conn: sqlite3.Connection) -> None:
        options = {row[0] for row in conn.execute("PRAGMA compile_options")}
        if "ENABLE_FTS5" not in options:
            raise StoreError("this Python's SQLite has no FTS5; the annotator store needs it")

    @classmethod
    def open(cls, path: str | Path, **kwargs: Any) -> Self:
        return cls(path, **kwargs)

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"annotator store {self.where} is closed")
        return self._conn

    @property
    def in_transaction(self) -> bool:
        return self._depth > 0

    def close(self) -> None:
        with self._lock:
            if self._conn is None:
                return
            if self._depth:
                raise StoreError(f"cannot close annotator store {self.where} inside a transaction")
            self._conn.close()
            self._conn = None
            self._let_go()

    def discard(self) -> None:
        """Close a store this connection made (`created`) and leave its folder as it was before:
        a command refused after making it keeps nothing of it (a new file removed, an empty
        file it was made in empty again). A store that was there already is only closed."""
        self.close()
        if self.created:
            _undo_creation(self.where, self._made, self._emptied)

    def _let_go(self) -> None:
        """A reader's connection closed: the WAL files its opening made are removed."""
        if self._wal_made_beside is not None:
            let_go_of_wal(self._wal_made_beside)
            self._wal_made_beside = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def transaction(self, *, deferred: bool = False) -> Iterator[None]:
        """A write transaction. Outermost: ``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on any
        exception). Nested: a ``SAVEPOINT`` rolled back to on exception, so the outer transaction
        can go on. Changes are visible to other connections only after the outermost commit.

        `deferred` (a scene: reads, model calls, then writes) starts with ``BEGIN`` and takes the
        write lock only at the first nested `transaction()` (every store write is one), so the
        lock is not held while the model thinks before the scene's first write: `why` can log its
        exchange meanwhile. Nothing has been written before that point, so the read snapshot is
        ended and a fresh ``BEGIN IMMEDIATE`` taken (upgrading a WAL read snapshot in place
        fails if anyone committed since; the one-writer lease means only bookkeeping could
        have)."""
        if self.read_only:
            raise StoreError(f"annotator store {self.where} is open read-only; nothing is written")
        with self._lock:
            conn = self.conn
            if self._depth == 0:
                try:
                    conn.execute("BEGIN" if deferred else "BEGIN IMMEDIATE")
                except sqlite3.Error as exc:
                    raise StoreError(f"cannot start a transaction on {self.where}: {exc}") from exc
                self._depth = 1
                self._read_only_since = conn.total_changes if deferred else None
                try:
                    yield
                except BaseException:
                    self._depth = 0
                    self._read_only_since = None
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
                self._depth = 0
                self._read_only_since = None
                try:
                    conn.execute("COMMIT")
                except sqlite3.Error as exc:
                    if conn.in_transaction:
                        with contextlib.suppress(sqlite3.Error):
                            conn.execute("ROLLBACK")
                    raise store_error(f"commit failed on {self.where}", exc, self.where) from exc
            else:
                if self._depth == 1 and self._read_only_since is not None:
                    self._take_write_lock(conn)
                name = f"sp{self._depth}"
                conn.execute(f"SAVEPOINT {name}")
                self._depth += 1
                try:
                    yield
                except BaseException:
                    self._depth -= 1
                    conn.execute(f"ROLLBACK TO {name}")
                    conn.execute(f"RELEASE {name}")
                    raise
                self._depth -= 1
                conn.execute(f"RELEASE {name}")

    def _take_write_lock(self, conn: sqlite3.Connection) -> None:
        """The deferred transaction's first write: end the read snapshot (nothing written yet)
        and take the write lock (waits up to the busy timeout for a short bookkeeping write)."""
        unwritten = conn.total_changes == self._read_only_since
        self._read_only_since = None
        if not unwritten:  # something wrote directly: SQLite holds the write lock already
            return
        try:
            conn.execute("COMMIT")
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot take the write lock on {self.where}: {exc}") from exc

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """A consistent read: a deferred transaction when none is open, else the open one."""
        with self._lock:
            conn = self.conn
            if self._depth:
                yield conn
                return
            conn.execute("BEGIN")
            self._depth = 1
            try:
                yield conn
            finally:
                self._depth = 0
                if conn.in_transaction:
                    conn.execute("COMMIT")


class RowsAsRead(Generic[R]):
    """Records made of rows, kept by each row's values: a row read again, unchanged, is the
    record made before (a frozen model: nothing changes it); a row changed, or rolled back, has
    other values and is made anew. For the reads a run repeats over rows that seldom change
    (every thread's state at each thread, every source at each chapter's as-of view)."""

    def __init__(self, make: Callable[[sqlite3.Row], R], *, most: int) -> None:
        self._make = make
        self._most = most  # rows kept at most (all let go past it)
        self._kept: dict[tuple[object, ...], R] = {}

    def __call__(self, row: sqlite3.Row) -> R:
        values = tuple(row)
        found = self._kept.get(values)
        if found is None:
            if len(self._kept) >= self._most:
                self._kept.clear()
            found = self._kept[values] = self._make(row)
        return found


class Aggregate:
    """One part of the store (glossary, provenance, history, rollback, runs, memory, progress,
    curation) over the store's one shared connection: its writes join the store's open
    transaction (one per scene)."""

    def __init__(self, store: StoreConnection) -> None:
        self.store = store  # the store's connection (an aggregate composes the others it reads)

    @property
    def where(self) -> str:
        return self.store.where

    @property
    def conn(self) -> sqlite3.Connection:
        return self.store.conn

    @property
    def _lock(self) -> Any:
        return self.store._lock

    @property
    def _conn(self) -> sqlite3.Connection | None:
        return self.store._conn

    def transaction(self, *, deferred: bool = False) -> AbstractContextManager[None]:
        return self.store.transaction(deferred=deferred)

    def stored(self, table: str, row_id: int) -> sqlite3.Row:
        """The row of `table` whose id is `row_id`; StoreError when there is none."""
        row = self.conn.execute(f"SELECT * FROM {table} WHERE id = ?", (row_id,)).fetchone()
        if row is None:
            raise StoreError(f"no {table} {row_id} in the annotator store")
        return row

    def records(
        self, record: Callable[[sqlite3.Row], R], sql: str, params: Sequence[object] = ()
    ) -> list[R]:
        """What `record` makes of each row `sql` selects, in its order."""
        return [record(row) for row in self.conn.execute(sql, params).fetchall()]

    def insert(self, table: str, row: Mapping[str, object]) -> int:
        """Add one row to `table`, its values by column name; returns its id."""
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        cursor = self.conn.execute(
            f"INSERT INTO {table} ({columns}) VALUES ({marks})", tuple(row.values())
        )
        return int(cursor.lastrowid or 0)

    def stored_rows(self, table: str, **columns: object) -> list[sqlite3.Row]:
        """The rows of `table` whose `columns` hold the given values (None: any), in id order."""
        where, params = _filters(**columns)
        return self.conn.execute(f"SELECT * FROM {table}{where} ORDER BY id", params).fetchall()

    def reading(self) -> AbstractContextManager[sqlite3.Connection]:
        return self.store.reading()
