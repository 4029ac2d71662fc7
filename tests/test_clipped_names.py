"""A name clipped short is the name it was clipped from (the offline annotator and curator).

*Peter Pan* calls Tinker Bell "Tink" from chapter 3 on: a clipped first word, not a pet form
with an ending ("Davie" of "David"), so the rules made it an entry of its own beside
"Tinker Bell", a second entry for one fairy."""

from __future__ import annotations

from terrarium_dagster.backends.name_forms import name_owner
from tests.support.offline_scene import known_entry as _entry
from tests.support.offline_scene import offline_plan


def _aliases(story: str, known: list[str]) -> dict[str, list[str]]:
    """The aliases the offline annotator adds to known entries in one scene."""
    return offline_plan(story, known)[0]


def test_a_clipped_first_word_is_the_name_it_opens() -> None:
    story = (
        "[post 101]\n“Tink,” said Peter, “do you know where they put my shadow?”\n\n"
        "[post 102]\nTink answered with a tinkle of bells, and Tink flew to the chest."
    )
    known = ["- [E15] Tinker Bell [confirmed]: A fairy; appears with Peter Pan."]
    assert _aliases(story, known) == {"E15": ["Tink"]}


def test_what_a_clipped_form_is_not() -> None:
    """Not the opening of a one-word name ("Bing" may be someone of its own beside "Bingley"),
    nor of a word English uses more than the whole ("Tinker" is no "Tinkerton"), nor when two
    names open so."""
    assert name_owner("Bing", [_entry(1, "Bingley")]) == (None, "")
    assert name_owner("Tinker", [_entry(1, "Tinkerton Bell")])[0] is None
    assert name_owner("Tink", [_entry(1, "Tinker Bell"), _entry(2, "Tinker Smith")]) == (
        None,
        "",
    )
    owner, how = name_owner("Tink", [_entry(1, "Tinker Bell")])
    assert owner is not None and owner.entry_id == 1 and "pet name" in how
