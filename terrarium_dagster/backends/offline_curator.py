"""The offline curator: `# Task: curate` answered by deterministic rules (`offline_curate`).

One line per decision (`E12 CONFIRM reason`, `E7 MERGE E3 reason`); entries without one stay
tentative.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from terrarium_dagster.backends.chat_request import ENTRY_REF, entry_number
from terrarium_dagster.backends.curate_view import CurateEntryView, parse_curate_message
from terrarium_dagster.backends.name_forms import (
    a_persons_name,
    a_places_name,
    name_owner,
    named_before_of,
    person_like,
    pet_forms_of,
    pet_name_of,
    titles_fit,
    untitled,
    woman_titled,
    word_of,
)
from terrarium_dagster.backends.portraits import PLACE_WORDS, TITLE_WORDS
from terrarium_dagster.backends.scene_message import KnownEntry
from terrarium_dagster.backends.term_reasons import (
    ROLE_SOURCES,
    SMALL_WORDS,
    a_title,
    aside_reason,
    company_reason,
    everyday_reason,
    few_for_a_word,
    glued_reason,
    long_quiet_reason,
    modifier_reason,
    one_stretch,
    only_titled,
    ordinary_word_reason,
    passing_reason,
    people_reason,
    phrase_reason,
    quiet_reason,
    quoted_reason,
    real_of_reason,
    spoken_reason,
    tied_quiet_reason,
    titled_quiet_reason,
    word_quiet_reason,
    word_reason,
)
from terrarium_dagster.backends.wire import content_text
from terrarium_dagster.curation.review_prompt import BOOK_LABEL
from terrarium_dagster.store.normalize import normalize_term
from terrarium_dagster.store.vocabulary import ordinary_reason
from terrarium_dagster.terms.english import HONORIFICS, STARTERS, is_english_word
from terrarium_dagster.terms.given_names import WOMEN_NAMES, familiar_pair
from terrarium_dagster.terms.text_search import find_term

CITED_IN_REASONING = 3  # posts a CONFIRM's reasoning names


def offline_curate(entries: Sequence[CurateEntryView]) -> list[dict[str, Any]]:
    """Deterministic curator decisions, in entry order; entries without one stay tentative.

    - REJECT a term that is ordinary vocabulary or a plainly used real-world name by word
      frequency (`cried`, `to-day`, `Kentucky`; see `glossary.vocabulary`), an English word
      written in lowercase (`lantern`, `evidently`, Zipf ≥ 2.5), a hyphenated description
      (`paint-streaked`, `semi-barbaric`), or never a name (`I`, `QM`, months).
    - MERGE into an older entry (reviewed or shown as similar; not rejected or merged, before or
      by this answer) when a name of one equals a name of the other, normalized, or when the
      term is a short, pet or titled form of that entry's name and of no other's (`Quill` or
      `Old Quill` into `Ambrose Quill`, `Toby` into `Tobiah`); a full name into the entry of one
      of its words (`Tobiah Leck` into `Leck`), taking the entry of its other word along when
      under review too (`Tobiah`); a merge into an entry merged in the same answer follows it.
    - REJECT, when it is merged into no entry, a familiar word or real-world name the story
      only mentions in passing (`passing_reason`: "Sioux", "Colt", "Civil War"; a name of English
      words one post names with nothing said of it: "Victor Hugo"), a capitalised word the
      evidence never capitalises mid-sentence and also writes in lowercase (`word_reason`:
      "Sak!" beside "sak"), a capitalised phrase its evidence also writes in lowercase or points
      at, with nothing said of it (`phrase_reason`: "this Island of Doctor Moreau"), and
      everyday lowercase words, compounds and phrases with nothing said of them however often
      named (`everyday_reason`: "log-house", "simpler way", "coracle"), and a name one post
      names only inside parentheses, with nothing said of it (`aside_reason`: "Slojd").
    - REJECT a name a single post names that the threads since never name again: after three
      threads unless it is a coinage, a title, a name holding another entry's or one with
      something said of it (`quiet_reason`; at a novel's end a single word English does not
      know is no coinage spared), after six whatever its shape (`long_quiet_reason`);
      in a novel, a person two paragraphs name with nothing said of them but their title,
      after six chapters or at the story's end (`titled_quiet_reason`: "Lord Backwater"); in a
      novel, at the story's end, a name met once with nothing said of it that is a word of
      another entry's name or holds one, left unmerged (`tied_quiet_reason`: "Kensington"
      beside "West Kensington", "Covent Garden Market" beside "Covent Garden").
    - REJECT a title "X of Y" met once, with nothing said of it, left undecided, whose company
      is two or more names, all let go as met in passing, before or in this answer
      (`company_reason`: "Age of Unpolished Stone" beside "Cretaceous Sea" and "Jurassic").
    - CONFIRM an entry with at least two source posts, or mentioned in two QM evidence posts;
      in a novel, not one whose two posts are side by side (`one_stretch`: left tentative, and
      let go at its quiet review unless a later chapter names it), nor a person two paragraphs
      name with nothing said of them but their title (`only_titled`: left tentative so), nor a
      lowercase word fewer than four paragraphs name (`few_for_a_word`: left tentative, and let
      go at its quiet review unless a later chapter names it, `word_quiet_reason`).
    - CONFIRM (restore) a rejected entry shown again because the thread names it, when with the
      posts naming it now it is no longer a name in passing, or MERGE it into the live entry
      that holds it (`_back_again`); otherwise leave it out (it stays rejected).
    """
    decisions: list[dict[str, Any]] = []
    reviewed = {view.entry_id: view for view in entries}
    back = {view.entry_id: _back_again(view) for view in entries if view.status == "rejected"}
    back = _restored_together(entries, back)
    restored = {entry_id: reason for entry_id, (reason, _, _) in back.items() if reason}
    # a restored entry is live to the merges of this answer ("Tobiah Leck" into a restored "Leck")
    reviewed = {
        entry_id: replace(view, status="confirmed") if entry_id in restored else view
        for entry_id, view in reviewed.items()
    }
    merged_away: set[int] = set()
    rejected: set[int] = set()  # by this answer: no merge goes into them
    for view in entries:
        ref = f"E{view.entry_id}"
        if view.status == "rejected":
            reason, owner, how = back[view.entry_id]
            if owner is not None:
                merged_away.add(view.entry_id)
                again = f"'{view.term}', named again in {view.named_again} posts of this thread,"
                decisions.append(_merge(ref, owner, f"{again} {how}"))
            elif reason is not None:
                decisions.append({"entry_id": ref, "decision": "CONFIRM", "reasoning": reason})
            continue
        ordinary = ordinary_word_reason(view)
        if ordinary:
            reason = f"{ordinary}, not a story term."
            decisions.append({"entry_id": ref, "decision": "REJECT", "reasoning": reason})
            rejected.add(view.entry_id)
            continue
        target, how = _merge_target(view, reviewed, merged_away | rejected)
        if target is not None:
            merged_away.add(view.entry_id)
            decisions.append(_merge(ref, target, f"'{view.term}' {how}"))
            continue
        related = pet_name_of(view.term, view.similar) or word_of(view.term, view.similar)
        passing = tied_quiet_reason(view, bool(related)) or (
            None
            if related
            else passing_reason(view)
            or word_reason(view)
            or phrase_reason(view)
            or glued_reason(view)
            or people_reason(view)
            or everyday_reason(view)
            or spoken_reason(view)
            or quiet_reason(view)
            or long_quiet_reason(view)
            or titled_quiet_reason(view)
            or word_quiet_reason(view)
            or quoted_reason(view)
            or aside_reason(view)
            or real_of_reason(view)
            or modifier_reason(view)
        )
        if passing:  # after the merges: "Toby" is Tobiah's, whatever its frequency
            reason = f"{passing}, not a story term."
            decisions.append({"entry_id": ref, "decision": "REJECT", "reasoning": reason})
            rejected.add(view.entry_id)
            continue
        if (
            (view.source_count >= 2 or view.qm_evidence_mentions >= 2)
            and not one_stretch(view)
            and not only_titled(view)
            and not few_for_a_word(view)
        ):
            listed = view.source_posts[:CITED_IN_REASONING]
            cited = ", ".join(f">>{post}" for post in listed)
            unlisted = view.source_count - len(listed)
            if unlisted > 0:  # the count and the list agree: say how many are not listed
                cited += f" and {unlisted} more"
            reason = (
                f"Recorded from {view.source_count} posts ({cited})."
                if view.source_count >= 2
                else f"Mentioned in {view.qm_evidence_mentions} QM posts of the evidence."
            )
            decisions.append({"entry_id": ref, "decision": "CONFIRM", "reasoning": reason})
    decisions.extend(_met_among_let_go(entries, decisions, set(restored)))
    decisions = _follow_merges(_absorb_first_names(decisions, entries))
    if any(view.story_label == BOOK_LABEL for view in entries):  # a novel's chapters, paragraphs
        for decision in decisions:
            decision["reasoning"] = _in_a_books_words(decision.get("reasoning") or "")
    return decisions


# A reason's words for a quest's posts and threads, and a novel's for the same (the curation of
# an imported book reads as a book's wherever a reader meets it: the site, `why`, Dagster).
_BOOK_WORDS = (
    (" posts (>>", " paragraphs (>>"),
    (" QM posts of the evidence", " paragraphs of the evidence"),
    ("posts of this thread", "paragraphs of this chapter"),
    ("a single post", "a single paragraph"),
    (" post(s)", " paragraph(s)"),
    (" threads since", " chapters since"),
)


def _in_a_books_words(reason: str) -> str:
    for quest, book in _BOOK_WORDS:
        reason = reason.replace(quest, book)
    return reason


def _merge(ref: str, target: KnownEntry, why: str) -> dict[str, Any]:
    """A MERGE of the entry `ref` into `target`, its reasoning `why` followed by the target."""
    return {
        "entry_id": ref,
        "decision": "MERGE",
        "target_entry_id": f"E{target.entry_id}",
        "reasoning": f"{why} [E{target.entry_id}] {target.term}.",
    }


def _met_among_let_go(
    entries: Sequence[CurateEntryView], decisions: Sequence[Mapping[str, Any]], restored: set[int]
) -> list[dict[str, Any]]:
    """REJECTs of the titles met once that this answer left undecided and that appear only with
    names let go (`company_reason`): entries rejected before, as the similar entries show them
    (not restored now), or rejected in this answer."""
    decided = {decision["entry_id"]: decision["decision"] for decision in decisions}
    let_go = {
        normalize_term(name)
        for view in entries
        if decided.get(f"E{view.entry_id}") == "REJECT"
        or (view.status == "rejected" and view.entry_id not in restored)
        for name in view.names
    }
    let_go |= {
        normalize_term(name)
        for view in entries
        for known in view.similar
        if known.status == "rejected"
        and known.entry_id not in restored
        and f"E{known.entry_id}" not in decided
        for name in known.names
    }
    targets = {d.get("target_entry_id") for d in decisions if d["decision"] == "MERGE"}
    found = []
    for view in entries:
        if f"E{view.entry_id}" in decided or f"E{view.entry_id}" in targets:
            continue  # decided, or the entry another one is merged into: it has company
        reason = company_reason(view, let_go)
        if reason:
            found.append(
                {
                    "entry_id": f"E{view.entry_id}",
                    "decision": "REJECT",
                    "reasoning": f"{reason}, not a story term.",
                }
            )
    return found


def _named_again(view: CurateEntryView) -> CurateEntryView | None:
    """A rejected entry named again in this thread, counted with the posts naming it now, when
    the story mentions it in `ROLE_SOURCES` posts or more and it is no longer a name met in
    passing ("John Silver", "Heat-Ray"); None for an ordinary word or description, or a word the
    new posts write in lowercase."""
    if view.named_again <= 0 or ordinary_word_reason(view):
        return None
    total = view.source_count + view.named_again
    if total < ROLE_SOURCES:
        return None
    again = replace(view, source_count=total)
    if (
        passing_reason(again)
        or word_reason(again)
        or phrase_reason(again)
        or glued_reason(again)
        or people_reason(again)
        or everyday_reason(again)
        or spoken_reason(again)
        or quoted_reason(again)
    ):
        return None
    return again


def _back_again(view: CurateEntryView) -> tuple[str | None, KnownEntry | None, str]:
    """For a rejected entry named again in this thread: why it is the story's own after all
    (`_named_again`; None when it stays rejected, a title, or a name an older live entry holds),
    and the live entry it goes to instead, with how (None, ""). An older live entry that holds
    it takes it ("Eliza" into "Elizabeth Bennet"). A restored one goes to the one full name its
    surname ends (`_full_name_holding`: "Hyde" into "Edward Hyde"), or, named in several words,
    to the live entry of any age named in fewer words that it is a form of ("Colonel Stamp
    Proctor" into "Colonel Proctor", created while it stood rejected; not "Treasure Island" into
    "Isle of Treasure"), or, a full name, to the one live entry named by a pet form of its given
    name ("David Balfour" into "Davie")."""
    again = _named_again(view)
    if again is None or a_title(view):
        return None, None, ""
    older, how = _merge_target(again, {}, set())
    if older is not None:
        return None, older, how
    reason = (
        f"'{view.term}' is named again in {view.named_again} posts of this thread "
        f"({again.source_count} in all): the story's own, not a name in passing; restored."
    )
    holder = _full_name_holding(view)
    if holder is not None and not _another_person(view, holder):
        return reason, holder, "is part of the full name of"
    size = len(normalize_term(view.term).split())
    live = [
        other
        for other in view.similar
        if other.status not in ("rejected", "merged")
        and len(normalize_term(other.term).split()) < size
    ]
    owner, how = name_owner(view.term, live) if size > 1 else (None, "")
    pets = pet_forms_of(view.term, live) if owner is None else []
    if len(pets) == 1:  # "David Balfour" into "Davie", made while he stood rejected
        owner, how = pets[0], "is the full name of the pet form"
    if owner is not None and _another_person(view, owner):
        return reason, None, ""
    return reason, owner, how


def _restored_together(
    entries: Sequence[CurateEntryView],
    back: Mapping[int, tuple[str | None, KnownEntry | None, str]],
) -> dict[int, tuple[str | None, KnownEntry | None, str]]:
    """`back` with each entry this answer restores under its own name merged instead into an
    older one it restores beside it, when its name is a short, pet or titled form of that one's
    and of no other's (`name_owner`): "Andrew Speedy" and "Captain Speedy", both let go as met
    in passing and both named again in one chapter, are one captain. Each was shown beside the
    other still rejected, so `_back_again` found no live entry holding it."""
    found = dict(back)
    for view in sorted(entries, key=lambda view: view.entry_id):
        reason, owner, _how = found.get(view.entry_id, (None, None, ""))
        if reason is None or owner is not None:
            continue
        older = [
            KnownEntry(other.entry_id, other.term, other.aliases, "confirmed", other.definition)
            for other in entries
            if other.entry_id < view.entry_id
            and found.get(other.entry_id, (None, None, ""))[0] is not None
            and found[other.entry_id][1] is None
        ]
        together, how = name_owner(view.term, older)
        if together is not None and not _another_person(view, together):
            found[view.entry_id] = (reason, together, how)
    return found


def _full_name_holding(view: CurateEntryView) -> KnownEntry | None:
    """For a rejected one-word name named again that its evidence writes as a surname, after a
    title ("Mr. Hyde"), the one live entry shown beside it whose name is a full name ending with
    it, no title ("Edward Hyde", created while "Hyde" stood rejected): one person, restored
    under the full name. Not a titled name ("Miss Stapleton": a family shares the surname), nor
    a name the evidence never titles ("Maybury" of "Maybury Inn", "Surrey" of "West Surrey")."""
    key = normalize_term(view.term)
    if " " in key or not _titled_in_evidence(view):
        return None
    own = KnownEntry(view.entry_id, view.term, view.aliases, view.status, view.definition)
    holders = []
    for other in view.similar:
        if other.status in ("rejected", "merged"):
            continue
        for words in (normalize_term(name).split() for name in other.names):
            if (
                person_like(" ".join(words))
                and key == words[-1]
                and not set(words) & (HONORIFICS | TITLE_WORDS | PLACE_WORDS)
                and titles_fit(" ".join(words), own)  # "Bennet", alias "Mr. Bennet": not hers
            ):
                holders.append(other)
                break
    return holders[0] if len(holders) == 1 else None


_TITLE_BEFORE = re.compile(r"\b(?:Mr|Mrs|Ms|Dr|Mister|Miss|Sir|Lady|Lord|Master)\.?\s+$")


def _titled_in_evidence(view: CurateEntryView) -> bool:
    """Whether the evidence writes the name after a title of address ("Mr. Hyde"): a surname."""
    return any(
        _TITLE_BEFORE.search(text[max(0, start - 12) : start])
        for text in view.evidence
        for start, _ in find_term(text, view.term)
    )


def _absorb_first_names(
    decisions: list[dict[str, Any]], entries: Sequence[CurateEntryView]
) -> list[dict[str, Any]]:
    """A full name merged into the entry of one of its words (`Tobiah Leck` into `Leck`) takes
    the entry of its other word along when that one is under review too (`Tobiah`)."""
    by_ref = {decision["entry_id"]: decision for decision in decisions}
    for view in entries:
        decision = by_ref.get(f"E{view.entry_id}")
        if not decision or decision["decision"] != "MERGE":
            continue
        target = decision["target_entry_id"]
        for name in map(normalize_term, view.names):
            if not person_like(name):
                continue
            ends = {name.split()[0], name.split()[-1]} - STARTERS
            for other in entries:
                ref = f"E{other.entry_id}"
                other_decision = by_ref.get(ref)
                if (
                    ref == target
                    or other.entry_id == view.entry_id
                    or other.status == "rejected"
                    or normalize_term(other.term) not in ends
                    or (other_decision and other_decision["decision"] in ("MERGE", "REJECT"))
                ):
                    continue
                merge = {
                    "entry_id": ref,
                    "decision": "MERGE",
                    "target_entry_id": target,
                    "reasoning": f"'{other.term}' is part of the full name '{view.term}', "
                    f"which is [{target}].",
                }
                if other_decision is None:
                    decisions.append(merge)
                else:
                    decisions[decisions.index(other_decision)] = merge
                by_ref[ref] = merge
    return decisions


def _follow_merges(decisions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A merge into an entry merged away in the same answer goes to where that one goes."""
    targets = {d["entry_id"]: d["target_entry_id"] for d in decisions if d["decision"] == "MERGE"}
    for decision in decisions:
        if decision["decision"] != "MERGE":
            continue
        seen = {decision["entry_id"]}
        target = decision["target_entry_id"]
        while target in targets and target not in seen:
            seen.add(target)
            target = targets[target]
        if target in seen:  # a cycle: leave this one undecided rather than loop
            continue
        decision["target_entry_id"] = target
    return [
        d for d in decisions if d["decision"] != "MERGE" or d["target_entry_id"] != d["entry_id"]
    ]


