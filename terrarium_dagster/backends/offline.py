"""The offline backend: vLLM's OpenAI-compatible API served in-process by a deterministic program.

`OfflineBackend` is an `httpx.BaseTransport`; give it to `httpx.Client(transport=...)` or to
`ChatClient(config, transport=...)`. It serves

- `GET /v1/models`: one model, `terrarium-offline`, with `max_model_len` (default 32768);
- `POST /tokenize`: a deterministic count (about 4 characters a token, see `count_prompt_tokens`);
- `POST /v1/chat/completions`: the deterministic annotator below;
- `GET /health`.

It is stateless: every answer is a function of the request alone (the same request gives the same
bytes), so a run resumed after a crash receives exactly the answers it would have received.
Malformed requests get HTTP 400 with an OpenAI-style error body; an unknown model 404; a prompt
plus `max_tokens` beyond `max_model_len` gets vLLM's 400 "maximum context length" error.

What it answers is decided by the first line of the LAST user message (the prompt conventions
of `context/prompts.py`) and by the assistant/tool turns that follow that message:

`# Scene <id>`: parse `## Known entries` and `## Story`; candidates = `find_candidates(story)`
minus known terms and aliases (at most `max_creates` of them), and the known entries whose term or
an alias occurs in the story (at most `max_updates`, tentative ones first, then by occurrences).
A candidate that is a short, pet or titled form of exactly one known entry's name (`Quill` or
`Old Quill` beside a known `Ambrose Quill`, `Toby` beside `Tobiah`) becomes an alias of that
entry; a word of several known names is left alone. So does a name the scene gives someone
("I'm Sister Ottoline ... calls me the Bell-Sister") and a bare title right before one name
("Provost" in "Provost Amberly Hask"; a known bare-title entry gains that name as an alias).
- Turn 1 (no assistant turn yet): one `glossary_create` per candidate (definition: composed by
  `backends.describe` from every sentence of the scene that mentions it, `Term — lead; fact;
  fact.`, within what the known-entries line shows whole (180 characters), known terms linked
  as `[[Term]]`; tags: its kind, from the name and context cues; aliases: the candidate's
  variants; post_ids: the scene posts where it occurs), one `glossary_update` with
  `add_aliases` per known entry that gains a short name, and one `glossary_update` per
  occurring known entry (post_ids: the posts where it occurs), the first `max_updates` of them
  and any whose definition grows: a known definition shown whole gets what the scene adds (a
  better lead, a new fact, more company; `describe.grow`), at most `max_grows` per scene, with
  its kind as a tag when it had none. All in one turn. No search first: the known entries in
  the message already are the search (the context layer injects exact and
  full-text matches), and the store refuses a duplicate with an error naming the existing
  entry, which is cheaper than a search turn for every scene.
- Turn 2: for each create refused as a duplicate (`... already exists as E12 ...`, or the
  store's `... is already the term of entry E12 ...`) a
  `glossary_update` of the named entry with the candidate's posts; otherwise the final answer.
  Every turn of writes carries the text `SCENE DONE` beside its tool calls: when all of them
  succeed the loop ends the scene without asking again (one call for a typical scene).
- Then: the final answer, `Scene <id> done: created E12 Keth'ra; updated E4.`; also after
  `max_turns` assistant turns whatever happened, so a scene never loops.
A scene with nothing to record takes one call, a typical scene two, one with duplicates three.
With `search_first=True` turn 1 is a `glossary_search` per candidate instead, and a candidate
whose search finds an entry with the same normalized name updates that entry rather than
creating one (one call more per scene; an agent that "searches before it creates").

`# Task: summarize_chunk | summarize_thread | fold_story`: an extractive summary of the scene
exchanges in the conversation (those named in the task body by scene id or thread, else all),
integrating `## Previous summary`, keeping every `[E<id>]` and post reference, within a length
bound (`at most N words|tokens|characters` in the body, else a default per task).

`# Task: flush`: "Nothing to record" without tools (every scene was written as it was read).

`# Task: curate`: one line per decision (`E12 CONFIRM reason`, `E7 MERGE E3 reason`) from
`offline_curate` (CONFIRM, REJECT, MERGE; see there).

`# Task: summon`: answers from the snapshot context in the conversation: the glossary calls that
touched the entry (or term) the question names, the scene they were made in, the definition,
reason and quote recorded, the posts cited as `>>post`.

Anything else: a short plain answer.

Usage: `prompt_tokens` from `count_prompt_tokens`, `completion_tokens` from the reply's text and
tool-call JSON, `cached_tokens` 0 (the benchmark simulator replaces usage). `max_tokens` is
honoured: a reply over it keeps as many whole tool calls as fit, or cuts its text, with
`finish_reason: "length"`.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from terrarium_dagster.backends.describe import (
    COMPANY,
    KIND_LEADS,
    TITLE_WORDS,
    UNKNOWN_LEADS,
    compose,
    grow,
    parse_definition,
    portrait,
)
from terrarium_dagster.backends.wire import (
    content_text,
    error_body,
    last_user_index,
    overflow_message,
    token_id,
)
from terrarium_dagster.context.prompts import SCENE_DONE
from terrarium_dagster.edition.compose import compose_edition, edition_task
from terrarium_dagster.store.normalize import normalize_term
from terrarium_dagster.store.vocabulary import frequency, ordinary_reason
from terrarium_dagster.terms.candidates import (
    DEFAULT_MIN_SCORE,
    HONORIFICS,
    NOT_NAMES,
    STARTERS,
    Candidate,
    clean_sentence,
    find_candidates,
    find_term,
    is_demonym_of_real_place,
    is_descriptive_compound,
    is_english_lowercase,
    is_english_word,
)

OFFLINE_MODEL = "terrarium-offline"
DEFAULT_MAX_MODEL_LEN = 32768
CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = 4
GENERATION_PROMPT_TOKENS = 3
TOOLS_OVERHEAD_TOKENS = 10
MAX_POSTS_PER_CALL = 5
SUMMARY_CHARS = {"summarize_chunk": 1200, "summarize_thread": 1600, "fold_story": 2400}
ROLES = frozenset({"system", "user", "assistant", "tool"})

_SCENE_LINE = re.compile(r"^# Scene (\S+)")
_TASK_LINE = re.compile(r"^# Task: ?([a-z_]+)")
_POST_HEADER = re.compile(r"^\[post (\d+)[^\]\n]*\][ \t]*$", re.MULTILINE)
_KNOWN_LINE = re.compile(
    r"^- \[E(\d+)\] (.+?)(?: \(aliases: (.*?)\))? \[([a-z]+)\]:? ?(.*)$", re.MULTILINE
)
_ENTRY_REF = re.compile(r"\bE(\d+)\b")
_POST_REF = re.compile(r">>(\d+)")
_SCENE_ID = re.compile(r"\b(\d+#\d+)\b")
_SCENE_RANGE = re.compile(r"\b(\d+#\d+) \.\. (\d+#\d+)\b")
_LENGTH_BOUND = re.compile(r"at most (\d+) (words?|tokens?|characters?|chars?)", re.IGNORECASE)


# --------------------------------------------------------------------------------------------
# Token counting


def count_tokens(text: str) -> int:
    """Deterministic stand-in for a tokenizer: one token per 4 characters, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def count_message_tokens(message: Mapping[str, Any]) -> int:
    tokens = MESSAGE_OVERHEAD_TOKENS + count_tokens(str(message.get("role", "")))
    tokens += count_tokens(content_text(message.get("content")))
    if message.get("tool_calls"):
        tokens += count_tokens(_canonical(message["tool_calls"]))
    if message.get("tool_call_id"):
        tokens += count_tokens(str(message["tool_call_id"]))
    return tokens


def count_prompt_tokens(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None = None,
    *,
    add_generation_prompt: bool = True,
) -> int:
    """The prompt tokens of a chat request, as `/tokenize` and `usage.prompt_tokens` report."""
    total = sum(count_message_tokens(message) for message in messages)
    if tools:
        total += TOOLS_OVERHEAD_TOKENS + count_tokens(_canonical(list(tools)))
    if add_generation_prompt:
        total += GENERATION_PROMPT_TOKENS
    return total


