"""Project Gutenberg's wrapping, in every era's wording: the span of a text inside its header
and footer (`story_span`, `strip_gutenberg`), the header's title (`gutenberg_title`),
illustration markers and soft hyphens (`without_illustrations`), a producer's credit
(`CREDIT`); and a text's lines, whatever ends them (`split_lines`)."""

from __future__ import annotations

import re

_START_MARKERS = re.compile(
    r"^\s*\*{3}\s*START OF (?:THE|THIS) PROJECT GUTENBERG"
    r"|^\s*\*+\s*END\s*\*?\s*THE SMALL PRINT",
    re.I,
)
_END_MARKERS = re.compile(
    r"^\s*\*{3}\s*END OF (?:THE|THIS) PROJECT GUTENBERG"
    # and set between stars: "***********  End Of Project Gutenberg Etext study10.txt ****"
    r"|^[\s*]*(?:The )?End of (?:the |this )?Project Gutenberg(?:'s|’s)?\b"
    r"|^\s*\*{3}\s*START:? FULL LICENSE",
    re.I,
)
# the 1990s trailer an HTML edition may end with (Dorian Gray's dgray10h.htm); the same line
# opens the header of its text editions, so it ends the story only in the second half
_LATE_END_MARKERS = re.compile(r"^\s*\*+\s*This file should be named\b", re.I)
_GUTENBERG_TITLE = re.compile(r"^\s*Title:\s*(.+?)\s*$", re.M)
# "[Illustration: ...]", "[Frontispiece]", "[Picture: Man reading book]" (Three Men in a Boat)
_ILLUSTRATION = re.compile(r"\[\s*(?:(?:Illustration|Frontispiece)\b|Picture:)[^\]]*\]", re.I)
# a picture's link to its larger image, standing alone as the HTML edition's label has it
# (Les Misérables' 135-0.txt: 21 paragraphs "Enlarge" in its chapters), or set after the
# bracketed line it follows on the page, ending its paragraph ('[THE END OF VOLUME I.
# "FANTINE"] Enlarge', the 135-0.txt's last line of its first volume)
_ENLARGE = re.compile(
    r"(?:^|(?<=\n\n))[ \t]*Enlarge[ \t]*(?=\n\n|$)|(?<=\])[ \t]+Enlarge[ \t]*(?=\n[ \t]*\n|$)"
)
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
CREDIT = re.compile(
    r"^(?:produced by|prepared by|e-?text prepared by|this e-?text was prepared|transcribed "
    r"from|transcriber'?s? notes?\b)",
    re.I,
)


def story_span(texts: list[str]) -> tuple[int, int]:
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


def split_lines(text: str) -> list[str]:
    """A text's lines, whatever ends them: a line feed, a carriage return, or carriage returns
    and a line feed ("\r\n"; "\r\r\n" in Great Expectations' grexp10a.txt, where reading
    each "\r" as a line's end made every line a paragraph of its own)."""
    return _LINE_END.split(text)


def strip_gutenberg(text: str) -> str:
    """The text inside a Project Gutenberg header and footer (the whole text without them)."""
    lines = split_lines(text)
    start, end = story_span(lines)
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


def without_illustrations(text: str) -> str:
    """The text without illustration markers (a picture's "Enlarge" too, and its caption set
    again under it) and soft hyphens (U+00AD, a hyphenation hint: *Huckleberry Finn*'s
    hfinn11.txt has 983, "Aunt Polly -\xad Tom's Aunt Polly")."""
    kept: list[str] = []
    at = 0
    for marker in _ILLUSTRATION.finditer(text):
        if marker.start() < at:  # inside a caption taken with the marker before it
            continue
        kept.append(text[at : marker.start()])
        at = _caption_end(text, marker)
    kept.append(text[at:])
    return _ENLARGE.sub("", "".join(kept)).replace("\xad", "")


# a marker's caption: "[Illustration: MARS.]"
_CAPTION = re.compile(r"\[\s*(?:Illustration|Frontispiece|Picture)\s*:\s*(.*?)\s*\]$", re.I | re.S)
# the paragraph right under a line (blank lines between): its lines up to the next blank line
_NEXT_PARAGRAPH = re.compile(r"[ \t]*\n(?:[ \t]*\n)+((?:[ \t]*\S[^\n]*(?:\n|$))+)")


def _caption_end(text: str, marker: re.Match[str]) -> int:
    """Where an illustration's marker ends: past its caption's paragraph when the text sets the
    caption again as a paragraph of its own under it (The Iliad's 6130-0.txt: "[Illustration:
    MARS.]", then "MARS." centred; 71 captions were read as paragraphs of the story)."""
    caption = _CAPTION.match(marker.group(0))
    below = _NEXT_PARAGRAPH.match(text, marker.end())
    if caption and below and caption.group(1).split() == below.group(1).split():
        return below.end(1)
    return marker.end()
