"""Assets partitioned by thread. Each maps its partitions to engine calls and reports to metadata.

Every asset takes a range of threads in one run (`BackfillPolicy.single_run()`), works through the
threads in story order and yields one `AssetMaterialization` per finished thread, so a failure
half-way keeps the threads that finished. The store and the model are the engine's: nothing here
keeps state between runs.
"""

import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from itertools import pairwise
from pathlib import Path
from typing import ParamSpec, TypeVar

import dagster as dg
from pydantic import Field

from terrarium_dagster.corpus.models import Thread
from terrarium_dagster.corpus.summary import scene_batch_summary
from terrarium_dagster.defs.checks import evaluate_glossary_checks, glossary_check_specs
from terrarium_dagster.defs.metadata import (
    annotation_metadata,
    curation_metadata,
    export_metadata,
)
from terrarium_dagster.defs.partitions import threads_partitions
from terrarium_dagster.defs.resources import (
    AgentResource,
    CorpusResource,
    StoreResource,
    engine_settings,
)
from terrarium_dagster.engine import Engine
from terrarium_dagster.errors import OrderError, TerrariumError

PREVIEW_SCENES = 20

P = ParamSpec("P")
T = TypeVar("T")

# LLM work and store writes run in this pool; dagster.yaml gives every pool one slot by default.
LLM_POOL = "terrarium_llm"


@dg.asset(
    partitions_def=threads_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    output_required=False,
    group_name="annotation",
    kinds={"sqlite"},
    description="The thread's cleaned posts grouped into scenes (maximal runs of QM posts).",
)
def scene_batches(
    context: dg.AssetExecutionContext, corpus: CorpusResource
) -> Iterator[dg.AssetMaterialization]:
    with corpus.open() as reader:
        for key in context.partition_keys:
            summary = scene_batch_summary(reader, reader.thread_by_key(key))
            rows = [
                dg.TableRecord(
                    {
                        "scene": scene.scene_id,
                        "posts": scene.posts,
                        "chars": scene.chars,
                        "first_post": scene.first_post_url or scene.first_post_ref,
                        "opening": scene.opening,
                    }
                )
                for scene in summary.scenes[:PREVIEW_SCENES]
            ]
            yield dg.AssetMaterialization(
                asset_key=context.asset_key,
                partition=key,
                metadata={
                    "thread_id": summary.thread_id,
                    "title": summary.title,
                    "posts": summary.posts,
                    "story_posts": summary.story_posts,
                    "scenes": len(summary.scenes),
                    "story_characters": summary.story_chars,
                    "approx_tokens": summary.approx_tokens,
                    "scene_preview": dg.MetadataValue.table(
                        rows,
                        schema=dg.TableSchema(
                            columns=[
                                dg.TableColumn("scene", "string"),
                                dg.TableColumn("posts", "int"),
                                dg.TableColumn("chars", "int"),
                                dg.TableColumn("first_post", "string"),
                                dg.TableColumn("opening", "string"),
                            ]
                        ),
                    ),
                },
            )


class AnnotationConfig(dg.Config):
    """Run configuration of `thread_annotations`."""

    rewind: bool = Field(
        default=False,
        description=(
            "Re-annotate the run's first thread even though later threads already built on it: "
            "the glossary and the agent's context roll back to the end of the previous thread "
            "(recorded as revisions, nothing erased) and the later threads are marked for redo."
        ),
    )


@dg.asset(
    partitions_def=threads_partitions,
    deps=[scene_batches],
    backfill_policy=dg.BackfillPolicy.single_run(),
    pool=LLM_POOL,
    output_required=False,
    group_name="annotation",
    kinds={"sqlite"},
    description=(
        "The agent reads the thread's scenes and writes the glossary, one store transaction per "
        "scene. Threads run in story order; an earlier thread that is not annotated fails the run "
        "before anything is written."
    ),
)
def thread_annotations(
    context: dg.AssetExecutionContext,
    config: AnnotationConfig,
    corpus: CorpusResource,
    store: StoreResource,
    agent: AgentResource,
) -> Iterator[dg.AssetMaterialization]:
    with _engine(context, corpus, store, agent) as engine:
        threads = _threads_in_story_order(engine, context.partition_keys)
        _fail_on(engine.check_order, threads[0].id)
        # A range (backfill, re-execution) resumes: its finished threads are skipped. A single
        # thread that later threads built on is refused unless the run is configured to rewind.
        skip_done = len(threads) > 1
        for index, thread in enumerate(threads):
            report = _fail_on(
                engine.annotate_thread,
                thread.id,
                rewind=config.rewind and index == 0,
                skip_done=skip_done,
            )
            context.log.info(
                f"{thread.key}: {report.scenes_annotated} scenes, +{len(report.created)} "
                f"~{len(report.updated)} -{len(report.deleted)} entries, {report.calls} calls"
                + (" (already annotated)" if report.already_done else "")
            )
            yield dg.AssetMaterialization(
                asset_key=context.asset_key,
                partition=thread.key,
                metadata=annotation_metadata(report),
            )


