"""Where a plain-text book's headings are (`text_headings`): chapters' numbers and the titles
under them, named sections, titles a contents page lists, bare titles in capitals, centred
titles, another work's title over its byline; not a page's running head, a numbered list, a
poem's numbered stanzas, a play's list of its acts, a signature over its place and date, a
place nor a list of persons ("CLINTON, MASS., U.S.A.", "BEGGAR, PLAYER."). Each heading with
the lines its title runs on to."""

from __future__ import annotations

import difflib
import itertools
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from terrarium_dagster.corpus.importers.headings import (
    ARGUMENT,
    BARE_INDENT,
    BARE_WORDS,
    BYLINE,
    CAST,
    CHAPTER_NUMBER,
    CONTENTS,
    FIRST_NUMBER,
    LISTED_WORDS,
    NAMED,
    NUMBER_AND_TITLE,
    NUMBERED,
    ONLY_NUMBER,
    ORDINAL_GROUP,
    PAGE_COLUMN,
    SECTION_NUMBER,
    SMALL_WORDS,
    STRONG,
    bare_capitals,
    decorated,
    dictionary_letters,
    lists_divisions,
    numeral,
    shouted,
    title_key,
    undecorated,
    unfinished,
    unstopped,
)
from terrarium_dagster.corpus.importers.marks import TITLE_BRACKET_NOTE, plain_title, unmarked
from terrarium_dagster.corpus.importers.model import PROSE_WORDS
from terrarium_dagster.corpus.importers.prose import STANZA_WORDS, VERSE_LINE_CHARS

# a rule across the page: dashes, equals signs, asterisks or underscores, unspaced
RULE = re.compile(r"^\s*(?:-{3,}|={3,}|\*{3,}|_{3,})\s*$")


def _apart(raw: str, *, by_rule: bool = True) -> bool:
    """Whether a line sets the one next to it apart: a blank line, or a rule (The Art of War's
    "-----" right over "INTRODUCTION", or under "Preface to the Project Gutenberg Etext")."""
    return not raw.strip() or (by_rule and RULE.match(raw) is not None)


def isolated(lines: list[str], index: int) -> bool:
    """Whether the line at `index` stands alone: a blank line or a rule over and under it. A
    rule sets apart words, not figures alone: under "364" it is a sum's (Through the
    Looking-Glass: "365", "1", "____", "364", "___")."""
    words = any(char.isalpha() for char in lines[index])
    before = index == 0 or _apart(lines[index - 1], by_rule=words)
    after = index + 1 >= len(lines) or _apart(lines[index + 1], by_rule=words)
    return before and after


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
DECORATED_NUMBERS = 3  # a book numbering its parts in decoration ("— I —") has this many at least
PAGE_WORDS = 500  # a printed page holds fewer words than this; a part or a chapter more
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
        and isolated(lines, index)
        and (bare_capitals(raw.strip()) or _title_cased(raw.strip()))
        and not _introduced(lines, index)
    ]
    picked = _spaced(lines, candidates) if len(candidates) >= CENTRED_TITLES else []
    return picked if len(picked) >= CENTRED_TITLES else []


def _introduced(lines: list[str], index: int) -> bool:
    """Whether the line is quoted by the prose before it ("The door said:" above "CLOSED")."""
    before = next((line.strip() for line in reversed(lines[:index]) if not _apart(line)), "")
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
        if not CONTENTS.match(raw.strip()):
            continue
        blanks = 0
        previous = ""
        entries: list[tuple[bool, int]] = []  # each entry: numbered?, the blank lines over it
        restarted = False  # the page numbers its chapters from one again under each part
        for below in range(index + 1, min(index + CONTENTS_LINES, len(lines))):
            line = lines[below]
            if not line.strip():
                blanks += 1
                previous = ""
                if blanks >= 3 and titles:
                    break
                continue
            over, blanks = blanks, 0
            if (
                len(line.split()) > 12
                and titles
                and not shouted(line.strip())
                and not CHAPTER_NUMBER.match(line.strip())
            ):  # prose: the contents page has ended (a title in capitals is none, nor a long
                # one after its chapter's number: Moby-Dick's "CHAPTER 56. Of the Less ...")
                break
            if PAGE_COLUMN.match(line.strip()):  # "Page" over the pages, under each part
                page.add(below)
                continue
            entry = re.sub(r"^\s*(?:[IVXLCDM]+|\d+)[.:]?\s+", "", line.strip())
            entry = re.sub(r"\s*(?:\.\s*){2,}.*$|\s+\d+\.?$", "", entry)  # dot leaders, pages
            if entry:
                key = title_key(entry)
                if key == previous:  # a line set twice, right under itself (Grimms' Fairy
                    # Tales' "THE JUNIPER-TREE" over "the juniper-tree."): one entry
                    page.add(below)
                    continue
                numbered = _numbered_entry(line.strip())
                if key in titles:
                    restarted = _restarts_numbers(line.strip(), over, entries, restarted)
                    if not restarted:
                        break  # a title again: the first chapter's heading, past the page
                    page.add(below)
                    entries.append((numbered, over))
                    previous = key
                    continue
                entries.append((numbered, over))
                previous = key
                page.add(below)
                titles.add(key)
                # "INTRODUCTORY.     THE CUSTOM-HOUSE": the title in its column, too
                titles.add(title_key(re.split(r"\s{3,}", entry)[-1]))
        break
    return titles, page


