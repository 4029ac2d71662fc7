"""A benchmark model that forgets like a real one: what it writes depends on what it is shown.

`ForgetfulBackend` answers the OpenAI chat-completions protocol like the offline backend (it is
one, with another annotator for `# Scene` messages): summaries, flushes, curation and summon are
the offline backend's answers. A scene is annotated the way a model with limited attention does
it, decided only from the request's messages, never from hidden state:

- **What it sees as entries**: the `## Known entries` lines of the scene message (and of the
  earlier scene messages still in the conversation, which the engine does not repeat), and the
  entries that the tool results earlier in its turn show (search hits, its own creates).
- **The scene's names**: runs of capitalised words in the story (a sentence's first words only
  when they are no English words, or written capitalised inside a sentence too); a name that
  is one word of another name of the scene is that thing's short form. **The scene's fact** of
  a thing: the rest of the first sentence that opens with one of its names ("Tars Tarkas keeps
  a bronze lantern." -> "Keeps a bronze lantern.").
- **A thing it sees as an entry** (a name of the entry; or a short form that is one word of
  exactly one entry's name; or a fuller name one of whose words is a one-word entry) is updated:
  the scene's posts, the form not yet an alias added as one, and, when the fact is new to the
  definition it sees, a definition **rewritten from what it is shown**: the definition it saw,
  then this scene's fact (`add_fact` only where it was not shown the definition whole). An
  update from a stale view therefore loses what was added since.
- **A thing it does not see**: at most `lookups` of them per scene (in the order the scene names
  them) are looked up with `glossary_search` in its first turn; those the search does not find
  are created in the next, **named by the form the scene uses** (a scene that says only "Tars"
  creates `Tars` when it sees no `Tars Tarkas`). The rest are left: no attention left for them.
- Writes go out in one turn marked `SCENE DONE`; a create refused as a duplicate gets an update
  of the entry the error names (its posts) in the next turn; then the final answer, the offline
  backend's (`Scene <id> done: created E12 ...`); after `max_turns` turns, the final answer.

Same request, same answer (the reply is a function of the messages alone), whatever the timing.
Used by the concurrency tests and `benchmarks/bench_throughput.py --model forgetful`; not by the
product.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from terrarium_dagster.backends.offline import (
    DEFAULT_MAX_MODEL_LEN,
    MAX_POSTS_PER_CALL,
    Call,
    KnownEntry,
    OfflineBackend,
    Reply,
    SceneAnnotator,
    SceneMessage,
    _calls_after,
    _entry_number,
    parse_scene_message,
    with_earlier_known,
)
from terrarium_dagster.backends.scene_annotator import refused_creates
from terrarium_dagster.backends.scene_message import ShownEntry
from terrarium_dagster.backends.wire import content_text, last_user_index
from terrarium_dagster.context.prompts import SCENE_DONE, SHOWN_DEFINITION_CHARS
from terrarium_dagster.store.normalize import normalize_term
from terrarium_dagster.terms.english import is_english_word
from terrarium_dagster.terms.text_search import find_term

__all__ = [
    "DEFAULT_LOOKUPS",
    "FORGETFUL_MODEL",
    "ForgetfulAnnotator",
    "ForgetfulBackend",
    "SceneThing",
    "SeenEntry",
    "definition_facts",
    "resolve",
    "scene_reply",
    "scene_things",
]

FORGETFUL_MODEL = "terrarium-forgetful"
DEFAULT_LOOKUPS = 3
MAX_TURNS = 4
NO_FACT = "Named in the story."

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_CLAUSE_END = re.compile(r"(?<=[.!?;])\s+")
_CAPITALISED_RUN = re.compile(r"[A-Z][\w'’-]*(?:[ \t]+[A-Z][\w'’-]*)*")
#: Words that open a sentence before a name ("And Tars ..."): not part of the name.
_OPENERS = frozenset(
    {
        "a",
        "an",
        "and",
        "as",
        "at",
        "but",
        "by",
        "for",
        "from",
        "he",
        "her",
        "his",
        "i",
        "in",
        "it",
        "its",
        "my",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "we",
        "when",
        "while",
        "with",
        "you",
        "your",
    }
)


@dataclass(frozen=True, slots=True)
class SceneThing:
    """A thing the scene names: its fullest name there, every form used, its fact, its posts."""

    name: str
    forms: tuple[str, ...]
    fact: str | None
    posts: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class SeenEntry(ShownEntry):
    """An entry as the model sees it: its names, status and the definition it was shown."""

    definition: str | None  # None: not shown whole (a "…" line, a cut definition, a create)


def _fact_key(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


def definition_facts(definition: str) -> list[str]:
    """The sentences (and `;` clauses) of a definition, normalized (case, punctuation, links,
    spaces): the facts `testing.quality` follows to find lost ones."""
    return [key for key in map(_fact_key, _CLAUSE_END.split(definition)) if key]


def scene_names(story: str) -> list[tuple[str, bool]]:
    """The capitalised names of `story` in order of occurrence, each with whether it opens a
    sentence. A run of English words that opens a sentence ("The", "Tars") is a name only when
    the story also writes one of its words capitalised inside a sentence."""
    runs: list[tuple[list[str], bool]] = []
    for sentence in _SENTENCE_END.split(story):
        sentence = re.sub(r"^\[post \d+[^\]\n]*\]\s*", "", sentence.strip())
        for match in _CAPITALISED_RUN.finditer(sentence):
            words = match.group(0).split()
            opening = not sentence[: match.start()].strip(" \"'“‘(*_")
            while opening and len(words) > 1 and words[0].casefold() in _OPENERS:
                words.pop(0)
            if all(word.casefold() in _OPENERS for word in words):
                continue  # "The", "I"
            runs.append((words, opening))
    inside = {word for words, opening in runs if not opening for word in words}
    found: list[tuple[str, bool]] = []
    for words, opening in runs:
        english = all(is_english_word(word) for word in words)
        if opening and english and not inside.intersection(words):
            continue  # a sentence's ordinary first word
        found.append((" ".join(words), opening))
    return found


def scene_things(scene: SceneMessage) -> list[SceneThing]:
    """The things `scene` names, in order of first mention (see the module doc)."""
    names: list[str] = []
    for _post_id, text in scene.posts or ((0, scene.story),):
        for name, _opening in scene_names(text):
            if name not in names:
                names.append(name)
    fuller: dict[str, str] = {}
    for name in names:
        owners = [
            other for other in names if other != name and " " not in name and name in other.split()
        ]
        if len(owners) == 1:
            fuller[name] = owners[0]
    order: list[str] = []
    forms: dict[str, list[str]] = {}
    for name in names:
        own = fuller.get(name, name)
        if own not in forms:
            order.append(own)
            forms[own] = []
        forms[own].append(name)
    things = []
    for name in order:
        used = tuple(dict.fromkeys([name, *forms[name]]))
        things.append(SceneThing(name, used, _fact_of(scene, used), _posts_of(scene, used)))
    return things


def _fact_of(scene: SceneMessage, forms: Sequence[str]) -> str | None:
    for _post_id, text in scene.posts or ((0, scene.story),):
        for sentence in _SENTENCE_END.split(text):
            sentence = sentence.strip()
            for form in sorted(forms, key=len, reverse=True):
                if sentence.startswith(form + " "):
                    rest = sentence[len(form) :].strip().rstrip(".!?").strip()
                    if rest:
                        return rest[0].upper() + rest[1:] + "."
    return None


def _posts_of(scene: SceneMessage, forms: Sequence[str]) -> tuple[int, ...]:
    posts = [pid for pid, text in scene.posts if any(find_term(text, form) for form in forms)]
    return tuple(posts[:MAX_POSTS_PER_CALL])


def _shown(entry: KnownEntry) -> SeenEntry:
    whole = entry.definition and not entry.truncated and entry.definition not in ("…", "...")
    return SeenEntry(
        entry.entry_id,
        entry.term,
        entry.aliases,
        entry.status,
        entry.definition if whole else None,
    )


def seen_entries(scene: SceneMessage, calls: Sequence[Call]) -> list[SeenEntry]:
    """Every entry the model sees: the known-entry lines, then what its tool results show (a
    later view of an entry replaces an earlier one)."""
    seen: dict[int, SeenEntry] = {entry.entry_id: _shown(entry) for entry in scene.known}
    for call in calls:
        result = call.result or {}
        if not result.get("ok"):
            continue
        if call.name == "glossary_search":
            for hit in result.get("hits") or []:
                number = _entry_number(hit.get("id"))
                if number is None:
                    continue
                definition = str(hit.get("definition", ""))
                seen[number] = SeenEntry(
                    number,
                    str(hit.get("term", "")),
                    tuple(str(alias) for alias in hit.get("aliases") or []),
                    str(hit.get("status", "")),
                    definition if definition and not definition.endswith("…") else None,
                )
        elif call.name == "glossary_create":
            entry = result.get("entry") or {}
            number = _entry_number(entry.get("id"))
            if number is not None:
                aliases = tuple(str(alias) for alias in call.args.get("aliases") or [])
                seen[number] = SeenEntry(
                    number, str(entry.get("term", "")), aliases, "tentative", None
                )
    return [entry for entry in seen.values() if entry.status != "merged"]


def resolve(thing: SceneThing, entries: Sequence[SeenEntry]) -> tuple[SeenEntry, str | None] | None:
    """The entry the model takes `thing` to be, with a form of the thing to add as its alias
    (None: nothing to add); None when it sees no entry for it (see the module doc)."""
    keys = {normalize_term(form): form for form in thing.forms}
    for entry in entries:
        names = {normalize_term(name) for name in entry.names}
        if names & set(keys):
            missing = [form for key, form in keys.items() if key not in names]
            return entry, (missing[0] if missing else None)
    for form in thing.forms:
        key = normalize_term(form)
        if " " in key:
            continue
        owners = [
            entry
            for entry in entries
            if any(key in normalize_term(name).split() for name in entry.names if " " in name)
        ]
        if len({entry.entry_id for entry in owners}) == 1:
            return owners[0], form
    words = set(normalize_term(thing.name).split())
    if len(words) > 1:
        owners = [
            entry
            for entry in entries
            if any(
                " " not in normalize_term(name) and normalize_term(name) in words
                for name in entry.names
            )
        ]
        if len({entry.entry_id for entry in owners}) == 1:
            return owners[0], thing.name
    return None


def _has_fact(definition: str | None, fact: str) -> bool:
    return definition is not None and _fact_key(fact) in definition_facts(definition)


class ForgetfulAnnotator:
    """The scene decisions of the forgetful model (see the module doc)."""

    def __init__(self, *, lookups: int = DEFAULT_LOOKUPS, max_turns: int = MAX_TURNS) -> None:
        if lookups < 0:
            raise ValueError(f"lookups must be at least 0, not {lookups}")
        self.lookups = lookups
        self.max_turns = max_turns

    def reply(
        self, scene: SceneMessage, turns: int, calls: Sequence[Call], tools: set[str]
    ) -> Reply:
        if turns >= self.max_turns or not {"glossary_create", "glossary_update"} <= tools:
            return Reply(content=SceneAnnotator._final(scene, calls, None))
        things = scene_things(scene)
        seen = seen_entries(scene, calls)
        wrote = any(call.name in ("glossary_create", "glossary_update") for call in calls)
        if wrote:
            return self._after_writes(scene, calls)
        searched = {
            normalize_term(str(call.args.get("query", "")))
            for call in calls
            if call.name == "glossary_search"
        }
        if not calls and self.lookups and "glossary_search" in tools:
            unseen = [thing for thing in things if resolve(thing, seen) is None]
            queries = [thing.name for thing in unseen[: self.lookups]]
            if queries:  # results needed: no done mark
                return Reply(
                    tool_calls=tuple(("glossary_search", {"query": q, "limit": 3}) for q in queries)
                )
        writes: list[tuple[str, dict[str, Any]]] = []
        for thing in things:
            found = resolve(thing, seen)
            if found is not None:
                entry, alias = found
                if entry.status != "rejected":
                    writes.append(("glossary_update", self._update(thing, entry, alias)))
            elif normalize_term(thing.name) in searched:
                writes.append(("glossary_create", self._create(thing)))
        if writes:
            return Reply(content=SCENE_DONE, tool_calls=tuple(writes))
        return Reply(content=SceneAnnotator._final(scene, calls, None))

    @staticmethod
    def _update(thing: SceneThing, entry: SeenEntry, alias: str | None) -> dict[str, Any]:
        args: dict[str, Any] = {"entry_id": f"E{entry.entry_id}"}
        if alias is not None:
            args["add_aliases"] = [alias]
        if thing.fact is not None and not _has_fact(entry.definition, thing.fact):
            rewritten = f"{entry.definition} {thing.fact}" if entry.definition else None
            if rewritten is not None and len(rewritten) <= SHOWN_DEFINITION_CHARS:
                args["definition"] = rewritten  # from what it saw: stale if the view was
            else:
                args["add_fact"] = thing.fact
        if thing.posts:
            args["post_ids"] = list(thing.posts)
        return args

    @staticmethod
    def _create(thing: SceneThing) -> dict[str, Any]:
        args: dict[str, Any] = {"term": thing.name, "definition": thing.fact or NO_FACT}
        others = [form for form in thing.forms if form != thing.name]
        if others:
            args["aliases"] = others
        if thing.posts:
            args["post_ids"] = list(thing.posts)
        return args

    @staticmethod
    def _after_writes(scene: SceneMessage, calls: Sequence[Call]) -> Reply:
        """A write failed (else the loop had stopped): a create refused as a duplicate becomes
        an update of the entry the error names (its posts); then the final answer."""
        answered = {
            _entry_number(call.args.get("entry_id"))
            for call in calls
            if call.name == "glossary_update"
        }
        pending: list[tuple[str, dict[str, Any]]] = []
        for call, existing in refused_creates(calls, answered):
            args: dict[str, Any] = {"entry_id": f"E{existing}"}
            if call.args.get("post_ids"):
                args["post_ids"] = list(call.args["post_ids"])
            pending.append(("glossary_update", args))
        if pending:
            return Reply(content=SCENE_DONE, tool_calls=tuple(pending))
        return Reply(content=SceneAnnotator._final(scene, calls, None))


class ForgetfulBackend(OfflineBackend):
    """The offline backend with the forgetful annotator for scenes (see the module doc)."""

    def __init__(
        self,
        *,
        model: str = FORGETFUL_MODEL,
        max_model_len: int = DEFAULT_MAX_MODEL_LEN,
        lookups: int = DEFAULT_LOOKUPS,
    ) -> None:
        super().__init__(model=model, max_model_len=max_model_len)
        self.forgetful = ForgetfulAnnotator(lookups=lookups)

    def answer(self, messages: Sequence[Mapping[str, Any]], tools: set[str]) -> Reply:
        last_user = last_user_index(messages)
        if last_user is not None:
            scene = parse_scene_message(content_text(messages[last_user].get("content")).lstrip())
            if scene is not None:
                scene = with_earlier_known(scene, messages[:last_user])
                turns, calls = _calls_after(messages[last_user + 1 :])
                return self.forgetful.reply(scene, turns, calls, tools)
        return super().answer(messages, tools)


def scene_reply(messages: Sequence[Mapping[str, Any]], lookups: int = DEFAULT_LOOKUPS) -> Reply:
    """The forgetful model's reply to a conversation whose last user message is a scene (for
    tests that look at a decision without a server)."""
    tools = {"glossary_search", "glossary_create", "glossary_update"}
    return ForgetfulBackend(lookups=lookups).answer(list(messages), tools)
