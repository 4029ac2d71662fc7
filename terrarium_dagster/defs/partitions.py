"""The `threads` partitions: one key per corpus thread, in story order."""

from __future__ import annotations

from collections.abc import Sequence

import dagster as dg

from terrarium_dagster.defs.story_location import PARTITIONS_NAME

threads_partitions = dg.DynamicPartitionsDefinition(name=PARTITIONS_NAME)

# The run tags Dagster itself sets on a run of one partition, and of a partition range (a
# single-run backfill).
PARTITION_TAG = "dagster/partition"
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"


class PartitionOrderError(Exception):
    """The corpus's thread order no longer agrees with the partition keys already added."""


def _thread_id(key: str) -> str | None:
    head, sep, tail = key.rpartition("-")
    return tail if sep and head.startswith("t") and tail.isdigit() else None


def foreign_keys(existing: Sequence[str], discovered: Sequence[str]) -> list[str]:
    """Partition keys that name no corpus thread (added by hand in the UI, or a typo).

    A key for a thread the corpus has, at another position, is not foreign: the corpus was
    reordered, which `new_thread_keys` refuses.
    """
    known = set(discovered)
    thread_ids = {_thread_id(key) for key in discovered}
    return [key for key in existing if key not in known and _thread_id(key) not in thread_ids]


def new_thread_keys(existing: Sequence[str], discovered: Sequence[str]) -> list[str]:
    """The keys to add, in story order.

    Keys that name no corpus thread (see `foreign_keys`) are ignored: they never block discovery.
    The corpus keys already added must be exactly the first keys of the corpus's story order
    (keys are never deleted and re-added); a thread that appeared in the middle of the story (or a
    reordered corpus) is refused with a message naming the first disagreement.
    """
    foreign = set(foreign_keys(existing, discovered))
    known = [key for key in existing if key not in foreign]
    for index, key in enumerate(known):
        if index >= len(discovered) or discovered[index] != key:
            found = discovered[index] if index < len(discovered) else "nothing"
            raise PartitionOrderError(
                f"partition {index} is {key!r} but the corpus now has {found!r} there; "
                "threads were removed or inserted before existing ones"
            )
    return list(discovered[len(known) :])


def range_tags(first: str, last: str) -> dict[str, str]:
    """Run tags that make one run cover the partition range `first`..`last`."""
    return {RANGE_START_TAG: first, RANGE_END_TAG: last}


def range_run_request(
    keys: Sequence[str],
    *,
    asset_selection: Sequence[dg.AssetKey],
    run_key: str,
    tags: dict[str, str] | None = None,
) -> dg.RunRequest:
    """One run over `keys` (neighbours in story order): a partition, or a partition range."""
    if not keys:
        raise ValueError("a run request needs at least one thread key")
    extra = dict(tags or {})
    if len(keys) == 1:
        return dg.RunRequest(
            run_key=run_key, asset_selection=asset_selection, partition_key=keys[0], tags=extra
        )
    return dg.RunRequest(
        run_key=run_key,
        asset_selection=asset_selection,
        tags={**extra, **range_tags(keys[0], keys[-1])},
    )
