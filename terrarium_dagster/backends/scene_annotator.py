"""The offline annotator's answer to a `# Scene` message, turn by turn.

`# Scene <id>`: parse `## Known entries` and `## Story`; candidates = `find_candidates(story)`
minus known terms and aliases (at most `max_creates` of them), and the known entries whose term or
an alias occurs in the story (at most `max_updates`, tentative ones first, then by occurrences).
A candidate that is a short, pet or titled form of exactly one known entry's name (`Quill` or
`Old Quill` beside a known `Ambrose Quill`, `Toby` beside `Tobiah`) becomes an alias of that
entry; a word of several known names is left alone. So does a name the scene gives someone
("I'm Sister Ottoline ... calls me the Bell-Sister") and a bare title right before one name
("Provost" in "Provost Amberly Hask"; a known bare-title entry gains that name as an alias).
- Turn 1 (no assistant turn yet): one `glossary_create` per candidate (definition: composed by
  `backends.describe` from every sentence of the scene that mentions it, `Term — lead; fact;
  fact.`, within what the known-entries line shows whole (180 characters), known terms linked
  as `[[Term]]`; tags: its kind, from the name and context cues; aliases: the candidate's
  variants; post_ids: the scene posts where it occurs), one `glossary_update` with
  `add_aliases` per known entry that gains a short name, and one `glossary_update` per
  occurring known entry (post_ids: the posts where it occurs), the first `max_updates` of them
  and any whose definition grows: a known definition shown whole gets what the scene adds (a
  better lead, a new fact, more company; `describe.grow`), at most `max_grows` per scene, with
  its kind as a tag when it had none. All in one turn. No search first: the known entries in
  the message already are the search (the context layer injects exact and
  full-text matches), and the store refuses a duplicate with an error naming the existing
  entry, which is cheaper than a search turn for every scene.
- Turn 2: for each create refused as a duplicate (`... already exists as E12 ...`, or the
  store's `... is already the term of entry E12 ...`) a
  `glossary_update` of the named entry with the candidate's posts; otherwise the final answer.
  Every turn of writes carries the text `SCENE DONE` beside its tool calls: when all of them
  succeed the loop ends the scene without asking again (one call for a typical scene).
- Then: the final answer, `Scene <id> done: created E12 Keth'ra; updated E4.`; also after
  `max_turns` assistant turns whatever happened, so a scene never loops.
A scene with nothing to record takes one call, a typical scene two, one with duplicates three.
With `search_first=True` turn 1 is a `glossary_search` per candidate instead, and a candidate
whose search finds an entry with the same normalized name updates that entry rather than
creating one (one call more per scene; an agent that "searches before it creates").
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from terrarium_dagster.backends.chat_request import ENTRY_REF, Call, Reply, entry_number
from terrarium_dagster.backends.describe import compose, grow, portrait
from terrarium_dagster.backends.name_forms import (
    forms_of,
    given_names_met,
    names_by_context,
    surname_shared,
    titled_form,
    word_of,
    word_owner,
)
from terrarium_dagster.backends.scene_message import KnownEntry, SceneMessage
from terrarium_dagster.context.prompts import SCENE_DONE
from terrarium_dagster.store.normalize import normalize_term
from terrarium_dagster.terms.candidates import DEFAULT_MIN_SCORE, Candidate, find_candidates
from terrarium_dagster.terms.text_search import find_term, names_term

MAX_POSTS_PER_CALL = 5


@dataclass(frozen=True, slots=True)
class _Plan:
    creates: tuple[tuple[Candidate, dict[str, Any]], ...]
    updates: tuple[tuple[int, dict[str, Any]], ...]
    candidate_posts: dict[str, tuple[int, ...]] = field(default_factory=dict)


def _posts_mentioning(posts: Sequence[tuple[int, str]], names: Iterable[str]) -> list[int]:
    """The posts that name one of `names`: a post that only points at a capitalised phrase
    ("this Golden Age", "in that Golden Age") uses its words, and is no source of it."""
    names = list(names)
    return [pid for pid, text in posts if any(names_term(text, name) for name in names)]


def definition_sources(names: Sequence[str], posts: Sequence[tuple[int, str]]) -> list[int]:
    """The posts where one of `names` occurs."""
    return _posts_mentioning(posts, names)


class SceneAnnotator:
    """The offline annotator's decisions for one scene message (see the module docstring)."""

    def __init__(
        self,
        *,
        max_creates: int = 16,
        max_updates: int = 3,
        max_turns: int = 4,
        min_score: float = DEFAULT_MIN_SCORE,
        search_first: bool = False,
        max_grows: int = 2,
    ) -> None:
        self.max_creates = max_creates
        self.max_updates = max_updates
        self.max_grows = max_grows
        self.max_turns = max_turns
        self.min_score = min_score
        self.search_first = search_first

    def plan(self, scene: SceneMessage) -> _Plan:
        live = [entry for entry in scene.known if entry.status not in ("rejected", "merged")]
        known_names = [name for entry in scene.known for name in entry.names]
        candidates = find_candidates(
            scene.story, known_names, min_score=self.min_score, known_words=False
        )
        company = [entry.term for entry in live] + [c.term for c in candidates]
        creates: list[tuple[Candidate, dict[str, Any]]] = []
        posts_of: dict[str, tuple[int, ...]] = {}
        alias_updates: dict[int, dict[str, Any]] = {}
        named = names_by_context(scene, candidates, live)
        later_aliases: dict[str, list[str]] = {}
        # the scene's own names beside all known ones, let go or not: "Emily Sinico" and "Mary
        # Sinico" met in one scene are two of a family, neither the known "Captain Sinico"; a
        # "Miss March" rejected as yet still says the family has a daughter
        met = [
            *scene.known,
            *(KnownEntry(-n, c.term, c.variants, "", "") for n, c in enumerate(candidates, 1)),
        ]
        for found_candidate in candidates:
            candidate = titled_form(found_candidate, live)  # "Mr. Bennet" beside "Elizabeth Bennet"
            owner = word_owner(candidate, live)
            if owner is not None and surname_shared(candidate.term, owner, met):
                owner = None
            given = given_names_met(candidate.term, owner, met) if owner is not None else None
            if given is not None and given.entry_id < 0:
                # "Wendy Moira Angela Darling" beside "Wendy Moira Angela", met in this scene
                later_aliases.setdefault(given.term, []).append(candidate.term)
                continue
            if given is not None and given.status not in ("rejected", "merged"):
                owner = given  # the live entry of its given names
            said = named.get(candidate.term)
            if owner is None and isinstance(said, KnownEntry):
                owner = said
            elif owner is None and isinstance(said, str):
                # "calls me the Bell-Sister" after "I'm Sister Ottoline": an alias of that one
                later_aliases.setdefault(said, []).append(candidate.term)
                continue
            if owner is not None:  # "Quill" beside a known "Ambrose Quill": a new alias
                where = _posts_mentioning(scene.posts, candidate.names)[:MAX_POSTS_PER_CALL]
                args = alias_updates.setdefault(
                    owner.entry_id, {"entry_id": f"E{owner.entry_id}", "add_aliases": []}
                )
                args["add_aliases"].append(candidate.term)
                args["post_ids"] = sorted(set(args.get("post_ids", [])) | set(where))
                continue
            if word_of(candidate.term, live):
                continue  # a word of several known names: ambiguous
            if len(creates) >= self.max_creates:
                continue
            where = definition_sources(candidate.names, scene.posts)
            if not where:
                continue
            found = portrait(candidate.names, scene.posts, company)
            kind = found.kind
            definition = compose(candidate.term, found, kind=kind, own=candidate.variants)
            args = {"term": candidate.term, "definition": definition}
            if kind:
                args["tags"] = [kind]
            args["post_ids"] = where[:MAX_POSTS_PER_CALL]
            if candidate.variants:
                args["aliases"] = list(candidate.variants)
            posts_of[normalize_term(candidate.term)] = tuple(where[:MAX_POSTS_PER_CALL])
            creates.append((candidate, args))
        for candidate, args in creates:
            extra = later_aliases.get(candidate.term, [])
            if extra:
                args["aliases"] = list(dict.fromkeys([*args.get("aliases", []), *extra]))
        occurring = []
        for entry in live:
            where = _posts_mentioning(scene.posts, entry.names)
            if not where or entry.entry_id in alias_updates:
                continue
            mentions = sum(len(find_term(scene.story, name)) for name in entry.names)
            occurring.append((entry.status != "tentative", -mentions, entry.entry_id, entry, where))
        occurring.sort(key=lambda item: item[:3])
        updates: list[tuple[int, dict[str, Any]]] = sorted(alias_updates.items())
        plain = max(0, self.max_updates - len(updates))
        grown_count = 0
        for position, (*_, entry, where) in enumerate(occurring):
            args: dict[str, Any] = {
                "entry_id": f"E{entry.entry_id}",
                "post_ids": where[:MAX_POSTS_PER_CALL],
            }
            if grown_count < self.max_grows:
                definition, kind = self._grown(entry, scene, company)
                if definition:
                    args["definition"] = definition
                    grown_count += 1
                if kind:
                    args["tags"] = [kind]
            if position < plain or "definition" in args or entry.status == "tentative":
                updates.append((entry.entry_id, args))
        return _Plan(tuple(creates), tuple(updates), posts_of)

    @staticmethod
    def _grown(
        entry: KnownEntry, scene: SceneMessage, company: Sequence[str]
    ) -> tuple[str | None, str | None]:
        """The entry's definition grown by what the scene says of it (when shown whole), and a
        kind newly learned."""
        if entry.truncated or not entry.definition:
            return None, None
        found = portrait(entry.names, scene.posts, company)
        return grow(entry.term, entry.definition, found, own=entry.aliases)

    def reply(
        self, scene: SceneMessage, turns: int, calls: Sequence[Call], tools: set[str]
    ) -> Reply:
        plan = self.plan(scene)
        if turns >= self.max_turns or not {"glossary_create", "glossary_update"} <= tools:
            return Reply(content=self._final(scene, calls, plan if not turns else None))
        created = {
            normalize_term(str(c.args.get("term", "")))
            for c in calls
            if c.name == "glossary_create"
        }
        updated = {
            entry_number(c.args.get("entry_id")) for c in calls if c.name == "glossary_update"
        }
        searched = {
            normalize_term(str(c.args.get("query", "")))
            for c in calls
            if c.name == "glossary_search"
        }
        pending: list[tuple[str, dict[str, Any]]] = []
        if self.search_first and "glossary_search" in tools and plan.creates and not searched:
            for candidate, _args in plan.creates:
                pending.append(("glossary_search", {"query": candidate.term, "limit": 3}))
            return Reply(tool_calls=tuple(pending))  # results needed: no done mark
        if not searched and "glossary_search" in tools:
            heads = dict.fromkeys(
                head for candidate, _args in plan.creates if (head := _kind_head(candidate.term))
            )
            if heads:  # "Wolf-woman": find the other forms of the kind ("Wolf-women") first
                searches = [
                    ("glossary_search", {"query": head, "limit": KIND_SEARCH_LIMIT})
                    for head in heads
                ]
                return Reply(tool_calls=tuple(searches))
        hits = _search_hits(calls)
        found = _searched_entries(calls)
        for candidate, args in plan.creates:
            key = normalize_term(candidate.term)
            if key in created:
                continue
            hit = next(
                (hits[name] for name in map(normalize_term, candidate.names) if name in hits),
                None,
            )
            owner = word_owner(candidate, found) if hit is None else None
            if hit is None and owner is None and _kind_head(candidate.term):
                forms = forms_of(candidate.term, found)
                owner = forms[0] if len(forms) == 1 else None
            if hit is not None:
                target, alias = hit, None
            elif owner is not None:  # "Quill" found as part of "Ambrose Quill"
                target, alias = owner.entry_id, candidate.term
            else:
                pending.append(("glossary_create", args))
                continue
            if target not in updated:
                updated.add(target)
                update = _update_args(target, args["post_ids"])
                if alias is not None:
                    update["add_aliases"] = [alias]
                pending.append(("glossary_update", update))
        for call, existing in refused_creates(calls, updated):
            posts = plan.candidate_posts.get(normalize_term(str(call.args.get("term", ""))))
            posts = posts or tuple(call.args.get("post_ids") or ())
            pending.append(("glossary_update", _update_args(existing, posts)))
        for entry_id, args in plan.updates:
            if entry_id not in updated:
                updated.add(entry_id)
                pending.append(("glossary_update", args))
        if pending:
            # writes only: if every one succeeds there is nothing left to do, so say so now and
            # save the confirmation round (the loop calls again only when a call failed)
            return Reply(content=SCENE_DONE, tool_calls=tuple(pending))
        return Reply(content=self._final(scene, calls, None))

    @staticmethod
    def _final(scene: SceneMessage, calls: Sequence[Call], plan: _Plan | None) -> str:
        created: list[str] = []
        updated: list[str] = []
        for call in calls:
            result = call.result or {}
            entry = result.get("entry") if result.get("ok") else None
            if not isinstance(entry, dict):
                continue
            ref = f"{entry.get('id')} {entry.get('term')}"
            if call.name == "glossary_create" and ref not in created:
                created.append(ref)
            elif call.name == "glossary_update" and "note" not in result and ref not in updated:
                updated.append(ref)
        parts = []
        if created:
            parts.append("created " + ", ".join(created))
        if updated:
            parts.append("updated " + ", ".join(updated))
        if plan is not None and plan.creates:
            parts.append("terms without an entry: " + ", ".join(c.term for c, _ in plan.creates))
        return (
            f"Scene {scene.scene_id} done: " + ("; ".join(parts) if parts else "nothing new") + "."
        )


