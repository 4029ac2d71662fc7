"""Why an entry under review is no term of the story, or why a rejected one is again: the
offline curator's rules, one function a reason (`quiet_reason`, `long_quiet_reason`,
`titled_quiet_reason`, `quoted_reason`, `passing_reason`, `everyday_reason`, `word_reason`,
`phrase_reason`, `aside_reason`, `company_reason`), each returning the reasoning line or None.
They read a `CurateEntryView` only: word shapes, word frequencies and the evidence posts the
curate message carries (`company_reason` also the names the curator let go)."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from terrarium_dagster.backends.curate_view import CurateEntryView
from terrarium_dagster.backends.describe import (
    COMPANY,
    KIND_LEADS,
    UNKNOWN_LEADS,
    company_of,
    parse_definition,
)
from terrarium_dagster.backends.name_forms import (
    idea_form,
)
from terrarium_dagster.backends.portraits import TITLE_WORDS, names_a_kind, names_a_place
from terrarium_dagster.curation.review_prompt import BOOK_LABEL
from terrarium_dagster.store.normalize import normalize_term
from terrarium_dagster.store.vocabulary import (
    ORDINARY_ZIPF,
    TRUNCATED_ZIPF,
    closed_up,
    frequency,
    ordinary_reason,
)
from terrarium_dagster.terms.candidates import NOT_NAMES, calendar_names
from terrarium_dagster.terms.english import (
    ENGLISH_ZIPF,
    HONORIFICS,
    STARTERS,
    is_common_word,
    is_demonym_of_real_place,
    is_descriptive_compound,
    is_english_lowercase,
    is_english_word,
    spoken_word_of,
)
from terrarium_dagster.terms.text_search import find_term, pointed_at


def quiet_reason(view: CurateEntryView) -> str | None:
    """Why an entry left tentative that no thread since has named is a name met in passing, or
    None: a single post names it, once, with nothing said of it, every word of it is one English
    knows (Zipf `KNOWN_ZIPF` or more: a real place or person, "Guildford", "Perrotin of Nice")
    or it is no coinage (`_coined`), and the threads since (at least
    `curation.curator.QUIET_THREADS`) never name it again. Never a coinage ("Woola", "Tal
    Hajus"), a title "X of Y" of an English word, a kind of being ("Ocelot-man") nor a name
    holding another entry's. A later thread naming it again restores it. At a book's last
    chapter (`story_ends`) no chapter is to come: the end of the story is as quiet as the threads
    since, however few (on twenty novels, read: 9 junk entries let go that stayed live,
    tentative, and 3 terms: "Accala Indians", "Mizzenmast Hill"); and there a single capitalised
    word English does not know, with not even a kind said of it, is spared as a coinage no more
    (`_a_coined_word_at_the_end`; on twenty novels, read: 13 junk entries let go, "Godno",
    "Marcini", "Caroliny", and 2 terms, *Heart of Darkness*' "Fresleven" and "Shuyten")."""
    if (
        (view.quiet_threads <= 0 and not view.story_ends)
        or view.source_count != 1
        or view.status != "tentative"
    ):
        return None
    words = _content_words(view.term)
    if (
        not words
        or (_coined(words) and not _a_coined_word_at_the_end(view, words))
        or _a_title_of(view.term)  # "Goddess of Death", named once in each of five chapters
        or _last_word(view.term) in _BEINGS
        or _has_role(view, kind_is_role=False)
        or _holds_an_entry(view)
        or _mentions(view) >= 2
    ):
        return None
    return (
        f"'{view.term}' is named in a single post with nothing said of it, and "
        f"{_never_again(view)}: a name met in passing"
    )


def _a_coined_word_at_the_end(view: CurateEntryView, words: Sequence[str]) -> bool:
    """Whether, at a novel's end (`story_ends`), a coinage met once is a single capitalised word
    English does not know that the definition gives not even a kind ("Fontarabia", "Godno",
    "Marcini", "Ivernia", "Caroliny"): in a finished novel such a word, named once and never
    again, is as a rule a real place or person named in passing (of the words English does not
    know that twenty novels' glossaries kept, read, most were junk), which `long_quiet_reason`
    lets go only when chapters pass, so the last chapters' stayed live for good. Not a name of
    several words ("Tal Hajus", "Mors Kajak of Helium": a book cut short, chapters I-X of *A
    Princess of Mars*, ends where its story does not, and its gold list holds such names met in
    its last chapters), nor a lowercase word (the story's own language: "sakked")."""
    return (
        view.story_ends
        and view.story_label == BOOK_LABEL
        and len(words) == 1
        and " " not in view.term.strip()
        and view.term[:1].isupper()
        and not _has_role(view, kind_is_role=True)
    )


#: The paragraphs that confirm a lowercase word in a novel: the story's own words recur
#: ("thoat", "banth", "holluschickie", "fighting-machine": confirmed by more on twenty novels,
#: read), where a word met in a scene or two is an everyday, rare or dialect one.
WORD_SOURCES = 4


def few_for_a_word(view: CurateEntryView) -> bool:
    """Whether, in a novel, a lowercase entry is named in fewer than `WORD_SOURCES` paragraphs
    ("wedding-night", "sailing-ship", "cushat-dove", "aweel", "wheesht": two or three each, where
    twenty novels' lowercase terms were confirmed by more): the curator leaves it tentative
    rather than confirming it by its sources, and lets it go at its quiet review if no chapter
    since names it (`word_quiet_reason`); a chapter naming it again adds its paragraphs. Not a
    kind of being ("sloth-creature", "ape-men"). On twenty novels, read: 4 junk entries let go
    ("sailing-ship", "aweel", "hoot-toot", "wheesht"), no term."""
    return (
        view.story_label == BOOK_LABEL
        and view.term[:1].islower()
        and view.source_count < WORD_SOURCES
        and _last_word(view.term) not in _BEINGS
    )


def word_quiet_reason(view: CurateEntryView) -> str | None:
    """Why a lowercase entry a novel names in a few paragraphs (`few_for_a_word`), left
    tentative, that no chapter has named for `BOOK_QUIET_THREADS` chapters is a word met in
    passing, or None (the end of the story is not such chapters: a book cut short ends where its
    story does not, and *A Princess of Mars* I-X's last chapters name its "sak"). A later
    chapter naming it again restores it."""
    if (
        view.status != "tentative"
        or view.source_count < 2
        or view.quiet_threads < BOOK_QUIET_THREADS
        or not few_for_a_word(view)
        or _has_role(view, kind_is_role=True)
    ):
        return None
    return (
        f"'{view.term}' is a lowercase word named in {view.source_count} posts with nothing said "
        f"of it, and the {view.quiet_threads} threads since never name it again: a word met in "
        "passing"
    )


def tied_quiet_reason(view: CurateEntryView, related: bool) -> str | None:
    """Why, in a novel, an entry still tentative at the story's end (`story_ends`) that a single
    paragraph names, once, with nothing said of it, whose name is a word of another entry's or
    holds another entry's ("Carew" beside a newer "Danvers Carew", "Kensington" beside "West
    Kensington" and "South Kensington", "Covent Garden Market" beside "Covent Garden", "Lord
    Advocate Grant" beside "Lord Advocate"), is a second name of that entry's referent or a
    lesser one met in passing, or None. Such a tie spares a name the other quiet reasons (the
    story building on its own names), and the curator merges a word only into one older entry,
    so unmerged it stayed live, tentative, for good. Not before the end: let go at a quiet review
    it needs two paragraphs of one chapter to come back, where left tentative any later mention
    confirms it (*Frankenstein*'s "Alps", beside "Alps of Savoy"). Not a kind of being, nor one
    the evidence names twice. On twenty novels, read: 13 junk or second entries let go, and 1
    term (*Peter Pan*'s "Panther", beside "Great Big Little Panther"). `related`: the curator
    found the name a pet name or a word of another entry's (`pet_name_of`, `word_of`)."""
    if (
        view.story_label != BOOK_LABEL
        or view.status != "tentative"
        or view.source_count != 1
        or not view.story_ends
    ):
        return None
    if not (related or _holds_an_entry(view)):
        return None
    if (
        _last_word(view.term) in _BEINGS
        or _has_role(view, kind_is_role=False)
        or _mentions(view) >= 2
    ):
        return None
    return (
        f"'{view.term}' is named in a single post with nothing said of it, its name tied to "
        f"another entry's, and {_never_again(view)}: a second name or a name met in passing"
    )


def _never_again(view: CurateEntryView) -> str:
    """How a quiet reason says no thread names the entry again: the threads since, or, at a
    book's last thread (`story_ends`), the end of the story."""
    if view.story_ends:
        return "the story ends without naming it again"
    return f"the {view.quiet_threads} threads since never name it again"


#: Threads without a mention after which a name a single post names is met in passing whatever
#: its shape (two of the curator's quiet reviews: `curation.curator.QUIET_THREADS` apart).
LONG_QUIET_THREADS = 6
#: The same in a novel, whose chapters are long: its first quiet review, unless its definition
#: gives it a kind or a fact (on twenty novels, read, at three chapters rather than six: 27 more
#: junk or second entries let go, and 4 terms; *A Princess of Mars*' "Iss", "A river", which
#: chapter X names again, waits for six).
BOOK_QUIET_THREADS = 3


def long_quiet_reason(view: CurateEntryView) -> str | None:
    """Why an entry left tentative that a single post names (in a novel, or two paragraphs side
    by side: `one_stretch`), and that no thread has named for `LONG_QUIET_THREADS` threads or
    more (in a novel `BOOK_QUIET_THREADS`), is a name met in passing, or None: what
    `quiet_reason` spares at its first review (a coinage, a title "X of Y", a name holding
    another entry's, one the definition says something of) is let go at a later one, when the
    story has gone on that long without it (on twenty novels, read: 193 junk or second entries
    let go, and 21 terms; in a novel at three chapters, unless the definition gives it a kind or
    a fact, 27 more and 4 terms).
    Never a name the evidence names twice around its post, a kind of being ("Ocelot-man"), a
    person named under a title ("Captain James K. Powell": a character the story brings on, whose
    one scene may be all his part), a lowercase word of the story's own ("sak": its language,
    which English does not know), nor, in a quest, a coinage: a quest master invents the world
    the quest's names are of, where a novel's words English does not know are as often real
    places its narrative passes (a route's towns, "Tannah", "Burdivan": of the 113 such entries
    read on twenty novels, 100 were junk). A later thread naming it again restores it. The end
    of a book (`story_ends`) is not the threads it waits for: a coinage or a title met in a
    book's last chapters may be the story's own, and a book cut short (chapters I-X of *A
    Princess of Mars*, "Mors Kajak of Helium"; chapters III-IV of *The Gods of Mars*, "Tal
    Hajus") ends where the story does not."""
    words = _content_words(view.term)
    stretch = one_stretch(view)
    if (
        view.quiet_threads
        < (BOOK_QUIET_THREADS if view.story_label == BOOK_LABEL else LONG_QUIET_THREADS)
        or (view.source_count != 1 and not stretch)
        or view.status != "tentative"
        or (view.quiet_threads < LONG_QUIET_THREADS and _has_role(view, kind_is_role=True))
        or _last_word(view.term) in _BEINGS
        or (_mentions(view) >= 2 and not stretch)
        or _titled_person(view.term)
        or _a_coined_word(view.term)
        or (view.story_label != BOOK_LABEL and bool(words) and _coined(words))
    ):
        return None
    where = "two posts side by side" if stretch else "a single post"
    return (
        f"'{view.term}' is named in {where}, and the {view.quiet_threads} threads since "
        "never name it again: a name met in passing"
    )


def one_stretch(view: CurateEntryView) -> bool:
    """Whether, in a novel, the only posts naming an entry are two paragraphs side by side
    ("Behar", "Old Bailey", "Andaman Islands"): one short stretch of the story, as a name met in
    passing is named. The curator leaves such an entry tentative rather than confirming it by
    its two sources, and lets it go at the quiet review when no chapter since has named it
    (`long_quiet_reason`; on twenty novels, read: 18 junk or second entries let go, 5 terms,
    "Caucus-race", "Dogger"); a chapter naming it again gives it sources and it is kept."""
    posts = sorted(view.source_posts)
    return (
        view.story_label == BOOK_LABEL
        and view.source_count == 2
        and len(posts) == 2
        and posts[1] - posts[0] <= 1
    )


# The paragraphs a novel names a person in under a title, with nothing said of them but the
# title, that the curator does not take as the story going on about them (`only_titled`).
TITLED_SOURCES = 2


def only_titled(view: CurateEntryView) -> bool:
    """Whether, in a novel, an entry is a person named in `TITLED_SOURCES` paragraphs (one
    passage: a guest listed twice, a former employer, a portrait's subject, never brought on)
    whose definition says nothing of them but the title the name is written with ("Lord
    Backwater": "A lord"; "John Morland", in "Sir John Morland": "A sir"; after it at most the
    entries it appears with). Not one the definition says anything more of, even a word
    ("Professor Ronald Murray": "A professor; the chairman"), nor one a longer name is built on
    ("Miss Fulsom" of "Miss Fulsom's Kindergarten"), nor one a single paragraph names: a
    character whose one scene may be all his part ("Captain James K. Powell of Richmond", on
    the suite's *A Princess of Mars* gold list, named in full once, then "Powell"), as
    `long_quiet_reason` spares him. The curator leaves such an entry tentative instead of
    confirming it by its two paragraphs, and lets it go at the long quiet review if no chapter
    since names it (`titled_quiet_reason`); a third paragraph naming it keeps it."""
    if (
        view.story_label != BOOK_LABEL
        or view.source_count != TITLED_SOURCES
        or not view.definition.strip()
    ):
        return False
    parsed = parse_definition(view.term, view.definition)
    said = [
        word for word in re.findall(r"[a-z]+", parsed.lead.casefold()) if word not in SMALL_WORDS
    ]
    return (
        len(said) == 1
        and said[0] in TITLE_WORDS
        and (_restates(parsed.lead, view.term) or _title_before(parsed.lead, view))
        and all(fact.startswith(COMPANY) for fact in parsed.facts)
        and not _built_on(view)
    )


def _built_on(view: CurateEntryView) -> bool:
    """Whether another entry shown beside the entry, live or let go, has a longer name holding
    its name ("Miss Fulsom's Kindergarten" holds "Miss Fulsom"): a name the story builds on."""
    return any(
        other.entry_id != view.entry_id
        and other.status != "merged"
        and any(name != view.term and find_term(name, view.term) for name in other.names)
        for other in view.similar
    )


def titled_quiet_reason(view: CurateEntryView) -> str | None:
    """Why a person a novel names under a title in two paragraphs, with nothing said of them
    but that title (`only_titled`), is met in passing, or None: left tentative, no chapter
    names them again for `LONG_QUIET_THREADS` chapters (a title is a kind, and a name given a
    kind waits for the long quiet review: *Treasure Island*'s "Master Billy Bones", two
    paragraphs of its first chapter, is "Billy Bones" again four chapters on), or the story
    ends first. A later chapter naming them again restores them."""
    if (
        view.status != "tentative"
        or (view.quiet_threads < LONG_QUIET_THREADS and not view.story_ends)
        or not only_titled(view)
    ):
        return None
    return (
        f"'{view.term}' is named in two paragraphs with nothing said of it but its title, and "
        f"{_never_again(view)}: a person met in passing"
    )


def _titled_person(term: str) -> bool:
    """Whether a name is a title before a person's name ("Captain James K. Powell of Richmond",
    "Lord Longferry"), not a title "X of Y" ("Baron of Appine")."""
    first, _, rest = term.partition(" ")
    name = re.split(r"\bof\b", rest, maxsplit=1)[0]
    return first.casefold().rstrip(".") in TITLE_WORDS and any(
        word[:1].isupper() for word in name.split()
    )


def _a_coined_word(term: str) -> bool:
    """Whether a term is one lowercase word English does not know, letters only ("sak",
    "thoat"; not "se'nnight", "chalk-pit")."""
    return term.isalpha() and term.islower() and not is_english_word(term)


# A title's company of this many names, all let go as met in passing, is a list of real-world
# names it is one of; beside one name let go it may be the story's own ("Island of Despair" beside
# the narrator's full name, which a single post names).
LIST_COMPANY = 2


def company_reason(view: CurateEntryView, let_go: Collection[str]) -> str | None:
    """Why a title "X of Y" that a single post names, once, with nothing said of it, is met in
    passing after all, or None: the entries its definition says it appears with, at least
    `LIST_COMPANY` of them, are all ones the curator let go as met in passing (`let_go`:
    normalized names rejected), as a title in a list of real-world names is ("the Age of
    Unpolished Stone; ... the Cretaceous Sea; ... the Jurassic times"). The title spare keeps a
    story's own titles, whose company is its own names ("Land of Lost Souls" with "Valley
    Dor"). Never a kind of being nor a name holding another entry's; a later thread naming it
    again restores it."""
    if (
        " of " not in normalize_term(view.term)
        or view.status != "tentative"
        or view.source_count != 1
        or _mentions(view) >= 2
        or _last_word(view.term) in _BEINGS
        or _has_role(view, kind_is_role=False)
        or _holds_an_entry(view)
    ):
        return None
    parsed = parse_definition(view.term, view.definition)
    company = [
        normalize_term(name)
        for fact in parsed.facts
        if fact.startswith(COMPANY)
        for name in company_of(fact)
    ]
    if len(set(company)) < LIST_COMPANY or not set(company) <= set(let_go):
        return None  # one name beside it is no list: it may be the story's own let go wrongly
    return (
        f"'{view.term}' is named in a single post, only beside names met in passing "
        f"({len(set(company))} let go): a title met in passing among them"
    )


def _coined(words: Sequence[str]) -> bool:
    """Whether a name is the story's coinage: a word of it English does not know (below
    `KNOWN_ZIPF`: "Woola", "Tal Hajus", "Sab Than"), and none an everyday English word
    (`ORDINARY_ZIPF` or more) but a title or a small word ("Captain", "than"). A name that
    holds an everyday word beside an unknown one is English with a word wordfreq does not list
    ("Amateur Cadger") or a word of a coinage made into a description ("Heliumite Navy")."""
    if min(frequency(word) for word in words) >= KNOWN_ZIPF:
        return False
    return not any(
        frequency(word) >= ORDINARY_ZIPF and word.casefold() not in STARTERS | HONORIFICS
        for word in words
    )


def aside_reason(view: CurateEntryView) -> str | None:
    """Why a name a single post names, only inside parentheses, with nothing said of it, is an
    aside of the narrator, not a term of the story ("my schooling was over before the days of
    Slojd", in parentheses), or None. Never a kind of being nor a name holding another entry's;
    a later thread naming it again restores it."""
    if (
        view.source_count != 1
        or _last_word(view.term) in _BEINGS
        or _has_role(view, kind_is_role=False)
        or _holds_an_entry(view)
    ):
        return None
    found = 0
    for text in view.evidence:
        for start, end in find_term(text, view.term):
            opened = text.rfind("(", 0, start) > text.rfind(")", 0, start)
            closing = text.find(")", end)
            if not opened or closing < 0 or "(" in text[end:closing]:
                return None
            found += 1
    if not found:
        return None
    return f"'{view.term}' is named in a single post, only inside parentheses: an aside"


def real_of_reason(view: CurateEntryView) -> str | None:
    """Why a place "X of Y" (X ends in a word for a place or a body of people) a single post
    names, with nothing said of it, whose Y is one capitalised word English knows well (Zipf
    `ORDINARY_ZIPF` or more) that is no everyday word ("Temple of Jerusalem"), is the world's,
    met in passing, or None. A story's own name after "of" is a word English does not know
    ("Temple of Issus") or an everyday one ("Chamber of Mystery"); a title ("Viceroy of India",
    "Emperor of Morocco") names someone; a later thread naming it again restores it."""
    if view.source_count != 1 or " of " not in view.term or _has_role(view, kind_is_role=False):
        return None
    named, place = (part.strip() for part in view.term.rsplit(" of ", 1))
    if (
        " " in place
        or not place[:1].isupper()
        or not place.isalpha()
        or is_common_word(place)
        or frequency(place) < ORDINARY_ZIPF
        or not names_a_place(named.split()[-1])
    ):
        return None
    return (
        f"'{view.term}' is named in a single post, with nothing said of it, after a name the "
        f"world knows ('{place}', word frequency {frequency(place):.1f}): named in passing"
    )


def modifier_reason(view: CurateEntryView) -> str | None:
    """Why a lowercase hyphenated compound the evidence writes only right before a word for a
    kind of thing ("the spruce-bough lodge"), with nothing said of it, is a modifier of that
    thing, not a name of its own, or None: a story's own compound is written as a noun ("the
    draw-priest said")."""
    term = view.term
    if term != term.lower() or " " in term or "-" not in term.strip("-"):
        return None
    if _has_role(view, kind_is_role=False):
        return None
    found = 0
    for text in view.evidence:
        for _, end in find_term(text, term):
            after = re.match(r" ([a-z]+)\b", text[end : end + 30])
            if after is None or not names_a_kind(after.group(1)):
                return None
            found += 1
    if not found:
        return None
    return f"'{term}' is written only right before the thing it describes: a modifier"


_QUOTE_OPENS = "\"“‘'"


def quoted_reason(view: CurateEntryView) -> str | None:
    """Why a capitalised name is a quotation, not a name the story uses, or None: the evidence
    writes it every time inside quotation marks that hold nothing else but a stop or a comma (a
    song, a log's words: "“Lillibullero.”", "‘Offe Caraccas,’"; not a cry, "“Calot!”", "“Weena!”":
    a name called out is spoken), and nothing is said of it. A later thread naming it in two
    posts restores it."""
    if view.term == view.term.lower() or view.aliases or _has_role(view, kind_is_role=False):
        return None
    found = 0
    for text in view.evidence:
        for start, end in find_term(text, view.term):
            opened = start > 0 and text[start - 1] in _QUOTE_OPENS
            closed = re.match(r"[.,;:]?[\"”’']", text[end : end + 2])  # not a cry: "Calot!"
            if not (opened and closed):
                return None
            found += 1
    if not found:
        return None
    return f"'{view.term}' is only ever quoted alone, as a title or a saying: a quotation"


# A single capitalised word this frequent in English is a familiar word or a real-world name
# (a people, a country, a religion, a maker: "Sioux", "Shetland", "Confederate", "Colt"); several
# words each at least `FAMILIAR_PHRASE_ZIPF` ("Civil War", "United States of America") too.
FAMILIAR_ZIPF = 2.8
FAMILIAR_PHRASE_ZIPF = 4.5
# One word after "of" this rare in English is a real place's or person's name ("Hastings",
# "Cumberland"), not the common word a story's own title names ("Tree of Life").
REAL_NAME_ZIPF = 3.8
ROLE_SOURCES = 3  # posts that must mention a familiar name before it has a role of its own
# A single word English knows at all (a real place, person, people or thing: "Burslem",
# "Nebuchadnezzar", "Schiaparelli", "Malabar"; not a coinage: wordfreq has never seen "Weena"'s
# like this often) that one post names, with no role, is a name met in passing too. A story's
# own name it goes on using comes back when a later thread names it again
# (`offline_curator._back_again`).
KNOWN_ZIPF = 1.0


def passing_reason(view: CurateEntryView) -> str | None:
    """Why an entry is a familiar word or real-world name the story only mentions in passing,
    or None: rejected unless the story gives it a role (mentioned in `ROLE_SOURCES` posts, or a
    definition that says what it is in the story: a kind for one word, "Helium — a place"; a
    fact for a phrase of everyday words, whose kind the describer may only have guessed)."""
    if not 0 < view.source_count < ROLE_SOURCES:
        return None
    if view.term == view.term.lower():
        return _passing_compound(view)
    own = idea_form(normalize_term(view.term))
    lowered = view.term.casefold()
    singulars = {lowered[:-1], lowered[:-2], lowered[:-3] + "y"} if lowered.endswith("s") else set()
    other_names = [
        alias
        for alias in view.aliases
        if alias.casefold() not in singulars
        and (idea_form(normalize_term(alias)) != own or frequency(alias) < FAMILIAR_ZIPF)
    ]  # its own singular is no other name: "Potteries", "Pottery"
    if other_names or _fuller_name_in(view):  # "Hollis" of "Hollis Marr": the story's own
        return None  # (a familiar word's plural is no other name: "Spaniards", "Spaniard")
    words = _content_words(view.term)
    if not words:
        return None
    if len(words) == 1:
        word = words[0]
        singular = word[:-1] if word.endswith("s") and len(word) > 4 else word
        zipf = max(frequency(word), frequency(singular))
        if zipf < (FAMILIAR_ZIPF if view.source_count > 1 else KNOWN_ZIPF):
            return None
    else:
        zipf = min(frequency(word) for word in words)
        if (
            view.source_count == 1
            and zipf >= TRUNCATED_ZIPF
            and _last_word(view.term) not in _BEINGS
            and not re.search(r"\b[A-Z]\.", view.term)
            and not _a_title_of(view.term)
            and not _has_role(view, kind_is_role=False)
            and not _holds_an_entry(view)
            and _mentions(view) < 2
        ):
            return (
                f"'{view.term}' is a name of words English knows (each of word frequency "
                f"{zipf:.1f} or more on the Zipf scale) that a single post names, holding no "
                "other entry's name: a real-world name or a phrase met in passing"
            )
        if zipf < FAMILIAR_PHRASE_ZIPF:
            return None
    if _has_role(view, kind_is_role=len(words) == 1):
        return None
    return (
        f"'{view.term}' is a familiar word or real-world name (word frequency {zipf:.1f} on the "
        f"Zipf scale) that the story mentions in passing ({view.source_count} post(s), no role)"
    )


# What a story's kinds of beings are named by ("Ocelot-man", "Wolf-women", "Beast Folk",
# "sloth-creature"): such a hyphenated name is the story's own however English its parts.
_BEINGS = frozenset((
    "man", "men", "woman", "women", "folk", "people", "beast", "beasts", "brute", "brutes",
    "creature", "creatures", "thing", "things",
))  # fmt: skip


def _last_word(term: str) -> str:
    words = re.split(r"[\s\-‐‑]+", normalize_term(term))
    return words[-1] if words else ""


def _a_title_of(term: str) -> bool:
    """Whether a name is a title "X of Y" whose X is an English word, as a story names its own
    ranks, places and things ("Tree of Life", "Chamber of Mystery", "Jed of Zodanga"); a surname
    of a place ("Lavelle of Java") is no such title, nor a title of one real place or person
    that English knows but rarely names ("Battle of Hastings", "Duke of Cumberland", "Land of
    the Leal": after "of" one word of Zipf `TRUNCATED_ZIPF` to `REAL_NAME_ZIPF`), where a
    story's own titles name a common word ("Life", "Mystery", "Pain") or a coinage; nor an X
    that names a doing ("Advancement of Mankind"; `_names_a_doing`)."""
    head, of, rest = normalize_term(term).partition(" of ")
    rest_words = rest.removeprefix("the ").split()
    if len(rest_words) == 1 and TRUNCATED_ZIPF <= frequency(rest_words[0]) < REAL_NAME_ZIPF:
        return False
    if head.split() and _names_a_doing(head.split()[-1]):
        return False  # "Advancement of Mankind": what is done, not a rank, a place or a thing
    return bool(of) and all(is_english_word(word) for word in head.split())


# A noun of doing is made of a verb English knows of at least this many letters and this
# frequency ("advance", "suppress"; not the "pot" of "potion" nor the "stat" of "station").
_DOING_STEM_CHARS = 5
_DOING_STEM_ZIPF = 3.0


def _names_a_doing(word: str) -> bool:
    """Whether a normalized word is a noun of doing made from an English verb with "-ment" or
    "-ion" ("advancement" of "advance", "suppression" of "suppress"): a title "X of Y" names a
    rank, a place or a thing, and such an X names what is done ("the Advancement of Mankind",
    "the Suppression of Savage Customs"), a phrase of the prose written with capitals."""
    for ending, stem_ends in (("ment", ""), ("ion", ("t", "s"))):
        stem = word.removesuffix(ending)
        if (
            stem != word
            and stem.endswith(stem_ends)  # "suppress-ion", "protect-ion"; not "champ-ion"
            and len(stem) >= _DOING_STEM_CHARS
            and frequency(stem) >= _DOING_STEM_ZIPF
        ):
            return True
    return False


def _mentions(view: CurateEntryView) -> int:
    """How many times the evidence names the term: a name the story dwells on (twice around
    its one post) is no name met in passing."""
    return sum(len(find_term(text, view.term)) for text in view.evidence)


def _holds_an_entry(view: CurateEntryView) -> bool:
    """Whether the multiword term holds the name of another live entry among the similar ones
    ("Brother of Issus" holds "Issus"; "Prince of Life Eternal" holds "Life Eternal"): a name
    the story builds on its own, not one met in passing."""
    words = normalize_term(view.term).split()
    for other in view.similar:
        if other.status in ("rejected", "merged"):
            continue
        for name in other.names:
            key = normalize_term(name).split()
            if key and key != words and _contains_words(words, key):
                return True
    return False


def _contains_words(words: Sequence[str], part: Sequence[str]) -> bool:
    return any(list(words[i : i + len(part)]) == list(part) for i in range(len(words)))


def a_title(view: CurateEntryView) -> bool:
    """Whether a one-word familiar term is a title or role the evidence writes after "the" at
    least as often as not ("the Provost", "the Doctor"): a word for someone, not a name."""
    if " " in view.term or frequency(view.term) < FAMILIAR_ZIPF:
        return False
    pattern = re.compile(rf"(?<![\w'’-])(the\s+)?{re.escape(view.term)}(?!\w)", re.I)
    found = [match for text in view.evidence for match in pattern.finditer(text)]
    return bool(found) and 2 * sum(bool(match.group(1)) for match in found) >= len(found)


def ordinary_word_reason(view: CurateEntryView) -> str | None:
    """Why the term is ordinary vocabulary, a people of a real place or a description, or None.
    A day or month the evidence writes as a name ("my man Friday") is none of these."""
    key = normalize_term(view.term)
    if key in NOT_NAMES and key in calendar_names("\n\n".join(view.evidence)):
        return None  # the evidence is read only for a day or a month
    ordinary = ordinary_reason(view.term, elision=not _written_as_a_name(view))
    if key in NOT_NAMES or (
        " " not in key and view.term == view.term.lower() and is_english_lowercase(key)
    ):
        ordinary = ordinary or f"'{view.term}' is an English word"
    if is_demonym_of_real_place(view.term):
        ordinary = ordinary or f"'{view.term}' names the people of a real place"
    if is_descriptive_compound(view.term):
        ordinary = ordinary or f"'{view.term}' is a description, not a name"
    words = [word for word in re.split(r"[\s\-‐‑]+", key) if word]
    if len(words) > 1 and words[-1] in _ABBREVIATIONS:
        ordinary = ordinary or f"'{view.term}' is a name cut short at an abbreviation"
    if all(word in _NUMBER_WORDS for word in words):
        ordinary = ordinary or f"'{view.term}' is a number, not a name"
    short = all(len(word) <= 4 for word in words)
    repeated = len(set(words)) < len(words)
    if "-" in view.term and repeated and (short or len(words) >= SOUND_PARTS):
        ordinary = ordinary or f"'{view.term}' is a sound, not a name"  # "Yo-ho-ho", "tut-tut"
    toward = re.fullmatch(r"([a-z]{3,})wards?", key)
    if toward and frequency(toward.group(1)) >= TRUNCATED_ZIPF:
        ordinary = ordinary or f"'{view.term}' is a direction ('toward {toward.group(1)}')"
    spoken = spoken_word_of(view.term)
    if spoken and _only_in_speech(view):
        ordinary = ordinary or f"'{view.term}' is the English word '{spoken}' spelled as spoken"
    return ordinary


# A hyphened word of this many parts, one said twice, is a sound however long its parts
# ("Rikk-tikk-tikki-tikki-tchk"; "Yo-ho-ho" of short ones).
SOUND_PARTS = 4


def _written_as_a_name(view: CurateEntryView) -> bool:
    """Whether the evidence writes the one-word term capitalised where no sentence opens and
    never in lowercase: a name with an apostrophe of its own ("M'ling"), not an English word
    spelled as spoken ("gen'leman", "v'yage")."""
    if " " in view.term.strip():
        return False
    mid = False
    for text in view.evidence:
        for start, end in find_term(text, view.term):
            written = text[start:end]
            if written == written.lower():
                return False
            mid = mid or not _opens_sentence(text, start)
    return mid


# Abbreviations that open a name and never end one: "Vestry of St" is "Vestry of St. Pancras"
# cut at its period.
_ABBREVIATIONS = frozenset(("st", "mt", "mr", "mrs", "dr", "ft", "rev", "capt", "col", "gen"))
_NUMBER_WORDS = frozenset((
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
    "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety", "hundred",
    "thousand", "million", "and",
))  # fmt: skip


def _only_in_speech(view: CurateEntryView) -> bool:
    """Whether the evidence writes the term at least once and never outside quoted speech
    where it shows the quotation marks: after a closing mark, or before an opening one (a
    window of a long speech may show none)."""
    found = False
    for text in view.evidence:
        for start, end in find_term(text, view.term):
            before = list(_QUOTE_MARK.finditer(text, 0, start))
            after = _QUOTE_MARK.search(text, end)
            if before and not _opens(text, before[-1].start()):
                return False
            if not before and after is not None and _opens(text, after.start()):
                return False
            found = True
    return found


_QUOTE_MARK = re.compile(r"[\"“”]")


def _opens(text: str, position: int) -> bool:
    """Whether the quotation mark at `position` opens a quote: “, or a straight one that no
    word or punctuation stands right before."""
    mark = text[position]
    if mark != '"':
        return mark == "“"
    return position == 0 or text[position - 1].isspace() or text[position - 1] in "([—-"


def _passing_compound(view: CurateEntryView) -> str | None:
    """Why a lowercase compound of words English knows ("cabin-boy", "stern-port", "hind-leg")
    that fewer than `ROLE_SOURCES` posts name, with nothing said of it, is an everyday thing met
    in passing, or None (a part English does not know, "thoat-rider", or a kind or fact in its
    definition keeps it; a compound the story goes on using comes back by
    `offline_curator._back_again`)."""
    parts = [part for part in re.split(r"[-‐‑\s]+", view.term) if part]
    if len(parts) < 2 or "-" not in view.term:
        return None
    zipf = min(frequency(part) for part in parts)
    if (zipf < KNOWN_ZIPF and view.source_count > 1) or _has_role(view, kind_is_role=True):
        return None  # named once, a part English does not know is no role: "affy-davy"
    return (
        f"'{view.term}' is a compound of English words (each of word frequency {zipf:.1f} or more"
        f" on the Zipf scale) that the story mentions in passing ({view.source_count} post(s),"
        " no role)"
    )


# A part this frequent in English is an everyday word (about the 15,000 most frequent: "log",
# "house", "jolly", "boat", "sea", "cook"); a story's own compounds hold a rarer word ("tithe",
# "ember", "ledger") or one English does not know ("thoat").
EVERYDAY_ZIPF = 3.5


def everyday_reason(view: CurateEntryView) -> str | None:
    """Why a lowercase hyphenated compound of everyday words ("log-house", "jolly-boat",
    "round-shot", "sea-cook") with nothing said of it in the story, however many posts name
    it, is an everyday compound, or None. Its definition must hold a fact or a lead of its own
    to keep it (a kind alone is the describer's guess from a cue word), except in a novel, where
    a compound of familiar words (each of Zipf `FAMILIAR_PART_ZIPF` or more) goes whatever is
    said of it ("pilot-boat", "tree-fern"); a thing named by what it does ("fighting-machine")
    and a kind of being ("ape-men") are the story's own."""
    if view.term != view.term.lower():
        return None
    if " " in view.term.strip():
        return _phrase_reason(view)
    if view.term.isalpha():
        return _rare_word_reason(view) or _derived_word_reason(view) or closed_compound_reason(view)
    parts = [part for part in re.split(r"[-‐‑]+", view.term) if part]
    if len(parts) < 2 or parts[0].endswith("ing") or parts[-1] in _BEINGS:
        return None  # a kind of being is the story's own: "sloth-creature"
    zipf = min(frequency(part) for part in parts)
    # in a novel, such a compound is the prose's whatever the describer made of it ("pilot-boat",
    # "gun-bullock", "saloon-keeper": five entries on twenty novels, read, all junk); a quest's
    # own compounds are given kinds ("smoke-ledger")
    if view.story_label == BOOK_LABEL and zipf >= FAMILIAR_PART_ZIPF:
        return (
            f"'{view.term}' is a compound of familiar English words (each of word frequency "
            f"{zipf:.1f} or more on the Zipf scale) in a novel's prose, whatever is said of it"
        )
    what = "a compound of everyday English words (each of word frequency {zipf:.1f} or more"
    if FAMILIAR_PART_ZIPF <= zipf < EVERYDAY_ZIPF and not _has_role(view, kind_is_role=True):
        what = "a compound of familiar English words (each of word frequency {zipf:.1f} or more"
        return _english_reason(view, zipf, FAMILIAR_PART_ZIPF, what)
    return _english_reason(view, zipf, EVERYDAY_ZIPF, what)


# Parts this frequent make a lowercase compound of familiar words ("melon-bed", "gun-bullock",
# "doodle-doo"): one with nothing said of it, not even a kind, is met in the prose; a story's own
# hold a rarer word ("tithe-jar": "tithe" 2.9) or are given a kind ("smoke-ledger").
FAMILIAR_PART_ZIPF = 3.0
# English makes words of words with these ("dis-composure", "suitable-ness", "under-feeding");
# a word so made of an English word (Zipf `DERIVED_STEM_ZIPF` or more) is English however rarely
# wordfreq meets it ("discomposure", "suitableness": 0), not a coinage ("flamesight", "manling").
_PREFIXES = ("dis", "un", "under", "over", "mis", "non", "out", "in", "im", "re")
_SUFFIXES = ("ness", "ment", "ity", "ship", "hood", "less", "ful", "ance", "ence")
DERIVED_STEM_ZIPF = 3.0
DERIVED_STEM_CHARS = 4


# Each part of a lowercase word English does not know that is two English words run together is
# at least this frequent ("gasfitter", "stoneyard", "jurymen": "jury" and "men").
PROSE_COMPOUND_PART_ZIPF = 3.0


def closed_compound_reason(view: CurateEntryView) -> str | None:
    """Why, in a novel, a lowercase word English does not know (below `KNOWN_ZIPF`) that is two
    familiar English words run together ("gasfitter", "stoneyard", "jurymen", "foemen"; each part
    `PROSE_COMPOUND_PART_ZIPF` or more, of three letters or more: `closed_up`) is the prose's
    compound, whatever is said of it, or None: a novel's own lowercase words are unknown to
    English in their parts too ("thoat", "banth", "holluschickie"). A quest's coinages are often
    made so ("flamesight") and are left alone, as is a kind of being ("ape-men" is hyphened)."""
    word = view.term
    if (
        view.story_label != BOOK_LABEL
        or not word.isalpha()
        or word != word.lower()
        or frequency(word) >= KNOWN_ZIPF
    ):
        return None
    parts = closed_up(word, lambda part: frequency(part) >= PROSE_COMPOUND_PART_ZIPF)
    if parts is None:
        return None
    return (
        f"'{word}' is '{parts[0]}' and '{parts[1]}' run together, two familiar English words, "
        "in a novel's prose: a compound of the prose"
    )


# Speech must name a word this many times in the evidence, among other words, before it is a
# character's way of talking: *The Jungle Book*'s "holluschickie", the seals' own word, was first
# shown in one quoted sentence, the narration that names it being further off than the evidence.
SPOKEN_MENTIONS = 2


def spoken_reason(view: CurateEntryView) -> str | None:
    """Why, in a novel, a lowercase word that the evidence never writes outside its characters'
    speech, and at least once among other words of a quotation, with nothing said of it, is the
    way a character talks (`SPOKEN_MENTIONS` times at least: "dinnae" in *Kidnapped*: a
    dialect word), not a thing the story names, or None. A word the narration uses ("thoat",
    "banth", "fighting-machine") is the story's own; one quoted or cried alone counts for
    neither ("the word “whateffer”", "“Wheesht!”"), so a word only ever quoted alone is kept
    ("the word “sak”", "he said, “sak!”"); a kind of being ("ape-men") is kept. A later chapter
    naming it again restores it."""
    term = view.term
    if (
        view.story_label != BOOK_LABEL
        or term != term.lower()
        or " " in term.strip()
        or _last_word(term) in _BEINGS
        or _has_role(view, kind_is_role=False)
    ):
        return None
    found = 0
    for text in view.evidence:
        for start, end in find_term(text, term):
            quote = _quotation_around(text, start)
            if quote is None:
                return None  # the narration's word
            found += _holds_other_words(quote, text[start:end])  # alone: a word quoted or cried
    if found >= SPOKEN_MENTIONS:
        return (
            f"'{term}' is written only inside the characters' speech ({found} times in the "
            "evidence), with nothing said of it: a word of how they talk"
        )
    said = _said_in_sources(view)
    if said < SPOKEN_MENTIONS or (not found and not _worded_in_sources(view)):
        return None
    return (
        f"'{term}' is written only inside the characters' speech (in each of the {said} "
        "paragraphs its sources quote), with nothing said of it: a word of how they talk"
    )


def _said_in_sources(view: CurateEntryView) -> int:
    """How many of the sentences the sources line quotes name the entry, each only inside
    quotation marks; 0 when one of them names it in the narration (or in a sentence cut from
    a speech whose opening mark it does not show: too little to tell)."""
    said = 0
    for sentence in view.source_quotes:
        spans = find_term(sentence, view.term)
        if not spans:
            continue
        if any(_quotation_around(sentence, start) is None for start, _end in spans):
            return 0
        said += 1
    return said


def _worded_in_sources(view: CurateEntryView) -> bool:
    """Whether a source's quoted sentence names the entry among other words of a quotation:
    speech, not a word only ever quoted or cried alone ("the word “sak”", "“Sak!”")."""
    return any(
        _holds_other_words(quote, sentence[start:end])
        for sentence in view.source_quotes
        for start, end in find_term(sentence, view.term)
        if (quote := _quotation_around(sentence, start)) is not None
    )


_OPENING_MARKS = "“‘"
_CLOSING_MARKS = "”’"


def _quotation_around(text: str, start: int) -> str | None:
    """The quotation a paragraph's word at `start` stands in, or None (narration): the last
    quotation mark before it opens one (“, ‘, or a straight mark no word stands right before),
    which runs to its closing mark or the paragraph's end (a speech of several paragraphs leaves
    it open). An apostrophe between letters ("don’t") is no mark."""
    for index in range(start - 1, -1, -1):
        mark = text[index]
        if mark not in '"“”‘’':
            continue
        if mark in "’‘" and f"{text[index - 1 : index]}{text[index + 1 : index + 2]}".isalpha():
            continue  # an apostrophe between letters: "don’t", "Alan’s"
        if mark in _CLOSING_MARKS or (mark == '"' and not _opens(text, index)):
            return None
        closing = re.compile(r'["”]' if mark in '"“' else r"’(?![^\W\d_])").search(text, start)
        return text[index + 1 : closing.start() if closing else len(text)]
    return None


def _holds_other_words(quote: str, word: str) -> bool:
    """Whether a quotation holds a word of two letters or more besides `word` (any case):
    speech, not a word quoted or cried alone ("“Wheesht!”", "the word “sak”", "“O, keepit!”")."""
    others = re.sub(rf"(?<![\w'’-]){re.escape(word)}(?![\w'’-])", " ", quote, flags=re.I)
    return re.search(r"[^\W\d_]{2,}", others) is not None


def _derived_word_reason(view: CurateEntryView) -> str | None:
    """Why a lowercase word wordfreq knows too rarely to call English (below `TRUNCATED_ZIPF`)
    is an English word all the same, made of one with a prefix or a suffix English makes words
    with ("discomposure", "suitableness", "underfeeding"), with nothing said of it; or None."""
    word = view.term
    if frequency(word) >= TRUNCATED_ZIPF or _has_role(view, kind_is_role=False):
        return None
    made = [
        f"'{prefix}' and '{word[len(prefix) :]}'"
        for prefix in _PREFIXES
        if word.startswith(prefix)
        and len(word) - len(prefix) >= DERIVED_STEM_CHARS
        and frequency(word[len(prefix) :]) >= DERIVED_STEM_ZIPF
    ] + [
        f"'{word[: -len(suffix)]}' and '-{suffix}'"
        for suffix in _SUFFIXES
        if word.endswith(suffix)
        and len(word) - len(suffix) >= DERIVED_STEM_CHARS
        and frequency(word[: -len(suffix)]) >= DERIVED_STEM_ZIPF
    ]
    if not made:
        return None
    return f"'{word}' is an English word made of {made[0]}, with nothing said of it in the story"


def _english_reason(view: CurateEntryView, zipf: float, floor: float, what: str) -> str | None:
    """Why an entry of English words (`what`, formatted with their `zipf`) is no term: its
    words at least `floor` on the Zipf scale, and nothing said of it; or None."""
    if zipf < floor or _has_role(view, kind_is_role=False):
        return None
    return (
        f"'{view.term}' is {what.format(zipf=zipf)} on the Zipf scale) with nothing said of it "
        "in the story"
    )


def _rare_word_reason(view: CurateEntryView) -> str | None:
    """Why a lowercase word English knows, however rarely ("coracle", "hawser"; each of Zipf
    `TRUNCATED_ZIPF` or more), with nothing said of it in the story, is an English word, or
    None: a story's own words are unknown to English ("thoat", "banth") or said what they are;
    an inflection may be a coinage's ("wending")."""
    if view.term.endswith(("ing", "ed")):
        return None
    what = "an English word (word frequency {zipf:.1f}"
    return _english_reason(view, frequency(view.term), TRUNCATED_ZIPF, what)


def _phrase_reason(view: CurateEntryView) -> str | None:
    """Why a lowercase phrase of familiar English words ("simpler way", "boilers on stilts",
    "gentleman of fortune", "true sea-dog") with nothing said of it is a phrase of the prose,
    not a name, or None: each word at least `ENGLISH_ZIPF`; a coined phrase holds a rarer word
    ("lightless debt"), and a kind of being ("plant men") is the story's own."""
    words = [w for w in re.split(r"[\s\-‐‑]+", view.term) if w and w not in SMALL_WORDS]
    if len(words) < 2 or _last_word(view.term) in _BEINGS:
        return None
    zipf = min(frequency(word) for word in words)
    what = "a phrase of familiar English words (each of word frequency {zipf:.1f} or more"
    return _english_reason(view, zipf, ENGLISH_ZIPF, what)


def word_reason(view: CurateEntryView) -> str | None:
    """Why a capitalised one-word entry is a word, not a name, by how the evidence writes it:
    never capitalised mid-sentence, and written in lowercase too, or an English word opening
    several sentences ("Sak!" beside "sak", "Evidently" twice), or None."""
    term = view.term
    if " " in term or term == term.lower() or not view.evidence:
        return None
    lowered = term.casefold()
    starts = mid = lower = 0
    for text in view.evidence:
        for match in re.finditer(rf"(?<![\w'’-]){re.escape(lowered)}(?![\w'’-])", text, re.I):
            word = match.group(0)
            if word == word.lower():
                lower += 1
            elif _opens_sentence(text, match.start()):
                starts += 1
            else:
                mid += 1
    if frequency(term) >= OATH_ZIPF and _only_sworn_by(view):
        return (
            f"'{term}' is a word English knows that the evidence writes only after 'by' and "
            "before a stop, as an oath ('By Jove!'): not a name"
        )
    if mid or not (starts or lower):
        return None
    if lower or (starts >= 2 and is_english_word(term)):
        return (
            f"'{term}' is capitalised only where a sentence opens ({starts} time(s)) and "
            f"written in lowercase {lower} time(s) in the evidence: a word, not a name"
        )
    if starts >= 2 and frequency(term) >= KNOWN_ZIPF and _only_opens_speech(view):
        return (
            f"'{term}' is a word English knows that the evidence writes only where speech opens, "
            f"as a cry or greeting before a comma or '!' ({starts} time(s)): an interjection, "
            "not a name"
        )
    return None


OATH_ZIPF = 2.0  # a word sworn by that English knows: "Jove", "Heaven", "George"


_SWORN_BY = re.compile(r"\b[Bb]y\s+$")
_SPEECH_OPENING = re.compile(r"[\"“‘']\s*$")


def _written_only_between(
    view: CurateEntryView, before: re.Pattern[str], after: re.Pattern[str], reach: int
) -> bool:
    """Whether the evidence names the term at least once, and everywhere with `before` found in
    the `reach` characters before it and `after` matching right after it."""
    found = False
    for text in view.evidence:
        for start, end in find_term(text, view.term):
            if not before.search(text[max(0, start - reach) : start]):
                return False
            if not after.match(text[end : end + 2]):
                return False
            found = True
    return found


def _only_sworn_by(view: CurateEntryView) -> bool:
    """Whether the evidence writes the one-word term only right after "by" and before a stop,
    a comma, '!' or '?' ("By Jove! I've never seen", "by Jove, he said"): an oath."""
    return _written_only_between(view, _SWORN_BY, re.compile(r"\s*[,.!?;—]"), reach=4)


def _only_opens_speech(view: CurateEntryView) -> bool:
    """Whether the evidence writes the one-word term only right after an opening quotation mark
    and before a comma, '!' or '?' ("“Hullo, Peter,” they said", "“Begone!”"): a cry, as a name
    is written in the narration too."""
    return _written_only_between(view, _SPEECH_OPENING, re.compile(r"\s*[,!?]"), reach=3)


# A people's word English knows ("Swede" 3.1, "Celt" 2.3) beside its adjective, an everyday
# word ("Swedish", "Danish", "Celtic": Zipf `ORDINARY_ZIPF` or more).
PEOPLE_ZIPF = 2.0
_ARTICLE_BEFORE = re.compile(r"\b(?:a|an|the)\s+$", re.I)


def people_reason(view: CurateEntryView) -> str | None:
    """Why a capitalised word is a real people's word ("a Swede", "the Dane", "the Celt"), or
    None: English knows it (Zipf `PEOPLE_ZIPF` or more), its adjective with "-ish" or "-ic" is an
    everyday word ("Swedish", "Danish", "Celtic"), and the evidence writes it after an article,
    as one of a people, not a name."""
    term = view.term
    if " " in term or "-" in term or len(term) < 4 or not term[:1].isupper():
        return None
    if frequency(term) < PEOPLE_ZIPF:
        return None
    stems = (term[:-1] + "ish", term + "ish", term + "ic")
    adjective = next((word for word in stems if frequency(word) >= ORDINARY_ZIPF), None)
    if adjective is None:
        return None
    if not any(
        _ARTICLE_BEFORE.search(text[max(0, start - 6) : start])
        for text in view.evidence
        for start, _ in find_term(text, term)
    ):
        return None
    return (
        f"'{term}' is one of a real people (its adjective '{adjective}' is an everyday word), "
        "written after an article: not a name"
    )


GLUED_MENTIONS = 2  # the places one post may name a word and a name side by side


def glued_reason(view: CurateEntryView) -> str | None:
    """Why a name of several words is another entry's name with a word glued before it, or
    None: the rest of it is a name of another entry shown beside it (any status), and its first
    word is an everyday English word (Zipf `ORDINARY_ZIPF` or more; not a title, "Old Quill")
    that the evidence writes only where a sentence opens ("Poor Wendy", "Overhead Tinker Bell"
    beside "Wendy" and "Tinker Bell"), or a possessive ("Charles's South African" beside "South
    African"): two names or a word and a name side by side, not one name. Only a name one post
    names, at most `GLUED_MENTIONS` times: "Will Atkins" and "James Desmond" open sentences of
    several posts."""
    words = view.term.split()
    if len(words) < 2 or view.source_count != 1 or _mentions(view) > GLUED_MENTIONS:
        return None  # a name a story goes on writing is its own: "Will Atkins", "James Desmond"
    rest = normalize_term(" ".join(words[1:]))
    other = next(
        (
            known
            for known in view.similar
            if known.entry_id != view.entry_id
            and any(normalize_term(name) == rest for name in known.names)
        ),
        None,
    )
    if other is None:
        return None
    first = words[0]
    possessive = re.fullmatch(r"[A-Z][a-z]+['’]s", first) is not None
    if not possessive:
        if first.casefold() in HONORIFICS | TITLE_WORDS or frequency(first) < ORDINARY_ZIPF:
            return None
        places = [
            (text, start) for text in view.evidence for start, _ in find_term(text, view.term)
        ]
        if not places or not all(_opens_sentence(text, start) for text, start in places):
            return None
    return (
        f"'{view.term}' is the name '{other.term}' [E{other.entry_id}] with "
        f"{'a possessive' if possessive else f'the everyday word {first!r} opening a sentence'}"
        " before it: not a name of its own"
    )


def phrase_reason(view: CurateEntryView) -> str | None:
    """Why a capitalised phrase is a phrase of the prose written with capitals, not a name, or
    None: nothing is said of it, and its evidence writes it in lowercase too, at least as often
    as it capitalises it where no sentence opens ("the Bark of Trees" beside "bark of trees"),
    or points at it ("this Golden Age", "in that Golden Age", "upon this Island of Doctor
    Moreau") in at least half of the places it names it, as a name is not pointed at, or its
    words are everyday (Zipf `EVERYDAY_ZIPF` or more) and the posts naming it capitalise
    `CAPITALISED_COMMON` everyday words that name nothing ("Not to suck up Drink ... Not to claw
    the Bark of Trees"; `_capitalised_common_words`): there a capital marks no name. The
    multiword counterpart of `word_reason`; a kind of being ("Beast Men") is the story's own."""
    term = view.term.strip()
    if (
        term == term.lower()
        or " " not in term
        or _last_word(term) in _BEINGS
        or _has_role(view, kind_is_role=False)
    ):
        return None
    lower = capital = pointed = mid = 0
    for text in view.evidence:
        for start, end in find_term(text, term):
            written = text[start:end]
            if written == written.lower():
                lower += 1
                continue
            capital += 1
            pointed += pointed_at(text, term, start)
            mid += not _opens_sentence(text, start)
    if lower and lower >= mid:
        return (
            f"'{term}' is written in lowercase {lower} time(s) in the evidence beside {mid} "
            "capitalised where no sentence opens, with nothing said of it: a phrase, not a name"
        )
    if pointed and 2 * pointed >= capital and not _short_form_aliased(view):
        return (
            f"'{term}' is pointed at as a thing ('this', 'that') in {pointed} of the {capital} "
            "places the evidence names it, with nothing said of it: a phrase, not a name"
        )
    words = [w for w in re.split(r"[\s\-‐‑]+", term) if w and w.casefold() not in SMALL_WORDS]
    common = _capitalised_common_words(view)
    if min(frequency(w) for w in words) >= EVERYDAY_ZIPF and len(common) >= CAPITALISED_COMMON:
        shown = ", ".join(f"'{word}'" for word in sorted(common)[:CAPITALISED_COMMON])
        return (
            f"'{term}' is written with capitals in a passage that capitalises everyday words "
            f"naming nothing ({shown}), with nothing said of it: a phrase, not a name"
        )
    return None


def _short_form_aliased(view: CurateEntryView) -> bool:
    """Whether an alias of the entry is one word of its name ("Atkins" of "Will Atkins"): the
    story names it short, as it names a person, so "Upon this Will Atkins cried out" points at
    nothing ("this" is the pronoun)."""
    words = {word.casefold() for word in view.term.split()}
    return any(" " not in alias and alias.casefold() in words for alias in view.aliases)


# A post that capitalises this many everyday words, each alone where no sentence opens ("Not to
# suck up Drink", "Not to eat Fish or Flesh": a litany, a law, old prose that capitalises its
# nouns), marks no name by a capital: a phrase of everyday words it capitalises is a phrase.
CAPITALISED_COMMON = 3


def _capitalised_common_words(view: CurateEntryView) -> set[str]:
    """The everyday English words (Zipf `FAMILIAR_PHRASE_ZIPF` or more; not a title, a month,
    a day or a word of the term) that the evidence posts naming the term capitalise alone, as
    no name is written: where no sentence opens, neither after nor before another capitalised
    word ("Drink", "Fish", "Men"; not "London" in "St. John's Wood, London", "Men" of "Beast
    Men")."""
    own = {word.casefold() for name in view.names for word in re.split(r"[\s\-‐‑]+", name)}
    never = own | NOT_NAMES | STARTERS | HONORIFICS | TITLE_WORDS
    found: set[str] = set()
    for text in view.evidence:
        if not find_term(text, view.term):
            continue
        for match in _CAPITALISED.finditer(text):
            word = match.group(0)
            if word.casefold() in never or _opens_sentence(text, match.start()):
                continue
            before, after = text[: match.start()].rstrip(" ,"), text[match.end() :].lstrip(" ,")
            if _CAPITAL_BEFORE.search(before) or _CAPITAL_AFTER.match(after):
                continue  # a word of a name of several words
            if frequency(word) >= FAMILIAR_PHRASE_ZIPF:
                found.add(word)
    return found


_CAPITALISED = re.compile(r"(?<![\w'’.-])[A-Z][a-z]+(?![\w'’-])")
_CAPITAL_BEFORE = re.compile(r"[A-Z][\w'’.-]*$")
_CAPITAL_AFTER = re.compile(r"(?:(?:of|the|de|la)\s+)*[A-Z]")


# the period of a title's abbreviation or of an initial ends no sentence: "Mr. Conroy", "St.
# Clare", "J. Conroy" (a surname only ever written after "Mr." is a name, not a sentence's word)
_ABBREVIATED_BEFORE = re.compile(
    r"(?<![\w'’])(?:Mr|Mrs|Ms|Messrs|Mme|Mlle|Dr|St|Capt|Col|Gen|Lieut|Lt|Sgt|Rev|Prof|Hon|Sr|Jr"
    r"|[A-Z])\.$"
)


def _opens_sentence(text: str, position: int) -> bool:
    before = text[:position].rstrip(" *_(")
    if before.endswith(('"', "“", "‘")):  # quoted speech opens a sentence
        return True
    if _ABBREVIATED_BEFORE.search(before):
        return False
    return not before or before[-1] in ".!?:;\n—–-"


SMALL_WORDS = frozenset({"of", "the", "a", "an", "and", "in", "on", "at", "to", "de", "la"})


def _content_words(term: str) -> list[str]:
    """The words of a term, split at spaces and hyphens, without `SMALL_WORDS`."""
    return [w for w in re.split(r"[\s-]+", term) if w and w.casefold() not in SMALL_WORDS]


def _fuller_name_in(view: CurateEntryView) -> bool:
    """Whether the evidence writes the one-word term as the first word of a longer name
    ("Hollis Marr"), as a story names its people (not "Shetland pony", "Colt revolvers")."""
    pattern = re.compile(rf"(?<![\w'’-]){re.escape(view.term)} ([A-Z][a-z]+)")
    for text in view.evidence:
        for match in pattern.finditer(text):
            if match.group(1).casefold() not in STARTERS:
                return True
    return False


def _has_role(view: CurateEntryView, *, kind_is_role: bool) -> bool:
    """Whether the definition says what the story makes of the entry: a fact, or (when
    `kind_is_role`) at least what kind of thing it is in the story ("Helium — a place")."""
    if not view.definition.strip():
        return False
    parsed = parse_definition(view.term, view.definition)
    leads = UNKNOWN_LEADS if kind_is_role else UNKNOWN_LEADS | set(KIND_LEADS.values())
    facts = [
        fact
        for fact in parsed.facts
        if not fact.startswith(COMPANY)
        and len([w for w in re.findall(r"[a-z]+", fact.casefold()) if w not in SMALL_WORDS]) > 1
    ]  # a fact of one word is a fragment a pattern caught ("the _hands_"), nothing said
    return bool(facts) or (
        parsed.lead not in leads
        and not _restates(parsed.lead, view.term)
        and not _title_before(parsed.lead, view)
        and not _POINTING_LEAD.match(parsed.lead)
    )


# A lead that points back at things the sentence names elsewhere ("The North Pole was one of
# these places": "one of these places") says nothing of the entry itself.
_POINTING_LEAD = re.compile(r"(?:(?:one|some|any|each|all|none) of )?(?:these|those)\b", re.I)


def _title_before(lead: str, view: CurateEntryView) -> bool:
    """Whether a lead is only the title the evidence writes before the name ("A sir" of "Francis
    Drake" in "Sir Francis Drake"): how it is addressed, nothing the story says of it ("A
    prince" of "Sab Than, Prince of Zodanga" says what he is)."""
    said = [word for word in re.findall(r"[a-z]+", lead.casefold()) if word not in SMALL_WORDS]
    if len(said) != 1 or said[0] not in TITLE_WORDS:
        return False
    pattern = re.compile(rf"\b{said[0]}\s+{re.escape(view.term)}(?![\w'’-])", re.I)
    return any(pattern.search(text) for text in view.evidence)


def _restates(lead: str, term: str) -> bool:
    """Whether a lead only says a word of the name again ("A admiral" of "Admiral Hawke", "A
    professor" of "Professor Howes"): the name's own title, nothing the story says of it."""
    said = {word for word in re.findall(r"[a-z]+", lead.casefold()) if word not in SMALL_WORDS}
    return bool(said) and said <= set(re.findall(r"[a-z]+", term.casefold()))
