"""From blocks to chapters (`chapters_from_blocks`): a book's runs of headings and the blocks
under them as a `Book`: its chapters of story (a play's speakers joined to their speeches, the
story told before the first heading kept), contents pages, front matter and a title page left
out (each said in `Book.dropped`), back matter, a cast and a closing note on the author kept
aside as reference, chapters whose titles come again named with their division."""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Callable

from terrarium_dagster.corpus.importers.gutenberg import CREDIT
from terrarium_dagster.corpus.importers.heading_runs import (
    DIVISION_END,
    DIVISION_HEAD,
    only_listed,
    part_number,
    run_division,
    run_title,
    sections_within,
    sentence_heading,
    signed,
    titled_sections,
)
from terrarium_dagster.corpus.importers.headings import (
    ARGUMENT,
    BACK,
    BREAK,
    BYLINE,
    CAST,
    CHAPTER_NUMBER,
    CONTENTS,
    DIVISIONS,
    ENDING,
    FIRST_NUMBER,
    FRONT,
    NAMED,
    NUMBER_WORDS,
    ONLY_NUMBER,
    ORDINALS,
    PAGE_REFERENCE,
    SECTION_NUMBER,
    SENTENCE_END,
    STRONG,
    TITLE_PAGE_LINE,
    bare_capitals,
    dictionary_letters,
    numeral,
    shouted,
    title_key,
    undecorated,
    unstopped,
)
from terrarium_dagster.corpus.importers.model import Block, Book, Chapter
from terrarium_dagster.corpus.importers.prose import (
    as_prose,
    in_verse,
    is_prose,
    prose_words,
    story_prose,
    verse_words,
    with_its_lines,
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
            and not ONLY_NUMBER.match(block.text)
            and not NAMED.match(block.text)
            and not ARGUMENT.match(block.text)  # the label over a book's summary (the Iliad)
            and index + 1 < len(blocks)
            and blocks[index + 1].kind == "text"
            and not BREAK.match(blocks[index + 1].text)
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


RESTARTS = 2  # a book whose numbers start again at one this often under titles is no novel


def _restarts(runs: list[list[str]], letters: set[int]) -> int:
    """How often the numbering starts again at one ("I.") under a title after a numbered
    heading: a book of titled pieces told in numbered parts (Ontboezemingen's "EEN EERSTE
    STORM.", an epigraph, "I.", "II."; then "DE SLAMAT.", "I." to "IV."), not a novel whose
    chapters are numbered and whose other headings are poems' or letters' titles inside them."""
    count = 0
    numbered_seen = titled_since = False
    for at, run in enumerate(runs):
        numbered = at not in letters and _numbered(run)
        titled = not _numbered(run[:1]) and not _named(run[:1])
        if numbered:
            first = any(FIRST_NUMBER.match(text.strip()) for text in run)
            if first and numbered_seen and (titled_since or titled):
                count += 1
            numbered_seen, titled_since = True, False
        elif titled:
            titled_since = True
    return count


def _untold(section: tuple[str | None, list[Block]], run: list[str] | None) -> bool:
    """Whether a section is a piece's title over no prose of its own: headed by a run neither
    numbered nor named, its body no paragraph of story."""
    name, body = section
    return (
        name is not None
        and run is not None
        and not _numbered(run)
        and not _named(run)
        and not any(is_prose(block) for block in body)
    )


_ACT = re.compile(r"^(?:ACT|Act)\s+(?:[IVXLC]+|\d{1,2})\b\.?")


def _divisions(runs: list[list[str]], word: str) -> list[int]:
    """Which runs of headings open a division so named ("CHAPTER XIII", "ACT I.")."""
    return [
        at
        for at, run in enumerate(runs)
        if any(STRONG.match(t) and t.split()[0].casefold() == word for t in run if t.split())
    ]


def _acts(run: list[str]) -> bool:
    """Whether a run of headings is a play's act alone ("ACT I.")."""
    return all(_ACT.match(text.strip()) for text in run)


def _cast(run: list[str]) -> bool:
    return len(run) == 1 and CAST.match(run[0].strip().rstrip(".:")) is not None


BOOK_TITLE_EXTRA_WORDS = 2  # the book's title set over a chapter's may add this many words


def _book_title(text: str, book_key: str | None, *, last: bool = False) -> bool:
    """Whether a heading is the book's own title: the same words, or, over another heading, its
    words (a possessive's "s" aside) and at most `BOOK_TITLE_EXTRA_WORDS` more (Grimms' Fairy
    Tales' HTML: "THE BROTHERS GRIMM FAIRY TALES" over "THE GOLDEN BIRD", the first tale's)."""
    if not book_key:
        return False
    if title_key(text) == book_key:
        return True

    def words(key: str) -> set[str]:
        return {word.removesuffix("s") for word in key.split()}

    book, heading = words(book_key), words(title_key(text))
    return (
        not last
        and len(book) >= 2
        and book <= heading
        and len(heading - book) <= BOOK_TITLE_EXTRA_WORDS
    )


UNTITLED_NUMBERS = 10  # a book's numbers stand alone when this many do to one with a title


def _first_lines_under_numbers(
    items: list[Block | list[str]], runs: list[list[str]]
) -> list[Block | list[str]]:
    """The items with a title under one number alone, in a book whose other numbers stand alone
    (`UNTITLED_NUMBERS` to one), as its chapter's first line: Ulysses' "[ 7 ]" over its first
    newspaper headline, "IN THE HEART OF THE HIBERNIAN METROPOLIS", the others under it lines
    of the episode too, not its title."""

    def bare(text: str) -> bool:
        return SECTION_NUMBER.match(text.strip()) is not None

    alone = sum(1 for run in runs if bare(run[-1]))
    titled = [run for run in runs if len(run) >= 2 and bare(run[-2]) and not bare(run[-1])]
    if not titled or len(titled) * UNTITLED_NUMBERS > alone:
        return items
    return _last_lines_as_text(items, lambda run: any(run is one for one in titled))


def _last_lines_as_text(
    items: list[Block | list[str]], taken: Callable[[list[str]], bool]
) -> list[Block | list[str]]:
    """The items with the last line of each run of headings `taken` picks set after the run as
    a line of text (the run, in `runs` too, loses it)."""
    kept: list[Block | list[str]] = []
    for item in items:
        kept.append(item)
        if isinstance(item, list) and taken(item):
            kept.append(Block("text", item.pop()))
    return kept


_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DAY = r"\d{1,2}(?:st|nd|rd|th|d)?"
# a letter's or a diary's date on a line of its own: "MAY 4.", "October 20th, 1771.", "3 May."
DATE_LINE = re.compile(rf"^(?:{_MONTH}\s+{_DAY}|{_DAY}\s+{_MONTH})(?:,?\s+\d{{4}})?\.?$", re.I)
DATED_LINES = 3  # a book dates its letters or entries on lines of their own this often


def _dates_under_headings(items: list[Block | list[str]]) -> list[Block | list[str]]:
    """The items with a date set under a heading, in a book that dates its letters on lines of
    their own, as the first line of the chapter: The Sorrows of Young Werther's "BOOK I" over
    "MAY 4.", its first letter's date, was the chapter "BOOK I: MAY 4.", though "MAY 10." and
    the eighty dates after it are lines of the book."""
    dated = sum(1 for i in items if isinstance(i, Block) and DATE_LINE.match(i.text.strip()))
    if dated < DATED_LINES:
        return items
    return _last_lines_as_text(
        items, lambda run: len(run) >= 2 and DATE_LINE.match(run[-1].strip()) is not None
    )


_YEAR = re.compile(r"^(?:1[5-9]|20)\d\d\.?$")  # a year alone, as an imprint's last line


def _numbered(run: list[str]) -> bool:
    return any(CHAPTER_NUMBER.match(text) for text in run)


def _named(run: list[str]) -> bool:
    return any(NAMED.match(text.strip()) for text in run)


def _piece_in_parts(run: list[str]) -> bool:
    """Whether a run of headings is a titled piece over its first numbered part ("THE SHOES OF
    FORTUNE", then "I. A Beginning")."""
    return len(run) >= 2 and not _named(run[:-1]) and part_number(run[-1]) == 1


def _titled_before(runs: list[list[str]]) -> list[int]:
    """A one for each run of headings titled alone (neither numbered nor named) before the
    first numbered one."""
    return [
        1 for run in itertools.takewhile(lambda run: not _numbered(run), runs) if not _named(run)
    ]


def chapters_from_blocks(blocks: list[Block], title: str | None = None) -> Book:
    """The story's chapters (and what was set aside) from a book's blocks."""
    blocks = _speakers_joined(blocks)
    # a number set in decoration heads as the number alone ("— I —" is "I", "[ 1 ]" is "1")
    blocks = [
        Block("heading", undecorated(b.text), b.lines) if b.kind == "heading" else b for b in blocks
    ]
    runs: list[list[str]] = []  # the body's blocks, each run of headings as one list
    items: list[Block | list[str]] = []
    in_contents = False  # under a contents page's heading, before any prose
    for index, block in enumerate(blocks):
        under_a_heading = bool(items) and isinstance(items[-1], list)
        if block.kind == "heading" and under_a_heading and sentence_heading(block.text):
            block = Block("text", block.text, block.lines)  # "NOW this is the next tale, ..."
        if block.kind == "heading" and DIVISION_END.match(block.text.strip()):
            # the last line of the division before, as the plain text sets it, never the next
            # one's heading (The 'Mind the Paint' Girl's HTML: "<h4>END OF THE FIRST ACT.</h4>"
            # over "<h3>THE SECOND ACT</h3>" titled the act "END OF THE FIRST ACT.: THE SECOND
            # ACT")
            block = Block("text", block.text, block.lines)
        if block.kind == "heading":
            in_contents = CONTENTS.match(block.text.strip()) is not None
        elif is_prose(block):
            in_contents = False
        elif (
            in_contents
            and len(block.lines) <= 1
            and bare_capitals(unstopped(block.text))
            and index + 1 < len(blocks)
            and is_prose(blocks[index + 1])
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
    items = _dates_under_headings(_first_lines_under_numbers(items, runs))
    # a book whose chapters are numbered, not a collection of titled stories one of which is
    # told in numbered parts (Grimms' Fairy Tales: "THE ADVENTURES OF CHANTICLEER AND PARTLET"
    # over "1. HOW THEY WENT TO THE MOUNTAINS TO EAT NUTS", "2. ...", "3. ...", after fourteen
    # tales headed by their titles alone: the 44 tales after it ran together as its third
    # part's text; Andersen's Fairy Tales: "THE SHOES OF FORTUNE" over "I. A Beginning" to "VI.
    # ...", after three tales and before fourteen, which ran together as its sixth part's text).
    # The titles under a book's numbered parts are its poems or its scenes.
    # (a dictionary's letters, "A" to "Z", are named sections, never Roman numbers: "C", "D")
    letters = dictionary_letters([run[0] if len(run) == 1 else "" for run in runs])
    numbered_runs = sum(1 for at, run in enumerate(runs) if at not in letters and _numbered(run))
    # the titled pieces before the first numbered heading, and after the last when the first is
    # a titled piece's first part (not a novel's chapters, a place cited under the last of them:
    # Charles Dickens and Music's "Book I, Ch. 15.")
    titled_outside = sum(_titled_before(runs))
    if _piece_in_parts(next((run for run in runs if _numbered(run)), [])):
        titled_outside += sum(_titled_before(runs[::-1]))
    # a book of titled pieces whose parts are numbered from one again under each title
    pieces_in_parts = _restarts(runs, letters) >= RESTARTS
    numbered_book = numbered_runs >= 3 and numbered_runs > titled_outside and not pieces_in_parts
    book_key = title_key(title) if title else None  # the book's own title set over a chapter's
    # a collection whose stories are numbered in sections from "I" under their titles (The Lady
    # with the Dog and Other Stories; The Awakening and Selected Short Stories, its novel's
    # chapters too): each section is a chapter named with its story ("THE BLACK MONK: II"), and
    # a title over no number heads a chapter of its own ("A DOCTOR'S VISIT")
    collection = sum(1 for run in runs if titled_sections(run, book_key)) >= 2
    story: str | None = None  # the collection's story whose sections come
    parted_by: str | None = None  # the title of a piece whose numbered parts come
    headed_by: list[str] | None = None  # the run of headings over the last section
    sections: list[tuple[str | None, list[Block]]] = [(None, [])]
    divisions: dict[int, str | None] = {}  # a section's book, part or volume, by its body's id
    division: str | None = None
    numbered_seen = sectioned = False
    listed_pages: set[str] = set()  # the names of contents pages set as headings alone
    # the heading of a contents page over a run of headings ("CONTENTS" over "CHAPTER I" and
    # "Page": Dracula's), by the body of the section the run heads
    contents_heading: dict[int, str] = {}
    last: Block | None = None  # the paragraph before a run of headings
    told_in: int | None = None  # the last part read of a story told in numbered parts
    first_part: str | None = None  # the heading of such a story's first part
    # a play told inside a chapter of a novel, between its chapters (The Little Colonel's Hero's
    # chapter XIII: its cast, "ACT I." to "ACT III."): its acts and its cast are lines of it
    acts, chapters = _divisions(runs, "act"), _divisions(runs, "chapter")
    acts_inside = numbered_book and bool(acts and chapters)
    acts_inside = acts_inside and min(chapters) < min(acts) and max(acts) < max(chapters)
    heading_runs = [item for item in items if isinstance(item, list)]
    # the run of headings after each (by identity: two runs may read alike, "ACT I.")
    run_after = {id(run): after for run, after in itertools.pairwise(heading_runs)}
    for item in items:
        if isinstance(item, Block):
            sections[-1][1].append(item)
            last = item
            continue
        following = run_after.get(id(item))
        if (
            acts_inside
            and numbered_seen
            and (_acts(item) or (_cast(item) and following is not None and _acts(following)))
        ):
            sections[-1][1].append(Block("text", "* * *"))
            sections[-1][1].extend(Block("text", text) for text in item)
            continue
        if signed(last, item):
            # a letter's signature under its valediction ("Yours ever, &c.," then "C. VERNON"),
            # set right over the next heading ("CONCLUSION"): the letter's last line
            sections[-1][1].append(Block("text", item[0]))
            item = item[1:]
        last = None
        part = None if numbered_book else part_number(item[-1])
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
        if sectioned and all(SECTION_NUMBER.match(text) for text in item):
            sections[-1][1].append(Block("text", "* * *"))  # "II." inside "ADVENTURE I. ..."
            continue
        bylined = any(BYLINE.match(text) for text in item[1:])  # another work, appended
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
            (i for i, text in enumerate(item) if BYLINE.match(text) and len(text.split()) > 1),
            default=None,
        )
        rest = item[byline + 1 :] if byline is not None else []
        if len(sections) == 1 and rest and not all(title_key(t) in (book_key or "") for t in rest):
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
            (k for k in range(len(item) - 1, 1, -1) if title_key(" ".join(item[:k])) == book_key),
            None,
        )
        if book_key and wrapped_title and any(not BYLINE.match(t) for t in item[wrapped_title:]):
            # so is the book's title set over it on two lines or more (The 'Mind the Paint'
            # Girl's HTML: "THE “MIND THE PAINT”<br>GIRL" over "THE FIRST ACT"), but not over
            # bylines alone: a title page (Tristram Shandy's HTML, "THE LIFE AND OPINIONS OF<br
            # />TRISTRAM SHANDY,<br />GENTLEMAN." over "By Laurence Sterne")
            item = item[wrapped_title:]
        after = 1 + max((i for i, t in enumerate(item) if CONTENTS.match(t.strip())), default=-1)
        head = [t for t in item[:after] if not _book_title(t, book_key)]
        tail = [
            t
            for at, t in enumerate(item[after:], after)
            if not _book_title(t, book_key, last=at == len(item) - 1)
        ] or item[after:]
        kept = head + tail
        if book_key and any(not BYLINE.match(t) for t in kept):
            item = kept
        # a contents page set as headings (three numbered ones or more, nothing between them)
        # heads no chapter: a titled section after it is one of its own (Moby-Dick's
        # "ETYMOLOGY.", after "CHAPTER 1. Loomings." to "CHAPTER 135. ..." listed)
        # a play's first scene headed under its act ("ACT I" over "SCENE I. Elsinore. A
        # platform before the Castle.": Hamlet's HTML titled the act after it) is the act's
        # first line, as the plain text sets it and as the act's other scenes open
        scene_at = next(
            (
                at
                for at, text in enumerate(item)
                if _SCENE.match(text.strip()) and any(_ACT_TITLE.match(t) for t in item[:at])
            ),
            None,
        )
        item, scene_lines = (item[:scene_at], item[scene_at:]) if scene_at else (item, [])
        listing = sum(1 for text in item if CHAPTER_NUMBER.match(text)) >= 3
        page_heading = None
        numbered_seen = numbered_seen or (_numbered(item) and not listing)
        sectioned = sections_within(item)
        division = run_division(item) or division
        name = run_title(item)
        if only_listed(item):  # "CHAPTER 1. Loomings … CHAPTER 135. The Chase.—Third Day"
            name = f"{next(t for t in item if CHAPTER_NUMBER.match(t))} … {item[-1]}"
            listed_pages.add(name)
        elif any(CONTENTS.match(text.strip()) for text in item[:-1]):
            page_heading = next(t for t in item if CONTENTS.match(t.strip()))
        if collection:
            number = item[-1].strip().rstrip(".")
            if titled_sections(item, book_key):
                story = run_title(item[:-1])  # "THE BLACK MONK" over its section "I"
                name = f"{story}: {number}"
            elif story and all(SECTION_NUMBER.match(text.strip()) for text in item):
                name = f"{story}: {number}"
            else:
                story = None
        if not pieces_in_parts or not SECTION_NUMBER.match(item[0].strip()):
            parted_by = None
        elif not (collection and story):  # "I." (or "I." over its title: "Andante cantabile.")
            if numeral(item[0].strip().rstrip(".")) == 1 and _untold(sections[-1], headed_by):
                # a title over no prose (an epigraph), then its piece's first part: the parts
                # are the piece's, named with it, the epigraph the first part's opening
                parted, opening = sections.pop()
                sections.append((f"{parted}: {name}", opening))
                divisions[id(opening)] = division
                parted_by = parted
                continue
            if parted_by:
                name = f"{parted_by}: {name}"
        scene_opening = [Block("text", text) for text in scene_lines]
        sections.append((name, scene_opening + ([Block("text", first_part)] if first_part else [])))
        divisions[id(sections[-1][1])] = division
        if page_heading:
            contents_heading[id(sections[-1][1])] = page_heading
        headed_by = item
    headed = [section for section in sections if section[0] is not None]
    found = Book(title, [])
    if not headed:  # no headings: the whole text is one chapter
        body = [b for b in sections[0][1] if not CREDIT.match(b.text)]
        chapter = _chapter("Text", body)
        prose = chapter.is_story() and any(is_prose(b) for b in body)  # not a file listing
        found.chapters = [chapter] if prose else []
        return found
    leading = sections[0][1]
    opening = _opening(leading, headed[0][0]) or _prologue(leading)
    if opening is not None:
        found.chapters.append(opening)
    elif words := prose_words(leading) + verse_words(leading):  # said, never dropped unseen
        found.dropped.append(f"{words} words before the first heading (front matter)")
    back = False
    contents_open = False  # a contents page was left out, and nothing since but its listing
    for index, (name, body) in enumerate(headed):
        assert name is not None
        # its division, looked up before `body` is trimmed into another list (Don Quixote's
        # "CHAPTER LII", the book's title "DON QUIXOTE" set under it, lost its "VOLUME I")
        its_division = divisions.get(id(body))
        page = contents_heading.get(id(body))  # a contents page's heading over it
        if (
            book_key
            and index + 1 < len(headed)
            and len(body) > 1
            and body[-1].kind == "text"
            and title_key(body[-1].text) == book_key
            and not any(char.islower() for char in body[-1].text)
        ):
            # the book's title in capitals set again over the next chapter's heading, blank
            # lines between them: no paragraph of this chapter (The Scarlet Letter's
            # scrlt11.txt: "THE SCARLET LETTER" over "I" / "THE PRISON DOOR" had been the last
            # paragraph of its introductory "The Custom-House")
            body = body[:-1]
        plain = name.strip().rstrip(".:")
        last = plain.split(": ")[-1]
        if (
            CONTENTS.match(plain)
            or CONTENTS.match(last)
            or name in listed_pages
            or (page is not None and not any(is_prose(b) for b in body))
        ):  # a contents page; under its heading, a chapter's heading with no prose its line
            prose = prose_words(body)  # said, never dropped unseen
            # named by its own heading, not by the last line it lists (Don Quixote's second
            # contents page, "CONTENTS" over "Part II." and its 74 chapters, was "CHAPTER
            # LXXIV: OF HOW DON QUIXOTE FELL SICK, ... (contents)"; Dracula's "CHAPTER I: Page")
            own = CONTENTS.match(plain) or CONTENTS.match(last)
            if own and page is not None and page not in name.split(": "):
                # a contents page whose listing runs into another's heading, in one run of
                # headings, is said too (Huckleberry Finn's 76-0.txt: "CONTENTS." over its
                # chapters' lines, then "ILLUSTRATIONS.", was said as "ILLUSTRATIONS" alone)
                found.dropped.append(f"{page} (contents)")
            named = name if own else page or name
            found.dropped.append(
                f"{named} (contents" + (f"; {prose} words of prose)" if prose else ")")
            )
            contents_open = True
            continue
        if contents_open and _listing_goes_on(plain, body):
            continue  # a line of the contents page left out, set as a heading
        contents_open = False
        if page:
            # a contents page whose listing runs into the next section's heading, prose under
            # it (Don Quixote's first, over its translator's preface), is left out all the
            # same: said, never dropped unseen
            found.dropped.append(f"{page} (contents)")
        if FRONT.match(plain) or FRONT.match(last) or (not found.chapters and _YEAR.match(last)):
            # a copyright line over the story's first part, told before any heading; a title
            # page's imprint ending in its year, before any chapter (Jack Sheppard's HTML:
            # "Internationale Bibliothek G M B H Berlin", "1922", over an epigraph)
            following = headed[index + 1][0] if index + 1 < len(headed) else None
            opening = _opening(body, following)
            if opening is None and following is None and prose_words(body) >= PROLOGUE_WORDS:
                # the last heading, over a story told under no heading of its own (Daddy-Long-
                # Legs under "Copyright 1912 by The Century Company"): the story, from its prose
                opening = _from_first_prose("Text", body)
            if opening is None and (TITLE_PAGE_LINE.match(plain) or TITLE_PAGE_LINE.match(last)):
                # a title page's line names no section: prose under it is told under no heading,
                # as before the first one (The Art of War's "First Published in 1910" over
                # Giles's preface and introduction, 13,302 words dropped as its front matter)
                opening = _prologue(body)
            if opening is None:
                found.dropped.append(_front_matter(name, body))
            else:
                found.chapters.append(opening)
            continue
        if CAST.match(plain) or CAST.match(last):
            chapter = _chapter(name, body)
            if chapter.paragraphs:
                found.reference.append(chapter)
            continue
        if (BACK.match(plain) or BACK.match(last)) and not found.chapters:
            # a transcriber's note above the story (Candide's HTML) is front matter
            found.dropped.append(_front_matter(name, body))
            continue
        if (
            BACK.match(plain)
            or BACK.match(last)
            # or what a run of headings opens with, over the next ones (The Little Colonel's
            # Hero's HTML: "THE END." over its publisher's "Selections from ... THE BLUE BONNET
            # SERIES", which with the ten series after it had been eleven chapters)
            or (BACK.match(plain.split(": ")[0]) and not CHAPTER_NUMBER.match(last))
        ):
            back = True
        elif back and CHAPTER_NUMBER.match(plain):
            back = False  # a numbered chapter after a note: story again
        chapter = _chapter(name, body)
        if back:
            if chapter.paragraphs:
                found.reference.append(chapter)
            continue
        if in_verse(body):
            # a canto or a poem of a book that has prose too (The Song of Hiawatha's
            # introductory note): its stanzas are its paragraphs, as a book in verse has
            chapter = _chapter(name, [part for block in body for part in as_prose(block)])
        elif not any(is_prose(b) for b in body) and not (
            numbered_book and found.chapters and _short_chapter(plain, body)
        ):
            # a title page set again inside the book, its byline under its heading (Don
            # Quixote's "Volume II." and "Complete" over "by Miguel de Cervantes")
            title_page = any(BYLINE.match(b.text.strip()) for b in body)
            found.dropped.append(f"{name} ({'title page' if title_page else 'no prose'})")
            continue
        if (
            numbered_book
            and ENDING.match(plain)
            and not any(CHAPTER_NUMBER.match(chapter.title) for chapter in found.chapters)
        ):
            # a postscript before the first numbered chapter ends a notice of the author, not
            # the story (Persuasion's EPUB, whose notice has no heading of its own)
            found.dropped.append(f"{name} (front matter: an ending before the first chapter)")
            continue
        if "project gutenberg" in " ".join(b.text for b in body[:3]).casefold():
            found.dropped.append(f"{name} (licence)")
            continue
        found.chapters.append(chapter)
        divisions[id(chapter)] = its_division
    if len(found.chapters) > 1 and _title_page(found.chapters[0], title):
        found.dropped.append(f"{found.chapters.pop(0).title} (title page)")
    if found.chapters:
        _without_end_word(found.chapters[-1])
    closing = [_without_closing_lines(chapter) for chapter in found.chapters]
    if lines := [line for taken in closing for line in taken]:
        shown = ", ".join(f"“{line}”" for line in list(dict.fromkeys(lines))[:2])
        more = f" and {len(lines) - 2} more" if len(lines) > 2 else ""
        ends = sum(1 for taken in closing if taken)
        what = "a line" if len(lines) == 1 else "lines"
        where = "a chapter" if ends == 1 else f"{ends} chapters"
        found.dropped.append(f"{shown}{more} ({what} closing {where})")
    if found.chapters and (note := _closing_note(found.chapters[-1])):
        found.reference.append(note)
    _named_by_division(found.chapters, divisions)
    return found


