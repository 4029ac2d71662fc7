"""What a newcomer trying every command twice trips on: a thread named as the tables show it,
an edition that says each thread once, and a site server that refuses what is not its store.

The installed `terrarium` script on the bundled sample (annotated offline once for the module)
and a real book (a trimmed Project Gutenberg text) imported with `terrarium import`.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Callable
from contextlib import closing
from functools import partial
from pathlib import Path

import httpx
import pytest

from tests.support.cli import TERRARIUM, digest, interrupt, run_args, terrarium

MARS = Path(__file__).parent / "data" / "books" / "princess-of-mars-ch1-10.txt"

_terrarium = partial(terrarium, timeout=120, clean=True)


def _one_line_refusal(done: subprocess.CompletedProcess[str], *words: str) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("terrarium: error: "), done.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def sample_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The bundled sample annotated offline, the whole of it, as the README's first try."""
    db = tmp_path_factory.mktemp("sample") / "sample.db"
    done = _terrarium(*run_args(db))
    assert done.returncode == 0, done.stderr
    return db, done


@pytest.fixture(scope="module")
def sample_store(sample_run: tuple[Path, subprocess.CompletedProcess[str]]) -> Path:
    return sample_run[0]


@pytest.fixture(scope="module")
def mars_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The book's chapters I-X imported once; `mars` copies it for a test."""
    corpus = tmp_path_factory.mktemp("mars") / "mars.db"
    done = _terrarium("import", str(MARS), "--out", str(corpus))
    assert done.returncode == 0, done.stderr
    return corpus


@pytest.fixture
def mars(mars_once: Path) -> Callable[[Path], Path]:
    """Put a copy of the imported book at a path (what `terrarium import` would write there)."""

    def imported(corpus: Path) -> Path:
        shutil.copyfile(mars_once, corpus)
        return corpus

    return imported


def test_the_first_run_on_the_sample_warns_of_nothing(
    sample_run: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    """The offline curator restores a rejected name and merges its full name into it in one
    answer ('Leck', 'Tobiah Leck'): both apply, no 'MERGE target is rejected' retry."""
    _db, done = sample_run
    lines = done.stderr.splitlines()
    assert lines and all(line.startswith("thread t0") for line in lines), done.stderr
    assert done.stdout.startswith("run finished in ")


def test_snapshots_takes_a_thread_by_the_key_its_table_shows(sample_store: Path) -> None:
    table = _terrarium("snapshots", "--db", str(sample_store))
    assert table.returncode == 0, table.stderr
    second = table.stdout.splitlines()[2].split()  # header, then one row per snapshot
    key = second[2]
    thread_id = key.split("-")[1]
    with closing(sqlite3.connect(f"file:{sample_store}?mode=ro", uri=True)) as db:
        order = "SELECT thread_key FROM thread_state ORDER BY position, thread_id"
        keys = [row[0] for row in db.execute(order)]
    number = f"ch{keys.index(key) + 1}"  # its number in story order
    for given in (key, thread_id, number, key):  # by key, id, number, and the same again
        done = _terrarium("snapshots", "--db", str(sample_store), "--thread", given)
        assert done.returncode == 0, done.stderr
        rows = [line for line in done.stdout.splitlines()[1:] if line.split()[0].isdigit()]
        assert [row.split()[2] for row in rows] == [key], done.stdout
        assert done.stdout.splitlines()[-1].startswith("rev: the last revision it saw;")
    _one_line_refusal(
        _terrarium("snapshots", "--db", str(sample_store), "--thread", "t09999-1"),
        "--thread",
        "'t09999-1'",
        "terrarium status",
        f"or ch1; the last ch{len(keys)})",  # as `run --threads` says it
    )


def test_an_edition_says_each_thread_once_and_again_that_nothing_was_sent(
    sample_store: Path, tmp_path: Path
) -> None:
    db = tmp_path / "edition.db"
    shutil.copyfile(sample_store, db)
    table = _terrarium("status", "--db", str(db)).stdout
    first, second = [line.split()[0] for line in table.splitlines() if "curated" in line][1:3]
    done = _terrarium("edition", "--offline", "--db", str(db), "--as-of-thread", first)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"{first}: ") and "requests" in lines[0]
    assert lines[1].startswith(f"edition as of {first} written in ")
    again = _terrarium("edition", "--offline", "--db", str(db), "--as-of-thread", second)
    assert again.returncode == 0, again.stderr
    lines = again.stdout.splitlines()
    assert lines[0] == f"{first}: already written (nothing sent)"
    assert lines[1].startswith(f"{second}: ") and " rewritten (" in lines[1]
    assert len(lines) == 3 and lines[2].startswith(f"edition as of {second} written in ")
    third = _terrarium("edition", "--offline", "--db", str(db), "--as-of-thread", second)
    assert third.returncode == 0 and third.stderr == "", third.stderr
    assert third.stdout.splitlines()[-1].startswith(
        f"edition as of {second} already written; nothing changed ("
    ), third.stdout


def _notes_and_a_books_corpus(tmp_path: Path, mars: Callable[[Path], Path]) -> tuple[Path, Path]:
    """A text file of notes and a book's corpus: two files a newcomer may give as `--db`."""
    notes = tmp_path / "notes.txt"
    notes.write_text("shopping: lamp oil, wicks\n", encoding="utf-8")
    corpus = tmp_path / "mars.db"
    mars(corpus)
    return notes, corpus


def test_serve_refuses_a_file_that_is_not_a_store_and_another_books_corpus(
    sample_store: Path, tmp_path: Path, mars: Callable[[Path], Path]
) -> None:
    notes, corpus = _notes_and_a_books_corpus(tmp_path, mars)
    before = {path: digest(path) for path in (notes, sample_store, corpus)}
    for _ in range(2):
        _one_line_refusal(
            _terrarium("serve", "--db", str(notes), "--port", "0", timeout=30),
            "not an annotator store",
        )
        _one_line_refusal(
            _terrarium(
                "serve",
                "--db",
                str(sample_store),
                "--corpus",
                str(corpus),
                "--port",
                "0",
                timeout=30,
            ),
            "belongs to the corpus",
            "A Princess of Mars",
        )
    assert {path: digest(path) for path in before} == before
    assert not (tmp_path / "exports").exists()


