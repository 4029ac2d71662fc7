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
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Protocol

from terrarium_dagster.store.normalize import form_key, normalize_term
from terrarium_dagster.store.vocabulary import elided_word, frequency, is_ordinary, ordinary_reason

DEFAULT_MIN_SCORE = 1.0
# A lowercase word at least this frequent in English (wordfreq's Zipf scale) is vocabulary, not a
# coinage ("evidently", "enclosure", "chieftain"); a capitalised one is too when it only opens
# sentences ("Evidently", "Grasping").
ENGLISH_ZIPF = 2.5
# A lowercase word is held to a lower bar: coinages are written in lowercase and are rare or
# unknown to wordfreq ("sakked", "thoat", "wending" 1.7); "topmost" (2.45) is English.
LOWERCASE_ENGLISH_ZIPF = 2.0
# A word at least this frequent is one the language knows, however rare ("capstan", "mizzen",
# "puncheon"); a story's own words are rarer or unknown ("thoat", "farthen").
KNOWN_WORD_ZIPF = 1.0
# Hyphenated descriptions, not names: "paint-streaked", "panic-stricken", "vise-like",
# "semi-barbaric", "one-quarter", "olive-green", "long-extinct".
_DESCRIPTIVE_ENDINGS = (
    "ed", "ing", "like", "ly", "ful", "less", "ish", "ous", "ive", "ic", "ical", "able", "ible",
    "ward", "wards", "wise", "most", "some",
)  # fmt: skip
_DESCRIPTIVE_PREFIXES = frozenset((
    "semi", "non", "anti", "pre", "post", "re", "un", "half", "self", "well", "ill", "ever", "all",
    "long", "full", "over", "under", "out", "super", "ultra", "extra", "quasi", "pseudo", "mid",
    "multi", "vice", "sub", "ex", "co", "arch", "one", "two", "three", "four", "five", "six",
    "seven", "eight", "nine", "ten", "twenty", "thirty", "forty", "fifty", "hundred", "thousand",
    "first", "second", "third", "quarter", "sixty", "seventy", "eighty", "ninety",
))  # fmt: skip
# What a gerund names in an everyday compound ("dining-hall", "walking-stick"); a story's
# machines and creatures so named stay terms ("fighting-machine", "handling-machine").
_ROOMS_AND_TOOLS = frozenset((
    "hall", "room", "place", "house", "glass", "stick", "ground", "table", "chamber", "shed",
    "yard", "cap", "gown", "case", "desk", "pen", "paper", "boat", "bag", "shop", "school",
))  # fmt: skip
_COMPASS = frozenset(("north", "south", "east", "west"))
_COLOURS = frozenset((
    "red", "green", "blue", "yellow", "white", "black", "grey", "gray", "brown", "purple", "pink",
    "orange", "olive", "golden", "silver", "scarlet", "crimson", "azure", "ivory", "copper",
    "bronze",
))  # fmt: skip
# Participles and adjectives that end a description whatever their frequency ("metal-shod").
_DESCRIPTIVE_LAST = frozenset((
    "stricken", "shod", "clad", "born", "bred", "borne", "worn", "torn", "made", "grown", "blown",
    "drawn",
    "known", "sown", "fed", "lit", "spun", "proof", "free", "tight", "deep", "high", "wide",
    "long", "old", "odd", "fold", "laden", "shaven", "wrought", "strewn", "begotten", "hewn",
    "woven", "ridden", "struck", "swept", "spread", "built", "shrunken", "forsaken", "up", "down",
    "off",
))  # fmt: skip
# Ordinals and "latter" open a description ("nineteenth-century", "latter-day").
_ORDINAL_PREFIXES = frozenset((
    "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "eleventh", "twelfth",
    "twentieth", "thirtieth", "fortieth", "fiftieth", "hundredth", "thousandth", "latter",
    "former", "last", "next",
))  # fmt: skip

KIND_NAME = "name"
KIND_TITLE = "title"
KIND_COINAGE = "coinage"
KIND_COMPOUND = "compound"
KIND_WORD = "word"
_Token = tuple[int, int, str]  # start, end, text
_KIND_RANK = {KIND_COINAGE: 0, KIND_TITLE: 1, KIND_NAME: 2, KIND_COMPOUND: 3, KIND_WORD: 4}


