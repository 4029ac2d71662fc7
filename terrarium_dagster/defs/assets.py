"""The thread assets, partitioned by thread, computed by one subsettable step.

`scene_batches`, `thread_annotations`, `curated_glossary`, `glossary_edition` (`edition.py`) and
`glossary_export` are the specs of one `multi_asset`: whatever a run selects (one asset,
several, "Materialize all", a backfill of a range, a re-execution), one step works through the
run's threads in story order and yields one `AssetMaterialization` per finished thread and
selected asset, so a failure half-way keeps the threads that finished and no selected asset is
ever skipped for another's missing output.
Everything here maps partitions to engine calls and reports to metadata; nothing keeps state
between runs.
"""

from collections.abc import Callable, Iterator, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from terrarium_dagster.config import Settings
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.corpus.story import is_book, scene_place
from terrarium_dagster.corpus.summary import scene_batch_summary
from terrarium_dagster.corpus.units import Thread
from terrarium_dagster.defs.asset_checks import evaluate_glossary_checks, glossary_check_specs
from terrarium_dagster.defs.edition import (
    EDITION_DESCRIPTION,
    edition_check_specs,
    evaluate_edition_checks,
    glossary_edition,
    write_editions,
)
from terrarium_dagster.defs.failures import fail_on
from terrarium_dagster.defs.metadata import (
    annotation_metadata,
    curation_metadata,
    export_metadata,
)
from terrarium_dagster.defs.partitions import foreign_keys, threads_partitions
from terrarium_dagster.defs.predecessors import wait_or_refuse
from terrarium_dagster.defs.resources import (
    AgentResource,
    CorpusResource,
    StoreResource,
    engine_settings,
)
from terrarium_dagster.defs.story_location import WRITER_POOL, story_key
from terrarium_dagster.engine import Engine, open_corpus, open_store
from terrarium_dagster.errors import PredecessorNotAnnotated
from terrarium_dagster.exports import Exporter
from terrarium_dagster.exports.files import claim_exports, staged_directory

PREVIEW_SCENES = 20


# LLM work and store writes run in the story's pool (`defs/story_location.py`); dagster.yaml gives
# every pool one slot by default.
LLM_POOL = WRITER_POOL


class ThreadConfig(dg.Config):
    """Run configuration of the thread step (shown in the Launchpad)."""

    rewind: bool = Field(
        default=False,
        description=(
            "Re-annotate the run's first thread even though later threads already built on it: "
            "the glossary and the agent's context roll back to the end of the previous thread "
            "(recorded as revisions, nothing erased) and the later threads are marked for redo."
        ),
    )


# Declarative Automation of the follow-ups: a thread's curation when its annotation materialized in
# a run that did not curate it, its export when its curation did. `eager` requests a partition once
# per upstream update, never while its upstream or itself is in progress, and ignores an upstream
# update made by a run that also targeted this asset (a "Materialize all" is not redone).
FOLLOWS_UPSTREAM = dg.AutomationCondition.eager()

# The four thread assets' keys. Their specs live only inside `thread_glossary` (a module-level
# spec would be loaded as an asset of its own).
scene_batches = story_key("scene_batches")
thread_annotations = story_key("thread_annotations")
curated_glossary = story_key("curated_glossary")
glossary_export = story_key("glossary_export")
THREAD_ASSETS = (
    scene_batches,
    thread_annotations,
    curated_glossary,
    glossary_edition,
    glossary_export,
)


def _step_asset(
    key: dg.AssetKey,
    group: str,
    description: str,
    *,
    after: dg.AssetKey | None = None,
    kinds: frozenset[str] = frozenset({"sqlite"}),
    follows_upstream: bool = False,
) -> dg.AssetSpec:
    """An asset of the one thread step: skippable, since a run may select any of them."""
    return dg.AssetSpec(
        key,
        deps=[after] if after is not None else [],
        skippable=True,
        group_name=group,
        kinds=set(kinds),
        description=description,
        automation_condition=FOLLOWS_UPSTREAM if follows_upstream else None,
    )


