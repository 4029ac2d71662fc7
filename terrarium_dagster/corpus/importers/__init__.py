"""`terrarium import`: a book (plain text, Markdown, reStructuredText, AsciiDoc, HTML or EPUB)
as a corpus.

Chapters become threads (the chapter title is the thread's title), paragraphs become story posts
(tagged `qm_post` and `story_post`, so the agent reads them as it reads a quest master's
updates). Scenes break where the text breaks (`* * *`, `#`, `---` lines) and after about
`SCENE_WORDS` words, marked by a `scene_break` post. The book's title (the Gutenberg header's
`Title:`, the EPUB's metadata, else the file's name) is recorded in a `book` table beside the
corpus schema, so what is named after the story (the lorebook's world, the site) can say it.

Every format becomes one stream of blocks (headings and paragraphs), and one set of rules keeps
the story and drops the rest:

- a Project Gutenberg header and footer of any era: the text between the last start marker
  (`*** START OF THE/THIS PROJECT GUTENBERG EBOOK`, the 1990s `*END*THE SMALL PRINT!`) and the
  first end marker (`*** END OF ...`, "End of Project Gutenberg's ...", "End of the Project
  Gutenberg EBook/Etext of ...", `*** START: FULL LICENSE`), so the licence goes too;
- `[Illustration]` and `[Illustration: ...]` (and `[Frontispiece: ...]`, `[Picture: ...]`)
  markers and a caption set again as a paragraph right under its marker, a picture's
  "Enlarge" link standing alone or after a bracketed line, and soft hyphens;
- note marks ("Pangloss[1]", "{12}", "(3)", and "[5]" set apart when the book gives its
  "[Footnote 5: ...]"), a drop cap's mark ("|MRS. Rachel"), the word that ends the book after
  its last paragraph ("FINIS", as "THE END");
- front matter before the first heading (title page, dedication, producer credits; the dry run
  says how many words), unless the first heading is the story's second part ("II") and the text
  before it is story (`OPENING_WORDS`): then it is the first chapter; or it is story under no
  heading at all (`PROLOGUE_WORDS`): then it is the "Prologue";
- contents pages and lists of illustrations (a section so named, or one with no prose: only
  short lines, a table; stanzas are a poem, kept);
- front matter under its own heading (copyright, dedication, epigraph, acknowledgements, "also
  by", a title page's publication line or year: "Published March, 1909.", "MCMIX"; the dry run
  says how many words), unless the heading is a title page's line over story told under no
  heading of its own (`PROLOGUE_WORDS`): then it is the "Prologue";
- back matter (a glossary or a vocabulary, an appendix, an index, notes, a transcriber's note,
  and what follows them that is not a numbered chapter) and lists such as a dramatis personae
  or a map: never story; kept aside as the book's reference text (`Book.reference`, written
  beside the corpus as `<corpus>.reference.md`).

Headings: in plain text, a line standing alone that reads "CHAPTER I" / "Chapter 12" / "BOOK II"
(with its title on the same or the next line), a number or Roman numeral alone or before a
title ("IV.", "12. The Salt Road", "01 My Early Home"; not a page's running head; set in
decoration, "— I —" and "[ 1 ]", when the book sets its numbers so), or a named
section (FOREWORD, PROLOGUE, EPILOGUE, ...); not paragraphs that open with consecutive numbers
less than a paragraph apart (a numbered list), nor a number over a line with no letter; and
before the first numbered chapter, a title standing alone that the contents page lists. A book
without such headings is split at bare capitalised titles standing alone ("THE SISTERS"): those
its contents page lists (in any case,
at the margin or centred), or, without a contents page, every such line, or, with none, titles
in capitals or title case centred on the page, three at least ("STORY OF THE DOOR", "Story of
the Door"). In Markdown, ATX and setext headings; in AsciiDoc (`book.asciidoc` in GITenberg's
repositories), its section titles (`==`, or a line underlined); in an EPUB, its heading
elements and its navigation (the table of contents names the places chapters begin).
Consecutive headings make one title ("CHAPTER I: ON THE ARIZONA HILLS"), starting from the
chapter's number when a book title precedes it. A foreword or prologue is a chapter like any
other: front-matter prose that is story is kept. A place in another book cited as a heading
("Book I, Ch. 15.") and a signature over its place and date ("JOHN DRINKWATER.", then
"London," and "Midsummer 1921.") head nothing. A play's acts are its chapters and its numbered
scenes ("SCENE II. A Camp near Forres.", the first one's heading too) its scenes, each
scene's heading its first line; a contents page's line listing an act's scenes ("ACT III
Scene I. A room in the Castle. Scene II. ...") heads nothing; a play told inside a novel's
chapter (its cast, "ACT I." to "ACT III.") is part of that chapter. In a book whose numbering
starts again at "I." under its pieces' titles, each part is named with its piece ("EEN EERSTE
STORM: I").

A file it cannot read is an `InputError` naming the problem, and nothing is written.
`read_book` does the reading alone (`terrarium import --dry-run` prints what it found).

The package, each module importing only those before it: `model` (blocks, chapters, the book),
`gutenberg` (the wrapping), `headings` (what a heading looks like), `marks` (note and emphasis
marks), `prose` (prose or verse), `text_headings` and `plain_text` (plain text), `markup`
(Markdown, reStructuredText, AsciiDoc), `decoding` (a text file's encoding), `xhtml` (HTML and
EPUB), `heading_runs` and `chapters` (from blocks to chapters), `writing` (the corpus file); and
here the entry points, `read_book` and `import_book`.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import stat
import sys
import tempfile
from pathlib import Path

from terrarium_dagster.corpus.book_files import BOOK_FORMATS, format_of
from terrarium_dagster.corpus.importers.chapters import chapters_from_blocks
from terrarium_dagster.corpus.importers.decoding import decoded
from terrarium_dagster.corpus.importers.gutenberg import gutenberg_title
from terrarium_dagster.corpus.importers.markup import (
    blocks_from_asciidoc,
    blocks_from_markdown,
    blocks_from_rst,
)
from terrarium_dagster.corpus.importers.model import Block, Book, Chapter, ImportReport
from terrarium_dagster.corpus.importers.plain_text import blocks_from_text
from terrarium_dagster.corpus.importers.prose import as_prose, is_verse, prose_words
from terrarium_dagster.corpus.importers.writing import (
    reference_path,
    reference_text,
    refuse_replacing_what_is_not_a_corpus,
    same_corpus,
    title_from_name,
    write_corpus,
)
from terrarium_dagster.corpus.importers.xhtml import blocks_from_epub, blocks_from_html
from terrarium_dagster.errors import InputError

__all__ = ["Book", "Chapter", "ImportReport", "import_book", "is_stream", "read_book"]

# This much prose in a book whose headings leave no chapter of story is one chapter of it
# (The Tale of Peter Rabbit: 651 words), not a page of notes (a folder's README)
STORY_UNDER_HEADINGS_WORDS = 500


#: What an EPUB (a ZIP archive) and an HTML page begin with, read from a pipe.
_ZIP_MAGIC = b"PK\x03\x04"
_HTML_START = re.compile(rb"\A(?:\xef\xbb\xbf)?\s*<(?:!doctype\s+html|html|\?xml)", re.IGNORECASE)


def is_stream(path: Path) -> bool:
    """Whether `path` names a stream to read once, not a file: `-` (standard input), or a pipe
    or a device such as /dev/stdin (`cat book.txt | terrarium import /dev/stdin`)."""
    if str(path) == "-":
        return True
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def read_book(path: Path, *, format: str | None = None) -> Book:
    """The book at `path`: its chapters of story, its title and what was set aside. `format`
    (a key of `BOOK_FORMATS`) says how to read it, else the file's suffix does; a stream
    (`is_stream`) is read once, and without `format` an EPUB or an HTML page is told by its
    first bytes, anything else is read as plain text and a note says so."""
    if is_stream(path):
        return _read_stream(path, format)
    if path.is_dir():
        raise InputError(
            f"{path} is a folder: give the book's file (.txt, .md, .rst, .adoc, .html, .epub)"
        )
    if not path.is_file():
        raise InputError(f"no file to import at {path}")
    return _read_file(path, format or format_of(path.suffix))


def _read_stream(path: Path, format: str | None) -> Book:
    try:
        if str(path) == "-":
            if sys.stdin.isatty():  # it would wait for a book typed in
                raise InputError(
                    "`-` reads the book from standard input, which is a terminal here: pipe the "
                    "book in (cat book.txt | terrarium import - ...) or give its file"
                )
            raw = sys.stdin.buffer.read()
        else:
            with path.open("rb") as stream:
                raw = stream.read()
    except OSError as exc:
        raise InputError(f"cannot read the book from {path}: {exc.strerror or exc}") from None
    told = None
    if format is None and raw.startswith(_ZIP_MAGIC):
        format = "epub"
    elif format is None and _HTML_START.match(raw[:4096]):
        format = "html"
    elif format is None:
        format = "txt"
        told = (
            "read from a pipe as plain text; give --format md, rst, adoc, html or epub to "
            "read it as such"
        )
    name = "standard input" if str(path) == "-" else str(path)
    if not raw.strip():
        raise InputError(f"{name} gave nothing to import (an empty pipe)")
    with tempfile.TemporaryDirectory(prefix="terrarium-import-") as scratch:
        spooled = Path(scratch) / f"book{BOOK_FORMATS[format][0]}"
        spooled.write_bytes(raw)
        try:
            book = _read_file(spooled, format, shown=name)
        except InputError as exc:  # the scratch file is nothing the user gave
            raise InputError(str(exc).replace(str(spooled), name)) from None
    if told:
        book.notes.insert(0, told)
    return book


def _read_file(path: Path, format: str | None, *, shown: str | None = None) -> Book:
    """The book in the file `path`, read as `format` (a key of `BOOK_FORMATS`; None: the file
    is no book's); `shown` names it in what is said (a pipe's book is spooled to a file first)."""
    name = shown or str(path)
    named = shown or path.name  # as a note names it
    note = None
    if format == "epub":
        blocks, title = blocks_from_epub(path)
    elif format == "html":
        blocks, title, note = blocks_from_html(path, named)
    elif format == "adoc":
        text, note = decoded(path, named)
        blocks, title = blocks_from_asciidoc(text)
    elif format == "rst":
        text, note = decoded(path, named)
        blocks, title = blocks_from_rst(text)
    elif format in ("txt", "md"):
        text, note = decoded(path, named)
        title = gutenberg_title(text)
        blocks = (blocks_from_markdown if format == "md" else blocks_from_text)(text)
    else:
        raise InputError(
            f"cannot import {path.name}: give a plain-text (.txt), Markdown (.md), "
            "reStructuredText (.rst), AsciiDoc (.adoc, .asciidoc), HTML (.html) or EPUB file, "
            "or say which it is with --format"
        )
    book = chapters_from_blocks(blocks, title)
    if not book.chapters and any(is_verse(block) for block in blocks):
        # a book in verse (Paradise Lost): its stanzas are its paragraphs, read as prose is
        verse = [part for block in blocks for part in as_prose(block)]
        book = chapters_from_blocks(verse, title)
    if not book.chapters:
        # headings that leave no chapter of story (The Tale of Peter Rabbit: its title page's
        # "First published 1902" read as front matter, "THE END" as the first heading): the
        # whole text as one chapter, its headings lines of it, when it has the prose
        as_text = [Block("text", block.text, block.lines) for block in blocks]
        if prose_words(as_text) >= STORY_UNDER_HEADINGS_WORDS:
            book = chapters_from_blocks(as_text, title)
    if not book.chapters:
        raise InputError(f"{name} has no story text to import (no chapter with prose)")
    book.notes = [note] if note else []
    return book


def import_book(
    path: str | Path, out: str | Path, *, replace: bool = False, format: str | None = None
) -> ImportReport:
    """Write the book at `path` as a corpus at `out`; report what it holds. An existing `out` is
    refused (InputError, nothing written) unless `replace`, when it is replaced atomically, or
    unless it already holds this very import (the same command again): then nothing is written
    and the report says `unchanged`."""
    source, target = Path(path), Path(out)
    # a pipe's book, its title not in its text, is titled and sourced as no file's name
    named = Path("-") if is_stream(source) else source
    again = not replace and (target.exists() or target.is_symlink())
    refusal = InputError(
        f"--out {target} exists; nothing was changed; give --replace to write over it, or "
        "another file name"
    )
    if again:
        if not target.is_file() or target.is_symlink():
            raise refusal
        # an annotator store, the book, notes: named as such, not offered --replace, which
        # writes over a corpus only (the hint led to a second refusal)
        refuse_replacing_what_is_not_a_corpus(target)
    elif target.is_file():
        refuse_replacing_what_is_not_a_corpus(target)
    book = read_book(source, format=format)
    paragraphs = [p for chapter in book.chapters for p in chapter.paragraphs]
    if again:  # written aside and compared: the folder of --out is not touched
        with tempfile.TemporaryDirectory(prefix="terrarium-import-") as scratch:
            fresh = Path(scratch) / target.name
            write_corpus(fresh, book, named)
            unchanged = same_corpus(fresh, target) and _reference_as_written(target, book)
        if not unchanged:
            raise refusal
        return _report(named, target, book, paragraphs, unchanged=True)
    partial = target.with_name(f".{target.name}.partial")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        partial.unlink(missing_ok=True)
        write_corpus(partial, book, named)
        partial.replace(target)
    except BaseException as exc:  # a place the system refuses, Ctrl-C, SIGTERM: nothing left
        for leftover in (partial, *(Path(f"{partial}{end}") for end in ("-journal", "-wal"))):
            with contextlib.suppress(OSError):
                leftover.unlink(missing_ok=True)
        if not isinstance(exc, OSError | sqlite3.Error):
            raise
        reason = getattr(exc, "strerror", None) or str(exc)
        raise InputError(f"--out {target}: cannot write there: {reason}") from None
    reference = reference_path(target)
    if book.reference:
        reference.write_text(reference_text(book), encoding="utf-8")
    else:
        reference.unlink(missing_ok=True)
    return _report(named, target, book, paragraphs)


def _reference_as_written(target: Path, book: Book) -> bool:
    """Whether the back matter beside `target` is what this import of `book` writes there."""
    reference = reference_path(target)
    written = reference.read_text(encoding="utf-8") if reference.is_file() else None
    return written == (reference_text(book) if book.reference else None)


def _report(
    source: Path, target: Path, book: Book, paragraphs: list[str], *, unchanged: bool = False
) -> ImportReport:
    return ImportReport(
        path=str(target),
        chapters=len(book.chapters),
        paragraphs=len(paragraphs),
        words=sum(len(p.split()) for p in paragraphs),
        title=book.title or title_from_name(source),
        reference=str(reference_path(target)) if book.reference else None,
        sections=tuple(section.title for section in book.reference),
        left_out=tuple(book.dropped),
        notes=tuple(book.notes),
        unchanged=unchanged,
    )
