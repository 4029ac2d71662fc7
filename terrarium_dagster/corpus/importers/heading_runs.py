"""What a run of consecutive headings says: the chapter's one title (`run_title`), the book,
part or volume it opens (`run_division`), a letter's signature over the next heading
(`signed`), a story's title over its first numbered section (`titled_sections`,
`sections_within`), a story's numbered part (`part_number`), a contents page set as headings
(`only_listed`), a sentence of the story set as a heading, a division's last line."""

from __future__ import annotations

import re

from terrarium_dagster.corpus.importers.headings import (
    BYLINE,
    CHAPTER_NUMBER,
    CONTENTS,
    DEDICATION,
    NAMED,
    ONLY_NUMBER,
    ORDINALS,
    SECTION_NUMBER,
    STORY_SECTIONS,
    STRONG,
    heading_named,
    numeral,
    title_key,
)
from terrarium_dagster.corpus.importers.model import Block

_PREFATORY = heading_named(STORY_SECTIONS)
_BARE_SECTION = re.compile(r"^(?:[IVXLCDM]+|\d{1,3})(?:[.:]\s+\S|\.?$)")  # "I: ABOUT ...", "II."


def run_title(run: list[str]) -> str:
    """One title for consecutive headings: from the chapter number on when there is one (a
    book's title above it is dropped), the rest joined by ": "."""
    # bylines are no title, unless there is nothing else and it is two words ("BY COURIER", The
    # Four Million; not "By Charlotte Perkins Gilman"), nor a dedication set among the headings
    # ("FIRST PART", "To Romain Rolland, my dear friend")
    bylines = [t for t in run if t and BYLINE.match(t)]
    run = [text for text in run if text and not BYLINE.match(text)] or [
        text for text in bylines if len(text.split()) <= 2
    ]
    run = [text for text in run if not DEDICATION.match(text)] or run
    contents = [i for i, text in enumerate(run) if CONTENTS.match(text.strip())]
    if contents and contents[-1] + 1 < len(run):  # a contents heading above the first chapter's
        run = run[contents[-1] + 1 :]
    if sections_within(run):  # "ADVENTURE I. A SCANDAL IN BOHEMIA", then its section "I."
        run = run[:-1]
    numbered = [i for i, text in enumerate(run) if CHAPTER_NUMBER.match(text)]
    named = [i for i, text in enumerate(run) if NAMED.match(text.strip())]
    listing = len(numbered) >= 3 and numbered[-1] < len(run) - 1
    if listing and (not ONLY_NUMBER.match(run[-2]) or _follows(run[-3], run[-2])):
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
        elif first and _part_over_chapter(run[first - 1], run[first]):
            first -= 1  # "I" over "1": the part's number and its chapter's, "I: 1" (Ulysses)
        run = run[first:]
    elif named:  # "THE GODS OF MARS", "Edgar Rice Burroughs", "FOREWORD": "FOREWORD"
        run = run[named[-1] :]
    if len(run) > 1:  # "I." over "THE EVE OF THE WAR." reads "I: THE EVE OF THE WAR"
        # and a named section over its title: "Postscript." over "Found in the Handwriting of
        # Mr. Knickerbocker." (The Legend of Sleepy Hollow's AsciiDoc) reads "Postscript: ..."
        run = [
            text.rstrip(".")
            if ONLY_NUMBER.match(text) or (i < len(run) - 1 and NAMED.match(text.strip()))
            else text
            for i, text in enumerate(run)
        ]
    # and each part's closing stop goes, a title's as a number's (the Iliad's 6130-0.txt:
    # "BOOK I." over "THE CONTENTION OF ACHILLES AND AGAMEMNON." read "BOOK I: THE CONTENTION
    # OF ACHILLES AND AGAMEMNON.", its HTML too; a plain text's heading line and a title on
    # the number's line, "CHAPTER 1. Loomings.", had lost theirs)
    return ": ".join(dict.fromkeys(_unstopped(text) for text in run)) if run else "Untitled"


def _unstopped(title: str) -> str:
    """A heading's text without its closing full stop, after a word of three letters or more:
    not an abbreviation's ("AND CO.", "Mr.", "ETC."), a number's ("Chapter 4.XX.", "1909.",
    as a number alone keeps it) nor an ellipsis's."""
    body = title.rstrip()
    if not body.endswith(".") or body.endswith(".."):
        return title
    last = re.split(r"[\s.]", body[:-1])[-1]
    if len(last) < 3 or last.casefold() == "etc" or re.fullmatch(r"[IVXLCDM]+|\d+", last):
        return title
    return body[:-1]


