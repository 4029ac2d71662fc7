"""Whose name is this? The offline backend's name heuristics.

A short, pet or titled form of exactly one known name (`Quill` or `Old Quill` of `Ambrose
Quill`, `Toby` of `Tobiah`), and a name the scene itself gives someone ("I'm Sister Ottoline ...
calls me the Bell-Sister"; "Provost" in "Provost Amberly Hask"). The scene annotator makes such
a name an alias of its owner; the curator merges its entry into the owner's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from terrarium_dagster.backends.portraits import TITLE_WORDS
from terrarium_dagster.backends.scene_message import KnownEntry, SceneMessage
from terrarium_dagster.store.normalize import normalize_term
from terrarium_dagster.terms.candidates import HONORIFICS, STARTERS, Candidate, find_term

_I_AM = re.compile(r"\b(?:I'm|I’m|I am|[Mm]y name is|[Mm]y name's)\s+$")
_CALL_ME = re.compile(r"\b(?:call|calls|called)\s+me\s+(?:the\s+)?$", re.IGNORECASE)
SPEAKER_CHARS = 300


def names_by_context(
    scene: SceneMessage, candidates: Sequence[Candidate], live: Sequence[KnownEntry]
) -> dict[str, KnownEntry | str]:
    """Candidates the scene itself says are another name of someone: "I'm Sister Ottoline ...
    calls me the Bell-Sister" (a name the speaker is called), and a bare title right before one
    name ("Provost" in "Provost Amberly Hask"). Candidate term -> the known entry, or the term
    of the candidate, it names."""
    names: list[tuple[str, KnownEntry | str]] = [
        (name, entry) for entry in live for name in entry.names
    ] + [(c.term, c.term) for c in candidates]
    found: dict[str, KnownEntry | str] = {}
    for candidate in candidates:
        owners: list[KnownEntry | str] = []
        title = normalize_term(candidate.term)
        is_title = " " not in title and title in TITLE_WORDS and candidate.term[:1].isupper()
        for _post_id, text in scene.posts:
            for start, _end in find_term(text, candidate.term):
                before = text[:start]
                if _CALL_ME.search(before):
                    window = before[-SPEAKER_CHARS:]
                    speakers = [
                        (match_start, owner)
                        for name, owner in names
                        if owner != candidate.term
                        for match_start, match_end in find_term(window, name)
                        if _I_AM.search(window[:match_start])
                    ]
                    if speakers:
                        owners.append(max(speakers, key=lambda item: item[0])[1])
            if is_title:
                for name, owner in names:
                    if owner == candidate.term or normalize_term(name) == title:
                        continue
                    pattern = re.escape(candidate.term) + r"\s+$"
                    for match_start, _ in find_term(text, name):
                        if re.search(pattern, text[:match_start]) and (
                            " " in normalize_term(name) or name[:1].isupper()
                        ):
                            owners.append(owner)
        key = normalize_term(candidate.term)
        if " " in key and person_like(key) and candidate.term[:1].isupper():
            # "Provost Amberly Hask" where the bare title "Provost" is an entry already, and
            # names no one yet: the name is who that title is
            for entry in live:
                if normalize_term(entry.term) not in TITLE_WORDS or any(
                    " " in normalize_term(alias) for alias in entry.aliases
                ):
                    continue
                pattern = re.compile(rf"\b{re.escape(entry.term)}\s+$")
                for _post_id, text in scene.posts:
                    if any(pattern.search(text[:start]) for start, _ in find_term(text, key)):
                        owners.append(entry)
        distinct = list(dict.fromkeys(id(o) if isinstance(o, KnownEntry) else o for o in owners))
        if len(distinct) == 1:
            found[candidate.term] = owners[0]
    return found


# A multiword name with one of these is a title or a phrase ("Prince of Dusar", "River of the
# Dead"): the place or thing named inside it is a referent of its own, never merged into it.
_CONNECTORS = frozenset({"of", "the", "and", "in", "on", "at", "from", "to", "by", "for"})


def person_like(key: str) -> bool:
    """Is the normalized name several words without a connector (`ambrose quill`)?"""
    words = key.split()
    return len(words) > 1 and not _CONNECTORS.intersection(words)


def _short_form(key: str, name: str) -> bool:
    """Is the one word `key` a short form of the multiword `name`? The first or last word of a
    name (`Quill` of `Ambrose Quill`, `Iss` of `River Iss`); of a phrase with a connector only
    its head (`Sodality` of `Sodality of the Steady Flame`), never what follows the connector
    (`Dusar` of `Prince of Dusar` is a place of its own)."""
    words = name.split()
    if len(words) < 2:
        return False
    if person_like(name):
        return key in (words[0], words[-1])
    return key == words[0]


def word_of(name: str, entries: Sequence[KnownEntry]) -> list[KnownEntry]:
    """The entries with a multiword name of which the one-word `name` is a short form."""
    key = normalize_term(name)
    if not key or " " in key or key in STARTERS:
        return []
    found = []
    for entry in entries:
        if any(_short_form(key, normalize_term(n)) for n in entry.names):
            found.append(entry)
    return found


def word_owner(candidate: Candidate, entries: Sequence[KnownEntry]) -> KnownEntry | None:
    """The one known entry the candidate is a short, pet or titled form of (`Quill` or `Old
    Quill` of `Ambrose Quill`, `Toby` of `Tobiah`), if exactly one."""
    return name_owner(candidate.term, entries)[0]


_PET_ENDINGS = ("ie", "ey", "y", "i")


def _pet_name(key: str, name: str) -> bool:
    """Is the one word `key` a pet form of the one word `name` (`toby` of `tobiah`, `ottie` of
    `ottoline`): its stem, without a pet ending, opens the longer name."""
    if " " in key or " " in name or key == name or len(key) < 3:
        return False
    for ending in _PET_ENDINGS:
        stem = key[: -len(ending)]
        if key.endswith(ending) and len(stem) >= 3 and len(name) >= len(stem) + 2:
            return name.startswith(stem) and not name.startswith(key)
    return False


def pet_name_of(name: str, entries: Sequence[KnownEntry]) -> list[KnownEntry]:
    """The entries with a name of which the one-word `name` is a pet form (their one-word names
    and the first word of their person-like names)."""
    key = normalize_term(name)
    if not key or " " in key or key in STARTERS:
        return []
    found = []
    for entry in entries:
        for other in map(normalize_term, entry.names):
            words = other.split()
            first = words[0] if len(words) == 1 or person_like(other) else ""
            if first and _pet_name(key, first):
                found.append(entry)
                break
    return found


def _titled(name: str) -> str | None:
    """For a title and one name (`Old Quill`, `Provost Hask`), the name (`quill`)."""
    words = normalize_term(name).split()
    if len(words) == 2 and words[0] in TITLE_WORDS | HONORIFICS and words[1] not in STARTERS:
        return words[1]
    return None


def _titled_of(name: str, entries: Sequence[KnownEntry]) -> list[KnownEntry]:
    """The entries a title-and-name (`Old Quill`) names: those whose person-like name ends or
    opens with that name (`Ambrose Quill`), or whose one-word name it is."""
    word = _titled(name)
    if word is None:
        return []
    own = normalize_term(name)
    found = []
    for entry in entries:
        for surface in entry.names:
            other = normalize_term(surface)
            words = other.split()
            if other == own or not surface[:1].isupper():
                continue
            if other == word or (person_like(other) and word in (words[0], words[-1])):
                found.append(entry)
                break
    return found


def name_owner(name: str, entries: Sequence[KnownEntry]) -> tuple[KnownEntry | None, str]:
    """The one entry a short, pet or titled form of a name belongs to, and how; (None, "")
    when none or several."""
    for finder, how in (
        (word_of, "is part of the name of"),
        (pet_name_of, "is a pet name of"),
        (_titled_of, "is a title and name of"),
    ):
        owners = finder(name, entries)
        if len(owners) == 1:
            return owners[0], how
        if owners:
            return None, ""
    return None, ""
