"""A name met once that the story never names again is let go at a later thread's curation.

A generated six-chapter story names "Perrotin of Nice" (words English knows, one of them
rarely) in one post of its first chapter with nothing said of him; the offline curator leaves
the entry tentative. The curation at a later chapter, three threads on, shows it
again as not named since, and the curator REJECTs it (a revision and a curator decision). The
last chapter names him in two posts, and he is restored as any rejected name named again is. A
coinage met once ("Vorrel Tarn") is not let go so by `quiet_reason` (English does not know it),
but in a novel by `long_quiet_reason` at the same review (`BOOK_QUIET_THREADS`), and in a quest
not at all. In a novel, a name two paragraphs side by side name is left tentative, not confirmed,
and let go the same way (`one_stretch`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from terrarium_dagster.backends.curate_view import CurateEntryView
from terrarium_dagster.backends.term_reasons import (
    BOOK_QUIET_THREADS,
    LONG_QUIET_THREADS,
    WORD_SOURCES,
    long_quiet_reason,
    one_stretch,
    quiet_reason,
)
from terrarium_dagster.cli import main
from terrarium_dagster.curation.curator import QUIET_THREADS
from terrarium_dagster.curation.review_prompt import BOOK_LABEL, QM_LABEL
from terrarium_dagster.store.annotator import GlossaryStore
from tests.support.books import curator_decisions, imported_book
from tests.support.cli import run_args

CHAPTERS = [
    """CHAPTER I. THE LETTER

The letter came in the spring, and my uncle read it at the window. It was from Perrotin of
Nice, he said, and he put it in the drawer.

That night a traveller spoke of Vorrel Tarn across the water, and then of the weather.
""",
    """CHAPTER II. THE ROAD

We took the coach along the coast road. The horses were tired and the inns were full, and we
slept in a barn among the sacks.
""",
    """CHAPTER III. THE TOWN

The town was quiet under the hill. My uncle bought bread and cheese and a new lantern, and we
sat by the fountain until dusk.
""",
    """CHAPTER IV. THE HOUSE

The house stood at the end of the lane with its shutters closed. The key was under the stone
where my uncle said it would be.
""",
    """CHAPTER V. THE GARDEN

Behind the house the garden had run wild. We cut back the brambles and found a sundial and a
bench, and my uncle sat there with his pipe.
""",
    """CHAPTER VI. THE CARRIAGE

At noon a carriage stopped at the gate, and Perrotin of Nice stepped down with a cane and a
small leather case under his arm.

My uncle took Perrotin of Nice into the study, and they talked until the candles burned low and
the rain came on over the hill.
""",
]

QUIET_CHAPTERS = [
    """CHAPTER VI. THE WELL

The well behind the barn was dry, and my uncle dropped a stone into it and listened. We heard
nothing, and he laughed and went in to supper.
""",
    """CHAPTER VII. THE FAIR

