"""What the offline curator reads of a `# Task: curate` message: one `CurateEntryView` per
entry under review (its names, status, definition, evidence posts, similar entries and the
thread's notes about it), parsed by `parse_curate_message`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from terrarium_dagster.backends.scene_message import KnownEntry, parse_known_entries
from terrarium_dagster.curation.review_prompt import (
    BOOK_LABEL,
    NAMED_AGAIN,
    NOT_NAMED_SINCE,
    QM_LABEL,
    STORY_ENDS,
)
from terrarium_dagster.terms.text_search import find_term

_POST_REF = re.compile(r">>(\d+)")
# A source on the sources line: `>>12 "the sentence naming it"` (the quote may be cut with "…").
_SOURCE_QUOTE = re.compile(r'>>\d+ "(.*?)"(?=; |$)')


@dataclass(frozen=True, slots=True)
class CurateEntryView:
    """What the curate message shows about one entry under review."""

    entry_id: int
    term: str
    aliases: tuple[str, ...] = ()
    status: str = "tentative"
    definition: str = ""
    source_posts: tuple[int, ...] = ()
    source_count: int = 0
    qm_evidence_mentions: int = 0
    similar: tuple[KnownEntry, ...] = ()
    evidence: tuple[str, ...] = ()  # the texts of the evidence posts shown
    named_again: int = 0  # a rejected entry's posts naming it in this thread
    quiet_threads: int = 0  # left tentative, unchanged: the threads since one last named it
    story_ends: bool = False  # under review at a book's last thread: none after it names it
    story_label: str = QM_LABEL  # how the evidence labels the story's own posts ("text": a book)
    source_quotes: tuple[str, ...] = ()  # the sentence of each listed source naming it, if shown

    @property
    def names(self) -> tuple[str, ...]:
        return (self.term, *self.aliases)


def parse_curate_message(text: str) -> list[CurateEntryView]:
    """The entries of a `# Task: curate` message (tolerant: blocks start at `## Entry E<id>`)."""
    blocks = re.split(r"^## Entry ", text, flags=re.MULTILINE)[1:]
    views: list[CurateEntryView] = []
    for block in blocks:
        block = block.split("\n## ", 1)[0]
        lines = [line for line in block.splitlines() if line.strip()]
        header = re.match(r"E(\d+):? ?(.*)", lines[0] if lines else "")
        entry_line = next((line for line in lines if line.startswith("- [E")), None)
        known = parse_known_entries(entry_line) if entry_line else []
        if not known and header is None:
            continue
        if known:
            base = known[0]
        else:
            assert header is not None
            base = KnownEntry(int(header.group(1)), header.group(2).strip(), (), "tentative", "")
        sources_line = next((line for line in lines if line.startswith("sources:")), "")
        posts = tuple(dict.fromkeys(int(p) for p in _POST_REF.findall(sources_line)))
        more = re.search(r"and (\d+) more", sources_line)
        count = len(posts) + (int(more.group(1)) if more else 0)
        quotes = tuple(_SOURCE_QUOTE.findall(sources_line))
        qm_mentions = 0
        evidence: list[str] = []
        label = QM_LABEL
        for line in lines:
            if line.startswith(">>"):
                evidence.append(line.split(":", 1)[1] if ":" in line else "")
            if line.startswith(">>") and f"({BOOK_LABEL}" in line.split(":", 1)[0]:
                label = BOOK_LABEL
            if line.startswith(">>") and f"({label}" in line.split(":", 1)[0]:
                body = line.split(":", 1)[1] if ":" in line else ""
                if any(find_term(body, name) for name in base.names):
                    qm_mentions += 1
        again = next(
            (
                re.match(r"(\d+)", line.split(NAMED_AGAIN, 1)[1].strip())
                for line in lines
                if NAMED_AGAIN in line
            ),
            None,
        )
        quiet = next(
            (
                re.match(r"(\d+)", line.split(NOT_NAMED_SINCE, 1)[1].strip())
                for line in lines
                if NOT_NAMED_SINCE in line
            ),
            None,
        )
        similar = tuple(
            entry
            for line in lines
            if line.startswith("- similar: ")
            for entry in parse_known_entries("- " + line[len("- similar: ") :])
        )
        views.append(
            CurateEntryView(
                base.entry_id,
                base.term,
                base.aliases,
                base.status,
                base.definition,
                posts,
                count,
                qm_mentions,
                similar,
                tuple(evidence),
                int(again.group(1)) if again else 0,
                int(quiet.group(1)) if quiet else 0,
                story_ends=any(
                    STORY_ENDS in line for line in lines if line.startswith("first seen:")
                ),
                story_label=label,
                source_quotes=quotes,
            )
        )
    return views
