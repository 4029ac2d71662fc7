"""Where a newcomer's edition went, and what `export --as-of-thread` is for: `terrarium edition`
has no --out, so its help and its last line say that the edition is in the store and which
commands show it; `export --help` says --as-of-thread is not for the site (refused there).

The installed `terrarium` script on the bundled sample (tests/support/newcomer.py).
"""

from __future__ import annotations

import json
from pathlib import Path

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
