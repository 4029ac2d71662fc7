"""What a heading looks like in any format: a chapter's number ("CHAPTER I", "IV.", "FIRST
ACT", "FEDERALIST No. 1"), the named sections (story, contents, front and back matter, a cast),
a heading set as a paragraph, a scene break, a byline, a dedication; the value of a numeral
(`numeral`); and the shapes of a title (`bare_capitals`, `shouted`, `title_key`, `unstopped`)."""

from __future__ import annotations

import itertools
import re

_UNITS = r"one|two|three|four|five|six|seven|eight|nine"
NUMBER_WORDS = (  # "TWENTY-ONE", "FORTY", "one hundred and two" as well as "ELEVEN"
    rf"(?:(?:one |a )?hundred(?: and)?[ -])?"
    rf"(?:(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)(?:[ -](?:{_UNITS}))?|"
    rf"ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|"
    rf"{_UNITS})|one hundred|a hundred|the first|the second|the third|the last"
)
# "ACT FIRST", "BOOK SECOND" (Hedda Gabler's acts, Les Misérables' books): after a division only
ORDINALS = (
    r"(?:(?:twenty|thirty|forty|fifty)[ -])?(?:first|second|third|fourth|fifth|sixth|seventh|"
    r"eighth|ninth)|tenth|eleventh|twelfth|thirteenth|fourteenth|fifteenth|sixteenth|"
    r"seventeenth|eighteenth|nineteenth|(?:twen|thir|for|fif)tieth"
)
DIVISIONS = (
    "CHAPTER|Chapter|BOOK|Book|PART|Part|STAVE|Stave|VOLUME|Volume|ADVENTURE|Adventure|TALE|Tale|"
    "STORY|Story|LETTER|Letter|CANTO|Canto|EPISODE|Episode|ACT|Act"
)
# a paper of a series numbered alone on its line: "FEDERALIST No. 1", "Letter No. 12"
_SERIES_NUMBER = r"[A-Z][A-Za-z]{2,20}\s+No\.\s*\d{1,3}\.?"
# a play's act after its ordinal, alone on its line: "FIRST ACT" (The Importance of Being
# Earnest); a "FIRST PART" only groups chapters with titles of their own (Siddhartha's)
_ORDINAL_DIVISION = rf"(?i:{ORDINALS})\s+(?:ACT|Act)\.?"
# a part named by its ordinal, alone on its line: "SECOND PART" (Siddhartha's 2500.txt, over its
# titled chapters and a dedication): a named heading, not a strong one, so the chapters' bare
# titles are still found
ORDINAL_GROUP = re.compile(rf"^(?i:{ORDINALS})\s+(?:PART|Part|BOOK|Book|VOLUME|Volume)\.?$")
# a place in another book cited as a heading: "Book I, Ch. 15." (Charles Dickens and Music's
# Silas Wegg's verses, each under the place in Our Mutual Friend it comes from), never a division
_CITATION = (
    rf"(?!(?:{DIVISIONS})\s+[\dIVXLCDM]+,\s*"
    r"(?i:ch|chap|chapt|c|sc|p|pp|bk|v|l)\.?\s*[\dIVXLCDMivxlcdm]+\.?$)"
)
STRONG = re.compile(
    rf"^{_CITATION}(?:{DIVISIONS})\s+"
    rf"(?:[\dIVXLCDM]+\b|(?i:{NUMBER_WORDS}|{ORDINALS})\b).{{0,80}}$"
    rf"|^{_SERIES_NUMBER}$|^{_ORDINAL_DIVISION}$"
)
NUMBERED = re.compile(
    r"^(?:[IVXLCDM]+|\d{1,3})\.?$"  # "IV", "12."
    # "IV. THE RIVER BANK"; not "M. Madeleine replied" nor "D. Appleton and Co." (initials)
    # nor "IV. MR. BADGER" (a title's abbreviations are no stop: The Wind in the Willows)
    r"|^(?:(?![MD]\.)[IVXLCDM]+|\d{1,3})[.:]\s+(?=[A-Z\"“‘'])"
    r"(?:\b(?:MRS?|Mrs?|DR|Dr|ST|St)\.|[^.!?]){1,71}[.]?[\"”’']?$"
    # "1 THE THREE PRESENTS OF D'ARTAGNAN THE ELDER", "01 My Early Home": a number and a title,
    # capitalised (`_number_and_title`)
    r"|^\d{1,3}\s+[A-Z\"“‘'][^!?;\d]{0,78}(?<![.,:])$"
)
NUMBER_AND_TITLE = re.compile(r"^\d{1,3}\s+(\S.*)$")
# a division's word and its number anywhere in a line ("Scene II", "CHAPTER 4")
_DIVISION_AND_NUMBER = re.compile(rf"\b({DIVISIONS}|SCENE|Scene)\s+(?:[IVXLCDM]+|\d{{1,3}})\b")


