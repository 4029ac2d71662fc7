"""In a novel, the offline curator lets go a lowercase word its characters only say (a dialect
word: `spoken_reason`) and a lowercase word English does not know that is two familiar words
run together (`closed_compound_reason`); a quest's words, and a novel's own words that its
narration uses or that are only ever quoted alone, are kept. The sentences are the novels'."""

from __future__ import annotations

import pytest

from terrarium_dagster.backends.curate_view import CurateEntryView, parse_curate_message
from terrarium_dagster.backends.offline_curator import offline_curate
from terrarium_dagster.backends.term_reasons import closed_compound_reason, spoken_reason
from terrarium_dagster.curation.review_prompt import BOOK_LABEL, QM_LABEL

KEEPIT = (
    "“Promised it to your father. O, naething legal, ye understand; just gentlemen daffing at "
    "their wine. Well, I keepit that bit money separate--it was a great expense.”",
    "“O, keepit, keepit!” wailed my uncle. “We’ll have nae bloodshed, if you please.”",
    "“I’ll have him keepit, though,” returned my uncle. “I never had naething to do with "
    "onything morally wrong.”",
)
WHATEFFER = (
    "talking English. Listening very close, I caught the word “whateffer” several times; but "
    "all the rest was Gaelic and might have been Greek and Hebrew for me.",
    "“Gentlemen,” said he, “I will have been thinking of a very different matter, whateffer. "
    "Here are my pipes.”",
)
THOAT = (
    "I could see the thoat upon which he rode; a great beast, ten feet high at the shoulder.",
    "“Bring me my thoat,” he said.",
)
SAK = (
    "Tars Tarkas repeated the word “sak” a number of times.",
    "he said, “sak!” I saw what they were after, and gathering myself I sprang.",
)


def _view(term: str, evidence: tuple[str, ...], label: str = BOOK_LABEL, **kw: object):
    return CurateEntryView(
        entry_id=12,
        term=term,
        definition=str(kw.get("definition", "A term of the story.")),
        source_posts=(40, 52),
        source_count=2,
        evidence=evidence,
        story_label=label,
    )


@pytest.mark.parametrize(
    ("term", "evidence", "spoken"),
    [
        ("keepit", KEEPIT, True),  # Kidnapped: said among other words twice, cried once
        ("whateffer", WHATEFFER, False),  # quoted alone once (neither), said once: too thin
        ("thoat", THOAT, False),  # A Princess of Mars: the narration's word
        ("sak", SAK, False),  # only ever quoted or cried alone: a word of the story's language
        ("dinnae", ("Dinnae fash, he said, and went on.",) * 2, False),  # no quotation marks
    ],
)
def test_a_novels_dialect_word(term: str, evidence: tuple[str, ...], spoken: bool) -> None:
    assert (spoken_reason(_view(term, evidence)) is not None) is spoken


def test_a_spoken_word_with_something_said_of_it_or_in_a_quest_stays() -> None:
    assert spoken_reason(_view("keepit", KEEPIT, QM_LABEL)) is None
    described = _view("keepit", KEEPIT, definition="A promise kept by the laird of Shaws.")
    assert spoken_reason(described) is None


def test_an_apostrophe_is_no_quotation_mark() -> None:
    """“don’t” and “Alan’s” inside speech do not close it; a possessive in narration does not
    open one."""
    said = ("“Alan’s man canna say it, and I don’t ken the collop,” said he.",) * 2
    assert spoken_reason(_view("collop", said)) is not None
    told = ("Alan’s collop was on the table, and I ate it.",) * 2
    assert spoken_reason(_view("collop", told)) is None


@pytest.mark.parametrize(
    ("term", "closed"),
    [
        ("gasfitter", True),  # The Adventures of Sherlock Holmes: "gas" and "fitter"
        ("stoneyard", True),  # Kidnapped
        ("jurymen", True),  # Alice's Adventures in Wonderland
        ("foemen", True),  # The Gods of Mars
        ("thoat", False),
        ("holluschickie", False),  # The Jungle Book: the seals' own word
        ("banth", False),
    ],
)
def test_a_novels_closed_compound(term: str, closed: bool) -> None:
    view = _view(term, (f"The {term} came in, and then the {term} went out.",))
    assert (closed_compound_reason(view) is not None) is closed
    assert closed_compound_reason(_view(term, view.evidence, QM_LABEL)) is None  # "flamesight"


