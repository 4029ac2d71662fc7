"""Books in a markup: Markdown (`blocks_from_markdown`: ATX and setext headings),
reStructuredText (`blocks_from_rst`: read as Markdown once what is RST's own is gone) and
AsciiDoc (`blocks_from_asciidoc`: GITenberg's `book.asciidoc`), each with its title where the
format gives one."""

from __future__ import annotations

import re
from collections import Counter

from terrarium_dagster.corpus.importers.gutenberg import (
    split_lines,
    story_span,
    without_illustrations,
)
from terrarium_dagster.corpus.importers.headings import BREAK, HEADING_PARAGRAPH
from terrarium_dagster.corpus.importers.model import Block

_MD_ATX = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_MD_SETEXT = re.compile(r"^(=+|-+)\s*$")


_TABLE_LINE = re.compile(r"^\s*(?:\||\+[-=+:]+\+?$|[-=:\s|+]+$)")


def blocks_from_markdown(text: str) -> list[Block]:
    """Headings (ATX `#` and setext underlined) and paragraphs of a Markdown book."""
    lines = split_lines(without_illustrations(text))
    start, end = story_span([line.strip() for line in lines])
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
        if BREAK.match(line) and not paragraph:
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
    lines = split_lines(text)
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
    lines = split_lines(text)
    start, end = story_span([line.strip() for line in lines])
    blocks: list[Block] = []
    title: str | None = None
    paragraph: list[str] = []
    in_comment = False
    in_header = False  # the lines under the document title (author, revision) up to a blank

    def flush() -> None:
        kept = [line for line in paragraph if line.strip()]
        plain = _plain_asciidoc(" ".join(kept)) if kept else ""
        if len(kept) == 1 and HEADING_PARAGRAPH.match(plain.strip()):
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
