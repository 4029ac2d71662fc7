"""The candidate-term detector: what it finds, what it filters, and how it reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from terrarium_dagster.terms.candidates import Candidate, calendar_names, find_candidates
from terrarium_dagster.terms.english import is_common_word, is_descriptive_compound
from terrarium_dagster.terms.text_search import (
    cut_at_words,
    find_term,
    mask_markup,
    sentence_at,
    sentences_with,
)

SCENE = """[post 101]
The wind off the Greywater bit at your cloak as you reached the gates of the Lantern Court.
Keth'ra waited there, her hands stained with ash.
"You are late," said Keth'ra. "The ember-tithe is due at dusk, and Lord Varen does not forgive."
You remember what the old women called it: 'the hollowing', the night the lamps go dark.

[post 102]
Inside, the Order of the Ember kept their vigil. Varen sat on a throne of glimmerstone, and the
glimmerstone hummed beneath him. On Tuesday, Mr Holt brought the ember-tithe in a copper bowl.
Suddenly the doors opened. However, nobody moved.
[X] Pay the ember-tithe
[ ] Refuse and flee to the Greywater
>>12345 I agree with Anonymous, QM.
"""

# Hand-written paragraphs with the terms a reader would look up.
PARAGRAPHS: list[tuple[str, set[str]]] = [
    (
        SCENE,
        {
            "greywater",
            "lantern court",
            "keth'ra",
            "ember tithe",
            "lord varen",
            "hollowing",
            "order of the ember",
            "glimmerstone",
        },
    ),
    (
        """The caravan left Ostrava at dawn. Captain Ysolde rode ahead with the Sablecoats, and
the mule-drivers sang the old road-songs. By noon they reached the Brine Gate, where the
toll-keepers of Ostrava demanded the salt-writ. Ysolde showed them the salt-writ, sealed in
green wax by the Tallow Prince himself. "The Prince's seal," the keeper muttered. "Pass."
Monday came and went. In March the Sablecoats would ride again.""",
        {
            "ostrava",
            "captain ysolde",
            "sablecoats",
            "brine gate",
            "salt writ",
            "tallow prince",
        },
    ),
    (
        """Mirelle knelt by the wellspring and whispered the thrennic words. The water answered:
a pale light, the sign of the Quiet Ones. Every villager of Hollowmere knew the thrennic
rite was forbidden, and still Mirelle came every night. Tonight, Brother Anselm watched her
from the chapel door. He said nothing. When the light faded, Mirelle walked home.""",
        {"mirelle", "thrennic", "quiet ones", "hollowmere", "brother anselm"},
    ),
]


def _keys(candidates: list[Candidate]) -> set[str]:
    from terrarium_dagster.store.normalize import normalize_term

    return {normalize_term(name) for c in candidates for name in c.names}


def _terms(candidates: list[Candidate]) -> set[str]:
    from terrarium_dagster.store.normalize import normalize_term

    return {normalize_term(c.term) for c in candidates}


def test_precision_and_recall_on_hand_written_paragraphs() -> None:
    found_total = relevant_total = gold_total = proposed_total = 0
    for text, gold in PARAGRAPHS:
        candidates = find_candidates(text)
        names = _keys(candidates)
        hits = {term for term in gold if term in names}
        relevant = [c for c in candidates if _keys([c]) & gold]
        found_total += len(hits)
        gold_total += len(gold)
        relevant_total += len(relevant)
        proposed_total += len(candidates)
    recall = found_total / gold_total
    precision = relevant_total / proposed_total
    print(f"candidates: recall {recall:.2f}, precision {precision:.2f}")
    assert recall >= 0.85
    assert precision >= 0.8


def test_names_mid_sentence_titles_and_multiword_names_are_found() -> None:
    candidates = {c.term: c for c in find_candidates(SCENE)}
    assert candidates["Lantern Court"].kind_hint == "title"
    assert candidates["Order of the Ember"].kind_hint == "title"
    assert candidates["Greywater"].kind_hint == "title"
    assert "Keth'ra" in candidates


def test_a_short_name_inside_one_longer_name_becomes_its_variant() -> None:
    candidates = {c.term: c for c in find_candidates(SCENE)}
    varen = candidates["Lord Varen"]
    assert varen.variants == ("Varen",)
    assert varen.occurrences == 2  # "Lord Varen" once and "Varen" once
    assert "Varen" not in candidates


def test_quoted_coinages_and_hyphenated_compounds_are_found() -> None:
    candidates = {c.term: c for c in find_candidates(SCENE)}
    assert candidates["hollowing"].kind_hint == "coinage"
    assert candidates["ember-tithe"].kind_hint == "compound"
    assert candidates["ember-tithe"].occurrences == 3  # the vote line is masked out


def test_repeated_unusual_lowercase_word_is_found_and_a_single_one_is_not() -> None:
    candidates = {c.term for c in find_candidates(SCENE)}
    assert "glimmerstone" in candidates
    assert "vigil" not in candidates  # once only
    assert "stained" not in candidates


def test_usual_false_positives_are_filtered() -> None:
    terms = {t.casefold() for t in _terms(find_candidates(SCENE, min_score=0.0))}
    for noise in ("i", "mr", "tuesday", "anonymous", "qm", "suddenly", "however", "inside"):
        assert noise not in terms, noise
    assert "x" not in terms
    assert "you" not in terms and "the" not in terms
    assert not any(term.isdigit() or term.startswith("post") for term in terms)


def test_months_days_and_sentence_initial_common_words_are_not_names() -> None:
    text = "Monday came. In March we rode. Nobody cared. Then Varen spoke. Then Varen left."
    terms = {c.term for c in find_candidates(text)}
    assert terms == {"Varen"}


def test_a_plays_stage_direction_opens_no_name() -> None:
    """The Importance of Being Earnest: "[Enter Lane.]" made "Enter Lane" an entry (a place)."""
    text = "[Enter Lane.]\n\nLane. Mr. Ernest Worthing.\n\n[Exit Lane.] Algernon smiles."
    terms = {c.term for c in find_candidates(text, min_score=0.0)}
    assert "Enter Lane" not in terms and "Exit Lane" not in terms


def test_an_old_books_interjections_are_no_names() -> None:
    """Frankenstein's "Begone!" was an entry ("A name in the story"); Moby-Dick's "Avast" and
    "Hearken" too: a call that opens a line of speech names nothing."""
    text = (
        '"Begone! I will not hear you," said Victor. "Avast there, Flask!" cried Stubb. '
        '"Hearken, Starbuck." Begone, vile insect! Avast heaving, Stubb.'
    )
    terms = {c.term for c in find_candidates(text, min_score=0.0)}
    assert not terms & {"Begone", "Avast", "Hearken"}, terms
    assert {"Stubb", "Starbuck"} <= terms, terms


def test_a_month_after_the_opens_a_name_of_an_english_word() -> None:
    """ "the March Hare" and "the May Queen" (Alice's Adventures in Wonderland) are names; a month
    or day before a name of its own ("on the Monday Varen came") is not part of it."""
    text = "Then the March Hare spoke. The May Queen smiled. On the Monday Varen came."
    assert [c.term for c in find_candidates(text)] == ["March Hare", "May Queen", "Varen"]


def test_a_day_the_text_writes_as_a_name_is_a_name() -> None:
    """Robinson Crusoe names his man after the day he saved him: "Friday", written as a name
    (no "on", "last", "morning" or date beside it) is proposed; where the text also writes the
    day as a time as often, it is not; a day that only opens sentences never is."""
    crusoe = (
        "I let him know his name should be Friday, which was the day I saved his life. "
        "I took Friday to my castle, and the father of Friday wept; so that Friday could "
        "no way come at me. Friday's father sat down."
    )
    assert calendar_names(crusoe) == {"friday"}
    assert "Friday" in [c.term for c in find_candidates(crusoe)]
    times = (
        "He came on Friday and left last Friday; I saw Friday's list and told Friday, and "
        "Friday morning we sailed till Monday."
    )
    assert calendar_names(times) == frozenset()
    assert "Friday" not in [c.term for c in find_candidates(times)]
    # a time beside the day, however it is written: "to-morrow, Monday", "(Sunday)", a date
    dated = (
        "It will be for to-morrow, Monday. Throughout this day (Sunday) he waited, and on "
        "Sunday, October 20th, and Sunday 3rd, he read."
    )
    assert calendar_names(dated) == frozenset()


def test_a_name_after_a_title_written_short_opens_no_sentence() -> None:
    """ "Mr." ends no sentence: "Kemp" after it is a name seen mid-sentence, "Edward Hyde" keeps
    its given name; a surname that is an English word keeps its title, as written ("Mrs. Hall",
    "Mr Hall": The Invisible Man's landlady and her husband, two people). A surname said once
    after a title is a name in passing ("Dr. Denman")."""
    text = (
        'Then Mr. Kemp came. It was Mr. Edward Hyde. "Go," said Mrs. Hall to Mr Hall\'s dog. '
        "Mr. Kemp ran, and Mrs. Hall and Mr Hall followed, as Dr. Denman once said."
    )
    terms = {c.term: c.variants for c in find_candidates(text)}
    assert terms == {
        "Edward Hyde": (), "Kemp": ("Mr. Kemp",), "Mrs. Hall": (), "Mr Hall": (),
    }  # fmt: skip


def test_a_sentence_initial_common_word_counts_when_also_seen_mid_sentence() -> None:
    text = "Armory was quiet. We sailed to Armory at dusk. The gulls cried."
    assert [c.term for c in find_candidates(text)] == ["Armory"]


def test_a_name_that_is_an_ordinary_word_by_frequency_is_not_proposed() -> None:
    # "Harbor" and "Kentucky" are frequent English words or real-world names: no story term.
    text = "Harbor was quiet. We sailed to Harbor at dusk, then on to Kentucky."
    assert [c.term for c in find_candidates(text)] == []


def test_a_sentence_initial_apostrophe_name_counts_even_alone() -> None:
    assert [c.term for c in find_candidates("Keth'ra nods slowly.")] == ["Keth'ra"]


def test_contractions_are_not_names() -> None:
    text = "Don't go. I'm here, and it's late. You'll see. Won't you?"
    assert find_candidates(text, min_score=0.0) == []


def test_known_terms_and_aliases_are_excluded_after_normalization() -> None:
    known = ["the lantern court", "KETH’RA", "Varen", "Ember Tithe", "Order of the Ember"]
    terms = {c.term for c in find_candidates(SCENE, known)}
    assert not terms & {"Lantern Court", "Keth'ra", "Lord Varen", "ember-tithe"}
    assert "Order of the Ember" not in terms
    assert "Greywater" in terms


def test_a_word_of_a_known_multiword_term_is_not_proposed_alone() -> None:
    text = "The Iron Court met. Later the Court adjourned, and Varen left the Court."
    terms = {c.term for c in find_candidates(text, ["Iron Court"])}
    assert "Court" not in terms
    assert "Varen" in terms


def test_results_are_deterministic_and_ordered_by_score_then_position() -> None:
    first = find_candidates(SCENE)
    assert first == find_candidates(SCENE)
    keys = [(-c.score, c.first_offset) for c in first]
    assert keys == sorted(keys)
    assert all(SCENE[c.first_offset :].casefold().startswith(c.term[:3].casefold()) for c in first)


def test_min_score_and_limit_trim_the_list() -> None:
    scene = SCENE + "A thrummet hung by the door.\n"  # an unusual word seen once: a low score
    everything = find_candidates(scene, min_score=0.0)
    default = find_candidates(scene)
    strict = find_candidates(scene, min_score=2.0)
    assert len(everything) > len(default) > len(strict) >= 1
    assert find_candidates(scene, limit=2) == default[:2]


def test_english_words_descriptions_and_real_world_words_are_not_candidates() -> None:
    text = (
        "Evidently the chieftain had seen my armlet. Grasping my rifle, I crossed the enclosure "
        "toward the paint-streaked, panic-stricken riders and the semi-barbaric, vise-like grip "
        "of the one-quarter olive-green men. Captain James K. Powell of Richmond rode with me; "
        'then Tars Tarkas said "Sak!" and I did sak. The Tharks of Barsoom came. A Thark waited. '
        "Will said the will was read. Evidently it was. The enclosure held. The Virginian "
        "climbed the topmost of the ice-clad hills with the Chieftains of Thark."
    )
    terms = {candidate.term for candidate in find_candidates(text, min_score=0.0)}
    assert {"Captain James K. Powell of Richmond", "Tars Tarkas", "Thark"} <= terms, terms
    unwanted = {
        "Evidently", "chieftain", "Grasping", "enclosure", "paint-streaked", "panic-stricken",
        "semi-barbaric", "vise-like", "one-quarter", "olive-green", "Sak", "Tharks of Barsoom",
        "Will", "Captain James K", "Virginian", "topmost", "ice-clad", "Chieftains of Thark",
    }  # fmt: skip
    assert not terms & unwanted, terms & unwanted


def test_empty_and_markup_only_texts_give_nothing() -> None:
    assert find_candidates("") == []
    assert find_candidates("[post 5]\n>>123\n[X] [ ]\nhttps://example.org/Foo") == []


def test_mask_markup_keeps_offsets() -> None:
    text = "[post 7]\nSee >>123 and [X] Varen"
    masked = mask_markup(text)
    assert len(masked) == len(text)
    assert masked.index("Varen") == text.index("Varen")
    assert "123" not in masked and "post" not in masked


def test_find_term_matches_whole_names_with_spelling_variants() -> None:
    text = "Keth'ra's blade. The Ember Tithe, the ember–tithe and embertithe. Kethra."
    assert len(find_term(text, "Keth'ra")) == 1  # the possessive counts, "Kethra" does not
    assert find_term(text, "Keth") == []  # never inside a longer name
    assert len(find_term(text, "ember-tithe")) == 2
    assert len(find_term(text, "the Ember Tithe")) == 2
    assert find_term(text, "") == []


def test_sentences_with_returns_clean_sentences_mentioning_the_term() -> None:
    sentences = sentences_with(SCENE, "ember tithe")
    assert sentences[0] == '"The ember-tithe is due at dusk, and Lord Varen does not forgive."'
    assert any(s.startswith("On Tuesday, Mr Holt") for s in sentences)
    assert all(">>" not in s and "[X]" not in s for s in sentences)
    assert sentences_with(SCENE, "ember tithe", limit=1) == sentences[:1]
    assert sentences_with(SCENE, "nonexistent") == []


def test_sentence_at_cuts_long_sentences_around_the_offset_at_word_boundaries() -> None:
    long = "word " * 100 + "Varen " + "word " * 100 + "."
    quote = sentence_at(long, long.index("Varen"), 80)
    assert len(quote) <= 80 and "Varen" in quote
    # A quote is verbatim: whole words of the sentence, nothing added ("…ugh the gap, ... over
    # the jar's mout…" was stored, and the post page's highlight found nothing).
    prose = " ".join(f"lantern{i}" for i in range(60)) + " Varen " + "gate " * 60 + "."
    for width in (80, 81, 85, 97, 120):
        quote = sentence_at(prose, prose.index("Varen"), width)
        assert "…" not in quote and "Varen" in quote and len(quote) <= width, quote
        assert f" {quote} " in f" {prose} ", quote  # starts and ends on a word's edge
    assert cut_at_words("alpha bravo charlie delta", 2, 20) == "bravo charlie"
    assert sentence_at(SCENE, SCENE.index("Keth'ra waited"), 240) == (
        "Keth'ra waited there, her hands stained with ash."
    )


def test_common_words_and_their_inflections_are_recognised() -> None:
    for word in ("lantern", "walked", "hollowing", "carried", "stopped", "happily", "Tuesday"):
        assert is_common_word(word), word
    for word in ("glimmerstone", "thrennic", "keth'ra", "ostrava"):
        assert not is_common_word(word), word


def test_a_plural_counts_for_its_singular_which_becomes_the_term() -> None:
    text = "The driftlings came at dusk. One driftling stayed. Driftlings never sleep."
    (candidate,) = find_candidates(text)
    assert candidate.term == "driftling"
    assert candidate.occurrences == 3
    assert "driftlings" in candidate.variants


def test_a_capitalised_plural_offers_its_singular_as_a_variant() -> None:
    (candidate,) = find_candidates("They called the rite the Unwickings, and feared it.")
    assert candidate.term == "Unwickings"
    assert candidate.variants == ("Unwicking",)


def test_vocatives_and_lone_titles_are_not_names() -> None:
    text = '"Old tallow, Captain," you say. "Yes, Warden." The Captain nods. Mr Holt left.'
    assert {c.term for c in find_candidates(text)} == {"Holt"}


def test_a_word_opening_a_sentence_is_dropped_before_a_name() -> None:
    text = "You nod to Quill.\n[ ] Ask Quill to come with you.\nAcross Saxirn the wind blew."
    terms = {c.term for c in find_candidates(text)}
    assert terms == {"Quill", "Saxirn"}


def test_hyphenated_numbers_and_common_compounds_are_not_terms() -> None:
    text = '"Forty-one lamps," he said. Twenty-two more jars. A well-known road.'
    assert find_candidates(text) == []


def test_two_names_side_by_side_are_split_when_each_is_seen_alone() -> None:
    text = "Saxirn spoke to Brondeep. Later Saxirn Brondeep walked. Then Brondeep slept."
    terms = {c.term for c in find_candidates(text)}
    assert terms == {"Saxirn", "Brondeep"}


def test_known_words_can_be_kept_for_the_caller_to_decide() -> None:
    text = "Quill waited by the door. You nod to Quill."
    assert find_candidates(text, ["Ambrose Quill"]) == []
    kept = find_candidates(text, ["Ambrose Quill"], known_words=False)
    assert [c.term for c in kept] == ["Quill"]


def test_detector_recall_on_the_sample_quest(sample_db: Path) -> None:
    """Every QM story scene of the bundled sample through the detector, against gold.yaml."""
    from terrarium_dagster.corpus.reader import Corpus
    from terrarium_dagster.corpus.sample import gold_terms
    from terrarium_dagster.store.normalize import normalize_term

    found: set[str] = set()
    proposed: set[str] = set()
    with Corpus(sample_db) as corpus:
        for scene in corpus.iter_scenes():
            for candidate in find_candidates(scene.text):
                found.update(normalize_term(name) for name in candidate.names)
                proposed.add(normalize_term(candidate.term))
    gold = gold_terms()
    hits = [g for g in gold if any(normalize_term(name) in found for name in g.names)]
    gold_names = {normalize_term(name) for g in gold for name in g.names}
    precision = len(proposed & gold_names) / len(proposed)
    missed = [g.term for g in gold if g not in hits]
    print(
        f"sample: recall {len(hits)}/{len(gold)}, term precision {precision:.2f}, missed {missed}"
    )
    assert len(hits) / len(gold) >= 0.7, missed
    assert precision >= 0.7


# The Time Machine, chapter I (H. G. Wells, PG #35; tests/data/books/time-machine-pandoc.epub):
# sentences of it, the last one abridged.
_TIME_MACHINE = (
    "“Really this is what is meant by the Fourth Dimension, though some people who talk about the "
    "Fourth Dimension do not know they mean it. It is only another way of looking at Time.” "
    "“Well, I do not mind telling you I have been at work upon this geometry of Four Dimensions "
    "for some time. All these are evidently sections, as it were, Three-Dimensional "
    "representations of his Four-Dimensioned being, which is a fixed and unalterable thing.” "
    "“But some philosophical people have even tried to construct a Four-Dimensional geometry.”"
)


def test_forms_of_one_idea_become_one_candidate_on_real_prose() -> None:
    forms = {"Fourth Dimension", "Four Dimensions", "Four-Dimensioned", "Four-Dimensional"}
    owners = [c for c in find_candidates(_TIME_MACHINE) if set(c.names) & forms]
    assert len(owners) == 1, owners
    assert set(owners[0].names) == forms
    assert "Three-Dimensional" in {c.term for c in find_candidates(_TIME_MACHINE)}


def test_another_form_of_a_known_name_is_no_new_candidate() -> None:
    terms = {c.term for c in find_candidates(_TIME_MACHINE, ["Four Dimensions"])}
    assert not terms & {"Fourth Dimension", "Four-Dimensioned", "Four-Dimensional"}, terms


def test_a_plural_that_took_a_names_silent_e_with_its_es_is_no_new_candidate() -> None:
    # Moby-Dick (PG #2701): "Sperm Whales" was a second entry beside a known "Sperm Whale", as
    # the plural's "es" folded to "whal" and the singular stayed "whale"
    text = (
        "Now the Sperm Whales of the Pacific swam in schools, and the Pequod's men watched the "
        "Sperm Whales blow; the Grampuses went by in pairs."
    )
    terms = {c.term for c in find_candidates(text, ["Sperm Whale", "Grampus"])}
    assert not terms & {"Sperm Whales", "Grampuses"}, terms
    assert "Pequod" in terms


def test_an_english_word_ending_in_s_is_not_cut_to_a_singular() -> None:
    text = (
        "There was a minute’s pause perhaps. He was waiting for the second, perhaps still "
        "stranger story; perhaps he never returned. The driftlings came, and driftlings went."
    )
    terms = {c.term: c for c in find_candidates(text, min_score=0.5)}
    assert "perhap" not in terms and "perhaps" not in terms, terms
    assert "driftling" in terms  # a coinage's plural still counts for its singular


@pytest.mark.parametrize(
    "term",
    ["blossom-laden", "dining-hall", "latter-day", "nineteenth-century", "clean-shaven",
     "V-shaped", "hiding-place"],
)  # fmt: skip
def test_hyphenated_descriptions_on_real_novels_are_descriptions(term: str) -> None:
    assert is_descriptive_compound(term), term


@pytest.mark.parametrize("term", ["heart-lamp", "ember-tithe", "tithe-jar", "smoke-ledger"])
def test_hyphenated_coinages_are_not_descriptions(term: str) -> None:
    assert not is_descriptive_compound(term), term


def test_a_title_and_surname_is_a_variant_of_the_longer_titled_name() -> None:
    text = "Captain Ismay Rook stood at the gate. Later Captain Rook said nothing to Pim."
    found = {c.term: c for c in find_candidates(text)}
    assert "Captain Rook" not in found and "Captain Rook" in found["Captain Ismay Rook"].variants
    later = {c.term for c in find_candidates("Captain Rook waited.", ["Captain Ismay Rook"])}
    assert "Captain Rook" not in later, later
    # an adjective is no title: "Black Dog" stays its own name beside "Black Hill Dog"
    assert {c.term for c in find_candidates("Then Black Dog came. Black Hill Dog ran.")} >= {
        "Black Dog"
    }


@pytest.mark.parametrize("term", ["eighty-seven", "south-south-east", "hand-wrought"])
def test_numbers_bearings_and_participles_are_descriptions(term: str) -> None:
    assert is_descriptive_compound(term), term


def test_a_story_machine_named_by_its_use_stays_a_term() -> None:
    # The War of the Worlds, book II, chapters I and II (H. G. Wells, PG #36; the Gutenberg text)
    text = (
        "Then suddenly, as we approached Kew, came a number of people running, and the "
        "upperworks of a Martian fighting-machine loomed in sight over the housetops, not a "
        "hundred yards away from us. No sooner had the curate overtaken me than we saw either "
        "the fighting-machine we had seen before or another, far away across the meadows in the "
        "direction of Kew Lodge. At first, I say, the handling-machine did not impress me as a "
        "machine, but as a crablike creature with a glittering integument."
    )
    assert "fighting-machine" in {c.term for c in find_candidates(text)}
    assert not is_descriptive_compound("fighting-machine")
    assert not is_descriptive_compound("handling-machine")


def test_quoted_speech_is_no_coinage() -> None:
    # Treasure Island and The War of the Worlds (PG #120, #36), sentences abridged
    text = (
        "“Well, then,” said he, “you hold the basin”; and with that he took his cane. "
        "The motions of the Martians were sluggish: “crawling,” “creeping painfully”—such "
        "expressions occurred. Men pretended to admire him, calling him a “true sea-dog”."
    )
    terms = {c.term for c in find_candidates(text, min_score=0.5)}
    assert not terms & {"you hold the basin", "creeping painfully"}, terms
    assert "true sea-dog" in terms, terms  # a quoted name for a man, no speech


def test_speech_opens_a_sentence_and_a_quoted_clause_is_no_coinage() -> None:
    """A word after an opening quote opens a sentence ("For Helium!", "Off Palm Key he got
    itt"), and a quoted clause about a name is speech ("Billy Bones his fancy")."""
    text = (
        'I cried aloud, "For Helium!" And then: “Off Palm Key he got itt,” and “Billy Bones '
        "his fancy”. Later Helium rose, and Palm Key, and Billy Bones."
    )
    terms = {candidate.term for candidate in find_candidates(text)}
    assert {"Helium", "Palm Key", "Billy Bones"} <= terms, terms
    assert not terms & {"For Helium", "Off Palm Key", "Billy Bones his fancy"}, terms


def test_a_term_in_emphasis_underscores_is_found() -> None:
    text = "the ram _Thunder Child_. It was the only warship in sight"
    assert find_term(text, "Thunder Child") == [(9, 22)]
    assert find_term("Thunder Childs", "Thunder Child") == []


def test_a_bare_mister_and_the_er_people_of_a_real_place_are_not_candidates() -> None:
    """ "Mister" alone is a form of address, as "Sir" is ("Why, it's Mister--Mister?"); a word
    English does not know made of a real place and "-er" is that place's people ("the
    Irelander"); a title before a name and the people of a place that is the story's stay."""
    text = (
        '"Why, it\'s Mister--Mister?" said he. Mister Prendick nodded. The Irelander and two '
        "Irelanders sailed with the Upper-worlders."
    )
    terms = {candidate.term for candidate in find_candidates(text, min_score=0.0)}
    assert {"Mister Prendick", "Upper-worlders"} <= terms, terms
    assert not terms & {"Mister", "Irelander", "Irelanders"}, terms


def test_a_name_with_an_apostrophe_of_its_own_is_no_word_spelled_as_spoken() -> None:
    """A word with an apostrophe the text capitalises mid-sentence and never writes in
    lowercase is a name (The Island of Doctor Moreau's "M'ling", which reads as "modeling" with
    letters dropped); an English word spelled as spoken stays out (Treasure Island)."""
    moreau = (
        "M'ling, the black-faced man, Montgomery's attendant, the first of the Beast Folk I had "
        "encountered, did not live with the others. I looked past my interlocutors. Up the "
        "beach were M'ling, Montgomery's attendant, and the Sayer of the Law."
    )
    treasure = (
        "a precious sight more confidence--a precious sight, mind that--in a gen'leman born "
        "than in these gen'leman of fortune, having been one hisself. Gen'leman, he says."
    )
    assert "M'ling" in {candidate.term for candidate in find_candidates(moreau)}
    found = {candidate.term.casefold() for candidate in find_candidates(treasure, min_score=0.0)}
    assert "gen'leman" not in found, found


def test_a_sentence_goes_on_past_a_titles_abbreviation_and_an_initial() -> None:
    """Jekyll and Hyde's sources were '"Enfield."' (from '... continued Mr. Enfield.') and
    '... to announce that Dr.': a stop after "Mr." or "Dr." ended the sentence."""
    text = (
        '"Did you ever remark that door?" continued Mr. Enfield. Poole presently returned to '
        "announce that Dr. Jekyll was gone out. George B. Hale said nothing."
    )
    assert sentence_at(text, text.index("Enfield")) == "continued Mr. Enfield."
    assert sentence_at(text, text.index("Jekyll")) == (
        "Poole presently returned to announce that Dr. Jekyll was gone out."
    )
    assert sentence_at(text, text.index("Hale")) == "George B. Hale said nothing."
    assert sentences_with("It was Amr. Then Amr left.", "Amr") == ["It was Amr.", "Then Amr left."]


def test_a_hyphen_set_as_a_dash_after_a_name_ends_the_name() -> None:
    """Evelina's printing sets its dashes as hyphens: "Lord Orville-I own", "Miss Anville-you
    are kind" made names of "Lord Orville-I" and "Anville-you" beside "Lord Orville". A name's
    own hyphen still joins it ("Mary-Ann", "Stratford-upon-Avon")."""
    text = (
        'I saw Lord Orville-I own I was pleased. "Indeed," said Lord Orville, "Miss '
        'Anville-you are kind." Lord Orville bowed. Then Lord Orville-but no matter. Mary-Ann '
        "came from Stratford-upon-Avon, and Mary-Ann stayed."
    )
    terms = {candidate.term for candidate in find_candidates(text)}
    assert {"Lord Orville", "Mary-Ann", "Stratford-upon-Avon"} <= terms
    assert not {term for term in terms if term.endswith(("-I", "-you", "-but"))}, terms


def test_an_older_books_verb_of_saying_before_the_speaker_is_no_part_of_a_name() -> None:
    """Siddhartha's offline glossary had "Quoth Siddhartha" (an alias of Siddhartha) and "Quoth
    Govinda": the verb is set before the speaker, as "said" is after it."""
    text = (
        'Quoth Siddhartha: "I am going." Siddhartha smiled. Quoth Govinda: "Yes." Govinda '
        "wept. Siddhartha left."
    )
    terms = {candidate.term for candidate in find_candidates(text)}
    assert {"Siddhartha", "Govinda"} <= terms
    assert not any(term.startswith("Quoth") for term in terms), terms
