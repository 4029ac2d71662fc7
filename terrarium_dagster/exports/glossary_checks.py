"""The glossary's asset checks as plain functions (the Dagster checks call these).

Each returns a `CheckResult`: ``passed``, a one-line ``description`` and a JSON-ready ``details``
dict (counts and the first offending items). "Live" means not deleted and not merged away.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol

from terrarium_dagster.exports.references import (
    NameIndex,
    is_live,
    rejected_references,
    unresolved_references,
)
from terrarium_dagster.store.models import EntryView
from terrarium_dagster.store.normalize import normalize_term
from terrarium_dagster.store.sources import SourceChange
from terrarium_dagster.store.sources import describe as describe_source_change

MAX_LISTED = 50


class CheckResult(NamedTuple):
    passed: bool
    description: str
    details: dict[str, Any]


class PostLookup(Protocol):
    def post(self, post_id: int) -> Any: ...


def _verdict(
    found: Sequence[Any],
    describe: Callable[[Any], str],
    *,
    failed: str,
    passed: str,
    details: dict[str, Any],
    separator: str = ", ",
    shown: int = 5,
) -> CheckResult:
    """A check's result: failed when anything was `found`, its count and `failed` followed by
    the first `shown` of them as `describe` names them; passed with `passed` otherwise."""
    if not found:
        return CheckResult(True, passed, details)
    names = separator.join(describe(item) for item in found[:shown])
    return CheckResult(False, f"{len(found)} {failed}: {names}", details)


def check_sources(entries: Sequence[EntryView]) -> CheckResult:
    """Every live entry has at least one source post."""
    live = [e for e in entries if is_live(e)]
    missing = sorted((e for e in live if not e.provenance), key=lambda e: (e.norm_term, e.id))
    rejected = sum(1 for e in live if e.status == "rejected")
    # "live" as the export counts it: in the glossary, and rejected (kept, not exported as terms)
    kinds = f"{len(live) - rejected} in the glossary, {rejected} rejected"
    details: dict[str, Any] = {
        "live_entries": len(live),
        "rejected_entries": rejected,
        "without_source": len(missing),
        "entries": [{"id": e.id, "term": e.term, "status": e.status} for e in missing][:MAX_LISTED],
    }
    return _verdict(
        missing,
        lambda e: f"E{e.id} {e.term}",
        failed="entries (not deleted or merged away) have no source post",
        passed=f"all {len(live)} entries not deleted or merged away ({kinds}) have a source post",
        details=details,
    )


def check_unique_names(entries: Sequence[EntryView]) -> CheckResult:
    """No two live entries share a normalized term or alias."""
    owners: dict[str, set[int]] = defaultdict(set)
    terms: dict[int, str] = {}
    for entry in entries:
        if not is_live(entry):
            continue
        terms[entry.id] = entry.term
        for name in (entry.term, *entry.aliases):
            key = normalize_term(name)
            if key:
                owners[key].add(entry.id)
    clashes = {name: sorted(ids) for name, ids in sorted(owners.items()) if len(ids) > 1}
    details: dict[str, Any] = {
        "names": len(owners),
        "duplicates": len(clashes),
        "clashes": [
            {"name": name, "entries": [{"id": i, "term": terms[i]} for i in ids]}
            for name, ids in list(clashes.items())[:MAX_LISTED]
        ],
    }
    return _verdict(
        list(clashes.items()),
        lambda clash: f"{clash[0]!r}: " + ", ".join(f"E{i}" for i in clash[1]),
        failed="names are shared by live entries",
        passed=f"{len(owners)} normalized names, each on one live entry",
        details=details,
        separator="; ",
    )


def check_references(entries: Sequence[EntryView]) -> CheckResult:
    """Every ``[[reference]]`` resolves; the unresolved ones are listed in ``details``.

    An unresolved reference can be legitimate (a name the story has not defined yet), so the
    Dagster check reports this one as a warning; the wiki lists the same references on its
    ``unresolved.md`` page. A reference to a name the curator rejected is no fault: the
    curation decided it is no entry, and every export shows it as plain text; those are listed
    apart (``to_rejected``) and do not fail the check.
    """
    index = NameIndex(entries)
    missing = unresolved_references(entries, index)
    to_rejected = rejected_references(entries, index)
    details: dict[str, Any] = {
        "unresolved": len(missing),
        "references": [
            {"entry_id": item.entry_id, "term": item.term, "target": item.target}
            for item in missing[:MAX_LISTED]
        ],
        "to_rejected": len(to_rejected),
        "rejected_references": [
            {"entry_id": item.entry_id, "term": item.term, "target": item.target}
            for item in to_rejected[:MAX_LISTED]
        ],
    }
    rejected_note = (
        f" ({len(to_rejected)} name a rejected entry: shown as plain text)" if to_rejected else ""
    )
    return _verdict(
        missing,
        lambda item: f"[[{item.target}]] on E{item.entry_id}",
        failed="references resolve to no entry",
        passed="every [[reference]] resolves to an entry" + rejected_note,
        details=details,
    )


def check_provenance_posts(entries: Sequence[EntryView], corpus: PostLookup) -> CheckResult:
    """Every provenance row of a live entry names a post of the corpus, in the thread it says."""
    problems: list[dict[str, Any]] = []
    rows = 0
    for entry in sorted(entries, key=lambda e: e.id):
        if not is_live(entry):
            continue
        for item in entry.provenance:
            rows += 1
            post = corpus.post(item.post_id)
            if post is None:
                problems.append({"entry_id": entry.id, "ref": item.ref, "problem": "no such post"})
            elif post.thread_id != item.thread_id:
                problems.append(
                    {
                        "entry_id": entry.id,
                        "ref": item.ref,
                        "problem": f"post is in thread {post.thread_id}",
                    }
                )
    details: dict[str, Any] = {
        "provenance_rows": rows,
        "bad_rows": len(problems),
        "rows": problems[:MAX_LISTED],
    }
    return _verdict(
        problems,
        lambda p: f"E{p['entry_id']} {p['ref']} ({p['problem']})",
        failed="provenance rows point at no corpus post",
        passed=f"all {rows} provenance rows point at corpus posts",
        details=details,
    )


def check_sources_unchanged(
    changes: Sequence[SourceChange], place: Callable[[int, int], str] | None = None
) -> CheckResult:
    """No post cited as a source was edited or deleted so that a stored quote from it is no
    longer its words (edits that keep every quote are listed, and pass). `place` names a post
    (a book's chapter and paragraph); `thread#post` without it."""
    broken = [c for c in changes if not c.quotes_hold]
    details: dict[str, Any] = {
        "changed_sources": len(changes),
        "quotes_broken": len(broken),
        "posts": [
            {
                "post": f"{c.thread_id}#{c.post_id}",
                "line": describe_source_change(c, place),
                "change": c.change,
                "quotes_hold": c.quotes_hold,
                "entries": [f"E{e}" for e in c.entry_ids],
            }
            for c in changes[:MAX_LISTED]
        ],
    }
    if changes and not broken:
        return CheckResult(
            True, f"{len(changes)} source posts edited, every quote from them still holds", details
        )
    return _verdict(
        broken,
        lambda change: describe_source_change(change, place),
        failed="source posts changed so that their quotes no longer hold",
        passed="every source post is as it was when cited",
        details=details,
        separator="; ",
        shown=3,
    )


def run_checks(
    entries: Sequence[EntryView],
    corpus: PostLookup,
    source_changes: Sequence[SourceChange] = (),
    place: Callable[[int, int], str] | None = None,
) -> dict[str, CheckResult]:
    """All checks by name: sources, unique_names, references, provenance_posts, and
    sources_unchanged (over the changes `store.sources.check` found, when given; its posts
    named by `place`)."""
    return {
        "sources": check_sources(entries),
        "unique_names": check_unique_names(entries),
        "references": check_references(entries),
        "provenance_posts": check_provenance_posts(entries, corpus),
        "sources_unchanged": check_sources_unchanged(source_changes, place),
    }
