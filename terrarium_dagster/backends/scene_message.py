"""A `# Scene` message parsed: its id, the `## Known entries` lines and the `## Story` posts.

The prompt conventions are those of `context/prompts.py`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from terrarium_dagster.backends.wire import content_text

_SCENE_LINE = re.compile(r"^# Scene (\S+)")
_POST_HEADER = re.compile(r"^\[post (\d+)[^\]\n]*\][ \t]*$", re.MULTILINE)
_KNOWN_LINE = re.compile(
    r"^- \[E(\d+)\] (.+?)(?: \(aliases: (.*?)\))? \[([a-z]+)\]:? ?(.*)$", re.MULTILINE
)


@dataclass(frozen=True, slots=True)
class ShownEntry:
    """An entry as a message shows it to the model: its id, names and status."""

    entry_id: int
    term: str
    aliases: tuple[str, ...]
    status: str

    @property
    def names(self) -> tuple[str, ...]:
        return (self.term, *self.aliases)


@dataclass(frozen=True, slots=True)
class KnownEntry(ShownEntry):
    """A `## Known entries` line: `- [E12] term (aliases: a; b) [status]: definition`."""

    definition: str

    @property
    def truncated(self) -> bool:
        return self.definition.endswith(("…", "..."))


@dataclass(frozen=True, slots=True)
class SceneMessage:
    """A parsed `# Scene` message."""

    scene_id: str
    known: tuple[KnownEntry, ...]
    story: str
    posts: tuple[tuple[int, str], ...]


def with_earlier_known(scene: SceneMessage, earlier: Sequence[Mapping[str, Any]]) -> SceneMessage:
    """The scene with the known entries of the earlier scene messages still in the conversation.

    The engine does not list an entry again while its line is in the conversation, as a model
    reads the whole context; the scene's own lines win (they are the newest).
    """
    known: dict[int, KnownEntry] = {}
    for message in earlier:
        if message.get("role") != "user":
            continue
        earlier_scene = parse_scene_message(content_text(message.get("content")).lstrip())
        if earlier_scene is not None:
            known.update((entry.entry_id, entry) for entry in earlier_scene.known)
    if not known:
        return scene
    # a line shortened to "…" (unchanged since shown above) keeps the whole one shown above
    known.update(
        (entry.entry_id, entry)
        for entry in scene.known
        if not (entry.definition in ("…", "...") and entry.entry_id in known)
    )
    return SceneMessage(scene.scene_id, tuple(known.values()), scene.story, scene.posts)


def message_sections(text: str) -> dict[str, str]:
    """`## Heading` sections of a message (heading lowercased -> body)."""
    found: dict[str, str] = {}
    matches = list(re.finditer(r"^## (.+?)[ \t]*$", text, re.MULTILINE))
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        found.setdefault(match.group(1).strip().casefold(), text[match.end() : end].strip("\n"))
    return found


def parse_known_entries(text: str) -> list[KnownEntry]:
    entries = []
    for match in _KNOWN_LINE.finditer(text):
        aliases = tuple(a.strip() for a in (match.group(3) or "").split(";") if a.strip())
        entries.append(
            KnownEntry(
                int(match.group(1)),
                match.group(2).strip(),
                aliases,
                match.group(4),
                match.group(5).strip(),
            )
        )
    return entries


def split_posts(story: str) -> list[tuple[int, str]]:
    """`[post 123]` blocks of a story section -> (post id, text)."""
    headers = list(_POST_HEADER.finditer(story))
    posts = []
    for index, header in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(story)
        posts.append((int(header.group(1)), story[header.end() : end].strip()))
    return posts


def parse_scene_message(text: str) -> SceneMessage | None:
    match = _SCENE_LINE.match(text)
    if match is None:
        return None
    sections = message_sections(text)
    # the story is the last section by convention; take everything after its heading
    story_match = re.search(r"^## Story[ \t]*$", text, re.MULTILINE)
    story = text[story_match.end() :].strip("\n") if story_match else sections.get("story", "")
    known = parse_known_entries(sections.get("known entries", ""))
    return SceneMessage(match.group(1), tuple(known), story, tuple(split_posts(story)))