def _merge_target(
    view: CurateEntryView, reviewed: Mapping[int, CurateEntryView], let_go: set[int]
) -> tuple[KnownEntry | None, str]:
    """The older entry `view` is a form of, and how; none of `let_go` (merged away or rejected by
    this answer: "Lord Advocate Grant" is not merged into a "Lord Advocate" rejected beside it)."""
    mine = {normalize_term(name) for name in view.names}
    others: dict[int, KnownEntry] = {
        o.entry_id: KnownEntry(o.entry_id, o.term, o.aliases, o.status, o.definition)
        for o in reviewed.values()
    }
    for entry in view.similar:
        others.setdefault(entry.entry_id, entry)
    older = [
        other
        for entry_id, other in sorted(others.items())
        if entry_id < view.entry_id
        and entry_id not in let_go
        and other.status not in ("rejected", "merged")
    ]
    for other in older:
        if mine & {normalize_term(name) for name in other.names}:
            return other, "names the same thing as"
    found = _merge_owner(view, older, list(others.values()))
    if found[0] is not None and _another_person(view, found[0]):
        return None, ""  # "Miss Bennet", also "Miss Jane Bennet", is not "Elizabeth Bennet"
    return found


def _merge_owner(
    view: CurateEntryView, older: Sequence[KnownEntry], known: Sequence[KnownEntry]
) -> tuple[KnownEntry | None, str]:
    """The older entry `view` is a form of by its names (`_merge_target`'s rules but the first)."""
    owner, how = name_owner(view.term, older)
    if owner is not None:
        return owner, how
    family = _family_surname(view)
    if family is not None:
        owner, how = name_owner(family, older)
        if owner is not None and person_like(normalize_term(owner.term)):
            return owner, f"names the family of '{family}', which {how}"
    longer = _longer_hyphened(view, older)
    if longer is not None:
        return longer, "is a longer hyphened form of the name of"
    shorter = _named_by_a_word(view, older)
    live = [entry for entry in known if entry.status not in ("rejected", "merged")]
    if shorter is not None and not any(
        _given_elsewhere(name, shorter, live) for name in view.names
    ):
        return shorter, "is the fuller name of"
    # "Lestrade of Scotland Yard" of "Lestrade": judged here, where the older entry shows all
    # its names ("Jeddaks" makes "Jeddak" a title), not as a scene names it
    owners = [] if _one_of_a_kind(view) else named_before_of(view.term, older)
    if len(owners) == 1:
        return owners[0], "is the name, with where it belongs, of"
    overlapping = _overlapping_name(view, older, known)
    if overlapping is not None:
        return overlapping, "runs on into one name with"
    return None, ""


