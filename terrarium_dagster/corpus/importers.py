"""`terrarium import`: a book (plain text, Markdown, HTML or EPUB) as a banished.db-schema corpus.

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
- `[Illustration]` and `[Illustration: ...]` (and `[Frontispiece: ...]`) markers;
- front matter before the first heading (title page, dedication, producer credits);
- contents pages and lists of illustrations (a section so named, or one with no prose: only
  short lines, a table);
- front matter under its own heading (copyright, dedication, epigraph, acknowledgements, "also
  by");
- back matter (a glossary, an appendix, an index, notes, a transcriber's note, and what follows
  them that is not a numbered chapter) and lists such as a dramatis personae or a map: never
  story; kept aside as the book's reference text (`Book.reference`, written beside the corpus
  as `<corpus>.reference.md`).

Headings: in plain text, a line standing alone that reads "CHAPTER I" / "Chapter 12" / "BOOK II"
(with its title on the same or the next line), a number or Roman numeral alone or before a
title ("IV.", "12. The Salt Road"), or a named section (FOREWORD, PROLOGUE, EPILOGUE, ...). A book
without such headings is split at bare capitalised titles standing alone ("THE SISTERS"): those
its contents page lists, or, without a contents page, every such line. In Markdown, ATX and
setext headings; in an EPUB, its heading elements and its navigation (the table of contents
names the places chapters begin). Consecutive headings make one title ("CHAPTER I: ON THE
ARIZONA HILLS"), starting from the chapter's number when a book title precedes it. A foreword or
prologue is a chapter like any other: front-matter prose that is story is kept.

A file it cannot read is an `InputError` naming the problem, and nothing is written.
`read_book` does the reading alone (`terrarium import --dry-run` prints what it found).
"""

from __future__ import annotations

import html
import re
import sqlite3
import warnings
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Literal

from terrarium_dagster.corpus.corpus_schema import CORPUS_SCHEMA
from terrarium_dagster.errors import InputError

SCENE_WORDS = 700
FIRST_POST_ID = 1
FIRST_TIME = 1_000_000_000
AUTHOR = "Narrator"
PROSE_WORDS = 25  # a chapter needs a paragraph this long to be story, not a table of contents
BOOK_TABLE = "CREATE TABLE book (title TEXT, source TEXT)"

# -- Project Gutenberg's wrapping, every era --------------------------------------------------

_START_MARKERS = re.compile(
    r"^\s*\*{3}\s*START OF (?:THE|THIS) PROJECT GUTENBERG"
    r"|^\s*\*+\s*END\s*\*?\s*THE SMALL PRINT",
    re.I,
)
_END_MARKERS = re.compile(
    r"^\s*\*{3}\s*END OF (?:THE|THIS) PROJECT GUTENBERG"
    r"|^\s*End of (?:the |this )?Project Gutenberg(?:'s|’s)?\b"
    r"|^\s*\*{3}\s*START:? FULL LICENSE",
    re.I,
)
_GUTENBERG_TITLE = re.compile(r"^\s*Title:\s*(.+?)\s*$", re.M)
_ILLUSTRATION = re.compile(r"\[\s*(?:Illustration|Frontispiece)\b[^\]]*\]", re.I)
_CREDIT = re.compile(
    r"^(?:produced by|prepared by|e-?text prepared by|this e-?text was prepared|transcribed "
    r"from|transcriber'?s? notes?\b)",
    re.I,
)

# -- headings ------------------------------------------------------------------------------------