def test_an_editions_line_for_one_entry_says_one_entry_and_one_request(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`terrarium edition` on Frankenstein said 'chapter 1 (t00000-1): 1 entries rewritten
    (0 kept), 1 requests, 914 tokens'."""
    from terrarium_dagster.cli.edition_command import _edition_progress

    written: list[str] = []
    for rewritten, requests in ((1, 1), (2, 3)):
        data = {"thread_key": "t00000-1", "rewritten": rewritten, "kept": 0}
        data |= {"requests": requests, "tokens": 914}
        _edition_progress("edition", data, written, book=True)
    assert capsys.readouterr().out.splitlines() == [
        "chapter 1 (t00000-1): 1 entry rewritten (0 kept), 1 request, 914 tokens",
        "chapter 1 (t00000-1): 2 entries rewritten (0 kept), 3 requests, 914 tokens",
    ]


def test_serve_names_notes_or_a_corpus_as_such_beside_another_stores_exports(
    sample_store: Path, tmp_path: Path, mars: Callable[[Path], Path]
) -> None:
    """In a folder whose `exports/` another store had served, `serve --db notes.txt` (or the
    corpus) said 'exports holds the exports of another store', and `dev` still did: the file
    given is named for what it is first, and the exports folder is left as it was."""
    store = tmp_path / "glossary.db"
    shutil.copyfile(sample_store, store)
    exports = tmp_path / "exports"
    exports.mkdir()
    (exports / ".terrarium-store").write_text(f"{store.resolve()}\n", encoding="utf-8")
    notes, corpus = _notes_and_a_books_corpus(tmp_path, mars)
    before = {path: digest(path) for path in (notes, corpus, store)}
    for _ in range(2):
        for given, words in (
            (notes, "is not an annotator store"),
            (corpus, "is a corpus, not an annotator store"),
        ):
            for command in (["serve"], ["dev", "--offline"]):
                line = _one_line_refusal(
                    _terrarium(*command, "--db", str(given), "--port", "0", timeout=30), words
                )
                assert "another store" not in line, line
    assert {path: digest(path) for path in before} == before
    assert [path.name for path in exports.iterdir()] == [".terrarium-store"]


def test_serve_before_the_first_run_says_so_and_lists_no_site_as_an_export(
    sample_store: Path, tmp_path: Path
) -> None:
    def serving(db: Path) -> tuple[subprocess.Popen[str], list[str]]:
        process = subprocess.Popen(
            [TERRARIUM, "serve", "--db", str(db), "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        said: list[str] = []
        assert process.stdout is not None
        while not (said and said[-1].startswith("serving ")):
            line = process.stdout.readline()
            assert line, process.stderr.read() if process.stderr else ""
            said.append(line.rstrip("\n"))
        return process, said

    def stop(process: subprocess.Popen[str]) -> None:
        assert interrupt(process) == 0

    process, said = serving(tmp_path / "not-yet.db")
    try:
        assert said[0].startswith(f"no annotator store at {tmp_path / 'not-yet.db'} yet")
        assert "reader's site, the exports" in said[-1]
        assert not (tmp_path / "not-yet.db").exists()
        # no site yet: "/" says when it comes, not a link to itself
        base = said[-1].split(" at ")[-1].split()[0].rstrip("/")
        front = httpx.get(base + "/", timeout=10).text
        assert "opens here once a thread is annotated" in front and 'href="/"' not in front
    finally:
        stop(process)

    db = tmp_path / "store" / "sample.db"
    db.parent.mkdir()
    shutil.copyfile(sample_store, db)
    process, said = serving(db)
    try:
        base = said[-1].split(" at ")[-1].split()[0].rstrip("/")
        assert said[0].startswith("built the reader's site")
        listing = httpx.get(base + "/exports/", timeout=10)
        assert listing.status_code == 200 and "No export yet." in listing.text
        assert 'href="/exports/site/"' not in listing.text  # the site is served at /, once
        assert httpx.get(base + "/", timeout=10).text.startswith("<!doctype html>")
    finally:
        stop(process)


def test_help_offers_only_what_a_command_reads_and_says_each_thing_once() -> None:
    export = " ".join(_terrarium("export", "--help").stdout.split())
    assert export.count("Write the glossary") == 1
    lineage = " ".join(_terrarium("lineage", "--help").stdout.split())
    assert "term entry id (E12), term or alias" in lineage
    why = _terrarium("why", "--help").stdout
    for never_read in ("--concurrency", "--max-rounds", "--curator-thinking", "--story"):
        assert never_read not in why, never_read
    edition = _terrarium("edition", "--help").stdout
    assert "--concurrency" in edition and "--max-rounds" not in edition
    assert "--story" in _terrarium("dev", "--help").stdout
    assert "--story" not in _terrarium("run", "--help").stdout
    undo = _terrarium("undo", "--help").stdout
    assert "--corpus" in undo and "--url-template" not in undo  # it shows no post links


def test_lineage_by_id_and_recover_of_a_sound_store_say_nothing_false(
    sample_store: Path, tmp_path: Path
) -> None:
    by_id = _terrarium("lineage", "--db", str(sample_store), "E1")
    assert by_id.returncode == 0, by_id.stderr
    assert by_id.stdout.startswith("E1 ") and "found by" not in by_id.stdout
    before = digest(sample_store)
    out = tmp_path / "copy.db"
    done = _terrarium("recover", "--db", str(sample_store), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "damaged store" not in done.stdout
    assert f"{sample_store} showed no damage and is unchanged; {out} is a copy" in done.stdout
    assert digest(sample_store) == before
    _one_line_refusal(_terrarium("recover", "--db", str(sample_store), "--out", str(out)), "exists")


def test_why_and_lineage_of_an_id_no_entry_has_say_what_to_give_instead(
    sample_store: Path,
) -> None:
    """`why E99999` said only 'no entry E99999 in the glossary', and `lineage E99999` 'no
    glossary entry named 'E99999''; both now say to give the term or an alias."""
    before = digest(sample_store)
    for _ in range(2):
        _one_line_refusal(
            _terrarium("why", "E99999", "--offline", "--db", str(sample_store)),
            "no entry E99999 in the glossary (give a term or an alias",
        )
        _one_line_refusal(
            _terrarium("lineage", "E99999", "--db", str(sample_store)),
            "no entry E99999 in the glossary (give the entry's term or an alias)",
        )
    assert digest(sample_store) == before


def test_a_misspelt_setting_in_the_configuration_file_names_the_one_meant(
    tmp_path: Path,
) -> None:
    (tmp_path / "terrarium.yaml").write_text("concurency: 3\n", encoding="utf-8")
    for _ in range(2):
        _one_line_refusal(
            _terrarium(*run_args("store.db"), cwd=tmp_path),
            f"concurency (in {tmp_path / 'terrarium.yaml'}): no such setting (did you mean "
            "concurrency?)",
        )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["terrarium.yaml"]


def test_a_dry_run_over_an_existing_corpus_says_the_import_would_need_replace(
    tmp_path: Path,
) -> None:
    corpus = tmp_path / "mars.db"
    dry = _terrarium("import", str(MARS), "--out", str(corpus), "--dry-run")
    assert dry.returncode == 0 and "exists" not in dry.stdout and not corpus.exists()
    assert _terrarium("import", str(MARS), "--out", str(corpus)).returncode == 0
    before = digest(corpus)
    for _ in range(2):
        again = _terrarium("import", str(MARS), "--out", str(corpus), "--dry-run")
        assert again.returncode == 0, again.stderr
        assert again.stdout.splitlines()[-1] == (
            f"{corpus} exists: the import itself needs --replace to write over it"
        )
        assert digest(corpus) == before


@pytest.mark.parametrize(
    ("args", "help_of"),
    [
        ((), "terrarium"),
        (("frobnicate",), "terrarium"),
        (("run", "--offline", "--bogus"), "terrarium run"),
        (("lineage",), "terrarium lineage"),
        (("export", "--format", "pdf", "--out", "x"), "terrarium export"),
    ],
)
def test_a_usage_error_is_one_line_naming_the_help_to_read(
    args: tuple[str, ...], help_of: str, tmp_path: Path
) -> None:
    line = _one_line_refusal(_terrarium(*args, cwd=tmp_path), f"(`{help_of} --help` shows")
    assert "usage:" not in line
    assert list(tmp_path.iterdir()) == []


def test_a_rewind_counts_the_threads_it_reads_again(sample_store: Path, tmp_path: Path) -> None:
    db = tmp_path / "rewind.db"
    shutil.copyfile(sample_store, db)
    table = _terrarium("status", "--db", str(db)).stdout
    second = [line.split()[0] for line in table.splitlines() if "curated" in line][2]
    done = _terrarium(*run_args(db, threads=f"..{second}", rewind=True))
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 2, done.stderr
    assert "done (1/2)" in lines[0] and "done (2/2)" in lines[1]
    first_scenes = re.search(r"scenes (\d+)/(\d+)", lines[0])
    last_scenes = re.search(r"scenes (\d+)/(\d+)", lines[1])
    assert first_scenes and last_scenes
    assert int(first_scenes.group(2)) == int(last_scenes.group(1)) == int(last_scenes.group(2))
    assert int(first_scenes.group(1)) < int(first_scenes.group(2))


def test_score_twice_says_the_same_in_good_english(sample_store: Path) -> None:
    gold = Path(__file__).parents[1] / "terrarium_dagster" / "corpus" / "sample" / "gold.yaml"
    first, again = (
        _terrarium("score", "--db", str(sample_store), "--gold", str(gold)) for _ in "12"
    )
    assert first.returncode == again.returncode == 0, first.stderr
    assert first.stdout == again.stdout
    split = re.search(r"^split +(\d+) gold (referents?) on more", first.stdout, re.M)
    assert split, first.stdout
    assert split.group(2) == ("referent" if split.group(1) == "1" else "referents")


def test_a_gold_list_of_names_alone_is_scored(sample_store: Path, tmp_path: Path) -> None:
    """`terms: [Orrowmere, ...]`, the list a reader writes first, was refused as "not a `terms:`
    list of {term, aliases}": a name alone is a term without aliases."""
    gold = tmp_path / "gold.yaml"
    gold.write_text("terms:\n  - Orrowmere\n  - term: No Such Name\n    aliases: [Nowhere]\n")
    for _ in range(2):
        done = _terrarium("score", "--db", str(sample_store), "--gold", str(gold), "--json")
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert (report["gold_terms"], report["missed"]) == (2, ["No Such Name"]), report


def test_importing_a_folder_names_it_a_folder(tmp_path: Path) -> None:
    for _ in range(2):
        _one_line_refusal(
            _terrarium("import", str(tmp_path), "--out", str(tmp_path / "book.db")),
            f"{tmp_path} is a folder: give the book's file",
        )
    assert list(tmp_path.iterdir()) == []


def test_lineage_of_an_unknown_name_suggests_the_names_meant_first(sample_store: Path) -> None:
    done = _terrarium("lineage", "--db", str(sample_store), "Fathom")
    line = _one_line_refusal(done, "no glossary entry named 'Fathom'")
    assert line.endswith("did you mean: Fathom Gate?")  # not entries whose definitions name it


def test_a_book_run_resumes_without_naming_its_corpus_again(
    tmp_path: Path, mars: Callable[[Path], Path]
) -> None:
    """The store records its corpus: `run` (and `edition`) without --corpus continue the book,
    where they opened the bundled sample and refused the store as another corpus's."""
    corpus, db = tmp_path / "mars.db", tmp_path / "mars-glossary.db"
    mars(corpus)
    first = _terrarium(*run_args(db, corpus, max_scenes=2, concurrency=1))
    assert first.returncode == 0, first.stderr
    resumed = _terrarium(*run_args(db, threads="..1", concurrency=1))
    assert resumed.returncode == 0, resumed.stderr
    assert (
        resumed.stdout.startswith("run finished in ")
        and "chapter 1 (t00000-1) done" in resumed.stderr  # a book's chapter by its number
    )
    again = _terrarium(*run_args(db, threads="..1"))
    assert again.returncode == 0, again.stderr
    assert "nothing left to annotate" in again.stdout
    edition = _terrarium("edition", "--offline", "--db", str(db), "--as-of-thread", "1")
    assert edition.returncode == 0, edition.stderr
    lines = edition.stdout.splitlines()
    assert lines[0].startswith("chapter 1 (t00000-1): ") and " rewritten (" in lines[0]
    for line in lines[:-1]:  # "1 entries rewritten (0 kept), 1 requests" was said
        counts = re.search(
            r": (\d+) (entry|entries) rewritten \(\d+ kept\), (\d+) (requests?),", line
        )
        assert counts, line
        assert (counts[1] == "1") == (counts[2] == "entry"), line
        assert (counts[3] == "1") == (counts[4] == "request"), line
    assert lines[-1].startswith("edition as of chapter 1 (t00000-1) written in "), lines
    status = _terrarium("status", "--db", str(db)).stdout
    assert status.splitlines()[0].endswith("(the book “A Princess of Mars”)")
    assert "t00000-1               curated" in status


def test_dev_hands_the_code_location_the_corpus_a_book_store_was_built_from(
    tmp_path: Path, mars: Callable[[Path], Path]
) -> None:
    """`terrarium dev --db BOOK-GLOSSARY.db` without --corpus: the code location is given the
    book (checked by hand through a real `dagster dev`: its sensor adds the book's chapters as
    partitions and a backfill of two of them succeeds); a new store, or a corpus named, is left
    as it is."""
    from terrarium_dagster.cli.dev_command import _recorded_corpus
    from terrarium_dagster.cli.site_refresher import SiteRefresher
    from terrarium_dagster.config import load_settings

    corpus, db = tmp_path / "mars.db", tmp_path / "mars-glossary.db"
    mars(corpus)
    assert _terrarium(*run_args(db, corpus, max_scenes=1, concurrency=1)).returncode == 0
    settings = load_settings(db=str(db))
    with SiteRefresher(settings, tmp_path / "exports").corpus() as opened:
        assert _recorded_corpus(settings, opened.path) == str(corpus)
    named = load_settings(db=str(db), corpus=corpus)
    assert _recorded_corpus(named, corpus) is None
    fresh = load_settings(db=str(tmp_path / "new.db"))
    assert _recorded_corpus(fresh, corpus) is None


def test_dev_says_when_its_dagster_instance_would_not_queue_a_storys_runs(tmp_path: Path) -> None:
    """`terrarium dev` with a DAGSTER_HOME whose dagster.yaml sets no pool limit (or none at
    all, or outside a checkout with no DAGSTER_HOME: a temporary instance) says in one line that
    a second run of one story would fail on the writer lease, and what to add; the checkout's
    own dagster.yaml and the PostgreSQL recipe's say nothing."""
    from terrarium_dagster.cli.dev_command import instance_pool_problem

    root = Path(__file__).resolve().parents[1]
    assert instance_pool_problem(str(root)) is None
    assert instance_pool_problem(str(root / "deploy" / "local")) is None
    assert "temporary folder" in str(instance_pool_problem(None))
    homes = {
        "none": None,
        "telemetry only": "telemetry:\n  enabled: false\n",
        "run granularity": "concurrency:\n  pools:\n    default_limit: 1\n    granularity: run\n",
        "no limit": "concurrency:\n  pools:\n    granularity: op\n",
        "not yaml": "concurrency: [\n",
    }
    for name, text in homes.items():
        home = tmp_path / name.replace(" ", "-")
        home.mkdir()
        if text is not None:
            (home / "dagster.yaml").write_text(text, encoding="utf-8")
        said = instance_pool_problem(str(home))
        assert said is not None and "\n" not in said, name
        assert "writer lease" in said and "default_limit: 1, granularity: op" in said, name


def test_a_book_or_a_store_given_as_the_corpus_is_named_with_what_to_do(
    sample_store: Path, tmp_path: Path
) -> None:
    """`--corpus BOOK.txt` (the book not imported yet) points at `terrarium import`, not at
    SQLite's "file is not a database"; a store given as --corpus is called a store; `dev` says
    nothing about its site before refusing."""
    db = tmp_path / "new.db"
    before = digest(sample_store)
    for _ in range(2):
        for command in ("run", "dev"):
            args = [command, "--offline", "--corpus", str(MARS), "--db", str(db)]
            line = _one_line_refusal(_terrarium(*args, timeout=60), f"{MARS} is not a corpus")
            assert f"`terrarium import {MARS} --out CORPUS.db`" in line
            assert (_terrarium(*args, timeout=60)).stdout == ""
        _one_line_refusal(
            _terrarium(*run_args(db, sample_store)),
            f"{sample_store} is an annotator store, not a corpus: give it as --db",
        )
    assert digest(sample_store) == before
    assert sorted(path.name for path in tmp_path.iterdir()) == []


def test_a_store_whose_corpus_moved_says_so_and_a_run_given_it_records_the_new_place(
    tmp_path: Path, mars: Callable[[Path], Path]
) -> None:
    """The recorded corpus renamed: the readers name the path that is gone (not the bundled
    sample they fell back to), status notes it, and one run given --corpus repoints the store."""
    corpus, db = tmp_path / "mars.db", tmp_path / "mars-glossary.db"
    mars(corpus)
    assert _terrarium(*run_args(db, corpus, max_scenes=1, concurrency=1)).returncode == 0
    moved = corpus.rename(tmp_path / "books-mars.db")
    for _ in range(2):
        _one_line_refusal(
            _terrarium("lineage", "--db", str(db), "E1"),
            f"was built from the corpus {corpus}, which is not there any more",
            "give --corpus where it is now",
        )
    status = _terrarium("status", "--db", str(db))
    assert status.returncode == 0 and f"corpus: {corpus} is not there any more" in status.stdout
    assert _terrarium("lineage", "--db", str(db), "--corpus", str(moved), "E1").returncode == 0
    assert _terrarium("lineage", "--db", str(db), "E1").returncode == 2  # a reader writes nothing
    resumed = _terrarium(*run_args(db, moved, max_scenes=1, concurrency=1))
    assert resumed.returncode == 0, resumed.stderr
    for _ in range(2):
        again = _terrarium("lineage", "--db", str(db), "E1")
        assert again.returncode == 0 and again.stdout.startswith("E1 "), again.stderr
    assert "corpus:" not in _terrarium("status", "--db", str(db)).stdout


def test_serve_and_export_say_the_same_of_a_books_site_as_the_json_export(tmp_path: Path) -> None:
    """`serve` said "built the reader's site: 17 entries, 3 threads" of a book whose export said
    "3 chapters": both now say chapters, and count the entries as the JSON export does."""
    corpus, db = tmp_path / "mars.db", tmp_path / "mars-glossary.db"
    imported = _terrarium("import", str(MARS), "--out", str(corpus)).stdout
    chapters = re.search(r"imported (\d+) chapters", imported)
    assert chapters and int(chapters.group(1)) > 1, imported
    assert _terrarium(*run_args(db, corpus)).returncode == 0
    out = tmp_path / "exports"
    exported = _terrarium("export", "--db", str(db), "--format", "json", "--out", str(out))
    counts = re.search(r"exported (\d+) entries \((.*)\) to", exported.stdout)
    assert counts, exported.stdout
    said = []
    for _ in range(2):
        site = _terrarium("export", "--db", str(db), "--format", "site", "--out", str(out / "s"))
        assert site.returncode == 0, site.stderr
        said.append(site.stdout)
    assert said[0] == said[1]
    kept = counts.group(2).replace("in the glossary", "in the glossary after the last chapter")
    summary = f"{chapters.group(1)} chapters, {counts.group(1)} entries across them: {kept}"
    assert said[0] == f"wrote the reader's site ({summary}) to {out / 's'}\n"
    process = subprocess.Popen(
        [TERRARIUM, "serve", "--db", str(db), "--port", "0", "--exports-dir", str(tmp_path / "x")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == f"built the reader's site: {summary}\n"
        assert "and the source paragraphs at http://" in process.stdout.readline()  # a book's
    finally:
        interrupt(process)


def test_a_site_or_wiki_export_never_replaces_a_folder_holding_anything_else(
    sample_store: Path, tmp_path: Path
) -> None:
    """`export --format site --out PROJECT` replaced the folder whole, deleting the store and
    the notes beside it (and `--out .` was a traceback): a folder holding anything the export
    did not write is refused in one line, nothing changed (naming what the user put there
    before a hidden manifest another export wrote); its own folder is replaced."""
    project = tmp_path / "project"
    project.mkdir()
    db = project / "glossary.db"
    shutil.copyfile(sample_store, db)
    (project / "notes.txt").write_text("to do: read chapter 3\n", encoding="utf-8")
    # a wiki exported there first: its hidden manifest is not what the refusal names first
    done = _terrarium("export", "--db", str(db), "--format", "wiki", "--out", str(project))
    assert done.returncode == 0, done.stderr
    assert (project / ".export-manifest.json").exists()
    (project / "wiki" / "my-page.txt").write_text("my own page\n", encoding="utf-8")
    before = {path: digest(path) for path in project.rglob("*") if path.is_file()}
    for _ in range(2):
        _one_line_refusal(
            _terrarium("export", "--db", str(db), "--format", "site", "--out", str(project)),
            f"{project} holds files that are not the reader's site (glossary.db",
            "nothing was written",
        )
        _one_line_refusal(
            _terrarium(
                "export", "--db", "glossary.db", "--format", "site", "--out", ".", cwd=project
            ),
            "--out . is the current folder",
        )
        _one_line_refusal(
            _terrarium("export", "--db", str(db), "--format", "wiki", "--out", str(project)),
            f"{project / 'wiki'} holds files that are not the wiki (my-page.txt)",
        )
    after = {path: digest(path) for path in project.rglob("*") if path.is_file()}
    assert {path: after.get(path) for path in before} == before
    site = project / "site"
    for _ in range(2):  # the site's own folder is replaced, again and again
        done = _terrarium("export", "--db", str(db), "--format", "site", "--out", str(site))
        assert done.returncode == 0, done.stderr
    assert sorted(path.name for path in site.iterdir()) == [
        "data",
        "glossary-data.js",
        "index.html",
    ]


def test_a_configuration_file_that_is_not_yaml_is_named_by_line_and_column(tmp_path: Path) -> None:
    """PyYAML's excerpt ('in "<unicode string>", line 1, column 14: concurrency: [1 ^') pasted
    into the line read as noise: the line and column and the problem are enough."""
    (tmp_path / "terrarium.yaml").write_text("concurrency: [1\n", encoding="utf-8")
    for args in (run_args("store.db"), ["status", "--db", "store.db"]) * 2:
        line = _one_line_refusal(
            _terrarium(*args, cwd=tmp_path),
            f"cannot read configuration file {tmp_path / 'terrarium.yaml'}: line 2, column 1: "
            "expected ',' or ']', but got '<stream end>' (not valid YAML)",
        )
        assert "<unicode string>" not in line and "^" not in line
    assert sorted(path.name for path in tmp_path.iterdir()) == ["terrarium.yaml"]


def test_import_replace_writes_over_a_corpus_only_never_a_store_or_the_book(
    sample_store: Path, tmp_path: Path
) -> None:
    """`import BOOK --out GLOSSARY.db --replace` wrote a corpus over the annotator store (its
    glossary gone, exit 0); --replace is for an earlier import."""
    store = tmp_path / "glossary.db"
    shutil.copyfile(sample_store, store)
    book = tmp_path / "mars.txt"
    shutil.copyfile(MARS, book)
    before = {path: digest(path) for path in (store, book)}
    for _ in range(2):
        _one_line_refusal(
            _terrarium("import", str(book), "--out", str(store), "--replace"),
            f"--out {store} is an annotator store (its glossary would be lost)",
            "--replace writes over a corpus only",
        )
        _one_line_refusal(
            _terrarium("import", str(book), "--out", str(book), "--replace"),
            f"--out {book} is not a corpus (not an SQLite file)",
        )
    assert {path: digest(path) for path in before} == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["glossary.db", "mars.txt"]
    corpus = tmp_path / "mars.db"
    for _ in range(2):  # an earlier import is written over
        done = _terrarium("import", str(book), "--out", str(corpus), "--replace")
        assert done.returncode == 0 and done.stdout.startswith("imported "), done.stderr


@pytest.mark.parametrize(
    "command",
    [
        ("status",),
        ("lineage", "E1"),
        ("recover", "--out", "new.db"),
        ("serve", "--port", "0"),
        ("why", "E1", "--offline"),
        ("undo", "--decision", "1"),
        ("run", "--offline"),
    ],
)
def test_a_folder_or_notes_as_the_store_say_what_they_are_and_what_to_do(
    command: tuple[str, ...], tmp_path: Path
) -> None:
    """A folder as --db was 'no annotator store at DIR' (and `serve` served it as a store not
    written yet); notes as a reader's --db were offered 'a new file name for a new store',
    which only a run can use (`why` and `undo`, which need a store, offered it too)."""
    notes = tmp_path / "notes.txt"
    notes.write_text("shopping: lamp oil\n", encoding="utf-8")
    for _ in range(2):
        _one_line_refusal(
            _terrarium(*command, "--db", str(tmp_path), cwd=tmp_path, timeout=30),
            f"--db {tmp_path} is a folder: give the annotator store's file",
        )
        line = _one_line_refusal(
            _terrarium(*command, "--db", str(notes), cwd=tmp_path, timeout=30),
            f"{notes} is not an annotator store (not an SQLite database)",
        )
        assert ("a new file name for a new store" in line) == (command[0] == "run"), line
    assert sorted(path.name for path in tmp_path.iterdir()) == ["notes.txt"]


def test_a_gold_list_that_is_not_yaml_or_not_text_is_one_line(
    sample_store: Path, tmp_path: Path
) -> None:
    """A gold list in another encoding was a UnicodeDecodeError traceback, then Python's codec
    message ("'utf-8' codec can't decode byte 0xff in position 0: invalid start byte"); one
    that is not YAML pasted PyYAML's excerpt with its caret."""
    broken, binary = tmp_path / "broken.yaml", tmp_path / "binary.yaml"
    broken.write_text("terms: [a\n", encoding="utf-8")
    binary.write_bytes(b"\xff\xfeterms: []\n")
    for _ in range(2):
        _one_line_refusal(
            _terrarium("score", "--db", str(sample_store), "--gold", str(broken)),
            f"cannot read the gold list {broken}: line 2, column 1: expected ',' or ']'",
        )
        _one_line_refusal(
            _terrarium("score", "--db", str(sample_store), "--gold", str(binary)),
            f"cannot read the gold list {binary}: not UTF-8 text (byte 0xff at 0): give a YAML",
        )
        # a configuration file that is not text says so the same way
        _one_line_refusal(
            _terrarium("status", "--db", str(sample_store), env={"TERRARIUM_CONFIG": str(binary)}),
            f"cannot read configuration file {binary}: not UTF-8 text (byte 0xff at 0)",
        )


def test_an_empty_gold_list_or_one_without_terms_is_one_line_not_a_recall_of_0_of_0(
    sample_store: Path, tmp_path: Path
) -> None:
    """`terms: []` scored 'recall 0/0 = 0.00', exit 0; a bare list of names (no `terms:`) or an
    empty file said 'document: Input should be a valid dictionary or instance of GoldList'."""
    cases = {
        "none.yaml": ("terms: []\n", "has no terms: nothing to measure"),
        "bare.yaml": ("- Alan Breck\n", "is a list without its `terms:` key: write `terms:`"),
        "empty.yaml": ("", "is empty: write `terms:` on the first line"),
    }
    for name, (text, words) in cases.items():
        gold = tmp_path / name
        gold.write_text(text, encoding="utf-8")
        for _ in range(2):
            line = _one_line_refusal(
                _terrarium("score", "--db", str(sample_store), "--gold", str(gold)),
                f"gold list {gold} {words}",
            )
            assert "GoldList" not in line, line


def test_snapshots_before_a_chapters_end_say_when_one_is_taken_and_no_more(
    tmp_path: Path, mars: Callable[[Path], Path]
) -> None:
    """After a run stopped by --max-scenes, `snapshots` said 'no snapshots yet (one is taken at
    every chapter end and at a clean stop)': a clean stop writes none (README, Data and
    guarantees), and `--thread ch1` said the store had none at all."""
    corpus, db = tmp_path / "mars.db", tmp_path / "mars-glossary.db"
    mars(corpus)
    assert _terrarium(*run_args(db, corpus, max_scenes=1)).returncode == 0
    for _ in range(2):
        done = _terrarium("snapshots", "--db", str(db))
        assert done.returncode == 0, done.stderr
        assert done.stdout == "no snapshots yet (one is taken at every chapter's end)\n"
        one = _terrarium("snapshots", "--db", str(db), "--thread", "ch1")
        assert one.returncode == 0, one.stderr
        assert one.stdout == "no snapshot of chapter 1 (t00000-1) yet (one is taken at its end)\n"


def test_an_edition_before_a_chapter_is_curated_names_the_chapters_by_number(
    tmp_path: Path, mars: Callable[[Path], Path]
) -> None:
    """`edition --as-of-thread ch3` of a book whose second chapter was being annotated said
    'the edition as of t00002-91 needs every thread up to it curated; t00001-35 is
    annotating': chapters, by their numbers as `status` lists them, and the command to run."""
    corpus, db = tmp_path / "mars.db", tmp_path / "mars-glossary.db"
    mars(corpus)
    assert _terrarium(*run_args(db, corpus, max_scenes=1)).returncode == 0
    for _ in range(2):
        _one_line_refusal(
            _terrarium("edition", "--offline", "--db", str(db), "--as-of-thread", "ch2"),
            "the edition as of chapter 2 (",
            "needs every chapter up to it curated; chapter 1 (t00000-1) is annotating: run it "
            "first (`terrarium run`)",
        )


def test_snapshots_and_undo_of_a_book_name_chapters_and_paragraphs(
    tmp_path: Path, mars: Callable[[Path], Path]
) -> None:
    """`snapshots` of an imported book said 'thread_end ... 1#20' where `why` says 'chapter end
    ... paragraph 20', and named the chapter by its key alone; `status` listed the chapters
    without their titles; `undo` said 're-export that thread'."""
    corpus, db = tmp_path / "mars.db", tmp_path / "mars-glossary.db"
    mars(corpus)
    assert _terrarium(*run_args(db, corpus, threads="..1", concurrency=1)).returncode == 0
    for _ in range(2):
        table = _terrarium("snapshots", "--db", str(db))
        assert table.returncode == 0, table.stderr
        header, row = table.stdout.splitlines()[:2]
        assert header.split()[:4] == ["id", "kind", "chapter", "last"], header
        assert row.split()[1:6] == ["chapter_end", "ch1", "(t00000-1)", "paragraph", row.split()[5]]
        assert row.split()[5].isdigit() and "#" not in row, row
        status = _terrarium("status", "--db", str(db))
        chapter = next(line for line in status.stdout.splitlines() if line.startswith("  ch1 "))
        assert chapter.split()[:3] == ["ch1", "t00000-1", "curated"], chapter
        assert chapter.endswith("  “CHAPTER I: ON THE ARIZONA HILLS”"), chapter
    undone = _terrarium("undo", "--db", str(db), "--revision", "1")
    assert undone.returncode == 0, undone.stderr
    last = undone.stdout.splitlines()[-1]
    assert last == "  the glossary as of chapter 1 (t00000-1) includes it (re-export that chapter)"


def test_why_twice_counts_its_calls_in_english_and_logs_each_exchange(
    sample_store: Path, tmp_path: Path
) -> None:
    db = tmp_path / "why.db"
    shutil.copyfile(sample_store, db)
    answers = [_terrarium("why", "--offline", "--db", str(db), "E1") for _ in "12"]
    for number, done in enumerate(answers, start=1):
        assert done.returncode == 0 and done.stderr == "", done.stderr
        last = done.stdout.splitlines()[-1]
        assert "call(s)" not in last and re.match(r"\(\d+ calls?, ", last), last
        assert last.endswith(f"exchange logged as summon {number})"), last
    assert answers[0].stdout.splitlines()[:-1] == answers[1].stdout.splitlines()[:-1]
    question = " ".join(_terrarium("why", "--help").stdout.split())
    assert '(<definition>)? Which posts is it based on?"' in question


def test_an_unreachable_server_with_no_retries_says_one_attempt(tmp_path: Path) -> None:
    done = _terrarium(
        *run_args(tmp_path / "s.db", agent_url="http://127.0.0.1:9/v1", max_retries=0)
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[-1].startswith(
        "terrarium: failed: GET /v1/models failed after 1 attempt; last error: cannot connect"
    ), done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_run_stopped_by_max_scenes_says_what_is_left_and_how_to_go_on(
    tmp_path: Path, mars: Callable[[Path], Path]
) -> None:
    """`run --max-scenes N` printed only 'run finished in ...': nothing said the book was not
    done."""
    corpus, db = tmp_path / "mars.db", tmp_path / "mars-glossary.db"
    mars(corpus)
    first = _terrarium(*run_args(db, corpus, max_scenes=2, concurrency=1))
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0].startswith("run finished in ") and len(lines) == 2, first.stdout
    left = re.fullmatch(
        r"stopped at --max-scenes 2: (\d+) chapters \((\d+) scenes\) left; "
        r"the same command resumes",
        lines[1],
    )
    assert left, lines[1]
    status = _terrarium("status", "--db", str(db))
    total = len(sqlite3.connect(corpus).execute("SELECT id FROM thread").fetchall())
    # the chapters never started are counted too (a 61-chapter book said "chapters: 22")
    assert f"chapters: {total} (annotating 1, not started {total - 1})" in status.stdout
    rest = _terrarium(*run_args(db, max_scenes=10_000))
    assert rest.returncode == 0 and len(rest.stdout.splitlines()) == 1, rest.stdout
    assert rest.stderr.count(" done (") == int(left.group(1)), rest.stderr


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
@pytest.mark.parametrize(
    ("format_name", "out"),
    [("json", "x.json"), ("yaml", "x"), ("lorebook", "l.json"), ("wiki", "w"), ("site", "s")],
)
def test_an_export_the_system_refuses_to_write_is_one_line(
    sample_store: Path, format_name: str, out: str
) -> None:
    """/proc passes the permission checks (as root) but takes no file: each format was a
    traceback from tempfile or mkdir."""
    target = Path("/proc") / out
    for _ in range(2):
        _one_line_refusal(
            _terrarium(
                "export", "--db", str(sample_store), "--format", format_name, "--out", str(target)
            ),
            f"--out {target}: cannot write there: ",
        )


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_an_import_or_a_site_the_system_refuses_to_write_is_one_line(
    sample_store: Path, tmp_path: Path
) -> None:
    """`import BOOK --out /proc/x.db` was sqlite3's traceback; `serve --exports-dir /proc/x`
    one from mkdir: the import is one line, the server warns once and serves the posts."""
    for _ in range(2):
        _one_line_refusal(
            _terrarium("import", str(MARS), "--out", "/proc/mars.db"),
            "--out /proc/mars.db: cannot write there: ",
        )
    process = subprocess.Popen(
        [TERRARIUM, "serve", "--db", str(sample_store), "--port", "0", "--exports-dir", "/proc/x"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.readline().startswith("serving the reader's site")
        warning = process.stderr.readline()
        assert warning.startswith("terrarium: warning: no reader's site (cannot write /proc/x")
    finally:
        interrupt(process)
        assert process.stderr is not None
        assert "Traceback" not in process.stderr.read()


def test_recover_of_a_store_damaged_only_in_an_index_does_not_call_it_sound(
    sample_store: Path, tmp_path: Path
) -> None:
    """Every command refused the store as damaged; `recover` then said it 'showed no damage'
    (no row was lost: the damage was in an index)."""
    db = tmp_path / "damaged.db"
    shutil.copyfile(sample_store, db)
    with sqlite3.connect(db) as conn:
        root = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE type = 'index' AND name = 'entry_norm_term'"
        ).fetchone()[0]
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    with db.open("r+b") as handle:
        handle.seek((root - 1) * page_size)
        handle.write(b"\xff" * 64)
    line = _one_line_refusal(_terrarium("status", "--db", str(db)), "is damaged")
    assert "found 1 problem;" in line, line
    for verbose in (("-v", "status"), ("status", "-v")):  # -v before or after the command
        logged = _terrarium(*verbose, "--db", str(db))
        assert logged.returncode == 2 and "btreeInitPage" in logged.stderr, logged.stderr
    before = digest(db)
    out = tmp_path / "recovered.db"
    done = _terrarium("recover", "--db", str(db), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "showed no damage" not in done.stdout
    assert done.stdout.splitlines()[-1] == (
        f"{db} is damaged (1 problem by SQLite's integrity check) but every row was read: {out} "
        f"holds them all; the damaged store is unchanged; run with `--db {out}`"
    )
    assert digest(db) == before
    assert _terrarium("status", "--db", str(out)).returncode == 0


def test_lineage_of_a_merged_entrys_id_says_it_was_merged_not_found_by(sample_store: Path) -> None:
    """`lineage E76` of an entry merged into E74 printed 'found by: E76' under E74."""
    with sqlite3.connect(f"file:{sample_store}?mode=ro", uri=True) as conn:
        merged, target = conn.execute(
            "SELECT id, merged_into FROM entry WHERE merged_into IS NOT NULL ORDER BY id LIMIT 1"
        ).fetchone()
    conn.close()
    for _ in range(2):
        done = _terrarium("lineage", "--db", str(sample_store), f"E{merged}")
        assert done.returncode == 0, done.stderr
        first, second = done.stdout.splitlines()[:2]
        assert first.startswith(f"E{target} ")
        assert second == f"  E{merged} was merged into this entry (its revisions below)"


def test_a_bad_setting_value_is_said_with_the_value_given_and_without_pydantics_prefix(
    tmp_path: Path,
) -> None:
    """'site_url: Value error, must start with ...'; 'concurrency: Input should be a valid
    integer' without the value that was not one (a misspelt value in terrarium.yaml)."""
    (tmp_path / "terrarium.yaml").write_text("concurrency: lots\n", encoding="utf-8")
    for _ in range(2):
        line = _one_line_refusal(
            _terrarium("lineage", "--db", "s.db", "--site-url", "x", "E1", cwd=tmp_path),
            "site_url: must start with http:// or https:// (given 'x')",
        )
        assert "Value error" not in line
        _one_line_refusal(
            _terrarium("status", "--db", "s.db", cwd=tmp_path),
            f"concurrency (in {tmp_path / 'terrarium.yaml'}): Input should be a valid integer, "
            "unable to parse string as an integer (given 'lots')",
        )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["terrarium.yaml"]


def test_recover_into_a_folder_writes_the_new_store_inside_it(
    sample_store: Path, tmp_path: Path
) -> None:
    """`recover --out dir/` wrote a file named `dir`, and over an existing folder was refused as
    if the folder were a store: a folder (existing, or a path ending in /) gets the new store
    inside it, named after the damaged one, and the same command again is refused in one line."""
    before = digest(sample_store)
    named = f"{sample_store.stem}-recovered.db"
    made = tmp_path / "made"
    existing = tmp_path / "existing"
    existing.mkdir()
    for out, folder in ((f"{made}/", made), (str(existing), existing)):
        done = _terrarium("recover", "--db", str(sample_store), "--out", out)
        assert done.returncode == 0, done.stderr
        assert folder.is_dir() and [path.name for path in folder.glob("*.db")] == [named]
        assert f"into {folder / named} " in done.stdout.splitlines()[0], done.stdout
        assert _terrarium("status", "--db", str(folder / named)).returncode == 0
        again = _terrarium("recover", "--db", str(sample_store), "--out", out)
        _one_line_refusal(again, f"--out {folder / named} exists")
        assert [path.name for path in folder.glob("*.db")] == [named]
    a_file = tmp_path / "taken.db"
    a_file.write_text("notes\n", encoding="utf-8")
    _one_line_refusal(
        _terrarium("recover", "--db", str(sample_store), "--out", f"{a_file}/"),
        "names a folder, but",
        "is a file",
    )
    assert a_file.read_text(encoding="utf-8") == "notes\n"
    assert digest(sample_store) == before
    usage = _terrarium("recover", "--help").stdout
    assert "ending in /" in " ".join(usage.split())


def test_recover_refuses_a_corpus_or_an_empty_file_rather_than_copy_nothing(
    tmp_path: Path, mars: Callable[[Path], Path]
) -> None:
    """`recover --db book.db` (a corpus, as the README's first try names it) wrote an empty store,
    exit 0: 'recovered 0 rows ... book.db showed no damage and is unchanged; rec.db is a copy of
    it'. A corpus, an empty file or another program's tables are refused in one line, nothing
    written."""
    corpus = tmp_path / "book.db"
    mars(corpus)
    empty = tmp_path / "empty.db"
    empty.touch()
    other = tmp_path / "other.db"
    with closing(sqlite3.connect(other)) as conn:
        conn.execute("CREATE TABLE recipes (name TEXT)")
        conn.commit()
    out = tmp_path / "rec.db"
    for given, words in (
        (corpus, "is a corpus, not an annotator store"),
        (empty, "is an empty database, not an annotator store"),
        (other, "is an SQLite database but not an annotator store"),
    ):
        before = digest(given)
        for _ in range(2):
            _one_line_refusal(
                _terrarium("recover", "--db", str(given), "--out", str(out)),
                words,
                "nothing was written",
            )
            assert not out.exists()
        assert digest(given) == before


@pytest.mark.parametrize(
    ("variable", "given", "flag"),
    [("TERRARIUM_OFFLINE", "maybe", ["--offline"]), ("TERRARIUM_CONCURRENCY", "0", [])],
)
def test_a_bad_value_in_the_environment_is_refused_by_name_even_where_an_option_overrides_it(
    tmp_path: Path, variable: str, given: str, flag: list[str]
) -> None:
    """`TERRARIUM_OFFLINE=maybe` with `run --offline` ran as if it were not set: every command
    names the variable and its value, in one line, and writes nothing."""
    run = [*run_args("s.db"), *flag, "--max-scenes", "1"]
    if variable == "TERRARIUM_CONCURRENCY":
        run += ["--concurrency", "2"]
    for args in (run, ["status", "--db", "s.db"], run_args("t.db", concurrency=1)):
        done = _terrarium(*args, cwd=tmp_path, env={variable: given})
        setting = variable.removeprefix("TERRARIUM_").lower()
        _one_line_refusal(done, f"invalid configuration: {setting} ({variable}): ", repr(given))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("setting", "given", "flag"),
    [("offline", "maybe", ["--offline"]), ("concurrency", "lots", ["--concurrency", "3"])],
)
def test_a_bad_value_in_the_configuration_file_is_refused_even_where_an_option_overrides_it(
    tmp_path: Path, setting: str, given: str, flag: list[str]
) -> None:
    """`offline: maybe` in terrarium.yaml failed `status` but `run --offline` ran over it
    (and `--concurrency 3` over `concurrency: lots`): every command says the bad value."""
    (tmp_path / "terrarium.yaml").write_text(f"{setting}: {given}\n", encoding="utf-8")
    run = [*run_args("s.db", offline=False), *flag, "--max-scenes", "1"]
    if "--offline" not in flag:
        run.append("--offline")
    for args in (
        run,
        ["status", "--db", "s.db"],
        ["export", "--db", "s.db", "--format", "json", "--out", "g.json"],
    ):
        _one_line_refusal(
            _terrarium(*args, cwd=tmp_path),
            f"invalid configuration: {setting} (in {tmp_path / 'terrarium.yaml'}): ",
            repr(given),
        )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["terrarium.yaml"]
    # a value checked across settings is judged as run: the option given wins
    (tmp_path / "terrarium.yaml").write_text(
        "offline: true\ncontext_budget: 4096\nmax_tokens: 3000\n"
    )
    done = _terrarium(*run_args("s.db", max_scenes=1, context_budget=8192), cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_a_resumed_runs_progress_line_counts_this_runs_work_and_says_so(tmp_path: Path) -> None:
    """A resumed run's line put this run's entries beside token figures that read as the
    store's: every figure is this run's, labelled so, and the tokens name which is which."""
    db = tmp_path / "s.db"
    # blocks of 16: a scene limit ends each run at a block's end, here a thread's end
    limited = {"max_scenes": 1, "concurrency": 16}
    assert _terrarium(*run_args(db, **limited)).returncode == 0

    def entries() -> int:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            (count,) = conn.execute("SELECT COUNT(*) FROM entry").fetchone()
        conn.close()
        return count

    before = entries()
    resumed = _terrarium(*run_args(db, **limited))
    assert resumed.returncode == 0, resumed.stderr
    (line,) = resumed.stderr.splitlines()
    shown = re.search(
        r" done \(1/(\d+)\): \d+ scenes in \S+ · this run: scenes \d+/(\d+) · entries (\d+) new, "
        r"\d+ updated · tokens (\d+) prompt \+ (\d+) completion \(\d+% cached\) · ",
        line,
    )
    assert shown, line
    left = re.search(r"(\d+) threads \((\d+) scenes\) left", resumed.stdout)
    finished = re.search(r": \d+ calls, (\d+) prompt tokens .*, (\d+) completion", resumed.stdout)
    assert left and finished, resumed.stdout
    threads, scenes, created, prompt, completion = map(int, shown.groups())
    assert created == entries() - before > 0  # the entries this run made, not the store's
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        (store_prompt,) = conn.execute("SELECT SUM(prompt_tokens) FROM agent_call").fetchone()
    conn.close()
    assert 0 < prompt <= int(finished.group(1)) < store_prompt  # this run's tokens
    assert 0 < completion <= int(finished.group(2))
    # out of what was left when this run began: the thread it did and the ones still left
    assert threads == int(left.group(1)) + 1
    assert scenes > int(left.group(2))
    usage = " ".join(_terrarium("run", "--help").stdout.split())
    assert "Its figures are this run's" in usage


def test_a_book_of_one_chapter_is_imported_as_one_chapter_not_one_chapters(
    tmp_path: Path,
) -> None:
    """A text with no chapter headings is one chapter, and the import's line says so in the
    singular ("imported 1 chapters" read as a slip)."""
    book = tmp_path / "tale.txt"
    paragraphs = [
        f"Paragraph {number} of the tale, where Maren Vell walks the long grey shore of "
        "Quillhaven at dusk and counts, one by one and twice over to be sure, the lanterns "
        "the tide has left behind it on the wet stones below the old sea wall."
        for number in range(1, 13)
    ]
    start = "*** START OF THE PROJECT GUTENBERG EBOOK TALE ***"
    end = "*** END OF THE PROJECT GUTENBERG EBOOK TALE ***"
    book.write_text("\r\n\r\n".join([start, *paragraphs, end]) + "\r\n", encoding="utf-8")
    imported = _terrarium("import", str(book), "--out", str(tmp_path / "tale.db"))
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.startswith("imported 1 chapter, 12 paragraphs ("), imported.stdout