def _listing_goes_on(title: str, body: list[Block]) -> bool:
    """Whether a section after a contents page left out is more of that page: no prose and no
    verse under it, and a division or a chapter named in its lines (Les Misérables' 135-0.txt
    sets three blank lines between its volumes' listings, which read "VOLUME II.--COSETTE" and
    the like as headings: thirteen sections "(no prose)", named after the listing's lines). A
    title page or an epigraph under a heading of its own names none, and is said as it is."""
    if any(is_prose(block) for block in body) or in_verse(body):
        return False
    if FRONT.match(title) or BACK.match(title) or CAST.match(title):
        return False
    lines = [line for block in body for line in block.lines or (block.text,)]
    return any(CHAPTER_NUMBER.match(line.strip()) for line in lines)


def _front_matter(name: str, body: list[Block]) -> str:
    """What the report says of a front matter's section left out: its heading, and the words of
    prose and verse under it, if any (said, never dropped unseen: The Art of War's "First
    Published in 1910 (front matter)" hid a preface and an introduction)."""
    words = prose_words(body) + verse_words(body)
    return f"{name} (front matter; {words} words)" if words else f"{name} (front matter)"


# a word that ends the book, set as its last paragraph, as "THE END" set as a heading does
_END_WORD = re.compile(r"^(?:the )?(?:end|finis)\.?$", re.IGNORECASE)


