"""A name the curator rejected as mentioned in passing comes back when the story goes on using it.

A generated two-chapter story names "John Silver" (a phrase of everyday English words) once in
its first chapter, so the offline curator rejects it as a name in passing; the next chapter names
him in one post after another. The curator is shown the rejected entry again with the posts that
name it and CONFIRMs it: a revision and a curator decision restore it. The same run interrupted
after its first scene and resumed writes the same store.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from terrarium_dagster.cli import main
from terrarium_dagster.store.annotator import GlossaryStore
from tests.support.books import curator_decisions, imported_book
from tests.support.cli import run_args
from tests.support.store_dump import dump_differences, store_dump

STORY = """THE GREY HARBOUR

CHAPTER I. THE INN

The inn stood above the cove, and the wind came off the water all night. My mother kept the
fire and I kept the shutters.

A stranger came at dusk with a sea-chest on a barrow. He drank alone by the hearth and asked
after a man called John Silver, then spoke no more of him.

In the morning the stranger paid in Kethric coin, and the coin was warm as if from a forge.

CHAPTER II. THE SHIP

We went down to the quay where the Morrow Gull lay at her moorings. A tall cook with a crutch
met us on the gangway, and he said his name was John Silver.

John Silver showed us the galley and the casks and the brass lamps.

That night I heard John Silver talking low with the bosun about the Kethric coin.

At dawn the Morrow Gull cast off, and John Silver sang at the capstan while the sails filled.
"""

PASSING = "Green Hill"  # a mention in passing that the story never takes up again


def _book(tmp_path: Path, *, more_passing: bool = False) -> Path:
    text = STORY
    if more_passing:
        text = text.replace("all night.", f"all night from the {PASSING}.")
        text = text.replace("sails filled.", f"sails filled under the {PASSING}.")
    return imported_book(tmp_path, text)


def test_a_rejected_name_the_story_goes_on_using_is_restored(tmp_path: Path) -> None:
    corpus, db = _book(tmp_path), tmp_path / "store.db"
    assert main(run_args(db, corpus)) == 0
    decided = curator_decisions(db, "John Silver")
    assert [kind for _, kind, _ in decided] == ["REJECT", "CONFIRM"], decided
    assert decided[0][0] != decided[1][0]  # rejected in the first thread, restored in a later one
    assert "named again" in decided[1][2]
    with GlossaryStore(db) as store:
        entry = store.glossary.find_by_term("John Silver")
        assert entry is not None and entry.status == "confirmed"
        statuses = [
            r.new_value.get("status") for r in store.history.revisions(entry.id) if r.new_value
        ]
    assert statuses[-2:] == ["rejected", "confirmed"], statuses


def test_a_name_named_again_in_one_post_stays_rejected(tmp_path: Path) -> None:
    """Not every recurrence: a rejected name shown again in a single post of a later chapter is
    not reviewed again, and one too rare to pass the rule stays rejected."""
    corpus, db = _book(tmp_path, more_passing=True), tmp_path / "store.db"
    assert main(run_args(db, corpus)) == 0
    decided = curator_decisions(db, PASSING)
    assert [kind for _, kind, _ in decided] == ["REJECT"], decided


def test_restoring_resumes_exactly(tmp_path: Path) -> None:
    corpus = _book(tmp_path)
    whole, resumed = tmp_path / "whole.db", tmp_path / "resumed.db"
    assert main(run_args(whole, corpus)) == 0
    assert main(run_args(resumed, corpus, max_scenes=1)) == 0
    assert curator_decisions(resumed, "John Silver") == curator_decisions(whole, "John Silver")[:1]
    assert main(run_args(resumed, corpus)) == 0
    assert dump_differences(store_dump(whole), store_dump(resumed)) == []


# A captain met once under his full name, then once under his title, each let go as a name in
# passing before the other was met; a later chapter names him both ways, again and again.
TWO_FORMS = """THE GREY HARBOUR

CHAPTER I. THE INN

The inn stood above the cove, and the wind came off the water all night long, so that my
mother kept the fire high and I kept the shutters barred until the grey light of morning.

A stranger came at dusk and sat alone by the hearth. "I am Andrew Speedy, of Cardiff," he
said, and he drank his ale and paid for it and went out into the rain without another word.

CHAPTER II. THE QUAY

We went down to the quay in the morning to ask for a passage to the south, but the harbour
master laughed at us: Captain Speedy, he said, would carry no passengers for any money.

The boats came home with the tide that evening, and the nets were hung to dry along the
harbour wall while the gulls quarrelled over what the fishermen threw back into the water.

CHAPTER III. THE HOLD

A short man with a red beard met us on the gangway of the brig and looked us up and down.
He said he was Andrew Speedy, and that he owned the ship and every plank and rope of her.

