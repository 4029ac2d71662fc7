"""Candidate glossary terms in story text: the words a reader would look up.

A deterministic detector, used by the offline backend to annotate without a model and, beside a real
model, to list "terms mentioned in this scene that have no entry yet". It proposes:

- capitalised names and multiword names (`Varen`, `Lantern Court`, `Order of the Ember`) that are
  not merely capitalised because they open a sentence; a sentence-initial word counts when it is
  also seen mid-sentence, has an internal apostrophe (`Keth'ra`), or is not a common English word
  and recurs;
- titles introduced by "the" (`the Lantern Court` -> `Lantern Court`, kind "title");
- quoted coinages (`"ember-tithe"`, `'the hollowing'`);
- lowercase compounds with an internal hyphen or apostrophe (`ember-tithe`) and repeated unusual
  lowercase words (not in the shipped common-word list, nor an inflection of one).

It filters the usual false positives: `I`, `Mr`, weekdays and months, sentence-initial common
words, vote boxes (`[X]`), quote links (`>>123`), post headers (`[post 123]`), `Anonymous`, `QM`.
Everything is pure string processing; the same text gives the same list. Finding a term in text
is `terms.text_search`'s, and what English knows `terms.english`'s.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Protocol

from terrarium_dagster.store.normalize import form_key, normalize_term
from terrarium_dagster.store.vocabulary import (
    closed_up,
    elided_word,
    frequency,
    is_ordinary,
    ordinary_reason,
)
from terrarium_dagster.terms.english import (
    APOSTROPHES,
    ARTICLES,
    COMMON_WORDS,
    HONORIFICS,
    KNOWN_WORD_ZIPF,
    STARTERS,
    TITLES,
    is_common_word,
    is_demonym_of_real_place,
    is_descriptive_compound,
    is_english_lowercase,
    is_english_word,
)
from terrarium_dagster.terms.letters import LETTER
from terrarium_dagster.terms.text_search import find_term, mask_markup

DEFAULT_MIN_SCORE = 1.0

KIND_NAME = "name"
KIND_TITLE = "title"
KIND_COINAGE = "coinage"
KIND_COMPOUND = "compound"
KIND_WORD = "word"
_Token = tuple[int, int, str]  # start, end, text
_KIND_RANK = {KIND_COINAGE: 0, KIND_TITLE: 1, KIND_NAME: 2, KIND_COMPOUND: 3, KIND_WORD: 4}


class _Propose(Protocol):
    def __call__(
        self, term: str, kind: str, score: float, offset: int, variants: tuple[str, ...] = ()
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class Candidate:
    """A proposed term. `variants` are other surface forms folded into it (e.g. `Varen` for
    `Lord Varen`); `occurrences` counts the term and its variants in the text (any case)."""

    term: str
    score: float
    first_offset: int
    occurrences: int
    kind_hint: str
    variants: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return (self.term, *self.variants)


# Never a term on their own (checked case-insensitively on whole runs and single words).
_NOT_NAMES_TEXT = """
    i i'm i've i'll i'd mr mrs ms dr mr. mrs. dr. mlle mme messrs sir madam anonymous anon qm op
    oc ooc ic gm
    monday tuesday wednesday thursday friday saturday sunday january february march april may
    june july august september october november december god gods lol ok okay yes no english
    tl;dr dr edit update vote votes tally x"""
NOT_NAMES: frozenset[str] = frozenset(_NOT_NAMES_TEXT.split())
# The months and days among them, which open a name after "the" ("the March Hare").
_CALENDAR_TEXT = """monday tuesday wednesday thursday friday saturday sunday january february
    march april may june july august september october november december"""
_CALENDAR: frozenset[str] = frozenset(_CALENDAR_TEXT.split())

# A day or month is a time where one of these words comes before it ("on Friday", "last May",
# "till Monday") or after it ("Friday morning"), or a number beside it ("June 5th"); "of" only
# before a month ("the fifth of June"; "the father of Friday" names a man).
_TIME_BEFORE_TEXT = """
    on last next every each this till until since by before after following a one good
    same in from early late all today to-day tomorrow to-morrow yesterday is was be not"""
_TIME_BEFORE = frozenset(_TIME_BEFORE_TEXT.split())
_TIME_AFTER_TEXT = "morning night evening afternoon week noon eve fortnight"
_TIME_AFTER = frozenset(_TIME_AFTER_TEXT.split())
_MONTHS = frozenset(_CALENDAR_TEXT.split()[7:])
# A day or month written as a name at least this often where no sentence opens, and more than
# twice as often as a time, is a name in that text ("my man Friday", "Friday told me").
CALENDAR_NAME_USES = 2


def calendar_names(text: str) -> frozenset[str]:
    """The days and months (casefolded) that `text` writes as a name, not a time: capitalised
    where no sentence opens, at least `CALENDAR_NAME_USES` times with no word or number of a
    time beside it ("I called him Friday", "Friday's father"), more than twice as often as a
    time. A story may name a person so (Crusoe's Friday): the
    calendar words are never names elsewhere (`NOT_NAMES`)."""
    masked = mask_markup(text)
    return _calendar_names(masked, _tokens(masked))


def _calendar_names(masked: str, tokens: list[_Token]) -> frozenset[str]:
    """`calendar_names` of a text already masked (`mask_markup`) and cut into `tokens`."""
    names: Counter[str] = Counter()
    times: Counter[str] = Counter()
    for index, (start, end, token) in enumerate(tokens):
        word = _without_possessive(token)
        key = word.casefold()
        if key not in _CALENDAR or not word[:1].isupper() or _at_sentence_start(masked, start):
            continue
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        if (
            word == token
            and following
            and _is_capitalised(following[2])
            and masked[end : following[0]] == " "
        ):
            continue  # a word of a longer name: "the March Hare", "the May Queen"
        before = tokens[index - 1][2].casefold() if index else ""
        after = following[2].casefold() if following else ""
        near = masked[max(0, start - 6) : end + 6]
        timed = (
            word == token
            and (
                before in _TIME_BEFORE
                or (before == "of" and key in _MONTHS)
                or after in _TIME_AFTER
                or after in _MONTHS  # "Sunday, October 20th"
                or masked[max(0, start - 1) : start] == "("  # "this day (Sunday)"
                or any(ch.isdigit() for ch in near)
            )
        )
        (times if timed else names)[key] += 1
    return frozenset(
        key
        for key, count in names.items()
        if count >= CALENDAR_NAME_USES and 2 * times[key] < count
    )


_DROP_PREFIX: frozenset[str] = frozenset(
    {"mr", "mrs", "ms", "dr", "mr.", "mrs.", "dr.", "mlle", "mme", "messrs"}
)
# What a surname said once after a title written short with its period scores: a name in
# passing ("Dr. Denman", "Mme. Montpensier") until the scene names it again, as when the
# period was read as a sentence's end ("Mr Holt", without one, is a name at once).
_TITLED_ONCE = 0.9
# Titles of one person written short, whose period ends no sentence ("Mr. Hall"); not "Messrs."
# (a firm: "Messrs. Maw"), whose name after it is still read as opening one.
_SHORT_TITLES: frozenset[str] = frozenset({"mr", "mrs", "ms", "dr", "mlle", "mme"})
# Titles of address written out that open a name and are never inside one after a word that is
# no title: "O'Connell Bridge Miss O'Callaghan" is two names side by side ("Little Miss" and
# "Lady Mary" aside, an honorific before them).
_ADDRESS_TITLES: frozenset[str] = frozenset(
    {"miss", "missus", "mister", "madame", "monsieur", "mademoiselle", "mrs", "mr"}
)
_CONNECTORS: frozenset[str] = frozenset(
    {"of", "de", "du", "von", "van", "der", "den", "del", "da", "di", "la", "le"}
)
_CONTRACTION_TAILS: tuple[str, ...] = ("s", "t", "re", "ve", "ll", "d", "m", "em", "clock")
_MAX_RUN_WORDS = 6
# A name in a script without capitals, in English prose: "李明", "山田太郎", "김민준" (a longer run
# of such letters is a phrase quoted in that language)
_UNCASED_NAME_LETTERS = 4

_LETTERS = rf"(?:{LETTER})"  # a letter with its combining marks ("e" + U+0301 is "é")
_WORD_RE = re.compile(rf"{_LETTERS}+(?:['’\-]{_LETTERS}+)*")
# A hyphen set as a dash after a name, as older printings do ("Lord Orville-I own", "Miss
# Anville-you are kind": Evelina): the word after it is one of these, last in the token, so
# the name ends at the hyphen. A name's own hyphen joins a name ("Mary-Ann") or runs on to one
# ("Stratford-upon-Avon").
_DASHED_ON: frozenset[str] = frozenset(
    {
        "i", "you", "he", "she", "it", "we", "they", "me", "him", "her", "us", "them",
        "my", "your", "his", "its", "our", "their", "but", "and", "or", "nor", "yet", "so",
        "if", "that", "this", "what", "when", "then", "there", "oh", "ah", "no", "yes", "not",
        "as", "for", "is", "was", "will", "would", "shall", "should", "do", "did", "have", "had",
    }
)  # fmt: skip


def _tokens(masked: str) -> list[tuple[int, int, str]]:
    """The words of `masked` with their offsets; a token whose last part follows a capitalised
    word over a hyphen set as a dash (`_DASHED_ON`) is two words, the hyphen between them."""
    tokens: list[tuple[int, int, str]] = []
    for match in _WORD_RE.finditer(masked):
        start, end, word = match.start(), match.end(), match.group(0)
        head, hyphen, tail = word.rpartition("-")
        last_of_head = head.rsplit("-", 1)[-1]
        if (
            hyphen
            and last_of_head[:1].isupper()
            and tail.casefold() in _DASHED_ON
            and (tail == "I" or tail.islower())
        ):
            tokens.append((start, start + len(head), head))
            tokens.append((end - len(tail), end, tail))
        else:
            tokens.append((start, end, word))
    return tokens


_SKIP_BACK = frozenset(" \t\"'“‘”’([{*-–—_>#•")
_SENTENCE_END = frozenset(".!?…:;")
_DOUBLE_QUOTED = re.compile(r"[\"“]([^\"“”\n]{1,48})[\"”]")
_SINGLE_QUOTED = re.compile(r"(?<![\w’'])['‘]([^'‘’\n]{1,48}?)['’](?![\w’'])")
_QUOTED_PHRASE = re.compile(
    rf"^{_LETTERS}+(?:['’\-]{_LETTERS}+)*(?:\s+{_LETTERS}+(?:['’\-]{_LETTERS}+)*){{0,3}}$"
)


def norm_key(term: str) -> str:
    """The store's comparison key (`glossary.normalize.normalize_term`), with any leading article
    of a longer name dropped ("a Hollow Crown" is "hollow crown"). Compares candidates with known
    terms."""
    words = normalize_term(term).replace("_", " ").split()
    if len(words) > 1 and words[0] in ARTICLES:
        words = words[1:]
    return " ".join(words)


def _is_compound_of_common(word: str) -> bool:
    """`glimmerstone` = `glimmer` + `stone`: a made-up compound of two ordinary words."""
    return closed_up(word.casefold(), is_common_word) is not None


def _is_contraction(token: str) -> bool:
    lowered = token.casefold().translate(APOSTROPHES)
    if "'" not in lowered:
        return False
    head, _, tail = lowered.rpartition("'")
    return tail in _CONTRACTION_TAILS or head in {"o", "y", "ma"} or lowered in COMMON_WORDS


def _at_sentence_start(text: str, position: int) -> bool:
    """Does the word at `position` open a sentence: after a sentence's end, a line's start, or
    an opening quote (speech opens a sentence: "For Helium!", “Where's Black Dog?”)?"""
    index = position - 1
    while index >= 0 and text[index] in _SKIP_BACK:
        if text[index] in _OPENING_QUOTES and (index == 0 or not text[index - 1].isalnum()):
            return True
        index -= 1
    if index >= 0 and text[index] == "." and _ends_title(text, index):
        return False  # "Mrs. Hall": a name after a title's period opens no sentence
    return index < 0 or text[index] == "\n" or text[index] in _SENTENCE_END


def _ends_title(text: str, period: int) -> bool:
    """Whether the period at `period` ends a title written short ("Mr.", "Mrs.", "Dr.")."""
    start = period
    while start > 0 and text[start - 1].isalpha():
        start -= 1
    before = text[start - 1] if start > 0 else " "
    return not before.isalnum() and text[start:period].casefold() in _SHORT_TITLES


_OPENING_QUOTES = frozenset('"“‘')


@dataclass(slots=True)
class _Draft:
    term: str
    kind: str
    score: float
    offset: int
    variants: list[str] = field(default_factory=list)
    rules: int = 1


def find_candidates(
    text: str,
    known: Iterable[str] = (),
    *,
    min_score: float = DEFAULT_MIN_SCORE,
    limit: int | None = None,
    known_words: bool = True,
) -> list[Candidate]:
    """Candidate terms of `text` not in `known` (terms and aliases, compared normalized), best
    first (score, then first occurrence). `min_score` 1.0 keeps names seen mid-sentence, quoted
    coinages and twice-seen unusual compounds; lower it for recall, raise it for precision.
    With `known_words`, a one-word candidate that is a word of a known multiword name (`Quill`
    beside a known `Ambrose Quill`) is left out too."""
    masked, proposed, lowercase, capital_mid = _proposals(text)
    drafts = {key: replace(draft, variants=list(draft.variants)) for key, draft in proposed.items()}

    known_keys, word_index = _known_index(known)
    for key in [key for key in drafts if " of " in key]:
        head = key.split(" of ", 1)[0]
        singular = _singular(head) if " " not in head else None
        if singular and (
            norm_key(singular) in drafts
            or norm_key(singular) in known_keys
            or is_english_word(singular)
        ):
            del drafts[key]  # "Tharks of Barsoom", "Chieftains of Thark": some of a people
    _fold_variants(drafts)
    _fold_forms(drafts)
    _fold_titled_forms(drafts)
    _fold_short_names(drafts)
    titled_known = {_titled_key(name) for name in known if len(name.split()) > 2} - {None}
    known_forms = {form_key(name) for name in known} - {""}
    results: list[Candidate] = []
    for key, draft in drafts.items():
        names = [draft.term, *draft.variants]
        if any(norm_key(name) in known_keys for name in names):
            continue
        if any(form_key(name) in known_forms for name in names):
            continue  # another form of a known name: "Four-Dimensioned" beside "Four Dimensions"
        if len(names[0].split()) == 2 and _titled_key(names[0]) in titled_known:
            continue  # "Captain Rook" beside a known "Captain Ismay Rook"
        if (
            " " not in key
            and draft.kind in (KIND_NAME, KIND_TITLE)
            and draft.term[:1].isupper()
            and lowercase[key] >= max(1, capital_mid[key])
        ):
            if is_english_word(draft.term):
                continue
            # a coinage capitalised where a sentence opens: its lowercase form is the term
            draft.term, draft.kind = draft.term.lower(), KIND_WORD
        if known_words and " " not in key and key in word_index:
            continue
        found = {name: find_term(masked, name) for name in names}
        spans = _disjoint(span for name_spans in found.values() for span in name_spans)
        occurrences = len(spans) or 1
        # where the name itself first occurs, not the title an alias keeps ("Mr. Kemp")
        plain = [name for name in names if name.split()[0].casefold() not in _SHORT_TITLES]
        starts = [span[0] for name in plain or names for span in found[name]]
        first = min(starts) if starts else draft.offset
        score = round(draft.score + 0.25 * (draft.rules - 1), 3)
        if score < min_score:
            continue
        results.append(
            Candidate(
                term=draft.term,
                score=score,
                first_offset=first,
                occurrences=occurrences,
                kind_hint=draft.kind,
                variants=tuple(draft.variants),
            )
        )
    results.sort(key=lambda c: (-c.score, c.first_offset, c.term))
    return results if limit is None else results[:limit]


@lru_cache(maxsize=256)
def _proposals(text: str) -> tuple[str, dict[str, _Draft], Counter[str], Counter[str]]:
    """What `text` alone proposes, before any known name is looked at: the masked text, the
    drafts by key in the order proposed, and the counts of lowercase and mid-sentence
    capitalised tokens. A pure function of the text, asked again of the same scene at every
    look at it while the glossary grows, so its answers are kept; callers copy the drafts
    before changing them."""
    masked = mask_markup(text)
    drafts: dict[str, _Draft] = {}
    tokens = _tokens(masked)
    named_days = _calendar_names(masked, tokens)  # "my man Friday": a day written as a name
    not_names = NOT_NAMES - named_days
    # A capitalised word the text also writes in lowercase at least as often as it capitalises
    # it mid-sentence is a word, not a name ("Will" beside "will"); a coinage so written is
    # proposed in lowercase ("Tallowglass" opening a sentence beside "tallowglass").
    lowercase = Counter(token.casefold() for _s, _e, token in tokens if token.islower())
    capital_mid = Counter(
        token.casefold()
        for start, _e, token in tokens
        if _is_capitalised(token) and not _at_sentence_start(masked, start)
    )

    def propose(
        term: str, kind: str, score: float, offset: int, variants: tuple[str, ...] = ()
    ) -> None:
        key = norm_key(term)
        if (
            not key
            or key in not_names
            or (key not in named_days and _is_ordinary_here(term, lowercase, capital_mid))
            or is_demonym_of_real_place(term)
            or is_descriptive_compound(term)
        ):
            return  # ordinary vocabulary and plainly used real-world names are no story terms
        draft = drafts.get(key)
        if draft is None:
            drafts[key] = _Draft(term, kind, score, offset, list(variants))
            return
        if _KIND_RANK[kind] < _KIND_RANK[draft.kind]:
            draft.kind = kind
        draft.score = max(draft.score, score) if kind != draft.kind else draft.score + score
        draft.rules += 1
        draft.variants.extend(v for v in variants if v not in draft.variants)
        if offset < draft.offset:
            draft.offset = offset
            draft.term = term

    _propose_names(masked, tokens, propose, not_names)
    _propose_lowercase(tokens, propose)
    _propose_quoted(masked, propose)
    return masked, drafts, lowercase, capital_mid


def _is_ordinary_here(term: str, lowercase: Counter[str], capital_mid: Counter[str]) -> bool:
    """Whether `term` is ordinary vocabulary (`is_ordinary`), except that a word spelled with an
    apostrophe that the text capitalises mid-sentence and never writes in lowercase is a name,
    not an English word with letters dropped as spoken ("M'ling", not "modeling"; "gen'leman",
    "v'yage" are written in lowercase)."""
    if not is_ordinary(term):
        return False
    key = term.casefold()
    if " " in key or not elided_word(term) or lowercase[key] or not capital_mid[key]:
        return True
    return ordinary_reason(term, elision=False) is not None


def _disjoint(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans in order, longest first at a position, without those inside an earlier one."""
    kept: list[tuple[int, int]] = []
    for start, end in sorted(set(spans), key=lambda span: (span[0], -span[1])):
        if kept and start < kept[-1][1]:
            continue
        kept.append((start, end))
    return kept


def _known_index(known: Iterable[str]) -> tuple[set[str], set[str]]:
    keys: set[str] = set()
    words: set[str] = set()
    for name in known:
        key = norm_key(name)
        if not key:
            continue
        keys.add(key)
        parts = key.split()
        if len(parts) > 1:
            words.update(p for p in parts if p not in STARTERS and p not in _CONNECTORS)
    return keys, words


def _propose_names(
    masked: str, tokens: list[_Token], propose: _Propose, not_names: frozenset[str] = NOT_NAMES
) -> None:
    runs: list[list[_Token]] = []
    index = 0
    while index < len(tokens):
        if not _is_capitalised(tokens[index][2]):
            index += 1
            continue
        run = [tokens[index]]
        cursor = index + 1
        while cursor < len(tokens) and len(run) <= _MAX_RUN_WORDS:
            gap = masked[run[-1][1] : tokens[cursor][0]]
            initial = len(run[-1][2]) == 1 and run[-1][2].isupper() and len(run) > 1
            title = run[-1][2].casefold() in _SHORT_TITLES
            if _is_capitalised(tokens[cursor][2]) and (
                gap == " " or ((initial or title) and gap == ". ")  # "James K. Powell", "Mr. Hall"
            ):
                run.append(tokens[cursor])
                cursor += 1
                continue
            # connectors: "Order of the Ember", "Isle of Ash"
            link = _connector_length(masked, tokens, run[-1], cursor)
            if link:
                run.extend(tokens[cursor : cursor + link + 1])
                cursor += link + 1
                continue
            break
        starter = run[0][2].casefold()
        if len(run) > 1 and (
            starter in ARTICLES or (starter in STARTERS and _at_sentence_start(masked, run[0][0]))
        ):
            run = run[1:]  # "The Lantern Court", "Later Saxirn Brondeep"
        if len(run) <= _MAX_RUN_WORDS:
            runs.append(run)
        index = cursor
    alone = Counter(run[0][2].casefold() for run in runs if len(run) == 1)
    mid_sentence = {
        " ".join(t[2] for t in run).casefold()
        for run in runs
        if not _at_sentence_start(masked, run[0][0])
    }
    together = Counter(" ".join(t[2] for t in run).casefold() for run in runs)
    for run in runs:
        words = [token[2].casefold() for token in run]
        if (
            len(run) > 1
            and together[" ".join(words)] == 1
            and words[0] not in HONORIFICS
            and all(word in alone and word not in _CONNECTORS for word in words)
        ):
            # "Saxirn Bronddeep": two names side by side, each also seen alone
            for token in run:
                _propose_run(masked, [token], propose, not_names)
        elif (
            len(run) > 1
            and " ".join(words[1:]) in mid_sentence
            and " ".join(words) not in mid_sentence
            and words[0] not in HONORIFICS
            and _at_sentence_start(masked, run[0][0])
        ):
            # "Ask Quill to come": the name is seen without the word that opens the sentence
            _propose_run(masked, run[1:], propose, not_names)
        else:
            _propose_run(masked, run, propose, not_names)


def _connector_length(masked: str, tokens: list[_Token], last: _Token, cursor: int) -> int:
    """1 or 2 when tokens[cursor:] is a connector ("of", "of the") before a capitalised word."""
    if cursor >= len(tokens) or masked[last[1] : tokens[cursor][0]] != " ":
        return 0
    first = tokens[cursor][2]
    if first not in _CONNECTORS:
        return 0
    steps = 1
    if cursor + 1 < len(tokens) and tokens[cursor + 1][2] == "the":
        if masked[tokens[cursor][1] : tokens[cursor + 1][0]] != " ":
            return 0
        steps = 2
    following = cursor + steps
    if following >= len(tokens):
        return 0
    if masked[tokens[following - 1][1] : tokens[following][0]] != " ":
        return 0
    return steps if _is_capitalised(tokens[following][2]) else 0


def _is_capitalised(token: str) -> bool:
    """Whether `token` is written as a name: capitalised and not all in capitals, or a short
    word of a script without capitals ("李明", "김민준": in English prose, a name)."""
    if _is_uncased_name(token):
        return True
    if not token[0].isupper():
        return False
    letters = [ch for ch in token if ch.isalpha()]
    return not (len(letters) > 1 and all(ch.isupper() for ch in letters))


def _is_uncased_name(token: str) -> bool:
    """A word of at most `_UNCASED_NAME_LETTERS` letters, none with a case (Han, kana, Hangul):
    such a script marks no name by a capital, and a longer run is a phrase, not a name."""
    # counted composed: a Hangul syllable written decomposed is two or three jamo
    letters = [ch for ch in unicodedata.normalize("NFC", token) if ch.isalpha()]
    return (
        0 < len(letters) <= _UNCASED_NAME_LETTERS
        and all(ch.isalpha() or unicodedata.category(ch)[0] == "M" for ch in token)
        and all(ch.lower() == ch.upper() for ch in letters)
    )


def _propose_run(
    masked: str, run: list[_Token], propose: _Propose, not_names: frozenset[str] = NOT_NAMES
) -> None:
    titled_at = [
        i
        for i, token in enumerate(run)
        if i
        and (
            token[2].casefold() in _SHORT_TITLES
            or (
                token[2].casefold() in _ADDRESS_TITLES
                and run[i - 1][2].casefold() not in HONORIFICS | _SHORT_TITLES | _ADDRESS_TITLES
            )
        )
    ]
    if titled_at:  # "Honourable Mr. Camerfield": the name opens at its title
        # (and "across O'Connell Bridge Miss O'Callaghan said": a name runs into a titled one)
        run = run[titled_at[-1] :]
    words = [token[2] for token in run]
    offsets = [token[0] for token in run]
    at_start = _at_sentence_start(masked, offsets[0])
    titled = _preceded_by_the(masked, offsets[0])
    # strip what opens the run without naming anything: "The Lantern Court", "Then Varen",
    # "Across Saxirn" (a common word opening the sentence before an unusual name)
    dropped = ""  # a title written short that the name drops ("Mr. " of "Mr. Bingley")
    while words:
        first = words[0].casefold()
        if first in _CALENDAR and titled and len(words) == 2 and is_english_word(words[1]):
            break  # "the March Hare", "the May Queen": a month or day naming one thing
        if first in _SHORT_TITLES and len(words) == 2:
            name = _without_possessive(words[1])
            if is_ordinary(name):  # "Mrs. Hall": a surname that is an English word
                written = masked[offsets[0] : offsets[1]] + name
                once = _TITLED_ONCE if "." in written else 1.5
                propose(written, KIND_NAME, once, offsets[0])
                return
        if first in _SHORT_TITLES and len(words) > 1:
            dropped = masked[offsets[0] : offsets[1]]
        if first in ARTICLES or first in _DROP_PREFIX or first in not_names:
            titled = titled or first == "the"
        elif (
            first in _CONNECTORS
            or (at_start and first in STARTERS)
            or (
                at_start
                and len(words) > 1
                and first not in HONORIFICS
                and _token_is_common(words[0])
                and any(not _token_is_common(w) for w in words[1:])
            )
        ):
            pass
        else:
            break
        words, offsets = words[1:], offsets[1:]
        at_start = False
    while words and (words[-1].casefold() in _CONNECTORS or words[-1].casefold() in not_names):
        words, offsets = words[:-1], offsets[:-1]
    if not words:
        return
    words[-1] = _without_possessive(words[-1])
    if len(words) == 1 and len(words[0]) < 2:
        return
    term = " ".join(
        f"{word}." if len(word) == 1 and word.isupper() and index < len(words) - 1 else word
        for index, word in enumerate(words)
    )  # an initial keeps its period: "James K. Powell"
    lowered = term.casefold()
    if lowered in not_names or (len(words) == 1 and lowered in STARTERS | HONORIFICS):
        return
    content = [w for w in words if w.casefold() not in _CONNECTORS and w != "the"]
    uncommon = any(not _token_is_common(w) for w in content)
    if len(words) == 1 and not uncommon and _preceded_by_comma(masked, offsets[0]):
        return  # a vocative: "Old tallow, Captain," / "Yes, Warden."
    inner_mark = any(("'" in w or "’" in w or "-" in w) and not _is_contraction(w) for w in words)
    multi = len(content) > 1
    if at_start:
        if not (uncommon or multi) or (len(words) == 1 and is_english_word(words[0])):
            return  # an English word that just opens a sentence ("Evidently", "Grasping")
        score = 0.4
    else:
        score = 1.0
    if multi:
        score += 0.5
    if uncommon:
        score += 0.5
    if inner_mark:
        score += 0.5
    if "." in dropped and len(words) == 1:
        score = _TITLED_ONCE
    kind = KIND_TITLE if titled else KIND_NAME
    singular = _singular(term) if len(words) == 1 else None
    # a surname keeps its title as an alias: "Bingley" is also "Mr. Bingley", which tells him
    # from "Miss Bingley"
    variants = (f"{dropped}{term}",) if dropped and len(words) == 1 else ()
    propose(term, kind, score, offsets[0], variants + ((singular,) if singular else ()))


def _without_possessive(word: str) -> str:
    """The word without a possessive "'s" ("Hall's": "Hall")."""
    possessive = re.match(r"^(.+?)['’]s$", word)
    return possessive.group(1) if possessive else word


def _preceded_by_comma(masked: str, position: int) -> bool:
    return masked[max(0, position - 2) : position] == ", "


def _token_is_common(token: str) -> bool:
    """A common word, an inflection of one, a contraction, or a hyphenation of such words."""
    token = _without_possessive(token)
    if _is_contraction(token):
        return True
    parts = [part for part in re.split(r"['’\-]", token) if part]
    return bool(parts) and all(len(part) <= 3 or is_common_word(part) for part in parts)


def _singular(word: str) -> str | None:
    """The singular of a word that looks like a regular plural (`driftlings`), else None."""
    lowered = word.casefold()
    if len(lowered) < 5 or not lowered.endswith("s") or lowered.endswith(_NOT_PLURAL):
        return None
    if lowered.endswith("ies"):
        return word[:-3] + "y"
    if lowered.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    return word[:-1]


_NOT_PLURAL = ("ss", "us", "is", "os", "as", "'s", "’s")


def _preceded_by_the(masked: str, position: int) -> bool:
    return masked[max(0, position - 4) : position].casefold() == "the "


def _propose_lowercase(tokens: list[_Token], propose: _Propose) -> None:
    """Lowercase compounds (`ember-tithe`) and repeated unusual words (`glimmerstone`); a plural
    counts for its singular, which becomes the term (`driftlings` -> `driftling`)."""
    counts: dict[str, int] = {}
    firsts: dict[str, tuple[int, str]] = {}
    plurals: dict[str, str] = {}
    for start, _end, token in tokens:
        lowered = token.casefold()
        singular = _singular(lowered)
        # an English word is no plural of a coinage: "perhaps" is not "perhap"s
        english = "-" not in lowered and is_english_lowercase(lowered)
        plural = singular and not is_common_word(singular) and not english
        base = singular if plural else lowered
        counts[base] = counts.get(base, 0) + 1
        if token.islower():
            if base != lowered:
                plurals.setdefault(base, token)
            if base not in firsts:
                firsts[base] = (start, base)
    for base, (start, term) in firsts.items():
        if base in NOT_NAMES or base in COMMON_WORDS or _is_contraction(term):
            continue
        count = counts[base]
        variants = (plurals[base],) if base in plurals else ()
        if "-" in term or "'" in term or "’" in term:
            if is_descriptive_compound(term):
                continue
            score = (0.5 if _is_english_compound(term) else 1.0) + 0.5 * (count - 1)
            propose(term, KIND_COMPOUND, score, start, variants)
        elif len(term) >= 5 and not is_english_lowercase(term):
            score = 0.35 * count + (0.3 if _is_compound_of_common(term) else 0.0)
            propose(term, KIND_WORD, score, start, variants)


def _is_english_compound(term: str) -> bool:
    """A hyphenated word made of English words ("pistol-shot", "biscuit-tin", "tithe-jar"):
    proposed only when a scene names it twice, as a story names its own compounds; one
    mention is a passing everyday compound ("capstan-bar": every part a word the language
    knows, `KNOWN_WORD_ZIPF`). A part English does not know ("thoat-rider", "chuck-farthen") or
    a thing named by what it does ("fighting-machine") is proposed at once."""
    parts = [part for part in re.split(r"['’\-]", term) if part]
    if _token_is_common(term):
        return True
    if len(parts) == 2 and parts[0].endswith("ing"):
        return False
    return all(len(part) > 2 and frequency(part) >= KNOWN_WORD_ZIPF for part in parts)


def _propose_quoted(masked: str, propose: _Propose) -> None:
    for pattern in (_DOUBLE_QUOTED, _SINGLE_QUOTED):
        for match in pattern.finditer(masked):
            phrase = match.group(1).strip()
            if not _QUOTED_PHRASE.match(phrase):
                continue
            words = phrase.split()
            several = len(words) > 1  # 'the hollowing' is a coinage even if 'hollowing' is not
            offset = match.start(1) + (len(match.group(1)) - len(match.group(1).lstrip()))
            if len(words) > 1 and words[0].casefold() in ARTICLES:
                offset += len(words[0]) + 1
                words = words[1:]
            if all(w.casefold() in STARTERS for w in words):
                continue
            if _is_quoted_speech(phrase, words):
                continue
            marked = any(
                ("-" in w or "'" in w or "’" in w) and not _is_contraction(w) for w in words
            )
            uncommon = any(not _token_is_common(w) for w in words)
            score = 1.0 if (marked or uncommon or several) else 0.6
            singular = _singular(words[0]) if len(words) == 1 else None
            propose(" ".join(words), KIND_COINAGE, score, offset, (singular,) if singular else ())


# Words that make a quoted lowercase phrase a piece of speech, not a coinage: "you hold the
# basin", "you are safe here", "his poor mother".
_SPEECH_WORDS = frozenset((
    "i", "you", "he", "she", "we", "they", "me", "him", "us", "them", "is", "are", "was",
    "were", "am", "do", "does", "did", "have", "has", "had", "will", "shall", "can", "here",
    "there", "my", "your", "his", "our", "their",
))  # fmt: skip


def _is_quoted_speech(phrase: str, words: list[str]) -> bool:
    """A quoted lowercase phrase that is speech or a description ("you hold the basin",
    "creeping painfully"), or a quoted clause about a name ("Billy Bones his fancy", "Keth'ra
    will come"), not a coinage ("the man on the stair", "lightless debt")."""
    if len(words) < 2:
        return False
    if phrase != phrase.lower():  # a name in a quoted clause: "Billy Bones his fancy"
        return any(word in _SPEECH_WORDS for word in words if word == word.lower())
    lowered = [word.casefold() for word in words]
    if any(word in _SPEECH_WORDS for word in lowered):
        return True
    return any(len(w) > 4 and w.endswith("ly") and is_english_word(w) for w in lowered)


def _fold_variants(drafts: dict[str, _Draft]) -> None:
    """Two drafts of which one names the other as a variant become one, under the shorter name
    (`Gloamhounds` + `gloamhound` -> `gloamhound`, `Unwickings` + `Unwicking` -> `Unwicking`)."""
    for key in sorted(drafts):
        draft = drafts.get(key)
        if draft is None:
            continue
        for variant in list(draft.variants):
            other_key = norm_key(variant)
            other = drafts.get(other_key)
            if other is None or other is draft:
                continue
            pair = sorted(((key, draft), (other_key, other)), key=lambda i: (len(i[0]), i[0]))
            (_, keep), (drop_key, drop) = pair
            keep.score = max(keep.score, drop.score) + 0.25
            keep.offset = min(keep.offset, drop.offset)
            keep.kind = min(keep.kind, drop.kind, key=_KIND_RANK.__getitem__)
            for name in (drop.term, *drop.variants):
                if norm_key(name) != norm_key(keep.term) and name not in keep.variants:
                    keep.variants.append(name)
            del drafts[drop_key]
            break


def _fold_forms(drafts: dict[str, _Draft]) -> None:
    """Drafts that are forms of one idea (`form_key`: "Four Dimensions", "Four-Dimensioned",
    "Fourth Dimension"; "Spy-glass", "Spyglass") become one, under the best scored (then
    first seen), the others its variants."""
    groups: dict[str, list[str]] = {}
    for key, draft in drafts.items():
        groups.setdefault(form_key(draft.term), []).append(key)
    for form, keys in groups.items():
        if not form or len(keys) < 2:
            continue
        ranked = sorted(keys, key=lambda k: (-drafts[k].score, drafts[k].offset, k))
        keep = drafts[ranked[0]]
        for drop_key in ranked[1:]:
            drop = drafts.pop(drop_key)
            keep.score += 0.25
            keep.offset = min(keep.offset, drop.offset)
            keep.kind = min(keep.kind, drop.kind, key=_KIND_RANK.__getitem__)
            for name in (drop.term, *drop.variants):
                if norm_key(name) != norm_key(keep.term) and name not in keep.variants:
                    keep.variants.append(name)


def _titled_key(name: str) -> tuple[str, str] | None:
    """(title, last word) of a name that opens with a title ("Captain Ismay Rook": ("captain",
    "rook")), else None. Adjectives among the honorifics ("Old", "Black") are no titles."""
    words = norm_key(name).split()
    if len(words) < 2 or words[0] not in TITLES:
        return None
    return words[0], words[-1]


def _fold_titled_forms(drafts: dict[str, _Draft]) -> None:
    """A title and a surname ("Captain Rook", "Captain Carter") becomes a variant of the one
    longer name with that title and surname ("Captain Ismay Rook", "Captain John Carter")."""
    longer: dict[tuple[str, str], list[str]] = {}
    for key, draft in drafts.items():
        titled = _titled_key(draft.term)
        if titled and len(key.split()) > 2 and " of " not in key:
            longer.setdefault(titled, []).append(key)
    for key in sorted(drafts):
        draft = drafts.get(key)
        titled = _titled_key(draft.term) if draft else None
        if draft is None or titled is None or len(key.split()) != 2:
            continue
        owners = longer.get(titled, [])
        if len(owners) != 1:
            continue
        owner = drafts[owners[0]]
        owner.variants.extend(n for n in (draft.term, *draft.variants) if n not in owner.variants)
        owner.score += 0.5 * draft.score
        owner.offset = min(owner.offset, draft.offset)
        del drafts[key]


def _fold_short_names(drafts: dict[str, _Draft]) -> None:
    """A one-word name that is a word of exactly one multiword name becomes its variant."""
    multi = {
        key: d for key, d in drafts.items() if " " in key and d.kind in (KIND_NAME, KIND_TITLE)
    }
    for key in sorted(drafts):
        draft = drafts[key]
        if " " in key or draft.kind not in (KIND_NAME, KIND_TITLE):
            continue
        owners = [mkey for mkey in multi if key in mkey.split()]
        if len(owners) != 1:
            continue
        owner = drafts[owners[0]]
        owner.variants.append(draft.term)
        owner.score += 0.5 * draft.score
        owner.offset = min(owner.offset, draft.offset)
        del drafts[key]
