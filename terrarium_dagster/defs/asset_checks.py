"""Asset checks that guard the glossary, run with every curation (the logic:
`exports.glossary_checks`).

`curated_glossary` declares them and the thread step evaluates them after its last thread (a
separate check step would be skipped: the step yields materializations, not outputs): the selected
ones, and all of them whenever the run curated, whichever selection launched it.
They look at the whole live glossary as it stands after the curation, so they are not
partitioned: a run over one thread or a range of threads evaluates them once. A reference that
resolves to no entry may be a name the story has not defined yet: that check warns; the others
fail with severity ERROR. None of them blocks the export (which lists unresolved references).
"""

from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

import dagster as dg

from terrarium_dagster.corpus.living import cited_lookups
from terrarium_dagster.corpus.story import post_place
from terrarium_dagster.defs.failures import fail_on
from terrarium_dagster.defs.resources import CorpusResource, StoreResource
from terrarium_dagster.defs.story_location import story_key
from terrarium_dagster.exports.glossary_checks import run_checks


@dataclass(frozen=True)
class GlossaryCheck:
    name: str  # the Dagster check name
    result: str  # the key of `exports.glossary_checks.run_checks`
    severity: dg.AssetCheckSeverity
    description: str


GLOSSARY_CHECKS = (
    GlossaryCheck(
        "entries_have_sources",
        "sources",
        dg.AssetCheckSeverity.ERROR,
        "Every live entry has at least one source post.",
    ),
    GlossaryCheck(
        "names_are_unique",
        "unique_names",
        dg.AssetCheckSeverity.ERROR,
        "No two live entries share a normalized term or alias.",
    ),
    GlossaryCheck(
        "references_resolve",
        "references",
        dg.AssetCheckSeverity.WARN,
        "Every [[reference]] in a definition resolves to an entry (unresolved ones are listed).",
    ),
    GlossaryCheck(
        "provenance_points_at_posts",
        "provenance_posts",
        dg.AssetCheckSeverity.ERROR,
        "Every provenance row names a post of the corpus, in the thread it says.",
    ),
    GlossaryCheck(
        "sources_unchanged",
        "sources_unchanged",
        dg.AssetCheckSeverity.WARN,
        "No post cited as a source was edited or deleted so that a stored quote from it is no "
        "longer its words (a living corpus; `terrarium status` lists them).",
    ),
)


CURATED_GLOSSARY = story_key("curated_glossary")


def glossary_check_specs() -> list[dg.AssetCheckSpec]:
    """The checks `curated_glossary` declares (and evaluates after its last thread)."""
    return [
        dg.AssetCheckSpec(item.name, asset=CURATED_GLOSSARY, description=item.description)
        for item in GLOSSARY_CHECKS
    ]


def evaluate_glossary_checks(
    corpus: CorpusResource,
    store: StoreResource,
    *,
    selected: Collection[dg.AssetCheckKey] | None = None,
    all_checks: bool = False,
) -> Iterator[dg.AssetCheckResult | dg.AssetCheckEvaluation]:
    """Run the checks (all, or the `selected` ones) on the live glossary, one result each.

    With `all_checks` (the run curated a thread), the checks the run did not select are
    evaluated too and reported as `AssetCheckEvaluation`s, so that every path that completes a
    thread — a backfill of any selection, the schedule, automation's follow-ups — leaves every
    check evaluated against the latest curation, whatever selection launched it.
    """
    chosen = [
        item
        for item in GLOSSARY_CHECKS
        if all_checks
        or selected is None
        or dg.AssetCheckKey(CURATED_GLOSSARY, item.name) in selected
    ]
    if not chosen:
        return
    with fail_on(corpus.open) as reader, fail_on(store.read) as glossary:
        lookups = cited_lookups(reader, glossary.sources.cited_posts())
        changes = glossary.sources.check(*lookups)
        place = post_place(reader) if changes else None
        results = run_checks(glossary.glossary.entry_views(), reader, changes, place)
    for item in chosen:
        result = results[item.result]
        fields: dict[str, Any] = {
            "asset_key": CURATED_GLOSSARY,
            "check_name": item.name,
            "passed": result.passed,
            "severity": item.severity,
            "description": result.description,
            "metadata": {"details": dg.MetadataValue.json(result.details)},
        }
        key = dg.AssetCheckKey(CURATED_GLOSSARY, item.name)
        if selected is None or key in selected:
            yield dg.AssetCheckResult(**fields)
        else:
            yield dg.AssetCheckEvaluation(**fields)
