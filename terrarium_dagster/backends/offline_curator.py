"""The offline curator: `# Task: curate` answered by deterministic rules (`offline_curate`).

One line per decision (`E12 CONFIRM reason`, `E7 MERGE E3 reason`); entries without one stay
tentative.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from terrarium_dagster.backends.chat_request import ENTRY_REF, entry_number
from terrarium_dagster.backends.describe import COMPANY, KIND_LEADS, UNKNOWN_LEADS, parse_definition
from terrarium_dagster.backends.name_forms import (
    idea_form,
    name_owner,
    person_like,
    pet_name_of,
    word_of,
)
from terrarium_dagster.backends.scene_message import KnownEntry, parse_known_entries
from terrarium_dagster.backends.wire import content_text
from terrarium_dagster.curation.review_prompt import NAMED_AGAIN, NOT_NAMED_SINCE
from terrarium_dagster.store.normalize import normalize_term
from terrarium_dagster.store.vocabulary import TRUNCATED_ZIPF, frequency, ordinary_reason
from terrarium_dagster.terms.candidates import (
    ENGLISH_ZIPF,
    NOT_NAMES,
    STARTERS,
    find_term,
    is_demonym_of_real_place,
    is_descriptive_compound,
    is_english_lowercase,
    is_english_word,
    spoken_word_of,
)

_POST_REF = re.compile(r">>(\d+)")


@dataclass(frozen=True, slots=True)
class CurateEntryView:
    """What the curate message shows about one entry under review."""

    entry_id: int
    term: str
    aliases: tuple[str, ...] = ()
    status: str = "tentative"
    definition: str = ""
    source_posts: tuple[int, ...] = ()
    source_count: int = 0
    qm_evidence_mentions: int = 0
    similar: tuple[KnownEntry, ...] = ()
    evidence: tuple[str, ...] = ()  # the texts of the evidence posts shown
    named_again: int = 0  # a rejected entry's posts naming it in this thread
    quiet_threads: int = 0  # threads since it was left tentative, none of them naming it

    @property
    def names(self) -> tuple[str, ...]:
        return (self.term, *self.aliases)


def parse_curate_message(text: str) -> list[CurateEntryView]:
    """The entries of a `# Task: curate` message (tolerant: blocks start at `## Entry E<id>`)."""
    blocks = re.split(r"^## Entry ", text, flags=re.MULTILINE)[1:]
    views: list[CurateEntryView] = []
    for block in blocks:
        block = block.split("\n## ", 1)[0]
        lines = [line for line in block.splitlines() if line.strip()]
        header = re.match(r"E(\d+):? ?(.*)", lines[0] if lines else "")
        entry_line = next((line for line in lines if line.startswith("- [E")), None)
        known = parse_known_entries(entry_line) if entry_line else []
        if not known and header is None:
            continue
        if known:
            base = known[0]
        else:
            assert header is not None
            base = KnownEntry(int(header.group(1)), header.group(2).strip(), (), "tentative", "")
        sources_line = next((line for line in lines if line.startswith("sources:")), "")
        posts = tuple(dict.fromkeys(int(p) for p in _POST_REF.findall(sources_line)))
        more = re.search(r"and (\d+) more", sources_line)
        count = len(posts) + (int(more.group(1)) if more else 0)
        qm_mentions = 0
        evidence: list[str] = []
        for line in lines:
            if line.startswith(">>"):
                evidence.append(line.split(":", 1)[1] if ":" in line else "")
            if line.startswith(">>") and "(QM" in line.split(":", 1)[0]:
                body = line.split(":", 1)[1] if ":" in line else ""
                if any(find_term(body, name) for name in base.names):
                    qm_mentions += 1
        again = next(
            (
                re.match(r"(\d+)", line.split(NAMED_AGAIN, 1)[1].strip())
                for line in lines
                if NAMED_AGAIN in line
            ),
            None,
        )
        quiet = next(
            (
                re.match(r"(\d+)", line.split(NOT_NAMED_SINCE, 1)[1].strip())
                for line in lines
                if NOT_NAMED_SINCE in line
            ),
            None,
        )
        similar = tuple(
            entry
            for line in lines
            if line.startswith("- similar: ")
            for entry in parse_known_entries("- " + line[len("- similar: ") :])
        )
        views.append(
            CurateEntryView(
                base.entry_id,
                base.term,
                base.aliases,
                base.status,
                base.definition,
                posts,
                count,
                qm_mentions,
                similar,
                tuple(evidence),
                int(again.group(1)) if again else 0,
                int(quiet.group(1)) if quiet else 0,
            )
        )
    return views


CITED_IN_REASONING = 3  # posts a CONFIRM's reasoning names


def offline_curate(entries: Sequence[CurateEntryView]) -> list[dict[str, Any]]:
    """Deterministic curator decisions, in entry order; entries without one stay tentative.

    - REJECT a term that is ordinary vocabulary or a plainly used real-world name by word
      frequency (`cried`, `to-day`, `Kentucky`; see `glossary.vocabulary`), an English word
      written in lowercase (`lantern`, `evidently`, Zipf ≥ 2.5), a hyphenated description
      (`paint-streaked`, `semi-barbaric`), or never a name (`I`, `QM`, months).
    - MERGE into an older entry (reviewed or shown as similar; not rejected or merged) when a name
      of one equals a name of the other, normalized, or when the term is a short, pet or titled
      form of that entry's name and of no other's (`Quill` or `Old Quill` into `Ambrose Quill`,
      `Toby` into `Tobiah`); a full name into the entry of one of its words (`Tobiah Leck` into
      `Leck`), taking the entry of its other word along when under review too (`Tobiah`); a
      merge into an entry merged in the same answer follows it.
    - REJECT, when it is merged into no entry, a familiar word or real-world name the story
      only mentions in passing (`passing_reason`: "Sioux", "Colt", "Civil War"; a name of English
      words one post names with nothing said of it: "Victor Hugo"), a capitalised word the
      evidence never capitalises mid-sentence and also writes in lowercase (`word_reason`:
      "Sak!" beside "sak"), and everyday lowercase words, compounds and phrases with nothing said
      of them however often named (`everyday_reason`: "log-house", "simpler way", "coracle").
    - CONFIRM an entry with at least two source posts, or mentioned in two QM evidence posts.
    - CONFIRM (restore) a rejected entry shown again because the thread names it, when with the
      posts naming it now it is no longer a name in passing (`restore_reason`); otherwise leave
      it out (it stays rejected).
    """
    decisions: list[dict[str, Any]] = []
    reviewed = {view.entry_id: view for view in entries}
    restored = {
        view.entry_id: reason
        for view in entries
        if view.status == "rejected" and (reason := restore_reason(view))
    }
    # a restored entry is live to the merges of this answer ("Tobiah Leck" into a restored "Leck")
    reviewed = {
        entry_id: replace(view, status="confirmed") if entry_id in restored else view
        for entry_id, view in reviewed.items()
    }
    merged_away: set[int] = set()
    for view in entries:
        ref = f"E{view.entry_id}"
        if view.status == "rejected":
            if view.entry_id in restored:
                reason = restored[view.entry_id]
                decisions.append({"entry_id": ref, "decision": "CONFIRM", "reasoning": reason})
            continue
        ordinary = _ordinary(view)
        if ordinary:
            reason = f"{ordinary}, not a story term."
            decisions.append({"entry_id": ref, "decision": "REJECT", "reasoning": reason})
            continue
        target, how = _merge_target(view, reviewed, merged_away)
        if target is not None:
            merged_away.add(view.entry_id)
            decisions.append(
                {
                    "entry_id": ref,
                    "decision": "MERGE",
                    "target_entry_id": f"E{target.entry_id}",
                    "reasoning": f"'{view.term}' {how} [E{target.entry_id}] {target.term}.",
                }
            )
            continue
        related = pet_name_of(view.term, view.similar) or word_of(view.term, view.similar)
        passing = (
            None
            if related
            else passing_reason(view)
            or word_reason(view)
            or everyday_reason(view)
            or quiet_reason(view)
            or quoted_reason(view)
        )
        if passing:  # after the merges: "Toby" is Tobiah's, whatever its frequency
            reason = f"{passing}, not a story term."
            decisions.append({"entry_id": ref, "decision": "REJECT", "reasoning": reason})
            continue
        if view.source_count >= 2 or view.qm_evidence_mentions >= 2:
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
    return _follow_merges(_absorb_first_names(decisions, entries))


def restore_reason(view: CurateEntryView) -> str | None:
    """Why a rejected entry named again in this thread is the story's own after all, or None
    (it stays rejected): with the posts naming it now, the story mentions it in `ROLE_SOURCES`
    posts or more, so it is no longer a name met in passing ("John Silver", "Heat-Ray"). Never
    an ordinary word or description, a word the new posts write in lowercase, nor a name
    another live entry holds."""
    if view.named_again <= 0 or _ordinary(view):
        return None
    total = view.source_count + view.named_again
    if total < ROLE_SOURCES:
        return None
    again = replace(view, source_count=total)
    if (
        passing_reason(again)
        or word_reason(again)
        or everyday_reason(again)
        or quoted_reason(again)
    ):
        return None
    if _merge_target(again, {}, set())[0] is not None or _a_title(view):
        return None
    return (
        f"'{view.term}' is named again in {view.named_again} posts of this thread "
        f"({total} in all): the story's own, not a name in passing; restored."
    )


def quiet_reason(view: CurateEntryView) -> str | None:
    """Why an entry left tentative that no thread since has named is a name met in passing, or
    None: a single post names it, once, with nothing said of it, every word of it is one English
    knows (Zipf `KNOWN_ZIPF` or more: a real place or person, "Guildford", "Perrotin of Nice"),
    and the threads since (at least `curation.curator.QUIET_THREADS`) never name it again. Never
    a coinage ("Woola"), a title "X of Y" of an English word, a kind of being ("Ocelot-man") nor
    a name holding another entry's. A later thread naming it again restores it."""
    if view.quiet_threads <= 0 or view.source_count != 1 or view.status != "tentative":
        return None
    words = [w for w in re.split(r"[\s-]+", view.term) if w and w.casefold() not in _SMALL_WORDS]
    if (
        not words
        or min(frequency(word) for word in words) < KNOWN_ZIPF  # a coinage: "Woola", "Tal Hajus"
        or _a_title_of(view.term)  # "Goddess of Death", named once in each of five chapters
        or _last_word(view.term) in _BEINGS
        or _has_role(view, kind_is_role=False)
        or _holds_an_entry(view)
        or _mentions(view) >= 2
    ):
        return None
    return (
        f"'{view.term}' is named in a single post with nothing said of it, and the "
        f"{view.quiet_threads} threads since never name it again: a name met in passing"
    )


