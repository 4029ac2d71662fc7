"""The curator is shown the forms of an entry's name beside it, however a search ranks them.

A merge needs both forms side by side ("Cap'n Silver" and "John Silver"); the similar entries
used to be only the first three a search of the name ranked, and a search ranks definitions too:
entries whose definitions name "Cap'n Silver" came first and "John Silver" was never shown.
"""

from __future__ import annotations

from terrarium_dagster.backends.curate_view import parse_curate_message
from terrarium_dagster.backends.offline_curator import offline_curate
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.curation.curator import gather_items
from terrarium_dagster.curation.review_prompt import build_curate_message
from terrarium_dagster.store.annotator import Actor, GlossaryStore
from terrarium_dagster.store.models import ProvenanceIn

AGENT = Actor("agent", run_id="run-a", thread_id=100)
pytest_plugins = ["tests.support.glossary_fixtures"]  # the quest's corpus and a store


def _entry(store: GlossaryStore, term: str, definition: str, post: int, status: str) -> int:
    provenance = [ProvenanceIn(post_id=post, thread_id=100)]
    return store.glossary.create_entry(
        AGENT, term, definition, status=status, provenance=provenance
    ).id


def _similar_of(store: GlossaryStore, corpus: Corpus, term: str) -> list[str]:
    (item,) = [i for i in gather_items(store, corpus, 100).items if i.entry.term == term]
    return [other.term for other in item.similar]


def test_forms_of_a_name_are_shown_beside_it_before_what_a_search_ranks_first(
    store: GlossaryStore, corpus: Corpus
) -> None:
    silver = _entry(store, "John Silver", "The ship's cook.", 101, "confirmed")
    for number, name in enumerate(("Parrot", "Galley", "Crutch", "Mutiny", "Tavern")):
        _entry(
            store,
            name,
            f"Cap'n Silver's {name.lower()}; appears with Cap'n Silver, cap'n.",
            102 + number,
            "confirmed",
        )
    hampstead = _entry(store, "Hampstead", "A place.", 101, "confirmed")
    island = _entry(store, "Treasure Island", "A place.", 101, "confirmed")
    upper = _entry(store, "Upper-world", "A faction.", 101, "confirmed")
    _entry(store, "Cap'n Silver", "A pirate.", 106, "tentative")
    _entry(store, "Hampsted", "A name in the story.", 106, "tentative")
    _entry(store, "Isle of Treasure", "A name in the story.", 106, "tentative")
    _entry(store, "Upper-worlders", "A name in the story.", 106, "tentative")

    assert _similar_of(store, corpus, "Cap'n Silver")[0] == "John Silver"
    assert _similar_of(store, corpus, "Hampsted")[0] == "Hampstead"  # one letter apart
    assert "Treasure Island" in _similar_of(store, corpus, "Isle of Treasure")
    assert "Upper-world" in _similar_of(store, corpus, "Upper-worlders")

    # the offline curator, reading the message a real model reads, merges each form
    message = build_curate_message(gather_items(store, corpus, 100).items)
    decisions = {
        d["entry_id"]: d.get("target_entry_id")
        for d in offline_curate(parse_curate_message(message))
        if d["decision"] == "MERGE"
    }
    assert sorted(decisions.values()) == sorted(
        f"E{target}" for target in (silver, hampstead, island, upper)
    ), decisions


def test_names_sharing_no_word_are_not_shown_as_forms(store: GlossaryStore, corpus: Corpus) -> None:
    """A short word one letter from another is another name ("Korad", "Korod"); a long one
    changed at its last letter is another form's ending, left to the search."""
    _entry(store, "Korod", "A city.", 101, "confirmed")
    _entry(store, "Korad", "A city.", 106, "tentative")
    assert "Korod" not in _similar_of(store, corpus, "Korad")


def test_a_given_name_is_shown_beside_its_familiar_and_pet_forms(
    store: GlossaryStore, corpus: Corpus
) -> None:
    """ "Lizzy" shares no word with "Elizabeth Bennet", nor "Davie" with "David Balfour"; shown
    side by side (`terms.given_names`), the full name merges into the entry first met by its
    familiar form (the offline curator reading the message a real model reads)."""
    lizzy = _entry(store, "Lizzy", "Mrs. Bennet's second daughter.", 101, "confirmed")
    davie = _entry(store, "Davie", "The narrator.", 101, "confirmed")
    _entry(store, "Lydia", "The youngest Bennet daughter.", 101, "confirmed")
    _entry(store, "Elizabeth Bennet", "A name in the story.", 106, "tentative")
    _entry(store, "David Balfour", "A name in the story.", 106, "tentative")

    # first, before what a search of the names ranks ("Lydia", by her definition)
    assert _similar_of(store, corpus, "Elizabeth Bennet")[0] == "Lizzy"
    assert _similar_of(store, corpus, "David Balfour")[0] == "Davie"
    message = build_curate_message(gather_items(store, corpus, 100).items)
    merges = {
        d["entry_id"]: d.get("target_entry_id")
        for d in offline_curate(parse_curate_message(message))
        if d["decision"] == "MERGE"
    }
    assert sorted(merges.values()) == sorted(f"E{target}" for target in (lizzy, davie)), merges


def test_of_the_entries_sharing_a_word_the_one_named_by_it_alone_is_shown_first(
    store: GlossaryStore, corpus: Corpus
) -> None:
    """ "Rodger Baskerville" (The Hound of the Baskervilles) is shown beside "Baskerville",
    made after three other Baskerville names: its review reads that it holds another entry's
    name, where the three older ones alone would have let it go as a name met in passing."""
    for name in ("Charles Baskerville", "Hound of the Baskervilles", "Hugo Baskerville"):
        _entry(store, name, "A name in the story.", 101, "confirmed")
    _entry(store, "Baskerville", "The family.", 102, "confirmed")
    _entry(store, "Rodger Baskerville", "A name in the story.", 106, "tentative")
    assert _similar_of(store, corpus, "Rodger Baskerville")[0] == "Baskerville"
