"""Summon and `why`: a later agent talks to a past context (no Dagster).

The checkpoints themselves (save, load, which snapshot records an edit, going back to one) are the
context layer's (`context.checkpoint`); this package sits above the agent and uses its model
session and tools.

- `snapshots.summon`: `SummonManager` (summon / continue_ / dismiss, read-only, within budget) and
  the agent's tools (`snapshot_tools`: list_snapshots, summon_snapshot, summon_continue,
  summon_dismiss).
- `snapshots.why`: what `terrarium why` and `terrarium snapshots` (in `cli`) print.
"""