def _token_ids(text: str) -> list[int]:
    return [token_id(text[i : i + 4]) for i in range(0, len(text), 4)]


# --------------------------------------------------------------------------------------------
# Request parsing


class BadRequest(Exception):
    """A request the server refuses; `status` and `kind` become the error response."""

    def __init__(self, message: str, status: int = 400, kind: str = "BadRequestError") -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind


@dataclass(frozen=True, slots=True)
class Call:
    """A tool call made by the assistant, with its parsed arguments and its parsed result."""

    id: str
    name: str
    args: dict[str, Any]
    result: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Reply:
    """What the assistant answers: text, or tool calls (name, arguments)."""

    content: str | None = None
    tool_calls: tuple[tuple[str, dict[str, Any]], ...] = ()


def _parse_json_object(text: Any) -> dict[str, Any]:
    if isinstance(text, Mapping):
        return dict(text)
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _validate_messages(messages: Any) -> list[dict[str, Any]]:
    if not isinstance(messages, list) or not messages:
        raise BadRequest("'messages' must be a non-empty list")
    pending: set[str] = set()
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise BadRequest(f"messages[{index}] must be an object")
        role = message.get("role")
        if role not in ROLES:
            raise BadRequest(f"messages[{index}].role must be one of system, user, assistant, tool")
        content = message.get("content")
        if content is not None and not isinstance(content, str | list):
            raise BadRequest(f"messages[{index}].content must be a string, a list or null")
        if role != "tool" and pending:
            raise BadRequest(
                f"messages[{index}]: an assistant message with 'tool_calls' must be followed by "
                f"tool messages responding to each 'tool_call_id' (missing: {sorted(pending)})"
            )
        if role == "assistant":
            calls = message.get("tool_calls") or []
            if not isinstance(calls, list):
                raise BadRequest(f"messages[{index}].tool_calls must be a list")
            for call in calls:
                function = call.get("function") if isinstance(call, dict) else None
                if not isinstance(function, dict) or not isinstance(function.get("name"), str):
                    raise BadRequest(f"messages[{index}].tool_calls has a call without a function")
                pending.add(str(call.get("id", "")))
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                raise BadRequest(
                    f"messages[{index}]: messages with role 'tool' must be a response to a "
                    f"preceding message with 'tool_calls' (unknown tool_call_id {call_id!r})"
                )
            pending.discard(call_id)
    if pending:
        raise BadRequest(
            f"the last assistant message's tool calls have no tool results: {sorted(pending)}"
        )
    return messages


def _tool_names(tools: Any) -> list[str]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise BadRequest("'tools' must be a list")
    names = []
    for index, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise BadRequest(f"tools[{index}] must be a function tool with a name")
        names.append(function["name"])
    return names


def _calls_after(messages: Sequence[Mapping[str, Any]]) -> tuple[int, list[Call]]:
    """(number of assistant turns, the tool calls with their results) in `messages`."""
    results: dict[str, dict[str, Any]] = {}
    for message in messages:
        if message.get("role") == "tool":
            results[str(message.get("tool_call_id"))] = _parse_json_object(
                content_text(message.get("content"))
            )
    turns = 0
    calls: list[Call] = []
    for message in messages:
        if message.get("role") != "assistant":
            continue
        turns += 1
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            call_id = str(call.get("id", ""))
            calls.append(
                Call(
                    call_id,
                    str(function.get("name", "")),
                    _parse_json_object(function.get("arguments")),
                    results.get(call_id),
                )
            )
    return turns, calls


# --------------------------------------------------------------------------------------------
# Scenes


@dataclass(frozen=True, slots=True)
class KnownEntry:
    """A `## Known entries` line: `- [E12] term (aliases: a; b) [status]: definition`."""

    entry_id: int
    term: str
    aliases: tuple[str, ...]
    status: str
    definition: str

    @property
    def names(self) -> tuple[str, ...]:
        return (self.term, *self.aliases)

    @property
    def truncated(self) -> bool:
        return self.definition.endswith(("…", "..."))


@dataclass(frozen=True, slots=True)
class SceneMessage:
    """A parsed `# Scene` message."""

    scene_id: str
    known: tuple[KnownEntry, ...]
    story: str
    posts: tuple[tuple[int, str], ...]


def with_earlier_known(scene: SceneMessage, earlier: Sequence[Mapping[str, Any]]) -> SceneMessage:
    """The scene with the known entries of the earlier scene messages still in the conversation.

    The engine does not list an entry again while its line is in the conversation, as a model
    reads the whole context; the scene's own lines win (they are the newest).
    """
    known: dict[int, KnownEntry] = {}
    for message in earlier:
        if message.get("role") != "user":
            continue
        earlier_scene = parse_scene_message(content_text(message.get("content")).lstrip())
        if earlier_scene is not None:
            known.update((entry.entry_id, entry) for entry in earlier_scene.known)
    if not known:
        return scene
    # a line shortened to "…" (unchanged since shown above) keeps the whole one shown above
    known.update(
        (entry.entry_id, entry)
        for entry in scene.known
        if not (entry.definition in ("…", "...") and entry.entry_id in known)
    )
    return SceneMessage(scene.scene_id, tuple(known.values()), scene.story, scene.posts)


def _sections(text: str) -> dict[str, str]:
    """`## Heading` sections of a message (heading lowercased -> body)."""
    found: dict[str, str] = {}
    matches = list(re.finditer(r"^## (.+?)[ \t]*$", text, re.MULTILINE))
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        found.setdefault(match.group(1).strip().casefold(), text[match.end() : end].strip("\n"))
    return found


def parse_known_entries(text: str) -> list[KnownEntry]:
    entries = []
    for match in _KNOWN_LINE.finditer(text):
        aliases = tuple(a.strip() for a in (match.group(3) or "").split(";") if a.strip())
        entries.append(
            KnownEntry(
                int(match.group(1)),
                match.group(2).strip(),
                aliases,
                match.group(4),
                match.group(5).strip(),
            )
        )
    return entries


def split_posts(story: str) -> list[tuple[int, str]]:
    """`[post 123]` blocks of a story section -> (post id, text)."""
    headers = list(_POST_HEADER.finditer(story))
    posts = []
    for index, header in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(story)
        posts.append((int(header.group(1)), story[header.end() : end].strip()))
    return posts


def parse_scene_message(text: str) -> SceneMessage | None:
    match = _SCENE_LINE.match(text)
    if match is None:
        return None
    sections = _sections(text)
    # the story is the last section by convention; take everything after its heading
    story_match = re.search(r"^## Story[ \t]*$", text, re.MULTILINE)
    story = text[story_match.end() :].strip("\n") if story_match else sections.get("story", "")
    known = parse_known_entries(sections.get("known entries", ""))
    return SceneMessage(match.group(1), tuple(known), story, tuple(split_posts(story)))


@dataclass(frozen=True, slots=True)
class _Plan:
    creates: tuple[tuple[Candidate, dict[str, Any]], ...]
    updates: tuple[tuple[int, dict[str, Any]], ...]
    candidate_posts: dict[str, tuple[int, ...]] = field(default_factory=dict)


def _posts_mentioning(posts: Sequence[tuple[int, str]], names: Iterable[str]) -> list[int]:
    names = list(names)
    return [pid for pid, text in posts if any(find_term(text, name) for name in names)]


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:") + "…"


def definition_sources(names: Sequence[str], posts: Sequence[tuple[int, str]]) -> list[int]:
    """The posts where one of `names` occurs."""
    return _posts_mentioning(posts, names)


