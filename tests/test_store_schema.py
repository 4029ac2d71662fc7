"""Annotator store: file, schema migrations, connection settings and transactions."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from terrarium_dagster.errors import InputError, StoreError
from terrarium_dagster.store import SCHEMA_VERSION, Actor, GlossaryStore, ProvenanceIn
from terrarium_dagster.store.schema import MIGRATIONS, migrate, schema_version

AGENT = Actor("agent", run_id="run-1", thread_id=100, scene_id="100#101")


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "store" / "terrarium.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[GlossaryStore]:
    with GlossaryStore(db_path) as opened:
        yield opened


def _count(conn: sqlite3.Connection, table: str) -> int:
    return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


def test_new_store_is_created_at_the_current_schema_version(store: GlossaryStore, db_path: Path):
    assert db_path.is_file()
    assert schema_version(store.conn) == SCHEMA_VERSION == len(MIGRATIONS)


def test_reopening_an_existing_store_applies_no_migration_and_keeps_data(db_path: Path):
    with GlossaryStore(db_path) as first:
        first.glossary.create_entry(AGENT, "Ember-Tithe", "A tax paid in embers.")
    conn = sqlite3.connect(db_path, isolation_level=None)
    try:
        assert migrate(conn, str(db_path)) == 0
    finally:
        conn.close()
    with GlossaryStore(db_path) as second:
        assert schema_version(second.conn) == SCHEMA_VERSION
        assert [entry.term for entry in second.glossary.entries()] == ["Ember-Tithe"]


def test_store_newer_than_the_code_is_refused(db_path: Path):
    GlossaryStore(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    conn.close()
    with pytest.raises(StoreError, match="newer than this terrarium-dagster"):
        GlossaryStore(db_path)


def test_failed_migration_leaves_the_store_at_its_previous_version(tmp_path: Path):
    conn = sqlite3.connect(tmp_path / "m.db", isolation_level=None)
    broken = (*MIGRATIONS, ("CREATE TABLE added_later (a)", "THIS IS NOT SQL"))
    with pytest.raises(sqlite3.OperationalError):
        migrate(conn, "m.db", broken)
    assert schema_version(conn) == 0
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'entry'").fetchone() is None
    assert migrate(conn, "m.db") == len(MIGRATIONS)
    conn.close()


def test_store_runs_in_wal_mode_with_foreign_keys_on(store: GlossaryStore):
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert store.conn.execute("PRAGMA busy_timeout").fetchone()[0] > 0


def test_a_file_that_is_not_sqlite_is_refused_as_not_a_store(tmp_path: Path):
    bogus = tmp_path / "notes.txt"
    bogus.write_text("this is not a database, just some words " * 100)
    with pytest.raises(InputError, match=r"is not an annotator store \(not an SQLite database\)"):
        GlossaryStore(bogus)


def test_unsupported_store_url_is_refused():
    with pytest.raises(StoreError, match="unsupported annotator store URL"):
        GlossaryStore("postgresql://localhost/terrarium")


def test_sqlite_url_opens_the_file(tmp_path: Path):
    target = tmp_path / "via-url.db"
    with GlossaryStore(f"sqlite:///{target}") as opened:
        opened.glossary.create_entry(AGENT, "Keth'ra", "A witch.")
    assert target.is_file()


def test_memory_store_works(tmp_path: Path):
    with GlossaryStore(":memory:") as opened:
        opened.glossary.create_entry(AGENT, "Keth'ra", "A witch.")
        assert opened.glossary.find_by_term("keth’ra") is not None


def test_closed_store_raises_store_error(db_path: Path):
    opened = GlossaryStore(db_path)
    opened.close()
    with pytest.raises(StoreError, match="closed"):
        opened.glossary.entries()


def test_write_while_another_connection_holds_the_lock_is_a_store_error(db_path: Path):
    opened = GlossaryStore(db_path, busy_timeout_ms=50)
    other = sqlite3.connect(db_path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(StoreError, match="locked"):
            opened.glossary.create_entry(AGENT, "Keth'ra", "A witch.")
        other.execute("ROLLBACK")
        opened.glossary.create_entry(AGENT, "Keth'ra", "A witch.")
    finally:
        other.close()
        opened.close()


def test_exception_inside_a_transaction_leaves_nothing(store: GlossaryStore):
    store.glossary.create_entry(AGENT, "Keth'ra", "A witch.")
    before = {t: _count(store.conn, t) for t in ("entry", "alias", "provenance", "revision")}
    with pytest.raises(RuntimeError, match="scene failed"), store.transaction():
        created = store.glossary.create_entry(
            AGENT,
            "Ember-Tithe",
            "A tax paid in embers.",
            aliases=["the tithe"],
            provenance=[ProvenanceIn(post_id=101, thread_id=100, quote="the ember-tithe")],
        )
        store.glossary.update_entry(AGENT, created.id, definition="A tax paid in ash.")
        store.memory.save_context_state({"cursor": "100#101"})
        raise RuntimeError("scene failed")
    after = {t: _count(store.conn, t) for t in ("entry", "alias", "provenance", "revision")}
    assert after == before
    assert store.glossary.search("ember tithe") == []
    assert _count(store.conn, "entry_fts") == 1
    assert store.memory.load_context_state() is None
    assert not store.in_transaction


def test_nested_transaction_failure_rolls_back_only_the_savepoint(store: GlossaryStore):
    with store.transaction():
        store.glossary.create_entry(AGENT, "Keth'ra", "A witch.")
        with pytest.raises(ValueError), store.transaction():
            store.glossary.create_entry(AGENT, "Ember-Tithe", "A tax.")
            raise ValueError("inner")
        store.glossary.create_entry(AGENT, "Vorn", "A town.")
    assert [entry.term for entry in store.glossary.entries()] == ["Keth'ra", "Vorn"]
    assert store.glossary.search("tithe") == []


def test_failed_store_call_inside_an_outer_transaction_keeps_the_outer_work(store: GlossaryStore):
    from terrarium_dagster.errors import DuplicateTermError

    with store.transaction():
        store.glossary.create_entry(AGENT, "Keth'ra", "A witch.")
        with pytest.raises(DuplicateTermError):
            store.glossary.create_entry(AGENT, "KETH'RA", "Again.")
    assert [entry.term for entry in store.glossary.entries()] == ["Keth'ra"]
    assert len(store.history.revisions()) == 1


def test_concurrent_reader_sees_committed_data_only(store: GlossaryStore, db_path: Path):
    reader = sqlite3.connect(db_path, isolation_level=None)
    try:
        with store.transaction():
            store.glossary.create_entry(AGENT, "Keth'ra", "A witch.")
            assert _count(reader, "entry") == 0
            assert _count(reader, "revision") == 0
        assert _count(reader, "entry") == 1
        assert _count(reader, "revision") == 1
    finally:
        reader.close()


def test_reader_in_a_read_transaction_keeps_its_snapshot_while_the_store_writes(
    store: GlossaryStore, db_path: Path
):
    store.glossary.create_entry(AGENT, "Keth'ra", "A witch.")
    reader = sqlite3.connect(db_path, isolation_level=None)
    try:
        reader.execute("BEGIN")
        assert _count(reader, "entry") == 1
        store.glossary.create_entry(AGENT, "Vorn", "A town.")  # WAL: the writer is not blocked
        assert _count(reader, "entry") == 1
        reader.execute("COMMIT")
        assert _count(reader, "entry") == 2
    finally:
        reader.close()
