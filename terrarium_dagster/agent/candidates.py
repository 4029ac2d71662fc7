"""Candidate glossary terms in story text: the words a reader would look up.

A deterministic detector, used by the offline backend to annotate without a model and, beside a real
model, to list "terms mentioned in this scene that have no entry yet". It proposes:

- capitalised names and multiword names (`Varen`, `Lantern Court`, `Order of the Ember`) that are
  not merely capitalised because they open a sentence; a sentence-initial word counts when it is
  also seen mid-sentence, has an internal apostrophe (`Keth'ra`), or is not a common English word
  and recurs;
- titles introduced by "the" (`the Lantern Court` -> `Lantern Court`, kind "title");
- quoted coinages (`"ember-tithe"`, `'the hollowing'`);
- lowercase compounds with an internal hyphen or apostrophe (`ember-tithe`) and repeated unusual
  lowercase words (not in the shipped common-word list, nor an inflection of one).

It filters the usual false positives: `I`, `Mr`, weekdays and months, sentence-initial common
words, vote boxes (`[X]`), quote links (`>>123`), post headers (`[post 123]`), `Anonymous`, `QM`.
Everything is pure string processing; the same text gives the same list.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache

DEFAULT_MIN_SCORE = 1.0

KIND_NAME = "name"
KIND_TITLE = "title"
KIND_COINAGE = "coinage"
KIND_COMPOUND = "compound"
KIND_WORD = "word"
_Token = tuple[int, int, str]  # start, end, text
_Propose = Callable[[str, str, float, int], None]  # term, kind, score, offset
_KIND_RANK = {KIND_COINAGE: 0, KIND_TITLE: 1, KIND_NAME: 2, KIND_COMPOUND: 3, KIND_WORD: 4}


@dataclass(frozen=True, slots=True)
class Candidate:
    """A proposed term. `variants` are other surface forms folded into it (e.g. `Varen` for
    `Lord Varen`); `occurrences` counts the term and its variants in the text (any case)."""

    term: str
    score: float
    first_offset: int
    occurrences: int
    kind_hint: str
    variants: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return (self.term, *self.variants)


_COMMON_TEXT = """
a abandon abbey able about above abroad absence absent absolute absolutely absorb abyss accept
accepted access accident accompany accord according account accuse ache achieve acid
acknowledge acquire acre across act action active activity actor actress actual actually add
addition address adjust admire admit adopt adult advance advantage adventure advice advise
advisor affair affect afford afraid after afterlife afternoon afterward afterwards again
against age agency agent ago agony agree agreement ah aha ahead aid aim air aisle alarm alas
alive all alley alliance allow ally almost alone along already alright also altar alter
although always am amazing amber ambush amid among amongst amount amulet an anchor ancient and
angel anger angle angrily angry animal ankle announce annoy anon anonymous another answer
anvil anxious any anybody anymore anyone anything anyway anywhere apart apartment apologize
apparent apparently appeal appear appearance apple apply apprentice approach approve april
arch area aren't arena argh argue argument arise aristocrat arm armed armor armory armour
armoury army around arrange arrest arrival arrive arrogant arrow art article artist as ash
ashamed ashore aside ask asleep aspect assassin assault assembly assist assume assure astonish
at ate attach attack attempt attend attention attic attitude attract audience august aunt
author authority autumn available average avoid aw awake aware away awe awful awkward axe axis
baby back background backward backwards bad badly bag bait bake balance ball band bank banner
banquet bar bard bare barely bargain bark barn baron barracks barrel barrier base basic basin
basket bath battle bay be beach beacon bead beak beam bean bear beard beast beat beautiful
beauty became because become bed bedroom been beer beetle before beg began beggar begin
beginning begins begun behalf behave behavior behaviour behind being belief believe bell belly
belong beloved below belt bench bend beneath berry beside besides best bet betray better
between beyond big bill bind bird birth bishop bit bite bitter black blacksmith blade blame
blank blanket blast blaze bleak bleed blend bless blind blink bliss block blood bloody blossom
blow blue blush boar board boat body bog boil bold bolt bone bonfire book boot border bore
born borrow boss both bother bottle bottom bought boulder bound boundary bounty bow bowl box
boy bracelet braid brain branch brave bread break breakfast breast breath breathe breeze brew
brewer brick bride bridge bridle brief briefly bright brilliant brim bring bringing brings
broad broken bronze broom brother brought brow brown bruise brush brute bubble bucket buckle
build building bull bullet bump bunch burden burial burn burst bury bush business busy but
butcher butter button buy by bye cabin cabinet cage cairn cake calf call calm calmly came camp
campaign can can't canal cancel candle candlelight cannot canyon cap capable capital captain
capture car card care career careful carefully carpenter carriage carry cart carve case cast
castle cat catch cattle cauldron cause caution cautiously cave cavern cease ceiling cell
cellar center central centre century ceremony certain certainly chain chair chalice challenge
chamber champion chance chandelier change channel chant chaos chapel chapter character
charcoal charge chariot charm chase cheap cheat check cheek cheer cheerful cheese chest chew
chief child childhood children chill chimney chin chisel choice choir choose chop chorus chose
chosen church cinder circle circumstance citadel citizen city civil claim clan class clatter
clay clean clear clearly cleric clerk clever cliff climb cling cloak clock cloister close
closely closer cloth clothes clothing cloud club clue cluster coal coast coat code coffin coin
cold coldly collapse collar collect college colony color colour column combat combine come
comes comet comfort comfortable coming command commander comment commit common communicate
community companion company compare compass compete complain complete completely complex
concern concerned conclude condition conduct confess confidence confident confirm conflict
confuse confused connect conquer conscious consequently consider constant contact contain
content contest continue contract control conversation convince cook cool cope copper copy
core corner corpse correct corridor cost cottage cotton cough could couldn't council count
counter country countryside couple courage course court courtyard cousin cover cow coward
crack craft crash crater crawl crazy creak cream create creature credit creep crest crew crime
criminal crimson crisis crop cross crow crowd crown crude cruel cruelty crumble crush cry
crypt crystal cult cunning cup cupboard cure curious current curse cursed curtain curve custom
customer cut dad dagger daily damage damn damp damsel dance danger dangerous dare dark
darkness date daughter dawn day dead deadly deaf deal dear death debate debt decade decay
december decent decide decision deck declare decline deed deep deeply deer defeat defence
defend defense define definitely degree delay deliver demand den deny depart depend depth
descend describe desert deserve design desire desk despair desperate despite destiny destroy
detail determine develop device devil devote devour dew diamond dice did didn't die diet
differ difference different difficult dig dignity dim dinner direct direction directly dirge
dirt dirty disappear disciple discover discuss disease disgust dish dismiss display distance
distant district disturb ditch dive divide do dock doctor does doesn't dog doing dollar don't
done doom door doorway double doubt dove down downstairs dozen drag dragon drain drape draw
drawer drawn dread dream dress drew drift drink drip drive driven drizzle drone drop drove
drown drug drum drunk dry duck due duel duke dull dungeon during dusk dust duty dwarf dwell
each eager eagerly eagle ear earl early earn earth earthquake ease easily east eastern easy
eat eaten echo eclipse edge effect effort egg eh eight eighteen eighth eighty either elbow
elder elect eleven elf else elsewhere elves ember embrace emerald emerge emergency emotion
emperor empire employ empress empty enable enchant encounter encourage end endure enemy energy
engage engine enjoy enormous enough ensure enter entire entirely entrance envoy envy equal
equipment er erm errand error escape especially essential establish estate eternal even
evening event eventually ever every everybody everyone everything everywhere evidence evil
exact exactly examine example excellent except exchange excite excited exciting excuse
exercise exhaust exile exist existence exit expand expect expense expensive experience expert
explain explode explore expose express expression extend extent extra extreme extremely eye
fable face fact factor fade fail failure faint fair fairly faith faithful falcon fall fallen
false fame familiar family famine famous fan fancy fang far farewell farm farmer fashion fast
fasten fat fate father fault favor favour fear feast feather feature february fed fee feed
feel feeling feels fell fellow felt female fence fetch feud fever few field fiend fierce
fifteen fifth fifty fight figure file fill film final finally find finding finds fine finger
finish fire firm firmly first fish fist fit five fix flag flame flash flask flat flee fleet
flesh flew flicker flight flint float flock flood floor flow flower flown fly focus foe fog
fold folk follow following fond food fool foolish foot for forbid force foreign forest forever
forge forget forgive forgot forgotten fork form formal former fort forth fortress fortune
forty forward fought found fountain four fourteen fourth fox frame free freedom freeze fresh
friday friend friendly friendship fright frighten from front frost frown froze frozen fruit
fuel full fully fun function fund funny fur furniture further furthermore fury future gain
gale gallows game gang gap garden garrison gas gasp gate gather gave gaze gear gem general
generation gentle gentleman gently get gets getting ghost giant gift giggle girl give given
gives giving glad glance glare glass gleam glimmer glimpse glisten global gloom glory glove
glow gnaw go goal goat goblet goblin god goes going gold golden gone good goodbye goods gosh
got gotten govern government gown grab grace grade grain grand grandfather grandmother granite
grant grasp grass grateful grave gray great greed green greet grew grey grief grim grimly grin
grind grip groan groom ground group grove grow growl grown growth guard guardian guess guest
guide guild guilt guilty gun gust gut guy ha habit had hadn't haha hail hair half hall halt
hamlet hammer hand handle hang happen happily happy harbor harbour hard hardly harm harp harsh
harvest has hasn't haste hat hatch hate haunt have haven't having hawk haze he he's head heal
health healthy heap hear heard heart hearth heat heaven heavily heavy height heir held hell
hello helm helmet help helpful hence her herald herb here hermit hero hers herself hesitate
hey hi hid hidden hide high highly hill hilt him himself hint hip hire his hiss history hit hm
hmm hoard hold holding holds hole holiday hollow holy home honest honey honor honour hood hoof
hook hope horde horn horrible horror horse hospital host hot hotel hour house household how
however howl huge huh human humor humour hundred hung hunger hungry hunt hunter hurry hurt
husband hut hymn i'd i'll i'm i've ice idea identify identity idol if ignore ill illness image
imagine immediate immediately impact important impossible impress improve in incense inch
include including income increase indeed independent indicate individual indoor industry
inferno influence inform information injure injury ink inn inner innocent inside insist
inspect instance instantly instead instruction insult intend intense intention interest
interested interesting interior internal interrupt into introduce invade invent invite involve
iron island isn't issue it it's item its itself ivory ivy jacket jail january jaw jest jester
jewel job join joint joke journal journey joy judge judgment july jump june jungle just
justice keen keep keeping keeps kept key kick kid kill kin kind kindle kindly king kingdom
kiss kitchen knee kneel knew knife knight knock knot know knowing knowledge known knows
knuckle labor labour lack ladder lady laid lain lair lake lament lamp lance land language
lantern large largely lash last latch late lately later lattice laugh laughter launch law lawn
lawyer lay layer lazy lead leader leaf league lean leap learn leash least leather leave leaves
leaving led ledge left leg legal legend legion lend length less lesson lest let let's letter
level lever liar lichen lie life lift light lightly like likely likewise limb limit line linen
lion lip liquid list listen lit little live lively lizard load loan local lock lol lonely long
look loom loose loosely lord lore lose loss lost lot loud love lovely lover low lower loyal
luck lucky lunch lung lurk lurker lute mace mad made mage magic magician maid mail main mainly
maintain major make making male man manage mane manner manor mantle many map marble march mare
mark market marriage marry marsh mask mass mast master match mate material matter may maybe me
meadow meal mean meaning meant meanwhile measure meat medicine meet meeting meh melt member
memory men mental mention mercenary merchant mercy mere merely mess message met metal meteor
method middle midnight midst might mighty mild mile military milk mill million mind mine miner
minister minor minstrel minute mirror miserable miss mission mist mistake mix mixture moat
model modern moment monastery monday money monk monster month mood moon moor moral more
moreover morning moss most mostly moth mother motion mount mountain mourn mouse mouth move
movement much mud mule mural murder muscle music must mutter my myself mystery nah nail naked
name narrow nation national native natural naturally nature near nearby nearly neat necessary
neck need needle neighbor neighbour neither nerve nervous nest net never nevertheless new news
next nice night nine nineteen ninety ninth no nobility noble nobody nod noise noisy nomad none
nonetheless nonsense noon nope nor normal normally north northern nose not note nothing notice
novel november now nowhere number nun nurse oak oar oath obey object observe obtain obvious
obviously occasion occur ocean october odd of off offer office officer official often oh oil
ok okay old omen on once one only onto ooh oops op open opening operate opinion opportunity
oppose opposite option options or orange orchard order ordinary ore organize origin original
other otherwise ought our ours ourselves out outer outpost outside over overall ow owe owl own
owner pace pack pact pagan page paid pain painful paint pair palace pale palm pan panic paper
parchment parent park part particular particularly partly partner party pass passage passion
past path patience patient pattern pause pay peace peaceful peak peasant pebble pen pendant
penny people pepper per perfect perfectly perform perhaps period permanent permit person
personal persuade pet phone photo pick piece pierce pig pile pilgrim pill pillar pillow pin
pine pink pipe pit pity place plague plain plan plank plans plant plate play player plea
pleasant please pleased pleasure plenty plot plume pocket poem poet point poison pole police
polite political pond pool poor pop popular population porch port portal position possess
possession possible possibly post poster posting posts pot potato potion pound pour poverty
powder power powerful practical practice praise pray prayer prefer prepare presence present
press pressure pretend pretty prevent previous prey price pride priest priestess prince
princess principle print prison prisoner private prize probably problem proceed process
produce product profit progress project promise proof proper properly property prophecy
prophet protect protest proud prove provide psst public pull punch punish pupil purchase pure
purple purpose pursue push put puzzle pyre qm quality quarry quarter queen quest question
quick quickly quiet quietly quill quit quite quiver race rag rage raid rail rain raise rampart
ran range ranger rank rapid rare rarely rat rate rather rattle raven raw reach react read
ready real reality realize really realm reason reasonable recall receive recent recently
recognize record recover red reduce reed refer reflect refuse regard region regret reject
relate relation relationship relative relax release relic relief rely remain remark remember
remind remote remove repair repeat replace reply report represent request require rescue
research reserve resist resource respect respond response rest result retire retreat return
reveal revenge reward rich rid ridden ride ridge right ring rip rise risen risk ritual rival
river road roar rob robe rock rod rode role roll rolled rolls roof room root rope rose rot
rough round route row royal rub rubble ruby rude ruin rule ruler rumor rumour run rune running
runs rush rust sabotage sack sacred sad saddle sadly safe safety sage said sail saint sake
salt same sanctuary sand sang sank sapphire sat satisfy saturday save saw say scabbard scale
scar scare scared scatter scene scent school science scout scream screen scribe scroll scythe
sea seal search season seat second secret secretly section secure see seed seeing seek seem
seen sees seize seldom self sell send sense sensible sent separate september series serious
seriously serpent servant serve service set settle settlement seven seventeen seventh seventy
several severe sew sex shack shade shadow shake shaken shall shallow shaman shame shape shard
share sharp she she's shed sheep sheet shelf shell shelter shepherd shh shield shift shine
ship shirt shock shoe shone shook shoot shop shore short shot should shoulder shouldn
shouldn't shout shove show shower shrine shrug shut shy sick side siege sigh sight sigil sign
signal silence silent silently silk silly silver similar simple simply since sing single sink
sir sister sit site sits sitting situation six sixteen sixth sixty size skeleton skill skin
skull sky slave slay sledge sleep sleeve slept slice slid slide slight slightly slip slope
slow slowly small smart smash smell smile smith smoke smooth snake snap snarl snow so soap
social society sock soft softly soil sold soldier solid solution solve some somebody somehow
someone something sometimes somewhat somewhere son song soon soot sorcerer sorceress sore
sorrow sorry sort sought soul sound soup sour source south southern space spare spark spawn
speak speaking speaks spear special specter spectre speech speed spell spend spent spider
spill spin spire spirit spit spite splash split spoil spoke spoken spot spread spring spun spy
square squeeze squire staff stage stair stairs stake stallion stand standard standing stands
star stare start starve state station statue status stay steady steal steam steed steel steep
step stew stick stiff still sting stir stole stolen stomach stone stood stool stop store storm
story straight strand strange stranger straw stream street strength stress stretch strict
strike string strip stroke strong struck structure struggle stuck student study stuff stump
stupid style subject succeed success successful such suck sudden suddenly suffer sugar suggest
suit sulfur sulphur sum summer summon sun sunday sung sunk supper supply support suppose sure
surely surface surprise surprised surround survive suspect swallow swam swamp swear sweat
sweep sweet swell swept swim swing switch sword swore sworn swung symbol sympathy system table
tail take taken takes taking tale talent talisman talk tall tally tapestry task taste taught
tavern tax tea teach teacher team tear tease teeth tell telling tells temper temple temporary
ten tend tender tension tent tenth term terrible terribly territory terror test than thank
thanks that that's the theater theatre their theirs them themselves then theory there there's
therefore these they they're thick thief thin thing think thinking thinks third thirst thirsty
thirteen thirty this thorn thorough those though thought thousand thrall thread threads threat
threaten three threw throat throne through throughout throw thrown thumb thunder thursday thus
ticket tide tidy tie tight tightly till timber time tiny tip tired title to today toe together
toilet told tomb tome tomorrow tone tongue tonight too took tool tooth top topic torch tore
torment torn toss total totally totem touch tough tour toward towards tower town toy trace
track trade trader tradition traffic trail train traitor trap travel treasure treat tree
tremble trench trial tribe trick trip troll troop trouble truck true truly trunk trust truth
try tube tuesday tundra tune turn turret tusk twelve twenty twice twin twist two type typical
ugly uh ultimately um unable uncle undead under underground underneath understand understood
unit unite universe unknown unless unlike until unusual up update updates upon upper upset
upstairs urge us use used useful usual usually utterly vague vain valley valuable value
various vast vault vegetable vehicle veil venom version very vessel via victim victory view
village villager vine violence violent viper virtue visible vision visit voice volume vote
voted votes voting voyage wage wagon waist wait wake walk wall wand wander want war ward
warden warily warm warmth warn warning warrior was wash wasn't wasp waste watch water wave way
we we're weak weakness wealth weapon wear weary weather weave weaver wedding wednesday week
weep weigh weight welcome well went were weren't west western wet whale what what's whatever
wheat wheel when whenever where whereas wherever whether whew which while whilst whip whirl
whisper whistle white who who's whoa whoever whole whom whose why wicked wide widow wife wild
will willing win wind window wine wing winter wipe wire wisdom wise wish witch with withdraw
within without witness wizard woe woke woken wolf wolves woman women won won't wonder
wonderful wood wooden wool word wore work worker world worm worn worried worry worse worship
worst worth would wouldn't wound wow wraith wrap wreath wreck wrist write write-in writein
writer writes writing written wrong wrote yard yarn yawn yay yeah year yell yellow yep yes
yesterday yet you you'd you'll you're you've young your yours yourself yourselves youth yup
zero zone
"""

COMMON_WORDS: frozenset[str] = frozenset(_COMMON_TEXT.split())

# Closed-class words and sentence adverbs: dropped from the front of a capitalised run that opens a
# sentence ("Then Varen" -> "Varen"), never candidates alone.
_STARTERS_TEXT = """
    a about above after again against all also although an and another any anyway are as at
    back be because before behind below beneath beside besides between beyond both but by can
    could did do does down during each either even eventually every everyone everything except
    few finally for from further he her here hers herself him himself his how however i if in
    inside instead into is it its itself just later let like many maybe me meanwhile might more
    moreover most much must my myself near neither never nevertheless next no none nor not
    nothing now of off often on once one only or other others otherwise our ours out outside over
    perhaps please quickly quietly rather shall she should since slowly so some someone something
    sometimes somewhere soon still such suddenly than that the their theirs them themselves then
    there therefore these they this those though through thus to today together tomorrow tonight
    too under unless until up upon us very was we well were what whatever when whenever where
    wherever whether which while who whoever whom whose why will with within without would yes
    yet you your yours yourself yourselves oh ah alas well okay ok"""
STARTERS: frozenset[str] = frozenset(_STARTERS_TEXT.split())

# Never a term on their own (checked case-insensitively on whole runs and single words).
_NOT_NAMES_TEXT = """
    i i'm i've i'll i'd mr mrs ms dr mr. mrs. dr. sir madam anonymous anon qm op oc ooc ic gm
    monday tuesday wednesday thursday friday saturday sunday january february march april may
    june july august september october november december god gods lol ok okay yes no english
    tl;dr dr edit update vote votes tally x"""
NOT_NAMES: frozenset[str] = frozenset(_NOT_NAMES_TEXT.split())

_DROP_PREFIX: frozenset[str] = frozenset({"mr", "mrs", "ms", "dr", "mr.", "mrs.", "dr."})
_ARTICLES: frozenset[str] = frozenset({"the", "a", "an"})
_CONNECTORS: frozenset[str] = frozenset(
    {"of", "de", "du", "von", "van", "der", "den", "del", "da", "di", "la", "le"}
)
_CONTRACTION_TAILS: tuple[str, ...] = ("s", "t", "re", "ve", "ll", "d", "m", "em", "clock")
_MAX_RUN_WORDS = 6

_LETTERS = r"[^\W\d_]"
_WORD_RE = re.compile(rf"{_LETTERS}+(?:['’\-]{_LETTERS}+)*")
_MASK_RES: tuple[re.Pattern[str], ...] = (
    re.compile(r"^\[post \d+[^\]\n]*\]", re.MULTILINE),
    re.compile(r">>>?(?:/\w+/)?\d+"),
    re.compile(r"https?://\S+|www\.\S+"),
    re.compile(r"\[\s*[xX✓✔✗*]?\s*\]"),
)
_SKIP_BACK = frozenset(" \t\"'“‘”’([{*-–—_>#•")
_SENTENCE_END = frozenset(".!?…:;")
_DOUBLE_QUOTED = re.compile(r"[\"“]([^\"“”\n]{1,48})[\"”]")
_SINGLE_QUOTED = re.compile(r"(?<![\w’'])['‘]([^'‘’\n]{1,48}?)['’](?![\w’'])")
_QUOTED_PHRASE = re.compile(
    rf"^{_LETTERS}+(?:['’\-]{_LETTERS}+)*(?:\s+{_LETTERS}+(?:['’\-]{_LETTERS}+)*){{0,3}}$"
)
_APOSTROPHES = dict.fromkeys(map(ord, "’‘`´ʼ"), "'")
_DASHES = dict.fromkeys(map(ord, "‐‑‒–—―"), "-")
_SENTENCE_SPLIT = re.compile(r"([.!?…][\"'”’)\]]*)\s+|\n+")
_SPACES = re.compile(r"\s+")


def norm_key(term: str) -> str:
    """Case, width, dashes and apostrophes folded; a leading article and outer punctuation dropped;
    hyphens and whitespace become one space. Used to compare candidates with known terms."""
    text = unicodedata.normalize("NFKC", term).casefold()
    text = text.translate(_APOSTROPHES).translate(_DASHES)
    text = re.sub(r"[\s\-_]+", " ", text).strip(" .,;:!?\"'()[]{}")
    words = text.split()
    if len(words) > 1 and words[0] in _ARTICLES:
        words = words[1:]
    return " ".join(words)


def is_common_word(word: str) -> bool:
    """True for a common English word or a regular inflection of one (`hollowing`, `carried`)."""
    word = word.casefold().translate(_APOSTROPHES)
    if word in COMMON_WORDS:
        return True
    return any(base in COMMON_WORDS for base in _inflection_bases(word))


def _inflection_bases(word: str) -> list[str]:
    bases: list[str] = []
    suffixes = (
        ("ies", ("y",)),
        ("ied", ("y",)),
        ("ier", ("y",)),
        ("iest", ("y",)),
        ("ily", ("y",)),
        ("iness", ("y",)),
        ("es", ("", "e")),
        ("s", ("",)),
        ("ed", ("", "e")),
        ("d", ("",)),
        ("ing", ("", "e")),
        ("ings", ("", "e")),
        ("er", ("", "e")),
        ("ers", ("", "e")),
        ("est", ("", "e")),
        ("ly", ("", "le")),
        ("ness", ("",)),
        ("ment", ("",)),
        ("ments", ("",)),
        ("ful", ("",)),
        ("less", ("",)),
        ("able", ("", "e")),
        ("ish", ("", "e")),
        ("en", ("", "e")),
        ("'s", ("",)),
    )
    for suffix, replacements in suffixes:
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            stem = word[: -len(suffix)]
            for replacement in replacements:
                bases.append(stem + replacement)
            if len(stem) > 3 and stem[-1] == stem[-2] and stem[-1] not in "aeiouls":
                bases.append(stem[:-1])  # doubled consonant: stopped -> stop
    if word.startswith("un") and len(word) > 5:
        bases.append(word[2:])
    if word.startswith("re") and len(word) > 5:
        bases.append(word[2:])
    return bases


def _is_compound_of_common(word: str) -> bool:
    """`glimmerstone` = `glimmer` + `stone`: a made-up compound of two ordinary words."""
    word = word.casefold()
    for cut in range(3, len(word) - 2):
        head, tail = word[:cut], word[cut:]
        if is_common_word(head) and is_common_word(tail) and len(tail) >= 3:
            return True
    return False


def _is_contraction(token: str) -> bool:
    lowered = token.casefold().translate(_APOSTROPHES)
    if "'" not in lowered:
        return False
    head, _, tail = lowered.rpartition("'")
    return tail in _CONTRACTION_TAILS or head in {"o", "y", "ma"} or lowered in COMMON_WORDS


def mask_markup(text: str) -> str:
    """The text with post headers, quote links, URLs and vote boxes blanked (offsets kept)."""
    masked = text
    for pattern in _MASK_RES:
        masked = pattern.sub(lambda match: " " * len(match.group(0)), masked)
    return masked


def _at_sentence_start(text: str, position: int) -> bool:
    index = position - 1
    while index >= 0 and text[index] in _SKIP_BACK:
        index -= 1
    return index < 0 or text[index] == "\n" or text[index] in _SENTENCE_END


@lru_cache(maxsize=4096)
def term_pattern(term: str) -> re.Pattern[str] | None:
    """A case-insensitive pattern for `term` in prose: whole words, a leading article ignored,
    spaces, hyphens and apostrophes between its parts interchangeable, a possessive allowed."""
    cleaned = unicodedata.normalize("NFKC", term).translate(_APOSTROPHES).translate(_DASHES)
    parts = [part for part in re.split(r"[\s\-']+", cleaned.strip(' .,;:!?"()[]{}')) if part]
    if len(parts) > 1 and parts[0].casefold() in _ARTICLES:
        parts = parts[1:]
    if not parts:
        return None
    separator = r"(?:\s+|\s*[-‐‑‒–—―]\s*|['’ʼ])"
    body = separator.join(re.escape(part) for part in parts)
    return re.compile(
        rf"(?<![\w'’\-]){body}(?:(?=['’]s(?!\w))|(?!['’\-]?\w))",
        re.IGNORECASE,
    )


def find_term(text: str, term: str) -> list[tuple[int, int]]:
    """Spans of `term` in `text` (see `term_pattern`), in order."""
    pattern = term_pattern(term)
    if pattern is None:
        return []
    return [match.span() for match in pattern.finditer(text)]


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence: split after . ! ? … (and closing quotes) and at newlines."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _SENTENCE_SPLIT.finditer(text):
        end = match.start() + len(match.group(1) or "")
        if end > start:
            spans.append((start, end))
        start = match.end()
    if start < len(text):
        spans.append((start, len(text)))
    return [(s, e) for s, e in spans if text[s:e].strip()]


def clean_sentence(sentence: str) -> str:
    """Markup blanked and whitespace collapsed."""
    return _SPACES.sub(" ", mask_markup(sentence)).strip()


def sentence_at(text: str, offset: int, max_chars: int = 240) -> str:
    """The cleaned sentence containing `offset`, cut to `max_chars` around the offset."""
    for start, end in sentence_spans(text):
        if start <= offset < end:
            break
    else:
        start, end = max(0, offset - max_chars // 2), min(len(text), offset + max_chars // 2)
    raw = text[start:end]
    sentence = clean_sentence(raw)
    if len(sentence) <= max_chars:
        return sentence
    relative = max(0, min(len(sentence), len(clean_sentence(text[start:offset]))))
    lo = max(0, min(relative - max_chars // 3, len(sentence) - max_chars))
    cut = sentence[lo : lo + max_chars - 2].strip()
    return ("…" if lo > 0 else "") + cut + "…"


def sentences_with(text: str, term: str, *, limit: int | None = None) -> list[str]:
    """The cleaned sentences of `text` that mention `term` (or a spelling variant), in order."""
    pattern = term_pattern(term)
    if pattern is None:
        return []
    found: list[str] = []
    seen: set[str] = set()
    for start, end in sentence_spans(text):
        sentence = clean_sentence(text[start:end])
        if sentence and sentence not in seen and pattern.search(sentence):
            seen.add(sentence)
            found.append(sentence)
            if limit is not None and len(found) >= limit:
                break
    return found


@dataclass(slots=True)
class _Draft:
    term: str
    kind: str
    score: float
    offset: int
    variants: list[str] = field(default_factory=list)
    rules: int = 1


def find_candidates(
    text: str,
    known: Iterable[str] = (),
    *,
    min_score: float = DEFAULT_MIN_SCORE,
    limit: int | None = None,
) -> list[Candidate]:
    """Candidate terms of `text` not in `known` (terms and aliases, compared normalized), best
    first (score, then first occurrence). `min_score` 1.0 keeps names seen mid-sentence, quoted
    coinages and twice-seen unusual compounds; lower it for recall, raise it for precision."""
    masked = mask_markup(text)
    drafts: dict[str, _Draft] = {}

    def propose(term: str, kind: str, score: float, offset: int) -> None:
        key = norm_key(term)
        if not key or key in NOT_NAMES:
            return
        draft = drafts.get(key)
        if draft is None:
            drafts[key] = _Draft(term, kind, score, offset)
            return
        if _KIND_RANK[kind] < _KIND_RANK[draft.kind]:
            draft.kind = kind
        draft.score = max(draft.score, score) if kind != draft.kind else draft.score + score
        draft.rules += 1
        if offset < draft.offset:
            draft.offset = offset
            draft.term = term

    tokens = [(m.start(), m.end(), m.group(0)) for m in _WORD_RE.finditer(masked)]
    _propose_names(masked, tokens, propose)
    _propose_lowercase(tokens, propose)
    _propose_quoted(masked, propose)

    _fold_short_names(drafts)
    known_keys, known_words = _known_index(known)
    results: list[Candidate] = []
    for key, draft in drafts.items():
        names = [draft.term, *draft.variants]
        if any(norm_key(name) in known_keys for name in names):
            continue
        if " " not in key and key in known_words:
            continue
        spans = _disjoint(span for name in names for span in find_term(masked, name))
        occurrences = len(spans) or 1
        first = spans[0][0] if spans else draft.offset
        score = round(draft.score + 0.25 * (draft.rules - 1), 3)
        if score < min_score:
            continue
        results.append(
            Candidate(
                term=draft.term,
                score=score,
                first_offset=first,
                occurrences=occurrences,
                kind_hint=draft.kind,
                variants=tuple(draft.variants),
            )
        )
    results.sort(key=lambda c: (-c.score, c.first_offset, c.term))
    return results if limit is None else results[:limit]


def _disjoint(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans in order, longest first at a position, without those inside an earlier one."""
    kept: list[tuple[int, int]] = []
    for start, end in sorted(set(spans), key=lambda span: (span[0], -span[1])):
        if kept and start < kept[-1][1]:
            continue
        kept.append((start, end))
    return kept