def _thread_specs() -> list[dg.AssetSpec]:
    return [
        _step_asset(
            scene_batches,
            "annotation",
            "The thread's cleaned posts grouped into scenes (runs of QM posts).",
        ),
        _step_asset(
            thread_annotations,
            "annotation",
            "The agent reads the thread's scenes and writes the glossary, one store transaction "
            "per scene. Threads run in story order; an earlier thread that is not annotated "
            "fails the run before anything is written.",
        ),
        _step_asset(
            curated_glossary,
            "glossary",
            "The curator reviews the thread's tentative entries: confirm, reject, merge or "
            "revise, each decision a revision with its reasoning. Its model calls, logs and "
            "failures are this asset's. Follows annotation by Declarative Automation (eager).",
            after=thread_annotations,
            follows_upstream=True,
        ),
        _step_asset(
            glossary_export,
            "glossary",
            "The glossary as it stood at the end of the thread (no later spoilers), as JSON, "
            "YAML, a SillyTavern lorebook, a wiki and the reader's site, in "
            "`<exports>/<thread key>/`; needs no model. Follows curation by "
            "Declarative Automation (eager).",
            after=curated_glossary,
            kinds=frozenset({"json", "yaml", "markdown", "html"}),
            follows_upstream=True,
        ),
        _step_asset(glossary_edition, "glossary", EDITION_DESCRIPTION, after=curated_glossary),
    ]


@dg.multi_asset(
    name="thread_glossary",
    specs=_thread_specs(),
    check_specs=[*glossary_check_specs(), *edition_check_specs()],
    partitions_def=threads_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    can_subset=True,
    pool=LLM_POOL,
    description=(
        "One step for the five thread assets, whichever of them a run selects: thread by thread "
        "in story order it batches the scenes, annotates and curates; then it writes the "
        "threads' editions, then their exports, yielding one "
        "materialization per finished thread and asset. One step (not four) so that no asset "
        "of a run is skipped for want of another's output, and so that thread N is curated "
        "before thread N+1 is annotated, exactly as `terrarium run` does."
    ),
)
def thread_glossary(
    context: dg.AssetExecutionContext,
    config: ThreadConfig,
    corpus: CorpusResource,
    store: StoreResource,
    agent: AgentResource,
) -> Iterator[dg.AssetMaterialization | dg.AssetCheckResult | dg.AssetCheckEvaluation]:
    selected = context.selected_asset_keys
    settings = fail_on(engine_settings, corpus, store, agent)
    if glossary_export in selected and settings.db != ":memory:":
        # an exports folder the run cannot write is refused before anything is annotated
        fail_on(claim_exports, store.export_root(), settings.db, record=False)
    with fail_on(corpus.open) as reader:
        threads = (
            _threads_in_story_order(reader, context.partition_keys)
            if context.has_partition_key or context.has_partition_key_range
            else _finished_threads(reader, settings)  # the checks alone, as the UI runs them
        )
        batches = (
            [_scene_batch_materialization(reader, thread) for thread in threads]
            if scene_batches in selected
            else []
        )
    if selected & {thread_annotations, curated_glossary}:
        # the scene batches are reported once the order allows the run (nothing before a wait)
        yield from _annotate_and_curate(context, config, settings, threads, first=batches)
    else:
        yield from batches
    if glossary_edition in selected:  # after curation, before the export that carries it
        yield from write_editions(context, settings, threads)
    if glossary_export in selected:
        yield from _export(context, settings, store, threads)
    yield from evaluate_edition_checks(settings, threads, context.selected_asset_check_keys)
    curated = curated_glossary in selected
    if context.selected_asset_check_keys or curated:
        yield from evaluate_glossary_checks(
            corpus, store, selected=context.selected_asset_check_keys, all_checks=curated
        )


def _scene_batch_materialization(reader: Corpus, thread: Thread) -> dg.AssetMaterialization:
    """The thread's scenes, counted and previewed: a quest's in posts, a book's (a corpus
    `terrarium import` made) in paragraphs, each scene where a reader finds it."""
    summary = scene_batch_summary(reader, thread)
    book = is_book(reader)
    unit = "paragraphs" if book else "posts"
    first = "first_paragraph" if book else "first_post"
    rows = [
        dg.TableRecord(
            {
                "scene": scene_place(scene.scene_id, thread.title) if book else scene.scene_id,
                unit: scene.posts,
                "chars": scene.chars,
                first: scene.first_post_url or scene.first_post_ref,
                "opening": scene.opening,
            }
        )
        for scene in summary.scenes[:PREVIEW_SCENES]
    ]
    return dg.AssetMaterialization(
        asset_key=scene_batches,
        partition=thread.key,
        description=f"{thread.key}: {thread.title}",
        metadata={
            ("chapter" if book else "thread"): f"{thread.key} — {thread.title}",
            "thread_id": summary.thread_id,
            "title": summary.title,
            unit: summary.posts,
            f"story_{unit}": summary.story_posts,
            "scenes": len(summary.scenes),
            "story_characters": summary.story_chars,
            "approx_tokens": summary.approx_tokens,
            "scene_preview": dg.MetadataValue.table(
                rows,
                schema=dg.TableSchema(
                    columns=[
                        dg.TableColumn("scene", "string"),
                        dg.TableColumn(unit, "int"),
                        dg.TableColumn("chars", "int"),
                        dg.TableColumn(first, "string"),
                        dg.TableColumn("opening", "string"),
                    ]
                ),
            ),
        },
    )