_QUOTE_OPENS = "\"“‘'"


def quoted_reason(view: CurateEntryView) -> str | None:
    """Why a capitalised name is a quotation, not a name the story uses, or None: the evidence
    writes it every time inside quotation marks that hold nothing else but a stop or a comma (a
    song, a log's words: "“Lillibullero.”", "‘Offe Caraccas,’"; not a cry, "“Calot!”", "“Weena!”":
    a name called out is spoken), and nothing is said of it. A later thread naming it in two
    posts restores it."""
    if view.term == view.term.lower() or view.aliases or _has_role(view, kind_is_role=False):
        return None
    found = 0
    for text in view.evidence:
        for start, end in find_term(text, view.term):
            opened = start > 0 and text[start - 1] in _QUOTE_OPENS
            closed = re.match(r"[.,;:]?[\"”’']", text[end : end + 2])  # not a cry: "Calot!"
            if not (opened and closed):
                return None
            found += 1
    if not found:
        return None
    return f"'{view.term}' is only ever quoted alone, as a title or a saying: a quotation"


# A single capitalised word this frequent in English is a familiar word or a real-world name
# (a people, a country, a religion, a maker: "Sioux", "Shetland", "Confederate", "Colt"); several
# words each at least `FAMILIAR_PHRASE_ZIPF` ("Civil War", "United States of America") too.
FAMILIAR_ZIPF = 2.8
FAMILIAR_PHRASE_ZIPF = 4.5
# One word after "of" this rare in English is a real place's or person's name ("Hastings",
# "Cumberland"), not the common word a story's own title names ("Tree of Life").
REAL_NAME_ZIPF = 3.8
ROLE_SOURCES = 3  # posts that must mention a familiar name before it has a role of its own
# A single word English knows at all (a real place, person, people or thing: "Burslem",
# "Nebuchadnezzar", "Schiaparelli", "Malabar"; not a coinage: wordfreq has never seen "Weena"'s
# like this often) that one post names, with no role, is a name met in passing too. A story's
# own name it goes on using comes back when a later thread names it again (`restore_reason`).
KNOWN_ZIPF = 1.0