def test_the_curator_rejects_them() -> None:
    decisions = offline_curate(
        [
            _view("keepit", KEEPIT),
            _view("gasfitter", ("He was a gasfitter in Tottenham Court Road.",) * 2),
        ]
    )
    assert [decision["decision"] for decision in decisions] == ["REJECT", "REJECT"], decisions


# A text written for these tests: a dialect word two paragraphs say, each quoted on the sources
# line, while the evidence (cut to the first paragraph's window) shows it once.
BLAITHE_QUOTES = (
    "“It’s a blaithe morning for the crossing,” said the ferryman.",
    "“Aye, blaithe enough,” the old woman answered, “if the wind holds.”",
)
BLAITHE_EVIDENCE = (
    "“It’s a blaithe morning for the crossing,” said the ferryman. We stepped down into the "
    "boat and he pushed off from the pier.",
)


def _quoted(quotes: tuple[str, ...], **kw: object) -> CurateEntryView:
    view = _view("blaithe", BLAITHE_EVIDENCE, **kw)  # type: ignore[arg-type]
    return CurateEntryView(
        entry_id=view.entry_id,
        term=view.term,
        definition=view.definition,
        source_posts=view.source_posts,
        source_count=view.source_count,
        evidence=view.evidence,
        story_label=view.story_label,
        source_quotes=quotes,
    )


def test_a_word_every_quoted_source_says_is_how_a_character_talks() -> None:
    """Shown once in the evidence, said in both paragraphs its sources quote: speech."""
    assert spoken_reason(_view("blaithe", BLAITHE_EVIDENCE)) is None  # the evidence alone: thin
    reason = spoken_reason(_quoted(BLAITHE_QUOTES))
    assert reason is not None and "2 paragraphs" in reason
    assert offline_curate([_quoted(BLAITHE_QUOTES)])[0]["decision"] == "REJECT"


@pytest.mark.parametrize(
    "quotes",
    [
        (BLAITHE_QUOTES[0], "The blaithe wind came off the water all that day."),  # narration
        (BLAITHE_QUOTES[0],),  # one paragraph only
        ("He used the word “blaithe” of the weather.", "“Blaithe!”"),  # only quoted alone
        ("blaithe enough,” the old woman answered.", BLAITHE_QUOTES[0]),  # no opening mark
    ],
)
def test_a_word_not_said_in_every_quoted_source_stays(quotes: tuple[str, ...]) -> None:
    view = _quoted(quotes)
    if quotes[0].startswith("He used"):  # nor in the evidence
        view = CurateEntryView(**{**_fields(view), "evidence": ()})
    assert spoken_reason(view) is None


def test_the_quoted_sources_rule_is_a_novels_and_spares_what_is_said_of_it() -> None:
    assert spoken_reason(_quoted(BLAITHE_QUOTES, label=QM_LABEL)) is None
    described = _quoted(BLAITHE_QUOTES, definition="A wind off the firth that the boats wait on.")
    assert spoken_reason(described) is None


def test_the_curate_message_carries_the_sources_quotes() -> None:
    message = (
        "# Task: curate\n\n## Entry E7: blaithe\n"
        "- [E7] blaithe [tentative]: A term of the story.\n"
        "first seen: >>3 (thread 1) · new in this thread\n"
        f'sources: >>3 "{BLAITHE_QUOTES[0]}"; >>9 "{BLAITHE_QUOTES[1]}"; and 1 more\n'
        "### Evidence\n"
        f">>3 (text, first appearance): {BLAITHE_EVIDENCE[0]}\n"
    )
    (view,) = parse_curate_message(message)
    assert view.source_quotes == BLAITHE_QUOTES
    assert view.source_count == 3
    assert spoken_reason(view) is not None


def _fields(view: CurateEntryView) -> dict[str, object]:
    return {name: getattr(view, name) for name in CurateEntryView.__dataclass_fields__}
