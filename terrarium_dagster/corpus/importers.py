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
  markers, and soft hyphens;
- front matter before the first heading (title page, dedication, producer credits; the dry run
  says how many words), unless the first heading is the story's second part ("II") and the text
  before it is story (`OPENING_WORDS`): then it is the first chapter; or it is story under no
  heading at all (`PROLOGUE_WORDS`): then it is the "Prologue";
- contents pages and lists of illustrations (a section so named, or one with no prose: only
  short lines, a table; stanzas are a poem, kept);
- front matter under its own heading (copyright, dedication, epigraph, acknowledgements, "also
  by", a title page's publication line or year: "Published March, 1909.", "MCMIX");
- back matter (a glossary or a vocabulary, an appendix, an index, notes, a transcriber's note,
  and what follows them that is not a numbered chapter) and lists such as a dramatis personae
  or a map: never story; kept aside as the book's reference text (`Book.reference`, written
  beside the corpus as `<corpus>.reference.md`).

Headings: in plain text, a line standing alone that reads "CHAPTER I" / "Chapter 12" / "BOOK II"
(with its title on the same or the next line), a number or Roman numeral alone or before a
title ("IV.", "12. The Salt Road", "01 My Early Home"; not a page's running head), or a named
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
other: front-matter prose that is story is kept.

A file it cannot read is an `InputError` naming the problem, and nothing is written.
`read_book` does the reading alone (`terrarium import --dry-run` prints what it found).
"""

from __future__ import annotations

import contextlib
import difflib
import html
import itertools
import re
import sqlite3
import warnings
from collections import Counter
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
    r"|^\s*(?:The )?End of (?:the |this )?Project Gutenberg(?:'s|’s)?\b"
    r"|^\s*\*{3}\s*START:? FULL LICENSE",
    re.I,
)
# the 1990s trailer an HTML edition may end with (Dorian Gray's dgray10h.htm); the same line
# opens the header of its text editions, so it ends the story only in the second half
_LATE_END_MARKERS = re.compile(r"^\s*\*+\s*This file should be named\b", re.I)
_GUTENBERG_TITLE = re.compile(r"^\s*Title:\s*(.+?)\s*$", re.M)
# "[Illustration: ...]", "[Frontispiece]", "[Picture: Man reading book]" (Three Men in a Boat)
_ILLUSTRATION = re.compile(r"\[\s*(?:(?:Illustration|Frontispiece)\b|Picture:)[^\]]*\]", re.I)
# the 1990s editions' header line, where no "Title:" is given: "*The Project Gutenberg Etext of
# Jane Eyre, by Charlotte Bronte*", "*Project Gutenberg's The Picture of Dorian Gray by Oscar
# Wilde*" (that form only with its byline)
_ETEXT_OF = re.compile(
    r"^[\s*]*(?:This is )?(?:The )?Project Gutenberg"
    r"(?:(?:'s|’s)? E-?(?:text|book) of |(?:'s|’s)? E-?(?:text|book) (?=.+, by )"
    r"|(?:'s|’s) (?=.+ by ))"
    r"(.+?)[\s*]*$",
    re.M | re.I,
)
_ETEXT_BYLINE = re.compile(r",?\s+by(?:\s+\S.*)?$", re.I)  # "..., by Victor Hugo"; "... by" wrapped
_CREDIT = re.compile(
    r"^(?:produced by|prepared by|e-?text prepared by|this e-?text was prepared|transcribed "
    r"from|transcriber'?s? notes?\b)",
    re.I,
)

# -- headings ------------------------------------------------------------------------------------

_UNITS = r"one|two|three|four|five|six|seven|eight|nine"
_NUMBER_WORDS = (  # "TWENTY-ONE", "FORTY", "one hundred and two" as well as "ELEVEN"
    rf"(?:(?:one |a )?hundred(?: and)?[ -])?"
    rf"(?:(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)(?:[ -](?:{_UNITS}))?|"
    rf"ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|"
    rf"{_UNITS})|one hundred|a hundred|the first|the second|the third|the last"
)
# "ACT FIRST", "BOOK SECOND" (Hedda Gabler's acts, Les Misérables' books): after a division only
_ORDINALS = (
    r"(?:(?:twenty|thirty|forty|fifty)[ -])?(?:first|second|third|fourth|fifth|sixth|seventh|"
    r"eighth|ninth)|tenth|eleventh|twelfth|thirteenth|fourteenth|fifteenth|sixteenth|"
    r"seventeenth|eighteenth|nineteenth|(?:twen|thir|for|fif)tieth"
)
_DIVISIONS = (
    "CHAPTER|Chapter|BOOK|Book|PART|Part|STAVE|Stave|VOLUME|Volume|ADVENTURE|Adventure|TALE|Tale|"
    "STORY|Story|LETTER|Letter|CANTO|Canto|EPISODE|Episode|ACT|Act"
)
# a paper of a series numbered alone on its line: "FEDERALIST No. 1", "Letter No. 12"
_SERIES_NUMBER = r"[A-Z][A-Za-z]{2,20}\s+No\.\s*\d{1,3}\.?"
# a play's act after its ordinal, alone on its line: "FIRST ACT" (The Importance of Being
# Earnest); a "FIRST PART" only groups chapters with titles of their own (Siddhartha's)
_ORDINAL_DIVISION = rf"(?i:{_ORDINALS})\s+(?:ACT|Act)\.?"
# a part named by its ordinal, alone on its line: "SECOND PART" (Siddhartha's 2500.txt, over its
# titled chapters and a dedication): a named heading, not a strong one, so the chapters' bare
# titles are still found
_ORDINAL_GROUP = re.compile(rf"^(?i:{_ORDINALS})\s+(?:PART|Part|BOOK|Book|VOLUME|Volume)\.?$")
_STRONG = re.compile(
    rf"^(?:{_DIVISIONS})\s+"
    rf"(?:[\dIVXLCDM]+\b|(?i:{_NUMBER_WORDS}|{_ORDINALS})\b).{{0,80}}$"
    rf"|^{_SERIES_NUMBER}$|^{_ORDINAL_DIVISION}$"
)
_NUMBERED = re.compile(
    r"^(?:[IVXLCDM]+|\d{1,3})\.?$"  # "IV", "12."
    # "IV. THE RIVER BANK"; not "M. Madeleine replied" nor "D. Appleton and Co." (initials)
    # nor "IV. MR. BADGER" (a title's abbreviations are no stop: The Wind in the Willows)
    r"|^(?:(?![MD]\.)[IVXLCDM]+|\d{1,3})[.:]\s+(?=[A-Z\"“‘'])"
    r"(?:\b(?:MRS?|Mrs?|DR|Dr|ST|St)\.|[^.!?]){1,71}[.]?[\"”’']?$"
    # "1 THE THREE PRESENTS OF D'ARTAGNAN THE ELDER", "01 My Early Home": a number and a title,
    # capitalised (`_number_and_title`)
    r"|^\d{1,3}\s+[A-Z\"“‘'][^!?;\d]{0,78}(?<![.,:])$"
)
_NUMBER_AND_TITLE = re.compile(r"^\d{1,3}\s+(\S.*)$")
# words a title leaves in lower case; a "numbered title" with more other lower-case words is a
# numbered sentence of the story ("II. A Loose-Fish is fair game for anybody who can catch it.")
_SMALL_WORDS = frozenset(
    ("a", "an", "and", "as", "at", "but", "by", "for", "from", "in", "into", "nor", "of", "on",
     "or", "over", "the", "to", "under", "upon", "with")
)  # fmt: skip
_STORY_SECTIONS = (
    "(?:the )?(?:foreword|preface|prologue|prolog|epilogue|introduction)|"
    r"note to the \w+ edition|(?:preface|introduction|foreword) to (?:the )?[\w ,'’-]{1,40}|"
    "foreword|preface|prologue|prolog|epilogue|introduction|afterword|interlude|conclusion|"
    "postscript|envoi|author's note|a note from the author|prelude|finale|"
    # Don Quixote's "THE AUTHOR'S PREFACE", a translator's own
    r"(?:the )?(?:author|translator|editor)['’]s (?:preface|introduction|foreword|prologue)|"
    # The Diary of a Nobody's "INTRODUCTION BY MR. POOTER"
    r"(?:preface|introduction|foreword) by [\w .,'’-]{1,40}|"
    # Beowulf's "PRELUDE OF THE FOUNDER OF THE DANISH HOUSE", before its numbered cantos
    r"prelude (?:of|to) (?:the )?[\w ,'’-]{1,50}|"
    r"(?:first|second|third|last) epilogue(?:: [\w ,'’-]{1,30})?"  # War and Peace's two
)
_CONTENTS_SECTIONS = "contents|table of contents|list of illustrations|illustrations"
_BACK_SECTIONS = (
    r"glossary\b.*|a glossary\b.*|appendix\b.*|appendices|index|notes|endnotes|footnotes|"
    r"vocabulary|"  # The Song of Hiawatha's list of its Ojibway words
    r"bibliography|transcriber'?s? notes?|about the author|the end|"
    r"errata|corrigenda|"  # a printed list of misprints and their corrections (Ontboezemingen)
    r"(?:a )?note on the (?:text|texts|edition|translation)"  # Northanger Abbey's editor's
)
# Front matter that is never story (left out), and lists a reader may want beside the story
# wherever they stand (kept for reference, like back matter).
_FRONT_SECTIONS = (
    r"copyright\b.*|colophon|dedication(?: of (?:the )?(?:volume|part|book) [\w]+)?|epigraph|"
    r"title ?page|half[- ]title|also by\b.*|"
    # Evelina's "ORIGINAL INSCRIPTION: TO DR. BURNEY" (a poem to her father) and "ORIGINAL
    # DEDICATION.: TO THE AUTHORS OF THE MONTHLY AND CRITICAL REVIEWS."
    r"inscription\b.*|original (?:inscription|dedication)\b.*|"
    r"other (?:books|works) by\b.*|acknowledge?ments?|"
    r"imprint|uncopyright|about this (?:e-?book|edition)|"  # as Standard Ebooks' EPUBs have them
    r"publishers?['’]?s?['’]? note|"  # Pamela's, on Richardson's life: "PUBLISHERS' NOTE"
    r"editor['’]?s?['’]? note|"  # The Scarlet Letter's, on Hawthorne's life and works
    # a title page's publication lines: "Published March, 1909.", its year alone ("MCMIX")
    r"(?:first )?published\b.*|"
    r"(?-i:(?=M.{2})M{1,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3}))"
)
_CAST_SECTIONS = (
    r"dramatis personae|cast of characters|list of characters|characters|maps?|"
    # a play's cast and its list of settings (The Importance of Being Earnest)
    r"(?:the )?persons (?:in|of) the (?:play|drama|dialogue)|(?:the )?scenes of the play|"
    r"(?:the )?persons represented|"  # the 1990s Shakespeare texts' cast (Macbeth's 1533.txt)
    r"(?:a )?(?:note on|guide to) pronunciation|pronunciation guide"
)


def _heading_named(*sections: str) -> re.Pattern[str]:
    """A heading that is one of the named `sections` (alternatives), with a stop or colon."""
    return re.compile(rf"^(?:{'|'.join(sections)})[.:]?$", re.I)


_FRONT = _heading_named(_FRONT_SECTIONS)
# Story sections that end a story or a text: before the first numbered chapter, not story.
_ENDING = _heading_named("postscript|afterword|epilogue|conclusion|envoi|finale")
_CAST = _heading_named(_CAST_SECTIONS)
_ONLY_NUMBER = re.compile(
    rf"^(?:(?:{_DIVISIONS})\s+)?"
    rf"(?:[IVXLCDM]+|\d{{1,3}}|(?i:{_NUMBER_WORDS}))\.?$"
    rf"|^(?:{_DIVISIONS})\s+(?i:{_ORDINALS})\.?$"
    rf"|^{_SERIES_NUMBER}$|^{_ORDINAL_DIVISION}$"
)
_NAMED = _heading_named(
    _STORY_SECTIONS, _CONTENTS_SECTIONS, _BACK_SECTIONS, _FRONT_SECTIONS, _CAST_SECTIONS
)
_CONTENTS = _heading_named(_CONTENTS_SECTIONS)
_BACK = _heading_named(_BACK_SECTIONS)
_CHAPTER_NUMBER = re.compile(
    rf"^(?:{_DIVISIONS})\s+(?:[\dIVXLCDM]+\b|(?i:{_NUMBER_WORDS}|{_ORDINALS})\b)"
    rf"|^{_SERIES_NUMBER}$|^{_ORDINAL_DIVISION}$"
    rf"|{_NUMBERED.pattern}"
    r"|^\d{1,3}\s+[A-Z\"“‘']|^(?:(?![MD]\.)[IVXLCDM]+|\d{1,3})[.:]\s+[A-Z\"“‘']"
)  # a heading that starts with its chapter's number, its title however long
_MD_ATX = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_MD_SETEXT = re.compile(r"^(=+|-+)\s*$")
_BREAK = re.compile(r"^\s*(?:\*\s*){3,}\s*$|^\s*(?:-{3,}|_{3,}|#)\s*$")
_TABLE_LINE = re.compile(r"^\s*(?:\||\+[-=+:]+\+?$|[-=:\s|+]+$)")
_SENTENCE_END = re.compile(r"[.!?…][\"”’')\]]*(?:\s|$)")
# a contents line: a chapter's title, then its page after spaces or dot leaders
_PAGE_REFERENCE = re.compile(r"(?:\s{2,}|\.\s*\.)\s*(?:\d{1,4}|[ivxlc]{1,6})\s*$")
# a dedication among headings: "To Romain Rolland, my dear friend" (not a letter's "To Mrs.
# Saville, England.")
_DEDICATION = re.compile(r"^(?:Dedicated to\b|To [^,]{2,60},\s+my\b)", re.I)
# an author's byline ("BY NICOLO MACHIAVELLI", "Translated by ..."), not a title that opens with
# "by" ("BY THE RIVER": Siddhartha)
_BYLINE = re.compile(
    # "Translated from the French by Eleanor Marx-Aveling" too
    r"^(?:by|(?:written|illustrated|translated(?: (?:from|out of) (?:the )?\w+)?|edited"
    r"|with illustrations) by)\b"
    r"(?!\s+(?:the|a|an)\b)",
    re.I,
)


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
    notes: list[str] = field(default_factory=list)  # how the file was read, where it was guessed


@dataclass
class ImportReport:
    path: str
    chapters: int
    paragraphs: int
    words: int
    title: str | None = None
    reference: str | None = None
    sections: tuple[str, ...] = ()  # what `reference` holds ("DRAMATIS PERSONAE", "GLOSSARY")
    left_out: tuple[str, ...] = ()  # what was not story, each with why ("CONTENTS (contents)")
    notes: tuple[str, ...] = ()  # how the file was read, where it was guessed (`guess_decoding`)


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
        if _END_MARKERS.match(texts[index]) or (
            index >= half and _LATE_END_MARKERS.match(texts[index])
        ):
            end = index
            break
    return start, end


_LINE_END = re.compile(r"\r*\n|\r")  # "\r\r\n" too: a CRLF file converted once more


def _lines(text: str) -> list[str]:
    """A text's lines, whatever ends them: a line feed, a carriage return, or carriage returns
    and a line feed ("\r\n"; "\r\r\n" in Great Expectations' grexp10a.txt, where reading
    each "\r" as a line's end made every line a paragraph of its own)."""
    return _LINE_END.split(text)


def strip_gutenberg(text: str) -> str:
    """The text inside a Project Gutenberg header and footer (the whole text without them)."""
    lines = _lines(text)
    start, end = _story_span(lines)
    return "\n".join(lines[start:end])


def gutenberg_title(text: str) -> str | None:
    """The `Title:` of a Project Gutenberg header, if the text has one before its story."""
    head = text[:20_000]
    marker = re.search(_START_MARKERS.pattern, head, re.I | re.M)
    match = _GUTENBERG_TITLE.search(head[: marker.start()] if marker else head)
    if match is None:
        etext = _ETEXT_OF.search(head[:3000])
        title = _ETEXT_BYLINE.sub("", etext.group(1)) if etext else ""
        return " ".join(title.split()).strip('"“”') or None
    # a header whose lines an HTML edition runs together: "Title: X Author: Y Release Date: ..."
    title = _NEXT_FIELD.split(match.group(1), maxsplit=1)[0]
    return " ".join(title.split()) or None


_NEXT_FIELD = re.compile(
    r"\s+(?:Author|Authors|Translator|Illustrator|Editor|Release Date|Posting Date|Language|"
    r"Character set encoding|Produced by|Credits|Most recently updated|Original publication):",
)


def _without_illustrations(text: str) -> str:
    """The text without illustration markers and soft hyphens (U+00AD, a hyphenation hint:
    *Huckleberry Finn*'s hfinn11.txt has 983, "Aunt Polly -\xad Tom's Aunt Polly")."""
    return _ILLUSTRATION.sub("", text).replace("\xad", "")


# -- plain text ----------------------------------------------------------------------------------


# a title set letter-spaced: "P R E F A C E", "T O M   S A W Y E R" (Tom Sawyer's 74.txt); its
# capitals a space apart, its words three spaces or more
_LETTER_SPACED = re.compile(r"^[A-Z](?: [A-Z])+(?: {3,}[A-Z](?: [A-Z])+)*$")
LETTER_SPACED_LETTERS = 5  # "A B C" in a sentence of the story is no title


def _unspaced(lines: list[str], index: int) -> str:
    """The line at `index`, a letter-spaced title standing alone read as its words ("PREFACE",
    "TOM SAWYER"), centred where it was; any other line as it is."""
    raw = lines[index]
    line = raw.strip()
    if not _LETTER_SPACED.match(line) or not _isolated(lines, index):
        return raw
    words = ["".join(word.split()) for word in re.split(r" {3,}", line)]
    if sum(len(word) for word in words) < LETTER_SPACED_LETTERS:
        return raw
    text = " ".join(words)
    indent = len(raw) - len(raw.lstrip()) + (len(line) - len(text)) // 2
    return " " * indent + text if raw[:1].isspace() else text


def _isolated(lines: list[str], index: int) -> bool:
    before = index == 0 or not lines[index - 1].strip()
    after = index + 1 >= len(lines) or not lines[index + 1].strip()
    return before and after


BARE_INDENT = 4  # a bare title is indented at most this much; more is centred, or a sign
BARE_WORDS = 10  # a bare title has at most this many words
# and one a contents page lists at most this many ("THE STORY OF THE YOUTH WHO WENT FORTH TO
# LEARN WHAT FEAR WAS", Grimms' Fairy Tales)
LISTED_WORDS = 16


def _bare_capitals(raw: str, words: int = BARE_WORDS) -> bool:
    """A line in capitals standing for a title: "THE SISTERS" (not "R. I. P.", not indented
    like a sign or a newspaper headline inside the story), of at most `words` words."""
    line = raw.rstrip()
    if len(line) - len(line.lstrip()) > BARE_INDENT:
        return False
    text = line.strip()
    letters = [c for c in text if c.isalpha()]
    return (
        # "OM" (Siddhartha) too; not a numeral ("IV") nor an initial's letters ("R. I. P.")
        (
            len(letters) >= 3
            or (len(letters) == 2 and text.isalpha() and not _SECTION_NUMBER.match(text))
        )
        and text == text.upper()
        and len(text.split()) <= words
        and not text.endswith((".", ",", ";", ":", "!", "?"))
        and not any(c.isdigit() for c in text)
        and "}" not in text  # a play's brace joining speakers who speak at once
    )


TITLE_CASE_WORDS = 8  # a centred title in title case has at most this many words


def _title_cased(text: str) -> bool:
    """A short line in title case ("Search for Mr. Hyde", "Dr. Lanyon's Narrative"): its first
    word and every word of four letters or more capitalised, no digit, no ending stop."""
    words = text.split()
    return (
        0 < len(words) <= TITLE_CASE_WORDS
        and words[0][:1].isupper()
        and all(word[:1].isupper() for word in words if len(word.strip("'’.,")) >= 4)
        and not text.endswith((".", ",", ";", ":", "!", "?"))
        and not any(c.isdigit() for c in text)
        and "}" not in text  # a play's brace joining speakers who speak at once
    )


CENTRED_TITLES = 3  # a book headed only by centred titles has at least this many chapters
CENTRE_SLACK = 6  # a centred line's middle is at most this far from the page's


def _centred(raw: str, middle: float) -> bool:
    """Whether the line `raw` stands in the middle of the page: indented more than a bare
    title, its middle within `CENTRE_SLACK` of the page's `middle` (`_page_middle`)."""
    indent = len(raw) - len(raw.lstrip())
    return indent > BARE_INDENT and abs(indent + len(raw.strip()) / 2 - middle) <= CENTRE_SLACK


def _page_middle(lines: list[str]) -> float:
    """The middle of the page: half the width that nine lines in ten stay within."""
    lengths = sorted(len(raw.rstrip()) for raw in lines if raw.strip())
    return lengths[len(lengths) * 9 // 10] / 2 if lengths else 0


def _centred_titles(lines: list[str]) -> list[int]:
    """The lines in capitals or title case, centred on the page and standing alone, that head
    the chapters of a book with no other headings ("STORY OF THE DOOR" or "Story of the Door"
    set in the middle of the page: Dr. Jekyll and Mr. Hyde): kept only as `_spaced` keeps bare
    titles, and only when there are at least `CENTRED_TITLES` of them, so a sign set off in the
    story heads nothing, nor a signature set to the right ("HASTIE LANYON" at the margin)."""
    middle = _page_middle(lines)
    candidates = [
        index
        for index, raw in enumerate(lines)
        if _centred(raw, middle)
        and _isolated(lines, index)
        and (_bare_capitals(raw.strip()) or _title_cased(raw.strip()))
        and not _introduced(lines, index)
    ]
    picked = _spaced(lines, candidates) if len(candidates) >= CENTRED_TITLES else []
    return picked if len(picked) >= CENTRED_TITLES else []


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


# a contents page takes at most this many lines (Moby-Dick's 138 entries, a blank line between
# each, take 280)
CONTENTS_LINES = 600


def _contents_titles(lines: list[str]) -> tuple[set[str], set[int]]:
    """The titles a contents page lists (normalised), for books headed by bare titles, and the
    indexes of its lines (never headings themselves)."""
    titles: set[str] = set()
    page: set[int] = set()
    for index, raw in enumerate(lines):
        if not _CONTENTS.match(raw.strip()):
            continue
        blanks = 0
        previous = ""
        for below in range(index + 1, min(index + CONTENTS_LINES, len(lines))):
            line = lines[below]
            if not line.strip():
                blanks += 1
                previous = ""
                if blanks >= 3 and titles:
                    break
                continue
            blanks = 0
            if (
                len(line.split()) > 12
                and titles
                and not _shouted(line.strip())
                and not _CHAPTER_NUMBER.match(line.strip())
            ):  # prose: the contents page has ended (a title in capitals is none, nor a long
                # one after its chapter's number: Moby-Dick's "CHAPTER 56. Of the Less ...")
                break
            entry = re.sub(r"^\s*(?:[IVXLCDM]+|\d+)[.:]?\s+", "", line.strip())
            entry = re.sub(r"\s*(?:\.\s*){2,}.*$|\s+\d+$", "", entry)  # dot leaders, pages
            if entry:
                key = _title_key(entry)
                if key == previous:  # a line set twice, right under itself (Grimms' Fairy
                    # Tales' "THE JUNIPER-TREE" over "the juniper-tree."): one entry
                    page.add(below)
                    continue
                if key in titles:
                    break  # a title again: the first chapter's heading, past the page
                previous = key
                page.add(below)
                titles.add(key)
                # "INTRODUCTORY.     THE CUSTOM-HOUSE": the title in its column, too
                titles.add(_title_key(re.split(r"\s{3,}", entry)[-1]))
        break
    return titles, page


def _unstopped(raw: str) -> str:
    """A title without its final stop and a note in brackets after it ("EXTRACTS. (Supplied
    by a Sub-Sub-Librarian)." is "EXTRACTS")."""
    return re.sub(r"\s*\([^)]*\)\.?$", "", raw.rstrip()).rstrip(".")


def _title_key(text: str) -> str:
    """A title to compare: its words, lower case, "&" as "and" ("The Fortunes & Misfortunes of
    the Famous Moll Flanders &c." is the book "The Fortunes and Misfortunes ...")."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold().replace("&", " and ")).split())


# A contents page may misspell a title its chapter heading spells right (Dubliners' "Couterparts"
# for "COUNTERPARTS", which then ran on inside the story before it): a title this alike (and this
# long) is the one listed.
LISTED_ALIKE = 0.9
LISTED_ALIKE_CHARS = 8


def _listed(key: str, listed: set[str]) -> bool:
    """Whether the title key `key` is one a contents page lists, a letter or so aside."""
    if key in listed:
        return True
    if len(key) < LISTED_ALIKE_CHARS:
        return False
    return any(
        abs(len(key) - len(title)) <= 2
        and difflib.SequenceMatcher(None, key, title).ratio() >= LISTED_ALIKE
        for title in listed
    )


def _shouted(text: str) -> bool:
    return text == text.upper() and any(c.isalpha() for c in text)


def _subtitle_lines(lines: list[str], below: int) -> list[int]:
    """The lines of a title starting at `below`: that line, or up to three lines in capitals
    ("WHICH TREATS OF THE CHARACTER AND PURSUITS OF THE FAMOUS GENTLEMAN DON" / "QUIXOTE OF LA
    MANCHA"), then a blank line."""
    taken = [below]
    while taken[-1] + 1 < len(lines) and lines[taken[-1] + 1].strip():
        taken.append(taken[-1] + 1)
        if len(taken) > 3:
            return []
    if len(taken) > 1 and not all(_shouted(lines[i].strip()) for i in taken):
        return []
    return taken


_ARGUMENT = re.compile(r"^(?:the )?argument\.?$", re.I)  # a book's summary, in verse epics


def _subtitle(lines: list[str], index: int) -> int | None:
    """The index of a chapter's title line under its heading ("CHAPTER I", then "The Salt
    Road"): the next line with text, at most two blank lines below, short, without a final
    period (unless in capitals), and followed by a blank line; or a title in capitals of up to
    three lines. A line without a letter is no title."""
    for below in range(index + 1, min(index + 4, len(lines))):
        text = lines[below].strip()
        if not text:
            continue
        if _STRONG.match(text) or _NAMED.match(text):
            return None  # "VOLUME I." over "CHAPTER I.": two headings
        if not any(c.isalpha() for c in text):
            return None  # a rule or figures ("364" over "___", a sum worked in the story)
        if _ARGUMENT.match(_plain_title(text)):
            # the label of the book's summary, its title under it (the Iliad's "BOOK I.", then
            # "ARGUMENT.(40)", then "THE CONTENTION OF ACHILLES AND AGAMEMNON."): that title
            return _subtitle(lines, below)
        taken = _subtitle_lines(lines, below)
        if len(taken) > 1:
            words = sum(len(lines[i].split()) for i in taken)
            return below if words <= 40 else None
        if not taken:
            return None
        bare = text.rstrip("\"”’'")
        longest = 40 if _shouted(text) else 12
        if len(text.split()) > longest or bare.endswith((":", ";", ",", "—", "-", "!", "?")):
            return None  # a sentence, or a line introducing what follows
        if not bare.endswith(".") or _shouted(text):  # "THE EVE OF THE WAR." is a title
            return below
        return None
    return None


def _continuation(lines: list[str], index: int) -> tuple[int, ...]:
    """The lines a chapter heading with its title wraps onto ("CHAPTER 56. Of the Less
    Erroneous Pictures of Whales, and the True" / "Pictures of Whaling Scenes."): at most two
    short lines right under it, then a blank line."""
    following: list[int] = []
    for below in range(index + 1, min(index + 4, len(lines))):
        text = lines[below].strip()
        if not text:
            return tuple(following) if following else ()
        if len(text.split()) > 14 or len(following) == 2:
            return ()
        following.append(below)
    return tuple(following) if index + 1 + len(following) >= len(lines) else ()


RUNNING_HEAD = 3  # a number and the same title this often is a page's running head
_GROUPING = re.compile(r"^(?:BOOK|Book|PART|Part|VOLUME|Volume)\b")  # groups chapters


def _under_grouping(lines: list[str], index: int) -> bool:
    """Whether the line at `index` is a chapter heading ("CHAPTER XIX") on the line right
    under a volume's, book's or part's heading that opens its block ("VOLUME II."), itself
    followed by a blank line: two headings without the blank line between them."""
    line, above = lines[index].strip(), lines[index - 1].strip() if index else ""
    return bool(
        index
        and _STRONG.match(line)
        and not _GROUPING.match(line)
        and _GROUPING.match(above)
        and _STRONG.match(above)
        and (index == 1 or not lines[index - 2].strip())
        and (index + 1 >= len(lines) or not lines[index + 1].strip())
    )


def _under_title(lines: list[str], index: int) -> bool:
    """Whether the line at `index` is a named section ("PRELUDE OF THE FOUNDER OF THE DANISH
    HOUSE") on the line right under a title in capitals that opens its block ("BEOWULF", in
    Beowulf's bwulf10.txt and bwulf11.txt), itself followed by a blank line: the book's title
    set over the section's heading without a blank line between them."""
    line, above = lines[index].strip(), lines[index - 1].strip() if index else ""
    return bool(
        index
        and _NAMED.match(line)
        and above
        and _bare_capitals(lines[index - 1])
        and (index == 1 or not lines[index - 2].strip())
        and (index + 1 >= len(lines) or not lines[index + 1].strip())
    )


def _running_heads(lines: list[str], strong: dict[int, Any]) -> list[int]:
    """The lines among `strong` that are a number and a title with no stop between that head no
    chapter: a page number and a running head, the same title again and again ("8   THE SCARLET
    LETTER", "10  THE SCARLET LETTER"), and every such line of a book whose chapters have
    headings of another shape ("I. THE PRISON-DOOR" beside "33  THE CUSTOM-HOUSE"); a part,
    book or volume only groups chapters (Black Beauty's "Part I" over "01 My Early Home")."""
    titled = {
        index: " ".join(match.group(1).split())
        for index in strong
        if (match := _NUMBER_AND_TITLE.match(lines[index].strip()))
    }
    chapters = [i for i in strong if i not in titled and not _GROUPING.match(lines[i].strip())]
    if len(chapters) >= 2:  # the chapters have headings of their own ("Part I" groups them)
        return list(titled)
    seen = Counter(titled.values())
    return [index for index, title in titled.items() if seen[title] >= RUNNING_HEAD]


def _listed_together(
    lines: list[str], strong: dict[int, Any], wrapped: dict[int, tuple[int, ...]]
) -> list[int]:
    """The lines among `strong` set one under another with nothing between them but the lines
    they wrap onto, headed alike, none of them heading a chapter later ("ACT I.  Algernon's
    Flat", "ACT II.  The Garden", "ACT III. ...": a play's list of its scenes before its cast,
    its acts headed "FIRST ACT"): a list, not the chapters' headings. A contents page of
    headings that come again ("Chapter 1 PETER BREAKS THROUGH") is left to the contents rules;
    a part, book or volume over a chapter's heading ("VOLUME II." then "CHAPTER XIX") is headed
    otherwise."""
    groups: list[list[int]] = []
    ordered = sorted(strong)
    for here, there in itertools.pairwise(ordered):
        runs_on = wrapped.get(here, ())
        together = (
            not any(
                lines[between].strip() and between not in runs_on
                for between in range(here + 1, there)
            )
            and lines[here].split()[0].casefold() == lines[there].split()[0].casefold()
        )
        if not together:
            continue
        if groups and groups[-1][-1] == here:
            groups[-1].append(there)
        else:
            groups.append([here, there])

    def numbered(index: int) -> str:  # "chapter i" of "CHAPTER I. The Salt Road"
        return " ".join(_title_key(lines[index]).split()[:2])

    listed: list[int] = []
    for group in groups:
        keys = [numbered(index) for index in group]
        if len(set(keys)) < len(keys):  # a contents list, then the first chapter it lists
            continue
        later = {numbered(index) for index in ordered if index > group[-1]}
        if not set(keys) & later:
            listed.extend(group)
    return listed


_ITEM = re.compile(r"^([IVXLCDM]+|\d{1,3})[.:]\s+\S")  # "II.  You are rich.", "5.  Judy, after me."


def _list_items(lines: list[str], strong: dict[int, Any]) -> list[int]:
    """The lines among `strong` that are a number and words next to a paragraph opening with the
    next number (or the one before) fewer than `PROSE_WORDS` words away: a numbered list in
    the story (a letter's "I. You are tall." / "II.  You are rich." / "III.  You hate girls.",
    Daddy-Long-Legs), not chapters, which are never that short. A number alone over its title
    ("IV", then "THE RIVER") is a heading of another shape, left as it is."""
    numbered = [  # every paragraph that opens with a number, a heading or not
        (index, value)
        for index, line in enumerate(lines)
        if (index == 0 or not lines[index - 1].strip())
        and (match := _ITEM.match(line.strip()))
        and (value := _numeral(match.group(1))) is not None
    ]
    items: set[int] = set()
    for (here, number), (there, following) in itertools.pairwise(numbered):
        between = sum(len(lines[i].split()) for i in range(here + 1, there))
        if following == number + 1 and between < PROSE_WORDS:
            items.update((here, there))
    return sorted(items & set(strong))


STANZA_WORDS = 120  # a stanza and the words around it are shorter than this; a chapter never is


def _verse_below(lines: list[str], index: int) -> bool:
    """Whether the paragraph after the line `index` is verse set in from the margin: every line
    indented and short (a stanza), where prose runs from the margin."""
    below = list(
        itertools.takewhile(
            lambda line: bool(line.strip()),
            itertools.dropwhile(lambda line: not line.strip(), lines[index + 1 :]),
        )
    )
    return bool(below) and all(
        line[:1].isspace() and len(line.strip()) < STANZA_LINE_CHARS for line in below
    )


def _stanza_numbers(lines: list[str], strong: dict[int, Any]) -> list[int]:
    """The numbers alone among `strong` ("I.", "II.") that each stand over a stanza, set in,
    the next (or the same number again) fewer than `STANZA_WORDS` words on: a poem's numbered
    stanzas inside a chapter (Pamela's "VERSES ON MY GOING AWAY": "I." over four lines, "II."
    ...; a psalm's stanzas and her version of each, "III." then "III."), not its chapters."""
    numbers = [
        (index, value)
        for index in sorted(strong)
        if _SECTION_NUMBER.match(lines[index].strip())
        and (value := _numeral(lines[index].strip().rstrip("."))) is not None
        and _verse_below(lines, index)
    ]
    stanzas: set[int] = set()
    for (here, number), (there, following) in itertools.pairwise(numbers):
        between = sum(len(lines[i].split()) for i in range(here + 1, there))
        if following in (number, number + 1) and between < STANZA_WORDS:
            stanzas.update((here, there))
    return sorted(stanzas)


def _number_and_title(line: str) -> bool:
    """Whether a line that is a number and words with no stop between ("1 THE THREE PRESENTS",
    "01 My Early Home") has its title in capitals or title case, as a heading has; a line of
    another shape passes ("IV. THE RIVER", "12"). A sentence that opens with a number ("12 men
    rode out") is no heading."""
    match = _NUMBER_AND_TITLE.match(line)  # never "12. The Salt Road": a stop is no space
    if match is None:
        return True
    title = match.group(1).strip()
    return title == title.upper() or _title_cased(title)


def _title_like(line: str) -> bool:
    """Whether a numbered line reads as a title ("IV. THE RIVER BANK", "12. The Salt Road"), not
    a numbered sentence of the story (more than three lower-case words that are not small)."""
    if line.rstrip().endswith((":", ":--", ":—", ",", ";")):
        return False  # a line introducing what follows: "I. said he:--"
    words = re.findall(r"[^\W\d_][\w'’-]*", line)
    return sum(1 for w in words if w[0].islower() and w not in _SMALL_WORDS) <= 3


# a footnote's number set against the word or quotation it annotates: 'a _fagot!_4 Take'
_BRACED_NOTE = (  # a number, or a number and a letter: Beowulf's "{0a}", "{1b}"
    r"(?:(?<=[^\W\d_])|(?<=[.,;:!?\"”’']))\{\d{1,3}[a-z]?\}"  # 'the gig,"{1} luckily'
    r"|\s+\{\d{1,3}[a-z]?\}(?=\s|$)"  # after a space: "woods of half a stang, {301} and"
)
# in parentheses against the word: "Shakespere(1) have", "ARGUMENT.(40)" (the Iliad's 6130-0.txt,
# 291 of them); not a list's "—(1) political, (2) administrative"
_PAREN_NOTE = r"(?:(?<=[^\W\d_])|(?<=[.,;:!?\"”’'_]))\(\d{1,3}\)(?=[\s.,;:!?\"”’')—-]|$)"
_NOTE_MARK = re.compile(
    rf"(?:(?<=[^\W\d_][.,;:!?])|(?<=[\"”’_\]]))\d{{1,3}}(?=[\s.,;]|$)|{_BRACED_NOTE}|{_PAREN_NOTE}"
)
# and, in a book that sets its notes so (`PAREN_NOTES` of them or more), in parentheses after a
# stop and a space or after a closing parenthesis: 'the secret of the poet." (16)', "memory, (25)
# is", "(his native place)(161)" (the Iliad's 6130-0.txt); not a list's "(1) political, (2)
# administrative", its numbers one after the other in the paragraph
_LOOSE_PAREN_NOTE = re.compile(
    r"(?:(?<=[.,;:!?\"”’'])\s+|(?<=\)))\((\d{1,3})\)(?=[\s.,;:!?\"”’')—-]|$)"
)
PAREN_NOTES = 3


def _without_loose_notes(text: str) -> str:
    """A paragraph without its note marks in parentheses set apart (`_LOOSE_PAREN_NOTE`)."""
    numbers = {int(number) for number in re.findall(r"\((\d{1,3})\)", text)}

    def mark(found: re.Match[str]) -> str:
        number = int(found.group(1))
        return found.group(0) if {number - 1, number + 1} & numbers else ""

    return _LOOSE_PAREN_NOTE.sub(mark, text)


# plain text's _italics_ (never a blank for a name: "Mr. ____")
_EMPHASIS = re.compile(r"(?<!\w)_([^\s_](?:[^_]*?[^\s_])?)_(?!\w)")
# a footnote's number in brackets after a word: "Pangloss[1]", "WHO THEY WERE.[34]"
_BRACKETED_NOTE = re.compile(r"(?<=\S)\[\d{1,3}\]")
_NOTES_OPENING = re.compile(r"^(FOOTNOTES|ENDNOTES|NOTES):\s+(\S.*)$")


def blocks_from_text(text: str) -> list[Block]:
    """Headings and paragraphs of a plain-text book (inside its Gutenberg wrapping)."""
    lines = _without_page_marks(_without_illustrations(strip_gutenberg(text)).split("\n"))
    # a mail system's escape of a line opening with "From " (Werther's sywer10.txt: ">From")
    lines = [line[1:] if line.startswith(">From ") else line for line in lines]
    lines = [_unspaced(lines, index) for index in range(len(lines))]
    headings = _text_headings(lines)
    loose_notes = len(re.findall(_PAREN_NOTE, "\n".join(lines))) >= PAREN_NOTES
    blocks: list[Block] = []
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph and (notes := _NOTES_OPENING.match(paragraph[0].strip())):
            blocks.append(Block("heading", notes.group(1)))  # "FOOTNOTES: 1 [ Patois ...]"
            paragraph[0] = notes.group(2)
        if paragraph:
            joined = _NOTE_MARK.sub("", " ".join(p.strip() for p in paragraph))
            joined = _unmarked(_without_loose_notes(joined) if loose_notes else joined)
            blocks.append(Block("text", joined, tuple(paragraph)))
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
            heading = headings[index]
            wrapped = [lines[below].strip() for below in heading.wrapped]
            heading_text = " ".join([line, *wrapped]).rstrip(".")
            blocks.append(Block("heading", _plain_title(heading_text)))
            skip.update(heading.wrapped)
            if heading.subtitle is not None:  # "CHAPTER I" then "The Salt Road"
                taken = list(heading.titled) or _subtitle_lines(lines, heading.subtitle)
                title = " ".join(lines[i].strip() for i in taken)
                if heading.titled:  # "Loomings." reads "Loomings", as "CHAPTER 1. Loomings."
                    title = title.removesuffix(".")
                blocks.append(Block("heading", _plain_title(title)))
                skip.update(taken)
            continue
        if _BREAK.match(line):
            flush()
            blocks.append(Block("text", "* * *"))
            continue
        paragraph.append(raw.rstrip())
    flush()
    return blocks


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
        if (found := _PAGE_MARK.match(line.strip())) and _isolated(lines, index)
    ]
    rising = sum(1 for (_, a), (_, b) in itertools.pairwise(marks) if b > a)
    if len(marks) < PAGE_MARKS or rising * 5 < (len(marks) - 1) * 4:
        return lines
    dropped: set[int] = set()
    for index, _number in marks:
        dropped.add(index)
        before = next((i for i in range(index - 1, -1, -1) if lines[i].strip()), None)
        after = next((i for i in range(index + 1, len(lines)) if lines[i].strip()), None)
        if before is None or after is None:
            continue
        ends = re.search(r"[.!?:;\"”’)\]]$", lines[before].strip())
        if not ends and lines[after].strip()[0].islower():  # one paragraph, cut by the page
            dropped.update(range(before + 1, after))
    return [line for index, line in enumerate(lines) if index not in dropped]


def _unmarked(text: str) -> str:
    """Plain text's words without its _emphasis_ marks and bracketed note numbers."""
    return _EMPHASIS.sub(r"\1", _BRACKETED_NOTE.sub("", text))


# "Underground*": a footnote's mark; "ARGUMENT.(40)"
_TITLE_NOTE_MARK = re.compile(rf"(?<=\w)\s*[*†‡]+$|{_PAREN_NOTE}")


def _plain_title(text: str) -> str:
    """A heading of a plain-text book as a title: `_unmarked`, without a footnote's mark at its
    end ("Underground*", Notes from the Underground), one space between words ("III.  THE
    RECOGNITION" is "III. THE RECOGNITION")."""
    return " ".join(_TITLE_NOTE_MARK.sub("", _unmarked(text)).split())


@dataclass(frozen=True)
class _Heading:
    subtitle: int | None  # the line of its title under it ("CHAPTER I", then "The Salt Road")
    wrapped: tuple[int, ...] = ()  # the lines its own title runs on to
    titled: tuple[int, ...] = ()  # the subtitle's lines, when a title with a stop (`_stopped`)


def _text_headings(lines: list[str]) -> dict[int, _Heading]:
    """Line index → the heading that starts there, for every heading line."""
    strong: dict[int, int | None] = {}
    wrapped: dict[int, tuple[int, ...]] = {}  # a heading's title wrapped onto the lines below
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
        if not alone and _under_grouping(lines, index):
            # "VOLUME II." and "CHAPTER XIX" on the lines right after it (an old Uncle Tom's
            # Cabin): two headings, the volume and its chapter
            strong[index - 1] = None
            alone = True
        if not alone and _under_title(lines, index):
            alone = True  # "BEOWULF" right over "PRELUDE OF THE FOUNDER OF THE DANISH HOUSE"
        if not alone and _STRONG.match(line) and not _ONLY_NUMBER.match(line):
            opens = index == 0 or not lines[index - 1].strip()
            if opens and (runs_on := _continuation(lines, index)):
                wrapped[index] = runs_on
                strong[index] = None
            continue
        if not alone:
            continue
        if _STRONG.match(line) or (
            _NUMBERED.match(line) and _title_like(line) and _number_and_title(line)
        ):
            # "CHAPTER I" or "IV" alone take the title line under them; "IV. THE RIVER" has one.
            strong[index] = subtitle if _ONLY_NUMBER.match(line) else None
            if strong[index] is None and subtitle == index + 1 and _shouted(line):
                # a title in capitals wrapped onto the line right under it (Gulliver's Travels:
                # "PART III.  A VOYAGE TO LAPUTA, BALNIBARBI, LUGGNAGG, GLUBBDUBDRIB, AND" over
                # "JAPAN.", left a paragraph of the story)
                wrapped[index] = tuple(_subtitle_lines(lines, subtitle))
        elif _NAMED.match(_unmarked(line)) or _ORDINAL_GROUP.match(line):
            named[index] = None  # in italics too (The 'Mind the Paint' Girl's "_The Persons of
            # the Play_": its cast and the programme's advertisements were its first chapter)
        elif (
            _isolated(lines, index)
            and _bare_capitals(raw, LISTED_WORDS)
            and not _introduced(lines, index)
        ):
            bare.append(index)
    for index in (
        _running_heads(lines, strong)
        + _listed_together(lines, strong, wrapped)
        + _list_items(lines, strong)
        + _stanza_numbers(lines, strong)
    ):
        strong.pop(index, None)
    stopped = _stopped_titles(lines, strong)
    for index, taken in stopped.items():
        strong[index] = taken[0]
    if len(strong) >= 2:
        # and a title in capitals the contents page lists beside the numbered chapters (The
        # Scarlet Letter's "THE CUSTOM-HOUSE", its introduction)
        listed, page = _contents_titles(lines)
        # and, before the first numbered chapter, a title in title case standing alone that the
        # contents page lists (The Song of Hiawatha's "Introductory Note" and "Introduction"),
        # or in capitals with a stop (Moby-Dick's "ETYMOLOGY." and "EXTRACTS. (Supplied by a
        # Sub-Sub-Librarian).")
        first = min((i for i in strong if i not in page), default=min(strong))
        before = [
            i
            for i in range(first)
            if i not in page
            and _isolated(lines, i)
            and (_title_cased(lines[i].strip()) or _bare_capitals(_unstopped(lines[i])))
        ]
        # and, unlisted, a title in capitals before the first numbered chapter over prose of
        # its own, with a stop (Gulliver's Travels' "THE PUBLISHER TO THE READER." and "A LETTER
        # FROM CAPTAIN GULLIVER TO HIS COUSIN SYMPSON.": 1,947 words of the story's frame,
        # dropped as front matter under no heading) or after the contents page (Huckleberry
        # Finn's "EXPLANATORY", left out as part of its list of illustrations); not a title
        # page's lines over a byline, nor the book's title over a frame story (The Turn of the
        # Screw's, its "Prologue")
        capitals = [
            i
            for i in before
            if (lines[i].rstrip().endswith(".") or i > max(page, default=len(lines)))
            and _bare_capitals(_unstopped(lines[i]))
        ]
        heading = sorted({*capitals, *strong, *named, *page})
        sections = {
            i
            for i in capitals
            if _prose_under(lines, i, next((h for h in heading if h > i), len(lines)))
            # or right over a named heading, as the book's title over its cast ("THE REPUBLIC."
            # over "PERSONS OF THE DIALOGUE.", left the introduction's last paragraph)
            or next((j for j in range(i + 1, len(lines)) if lines[j].strip()), None) in named
        }
        chosen = {
            **strong,
            **named,
            **{
                i: None
                for i in sorted({*bare, *before})
                if (_listed(_title_key(lines[i]), listed) or i in sections)
                and i not in strong
                and i not in page
            },
        }
    else:
        listed, page = _contents_titles(lines)
        if listed:  # the lines standing alone that the contents page names, in any case,
            # at the margin or centred on the page (The Jungle Book, jnglb10.txt), not the
            # contents page's own lines
            middle = _page_middle(lines)
            picked = [
                i
                for i, raw in enumerate(lines)
                if raw.strip()
                and i not in page
                and _isolated(lines, i)
                and (len(raw) - len(raw.lstrip()) <= BARE_INDENT or _centred(raw, middle))
                and len(raw.split()) <= LISTED_WORDS
                and _listed(_title_key(raw), listed)
            ]
        else:  # unlisted, a bare title is short
            bare = [i for i in bare if len(lines[i].split()) <= BARE_WORDS]
            picked = _spaced(lines, bare) if len(bare) >= 2 else []
            if not picked:  # titles centred on the page, as a book with no other headings has
                picked = _centred_titles(lines)
            if not picked and named and not strong:
                picked = _title_after_preface(lines, min(named), bare)
        chosen = {**strong, **named, **dict.fromkeys(picked)}
    # A named section the contents page lists, that heads its section later, is a line of that
    # page, not a heading (Moby-Dick's "Epilogue" under "CHAPTER 135. The Chase.—Third Day.":
    # the dry run said it was left out, "an ending before the first chapter"); named once, it
    # heads what follows the page (Don Quixote's "TRANSLATOR'S PREFACE")
    later = Counter(_title_key(lines[index]) for index in named.keys() - page)
    for index in page & named.keys():
        if later[_title_key(lines[index])]:
            chosen.pop(index, None)
    # A subtitle line is part of its heading, never a heading of its own.
    for subtitle in [s for s in chosen.values() if s is not None]:
        chosen.pop(subtitle, None)
    if strong:  # after the first chapter: another work's title and its author, appended
        for title, lines_of_title, byline, name in _bylined_titles(lines, after=min(strong)):
            chosen[title], chosen[byline] = None, None
            wrapped[title], wrapped[byline] = lines_of_title, name
    return {
        index: _Heading(subtitle, wrapped.get(index, ()), stopped.get(index, ()))
        for index, subtitle in sorted(chosen.items())
    }


STOPPED_TITLE_LINES = 2  # a title with a stop under a chapter's number wraps onto two lines


def _stopped_title(lines: list[str], index: int) -> tuple[int, ...]:
    """The lines of a title in title case ending with a stop ("Loomings.", "Hark!", "Of the
    Less Erroneous Pictures of Whales, and the True" / "Pictures of Whaling Scenes."), the first
    text under a chapter's number alone, at most two blank lines below it and a blank line
    after it; () when the text there is not one."""
    below = next(
        (i for i in range(index + 1, min(index + 4, len(lines))) if lines[i].strip()), None
    )
    if below is None:
        return ()
    taken = [below]
    while taken[-1] + 1 < len(lines) and lines[taken[-1] + 1].strip():
        taken.append(taken[-1] + 1)
        if len(taken) > STOPPED_TITLE_LINES:
            return ()
    text = " ".join(lines[i].strip() for i in taken)
    if not re.search(r"[.!?][\"”’']?$", text) or _STRONG.match(text) or _NAMED.match(text):
        return ()
    if _ARGUMENT.match(_plain_title(text)):
        return ()  # the label of the book's summary, with no title under it (Pope's Odyssey)
    words = text.rstrip("\"”’'").rstrip(".!?").split()
    return (
        tuple(taken)
        if 0 < len(words) <= LISTED_WORDS
        and words[0][:1].isupper()
        and all(word[:1].isupper() for word in words if len(word.strip("'’.,;:!?-")) >= 4)
        and not any(c.isdigit() for c in text)
        else ()
    )


def _stopped_titles(lines: list[str], strong: dict[int, int | None]) -> dict[int, tuple[int, ...]]:
    """The titles with a stop under the chapters' numbers alone (`_stopped_title`), when most
    chapters headed by a number alone with no other title have one: the book's way of titling
    its chapters (Moby-Dick's moby10b.txt: "CHAPTER 1", then "Loomings."; every title was lost),
    not a short first sentence ("Yes.") under one chapter's number."""
    untitled = [
        i for i, sub in strong.items() if sub is None and _ONLY_NUMBER.match(lines[i].strip())
    ]
    found = {i: taken for i in untitled if (taken := _stopped_title(lines, i))}
    return found if len(found) >= CENTRED_TITLES and len(found) * 2 > len(untitled) else {}


def _prose_under(lines: list[str], index: int, stop: int) -> bool:
    """Whether the lines after `index` up to `stop` hold a paragraph of prose: `PROSE_WORDS`
    words or more, not in capitals."""
    paragraphs = itertools.groupby(lines[index + 1 : stop], key=lambda line: bool(line.strip()))
    return any(
        len(text.split()) >= PROSE_WORDS and not _shouted(text)
        for text in (" ".join(group) for filled, group in paragraphs if filled)
    )


def _title_after_preface(lines: list[str], named: int, bare: list[int]) -> list[int]:
    """In a book with no chapters, the one title in capitals standing alone after its first
    named section (a preface), over more words than that section has: the story's own heading
    (Moll Flanders' "MOLL FLANDERS" after "THE AUTHOR'S PREFACE"), as [its line], else []."""
    after = [index for index in bare if index > named]
    if len(after) != 1:
        return []
    words = [len(line.split()) for line in lines]
    return after if sum(words[after[0] :]) > sum(words[named : after[0]]) else []


BYLINED_TITLE_LINES = 6  # an appended work's title in capitals takes at most this many lines


def _bylined_titles(
    lines: list[str], *, after: int
) -> list[tuple[int, tuple[int, ...], int, tuple[int, ...]]]:
    """Titles in capitals (a paragraph of a few lines) with an author's byline right under
    them, after line `after`: another work the book appends (The Prince's "DESCRIPTION OF THE
    METHODS ADOPTED BY THE DUKE VALENTINO ..." over "BY" and "NICOLO MACHIAVELLI"; "THE LIFE OF
    CASTRUCCIO CASTRACANI" over "WRITTEN BY NICOLO MACHIAVELLI"). Each as (its first line, its
    other lines, the byline's line, the author's name when on a paragraph of its own)."""
    paragraphs = [
        list(indices)
        for blank, indices in itertools.groupby(
            range(after + 1, len(lines)), key=lambda index: not lines[index].strip()
        )
        if not blank
    ]
    found = []
    for number, title in enumerate(paragraphs[:-1]):
        texts = [lines[i].strip() for i in title]
        if len(title) > BYLINED_TITLE_LINES or not all(
            t == t.upper() and any(c.isalpha() for c in t) for t in texts
        ):
            continue
        if any(_STRONG.match(t) or _BYLINE.match(t) for t in texts):
            continue
        byline = paragraphs[number + 1]
        first = lines[byline[0]].strip()
        if len(byline) > 2 or not _BYLINE.match(first) or first != first.upper():
            continue
        name: tuple[int, ...] = ()
        if first.casefold() == "by" and len(byline) == 1 and number + 2 < len(paragraphs):
            name_lines = paragraphs[number + 2]
            if len(name_lines) == 1 and lines[name_lines[0]].strip().isupper():
                name = (name_lines[0],)
        found.append((title[0], tuple(title[1:]), byline[0], (*byline[1:], *name)))
    return found


# -- Markdown ------------------------------------------------------------------------------------


def blocks_from_markdown(text: str) -> list[Block]:
    """Headings (ATX `#` and setext underlined) and paragraphs of a Markdown book."""
    lines = _lines(_without_illustrations(text))
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


# -- reStructuredText ------------------------------------------------------------------------

_RST_ADORNMENT = re.compile(r"^([=\-`:'\"~^_*+#<>])\1{2,}$")  # a title's underline or overline
_RST_TITLE_FIELD = re.compile(r"^\s*:(?:PG|DC)\.Title:\s*(\S.*?)\s*$", re.M)
_RST_NOTE_REFERENCE = re.compile(r"\s?\[(?:#\w*|\*|\d{1,3})\]_")  # "[#]_", "[1]_"
_RST_ROLE = re.compile(r":[\w-]+:`([^`]*)`")  # ":title:`Anna Karenina`"
_RST_LINK = re.compile(r"`([^`<]+?)\s*(?:<[^>]*>)?`__?")  # "`text <url>`_"


def blocks_from_rst(text: str) -> tuple[list[Block], str | None]:
    """Headings and paragraphs of a reStructuredText book (Project Gutenberg's RST editions,
    `1399-rst.rst`), read as Markdown is once what is RST's own is gone: comments and
    directives with what is indented under them (the `.. meta::` fields, the title page's
    `.. container::`, `.. pgheader::`, footnotes), a title's overline, underlines in any of
    RST's characters (as setext's `-`), note references, roles and link markup; and its title
    (the `:PG.Title:` or `:DC.Title:` field, else a first title adorned as no other is)."""
    lines = _lines(text)
    field = _RST_TITLE_FIELD.search(text)
    kept: list[str] = []
    titles: list[tuple[str, str]] = []  # each title's text and adornment ("=", or "=" over)
    overlined = False
    directive: int | None = None  # the indent of the directive being left out
    for index, raw in enumerate(lines):
        line = raw.strip()
        indent = len(raw) - len(raw.lstrip())
        if directive is not None and (not line or indent > directive):
            continue  # what is indented under it
        directive = None
        if line.startswith("..") and (line == ".." or line[2:3].isspace()):
            directive = indent
            continue
        if _RST_ADORNMENT.match(line):
            above = kept[-1].strip() if kept else ""
            below = lines[index + 1].strip() if index + 1 < len(lines) else ""
            if not above and below and not _RST_ADORNMENT.match(below):
                overlined = True
                continue  # an overline: the underline below the title says it is one
            if above:
                titles.append((above, line[0] + (" over" if overlined else "")))
                kept.append("-" * max(len(line), 2))
                overlined = False
                continue
        kept.append(raw)
    plain = []
    for raw in kept:
        raw = _RST_NOTE_REFERENCE.sub("", raw)
        raw = _RST_LINK.sub(r"\1", _RST_ROLE.sub(r"\1", raw))
        raw = re.sub(r"\|(\w[\w -]*)\|", r"\1", raw)  # a substitution: "|name|"
        plain.append(re.sub(r"(?<=\S)::$", ":", raw.replace("``", "`")))
    title = field.group(1) if field else None
    styles = Counter(style for _, style in titles)
    if title is None and titles and styles[titles[0][1]] == 1 and len(titles) > 1:
        title = titles[0][0]  # the document's title: the first, adorned as no other is
    return blocks_from_markdown("\n".join(plain)), title


# -- AsciiDoc --------------------------------------------------------------------------------

_ADOC_SECTION = re.compile(r"^(={1,6})\s+(\S.*?)(?:\s+=+)?$")
_ADOC_DELIMITER = re.compile(r"^(?:-{4,}|\.{4,}|_{4,}|\*{4,}|={4,}|\+{4,}|--)$")
_ADOC_SKIPPED = re.compile(
    r"^(?::!?[\w-]+!?:(?:\s.*)?"  # an attribute entry (":author: William Morris")
    r"|\[[^\]]*\]"  # a block's attributes or anchor alone ("[quote]", "[[chapter-2]]")
    r"|\.[^.\s].*"  # a block title (".A Map of the River")
    r"|(?:image|include|video|audio|toc)::.*"  # block macros: never text
    r"|<<<|\|===.*|\|.*)$"  # a page break; a table and its rows
)
_ADOC_UNDERLINE = re.compile(r"^(?:={2,}|-{2,}|~{2,}|\^{2,}|\+{2,})$")
_ADOC_BREAK = re.compile(r"^(?:'{3,}|\*\s\*\s\*)$")


def blocks_from_asciidoc(text: str) -> tuple[list[Block], str | None]:
    """Headings and paragraphs of an AsciiDoc book (GITenberg ships `book.asciidoc`), and its
    document title (`= Title`, or a first line underlined with `=` of its length). Section
    titles (`==` to `======`, or a line underlined with `-`, `~`, `^` or `+`) are headings;
    attribute entries, block attributes and anchors, block titles, comments, delimiters, tables
    and images (block and inline macros) are not text; a thematic break (`'''`) is a scene
    break; inline markup keeps its text (`link:url[text]`, `_word_`, `*word*`), footnotes and
    anchors go."""
    lines = _lines(text)
    start, end = _story_span([line.strip() for line in lines])
    blocks: list[Block] = []
    title: str | None = None
    paragraph: list[str] = []
    in_comment = False
    in_header = False  # the lines under the document title (author, revision) up to a blank

    def flush() -> None:
        kept = [line for line in paragraph if line.strip()]
        plain = _plain_asciidoc(" ".join(kept)) if kept else ""
        if len(kept) == 1 and _HEADING_PARAGRAPH.match(plain.strip()):
            # a section name set as a paragraph (Crime and Punishment's "Translator's Preface",
            # The Red Badge of Courage's "THE END."), as in HTML
            blocks.append(Block("heading", plain.strip()))
        elif plain.strip():  # a paragraph of an inline image alone is no text
            blocks.append(Block("text", plain, tuple(kept)))
        paragraph.clear()

    for raw in lines[start:end]:
        line = raw.strip()
        if line == "////":
            flush()
            in_comment = not in_comment
            continue
        if in_comment or (line.startswith("//") and not line.startswith("///")):
            continue
        if in_header:
            in_header = bool(line)
            continue
        section = _ADOC_SECTION.match(line)
        if section and not paragraph:
            if len(section.group(1)) == 1:
                title = title or _plain_asciidoc(section.group(2))
                in_header = True
            else:
                blocks.append(Block("heading", _plain_asciidoc(section.group(2))))
            continue
        underline = _ADOC_UNDERLINE.match(line)
        if (
            underline
            and len(line) >= 3  # "--" alone opens a block
            and len(paragraph) == 1
            and abs(len(line) - len(paragraph[0])) <= 2
        ):
            # a two-line title ("The Ferry" over "---------"): "=" the document's, else a section
            heading = _plain_asciidoc(paragraph.pop())
            if line[0] == "=" and title is None and not blocks:
                title, in_header = heading, True
            else:
                blocks.append(Block("heading", heading))
            continue
        if not line or _ADOC_DELIMITER.match(line):
            flush()
            continue
        if _ADOC_BREAK.match(line):
            flush()
            blocks.append(Block("text", "* * *"))
            continue
        if _ADOC_SKIPPED.match(line) and not paragraph:
            continue
        paragraph.append(line.removesuffix(" +"))
    flush()
    return blocks, title


def _plain_asciidoc(text: str) -> str:
    """AsciiDoc inline markup as plain text: what a reader sees."""
    text = re.sub(r"\[\[[^\]]*\]\]|anchor:[\w-]+\[[^\]]*\]", "", text)  # anchors
    text = re.sub(r"image:[^\s\[]+\[[^\]]*\]", "", text)  # inline images ("image:c01.jpg[]")
    text = re.sub(r"footnote(?:ref)?:[\w-]*\[(?:[^\[\]]|\[[^\]]*\])*\]", "", text)  # footnotes
    text = re.sub(r"(?:link:|mailto:|https?://)\S+?\[([^\]]*)\]", r"\1", text)  # links: text
    text = re.sub(r"pass:\w*\[([^\]]*)\]", r"\1", text)
    text = re.sub(r"\+\+\+(.+?)\+\+\+", r"\1", text)
    text = text.replace("{nbsp}", " ").replace("{sp}", " ").replace("{empty}", "")
    text = re.sub(r"(?<![\w#])#(\S(?:.*?\S)?)#(?![\w#])", r"\1", text)  # highlight
    return _plain_markdown(text)


# -- EPUB ------------------------------------------------------------------------------------


# a printed page's number: Gutenberg's `pagenum`, and `pageno`, `page-num`, `pgnum` elsewhere
# a printed page's number; "tei-pb", a page break of an edition made from TEI (the Iliad's HTML)
_PAGE_CLASS = re.compile(r"\b(?:page-?num(?:ber)?|pageno|pgnum|tei-pb)\b", re.I)
_NOTE_REFERENCE = re.compile(r"^(?:\[\s*\d{1,3}\s*\]|\d{1,3}|[*†‡])$")
_PICTURE = re.compile(r"\.(?:jpe?g|png|gif|svg|webp|bmp|tiff?)$", re.I)
# A paragraph that is a heading set as plain text ("CONCLUSION", "CONTENTS", "CHAPTER XII"),
# its number after its volume's too ("Chapter 4.XX.": Tristram Shandy's AsciiDoc sets that one
# chapter's heading as a paragraph among 311 sections)
_HEADING_PARAGRAPH = re.compile(
    rf"^(?:(?:{_STORY_SECTIONS}|{_CONTENTS_SECTIONS}|{_BACK_SECTIONS}|{_FRONT_SECTIONS}"
    rf"|{_CAST_SECTIONS})[.:]?"
    rf"|(?:{_DIVISIONS})\s+"
    rf"(?:(?:\d{{1,3}}\.)?(?:[IVXLCDM]+|\d{{1,3}})|(?i:{_NUMBER_WORDS}|{_ORDINALS}))\.?)$",
    re.I,
)


_BR = "\x00"  # a <br> inside a paragraph, until the paragraph is read
# a picture and its caption: "<div class="illustration">" (Tom Sawyer's EPUB), Project
# Gutenberg's "<div class="figcenter">"; their text is not story, as "[Illustration: ...]" is not
_FIGURE_CLASS = re.compile(r"\b(?:illustration|figure|fig(?:center|left|right)?)\b", re.I)
# a <div> holding verse; "tei-lg", a line group of an edition made from TEI (the Iliad's HTML)
_VERSE_CLASS = re.compile(r"\b(?:poem|stanza|verse|tei-lg)\b", re.I)
_DIVISION_NUMBER = re.compile(  # "Chapter I", "BOOK II.", "Act First"
    rf"^(?:{_DIVISIONS})\s+(?:[IVXLCDM]+|\d{{1,3}}|(?i:{_NUMBER_WORDS}|{_ORDINALS}))\.?$", re.I
)
HEADING_PARAGRAPH_WORDS = 24  # a paragraph that is a chapter's number and title is this short
# a division's number, a dash and a title in capitals: "LETTER XL - EVELINA TO THE REV. MR.
# VILLARS London, June 6." (Evelina's HTML sets three of its letters' headings as paragraphs)
_DIVISION_TITLED = re.compile(
    rf"^(?:{_DIVISIONS})\s+(?:[IVXLCDM]+|\d{{1,3}})\.?\s*[-–—]+\s*[A-Z][A-Z.,'’ ]*[A-Z]{{2}}\b"
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
                    self.items.append(Block("heading", label))
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
        lines, as a plain-text stanza is, so `_verse` knows it for one."""
        if self._stanza:
            text = " ".join(re.sub(_BRACED_NOTE, "", " ".join(self._stanza)).split())
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
            parts = [" ".join(part.split()) for part in raw.split("\n")]
            self.items.extend(Block("heading", part) for part in parts if part)
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
                or (_HEADING_PARAGRAPH.match(lines[-1]) and all(map(_shouted, lines)))
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
        text = " ".join(re.sub(_BRACED_NOTE, "", raw.strip()).split())
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
            and _ARGUMENT.match(self.items[-1].text)
            and _shouted(text)
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
            heading = _HEADING_PARAGRAPH.match(text) is not None and not self._definition
            self.items.append(Block("heading" if heading else "text", text))


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
        items = parser.items
        if top and not (items and items[0].kind == "heading"):
            items = [Block("heading", top), *items]
        blocks.extend(items)
    return _inside_wrapping(blocks), title


_CHARSET = re.compile(rb"""(?:charset|encoding)\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.I)
_HTML_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.I | re.S)


def blocks_from_html(path: Path) -> tuple[list[Block], str | None, str | None]:
    """An HTML book (Project Gutenberg's HTML edition, say): its headings and paragraphs in the
    encoding it declares (else as `guess_decoding` reads it, with its note); its title from
    the Gutenberg header, else its `<title>`."""
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
        markup, note = guess_decoding(raw, path, said)
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
        (index, _numeral(block.text.strip().rstrip(".")))
        for index, block in enumerate(blocks)
        if block.kind == "text" and _SECTION_NUMBER.match(block.text.strip())
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
    start, end = _story_span([block.text for block in blocks])
    kept = []
    for block in blocks[start:end]:
        text = " ".join(_without_illustrations(block.text).split())
        if text or block.lines:
            kept.append(Block(block.kind, text, block.lines))
    return kept


# -- from blocks to chapters ----------------------------------------------------------------


# a part and its player in a play's first cast: "John Worthing, J.P.: Mr. George Alexander."
# (The Importance of Being Earnest, as played at the St. James's Theatre)
_PLAYER = re.compile(r":\s+(?:Mr|Mrs|Miss|Messrs|Mme|Mlle|Madame)\b")
PLAYER_WORDS = 8  # a cast's line (a part and its player) is about this long


def _is_prose(block: Block) -> bool:
    """A paragraph of story: long enough, and not a list of short lines (a contents page, a
    list of illustrations) or a table."""
    if block.kind != "text" or len(block.text.split()) < PROSE_WORDS:
        return False
    if _shouted(block.text):  # a title in capitals (a contents entry), never a story's prose
        return False
    if len(_PLAYER.findall(block.text)) * PLAYER_WORDS >= len(block.text.split()):
        return False  # a cast as first played, its lines run together
    lines = [line.strip() for line in block.lines if line.strip()]
    if len(lines) >= 3:
        short = sum(
            1
            for line in lines
            if (len(line) < 48 and not _SENTENCE_END.search(line))
            or _PAGE_REFERENCE.search(line)
            or _CHAPTER_NUMBER.match(line)  # "XII. WHAT I SAW OF THE DESTRUCTION OF WEYBRIDGE."
            or _figures(line)  # a file listing: "-rw-rw-r--  1 1005  100  247438 Feb  4  2001 ..."
        )
        if short / len(lines) >= 0.6:
            return False
    return True


def _verse(block: Block) -> bool:
    """Whether a block is a stanza or a verse paragraph: three lines or more, of four words or
    more on average, a quarter of them or more with a comma, a colon or a sentence's end in
    them (a contents page's lines have none), not in capitals. Only a book with no prose at all
    is read as verse (`read_book`): a poem inside a novel stays a poem beside its prose."""
    lines = [line.strip() for line in block.lines if line.strip()]
    if block.kind != "text" or len(lines) < 3 or _shouted(block.text):
        return False
    if len(block.text.split()) < 4 * len(lines):
        return False
    marked = sum(1 for line in lines if re.search(r"[,;:.!?]", line) and not _figures(line))
    return marked * 4 >= len(lines)


VERSE_WORDS = 100  # a chapter with no prose is a poem when its stanzas have this many words


def _in_verse(body: list[Block]) -> bool:
    """Whether a chapter with no paragraph of prose is a poem: stanzas (`_verse`) of
    `VERSE_WORDS` words or more, most of their lines not a contents page's ("IX. Hiawatha and
    the Pearl-Feather", "The Prison Door  . . . 47")."""
    if any(_is_prose(block) for block in body):
        return False
    stanzas = [block for block in body if _verse(block)]
    lines = [line.strip() for block in stanzas for line in block.lines if line.strip()]
    listed = sum(1 for line in lines if _CHAPTER_NUMBER.match(line) or _PAGE_REFERENCE.search(line))
    words = sum(len(block.text.split()) for block in stanzas)
    return words >= VERSE_WORDS and listed * 2 < len(lines)


# A verse paragraph longer than this many lines is read as paragraphs of about this many, each
# ending where a sentence does (Paradise Lost sets a whole book with hardly a blank line)
VERSE_LINES = 24


def _as_prose(block: Block) -> list[Block]:
    """A stanza as a paragraph of one line (so `_is_prose` reads it as prose) whose text keeps
    its lines (`_with_its_lines`); a long verse paragraph parted at the first sentence end
    after `VERSE_LINES` lines; any other block as it is."""
    if not _verse(block):
        return [block]
    parts: list[list[str]] = [[]]
    for line in (line.strip() for line in block.lines if line.strip()):
        parts[-1].append(line)
        if len(parts[-1]) >= VERSE_LINES and re.search(r"[.!?][\"”’')]*$", line):
            parts.append([])
    texts = ["\n".join(_line_text(line) for line in part) for part in parts if part]
    return [Block(block.kind, text, (text,)) for text in texts]


def _figures(line: str) -> bool:
    """Whether a line is mostly figures and signs, not words: fewer letters than half its
    characters (a file listing, a ledger's columns)."""
    marks = [c for c in line if not c.isspace()]
    return sum(c.isalpha() for c in marks) * 2 < len(marks)


_PREFATORY = _heading_named(_STORY_SECTIONS)
_BARE_SECTION = re.compile(r"^(?:[IVXLCDM]+|\d{1,3})(?:[.:]\s+\S|\.?$)")  # "I: ABOUT ...", "II."


def _title(run: list[str]) -> str:
    """One title for consecutive headings: from the chapter number on when there is one (a
    book's title above it is dropped), the rest joined by ": "."""
    # bylines are no title, unless there is nothing else and it is two words ("BY COURIER", The
    # Four Million; not "By Charlotte Perkins Gilman"), nor a dedication set among the headings
    # ("FIRST PART", "To Romain Rolland, my dear friend")
    bylines = [t for t in run if t and _BYLINE.match(t)]
    run = [text for text in run if text and not _BYLINE.match(text)] or [
        text for text in bylines if len(text.split()) <= 2
    ]
    run = [text for text in run if not _DEDICATION.match(text)] or run
    contents = [i for i, text in enumerate(run) if _CONTENTS.match(text.strip())]
    if contents and contents[-1] + 1 < len(run):  # a contents heading above the first chapter's
        run = run[contents[-1] + 1 :]
    if _sections_within(run):  # "ADVENTURE I. A SCANDAL IN BOHEMIA", then its section "I."
        run = run[:-1]
    numbered = [i for i, text in enumerate(run) if _CHAPTER_NUMBER.match(text)]
    named = [i for i, text in enumerate(run) if _NAMED.match(text.strip())]
    listing = len(numbered) >= 3 and numbered[-1] < len(run) - 1
    if listing and (not _ONLY_NUMBER.match(run[-2]) or _follows(run[-3], run[-2])):
        # a contents page set as headings, then this chapter's own title without a number
        # (Middlemarch's HTML: "BOOK I" ... "BOOK VIII" listed, then "PRELUDE")
        run = run[-1:]
    elif numbered:
        first = numbered[-1]
        if first and _PREFATORY.match(run[first - 1].strip()) and _BARE_SECTION.match(run[first]):
            # a preface's name over the number of its first part ("TRANSLATOR'S PREFACE", then
            # "I: ABOUT THIS TRANSLATION": Don Quixote's) names that part too; a chapter's number
            # with its division's word ("PROLOGUE" over "CHAPTER I") does not take it
            first -= 1
        run = run[first:]
    elif named:  # "THE GODS OF MARS", "Edgar Rice Burroughs", "FOREWORD": "FOREWORD"
        run = run[named[-1] :]
    if len(run) > 1:  # "I." over "THE EVE OF THE WAR." reads "I: THE EVE OF THE WAR."
        run = [text.rstrip(".") if _ONLY_NUMBER.match(text) else text for text in run]
    return ": ".join(dict.fromkeys(run)) if run else "Untitled"


def _follows(before: str, after: str) -> bool:
    """Whether two headings are one division numbered one after the other ("BOOK VII", then
    "BOOK VIII"): the second is the next line of a list, not a chapter's number over its
    title (a contents page's "BOOK III", then "BOOK I" over the first book's title)."""
    first, second = before.strip().rstrip(".").split(), after.strip().rstrip(".").split()
    if len(first) != len(second) or first[:-1] != second[:-1] or not first:
        return False
    one, two = _numeral(first[-1]), _numeral(second[-1])
    return one is not None and two == one + 1


_ROMAN = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def _numeral(text: str) -> int | None:
    """The value of "12" or "XIV"; None for anything else."""
    if text.isdigit():
        return int(text)
    if not text or any(char not in _ROMAN for char in text.upper()):
        return None
    values = [_ROMAN[char] for char in text.upper()]
    return sum(-v if v < w else v for v, w in zip(values, [*values[1:], 0], strict=True))


_SECTION_NUMBER = re.compile(r"^(?:[IVXLCDM]+|\d{1,3})\.?$")


def _numbered(run: list[str]) -> bool:
    return any(_CHAPTER_NUMBER.match(text) for text in run)


def _named(run: list[str]) -> bool:
    return any(_NAMED.match(text.strip()) for text in run)


VALEDICTION_WORDS = 8  # "Yours ever, &c.,", "Your most affectionate sister," at most this long


def _signed(before: Block | None, run: list[str]) -> bool:
    """Whether a run of headings opens with a signature: a line neither numbered (but for an
    initial) nor named under a short paragraph ending in a comma (a letter's valediction), with
    a heading after it."""
    if before is None or len(run) < 2 or not before.text.rstrip().endswith(","):
        return False
    if len(before.text.split()) > VALEDICTION_WORDS:
        return False
    first = run[0].strip()
    if _STRONG.match(first) or _ONLY_NUMBER.match(first) or _NAMED.match(first):
        return False
    # "C. VERNON" reads as chapter C's title: an initial is a signature's
    return not _CHAPTER_NUMBER.match(first) or re.match(r"^[A-Z]\.\s", first) is not None


def _titled_sections(run: list[str], book_key: str | None) -> bool:
    """Whether a run of headings is a story's title over the number of its first section
    ("THE LADY WITH THE DOG", then "I"), the title neither numbered, named nor a byline."""
    contents = [i for i, text in enumerate(run) if _CONTENTS.match(text.strip())]
    run = run[contents[-1] + 1 :] if contents else run  # a contents heading above the first
    if len(run) < 2 or not _SECTION_NUMBER.match(run[-1].strip()):
        return False
    if _numeral(run[-1].strip().rstrip(".")) != 1:
        return False
    titles = [t for t in run[:-1] if _title_key(t) != book_key and not _BYLINE.match(t)]
    return bool(titles) and not any(
        _CHAPTER_NUMBER.match(t) or _NAMED.match(t.strip()) for t in run[:-1]
    )


def _sections_within(run: list[str]) -> bool:
    """Whether a chapter's heading is followed by the number of its first section
    ("ADVENTURE I. A SCANDAL IN BOHEMIA", then "I."): its "II.", "III." are its sections."""
    return (
        len(run) >= 2
        and _SECTION_NUMBER.match(run[-1]) is not None
        and any(_STRONG.match(t) and not _ONLY_NUMBER.match(t) for t in run[:-1])
    )


def _only_listed(run: list[str]) -> bool:
    """Whether a run of headings is a contents page set as headings and nothing else: three
    numbered ones or more, the last two the same division numbered one after the other
    ("CHAPTER 134. The Chase—Second Day.", "CHAPTER 135. The Chase.—Third Day.": Moby-Dick's
    2701-0.txt, over its transcriber's notes), the last one's title after it with its page
    ("CHAPTER XXVII", "Mina Harker's Journal  338": Dracula's 345.txt, over the title page). A
    listing that ends in the first chapter's own heading ("CHAPTER III" listed, then "CHAPTER
    I") or title heads that chapter."""
    numbered = [text for text in run if _CHAPTER_NUMBER.match(text)]
    paged = len(run) >= 2 and re.search(r"\s\d{1,4}$", run[-1]) is not None
    if len(numbered) < 3 or not _CHAPTER_NUMBER.match(run[-2 if paged else -1]):
        return False
    before, after = (_title_key(text).split()[:2] for text in numbered[-2:])
    if len(before) < 2 or len(after) < 2 or before[0] != after[0]:
        return False
    one, two = _numeral(before[1]), _numeral(after[1])
    return one is not None and two == one + 1


# a part of a story numbered under its title: "1. HOW THEY WENT TO THE MOUNTAINS TO EAT NUTS",
# "SECOND STORY"
_PART_NUMBER = re.compile(rf"^(?:(\d{{1,3}})\.\s+\S.*|((?i:{_ORDINALS}))\s+(?:STORY|TALE|PART))$")
_ORDINAL_VALUES = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")


def _part_number(text: str) -> int | None:
    """The number of a story's part from its heading ("2. HOW ...": 2, "SECOND STORY": 2)."""
    found = _PART_NUMBER.match(text.strip())
    if found is None:
        return None
    if found.group(1):
        return int(found.group(1))
    ordinal = found.group(2).casefold()
    return _ORDINAL_VALUES.index(ordinal) + 1 if ordinal in _ORDINAL_VALUES else None


def _sentence_heading(text: str) -> bool:
    """A sentence of the story set as a heading under the chapter's own (Just So Stories' HTML:
    "HOW THE CAMEL GOT HIS HUMP", then an <h3> "NOW this is the next tale, and it tells how the
    Camel got his big hump."): eight words or more, ending as a sentence ends, most of them in
    lower case. It is the chapter's first line, not part of its title."""
    words = [word for word in text.split() if word[:1].isalpha()]
    if len(words) < 8 or not text.rstrip().endswith((".", "!", "?", ".’", ".”", '."')):
        return False
    return sum(1 for word in words if word[0].islower()) * 2 > len(words)


_DIVISION_END = re.compile(  # "END OF THE FIRST ACT.", "End of Book II", "END OF VOL. I."
    rf"^end of (?:the )?(?:(?:{_ORDINALS})\s+)?"
    r"(?:act|book|part|volume|vol\.|canto|chapter|scene|tale)\b[\w\s.,]{0,20}$",
    re.I,
)


# a play's speaker set over the speech as a paragraph of its own: "FARNCOMBE.", "MRS. UPJOHN."
_SPEAKER = re.compile(r"^(?=.*[A-Z]{2})[A-Z][A-Z'’.-]*(?: [A-Z][A-Z'’.-]*){0,3}\.$")
SPEAKERS = 20  # a play sets its speakers so at least this often
SPEAKER_TURNS = 3  # each of two of its speakers at least this often


def _speakers_joined(blocks: list[Block]) -> list[Block]:
    """A play's blocks with each speaker's name set as a paragraph of its own joined to the
    speech under it, as a play that sets them on one line has them ("FARNCOMBE. I shall be
    delighted."): the name alone is no paragraph of the story."""

    def speaker(index: int) -> bool:
        block = blocks[index]
        return (
            block.kind == "text"
            and _SPEAKER.match(block.text) is not None
            and not _ONLY_NUMBER.match(block.text)
            and not _NAMED.match(block.text)
            and not _ARGUMENT.match(block.text)  # the label over a book's summary (the Iliad)
            and index + 1 < len(blocks)
            and blocks[index + 1].kind == "text"
            and not _BREAK.match(blocks[index + 1].text)
            and _SPEAKER.match(blocks[index + 1].text) is None
        )

    turns = Counter(blocks[index].text for index in range(len(blocks)) if speaker(index))
    if sum(turns.values()) < SPEAKERS or sum(1 for n in turns.values() if n >= SPEAKER_TURNS) < 2:
        return blocks  # not a play's dialogue: one label over many paragraphs is no speaker
    joined: list[Block] = []
    skip = False
    for index, block in enumerate(blocks):
        if skip:
            skip = False
        elif speaker(index):
            speech = blocks[index + 1]
            lines = (block.text, *speech.lines) if speech.lines else ()
            joined.append(Block("text", f"{block.text} {speech.text}", lines))
            skip = True
        else:
            joined.append(block)
    return joined


def chapters_from_blocks(blocks: list[Block], title: str | None = None) -> Book:
    """The story's chapters (and what was set aside) from a book's blocks."""
    blocks = _speakers_joined(blocks)
    runs: list[list[str]] = []  # the body's blocks, each run of headings as one list
    items: list[Block | list[str]] = []
    in_contents = False  # under a contents page's heading, before any prose
    for index, block in enumerate(blocks):
        under_a_heading = bool(items) and isinstance(items[-1], list)
        if block.kind == "heading" and under_a_heading and _sentence_heading(block.text):
            block = Block("text", block.text, block.lines)  # "NOW this is the next tale, ..."
        if block.kind == "heading" and _DIVISION_END.match(block.text.strip()):
            # the last line of the division before, as the plain text sets it, never the next
            # one's heading (The 'Mind the Paint' Girl's HTML: "<h4>END OF THE FIRST ACT.</h4>"
            # over "<h3>THE SECOND ACT</h3>" titled the act "END OF THE FIRST ACT.: THE SECOND
            # ACT")
            block = Block("text", block.text, block.lines)
        if block.kind == "heading":
            in_contents = _CONTENTS.match(block.text.strip()) is not None
        elif _is_prose(block):
            in_contents = False
        elif (
            in_contents
            and len(block.lines) <= 1
            and _bare_capitals(_unstopped(block.text))
            and index + 1 < len(blocks)
            and _is_prose(blocks[index + 1])
        ):
            # a title in capitals set as a paragraph under a contents page's heading, over prose
            # of its own, heads that prose (Huckleberry Finn's HTML: "EXPLANATORY", the
            # author's note, a <p> after the list of illustrations, was left out with it)
            block = Block("heading", block.text, block.lines)
            in_contents = False
        if block.kind != "heading":
            items.append(block)
        elif items and isinstance(items[-1], list):
            items[-1].append(block.text)
        else:
            runs.append([block.text])
            items.append(runs[-1])
    # a book whose chapters are numbered, not a collection of titled stories one of which is
    # told in numbered parts (Grimms' Fairy Tales: "THE ADVENTURES OF CHANTICLEER AND PARTLET"
    # over "1. HOW THEY WENT TO THE MOUNTAINS TO EAT NUTS", "2. ...", "3. ...", after fourteen
    # tales headed by their titles alone: the 44 tales after it ran together as its third
    # part's text). The titles under a book's numbered parts are its poems or its scenes.
    numbered_runs = sum(1 for run in runs if _numbered(run))
    titled_first = sum(
        1 for run in itertools.takewhile(lambda run: not _numbered(run), runs) if not _named(run)
    )
    numbered_book = numbered_runs >= 3 and numbered_runs > titled_first
    book_key = _title_key(title) if title else None  # the book's own title set over a chapter's
    # a collection whose stories are numbered in sections from "I" under their titles (The Lady
    # with the Dog and Other Stories; The Awakening and Selected Short Stories, its novel's
    # chapters too): each section is a chapter named with its story ("THE BLACK MONK: II"), and
    # a title over no number heads a chapter of its own ("A DOCTOR'S VISIT")
    collection = sum(1 for run in runs if _titled_sections(run, book_key)) >= 2
    story: str | None = None  # the collection's story whose sections come
    sections: list[tuple[str | None, list[Block]]] = [(None, [])]
    divisions: dict[int, str | None] = {}  # a section's book, part or volume, by its body's id
    division: str | None = None
    numbered_seen = sectioned = False
    listed_pages: set[str] = set()  # the names of contents pages set as headings alone
    under_contents: set[str] = set()  # the names of runs of headings under a contents heading
    last: Block | None = None  # the paragraph before a run of headings
    told_in: int | None = None  # the last part read of a story told in numbered parts
    first_part: str | None = None  # the heading of such a story's first part
    for item in items:
        if isinstance(item, Block):
            sections[-1][1].append(item)
            last = item
            continue
        if _signed(last, item):
            # a letter's signature under its valediction ("Yours ever, &c.," then "C. VERNON"),
            # set right over the next heading ("CONCLUSION"): the letter's last line
            sections[-1][1].append(Block("text", item[0]))
            item = item[1:]
        last = None
        part = None if numbered_book else _part_number(item[-1])
        if told_in is not None and len(item) == 1 and part == told_in + 1:
            sections[-1][1].append(Block("text", item[0]))  # "2. HOW CHANTICLEER AND ..."
            told_in = part
            continue
        told_in = first_part = None
        if part == 1 and len(item) >= 2 and not _numbered(item[:-1]) and not _named(item[:-1]):
            # a titled story told in numbered parts, in a book of titled stories (Grimms'
            # "THE ADVENTURES OF CHANTICLEER AND PARTLET" over "1. HOW THEY WENT TO THE
            # MOUNTAINS TO EAT NUTS", "2. ...", "3. ...", "THE WEDDING OF MRS FOX" over "FIRST
            # STORY", "SECOND STORY"): one chapter, the story's, each part's heading a line of it
            told_in, first_part, item = 1, item[-1], item[:-1]
        if sectioned and all(_SECTION_NUMBER.match(text) for text in item):
            sections[-1][1].append(Block("text", "* * *"))  # "II." inside "ADVENTURE I. ..."
            continue
        bylined = any(_BYLINE.match(text) for text in item[1:])  # another work, appended
        if (
            numbered_book
            and not collection
            and numbered_seen
            and not _numbered(item)
            and not _named(item)
            and not bylined
        ):
            # a heading inside a chapter of a book whose chapters are numbered: a poem's or a
            # letter's title, kept as a line of the chapter
            sections[-1][1].extend(Block("text", text) for text in item)
            continue
        byline = max(
            (i for i, text in enumerate(item) if _BYLINE.match(text) and len(text.split()) > 1),
            default=None,
        )
        rest = item[byline + 1 :] if byline is not None else []
        if len(sections) == 1 and rest and not all(_title_key(t) in (book_key or "") for t in rest):
            # the title page set in headings over the first section's own heading (Evelina's
            # HTML: "or", "THE HISTORY OF ...", "1778", "By Fanny Burney" over "ORIGINAL
            # INSCRIPTION: TO DR. BURNEY"): what its byline ends is no part of that title; not
            # the rest of the book's title under its byline (Huckleberry Finn's "Complete")
            item = rest
        # the book's own title set over its first chapter's ("DUBLINERS") is no part of that
        # chapter's; over bylines alone it heads the title page (The Prince's HTML), left as it
        # is, and alone under a contents page's heading it is the first chapter's own (The Turn
        # of the Screw's HTML, whose prologue has no other)
        wrapped_title = next(
            (k for k in range(len(item) - 1, 1, -1) if _title_key(" ".join(item[:k])) == book_key),
            None,
        )
        if book_key and wrapped_title and any(not _BYLINE.match(t) for t in item[wrapped_title:]):
            # so is the book's title set over it on two lines or more (The 'Mind the Paint'
            # Girl's HTML: "THE “MIND THE PAINT”<br>GIRL" over "THE FIRST ACT"), but not over
            # bylines alone: a title page (Tristram Shandy's HTML, "THE LIFE AND OPINIONS OF<br
            # />TRISTRAM SHANDY,<br />GENTLEMAN." over "By Laurence Sterne")
            item = item[wrapped_title:]
        after = 1 + max((i for i, t in enumerate(item) if _CONTENTS.match(t.strip())), default=-1)
        head = [t for t in item[:after] if _title_key(t) != book_key]
        tail = [t for t in item[after:] if _title_key(t) != book_key] or item[after:]
        kept = head + tail
        if book_key and any(not _BYLINE.match(t) for t in kept):
            item = kept
        # a contents page set as headings (three numbered ones or more, nothing between them)
        # heads no chapter: a titled section after it is one of its own (Moby-Dick's
        # "ETYMOLOGY.", after "CHAPTER 1. Loomings." to "CHAPTER 135. ..." listed)
        listing = sum(1 for text in item if _CHAPTER_NUMBER.match(text)) >= 3
        numbered_seen = numbered_seen or (_numbered(item) and not listing)
        sectioned = _sections_within(item)
        division = _division(item) or division
        name = _title(item)
        if _only_listed(item):  # "CHAPTER 1. Loomings … CHAPTER 135. The Chase.—Third Day"
            name = f"{next(t for t in item if _CHAPTER_NUMBER.match(t))} … {item[-1]}"
            listed_pages.add(name)
        elif any(_CONTENTS.match(text.strip()) for text in item[:-1]):
            under_contents.add(name)  # "CONTENTS" over "CHAPTER I" and "Page" (Dracula's)
        if collection:
            number = item[-1].strip().rstrip(".")
            if _titled_sections(item, book_key):
                story = _title(item[:-1])  # "THE BLACK MONK" over its section "I"
                name = f"{story}: {number}"
            elif story and all(_SECTION_NUMBER.match(text.strip()) for text in item):
                name = f"{story}: {number}"
            else:
                story = None
        sections.append((name, [Block("text", first_part)] if first_part else []))
        divisions[id(sections[-1][1])] = division
    headed = [section for section in sections if section[0] is not None]
    found = Book(title, [])
    if not headed:  # no headings: the whole text is one chapter
        body = [b for b in sections[0][1] if not _CREDIT.match(b.text)]
        chapter = _chapter("Text", body)
        prose = chapter.is_story() and any(_is_prose(b) for b in body)  # not a file listing
        found.chapters = [chapter] if prose else []
        return found
    leading = sections[0][1]
    opening = _opening(leading, headed[0][0]) or _prologue(leading)
    if opening is not None:
        found.chapters.append(opening)
    elif words := _prose_words(leading) + _verse_words(leading):  # said, never dropped unseen
        found.dropped.append(f"{words} words before the first heading (front matter)")
    back = False
    for index, (name, body) in enumerate(headed):
        assert name is not None
        plain = name.strip().rstrip(".:")
        last = plain.split(": ")[-1]
        if (
            _CONTENTS.match(plain)
            or _CONTENTS.match(last)
            or name in listed_pages
            or (name in under_contents and not any(_is_prose(b) for b in body))
        ):  # a contents page; under its heading, a chapter's heading with no prose its line
            prose = _prose_words(body)  # said, never dropped unseen
            found.dropped.append(
                f"{name} (contents" + (f"; {prose} words of prose)" if prose else ")")
            )
            continue
        if _FRONT.match(plain) or _FRONT.match(last):
            # a copyright line over the story's first part, told before any heading
            following = headed[index + 1][0] if index + 1 < len(headed) else None
            opening = _opening(body, following)
            if opening is None and following is None and _prose_words(body) >= PROLOGUE_WORDS:
                # the last heading, over a story told under no heading of its own (Daddy-Long-
                # Legs under "Copyright 1912 by The Century Company"): the story, from its prose
                opening = _from_first_prose("Text", body)
            if opening is None:
                found.dropped.append(f"{name} (front matter)")
            else:
                found.chapters.append(opening)
            continue
        if _CAST.match(plain) or _CAST.match(last):
            chapter = _chapter(name, body)
            if chapter.paragraphs:
                found.reference.append(chapter)
            continue
        if (_BACK.match(plain) or _BACK.match(last)) and not found.chapters:
            # a transcriber's note above the story (Candide's HTML) is front matter
            found.dropped.append(f"{name} (front matter)")
            continue
        if (
            _BACK.match(plain)
            or _BACK.match(last)
            # or what a run of headings opens with, over the next ones (The Little Colonel's
            # Hero's HTML: "THE END." over its publisher's "Selections from ... THE BLUE BONNET
            # SERIES", which with the ten series after it had been eleven chapters)
            or (_BACK.match(plain.split(": ")[0]) and not _CHAPTER_NUMBER.match(last))
        ):
            back = True
        elif back and _CHAPTER_NUMBER.match(plain):
            back = False  # a numbered chapter after a note: story again
        chapter = _chapter(name, body)
        if back:
            if chapter.paragraphs:
                found.reference.append(chapter)
            continue
        if _in_verse(body):
            # a canto or a poem of a book that has prose too (The Song of Hiawatha's
            # introductory note): its stanzas are its paragraphs, as a book in verse has
            chapter = _chapter(name, [part for block in body for part in _as_prose(block)])
        elif not any(_is_prose(b) for b in body) and not (
            numbered_book and found.chapters and _short_chapter(plain, body)
        ):
            found.dropped.append(f"{name} (no prose)")
            continue
        if (
            numbered_book
            and _ENDING.match(plain)
            and not any(_CHAPTER_NUMBER.match(chapter.title) for chapter in found.chapters)
        ):
            # a postscript before the first numbered chapter ends a notice of the author, not
            # the story (Persuasion's EPUB, whose notice has no heading of its own)
            found.dropped.append(f"{name} (front matter: an ending before the first chapter)")
            continue
        if "project gutenberg" in " ".join(b.text for b in body[:3]).casefold():
            found.dropped.append(f"{name} (licence)")
            continue
        found.chapters.append(chapter)
        divisions[id(chapter)] = divisions.get(id(body))
    if len(found.chapters) > 1 and _title_page(found.chapters[0], title):
        found.dropped.append(f"{found.chapters.pop(0).title} (title page)")
    if found.chapters and (note := _closing_note(found.chapters[-1])):
        found.reference.append(note)
    _named_by_division(found.chapters, divisions)
    return found


# a person's years, given as a note on an author gives them: "Jacob (1785-1863)"
_LIFE_YEARS = re.compile(r"\(\s*\d{3,4}\s*[-–—]+\s*\d{3,4}\s*\)")
CLOSING_NOTE_WORDS = 400  # a note on the author after the story's last scene is this short
CLOSING_NOTE_OPENING = 120  # and gives the years of someone it names this early


def _closing_note(chapter: Chapter) -> Chapter | None:
    """A note on the author set after the last chapter's last scene, under no heading (Grimms'
    Fairy Tales: "The Brothers Grimm, Jacob (1785-1863) and Wilhelm (1786-1859), were born in
    Hanau, ..." after "*****" and the last tale): a scene of its own, short, whose first
    paragraph opens by giving someone's years. Taken out of the chapter as reference."""
    if len(chapter.scenes) < 2:
        return None
    last = chapter.scenes[-1]
    if not last or sum(len(p.split()) for p in last) > CLOSING_NOTE_WORDS:
        return None
    if not _LIFE_YEARS.search(last[0][:CLOSING_NOTE_OPENING]):
        return None
    chapter.scenes.pop()
    return Chapter("A note on the author", [last])


def _short_chapter(title: str, body: list[Block]) -> bool:
    """Whether a numbered chapter under `PROSE_WORDS` a paragraph is story all the same: a
    chapter's number (not a book's or a part's) over a sentence or more (Tristram Shandy's
    "Chapter 2.XL.": "Is this a fit time, said my father to himself, to talk of Pensions and
    Grenadiers?"), not over a title, a list or a "(blank page)"."""
    chapter = _STRONG.match(title) or _ONLY_NUMBER.match(title)  # "Chapter 2.XL", "XL."
    if not chapter or _DIVISION_HEAD.match(title):
        return False  # nor a contents page's "II. What became of Candide among the" (wrapped)
    return any(
        block.kind == "text"
        and len(block.text.split()) >= SHORT_CHAPTER_WORDS
        and _SENTENCE_END.search(block.text) is not None
        and not _shouted(block.text)
        and not any(
            _PAGE_REFERENCE.search(line) or line.rstrip()[-1:].isdigit()
            for line in block.lines or (block.text,)
        )
        for block in body
    )


SHORT_CHAPTER_WORDS = 5  # a sentence of a short chapter has this many words at least

_DIVISION_HEAD = re.compile(r"^(?:BOOK|Book|PART|Part|VOLUME|Volume)\b")
_EPILOGUE_DIVISION = re.compile(r"^(?:first|second|third|last) epilogue\b", re.I)


def _division(run: list[str]) -> str | None:
    """The book, part or volume a run of headings opens ("BOOK ONE: 1805" over "CHAPTER I", or
    "BOOK II" alone): from its last division heading up to the chapter's own number; None when
    the run opens none."""
    numbered = [i for i, text in enumerate(run) if _CHAPTER_NUMBER.match(text)]
    heads = [i for i in numbered if _DIVISION_HEAD.match(run[i])]
    heads += [i for i, text in enumerate(run) if _EPILOGUE_DIVISION.match(text)]
    chapters = [i for i in numbered if i not in heads]
    end = chapters[-1] if chapters else len(run)
    opened = sorted(i for i in heads if i < end)
    if not opened:
        return None
    # not a section the division opens with ("VOLUME II" over "THE AUTHOR'S PREFACE", Don
    # Quixote's AsciiDoc: its chapters are no part of the preface)
    return ": ".join(
        text.strip().rstrip(".")
        for index, text in enumerate(run[opened[-1] : end])
        if index == 0 or not _NAMED.match(text.strip())
    )


def _named_by_division(chapters: list[Chapter], divisions: dict[int, str | None]) -> None:
    """Chapters whose titles come again in the book ("CHAPTER I" of each of War and Peace's
    fifteen books: seventeen alike) are named with their division ("BOOK TWO: 1805: CHAPTER
    I"), so a reader and a source can tell them apart, and so is every other chapter of those
    divisions (Notes from the Underground's "XI", the one number Part II has not: "PART I:
    Underground: XI" among "PART I: Underground: X" and the rest); the chapters of other
    divisions, with titles of their own, stay as they are."""
    seen = Counter(chapter.title for chapter in chapters)
    named = {divisions.get(id(chapter)) for chapter in chapters if seen[chapter.title] > 1}
    for chapter in chapters:
        division = divisions.get(id(chapter))
        if division in named and division and not chapter.title.startswith(division):
            chapter.title = f"{division}: {chapter.title}"


# This much prose in a book whose headings leave no chapter of story is one chapter of it
# (The Tale of Peter Rabbit: 651 words), not a page of notes (a folder's README)
STORY_UNDER_HEADINGS_WORDS = 500

# Prose before the first heading, or under a front matter's heading, when the first heading is
# the story's second part ("II", "Chapter 2") and this much prose or more, is the first part,
# told before any heading of its own (Metamorphosis's part I in an old edition, under its
# copyright line), not front matter; a dedication or an etymology before "Chapter 1" stays out.
OPENING_WORDS = 1000
_SECOND = re.compile(r"^(?:(?:chapter|part|book)\s+)?(?:ii|2|two)\b(?![\w'’])", re.IGNORECASE)


def _story_prose(blocks: list[Block]) -> list[Block]:
    return [b for b in blocks if _is_prose(b) and not _CREDIT.match(b.text)]


def _prose_words(blocks: list[Block]) -> int:
    return sum(len(b.text.split()) for b in _story_prose(blocks))


def _verse_words(blocks: list[Block]) -> int:
    """The words of the stanzas among `blocks` that are not read as prose: verse before the
    first heading (Beowulf's prelude, in 981.txt) is counted where it is left out."""
    return sum(len(b.text.split()) for b in blocks if _verse(b) and not _is_prose(b))


def _opening(blocks: list[Block], first_heading: str | None) -> Chapter | None:
    """The chapter the text before the first heading is when that heading is the second part's
    and the text is story (`OPENING_WORDS` of prose or more), titled "I" (or "1" before "2");
    None when it is front matter, which is dropped."""
    if first_heading is None or _SECOND.match(first_heading.strip()) is None:
        return None
    if _prose_words(blocks) < OPENING_WORDS:
        return None
    title = "1" if re.search(r"\b2\b", first_heading) else "I"
    return _from_first_prose(title, blocks)


def _prologue(blocks: list[Block]) -> Chapter | None:
    """The text before the first heading, under no heading at all, when it is story told before
    the first chapter (`PROLOGUE_WORDS` of prose or more: The Turn of the Screw's frame, under
    the book's title), as a chapter "Prologue"; None for a title page, a dedication or credits."""
    if _prose_words(blocks) < PROLOGUE_WORDS:
        return None
    return _from_first_prose("Prologue", blocks)


def _from_first_prose(title: str, blocks: list[Block]) -> Chapter:
    """A chapter of `blocks` from their first paragraph of prose: the title, author and credits
    above it stay out."""
    return _chapter(title, blocks[blocks.index(_story_prose(blocks)[0]) :])


PROLOGUE_WORDS = 2000  # story told under no heading before the first chapter is this long


TITLE_PAGE_WORDS = 500  # a book's title over more than this is a story told under it


def _title_page(chapter: Chapter, book_title: str | None) -> bool:
    """Whether a first chapter headed by the book's own title ("TREASURE ISLAND" over a
    dedication and a poem to the reader, an epigraph), or by a byline or a translator's credit
    alone, is its title page, not story."""
    if not book_title or chapter.words > TITLE_PAGE_WORDS:
        return False
    if _BYLINE.match(chapter.title) and len(chapter.title.split()) > 2:
        # headed by a credit alone, the book's title and author dropped from over it (Madame
        # Bovary's HTML: "Translated from the French by Eleanor Marx-Aveling" over a dedication)
        return True
    parts = chapter.title.split(": ")
    if _named(parts) or _numbered(parts):  # "The Island of Doctor Moreau: INTRODUCTION."
        return False
    book = _title_key(book_title)
    # "THE MODERN LIBRARY: OF THE WORLD'S BEST BOOKS: CANDIDE BY VOLTAIRE" heads one too
    headings = [_title_key(chapter.title), *(_title_key(part) for part in parts[1:])]
    return any(h and (h.startswith(book) or book.startswith(h)) for h in headings)


STANZA_LINE_CHARS = 48  # a stanza's lines are all shorter than this (prose wraps at 60 or more)


def _chapter(name: str, body: list[Block]) -> Chapter:
    chapter = Chapter(name)
    for block in body:
        if block.text == "* * *" or _BREAK.match(block.text):
            chapter.scene_break()
        elif block.text:
            chapter.add(_with_its_lines(block))
    return chapter


def _with_its_lines(block: Block) -> str:
    """A paragraph's text: a stanza's keeps its lines (a post shows them; each line's capital
    opens it as a sentence's does, and a name at a line's end runs on to no word of the next),
    any other paragraph is one line."""
    lines = [line.strip() for line in block.lines if line.strip()]
    if len(lines) < 2 or not _verse(block):
        return block.text
    if any(len(line) >= STANZA_LINE_CHARS for line in lines) and not _capitalised_lines(lines):
        return block.text
    return "\n".join(_line_text(line) for line in lines)


CAPITALISED_LINES = 6  # verse whose lines all open with a capital has at least this many
VERSE_LINE_CHARS = 60  # and none longer than this (prose wraps at 60 to 75)


def _capitalised_lines(lines: list[str]) -> bool:
    """Whether every line opens with a capital (after quotes or a bracket) and none is longer
    than `VERSE_LINE_CHARS`, six lines or more: verse with lines longer than a stanza's (Pope's
    heroic couplets run to 60 characters), never wrapped prose, whose lines open in lower case
    or run longer."""
    return len(lines) >= CAPITALISED_LINES and all(
        len(line) <= VERSE_LINE_CHARS and re.match(r"^[\"“‘'(\[_]*[A-Z]", line) for line in lines
    )


def _line_text(line: str) -> str:
    """A line of a paragraph as its text is read: without note marks and _emphasis_ marks."""
    return " ".join(_unmarked(_NOTE_MARK.sub("", line.strip())).split())


# -- reading and writing ---------------------------------------------------------------------


def chapters_from_text(text: str) -> list[Chapter]:
    return chapters_from_blocks(blocks_from_text(text)).chapters


def chapters_from_markdown(text: str) -> list[Chapter]:
    return chapters_from_blocks(blocks_from_markdown(text)).chapters


def read_book(path: Path) -> Book:
    """The book at `path`: its chapters of story, its title and what was set aside."""
    if path.is_dir():
        raise InputError(
            f"{path} is a folder: give the book's file (.txt, .md, .rst, .adoc, .html, .epub)"
        )
    if not path.is_file():
        raise InputError(f"no file to import at {path}")
    suffix = path.suffix.lower()
    note = None
    if suffix == ".epub":
        blocks, title = blocks_from_epub(path)
    elif suffix in (".html", ".htm", ".xhtml"):
        blocks, title, note = blocks_from_html(path)
    elif suffix in (".adoc", ".asciidoc", ".asc"):
        text, note = _decoded(path)
        blocks, title = blocks_from_asciidoc(text)
    elif suffix in (".rst", ".rest"):
        text, note = _decoded(path)
        blocks, title = blocks_from_rst(text)
    elif suffix in (".txt", ".text", ".md", ".markdown"):
        text, note = _decoded(path)
        title = gutenberg_title(text)
        reader = blocks_from_markdown if suffix in (".md", ".markdown") else blocks_from_text
        blocks = reader(text)
    else:
        raise InputError(
            f"cannot import {path.name}: give a plain-text (.txt), Markdown (.md), "
            "reStructuredText (.rst), AsciiDoc (.adoc, .asciidoc), HTML (.html) or EPUB file"
        )
    book = chapters_from_blocks(blocks, title)
    if not book.chapters and any(_verse(block) for block in blocks):
        # a book in verse (Paradise Lost): its stanzas are its paragraphs, read as prose is
        verse = [part for block in blocks for part in _as_prose(block)]
        book = chapters_from_blocks(verse, title)
    if not book.chapters:
        # headings that leave no chapter of story (The Tale of Peter Rabbit: its title page's
        # "First published 1902" read as front matter, "THE END" as the first heading): the
        # whole text as one chapter, its headings lines of it, when it has the prose
        as_text = [Block("text", block.text, block.lines) for block in blocks]
        if _prose_words(as_text) >= STORY_UNDER_HEADINGS_WORDS:
            book = chapters_from_blocks(as_text, title)
    if not book.chapters:
        raise InputError(f"{path} has no story text to import (no chapter with prose)")
    book.notes = [note] if note else []
    return book


_DECLARED = re.compile(rb"^Character set encoding:\s*([A-Za-z0-9_.:-]+)", re.M | re.I)


def _decoded(path: Path) -> tuple[str, str | None]:
    """A text file's text and, when it had to be guessed, a note that says how: UTF-8, else the
    encoding its Project Gutenberg header declares ("Character set encoding: ISO-8859-1", as
    Gutenberg's 8-bit editions say), else what `guess_decoding` makes of it."""
    raw = path.read_bytes()
    _refuse_binary(raw, path)
    try:
        return raw.decode("utf-8-sig"), None
    except UnicodeDecodeError:
        pass
    declared = _DECLARED.search(raw[:20_000])
    if declared is None:
        return guess_decoding(raw, path, "declares no encoding")
    name = declared.group(1).decode("ascii")
    try:
        return raw.decode(name), None
    except LookupError:
        raise InputError(
            f"{path} is not UTF-8 text and declares {name}, an encoding Python does not know: "
            "convert it to UTF-8 (iconv -f CP1252 -t UTF-8 for most 8-bit texts)"
        ) from None
    except UnicodeDecodeError:  # "ASCII" over a few 8-bit bytes, as old Gutenberg texts say
        return guess_decoding(raw, path, f"is not the {name} it declares")


def _refuse_binary(raw: bytes, path: Path) -> None:
    """A file that is not text at all (a corpus or a store renamed .txt, UTF-16) is refused in
    one line: read as Windows-1252 it was 'imported' as a chapter of binary noise."""
    if raw.startswith(b"SQLite format 3\x00"):
        raise InputError(
            f"{path} is an SQLite database (a corpus or an annotator store?), not a book: give "
            "the book's text, Markdown, reStructuredText, AsciiDoc, HTML or EPUB file"
        )
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(
            f"{path} is UTF-16 text: convert it to UTF-8 (iconv -f UTF-16 -t UTF-8) and import that"
        )
    if b"\x00" in raw[:65_536]:
        raise InputError(
            f"{path} is not a text file (it holds NUL bytes): give the book's text, Markdown, "
            "AsciiDoc, HTML or EPUB file"
        )


def guess_decoding(raw: bytes, path: Path, problem: str) -> tuple[str, str]:
    """Text that is not what it says it is (or says nothing): UTF-8 with its few broken bytes
    replaced when most of what lies above ASCII is UTF-8, else Windows-1252, the 8-bit
    encoding old Project Gutenberg texts were written in (a superset of Latin-1's letters;
    Latin-1 itself for the five bytes it leaves undefined). The note says which was chosen
    and over how many bytes, so an accent read wrongly is never a silent choice."""
    as_utf8 = raw.decode("utf-8", errors="replace")
    broken = as_utf8.count("\ufffd") - raw.decode("utf-8", errors="ignore").count("\ufffd")
    decoded_well = sum(1 for char in as_utf8 if char > "\x7f" and char != "\ufffd")
    if decoded_well > broken:
        return as_utf8.lstrip("\ufeff"), (
            f"{path.name} is not all UTF-8 and {problem}: read as UTF-8, its {broken} broken "
            "sequence(s) replaced by U+FFFD"
        )
    above_ascii = sum(1 for byte in raw if byte > 0x7F)
    try:
        text = raw.decode("cp1252")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    return text, (
        f"{path.name} is not UTF-8 and {problem}: read as Windows-1252 "
        f"({_counted_bytes(above_ascii)} above ASCII; convert it with iconv if that is wrong)"
    )


def _counted_bytes(number: int) -> str:
    return f"{number} byte" if number == 1 else f"{number} bytes"


def reference_path(corpus: Path) -> Path:
    """Where an import writes the book's back matter (glossary, appendices) for reference."""
    return corpus.with_name(f"{corpus.name}.reference.md")


def _refuse_replacing_what_is_not_a_corpus(target: Path) -> None:
    """`--replace` writes over a corpus (an earlier import), never over anything else: an
    annotator store (its glossary would be lost), the book itself, notes."""
    try:
        with target.open("rb") as handle:
            head = handle.read(16)
    except OSError:
        return  # unreadable: writing over it says why
    what = None
    if head and head != b"SQLite format 3\x00":
        what = "not a corpus (not an SQLite file)"
    elif head:
        uri = target.resolve().as_uri() + "?mode=ro&immutable=1"  # leaves no -wal, -shm
        try:
            conn = sqlite3.connect(uri, uri=True)
            try:
                tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
            finally:
                conn.close()
        except sqlite3.Error:
            tables = set()
        if {"meta", "entry"} <= tables:
            what = "an annotator store (its glossary would be lost)"
        elif not {"thread", "post"} <= tables:
            what = "an SQLite file that is not a corpus"
    if what is not None:
        raise InputError(
            f"--out {target} is {what}; nothing was changed; --replace writes over a corpus "
            "only: give another file name"
        )


def _write_corpus(partial: Path, book: Book, source: Path) -> None:
    """The book's chapters, scenes and paragraphs as a corpus in the file `partial`."""
    chapters = book.chapters
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
    if target.is_file():
        _refuse_replacing_what_is_not_a_corpus(target)
    book = read_book(source)
    chapters = book.chapters
    partial = target.with_name(f".{target.name}.partial")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        partial.unlink(missing_ok=True)
        _write_corpus(partial, book, source)
        partial.replace(target)
    except (OSError, sqlite3.Error) as exc:  # a place the system refuses: nothing is left
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        reason = getattr(exc, "strerror", None) or str(exc)
        raise InputError(f"--out {target}: cannot write there: {reason}") from None
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
        sections=tuple(section.title for section in book.reference),
        left_out=tuple(book.dropped),
        notes=tuple(book.notes),
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
