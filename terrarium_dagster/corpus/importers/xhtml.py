"""HTML and EPUB books (`blocks_from_html`, `blocks_from_epub`): one parser reads an HTML book,
or each XHTML document of an EPUB, as headings and paragraphs (without printed page numbers,
pictures and their captions, note references, links to places in the book), an EPUB's
navigation saying where its chapters begin; the title from the EPUB's metadata, the Gutenberg
header or the page's `<title>`."""

from __future__ import annotations

import html
import itertools
import re
import warnings
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from terrarium_dagster.corpus.importers.decoding import guess_decoding
from terrarium_dagster.corpus.importers.gutenberg import (
    gutenberg_title,
    story_span,
    without_illustrations,
)
from terrarium_dagster.corpus.importers.headings import (
    ARGUMENT,
    DIVISIONS,
    HEADING_PARAGRAPH,
    NUMBER_WORDS,
    ORDINALS,
    SECTION_NUMBER,
    numeral,
    shouted,
    unfinished,
)
from terrarium_dagster.corpus.importers.marks import BRACED_NOTE, plain_title
from terrarium_dagster.corpus.importers.model import Block
from terrarium_dagster.corpus.importers.prose import STANZA_WORDS
from terrarium_dagster.errors import InputError

# a printed page's number: Gutenberg's `pagenum`, and `pageno`, `page-num`, `pgnum` elsewhere;
# "tei-pb", a page break of an edition made from TEI (the Iliad's HTML)
_PAGE_CLASS = re.compile(r"\b(?:page-?num(?:ber)?|pageno|pgnum|tei-pb)\b", re.I)
_NOTE_REFERENCE = re.compile(r"^(?:\[\s*\d{1,3}\s*\]|\d{1,3}|[*†‡])$")
_PICTURE = re.compile(r"\.(?:jpe?g|png|gif|svg|webp|bmp|tiff?)$", re.I)


_BR = "\x00"  # a <br> inside a paragraph, until the paragraph is read
# a picture and its caption: "<div class="illustration">" (Tom Sawyer's EPUB), Project
# Gutenberg's "<div class="figcenter">"; their text is not story, as "[Illustration: ...]" is not
_FIGURE_CLASS = re.compile(r"\b(?:illustration|figure|fig(?:center|left|right)?)\b", re.I)
# a <div> holding verse; "tei-lg", a line group of an edition made from TEI (the Iliad's HTML)
_VERSE_CLASS = re.compile(r"\b(?:poem|stanza|verse|tei-lg)\b", re.I)
_DIVISION_NUMBER = re.compile(  # "Chapter I", "BOOK II.", "Act First"
    rf"^(?:{DIVISIONS})\s+(?:[IVXLCDM]+|\d{{1,3}}|(?i:{NUMBER_WORDS}|{ORDINALS}))\.?$", re.I
)
HEADING_PARAGRAPH_WORDS = 24  # a paragraph that is a chapter's number and title is this short
# a division's number, a dash and a title in capitals: "LETTER XL - EVELINA TO THE REV. MR.
# VILLARS London, June 6." (Evelina's HTML sets three of its letters' headings as paragraphs)
_DIVISION_TITLED = re.compile(
    rf"^(?:{DIVISIONS})\s+(?:[IVXLCDM]+|\d{{1,3}})\.?\s*[-–—]+\s*[A-Z][A-Z.,'’ ]*[A-Z]{{2}}\b"
)


def _division_titled(text: str) -> bool:
    """Whether a paragraph is a division's heading: its number, a dash and its title in
    capitals, as short as a heading (`HEADING_PARAGRAPH_WORDS`)."""
    return bool(_DIVISION_TITLED.match(text)) and len(text.split()) <= HEADING_PARAGRAPH_WORDS


BOLD_TITLE_WORDS = 12  # a paragraph all in bold right under a heading is its title if this short


