"""Summon: rehydrate a past context from its snapshot and converse with it through the model.

`SummonManager.summon(snapshot_id, question)` loads the snapshot and sends the PAST context (its
own system prompt, its story so far and summaries, its recent conversation, laid out as the
context layer lays out every prompt), followed by a user message starting ``# Task: summon`` with
the question (the `# Task:` convention of `context/prompts.py`), and returns the answer.
`continue_(text)` asks a follow-up on the same message list (a real multi-turn exchange: the
answers stay in it);
`dismiss()` logs the whole exchange (`store.memory.log_summon`) and ends it. One summon at a time.

Read-only. The summoned context is offered the READ tools it had (those of `glossary_search`,
`read_post`, `read_thread_range` that were in its tool list), run through a read-only
`ToolAccess`: a write tool it calls anyway gets the dispatcher's refusal result, a summon tool an
"unknown tool" result. Its `glossary_search` answers from the glossary as it stood at the
snapshot (`entry_as_of` its revision pointer), and `read_post`/`read_thread_range` stop at the
snapshot's cursor scene: a past context sees nothing of its future. Tool rounds are bounded
(`max_rounds`; the last round is sent with ``tool_choice="none"``). Without a corpus (or when the
cursor scene is not in it) no tools are offered.

Budget. A summon lives in its own message list and never changes the snapshot or the live
context. Every request passes the run's model session (`model/session.py::ModelSession`): it is
counted before it is sent and must leave room for `max_tokens` within the session's window. When
it does not fit, the past context (a working copy) is trimmed by compaction steps
(`context/compaction/`: the same interface and pipeline as the run's compaction), without any model
call, in this order until it does (`summon/trimming.py::summon_steps`):
1. history scenes that do not concern the entries the question names (`E12`), oldest first;
2. summaries, oldest first (those naming the question's entries last);
3. the story so far, keeping its end;
4. long messages of the history, truncated around a marker (the run's `Truncate`);
5. the remaining history scenes (the run's `CutMiddle`);
6. the oldest rounds of the summon exchange itself (never the current one).
Whole scenes only, so a tool call never loses its result. What was trimmed is logged with the
exchange. If nothing is left to trim, `BudgetError`: nothing over budget is ever sent.

Every call is logged as an agent call (purpose "summon") with its tokens, attributed to the
summoner's run, thread and scene (the thread that pays for it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field, StringConstraints
from pydantic.json_schema import SkipJsonSchema

from terrarium_dagster.agent.tools import (
    GLOSSARY_SEARCH,
    EntryId,
    GlossarySearchArgs,
    HandlerResult,
    PostId,
    Tool,
    ToolAccess,
    ToolArgs,
    ToolError,
    ToolRegistry,
    canonical_json,
    default_registry,
    dispatch,
    entry_brief,
)
from terrarium_dagster.context.compaction import CompactionPolicy, ContextManager
from terrarium_dagster.context.layout import head_messages
from terrarium_dagster.context.state import (
    ContextState,
    Message,
    SceneSpan,
    repair_tool_pairs,
    tool_pair_problems,
)
from terrarium_dagster.errors import (
    BudgetError,
    ContextOverflowError,
    CorpusError,
    InputError,
)
from terrarium_dagster.model.client import ChatResult
from terrarium_dagster.model.protocol import assistant_message_dict
from terrarium_dagster.model.session import CallScope, ModelSession
from terrarium_dagster.snapshots.context_snapshots import (
    SnapshotChoice,
    SnapshotPayload,
    load_snapshot,
    parse_snapshot_id,
    revision_to_explain,
    snapshot_for_revision,
)
from terrarium_dagster.store.annotator import Actor, GlossaryStore
from terrarium_dagster.store.models import AgentCallRecord, Snapshot
from terrarium_dagster.summon.trimming import entry_ids_in, summon_steps

if TYPE_CHECKING:
    from terrarium_dagster.corpus.reader import Corpus
    from terrarium_dagster.corpus.units import Scene

SUMMON_HEADING = "# Task: summon"
SUMMON_PURPOSE = "summon"
DEFAULT_MAX_ROUNDS = 4
MAX_QUESTION_CHARS = 4000
READ_TOOL_NAMES = ("glossary_search", "read_post", "read_thread_range")
NO_ANSWER = "(the summoned context gave no answer)"

SUMMON_INSTRUCTIONS = (
    "You are this context, summoned later by another agent to explain your own work. You "
    "cannot change the glossary now: glossary_create, glossary_update and glossary_delete are "
    "refused. You may look things up with the read tools you are offered. Answer from what you "
    "did and read above, in plain text and briefly; cite posts as >>post_id and entries as "
    "[E<id>]. If your context does not record it, say so rather than guess."
)


class SummonError(InputError):
    """A summon used wrongly: a second one while one is open, continue/dismiss without one."""


def summon_message(
    snapshot: Snapshot, question: str, *, turn: int, instructions: bool = True
) -> str:
    """The user message of one summon turn (first line ``# Task: summon``)."""
    where = f"snapshot {snapshot.id} · {snapshot.kind}"
    if snapshot.thread_id is not None:
        where += f" · thread {snapshot.thread_id}"
    if snapshot.scene_id is not None:
        where += f" · context ends at scene {snapshot.scene_id}"
    body = f"\n\n{SUMMON_INSTRUCTIONS}" if instructions else ""
    return f"{SUMMON_HEADING}\n{where} · question {turn}{body}\n\n## Question\n{question.strip()}\n"


def _clean_question(text: object, what: str = "question") -> str:
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"the summon {what} is empty")
    cleaned = text.strip()
    if len(cleaned) > MAX_QUESTION_CHARS:
        raise InputError(f"the summon {what} is longer than {MAX_QUESTION_CHARS} characters")
    return cleaned


