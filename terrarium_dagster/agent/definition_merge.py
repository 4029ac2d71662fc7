"""A three-way merge of a definition (`merge_definition`): what a drafted scene's update wrote,
from the text it was shown, merged with what the earlier scenes of its block wrote meanwhile
(`agent/drafts.py::_merged`). By sentence; a sentence both sides rewrote, word by word."""

from __future__ import annotations

import re
from difflib import SequenceMatcher

_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")
# words, runs of spaces, and each other character on its own: "[[Kaa]]," is "[", "[", "Kaa",
# "]", "]", ","; an item added to a list is then an insertion before its last stop
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


def sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_END.split(" ".join(text.split())) if part.strip()]


def merge_definition(base: str, mine: str, theirs: str) -> str:
    """A three-way merge of a definition by sentence: `mine` rewrote `base`; `theirs` is what it
    became meanwhile. The sentences `mine` dropped from `base` are dropped, the ones it added are
    appended to `theirs` (once), and everything `theirs` added stays. A sentence of `base` that
    `mine` rewrote takes its rewrite in its place; when `theirs` rewrote it too, the two rewrites
    are merged word by word (`merge_words`: "appears with A, B" and "appears with A, C" give
    "appears with A, C, B"), or, where they change the same words, both are kept."""
    old, new, current = sentences(base), sentences(mine), sentences(theirs)
    dropped = set(old) - set(new)
    kept = [s for s in current if s not in dropped]
    added = [s for s in new if s not in old and s not in kept]
    theirs_rewrites = dict(_rewrites(old, current))
    for before, after in _rewrites(old, new):
        if after not in added:
            continue
        if before in current and before not in kept:  # theirs kept it: rewritten in place
            kept.insert(_position(current, before, kept), after)
            added.remove(after)
            continue
        theirs_rewrite = theirs_rewrites.get(before)
        if theirs_rewrite is None or theirs_rewrite not in kept:
            continue
        merged = merge_words(before, after, theirs_rewrite)
        if merged is not None:
            kept[kept.index(theirs_rewrite)] = merged
            added.remove(after)
    return " ".join([*kept, *added]) or mine


def _rewrites(old: list[str], new: list[str]) -> list[tuple[str, str]]:
    """The sentences of `old` that `new` rewrote one for one, with their rewrites."""
    pairs: list[tuple[str, str]] = []
    matcher = SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "replace" and i2 - i1 == j2 - j1:
            pairs.extend(zip(old[i1:i2], new[j1:j2], strict=True))
    return pairs


def _position(current: list[str], sentence: str, kept: list[str]) -> int:
    """Where in `kept` (`current` less the dropped sentences) `sentence` of `current` stood."""
    index = current.index(sentence)
    return sum(1 for s in current[:index] if s in kept)


def merge_words(base: str, mine: str, theirs: str) -> str | None:
    """A three-way merge of one sentence by words: both sides' changes to `base` applied, when
    they touch different words (an insertion at the same place by both: theirs, then mine);
    None when they change the same words differently."""
    old = _TOKEN.findall(base)
    mine_changes = _changes(old, _TOKEN.findall(mine))
    theirs_changes = _changes(old, _TOKEN.findall(theirs))
    merged: list[str] = []
    position = 0  # where the last change applied ended, in `old`
    changes = sorted(
        [(start, end, 0, words) for start, end, words in theirs_changes]
        + [(start, end, 1, words) for start, end, words in mine_changes]
    )
    last: tuple[int, int, list[str]] | None = None
    for start, end, _side, words in changes:
        if last is not None:
            if (start, end, words) == last:
                continue  # the same change on both sides: once
            replaced = last[0] < last[1]
            if start < position or (start == position and start < end and replaced):
                return None  # both change the same words (or words side by side)
        merged.extend(old[position:start])
        merged.extend(words)
        position = end
        last = (start, end, words)
    merged.extend(old[position:])
    return "".join(merged)


def _changes(old: list[str], new: list[str]) -> list[tuple[int, int, list[str]]]:
    """What `new` changed of `old`: (start, end, replacement words) over `old`'s tokens."""
    matcher = SequenceMatcher(None, old, new, autojunk=False)
    return [(i1, i2, new[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]
