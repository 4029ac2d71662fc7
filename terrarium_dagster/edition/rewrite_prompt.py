"""The `# Task: edition` message, and the judgement of its answer.

Message layout (the offline backend composes its answer from it; keep it stable)::

    # Task: edition
    entry E<id>: <term> · as of thread <key> (the reader has read up to here)
    aliases: <a>; <b>                     (or "(none)")
    status: <status>

    ## Working definition
    <the annotator's definition as of the thread>

    ## Revisions
    - r<id> <action> (thread <thread>): <definition after it, one line>

    ## Sources
    >><post> (thread <key>) "<quote>"
    <the post's text around the quote>
    >><post> (nearby): <text>

    ## Linked entries
    - [[<term>]]: <its definition as of the thread>     (or "(none)")

    ## Citable posts
    >><post> >><post> ...

    ## Answer format
    <the rules>

The answer is plain Markdown: a short lead sentence, then what the story has shown.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from terrarium_dagster.context.compaction.text import strip_thinking

TASK_LINE = "# Task: edition"
SECTIONS = (
    "Working definition",
    "Revisions",
    "Sources",
    "Linked entries",
    "Citable posts",
    "Answer format",
)
CITATION = re.compile(r">>(\d+)")
MIN_NAME_CHARS = 3  # shorter names are too likely to be ordinary letters of a word

#: The edition's system prompt: no tools, no conversation; the message holds the evidence.
EDITION_SYSTEM_PROMPT = (
    "You write the reader's glossary of a long serialized story: one entry at a time, for a "
    "reader who has read up to a given thread and no further. Use only the evidence in the "
    "message; never guess what happens later."
)

ANSWER_RULES = (
    "Write the entry for a reader, in Markdown, 40 to 150 words: first one short lead sentence "
    "saying what the term is, then what the story has shown of it, in story order. Link other "
    "entries as [[Term]] (only the linked entries above). Cite posts as >>post, only the "
    "citable posts above, after the sentence they support. Use only this evidence: nothing the "
    "reader has not read yet. No heading, no preamble: the entry's text only."
)

REFUSAL_OPENINGS = (
    "i cannot",
    "i can't",
    "i can not",
    "i'm sorry",
    "i am sorry",
    "sorry,",
    "as an ai",
    "i'm unable",
    "i am unable",
    "i won't",
)


@dataclass(frozen=True)
class SourceShown:
    """A source post shown to the model: its quote, its text around it, the posts near it."""

    post_id: int
    thread_key: str
    quote: str
    excerpt: str
    nearby: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True)
class EditionRequest:
    """What one entry's edition request shows the model."""

    entry_id: int
    term: str
    thread_key: str
    aliases: tuple[str, ...]
    status: str
    definition: str
    revisions: tuple[tuple[int, str, str, str], ...]  # (id, action, thread key, definition)
    sources: tuple[SourceShown, ...]
    linked: tuple[tuple[str, str], ...]  # (term, definition as of the thread)

    @property
    def citable(self) -> tuple[int, ...]:
        posts: list[int] = []
        for source in self.sources:
            posts.append(source.post_id)
            posts.extend(post for post, _ in source.nearby)
        return tuple(sorted(set(posts)))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def edition_message(request: EditionRequest) -> str:
    """The `# Task: edition` message for one entry."""
    aliases = "; ".join(request.aliases) if request.aliases else "(none)"
    lines = [
        TASK_LINE,
        f"entry E{request.entry_id}: {request.term} · as of thread {request.thread_key} "
        "(the reader has read up to here)",
        f"aliases: {aliases}",
        f"status: {request.status}",
        "",
        "## Working definition",
        _one_line(request.definition) or "(none)",
        "",
        "## Revisions",
    ]
    for revision_id, action, thread_key, definition in request.revisions:
        lines.append(f"- r{revision_id} {action} (thread {thread_key}): {_one_line(definition)}")
    if not request.revisions:
        lines.append("(none)")
    lines += ["", "## Sources"]
    for source in request.sources:
        quote = f' "{_one_line(source.quote)}"' if source.quote else ""
        lines.append(f">>{source.post_id} (thread {source.thread_key}){quote}")
        if source.excerpt:
            lines.append(_one_line(source.excerpt))
        for post_id, text in source.nearby:
            lines.append(f">>{post_id} (nearby): {_one_line(text)}")
    if not request.sources:
        lines.append("(none)")
    lines += ["", "## Linked entries"]
    for term, definition in request.linked:
        lines.append(f"- [[{term}]]: {_one_line(definition)}")
    if not request.linked:
        lines.append("(none)")
    lines += ["", "## Citable posts"]
    lines.append(" ".join(f">>{post}" for post in request.citable) or "(none)")
    lines += ["", "## Answer format", ANSWER_RULES]
    return "\n".join(lines)


