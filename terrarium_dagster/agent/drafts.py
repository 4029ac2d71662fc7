"""Scenes drafted side by side, committed in story order: how a run keeps many requests in flight.

A thread's scenes are taken in **blocks** of `concurrency` scenes, fixed by the corpus and the
settings (block k of a thread holds its scenes k·n … k·n+n−1), never by the timing of replies.
A block is one unit of committed work, one store transaction:

1. **Make room** once, for the block's largest scene message (compaction, as a serial run does
   before each scene).
2. **Draft** every scene of the block at once. Each draft starts from the same committed past —
   the glossary and the context as they stood when the block began — plus its own work: its
   own copy of the context (so its rounds never see a sibling's), its own fork of the token
   counter (so what it learns does not depend on the order replies arrive in), and its own view
   of the glossary: its tool calls run on the owner thread inside a savepoint that replays the
   draft's earlier writes first and is rolled back after. Only the HTTP requests run on other
   threads; up to `concurrency` are with the server at once.
3. **Commit** the drafts in story order: each draft's writes are dispatched again against the
   glossary as the earlier drafts left it, through the same tools, so every rule holds. A create
   of a name an earlier draft of the block created meanwhile becomes an update of that entry
   (its aliases, sources and — when longer — definition; provenance kept); an entry id the
   draft learned from its own create is mapped to the id the commit gave. Then the scene's
   turns join the history, the counter learns what the draft's calls taught (in scene order),
   and the thread's cursor moves — exactly what a serial scene does at its end.

A draft that cannot finish in isolation (the server refused one of its requests as too long,
which needs compaction of the shared context) is annotated serially at its turn in step 3.

A killed run loses at most the open block and redoes it from the same committed past: the
same requests, so — with the same model answers — the same glossary, byte for byte.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from typing import Any

from terrarium_dagster.agent.client import ChatResult
from terrarium_dagster.agent.protocol import assistant_message_dict
from terrarium_dagster.agent.tools import (
    GlossaryCreateArgs,
    ToolAccess,
    ToolOutcome,
    ToolRegistry,
    dispatch,
)
from terrarium_dagster.context import prompts
from terrarium_dagster.context.compaction import CompactionEvent, ContextManager
from terrarium_dagster.context.state import Message
from terrarium_dagster.context.tokens import TokenCounter
from terrarium_dagster.corpus.models import Scene
from terrarium_dagster.errors import ContextOverflowError, InputError, Interrupted
from terrarium_dagster.store.inputs import parse_entry_id
from terrarium_dagster.store.normalize import normalize_term

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
class WriteCall:
    """A write tool call a draft made and saw succeed: replayed in its savepoints, then
    committed."""

    call: dict[str, Any]
    outcome: ToolOutcome


def new_tally() -> dict[str, int]:
    """A scene's count of its rounds' answers: all, cut at max_tokens, tool calls made (kept in
    the thread's state; `ThreadState.suspect` reads it)."""
    return {"answers": 0, "cut": 0, "tool_calls": 0}


def tally_answer(tally: dict[str, int], result: ChatResult) -> None:
    tally["answers"] += 1
    tally["cut"] += result.finish_reason == "length"
    tally["tool_calls"] += len(result.tool_calls)


@dataclass
class SceneDraft:
    """One scene annotated against the block's committed past: its turns and its writes."""

    scene: Scene
    index: int  # the scene's index in its thread
    context: ContextManager
    counter: DraftCounter
    turns: list[Message]
    events: list[CompactionEvent] = field(default_factory=list)
    writes: list[WriteCall] = field(default_factory=list)
    rounds: int = 0
    done: bool = False
    serial: bool = False  # could not be drafted alone: annotated serially at its turn
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


def run_tools_in_savepoint(
    ctx: ToolAccess, registry: ToolRegistry, draft: SceneDraft, calls: list[dict[str, Any]]
) -> list[ToolOutcome]:
    """Run `calls` against the block's committed past plus the draft's own earlier writes, then
    roll everything back. Successful write calls join the draft's writes."""
    outcomes: list[ToolOutcome] = []
    try:
        with ctx.store.transaction():
            for write in draft.writes:
                dispatch(registry, ctx, write.call)
            outcomes = [dispatch(registry, ctx, call) for call in calls]
            raise _Discard
    except _Discard:
        pass
    for call, outcome in zip(calls, outcomes, strict=True):
        tool = registry.get(outcome.name)
        if tool is not None and tool.writes and outcome.ok:
            draft.writes.append(WriteCall(call, outcome))
    return outcomes


def commit_writes(
    ctx: ToolAccess, registry: ToolRegistry, draft: SceneDraft
) -> tuple[list[Message], int]:
    """Dispatch the draft's writes against the glossary as it stands now (story order), and
    return the draft's turns with what the commit changed written into them, and how many
    creates became updates of an entry an earlier scene of the block created."""
    ids: dict[int, int] = {}
    results: dict[str, ToolOutcome] = {}
    arguments: dict[str, str] = {}
    reconciled = 0
    for write in draft.writes:
        call = _remap(write.call, ids)
        if call is not write.call:
            arguments[write.outcome.tool_call_id] = call["function"]["arguments"]
        outcome = dispatch(registry, ctx, call)
        if not outcome.ok and outcome.name == "glossary_create":
            update = _create_as_update(ctx, call)
            if update is not None:
                outcome = dispatch(registry, ctx, update)
                reconciled += 1
        for before, after in zip(write.outcome.effects, outcome.effects, strict=False):
            if before.entry_id != after.entry_id:
                ids[before.entry_id] = after.entry_id
        if outcome.result_json != write.outcome.result_json:
            results[write.outcome.tool_call_id] = outcome
    turns = [_rewrite(message, results, arguments) for message in draft.turns]
    return turns, reconciled


def _create_as_update(ctx: ToolAccess, call: dict[str, Any]) -> dict[str, Any] | None:
    """A create whose name an earlier scene of the block took meanwhile, as an update of that
    entry: the create's other names become aliases, its sources are kept, and its definition
    replaces the entry's when it says more. None when the create failed for another reason."""
    try:
        args = GlossaryCreateArgs.model_validate(json.loads(call["function"]["arguments"] or "{}"))
    except (ValueError, TypeError):
        return None
    existing = None
    for name in (args.term, *args.aliases):
        existing = ctx.store.glossary.find_by_term(name)
        if existing is not None:
            break
    if existing is None:
        return None
    known = {normalize_term(name) for name in (existing.term, *existing.aliases)}
    update: dict[str, Any] = {"entry_id": existing.ref}
    aliases = [n for n in (args.term, *args.aliases) if normalize_term(n) not in known]
    if aliases:
        update["add_aliases"] = aliases
    if len(args.definition) > len(existing.definition or ""):
        update["definition"] = args.definition
    if args.post_ids:
        update["post_ids"] = list(args.post_ids)
    if args.quote:
        update["quote"] = args.quote
    update["reason"] = "the same name was drafted by two scenes at once; merged in story order"
    return {
        "id": call.get("id", ""),
        "type": "function",
        "function": {"name": "glossary_update", "arguments": json.dumps(update, sort_keys=True)},
    }


def _remap(call: dict[str, Any], ids: dict[int, int]) -> dict[str, Any]:
    """`call` with an entry id the draft got from its own create mapped to the committed id."""
    if not ids:
        return call
    try:
        arguments = json.loads(call["function"]["arguments"] or "{}")
        entry_id = parse_entry_id(arguments["entry_id"])
    except (ValueError, TypeError, KeyError, InputError):
        return call
    if entry_id not in ids:
        return call
    arguments["entry_id"] = f"E{ids[entry_id]}"
    function = {**call["function"], "arguments": json.dumps(arguments, sort_keys=True)}
    return {**call, "function": function}


def _rewrite(
    message: Message, results: dict[str, ToolOutcome], arguments: dict[str, str]
) -> Message:
    if message.get("role") == "tool" and message.get("tool_call_id") in results:
        return results[str(message["tool_call_id"])].message()
    calls = message.get("tool_calls")
    if message.get("role") == "assistant" and calls and arguments:
        rewritten = []
        for call in calls:
            if call.get("id") in arguments:
                function = {**call["function"], "arguments": arguments[call["id"]]}
                call = {**call, "function": function}
            rewritten.append(call)
        return {**message, "tool_calls": rewritten}
    return message


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


def draft_block(
    drafts: list[SceneDraft],
    *,
    call: Callable[[SceneDraft, list[Message]], ChatResult],
    run_tools: Callable[[SceneDraft, list[Any]], list[ToolOutcome]],
    max_rounds: int,
    thread_id: int,
    stop: threading.Event,
) -> None:
    """Draft every scene of a block, each with at most one request in flight, all at once.

    The owner thread builds each request and runs each draft's tools; only `call` (the HTTP
    exchange through the model session) runs elsewhere. Replies are taken in whatever order
    they arrive: a draft depends only on the block's committed past and its own replies."""
    in_flight: dict[Future[ChatResult], SceneDraft] = {}

    def launch(draft: SceneDraft) -> None:
        messages = draft.next_request(max_rounds, thread_id)
        if messages is not None:
            in_flight[submit(call, draft, messages)] = draft

    for draft in drafts:
        launch(draft)
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
            draft.take(result, run_tools)
            if stop.is_set():
                raise Interrupted(f"stopped during scene {draft.scene.id}")
            launch(draft)