def _another_person(view: CurateEntryView, owner: KnownEntry) -> bool:
    """Whether a full name of each, titles aside, gives one surname two given names that are no
    familiar forms of each other ("Miss Jane Bennet" and "Elizabeth Bennet"; "Nikolay Levin" and
    "Konstantin Levin", "Alexey Vronsky" and "Count Kirill Ivanovitch Vronsky"): two of a family,
    whatever a shorter name of one ("Miss Bennet", "Levin") would be a form of. Of three words,
    either of the first two may be the given name: a patronymic after it, or a title before it
    ("Jeddak Tardos Mors" is "Tardos Mors")."""
    given: dict[str, set[str]] = {}
    persons: set[str] = set()  # surnames a name of the owner's shows as a person's
    full: list[tuple[tuple[str, ...], str]] = []  # the owner's full names of a person
    for name in map(normalize_term, owner.names):
        found = _given_and_family(name)
        if found is not None:
            given.setdefault(found[1], set()).update(found[0])
            if _a_persons_given_name(name):
                persons.add(found[1])
                full.append(found)
    for name in map(normalize_term, view.names):
        found = _given_and_family(name)
        if found is None:
            continue  # "Old Quill" names no given name
        mine, family = found
        if family not in persons and not _a_persons_given_name(name):
            continue  # "Sacred Iss" and "River Iss": no person's names
        theirs = given.get(family, set())
        if theirs and not any(g == m or familiar_pair(g, m) for g in theirs for m in mine):
            return True
        if _a_persons_given_name(name) and any(
            _one_given_two_surnames((mine, family), other) for other in full
        ):
            return True
    return False


