"""The reports of what a thread's annotation and curation did, rebuilt from the store (its
revisions, decisions and call records): the engine hands them to the CLI and Dagster."""

from __future__ import annotations

from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.corpus.story import book_place, is_book
from terrarium_dagster.corpus.units import Thread
from terrarium_dagster.curation.decisions import CurationReport
from terrarium_dagster.errors import EntryNotFoundError, TerrariumError
from terrarium_dagster.reports import CurationDecisionRow, SourceLink, ThreadReport, TouchedEntry
from terrarium_dagster.store.annotator import GlossaryStore

SOURCES_PER_ENTRY = 3  # source posts a touched entry lists in a thread's report
# The requests of a thread's annotation: its scene rounds and its compactions' summaries and
# flushes. Its curation ("curate") and its edition ("edition") are reported by their own.
ANNOTATION_PURPOSES = ("annotate", "summary", "flush")


def thread_report(
    store: GlossaryStore, corpus: Corpus, thread: Thread, *, already_done: bool = False
) -> ThreadReport:
    """What the agent did to the glossary in `thread`, from its revisions and call records: of
    its latest annotation, when a rewind undid an earlier one (the rewind's marker says where
    that one's revisions and calls end)."""
    state = store.progress.thread_state(thread.id)
    undone = (state.extra.get("rolled_back") if state else None) or {}
    since_revision, since_call = undone.get("revision"), undone.get("call")
    created: list[int] = []
    updated: list[int] = []
    deleted: list[int] = []
    for revision in store.history.revisions(thread_id=thread.id, since_id=since_revision):
        if revision.actor_kind != "agent" or revision.entry_id is None:
            continue
        bucket = {"create": created, "delete": deleted}.get(revision.action, updated)
        if revision.entry_id not in bucket:
            bucket.append(revision.entry_id)
    updated = [entry_id for entry_id in updated if entry_id not in created]
    book = is_book(corpus)
    touched = [
        touched_entry(store, corpus, entry_id, action, book=book)
        for action, ids in (("created", created), ("updated", updated), ("deleted", deleted))
        for entry_id in ids
    ]
    totals = store.runs.agent_call_totals(
        thread_id=thread.id, purposes=ANNOTATION_PURPOSES, after_call_id=since_call
    )
    compactions = store.memory.compactions(thread_id=thread.id)
    return ThreadReport(
        thread_id=thread.id,
        thread_key=thread.key,
        title=thread.title,
        scenes=state.scenes_total if state else len(corpus.scenes(thread.id)),
        already_done=already_done,
        created=created,
        updated=updated,
        deleted=deleted,
        touched=touched,
        **totals.token_figures(),
        compactions=len(compactions),
        snapshot_id=state.snapshot_id if state else None,
        suspect=state.suspect if state else None,
    )


def touched_entry(
    store: GlossaryStore, corpus: Corpus, entry_id: int, action: str, *, book: bool
) -> TouchedEntry:
    """An entry a thread changed, with links to its first source posts, each named as a reader
    names it (`book`: an imported book's, by chapter and paragraph)."""
    entry = store.glossary.get_entry(entry_id)
    sources = [
        SourceLink(
            ref=f"{item.thread_id}#{item.post_id}",
            url=corpus.post_url(f"{item.thread_id}#{item.post_id}", quote=item.quote),
            label=book_place(_chapter(corpus, item.thread_id), item.thread_id, item.post_id)
            if book
            else f">>{item.post_id}",
        )
        for item in store.provenance.for_entry(entry_id, limit=SOURCES_PER_ENTRY)
    ]
    return TouchedEntry(
        entry_id=entry.id, term=entry.term, status=entry.status, action=action, sources=sources
    )


def _chapter(corpus: Corpus, thread_id: int) -> str | None:
    """A chapter's title, None when the corpus has no such thread (a source of a store built
    from an older version of the book)."""
    try:
        return corpus.thread(thread_id).title
    except TerrariumError:
        return None


def curation_rows(store: GlossaryStore, report: CurationReport) -> list[CurationDecisionRow]:
    """The decisions of one curation, readable: term, decision, target, reasoning."""
    wanted = set(report.decision_ids)
    rows = []
    for decision in store.curation.curator_decisions(thread_id=report.thread_id):
        if decision["id"] not in wanted:
            continue
        rows.append(
            CurationDecisionRow(
                decision_id=decision["id"],
                term=_term(store, decision["entry_id"]),
                decision=decision["decision"],
                target=_term(store, decision["target_entry_id"]),
                reasoning=" ".join((decision["reasoning"] or "").split()),
                entry_id=decision["entry_id"],
                target_entry_id=decision["target_entry_id"],
            )
        )
    return rows


def _term(store: GlossaryStore, entry_id: int | None) -> str:
    if entry_id is None:
        return ""
    try:
        return f"{store.glossary.get_entry(entry_id).term} (E{entry_id})"
    except EntryNotFoundError:
        return f"E{entry_id}"


def recorded_curation(store: GlossaryStore, thread: Thread) -> CurationReport:
    """The report of a curation already done, rebuilt from its decision rows."""
    totals = store.runs.agent_call_totals(thread_id=thread.id, purpose="curate")
    report = CurationReport(thread_id=thread.id, **totals.token_figures())
    buckets = {
        "CONFIRM": report.confirmed,
        "REJECT": report.rejected,
        "REVISE": report.revised,
    }
    for row in store.curation.curator_decisions(thread_id=thread.id):
        entry_id, decision = row["entry_id"], str(row["decision"]).upper()
        report.reviewed.append(entry_id)
        report.decision_ids.append(row["id"])
        if decision == "MERGE":
            report.merged.append((entry_id, row["target_entry_id"]))
        elif decision in buckets:
            buckets[decision].append(entry_id)
        else:
            report.left_tentative.append(entry_id)
    return report
