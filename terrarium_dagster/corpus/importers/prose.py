"""Prose or verse: whether a block is a paragraph of story (`is_prose`) or a stanza
(`is_verse`), whether a chapter with no prose is a poem (`in_verse`), a stanza read as prose
(`as_prose`), the words of story among blocks (`prose_words`, `verse_words`), and a paragraph's
text as its post keeps it (`with_its_lines`: a stanza's lines stay lines)."""

from __future__ import annotations

import itertools
import re

from terrarium_dagster.corpus.importers.gutenberg import CREDIT
from terrarium_dagster.corpus.importers.headings import (
    CHAPTER_NUMBER,
    PAGE_REFERENCE,
    SENTENCE_END,
    shouted,
)
from terrarium_dagster.corpus.importers.marks import NOTE_MARK, unmarked
from terrarium_dagster.corpus.importers.model import PROSE_WORDS, Block

# a part and its player in a play's first cast: "John Worthing, J.P.: Mr. George Alexander."
# (The Importance of Being Earnest, as played at the St. James's Theatre)
_PLAYER = re.compile(r":\s+(?:Mr|Mrs|Miss|Messrs|Mme|Mlle|Madame)\b")
PLAYER_WORDS = 8  # a cast's line (a part and its player) is about this long


def is_prose(block: Block) -> bool:
    """A paragraph of story: long enough, and not a list of short lines (a contents page, a
    list of illustrations) or a table."""
    if block.kind != "text" or len(block.text.split()) < PROSE_WORDS:
        return False
    if shouted(block.text):  # a title in capitals (a contents entry), never a story's prose
        return False
    if len(_PLAYER.findall(block.text)) * PLAYER_WORDS >= len(block.text.split()):
        return False  # a cast as first played, its lines run together
    lines = [line.strip() for line in block.lines if line.strip()]
    if len(lines) >= 3:
        short = sum(
            1
            for line in lines
            if (len(line) < 48 and not SENTENCE_END.search(line))
            or PAGE_REFERENCE.search(line)
            or CHAPTER_NUMBER.match(line)  # "XII. WHAT I SAW OF THE DESTRUCTION OF WEYBRIDGE."
            or _figures(line)  # a file listing: "-rw-rw-r--  1 1005  100  247438 Feb  4  2001 ..."
        )
        if short / len(lines) >= 0.6:
            return False
    return True


def is_verse(block: Block) -> bool:
    """Whether a block is a stanza or a verse paragraph: three lines or more, of four words or
    more on average, a quarter of them or more with a comma, a colon or a sentence's end in
    them (a contents page's lines have none), not in capitals. Only a book with no prose at all
    is read as verse (`read_book`): a poem inside a novel stays a poem beside its prose."""
    lines = [line.strip() for line in block.lines if line.strip()]
    if block.kind != "text" or len(lines) < 3 or shouted(block.text):
        return False
    if len(block.text.split()) < 4 * len(lines):
        return False
    marked = sum(1 for line in lines if re.search(r"[,;:.!?]", line) and not _figures(line))
    return marked * 4 >= len(lines)


VERSE_WORDS = 100  # a chapter with no prose is a poem when its stanzas have this many words


def in_verse(body: list[Block]) -> bool:
    """Whether a chapter is a poem: one with no paragraph of prose whose stanzas (`is_verse`)
    have `VERSE_WORDS` words or more, most of their lines not a contents page's ("IX. Hiawatha
    and the Pearl-Feather", "The Prison Door  . . . 47"); or one whose lines are mostly set as
    verse is (`set_as_verse`), whatever `is_prose` reads in them (Paradise Lost's verse
    paragraphs, whose lines mostly end in a stop)."""
    if _set_as_verse_mostly(body):
        return True
    if any(is_prose(block) for block in body):
        return False
    stanzas = [block for block in body if is_verse(block)]
    lines = [line.strip() for block in stanzas for line in block.lines if line.strip()]
    listed = sum(1 for line in lines if CHAPTER_NUMBER.match(line) or PAGE_REFERENCE.search(line))
    words = sum(len(block.text.split()) for block in stanzas)
    return words >= VERSE_WORDS and listed * 2 < len(lines)


# A verse paragraph longer than this many lines is read as paragraphs of about this many, each
# ending where a sentence does (Paradise Lost sets a whole book with hardly a blank line)
VERSE_LINES = 24


