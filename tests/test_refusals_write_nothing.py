"""A writer's refusal of bad input writes nothing: not the lease, not the file's time.

`run --threads ch99`, `edition --as-of-thread ch99` and `undo` of an unknown, already undone or
rolled-back id were refused in one line, but after the writer's lease was taken and given back:
the store's file was written (its time moved, and on a recovered store a page was rewritten).
Each command's own checks now run before the lease (`Engine.open(check=...)`).
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.cli import digest, run_args, store_copy, terrarium_main


def _files(folder: Path) -> dict[str, tuple[str, int]]:
    return {path.name: (digest(path), os.stat(path).st_mtime_ns) for path in folder.iterdir()}


def test_refused_writers_leave_the_store_as_they_found_it(
    offline_sample_store: Path, tmp_path: Path
) -> None:
    db = store_copy(offline_sample_store, tmp_path)
    before = _files(db.parent)
    for argv, said in (
        ([*run_args(db), "--threads", "ch99"], "--threads: no thread 'ch99'"),
        (["edition", "--offline", "--db", str(db), "--as-of-thread", "ch99"], "no thread 'ch99'"),
        (["undo", "--decision", "99999", "--db", str(db)], "no curator decision 99999"),
        (["undo", "--revision", "99999", "--db", str(db)], "no revision 99999"),
        (["undo", "--revision", "0", "--db", str(db)], "a positive integer"),
    ):
        done = terrarium_main(*argv)
        assert done.returncode == 2, (argv, done.stderr)
        line = done.stderr.strip()
        assert said in line and "\n" not in line, line
        assert _files(db.parent) == before, argv
