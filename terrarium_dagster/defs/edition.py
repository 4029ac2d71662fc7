"""`glossary_edition`: the reader's edition as of each thread, after its curation.

One materialization per thread of the run (partitioned by thread, a range as one run): the
engine writes the editions of every thread up to the run's last that lacks one (each entry the
thread changed, rewritten by the model, many requests in flight), then each thread reports what
its edition did. Two checks read the edition as of the run's threads: every `>>post` citation is
a post at or before the thread, and no text names what the reader meets only later. Not
automated: an edition costs a request per changed entry, so it is materialized when asked for
(a backfill, the UI, `terrarium edition`).
"""

from collections.abc import Iterator

import dagster as dg

from terrarium_dagster.corpus.models import Thread
from terrarium_dagster.defs.assets import LLM_POOL, curated_glossary
from terrarium_dagster.defs.failures import fail_on
from terrarium_dagster.defs.partitions import threads_partitions
from terrarium_dagster.defs.resources import (
    AgentResource,
    CorpusResource,
    StoreResource,
    engine_settings,
)
from terrarium_dagster.edition.checks import citation_problems, later_problems
from terrarium_dagster.edition.writer import EditionReport
from terrarium_dagster.engine import Engine

glossary_edition = dg.AssetKey("glossary_edition")
CITATIONS_CHECK = "edition_citations_resolve"
NOTHING_LATER_CHECK = "edition_nothing_later"
MAX_LISTED = 20


@dg.multi_asset(
    name="glossary_edition_step",
    specs=[
        dg.AssetSpec(
            glossary_edition,
            deps=[curated_glossary],
            skippable=True,
            group_name="glossary",
            kinds={"sqlite"},
            description=(
                "The reader's edition as of the thread: every entry the thread changed, "
                "rewritten by the model from its evidence up to the thread (its sources and "
                "nearby posts, revisions, linked entries) and nothing later; the others keep "
                "their text. The exports and the site show it."
            ),
        )
    ],
    check_specs=[
        dg.AssetCheckSpec(
            CITATIONS_CHECK,
            asset=glossary_edition,
            description="Every >>post in the edition is a post at or before the thread.",
        ),
        dg.AssetCheckSpec(
            NOTHING_LATER_CHECK,
            asset=glossary_edition,
            description="No edition text names a term the reader meets only in a later thread.",
        ),
    ],
    partitions_def=threads_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    pool=LLM_POOL,
)
def glossary_edition_step(
    context: dg.AssetExecutionContext,
    corpus: CorpusResource,
    store: StoreResource,
    agent: AgentResource,
) -> Iterator[dg.AssetMaterialization | dg.AssetCheckResult]:
    settings = fail_on(engine_settings, corpus, store, agent)
    with corpus.open() as reader:
        keys = context.partition_keys
        threads = sorted((fail_on(reader.thread_by_key, k) for k in keys), key=_position)
    engine = fail_on(Engine.open, settings, run_id=context.run.run_id)
    citations: list[str] = []
    later: list[str] = []
    with engine:
        reports = {r.thread_id: r for r in fail_on(engine.write_edition, threads[-1].id)}
        peak = engine.session.peak_in_flight if engine.session is not None else 0
        for thread in threads:
            report = reports[thread.id]
            context.log.info(
                f"{thread.key}: {report.rewritten} entries rewritten, {report.kept} kept, "
                f"{report.requests} requests"
                + (" (already written: nothing changed)" if report.already_done else "")
            )
            yield dg.AssetMaterialization(
                asset_key=glossary_edition,
                partition=thread.key,
                description=f"{thread.key}: {thread.title}",
                metadata=_metadata(report, peak),
            )
            citations += citation_problems(engine.store, engine.corpus, thread)
            later += later_problems(engine.store, engine.corpus, thread)
    yield _check(CITATIONS_CHECK, citations, "every citation resolves at or before its thread")
    yield _check(NOTHING_LATER_CHECK, later, "no edition names a later thread's term")


def _position(thread: Thread) -> int:
    return thread.position


def _metadata(report: EditionReport, peak: int) -> dict[str, object]:
    rewritten = report.rewritten + report.kept
    return {
        "entries_rewritten": report.rewritten,
        "entries_kept": report.kept,
        "requests": report.requests,
        "tokens": report.tokens,
        "tokens_per_entry": round(report.tokens / rewritten, 1) if rewritten else 0.0,
        "requests_in_flight_peak": peak,
        "refused_answers": len(report.refusals),
        "already_done": report.already_done,
    }


def _check(name: str, problems: list[str], fine: str) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        asset_key=glossary_edition,
        check_name=name,
        passed=not problems,
        severity=dg.AssetCheckSeverity.ERROR,
        description=fine if not problems else f"{len(problems)} problems",
        metadata={"problems": dg.MetadataValue.json(problems[:MAX_LISTED])},
    )
