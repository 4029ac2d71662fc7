"""What a newcomer trying every command twice trips on with a real book (a trimmed Project
Gutenberg text imported once for the module with `terrarium import`): chapters named by number,
a run resumed without its corpus, a corpus moved, a site said as the export says it.

`terrarium` (its `main` in-process, a server as the installed script:
tests/support/newcomer.py); the bundled sample's are in tests/test_newcomer.py.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

from tests.support.cli import TERRARIUM, digest, interrupt, run_args
from tests.support.newcomer import MARS, one_line_refusal, run_terrarium

pytest_plugins = ["tests.support.newcomer"]


def test_a_dry_run_over_an_existing_corpus_says_the_import_would_need_replace(
    tmp_path: Path,
) -> None:
    corpus = tmp_path / "mars.db"
    dry = run_terrarium("import", str(MARS), "--out", str(corpus), "--dry-run")
    assert dry.returncode == 0 and "exists" not in dry.stdout and not corpus.exists()
    assert run_terrarium("import", str(MARS), "--out", str(corpus)).returncode == 0
    before = digest(corpus)
    for _ in range(2):
        again = run_terrarium("import", str(MARS), "--out", str(corpus), "--dry-run")
        assert again.returncode == 0, again.stderr
        assert again.stdout.splitlines()[-1] == (
            f"{corpus} exists: the import writes over it only with --replace (into a corpus that "
            "already holds this very import, it changes nothing)"
        )
        assert digest(corpus) == before


def test_importing_a_folder_names_it_a_folder(tmp_path: Path) -> None:
    for _ in range(2):
        one_line_refusal(
            run_terrarium("import", str(tmp_path), "--out", str(tmp_path / "book.db")),
            f"{tmp_path} is a folder: give the book's file",
        )
    assert list(tmp_path.iterdir()) == []


def test_a_book_run_resumes_without_naming_its_corpus_again(
    tmp_path: Path, mars: Callable[[Path], Path]
) -> None:
    """The store records its corpus: `run` (and `edition`) without --corpus continue the book,
    where they opened the bundled sample and refused the store as another corpus's."""
    corpus, db = tmp_path / "mars.db", tmp_path / "mars-glossary.db"
    mars(corpus)
    first = run_terrarium(*run_args(db, corpus, max_scenes=2, concurrency=1))
    assert first.returncode == 0, first.stderr
    resumed = run_terrarium(*run_args(db, threads="..1", concurrency=1))
    assert resumed.returncode == 0, resumed.stderr
    assert (
        resumed.stdout.startswith("run finished in ")
        and "chapter 1 (t00000-1) done" in resumed.stderr  # a book's chapter by its number
    )
    again = run_terrarium(*run_args(db, threads="..1"))
    assert again.returncode == 0, again.stderr
    assert "nothing left to annotate" in again.stdout
    edition = run_terrarium("edition", "--offline", "--db", str(db), "--as-of-thread", "1")
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
    status = run_terrarium("status", "--db", str(db)).stdout
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
    assert run_terrarium(*run_args(db, corpus, max_scenes=1, concurrency=1)).returncode == 0
    settings = load_settings(db=str(db))
    with SiteRefresher(settings, tmp_path / "exports").corpus() as opened:
        assert _recorded_corpus(settings, opened.path) == str(corpus)
    named = load_settings(db=str(db), corpus=corpus)
    assert _recorded_corpus(named, corpus) is None
    fresh = load_settings(db=str(tmp_path / "new.db"))
    assert _recorded_corpus(fresh, corpus) is None


def test_a_store_whose_corpus_moved_says_so_and_a_run_given_it_records_the_new_place(
    tmp_path: Path, mars: Callable[[Path], Path]
) -> None:
    """The recorded corpus renamed: the readers name the path that is gone (not the bundled
    sample they fell back to), status notes it, and one run given --corpus repoints the store."""
    corpus, db = tmp_path / "mars.db", tmp_path / "mars-glossary.db"
    mars(corpus)
    assert run_terrarium(*run_args(db, corpus, max_scenes=1, concurrency=1)).returncode == 0
    moved = corpus.rename(tmp_path / "books-mars.db")
    for _ in range(2):
        one_line_refusal(
            run_terrarium("lineage", "--db", str(db), "E1"),
            f"was built from the corpus {corpus}, which is not there any more",
            "give --corpus where it is now",
        )
    status = run_terrarium("status", "--db", str(db))
    assert status.returncode == 0 and f"corpus: {corpus} is not there any more" in status.stdout
    assert run_terrarium("lineage", "--db", str(db), "--corpus", str(moved), "E1").returncode == 0
    assert (
        run_terrarium("lineage", "--db", str(db), "E1").returncode == 2
    )  # a reader writes nothing
    resumed = run_terrarium(*run_args(db, moved, max_scenes=1, concurrency=1))
    assert resumed.returncode == 0, resumed.stderr
    for _ in range(2):
        again = run_terrarium("lineage", "--db", str(db), "E1")
        assert again.returncode == 0 and again.stdout.startswith("E1 "), again.stderr
    assert "corpus:" not in run_terrarium("status", "--db", str(db)).stdout


