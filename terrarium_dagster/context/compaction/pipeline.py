"""The one pipeline both the run and summon compact through: strategies tried in order.

Each strategy runs while the next request is over its stop mark (the budget for lossy
strategies; the low-water target for summarizing ones), or while it is `wanted`, until it returns
None or a pass frees nothing; then the next takes over. Every pass makes structural progress (a
scene leaves the history, a summary is folded, a block is trimmed, a message is truncated), so a
compaction ends; a pass limit turns a bug into an error, not a hang.

The run's order is `RUN_STEPS`; summon (`summon/summoning.py`) composes its own order from the same
interface, sharing `Truncate` and `CutMiddle`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from terrarium_dagster.context.compaction.cut_middle import CutMiddle
from terrarium_dagster.context.compaction.events import CompactionEvent
from terrarium_dagster.context.compaction.fold import Fold
from terrarium_dagster.context.compaction.policy import Caps
from terrarium_dagster.context.compaction.step import Compaction, CompactionStep
from terrarium_dagster.context.compaction.summarize_chunk import SummarizeChunk
from terrarium_dagster.context.compaction.trim_thinking import TrimThinking
from terrarium_dagster.context.compaction.truncate import Truncate
from terrarium_dagster.errors import BudgetError

RUN_STEPS: tuple[CompactionStep, ...] = (
    SummarizeChunk(),
    Fold(),
    TrimThinking(),
    Truncate(),
    CutMiddle(),
)


def run_steps(
    steps: Sequence[CompactionStep],
    job: Compaction,
    *,
    need: Callable[[], int],
    record: Callable[[CompactionEvent], None],
    force: bool = False,
) -> int:
    """Run `steps` over `job` until the next request (`need()`: its prompt tokens plus the
    reserve) is within each step's stop mark. `force`: at least one pass runs. Each event is
    stamped, counted in the state, kept in `job.events` and passed to `record`. Returns the
    last `need()`; BudgetError when the pass limit is reached."""
    caps = job.caps
    guard = 16 + 2 * (len(job.state.history) + len(job.state.summaries))
    needed = need()
    for step in steps:
        while True:
            stop_at = _stop_at(step, job, caps)
            wanted = needed > stop_at or (force and not job.events) or step.wanted(job)
            if not wanted:
                break
            goal = max(needed - stop_at, 1 if step.summarizes else caps.min_free)
            event = step.run(job, goal)
            if event is None:
                break
            guard -= 1
            if guard < 0:
                raise BudgetError(
                    "compaction made no progress (pass limit reached); "
                    f"last step {step.name}, prompt {needed} tokens, limit {caps.limit}"
                )
            after = need()
            event.tokens_before = needed - job.reserve
            event.tokens_after = after - job.reserve
            event.reason = job.reason
            event.thread_id = job.thread_id
            event.scene_id = job.scene_id
            job.state.count_compaction(event.tier)
            record(event)
            job.events.append(event)
            freed = needed - after
            needed = after
            if freed <= 0:
                break
    return needed


def _stop_at(step: CompactionStep, job: Compaction, caps: Caps) -> int:
    """Where a step stops: the budget for lossy steps; the low-water target for summarizing
    steps, or near it once a pass has run (another summary call for a few tokens would cost
    more than it saves)."""
    if not step.summarizes:
        return caps.limit
    return caps.target + (caps.min_free // 2 if job.events else 0)