KIND_SEARCH_LIMIT = 10


def _kind_head(term: str) -> str | None:
    """For a name of a kind of being or people whose forms vary ("Wolf-woman", "Wolf-brute",
    "Swine Men": `name_forms.idea_form` reads its last word), the words before it ("Wolf"),
    which find the kind's other forms; None for any other name."""
    key = normalize_term(term)
    words = key.replace("-", " ").split()
    if len(words) < 2 or term[:1].islower():
        return None
    if not (words[-1].endswith("men") or words[-1] in _KIND_WORDS):
        return None
    return " ".join(words[:-1])


_KIND_WORDS = frozenset((
    "man", "woman", "folk", "folks", "people", "beast", "beasts", "brute", "brutes", "creature",
    "creatures",
))  # fmt: skip


def _update_args(entry_id: int, post_ids: Sequence[int]) -> dict[str, Any]:
    args: dict[str, Any] = {"entry_id": f"E{entry_id}"}
    if post_ids:
        args["post_ids"] = list(post_ids)
    return args


def refused_creates(calls: Sequence[Call], handled: set[int]) -> Iterator[tuple[Call, int]]:
    """Each create refused because its name is already an entry, with that entry's id: once
    per entry not yet in `handled`, which it grows."""
    for call in calls:
        if call.name != "glossary_create" or not call.result or call.result.get("ok"):
            continue
        existing = duplicate_of(call.result)
        if existing is None or existing in handled:
            continue
        handled.add(existing)
        yield call, existing