_NUMBER_WORDS = (
    r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|"
    r"fifteen|sixteen|seventeen|eighteen|nineteen|twenty|the first|the second|the third|the last"
)
_DIVISIONS = (
    "CHAPTER|Chapter|BOOK|Book|PART|Part|STAVE|Stave|VOLUME|Volume|ADVENTURE|Adventure|TALE|Tale|"
    "STORY|Story|LETTER|Letter|CANTO|Canto|EPISODE|Episode"
)
_STRONG = re.compile(
    rf"^(?:{_DIVISIONS})\s+"
    rf"(?:[\dIVXLCDM]+\b|(?i:{_NUMBER_WORDS})\b).{{0,80}}$"
)
_NUMBERED = re.compile(
    r"^(?:[IVXLCDM]+|\d{1,3})\.?$"  # "IV", "12."
    r"|^(?:[IVXLCDM]+|\d{1,3})[.:]\s+[A-Z\"“‘'][^.!?]{0,70}[.]?$"  # "IV. THE RIVER BANK"
)
_STORY_SECTIONS = (
    "foreword|preface|prologue|prolog|epilogue|introduction|afterword|interlude|conclusion|"
    "postscript|envoi|author's note|a note from the author"
)
_CONTENTS_SECTIONS = "contents|table of contents|list of illustrations|illustrations"
_BACK_SECTIONS = (
    r"glossary\b.*|a glossary\b.*|appendix\b.*|appendices|index|notes|endnotes|footnotes|"
    r"bibliography|transcriber'?s? notes?|about the author|the end"
)
# Front matter that is never story (left out), and lists a reader may want beside the story
# wherever they stand (kept for reference, like back matter).
_FRONT_SECTIONS = (
    r"copyright\b.*|colophon|dedication|epigraph|title page|half[- ]title|also by\b.*|"
    r"other (?:books|works) by\b.*|acknowledge?ments?"
)
_CAST_SECTIONS = (
    r"dramatis personae|cast of characters|list of characters|characters|maps?|"
    r"(?:a )?(?:note on|guide to) pronunciation|pronunciation guide"
)
_FRONT = re.compile(rf"^(?:{_FRONT_SECTIONS})[.:]?$", re.I)
_CAST = re.compile(rf"^(?:{_CAST_SECTIONS})[.:]?$", re.I)
_ONLY_NUMBER = re.compile(
    rf"^(?:(?:{_DIVISIONS})\s+)?"
    rf"(?:[IVXLCDM]+|\d{{1,3}}|(?i:{_NUMBER_WORDS}))\.?$"
)
_NAMED = re.compile(
    rf"^(?:{_STORY_SECTIONS}|{_CONTENTS_SECTIONS}|{_BACK_SECTIONS}|{_FRONT_SECTIONS}|"
    rf"{_CAST_SECTIONS})[.:]?$",
    re.I,
)
_CONTENTS = re.compile(rf"^(?:{_CONTENTS_SECTIONS})[.:]?$", re.I)
_BACK = re.compile(rf"^(?:{_BACK_SECTIONS})[.:]?$", re.I)
_CHAPTER_NUMBER = re.compile(rf"{_STRONG.pattern}|{_NUMBERED.pattern}")
_MD_ATX = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_MD_SETEXT = re.compile(r"^(=+|-+)\s*$")
_BREAK = re.compile(r"^\s*(?:\*\s*){3,}\s*$|^\s*(?:-{3,}|_{3,}|#)\s*$")
_TABLE_LINE = re.compile(r"^\s*(?:\||\+[-=+:]+\+?$|[-=:\s|+]+$)")
_SENTENCE_END = re.compile(r"[.!?…][\"”’')\]]*(?:\s|$)")
# a contents line: a chapter's title, then its page after spaces or dot leaders
_PAGE_REFERENCE = re.compile(r"(?:\s{2,}|\.\s*\.)\s*(?:\d{1,4}|[ivxlc]{1,6})\s*$")
_BYLINE = re.compile(r"^(?:by|(?:illustrated|translated|edited|with illustrations) by)\b", re.I)


@dataclass(frozen=True)
class Block:
    """A heading or a paragraph of the book, in reading order."""

    kind: Literal["heading", "text"]
    text: str
    lines: tuple[str, ...] = ()  # the paragraph's lines where the format has them


@dataclass
class Chapter:
    title: str
    scenes: list[list[str]] = field(default_factory=lambda: [[]])

    def add(self, paragraph: str) -> None:
        words = sum(len(p.split()) for p in self.scenes[-1])
        if self.scenes[-1] and words + len(paragraph.split()) > SCENE_WORDS:
            self.scenes.append([])
        self.scenes[-1].append(paragraph)

    def scene_break(self) -> None:
        if self.scenes[-1]:
            self.scenes.append([])

    @property
    def paragraphs(self) -> list[str]:
        return [p for scene in self.scenes for p in scene]

    @property
    def words(self) -> int:
        return sum(len(p.split()) for p in self.paragraphs)

    def is_story(self) -> bool:
        return any(len(p.split()) >= PROSE_WORDS for p in self.paragraphs)


