"""The agent's tools: argument models, JSON schemas, a registry and `dispatch`.

`dispatch(registry, access, tool_call)` runs one tool call the model made and returns a
`ToolOutcome` whose `result_json` goes back to the model as the tool message. It never raises for
a mistake the model can make (bad JSON, unknown tool, missing or extra field, wrong type, unknown
entry, duplicate term, a write in a read-only context, a post it may not read): the result is
``{"error":"<one line the model can act on>","ok":false}``. Bugs and storage failures still raise.

Results are compact, deterministic JSON (sorted keys, no spaces). Entries appear as
``{"id":"E12","term":...,"aliases":[...],"status":...,"definition":...}``.

Provenance is never invented. `glossary_create` and `glossary_update` record, for each post:
- the `post_ids` the model gave, if each is in the corpus and not after the current scene
  (a post of the current scene, or an earlier one in story order; a later post is refused) and
  each names the term or an alias (or holds the given `quote`);
- otherwise the posts of the current scene where the term or an alias occurs (case- and
  punctuation-insensitive, a possessive or plural allowed), and the post holding the `quote`.
A write whose term (and aliases) and quote occur in none of those posts is an error result
naming what was not found and where, and nothing is written; so is a `quote` that is not in the
cited (or the scene's) posts. Case, whitespace, curly quotes and dashes aside, a quote must be
the post's own words (`glossary.normalize.find_quotation`). The quote stored with a post is the
model's quote in the post's own spelling, else the sentence around the term's first occurrence
(at most 240 characters): a stored quote is always verbatim story text. An update that changes
only tags needs no source.

`read_post` and `read_thread_range` return cleaned post text and never anything after the current
scene (spoiler-free); asking for a later post is an error naming the limit.

Write handlers run inside `store.transaction()` (a SAVEPOINT inside the loop's scene transaction),
so a failed call changes nothing.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    WithJsonSchema,
)
from pydantic.json_schema import SkipJsonSchema

from terrarium_dagster.context.prompts import KINDS, SHOWN_DEFINITION_CHARS
from terrarium_dagster.errors import (
    CorpusError,
    DuplicateTermError,
    EntryNotFoundError,
    InputError,
    StoreError,
)
from terrarium_dagster.jsonform import canonical_json
from terrarium_dagster.store.inputs import parse_entry_id
from terrarium_dagster.store.models import Entry, ProvenanceIn
from terrarium_dagster.store.normalize import find_quotation, normalize_term
from terrarium_dagster.terms.text_search import cut_at_words, first_term, sentence_at

if TYPE_CHECKING:
    from terrarium_dagster.corpus.reader import Corpus
    from terrarium_dagster.corpus.units import Post, Scene
    from terrarium_dagster.store.annotator import Actor, GlossaryStore

QUOTE_CHARS = 240
SEARCH_DEFINITION_CHARS = 2000  # search shows definitions whole
FACT_CHARS = 300
READ_POST_CHARS = 4000
RANGE_POST_CHARS = 1200
RANGE_TOTAL_CHARS = 8000
MAX_RANGE_COUNT = 20
ERROR_CHARS = 400


# --------------------------------------------------------------------------------------------
# Argument models


def _entry_id_field(value: Any) -> int:
    """`parse_entry_id` as an argument check: its InputError becomes the field's error."""
    try:
        return parse_entry_id(value)
    except InputError as exc:
        raise ValueError(str(exc)) from None


EntryId = Annotated[
    int,
    BeforeValidator(_entry_id_field),
    WithJsonSchema({"type": "string", "description": "E12"}),
]
PostId = Annotated[int, Field(gt=0)]
Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=120)]
Tag = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=40)]
Definition = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=SHOWN_DEFINITION_CHARS)
]
Fact = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=FACT_CHARS)]
Kind = Literal[KINDS]  # type: ignore[valid-type]
Quote = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=500)]
Reason = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=300)]