@dg.asset(
    partitions_def=threads_partitions,
    deps=[thread_annotations],
    backfill_policy=dg.BackfillPolicy.single_run(),
    pool=LLM_POOL,
    output_required=False,
    group_name="glossary",
    kinds={"sqlite"},
    check_specs=glossary_check_specs(),
    description=(
        "The curator reviews the thread's tentative entries: confirm, reject, merge or revise, "
        "each decision a revision with its reasoning. Started by `curation_sensor` when the "
        "thread's annotations materialize."
    ),
)
def curated_glossary(
    context: dg.AssetExecutionContext,
    corpus: CorpusResource,
    store: StoreResource,
    agent: AgentResource,
) -> Iterator[dg.AssetMaterialization | dg.AssetCheckResult]:
    with _engine(context, corpus, store, agent) as engine:
        for thread in _threads_in_story_order(engine, context.partition_keys):
            report = _fail_on(engine.curate_thread, thread.id)
            yield dg.AssetMaterialization(
                asset_key=context.asset_key,
                partition=thread.key,
                metadata=curation_metadata(report),
            )
    yield from evaluate_glossary_checks(corpus, store)


@dg.asset(
    partitions_def=threads_partitions,
    deps=[curated_glossary],
    backfill_policy=dg.BackfillPolicy.single_run(),
    output_required=False,
    group_name="glossary",
    kinds={"json", "yaml", "markdown", "html"},
    description=(
        "The glossary as it stood at the end of the thread (no later spoilers), as JSON, YAML "
        "and a wiki, in `<exports>/<thread key>/`."
    ),
)
def glossary_export(
    context: dg.AssetExecutionContext,
    corpus: CorpusResource,
    store: StoreResource,
    agent: AgentResource,
) -> Iterator[dg.AssetMaterialization]:
    root = store.export_root()
    with _engine(context, corpus, store, agent) as engine:
        for thread in _threads_in_story_order(engine, context.partition_keys):
            out_dir = root / thread.key
            with _replacing_folder(out_dir) as staging:
                report = _fail_on(engine.export, staging, as_of_thread=thread.id)
            yield dg.AssetMaterialization(
                asset_key=context.asset_key,
                partition=thread.key,
                metadata=export_metadata(report, out_dir),
            )


@contextmanager
def _engine(
    context: dg.AssetExecutionContext,
    corpus: CorpusResource,
    store: StoreResource,
    agent: AgentResource,
) -> Iterator[Engine]:
    settings = _fail_on(engine_settings, corpus, store, agent)
    engine = _fail_on(
        Engine.open, settings, run_id=context.run.run_id, progress=_progress_logger(context)
    )
    with engine:  # records the run as finished, failed or interrupted
        yield engine


def _threads_in_story_order(engine: Engine, keys: Sequence[str]) -> list[Thread]:
    """The run's threads; they must be neighbours in story order (fail fast naming a gap)."""
    threads = sorted((_fail_on(engine.thread_by_key, key) for key in keys), key=_position)
    story = engine.threads
    for before, after in pairwise(threads):
        if after.position != before.position + 1:
            missing = story[before.position + 1]
            raise dg.Failure(
                description=(
                    f"the run's threads are not contiguous: {missing.key} lies between "
                    f"{before.key} and {after.key} (threads are processed in story order)"
                ),
                metadata={"missing_thread": missing.key},
                allow_retries=False,
            )
    return threads


def _position(thread: Thread) -> int:
    return thread.position


def _fail_on(call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Call into the engine; its errors become a `dg.Failure` with the engine's one-line message."""
    try:
        return call(*args, **kwargs)
    except TerrariumError as exc:
        raise dg.Failure(
            description=str(exc),
            metadata={"error": type(exc).__name__},
            allow_retries=not isinstance(exc, OrderError),
        ) from exc


def _progress_logger(context: dg.AssetExecutionContext) -> Callable[[str, dict[str, object]], None]:
    """Scene by scene progress in the run's log (model calls are counted, not logged)."""

    def log(event: str, data: dict[str, object]) -> None:
        if event != "scene":
            return
        context.log.debug(
            f"scene {data.get('scene_id')}: +{data.get('created', 0)} ~{data.get('updated', 0)} "
            f"entries; run tokens prompt {data.get('prompt', 0)}, cached {data.get('cached', 0)}, "
            f"completion {data.get('completion', 0)}"
        )

    return log


@contextmanager
def _replacing_folder(target: Path) -> Iterator[Path]:
    """Write into a staging folder, then swap it in: the target is never half written."""
    staging = target.with_name(f".{target.name}.partial")
    previous = target.with_name(f".{target.name}.previous")
    for leftover in (staging, previous):
        shutil.rmtree(leftover, ignore_errors=True)
    staging.parent.mkdir(parents=True, exist_ok=True)
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if target.exists():
        target.rename(previous)
    staging.rename(target)
    shutil.rmtree(previous, ignore_errors=True)
