"""What the agent is told: the system prompt and the user messages the engine sends.

Every text here is deterministic (no timestamps, no ids that change between runs) so that the
prompt prefix stays byte-identical and vLLM's prefix cache keeps hitting. The first line of each
user message is fixed (`# Scene <id>`, `# Task: <name>`): the offline backend recognises what it is
asked by that line alone, so the first lines below must not change.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any, NotRequired, TypedDict, Unpack

from terrarium_dagster.jsonform import canonical_json

SCENE_HEADING = "# Scene "
SUMMARIZE_CHUNK_HEADING = "# Task: summarize_chunk"
SUMMARIZE_THREAD_HEADING = "# Task: summarize_thread"
FOLD_STORY_HEADING = "# Task: fold_story"
FLUSH_HEADING = "# Task: flush"
STORY_SO_FAR_HEADING = "# Story so far"
PREVIOUS_SUMMARY_HEADING = "## Previous summary"
STORY_ACK = "Noted."
SCENE_DONE = "SCENE DONE"  # beside tool calls: no confirmation round needed if they all succeed

#: The longest definition shown whole (Known entries, search); the longest one a tool call may
#: write or replace, so a definition the model is asked to replace is one it could see whole.
SHOWN_DEFINITION_CHARS = 400

#: Kinds of entry: the enum of the tools' `kind` and the tag an entry carries for it.
KINDS: tuple[str, ...] = (
    "character",
    "place",
    "faction",
    "creature",
    "item",
    "magic",
    "title",
    "custom",
    "event",
    "term",
)

#: What earns an entry, how it is named and merged, how it is defined: one text, shown to the
#: annotator (in SYSTEM_PROMPT) and to the curator (in its instructions) alike.
ENTRY_RULES = """\
What earns an entry. Test: would a reader of this story need it explained, because the story \
gives it a meaning no dictionary or encyclopedia gives?
Not entries: real-world names in their usual sense (Rome, Tuesday, Latin); ordinary words, also \
when capitalised only to start a sentence; forum mechanics (votes, tallies, write-ins, rolls, QM, \
players' names).
An entry after all: a real name or ordinary word the story redefines (a god called Mars); define \
the story's sense.
Name: the fullest name the story uses, singular (Ambrose Quill, not Quill; Wyrm, not Wyrms). \
Short forms, titles, nicknames and spellings are its aliases.
One thing, two entries: merge the shorter-named into the fullest-named (equal: newer into older).
Definitions are for a reader partway through: what it is first, present tense, then what matters; \
one to three sentences; no plot recap; [[Term]] links entries. Use only the posts shown: nothing \
you know of the book or the world, nothing not yet revealed.
"""

#: What an entry's status means (the known-entries lines and tool results show it).
STATUS_RULES = """\
Status: tentative = not reviewed yet; confirmed = reviewed, kept; rejected = not an entry: leave \
it, never create it again.
"""

SYSTEM_PROMPT = f"""\
You build a glossary of a long serialized story, read scene by scene in story order.

{ENTRY_RULES}
{STATUS_RULES}
A "# Scene" message has "## Known entries", the entries it names ([E12] term (aliases) [status]: \
definition), and "## Story", its posts ([post 123]).
- Record all the scene adds in ONE message: every tool call at once, text {SCENE_DONE}; you hear \
back only if a call fails. Nothing to record: answer "nothing new".
- Update Known entries, never create them again. Create any other name directly, no search \
needed (a duplicate is refused with its id).
- Sources are found for you. post_ids only for an earlier post; quote only words copied exactly.
"# Task:" messages ask for something else; do what they say.
"""


#: How a novel's annotator is told the same (`terrarium import`: chapters of paragraphs, no forum,
#: no quest master): the words that would call it a forum are the only ones that change, so the
#: two prompts are the same length, about, and the scene's `[post 123]` ids are what post_ids take.
_BOOK_WORDING = (
    ("a long serialized story,", "a novel,"),
    ("; forum mechanics (votes, tallies, write-ins, rolls, QM, players' names)", ""),
    ("Use only the posts shown", "Use only the text shown"),
    (
        '"## Story", its posts ([post 123])',
        '"## Story", its paragraphs, each under its id ([post 123])',
    ),
    ("post_ids only for an earlier post", "post_ids only for an earlier paragraph"),
)


def _reworded(text: str, wording: Sequence[tuple[str, str]]) -> str:
    for old, new in wording:
        if old not in text:  # a rule reworded above without this table: fail at import
            raise ValueError(f"the prompt no longer says {old!r}")
        text = text.replace(old, new)
    return text


BOOK_SYSTEM_PROMPT = _reworded(SYSTEM_PROMPT, _BOOK_WORDING)


def system_prompt(*, book: bool) -> str:
    """The annotator's system prompt: a quest's, or a novel's (`corpus.story.is_book`)."""
    return BOOK_SYSTEM_PROMPT if book else SYSTEM_PROMPT


_THINKING = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)