def passing_reason(view: CurateEntryView) -> str | None:
    """Why an entry is a familiar word or real-world name the story only mentions in passing,
    or None: rejected unless the story gives it a role (mentioned in `ROLE_SOURCES` posts, or a
    definition that says what it is in the story: a kind for one word, "Helium — a place"; a
    fact for a phrase of everyday words, whose kind the describer may only have guessed)."""
    if not 0 < view.source_count < ROLE_SOURCES:
        return None
    if view.term == view.term.lower():
        return _passing_compound(view)
    own = idea_form(normalize_term(view.term))
    lowered = view.term.casefold()
    singulars = {lowered[:-1], lowered[:-2], lowered[:-3] + "y"} if lowered.endswith("s") else set()
    other_names = [
        alias
        for alias in view.aliases
        if alias.casefold() not in singulars
        and (idea_form(normalize_term(alias)) != own or frequency(alias) < FAMILIAR_ZIPF)
    ]  # its own singular is no other name: "Potteries", "Pottery"
    if other_names or _fuller_name_in(view):  # "Hollis" of "Hollis Marr": the story's own
        return None  # (a familiar word's plural is no other name: "Spaniards", "Spaniard")
    words = [w for w in re.split(r"[\s-]+", view.term) if w and w.casefold() not in _SMALL_WORDS]
    if not words:
        return None
    if len(words) == 1:
        word = words[0]
        singular = word[:-1] if word.endswith("s") and len(word) > 4 else word
        zipf = max(frequency(word), frequency(singular))
        if zipf < (FAMILIAR_ZIPF if view.source_count > 1 else KNOWN_ZIPF):
            return None
    else:
        zipf = min(frequency(word) for word in words)
        if (
            view.source_count == 1
            and zipf >= TRUNCATED_ZIPF
            and _last_word(view.term) not in _BEINGS
            and not re.search(r"\b[A-Z]\.", view.term)
            and not _a_title_of(view.term)
            and not _has_role(view, kind_is_role=False)
            and not _holds_an_entry(view)
            and _mentions(view) < 2
        ):
            return (
                f"'{view.term}' is a name of words English knows (each of word frequency "
                f"{zipf:.1f} or more on the Zipf scale) that a single post names, holding no "
                "other entry's name: a real-world name or a phrase met in passing"
            )
        if zipf < FAMILIAR_PHRASE_ZIPF:
            return None
    if _has_role(view, kind_is_role=len(words) == 1):
        return None
    return (
        f"'{view.term}' is a familiar word or real-world name (word frequency {zipf:.1f} on the "
        f"Zipf scale) that the story mentions in passing ({view.source_count} post(s), no role)"
    )


