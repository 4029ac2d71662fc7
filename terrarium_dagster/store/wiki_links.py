"""`[[Term]]` cross-references in a definition: flat, to real entries, never ordinary words.

One rule, applied where a definition is written (the store: flat and no ordinary words; a link
to an entry not created yet is kept, as a model may write it before the entry) and where a
glossary is exported (every export, against the entries it carries, since an entry linked to may
not exist yet or be rejected, merged or deleted later):

- a link is flat: `[[Princess of [[Helium]]]]` becomes `[[Princess of Helium]]` when that names
  an entry, else `Princess of [[Helium]]`;
- a link names a live entry by its term or an alias (`resolve` says which), and not the entry
  whose definition it is in;
- a link is never an ordinary word (`[[cried]]`, judged by `glossary.vocabulary`);
- anything else loses its brackets and keeps its text (the label when it has one); a stray `[[`
  or `]]` is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from terrarium_dagster.store.normalize import normalize_term
from terrarium_dagster.store.vocabulary import ordinary_reason

Resolve = Callable[[str], int | None]


def any_target(_name: str) -> int | None:
    """A `Resolve` that accepts every target (0 is no entry's id, so never `own`)."""
    return 0


_TOKEN = re.compile(r"\[\[|\]\]")
_NESTED_OR_STRAY = re.compile(r"\[\[[^\]]*\[\[|\]\][^\[]*\]\]")


@dataclass(slots=True)
class _Node:
    """A run of text and the links inside it (a link is a node whose `link` is True)."""

    link: bool
    parts: list[str | _Node] = field(default_factory=list)


def _parse(text: str) -> _Node:
    root = _Node(False)
    stack = [root]
    position = 0
    for match in _TOKEN.finditer(text):
        if match.start() > position:
            stack[-1].parts.append(text[position : match.start()])
        position = match.end()
        if match.group() == "[[":
            node = _Node(True)
            stack[-1].parts.append(node)
            stack.append(node)
        elif len(stack) > 1:
            stack.pop()
        # a "]]" with no "[[" open is dropped
    if position < len(text):
        stack[-1].parts.append(text[position:])
    # a "[[" never closed: its text stays, unlinked
    for node in stack[1:]:
        node.link = False
    return root


def _plain(node: _Node) -> str:
    """What a reader sees of a node: its text, a link's label when it has one."""
    if node.link and not any(isinstance(part, _Node) for part in node.parts):
        target, _, label = "".join(str(p) for p in node.parts).partition("|")
        return label.strip() or target
    return "".join(part if isinstance(part, str) else _plain(part) for part in node.parts)


def _render(node: _Node, resolve: Resolve, own: int | None) -> str:
    inner = "".join(
        part if isinstance(part, str) else _render(part, resolve, own) for part in node.parts
    )
    if not node.link:
        return inner
    nested = any(isinstance(part, _Node) for part in node.parts)
    if nested:
        flat = " ".join(_plain(node).split())
        if _linkable(flat, resolve, own):
            return f"[[{flat}]]"
        return inner
    raw = "".join(str(part) for part in node.parts)
    target, bar, label = raw.partition("|")
    target = " ".join(target.split())
    if target and "\n" not in raw and _linkable(target, resolve, own):
        return f"[[{target}|{label.strip()}]]" if bar and label.strip() else f"[[{target}]]"
    return label.strip() if bar and label.strip() else target


def _linkable(target: str, resolve: Resolve, own: int | None) -> bool:
    if not target or ordinary_reason(target):
        return False
    entry_id = resolve(target)
    return entry_id is not None and entry_id != own


def tidy_links(text: str, resolve: Resolve, *, own: int | None = None) -> str:
    """`text` with every `[[...]]` made flat, pointing at an entry `resolve` knows (not `own`),
    and not an ordinary word; other brackets are unwrapped to their text."""
    if "[[" not in text and "]]" not in text:
        return text
    return _render(_parse(text), resolve, own)


def link_problems(text: str, resolve: Resolve, *, own: int | None = None) -> list[str]:
    """What is wrong with the links of `text` (empty when `tidy_links` would change nothing):
    one line per nested or stray bracket run, broken target or ordinary-word link."""
    problems: list[str] = []
    if _NESTED_OR_STRAY.search(text):
        problems.append("nested or stray [[ ]]")
    root = _parse(text)
    for part in root.parts:
        if isinstance(part, _Node) and part.link:
            target = "".join(str(p) for p in part.parts).partition("|")[0].strip()
            if any(isinstance(p, _Node) for p in part.parts):
                continue
            if ordinary_reason(target):
                problems.append(f"[[{target}]] is an ordinary word")
            elif resolve(target) is None:
                problems.append(f"[[{target}]] names no entry")
            elif resolve(target) == own:
                problems.append(f"[[{target}]] links the entry to itself")
    if not problems and tidy_links(text, resolve, own=own) != text:
        problems.append("links that are not flat")
    return problems


def without_links_to(text: str, names: Sequence[str]) -> str:
    """`text` without its links to `names` (an entry's own names, e.g. those a merge gave it):
    a link that is an item of a list of links goes with its comma, and a clause that listed
    only it ("; appears with [[Rook]]") goes whole; any other mention keeps its words."""
    wanted = {normalize_term(name) for name in names if name.strip()}
    if not wanted or "[[" not in text:
        return text

    def own(match: re.Match[str]) -> bool:
        return normalize_term(match.group("name")) in wanted

    link = r"\[\[(?P<name>[^\[\]|]+)(?:\|[^\[\]]*)?\]\]"
    patterns = (
        re.compile(r",\s*" + link),  # ", [[X]]" after another item
        re.compile(link + r",\s*"),  # "[[X]], " before another item
        re.compile(r"\s*;\s*[^;.\[\]]*\bwith\s+" + link + r"(?=\s*(?:[;.]|$))"),  # a lone item
    )
    for pattern in patterns:
        text = pattern.sub(lambda m: "" if own(m) else m.group(0), text)
    plain = re.compile(link)
    return plain.sub(lambda m: m.group("name") if own(m) else m.group(0), text)
