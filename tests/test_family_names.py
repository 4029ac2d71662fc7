"""Two people of one family are never one entry (the offline backend's name rules).

Each case is a fault seen on a Gutenberg novel run offline, with a short excerpt of its text:
a full name given to the entry of a title and surname someone else of the family bears, a pet
form made of a surname, a name run on into the next one, a woman's full name taken by a bare
surname."""

from __future__ import annotations

from terrarium_dagster.backends.name_forms import name_owner, pet_name_of, surname_shared
from terrarium_dagster.backends.offline import (
    CurateEntryView,
    KnownEntry,
    offline_curate,
)
from terrarium_dagster.terms.candidates import find_candidates
from tests.support.offline_scene import known_entry as _entry
from tests.support.offline_scene import offline_plan as _plan


def test_two_given_names_of_one_surname_in_a_scene_go_to_no_titled_entry() -> None:
    """Dubliners, "A Painful Case": the newspaper names "Emily Sinico" and her daughter "Mary
    Sinico" beside a known "Captain Sinico", her husband. Two given names of one surname are
    two of a family: neither is the captain's alias (each was)."""
    story = (
        "[post 101]\nThe deceased lady, Mrs. Emily Sinico, aged forty-three years, was killed.\n\n"
        "[post 102]\nMiss Mary Sinico said that of late her mother had been in the habit of "
        "going out at night. Emily Sinico was buried on Monday."
    )
    known = ["- [E3] Captain Sinico [confirmed]: A captain of a merchant boat."]
    aliases, _created = _plan(story, known)
    assert "E3" not in aliases, aliases
    # alone, a full name of the surname is still the titled one's ("Alexander Smollett")
    alone = "[post 101]\nEmily Sinico was buried on Monday. Emily Sinico was his wife."
    assert _plan(alone, known)[0] == {"E3": ["Emily Sinico"]}


def test_a_full_name_is_not_a_titled_entrys_when_another_bears_the_surname() -> None:
    """A Tale of Two Cities: "Lucie Manette" beside "Monsieur Manette" and "Miss Manette"
    (father and daughter): a surname a woman of the family is titled by is no man's alone, and
    a given name the lists do not know as a man's may be hers. Little Women's "Amy March"
    beside "Meg March" and "Aunt March": an aunt's surname is her brother's family's too."""
    father = _entry(35, "Monsieur Manette")
    daughter = _entry(30, "Miss Manette", "Manette")
    assert name_owner("Lucie Manette", [father])[0] == father
    assert name_owner("Lucie Manette", [father, daughter]) == (None, "")
    doctor = _entry(95, "Doctor Manette")
    assert name_owner("Lucie Manette", [doctor, daughter]) == (None, "")
    # a wife titled by the surname leaves it her husband's: "Ernest Defarge" is "Monsieur
    # Defarge"'s beside "Madame Defarge"
    husband, wife = _entry(47, "Monsieur Defarge"), _entry(60, "Madame Defarge")
    assert name_owner("Ernest Defarge", [husband, wife])[0] == husband
    aunt = _entry(25, "Aunt March")
    assert name_owner("Amy March", [aunt]) == (None, "")  # a woman's family title takes none
    assert surname_shared("amy march", aunt, [aunt, _entry(26, "Meg March")])
    assert not surname_shared("amy march", aunt, [aunt, _entry(26, "Amy March")])
    # the owner bears that given name already: another of the family changes nothing
    henry = _entry(7, "Sir Henry Baskerville")
    assert not surname_shared("henry baskerville", henry, [henry, _entry(8, "Hugo Baskerville")])


