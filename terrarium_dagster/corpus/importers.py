"""`terrarium import`: a book (plain text, Markdown or EPUB) as a corpus in the banished.db schema.

Chapters become threads (the chapter title is the thread's title), paragraphs become story posts
(tagged `qm_post` and `story_post`, so the agent reads them as it reads a quest master's
updates). Scenes break where the text breaks (`* * *`, `#`, `---` lines) and after about
`SCENE_WORDS` words, marked by a `scene_break` post. What is not story is left out: a Project
Gutenberg header and footer (licence boilerplate), the front matter before the first chapter, and
a table of contents (a "chapter" with no paragraph of prose). A file it cannot read is an
`InputError` naming the problem, and nothing is written.
"""

from __future__ import annotations

import html
import re
import sqlite3
import warnings
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from terrarium_dagster.corpus.schema import CORPUS_SCHEMA
from terrarium_dagster.errors import InputError

SCENE_WORDS = 700
FIRST_POST_ID = 1
FIRST_TIME = 1_000_000_000
AUTHOR = "Narrator"
PROSE_WORDS = 25  # a chapter needs a paragraph this long to be story, not a table of contents

_GUTENBERG_START = re.compile(r"^\*{3}\s*START OF (THE|THIS) PROJECT GUTENBERG.*$", re.I | re.M)
_GUTENBERG_END = re.compile(r"^\*{3}\s*END OF (THE|THIS) PROJECT GUTENBERG.*$", re.I | re.M)
_TEXT_HEADING = re.compile(
    r"^(?:(?:CHAPTER|Chapter|BOOK|Book|PART|Part)\s+[\dIVXLCDM]+\b.*|[IVXLCDM]+\.?\s*)$"
)
_MD_HEADING = re.compile(r"^(#{1,2})\s+(.+?)\s*#*\s*$")
_BREAK = re.compile(r"^\s*(?:\*\s*){3,}\s*$|^\s*(?:-{3,}|_{3,}|#)\s*$")


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

    def is_story(self) -> bool:
        return any(len(p.split()) >= PROSE_WORDS for p in self.paragraphs)


@dataclass
class ImportReport:
    path: str
    chapters: int
    paragraphs: int
    words: int


def strip_gutenberg(text: str) -> str:
    """The text between a Project Gutenberg header and footer (the whole text without them)."""
    start = _GUTENBERG_START.search(text)
    if start:
        text = text[start.end() :]
    end = _GUTENBERG_END.search(text)
    if end:
        text = text[: end.start()]
    return text


def _blocks(text: str) -> list[str]:
    """Blank-line separated blocks, each with its lines joined by single spaces."""
    blocks = re.split(r"\n\s*\n", text.replace("\r\n", "\n").replace("\r", "\n"))
    return [
        " ".join(line.strip() for line in block.splitlines() if line.strip()) for block in blocks
    ]


def chapters_from_text(text: str) -> list[Chapter]:
    chapters: list[Chapter] = []
    lines = strip_gutenberg(text).replace("\r\n", "\n").split("\n")
    current: Chapter | None = None
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph and current is not None:
            current.add(" ".join(paragraph))
        paragraph.clear()

    for index, raw in enumerate(lines):
        line = raw.strip()
        if not line:
            flush()
            continue
        subtitle = _subtitle(lines, index)
        isolated = (index == 0 or not lines[index - 1].strip()) and (
            index + 1 >= len(lines) or not lines[index + 1].strip() or subtitle is not None
        )
        if isolated and _TEXT_HEADING.match(line):
            flush()
            title = line.rstrip(".")
            if subtitle is not None:  # "CHAPTER I" then "The Salt Road"
                title = f"{title}: {lines[subtitle].strip()}"
                lines[subtitle] = ""
            current = Chapter(title)
            chapters.append(current)
            continue
        if _BREAK.match(line):
            flush()
            if current is not None:
                current.scene_break()
            continue
        paragraph.append(line)
    flush()
    if not chapters:  # no headings: the whole text is one chapter
        whole = Chapter("Text")
        for block in _blocks(strip_gutenberg(text)):
            if block:
                whole.add(block)
        chapters = [whole]
    return [chapter for chapter in chapters if chapter.is_story()]


def _subtitle(lines: list[str], index: int) -> int | None:
    """The index of a chapter's title line under its heading ("CHAPTER I", then "The Salt
    Road"): a short line without a final period, right below or after one blank line, and
    followed by a blank line."""
    for below in (index + 1, index + 2):
        if below + 1 >= len(lines) or lines[below + 1].strip():
            continue
        text = lines[below].strip()
        if below == index + 2 and lines[index + 1].strip():
            return None
        if text and len(text.split()) <= 12 and not text.endswith((".", "!", "?", '"')):
            return below
        if text:
            return None
    return None


