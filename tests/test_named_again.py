"""A name the curator rejected as mentioned in passing comes back when the story goes on using it.

A generated two-chapter story names "John Silver" (a phrase of everyday English words) once in
its first chapter, so the offline curator rejects it as a name in passing; the next chapter names
him in one post after another. The curator is shown the rejected entry again with the posts that
name it and CONFIRMs it: a revision and a curator decision restore it. The same run interrupted
after its first scene and resumed writes the same store.
"""

from __future__ import annotations

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
