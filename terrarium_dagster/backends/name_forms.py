"""Whose name is this? The offline backend's name heuristics.

A short, pet or titled form of exactly one known name (`Quill` or `Old Quill` of `Ambrose
Quill`, `Toby` of `Tobiah`), and a name the scene itself gives someone ("I'm Sister Ottoline ...
calls me the Bell-Sister"; "Provost" in "Provost Amberly Hask"). The scene annotator makes such
a name an alias of its owner; the curator merges its entry into the owner's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from terrarium_dagster.backends.portraits import PLACE_WORDS, TITLE_WORDS
from terrarium_dagster.backends.scene_message import KnownEntry, SceneMessage
from terrarium_dagster.store.normalize import form_key, normalize_term, one_letter_apart
from terrarium_dagster.store.vocabulary import ORDINARY_ZIPF, elided_word, frequency
from terrarium_dagster.terms.candidates import Candidate
from terrarium_dagster.terms.english import HONORIFICS, STARTERS, is_common_word
from terrarium_dagster.terms.given_names import (
    WOMEN_NAMES,
    a_mans_given_name,
    familiar_pair,
    given_name,
    pet_name,
)
from terrarium_dagster.terms.text_search import find_term

_I_AM = re.compile(r"\b(?:I'm|I’m|I am|[Mm]y name is|[Mm]y name's)\s+$")
_CALL_ME = re.compile(r"\b(?:call|calls|called)\s+me\s+(?:the\s+)?$", re.IGNORECASE)
SPEAKER_CHARS = 300


def names_by_context(
    scene: SceneMessage, candidates: Sequence[Candidate], live: Sequence[KnownEntry]
) -> dict[str, KnownEntry | str]:
    """Candidates the scene itself says are another name of someone: "I'm Sister Ottoline ...
    calls me the Bell-Sister" (a name the speaker is called), and a bare title right before one
    name ("Provost" in "Provost Amberly Hask"), and a hyphened name whose first word the scene
    says is another name of its last word ("Time is really only a fourth dimension":
    "Time-Dimension" of "Fourth Dimension"; `_said_to_be`). Candidate term -> the known entry,
    or the term of the candidate, it names."""
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
        owners.extend(_said_to_be(scene, candidate.term, names))
        owners.extend(_apposed_to(scene, candidate.term, names))
        distinct = list(dict.fromkeys(id(o) if isinstance(o, KnownEntry) else o for o in owners))
        if len(distinct) == 1:
            found[candidate.term] = owners[0]
    return found


# Verbs that take two objects: "gave Mowgli the Master Words" names what was given, not Mowgli.
_GIVING = frozenset((
    "give", "gives", "gave", "given", "giving", "teach", "teaches", "taught", "tell", "tells",
    "told", "show", "shows", "showed", "shown", "bring", "brings", "brought", "send", "sends",
    "sent", "hand", "hands", "handed", "offer", "offers", "offered", "lend", "lent", "ask",
    "asks", "asked", "promise", "promised", "owe", "owed", "wish", "wished", "pay", "paid",
    "leave", "left", "buy", "bought", "cost", "sing", "sang", "read", "win", "won",
))  # fmt: skip


def _apposed_to(
    scene: SceneMessage, term: str, names: Sequence[tuple[str, KnownEntry | str]]
) -> list[KnownEntry | str]:
    """The names a capitalised title or epithet is set beside, as another name of the same one:
    a title "X of Y" after a name and a comma ("Dejah Thoris, Princess of Helium"; "Issus,
    Goddess of Death"), and an epithet of two English words after a name and "the" ("Kaa the
    Rock Python", "Bagheera the Black Panther"; not after a verb of giving: "gave Mowgli the
    Master Words"). The name is a person's (several words with no connector, or one word English
    does not know), never a title itself."""
    key = normalize_term(term)
    words = key.split()
    title = len(words) == 3 and words[1] == "of" and term[:1].isupper()
    epithet = (
        len(words) == 2
        and person_like(key)
        and all(frequency(word) >= _EPITHET_ZIPF for word in words)
        and all(word[:1].isupper() for word in term.split())
    )
    if not (title or epithet):
        return []
    joint = r",\s+(?:the\s+)?$" if title else r"\s+the\s+$"
    owners: list[KnownEntry | str] = []
    for _post_id, text in scene.posts:
        for start, end in find_term(text, term):
            before = text[max(0, start - SPEAKER_CHARS) : start]
            if not re.search(joint, before) or _LISTED_ON.match(text[end : end + 40]):
                continue  # a list or a chain of titles: "Mr. Doran, the Duchess of Balmoral, Lord"
            for name, owner in names:
                if owner == term or not _a_holders_name(name):
                    continue
                pattern = r"\s+".join(map(re.escape, name.split())) + joint  # lines wrap
                found = re.search(rf"(?<![\w'’-]){pattern}", before)
                if found is None:
                    continue
                opener = re.findall(r"[\w'’]+", before[: found.start()][-40:])
                last = opener[-1].casefold() if opener else ""
                if epithet and last in _GIVING:
                    continue
                if title and " " not in name.strip() and (last in _CONNECTORS or last in _LISTING):
                    continue  # "upon Barsoom, Brother of Issus": a place, not who is titled
                owners.append(owner)
    return owners


# After a title, another name or title in the same list: "the Duchess of Balmoral, Lord
# Backwater", "Brother of Issus, Prince of Life Eternal".
_LISTED_ON = re.compile(r"\s*,\s+(?:and\s+)?(?:the\s+)?[A-Z]")
_LISTING = frozenset(("and", "or", "nor", "with", "upon", "over", "under", "into", "through"))


# The words of an epithet are English words this frequent ("Rock Python", "Black Panther").
_EPITHET_ZIPF = 2.5


def _a_holders_name(name: str) -> bool:
    """Whether a name, as written, may be the one a title or epithet is set beside: several
    capitalised words with no connector ("Dejah Thoris"), or one capitalised word English does
    not know ("Kaa", "Issus"). Not `a_persons_name`, which reads a person's name by its shape
    (a title or a given name first)."""
    key = normalize_term(name)
    if not name[:1].isupper():
        return False
    if " " in key:
        return person_like(key) and all(word[:1].isupper() for word in name.split())
    return frequency(key) < _EPITHET_ZIPF


_HYPHENED = re.compile(r"([A-Z][a-z]+)-([A-Za-z][a-z]+)")
# Words that may stand between "is" and the article of a statement of what a thing is ("Time
# is really only a fourth dimension").
_HEDGES = r"(?:(?:really|only|just|simply|but|merely|indeed|then|itself|truly|in fact),?\s+)*"


def _said_to_be(
    scene: SceneMessage, term: str, names: Sequence[tuple[str, KnownEntry | str]]
) -> list[KnownEntry | str]:
    """For a capitalised name of two hyphened words ("Time-Dimension"), the other names of its
    last word that the scene says its first word is ("Time is really only a fourth dimension":
    "Fourth Dimension"): one idea named two ways."""
    shape = _HYPHENED.fullmatch(term.strip())
    if shape is None:
        return []
    first, head = shape.group(1), shape.group(2).casefold()
    owners: list[KnownEntry | str] = []
    for name, owner in names:
        words = normalize_term(name).split()
        if owner == term or len(words) < 2 or words[-1] != head or "-" in name:
            continue
        spelled = r"[\s-]+".join(map(re.escape, words))
        said = re.compile(
            rf"(?<![\w-]){re.escape(first)}\s+is\s+{_HEDGES}(?:a|an|the)\s+{spelled}(?![\w-])",
            re.IGNORECASE,
        )
        if any(said.search(text) for _post_id, text in scene.posts):
            owners.append(owner)
    return owners


# A multiword name with one of these is a title or a phrase ("Prince of Dusar", "River of the
# Dead"): the place or thing named inside it is a referent of its own, never merged into it.
_CONNECTORS = frozenset({"of", "the", "and", "in", "on", "at", "from", "to", "by", "for"})


def person_like(key: str) -> bool:
    """Is the normalized name several words without a connector (`ambrose quill`)?"""
    words = key.split()
    return len(words) > 1 and not _CONNECTORS.intersection(words)


# Words of a place of the land that its name after "of" names too ("Sea of Omean" is Omean);
# not a building or a title ("Temple of Issus", "Prince of Dusar").
_LAND = frozenset((
    "sea", "seas", "valley", "river", "lake", "isle", "island", "islands", "mountains", "gulf",
    "bay", "desert", "forest", "plain", "plains", "ocean", "strait", "straits", "cape",
))  # fmt: skip


def _short_form(key: str, name: str) -> bool:
    """Is the one word `key` a short form of the multiword `name`? The first or last word of a
    name (`Quill` of `Ambrose Quill`, `Iss` of `River Iss`); of a phrase with a connector only
    its head (`Sodality` of `Sodality of the Steady Flame`), and what follows "of" only in a
    place of the land (`Korus` of `Lost Sea of Korus`; `Dusar` of `Prince of Dusar` is a place
    of its own)."""
    words = name.split()
    if len(words) < 2:
        return False
    if person_like(name):
        return key in (words[0], words[-1])
    if key == words[0]:
        return True
    # the name after "of" in a place of the land ("Korus" of "Lost Sea of Korus", "Dor" of
    # "Valley of Dor"): the land is named by it
    head = words[:-2]
    return len(words) > 2 and words[-2] == "of" and key == words[-1] and bool(_LAND & set(head))


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


def pet_name_of(name: str, entries: Sequence[KnownEntry]) -> list[KnownEntry]:
    """The entries with a name of which the one-word `name` is a pet form (their one-word names
    and the first word of their person-like names)."""
    key = normalize_term(name)
    if not key or " " in key or key in STARTERS:
        return []
    found = []
    for entry in entries:
        names = [normalize_term(other) for other in entry.names]
        for other in names:
            words = other.split()
            first = words[0] if len(words) == 1 or person_like(other) else ""
            if len(words) == 1 and _a_surname_of(other, names):
                continue  # "Laurie" is no pet form of "Laurence", also "Mr. Laurence"
            if first and (pet_name(key, first) or _clipped(key, first, len(words))):
                found.append(entry)
                break
    return found


CLIPPED_CHARS = 4  # a name clipped shorter than this is any name's opening ("Tin", "Bel")


def _clipped(key: str, first: str, words: int) -> bool:
    """Is the one word `key` the first word `first` of a name of two words or more clipped
    short, two letters or more gone, where the clipped word is rarer in English than the whole
    ("Tink" of "Tinker Bell")? Not a one-word name's opening: "Bing" of "Bingley" may be a
    name of its own."""
    return (
        words > 1
        and len(key) >= CLIPPED_CHARS
        and len(first) >= len(key) + 2
        and first.startswith(key)
        and frequency(key) < frequency(first)
    )


def pet_forms_of(full_name: str, entries: Sequence[KnownEntry]) -> list[KnownEntry]:
    """For a person's full name of two words, no title ("David Balfour"), the entries named by
    one word that is a pet form of its given name ("Davie"; `pet_name`) and no surname of
    theirs ("Laurie" beside "Mr. Laurence" is a pet form of no given name)."""
    key = normalize_term(full_name)
    words = key.split()
    if len(words) != 2 or untitled(key) != key or not person_like(key):
        return []
    found = []
    for entry in entries:
        names = [normalize_term(other) for other in entry.names]
        if any(
            " " not in other and not _a_surname_of(other, names) and pet_name(other, words[0])
            for other in names
        ):
            found.append(entry)
    return found


def _a_surname_of(word: str, names: Sequence[str]) -> bool:
    """Whether the one word, a name of an entry whose (normalized) names are `names`, is a
    surname there: another of them is it after a family's title ("mr. laurence", "miss
    bingley"), and the lists know it as no given name ("Miss Lydia" names a given name). A
    pet form is made of a given name, never of a surname: the grandson called "Laurie" is not
    "Mr. Laurence"."""
    if given_name(word):
        return False
    for name in names:
        titles, rest = _untitled(name)
        if titles and rest == word and titles[0] in _FAMILY_TITLES:
            return True
    return False


def _titled(name: str) -> str | None:
    """For a title and one name (`Old Quill`, `Provost Hask`), the name (`quill`)."""
    words = normalize_term(name).split()
    if (
        len(words) == 2
        and words[1] not in STARTERS
        and (words[0] in HONORIFICS or _title(words[0]) is not None)
    ):
        return words[1]
    return None


def _titled_of(name: str, entries: Sequence[KnownEntry]) -> list[KnownEntry]:
    """The entries a title-and-name (`Old Quill`) names: those whose person-like name ends or
    opens with that name (`Ambrose Quill`), or whose one-word name it is; or whose given name
    it is a familiar form of (`Miss Eliza` of `Elizabeth Bennet`)."""
    word = _titled(name)
    if word is None:
        return []
    own = normalize_term(name)
    title = _title(own.split()[0])
    if title in _WOMEN_TITLES and a_mans_given_name(word):
        return []  # "Mrs. Joe" is the wife of "Joe Gargery", no name of his
    found = []
    for entry in entries:
        names = [normalize_term(surface) for surface in entry.names if surface[:1].isupper()]
        if any(_other_in_family(title, other) for other in names):
            continue  # "Bingley", also named "Mr. Bingley", is not "Miss Bingley"; nor the reverse
        if title in _WOMEN_TITLES and any(_relative(word, title, other) for other in names):
            continue  # "Stoner", also "Major-General Stoner", is not "Miss Stoner"
        # "Miss Bennet" is not the "Miss Elizabeth" of "Elizabeth Bennet": not by her surname
        younger = title == "miss" and _called_by_her_given_name(word, names)
        for other in names:
            words = other.split()
            if other == own:
                continue
            titles, rest = _untitled(other)
            if person_like(other) and named_place(words):
                continue  # "Baker Street" is not "Mr. Baker", "Lucas Lodge" not "Miss Lucas"
            if not person_like(other):
                ends: tuple[str, ...] = (other,)
            elif title in _WOMEN_TITLES and titles[:1] != (title,):
                # her given name ("Miss Lucy" of "Lucy Steele"), or the surname of a woman's
                # full name ("Mrs. Lyons" of "Laura Lyons"), never a surname another of her
                # family shares ("Mrs. Turner" is not "John Turner"); a daughter's surname only
                # once she is called "Miss" in full ("Miss Helen Stoner": the branch below),
                # since "Elizabeth Bennet" may be any of the Misses Bennet
                given = rest.split()[0]
                married = given in WOMEN_NAMES and title != "miss"
                ends = (given, words[-1]) if married else (given,)
            elif title in _MEN_TITLES and rest.split()[0] in WOMEN_NAMES:
                ends = ()  # "Mr. Bennet" is not "Elizabeth Bennet"
            else:  # "Mr. Holmes" of "Sherlock Holmes", "Miss Rucastle" of "Miss Alice Rucastle",
                # "Lord John" of "Lord John Roxton": the given name after the other's titles
                bare = rest.split()
                ends = (bare[0], bare[-1])
            if younger and word == words[-1] and len(words) > 1:
                continue
            if word in ends:
                found.append(entry)
                break
            if familiar_pair(word, words[0]) and (len(words) == 1 or person_like(other)):
                found.append(entry)  # "Miss Eliza" of "Elizabeth Bennet"
                break
    if len(found) > 1:  # "Lord John" is "Lord John Roxton", not another John: the name it opens
        opened = [
            entry
            for entry in found
            if any(normalize_term(surface).startswith(own + " ") for surface in entry.names)
        ]
        return opened if len(opened) == 1 else found
    return found


def _called_by_her_given_name(surname: str, names: Sequence[str]) -> bool:
    """Whether an entry's normalized names call her "Miss" and a given name alone ("miss
    elizabeth", "miss lizzy"): a younger daughter, in a novel's manners, while "Miss" and the
    surname ("Miss Bennet") is the eldest's."""
    return any(
        len(words := name.split()) == 2 and _title(words[0]) == "miss" and words[1] != surname
        for name in names
    )