# What a story's kinds of beings are named by ("Ocelot-man", "Wolf-women", "Beast Folk",
# "sloth-creature"): such a hyphenated name is the story's own however English its parts.
_BEINGS = frozenset((
    "man", "men", "woman", "women", "folk", "people", "beast", "beasts", "brute", "brutes",
    "creature", "creatures", "thing", "things",
))  # fmt: skip


def _last_word(term: str) -> str:
    words = re.split(r"[\s\-‐‑]+", normalize_term(term))
    return words[-1] if words else ""


def _a_title_of(term: str) -> bool:
    """Whether a name is a title "X of Y" whose X is an English word, as a story names its own
    ranks, places and things ("Tree of Life", "Chamber of Mystery", "Jed of Zodanga"); a surname
    of a place ("Lavelle of Java") is no such title, nor a title of one real place or person
    that English knows but rarely names ("Battle of Hastings", "Duke of Cumberland", "Land of
    the Leal": after "of" one word of Zipf `TRUNCATED_ZIPF` to `REAL_NAME_ZIPF`), where a
    story's own titles name a common word ("Life", "Mystery", "Pain") or a coinage."""
    head, of, rest = normalize_term(term).partition(" of ")
    rest_words = rest.removeprefix("the ").split()
    if len(rest_words) == 1 and TRUNCATED_ZIPF <= frequency(rest_words[0]) < REAL_NAME_ZIPF:
        return False
    return bool(of) and all(is_english_word(word) for word in head.split())


def _mentions(view: CurateEntryView) -> int:
    """How many times the evidence names the term: a name the story dwells on (twice around
    its one post) is no name met in passing."""
    return sum(len(find_term(text, view.term)) for text in view.evidence)


