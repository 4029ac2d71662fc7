"""Bad stores, bad places and bad run arguments: one line, exit 2, nothing written (the CLI's main).

- `export --out` under a file or in a folder that cannot be written;
- a store path that cannot be opened (under a file, in a folder that refuses writes);
- a store whose schema version was reset to 0, and someone else's SQLite database;
- `--model` naming a model the server does not serve and `--from-snapshot` naming no snapshot:
  no run row is left, and a store the run was creating is not kept.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from functools import partial
from pathlib import Path

import pytest

from tests.support.cli import digest, run_args, said, terrarium_main

_terrarium = partial(terrarium_main, clean=True)


def _one_line(done: subprocess.CompletedProcess[str], *words: str) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if said(line)]
    assert len(lines) == 1, done.stderr  # (the server probe's INFO line aside)
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def _unwritable_folder(tmp_path: Path) -> Path:
    """A folder nobody can create files in: a read-only one, or /proc/sys for root (whom file
    modes do not stop)."""
    if os.geteuid() == 0:
        return Path("/proc/sys")
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    return folder


@pytest.fixture(scope="module")
def started_store(sample_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with two scenes done and more to do."""
    db = tmp_path_factory.mktemp("bad_stores") / "store.db"
    done = _terrarium(*run_args(db, sample_db, max_scenes=2))
    assert done.returncode == 0, done.stderr
    return db


def _copy(store: Path, folder: Path, name: str) -> Path:
    copy = folder / name
    copy.write_bytes(store.read_bytes())
    return copy


def test_export_out_under_a_file_or_in_an_unwritable_folder_is_one_line(
    started_store: Path, tmp_path: Path
) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a folder\n")
    locked = _unwritable_folder(tmp_path)
    for kind, out, words in (
        ("site", a_file / "glossary", ("is a file, not a folder",)),
        ("site", a_file, ("is a file, not a folder",)),
        ("site", locked / "glossary", ("is not writable",)),
        ("json", a_file / "glossary.json", ("is a file, not a folder",)),
        ("json", locked / "glossary.json", ("is not writable",)),
    ):
        done = _terrarium("export", "--db", str(started_store), "--format", kind, "--out", str(out))
        _one_line(done, f"--out {out}", *words)
        assert not out.is_dir()


def test_a_store_that_cannot_be_opened_is_one_line(tmp_path: Path) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a folder\n")
    _one_line(_terrarium(*run_args(a_file / "store.db")), "is a file, not a folder")
    locked = _unwritable_folder(tmp_path)
    _one_line(_terrarium(*run_args(locked / "store.db")), "not writable")
    assert a_file.read_text() == "not a folder\n"


def test_a_store_at_schema_version_0_and_a_stranger_database_are_refused_untouched(
    started_store: Path, tmp_path: Path
) -> None:
    reset = _copy(started_store, tmp_path, "reset.db")
    with sqlite3.connect(reset) as conn:
        conn.execute("PRAGMA user_version = 0")
    conn.close()
    before = digest(reset)
    for command in (run_args(reset), ["status", "--db", str(reset)]):
        line = _one_line(_terrarium(*command), "schema version 0")
        assert "terrarium recover" in line and "table meta already exists" not in line
    assert digest(reset) == before

    stranger = tmp_path / "stranger.db"
    with sqlite3.connect(stranger) as conn:
        conn.execute("CREATE TABLE recipes (name TEXT)")
    conn.close()
    before = digest(stranger)
    _one_line(_terrarium(*run_args(stranger)), "not an annotator store")
    assert digest(stranger) == before


def _runs(db: Path) -> dict[str, int]:
    status = _terrarium("status", "--json", "--db", str(db))
    assert status.returncode == 0, status.stderr
    return json.loads(status.stdout)["runs_by_status"]


def test_an_unknown_model_or_snapshot_leaves_no_run_row_and_no_new_store(
    started_store: Path, sample_db: Path, tmp_path: Path
) -> None:
    db = _copy(started_store, tmp_path, "store.db")
    runs = _runs(db)
    _one_line(_terrarium(*run_args(db, sample_db, model="no-such-model")), "no-such-model")
    _one_line(_terrarium(*run_args(db, sample_db, from_snapshot=999)), "no snapshot 999")
    assert _runs(db) == runs, "a refused run left a run row"

    fresh = tmp_path / "fresh.db"
    _one_line(_terrarium(*run_args(fresh, sample_db, model="no-such-model")), "no-such-model")
    _one_line(_terrarium(*run_args(fresh, sample_db, from_snapshot=1)), "no snapshot 1")
    assert not any(tmp_path.glob("fresh.db*")), "a store created for a refused run was kept"


def test_an_empty_file_given_to_a_reader_is_named_empty_not_an_old_store(tmp_path: Path) -> None:
    # It was called a store of schema version 0, "older than this terrarium-dagster's", to be
    # upgraded by a run: an empty file is no store at all yet.
    empty = tmp_path / "empty.db"
    empty.touch()
    for command in (
        ["status", "--db", str(empty)],
        ["export", "--db", str(empty), "--format", "json", "--out", str(tmp_path / "g.json")],
    ):
        line = _one_line(_terrarium(*command), "empty", "terrarium run --db")
        assert "older" not in line and "schema version" not in line, line
    assert empty.read_bytes() == b""
    assert not (tmp_path / "g.json").exists()
