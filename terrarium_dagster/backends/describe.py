"""Definitions the offline backend writes: composed from several mentions, grown by later ones.

A definition reads `Lead; fact; fact.` — never the term again, which every page, line and card
already shows beside it: the lead says what the thing is ("A tall woman in a white coat", "A
river", "A captain", or its kind, "A place"), the facts say what it does, whom
it belongs to and what it is seen with ("commands the [[Sodality]]'s watch", "of the
[[Ashkari]]", "so named by the Lowlamp children", "appears with [[Lowlamp]], [[Quill]]"). Every
part comes from a fixed pattern over the sentences that mention the name (`portrait`); nothing
is a quote with an "As of" prefix. `grow` recomposes a known definition with what a later scene
adds (a better lead, a new fact, more company), so definitions change as the story reveals more.

Kinds come from the name's shape and from context cues over its mentions (`backends.portraits`).
Everything here is a function of its arguments: the same text always gives the same definition.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from terrarium_dagster.backends.portraits import (
    Portrait,
    casefolded_words,
    portrait,
    shape_kind,
)
from terrarium_dagster.store.normalize import normalize_term
from terrarium_dagster.store.vocabulary import ordinary_reason
from terrarium_dagster.terms.english import STARTERS
from terrarium_dagster.terms.text_search import term_pattern

# the names others import from here: composing and growing, and the portrait it starts from
__all__ = [
    "COMPANY",
    "DEFINITION_CHARS",
    "GROW_COMPANY",
    "KIND_LEADS",
    "MAX_COMPANY",
    "SEPARATOR",
    "UNKNOWN_LEADS",
    "Definition",
    "Portrait",
    "compose",
    "grow",
    "link_names",
    "parse_definition",
    "portrait",
    "shape_kind",
]


# A definition the offline backend writes stays whole in the known-entries line the agent is
# shown, so a later scene can always read and grow it.
DEFINITION_CHARS = 180  # well within what Known entries show whole (SHOWN_DEFINITION_CHARS)
SEPARATOR = " — "
KIND_LEADS = {
    "character": "a character",
    "place": "a place",
    "faction": "a faction",
    "creature": "a creature",
    "item": "an item",
    "title": "a title or office",
    "custom": "a custom of the story",
}
_ARTICLES = frozenset({"a", "an", "the"})
UNKNOWN_LEADS = frozenset({"a name in the story", "a term of the story"})
COMPANY = "appears with "
MAX_COMPANY = 4
# A known definition grows by company alone only while its company names fewer than this.
GROW_COMPANY = 3
_LINK = re.compile(r"\[\[([^\[\]|]+)(?:\|[^\[\]]*)?\]\]")


@dataclass(slots=True)
class Definition:
    """A parsed `Lead; fact; fact.` definition (of `term`, which it does not repeat)."""

    term: str
    lead: str
    facts: list[str]

    def render(self) -> str:
        text = "; ".join([self.lead, *self.facts])
        return f"{text[:1].upper()}{text[1:]}."

    def size(self) -> int:
        """The length that must fit the limit: the definition as the agent reads it, after
        its term (`Term — definition` in the known-entries block)."""
        return len(self.term) + len(SEPARATOR) + len(self.render())


def parse_definition(term: str, text: str) -> Definition:
    """A definition in the offline form (`Lead; fact; fact.`, or the older `Term — lead; fact.`
    that repeated the term); other text splits the same way, so a model-written definition is
    kept whole when it grows."""
    flat = " ".join(text.split())
    head, separator, rest = flat.partition(SEPARATOR)
    if separator and normalize_term(head) == normalize_term(term):
        flat = rest  # the older form: the term said again before the definition
    if not flat.rstrip("."):
        return Definition(term, _lead_for(term, None), [])
    parts = [part.strip() for part in flat.rstrip(".").split("; ") if part.strip()]
    lead = parts[0]
    if lead[:1].isupper() and lead.split()[0].casefold() in _ARTICLES:
        lead = lead[:1].lower() + lead[1:]
    return Definition(term, lead, parts[1:])


def _lead_for(term: str, kind: str | None) -> str:
    if kind:
        return KIND_LEADS[kind]
    return "a term of the story" if term[:1].islower() else "a name in the story"


def _covered(fact: str, have: Sequence[str]) -> bool:
    """Is `fact` already said (its words inside one part, or most of them)?"""
    mine = set(casefolded_words(_LINK.sub(r"\1", fact))) - STARTERS
    for part in have:
        theirs = set(casefolded_words(_LINK.sub(r"\1", part))) - STARTERS
        if mine and len(mine & theirs) >= max(1, int(len(mine) * 0.6)):
            return True
    return False


def link_names(text: str, names: Sequence[str]) -> str:
    """`text` with the first mention of each of `names` wrapped in `[[...]]`: longest names
    first, never inside a link already there, never an ordinary word."""
    for name in sorted(names, key=lambda n: (-len(n), n)):
        if ordinary_reason(name):
            continue
        pattern = term_pattern(name)
        if pattern is None:
            continue
        taken = [match.span() for match in _LINK.finditer(text)]
        for match in pattern.finditer(text):
            start, end = match.span()
            if any(a <= start < b or a < end <= b for a, b in taken):
                continue
            text = f"{text[:start]}[[{text[start:end]}]]{text[end:]}"
            break
    return text


def _company_fact(names: Sequence[str]) -> str:
    return COMPANY + ", ".join(f"[[{name}]]" for name in names)


def company_of(fact: str) -> list[str]:
    """The names a company fact links (`appears with [[A]], [[B]]`: A, B)."""
    return [match.group(1) for match in _LINK.finditer(fact)]


def compose(
    term: str,
    found: Portrait,
    *,
    kind: str | None = None,
    limit: int = DEFINITION_CHARS,
    own: Sequence[str] = (),
) -> str:
    """A new definition from what a scene's mentions say (`own`: the entry's other names,
    never listed as its company)."""
    draft = Definition(term, _lead_for(term, kind), [])
    return _extend(draft, found, limit, own=(term, *own))[0] or draft.render()


def grow(
    term: str,
    current: str,
    found: Portrait,
    *,
    limit: int = DEFINITION_CHARS,
    own: Sequence[str] = (),
) -> tuple[str | None, str | None]:
    """(the grown definition or None, a kind newly learned or None) for a known entry whose
    whole definition is `current`, from what a later scene's mentions say. `own`: the entry's
    aliases; its company never lists one of its own names (one it gained by a merge is dropped)."""
    draft = parse_definition(term, current)
    own_keys = {normalize_term(name) for name in (term, *own)}
    for index, fact in enumerate(draft.facts):
        if fact.startswith(COMPANY):
            kept = [n for n in company_of(fact) if normalize_term(n) not in own_keys]
            if len(kept) != len(company_of(fact)):
                draft.facts[index] = _company_fact(kept) if kept else ""
    draft.facts = [fact for fact in draft.facts if fact]
    kind = None
    if draft.lead in UNKNOWN_LEADS and found.kind:
        kind = found.kind
        draft.lead = KIND_LEADS[kind]
    company_before = next((company_of(f) for f in draft.facts if f.startswith(COMPANY)), [])
    grown, substantive = _extend(draft, found, limit, own=(term, *own))
    if grown is not None and not substantive and len(company_before) >= GROW_COMPANY:
        grown = None  # more company alone is not worth an update once it names a few
    if grown is None and kind:
        grown = draft.render()
    if grown is not None and " ".join(current.split()) == grown:
        grown = None
    return grown, kind


def _extend(
    draft: Definition, found: Portrait, limit: int, *, own: Sequence[str] = ()
) -> tuple[str | None, bool]:
    """Add to `draft` what `found` says that it does not, within `limit` characters: (the
    rendered result or None when nothing new fits, whether a lead or a fact was added). A name
    in `own` (the entry's term and aliases) is never its company."""
    changed = False
    own_keys = {normalize_term(name) for name in own}
    leads = list(found.leads)
    generic = draft.lead in UNKNOWN_LEADS or draft.lead in KIND_LEADS.values()
    if generic and leads:
        draft.lead = leads.pop(0)
        changed = True
    substantive = changed
    company_index = next(
        (i for i, fact in enumerate(draft.facts) if fact.startswith(COMPANY)), None
    )
    if changed:
        draft.lead = link_names(draft.lead, found.company)
    for fact in [*leads, *found.facts]:
        if _covered(fact, [draft.lead, *draft.facts]):
            continue
        fact = link_names(fact, found.company)
        candidate = Definition(draft.term, draft.lead, [*draft.facts, fact])
        if company_index is not None:  # new facts go before the company
            facts = [f for i, f in enumerate(draft.facts) if i != company_index]
            candidate.facts = [*facts, fact, draft.facts[company_index]]
        if candidate.size() <= limit:
            draft.facts = candidate.facts
            company_index = next(
                (i for i, f in enumerate(draft.facts) if f.startswith(COMPANY)), None
            )
            changed = substantive = True
    company = found.company
    if company:
        have = company_of(draft.facts[company_index]) if company_index is not None else []
        known = {normalize_term(name) for name in have}
        linked = {normalize_term(m) for f in [draft.lead, *draft.facts] for m in company_of(f)}
        for name in company:
            key = normalize_term(name)
            if key in known or key in linked or key in own_keys or ordinary_reason(name):
                continue
            if len(have) >= MAX_COMPANY:
                break
            facts = list(draft.facts)
            fact = _company_fact([*have, name])
            if company_index is None:
                facts.append(fact)
            else:
                facts[company_index] = fact
            if Definition(draft.term, draft.lead, facts).size() > limit:
                break
            draft.facts = facts
            company_index = next(i for i, f in enumerate(facts) if f.startswith(COMPANY))
            have.append(name)
            known.add(key)
            changed = True
    return (draft.render() if changed else None), substantive