class _Propose(Protocol):
    def __call__(
        self, term: str, kind: str, score: float, offset: int, variants: tuple[str, ...] = ()
    ) -> None: ...


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
a abandon abbey able about above abroad abruptly absence absent absently absolute absolutely
absorb abyss accept accepted access accident accompany accord according account accuse ache
achieve acid acknowledge acquire acre across act action active activity actor actress actual
actually add addition address adjust admire admit adopt adult advance advantage adventure
advice advise advisor affair affect afford afraid after afterlife afternoon afterward
afterwards again against age agency agent ago agony agree agreement ah aha ahead aid aim air
aisle alarm alas alcove alive all alley alliance allow ally almost alone along already alright
also altar alter although always am amazing amber ambush amid among amongst amount amulet an
anchor ancient and angel anger angle angrily angry animal ankle announce annoy annoyance anon
anonymous another answer anvil anxiety anxious any anybody anymore anyone anything anyway
anywhere apart apartment apologize apparent apparently appeal appear appearance apple apply
apprentice approach approve april apron arch archway area aren't arena argh argue argument
arise aristocrat arm armed armor armory armour armoury army around arrange arrest arrival
arrive arrogant arrow art article artist as ash ashamed ashore aside ask asleep aspect
assassin assault assembly assist assume assure astonish at ate attach attack attempt attend
attention attic attitude attract audience august aunt author authority autumn available
average avoid aw awake aware away awe awful awkward awkwardly awning axe axis axle baby back
background backward backwards bad badly bag bait bake baker bakery balance balcony ball
balustrade band bandage banister bank banner banquet bar bard bare barely bargain barge bark
barn baron barracks barrel barrier barrow base basement basic basin basket bath bathtub battle
battlement bay be beach beacon bead beak beaker beam bean bear beard beast beat beautiful
beauty became because become bed bedding bedroom been beer beeswax beetle before beg began
beggar begin beginning begins begun behalf behave behavior behaviour behind being belfry
belief believe bell bellows belly belong beloved below belt bench bend beneath berry berth
beside besides best bet betray better between beyond big bill billow bind binding bird birth
bishop bit bite bitter bitterly bitterness black blacksmith blade blame blank blanket blast
blaze bleak bleed blend bless blind blink bliss blister block blood bloody blossom blot blow
blue bluff bluntly blush boar board boat boatman bobbin bodice body bog boil bold boldly
bolster bolt bone bonfire bonnet book bookcase boot border bore boredom born borrow boss both
bother bottle bottleneck bottom bought boulder bound boundary bounty bouquet bow bowl box boy
bracelet bracket braid brain branch brave brazier bread break breakfast breast breath breathe
breeches breeze brew brewer brick brickwork bride bridge bridle brief briefly bright brightly
brilliant brim brine bring bringing brings briskly bristle broad broken bronze brooch brook
broom broth brother brought brow brown bruise brush brute bubble bucket buckle build building
bull bullet bump bunch bundle bunk buoy burden burial burlap burn burst bury bush business
bustle busy but butcher butter button buy by bye cabbage cabin cabinet cage cairn cake calf
call calm calmly came camp campaign can can't canal cancel candle candlelight cannot canopy
canvas canyon cap capable capital captain capture car carcass card care career careful
carefully carp carpenter carriage carry cart carton carve case cask cast castle casually cat
catch cattle catwalk cauldron cause causeway caution cautiously cave cavern cease ceiling cell
cellar center central centre century ceremony certain certainly chaff chain chair chalice
chalk challenge chamber champion chance chandelier chandler change channel chant chaos chapel
chapter character charcoal charge chariot charm chart chase chasm cheap cheat check cheek
cheekbone cheer cheerful cheerfully cheese chest chew chief child childhood children chill
chimney chin chisel choice choir choose chop chore chorus chose chosen church chute cinder
circle circumstance cistern citadel citizen city civil claim clamber clambered clan clapper
clasp class clatter clay clean clear clearly cleaver cleric clerk clever cliff climb cling
cloak clock clod clog cloister close closely closer cloth clothes clothing cloud club clue
clumsily cluster coal coast coat cobble cobbler cobblestone code coffin cog coil coin cold
coldly collapse collar collarbone collect college colony color colour column combat combine
come comes comet comfort comfortable coming command commander comment commit common
communicate community companion company compare compass compete complain complete completely
complex compost concern concerned conclude condition conduct confess confidence confident
confirm conflict confuse confused connect conquer conscious consequently consider constable
constant contact contain contempt content contest continue contract control conversation
convince cook cool coolly coop cope copper copy cord core cork corner corpse correct corridor
corset cost cot cottage cotton cough could couldn't council count counter counterweight
country countryside couple courage courier course court courtyard cousin cover cow coward
cowardice cowl crab crack cradle craft crane crank crash crate crater crawl crazy creak cream
crease create creature credit creek creep crest crevice crew crime criminal crimson crisis
crockery crook crop cross crossroads crouch crouched crouching crow crowbar crowd crown crude
cruel cruelty crumb crumble crush crust crutch cry crypt crystal cudgel cuff cult cunning cup
cupboard cupola curb cure curious current curse cursed curtain curtly curve cushion custom
customer cut dad dagger daily dais dam damage damn damp damsel dance danger dangerous dare
dark darkness date daughter dawn day daybreak daylight dead deadly deaf deal dear death debate
debris debt decade decay december decent decide decision deck deckhand declare decline deed
deep deeply deer defeat defence defend defense define definitely degree delay delight deliver
demand den dent deny depart depend depth derrick descend describe desert deserve design desire
desk despair desperate despite destiny destroy detail determine develop device devil devote
devour dew diamond dice did didn't die diet differ difference different difficult dig dignity
dim dimly dinghy dinner direct direction directly dirge dirk dirt dirty disappear disciple
discover discuss disease disgust dish dismiss display distance distant district disturb ditch
dive divide do dock dockhand doctor does doesn't dog doing dollar don't done doom door
doorframe doorstep doorway dormitory double doubt dove down downpour downstairs dozen drag
dragged dragon drain drainpipe drape draw drawbridge drawer drawn dread dream dredge dress
drew drift driftwood drink drip drive driven drizzle drone drop drove drover drown drug drum
drunk dry dryly duck due duel duke dull dune dungeon during dusk dust dustpan duty dwarf dwell
dye each eager eagerly eagerness eagle ear earl early earn earth earthquake ease easily east
eastern easy eat eaten eave eaves echo eclipse edge effect effort egg eh eight eighteen eighth
eighty either elbow elder elect eleven elf else elsewhere elves embankment embarrassment ember
embrace emerald emerge emergency emotion emperor empire employ empress empty enable enchant
encounter encourage end endure enemy energy engage engine engraving enjoy enormous enough
ensure enter entire entirely entrance envoy envy equal equipment er erm errand error escape
especially essential establish estate eternal even evening event eventually ever every
everybody everyone everything everywhere evidence evil ewer exact exactly examine example
excellent except exchange excite excited exciting excuse exercise exhaust exhaustion exile
exist existence exit expand expect expense expensive experience expert explain explode explore
expose express expression extend extent extra extreme extremely eye fable face fact factor
fade fail failure faint faintly fair fairly faith faithful falcon fall fallen false fame
familiar family famine famous fan fancy fang far farewell farm farmer fashion fast fasten fat
fate father fathom fault favor favour fear feast feather feature february fed fee feed feel
feeling feels fell fellow felt female fence ferry ferryman fetch feud fever few fiddle field
fiend fierce fiercely fifteen fifth fifty fight figure figurehead file fill film filth final
finally find finding finds fine finger finish fire firelight firm firmly first fish fisherman
fishmonger fishwife fishwives fist fit five fix flag flagstone flame flash flask flat flax
flee fleece fleet flesh flew flicker flight flinch flinched fling flint float flock flood
floor flow flower flown flue flung fly focus foe fog foghorn fold folk follow following fond
fondly fondness food fool foolish foot footbridge footpath footstep for forbid force forecourt
foreign foreman forest forever forge forget forgive forgot forgotten fork form formal former
fort forth fortress fortune forty forward fought found fountain four fourteen fourth fox frame
frantically fray free freedom freeze fresh friday friend friendly friendship fright frighten
fringe from front frost frown frowned froze frozen fruit fuel full fully fun function fund
funny fur furniture further furthermore fury fuse future gable gain gale gallery gallows game
gang gangplank gap garden garret garrison gas gasp gasped gate gather gauze gave gaze gear gem
general generation gentle gentleman gently get gets getting ghost giant gift giggle ginger
gingerly girder girl give given gives giving glad glade glance glare glared glass glaze gleam
glimmer glimpse glint glisten global gloom glory glove glow glue gnaw go goal goat goblet
goblin god goes going gold golden gone good goodbye goods gorge gosh got gotten gourd govern
government gown grab grace grade grain granary grand grandfather grandmother granite grant
grasp grass grate grateful gratitude grave gravel gray grease great greed green greenhouse
greet grew grey grief grim grimace grimaced grime grimly grin grind grindstone grip gristle
groan groom ground group grove grow growl grown growth gruffly guard guardian guess guest
guide guild guilt guilty gull gully gun gust gut gutter guy ha habit had hadn't haha hail hair
hairpin half halfway hall halt halter hamlet hammer hamper hand handle handrail hang happen
happily happy harbor harbour hard hardly harm harness harp harsh harshly harvest has hasn't
haste hastily hat hatch hatchet hate hatred haul hauled haunt have haven't having hawk hawker
hay haze he he's head headland heal health healthy heap hear heard heart hearth heat heave
heaved heaven heavily heavy hedge height heir held hell hello helm helmet help helpful hem
hemp hence her herald herb here hermit hero hers herself hesitate hey hi hid hidden hide high
highly hill hilltop hilt him himself hinge hint hip hire his hiss history hit hm hmm hoard
hoist hoisted hold holding holds hole holiday hollow holy home honest honey honor honour hood
hoof hook hoop hope horde horn horrible horror horse hospital host hostility hot hotel hound
hour house household hovel how however howl huge huh hull hum human hummed humor humour
hundred hung hunger hungry hunt hunter hurl hurled hurry hurt husband husk hut hymn i'd i'll
i'm i've ice idea identify identity idly idol if ignore ill illness image imagine immediate
immediately impact impatience important impossible impress improve in incense inch include
including income increase indeed independent indicate individual indoor industry inferno
influence inform information injure injury ink inkwell inlet inn inner innkeeper innocent
inside insist inspect instance instantly instead instruction insult intend intense intention
intently interest interested interesting interior internal interrupt into introduce invade
invent invite involve iron ironwork island isn't issue it it's item its itself ivory ivy jab
jabbed jacket jail jailer janitor january jar jaw jealousy jest jester jetty jewel job join
joint joke journal journey joy judge judgment jug july jump june jungle just justice keel keen
keenly keep keeping keeps keg kennel kept kerchief kettle key kick kid kill kiln kin kind
kindle kindly kindness king kingdom kiss kitchen knapsack knee kneel knew knife knight knob
knock knot know knowing knowledge known knows knuckle labor laborer labour labourer lack
ladder ladle lady lagoon laid lain lair lake lament lamp lamplight lamplighter lamppost lance
land lane language lantern lanyard larder large largely lash last latch late lately later lath
lattice laugh laughter launch law lawn lawyer lay layer lazily lazy lead leader leaf league
lean leap learn leash least leather leave leaves leaving led ledge ledger left leg legal
legend legion lend length less lesson lest let let's letter level lever liar lichen lid lie
life lift light lightly like likely likewise limb limestone limit line linen lintel lion lip
liquid list listen lit little live lively lizard load loaf loan local lock lodge loft lol
loneliness lonely long longing look loom loose loosely lord lore lose loss lost lot loud
loudly love lovely lover low lower loyal luck lucky lunch lung lurk lurker lute lye mace mad
made mage magic magician magistrate maid mail main mainly maintain major make making male
malice mallet man manage mane manner manor mantel mantle many map marble march mare mark
market marketplace marriage marry marsh mask mason mass mast master mat match mate material
matter mattress may maybe me meadow meal mean meaning meant meanwhile measure meat medicine
meet meeting meh melt member memory men mental mention mercenary merchant mercy mere merely
mesh mess message messenger met metal meteor method midday midden middle midnight midst
midwife might mighty mild mildew mildly mile military milk mill miller million millstone mind
mine miner minister minor minstrel minute mire mirror miserable misery miss mission mist
mistake mix mixture moat model modern modesty mold moment monastery monday money monk monster
month mood moon moonlight moor mooring mop moral more moreover morning mortar moss most mostly
moth mother motion mould mound mount mountain mourn mourning mouse mouth move movement much
mud mug mule mural murder murmur murmured muscle music mussel must mutter muttered my myself
mystery nah nail naked name napkin narrow nation national native natural naturally nature
nausea near nearby nearly neat neatly necessary neck need needle neighbor neighbour neither
nerve nervous nervously nest net never nevertheless new news next nice niche night nightfall
nine nineteen ninety ninth no nobility noble nobody nod nodded noise noisy nomad none
nonetheless nonsense nook noon nope nor normal normally north northern nose nostalgia not
notch note nothing notice novel november now nowhere number numbly nun nurse oak oakum oar
oath obey object observe obtain obvious obviously occasion occur ocean october odd oddly of
off offer office officer official often oh oil oilcloth ok okay old omen on once one only onto
ooh oops op open opening openly operate opinion opportunity oppose opposite option options or
orange orchard order ordinary ore organize origin original other otherwise ought our ours
ourselves out outer outhouse outpost outrage outside oven over overall overcoat ow owe owl own
owner pace pack pact paddle pagan page paid pail pain painful paint pair palace pale palm pan
pane panic pantry paper parapet parcel parchment parent park parlor parlour part particular
particularly partly partner party pass passage passion past pasture patch path patience
patient patiently pattern pause pavement pay peace peaceful peak peasant peat pebble peddler
peg pellet pen pendant penny people pepper per perfect perfectly perform perhaps period
permanent permit person personal persuade pet phone photo pick piece pier pierce pig pigeon
pike pile pilgrim pill pillar pillow pin pinch pine pink pipe pit pitch pitcher pity place
plague plain plainly plan plank plans plant plaster plate play player plea pleasant please
pleased pleasure plenty pliers plot plough plow plume pocket pocketknife poem poet point
poison poke poked pole police polish polite politely political pond pool poor pop popular
population porch porridge port portal porter porthole position possess possession possible
possibly post poster posting posts pot potato potion potter pouch pound pour poverty powder
power powerful practical practice praise pray prayer prefer prepare presence present press
pressure pretend pretty prevent previous prey price pride priest priestess prince princess
principle print prison prisoner private prize probably problem proceed process prod prodded
produce product profit progress project promise promptly proof proper properly property
prophecy prophet protect protest proud proudly prove provide provost psst public puddle pull
pulley pulp pump punch punish pupil purchase pure purple purpose pursue push put puzzle pyre
qm quality quarry quarter quay queen quest question quick quickly quiet quietly quill quilt
quit quite quiver race raft rafter rag rage raid rail railing rain raise rake ramp rampart ran
range ranger rank rapid rapidly rapids rare rarely rasp rat rate rather ration rattle raven
ravine raw reach react read readily ready real reality realize really realm reason reasonable
recall receive recent recently recognize record recover rector red reduce reed reef refer
reflect refuse regard region regret reject relate relation relationship relative relax release
relic relief rely remain remark remember remind remorse remote remove repair repeat replace
reply report represent request require rescue research resentment reserve resist resource
respect respond response rest result retire retreat return reveal revenge reward rib rich rid
ridden ride ridge rigging right rim ring rip ripple rise risen risk ritual rival river rivet
road roar rob robe rock rod rode role roll rolled rolls roof room roost root rope rose rot
rough roughly round route row royal rub rubble ruby rudder rude rudely rug ruin rule ruler
rumor rumour run rune rung running runs rush rust sabotage sack sackcloth sacred sad saddle
sadly sadness safe safety sage said sail sailcloth sailor saint sake salt same sanctuary sand
sandbar sang sank sapphire sash sat satchel satisfy saturday save saw sawdust say scabbard
scaffold scale scar scare scared scarf scatter scene scent scholar school science scorn scout
scramble scrambled scrap scraper scream screen scribe scroll scrub scythe sea seal seam search
season seat seaweed second secret secretly section secure sediment see seed seeing seek seem
seen sees seize seldom self sell send sense sensible sent sentry separate september sergeant
series serious seriously serpent servant serve service set settle settlement seven seventeen
seventh seventy several severe sew sewer sex shack shade shadow shaft shake shaken shale shall
shallow shaman shame shanty shape shard share sharp sharply shawl she she's shears sheath shed
sheep sheepishly sheet shelf shell shelter shepherd shh shield shift shine shingle ship
shipyard shirt shiver shivered shoal shock shoe shone shook shoot shop shopkeeper shore short
shot should shoulder shouldn shouldn't shout shove shoved shovel show shower shrine shrub
shrug shrugged shuffle shuffled shut shutter shy shyly sick side siege sieve sigh sighed sight
sigil sign signal silence silent silently silk sill silly silt silver similar simple simply
since sinew sing single sink sir sister sit site sits sitting situation six sixteen sixth
sixty size skein skeleton skiff skill skin skull sky slab slate slave slay sled sledge sleep
sleepily sleet sleeve slept slice slid slide slight slightly slip slipway slope slow slowly
sludge slum small smart smash smell smile smith smock smoke smokestack smooth smoothly snag
snake snap snare snarl sniff sniffed snow so soap social society sock soft softly soil sold
soldier solemnly solid solution solve some somebody somehow someone something sometimes
somewhat somewhere son song soon soot sorcerer sorceress sore sorrow sorry sort sought soul
sound soup sour source south southern space spade spar spare spark spawn speak speaking speaks
spear special specter spectre speech speed spell spend spent spider spill spin spindle spire
spirit spit spite splash splinter split spoil spoke spoken sponge spool spot spout spread
sprig spring spun spur spy squall square squeeze squint squinted squire staff stage stagger
staggered stain stained stair staircase stairs stairwell stake stall stallion stammer
stammered stand standard standing stands star starboard stare starlight start starve state
station statue status stave stay steady steal steam steed steel steep step sternly stew
steward stick stiff stiffly still stilt stilts sting stir stirrup stockade stole stolen
stomach stone stood stool stop store storeroom storm story stove straight strand strange
stranger strap straw stream street strength stress stretch strict strike string strip stroke
strong struck structure struggle stubbornly stuck student study stuff stumble stumbled stump
stupid style subject succeed success successful such suck sudden suddenly suffer sugar suggest
suit sulfur sullenly sulphur sum summer summon sump sun sunday sung sunk sunrise sunset supper
supply support suppose sure surely surface surgeon surprise surprised surround survive suspect
suspicion swallow swam swamp swarm swear sweat sweep sweet swell swept swiftly swill swim
swing switch sword swore sworn swung symbol sympathy system table tack tackle tail tailor take
taken takes taking tale talent talisman talk tall tallow tally tankard tanner tapestry tar
tarp task taste taught tavern tax tea teach teacher team tear tease teeth tell telling tells
temper temple temporary ten tend tender tenderly tenderness tension tent tenth term terrible
terribly territory terror test tether than thank thanks that that's thatch the theater theatre
their theirs them themselves then theory there there's therefore these they they're thick
thicket thickly thief thimble thin thing think thinking thinks third thirst thirsty thirteen
thirty this thistle thorn thorough those though thought thousand thrall thread threads threat
threaten three threshold threw throat throne through throughout throw thrown thumb thumbtack
thunder thursday thus ticket tide tidy tie tight tightly tile till timber time tinder tiny tip
tired title to today toe together toilet told toll tollgate tomb tome tomorrow tone tongs
tongue tonight too took tool tooth top topic torch torchlight tore torment torn toss tossed
total totally totem touch tough tour toward towards tower town towpath toy trace track trade
trader tradition traffic trail train traitor trap trapdoor travel tray treasure treat tree
tremble trembled trench trestle trial tribe trick trip troll troop trouble trough trowel truck
trudge trudged true truly trunk trust truth try tub tube tuesday tug tugged tundra tune tunnel
turf turn turret tusk twelve twenty twice twig twilight twin twine twist two type typical ugly
uh ultimately um unable uncle undead under underground underneath understand understood unease
unit unite universe unknown unless unlike until unusual up update updates upon upper upset
upstairs urchin urge urn us use used useful usual usually utterly vague vaguely vain valley
valuable value valve various vast vat vault vegetable vehicle veil vendor venom version very
vessel vestibule via vial victim victory view village villager vine violence violent viper
virtue visible vision visit voice volume vote voted votes voting voyage wad wade waded wage
wagon waist wait wake walk wall wand wander want war ward warden wardrobe warehouse warily
warm warmly warmth warn warning warrior was wash washbasin wasn't wasp waste watch watchman
watchtower water waterfront waterline wave wax way we we're weak weakly weakness wealth weapon
wear wearily weariness weary weather weathervane weave weaver wedding wednesday weed week weep
weigh weight welcome well went were weren't west western wet whale wharf what what's whatever
wheat wheel wheelbarrow when whenever where whereas wherever whether whetstone whew which
while whilst whip whirl whisker whisper whistle white who who's whoa whoever whole whom whose
why wick wicked wicker wide widow wife wild wildly will willing win wince winced wind windlass
window windowsill wine wing winter wipe wire wisdom wise wish witch with withdraw within
without witness wizard woe woke woken wolf wolves woman women won won't wonder wonderful wood
wooden wool word wore work workbench worker workshop world worm worn worried worry worse
worship worst worth would wouldn't wound wow wraith wrap wreath wreck wrist write write-in
writein writer writes writing written wrong wrote wryly yank yanked yard yarn yawn yay yeah
year yell yellow yep yes yesterday yet yoke you you'd you'll you're you've young your yours
yourself yourselves youth yup zero zone
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
# and a play's stage directions, which open with who comes and goes ("[Enter Lane.]": The
# Importance of Being Earnest's offline glossary had "Enter Lane", a place)
_STAGE_DIRECTIONS_TEXT = "enter enters exit exits exeunt re-enter"
# and the older book's interjections and calls, which open a line of speech and name nothing
# ("Avast", "Begone", "Hearken": Moby-Dick's and Frankenstein's offline glossaries had them), and
# its verbs of saying set before the speaker ("Quoth Siddhartha": Siddhartha's offline glossary
# had "Quoth Siddhartha" and "Quoth Govinda" for the two friends)
_INTERJECTIONS_TEXT = """avast begone hark hearken alack prithee forsooth zounds egad pshaw fie
    huzza huzzah hurrah ahoy belay holloa halloo hallo nay yea aye quoth saith spake"""