def _holds_an_entry(view: CurateEntryView) -> bool:
    """Whether the multiword term holds the name of another live entry among the similar ones
    ("Brother of Issus" holds "Issus"; "Prince of Life Eternal" holds "Life Eternal"): a name
    the story builds on its own, not one met in passing."""
    words = normalize_term(view.term).split()
    for other in view.similar:
        if other.status in ("rejected", "merged"):
            continue
        for name in other.names:
            key = normalize_term(name).split()
            if key and key != words and _contains_words(words, key):
                return True
    return False


def _contains_words(words: Sequence[str], part: Sequence[str]) -> bool:
    return any(list(words[i : i + len(part)]) == list(part) for i in range(len(words)))


def _a_title(view: CurateEntryView) -> bool:
    """Whether a one-word familiar term is a title or role the evidence writes after "the" at
    least as often as not ("the Provost", "the Doctor"): a word for someone, not a name."""
    if " " in view.term or frequency(view.term) < FAMILIAR_ZIPF:
        return False
    pattern = re.compile(rf"(?<![\w'’-])(the\s+)?{re.escape(view.term)}(?!\w)", re.I)
    found = [match for text in view.evidence for match in pattern.finditer(text)]
    return bool(found) and 2 * sum(bool(match.group(1)) for match in found) >= len(found)


def _ordinary(view: CurateEntryView) -> str | None:
    """Why the term is ordinary vocabulary, a people of a real place or a description, or None."""
    key = normalize_term(view.term)
    ordinary = ordinary_reason(view.term)
    if key in NOT_NAMES or (
        " " not in key and view.term == view.term.lower() and is_english_lowercase(key)
    ):
        ordinary = ordinary or f"'{view.term}' is an English word"
    if is_demonym_of_real_place(view.term):
        ordinary = ordinary or f"'{view.term}' names the people of a real place"
    if is_descriptive_compound(view.term):
        ordinary = ordinary or f"'{view.term}' is a description, not a name"
    words = [word for word in re.split(r"[\s\-‐‑]+", key) if word]
    if len(words) > 1 and words[-1] in _ABBREVIATIONS:
        ordinary = ordinary or f"'{view.term}' is a name cut short at an abbreviation"
    if all(word in _NUMBER_WORDS for word in words):
        ordinary = ordinary or f"'{view.term}' is a number, not a name"
    short = all(len(word) <= 4 for word in words)
    if "-" in view.term and short and len(set(words)) < len(words):
        ordinary = ordinary or f"'{view.term}' is a sound, not a name"  # "Yo-ho-ho", "tut-tut"
    toward = re.fullmatch(r"([a-z]{3,})wards?", key)
    if toward and frequency(toward.group(1)) >= TRUNCATED_ZIPF:
        ordinary = ordinary or f"'{view.term}' is a direction ('toward {toward.group(1)}')"
    spoken = spoken_word_of(view.term)
    if spoken and _only_in_speech(view):
        ordinary = ordinary or f"'{view.term}' is the English word '{spoken}' spelled as spoken"
    return ordinary


# Abbreviations that open a name and never end one: "Vestry of St" is "Vestry of St. Pancras"
# cut at its period.
_ABBREVIATIONS = frozenset(("st", "mt", "mr", "mrs", "dr", "ft", "rev", "capt", "col", "gen"))
_NUMBER_WORDS = frozenset((
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
    "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety", "hundred",
    "thousand", "million", "and",
))  # fmt: skip


def _only_in_speech(view: CurateEntryView) -> bool:
    """Whether the evidence writes the term at least once and never outside quoted speech
    where it shows the quotation marks: after a closing mark, or before an opening one (a
    window of a long speech may show none)."""
    found = False
    for text in view.evidence:
        for start, end in find_term(text, view.term):
            before = list(_QUOTE_MARK.finditer(text, 0, start))
            after = _QUOTE_MARK.search(text, end)
            if before and not _opens(text, before[-1].start()):
                return False
            if not before and after is not None and _opens(text, after.start()):
                return False
            found = True
    return found


_QUOTE_MARK = re.compile(r"[\"“”]")


def _opens(text: str, position: int) -> bool:
    """Whether the quotation mark at `position` opens a quote: “, or a straight one that no
    word or punctuation stands right before."""
    mark = text[position]
    if mark != '"':
        return mark == "“"
    return position == 0 or text[position - 1].isspace() or text[position - 1] in "([—-"