# ------------------------------------------------------------------------------------ session
@dataclass
class SummonSession:
    """One open summon: the past context (a working copy, trimmed as needed) and the exchange."""

    snapshot: Snapshot
    payload: SnapshotPayload
    past: ContextState
    tools: list[dict[str, Any]]
    registry: ToolRegistry | None
    tool_context: ToolAccess | None
    summoner: dict[str, Any]
    focus: set[int] = field(default_factory=set)
    exchange: list[Message] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    calls: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    max_prompt_tokens: int = 0
    trimmed: dict[str, Any] = field(
        default_factory=lambda: {
            "scenes": [],
            "summaries": [],
            "story_chars": 0,
            "truncated_messages": 0,
            "exchange_rounds": 0,
        }
    )

    @property
    def snapshot_id(self) -> int:
        return self.snapshot.id

    @property
    def turns(self) -> int:
        return len(self.answers)

    def head(self) -> list[Message]:
        return head_messages(self.past, self.payload.system_prompt)

    def messages(self, pending: list[Message]) -> list[Message]:
        """What the next request sends: the past context, the exchange, the pending round."""
        return [*self.head(), *self.past.history, *self.exchange, *pending]

    def record(self, ended: str) -> dict[str, Any]:
        """The exchange as `store.memory.log_summon` keeps it (no wall-clock times)."""
        return {
            "snapshot": {
                "id": self.snapshot.id,
                "kind": self.snapshot.kind,
                "thread_id": self.snapshot.thread_id,
                "scene_id": self.snapshot.scene_id,
                "revision_id": self.snapshot.revision_id,
            },
            "summoned_by": self.summoner,
            "tools": [tool["function"]["name"] for tool in self.tools],
            "exchange": self.exchange,
            "answers": self.answers,
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "cached_tokens": self.cached_tokens,
            "completion_tokens": self.completion_tokens,
            "max_prompt_tokens": self.max_prompt_tokens,
            "trimmed": self.trimmed,
            "ended": ended,
        }