STARTERS: frozenset[str] = frozenset(
    (_STARTERS_TEXT + " " + _STAGE_DIRECTIONS_TEXT + " " + _INTERJECTIONS_TEXT).split()
)

# Never a term on their own (checked case-insensitively on whole runs and single words).
_NOT_NAMES_TEXT = """
    i i'm i've i'll i'd mr mrs ms dr mr. mrs. dr. mlle mme messrs sir madam anonymous anon qm op
    oc ooc ic gm
    monday tuesday wednesday thursday friday saturday sunday january february march april may
    june july august september october november december god gods lol ok okay yes no english
    tl;dr dr edit update vote votes tally x"""
NOT_NAMES: frozenset[str] = frozenset(_NOT_NAMES_TEXT.split())
# The months and days among them, which open a name after "the" ("the March Hare").
_CALENDAR_TEXT = """monday tuesday wednesday thursday friday saturday sunday january february
    march april may june july august september october november december"""
_CALENDAR: frozenset[str] = frozenset(_CALENDAR_TEXT.split())

# A day or month is a time where one of these words comes before it ("on Friday", "last May",
# "till Monday") or after it ("Friday morning"), or a number beside it ("June 5th"); "of" only
# before a month ("the fifth of June"; "the father of Friday" names a man).
_TIME_BEFORE_TEXT = """
    on last next every each this till until since by before after following a one good
    same in from early late all today to-day tomorrow to-morrow yesterday is was be not"""