# Last words that make a name a place's, never a person's ("Baker Street", "Lucas Lodge"); not
# those that are surnames too ("Hall", "Hill", "Wood", "Ward", "Mill", "Marsh", "Well").
_SURNAME_PLACES = frozenset((
    "hall", "hill", "wood", "ward", "mill", "marsh", "well", "march", "deep", "keep", "hold",
    "reach", "pass", "court", "port", "row",
))  # fmt: skip
_PLACE_ENDS = (PLACE_WORDS - _SURNAME_PLACES) | {
    "lodge", "house", "inn", "hotel", "club", "abbey", "manor", "gardens", "terrace", "avenue",
}  # fmt: skip


def named_place(words: Sequence[str]) -> bool:
    """Whether a name of several words ends in a word for a place ("baker street")."""
    return len(words) > 1 and words[-1] in _PLACE_ENDS


def _title(word: str) -> str | None:
    """The title `word` is, spelled out ("captain" for "cap'n", "mister" for "Mr."), or None."""
    if word in TITLE_WORDS:
        return word
    if word.rstrip(".") in _SHORT_TITLES:
        return _SHORT_TITLES[word.rstrip(".")]
    spelled = elided_word(word)
    return spelled if spelled in TITLE_WORDS else None


# Titles written short, spelled out.
_SHORT_TITLES = {"mr": "mister", "mrs": "missus", "ms": "ms", "dr": "doctor"}
# Titles that tell one member of a family from another ("Mr. Darling" and "Mrs. Darling"),
# each language's word for one title read as one ("Monsieur Fix" is "Mr. Fix").
_FAMILY_TITLES = {
    "mister": "mister", "monsieur": "mister", "missus": "missus", "madame": "missus",
    "miss": "miss", "ms": "ms", "master": "master",
}  # fmt: skip
# Titles of women: the surname after one is also her father's, brother's or husband's.
_WOMEN_TITLES = frozenset(
    ("miss", "missus", "ms", "madame", "mistress", "lady", "dame", "aunt", "grandma", "granny")
)