# ------------------------------------------------------------------------------------ manager
@dataclass(eq=False)
class SummonManager:
    """Opens, continues and dismisses summons of past contexts (one at a time).

    Every request goes through `model_session` (`model/session.py::ModelSession`): its window gate,
    with this manager's trimming of the past context as the way to make a request smaller, its
    token accounting and its call records. `corpus` enables the read tools (a summon from a tool
    call uses the caller's corpus). `run_id` is recorded on the log.
    """

    store: GlossaryStore
    model_session: ModelSession
    _: KW_ONLY
    corpus: Corpus | None = None
    run_id: str | None = None
    max_rounds: int = DEFAULT_MAX_ROUNDS
    registry_factory: Callable[[], ToolRegistry] = default_registry
    _session: SummonSession | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.max_rounds < 1:
            raise InputError("max_rounds must be at least 1")

    # -- state ------------------------------------------------------------------------------

    @property
    def session(self) -> SummonSession | None:
        """The open summon, if any."""
        return self._session

    @property
    def is_open(self) -> bool:
        return self._session is not None

    # -- the exchange ---------------------------------------------------------------------------

    def summon(
        self,
        snapshot_id: int | str,
        question: str,
        *,
        corpus: Corpus | None = None,
        summoner: Actor | None = None,
    ) -> str:
        """Rehydrate the snapshot's context, ask it `question`, return its answer. The summon
        stays open (for `continue_`) until `dismiss`. `SummonError` if one is open already."""
        if self._session is not None:
            open_one = self._session.snapshot
            raise SummonError(
                f"snapshot {open_one.id} (thread {open_one.thread_id}) is still summoned; "
                "dismiss it (summon_dismiss) before summoning another"
            )
        text = _clean_question(question)
        number = parse_snapshot_id(snapshot_id)
        row, payload = load_snapshot(self.store, number)
        session = self._open(row, payload, corpus or self.corpus, summoner)
        session.focus = set(entry_ids_in(text))
        message = summon_message(row, text, turn=1)
        answer = self._turn(session, message)
        self._session = session
        return answer

    def continue_(self, message: str) -> str:
        """Ask the open summon a follow-up; returns its answer."""
        session = self._require("continue")
        text = _clean_question(message, "message")
        session.focus |= set(entry_ids_in(text))
        prompt = summon_message(session.snapshot, text, turn=session.turns + 1, instructions=False)
        return self._turn(session, prompt)

    def dismiss(self, *, ended: str = "dismissed") -> int:
        """End the open summon and log the exchange; returns the summon log id."""
        session = self._require("dismiss")
        log_id = self.store.memory.log_summon(
            session.snapshot_id, self.run_id, canonical_json(session.record(ended))
        )
        self._session = None
        return log_id

    def dismiss_if_open(self, *, ended: str = "scene_end") -> int | None:
        """Dismiss a summon left open (the loop calls this at the end of every scene and at
        shutdown); None when none is open."""
        if self._session is None:
            return None
        return self.dismiss(ended=ended)

    def abandon(self) -> None:
        """Forget the open summon without logging it: the loop calls this when the scene that
        opened it is rolled back (its calls, logged in that transaction, are gone with it)."""
        self._session = None

    def _require(self, doing: str) -> SummonSession:
        if self._session is None:
            raise SummonError(
                f"no snapshot is summoned; nothing to {doing} (summon one with summon_snapshot)"
            )
        return self._session

    # -- opening ----------------------------------------------------------------------------

    def _open(
        self,
        row: Snapshot,
        payload: SnapshotPayload,
        corpus: Corpus | None,
        summoner: Actor | None,
    ) -> SummonSession:
        past = payload.context.model_copy(deep=True)
        if tool_pair_problems(past.history):
            repaired = repair_tool_pairs(past.history)
            past = past.model_copy(
                update={
                    "history": repaired,
                    "scenes": [
                        SceneSpan(
                            scene_id="(history)",
                            thread_id=past.cursor.thread_id or 0,
                            start=0,
                            end=len(repaired),
                        )
                    ]
                    if repaired
                    else [],
                }
            )
        scene = _cursor_scene(corpus, past)
        registry: ToolRegistry | None = None
        tool_context: ToolAccess | None = None
        tools: list[dict[str, Any]] = []
        if corpus is not None and scene is not None:
            registry = self._summon_registry(row)
            tool_context = ToolAccess(
                store=self.store,
                corpus=corpus,
                actor=Actor(
                    kind="agent",
                    run_id=self.run_id,
                    thread_id=scene.thread_id,
                    scene_id=scene.id,
                    snapshot_id=row.id,
                ),
                scene=scene,
                read_only=True,
            )
            had = set(payload.tool_names) if payload.tool_names else set(READ_TOOL_NAMES)
            offered = [name for name in registry if name in READ_TOOL_NAMES and name in had]
            tools = registry.only(offered).schemas()
        return SummonSession(
            snapshot=row,
            payload=payload,
            past=past,
            tools=tools,
            registry=registry,
            tool_context=tool_context,
            summoner=_summoner(summoner, self.run_id),
        )

    def _summon_registry(self, row: Snapshot) -> ToolRegistry:
        """The glossary tools, with `glossary_search` answering as of the snapshot."""
        boundary = row.revision_id or 0
        store = self.store

        def search_as_of(access: ToolAccess, args: GlossarySearchArgs) -> HandlerResult:
            hits = store.glossary.search(
                args.query, limit=min(200, args.limit * 4), include_deleted=True
            )
            found: list[dict[str, Any]] = []
            for hit in hits:
                then = store.history.entry_as_of(hit.entry.id, boundary)
                if then is None or then.deleted:
                    continue
                found.append(entry_brief(then))
                if len(found) >= args.limit:
                    break
            payload: dict[str, Any] = {"hits": found}
            if not found:
                payload["note"] = "no entry matches"
            return HandlerResult(payload)

        tools: list[Tool] = []
        for tool in self.registry_factory().values():
            if tool.name == GLOSSARY_SEARCH.name:
                tool = Tool(tool.name, tool.description, tool.args_model, search_as_of)
            tools.append(tool)
        return ToolRegistry(tools)

    # -- one turn -----------------------------------------------------------------------------

    def _turn(self, session: SummonSession, user_message: str) -> str:
        """Send one question (with its tool rounds); on success the round joins the exchange."""
        pending: list[Message] = [{"role": "user", "content": user_message}]
        for round_number in range(self.max_rounds):
            last_round = round_number == self.max_rounds - 1
            result, pending = self._send(session, pending, last_round=last_round)
            reply = assistant_message_dict(result.message)
            if result.tool_calls and not last_round:
                pending.append(reply)
                pending.extend(self._run_tools(session, result))
                continue
            answer = (result.content or "").strip()
            pending.append({"role": "assistant", "content": answer or NO_ANSWER})
            session.exchange.extend(pending)
            session.answers.append(answer or NO_ANSWER)
            return answer or NO_ANSWER
        raise AssertionError("unreachable: the last round always answers")

    def _send(
        self, session: SummonSession, pending: list[Message], *, last_round: bool
    ) -> tuple[ChatResult, list[Message]]:
        tools = session.tools or None
        summoner = session.summoner

        def shrink(_messages: list[Message], limit: int) -> list[Message] | None:
            return self._shrink(session, pending, limit)

        def tally(record: AgentCallRecord) -> None:
            session.calls += 1
            session.prompt_tokens += record.prompt_tokens
            session.cached_tokens += record.cached_tokens
            session.completion_tokens += record.completion_tokens

        try:
            result = self.model_session.call(
                session.messages(pending),
                purpose=SUMMON_PURPOSE,
                tools=tools,
                tool_choice="none" if last_round else "auto",
                shrink=shrink,
                scope=CallScope(
                    run_id=summoner.get("run_id"),
                    thread_id=summoner.get("thread_id"),
                    scene_id=summoner.get("scene_id"),
                ),
                exact_share=0.5,
                tally=tally,
            )
        except BudgetError as exc:
            raise BudgetError(
                f"summon of snapshot {session.snapshot_id}: {exc} (the past context was trimmed "
                "to its question)"
            ) from exc
        session.max_prompt_tokens = max(session.max_prompt_tokens, result.prompt_tokens)
        return result, pending

    def _run_tools(self, session: SummonSession, result: ChatResult) -> list[Message]:
        messages: list[Message] = []
        for call in result.tool_calls:
            if session.registry is None or session.tool_context is None:
                content = canonical_json(
                    {
                        "ok": False,
                        "error": "no tools in this summoned context; answer from your context",
                    }
                )
                messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
                continue
            messages.append(dispatch(session.registry, session.tool_context, call).message())
        return messages

    def _shrink(
        self, session: SummonSession, pending: list[Message], limit: int
    ) -> list[Message] | None:
        """The request made smaller by the summon's compaction steps over its copy of the past
        context (no model call), or None when nothing is left to trim."""
        before = session.messages(pending)
        manager = ContextManager(
            session.past,
            system_prompt=session.payload.system_prompt,
            tools=session.tools or None,
            budget=limit + self.model_session.max_tokens,
            max_tokens=self.model_session.max_tokens,
            counter=self.model_session.counter,
            summarizer=None,
            policy=CompactionPolicy(min_free_tokens=max(16, limit // 50), truncate_tokens=150),
            steps=summon_steps(
                focus=session.focus,
                trimmed=session.trimmed,
                exchange=session.exchange,
                pending=pending,
            ),
            adopt_calibration=False,  # the live counter keeps the run's calibration
        )
        events = manager.shrink_to_fit([*session.exchange, *pending])
        session.past = manager.state
        for event in events:
            if event.tier in ("drop_scenes", "cut_middle"):
                session.trimmed["scenes"].extend(event.scene_ids)
            elif event.tier == "truncate":
                session.trimmed["truncated_messages"] += event.items
        after = session.messages(pending)
        return None if after == before else after


def _cursor_scene(corpus: Corpus | None, past: ContextState) -> Scene | None:
    cursor = past.cursor
    if corpus is None or cursor.thread_id is None or cursor.scene_id is None:
        return None
    try:
        scenes = corpus.scenes(cursor.thread_id)
    except CorpusError:
        return None
    return next((scene for scene in scenes if scene.id == cursor.scene_id), None)


def _summoner(actor: Actor | None, run_id: str | None) -> dict[str, Any]:
    if actor is None:
        return {"kind": "user", "run_id": run_id, "thread_id": None, "scene_id": None}
    return {
        "kind": actor.kind,
        "run_id": actor.run_id if actor.run_id is not None else run_id,
        "thread_id": actor.thread_id,
        "scene_id": actor.scene_id,
    }


# -------------------------------------------------------------------------------------- tools
Question = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_QUESTION_CHARS)
]