@dataclass
class Book:
    """What a file holds: its story chapters, its title, and what was set aside."""

    title: str | None
    chapters: list[Chapter]
    reference: list[Chapter] = field(default_factory=list)  # back matter, never story
    dropped: list[str] = field(default_factory=list)  # sections left out, by title


@dataclass
class ImportReport:
    path: str
    chapters: int
    paragraphs: int
    words: int
    title: str | None = None
    reference: str | None = None


# -- the story span ------------------------------------------------------------------------------


def _story_span(texts: list[str]) -> tuple[int, int]:
    """Indexes [start, end) of what lies inside Project Gutenberg's wrapping (all of it when
    there is none): after the last start marker of the first half, before the first end marker
    after it."""
    start = 0
    half = max(1, len(texts) // 2)
    for index, text in enumerate(texts[:half]):
        if _START_MARKERS.match(text):
            start = index + 1
    end = len(texts)
    for index in range(start, len(texts)):
        if _END_MARKERS.match(texts[index]):
            end = index
            break
    return start, end


def strip_gutenberg(text: str) -> str:
    """The text inside a Project Gutenberg header and footer (the whole text without them)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    start, end = _story_span(lines)
    return "\n".join(lines[start:end])


def gutenberg_title(text: str) -> str | None:
    """The `Title:` of a Project Gutenberg header, if the text has one before its story."""
    head = text[:20_000]
    marker = re.search(_START_MARKERS.pattern, head, re.I | re.M)
    match = _GUTENBERG_TITLE.search(head[: marker.start()] if marker else head)
    return " ".join(match.group(1).split()) if match else None


def _without_illustrations(text: str) -> str:
    return _ILLUSTRATION.sub("", text)


# -- plain text ----------------------------------------------------------------------------------


def _isolated(lines: list[str], index: int) -> bool:
    before = index == 0 or not lines[index - 1].strip()
    after = index + 1 >= len(lines) or not lines[index + 1].strip()
    return before and after


def _bare_capitals(raw: str) -> bool:
    """A line in capitals standing for a title: "THE SISTERS" (not "R. I. P.", not indented
    like a sign or a newspaper headline inside the story)."""
    line = raw.rstrip()
    if len(line) - len(line.lstrip()) > 4:
        return False
    text = line.strip()
    letters = [c for c in text if c.isalpha()]
    return (
        len(letters) >= 3
        and text == text.upper()
        and len(text.split()) <= 10
        and not text.endswith((".", ",", ";", ":", "!", "?"))
        and not any(c.isdigit() for c in text)
    )


def _introduced(lines: list[str], index: int) -> bool:
    """Whether the line is quoted by the prose before it ("The door said:" above "CLOSED")."""
    before = next((line.strip() for line in reversed(lines[:index]) if line.strip()), "")
    return before.endswith((":", ",", "—", "-"))


SECTION_WORDS = 200  # a chapter headed by a bare title (with no contents page) is this long


def _spaced(lines: list[str], candidates: list[int]) -> list[int]:
    """Bare capitalised lines that head chapters: each with at least `SECTION_WORDS` words
    before the next one (a book's title right above the first chapter's is not a chapter) and
    after the previous title kept (a sign or a shout inside the story, "HELP", is not)."""

    def words(start: int, stop: int) -> int:
        return sum(len(line.split()) for line in lines[start:stop])

    kept: list[int] = []
    for number, index in enumerate(candidates):
        following = candidates[number + 1] if number + 1 < len(candidates) else len(lines)
        if words(index + 1, following) < SECTION_WORDS and number + 1 < len(candidates):
            continue
        if kept and words(kept[-1] + 1, index) < SECTION_WORDS:
            continue
        kept.append(index)
    return kept if len(kept) >= 2 else []


def _contents_titles(lines: list[str]) -> set[str]:
    """The titles a contents page lists (normalised), for books headed by bare titles."""
    titles: set[str] = set()
    for index, raw in enumerate(lines):
        if not _CONTENTS.match(raw.strip()):
            continue
        blanks = 0
        for line in lines[index + 1 : index + 200]:
            if not line.strip():
                blanks += 1
                if blanks >= 3 and titles:
                    break
                continue
            blanks = 0
            entry = re.sub(r"^\s*(?:[IVXLCDM]+|\d+)[.:]?\s+", "", line.strip())
            entry = re.sub(r"\s*(?:\.\s*){2,}.*$|\s+\d+$", "", entry)  # dot leaders, pages
            if entry:
                titles.add(_title_key(entry))
        break
    return titles


def _title_key(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


def _subtitle(lines: list[str], index: int) -> int | None:
    """The index of a chapter's title line under its heading ("CHAPTER I", then "The Salt
    Road"): the next line with text, at most two blank lines below, short, without a final
    period, and followed by a blank line."""
    for below in range(index + 1, min(index + 4, len(lines))):
        text = lines[below].strip()
        if not text:
            continue
        if below + 1 < len(lines) and lines[below + 1].strip():
            return None
        if len(text.split()) <= 12 and not text.endswith((".", "!", "?", '"', "”")):
            return below
        return None
    return None


def blocks_from_text(text: str) -> list[Block]:
    """Headings and paragraphs of a plain-text book (inside its Gutenberg wrapping)."""
    lines = _without_illustrations(strip_gutenberg(text)).split("\n")
    headings = _text_headings(lines)
    blocks: list[Block] = []
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            blocks.append(Block("text", " ".join(p.strip() for p in paragraph), tuple(paragraph)))
        paragraph.clear()

    skip: set[int] = set()
    for index, raw in enumerate(lines):
        if index in skip:
            continue
        line = raw.strip()
        if not line:
            flush()
            continue
        if index in headings:
            flush()
            blocks.append(Block("heading", line.rstrip(".")))
            subtitle = headings[index]
            if subtitle is not None:  # "CHAPTER I" then "The Salt Road"
                blocks.append(Block("heading", lines[subtitle].strip()))
                skip.add(subtitle)
            continue
        if _BREAK.match(line):
            flush()
            blocks.append(Block("text", "* * *"))
            continue
        paragraph.append(raw.rstrip())
    flush()
    return blocks


def _text_headings(lines: list[str]) -> dict[int, int | None]:
    """Line index → the index of its subtitle line (or None), for every heading line."""
    strong: dict[int, int | None] = {}
    named: dict[int, int | None] = {}
    bare: list[int] = []
    for index, raw in enumerate(lines):
        line = raw.strip()
        if not line:
            continue
        subtitle = _subtitle(lines, index)
        alone = _isolated(lines, index) or (
            (index == 0 or not lines[index - 1].strip()) and subtitle is not None
        )
        if not alone:
            continue
        if _STRONG.match(line) or _NUMBERED.match(line):
            # "CHAPTER I" or "IV" alone take the title line under them; "IV. THE RIVER" has one.
            strong[index] = subtitle if _ONLY_NUMBER.match(line) else None
        elif _NAMED.match(line):
            named[index] = None
        elif _isolated(lines, index) and _bare_capitals(raw) and not _introduced(lines, index):
            bare.append(index)
    if len(strong) >= 2:
        chosen = {**strong, **named}
    else:
        listed = _contents_titles(lines)
        if listed:
            picked = [i for i in bare if _title_key(lines[i]) in listed]
        else:
            picked = _spaced(lines, bare) if len(bare) >= 2 else []
        chosen = {**strong, **named, **dict.fromkeys(picked)}
    # A subtitle line is part of its heading, never a heading of its own.
    for subtitle in [s for s in chosen.values() if s is not None]:
        chosen.pop(subtitle, None)
    return dict(sorted(chosen.items()))


# -- Markdown ------------------------------------------------------------------------------------


def blocks_from_markdown(text: str) -> list[Block]:
    """Headings (ATX `#` and setext underlined) and paragraphs of a Markdown book."""
    lines = _without_illustrations(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    start, end = _story_span([line.strip() for line in lines])
    lines = lines[start:end]
    blocks: list[Block] = []
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            kept = [p for p in paragraph if p.strip()]
            if kept and all(_TABLE_LINE.match(p) for p in kept):
                blocks.append(Block("text", "", tuple(kept)))  # a table: never prose
            elif kept:
                blocks.append(
                    Block("text", _plain_markdown(" ".join(p.strip() for p in kept)), tuple(kept))
                )
        paragraph.clear()

    for index, raw in enumerate(lines):
        line = raw.strip()
        atx = _MD_ATX.match(line)
        if atx:
            flush()
            blocks.append(Block("heading", _plain_markdown(atx.group(2))))
            continue
        underline = index + 1 < len(lines) and _MD_SETEXT.match(lines[index + 1].strip())
        if (
            line
            and underline
            and not paragraph
            and not _TABLE_LINE.match(line)
            and len(lines[index + 1].strip()) >= 2
        ):
            blocks.append(Block("heading", _plain_markdown(line)))
            lines[index + 1] = ""
            continue
        if not line:
            flush()
            continue
        if _BREAK.match(line) and not paragraph:
            blocks.append(Block("text", "* * *"))
            continue
        paragraph.append(raw)
    flush()
    return blocks


def _plain_markdown(text: str) -> str:
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", text)  # images
    text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", text)  # links keep their text
    text = re.sub(r"\[([^\]]+)\]\{[^}]*\}", r"\1", text)  # pandoc spans: [text]{.class}
    text = re.sub(r"\{[#.][^}]*\}", "", text)  # pandoc attributes
    text = text.replace("[]", "")  # an empty span left by an anchor
    text = re.sub(r"(\*\*|__|\*|_|`)(.+?)\1", r"\2", text)  # emphasis and code
    text = re.sub(r"^>\s?", "", text)
    text = text.replace("\\", "")
    return " ".join(text.split())


# -- EPUB ------------------------------------------------------------------------------------


class _XhtmlText(HTMLParser):
    """Headings and paragraphs of one XHTML document of an EPUB; `anchors` (element id → title)
    are where the book's navigation says a chapter begins."""

    BLOCKS = frozenset({"p", "div", "h1", "h2", "h3", "h4", "h5", "h6", "li", "blockquote", "pre"})
    HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})

    def __init__(self, anchors: dict[str, str]) -> None:
        super().__init__(convert_charrefs=True)
        self.anchors = anchors
        self.items: list[Block] = []
        self._tag: str | None = None
        self._text: list[str] = []
        self._skip = 0
        self._page_number = False  # inside a printed page's number (`<span class="pagenum">`)
        self._in_link = False  # inside a link to a place in the book (`<a href="#...">`)
        self._linked = 0  # characters of the open block inside such links

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "nav"):
            self._skip += 1
            return
        if tag == "span" and "pagenum" in (dict(attrs).get("class") or ""):
            self._page_number = True
            return
        if tag == "a" and (dict(attrs).get("href") or "").startswith("#"):
            self._in_link = True
        if tag == "br":  # a line break: a new line of a preformatted block, else a space
            self._text.append("\n" if self._tag == "pre" else " ")
        if tag in self.BLOCKS:
            self._close()
            self._tag = tag
        for name, value in attrs:
            if name in ("id", "name") and value in self.anchors and not self._skip:
                label = self.anchors.pop(value)
                if tag not in self.HEADINGS and label:
                    self._close()
                    self.items.append(Block("heading", label))
                    self._tag = tag if tag in self.BLOCKS else None

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "nav"):
            self._skip = max(0, self._skip - 1)
        elif tag == "span":
            self._page_number = False
        elif tag == "a":
            self._in_link = False
        elif tag in self.BLOCKS:
            self._close()

    def handle_data(self, data: str) -> None:
        if not self._skip and not self._page_number and self._tag is not None:
            self._text.append(data)
            if self._in_link:
                self._linked += len(data.strip())

    def _close(self) -> None:
        raw = "".join(self._text)
        linked, self._linked = self._linked, 0
        self._text = []
        tag, self._tag = self._tag, None
        if tag is None:
            return
        if linked > 0.6 * len("".join(raw.split())):
            return  # a table of contents: links to the book's own chapters, not story
        if tag == "pre":  # preformatted: its blank-line separated parts are paragraphs
            for part in re.split(r"\n\s*\n", raw):
                lines = tuple(line.rstrip() for line in part.split("\n") if line.strip())
                if lines:
                    self.items.append(Block("text", " ".join(" ".join(lines).split()), lines))
            return
        text = " ".join(raw.split())
        if text:
            self.items.append(Block("heading" if tag in self.HEADINGS else "text", text))