# Titles of men in a family: the surname after one is his, never a woman's full name's.
_MEN_TITLES = frozenset(("mister", "monsieur", "master", "sir", "lord", "uncle", "grandpa"))
# Each title's sex, where it has one: a name under one and a name under the other are two people
_OF_MEN = _MEN_TITLES | {
    "king", "prince", "duke", "count", "baron", "emperor", "brother", "father", "earl", "marquis",
}  # fmt: skip
_OF_WOMEN = _WOMEN_TITLES | {
    "queen", "princess", "duchess", "countess", "baroness", "empress", "sister", "mother",
}  # fmt: skip


def _sex_of_title(key: str) -> str | None:
    """The sex a normalized name's first title gives, "m" or "w"; None for no title or one of
    either sex ("captain", "doctor")."""
    titles = _untitled(key)[0]
    if not titles:
        return None
    title = _FAMILY_TITLES.get(titles[0], titles[0])
    return "m" if title in _OF_MEN else "w" if title in _OF_WOMEN else None


def titles_of_other_sex(name: str, entry: KnownEntry) -> bool:
    """Whether `name` is titled as a man and a name of `entry` as a woman, or the other way
    round ("Lord Bracknell" and "Lady Bracknell"): two people, whatever else they share."""
    own = _sex_of_title(normalize_term(name))
    if own is None:
        return False
    return any(
        (theirs := _sex_of_title(normalize_term(other))) is not None and theirs != own
        for other in entry.names
    )