def _known_index(known: Iterable[str]) -> tuple[set[str], set[str]]:
    keys: set[str] = set()
    words: set[str] = set()
    for name in known:
        key = norm_key(name)
        if not key:
            continue
        keys.add(key)
        parts = key.split()
        if len(parts) > 1:
            words.update(p for p in parts if p not in STARTERS and p not in _CONNECTORS)
    return keys, words


def _propose_names(masked: str, tokens: list[_Token], propose: _Propose) -> None:
    index = 0
    while index < len(tokens):
        if not _is_capitalised(tokens[index][2]):
            index += 1
            continue
        run = [tokens[index]]
        cursor = index + 1
        while cursor < len(tokens) and len(run) <= _MAX_RUN_WORDS:
            gap = masked[run[-1][1] : tokens[cursor][0]]
            if _is_capitalised(tokens[cursor][2]) and gap == " ":
                run.append(tokens[cursor])
                cursor += 1
                continue
            # connectors: "Order of the Ember", "Isle of Ash"
            link = _connector_length(masked, tokens, run[-1], cursor)
            if link:
                run.extend(tokens[cursor : cursor + link + 1])
                cursor += link + 1
                continue
            break
        if len(run) <= _MAX_RUN_WORDS:
            _propose_run(masked, run, propose)
        index = cursor