def _part_over_chapter(above: str, below: str) -> bool:
    """Whether two headings are bare numbers of two kinds, a Roman over an Arabic ("I" over
    "1"): a part's number over its first chapter's, numbered through the book."""
    above, below = above.strip().rstrip("."), below.strip().rstrip(".")
    return bool(
        SECTION_NUMBER.match(above)
        and SECTION_NUMBER.match(below)
        and not above.isdigit()
        and below.isdigit()
    )


def _follows(before: str, after: str) -> bool:
    """Whether two headings are one division numbered one after the other ("BOOK VII", then
    "BOOK VIII"): the second is the next line of a list, not a chapter's number over its
    title (a contents page's "BOOK III", then "BOOK I" over the first book's title)."""
    first, second = before.strip().rstrip(".").split(), after.strip().rstrip(".").split()
    if len(first) != len(second) or first[:-1] != second[:-1] or not first:
        return False
    one, two = numeral(first[-1]), numeral(second[-1])
    return one is not None and two == one + 1


VALEDICTION_WORDS = 8  # "Yours ever, &c.,", "Your most affectionate sister," at most this long


def signed(before: Block | None, run: list[str]) -> bool:
    """Whether a run of headings opens with a signature: a line neither numbered (but for an
    initial) nor named under a short paragraph ending in a comma (a letter's valediction), with
    a heading after it."""
    if before is None or len(run) < 2 or not before.text.rstrip().endswith(","):
        return False
    if len(before.text.split()) > VALEDICTION_WORDS:
        return False
    first = run[0].strip()
    if STRONG.match(first) or ONLY_NUMBER.match(first) or NAMED.match(first):
        return False
    # "C. VERNON" reads as chapter C's title: an initial is a signature's
    return not CHAPTER_NUMBER.match(first) or re.match(r"^[A-Z]\.\s", first) is not None


def titled_sections(run: list[str], book_key: str | None) -> bool:
    """Whether a run of headings is a story's title over the number of its first section
    ("THE LADY WITH THE DOG", then "I"), the title neither numbered, named nor a byline."""
    contents = [i for i, text in enumerate(run) if CONTENTS.match(text.strip())]
    run = run[contents[-1] + 1 :] if contents else run  # a contents heading above the first
    if len(run) < 2 or not SECTION_NUMBER.match(run[-1].strip()):
        return False
    if numeral(run[-1].strip().rstrip(".")) != 1:
        return False
    titles = [t for t in run[:-1] if title_key(t) != book_key and not BYLINE.match(t)]
    return bool(titles) and not any(
        CHAPTER_NUMBER.match(t) or NAMED.match(t.strip()) for t in run[:-1]
    )


def sections_within(run: list[str]) -> bool:
    """Whether a chapter's heading is followed by the number of its first section
    ("ADVENTURE I. A SCANDAL IN BOHEMIA", then "I."): its "II.", "III." are its sections."""
    return (
        len(run) >= 2
        and SECTION_NUMBER.match(run[-1]) is not None
        and any(STRONG.match(t) and not ONLY_NUMBER.match(t) for t in run[:-1])
    )


def only_listed(run: list[str]) -> bool:
    """Whether a run of headings is a contents page set as headings and nothing else: three
    numbered ones or more, the last two the same division numbered one after the other
    ("CHAPTER 134. The Chase—Second Day.", "CHAPTER 135. The Chase.—Third Day.": Moby-Dick's
    2701-0.txt, over its transcriber's notes), the last one's title after it with its page
    ("CHAPTER XXVII", "Mina Harker's Journal  338": Dracula's 345.txt, over the title page). A
    listing that ends in the first chapter's own heading ("CHAPTER III" listed, then "CHAPTER
    I") or title heads that chapter."""
    numbered = [text for text in run if CHAPTER_NUMBER.match(text)]
    paged = len(run) >= 2 and re.search(r"\s\d{1,4}$", run[-1]) is not None
    if len(numbered) < 3 or not CHAPTER_NUMBER.match(run[-2 if paged else -1]):
        return False
    before, after = (title_key(text).split()[:2] for text in numbered[-2:])
    if len(before) < 2 or len(after) < 2 or before[0] != after[0]:
        return False
    one, two = numeral(before[1]), numeral(after[1])
    return one is not None and two == one + 1