def chapters_from_markdown(text: str) -> list[Chapter]:
    chapters: list[Chapter] = []
    current: Chapter | None = None
    for block in re.split(r"\n\s*\n", strip_gutenberg(text).replace("\r\n", "\n")):
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        if not lines:
            continue
        heading = _MD_HEADING.match(lines[0])
        if heading:
            current = Chapter(_plain_markdown(heading.group(2)))
            chapters.append(current)
            lines = lines[1:]
            if not lines:
                continue
        if current is None:
            continue  # front matter before the first heading
        if len(lines) == 1 and _BREAK.match(lines[0]):
            current.scene_break()
            continue
        current.add(_plain_markdown(" ".join(lines)))
    return [chapter for chapter in chapters if chapter.is_story()]


def _plain_markdown(text: str) -> str:
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", text)  # images
    text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", text)  # links keep their text
    text = re.sub(r"(\*\*|__|\*|_|`)(.+?)\1", r"\2", text)  # emphasis and code
    text = re.sub(r"^>\s?", "", text)
    return " ".join(text.split())


class _XhtmlText(HTMLParser):
    """Headings and paragraphs of one XHTML document of an EPUB."""

    BLOCKS = frozenset({"p", "div", "h1", "h2", "h3", "li", "blockquote"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.items: list[tuple[str, str]] = []  # ("h" | "p", text)
        self._tag: str | None = None
        self._text: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "nav"):
            self._skip += 1
        elif tag in self.BLOCKS:
            self._close()
            self._tag = tag

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "nav"):
            self._skip = max(0, self._skip - 1)
        elif tag in self.BLOCKS:
            self._close()

    def handle_data(self, data: str) -> None:
        if not self._skip and self._tag is not None:
            self._text.append(data)

    def _close(self) -> None:
        text = " ".join("".join(self._text).split())
        if text and self._tag is not None:
            self.items.append(("h" if self._tag in ("h1", "h2", "h3") else "p", text))
        self._text = []
        self._tag = None


def chapters_from_epub(path: Path) -> list[Chapter]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import ebooklib
        from ebooklib import epub

        try:
            book = epub.read_epub(str(path), options={"ignore_ncx": True})
        except Exception as exc:  # ebooklib raises many kinds on a broken file
            raise InputError(f"{path} is not a readable EPUB: {exc}") from None
    chapters: list[Chapter] = []
    for item_id, _linear in book.spine:
        item = book.get_item_with_id(item_id)
        if item is None or item.get_type() != ebooklib.ITEM_DOCUMENT:
            continue
        parser = _XhtmlText()
        parser.feed(item.get_content().decode("utf-8", errors="replace"))
        parser.close()
        current: Chapter | None = None
        for kind, text in parser.items:
            if kind == "h" and (current is None or current.paragraphs):
                current = Chapter(text)
                chapters.append(current)
            elif kind == "h" and current is not None:
                current.title = f"{current.title}: {text}"
            elif current is not None:
                if _BREAK.match(text):
                    current.scene_break()
                else:
                    current.add(text)
    return [chapter for chapter in chapters if chapter.is_story()]


def read_book(path: Path) -> list[Chapter]:
    if not path.is_file():
        raise InputError(f"no file to import at {path}")
    suffix = path.suffix.lower()
    if suffix == ".epub":
        chapters = chapters_from_epub(path)
    elif suffix in (".txt", ".text", ".md", ".markdown"):
        try:
            text = path.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"{path} is not UTF-8 text: {exc.reason} at byte {exc.start}"
            ) from None
        reader = chapters_from_markdown if suffix in (".md", ".markdown") else chapters_from_text
        chapters = reader(text)
    else:
        raise InputError(
            f"cannot import {path.name}: give a plain-text (.txt), Markdown (.md) or EPUB file"
        )
    if not chapters:
        raise InputError(f"{path} has no story text to import (no chapter with prose)")
    return chapters


def import_book(path: str | Path, out: str | Path) -> ImportReport:
    """Write the book at `path` as a corpus at `out` (replaced atomically); report what it holds."""
    source, target = Path(path), Path(out)
    chapters = read_book(source)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    partial.unlink(missing_ok=True)
    post_id, time = FIRST_POST_ID, FIRST_TIME
    conn = sqlite3.connect(partial, isolation_level=None)
    try:
        conn.executescript(CORPUS_SCHEMA)
        conn.execute("BEGIN")
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
    partial.replace(target)
    paragraphs = [p for chapter in chapters for p in chapter.paragraphs]
    return ImportReport(
        path=str(target),
        chapters=len(chapters),
        paragraphs=len(paragraphs),
        words=sum(len(p.split()) for p in paragraphs),
    )


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