class _XhtmlText(HTMLParser):
    """Headings and paragraphs of one XHTML document of an EPUB; `anchors` (element id → title)
    are where the book's navigation says a chapter begins, `documents` the names of the book's
    documents (a link to one is a link to a place in the book, as "#..." is)."""

    BLOCKS = frozenset(
        {"p", "div", "h1", "h2", "h3", "h4", "h5", "h6", "li", "blockquote", "pre", "center"}
        | {"td", "th", "dt", "dd"}  # a poem set in a table's cell is text too
    )
    HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})

    def __init__(self, anchors: dict[str, str], documents: frozenset[str] = frozenset()) -> None:
        super().__init__(convert_charrefs=True)
        self.anchors = anchors
        self.documents = documents
        self.items: list[Block] = []
        self.labels: list[Block] = []  # the headings the navigation's labels set
        self._tag: str | None = None
        self._text: list[str] = []
        self._skip = 0
        self._page_number = False  # inside a printed page's number (`<span class="pagenum">`)
        # inside a link to a place in the book (`<a href="#...">`, `<a href="Chapter-01.xhtml">`)
        self._in_link = False
        self._link_start = 0  # where that link's text starts in the open block
        self._ahead = False  # that link is to a place further on (no element seen has its id)
        self._ahead_labels: list[str] = []  # the open block's texts of links to places ahead
        self._ids: set[str] = set()  # the ids and names of the elements read so far
        self._speaking = False  # the open paragraph names a play's speaker (class "speaker")
        self._speaker = ""  # that name, until the speech under it
        self._linked = 0  # characters of the open block inside such links
        self._links = 0  # links to places in the book in the open block
        self._image_link = False  # inside a link to a picture ("Original", "Full size")
        self._away_link = False  # inside a link to another page (a web address, another file)
        self._away = 0  # letters of the open block inside such links
        self._hgroup = 0  # inside a heading group: its paragraphs are parts of the heading
        self._loose = False  # the open paragraph is text set in no block
        self._verse: list[bool] = []  # for each open <div>: whether it is a poem's or a stanza's
        self._bold = 0  # inside <b> or <strong>
        self._unbold = 0  # characters of the open block outside them
        self._stanza: list[str] = []  # the lines of the stanza being read
        self._definition = 0  # inside a <dd>: a definition's text, or a note's
        self._figures: list[bool] = []  # for each open <div> or <figure>: whether it is a figure

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "nav"):
            self._skip += 1
            return
        if tag == "hgroup":
            self._close()
            self._hgroup += 1
        if tag in ("b", "strong"):
            self._bold += 1
        if tag == "span" and _PAGE_CLASS.search(dict(attrs).get("class") or ""):
            self._page_number = True
            return
        if tag == "a":
            href = (dict(attrs).get("href") or "").strip()
            document = href.split("#")[0].split("?")[0].split("/")[-1]
            if href.startswith("#") or document in self.documents:
                self._in_link = True
                self._link_start = len(self._text)
                self._ahead = href.startswith("#") and href[1:] not in self._ids
                self._links += 1
            elif _PICTURE.search(href.split("#")[0].split("?")[0]):
                self._image_link = True
            elif href:
                self._away_link = True
        if tag == "br" and self._loose and _BR in "".join(self._text).rstrip()[-1:]:
            self._close()  # text in no block parted by a blank line: "<br /><br />"
        elif tag == "br":  # a line break: a new line (a paragraph's too: it may be a heading's)
            self._text.append("\n" if self._tag == "pre" or self._tag in self.HEADINGS else _BR)
        if tag in self.BLOCKS:
            self._close()
            self._tag = tag
            self._speaking = tag == "p" and "speaker" in (dict(attrs).get("class") or "").split()
        if tag == "div":
            self._verse.append(bool(_VERSE_CLASS.search(dict(attrs).get("class") or "")))
        if tag in ("div", "figure"):
            classes = dict(attrs).get("class") or ""
            self._figures.append(tag == "figure" or bool(_FIGURE_CLASS.search(classes)))
        if tag == "dd":
            self._definition += 1
        for name, value in attrs:
            if name in ("id", "name") and value in self.anchors and not self._skip:
                label = self.anchors.pop(value)
                if tag not in self.HEADINGS and label:
                    self._close()
                    self.labels.append(Block("heading", label))
                    self.items.append(self.labels[-1])
                    self._tag = tag if tag in self.BLOCKS else None
        self._ids.update(value for name, value in attrs if name in ("id", "name") and value)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "nav"):
            self._skip = max(0, self._skip - 1)
        elif tag == "hgroup":
            self._close()
            self._hgroup = max(0, self._hgroup - 1)
        elif tag in ("b", "strong"):
            self._bold = max(0, self._bold - 1)
        elif tag == "span":
            self._page_number = False
        elif tag == "a":
            if self._in_link:
                label = "".join(self._text[self._link_start :])
                before = "".join(self._text[: self._link_start])
                if _NOTE_REFERENCE.match(label.strip()) and before.strip():
                    del self._text[self._link_start :]  # a footnote's number in the prose
                    self._linked -= len(label.strip())
                elif self._ahead:
                    self._ahead_labels.append(" ".join(label.split()))
            self._in_link = self._image_link = self._away_link = False
        elif tag in self.BLOCKS:
            self._close()
        if tag == "dd":
            self._definition = max(0, self._definition - 1)
        if tag == "div" and self._verse and self._verse.pop():
            self._flush_stanza()  # a stanza's end
        if tag in ("div", "figure") and self._figures:
            self._figures.pop()

    def close(self) -> None:
        super().close()
        self._close()
        self._flush_stanza()

    def _flush_stanza(self) -> None:
        """The stanza's lines (one `<p>` each, or parted by `<br/>`s) as one block with its
        lines, as a plain-text stanza is, so `is_verse` knows it for one."""
        if self._stanza:
            text = " ".join(re.sub(BRACED_NOTE, "", " ".join(self._stanza)).split())
            self.items.append(Block("text", text, tuple(self._stanza)))
            self._stanza = []

    def handle_data(self, data: str) -> None:
        if self._tag is None and data.strip() and not self._skip:
            # text set in no block of its own (Carmilla's "<b>PROLOGUE</b>" between its title
            # page's heading and the prologue's paragraph): a paragraph until the next block
            self._tag, self._loose = "p", True
        if (
            not self._skip
            and not self._page_number
            and not self._image_link
            and not any(self._figures)  # a picture's caption, not story
            and self._tag is not None
        ):
            if self._tag != "pre" and (self._tag in self.HEADINGS or self._hgroup):
                # a heading's lines are its <br>s; a line break of the source is a space
                # ("... AND HOW HE WAS\nEXPELLED THENCE." is one title)
                data = data.replace("\r", " ").replace("\n", " ")
            self._text.append(data)
            if not self._bold:
                self._unbold += len(data.strip())
            if self._in_link:
                self._linked += len(data.strip())
            if self._away_link:
                self._away += len("".join(data.split()))

    def _close(self) -> None:
        broken = "".join(self._text)  # with its <br>s
        raw = broken.replace(_BR, " ")
        linked, self._linked = self._linked, 0
        links, self._links = self._links, 0
        ahead, self._ahead_labels = self._ahead_labels, []
        away, self._away = self._away, 0
        speaking, self._speaking = self._speaking, False
        self._text = []
        tag, self._tag = self._tag, None
        self._loose = False
        bold, self._unbold = not self._unbold, 0  # every letter of it in bold
        in_verse = any(self._verse)
        if not in_verse or tag in self.HEADINGS or self._hgroup:
            self._flush_stanza()  # the stanza before what is not a line of it
        if tag is None:
            return
        if linked > 0.6 * len("".join(raw.split())) and not (tag in self.HEADINGS and links == 1):
            # a table of contents: links to the book's own chapters, not story; a heading that is
            # one link (back to the contents: The Three Musketeers' "toc-backref") heads a chapter
            return
        if links >= 5 and len(raw.split()) < 12 * links:
            return  # a contents list whose links are only the chapters' numbers
        if tag not in self.HEADINGS and away >= 0.9 * len("".join(raw.split())) > 0:
            # text that is all one link to another page is the edition's, never the story's
            # (Huckleberry Finn's relative.htm: "LINK TO THE ORIGINAL HTML FILE: This eBook has
            # been reformatted for better appearance ...", its first chapter under the title page)
            return
        if tag == "pre":  # preformatted: its blank-line separated parts are paragraphs
            for part in re.split(r"\n\s*\n", raw):
                lines = tuple(line.rstrip() for line in part.split("\n") if line.strip())
                if lines:
                    text = " ".join(" ".join(lines).split())
                    kind = "heading" if _division_titled(text) else "text"
                    self.items.append(Block(kind, text, () if kind == "heading" else lines))
            return
        if tag in self.HEADINGS or self._hgroup:  # "CHAPTER I<br/>JONATHAN ...": two headings
            parts: list[str] = []
            for part in (" ".join(part.split()) for part in raw.split("\n")):
                if part and parts and (unfinished(parts[-1]) or part[0].islower()):
                    # one title wrapped by its <br> (The Arabian Nights' 128-h.htm: "The Story
                    # of the Three Calenders, Sons of Kings,<BR>and of Five Ladies of Bagdad")
                    parts[-1] = f"{parts[-1]} {part}"
                elif part:
                    parts.append(part)
            self.items.extend(Block("heading", part) for part in parts)
            return
        lines = [" ".join(line.split()) for line in broken.split(_BR)]
        lines = [line for line in lines if line]
        if (
            2 <= len(lines) <= 3
            # not a contents page's entry, its number a link to the chapter further on (Tom
            # Sawyer's p8.htm: "<a href="#c32">CHAPTER XXXII.</a><br>Tom tells the Story ...")
            and lines[0] not in ahead
            and (
                _DIVISION_NUMBER.match(lines[0])
                # the book's title over a section's name (Beowulf's bwulf11h.htm: "BEOWULF<br
                # />PRELUDE OF THE FOUNDER OF THE DANISH HOUSE"), as its text edition sets them
                or (HEADING_PARAGRAPH.match(lines[-1]) and all(map(shouted, lines)))
            )
            and len(raw.split()) <= HEADING_PARAGRAPH_WORDS
        ):
            # "Chapter I<br>Outside Dorlcote Mill" set as a paragraph (The Mill on the Floss's
            # HTML has no heading elements): a number and its title, as a heading's <br> parts;
            # not a named section over lines of verse (Hamlet's "PROLOGUE.<br>For us, and ...")
            self.items.extend(Block("heading", line) for line in lines)
            return
        if in_verse:  # a line of a stanza (The Song of Hiawatha's HTML: a <p> a line)
            self._stanza.extend(lines)
            return
        # a mark opening the paragraph is a note's own label, kept as the plain text keeps it
        # (Beowulf's 981-h.htm: "{0a} Not, of course, Beowulf the Great"); one after a word is
        # the prose's mark of that note, not story
        text = " ".join(re.sub(BRACED_NOTE, "", raw.strip()).split())
        if _division_titled(text):
            # a division's heading set as a paragraph, as its neighbours are in <h2>s (Evelina's
            # HTML: "<p>LETTER XL - EVELINA TO THE REV. MR. VILLARS London, June 6.</p>")
            self.items.append(Block("heading", text))
            return
        under_heading = bool(self.items) and self.items[-1].kind == "heading"
        if (
            text
            and bold
            and under_heading
            and len(text.split()) <= BOLD_TITLE_WORDS
            and not text.endswith((".", ",", ":", ";"))
        ):
            # a chapter's title in bold under its number (Carmilla's "<h2>I</h2>" then
            # "<p><b>An Early Fright</b></p>"): part of its heading
            self.items.append(Block("heading", text))
            return
        if (
            len(self.items) >= 2
            and self.items[-2].kind == "heading"
            and self.items[-1].kind == "text"
            and ARGUMENT.match(self.items[-1].text)
            and shouted(text)
            and len(text.split()) <= HEADING_PARAGRAPH_WORDS
        ):
            # the title under the label of a book's summary, under its number (the Iliad's HTML:
            # "<h1>BOOK I.</h1>", then "<p>ARGUMENT.</p>", then "<p>THE CONTENTION OF ACHILLES
            # AND AGAMEMNON.</p>"): the book's title, the label the summary's first line (as in
            # the plain text, `_subtitle`)
            self.items.insert(-1, Block("heading", text))
            return
        if text and speaking:
            # a play's speaker set apart ("<p class="speaker">Farncombe.</p>"): the speech's
            # first words, as a play set on one line has them ("FARNCOMBE. I shall be ...")
            self._speaker = text
            return
        if text and self._speaker:
            text, self._speaker = f"{self._speaker} {text}", ""
        if text:
            # a section's name set as a paragraph heads it, but not inside a <dd>, a note's text
            # (the Iliad's HTML: its footnote 38, "<dd><p>Preface to her Homer.</p></dd>", headed
            # the other 14,900 words of its notes, as a preface "to her Homer")
            heading = HEADING_PARAGRAPH.match(text) is not None and not self._definition
            if heading:
                self.items.append(Block("heading", text))
            else:  # its lines, where <br>s part them (Paradise Lost's HTML: a verse line each)
                self.items.append(Block("text", text, tuple(lines) if len(lines) > 1 else ()))


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


