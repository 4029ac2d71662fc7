"""Which story this code location serves, when several stories share one Dagster deployment.

A code location serves one story: one corpus, one store, one set of exports. With the `story`
setting unset (one story, the default) the names are the plain ones. With it set (`story:
banished` in the story's `terrarium.yaml`, or `TERRARIUM_STORY`), the names Dagster keeps
deployment-wide carry the story, so two stories never meet:

- asset keys are prefixed (`banished/thread_annotations`): asset keys are global in a workspace;
- the dynamic partition set is `banished_threads`: partition sets live in the instance;
- the writer's pool is `terrarium_banished`: one thread step of a story at a time, the next run
  waiting in Dagster's queue (pools with `granularity: op` in dagster.yaml: the queue holds a run
  whose pool is full) instead of failing on the store's lease; runs of other stories, in pools of
  their own, go side by side.

The setting is read once, when the code location loads (each location is its own process).
"""

from __future__ import annotations

import dagster as dg

from terrarium_dagster.config import load_settings

STORY: str | None = load_settings().story

KEY_PREFIX: tuple[str, ...] = (STORY,) if STORY else ()

PARTITIONS_NAME = f"{STORY}_threads" if STORY else "threads"

# LLM work and store writes of this story run in this pool; dagster.yaml gives every pool one
# slot (`default_limit: 1`): the store has one writer.
WRITER_POOL = f"terrarium_{STORY}" if STORY else "terrarium_llm"


def story_key(name: str) -> dg.AssetKey:
    """An asset key of this story's location."""
    return dg.AssetKey([*KEY_PREFIX, name])