def as_prose(block: Block) -> list[Block]:
    """A stanza as a paragraph of one line (so `is_prose` reads it as prose) whose text keeps
    its lines (`with_its_lines`); a long verse paragraph parted at the first sentence end
    after `VERSE_LINES` lines; any other block as it is: a paragraph of prose wrapped as prose
    is (an argument in prose over a book of a poem) stays one."""
    if not _verse_lines(block) and (not is_verse(block) or is_prose(block)):
        return [block]
    parts: list[list[str]] = [[]]
    for line in (line.strip() for line in block.lines if line.strip()):
        parts[-1].append(line)
        if len(parts[-1]) >= VERSE_LINES and re.search(r"[.!?][\"”’')]*$", line):
            parts.append([])
    texts = ["\n".join(_line_text(line) for line in part) for part in parts if part]
    return [Block(block.kind, text, (text,)) for text in texts]


SET_AS_VERSE_LINES = 4  # a block this long shows how its lines are set
VERSE_SHARE = 0.75  # a chapter is a poem when this share of its words is set as verse


def _verse_lines(block: Block) -> bool:
    """Whether a paragraph's lines can be lines of verse, not of prose wrapped: two or more, of
    four words or more on average, none as long as prose wraps (`VERSE_LINE_CHARS`), not in
    capitals (a title page's lines)."""
    lines = [line.strip() for line in block.lines if line.strip()]
    return (
        block.kind == "text"
        and len(lines) >= 2
        and len(block.text.split()) >= 4 * len(lines)
        and all(len(line) <= VERSE_LINE_CHARS for line in lines)
        and not shouted(block.text)
    )


def set_as_verse(block: Block) -> bool:
    """Whether a block's lines are set as verse, each begun where the poet began it, not where
    prose wrapped: `SET_AS_VERSE_LINES` or more (`_verse_lines`), and half of them or more end
    before the next line's first word would have filled them to the block's widest line (Milton's
    "They heard, and were abasht, and up they sprung" over "Upon the wing"; wrapped prose ends a
    line only where the next word would not fit), capitalised or not; not a contents page's
    lines ("Chapter II A Sight", A Tale of Two Cities' 98-8.txt), whose ends are as ragged."""
    lines = [line.strip() for line in block.lines if line.strip()]
    if len(lines) < SET_AS_VERSE_LINES or not _verse_lines(block):
        return False
    listed = sum(1 for line in lines if CHAPTER_NUMBER.match(line) or PAGE_REFERENCE.search(line))
    if listed * 2 >= len(lines):
        return False
    width = max(len(line) for line in lines[:-1])
    early = sum(
        1
        for line, below in itertools.pairwise(lines)
        if len(line) + 1 + len(below.split()[0]) <= width
    )
    return early * 2 >= len(lines) - 1


def _set_as_verse_mostly(body: list[Block]) -> bool:
    """Whether `VERSE_SHARE` of a chapter's words, or more, are in blocks set as verse (a
    paragraph given as one line, as HTML gives prose, is prose)."""
    texts = [block for block in body if block.kind == "text"]
    words = sum(len(block.text.split()) for block in texts)
    verse = sum(len(block.text.split()) for block in texts if set_as_verse(block))
    return verse >= VERSE_WORDS and verse >= VERSE_SHARE * words


def _figures(line: str) -> bool:
    """Whether a line is mostly figures and signs, not words: fewer letters than half its
    characters (a file listing, a ledger's columns)."""
    marks = [c for c in line if not c.isspace()]
    return sum(c.isalpha() for c in marks) * 2 < len(marks)


def story_prose(blocks: list[Block]) -> list[Block]:
    return [b for b in blocks if is_prose(b) and not CREDIT.match(b.text)]


def prose_words(blocks: list[Block]) -> int:
    return sum(len(b.text.split()) for b in story_prose(blocks))


def verse_words(blocks: list[Block]) -> int:
    """The words of the stanzas among `blocks` that are not read as prose: verse before the
    first heading (Beowulf's prelude, in 981.txt) is counted where it is left out."""
    return sum(len(b.text.split()) for b in blocks if is_verse(b) and not is_prose(b))


STANZA_WORDS = 120  # a stanza and the words around it are shorter than this; a chapter never is
STANZA_LINE_CHARS = 48  # a stanza's lines are all shorter than this (prose wraps at 60 or more)


def with_its_lines(block: Block) -> str:
    """A paragraph's text: a stanza's keeps its lines (a post shows them; each line's capital
    opens it as a sentence's does, and a name at a line's end runs on to no word of the next),
    any other paragraph is one line."""
    lines = [line.strip() for line in block.lines if line.strip()]
    if len(lines) < 2 or not is_verse(block):
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
    return " ".join(unmarked(NOTE_MARK.sub("", line.strip())).split())