On market day we walked to the fair and bought apples and a length of rope, and my uncle lost
his hat in the crowd and found it again by the pump.
""",
]


def _book(tmp_path: Path, chapters: list[str]) -> Path:
    return imported_book(tmp_path, "THE QUIET LANE\n\n" + "\n".join(chapters))


def test_a_name_met_once_and_never_again_is_let_go_then_restored(tmp_path: Path) -> None:
    corpus, db = _book(tmp_path, CHAPTERS), tmp_path / "store.db"
    assert main(run_args(db, corpus)) == 0
    decided = curator_decisions(db, "Perrotin of Nice")
    kinds = [kind for _, kind, _ in decided]
    assert kinds[0] == "TENTATIVE" and kinds[-2:] == ["REJECT", "CONFIRM"], decided
    rejected = next(reason for _, kind, reason in decided if kind == "REJECT")
    assert f"the {QUIET_THREADS} chapters since never name it again" in rejected  # a book
    with GlossaryStore(db) as store:
        entry = store.glossary.find_by_term("Perrotin of Nice")
        assert entry is not None and entry.status == "confirmed"
        statuses = [
            r.new_value.get("status") for r in store.history.revisions(entry.id) if r.new_value
        ]
        assert statuses[-2:] == ["rejected", "confirmed"], statuses
        coinage = store.glossary.find_by_term("Vorrel Tarn")  # a novel's: let go at once
        assert coinage is not None and coinage.status == "rejected" and not coinage.deleted
    decided = curator_decisions(db, "Vorrel Tarn")
    assert [kind for _, kind, _ in decided] == ["TENTATIVE", "REJECT"], decided
    assert f"the {BOOK_QUIET_THREADS} chapters since never name it again" in decided[-1][2]


def test_a_name_met_once_stays_until_enough_threads_pass(tmp_path: Path) -> None:
    """A chapter on, it is not shown again: it stays tentative, with no new decision (the
    story goes on: its last chapter is a chapter later)."""
    corpus, db = _book(tmp_path, CHAPTERS[: QUIET_THREADS + 1]), tmp_path / "store.db"
    assert main(run_args(db, corpus)) == 0
    decided = curator_decisions(db, "Perrotin of Nice")
    last = max(thread for thread, _, _ in decided)
    assert [kind for thread, kind, _ in decided if thread < last] == ["TENTATIVE"], decided


def test_a_name_met_once_is_let_go_when_the_book_ends(tmp_path: Path) -> None:
    """A novel's last chapter is followed by none: what a single paragraph names with nothing
    said of it, and no chapter since (however few), is let go at the last chapter's curation as
    at a quiet review ("Senhor Penalosa", "Merivale", named once in *The Lost World*'s last
    chapter, stayed tentative and live), and so is a name first met in that chapter. A name the
    last chapter names in two paragraphs apart is kept, and so is a coinage met once (a book
    cut short ends where its story does not: see `long_quiet_reason`)."""
    ending = """CHAPTER III. THE BRIDGE

We crossed the bridge at dusk, and a boatman said that Gaston Montargis had kept the ferry.

My uncle paid the boatman and we went on through the rain, and the lamps were lit in the town.

At the inn Marguerite Solanne met us at the door with a candle.

We ate by the fire and slept, and in the morning the rain had stopped.