def _relative(word: str, title: str, other: str) -> bool:
    """Whether the normalized name `other` is a full name of someone else with the surname
    `word`, for a woman so titled: another given name, not her title ("Major-General Stoner"
    for "Miss Stoner"; not "Miss Alice Rucastle" for "Miss Rucastle")."""
    titles, rest = _untitled(other)
    parts = rest.split()
    return (
        len(parts) > 1
        and person_like(rest)
        and parts[-1] == word
        and titles[:1] != (title,)
        and parts[0] != word
        and parts[0] not in WOMEN_NAMES  # "Helen Stoner" is "Miss Stoner"
        and not familiar_pair(word, parts[0])
    )


def _is_titled(title: str, full_name: str) -> bool:
    """Whether a full name (normalized, untitled) may be the one named by `title` and its
    surname. A woman's surname is her father's, brother's or husband's too ("John Turner" is
    not "Mrs. Turner", "Major-General Stoner" not "Miss Stoner"): a wife's title takes a
    woman's full name ("Laura Lyons" is "Mrs. Lyons"), a daughter's none (a family has several
    Miss Bennets); a man's title no woman's ("Elizabeth Bennet" is not "Mr. Bennet")."""
    given = full_name.split()[0]
    if title in _WOMEN_TITLES:
        return _FAMILY_TITLES.get(title) == "missus" and given in WOMEN_NAMES
    return not (title in _MEN_TITLES and given in WOMEN_NAMES)


def titles_fit(full_name: str, entry: KnownEntry) -> bool:
    """Whether a full name (normalized) may be the entry's whose names have titles: no name of
    it is titled for someone else of the family ("Elizabeth Bennet" is not "Bennet", alias
    "Mr. Bennet")."""
    rest = _untitled(full_name)[1]
    for other in map(normalize_term, entry.names):
        titles, surname = _untitled(other)
        if not titles or " " in surname or titles[0] not in _FAMILY_TITLES:
            continue  # only a title and a surname says whose the surname is
        if surname in WOMEN_NAMES:
            continue  # a given name: "Miss Lydia" is "Lydia"
        if not _is_titled(titles[0], rest):
            return False
    return True


def titled_form(candidate: Candidate, entries: Sequence[KnownEntry]) -> Candidate:
    """The candidate under the title its text gave it ("Mr. Bennet" for "Bennet"), when the
    bare surname is a word of a known name the title does not fit ("Elizabeth Bennet"):
    otherwise it would be her alias, or left out as a word of several names."""
    titled = next((v for v in candidate.variants if _titled(v) is not None), None)
    if titled is None or not word_of(candidate.term, entries):
        return candidate
    if name_owner(titled, entries)[0] is not None:
        return candidate
    others = tuple(v for v in candidate.variants if v != titled)
    return replace(candidate, term=titled, variants=others)


def a_persons_name(key: str) -> bool:
    """Whether a normalized name of several words is a person's by its shape: titled ("mr.
    hall", "sir henry") or opened by a given name ("henry baskerville", "laura lyons")."""
    titles, rest = _untitled(key)
    words = rest.split()
    if len(key.split()) < 2 or named_place(words):
        return False
    return bool(titles) or given_name(words[0])


def a_places_name(key: str) -> bool:
    """Whether a normalized name of several words is a place's: it ends in a word for a place,
    a surname's too ("baskerville hall", "grimpen mire"), and no title or given name opens it
    ("henry hall" is a person's)."""
    words = key.split()
    return len(words) > 1 and words[-1] in PLACE_WORDS | _PLACE_ENDS and not a_persons_name(key)