def test_a_pet_form_is_made_of_a_given_name_not_of_a_surname() -> None:
    """Little Women: "Laurie" (Theodore Laurence, the grandson) is no pet form of "Laurence",
    also "Mr. Laurence" (the grandfather, James Laurence), though it is of a given name: "Lizzy"
    of "Elizabeth", also "Miss Elizabeth"; "Toby" of "Tobiah"."""
    grandfather = _entry(31, "Laurence", "Mr. Laurence")
    assert pet_name_of("Laurie", [grandfather]) == []
    assert pet_name_of("Laurie", [_entry(31, "Laurence")]) == [_entry(31, "Laurence")]
    lizzy = _entry(4, "Elizabeth", "Miss Elizabeth")
    assert pet_name_of("Lizzy", [lizzy]) == [lizzy]
    # the scene: "Laurie" met beside the grandfather is a name of its own
    story = (
        '[post 101]\n"Mr. Laurence is a proud old gentleman," said Jo.\n\n'
        '[post 102]\n"Laurie is a nice boy," said Jo. Then Laurie and Meg walked home.'
    )
    aliases, created = _plan(story, ["- [E31] Laurence (aliases: Mr. Laurence) [confirmed]: X."])
    assert "Laurie" not in aliases.get("E31", []), aliases
    assert "Laurie" in created, created


def _view(entry_id: int, term: str, *similar: KnownEntry) -> CurateEntryView:
    return CurateEntryView(entry_id, term, similar=similar, source_posts=(1,), source_count=1)


def test_a_womans_full_name_is_not_a_bare_surnames_when_her_given_name_is_anothers() -> None:
    """Wuthering Heights, chapter 3: "Catherine Earnshaw, here and there varied to Catherine
    Heathcliff, and then again to Catherine Linton". "Catherine Linton" is as much Catherine
    Earnshaw's (a married name) as the family's "Linton", later Edgar's and his son's: it is
    merged into neither by one word. Without her, "Tobiah Leck" is still "Leck"'s."""
    linton = _entry(18, "Linton")
    catherine = _entry(17, "Catherine Earnshaw")
    assert offline_curate([_view(32, "Catherine Linton", catherine, linton)]) == []
    merged = offline_curate([_view(32, "Catherine Linton", linton)])
    assert [d["target_entry_id"] for d in merged] == ["E18"]
    leck = _entry(5, "Leck")
    assert [d["target_entry_id"] for d in offline_curate([_view(9, "Tobiah Leck", leck)])] == ["E5"]


def test_a_name_run_on_into_another_is_no_fuller_name_of_it() -> None:
    """Wuthering Heights: "And of Wuthering Heights Catherine was thinking as she listened":
    "Wuthering Heights Catherine" opens with the whole of "Wuthering Heights" and runs on; it is
    no fuller name of it (it was merged into it as one). A fuller name of a one-word entry
    still is ("Gimmerton Chapel" of "Gimmerton")."""
    heights = _entry(5, "Wuthering Heights", "Wuthering")
    assert offline_curate([_view(87, "Wuthering Heights Catherine", heights)]) == []
    gimmerton = _entry(40, "Gimmerton")
    chapel = offline_curate([_view(69, "Gimmerton Chapel", gimmerton)])
    assert [d["target_entry_id"] for d in chapel] == ["E40"]


def test_a_title_of_address_inside_a_run_of_capitals_opens_a_name() -> None:
    """Dubliners, "The Dead": "As the cab drove across O'Connell Bridge Miss O'Callaghan
    said:" is two names side by side, not "O'Connell Bridge Miss O'Callaghan"; an honorific
    before the title keeps it ("Little Miss Muffet")."""
    text = (
        "As the cab drove across O’Connell Bridge Miss O’Callaghan said: “They say you never "
        "cross O’Connell Bridge without seeing a white horse.” Miss O’Callaghan laughed."
    )
    terms = [c.term for c in find_candidates(text, [], min_score=0)]
    assert "Miss O’Callaghan" in terms and "O’Connell Bridge" in terms, terms
    assert not [t for t in terms if "Bridge Miss" in t], terms
    rhyme = "Little Miss Muffet sat on a tuffet. Little Miss Muffet ran away."
    assert "Little Miss Muffet" in [c.term for c in find_candidates(rhyme, [], min_score=0)]