_TIME_BEFORE = frozenset(_TIME_BEFORE_TEXT.split())
_TIME_AFTER_TEXT = "morning night evening afternoon week noon eve fortnight"
_TIME_AFTER = frozenset(_TIME_AFTER_TEXT.split())
_MONTHS = frozenset(_CALENDAR_TEXT.split()[7:])
# A day or month written as a name at least this often where no sentence opens, and more than
# twice as often as a time, is a name in that text ("my man Friday", "Friday told me").
CALENDAR_NAME_USES = 2


def calendar_names(text: str) -> frozenset[str]:
    """The days and months (casefolded) that `text` writes as a name, not a time: capitalised
    where no sentence opens, at least `CALENDAR_NAME_USES` times with no word or number of a
    time beside it ("I called him Friday", "Friday's father"), more than twice as often as a
    time. A story may name a person so (Crusoe's Friday): the
    calendar words are never names elsewhere (`NOT_NAMES`)."""
    masked = mask_markup(text)
    return _calendar_names(masked, _tokens(masked))


def _calendar_names(masked: str, tokens: list[_Token]) -> frozenset[str]:
    """`calendar_names` of a text already masked (`mask_markup`) and cut into `tokens`."""
    names: Counter[str] = Counter()
    times: Counter[str] = Counter()
    for index, (start, end, token) in enumerate(tokens):
        word = _without_possessive(token)
        key = word.casefold()
        if key not in _CALENDAR or not word[:1].isupper() or _at_sentence_start(masked, start):
            continue
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        if (
            word == token
            and following
            and _is_capitalised(following[2])
            and masked[end : following[0]] == " "
        ):
            continue  # a word of a longer name: "the March Hare", "the May Queen"
        before = tokens[index - 1][2].casefold() if index else ""
        after = following[2].casefold() if following else ""
        near = masked[max(0, start - 6) : end + 6]
        timed = (
            word == token
            and (
                before in _TIME_BEFORE
                or (before == "of" and key in _MONTHS)
                or after in _TIME_AFTER
                or after in _MONTHS  # "Sunday, October 20th"
                or masked[max(0, start - 1) : start] == "("  # "this day (Sunday)"
                or any(ch.isdigit() for ch in near)
            )
        )
        (times if timed else names)[key] += 1
    return frozenset(
        key
        for key, count in names.items()
        if count >= CALENDAR_NAME_USES and 2 * times[key] < count
    )


# Titles that belong to a name even when the name opens a sentence ("Captain Ysolde rode ...").
_HONORIFICS_TEXT = """
    lord lady sir dame king queen prince princess captain general commander brother sister
    father mother master mister mistress elder saint duke duchess baron baroness count countess
    emperor empress archmage magister high grand old young little big mad black red white grey"""
HONORIFICS: frozenset[str] = frozenset(_HONORIFICS_TEXT.split())
# Honorifics that are titles, not adjectives that are part of names ("Old Lady", "Black Dog").
TITLES: frozenset[str] = HONORIFICS - {
    "old", "young", "little", "big", "mad", "black", "red", "white", "grey", "high", "grand",
}  # fmt: skip
_DROP_PREFIX: frozenset[str] = frozenset(
    {"mr", "mrs", "ms", "dr", "mr.", "mrs.", "dr.", "mlle", "mme", "messrs"}
)
# What a surname said once after a title written short with its period scores: a name in
# passing ("Dr. Denman", "Mme. Montpensier") until the scene names it again, as when the
# period was read as a sentence's end ("Mr Holt", without one, is a name at once).
_TITLED_ONCE = 0.9
# Titles of one person written short, whose period ends no sentence ("Mr. Hall"); not "Messrs."
# (a firm: "Messrs. Maw"), whose name after it is still read as opening one.
_SHORT_TITLES: frozenset[str] = frozenset({"mr", "mrs", "ms", "dr", "mlle", "mme"})
_ARTICLES: frozenset[str] = frozenset({"the", "a", "an"})
# Titles of address written out that open a name and are never inside one after a word that is
# no title: "O'Connell Bridge Miss O'Callaghan" is two names side by side ("Little Miss" and
# "Lady Mary" aside, an honorific before them).
_ADDRESS_TITLES: frozenset[str] = frozenset(
    {"miss", "missus", "mister", "madame", "monsieur", "mademoiselle", "mrs", "mr"}
)
_CONNECTORS: frozenset[str] = frozenset(
    {"of", "de", "du", "von", "van", "der", "den", "del", "da", "di", "la", "le"}
)
_CONTRACTION_TAILS: tuple[str, ...] = ("s", "t", "re", "ve", "ll", "d", "m", "em", "clock")
_MAX_RUN_WORDS = 6

_LETTERS = r"[^\W\d_]"
_WORD_RE = re.compile(rf"{_LETTERS}+(?:['’\-]{_LETTERS}+)*")
# A hyphen set as a dash after a name, as older printings do ("Lord Orville-I own", "Miss
# Anville-you are kind": Evelina): the word after it is one of these, last in the token, so
# the name ends at the hyphen. A name's own hyphen joins a name ("Mary-Ann") or runs on to one
# ("Stratford-upon-Avon").
_DASHED_ON: frozenset[str] = frozenset(
    {
        "i", "you", "he", "she", "it", "we", "they", "me", "him", "her", "us", "them",
        "my", "your", "his", "its", "our", "their", "but", "and", "or", "nor", "yet", "so",
        "if", "that", "this", "what", "when", "then", "there", "oh", "ah", "no", "yes", "not",
        "as", "for", "is", "was", "will", "would", "shall", "should", "do", "did", "have", "had",
    }
)  # fmt: skip


def _tokens(masked: str) -> list[tuple[int, int, str]]:
    """The words of `masked` with their offsets; a token whose last part follows a capitalised
    word over a hyphen set as a dash (`_DASHED_ON`) is two words, the hyphen between them."""
    tokens: list[tuple[int, int, str]] = []
    for match in _WORD_RE.finditer(masked):
        start, end, word = match.start(), match.end(), match.group(0)
        head, hyphen, tail = word.rpartition("-")
        last_of_head = head.rsplit("-", 1)[-1]
        if (
            hyphen
            and last_of_head[:1].isupper()
            and tail.casefold() in _DASHED_ON
            and (tail == "I" or tail.islower())
        ):
            tokens.append((start, start + len(head), head))
            tokens.append((end - len(tail), end, tail))
        else:
            tokens.append((start, end, word))
    return tokens


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
# a word before a stop that does not end a sentence: a title ("Mr.", "Dr.", "St.") or an initial
_ABBREVIATED = re.compile(
    r"(?<![\w.])(?:Mr|Mrs|Ms|Messrs|Mme|Mlle|Dr|St|Mt|Prof|Rev|Capt|Col|Gen|Lt|Sgt|Hon|Sr|Jr|"
    r"[A-Z])$"
)
_SPACES = re.compile(r"\s+")


