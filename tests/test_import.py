"""`terrarium import`: books into the corpus schema, then the whole pipeline on them."""

from __future__ import annotations

import html
import json
import sqlite3
import textwrap
from pathlib import Path

import pytest
from ebooklib import epub

from terrarium_dagster.cli import main
from terrarium_dagster.corpus.importers import read_book
from terrarium_dagster.corpus.importers.chapters import chapters_from_blocks
from terrarium_dagster.corpus.importers.gutenberg import gutenberg_title, strip_gutenberg
from terrarium_dagster.corpus.importers.markup import blocks_from_asciidoc, blocks_from_markdown
from terrarium_dagster.corpus.importers.model import Block
from terrarium_dagster.corpus.importers.plain_text import blocks_from_text
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.corpus.story import story_name
from terrarium_dagster.store.annotator import GlossaryStore
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


def test_centred_titles_head_chapters_of_a_book_with_no_other_headings() -> None:
    """Dr. Jekyll and Mr. Hyde (plain text, 1992): its chapter titles stand centred on the
    page ("                             STORY OF THE DOOR"), with no numbers and no contents page;
    it came in as one chapter. A centred title block above the first chapter, a letter's
    centred signature and a centred sign too close to a title head nothing."""
    prose = textwrap.fill("Mr. Utterson walked the by-street behind the square. " * 40, 70)
    short = textwrap.fill("Mr. Utterson knocked twice and waited at the door. " * 2, 70)

    def centred(title: str, width: int = 70) -> str:
        return " " * ((width - len(title)) // 2) + title

    text = (
        f"{centred('STRANGE CASE OF')}\n{centred('MR. HYDE')}\n\n{centred('BY')}\n\n"
        f"{centred('ROBERT LOUIS STEVENSON')}\n\n\n1)\n\n{centred('STORY OF THE DOOR')}\n\n"
        f"{prose}\n\n{centred('NO ENTRY')}\n\n{short}\n\n"
        f"{centred('SEARCH FOR MR. HYDE')}\n\n{prose}\n\n{centred('HASTIE LANYON', 120)}\n\n"
        f"{prose}\n\n{centred('THE LAST NIGHT')}\n\n{prose}\n"
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert [c.title for c in book.chapters] == [
        "STORY OF THE DOOR",
        "SEARCH FOR MR. HYDE",
        "THE LAST NIGHT",
    ]
    assert "NO ENTRY" in book.chapters[0].paragraphs  # a sign, too close to a title
    assert "HASTIE LANYON" in book.chapters[1].paragraphs  # signs a letter, to the right
    # two centred lines are no book of chapters: a sign and a title stay prose
    two = f"{prose}\n\n{centred('NO ENTRY')}\n\n{prose}\n\n{centred('THE END OF IT')}\n\n{prose}"
    assert len(chapters_from_blocks(blocks_from_text(two)).chapters) == 1


def test_centred_titles_in_title_case_head_chapters_too() -> None:
    """Another edition of Dr. Jekyll and Mr. Hyde (hydea10.txt) centres its titles in title case
    ("                         Story of the Door"); it came in as one chapter."""
    prose = textwrap.fill("Mr. Utterson walked the by-street behind the square. " * 40, 70)

    def centred(title: str) -> str:
        return " " * ((70 - len(title)) // 2) + title

    titles = ["Story of the Door", "Search for Mr. Hyde", "Dr. Lanyon's Narrative"]
    text = "".join(f"{centred(title)}\n\n{prose}\n\n" for title in titles)
    assert [c.title for c in chapters_from_blocks(blocks_from_text(text)).chapters] == titles


def test_titles_a_contents_page_lists_head_chapters_when_centred_too() -> None:
    """An old edition of The Jungle Book (jnglb10.txt) lists its stories on a contents page and
    sets the first title at the margin, the rest centred on the page: it came in as one
    chapter of 50,000 words."""
    prose = textwrap.fill("Mowgli ran with the wolves of the Seeonee pack that night. " * 40, 70)
    titles = ["Mowgli's Brothers", "Kaa's Hunting", '"Tiger! Tiger!"']
    contents = "Contents\n\n" + "\n".join(titles) + "\n\n\n"
    text = contents + "".join(
        f"{title if n == 0 else ' ' * ((70 - len(title)) // 2) + title}\n\n{prose}\n\n\n"
        for n, title in enumerate(titles)
    )
    assert [c.title for c in chapters_from_blocks(blocks_from_text(text)).chapters] == titles


def test_the_story_told_before_any_heading_of_its_own_is_its_first_chapter() -> None:
    """An old edition of Metamorphosis (metam10.txt) heads parts II and III but not part I,
    which follows its copyright line: the import dropped it as front matter, a third of the
    book. Prose that long is the first chapter ("I" before "II"); a short copyright notice or
    dedication before the first heading is still left out."""
    part = textwrap.fill("Gregor Samsa lay on his armour-like back and looked at the rain. " * 90)
    notice = "Copyright (C) 2002 by David Wyllie."
    text = (
        f"{notice}\n\n\nMetamorphosis\nby Franz Kafka\n\n{part}\n\n\nII\n\n{part}\n\n\n"
        f"III\n\n{part}\n"
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert [c.title for c in book.chapters] == ["I", "II", "III"]
    assert book.chapters[0].paragraphs[0].startswith("Gregor Samsa")  # not the title lines
    short = f"{notice}\n\n\nII\n\n{part}\n\n\nIII\n\n{part}\n"
    assert [c.title for c in chapters_from_blocks(blocks_from_text(short)).chapters] == [
        "II",
        "III",
    ]


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
    assert "Copyright (front matter; 42 words)" in book.dropped  # under the book's title


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


_NOISE = "The harbour lay quiet under the rain, and the ships waited for the tide. " * 60


@pytest.mark.parametrize(
    ("name", "content", "words"),
    [
        ("book.pdf", b"%PDF-1.4", "give a plain-text"),
        ("broken.epub", b"not a zip", "not a readable EPUB"),
        (
            "unknown.txt",
            "Character set encoding: KLINGON-8\n\ncaf\xe9".encode("latin-1"),
            "declares KLINGON-8, an encoding Python does not know",
        ),
        ("empty.txt", b"", "no story text"),
        (  # a file listing saved as a book's file (Pride and Prejudice's old pandp09.txt)
            "listing.txt",
            b"total 287381\n"
            + b"".join(
                f"-rw-rw-r--  1 1005  100  {247438 + n} Feb  4  2001 {n:02d}tom10.txt\n".encode()
                for n in range(60)
            ),
            "no story text",
        ),
        (  # a corpus given as the book, renamed: read as Windows-1252 it was one chapter
            "book.txt",
            b"SQLite format 3\x00" + _NOISE.encode(),
            "is an SQLite database (a corpus or an annotator store?), not a book",
        ),
        ("utf16.txt", _NOISE.encode("utf-16"), "is UTF-16 text: convert it to UTF-8"),
        ("binary.txt", _NOISE.encode().replace(b" ", b"\x00 "), "is not a text file"),
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


def test_an_html_books_title_is_its_header_title_line_not_the_subtitle_under_it(
    tmp_path: Path,
) -> None:
    """The Red Badge of Courage's HTML header wraps its title ("Title: The Red Badge of Courage"
    over "       An Episode of the American Civil War"): the import named the book "The Red
    Badge of Courage An Episode of the American Civil War", where its text edition says "The Red
    Badge of Courage"; both now say the latter."""
    markup = GUTENBERG_HTML.format(
        first=_PROSE.format(who="Maren Quist"), second=_PROSE.format(who="Tobias Reeve")
    ).replace("Title: The Harbour Book\n", "Title: The Harbour Book\n       A Tale of Ships\n")
    source = tmp_path / "harbour.htm"
    source.write_bytes(markup.encode("latin-1"))
    assert read_book(source).title == "The Harbour Book"


@pytest.mark.parametrize(
    ("header", "said"),
    [
        ("", "declares no encoding: read as Windows-1252 (3 bytes above ASCII"),
        (  # old Gutenberg headers say ASCII over a few 8-bit bytes (Siddhartha's siddh10.txt)
            "Character set encoding: ASCII\n\n",
            "is not the ASCII it declares: read as Windows-1252 (3 bytes above ASCII",
        ),
    ],
)
def test_an_8_bit_text_that_does_not_say_its_encoding_is_read_as_windows_1252_with_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], header: str, said: str
) -> None:
    """A whole book is not refused over a few accents (*Siddhartha*'s two, *The Four Million*'s
    one curly quote): it is read as Windows-1252, and the import says so."""
    river = "The river ran on past the ferry, and the two friends watched it. " * 8
    first, second = "Govinda\xb4s caf\xe9 stood by the river. ", "\u2018Tis the ferryman. "
    story = "\n\n".join(["CHAPTER I", first + river, "CHAPTER II", second + river])
    source = tmp_path / "siddh10.txt"
    source.write_bytes((header + story).encode("cp1252"))
    out = tmp_path / "out.db"
    assert main(["import", str(source), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"note: siddh10.txt is not UTF-8 and {said}" in printed
    assert main(["import", str(source), "--out", str(tmp_path / "x.db"), "--dry-run"]) == 0
    assert said in capsys.readouterr().out
    bodies = " ".join(row[0] for row in sqlite3.connect(out).execute("SELECT body FROM post"))
    assert "Govinda\xb4s café" in bodies and "\u2018Tis the ferryman." in bodies


def test_a_mostly_utf8_text_with_a_broken_byte_keeps_its_utf8_letters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    story = "CHAPTER I\n\n" + "Ørsted’s café — «déjà vu» by the fjord. " * 12
    source = tmp_path / "mixed.txt"
    source.write_bytes(story.encode("utf-8") + b"\n\nOne stray \xe9 byte at the end of it all.")
    assert main(["import", str(source), "--out", str(tmp_path / "m.db")]) == 0
    assert "read as UTF-8, its 1 broken sequence(s) replaced by U+FFFD" in capsys.readouterr().out
    bodies = " ".join(
        row[0] for row in sqlite3.connect(tmp_path / "m.db").execute("SELECT body FROM post")
    )
    assert "Ørsted’s café — «déjà vu»" in bodies and "stray \ufffd byte" in bodies


def test_dos_end_of_file_mark_closing_a_1990s_text_is_no_paragraph(tmp_path: Path) -> None:
    """The Scarlet Letter's scrlt11.txt ends in Ctrl-Z on a line of its own after its last
    paragraph, as a DOS file did: it had been one more paragraph of the last chapter, a post
    holding that one invisible character."""
    story = "CHAPTER I\r\n\r\n" + "Hester stood upon the scaffold in the market-place. " * 12
    source = tmp_path / "scrlt11.txt"
    source.write_bytes((story + '\r\n\r\n"ON A FIELD, SABLE"\r\n \r\n\x1a\r\n').encode("ascii"))
    assert main(["import", str(source), "--out", str(tmp_path / "s.db")]) == 0
    bodies = [row[0] for row in sqlite3.connect(tmp_path / "s.db").execute("SELECT body FROM post")]
    assert bodies[-1] == '"ON A FIELD, SABLE"'
    assert all(body.strip() and "\x1a" not in body for body in bodies)


@pytest.mark.parametrize(
    "declared",
    # as Gutenberg's headers write it: The Brothers Karamazov's 28054-8.txt says "ISO 8859-1"
    ["ISO-8859-1", "ISO 8859-1", "iso-8859-1", "Latin-1", "ISO-646-US (ISO-8859-1)"],
)
def test_a_gutenberg_8_bit_text_is_read_in_the_encoding_its_header_declares(
    tmp_path: Path, declared: str
) -> None:
    text = (
        f"Title: The Harbour Book\r\nCharacter set encoding: {declared}\r\n\r\n"
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


def _titles_of_text(text: str) -> list[str]:
    return [chapter.title for chapter in chapters_from_blocks(blocks_from_text(text)).chapters]


def test_chapter_headings_of_real_gutenberg_texts_in_their_several_shapes() -> None:
    """Shapes from real Gutenberg texts: a heading wrapped onto a second line (Moby-Dick), a
    numbered sentence of the story that is no heading (Moby-Dick's "II. A Loose-Fish ..."), a
    title ending in a quoted name (Doctor Moreau), a capitalised title line under a bare number
    ending in a period (The War of the Worlds) and a line introducing a letter that is not the
    chapter's title (Frankenstein)."""
    prose = _PROSE.format(who="Ishmael")
    text = (
        f"CHAPTER 55. Of the Monstrous Pictures of Whales.\n\n{prose}\n\n"
        "I. A Fast-Fish belongs to the party fast to it.\n\n"
        "II. A Loose-Fish is fair game for anybody who can soonest catch it.\n\n"
        f"{prose}\n\n"
        "CHAPTER 56. Of the Less Erroneous Pictures of Whales, and the True\n"
        f"Pictures of Whaling Scenes.\n\n{prose}\n\n"
        f'XIX.  MONTGOMERY\'S "BANK HOLIDAY."\n\n{prose}\n\n'
        f"XX.\n\nTHE EVE OF THE WAR.\n\n{prose}\n\n"
        f"Chapter 21\n\nOn my return, I found the following letter from my father:—\n\n{prose}\n"
    )
    assert _titles_of_text(text) == [
        "CHAPTER 55. Of the Monstrous Pictures of Whales",
        "CHAPTER 56. Of the Less Erroneous Pictures of Whales, and the True Pictures of Whaling "
        "Scenes",
        'XIX. MONTGOMERY\'S "BANK HOLIDAY."',  # its run of spaces one space
        "XX: THE EVE OF THE WAR",
        "Chapter 21",
    ]
    chapters = chapters_from_blocks(blocks_from_text(text)).chapters
    assert "II. A Loose-Fish is fair game" in " ".join(chapters[0].paragraphs)
    assert chapters[-1].paragraphs[0].startswith("On my return")


def test_a_contents_list_of_numbered_titles_under_book_headings_is_not_a_chapter() -> None:
    """The War of the Worlds' contents: "BOOK ONE.—..." lines, each over its chapters' numbered
    titles (ending in periods, so they read as sentences), then the book itself."""
    listed = "\n".join(
        f" {number}. THE {name} OF THE WAR."
        for number, name in zip(
            ["I", "II", "III", "IV"], ["EVE", "FALL", "MARCH", "END"], strict=True
        )
    )
    text = (
        f"Contents\n\n BOOK ONE.—THE COMING OF THE MARTIANS\n\n{listed}\n\n"
        f"BOOK ONE\n\nTHE COMING OF THE MARTIANS\n\nI.\n\nTHE EVE OF THE WAR.\n\n"
        f"{_PROSE.format(who='The narrator')}\n"
    )
    assert _titles_of_text(text) == ["I: THE EVE OF THE WAR"]


def test_numbered_sections_inside_a_story_stay_in_it() -> None:
    """The Adventures of Sherlock Holmes (plain text): "ADVENTURE I. A SCANDAL IN BOHEMIA",
    then its sections "I.", "II.", "III.": one chapter, its sections scenes of it."""
    prose = _PROSE.format(who="Holmes")
    text = (
        f"ADVENTURE I. A SCANDAL IN BOHEMIA\n\nI.\n\n{prose}\n\nII.\n\n{prose}\n\n"
        f"III.\n\n{prose}\n\nADVENTURE II. THE RED-HEADED LEAGUE\n\n{prose}\n"
    )
    chapters = chapters_from_blocks(blocks_from_text(text)).chapters
    assert [c.title for c in chapters] == [
        "ADVENTURE I. A SCANDAL IN BOHEMIA",
        "ADVENTURE II. THE RED-HEADED LEAGUE",
    ]
    assert len([scene for scene in chapters[0].scenes if scene]) == 3


def test_the_preface_is_a_chapter() -> None:
    """The Picture of Dorian Gray opens with "THE PREFACE"."""
    prose = _PROSE.format(who="Basil")
    text = f"THE PREFACE\n\n{prose}\n\nCHAPTER I.\n\n{prose}\n\nCHAPTER II.\n\n{prose}\n"
    assert _titles_of_text(text) == ["THE PREFACE", "CHAPTER I", "CHAPTER II"]


GUTENBERG_HTML_PICTURES = """<html><head><meta charset="utf-8"/><title>Two Towns</title></head>
<body><pre>
Title: Two Towns

*** START OF THIS PROJECT GUTENBERG EBOOK TWO TOWNS ***
</pre>
<h1>TWO TOWNS</h1><h2>By A. Writer</h2>
<div class="fig"><img src="images/0403m.jpg" alt="" /></div>
<h5><a href="images/0403.jpg"><i>Original</i></a></h5>
<p class="toc"><big><b>CONTENTS</b></big></p>
<p><a href="#b1"> !!!!</a> <b>Book the First</b> <br/><a href="#c1"> I. </a> The Period
<br/><a href="#c2"> II. </a> The Mail <br/><a href="#c3"> III. </a> The Night Shadows
<br/><a href="#c4"> IV. </a> The Preparation <br/><a href="#c5"> V. </a> The Wine-shop</p>
<h2><a name="b1"></a>Book the First</h2>
<h2><a name="c1"></a>I. The Period</h2><p>{prose}</p>
<div class="fig"><img src="images/0404m.jpg" alt="" /></div>
<h5><a href="images/0404.jpg"><i>Original</i></a></h5>
<p>{prose}</p>
<h2><a name="c2"></a>II. The Mail</h2><p>{prose}<span class="pageno">[Pg 12]</span></p>
<h3>“A MAIDEN’S FAREWELL”</h3><table><tr><td>Dear Alabama, goodbye!</td></tr></table>
<p>{prose}</p>
<h2>CHAPTER III<br /><br /><small>The Night Shadows</small></h2><p>{prose}</p>
<p>CONCLUSION</p><p>{prose}</p>
<pre>
*** END OF THIS PROJECT GUTENBERG EBOOK TWO TOWNS ***
</pre></body></html>
"""


def test_a_gutenberg_html_book_leaves_out_picture_links_and_number_only_contents(
    tmp_path: Path,
) -> None:
    """Shapes from Gutenberg HTML editions: each picture's "Original" link set as a heading (A
    Tale of Two Cities), a contents list whose links are only the chapters' numbers, a poem's
    title as a heading inside a chapter and the poem in a table's cell, and "CONCLUSION" set
    as a paragraph (Tom Sawyer)."""
    source = tmp_path / "towns.htm"
    source.write_text(
        GUTENBERG_HTML_PICTURES.format(prose=_PROSE.format(who="Lucie")), encoding="utf-8"
    )
    book = read_book(source)
    assert [chapter.title for chapter in book.chapters] == [
        "I. The Period",
        "II. The Mail",
        "CHAPTER III: The Night Shadows",  # Dracula's "CHAPTER I<br/><br/>JONATHAN HARKER'S..."
        "CONCLUSION",
    ]
    assert len(book.chapters[0].paragraphs) == 2
    assert book.chapters[1].paragraphs[1:3] == ["“A MAIDEN’S FAREWELL”", "Dear Alabama, goodbye!"]
    text = " ".join(p for chapter in book.chapters for p in chapter.paragraphs)
    assert "Original" not in text and "The Wine-shop" not in text and "[Pg" not in text


def test_a_first_section_under_the_books_own_title_is_its_title_page() -> None:
    """Treasure Island's HTML edition sets its dedication and a poem to the reader under the
    heading "TREASURE ISLAND"; the text edition has them before its first heading. Neither is
    story."""
    prose = _PROSE.format(who="Jim")
    blocks = [
        Block("heading", "TREASURE ISLAND"),
        Block("text", "To S.L.O., an American gentleman, " + prose),
        Block("heading", "TO THE HESITATING PURCHASER"),
        Block("text", "If sailor tales to sailor tunes, storm and adventure, heat and cold"),
        Block("heading", "1"),
        Block("heading", "The Old Sea-dog at the Admiral Benbow"),
        Block("text", prose),
        Block("heading", "2."),  # the HTML edition of The War of the Worlds: "I.", then its title
        Block("heading", "THE FALLING STAR."),
        Block("text", prose),
    ]
    book = chapters_from_blocks(blocks, "Treasure Island")
    assert [chapter.title for chapter in book.chapters] == [
        "1: The Old Sea-dog at the Admiral Benbow",
        "2: THE FALLING STAR",
    ]
    assert "TREASURE ISLAND (title page)" in book.dropped
    alone = chapters_from_blocks([Block("heading", "TREASURE ISLAND"), Block("text", prose)])
    assert [chapter.title for chapter in alone.chapters] == ["TREASURE ISLAND"]
    introduced = [  # The Island of Doctor Moreau: its title over its introduction
        Block("heading", "The Island of Doctor Moreau"),
        Block("heading", "INTRODUCTION."),
        Block("text", prose),
        *blocks[-3:],
    ]
    book = chapters_from_blocks(introduced, "The Island of Doctor Moreau")
    assert book.chapters[0].title == "INTRODUCTION"  # a named section under the book's title
    gods = [Block("heading", "THE GODS OF MARS"), Block("heading", "Edgar Rice Burroughs")]
    book = chapters_from_blocks([*gods, Block("heading", "FOREWORD"), *introduced[2:]])
    assert book.chapters[0].title == "FOREWORD"


def test_chapter_titles_in_capitals_over_several_lines_and_their_contents_page() -> None:
    """Don Quixote (plain text): a contents page of "CHAPTER I" over its title in capitals,
    then "VOLUME I." over "CHAPTER I." over a title of two lines in capitals."""
    prose = _PROSE.format(who="Sancho")
    contents = "\n\n".join(
        f"CHAPTER {number}\nWHICH TREATS OF THE {what} OF THE FAMOUS GENTLEMAN\nDON QUIXOTE"
        for number, what in (("I", "CHARACTER"), ("II", "FIRST SALLY"), ("III", "DROLL WAY"))
    )
    text = (
        f"CONTENTS\n\nVolume I.\n\n{contents}\n\n\nVOLUME I.\n\n\nCHAPTER I.\n\n"
        "WHICH TREATS OF THE CHARACTER AND PURSUITS OF THE FAMOUS GENTLEMAN DON\n"
        f"QUIXOTE OF LA MANCHA\n\n\n{prose}\n\n\nCHAPTER II.\n\n"
        f"WHICH TREATS OF THE FIRST SALLY THE INGENIOUS DON QUIXOTE MADE FROM HOME\n\n{prose}\n"
    )
    chapters = chapters_from_blocks(blocks_from_text(text)).chapters
    assert [chapter.title for chapter in chapters] == [
        "CHAPTER I: WHICH TREATS OF THE CHARACTER AND PURSUITS OF THE FAMOUS GENTLEMAN DON "
        "QUIXOTE OF LA MANCHA",
        "CHAPTER II: WHICH TREATS OF THE FIRST SALLY THE INGENIOUS DON QUIXOTE MADE FROM HOME",
    ]
    assert all(chapter.paragraphs == [prose] for chapter in chapters)


def test_footnotes_are_left_out_of_the_story_in_text_and_html(tmp_path: Path) -> None:
    """Les Misérables: its footnotes' numbers set against the words they annotate
    ('_"Tso-maraude."_1', a link in HTML), the notes gathered under "FOOTNOTES:" at the end
    (on the first note's line in plain text), and lines of the story that open "M." (Monsieur),
    which are no Roman-numbered headings."""
    prose = _PROSE.format(who="Jean Valjean")
    text = (
        f"CHAPTER I--THE EVENING OF A DAY OF WALKING\n\n{prose}\n\n"
        'She murmured in a low tone, _"Tso-maraude."_1 All this took place.\n\n'
        "M. Madeleine replied gently:--\n\n"
        f"{prose}\n\nCHAPTER II--PRUDENCE COUNSELLED TO WISDOM\n\n{prose}\n\n"
        "FOOTNOTES: 1 (return) [ Patois of the French Alps: _chat de maraude_,\n"
        "rascally marauder.]\n\n\n2 (return) [ An ex-convict.]\n"
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert [chapter.title for chapter in book.chapters] == [
        "CHAPTER I--THE EVENING OF A DAY OF WALKING",
        "CHAPTER II--PRUDENCE COUNSELLED TO WISDOM",
    ]
    story = " ".join(p for chapter in book.chapters for p in chapter.paragraphs)
    assert '"Tso-maraude." All this' in story and "M. Madeleine replied gently" in story
    assert "Patois" not in story and [r.title for r in book.reference] == ["FOOTNOTES"]

    source = tmp_path / "miserables.htm"
    source.write_text(
        f"<html><body><h2>CHAPTER I—THE EVENING</h2><p>{prose}</p>"
        '<p>She murmured, <i>“Tso-maraude.”</i><a href="#linknote-1" name="linknoteref-1">1</a>'
        f"</p><h2>CHAPTER II—PRUDENCE</h2><p>{prose}</p><h2>FOOTNOTES:</h2>"
        '<p class="foot">1 (<a href="#linknoteref-1">return</a>)<br /> [ Patois of the French '
        "Alps ]</p></body></html>",
        encoding="utf-8",
    )
    book = read_book(source)
    assert book.chapters[0].paragraphs[1] == "She murmured, “Tso-maraude.”"
    assert [r.title for r in book.reference] == ["FOOTNOTES:"]


def test_braced_footnote_marks_and_italic_marks_in_titles() -> None:
    """The Island of Doctor Moreau marks its notes in braces ('the gig,"{1} luckily'), where a
    chemical formula's subscript (Dracula's 'C_{2}HCl_{3}O') is no note; Frankenstein's text
    edition sets a letter's title in _italics_."""
    prose = _PROSE.format(who="Prendick")
    text = (
        f"Letter 1\n\n_To Mrs. Saville, England._\n\n{prose}\n\n"
        f'Letter 2\n\n"Jump into the gig,"{{1}} luckily for us. Chloral, C_{{2}}HCl_{{3}}O.\n\n'
        f"{prose}\n"
    )
    chapters = chapters_from_blocks(blocks_from_text(text)).chapters
    assert chapters[0].title == "Letter 1: To Mrs. Saville, England"
    expected = '"Jump into the gig," luckily for us. Chloral, C_{2}HCl_{3}O.'
    assert chapters[1].paragraphs[0] == expected


def test_plain_texts_italics_and_bracketed_note_numbers_are_not_story_text() -> None:
    """Gutenberg's plain texts mark italics with underscores ("_In Four Acts_", "COMEDY_" became
    an entry of the play it heads) and some number their notes in brackets (Candide's
    "Pangloss[1]", "WHO THEY WERE.[34]"); the HTML editions of the same books carry neither. A
    blank for a name ("Mr. ____") is text; an ordinal raised in italics after its number ("December
    21_st_, 1847.", Jane Eyre's 1260.txt) is its ordinal."""
    prose = _PROSE.format(who="Candide")
    text = (
        f"CHAPTER I.\n\nHOW THE OLD WOMAN TOOK CARE OF CANDIDE.[7]\n\n{prose}\n\n"
        "A _COMEDY_ in Four Acts, by Doctor Pangloss[1], who taught\n_metaphysico-theologo-"
        "cosmolonigology_ to Mr. ____ of Thunder-ten-Tronckh.\n\nDecember 21_st_, 1847.\n\n"
        f"CHAPTER II.\n\nWHAT BECAME OF CANDIDE.\n\n{prose}\n"
    )
    chapters = chapters_from_blocks(blocks_from_text(text)).chapters
    assert [c.title for c in chapters] == [
        "CHAPTER I: HOW THE OLD WOMAN TOOK CARE OF CANDIDE",
        "CHAPTER II: WHAT BECAME OF CANDIDE",
    ]
    assert chapters[0].paragraphs[1] == (
        "A COMEDY in Four Acts, by Doctor Pangloss, who taught "
        "metaphysico-theologo-cosmolonigology to Mr. ____ of Thunder-ten-Tronckh."
    )
    assert chapters[0].paragraphs[2] == "December 21st, 1847."


def test_a_line_break_in_an_html_headings_source_is_a_space_and_a_br_a_new_line(
    tmp_path: Path,
) -> None:
    """Candide's HTML wraps its long titles in the source ("... AND HOW HE WAS\nEXPELLED
    THENCE."): one title, where a <br/> parts a number from its title."""
    prose = _PROSE.format(who="Candide")
    source = tmp_path / "candide.htm"
    source.write_text(
        "<html><body><h2>I</h2><h3>HOW CANDIDE WAS BROUGHT UP, AND HOW HE WAS\nEXPELLED "
        f"THENCE.</h3><p>{prose}</p><h2>CHAPTER II<br/>WHAT BECAME OF\r\nCANDIDE.</h2>"
        f"<p>{prose}</p></body></html>",
        encoding="utf-8",
    )
    titles = [chapter.title for chapter in read_book(source).chapters]
    assert titles == [
        "I: HOW CANDIDE WAS BROUGHT UP, AND HOW HE WAS EXPELLED THENCE",
        "CHAPTER II: WHAT BECAME OF CANDIDE",
    ]


def test_a_sentence_of_the_story_set_as_a_heading_under_a_chapters_is_its_first_line(
    tmp_path: Path,
) -> None:
    """Just So Stories' HTML sets a tale's first sentence as an <h3> under its title, and
    Tristram Shandy's a chapter's only sentence: the dry run showed "HOW THE CAMEL GOT HIS HUMP:
    NOW this is the next tale, and it tells how the Camel got his big hump." and lost
    "Chapter 4.LXXXVI." whole. The sentence is the chapter's first paragraph, as in the text
    editions; a title in capitals under a number stays the title."""
    prose = _PROSE.format(who="the Camel")
    source = tmp_path / "justso.htm"
    source.write_text(
        f"<html><body><h2>Chapter 1.</h2><p>{prose}</p>"
        "<h2>Chapter 2.</h2><h3>HOW THE CAMEL GOT HIS HUMP</h3>"
        "<h3>NOW this is the next tale, and it tells how the Camel got his big hump.</h3>"
        f"<p>{prose}</p><h2>Chapter 3.</h2>"
        "<h3>My uncle Toby's Map is carried down into the kitchen.</h3>"
        "<h2>Chapter 4.</h2><h3>HOW CANDIDE WAS BROUGHT UP, AND HOW HE WAS EXPELLED.</h3>"
        f"<p>{prose}</p></body></html>",
        encoding="utf-8",
    )
    chapters = read_book(source).chapters
    assert [chapter.title for chapter in chapters] == [
        "Chapter 1.",
        "Chapter 2: HOW THE CAMEL GOT HIS HUMP",
        "Chapter 3.",
        "Chapter 4: HOW CANDIDE WAS BROUGHT UP, AND HOW HE WAS EXPELLED",
    ]
    assert chapters[1].paragraphs[0].startswith("NOW this is the next tale")
    assert chapters[2].paragraphs == ["My uncle Toby's Map is carried down into the kitchen."]


def test_titles_in_title_case_that_the_contents_page_lists_head_chapters() -> None:
    """The Jungle Book (plain text): no chapter numbers, titles in title case ("Mowgli’s
    Brothers", "“Tiger! Tiger!”") as its contents page lists them, each story opening with an
    indented song; a line of the song is no title."""
    prose = _PROSE.format(who="Mowgli")
    song = "     Now Rann the Kite brings home the night\n        That Mang the Bat sets free--"
    text = (
        "THE JUNGLE BOOK\n\nBy Rudyard Kipling\n\nContents\n\n     Mowgli’s Brothers\n"
        "     Kaa’s Hunting\n     “Tiger! Tiger!”\n\n"
        f"Mowgli’s Brothers\n\n{song}\n\n{prose}\n\nThe Jungle\n\n{prose}\n\n"
        f"Kaa’s Hunting\n\n{prose}\n\n“Tiger! Tiger!”\n\n{prose}\n"
    )
    chapters = chapters_from_blocks(blocks_from_text(text)).chapters
    assert [c.title for c in chapters] == ["Mowgli’s Brothers", "Kaa’s Hunting", "“Tiger! Tiger!”"]
    assert "The Jungle" in chapters[0].paragraphs


def test_a_dutch_contents_page_and_titles_with_a_stop_over_pieces_told_in_numbered_parts() -> None:
    """Ontboezemingen (Gutenberg 24675, the -8 text): its contents page is headed "INHOUD."
    (Dutch), its pages have a stop ("3.") under a "Bladz." column, and its pieces are headed by
    titles in capitals with a stop ("PORTSMOUTH BINNEN.", "OM DEN ZUID[11]."), three of them told
    in parts numbered from "I." again: 13 of its 28 pieces ran on inside "II" (21,344 words),
    the parts of three pieces were chapters "I", "II", "III" alike, and the contents page was a
    chapter. Each title heads its piece; a piece's parts are named with it, its epigraph the
    first part's opening."""
    prose = _PROSE.format(who="Gabriël")
    pages = "                                      Bladz."
    text = (
        f"INHOUD.\n\n\nOP ZEE.\n\n{pages}\nAFSCHEID                               17.\n"
        "EEN EERSTE STORM                       25.\nPORTSMOUTH BINNEN                      41.\n"
        "OM DEN ZUID                           116.\n\n\nDE SLAMAT.\n\n"
        f"{pages}\n\nONTBOEZEMING VAN EEN AMBTENAAR         131.\n\n\nSUZE"
        "                                   175.\n\n\n\n"
        f"AFSCHEID.\n\n{prose}\n\nEEN EERSTE STORM.\n\n  Mercy on us!\n\n        SHAKESPEARE.\n\n"
        f"I.\n\n{prose}\n\nII.\n\n{prose}\n\nPORTSMOUTH BINNEN.\n\n{prose}\n\n"
        f"OM DEN ZUID[11].\n\n{prose}\n\nDE SLAMAT.\n\nI.\n\n{prose}\n\nII.\n\n{prose}\n\n"
        f"SUZE.\n\nI.\n\n{prose}\n\nII.\n\n{prose}\n"
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert [chapter.title for chapter in book.chapters] == [
        "AFSCHEID", "EEN EERSTE STORM: I", "EEN EERSTE STORM: II", "PORTSMOUTH BINNEN",
        "OM DEN ZUID", "DE SLAMAT: I", "DE SLAMAT: II", "SUZE: I", "SUZE: II",
    ]  # fmt: skip
    assert book.chapters[1].paragraphs[0] == "Mercy on us!"
    assert book.dropped == ["INHOUD (contents)"]


def test_a_division_heading_in_brackets_is_read_without_them() -> None:
    """Leaves of Grass's old text (Gutenberg 1322, lvgrs10.txt) sets its books' headings in
    brackets ("[BOOK II]", "[BOOK I.  INSCRIPTIONS]") and marks its poems' titles with a brace
    ("}  Starting from Paumanok"): the chapters were "[BOOK II]", "[BOOK I. INSCRIPTIONS]",
    where the newer text (1322.txt) has "BOOK II: Starting from Paumanok"."""
    prose = _PROSE.format(who="Walt")
    text = (
        f"[BOOK I.  INSCRIPTIONS]\n\n}}  One's-Self I Sing\n\n{prose}\n\n\n"
        f"[BOOK II]\n\n}}  Starting from Paumanok\n\n{prose}\n\n\n[BOOK III]\n\n{prose}\n\n"
        "[Footnote 1: a note in brackets stays a note]\n"
    )
    chapters = chapters_from_blocks(blocks_from_text(text)).chapters
    assert [chapter.title for chapter in chapters] == [
        "BOOK I. INSCRIPTIONS",
        "BOOK II: Starting from Paumanok",
        "BOOK III",
    ]
    assert "[Footnote 1: a note in brackets stays a note]" in chapters[2].paragraphs


def test_a_title_the_contents_page_misspells_still_heads_its_chapter() -> None:
    """Dubliners (Gutenberg 2814, the -0 text) lists "Couterparts" for the story headed
    "COUNTERPARTS": that story ran on inside "A LITTLE CLOUD" (9,008 words, 14 chapters). A title
    a letter apart is the one listed; a short one must match exactly ("CLAY" is no "PLAY")."""
    stories = ["The Sisters", "Araby", "A Little Cloud", "Couterparts", "Clay", "The Dead"]
    contents = "\n\n".join(stories)
    bodies = "".join(
        f"{title}\n\n{_PROSE.format(who='Farrington')}\n\n"
        for title in ("THE SISTERS", "ARABY", "A LITTLE CLOUD", "COUNTERPARTS", "PLAY", "THE DEAD")
    )
    text = f"DUBLINERS\n\nBy James Joyce\n\n\nContents\n\n{contents}\n\n\n\n{bodies}"
    titles = [c.title for c in chapters_from_blocks(blocks_from_text(text)).chapters]
    assert titles == ["THE SISTERS", "ARABY", "A LITTLE CLOUD", "COUNTERPARTS", "THE DEAD"]


def test_a_contents_line_set_twice_or_long_in_capitals_keeps_the_page_going() -> None:
    """Grimms' Fairy Tales (2591-0.txt) sets "THE JUNIPER-TREE" over "the juniper-tree." on its
    contents page, and lists "THE STORY OF THE YOUTH WHO WENT FORTH TO LEARN WHAT FEAR WAS" (13
    words): the page ended at either, and the eighteen tales listed after them ran together."""
    long_title = "THE STORY OF THE YOUTH WHO WENT FORTH TO LEARN WHAT FEAR WAS"
    tales = ["THE PINK", "THE JUNIPER-TREE", "THE TURNIP", long_title, "IRON HANS"]
    listed = [*tales[:2], "the juniper-tree.", *tales[2:]]
    contents = "\n".join(f"     {title}" for title in listed)
    bodies = "".join(f"\n\n\n{title}\n\n{_PROSE.format(who='Hans')}\n" for title in tales)
    text = f"FAIRY TALES\n\nBy The Brothers Grimm\n\n\nCONTENTS:\n\n{contents}\n\n\n{bodies}"
    titles = [c.title for c in chapters_from_blocks(blocks_from_text(text)).chapters]
    assert titles == tales


def test_a_tale_told_in_numbered_parts_among_titled_tales_keeps_the_tales_after_it() -> None:
    """Grimms' Fairy Tales tells "THE ADVENTURES OF CHANTICLEER AND PARTLET" in parts numbered
    "1. HOW THEY WENT ...", "2. ...", "3. ...": three numbered headings made it a book of
    numbered chapters, whose other headings are a poem's title inside a chapter, and the 44
    tales after it were one chapter of 78,948 words. Under a book's numbered parts, titles are
    still its poems or its scenes (Leaves of Grass, Hamlet)."""
    prose = _PROSE.format(who="Chanticleer")
    headings = [
        ["THE GOLDEN BIRD"], ["HANS IN LUCK"], ["OLD SULTAN"], ["BRIAR ROSE"],
        ["THE ADVENTURES OF CHANTICLEER AND PARTLET", "1. HOW THEY WENT TO THE MOUNTAINS"],
        ["2. HOW CHANTICLEER AND PARTLET WENT TO VISIT MR KORBES"], ["3. HOW PARTLET DIED"],
        ["RAPUNZEL"], ["FUNDEVOGEL"],
    ]  # fmt: skip
    blocks = [
        block
        for run in headings
        for block in [*(Block("heading", text) for text in run), Block("text", prose)]
    ]
    titles = [chapter.title for chapter in chapters_from_blocks(blocks).chapters]
    # its parts are one chapter (test_a_titled_story_told_in_numbered_parts_is_one_chapter)
    assert titles == [
        "THE GOLDEN BIRD", "HANS IN LUCK", "OLD SULTAN", "BRIAR ROSE",
        "THE ADVENTURES OF CHANTICLEER AND PARTLET", "RAPUNZEL", "FUNDEVOGEL",
    ]  # fmt: skip


def test_sections_a_long_contents_page_lists_before_its_numbered_chapters_are_chapters() -> None:
    """Moby-Dick (2701-0.txt) lists "ETYMOLOGY.", "EXTRACTS (Supplied by a Sub-Sub-Librarian).",
    135 chapters a blank line apart (some over twelve words) and "Epilogue": the page was cut
    short, its "Epilogue" headed the etymology and the extracts, and they were left out as
    front matter (3,591 words), where its HTML and AsciiDoc editions keep them as chapters."""
    prose = _PROSE.format(who="Ishmael")
    chapters = [f"CHAPTER {n}. The Chase, Day {n}." for n in range(1, 121)]
    chapters[55] = "CHAPTER 56. Of the Less Erroneous Pictures of Whales, and the True Pictures."
    listed = ["ETYMOLOGY.", "EXTRACTS (Supplied by a Sub-Sub-Librarian).", *chapters, "Epilogue"]
    contents = "\n\n".join(listed)
    front = (
        "\n\n\n\nOriginal Transcriber's Notes:\n\nThis text is a combination of etexts."
        f"\n\n\n\n  ETYMOLOGY.\n\n\n  (Supplied by a Late Consumptive Usher.)\n\n{prose}"
        f"\n\n\n\n  EXTRACTS. (Supplied by a Sub-Sub-Librarian).\n\n\n{prose}"
    )
    bodies = "".join(f"\n\n\n\n{title}\n\n{prose}" for title in [*chapters, "Epilogue"])
    text = f"MOBY-DICK;\n\nor, THE WHALE.\n\n\nCONTENTS\n\n{contents}{front}{bodies}\n"
    book = chapters_from_blocks(blocks_from_text(text))
    titles = [chapter.title for chapter in book.chapters]
    assert titles[:2] == ["ETYMOLOGY", "EXTRACTS. (Supplied by a Sub-Sub-Librarian)"]
    assert len(titles) == 123 and titles[-1] == "Epilogue"
    assert book.chapters[0].paragraphs[-1] == prose


def test_a_part_title_in_capitals_wrapped_onto_the_next_line_is_one_heading() -> None:
    """Gulliver's Travels (829-0.txt): "PART III.  A VOYAGE TO LAPUTA, BALNIBARBI, LUGGNAGG,
    GLUBBDUBDRIB, AND" over "JAPAN.": the part's chapters were named "... GLUBBDUBDRIB, AND:
    CHAPTER I" and "JAPAN." was left out as a heading with no prose."""
    prose = _PROSE.format(who="Gulliver")
    parts = (
        "PART I.  A VOYAGE TO LILLIPUT.",
        "PART III.  A VOYAGE TO LAPUTA, BALNIBARBI, LUGGNAGG, GLUBBDUBDRIB, AND\nJAPAN.",
    )
    text = "".join(
        f"{part}\n\n\n\n\n" + "".join(f"CHAPTER {n}.\n\n\n{prose}\n\n\n\n" for n in ("I", "II"))
        for part in parts
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert [chapter.title for chapter in book.chapters][2:] == [
        f"PART III. A VOYAGE TO LAPUTA, BALNIBARBI, LUGGNAGG, GLUBBDUBDRIB, AND JAPAN: CHAPTER {n}"
        for n in ("I", "II")
    ]
    assert not book.dropped and all(c.paragraphs == [prose] for c in book.chapters)
    # a title in lower case right under a numbered one is no part of it (Les Misérables'
    # contents: "I.  The Beginning of Repose" over "II.  How Jean may become Champ")
    listed = blocks_from_text("I.  The Beginning of Repose\nII.  How Jean may become Champ\n")
    assert listed[0].text == "I. The Beginning of Repose"


def test_a_poems_numbered_stanzas_set_in_inside_a_letter_head_no_chapters() -> None:
    """Pamela (6124-0.txt) numbers a poem's stanzas "I.", "II." centred over lines set in, and
    reads a psalm stanza by stanza beside her version of each ("III." then "III."): every number
    headed a chapter (85 where its HTML has 33, "I" to "XIV" of 21 to 26 words)."""
    prose = _PROSE.format(who="Pamela")
    stanza = "  My fellow-servants dear, attend\n  To these few lines, which I have penn'd:"
    verses = "\n\n".join(f"{' ' * 12}{n}.\n\n{stanza}" for n in ("I", "II", "III"))
    psalm = "\n\n".join(
        f"{' ' * 15}{n}.\n\n{stanza}\n\nNow this, said my master, is very near; and read:"
        for n in ("IV", "IV", "V", "V")
    )
    text = (
        f"LETTER I\n\n{prose}\n\n  VERSES ON MY GOING AWAY.\n\n{verses}\n\n{prose}\n\n"
        f"{psalm}\n\n{prose}\n\nLETTER II\n\n{prose}\n"
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert [chapter.title for chapter in book.chapters] == ["LETTER I", "LETTER II"]
    assert sum("fellow-servants" in p for p in book.chapters[0].paragraphs) == 7


def test_a_ballads_numbered_verses_of_long_lines_inside_a_chapter_head_no_chapters() -> None:
    """Jack Sheppard (16215.txt) sings a ballad of five numbered verses set in, lines up to 58
    characters ("Jolly nose! there are fools who say drink hurts the sight;"): each number
    headed a chapter (67 where its HTML has 58), cutting "CHAPTER V" to 372 words."""
    prose = _PROSE.format(who="Jonathan Wild")
    verse = (
        "    Jolly nose! there are fools who say drink hurts the sight;\n"
        "      Such dullards know nothing about it.\n"
        "    And to keep up their lustre I moisten my lip\n"
        "      With hogsheads of claret and sherry."
    )
    verses = "\n\n".join(f"    {n}.\n\n{verse}" for n in ("I", "II", "III", "IV", "V"))
    text = (
        f"CHAPTER IV.\n\n{prose}\n\nCHAPTER V.\n\n{prose}\n\n{verses}\n\n{prose}\n\n"
        f"CHAPTER VI.\n\n{prose}\n"
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert [chapter.title for chapter in book.chapters] == ["CHAPTER IV", "CHAPTER V", "CHAPTER VI"]
    assert sum("Jolly nose" in p for p in book.chapters[1].paragraphs) == 5


def test_an_imprint_ending_in_its_year_over_an_epigraph_is_front_matter(tmp_path: Path) -> None:
    """Jack Sheppard's HTML sets its publisher and year as headings ("Internationale Bibliothek
    G M B H Berlin", "1922") over an epigraph, before the contents: its first chapter was
    "Internationale Bibliothek G M B H Berlin: 1922" (49 words)."""
    prose = _PROSE.format(who="Jack")
    source = tmp_path / "sheppard.htm"
    source.write_text(
        "<html><body><h1>JACK SHEPPARD A Romance</h1><h2>BY W. Harrison Ainsworth</h2>"
        "<h6>Internationale Bibliothek G M B H Berlin</h6><h6>1922</h6>"
        '<p>"Upon my word, friend," said I, "you have almost made me long to try what a '
        'robber I should make." "There is a great art in it, if you did," quoth he.</p>'
        f"<h2>CHAPTER I.</h2><h3>The Widow and her Child.</h3><p>{prose}</p>"
        f"<h2>CHAPTER II.</h2><h3>The Old Mint.</h3><p>{prose}</p></body></html>",
        encoding="utf-8",
    )
    book = read_book(source)
    assert [chapter.title for chapter in book.chapters] == [
        "CHAPTER I: The Widow and her Child",
        "CHAPTER II: The Old Mint",
    ]
    assert any("Internationale Bibliothek" in dropped for dropped in book.dropped), book.dropped


def test_a_plays_first_cast_under_its_theatre_is_no_chapter(tmp_path: Path) -> None:
    """The Importance of Being Earnest's HTML heads its first cast "LONDON: ST. JAMES'S THEATRE"
    ("John Worthing, J.P.: Mr. George Alexander.<br/>Algernon Moncrieff: Mr. Allen Aynesworth.
    ..."): one paragraph of 58 words read as prose, a first chapter whose players the offline
    glossary named beside the parts ("Cecily Cardew ... appears with Evelyn Millard")."""
    prose = _PROSE.format(who="Algernon")
    cast = "<br/>".join(
        f"{part}: {player}."
        for part, player in (
            ("John Worthing, J.P.", "Mr. George Alexander"),
            ("Algernon Moncrieff", "Mr. Allen Aynesworth"),
            ("Rev. Canon Chasuble, D.D.", "Mr. H. H. Vincent"),
            ("Lady Bracknell", "Miss Rose Leclercq"),
            ("Cecily Cardew", "Miss Evelyn Millard"),
        )
    )
    source = tmp_path / "844-h.htm"
    source.write_text(
        "<html><body><h2>LONDON: ST. JAMES&rsquo;S THEATRE</h2>"
        "<p>Lessee and Manager: Mr. George Alexander</p><p>February 14th, 1895</p>"
        f"<p>{cast}</p><h2>FIRST ACT</h2><p>{prose}</p><h2>SECOND ACT</h2><p>{prose}</p>"
        "</body></html>",
        encoding="utf-8",
    )
    book = read_book(source)
    assert [chapter.title for chapter in book.chapters] == ["FIRST ACT", "SECOND ACT"]
    # a paragraph that names a player or two is prose all the same
    assert chapters_from_blocks(
        [Block("heading", "ACT I"), Block("text", f"Algernon: Mr. Worthing is here. {prose}")]
    ).chapters


def test_a_publishers_note_is_front_matter() -> None:
    """Pamela's HTML made its "PUBLISHERS' NOTE" on Richardson's life its first chapter (267
    words), where its text left it out as words before the first heading."""
    prose = _PROSE.format(who="Pamela")
    blocks = [
        Block("heading", "PUBLISHERS' NOTE"), Block("text", prose),
        Block("heading", "LETTER I"), Block("text", prose),
        Block("heading", "LETTER II"), Block("text", prose),
    ]  # fmt: skip
    book = chapters_from_blocks(blocks)
    assert [chapter.title for chapter in book.chapters] == ["LETTER I", "LETTER II"]
    assert book.dropped == ["PUBLISHERS' NOTE (front matter; 33 words)"]


def test_a_plays_acts_are_its_chapters_and_a_song_inside_one_stays_in_it(tmp_path: Path) -> None:
    """The Rescue of the Princess Winsome (a play, Gutenberg): its text was one chapter, "ACT I."
    no heading; its HTML dropped Act II's opening verse as a chapter "(no prose)" under the
    song's caption. And a speaker's line in a brace cut an act in two."""
    prose = _PROSE.format(who="Winsome")
    # speakers joined by a brace speak at once (The 'Mind the Paint' Girl): no heading
    braced = "JIMMIE.                 }\n\nBuck up, Lil!           }\n\nMRS. UPJOHN.            }"
    text = f"ACT I.\n\n{prose}\n\nACT II.\n\n{prose}\n\n{braced}\n\nAct III\n\n{prose}\n"
    titles = [c.title for c in chapters_from_blocks(blocks_from_text(text)).chapters]
    assert titles == ["ACT I", "ACT II", "Act III"]
    source = tmp_path / "winsome.htm"
    source.write_text(
        f"<html><body><h2>ACT I.</h2><p>{prose}</p><h2>ACT II.</h2><h3>Spinning Wheel Song</h3>"
        "<p>Spin, wheel, reel out thy golden thread,<br/>Spin for the princess fair.</p>"
        f"<p>{prose}</p></body></html>",
        encoding="utf-8",
    )
    book = read_book(source)
    # a heading right under "ACT II." reads as its title, as under "CHAPTER II."
    assert [chapter.title for chapter in book.chapters] == ["ACT I.", "ACT II: Spinning Wheel Song"]
    assert any("golden thread" in p for p in book.chapters[1].paragraphs)


def test_a_play_inside_a_novels_chapter_stays_in_it_and_a_printers_town_heads_nothing() -> None:
    """The Little Colonel's Hero (Gutenberg 15122, text and HTML): chapter XIII is a play, its
    cast under "CHARACTERS", a synopsis of its acts, then "ACT I." to "ACT III.": the chapter was
    dropped "(no prose)", its cast set aside as the book's, its acts six chapters. And the text's
    first chapter was "CLINTON, MASS., U.S.A", its printer's town over the publisher's list."""
    prose = _PROSE.format(who="Lloyd")
    text = (
        "Copyright, 1902\n\nPRINTED BY THE COLONIAL PRESS INC.,\n\nCLINTON, MASS., U.S.A.\n\n"
        f"Each one vol., large 12 mo, bound in rose silk cloth; {prose}\n\n"
        f"CHAPTER XII.\n\nHOME AGAIN\n\n{prose}\n\n"
        'CHAPTER XIII.\n\n"THE RESCUE OF THE PRINCESS WINSOME"\n\n'
        "    AN ENTERTAINMENT FOR THE BENEFIT\n    OF THE RED CROSS\n\n"
        "                     CHARACTERS\n\n"
        "    King                 Rob Moore.\n    Queen                Allison Walton.\n\n"
        "ACT I.\n\nSCENE I. In the Witch's Orchard.\n\nACT II.\n\nSCENE I. In the Tower Room.\n\n"
        f"ACT I.\n\nSCENE I. {prose}\n\nACT II.\n\nSCENE. {prose}\n\n"
        f"CHAPTER XIV.\n\nIN CAMP\n\n{prose}\n"
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert [chapter.title for chapter in book.chapters] == [
        "CHAPTER XII: HOME AGAIN",
        'CHAPTER XIII: "THE RESCUE OF THE PRINCESS WINSOME"',
        "CHAPTER XIV: IN CAMP",
    ]
    play = book.chapters[1]
    assert "CHARACTERS" in play.paragraphs and play.paragraphs.count("ACT II") == 2
    assert not book.reference


def test_a_plays_numbered_scenes_part_its_act_into_scenes() -> None:
    """Macbeth (Gutenberg 1533): its acts are its chapters, and each "SCENE II. A Camp near
    Forres." line was a paragraph like any other, the act's scenes run together (cut only every
    700 words). A numbered scene opens a scene of its act, its line the scene's first."""
    speech = f"MACBETH.\n{_PROSE.format(who='Macbeth')}"
    text = (
        f"ACT I\n\nSCENE I. An open Place. Thunder and Lightning.\n\n{speech}\n\n"
        f"SCENE II. A Camp near Forres.\n\n{speech}\n\nACT II\n\n"
        f"SCENE I. Inverness. Court within the Castle.\n\n{_PROSE.format(who='Banquo')}\n"
    )
    chapters = chapters_from_blocks(blocks_from_text(text)).chapters
    assert [chapter.title for chapter in chapters] == ["ACT I", "ACT II"]
    assert [scene[0] for scene in chapters[0].scenes] == [
        "SCENE I. An open Place. Thunder and Lightning.",
        "SCENE II. A Camp near Forres.",
    ]
    assert len(chapters[1].scenes) == 1


def test_a_place_in_another_book_set_as_a_heading_heads_no_chapter() -> None:
    """Charles Dickens and Music (Gutenberg 16595, text and HTML): chapter VII quotes Silas
    Wegg's verses, each under the place in Our Mutual Friend it comes from ("Book I, Ch. 15."):
    read as book headings, they were chapters, "Book III, Ch. 6." twice, the last one holding the
    rest of the book. A place cited is a line of the chapter it is in."""
    prose = _PROSE.format(who="Wegg")
    blocks = [Block("heading", "CHAPTER V"), Block("text", prose)]
    blocks += [Block("heading", "CHAPTER VI"), Block("text", prose)]
    blocks += [Block("heading", "CHAPTER VII"), Block("heading", "Silas Wegg's Effusions")]
    blocks += [Block("text", prose)]
    for place in ("Book I, Ch. 15.", "Book III, Ch. 6.", "Book III, Ch. 6.", "Book IV, Ch 3."):
        blocks += [Block("heading", place), Block("text", f"From a song. {prose}")]
    chapters = chapters_from_blocks(blocks).chapters
    assert [chapter.title for chapter in chapters] == [
        "CHAPTER V",
        "CHAPTER VI",
        "CHAPTER VII: Silas Wegg's Effusions",
    ]
    assert chapters[2].paragraphs.count("Book III, Ch. 6.") == 2


def test_a_signature_over_its_place_and_date_heads_no_chapter() -> None:
    """The Beggar's Opera (Gutenberg 25063, the text editions): the edition's tribute ends
    "JOHN DRINKWATER." over "_London_," and "_Midsummer 1921_.", its note on the staging "C.
    LOVAT FRASER." (an initial, read as chapter C) over "_Chelsea_,": the first chapters were
    titled with those signatures. Nor are the cast's "MEN." and "WOMEN." (under "DRAMATIS
    PERSONÆ.") nor the persons of a scene ("BEGGAR, PLAYER.") headings."""
    prose = _PROSE.format(who="Macheath")
    text = (
        f"_First published September 1921_\n\nCLAUD LOVAT FRASER\n\n{prose}\n\n"
        "JOHN DRINKWATER.\n\n_London_,\n\n_Midsummer 1921_.\n\n\n"
        f"NOTE ON THE SCENE AND COSTUMES\n\n{prose}\n\n"
        "C. LOVAT FRASER.\n\n_Chelsea_,\n\n_February 1921_.\n\n\n"
        "DRAMATIS PERSONÆ.\n\n\nMEN.\n\n  MR. PEACHUM\n  LOCKIT\n\nWOMEN.\n\n  POLLY PEACHUM\n\n"
        f"  Constables, Drawer, Turnkey, {prose}\n\n\n"
        f"INTRODUCTION\n\nBEGGAR, PLAYER.\n\n{prose}\n\n"
        f"ACT I. SCENE I.\n\n{prose}\n\nACT II. SCENE I.\n\n{prose}\n\n"
        f"ACT III. SCENE I.\n\n{prose}\n"
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert [chapter.title for chapter in book.chapters] == [
        "INTRODUCTION",
        "ACT I. SCENE I",
        "ACT II. SCENE I",
        "ACT III. SCENE I",
    ]
    assert book.chapters[0].paragraphs[0] == "BEGGAR, PLAYER."
    assert [section.title for section in book.reference] == ["DRAMATIS PERSONÆ"]


def test_the_books_title_set_again_over_its_first_story_is_not_part_of_that_title(
    tmp_path: Path,
) -> None:
    """Dubliners' HTML (and an EPUB made of it) sets "DUBLINERS" again right over "THE SISTERS":
    the first story was titled "DUBLINERS: THE SISTERS"."""
    prose = _PROSE.format(who="Eliza")
    source = tmp_path / "dubliners.htm"
    source.write_text(
        "<html><head><title>Dubliners</title></head><body><h1>DUBLINERS</h1>"
        "<h2>By James Joyce</h2><h1>DUBLINERS</h1><h2>THE SISTERS</h2>"
        f"<p>{prose}</p><h2>AN ENCOUNTER</h2><p>{prose}</p></body></html>",
        encoding="utf-8",
    )
    book = read_book(source)
    assert [chapter.title for chapter in book.chapters] == ["THE SISTERS", "AN ENCOUNTER"]


def test_the_books_title_in_other_words_over_the_first_chapters_is_not_part_of_it() -> None:
    """Grimms' Fairy Tales' HTML (Gutenberg 2591) sets "THE BROTHERS GRIMM FAIRY TALES" (the
    book's title, in other words) right over its first tale: the first chapter was "THE
    BROTHERS GRIMM FAIRY TALES: THE GOLDEN BIRD". A chapter titled as the book, alone, keeps it."""
    prose = _PROSE.format(who="the king")
    blocks = [
        Block("heading", "THE BROTHERS GRIMM FAIRY TALES"),
        Block("heading", "THE GOLDEN BIRD"),
        Block("text", prose),
        Block("heading", "HANS IN LUCK"),
        Block("text", prose),
        Block("heading", "THE GRIMM FAIRY TALE"),
        Block("text", prose),
    ]
    book = chapters_from_blocks(blocks, "Grimms' Fairy Tales")
    titles = [chapter.title for chapter in book.chapters]
    assert titles == ["THE GOLDEN BIRD", "HANS IN LUCK", "THE GRIMM FAIRY TALE"]


def test_a_plays_list_of_its_acts_heads_nothing_and_a_contents_list_keeps_its_first_chapter(
    tmp_path: Path,
) -> None:
    """The Importance of Being Earnest lists "ACT I.  Algernon Moncrieff's Flat ...", "ACT II.
    ...", "ACT III. ..." one under another before its cast, and heads its acts "FIRST ACT": with
    "ACT" a division the whole play became one chapter, "ACT III.". Its cast, "THE PERSONS IN
    THE PLAY", was left out as words before the first heading. Peter Pan's contents page of
    "Chapter 1 PETER BREAKS THROUGH" lines, its first chapter's heading right under it, keeps
    that chapter. The Prince's HTML title page ("THE PRINCE" over bylines) stays a title page."""
    prose = _PROSE.format(who="Algernon")
    scenes = "\n\n".join(
        f"ACT {n}.  {place}"
        for n, place in (("I", "Algernon's Flat."), ("II", "The Garden."), ("III", "The Hall."))
    )
    act = "\n\n".join([prose] * 12)  # acts of some length: a bare "SCENE" heads each
    acts = "".join(
        f"\n\n\n\n{name} ACT\n\n\nSCENE\n\n\n{act}\n" for name in ("FIRST", "SECOND", "THIRD")
    )
    cast = "THE PERSONS IN THE PLAY\n\n\nJohn Worthing, J.P.\nAlgernon Moncrieff\n\n\n\n"
    text = f"{cast}THE SCENES OF THE PLAY\n\n{scenes}\n\nTIME: The Present.\n{acts}"
    play = chapters_from_blocks(blocks_from_text(text))
    # its acts are "FIRST ACT", an ordinal before the division (they were headed "SCENE" alone)
    titles = [chapter.title for chapter in play.chapters]
    assert titles == ["FIRST ACT: SCENE", "SECOND ACT: SCENE", "THIRD ACT: SCENE"]
    # its cast and its list of settings are kept for reference, as a dramatis personae is
    assert [part.title for part in play.reference] == [
        "THE PERSONS IN THE PLAY", "THE SCENES OF THE PLAY"
    ]  # fmt: skip

    listed = [f"Chapter {n} {name}" for n, name in ((1, "PETER BREAKS THROUGH"), (2, "THE SHADOW"))]
    contents = "\n\n".join(listed)
    book = f"Contents:\n\n{contents}\n\n\n\n" + "".join(f"{t}\n\n{prose}\n\n" for t in listed)
    titles = [c.title for c in chapters_from_blocks(blocks_from_text(book)).chapters]
    assert titles == listed

    source = tmp_path / "prince.htm"
    source.write_text(
        "<html><head><title>The Prince</title></head><body><h1>THE PRINCE</h1>"
        "<h2>by Nicolo Machiavelli</h2><h3>Translated by W. K. Marriott</h3>"
        "<p>Nicolo Machiavelli, born at Florence on 3rd May 1469.</p>"
        f"<h2>CHAPTER I</h2><p>{prose}</p><h2>CHAPTER II</h2><p>{prose}</p></body></html>",
        encoding="utf-8",
    )
    assert [c.title for c in read_book(source).chapters] == ["CHAPTER I", "CHAPTER II"]


def test_chapter_numbers_spelled_out_past_twenty() -> None:
    """Little Women: "CHAPTER TWENTY-ONE" over "LAURIE MAKES MISCHIEF, AND JO MAKES PEACE", up
    to "CHAPTER FORTY-SEVEN" (past "TWENTY" they were no headings: 18 chapters ran together)."""
    prose = _PROSE.format(who="Jo")
    text = "".join(
        f"CHAPTER {number}\n\n{title}\n\n{prose}\n\n"
        for number, title in (
            ("TWENTY", "CONFIDENTIAL"),
            ("TWENTY-ONE", "LAURIE MAKES MISCHIEF, AND JO MAKES PEACE"),
            ("THIRTY", "CONSEQUENCES"),
            ("FORTY-SEVEN", "HARVEST TIME"),
        )
    )
    assert _titles_of_text(text) == [
        "CHAPTER TWENTY: CONFIDENTIAL",
        "CHAPTER TWENTY-ONE: LAURIE MAKES MISCHIEF, AND JO MAKES PEACE",
        "CHAPTER THIRTY: CONSEQUENCES",
        "CHAPTER FORTY-SEVEN: HARVEST TIME",
    ]


def test_a_gutenberg_html_book_of_todays_layout(tmp_path: Path) -> None:
    """Gutenberg's HTML of today (2023 on): the header and footer in `pg-boilerplate` sections,
    the title in a `<p><strong>Title</strong>: ...`, the markers in `<div><span>`."""
    prose = _PROSE.format(who="Tom")
    source = tmp_path / "harbour.html"
    source.write_text(
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"/><title>The Project '
        "Gutenberg eBook of The Harbour Book</title></head><body>"
        '<section class="pg-boilerplate pgheader" id="pg-header"><h2>The Project Gutenberg '
        "eBook of The Harbour Book</h2><div>This ebook is for the use of anyone anywhere.</div>"
        '<div id="pg-machine-header"><p><strong>Title</strong>: The Harbour Book</p>'
        "<p><strong>Author</strong>: A. Writer</p></div>"
        '<div id="pg-start-separator"><span>*** START OF THE PROJECT GUTENBERG EBOOK THE HARBOUR'
        " BOOK ***</span></div></section><h1>THE HARBOUR BOOK</h1><div>BY A. WRITER</div>"
        f'<div class="chapter"><h2><a id="c1"></a>CHAPTER I</h2><p>{prose}</p></div>'
        f'<div class="chapter"><h2><a id="c2"></a>CHAPTER II</h2><p>{prose}</p></div>'
        '<section class="pg-boilerplate pgheader" id="pg-footer"><div id="pg-end-separator">'
        "<span>*** END OF THE PROJECT GUTENBERG EBOOK THE HARBOUR BOOK ***</span></div>"
        f"<h2>THE FULL PROJECT GUTENBERG LICENSE</h2><p>{prose} Project Gutenberg.</p>"
        "</section></body></html>",
        encoding="utf-8",
    )
    book = read_book(source)
    assert book.title == "The Harbour Book"
    assert [chapter.title for chapter in book.chapters] == ["CHAPTER I", "CHAPTER II"]
    assert all(chapter.paragraphs == [prose] for chapter in book.chapters)


def test_a_heading_that_is_one_link_back_to_the_contents_heads_its_chapter(
    tmp_path: Path,
) -> None:
    """The Three Musketeers (HTML, 2016): every chapter heading is a link back to the contents
    (`<h2><a class="toc-backref" href="#toc">...</a></h2>`) and the header runs its fields
    together ("Title: The Three Musketeers Author: ..."): the import found no story at all."""
    prose = _PROSE.format(who="Athos")
    source = tmp_path / "musketeers.htm"
    source.write_text(
        "<html><head><title>THE THREE MUSKETEERS</title></head><body>"
        "<p><span>Title: The Three Musketeers<br/><br/>Author: Alexandre Dumas, Pere<br/>"
        "<br/>Release Date: March 01, 1998 [EBook #1257]</span></p>"
        "<p>*** START OF THE PROJECT GUTENBERG EBOOK THE THREE MUSKETEERS ***</p>"
        + "".join(
            f'<h2 id="c{n}"><a class="toc-backref" href="#toc{n}">{title}</a></h2><p>{prose}</p>'
            for n, title in enumerate(
                ["1 THE THREE PRESENTS OF D'ARTAGNAN THE ELDER", "2 THE ANTECHAMBER"], start=1
            )
        )
        + "<p>*** END OF THE PROJECT GUTENBERG EBOOK THE THREE MUSKETEERS ***</p></body></html>",
        encoding="utf-8",
    )
    book = read_book(source)
    assert book.title == "The Three Musketeers"
    assert [chapter.title for chapter in book.chapters] == [
        "1 THE THREE PRESENTS OF D'ARTAGNAN THE ELDER",
        "2 THE ANTECHAMBER",
    ]


def test_a_number_and_a_title_with_no_stop_head_chapters() -> None:
    """Black Beauty ("01 My Early Home") and The Three Musketeers ("1 THE THREE PRESENTS OF
    D'ARTAGNAN THE ELDER") number their chapters with no stop: they came in as one chapter per
    part, or two in all. A sentence that opens with a number, a cipher of numbers, a page's
    running head ("8   THE SCARLET LETTER") and such lines in a book whose chapters have
    headings of their own ("I. THE PRISON-DOOR") head nothing."""
    prose = textwrap.fill("Ginger and I were turned out in the paddock that spring. " * 30, 70)
    titles = ["01 My Early Home", "02 The Hunt", "03 THE LADY ANNE, OR A RUNAWAY HORSE"]
    parts = {0: "Part I\n\n\n\n", 2: "Part II\n\n\n\n"}  # parts group the chapters
    text = "".join(
        f"{parts.get(n, '')}{title}\n\n\n{prose}\n\n\n" for n, title in enumerate(titles)
    )
    text += f"12 men rode out that night.\n\n{prose}\n\n534 C2 13 127 36 DOUGLAS\n\n{prose}\n"
    book = chapters_from_blocks(blocks_from_text(text))
    assert [c.title for c in book.chapters] == titles
    heads = "".join(f"{page}   THE SCARLET LETTER\n\n{prose}\n\n" for page in (8, 10, 12))
    chapters = f"I. THE PRISON-DOOR\n\n{prose}\n\n{heads}II. PEARL\n\n{prose}\n\n"
    chapters += f"33  THE CUSTOM-HOUSE\n\n{prose}\n"
    assert [c.title for c in chapters_from_blocks(blocks_from_text(chapters)).chapters] == [
        "I. THE PRISON-DOOR",
        "II. PEARL",
    ]


def test_the_story_told_under_no_heading_before_the_first_chapter_is_its_prologue() -> None:
    """The Turn of the Screw opens with a frame story of 2,768 words under the book's title
    alone, then "I": it was dropped unsaid. A short text there (a title page, a dedication) is
    left out, and the dry run says how many words."""
    frame = textwrap.fill("The story had held us, round the fire, sufficiently breathless. " * 200)
    chapter = textwrap.fill("I remember the whole beginning as a succession of flights. " * 40)
    text = f"THE TURN OF THE SCREW\n\n\n{frame}\n\n\nI\n\n{chapter}\n\n\nII\n\n{chapter}\n"
    book = chapters_from_blocks(blocks_from_text(text))
    assert [c.title for c in book.chapters] == ["Prologue", "I", "II"]
    short = textwrap.fill("To my friend, who read this first, with thanks for all. " * 6)
    text = f"{short}\n\n\nI\n\n{chapter}\n\n\nII\n\n{chapter}\n"
    book = chapters_from_blocks(blocks_from_text(text))
    assert [c.title for c in book.chapters] == ["I", "II"]
    assert book.dropped == ["66 words before the first heading (front matter)"]


def test_a_transcribers_note_above_the_story_is_front_matter_not_back_matter() -> None:
    """Candide (HTML): a transcriber's note at the very top made everything after it back
    matter until a numbered heading short enough ended it; chapter I ("I: HOW CANDIDE WAS
    BROUGHT UP ..., AND HOW HE WAS: EXPELLED THENCE.", a long title) and the introduction were
    filed as reference, and a series' title page led the book. The sections of a book that
    open ("PRELUDE", Middlemarch), close ("FINALE") or start with "By" ("BY THE RIVER",
    Siddhartha) are chapters."""
    prose = _PROSE.format(who="Candide")
    heads = [
        "Transcriber's Note:",
        "THE MODERN LIBRARY: OF THE WORLD'S BEST BOOKS: CANDIDE BY VOLTAIRE",
        "INTRODUCTION",
        "PRELUDE",
        "I: HOW CANDIDE WAS BROUGHT UP IN A MAGNIFICENT CASTLE, AND HOW HE WAS: EXPELLED THENCE",
        "II: WHAT BECAME OF CANDIDE AMONG THE BULGARIANS",
        "BY THE RIVER",
        "FINALE",
    ]
    blocks = [block for head in heads for block in (Block("heading", head), Block("text", prose))]
    book = chapters_from_blocks(blocks, title="Candide")
    assert [c.title for c in book.chapters] == heads[2:]
    assert book.reference == []
    assert book.dropped[:2] == [
        "Transcriber's Note: (front matter; 33 words)",
        "THE MODERN LIBRARY: OF THE WORLD'S BEST BOOKS: CANDIDE BY VOLTAIRE (title page)",
    ]


def test_a_preface_to_an_edition_after_the_contents_is_a_chapter() -> None:
    """David Copperfield (plain text): "PREFACE TO 1850 EDITION" follows the contents page; it
    was no heading, so its prose went with the contents, unsaid."""
    prose = textwrap.fill("I do not find it easy to get sufficiently far away from this Book. " * 9)
    chapter = textwrap.fill("Whether I shall turn out to be the hero of my own life, or not. " * 40)
    contents = ["I.      I Am Born", "II.     I Observe", "III.    I Have a Change"]
    text = "CONTENTS\n\n\n" + "".join(f"     {line}\n" for line in contents)
    text += f"\n\n\n\nPREFACE TO 1850 EDITION\n\n\n{prose}\n\n\n\n"
    for number, title in ((1, "I AM BORN"), (2, "I OBSERVE"), (3, "I HAVE A CHANGE")):
        text += f"CHAPTER {number}. {title}\n\n\n\n{chapter}\n\n\n"
    book = chapters_from_blocks(blocks_from_text(text))
    assert [c.title for c in book.chapters] == [
        "PREFACE TO 1850 EDITION",
        "CHAPTER 1. I AM BORN",
        "CHAPTER 2. I OBSERVE",
        "CHAPTER 3. I HAVE A CHANGE",
    ]


def test_a_contents_page_set_as_headings_then_an_unnumbered_introduction() -> None:
    """The Scarlet Letter (plain text): its contents lines stand alone like headings
    ("CHAPTER I.        THE PRISON-DOOR"), the first entry is "INTRODUCTORY.     THE
    CUSTOM-HOUSE", and the introduction is headed "THE CUSTOM-HOUSE" alone, in capitals."""
    prose = _PROSE.format(who="Hester")
    entries = ["INTRODUCTORY.     THE CUSTOM-HOUSE"] + [
        f"CHAPTER {number}.{' ' * 8}{title}"
        for number, title in (
            ("I", "THE PRISON-DOOR"),
            ("II", "THE MARKET-PLACE"),
            ("III", "PEARL"),
        )
    ]
    contents = "\n\n".join(f"    {entry}" for entry in entries)
    text = (
        f"CONTENTS\n\n{contents}\n\n\n\nTHE CUSTOM-HOUSE\n\n{prose}\n\n"
        f"I. THE PRISON-DOOR\n\n{prose}\n\nII. THE MARKET-PLACE\n\n{prose}\n\n"
        f"III. PEARL\n\n{prose}\n"
    )
    assert _titles_of_text(text) == [
        "THE CUSTOM-HOUSE",
        "I. THE PRISON-DOOR",
        "II. THE MARKET-PLACE",
        "III. PEARL",
    ]


def test_an_ebook_producers_own_pages_are_front_matter() -> None:
    """EPUBs made by volunteers (Standard Ebooks, say) open with an "Imprint" and close with a
    "Colophon" and an "Uncopyright", each of prose: never story."""
    prose = _PROSE.format(who="Catherine")
    producer = "This ebook is the product of many hours of hard work by volunteers, " * 3
    blocks = [
        Block("heading", "Imprint"),
        Block("text", producer),
        Block("heading", "I"),
        Block("text", prose),
        Block("heading", "Colophon"),
        Block("text", producer),
        Block("heading", "Uncopyright"),
        Block("text", producer),
    ]
    book = chapters_from_blocks(blocks)
    assert [chapter.title for chapter in book.chapters] == ["I"]
    assert book.dropped == [
        "Imprint (front matter; 39 words)",
        "Colophon (front matter; 39 words)",
        "Uncopyright (front matter; 39 words)",
    ]


def test_a_heading_group_is_one_title(tmp_path: Path) -> None:
    """XHTML as Standard Ebooks writes it: `<hgroup>` holding the chapter's number as a heading
    and its title as a paragraph."""
    prose = _PROSE.format(who="Catherine")
    source = tmp_path / "chapter.xhtml"
    source.write_text(
        '<html><body><section id="chapter-1"><hgroup><h2>Chapter I</h2><p>The Heights</p>'
        f"</hgroup><p>{prose}</p></section><section><h2>Chapter II</h2><p>{prose}</p>"
        "</section></body></html>",
        encoding="utf-8",
    )
    book = read_book(source)
    assert [c.title for c in book.chapters] == ["Chapter I: The Heights", "Chapter II"]
    assert book.chapters[0].paragraphs == [prose]


def test_a_chapter_heading_right_under_a_volumes_is_a_heading_too() -> None:
    """An old Uncle Tom's Cabin (utomc10.txt) sets "VOLUME II." and "CHAPTER XIX" on two lines
    with no blank line between: chapter XIX was merged into XVIII. The same book with the blank
    line, and a chapter line under a line of prose, read as before."""
    prose = textwrap.fill("Tom told Eva the woman's history, and she sighed. " * 30, 70)
    chapter = "CHAPTER {n}\n\nMiss Ophelia's {what}\n\n\n{prose}\n\n\n"
    text = chapter.format(n="XVIII", what="Experiences", prose=prose)
    text += "VOLUME II.\n" + chapter.format(n="XIX", what="Opinions", prose=prose)
    text += chapter.format(n="XX", what="Topsy", prose=prose)
    titles = [
        "CHAPTER XVIII: Miss Ophelia's Experiences",
        "CHAPTER XIX: Miss Ophelia's Opinions",
        "CHAPTER XX: Miss Ophelia's Topsy",
    ]
    assert _titles_of_text(text) == titles
    assert _titles_of_text(text.replace("VOLUME II.\n", "VOLUME II.\n\n\n")) == titles
    glued = text.replace("VOLUME II.\n", f"{prose[:60]}\n")  # a line of prose above: no heading
    assert _titles_of_text(glued) == [titles[0], titles[2]]


def test_a_title_of_two_capital_letters_heads_its_chapter() -> None:
    """Siddhartha's "OM" stands alone between blank lines like its other titles ("THE SON",
    "GOVINDA"): a title, where a numeral ("IV") or an initial's letters are none."""
    prose = textwrap.fill("Siddhartha listened to the river, and the river laughed. " * 30, 70)
    text = "".join(f"\n\n\n\n{title}\n\n{prose}\n" for title in ("THE SON", "OM", "GOVINDA"))
    assert _titles_of_text(text) == ["THE SON", "OM", "GOVINDA"]


def test_an_ending_before_the_first_numbered_chapter_is_left_out_and_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Persuasion's EPUB opens with the author's biographical notice, whose own heading is no
    heading element, and its POSTSCRIPT, which is: an ending before the first numbered chapter
    ends no story, so it is left out; the import's line says what it left out."""
    prose = "Ysolde crossed the Glass Marsh at dawn, following the heron north past the weirs. " * 3
    notice = "The following pages are the production of a pen already known to the public. " * 3
    chapters = "".join(f"## Chapter {n}\n\n{prose}\n\n" for n in ("I", "II", "III"))
    text = f"# The Glass Marsh\n\n## Postscript\n\n{notice}\n\n{chapters}"
    text += f"## Epilogue\n\n{prose}\n"
    book = chapters_from_blocks(blocks_from_markdown(text))
    assert [c.title for c in book.chapters] == [
        "Chapter I",
        "Chapter II",
        "Chapter III",
        "Epilogue",
    ]
    assert "Postscript (front matter: an ending before the first chapter)" in book.dropped

    source, out = tmp_path / "marsh.md", tmp_path / "marsh.db"
    source.write_text(text, encoding="utf-8")
    assert main(["import", str(source), "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("imported 4 chapters")
    assert lines[1].startswith("left out, not story: ") and "Postscript" in lines[1], lines


def test_a_work_appended_under_its_own_title_and_byline_is_a_chapter_of_its_own() -> None:
    """The Prince (Gutenberg) appends two more works by Machiavelli after chapter XXVI, each
    under a title in capitals and its author's byline ("BY" / "NICOLO MACHIAVELLI", "WRITTEN BY
    NICOLO MACHIAVELLI"): each its own chapter, not 12,000 more words of chapter XXVI; the book's
    own title and byline above chapter I, and a line in capitals inside a chapter, stay as they
    were."""
    prose = "Odo Varrick poled the flatboat through the Glass Marsh at dawn, past the weirs. " * 3
    chapters = "".join(f"CHAPTER {n}\n\n{prose}\n\n" for n in ("I", "II", "III"))
    text = (
        f"THE GLASS MARSH\n\nBY M. QUIST\n\n\n\n{chapters}"
        f"A NOTICE ON THE WEIR\n\nBY THE RIVER\n\n{prose}\n\n\n\n"
        f"DESCRIPTION OF THE WEIRS\nOF THE GLASS MARSH\n\nBY\n\nM. QUIST\n\n{prose}\n\n\n\n"
        f"THE LIFE OF ODO VARRICK\n\nWRITTEN BY M. QUIST\n\n{prose}\n"
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert [c.title for c in book.chapters] == [
        "CHAPTER I",
        "CHAPTER II",
        "CHAPTER III",
        "DESCRIPTION OF THE WEIRS OF THE GLASS MARSH",
        "THE LIFE OF ODO VARRICK",
    ]
    third = book.chapters[2].paragraphs
    assert "A NOTICE ON THE WEIR" in third and "BY THE RIVER" in third  # no byline: a line
    assert not any("QUIST" in p for c in book.chapters for p in c.paragraphs)


_DEDICATION = (
    'Dear and great Friend! In Katrine\'s fancied "Land" You long have held your own '
    "much-honored place, Have met great Esmond; held kind Newcome's hand; And talked with merry "
    "Alan face to face; For there, where Loyalty was word of countersign, You entered, all "
    "unchallenged, for the land was thine!"
)


def test_a_title_pages_publication_lines_and_dedication_are_front_matter(tmp_path: Path) -> None:
    """Katrine (HTML, Gutenberg 14263): the title page's "MCMIX" and "Published March, 1909."
    are headings, and the dedication under them was imported as the book's first chapter,
    "MCMIX: Published March, 1909." (the plain text of the same book, with its copyright line,
    left it out). A publication line or a year in Roman numerals heads front matter."""
    prose = html.escape(_PROSE.format(who="Katrine"))
    page = (
        "<html><head><title>Katrine</title></head><body>"
        "<h1>KATRINE</h1><h2>A Novel</h2><h3>BY</h3><h2>ELINOR MACARTNEY LANE</h2>"
        "<h3>MCMIX</h3><h4>Published March, 1909.</h4>"
        "<p><i>To</i> <b>Grant B. Schley</b></p>"
        f"<p>{_DEDICATION}</p>"
        f"<h2>PREFACE</h2><p>{prose}</p>"
        f"<h2>I</h2><h3>UNDER THE SOUTHERN PINES</h3><p>{prose}</p>"
        f"<h2>II</h2><h3>THE MEETING IN THE WOODS</h3><p>{prose}</p>"
        "</body></html>"
    )
    (book_file := tmp_path / "katrine.htm").write_text(page, encoding="utf-8")
    book = read_book(book_file)
    assert [c.title for c in book.chapters] == [
        "PREFACE",
        "I: UNDER THE SOUTHERN PINES",
        "II: THE MEETING IN THE WOODS",
    ]
    assert "MCMIX: Published March, 1909. (front matter; 49 words)" in book.dropped
    for year in ("MCMIX", "MDCCCXC"):  # a year alone over a dedication
        blocks = [
            Block("heading", year),
            Block("text", _DEDICATION),
            Block("heading", "I"),
            Block("text", _PROSE.format(who="Katrine")),
        ]
        assert [c.title for c in chapters_from_blocks(blocks).chapters] == ["I"]
    # a word in capitals that only looks like a year ("MILL", "MID") still heads a chapter
    for word in ("MILL", "MID"):
        blocks = [Block("heading", word), Block("text", _PROSE.format(who="Katrine"))]
        assert [c.title for c in chapters_from_blocks(blocks).chapters] == [word]


_ADOC = """= The Salt Road: A Tale
Ada Quill
:doctype: book
:toc:

// a comment the reader never sees
////
A comment block
== Not a chapter
////

== The Ferry at Dusk

[[ferry]]
Vaskari crossed at _dusk_, with *Orlundel* beside her.footnote:[Told in the first edition.]
She read the sign link:https://example.org/sign[at the landing] twice. +
It said nothing new.

{prose}

image::map.png[The river]

.A song of the ferrymen
[verse, The Ferrymen]
____
Row, row, the salt is deep.
____

'''

The second scene began at the [[mill]]mill.

|===
| Name | Place
| Vaskari | Ember Road
|===

== The Mill

[quote]
“Nothing is lost,” said the miller.

{prose}
"""


def test_an_asciidoc_book_is_read_by_its_sections(tmp_path: Path) -> None:
    """GITenberg ships many books as `book.asciidoc` (News from Nowhere, 3261): `import`
    refused it ("give a plain-text (.txt), Markdown ..."). Its sections are chapters, its
    document title the book's; attributes, comments, anchors, block titles, images and tables
    are not text; a thematic break is a scene break; inline markup keeps its words."""
    prose = _PROSE.format(who="Vaskari")
    book_file = tmp_path / "book.asciidoc"
    book_file.write_text(_ADOC.format(prose=prose), encoding="utf-8")
    book = read_book(book_file)
    assert book.title == "The Salt Road: A Tale"
    assert [c.title for c in book.chapters] == ["The Ferry at Dusk", "The Mill"]
    ferry, mill = book.chapters
    assert ferry.scenes == [
        [
            "Vaskari crossed at dusk, with Orlundel beside her. She read the sign at the landing "
            "twice. It said nothing new.",
            prose,
            "Row, row, the salt is deep.",
        ],
        ["The second scene began at the mill."],
    ]
    assert mill.scenes == [["“Nothing is lost,” said the miller.", prose]]
    assert main(["import", str(book_file), "--out", str(tmp_path / "salt.db")]) == 0
    assert [title for _, title in _threads(tmp_path / "salt.db")] == [
        "The Ferry at Dusk",
        "The Mill",
    ]


def test_a_named_sections_stop_is_not_kept_before_its_title() -> None:
    """The Legend of Sleepy Hollow's book.asciidoc heads its last part "== Postscript." over
    "=== Found in the Handwriting of Mr. Knickerbocker.": the chapter was "Postscript.: Found
    in ...", the stop kept before the colon, as a number's is not ("I." over a title)."""
    prose = _PROSE.format(who="Ichabod")
    text = (
        "= The Legend of Sleepy Hollow\nWashington Irving\n\n"
        f"== Found Among the Papers of the Late Diedrich Knickerbocker.\n\n{prose}\n\n"
        f"== Postscript.\n=== Found in the Handwriting of Mr. Knickerbocker.\n\n{prose}\n"
    )
    blocks, title = blocks_from_asciidoc(text)
    assert [c.title for c in chapters_from_blocks(blocks, title).chapters] == [
        "Found Among the Papers of the Late Diedrich Knickerbocker",
        "Postscript: Found in the Handwriting of Mr. Knickerbocker",
    ]


def test_an_asciidoc_books_two_line_titles_are_its_title_and_chapters(tmp_path: Path) -> None:
    """The older AsciiDoc title: a line underlined with "=" (the document) or "-" (a section)."""
    prose = _PROSE.format(who="Orlundel")
    text = (
        f"The Salt Road\n=============\nAda Quill\n\nThe Ferry\n---------\n\n{prose}\n\n"
        f"The Mill\n--------\n\n{prose}\n"
    )
    (book_file := tmp_path / "book.adoc").write_text(text, encoding="utf-8")
    book = read_book(book_file)
    assert book.title == "The Salt Road"
    assert [(c.title, c.scenes) for c in book.chapters] == [
        ("The Ferry", [[prose]]),
        ("The Mill", [[prose]]),
    ]


# Blank verse as Paradise Lost sets it: lines under 48 characters, most without a stop.
_VERSE = (
    "Of Man's first disobedience, and the fruit\n"
    "Of that forbidden tree whose mortal taste\n"
    "Brought death into the World, and all our woe,\n"
    "With loss of Eden, till one greater Man\n"
    "Restore us, and regain the blissful seat,\n"
    "Sing, Heavenly Muse, that, on the secret top\n"
    "Of Oreb, or of Sinai, didst inspire\n"
    "That shepherd who first taught the chosen seed"
)


def test_a_book_in_verse_is_imported_its_stanzas_as_paragraphs(tmp_path: Path) -> None:
    """Paradise Lost was refused in every edition ("no chapter with prose"): a block of short
    lines without stops was a contents page, never story. A book with no prose at all is read
    as verse; its contents page stays out."""
    source = tmp_path / "26.txt"
    contents = "CONTENTS\n\nBook I\nBook II\nBook III"
    books = "\n\n".join(f"BOOK {n}\n\n{_VERSE}\n\n{_VERSE}" for n in ("I", "II", "III"))
    source.write_text(f"{contents}\n\n\n{books}\n", encoding="utf-8")
    book = read_book(source)
    assert [chapter.title for chapter in book.chapters] == ["BOOK I", "BOOK II", "BOOK III"]
    assert book.chapters[0].paragraphs == [_VERSE] * 2  # each line a line of its paragraph
    assert any(name.startswith("CONTENTS") for name in book.dropped)
    # a whole book set with hardly a blank line (26.txt) is parted at sentence ends
    long_verse = "\n".join([_VERSE.replace("seed", "seed.")] * 8)
    source.write_text(f"BOOK I\n\n{long_verse}\n\nBOOK II\n\n{long_verse}\n", encoding="utf-8")
    parts = read_book(source).chapters[0].paragraphs
    assert len(parts) == 3 and "\n".join(parts) == long_verse


# Milton's lines as the 1667 text (20-0.txt) sets them: most end in a stop, so the verse
# paragraph reads as prose (`is_prose`), and some are as long as a stanza's never are (48+)
_MILTON = (
    "They heard, and were abasht, and up they sprung\n"
    "Upon the wing, as when men wont to watch\n"
    "On duty, sleeping found by whom they dread,\n"
    "Rouse and bestir themselves ere well awake.\n"
    "Nor did they not perceave the evil plight\n"
    "In which they were, or the fierce pains not feel;\n"
    "Yet to their Generals Voyce they soon obeyd\n"
    "Innumerable. As when the potent Rod\n"
    "of Amrams Son in Egypts evill day\n"
    "Wav'd round the Coast, up call'd a pitchy cloud."
)


def test_verse_whose_lines_end_in_stops_keeps_its_lines_in_text_and_html(tmp_path: Path) -> None:
    """Paradise Lost's 1667 text (20-0.txt) sets its verse paragraphs with lines that mostly end
    in a stop: some read as prose, so no book was a poem; its longest paragraph (291 lines) was
    one line of 12,404 characters ("up they sprung Upon the wing") and was never parted at
    `VERSE_LINES`, and the 3-line paragraphs lost their lines too. Lines that end before the
    next line's first word would have filled them, in a paragraph no line of which is as long
    as prose wraps, are verse: the chapter is a poem, each paragraph keeps its lines, a long
    one is parted at a sentence end, and a paragraph of prose in it (an argument) stays one
    line. The HTML edition (20-h.htm) parts its lines with <br/>: they are lines alike."""
    argument = (
        "This first Book proposes, first in brief, the whole Subject, Mans disobedience, and\n"
        "the loss thereupon of Paradise wherein he was plac't: Then touches the prime cause of\n"
        "his fall, the Serpent, or rather Satan in the Serpent."
    )
    short = "So spake th' Apostate Angel, though in pain,\nVaunting aloud, but rackt with despare:"
    long_verse = "\n".join([_MILTON] * 4)
    source = tmp_path / "20-0.txt"
    books = "\n\n".join(
        f"BOOK {n}\n\n{argument}\n\n{long_verse}\n\n{short}\n\n{_MILTON}" for n in ["I", "II"]
    )
    # a contents page's lines end as raggedly, and are no poem (A Tale of Two Cities' 98-8.txt)
    contents = (
        "Book the Second--the Golden Thread\n\nChapter I Five Years Later\nChapter II A Sight\n"
        "Chapter III A Disappointment\nChapter IV Congratulatory\nChapter V The Jackal\n\n"
    )
    source.write_text(f"{contents}{books}\n", encoding="utf-8")
    book = read_book(source)
    assert [chapter.title for chapter in book.chapters] == ["BOOK I", "BOOK II"]
    paragraphs = book.chapters[0].paragraphs
    lines = long_verse.split("\n")  # parted after "ere well awake." its 24th line
    assert paragraphs == [
        " ".join(argument.split("\n")),
        "\n".join(lines[:24]),
        "\n".join(lines[24:]),
        short,
        _MILTON,
    ]
    page = tmp_path / "20-h.htm"
    stanzas = "".join(
        f"<p>{text.replace(chr(10), '<br/>' + chr(10))}<br/></p>"
        for text in (long_verse, short, _MILTON)
    )
    page.write_text(
        "<html><body>"
        + "".join(f"<h2>BOOK {n}</h2><p>{argument}</p>{stanzas}" for n in ["I", "II"])
        + "</body></html>",
        encoding="utf-8",
    )
    assert read_book(page).chapters[1].paragraphs == paragraphs


def test_lines_closing_a_book_are_left_out_as_the_html_leaves_them(tmp_path: Path) -> None:
    """Paradise Lost's plain text ends every book with "THE END OF THE FIRST BOOK." (and the
    poem's running title "PARADISE LOST" over the next book's heading): they were paragraphs of
    each book's story (its HTML sets them as headings, never story). They are left out, and the
    report names the closing lines; the same words inside the story, before more of it, stay."""
    start = "*** START OF THE PROJECT GUTENBERG EBOOK PARADISE LOST ***"
    end = "*** END OF THE PROJECT GUTENBERG EBOOK PARADISE LOST ***"
    books = "\n\n".join(
        f"BOOK {n}\n\n{_MILTON}\n\nParadise Lost\n\n{_MILTON}\n\n"
        f"      THE END OF THE {nth} BOOK.\n\n{title}\n\n"
        for n, nth, title in [("I", "FIRST", "  PARADISE LOST\n"), ("II", "SECOND", "")]
    )
    source = tmp_path / "20-0.txt"
    source.write_text(f"Title: Paradise Lost\n\n{start}\n\n{books}\n\n{end}\n", encoding="utf-8")
    book = read_book(source)
    assert [chapter.title for chapter in book.chapters] == ["BOOK I", "BOOK II"]
    for chapter in book.chapters:
        assert chapter.paragraphs == [_MILTON, "Paradise Lost", _MILTON]
    assert book.dropped == [
        "“THE END OF THE FIRST BOOK.”, “THE END OF THE SECOND BOOK.” (lines closing 2 chapters)"
    ]


def test_a_letters_date_under_a_books_heading_is_its_first_line_not_the_chapters_title(
    tmp_path: Path,
) -> None:
    """The Sorrows of Young Werther dates every letter on a line of its own ("MAY 10."); the
    first letter's date, right under "BOOK I", ran into the heading: the whole first book was
    the chapter "BOOK I: MAY 4.". It is the chapter's first line, as the other dates are."""
    letter = _PROSE.format(who="Werther")
    dates = {"I": ["MAY 4.", "MAY 10.", "MAY 12."], "II": ["OCTOBER 20.", "NOVEMBER 26."]}
    books = "\n\n".join(
        f"BOOK {n}\n\n" + "\n\n".join(f"{date}\n\n{letter}" for date in on)
        for n, on in dates.items()
    )
    (source := tmp_path / "2527.txt").write_text(books + "\n", encoding="utf-8")
    book = read_book(source)
    assert [chapter.title for chapter in book.chapters] == ["BOOK I", "BOOK II"]
    assert book.chapters[0].paragraphs == [part for date in dates["I"] for part in (date, letter)]


def test_paragraphs_told_apart_by_their_indent_alone_are_paragraphs(tmp_path: Path) -> None:
    """The Art of War's 132.txt sets its preface and introduction with no blank line between
    paragraphs, each opening on an indented line: 13,000 words had been a few paragraphs of
    hundreds of lines. A line indented as its paragraph's first was, after flush-left lines of
    wrapped prose that end a sentence, opens a paragraph; verse indented throughout, and a
    sentence that runs on, stay one paragraph."""
    first = (
        "     When Lionel Giles began his translation of Sun Tzu's ART OF\n"
        "WAR, the work was virtually unknown in Europe.  Its introduction\n"
        "to Europe began in 1782 when a French Jesuit Father living in\n"
        "China, Joseph Amiot, acquired a copy of it.\n"
    )
    second = (
        "     The first translation into English was published in 1905 in\n"
        "Tokyo by Capt. E. F. Calthrop, R.F.A.  However, this translation\n"
        'is, in the words of Dr. Giles, "excessively bad."\n'
    )
    runs_on = (
        "     Clearly, Dr. Giles' work established much of the groundwork for\n"
        "the work of later translators who published their own editions of\n"
        "     the ART OF WAR, most of them in the century after his own.\n"
    )
    verse = "   Sing, Heavenly Muse, that on the top\n   Of Oreb didst inspire.\n   That shepherd\n"
    (source := tmp_path / "132.txt").write_text(
        f"CHAPTER I\n\n{first}{second}{runs_on}\n{verse}\nCHAPTER II\n\n{first}\n",
        encoding="utf-8",
    )
    paragraphs = read_book(source).chapters[0].paragraphs
    assert [paragraph[:22] for paragraph in paragraphs] == [
        "When Lionel Giles bega",
        "The first translation ",
        "Clearly, Dr. Giles' wo",
        "Sing, Heavenly Muse, t",
    ]


def test_a_novel_keeps_a_poem_inside_a_chapter_and_drops_a_contents_page_of_short_lines() -> None:
    """Verse is read as verse only where a book has no prose: a novel's own rules stand."""
    prose = _PROSE.format(who="Tom")
    contents = Block("text", "Book I\nBook II\nBook III", ("Book I", "Book II", "Book III"))
    poem = Block("text", " ".join(_VERSE.split("\n")), tuple(_VERSE.split("\n")))
    book = chapters_from_blocks(
        [Block("heading", "CONTENTS"), contents, Block("heading", "CHAPTER I"),
         Block("text", prose), poem, Block("heading", "CHAPTER II"), Block("text", prose)]
    )  # fmt: skip
    assert [chapter.title for chapter in book.chapters] == ["CHAPTER I", "CHAPTER II"]
    assert book.chapters[0].paragraphs == [prose, _VERSE]  # the poem with its lines


def test_pictures_soft_hyphens_and_the_1990s_header_and_trailer(tmp_path: Path) -> None:
    """Three Men in a Boat's "[Picture: ...]" markers, Huckleberry Finn's soft hyphens, the
    1990s header that names the book in its first line and no "Title:", its end line "The end
    of Project Gutenberg Etext of ..." (Middlemarch) and the trailer an old HTML edition ends
    with (Dorian Gray's dgray10h.htm): none of it is story, and the title is the book's."""
    prose = _PROSE.format(who="Harris")
    source = tmp_path / "3boat10.txt"
    source.write_text(
        "*The Project Gutenberg Etext of Three Men in a Boat, by Jerome K. Jerome*\n\n"
        "Information about Project Gutenberg (one page)\n\n"
        "*END*THE SMALL PRINT! FOR PUBLIC DOMAIN ETEXTS*Ver.04.29.93*END*\n\n\n"
        f"CHAPTER I\n\n[Picture: Man reading book] {prose}\n\n"
        f"Aunt Polly -\xad Harris's aunt, she is -\xad came too. {prose}\n\n"
        f"CHAPTER II\n\n{prose}\n\n"
        "[Picture: Graphic of three men\nin a rowing boat]\n\n"
        'The end of Project Gutenberg Etext of "Three Men in a Boat"\n',
        encoding="utf-8",
    )
    book = read_book(source)
    assert book.title == "Three Men in a Boat"
    assert [chapter.paragraphs for chapter in book.chapters] == [
        [prose, f"Aunt Polly - Harris's aunt, she is - came too. {prose}"],
        [prose],
    ]
    page = tmp_path / "dgray10h.htm"
    page.write_text(
        "<html><body><h1>THE PICTURE OF DORIAN GRAY</h1>"
        f"<h2>CHAPTER 1</h2><p>{prose}</p><h2>CHAPTER 2</h2><p>{prose}</p><p>{prose}</p>"
        "<pre>*****This file should be named dgray10h.htm or dgray10h.zip*****\n\n"
        "Corrected EDITIONS of our etexts get a new NUMBER, dgray11h.htm.</pre>"
        "</body></html>",
        encoding="utf-8",
    )
    assert [c.paragraphs for c in read_book(page).chapters] == [[prose], [prose, prose]]


def test_an_asciidoc_inline_image_alone_or_inside_a_paragraph_is_not_text(tmp_path: Path) -> None:
    """Huckleberry Finn's book.asciidoc had 179 paragraphs like
    'image:images/c01-02.jpg[c01-02.jpg (182K)]', and one at a chapter's last sentence."""
    prose = _PROSE.format(who="Huck")
    source = tmp_path / "book.asciidoc"
    source.write_text(
        f"= Huck\n\n== CHAPTER I.\n\nimage:images/c01-02.jpg[c01-02.jpg (182K)]\n\n{prose}\n\n"
        f"== CHAPTER II.\n\n{prose} image:images/c43.jpg[the end]\n",
        encoding="utf-8",
    )
    book = read_book(source)
    assert [chapter.paragraphs for chapter in book.chapters] == [[prose], [prose]]


def test_the_books_title_alone_under_a_contents_heading_heads_its_first_chapter(
    tmp_path: Path,
) -> None:
    """The Turn of the Screw's HTML: a contents page of links (gone with them), then the book's
    title over the frame story: that prologue (2,780 words) was left out as the contents."""
    prose = _PROSE.format(who="Douglas")
    page = tmp_path / "209-h.htm"
    page.write_text(
        "<html><head><title>The Turn of the Screw</title></head><body>"
        "<h1>THE TURN OF THE SCREW</h1><h2>by Henry James</h2>"
        '<p class="toc"><b>CONTENTS</b></p><p><a href="#p">THE TURN OF THE SCREW</a></p>'
        '<p><a href="#c1">I</a></p><p><a href="#c2">II</a></p>'
        f'<h2 id="p">THE TURN OF THE SCREW</h2>{f"<p>{prose}</p>" * 20}'
        f'<h2 id="c1">I</h2><p>{prose}</p><h2 id="c2">II</h2><p>{prose}</p></body></html>',
        encoding="utf-8",
    )
    book = read_book(page)
    assert [c.title for c in book.chapters] == ["THE TURN OF THE SCREW", "I", "II"]
    assert book.chapters[0].paragraphs == [prose] * 20


def test_a_title_that_begins_with_by_is_a_title_when_it_is_all_there_is() -> None:
    """The Four Million's 'BY COURIER' was 'Untitled': taken for a byline."""
    prose = _PROSE.format(who="Tom")
    book = chapters_from_blocks(
        [Block("heading", "TOBIN'S PALM"), Block("text", prose),
         Block("heading", "BY COURIER"), Block("text", prose)]
    )  # fmt: skip
    assert [chapter.title for chapter in book.chapters] == ["TOBIN'S PALM", "BY COURIER"]


def test_a_contents_list_of_books_set_as_headings_is_no_part_of_the_prelude_after_it() -> None:
    """Middlemarch's HTML lists "BOOK I" ... "BOOK VIII" as headings under CONTENTS, then its
    PRELUDE: the first chapter was titled "BOOK VIII: PRELUDE". A list whose last number is
    the next after the one before it is all list; a chapter's own number restarts it."""
    prose = _PROSE.format(who="Dorothea")
    listed = [Block("heading", f"BOOK {n}") for n in ("I", "II", "III", "IV")]
    book = chapters_from_blocks(
        [Block("heading", "CONTENTS"), *listed, Block("heading", "PRELUDE"),
         Block("text", prose), Block("heading", "CHAPTER I."), Block("text", prose)]
    )  # fmt: skip
    assert [chapter.title for chapter in book.chapters] == ["PRELUDE", "CHAPTER I."]
    again = chapters_from_blocks(
        [Block("heading", "CONTENTS"), *listed[:3], Block("heading", "BOOK I"),
         Block("heading", "MISS BROOKE"), Block("text", prose)]
    )  # fmt: skip
    assert [chapter.title for chapter in again.chapters] == ["BOOK I: MISS BROOKE"]


def test_a_printed_editions_page_numbers_on_lines_of_their_own_are_not_story(
    tmp_path: Path,
) -> None:
    """Dr. Jekyll and Mr. Hyde (jekyll.txt) sets each page's number on a line of its own,
    "29)": 107 paragraphs were a number, and a sentence a page cut ("to whom at first she",
    "29)", "paid less attention") was two paragraphs."""
    prose = _PROSE.format(who="Utterson")
    source = tmp_path / "jekyll.txt"
    source.write_text(
        f"CHAPTER I\n\n1)\n\n{prose}\n\nAnd to whom at\nfirst she\n\n2)\n\npaid less attention. "
        f"{prose}\n\n3)\n\n{prose}\n\nCHAPTER II\n\n{prose} It ends here.\n\n4)\n\n"
        "Then (5) came.\n",
        encoding="utf-8",
    )
    book = read_book(source)
    assert [chapter.paragraphs for chapter in book.chapters] == [
        [prose, f"And to whom at first she paid less attention. {prose}", prose],
        [f"{prose} It ends here.", "Then (5) came."],
    ]


def test_a_scanned_editions_running_heads_are_not_story(tmp_path: Path) -> None:
    """The Scarlet Letter's scrlt11.txt is a scanned printed book: each page's running head
    stands alone, "62  THE SCARLET LETTER" on the left pages and "THE MARKET-PLACE    63" on
    the right ones (284 of them, a few misread: "7I", "PARISSIONER"), and they were paragraphs
    of the story, each page's last sentence cut in two by them ("gifts were ... a man of
    business;" / "prompt, acute, clear-minded"). They go, and the sentence is one again; a
    title with a number that is no page's ("33  THE CUSTOM-HOUSE", once) stays."""
    prose = _PROSE.format(who="Hester")
    pages = []
    for page in range(62, 72):
        head = f"{page}  THE SCARLET LETTER" if page % 2 == 0 else f"THE MARKET-PLACE    {page}"
        pages.append(f"{prose}\nand so the page ends in\n\n\n\n{head}\n\n\n\nthe middle of a line.")
    pages[3] = pages[3].replace("65", "6I")
    pages[5] = pages[5].replace("THE MARKET-PLACE    67", "THE MARKET-PLAGE 67")
    source = tmp_path / "scrlt11.txt"
    source.write_text(
        "I\n\nTHE PRISON DOOR\n\n"
        + "\n\n".join(pages[:5])
        + "\n\nII\n\nTHE MARKET-PLACE\n\n"
        + "\n\n".join(pages[5:])
        + f"\n\n33  THE CUSTOM-HOUSE\n\n{prose}\n",
        encoding="utf-8",
    )
    book = read_book(source)
    cut = f"{prose} and so the page ends in the middle of a line."
    assert [chapter.title for chapter in book.chapters] == [
        "I: THE PRISON DOOR",
        "II: THE MARKET-PLACE",
    ]
    assert [chapter.paragraphs for chapter in book.chapters] == [
        [cut] * 5,
        [cut] * 5 + ["33  THE CUSTOM-HOUSE", prose],
    ]


def test_the_books_title_set_again_over_a_later_chapters_heading_is_no_paragraph() -> None:
    """scrlt11.txt sets "THE SCARLET LETTER" again over "I" / "THE PRISON DOOR", blank lines
    between, after its introductory "The Custom-House": it was that chapter's last paragraph.
    The title in words of its own stays a paragraph ("The Scarlet Letter was ...")."""
    prose = _PROSE.format(who="Hester")
    blocks = [
        Block("heading", "THE CUSTOM-HOUSE"), Block("text", prose),
        Block("text", "THE SCARLET LETTER"), Block("heading", "I"),
        Block("heading", "THE PRISON DOOR"), Block("text", prose),
        Block("text", "The Scarlet Letter"), Block("heading", "II"), Block("text", prose),
    ]  # fmt: skip
    book = chapters_from_blocks(blocks, "The Scarlet Letter")
    assert [(c.title, c.paragraphs) for c in book.chapters] == [
        ("THE CUSTOM-HOUSE", [prose]),
        ("I: THE PRISON DOOR", [prose, "The Scarlet Letter"]),
        ("II", [prose]),
    ]


def test_a_dedication_set_among_a_parts_headings_is_no_part_of_its_title() -> None:
    """Siddhartha's HTML: 'FIRST PART: To Romain Rolland, my dear friend: THE SON OF THE
    BRAHMAN'. A letter's address stays ("Letter 1: To Mrs. Saville, England.")."""
    prose = _PROSE.format(who="Siddhartha")
    book = chapters_from_blocks(
        [Block("heading", "FIRST PART"), Block("heading", "To Romain Rolland, my dear friend"),
         Block("heading", "THE SON OF THE BRAHMAN"), Block("text", prose),
         Block("heading", "SECOND PART"),
         Block("heading", "Dedicated to Wilhelm Gundert, my cousin in Japan"),
         Block("heading", "KAMALA"), Block("text", prose),
         Block("heading", "Letter 1"), Block("heading", "To Mrs. Saville, England."),
         Block("text", prose)]
    )  # fmt: skip
    assert [chapter.title for chapter in book.chapters] == [
        "FIRST PART: THE SON OF THE BRAHMAN",
        "SECOND PART: KAMALA",
        "Letter 1: To Mrs. Saville, England",
    ]


def test_chapter_numbers_that_start_again_are_named_with_their_division() -> None:
    """A Study in Scarlet, A Tale of Two Cities, The Brothers Karamazov: each part or book
    numbers its chapters from I again under titles of their own ("CHAPTER I. MR. SHERLOCK
    HOLMES", then "CHAPTER I. ON THE GREAT ALKALI PLAIN"): titles all different, so they were
    left bare, and a reader met a second "CHAPTER I" after "CHAPTER VII" with nothing to say
    it opens Part II. A number that comes again is named with its division, as a title that
    comes again is; a book numbered once through stays as it is."""
    prose = _PROSE.format(who="Holmes")
    blocks = [Block("heading", "PART I"), Block("heading", "CHAPTER I. MR. SHERLOCK HOLMES")]
    blocks += [Block("text", prose), Block("heading", "CHAPTER II. THE SCIENCE OF DEDUCTION")]
    blocks += [Block("text", prose), Block("heading", "PART II. The Country of the Saints.")]
    blocks += [Block("heading", "CHAPTER I. ON THE GREAT ALKALI PLAIN"), Block("text", prose)]
    titles = [chapter.title for chapter in chapters_from_blocks(blocks).chapters]
    assert titles == [
        "PART I: CHAPTER I. MR. SHERLOCK HOLMES",
        "PART I: CHAPTER II. THE SCIENCE OF DEDUCTION",
        "PART II. The Country of the Saints: CHAPTER I. ON THE GREAT ALKALI PLAIN",
    ]
    blocks = [Block("heading", "PART I"), Block("heading", "CHAPTER I. THE HARBOUR")]
    blocks += [Block("text", prose), Block("heading", "PART II")]
    blocks += [Block("heading", "CHAPTER II. CIVIL WAR"), Block("text", prose)]
    titles = [chapter.title for chapter in chapters_from_blocks(blocks).chapters]
    assert titles == ["CHAPTER I. THE HARBOUR", "CHAPTER II. CIVIL WAR"]


def test_an_epilogue_in_numbered_sections_is_a_division_of_its_own() -> None:
    """Crime and Punishment ends "EPILOGUE" over "I", then "II": they were "PART VI: EPILOGUE:
    I" and "PART VI: II", the epilogue read as the last part's and its second section a number
    with nothing to say what it numbers. An epilogue over a number opens a division, and a
    number alone is named with its division."""
    prose = _PROSE.format(who="Raskolnikov")
    blocks = []
    for part in ("PART I", "PART II"):
        blocks += [Block("heading", part), Block("heading", "CHAPTER I"), Block("text", prose)]
        blocks += [Block("heading", "CHAPTER II"), Block("text", prose)]
    blocks += [Block("heading", "EPILOGUE"), Block("heading", "I"), Block("text", prose)]
    blocks += [Block("heading", "II"), Block("text", prose)]
    titles = [chapter.title for chapter in chapters_from_blocks(blocks).chapters]
    assert titles == [
        "PART I: CHAPTER I",
        "PART I: CHAPTER II",
        "PART II: CHAPTER I",
        "PART II: CHAPTER II",
        "EPILOGUE: I",
        "EPILOGUE: II",
    ]
    # an epilogue over prose is a chapter, and opens no division
    blocks = [Block("heading", "I"), Block("text", prose), Block("heading", "II")]
    blocks += [Block("text", prose), Block("heading", "EPILOGUE"), Block("text", prose)]
    titles = [chapter.title for chapter in chapters_from_blocks(blocks).chapters]
    assert titles == ["I", "II", "EPILOGUE"]


def test_chapters_alike_in_every_book_are_named_with_their_book() -> None:
    """War and Peace: seventeen chapters titled "CHAPTER I", the books over them dropped. A
    title that comes again is named with its division, and so is every other chapter of that
    division (Notes from the Underground's "XI", which Part II has not, was "XI" alone between
    "PART I: Underground: X" and "PART II: ...: I"); a division whose titles are all its own
    stays as it is."""
    prose = _PROSE.format(who="Pierre")
    blocks = []
    for book in ("BOOK ONE: 1805", "BOOK TWO: 1805"):
        blocks += [Block("heading", book), Block("heading", "CHAPTER I"), Block("text", prose)]
        blocks += [Block("heading", "CHAPTER II"), Block("text", prose)]
    blocks += [Block("heading", "CHAPTER III"), Block("text", prose)]
    blocks += [Block("heading", "FIRST EPILOGUE: 1813 - 20"), Block("heading", "CHAPTER I")]
    blocks += [Block("text", prose)]
    titles = [chapter.title for chapter in chapters_from_blocks(blocks).chapters]
    assert titles == [
        "BOOK ONE: 1805: CHAPTER I",
        "BOOK ONE: 1805: CHAPTER II",
        "BOOK TWO: 1805: CHAPTER I",
        "BOOK TWO: 1805: CHAPTER II",
        "BOOK TWO: 1805: CHAPTER III",
        "FIRST EPILOGUE: 1813 - 20: CHAPTER I",
    ]
    # a volume that opens with a preface: its chapters are the volume's, not the preface's
    blocks = [Block("heading", "VOLUME I"), Block("heading", "CHAPTER I."), Block("text", prose)]
    blocks += [Block("heading", "VOLUME II"), Block("heading", "THE AUTHOR'S PREFACE")]
    blocks += [Block("text", prose), Block("heading", "CHAPTER I."), Block("text", prose)]
    titles = [chapter.title for chapter in chapters_from_blocks(blocks).chapters]
    assert titles == [
        "VOLUME I: CHAPTER I.", "VOLUME II: THE AUTHOR'S PREFACE", "VOLUME II: CHAPTER I."
    ]  # fmt: skip
    blocks = [Block("heading", "BOOK ONE"), Block("heading", "CHAPTER I"), Block("text", prose)]
    blocks += [Block("heading", "BOOK TWO"), Block("heading", "CHAPTER II"), Block("text", prose)]
    titles = [chapter.title for chapter in chapters_from_blocks(blocks).chapters]
    assert titles == ["CHAPTER I", "CHAPTER II"]  # no title comes again: as they are


def test_a_book_whose_headings_leave_no_chapter_is_one_chapter(tmp_path: Path) -> None:
    """The Tale of Peter Rabbit was refused ("no chapter with prose"): its title page's
    "First published 1902" read as front matter and "THE END" as the first heading."""
    prose = _PROSE.format(who="Peter")
    source = tmp_path / "14838.txt"
    story = "\n\n".join([prose] * 16)
    source.write_text(
        f"THE TALE OF PETER RABBIT\n\nFirst published 1902\n\n\n{story}\n\n\nTHE END\n",
        encoding="utf-8",
    )
    book = read_book(source)
    assert len(book.chapters) == 1 and book.chapters[0].paragraphs.count(prose) == 16


def test_the_1990s_headers_other_forms_and_a_mail_escape() -> None:
    """Les Misérables' lesms10.txt says "Etext Les Miserables, by Victor Hugo" (no "of");
    Werther's sywer10.txt wraps its first line before the author; its ">From" is a mail
    system's escape."""
    assert gutenberg_title("**The Project Gutenberg Etext Les Miserables, by Victor Hugo**\n")
    assert (
        gutenberg_title("**The Project Gutenberg Etext Les Miserables, by Victor Hugo**\n")
        == "Les Miserables"
    )
    assert (
        gutenberg_title(
            "The Project Gutenberg Etext of The Sorrows of Young Werther by\nJ.W. von Goethe\n"
        )
        == "The Sorrows of Young Werther"
    )
    assert gutenberg_title("Project Gutenberg Etexts are usually created from editions\n") is None
    prose = _PROSE.format(who="Werther")
    blocks = blocks_from_text(f"CHAPTER I\n\n>From beneath the chestnut trees. {prose}\n")
    assert blocks[-1].text == f"From beneath the chestnut trees. {prose}"


def test_the_authors_preface_and_a_volumes_dedication_are_headings_in_a_numbered_book() -> None:
    """Don Quixote: "THE AUTHOR'S PREFACE" and "DEDICATION OF VOLUME I" were lines of the
    translator's introduction before them (18,000 words in one chapter)."""
    prose = _PROSE.format(who="Quixote")
    book = chapters_from_blocks(
        [Block("heading", "I: ABOUT THIS TRANSLATION"), Block("text", prose),
         Block("heading", "II: ABOUT CERVANTES"), Block("text", prose),
         Block("heading", "DEDICATION OF VOLUME I"), Block("text", "To the Duke of Bejar."),
         Block("heading", "THE AUTHOR'S PREFACE"), Block("text", prose),
         Block("heading", "CHAPTER I"), Block("text", prose),
         Block("heading", "CHAPTER II"), Block("text", prose)]
    )  # fmt: skip
    assert [chapter.title for chapter in book.chapters] == [
        "I: ABOUT THIS TRANSLATION", "II: ABOUT CERVANTES", "THE AUTHOR'S PREFACE",
        "CHAPTER I", "CHAPTER II",
    ]  # fmt: skip
    assert "DEDICATION OF VOLUME I (front matter)" in book.dropped


def test_a_chapters_number_and_title_set_as_a_paragraph_in_html_head_it(tmp_path: Path) -> None:
    """The Mill on the Floss's HTML has one heading element ("Conclusion"): its books and
    chapters are paragraphs, the number parted from the title by a <br> ("Chapter I<br>Outside
    Dorlcote Mill"), and the whole novel had been left out under its contents."""
    prose = _PROSE.format(who="Maggie")
    source = tmp_path / "mill.htm"
    source.write_text(
        '<html><body><p class="vtitle"><a name="toc"></a><span class="smallcaps">Table of '
        'Contents</span></p><blockquote>Book I: <span class="smallcaps"><a href="#b1">Boy and '
        'Girl</a></span></blockquote><ol><li class="smallcaps"><a href="#1">Outside Dorlcote '
        'Mill</a></li></ol><p class="vtitle"><a name="b1"></a><span class="smallcaps"><u>Book '
        'I</u><br>\n<em>Boy and Girl</em></span></p><p class="title"><a name="1"></a><span '
        'class="smallcaps"><u>Chapter I</u><br>\nOutside Dorlcote Mill</span></p>'
        f"<p>{prose}</p><p>A line, then a break:<br>\nand the rest of it.</p>"
        '<p class="title"><span class="smallcaps"><u>Chapter II</u><br>\nMr. Tulliver, of '
        f"Dorlcote Mill, Declares His Resolution about Tom</span></p><p>{prose}</p>"
        "<p>PROLOGUE.<br/>\n   <i>For us, and for our tragedy,<br/>\n   Here stooping to your "
        "clemency,<br/>\n   We beg your hearing patiently.</i><br/></p>"
        f"<h2>Conclusion</h2><p>{prose}</p></body></html>",
        encoding="utf-8",
    )
    book = read_book(source)
    assert [chapter.title for chapter in book.chapters] == [
        "Chapter I: Outside Dorlcote Mill",
        "Chapter II: Mr. Tulliver, of Dorlcote Mill, Declares His Resolution about Tom",
        "Conclusion",
    ]
    assert book.chapters[0].paragraphs == [prose, "A line, then a break: and the rest of it."]
    # a named section over lines of verse (Hamlet's play within the play) is a paragraph, its
    # lines kept as a stanza's are in the plain text
    assert book.chapters[1].paragraphs[-1] == (
        "PROLOGUE.\nFor us, and for our tragedy,\nHere stooping to your clemency,\n"
        "We beg your hearing patiently."
    )


def test_a_division_numbered_by_an_ordinal_heads_its_chapter_after_a_notes_section() -> None:
    """Hedda Gabler (plain text and HTML): the translator's introduction ends in its
    "FOOTNOTES.", then come the cast and "ACT FIRST.", "ACT SECOND.": acts numbered by ordinal
    words were no headings, and the whole play (26,000 words) was kept aside as back matter."""
    prose = _PROSE.format(who="Tesman")
    text = (
        f"INTRODUCTION.\n\n{prose}\n\nW. A.\n\n\nFOOTNOTES.\n\n   (1)Letters 214, 216, 217.\n\n"
        "\n\nHEDDA GABLER.\n\nPLAY IN FOUR ACTS.\n\n\n\nCHARACTERS.\n\n\n  GEORGE TESMAN.*\n"
        "  HEDDA TESMAN, his wife.\n  MRS. ELVSTED.\n\n\n\nACT FIRST.\n\n\n"
        f"  A spacious, handsome, and tastefully furnished drawing room.\n\n\n{prose}\n\n"
        f"\nMISS TESMAN.\n\n[Stops close to the door, listens.] {prose}\n\n\n\n"
        f"ACT SECOND.\n\n\n{prose}\n\n\nBOOK SECOND.--THE FALL\n\n\n{prose}\n"
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert [chapter.title for chapter in book.chapters] == [
        "INTRODUCTION", "ACT FIRST", "ACT SECOND", "BOOK SECOND.--THE FALL",
    ]  # fmt: skip
    assert "MISS TESMAN." in book.chapters[1].paragraphs
    assert [section.title for section in book.reference] == ["FOOTNOTES", "CHARACTERS"]


def test_a_collections_story_titles_over_sections_numbered_from_one_name_its_chapters() -> None:
    """The Lady with the Dog and Other Stories (text, HTML and AsciiDoc alike): each story's
    title over its sections "I", "II", ... (or over none: "A DOCTOR'S VISIT"). As a book of
    numbered chapters its titles had been lines of the sections before them: 36 chapters named
    "I" to "XVIII", "A DOCTOR'S VISIT" and "AN UPHEAVAL" inside "IV" of the first story. The
    Awakening and Selected Short Stories: the novel's 39 chapters stay chapters."""
    prose = _PROSE.format(who="Gurov")
    text = (
        "THE LADY WITH THE DOG AND OTHER STORIES\n\nBY\n\nANTON TCHEKHOV\n\n\n\n\nCONTENTS\n\n\n"
        "THE LADY WITH THE DOG\n\nA DOCTOR'S VISIT\n\nAN UPHEAVAL\n\nIONITCH\n\n\n\n\n"
        f"THE LADY WITH THE DOG\n\n\nI\n\n{prose}\n\n\nII\n\n{prose}\n\n\n\n\n"
        f"A DOCTOR'S VISIT\n\n\n{prose}\n\n\n\n\nAN UPHEAVAL\n\n\n{prose}\n\n\n\n\n"
        f"IONITCH\n\n\nI\n\n{prose}\n\n\nII\n\n{prose}\n\n\nIII\n\n{prose}\n"
    )
    book = chapters_from_blocks(blocks_from_text(text), "The Lady with the Dog and Other Stories")
    assert [chapter.title for chapter in book.chapters] == [
        "THE LADY WITH THE DOG: I", "THE LADY WITH THE DOG: II", "A DOCTOR'S VISIT",
        "AN UPHEAVAL", "IONITCH: I", "IONITCH: II", "IONITCH: III",
    ]  # fmt: skip
    assert all(chapter.paragraphs == [prose] for chapter in book.chapters)
    # a novel's chapters numbered again in each titled part are no collection unless two parts
    # are titled so: one title over "I" is the book's own, its chapters stay chapters
    novel = f"THE RIVER\n\nI\n\n{prose}\n\nII\n\n{prose}\n\nIII\n\n{prose}\n"
    assert len(chapters_from_blocks(blocks_from_text(novel)).chapters) == 3


def test_a_numbered_titles_abbreviations_are_no_stop() -> None:
    """The Wind in the Willows (289.txt, 289-0.txt): "IV. MR. BADGER" and "VI. MR. TOAD" were
    no headings (a stop inside the title), so chapters III and IV, V and VI ran together."""
    prose = _PROSE.format(who="Mole")
    text = (
        f"III. THE WILD WOOD\n\n{prose}\n\n\n\n\nIV. MR. BADGER\n\n{prose}\n\n\n\n\n"
        f"V. DULCE DOMUM\n\n{prose}\n\n\n\n\nVI. Mr. Toad\n\n{prose}\n\n\n"
        f"M. Madeleine replied.\n\n{prose}\n"
    )
    chapters = chapters_from_blocks(blocks_from_text(text)).chapters
    assert [chapter.title for chapter in chapters] == [
        "III. THE WILD WOOD", "IV. MR. BADGER", "V. DULCE DOMUM", "VI. Mr. Toad",
    ]  # fmt: skip
    assert chapters[-1].paragraphs == [prose, "M. Madeleine replied.", prose]


def test_a_title_alone_after_a_preface_heads_the_story_of_a_book_without_chapters() -> None:
    """Moll Flanders (370.txt) has no chapters: "THE AUTHOR'S PREFACE", then "MOLL FLANDERS"
    over the whole story, which had run on as the preface's (138,230 words in one chapter)."""
    prose = _PROSE.format(who="Moll")
    text = (
        "The Fortunes & Misfortunes of the Famous Moll Flanders &c.\n\n"
        f"Who was Born in Newgate.\n\nby Daniel Defoe\n\n\n\n\nTHE AUTHOR'S PREFACE\n\n{prose}\n\n"
        f"so it is still to the more advantage that we break off here.\n\n\n\nMOLL FLANDERS\n\n"
        f"My true name is so well known in the records or registers at Newgate.\n\n{prose}\n\n"
        f"{prose}\n"
    )
    chapters = chapters_from_blocks(blocks_from_text(text)).chapters
    assert [chapter.title for chapter in chapters] == ["THE AUTHOR'S PREFACE", "MOLL FLANDERS"]
    assert chapters[1].paragraphs[0].startswith("My true name")


def test_the_books_title_with_an_ampersand_over_its_title_page_is_its_title_page() -> None:
    """Moll Flanders' HTML heads its title page "The Fortunes & Misfortunes of the Famous Moll
    Flanders &c." where its Gutenberg header names "The Fortunes and Misfortunes ...": the page
    (its long subtitle) was the first chapter."""
    prose = _PROSE.format(who="Moll")
    book = chapters_from_blocks(
        [Block("heading", "The Fortunes & Misfortunes"),
         Block("heading", "of the Famous Moll Flanders &c."),
         Block("text", "Who was Born in Newgate, and during a Life of continu'd Variety for "
               "Threescore Years, besides her Childhood, was Twelve Year a Whore, five times a "
               "Wife, at last grew Rich, liv'd Honest, and dies a Penitent."),
         Block("heading", "THE AUTHOR'S PREFACE"), Block("text", prose),
         Block("heading", "MOLL FLANDERS"), Block("text", prose)],
        "The Fortunes and Misfortunes of the Famous Moll Flanders &c.",
    )  # fmt: skip
    assert [chapter.title for chapter in book.chapters] == ["THE AUTHOR'S PREFACE", "MOLL FLANDERS"]
    assert book.dropped == [
        "The Fortunes & Misfortunes: of the Famous Moll Flanders &c. (title page)"
    ]


def test_a_numbered_chapter_of_one_short_sentence_is_story() -> None:
    """Tristram Shandy's chapters may be a sentence long ("Chapter 2.XL.": "Is this a fit
    time, said my father to himself, to talk of Pensions and Grenadiers?"): with no paragraph
    of 25 words they were left out as "no prose", nine of them in each edition. A blank page
    is none, nor a book's heading over its title."""
    prose = _PROSE.format(who="Toby")
    text = (
        f"Chapter 2.XXXIX.\n\n{prose}\n\n\n\nChapter 2.XL.\n\nIs this a fit time, said my father "
        "to himself, to talk of Pensions and\nGrenadiers?\n\n\n\nChapter 2.XLI.\n\n"
        f"{prose}\n\n\n\nChapter 4.LXXVII.\n\n(blank page)\n\n\n\nBOOK V.\n\nTHE FALL\n\n"
        "The tale of the abbess and her mule.\n\n\n\n"
        f"Chapter 4.LXXIX.\n\n{prose}\n"
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert [chapter.title for chapter in book.chapters] == [
        "Chapter 2.XXXIX", "Chapter 2.XL", "Chapter 2.XLI", "Chapter 4.LXXIX",
    ]  # fmt: skip
    assert book.chapters[1].paragraphs == [
        "Is this a fit time, said my father to himself, to talk of Pensions and Grenadiers?"
    ]
    assert book.dropped == ["Chapter 4.LXXVII (no prose)", "BOOK V: THE FALL (no prose)"]
    # Candide's contents page after its introduction, an entry wrapped before its page number,
    # and the Federalist's notes numbered as titles ("3. Ibid"), are no short chapters
    contents = (
        f"INTRODUCTION\n\n{prose}\n\n\nCONTENTS\n\n\n    I. How Candide was brought up in a\n"
        "        Magnificent Castle, and how he was\n        expelled thence.    1\n\n"
        "    II. What became of Candide among the\n        Bulgarians. Then more.     5\n\n"
        "    III. How Candide made his escape from the\n        Bulgarians     9\n\n\n\n"
        f"CHAPTER I\n\n{prose}\n\n\n3. Ibid\n\nThe same, in the next page of it.\n\n\n"
        f"CHAPTER II\n\n{prose}\n\n\nCHAPTER III\n\n{prose}\n"
    )
    book = chapters_from_blocks(blocks_from_text(contents))
    assert [c.title for c in book.chapters] == [
        "INTRODUCTION", "CHAPTER I", "CHAPTER II", "CHAPTER III",
    ]  # fmt: skip


def test_an_asciidoc_paragraph_that_is_a_section_name_is_a_heading(tmp_path: Path) -> None:
    """Crime and Punishment's book.asciidoc sets "Translator's Preface" as a paragraph under the
    document's title, not as a section (its preface, 782 words, was left out as front matter),
    and The Red Badge of Courage's ends in a paragraph "THE END." (story in the AsciiDoc, not
    in the text or HTML): a paragraph that is a section's name is a heading, as in HTML."""
    prose = _PROSE.format(who="Raskolnikov")
    book_file = tmp_path / "book.asciidoc"
    book_file.write_text(
        f"= Crime and Punishment\nFyodor Dostoevsky\n\nTranslator's Preface \n\n{prose}\n\n"
        f"== Part I\n=== Chapter I\n\n{prose}\n\n=== Chapter II\n\n{prose}\n\n"
        "Over the river a golden ray of sun came through the hosts of leaden rain\nclouds.\n\n"
        "THE END.\n",
        encoding="utf-8",
    )
    book = read_book(book_file)
    assert [c.title for c in book.chapters] == [
        "Translator's Preface", "Chapter I", "Chapter II",
    ]  # fmt: skip
    assert book.chapters[-1].paragraphs == [
        prose, "Over the river a golden ray of sun came through the hosts of leaden rain clouds."
    ]  # fmt: skip


def test_a_letters_signature_over_the_next_heading_is_the_letters_last_line() -> None:
    """Lady Susan (946.txt, lsusn10.txt): letters end "Yours ever, &c.," over a signature in
    capitals ("C. VERNON", which reads as chapter C's title), set right over the next letter's
    number or the "CONCLUSION": the signature was part of the next chapter's title ("C. VERNON:
    CONCLUSION") or left out."""
    prose = _PROSE.format(who="Frederica")
    text = (
        f"XL\n\n\nLADY DE COURCY TO MRS. VERNON\n\n\n{prose}\n\nYour affectionate mother,\n\n"
        f"C. DE COURCY\n\n\n\n\n\nXLI\n\n\nMRS. VERNON TO LADY DE COURCY\n\n\nChurchhill.\n\n"
        f"{prose}\n\nYours ever, &c.,\n\nC. VERNON\n\n\n\n\n\nCONCLUSION\n\n\n{prose}\n\n"
        f"\nXLII\n\n\n{prose}\n"
    )
    chapters = chapters_from_blocks(blocks_from_text(text)).chapters
    assert [chapter.title for chapter in chapters] == [
        "XL: LADY DE COURCY TO MRS. VERNON", "XLI: MRS. VERNON TO LADY DE COURCY", "CONCLUSION",
        "XLII",
    ]  # fmt: skip
    assert chapters[0].paragraphs[-2:] == ["Your affectionate mother,", "C. DE COURCY"]
    assert chapters[1].paragraphs[-2:] == ["Yours ever, &c.,", "C. VERNON"]


def test_an_introduction_by_its_narrator_is_a_chapter() -> None:
    """The Diary of a Nobody (1026-0.txt, dnbdy10.txt) opens "INTRODUCTION BY MR. POOTER", a
    paragraph in his voice: the text editions left it out as words before the first heading,
    where the HTML editions kept it."""
    intro = (
        "_Why should I not publish my diary_?  _I have often seen reminiscences of\npeople I "
        "have never even heard of_, _and I fail to see_--_because I do not\nhappen to be a_ "
        "'_Somebody_'--_why my diary should not be interesting_."
    )
    prose = _PROSE.format(who="Pooter")
    text = (
        "                               The Diary of\n                                 a Nobody"
        f"\n\n\n\n\nINTRODUCTION BY MR. POOTER\n\n\n{intro}\n\n"
        "                                                           CHARLES POOTER.\n\n\n\n\n"
        f"CHAPTER I\n\n\n{prose}\n\n\n\n\nCHAPTER II\n\n\n{prose}\n"
    )
    chapters = chapters_from_blocks(blocks_from_text(text)).chapters
    assert [c.title for c in chapters] == ["INTRODUCTION BY MR. POOTER", "CHAPTER I", "CHAPTER II"]
    assert chapters[0].paragraphs[0].startswith("Why should I not publish my diary?")


def test_a_note_on_the_text_after_the_last_chapter_is_back_matter() -> None:
    """Northanger Abbey (121.txt, 121-0.txt, 121-h.htm, the 1990s editions) ends with its
    editor's "A NOTE ON THE TEXT": a heading without a number in a book of numbered chapters,
    it was a line of the last chapter, and the note the novel's last paragraph."""
    prose = _PROSE.format(who="Catherine")
    text = (
        f"CHAPTER 30\n\n{prose}\n\n\n\nCHAPTER 31\n\n{prose}\n\n\n\n\nA NOTE ON THE TEXT\n\n"
        "Northanger Abbey was written in 1797-98 under a different title. The\nmanuscript was "
        "revised around 1803 and sold to a London publisher,\nCrosbie & Co., who sold it back "
        "in 1816. Spelling and punctuation\nhave been largely brought into conformity with "
        "modern British usage.\n"
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert book.chapters[-1].paragraphs == [prose]
    assert [section.title for section in book.reference] == ["A NOTE ON THE TEXT"]


def test_the_cantos_of_a_poem_with_a_prose_note_are_its_chapters(tmp_path: Path) -> None:
    """The Song of Hiawatha (19.txt) opens with a prose "Introductory Note": the book had prose,
    so it was not read as verse, and six of its cantos were left out as "(no prose)" (the rest
    kept by chance, a stanza with stops enough to pass as prose), and the note, in title case
    before the numbered cantos, was part of the contents page. A chapter of stanzas is a poem,
    whatever the rest of the book is; a contents page of numbered titles is not; a title the
    contents page lists, standing alone before the first numbered chapter, heads a chapter; its
    VOCABULARY at the end is back matter."""
    note = "\n".join(textwrap.wrap(" ".join([_PROSE.format(who="Schoolcraft")] * 3), 70))
    contents = "\n".join(f"{n}.   The Song of the {w}" for n, w in (("I", "Pipe"), ("II", "Wind")))
    canto = f"{_VERSE}\n\n{_VERSE}"
    source = tmp_path / "19.txt"
    source.write_text(
        f"CONTENTS\n\nIntroductory Note\n{contents}\n\n\nIntroductory Note\n\n{note}\n\n\n\n"
        f"            I\n\n        The Song of the Pipe\n\n"
        f"{canto}\n\n\n\n            II\n\n        The Song of the Wind\n\n"
        f"{canto}\n\n\n\n"
        f"            III\n\n        The Song of the Lake\n\n{canto}\n\n\n\nVOCABULARY\n\n"
        "Adjidau'mo, the red squirrel\nAhdeek', the reindeer\nAhmeek', the beaver\n",
        encoding="utf-8",
    )
    out = tmp_path / "poem.db"
    titles = _import(source, out)
    assert titles == [
        "Introductory Note", "I: The Song of the Pipe", "II: The Song of the Wind",
        "III: The Song of the Lake",
    ]  # fmt: skip
    assert _bodies(out).count(_VERSE) == 6  # each stanza a paragraph, its lines kept
    assert not any("Wind" in name or "Lake" in name for name in read_book(source).dropped)
    # its list of words is back matter, as a glossary is, not the last canto's end
    assert "red squirrel" not in _bodies(out)
    assert [section.title for section in read_book(source).reference] == ["VOCABULARY"]


def test_a_numbered_list_in_a_letter_heads_no_chapter(tmp_path: Path) -> None:
    """Daddy-Long-Legs (157.txt) is letters with no chapter headings; a letter's list "I. You
    are tall." / "II.  You are rich." / "III.  You hate girls." (and "VII." / "VIII.  Good
    night.", "3.  Sallie." / "4. ..." later) was read as chapters: the book came out as four
    chapters named after list items, the story before the first of them lost. Paragraphs that
    open with consecutive numbers less than a paragraph apart are a list; chapters are never that
    short. The whole book under its copyright line (no other heading) is the story, from its
    first paragraph of prose, not front matter nor a text with its title page."""
    letter = "\n".join(textwrap.wrap(" ".join([_PROSE.format(who="Judy")] * 4), 70))
    text = (
        f"Dear Daddy-Long-Legs,\n\n{letter}\n\nI. You are tall.\n\nII.  You are rich.\n\n"
        f"III.  You hate girls.\n\n{letter}\n\n{letter}\n\nVII.  It is half past nine.\n\n"
        f"VIII.  Good night.\n\n{letter}\n\n1.  Sylvia, for the woods.\n\n2.  Lesbia.\n\n"
        f"3.  Sallie.\n\n{letter}\n"
    )
    source = tmp_path / "157.txt"
    source.write_text(text, encoding="utf-8")
    out = tmp_path / "letters.db"
    assert _import(source, out) == ["Text"]
    bodies = _bodies(out)
    assert bodies.startswith("Dear Daddy-Long-Legs,")
    # under its title page's copyright line, the only heading the book has: the story was
    # dropped with it as front matter, then read whole with the title page as its first lines
    title_page = "DADDY-LONG-LEGS\n\nby\n\nJEAN WEBSTER\n\n\n\nCopyright 1912 by Century"
    more = "\n\n".join([letter] * 14)
    source.write_text(
        f"{title_page}\n\n\n\nTO YOU\n\n\n\nBlue Wednesday\n\n{letter}\n\n{text}\n{more}\n",
        encoding="utf-8",
    )
    out = tmp_path / "titled.db"
    assert _import(source, out) == ["Text"]
    bodies = _bodies(out)
    assert bodies.startswith("Judy walked") and "III.  You hate girls." in bodies
    assert "JEAN WEBSTER" not in bodies and "Copyright" not in bodies
    for item in ("I. You are tall.", "III.  You hate girls.", "VIII.  Good night.", "3.  Sallie."):
        assert item in bodies
    # chapters numbered with their titles on the heading's line stay chapters
    pairs = (("I", "GATE"), ("II", "YARD"))
    chapters = "\n\n\n".join(f"{n}. THE {w}\n\n{letter}" for n, w in pairs)
    assert [c.title for c in chapters_from_blocks(blocks_from_text(chapters)).chapters] == [
        "I. THE GATE", "II. THE YARD"
    ]  # fmt: skip


def test_a_sum_worked_in_the_story_is_no_chapter_number() -> None:
    """Through the Looking-Glass (12-0.txt) sets Alice's sum as lines of figures ("365", "1",
    "____", "364", "___"): "364" over the rule "___" was read as a chapter numbered 364 titled
    "___", cutting Humpty Dumpty's chapter in two. A line without a letter is no title."""
    prose = _PROSE.format(who="Alice")
    text = (
        f"CHAPTER I. Looking-Glass house\n\n{prose}\n\n\n"
        f"CHAPTER VI. Humpty Dumpty\n\n{prose} She worked the sum for him:\n\n"
        "               365\n                1\n               ____\n\n"
        f"               364\n               ___\n\n{prose}\n\n\n"
        f"CHAPTER VII. The Lion and the Unicorn\n\n{prose}\n"
    )
    chapters = chapters_from_blocks(blocks_from_text(text)).chapters
    assert [c.title for c in chapters] == [
        "CHAPTER I. Looking-Glass house", "CHAPTER VI. Humpty Dumpty",
        "CHAPTER VII. The Lion and the Unicorn",
    ]  # fmt: skip
    assert chapters[1].paragraphs[-1] == prose


def test_html_text_in_no_block_a_cast_paragraph_and_a_translators_credit(tmp_path: Path) -> None:
    """Three HTML editions: Carmilla's "<b>PROLOGUE</b>" is set in no paragraph, so it was
    dropped and its prologue left out as the title page's "Copyright 1872"; An Enemy of the
    People's "DRAMATIS PERSONAE" is a paragraph, so its cast was a chapter headed "Henrik
    Ibsen: A play in five acts"; Madame Bovary's "Translated from the French by Eleanor
    Marx-Aveling" headed a chapter of its dedication; Carmilla's chapter titles are bold
    paragraphs under the numbers ("<p><b>An Early Fright</b></p>"). Text in no block is a
    paragraph (parted where "<br/><br/>" leaves a blank line), a cast's name set as a paragraph
    is a heading, a translator's credit is a byline, a short paragraph all in bold right under
    a heading is part of it."""
    prose = _PROSE.format(who="Laura")
    source = tmp_path / "10007-h.htm"
    source.write_text(
        "<html><head><title>Carmilla</title></head><body><table><tr><td>"
        "<h1>Carmilla</h1><h3>J. Sheridan LeFanu<br/><br/>Copyright 1872</h3><br/>"
        f"<b>PROLOGUE</b><p><i>{prose}</i></p><h2>I</h2><p><b>An Early Fright</b></p>"
        f"<p><b>Note.</b> {prose}</p>"
        f"<h2>II</h2><p>{prose}</p><hr/><b>Other books by J. Sheridan LeFanu</b><br/>\n<br/>"
        "The Cock and Anchor<br/>Uncle Silas<br/></td></tr></table></body></html>",
        encoding="utf-8",
    )
    out = tmp_path / "carmilla.db"
    assert _import(source, out) == ["PROLOGUE", "I: An Early Fright", "II"]
    assert f"Note. {prose}" in _bodies(out)
    assert read_book(source).dropped == ["Other books by J. Sheridan LeFanu (front matter)"]
    source = tmp_path / "2446-h.htm"
    source.write_text(
        "<html><head><title>An Enemy of the People</title></head><body>"
        "<h2>Henrik Ibsen</h2><h3>Translated by R. Farquharson Sharp</h3>"
        "<h2>AN ENEMY OF THE PEOPLE</h2><h3>A play in five acts</h3>"
        "<p>DRAMATIS PERSONAE</p><p>Dr. Thomas Stockmann, Medical Officer of the Municipal "
        "Baths.<br/>Mrs. Stockmann, his wife.<br/>Petra (their daughter) a teacher.<br/>"
        "Peter Stockmann (the Doctor's elder brother), Mayor of the Town and Chief Constable, "
        "Chairman of the Baths' Committee, etc.<br/>Aslaksen, a printer.</p>"
        f"<h2>ACT I</h2><p>{prose}</p><h2>ACT II</h2><p>{prose}</p></body></html>",
        encoding="utf-8",
    )
    book = read_book(source)
    assert [chapter.title for chapter in book.chapters] == ["ACT I", "ACT II"]
    assert [section.title.split(": ")[-1] for section in book.reference] == ["DRAMATIS PERSONAE"]
    source = tmp_path / "2413-h.htm"
    dedication = "To Marie-Antoine-Jules Senard, Member of the Paris Bar. " + prose
    source.write_text(
        "<html><head><title>Madame Bovary</title></head><body><h1>MADAME BOVARY</h1>"
        "<h2>By Gustave Flaubert</h2><h3>Translated from the French by Eleanor Marx-Aveling</h3>"
        f"<blockquote><p>{dedication}</p></blockquote><h2>Part I</h2><h2>Chapter One</h2>"
        f"<p>{prose}</p><h2>Chapter Two</h2><p>{prose}</p></body></html>",
        encoding="utf-8",
    )
    book = read_book(source)
    assert [chapter.title for chapter in book.chapters] == ["Chapter One", "Chapter Two"]
    assert book.dropped == ["MADAME BOVARY (title page)"]


def test_a_footnotes_mark_on_a_heading_is_not_its_title() -> None:
    """Notes from the Underground (600.txt) heads its first part "Underground*", the mark of
    the note under it: every chapter of the part was "PART I: Underground*: II"."""
    prose = _PROSE.format(who="Liza")
    text = (
        f"PART I\n\nUnderground*\n\n     *The author of the diary is imaginary.\n\n\n\nI\n\n"
        f"{prose}\n\n\n\nII\n\n{prose}\n\n\n\nPART II\n\nA Propos of the Wet Snow\n\n\n\nI\n\n"
        f"{prose}\n\n\n\nII\n\n{prose}\n"
    )
    titles = [c.title for c in chapters_from_blocks(blocks_from_text(text)).chapters]
    assert "PART I: Underground: II" in titles
    assert not any("*" in title for title in titles)


def test_papers_of_a_series_numbered_no_are_its_chapters() -> None:
    """The Federalist Papers (1404.txt) heads its eighty-five papers "FEDERALIST No. 1" over the
    paper's title: no heading, so the book was cut at its footnotes' numbers ("1. Divide and
    command"), fourteen chapters of up to 36,818 words."""
    prose = _PROSE.format(who="Publius")
    text = "\n\n\n\n".join(
        f"FEDERALIST No. {n}\n\n{title}\n\nFor the Independent Journal.\n\n\nHAMILTON\n\n"
        f"To the People of the State of New York:\n\n{prose}\n\n{prose}\n\nPUBLIUS"
        for n, title in ((1, "General Introduction"), (2, "Concerning Dangers"), (3, "Union"))
    )
    chapters = chapters_from_blocks(blocks_from_text(text)).chapters
    assert [c.title for c in chapters] == [
        "FEDERALIST No. 1: General Introduction", "FEDERALIST No. 2: Concerning Dangers",
        "FEDERALIST No. 3: Union",
    ]  # fmt: skip
    assert chapters[0].paragraphs[-1] == "PUBLIUS"


def test_a_restructuredtext_book_imports_its_sections(tmp_path: Path) -> None:
    """Project Gutenberg's RST editions (Anna Karenina's 1399-rst.rst) were refused ("cannot
    import"): their parts and chapters are underlined titles, their wrapping is directives
    (`.. meta::` with the title, `.. pgheader::`, the title page's `.. container::`)."""
    prose = _PROSE.format(who="Levin")
    source = tmp_path / "1399-rst.rst"
    source.write_text(
        ".. -*- encoding: utf-8 -*-\n\n.. meta::\n   :PG.Id: 1399\n   :PG.Title: Anna Karenina\n"
        "   :DC.Creator: Leo Tolstoy\n\n======================\nThe Project Gutenberg\n"
        "======================\n\n.. pgheader::\n\n.. container:: titlepage center\n\n"
        "    .. class:: x-large\n\n    Anna Karenina\n\n    by Leo Tolstoy\n\n\n"
        f"PART ONE\n========\n\n\nChapter 1\n---------\n\n{prose} [#]_\n\n"
        "    A letter, indented::\n\n    .. class:: right\n\n    \\A. Karenin\n\n"
        f"Chapter 2\n---------\n\n*{prose}*\n\n.. [#] A note.\n\n"
        f"PART TWO\n========\n\nChapter 1\n~~~~~~~~~\n\n{prose}\n\n.. pgfooter::\n",
        encoding="utf-8",
    )
    out = tmp_path / "anna.db"
    assert _import(source, out) == [
        "PART ONE: Chapter 1", "PART ONE: Chapter 2", "PART TWO: Chapter 1"
    ]  # fmt: skip
    bodies = _bodies(out)
    assert bodies == " ".join([prose, "A letter, indented:", "A. Karenin", prose, prose])
    assert read_book(source).title == "Anna Karenina"
    # without the fields, the title is the document's: the first, adorned as no other is
    source.write_text(
        f"Siddhartha\n==========\n\nThe Son of the Brahman\n----------------------\n\n{prose}\n\n"
        f"With the Samanas\n----------------\n\n{prose}\n",
        encoding="utf-8",
    )
    book = read_book(source)
    assert book.title == "Siddhartha"
    assert [c.title for c in book.chapters] == ["The Son of the Brahman", "With the Samanas"]


def test_an_html_poem_set_a_paragraph_a_line_is_read_as_stanzas(tmp_path: Path) -> None:
    """The Song of Hiawatha's HTML (19-h.htm) sets each line of verse as a paragraph of its own
    inside `<div class="stanza">`: every canto was paragraphs of five words, no prose, and all
    twenty-two were left out ("no prose"). A stanza is one paragraph, its lines kept, as in
    the plain text; a stanza quoted in a prose chapter (Dracula's, lines parted by `<br/>`)
    is one paragraph of that chapter."""
    verse = _VERSE.split("\n")
    stanza = "".join(f"<p>{line}</p>" for line in verse)
    canto = f'<div class="poem"><div class="stanza">{stanza}</div><br/><div class="stanza">'
    canto += f"{stanza}</div></div>"
    titled = f'<div class="poem">{stanza}<h4>The Omen</h4>{stanza}</div>'  # no stanza divs
    note = " ".join([_PROSE.format(who="Schoolcraft")] * 3)
    before, after = _PROSE.format(who="Longfellow"), _PROSE.format(who="Harker")
    quoted = "".join(f'<span class="i0">{line}<br /></span>' for line in verse[:3])
    source = tmp_path / "19-h.htm"
    source.write_text(
        "<html><head><title>The Song of Hiawatha</title></head><body>"
        f"<h2>Introductory Note</h2><p>{note}</p>"
        f'<p>{before}</p><div class="poem"><div class="stanza">'
        f"{quoted}</div></div><p>{after}</p>"
        f"<h2>I</h2><h3>The Peace-Pipe</h3>{canto}<h2>II</h2><h3>The Four Winds</h3>{canto}"
        f"<h2>III</h2>{titled}</body></html>",
        encoding="utf-8",
    )
    book = read_book(source)
    assert [c.title for c in book.chapters] == [
        "Introductory Note", "I: The Peace-Pipe", "II: The Four Winds", "III"
    ]  # fmt: skip
    # a poem's title inside it, its lines set with no stanza of their own: in its place
    assert book.chapters[3].paragraphs == [_VERSE, "The Omen", _VERSE]
    assert book.chapters[0].paragraphs[1:] == [before, "\n".join(verse[:3]), after]
    assert book.chapters[2].paragraphs == [_VERSE] * 2
    assert book.dropped == []


def test_the_import_names_what_it_kept_for_reference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An Enemy of the People's cast was "back matter (glossary, appendices) kept for reference
    in ...": the import names the sections it kept aside, whatever they are."""
    prose = _PROSE.format(who="Stockmann")
    source = tmp_path / "2446.txt"
    source.write_text(
        "DRAMATIS PERSONAE\n\nDr. Thomas Stockmann, Medical Officer of the Municipal Baths.\n"
        "Mrs. Stockmann, his wife.\nPetra (their daughter) a teacher.\n\n\n"
        f"ACT I\n\n{prose}\n\n\nACT II\n\n{prose}\n\n\nFOOTNOTES:\n\n[1] A note.\n",
        encoding="utf-8",
    )
    out = tmp_path / "enemy.db"
    for _ in range(2):
        assert main(["import", str(source), "--out", str(out), "--replace"]) == 0
        said = capsys.readouterr().out.splitlines()
        assert said[-1] == (
            f"kept for reference, not story, in {out}.reference.md: DRAMATIS PERSONAE; FOOTNOTES"
        )


def test_a_stanza_keeps_its_lines_so_no_name_runs_on_to_the_next(tmp_path: Path) -> None:
    """The Song of Hiawatha's stanzas were paragraphs of one line: "the Great Bear, Mishe-Mokwa"
    at a line's end ran on to "In the morning" at the next's, and the offline glossary had
    "Mishe-Mokwa In" (and "Kabibonokka Issued", "Minnehaha Gleaming", line-opening "Sprang" and
    "Smote" as names). A stanza's paragraph keeps its lines; a prose paragraph is one line."""
    stanzas = [
        "Then the Great Bear came, Mishe-Mokwa\nIn the morning, from the mountains.\n"
        "There he met the hunter, Kwasind.\nSprang the bear upon the hunter,\n"
        "Roaring loud across the meadow.\nAll the birds flew up in terror.",
        "So the old man spoke, Iagoo.\nSprang the squirrel, Adjidaumo.\n"
        "Then he told of Mishe-Mokwa\nIn the valley of the river,\n"
        "How he walked beside the water.\nAll the children heard in wonder.",
    ]
    prose = "\n".join(textwrap.wrap(" ".join([_PROSE.format(who="Iagoo")] * 2), 70))
    cantos = "\n\n\n\n".join(
        f"CHAPTER {n}\n\n{prose}\n\n" + "\n\n".join(stanzas * 2) for n in ("I", "II", "III")
    )
    book, corpus_db, db = tmp_path / "19.txt", tmp_path / "poem.db", tmp_path / "glossary.db"
    book.write_text(cantos + "\n", encoding="utf-8")
    assert main(["import", str(book), "--out", str(corpus_db)]) == 0
    with sqlite3.connect(corpus_db) as conn:
        bodies = [row[0] for row in conn.execute("SELECT body FROM post ORDER BY id")]
    assert stanzas[0] in bodies and stanzas[1] in bodies
    assert " ".join(prose.split()) in bodies  # prose wrapped at 70 is one line
    assert main(["run", "--offline", "--corpus", str(corpus_db), "--db", str(db)]) == 0
    with GlossaryStore(db) as glossary:
        terms = {entry.term for entry in glossary.glossary.entries() if not entry.deleted}
    assert "Mishe-Mokwa" in terms and not any(term.endswith(" In") for term in terms), terms


def test_an_asciidoc_chapter_heading_set_as_a_paragraph_numbered_with_its_volume() -> None:
    """Tristram Shandy's AsciiDoc (1079, book.asciidoc) heads 311 chapters "=== Chapter 4.XIX."
    but sets "Chapter 4.XX." as a paragraph of its own: that chapter ran on inside 4.XIX (311
    chapters where the plain text has 312). A paragraph that is a division and its number after
    its volume's is a heading, as "CHAPTER XII" alone is."""
    prose = _PROSE.format(who="my uncle Toby")
    text = (
        "= Tristram Shandy\n\n=== Chapter 4.XIX.\n\n"
        f"{prose}\n\nChapter 4.XX.\n\nAnd now for Lippius's clock! said I.\n\n{prose}\n\n"
        f"=== Chapter 4.XXI.\n\n{prose}\n"
    )
    blocks, _ = blocks_from_asciidoc(text)
    chapters = chapters_from_blocks(blocks).chapters
    assert [c.title for c in chapters] == ["Chapter 4.XIX.", "Chapter 4.XX.", "Chapter 4.XXI."]
    assert chapters[1].paragraphs == ["And now for Lippius's clock! said I.", prose]


def test_a_contents_pages_named_last_line_is_no_section_left_out() -> None:
    """Moby-Dick's 2701-0.txt lists "Epilogue" last on its contents page, over its transcriber's
    notes: the dry run said "left out: Epilogue (front matter: an ending before the first
    chapter)", as if the story's epilogue were lost. A named line of the contents page is a
    line of it; the numbered lines listed over the notes are the contents page, said as one."""
    prose = _PROSE.format(who="Ishmael")
    chapters = "\n\n".join(
        f"CHAPTER {n}. {title}.\n\n{prose}\n\n{prose}"
        for n, title in ((1, "Loomings"), (2, "The Carpet-Bag"), (3, "The Spouter-Inn"))
    )
    text = (
        "CONTENTS\n\nETYMOLOGY.\n\nCHAPTER 1. Loomings.\n\nCHAPTER 2. The Carpet-Bag.\n\n"
        "CHAPTER 3. The Spouter-Inn.\n\nEpilogue\n\n\n\n\nOriginal Transcriber’s Notes:\n\n\n\n"
        "This text is a combination of etexts, one from the now-defunct ERIS project at Virginia "
        "Tech and one from the archives. The proofreaders of this version are indebted to The "
        "University of Adelaide Library.\n\n\n\n\n"
        f"{chapters}\n\n\n\nEpilogue\n\n“AND I ONLY AM ESCAPED ALONE TO TELL THEE.”\n\n{prose}\n"
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert [c.title for c in book.chapters] == [
        "CHAPTER 1. Loomings", "CHAPTER 2. The Carpet-Bag", "CHAPTER 3. The Spouter-Inn",
        "Epilogue",
    ]  # fmt: skip
    assert book.dropped == [
        "CONTENTS (contents)",
        "CHAPTER 1. Loomings … CHAPTER 3. The Spouter-Inn (contents)",
        "Original Transcriber’s Notes: (front matter; 34 words)",  # a transcriber's notes, named
    ]
    # named once, right under the page, it heads its section (Don Quixote's "TRANSLATOR'S
    # PREFACE" after the contents' "CHAPTER LII")
    text = (
        "CONTENTS\n\nCHAPTER I\nOF THE FAMOUS GENTLEMAN\n\nCHAPTER II\nOF THE FIRST SALLY\n\n"
        "CHAPTER III\nOF THE DROLL WAY\n\n\nTRANSLATOR'S PREFACE\n\n\n"
        f"{prose}\n\n\nCHAPTER I\n\n{prose}\n\nCHAPTER II\n\n{prose}\n\nCHAPTER III\n\n{prose}\n"
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert [c.title for c in book.chapters] == [
        "TRANSLATOR'S PREFACE", "CHAPTER I", "CHAPTER II", "CHAPTER III"
    ]  # fmt: skip


def test_titles_with_a_stop_under_chapter_numbers_are_their_titles() -> None:
    """Moby-Dick's old edition (moby10b.txt) sets "CHAPTER 1", then "Loomings." on a line of
    its own: a title with a stop was read as a sentence, and all 135 titles were lost (the
    chapters were "CHAPTER 1" to "CHAPTER 135"). When most chapters numbered alone have such a
    line under them, it is their title; a short first sentence under one chapter is not."""
    prose = _PROSE.format(who="Ishmael")
    text = (
        f"CHAPTER 1\n\nLoomings.\n\n\n{prose}\n\n\n\n"
        f"CHAPTER 2\n\nThe Carpet-Bag.\n\n\n{prose}\n\n\n\n"
        f"CHAPTER 3\n\nHark!\n\n\n{prose}\n\n\n\nCHAPTER 4\n\n"
        "Of the Less Erroneous Pictures of Whales, and the True Pictures of\nWhaling Scenes.\n\n\n"
        f"{prose}\n"
    )
    chapters = chapters_from_blocks(blocks_from_text(text)).chapters
    assert [c.title for c in chapters] == [
        "CHAPTER 1: Loomings", "CHAPTER 2: The Carpet-Bag", "CHAPTER 3: Hark!",
        "CHAPTER 4: Of the Less Erroneous Pictures of Whales, and the True Pictures of Whaling "
        "Scenes",
    ]  # fmt: skip
    assert all(c.paragraphs == [prose] for c in chapters)
    # one chapter opening with a short sentence keeps it as its text
    text = f"CHAPTER 1\n\n{prose}\n\nCHAPTER 2\n\nYes.\n\n{prose}\n\nCHAPTER 3\n\n{prose}\n"
    chapters = chapters_from_blocks(blocks_from_text(text)).chapters
    assert [c.title for c in chapters] == ["CHAPTER 1", "CHAPTER 2", "CHAPTER 3"]
    assert chapters[1].paragraphs == ["Yes.", prose]


def test_a_title_in_capitals_with_a_stop_over_prose_before_the_first_chapter_heads_it() -> None:
    """Gulliver's Travels (829.txt) opens with "THE PUBLISHER TO THE READER." and "A LETTER FROM
    CAPTAIN GULLIVER TO HIS COUSIN SYMPSON.", the story's frame: titles with a stop, listed on
    no contents page, were no headings, and their 1,947 words were dropped as front matter.
    Over prose of their own they head chapters; a title page's lines over a byline do not, and
    The Republic's "PERSONS OF THE DIALOGUE." is its cast, kept for reference."""
    prose = _PROSE.format(who="Mr. Lemuel Gulliver")
    text = (
        "                            GULLIVER'S TRAVELS\n\n"
        "                         BY JONATHAN SWIFT, D.D.\n\n\n\n"
        "THE PUBLISHER TO THE READER.\n\n\n"
        "                  [_As given in the original edition_.]\n\n"
        f"{prose}\n\n{prose}\n\n                                          RICHARD SYMPSON.\n\n\n\n"
        "A LETTER FROM CAPTAIN GULLIVER TO HIS COUSIN SYMPSON.\n\n\n"
        f"                        WRITTEN IN THE YEAR 1727.\n\n{prose}\n\n\n\n"
        f"PART I.  A VOYAGE TO LILLIPUT.\n\n\nCHAPTER I.\n\n\n{prose}\n\n\n\n"
        f"CHAPTER II.\n\n\n{prose}\n"
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert [c.title for c in book.chapters] == [
        "THE PUBLISHER TO THE READER", "A LETTER FROM CAPTAIN GULLIVER TO HIS COUSIN SYMPSON",
        "CHAPTER I", "CHAPTER II",
    ]  # fmt: skip
    assert book.chapters[0].paragraphs[-1] == "RICHARD SYMPSON."
    assert book.dropped == []
    text = (
        f"THE REPUBLIC\n\nBy Plato\n\n\nINTRODUCTION AND ANALYSIS.\n\n{prose}\n\n\n\n"
        "THE REPUBLIC.\n\n\n\n"
        "PERSONS OF THE DIALOGUE.\n\nSocrates, who is the narrator.\n\nGlaucon.\n\n\n\n"
        f"BOOK I.\n\n{prose}\n\n\n\nBOOK II.\n\n{prose}\n"
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert [c.title for c in book.chapters] == ["INTRODUCTION AND ANALYSIS", "BOOK I", "BOOK II"]
    assert book.chapters[0].paragraphs == [prose]  # the book's title over its cast is none
    assert [(c.title, c.paragraphs) for c in book.reference] == [
        ("PERSONS OF THE DIALOGUE", ["Socrates, who is the narrator.", "Glaucon."])
    ]


def test_a_note_on_the_author_after_the_last_tale_is_reference_not_story() -> None:
    """Grimms' Fairy Tales (2591-0.txt, 2591-h.htm) ends its last tale, then "*****" and a
    paragraph on the brothers' lives ("The Brothers Grimm, Jacob (1785-1863) and Wilhelm
    (1786-1859), were born in Hanau, ..."): it was the last scene of "SNOW-WHITE AND ROSE-RED".
    A short last scene opening with someone's years is a note on the author, for reference; a
    last scene of the story stays."""
    prose = _PROSE.format(who="Rose-red")
    note = (
        "The Brothers Grimm, Jacob (1785-1863) and Wilhelm (1786-1859), were born in Hanau, "
        "near Frankfurt, in the German state of Hesse. Throughout their lives they remained "
        "close friends, and both studied law at Marburg University."
    )
    ending = "Snow-white was married to him, and Rose-red to his brother."

    def blocks(last: str) -> list[Block]:
        return [
            Block("heading", "IRON HANS"), Block("text", prose),
            Block("heading", "SNOW-WHITE AND ROSE-RED"), Block("text", prose),
            Block("text", ending), Block("text", "* * *"), Block("text", last),
        ]  # fmt: skip

    book = chapters_from_blocks(blocks(note))
    assert [c.title for c in book.chapters] == ["IRON HANS", "SNOW-WHITE AND ROSE-RED"]
    assert book.chapters[-1].scenes == [[prose, ending]]
    assert [(c.title, c.paragraphs) for c in book.reference] == [("A note on the author", [note])]
    story = "The old mother lived (1785 was long past) peacefully with her children for many years."
    book = chapters_from_blocks(blocks(story))
    assert book.reference == []
    assert book.chapters[-1].scenes == [[prose, ending], [story]]


def test_note_marks_in_parentheses_or_after_a_space_are_no_text() -> None:
    """The Iliad's 6130-0.txt marks its notes "(1)" against the word ("Shakespere(1) have",
    "_converzationes_(6)", "ARGUMENT.(40)"): 291 of them were story text, and titles. Gulliver's
    Travels (829.txt) marks some "{301}" after a space ("half a stang, {301} and"). Both go; a
    list's "—(1) political, (2) administrative" (Anna Karenina) stays."""
    text = (
        "BOOK I.\n\n\nARGUMENT.(40)\n\nTHE CONTENTION OF ACHILLES AND AGAMEMNON.\n\n"
        "Homer, Socrates, and Shakespere(1) have, perhaps, contributed more to the intellectual\n"
        "character of the world; he frequented the _converzationes_(6) of the old men.\n\n"
        "Woods of half a stang, {301} and the tallest trees, as I could judge. {302}\n\n"
        "The condition of the native tribes from the—(1) political, (2) administrative, and\n"
        "(3) economic points of view, which he set before the whole company that evening.\n\n"
        "BOOK II.\n\n\nARGUMENT.\n\nTHE TRIAL OF THE ARMY.\n\n"
        "Jupiter, in pursuance of the request of Thetis, sends a deceitful vision to Agamemnon,\n"
        "persuading him to lead the army to battle, in order to make the Greeks sensible.\n"
    )
    chapters = chapters_from_blocks(blocks_from_text(text)).chapters
    assert [c.title for c in chapters] == [
        "BOOK I: THE CONTENTION OF ACHILLES AND AGAMEMNON", "BOOK II: THE TRIAL OF THE ARMY",
    ]  # fmt: skip
    assert chapters[0].paragraphs == [
        "ARGUMENT.",
        "Homer, Socrates, and Shakespere have, perhaps, contributed more to the intellectual "
        "character of the world; he frequented the converzationes of the old men.",
        "Woods of half a stang, and the tallest trees, as I could judge.",
        "The condition of the native tribes from the—(1) political, (2) administrative, and (3) "
        "economic points of view, which he set before the whole company that evening.",
    ]


def test_a_title_in_capitals_after_the_contents_page_over_prose_heads_it() -> None:
    """Huckleberry Finn (76-0.txt) sets "EXPLANATORY", the author's note on the book's dialects,
    after its contents page and list of illustrations: no heading, it was left out as part of
    that list ("ILLUSTRATIONS (contents; 92 words of prose)"). After the contents page a title
    in capitals over prose heads it; over a line that is no prose it heads nothing."""
    prose = _PROSE.format(who="Huck")
    chapters = "\n\n\n\n\n".join(f"CHAPTER {n}.\n\n{prose}" for n in ("I", "II", "III"))
    text = (
        "ADVENTURES\n\nOF\n\nHUCKLEBERRY FINN\n\n\n\nCONTENTS.\n\n"
        "CHAPTER I. Civilizing Huck.--Miss Watson.--Tom Sawyer Waits.\n\n"
        "CHAPTER II. The Boys Escape Jim.--Torn Sawyer's Gang.--Deep-laid Plans.\n\n"
        "CHAPTER III. A Good Going-over.--Grace Triumphant.\n\n\n\n\n"
        "ILLUSTRATIONS.\n\nThe Widows\n\nMoses and the Bulrushers\n\n\n\n\n"
        f"EXPLANATORY\n\nIN this book a number of dialects are used. {prose}\n\n"
        "THE AUTHOR.\n\n\n\n\nHUCKLEBERRY FINN\n\n"
        "Scene:  The Mississippi Valley Time:  Forty to fifty years ago\n\n\n\n\n"
        f"{chapters}\n"
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert [c.title for c in book.chapters] == [
        "EXPLANATORY", "CHAPTER I", "CHAPTER II", "CHAPTER III"
    ]  # fmt: skip
    assert book.chapters[0].paragraphs[-3:-1] == ["THE AUTHOR.", "HUCKLEBERRY FINN"]
    # the contents page and the list of illustrations, in one run of headings, are both said
    assert book.dropped == ["CONTENTS (contents)", "ILLUSTRATIONS (contents)"]


def test_a_contents_page_of_chapter_numbers_over_their_titles_and_pages_is_contents() -> None:
    """Dracula (345.txt) lists "CHAPTER I" over "Jonathan Harker's Journal  1", a column's
    "Page" above: the dry run said "left out: CHAPTER I: Page (no prose)" and "CHAPTER XXVII:
    Mina Harker's Journal 338 (no prose)", as if two chapters were lost. Both are its contents
    page; the chapters are the story's."""
    prose = _PROSE.format(who="Jonathan Harker")
    listed = "\n\n".join(
        f"CHAPTER {n}\n\n{title}{' ' * 30}{page}"
        for n, title, page in (
            ("II", "Jonathan Harker's Journal", 14), ("III", "Jonathan Harker's Journal", 26),
            ("IV", "Letters--Lucy and Mina", 51),
        )
    )  # fmt: skip
    chapters = "\n\n\n\n".join(
        f"CHAPTER {n}\n\n{title}\n\n{prose}"
        for n, title in (
            ("I", "JONATHAN HARKER'S JOURNAL"), ("II", "JONATHAN HARKER'S JOURNAL"),
            ("III", "JONATHAN HARKER'S JOURNAL"), ("IV", "LETTERS--LUCY AND MINA"),
        )
    )  # fmt: skip
    text = (
        "CONTENTS\n\n\nCHAPTER I\n" + " " * 68 + "Page\n\n"
        f"Jonathan Harker's Journal{' ' * 46}1\n\n{listed}\n\n\n\n\n"
        f"                                DRACULA\n\n\n\n\n{chapters}\n"
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert [c.title for c in book.chapters] == [
        "CHAPTER I: JONATHAN HARKER'S JOURNAL", "CHAPTER II: JONATHAN HARKER'S JOURNAL",
        "CHAPTER III: JONATHAN HARKER'S JOURNAL", "CHAPTER IV: LETTERS--LUCY AND MINA",
    ]  # fmt: skip
    assert book.dropped == [
        "CONTENTS (contents)", "CHAPTER II … Letters--Lucy and Mina 51 (contents)"
    ]  # fmt: skip


def test_a_title_in_capitals_under_a_contents_heading_over_prose_heads_it(tmp_path: Path) -> None:
    """Huckleberry Finn's HTML sets "EXPLANATORY", the author's note on the book's dialects, as a
    <p> after its <h2>ILLUSTRATIONS.</h2> (the list itself links only): it was left out with
    that list ("ILLUSTRATIONS. (contents; 92 words of prose)"), as its plain text was before.
    Under a contents page's heading a paragraph that is a title in capitals over prose heads
    that prose; a line in capitals over no prose heads nothing."""
    prose = _PROSE.format(who="Huck")
    source = tmp_path / "76-h.htm"
    source.write_text(
        "<html><head><title>Huckleberry Finn</title></head><body>"
        "<h1>ADVENTURES</h1><h1>OF</h1><h1>HUCKLEBERRY FINN</h1><h2>CONTENTS.</h2>"
        '<p><a href="#c1">CHAPTER I.</a><br/> Civilizing Huck.&mdash;Miss Watson.<br/>'
        '<a href="#c2">CHAPTER II.</a><br/> The Boys Escape Jim.</p><h2>ILLUSTRATIONS.</h2>'
        '<p><a href="#c01-02">The Widows</a><br/><br/><a href="#c01-18">Moses</a></p>'
        "<p>THE WIDOWS</p><p>A line of the list</p>"
        f"<p>EXPLANATORY</p><p>IN this book a number of dialects are used. {prose}</p>"
        "<p>THE AUTHOR.</p><h1>HUCKLEBERRY FINN</h1>"
        "<p>Scene: The Mississippi Valley Time: Forty to fifty years ago</p>"
        f'<p><a name="c1" id="c1"></a></p><p>CHAPTER I.</p><p>YOU don’t know about me. {prose}</p>'
        f"<p>CHAPTER II.</p><p>WE went tiptoeing along. {prose}</p></body></html>",
        encoding="utf-8",
    )
    book = read_book(source)
    assert [c.title for c in book.chapters] == ["EXPLANATORY", "CHAPTER I.", "CHAPTER II."]
    assert book.chapters[0].paragraphs[-1] == "THE AUTHOR."
    assert book.dropped == [
        "CONTENTS (contents)", "ILLUSTRATIONS (contents)", "HUCKLEBERRY FINN (no prose)"
    ]  # fmt: skip


def test_note_marks_in_parentheses_set_apart_go_in_a_book_that_marks_its_notes_so() -> None:
    """The Iliad's 6130-0.txt marks its notes "(1)" against the word, and eight of them after a
    stop and a space ('the secret of the poet." (16)', "memory, (25) is") or right after a
    closing parenthesis ("(his native place)(161)"): those stayed in the text. In a book that
    marks three notes or more against the word, they go too; a list's numbers, one after the
    other ("Nor again, (2) must we forget", "Lastly, (3) the word"), stay, and in a book with no
    such marks a number set apart is the text's."""
    text = (
        "INTRODUCTION.\n\n"
        "Homer, Socrates, and Shakespere(1) have, perhaps, contributed more to the intellectual\n"
        "character of the world; the _converzationes_(6) of the old men, and the ode(7).\n\n"
        'Its composition must have remained the secret of the poet." (16)\n\n'
        "A class of trained bards, gifted with extraordinary memory, (25) is far less\n"
        "astonishing than that of long epic poems being handed down by them.\n\n"
        "In fair Arisbe's walls (his native place)(161)\n"
        "He held his seat! a friend to human race.\n\n"
        "Nor again, (2) must we forget that Plato agrees with the many. Lastly, (3) the word\n"
        "'happiness' involves some degree of confusion, which we have noticed before.\n"
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert book.chapters[0].paragraphs == [
        "Homer, Socrates, and Shakespere have, perhaps, contributed more to the intellectual "
        "character of the world; the converzationes of the old men, and the ode.",
        'Its composition must have remained the secret of the poet."',
        "A class of trained bards, gifted with extraordinary memory, is far less astonishing "
        "than that of long epic poems being handed down by them.",
        "In fair Arisbe's walls (his native place) He held his seat! a friend to human race.",
        "Nor again, (2) must we forget that Plato agrees with the many. Lastly, (3) the word "
        "'happiness' involves some degree of confusion, which we have noticed before.",
    ]
    unmarked = text.replace("(1)", "").replace("(6)", "").replace("(7)", "")
    paragraphs = chapters_from_blocks(blocks_from_text(unmarked)).chapters[0].paragraphs
    assert "gifted with extraordinary memory, (25) is far less" in paragraphs[2]


def test_an_argument_label_under_a_book_heading_in_html_is_no_title_the_title_under_it_is(
    tmp_path: Path,
) -> None:
    """The Iliad's HTML (6130-h) sets each book's "<h1>BOOK I.</h1>", then "<p>ARGUMENT.</p>"
    and the book's title as paragraphs: its 24 books were "BOOK I." and so on, where the plain
    text's are "BOOK I: THE CONTENTION OF ACHILLES AND AGAMEMNON.". The title in capitals under
    the label joins the heading; the label stays, the summary's first line."""
    prose = _PROSE.format(who="Achilles")
    source = tmp_path / "6130-h.htm"
    source.write_text(
        "<html><head><title>The Iliad of Homer</title></head><body>"
        f"<h1>INTRODUCTION.</h1><p>{prose}</p><h1>BOOK I.</h1>"
        '<p>ARGUMENT.<a id="noteref_40" href="#note_40"><span>40</span></a></p>'
        f"<p>THE CONTENTION OF ACHILLES AND AGAMEMNON.</p><p>In the war of Troy. {prose}</p>"
        f"<h1>BOOK VII.</h1><p>ARGUMENT</p><p>THE SINGLE COMBAT OF HECTOR AND AJAX.</p>"
        f"<p>The battle renewing. {prose}</p><h1>CONCLUDING NOTE.</h1><p>ARGUMENT.</p>"
        f"<p>We have now passed through the Iliad. {prose}</p></body></html>",
        encoding="utf-8",
    )
    book = read_book(source)
    assert [c.title for c in book.chapters] == [
        "INTRODUCTION",
        "BOOK I: THE CONTENTION OF ACHILLES AND AGAMEMNON",
        "BOOK VII: THE SINGLE COMBAT OF HECTOR AND AJAX",
        "CONCLUDING NOTE",
    ]
    assert book.chapters[1].paragraphs[0] == "ARGUMENT."


def test_a_section_name_inside_a_note_in_html_heads_nothing(tmp_path: Path) -> None:
    """The Iliad's HTML (6130-h) sets its notes as a <dl>, each note's text a <dd>: note 38,
    "<dd><p>Preface to her Homer.</p></dd>", read as a preface's heading, headed the 14,900
    words of notes after it ("reference, not story: Preface to her Homer."). Inside a <dd> a
    section's name is text; outside one it still heads its section."""
    prose = _PROSE.format(who="Hector")
    source = tmp_path / "6130-h.htm"
    source.write_text(
        "<html><head><title>The Iliad of Homer</title></head><body>"
        f"<h1>BOOK I.</h1><p>{prose}</p><h1>BOOK II.</h1><p>{prose}</p>"
        '<h2>Footnotes</h2><dl><dt><a id="note_37" href="#noteref_37">37.</a></dt>'
        f"<dd><p>Coleridge. {prose}</p></dd>"
        '<dt><a id="note_38" href="#noteref_38">38.</a></dt><dd><p>Preface to her Homer.</p></dd>'
        f'<dt><a id="note_39" href="#noteref_39">39.</a></dt><dd><p>Hesiod. {prose}</p></dd>'
        f"</dl><p>Appendix</p><p>A table of the Greek forces. {prose}</p></body></html>",
        encoding="utf-8",
    )
    book = read_book(source)
    assert [c.title for c in book.chapters] == ["BOOK I.", "BOOK II."]
    assert [section.title for section in book.reference] == ["Footnotes", "Appendix"]
    assert "Preface to her Homer." in book.reference[0].paragraphs
    assert book.reference[0].paragraphs[-1].startswith("Hesiod.")


def test_a_prefaces_name_over_the_number_of_its_first_part_names_that_part() -> None:
    """Don Quixote (996.txt) heads its translator's preface "TRANSLATOR'S PREFACE", then "I:
    ABOUT THIS TRANSLATION" right under it: the first section was "I: ABOUT THIS TRANSLATION",
    the preface's name lost. A preface's name over a bare number keeps its name; over a
    chapter's number with its division's word ("PROLOGUE" over "CHAPTER I") it does not."""
    prose = _PROSE.format(who="Sancho")
    text = (
        "CONTENTS\n\nCHAPTER I\nOF THE FAMOUS GENTLEMAN\n\nCHAPTER II\nOF THE FIRST SALLY\n\n"
        "CHAPTER III\nOF THE DROLL WAY\n\n\nTRANSLATOR'S PREFACE\n\n\nI: ABOUT THIS TRANSLATION\n\n"
        f"{prose}\n\nII: ABOUT CERVANTES AND DON QUIXOTE\n\n{prose}\n\n\n"
        f"THE AUTHOR'S PREFACE\n\n{prose}\n\n\nCHAPTER I\n\n{prose}\n\nCHAPTER II\n\n{prose}\n\n"
        f"CHAPTER III\n\n{prose}\n"
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert [c.title for c in book.chapters] == [
        "TRANSLATOR'S PREFACE: I: ABOUT THIS TRANSLATION",
        "II: ABOUT CERVANTES AND DON QUIXOTE",
        "THE AUTHOR'S PREFACE",
        "CHAPTER I",
        "CHAPTER II",
        "CHAPTER III",
    ]
    blocks = [Block("heading", "PROLOGUE"), Block("heading", "CHAPTER I"), Block("text", prose)]
    assert [c.title for c in chapters_from_blocks(blocks).chapters] == ["CHAPTER I"]


def test_a_titled_story_told_in_numbered_parts_is_one_chapter() -> None:
    """Grimms' Fairy Tales (2591.txt) tells "THE ADVENTURES OF CHANTICLEER AND PARTLET" in three
    parts, "1. HOW THEY WENT TO THE MOUNTAINS TO EAT NUTS" to "3. HOW PARTLET DIED ...", and
    "THE WEDDING OF MRS FOX" in two, "FIRST STORY" and "SECOND STORY": the plain text made five
    chapters of them (65 in all, the first part's under the parts' title alone), the HTML, whose
    parts are paragraphs under the tale's <h2>, two (62). The contents page lists the parts
    under their tale, and the third not at all: in a book of titled stories, a story's title
    over part 1 heads one chapter, each part's heading, and the next's, a line of it."""
    prose = _PROSE.format(who="Chanticleer")
    tales = "".join(
        f"{tale}\n\n\n{prose}\n\n\n\n\n"
        for tale in ("THE GOLDEN BIRD", "HANS IN LUCK", "JORINDA AND JORINDEL")
    )
    text = (
        "CONTENTS:\n\n     THE GOLDEN BIRD\n     HANS IN LUCK\n     JORINDA AND JORINDEL\n"
        "     THE GOOSE-GIRL\n     THE ADVENTURES OF CHANTICLEER AND PARTLET\n"
        "       1. HOW THEY WENT TO THE MOUNTAINS TO EAT NUTS\n"
        "       2. HOW CHANTICLEER AND PARTLET WENT TO VISIT MR KORBES\n     RAPUNZEL\n"
        "     THE WEDDING OF MRS FOX\n     FIRST STORY\n     SECOND STORY\n     THE SALAD\n\n\n\n"
        f"{tales}THE GOOSE-GIRL\n\n\n{prose}\n\n\n\n\n"
        "THE ADVENTURES OF CHANTICLEER AND PARTLET\n\n\n"
        f"1. HOW THEY WENT TO THE MOUNTAINS TO EAT NUTS\n\n{prose}\n\n\n"
        f"2. HOW CHANTICLEER AND PARTLET WENT TO VISIT MR KORBES\n\n{prose}\n\n\n"
        "3. HOW PARTLET DIED AND WAS BURIED, AND HOW CHANTICLEER DIED OF GRIEF\n\n"
        f"{prose}\n\n\n\n\n"
        f"RAPUNZEL\n\n\n{prose}\n\n\n\n\nTHE WEDDING OF MRS FOX\n\n\nFIRST STORY\n\n{prose}\n\n\n"
        f"SECOND STORY\n\n{prose}\n\n\n\n\nTHE SALAD\n\n\n{prose}\n"
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert [c.title for c in book.chapters[3:]] == [
        "THE GOOSE-GIRL", "THE ADVENTURES OF CHANTICLEER AND PARTLET", "RAPUNZEL",
        "THE WEDDING OF MRS FOX", "THE SALAD",
    ]  # fmt: skip
    assert book.chapters[4].paragraphs[::2] == [
        "1. HOW THEY WENT TO THE MOUNTAINS TO EAT NUTS",
        "2. HOW CHANTICLEER AND PARTLET WENT TO VISIT MR KORBES",
        "3. HOW PARTLET DIED AND WAS BURIED, AND HOW CHANTICLEER DIED OF GRIEF",
    ]
    assert book.chapters[6].paragraphs[::2] == ["FIRST STORY", "SECOND STORY"]


def test_lines_ended_by_a_doubled_carriage_return_are_lines_not_paragraphs(tmp_path: Path) -> None:
    """Great Expectations' grexp10a.txt ends its lines with "\\r\\r\\n" (a CRLF file converted
    once more): each line read as a paragraph of its own, no paragraph was long enough to be
    prose, and the import refused the book as having no story text. A run of carriage returns
    before a line feed ends one line."""
    prose = _PROSE.format(who="Pip")
    wrapped = "\n".join(textwrap.wrap(prose, 60))
    text = "".join(f"Chapter {n}\n\n{wrapped}\n\n{wrapped}\n\n" for n in ("I", "II", "III"))
    book = tmp_path / "grexp.txt"
    book.write_bytes(text.replace("\n", "\r\r\n").encode("ascii"))
    found = read_book(book)
    assert [c.title for c in found.chapters] == ["Chapter I", "Chapter II", "Chapter III"]
    assert [len(c.paragraphs) for c in found.chapters] == [2, 2, 2]
    assert found.chapters[0].paragraphs[0] == prose


def test_a_heading_set_letter_spaced_is_read_as_its_word() -> None:
    """Tom Sawyer's 74.txt sets its preface's heading letter-spaced, "P R E F A C E" (and the
    book's title over chapter I, "T O M   S A W Y E R"): no heading was found there, and the
    preface was left out as 155 words before the first heading. A line standing alone whose
    capitals are set a space apart, its words three spaces or more, reads as its words."""
    prose = "\n".join(textwrap.wrap(_PROSE.format(who="Tom"), 66))
    text = (
        "                   THE ADVENTURES OF TOM SAWYER\n\n\n\n"
        f"                           P R E F A C E\n\n{prose}\n\n"
        "                                                            THE AUTHOR.\n\n\n\n"
        "                          T O M   S A W Y E R\n\n\n\n"
        f"CHAPTER I\n\n{prose}\n\n{prose}\n\nCHAPTER II\n\n{prose}\n\n{prose}\n"
    )
    book = chapters_from_blocks(blocks_from_text(text), "The Adventures of Tom Sawyer")
    assert [c.title for c in book.chapters] == ["PREFACE", "CHAPTER I", "CHAPTER II"]
    assert book.chapters[0].paragraphs[0] == _PROSE.format(who="Tom")
    assert "S A W Y E R" not in " ".join(book.chapters[1].paragraphs)
    # a line of single capitals in a sentence is no heading: "I", "A" stay what they are
    lines = blocks_from_text(f"CHAPTER I\n\n{prose}\n\nA B C\n\n{prose}\n")
    assert "A B C" in [b.text for b in lines]


_PRELUDE_VERSE = (
    "LO, praise of the prowess of people-kings\nof spear-armed Danes, in days long sped,\n"
    "we have heard, and what honor the athelings won!\nOft Scyld the Scefing from squadroned "
    "foes,\nfrom many a tribe, the mead-bench tore,\nawing the earls. Since erst he lay\n"
    "friendless, a foundling, fate repaid him:\nfor he waxed under welkin, in wealth he throve,"
)


def test_a_prelude_in_verse_before_the_numbered_cantos_is_a_chapter_or_said() -> None:
    """Beowulf's 981.txt opens with "PRELUDE OF THE FOUNDER OF THE DANISH HOUSE", 460 words of
    verse, then cantos "I" to "XLIII": the prelude's heading was not read as one ("PRELUDE"
    only alone), and its verse, before the first heading, was left out without a word (the
    dry run counts prose there, and verse is none). A prelude "of" or "to" something heads a
    chapter; verse left out before the first heading is counted in what was left out."""
    cantos = "".join(
        f"{n}\n\n{_PRELUDE_VERSE}\n\n{_PRELUDE_VERSE}\n\n\n" for n in ("I", "II", "III")
    )
    prelude = f"{_PRELUDE_VERSE}\n\n{_PRELUDE_VERSE}"
    text = (
        f"BEOWULF\n\n\n\nPRELUDE OF THE FOUNDER OF THE DANISH HOUSE\n\n\n{prelude}\n\n\n\n{cantos}"
    )
    book = chapters_from_blocks(blocks_from_text(text), "Beowulf")
    assert [c.title for c in book.chapters] == [
        "PRELUDE OF THE FOUNDER OF THE DANISH HOUSE", "I", "II", "III",
    ]  # fmt: skip
    assert book.chapters[0].paragraphs[0].startswith("LO, praise")
    untitled = chapters_from_blocks(blocks_from_text(f"BEOWULF\n\n\n{prelude}\n\n\n\n{cantos}"))
    assert [c.title for c in untitled.chapters] == ["I", "II", "III"]
    assert untitled.dropped == [
        f"{len(prelude.split())} words before the first heading (front matter)"
    ]


def test_a_named_section_right_under_the_books_title_heads_a_chapter() -> None:
    """Beowulf's bwulf10.txt and bwulf11.txt set "BEOWULF" on the line right over "PRELUDE OF
    THE FOUNDER OF THE DANISH HOUSE", no blank line between: the prelude's heading, not
    standing alone, was none, and its verse was left out before the first canto."""
    cantos = "".join(
        f"{n}\n\n{_PRELUDE_VERSE}\n\n{_PRELUDE_VERSE}\n\n\n" for n in ("I", "II", "III")
    )
    prelude = f"{_PRELUDE_VERSE}\n\n{_PRELUDE_VERSE}"
    text = f"BEOWULF\nPRELUDE OF THE FOUNDER OF THE DANISH HOUSE\n\n{prelude}\n\n\n\n{cantos}"
    book = chapters_from_blocks(blocks_from_text(text), "Beowulf")
    assert [c.title for c in book.chapters][:2] == [
        "PRELUDE OF THE FOUNDER OF THE DANISH HOUSE",
        "I",
    ]
    assert book.chapters[0].words == len(prelude.split())


def test_html_cantos_numbered_in_paragraphs_of_their_own_are_chapters(tmp_path: Path) -> None:
    """Beowulf's HTML (981-h.htm) numbers its cantos in paragraphs of their own, "<p>I</p>" to
    "<p>XLIII</p>", under its one heading, the prelude's: the whole poem was one chapter, where
    the text edition finds 42. Paragraphs that are numbers alone and count up from one, a
    canto's length apart, head chapters; a poem's stanza numbers, lines apart, do not."""
    canto = "<p>" + "<br/>".join(_PRELUDE_VERSE.split("\n")) + "</p>"
    cantos = "".join(f"<p>{n}</p>{canto}{canto}{canto}" for n in ("I", "II", "III"))
    markup = (
        "<html><head><title>Beowulf</title></head><body><h1>BEOWULF</h1>"
        f"<h3>BEOWULF<br/><br/>PRELUDE OF THE FOUNDER OF THE DANISH HOUSE</h3>{canto}{canto}"
        f"{cantos}</body></html>"
    )
    source = tmp_path / "beowulf.htm"
    source.write_text(markup, encoding="utf-8")
    book = read_book(source)
    assert [c.title for c in book.chapters] == [
        "PRELUDE OF THE FOUNDER OF THE DANISH HOUSE", "I", "II", "III",
    ]  # fmt: skip
    # a poem's stanzas numbered inside a chapter of prose stay its lines
    prose = f"<p>{_PROSE.format(who='Wiglaf')}</p>"
    stanzas = "".join(
        f"<p>{n}</p><p>Hwaet, the hall<br/>was high and fair,<br/>gold-bright.</p>"
        for n in ("I", "II", "III")
    )
    source.write_text(
        f"<html><body><h2>CHAPTER I</h2>{prose}{stanzas}{prose}"
        f"<h2>CHAPTER II</h2>{prose}</body></html>",
        encoding="utf-8",
    )
    assert [c.title for c in read_book(source).chapters] == ["CHAPTER I", "CHAPTER II"]


def test_an_html_contents_entry_of_a_linked_number_over_its_title_is_no_heading(
    tmp_path: Path,
) -> None:
    """Tom Sawyer's old p8.htm lists its chapters in paragraphs, each a link to the chapter's
    number over its title ("<a href="#c32">CHAPTER XXXII.</a><br>Tom tells the Story of their
    Escape"): the first, two lines, was read as a heading (a division's number over its title),
    and the entries under it, one of 27 words, made a chapter "CHAPTER XXXII: Tom tells ..."
    before the real CHAPTER XXXII. A number that links to a place further on is a contents
    entry; a chapter's own number over its title, or one linking back to the contents, heads."""
    prose = f"<p>{_PROSE.format(who='Tom')}</p>"
    markup = (
        '<html><body><h1>THE ADVENTURES OF TOM SAWYER</h1><a name="toc"></a><h2>CONTENTS</h2>'
        '<table><tr><td><p><a href="#c32">CHAPTER XXXII.</a><br>\nTom tells the Story of their '
        "Escape\n<br>&mdash;Tom's Enemy in Safe Quarters</p>"
        '<p><a href="#c33">CHAPTER XXXIII.</a><br>\nThe Fate of Injun Joe&mdash;Huck and Tom '
        "Compare Notes\n<br>&mdash;An Expedition to the Cave&mdash;Protection Against Ghosts\n"
        '<br>&mdash;"An Awful Snug Place"&mdash;A Reception at the Widow Douglas\'s</p>'
        "</td></tr></table>"
        f'<a name="c32"></a><h2>CHAPTER XXXII</h2>{prose}{prose}'
        f'<a name="c33"></a><p><a href="#toc">CHAPTER XXXIII.</a><br>The Fate of Injun Joe</p>'
        f"{prose}{prose}</body></html>"
    )
    source = tmp_path / "p8.htm"
    source.write_text(markup, encoding="utf-8")
    book = read_book(source)
    assert [c.title for c in book.chapters] == [
        "CHAPTER XXXII",
        "CHAPTER XXXIII: The Fate of Injun Joe",
    ]
    assert all(c.paragraphs == [_PROSE.format(who="Tom")] * 2 for c in book.chapters)


def test_an_html_note_that_is_all_one_link_to_another_page_is_not_story(tmp_path: Path) -> None:
    """Huckleberry Finn's relative.htm sets, under its title page's headings, the editor's note
    "LINK TO THE ORIGINAL HTML FILE: This eBook has been reformatted for better appearance in
    Mobile Viewers ..." as one link to the original edition's page: 47 words, it was the first
    chapter, "ADVENTURES: OF: HUCKLEBERRY FINN: (Tom Sawyer's Comrade): Complete". Text that is
    all a link to another page is the edition's; a link to a place in the book, or a few words
    linked in a paragraph of the story, leave the paragraph story."""
    prose = f"<p>{_PROSE.format(who='Huck')}</p>"
    linked = _PROSE.format(who='<a href="https://en.wikipedia.org/wiki/Huck">Huck</a>')
    markup = (
        "<html><body><pre>Title: Adventures of Huckleberry Finn, Complete</pre>"
        "<h1>ADVENTURES<br /> <br /> OF<br /> <br /> HUCKLEBERRY FINN</h1>"
        "<h3>(Tom Sawyer's Comrade)</h3><h2>By Mark Twain</h2><p><br /></p><h2>Complete</h2>"
        '<div class="mynote"><i><a href="http://www.gutenberg.org/files/76/old/orig76-h/main.htm">'
        "\nLINK TO THE ORIGINAL HTML FILE: This\neBook has been reformatted for better "
        "appearance in Mobile Viewers\nsuch as Kindles and others. The original format, which "
        "the editor\nbelieves has a more attractive appearance for laptops and other\ncomputers,"
        " may be viewed by clicking on this\nbox.</a></i>\n</div>"
        '<h2>CONTENTS.</h2><p><a href="#c1">CHAPTER I.</a><br /> Civilizing Huck.&mdash;Miss '
        'Watson.<br /> <br /> <a href="#c2">CHAPTER II.</a><br /> The Boys Escape Jim.</p>'
        f'<h2>EXPLANATORY</h2>{prose}<a name="c1"></a><h2>CHAPTER I.</h2>{prose}<p>{linked}</p>'
        f'<a name="c2"></a><h2>CHAPTER II.</h2>{prose}</body></html>'
    )
    source = tmp_path / "relative.htm"
    source.write_text(markup, encoding="utf-8")
    book = read_book(source)
    assert [c.title for c in book.chapters] == ["EXPLANATORY", "CHAPTER I.", "CHAPTER II."]
    assert book.chapters[1].paragraphs == [_PROSE.format(who="Huck")] * 2


def test_an_html_letters_heading_set_as_a_paragraph_heads_its_letter(tmp_path: Path) -> None:
    """Evelina's HTML (6053-h.htm) heads its letters "<h2>LETTER XXXIII - EVELINA IN
    CONTINUATION May 13th.</h2>", but three of them as a paragraph or preformatted text
    ("<p>LETTER XL - EVELINA TO THE REV. MR. VILLARS London, June 6.</p>"): those letters ran
    on in the letter before (XXXIII had 8,700 words). A paragraph that opens with a division's
    number, a dash and a title in capitals, and is as short as a heading, is one."""
    letters = [
        "<h2>LETTER XXXIII - EVELINA IN CONTINUATION May 13th.</h2>",
        '<pre xml:space="preserve">\nLETTER XXXIV - EVELINA IN CONTINUATION\n'
        " Howard Grove, May 15.\n</pre>",
        "<p>LETTER XXXV - EVELINA TO THE REV. MR. VILLARS London,\n June 6.</p>",
        "<h2>LETTER XXXVI - MR. VILLARS TO EVELINA</h2>",
    ]
    body = "".join(f"{head}<p>{_PROSE.format(who='Evelina')}</p>" for head in letters)
    source = tmp_path / "evelina.htm"
    source.write_text(f"<html><body>{body}<p>Letter I was long.</p></body></html>", "utf-8")
    assert [c.title for c in read_book(source).chapters] == [
        "LETTER XXXIII - EVELINA IN CONTINUATION May 13th",
        "LETTER XXXIV - EVELINA IN CONTINUATION Howard Grove, May 15.",
        "LETTER XXXV - EVELINA TO THE REV. MR. VILLARS London, June 6.",
        "LETTER XXXVI - MR. VILLARS TO EVELINA",
    ]


def test_a_books_summary_label_with_no_title_under_it_is_not_its_title() -> None:
    """Pope's Odyssey (3160.txt) heads most books "BOOK V." / "ARGUMENT" / "THE DEPARTURE OF
    ULYSSES FROM CALYPSO" over the summary, but seven "BOOK VI." / "ARGUMENT." over the summary
    alone: that label, with its stop, was read as the book's title ("BOOK VI: ARGUMENT", as
    chapters titled by a line with a stop under their number are). The label is never a
    title; with none under it, the book is its number."""
    summary = _PROSE.format(who="Pallas")
    verse = "\n".join(textwrap.wrap(_PROSE.format(who="Ulysses"), 40))
    titled = f"ARGUMENT\n\nTHE DEPARTURE OF ULYSSES FROM CALYPSO.\n\n{summary}\n\n\n{verse}\n\n\n"
    untitled = f"ARGUMENT.\n\n{summary}\n\n\n{verse}\n\n\n"
    numbers = ("V", "VI", "VII", "VIII", "IX")
    text = "".join(f"BOOK {n}.\n\n{titled if n == 'V' else untitled}" for n in numbers)
    book = chapters_from_blocks(blocks_from_text(text))
    assert [c.title for c in book.chapters] == [
        "BOOK V: THE DEPARTURE OF ULYSSES FROM CALYPSO", "BOOK VI", "BOOK VII", "BOOK VIII",
        "BOOK IX",
    ]  # fmt: skip


def test_an_epubs_own_contents_page_linking_its_documents_is_left_out(tmp_path: Path) -> None:
    """Tom Sawyer's EPUB (GITenberg's epub/) has a contents document of its own whose entries
    link the book's other documents ("<p><a href="Preface.xhtml">Preface</a></p>", "<p><a
    href="Chapter-01.xhtml">Chapter I</a>: Y-o-u-u Tom - ...</p>"): only links to "#places"
    counted as the book's own, so "Preface" read as a heading, and the 35 chapters' summaries
    became a first chapter of 530 words, "Preface", before the real one. A link to one of the
    book's documents is a link to a place in the book."""
    book = epub.EpubBook()
    book.set_identifier("sawyer-test")
    book.set_title("The Adventures of Tom Sawyer")
    book.set_language("en")
    prose = "".join(f"<p>{_PROSE.format(who='Tom')}</p>" for _ in range(2))
    documents = []
    for name, heading in (("Preface.xhtml", "PREFACE"), ("Chapter-01.xhtml", "CHAPTER I")):
        item = epub.EpubHtml(title=heading.title(), file_name=name, lang="en")
        item.content = f"<h1>{heading}</h1>{prose}"
        documents.append(item)
    entries = "".join(
        f'<p><a href="Chapter-01.xhtml">Chapter I</a>: {summary}</p>'
        for summary in (
            "Y-o-u-u Tom - Aunt Polly Decides upon her Duty - Tom Practices Music - The "
            "Challenge - A Private Entrance - and a great many other things besides that",
        )
    )
    contents = epub.EpubHtml(title="Contents", file_name="Contents.xhtml", lang="en")
    contents.content = f'<h1>Contents</h1><p><a href="Preface.xhtml">Preface</a></p>{entries}'
    for item in (contents, *documents):
        book.add_item(item)
    book.toc = documents
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = [contents, *documents]
    path = tmp_path / "sawyer.epub"
    epub.write_epub(str(path), book)
    found = read_book(path)
    assert [c.title for c in found.chapters] == ["PREFACE", "CHAPTER I"]


def test_an_illustrations_caption_is_not_story(tmp_path: Path) -> None:
    """Tom Sawyer's EPUB sets its pictures with their captions, "<div class="illustration"><img
    .../><p>AUNT POLLY BEGUILED.</p></div>", in the chapter: 160 captions read as paragraphs
    of the story (the text edition's "[Illustration: ...]" markers are left out). A figure's
    text, in a <figure> or a <div> whose class names an illustration or a figure, is none."""
    prose = f"<p>{_PROSE.format(who='Tom')}</p>"
    figures = (
        '<div class="illustration"><img src="a.jpg" alt=""/><p>AUNT POLLY BEGUILED.</p></div>'
        '<div class="figcenter"><div><img src="b.jpg"/></div><p class="caption">A GOOD '
        "OPPORTUNITY.</p></div>"
        '<figure><img src="c.jpg"/><figcaption>TOM AT THE FENCE.</figcaption></figure>'
    )
    source = tmp_path / "sawyer.htm"
    source.write_text(
        f"<html><body><h2>CHAPTER I</h2>{prose}{figures}{prose}<h2>CHAPTER II</h2>{prose}"
        "</body></html>",
        encoding="utf-8",
    )
    chapters = read_book(source).chapters
    assert [c.title for c in chapters] == ["CHAPTER I", "CHAPTER II"]
    assert chapters[0].paragraphs == [_PROSE.format(who="Tom")] * 2


def test_an_html_paragraph_of_the_books_title_over_a_named_section_heads_it(
    tmp_path: Path,
) -> None:
    """Beowulf's bwulf11h.htm sets "<p>BEOWULF<br />PRELUDE OF THE FOUNDER OF THE DANISH
    HOUSE</p>" over the prelude, as its text edition sets the two lines: the prelude ran on in
    the section before, the Gutenberg header's, and was left out with it as the licence. A
    paragraph of two or three lines in capitals whose last names a section is headings."""
    canto = "<p>" + "<br/>".join(_PRELUDE_VERSE.split("\n")) + "</p>"
    cantos = "".join(f"<p>{n}</p>{canto * 3}" for n in ("I", "II", "III"))
    markup = (
        "<html><head><title>Beowulf</title></head><body><h1>Beowulf, by Anonymous</h1>"
        "<p>The Project Gutenberg Etext of Beowulf. Copyright laws are changing all over the "
        "world, be sure to check the laws for your country before posting these files!!</p>"
        "<p>BEOWULF<br/>Translated by Gummere</p>"
        f"<p>BEOWULF<br />PRELUDE OF THE FOUNDER OF THE DANISH HOUSE</p>{canto * 3}{cantos}"
        "</body></html>"
    )
    source = tmp_path / "bwulf11h.htm"
    source.write_text(markup, encoding="utf-8")
    book = read_book(source)
    assert [c.title for c in book.chapters] == [
        "PRELUDE OF THE FOUNDER OF THE DANISH HOUSE", "I", "II", "III",
    ]  # fmt: skip


def test_a_part_named_by_its_ordinal_over_titled_chapters_is_no_line_of_the_story() -> None:
    """Siddhartha's 2500.txt groups its titled chapters "FIRST PART" and "SECOND PART", each
    over a dedication ("Dedicated to Wilhelm Gundert, my cousin in Japan"): the part's name and
    the dedication were the last two paragraphs of the chapter before ("AWAKENING"). A part
    named by its ordinal, alone on its line, heads its part (with no prose, left out)."""
    prose = "\n".join(textwrap.wrap(_PROSE.format(who="Siddhartha"), 66))
    body = "\n\n".join([prose] * 7)
    titles = ("THE SON OF THE BRAHMAN", "WITH THE SAMANAS", "AWAKENING", "KAMALA", "OM")
    chapters = [f"{title}\n\n\n{body}\n\n\n\n\n" for title in titles]
    text = (
        "SIDDHARTHA\n\nAn Indian Tale\n\nby Hermann Hesse\n\n\n\n\nFIRST PART\n\n"
        f"To Romain Rolland, my dear friend\n\n\n\n\n{''.join(chapters[:3])}SECOND PART\n\n"
        f"Dedicated to Wilhelm Gundert, my cousin in Japan\n\n\n\n\n{''.join(chapters[3:])}"
    )
    book = chapters_from_blocks(blocks_from_text(text), "Siddhartha")
    assert [c.title for c in book.chapters] == list(titles)
    assert book.chapters[2].paragraphs == [_PROSE.format(who="Siddhartha")] * 7


def test_a_note_mark_of_a_number_and_a_letter_in_braces_is_not_story() -> None:
    """Beowulf's text and HTML editions mark their notes "{0a}", "{1b}" ("Famed was this
    Beowulf: {0a} far flew the boast of him"): 123 marks stayed in the story (and in the
    sources the site quotes), where "{12}" goes. A note's number with a letter is one too."""
    verse = _PRELUDE_VERSE.replace("he lay\n", "he lay {0a}\n").replace("tore,\n", "tore,{0b}\n")
    cantos = "".join(f"{n}\n\n{verse}\n\n{verse}\n\n\n" for n in ("I", "II", "III"))
    book = chapters_from_blocks(blocks_from_text(cantos))
    text = " ".join(p for c in book.chapters for p in c.paragraphs)
    assert "{0" not in text
    assert "Since erst he lay\nfriendless" in text and "the mead-bench tore,\nawing" in text


def test_an_html_notes_own_braced_label_stays_with_its_note(tmp_path: Path) -> None:
    """Beowulf's 981-h.htm links each mark to its note and each note back to its mark; the note
    opens with its label ("{0a} Not, of course, Beowulf the Great"), which the text edition keeps
    in the reference file: the HTML edition's reference file lost all 123 labels, so no note
    could be found from its mark. A mark after a word is the prose's and goes; a note's label
    opening its paragraph is kept."""
    stanza = _PRELUDE_VERSE.replace("he lay\n", 'he lay <a href="#linkfootnote0a">{0a}</a>\n')
    canto = "<p>" + "<br/>".join(stanza.split("\n")) + "</p>"
    cantos = "".join(f"<p>{n}</p>{canto}{canto}{canto}" for n in ("I", "II", "III"))
    markup = (
        "<html><head><title>Beowulf</title></head><body><h1>BEOWULF</h1>"
        f"<h3>PRELUDE OF THE FOUNDER OF THE DANISH HOUSE</h3>{canto}{canto}{cantos}"
        '<h3>Footnotes:</h3><p>\n      <a name="linkfootnote0a" id="linkfootnote0a"></a>'
        '<a href="#linkcitation0a">{0a}</a>\n      Not, of course, Beowulf the Great, hero of '
        "the epic.\n    </p></body></html>"
    )
    source = tmp_path / "beowulf.htm"
    source.write_text(markup, encoding="utf-8")
    book = read_book(source)
    assert "{0a}" not in " ".join(p for c in book.chapters for p in c.paragraphs)
    assert [c.paragraphs for c in book.reference] == [
        ["{0a} Not, of course, Beowulf the Great, hero of the epic."]
    ]


def test_a_title_page_set_in_headings_over_an_inscription_is_left_out(tmp_path: Path) -> None:
    """Evelina's HTML sets its title page in headings ("EVELINA", "or", "THE HISTORY OF A YOUNG
    LADY'S ENTRANCE INTO THE WORLD", "1778", "By Fanny Burney") right over "ORIGINAL
    INSCRIPTION: TO DR. BURNEY", a poem to the author's father: its first chapter was "or: THE
    HISTORY OF ...: 1778: ORIGINAL INSCRIPTION: TO DR. BURNEY", and its original dedication a
    chapter too, where the text edition leaves both out. Before the first chapter, a byline ends
    the title page over the heading; an inscription or an original dedication is front matter."""
    poem = "<p>" + "<br/>".join(_PRELUDE_VERSE.split("\n")) + "</p>"
    prose = f"<p>{_PROSE.format(who='Evelina')}</p>"
    markup = (
        "<html><body><h1>EVELINA</h1><h3>or</h3>"
        "<h2>THE HISTORY OF A YOUNG LADY’S ENTRANCE INTO THE WORLD</h2><h3>1778</h3>"
        "<h3>By Fanny Burney</h3><h2>ORIGINAL INSCRIPTION: TO DR. BURNEY</h2>"
        f"{poem}{poem}<h2>ORIGINAL DEDICATION.</h2><h3>TO THE AUTHORS OF THE MONTHLY AND "
        f"CRITICAL REVIEWS.</h3>{prose}<h2>ORIGINAL PREFACE.</h2>{prose}"
        f"<h2>LETTER I - LADY HOWARD TO THE REV. MR. VILLARS</h2>{prose}{prose}"
        f"<h2>LETTER II - MR. VILLARS TO LADY HOWARD</h2>{prose}{prose}</body></html>"
    )
    source = tmp_path / "evelina.htm"
    source.write_text(markup, encoding="utf-8")
    book = read_book(source)
    assert [c.title for c in book.chapters] == [
        "ORIGINAL PREFACE",
        "LETTER I - LADY HOWARD TO THE REV. MR. VILLARS",
        "LETTER II - MR. VILLARS TO LADY HOWARD",
    ]
    # the rest of the book's own title under its byline is still the title page's
    # (Huckleberry Finn's "ADVENTURES", "OF", "HUCKLEBERRY FINN", "By Mark Twain", "Complete")
    source.write_text(
        "<html><body><pre>Title: Adventures of Huckleberry Finn, Complete</pre>"
        "<h1>ADVENTURES</h1><h2>OF</h2><h1>HUCKLEBERRY FINN</h1><h2>By Mark Twain</h2>"
        f"<h3>Complete</h3>{prose}<h2>CHAPTER I.</h2>{prose}<h2>CHAPTER II.</h2>{prose}"
        "</body></html>",
        encoding="utf-8",
    )
    assert "Complete" not in [c.title for c in read_book(source).chapters]


_COUPLETS = (
    "The man for wisdom's various arts renown'd,\n"
    "Long exercised in woes, O Muse! resound;\n"
    "Who, when his arms had wrought the destined fall\n"
    "Of sacred Troy, and razed her heaven-built wall,\n"
    "Wandering from clime to clime, observant stray'd,\n"
    "Their manners noted, and their states survey'd,\n"
    "On stormy seas unnumber'd toils he bore,\n"
    "Safe with his friends to gain his natal shore:"
)


def test_heroic_couplets_beside_a_prose_summary_keep_their_lines() -> None:
    """Pope's Odyssey (3160.txt) opens each book with its argument in prose, then verse whose
    lines run to 60 characters ("Wandering from clime to clime, observant stray'd,"): read as
    wrapped prose, each verse paragraph became one line, every line's capital a capital in
    mid-sentence, and the offline annotator made names of them ("Conceal'd", "And Jove"). A
    paragraph of six lines or more, each opening with a capital and none over 60 characters,
    is verse, and keeps them; wrapped prose, whose lines open in lower case, does not."""
    summary = "\n".join(textwrap.wrap(_PROSE.format(who="Minerva") * 2, 70))
    text = "".join(
        f"BOOK {n}.\n\nARGUMENT.\n\n{summary}\n\n\n{_COUPLETS}\n\n{_COUPLETS}\n\n\n"
        for n in ("I", "II", "III")
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert [c.title for c in book.chapters] == ["BOOK I", "BOOK II", "BOOK III"]
    assert book.chapters[0].paragraphs[2] == _COUPLETS
    assert "\n" not in book.chapters[0].paragraphs[1]  # the summary, wrapped prose


def test_a_list_of_errata_is_back_matter() -> None:
    """Ontboezemingen (24675-8.txt, 24675-h.htm) ends with "ERRATA.", the printed book's list of
    its misprints ("Pag. 6 reg. 1 staat: everen lees: leveren"): the text edition ran it on in
    its last chapter, the HTML edition made it a chapter of its own. Errata (or corrigenda) are
    reference, as an index is."""
    prose = "\n".join(textwrap.wrap(_PROSE.format(who="Gabriël"), 70))
    errata = (
        "Pag.  6 reg.  1 staat: everen     lees: leveren\n"
        "  »   9   »  19   »  ratelendc  »  ratelende"
    )
    text = f"I.\n\n{prose}\n\n{prose}\n\n\nII.\n\n{prose}\n\n\n\nERRATA.\n\n{errata}\n"
    book = chapters_from_blocks(blocks_from_text(text))
    assert [c.title for c in book.chapters] == ["I", "II"]
    assert [c.title for c in book.reference] == ["ERRATA"]
    assert book.chapters[1].paragraphs == [_PROSE.format(who="Gabriël")]


def test_a_plays_persons_represented_are_its_cast() -> None:
    """Macbeth's 1533.txt (the 1990s Shakespeare texts) lists its cast under "Persons
    Represented": read as nothing but words before the first act, it was left out, where a
    "DRAMATIS PERSONAE" is kept beside the story for reference."""
    speech = "FIRST WITCH.\nWhen shall we three meet again?\nIn thunder, lightning, or in rain?"
    scene = "\n\n".join([speech] * 12)
    text = (
        "MACBETH\n\nby William Shakespeare\n\n\n\n\nPersons Represented\n\n"
        "DUNCAN, King of Scotland.\nMALCOLM, his Son.\nDONALBAIN, his Son.\n\n"
        "LADY MACBETH.\nLADY MACDUFF.\n\n\n\n"
        f"ACT I.\n\nSCENE I. An open Place. Thunder and Lightning.\n\n{scene}\n\n\n\n"
        f"ACT II.\n\nSCENE I. Inverness. Court within the Castle.\n\n{scene}\n"
    )
    book = chapters_from_blocks(blocks_from_text(text), "Macbeth")
    assert [c.title for c in book.chapters] == ["ACT I", "ACT II"]
    assert [c.title for c in book.reference] == ["Persons Represented"]
    assert book.reference[0].paragraphs[0].startswith("DUNCAN, King of Scotland.")


def test_an_html_divisions_end_closes_it_and_is_not_the_next_ones_title(tmp_path: Path) -> None:
    """The 'Mind the Paint' Girl's HTML closes each act with "<h4>END OF THE FIRST ACT.</h4>"
    right over "<h3>THE SECOND ACT</h3>": the two headings ran together, and the act was titled
    "END OF THE FIRST ACT.: THE SECOND ACT". A division's end closes the division before it,
    as the text edition sets it, and is left out of its story as a line closing it (the report
    names it)."""
    prose = f"<p>{_PROSE.format(who='Lily')}</p>"
    markup = (
        f"<html><body><h3>THE FIRST ACT</h3>{prose}{prose}<h4>END OF THE FIRST ACT.</h4>"
        f"<h3>THE SECOND ACT</h3>{prose}{prose}<h4>END OF THE SECOND ACT.</h4>"
        f"<h3>THE THIRD ACT</h3>{prose}{prose}</body></html>"
    )
    source = tmp_path / "paint.htm"
    source.write_text(markup, encoding="utf-8")
    book = read_book(source)
    assert [c.title for c in book.chapters] == ["THE FIRST ACT", "THE SECOND ACT", "THE THIRD ACT"]
    assert book.chapters[0].paragraphs == [_PROSE.format(who="Lily")] * 2
    assert book.dropped == [
        "“END OF THE FIRST ACT.”, “END OF THE SECOND ACT.” (lines closing 2 chapters)"
    ]


def test_the_books_title_on_two_lines_over_the_first_chapter_is_not_its_title(
    tmp_path: Path,
) -> None:
    """The 'Mind the Paint' Girl's HTML sets the play's title again over its first act,
    "<h2>THE “MIND THE PAINT”<br>GIRL</h2>": its first act was "THE “MIND THE PAINT”: GIRL: THE
    FIRST ACT", where the book's title on one line is left out of a first chapter's title."""
    prose = f"<p>{_PROSE.format(who='Lily')}</p>"
    markup = (
        "<html><head><title>The 'Mind the Paint' Girl</title></head><body>"
        "<h2>THE “MIND THE PAINT”<br>GIRL</h2><h3>THE FIRST ACT</h3>"
        f"{prose}{prose}<h3>THE SECOND ACT</h3>{prose}{prose}</body></html>"
    )
    source = tmp_path / "paint.htm"
    source.write_text(markup, encoding="utf-8")
    assert [c.title for c in read_book(source).chapters] == ["THE FIRST ACT", "THE SECOND ACT"]
    # over bylines alone it is the title page, left out (Tristram Shandy's HTML)
    source.write_text(
        "<html><head><title>The Life and Opinions of Tristram Shandy, Gentleman</title></head>"
        "<body><h1>THE LIFE AND OPINIONS OF<br />TRISTRAM SHANDY,<br />GENTLEMAN.</h1>"
        f"<h2>By Laurence Sterne</h2>{prose}<h2>Chapter 1.I.</h2>{prose}{prose}"
        f"<h2>Chapter 1.II.</h2>{prose}{prose}</body></html>",
        encoding="utf-8",
    )
    assert [c.title for c in read_book(source).chapters] == ["Chapter 1.I.", "Chapter 1.II."]


def test_a_named_section_in_italics_heads_its_section_in_plain_text() -> None:
    """The 'Mind the Paint' Girl's 21849.txt heads its cast "_The Persons of the Play_": the
    marks kept it from being read as the cast's heading, and the cast and the programme's
    advertisements under it were the play's first chapter, titled with its title page's
    '"MIND THE PAINT"'. A section's name in italics is its name."""
    speech = "\n".join(textwrap.wrap(_PROSE.format(who="LILY. Mr. Roper"), 70))
    act = "\n\n".join([speech] * 8)
    text = (
        '  THE\n\n  "MIND THE PAINT"\n\n             GIRL\n\n\n\n'
        "_The Persons of the Play_\n\n  VISCOUNT FARNCOMBE\n  LIONEL ROPER\n  SAM DE CASTRO\n\n"
        "_The action of the piece takes place in London-- at LILY PARRADELL'S\nhouse in "
        "Bloomsbury, in the foyer of the Pandora Theatre, and again at\nLILY'S house._\n\n\n\n"
        + "".join(f"  THE {n} ACT\n\n\n{act}\n\n\n\n" for n in ("FIRST", "SECOND", "THIRD"))
    )
    book = chapters_from_blocks(blocks_from_text(text), "The 'Mind the Paint' Girl")
    assert [c.title for c in book.chapters] == ["THE FIRST ACT", "THE SECOND ACT", "THE THIRD ACT"]
    assert [c.title for c in book.reference] == ["The Persons of the Play"]


def test_the_end_over_the_publishers_catalogue_ends_the_story(tmp_path: Path) -> None:
    """The Little Colonel's Hero's HTML sets "THE END." right over the headings of its
    publisher's catalogue ("Selections from", "L.C. Page & Company's", "Books for Girls", "THE
    BLUE BONNET SERIES"): run together, they were no back matter's name, and the catalogue's
    eleven series were chapters after the story's last. A run of headings that opens with one
    is back matter, as the text edition's "THE END" on its own is."""
    prose = f"<p>{_PROSE.format(who='Lloyd')}</p>"
    series = "<p>Each one volume, cloth decorative, illustrated, per volume $1.50. A BLUE BONNET "
    series += "BOOK of the year, told by a writer who knows girls and writes of them with zest.</p>"
    markup = (
        f"<html><body><h2>CHAPTER I.<br/>HER TWELFTH BIRTHDAY</h2>{prose}{prose}"
        f"<h2>CHAPTER II.<br/>THE WONDER-BALL BEGINS TO UNWIND</h2>{prose}{prose}"
        "<h3>THE END.</h3><h4>Selections from</h4><h3>L.C. Page &amp; Company's</h3>"
        f"<h2>Books for Girls</h2><h3>THE BLUE BONNET SERIES</h3>{series}"
        f"<h3>HILDEGARDE-MARGARET SERIES</h3>{series}</body></html>"
    )
    source = tmp_path / "hero.htm"
    source.write_text(markup, encoding="utf-8")
    book = read_book(source)
    assert [c.title for c in book.chapters] == [
        "CHAPTER I: HER TWELFTH BIRTHDAY",
        "CHAPTER II: THE WONDER-BALL BEGINS TO UNWIND",
    ]
    assert [c.title for c in book.reference][-1] == "HILDEGARDE-MARGARET SERIES"


def test_an_html_edition_made_from_tei_keeps_its_line_groups_and_drops_its_page_breaks(
    tmp_path: Path,
) -> None:
    """The Iliad's 6130-h.html (made from TEI) sets each verse paragraph as a
    '<div class="tei tei-lg">' of '<div class="tei tei-l">' lines, and its page breaks as
    '<span class="tei tei-pb">[pg 003]</span>': every one of 19,620 lines was a paragraph, and
    485 page marks were story text. A line group is a stanza; a page break is not text."""
    prose = f"<p>{_PROSE.format(who='Chryses')}</p>"

    lines = [
        f'<div class="tei tei-l" style="text-align: left">\n  {line}\n</div>'
        for line in _COUPLETS.split("\n")
    ]
    page = '<span class="tei tei-pb" id="page003">[pg 003]</span>'
    group, paged = "".join(lines), "".join([*lines[:4], page, *lines[4:]])
    body = (
        f'<p>ARGUMENT.</p>{prose}<div class="tei tei-lg">{group}</div>'
        f'<div class="tei tei-lg">{paged}</div>'
    )
    markup = f"<html><body><h1>BOOK I.</h1>{body}<h1>BOOK II.</h1>{body}</body></html>"
    source = tmp_path / "iliad.html"
    source.write_text(markup, encoding="utf-8")
    book = read_book(source)
    assert [c.title for c in book.chapters] == ["BOOK I.", "BOOK II."]
    assert book.chapters[0].paragraphs[-2:] == [_COUPLETS, _COUPLETS]


def test_a_plays_speaker_set_apart_opens_the_speech_under_it(tmp_path: Path) -> None:
    """The 'Mind the Paint' Girl sets each speaker over the speech as a paragraph of its own,
    "FARNCOMBE." then "I shall be delighted." in 21849.txt, '<p class="speaker">Farncombe.</p>'
    in its HTML: 1,560 of its 3,322 paragraphs were a name alone, the speech cut from who says
    it. The speaker opens the speech, as Macbeth's "THIRD WITCH. That will be ere the set of
    sun." does; in a novel, a short paragraph in capitals now and then is left as it is."""
    said = _PROSE.format(who="Smythe")
    turns = [("FARNCOMBE.", "I shall be delighted."), ("ROPER.", said)]
    act = "\n\n".join(f"{who}\n\n{speech}" for who, speech in turns * 12)
    text = "".join(f"  THE {n} ACT\n\n\n{act}\n\n\n\n" for n in ("FIRST", "SECOND", "THIRD"))
    book = chapters_from_blocks(blocks_from_text(text))
    assert [c.title for c in book.chapters] == ["THE FIRST ACT", "THE SECOND ACT", "THE THIRD ACT"]
    assert book.chapters[0].paragraphs[:2] == [
        "FARNCOMBE. I shall be delighted.",
        f"ROPER. {said}",
    ]
    speech = "".join(
        f'<p class="speaker">{who.title()}</p><p>{speech}</p>' for who, speech in turns * 12
    )
    source = tmp_path / "paint.htm"
    source.write_text(
        "".join(f"<h3>THE {n} ACT</h3>{speech}" for n in ("FIRST", "SECOND", "THIRD")),
        encoding="utf-8",
    )
    book = read_book(source)
    assert book.chapters[0].paragraphs[:2] == [
        "Farncombe. I shall be delighted.",
        f"Roper. {said}",
    ]
    # a novel's few short paragraphs in capitals stay paragraphs
    novel = f"CHAPTER I\n\n{_PROSE.format(who='Pip')}\n\nHALLOA.\n\n{_PROSE.format(who='Joe')}\n"
    assert "HALLOA." in chapters_from_blocks(blocks_from_text(novel)).chapters[0].paragraphs


def test_a_summarys_label_over_each_book_is_no_speaker() -> None:
    """The Iliad's 6130.txt heads each book's summary "ARGUMENT.", 24 times: read as a play's
    speaker, the label was joined to the summary. One label, however often, is no dialogue."""
    summary = "\n".join(textwrap.wrap(_PROSE.format(who="Achilles"), 70))
    text = "".join(
        f"BOOK {n}.\n\nARGUMENT.\n\n{summary}\n\n\n{_COUPLETS}\n\n\n"
        for n in ("I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII") * 2
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert book.chapters[0].paragraphs[0] == "ARGUMENT."


def test_a_dictionarys_letters_are_its_sections_never_roman_numbers() -> None:
    """The Devil's Dictionary sets its letters alone on their lines, "A" to "Z": its "C", "D",
    "I" and "V" were read as Roman numbers, so only they headed chapters and every other
    letter's words ran on inside them. Letters in the alphabet's order are sections named by
    their letter; a novel's "I" to "V" are still its numbered chapters."""
    words = {
        "A": "ABASEMENT, n.  A decent and customary mental attitude.",
        "B": "BABE, n.  A misshapen creature of no particular age.",
        "C": "CABBAGE, n.  A familiar kitchen-garden vegetable.",
        "D": "DAWN, n.  The time when men of reason go to bed.",
        "E": "EAT, v.i.  To perform successively the functions of mastication.",
        "F": "FAITH, n.  Belief without evidence in what is told.",
        "I": "I is the first letter of the alphabet, the first word of the language.",
        "V": "VALOR, n.  A soldierly compound of vanity, duty and the gambler's hope.",
    }
    gloss = (
        " The lexicographer, having set it down, adds that its use among the learned is"
        " commoner than among the rest of mankind, who manage without it quite as well."
    )
    text = "\n\n\n\n".join(
        f"{letter}\n\n\n\n{entry}{gloss}\n\n{entry}{gloss}" for letter, entry in words.items()
    )
    book = chapters_from_blocks(blocks_from_text(text))
    assert [chapter.title for chapter in book.chapters] == list(words)
    assert all(len(chapter.paragraphs) == 2 for chapter in book.chapters)

    novel = "\n\n\n".join(
        f"{number}\n\n\nThe river ran on past the mill, and {number} was its chapter's number."
        f"{gloss}"
        for number in ("I", "II", "III", "IV", "V")
    )
    titles = [chapter.title for chapter in chapters_from_blocks(blocks_from_text(novel)).chapters]
    assert titles == ["I", "II", "III", "IV", "V"]


def test_an_imported_corpus_is_indexed_for_its_readers(tmp_path: Path) -> None:
    """A thread's posts, a post's tags and its links are read by index, not by a scan of the
    whole corpus (24 ms a thread on an imported Les Misérables, most of a long book's
    curation)."""
    source = tmp_path / "harbour.txt"
    source.write_text(
        "\n\n".join(f"CHAPTER {n}\n\n{_PROSE.format(who='Maren Quist')}" for n in ("I", "II")),
        encoding="utf-8",
    )
    out = tmp_path / "h.db"
    assert _import(source, out) == ["CHAPTER I", "CHAPTER II"]
    with sqlite3.connect(out) as conn:
        plans = {
            sql: " ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", (1,)))
            for sql in (
                "SELECT id FROM post WHERE thread_id = ? ORDER BY time, id",
                "SELECT name FROM tag WHERE post_id = ?",
                "SELECT link_to FROM link WHERE link_from = ?",
                "SELECT link_from FROM link WHERE link_to = ?",
            )
        }
    assert all("USING" in plan and "INDEX" in plan for plan in plans.values()), plans