class ListSnapshotsArgs(ToolArgs):
    thread_id: PostId | None = Field(default=None, description="Only this thread's snapshots")
    entry_id: EntryId | None = Field(default=None, description="The snapshots behind its edits")
    limit: int = Field(default=10, ge=1, le=50)


class SummonSnapshotArgs(ToolArgs):
    entry_id: EntryId | None = None
    snapshot_id: SkipJsonSchema[int | None] = Field(default=None, gt=0)
    question: Question


class SummonContinueArgs(ToolArgs):
    message: Question


class SummonDismissArgs(ToolArgs):
    pass


def _snapshot_brief(row: Any) -> dict[str, Any]:
    brief: dict[str, Any] = {"id": row.id, "kind": row.kind, "revision": row.revision_id}
    if row.thread_id is not None:
        brief["thread_id"] = row.thread_id
    if row.scene_id is not None:
        brief["scene_id"] = row.scene_id
    return brief


def _later_than_now(access: ToolAccess, thread_id: int | None) -> bool:
    """A snapshot of a thread after the current scene's (a rolled-back future)."""
    if thread_id is None:
        return False
    try:
        return access.thread_position(thread_id) > access.thread_position(access.scene.thread_id)
    except CorpusError:
        return False


def snapshot_tools(manager: SummonManager) -> list[Tool]:
    """list_snapshots, summon_snapshot, summon_continue, summon_dismiss for the agent's registry
    (`registry.register(tool)` each). None of them writes the glossary."""

    def as_tool_error(exc: Exception) -> ToolError:
        return ToolError(" ".join(str(exc).split()))

    def list_snapshots(access: ToolAccess, args: ListSnapshotsArgs) -> HandlerResult:
        payload: dict[str, Any] = {}
        if args.entry_id is not None:
            entry = access.store.glossary.get_entry(args.entry_id)
            edits: list[dict[str, Any]] = []
            for revision in access.store.history.revisions(entry.id)[-args.limit :]:
                choice: SnapshotChoice = snapshot_for_revision(access.store, revision.id)
                edits.append(
                    {
                        "revision": revision.id,
                        "action": revision.action,
                        "by": revision.actor_kind,
                        "thread_id": revision.thread_id,
                        "scene_id": revision.scene_id,
                        "in_force": choice.in_force_id,
                        "after": choice.after_id,
                        "summon": choice.snapshot_id,
                    }
                )
            payload["entry"] = entry.ref
            payload["edits"] = edits
        else:
            headers = [
                header
                for header in access.store.memory.snapshot_headers(thread_id=args.thread_id)
                if not _later_than_now(access, header.thread_id)
            ]
            payload["snapshots"] = [_snapshot_brief(h) for h in headers[-args.limit :]]
            payload["total"] = len(headers)
        if manager.session is not None:
            payload["open_summon"] = manager.session.snapshot_id
        return HandlerResult(payload)

    def summon_snapshot(access: ToolAccess, args: SummonSnapshotArgs) -> HandlerResult:
        if (args.entry_id is None) == (args.snapshot_id is None):
            raise ToolError("give entry_id (the entry to ask about) or snapshot_id, not both")
        snapshot_id = args.snapshot_id
        if args.entry_id is not None:
            chosen = revision_to_explain(access.store, args.entry_id)
            snapshot_id = snapshot_for_revision(access.store, chosen.id).snapshot_id
            if snapshot_id is None:
                raise ToolError(
                    f"no saved context wrote E{args.entry_id} yet (contexts are saved at "
                    "thread ends); read its sources instead"
                )
        assert snapshot_id is not None
        try:
            row, _ = load_snapshot(access.store, snapshot_id)
            if _later_than_now(access, row.thread_id):
                raise ToolError(
                    f"snapshot {row.id} is of thread {row.thread_id}, later in the story than "
                    "the current scene; summon an earlier one"
                )
            answer = manager.summon(
                snapshot_id, args.question, corpus=access.corpus, summoner=access.actor
            )
        except (InputError, BudgetError, ContextOverflowError) as exc:
            raise as_tool_error(exc) from None
        return HandlerResult(
            {
                "snapshot": _snapshot_brief(row),
                "answer": answer,
                "note": 'ask more with summon_continue {"message": ...}; end with summon_dismiss',
            }
        )

    def summon_continue(access: ToolAccess, args: SummonContinueArgs) -> HandlerResult:
        try:
            answer = manager.continue_(args.message)
        except (InputError, BudgetError, ContextOverflowError) as exc:
            raise as_tool_error(exc) from None
        session = manager.session
        assert session is not None
        return HandlerResult({"snapshot": session.snapshot_id, "answer": answer})

    def summon_dismiss(access: ToolAccess, args: SummonDismissArgs) -> HandlerResult:
        session = manager.session
        try:
            log_id = manager.dismiss()
        except InputError as exc:
            raise as_tool_error(exc) from None
        assert session is not None
        return HandlerResult(
            {"dismissed": session.snapshot_id, "questions": session.turns, "log_id": log_id}
        )

    return [
        Tool(
            "list_snapshots",
            "List saved contexts (snapshots) by thread, or those behind an entry's edits.",
            ListSnapshotsArgs,
            list_snapshots,
            advertised=False,
        ),
        Tool(
            "summon_snapshot",
            "Ask the past context that wrote an entry why, if it puzzles you.",
            SummonSnapshotArgs,
            summon_snapshot,
        ),
        Tool(
            "summon_continue",
            "Ask the summoned context a follow-up question.",
            SummonContinueArgs,
            summon_continue,
            advertised=False,  # summon_snapshot's result names it: usable only once summoned
        ),
        Tool(
            "summon_dismiss",
            "End the summon (the exchange is logged).",
            SummonDismissArgs,
            summon_dismiss,
            advertised=False,
        ),
    ]