def _annotate_and_curate(
    context: dg.AssetExecutionContext,
    config: ThreadConfig,
    settings: Settings,
    threads: Sequence[Thread],
    *,
    first: Sequence[dg.AssetMaterialization] = (),
) -> Iterator[dg.AssetMaterialization]:
    """Per thread: annotate (if selected), then curate (if selected), then the next thread;
    `first` is reported once the order allows the run. A first thread whose predecessor's
    annotation is on its way waits for it (`predecessors.py`), holding nothing."""
    try:
        yield from _thread_steps(context, config, settings, threads, first)
    except PredecessorNotAnnotated as refusal:  # raised before anything was written or reported
        raise wait_or_refuse(context, thread_annotations, refusal) from None


def _thread_steps(
    context: dg.AssetExecutionContext,
    config: ThreadConfig,
    settings: Settings,
    threads: Sequence[Thread],
    first: Sequence[dg.AssetMaterialization],
) -> Iterator[dg.AssetMaterialization]:
    annotate = thread_annotations in context.selected_asset_keys
    curate = curated_glossary in context.selected_asset_keys
    backend = backend_metadata(settings)
    engine = fail_on(
        Engine.open, settings, run_id=context.run.run_id, progress=_progress_logger(context)
    )
    with engine:  # records the run as finished, failed or interrupted
        # A thread already annotated (or curated) is a success that changes nothing: a range
        # resumes at its first unfinished thread, a re-materialized partition stays green. Only
        # `rewind: true` redoes a finished thread (and the later ones). The order is checked
        # here, first (`PredecessorNotAnnotated`); every later engine error is a `Failure`.
        steps = engine.sequence.run_threads(
            threads, annotate=annotate, curate=curate, rewind=config.rewind
        )
        yield from first
        while (step := fail_on(next, steps, None)) is not None:
            thread = step.thread
            if step.annotation is not None:
                report = step.annotation
                if step.caught_up:
                    context.log.warning(
                        f"{', '.join(t.key for t in step.caught_up)} annotated but not curated: "
                        f"curating before {thread.key} (select curated_glossary with "
                        "thread_annotations to see curation under its own asset)"
                    )
                entries = (
                    f"+{len(report.created)} ~{len(report.updated)} -{len(report.deleted)} "
                    f"entries in {report.calls} call{'' if report.calls == 1 else 's'}"
                )
                context.log.info(
                    # a thread done before: what its recorded annotation did, never as this run's
                    f"{thread.key}: {UNCHANGED_ANNOTATION}; its annotation wrote {entries}"
                    if report.already_done
                    else f"{thread.key}: {report.scenes_annotated} "
                    f"scene{'' if report.scenes_annotated == 1 else 's'}, {entries}"
                )
                if later := report.rewound_threads[1:]:
                    context.log.warning(rewound_warning(thread, later))
                if scene_batches not in context.selected_asset_keys:
                    # the thread's scenes were batched to annotate it: record them whatever
                    # the selection (a backfill of annotation alone, the schedule, a re-run)
                    yield _scene_batch_materialization(engine.corpus, thread)
                yield dg.AssetMaterialization(
                    asset_key=thread_annotations,
                    partition=thread.key,
                    description=_described(thread, UNCHANGED_ANNOTATION, report.already_done),
                    metadata={**annotation_metadata(report, site_url=settings.site_url), **backend},
                )
            if step.curation is not None:
                curation, already = step.curation, step.already_curated
                for problem in curation.problems:
                    context.log.warning(f"{thread.key}: curation problem: {problem}")
                if already:
                    context.log.info(f"{thread.key}: {UNCHANGED_CURATION}")
                yield dg.AssetMaterialization(
                    asset_key=curated_glossary,
                    partition=thread.key,
                    description=_described(thread, UNCHANGED_CURATION, already),
                    metadata={
                        **curation_metadata(
                            curation,
                            engine.sequence.curation_decisions(curation),
                            site_url=settings.site_url,
                            thread_key=thread.key,
                        ),
                        "already_done": already,
                        **backend,
                    },
                )