def _one_given_two_surnames(
    mine: tuple[tuple[str, ...], str], theirs: tuple[tuple[str, ...], str]
) -> bool:
    """Whether two full names share a given name under two surnames, neither a word of the
    other name: "Francesco Boccansacchi" and "Francesco Bussone" (the first was merged as the
    fuller name of the second's short "Francesco"); not "Alan Breck Stewart" and "Alan Breck",
    nor two forms of a kind of being whose last words English knows ("Swine-man", "Swine Men")."""
    (my_given, my_family), (their_given, their_family) = mine, theirs
    if my_family == their_family or my_family in their_given or their_family in my_given:
        return False
    if is_english_word(my_family) or is_english_word(their_family):
        return False  # "Swine-man" and "Swine Men", "Saint-Bernard-brute": a kind, no surname
    return any(g == m or familiar_pair(g, m) for g in their_given for m in my_given)


def _given_and_family(name: str) -> tuple[tuple[str, ...], str] | None:
    """The words of a normalized person-like name of two or three words (titles aside) that may
    be its given name, and its surname; None for another shape."""
    words = untitled(name).split()
    if len(words) not in (2, 3) or not person_like(name) or words[0] in HONORIFICS:
        return None
    return tuple(words[:-1]), words[-1]


def _a_persons_given_name(key: str) -> bool:
    """Whether a normalized name of two or three words is a person's by its first word: a given
    name the lists know (`a_persons_name`), or one that is no English word at all, as a novel's
    foreign names are ("nikolay levin", "stepan arkadyevitch oblonsky"); never an ordinary word
    ("river iss", "east barnet"), nor a place's ("mizzenmast hill")."""
    first = untitled(key).split()[0]
    if a_persons_name(key):
        return True
    return first.isalpha() and ordinary_reason(first) is None and not a_places_name(key)