def _without_end_word(chapter: Chapter) -> None:
    """The last chapter without the word that ends the book as its last paragraph ("FINIS",
    Emma's in every edition: "THE END" set apart is a heading, and ends the story so); the word
    inside the story, before more of it, stays (Tristram Shandy's "Finis." to Trim's sermon)."""
    if len(chapter.paragraphs) > 1 and _END_WORD.match(chapter.paragraphs[-1].strip()):
        _take_last_paragraph(chapter)


def _take_last_paragraph(chapter: Chapter) -> str:
    """Take the chapter's last paragraph out of it (a scene it leaves empty goes with it)."""
    scene = next(scene for scene in reversed(chapter.scenes) if scene)
    paragraph = scene.pop()
    while len(chapter.scenes) > 1 and not chapter.scenes[-1]:
        chapter.scenes.pop()
    return paragraph


CLOSING_LINE_WORDS = 12  # a division's closing line is this short


def _without_closing_lines(chapter: Chapter) -> list[str]:
    """The chapter without the lines set after its story that close a division (Paradise
    Lost's plain text ended every book with "THE END OF THE FIRST BOOK.", A Tale of Two Cities
    its first two with "The end of the first book.", as paragraphs of the story; the HTML of
    the first sets them as headings, never story). Returns the lines taken out."""
    taken: list[str] = []
    while len(chapter.paragraphs) > 1:
        line = " ".join(chapter.paragraphs[-1].split())
        closing = DIVISION_END.match(line)
        if len(line.split()) > CLOSING_LINE_WORDS or not closing:
            break
        taken.append(_take_last_paragraph(chapter))
    return taken[::-1]


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
    chapter = STRONG.match(title) or ONLY_NUMBER.match(title)  # "Chapter 2.XL", "XL."
    if not chapter or DIVISION_HEAD.match(title):
        return False  # nor a contents page's "II. What became of Candide among the" (wrapped)
    return any(
        block.kind == "text"
        and len(block.text.split()) >= SHORT_CHAPTER_WORDS
        and SENTENCE_END.search(block.text) is not None
        and not shouted(block.text)
        and not any(
            PAGE_REFERENCE.search(line) or line.rstrip()[-1:].isdigit()
            for line in block.lines or (block.text,)
        )
        for block in body
    )


