"""The requests of one run's agent, and the tool calls its answers make.

Every request goes through the run's model session (`session.py::ModelSession`: the window gate,
accounting, call records) with the run's tools as a stable prefix, recorded for the thread and
scene in `scope`. The context manager is handed two of these methods as plain functions —
`summarize` (messages in, the answer's text out) and `flush` (the pre-compaction flush) — so
compaction reaches the model one way down, without knowing the scene loop that runs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from terrarium_dagster.agent.tools import ToolAccess, ToolOutcome, ToolRegistry, dispatch
from terrarium_dagster.context.state import Message
from terrarium_dagster.context.tokens import TokenCounter
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.corpus.units import Scene, Thread
from terrarium_dagster.model.client import ChatResult
from terrarium_dagster.model.protocol import assistant_message_dict
from terrarium_dagster.model.session import EXACT_SHARE, Decided, ModelSession, standalone_task
from terrarium_dagster.store.annotator import Actor, GlossaryStore

FLUSH_ROUNDS = 2

Scope = tuple[Thread | None, Scene | None]


class AgentCalls:
    """The agent's requests and tool runs, scoped to the thread and scene being worked on."""

    def __init__(
        self,
        *,
        session: ModelSession,
        store: GlossaryStore,
        corpus: Corpus,
        registry: ToolRegistry,
        tools: Sequence[dict[str, Any]],
        run_id: str,
    ) -> None:
        self.session = session
        self.store = store
        self.corpus = corpus
        self.registry = registry
        self.tools = list(tools)
        self.run_id = run_id
        self.scope: Scope | None = None  # (thread, scene) the requests serve; None between
        self._standalone = standalone_task(session, self.tools)

    def call(
        self,
        messages: list[Message],
        *,
        purpose: str,
        tool_choice: str = "auto",
        max_tokens: int | None = None,
        with_tools: bool = True,
        decided: Decided | None = None,
        counter: TokenCounter | None = None,
        scope: Scope | None = None,
    ) -> ChatResult:
        """A request of this run's agent: its tools (a stable prefix), scoped to the current
        thread and scene. A scene round that overflows is raised for the scene loop to compact
        (`on_overflow`); any other request falls back to a short standalone prompt.
        `with_tools=False` sends no tools (an answer that must not call any); `decided` judges
        a cut-off reply (`model.session.unanswered`); `counter` (a fork, for a request sent
        beside others) measures and learns instead of the run's; `scope` (a drafted scene's)
        stands for the current one."""
        thread, scene = scope or self.scope or (None, None)
        in_scene = purpose == "annotate"
        return self.session.call(
            messages,
            purpose=purpose,
            tools=self.tools if with_tools else None,
            tool_choice=tool_choice,
            max_tokens=max_tokens,
            shrink=None if in_scene else self._standalone,
            retry_overflow=not in_scene,
            scope=self.session.scoped(thread.id if thread else None, scene.id if scene else None),
            exact_share=1.0 if in_scene else EXACT_SHARE,
            decided=decided,
            counter=counter,
        )

    def summarize(self, messages: list[Message]) -> str:
        """A compaction summary: `messages` (the prefix and the instruction) in, text out."""
        result = self.call(messages, purpose="summary", tool_choice="none")
        return result.content or ""

    def flush(self, messages: list[Message]) -> list[Message]:
        """The pre-compaction flush: the agent may record what it has not written yet.

        Only within a scene: its writes need a scene to cite. Compaction outside one (before a
        curation) drops turns without a flush rather than run tools that cannot succeed."""
        _, scene = self.scope or (None, None)
        if scene is None:
            return []
        turns = list(messages)
        for _ in range(FLUSH_ROUNDS):
            result = self.call(turns, purpose="flush")
            turns.append(assistant_message_dict(result.message))
            if not result.tool_calls:
                break
            turns.extend(outcome.message() for outcome in self.run_tools(result))
        return turns[len(messages) :]

    def run_tools(self, result: ChatResult) -> list[ToolOutcome]:
        """The tool calls of `result`, run for the current scene."""
        _, scene = self.scope or (None, None)
        assert scene is not None, "tools run only within a scene"
        thread, _ = self.scope or (None, None)
        access = self.access_for(thread, scene)
        return [dispatch(self.registry, access, call) for call in result.tool_calls]

    def access_for(self, thread: Thread | None, scene: Scene) -> ToolAccess:
        """What a tool call of `scene` may touch: the store, the corpus, the scene's actor."""
        return ToolAccess(
            store=self.store, corpus=self.corpus, actor=self.actor_for(thread, scene), scene=scene
        )

    def actor_for(self, thread: Thread | None, scene: Scene | None) -> Actor:
        """Who writes for `scene` of `thread`: the agent, under the snapshot in force."""
        latest = self.store.memory.latest_checkpoint()
        return Actor(
            kind="agent",
            run_id=self.run_id,
            thread_id=thread.id if thread else None,
            scene_id=scene.id if scene else None,
            snapshot_id=latest.id if latest else None,
        )
