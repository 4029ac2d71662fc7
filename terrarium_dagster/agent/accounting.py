"""What one model call cost, as the store records it: one row per HTTP attempt the server got."""

from __future__ import annotations

from collections.abc import Sequence

from terrarium_dagster.agent.client import ChatResult, FailedAttempt
from terrarium_dagster.glossary.models import AgentCallRecord


def call_record(
    result: ChatResult | None,
    *,
    purpose: str,
    model: str | None,
    run_id: str | None,
    thread_id: int | None,
    scene_id: str | None,
    error: str | None = None,
) -> AgentCallRecord:
    """The agent-call row of a call: its tokens and latency, or zeros and the error if it failed."""
    return AgentCallRecord(
        run_id=run_id,
        thread_id=thread_id,
        scene_id=scene_id,
        purpose=purpose,
        model=model,
        prompt_tokens=result.prompt_tokens if result else 0,
        cached_tokens=result.cached_tokens if result else 0,
        completion_tokens=result.completion_tokens if result else 0,
        latency_ms=result.latency_ms if result else 0.0,
        finish_reason=result.finish_reason if result else None,
        error=error,
    )


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
) -> list[AgentCallRecord]:
    """The rows of a call, one per request the server received: each attempt the client retried
    (a 5xx, a timeout, a malformed reply: its outcome as the error), then the call's own row.
    `failed_attempts` are a failed call's (the error's); an answered call carries its own."""
    retried = result.failed_attempts if result is not None else failed_attempts
    rows = [
        AgentCallRecord(
            run_id=run_id,
            thread_id=thread_id,
            scene_id=scene_id,
            purpose=purpose,
            model=model,
            prompt_tokens=attempt.usage.prompt_tokens if attempt.usage else 0,
            cached_tokens=attempt.usage.cached_tokens if attempt.usage else 0,
            completion_tokens=attempt.usage.completion_tokens if attempt.usage else 0,
            latency_ms=attempt.latency_ms,
            error=f"retried: {attempt.outcome}",
        )
        for attempt in retried
        if isinstance(attempt, FailedAttempt)
    ]
    rows.append(
        call_record(
            result,
            purpose=purpose,
            model=model,
            run_id=run_id,
            thread_id=thread_id,
            scene_id=scene_id,
            error=error,
        )
    )
    return rows