SHORT_CHAPTER_WORDS = 5  # a sentence of a short chapter has this many words at least


# a chapter's number at the start of its title: "CHAPTER I. MR. SHERLOCK HOLMES", "IV. THE
# RIVER BANK", "Chapter 12"; not a title's first word ("CIVIL WAR", "DID YOU")
_NUMBER_LABEL = re.compile(
    rf"^(?:(?:{DIVISIONS})\s+([\dIVXLCDM]+|(?i:{NUMBER_WORDS}))\b|([\dIVXLCDM]+)(?:[.:]|$))"
)


def _number_label(title: str) -> str | None:
    """The number a chapter's title opens with, with its division word ("chapter i"), or None
    (a title with a name only, a number alone set apart by none: each its own)."""
    found = _NUMBER_LABEL.match(title.strip())
    if found is None:
        return None
    return " ".join(found.group(0).casefold().rstrip(".:").split())


def _named_by_division(chapters: list[Chapter], divisions: dict[int, str | None]) -> None:
    """Chapters whose titles come again in the book ("CHAPTER I" of each of War and Peace's
    fifteen books: seventeen alike) are named with their division ("BOOK TWO: 1805: CHAPTER
    I"), so a reader and a source can tell them apart, and so is every other chapter of those
    divisions (Notes from the Underground's "XI", the one number Part II has not: "PART I:
    Underground: XI" among "PART I: Underground: X" and the rest); the chapters of other
    divisions, with titles of their own, stay as they are."""
    seen = Counter(chapter.title for chapter in chapters)
    labels = {id(chapter): _number_label(chapter.title) for chapter in chapters}
    numbers = Counter(label for label in labels.values() if label is not None)
    named = {
        divisions.get(id(chapter))
        for chapter in chapters
        if seen[chapter.title] > 1 or numbers[labels[id(chapter)]] > 1
    }
    for chapter in chapters:
        division = divisions.get(id(chapter))
        if not division or chapter.title.startswith(division):
            continue
        # a number alone says nothing without its division ("II" of Crime and Punishment's
        # epilogue, after "PART VI: CHAPTER VIII")
        if division in named or SECTION_NUMBER.match(chapter.title.strip()):
            chapter.title = f"{division}: {chapter.title}"