def _navigation(book: Any) -> dict[str, dict[str, str]]:
    """The table of contents as document name → {element id (or "" for the top): title}."""
    places: dict[str, dict[str, str]] = {}

    def walk(items: Any) -> None:
        for item in items:
            if isinstance(item, tuple | list) and len(item) == 2:
                section, children = item
                visit(section)
                walk(children)
            else:
                visit(item)

    def visit(item: Any) -> None:
        href = getattr(item, "href", None)
        title = " ".join(str(getattr(item, "title", "") or "").split())
        if not href:
            return
        name, _, anchor = href.partition("#")
        places.setdefault(name.split("/")[-1], {}).setdefault(anchor, title)

    walk(book.toc or [])
    return places


def blocks_from_epub(path: Path) -> tuple[list[Block], str | None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import ebooklib
        from ebooklib import epub

        try:
            book = epub.read_epub(str(path), options={"ignore_ncx": False})
        except Exception as exc:  # ebooklib raises many kinds on a broken file
            raise InputError(f"{path} is not a readable EPUB: {exc}") from None
    titles = book.get_metadata("DC", "title")
    title = " ".join(str(titles[0][0]).split()) if titles and titles[0][0] else None
    places = _navigation(book)
    blocks: list[Block] = []
    for item_id, _linear in book.spine:
        item = book.get_item_with_id(item_id)
        if item is None or item.get_type() != ebooklib.ITEM_DOCUMENT:
            continue
        if "nav" in (getattr(item, "properties", None) or []):
            continue  # the navigation document is the table of contents, not the book
        anchors = dict(places.get(item.get_name().split("/")[-1], {}))
        top = anchors.pop("", None)
        parser = _XhtmlText(anchors)
        parser.feed(item.get_content().decode("utf-8", errors="replace"))
        parser.close()
        items = parser.items
        if top and not (items and items[0].kind == "heading"):
            items = [Block("heading", top), *items]
        blocks.extend(items)
    return _inside_wrapping(blocks), title


_CHARSET = re.compile(rb"""(?:charset|encoding)\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.I)
_HTML_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.I | re.S)


def blocks_from_html(path: Path) -> tuple[list[Block], str | None]:
    """An HTML book (Project Gutenberg's HTML edition, say): its headings and paragraphs in the
    encoding it declares; its title from the Gutenberg header, else its `<title>`."""
    raw = path.read_bytes()
    declared = _CHARSET.search(raw[:4096])
    encodings = [declared.group(1).decode("ascii")] if declared else []
    for encoding in (*encodings, "utf-8"):
        try:
            markup = raw.decode(encoding).lstrip("\ufeff")
            break
        except (LookupError, UnicodeDecodeError):
            continue
    else:
        raise InputError(f"{path} is not text in the encoding it declares, nor UTF-8")
    parser = _XhtmlText({})
    parser.feed(markup)
    parser.close()
    blocks = parser.items
    if not blocks:
        raise InputError(f"{path} has no headings or paragraphs: is it an HTML page?")
    title = gutenberg_title("\n".join(block.text for block in blocks[:200]))
    if title is None and (found := _HTML_TITLE.search(markup)):
        title = " ".join(html.unescape(found.group(1)).split()) or None
    return _inside_wrapping(blocks), title


def _inside_wrapping(blocks: list[Block]) -> list[Block]:
    """The blocks inside Project Gutenberg's wrapping, without illustration markers."""
    start, end = _story_span([block.text for block in blocks])
    kept = []
    for block in blocks[start:end]:
        text = " ".join(_without_illustrations(block.text).split())
        if text or block.lines:
            kept.append(Block(block.kind, text, block.lines))
    return kept


# -- from blocks to chapters ----------------------------------------------------------------


def _is_prose(block: Block) -> bool:
    """A paragraph of story: long enough, and not a list of short lines (a contents page, a
    list of illustrations) or a table."""
    if block.kind != "text" or len(block.text.split()) < PROSE_WORDS:
        return False
    lines = [line.strip() for line in block.lines if line.strip()]
    if len(lines) >= 3:
        short = sum(
            1
            for line in lines
            if (len(line) < 48 and not _SENTENCE_END.search(line)) or _PAGE_REFERENCE.search(line)
        )
        if short / len(lines) >= 0.6:
            return False
    return True


def _title(run: list[str]) -> str:
    """One title for consecutive headings: from the chapter number on when there is one (a
    book's title above it is dropped), the rest joined by ": "."""
    run = [text for text in run if text and not _BYLINE.match(text)]
    contents = [i for i, text in enumerate(run) if _CONTENTS.match(text.strip())]
    if contents and contents[-1] + 1 < len(run):  # a contents heading above the first chapter's
        run = run[contents[-1] + 1 :]
    numbered = [i for i, text in enumerate(run) if _CHAPTER_NUMBER.match(text)]
    if numbered:
        run = run[numbered[-1] :]
    return ": ".join(dict.fromkeys(run)) if run else "Untitled"


def chapters_from_blocks(blocks: list[Block], title: str | None = None) -> Book:
    """The story's chapters (and what was set aside) from a book's blocks."""
    sections: list[tuple[str | None, list[Block]]] = [(None, [])]
    run: list[str] = []
    for block in blocks:
        if block.kind == "heading":
            run.append(block.text)
            continue
        if run:
            sections.append((_title(run), []))
            run = []
        sections[-1][1].append(block)
    if run:
        sections.append((_title(run), []))
    headed = [section for section in sections if section[0] is not None]
    found = Book(title, [])
    if not headed:  # no headings: the whole text is one chapter
        body = [b for b in sections[0][1] if not _CREDIT.match(b.text)]
        chapter = _chapter("Text", body)
        found.chapters = [chapter] if chapter.is_story() else []
        return found
    back = False
    for name, body in headed:
        assert name is not None
        plain = name.strip().rstrip(".:")
        last = plain.split(": ")[-1]
        if _CONTENTS.match(plain) or _CONTENTS.match(last):
            found.dropped.append(f"{name} (contents)")
            continue
        if _FRONT.match(plain) or _FRONT.match(last):
            found.dropped.append(f"{name} (front matter)")
            continue
        if _CAST.match(plain) or _CAST.match(last):
            chapter = _chapter(name, body)
            if chapter.paragraphs:
                found.reference.append(chapter)
            continue
        if _BACK.match(plain) or _BACK.match(last):
            back = True
        elif back and _CHAPTER_NUMBER.match(plain):
            back = False  # a numbered chapter after a note: story again
        chapter = _chapter(name, body)
        if back:
            if chapter.paragraphs:
                found.reference.append(chapter)
            continue
        if not any(_is_prose(b) for b in body):
            found.dropped.append(f"{name} (no prose)")
            continue
        if "project gutenberg" in " ".join(b.text for b in body[:3]).casefold():
            found.dropped.append(f"{name} (licence)")
            continue
        found.chapters.append(chapter)
    return found


def _chapter(name: str, body: list[Block]) -> Chapter:
    chapter = Chapter(name)
    for block in body:
        if block.text == "* * *" or _BREAK.match(block.text):
            chapter.scene_break()
        elif block.text:
            chapter.add(block.text)
    return chapter


# -- reading and writing ---------------------------------------------------------------------


def chapters_from_text(text: str) -> list[Chapter]:
    return chapters_from_blocks(blocks_from_text(text)).chapters


def chapters_from_markdown(text: str) -> list[Chapter]:
    return chapters_from_blocks(blocks_from_markdown(text)).chapters


def read_book(path: Path) -> Book:
    """The book at `path`: its chapters of story, its title and what was set aside."""
    if not path.is_file():
        raise InputError(f"no file to import at {path}")
    suffix = path.suffix.lower()
    if suffix == ".epub":
        blocks, title = blocks_from_epub(path)
    elif suffix in (".html", ".htm", ".xhtml"):
        blocks, title = blocks_from_html(path)
    elif suffix in (".txt", ".text", ".md", ".markdown"):
        text = _decoded(path)
        title = gutenberg_title(text)
        reader = blocks_from_markdown if suffix in (".md", ".markdown") else blocks_from_text
        blocks = reader(text)
    else:
        raise InputError(
            f"cannot import {path.name}: give a plain-text (.txt), Markdown (.md), HTML (.html) "
            "or EPUB file"
        )
    book = chapters_from_blocks(blocks, title)
    if not book.chapters:
        raise InputError(f"{path} has no story text to import (no chapter with prose)")
    return book


_DECLARED = re.compile(rb"^Character set encoding:\s*([A-Za-z0-9_.:-]+)", re.M | re.I)


def _decoded(path: Path) -> str:
    """A text file's text: UTF-8, else the encoding its Project Gutenberg header declares
    ("Character set encoding: ISO-8859-1", as Gutenberg's 8-bit editions say)."""
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        declared = _DECLARED.search(raw[:20_000])
        if declared is not None:
            try:
                return raw.decode(declared.group(1).decode("ascii"))
            except (LookupError, UnicodeDecodeError):
                pass
        raise InputError(
            f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}) and declares no "
            "encoding it is in: convert it to UTF-8 (iconv -f LATIN1 -t UTF-8, say)"
        ) from None


def reference_path(corpus: Path) -> Path:
    """Where an import writes the book's back matter (glossary, appendices) for reference."""
    return corpus.with_name(f"{corpus.name}.reference.md")


def import_book(path: str | Path, out: str | Path, *, replace: bool = False) -> ImportReport:
    """Write the book at `path` as a corpus at `out`; report what it holds. An existing `out` is
    refused (InputError, nothing read or written) unless `replace`, when it is replaced
    atomically."""
    source, target = Path(path), Path(out)
    if not replace and (target.exists() or target.is_symlink()):
        raise InputError(
            f"--out {target} exists; nothing was changed; give --replace to write over it, or "
            "another file name"
        )
    book = read_book(source)
    chapters = book.chapters
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    partial.unlink(missing_ok=True)
    post_id, time = FIRST_POST_ID, FIRST_TIME
    conn = sqlite3.connect(partial, isolation_level=None)
    try:
        conn.executescript(CORPUS_SCHEMA)
        conn.execute(BOOK_TABLE)
        conn.execute("BEGIN")
        conn.execute(
            "INSERT INTO book (title, source) VALUES (?, ?)",
            (book.title or _title_from_name(source), source.name),
        )
        for chapter in chapters:
            thread_id = post_id
            conn.execute("INSERT INTO thread (id, title) VALUES (?, ?)", (thread_id, chapter.title))
            for number, scene in enumerate(scene for scene in chapter.scenes if scene):
                if number:
                    _post(conn, thread_id, post_id, time, "* * *", ("scene_break",))
                    post_id, time = post_id + 1, time + 60
                for paragraph in scene:
                    _post(conn, thread_id, post_id, time, paragraph, ("qm_post", "story_post"))
                    post_id, time = post_id + 1, time + 60
        conn.execute("COMMIT")
    finally:
        conn.close()
    partial.replace(target)
    reference = reference_path(target)
    if book.reference:
        reference.write_text(reference_text(book), encoding="utf-8")
    else:
        reference.unlink(missing_ok=True)
    paragraphs = [p for chapter in chapters for p in chapter.paragraphs]
    return ImportReport(
        path=str(target),
        chapters=len(chapters),
        paragraphs=len(paragraphs),
        words=sum(len(p.split()) for p in paragraphs),
        title=book.title or _title_from_name(source),
        reference=str(reference) if book.reference else None,
    )


def reference_text(book: Book) -> str:
    """The back matter as Markdown: for reading beside the glossary, never as story."""
    parts = [f"# {book.title or 'The book'}: reference (not story)\n"]
    for section in book.reference:
        parts.append(f"## {section.title}\n")
        parts.extend(f"{paragraph}\n" for paragraph in section.paragraphs)
    return "\n".join(parts)


def _title_from_name(path: Path) -> str:
    stem = re.sub(r"[_-]+", " ", path.stem).strip()
    return stem[:1].upper() + stem[1:] if stem else "Book"


def _post(
    conn: sqlite3.Connection,
    thread_id: int,
    post_id: int,
    time: int,
    text: str,
    tags: tuple[str, ...],
) -> None:
    conn.execute(
        "INSERT INTO post (thread_id, id, name, trip_code, subject, time, file_url, file_name, "
        "body) VALUES (?, ?, ?, NULL, NULL, ?, NULL, NULL, ?)",
        (thread_id, post_id, AUTHOR, time, html.escape(text, quote=False)),
    )
    conn.executemany("INSERT INTO tag (post_id, name) VALUES (?, ?)", [(post_id, t) for t in tags])
