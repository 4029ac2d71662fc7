"""What one model call cost, as the store records it: one row per HTTP attempt the server got."""

from __future__ import annotations

from collections.abc import Sequence

from terrarium_dagster.agent.client import ChatResult, FailedAttempt
from terrarium_dagster.agent.protocol import Usage
from terrarium_dagster.store.models import AgentCallRecord


def call_records(
    result: ChatResult | None,
    *,
    purpose: str,
    model: str | None,
    run_id: str | None,
    thread_id: int | None,
    scene_id: str | None,
    error: str | None = None,
    failed_attempts: Sequence[object] = (),
    server: str | None = None,
) -> list[AgentCallRecord]:
    """The rows of a call, one per request the server received: each attempt the client retried
    (a 5xx, a timeout, a malformed reply: its outcome as the error), then the call's own row
    (its tokens and latency, or zeros and the error if it failed). `failed_attempts` are a
    failed call's (the error's); an answered call carries its own."""

    def row(
        usage: Usage | None,
        latency_ms: float,
        finish_reason: str | None,
        outcome: str | None,
        where: str | None,
    ) -> AgentCallRecord:
        return AgentCallRecord(
            run_id=run_id,
            thread_id=thread_id,
            scene_id=scene_id,
            purpose=purpose,
            model=model,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            cached_tokens=usage.cached_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            latency_ms=latency_ms,
            finish_reason=finish_reason,
            error=outcome,
            server=where,
        )

    retried = result.failed_attempts if result is not None else failed_attempts
    rows = [
        row(
            attempt.usage,
            attempt.latency_ms,
            None,
            f"retried: {attempt.outcome}",
            attempt.server or server,
        )
        for attempt in retried
        if isinstance(attempt, FailedAttempt)
    ]
    if result is None:
        rows.append(row(None, 0.0, None, error, server))
    else:
        where = result.server or server
        rows.append(row(result.usage, result.latency_ms, result.finish_reason, error, where))
    return rows
