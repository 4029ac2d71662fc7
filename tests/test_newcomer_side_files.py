"""A newcomer who lists a store's folder sees `store.db`, `store.db-calls` and `store.db-lease`
and may give any of them as `--db`; and a command refused leaves that folder as it found it.

`terrarium` (its `main` in-process: tests/support/newcomer.py) on copies of the bundled sample
annotated offline once per worker.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from terrarium_dagster.cli import build_parser
from tests.support.cli import digest, store_copy
from tests.support.newcomer import one_line_refusal, run_terrarium

GOLD = Path(__file__).parents[1] / "terrarium_dagster" / "corpus" / "sample" / "gold.yaml"
SIDE_FILES = {
    "-calls": "call ledger",
    "-lease": "writer's lease",
    "-wal": "write-ahead log",
    "-shm": "shared-memory index",
    "-journal": "rollback journal",
}


def _folder(path: Path) -> dict[str, str]:
    """Every file under `path` with its content's digest (a folder: its name alone)."""
    return {
        str(item.relative_to(path)): digest(item) if item.is_file() else "folder"
        for item in sorted(path.rglob("*"))
    }


def _db_commands(out: Path) -> dict[str, list[str]]:
    """Every command that takes --db, with what else it needs to get that far."""
    return {
        "run": ["--offline"],
        "edition": ["--offline", "--as-of-thread", "ch1"],
        "status": [],
        "export": ["--format", "json", "--out", str(out / "g.json")],
        "lineage": ["E1"],
        "score": ["--gold", str(GOLD)],
        "serve": ["--port", "0"],
        "dev": ["--offline", "--port", "0"],
        "undo": ["--decision", "1"],
        "recover": ["--out", str(out / "r.db")],
        "snapshots": [],
        "why": ["E1", "--offline"],
    }


def test_every_command_with_db_is_listed_here() -> None:
    parser = build_parser()
    commands = next(
        action for action in parser._actions if isinstance(action, argparse._SubParsersAction)
    )
    with_db = {
        name
        for name, sub in commands.choices.items()
        if any("--db" in action.option_strings for action in sub._actions)
    }
    assert with_db == set(_db_commands(Path())), "a new command with --db: add it to the list"


@pytest.mark.parametrize("suffix", list(SIDE_FILES))
def test_a_side_file_given_as_db_names_its_store_for_every_command(
    suffix: str, offline_bundled_store: Path, tmp_path: Path
) -> None:
    """`terrarium status --db store.db-calls` (the store's call ledger) said the file was empty
    and that `terrarium run --db store.db-calls` would build a store there; `run` did, and a
    store made at `store.db-wal` would be read by SQLite as `store.db`'s log. Every command
    given a side file of a store, there or not yet, names the store to give instead, in one
    line, exit 2, the folder untouched, the second time as the first."""
    store = store_copy(offline_bundled_store, tmp_path)
    side = store.with_name(store.name + suffix)
    if suffix in ("-calls", "-lease"):  # as a run leaves them
        side.write_bytes(b"" if suffix == "-calls" else b'{"run_id": "r"}'.ljust(512))
    before = _folder(tmp_path)
    for _ in range(2):
        for command, extra in _db_commands(tmp_path).items():
            line = one_line_refusal(
                run_terrarium(command, "--db", str(side), *extra, cwd=tmp_path),
                f"--db {side} names the {SIDE_FILES[suffix]} beside {store}",
                f"give --db {store}",
                "nothing was written",
            )
            assert "terrarium run --db" not in line, (command, line)
            assert _folder(tmp_path) == before, command
