"""Scenes drafted side by side, committed in story order: how a run keeps many requests in flight
and still writes what a serial run would decide.

A thread's scenes are taken in **blocks** of `concurrency` scenes, fixed by the corpus and the
settings (block k of a thread holds its scenes k·n … k·n+n−1), never by the timing of replies.
A block is one unit of committed work, one store transaction (`run_block`):

1. **Make room** once, for the block's largest scene message (compaction, as a serial run does
   before each scene).
2. **Draft** every scene of the block at once, each from the committed past: its own copy of the
   context, its own fork of the token counter, and its own view of the glossary (its tool calls
   run on the owner thread inside a savepoint that replays the draft's earlier writes and is then
   rolled back). A draft records what it read: the entries its scene message was built from and
   every tool call with its result. Only the HTTP requests run on other threads.
3. **Commit in story order** (`commit_draft`): the draft's calls are replayed in a savepoint
   against the glossary as the earlier scenes left it. It is **set aside** when its reads meet
   what an earlier scene of the block wrote — its scene now mentions an entry it was not shown (a
   name created meanwhile, an alias added), a search of it would find other entries, or a write
   of it now fails (a create of a name taken meanwhile) — and the next **wave** drafts it again
   from the committed state, beside every later draft that would not commit either. A later
   draft is judged, and drafted again, **as if the uncommitted drafts before it had committed as
   drafted** (`speculating`: their writes replayed in its view of the glossary; of a draft
   that will itself be decided again, a short form it created replayed as the alias its
   redraft will most likely add, `_as_alias`), so a chain
   of scenes that need each other's new names is in view a wave early; its commit still checks
   everything it read against what was really committed. Nothing is committed while a wave
   drafts, so a wave's tool calls read the glossary as it began. Writes
   that compose are kept: a fact appended to an entry another scene changed, and a definition
   replaced from an older text, merged sentence by sentence with what was written since, so
   nothing an earlier scene added is lost. A draft's own creates got ids from the wave's start;
   the commit writes the ids it gave into the turns, the tool results and the model's own words.

A draft that needed the shared context compacted (the server refused a request as too long, or
its own copy had to compact) is annotated serially at its turn, so no compaction is logged that
the committed context did not have. A wave that drafts scenes again first makes room on the
committed context (`BlockSteps.make_room`), as the serial run does at that scene's turn: the
scenes committed since the block began made the history longer than the room it made.

Conflicts are decided by content at the points where waves begin, never by timing:
a run is deterministic, and a killed run loses at most the open block and redoes it from the same
committed past — the same requests, so, with the same model answers, the same glossary.
"""

from __future__ import annotations

import json
import logging
import queue
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from terrarium_dagster.agent.definition_merge import merge_definition
from terrarium_dagster.agent.tools import (
    FACT_CHARS,
    ToolAccess,
    ToolOutcome,
    ToolRegistry,
    arguments_unreadable,
    dispatch,
)
from terrarium_dagster.context import prompts
from terrarium_dagster.context.compaction import CompactionEvent, ContextManager
from terrarium_dagster.context.state import Message
from terrarium_dagster.context.tokens import TokenCounter
from terrarium_dagster.corpus.units import Scene
from terrarium_dagster.errors import (
    ContextOverflowError,
    EntryNotFoundError,
    InputError,
    Interrupted,
    StoreError,
)
from terrarium_dagster.model.client import ChatResult
from terrarium_dagster.model.protocol import assistant_message_dict
from terrarium_dagster.store.inputs import parse_entry_id
from terrarium_dagster.store.models import UNREADABLE, Entry
from terrarium_dagster.store.normalize import normalize_term

log = logging.getLogger(__name__)

WAIT_TICK_S = 0.25  # how often the owner thread looks at the stop flag while replies are due


