"""What one model call cost, as the store records it."""

from __future__ import annotations

from terrarium_dagster.agent.client import ChatResult
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