def norm_key(term: str) -> str:
    """The store's comparison key (`glossary.normalize.normalize_term`), with any leading article
    of a longer name dropped ("a Hollow Crown" is "hollow crown"). Compares candidates with known
    terms."""
    words = normalize_term(term).replace("_", " ").split()
    if len(words) > 1 and words[0] in _ARTICLES:
        words = words[1:]
    return " ".join(words)


@lru_cache(maxsize=1 << 16)
def is_common_word(word: str) -> bool:
    """True for a common English word or a regular inflection of one (`hollowing`, `carried`).
    Asked of every token of every scene at each look at it, so its answers are kept."""
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
    """Does the word at `position` open a sentence: after a sentence's end, a line's start, or
    an opening quote (speech opens a sentence: "For Helium!", “Where's Black Dog?”)?"""
    index = position - 1
    while index >= 0 and text[index] in _SKIP_BACK:
        if text[index] in _OPENING_QUOTES and (index == 0 or not text[index - 1].isalnum()):
            return True
        index -= 1
    if index >= 0 and text[index] == "." and _ends_title(text, index):
        return False  # "Mrs. Hall": a name after a title's period opens no sentence
    return index < 0 or text[index] == "\n" or text[index] in _SENTENCE_END


def _ends_title(text: str, period: int) -> bool:
    """Whether the period at `period` ends a title written short ("Mr.", "Mrs.", "Dr.")."""
    start = period
    while start > 0 and text[start - 1].isalpha():
        start -= 1
    before = text[start - 1] if start > 0 else " "
    return not before.isalnum() and text[start:period].casefold() in _SHORT_TITLES


_OPENING_QUOTES = frozenset('"“‘')


@lru_cache(maxsize=4096)
def term_pattern(term: str) -> re.Pattern[str] | None:
    """A case-insensitive pattern for `term` in prose: whole words, a leading article ignored,
    spaces, hyphens and apostrophes between its parts interchangeable, a possessive allowed; an
    underscore of emphasis around it is no part of a word ("_Thunder Child_")."""
    cleaned = unicodedata.normalize("NFKC", term).translate(_APOSTROPHES).translate(_DASHES)
    parts = [part for part in re.split(r"[\s\-']+", cleaned.strip(' .,;:!?"()[]{}')) if part]
    if len(parts) > 1 and parts[0].casefold() in _ARTICLES:
        parts = parts[1:]
    if not parts:
        return None
    separator = r"(?:\s+|\s*[-‐‑‒–—―]\s*|['’ʼ])"
    body = separator.join(re.escape(part) for part in parts)
    return re.compile(
        rf"(?<![^\W_]|['’\-]){body}(?:(?=['’]s(?![^\W_]))|(?!['’\-]?[^\W_]))",
        re.IGNORECASE,
    )


def find_term(text: str, term: str) -> list[tuple[int, int]]:
    """Spans of `term` in `text` (see `term_pattern`), in order."""
    pattern = term_pattern(term)
    if pattern is None:
        return []
    return [match.span() for match in pattern.finditer(text)]


def first_term(text: str, term: str) -> int | None:
    """Where `term` first occurs in `text` (`find_term`'s first span), or None."""
    pattern = term_pattern(term)
    found = None if pattern is None else pattern.search(text)
    return None if found is None else found.start()


# What points at a phrase as a thing of the prose rather than naming it: a demonstrative ("this
# Golden Age", "these ..."), or "that" after a preposition ("in that Golden Age"; "that" after a
# verb opens a clause: "saw that Carthoris was ...").
POINTED_AT = re.compile(
    r"(?:\b(?:this|these|those)|\b(?:of|in|on|at|upon|to|from|with|into|by|for|about|through)"
    r"\s+that)\s+$",
    re.IGNORECASE,
)


def pointed_at(text: str, term: str, start: int) -> bool:
    """Whether the mention of the capitalised name of several words `term` at `text[start:]`
    is pointed at as a thing of the prose ("this Golden Age", "in that Golden Age"), as a name
    is not."""
    if term == term.lower() or " " not in term.strip():
        return False
    return bool(POINTED_AT.search(text[max(0, start - 20) : start]))


def names_term(text: str, term: str) -> bool:
    """Whether `text` names `term` (`find_term`) at least once not pointed at (`pointed_at`)."""
    return any(not pointed_at(text, term, start) for start, _end in find_term(text, term))


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence: split after . ! ? … (and closing quotes) and at newlines,
    never after a title's abbreviation or an initial ("said Mr. Enfield", "George B. Hale")."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _SENTENCE_SPLIT.finditer(text):
        if match.group(1) == "." and _ABBREVIATED.search(
            text[max(0, match.start() - 8) : match.start()]
        ):
            continue
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
    """The cleaned sentence containing `offset`, cut to at most `max_chars` around the offset
    at word boundaries: the story's own words, none cut in two and nothing added (a quote is
    verbatim, and a reader's page finds it in the post)."""
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
    return cut_at_words(sentence, lo, lo + max_chars)


def cut_at_words(text: str, lo: int, hi: int) -> str:
    """`text[lo:hi]` narrowed to whole words: a word the bounds cut in two is left out (unless
    it is all there is)."""
    if 0 < lo < len(text) and not text[lo - 1].isspace() and not text[lo].isspace():
        space = text.find(" ", lo, hi)
        lo = space + 1 if space != -1 else lo
    if hi < len(text) and not text[hi].isspace() and not text[hi - 1].isspace():
        space = text.rfind(" ", lo, hi)
        hi = space if space > lo else hi
    return text[lo:hi].strip()


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
    known_words: bool = True,
) -> list[Candidate]:
    """Candidate terms of `text` not in `known` (terms and aliases, compared normalized), best
    first (score, then first occurrence). `min_score` 1.0 keeps names seen mid-sentence, quoted
    coinages and twice-seen unusual compounds; lower it for recall, raise it for precision.
    With `known_words`, a one-word candidate that is a word of a known multiword name (`Quill`
    beside a known `Ambrose Quill`) is left out too."""
    masked, proposed, lowercase, capital_mid = _proposals(text)
    drafts = {key: replace(draft, variants=list(draft.variants)) for key, draft in proposed.items()}

    known_keys, word_index = _known_index(known)
    for key in [key for key in drafts if " of " in key]:
        head = key.split(" of ", 1)[0]
        singular = _singular(head) if " " not in head else None
        if singular and (
            norm_key(singular) in drafts
            or norm_key(singular) in known_keys
            or is_english_word(singular)
        ):
            del drafts[key]  # "Tharks of Barsoom", "Chieftains of Thark": some of a people
    _fold_variants(drafts)
    _fold_forms(drafts)
    _fold_titled_forms(drafts)
    _fold_short_names(drafts)
    titled_known = {_titled_key(name) for name in known if len(name.split()) > 2} - {None}
    known_forms = {form_key(name) for name in known} - {""}
    results: list[Candidate] = []
    for key, draft in drafts.items():
        names = [draft.term, *draft.variants]
        if any(norm_key(name) in known_keys for name in names):
            continue
        if any(form_key(name) in known_forms for name in names):
            continue  # another form of a known name: "Four-Dimensioned" beside "Four Dimensions"
        if len(names[0].split()) == 2 and _titled_key(names[0]) in titled_known:
            continue  # "Captain Rook" beside a known "Captain Ismay Rook"
        if (
            " " not in key
            and draft.kind in (KIND_NAME, KIND_TITLE)
            and draft.term[:1].isupper()
            and lowercase[key] >= max(1, capital_mid[key])
        ):
            if is_english_word(draft.term):
                continue
            # a coinage capitalised where a sentence opens: its lowercase form is the term
            draft.term, draft.kind = draft.term.lower(), KIND_WORD
        if known_words and " " not in key and key in word_index:
            continue
        found = {name: find_term(masked, name) for name in names}
        spans = _disjoint(span for name_spans in found.values() for span in name_spans)
        occurrences = len(spans) or 1
        # where the name itself first occurs, not the title an alias keeps ("Mr. Kemp")
        plain = [name for name in names if name.split()[0].casefold() not in _SHORT_TITLES]
        starts = [span[0] for name in plain or names for span in found[name]]
        first = min(starts) if starts else draft.offset
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