def _connector_length(masked: str, tokens: list[_Token], last: _Token, cursor: int) -> int:
    """1 or 2 when tokens[cursor:] is a connector ("of", "of the") before a capitalised word."""
    if cursor >= len(tokens) or masked[last[1] : tokens[cursor][0]] != " ":
        return 0
    first = tokens[cursor][2]
    if first not in _CONNECTORS:
        return 0
    steps = 1
    if cursor + 1 < len(tokens) and tokens[cursor + 1][2] == "the":
        if masked[tokens[cursor][1] : tokens[cursor + 1][0]] != " ":
            return 0
        steps = 2
    following = cursor + steps
    if following >= len(tokens):
        return 0
    if masked[tokens[following - 1][1] : tokens[following][0]] != " ":
        return 0
    return steps if _is_capitalised(tokens[following][2]) else 0


def _is_capitalised(token: str) -> bool:
    if not token[0].isupper():
        return False
    letters = [ch for ch in token if ch.isalpha()]
    return not (len(letters) > 1 and all(ch.isupper() for ch in letters))


def _propose_run(masked: str, run: list[_Token], propose: _Propose) -> None:
    words = [token[2] for token in run]
    offsets = [token[0] for token in run]
    at_start = _at_sentence_start(masked, offsets[0])
    titled = _preceded_by_the(masked, offsets[0])
    # strip a leading article or sentence starter ("The Lantern Court", "Then Varen")
    while words and (
        words[0].casefold() in _ARTICLES
        or words[0].casefold() in _DROP_PREFIX
        or (at_start and words[0].casefold() in STARTERS)
        or words[0].casefold() in NOT_NAMES
    ):
        if words[0].casefold() == "the":
            titled = True
        words, offsets = words[1:], offsets[1:]
        at_start = False
    while words and (words[-1].casefold() in _CONNECTORS or words[-1].casefold() in NOT_NAMES):
        words, offsets = words[:-1], offsets[:-1]
    if not words:
        return
    last = words[-1]
    possessive = re.match(r"^(.*?)['’]s$", last)
    if possessive:
        words[-1] = possessive.group(1)
    if len(words) == 1 and len(words[0]) < 2:
        return
    term = " ".join(words)
    lowered = term.casefold()
    if lowered in NOT_NAMES or (len(words) == 1 and lowered in STARTERS):
        return
    content = [w for w in words if w.casefold() not in _CONNECTORS and w != "the"]
    uncommon = any(not is_common_word(w) for w in content)
    inner_mark = any(("'" in w or "’" in w or "-" in w) and not _is_contraction(w) for w in words)
    multi = len(content) > 1
    if at_start:
        if not (uncommon or multi):
            return  # a common word that just opens a sentence
        score = 0.4
    else:
        score = 1.0
    if multi:
        score += 0.5
    if uncommon:
        score += 0.5
    if inner_mark:
        score += 0.5
    kind = KIND_TITLE if titled else KIND_NAME
    propose(term, kind, score, offsets[0])