_INDEFINITE = re.compile(r"\b(?:a|an)\s+$", re.IGNORECASE)


def _one_of_a_kind(view: CurateEntryView) -> bool:
    """Whether the evidence writes the name after "a" or "an" ("a Dator of the First Born"):
    one of a kind or a rank, not one referent."""
    return any(
        _INDEFINITE.search(text[max(0, start - 4) : start])
        for text in view.evidence
        for start, _ in find_term(text, view.term)
    )


def _longer_hyphened(view: CurateEntryView, older: Sequence[KnownEntry]) -> KnownEntry | None:
    """The one older entry whose hyphened name of two parts or more this hyphened name opens
    with and runs on ("Rikki-tikki-tavi" and "Rikki-tikki-tck-tck" of "Rikki-tikki"): the name
    said in full or cried, one referent."""
    parts = [part for part in re.split(r"[-‐‑]", view.term.casefold()) if part]
    if len(parts) < 3 or " " in view.term:
        return None
    found = [
        other
        for other in older
        if any(
            len(theirs := [p for p in re.split(r"[-‐‑]", name.casefold()) if p]) >= 2
            and " " not in name
            and parts[: len(theirs)] == theirs
            and len(parts) > len(theirs)
            for name in other.names
        )
    ]
    return found[0] if len(found) == 1 else None


