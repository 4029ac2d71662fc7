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


def lorebook(entries: Sequence[EntryView], *, name: str, description: str) -> dict[str, Any]:
    live = [
        entry
        for entry in linked_views(sorted(entries, key=lambda item: item.id))
        if not entry.deleted and entry.status not in ("rejected", "merged")
    ]
    book: dict[str, Any] = {"name": name, "description": description, "entries": {}}
    for uid, entry in enumerate(live):
        keys = list(dict.fromkeys([entry.term, *entry.aliases]))
        book["entries"][str(uid)] = {
            "uid": uid,
            "key": keys,
            "comment": entry.term,
            "content": plain_definition(entry.definition),
            "displayIndex": uid,
            **_ENTRY_DEFAULTS,
            "extensions": {"terrarium": {"entry_id": entry.id, "status": entry.status}},
        }
    return book


def export_lorebook(
    entries: Sequence[EntryView], path: Path, *, name: str, description: str
) -> None:
    book = lorebook(entries, name=name, description=description)
    write_text_atomic(path, json.dumps(book, ensure_ascii=False, indent=2) + "\n")
