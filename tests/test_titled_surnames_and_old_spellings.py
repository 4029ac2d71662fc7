"""Two misreadings of real books by the offline backend's word rules, each with its text.

- Dubliners, "The Dead": Gabriel's surname is written only after a title ("O, Mr. Conroy,"
  said Lily; "here's Mrs. Conroy."). The period of "Mr." was read as a sentence's end, so
  "Conroy" looked like an English word capitalised only where a sentence opens, and the
  curator rejected it, with "Browne" and "O'Connor".
- The Wonderful Wizard of Oz: "Aunt Em" and "Uncle Henry" were defined as "A aunt", "A uncle".
- Leaves of Grass: old past tenses with the "e" dropped ("Fill'd", "Stretch'd", "dream'd") were
  read as contractions, not as the ordinary words they spell, and confirmed as names.
"""

from __future__ import annotations

from terrarium_dagster.backends.curate_view import CurateEntryView
from terrarium_dagster.backends.offline_curator import offline_curate
from terrarium_dagster.backends.portraits import portrait, with_article
from terrarium_dagster.store.vocabulary import elided_word, ordinary_reason


def _decisions(view: CurateEntryView) -> dict[str, str]:
    return {d["entry_id"]: d["decision"] for d in offline_curate([view])}


def test_a_surname_written_only_after_a_title_is_a_name_not_a_sentences_first_word() -> None:
    evidence = (
        "“O, Mr. Conroy,” said Lily to Gabriel when she opened the door for him.",
        "“Miss Kate, here’s Mrs. Conroy.”",
        "“Is it snowing again, Mr. Conroy?” asked Lily.",
    )
    conroy = CurateEntryView(
        392,
        "Conroy",
        ("Mr. Conroy", "Mrs. Conroy"),
        definition="A character; appears with [[Miss Julia]], [[Miss Kate]].",
        source_posts=(1283, 1286, 1291),
        source_count=16,
        evidence=evidence,
        story_label="text",
    )
    assert _decisions(conroy) == {"E392": "CONFIRM"}

    # an English word that only ever opens a sentence is still a word ("Evidently" twice)
    evidently = CurateEntryView(
        12,
        "Evidently",
        source_posts=(1, 2),
        source_count=2,
        evidence=("He looked up. Evidently he had heard.", "Evidently, it was late."),
        story_label="text",
    )
    assert _decisions(evidently) == {"E12": "REJECT"}


def test_an_old_past_tense_with_its_e_dropped_is_the_ordinary_word_it_spells() -> None:
    assert elided_word("Fill'd") == "filled"
    assert elided_word("Stretch'd") == "stretched"
    assert elided_word("dream'd") == "dreamed"
    assert elided_word("lov'd") == "loved"
    assert ordinary_reason("Fill'd") is not None
    # a contraction of "had" or "would" is no past tense, and a name's apostrophe stays a name's
    assert elided_word("he'd") is None
    assert elided_word("I'd") is None
    assert elided_word("Keth'ra") is None
    assert elided_word("Ned'd") is None


def test_a_title_as_a_definitions_lead_takes_the_article_english_gives_it() -> None:
    found = portrait(["Aunt Em"], [(1, "Aunt Em had just come out of the house.")])
    assert found.leads[:1] == ["an aunt"]
    assert [with_article(word) for word in ("uncle", "king", "heir", "unicorn", "emperor")] == [
        "an uncle",
        "a king",
        "an heir",
        "a unicorn",
        "an emperor",
    ]
