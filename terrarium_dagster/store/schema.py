"""Schema of the annotator store and its versioned migrations.

The schema version is SQLite's ``PRAGMA user_version``: the number of migrations applied.
`MIGRATIONS[i]` brings a store from version ``i`` to ``i + 1``; each is a sequence of SQL
statements applied, with the version bump, inside one ``BEGIN IMMEDIATE`` transaction, so a failed
migration leaves the store as it was. Migrations are append-only: never edit a published one.

Design notes (so later features need no breaking migration):
- statuses and actions that may grow (revision.action, thread_state.status, snapshot.kind) are
  checked in code, not with CHECK constraints (which SQLite cannot alter in place);
- entry, thread_state and revision have JSON ``extra``/``detail`` columns for new facts;
- nothing is ever deleted: entries and aliases are soft-deleted, provenance rows superseded.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Sequence

from terrarium_dagster.errors import CorpusAsStoreError, InputError, StoreError

Migration = Sequence[str] | Callable[[sqlite3.Connection], None]

_V1: tuple[str, ...] = (
    """
    CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value TEXT
    )
    """,
    """
    CREATE TABLE run (
        id          TEXT PRIMARY KEY,
        started_at  TEXT NOT NULL,
        finished_at TEXT,
        status      TEXT NOT NULL DEFAULT 'running',
        config      TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(config)),
        error       TEXT
    )
    """,
    """
    CREATE TABLE entry (
        id                INTEGER PRIMARY KEY AUTOINCREMENT,
        term              TEXT NOT NULL,
        norm_term         TEXT NOT NULL,
        definition        TEXT NOT NULL DEFAULT '',
        status            TEXT NOT NULL DEFAULT 'tentative'
                          CHECK (status IN ('tentative', 'confirmed', 'rejected', 'merged')),
        tags              TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(tags)),
        merged_into       INTEGER REFERENCES entry (id),
        deleted           INTEGER NOT NULL DEFAULT 0 CHECK (deleted IN (0, 1)),
        delete_reason     TEXT,
        first_seen_post   INTEGER,
        first_seen_thread INTEGER,
        last_seen_post    INTEGER,
        last_seen_thread  INTEGER,
        created_revision  INTEGER,
        updated_revision  INTEGER,
        extra             TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(extra)),
        CHECK ((status = 'merged') = (merged_into IS NOT NULL)),
        CHECK (merged_into IS NULL OR merged_into <> id)
    )
    """,
    "CREATE INDEX entry_norm_term ON entry (norm_term)",
    "CREATE INDEX entry_merged_into ON entry (merged_into) WHERE merged_into IS NOT NULL",
    """
    CREATE TABLE revision (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        entry_id    INTEGER REFERENCES entry (id),
        action      TEXT NOT NULL,
        old_value   TEXT CHECK (old_value IS NULL OR json_valid(old_value)),
        new_value   TEXT CHECK (new_value IS NULL OR json_valid(new_value)),
        detail      TEXT CHECK (detail IS NULL OR json_valid(detail)),
        group_id    INTEGER,
        reason      TEXT,
        actor_kind  TEXT NOT NULL,
        run_id      TEXT,
        thread_id   INTEGER,
        scene_id    TEXT,
        snapshot_id INTEGER,
        created_at  TEXT NOT NULL
    )
    """,
    "CREATE INDEX revision_entry ON revision (entry_id, id)",
    "CREATE INDEX revision_thread ON revision (thread_id, id)",
    "CREATE INDEX revision_run ON revision (run_id)",
    """
    CREATE TABLE alias (
        id                  INTEGER PRIMARY KEY AUTOINCREMENT,
        entry_id            INTEGER NOT NULL REFERENCES entry (id),
        alias               TEXT NOT NULL,
        norm_alias          TEXT NOT NULL,
        deleted             INTEGER NOT NULL DEFAULT 0 CHECK (deleted IN (0, 1)),
        revision_id         INTEGER REFERENCES revision (id),
        removed_revision_id INTEGER REFERENCES revision (id)
    )
    """,
    "CREATE INDEX alias_entry ON alias (entry_id, id)",
    "CREATE INDEX alias_norm_live ON alias (norm_alias) WHERE deleted = 0",
    """
    CREATE TABLE provenance (
        id                     INTEGER PRIMARY KEY AUTOINCREMENT,
        entry_id               INTEGER NOT NULL REFERENCES entry (id),
        post_id                INTEGER NOT NULL,
        thread_id              INTEGER NOT NULL,
        quote                  TEXT NOT NULL DEFAULT '',
        revision_id            INTEGER NOT NULL REFERENCES revision (id),
        superseded_revision_id INTEGER REFERENCES revision (id),
        moved_from             INTEGER REFERENCES provenance (id)
    )
    """,
    "CREATE INDEX provenance_entry ON provenance (entry_id, revision_id)",
    "CREATE INDEX provenance_post ON provenance (post_id)",
    "CREATE INDEX provenance_thread ON provenance (thread_id)",
    """
    CREATE VIRTUAL TABLE entry_fts USING fts5 (
        term, aliases, definition,
        tokenize = 'unicode61 remove_diacritics 2'
    )
    """,
    """
    CREATE TABLE thread_state (
        thread_id       INTEGER PRIMARY KEY,
        thread_key      TEXT NOT NULL,
        position        INTEGER NOT NULL,
        status          TEXT NOT NULL DEFAULT 'pending',
        scenes_total    INTEGER NOT NULL DEFAULT 0,
        scenes_done     INTEGER NOT NULL DEFAULT 0,
        cursor_scene_id TEXT,
        run_id          TEXT,
        end_revision_id INTEGER,
        checkpoint_id   INTEGER,
        updated_at      TEXT NOT NULL,
        extra           TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(extra))
    )
    """,
    "CREATE INDEX thread_state_position ON thread_state (position)",
    """
    CREATE TABLE agent_call (
        id                INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id            TEXT,
        thread_id         INTEGER,
        scene_id          TEXT,
        purpose           TEXT NOT NULL,
        model             TEXT,
        prompt_tokens     INTEGER NOT NULL DEFAULT 0,
        cached_tokens     INTEGER NOT NULL DEFAULT 0,
        completion_tokens INTEGER NOT NULL DEFAULT 0,
        latency_ms        REAL NOT NULL DEFAULT 0,
        finish_reason     TEXT,
        error             TEXT,
        created_at        TEXT NOT NULL
    )
    """,
    "CREATE INDEX agent_call_run ON agent_call (run_id)",
    "CREATE INDEX agent_call_thread ON agent_call (thread_id)",
    """
    CREATE TABLE compaction (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id        TEXT,
        thread_id     INTEGER,
        scene_id      TEXT,
        tier          TEXT NOT NULL,
        tokens_before INTEGER NOT NULL,
        tokens_after  INTEGER NOT NULL,
        entry_ids     TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(entry_ids)),
        summary       TEXT,
        created_at    TEXT NOT NULL
    )
    """,
    "CREATE INDEX compaction_thread ON compaction (thread_id)",
    "CREATE INDEX compaction_run ON compaction (run_id)",
    """
    CREATE TABLE curator_decision (
        id                 INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id             TEXT,
        thread_id          INTEGER,
        entry_id           INTEGER REFERENCES entry (id),
        decision           TEXT NOT NULL,
        target_entry_id    INTEGER REFERENCES entry (id),
        reasoning          TEXT,
        revision_id        INTEGER REFERENCES revision (id),
        undone_revision_id INTEGER REFERENCES revision (id),
        created_at         TEXT NOT NULL
    )
    """,
    "CREATE INDEX curator_decision_thread ON curator_decision (thread_id)",
    "CREATE INDEX curator_decision_entry ON curator_decision (entry_id)",
    """
    CREATE TABLE context_state (
        id         INTEGER PRIMARY KEY CHECK (id = 1),
        state      TEXT NOT NULL CHECK (json_valid(state)),
        updated_at TEXT NOT NULL
    )
    """,
    """
    CREATE TABLE snapshot (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        kind        TEXT NOT NULL,
        thread_id   INTEGER,
        scene_id    TEXT,
        run_id      TEXT,
        state       TEXT NOT NULL CHECK (json_valid(state)),
        revision_id INTEGER,
        created_at  TEXT NOT NULL
    )
    """,
    "CREATE INDEX snapshot_thread ON snapshot (thread_id)",
    """
    CREATE TABLE summon_log (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        snapshot_id INTEGER NOT NULL REFERENCES snapshot (id),
        run_id      TEXT,
        exchange    TEXT NOT NULL CHECK (json_valid(exchange)),
        created_at  TEXT NOT NULL
    )
    """,
    "CREATE INDEX summon_log_snapshot ON summon_log (snapshot_id)",
)

# Version 2: the one-writer lease (a single row while a writer holds the store).
_V2: Migration = (
    """
    CREATE TABLE writer_lease (
        id        INTEGER PRIMARY KEY CHECK (id = 1),
        run_id    TEXT NOT NULL,
        pid       INTEGER NOT NULL,
        host      TEXT NOT NULL,
        since     TEXT NOT NULL,
        heartbeat TEXT NOT NULL
    )
    """,
)

# Version 3: every request on the books: a call row carries its ledger key (store/ledger.py),
# so a call settled from the ledger twice (after a kill) is one row.
_V3: Migration = (
    "ALTER TABLE agent_call ADD COLUMN request_key TEXT",
    "CREATE UNIQUE INDEX agent_call_request_key ON agent_call (request_key) "
    "WHERE request_key IS NOT NULL",
)

# Version 4: each model call names the server (replica) it went to.
_V4: Migration = ("ALTER TABLE agent_call ADD COLUMN server TEXT",)

# Version 5: a living corpus: the hash of every post used as a source, as it was when first
# cited, and what the last check of the corpus found (store/sources.py).
_V5: Migration = (
    """
    CREATE TABLE source_post (
        post_id     INTEGER PRIMARY KEY,
        thread_id   INTEGER NOT NULL,
        text_hash   TEXT NOT NULL,
        recorded_at TEXT NOT NULL,
        change      TEXT,
        quotes_hold INTEGER,
        checked_at  TEXT
    )
    """,
)

# Version 6: the reader's edition (store/editions.py): each entry's reader-facing text as of a
# thread, written from the entry's evidence up to that thread (its revisions, the posts it was
# shown, the request that wrote it), and each thread whose edition is complete, with the glossary
# boundary it was written from (a thread annotated again makes its edition stale, never erased).
_V6: Migration = (
    """
    CREATE TABLE edition (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        entry_id    INTEGER NOT NULL REFERENCES entry (id),
        thread_id   INTEGER NOT NULL,
        position    INTEGER NOT NULL,
        revision_id INTEGER NOT NULL,
        text        TEXT NOT NULL,
        outcome     TEXT NOT NULL,
        revisions   TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(revisions)),
        posts       TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(posts)),
        request     TEXT,
        attempts    INTEGER NOT NULL DEFAULT 0,
        tokens      INTEGER NOT NULL DEFAULT 0,
        run_id      TEXT,
        created_at  TEXT NOT NULL,
        UNIQUE (entry_id, thread_id, revision_id)
    )
    """,
    "CREATE INDEX edition_position ON edition (position, entry_id)",
    """
    CREATE TABLE edition_thread (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        thread_id   INTEGER NOT NULL,
        position    INTEGER NOT NULL,
        revision_id INTEGER NOT NULL,
        rewritten   INTEGER NOT NULL,
        requests    INTEGER NOT NULL,
        tokens      INTEGER NOT NULL,
        run_id      TEXT,
        created_at  TEXT NOT NULL,
        UNIQUE (thread_id, revision_id)
    )
    """,
)

MIGRATIONS: tuple[Migration, ...] = (_V1, _V2, _V3, _V4, _V5, _V6)
SCHEMA_VERSION = len(MIGRATIONS)


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def refuse_unversioned(conn: sqlite3.Connection, where: str) -> None:
    """A file at schema version 0 is a new, empty store; one that holds tables is not (someone
    else's database, or a store whose version was reset): refused with one line, not migrated
    into (which would fail half-way on the first table that exists, or write into a stranger)."""
    if schema_version(conn) != 0:
        return
    tables = [
        row[0]
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name"
        )
    ]
    if not tables:
        return
    if "meta" in tables and "entry" in tables:
        raise InputError(
            f"annotator store {where} has the store's tables but schema version 0 (its "
            "version was reset); nothing was written; recover it with "
            f"`terrarium recover --db {where} --out NEW.db`"
        )
    if {"thread", "post"} <= set(tables):
        raise CorpusAsStoreError(where)
    shown = ", ".join(tables[:5]) + (" ..." if len(tables) > 5 else "")
    raise InputError(
        f"{where} is an SQLite database but not an annotator store (it holds tables {shown}); "
        "nothing was written; give a new file or an annotator store"
    )


def migrate(
    conn: sqlite3.Connection, where: str, migrations: Sequence[Migration] = MIGRATIONS
) -> int:
    """Bring the store to the newest schema; returns the number of migrations applied.

    ``conn`` must be in autocommit mode (``isolation_level=None``) and outside a transaction.
    Opening a store whose version is newer than this code knows is refused (StoreError).
    """
    target = len(migrations)
    current = schema_version(conn)
    if current > target:
        raise StoreError(
            f"annotator store {where} has schema version {current}, newer than this "
            f"terrarium-dagster understands ({target}); upgrade terrarium-dagster to open it"
        )
    if current == target:
        return 0
    refuse_unversioned(conn, where)
    conn.execute("BEGIN IMMEDIATE")
    try:
        # Re-read under the write lock: another process may have migrated meanwhile.
        current = schema_version(conn)
        if current > target:
            raise StoreError(
                f"annotator store {where} has schema version {current}, newer than this "
                f"terrarium-dagster understands ({target})"
            )
        applied = 0
        for version in range(current, target):
            step = migrations[version]
            if callable(step):
                step(conn)
            else:
                for statement in step:
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {version + 1}")
            applied += 1
        conn.execute("COMMIT")
    except BaseException:
        # A failed COMMIT (a full disk) may have rolled back already: the error that stopped the
        # migration is the one to report, not "cannot rollback - no transaction is active".
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise
    return applied