def woman_titled(key: str) -> bool:
    """Whether the normalized name opens with a woman's title ("miss bingley", "mrs. hall")."""
    titles = _untitled(key)[0]
    return bool(titles) and titles[0] in _WOMEN_TITLES


def _other_in_family(title: str | None, other: str) -> bool:
    """Whether the normalized name `other` opens with a title other than `title` where either
    tells a family's members apart: "Mrs. Darling" is not "Mr. Darling"."""
    words = other.split()
    theirs = _title(words[0]) if len(words) > 1 else None
    if title is None or theirs is None or theirs == title:
        return False
    if title in _FAMILY_TITLES and theirs in _FAMILY_TITLES:
        return _FAMILY_TITLES[title] != _FAMILY_TITLES[theirs]
    return title in _FAMILY_TITLES or theirs in _FAMILY_TITLES


# Styles of address that open a titled name and tell no one apart: read past, never kept as
# titles ("the Right Honourable Lady Catherine de Bourgh" is "Lady Catherine de Bourgh").
_STYLES = (
    ("right", "honourable"),
    ("right", "honorable"),
    ("right", "reverend"),
    ("honourable",),
    ("honorable",),
    ("reverend",),
)


def untitled(key: str) -> str:
    """A normalized name without the titles and styles that open it ("miss elizabeth bennet":
    "elizabeth bennet")."""
    return _untitled(key)[1]


def _untitled(key: str) -> tuple[tuple[str, ...], str]:
    """The titles that open a normalized name, spelled out, and the rest of it ("cap'n john
    silver": (("captain",), "john silver")); a style before them is read past (`_STYLES`); a
    last word is never a title."""
    words = key.split()
    for style in _STYLES:
        if len(words) > len(style) + 1 and tuple(words[: len(style)]) == style:
            words = words[len(style) :]
            break
    titles: list[str] = []
    while len(words) > 1 and (title := _title(words[0])) is not None:
        titles.append(title)
        words = words[1:]
    return tuple(titles), " ".join(words)


def idea_form(key: str) -> str:
    """The key under which two normalized names are forms of one idea: `form_key` without the
    "of" and "the" that join its words, "-men" read as "-man", and a people's "Men", "Folk" and
    "People" as one ("Valley of Dor" and "Valley Dor", "Beast Men" and "Beast Folk",
    "Holy Therns" and "Holy Thern", "Swine Men" and "Swine-man", "Mizzenmast Hill" and
    "Mizzen-mast Hill"; "Wolf-man", "Wolf-brute" and "Wolf-beasts")."""
    words = [word for word in key.split() if word not in ("of", "the")]
    if len(words) > 1 and words[0] in _ISLANDS:  # "Isle of Treasure" is "Treasure Island"
        words = [*words[1:], "island"]
    elif len(words) > 1 and words[-1] in _ISLANDS:
        words[-1] = "island"
    words = [w[:-3] + "man" if w.endswith("men") else w for w in words]
    if words and "-" in words[-1]:  # "wolf-man" read as "wolf man", "saint-bernard-brute" too
        head, _, last = words[-1].rpartition("-")
        words[-1:] = [head, last]
    if len(words) > 1 and words[-1] in _PEOPLE_WORDS:
        words[-1] = "folk"  # a people named by its members or as a whole: "Beast Men", "Beast Folk"
    return form_key(" ".join(words)) if words else ""


# An island named before or after its name: "Isle of Treasure" and "Treasure Island".
_ISLANDS = frozenset(("isle", "island"))

# A kind of being named by its members, as a whole or as beasts ("Wolf-man", "Wolf Folk",
# "Wolf-beasts", "Wolf-brute"; "Saint-Bernard-man" and "Saint-Bernard-creature"): one idea.
_PEOPLE_WORDS = frozenset((
    "folk", "folks", "people", "peoples", "man", "beast", "beasts", "brute", "brutes", "creature",
    "creatures",
))  # fmt: skip


def _same_form(key: str, other: str) -> bool:
    """Are two normalized names one referent's by their shape: one idea's forms (`idea_form`),
    one said the other way round (`_inverted`) or with one word more (`_one_word_more`),
    or one name with the same titles or without them ("Cap'n Smollett" and "Captain
    Smollett"; "Captain John Carter" and "John Carter", the rest a full name)?"""
    if not key or not other:
        return False
    if idea_form(key) == idea_form(other):
        return True
    for inverted, plain in ((_inverted(key), other), (_inverted(other), key)):
        if inverted is not None and idea_form(inverted) == idea_form(plain):
            return True  # "City of Emeralds" and "Emerald City"
    if _one_word_more(key, other) or _one_word_more(other, key):
        return True
    titles, rest = _untitled(key)
    other_titles, other_rest = _untitled(other)
    if rest != other_rest or not (titles or other_titles):
        return False
    return person_like(rest) or titles == other_titles


def _inverted(key: str) -> str | None:
    """A normalized "A of (the) Bs" said the other way round, "B A" ("city of emeralds": "emerald
    city", "king of the monkeys": "monkey king"), or None for any other shape."""
    words = key.split()
    if len(words) == 4 and words[2] == "the":
        words = [words[0], words[1], words[3]]
    if len(words) != 3 or words[1] != "of" or "the" in (words[0], words[2]):
        return None
    head, what = words[0], words[2]
    if len(what) > 3 and what.endswith("s") and not what.endswith("ss"):
        what = what[:-1]
    return f"{what} {head}"


def _one_word_more(short: str, long: str) -> bool:
    """Is the normalized `long` the name "X of Y" `short` with one English word more before one
    of its words, no title ("Witch of the North" and "Good Witch of the North", "King of the
    Monkeys" and "King of the Winged Monkeys")? Never a word after its last ("Mock Turtle Soup"
    is a thing of its own), nor before a name without "of" (a sentence's first word glued to
    it: "Overhead Tinker Bell")."""
    words, longer = short.split(), long.split()
    if len(longer) != len(words) + 1 or "of" not in words[1:-1]:
        return False
    for index in range(len(words)):
        if longer[:index] + longer[index + 1 :] == words:
            extra = longer[index]
            return (
                extra not in ("of", "the", "and")
                and _title(extra) is None
                and extra not in HONORIFICS
                and frequency(extra) > 0
            )
    return False