class DraftCounter:
    """A drafted scene's private fork of the run's token counter, remembering every server count
    it was shown so the commit can teach the run's counter the same, in story order."""

    def __init__(self, base: TokenCounter) -> None:
        self.inner = base.fork()
        self.observed: list[tuple[list[Message], Any, int]] = []

    def observe(self, messages: Sequence[Message], tools: Any, actual: int) -> None:
        self.observed.append((list(messages), tools, actual))
        self.inner.observe(messages, tools, actual)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@dataclass
class DraftCall:
    """A tool call a draft made, with what it returned in the draft's view. `base`: for an update
    that replaces a definition, the definition it replaced there (what the model was shown), so
    the commit can merge it with what earlier scenes of the block wrote meanwhile."""

    call: dict[str, Any]
    outcome: ToolOutcome
    writes: bool
    base: str | None = None
    target: str | None = None  # the term of the entry it names by id (`entry_id`), as it saw it


class Conflict(Exception):
    """A draft read what an earlier scene of its block changed: it is decided again."""


REDRAFTS = "redrafts"  # in a scene's tally: its draft was set aside and the scene decided again


def new_tally() -> dict[str, int]:
    """A scene's count of its rounds' answers: all, cut at max_tokens, tool calls made, and (when
    any) tool calls whose arguments were no JSON object (kept in the thread's state;
    `ThreadState.suspect` reads it)."""
    return {"answers": 0, "cut": 0, "tool_calls": 0}


def tally_answer(tally: dict[str, int], result: ChatResult) -> None:
    tally["answers"] += 1
    tally["cut"] += result.finish_reason == "length"
    tally["tool_calls"] += len(result.tool_calls)
    unreadable = sum(arguments_unreadable(call) for call in result.tool_calls)
    if unreadable:  # counted only when it happens: a sound run's records stay as they were
        tally[UNREADABLE] = tally.get(UNREADABLE, 0) + unreadable


@dataclass
class SceneDraft:
    """One scene annotated against the block's committed past: its turns and its writes."""

    scene: Scene
    index: int  # the scene's index in its thread
    context: ContextManager
    counter: DraftCounter
    turns: list[Message]
    events: list[CompactionEvent] = field(default_factory=list)
    reads: frozenset[int] = frozenset()  # the entries its scene message was built from
    # those entries as it read them, (id, term): a read of another thing under that id conflicts
    read_as: frozenset[tuple[int, str]] = frozenset()
    # the earlier drafts of its block, not yet committed, whose writes its view included (in
    # story order): it was drafted as if they had committed as drafted (`speculating`)
    basis: tuple[SceneDraft, ...] = ()
    views: SpeculativeViews | None = None  # while its wave drafts: the savepoints it shares
    calls: list[DraftCall] = field(default_factory=list)
    rounds: int = 0
    done: bool = False
    serial: bool = False  # could not be drafted alone: annotated serially at its turn
    # set aside, or judged stale: it will be decided again, so a view that replays it guesses
    # what its redraft will write (`replay`: a short form it created becomes an alias)
    stale: bool = False
    answers: dict[str, int] = field(default_factory=new_tally)

    def next_request(self, max_rounds: int, thread_id: int) -> list[Message] | None:
        """The messages of the draft's next model call, or None when the scene is finished."""
        if self.done or self.rounds >= max_rounds:
            self.done = True
            return None
        plan = self.context.prepare_call(self.turns, thread_id=thread_id)
        self.turns = plan.scene_messages
        self.rounds += 1
        return plan.messages

    def take(
        self, result: ChatResult, run_tools: Callable[[SceneDraft, list[Any]], list[ToolOutcome]]
    ) -> None:
        """Append the model's answer and the results of its tool calls."""
        self.turns.append(assistant_message_dict(result.message))
        tally_answer(self.answers, result)
        if not result.tool_calls:
            self.done = True
            return
        outcomes = run_tools(self, [_call_dict(call) for call in result.tool_calls])
        self.turns.extend(outcome.message() for outcome in outcomes)
        if prompts.says_scene_done(result.content) and all(o.ok for o in outcomes):
            self.done = True


class _Discard(Exception):
    """Raised inside a draft's savepoint to roll it back."""