def _preceded_by_the(masked: str, position: int) -> bool:
    return masked[max(0, position - 4) : position].casefold() == "the "


def _propose_lowercase(tokens: list[_Token], propose: _Propose) -> None:
    counts: dict[str, int] = {}
    firsts: dict[str, tuple[int, str]] = {}
    for start, _end, token in tokens:
        lowered = token.casefold()
        counts[lowered] = counts.get(lowered, 0) + 1
        if token.islower() and lowered not in firsts:
            firsts[lowered] = (start, token)
    for lowered, (start, token) in firsts.items():
        if lowered in NOT_NAMES or lowered in COMMON_WORDS:
            continue
        count = counts[lowered]
        if "-" in token or "'" in token or "’" in token:
            if _is_contraction(token):
                continue
            parts = re.split(r"['’\-]", token)
            unusual = any(not is_common_word(part) for part in parts if part)
            score = (1.0 if unusual else 0.5) + 0.5 * (count - 1)
            propose(token, KIND_COMPOUND, score, start)
        elif len(token) >= 5 and not is_common_word(token):
            score = 0.35 * count + (0.3 if _is_compound_of_common(token) else 0.0)
            propose(token, KIND_WORD, score, start)


def _propose_quoted(masked: str, propose: _Propose) -> None:
    for pattern in (_DOUBLE_QUOTED, _SINGLE_QUOTED):
        for match in pattern.finditer(masked):
            phrase = match.group(1).strip()
            if not _QUOTED_PHRASE.match(phrase):
                continue
            words = phrase.split()
            several = len(words) > 1  # 'the hollowing' is a coinage even if 'hollowing' is not
            offset = match.start(1) + (len(match.group(1)) - len(match.group(1).lstrip()))
            if len(words) > 1 and words[0].casefold() in _ARTICLES:
                offset += len(words[0]) + 1
                words = words[1:]
            if all(w.casefold() in STARTERS for w in words):
                continue
            marked = any(
                ("-" in w or "'" in w or "’" in w) and not _is_contraction(w) for w in words
            )
            uncommon = any(not is_common_word(w) for w in words)
            score = 1.0 if (marked or uncommon or several) else 0.6
            propose(" ".join(words), KIND_COINAGE, score, offset)


def _fold_short_names(drafts: dict[str, _Draft]) -> None:
    """A one-word name that is a word of exactly one multiword name becomes its variant."""
    multi = {
        key: d for key, d in drafts.items() if " " in key and d.kind in (KIND_NAME, KIND_TITLE)
    }
    for key in sorted(drafts):
        draft = drafts[key]
        if " " in key or draft.kind not in (KIND_NAME, KIND_TITLE):
            continue
        owners = [mkey for mkey in multi if key in mkey.split()]
        if len(owners) != 1:
            continue
        owner = drafts[owners[0]]
        owner.variants.append(draft.term)
        owner.score += 0.5 * draft.score
        owner.offset = min(owner.offset, draft.offset)
        del drafts[key]