Marguerite Solanne gave us bread for the road, and we went on.
"""
    corpus, db = _book(tmp_path, [*CHAPTERS[:2], ending]), tmp_path / "store.db"
    assert main(run_args(db, corpus)) == 0
    for name in ("Perrotin of Nice", "Gaston Montargis"):
        decided = curator_decisions(db, name)
        assert decided[-1][1] == "REJECT", decided
        assert "the story ends without naming it again" in decided[-1][2]
    with GlossaryStore(db) as store:
        for name, status in (
            ("Perrotin of Nice", "rejected"),
            ("Gaston Montargis", "rejected"),
            ("Marguerite Solanne", "confirmed"),
        ):
            entry = store.glossary.find_by_term(name)
            assert entry is not None and entry.status == status, (name, entry)


def test_a_coinage_met_once_in_a_novel_is_let_go_at_the_first_quiet_review(
    tmp_path: Path,
) -> None:
    """A novel's coinage met once goes at the first quiet review, `BOOK_QUIET_THREADS` chapters
    after the one that named it (a quest's waits `LONG_QUIET_THREADS`, and a quest's coinage is
    never let go so); the decision says how many."""
    chapters = CHAPTERS[:5] + QUIET_CHAPTERS
    assert BOOK_QUIET_THREADS == QUIET_THREADS < LONG_QUIET_THREADS
    corpus, db = _book(tmp_path, chapters), tmp_path / "store.db"
    assert main(run_args(db, corpus)) == 0
    decided = curator_decisions(db, "Vorrel Tarn")
    assert [kind for _, kind, _ in decided] == ["TENTATIVE", "REJECT"], decided
    assert f"the {BOOK_QUIET_THREADS} chapters since never name it again" in decided[-1][2]
    with GlossaryStore(db) as store:
        coinage = store.glossary.find_by_term("Vorrel Tarn")
        assert coinage is not None and coinage.status == "rejected" and not coinage.deleted


@pytest.mark.parametrize(
    ("term", "evidence", "label", "let_go"),
    [
        ("Burdivan", "They passed Burdivan at dawn.", BOOK_LABEL, True),  # a novel's coinage
        ("Burdivan", "They passed Burdivan at dawn.", QM_LABEL, False),  # a quest's own
        ("Cape of Good Hope", "Round the Cape of Good Hope they went.", QM_LABEL, True),
        ("Ocelot-man", "The Ocelot-man ran.", BOOK_LABEL, False),  # a kind of being
        ("Captain James K. Powell of Richmond", "Captain James K. Powell.", BOOK_LABEL, False),
        ("sak", "He told me to sak.", BOOK_LABEL, False),  # the story's own word
        ("Tannah", "At Tannah the train stopped; Tannah was hot.", BOOK_LABEL, False),  # twice
    ],
)
def test_what_six_quiet_threads_let_go(term: str, evidence: str, label: str, let_go: bool) -> None:
    quiet = BOOK_QUIET_THREADS if label == BOOK_LABEL else LONG_QUIET_THREADS
    view = CurateEntryView(
        entry_id=7,
        term=term,
        source_posts=(70,),
        source_count=1,
        evidence=(evidence,),
        quiet_threads=quiet,
        story_label=label,
    )
    assert (long_quiet_reason(view) is not None) is let_go
    # a thread short of it, never
    assert long_quiet_reason(replace(view, quiet_threads=quiet - 1)) is None


def test_a_novels_name_with_a_kind_waits_for_the_long_quiet_review() -> None:
    """In a novel, a name met once whose definition gives it a kind ("Iss", "A river": *A
    Princess of Mars* names it again six chapters on) is not let go at the first quiet review,
    only at `LONG_QUIET_THREADS`; one with nothing said of it goes at the first."""
    view = CurateEntryView(
        entry_id=7,
        term="Iss",
        definition="A river.",
        source_posts=(70,),
        source_count=1,
        evidence=("They came to the Iss.",),
        quiet_threads=BOOK_QUIET_THREADS,
        story_label=BOOK_LABEL,
    )
    assert long_quiet_reason(view) is None
    assert long_quiet_reason(replace(view, quiet_threads=LONG_QUIET_THREADS)) is not None
    assert long_quiet_reason(replace(view, definition="A name in the story.")) is not None


@pytest.mark.parametrize(
    ("posts", "label", "stretch"),
    [
        ((70, 71), BOOK_LABEL, True),  # two paragraphs side by side
        ((70, 75), BOOK_LABEL, False),  # a scene apart
        ((70, 71), QM_LABEL, False),  # a quest's posts: no stretch
    ],
)
def test_two_paragraphs_side_by_side_are_one_stretch(
    posts: tuple[int, int], label: str, stretch: bool
) -> None:
    """A novel's name that two adjacent paragraphs name, and no chapter since, is let go at the
    quiet review as one a single post names; the curator does not confirm it by its sources."""
    from terrarium_dagster.backends.offline_curator import offline_curate

    text = "They passed the Andaman Islands at dawn, and the Andaman Islands were green."
    view = CurateEntryView(
        entry_id=7,
        term="Andaman Islands",
        source_posts=posts,
        source_count=2,
        evidence=(text, "The Andaman Islands lay astern."),
        story_label=label,
    )
    assert one_stretch(view) is stretch
    decided = {d["entry_id"]: d["decision"] for d in offline_curate([view])}
    assert decided.get("E7") == (None if stretch else "CONFIRM")
    quiet = replace(view, quiet_threads=BOOK_QUIET_THREADS)
    assert (long_quiet_reason(quiet) is not None) is stretch


@pytest.mark.parametrize(
    ("term", "evidence", "let_go"),
    [
        ("Perrotin of Nice", "A letter came from Perrotin of Nice.", True),  # words English knows
        ("Vorrel Tarn", "A traveller spoke of Vorrel Tarn.", False),  # a coinage waits
        ("Goddess of Death", "They prayed to the Goddess of Death.", False),  # a title
        ("Ocelot-man", "The Ocelot-man ran.", False),  # a kind of being
        ("Tannah", "At Tannah the train stopped; Tannah was hot.", False),  # named twice
    ],
)
def test_the_end_of_a_book_is_as_quiet_as_the_chapters_since(
    term: str, evidence: str, let_go: bool
) -> None:
    """At a book's last chapter (`story_ends`), a name a single paragraph names with nothing
    said of it is let go by `quiet_reason` though no chapter, or fewer than `QUIET_THREADS`, has
    passed since; what it spares at a quiet review it spares then too, and `long_quiet_reason`
    waits for its chapters (a coinage or a title may be a book's own: a book cut short ends
    where its story does not). The reason says the story ended."""
    from terrarium_dagster.backends.term_reasons import quiet_reason

    view = CurateEntryView(
        entry_id=7,
        term=term,
        source_posts=(70,),
        source_count=1,
        evidence=(evidence,),
        quiet_threads=1,
        story_label=BOOK_LABEL,
    )
    assert long_quiet_reason(view) is None  # one chapter since, the story going on
    assert long_quiet_reason(replace(view, quiet_threads=0)) is None
    for quiet in (0, 1):
        ended = replace(view, quiet_threads=quiet, story_ends=True)
        reason = quiet_reason(ended) or long_quiet_reason(ended)
        assert (reason is not None) is let_go, (term, quiet)
        assert reason is None or "the story ends without naming it again" in reason


def test_the_last_chapters_message_says_the_story_ends(tmp_path: Path) -> None:
    """The curate message at a book's last chapter says of each entry under review that the
    story ends with it, and the offline curator reads that; an earlier chapter's does not."""
    from terrarium_dagster.backends.curate_view import parse_curate_message
    from terrarium_dagster.curation.review_prompt import STORY_ENDS, CurationItem, render_item
    from terrarium_dagster.store.models import Entry

    entry = Entry(
        id=7,
        term="Varnesse",
        norm_term="varnesse",
        definition="A name in the story.",
        status="tentative",
        first_seen_post=70,
        first_seen_thread=3,
    )
    for ends in (False, True):
        block = render_item(CurationItem(entry=entry, story_ends=ends), 300)
        assert (STORY_ENDS in block) is ends
        (view,) = parse_curate_message(block)
        assert view.story_ends is ends


