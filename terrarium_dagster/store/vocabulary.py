"""Ordinary vocabulary: is a term just an English word (or a real-world name used plainly)?

Judged by word frequency (the `wordfreq` package's Zipf scale: 3 is once per million words, 6
once per thousand), not by an embedded list. A single word at or above `ORDINARY_ZIPF` ("cried",
"hairy", "Broadway", "Kentucky") is ordinary; a hyphenated word is ordinary when its closed form
is a word ("to-day" is "today", "fore-arm" is "forearm"). Several words are never judged here: a
story's coinages are often made of ordinary words ("Quiet Choir", "heart-lamp").
"""

from __future__ import annotations

import functools
import re

from wordfreq import zipf_frequency

ORDINARY_ZIPF = 3.8
CLOSED_COMPOUND_ZIPF = 3.0
_WORD = re.compile(r"^[^\W\d_]+(?:['’][^\W\d_]+)?$")


@functools.lru_cache(maxsize=65536)
def frequency(word: str) -> float:
    """The Zipf frequency of `word` in English (0.0 for a word wordfreq has never seen)."""
    return float(zipf_frequency(word.casefold(), "en"))


def ordinary_reason(term: str) -> str | None:
    """Why `term` is ordinary vocabulary (one line), or None when it may be a story term."""
    text = " ".join(term.split())
    if not text or " " in text:
        return None
    parts = [part for part in re.split(r"[-‐‑–—]", text) if part]
    if len(parts) > 1:
        closed = "".join(parts)
        if all(_WORD.match(part) for part in parts) and frequency(closed) >= CLOSED_COMPOUND_ZIPF:
            return f"'{text}' is the ordinary word '{closed.lower()}' written with a hyphen"
        return None
    if not _WORD.match(text):
        return None
    zipf = frequency(text)
    if zipf >= ORDINARY_ZIPF:
        kind = "an ordinary English word" if text == text.lower() else "an ordinary word or name"
        return f"'{text}' is {kind} (word frequency {zipf:.1f} on the Zipf scale)"
    return None


def is_ordinary(term: str) -> bool:
    return ordinary_reason(term) is not None