def _numbered_entry(text: str) -> bool:
    """Whether a contents line lists a chapter by its number ("XI", "CHAPTER 3. The Pool")."""
    return bool(ONLY_NUMBER.match(text) or CHAPTER_NUMBER.match(text))


def _restarts_numbers(
    text: str, over: int, entries: list[tuple[bool, int]], restarted: bool
) -> bool:
    """Whether a contents line listed already (`text`, `over` blank lines under the entry
    before) is a chapter's number again under the next part's title, on the page: Madame
    Bovary's "TROISIÈME PARTIE" over "I" to "XI", as "DEUXIÈME PARTIE" over "I" to "XV" (the
    page had ended at the second "I", and the third part, unlisted, ran on in the second's
    last chapter). Its numbering starts again at one right under a new title that came right
    under a numbered entry, or goes on once it has; never across the blank lines that end a
    page, nor a title listed again (the first part's heading, past the page)."""
    if not _numbered_entry(text) or over > 1:
        return False
    if restarted:
        return True
    return (
        FIRST_NUMBER.match(text) is not None
        and len(entries) >= 2
        and not entries[-1][0]  # the part's title, listed once
        and entries[-1][1] <= 1
        and entries[-2][0]  # under the last chapter of the part before
    )


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


def subtitle_lines(lines: list[str], below: int) -> list[int]:
    """The lines of a title starting at `below`: that line, or up to three lines in capitals
    ("WHICH TREATS OF THE CHARACTER AND PURSUITS OF THE FAMOUS GENTLEMAN DON" / "QUIXOTE OF LA
    MANCHA"), then a blank line."""
    taken = [below]
    while taken[-1] + 1 < len(lines) and lines[taken[-1] + 1].strip():
        taken.append(taken[-1] + 1)
        if len(taken) > 3:
            return []
    if len(taken) > 1 and not all(shouted(lines[i].strip()) for i in taken):
        return []
    return taken


def _subtitle(lines: list[str], index: int) -> int | None:
    """The index of a chapter's title line under its heading ("CHAPTER I", then "The Salt
    Road"): the next line with text, at most two blank lines below, short, without a final
    period (unless in capitals), and followed by a blank line; or a title in capitals of up to
    three lines. A line without a letter is no title."""
    for below in range(index + 1, min(index + 4, len(lines))):
        text = lines[below].strip()
        if not text:
            continue
        if STRONG.match(text) or NAMED.match(text):
            return None  # "VOLUME I." over "CHAPTER I.": two headings
        if not any(c.isalpha() for c in text):
            return None  # a rule or figures ("364" over "___", a sum worked in the story)
        if ARGUMENT.match(plain_title(text)):
            # the label of the book's summary, its title under it (the Iliad's "BOOK I.", then
            # "ARGUMENT.(40)", then "THE CONTENTION OF ACHILLES AND AGAMEMNON."): that title
            return _subtitle(lines, below)
        taken = subtitle_lines(lines, below)
        if len(taken) > 1:
            words = sum(len(lines[i].split()) for i in taken)
            return below if words <= 40 else None
        if not taken:
            return None
        bare = text.rstrip("\"”’'")
        longest = 40 if shouted(text) else 12
        if len(text.split()) > longest or bare.endswith((":", ";", ",", "—", "-", "!", "?")):
            return None  # a sentence, or a line introducing what follows
        if not bare.endswith(".") or shouted(text):  # "THE EVE OF THE WAR." is a title
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
        and STRONG.match(line)
        and not _GROUPING.match(line)
        and _GROUPING.match(above)
        and STRONG.match(above)
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
        and NAMED.match(line)
        and above
        and bare_capitals(lines[index - 1])
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
        if (match := NUMBER_AND_TITLE.match(lines[index].strip()))
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
        return " ".join(title_key(lines[index]).split()[:2])

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