Captain Speedy showed us the galley and the casks and the brass lamps, and he swore at the
cook for the smell of the stew, and at the boy for the dust on the lamps.

That night I heard Captain Speedy talking low with the bosun about the price of our passage
and the weather in the channel, and I did not like the sound of either.

At dawn Captain Speedy cast off, and the men cursed Andrew Speedy under their breath as they
hauled at the ropes, for he had promised them a day ashore and given them none.

Andrew Speedy sang at the capstan while the sails filled, and the brig stood out past the
point with the whole town watching from the harbour wall.
"""


def test_two_forms_of_one_name_restored_together_are_one_entry(tmp_path: Path) -> None:
    """Each form was let go before the other was met, so neither was an alias of the other;
    restored in one review, each was shown beside the other still rejected. The titled form
    goes to the full name restored beside it, not back as an entry of its own."""
    corpus, db = imported_book(tmp_path, TWO_FORMS), tmp_path / "store.db"
    assert main(run_args(db, corpus)) == 0
    con = sqlite3.connect(db)
    try:
        entries = con.execute("SELECT id, term, status, merged_into FROM entry ORDER BY id")
        entries = entries.fetchall()
        decided = con.execute(
            "SELECT thread_id, entry_id, decision, target_entry_id FROM curator_decision"
        ).fetchall()
    finally:
        con.close()
    assert entries == [(1, "Andrew Speedy", "confirmed", None), (2, "Captain Speedy", "merged", 1)]
    (first, _, _, _), (second, _, _, _), (again, *_), _ = decided
    assert first < second < again
    assert decided == [
        (first, 1, "REJECT", None),
        (second, 2, "REJECT", None),
        (again, 1, "CONFIRM", None),
        (again, 2, "MERGE", 1),
    ]


# A lad named in full once, let go as a name in passing; then called by a pet form for a
# chapter; then named in full again.
PET_FORM = """THE HOUSE OF SHAWS

CHAPTER I. I SET OFF

I will begin the story of my adventures with a certain morning early in the month of June, when
I took the key for the last time out of the door of my father's house, David Balfour his son.

The sun began to shine upon the summit of the hills as I went down the road, and by the time I
had come as far as the manse, the blackbirds were whistling in the garden lilacs.

CHAPTER II. THE MANSE

The minister was waiting for me by the garden gate. "Well, Davie, lad," said he, "I will go
with you as far as the ford, to set you on the way." And he took my bundle from my hand.

"Davie," he said, when we came to the ford, "there is a letter here your father left for you,
and you are to carry it to the house of Shaws, by Cramond, and give it into a laird's hands."

Then he prayed a little while aloud, and at the end he said, "Davie, my man, be wary of the
world, and put your trust in the Lord," and he turned and went back over the hill alone.

CHAPTER III. THE HOUSE

The laird read the letter twice over by the light of the fire, and then he looked up at me
under his brows. "David Balfour," said he, "you are your father's son, I see that plain."

"David Balfour," he went on, "you may sleep in the room at the top of the stair, for there is
no other, and you will find the bed hard enough, but the roof is sound over it."

I said goodnight to him and climbed the stair with the candle, and David Balfour, for all his
father's letter, lay down that night in a cold house with no friend in it but himself.
"""


def test_a_full_name_restored_goes_to_the_pet_form_made_while_it_stood_rejected(
    tmp_path: Path,
) -> None:
    """Kidnapped: "David Balfour", named in one paragraph of the first chapter, was let go as a
    name of familiar words; "Davie" was made an entry meanwhile (no word of it is the full
    name's, so it was not its alias). Restored, the full name stayed a second entry beside
    "Davie". Now it goes to the one live entry named by a pet form of its given name."""
    corpus, db = imported_book(tmp_path, PET_FORM), tmp_path / "store.db"
    assert main(run_args(db, corpus)) == 0
    con = sqlite3.connect(db)
    try:
        entries = con.execute("SELECT id, term, status, merged_into FROM entry ORDER BY id")
        entries = {term: (status, merged) for _id, term, status, merged in entries.fetchall()}
        decided = con.execute(
            "SELECT d.decision, d.target_entry_id, d.reasoning FROM curator_decision d"
            " JOIN entry e ON e.id = d.entry_id WHERE e.term = 'David Balfour' ORDER BY d.id"
        ).fetchall()
        davie = con.execute("SELECT id FROM entry WHERE term = 'Davie'").fetchone()[0]
    finally:
        con.close()
    assert entries["Davie"] == ("confirmed", None), entries
    assert entries["David Balfour"] == ("merged", davie), entries
    assert [(kind, target) for kind, target, _ in decided] == [("REJECT", None), ("MERGE", davie)]
    assert "pet form" in decided[1][2]
