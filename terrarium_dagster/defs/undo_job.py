"""`undo_job`: undo a curator decision or a revision from the Launchpad (its run config).

The one op opens an `Engine` without a model (a writer: it takes the store's writer lease, and
runs in the `terrarium_llm` pool so it waits behind a running annotation instead of failing) and
calls `GlossaryEdits.undo` (`engine.edits`), exactly what `terrarium undo` does. The
compensating revisions it writes are shown by `terrarium lineage`; the output's metadata lists
them.
"""

import dagster as dg
from pydantic import Field

from terrarium_dagster.config import load_settings
from terrarium_dagster.defs.assets import LLM_POOL
from terrarium_dagster.defs.failures import fail_on
from terrarium_dagster.defs.resources import CorpusResource, StoreResource
from terrarium_dagster.engine import Engine


class UndoConfig(dg.Config):
    """What to undo: a curator decision or a revision (exactly one), and why."""

    decision_id: int | None = Field(
        default=None,
        description="Curator decision id (the `id` column of curated_glossary's decisions table, "
        "or `terrarium lineage TERM`).",
    )
    revision_id: int | None = Field(
        default=None, description="Revision id (`#ID` in `terrarium lineage TERM`)."
    )
    reason: str = Field(default="", description="Why; recorded with the undo revisions.")


@dg.op(pool=LLM_POOL, out=dg.Out(dict, description="What the undo wrote (UndoResult)."))
def undo_change(
    context: dg.OpExecutionContext,
    config: UndoConfig,
    corpus: CorpusResource,
    store: StoreResource,
) -> dg.Output[dict]:
    """Undo one curator decision or revision with compensating revisions (nothing erased)."""
    settings = load_settings(
        corpus=corpus.settings().corpus,
        url_template=corpus.url_template or None,
        db=store.path or None,
    )
    engine = fail_on(Engine.open, settings, run_id=context.run.run_id, model=False)
    with engine:
        result = fail_on(
            engine.edits.undo,
            decision_id=config.decision_id,
            revision_id=config.revision_id,
            reason=config.reason or None,
        )
    context.log.info(
        f"undid {result.what}: revisions {result.revision_ids} on entries "
        f"{', '.join(f'E{i}' for i in result.entry_ids)}"
    )
    for line in result.kept:
        context.log.warning(f"kept the later change: {line}")
    metadata: dict[str, object] = {
        "undone": result.what,
        "undo_revisions": dg.MetadataValue.json(result.revision_ids),
        "entries": dg.MetadataValue.json([f"E{i}" for i in result.entry_ids]),
        "kept_later_changes": dg.MetadataValue.json(result.kept),
    }
    if result.thread_key:
        metadata["refresh_export_of"] = result.thread_key
    return dg.Output(result.model_dump(mode="json"), metadata=metadata)


@dg.job(
    description="Undo a curator decision or a revision (set decision_id or revision_id in the "
    "op's config): compensating revisions, nothing erased; the same as `terrarium undo`."
)
def undo_job() -> None:
    undo_change()
