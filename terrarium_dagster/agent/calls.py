"""The requests of one run's agent, and the tool calls its answers make.

Every request goes through the run's model session (`session.py::ModelSession`: the window gate,
accounting, call records) with the run's tools as a stable prefix, recorded for the thread and
scene it serves: a `CallScope` the caller passes with each request, down to the client. One unit
of work (a scene, a part of one, a drafted scene) gets its `SceneCalls`: the requests, summaries,
flush and tool runs of that thread and scene, immutable; a request beside the scenes (the
curation) carries its thread's scope (`scope_for`). The context manager is handed the scene's
`SceneCalls` with each call that may compact (`ContextManager.prepare(..., model=...)`), so
compaction reaches the model one way down, without knowing the scene loop that runs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from terrarium_dagster.agent.tools import ToolAccess, ToolOutcome, ToolRegistry, dispatch
from terrarium_dagster.context.state import Message
from terrarium_dagster.context.tokens import TokenCounter
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.corpus.units import Post, Scene, Thread
from terrarium_dagster.model.accounting import CallScope
from terrarium_dagster.model.client import ChatResult
from terrarium_dagster.model.protocol import assistant_message_dict
from terrarium_dagster.model.session import Decided, ModelSession, standalone_task
from terrarium_dagster.store.annotator import Actor, GlossaryStore

FLUSH_ROUNDS = 2
# how compaction's requests may answer: a summary is text, the flush may record with tools
COMPACTION_TOOL_CHOICE = {"summary": "none", "flush": "auto"}

#: A request that is not a scene round (a curation, a summary, a flush) is counted exactly once
#: its estimate passes half the limit: the counter learns its scales from the scene rounds, and a
#: curation's review message (entry lines, ids, brackets) was estimated 19% low at a window of
#: 4,096, under the 15% margin of `EXACT_SHARE`, and refused by the server as too long. Such
#: requests are a few a thread, so counting them costs little.
OTHER_EXACT_SHARE = 0.5


@dataclass
class AgentCalls:
    """The agent's requests and tool runs; each names the thread and scene it serves."""

    session: ModelSession
    store: GlossaryStore
    corpus: Corpus
    registry: ToolRegistry
    tools: list[dict[str, Any]]
    run_id: str
    side_by_side: bool = False  # more than one request may be in flight (concurrency > 1)

    def __post_init__(self) -> None:
        self._standalone = standalone_task(self.session, self.tools)
        self._posts_read: dict[int, Post] = {}  # shared by every access of the run

    def serving(self, thread: Thread, scene: Scene) -> SceneCalls:
        """The requests and tool runs of one unit of work: `scene` of `thread`."""
        return SceneCalls(self, thread, scene, self.scope_for(thread, scene))

    def scope_for(self, thread: Thread, scene: Scene | None = None) -> CallScope:
        """Whom a request is recorded for: this run, `thread` and `scene` (no scene: a request
        beside the scenes, the curation of `thread`)."""
        return self.session.scoped(thread.id, scene.id if scene else None)

    def request(
        self,
        messages: list[Message],
        scope: CallScope,
        *,
        purpose: str,
        tool_choice: str = "auto",
        max_tokens: int | None = None,
        with_tools: bool = True,
        decided: Decided | None = None,
        counter: TokenCounter | None = None,
    ) -> ChatResult:
        """A request of this run's agent: its tools (a stable prefix), recorded for `scope`. A
        scene round that overflows is raised for the scene loop to compact (`on_overflow`); any
        other request falls back to a short standalone prompt. `with_tools=False` sends no tools
        (an answer that must not call any); `decided` judges a cut-off reply
        (`model.session.unanswered`); `counter` (a fork, for a request sent beside others)
        measures and learns instead of the run's."""
        in_scene = purpose == "annotate"
        return self.session.call(
            messages,
            scope,
            purpose=purpose,
            tools=self.tools if with_tools else None,
            tool_choice=tool_choice,
            max_tokens=max_tokens,
            shrink=None if in_scene else self._standalone,
            retry_overflow=not in_scene,
            exact_share=1.0 if in_scene else OTHER_EXACT_SHARE,
            decided=decided,
            counter=counter,
        )

    def request_ahead(self, messages: list[Message], scope: CallScope, *, purpose: str) -> bool:
        """Send now a compaction request (`purpose` "summary" or "flush") that a later
        `request` of the same content takes instead of sending it (`ModelSession.send_ahead`):
        the same tools, gate and fallback as `request` gives it. False: nothing was sent (a
        serial run keeps one request at a time)."""
        if not self.side_by_side:
            return False
        return self.session.send_ahead(messages, scope, **self._compaction_request(purpose))

    def replied_ahead(self, purpose: str, messages: list[Message]) -> str | None:
        """The text of the reply to a compaction request `request_ahead` sent with
        `messages`, when it is back (`ModelSession.replied_ahead`); None otherwise."""
        reply = self.session.replied_ahead(messages, **self._compaction_request(purpose))
        return None if reply is None else reply.content or ""

    def _compaction_request(self, purpose: str) -> dict[str, Any]:
        """How a compaction request (`purpose` "summary" or "flush") is sent: the run's tools, its
        tool choice, the standalone fallback (`request` gives any request but a scene round)."""
        return {
            "purpose": purpose,
            "tools": self.tools,
            "tool_choice": COMPACTION_TOOL_CHOICE[purpose],
            "shrink": self._standalone,
            "exact_share": OTHER_EXACT_SHARE,
        }

    def access_for(self, thread: Thread | None, scene: Scene) -> ToolAccess:
        """What a tool call of `scene` may touch: the store, the corpus, the scene's actor."""
        return ToolAccess(
            store=self.store,
            corpus=self.corpus,
            actor=self.actor_for(thread, scene),
            scene=scene,
            posts_read=self._posts_read,
        )

    def actor_for(self, thread: Thread | None, scene: Scene | None) -> Actor:
        """Who writes for `scene` of `thread`: the agent, under the snapshot in force."""
        latest = self.store.memory.latest_snapshot()
        return Actor(
            kind="agent",
            run_id=self.run_id,
            thread_id=thread.id if thread else None,
            scene_id=scene.id if scene else None,
            snapshot_id=latest.id if latest else None,
        )


