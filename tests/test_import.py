"""`terrarium import`: books into the corpus schema, then the whole pipeline on them."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from ebooklib import epub

from terrarium_dagster.cli import main
from terrarium_dagster.corpus.reader import Corpus

BOOK = Path(__file__).parent / "data" / "lamplighters.txt"


def _threads(db: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT id, title FROM thread ORDER BY id").fetchall()


def _bodies(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT body FROM post JOIN tag ON tag.post_id = post.id WHERE tag.name = 'qm_post'"
        )
        return " ".join(row[0] for row in rows)


def test_a_gutenberg_text_imports_chapters_without_boilerplate_or_contents(tmp_path: Path) -> None:
    out = tmp_path / "vell.db"
    assert main(["import", str(BOOK), "--out", str(out)]) == 0
    assert [title for _, title in _threads(out)] == [
        "CHAPTER I: The Salt Road",
        "CHAPTER II: The Ember Court",
    ]
    text = _bodies(out)
    assert "Maren Quist had walked the Salt Road" in text
    assert "licence" not in text and "Project Gutenberg" not in text and "CONTENTS" not in text
    with Corpus(out) as corpus:  # the corpus reader accepts it; the scene break splits scenes
        first = corpus.threads()[0]
        assert len(corpus.scenes(first.id)) == 2


def test_markdown_chapters_are_headings(tmp_path: Path) -> None:
    book = tmp_path / "book.md"
    prose = "Ysolde crossed the *Glass Marsh* at dawn, following the [heron](x) north. " * 3
    book.write_text(f"# A Title Page\n\nBy someone.\n\n## One\n\n{prose}\n\n---\n\n{prose}\n\n"
                    f"## Two\n\n{prose}\n")  # fmt: skip
    out = tmp_path / "md.db"
    assert main(["import", str(book), "--out", str(out)]) == 0
    assert [title for _, title in _threads(out)] == ["One", "Two"]
    assert "*" not in _bodies(out) and "Glass Marsh" in _bodies(out)


def _epub(path: Path) -> None:
    book = epub.EpubBook()
    book.set_identifier("terrarium-test")
    book.set_title("The Copper Fen")
    book.set_language("en")
    chapters = []
    for number, name in enumerate(("The Fen", "The Weir"), start=1):
        chapter = epub.EpubHtml(title=name, file_name=f"c{number}.xhtml", lang="en")
        paragraph = (
            f"Odo Varrick poled the flatboat through the Copper Fen in chapter {number}, "
            "listening for the bell of Saint Amsel and the slow wings of the drowned geese."
        )
        chapter.content = f"<h1>{name}</h1><p>{paragraph}</p><p>{paragraph}</p>"
        book.add_item(chapter)
        chapters.append(chapter)
    book.toc = chapters
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *chapters]
    epub.write_epub(str(path), book)


def test_an_epub_imports_then_runs_and_exports(tmp_path: Path) -> None:
    source = tmp_path / "fen.epub"
    _epub(source)
    corpus = tmp_path / "fen.db"
    assert main(["import", str(source), "--out", str(corpus)]) == 0
    assert [title for _, title in _threads(corpus)] == ["The Fen", "The Weir"]
    store = tmp_path / "store.db"
    assert main(["run", "--offline", "--corpus", str(corpus), "--db", str(store)]) == 0
    out = tmp_path / "export"
    assert main(["export", "--format", "json", "--out", str(out), "--db", str(store),
                 "--corpus", str(corpus)]) == 0  # fmt: skip
    terms = {entry["term"] for entry in json.loads((out / "glossary.json").read_text())["entries"]}
    assert "Copper Fen" in terms or "Odo Varrick" in terms, terms


@pytest.mark.parametrize(
    ("name", "content", "words"),
    [
        ("book.pdf", b"%PDF-1.4", "give a plain-text"),
        ("broken.epub", b"not a zip", "not a readable EPUB"),
        ("latin1.txt", "caf\xe9 au lait".encode("latin-1"), "not UTF-8"),
        ("empty.txt", b"", "no story text"),
    ],
)
def test_what_cannot_be_read_is_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: bytes, words: str
) -> None:
    source = tmp_path / name
    source.write_bytes(content)
    out = tmp_path / "out.db"
    assert main(["import", str(source), "--out", str(out)]) == 2
    assert words in capsys.readouterr().err
    assert not out.exists()
