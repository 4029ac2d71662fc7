"""The offline backend's edition: an entry's reader text composed from the evidence in its
`# Task: edition` message, with fixed patterns (no model).

It can only rearrange what it is shown: the lead is the working definition's first sentence,
the body the sources' quotes in story order, each cited, then the aliases and the linked
entries. It cannot summarise, reconcile two sources that disagree, or say what a quote means.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from terrarium_dagster.edition.rewrite_prompt import REFUSED_LEAD, TASK_LINE, sections

MAX_QUOTES = 5
QUOTE_CHARS = 160
_HEAD = re.compile(r"^entry E\d+: (.*?) · as of thread", re.MULTILINE)
_SOURCE = re.compile(r'^>>(\d+) \(thread [^)]*\)(?: "(.*)")?$')
_LINKED = re.compile(r"^- \[\[(.+?)\]\]:")
_ALIASES = re.compile(r"^aliases: (.*)$", re.MULTILINE)
_LINK = re.compile(r"\[\[([^\[\]|]+?)(?:\|([^\[\]]*?))?\]\]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def _unlinked(text: str) -> str:
    return _LINK.sub(lambda m: (m.group(2) or m.group(1)).strip(), text)


def _lead(term: str, definition: str) -> str:
    plain = _unlinked(" ".join(definition.split())).strip()
    if not plain or plain == "(none)":
        return f"**{term}** is a name the story has used."
    first = _SENTENCE_END.split(plain, maxsplit=1)[0].split(";")[0].strip().rstrip(".")
    if first.lower().startswith(term.lower()):
        first = first[len(term) :].lstrip(" ,:—-")
    return f"**{term}**: {first}." if first else f"**{term}** is a name the story has used."


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return text[: limit - 1].rsplit(" ", 1)[0] + "…"


def edition_task(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """The `# Task: edition` message a conversation asks about: its last user message, or the
    one before a refusal note (a rewrite asked again)."""
    users = [m for m in messages if m.get("role") == "user"]
    if not users:
        return None
    last = str(users[-1].get("content") or "")
    if last.startswith(TASK_LINE):
        return last
    if last.startswith(REFUSED_LEAD):
        for message in reversed(users[:-1]):
            content = str(message.get("content") or "")
            if content.startswith(TASK_LINE):
                return content
    return None


def compose_edition(message: str) -> str:
    """The reader's text of the entry `message` describes (a `# Task: edition` message)."""
    head = _HEAD.search(message)
    term = head.group(1).strip() if head else "This term"
    parts = sections(message)
    lines = [_lead(term, parts.get("Working definition", ""))]
    quotes: list[str] = []
    mentions: list[str] = []
    for line in parts.get("Sources", "").splitlines():
        match = _SOURCE.match(line.strip())
        if match is None:
            continue
        post, quote = match.group(1), (match.group(2) or "").strip()
        if quote and len(quotes) < MAX_QUOTES:
            inner = quote.strip("“”\"' ")  # a quote of speech keeps one pair of marks
            quotes.append(f"- “{_cut(inner, QUOTE_CHARS)}” >>{post}")
        elif not quote:
            mentions.append(f">>{post}")
    if quotes:
        lines += ["", "What the story has shown:", *quotes]
    if mentions:
        lines += ["", f"Also mentioned in {', '.join(mentions[:MAX_QUOTES])}."]
    aliases = _ALIASES.search(message)
    if aliases and aliases.group(1).strip() != "(none)":
        lines += ["", f"Also called {aliases.group(1).strip().replace('; ', ', ')}."]
    linked = [
        match.group(1).strip()
        for line in parts.get("Linked entries", "").splitlines()
        if (match := _LINKED.match(line.strip()))
    ]
    if linked:
        lines += ["", "See also " + ", ".join(f"[[{name}]]" for name in linked) + "."]
    return "\n".join(lines)
