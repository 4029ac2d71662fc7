"""English given names and their familiar forms: "Harry" of "Henry", "Lizzy" of "Elizabeth",
"Toby" of "Tobiah". A fact of the language, not of a story: the offline backend merges by it
(`backends.name_forms`) and the curator shows such names side by side (`curation.curator`).
"""

from __future__ import annotations

_PET_ENDINGS = ("ie", "ey", "y", "i")


# Familiar forms of English given names that do not open with the name's stem ("Harry" of
# "Henry", "Bill" of "William", "Polly" of "Mary"; none that is an everyday word: "Will",
# "Pat"); a stem's pet form ("Toby" of "Tobiah", "Tommy" of "Thomas") needs no list.
_FAMILIAR_TEXT = """
        harry:henry hal:henry bill:william billy:william willy:william
        bob:robert bobby:robert robin:robert dick:richard dickon:richard
        rick:richard jack:john johnny:john jock:john ned:edward/edmund ted:edward/theodore
        teddy:edward/theodore eddie:edward tom:thomas tommy:thomas jim:james jimmy:james
        jem:james jamie:james joe:joseph ben:benjamin sam:samuel nat:nathaniel nick:nicholas
        tony:anthony kit:christopher chris:christopher dan:daniel dave:david davy:david
        fred:frederick freddy:frederick larry:lawrence matt:matthew mike:michael
        pete:peter phil:philip steve:stephen walt:walter
        bess:elizabeth bessie:elizabeth beth:elizabeth betsy:elizabeth betty:elizabeth
        eliza:elizabeth lizzie:elizabeth lizzy:elizabeth liz:elizabeth
        kate:catherine/katherine kitty:catherine/katherine katie:catherine/katherine
        peggy:margaret meg:margaret maggie:margaret madge:margaret polly:mary molly:mary
        mamie:mary nell:ellen/eleanor/helen nelly:ellen/eleanor/helen nellie:ellen/eleanor/helen
        sally:sarah patty:martha jenny:jane/jennifer nancy:anne/ann annie:anne/ann
        fanny:frances sukey:susan susie:susan dolly:dorothy
        """
_FAMILIAR: dict[str, frozenset[str]] = {
    familiar: frozenset(formal.split("/"))
    for familiar, formal in (pair.split(":") for pair in _FAMILIAR_TEXT.split())
}


def familiar_pair(one: str, other: str) -> bool:
    """Are two one-word given names one person's, the one a familiar or pet form of the other
    ("harry" and "henry", "toby" and "tobiah"), in either order?"""
    return pet_name(one, other) or pet_name(other, one)


def pet_name(key: str, name: str) -> bool:
    """Is the one word `key` a pet form of the one word `name` (`toby` of `tobiah`, `ottie` of
    `ottoline`): its stem, without a pet ending, opens the longer name; or a familiar form the
    name's stem does not open (`harry` of `henry`, `_FAMILIAR`)."""
    if " " in key or " " in name or key == name or len(key) < 3:
        return False
    if name in _FAMILIAR.get(key, frozenset()):
        return True
    for ending in _PET_ENDINGS:
        stem = key[: -len(ending)]
        if key.endswith(ending) and len(stem) >= 3 and len(name) >= len(stem) + 2:
            return name.startswith(stem) and not name.startswith(key)
    return False


def familiar_forms(word: str) -> frozenset[str]:
    """The given names the one casefolded word is listed with, either way ("lizzy": {"elizabeth"};
    "elizabeth": {"bess", "eliza", "lizzy", ...}); pet forms of a stem are not listed."""
    formal = _FAMILIAR.get(word, frozenset())
    return formal | frozenset(f for f, names in _FAMILIAR.items() if word in names)


#: Every given name the familiar forms list, either side ("harry", "henry", "elizabeth").
LISTED_NAMES: frozenset[str] = frozenset(_FAMILIAR).union(*_FAMILIAR.values())
