"""The backfill daemon of a test's `dagster dev` loops every few seconds, not every 30.

Dagster's backfill daemon sleeps a fixed 30 s between iterations (`DEFAULT_DAEMON_INTERVAL_SECONDS`
of `dagster._daemon.controller`, read by `execute_backfill_iteration_loop` on every loop; no
instance setting changes it). A backfill waits for that loop twice: to have its runs submitted and
to be marked done; Declarative Automation's requests are backfills too. The suite's `dagster dev`
tests spent most of their minutes waiting for it. `dev_environment` (tests/support/dagster_dev.py)
puts this folder first on PYTHONPATH, so Python imports this file when each process of the test's
`dagster dev` starts (webserver, daemon, code server, run workers), and it sets that one constant
when Dagster's module is loaded. (Dagster reads it in one other place: the asset daemon's interval
for automation without a sensor; this code location has its automation sensor.) Only the daemon's
pace changes: what runs, and in what order, is what the tests check, as before.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

BACKFILL_DAEMON_INTERVAL_S = 2
_MODULE = "dagster._daemon.controller"
_CONSTANT = "DEFAULT_DAEMON_INTERVAL_SECONDS"


class _SetInterval(importlib.abc.MetaPathFinder):
    """Finds Dagster's daemon controller as usual, and sets the interval once it has run."""

    def find_spec(self, name: str, path: object, target: object = None) -> object:
        if name != _MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)  # type: ignore[arg-type]
        if spec is None or spec.loader is None:
            return None
        load = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            load(module)
            if not isinstance(getattr(module, _CONSTANT, None), int):
                raise ImportError(f"{_MODULE}.{_CONSTANT} is gone: tests/support/dagster_ticks")
            setattr(module, _CONSTANT, BACKFILL_DAEMON_INTERVAL_S)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


sys.meta_path.insert(0, _SetInterval())
