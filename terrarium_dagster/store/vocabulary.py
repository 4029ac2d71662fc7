"""Ordinary vocabulary: is a term just an English word (or a real-world name used plainly)?

Judged by word frequency (the `wordfreq` package's Zipf scale: 3 is once per million words, 6
once per thousand), not by an embedded list. A single word at or above `ORDINARY_ZIPF` ("cried",
"hairy", "Broadway", "Kentucky") is ordinary; a hyphenated word is ordinary when its closed form
is a word ("to-day" is "today", "fore-arm" is "forearm"). Several words are never judged here: a
story's coinages are often made of ordinary words ("Quiet Choir", "heart-lamp").

Two forms of a word are judged by the other form too: a plural whose singular is ordinary
("Sundays", "Bibles") and a truncated word whose "s"-form is ordinary ("perhap" for "perhaps", what
a naive singular of "perhaps" gives) are ordinary. So is an English word written as it is spoken,
letters dropped for an apostrophe ("gen'leman", "partic'lar", "v'yage", "nor'ard").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

ORDINARY_ZIPF = 3.8
CLOSED_COMPOUND_ZIPF = 3.0
# A lowercase hyphenated word is held to a lower bar: "night-cap" (nightcap 2.4), "snuff-box"
# (1.5), "stock-still" (1.35), "latter-day" (1.4) are dictionary words; a story's lowercase
# compounds are unknown closed ("heartlamp", "embertithe": 0).
LOWERCASE_CLOSED_COMPOUND_ZIPF = 1.3
# A lowercase word English knows at all (Zipf 1 or more: "brushwood" 1.9, "canebrake" 1.2)
# is English when it is made of English words, each at least `CLOSED_PART_ZIPF` ("brush",
# "wood"), or is the adverb of an English adjective of at least `ADVERB_STEM_ZIPF`
# ("incontinently"); a story's coinages are unknown to it ("flamesight", "tellingfire": 0).
KNOWN_ZIPF = 1.0
CLOSED_PART_ZIPF = 3.5
ADVERB_STEM_ZIPF = 2.0
# Below this a word is no English word of its own ("perhap" 1.2 beside "perhaps" 5.1).
TRUNCATED_ZIPF = 1.5
# The most frequent English words (about Zipf 3 and up) an elided spelling is matched against.
ELIDED_VOCABULARY = 30000
# A spelling that drops a word's last letter as well as letters at its apostrophe keeps this
# much of the word after the apostrophe ("t'ousan": "ousan" of "thousand").
ELIDED_TAIL_CHARS = 4
_ELIDED = re.compile(r"^([^\W\d_]+)['’]([^\W\d_]+)$")
_WORD = re.compile(r"^[^\W\d_]+(?:['’][^\W\d_]+)?$")


@functools.lru_cache(maxsize=65536)
def frequency(word: str) -> float:
    """The Zipf frequency of `word` in English (0.0 for a word wordfreq has never seen)."""
    # wordfreq is imported when first asked (a fifth of a second): commands that never judge a
    # word (status, lineage, an export of JSON, every refusal) start without it
    from wordfreq import zipf_frequency

    return float(zipf_frequency(word.casefold(), "en"))


@functools.lru_cache(maxsize=65536)  # a site's links ask it of one name per view
def ordinary_reason(term: str, *, elision: bool = True) -> str | None:
    """Why `term` is ordinary vocabulary (one line), or None when it may be a story term.
    Without `elision`, a word spelled with an apostrophe is not read as an English word with
    letters dropped (the text writes it as a name: "M'ling", never "m'ling")."""
    text = " ".join(term.split())
    if not text or " " in text:
        return None
    parts = [part for part in re.split(r"[-‐‑–—]", text) if part]
    if len(parts) > 1:
        closed = "".join(parts)
        bar = LOWERCASE_CLOSED_COMPOUND_ZIPF if text == text.lower() else CLOSED_COMPOUND_ZIPF
        if all(_WORD.match(part) for part in parts) and frequency(closed) >= bar:
            return f"'{text}' is the ordinary word '{closed.lower()}' written with a hyphen"
        return None
    if not _WORD.match(text):
        return None
    elided = elided_word(text) if elision else None
    if elided:
        return f"'{text}' is the ordinary word '{elided}' written as spoken"
    zipf = frequency(text)
    if zipf >= ORDINARY_ZIPF:
        kind = "an ordinary English word" if text == text.lower() else "an ordinary word or name"
        return f"'{text}' is {kind} (word frequency {zipf:.1f} on the Zipf scale)"
    if text == text.lower() and zipf >= KNOWN_ZIPF:
        made = _made_of_words(text)
        if made:
            return f"'{text}' is the English word {made} (word frequency {zipf:.1f})"
    return _other_form_reason(text, zipf)


def _made_of_words(word: str) -> str | None:
    """How a rare lowercase word English knows is made of English words: two frequent words
    closed up ("brushwood", "hatchway", "downland"), or an adverb of an English adjective
    ("incontinently"); None for an inflection ("wending") or a word that is neither ("thern")."""
    if word.endswith("ly") and frequency(word[:-2]) >= ADVERB_STEM_ZIPF:
        return f"'{word[:-2]}' made an adverb"
    if word.endswith(("ing", "ed", "s")):
        return None
    parts = closed_up(word, lambda part: frequency(part) >= CLOSED_PART_ZIPF)
    return f"'{parts[0]}' and '{parts[1]}' closed up" if parts else None


def closed_up(word: str, is_word: Callable[[str], bool]) -> tuple[str, str] | None:
    """The first cut of `word` into two parts of three letters or more that are both words by
    `is_word` ("brush" and "wood" of "brushwood", "glimmer" and "stone" of "glimmerstone"), or
    None. The one rule of a compound closed up, each caller saying what a word is."""
    for cut in range(3, len(word) - 2):
        head, tail = word[:cut], word[cut:]
        if is_word(head) and is_word(tail):
            return head, tail
    return None


# the words a "'d" joins as "had" or "would" ("I'd", "they'd", "who'd"), not an old past tense
_CONTRACTED = frozenset(
    ("i", "you", "he", "she", "it", "we", "they", "who", "that", "there", "what", "where", "how")
)


@functools.lru_cache(maxsize=1)
def _words_by_opening() -> dict[str, tuple[str, ...]]:
    from wordfreq import top_n_list

    index: dict[str, list[str]] = {}
    for word in top_n_list("en", ELIDED_VOCABULARY):
        if word.isalpha() and len(word) >= 4:
            index.setdefault(word[:1], []).append(word)
    return {opening: tuple(words) for opening, words in index.items()}


def elided_word(term: str) -> str | None:
    """The English word `term` spells with letters dropped for an apostrophe ("gen'leman" is
    "gentleman", "S'pose" "suppose"), or None ("Dakh'ren", "Keth'ra" spell no word; "M'Graw" is a
    name)."""
    match = _ELIDED.match(term)
    if not match or match.group(2)[:1].isupper():
        return None  # "M'Graw", "D'Arcy": a name's own apostrophe
    match = _ELIDED.match(term.casefold())
    if not match:
        return None
    head, tail = match.groups()
    if tail == "d" and head not in _CONTRACTED and len(head) >= 3:
        # an old past tense, "e" dropped: "fill'd" is "filled", "lov'd" "loved" ("I'd" is not)
        for word in (head + "ed", head + "d"):
            if word in _words_by_opening().get(head[:1], ()):
                return word
    if tail in ("s", "t", "d", "ll", "re", "ve", "m"):
        return None  # a possessive or a contraction, not an elision
    for word in _words_by_opening().get(head[:1], ()):
        dropped = len(word) - len(head) - len(tail)
        if 1 <= dropped <= 3 and word.startswith(head) and word.endswith(tail):
            return word
    for word in _words_by_opening().get(head[:1], ()):
        # a last letter dropped too: "t'ousan" is "thousand", as "nothin'" is "nothing"
        dropped = len(word) - len(head) - len(tail) - 1
        if (
            1 <= dropped <= 2
            and len(tail) >= ELIDED_TAIL_CHARS
            and word.startswith(head)
            and word[:-1].endswith(tail)
        ):
            return word
    return None


def _other_form_reason(text: str, zipf: float) -> str | None:
    """Why `text` is a form of an ordinary word: the plural of one ("Sundays"), or a word cut
    short of its final "s" ("perhap")."""
    lowered = text.casefold()
    if lowered.endswith("s") and not lowered.endswith(("ss", "us", "is", "'s", "’s")):
        for singular in (text[:-1], text[:-2] if lowered.endswith("es") else ""):
            if len(singular) >= 3 and frequency(singular) >= ORDINARY_ZIPF > zipf:
                return f"'{text}' is the plural of the ordinary word '{singular}'"
    if zipf < TRUNCATED_ZIPF and frequency(text + "s") >= ORDINARY_ZIPF:
        return f"'{text}' is the ordinary word '{text}s' cut short"
    return None


def is_ordinary(term: str) -> bool:
    return ordinary_reason(term) is not None