def _passing_compound(view: CurateEntryView) -> str | None:
    """Why a lowercase compound of words English knows ("cabin-boy", "stern-port", "hind-leg")
    that fewer than `ROLE_SOURCES` posts name, with nothing said of it, is an everyday thing met
    in passing, or None (a part English does not know, "thoat-rider", or a kind or fact in its
    definition keeps it; a compound the story goes on using comes back by `restore_reason`)."""
    parts = [part for part in re.split(r"[-‐‑\s]+", view.term) if part]
    if len(parts) < 2 or "-" not in view.term:
        return None
    zipf = min(frequency(part) for part in parts)
    if (zipf < KNOWN_ZIPF and view.source_count > 1) or _has_role(view, kind_is_role=True):
        return None  # named once, a part English does not know is no role: "affy-davy"
    return (
        f"'{view.term}' is a compound of English words (each of word frequency {zipf:.1f} or more"
        f" on the Zipf scale) that the story mentions in passing ({view.source_count} post(s),"
        " no role)"
    )


# A part this frequent in English is an everyday word (about the 15,000 most frequent: "log",
# "house", "jolly", "boat", "sea", "cook"); a story's own compounds hold a rarer word ("tithe",
# "ember", "ledger") or one English does not know ("thoat").
EVERYDAY_ZIPF = 3.5


def everyday_reason(view: CurateEntryView) -> str | None:
    """Why a lowercase hyphenated compound of everyday words ("log-house", "jolly-boat",
    "round-shot", "sea-cook") with nothing said of it in the story, however many posts name
    it, is an everyday compound, or None. Its definition must hold a fact or a lead of its own
    to keep it (a kind alone is the describer's guess from a cue word); a thing named by what it
    does ("fighting-machine") is the story's own."""
    if view.term != view.term.lower():
        return None
    if " " in view.term.strip():
        return _phrase_reason(view)
    if view.term.isalpha():
        return _rare_word_reason(view)
    parts = [part for part in re.split(r"[-‐‑]+", view.term) if part]
    if len(parts) < 2 or parts[0].endswith("ing"):
        return None
    zipf = min(frequency(part) for part in parts)
    what = "a compound of everyday English words (each of word frequency {zipf:.1f} or more"
    return _english_reason(view, zipf, EVERYDAY_ZIPF, what)


def _english_reason(view: CurateEntryView, zipf: float, floor: float, what: str) -> str | None:
    """Why an entry of English words (`what`, formatted with their `zipf`) is no term: its
    words at least `floor` on the Zipf scale, and nothing said of it; or None."""
    if zipf < floor or _has_role(view, kind_is_role=False):
        return None
    return (
        f"'{view.term}' is {what.format(zipf=zipf)} on the Zipf scale) with nothing said of it "
        "in the story"
    )


def _rare_word_reason(view: CurateEntryView) -> str | None:
    """Why a lowercase word English knows, however rarely ("coracle", "hawser"; each of Zipf
    `TRUNCATED_ZIPF` or more), with nothing said of it in the story, is an English word, or
    None: a story's own words are unknown to English ("thoat", "banth") or said what they are;
    an inflection may be a coinage's ("wending")."""
    if view.term.endswith(("ing", "ed")):
        return None
    what = "an English word (word frequency {zipf:.1f}"
    return _english_reason(view, frequency(view.term), TRUNCATED_ZIPF, what)


def _phrase_reason(view: CurateEntryView) -> str | None:
    """Why a lowercase phrase of familiar English words ("simpler way", "boilers on stilts",
    "gentleman of fortune", "true sea-dog") with nothing said of it is a phrase of the prose,
    not a name, or None: each word at least `ENGLISH_ZIPF`; a coined phrase holds a rarer word
    ("lightless debt"), and a kind of being ("plant men") is the story's own."""
    words = [w for w in re.split(r"[\s\-‐‑]+", view.term) if w and w not in _SMALL_WORDS]
    if len(words) < 2 or _last_word(view.term) in _BEINGS:
        return None
    zipf = min(frequency(word) for word in words)
    what = "a phrase of familiar English words (each of word frequency {zipf:.1f} or more"
    return _english_reason(view, zipf, ENGLISH_ZIPF, what)


