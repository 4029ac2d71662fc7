"""Marks in a book's text that are none of its words: a footnote's number set against a word
(`NOTE_MARK`, in braces or parentheses too), in parentheses set apart (`without_loose_notes`)
or in brackets, and plain text's _emphasis_ (`unmarked`); and a plain-text heading as a title
(`plain_title`)."""

from __future__ import annotations

import re

# a footnote's number set against the word or quotation it annotates: 'a _fagot!_4 Take'
BRACED_NOTE = (  # a number, or a number and a letter: Beowulf's "{0a}", "{1b}"
    r"(?:(?<=[^\W\d_])|(?<=[.,;:!?\"”’']))\{\d{1,3}[a-z]?\}"  # 'the gig,"{1} luckily'
    r"|\s+\{\d{1,3}[a-z]?\}(?=\s|$)"  # after a space: "woods of half a stang, {301} and"
)
# in parentheses against the word: "Shakespere(1) have", "ARGUMENT.(40)" (the Iliad's 6130-0.txt,
# 291 of them); not a list's "—(1) political, (2) administrative"
PAREN_NOTE = r"(?:(?<=[^\W\d_])|(?<=[.,;:!?\"”’'_]))\(\d{1,3}\)(?=[\s.,;:!?\"”’')—-]|$)"
# (and after a question or an exclamation closing its parentheses: "Romainville. (Why
# Romainville?)5", Les Misérables' 135-0.txt)
NOTE_MARK = re.compile(
    rf"(?:(?<=[^\W\d_][.,;:!?])|(?<=[\"”’_\]])|(?<=[^\W\d_][.!?]\)))\d{{1,3}}(?=[\s.,;]|$)"
    rf"|{BRACED_NOTE}|{PAREN_NOTE}"
)
# and, in a book that sets its notes so (`PAREN_NOTES` of them or more), in parentheses after a
# stop and a space or after a closing parenthesis: 'the secret of the poet." (16)', "memory, (25)
# is", "(his native place)(161)" (the Iliad's 6130-0.txt); not a list's "(1) political, (2)
# administrative", its numbers one after the other in the paragraph
_LOOSE_PAREN_NOTE = re.compile(
    r"(?:(?<=[.,;:!?\"”’'])\s+|(?<=\)))\((\d{1,3})\)(?=[\s.,;:!?\"”’')—-]|$)"
)
PAREN_NOTES = 3


def without_loose_notes(text: str) -> str:
    """A paragraph without its note marks in parentheses set apart (`_LOOSE_PAREN_NOTE`)."""
    numbers = {int(number) for number in re.findall(r"\((\d{1,3})\)", text)}

    def mark(found: re.Match[str]) -> str:
        number = int(found.group(1))
        return found.group(0) if {number - 1, number + 1} & numbers else ""

    return _LOOSE_PAREN_NOTE.sub(mark, text)


# plain text's _italics_ (never a blank for a name: "Mr. ____")
_EMPHASIS = re.compile(r"(?<!\w)_([^\s_](?:[^_]*?[^\s_])?)_(?!\w)")
# a date's ordinal set raised, in italics after its number: "December 21_st_, 1847." (Jane
# Eyre's 1260.txt, under its preface)
_RAISED_ORDINAL = re.compile(r"(?<=\d)_(st|nd|rd|th|d)_(?!\w)")
# a footnote's number in brackets after a word: "Pangloss[1]", "WHO THEY WERE.[34]"
_BRACKETED_NOTE = re.compile(r"(?<=\S)\[\d{1,3}\]")


# a plain text's note, gathered at the end of the book: "[Footnote 6: “THE LAURISTON GARDEN
# MYSTERY”: the table-of-contents lists ...]"
FOOTNOTE = re.compile(r"^\[Footnote (\d{1,3}):", re.M)
# its mark in brackets set apart, after a space or opening a line: "No. 221B, [5] Baker Street",
# "[19] the injured part" (A Study in Scarlet's 244-0.txt); with the space after it before the
# bracket closing a commentary: 'what mine are?" [1] ]' (The Art of War's 132.txt)
_LOOSE_BRACKETED_NOTE = re.compile(r"(?:\s+|^)\[(\d{1,3})\](?:\s+(?=\]))?(?=[\s.,;:!?\]]|$)")


# a note set after its chapter, opening with its number in brackets: "[1]  \"Words on
# Wellington,\" by Sir. W. Fraser." (The Art of War's 132.txt, after each chapter's last section)
_NOTE_LABEL = re.compile(r"^\[(\d{1,3})\]\s+\S")
# a number in brackets anywhere in a paragraph: a note's mark if a note of that number follows
_BRACKETED_NUMBER = re.compile(r"\[(\d{1,3})\]")


def end_notes(paragraphs: list[list[tuple[int, str]]]) -> tuple[set[int], dict[int, set[int]]]:
    """The notes set after the paragraphs that mark them, and those marks: a paragraph opening
    with a number in brackets ("[1]  See Col. Henderson, op. cit.") is a note when a number so
    bracketed stands in the text since the last notes (the chapter's "...mine are?\" [1] ]");
    any other "[1]" is the book's own text, and so is a paragraph opening with one that nothing
    marked ("[33]  We may feel fairly certain", a mark opening a paragraph). `paragraphs` are
    lists of (line index, line); the answer is the first lines of the notes, and for each line
    with a mark, the numbers of the notes it marks."""
    notes: set[int] = set()
    marks: dict[int, set[int]] = {}
    marked: dict[int, list[int]] = {}  # a number → the lines marking it, since the last notes
    in_notes = False
    for paragraph in paragraphs:
        first, opening = paragraph[0]
        label = _NOTE_LABEL.match(opening.strip())
        if label and int(label.group(1)) in marked:
            notes.add(first)
            for index in marked[int(label.group(1))]:
                marks.setdefault(index, set()).add(int(label.group(1)))
            in_notes = True
            continue
        if in_notes:  # the notes are over: the next ones are marked after them
            marked.clear()
            in_notes = False
        for index, line in paragraph:
            for found in _BRACKETED_NUMBER.finditer(line.strip()):
                if index != first or found.start() > 0:  # not a paragraph's opening label
                    marked.setdefault(int(found.group(1)), []).append(index)
    return notes, marks


