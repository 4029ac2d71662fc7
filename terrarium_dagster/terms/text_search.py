"""Finding a term in text, and the sentences it is in: markup blanked (`mask_markup`), a term's
pattern in prose and where it occurs (`term_pattern`, `find_term`, `first_term`), whether a
mention names it or only points at a phrase of the prose (`pointed_at`, `names_term`), and the
sentences of a text, cleaned and cut (`sentence_spans`, `clean_sentence`, `sentence_at`,
`cut_at_words`, `sentences_with`). Pure string processing, shared by the candidate detector,
the agent's tools and the offline backend.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from terrarium_dagster.terms.english import APOSTROPHES, ARTICLES
from terrarium_dagster.terms.letters import MARKS

_MASK_RES: tuple[re.Pattern[str], ...] = (
    re.compile(r"^\[post \d+[^\]\n]*\]", re.MULTILINE),
    re.compile(r">>>?(?:/\w+/)?\d+"),
    re.compile(r"https?://\S+|www\.\S+"),
    re.compile(r"\[\s*[xX✓✔✗*]?\s*\]"),
)

_DASHES = dict.fromkeys(map(ord, "‐‑‒–—―"), "-")
_SENTENCE_SPLIT = re.compile(r"([.!?…][\"'”’)\]]*)\s+|\n+")
# a word before a stop that does not end a sentence: a title ("Mr.", "Dr.", "St.") or an initial
_ABBREVIATED = re.compile(
    r"(?<![\w.])(?:Mr|Mrs|Ms|Messrs|Mme|Mlle|Dr|St|Mt|Prof|Rev|Capt|Col|Gen|Lt|Sgt|Hon|Sr|Jr|"
    r"[A-Z])$"
)
_SPACES = re.compile(r"\s+")


def mask_markup(text: str) -> str:
    """The text with post headers, quote links, URLs and vote boxes blanked (offsets kept)."""
    masked = text
    for pattern in _MASK_RES:
        masked = pattern.sub(lambda match: " " * len(match.group(0)), masked)
    return masked


@lru_cache(maxsize=4096)
def term_pattern(term: str) -> re.Pattern[str] | None:
    """A case-insensitive pattern for `term` in prose: whole words, a leading article ignored,
    spaces, hyphens and apostrophes between its parts interchangeable, a possessive allowed; an
    underscore of emphasis around it is no part of a word ("_Thunder Child_")."""
    cleaned = unicodedata.normalize("NFKC", term).translate(APOSTROPHES).translate(_DASHES)
    parts = [part for part in re.split(r"[\s\-']+", cleaned.strip(' .,;:!?"()[]{}')) if part]
    if len(parts) > 1 and parts[0].casefold() in ARTICLES:
        parts = parts[1:]
    if not parts:
        return None
    separator = r"(?:\s+|\s*[-‐‑‒–—―]\s*|['’ʼ])"
    body = separator.join("".join(map(_composed_or_not, part)) for part in parts)
    # a combining mark is part of the word it follows: no term starts or ends before one
    return re.compile(
        rf"(?<![^\W_]|['’\-]|[{MARKS}]){body}"
        rf"(?:(?=['’]s(?![^\W_]|[{MARKS}]))|(?!['’\-]?[^\W_]|[{MARKS}]))",
        re.IGNORECASE,
    )


def _composed_or_not(char: str) -> str:
    """`char` as a pattern that also finds it written decomposed ("é" as "e" + U+0301, NFD)."""
    decomposed = unicodedata.normalize("NFD", char)
    if decomposed == char:
        return re.escape(char)
    return f"(?:{re.escape(char)}|{re.escape(decomposed)})"


def find_term(text: str, term: str) -> list[tuple[int, int]]:
    """Spans of `term` in `text` (see `term_pattern`), in order."""
    pattern = term_pattern(term)
    if pattern is None:
        return []
    return [match.span() for match in pattern.finditer(text)]


def first_term(text: str, term: str) -> int | None:
    """Where `term` first occurs in `text` (`find_term`'s first span), or None."""
    pattern = term_pattern(term)
    found = None if pattern is None else pattern.search(text)
    return None if found is None else found.start()


# What points at a phrase as a thing of the prose rather than naming it: a demonstrative ("this
# Golden Age", "these ..."), or "that" after a preposition ("in that Golden Age"; "that" after a
# verb opens a clause: "saw that Carthoris was ...").
POINTED_AT = re.compile(
    r"(?:\b(?:this|these|those)|\b(?:of|in|on|at|upon|to|from|with|into|by|for|about|through)"
    r"\s+that)\s+$",
    re.IGNORECASE,
)


def pointed_at(text: str, term: str, start: int) -> bool:
    """Whether the mention of the capitalised name of several words `term` at `text[start:]`
    is pointed at as a thing of the prose ("this Golden Age", "in that Golden Age"), as a name
    is not."""
    if term == term.lower() or " " not in term.strip():
        return False
    return bool(POINTED_AT.search(text[max(0, start - 20) : start]))


def names_term(text: str, term: str) -> bool:
    """Whether `text` names `term` (`find_term`) at least once not pointed at (`pointed_at`)."""
    return any(not pointed_at(text, term, start) for start, _end in find_term(text, term))


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence: split after . ! ? … (and closing quotes) and at newlines,
    never after a title's abbreviation or an initial ("said Mr. Enfield", "George B. Hale")."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _SENTENCE_SPLIT.finditer(text):
        if match.group(1) == "." and _ABBREVIATED.search(
            text[max(0, match.start() - 8) : match.start()]
        ):
            continue
        end = match.start() + len(match.group(1) or "")
        if end > start:
            spans.append((start, end))
        start = match.end()
    if start < len(text):
        spans.append((start, len(text)))
    return [(s, e) for s, e in spans if text[s:e].strip()]


def clean_sentence(sentence: str) -> str:
    """Markup blanked and whitespace collapsed."""
    return _SPACES.sub(" ", mask_markup(sentence)).strip()


def sentence_at(text: str, offset: int, max_chars: int = 240) -> str:
    """The cleaned sentence containing `offset`, cut to at most `max_chars` around the offset
    at word boundaries: the story's own words, none cut in two and nothing added (a quote is
    verbatim, and a reader's page finds it in the post)."""
    for start, end in sentence_spans(text):
        if start <= offset < end:
            break
    else:
        start, end = max(0, offset - max_chars // 2), min(len(text), offset + max_chars // 2)
    raw = text[start:end]
    sentence = clean_sentence(raw)
    if len(sentence) <= max_chars:
        return sentence
    relative = max(0, min(len(sentence), len(clean_sentence(text[start:offset]))))
    lo = max(0, min(relative - max_chars // 3, len(sentence) - max_chars))
    return cut_at_words(sentence, lo, lo + max_chars)


def cut_at_words(text: str, lo: int, hi: int) -> str:
    """`text[lo:hi]` narrowed to whole words: a word the bounds cut in two is left out (unless
    it is all there is)."""
    if 0 < lo < len(text) and not text[lo - 1].isspace() and not text[lo].isspace():
        space = text.find(" ", lo, hi)
        lo = space + 1 if space != -1 else lo
    if hi < len(text) and not text[hi].isspace() and not text[hi - 1].isspace():
        space = text.rfind(" ", lo, hi)
        hi = space if space > lo else hi
    return text[lo:hi].strip()


def sentences_with(text: str, term: str, *, limit: int | None = None) -> list[str]:
    """The cleaned sentences of `text` that mention `term` (or a spelling variant), in order."""
    pattern = term_pattern(term)
    if pattern is None:
        return []
    found: list[str] = []
    seen: set[str] = set()
    for start, end in sentence_spans(text):
        sentence = clean_sentence(text[start:end])
        if sentence and sentence not in seen and pattern.search(sentence):
            seen.add(sentence)
            found.append(sentence)
            if limit is not None and len(found) >= limit:
                break
    return found
