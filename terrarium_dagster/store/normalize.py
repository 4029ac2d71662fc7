"""Normalization of glossary terms, so that spelling variants of one name compare equal.

`normalize_term` is the key the store uses for duplicate detection and exact lookup:
"Ember-Tithe", "ember tithe", "“The Ember–Tithe”" all normalize to ``"ember tithe"``.

`normalize_text` applies the same folding to running text (every punctuation mark becomes a
space), so that `mentions` can tell whether a name occurs in a scene by plain substring search.
"""

from __future__ import annotations

import functools
import re
import unicodedata

# Every apostrophe-like character becomes "'".
_APOSTROPHES = dict.fromkeys(
    map(ord, "\u2018\u2019\u201b\u02bc\u02bb\u02b9\u2032\u0060\uff07"), "'"
)
# Every hyphen or dash becomes "-"; invisible characters disappear.
_DASHES = dict.fromkeys(
    map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"), "-"
)
_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff"), None)
_TRANSLATION = {**_APOSTROPHES, **_DASHES, **_INVISIBLE}

# Punctuation that is part of a name even at its ends ("C#", "50%", "AT&T", "@user").
_KEEP_AT_ENDS = frozenset("#%&@")
_SEPARATORS = re.compile(r"[\s\-]+")
_THE = "the "


