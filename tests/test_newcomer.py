"""What a newcomer trying every command twice trips on: a thread named as the tables show it,
an edition that says each thread once, and a site server that refuses what is not its store.

`terrarium` (its `main` in-process; the first run and the servers as the installed script) on
the bundled sample (annotated offline once for the module)
and a real book (a trimmed Project Gutenberg text) imported with `terrarium import`. The book's
own commands are in tests/test_newcomer_books.py, settings and usage in
tests/test_newcomer_settings.py (tests/support/newcomer.py: what they share).
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import httpx
import pytest

from tests.support.cli import TERRARIUM, digest, interrupt, run_args
from tests.support.newcomer import MARS, one_line_refusal, run_terrarium

pytest_plugins = ["tests.support.newcomer"]


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
    table = run_terrarium("snapshots", "--db", str(sample_store))
    assert table.returncode == 0, table.stderr
    second = table.stdout.splitlines()[2].split()  # header, then one row per snapshot
    key = second[2]
    thread_id = key.split("-")[1]
    with closing(sqlite3.connect(f"file:{sample_store}?mode=ro", uri=True)) as db:
        order = "SELECT thread_key FROM thread_state ORDER BY position, thread_id"
        keys = [row[0] for row in db.execute(order)]
    number = f"ch{keys.index(key) + 1}"  # its number in story order
    for given in (key, thread_id, number, key):  # by key, id, number, and the same again
        done = run_terrarium("snapshots", "--db", str(sample_store), "--thread", given)
        assert done.returncode == 0, done.stderr
        rows = [line for line in done.stdout.splitlines()[1:] if line.split()[0].isdigit()]
        assert [row.split()[2] for row in rows] == [key], done.stdout
        assert done.stdout.splitlines()[-1].startswith("rev: the last revision it saw;")
    one_line_refusal(
        run_terrarium("snapshots", "--db", str(sample_store), "--thread", "t09999-1"),
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
    table = run_terrarium("status", "--db", str(db)).stdout
    first, second = [line.split()[0] for line in table.splitlines() if "curated" in line][1:3]
    done = run_terrarium("edition", "--offline", "--db", str(db), "--as-of-thread", first)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"{first}: ") and "requests" in lines[0]
    assert lines[1].startswith(f"edition as of {first} written in ")
    again = run_terrarium("edition", "--offline", "--db", str(db), "--as-of-thread", second)
    assert again.returncode == 0, again.stderr
    lines = again.stdout.splitlines()
    assert lines[0] == f"{first}: already written (nothing sent)"
    assert lines[1].startswith(f"{second}: ") and " rewritten (" in lines[1]
    assert len(lines) == 3 and lines[2].startswith(f"edition as of {second} written in ")
    third = run_terrarium("edition", "--offline", "--db", str(db), "--as-of-thread", second)
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
        one_line_refusal(
            run_terrarium("serve", "--db", str(notes), "--port", "0", timeout=30),
            "not an annotator store",
        )
        one_line_refusal(
            run_terrarium(
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
                line = one_line_refusal(
                    run_terrarium(*command, "--db", str(given), "--port", "0", timeout=30), words
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


def test_lineage_by_id_and_recover_of_a_sound_store_say_nothing_false(
    sample_store: Path, tmp_path: Path
) -> None:
    by_id = run_terrarium("lineage", "--db", str(sample_store), "E1")
    assert by_id.returncode == 0, by_id.stderr
    assert by_id.stdout.startswith("E1 ") and "found by" not in by_id.stdout
    before = digest(sample_store)
    out = tmp_path / "copy.db"
    done = run_terrarium("recover", "--db", str(sample_store), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "damaged store" not in done.stdout
    assert f"{sample_store} showed no damage and is unchanged; {out} is a copy" in done.stdout
    assert digest(sample_store) == before
    one_line_refusal(
        run_terrarium("recover", "--db", str(sample_store), "--out", str(out)), "exists"
    )


def test_why_and_lineage_of_an_id_no_entry_has_say_what_to_give_instead(
    sample_store: Path,
) -> None:
    """`why E99999` said only 'no entry E99999 in the glossary', and `lineage E99999` 'no
    glossary entry named 'E99999''; both now say to give the term or an alias."""
    before = digest(sample_store)
    for _ in range(2):
        one_line_refusal(
            run_terrarium("why", "E99999", "--offline", "--db", str(sample_store)),
            "no entry E99999 in the glossary (give a term or an alias",
        )
        one_line_refusal(
            run_terrarium("lineage", "E99999", "--db", str(sample_store)),
            "no entry E99999 in the glossary (give the entry's term or an alias)",
        )
    assert digest(sample_store) == before


def test_a_rewind_counts_the_threads_it_reads_again(sample_store: Path, tmp_path: Path) -> None:
    db = tmp_path / "rewind.db"
    shutil.copyfile(sample_store, db)
    table = run_terrarium("status", "--db", str(db)).stdout
    second = [line.split()[0] for line in table.splitlines() if "curated" in line][2]
    done = run_terrarium(*run_args(db, threads=f"..{second}", rewind=True))
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
        run_terrarium("score", "--db", str(sample_store), "--gold", str(gold)) for _ in "12"
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
        done = run_terrarium("score", "--db", str(sample_store), "--gold", str(gold), "--json")
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert (report["gold_terms"], report["missed"]) == (2, ["No Such Name"]), report