def _numbered_openings(lines: list[str]) -> list[tuple[int, int]]:
    """Every paragraph that opens with a number and words, a heading or not: (its first line,
    its number)."""
    return [
        (index, value)
        for index, line in enumerate(lines)
        if (index == 0 or not lines[index - 1].strip())
        and (match := _ITEM.match(line.strip()))
        and (value := numeral(match.group(1))) is not None
    ]


def _list_items(lines: list[str], strong: dict[int, Any]) -> list[int]:
    """The lines among `strong` that are a number and words next to a paragraph opening with the
    next number (or the one before) fewer than `PROSE_WORDS` words away: a numbered list in
    the story (a letter's "I. You are tall." / "II.  You are rich." / "III.  You hate girls.",
    Daddy-Long-Legs), not chapters, which are never that short. A number alone over its title
    ("IV", then "THE RIVER") is a heading of another shape, left as it is."""
    numbered = _numbered_openings(lines)
    items: set[int] = set()
    for (here, number), (there, following) in itertools.pairwise(numbered):
        between = sum(len(lines[i].split()) for i in range(here + 1, there))
        if following == number + 1 and between < PROSE_WORDS:
            items.update((here, there))
    return sorted(items & set(strong))


def _numbered_sentences(lines: list[str], strong: dict[int, Any]) -> list[int]:
    """The lines among `strong` that are a number and a sentence right after (or before) a
    paragraph of prose numbered one less (or one more), itself no heading: the next of a book's
    numbered paragraphs, however far away (The Art of War's "37.  Such is the art of warfare.",
    the last sentence of chapter VII after "36.  When you surround an army, leave an outlet
    free." and a long commentary, dropped as a heading over no prose). A chapter's numbered
    heading has numbered headings, or no numbered paragraph, beside it."""
    numbered = _numbered_openings(lines)

    def prose(index: int) -> bool:  # a numbered paragraph of the story, no heading's title
        paragraph = " ".join(line.strip() for line in itertools.takewhile(str.strip, lines[index:]))
        return index not in strong and (
            len(paragraph.split()) >= PROSE_WORDS or not _title_like(paragraph)
        )

    sentences: set[int] = set()
    for (here, number), (there, following) in itertools.pairwise(numbered):
        if following != number + 1:
            continue
        if there in strong and prose(here) and _sentence(lines[there]):
            sentences.add(there)
        if here in strong and prose(there) and _sentence(lines[here]):
            sentences.add(here)
    return sorted(sentences)


def _sentence(line: str) -> bool:
    """Whether a numbered line ends as a sentence does, not in capitals as a title is
    ("37.  Such is the art of warfare.", not "XII.  THE ATTACK BY FIRE")."""
    text = line.strip()
    return re.search(r"[.!?][\"”’']?$", text) is not None and not shouted(text)


def _verse_below(lines: list[str], index: int) -> bool:
    """Whether the paragraph after the line `index` is verse set in from the margin: every line
    indented and no longer than verse runs (a stanza), where prose runs from the margin. A
    stanza's lines may be long (Jack Sheppard's ballads: "Jolly nose! there are fools who say
    drink hurts the sight;"); `_stanza_numbers` also asks for the next number close below."""
    below = list(
        itertools.takewhile(
            lambda line: bool(line.strip()),
            itertools.dropwhile(lambda line: not line.strip(), lines[index + 1 :]),
        )
    )
    return bool(below) and all(
        line[:1].isspace() and len(line.strip()) < VERSE_LINE_CHARS for line in below
    )


