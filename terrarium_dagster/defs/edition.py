"""`glossary_edition`: the reader's edition as of each thread, after its curation.

Its spec and checks belong to the one thread step (`assets.py::thread_glossary`), so that a
run selecting curation and the edition together ("Materialize all", a backfill) does both, in
order, and the export after them carries the edition. Per run: the engine writes the editions of
every thread up to the run's last that lacks one (each entry the thread changed, rewritten by
the model, many requests in flight); each thread of the run then reports what its edition did.
Two checks read the edition as of the run's threads: every `>>post` citation is a post at or
before the thread, and no text names what the reader meets only later. Not automated: an
edition costs a request per changed entry, so it is materialized when asked for.
"""

from collections.abc import Callable, Collection, Iterator, Sequence

import dagster as dg

from terrarium_dagster.config import Settings
from terrarium_dagster.corpus.units import Thread
from terrarium_dagster.defs.failures import fail_on
from terrarium_dagster.defs.story_location import story_key
from terrarium_dagster.edition.edition_checks import citation_problems, later_problems
from terrarium_dagster.edition.writer import EditionReport, edition_line
from terrarium_dagster.engine import Engine, open_corpus, open_store

glossary_edition = story_key("glossary_edition")
CITATIONS_CHECK = "edition_citations_resolve"
NOTHING_LATER_CHECK = "edition_nothing_later"
MAX_LISTED = 20
LEAD_CHARS = 160


EDITION_DESCRIPTION = (
    "The reader's edition as of the thread: every entry the thread changed, rewritten by the "
    "model from its evidence up to the thread (its sources and nearby posts, revisions, linked "
    "entries) and nothing later; the others keep their text. The exports and the site show it. "
    "Materialized when asked for (not automated)."
)


def edition_check_specs() -> list[dg.AssetCheckSpec]:
    return [
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
    ]


def write_editions(
    context: dg.AssetExecutionContext, settings: Settings, threads: Sequence[Thread]
) -> Iterator[dg.AssetMaterialization]:
    """The editions up to the run's last thread; one materialization per thread of the run.
    Each thread's line is logged as its edition is committed, so a long edition shows its pace
    in the run's log (the materializations follow once every thread is written)."""
    engine = fail_on(
        Engine.open, settings, run_id=context.run.run_id, progress=_edition_logger(context)
    )
    with engine:
        reports = {r.thread_id: r for r in fail_on(engine.write_edition, threads[-1].id)}
        peak = engine.run.session.peak_in_flight if engine.run.session is not None else 0
        previews = {thread.id: _preview(engine, thread) for thread in threads}
    for thread in threads:
        report = reports[thread.id]
        yield dg.AssetMaterialization(
            asset_key=glossary_edition,
            partition=thread.key,
            description=f"{thread.key}: {thread.title}",
            metadata={**_metadata(report, peak), "rewritten_entries": previews[thread.id]},
        )


def _edition_logger(context: dg.AssetExecutionContext) -> Callable[[str, dict[str, object]], None]:
    """One line in the run's log per thread whose edition was committed or found written."""

    def log(event: str, data: dict[str, object]) -> None:
        if event == "edition":
            context.log.info(edition_line(str(data["thread_key"]), data))

    return log


def _preview(engine: Engine, thread: Thread) -> dg.TableMetadataValue:
    """The thread's rewritten entries (the first `MAX_LISTED`): term, outcome, the lead."""
    texts = engine.store.editions.of_thread(thread.id)[:MAX_LISTED]
    terms = {e.id: e.term for e in engine.store.glossary.get_entries([t.entry_id for t in texts])}
    rows = [
        dg.TableRecord(
            {
                "entry": f"E{text.entry_id}",
                "term": terms.get(text.entry_id, ""),
                "outcome": text.outcome,
                "lead": " ".join(text.text.split("\n", 1)[0].split())[:LEAD_CHARS],
            }
        )
        for text in texts
    ]
    columns = [dg.TableColumn(name, "string") for name in ("entry", "term", "outcome", "lead")]
    return dg.MetadataValue.table(rows, schema=dg.TableSchema(columns=columns))


def evaluate_edition_checks(
    settings: Settings, threads: Sequence[Thread], selected: Collection[dg.AssetCheckKey]
) -> Iterator[dg.AssetCheckResult]:
    """The selected edition checks over the edition as of each of the run's threads."""
    chosen = [
        name
        for name in (CITATIONS_CHECK, NOTHING_LATER_CHECK)
        if dg.AssetCheckKey(glossary_edition, name) in selected
    ]
    if not chosen:
        return
    citations: list[str] = []
    later: list[str] = []
    if threads:  # (a run of the checks alone before any thread is finished has none to check)
        with (
            fail_on(open_store, settings, read_only=True) as db,
            fail_on(open_corpus, settings, db) as reader,
        ):
            for thread in threads:
                citations += citation_problems(db, reader, thread)
                later += later_problems(db, reader, thread)
    found = {
        CITATIONS_CHECK: (citations, "every citation resolves at or before its thread"),
        NOTHING_LATER_CHECK: (later, "no edition names a later thread's term"),
    }
    for name in chosen:
        problems, fine = found[name]
        yield dg.AssetCheckResult(
            asset_key=glossary_edition,
            check_name=name,
            passed=not problems,
            severity=dg.AssetCheckSeverity.ERROR,
            description=fine if not problems else f"{len(problems)} problems",
            metadata={"problems": dg.MetadataValue.json(problems[:MAX_LISTED])},
        )


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