def test_a_name_titled_for_the_other_sex_is_another_person() -> None:
    """The Importance of Being Earnest: "Lord Bracknell" beside a known "Lady Bracknell", and
    Dubliners: "Mr. Mooney" beside a known "Mooney" that has "Mrs. Mooney" among its names.
    Husband and wife share the surname, not the entry (each was taken as an alias)."""
    lady = _entry(7, "Lady Bracknell")
    mooney = _entry(8, "Mooney", "Mrs. Mooney")
    assert name_owner("Lord Bracknell", [lady]) == (None, "")
    assert name_owner("Mr. Mooney", [mooney]) == (None, "")
    # the same sex, or no title, still finds its owner
    assert name_owner("Mrs. Mooney", [mooney])[0] == mooney
    assert name_owner("Bracknell", [lady])[0] == lady
    assert name_owner("Captain Bracknell", [lady])[0] == lady

    story = (
        "[post 101]\nLADY BRACKNELL. Lord Bracknell would be highly displeased if he learned "
        "that that was the case."
    )
    aliases, _created = _plan(story, ["- [E7] Lady Bracknell [confirmed]: A lady."])
    assert "Lord Bracknell" not in aliases.get("E7", []), aliases


def test_one_given_name_under_two_surnames_is_two_people() -> None:
    """The Prince (with Machiavelli's Life of Castruccio): "Francesco Bussone", who had taken
    the alias "Francesco", absorbed "Francesco Boccansacchi" and "Francesco Brunelleschi" as
    its "fuller names". One given name under two surnames is two people; a titled form of the
    given name ("Messer Francesco") is still his, and so is a name with a title before it."""
    bussone = KnownEntry(191, "Francesco Bussone", ("Francesco",), "confirmed", "A condottiere.")
    other = CurateEntryView(379, "Francesco Boccansacchi", similar=(bussone,), source_count=1)
    assert not [d for d in offline_curate([other]) if d["decision"] == "MERGE"]

    messer = CurateEntryView(352, "Messer Francesco", similar=(bussone,), source_count=1)
    merged = [d for d in offline_curate([messer]) if d["decision"] == "MERGE"]
    assert [d["target_entry_id"] for d in merged] == ["E191"], merged

    tarkas = KnownEntry(2, "Tars Tarkas", ("Tars",), "confirmed", "A jeddak.")
    titled = CurateEntryView(9, "Jeddak Tars Tarkas", similar=(tarkas,), source_count=1)
    merged = [d for d in offline_curate([titled]) if d["decision"] == "MERGE"]
    assert [d["target_entry_id"] for d in merged] == ["E2"], merged


def test_a_full_name_of_given_names_met_in_the_scene_is_theirs_not_a_parents() -> None:
    """Peter Pan, chapter 3: "Wendy Moira Angela Darling," she replies, and the scene goes on
    with "Wendy Moira Angela". The full name was made an alias of the known "Mrs. Darling" by
    its surname (a woman's full name under a woman's title): it is the daughter's, the name
    met beside it, given names and all."""
    story = (
        "[post 101]\n“Wendy Moira Angela Darling,” she replied with some satisfaction. “What is "
        "your name?”\n\n"
        "[post 102]\n“I'm so sorry,” said Wendy Moira Angela. She was a lady."
    )
    known = ["- [E1] Mrs. Darling [confirmed]: A character; appears with Mr. Darling."]
    aliases, created = _plan(story, known)
    assert "E1" not in aliases, aliases
    assert "Wendy Moira Angela" in created, created
    # the known entry of those given names takes it, not the mother
    known.append("- [E16] Wendy Moira Angela [confirmed]: A character.")
    aliases, created = _plan(story, known)
    assert aliases == {"E16": ["Wendy Moira Angela Darling"]}, aliases
    assert created == [], created
    # given names let go as met in passing ("George Edward", for "George Edward Challenger")
    # take nothing: the titled entry keeps it
    known = [
        "- [E1] Mrs. Darling [confirmed]: A character; appears with Mr. Darling.",
        "- [E16] Wendy Moira Angela [rejected]: A name.",
    ]
    aliases, _created = _plan(story, known)
    assert aliases == {"E1": ["Wendy Moira Angela Darling"]}, aliases
    # alone, with no one named by its given names, it stays the titled entry's as before
    known = ["- [E1] Mrs. Darling [confirmed]: A character; appears with Mr. Darling."]
    aliases, _created = _plan("[post 101]\n“Wendy Moira Angela Darling,” she replied.", known)
    assert aliases == {"E1": ["Wendy Moira Angela Darling"]}, aliases
