"""What a drafted scene's commit keeps: merged definitions and the committed ids."""

from __future__ import annotations

from terrarium_dagster.agent.definition_merge import merge_definition, merge_words
from terrarium_dagster.agent.drafts import map_ids


def test_a_definition_replaced_from_an_older_text_keeps_what_was_added_meanwhile() -> None:
    base = "Tars is a green warrior."
    theirs = "Tars is a green warrior. He rides a thoat."  # an earlier scene of the block
    mine = "Tars is a green warrior. He leads the horde."  # drafted from `base`
    merged = merge_definition(base, mine, theirs)
    assert merged == "Tars is a green warrior. He rides a thoat. He leads the horde."


def test_a_sentence_the_draft_rewrote_is_replaced_and_nothing_is_doubled() -> None:
    base = "Helium is a city. It is red."
    theirs = "Helium is a city. It is red. Its towers are twin."
    mine = "Helium is a twin city of Barsoom. It is red. Its towers are twin."
    merged = merge_definition(base, mine, theirs)
    assert merged == "Helium is a twin city of Barsoom. It is red. Its towers are twin."


def test_a_sentence_both_rewrote_is_merged_word_by_word_not_written_twice() -> None:
    """Two scenes of a block each added a name to an entry's company from the same text: one
    sentence naming both, not two sentences that say the same (as the offline backend wrote
    "A name in the story; appears with ..." twice at concurrency 16 on Robinson Crusoe)."""
    base = "A man of the island. Appears with [[Benamuckee]]."
    theirs = "A man of the island. Appears with [[Benamuckee]], [[fowling-piece]]."
    mine = "A man of the island. Appears with [[Benamuckee]], [[Nicaragua]]."
    assert merge_definition(base, mine, theirs) == (
        "A man of the island. Appears with [[Benamuckee]], [[fowling-piece]], [[Nicaragua]]."
    )
    # changes to different words both apply; the same words changed two ways keep both
    assert merge_words("Kaa is a python.", "Kaa is a rock python.", "Kaa is a big python.") == (
        "Kaa is a big rock python."
    )
    assert merge_words("Kaa is a python.", "Kaa is a snake.", "Kaa is a serpent.") is None
    assert merge_definition("Kaa is a python.", "Kaa is a snake.", "Kaa is a serpent.") == (
        "Kaa is a serpent. Kaa is a snake."
    )


def test_a_drafts_own_ids_become_the_committed_ones_in_one_pass() -> None:
    # two drafts of a block both got E101 from the block's start; this one's became E103,
    # and its E102 became E101: swapped in one pass, other ids untouched
    text = 'created E101 and E102; see E7 and E1010 {"entry_id": "E101"}'
    assert map_ids(text, {101: 103, 102: 101}) == (
        'created E103 and E101; see E7 and E1010 {"entry_id": "E103"}'
    )
    assert map_ids(text, {}) == text