def test_lineage_of_an_unknown_name_suggests_the_names_meant_first(sample_store: Path) -> None:
    done = run_terrarium("lineage", "--db", str(sample_store), "Fathom")
    line = one_line_refusal(done, "no glossary entry named 'Fathom'")
    assert line.endswith("did you mean: Fathom Gate?")  # not entries whose definitions name it


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
            line = one_line_refusal(run_terrarium(*args, timeout=60), f"{MARS} is not a corpus")
            assert f"`terrarium import {MARS} --out CORPUS.db`" in line
            assert (run_terrarium(*args, timeout=60)).stdout == ""
        one_line_refusal(
            run_terrarium(*run_args(db, sample_store)),
            f"{sample_store} is an annotator store, not a corpus: give it as --db",
        )
    assert digest(sample_store) == before
    assert sorted(path.name for path in tmp_path.iterdir()) == []


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
    done = run_terrarium("export", "--db", str(db), "--format", "wiki", "--out", str(project))
    assert done.returncode == 0, done.stderr
    assert (project / ".export-manifest.json").exists()
    (project / "wiki" / "my-page.txt").write_text("my own page\n", encoding="utf-8")
    before = {path: digest(path) for path in project.rglob("*") if path.is_file()}
    for _ in range(2):
        one_line_refusal(
            run_terrarium("export", "--db", str(db), "--format", "site", "--out", str(project)),
            f"{project} holds files that are not the reader's site (glossary.db",
            "nothing was written",
        )
        one_line_refusal(
            run_terrarium(
                "export", "--db", "glossary.db", "--format", "site", "--out", ".", cwd=project
            ),
            "--out . is the current folder",
        )
        one_line_refusal(
            run_terrarium("export", "--db", str(db), "--format", "wiki", "--out", str(project)),
            f"{project / 'wiki'} holds files that are not the wiki (my-page.txt)",
        )
    after = {path: digest(path) for path in project.rglob("*") if path.is_file()}
    assert {path: after.get(path) for path in before} == before
    site = project / "site"
    for _ in range(2):  # the site's own folder is replaced, again and again
        done = run_terrarium("export", "--db", str(db), "--format", "site", "--out", str(site))
        assert done.returncode == 0, done.stderr
    assert sorted(path.name for path in site.iterdir()) == [
        "data",
        "glossary-data.js",
        "index.html",
    ]


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
        # without --replace too: the refusal offered --replace, which was then refused
        for replace in (["--replace"], []):
            for line in (
                one_line_refusal(
                    run_terrarium("import", str(book), "--out", str(store), *replace),
                    f"--out {store} is an annotator store (its glossary would be lost)",
                    "--replace writes over a corpus only: give another file name",
                ),
                one_line_refusal(
                    run_terrarium("import", str(book), "--out", str(book), *replace),
                    f"--out {book} is not a corpus (not an SQLite file)",
                    "--replace writes over a corpus only: give another file name",
                ),
            ):
                assert "give --replace" not in line, line
    assert {path: digest(path) for path in before} == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["glossary.db", "mars.txt"]
    corpus = tmp_path / "mars.db"
    for _ in range(2):  # an earlier import is written over
        done = run_terrarium("import", str(book), "--out", str(corpus), "--replace")
        assert done.returncode == 0 and done.stdout.startswith("imported "), done.stderr


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
        one_line_refusal(
            run_terrarium("score", "--db", str(sample_store), "--gold", str(broken)),
            f"cannot read the gold list {broken}: line 2, column 1: expected ',' or ']'",
        )
        one_line_refusal(
            run_terrarium("score", "--db", str(sample_store), "--gold", str(binary)),
            f"cannot read the gold list {binary}: not UTF-8 text (byte 0xff at 0): give a YAML",
        )
        # a configuration file that is not text says so the same way
        one_line_refusal(
            run_terrarium(
                "status", "--db", str(sample_store), env={"TERRARIUM_CONFIG": str(binary)}
            ),
            f"cannot read configuration file {binary}: not UTF-8 text (byte 0xff at 0)",
        )


