"""What English knows, to tell a story's terms from the language's own words: the shipped list
of common words and their inflections (`is_common_word`), English by frequency
(`is_english_word`, `is_english_lowercase`), a frequent word in a spoken spelling
(`spoken_word_of`, with its index of words by skeleton), a people of a real place
(`is_demonym_of_real_place`) and a hyphenated description (`is_descriptive_compound`); the
small words that open a sentence (`STARTERS`) and the titles that open a name (`HONORIFICS`,
`TITLES`); and the articles and apostrophes the other `terms` modules read text by. Facts of
the language, not of a text: the candidate detector (`terms.candidates`) and the offline
backend ask them.
"""

from __future__ import annotations

import re
from functools import lru_cache

from terrarium_dagster.store.vocabulary import frequency, is_ordinary

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

ARTICLES: frozenset[str] = frozenset({"the", "a", "an"})

APOSTROPHES = dict.fromkeys(map(ord, "’‘`´ʼ"), "'")


@lru_cache(maxsize=1 << 16)
def is_common_word(word: str) -> bool:
    """True for a common English word or a regular inflection of one (`hollowing`, `carried`).
    Asked of every token of every scene at each look at it, so its answers are kept."""
    word = word.casefold().translate(APOSTROPHES)
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


# English's commonest words: in English prose about four words in ten are one of these; in
# Dutch, German or French prose hardly one in twenty ("de", "en", "het" are no English words)
_FUNCTION_WORDS_TEXT = """
    the of and to a in that is was he for it with as his on be at by i had not are but from or
    have an they which you were her she there would their we him been has when who will more no
    if out so said what up its about into than them can only other"""
_FUNCTION_WORDS = frozenset(_FUNCTION_WORDS_TEXT.split())
ENGLISH_SHARE = 0.15  # below this share of its words in `_FUNCTION_WORDS`, a text is not English


def english_share(text: str) -> float:
    """The share of `text`'s words that are English's commonest words (`_FUNCTION_WORDS`)."""
    words = re.findall(r"[^\W\d_]+", text.casefold())
    if not words:
        return 0.0
    return sum(word in _FUNCTION_WORDS for word in words) / len(words)
