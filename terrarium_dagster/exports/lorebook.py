"""A SillyTavern World Info file (a "lorebook"): the glossary for a role-play front end.

SillyTavern imports a World Info JSON whose `entries` object maps a uid to an entry, and names the
world after the file it was given (its `name` field is not read): the file is therefore named
after the story (`<story>.json`, see `lorebook_file`). Each entry carries every field of
SillyTavern's new-entry template (`newWorldInfoEntryDefinition` in its `world-info.js`; the
World Info page of its docs explains them), set so that the book helps a chat instead of
flooding it:

- `key`: the term and its aliases, less any single word common in English (Zipf frequency
  ≥ `COMMON_KEY_ZIPF` by `wordfreq`: "always", "scarlet", "withdrew" would fire on ordinary
  prose). A name written with a capital is a key whatever its frequency ("Dorothy", "Darcy",
  "Scarecrow", "Friday"), and its entry matches case-sensitively (`caseSensitive: true`), so
  "the scarecrow in the field" does not fire it; except a word that opens sentences or a
  title alone ("Well", "Still", "Lord": `STARTERS`, `HONORIFICS`) and the most frequent words
  (Zipf ≥ `CAPITALISED_KEY_ZIPF`: "Will", "May"), which would fire wherever a sentence opens
  with them. An entry left with no key is not in the book: it could only fire by accident.
  A name with an apostrophe is a key with either mark, the book's and the keyboard's
  ("Plutarch’s Lives", "Plutarch's Lives"): SillyTavern matches keys letter for letter.
- `matchWholeWords: true`: a three-letter name does not fire inside "miss" or "door".
- `content`: the reader's edition as plain text where one is written; else the definition as
  plain text (`[[links]]` become names) without its company list ("appears with X, Y"),
  which is the reader's index, not lore; and `preventRecursion: true`:
  an entry's content never activates further entries, so four names in a message insert four
  entries, not a hundred.
- `order`: higher is inserted later and kept first when the budget runs out; it grows with how
  many posts mention the entry (`100 + mentions`, at most 1000), and the uids (and the editor's
  `displayIndex`) list the most-mentioned entries first.
- `comment`: the term (the title in the editor); `position` 0 (before the character's
  description), `depth` 4, `probability` 100 and the rest SillyTavern's own defaults.
- `extensions.terrarium`: the glossary entry's id, status and mention count.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from terrarium_dagster.exports.entry_records import drop_citations
from terrarium_dagster.exports.files import write_text_atomic
from terrarium_dagster.exports.references import linked_views
from terrarium_dagster.store.models import EntryView
from terrarium_dagster.store.vocabulary import frequency
from terrarium_dagster.terms.english import HONORIFICS, STARTERS

LOREBOOK_FILE = "lorebook.json"
COMMON_KEY_ZIPF = 3.0
CAPITALISED_KEY_ZIPF = 5.4  # "John" (5.4) is a name's key; "Oh", "Hope", "Will" are not
BASE_ORDER = 100
MAX_ORDER = 1000
_LINK = re.compile(r"\[\[([^\[\]|]+)(?:\|([^\[\]]+))?\]\]")
# The offline describer's company clause: "; appears with [[A]], [[B]]" (or a sentence of it).
_COMPANY = re.compile(r"(?:[;,]\s*|(?<=[.!?])\s+|^)appears with [^;.]*(?:[;.]|$)", re.I)
_SINGLE_WORD = re.compile(r"^[^\W\d_]+(?:['’][^\W\d_]+)?$")
_UNSAFE_NAME = re.compile(r'[\\/:*?"<>|\x00-\x1f]+')

# Every field of SillyTavern's new-entry template, with its default unless said otherwise.
_ENTRY_DEFAULTS: Mapping[str, Any] = {
    "keysecondary": [],
    "constant": False,
    "vectorized": False,
    "selective": True,
    "selectiveLogic": 0,
    "addMemo": True,
    "position": 0,
    "disable": False,
    "ignoreBudget": False,
    "excludeRecursion": False,
    "preventRecursion": True,  # not the default: content never activates other entries
    "matchPersonaDescription": False,
    "matchCharacterDescription": False,
    "matchCharacterPersonality": False,
    "matchCharacterDepthPrompt": False,
    "matchScenario": False,
    "matchCreatorNotes": False,
    "delayUntilRecursion": 0,
    "probability": 100,
    "useProbability": True,
    "depth": 4,
    "outletName": "",
    "group": "",
    "groupOverride": False,
    "groupWeight": 100,
    "scanDepth": None,
    "caseSensitive": None,
    "matchWholeWords": True,  # not the default (null: the global setting, off unless changed)
    "useGroupScoring": None,
    "automationId": "",
    "role": 0,
    "sticky": None,
    "cooldown": None,
    "delay": None,
    "triggers": [],
}


def lorebook_file(story: str) -> str:
    """The book's file name: the story's, since SillyTavern names the world after the file."""
    name = " ".join(_UNSAFE_NAME.sub(" ", story).split()).strip(". ")
    if not name or name.lower() in ("glossary", "manifest"):  # never another export's file
        return LOREBOOK_FILE
    return f"{name}.json"


def plain_definition(text: str) -> str:
    """The definition without wiki markup: `[[Target|label]]` → label, `[[Target]]` → Target."""
    return _LINK.sub(lambda match: match.group(2) or match.group(1), text).strip()


def lore_content(definition: str) -> str:
    """What an entry inserts: the plain definition without its company list nor citations."""
    text = _COMPANY.sub(lambda m: "." if m.group(0).rstrip().endswith(".") else "", definition)
    text = plain_definition(drop_citations(text)).strip()
    text = re.sub(r"\s*;\s*\.$|\s*;\s*$", ".", text)
    return re.sub(r"\.\.+$", ".", text)


def edition_content(edition: str) -> str:
    """What an entry with a reader's edition inserts: its text as plain prose (no citations,
    no emphasis, no list marks)."""
    text = drop_citations(edition).replace("**", "")
    lines = [re.sub(r"^[-*]\s+", "", line.strip()) for line in text.splitlines()]
    return plain_definition(" ".join(line for line in lines if line))


def is_common_key(key: str) -> bool:
    """A single word common in English that no capital makes a name's: as a key it would fire
    on ordinary prose (`is_name_key` tells the capitalised ones kept)."""
    text = key.strip()
    if not _SINGLE_WORD.match(text) or frequency(text) < COMMON_KEY_ZIPF:
        return False
    return not is_name_key(text)


def is_name_key(key: str) -> bool:
    """A capitalised single word common in English that is kept as a name's key, matched
    case-sensitively: not a word that opens sentences, a title alone, or one of the most
    frequent words ("Well", "Lord", "Will")."""
    text = key.strip()
    return (
        bool(_SINGLE_WORD.match(text))
        and text[:1].isupper()
        and not text.isupper()
        and frequency(text) >= COMMON_KEY_ZIPF
        and frequency(text) < CAPITALISED_KEY_ZIPF
        and text.casefold() not in STARTERS | HONORIFICS
    )


def lorebook_keys(entry: EntryView) -> list[str]:
    names = dict.fromkeys(" ".join(name.split()) for name in [entry.term, *entry.aliases])
    keys: dict[str, None] = {}
    for name in names:
        if name and not is_common_key(name):
            keys[name] = None
            # SillyTavern matches a key letter for letter: the book's "Plutarch’s Lives" never
            # fires on a typed "Plutarch's Lives", nor "Dakh'ren" on a reply's "Dakh’ren"
            for twin in (name.replace("’", "'"), name.replace("'", "’")):
                keys.setdefault(twin, None)
    return list(keys)


def case_sensitive(keys: Sequence[str]) -> bool | None:
    """True when a key is a common word kept only as a capitalised name (`is_name_key`): the
    entry then fires on "Scarecrow", never on "scarecrow"; else SillyTavern's default (None)."""
    return True if any(is_name_key(key) for key in keys) else None


