"""Turn any user string into a safe FTS5 MATCH expression.

FTS5 has its own query language (``AND``/``OR``/``NOT``/``NEAR``, ``col:``, ``^``, ``*``, quotes,
parentheses); a name such as ``Keth'ra``, ``ember-tithe`` or ``a:b`` typed as-is is a syntax error
or, worse, a different query. `fts_query` never passes user syntax through: it extracts words with a
Unicode-aware pattern and double-quotes each one, so FTS5 reads every word as a plain phrase.
"""

from __future__ import annotations

import re
import unicodedata

# A word: letters/digits, possibly joined by apostrophes or hyphens ("Keth'ra", "ember-tithe").
# Inside a quoted FTS5 string the tokenizer splits such a word into a phrase of its parts.
_WORD = re.compile(r"[^\W_]+(?:['\u2019\-\u2010\u2011][^\W_]+)*")

MAX_TERMS = 32
MAX_TERM_CHARS = 64
_MIN_PREFIX_CHARS = 3


def _quote(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


def fts_query(text: str, *, prefix_last: bool = False, max_terms: int = MAX_TERMS) -> str | None:
    """A MATCH expression for ``text``: its words, each quoted, joined with OR.

    OR gives recall; bm25 ranks rows matching more (and rarer) words first. With ``prefix_last``
    the last word (if at least 3 characters) also matches as a prefix ("Emb" finds "Ember").
    At most ``max_terms`` distinct words (case-insensitive) are kept, each cut to 64 characters.
    Returns None when nothing searchable remains (only punctuation, emoji, operator symbols).
    """
    if not isinstance(text, str):
        return None
    normalized = unicodedata.normalize("NFKC", text)
    words: list[str] = []
    seen: set[str] = set()
    for match in _WORD.finditer(normalized):
        word = match.group(0)[:MAX_TERM_CHARS]
        key = word.casefold()
        if key in seen:
            continue
        seen.add(key)
        words.append(word)
        if len(words) >= max_terms:
            break
    if not words:
        return None
    parts = [_quote(word) for word in words]
    if prefix_last and len(words[-1]) >= _MIN_PREFIX_CHARS:
        parts[-1] += " *"
    return " OR ".join(parts)
