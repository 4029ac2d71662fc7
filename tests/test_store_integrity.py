"""A damaged store is refused before anything is written, and `terrarium recover` is the way back.

A real store (the sample quest annotated by `terrarium run --offline`) gets 4 KiB of random bytes
written over a b-tree page in the middle of its file. `run` then refuses it with one line naming
the damage and `terrarium recover`, exit 2, and the file is byte for byte what it was; the
readers say the same line; `recover` copies every readable row into a new store, which a run
resumes.
"""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.support.cli import digest, run_args, terrarium_main

PAGE = 4096


def _middle_btree_page(db: Path) -> int:
    """The b-tree page (a table's or an index's) nearest the middle of the file."""
    conn = sqlite3.connect(db)
    try:
        count = conn.execute("PRAGMA page_count").fetchone()[0]
        try:
            pages = [
                row[0]
                for row in conn.execute(
                    "SELECT pageno FROM dbstat WHERE pagetype IN ('leaf', 'internal')"
                )
            ]
        except sqlite3.OperationalError:  # no dbstat in this SQLite: the middle page
            return count // 2
    finally:
        conn.close()
    return min(pages, key=lambda page: abs(page - count // 2))


@pytest.fixture(scope="module")
def annotated_store(offline_sample_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample annotated offline (the session's `terrarium run`, copied)."""
    db = tmp_path_factory.mktemp("integrity") / "store.db"
    shutil.copyfile(offline_sample_store, db)
    return db


def _damaged_copy(store: Path, folder: Path) -> Path:
    db = folder / "damaged.db"
    db.write_bytes(store.read_bytes())
    page = _middle_btree_page(db)
    with db.open("r+b") as handle:
        handle.seek((page - 1) * PAGE)
        handle.write(random.Random(23).randbytes(PAGE))
    return db


def test_a_store_with_bytes_overwritten_in_the_middle_is_refused_with_one_line(
    annotated_store: Path, sample_db: Path, tmp_path: Path
) -> None:
    db = _damaged_copy(annotated_store, tmp_path)
    before = digest(db)
    refused = terrarium_main(*run_args(db, sample_db))
    assert refused.returncode == 2, refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1, refused.stderr
    assert lines[0].startswith(f"terrarium: error: annotator store {db} is damaged (")
    assert f"terrarium recover --db {db} --out" in lines[0]
    assert "nothing was written" in lines[0]
    assert digest(db) == before, "the damaged store was written"
    assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").stat().st_size == 0

    # a reader that meets the damage says the same, in one line, exit 2
    status = terrarium_main("status", "--db", str(db))
    assert status.returncode == 2, status.stdout + status.stderr
    assert len(status.stderr.strip().splitlines()) == 1
    assert "is damaged" in status.stderr and "terrarium recover" in status.stderr
    assert digest(db) == before


def test_recover_copies_what_is_readable_and_a_run_resumes_on_it(
    annotated_store: Path, sample_db: Path, tmp_path: Path
) -> None:
    db = _damaged_copy(annotated_store, tmp_path)
    before = digest(db)
    out = tmp_path / "recovered.db"
    recovered = terrarium_main("recover", "--db", str(db), "--out", str(out))
    assert recovered.returncode == 0, recovered.stderr
    assert f"into {out}" in recovered.stdout
    assert digest(db) == before, "recover changed the damaged store"

    good = sqlite3.connect(annotated_store)
    new = sqlite3.connect(out)
    try:
        assert new.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        tables = [
            row[0]
            for row in good.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'entry_fts%'"
            )
        ]
        kept = lost = 0
        for table in tables:
            had = good.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            has = new.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            assert has <= had
            kept, lost = kept + has, lost + had - has
        assert kept > 0 and lost < PAGE // 8, (kept, lost)  # at most one page's rows are lost
        assert (
            new.execute("PRAGMA user_version").fetchone()
            == good.execute("PRAGMA user_version").fetchone()
        )
        # the search index is rebuilt from the entries recovered
        entries = new.execute("SELECT count(*) FROM entry").fetchone()[0]
        assert new.execute("SELECT count(*) FROM entry_fts").fetchone()[0] == entries
    finally:
        good.close()
        new.close()

    status = terrarium_main("status", "--json", "--db", str(out))
    assert status.returncode == 0, status.stderr
    with sqlite3.connect(out) as conn:  # a count, not the last id: a lost page leaves gaps
        (revisions,) = conn.execute("SELECT count(*) FROM revision").fetchone()
    assert json.loads(status.stdout)["revisions"] == revisions
    again = terrarium_main("recover", "--db", str(db), "--out", str(out))
    assert again.returncode == 2 and "exists" in again.stderr


def test_a_file_that_is_not_a_database_is_one_line_exit_2(tmp_path: Path) -> None:
    db = tmp_path / "notes.db"
    db.write_text("these are notes, not a database\n" * 200)
    before = digest(db)
    for command in (run_args(db), ["status", "--db", str(db)]):
        done = terrarium_main(*command)
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "is not an annotator store (not an SQLite database)" in done.stderr
        assert "damaged" not in done.stderr and "recover" not in done.stderr
    assert digest(db) == before


def test_recover_refuses_an_out_that_is_no_new_stores_file(
    annotated_store: Path, tmp_path: Path
) -> None:
    """`--out new.db-wal` (no new.db yet) made a store there, which a `new.db` made later takes
    for its log; `--out -` made a file named "-"; an empty `--out` put the copy in the current
    folder. Each is refused in one line now, and nothing is made."""
    db = tmp_path / "store.db"
    shutil.copyfile(annotated_store, db)
    for out, said in (
        (str(tmp_path / "new.db-wal"), "write-ahead log SQLite keeps beside a store at"),
        (str(tmp_path / "new.db-journal"), "rollback journal"),
        ("-", "never to standard output"),
        ("", "--out is empty"),
    ):
        done = terrarium_main("recover", "--db", str(db), "--out", out, cwd=tmp_path)
        assert done.returncode == 2, (out, done.stderr)
        line = done.stderr.strip()
        assert said in line and "\n" not in line, line
    assert sorted(path.name for path in tmp_path.iterdir()) == ["store.db"]
