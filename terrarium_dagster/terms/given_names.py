"""English given names: their familiar forms ("Harry" of "Henry", "Lizzy" of "Elizabeth",
"Toby" of "Tobiah") and women's given names (a title tells whose full name a surname is). A fact
of the language, not of a story: the offline backend merges by it (`backends.name_forms`) and the
curator shows such names side by side (`curation.curator`).
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
    if key in _FAMILIAR and not given_name(name):
        return False  # a listed familiar form opens no surname: "Harry" is not "Harris"
    for ending in _PET_ENDINGS:
        stem = key[: -len(ending)]
        if key.endswith(ending) and len(stem) >= 3 and len(name) >= len(stem) + 2:
            return name.startswith(stem) and not name.startswith(key)
    return False


# The other way round: a given name's familiar forms ("elizabeth": "bess", "eliza", ...).
_FAMILIAR_FORMS: dict[str, frozenset[str]] = {
    formal: frozenset(f for f, names in _FAMILIAR.items() if formal in names)
    for formal in frozenset().union(*_FAMILIAR.values())
}


def familiar_forms(word: str) -> frozenset[str]:
    """The given names the one casefolded word is listed with, either way ("lizzy": {"elizabeth"};
    "elizabeth": {"bess", "eliza", "lizzy", ...}); pet forms of a stem are not listed."""
    return _FAMILIAR.get(word, frozenset()) | _FAMILIAR_FORMS.get(word, frozenset())


# Women's given names of the English novel (with their familiar forms), so that a title tells
# whose full name a surname belongs to: "Mrs. Lyons" is "Laura Lyons", "Mr. Bennet" is not
# "Elizabeth Bennet". A name missing here only leaves two entries apart.
_WOMEN_NAMES_TEXT = """
    ada adela adelaide agatha agnes alice alicia amelia amy anna anne annie arabella augusta
    barbara beatrice beatrix bella bertha bess bessie beth betsy betty beryl blanche bridget
    caroline catherine cecilia cecily charlotte clara clarissa constance cora cordelia daisy
    diana dinah dolly dora dorothea dorothy edith eleanor elinor eliza elizabeth ella ellen
    elsie emily emma esther ethel eugenie eva evelyn fanny flora florence frances georgiana
    georgina gertrude grace gwendolen hannah harriet harriett hatty helen helena henrietta
    hester hetty honoria ida irene isabel isabella jane janet jean jemima jenny jessie joan
    josephine judith julia juliet kate katharine katherine kathleen kitty laura lavinia letitia
    lettice lilian lily lizzie lizzy lois lottie louisa louise lucy lydia mabel madeline maggie
    margaret margery maria marian marianne marie martha mary matilda maud maude may meg mercy
    mildred millie minnie miriam molly nan nancy nell nellie nelly nora norah olivia patience
    pauline peggy penelope phoebe polly priscilla prudence rachel rebecca rhoda rosa rosalind
    rose rosamond ruth sally sarah selina sophia sophie susan susanna susannah sybil tabitha
    theresa violet wendy winifred
"""
WOMEN_NAMES: frozenset[str] = frozenset(_WOMEN_NAMES_TEXT.split())


def given_name(word: str) -> bool:
    """Whether the casefolded word is a given name these lists know: a woman's, or one of the
    familiar forms' either side ("harry", "henry", "elizabeth")."""
    return word in _FAMILIAR or word in _FAMILIAR_FORMS or word in WOMEN_NAMES


def a_mans_given_name(word: str) -> bool:
    """Whether the casefolded word is a man's given name the lists know: a familiar form or a
    name of one, none of whose names is a woman's ("joe", "joseph", "harry"; not "sukey")."""
    if not given_name(word) or word in WOMEN_NAMES:
        return False
    return not WOMEN_NAMES.intersection(familiar_forms(word))