class SpeculativeViews:
    """Savepoints kept open while a wave drafts, one per draft of a basis replayed: the drafts
    of a wave have bases that are prefixes of one another (the drafts before each), so a tool
    call of a draft reuses the replays its basis shares with the last one served (the levels
    past it are rolled back). What a view holds is decided by the basis alone, never by the
    order of the calls; only the work of building it is shared."""

    def __init__(self) -> None:
        self._levels: list[tuple[SceneDraft, AbstractContextManager[None]]] = []
        self._maps: list[dict[int, int] | None] = []

    def enter(
        self, ctx: ToolAccess, registry: ToolRegistry, basis: Sequence[SceneDraft]
    ) -> list[dict[int, int] | None]:
        """Make the open savepoints hold exactly the replay of `basis`, in order; returns what
        `replay` returns for it."""
        shared = 0
        for (held, _), wanted in zip(self._levels, basis, strict=False):
            if held is not wanted:
                break
            shared += 1
        while len(self._levels) > shared:
            self._pop()
        for draft in basis[shared:]:
            level = ctx.store.transaction()
            level.__enter__()
            self._levels.append((draft, level))
            self._maps.extend(replay(ctx, registry, [draft]))
        return list(self._maps)

    def close(self) -> None:
        """Roll every open savepoint back."""
        while self._levels:
            self._pop()

    def _pop(self) -> None:
        _, level = self._levels.pop()
        del self._maps[len(self._levels) :]
        level.__exit__(_Discard, _Discard(), None)  # rolls the savepoint back


def run_tools_in_savepoint(
    ctx: ToolAccess, registry: ToolRegistry, draft: SceneDraft, calls: list[dict[str, Any]]
) -> list[ToolOutcome]:
    """Run `calls` against the block's committed past (plus, for a redraft, the drafts of its
    basis as drafted) plus the draft's own earlier writes, then roll everything back. Every call
    joins the draft's calls, in order."""
    outcomes: list[ToolOutcome] = []
    bases: list[str | None] = []
    targets: list[str | None] = []
    if draft.views is not None:
        draft.views.enter(ctx, registry, draft.basis)
    try:
        with ctx.store.transaction():
            if draft.views is None:
                replay(ctx, registry, draft.basis)
            for earlier in draft.calls:
                if earlier.writes:
                    dispatch(registry, ctx, earlier.call)
            for call in calls:
                bases.append(_replaced_definition(ctx, call))
                targets.append(_target_term(ctx, call))
                outcomes.append(dispatch(registry, ctx, call))
            raise _Discard
    except _Discard:
        pass
    for call, outcome, base, target in zip(calls, outcomes, bases, targets, strict=True):
        tool = registry.get(outcome.name)
        writes = tool is not None and tool.writes and outcome.ok
        draft.calls.append(DraftCall(call, outcome, writes, base if writes else None, target))
    return outcomes


