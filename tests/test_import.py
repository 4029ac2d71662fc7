"""`terrarium import`: books into the corpus schema, then the whole pipeline on them."""

from __future__ import annotations

import html
import json
import sqlite3
from pathlib import Path

import pytest
from ebooklib import epub

from terrarium_dagster.cli import main
from terrarium_dagster.corpus.importers import (
    blocks_from_markdown,
    blocks_from_text,
    chapters_from_blocks,
    strip_gutenberg,
)
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.corpus.story import story_name
from tests.support.cli import run_args

BOOK = Path(__file__).parent / "data" / "lamplighters.txt"
BOOKS = Path(__file__).parent / "data" / "books"  # real public books, trimmed (see its README)
# Text that is never story: Gutenberg's wrapping and licence, in every era's wording.
NOT_STORY = (
    "Project Gutenberg", "PROJECT GUTENBERG", "SMALL PRINT", "Etext", "eBook", "LICENSE",
    "warranty", "WARRANTIES", "Literary Archive Foundation", "[Illustration", "Frontispiece",
    "CONTENTS",
)  # fmt: skip


def _threads(db: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT id, title FROM thread ORDER BY id").fetchall()


def _import(book: Path, out: Path) -> list[str]:
    assert main(["import", str(book), "--out", str(out)]) == 0
    return [title for _, title in _threads(out)]


def _no_wrapping(text: str) -> None:
    found = [words for words in NOT_STORY if words in text]
    assert not found, found


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
    assert main(run_args(store, corpus)) == 0
    out = tmp_path / "glossary.json"
    assert main(["export", "--format", "json", "--out", str(out), "--db", str(store),
                 "--corpus", str(corpus)]) == 0  # fmt: skip
    terms = {entry["term"] for entry in json.loads(out.read_text())["entries"]}
    assert "Copper Fen" in terms or "Odo Varrick" in terms, terms


def test_a_1990s_gutenberg_text_splits_at_the_bare_titles_its_contents_page_lists(
    tmp_path: Path,
) -> None:
    out = tmp_path / "dubliners.db"
    titles = _import(BOOKS / "dubliners-1990s.txt", out)
    assert titles == ["THE SISTERS", "AN ENCOUNTER", "IVY DAY IN THE COMMITTEE ROOM", "THE DEAD"]
    text = _bodies(out)
    _no_wrapping(text)
    assert "THERE was no hope for him this time" in text  # the first story's start
    assert "upon all the living and the dead" in text  # the last line before the footer
    assert "Prepared by David Reed" not in text and "by James Joyce" not in text
    assert "Two Gallants" not in text and "After the Race" not in text  # the contents page
    assert "MUNICIPAL ELECTIONS" in text and "R.  I.  P." in text  # capitals inside a story
    with Corpus(out) as corpus:
        assert story_name(corpus) == "Dubliners"


def test_a_2008_gutenberg_text_keeps_its_foreword_and_drops_its_licence(tmp_path: Path) -> None:
    out = tmp_path / "mars.db"
    titles = _import(BOOKS / "princess-of-mars-2008.txt", out)
    assert titles == [
        "FOREWORD",  # narrated in the story's frame: story
        "CHAPTER I: ON THE ARIZONA HILLS",
        "CHAPTER II: THE ESCAPE OF THE DEAD",
        "CHAPTER XIV: A DUEL TO THE DEATH",
        "CHAPTER XXVIII: AT THE ARIZONA CAVE",
    ]
    text = _bodies(out)
    _no_wrapping(text)
    assert "In submitting Captain Carter's strange manuscript" in text
    assert "I sought out Dejah Thoris in the throng of departing chariots, but she" in text
    assert "End of Project Gutenberg" not in text and "To My Son Jack" not in text
    assert "Sola Tells Me Her Story" not in text and "I Elude My Watch Dog" not in text
    with Corpus(out) as corpus:
        assert story_name(corpus) == "A Princess of Mars"


def test_an_epub_made_by_pandoc_from_gutenberg_html_imports_only_its_chapters(
    tmp_path: Path,
) -> None:
    out = tmp_path / "time.db"
    titles = _import(BOOKS / "time-machine-pandoc.epub", out)
    assert titles == ["I: Introduction", "II: The Machine", "XVI: After the Story", "Epilogue"]
    text = _bodies(out)
    _no_wrapping(text)
    assert "The Time Traveller (for so it will be convenient to speak of him)" in text
    assert "The Palace of Green Porcelain" not in text  # the contents table
    with Corpus(out) as corpus:
        assert story_name(corpus) == "The Time Machine"


def _navigated_epub(path: Path) -> None:
    """An EPUB (built with ebooklib) whose stories are one document each, titled only by the
    navigation (their titles are plain paragraphs), with the Gutenberg header in a document of
    its own and the licence in another: from the real text of `dubliners-1990s.txt`."""
    text = (BOOKS / "dubliners-1990s.txt").read_text(encoding="utf-8")
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if line.strip() in (
        "THE SISTERS", "AN ENCOUNTER", "IVY DAY IN THE COMMITTEE ROOM", "THE DEAD")]  # fmt: skip
    footer = next(i for i, line in enumerate(lines) if line.startswith("End of The Project"))
    book = epub.EpubBook()
    book.set_identifier("dubliners-test")
    book.set_title("Dubliners")
    book.set_language("en")

    def document(name: str, title: str, body_lines: list[str]) -> epub.EpubHtml:
        paragraphs = "".join(
            f"<p>{html.escape(' '.join(part.split()))}</p>"
            for part in "\n".join(body_lines).split("\n\n")
            if part.strip()
        )
        item = epub.EpubHtml(title=title, file_name=name, lang="en")
        item.content = f"<div>{paragraphs}</div>"
        book.add_item(item)
        return item

    header = document("header.xhtml", "Header", lines[: starts[0]])
    stories = []
    for number, start in enumerate(starts):
        end = starts[number + 1] if number + 1 < len(starts) else footer
        stories.append(document(f"s{number}.xhtml", lines[start].strip(), lines[start:end]))
    licence = document("licence.xhtml", "Licence", lines[footer:] + lines[: starts[0]])
    book.toc = stories
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = [header, "nav", *stories, licence]
    epub.write_epub(str(path), book)


