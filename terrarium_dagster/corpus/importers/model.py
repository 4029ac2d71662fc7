"""What an import makes of a book: its blocks (headings and paragraphs in reading order, from
any format), its chapters (scenes of paragraphs), the `Book` (the story's chapters, its title,
what was set aside) and the `ImportReport` of what was written."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

SCENE_WORDS = 700


PROSE_WORDS = 25  # a chapter needs a paragraph this long to be story, not a table of contents


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
    unchanged: bool = False  # `path` already held this very import: nothing was written