def test_serve_and_export_say_the_same_of_a_books_site_as_the_json_export(tmp_path: Path) -> None:
    """`serve` said "built the reader's site: 17 entries, 3 threads" of a book whose export said
    "3 chapters": both now say chapters, and count the entries as the JSON export does."""
    corpus, db = tmp_path / "mars.db", tmp_path / "mars-glossary.db"
    imported = run_terrarium("import", str(MARS), "--out", str(corpus)).stdout
    chapters = re.search(r"imported (\d+) chapters", imported)
    assert chapters and int(chapters.group(1)) > 1, imported
    assert run_terrarium(*run_args(db, corpus)).returncode == 0
    out = tmp_path / "exports"
    exported = run_terrarium("export", "--db", str(db), "--format", "json", "--out", str(out))
    counts = re.search(r"exported (\d+) entries \((.*)\) to", exported.stdout)
    assert counts, exported.stdout
    said = []
    for _ in range(2):
        site = run_terrarium("export", "--db", str(db), "--format", "site", "--out", str(out / "s"))
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


def test_snapshots_before_a_chapters_end_say_when_one_is_taken_and_no_more(
    tmp_path: Path, mars: Callable[[Path], Path]
) -> None:
    """After a run stopped by --max-scenes, `snapshots` said 'no snapshots yet (one is taken at
    every chapter end and at a clean stop)': a clean stop writes none (README, Data and
    guarantees), and `--thread ch1` said the store had none at all."""
    corpus, db = tmp_path / "mars.db", tmp_path / "mars-glossary.db"
    mars(corpus)
    assert run_terrarium(*run_args(db, corpus, max_scenes=1)).returncode == 0
    for _ in range(2):
        done = run_terrarium("snapshots", "--db", str(db))
        assert done.returncode == 0, done.stderr
        assert done.stdout == "no snapshots yet (one is taken at every chapter's end)\n"
        one = run_terrarium("snapshots", "--db", str(db), "--thread", "ch1")
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
    assert run_terrarium(*run_args(db, corpus, max_scenes=1)).returncode == 0
    for _ in range(2):
        one_line_refusal(
            run_terrarium("edition", "--offline", "--db", str(db), "--as-of-thread", "ch2"),
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
    assert run_terrarium(*run_args(db, corpus, threads="..1", concurrency=1)).returncode == 0
    for _ in range(2):
        table = run_terrarium("snapshots", "--db", str(db))
        assert table.returncode == 0, table.stderr
        header, row = table.stdout.splitlines()[:2]
        assert header.split()[:4] == ["id", "kind", "chapter", "last"], header
        assert row.split()[1:6] == ["chapter_end", "ch1", "(t00000-1)", "paragraph", row.split()[5]]
        assert row.split()[5].isdigit() and "#" not in row, row
        status = run_terrarium("status", "--db", str(db))
        chapter = next(line for line in status.stdout.splitlines() if line.startswith("  ch1 "))
        assert chapter.split()[:3] == ["ch1", "t00000-1", "curated"], chapter
        assert chapter.endswith("  “CHAPTER I: ON THE ARIZONA HILLS”"), chapter
    undone = run_terrarium("undo", "--db", str(db), "--revision", "1")
    assert undone.returncode == 0, undone.stderr
    last = undone.stdout.splitlines()[-1]
    assert last == "  the glossary as of chapter 1 (t00000-1) includes it (re-export that chapter)"


def test_a_run_stopped_by_max_scenes_says_what_is_left_and_how_to_go_on(
    tmp_path: Path, mars: Callable[[Path], Path]
) -> None:
    """`run --max-scenes N` printed only 'run finished in ...': nothing said the book was not
    done."""
    corpus, db = tmp_path / "mars.db", tmp_path / "mars-glossary.db"
    mars(corpus)
    first = run_terrarium(*run_args(db, corpus, max_scenes=2, concurrency=1))
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0].startswith("run finished in ") and len(lines) == 2, first.stdout
    left = re.fullmatch(
        r"stopped at --max-scenes 2: (\d+) chapters \((\d+) scenes\) left; "
        r"the same command resumes",
        lines[1],
    )
    assert left, lines[1]
    status = run_terrarium("status", "--db", str(db))
    total = len(sqlite3.connect(corpus).execute("SELECT id FROM thread").fetchall())
    # the chapters never started are counted too (a 61-chapter book said "chapters: 22")
    assert f"chapters: {total} (annotating 1, not started {total - 1})" in status.stdout
    rest = run_terrarium(*run_args(db, max_scenes=10_000))
    assert rest.returncode == 0 and len(rest.stdout.splitlines()) == 1, rest.stdout
    assert rest.stderr.count(" done (") == int(left.group(1)), rest.stderr


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
            one_line_refusal(
                run_terrarium("recover", "--db", str(given), "--out", str(out)),
                words,
                "nothing was written",
            )
            assert not out.exists()
        assert digest(given) == before


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
    imported = run_terrarium("import", str(book), "--out", str(tmp_path / "tale.db"))
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.startswith("imported 1 chapter, 12 paragraphs ("), imported.stdout
