"""A plain-text book as blocks (`blocks_from_text`): inside its Gutenberg wrapping, without a
printed edition's page numbers, a letter-spaced title read as its words, each paragraph joined
from its lines without note marks, and headings where `text_headings` finds them."""

from __future__ import annotations

import itertools
import re

from terrarium_dagster.corpus.importers.gutenberg import strip_gutenberg, without_illustrations
from terrarium_dagster.corpus.importers.headings import BREAK, DIVISIONS, STRONG
from terrarium_dagster.corpus.importers.marks import (
    FOOTNOTE,
    NOTE_MARK,
    PAREN_NOTE,
    PAREN_NOTES,
    end_notes,
    glossed_words,
    plain_title,
    unmarked,
    without_bracketed_notes,
    without_drop_cap,
    without_glossed_marks,
    without_loose_notes,
    without_note_links,
)
from terrarium_dagster.corpus.importers.model import Block
from terrarium_dagster.corpus.importers.text_headings import isolated, subtitle_lines, text_headings

# a title set letter-spaced: "P R E F A C E", "T O M   S A W Y E R" (Tom Sawyer's 74.txt); its
# capitals a space apart, its words three spaces or more
_LETTER_SPACED = re.compile(r"^[A-Z](?: [A-Z])+(?: {3,}[A-Z](?: [A-Z])+)*$")
LETTER_SPACED_LETTERS = 5  # "A B C" in a sentence of the story is no title


def _unspaced(lines: list[str], index: int) -> str:
    """The line at `index`, a letter-spaced title standing alone read as its words ("PREFACE",
    "TOM SAWYER"), centred where it was; any other line as it is."""
    raw = lines[index]
    line = raw.strip()
    if not _LETTER_SPACED.match(line) or not isolated(lines, index):
        return raw
    words = ["".join(word.split()) for word in re.split(r" {3,}", line)]
    if sum(len(word) for word in words) < LETTER_SPACED_LETTERS:
        return raw
    text = " ".join(words)
    indent = len(raw) - len(raw.lstrip()) + (len(line) - len(text)) // 2
    return " " * indent + text if raw[:1].isspace() else text


def _unbracketed(lines: list[str], index: int) -> str:
    """The line at `index`, a division's heading standing alone in brackets read as the heading
    ("[BOOK II]", "[BOOK I.  INSCRIPTIONS]": Leaves of Grass's lvgrs10.txt, its chapters
    titled so); any other line as it is."""
    raw = lines[index]
    line = raw.strip()
    if not (line.startswith("[") and line.endswith("]")) or not isolated(lines, index):
        return raw
    inside = line[1:-1].strip()
    if not STRONG.match(inside):
        return raw
    return raw[: len(raw) - len(raw.lstrip())] + inside


_NOTES_OPENING = re.compile(r"^(FOOTNOTES|ENDNOTES|NOTES):\s+(\S.*)$")