class SceneAnnotator:
    """The offline annotator's decisions for one scene message (see the module docstring)."""

    def __init__(
        self,
        *,
        max_creates: int = 16,
        max_updates: int = 3,
        max_turns: int = 4,
        min_score: float = DEFAULT_MIN_SCORE,
        search_first: bool = False,
        max_grows: int = 2,
    ) -> None:
        self.max_creates = max_creates
        self.max_updates = max_updates
        self.max_grows = max_grows
        self.max_turns = max_turns
        self.min_score = min_score
        self.search_first = search_first

    def plan(self, scene: SceneMessage) -> _Plan:
        live = [entry for entry in scene.known if entry.status not in ("rejected", "merged")]
        known_names = [name for entry in scene.known for name in entry.names]
        candidates = find_candidates(
            scene.story, known_names, min_score=self.min_score, known_words=False
        )
        company = [entry.term for entry in live] + [c.term for c in candidates]
        creates: list[tuple[Candidate, dict[str, Any]]] = []
        posts_of: dict[str, tuple[int, ...]] = {}
        alias_updates: dict[int, dict[str, Any]] = {}
        named = _names_by_context(scene, candidates, live)
        later_aliases: dict[str, list[str]] = {}
        for candidate in candidates:
            owner = _word_owner(candidate, live)
            said = named.get(candidate.term)
            if owner is None and isinstance(said, KnownEntry):
                owner = said
            elif owner is None and isinstance(said, str):
                # "calls me the Bell-Sister" after "I'm Sister Ottoline": an alias of that one
                later_aliases.setdefault(said, []).append(candidate.term)
                continue
            if owner is not None:  # "Quill" beside a known "Ambrose Quill": a new alias
                where = _posts_mentioning(scene.posts, candidate.names)[:MAX_POSTS_PER_CALL]
                args = alias_updates.setdefault(
                    owner.entry_id, {"entry_id": f"E{owner.entry_id}", "add_aliases": []}
                )
                args["add_aliases"].append(candidate.term)
                args["post_ids"] = sorted(set(args.get("post_ids", [])) | set(where))
                continue
            if _word_of(candidate.term, live):
                continue  # a word of several known names: ambiguous
            if len(creates) >= self.max_creates:
                continue
            where = definition_sources(candidate.names, scene.posts)
            if not where:
                continue
            found = portrait(candidate.names, scene.posts, company)
            kind = found.kind
            definition = compose(candidate.term, found, kind=kind, own=candidate.variants)
            args = {"term": candidate.term, "definition": definition}
            if kind:
                args["tags"] = [kind]
            args["post_ids"] = where[:MAX_POSTS_PER_CALL]
            if candidate.variants:
                args["aliases"] = list(candidate.variants)
            posts_of[normalize_term(candidate.term)] = tuple(where[:MAX_POSTS_PER_CALL])
            creates.append((candidate, args))
        for candidate, args in creates:
            extra = later_aliases.get(candidate.term, [])
            if extra:
                args["aliases"] = list(dict.fromkeys([*args.get("aliases", []), *extra]))
        occurring = []
        for entry in live:
            where = _posts_mentioning(scene.posts, entry.names)
            if not where or entry.entry_id in alias_updates:
                continue
            mentions = sum(len(find_term(scene.story, name)) for name in entry.names)
            occurring.append((entry.status != "tentative", -mentions, entry.entry_id, entry, where))
        occurring.sort(key=lambda item: item[:3])
        updates: list[tuple[int, dict[str, Any]]] = sorted(alias_updates.items())
        plain = max(0, self.max_updates - len(updates))
        grown_count = 0
        for position, (*_, entry, where) in enumerate(occurring):
            args: dict[str, Any] = {
                "entry_id": f"E{entry.entry_id}",
                "post_ids": where[:MAX_POSTS_PER_CALL],
            }
            if grown_count < self.max_grows:
                definition, kind = self._grown(entry, scene, company)
                if definition:
                    args["definition"] = definition
                    grown_count += 1
                if kind:
                    args["tags"] = [kind]
            if position < plain or "definition" in args:
                updates.append((entry.entry_id, args))
        return _Plan(tuple(creates), tuple(updates), posts_of)

    @staticmethod
    def _grown(
        entry: KnownEntry, scene: SceneMessage, company: Sequence[str]
    ) -> tuple[str | None, str | None]:
        """The entry's definition grown by what the scene says of it (when shown whole), and a
        kind newly learned."""
        if entry.truncated or not entry.definition:
            return None, None
        found = portrait(entry.names, scene.posts, company)
        return grow(entry.term, entry.definition, found, own=entry.aliases)

    def reply(
        self, scene: SceneMessage, turns: int, calls: Sequence[Call], tools: set[str]
    ) -> Reply:
        plan = self.plan(scene)
        if turns >= self.max_turns or not {"glossary_create", "glossary_update"} <= tools:
            return Reply(content=self._final(scene, calls, plan if not turns else None))
        created = {
            normalize_term(str(c.args.get("term", "")))
            for c in calls
            if c.name == "glossary_create"
        }
        updated = {
            _entry_number(c.args.get("entry_id")) for c in calls if c.name == "glossary_update"
        }
        searched = {
            normalize_term(str(c.args.get("query", "")))
            for c in calls
            if c.name == "glossary_search"
        }
        pending: list[tuple[str, dict[str, Any]]] = []
        if self.search_first and "glossary_search" in tools and plan.creates and not searched:
            for candidate, _args in plan.creates:
                pending.append(("glossary_search", {"query": candidate.term, "limit": 3}))
            return Reply(tool_calls=tuple(pending))  # results needed: no done mark
        hits = _search_hits(calls)
        found = _searched_entries(calls)
        for candidate, args in plan.creates:
            key = normalize_term(candidate.term)
            if key in created:
                continue
            hit = next(
                (hits[name] for name in map(normalize_term, candidate.names) if name in hits),
                None,
            )
            owner = _word_owner(candidate, found) if hit is None else None
            if hit is not None:
                target, alias = hit, None
            elif owner is not None:  # "Quill" found as part of "Ambrose Quill"
                target, alias = owner.entry_id, candidate.term
            else:
                pending.append(("glossary_create", args))
                continue
            if target not in updated:
                updated.add(target)
                update = _update_args(target, args["post_ids"])
                if alias is not None:
                    update["add_aliases"] = [alias]
                pending.append(("glossary_update", update))
        for call in calls:
            if call.name != "glossary_create" or not call.result or call.result.get("ok"):
                continue
            existing = _duplicate_of(call.result)
            if existing is None or existing in updated:
                continue
            updated.add(existing)
            posts = plan.candidate_posts.get(normalize_term(str(call.args.get("term", ""))))
            posts = posts or tuple(call.args.get("post_ids") or ())
            pending.append(("glossary_update", _update_args(existing, posts)))
        for entry_id, args in plan.updates:
            if entry_id not in updated:
                updated.add(entry_id)
                pending.append(("glossary_update", args))
        if pending:
            # writes only: if every one succeeds there is nothing left to do, so say so now and
            # save the confirmation round (the loop calls again only when a call failed)
            return Reply(content=SCENE_DONE, tool_calls=tuple(pending))
        return Reply(content=self._final(scene, calls, None))

    @staticmethod
    def _final(scene: SceneMessage, calls: Sequence[Call], plan: _Plan | None) -> str:
        created: list[str] = []
        updated: list[str] = []
        for call in calls:
            result = call.result or {}
            entry = result.get("entry") if result.get("ok") else None
            if not isinstance(entry, dict):
                continue
            ref = f"{entry.get('id')} {entry.get('term')}"
            if call.name == "glossary_create" and ref not in created:
                created.append(ref)
            elif call.name == "glossary_update" and "note" not in result and ref not in updated:
                updated.append(ref)
        parts = []
        if created:
            parts.append("created " + ", ".join(created))
        if updated:
            parts.append("updated " + ", ".join(updated))
        if plan is not None and plan.creates:
            parts.append("terms without an entry: " + ", ".join(c.term for c, _ in plan.creates))
        return (
            f"Scene {scene.scene_id} done: " + ("; ".join(parts) if parts else "nothing new") + "."
        )