# Prose before the first heading, or under a front matter's heading, when the first heading is
# the story's second part ("II", "Chapter 2") and this much prose or more, is the first part,
# told before any heading of its own (Metamorphosis's part I in an old edition, under its
# copyright line), not front matter; a dedication or an etymology before "Chapter 1" stays out.
OPENING_WORDS = 1000
_SECOND = re.compile(r"^(?:(?:chapter|part|book)\s+)?(?:ii|2|two)\b(?![\w'’])", re.IGNORECASE)


def _opening(blocks: list[Block], first_heading: str | None) -> Chapter | None:
    """The chapter the text before the first heading is when that heading is the second part's
    and the text is story (`OPENING_WORDS` of prose or more), titled "I" (or "1" before "2");
    None when it is front matter, which is dropped."""
    if first_heading is None or _SECOND.match(first_heading.strip()) is None:
        return None
    if prose_words(blocks) < OPENING_WORDS:
        return None
    title = "1" if re.search(r"\b2\b", first_heading) else "I"
    return _from_first_prose(title, blocks)


def _prologue(blocks: list[Block]) -> Chapter | None:
    """The text before the first heading, under no heading at all, when it is story told before
    the first chapter (`PROLOGUE_WORDS` of prose or more: The Turn of the Screw's frame, under
    the book's title), as a chapter "Prologue"; None for a title page, a dedication or credits."""
    if prose_words(blocks) < PROLOGUE_WORDS:
        return None
    return _from_first_prose("Prologue", blocks)


