"""What a scene message shows of the story and of the glossary: the story text fitted to its room,
the `## Known entries` lines, which of them the conversation already holds, and the entries it
shows as they no longer are.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from terrarium_dagster.agent.relevant import RelevantEntry, entry_line, match_key
from terrarium_dagster.context import prompts
from terrarium_dagster.context.state import Message
from terrarium_dagster.corpus.units import Scene
from terrarium_dagster.store.models import Entry
from terrarium_dagster.store.normalize import form_key
from terrarium_dagster.terms.english import is_english_word

MAX_KNOWN_LINES = 80
CHARS_PER_TOKEN = 4
_LINE_ID = re.compile(r"- \[E(\d+)\] ")  # a known-entry line's entry id


def fit_story(scene: Scene, max_chars: int) -> str:
    """The scene text, with its longest posts cut so that the whole fits `max_chars`.

    A cut post keeps its head and says how much is missing, so a huge post cannot push a scene
    over the context budget.
    """
    text = scene.text
    if len(text) <= max_chars:
        return text
    overhead = len(text) - sum(len(post.text) for post in scene.posts)
    room = max(len(scene.posts) * 200, max_chars - overhead)
    lengths = sorted(len(post.text) for post in scene.posts)
    cap = lengths[-1]
    # the largest per-post cap that fits: shorter posts stay whole
    for index, length in enumerate(lengths):
        remaining = len(lengths) - index
        spent = sum(lengths[:index])
        if spent + remaining * length > room:
            cap = max(200, (room - spent) // remaining)
            break
    blocks = []
    for post in scene.posts:
        body = post.text
        if len(body) > cap:
            missing = len(body) - cap
            body = (
                body[:cap].rstrip()
                + f"\n[… {missing} more characters of post {post.id} not shown …]"
            )
        blocks.append(f"[post {post.id}]\n{body}")
    return "\n\n".join(blocks)


def lines_shown(history: Sequence[Message]) -> set[str]:
    """Known-entry lines already in the conversation (scene messages still in the history).

    Derived from the saved context itself, so a resumed run renders exactly what an
    uninterrupted one would.
    """
    shown: set[str] = set()
    for message in history:
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, str):
            continue
        if not content.startswith(prompts.SCENE_HEADING):
            continue
        shown.update(line for line in content.splitlines() if line.startswith("- [E"))
    return shown


def known_lines(
    relevant: Sequence[RelevantEntry],
    shown: set[str],
    budget: int,
    before: frozenset[str] = frozenset(),
) -> list[str]:
    """The `## Known entries` lines of a scene, within about `budget` tokens of definitions.
    A line of `before` (one a serial conversation would hold already: an earlier scene of a
    drafted block listed it) is listed whole and spends none of it.

    A line already in the conversation (an earlier scene message still in the history) is not
    repeated: the model reads it there. Every other entry that occurs in the scene is listed, so
    the model never re-creates one: with its definition while the budget allows, else by name
    with "…" (glossary_search reads it) — but in full, whatever the budget, when an older line
    of it is in the conversation, which a "…" would send the model back to. Similar entries
    (full-text matches) are listed only while the budget lasts.
    """
    lines: list[str] = []
    spent = 0
    in_view = entry_ids(shown)
    for item in relevant:
        line = entry_line(item.entry)
        if line in shown:
            continue
        if line in before and len(lines) < MAX_KNOWN_LINES:
            lines.append(line)
            continue
        cost = len(line) // CHARS_PER_TOKEN + 1
        if spent + cost <= budget or (
            item.entry.id in in_view and item.reason == "occurs" and len(lines) < MAX_KNOWN_LINES
        ):
            # an older line of the entry is in the conversation: its "…" would point there
            lines.append(line)
            spent += cost
        elif item.reason == "occurs" and len(lines) < MAX_KNOWN_LINES:
            short = entry_line(item.entry, short=True)
            cost = len(short) // CHARS_PER_TOKEN + 1
            if short in shown:
                continue
            if spent + cost > budget * 2:  # the block keeps within the room: name the rest
                left = sum(1 for other in relevant if other.reason == "occurs") - len(lines)
                lines.append(f"- … {max(1, left)} more known entries occur here: search first")
                break
            lines.append(short)
            spent += cost
    return lines


def stale_in_view(
    text: str,
    shown: set[str],
    listed: set[int],
    get_entries: Callable[[Sequence[int]], list[Entry]],
) -> list[RelevantEntry]:
    """Entries the conversation shows as they no longer are (a known-entry line of an earlier
    scene message, `shown`, changed since), not `listed` already, whose names share a word with
    `text` that is no English word: a model that reads a short form ("Piskwick") as such an
    entry ("East Piskwick") would rewrite its definition from the old line and drop what was
    added since. Listed as they are now, the newest line in view is the entry's own."""
    ids = entry_ids(shown) - listed
    if not ids:
        return []
    words = {word for word in match_key(text).split() if not is_english_word(word)}
    stale: list[RelevantEntry] = []
    for entry in get_entries(sorted(ids)):
        if entry.deleted or entry.status == "merged" or entry_line(entry) in shown:
            continue
        names = (entry.term, *entry.aliases)
        if any(word in words for name in names for word in match_key(name).split()):
            stale.append(RelevantEntry(entry, "occurs", 0))
    return stale


def name_words(text: str) -> set[str]:
    """The words of `text` that are no English word, each folded to its form (`form_key`: a
    plural or possessive ending dropped), so "Warhoons" in a scene is a word of "Warhoon"."""
    return {form_key(word) for word in match_key(text).split() if not is_english_word(word)}


def names_a_word(entry: Entry, words: set[str]) -> bool:
    """Whether a word of `entry`'s term or aliases, folded as `name_words` folds, is in `words`."""
    names = (entry.term, *entry.aliases)
    return any(form_key(word) in words for name in names for word in match_key(name).split())


def entry_ids(lines: set[str]) -> set[int]:
    """The entry ids of known-entry lines (`- [E12] ...`)."""
    return {int(found.group(1)) for line in lines if (found := _LINE_ID.match(line))}


def without_shown_lines(message: Message, history: Sequence[Message]) -> Message:
    """A drafted scene's message as committed: its known-entry lines that an earlier scene of the
    block already put in the conversation are left out (the model reads them there), so a block
    grows the history no faster than serial scenes do."""
    content = message.get("content")
    if message.get("role") != "user" or not isinstance(content, str):
        return message
    if not content.startswith(prompts.SCENE_HEADING):
        return message
    shown = lines_shown(history)
    kept = [line for line in content.split("\n") if not (line.startswith("- [E") and line in shown)]
    return {**message, "content": "\n".join(kept)}
