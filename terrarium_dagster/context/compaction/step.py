"""The one interface of compaction's strategies, and the data each pass is given.

A strategy (`CompactionStep`) takes data — a `Compaction`: the context to make smaller, the
context as the server last saw it, the budget (`Caps`, `CompactionPolicy`) and the functions it
was handed to reach the model (`Summarizer`, `Flusher`) — frees about `goal` tokens from
`job.state` in one pass and returns what it did (a `CompactionEvent`), or None when it has nothing
left to do. It never sees the object that runs it, nor the agent behind the model functions.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from terrarium_dagster.context.compaction.events import CompactionEvent, Reason
from terrarium_dagster.context.compaction.policy import Caps, CompactionPolicy
from terrarium_dagster.context.state import ContextState, Message
from terrarium_dagster.context.tokens import TokenCounter

Summarizer = Callable[[list[Message]], str]
"""Sends `messages` (the cached prefix plus the instruction, last) with the run's tools and
`tool_choice="none"`, and returns the answer's text. BudgetError or NoAnswerError (no usable
answer) make the summary extractive; any other AgentError stops the run."""

Flusher = Callable[[list[Message]], Any]
"""Runs the flush turn(s) on `messages`: calls the model with tools, executes its tool calls,
until it answers without tools. Its messages are not kept. An AgentError stops the run."""


Ahead = Callable[[str, list[Message]], bool]
"""Sends now the request a later `Summarizer` ("summary") or `Flusher` ("flush") call will send
with these messages, which takes its reply then (`ModelSession.send_ahead`); False: not sent."""


class ModelCalls(Protocol):
    """The model as one unit of work's compaction reaches it (the scene loop hands the manager
    one per call: recorded for that thread and scene): its `Summarizer` and `Flusher`, and a
    way to send their requests ahead of their turn (`Ahead`)."""

    def summarize(self, messages: list[Message]) -> str: ...

    def flush(self, messages: list[Message]) -> Any: ...

    def ahead(self, purpose: str, messages: list[Message]) -> bool: ...


@dataclass
class Compaction:
    """One compaction in progress: everything its passes read, and the context they change."""

    state: ContextState  # the context being made smaller (the passes change it in place)
    origin: ContextState  # a copy as it stood when the compaction began (the server's prefix)
    scene_messages: list[Message]  # the next request's own messages, after the history
    reserve: int  # tokens the next request needs beyond its prompt
    caps: Caps
    policy: CompactionPolicy
    counter: TokenCounter
    system_prompt: str
    fits: Callable[[Sequence[Message]], bool]  # whether a request fits the budget
    summarizer: Summarizer | None = None
    flusher: Flusher | None = None
    ahead: Ahead | None = None
    thread_id: int | None = None
    scene_id: str | None = None
    reason: Reason = "budget"
    # a finished thread the fold leaves in the history for now (`ContextManager.defer_fold`)
    keep_thread_id: int | None = None
    # the story fold takes only the summaries the compaction found (`fold.story_folding`)
    story_from_origin: bool = False
    flushed: bool = False
    events: list[CompactionEvent] = field(default_factory=list)

    def estimate(self, messages: Iterable[Message]) -> int:
        """The estimated tokens of `messages`."""
        return sum(self.counter.estimate_message(message) for message in messages)


class CompactionStep(ABC):
    """One way to make a context smaller. `summarizes`: the step writes summaries (a model
    call) and aims at the low-water mark; otherwise it aims at the limit."""

    name: ClassVar[str]
    summarizes: ClassVar[bool] = False

    @abstractmethod
    def run(self, job: Compaction, goal: int) -> CompactionEvent | None:
        """Free about `goal` tokens from `job.state`; None when this step can do nothing more."""

    def wanted(self, job: Compaction) -> bool:
        """Whether the step should run although the prompt already fits (default: no)."""
        return False