def unfinished(line: str) -> bool:
    """Whether a heading's line stops short of its title's end: on a small word ("A", "of",
    "and") or a comma, a semicolon, a dash or a hyphen."""
    last = re.split(r"[\s—-]+", line.rstrip())[-1]
    return line.rstrip().endswith((",", ";", "-", "—")) or last.casefold() in SMALL_WORDS


def lists_divisions(line: str) -> bool:
    """Whether a line names two parts of one kind, each with its title ("ACT III Scene I. A room
    in the Castle. Scene II. A hall in the Castle.": a contents page's entry listing an act's
    scenes), a listing and never a heading ("ACT I. SCENE I." names one; a run of numbers alone,
    "CHAPTER I CHAPTER II CHAPTER III", is left to the contents rules)."""
    found = list(_DIVISION_AND_NUMBER.finditer(line))
    return any(
        one.group(1).casefold() == two.group(1).casefold()
        and re.search(r"[^\W\d_]", line[one.end() : two.start()]) is not None
        for one, two in itertools.pairwise(found)
    )


# the first of a run of numbers: "I.", "1", "Chapter One", "FIRST" (a numbering that starts again)
FIRST_NUMBER = re.compile(rf"^(?:(?:{DIVISIONS})\s+)?(?:I|1|one|first)\b\.?(?!\S)", re.I)
# words a title leaves in lower case; a "numbered title" with more other lower-case words is a
# numbered sentence of the story ("II. A Loose-Fish is fair game for anybody who can catch it.")
SMALL_WORDS = frozenset(
    ("a", "an", "and", "as", "at", "but", "by", "for", "from", "in", "into", "nor", "of", "on",
     "or", "over", "the", "to", "under", "upon", "with")
)  # fmt: skip
STORY_SECTIONS = (
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
_CONTENTS_SECTIONS = (
    "contents|table of contents|list of illustrations|illustrations|"
    "inhoud|inhalt|inhaltsverzeichnis|table des matières"  # Dutch, German, French
)
_BACK_SECTIONS = (
    r"glossary\b.*|a glossary\b.*|appendix\b.*|appendices|index|notes|endnotes|footnotes|"
    r"vocabulary|"  # The Song of Hiawatha's list of its Ojibway words
    # "ORIGINAL TRANSCRIBER’S NOTES:" (A Study in Scarlet's end notes, after its last chapter)
    r"bibliography|(?:original )?transcriber['’]?s? notes?|about the author|the end|"
    r"errata|corrigenda|"  # a printed list of misprints and their corrections (Ontboezemingen)
    r"(?:a )?note on the (?:text|texts|edition|translation)"  # Northanger Abbey's editor's
)
# A title page's own lines read as headings: its copyright, its publication ("Published March,
# 1909.", "First Published in 1910"), its year alone ("MCMIX"). They name no section: what runs
# on under one is whatever follows the title page.
_TITLE_PAGE_LINES = (
    r"copyright\b.*|(?:first )?published\b.*|"
    r"(?-i:(?=M.{2})M{1,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3}))"
)
# Front matter that is never story (left out), and lists a reader may want beside the story
# wherever they stand (kept for reference, like back matter).
_FRONT_SECTIONS = (
    rf"{_TITLE_PAGE_LINES}|colophon|"
    r"dedication(?: of (?:the )?(?:volume|part|book) [\w]+)?|epigraph|"
    r"title ?page|half[- ]title|also by\b.*|"
    # Evelina's "ORIGINAL INSCRIPTION: TO DR. BURNEY" (a poem to her father) and "ORIGINAL
    # DEDICATION.: TO THE AUTHORS OF THE MONTHLY AND CRITICAL REVIEWS."
    r"inscription\b.*|original (?:inscription|dedication)\b.*|"
    r"other (?:books|works) by\b.*|acknowledge?ments?|"
    r"imprint|uncopyright|about this (?:e-?book|edition)|"  # as Standard Ebooks' EPUBs have them
    r"publishers?['’]?s?['’]? note|"  # Pamela's, on Richardson's life: "PUBLISHERS' NOTE"
    r"editor['’]?s?['’]? note"  # The Scarlet Letter's, on Hawthorne's life and works
)
_CAST_SECTIONS = (
    r"dramatis person(?:ae|æ)|cast of characters|list of characters|characters|maps?|"
    # a play's cast and its list of settings (The Importance of Being Earnest)
    r"(?:the )?persons (?:in|of) the (?:play|drama|dialogue)|(?:the )?scenes of the play|"
    r"(?:the )?persons represented|"  # the 1990s Shakespeare texts' cast (Macbeth's 1533.txt)
    r"(?:a )?(?:note on|guide to) pronunciation|pronunciation guide"
)


def heading_named(*sections: str) -> re.Pattern[str]:
    """A heading that is one of the named `sections` (alternatives), with a stop or colon."""
    return re.compile(rf"^(?:{'|'.join(sections)})[.:]?$", re.I)


FRONT = heading_named(_FRONT_SECTIONS)
TITLE_PAGE_LINE = heading_named(_TITLE_PAGE_LINES)
# Story sections that end a story or a text: before the first numbered chapter, not story.
ENDING = heading_named("postscript|afterword|epilogue|conclusion|envoi|finale")
CAST = heading_named(_CAST_SECTIONS)
ONLY_NUMBER = re.compile(
    rf"^(?:(?:{DIVISIONS})\s+)?"
    rf"(?:[IVXLCDM]+|\d{{1,3}}|(?i:{NUMBER_WORDS}))\.?$"
    rf"|^(?:{DIVISIONS})\s+(?i:{ORDINALS})\.?$"
    rf"|^{_SERIES_NUMBER}$|^{_ORDINAL_DIVISION}$"
)
NAMED = heading_named(
    STORY_SECTIONS, _CONTENTS_SECTIONS, _BACK_SECTIONS, _FRONT_SECTIONS, _CAST_SECTIONS
)
CONTENTS = heading_named(_CONTENTS_SECTIONS)
BACK = heading_named(_BACK_SECTIONS)
CHAPTER_NUMBER = re.compile(
    rf"^{_CITATION}(?:{DIVISIONS})\s+(?:[\dIVXLCDM]+\b|(?i:{NUMBER_WORDS}|{ORDINALS})\b)"
    rf"|^{_SERIES_NUMBER}$|^{_ORDINAL_DIVISION}$"
    rf"|{NUMBERED.pattern}"
    r"|^\d{1,3}\s+[A-Z\"“‘']|^(?:(?![MD]\.)[IVXLCDM]+|\d{1,3})[.:]\s+[A-Z\"“‘']"
)  # a heading that starts with its chapter's number, its title however long


BREAK = re.compile(r"^\s*(?:\*\s*){3,}\s*$|^\s*(?:-{3,}|_{3,}|#)\s*$")


SENTENCE_END = re.compile(r"[.!?…][\"”’')\]]*(?:\s|$)")
# a contents line: a chapter's title, then its page after spaces or dot leaders
# (its page with a stop too: Ontboezemingen's "BEREISDE LIEDEN                         3.")
PAGE_REFERENCE = re.compile(r"(?:\s{2,}|\.\s*\.)\s*(?:\d{1,4}|[ivxlc]{1,6})\.?\s*$")
# a contents page's heading over its column of pages: "Page", "PAGES", the Dutch "Bladz."
PAGE_COLUMN = re.compile(r"^(?:pages?|pp?|bladz|blz|seite|pag)\.?$", re.I)
# a dedication among headings: "To Romain Rolland, my dear friend" (not a letter's "To Mrs.
# Saville, England.")
DEDICATION = re.compile(r"^(?:Dedicated to\b|To [^,]{2,60},\s+my\b)", re.I)
# an author's byline ("BY NICOLO MACHIAVELLI", "Translated by ..."), not a title that opens with
# "by" ("BY THE RIVER": Siddhartha)
BYLINE = re.compile(
    # "Translated from the French by Eleanor Marx-Aveling" too
    r"^(?:by|(?:written|illustrated|translated(?: (?:from|out of) (?:the )?\w+)?|edited"
    r"|with illustrations) by)\b"
    r"(?!\s+(?:the|a|an)\b)",
    re.I,
)


# A paragraph that is a heading set as plain text ("CONCLUSION", "CONTENTS", "CHAPTER XII"),
# its number after its volume's too ("Chapter 4.XX.": Tristram Shandy's AsciiDoc sets that one
# chapter's heading as a paragraph among 311 sections)
HEADING_PARAGRAPH = re.compile(
    rf"^(?:(?:{STORY_SECTIONS}|{_CONTENTS_SECTIONS}|{_BACK_SECTIONS}|{_FRONT_SECTIONS}"
    rf"|{_CAST_SECTIONS})[.:]?"
    rf"|(?:{DIVISIONS})\s+"
    rf"(?:(?:\d{{1,3}}\.)?(?:[IVXLCDM]+|\d{{1,3}})|(?i:{NUMBER_WORDS}|{ORDINALS}))\.?)$",
    re.I,
)


_ROMAN = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def numeral(text: str) -> int | None:
    """The value of "12" or "XIV"; None for anything else."""
    if text.isdigit():
        return int(text)
    if not text or any(char not in _ROMAN for char in text.upper()):
        return None
    values = [_ROMAN[char] for char in text.upper()]
    return sum(-v if v < w else v for v, w in zip(values, [*values[1:], 0], strict=True))


SECTION_NUMBER = re.compile(r"^(?:[IVXLCDM]+|\d{1,3})\.?$")
# a number alone set between dashes or in brackets: Ulysses' parts "— I —" ("-- I --" in 4300.txt)
# and episodes "[ 1 ]" (spaced, unlike a note's mark "[1]")
_DECORATED_NUMBER = re.compile(
    r"^(?:[—–]|--?)\s*([IVXLCDM]+|\d{1,3})\.?\s*(?:[—–]|--?)$|^\[\s+(\d{1,3})\s+\]$"
)


def undecorated(text: str) -> str:
    """A heading that is a number set in decoration ("— I —", "[ 1 ]") as the number alone
    ("I", "1"); any other text as it is."""
    found = _DECORATED_NUMBER.match(text.strip())
    return next(group for group in found.groups() if group) if found else text


def decorated(text: str) -> bool:
    return _DECORATED_NUMBER.match(text.strip()) is not None


BARE_INDENT = 4  # a bare title is indented at most this much; more is centred, or a sign
BARE_WORDS = 10  # a bare title has at most this many words
# and one a contents page lists at most this many ("THE STORY OF THE YOUTH WHO WENT FORTH TO
# LEARN WHAT FEAR WAS", Grimms' Fairy Tales)
LISTED_WORDS = 16


def bare_capitals(raw: str, words: int = BARE_WORDS) -> bool:
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
            or (len(letters) == 2 and text.isalpha() and not SECTION_NUMBER.match(text))
        )
        and text == text.upper()
        and len(text.split()) <= words
        and not text.endswith((".", ",", ";", ":", "!", "?"))
        and not any(c.isdigit() for c in text)
        and "}" not in text  # a play's brace joining speakers who speak at once
    )


