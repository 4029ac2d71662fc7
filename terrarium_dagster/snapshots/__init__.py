"""Checkpoints, snapshots and summon (no Dagster).

- `snapshots.checkpoint`: save/load checkpoints (`save_checkpoint`, `load_checkpoint`), which
  snapshot to summon for an edit (`snapshot_for_revision`, `snapshot_for_entry`), and going back
  to one (`restore_from_snapshot`, for `terrarium run --from-snapshot`).
- `snapshots.summon`: `SummonManager` (summon / continue_ / dismiss, read-only, within budget) and
  the agent's tools (`snapshot_tools`: list_snapshots, summon_snapshot, summon_continue,
  summon_dismiss).
- `snapshots.why`: what `terrarium why` and `terrarium snapshots` (in `cli`) print.
"""