def _export(
    context: dg.AssetExecutionContext,
    settings: Settings,
    store: StoreResource,
    threads: Sequence[Thread],
) -> Iterator[dg.AssetMaterialization]:
    """The glossary as of each thread; reads the store and the corpus, needs no model."""
    root = store.export_root()
    if settings.db != ":memory:":
        fail_on(claim_exports, root, settings.db)
    with (
        fail_on(open_store, settings, must_exist=True) as db,
        fail_on(open_corpus, settings, db) as reader,
    ):
        # One exporter for the run: each thread's export renders only what changed since the
        # previous thread's; a file the thread's folder already holds stays as it is (a run
        # that changed nothing touches nothing), others are linked from the previous thread's
        # folder when unchanged there.
        exporter = Exporter(db, reader)
        story = reader.threads()
        for thread in threads:
            out_dir = root / thread.key
            base = root / story[thread.position - 1].key if thread.position > 0 else None
            with staged_directory(out_dir) as staging:
                report = fail_on(
                    exporter.export, staging, as_of_thread=thread.id, base=base, final_dir=out_dir
                )
            context.log.info(f"{thread.key}: exported {report.entries} entries to {out_dir}")
            yield dg.AssetMaterialization(
                asset_key=glossary_export,
                partition=thread.key,
                description=f"{thread.key}: {thread.title}",
                metadata=export_metadata(report, out_dir, site_url=settings.site_url),
            )


UNCHANGED_ANNOTATION = (
    "already annotated: nothing changed (to annotate it again, launch with run config "
    "ops: {thread_glossary: {config: {rewind: true}}})"
)
UNCHANGED_CURATION = "already curated: nothing changed (the recorded decisions are shown)"


def rewound_warning(thread: Thread, later: Sequence[str]) -> str:
    """What a rewind left to redo: the later threads' materializations (and exports) still
    show in the UI, but the glossary they describe was rolled back."""
    one = len(later) == 1
    span = later[0] if one else f"{later[0]}..{later[-1]}"
    threads, are, their = ("thread", "is", "its") if one else ("threads", "are", "their")
    return (
        f"{thread.key} was rewound: {len(later)} later {threads} ({span}) {are} marked for "
        f"redo; {their} materializations and exports describe the glossary before the rewind "
        f"until annotated again (backfill {span}, or "
        "start incremental_annotation_schedule)"
    )


def _described(thread: Thread, unchanged: str, already_done: bool) -> str:
    named = f"{thread.key}: {thread.title}" if thread.title else thread.key
    return named + (f" — {unchanged}" if already_done else "")


def backend_metadata(settings: Settings) -> dict[str, Any]:
    """Which model did the work: shown on every annotation and curation materialization."""
    if settings.offline:
        return {"backend": "offline (rule-based, no LLM)", "model": "offline"}
    return {"backend": settings.agent_url or "", "model": settings.model or "(server's first)"}


def _finished_threads(reader: Corpus, settings: Settings) -> list[Thread]:
    """The threads a run without partitions checks (the UI's "Execute" of the checks alone
    launches one): every thread the store has finished, in story order. Such a run materializes
    nothing: the thread assets are partitioned."""
    if settings.db != ":memory:" and not Path(settings.db).expanduser().is_file():
        return []  # no store yet: nothing finished
    with fail_on(open_store, settings, read_only=True) as db:
        done = {state.thread_id for state in db.progress.thread_states() if state.finished}
    return [thread for thread in reader.threads() if thread.id in done]


def _threads_in_story_order(reader: Corpus, keys: Sequence[str]) -> list[Thread]:
    """The run's threads; they must be threads of the corpus (fail fast naming partitions
    left from another corpus) and neighbours in story order (fail fast naming a gap)."""
    story = reader.threads()
    foreign = foreign_keys(keys, [thread.key for thread in story])
    if foreign:
        shown = ", ".join(foreign[:5]) + (" …" if len(foreign) > 5 else "")
        raise dg.Failure(
            description=(
                f"{len(foreign)} of the run's partitions name no thread of the corpus "
                f"{reader.path} ({shown}): left from another corpus or store, or added by hand; "
                "delete them (Assets → thread_annotations → Partitions) or leave them out"
            ),
            metadata={"foreign_partitions": ", ".join(foreign)},
            allow_retries=False,
        )
    threads = sorted((fail_on(reader.thread_by_key, key) for key in keys), key=_position)
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