_I_AM = re.compile(r"\b(?:I'm|I’m|I am|[Mm]y name is|[Mm]y name's)\s+$")
_CALL_ME = re.compile(r"\b(?:call|calls|called)\s+me\s+(?:the\s+)?$", re.IGNORECASE)
SPEAKER_CHARS = 300


def _names_by_context(
    scene: SceneMessage, candidates: Sequence[Candidate], live: Sequence[KnownEntry]
) -> dict[str, KnownEntry | str]:
    """Candidates the scene itself says are another name of someone: "I'm Sister Ottoline ...
    calls me the Bell-Sister" (a name the speaker is called), and a bare title right before one
    name ("Provost" in "Provost Amberly Hask"). Candidate term -> the known entry, or the term
    of the candidate, it names."""
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
        if " " in key and _person_like(key) and candidate.term[:1].isupper():
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
        distinct = list(dict.fromkeys(id(o) if isinstance(o, KnownEntry) else o for o in owners))
        if len(distinct) == 1:
            found[candidate.term] = owners[0]
    return found


# A multiword name with one of these is a title or a phrase ("Prince of Dusar", "River of the
# Dead"): the place or thing named inside it is a referent of its own, never merged into it.
_CONNECTORS = frozenset({"of", "the", "and", "in", "on", "at", "from", "to", "by", "for"})


def _person_like(key: str) -> bool:
    words = key.split()
    return len(words) > 1 and not _CONNECTORS.intersection(words)


def _short_form(key: str, name: str) -> bool:
    """Is the one word `key` a short form of the multiword `name`? The first or last word of a
    name (`Quill` of `Ambrose Quill`, `Iss` of `River Iss`); of a phrase with a connector only
    its head (`Sodality` of `Sodality of the Steady Flame`), never what follows the connector
    (`Dusar` of `Prince of Dusar` is a place of its own)."""
    words = name.split()
    if len(words) < 2:
        return False
    if _person_like(name):
        return key in (words[0], words[-1])
    return key == words[0]


def _word_of(name: str, entries: Sequence[KnownEntry]) -> list[KnownEntry]:
    """The entries with a multiword name of which the one-word `name` is a short form."""
    key = normalize_term(name)
    if not key or " " in key or key in STARTERS:
        return []
    found = []
    for entry in entries:
        if any(_short_form(key, normalize_term(n)) for n in entry.names):
            found.append(entry)
    return found


def _named_by_a_word(view: CurateEntryView, older: Sequence[KnownEntry]) -> KnownEntry | None:
    """For a multiword name (`Tobiah Leck`), the older one-word entry that is its first or last
    word (`Tobiah`): the same referent, first met by part of its name."""
    keys = [normalize_term(name) for name in view.names]
    for key in keys:
        if not _person_like(key):
            continue
        ends = {key.split()[0], key.split()[-1]} - STARTERS
        for other in older:
            if any(normalize_term(n) in ends for n in other.names):
                return other
    return None


def _word_owner(candidate: Candidate, entries: Sequence[KnownEntry]) -> KnownEntry | None:
    """The one known entry the candidate is a short, pet or titled form of (`Quill` or `Old
    Quill` of `Ambrose Quill`, `Toby` of `Tobiah`), if exactly one."""
    return _owner(candidate.term, entries)[0]


_PET_ENDINGS = ("ie", "ey", "y", "i")


def _pet_name(key: str, name: str) -> bool:
    """Is the one word `key` a pet form of the one word `name` (`toby` of `tobiah`, `ottie` of
    `ottoline`): its stem, without a pet ending, opens the longer name."""
    if " " in key or " " in name or key == name or len(key) < 3:
        return False
    for ending in _PET_ENDINGS:
        stem = key[: -len(ending)]
        if key.endswith(ending) and len(stem) >= 3 and len(name) >= len(stem) + 2:
            return name.startswith(stem) and not name.startswith(key)
    return False


def _pet_name_of(name: str, entries: Sequence[KnownEntry]) -> list[KnownEntry]:
    """The entries with a name of which the one-word `name` is a pet form (their one-word names
    and the first word of their person-like names)."""
    key = normalize_term(name)
    if not key or " " in key or key in STARTERS:
        return []
    found = []
    for entry in entries:
        for other in map(normalize_term, entry.names):
            words = other.split()
            first = words[0] if len(words) == 1 or _person_like(other) else ""
            if first and _pet_name(key, first):
                found.append(entry)
                break
    return found


def _titled(name: str) -> str | None:
    """For a title and one name (`Old Quill`, `Provost Hask`), the name (`quill`)."""
    words = normalize_term(name).split()
    if len(words) == 2 and words[0] in TITLE_WORDS | HONORIFICS and words[1] not in STARTERS:
        return words[1]
    return None


def _titled_of(name: str, entries: Sequence[KnownEntry]) -> list[KnownEntry]:
    """The entries a title-and-name (`Old Quill`) names: those whose person-like name ends or
    opens with that name (`Ambrose Quill`), or whose one-word name it is."""
    word = _titled(name)
    if word is None:
        return []
    own = normalize_term(name)
    found = []
    for entry in entries:
        for surface in entry.names:
            other = normalize_term(surface)
            words = other.split()
            if other == own or not surface[:1].isupper():
                continue
            if other == word or (_person_like(other) and word in (words[0], words[-1])):
                found.append(entry)
                break
    return found


def _owner(name: str, entries: Sequence[KnownEntry]) -> tuple[KnownEntry | None, str]:
    """The one entry a short, pet or titled form of a name belongs to, and how; (None, "")
    when none or several."""
    for finder, how in (
        (_word_of, "is part of the name of"),
        (_pet_name_of, "is a pet name of"),
        (_titled_of, "is a title and name of"),
    ):
        owners = finder(name, entries)
        if len(owners) == 1:
            return owners[0], how
        if owners:
            return None, ""
    return None, ""


def _entry_number(value: Any) -> int | None:
    match = re.fullmatch(r"\s*[Ee]?(\d+)\s*", str(value)) if value is not None else None
    return int(match.group(1)) if match else None


def _update_args(entry_id: int, post_ids: Sequence[int]) -> dict[str, Any]:
    args: dict[str, Any] = {"entry_id": f"E{entry_id}"}
    if post_ids:
        args["post_ids"] = list(post_ids)
    return args


def _duplicate_of(result: Mapping[str, Any]) -> int | None:
    error = str(result.get("error", ""))
    if "already" not in error:
        return None
    match = _ENTRY_REF.search(error.split("already", 1)[1])
    return int(match.group(1)) if match else None


def _searched_entries(calls: Sequence[Call]) -> list[KnownEntry]:
    """The entries the searches found, as known entries (first hit of an id wins)."""
    found: dict[int, KnownEntry] = {}
    for call in calls:
        if call.name != "glossary_search" or not call.result or not call.result.get("ok"):
            continue
        for hit in call.result.get("hits") or []:
            number = _entry_number(hit.get("id"))
            if number is not None and number not in found:
                aliases = tuple(str(a) for a in hit.get("aliases") or [])
                found[number] = KnownEntry(
                    number, str(hit.get("term", "")), aliases, str(hit.get("status", "")), ""
                )
    return [entry for entry in found.values() if entry.status not in ("rejected", "merged")]


def _search_hits(calls: Sequence[Call]) -> dict[str, int]:
    """Normalized names of the entries found by searches -> entry id (first hit wins)."""
    found: dict[str, int] = {}
    for call in calls:
        if call.name != "glossary_search" or not call.result or not call.result.get("ok"):
            continue
        for hit in call.result.get("hits") or []:
            number = _entry_number(hit.get("id"))
            if number is None:
                continue
            for name in (hit.get("term", ""), *(hit.get("aliases") or [])):
                found.setdefault(normalize_term(str(name)), number)
    return found


# --------------------------------------------------------------------------------------------
# Summaries