def commit_draft(
    ctx: ToolAccess, registry: ToolRegistry, draft: SceneDraft, *, reads_now: frozenset[int]
) -> list[Message]:
    """Commit `draft` against the glossary as the earlier scenes of its block left it, or raise
    `Conflict` (nothing written) when what it read has changed in a way that could change what it
    decided. Decided by content, never by timing:

    - its scene now mentions an entry it was not shown (an earlier scene created the name, or
      gave an entry the alias the scene uses): the model might have spent its lookups or its
      creates otherwise;
    - one of its searches would now find other entries;
    - one of its writes now fails (a create of a name an earlier scene took meanwhile).

    What composes is kept, not redone: facts appended to an entry another scene changed, and a
    definition replaced from an older text, merged sentence by sentence with what the earlier
    scenes wrote since (nothing they added is lost). Returns the draft's turns with the ids the
    commit gave (a draft's own creates got ids from the block's start) and the results the
    writes had now."""
    unseen = reads_now - draft.reads
    if unseen:
        raise Conflict(f"it now mentions {', '.join(f'E{i}' for i in sorted(unseen))}")
    if draft.read_as and read_as(ctx, draft.reads) != draft.read_as:
        raise Conflict("an entry it was shown is now another thing or gone")
    ids: dict[int, int] = {}
    results: dict[str, ToolOutcome] = {}
    arguments: dict[str, str] = {}
    with ctx.store.transaction():  # a savepoint: a conflict rolls back what was replayed
        for item in draft.calls:
            if item.writes:
                call = _merged(ctx, _remap(item.call, ids), item.base)
                if item.target is not None and _target_term(ctx, call) != item.target:
                    raise Conflict("an entry it wrote by id is now another thing")
                outcome = dispatch(registry, ctx, call)
                if not outcome.ok:
                    raise Conflict(f"{outcome.name} now fails: {outcome.result_json[:200]}")
                for before, after in zip(item.outcome.effects, outcome.effects, strict=False):
                    if before.entry_id != after.entry_id:
                        ids[before.entry_id] = after.entry_id
                if call is not item.call:
                    arguments[item.outcome.tool_call_id] = call["function"]["arguments"]
                if outcome.result_json != map_ids(item.outcome.result_json, ids):
                    results[item.outcome.tool_call_id] = outcome
            elif item.outcome.name == "glossary_search" and item.outcome.ok:
                now = dispatch(registry, ctx, _remap(item.call, ids))
                if _hits(now.result_json) != _hits(map_ids(item.outcome.result_json, ids)):
                    raise Conflict("a search of it would now find other entries")
    return [_rewrite(message, results, arguments, ids) for message in draft.turns]


def would_commit(
    ctx: ToolAccess,
    registry: ToolRegistry,
    draft: SceneDraft,
    *,
    reads_now: Callable[[], frozenset[int]],
    basis: Sequence[SceneDraft] = (),
    views: SpeculativeViews | None = None,
) -> bool:
    """Whether `draft`, as far as it has got, would commit against the glossary as it stands
    now, or as it would stand once the drafts of `basis` committed as drafted (`commit_draft`
    tried and rolled back): a draft that would not is drafted again early. `views`: the
    savepoints to replay `basis` in, kept for the next judgement."""
    if views is not None:
        views.enter(ctx, registry, basis)
    try:
        with ctx.store.transaction():
            if views is None:
                replay(ctx, registry, basis)
            commit_draft(ctx, registry, draft, reads_now=reads_now())
            raise _Discard
    except _Discard:
        return True
    except Conflict:
        return False


def replay(
    ctx: ToolAccess, registry: ToolRegistry, drafts: Sequence[SceneDraft]
) -> list[dict[int, int] | None]:
    """Write what `drafts` wrote, in order, as far as it still applies (a write that now fails is
    left out), inside the caller's savepoint: the glossary as it would stand if these drafts,
    not yet committed, committed as drafted. Decided by the drafts' content alone. Returns, per
    draft, the ids its creates got here where they differ from the draft's own, or None when a
    write of it failed here."""
    maps: list[dict[int, int] | None] = []
    for draft in drafts:
        ids: dict[int, int] = {}
        clean = True
        # as its own scene writes: its posts, its actor (whoever's view replays it)
        own = replace(ctx, scene=draft.scene, actor=replace(ctx.actor, scene_id=draft.scene.id))
        for item in draft.calls:
            if not item.writes:
                continue
            call = _retargeted(own, _remap(item.call, ids), item.target)
            if call is None:  # no entry of this view bears the term it wrote by id
                clean = False
                continue
            call = _merged(own, call, item.base)
            if draft.stale:
                call = _as_alias(own, call)
            outcome = dispatch(registry, own, call)
            clean = clean and outcome.ok
            if outcome.ok:
                for before, after in zip(item.outcome.effects, outcome.effects, strict=False):
                    if before.entry_id != after.entry_id:
                        ids[before.entry_id] = after.entry_id
        maps.append(ids if clean else None)
    return maps