def forms_of(name: str, entries: Sequence[KnownEntry]) -> list[KnownEntry]:
    """The entries with a name that is another form of `name` (see `_same_form`)."""
    key = normalize_term(name)
    return [
        entry
        for entry in entries
        if any(_same_form(key, normalize_term(other)) for other in entry.names)
    ]


def familiar_full_names_of(name: str, entries: Sequence[KnownEntry]) -> list[KnownEntry]:
    """For a full name of two words (`Harry Jekyll`), the entries whose two-word full name has
    its surname and a given name one is a familiar form of (`Henry Jekyll`), titles aside."""
    rest = _untitled(normalize_term(name))[1]
    words = rest.split()
    if len(words) != 2 or not person_like(rest):
        return []
    found = []
    for entry in entries:
        for other in map(normalize_term, entry.names):
            theirs = _untitled(other)[1].split()
            if len(theirs) == 2 and theirs[1] == words[1] and familiar_pair(words[0], theirs[0]):
                found.append(entry)
                break
    return found


def _full_name_of_titled(name: str, entries: Sequence[KnownEntry]) -> list[KnownEntry]:
    """For a full name without a title (`Alexander Smollett`), the entries named by a title and
    its last word (`Captain Smollett`, `Squire Trelawney` of `John Trelawney`)."""
    titles, rest = _untitled(normalize_term(name))
    if titles or not person_like(rest) or rest.split()[-1] in STARTERS:
        return []
    last = rest.split()[-1]
    found = []
    for entry in entries:
        if _names_another_given(rest, entry):
            continue  # "Herbert Pocket" is not "Matthew Pocket", also "Mr. Pocket"
        for other in map(normalize_term, entry.names):
            other_titles, other_rest = _untitled(other)
            if other_titles and other_rest == last and _is_titled(other_titles[0], rest):
                found.append(entry)
                break
    # the title and surname are one person's; a full name of that surname is theirs only when
    # no one else bears the surname: "Amy March" beside "Meg March" is not "Aunt March"'s, nor
    # "Lucie Manette" "Monsieur Manette"'s beside a "Miss Manette"
    return [entry for entry in found if not surname_shared(rest, entry, entries)]


def surname_shared(full_name: str, owner: KnownEntry, entries: Sequence[KnownEntry]) -> bool:
    """Whether the surname of a full name of two words (normalized) is borne by someone else
    than `owner` among `entries`: a full name of another entry with the same surname and
    another given name, no familiar form of it ("Polly Mooney" beside "Jack Mooney"), or, for a
    given name the lists do not know as a man's, a daughter of the family ("Miss Manette") when
    `owner` is titled by the surname otherwise ("Monsieur Manette", "Doctor Manette", "Mrs.
    March"): "Lucie Manette", "Elizabeth March" may be hers (a wife, "Madame Defarge", is seldom
    named in full, and a son is no "Miss"). A
    surname borne by two is a family's: no full name of it is one of the family's by the surname
    alone. An initial or an everyday word tells no one apart ("E. D. Malone", "Citizen
    Defarge")."""
    words = untitled(normalize_term(full_name)).split()
    if len(words) != 2 or not person_like(" ".join(words)):
        return False
    given, surname = words
    if len(given.rstrip(".")) == 1 or _an_everyday_word(given) or surname in STARTERS:
        return False
    owned = [_untitled(normalize_term(name)) for name in owner.names]
    if any(
        rest.split()[-1:] == [surname]
        and (rest.split()[0] == given or familiar_pair(rest.split()[0], given))
        for _titles, rest in owned
    ):
        return False  # the owner bears that given name already ("Sir Henry Baskerville")
    # titled by the surname as no daughter is ("Monsieur Manette", "Doctor Manette", "Mrs. March")
    a_parent = any(titles and rest == surname and titles[0] != "miss" for titles, rest in owned)
    for entry in entries:
        if entry.entry_id == owner.entry_id:
            continue
        for other in map(normalize_term, entry.names):
            titles, rest = _untitled(other)
            theirs = rest.split()
            daughter = bool(titles) and titles[0] == "miss" and rest == surname
            if a_parent and daughter and not a_mans_given_name(given):
                return True  # "Miss Manette" beside "Doctor Manette", for "Lucie Manette"
            if len(theirs) != 2 or theirs[-1] != surname or not person_like(rest):
                continue
            first = theirs[0]
            if len(first.rstrip(".")) == 1 or _an_everyday_word(first):
                continue
            if first != given and not familiar_pair(first, given):
                return True
    return False


def given_names_met(
    full_name: str, owner: KnownEntry, entries: Sequence[KnownEntry]
) -> KnownEntry | None:
    """For a full name that `owner` would take by its surname alone (its names hold a title and
    that surname: "Mrs. Darling"), the other of `entries` named by all of the full name but its
    surname, no title ("Wendy Moira Angela" for "Wendy Moira Angela Darling"): the full name
    is that one's, given names and the family's name, not the titled parent's. None when the
    owner bears those given names itself, or no other entry is named so."""
    words = untitled(normalize_term(full_name)).split()
    if len(words) < 2 or not person_like(" ".join(words)):
        return None
    given, surname = " ".join(words[:-1]), words[-1]
    owned = [_untitled(normalize_term(name)) for name in owner.names]
    if not any(titles and rest == surname for titles, rest in owned):
        return None  # not taken by its surname
    if any(rest.split()[:-1] == words[:-1] or rest == given for _titles, rest in owned):
        return None
    found = [
        entry
        for entry in entries
        if entry.entry_id != owner.entry_id
        and any(normalize_term(name) == given for name in entry.names)
    ]
    return found[0] if len(found) == 1 else None


