"""What a newcomer asks of three answers: where `terrarium edition` wrote the edition (it has
no --out: its help and its last line say the store, and which commands show it), what
`export --as-of-thread` is for (not the site: its help says so), and a misspelt --db beside
another store's exports (the refusal says there is no store by that name).

`terrarium` (its `main` in-process) on the bundled sample (tests/support/newcomer.py).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from tests.support.cli import run_args
from tests.support.newcomer import one_line_refusal, run_terrarium

pytest_plugins = ["tests.support.newcomer"]


def _help_text(command: str) -> str:
    done = run_terrarium(command, "--help")
    assert done.returncode == 0, done.stderr
    return " ".join(done.stdout.split())  # argparse wraps lines where it likes


def test_edition_help_says_where_the_edition_goes_and_what_shows_it() -> None:
    text = _help_text("edition")
    assert "stored in the annotator store (--db)" in text, text
    assert "`terrarium export` and `terrarium serve` show it" in text, text


def test_an_edition_written_names_its_store_and_an_export_shows_it(
    sample_store: Path, tmp_path: Path
) -> None:
    edition = run_terrarium(
        "edition", "--offline", "--db", str(sample_store), "--as-of-thread", "ch1"
    )
    assert edition.returncode == 0, edition.stderr
    last = edition.stdout.splitlines()[-1]
    assert last.startswith("edition as of ") and " written in " in last, last
    assert last.endswith(
        f"to the store {sample_store}: `terrarium export` and `terrarium serve` show it"
    ), last
    out = tmp_path / "glossary.json"
    done = run_terrarium(
        "export",
        "--db",
        str(sample_store),
        "--format",
        "json",
        "--out",
        str(out),
        "--as-of-thread",
        "ch1",
    )
    assert done.returncode == 0, done.stderr
    entries = json.loads(out.read_text())["entries"]
    assert any(entry.get("edition") for entry in entries), entries[:2]


def test_export_help_says_as_of_thread_is_not_for_the_site(
    sample_store: Path, tmp_path: Path
) -> None:
    text = _help_text("export")
    assert "(not with --format site: the site holds every thread, the reader picks)" in text
    one_line_refusal(
        run_terrarium(
            "export",
            "--db",
            str(sample_store),
            "--format",
            "site",
            "--out",
            str(tmp_path / "site"),
            "--as-of-thread",
            "ch1",
        ),
        "the site holds every thread",
    )


def test_serve_with_a_misspelt_store_beside_another_stores_exports_says_it_is_missing(
    sample_store: Path, tmp_path: Path
) -> None:
    """`serve --db nope.db` in a folder whose `exports/` the store `glossary.db` wrote said only
    that the folder holds another store's exports: that there is no store at nope.db is said."""
    store = tmp_path / "glossary.db"
    shutil.copyfile(sample_store, store)
    exports = tmp_path / "exports"
    exports.mkdir()
    (exports / ".terrarium-store").write_text(f"{store.resolve()}\n", encoding="utf-8")
    misspelt = tmp_path / "glosary.db"
    for _ in range(2):
        line = one_line_refusal(
            run_terrarium("serve", "--db", str(misspelt), "--port", "0", timeout=30),
            f"holds the exports of another store, {store.resolve()}",
        )
        assert line.endswith(f"; there is no store at {misspelt} yet: misspelt?"), line
    assert not misspelt.exists()
    assert [path.name for path in exports.iterdir()] == [".terrarium-store"]


def test_run_help_says_a_rewind_leaves_the_later_threads_pending(
    sample_store: Path, tmp_path: Path
) -> None:
    """`run --rewind --threads ch2..ch2` rolled back ch3 to ch5 too and left them pending, where
    `run --help` said "from its first thread, though later threads built on it" and the run said
    nothing of them: the help says so, and the run counts the threads left outside the range."""
    text = _help_text("run")
    assert (
        "from its first thread, even though later threads built on it: they are rolled back "
        "too (as revisions, nothing erased), redone if in the range, else left pending for the "
        "next run"
    ) in text, text
    store = tmp_path / "glossary.db"
    shutil.copyfile(sample_store, store)
    done = run_terrarium(*run_args(store, threads="ch2..ch2", rewind=True))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("run finished in ") and len(lines) == 2, done.stdout
    assert re.fullmatch(
        r"3 threads \(\d+ scenes\) outside --threads ch2\.\.ch2 left to annotate; "
        r"`terrarium run` without --threads annotates them",
        lines[1],
    ), lines[1]
    status = run_terrarium("status", "--db", str(store), "--json")
    assert status.returncode == 0, status.stderr
    threads = json.loads(status.stdout)["threads"]
    assert [thread["status"] for thread in threads] == [
        "curated",
        "curated",
        "pending",
        "pending",
        "pending",
    ], threads


def test_a_run_of_some_threads_says_what_is_left_outside_them(tmp_path: Path) -> None:
    """`run --threads ..ch1` said "run finished", then "nothing left to annotate" when run
    again, with four threads never begun: both runs count them and say how to go on."""
    store = tmp_path / "glossary.db"
    outside = re.compile(
        r"4 threads \(\d+ scenes\) outside --threads \.\.ch1 left to annotate; "
        r"`terrarium run` without --threads annotates them"
    )
    first = run_terrarium(*run_args(store, threads="..ch1"))
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0].startswith("run finished in ") and len(lines) == 2, first.stdout
    assert outside.fullmatch(lines[1]), lines[1]
    again = run_terrarium(*run_args(store, threads="..ch1"))
    assert again.returncode == 0, again.stderr
    lines = again.stdout.splitlines()
    assert re.fullmatch(
        r"run finished in \d+\.\ds: nothing left to annotate in --threads \.\.ch1 \(0 calls\)",
        lines[0],
    ), lines
    assert len(lines) == 2 and outside.fullmatch(lines[1]), lines
    rest = run_terrarium(*run_args(store))
    assert rest.returncode == 0 and len(rest.stdout.splitlines()) == 1, rest.stdout
