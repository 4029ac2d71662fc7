"""A SillyTavern World Info file (a "lorebook"): the glossary for a role-play front end.

SillyTavern imports a World Info JSON whose `entries` object maps a uid to an entry: `key` (the
words that trigger it: here the term and its aliases), `content` (what is inserted into the
prompt: the definition), `comment` (the title shown in its editor) and the activation fields of
its entry template. Live entries only (not rejected, merged or deleted); `[[links]]` become plain
names; the order follows the glossary's ids so the file is stable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from terrarium_dagster.exports.files import write_text_atomic
from terrarium_dagster.exports.references import linked_views
from terrarium_dagster.glossary.models import EntryView

LOREBOOK_FILE = "lorebook.json"
_LINK = re.compile(r"\[\[([^\[\]|]+)(?:\|([^\[\]]+))?\]\]")

# SillyTavern's defaults for a new entry (its `newWorldInfoEntryTemplate`): triggered by its keys,
# inserted before the character description, always when triggered.
_ENTRY_DEFAULTS: Mapping[str, Any] = {
    "keysecondary": [],
    "constant": False,
    "vectorized": False,
    "selective": True,
    "selectiveLogic": 0,
    "addMemo": True,
    "order": 100,
    "position": 0,
    "disable": False,
    "excludeRecursion": False,
    "preventRecursion": False,
    "delayUntilRecursion": 0,
    "probability": 100,
    "useProbability": True,
    "depth": 4,
    "group": "",
    "groupOverride": False,
    "groupWeight": 100,
    "scanDepth": None,
    "caseSensitive": None,
    "matchWholeWords": None,
    "useGroupScoring": None,
    "automationId": "",
    "role": 0,
    "sticky": None,
    "cooldown": None,
    "delay": None,
}


def plain_definition(text: str) -> str:
    """The definition without wiki markup: `[[Target|label]]` → label, `[[Target]]` → Target."""
    return _LINK.sub(lambda match: match.group(2) or match.group(1), text).strip()


def lorebook_entries(entries: Sequence[EntryView]) -> list[EntryView]:
    """The entries a lorebook carries, in uid order: live ones (not rejected, merged or deleted)
    by id."""
    return [
        entry
        for entry in linked_views(sorted(entries, key=lambda item: item.id))
        if not entry.deleted and entry.status not in ("rejected", "merged")
    ]


def lorebook_entry(uid: int, entry: EntryView) -> dict[str, Any]:
    return {
        "uid": uid,
        "key": list(dict.fromkeys([entry.term, *entry.aliases])),
        "comment": entry.term,
        "content": plain_definition(entry.definition),
        "displayIndex": uid,
        **_ENTRY_DEFAULTS,
        "extensions": {"terrarium": {"entry_id": entry.id, "status": entry.status}},
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