def _stanza_numbers(lines: list[str], strong: dict[int, Any]) -> list[int]:
    """The numbers alone among `strong` ("I.", "II.") that each stand over a stanza, set in,
    the next (or the same number again) fewer than `STANZA_WORDS` words on: a poem's numbered
    stanzas inside a chapter (Pamela's "VERSES ON MY GOING AWAY": "I." over four lines, "II."
    ...; a psalm's stanzas and her version of each, "III." then "III."), not its chapters."""
    numbers = [
        (index, value)
        for index in sorted(strong)
        if SECTION_NUMBER.match(lines[index].strip())
        and (value := numeral(lines[index].strip().rstrip("."))) is not None
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
    match = NUMBER_AND_TITLE.match(line)  # never "12. The Salt Road": a stop is no space
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
    return sum(1 for w in words if w[0].islower() and w not in SMALL_WORDS) <= 3


@dataclass(frozen=True)
class _Heading:
    subtitle: int | None  # the line of its title under it ("CHAPTER I", then "The Salt Road")
    wrapped: tuple[int, ...] = ()  # the lines its own title runs on to
    titled: tuple[int, ...] = ()  # the subtitle's lines, when a title with a stop (`_stopped`)


def text_headings(lines: list[str]) -> dict[int, _Heading]:
    """Line index → the heading that starts there, for every heading line."""
    # a book that sets its numbers in decoration ("— I —" over "[ 1 ]": Ulysses' parts and
    # episodes) sets them all so: read as the numbers alone, and a number alone undecorated is a
    # line of its story (Ulysses' "I." written in the sand, Milly's letter signed "M")
    set_off = {i for i, raw in enumerate(lines) if decorated(raw) and isolated(lines, i)}
    words = sum(len(raw.split()) for raw in lines)
    if DECORATED_NUMBERS <= len(set_off) <= words / PAGE_WORDS:  # not a page's number "- 12 -"
        lines = [undecorated(raw) if index in set_off else raw for index, raw in enumerate(lines)]
    else:
        set_off = set()
    strong: dict[int, int | None] = {}
    wrapped: dict[int, tuple[int, ...]] = {}  # a heading's title wrapped onto the lines below
    named: dict[int, int | None] = {}
    bare: list[int] = []
    stopped_bare: list[int] = []  # bare titles with a stop, headings only where listed
    letters = dictionary_letters(
        [raw.strip() if isolated(lines, index) else "" for index, raw in enumerate(lines)]
    )
    for index, raw in enumerate(lines):
        line = raw.strip()
        if not line or lists_divisions(line):
            continue  # "ACT III Scene I. ... Scene II. ...": a contents page's listing
        if index in letters:
            named[index] = None  # a dictionary's letter, never a Roman number
            continue
        subtitle = _subtitle(lines, index)
        alone = isolated(lines, index) or (
            (index == 0 or not lines[index - 1].strip()) and subtitle is not None
        )
        if not alone and _under_grouping(lines, index):
            # "VOLUME II." and "CHAPTER XIX" on the lines right after it (an old Uncle Tom's
            # Cabin): two headings, the volume and its chapter
            strong[index - 1] = None
            alone = True
        if not alone and _under_title(lines, index):
            alone = True  # "BEOWULF" right over "PRELUDE OF THE FOUNDER OF THE DANISH HOUSE"
        if not alone and STRONG.match(line) and not ONLY_NUMBER.match(line):
            opens = index == 0 or not lines[index - 1].strip()
            if opens and (runs_on := _continuation(lines, index)):
                wrapped[index] = runs_on
                strong[index] = None
            continue
        if not alone:
            continue
        if re.match(r"^[A-Z]\.\s", line) and _signature(lines, index):
            continue  # "C. LOVAT FRASER." over "_Chelsea_," and "_February 1921_.": an initial
        if STRONG.match(line) or (
            NUMBERED.match(line) and _title_like(line) and _number_and_title(line)
        ):
            # "CHAPTER I" or "IV" alone take the title line under them; "IV. THE RIVER" has one.
            strong[index] = subtitle if ONLY_NUMBER.match(line) else None
            if (
                strong[index] is None
                and subtitle == index + 1
                and (shouted(line) or unfinished(line))
            ):
                # a title in capitals wrapped onto the line right under it (Gulliver's Travels:
                # "PART III.  A VOYAGE TO LAPUTA, BALNIBARBI, LUGGNAGG, GLUBBDUBDRIB, AND" over
                # "JAPAN.", left a paragraph of the story), or one whose line stops short of its
                # end (Andersen's Fairy Tales: "IV. A Moment of Head Importance--An Evening's
                # “Dramatic Readings”--A" over "Most Strange Journey")
                wrapped[index] = tuple(subtitle_lines(lines, subtitle))
        elif NAMED.match(unmarked(line)) or ORDINAL_GROUP.match(line):
            named[index] = None  # in italics too (The 'Mind the Paint' Girl's "_The Persons of
            # the Play_": its cast and the programme's advertisements were its first chapter)
        elif (
            isolated(lines, index)
            and bare_capitals(raw, LISTED_WORDS)
            and not _introduced(lines, index)
        ):
            bare.append(index)
        elif (
            isolated(lines, index)
            and raw.rstrip().endswith(".")
            and bare_capitals(unstopped(TITLE_BRACKET_NOTE.sub("", raw)), LISTED_WORDS)
            and not _introduced(lines, index)
        ):
            stopped_bare.append(index)  # "PORTSMOUTH BINNEN.": a heading if listed
    for index in (
        _running_heads(lines, strong)
        + _listed_together(lines, strong, wrapped)
        + _list_items(lines, strong)
        + _numbered_sentences(lines, strong)
        + _stanza_numbers(lines, strong)
    ):
        strong.pop(index, None)
    if set_off:
        for index in [i for i in strong if SECTION_NUMBER.match(lines[i].strip())]:
            if index not in set_off:
                strong.pop(index)
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
            and isolated(lines, i)
            and (_title_cased(lines[i].strip()) or bare_capitals(unstopped(lines[i])))
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
            and bare_capitals(unstopped(lines[i]))
            and not _listing(lines[i])
            and not _signature(lines, i)
            and not _in_cast(lines, i, [*strong, *named])
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
                for i in sorted({*bare, *stopped_bare, *before})
                if (
                    _listed(title_key(TITLE_BRACKET_NOTE.sub("", lines[i])), listed)
                    or i in sections
                )
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
                and isolated(lines, i)
                and (len(raw) - len(raw.lstrip()) <= BARE_INDENT or _centred(raw, middle))
                and len(raw.split()) <= LISTED_WORDS
                and _listed(title_key(raw), listed)
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
    later = Counter(title_key(lines[index]) for index in named.keys() - page)
    for index in page & named.keys():
        if later[title_key(lines[index])]:
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
    if not re.search(r"[.!?][\"”’']?$", text) or STRONG.match(text) or NAMED.match(text):
        return ()
    if ARGUMENT.match(plain_title(text)):
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
        i for i, sub in strong.items() if sub is None and ONLY_NUMBER.match(lines[i].strip())
    ]
    found = {i: taken for i in untitled if (taken := _stopped_title(lines, i))}
    return found if len(found) >= CENTRED_TITLES and len(found) * 2 > len(untitled) else {}