def blocks_from_text(text: str) -> list[Block]:
    """Headings and paragraphs of a plain-text book (inside its Gutenberg wrapping)."""
    text = without_note_links(without_illustrations(strip_gutenberg(text)))
    lines = _without_running_heads(_without_page_marks(text.split("\n")))
    # a mail system's escape of a line opening with "From " (Werther's sywer10.txt: ">From")
    lines = [line[1:] if line.startswith(">From ") else line for line in lines]
    lines = [_unspaced(lines, index) for index in range(len(lines))]
    lines = [_unbracketed(lines, index) for index in range(len(lines))]
    headings = text_headings(lines)
    loose_notes = len(re.findall(PAREN_NOTE, "\n".join(lines))) >= PAREN_NOTES
    footnotes = {int(number) for number in FOOTNOTE.findall("\n".join(lines))}  # "[Footnote 5:"
    glossed = glossed_words("\n".join(lines))  # "2 (return) [ Liège: a cork-tree. ...]"
    # the book parted into headings, breaks and paragraphs (each line with its index), before
    # any paragraph is read: a note set after its chapter is known by the marks before it
    parts: list[Block | list[tuple[int, str]]] = []
    paragraph: list[tuple[int, str]] = []

    def end_paragraph() -> None:
        if paragraph:
            parts.append(paragraph.copy())
            paragraph.clear()

    skip: set[int] = set()
    for index, raw in enumerate(lines):
        if index in skip:
            continue
        line = raw.strip()
        if not line:
            end_paragraph()
            continue
        if index in headings:
            end_paragraph()
            heading = headings[index]
            wrapped = [lines[below].strip() for below in heading.wrapped]
            heading_text = " ".join([line, *wrapped]).rstrip(".")
            parts.append(Block("heading", plain_title(heading_text)))
            skip.update(heading.wrapped)
            if heading.subtitle is not None:  # "CHAPTER I" then "The Salt Road"
                taken = list(heading.titled) or subtitle_lines(lines, heading.subtitle)
                title = " ".join(lines[i].strip() for i in taken)
                if heading.titled:  # "Loomings." reads "Loomings", as "CHAPTER 1. Loomings."
                    title = title.removesuffix(".")
                parts.append(Block("heading", plain_title(title)))
                skip.update(taken)
            continue
        if BREAK.match(line):
            end_paragraph()
            parts.append(Block("text", "* * *"))
            continue
        if paragraph and _opens_indented_paragraph([text for _, text in paragraph], raw):
            end_paragraph()
        paragraph.append((index, raw.rstrip()))
    end_paragraph()

    # notes after the chapter that marks them ("[1]  See Col. Henderson ..."), and their marks
    note_lines, marks = end_notes([part for part in parts if isinstance(part, list)])
    blocks: list[Block] = []
    kept_aside: list[Block] = []  # those notes, never story
    for part in parts:
        if isinstance(part, Block):
            blocks.append(part)
            continue
        at = [index for index, _ in part]
        texts = [text for _, text in part]
        if notes := _NOTES_OPENING.match(texts[0].strip()):
            blocks.append(Block("heading", notes.group(1)))  # "FOOTNOTES: 1 [ Patois ...]"
            texts[0] = notes.group(2)
        texts[0] = without_drop_cap(texts[0])
        if footnotes or marks:  # their marks set apart: "[5]"
            texts = [
                _without_notes(text, footnotes | marks.get(index, set()), i == 0)
                if footnotes or index in marks
                else text
                for i, (index, text) in enumerate(zip(at, texts, strict=True))
            ]
        joined = NOTE_MARK.sub("", " ".join(text.strip() for text in texts))
        joined = unmarked(without_loose_notes(joined) if loose_notes else joined)
        joined = without_glossed_marks(joined, glossed) if glossed else joined
        aside = at[0] in note_lines
        (kept_aside if aside else blocks).append(Block("text", joined, tuple(texts)))
    blocks = _signatures_apart(blocks)
    if kept_aside:  # after the story, as a book's own notes are: reference, not story
        blocks.extend([Block("heading", "NOTES"), *kept_aside])
    return blocks


# a name a heading credits: "INTRODUCTION BY PHILIP LITTELL", "Preface by Henry James"
_CREDITED = re.compile(r"\b(?i:by)\s+([A-Z][\w.'’-]*(?:\s+[A-Z][\w.'’-]*){1,3})\.?$")
# a paragraph's last sentence, a few words at most: "... the pen runs and laughs. PHILIP LITTELL."
_SIGNATURE = re.compile(r"(?<=[.!?\"”’])\s+([^\W\d_][\w.'’ -]{0,60}?)\.?$")


