"""A newcomer who lists a store's folder sees `store.db`, `store.db-calls` and `store.db-lease`
and may give any of them as `--db`; and a command refused leaves that folder as it found it.

`terrarium` (its `main` in-process: tests/support/newcomer.py) on copies of the bundled sample
annotated offline once per worker.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from terrarium_dagster.cli import build_parser
from tests.support.cli import store_copy
from tests.support.newcomer import (
    SIDE_FILES,
    db_commands,
    folder_digests,
    one_line_refusal,
    run_terrarium,
)


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
    assert with_db == set(db_commands(Path())), "a new command with --db: add it to the list"


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
    before = folder_digests(tmp_path)
    for _ in range(2):
        for command, extra in db_commands(tmp_path).items():
            line = one_line_refusal(
                run_terrarium(command, "--db", str(side), *extra, cwd=tmp_path),
                f"--db {side} names the {SIDE_FILES[suffix]} beside {store}",
                f"give --db {store}",
                "nothing was written",
            )
            assert "terrarium run --db" not in line, (command, line)
            assert folder_digests(tmp_path) == before, command


BOOK = Path(__file__).parent / "data" / "books" / "gods-of-mars-iii-iv.txt"


def _refusals(store: Path, other_corpus: Path) -> dict[str, list[str]]:
    """Commands refused, each for its own reason: before or after they take the writer lease."""
    db = ["--db", str(store)]
    return {
        "a missing thread": ["run", "--offline", *db, "--threads", "ch99"],
        "a missing thread again": ["run", "--offline", *db, "--rewind", "--threads", "ch99"],
        "a missing snapshot": ["run", "--offline", *db, "--from-snapshot", "99"],
        "an edition of a missing thread": ["edition", "--offline", *db, "--as-of-thread", "ch99"],
        "an unknown decision": ["undo", *db, "--decision", "999"],
        "an unknown revision": ["undo", *db, "--revision", "999999"],
        "an unknown entry": ["why", "E999", "--offline", *db],
        "another corpus": ["run", "--offline", *db, "--corpus", str(other_corpus)],
        "a bad setting": ["run", "--offline", *db, "--context-budget", "5"],
        "no backend": ["run", *db],
    }


def test_a_refused_command_leaves_the_store_folder_as_it_found_it(
    offline_bundled_store: Path, tmp_path: Path
) -> None:
    """A run refused for a thread the corpus lacks (an edition, an undo of an unknown decision:
    refusals met once the writer lease is taken) left `<store>-lease` behind where there was
    none. Each refusal, made twice, leaves the folder byte for byte as it was; a finished run
    leaves no lease file either (the lease is given back)."""
    other = tmp_path / "book" / "gods.db"
    other.parent.mkdir()
    assert run_terrarium("import", str(BOOK), "--out", str(other)).returncode == 0
    store = store_copy(offline_bundled_store, tmp_path)
    before = folder_digests(store.parent)
    for reason, command in _refusals(store, other).items():
        for _ in range(2):
            one_line_refusal(run_terrarium(*command, cwd=tmp_path))
            assert folder_digests(store.parent) == before, reason
    assert sorted(folder_digests(tmp_path)) == sorted(
        ["book", "book/gods.db", "store", *(f"store/{name}" for name in before)]
    )
    undone = run_terrarium("undo", "--db", str(store), "--decision", "1")
    assert undone.returncode == 0, undone.stderr
    assert sorted(path.name for path in store.parent.iterdir()) == [store.name]


def test_a_second_writer_refused_leaves_the_lease_file_it_found(
    offline_bundled_store: Path, tmp_path: Path
) -> None:
    """A live holder's lease file is the holder's: a second writer refused leaves it (and the
    rest of the folder) as it was; the holder, giving the lease back, removes the file it made."""
    from terrarium_dagster.store import GlossaryStore

    store = store_copy(offline_bundled_store, tmp_path)
    lease = store.with_name(store.name + "-lease")
    with GlossaryStore(store) as holder:
        holder.runs.acquire_writer_lease("holder-run")
        assert lease.is_file()
        for command in (["run", "--offline"], ["undo", "--decision", "1"]):
            line = one_line_refusal(run_terrarium(*command, "--db", str(store)))
            assert "is being written by run holder-run" in line
            assert sorted(path.name for path in store.parent.iterdir()) == sorted(
                [store.name, lease.name, f"{store.name}-wal", f"{store.name}-shm"]
            )
        holder.runs.release_writer_lease("holder-run")
        assert not lease.exists()
    assert sorted(path.name for path in store.parent.iterdir()) == [store.name]


def test_an_empty_file_or_no_store_is_refused_by_every_command_that_needs_one(
    tmp_path: Path,
) -> None:
    """`why E1` and `undo --decision 1` given an empty file (`touch glossary.db`) made a store
    of it (200 KB written), then said the entry or the decision was not in it; `edition` made
    and removed a store where there was none and said its first thread was pending. Every
    command that needs a store says the file is empty, or that there is no store, as `status`
    does, and writes nothing; `run` alone makes a store of an empty file."""
    empty, missing = tmp_path / "glossary.db", tmp_path / "missing.db"
    empty.touch()
    needs_a_store = {
        name: extra for name, extra in db_commands(tmp_path).items() if name not in ("run", "dev")
    }
    for _ in range(2):
        for command, extra in needs_a_store.items():
            one_line_refusal(
                run_terrarium(command, "--db", str(empty), *extra, cwd=tmp_path),
                f"{empty} is an empty database, not an annotator store; nothing was written"
                if command == "recover"
                else f"{empty} is empty, not an annotator store yet: nothing to read",
            )
            assert sorted(path.name for path in tmp_path.iterdir()) == [empty.name], command
            assert empty.stat().st_size == 0, command
        for command in ("edition", "why", "undo"):
            one_line_refusal(
                run_terrarium(command, "--db", str(missing), *needs_a_store[command]),
                f"no annotator store at {missing} (run `terrarium run` first)",
            )
            assert sorted(path.name for path in tmp_path.iterdir()) == [empty.name], command


def test_a_run_refused_on_an_empty_file_leaves_it_empty(tmp_path: Path) -> None:
    """`terrarium run --offline --db glossary.db --threads 99..` on an empty file (`touch
    glossary.db`) was refused for the missing thread and left the file a migrated store of
    200 KB (a missing file was left missing): the store made in it was kept. A run refused,
    before or after it takes the writer lease, leaves the file empty, its time as it was, and
    nothing beside it, the second time as the first; a run that is not refused makes its store
    there, as `run` alone does of an empty file."""
    empty = tmp_path / "glossary.db"
    empty.touch()
    os.utime(empty, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    before = empty.stat()
    db = ["--db", str(empty)]
    refused = {
        "a missing thread": ["--offline", *db, "--threads", "99.."],
        "a missing snapshot": ["--offline", *db, "--from-snapshot", "5"],
        "a bad setting": ["--offline", *db, "--context-budget", "5"],
        "no backend": db,
    }
    for _ in range(2):
        for reason, command in refused.items():
            one_line_refusal(run_terrarium("run", *command, cwd=tmp_path))
            assert sorted(path.name for path in tmp_path.iterdir()) == [empty.name], reason
            after = empty.stat()
            assert (after.st_size, after.st_mtime_ns) == (0, before.st_mtime_ns), reason
    done = run_terrarium("run", "--offline", *db, "--max-scenes", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert empty.stat().st_size > 0


def test_a_new_file_is_never_made_at_a_side_file_of_a_store(
    offline_bundled_store: Path, tmp_path: Path
) -> None:
    """`recover --db store.db --out store.db-wal` said it recovered every row into
    store.db-wal, and the file was gone: the recovery's own closing of store.db took it for
    the store's log and removed it; a corpus imported as store.db-journal sat where SQLite
    looks for a journal. Both are refused in one line, nothing written."""
    store = store_copy(offline_bundled_store, tmp_path)
    book = Path(__file__).parent / "data" / "books" / "gods-of-mars-iii-iv.txt"
    before = folder_digests(tmp_path)
    for suffix, kind in SIDE_FILES.items():
        side = f"{store}{suffix}"
        for _ in range(2):
            for command in (["recover", "--db", str(store)], ["import", str(book)]):
                one_line_refusal(
                    run_terrarium(*command, "--out", side),
                    f"--out {side} names the {kind} beside {store}",
                    "nothing was written; give --out another name",
                )
                assert folder_digests(tmp_path) == before, (command, suffix)


def test_an_import_stopped_half_way_leaves_no_partial_corpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An import stopped while it wrote (Ctrl-C; SIGTERM now stops a command the same way) left
    `.<corpus>.partial` beside where the corpus was to be: only a refused write was cleaned."""
    import terrarium_dagster.corpus.importers as importers

    written = importers.write_corpus

    def stopped_after_writing(partial: Path, *args: object) -> None:
        written(partial, *args)  # type: ignore[arg-type]
        assert partial.is_file()
        raise KeyboardInterrupt

    monkeypatch.setattr(importers, "write_corpus", stopped_after_writing)
    done = run_terrarium("import", str(BOOK), "--out", str(tmp_path / "book.db"))
    assert (done.returncode, done.stdout) == (130, "")
    assert done.stderr.splitlines() == ["terrarium: interrupted by SIGINT"]
    assert list(tmp_path.iterdir()) == []
