"""Snapshots and their persistence (no Dagster).

`snapshots.context_snapshots`: save and load them (the full context state at a thread's end or a
clean stop, with the system prompt and tools it was sent with), which snapshot records the
context of an edit (`snapshot_for_revision`, `snapshot_for_entry`), and going back to one
(`restore_from_snapshot`, for `terrarium run --from-snapshot`). Summon and `why`, which talk to a
past context through the model, are the agent's (`summon.summoning`, `summon.why`).
"""
