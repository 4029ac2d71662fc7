"""What the sentences that mention a name say of it: a `Portrait` (its lead, facts, company) and
its kind.

Kinds (`character`, `place`, `faction`, `creature`, `item`, `title`, `custom`) come from the
name's shape (`shape_kind`) and from context cues scored over the mentions ("Captain X", "X
says", "the river X", "the X clan", "a swarm of X", "carries a X", "we hold X"). Everything here
is a function of its arguments: the same text always gives the same portrait and kind;
`backends.describe` composes and grows definitions from it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from terrarium_dagster.store.normalize import normalize_term
from terrarium_dagster.terms.english import HONORIFICS
from terrarium_dagster.terms.text_search import clean_sentence, sentence_spans, term_pattern


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


FACT_CHARS = 72
FACT_WORDS = 12
KINDS: tuple[str, ...] = ("character", "place", "faction", "creature", "item", "title", "custom")
_LEADING = frozenset({"the", "every", "each", "a", "an"})


TITLE_WORDS = frozenset(
    {
        *HONORIFICS,
        "provost",
        "warden",
        "sergeant",
        "lieutenant",
        "doctor",
        "uncle",
        "aunt",
        "grandpa",
        "grandma",
        "granny",
        "sheriff",
        "chief",
        "abbot",
        "abbess",
        "bishop",
        "priest",
        "priestess",
        "magistrate",
        "marshal",
        "steward",
        "chancellor",
        "admiral",
        "squire",
        "mister",
        "miss",
        "madame",
        "monsieur",
        "professor",
        "colonel",
    }
) - {"old", "young", "little", "big", "mad", "black", "red", "white", "grey", "high", "grand"}
PLACE_WORDS = _set(
    "stair stairs fen fens chapel vault gate gates road street city river lake hall tower court "
    "market bridge square mere marsh harbor harbour isle island wood woods hill hills sea keep "
    "quarter row lane well mill shore bay cove pass valley plain plains desert forest temple "
    "palace castle fort port town village district ward mountain mountains peak hold reach "
    "spire march deep park"
)
# A one-word name ending like a place name ("Orrowmere", "Ryrnhold").
_PLACE_ENDINGS = (
    "hold",
    "mere",
    "spire",
    "gate",
    "reach",
    "deep",
    "fen",
    "haven",
    "ford",
    "burgh",
    "dale",
    "vale",
    "moor",
)
_FACTION_WORDS = _set(
    "choir sodality order guild company watch council brotherhood sisterhood circle cult clan "
    "tribe league host compact covenant lodge wardens house family band crew legion church "
    "people folk"
)
_CREATURE_WORDS = _set(
    "hound hounds dog dogs wolf wolves cat moth moths fly flies bird birds hawk crow raven fish "
    "eel worm worms snake serpent drake dragon beast beasts horse mare stag bear rat rats mouse "
    "spider beetle bat bats toad frog owl boar hare fox lizard wyrm crab shark whale bee wasp "
    "leech creature creatures monster monsters animal animals spirit spirits ling lings"
)
_ITEM_WORDS = _set(
    "knife blade sword jar jars lantern lamp glass ledger book tome blade ring bell key candle "
    "coin cloak staff wand shield stone crown mask rope bottle cup chalice amulet charm box "
    "chest scroll map banner drum horn flute pipe wick shears"
)
_ROLE_SUFFIXES = (
    "warden",
    "wardens",
    "priest",
    "priests",
    "keeper",
    "keepers",
    "smith",
    "wright",
    "master",
    "knight",
    "guard",
    "reeve",
    "monger",
)
_CUSTOM_WORDS = _set(
    "festival feast rite ritual custom ceremony tithe tradition holiday vigil wake"
)
# Verbs that say what someone or something is (a trait, a role), not what they just did.
_ROLE_VERBS = _set(
    "commands keeps leads rules guards serves runs owns lives meets meet belongs belong reports "
    "works teaches tends protects hunts hunt feeds feed dwells dwell guides governs carries "
    "carry wears wear holds hold speaks speak bears bear watches watch answers obeys obey "
    "collects collect trains train sells sell makes make means"
)
_SPEECH = "says|said|asks|asked|replies|replied|whispers|whispered|shouts|shouted|tells|told"
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself)\b", re.IGNORECASE)
_DETERMINER = r"(?:a|an|the|one of|part of|kind of|what|where|who)"
_COPULA = re.compile(
    rf"^\s+(?:is|was|are|were)\s+(?!not\b)({_DETERMINER}\b[^.;:!?…—–\"“”()]*)", re.IGNORECASE
)
_APPOSITIVE = re.compile(
    r"^\s*,\s+((?:a|an|the|his|her|their|its|our|my)\s[^,;:.!?…\"“”()]{2,80}?|[a-z]+ of "
    r"[^,;:.!?…\"“”()]{2,60}?)\s*(?:[,;:.!?…—]|$)"
)
# A mention inside a clause set off by commas that opens with a preposition or an article
# ("I observed far off, in the direction of Banstead, a vast green structure"; "the northward
# blackness, the salt Dead Sea, the stony beach"): what follows its comma belongs to the
# sentence or the series, not to the name.
_INSET_CLAUSE = re.compile(
    r"[,;]\s*(?:in|at|on|to|towards?|from|into|across|beyond|near|by|with|through|over|under|"
    r"the|a|an)\s+[^,;:]*$",
    re.IGNORECASE,
)
_RELATIVE = re.compile(r"^\s*,\s+(?:who|which)\s+([a-z][^,;:.!?…\"“”()]{3,80}?)\s*(?:[,;:.!?…]|$)")
_APPOSITIVE_BEFORE = re.compile(
    r"(?:^|[,;:]\s*)((?:the|a|an|his|her|their|our|your)\s+[a-z][a-z' -]{2,48}?),\s*$"
)
_KIND_NOUN_BEFORE = re.compile(r"\b(?:the|a|an)\s+([a-z]+)\s+$")
_KIND_NOUN_AFTER = re.compile(r"^\s+([a-z]+)\b")
_TITLE_BEFORE = re.compile(r"\b([A-Z][a-z]+)\s+$")
_OF_AFTER = re.compile(r"^\s+of\s+((?:the\s+)?[A-Z][\w'’-]+(?:\s+(?:of\s+)?[A-Z][\w'’-]+){0,3})")
_SUBJECT_VERB = re.compile(
    r"^(?:['’]s)?\s+(?:(?:always|still|often|never)\s+)?([a-z]+)\b([^,;:.!?…\"“”()]{0,90})"
)
_NAMED_BY = re.compile(
    r"(?:^|.*[\s,;:])((?:the|my|our|his|her|their)\s+[\w'’ -]{1,40}?)\s+(?:still\s+)?"
    r"(?:call|calls|called|name|names)\s+(?:it\s+|him\s+|her\s+|them\s+)?(?:the\s+)?$",
    re.IGNORECASE,
)
_PERSON_VERBS = (
    "says|said|answers|wants|knows|speaks|smiles|nods|laughs|sighs|frowns|shrugs|asks|tells|"
    "thinks|whispers|shouts|grins|winces|swears"
)
_PERSON_AFTER = re.compile(rf"^\s+(?:{_PERSON_VERBS})\b|^\s*,\s+who\b")
_STATE = re.compile(
    r"^\s+(?:is|are)\s+(?!not\b)((?:always|never|often|still)\s+)?([a-z][^,;:.!?…\"“”()]{2,60})"
)
_PARTICIPLES = frozenset(
    ["drawn", "known", "made", "built", "sworn", "bound", "born", "kept", "held", "worn", "given"]
)
_PREPOSITIONS = frozenset(["to", "by", "with", "from", "of", "for", "in", "on"])
_NOT_TRAITS = _set(
    "tonight today now away off here there gone back ready open closed full empty waiting "
    "coming going done over late early sure right wrong"
)
_THING_NAMED = re.compile(
    r"(?:^|[,;:]\s*)((?:the|a|an)\s+[a-z][a-z' -]{2,48}?),\s+(?:the one\s+)?(?:that\s+|which\s+)?"
    r"[\w' -]*?\b(?:call|calls|called|name|names)\s+(?:it\s+|him\s+|her\s+)?(?:the\s+)?$"
)


def _words_before(words: str, then: str = r"(?:the\s+)?") -> re.Pattern[str]:
    """What comes just before a name: one of `words` (`|`-separated), white space, then `then`
    (by default an optional "the"); any case."""
    return re.compile(rf"\b(?:{words})\s+{then}$", re.IGNORECASE)


_YOU_ARE = _words_before("you are|you're", then="")
_SPEECH_AFTER = re.compile(rf"^[,\"”]?\s*(?:{_SPEECH})\b", re.IGNORECASE)
_SPEECH_BEFORE = _words_before(_SPEECH, then="")
_PLACE_BEFORE = _words_before(
    "in|into|through|across|from|near|around|beneath|inside|outside|toward|towards"
)
_CREATURE_BEFORE = _words_before("swarm|pack|herd|flock|brood|nest", then=r"of\s+(?:the\s+)?")
_ITEM_BEFORE = _words_before(
    "carry|carries|carried|hold|holds|held|wield|wields|drop|dropped|open|opens|opened|"
    "lift|lifts|raise|raises|grip|grips",
    then=r"(?:a|an|the|his|her|their|your|my)\s+",
)
_CUSTOM_BEFORE = _words_before(
    "hold|holds|held|celebrate|celebrates|observe|observes|night of|day of|eve of"
)
_MEMBER_BEFORE = re.compile(
    r"\b(?:members?|one|agents?|servants?|followers?|leaders?|head) of (?:the\s+)?$", re.IGNORECASE
)
_TITLE_OF = re.compile(r"^\s+of\s+(?:the\s+)?[A-Z]")


@dataclass(slots=True)
class Portrait:
    """What the mentions of one name say: leads (noun phrases), facts and kind cue scores."""

    leads: list[str] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)
    company: list[str] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)

    @property
    def kind(self) -> str | None:
        if not self.kinds:
            return None
        best = max(KINDS, key=lambda kind: (self.kinds[kind], -KINDS.index(kind)))
        return best if self.kinds[best] >= 2 else None


def casefolded_words(text: str) -> list[str]:
    return re.findall(r"[\w'’]+", text.casefold())


def _phrase(text: str) -> str | None:
    """A clause fit for a definition: short, not about the reader, not a fragment."""
    text = " ".join(text.split()).strip(" ,;:-–—'\"")
    text = re.sub(r"(?:\s+(?:and|but|or|while|as|then|so|who|which|that))+$", "", text)
    words = text.split()
    if len(words) < 2 or len(words) > FACT_WORDS or len(text) > FACT_CHARS:
        return None
    if _SECOND_PERSON.search(text) or "[[" in text or "]]" in text:
        return None
    return text


def _kind_of_word(word: str) -> str | None:
    word = word.casefold()
    if word in PLACE_WORDS:
        return "place"
    if word in _FACTION_WORDS:
        return "faction"
    if word in _CREATURE_WORDS:
        return "creature"
    if word in _ITEM_WORDS:
        return "item"
    if word in _CUSTOM_WORDS:
        return "custom"
    return None


def names_a_place(word: str) -> bool:
    """Is `word` a word for a place or a body of people ("temple", "court", "order")?"""
    return _kind_of_word(word) in ("place", "faction")


def names_a_kind(word: str) -> bool:
    """Is `word` a word for a kind of thing a story names ("lodge", "temple", "box", "wolf")?"""
    return _kind_of_word(word) is not None


def shape_kind(term: str) -> str | None:
    """A kind from the shape of the name alone, when it says it: a title before a name is a
    character ("Captain Ismay Rook"), a place word ends a place ("Cinder Stair"), a body of
    people names a faction ("Quiet Choir"), a creature, object or role word ends a lowercase
    coinage ("gloamhound", "wickknife", "draw-priest")."""
    words = [word.casefold() for word in re.split(r"[\s\-]+", term) if word]
    if not words:
        return None
    capitalised = term[:1].isupper()
    if len(words) >= 2 and capitalised:
        if words[0] in TITLE_WORDS:
            return "character"
        if words[-1] in PLACE_WORDS:
            return "place"
        if any(word in _FACTION_WORDS for word in words):
            return "faction"
        if words[-1] in _ITEM_WORDS:
            return "item"
        return None
    if capitalised:
        single = words[0]
        if any(single.endswith(s) and len(single) > len(s) + 2 for s in _PLACE_ENDINGS):
            return "place"
        return None
    last = "".join(words)  # "draw-priest" ends in "priest" as "gloamhound" ends in "hound"
    for suffix, kind in (
        *((s, "title") for s in _ROLE_SUFFIXES),
        *((s, "creature") for s in ("hound", "hounds", "moth", "moths", "wolf", "drake", "wyrm")),
        *((s, "item") for s in ("knife", "jar", "jars", "glass", "ledger", "blade", "lamp")),
    ):
        if last.endswith(suffix) and last != suffix:
            return kind
    if len(words) >= 2 and _kind_of_word(words[-1]) in ("creature", "item"):
        return _kind_of_word(words[-1])
    return None


def _sentences(text: str, pattern: re.Pattern[str]) -> Iterable[str]:
    for start, end in sentence_spans(text):
        sentence = clean_sentence(text[start:end])
        if sentence and pattern.search(sentence):
            yield sentence


def with_article(noun: str) -> str:
    """`noun` after "a" or "an" as English says it: "an aunt", "an uncle", "an heir", "a king",
    "a unicorn"."""
    lowered = noun.casefold()
    vowel = lowered[:1] in "aeiou" and not lowered.startswith(("uni", "use", "usu", "eu", "one"))
    silent_h = lowered.startswith(("hour", "honou", "honest", "heir"))
    return f"{'an' if vowel or silent_h else 'a'} {noun}"


def portrait(
    names: Sequence[str], posts: Sequence[tuple[int, str]], company: Sequence[str] = ()
) -> Portrait:
    """What the sentences of `posts` that mention one of `names` say about it. `company`: names
    of other entries (or candidates); those met in the same sentences become its company."""
    found = Portrait()
    own = {normalize_term(name) for name in names}
    others = [name for name in company if normalize_term(name) not in own]
    term = names[0]
    kind = shape_kind(term)
    if kind:
        found.kinds[kind] += 3
    words = term.split()
    if len(words) >= 2 and words[0].casefold() in TITLE_WORDS and term[:1].isupper():
        found.leads.append(with_article(words[0].casefold()))
    for name in names:
        pattern = term_pattern(name)
        if pattern is None:
            continue
        for _post_id, text in posts:
            for sentence in _sentences(text, pattern):
                for match in pattern.finditer(sentence):
                    _read(found, sentence, match.start(), match.end())
                for other in others:
                    other_pattern = term_pattern(other)
                    if (
                        other_pattern is not None
                        and other not in found.company
                        and other_pattern.search(sentence)
                    ):
                        found.company.append(other)
    found.leads = [
        lead
        for lead in dict.fromkeys(found.leads)
        if not re.search(r"\b(?:him|her|them|it|me|us)$", lead)
    ]
    found.facts = [
        fact
        for fact in dict.fromkeys(found.facts)
        # a fact that is part of one of its own names says nothing ("of Afghanistan" of "Amir
        # of Afghanistan"); each name alone, never their set joined in hash order, where a fact
        # could run across two of them ("of afghanistan a" in "amir of afghanistan amir")
        if fact not in found.leads and not any(normalize_term(fact) in name for name in own)
    ]
    return found


def _read(found: Portrait, sentence: str, start: int, end: int) -> None:
    """The cues around one mention at sentence[start:end]."""
    before, after = sentence[:start], sentence[end:]
    lead_in = before.strip(" \"'“‘(*")
    at_start = (
        not lead_in
        or lead_in.casefold() in _LEADING
        or (lead_in[:1].isupper() and lead_in.casefold() in TITLE_WORDS)
    )
    if (match := _COPULA.match(after)) and at_start:
        lead = _phrase(match.group(1).split(",")[0])
        if lead:
            found.leads.append(lead)
            kind = _kind_of_word(casefolded_words(lead)[-1]) if casefolded_words(lead) else None
            if kind:
                found.kinds[kind] += 2
    if (match := _APPOSITIVE.match(after)) and not _INSET_CLAUSE.search(before):
        lead = _phrase(match.group(1))
        if lead:
            found.leads.append(lead)
    if match := _RELATIVE.match(after):
        fact = _phrase(match.group(1))
        if fact:
            found.facts.append(fact)
    if (match := _APPOSITIVE_BEFORE.search(before)) and not after.strip(" ,.;:!?\"”'’)"):
        lead = _phrase(match.group(1))
        if lead:
            found.leads.append(lead)
    if match := _KIND_NOUN_BEFORE.search(before):
        kind = _kind_of_word(match.group(1))
        if kind and kind != "item":
            found.kinds[kind] += 2
            found.leads.append(with_article(match.group(1)))
    if match := _KIND_NOUN_AFTER.match(after):
        kind = _kind_of_word(match.group(1))
        if kind in ("faction", "place"):
            found.kinds[kind] += 2
    if (match := _TITLE_BEFORE.search(before)) and match.group(1).casefold() in TITLE_WORDS:
        found.kinds["character"] += 2
        found.leads.append(with_article(match.group(1).casefold()))
    if match := _OF_AFTER.match(after):
        fact = _phrase(f"of {match.group(1)}")
        if fact and sentence[start:end][:1].isupper():
            found.facts.append(fact)
    if at_start and (match := _SUBJECT_VERB.match(after)):
        verb, rest = match.group(1), match.group(2)
        if verb in _ROLE_VERBS:
            fact = _phrase(f"{verb}{rest}")
            if fact:
                found.facts.append(fact)
    if match := _THING_NAMED.search(before):
        lead = _phrase(match.group(1))
        if lead:
            found.leads.append(lead)
    if match := _NAMED_BY.search(before):
        subject = _phrase(match.group(1))
        if subject and len(subject.split()) <= 4 and "'" not in subject:
            subject = subject[:1].lower() + subject[1:]
            found.facts.append(f"so named by {subject}")
    if _YOU_ARE.search(before):
        found.leads.append("the protagonist")
        found.kinds["character"] += 3
    capitalised = sentence[start:end][:1].isupper()
    if capitalised and (_SPEECH_AFTER.match(after) or _SPEECH_BEFORE.search(before)):
        found.kinds["character"] += 2
    if capitalised and _PERSON_AFTER.match(after):
        found.kinds["character"] += 1
    if at_start and (match := _STATE.match(after)) and not _COPULA.match(after):
        fact = _phrase(f"{match.group(1) or ''}{match.group(2)}")
        first, *rest = (fact or "x").split()
        trait = bool(match.group(1)) or (
            (first.endswith("ed") or first in _PARTICIPLES)
            and rest[:1] != []
            and rest[0] in _PREPOSITIONS
        )
        if fact and trait and not set(casefolded_words(fact)) & _NOT_TRAITS:
            found.facts.append(fact)
    if _PLACE_BEFORE.search(before) and sentence[start:end][:1].isupper():
        found.kinds["place"] += 1
    if _CREATURE_BEFORE.search(before):
        found.kinds["creature"] += 2
    if _ITEM_BEFORE.search(before):
        found.kinds["item"] += 1
    if _CUSTOM_BEFORE.search(before):
        found.kinds["custom"] += 2
    if _MEMBER_BEFORE.search(before):
        found.kinds["faction"] += 2
    if sentence[start:end][:1].islower() and _TITLE_OF.match(after):
        found.kinds["title"] += 1