def _signatures_apart(blocks: list[Block]) -> list[Block]:
    """The blocks with a signature run into the paragraph it signs set apart, a paragraph of its
    own as the HTML sets it: a name a heading of the book credits, after a sentence's end, at
    the end of the last paragraph before a heading (Candide's 19942.txt wraps its
    introduction's "PHILIP LITTELL." into its last paragraph, "... the pen runs and laughs.
    PHILIP", the title page's "INTRODUCTION BY PHILIP LITTELL" credits him)."""
    names = {
        " ".join(found.group(1).casefold().split())
        for block in blocks
        if block.kind == "heading" and (found := _CREDITED.search(block.text.strip()))
    }
    if not names:
        return blocks
    apart: list[Block] = []
    for index, block in enumerate(blocks):
        last = index + 1 == len(blocks) or blocks[index + 1].kind == "heading"
        signed = _SIGNATURE.search(block.text) if block.kind == "text" and last else None
        if signed is None or " ".join(signed.group(1).casefold().split()) not in names:
            apart.append(block)
            continue
        signature = block.text[signed.start(1) :]
        words = len(signature.split())
        apart.append(
            Block("text", block.text[: signed.start()], _without_last_words(block.lines, words))
        )
        apart.append(Block("text", signature, (signature,)))
    return apart


def _without_last_words(lines: tuple[str, ...], count: int) -> tuple[str, ...]:
    """A paragraph's lines without its last `count` words (a line left empty goes)."""
    kept = list(lines)
    while count and kept:
        words = len(kept[-1].split())
        if words <= count:
            kept.pop()
            count -= words
        else:
            kept[-1] = kept[-1].rstrip().rsplit(None, count)[0]
            count = 0
    return tuple(kept)


INDENT = 2  # a paragraph's first line set in this many spaces or more opens it
PROSE_LINE = 50  # a prose paragraph's wrapped lines are this long on average


def _indent(raw: str) -> int:
    return len(raw) - len(raw.lstrip(" "))


def _opens_indented_paragraph(lines: list[str], raw: str) -> bool:
    """Whether `raw` opens a paragraph of its own though no blank line is set before it: a
    book whose paragraphs are told apart by their first line's indent alone (The Art of War's
    132.txt: its preface and introduction, 13,000 words, had been two and sixty paragraphs).
    It is indented as the paragraph's first line was, the lines between are flush left and as
    long as wrapped prose (verse and a block quote indented throughout are not parted), and the
    line before it ends a sentence."""
    first, rest = lines[0], lines[1:]
    if not rest or _indent(raw) < INDENT or _indent(first) != _indent(raw):
        return False
    if any(_indent(line) for line in rest):
        return False
    wrapped = [len(line) for line in lines[:-1]] or [len(first)]
    if sum(wrapped) / len(wrapped) < PROSE_LINE:
        return False
    opening = raw.lstrip()[:1]
    return (opening.isupper() or opening in "\"“'‘(") and lines[-1].rstrip()[-1:] in ".!?\"”’':)]"


def _without_notes(raw: str, notes: set[int], opening: bool) -> str:
    """A line of a paragraph, indented as it was, without the marks of the `notes` the book
    gives (`without_bracketed_notes`); the paragraph's `opening` line keeps a note's label."""
    indent = raw[: len(raw) - len(raw.lstrip())]
    return indent + without_bracketed_notes(raw.strip(), notes, opening=opening).strip()


# a printed page's number on a line of its own ("29)", "{29}", "[Pg 29]", "[p. 29]")
_PAGE_MARK = re.compile(r"^(?:\(?(\d{1,4})\)|\{(\d{1,4})\}|\[(?:Pg|Page|p\.)\s*(\d{1,4})\])$", re.I)
PAGE_MARKS = 3  # this many, mostly rising, and a book's lines of numbers alone are its pages


def _without_page_marks(lines: list[str]) -> list[str]:
    """The lines without a printed edition's page numbers set on lines of their own (Jekyll
    and Hyde's "29)": 107 paragraphs of a number, and sentences cut in two by them): a page
    number between two parts of one paragraph joins them again. Only where there are
    `PAGE_MARKS` or more, in rising order: a lone "(3)" stays what it is."""
    marks = [
        (index, int(next(group for group in found.groups() if group)))
        for index, line in enumerate(lines)
        if (found := _PAGE_MARK.match(line.strip())) and isolated(lines, index)
    ]
    rising = sum(1 for (_, a), (_, b) in itertools.pairwise(marks) if b > a)
    if len(marks) < PAGE_MARKS or rising * 5 < (len(marks) - 1) * 4:
        return lines
    return _without_lines(lines, [index for index, _ in marks])