@pytest.mark.parametrize(
    ("term", "other", "definition", "ends", "label", "let_go"),
    [
        ("Kensington", "West Kensington", "A name in the story.", True, BOOK_LABEL, True),
        ("Covent Garden Market", "Covent Garden", "A place.", True, BOOK_LABEL, True),  # holds
        ("Kensington", "West Kensington", "A name in the story.", False, BOOK_LABEL, False),
        ("Kensington", "West Kensington", "A name in the story.", True, QM_LABEL, False),
        ("Kensington", "West Kensington", "Where the old house stood.", True, BOOK_LABEL, False),
    ],
)
def test_a_name_tied_to_another_met_once_is_let_go_when_the_book_ends(
    term: str, other: str, definition: str, ends: bool, label: str, let_go: bool
) -> None:
    """In a novel, a name a single paragraph names, once, with nothing said of it, that is a
    word of another entry's name or holds one ("Kensington" beside a later "West Kensington",
    "Covent Garden Market" beside "Covent Garden"), and that the curator neither merged (the
    other entry is newer, or there are two) nor let go (the tie spares it the quiet reasons), is
    let go when the story ends: a second name of that referent or a name met in passing. Not
    before the end (a later chapter may name it), nor in a quest, nor when its definition says
    something of it."""
    from terrarium_dagster.backends.offline_curator import offline_curate
    from terrarium_dagster.backends.scene_message import KnownEntry

    view = CurateEntryView(
        entry_id=30,
        term=term,
        definition=definition,
        source_posts=(342,),
        source_count=1,
        evidence=(f"He spoke of {term} and went out.",),
        similar=(KnownEntry(40, other, (), "confirmed", "A name in the story."),),
        quiet_threads=1,
        story_ends=ends,
        story_label=label,
    )
    rejected = [d for d in offline_curate([view]) if d["decision"] == "REJECT"]
    assert bool(rejected) is let_go, rejected
    if let_go:
        assert "tied to another entry's" in rejected[0]["reasoning"]