def _retargeted(ctx: ToolAccess, call: dict[str, Any], target: str | None) -> dict[str, Any] | None:
    """`call` (a write that names an entry by id, `target` its term in the draft's own view) as
    a write of the entry that bears that term in this view. Only the draft's own creates are
    remapped (`_remap`); an entry an earlier draft of its basis created has the id that draft's
    replay gave it, which differs where the drafts before it came out otherwise (a create left
    out, a short form replayed as an alias): the id the draft wrote then names another entry,
    whose line the view would show with this draft's aliases and definition merged into it.
    None when no live entry of this view bears the term; `call` unchanged when it names no
    entry or the one it meant."""
    if target is None or _target_term(ctx, call) == target:
        return call
    entry = ctx.store.glossary.find_by_term(target)
    if entry is None or normalize_term(entry.term) != normalize_term(target):
        return None
    arguments = _arguments(call)
    arguments["entry_id"] = f"E{entry.id}"
    function = {**call["function"], "arguments": json.dumps(arguments, sort_keys=True)}
    return {**call, "function": function}


def _as_alias(ctx: ToolAccess, call: dict[str, Any]) -> dict[str, Any]:
    """For a draft that will be decided again: its create of a one-word name that is a word of
    exactly one live entry's name (a short form, created because that entry was not in its view)
    as the update its redraft, shown that entry, will most likely make instead: the name added
    as an alias, the create's definition as a fact. A guess for the views of later drafts only;
    nothing is committed from it. Any other call is returned as it is."""
    if call.get("function", {}).get("name") != "glossary_create":
        return call
    arguments = _arguments(call)
    term = str(arguments.get("term") or "").strip()
    if not term or len(term.split()) != 1 or ctx.store.glossary.find_by_term(term) is not None:
        return call
    word = term.casefold()
    owners = {
        entry_id
        for entry_id, name in ctx.store.glossary.live_names()
        if word in name.casefold().split()
    }
    if len(owners) != 1:
        return call
    update: dict[str, Any] = {"entry_id": f"E{owners.pop()}", "add_aliases": [term]}
    if arguments.get("post_ids"):
        update["post_ids"] = arguments["post_ids"]
    fact = str(arguments.get("definition") or "").strip()
    if fact and len(fact) <= FACT_CHARS:
        update["add_fact"] = fact
    function = {"name": "glossary_update", "arguments": json.dumps(update, sort_keys=True)}
    return {**call, "function": function}


@contextmanager
def speculating(
    ctx: ToolAccess,
    registry: ToolRegistry,
    basis: Sequence[SceneDraft],
    views: SpeculativeViews | None = None,
) -> Iterator[None]:
    """The glossary as it would stand once the drafts of `basis` (earlier scenes of the block,
    not yet committed) committed as drafted, for the block of the `with`; rolled back after.
    Only the glossary: their turns stay out of the conversation of a draft made in it, so its
    prompt is the committed conversation plus its own scene (a prefix every draft of the block
    shares, cached once by the server), never a chain of other drafts' turns prefilled anew at
    every wave."""
    if views is not None:  # the savepoints stay open for the next view
        views.enter(ctx, registry, basis)
        yield
        return
    if not basis:
        yield
        return
    try:
        with ctx.store.transaction():
            replay(ctx, registry, basis)
            yield
            raise _Discard
    except _Discard:
        pass


def read_as(ctx: ToolAccess, ids: frozenset[int]) -> frozenset[tuple[int, str]]:
    """`ids` as the glossary names them now, (id, term), live entries only."""
    if not ids:
        return frozenset()
    try:
        entries = ctx.store.glossary.get_entries(sorted(ids))
    except (InputError, StoreError):  # one is gone: the others, one by one
        entries = [e for i in sorted(ids) if (e := _entry(ctx, i)) is not None]
    return frozenset((entry.id, entry.term) for entry in entries if entry.live)


def _entry(ctx: ToolAccess, entry_id: int) -> Entry | None:
    try:
        return ctx.store.glossary.get_entry(entry_id)
    except (InputError, StoreError):
        return None