def mentions(entry: EntryView) -> int:
    """How many posts the entry's sources cite."""
    return len({item.post_id for item in entry.provenance})


def lorebook_entries(entries: Sequence[EntryView]) -> list[EntryView]:
    """The entries a lorebook carries, in uid order: live ones (not rejected, merged or deleted)
    with a key left, the most mentioned first (then by id)."""
    chosen = [
        entry
        for entry in linked_views(sorted(entries, key=lambda item: item.id))
        if not entry.deleted and entry.status not in ("rejected", "merged") and lorebook_keys(entry)
    ]
    return sorted(chosen, key=lambda entry: (-mentions(entry), entry.id))


def lorebook_entry(uid: int, entry: EntryView) -> dict[str, Any]:
    count = mentions(entry)
    keys = lorebook_keys(entry)
    return {
        "uid": uid,
        "key": keys,
        "comment": entry.term,
        "content": edition_content(entry.edition)
        if entry.edition
        else lore_content(entry.definition),
        "displayIndex": uid,
        "order": min(MAX_ORDER, BASE_ORDER + count),
        **_ENTRY_DEFAULTS,
        "caseSensitive": case_sensitive(keys),
        "extensions": {
            "terrarium": {"entry_id": entry.id, "status": entry.status, "mentions": count}
        },
    }


