"""How an engine error reaches Dagster: a `dg.Failure` carrying the engine's one-line message."""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, TypeVar

import dagster as dg

from terrarium_dagster.errors import OrderError, TerrariumError

P = ParamSpec("P")
T = TypeVar("T")


def fail_on(call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Call into the engine; its errors become a `dg.Failure` with the engine's one-line message
    (an order error is not retried: running it again cannot help)."""
    try:
        return call(*args, **kwargs)
    except TerrariumError as exc:
        raise dg.Failure(
            description=str(exc),
            metadata={"error": type(exc).__name__},
            allow_retries=not isinstance(exc, OrderError),
        ) from exc