@dataclass(slots=True)
class _SceneDigest:
    scene_id: str
    first_post: int | None
    last_post: int | None
    gist: str
    entries: dict[str, str]  # "E12" -> term (or "")


def _scene_exchanges(messages: Sequence[Mapping[str, Any]]) -> list[_SceneDigest]:
    digests: list[_SceneDigest] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        text = content_text(message.get("content"))
        scene = parse_scene_message(text) if message.get("role") == "user" else None
        index += 1
        if scene is None:
            continue
        following = []
        while index < len(messages) and messages[index].get("role") != "user":
            following.append(messages[index])
            index += 1
        _, calls = _calls_after(following)
        entries: dict[str, str] = {}
        for call in calls:
            result = call.result or {}
            entry = result.get("entry")
            if result.get("ok") and isinstance(entry, dict) and entry.get("id"):
                entries.setdefault(str(entry["id"]), str(entry.get("term", "")))
        for message_after in following:
            for ref in _ENTRY_REF.findall(content_text(message_after.get("content"))):
                entries.setdefault(f"E{ref}", "")
        posts = [pid for pid, _ in scene.posts]
        first_text = scene.posts[0][1] if scene.posts else ""
        gist = _cut(clean_sentence(first_text.split("\n")[0]) if first_text else "", 140)
        digests.append(
            _SceneDigest(
                scene.scene_id,
                posts[0] if posts else None,
                posts[-1] if posts else None,
                gist,
                entries,
            )
        )
    return digests


def _length_bound(task: str, body: str) -> int:
    match = _LENGTH_BOUND.search(body)
    if match is None:
        return SUMMARY_CHARS.get(task, 1600)
    number, unit = int(match.group(1)), match.group(2).casefold()
    if unit.startswith("word"):
        return number * 6
    if unit.startswith("token"):
        return number * CHARS_PER_TOKEN
    return number


def _entry_mentions(text: str) -> list[str]:
    return list(dict.fromkeys(f"E{number}" for number in re.findall(r"\[E(\d+)\]", text)))


