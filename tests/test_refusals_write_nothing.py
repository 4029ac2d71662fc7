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
from tests.support.corpus_builder import PostRow, write_corpus


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


def test_a_corpus_with_no_story_post_is_refused_and_no_store_is_made(tmp_path: Path) -> None:
    """A quest whose posts carry no `qm_post` tag (the tag table empty, or only other tags)
    has no scene: the run ended at once, exit 0, with an empty glossary and no word why."""
    corpus, db = tmp_path / "untagged.db", tmp_path / "store" / "g.db"
    posts = [
        PostRow(id=1, thread=1, time=1, body="Ysolde Marrow opens a gate.", tags=("op_post",)),
        PostRow(id=2, thread=1, time=2, body="[X] North - 5", tags=("qm_post", "vote_tally_post")),
        PostRow(id=3, thread=1, time=3, body="Ysolde Marrow goes north."),
    ]  # fmt: skip
    write_corpus(corpus, {1: "Untagged"}, posts)
    db.parent.mkdir()
    done = terrarium_main(*run_args(db, corpus))
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert "no post is tagged 'qm_post'" in line and "\n" not in line, line
    assert list(db.parent.iterdir()) == []