class ToolArgs(BaseModel):
    """Base of tool arguments: unknown fields are refused, strings stripped."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class GlossarySearchArgs(ToolArgs):
    query: str = Field(min_length=1, max_length=200)
    limit: SkipJsonSchema[int] = Field(default=5, ge=1, le=20)


class GlossaryCreateArgs(ToolArgs):
    term: Name
    kind: Kind | None = None
    definition: Definition
    aliases: list[Name] = Field(default_factory=list, max_length=20)
    post_ids: list[PostId] = Field(
        default_factory=list, max_length=20, description="Earlier posts only"
    )
    quote: Quote | None = Field(default=None, description="Copied exactly; optional")
    tags: SkipJsonSchema[list[Tag]] = Field(default_factory=list, max_length=10)


class GlossaryUpdateArgs(ToolArgs):
    entry_id: EntryId
    add_fact: Fact | None = Field(default=None, description="Appended to the definition")
    definition: Definition | None = Field(default=None, description="Replaces it whole")
    add_aliases: list[Name] = Field(default_factory=list, max_length=20)
    post_ids: list[PostId] = Field(default_factory=list, max_length=20)
    quote: Quote | None = None
    kind: SkipJsonSchema[Kind | None] = None
    tags: SkipJsonSchema[list[Tag] | None] = Field(default=None, max_length=10)
    reason: SkipJsonSchema[Reason | None] = None


class GlossaryDeleteArgs(ToolArgs):
    entry_id: EntryId
    reason: Reason


class ReadPostArgs(ToolArgs):
    post_id: PostId


class ReadThreadRangeArgs(ToolArgs):
    start_post_id: PostId
    count: int = Field(default=10, ge=1, le=MAX_RANGE_COUNT)
    thread_id: SkipJsonSchema[PostId | None] = None


# --------------------------------------------------------------------------------------------
# Context, outcome, registry


@dataclass
class ToolAccess:
    """What a tool call may touch: the store, the corpus, who is acting, and where in the story.

    `read_only` access (a summoned snapshot) gets an error result for every write tool.
    """

    store: GlossaryStore
    corpus: Corpus
    actor: Actor
    scene: Scene
    read_only: bool = False
    # posts the tools read, by id: a run's accesses share one (`AgentCalls`); the corpus is read
    # as it stood when the run opened it, as its threads are
    posts_read: dict[int, Post] = field(default_factory=dict, repr=False)
    _positions: dict[int, int] = field(default_factory=dict, init=False, repr=False)

    def post(self, post_id: int) -> Post | None:
        """The corpus's post `post_id` (None when it has none), read once."""
        post = self.posts_read.get(post_id)
        if post is None:
            post = self.corpus.post(post_id)
            if post is not None:
                self.posts_read[post_id] = post
        return post

    def thread_position(self, thread_id: int) -> int:
        if thread_id not in self._positions:
            try:
                self._positions[thread_id] = self.corpus.thread(thread_id).position
            except CorpusError:  # a post of a thread the corpus does not list: never visible
                self._positions[thread_id] = 1 << 62
        return self._positions[thread_id]

    @property
    def last_post(self) -> Post:
        return self.scene.posts[-1]

    def story_key(self, post: Post) -> tuple[int, int, int]:
        return (self.thread_position(post.thread_id), post.time, post.id)

    def may_see(self, post: Post) -> bool:
        """True for a post of the current scene or earlier in story order (nothing later)."""
        if post.id in self.scene.post_ids:
            return True
        return self.story_key(post) <= self.story_key(self.last_post)


@dataclass(frozen=True, slots=True)
class ToolEffect:
    """A glossary change a tool call made: action is "create", "update" or "delete"."""

    action: str
    entry_id: int
    term: str
    post_ids: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """The result of one tool call; `message()` is the tool message to append to the history."""

    tool_call_id: str
    name: str
    ok: bool
    result_json: str
    effects: tuple[ToolEffect, ...] = ()

    def message(self) -> dict[str, Any]:
        return {"role": "tool", "tool_call_id": self.tool_call_id, "content": self.result_json}