@lru_cache(maxsize=256)
def _proposals(text: str) -> tuple[str, dict[str, _Draft], Counter[str], Counter[str]]:
    """What `text` alone proposes, before any known name is looked at: the masked text, the
    drafts by key in the order proposed, and the counts of lowercase and mid-sentence
    capitalised tokens. A pure function of the text, asked again of the same scene at every
    look at it while the glossary grows, so its answers are kept; callers copy the drafts
    before changing them."""
    masked = mask_markup(text)
    drafts: dict[str, _Draft] = {}
    tokens = _tokens(masked)
    named_days = _calendar_names(masked, tokens)  # "my man Friday": a day written as a name
    not_names = NOT_NAMES - named_days
    # A capitalised word the text also writes in lowercase at least as often as it capitalises
    # it mid-sentence is a word, not a name ("Will" beside "will"); a coinage so written is
    # proposed in lowercase ("Tallowglass" opening a sentence beside "tallowglass").
    lowercase = Counter(token.casefold() for _s, _e, token in tokens if token.islower())
    capital_mid = Counter(
        token.casefold()
        for start, _e, token in tokens
        if _is_capitalised(token) and not _at_sentence_start(masked, start)
    )

    def propose(
        term: str, kind: str, score: float, offset: int, variants: tuple[str, ...] = ()
    ) -> None:
        key = norm_key(term)
        if (
            not key
            or key in not_names
            or (key not in named_days and _is_ordinary_here(term, lowercase, capital_mid))
            or is_demonym_of_real_place(term)
            or is_descriptive_compound(term)
        ):
            return  # ordinary vocabulary and plainly used real-world names are no story terms
        draft = drafts.get(key)
        if draft is None:
            drafts[key] = _Draft(term, kind, score, offset, list(variants))
            return
        if _KIND_RANK[kind] < _KIND_RANK[draft.kind]:
            draft.kind = kind
        draft.score = max(draft.score, score) if kind != draft.kind else draft.score + score
        draft.rules += 1
        draft.variants.extend(v for v in variants if v not in draft.variants)
        if offset < draft.offset:
            draft.offset = offset
            draft.term = term

    _propose_names(masked, tokens, propose, not_names)
    _propose_lowercase(tokens, propose)
    _propose_quoted(masked, propose)
    return masked, drafts, lowercase, capital_mid


def _is_ordinary_here(term: str, lowercase: Counter[str], capital_mid: Counter[str]) -> bool:
    """Whether `term` is ordinary vocabulary (`is_ordinary`), except that a word spelled with an
    apostrophe that the text capitalises mid-sentence and never writes in lowercase is a name,
    not an English word with letters dropped as spoken ("M'ling", not "modeling"; "gen'leman",
    "v'yage" are written in lowercase)."""
    if not is_ordinary(term):
        return False
    key = term.casefold()
    if " " in key or not elided_word(term) or lowercase[key] or not capital_mid[key]:
        return True
    return ordinary_reason(term, elision=False) is not None


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


def _propose_names(
    masked: str, tokens: list[_Token], propose: _Propose, not_names: frozenset[str] = NOT_NAMES
) -> None:
    runs: list[list[_Token]] = []
    index = 0
    while index < len(tokens):
        if not _is_capitalised(tokens[index][2]):
            index += 1
            continue
        run = [tokens[index]]
        cursor = index + 1
        while cursor < len(tokens) and len(run) <= _MAX_RUN_WORDS:
            gap = masked[run[-1][1] : tokens[cursor][0]]
            initial = len(run[-1][2]) == 1 and run[-1][2].isupper() and len(run) > 1
            title = run[-1][2].casefold() in _SHORT_TITLES
            if _is_capitalised(tokens[cursor][2]) and (
                gap == " " or ((initial or title) and gap == ". ")  # "James K. Powell", "Mr. Hall"
            ):
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
        starter = run[0][2].casefold()
        if len(run) > 1 and (
            starter in _ARTICLES or (starter in STARTERS and _at_sentence_start(masked, run[0][0]))
        ):
            run = run[1:]  # "The Lantern Court", "Later Saxirn Brondeep"
        if len(run) <= _MAX_RUN_WORDS:
            runs.append(run)
        index = cursor
    alone = Counter(run[0][2].casefold() for run in runs if len(run) == 1)
    mid_sentence = {
        " ".join(t[2] for t in run).casefold()
        for run in runs
        if not _at_sentence_start(masked, run[0][0])
    }
    together = Counter(" ".join(t[2] for t in run).casefold() for run in runs)
    for run in runs:
        words = [token[2].casefold() for token in run]
        if (
            len(run) > 1
            and together[" ".join(words)] == 1
            and words[0] not in HONORIFICS
            and all(word in alone and word not in _CONNECTORS for word in words)
        ):
            # "Saxirn Bronddeep": two names side by side, each also seen alone
            for token in run:
                _propose_run(masked, [token], propose, not_names)
        elif (
            len(run) > 1
            and " ".join(words[1:]) in mid_sentence
            and " ".join(words) not in mid_sentence
            and words[0] not in HONORIFICS
            and _at_sentence_start(masked, run[0][0])
        ):
            # "Ask Quill to come": the name is seen without the word that opens the sentence
            _propose_run(masked, run[1:], propose, not_names)
        else:
            _propose_run(masked, run, propose, not_names)


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


def _propose_run(
    masked: str, run: list[_Token], propose: _Propose, not_names: frozenset[str] = NOT_NAMES
) -> None:
    titled_at = [
        i
        for i, token in enumerate(run)
        if i
        and (
            token[2].casefold() in _SHORT_TITLES
            or (
                token[2].casefold() in _ADDRESS_TITLES
                and run[i - 1][2].casefold() not in HONORIFICS | _SHORT_TITLES | _ADDRESS_TITLES
            )
        )
    ]
    if titled_at:  # "Honourable Mr. Camerfield": the name opens at its title
        # (and "across O'Connell Bridge Miss O'Callaghan said": a name runs into a titled one)
        run = run[titled_at[-1] :]
    words = [token[2] for token in run]
    offsets = [token[0] for token in run]
    at_start = _at_sentence_start(masked, offsets[0])
    titled = _preceded_by_the(masked, offsets[0])
    # strip what opens the run without naming anything: "The Lantern Court", "Then Varen",
    # "Across Saxirn" (a common word opening the sentence before an unusual name)
    dropped = ""  # a title written short that the name drops ("Mr. " of "Mr. Bingley")
    while words:
        first = words[0].casefold()
        if first in _CALENDAR and titled and len(words) == 2 and is_english_word(words[1]):
            break  # "the March Hare", "the May Queen": a month or day naming one thing
        if first in _SHORT_TITLES and len(words) == 2:
            name = _without_possessive(words[1])
            if is_ordinary(name):  # "Mrs. Hall": a surname that is an English word
                written = masked[offsets[0] : offsets[1]] + name
                once = _TITLED_ONCE if "." in written else 1.5
                propose(written, KIND_NAME, once, offsets[0])
                return
        if first in _SHORT_TITLES and len(words) > 1:
            dropped = masked[offsets[0] : offsets[1]]
        if first in _ARTICLES or first in _DROP_PREFIX or first in not_names:
            titled = titled or first == "the"
        elif (
            first in _CONNECTORS
            or (at_start and first in STARTERS)
            or (
                at_start
                and len(words) > 1
                and first not in HONORIFICS
                and _token_is_common(words[0])
                and any(not _token_is_common(w) for w in words[1:])
            )
        ):
            pass
        else:
            break
        words, offsets = words[1:], offsets[1:]
        at_start = False
    while words and (words[-1].casefold() in _CONNECTORS or words[-1].casefold() in not_names):
        words, offsets = words[:-1], offsets[:-1]
    if not words:
        return
    words[-1] = _without_possessive(words[-1])
    if len(words) == 1 and len(words[0]) < 2:
        return
    term = " ".join(
        f"{word}." if len(word) == 1 and word.isupper() and index < len(words) - 1 else word
        for index, word in enumerate(words)
    )  # an initial keeps its period: "James K. Powell"
    lowered = term.casefold()
    if lowered in not_names or (len(words) == 1 and lowered in STARTERS | HONORIFICS):
        return
    content = [w for w in words if w.casefold() not in _CONNECTORS and w != "the"]
    uncommon = any(not _token_is_common(w) for w in content)
    if len(words) == 1 and not uncommon and _preceded_by_comma(masked, offsets[0]):
        return  # a vocative: "Old tallow, Captain," / "Yes, Warden."
    inner_mark = any(("'" in w or "’" in w or "-" in w) and not _is_contraction(w) for w in words)
    multi = len(content) > 1
    if at_start:
        if not (uncommon or multi) or (len(words) == 1 and is_english_word(words[0])):
            return  # an English word that just opens a sentence ("Evidently", "Grasping")
        score = 0.4
    else:
        score = 1.0
    if multi:
        score += 0.5
    if uncommon:
        score += 0.5
    if inner_mark:
        score += 0.5
    if "." in dropped and len(words) == 1:
        score = _TITLED_ONCE
    kind = KIND_TITLE if titled else KIND_NAME
    singular = _singular(term) if len(words) == 1 else None
    # a surname keeps its title as an alias: "Bingley" is also "Mr. Bingley", which tells him
    # from "Miss Bingley"
    variants = (f"{dropped}{term}",) if dropped and len(words) == 1 else ()
    propose(term, kind, score, offsets[0], variants + ((singular,) if singular else ()))