def test_an_empty_gold_list_or_one_without_terms_is_one_line_not_a_recall_of_0_of_0(
    sample_store: Path, tmp_path: Path
) -> None:
    """`terms: []` scored 'recall 0/0 = 0.00', exit 0; a bare list of names (no `terms:`), an
    empty file or one of plain text said 'document: Input should be a valid dictionary or
    instance of GoldList'."""
    cases = {
        "none.yaml": ("terms: []\n", "has no terms: nothing to measure"),
        "bare.yaml": ("- Alan Breck\n", "is a list without its `terms:` key: write `terms:`"),
        "empty.yaml": ("", "is empty: write `terms:` on the first line"),
        "notes.txt": ("Alan Breck, the Covenant\n", "is plain text, no `terms:` key: write"),
        "number.yaml": ("12\n", "is plain text, no `terms:` key: write `terms:`"),
        # found by a sweep of real books: a bare `terms:` said "Input should be a valid list",
        # a blank term was scored, a misspelt key was ignored, a term listed twice counted twice
        "bare_key.yaml": ("terms:\n", "has no terms: nothing to measure"),
        "blank.yaml": ("terms:\n  - ''\n", "is not a `terms:` list of {term, aliases} or"),
        "typo.yaml": (
            "terms:\n  - {term: Alan Breck, alias: [Alan]}\n",
            "is not a `terms:` list of {term, aliases} or names: terms.0: `alias:` is no key",
        ),
        "twice.yaml": (
            "terms:\n  - Alan Breck\n  - alan breck\n",
            "is not a `terms:` list of {term, aliases} or names: terms: 'alan breck' is listed",
        ),
    }
    for name, (text, words) in cases.items():
        gold = tmp_path / name
        gold.write_text(text, encoding="utf-8")
        for _ in range(2):
            line = one_line_refusal(
                run_terrarium("score", "--db", str(sample_store), "--gold", str(gold)),
                f"gold list {gold} {words}",
            )
            assert "GoldList" not in line, line


def test_why_twice_counts_its_calls_in_english_and_logs_each_exchange(
    sample_store: Path, tmp_path: Path
) -> None:
    db = tmp_path / "why.db"
    shutil.copyfile(sample_store, db)
    answers = [run_terrarium("why", "--offline", "--db", str(db), "E1") for _ in "12"]
    for number, done in enumerate(answers, start=1):
        assert done.returncode == 0 and done.stderr == "", done.stderr
        last = done.stdout.splitlines()[-1]
        assert "call(s)" not in last and re.match(r"\(\d+ calls?, ", last), last
        assert last.endswith(f"exchange logged as summon {number})"), last
    assert answers[0].stdout.splitlines()[:-1] == answers[1].stdout.splitlines()[:-1]
    question = " ".join(run_terrarium("why", "--help").stdout.split())
    assert '(<definition>)? Which posts is it based on?"' in question


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
        one_line_refusal(
            run_terrarium(
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
        one_line_refusal(
            run_terrarium("import", str(MARS), "--out", "/proc/mars.db"),
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
    line = one_line_refusal(run_terrarium("status", "--db", str(db)), "is damaged")
    assert "found 1 problem;" in line, line
    for verbose in (("-v", "status"), ("status", "-v")):  # -v before or after the command
        logged = run_terrarium(*verbose, "--db", str(db))
        assert logged.returncode == 2 and "btreeInitPage" in logged.stderr, logged.stderr
    before = digest(db)
    out = tmp_path / "recovered.db"
    done = run_terrarium("recover", "--db", str(db), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "showed no damage" not in done.stdout
    assert done.stdout.splitlines()[-1] == (
        f"{db} is damaged (1 problem by SQLite's integrity check) but every row was read: {out} "
        f"holds them all; the damaged store is unchanged; run with `--db {out}`"
    )
    assert digest(db) == before
    assert run_terrarium("status", "--db", str(out)).returncode == 0


def test_lineage_of_a_merged_entrys_id_says_it_was_merged_not_found_by(sample_store: Path) -> None:
    """`lineage E76` of an entry merged into E74 printed 'found by: E76' under E74."""
    with sqlite3.connect(f"file:{sample_store}?mode=ro", uri=True) as conn:
        merged, target = conn.execute(
            "SELECT id, merged_into FROM entry WHERE merged_into IS NOT NULL ORDER BY id LIMIT 1"
        ).fetchone()
    conn.close()
    for _ in range(2):
        done = run_terrarium("lineage", "--db", str(sample_store), f"E{merged}")
        assert done.returncode == 0, done.stderr
        first, second = done.stdout.splitlines()[:2]
        assert first.startswith(f"E{target} ")
        assert second == f"  E{merged} was merged into this entry (its revisions below)"


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
        done = run_terrarium("recover", "--db", str(sample_store), "--out", out)
        assert done.returncode == 0, done.stderr
        assert folder.is_dir() and [path.name for path in folder.glob("*.db")] == [named]
        assert f"into {folder / named} " in done.stdout.splitlines()[0], done.stdout
        assert run_terrarium("status", "--db", str(folder / named)).returncode == 0
        again = run_terrarium("recover", "--db", str(sample_store), "--out", out)
        one_line_refusal(again, f"--out {folder / named} exists")
        assert [path.name for path in folder.glob("*.db")] == [named]
    a_file = tmp_path / "taken.db"
    a_file.write_text("notes\n", encoding="utf-8")
    one_line_refusal(
        run_terrarium("recover", "--db", str(sample_store), "--out", f"{a_file}/"),
        "names a folder, but",
        "is a file",
    )
    assert a_file.read_text(encoding="utf-8") == "notes\n"
    assert digest(sample_store) == before
    usage = run_terrarium("recover", "--help").stdout
    assert "ending in /" in " ".join(usage.split())