@dataclass(frozen=True)
class SceneCalls:
    """The requests of one unit of work, for `scene` of `thread` (`scope` on the books): scene
    rounds, the summaries and flush compaction asks for (`ContextManager`'s `model`), tool runs.
    """

    calls: AgentCalls
    thread: Thread
    scene: Scene
    scope: CallScope

    def round(self, messages: list[Message], counter: TokenCounter | None = None) -> ChatResult:
        """A round of the scene: its messages with the run's tools (`counter`: a drafted
        scene's fork of the run's)."""
        return self.calls.request(messages, self.scope, purpose="annotate", counter=counter)

    def summarize(self, messages: list[Message]) -> str:
        """A compaction summary: `messages` (the prefix and the instruction) in, text out."""
        result = self.calls.request(
            messages, self.scope, purpose="summary", tool_choice=COMPACTION_TOOL_CHOICE["summary"]
        )
        return result.content or ""

    def flush(self, messages: list[Message]) -> list[Message]:
        """The pre-compaction flush: the agent may record what it has not written yet (its
        writes cite this scene). Compaction outside a scene has no `SceneCalls`, so it drops
        turns without a flush rather than run tools that cannot succeed."""
        turns = list(messages)
        for _ in range(FLUSH_ROUNDS):
            result = self.calls.request(
                turns, self.scope, purpose="flush", tool_choice=COMPACTION_TOOL_CHOICE["flush"]
            )
            turns.append(assistant_message_dict(result.message))
            if not result.tool_calls:
                break
            turns.extend(outcome.message() for outcome in self.run_tools(result))
        return turns[len(messages) :]

    def ahead(self, purpose: str, messages: list[Message]) -> bool:
        """Send now the request `summarize` ("summary") or the first round of `flush`
        ("flush") will send with `messages`, for this scene; its reply is taken then."""
        return self.calls.request_ahead(messages, self.scope, purpose=purpose)

    def run_tools(self, result: ChatResult) -> list[ToolOutcome]:
        """The tool calls of `result`, run for this scene."""
        access = self.calls.access_for(self.thread, self.scene)
        return [dispatch(self.registry, access, call) for call in result.tool_calls]

    @property
    def registry(self) -> ToolRegistry:
        return self.calls.registry