def _without_possessive(word: str) -> str:
    """The word without a possessive "'s" ("Hall's": "Hall")."""
    possessive = re.match(r"^(.+?)['’]s$", word)
    return possessive.group(1) if possessive else word


def _preceded_by_comma(masked: str, position: int) -> bool:
    return masked[max(0, position - 2) : position] == ", "


def _token_is_common(token: str) -> bool:
    """A common word, an inflection of one, a contraction, or a hyphenation of such words."""
    token = _without_possessive(token)
    if _is_contraction(token):
        return True
    parts = [part for part in re.split(r"['’\-]", token) if part]
    return bool(parts) and all(len(part) <= 3 or is_common_word(part) for part in parts)


def is_english_word(word: str) -> bool:
    """A word of English vocabulary (common, an inflection of one, or frequent enough by
    wordfreq), so not a coinage of the story."""
    return is_common_word(word) or frequency(word) >= ENGLISH_ZIPF


def is_english_lowercase(word: str) -> bool:
    """A lowercase word of English (see `LOWERCASE_ENGLISH_ZIPF`)."""
    return is_common_word(word) or frequency(word) >= LOWERCASE_ENGLISH_ZIPF


# A spoken spelling stands for an English word at least this frequent ("duty", "spirit",
# "thanks", "parliament"); the spelling itself is no English word (below `SPOKEN_ZIPF`).
SPOKEN_WORD_ZIPF = 3.8
SPOKEN_ZIPF = 1.5
SPOKEN_VOCABULARY = 20000
# A word of "-ing" written without its "g" is one this frequent at least ("respecting").
DROPPED_G_ZIPF = 3.0
_VOWEL_GROUPS = re.compile(r"[aeiouy]+")


def _skeleton(word: str) -> tuple[str, tuple[str, ...]]:
    """A word's consonants, doubled letters read once, with a mark for each group of vowels,
    and those groups ("sperrit": ("sp*r*t", ("e", "i"))); "y" is a vowel after the first
    letter."""
    marks = [
        letter in "aeiou" or (letter == "y" and index > 0) for index, letter in enumerate(word)
    ]
    consonants: list[str] = []
    vowels: list[str] = []
    for letter, vowel in zip(word, marks, strict=True):
        if vowel:
            if consonants and consonants[-1] == "*":
                vowels[-1] += letter
            else:
                consonants.append("*")
                vowels.append(letter)
        elif not consonants or consonants[-1] != letter:
            consonants.append(letter)
    return "".join(consonants), tuple(vowels)


@lru_cache(maxsize=1)
def _words_by_skeleton() -> dict[str, tuple[tuple[str, tuple[str, ...]], ...]]:
    from wordfreq import top_n_list  # when first asked: see store/vocabulary.py's frequency

    index: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    for word in top_n_list("en", SPOKEN_VOCABULARY):  # most frequent first
        if frequency(word) < SPOKEN_WORD_ZIPF:
            break  # and so is every word after it (half the list: a tenth of a second saved)
        if word.isalpha() and len(word) >= 4:
            consonants, vowels = _skeleton(word)
            index.setdefault(consonants, []).append((word, vowels))
    return {key: tuple(words) for key, words in index.items()}


def spoken_word_of(term: str) -> str | None:
    """The frequent English word a spelling writes as spoken, its vowels changed in one place
    ("dooty" is "duty", "sperrit" "spirit", "Parlyment" "parliament", "Thenks" "thanks") or a
    lowercase one with its ending as an accent says it ("eatee", "nevaire": `_SPOKEN_ENDINGS`),
    a word of "-ing" without its "g" ("Respectin'"), or None. Only a spelling English does not
    know itself (`SPOKEN_ZIPF`) and only one the story writes in speech (see the curator) is
    such a word: "thoat" and "thern" are told, not said."""
    word = term.casefold()
    if not word.isalpha() or len(word) < 4 or frequency(word) >= SPOKEN_ZIPF:
        return None
    for spoken, english in _SPOKEN_ENDINGS if term == word else ():  # "Billee" is a name
        stem = word[: -len(spoken)]
        said = stem + english
        if word.endswith(spoken) and len(stem) >= 3 and frequency(said) >= SPOKEN_WORD_ZIPF:
            return said
    dropped = word + "g"  # a "g" dropped from "-ing": "respectin'" for "respecting"
    if word.endswith("in") and len(word) >= 6 and frequency(dropped) >= DROPPED_G_ZIPF:
        return dropped
    spoken_vowels = _SPOKEN_VOWELS | (_LOWERCASE_SPOKEN_VOWELS if term == word else frozenset())
    consonants, vowels = _skeleton(word)
    for english, english_vowels in _words_by_skeleton().get(consonants, ()):
        if len(english_vowels) != len(vowels) or english == word:
            continue
        changed = [(a, b) for a, b in zip(english_vowels, vowels, strict=True) if a != b]
        if len(changed) == 1 and changed[0] in spoken_vowels:
            return english
    return None


# Endings an accent writes for a word's own (the spelling's, then English's): a pidgin's "-ee"
# ("eatee" for "eat", "makee" for "make"), a French "-aire" for "-er" ("nevaire" for "never").
_SPOKEN_ENDINGS = (("ee", ""), ("aire", "er"))

# The vowels a spoken spelling writes for a word's own (English's, then the spelling's): "duty"
# as "dooty", "spirit" as "sperrit", "thanks" as "thenks", "parliament" as "parlyment",
# "get" as "git", "just" as "jest", "for" as "fur".
_SPOKEN_VOWELS = frozenset((
    ("u", "oo"), ("i", "e"), ("e", "i"), ("a", "e"), ("ia", "y"), ("ia", "i"), ("u", "e"),
    ("o", "u"), ("o", "a"), ("ea", "ee"), ("ea", "a"), ("ou", "oo"), ("ou", "u"), ("ie", "y"),
    ("y", "i"), ("i", "ee"), ("oa", "o"), ("e", "a"),
))  # fmt: skip
# And in a lowercase spelling only: "uncommon" as "oncommon" (a name, "Startop", is no
# "startup").
_LOWERCASE_SPOKEN_VOWELS = frozenset((("u", "o"),))


# A place English knows this well is a real one: its people in "-ese" are a real people.
ESE_PLACE_ZIPF = 3.0


def is_demonym_of_real_place(term: str) -> bool:
    """A people or language of a real place: "Virginian", "American" (the place is ordinary
    vocabulary by frequency); not "Martian", "Zodangan", "Tharkian". A word English does not
    know made of a real place and "-er" is one of its people too: "Irelander" (not "Walker",
    a name English knows, nor "Upper-worlder", whose place is the story's). A man of such a
    people is one too ("Englishman", "Frenchmen"), and "-ese" may stand for "-a" ("Genevese")."""
    if " " in term or not term[:1].isupper():
        return False
    single = term[:-1] if term.endswith("ers") else term
    if (
        single.endswith("er")
        and len(single) > 6
        and frequency(single) < 1.0
        and frequency(term) < 1.0
        and is_ordinary(single[:-2])
    ):
        return True
    made = re.fullmatch(r"([A-Z][a-z]+(?:ish|ch|sh))m[ae]n", term)
    if made and frequency(term) >= KNOWN_WORD_ZIPF and is_ordinary(made.group(1)):
        return True  # a man of a real people: "Englishman", "Frenchmen", "Dutchman"
    for suffix, endings in (
        ("ian", ("ia", "")),
        ("an", ("a", "")),
        ("ese", ("", "a")),
        ("ish", ("",)),
    ):
        if term.endswith(suffix) and len(term) > len(suffix) + 2:
            stem = term[: -len(suffix)]
            if any(is_ordinary(stem + ending) for ending in endings):
                return True
            if suffix == "ese" and frequency(stem) >= ESE_PLACE_ZIPF:
                return True  # "-ese" makes only peoples: "Assamese" of "Assam"
    return False


def is_descriptive_compound(term: str) -> bool:
    """A hyphenated description rather than a name: "paint-streaked", "vise-like",
    "semi-barbaric", "one-quarter", "olive-green", "blossom-laden", "nineteenth-century",
    "latter-day", "dining-hall", "hunched-up", and a name with a lowercase describing last part,
    "Carlyle-like", "Heaven-forsaken" (not "ember-tithe", "heart-lamp", "Four-Dimensional")."""
    parts = [part.casefold() for part in re.split(r"[-‐‑]", term) if part]
    if len(parts) == 2 and len(parts[0]) == 1 and is_english_word(parts[1]):
        return True  # a letter's shape: "V-shaped", "T-square"
    if len(parts) < 2:
        return False
    first, last = parts[0], parts[-1]
    if term != term.lower():
        # a name made a description by a lowercase last part: "Carlyle-like", "Heaven-forsaken"
        written_last = re.split(r"[-‐‑]", term)[-1]
        return written_last == last and _describes(last)
    if first in _DESCRIPTIVE_PREFIXES or last in _COLOURS or first in _COLOURS:
        return True
    if first in _ORDINAL_PREFIXES or first.endswith("teenth"):
        return True
    if all(part in _COMPASS for part in parts):
        return True  # "south-south-east"
    if first.endswith("ing") and last in _ROOMS_AND_TOOLS and is_english_word(first):
        return True  # a room or tool named by its use: "dining-hall", "hiding-place"
    return _describes(last)