def unstopped(raw: str) -> str:
    """A title without its final stop and a note in brackets after it ("EXTRACTS. (Supplied
    by a Sub-Sub-Librarian)." is "EXTRACTS")."""
    return re.sub(r"\s*\([^)]*\)\.?$", "", raw.rstrip()).rstrip(".")


def title_key(text: str) -> str:
    """A title to compare: its words, lower case, "&" as "and" ("The Fortunes & Misfortunes of
    the Famous Moll Flanders &c." is the book "The Fortunes and Misfortunes ...")."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold().replace("&", " and ")).split())


def shouted(text: str) -> bool:
    return text == text.upper() and any(c.isalpha() for c in text)


ARGUMENT = re.compile(r"^(?:the )?argument\.?$", re.I)  # a book's summary, in verse epics


# A dictionary's letters: capitals standing alone, in the alphabet's order, at least this many
# (The Devil's Dictionary's "A" to "Z", of which "C", "D", "I", "L", "M", "V" and "X" had been
# read as Roman numbers, the other letters' words running on into them)
LETTER_SECTIONS = 5


def dictionary_letters(texts: list[str]) -> set[int]:
    """The indexes of `texts` that head a dictionary's letters: each a capital letter alone,
    the letters in the alphabet's order from "A" or "B", `LETTER_SECTIONS` of them or more; none
    otherwise (a book's chapters "I", "V" and "X" are three, and its "L" comes before "V")."""
    letters = [i for i, text in enumerate(texts) if re.fullmatch(r"[A-Z]", text)]
    order = [texts[i] for i in letters]
    if len(order) < LETTER_SECTIONS or order[0] not in "AB":
        return set()
    if any(later <= earlier for earlier, later in itertools.pairwise(order)):
        return set()
    return set(letters)