def lorebook(entries: Sequence[EntryView], *, name: str, description: str) -> dict[str, Any]:
    book: dict[str, Any] = {"name": name, "description": description, "entries": {}}
    for uid, entry in enumerate(lorebook_entries(entries)):
        book["entries"][str(uid)] = lorebook_entry(uid, entry)
    return book


_TAIL = '\n    "0": 0\n  }\n}\n'


_UID = 987_654_321_098_765


def lorebook_template(entry: EntryView) -> str:
    """An entry of the book as `lorebook_text` writes it, its uid left open (`lorebook_fragment`
    fills it in): an entry's uid is its rank, which moves when an earlier entry goes."""
    body = json.dumps(lorebook_entry(_UID, entry), ensure_ascii=False, indent=2)
    return f'    "{_UID}": ' + body.replace("\n", "\n    ")


def lorebook_fragment(uid: int, entry: EntryView, template: str | None = None) -> str:
    """One entry of the book as `lorebook_text` writes it."""
    text = template if template is not None else lorebook_template(entry)
    # Only these three places hold the uid unquoted (quotes inside strings are escaped).
    return (
        text.replace(f'    "{_UID}": ', f'    "{uid}": ', 1)
        .replace(f'"uid": {_UID},', f'"uid": {uid},', 1)
        .replace(f'"displayIndex": {_UID},', f'"displayIndex": {uid},', 1)
    )


def lorebook_text(name: str, description: str, fragments: Sequence[str]) -> str:
    """The book as indented JSON, from its entries' `lorebook_fragment`s: the bytes
    `json.dumps(lorebook(...), ensure_ascii=False, indent=2)` gives, plus a newline."""
    book: dict[str, Any] = {"name": name, "description": description, "entries": {}}
    if not fragments:
        return json.dumps(book, ensure_ascii=False, indent=2) + "\n"
    book["entries"] = {"0": 0}
    head = json.dumps(book, ensure_ascii=False, indent=2) + "\n"
    return head[: -len(_TAIL)] + "\n" + ",\n".join(fragments) + "\n  }\n}\n"


def export_lorebook(
    entries: Sequence[EntryView], path: Path, *, name: str, description: str
) -> None:
    fragments = [lorebook_fragment(uid, e) for uid, e in enumerate(lorebook_entries(entries))]
    write_text_atomic(path, lorebook_text(name, description, fragments))