def _describes(last: str) -> bool:
    """Whether a compound's last part makes it a description ("-streaked", "-like", "-up")."""
    if last in _DESCRIPTIVE_LAST or (len(last) > 4 and last.endswith("ed")):
        return True  # a participle, however rare: "high-ceiled", "blood-bedabbled"
    return len(last) > 3 and last.endswith(_DESCRIPTIVE_ENDINGS) and is_english_word(last)


def _singular(word: str) -> str | None:
    """The singular of a word that looks like a regular plural (`driftlings`), else None."""
    lowered = word.casefold()
    if len(lowered) < 5 or not lowered.endswith("s") or lowered.endswith(_NOT_PLURAL):
        return None
    if lowered.endswith("ies"):
        return word[:-3] + "y"
    if lowered.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    return word[:-1]


_NOT_PLURAL = ("ss", "us", "is", "os", "as", "'s", "’s")


def _preceded_by_the(masked: str, position: int) -> bool:
    return masked[max(0, position - 4) : position].casefold() == "the "


def _propose_lowercase(tokens: list[_Token], propose: _Propose) -> None:
    """Lowercase compounds (`ember-tithe`) and repeated unusual words (`glimmerstone`); a plural
    counts for its singular, which becomes the term (`driftlings` -> `driftling`)."""
    counts: dict[str, int] = {}
    firsts: dict[str, tuple[int, str]] = {}
    plurals: dict[str, str] = {}
    for start, _end, token in tokens:
        lowered = token.casefold()
        singular = _singular(lowered)
        # an English word is no plural of a coinage: "perhaps" is not "perhap"s
        english = "-" not in lowered and is_english_lowercase(lowered)
        plural = singular and not is_common_word(singular) and not english
        base = singular if plural else lowered
        counts[base] = counts.get(base, 0) + 1
        if token.islower():
            if base != lowered:
                plurals.setdefault(base, token)
            if base not in firsts:
                firsts[base] = (start, base)
    for base, (start, term) in firsts.items():
        if base in NOT_NAMES or base in COMMON_WORDS or _is_contraction(term):
            continue
        count = counts[base]
        variants = (plurals[base],) if base in plurals else ()
        if "-" in term or "'" in term or "’" in term:
            if is_descriptive_compound(term):
                continue
            score = (0.5 if _is_english_compound(term) else 1.0) + 0.5 * (count - 1)
            propose(term, KIND_COMPOUND, score, start, variants)
        elif len(term) >= 5 and not is_english_lowercase(term):
            score = 0.35 * count + (0.3 if _is_compound_of_common(term) else 0.0)
            propose(term, KIND_WORD, score, start, variants)


def _is_english_compound(term: str) -> bool:
    """A hyphenated word made of English words ("pistol-shot", "biscuit-tin", "tithe-jar"):
    proposed only when a scene names it twice, as a story names its own compounds; one
    mention is a passing everyday compound ("capstan-bar": every part a word the language
    knows, `KNOWN_WORD_ZIPF`). A part English does not know ("thoat-rider", "chuck-farthen") or
    a thing named by what it does ("fighting-machine") is proposed at once."""
    parts = [part for part in re.split(r"['’\-]", term) if part]
    if _token_is_common(term):
        return True
    if len(parts) == 2 and parts[0].endswith("ing"):
        return False
    return all(len(part) > 2 and frequency(part) >= KNOWN_WORD_ZIPF for part in parts)


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
            if _is_quoted_speech(phrase, words):
                continue
            marked = any(
                ("-" in w or "'" in w or "’" in w) and not _is_contraction(w) for w in words
            )
            uncommon = any(not _token_is_common(w) for w in words)
            score = 1.0 if (marked or uncommon or several) else 0.6
            singular = _singular(words[0]) if len(words) == 1 else None
            propose(" ".join(words), KIND_COINAGE, score, offset, (singular,) if singular else ())


# Words that make a quoted lowercase phrase a piece of speech, not a coinage: "you hold the
# basin", "you are safe here", "his poor mother".
_SPEECH_WORDS = frozenset((
    "i", "you", "he", "she", "we", "they", "me", "him", "us", "them", "is", "are", "was",
    "were", "am", "do", "does", "did", "have", "has", "had", "will", "shall", "can", "here",
    "there", "my", "your", "his", "our", "their",
))  # fmt: skip


def _is_quoted_speech(phrase: str, words: list[str]) -> bool:
    """A quoted lowercase phrase that is speech or a description ("you hold the basin",
    "creeping painfully"), or a quoted clause about a name ("Billy Bones his fancy", "Keth'ra
    will come"), not a coinage ("the man on the stair", "lightless debt")."""
    if len(words) < 2:
        return False
    if phrase != phrase.lower():  # a name in a quoted clause: "Billy Bones his fancy"
        return any(word in _SPEECH_WORDS for word in words if word == word.lower())
    lowered = [word.casefold() for word in words]
    if any(word in _SPEECH_WORDS for word in lowered):
        return True
    return any(len(w) > 4 and w.endswith("ly") and is_english_word(w) for w in lowered)


def _fold_variants(drafts: dict[str, _Draft]) -> None:
    """Two drafts of which one names the other as a variant become one, under the shorter name
    (`Gloamhounds` + `gloamhound` -> `gloamhound`, `Unwickings` + `Unwicking` -> `Unwicking`)."""
    for key in sorted(drafts):
        draft = drafts.get(key)
        if draft is None:
            continue
        for variant in list(draft.variants):
            other_key = norm_key(variant)
            other = drafts.get(other_key)
            if other is None or other is draft:
                continue
            pair = sorted(((key, draft), (other_key, other)), key=lambda i: (len(i[0]), i[0]))
            (_, keep), (drop_key, drop) = pair
            keep.score = max(keep.score, drop.score) + 0.25
            keep.offset = min(keep.offset, drop.offset)
            keep.kind = min(keep.kind, drop.kind, key=_KIND_RANK.__getitem__)
            for name in (drop.term, *drop.variants):
                if norm_key(name) != norm_key(keep.term) and name not in keep.variants:
                    keep.variants.append(name)
            del drafts[drop_key]
            break


def _fold_forms(drafts: dict[str, _Draft]) -> None:
    """Drafts that are forms of one idea (`form_key`: "Four Dimensions", "Four-Dimensioned",
    "Fourth Dimension"; "Spy-glass", "Spyglass") become one, under the best scored (then
    first seen), the others its variants."""
    groups: dict[str, list[str]] = {}
    for key, draft in drafts.items():
        groups.setdefault(form_key(draft.term), []).append(key)
    for form, keys in groups.items():
        if not form or len(keys) < 2:
            continue
        ranked = sorted(keys, key=lambda k: (-drafts[k].score, drafts[k].offset, k))
        keep = drafts[ranked[0]]
        for drop_key in ranked[1:]:
            drop = drafts.pop(drop_key)
            keep.score += 0.25
            keep.offset = min(keep.offset, drop.offset)
            keep.kind = min(keep.kind, drop.kind, key=_KIND_RANK.__getitem__)
            for name in (drop.term, *drop.variants):
                if norm_key(name) != norm_key(keep.term) and name not in keep.variants:
                    keep.variants.append(name)


def _titled_key(name: str) -> tuple[str, str] | None:
    """(title, last word) of a name that opens with a title ("Captain Ismay Rook": ("captain",
    "rook")), else None. Adjectives among the honorifics ("Old", "Black") are no titles."""
    words = norm_key(name).split()
    if len(words) < 2 or words[0] not in TITLES:
        return None
    return words[0], words[-1]


def _fold_titled_forms(drafts: dict[str, _Draft]) -> None:
    """A title and a surname ("Captain Rook", "Captain Carter") becomes a variant of the one
    longer name with that title and surname ("Captain Ismay Rook", "Captain John Carter")."""
    longer: dict[tuple[str, str], list[str]] = {}
    for key, draft in drafts.items():
        titled = _titled_key(draft.term)
        if titled and len(key.split()) > 2 and " of " not in key:
            longer.setdefault(titled, []).append(key)
    for key in sorted(drafts):
        draft = drafts.get(key)
        titled = _titled_key(draft.term) if draft else None
        if draft is None or titled is None or len(key.split()) != 2:
            continue
        owners = longer.get(titled, [])
        if len(owners) != 1:
            continue
        owner = drafts[owners[0]]
        owner.variants.extend(n for n in (draft.term, *draft.variants) if n not in owner.variants)
        owner.score += 0.5 * draft.score
        owner.offset = min(owner.offset, draft.offset)
        del drafts[key]


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