def _fold(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return text.translate(_TRANSLATION)


def _strippable(char: str) -> bool:
    if char.isspace() or char in "`~*":
        return True
    return unicodedata.category(char).startswith("P") and char not in _KEEP_AT_ENDS


def _strip_ends(text: str) -> str:
    start, end = 0, len(text)
    while start < end and _strippable(text[start]):
        start += 1
    while end > start and _strippable(text[end - 1]):
        end -= 1
    return text[start:end]


@functools.lru_cache(maxsize=1 << 16)
def normalize_term(term: str) -> str:
    """The comparison key of a term or alias (a pure function, so memoised: exports and the
    name index ask for the same names again and again).

    NFKC, casefold, curly apostrophes made straight, hyphens/dashes and whitespace runs made one
    space, quotes/brackets/sentence punctuation stripped at both ends, a leading "the " dropped.
    Returns ``""`` when nothing nameable remains (the store refuses such names).
    """
    text = _SEPARATORS.sub(" ", _fold(term))
    text = _strip_ends(text)
    if text.startswith(_THE) and len(text) > len(_THE):
        text = _strip_ends(text[len(_THE) :])
    return text


# Ordinals compare as their cardinals in `form_key` ("Fourth Dimension" is "Four Dimensions").
_ORDINALS = {
    "first": "one", "second": "two", "third": "three", "fourth": "four", "fifth": "five",
    "sixth": "six", "seventh": "seven", "eighth": "eight", "ninth": "nine", "tenth": "ten",
}  # fmt: skip
# Endings that make another form of one word: "Dimensions", "Four-Dimensioned",
# "Four-Dimensional"; the longest first, each leaving a stem of four letters or more.
_CLITICS = ("'ll", "'s", "'d")
_FORM_ENDINGS = ("ional", "ioned", "ions", "es", "ed", "s")
_FORM_ROOTS = {"ional": "ion", "ioned": "ion", "ions": "ion"}


@functools.lru_cache(maxsize=1 << 16)
def form_key(term: str) -> str:
    """The key under which forms of one idea compare equal: `normalize_term`, then hyphens and
    spaces dropped, each word's plural, participle or adjective ending and an ordinal folded
    ("Four Dimensions", "Four-Dimensioned", "Fourth Dimension" are all ``"fourdimension"``;
    "Spy-glass" and "Spyglass", "Hawkins'll" and "Hawkins", "Sperm Whale" and "Sperm Whales"
    compare equal). Returns ``""`` when nothing nameable remains."""
    words = normalize_term(term).split()
    stems: list[str] = []
    for word in words:
        word = _ORDINALS.get(word, word)
        for clitic in _CLITICS:
            if word.endswith(clitic) and len(word) > len(clitic) + 1:
                word = word[: -len(clitic)]
                break
        for ending in _FORM_ENDINGS:
            root = _FORM_ROOTS.get(ending, "")
            if word.endswith(ending) and len(word) - len(ending) + len(root) >= 4:
                word = word[: -len(ending)] + root
                break
        stems.append(word)
    key = "".join(stems)
    # what a plural's "es" takes with it, folded in both forms: a silent e ("Sperm Whale",
    # "Sperm Whales"), a word's own s ("Grampus", "Grampuses"; "Glass", "Glasses")
    for letter in ("e", "s"):
        if key.endswith(letter) and len(key) > 4:
            key = key[:-1]
    return key


_NON_NAME = re.compile(r"[^\w'#%&@+]+")
_POSSESSIVE = re.compile(r"'s\b")
_EDGE_APOSTROPHE = re.compile(r"(?<!\w)'|'(?!\w)")


def normalize_text(text: str) -> str:
    """Fold running text (or a name) for mention matching.

    Same folding as `normalize_term`, but every punctuation mark except apostrophes inside words
    (and ``# % & @ +``) becomes a space, and a possessive "'s" is dropped. The result is a
    single-space-separated string without leading/trailing spaces.
    """
    folded = _POSSESSIVE.sub("", _fold(text))
    folded = _EDGE_APOSTROPHE.sub(" ", folded)
    return " ".join(_NON_NAME.sub(" ", folded).split())


def mentions(folded_text: str, name: str) -> bool:
    """Whether ``name`` occurs as whole words in ``folded_text`` (a `normalize_text` result)."""
    needle = normalize_text(name)
    if not needle:
        return False
    return f" {needle} " in f" {folded_text} "


def term_variants(term: str) -> list[str]:
    """Surface forms under which a term may appear in text (for highlighting or matching).

    The term itself, its hyphen/space variants and, for a term starting with "the ", the term
    without it. Order is stable; duplicates are removed.
    """
    base = " ".join(term.split())
    candidates = [base, base.replace("-", " "), base.replace(" ", "-")]
    lowered = base.casefold()
    if lowered.startswith(_THE) and len(base) > len(_THE):
        rest = base[len(_THE) :]
        candidates += [rest, rest.replace("-", " "), rest.replace(" ", "-")]
    seen: set[str] = set()
    variants: list[str] = []
    for candidate in candidates:
        if candidate and candidate not in seen:
            seen.add(candidate)
            variants.append(candidate)
    return variants


# Double quotes of every kind become '"' when a quotation is compared with the text it quotes.
_DOUBLE_QUOTES = dict.fromkeys(map(ord, "\u201c\u201d\u201e\u201f\u00ab\u00bb\u2033\u02ba"), '"')
_QUOTE_ENDS = " \t\n\"'\u201c\u201d\u2018\u2019\u00ab\u00bb\u2026"


def one_letter_apart(word: str, other: str, *, keep_last: bool = False) -> bool:
    """Do two words differ by one letter changed, added or dropped ("hampsted", "hampstead")?
    `keep_last`: not by their last letter (an ending: a plural, a people)."""
    if word == other or abs(len(word) - len(other)) > 1:
        return False
    if len(word) == len(other):
        changed = [i for i, (a, b) in enumerate(zip(word, other, strict=True)) if a != b]
        return len(changed) == 1 and not (keep_last and changed[0] == len(word) - 1)
    short, long = sorted((word, other), key=len)
    positions = range(len(long) - 1) if keep_last else range(len(long))
    return any(long[:i] + long[i + 1 :] == short for i in positions)


def _fold_with_offsets(text: str) -> tuple[str, list[int]]:
    """`text` folded for quotation matching (NFKC, casefold, curly apostrophes, dashes and double
    quotes made plain, whitespace runs one space), with the offset in `text` of each folded
    character."""
    folded: list[str] = []
    offsets: list[int] = []
    space = True
    for index, char in enumerate(text):
        if char.isspace():
            if not space:
                folded.append(" ")
                offsets.append(index)
                space = True
            continue
        for piece in _fold(char).translate(_DOUBLE_QUOTES):
            folded.append(piece)
            offsets.append(index)
        space = False
    while folded and folded[-1] == " ":
        folded.pop()
        offsets.pop()
    return "".join(folded), offsets


def find_quotation(text: str, quotation: str) -> str | None:
    """The words of ``text`` that ``quotation`` quotes, as ``text`` writes them (whitespace runs
    made one space), or None when ``text`` does not contain them. Case, whitespace, curly
    quotes and apostrophes, dashes and the quotation's own wrapping quotes or ellipses do not
    matter; every word does."""
    wanted, _ = _fold_with_offsets(quotation.strip(_QUOTE_ENDS).strip("."))
    if not wanted:
        return None
    folded, offsets = _fold_with_offsets(text)
    start = folded.find(wanted)
    if start < 0:
        return None
    first, last = offsets[start], offsets[start + len(wanted) - 1]
    return " ".join(text[first : last + 1].split())