def word_reason(view: CurateEntryView) -> str | None:
    """Why a capitalised one-word entry is a word, not a name, by how the evidence writes it:
    never capitalised mid-sentence, and written in lowercase too, or an English word opening
    several sentences ("Sak!" beside "sak", "Evidently" twice), or None."""
    term = view.term
    if " " in term or term == term.lower() or not view.evidence:
        return None
    lowered = term.casefold()
    starts = mid = lower = 0
    for text in view.evidence:
        for match in re.finditer(rf"(?<![\w'’-]){re.escape(lowered)}(?![\w'’-])", text, re.I):
            word = match.group(0)
            if word == word.lower():
                lower += 1
            elif _opens_sentence(text, match.start()):
                starts += 1
            else:
                mid += 1
    if mid or not (starts or lower):
        return None
    if lower or (starts >= 2 and is_english_word(term)):
        return (
            f"'{term}' is capitalised only where a sentence opens ({starts} time(s)) and "
            f"written in lowercase {lower} time(s) in the evidence: a word, not a name"
        )
    return None


def _opens_sentence(text: str, position: int) -> bool:
    before = text[:position].rstrip(" *_(")
    if before.endswith(('"', "“", "‘")):  # quoted speech opens a sentence
        return True
    return not before or before[-1] in ".!?:;\n—–-"


_SMALL_WORDS = frozenset({"of", "the", "a", "an", "and", "in", "on", "at", "to", "de", "la"})


def _fuller_name_in(view: CurateEntryView) -> bool:
    """Whether the evidence writes the one-word term as the first word of a longer name
    ("Hollis Marr"), as a story names its people (not "Shetland pony", "Colt revolvers")."""
    pattern = re.compile(rf"(?<![\w'’-]){re.escape(view.term)} ([A-Z][a-z]+)")
    for text in view.evidence:
        for match in pattern.finditer(text):
            if match.group(1).casefold() not in STARTERS:
                return True
    return False


def _has_role(view: CurateEntryView, *, kind_is_role: bool) -> bool:
    """Whether the definition says what the story makes of the entry: a fact, or (when
    `kind_is_role`) at least what kind of thing it is in the story ("Helium — a place")."""
    if not view.definition.strip():
        return False
    parsed = parse_definition(view.term, view.definition)
    leads = UNKNOWN_LEADS if kind_is_role else UNKNOWN_LEADS | set(KIND_LEADS.values())
    facts = [
        fact
        for fact in parsed.facts
        if not fact.startswith(COMPANY)
        and len([w for w in re.findall(r"[a-z]+", fact.casefold()) if w not in _SMALL_WORDS]) > 1
    ]  # a fact of one word is a fragment a pattern caught ("the _hands_"), nothing said
    return bool(facts) or (parsed.lead not in leads and not _restates(parsed.lead, view.term))


def _restates(lead: str, term: str) -> bool:
    """Whether a lead only says a word of the name again ("A admiral" of "Admiral Hawke", "A
    professor" of "Professor Howes"): the name's own title, nothing the story says of it."""
    said = {word for word in re.findall(r"[a-z]+", lead.casefold()) if word not in _SMALL_WORDS}
    return bool(said) and said <= set(re.findall(r"[a-z]+", term.casefold()))


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
    view: CurateEntryView, reviewed: Mapping[int, CurateEntryView], merged_away: set[int]
) -> tuple[KnownEntry | None, str]:
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
        and entry_id not in merged_away
        and other.status not in ("rejected", "merged")
    ]
    for other in older:
        if mine & {normalize_term(name) for name in other.names}:
            return other, "names the same thing as"
    owner, how = name_owner(view.term, older)
    if owner is not None:
        return owner, how
    shorter = _named_by_a_word(view, older)
    if shorter is not None:
        return shorter, "is the fuller name of"
    overlapping = _overlapping_name(view, older, list(others.values()))
    if overlapping is not None:
        return overlapping, "runs on into one name with"
    return None, ""


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
                    if shared in _SMALL_WORDS or second[0] != shared:
                        continue
                    if " ".join([*first, *second[1:]]) in third:
                        return other
    return None


def _named_by_a_word(view: CurateEntryView, older: Sequence[KnownEntry]) -> KnownEntry | None:
    """For a multiword name (`Tobiah Leck`), the older one-word entry that is its first or last
    word (`Tobiah`): the same referent, first met by part of its name."""
    keys = [normalize_term(name) for name in view.names]
    for key in keys:
        if not person_like(key):
            continue
        ends = {key.split()[0], key.split()[-1]} - STARTERS
        for other in older:
            if any(normalize_term(n) in ends for n in other.names):
                return other
    return None


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