def _replaced_definition(ctx: ToolAccess, call: dict[str, Any]) -> str | None:
    """For an update that replaces a definition: the definition it replaces in this view."""
    arguments = _arguments(call)
    if call.get("function", {}).get("name") != "glossary_update" or "definition" not in arguments:
        return None
    try:
        return ctx.store.glossary.get_entry(parse_entry_id(arguments["entry_id"])).definition
    except (InputError, EntryNotFoundError, LookupError, KeyError, ValueError, TypeError):
        return None


def _target_term(ctx: ToolAccess, call: dict[str, Any]) -> str | None:
    """The term of the entry `call` names by id, in this view (None: it names none, or none
    that exists)."""
    entry_id = _arguments(call).get("entry_id")
    if entry_id is None:
        return None
    try:
        return ctx.store.glossary.get_entry(parse_entry_id(entry_id)).term
    except (InputError, EntryNotFoundError, LookupError, KeyError, ValueError, TypeError):
        return None


def _merged(ctx: ToolAccess, call: dict[str, Any], base: str | None) -> dict[str, Any]:
    """`call` (an update replacing a definition the draft saw as `base`) with the definition
    merged with what was written since: unchanged when nobody changed it meanwhile."""
    if base is None:
        return call
    arguments = _arguments(call)
    try:
        current = ctx.store.glossary.get_entry(parse_entry_id(arguments["entry_id"])).definition
    except (InputError, EntryNotFoundError, LookupError, KeyError, ValueError, TypeError):
        return call
    if current == base:
        return call
    arguments["definition"] = merge_definition(base, str(arguments["definition"]), current)
    function = {**call["function"], "arguments": json.dumps(arguments, sort_keys=True)}
    return {**call, "function": function}


_ENTRY_ID = re.compile(r"\bE(\d+)\b")


def map_ids(text: str, ids: dict[int, int]) -> str:
    """`text` with every entry id a draft got from its own create (`E101`) written as the id the
    commit gave it; other ids unchanged."""
    if not ids:
        return text
    return _ENTRY_ID.sub(
        lambda m: f"E{ids[int(m.group(1))]}" if int(m.group(1)) in ids else m.group(0), text
    )


def _hits(result_json: str) -> list[tuple[str, str]]:
    try:
        payload = json.loads(result_json)
    except ValueError:
        return []
    hits = payload.get("hits") if isinstance(payload, dict) else None
    return [
        (str(hit.get("id")), str(hit.get("term"))) for hit in hits or [] if isinstance(hit, dict)
    ]


def _arguments(call: dict[str, Any]) -> dict[str, Any]:
    try:
        arguments = json.loads(call.get("function", {}).get("arguments") or "{}")
    except (ValueError, TypeError):
        return {}
    return arguments if isinstance(arguments, dict) else {}


def _remap(call: dict[str, Any], ids: dict[int, int]) -> dict[str, Any]:
    """`call` with the entry ids the draft got from its own creates mapped to the committed ids."""
    if not ids:
        return call
    raw = call.get("function", {}).get("arguments")
    if not isinstance(raw, str):
        return call
    mapped = map_ids(raw, ids)
    arguments = _arguments(call)
    entry_id = arguments.get("entry_id")
    if isinstance(entry_id, int) and entry_id in ids:  # a bare number is an id too
        arguments["entry_id"] = f"E{ids[entry_id]}"
        mapped = json.dumps({**json.loads(mapped), "entry_id": arguments["entry_id"]})
    if mapped == raw:
        return call
    return {**call, "function": {**call["function"], "arguments": mapped}}