class ToolError(Exception):
    """A refusal the model can act on; its message becomes the error result."""


Handler = Callable[["ToolAccess", Any], "HandlerResult"]


@dataclass(frozen=True, slots=True)
class HandlerResult:
    payload: dict[str, Any]
    effects: tuple[ToolEffect, ...] = ()


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool: its name, a short description, its argument model and handler.

    `writes` marks tools refused in read-only contexts. A tool not `advertised` is left out of
    the schemas sent with every request (a lean prefix) but still runs when called: another
    tool's result names it where it can be used (summon_continue after summon_snapshot).
    """

    name: str
    description: str
    args_model: type[BaseModel]
    handler: Handler
    writes: bool = False
    advertised: bool = True

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-tool schema, keys sorted at every level."""
        parameters = compact_schema(self.args_model.model_json_schema())
        return _sorted_dict(
            {
                "type": "function",
                "function": {
                    "name": self.name,
                    "description": self.description,
                    "parameters": parameters,
                },
            }
        )


class ToolRegistry(Mapping[str, Tool]):
    """Tools by name, in registration order (the order of `schemas()`)."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        """The `tools` list of a chat request (the advertised tools): byte-identical for a
        given registry."""
        return [tool.schema() for tool in self._tools.values() if tool.advertised]

    def schemas_json(self) -> str:
        return canonical_json(self.schemas())

    def only(self, names: Iterable[str]) -> ToolRegistry:
        wanted = set(names)
        return ToolRegistry(tool for name, tool in self._tools.items() if name in wanted)

    def read_only(self) -> ToolRegistry:
        """The tools that do not write."""
        return ToolRegistry(tool for tool in self._tools.values() if not tool.writes)


_SCHEMA_DROPPED = frozenset(
    {
        "title",
        "minLength",
        "maxLength",
        "maxItems",
        "exclusiveMinimum",
        "minimum",
        "maximum",
        "additionalProperties",
    }
)


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A pydantic JSON schema trimmed for the model: no titles, `X | None` as X, no null
    defaults, no length or number bounds, no `additionalProperties` (validation still enforces
    them all; the error result names them). Tokens spent on schemas are spent on every call."""

    def trim(node: Any) -> Any:
        if isinstance(node, list):
            return [trim(item) for item in node]
        if not isinstance(node, dict):
            return node
        node = {
            key: (
                {name: trim(sub) for name, sub in value.items()}
                if key == "properties"
                else trim(value)
            )
            for key, value in node.items()
            if key not in _SCHEMA_DROPPED
        }
        any_of = node.get("anyOf")
        if isinstance(any_of, list):
            kept = [branch for branch in any_of if branch != {"type": "null"}]
            if len(kept) == 1 and len(kept) < len(any_of):
                node = {key: value for key, value in node.items() if key != "anyOf"} | kept[0]
        if "default" in node and node["default"] is None:
            del node["default"]
        return node

    return trim(schema)