def _names_another_given(full_name: str, entry: KnownEntry) -> bool:
    """Whether the entry already has a full name (titles aside) with the surname of
    `full_name` (normalized, untitled) and another given name, no familiar form of its own:
    the title and surname it is named by are then that one's, and a second given name is
    someone else of the family ("Herbert Pocket" beside "Matthew Pocket", "Jo March" beside
    "Amy March"; an initial or an everyday word tells no one apart)."""
    given, surname = full_name.split()[0], full_name.split()[-1]
    if len(given.rstrip(".")) == 1 or _an_everyday_word(given):
        return False  # "E. D. Malone" may be "Massa Malone"'s, "Citizen Defarge" "Ernest Defarge"
    for other in map(normalize_term, entry.names):
        words = _untitled(other)[1].split()
        if len(words) < 2 or words[-1] != surname or not person_like(" ".join(words)):
            continue
        if len(words[0].rstrip(".")) == 1:
            continue  # an initial ("E. D. Malone") is anyone's given name
        if _an_everyday_word(words[0]):
            continue  # "Lake Malone" names no one else
        if words[0] != given and not familiar_pair(given, words[0]):
            return True
    return False


def _an_everyday_word(word: str) -> bool:
    """Whether the normalized word opening a name is an everyday English word and no given name
    the lists know ("lake", "citizen"; not "john", "herbert")."""
    return not given_name(word) and is_common_word(word)


def _head_of(key: str) -> str | None:
    """What a name "X of Y" names before its "of", without titles, when it is a name of its
    own of several words ("tars tarkas" of "Tars Tarkas of Thark", "lost sea" of "Lost Sea of
    Korus"); None for a title or one word ("Prince of Dusar", "Sea of Omean")."""
    if " of " not in key:
        return None
    _titles, head = _untitled(key.split(" of ", 1)[0])
    return head if len(head.split()) > 1 and head.split()[0] not in TITLE_WORDS else None


def of_forms(name: str, entries: Sequence[KnownEntry]) -> list[KnownEntry]:
    """The entries that are one referent with `name` as "X of Y" and "X": "Tars Tarkas of Thark"
    and "Tars Tarkas", "Lost Sea" and "Lost Sea of Korus" (X a name of several words)."""
    key = normalize_term(name)
    head = _head_of(key)
    own = idea_form(head if head is not None else _untitled(key)[1])
    if head is None and len(_untitled(key)[1].split()) < 2:
        return []
    found = []
    for entry in entries:
        names = [normalize_term(n) for n in entry.names]
        if head is not None and any(_head_of(other) == head and other != key for other in names):
            continue  # "Wicked Witch of the West" is not the "Wicked Witch of the East"
        for other in names:
            other_head = _head_of(other)
            if head is not None and other_head is None:
                match = idea_form(_untitled(other)[1]) == own
            elif head is None and other_head is not None:
                match = idea_form(other_head) == own
            else:
                match = False
            if match:
                found.append(entry)
                break
    return found


def land_named_of(name: str, entries: Sequence[KnownEntry]) -> list[KnownEntry]:
    """For a place of the land named after what follows its "of" ("Strait of Bab-el-Mandeb",
    "Island of Salcette"), the entries whose whole name that is (`Bab-el-Mandeb`): the land met
    first by its own name, as `_short_form` finds it the other way round."""
    key = normalize_term(name)
    if " of " not in key:
        return []
    head, _, what = key.partition(" of ")
    what = what.removeprefix("the ")
    if not what or not _LAND & set(head.split()) or len(head.split()) > 2:
        return []
    return [e for e in entries if what in (normalize_term(n) for n in e.names)]


def _titled_full_name_of(name: str, entries: Sequence[KnownEntry]) -> list[KnownEntry]:
    """For a title and a full name (`Miss Mary Sutherland`, `Lady Catherine de Bourgh`), the
    entries named by the same title and its first or last word (`Miss Sutherland`, `Lady
    Catherine`): the titled form a story calls the person by, said once in full."""
    titles, rest = _untitled(normalize_term(name))
    words = rest.split()
    if not titles or not person_like(rest) or words[0] in STARTERS or words[-1] in STARTERS:
        return []
    found = []
    for entry in entries:
        for other in map(normalize_term, entry.names):
            other_titles, other_rest = _untitled(other)
            if other_titles == titles and other_rest in (words[0], words[-1]):
                found.append(entry)
                break
    return found


def named_before_of(name: str, entries: Sequence[KnownEntry]) -> list[KnownEntry]:
    """For a name "X of Y" whose X is no title or English word (`Lestrade of Scotland Yard`,
    `Master Words of the Jungle`), the entries whose whole name is X (`Lestrade`, `Master
    Words`): X said with where it belongs ("Prince of Dusar" and "Sea of Omean" name a title
    and a word, not "Prince" or "Sea"; nor does "Jeddak of Ptarth" name the entry "Jeddaks",
    a title the story names in the plural and before names)."""
    key = normalize_term(name)
    if " of " not in key:
        return []
    head = key.split(" of ", 1)[0]
    if not head or (" " not in head and (_title(head) is not None or frequency(head) >= 3.0)):
        return []
    found = []
    for entry in entries:
        names = [normalize_term(other) for other in entry.names]
        if head not in names:
            continue
        # a kind or title of the story's own, not one referent: named in the plural
        # ("Jeddaks") or before a name ("Dator Yersted" of "Dator of the First Born")
        if any(other == head + "s" or other.startswith(head + " ") for other in names):
            continue
        found.append(entry)
    return found