def without_bracketed_notes(line: str, notes: set[int], *, opening: bool = False) -> str:
    """A line of a paragraph without the marks in brackets set apart of the `notes` the book
    gives ("[Footnote 5: ...]": "[5]"); a mark `opening` the paragraph is a note's own label,
    kept."""

    def mark(found: re.Match[str]) -> str:
        if int(found.group(1)) not in notes or (opening and found.start() == 0):
            return found.group(0)
        return ""

    return _LOOSE_BRACKETED_NOTE.sub(mark, line)


# a note gathered at the end of a plain text that opens with the words it explains, and its
# number: "2 (return) [ Liège: a cork-tree. Pau: a jest on _peau_, skin.]" (Les Misérables'
# 135-0.txt, its HTML edition's link back to the mark left as "(return)"), "[Footnote 2:
# Liege: a cork-tree. ...]" (its 135.txt)
_GLOSSING_NOTE = re.compile(
    r"^(?:(?:FOOTNOTES|ENDNOTES|NOTES):\s+)?(?:(\d{1,3}) \(return\) \[|\[Footnote (\d{1,3}):)"
    r"\s*([^\W\d_][^\W\d_'’-]*(?:[ '’-][^\W\d_]+){0,3}):",
    re.M,
)


def glossed_words(text: str) -> dict[int, str]:
    """The words each note of a plain text explains, by the note's number, for the notes that
    open with them (`_GLOSSING_NOTE`)."""
    return {
        int(found.group(1) or found.group(2)): found.group(3)
        for found in _GLOSSING_NOTE.finditer(text)
    }


def without_glossed_marks(text: str, glossed: dict[int, str]) -> str:
    """A paragraph without the marks set apart after the words a note explains, the note's
    number after a space ("to write to Liège 2 for corks", its note "2 (return) [ Liège: a
    cork-tree. ...]"): surely the note's mark. A number after any other word is the story's
    own ("he was 2 years old"), kept."""
    for number, words in glossed.items():
        text = re.sub(
            rf"(?<!\w)({re.escape(words)})\s+{number}(?=[\s.,;:!?]|$)", r"\1", text, flags=re.I
        )
    return text


# an HTML edition's link to a note, left in a plain text: 'va.<a href="#linknote-70"' and, on
# the next line, 'name="linknoteref-70" id="linknoteref-70">70</a>' (Les Misérables' 135-0.txt)
_NOTE_LINK = re.compile(r"[ \t]*<a\s[^<>]*?href=[\"']#[^<>]*>\s*\d{1,3}[a-z]?\s*</a>")


def without_note_links(text: str) -> str:
    """A plain text without an HTML edition's links to its notes, tags and number."""
    return _NOTE_LINK.sub("", text)


# a drop cap's mark before a paragraph's first capital: "|MRS. Rachel Lynde lived just where"
# (Anne of Green Gables' 45-0.txt, each chapter's first paragraph); not a table's "| A | B |"
_DROP_CAP = re.compile(r"^\|(?=[A-Z][^|]*$)")


def without_drop_cap(line: str) -> str:
    """A paragraph's first line without a drop cap's mark before its first letter."""
    indent = line[: len(line) - len(line.lstrip())]
    return indent + _DROP_CAP.sub("", line.lstrip())


def unmarked(text: str) -> str:
    """Plain text's words without its _emphasis_ marks and bracketed note numbers."""
    text = _RAISED_ORDINAL.sub(r"\1", _BRACKETED_NOTE.sub("", text))
    return _EMPHASIS.sub(r"\1", text)


# "Underground*": a footnote's mark; "ARGUMENT.(40)"; "THE LAURISTON GARDEN MYSTERY [6]" (A
# Study in Scarlet's, "{6}" in study10.txt: a title never ends in a number in brackets)
# a footnote's number in brackets at a heading's end: "OM DEN ZUID[11]." (Ontboezemingen)
TITLE_BRACKET_NOTE = re.compile(r"(?<=[^\W\d_])\[\d{1,3}\](?=\.?\s*$)")
_TITLE_NOTE_MARK = re.compile(
    rf"(?<=\w)\s*[*†‡]+$|{PAREN_NOTE}|{TITLE_BRACKET_NOTE.pattern}"
    r"|\s+(?:\[\d{1,3}\]|\{\d{1,3}\})$"
)


def plain_title(text: str) -> str:
    """A heading of a plain-text book as a title: `unmarked`, without a footnote's mark at its
    end ("Underground*", Notes from the Underground), one space between words ("III.  THE
    RECOGNITION" is "III. THE RECOGNITION"), without a brace marking a poem's title ("}
    Starting from Paumanok": Leaves of Grass's lvgrs10.txt)."""
    title = " ".join(_TITLE_NOTE_MARK.sub("", unmarked(text)).split())
    return title.removeprefix("} ")
