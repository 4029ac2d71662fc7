"""How an engine error reaches Dagster: a `dg.Failure` carrying the engine's one-line message.

An engine error is an expected refusal or a runtime failure the engine has already explained in
one line, so the `Failure` is raised without the engine's exception chained to it: the run's log
shows the line (and where Dagster raised it), not a second stack trace of the engine's insides.
A refusal that one setting would lift names that setting as the Launchpad's run config spells it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, TypeVar

import dagster as dg

from terrarium_dagster.errors import OrderError, TerrariumError

P = ParamSpec("P")
T = TypeVar("T")


# Where a setting that lifts a refusal lives in the thread step's run config (Launchpad).
RUN_CONFIG_OF_SETTING = {"rewind": "ops: {thread_glossary: {config: {rewind: true}}}"}


def failure_for(exc: TerrariumError) -> dg.Failure:
    """The `dg.Failure` for an engine error: its one line, plus the run config to set when one
    setting would let the run proceed (an order error is not retried: running it again unchanged
    cannot help)."""
    description = str(exc)
    metadata: dict[str, str] = {"error": type(exc).__name__}
    if exc.setting in RUN_CONFIG_OF_SETTING:
        config = RUN_CONFIG_OF_SETTING[exc.setting]
        description += f" (set it in the Launchpad's run config: {config})"
        metadata["run_config"] = config
    return dg.Failure(
        description=description,
        metadata=metadata,
        allow_retries=not isinstance(exc, OrderError),
    )


def fail_on(call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Call into the engine; its errors become a `dg.Failure` with the engine's one-line message
    and no chained engine traceback (`failure_for`)."""
    try:
        return call(*args, **kwargs)
    except TerrariumError as exc:
        raise failure_for(exc) from None
