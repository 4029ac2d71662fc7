"""Which glossary entries the agent is shown with a scene.

First the entries whose term or an alias occurs in the scene (exact and normalized matching, in
order of first occurrence), then full-text matches for the scene's candidate terms that have no
entry yet (near misses, spelling variants), until the token budget is spent.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from terrarium_dagster.context.prompts import SHOWN_DEFINITION_CHARS
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.store.models import Entry
from terrarium_dagster.store.normalize import normalize_text

CHARS_PER_TOKEN = 4
DEFINITION_CHARS = SHOWN_DEFINITION_CHARS  # a definition a tool may replace is shown whole
FTS_QUERIES = 8
FTS_HITS_PER_QUERY = 2


@functools.lru_cache(maxsize=16384)
def match_key(text: str) -> str:
    """Text folded for matching terms in prose (`glossary.normalize.normalize_text`: case,
    dashes, apostrophes, possessive "'s" and punctuation folded): `f" {key} " in padded_text` is
    a whole-word match, and "Varen’s blade" mentions Varen. Kept per text: a scene's draft is
    matched against every name of the glossary, again at each judgement of the block."""
    return normalize_text(text)


@dataclass(frozen=True, slots=True)
class RelevantEntry:
    entry: Entry
    reason: str  # "occurs" or "similar"
    offset: int  # first occurrence in the folded scene text, or a large number for "similar"


def entry_line(
    entry: Entry, *, definition_chars: int = DEFINITION_CHARS, short: bool = False
) -> str:
    """The one-line form the agent sees: `- [E12] Term (aliases: a; b) [status]: definition`.

    `short` replaces the definition with "…" (for an entry already shown unchanged above). A
    rejected entry is its id, term and status only: `- [E12] Term [rejected]`.
    """
    definition = " ".join(entry.definition.split())
    if entry.status == "rejected":
        return f"- [E{entry.id}] {entry.term} [rejected]"
    if short:
        definition = "…"
    elif len(definition) > definition_chars:
        definition = definition[: definition_chars - 1].rstrip() + "…"
    aliases = f" (aliases: {'; '.join(entry.aliases)})" if entry.aliases else ""
    return f"- [E{entry.id}] {entry.term}{aliases} [{entry.status}]: {definition}"


def relevant_entries(
    store: GlossaryStore,
    scene_text: str,
    *,
    candidates: Sequence[str] = (),
    token_budget: int | None = 1500,
    entries: Iterable[Entry] | None = None,
) -> list[RelevantEntry]:
    """Entries to show with a scene, most relevant first, within `token_budget` tokens (None:
    every match; the caller decides how much of each to show)."""
    padded = f" {match_key(scene_text)} "
    occurring: list[RelevantEntry] = []
    shown: set[int] = set()
    pool = store.glossary.entries() if entries is None else entries
    for entry in pool:
        if entry.deleted or entry.status == "merged":
            continue
        offsets = [
            padded.find(f" {key} ")
            for key in (match_key(name) for name in (entry.term, *entry.aliases))
            if key
        ]
        found = [offset for offset in offsets if offset >= 0]
        if found:
            occurring.append(RelevantEntry(entry, "occurs", min(found)))
            shown.add(entry.id)
    occurring.sort(key=lambda item: (item.offset, item.entry.id))

    similar: list[RelevantEntry] = []
    for candidate in list(candidates)[:FTS_QUERIES]:
        for hit in store.glossary.search(candidate, limit=FTS_HITS_PER_QUERY):
            entry = hit.entry
            if entry.id in shown or entry.deleted or entry.status == "merged":
                continue
            shown.add(entry.id)
            similar.append(RelevantEntry(entry, "similar", 1 << 30))

    if token_budget is None:
        return [*occurring, *similar]
    chosen: list[RelevantEntry] = []
    spent = 0
    for item in (*occurring, *similar):
        cost = len(entry_line(item.entry)) // CHARS_PER_TOKEN + 1
        if spent + cost > token_budget:
            break
        chosen.append(item)
        spent += cost
    return chosen
