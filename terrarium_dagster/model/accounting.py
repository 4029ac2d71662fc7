"""What one model request cost, as the store records it: one row per HTTP attempt the server got."""

from __future__ import annotations

from dataclasses import dataclass

from terrarium_dagster.model.protocol import Usage
from terrarium_dagster.store.ledger import ABANDONED
from terrarium_dagster.store.models import AgentCallRecord

#: The outcome of an attempt still with the server when the run stopped (a sibling's request,
#: a hung one): the server got it, and no answer will be read.
ABANDONED_AT_STOP = ABANDONED + "the run stopped while the request was with the server"
RETRIED = "retried: "  # the prefix of an attempt that failed and was asked again


@dataclass(frozen=True)
class CallScope:
    """Whom a call is recorded for: the run, and the thread and scene it served. The one
    immutable context a request carries from the scene loop down to the client."""

    run_id: str | None
    thread_id: int | None = None
    scene_id: str | None = None

    def describe(self) -> str:
        """` for scene 12#34` (or thread, or nothing): what a log line about the call adds."""
        if self.scene_id is not None:
            return f" for scene {self.scene_id}"
        return f" for thread {self.thread_id}" if self.thread_id is not None else ""


def attempt_record(
    usage: Usage | None,
    *,
    purpose: str,
    model: str | None,
    scope: CallScope,
    outcome: str | None,
    server: str | None,
    latency_ms: float = 0.0,
    finish_reason: str | None = None,
) -> AgentCallRecord:
    """The row of one HTTP attempt: its tokens and latency (zeros where it got no answer), and
    its outcome as the error (None for an answer: `RETRIED` + the cause for an attempt the client
    asked again, the error for the last attempt of a failed call, `ABANDONED_AT_STOP`,
    `store.ledger.ANSWERED_AFTER_STOP`)."""
    return AgentCallRecord(
        run_id=scope.run_id,
        thread_id=scope.thread_id,
        scene_id=scope.scene_id,
        purpose=purpose,
        model=model,
        prompt_tokens=usage.prompt_tokens if usage else 0,
        cached_tokens=usage.cached_tokens if usage else 0,
        completion_tokens=usage.completion_tokens if usage else 0,
        latency_ms=latency_ms,
        finish_reason=finish_reason,
        error=outcome,
        server=server,
    )
