"""`terrarium import` of a book piped in (`-`, /dev/stdin) and `--format`."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest

from terrarium_dagster.cli import main
from terrarium_dagster.corpus.book_files import BOOK_FORMATS
from tests.support.cli import TERRARIUM

BOOK = Path(__file__).parent / "data" / "lamplighters.txt"
BOOKS = Path(__file__).parent / "data" / "books"


def _threads(db: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT id, title FROM thread ORDER BY id").fetchall()


def _bodies(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [row[0] for row in conn.execute("SELECT body FROM post ORDER BY id")]


def _imported(book: Path, out: Path) -> Path:
    assert main(["import", str(book), "--out", str(out)]) == 0
    return out


def _piped(book: bytes, *args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """`cat BOOK | terrarium import ARGS`, the real script reading the pipe."""
    return subprocess.run(
        [TERRARIUM, "import", *args], input=book, capture_output=True, timeout=120, cwd=cwd
    )


@pytest.mark.parametrize("source", ["-", "/dev/stdin"])
def test_a_book_piped_in_imports_as_its_file_does(tmp_path: Path, source: str) -> None:
    done = _piped(BOOK.read_bytes(), source, "--out", "piped.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    said = done.stdout.decode()
    assert "imported 2 chapters, 5 paragraphs" in said
    assert "note: read from a pipe as plain text; give --format md" in said
    filed = _imported(BOOK, tmp_path / "filed.db")
    assert _threads(tmp_path / "piped.db") == _threads(filed)
    assert _bodies(tmp_path / "piped.db") == _bodies(filed)
    with sqlite3.connect(tmp_path / "piped.db") as conn:
        assert conn.execute("SELECT title, source FROM book").fetchall() == [
            ("The Lamplighters of Vell (a stand-in written for these tests)", "-")
        ]
    again = _piped(BOOK.read_bytes(), source, "--out", "piped.db", cwd=tmp_path)
    assert again.returncode == 0 and b"nothing changed" in again.stdout


def test_a_piped_epub_is_told_by_its_bytes_and_markdown_by_format(tmp_path: Path) -> None:
    epub_book = (BOOKS / "time-machine-pandoc.epub").read_bytes()
    done = _piped(epub_book, "-", "--out", "epub.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert b"of The Time Machine into epub.db" in done.stdout and b"note:" not in done.stdout
    markdown = (BOOKS / "thuvia-maid-of-mars.md").read_bytes()
    done = _piped(markdown, "-", "--format", "md", "--out", "md.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _threads(tmp_path / "md.db") == _threads(
        _imported(BOOKS / "thuvia-maid-of-mars.md", tmp_path / "filed.db")
    )
    dry = _piped(markdown, "-", "--format", "md", "--out", "x.db", "--dry-run", cwd=tmp_path)
    assert dry.stdout.startswith(b"Thuvia, Maid of Mars: 2 chapters (nothing written)")


def test_a_pipe_that_cannot_be_read_is_one_line_naming_it(tmp_path: Path) -> None:
    empty = _piped(b"", "-", "--out", "out.db", cwd=tmp_path)
    assert empty.returncode == 2
    assert (
        empty.stderr.decode()
        .strip()
        .endswith("standard input gave nothing to import (an empty pipe)")
    )
    broken = _piped(b"PK\x03\x04 not a zip", "-", "--out", "out.db", cwd=tmp_path)
    assert broken.returncode == 2
    assert b"standard input is not a readable EPUB" in broken.stderr
    assert b"terrarium-import-" not in broken.stderr  # the scratch copy is not named
    assert not (tmp_path / "out.db").exists()


def test_format_reads_a_file_whose_name_says_nothing(tmp_path: Path) -> None:
    nameless = tmp_path / "book"
    nameless.write_bytes(BOOK.read_bytes())
    refused = _piped(b"", str(nameless), "--out", "out.db", cwd=tmp_path)
    assert refused.returncode == 2 and b"or say which it is with --format" in refused.stderr
    assert main(["import", str(nameless), "--format", "txt", "--out", str(tmp_path / "o.db")]) == 0
    shown = subprocess.run([TERRARIUM, "import", "--help"], capture_output=True, text=True)
    assert "{" + ",".join(sorted(BOOK_FORMATS)) + "}" in shown.stdout, "every format offered"


def test_a_piped_book_whose_encoding_is_guessed_is_named_as_standard_input(
    tmp_path: Path,
) -> None:
    """Seen: `cat latin1.txt | terrarium import - ...` said "note: book.txt is not UTF-8 and
    declares no encoding": the name of the scratch file the pipe is read from, a file the user
    never gave. The note names standard input, in the text, Markdown and HTML readers alike."""
    latin1 = BOOK.read_text(encoding="utf-8").replace("Vell", "Véll").encode("cp1252")
    page = b"<html><body><h1>CHAPTER I</h1><p>" + b"The lamp at Vell burned. " * 40
    page += "Ros\xe9 lit it.</p></body></html>".encode("latin-1")
    for book, args in (
        (latin1, ()),
        (latin1, ("--format", "md")),
        (page, ("--format", "html")),
        (page, ()),  # told an HTML page by its first bytes
    ):
        for out in ("one.db", "two.db"):
            done = _piped(book, "-", *args, "--out", out, "--dry-run", cwd=tmp_path)
            assert done.returncode == 0, done.stderr
            said = done.stdout.decode()
            assert "note: standard input is not UTF-8" in said, (args, said)
            assert "book." not in said, (args, said)
    filed = tmp_path / "latin1.txt"
    filed.write_bytes(latin1)
    done = subprocess.run(
        [TERRARIUM, "import", str(filed), "--out", "f.db", "--dry-run"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert "note: latin1.txt is not UTF-8" in done.stdout, done.stdout


def test_plain_text_read_as_html_is_refused_in_one_line(tmp_path: Path) -> None:
    """Seen: `cat book.txt | terrarium import - --format html --out x.db` imported the whole
    book as one chapter of one paragraph ("1 chapter, 1 paragraph (28765 words)"), as did a
    text file named .html: text with no tag read as a page is one run of text."""
    text = BOOK.read_bytes()
    renamed = tmp_path / "book.html"
    renamed.write_bytes(text)
    for args, stdin, name in (
        (("-", "--format", "html"), text, "standard input"),
        ((str(renamed),), b"", str(renamed)),
    ):
        for _ in range(2):
            done = _piped(stdin, *args, "--out", "out.db", cwd=tmp_path)
            assert done.returncode == 2, done.stdout
            lines = done.stderr.decode().strip().splitlines()
            assert lines == [
                f"terrarium: error: {name} holds no HTML tag: it is no HTML page; import it as "
                "the text it is (--format txt, md, rst or adoc, or a file named so)"
            ]
            assert not (tmp_path / "out.db").exists()
    done = _piped(text, "-", "--format", "txt", "--out", "out.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_a_broken_epub_is_said_in_words_not_an_exceptions_repr(tmp_path: Path) -> None:
    """Seen: "standard input is not a readable EPUB: 'Bad Zip file'" (ebooklib's exception shows
    its message's repr), and a ZIP without an EPUB's container, "...: \\"There is no item named
    'META-INF/container.xml' in the archive\\"" (a KeyError's quotes)."""
    import zipfile

    hollow = tmp_path / "hollow.epub"
    with zipfile.ZipFile(hollow, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip")
    not_zip = tmp_path / "garbage.epub"
    not_zip.write_bytes(b"garbage\n")
    for args, stdin, said in (
        (
            ("-", "--format", "epub"),
            b"garbage\n",
            "standard input is not a readable EPUB: it is no ZIP archive, as an EPUB is",
        ),
        (
            (str(not_zip),),
            b"",
            f"{not_zip} is not a readable EPUB: it is no ZIP archive, as an EPUB is",
        ),
        (
            (str(hollow),),
            b"",
            f"{hollow} is not a readable EPUB: There is no item named "
            "'META-INF/container.xml' in the archive",
        ),
    ):
        done = _piped(stdin, *args, "--out", "out.db", cwd=tmp_path)
        assert done.returncode == 2
        assert done.stderr.decode().strip().splitlines() == [f"terrarium: error: {said}"]
        assert not (tmp_path / "out.db").exists()