def _family_surname(view: CurateEntryView) -> str | None:
    """The surname a family named in the plural is of: a one-word term that is the plural of its
    own alias ("Mortimers", alias "Mortimer"; "Desmonds", "Desmond"), or None."""
    term = view.term
    if " " in term or not term[:1].isupper() or not term.endswith("s"):
        return None
    singulars = {term[:-1], term[:-2]} if term.endswith("es") else {term[:-1]}
    return next((alias for alias in view.aliases if alias in singulars), None)


def _overlapping_name(
    view: CurateEntryView, older: Sequence[KnownEntry], known: Sequence[KnownEntry]
) -> KnownEntry | None:
    """The older entry whose name runs on into this entry's name as one name a third entry is
    named by ("Long John" and "John Silver" overlap in "John" into "Long John Silver", whatever
    that entry's status): two parts of one person's full name."""
    mine = [normalize_term(name).split() for name in view.names]
    for other in older:
        third = {
            normalize_term(name)
            for entry in known
            if entry.entry_id not in (view.entry_id, other.entry_id)
            for name in entry.names
        }
        for theirs in (normalize_term(name).split() for name in other.names):
            for own in mine:
                if len(own) < 2 or len(theirs) < 2 or own == theirs:
                    continue
                for first, second in ((theirs, own), (own, theirs)):
                    shared = first[-1]
                    if shared in SMALL_WORDS or second[0] != shared:
                        continue
                    if " ".join([*first, *second[1:]]) in third:
                        return other
    return None