def says_scene_done(content: str | None) -> bool:
    """The answer's text (not its thinking: a `<think>` block a server without a reasoning
    parser leaves in the content) says SCENE DONE."""
    return SCENE_DONE in _THINKING.sub("", content or "")


def canonical_tools(tools: Sequence[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """A deep copy of the tool schemas with every object's keys sorted, in the given tool order.

    Tool schemas travel in the request's `tools`, which the chat template renders into the system
    part of the prompt; sorted keys make that rendering byte-identical however the dicts were built.
    """
    if tools is None:
        return None
    return [json.loads(canonical_json(tool)) for tool in tools]


def tools_json(tools: Sequence[dict[str, Any]] | None) -> str:
    """The tool schemas as one canonical JSON string (for hashing and token estimates)."""
    return canonical_json(list(tools or []))


def entry_ref(entry_id: int) -> str:
    return f"[E{entry_id}]"


def entry_list(entry_ids: Iterable[int]) -> str:
    """Entry ids in id order, each as `[E<id>]`: `[E1], [E2], [E9]`, or `(none)`."""
    ids = sorted(set(entry_ids))
    return ", ".join(entry_ref(entry_id) for entry_id in ids) if ids else "(none)"


def entry_refs(entry_ids: Iterable[int]) -> str:
    """Entry ids in id order, runs of three or more as ranges: `[E1]–[E4], [E9]`, or `(none)`.

    The compact form, for lists that may grow long (`parse_entry_refs` reads it back)."""
    ids = sorted(set(entry_ids))
    if not ids:
        return "(none)"
    parts: list[str] = []
    start = previous = ids[0]
    for entry_id in [*ids[1:], None]:
        if entry_id is not None and entry_id == previous + 1:
            previous = entry_id
            continue
        if previous - start >= 2:
            parts.append(f"{entry_ref(start)}–{entry_ref(previous)}")
        else:
            parts.extend(entry_ref(i) for i in range(start, previous + 1))
        if entry_id is not None:
            start = previous = entry_id
    return ", ".join(parts)


def parse_entry_refs(text: str) -> list[int]:
    """The entry ids `text` mentions, ranges `[E1]–[E4]` expanded, in id order."""
    found: set[int] = set()
    for first, last in re.findall(r"\bE(\d+)\]?(?:\s*[–-]\s*\[?E(\d+)\b)?", text):
        low = int(first)
        high = int(last) if last else low
        if high - low > 100_000:
            high = low
        found.update(range(low, high + 1))
    return sorted(found)


def scene_message(
    *,
    scene_id: str,
    thread_id: int,
    title: str,
    scene_number: int,
    scene_count: int,
    first_post_id: int,
    last_post_id: int,
    known_entries: Sequence[str],
    story: str,
) -> str:
    """The user message for one scene (`# Scene <scene_id>`).

    `scene_number` is 1-based. `known_entries` are lines in the form
    `- [E<id>] <term> (aliases: a; b) [<status>]: <definition>` (see agent.relevant.entry_line).
    `story` is the scene text as Scene.text renders it (`[post <id>]` blocks), which names the
    posts: `first_post_id` and `last_post_id` are not repeated in the heading (tokens).
    """
    known = "\n".join(known_entries) if known_entries else "(none)"
    return (
        f"{SCENE_HEADING}{scene_id}\n"
        f"thread {thread_id} {json.dumps(title, ensure_ascii=False)} · "
        f"scene {scene_number} of {scene_count}\n"
        f"\n## Known entries\n{known}\n"
        f"\n## Story\n{story.strip()}\n"
    )


def _previous(previous_summary: str | None) -> str:
    text = (previous_summary or "").strip()
    return f"\n{PREVIOUS_SUMMARY_HEADING}\n{text}\n" if text else ""


#: How every summary is written: the code appends the entry ids and the posts it covers.
SUMMARY_RULES = (
    "Plain text, no tool calls, only what the posts say. Entry ids and post numbers are added "
    "for you: do not write them."
)


def _keep_previous(previous_summary: str | None, what: str) -> str:
    if not (previous_summary or "").strip():
        return ""
    return (
        f"Keep every fact of the previous summary below (in fewer words if need be) and add "
        f"what {what} tell; do not summarize it again. "
    )


class SummaryAsk(TypedDict):
    """What a request for a thread's summary names (the keyword arguments of both requests).

    `entry_ids` are not listed in the request: the code appends the summary's entry ids and
    posts (`context.compaction.summaries.accept_summary`), so the model spends no tokens on them.
    """

    thread_id: int
    scene_ids: Sequence[str]
    entry_ids: NotRequired[Iterable[int]]
    max_words: int
    previous_summary: NotRequired[str | None]


def summarize_chunk_message(**ask: Unpack[SummaryAsk]) -> str:
    """Ask for the running summary of a long thread, covering `scene_ids` (shown above it)."""
    thread_id, scene_ids, max_words = ask["thread_id"], ask["scene_ids"], ask["max_words"]
    previous_summary = ask.get("previous_summary")
    return (
        f"{SUMMARIZE_CHUNK_HEADING}\n"
        f"thread {thread_id} · scenes {scene_ids[0]} .. {scene_ids[-1]} ({len(scene_ids)} scenes)\n"
        f"scene ids: {', '.join(scene_ids)}\n"
        "\nThe scenes listed above are about to leave your context. Write the summary of this "
        f"thread up to the end of scene {scene_ids[-1]}: who did what, where, what changed, what "
        f"is unresolved. {_keep_previous(previous_summary, 'these scenes')}"
        f"At most {max_words} words. {SUMMARY_RULES}\n"
        f"{_previous(previous_summary)}"
    )


def summarize_thread_message(**ask: Unpack[SummaryAsk]) -> str:
    """Ask for the summary of a finished thread, whose last scenes are shown above it (the
    previous summary, the thread's running summary, covers the earlier ones)."""
    thread_id, scene_ids, max_words = ask["thread_id"], ask["scene_ids"], ask["max_words"]
    previous_summary = ask.get("previous_summary")
    span = (
        f"scenes {scene_ids[0]} .. {scene_ids[-1]} ({len(scene_ids)} scenes above)"
        if scene_ids
        else "no scenes above"
    )
    return (
        f"{SUMMARIZE_THREAD_HEADING}\n"
        f"thread {thread_id} · {span}\n"
        f"\nThread {thread_id} is finished. Write its summary for a reader who continues the "
        "story: what happened, who and what matters next. "
        f"{_keep_previous(previous_summary, 'the scenes above')}"
        f"At most {max_words} words. {SUMMARY_RULES}\n"
        f"{_previous(previous_summary)}"
    )


def fold_story_message(
    *,
    thread_summaries: Sequence[tuple[int, str, Sequence[int]]],
    max_words: int,
    previous_summary: str | None = None,
) -> str:
    """Ask for the story so far, rewritten to include finished threads' summaries (written by
    the model: the code never asks to fold placeholder text, see compaction.fold)."""
    thread_ids = ", ".join(str(thread_id) for thread_id, _, _ in thread_summaries)
    parts = [
        f"{FOLD_STORY_HEADING}\n",
        f"threads: {thread_ids}\n",
        "\nRewrite the story so far so that it includes the finished threads below, in story "
        "order, keeping what matters later (characters, places, open threads). "
        f"{_keep_previous(previous_summary, 'the threads below')}"
        f"At most {max_words} words. Plain text, no tool calls, only what the summaries say; "
        "keep the [E<id>] of the most important entries.\n",
        _previous(previous_summary),
        "\n## Threads to fold\n",
    ]
    for thread_id, text, _ in thread_summaries:
        parts.append(f"### Thread {thread_id}\n{text.strip()}\n")
    return "".join(parts)


def flush_message(scene_ids: Sequence[str]) -> str:
    """The pre-compaction flush: one chance to record what is not written yet."""
    span = f"scenes {scene_ids[0]} .. {scene_ids[-1]}" if scene_ids else "older turns"
    return (
        f"{FLUSH_HEADING}\n"
        f"leaving context: {span}\n"
        "\nOlder turns of this conversation are about to leave your context. If you learned "
        "anything there that is not in the glossary yet, record it now, every tool call in one "
        "message (post_ids of the posts that name it). If everything is recorded, answer "
        "'nothing to record' without calling tools.\n"
    )