def test_an_epub_without_headings_is_split_by_its_navigation(tmp_path: Path) -> None:
    source = tmp_path / "dubliners.epub"
    _navigated_epub(source)
    out = tmp_path / "dubliners.db"
    titles = _import(source, out)
    assert titles == ["THE SISTERS", "AN ENCOUNTER", "IVY DAY IN THE COMMITTEE ROOM", "THE DEAD"]
    text = _bodies(out)
    _no_wrapping(text)
    assert "upon all the living and the dead" in text


def test_a_markdown_book_keeps_its_glossary_out_of_the_story(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = BOOKS / "thuvia-maid-of-mars.md"
    out = tmp_path / "thuvia.db"
    assert main(["import", str(source), "--out", str(out), "--dry-run"]) == 0
    shown = capsys.readouterr().out
    assert "1. CHAPTER I: CARTHORIS AND THUVIA" in shown and "2. CHAPTER XIV" in shown
    assert "reference, not story: A GLOSSARY OF NAMES AND TERMS" in shown
    assert not out.exists(), "a dry run writes nothing"
    titles = _import(source, out)
    assert titles == ["CHAPTER I: CARTHORIS AND THUVIA", "CHAPTER XIV: KULAN TITH'S SACRIFICE"]
    text = _bodies(out)
    _no_wrapping(text)
    assert "Upon a massive bench of polished ersite" in text
    assert "A dead city of ancient Mars" not in text and "Aaanthor" not in text  # the glossary
    assert "The Jeddak of Lothar" not in text  # the contents table
    reference = out.with_name(out.name + ".reference.md").read_text(encoding="utf-8")
    assert "Aaanthor. A dead city of ancient Mars." in reference


def test_bare_titles_head_chapters_without_a_contents_page_but_a_sign_does_not() -> None:
    prose = "Maren Quist walked the Salt Road north past the cairns and the dry wells. " * 30
    text = (
        f"THE VELL CHRONICLE\n\n\n\nTHE SALT ROAD\n\n{prose}\n\nThe door said:\n\nCLOSED\n\n"
        f"{prose}\n\nHELP\n\n{prose[:200]}\n\nTHE EMBER COURT\n\n{prose}\n"
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert [c.title for c in book.chapters] == ["THE SALT ROAD", "THE EMBER COURT"]
    assert "CLOSED" in " ".join(book.chapters[0].paragraphs)  # quoted by the prose above it
    assert "HELP" in " ".join(book.chapters[0].paragraphs)  # a shout, too close to a title


def test_markdown_front_matter_and_lists_stay_out_of_the_story() -> None:
    prose = "Ysolde crossed the Glass Marsh at dawn, following the heron north past the weirs. " * 3
    notice = "All rights reserved. No part of this book may be reproduced in any form. " * 3
    cast = "Ysolde, a ferrywoman of the Glass Marsh; Odo Varrick, her brother, a poler. " * 3
    text = (
        f"# The Glass Marsh\n\n## Copyright\n\n{notice}\n\n## Dramatis Personae\n\n{cast}\n\n"
        f"## Prologue\n\n{prose}\n\n## Chapter 1\n\n{prose}\n\n"
        f"## Glossary of Terms\n\n{cast}\n"
    )
    book = chapters_from_blocks(blocks_from_markdown(text))
    assert [c.title for c in book.chapters] == ["Prologue", "Chapter 1"]
    assert [c.title for c in book.reference] == ["Dramatis Personae", "Glossary of Terms"]
    assert "The Glass Marsh: Copyright (front matter)" in book.dropped


@pytest.mark.parametrize(
    ("start", "end"),
    [
        (  # the 1990s: the story follows the end of the "small print"
            "*END*THE SMALL PRINT! FOR PUBLIC DOMAIN ETEXTS*Ver.04.29.93*END*",
            "End of The Project Gutenberg Etext of The Salt Road",
        ),
        (  # the 2000s
            "*** START OF THIS PROJECT GUTENBERG EBOOK THE SALT ROAD ***",
            "End of the Project Gutenberg EBook of The Salt Road, by M. Quist",
        ),
        (  # "End of Project Gutenberg's ..." before the end marker
            "*** START OF THIS PROJECT GUTENBERG EBOOK THE SALT ROAD ***",
            "End of Project Gutenberg's The Salt Road, by M. Quist",
        ),
        (  # from the 2020s
            "*** START OF THE PROJECT GUTENBERG EBOOK THE SALT ROAD ***",
            "*** END OF THE PROJECT GUTENBERG EBOOK THE SALT ROAD ***",
        ),
    ],
)
def test_gutenberg_wrapping_of_every_era_is_cut(start: str, end: str) -> None:
    story = "Maren Quist had walked the Salt Road for nine days when the ember-wind rose."
    text = "\n\n".join(
        ["Title: The Salt Road", "Project Gutenberg licence text.", start, "CHAPTER I", story,
         end, "*** START: FULL LICENSE ***", "THE FULL PROJECT GUTENBERG LICENSE"]
    )  # fmt: skip
    assert strip_gutenberg(text).split() == ["CHAPTER", "I", *story.split()]


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


_PROSE = (
    "{who} walked the long road to the harbour at first light, counting the masts and the gulls, "
    "and wondering aloud whether the ship would wait for a passenger who had paid in promises."
)
GUTENBERG_HTML = """<?xml version="1.0" encoding="iso-8859-1"?>
<html><head><meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1" />
<title>The Harbour Book, by A. Writer</title><style>p {{ margin: 0 }}</style></head><body>
<pre>
The Project Gutenberg EBook of The Harbour Book, by A. Writer

Title: The Harbour Book

*** START OF THIS PROJECT GUTENBERG EBOOK THE HARBOUR BOOK ***
</pre>
<h1>THE HARBOUR<br/>BOOK</h1><h3>BY</h3><h2>A. WRITER</h2>
<h2>CONTENTS</h2>
<p><a href="#ch1">I. The Road</a><br/><a href="#ch2">II. The Ship</a></p>
<h2><a name="ch1">ADVENTURE I. THE ROAD</a></h2>
<p>{first} <span class="pagenum">[Pg 7]</span>Caf\xe9 owners waved.</p>
<h2><a name="ch2">ADVENTURE II. THE SHIP</a></h2>
<p>{second}</p>
<pre>
*** END OF THIS PROJECT GUTENBERG EBOOK THE HARBOUR BOOK ***
</pre></body></html>
"""


def test_a_gutenberg_html_book_imports_its_chapters_in_its_declared_encoding(
    tmp_path: Path,
) -> None:
    """Project Gutenberg's HTML edition: chapters from its headings, the contents page (links
    to the book's own places) and printed page numbers left out, the title from the header."""
    source = tmp_path / "harbour.htm"
    markup = GUTENBERG_HTML.format(
        first=_PROSE.format(who="Maren Quist"), second=_PROSE.format(who="Tobias Reeve")
    )
    source.write_bytes(markup.encode("latin-1"))
    out = tmp_path / "harbour.db"
    assert _import(source, out) == ["ADVENTURE I. THE ROAD", "ADVENTURE II. THE SHIP"]
    text = _bodies(out)
    assert "Maren Quist walked" in text and "Tobias Reeve walked" in text
    assert "Café owners waved." in text, "decoded as it declares"
    assert "[Pg 7]" not in text and "The Ship I." not in text
    _no_wrapping(text)
    with sqlite3.connect(out) as conn:
        assert conn.execute("SELECT title FROM book").fetchone()[0] == "The Harbour Book"


def test_a_gutenberg_8_bit_text_is_read_in_the_encoding_its_header_declares(
    tmp_path: Path,
) -> None:
    text = (
        "Title: The Harbour Book\r\nCharacter set encoding: ISO-8859-1\r\n\r\n"
        "*** START OF THIS PROJECT GUTENBERG EBOOK THE HARBOUR BOOK ***\r\n\r\n"
        f"CHAPTER I\r\n\r\n{_PROSE.format(who='Maren Quist')} Caf\xe9.\r\n\r\n"
        "*** END OF THIS PROJECT GUTENBERG EBOOK THE HARBOUR BOOK ***\r\n"
    )
    source = tmp_path / "harbour-8.txt"
    source.write_bytes(text.encode("latin-1"))
    out = tmp_path / "h.db"
    assert _import(source, out) == ["CHAPTER I"]
    assert "Maren Quist walked" in _bodies(out) and "Café." in _bodies(out)


def test_a_contents_page_with_page_numbers_under_part_headings_is_not_a_chapter() -> None:
    """Treasure Island's contents list its parts as headings and each chapter with its page:
    those lines are not story, however long."""
    contents = "\n".join(
        f"{n}.  THE {word} OF THE OLD SEA-DOG AT THE ADMIRAL BENBOW   {10 * n}"
        for n, word in enumerate(("STORY", "RETURN", "VOYAGE", "END"), 1)
    )
    text = (
        f"CONTENTS\n\nPART ONE--The Old Buccaneer\n\n{contents}\n\n"
        f"PART ONE--The Old Buccaneer\n\n1\n\nThe Old Sea-dog\n\n{_PROSE.format(who='Jim')}\n"
    )
    chapters = chapters_from_blocks(blocks_from_text(text)).chapters
    assert [chapter.title for chapter in chapters] == ["1: The Old Sea-dog"]