def _named_by_a_word(view: CurateEntryView, older: Sequence[KnownEntry]) -> KnownEntry | None:
    """For a multiword name (`Tobiah Leck`), the older one-word entry that is its first or last
    word (`Tobiah`), or a familiar or pet form of its given name (`Lizzy` of `Elizabeth
    Bennet`): the same referent, first met by part of its name."""
    keys = [normalize_term(name) for name in view.names]
    for key in keys:
        if not person_like(key) or woman_titled(key):  # "Miss Bingley" is not "Bingley"
            continue
        ends = {key.split()[0], key.split()[-1]} - STARTERS
        given = untitled(key).split()[0]
        place = a_places_name(key)
        for other in older:
            names = [normalize_term(n) for n in other.names]
            if any(_runs_on(key, n) for n in names):
                continue  # "Wuthering Heights Catherine" is "Wuthering Heights" and "Catherine"
            named = any(n in ends for n in names) or (
                given not in STARTERS
                and any(" " not in n and familiar_pair(n, given) for n in names)
            )
            if place and any(a_persons_name(n) for n in names):
                continue  # "Baskerville Hall" is not the Baskervilles' "Henry Baskerville"
            if any(n in ends and _a_family_name(n, given, other, older) for n in names):
                continue  # nor "Henry Baskerville" a family's "Baskerville" (`_a_family_name`)
            if named and titles_fit(key, other):
                return other
    return None