def _epub_problem(exc: Exception) -> str:
    """What ebooklib found wrong with a file, in words: its EpubException shows as the repr of
    its message ("'Bad Zip file'", quotes and all), a missing part as a KeyError's quoted
    words: the message is said without the quotes."""
    from ebooklib.epub import EpubException

    said = str(exc.msg if isinstance(exc, EpubException) else exc).strip()
    if len(said) > 1 and said[0] == said[-1] and said[0] in "'\"":  # a KeyError's, quoted
        said = said[1:-1]
    if said == "Bad Zip file":
        return "it is no ZIP archive, as an EPUB is"
    return said or type(exc).__name__


def blocks_from_epub(path: Path) -> tuple[list[Block], str | None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import ebooklib
        from ebooklib import epub

        try:
            book = epub.read_epub(str(path), options={"ignore_ncx": False})
        except Exception as exc:  # ebooklib raises many kinds on a broken file
            raise InputError(f"{path} is not a readable EPUB: {_epub_problem(exc)}") from None
    titles = book.get_metadata("DC", "title")
    title = " ".join(str(titles[0][0]).split()) if titles and titles[0][0] else None
    places = _navigation(book)
    # the book's documents, which its own contents page links (Tom Sawyer's EPUB: "<a
    # href="Chapter-01.xhtml">Chapter I</a>: Y-o-u-u Tom ..."), as an HTML book's links "#..."
    documents = frozenset(
        item.get_name().split("/")[-1] for item in book.get_items_of_type(ebooklib.ITEM_DOCUMENT)
    )
    blocks: list[Block] = []
    for item_id, _linear in book.spine:
        item = book.get_item_with_id(item_id)
        if item is None or item.get_type() != ebooklib.ITEM_DOCUMENT:
            continue
        if "nav" in (getattr(item, "properties", None) or []):
            continue  # the navigation document is the table of contents, not the book
        anchors = dict(places.get(item.get_name().split("/")[-1], {}))
        top = anchors.pop("", None)
        parser = _XhtmlText(anchors, documents)
        parser.feed(item.get_content().decode("utf-8", errors="replace"))
        parser.close()
        items = _without_labels_said(parser.items, parser.labels)
        if top and not (items and items[0].kind == "heading"):
            items = [Block("heading", top), *items]
        blocks.extend(items)
    return _inside_wrapping(blocks), title


def _label_key(text: str) -> str:
    """A title as a navigation's label and a heading are compared: without a note's mark and
    a closing stop, in one case and spacing."""
    return " ".join(plain_title(text).rstrip(".:").casefold().split())


def _without_labels_said(items: list[Block], labels: list[Block]) -> list[Block]:
    """`items` without the navigation's labels (`labels`, headings set where the navigation
    points at an element that is no heading) that a heading right under them says again: the
    label of a `<div class="chapter">` over its own `<h2>` (ebookmaker's EPUB 2 points its
    toc.ncx at the division's `pgepubid` id: A Tale of Two Cities' chapters were titled "Book
    the First—Recalled to Life: I. The Period: I. The Period", and Ontboezemingen's label kept
    its note's mark, "OM DEN ZUID[11].: OM DEN ZUID"). A label over text, or over headings
    that say something else, heads what follows as before."""
    said = {id(label) for label in labels}
    kept: list[Block] = []
    for index, item in enumerate(items):
        if id(item) in said:
            run = list(itertools.takewhile(lambda b: b.kind == "heading", items[index + 1 :]))
            under = [b for b in run if id(b) not in said]
            if any(_label_key(b.text) == _label_key(item.text) for b in under):
                continue
        kept.append(item)
    return kept


_CHARSET = re.compile(rb"""(?:charset|encoding)\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.I)
_A_TAG = re.compile(r"<(?:[A-Za-z][A-Za-z0-9:-]*|!doctype)[\s/>]", re.I)  # <p>, <br/>, <h1 id=..>
_HTML_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.I | re.S)


def blocks_from_html(
    path: Path, name: str | None = None
) -> tuple[list[Block], str | None, str | None]:
    """An HTML book (Project Gutenberg's HTML edition, say): its headings and paragraphs in the
    encoding it declares (else as `guess_decoding` reads it, with its note); its title from
    the Gutenberg header, else its `<title>`. `name` names it in the note (the file's name by
    default)."""
    raw = path.read_bytes()
    declared = _CHARSET.search(raw[:4096])
    encodings = [declared.group(1).decode("ascii")] if declared else []
    note = None
    for encoding in (*encodings, "utf-8"):
        try:
            markup = raw.decode(encoding).lstrip("\ufeff")
            break
        except (LookupError, UnicodeDecodeError):
            continue
    else:
        said = f"is not the {encodings[0]} it declares" if encodings else "declares no charset"
        markup, note = guess_decoding(raw, name or path.name, said)
    if not _A_TAG.search(markup):
        # plain text read as HTML (`--format html`, a .txt renamed .html) was one paragraph of
        # the whole book: "1 chapter, 1 paragraph (28765 words)"
        raise InputError(
            f"{path} holds no HTML tag: it is no HTML page; import it as the text it is "
            "(--format txt, md, rst or adoc, or a file named so)"
        )
    parser = _XhtmlText({})
    parser.feed(markup)
    parser.close()
    blocks = parser.items
    if not blocks:
        raise InputError(f"{path} has no headings or paragraphs: is it an HTML page?")
    # the header's lines where a <pre> keeps them: "Title:" ends with its line, as in the text
    # edition (its next line, a subtitle, was run into the title: "Hedda Gabler Play In Four Acts")
    header = "\n".join("\n".join(block.lines) or block.text for block in blocks[:200])
    title = gutenberg_title(header)
    if title is None and (found := _HTML_TITLE.search(markup)):
        title = " ".join(html.unescape(found.group(1)).split()) or None
    return _numbered_paragraphs(_inside_wrapping(blocks)), title, note


NUMBERED_PARAGRAPHS = 3  # a book's divisions numbered in paragraphs of their own, at least


def _numbered_paragraphs(blocks: list[Block]) -> list[Block]:
    """`blocks` with the paragraphs that are a number alone as headings when they number the
    book's divisions (Beowulf's HTML: "<p>I</p>" to "<p>XLIII</p>", its cantos, under its one
    heading): all such paragraphs of the book count up from one, `NUMBERED_PARAGRAPHS` or more,
    each `STANZA_WORDS` or more after the one before (a poem's stanza numbers are closer, and
    numbered sections start again in every chapter)."""
    numbers = [
        (index, numeral(block.text.strip().rstrip(".")))
        for index, block in enumerate(blocks)
        if block.kind == "text" and SECTION_NUMBER.match(block.text.strip())
    ]
    if len(numbers) < NUMBERED_PARAGRAPHS:
        return blocks
    if [number for _, number in numbers] != list(range(1, len(numbers) + 1)):
        return blocks
    for (start, _), (end, _) in itertools.pairwise(numbers):
        if sum(len(block.text.split()) for block in blocks[start + 1 : end]) < STANZA_WORDS:
            return blocks
    heads = {index for index, _ in numbers}
    return [
        Block("heading", block.text.strip()) if index in heads else block
        for index, block in enumerate(blocks)
    ]


def _inside_wrapping(blocks: list[Block]) -> list[Block]:
    """The blocks inside Project Gutenberg's wrapping, without illustration markers."""
    start, end = story_span([block.text for block in blocks])
    kept = []
    for block in blocks[start:end]:
        text = " ".join(without_illustrations(block.text).split())
        if text or block.lines:
            kept.append(Block(block.kind, text, block.lines))
    return kept