# Endings that make a people or its adjective of a place's name ("Tharkian" of "Thark",
# "Barsoomian" of "Barsoom", "Zodangan" of "Zodanga", "Heliumite" of "Helium", "Upper-worlders"
# of "Upper-world").
_PEOPLE_ENDINGS = ("ians", "ian", "ites", "ite", "etic", "ans", "an", "ese", "ers", "er", "ns", "n")


def _place_of_people(key: str) -> set[str]:
    """The place names a one-word people's name may be made from ("tharkian": "thark",
    "zodangans": "zodanga")."""
    places = set()
    for ending in _PEOPLE_ENDINGS:
        stem = key[: -len(ending)]
        if key.endswith(ending) and len(stem) >= 4:
            if ending.startswith("n") and not stem.endswith("a"):
                continue  # only "Zodanga-n": "-n" after a place's "a"
            places.add(stem)
    return places


def people_of(name: str, entries: Sequence[KnownEntry]) -> list[KnownEntry]:
    """The entries of the place a one-word people's name is made from, or of the people named
    from the one-word place `name` (`Tharkian` and `Thark`, `Zodangans` and `Zodanga`; one
    hyphenated word is one word: `Upper-worlders` and `Upper-world`)."""
    key = normalize_term(name)
    if not key or len(name.split()) > 1 or not name[:1].isupper():
        return []
    found = []
    for entry in entries:
        for surface in entry.names:
            other = normalize_term(surface)
            if len(surface.split()) > 1 or other == key:
                continue
            if other in _place_of_people(key) or key in _place_of_people(other):
                found.append(entry)
                break
    return found


# A name is spelled another way when one long word (at least this many letters) has one letter
# changed, added or dropped before its last (an ending makes a plural or a people).
_SPELLED_CHARS = 7


def spellings_of(name: str, entries: Sequence[KnownEntry]) -> list[KnownEntry]:
    """The entries whose one-word name the one-word `name`, a word English does not know, spells
    with one letter changed, added or dropped ("Hampsted" of "Hampstead"), both of at least
    `_SPELLED_CHARS` letters: one place or person spelled two ways, not a plural or a people."""
    key = normalize_term(name)
    if " " in key or len(key) < _SPELLED_CHARS or not name[:1].isupper() or frequency(key) > 0:
        return []
    found = []
    for entry in entries:
        for other in map(normalize_term, entry.names):
            if (
                " " not in other
                and len(other) >= _SPELLED_CHARS
                and one_letter_apart(key, other, keep_last=True)
            ):
                found.append(entry)
                break
    return found


def name_owner(name: str, entries: Sequence[KnownEntry]) -> tuple[KnownEntry | None, str]:
    """The one entry a short, pet or titled form of a name belongs to, and how; (None, "")
    when none or several. Never an entry named with a title of the other sex ("Lord
    Bracknell" is not "Lady Bracknell", "Mr. Mooney" not "Mrs. Mooney": husband and wife)."""
    entries = [entry for entry in entries if not titles_of_other_sex(name, entry)]
    for finder, how in (
        (word_of, "is part of the name of"),
        (pet_name_of, "is a pet name of"),
        (_titled_of, "is a title and name of"),
        (forms_of, "is another form of the name of"),
        (familiar_full_names_of, "is, by a familiar given name, the full name of"),
        (_full_name_of_titled, "is the full name of"),
        (of_forms, "is one referent with"),
        (land_named_of, "is the land named after"),
        (_titled_full_name_of, "is the titled full name of"),
        (people_of, "is the people or place of"),
        (spellings_of, "is another spelling of"),
        (modified_forms_of, "is the same name, with or without a word before it, as"),
    ):
        owners = finder(name, entries)
        if len(owners) == 1:
            return owners[0], how
        if owners:
            return None, ""
    return None, ""


# What an establishment is called by its name alone ("the Black Swan" of "Black Swan Hotel").
_ESTABLISHMENTS = frozenset(("hotel", "inn", "tavern", "arms", "station"))


def _plain_words(key: str) -> list[str] | None:
    """The words of a normalized name of two words or more, hyphened parts apart, with no
    connector and no title ("upper swandam lane"; None for "king of bohemia", "miss doran")."""
    words = [word for word in re.split(r"[\s\-‐‑]+", key) if word]
    if len(words) < 2 or _CONNECTORS.intersection(words) or _untitled(key)[0]:
        return None
    return None if words[0] in STARTERS else words


def modified_forms_of(name: str, entries: Sequence[KnownEntry]) -> list[KnownEntry]:
    """The entries one of whose names is this name of two words or more with words before it
    ("Swandam Lane" of "Upper Swandam Lane", "Salt Lake" of "Great Salt Lake"), or the other way
    round when those words are no everyday English ("Saxe-Coburg Square" of "Coburg Square"; not
    "Overhead Tinker Bell", a word glued to a name where a sentence opens): words before a name
    say which one, or where, not what else it is. And an
    establishment's name without its last word ("Black Swan" of "Black Swan Hotel"). Not a name
    with a connector or a title ("Wicked Witch of the West", "Miss Doran"), nor words before it
    that tell a family apart ("Young John Turner" is not "John Turner"), nor a longer name whose
    last word is new ("Maple White Land" is no form of "Maple White")."""
    words = _plain_words(normalize_term(name))
    if words is None:
        return []
    found = []
    for entry in entries:
        for other in map(normalize_term, entry.names):
            theirs = _plain_words(other)
            if theirs is None or theirs == words:
                continue
            short, long = sorted((words, theirs), key=len)
            if len(short) < 2 or len(short) == len(long):
                continue
            extra = long[: len(long) - len(short)]
            if (
                long[-len(short) :] == short
                and not HONORIFICS.intersection(extra)
                and (short is words or all(frequency(word) < ORDINARY_ZIPF for word in extra))
            ) or (
                short is words
                and long[: len(short)] == short
                and set(long[len(short) :]) <= _ESTABLISHMENTS
            ):
                found.append(entry)
                break
    return found