def _runs_on(key: str, name: str) -> bool:
    """Whether the normalized name `key` opens with the whole of another name of several words
    and runs on with more ("wuthering heights catherine" after "wuthering heights"): two names
    side by side ("And of Wuthering Heights Catherine was thinking"), no fuller name of it."""
    words, theirs = key.split(), name.split()
    return 1 < len(theirs) < len(words) and words[: len(theirs)] == theirs


def _given_elsewhere(name: str, owner: KnownEntry, known: Sequence[KnownEntry]) -> bool:
    """Whether the woman's given name of a full name of two words (normalized) is that of a full
    name of another person, with another surname, while `owner` is named by its surname alone:
    the full name is as much that one's (a married name: "Catherine Linton" beside "Catherine
    Earnshaw") as the family's ("Linton"), so neither takes it by one word. A man's given name
    is anyone's ("John Brooke" is "Brooke"'s beside a "John Laurence")."""
    words = untitled(normalize_term(name)).split()
    if len(words) != 2 or not person_like(" ".join(words)):
        return False
    given, surname = words
    if surname not in map(normalize_term, owner.names) or given not in WOMEN_NAMES:
        return False
    for entry in known:
        if entry.entry_id == owner.entry_id:
            continue
        for other in map(normalize_term, entry.names):
            theirs = untitled(other).split()
            if (
                len(theirs) == 2
                and person_like(other)
                and theirs[-1] != surname
                and (theirs[0] == given or familiar_pair(theirs[0], given))
                and a_persons_name(other)
            ):
                return True
    return False


def _a_family_name(word: str, given: str, owner: KnownEntry, older: Sequence[KnownEntry]) -> bool:
    """Whether `word`, a one-word name of `owner`, was already the surname of a person of
    another given name when `owner` was made: a family's name ("Baskerville" after "Charles
    Baskerville" and "Hugo Baskerville"), which no one of them, nor their house, is named by."""
    for entry in older:
        if entry.entry_id >= owner.entry_id:
            continue
        for name in map(normalize_term, entry.names):
            bare = untitled(name).split()
            if len(bare) > 1 and bare[-1] == word and bare[0] != given and person_like(name):
                return True
    return False


def curate_answer(messages: Sequence[Mapping[str, Any]], last_user: int) -> str:
    """The answer to the curate message at `last_user` (or a retry note after it)."""
    text = content_text(messages[last_user].get("content"))
    views = parse_curate_message(text)
    wanted: set[int] | None = None
    if not views:  # a retry note: find the entries in the earlier curate message
        only = re.search(r"entries only: (.*)", text)
        wanted = {int(n) for n in ENTRY_REF.findall(only.group(1))} if only else None
        for message in reversed(messages[:last_user]):
            content = content_text(message.get("content"))
            if message.get("role") == "user" and content.startswith("# Task: curate"):
                views = parse_curate_message(content)
                if views:
                    break
    decisions = offline_curate(views)
    if wanted is not None:
        decisions = [d for d in decisions if entry_number(d["entry_id"]) in wanted]
    return "".join(decision_line(decision) + "\n" for decision in decisions) or "NONE\n"


def decision_line(decision: Mapping[str, Any]) -> str:
    """One decision in the curator's answer format: `E12 CONFIRM reason`, `E7 MERGE E3 reason`,
    `E4 REVISE definition` (curation.review_prompt.ANSWER_FORMAT)."""
    words = [f"E{entry_number(decision['entry_id'])}", str(decision["decision"])]
    if decision["decision"] == "MERGE":
        words.append(f"E{entry_number(decision['target_entry_id'])}")
    if decision["decision"] == "REVISE":
        words.append(" ".join(str(decision.get("definition") or "").split()))
    elif decision.get("reasoning"):
        words.append(" ".join(str(decision["reasoning"]).split()))
    return " ".join(words)