# a part of a story numbered under its title: "1. HOW THEY WENT TO THE MOUNTAINS TO EAT NUTS",
# "SECOND STORY"
_PART_NUMBER = re.compile(
    rf"^(?:(\d{{1,3}}|[IVXLC]+)\.\s+\S.*|((?i:{ORDINALS}))\s+(?:STORY|TALE|PART))$"
)
_ORDINAL_VALUES = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")


def part_number(text: str) -> int | None:
    """The number of a story's part from its heading ("2. HOW ...": 2, "II. What Happened to
    the Councillor": 2, "SECOND STORY": 2)."""
    found = _PART_NUMBER.match(text.strip())
    if found is None:
        return None
    if found.group(1):
        return int(found.group(1)) if found.group(1).isdigit() else numeral(found.group(1))
    ordinal = found.group(2).casefold()
    return _ORDINAL_VALUES.index(ordinal) + 1 if ordinal in _ORDINAL_VALUES else None


def sentence_heading(text: str) -> bool:
    """A sentence of the story set as a heading under the chapter's own (Just So Stories' HTML:
    "HOW THE CAMEL GOT HIS HUMP", then an <h3> "NOW this is the next tale, and it tells how the
    Camel got his big hump."): eight words or more, ending as a sentence ends, most of them in
    lower case. It is the chapter's first line, not part of its title."""
    words = [word for word in text.split() if word[:1].isalpha()]
    if len(words) < 8 or not text.rstrip().endswith((".", "!", "?", ".’", ".”", '."')):
        return False
    return sum(1 for word in words if word[0].islower()) * 2 > len(words)


DIVISION_END = re.compile(  # "END OF THE FIRST ACT.", "The end of Book II", "END OF VOL. I."
    rf"^(?:the )?end of (?:the )?(?:(?:{ORDINALS})\s+)?"
    r"(?:act|book|part|volume|vol\.|canto|chapter|scene|tale)\b[\w\s.,]{0,20}$",
    re.I,
)


LISTED_CHAPTERS = 3  # a run of headings numbering this many chapters lists them
DIVISION_HEAD = re.compile(r"^(?:BOOK|Book|PART|Part|VOLUME|Volume)\b")
_EPILOGUE_DIVISION = re.compile(r"^(?:first|second|third|last) epilogue\b", re.I)
_EPILOGUE = re.compile(
    r"^epilogue\.?$", re.I
)  # over a number: "EPILOGUE", "I" (Crime and Punishment)


def run_division(run: list[str]) -> str | None:
    """The book, part or volume a run of headings opens ("BOOK ONE: 1805" over "CHAPTER I", or
    "BOOK II" alone): from its last division heading up to the chapter's own number; None when
    the run opens none."""
    numbered = [i for i, text in enumerate(run) if CHAPTER_NUMBER.match(text)]
    heads = [i for i in numbered if DIVISION_HEAD.match(run[i])]
    heads += [i for i, text in enumerate(run) if _EPILOGUE_DIVISION.match(text)]
    # an epilogue told in numbered sections is a division of its own, not the last part's
    heads += [
        i for i, text in enumerate(run) if _EPILOGUE.match(text.strip()) and i + 1 in numbered
    ]
    chapters = [i for i in numbered if i not in heads]
    end = chapters[-1] if chapters else len(run)
    # in a contents page set as headings (three chapters numbered or more), a division listed
    # over chapters before the run's own is a line of the listing, not a division the run opens
    # (Don Quixote's "CONTENTS" over "Volume I" and its chapters, then "TRANSLATOR'S PREFACE":
    # the listing up to "CHAPTER V" had become the division of every chapter after it)
    listing = len(chapters) >= LISTED_CHAPTERS
    opened = sorted(
        i for i in heads if i < end and not (listing and any(i < c < end for c in chapters))
    )
    if not opened:
        return None
    # not a section the division opens with ("VOLUME II" over "THE AUTHOR'S PREFACE", Don
    # Quixote's AsciiDoc: its chapters are no part of the preface)
    return ": ".join(
        text.strip().rstrip(".")
        for index, text in enumerate(run[opened[-1] : end])
        if index == 0 or not NAMED.match(text.strip())
    )
