"""`terrarium status`: what a store holds — threads, entries, tokens, compactions, snapshots."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from terrarium_dagster.corpus.identity import IDENTITY_META, CorpusIdentity, corpus_identity
from terrarium_dagster.corpus.living import cited_lookups
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.corpus.story import chapter_title, post_place
from terrarium_dagster.corpus.units import chapter_label
from terrarium_dagster.errors import InputError, TerrariumError
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.store.progress import through_post
from terrarium_dagster.store.sources import describe as describe_source_change

RECENT_DECISIONS = 10


def living_corpus(store: GlossaryStore, corpus: Corpus | None) -> dict[str, Any]:
    """What changed in the corpus since the store read it: per thread, the posts added after
    the last one annotated; the source posts edited or deleted since they were cited (checked
    against the corpus now when it can be read, else as the last run found them)."""
    new_posts: dict[int, int] = {}
    if corpus is not None:
        for state in store.progress.thread_states():
            through = through_post(state)
            if through is not None and state.status in ("annotated", "curated"):
                new_posts[state.thread_id] = corpus.story_posts_after(state.thread_id, through)
        changes = store.sources.check(*cited_lookups(corpus, store.sources.cited_posts()))
    else:
        changes = store.sources.marked()
    place = post_place(corpus) if corpus is not None and changes else None
    return {
        "checked_against_corpus": corpus is not None,
        "new_posts": new_posts,
        "sources_changed": [
            {
                "post": f"{c.thread_id}#{c.post_id}",
                "change": c.change,
                "quotes_hold": c.quotes_hold,
                "entries": [f"E{e}" for e in c.entry_ids],
                "line": describe_source_change(c, place),
            }
            for c in changes
        ],
        "sources": store.sources.count(),
    }


def _recorded_corpus(store: GlossaryStore) -> tuple[Corpus | None, str | None]:
    """The corpus the store was built from, when it can still be read (status never fails for
    want of it), and what is wrong when its path now holds another corpus."""
    recorded = store.get_meta("corpus_path")
    if not recorded:
        return None, None
    if not Path(recorded).is_file():
        return None, (
            f"{recorded} is not there any more: `terrarium run --corpus` given where it is now "
            "records the new place for every command"
        )
    try:
        corpus = Corpus(recorded)
    except TerrariumError:
        return None, None
    identity = store.get_meta(IDENTITY_META)
    if identity is not None:
        built_from = CorpusIdentity.model_validate_json(identity)
        there = corpus_identity(corpus)
        if not built_from.matches(there):
            corpus.close()
            return None, (
                f"{recorded} now holds another corpus, {there.describe()}, not this store's "
                f"{built_from.describe()}"
            )
    return corpus, None


def store_status(db: str) -> dict[str, Any]:
    """A JSON-able summary of the store at `db` (which must exist: status never creates one)."""
    if db != ":memory:" and not Path(db).expanduser().is_file():
        raise InputError(f"no annotator store at {db} (run `terrarium run` first)")
    with GlossaryStore(db, read_only=db != ":memory:") as store:
        corpus, corpus_note = _recorded_corpus(store)
        try:
            living = living_corpus(store, corpus)
            # the corpus's threads (None: it cannot be read), so those never started are counted
            story = corpus.threads() if corpus is not None else None
            in_corpus = len(story) if story is not None else None
            titles = {thread.id: thread.title for thread in story or ()}
        finally:
            if corpus is not None:
                corpus.close()
        living["corpus_note"] = corpus_note
        states = store.progress.thread_states()
        entries = store.glossary.entries(include_deleted=True)
        totals = store.runs.agent_call_totals()
        per_server = store.runs.calls_per_server()
        by_status = Counter("deleted" if entry.deleted else entry.status for entry in entries)
        threads = [
            {
                "thread_id": state.thread_id,
                "key": state.thread_key,
                "title": titles.get(state.thread_id),
                "status": state.status,
                "scenes_done": state.scenes_done,
                "scenes_total": state.scenes_total,
                "snapshot_id": state.snapshot_id,
                "new_posts": living["new_posts"].get(state.thread_id, 0),
                "suspect": state.suspect,
                "edition_entries": _edition_entries(store, state.thread_id),
            }
            for state in sorted(states, key=lambda item: item.position)
        ]
        terms = {entry.id: entry.term for entry in entries}
        decisions = [row for row in store.curation.curator_decisions() if row["revision_id"]]
        recent = [
            {
                "id": row["id"],
                "decision": row["decision"],
                "entry": f"{terms.get(row['entry_id'], '')} (E{row['entry_id']})",
                "target": f"{terms.get(row['target_entry_id'], '')} (E{row['target_entry_id']})"
                if row["target_entry_id"]
                else None,
                "undone": row["undone_revision_id"] is not None,
            }
            for row in decisions[-RECENT_DECISIONS:]
        ]
        lease = store.runs.writer_lease()
        holder = lease.run_id if lease is not None and store.runs.holder_alive(lease) else None
        runs = [
            {
                "run_id": run.id,
                # A run still marked running whose process no longer holds the lease has died
                # (status only reads; the next writer marks it so in the store).
                "status": "died" if run.status == "running" and run.id != holder else run.status,
                "started_at": run.started_at,
                "finished_at": run.finished_at,
            }
            for run in store.runs.runs()
        ]
        identity = store.get_meta(IDENTITY_META)
        return {
            "db": db,
            # the title of the book it was imported from (its threads are chapters), if any
            "book": CorpusIdentity.model_validate_json(identity).book_title if identity else None,
            "writer": None
            if lease is None or holder is None
            else {
                "run_id": lease.run_id,
                "pid": lease.pid,
                "host": lease.host,
                "since": lease.since,
                "heartbeat": lease.heartbeat,
            },
            "runs": runs,
            "runs_by_status": dict(sorted(Counter(run["status"] for run in runs).items())),
            "threads": threads,
            "threads_by_status": dict(sorted(Counter(s.status for s in states).items())),
            "threads_in_corpus": in_corpus,
            "entries": len(entries),
            "entries_by_status": dict(sorted(by_status.items())),
            "revisions": store.history.revision_count(),
            "calls": totals.calls,
            "prompt_tokens": totals.prompt_tokens,
            "cached_tokens": totals.cached_tokens,
            "completion_tokens": totals.completion_tokens,
            "cache_hit_rate": round(totals.cache_hit_rate, 4),
            "calls_failed": sum(row[2] for row in per_server),
            "calls_abandoned": sum(row[3] for row in per_server),
            "calls_per_server": [
                {
                    "server": server or "(not recorded)",
                    "calls": calls,
                    "failed": failed,
                    "abandoned": abandoned,
                }
                for server, calls, failed, abandoned in per_server
            ],
            "compactions": len(store.memory.compactions()),
            "snapshots": len(store.memory.snapshots()),
            "curator_decisions": len(decisions),
            "curator_decisions_by_kind": dict(
                sorted(Counter(str(row["decision"]) for row in decisions).items())
            ),
            "curator_decisions_undone": sum(1 for r in decisions if r["undone_revision_id"]),
            "recent_curator_decisions": recent,
            "living_corpus": {k: v for k, v in living.items() if k != "new_posts"},
        }


def _new_posts_note(thread: dict[str, Any], threads: list[dict[str, Any]]) -> str:
    count = thread.get("new_posts", 0)
    if not count:
        return ""
    last = max(
        (t["key"] for t in threads if t["status"] in ("annotated", "curated", "annotating")),
        default=thread["key"],
    )
    then = (
        "the next run annotates them"
        if thread["key"] == last
        else "later threads are annotated: `terrarium run --rewind --threads "
        f"{thread['key']}..` includes them"
    )
    return f"  (+{count} new story post{'s' if count > 1 else ''}: {then})"


def _edition_entries(store: GlossaryStore, thread_id: int) -> int | None:
    """Entries the thread's reader's edition rewrote (None: no current edition)."""
    edition = store.editions.thread(thread_id)
    return edition.rewritten if edition is not None else None


def render_status(report: dict[str, Any]) -> str:
    book = report.get("book")
    lines = [f"store {report['db']}" + (f" (the book “{book}”)" if book else "")]
    counts = [f"{k} {v}" for k, v in report["threads_by_status"].items()]
    unit, cited = ("chapters", "paragraphs") if book else ("threads", "posts")
    in_corpus = report.get("threads_in_corpus")
    started = len(report["threads"])
    if in_corpus is not None and in_corpus > started:
        counts.append(f"not started {in_corpus - started}")
    total = in_corpus if in_corpus is not None and in_corpus > started else started
    lines.append(f"{unit}: {total} ({', '.join(counts) or 'none'})")
    for thread in report["threads"]:
        chapter = f"{chapter_label(thread['key']):<6} " if book else ""
        lines.append(
            f"  {chapter}{thread['key']:<22} {thread['status']:<10} "
            f"scenes {thread['scenes_done']}/{thread['scenes_total']}"
            + _new_posts_note(thread, report["threads"])
            + (f"  SUSPECT: {thread['suspect']}" if thread.get("suspect") else "")
            + (
                f"  edition: {thread['edition_entries']} rewritten"
                if thread.get("edition_entries") is not None
                else ""
            )
            + (f"  “{chapter_title(thread['title'])}”" if book and thread.get("title") else "")
        )
    entries = ", ".join(f"{k} {v}" for k, v in report["entries_by_status"].items()) or "none"
    lines.append(f"entries: {report['entries']} ({entries}); revisions: {report['revisions']}")
    lines.append(
        f"model calls: {report['calls']}; tokens: prompt {report['prompt_tokens']} "
        f"(cached {report['cached_tokens']}, {report['cache_hit_rate']:.0%}), "
        f"completion {report['completion_tokens']}"
    )
    # imported here: the offline backend's module (httpx, the curator, the name forms) is most
    # of what `terrarium status` would import otherwise, for one comparison of hosts
    from terrarium_dagster.backends.offline import is_offline

    for row in report["calls_per_server"]:
        failed = f", {row['failed']} failed" if row["failed"] else ""
        # the run stopped with them in flight: no fault of the server's, their answers unread
        abandoned = f", {row['abandoned']} abandoned" if row["abandoned"] else ""
        server = str(row["server"])
        where = "the offline backend" if is_offline(server) else f"server {server}"
        lines.append(f"  {where}: {row['calls']} calls{failed}{abandoned}")
    lines.append(f"compactions: {report['compactions']}; snapshots: {report['snapshots']}")
    living = report["living_corpus"]
    if living.get("corpus_note"):
        lines.append(f"corpus: {living['corpus_note']}")
    changed = living["sources_changed"]
    checked = "checked against the corpus" if living["checked_against_corpus"] else "last run"
    lines.append(
        f"source {cited}: {living['sources']}; changed since cited: {len(changed)} ({checked})"
    )
    lines.extend(f"  {change['line']}" for change in changed)
    if report["curator_decisions"]:
        kinds = ", ".join(f"{k} {v}" for k, v in report["curator_decisions_by_kind"].items())
        lines.append(
            f"curator decisions: {report['curator_decisions']} ({kinds}; "
            f"{report['curator_decisions_undone']} undone); latest "
            "(undo one with `terrarium undo --decision ID`):"
        )
        for row in report["recent_curator_decisions"]:
            into = f" into {row['target']}" if row["target"] else ""
            undone = " [undone]" if row["undone"] else ""
            lines.append(f"  decision {row['id']}: {row['decision']} {row['entry']}{into}{undone}")
    runs = ", ".join(f"{k} {v}" for k, v in report["runs_by_status"].items()) or "none"
    lines.append(f"runs: {len(report['runs'])} ({runs})")
    writer = report["writer"]
    if writer is not None:
        lines.append(
            f"being written by run {writer['run_id']} (pid {writer['pid']} on {writer['host']}, "
            f"since {writer['since']})"
        )
    return "\n".join(lines)
