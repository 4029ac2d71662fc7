"""How definitions fare over a run: do they grow, are entries tagged, are the links sound?

`definition_report(store, corpus)` compares the glossary as of the end of the first finished
thread (or `after_thread`) with the glossary now: of the live entries that existed then, how many
have a different definition now (later scenes revealed more). It also counts the live entries
with a tag (by tag), and checks every definition as the exports show it (`linked_views`) for
nested, broken or ordinary-word links. `benchmarks/bench_definitions.py` prints it.
"""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel, Field

from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.errors import InputError
from terrarium_dagster.exports.references import NameIndex, is_page_entry, linked_views
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.store.models import EntryView
from terrarium_dagster.store.wiki_links import link_problems

EXAMPLES = 5


class DefinitionReport(BaseModel):
    after_thread: str
    entries_then: int
    changed_later: int
    changed_share: float
    live_entries: int
    tagged: int
    tags: dict[str, int] = Field(default_factory=dict)
    link_problems: list[str] = Field(default_factory=list)
    examples: list[str] = Field(default_factory=list)


def _live(entries: list[EntryView]) -> dict[int, EntryView]:
    return {entry.id: entry for entry in entries if is_page_entry(entry)}


def export_link_problems(entries: list[EntryView]) -> list[str]:
    """Every nested, broken or ordinary-word link in the definitions as the exports show them."""
    shown = linked_views([entry for entry in entries if not entry.deleted])
    index = NameIndex(shown)
    problems: list[str] = []
    for entry in shown:
        if not is_page_entry(entry):
            continue
        for problem in link_problems(entry.definition, index.resolve, own=entry.id):
            problems.append(f"E{entry.id} {entry.term}: {problem}")
    return problems


def definition_report(
    store: GlossaryStore, corpus: Corpus, *, after_thread: int | None = None
) -> DefinitionReport:
    threads = corpus.threads()
    if after_thread is None:
        finished = [
            thread
            for thread in threads
            if (state := store.progress.thread_state(thread.id)) is not None
            and state.end_revision_id is not None
        ]
        if not finished:
            raise InputError("no thread has finished annotation: nothing to compare")
        chosen = finished[0]
    else:
        chosen = corpus.thread(after_thread)
    then = _live(store.history.glossary_as_of_thread(chosen.id))
    entries = store.glossary.entry_views()
    now = _live(entries)
    changed = [
        (then[entry_id], now[entry_id])
        for entry_id in sorted(then)
        if entry_id in now and now[entry_id].definition != then[entry_id].definition
    ]
    tags = Counter(tag for entry in now.values() for tag in entry.tags)
    return DefinitionReport(
        after_thread=chosen.key,
        entries_then=len(then),
        changed_later=len(changed),
        changed_share=round(len(changed) / len(then), 4) if then else 0.0,
        live_entries=len(now),
        tagged=sum(1 for entry in now.values() if entry.tags),
        tags=dict(sorted(tags.items())),
        link_problems=export_link_problems(entries),
        examples=[f"{old.definition}  →  {new.definition}" for old, new in changed[:EXAMPLES]],
    )


def render_definition_report(report: DefinitionReport) -> str:
    tags = ", ".join(f"{tag} {count}" for tag, count in report.tags.items()) or "none"
    lines = [
        f"grown       {report.changed_later}/{report.entries_then} entries of thread "
        f"{report.after_thread} have a different definition now = {report.changed_share:.0%}",
        f"tagged      {report.tagged}/{report.live_entries} live entries ({tags})",
        f"links       {len(report.link_problems)} nested, broken or ordinary-word links in the "
        "exports",
    ]
    lines += [f"  {problem}" for problem in report.link_problems[:EXAMPLES]]
    lines += [f"e.g. {example}" for example in report.examples]
    return "\n".join(lines)