def _rewrite(
    message: Message,
    results: dict[str, ToolOutcome],
    arguments: dict[str, str],
    ids: dict[int, int],
) -> Message:
    """A draft's message as committed: the write results the commit had, and the ids it gave."""
    if message.get("role") == "tool" and message.get("tool_call_id") in results:
        return results[str(message["tool_call_id"])].message()
    rewritten = dict(message)
    if isinstance(message.get("content"), str):
        rewritten["content"] = map_ids(str(message["content"]), ids)
    calls = message.get("tool_calls")
    if message.get("role") == "assistant" and calls:
        new_calls = []
        for call in calls:
            function = dict(call.get("function") or {})
            if call.get("id") in arguments:
                function["arguments"] = arguments[call["id"]]
            elif isinstance(function.get("arguments"), str):
                function["arguments"] = map_ids(function["arguments"], ids)
            new_calls.append({**call, "function": function})
        rewritten["tool_calls"] = new_calls
    return rewritten


def _call_dict(call: Any) -> dict[str, Any]:
    if isinstance(call, dict):
        return call
    return call.model_dump(mode="json", exclude_none=True)


class _Requests:
    """Daemon threads that send requests for the owner thread, started once and reused (a thread
    started per request costs a start-up handshake each time; a daemon never holds up a Ctrl-C)."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0

    def submit(self, job: Callable[[], Any]) -> Future[Any]:
        future: Future[Any] = Future()
        with self._lock:
            if self._idle == 0:
                self._threads += 1
                threading.Thread(
                    target=self._work, name=f"terrarium-request-{self._threads}", daemon=True
                ).start()
            else:
                self._idle -= 1
        self._queue.put((future, job))
        return future

    def _work(self) -> None:
        while True:
            future, job = self._queue.get()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(job())
                except BaseException as exc:  # handed to the owner thread, which decides
                    future.set_exception(exc)
            with self._lock:
                self._idle += 1


_REQUESTS = _Requests()


def submit(fn: Callable[..., Any], *args: Any) -> Future[Any]:
    """Run `fn(*args)` on a daemon thread: a Ctrl-C never waits for a request in flight."""
    return _REQUESTS.submit(lambda: fn(*args))


class BlockSteps(Protocol):
    """What the scene loop does for a block's drafts (agent/loop.py::Annotator)."""

    def call(self, draft: SceneDraft, messages: list[Message]) -> ChatResult: ...

    def run_tools(self, draft: SceneDraft, calls: list[Any]) -> list[ToolOutcome]: ...

    def commit(self, draft: SceneDraft) -> bool:
        """Commit `draft` at its turn; False: it read what an earlier scene changed."""
        ...

    def serially(self, draft: SceneDraft) -> None:
        """Annotate the draft's scene on the committed context, as a serial run does."""
        ...

    def make_room(self, draft: SceneDraft, later: Sequence[SceneDraft]) -> None:
        """At `draft`'s turn, before a wave drafts it again beside `later`: compact the
        committed context as a serial run compacts it at that scene's turn, for the largest of
        their scene messages and its rounds (the earlier scenes' turns joined the history since
        the block made room)."""
        ...

    def stale(self, draft: SceneDraft, basis: tuple[SceneDraft, ...]) -> bool:
        """Whether `draft` (finished) would not commit against the glossary as it would stand
        once the drafts of `basis` committed as drafted."""
        ...

    def redraft(self, draft: SceneDraft, basis: tuple[SceneDraft, ...]) -> SceneDraft:
        """A new draft of the same scene from the committed state as it would stand once the
        drafts of `basis` committed as drafted (`speculating`)."""
        ...