def _without_lines(lines: list[str], marks: list[int], *, heads: bool = False) -> list[str]:
    """The lines without those at `marks` (a page's number or running head): one that cuts a
    paragraph in two (the line above ends in no stop, the line below opens in lower case; below
    a running head, the line below opens in lower case, whatever ends the one above: "gifts
    were ... a man of business;" / "33  THE CUSTOM-HOUSE" / "prompt, acute, clear-minded")
    joins its parts again."""
    dropped: set[int] = set()
    for index in marks:
        dropped.add(index)
        before = next((i for i in range(index - 1, -1, -1) if lines[i].strip()), None)
        after = next((i for i in range(index + 1, len(lines)) if lines[i].strip()), None)
        if before is None or after is None:
            continue
        ends = re.search(r"[.!?:;\"”’)\]]$", lines[before].strip())
        if (heads or not ends) and lines[after].strip()[0].islower():  # cut by the page
            dropped.update(range(before + 1, after))
    return [line for index, line in enumerate(lines) if index not in dropped]


# a printed page's running head on a line of its own: the page's number and a title in capitals,
# either way round ("8   THE SCARLET LETTER", "THE MARKET-PLACE    63"; "7I", a scan's 71)
_RUNNING_HEAD = re.compile(
    r"^(?:(?P<before>\d[\dIl]{0,3})\s+(?P<title>[^a-z*]*[A-Z][^a-z*]*?)"
    r"|(?P<titled>[^a-z*]*[A-Z][^a-z*]*?)\s+(?P<after>[\dIl]{0,3}\d[\dIl]{0,3}))$"
)
_DIVISION = re.compile(rf"^(?:{DIVISIONS})\b")  # "CHAPTER 12" is a heading, whatever follows
RUNNING_HEADS = 3  # the same title with this many page numbers, mostly rising: running heads
RUNNING_HEAD_PAGES = 2  # a title set once this few pages from a running head is one too


def _without_running_heads(lines: list[str]) -> list[str]:
    """The lines without a printed edition's running heads (The Scarlet Letter's scrlt11.txt,
    a scan of a printed book: "8   THE SCARLET LETTER" on its left pages, "THE MARKET-PLACE  63"
    on its right ones, 284 of them, had been paragraphs of the story, sentences cut in two by
    them): a title in capitals and a page number standing alone, in a book where a title comes
    with `RUNNING_HEADS` page numbers or more and those heads' numbers mostly rise; then any
    such title twice ("THE CHILD AT THE BROOK-SIDE 351", a scan's 251), or once a page or two
    from a running head's number ("THE PASTOR AND HIS PARISSIONER 239"). A head between two
    parts of one paragraph joins them again."""
    found: dict[int, tuple[str, int]] = {}
    for index, line in enumerate(lines):
        head = _RUNNING_HEAD.match(line.strip())
        if head is None or not isolated(lines, index):
            continue
        title = " ".join((head.group("title") or head.group("titled")).split())
        number = head.group("before") or head.group("after")
        if len(title) <= 60 and not _DIVISION.match(title):
            found[index] = (title, int(number.replace("I", "1").replace("l", "1")))
    by_title: dict[str, set[int]] = {}
    for title, number in found.values():
        by_title.setdefault(title, set()).add(number)
    if not any(len(numbers) >= RUNNING_HEADS for numbers in by_title.values()):
        return lines
    kept = [index for index, (title, _) in found.items() if len(by_title[title]) >= 2]
    numbers = [found[index][1] for index in kept]
    rising = sum(1 for a, b in itertools.pairwise(numbers) if b > a)
    if rising * 5 < (len(numbers) - 1) * 4:  # not a printed book's pages
        return lines
    marks = list(kept)
    for index, (_title, number) in found.items():
        near = [found[i][1] for i in kept if i < index][-1:] + [
            found[i][1] for i in kept if i > index
        ][:1]
        if index not in kept and any(abs(number - page) <= RUNNING_HEAD_PAGES for page in near):
            marks.append(index)
    return _without_lines(lines, sorted(marks), heads=True)