def sections(message: str) -> dict[str, str]:
    """The message's `## ` sections by title (the offline backend reads them)."""
    found: dict[str, str] = {}
    title: str | None = None
    body: list[str] = []
    for line in message.splitlines():
        if line.startswith("## "):
            if title is not None:
                found[title] = "\n".join(body).strip()
            title, body = line[3:].strip(), []
        elif title is not None:
            body.append(line)
    if title is not None:
        found[title] = "\n".join(body).strip()
    return found


def answer_text(content: str | None) -> str:
    """The answer's text, thinking set aside."""
    return strip_thinking(content or "").strip()


_WORD = re.compile(r"\w+")


def _words(text: str) -> list[str]:
    """The words of `text`, folded as names are compared (NFKC, case folded)."""
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


class NameMatcher:
    """Finds which of a set of names occur in a text as whole words (case and punctuation
    aside): every name's words are looked up among the text's runs of as many words."""

    def __init__(self, names: Iterable[str]) -> None:
        self.keys: dict[str, str] = {}
        for name in names:
            words = _words(name)
            if words[:1] == ["the"] and len(words) > 1:
                words = words[1:]
            key = " ".join(words)
            if len(key) >= MIN_NAME_CHARS:
                self.keys[name] = key
        self.longest = max((key.count(" ") + 1 for key in self.keys.values()), default=0)

    def found_in(self, text: str) -> list[str]:
        if not self.keys:
            return []
        words = _words(text)
        runs = {
            " ".join(words[i : i + n])
            for n in range(1, self.longest + 1)
            for i in range(len(words) - n + 1)
        }
        return sorted(name for name, key in self.keys.items() if key in runs)

    def names(self) -> list[str]:
        return sorted(self.keys)


def _names_in(text: str, names: Iterable[str] | NameMatcher) -> list[str]:
    matcher = names if isinstance(names, NameMatcher) else NameMatcher(names)
    return matcher.found_in(text)


@dataclass(frozen=True)
class Judgement:
    """Why an answer is refused (None: taken)."""

    reason: str | None


def judge_answer(
    text: str,
    *,
    citable: Sequence[int],
    later_names: Iterable[str] | NameMatcher,
) -> Judgement:
    """Refuse a rewrite that decides nothing (empty, a refusal), cites a post it was not shown,
    or names a term the reader meets only in a later thread."""
    if not text.strip():
        return Judgement("empty")
    if text.strip().lower().startswith(REFUSAL_OPENINGS):
        return Judgement("a refusal, not an entry")
    shown = set(citable)
    foreign = sorted({int(n) for n in CITATION.findall(text)} - shown)
    if foreign:
        cited = ", ".join(f">>{post}" for post in foreign)
        return Judgement(f"it cites {cited}, which it was not shown")
    later = _names_in(text, later_names)
    if later:
        return Judgement(
            f"it names {', '.join(later)}, which the reader meets only in a later thread"
        )
    return Judgement(None)


def later_terms(text: str, later_names: Iterable[str] | NameMatcher) -> list[str]:
    """The later names `text` holds (the Dagster check and the tests use the same rule)."""
    return _names_in(text, later_names)


REFUSED_LEAD = "Your entry was refused:"


def refusal_note(reason: str) -> str:
    """What a refused answer is told when it is asked again."""
    return (
        f"{REFUSED_LEAD} {reason}. Write it again from the evidence above only, "
        "citing only the citable posts and naming nothing the reader has not met yet."
    )