def duplicate_of(result: Mapping[str, Any]) -> int | None:
    """The entry a refused create names as already there (`... already exists as E12`)."""
    error = str(result.get("error", ""))
    if "already" not in error:
        return None
    match = ENTRY_REF.search(error.split("already", 1)[1])
    return int(match.group(1)) if match else None


def _searched_entries(calls: Sequence[Call]) -> list[KnownEntry]:
    """The entries the searches found, as known entries (first hit of an id wins)."""
    found: dict[int, KnownEntry] = {}
    for call in calls:
        if call.name != "glossary_search" or not call.result or not call.result.get("ok"):
            continue
        for hit in call.result.get("hits") or []:
            number = entry_number(hit.get("id"))
            if number is not None and number not in found:
                aliases = tuple(str(a) for a in hit.get("aliases") or [])
                found[number] = KnownEntry(
                    number, str(hit.get("term", "")), aliases, str(hit.get("status", "")), ""
                )
    return [entry for entry in found.values() if entry.status not in ("rejected", "merged")]


def _search_hits(calls: Sequence[Call]) -> dict[str, int]:
    """Normalized names of the entries found by searches -> entry id (first hit wins)."""
    found: dict[str, int] = {}
    for call in calls:
        if call.name != "glossary_search" or not call.result or not call.result.get("ok"):
            continue
        for hit in call.result.get("hits") or []:
            number = entry_number(hit.get("id"))
            if number is None:
                continue
            for name in (hit.get("term", ""), *(hit.get("aliases") or [])):
                found.setdefault(normalize_term(str(name)), number)
    return found