def _sorted_dict(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _sorted_dict(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted_dict(item) for item in value]
    return value


# --------------------------------------------------------------------------------------------
# Dispatch


def dispatch(registry: Mapping[str, Tool], access: ToolAccess, tool_call: Any) -> ToolOutcome:
    """Run one tool call (a protocol `ToolCall` or its dict form) and return its outcome."""
    call_id, name, raw_arguments = _call_parts(tool_call)
    tool = registry.get(name)
    if tool is None:
        available = ", ".join(registry)
        return _failure(call_id, name, f"unknown tool {name!r}; available: {available}")
    if tool.writes and access.read_only:
        return _failure(
            call_id,
            name,
            f"{name} is refused: this context is read-only and cannot change the glossary",
        )
    try:
        arguments = _parse_arguments(raw_arguments)
        args = tool.args_model.model_validate(arguments)
    except ToolError as exc:
        return _failure(call_id, name, f"{name}: {exc}")
    except ValidationError as exc:
        return _failure(call_id, name, describe_validation_error(tool, exc))
    try:
        if tool.writes:
            with access.store.transaction():
                result = tool.handler(access, args)
        else:
            result = tool.handler(access, args)
    except ToolError as exc:
        return _failure(call_id, name, str(exc))
    except DuplicateTermError as exc:
        return _failure(call_id, name, str(exc))
    except EntryNotFoundError as exc:
        return _failure(call_id, name, f"{exc}; find entries with glossary_search")
    except StoreError as exc:
        if isinstance(exc.__cause__, sqlite3.Error):
            raise  # the store failed, not the model
        return _failure(call_id, name, str(exc))
    except InputError as exc:  # the store refused an argument (e.g. a name without letters)
        return _failure(call_id, name, str(exc))
    payload = {"ok": True, **result.payload}
    return ToolOutcome(call_id, name, True, canonical_json(payload), result.effects)


def _call_parts(tool_call: Any) -> tuple[str, str, Any]:
    if isinstance(tool_call, Mapping):
        function = tool_call.get("function") or {}
        call_id = tool_call.get("id") or ""
        if isinstance(function, Mapping):
            return str(call_id), str(function.get("name") or ""), function.get("arguments")
        return str(call_id), "", None
    function = getattr(tool_call, "function", None)
    return (
        str(getattr(tool_call, "id", "") or ""),
        str(getattr(function, "name", "") or ""),
        getattr(function, "arguments", None),
    )


def arguments_unreadable(tool_call: Any) -> bool:
    """Whether a tool call's arguments are no JSON object (text a mismatched tool-call parser
    left, or a model that cannot write JSON): the call can only be answered with an error."""
    try:
        _parse_arguments(_call_parts(tool_call)[2])
    except ToolError:
        return True
    return False


def _parse_arguments(raw: Any) -> dict[str, Any]:
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    if not isinstance(raw, str):
        raise ToolError("arguments must be a JSON object")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ToolError(
            f"arguments are not valid JSON ({exc.msg} at character {exc.pos}); send one JSON object"
        ) from None
    if not isinstance(value, dict):
        raise ToolError(f"arguments must be a JSON object, not {type(value).__name__}")
    return value


def describe_validation_error(tool: Tool, exc: ValidationError) -> str:
    """One line: what is wrong with each field, then the fields the tool takes."""
    problems: list[str] = []
    for error in exc.errors():
        where = ".".join(str(item) for item in error["loc"]) or "arguments"
        kind = error["type"]
        if kind == "missing":
            problems.append(f"missing field {where!r}")
        elif kind == "extra_forbidden":
            problems.append(f"unknown field {where!r}")
        else:
            message = str(error["msg"]).removeprefix("Value error, ")
            problems.append(f"{where!r}: {message}")
    shown = tool.schema()["function"]["parameters"].get("properties", {})
    fields = ", ".join(
        f"{key}{'' if info.is_required() else '?'}"
        for key, info in tool.args_model.model_fields.items()
        if key in shown
    )
    return f"bad arguments for {tool.name}: {'; '.join(problems)} (fields: {fields})"


def _failure(call_id: str, name: str, message: str) -> ToolOutcome:
    line = " ".join(message.split())
    if len(line) > ERROR_CHARS:
        line = line[: ERROR_CHARS - 1] + "…"
    return ToolOutcome(call_id, name, False, canonical_json({"ok": False, "error": line}))


# --------------------------------------------------------------------------------------------
# Rendering


def _truncate(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def entry_brief(entry: Entry, *, definition_chars: int = SEARCH_DEFINITION_CHARS) -> dict[str, Any]:
    """An entry as the model sees it in results; empty fields are left out, and a rejected
    entry is its id, term and status only."""
    brief: dict[str, Any] = {"id": entry.ref, "term": entry.term, "status": entry.status}
    if entry.status == "rejected":
        return brief
    brief["definition"] = _truncate(entry.definition, definition_chars)
    if entry.aliases:
        brief["aliases"] = list(entry.aliases)
    if entry.tags:
        brief["tags"] = list(entry.tags)
    if entry.merged_into is not None:
        brief["merged_into"] = f"E{entry.merged_into}"
    if entry.deleted:
        brief["deleted"] = True
    return brief


def entry_ack(entry: Entry) -> dict[str, Any]:
    """What a write returns: the entry's id and term, not the text the model just sent (every
    token of a tool result is paid for as prompt on the next call)."""
    return {"id": entry.ref, "term": entry.term}


def _post_view(post: Post, limit: int) -> dict[str, Any]:
    text = post.text
    view: dict[str, Any] = {
        "id": post.id,
        "thread_id": post.thread_id,
        "name": post.name or "Anonymous",
        "qm": bool(post.is_qm),
        "vote_tally": bool(post.is_vote_tally),
        "text": text if len(text) <= limit else text[: limit - 1] + "…",
    }
    if len(text) > limit:
        view["truncated"] = True
    if post.subject:
        view["subject"] = post.subject
    return view


# --------------------------------------------------------------------------------------------
# Provenance


def _spoiler_error(access: ToolAccess, post_id: int) -> ToolError:
    last = access.last_post
    return ToolError(
        f"post {post_id} is after the current scene; the story so far ends at post {last.id} "
        f"(thread {last.thread_id})"
    )


def _visible_post(access: ToolAccess, post_id: int) -> Post:
    post = access.post(post_id)
    if post is None:
        raise ToolError(f"post {post_id} is not in the corpus")
    if not access.may_see(post):
        raise _spoiler_error(access, post_id)
    return post


def _first_occurrence(text: str, names: Sequence[str]) -> int | None:
    return _first_of(text, tuple(names))


@lru_cache(maxsize=8192)
def _first_of(text: str, names: tuple[str, ...]) -> int | None:
    """Where the first of `names` (or a plural of one) occurs in `text`. Every draft of a block,
    every replay of its writes and every commit asks it again of the scene's posts with the
    same names, so its answers are kept."""
    offsets = [at for at in (first_term(text, name) for name in names) if at is not None]
    if not offsets:  # a plural ("Apaches" for "Apache") names it too
        plurals = [f"{name}{ending}" for name in names for ending in ("s", "es")]
        offsets = [at for at in (first_term(text, name) for name in plurals) if at is not None]
    return min(offsets) if offsets else None


def _verbatim(post_text: str, quote: str) -> str | None:
    """The post's own words matching `quote` (case, whitespace, curly quotes aside), cut to
    QUOTE_CHARS; None when the post does not hold them."""
    found = find_quotation(post_text, quote)
    if found is None or len(found) < 3:
        return None
    flat = " ".join(found.split())
    return cut_at_words(flat, 0, QUOTE_CHARS)  # verbatim: whole words, nothing added


def _post_list(posts: Sequence[Post]) -> str:
    ids = [str(post.id) for post in posts]
    if len(ids) > 6:
        ids = [*ids[:3], "…", *ids[-2:]]
    return f"post{'s' if len(posts) > 1 else ''} {', '.join(ids)}"


def _not_named(names: Sequence[str]) -> str:
    """The phrase for names not found: 'X' does not occur, or none of 'X', 'Y' occurs."""
    if len(names) == 1:
        return f"{names[0]!r} does not occur"
    shown = ", ".join(repr(name) for name in names[:4])
    return f"none of {shown}{', …' if len(names) > 4 else ''} occurs"


def resolve_provenance(
    access: ToolAccess,
    names: Sequence[str],
    post_ids: Sequence[int],
    quote: str | None,
) -> list[ProvenanceIn]:
    """Provenance for a create/update (see the module docstring for the rules); ToolError when
    the names or the quote are not where the write says (or, without post_ids, not in the
    current scene)."""
    names = [name for name in names if name.strip()]
    cited = bool(post_ids)
    if cited:
        candidates = [_visible_post(access, post_id) for post_id in dict.fromkeys(post_ids)]
        where = _post_list(candidates)
    else:
        candidates = list(access.scene.posts)
        where = f"the current scene ({_post_list(candidates)})"
    quoted: Post | None = None
    quote_text = ""
    if quote:
        for post in candidates:
            found = _verbatim(post.text, quote)
            if found:
                quoted, quote_text = post, found
                break
        if quoted is None:
            raise ToolError(
                f"quote {_truncate(quote, 60)!r} is not in {where}; copy the words exactly "
                "as the post writes them, or leave quote out"
            )
    naming = [post for post in candidates if _first_occurrence(post.text, names) is not None]
    if cited:
        missing = [post for post in candidates if post not in naming and post is not quoted]
        if missing:
            raise ToolError(
                f"{_not_named(names)} in {_post_list(missing)}; cite only posts that name "
                "it (read_post to check), or leave post_ids out to use the current scene"
            )
        posts = candidates
    else:
        posts = [post for post in candidates if post in naming or post is quoted]
        if not posts:
            raise ToolError(
                f"{_not_named(names)} in {where}; give post_ids of the earlier post(s) that "
                "name it (glossary_search or read_thread_range to find them)"
            )
    items: list[ProvenanceIn] = []
    for post in posts:
        text = quote_text if post is quoted else ""
        if not text:
            offset = _first_occurrence(post.text, names)
            if offset is not None:
                text = sentence_at(post.text, offset, QUOTE_CHARS)
        items.append(ProvenanceIn(post_id=post.id, thread_id=post.thread_id, quote=text))
    return items


# --------------------------------------------------------------------------------------------
# Handlers


def _existing_entry_error(entry: Entry, name: str) -> ToolError:
    if entry.status == "rejected":
        return _rejected_error(entry, name)
    return ToolError(
        f"{name!r} already exists as {entry.ref} ({entry.term}) [{entry.status}]; "
        f'use glossary_update with entry_id "{entry.ref}"'
    )


def _rejected_error(entry: Entry, name: str | None = None) -> ToolError:
    """A rejected name is not recorded again: the error says so, and offers nothing to do."""
    named = f"{name!r} is {entry.ref}, " if name else f"{entry.ref} ({entry.term}) is "
    return ToolError(
        f"{named}rejected by review as not a glossary term; it is not recorded: move on"
    )


def _search(access: ToolAccess, args: GlossarySearchArgs) -> HandlerResult:
    hits = access.store.glossary.search(args.query, limit=args.limit)
    payload: dict[str, Any] = {"hits": [entry_brief(hit.entry) for hit in hits]}
    if not hits:
        payload["note"] = "no entry matches"
    return HandlerResult(payload)


def _create(access: ToolAccess, args: GlossaryCreateArgs) -> HandlerResult:
    if not normalize_term(args.term):
        raise ToolError(f"term {args.term!r} has no letters or digits to name anything")
    aliases = _distinct_names(args.aliases, exclude=[args.term])
    for name in (args.term, *aliases):
        existing = access.store.glossary.find_by_term(name)
        if existing is not None:
            raise _existing_entry_error(existing, name)
    provenance = resolve_provenance(access, [args.term, *aliases], args.post_ids, args.quote)
    tags = ([args.kind] if args.kind else []) + list(args.tags)
    entry = access.store.glossary.create_entry(
        access.actor,
        args.term,
        args.definition,
        tags=tuple(dict.fromkeys(tags)),
        aliases=tuple(aliases),
        provenance=provenance,
    )
    posts = tuple(item.post_id for item in provenance)
    return HandlerResult(
        {"entry": entry_ack(entry)},
        (ToolEffect("create", entry.id, entry.term, posts),),
    )


def _live_target(access: ToolAccess, entry_id: int) -> tuple[Entry, str | None]:
    entry = access.store.glossary.get_entry(entry_id)
    note = None
    seen = {entry.id}
    while entry.merged_into is not None and not entry.deleted:
        target = access.store.glossary.get_entry(entry.merged_into)
        if target.id in seen:
            break
        seen.add(target.id)
        note = f"E{entry_id} was merged into {target.ref}; {target.ref} was used"
        entry = target
    if entry.deleted:
        reason = f": {entry.delete_reason}" if entry.delete_reason else ""
        raise ToolError(f"{entry.ref} was deleted{reason}; create a new entry if it is needed")
    return entry, note


def _new_definition(entry: Entry, args: GlossaryUpdateArgs) -> str | None:
    """The definition after the update: `definition` replaces one the model could see whole
    (at most SHOWN_DEFINITION_CHARS, the length Known entries and search show whole);
    `add_fact` appends a sentence to any."""
    if args.definition is not None and args.add_fact is not None:
        raise ToolError("give definition (replaces it) or add_fact (appends), not both")
    if args.add_fact is not None:
        fact = args.add_fact if args.add_fact[-1] in ".!?…" else args.add_fact + "."
        current = entry.definition.rstrip()
        return f"{current} {fact}" if current else fact
    if args.definition is not None and len(entry.definition) > SHOWN_DEFINITION_CHARS:
        raise ToolError(
            f"{entry.ref}'s definition is {len(entry.definition)} characters, longer than "
            "Known entries show; a replacement would lose what you did not see: use add_fact"
        )
    return args.definition


def _update(access: ToolAccess, args: GlossaryUpdateArgs) -> HandlerResult:
    entry, note = _live_target(access, args.entry_id)
    if entry.status == "rejected":
        raise _rejected_error(entry)
    new_definition = _new_definition(entry, args)
    given_tags = None if args.tags is None and args.kind is None else list(args.tags or [])
    if args.kind is not None:
        assert given_tags is not None
        given_tags = [args.kind, *(tag for tag in given_tags if tag != args.kind)]
    known = {normalize_term(name) for name in (entry.term, *entry.aliases)}
    new_aliases = [a for a in _distinct_names(args.add_aliases) if normalize_term(a) not in known]
    for alias in new_aliases:
        other = access.store.glossary.find_by_term(alias)
        if other is not None and other.id != entry.id:
            raise _existing_entry_error(other, alias)
    names = [entry.term, *entry.aliases, *new_aliases]
    sourced = new_definition is not None or bool(new_aliases)
    mentioned = any(_first_occurrence(p.text, names) is not None for p in access.scene.posts)
    if not (sourced or given_tags is not None or args.post_ids or args.quote) and not mentioned:
        raise ToolError(
            f"nothing to update for {entry.ref}: give add_fact, add_aliases, kind or post_ids"
        )
    if sourced or args.post_ids or args.quote or mentioned:
        provenance = resolve_provenance(access, names, args.post_ids, args.quote)
    else:
        provenance = []  # a change of tags alone cites nothing
    recorded = access.store.provenance.sourced_posts(
        entry.id, (item.post_id for item in provenance)
    )
    provenance = [item for item in provenance if item.post_id not in recorded]
    tags = None if given_tags is None else list(dict.fromkeys(given_tags))
    if tags == entry.tags:
        tags = None
    definition = new_definition if new_definition != entry.definition else None
    posts = tuple(item.post_id for item in provenance)
    if definition is None and tags is None and not new_aliases and not provenance:
        return HandlerResult({"entry": entry_ack(entry), "note": "nothing new: already recorded"})
    updated = access.store.glossary.update_entry(
        access.actor,
        entry.id,
        definition=definition,
        tags=tags,
        add_aliases=tuple(new_aliases),
        provenance=provenance,
        reason=args.reason,
    )
    payload: dict[str, Any] = {"entry": entry_ack(updated)}
    if note:
        payload["note"] = note
    return HandlerResult(payload, (ToolEffect("update", updated.id, updated.term, posts),))


def _delete(access: ToolAccess, args: GlossaryDeleteArgs) -> HandlerResult:
    entry = access.store.glossary.get_entry(args.entry_id)
    if entry.deleted:
        raise ToolError(f"{entry.ref} is already deleted")
    deleted = access.store.glossary.delete_entry(access.actor, entry.id, args.reason)
    return HandlerResult(
        {"deleted": deleted.ref, "term": deleted.term},
        (ToolEffect("delete", deleted.id, deleted.term),),
    )


def _read_post(access: ToolAccess, args: ReadPostArgs) -> HandlerResult:
    post = _visible_post(access, args.post_id)
    return HandlerResult({"post": _post_view(post, READ_POST_CHARS)})


def _read_thread_range(access: ToolAccess, args: ReadThreadRangeArgs) -> HandlerResult:
    start = _visible_post(access, args.start_post_id)
    thread_id = args.thread_id or start.thread_id
    if thread_id != start.thread_id:
        raise ToolError(
            f"post {start.id} is in thread {start.thread_id}, not {thread_id}; "
            "omit thread_id or give the post's thread"
        )
    posts = access.corpus.post_range(thread_id, start.id, args.count)
    views: list[dict[str, Any]] = []
    spent = 0
    payload: dict[str, Any] = {"thread_id": thread_id}
    for post in posts:
        if not access.may_see(post):
            payload["stopped"] = f"the story so far ends at post {access.last_post.id}"
            break
        view = _post_view(post, RANGE_POST_CHARS)
        spent += len(view["text"])
        if views and spent > RANGE_TOTAL_CHARS:
            payload["stopped"] = f"size limit; continue from post {post.id}"
            break
        views.append(view)
    payload["posts"] = views
    return HandlerResult(payload)


def _distinct_names(names: Iterable[str], exclude: Iterable[str] = ()) -> list[str]:
    seen = {normalize_term(name) for name in exclude}
    result: list[str] = []
    for name in names:
        key = normalize_term(name)
        if key and key not in seen:
            seen.add(key)
            result.append(name)
    return result


GLOSSARY_SEARCH = Tool(
    "glossary_search",
    "Find entries by name or words.",
    GlossarySearchArgs,
    _search,
)
GLOSSARY_CREATE = Tool(
    "glossary_create",
    "Create an entry for a new name.",
    GlossaryCreateArgs,
    _create,
    writes=True,
)
GLOSSARY_UPDATE = Tool(
    "glossary_update",
    "Add to an entry. add_fact appends to its definition; definition replaces it whole (only "
    "one you saw whole).",
    GlossaryUpdateArgs,
    _update,
    writes=True,
)
GLOSSARY_DELETE = Tool(
    "glossary_delete",
    "Delete a wrong entry.",
    GlossaryDeleteArgs,
    _delete,
    writes=True,
)
READ_POST = Tool(
    "read_post",
    "Read an earlier post (read_thread_range reads several), only if needed.",
    ReadPostArgs,
    _read_post,
)
READ_THREAD_RANGE = Tool(
    "read_thread_range",
    "Read up to 20 posts from a start post.",
    ReadThreadRangeArgs,
    _read_thread_range,
    advertised=False,  # read_post names it; several read_post calls in one message do as well
)

GLOSSARY_TOOLS: tuple[Tool, ...] = (
    GLOSSARY_SEARCH,
    GLOSSARY_CREATE,
    GLOSSARY_UPDATE,
    GLOSSARY_DELETE,
    READ_POST,
    READ_THREAD_RANGE,
)


def default_registry() -> ToolRegistry:
    """A fresh registry of the glossary and reading tools; add more with `register`."""
    return ToolRegistry(GLOSSARY_TOOLS)