def _from_first_prose(title: str, blocks: list[Block]) -> Chapter:
    """A chapter of `blocks` from their first paragraph of prose: the title, author and credits
    above it stay out."""
    return _chapter(title, blocks[blocks.index(story_prose(blocks)[0]) :])


PROLOGUE_WORDS = 2000  # story told under no heading before the first chapter is this long


TITLE_PAGE_WORDS = 500  # a book's title over more than this is a story told under it


def _title_page(chapter: Chapter, book_title: str | None) -> bool:
    """Whether a first chapter headed by the book's own title ("TREASURE ISLAND" over a
    dedication and a poem to the reader, an epigraph), or by a byline or a translator's credit
    alone, is its title page, not story."""
    if not book_title or chapter.words > TITLE_PAGE_WORDS:
        return False
    if BYLINE.match(chapter.title) and len(chapter.title.split()) > 2:
        # headed by a credit alone, the book's title and author dropped from over it (Madame
        # Bovary's HTML: "Translated from the French by Eleanor Marx-Aveling" over a dedication)
        return True
    parts = chapter.title.split(": ")
    if _named(parts) or _numbered(parts):  # "The Island of Doctor Moreau: INTRODUCTION."
        return False
    book = title_key(book_title)
    # "THE MODERN LIBRARY: OF THE WORLD'S BEST BOOKS: CANDIDE BY VOLTAIRE" heads one too
    headings = [title_key(chapter.title), *(title_key(part) for part in parts[1:])]
    return any(h and (h.startswith(book) or book.startswith(h)) for h in headings)


# a play's act as a chapter's title: "ACT I", "Act II", "ACT I. SCENE I", "FIRST ACT", "THE
# SECOND ACT"
_ACT_TITLE = re.compile(
    rf"^(?:the\s+)?(?:(?:{ORDINALS})\s+act\b|act\s+(?:[IVXLC]+|\d{{1,2}}|{NUMBER_WORDS})\b)", re.I
)
# a numbered scene's opening line in an act: "SCENE II. A Camp near Forres.", "Scene 3"
_SCENE = re.compile(r"^(?:SCENE|Scene)\s+(?:[IVXLC]+|\d{1,2})\b\.?")


def _chapter(name: str, body: list[Block]) -> Chapter:
    """A chapter of `body`: its breaks part its scenes, and so do an act's numbered scenes
    (Macbeth's "SCENE II. A Camp near Forres.", the first line of its scene)."""
    chapter = Chapter(name)
    act = _ACT_TITLE.match(name.strip()) is not None
    for block in body:
        if block.text == "* * *" or BREAK.match(block.text):
            chapter.scene_break()
        elif block.text:
            if act and _SCENE.match(block.text):
                chapter.scene_break()
            chapter.add(with_its_lines(block))
    return chapter