def run_block(
    drafts: list[SceneDraft],
    steps: BlockSteps,
    *,
    max_rounds: int,
    thread_id: int,
    stop: threading.Event,
) -> None:
    """Draft a block's scenes side by side and commit them in story order, in **waves**.

    A wave drafts its scenes at once, each with at most one request in flight, and nothing is
    committed while it runs: every tool call of a wave reads the glossary as the wave began (plus
    the draft's own writes), whatever order the replies arrive in. Then the drafts are committed
    in story order. At the first draft that read what an earlier scene changed, the next wave
    drafts it again from the committed state, beside every later draft that would not commit
    now either; the first draft of a wave always commits (nothing changed since it began). What
    is decided depends only on the committed state at the points where waves begin, which the
    content decides: a run is deterministic and exactly resumable.

    The owner thread builds each request, runs each draft's tools and commits; only
    `steps.call` (the HTTP exchange through the model session) runs elsewhere."""
    current = list(drafts)
    wave = list(drafts)
    turn = 0
    while turn < len(current):
        draft_wave(wave, steps, max_rounds=max_rounds, thread_id=thread_id, stop=stop)
        while turn < len(current):
            draft = current[turn]
            if draft.serial or draft.events:
                # it needed the shared context compacted (a draft never compacts on its own)
                log.debug(
                    "scene %s annotated serially at its turn: %s",
                    draft.scene.id,
                    "refused as too long" if draft.serial else "its copy of the context compacted",
                )
                steps.serially(draft)
            elif not steps.commit(draft):
                # each later draft is judged, and drafted again, as if the drafts before it
                # (this one and those after, as they stand) committed as drafted: what a chain
                # of scenes needs from each other is then in view a wave early; of a draft
                # judged stale, the views replay what its redraft will most likely write.
                # The earlier scenes' turns joined the history since the block made room: make
                # it again first, on the committed context, as the serial run does at this turn
                # (else the redrafts' copies outgrow it and are annotated serially at their turn)
                steps.make_room(draft, current[turn + 1 :])
                bases = {later: tuple(current[turn:later]) for later in range(turn, len(current))}
                views = SpeculativeViews()  # the bases are prefixes of one another: shared
                for later in range(turn, len(current)):
                    current[later].views = views
                draft.stale = True
                again = [turn]
                try:
                    for later in range(turn + 1, len(current)):
                        judged = current[later]
                        if not (judged.serial or judged.events) and steps.stale(
                            judged, bases[later]
                        ):
                            judged.stale = True
                            again.append(later)
                    redrafts = {i: steps.redraft(current[i], bases[i]) for i in again}
                finally:
                    views.close()
                    for later in range(turn, len(current)):
                        current[later].views = None
                log.debug(
                    "scenes %s drafted again from the committed state (%d of the block's %d)",
                    ", ".join(str(current[index].scene.id) for index in again),
                    len(again),
                    len(current),
                )
                for index in again:
                    current[index] = redrafts[index]
                wave = [current[index] for index in again]
                break
            turn += 1


def draft_wave(
    drafts: list[SceneDraft],
    steps: BlockSteps,
    *,
    max_rounds: int,
    thread_id: int,
    stop: threading.Event,
) -> None:
    """Run every draft of a wave to its end, each with at most one request in flight, all at
    once. Replies are taken in whatever order they arrive: a draft depends only on the wave's
    committed past and its own replies."""
    in_flight: dict[Future[ChatResult], SceneDraft] = {}
    views = SpeculativeViews()

    def launch(draft: SceneDraft) -> None:
        messages = draft.next_request(max_rounds, thread_id)
        if messages is not None:
            in_flight[submit(steps.call, draft, messages)] = draft

    for draft in drafts:
        draft.views = views
    try:
        for draft in drafts:
            launch(draft)
        _take_replies(in_flight, launch, steps, stop)
    finally:
        views.close()
        for draft in drafts:
            draft.views = None


def _take_replies(
    in_flight: dict[Future[ChatResult], SceneDraft],
    launch: Callable[[SceneDraft], None],
    steps: BlockSteps,
    stop: threading.Event,
) -> None:
    while in_flight:
        finished, _ = wait(in_flight, timeout=WAIT_TICK_S, return_when=FIRST_COMPLETED)
        if stop.is_set():
            raise Interrupted("stopped while drafting a block of scenes")
        for future in sorted(finished, key=lambda f: in_flight[f].index):
            draft = in_flight.pop(future)
            try:
                result = future.result()
            except ContextOverflowError:
                draft.serial = True  # needs the shared context compacted: serially, at its turn
                draft.done = True
                continue
            draft.take(result, steps.run_tools)
            if stop.is_set():
                raise Interrupted(f"stopped during scene {draft.scene.id}")
            launch(draft)