SIGNATURE_LINES = 2  # a signature's place and date take at most this many lines under it
SIGNATURE_WORDS = 4  # each of them at most this many words


def _signature(lines: list[str], index: int) -> bool:
    """Whether a name in capitals with a stop signs what is above it: under it a line or two
    standing alone, short, the last with a year, the first a place with a comma when there are
    two ("JOHN DRINKWATER." over "_London_," and "_Midsummer 1921_.", the end of an edition's
    introduction), not a title over the prose or the list it heads."""
    below: list[str] = []
    for at in range(index + 1, min(index + 6, len(lines))):
        line = lines[at].strip()
        if not line:
            continue
        if not isolated(lines, at) or len(line.split()) > SIGNATURE_WORDS:
            return False
        below.append(line)
        if re.search(r"(?<!\d)1\d{3}(?!\d)", line):  # its date
            return len(below) == 1 or below[0].endswith(",")
        if len(below) == SIGNATURE_LINES:
            return False
    return False


def _in_cast(lines: list[str], index: int, headings: list[int]) -> bool:
    """Whether the line at `index` is under a cast's heading, no other heading between: a part of
    the cast ("MEN." and "WOMEN." under "DRAMATIS PERSONAE."), not a section of its own."""
    above = max((h for h in headings if h < index), default=None)
    return above is not None and CAST.match(plain_title(lines[above]).rstrip(".:")) is not None


def _listing(raw: str) -> bool:
    """Whether a line is a list of a word or two a comma apart, not a title: a place as an
    imprint gives it ("CLINTON, MASS., U.S.A.", the printer's town under "PRINTED BY THE
    COLONIAL PRESS INC.,"), the persons on a play's stage ("BEGGAR, PLAYER.")."""
    parts = [part.strip() for part in raw.strip().removesuffix(".").split(",")]
    return len(parts) >= 2 and all(part and len(part.split()) <= 2 for part in parts)


def _prose_under(lines: list[str], index: int, stop: int) -> bool:
    """Whether the lines after `index` up to `stop` hold a paragraph of prose: `PROSE_WORDS`
    words or more, not in capitals."""
    paragraphs = itertools.groupby(lines[index + 1 : stop], key=lambda line: bool(line.strip()))
    return any(
        len(text.split()) >= PROSE_WORDS and not shouted(text)
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
        if any(STRONG.match(t) or BYLINE.match(t) for t in texts):
            continue
        byline = paragraphs[number + 1]
        first = lines[byline[0]].strip()
        if len(byline) > 2 or not BYLINE.match(first) or first != first.upper():
            continue
        name: tuple[int, ...] = ()
        if first.casefold() == "by" and len(byline) == 1 and number + 2 < len(paragraphs):
            name_lines = paragraphs[number + 2]
            if len(name_lines) == 1 and lines[name_lines[0]].strip().isupper():
                name = (name_lines[0],)
        found.append((title[0], tuple(title[1:]), byline[0], (*byline[1:], *name)))
    return found
