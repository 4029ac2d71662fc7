"""A person a novel names under a title in two paragraphs, with nothing said of them but the
title ("Lord Backwater", "A lord"; a wedding guest listed twice), is left tentative rather than
confirmed by them, and let go at the long quiet review, or at the story's end, when no chapter
since names them (`term_reasons.only_titled`, `titled_quiet_reason`). Anything more said of
them, a third paragraph, a longer name built on theirs, or a quest's posts keep the old way;
one a single paragraph names stays tentative as before ("Captain James K. Powell")."""

from __future__ import annotations

from dataclasses import replace

import pytest

from terrarium_dagster.backends.curate_view import CurateEntryView
from terrarium_dagster.backends.offline_curator import offline_curate
from terrarium_dagster.backends.scene_message import KnownEntry
from terrarium_dagster.backends.term_reasons import (
    BOOK_QUIET_THREADS,
    LONG_QUIET_THREADS,
    only_titled,
    titled_quiet_reason,
)
from terrarium_dagster.curation.review_prompt import BOOK_LABEL, QM_LABEL

EVIDENCE = (
    "Lord Backwater tells me that I may place implicit reliance upon your judgment.",
    "The guests were the father of the bride, Lord Backwater and Lady Clara.",
)


def _view(**changes: object) -> CurateEntryView:
    view = CurateEntryView(
        entry_id=7,
        term="Lord Backwater",
        definition="A lord; appears with [[Petersfield]].",
        source_posts=(70, 95),
        source_count=2,
        evidence=EVIDENCE,
        story_label=BOOK_LABEL,
    )
    return replace(view, **changes)  # type: ignore[arg-type]


def _decision(view: CurateEntryView) -> str | None:
    decided = {d["entry_id"]: d for d in offline_curate([view])}
    found = decided.get(f"E{view.entry_id}")
    return None if found is None else found["decision"]


def test_a_person_named_only_by_title_is_left_tentative_then_let_go() -> None:
    view = _view()
    assert only_titled(view)
    assert _decision(view) is None  # not confirmed by its two paragraphs
    assert titled_quiet_reason(view) is None  # the story goes on
    # a title is a kind: it waits for the long quiet review, not the first
    assert _decision(replace(view, quiet_threads=BOOK_QUIET_THREADS)) is None
    quiet = replace(view, quiet_threads=LONG_QUIET_THREADS)
    assert _decision(quiet) == "REJECT"
    reason = titled_quiet_reason(quiet)
    assert reason is not None and "nothing said of it but its title" in reason
    assert titled_quiet_reason(replace(quiet, quiet_threads=LONG_QUIET_THREADS - 1)) is None
    ended = replace(view, quiet_threads=0, story_ends=True)
    reason = titled_quiet_reason(ended)
    assert reason is not None and "the story ends without naming it again" in reason


def test_a_title_the_evidence_writes_before_the_name() -> None:
    """The describer's "A sir" of "John Morland" is the title the evidence writes before it."""
    view = _view(
        term="John Morland",
        definition="A sir; appears with [[Court of Queen's Bench]].",
        evidence=(
            "I haven't had such a day since I had Sir John Morland for trespass.",
            "Look it up in the books: Frankland v. Morland, Court of Queen's Bench.",
        ),
        quiet_threads=LONG_QUIET_THREADS,
    )
    assert titled_quiet_reason(view) is not None


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"definition": "A lord; the chairman."}, "something said of him, if one word"),
        ({"definition": "A character; appears with [[Petersfield]]."}, "no title"),
        ({"source_posts": (70, 95, 140), "source_count": 3}, "a third paragraph"),
        ({"source_posts": (70,), "source_count": 1}, "a single paragraph: his one scene"),
        ({"story_label": QM_LABEL}, "a quest's posts"),
        (
            {"similar": (KnownEntry(9, "Lord Backwater's Hall", (), "confirmed", ""),)},
            "a longer entry built on the name",
        ),
        (
            {"similar": (KnownEntry(9, "Lord Backwater's School", (), "rejected", ""),)},
            "a longer name built on it, let go or not",
        ),
    ],
)
def test_what_keeps_a_titled_person(changes: dict[str, object], why: str) -> None:
    view = _view(**changes)
    assert not only_titled(view), why
    assert titled_quiet_reason(replace(view, quiet_threads=LONG_QUIET_THREADS)) is None, why
    if view.source_count >= 2:
        assert _decision(view) == "CONFIRM", why