def summarize(task: str, body: str, history: Sequence[Mapping[str, Any]]) -> str:
    """The extractive summary answering a summary task (see the module docstring)."""
    sections = _sections(body)
    previous = " ".join(sections.get("previous summary", "").split())
    scope_ids = set(_SCENE_ID.findall(body))
    thread = re.search(r"\bthread (\d+)\b", body)
    digests = _scene_exchanges(history)
    positions = [i for i, d in enumerate(digests) if d.scene_id in scope_ids]
    span = _SCENE_RANGE.search(body)
    if span and {span.group(1), span.group(2)} <= {d.scene_id for d in digests}:
        ids = [d.scene_id for d in digests]
        first, last = ids.index(span.group(1)), len(ids) - 1 - ids[::-1].index(span.group(2))
        positions += list(range(first, last + 1))
    chosen = [d for i, d in enumerate(digests) if i in set(positions)]
    if not chosen and thread:
        chosen = [d for d in digests if d.scene_id.startswith(f"{thread.group(1)}#")]
    if not chosen and task != "fold_story":
        chosen = digests
    # text handed over in the body itself (e.g. thread summaries to fold), beyond the previous one
    handed = "\n".join(
        _handed_text(text)
        for heading, text in sections.items()
        if heading != "previous summary" and "[E" in text
    )
    limit = _length_bound(task, body)

    def scene_line(digest: _SceneDigest, with_gist: bool) -> str:
        posts = ""
        if digest.first_post is not None:
            posts = f" (>>{digest.first_post}" + (
                f"-{digest.last_post})" if digest.last_post != digest.first_post else ")"
            )
        refs = ", ".join(
            f"[{ref}] {term}".rstrip() for ref, term in sorted(digest.entries.items(), key=_ref_key)
        )
        gist = f" {digest.gist}" if with_gist and digest.gist else ""
        tail = f" Entries: {refs}." if refs else ""
        return f"Scene {digest.scene_id}{posts}:{gist}{tail}"

    listed = re.search(r"^entries: (.*)$", body, re.MULTILINE)
    required = list(
        dict.fromkeys(
            [*_entry_mentions(listed.group(1) if listed else "")]
            + [*_entry_mentions(previous), *_entry_mentions(handed)]
            + [ref for d in chosen for ref in sorted(d.entries, key=_ref_key)]
        )
    )
    attempts = (
        (previous, handed, True),
        (previous, handed, False),
        (_cut(previous, limit // 3), _cut(handed, limit // 3), False),
        ("", "", False),
    )
    text = ""
    for prev_text, handed_text, gists in attempts:
        parts = [p for p in (prev_text, handed_text) if p]
        parts += [scene_line(d, gists) for d in chosen]
        text = "\n".join(parts)
        missing = [ref for ref in required if f"[{ref}]" not in text]
        if missing:
            text += "\nAlso: " + " ".join(f"[{ref}]" for ref in missing) + "."
        if len(text) <= limit:
            return text or "Nothing happened yet."
    ids_only = "Entries so far: " + " ".join(f"[{ref}]" for ref in required) + "."
    return ids_only if len(ids_only) <= limit or not required else _cut(ids_only, limit)


def _handed_text(text: str) -> str:
    """Summaries handed over in a task body (`### Thread 12` blocks) as plain lines."""
    lines: list[str] = []
    for line in text.splitlines():
        line = " ".join(line.split())
        if not line or line.startswith("entries:"):
            continue
        if line.startswith("#"):
            lines.append(line.lstrip("# ") + ":")
        elif lines and lines[-1].endswith(":"):
            lines[-1] += " " + line
        else:
            lines.append(line)
    return "\n".join(lines)


def _ref_key(item: Any) -> int:
    ref = item[0] if isinstance(item, tuple) else item
    number = _entry_number(ref)
    return number if number is not None else 0


# --------------------------------------------------------------------------------------------
# Curation


@dataclass(frozen=True, slots=True)
class CurateEntryView:
    """What the curate message shows about one entry under review."""

    entry_id: int
    term: str
    aliases: tuple[str, ...] = ()
    status: str = "tentative"
    definition: str = ""
    source_posts: tuple[int, ...] = ()
    source_count: int = 0
    qm_evidence_mentions: int = 0
    similar: tuple[KnownEntry, ...] = ()
    evidence: tuple[str, ...] = ()  # the texts of the evidence posts shown

    @property
    def names(self) -> tuple[str, ...]:
        return (self.term, *self.aliases)


def parse_curate_message(text: str) -> list[CurateEntryView]:
    """The entries of a `# Task: curate` message (tolerant: blocks start at `## Entry E<id>`)."""
    blocks = re.split(r"^## Entry ", text, flags=re.MULTILINE)[1:]
    views: list[CurateEntryView] = []
    for block in blocks:
        block = block.split("\n## ", 1)[0]
        lines = [line for line in block.splitlines() if line.strip()]
        header = re.match(r"E(\d+):? ?(.*)", lines[0] if lines else "")
        entry_line = next((line for line in lines if line.startswith("- [E")), None)
        known = parse_known_entries(entry_line) if entry_line else []
        if not known and header is None:
            continue
        if known:
            base = known[0]
        else:
            assert header is not None
            base = KnownEntry(int(header.group(1)), header.group(2).strip(), (), "tentative", "")
        sources_line = next((line for line in lines if line.startswith("sources:")), "")
        posts = tuple(dict.fromkeys(int(p) for p in _POST_REF.findall(sources_line)))
        more = re.search(r"and (\d+) more", sources_line)
        count = len(posts) + (int(more.group(1)) if more else 0)
        qm_mentions = 0
        evidence: list[str] = []
        for line in lines:
            if line.startswith(">>"):
                evidence.append(line.split(":", 1)[1] if ":" in line else "")
            if line.startswith(">>") and "(QM" in line.split(":", 1)[0]:
                body = line.split(":", 1)[1] if ":" in line else ""
                if any(find_term(body, name) for name in base.names):
                    qm_mentions += 1
        similar = tuple(
            entry
            for line in lines
            if line.startswith("- similar: ")
            for entry in parse_known_entries("- " + line[len("- similar: ") :])
        )
        views.append(
            CurateEntryView(
                base.entry_id,
                base.term,
                base.aliases,
                base.status,
                base.definition,
                posts,
                count,
                qm_mentions,
                similar,
                tuple(evidence),
            )
        )
    return views


CITED_IN_REASONING = 3  # posts a CONFIRM's reasoning names


def offline_curate(entries: Sequence[CurateEntryView]) -> list[dict[str, Any]]:
    """Deterministic curator decisions, in entry order; entries without one stay tentative.

    - REJECT a term that is ordinary vocabulary or a plainly used real-world name by word
      frequency (`cried`, `to-day`, `Kentucky`; see `glossary.vocabulary`), an English word
      written in lowercase (`lantern`, `evidently`, Zipf ≥ 2.5), a hyphenated description
      (`paint-streaked`, `semi-barbaric`), or never a name (`I`, `QM`, months).
    - MERGE into an older entry (reviewed or shown as similar; not rejected or merged) when a name
      of one equals a name of the other, normalized, or when the term is a short, pet or titled
      form of that entry's name and of no other's (`Quill` or `Old Quill` into `Ambrose Quill`,
      `Toby` into `Tobiah`); a full name into the entry of one of its words (`Tobiah Leck` into
      `Leck`), taking the entry of its other word along when under review too (`Tobiah`); a
      merge into an entry merged in the same answer follows it.
    - REJECT, when it is merged into no entry, a familiar word or real-world name the story
      only mentions in passing (`passing_reason`: "Sioux", "Colt", "Civil War") and a
      capitalised word the evidence never capitalises mid-sentence and also writes in lowercase
      (`word_reason`: "Sak!" beside "sak").
    - CONFIRM an entry with at least two source posts, or mentioned in two QM evidence posts.
    """
    decisions: list[dict[str, Any]] = []
    reviewed = {view.entry_id: view for view in entries}
    merged_away: set[int] = set()
    for view in entries:
        key = normalize_term(view.term)
        ref = f"E{view.entry_id}"
        ordinary = ordinary_reason(view.term)
        if key in NOT_NAMES or (
            " " not in key and view.term == view.term.lower() and is_english_lowercase(key)
        ):
            ordinary = ordinary or f"'{view.term}' is an English word"
        if is_demonym_of_real_place(view.term):
            ordinary = ordinary or f"'{view.term}' names the people of a real place"
        if is_descriptive_compound(view.term):
            ordinary = ordinary or f"'{view.term}' is a description, not a name"
        if ordinary:
            reason = f"{ordinary}, not a story term."
            decisions.append({"entry_id": ref, "decision": "REJECT", "reasoning": reason})
            continue
        target, how = _merge_target(view, reviewed, merged_away)
        if target is not None:
            merged_away.add(view.entry_id)
            decisions.append(
                {
                    "entry_id": ref,
                    "decision": "MERGE",
                    "target_entry_id": f"E{target.entry_id}",
                    "reasoning": f"'{view.term}' {how} [E{target.entry_id}] {target.term}.",
                }
            )
            continue
        related = _pet_name_of(view.term, view.similar) or _word_of(view.term, view.similar)
        passing = None if related else passing_reason(view) or word_reason(view)
        if passing:  # after the merges: "Toby" is Tobiah's, whatever its frequency
            reason = f"{passing}, not a story term."
            decisions.append({"entry_id": ref, "decision": "REJECT", "reasoning": reason})
            continue
        if view.source_count >= 2 or view.qm_evidence_mentions >= 2:
            listed = view.source_posts[:CITED_IN_REASONING]
            cited = ", ".join(f">>{post}" for post in listed)
            unlisted = view.source_count - len(listed)
            if unlisted > 0:  # the count and the list agree: say how many are not listed
                cited += f" and {unlisted} more"
            reason = (
                f"Recorded from {view.source_count} posts ({cited})."
                if view.source_count >= 2
                else f"Mentioned in {view.qm_evidence_mentions} QM posts of the evidence."
            )
            decisions.append({"entry_id": ref, "decision": "CONFIRM", "reasoning": reason})
    return _follow_merges(_absorb_first_names(decisions, entries))


# A single capitalised word this frequent in English is a familiar word or a real-world name
# (a people, a country, a religion, a maker: "Sioux", "Shetland", "Confederate", "Colt"); several
# words each at least `FAMILIAR_PHRASE_ZIPF` ("Civil War", "United States of America") too.
FAMILIAR_ZIPF = 2.8
FAMILIAR_PHRASE_ZIPF = 4.5
ROLE_SOURCES = 3  # posts that must mention a familiar name before it has a role of its own


def passing_reason(view: CurateEntryView) -> str | None:
    """Why an entry is a familiar word or real-world name the story only mentions in passing,
    or None: rejected unless the story gives it a role (mentioned in `ROLE_SOURCES` posts, or a
    definition that says what it is in the story: a kind for one word, "Helium — a place"; a
    fact for a phrase of everyday words, whose kind the describer may only have guessed)."""
    if not 0 < view.source_count < ROLE_SOURCES or view.term == view.term.lower():
        return None
    if view.aliases or _fuller_name_in(view):  # "Hollis" of "Hollis Marr": the story's own
        return None
    words = [w for w in re.split(r"[\s-]+", view.term) if w and w.casefold() not in _SMALL_WORDS]
    if not words:
        return None
    if len(words) == 1:
        word = words[0]
        singular = word[:-1] if word.endswith("s") and len(word) > 4 else word
        zipf = max(frequency(word), frequency(singular))
        if zipf < FAMILIAR_ZIPF:
            return None
    else:
        zipf = min(frequency(word) for word in words)
        if zipf < FAMILIAR_PHRASE_ZIPF:
            return None
    if _has_role(view, kind_is_role=len(words) == 1):
        return None
    return (
        f"'{view.term}' is a familiar word or real-world name (word frequency {zipf:.1f} on the "
        f"Zipf scale) that the story mentions in passing ({view.source_count} post(s), no role)"
    )


def word_reason(view: CurateEntryView) -> str | None:
    """Why a capitalised one-word entry is a word, not a name, by how the evidence writes it:
    never capitalised mid-sentence, and written in lowercase too, or an English word opening
    several sentences ("Sak!" beside "sak", "Evidently" twice), or None."""
    term = view.term
    if " " in term or term == term.lower() or not view.evidence:
        return None
    lowered = term.casefold()
    starts = mid = lower = 0
    for text in view.evidence:
        for match in re.finditer(rf"(?<![\w'’-]){re.escape(lowered)}(?![\w'’-])", text, re.I):
            word = match.group(0)
            if word == word.lower():
                lower += 1
            elif _opens_sentence(text, match.start()):
                starts += 1
            else:
                mid += 1
    if mid or not (starts or lower):
        return None
    if lower or (starts >= 2 and is_english_word(term)):
        return (
            f"'{term}' is capitalised only where a sentence opens ({starts} time(s)) and "
            f"written in lowercase {lower} time(s) in the evidence: a word, not a name"
        )
    return None


def _opens_sentence(text: str, position: int) -> bool:
    before = text[:position].rstrip(" *_(")
    if before.endswith(('"', "“", "‘")):  # quoted speech opens a sentence
        return True
    return not before or before[-1] in ".!?:;\n—–-"


_SMALL_WORDS = frozenset({"of", "the", "a", "an", "and", "in", "on", "at", "to", "de", "la"})


def _fuller_name_in(view: CurateEntryView) -> bool:
    """Whether the evidence writes the one-word term as the first word of a longer name
    ("Hollis Marr"), as a story names its people (not "Shetland pony", "Colt revolvers")."""
    pattern = re.compile(rf"(?<![\w'’-]){re.escape(view.term)} ([A-Z][a-z]+)")
    for text in view.evidence:
        for match in pattern.finditer(text):
            if match.group(1).casefold() not in STARTERS:
                return True
    return False


def _has_role(view: CurateEntryView, *, kind_is_role: bool) -> bool:
    """Whether the definition says what the story makes of the entry: a fact, or (when
    `kind_is_role`) at least what kind of thing it is in the story ("Helium — a place")."""
    if not view.definition.strip():
        return False
    parsed = parse_definition(view.term, view.definition)
    leads = UNKNOWN_LEADS if kind_is_role else UNKNOWN_LEADS | set(KIND_LEADS.values())
    facts = [fact for fact in parsed.facts if not fact.startswith(COMPANY)]
    return bool(facts) or parsed.lead not in leads


def _absorb_first_names(
    decisions: list[dict[str, Any]], entries: Sequence[CurateEntryView]
) -> list[dict[str, Any]]:
    """A full name merged into the entry of one of its words (`Tobiah Leck` into `Leck`) takes
    the entry of its other word along when that one is under review too (`Tobiah`)."""
    by_ref = {decision["entry_id"]: decision for decision in decisions}
    for view in entries:
        decision = by_ref.get(f"E{view.entry_id}")
        if not decision or decision["decision"] != "MERGE":
            continue
        target = decision["target_entry_id"]
        for name in map(normalize_term, view.names):
            if not _person_like(name):
                continue
            ends = {name.split()[0], name.split()[-1]} - STARTERS
            for other in entries:
                ref = f"E{other.entry_id}"
                other_decision = by_ref.get(ref)
                if (
                    ref == target
                    or other.entry_id == view.entry_id
                    or normalize_term(other.term) not in ends
                    or (other_decision and other_decision["decision"] in ("MERGE", "REJECT"))
                ):
                    continue
                merge = {
                    "entry_id": ref,
                    "decision": "MERGE",
                    "target_entry_id": target,
                    "reasoning": f"'{other.term}' is part of the full name '{view.term}', "
                    f"which is [{target}].",
                }
                if other_decision is None:
                    decisions.append(merge)
                else:
                    decisions[decisions.index(other_decision)] = merge
                by_ref[ref] = merge
    return decisions


def _follow_merges(decisions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A merge into an entry merged away in the same answer goes to where that one goes."""
    targets = {d["entry_id"]: d["target_entry_id"] for d in decisions if d["decision"] == "MERGE"}
    for decision in decisions:
        if decision["decision"] != "MERGE":
            continue
        seen = {decision["entry_id"]}
        target = decision["target_entry_id"]
        while target in targets and target not in seen:
            seen.add(target)
            target = targets[target]
        if target in seen:  # a cycle: leave this one undecided rather than loop
            continue
        decision["target_entry_id"] = target
    return [
        d for d in decisions if d["decision"] != "MERGE" or d["target_entry_id"] != d["entry_id"]
    ]


def _merge_target(
    view: CurateEntryView, reviewed: Mapping[int, CurateEntryView], merged_away: set[int]
) -> tuple[KnownEntry | None, str]:
    mine = {normalize_term(name) for name in view.names}
    others: dict[int, KnownEntry] = {
        o.entry_id: KnownEntry(o.entry_id, o.term, o.aliases, o.status, o.definition)
        for o in reviewed.values()
    }
    for entry in view.similar:
        others.setdefault(entry.entry_id, entry)
    older = [
        other
        for entry_id, other in sorted(others.items())
        if entry_id < view.entry_id
        and entry_id not in merged_away
        and other.status not in ("rejected", "merged")
    ]
    for other in older:
        if mine & {normalize_term(name) for name in other.names}:
            return other, "names the same thing as"
    owner, how = _owner(view.term, older)
    if owner is not None:
        return owner, how
    shorter = _named_by_a_word(view, older)
    if shorter is not None:
        return shorter, "is the fuller name of"
    return None, ""


def _curate_answer(messages: Sequence[Mapping[str, Any]], last_user: int) -> str:
    text = content_text(messages[last_user].get("content"))
    views = parse_curate_message(text)
    wanted: set[int] | None = None
    if not views:  # a retry note: find the entries in the earlier curate message
        only = re.search(r"entries only: (.*)", text)
        wanted = {int(n) for n in _ENTRY_REF.findall(only.group(1))} if only else None
        for message in reversed(messages[:last_user]):
            content = content_text(message.get("content"))
            if message.get("role") == "user" and content.startswith("# Task: curate"):
                views = parse_curate_message(content)
                if views:
                    break
    decisions = offline_curate(views)
    if wanted is not None:
        decisions = [d for d in decisions if _entry_number(d["entry_id"]) in wanted]
    return "".join(decision_line(decision) + "\n" for decision in decisions) or "NONE\n"


def decision_line(decision: Mapping[str, Any]) -> str:
    """One decision in the curator's answer format: `E12 CONFIRM reason`, `E7 MERGE E3 reason`,
    `E4 REVISE definition` (curation.prompt.ANSWER_FORMAT)."""
    words = [f"E{_entry_number(decision['entry_id'])}", str(decision["decision"])]
    if decision["decision"] == "MERGE":
        words.append(f"E{_entry_number(decision['target_entry_id'])}")
    if decision["decision"] == "REVISE":
        words.append(" ".join(str(decision.get("definition") or "").split()))
    elif decision.get("reasoning"):
        words.append(" ".join(str(decision["reasoning"]).split()))
    return " ".join(words)


# --------------------------------------------------------------------------------------------
# Summon


def summon_answer(question: str, history: Sequence[Mapping[str, Any]]) -> str:
    """What a summoned context says about the entry (or term) the question names."""
    refs = [int(n) for n in _ENTRY_REF.findall(question)]
    quoted = re.findall(r"[\"“']([^\"“”']{2,60})[\"”']", question)
    names = {normalize_term(name) for name in quoted if normalize_term(name)}
    findings: list[str] = []
    scene_id = "?"
    calls_by_scene: list[tuple[str, Call]] = []
    index = 0
    while index < len(history):
        message = history[index]
        text = content_text(message.get("content"))
        scene = parse_scene_message(text) if message.get("role") == "user" else None
        if scene is not None:
            scene_id = scene.scene_id
        following = []
        index += 1
        while index < len(history) and history[index].get("role") != "user":
            following.append(history[index])
            index += 1
        _, calls = _calls_after(following)
        calls_by_scene.extend((scene_id, call) for call in calls)
    for scene_name, call in calls_by_scene:
        if call.name not in ("glossary_create", "glossary_update", "glossary_delete"):
            continue
        result = call.result or {}
        entry = result.get("entry") if isinstance(result.get("entry"), dict) else {}
        number = _entry_number(
            entry.get("id") or call.args.get("entry_id") or result.get("deleted")
        )
        term = str(entry.get("term") or call.args.get("term") or "")
        # entry ids named in the question decide; quoted names only when it names none (a
        # quoted word inside a definition must not pull in other entries' edits)
        matches = number in refs if refs else bool(term) and normalize_term(term) in names
        if not matches:
            continue
        action = {"glossary_create": "created", "glossary_update": "updated"}.get(
            call.name, "deleted"
        )
        if not result.get("ok"):
            verb = call.name.removeprefix("glossary_")
            action = f"tried to {verb} (refused: {result.get('error', '?')})"
        posts = list(result.get("posts") or call.args.get("post_ids") or [])
        cited = " ".join(f">>{post}" for post in posts) or "no post given"
        line = (
            f"In scene {scene_name} I {action} [E{number}] {term}".rstrip() + f", citing {cited}."
        )
        for label, key in (("definition", "definition"), ("reason", "reason"), ("quote", "quote")):
            value = call.args.get(key)
            if value:
                line += f' My {label}: "{_cut(str(value), 240)}"'
        findings.append(line)
    if not findings:
        for message in history:
            text = content_text(message.get("content"))
            for ref in refs:
                for sentence in re.split(r"(?<=[.!?])\s+|\n", text):
                    if f"[E{ref}]" in sentence:
                        findings.append(f'My summary says: "{_cut(sentence, 240)}"')
                        break
        findings = list(dict.fromkeys(findings))[:3]
    if not findings:
        subject = ", ".join(f"E{ref}" for ref in refs) or "that"
        return f"I have no record of {subject} in this context (it ends at scene {scene_id})."
    return " ".join(findings)


# --------------------------------------------------------------------------------------------
# The transport


class OfflineBackend(httpx.BaseTransport):
    """vLLM's OpenAI-compatible endpoints, answered in-process and deterministically."""

    def __init__(
        self,
        *,
        model: str = OFFLINE_MODEL,
        max_model_len: int = DEFAULT_MAX_MODEL_LEN,
        annotator: SceneAnnotator | None = None,
    ) -> None:
        if max_model_len < 256:
            raise ValueError("max_model_len must be at least 256")
        self.model = model
        self.max_model_len = max_model_len
        self.annotator = annotator or SceneAnnotator()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path.rstrip("/")
        try:
            if path.endswith("/models"):
                self._method(request, "GET")
                return self._json(200, self._models())
            if path.endswith("/health"):
                return httpx.Response(200)
            if path.endswith("/tokenize"):
                self._method(request, "POST")
                return self._json(200, self._tokenize(self._body(request)))
            if path.endswith("/chat/completions"):
                self._method(request, "POST")
                return self._json(200, self.complete(self._body(request)))
            raise BadRequest(f"no route for {request.method} {path}", 404, "NotFoundError")
        except BadRequest as exc:
            error = error_body(str(exc), exc.status, exc.kind)
            return self._json(exc.status, {"error": error, "object": "error"})

    # -- endpoints ------------------------------------------------------------------------------

    def _models(self) -> dict[str, Any]:
        card = {
            "id": self.model,
            "object": "model",
            "created": 0,
            "owned_by": "terrarium",
            "root": self.model,
            "parent": None,
            "max_model_len": self.max_model_len,
        }
        return {"object": "list", "data": [card]}

    def _tokenize(self, body: dict[str, Any]) -> dict[str, Any]:
        self._check_model(body)
        if "messages" in body:
            messages = body["messages"]
            if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
                raise BadRequest("'messages' must be a list of objects")
            tools = body.get("tools")
            _tool_names(tools)
            generation = bool(body.get("add_generation_prompt", True))
            count = count_prompt_tokens(messages, tools, add_generation_prompt=generation)
            text = _canonical(messages)
        elif isinstance(body.get("prompt"), str):
            text = body["prompt"]
            count = count_tokens(text)
        else:
            raise BadRequest("give 'messages' (a list) or 'prompt' (a string)")
        ids = _token_ids(text)
        tokens = (ids * (count // max(len(ids), 1) + 1))[:count] if ids else [0] * count
        return {"count": count, "max_model_len": self.max_model_len, "tokens": tokens}

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """The chat completion for a request body (raises `BadRequest`)."""
        self._check_model(body)
        if body.get("stream"):
            raise BadRequest("stream is not supported by the offline backend")
        if body.get("n", 1) != 1:
            raise BadRequest("n must be 1")
        messages = _validate_messages(body.get("messages"))
        tools = body.get("tools")
        tool_names = _tool_names(tools)
        max_tokens = body.get("max_tokens")
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
        ):
            raise BadRequest("max_tokens must be a positive integer")
        prompt_tokens = count_prompt_tokens(messages, tools)
        wanted = max_tokens if max_tokens is not None else 0
        if prompt_tokens + wanted > self.max_model_len or prompt_tokens >= self.max_model_len:
            raise BadRequest(overflow_message(self.max_model_len, prompt_tokens, wanted))
        budget = max_tokens if max_tokens is not None else self.max_model_len - prompt_tokens
        if body.get("tool_choice") == "none":
            tool_names = []
        reply = self.answer(messages, set(tool_names))
        digest = hashlib.sha256(_canonical(body).encode()).hexdigest()[:16]
        message, completion_tokens, finish = self._render(reply, digest, budget)
        return {
            "id": f"chatcmpl-offline-{digest}",
            "object": "chat.completion",
            "created": 0,
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": finish,
                    "stop_reason": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                "prompt_tokens_details": {"cached_tokens": 0},
            },
        }

    # -- the annotator ----------------------------------------------------------------------------

    def answer(self, messages: Sequence[Mapping[str, Any]], tools: set[str]) -> Reply:
        """The reply to a conversation (see the module docstring)."""
        last_user = last_user_index(messages)
        if last_user is None:
            return Reply(content="Send a `# Scene` message or a `# Task:` message.")
        text = content_text(messages[last_user].get("content")).lstrip()
        edition = edition_task(messages)
        if edition is not None:  # the reader's text, composed from the evidence it is shown
            return Reply(content=compose_edition(edition))
        after = messages[last_user + 1 :]
        scene = parse_scene_message(text)
        if scene is not None:
            scene = with_earlier_known(scene, messages[:last_user])
            turns, calls = _calls_after(after)
            return self.annotator.reply(scene, turns, calls, tools)
        task = _TASK_LINE.match(text)
        if task is None:
            return Reply(content="I annotate `# Scene` messages and answer `# Task:` requests.")
        name = task.group(1)
        history = messages[:last_user]
        if name in SUMMARY_CHARS:
            return Reply(content=summarize(name, text, history))
        if name == "flush":
            return Reply(content="Nothing to record: every term of these scenes is written.")
        if name == "curate":
            # never an empty reply (that decides nothing, and is asked again): NONE says so
            return Reply(content=_curate_answer(messages, last_user) or "NONE\n")
        if name == "summon":
            return Reply(content=summon_answer(text, history))
        return Reply(content=f"Task {name!r} is not one the offline backend knows.")

    @staticmethod
    def _render(reply: Reply, digest: str, budget: int) -> tuple[dict[str, Any], int, str]:
        message: dict[str, Any] = {"role": "assistant", "reasoning_content": None}
        if reply.tool_calls:
            calls: list[dict[str, Any]] = []
            spent = 0
            for index, (name, args) in enumerate(reply.tool_calls):
                call = {
                    "id": f"call_{digest}_{index}",
                    "type": "function",
                    "function": {"name": name, "arguments": _canonical(args)},
                }
                cost = count_tokens(_canonical(call["function"]))
                if spent + cost > budget:
                    break
                calls.append(call)
                spent += cost
            if calls:
                complete = len(calls) == len(reply.tool_calls)
                message["content"] = reply.content if reply.content and complete else None
                message["tool_calls"] = calls
                finish = "tool_calls" if len(calls) == len(reply.tool_calls) else "length"
                return message, spent, finish
            message["content"] = ""
            message["tool_calls"] = []
            return message, budget, "length"
        content = reply.content or ""
        tokens = count_tokens(content)
        message["tool_calls"] = []
        if tokens > budget:
            message["content"] = content[: budget * CHARS_PER_TOKEN]
            return message, budget, "length"
        message["content"] = content
        return message, tokens, "stop"

    # -- plumbing ---------------------------------------------------------------------------------

    def _check_model(self, body: Mapping[str, Any]) -> None:
        model = body.get("model")
        if model is not None and model != self.model:
            raise BadRequest(f"The model `{model}` does not exist.", 404, "NotFoundError")

    @staticmethod
    def _method(request: httpx.Request, method: str) -> None:
        if request.method != method:
            raise BadRequest(f"method {request.method} not allowed", 405, "MethodNotAllowed")

    @staticmethod
    def _body(request: httpx.Request) -> dict[str, Any]:
        try:
            body = json.loads(request.read() or b"null")
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise BadRequest(f"the body is not valid JSON: {exc}") from None
        if not isinstance(body, dict):
            raise BadRequest("the body must be a JSON object")
        return body

    @staticmethod
    def _json(status: int, payload: Any) -> httpx.Response:
        content = _canonical(payload).encode()
        return httpx.Response(status, content=content, headers={"content-type": "application/json"})