@pytest.mark.parametrize(
    ("term", "definition", "ends", "label", "let_go"),
    [
        ("Godno", "A name in the story.", True, BOOK_LABEL, True),  # a word English lacks
        ("Tal Hajus", "A name in the story.", True, BOOK_LABEL, False),  # several words
        ("Godno", "A place.", True, BOOK_LABEL, False),  # a kind said of it
        ("Godno", "A name in the story.", False, BOOK_LABEL, False),  # chapters to come
        ("Godno", "A name in the story.", True, QM_LABEL, False),  # a quest's own word
        ("sakked", "A term of the story.", True, BOOK_LABEL, False),  # the story's language
    ],
)
def test_a_coined_word_met_once_goes_when_the_novel_ends(
    term: str, definition: str, ends: bool, label: str, let_go: bool
) -> None:
    """At a novel's end, a single capitalised word English does not know, met once with nothing
    said of it, not even a kind, is let go as a name met in passing ("Godno", "Marcini"): before
    it waited for chapters that never came. A name of several words met in the last chapters
    ("Tal Hajus") stays, as a book cut short ends where its story does not."""
    view = CurateEntryView(
        entry_id=7,
        term=term,
        definition=definition,
        source_posts=(70,),
        source_count=1,
        evidence=(f"He was tried at {term} for it.",),
        quiet_threads=1,
        story_ends=ends,
        story_label=label,
    )
    assert (quiet_reason(view) is not None) is let_go


@pytest.mark.parametrize(
    ("term", "sources", "quiet", "label", "expected"),
    [
        ("wheesht", (70, 95), 0, BOOK_LABEL, None),  # a few paragraphs: left tentative
        ("wheesht", (70, 95), BOOK_QUIET_THREADS, BOOK_LABEL, "REJECT"),  # and let go unnamed
        ("wheesht", (70, 95, 120, 160), 0, BOOK_LABEL, "CONFIRM"),  # a word the story recurs to
        ("wheesht", (70, 95), 0, QM_LABEL, "CONFIRM"),  # a quest's own word
        ("gorb-men", (70, 95), BOOK_QUIET_THREADS, BOOK_LABEL, "CONFIRM"),  # a being
        ("Wheesht", (70, 95), 0, BOOK_LABEL, "CONFIRM"),  # a name, as written
    ],
)
def test_a_lowercase_word_a_novel_names_in_few_paragraphs_waits_and_goes_unnamed(
    term: str, sources: tuple[int, ...], quiet: int, label: str, expected: str | None
) -> None:
    """In a novel, a lowercase word named in fewer than `WORD_SOURCES` paragraphs is not
    confirmed by them ("aweel", "wheesht", "sailing-ship": two or three paragraphs each, where
    the story's own words, "thoat", "banth", are named in more); left tentative, it is let go
    when `BOOK_QUIET_THREADS` chapters pass without naming it. A quest's word, a kind of being
    and a capitalised name are confirmed by two sources as before."""
    from terrarium_dagster.backends.offline_curator import offline_curate

    assert len(sources) < WORD_SOURCES or expected == "CONFIRM"
    view = CurateEntryView(
        entry_id=7,
        term=term,
        definition="A term of the story.",
        source_posts=sources,
        source_count=len(sources),
        evidence=(f"“Hoot, {term}, man,” said he, and went on.",),
        quiet_threads=quiet,
        story_label=label,
    )
    decided = [d["decision"] for d in offline_curate([view])]
    assert decided == ([expected] if expected else []), decided
